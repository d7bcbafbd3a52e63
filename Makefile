# keysteer build. `make` builds the BPF objects, their skeletons and the
# agent into $(OUT); `make test` runs every test tier; `make demo` runs the
# built-in demo; `make bench` runs the benchmarks; `make deps` installs
# what is missing from Debian's packages (`make demo` only what it needs).
# V=1 prints full commands.

.DEFAULT_GOAL := all

OUT      ?= build
ARCH     ?= $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
CLANG    ?= clang
CC       ?= gcc
BPFTOOL  ?= bpftool

VMLINUX  := vmlinux/$(ARCH)/vmlinux.h
SHARED_H := $(filter-out %.bpf.h,$(wildcard bpf/*.h)) # shared with user space
BPF_H    := $(wildcard bpf/*.bpf.h) $(SHARED_H)

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-Wno-unused-function -I$(OUT) -Ivmlinux/$(ARCH) -Ibpf
CFLAGS   ?= -O2 -g
CFLAGS   += -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
	-D_GNU_SOURCE -I$(OUT) -Ibpf -Iuser
LDLIBS   := -lbpf -lelf -lz -lm
# The etcd client (user/etcd.c): HTTP by libcurl, JSON by jansson; linked
# into what holds the agent's code (target-specific, below).
ETCD_LIBS := -lcurl -ljansson
# Debian's libmicrohttpd serves --listen and --metrics (user/http_serve.c):
# linked into what holds the agent's code (the agent, the test programs
# and the harnesses that link its library), not ks_load or dfuzz.
HTTP_LIBS := -lmicrohttpd

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_OBJS := $(OUT)/keysteer.bpf.o $(OUT)/ks_empty.bpf.o
SKELS    := $(OUT)/keysteer.skel.h $(OUT)/ks_empty.skel.h

# user/ in the shape of the agent (docs/design.md): core/, render/ and
# util/ are libks.a, which links without libbpf (the unit tests, fuzzers and
# ks_load use it); dp/ (libbpf), net/, agent/ (the interval loop's wiring)
# and cli/ (one file per command) make the agent with agent.c, main().
LIB_DIRS   := core render util
AGENT_DIRS := cli dp net agent
LIB_SRCS   := $(foreach d,$(LIB_DIRS),$(wildcard user/$(d)/*.c))
AGENT_SRCS := user/agent.c $(foreach d,$(AGENT_DIRS),$(wildcard user/$(d)/*.c))
LIB_OBJS   := $(patsubst user/%.c,$(OUT)/user/%.o,$(LIB_SRCS))
AGENT_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(AGENT_SRCS))
LIBKS      := $(OUT)/libks.a
# The agent's code but main(), for the test programs that reach into it.
AGENT_PART := $(filter-out $(OUT)/user/agent.o,$(AGENT_OBJS))

TEST_BINS := $(OUT)/tests/prog_test $(OUT)/tests/unit_test $(OUT)/tests/bench \
	$(OUT)/tests/ring_compat $(OUT)/tests/etcd_test $(OUT)/tests/ks_vcount \
	$(OUT)/tests/ks_jitdump $(OUT)/tests/fleet_scale
$(OUT)/agent $(TEST_BINS): LDLIBS += $(ETCD_LIBS) $(HTTP_LIBS)

.SECONDARY: $(BPF_OBJS) $(SKELS)
FORCE:
.PHONY: all client tests format FORCE clean test test-unit unit-mutants test-compat compat-full test-prog test-e2e demo bench bench-line bench-purge bench-limit bench-limit-tcp bench-limit-cpus bench-scale-out bench-herd bench-steer bench-accuracy bench-fleet bench-clients bench-detect bench-view-file bench-agent bench-agent-big bench-host bench-votes soak deps check-deps check-demo-deps vmlinux
# what a user runs; `make tests` the test programs, `make fuzz` the fuzzers
all: $(OUT)/agent $(OUT)/ks_load $(BPF_OBJS) client
tests: $(TEST_BINS) $(OUT)/tests/client_bench $(OUT)/tests/ks_client_fresh $(OUT)/tests/acc_gen
tests: $(OUT)/tests/ks_client_load $(OUT)/tests/ks_client_batch
tests: $(OUT)/tests/ks_client_ring
tests: $(OUT)/tests/ks_client_probe

$(OUT):
	$(Q)mkdir -p $@

$(OUT)/%.bpf.o: bpf/%.bpf.c $(BPF_H) $(VMLINUX) | $(OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# Header dependencies come from the compiler (-MMD); the skeletons are
# generated headers, so they exist before anything compiles.
DEPFLAGS := -MMD -MP
$(OUT)/user/%.o: user/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(LIBKS): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/agent: $(AGENT_OBJS) $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The load generator: user/load/*.c and libks.a (ring, shard lists,
# options, log).
LOAD_SRCS := $(wildcard user/load/*.c)
LOAD_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(LOAD_SRCS))

$(OUT)/ks_load: $(LOAD_OBJS) $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lm -lpthread

# libkeysteer, the client library (docs/client.md): user/client/ with the
# core/, util/ and net/ code it uses, compiled again with -fPIC and hidden
# visibility into $(OUT)/pic (never the agent's objects). The .so exports
# the keysteer_* calls only; the .a is one relocatable object whose other
# symbols are made local (objcopy --localize-hidden), so a program linking
# it sees no ks_* names either.
CLIENT_SRCS := $(filter-out user/client/example.c,$(wildcard user/client/*.c))
CLIENT_LIB_SRCS := $(CLIENT_SRCS) $(wildcard user/core/*.c) $(wildcard user/util/*.c) \
	user/net/etcd.c user/net/mc_client.c
CLIENT_PIC  := $(patsubst user/%.c,$(OUT)/pic/user/%.o,$(CLIENT_LIB_SRCS))
CLIENT_LIBS := -lcurl -ljansson -lpthread -lm
CLIENT_SOVER := 0
LIBKEYSTEER := $(OUT)/libkeysteer.a $(OUT)/libkeysteer.so

$(OUT)/pic/user/%.o: user/%.c | $(SKELS)
	$(call msg,CC-PIC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(DEPFLAGS) -c $< -o $@

$(OUT)/libkeysteer.so: $(CLIENT_PIC)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,libkeysteer.so.$(CLIENT_SOVER) \
		-Wl,--no-undefined $^ -o $@ $(CLIENT_LIBS)

$(OUT)/libkeysteer.a: $(CLIENT_PIC)
	$(call msg,AR,$@)
	$(Q)$(LD) -r $^ -o $(OUT)/pic/keysteer.o && \
		objcopy --localize-hidden $(OUT)/pic/keysteer.o && \
		rm -f $@ && ar rcs $@ $(OUT)/pic/keysteer.o

# Made again on every make: it holds PREFIX, which the command line sets.
$(OUT)/keysteer.pc: user/client/keysteer.pc.in FORCE | $(OUT)
	$(call msg,GEN,$@)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
		-e 's|@VERSION@|$(shell sed -n 's/^#define KEYSTEER_VERSION "\(.*\)"/\1/p' user/client/libkeysteer.h)|g' $< > $@

# The example of docs/client.md, linked as an application would (-lkeysteer).
$(OUT)/ks_client_example: user/client/example.c $(OUT)/libkeysteer.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $< -o $@ $(OUT)/libkeysteer.a $(CLIENT_LIBS)

# The reads' cost over a plain client (docs/benchmarks.md).
# ks_mc_fetch from the agent's objects beside the library's (whose own
# copy is local to libkeysteer.a): the same get without the view.
$(OUT)/tests/client_bench: tests/client/client_bench.c $(OUT)/libkeysteer.a \
	$(OUT)/user/net/mc_client.o $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $^ -o $@ $(CLIENT_LIBS)

# Freshness through the library, end to end (tests/e2e/test_client_fresh.sh).
$(OUT)/tests/ks_client_fresh: tests/client/ks_client_fresh.c $(OUT)/libkeysteer.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $< -o $@ $(OUT)/libkeysteer.a $(CLIENT_LIBS)

# The library across a ring change (tests/e2e/test_client_ring_change.sh,
# bench-scale-out).
$(OUT)/tests/ks_client_ring: tests/client/ks_client_ring.c $(OUT)/libkeysteer.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $< -o $@ $(OUT)/libkeysteer.a $(CLIENT_LIBS)

# The L1's window and the failure timelines (tests/e2e/test_client_faults.sh).
$(OUT)/tests/ks_client_probe: tests/client/ks_client_probe.c $(OUT)/libkeysteer.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $< -o $@ $(OUT)/libkeysteer.a $(CLIENT_LIBS)

# The flash-sale load through the library over TCP (make bench-steer-tcp):
# ks_load's Zipf sampler and latency histogram beside libkeysteer.a.
$(OUT)/tests/ks_client_load: tests/client/ks_client_load.c $(OUT)/libkeysteer.a \
	$(OUT)/user/load/zipf.o $(OUT)/user/load/hist.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $^ -o $@ $(CLIENT_LIBS)

# keysteer_set_many against real memcached (tests/e2e/test_client_batch.sh):
# the checks read memcached with the agent's mc_client, as client_bench does.
$(OUT)/tests/ks_client_batch: tests/client/ks_client_batch.c $(OUT)/libkeysteer.a \
	$(OUT)/user/net/mc_client.o $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $^ -o $@ $(CLIENT_LIBS)

# Many handles in one process (tests/e2e/test_client_shared.sh).
$(OUT)/tests/ks_client_many: tests/client/ks_client_many.c $(OUT)/libkeysteer.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $< -o $@ $(OUT)/libkeysteer.a $(CLIENT_LIBS)
tests: $(OUT)/tests/ks_client_many

# Counters through the library (tests/e2e/test_client_split.sh, bench-votes).
$(OUT)/tests/ks_counter: tests/client/ks_counter.c $(OUT)/libkeysteer.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $< -o $@ $(OUT)/libkeysteer.a $(CLIENT_LIBS)
tests: $(OUT)/tests/ks_counter

# One simulated application host of make bench-clients: N handles and a
# poller of their views' revisions (tests/bench/clients_bench.py).
$(OUT)/tests/ks_client_swarm: tests/client/ks_client_swarm.c $(OUT)/libkeysteer.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Iuser/client $< -o $@ $(OUT)/libkeysteer.a $(CLIENT_LIBS)
tests: $(OUT)/tests/ks_client_swarm

client: $(LIBKEYSTEER) $(OUT)/keysteer.pc $(OUT)/ks_client_example

# Test programs: tests/<tier>/*.c plus tests/lib/*.c plus the agent's code.
$(OUT)/tests/obj/%.o: tests/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -Itests/lib -c $< -o $@

TEST_LIB := $(patsubst tests/%.c,$(OUT)/tests/obj/%.o,$(wildcard tests/lib/*.c))
tier_objs = $(patsubst tests/%.c,$(OUT)/tests/obj/%.o,$(wildcard tests/$(1)/*.c))
# a program of its own, not a part of $(OUT)/tests/bench (below)
FLEET_SCALE_OBJ := $(OUT)/tests/obj/bench/fleet_scale.o
VIEW_REFRESH_OBJ := $(OUT)/tests/obj/bench/view_refresh.o
AGENT_BIG_OBJS := $(OUT)/tests/obj/bench/agent_big.o $(OUT)/tests/obj/bench/agent_big_model.o

# The stack's headroom check (tests/prog/t_stack.c): keysteer.bpf.o again
# with KS_STACK_MARGIN bytes planted in each program's own frame
# (bpf/keysteer.bpf.c), embedded in prog_test by a skeleton of its own.
STACK_MARGIN_H := tests/prog/stack_margin.h
$(OUT)/tests/keysteer_stack.bpf.o: bpf/keysteer.bpf.c $(BPF_H) $(VMLINUX) $(STACK_MARGIN_H) | $(OUT)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -include $(STACK_MARGIN_H) \
		-DKS_STACK_PLANT=KS_STACK_MARGIN -c $< -o $@
$(OUT)/tests/keysteer_stack.skel.h: $(OUT)/tests/keysteer_stack.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name keysteer_stack > $@.tmp && mv $@.tmp $@
$(OUT)/tests/obj/prog/t_stack.o: $(OUT)/tests/keysteer_stack.skel.h

$(OUT)/tests/prog_test: $(call tier_objs,prog) $(TEST_LIB) $(AGENT_PART) $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# keysteer_open's spec words (api.c and what it calls) for t_client_view.c
UNIT_CLIENT_OBJS := $(patsubst %,$(OUT)/user/client/%.o,api batch counter_io \
	fleet fleet_file servers routing share limit limit_reg)
$(OUT)/tests/unit_test: $(call tier_objs,unit) $(TEST_LIB) $(AGENT_PART) \
	$(OUT)/user/load/zipf.o $(OUT)/user/load/hist.o \
	$(OUT)/user/client/view.o $(OUT)/user/client/route.o \
	$(UNIT_CLIENT_OBJS) $(LIBKS) \
	$(OUT)/user/client/batch_proto.o $(OUT)/user/client/l1.o \
	$(OUT)/user/client/routing_doc.o $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# the fill worker's death, forced in this build only (tests/unit/t_steer_fill.c)
$(OUT)/tests/unit_test: LDLIBS += -Wl,--wrap=ks_drop_thread_privileges

# make bench-agent-big's model (tests/bench/agent_big_model.c)
$(OUT)/tests/unit_test: $(OUT)/tests/obj/bench/agent_big_model.o

# the view's split counters (user/client/counter.c, docs/client.md)
$(OUT)/tests/unit_test: $(OUT)/user/client/counter.o

# keysteer_fetch's decisions and single-flight table (docs/client.md)
$(OUT)/tests/unit_test: $(OUT)/user/client/lease.o

$(OUT)/tests/bench: $(filter-out $(FLEET_SCALE_OBJ) $(VIEW_REFRESH_OBJ) $(AGENT_BIG_OBJS),$(call tier_objs,bench)) \
	$(TEST_LIB) $(AGENT_PART) $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# A view refresh from a host follower's file (make bench-view-file): the
# client's view and file reader beside the core, as unit_test links them.
$(OUT)/tests/view_refresh: $(VIEW_REFRESH_OBJ) $(AGENT_PART) $(OUT)/user/client/view.o \
	$(OUT)/user/client/route.o $(UNIT_CLIENT_OBJS) $(LIBKS) \
	$(OUT)/user/client/batch_proto.o $(OUT)/user/client/l1.o \
	$(OUT)/user/client/routing_doc.o $(OUT)/user/client/counter.o \
	$(OUT)/user/client/lease.o $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) $(ETCD_LIBS) $(HTTP_LIBS)
tests: $(OUT)/tests/view_refresh

# The verifier's instructions processed per program of a BPF object,
# loaded with no map pinned: `build/tests/ks_vcount [OBJ]...`.
$(OUT)/tests/ks_vcount: tests/tools/ks_vcount.c user/dp/cpu_maps.c | $(OUT)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lbpf

# One program's JIT image, for objdump (bpftool here has no libbfd):
# `build/tests/ks_jitdump OBJ PROG FILE` (docs/benchmarks.md, issue 27).
$(OUT)/tests/ks_jitdump: tests/tools/ks_jitdump.c user/dp/cpu_maps.c | $(OUT)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lbpf

# The accuracy benchmark's captures with their ground truth: Zipf draws
# from ks_load's sampler, frames written with the capture format's writer.
$(OUT)/tests/acc_gen: $(OUT)/tests/obj/bench/acc/acc_gen.o \
	$(OUT)/user/load/zipf.o $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lm

# N simulated agents against one etcd (tests/bench/fleet_scale.c, run by
# `make bench-fleet`): the agent's code but main(), its hand-overs to the
# publisher timestamped on their way (--wrap), so not in $(OUT)/tests/bench.
$(OUT)/tests/fleet_scale: LDLIBS += -lpthread
$(OUT)/tests/fleet_scale: $(FLEET_SCALE_OBJ) $(AGENT_PART) $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) \
		-Wl,--wrap=ks_etcd_pub_set,--wrap=ks_etcd_pub_delete

# The agent's interval at N simulated CPUs (make bench-agent-big): the
# agent's code but main(), its libbpf map calls and CPU count wrapped
# (tests/bench/agent_big.c), so not in $(OUT)/tests/bench.
$(OUT)/tests/agent_big: $(AGENT_BIG_OBJS) $(AGENT_PART) $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) $(ETCD_LIBS) $(HTTP_LIBS) \
		-Wl,--wrap=bpf_map_lookup_elem,--wrap=bpf_map_update_elem \
		-Wl,--wrap=libbpf_num_possible_cpus
tests: $(OUT)/tests/agent_big

# The ring builder against a real client (Debian's libmemcached-dev).
$(OUT)/tests/ring_compat: $(call tier_objs,compat) $(TEST_LIB) $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) -lmemcached

# The etcd client against real etcd processes, which
# tests/e2e/test_etcd_client.sh starts and names on its command line.
$(OUT)/tests/etcd_test: $(call tier_objs,etcd) $(OUT)/tests/obj/lib/ktest.o \
	$(OUT)/user/net/etcd.o $(OUT)/user/net/etcd_pub.o $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# Debian's packages (user/scripts/deps.sh has the sets): the demo needs the
# build's and its own; the tests and benchmarks those and their clients,
# oracles and tools. `make deps` installs everything.
check-deps:
	@user/scripts/deps.sh --check-test || user/scripts/deps.sh --test

check-demo-deps:
	@user/scripts/deps.sh --check-demo || user/scripts/deps.sh --demo

deps:
	user/scripts/deps.sh --test

test: check-deps
	$(MAKE) all tests fuzz
	tests/run.sh

test-unit test-compat test-prog test-e2e: check-deps
	$(MAKE) all tests fuzz
	tests/run.sh $(patsubst test-%,%,$@)

# The compat tier with every key of the client oracles (pymemcache: 120,000
# keys instead of the tier's 14,400 sample; about 3 minutes).
# nutcracker: 115,082 keys over 24 server lists x 48 pools instead of 6
# lists; gomemcache: 100,000 keys over 40 lists instead of 6,000.
compat-full: check-deps
	$(MAKE) all tests
	KS_COMPAT_FULL=1 $(OUT)/tests/ring_compat

# The unit tests' control (tests/unit/mutants.sh, docs/testing.md): each
# of 64 wrong decisions planted in user/core/, one at a time in a copy of
# the tree, must make unit_test fail. Not in `make test`: about 15
# minutes. On one CPU (MUTANT_CPU, default 0) at nice 19, beside a
# benchmark on the others.
MUTANT_CPU ?= 0
unit-mutants: check-deps
	$(MAKE) $(OUT)/tests/unit_test
	OUT=$(OUT) taskset -c $(MUTANT_CPU) nice -n 19 bash tests/unit/mutants.sh

demo: check-demo-deps
	$(MAKE) all
	user/scripts/demo.sh
	user/scripts/demo_steer.sh
	user/scripts/demo_fleet.sh
	user/scripts/demo_ring.sh
	@echo "== one hot key expiring every second under 32 callers on 2 hosts, 50 ms database reads: fills per expiry without and with get_or_fill (docs/client.md, Read-through)"
	OUT=$(OUT) tests/bench/herd_bench.sh --seconds 5 --threads 16 --alone

# BENCH_BEFORE=path/keysteer.bpf.o times the build before TCP streams
# (commit 94672e7, built in a worktree of its own) on the same packets in
# the same run (docs/benchmarks.md).
# BENCH_AGAINST=path/keysteer.bpf.o times another build of this tree (a
# change's build before, e.g. from a worktree of the commit before) on
# every scenario with no ring and no hot table, in the same run.
BENCH_BEFORE ?=
BENCH_AGAINST ?=
bench: check-deps
	$(MAKE) all tests
	$(OUT)/tests/bench $(if $(BENCH_BEFORE),--before $(BENCH_BEFORE)) \
		$(if $(BENCH_AGAINST),--against $(BENCH_AGAINST))
	$(OUT)/tests/bench replies

# Packets/s per core through a veth pair in namespaces of its own, keysteer
# against the empty program, swapped every burst (blocks E K K E), until the
# ratio's spread is known (docs/benchmarks.md). 1 to 5 minutes (at most
# 300 s). Not in `make test`.
# LINE_SAMPLE=auto (or N): UDP gets whose keys all differ, keysteer
# sampling at the rate auto picks at this load (or 1 in N), the sampled
# keys through the sample log and the agent's drain in a thread;
# LINE_LOG_SAMPLES=off: without the sample log (the in-kernel sketch).
# LINE_SLOG=1: the sample log's tails moved by the benchmark instead of
# the drain (the datapath's side of the log alone; line_bench.sh --slog).
# LINE_OBJECT=OBJ: keysteer's XDP program from another build's
# keysteer.bpf.o (main's, or a stop of stage_build.sh --express) on this
# build's bench (line_bench.sh --object).
# LINE_RING=N (with LINE_SAMPLE): a ketama ring of N shards loaded, every
# sampled key placed on it (line_bench.sh --ring). LINE_KEYS=N (with
# LINE_SAMPLE): each key drawn uniformly from N keys, keys that come back
# (line_bench.sh --keys).
bench-line: check-deps
	$(MAKE) all tests
	OUT=$(OUT) tests/bench/line_bench.sh $(if $(LINE_SAMPLE),--sample $(LINE_SAMPLE)) \
		$(if $(LINE_LOG_SAMPLES),--log-samples $(LINE_LOG_SAMPLES)) $(if $(LINE_SLOG),--slog) \
		$(if $(LINE_OBJECT),--object $(LINE_OBJECT)) \
		$(if $(LINE_RING),--ring $(LINE_RING)) $(if $(LINE_KEYS),--keys $(LINE_KEYS))

# Top-K accuracy at scale against exact counts: generated captures of 1M
# Zipf keys plus churn through `agent replay --interval` at --sample 1, 8,
# 64, then load levels of 10k..10M keys/s at --sample 8 and auto
# (docs/accuracy.md, which the run rewrites). About five minutes, 2 GB in
# /tmp. Not in `make test`.
bench-accuracy: check-deps
	$(MAKE) all tests
	OUT=$(OUT) tests/bench/accuracy_bench.sh --docs docs/accuracy.md

# The agent's own cost: CPU per interval and memory of `agent run` on live
# traffic at 1, 64 and 1,024 shards and --sample 8 and 1, then the work of
# an interval at 1M keys/s in a replay (docs/benchmarks.md, "The agent's
# own cost"). About two minutes. Not in `make test`.
bench-agent: check-deps
	$(MAKE) all tests
	OUT=$(OUT) tests/bench/agent_cost.sh --json $(OUT)/agent_cost.json

# The agent's interval at 2, 16, 64 and 128 simulated CPUs: its own
# collect.c and estimate.c on synthetic per-CPU data, the kernel's copy
# measured here and scaled by bytes, the per-CPU maps' memory, in
# AGENT_BIG_ROUNDS rounds (docs/benchmarks.md, "The agent on big hosts");
# AGENT_BIG_BEFORE=REV also runs REV's estimate.c and collect.c in every
# round and prints this / before. With the sample log's drain and fold on
# real maps sized as such a host sizes them (AGENT_BIG_SLOG_RATE keys/s a
# CPU; 0: not), and the same bench without the log and with one drain
# thread (against the automatic count) in every round. Needs
# root; a few minutes.
AGENT_BIG_CPUS   ?= 2,16,64,128
AGENT_BIG_ROUNDS ?= 3
# the sample log's keys a second a CPU (0: none; then no baseline without)
AGENT_BIG_SLOG_RATE ?= 262144
AGENT_BIG_BEFORE ?=
bench-agent-big: check-deps
	$(MAKE) all tests
	OUT=$(OUT) tests/bench/agent_big.sh --cpus $(AGENT_BIG_CPUS) \
		--rounds $(AGENT_BIG_ROUNDS) --json $(OUT)/agent_big.json \
		--slog-rate $(AGENT_BIG_SLOG_RATE) \
		$(if $(AGENT_BIG_BEFORE),--before $(AGENT_BIG_BEFORE))

# keysteer on live traffic beside a libpcap observer (tcpdump): memcached in
# a namespace, ks_load flat out over UDP and TCP, the HOST_CONFIGS
# interleaved in HOST_ROUNDS rounds (default 6) of HOST_SECONDS (default 5)
# per run, perf sampling every run at HOST_PERF_HZ (default 1999; 0: off)
# for the observers' kernel time (tcpdump's copy into its ring runs
# outside its process); ends with issue 27's goal, CPU per request against
# tcpdump with its spread. About 25 minutes (docs/benchmarks.md, "Live
# traffic"). Not in `make test`.
HOST_ROUNDS  ?= 6
HOST_SECONDS ?= 5
HOST_PERF_HZ ?= 1999
# all nine: none empty ks8 ks1 ksauto ks8ring ks8hot pcap pcap96
HOST_CONFIGS ?= none empty ks8 ksauto pcap
bench-host: check-deps
	$(MAKE) all
	OUT=$(OUT) tests/bench/host_bench.sh --rounds $(HOST_ROUNDS) \
		--duration $(HOST_SECONDS) --perf-hz $(HOST_PERF_HZ) \
		--configs '$(HOST_CONFIGS)' \
		--json $(OUT)/host_bench.jsonl --markdown $(OUT)/host_bench.md

# The soak test for SOAK_SECONDS (default 600): sustained load while the
# agent swaps rings and hot tables every interval (docs/reliability.md).
SOAK_SECONDS ?= 600
soak: check-deps
	$(MAKE) all
	SOAK_SECONDS=$(SOAK_SECONDS) bash tests/e2e/test_soak.sh

# The ownership-loss purge's cost (issue 23): one shard of 1,000,000 items
# loses a quarter; time, items/s and the get p99 during the purge against
# without it (docs/benchmarks.md, "The purge at a ring change"). About 3
# minutes. Not in `make test`.
bench-purge: check-deps
	$(MAKE) all
	OUT=$(OUT) tests/bench/purge_bench.sh --json $(OUT)/purge_bench.json

# A runaway key at 10x its limit, saturating a one-thread shard, beside a
# Zipf load: the other keys' latency and completed gets alone, with the
# runaway, with it limited and with its sender at the limit, and the
# refusals the load generator saw against the datapath's count
# (docs/limits.md "Measured"), then the same through libkeysteer over TCP
# (bench-limit-tcp). About 6 minutes. Not in `make test`.
bench-limit: check-deps
	$(MAKE) all
	OUT=$(OUT) tests/bench/limit_bench.sh --json $(OUT)/limit_bench.json
	$(MAKE) bench-limit-tcp

# The UDP runaway with the load generators off the shard's CPU: memcached,
# the agent and the server veth's receive (RPS) on CPU 1, the load
# generators and the client veth's receive on CPU 0 (docs/limits.md).
# About 3 minutes.
bench-limit-cpus: check-deps
	$(MAKE) all
	OUT=$(OUT) tests/bench/limit_bench.sh --mc-cpu 1 --agent-cpu 1 --rps-server 2 \
		--zipf-cpu 0 --run-cpu 0 --rps-client 1 --json $(OUT)/limit_bench_cpus.json

# The runaway through libkeysteer over TCP, per client process and
# fleet-wide (docs/limits.md). About 5 minutes.
bench-limit-tcp: check-deps
	$(MAKE) all tests
	OUT=$(OUT) tests/bench/limit_tcp_bench.sh --json $(OUT)/limit_tcp_bench.json

# The flash-sale benchmark: 8 shards, 4 L1 replicas, with and without
# steering (docs/steering.md). About 40 s.
bench-steer: check-deps
	$(MAKE) all
	tests/bench/steer_bench.sh --json $(OUT)/steer_bench.json

# The same flash sale over TCP through libkeysteer: etcd in the client's
# namespace, agents with --etcd, build/tests/ks_client_load (docs/steering.md,
# "Over TCP through the library"). About 45 s. Not in `make test`.
.PHONY: bench-steer-tcp bench-scale-out bench-plan
# A ring planned from measured load (issue 26): 16 shards, the flash sale and
# a Zipf 1.0 body through libkeysteer, busiest/mean from memcached's counters
# with ketama, --balance and the planned ring, each window started on events
# (the agents' load documents settled, at the workload's rate); then bounded
# loads against the planner on the same workloads, simulated
# (docs/placement.md). About 8 minutes, more on a loaded machine (a window
# at the wrong rate is measured again). Not in `make test`.
bench-plan: check-deps
	$(MAKE) all tests
	OUT=$(OUT) tests/bench/plan_bench.sh --json $(OUT)/plan_bench.json
	/usr/bin/python3 tests/bench/bounded_loads.py --agent $(OUT)/agent --json $(OUT)/bounded_loads.json

bench-steer-tcp: check-deps
	$(MAKE) all tests
	tests/bench/steer_bench.sh --via library --agent-args '--owner-share 0.015625 --balance 0.10' \
		--json $(OUT)/steer_bench_tcp.json

# The talent show's final vote (issue 13): 16 shards, 4 counters at 60/25/10/5%
# of the increments from 2 client hosts through libkeysteer, busiest/mean
# shard from memcached's counters without and with the agents' split,
# every counter read back exact (docs/benchmarks.md). About 2 minutes.
bench-votes: check-deps
	$(MAKE) all $(OUT)/tests/ks_counter
	OUT=$(OUT) tests/bench/votes_bench.sh --json $(OUT)/votes_bench.json

# A fifth shard joins four under a Zipf read load with a counted read-through
# database: database reads in the 30 s after the change through libkeysteer
# with its warm-up, without it, and through a plain ketama client
# (tests/bench/scale_out.sh; docs/benchmarks.md, "Scale-out"). About 3
# minutes. Not in `make test`.
bench-scale-out: check-deps
	$(MAKE) all
	OUT=$(OUT) tests/bench/scale_out.sh --json $(OUT)/scale_out.json
# One hot key expiring under 64 callers on 2 hosts: database fills per
# expiry, plain pattern against get_or_fill (docs/benchmarks.md, issue 24).
bench-herd: check-deps
	$(MAKE) all
	OUT=$(OUT) tests/bench/herd_bench.sh --json $(OUT)/herd_bench.json

# One etcd for many hosts: 16, 64 and 256 simulated agents against one
# local etcd, steady and churn, each point FLEET_REPEATS times (default 2):
# puts/s, watch latency, etcd's CPU (docs/fleet.md, "Scale"). About a minute
# a point and a repeat. Not in `make test`.
FLEET_REPEATS ?= 2
FLEET_AGENTS  ?= 16,64,256
bench-fleet: check-deps
	$(MAKE) $(OUT)/tests/fleet_scale
	OUT=$(OUT) tests/bench/fleet_scale.sh --repeats $(FLEET_REPEATS) --agents $(FLEET_AGENTS)

# Application hosts x handles following one etcd (tests/bench/clients_bench.py;
# docs/fleet.md, "Clients at scale"): etcd's CPU, the p99 time for every
# handle to see a hot/ change, memory per handle, open time; with
# CLIENTS_CHURN=N, N of bench-fleet's churning agents write meanwhile.
# CLIENTS_POINTS is HOSTSxHANDLES,...; CLIENTS_WORDS go to every
# keysteer_open; CLIENTS_ARGS to the script (--help). Default: 10 hosts x
# 10 handles, one point, about a minute. Not in `make test`.
CLIENTS_POINTS ?= 10x10
CLIENTS_CHURN  ?= 0
CLIENTS_WORDS  ?=
CLIENTS_ARGS   ?=
bench-clients: check-deps
	$(MAKE) all $(OUT)/tests/ks_client_swarm $(OUT)/tests/fleet_scale
	OUT=$(OUT) python3 tests/bench/clients_bench.py --points $(CLIENTS_POINTS) \
		--churn-agents $(CLIENTS_CHURN) --words '$(CLIENTS_WORDS)' $(CLIENTS_ARGS)

# Detection to every client (tests/bench/detect_bench.sh; docs/fleet.md,
# "Clients at scale"): from a key's first request to each of N handles on
# another host reading it from a copy, N = DETECT_FOLLOWERS, DETECT_REPEATS
# keys each, in each mode of following (DETECT_MODES: a watch per handle,
# a shared view per process, a host follower's file). About 10 minutes.
# Not in `make test`.
DETECT_MODES     ?= own,shared,file
DETECT_FOLLOWERS ?= 1,100,1000
DETECT_REPEATS   ?= 5
bench-detect: check-deps
	$(MAKE) all $(OUT)/tests/ks_client_swarm
	OUT=$(OUT) tests/bench/detect_bench.sh --modes $(DETECT_MODES) \
		--followers $(DETECT_FOLLOWERS) \
		--repeats $(DETECT_REPEATS) --json $(OUT)/detect_bench.json

# A view refresh from a host follower's file against the same change as a
# watch event (tests/bench/view_refresh.c; docs/client.md, "One view per
# host"): 64 hosts and VIEW_HOT hot/ entries, the file on tmpfs as
# /run/keysteer is. Seconds. Not in `make test`.
VIEW_HOT   ?= 256,1024,4096,16384
VIEW_SNAPS ?= 2000
bench-view-file: $(OUT)/tests/view_refresh
	$(OUT)/tests/view_refresh --hot $(VIEW_HOT) --hosts 64 \
		--snaps $(VIEW_SNAPS)

# Every C file of the tree as .clang-format says; `make test` checks it.
format:
	git ls-files 'bpf/*.[ch]' 'user/*.[ch]' 'tests/*.[ch]' | xargs clang-format -i

vmlinux:
	vmlinux/gen.sh $(ARCH)

clean:
	rm -rf $(OUT)

# ---- install: docs/operations.md. Nothing goes to /etc, nothing starts. ----
# make install [PREFIX=/usr/local] [DESTDIR=staging root]; make uninstall
# with the same two removes exactly what install wrote.
PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
DOCDIR  ?= $(PREFIX)/share/doc/keysteer
UNITDIR ?= $(PREFIX)/lib/systemd/system
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PCDIR   ?= $(LIBDIR)/pkgconfig
INSTALL ?= install

INSTALL_DOCS := README.md docs/operations.md docs/report-json.md \
	docs/report.schema.json user/dist/keysteer.conf.example

.PHONY: install uninstall
install: $(OUT)/agent $(OUT)/ks_load $(LIBKEYSTEER) $(OUT)/keysteer.pc
	$(Q)$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PCDIR)
	$(Q)$(INSTALL) -m 0644 user/client/libkeysteer.h $(DESTDIR)$(INCLUDEDIR)/
	$(Q)$(INSTALL) -m 0644 $(OUT)/libkeysteer.a $(DESTDIR)$(LIBDIR)/
	$(Q)$(INSTALL) -m 0755 $(OUT)/libkeysteer.so $(DESTDIR)$(LIBDIR)/libkeysteer.so.$(CLIENT_SOVER)
	$(Q)ln -sf libkeysteer.so.$(CLIENT_SOVER) $(DESTDIR)$(LIBDIR)/libkeysteer.so
	$(Q)$(INSTALL) -m 0644 $(OUT)/keysteer.pc $(DESTDIR)$(PCDIR)/
	$(Q)$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR)
	$(Q)$(INSTALL) -m 0755 $(OUT)/agent $(DESTDIR)$(SBINDIR)/keysteer-agent
	$(Q)$(INSTALL) -m 0755 $(OUT)/ks_load $(DESTDIR)$(BINDIR)/ks_load
	$(Q)$(INSTALL) -m 0644 user/dist/keysteer-agent.8 $(DESTDIR)$(MANDIR)/man8/
	@# the unit names the agent by its installed path
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g' user/dist/keysteer@.service.in \
		> $(DESTDIR)$(UNITDIR)/keysteer@.service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/keysteer@.service
	$(Q)$(INSTALL) -m 0644 $(INSTALL_DOCS) $(DESTDIR)$(DOCDIR)/
	@echo "installed keysteer-agent in $(DESTDIR)$(SBINDIR); config: /etc/keysteer/IF.conf from $(DOCDIR)/keysteer.conf.example"

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/keysteer-agent $(DESTDIR)$(BINDIR)/ks_load \
		$(DESTDIR)$(MANDIR)/man8/keysteer-agent.8 \
		'$(DESTDIR)$(UNITDIR)/keysteer@.service' \
		$(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(INSTALL_DOCS))) \
		$(DESTDIR)$(INCLUDEDIR)/libkeysteer.h $(DESTDIR)$(LIBDIR)/libkeysteer.a \
		$(DESTDIR)$(LIBDIR)/libkeysteer.so $(DESTDIR)$(LIBDIR)/libkeysteer.so.$(CLIENT_SOVER) \
		$(DESTDIR)$(PCDIR)/keysteer.pc
	@rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# ---- fuzzing: tests/fuzz, docs/fuzzing.md (everything below is that) ----
# $(OUT)/fuzz/dfuzz is the differential fuzzer of the datapath (a normal
# program, built like the other test programs). $(OUT)/fuzz/fz_* are
# libFuzzer harnesses of the agent's parsers: clang with ASan and UBSan over
# the user/ sources compiled again with those flags into $(OUT)/fuzz/obj
# (never the normal objects). Without clang's libFuzzer runtime the
# harnesses are not built and the fuzz tier skips them.
# `make fuzz` builds them; `make fuzz-long` runs everything for
# FUZZ_SECONDS each (default 600); `tests/run.sh fuzz` is the bounded run
# (about 80 s).
FUZZ_DIR      := $(OUT)/fuzz
FUZZ_SECONDS  ?= 600
FUZZ_SEED     ?= 1
DFUZZ_OBJS    := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/obj/%.o,\
	$(filter-out tests/fuzz/fz_%.c,$(wildcard tests/fuzz/*.c)))
FUZZ_HARNESS  := $(patsubst tests/fuzz/fz_%.c,$(FUZZ_DIR)/fz_%,$(wildcard tests/fuzz/fz_*.c))
FUZZ_RT       := $(wildcard $(shell $(CLANG) -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-$(shell uname -m).a)
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
FUZZ_CFLAGS   := -O1 -g $(FUZZ_SAN) -D_GNU_SOURCE -I$(OUT) -Ibpf -Iuser -Itests/fuzz \
	-Wall -Wno-unused-parameter -Wno-missing-field-initializers
FUZZ_USER_OBJS := $(patsubst user/%.c,$(FUZZ_DIR)/obj/user/%.o,$(LIB_SRCS) $(filter-out user/agent.c,$(AGENT_SRCS)))

.PHONY: fuzz fuzz-long test-fuzz
fuzz: $(FUZZ_DIR)/dfuzz $(if $(FUZZ_RT),$(FUZZ_HARNESS))

$(FUZZ_DIR)/obj/%.o: tests/fuzz/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -Itests/lib -c $< -o $@

$(FUZZ_DIR)/dfuzz: $(DFUZZ_OBJS) $(OUT)/tests/obj/lib/pkt.o \
	$(OUT)/user/dp/load_private.o $(OUT)/user/dp/cpu_maps.o $(LIBKS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The agent's sources again, instrumented for the harnesses.
$(FUZZ_DIR)/obj/user/%.o: user/%.c | $(SKELS)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/libks_san.a: $(FUZZ_USER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# kt_netns.c: fz_http listens inside a network namespace of its own.
$(FUZZ_DIR)/fz_%: LDLIBS += $(HTTP_LIBS) $(ETCD_LIBS)
$(FUZZ_DIR)/fz_%: tests/fuzz/fz_%.c tests/fuzz/fz_common.h tests/lib/kt_netns.c $(FUZZ_DIR)/libks_san.a
	$(call msg,FUZZER,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -Itests/lib -Werror -fsanitize=fuzzer $< tests/lib/kt_netns.c \
		$(FUZZ_DIR)/libks_san.a -o $@ $(LDLIBS)

# The long run: dfuzz and every harness FUZZ_SECONDS each, findings and
# grown corpora under $(FUZZ_DIR)/.
fuzz-long: check-deps
	$(MAKE) all tests fuzz
	tests/fuzz/run_fuzz.sh --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED)

test-fuzz: check-deps
	$(MAKE) all tests fuzz
	tests/run.sh fuzz

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
