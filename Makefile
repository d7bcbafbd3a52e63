# keysteer build. `make` builds the BPF objects, their skeletons and the
# agent into $(OUT); `make test` runs every test tier; `make demo` runs the
# built-in demo; `make bench` runs the benchmarks; `make deps` installs
# what is missing from Debian's packages. V=1 prints full commands.

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

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_OBJS := $(OUT)/keysteer.bpf.o $(OUT)/ks_empty.bpf.o
SKELS    := $(OUT)/keysteer.skel.h $(OUT)/ks_empty.skel.h

# Agent sources: every user/*.c; agent.c holds main().
AGENT_SRCS := $(wildcard user/*.c)
AGENT_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(AGENT_SRCS))
# Library part of the agent (everything but main) for the test programs.
LIB_OBJS   := $(filter-out $(OUT)/user/agent.o,$(AGENT_OBJS))

TEST_BINS := $(OUT)/tests/prog_test $(OUT)/tests/unit_test $(OUT)/tests/bench \
	$(OUT)/tests/ring_compat

.SECONDARY: $(BPF_OBJS)
.PHONY: all clean test test-unit test-compat test-prog test-e2e demo bench bench-steer deps check-deps vmlinux
all: $(OUT)/agent $(OUT)/ks_load $(TEST_BINS)

$(OUT) $(OUT)/user:
	$(Q)mkdir -p $@

$(OUT)/%.bpf.o: bpf/%.bpf.c $(BPF_H) $(VMLINUX) | $(OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(OUT)/user/%.o: user/%.c $(wildcard user/*.h) $(SHARED_H) $(SKELS) | $(OUT)/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/agent: $(AGENT_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The load generator: user/load/*.c (not part of AGENT_SRCS: wildcard does
# not recurse) plus the agent's ring, shard-list, option and log code.
LOAD_SRCS := $(wildcard user/load/*.c)
LOAD_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(LOAD_SRCS))
LOAD_LIB  := $(OUT)/user/ring.o $(OUT)/user/shards.o $(OUT)/user/opts.o \
	$(OUT)/user/log.o

$(OUT)/user/load/%.o: user/load/%.c $(wildcard user/load/*.h) $(wildcard user/*.h) $(SHARED_H)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/ks_load: $(LOAD_OBJS) $(LOAD_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) -lpthread

# Test programs: tests/<tier>/*.c plus tests/lib/*.c plus the agent's library.
$(OUT)/tests/obj/%.o: tests/%.c $(wildcard tests/*/*.h) $(wildcard user/*.h) $(wildcard user/load/*.h) $(SHARED_H) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Itests/lib -c $< -o $@

TEST_LIB := $(patsubst tests/%.c,$(OUT)/tests/obj/%.o,$(wildcard tests/lib/*.c))
tier_objs = $(patsubst tests/%.c,$(OUT)/tests/obj/%.o,$(wildcard tests/$(1)/*.c))

$(OUT)/tests/prog_test: $(call tier_objs,prog) $(TEST_LIB) $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(OUT)/tests/unit_test: $(call tier_objs,unit) $(TEST_LIB) $(LIB_OBJS) \
	$(OUT)/user/load/zipf.o $(OUT)/user/load/hist.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(OUT)/tests/bench: $(call tier_objs,bench) $(TEST_LIB) $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The ring builder against a real client (Debian's libmemcached-dev).
$(OUT)/tests/ring_compat: $(call tier_objs,compat) $(TEST_LIB) $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) -lmemcached

# Tools the build needs; `make deps` installs the rest (test clients, ...).
check-deps:
	@user/scripts/deps.sh --check-build || user/scripts/deps.sh

deps:
	user/scripts/deps.sh

test: check-deps
	$(MAKE) all
	tests/run.sh

test-unit test-compat test-prog test-e2e: check-deps
	$(MAKE) all
	tests/run.sh $(patsubst test-%,%,$@)

demo: check-deps
	$(MAKE) all
	user/scripts/demo.sh
	user/scripts/demo_steer.sh

bench: check-deps
	$(MAKE) all
	$(OUT)/tests/bench

# The flash-sale benchmark: 8 shards, 4 L1 replicas, with and without
# steering (docs/steering.md). About 40 s.
bench-steer: check-deps
	$(MAKE) all
	tests/bench/steer_bench.sh --json $(OUT)/steer_bench.json

vmlinux:
	vmlinux/gen.sh $(ARCH)

clean:
	rm -rf $(OUT)
