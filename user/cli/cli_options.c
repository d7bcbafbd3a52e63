// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cli_options.c - the agent's option table (see cli_options.h) and what
 * is made from it: getopt_long tables, lookups by name for config files,
 * and the option lines of --help. The order of the entries is the order
 * of each command's --help list; man/keysteer-agent.8 must list the same
 * options per command (tests/unit/t_cli_options.c).
 */
#include <string.h>
#include "keysteer.h"
#include "ks_ring.h"
#include "cli/cli_options.h"
#include "render/report.h"
#include "core/etcd_codec.h"
#include "core/fleet_view.h"
#include "core/ring_doc.h"
#include "core/view_file.h"
#include "core/slog_part.h"
#include "core/sample_rate.h"
#include "net/etcd.h"
#include "net/etcd_conf.h"
#include "agent/run_purge.h"

#define REQ required_argument
#define NO  no_argument

/* Commands whose -v means libbpf's debug output only. */
#define V_OTHERS (KS_CMD_REPORT | KS_CMD_TRACE | KS_CMD_DETACH | KS_CMD_REPLAY)
#define RUN_CONF KS_OPT_CONF
/* A key of run that only a test may set (docs/operations.md): in no
 * --help list and not in the man page. */
#define RUN_TEST (KS_OPT_CONF | KS_OPT_TEST | KS_OPT_HIDE)

const struct ks_cli_opt ks_cli_opts[] = {
	/* ---- OPTIONS ---- */
	{ "iface", 'i', REQ, "IF", KS_CMD_RUN, RUN_CONF, KS_GRP_OPTIONS,
	  "interface to watch (ingress), required" },
	{ "iface", 'i', REQ, "IF", KS_CMD_REPORT | KS_CMD_TRACE, 0,
	  KS_GRP_OPTIONS, "interface the agent runs on" },
	{ "iface", 'i', REQ, "IF", KS_CMD_DETACH, 0, KS_GRP_OPTIONS,
	  "the interface keysteer was attached to, required" },
	{ "sample", 's', REQ, "N|auto[:T]", KS_CMD_RUN, RUN_CONF,
	  KS_GRP_OPTIONS,
	  "sample 1 in N keys, 1..1000000 (default 8); auto: each CPU's N, a power of two 1..1024, set every interval to sample about T keys/s (default 262144)" },
	{ "sample", 's', REQ, "N|auto[:T]", KS_CMD_REPLAY, 0, KS_GRP_OPTIONS,
	  "sample 1 in N keys, 1..1000000 (default 1: every key); auto[:T] as 'agent run' does, from 1 in 1" },
	{ "place-target",
	  KS_OPTV_PLACE_TARGET,
	  REQ,
	  "T|off",
	  KS_CMD_REPLAY,
	  0,
	  KS_GRP_OPTIONS,
	  "ring placements a second, up to %u (default %u), as\n"
	  "'agent run' bounds them per CPU: with --interval, each\n"
	  "interval's 1 in P from the keys sampled a second of the\n"
	  "capture's clock (the replay is one CPU); off: all placed",
	  { KS_PLACE_TARGET_MAX, KS_PLACE_TARGET_DEFAULT } },
	{ "place-target",
	  KS_OPTV_PLACE_TARGET,
	  REQ,
	  "T|off",
	  KS_CMD_RUN,
	  RUN_CONF,
	  KS_GRP_OPTIONS,
	  "ring placements a second per CPU, up to %u (default %u):\n"
	  "a CPU that samples more keys than T a second places\n"
	  "only 1 in P of them on the clients' ring (P a power of\n"
	  "two set every interval), each counted P for its shard,\n"
	  "so the shard counts stay estimates of the same keys;\n"
	  "under T every sampled key is placed. off: always all",
	  { KS_PLACE_TARGET_MAX, KS_PLACE_TARGET_DEFAULT } },
	{ "drain-threads",
	  KS_OPTV_DRAIN_THREADS,
	  REQ,
	  "N|auto",
	  KS_CMD_RUN,
	  RUN_CONF,
	  KS_GRP_OPTIONS,
	  "threads draining the sample log, 1..%d, each owning a fixed\n"
	  "set of CPUs' logs (default auto: one per %d CPUs)",
	  { KS_SLOG_THREADS_MAX, KS_SLOG_CPUS_PER_THREAD } },
	{ "interval", 'I', REQ, "SEC", KS_CMD_RUN, RUN_CONF, KS_GRP_OPTIONS,
	  "seconds per interval, 0.1..3600, decimals allowed (default 1)" },
	{ "ports",
	  'p',
	  REQ,
	  "P,...",
	  KS_CMD_RUN | KS_CMD_REPLAY,
	  RUN_CONF,
	  KS_GRP_OPTIONS,
	  "memcached ports, 1 to %d of them (default 11211)",
	  { KS_MAX_PORTS } },
	{ "attach", 'T', REQ, "HOOK", KS_CMD_RUN, RUN_CONF, KS_GRP_OPTIONS,
	  "xdp (default) or tc: the tc program at clsact ingress,\n"
	  "which sees what the stack receives after GRO (up to\n"
	  "64 KiB aggregates; XDP sees wire packets) and counts\n"
	  "only (no steering). A tcx link where the kernel has\n"
	  "tcx (6.6+), else a cls_bpf filter at pref 65520 on the\n"
	  "clsact qdisc, which it adds if missing and then removes" },
	{ "xdp-mode", 'x', REQ, "MODE", KS_CMD_RUN, RUN_CONF, KS_GRP_OPTIONS,
	  "native, generic or auto (default auto: native, else\n"
	  "generic); with --attach xdp only" },
	{ "top",
	  't',
	  REQ,
	  "K",
	  KS_CMD_RUN,
	  RUN_CONF,
	  KS_GRP_OPTIONS,
	  "keys published per interval, 1..%d (default %d)",
	  { KS_REPORT_TOP, KS_REPORT_TOP } },
	{ "top",
	  't',
	  REQ,
	  "K",
	  KS_CMD_REPORT | KS_CMD_REPLAY,
	  0,
	  KS_GRP_OPTIONS,
	  "keys to show, 1..%d (default 20)",
	  { KS_REPORT_TOP } },
	{ "json", 'j', NO, NULL, KS_CMD_REPORT, 0, KS_GRP_OPTIONS,
	  "one JSON document instead of the text dashboard" },
	{ "json", 'j', NO, NULL, KS_CMD_REPLAY, 0, KS_GRP_OPTIONS,
	  "the report as one JSON document (as 'agent report --json')" },
	{ "watch", 'w', NO, NULL, KS_CMD_REPORT, 0, KS_GRP_OPTIONS,
	  "on a terminal, a live dashboard redrawn every interval:\n"
	  "shard load bars, top keys with a sparkline of their\n"
	  "recent rate, hot keys, parse errors; fits the window\n"
	  "(resizes too). q quits, r redraws now, Ctrl-L clears;\n"
	  "Ctrl-C and SIGTERM also restore the terminal. Into a\n"
	  "pipe, or with --json: the report again every interval" },
	{ "interval", 'I', REQ, "SEC", KS_CMD_REPLAY, 0, KS_GRP_OPTIONS,
	  "cut the capture into intervals of SEC seconds of its\n"
	  "timestamps, 0.001..3600, and print each one as 'agent\n"
	  "run' would have closed it, with a ring its shard load\n"
	  "(--json: one object a line)" },
	{ "ranked",
	  KS_OPTV_RANKED,
	  REQ,
	  "N",
	  KS_CMD_REPLAY,
	  0,
	  KS_GRP_OPTIONS,
	  "with --interval: also each interval's N heaviest\n"
	  "candidates, 1..%d (the candidate table), beyond\n"
	  "the report's %d",
	  { KS_CAND_SLOTS, KS_REPORT_TOP } },
	{ "interval", 'I', REQ, "SEC", KS_CMD_REPORT, 0, KS_GRP_OPTIONS,
	  "redraw period for --watch (default: the agent's interval)" },
	{ "ascii", 'A', NO, NULL, KS_CMD_REPORT, 0, KS_GRP_OPTIONS,
	  "the dashboard in plain ASCII (the default when the\n"
	  "locale is not UTF-8)" },
	{ "count", 'c', REQ, "N", KS_CMD_TRACE, 0, KS_GRP_OPTIONS,
	  "stop after N lines" },
	{ "duration", 'd', REQ, "SEC", KS_CMD_TRACE, 0, KS_GRP_OPTIONS,
	  "stop after SEC seconds (decimals allowed)" },
	{ "hash-only", 'H', NO, NULL, KS_CMD_REPORT | KS_CMD_REPLAY, 0,
	  KS_GRP_OPTIONS, "show 64-bit key hashes instead of key bytes" },
	{ "hash-only", 'H', NO, NULL, KS_CMD_TRACE, 0, KS_GRP_OPTIONS,
	  "print key hashes instead of key bytes" },
	{ "shards-top",
	  'T',
	  REQ,
	  "N",
	  KS_CMD_REPORT,
	  0,
	  KS_GRP_OPTIONS,
	  "shard rows in the text, 1..%d (default %d); --json\n"
	  "always lists every shard, in index order",
	  { KS_MAX_SHARDS, KS_SHARDS_TOP_DEFAULT } },
	{ "shards-top",
	  'T',
	  REQ,
	  "N",
	  KS_CMD_REPLAY,
	  0,
	  KS_GRP_OPTIONS,
	  "shard rows in the text, 1..%d (default %d)",
	  { KS_MAX_SHARDS, KS_SHARDS_TOP_DEFAULT } },
	{ "verbose", 'v', NO, NULL, KS_CMD_RUN, RUN_CONF | KS_OPT_SHORT,
	  KS_GRP_OPTIONS,
	  "a status line per interval and libbpf's debug output" },
	{ "verbose", 'v', NO, NULL, V_OTHERS | KS_CMD_FOLLOW, KS_OPT_SHORT,
	  KS_GRP_OPTIONS, "libbpf's debug output" },
	{ "log-keys", 'Y', NO, NULL, KS_CMD_RUN, RUN_CONF, KS_GRP_OPTIONS,
	  "show key bytes in those lines (default: hashes; keys\n"
	  "may be user data)" },
	{ "group", 'g', REQ, "NAME", KS_CMD_RUN, RUN_CONF, KS_GRP_OPTIONS,
	  "let group NAME read the pins (folders 0750, maps 0640)\n"
	  "and the routing file (0640); default root only" },
	{ "keep-privileges", 'G', NO, NULL, KS_CMD_RUN, RUN_CONF,
	  KS_GRP_OPTIONS,
	  "keep every capability after attaching (default: only\n"
	  "CAP_BPF and CAP_NET_ADMIN stay, with no_new_privs)" },
	/* test-only: off parses every TCP segment on its own, as if it
	 * began a request, so requests continued from an earlier segment
	 * are missed: counts go wrong and a write to a hot key may leave
	 * its replicas serving the old value (test_fresh_pipeline.sh) */
	{ "stream-state", KS_OPTV_STREAM_STATE, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_OPTIONS, "on (default) or off" },
	/* test only: off merges the CPUs' sketches without their sample
	 * rates, as if every CPU sampled every key: the control run of
	 * test_sample_auto.sh, whose estimates must then miss */
	{ "rate-scaling", KS_OPTV_RATE_SCALING, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_OPTIONS, "on (default) or off" },
	/* test only: off has each ring placement add 1 to its shard instead
	 * of P (KS_RATE_P_UNIT): the control run of test_place_rate.sh,
	 * whose shard loads must then miss memcached's own counts */
	{ "place-scaling", KS_OPTV_PLACE_SCALING, REQ, "S", KS_CMD_RUN,
	  RUN_TEST, KS_GRP_OPTIONS, "on (default) or off" },
	/* test only: off leaves the sample log unused (the datapath's
	 * in-kernel sketch takes every sampled key, as before the log), to
	 * compare the estimates; drop takes the records from the log and
	 * throws them away: the control of test_sample_log.sh, whose
	 * estimates must then miss */
	{ "log-samples", KS_OPTV_SAMPLE_LOG, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_OPTIONS, "on (default), off or drop" },
	/* test only: on gives drain thread 1 CPU 0's log as well as
	 * thread 0, so that log has two consumers: the control of
	 * test_slog_threads.sh, which must then see it */
	{ "drain-share", KS_OPTV_DRAIN_SHARE, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_OPTIONS, "off (default) or on" },
	{ "log-samples", KS_OPTV_SAMPLE_LOG, REQ, "on|off", KS_CMD_REPLAY, 0,
	  KS_GRP_OPTIONS,
	  "on (default): sampled keys through the sample log, folded\n"
	  "as 'agent run' folds them; off: the in-kernel sketch only" },
	/* test only: off grows a refusal's reply at the frame's tail only,
	 * as before the head path: on veth the replies to short keys'
	 * gets are then lost (the control of test_limit_short.sh) */
	{ "limit-reply-head", KS_OPTV_LIMIT_HEAD, REQ, "S", KS_CMD_RUN,
	  RUN_TEST, KS_GRP_OPTIONS, "on (default) or off" },
	/* test only: verdict takes a key's residual from the hot-key
	 * policy's verdict, as the cap did before it measured: a copied
	 * key whose copies are down is then never capped (the control of
	 * test_limit_auto_down.sh) */
	{ "limit-auto-residual", KS_OPTV_LIMIT_AUTO_RESIDUAL, REQ, "S",
	  KS_CMD_RUN, RUN_TEST, KS_GRP_OPTIONS,
	  "measured (default) or verdict" },
	/* test only: interval N's work (the -v line #N) takes MS ms longer,
	 * once: an agent held up by a loaded machine, for the lease's test
	 * (test_fleet_lease.sh) */
	{ "stall-interval", KS_OPTV_STALL, REQ, "N:MS", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_OPTIONS, "N:MS, once (default: none)" },
	/* test only: the link check and the VLAN sync (they wait on the
	 * rtnl lock) on the interval loop's thread, as before they had one
	 * of their own; and each link check held MS ms, as by a machine
	 * whose rtnl lock is busy (test_steer_housekeep.sh) */
	{ "housekeeping", KS_OPTV_HK, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_OPTIONS, "thread (default) or loop" },
	{ "housekeeping-delay-ms", KS_OPTV_HK_DELAY, REQ, "MS", KS_CMD_RUN,
	  RUN_TEST, KS_GRP_OPTIONS, "MS (0..600000, default 0)" },
	/* test only: keep leaves the agent's worker threads with the
	 * capabilities of the thread that started them (util/thread.h), as
	 * before each dropped its own: the control of
	 * test_privileges_threads.sh */
	{ "thread-caps", KS_OPTV_THREAD_CAPS, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_OPTIONS, "drop (default) or keep" },
	/* not a key: a file names no other file */
	{ "config", KS_OPTV_CONFIG, REQ, "FILE", KS_CMD_RUN, 0, KS_GRP_OPTIONS,
	  "read options from FILE: one 'key = value' per line, the\n"
	  "keys being these long options without the dashes\n"
	  "('sample = 16', 'verbose = yes'), '#' comments; options\n"
	  "after --config override the file, a bad line exits 2\n"
	  "with FILE:LINE (man keysteer-agent, docs/operations.md)" },
	/* ring: the shard lists of lookup and diff */
	{ "shards", 'S', REQ, "LIST", KS_CMD_RING_LOOKUP | KS_CMD_RING_SET, 0,
	  KS_GRP_OPTIONS,
	  "the ring's shards (lookup, set), syntax under SHARDS" },
	{ "shards-file", 'F', REQ, "FILE", KS_CMD_RING_LOOKUP | KS_CMD_RING_SET,
	  0, KS_GRP_OPTIONS, "the same from a FILE (lookup, set)" },
	{ "from", 'F', REQ, "LIST", KS_CMD_RING_DIFF, 0, KS_GRP_OPTIONS,
	  "the shards before the change (diff)" },
	{ "from-file", 'G', REQ, "FILE", KS_CMD_RING_DIFF, 0, KS_GRP_OPTIONS,
	  "the same from a FILE (diff)" },
	{ "to", 'T', REQ, "LIST", KS_CMD_RING_DIFF, 0, KS_GRP_OPTIONS,
	  "the shards after the change (diff)" },
	{ "to-file", 'U', REQ, "FILE", KS_CMD_RING_DIFF, 0, KS_GRP_OPTIONS,
	  "the same from a FILE (diff)" },
	{ "distribution",
	  'D',
	  REQ,
	  "D",
	  KS_CMD_RING_LOOKUP | KS_CMD_RING_DIFF | KS_CMD_RING_SET,
	  0,
	  KS_GRP_OPTIONS,
	  "how the clients place keys (default ketama):\n"
	  "  ketama         libmemcached KETAMA_WEIGHTED (PHP\n"
	  "                 OPT_LIBKETAMA_COMPATIBLE), MD5\n"
	  "  twemproxy      nutcracker ketama, hash fnv1a_64\n"
	  "  twemproxy-md5  nutcracker ketama, hash md5\n"
	  "  vnode          %d virtual nodes 'name#i' per shard\n"
	  "  modula         MD5 hash %% number of shards\n"
	  "  ketama-plain   libmemcached KETAMA unweighted (pylibmc\n"
	  "                 ketama, PHP DISTRIBUTION_CONSISTENT),\n"
	  "                 hash one_at_a_time\n"
	  "  modula-oaat    libmemcached's default modula,\n"
	  "                 one_at_a_time %% number of shards\n"
	  "  dalli          Ruby dalli's ring (SHA-1, crc32a)\n"
	  "  spymemcached   spymemcached KetamaNodeLocator, MD5\n"
	  "  spymemcached-libmemcached  its LIBMEMCACHED format\n"
	  "  twemproxy-modula  nutcracker modula, hash fnv1a_64\n"
	  "  pymemcache, pymemcache-bytes  pymemcache HashClient\n"
	  "or name the client with --client",
	  { KS_VNODES_DEFAULT } },
	{ "client", KS_OPTV_CLIENT, REQ, "NAME",
	  KS_CMD_RING_LOOKUP | KS_CMD_RING_DIFF | KS_CMD_RING_SET, 0,
	  KS_GRP_OPTIONS,
	  "the distribution of a client library as it is set up\n"
	  "(instead of --distribution; docs/ring.md has the table):\n"
	  "  libmemcached, pylibmc, php-memcached  no options\n"
	  "  libmemcached-ketama, pylibmc-ketama,\n"
	  "  php-memcached-consistent              unweighted ketama\n"
	  "  libmemcached-weighted, pylibmc-ketama-weighted,\n"
	  "  php-memcached-libketama               weighted ketama\n"
	  "  dalli, spymemcached, spymemcached-libmemcached,\n"
	  "  twemproxy, twemproxy-md5, pymemcache, pymemcache-bytes" },
	{ "from-distribution", KS_OPTV_FROM_DIST, REQ, "D", KS_CMD_RING_DIFF, 0,
	  KS_GRP_OPTIONS,
	  "the distribution before the change (diff; default:\n"
	  "--distribution)" },
	{ "to-distribution", KS_OPTV_TO_DIST, REQ, "D", KS_CMD_RING_DIFF, 0,
	  KS_GRP_OPTIONS, "the distribution after the change (diff)" },
	{ "from-client", KS_OPTV_FROM_CLIENT, REQ, "NAME", KS_CMD_RING_DIFF, 0,
	  KS_GRP_OPTIONS, "the client preset before the change (diff)" },
	{ "to-client", KS_OPTV_TO_CLIENT, REQ, "NAME", KS_CMD_RING_DIFF, 0,
	  KS_GRP_OPTIONS, "the client preset after the change (diff)" },
	{ "shards", 'S', REQ, "LIST", KS_CMD_RING_DIFF, 0, KS_GRP_OPTIONS,
	  "one shard list for both sides (diff, with a change of\n"
	  "distribution or client)" },
	{ "shards-file", KS_OPTV_SHARDS_FILE2, REQ, "FILE", KS_CMD_RING_DIFF, 0,
	  KS_GRP_OPTIONS, "the same from a FILE (diff)" },
	{ "keys-file", KS_OPTV_KEYS_FILE, REQ, "FILE", KS_CMD_RING_DIFF, 0,
	  KS_GRP_OPTIONS,
	  "the keys to place, one a line ('-': stdin), instead of\n"
	  "key:0 .. key:N-1 (diff)" },
	{ "vnodes",
	  'N',
	  REQ,
	  "N",
	  KS_CMD_RING_LOOKUP | KS_CMD_RING_DIFF | KS_CMD_RING_SET,
	  0,
	  KS_GRP_OPTIONS,
	  "virtual nodes per shard for vnode (at most %d in all)",
	  { KS_RING_MAX_POINTS } },
	{ "key-hash", KS_OPTV_KEY_HASH, REQ, "H",
	  KS_CMD_RING_LOOKUP | KS_CMD_RING_DIFF | KS_CMD_RING_SET, 0,
	  KS_GRP_OPTIONS,
	  "the key hash instead of the distribution's (twemproxy's\n"
	  "hash:): md5, one_at_a_time, crc16, crc32, crc32a,\n"
	  "fnv1_64, fnv1a_64, fnv1_32, fnv1a_32, hsieh, murmur,\n"
	  "jenkins (docs/ring.md)" },
	{ "hash-tag", KS_OPTV_HASH_TAG, REQ, "XY",
	  KS_CMD_RING_LOOKUP | KS_CMD_RING_DIFF | KS_CMD_RING_SET, 0,
	  KS_GRP_OPTIONS,
	  "twemproxy's hash_tag: hash only what is between X and\n"
	  "Y (e.g. {})" },
	{ "if-revision", KS_OPTV_IF_REVISION, REQ, "R",
	  KS_CMD_RING_SET | KS_CMD_PINS_SET, 0, KS_GRP_OPTIONS,
	  "write only if the document's etcd revision is still R\n"
	  "(the one 'get' printed; 0: only if there is none);\n"
	  "default: the revision set reads first" },
	{ "force", KS_OPTV_FORCE, NO, NULL, KS_CMD_RING_SET, 0, KS_GRP_OPTIONS,
	  "write a change that moves more than twice the ideal\n"
	  "share of keys plus 1%% (a switch of distribution, a\n"
	  "wrong shard list), and mark the document \"force\": true\n"
	  "(docs/operations.md)" },
	/* a ring of explicit points (issue 26, docs/placement.md) */
	{ "plan", KS_OPTV_PLAN, REQ, "FILE",
	  KS_CMD_RING_LOOKUP | KS_CMD_RING_SET, 0, KS_GRP_OPTIONS,
	  "the ring of a ring document FILE ('ring plan --out',\n"
	  "or 'ring get'), explicit points and all, instead of a\n"
	  "shard list (lookup, set)" },
	{ "from-plan", KS_OPTV_FROM_PLAN, REQ, "FILE", KS_CMD_RING_DIFF, 0,
	  KS_GRP_OPTIONS, "the old ring from a ring document FILE (diff)" },
	{ "to-plan", KS_OPTV_TO_PLAN, REQ, "FILE", KS_CMD_RING_DIFF, 0,
	  KS_GRP_OPTIONS, "the new ring from a ring document FILE (diff)" },
	{ "clients", KS_OPTV_CLIENTS, REQ, "WHO", KS_CMD_RING_SET, 0,
	  KS_GRP_OPTIONS,
	  "keysteer: every client of the fleet reads the ring\n"
	  "from etcd (libkeysteer), the condition of 'ring plan';\n"
	  "any (default): some build it from a server list" },
	{ "window", KS_OPTV_WINDOW, REQ, "SEC", KS_CMD_RING_PLAN, 0,
	  KS_GRP_OPTIONS,
	  "plan: average the load documents over SEC seconds,\n"
	  "one read a second (1..3600; default 10)" },
	{ "target", KS_OPTV_TARGET, REQ, "F", KS_CMD_RING_PLAN, 0,
	  KS_GRP_OPTIONS,
	  "plan: the busiest shard / mean to reach (1.001..2;\n"
	  "default 1.03)" },
	{ "out", KS_OPTV_OUT, REQ, "FILE", KS_CMD_RING_PLAN, 0, KS_GRP_OPTIONS,
	  "plan: write the planned ring document to FILE, for\n"
	  "'ring set --plan FILE'" },
	{ "ring-file", KS_OPTV_RING_FILE, REQ, "FILE", KS_CMD_RING_PLAN, 0,
	  KS_GRP_OPTIONS,
	  "plan: the ring now from a ring document FILE, not etcd" },
	{ "load-file", KS_OPTV_LOAD_FILE, REQ, "FILE", KS_CMD_RING_PLAN, 0,
	  KS_GRP_OPTIONS,
	  "plan: the load documents from FILE (a JSON array), not\n"
	  "etcd" },
	{ "max-points", KS_OPTV_MAX_POINTS, REQ, "N", KS_CMD_RING_PLAN, 0,
	  KS_GRP_OPTIONS,
	  "plan: at most N points in the planned ring (default\n"
	  "the ring's points + 512)" },
	{ "json", 'j', NO, NULL, KS_CMD_RING_GET | KS_CMD_PINS_GET, 0,
	  KS_GRP_OPTIONS,
	  "the key, revisions and document as one JSON object\n"
	  "(get)" },
	{ "json", 'j', NO, NULL, KS_CMD_FLEET, 0, KS_GRP_OPTIONS,
	  "the fleet as one versioned JSON document (with --watch:\n"
	  "one compact document a line, each refresh)" },
	{ "watch", 'w', NO, NULL, KS_CMD_FLEET, 0, KS_GRP_OPTIONS,
	  "watch /keysteer/NAME/ from the read on and redraw in\n"
	  "place on each change (at most 4 times a second, at\n"
	  "least once a second) until Ctrl-C; etcd away shows in\n"
	  "the last line and the watch reconnects by itself" },
	{ "top",
	  't',
	  REQ,
	  "K",
	  KS_CMD_FLEET,
	  0,
	  KS_GRP_OPTIONS,
	  "the fleet's K busiest keys, merged across hosts,\n"
	  "0..%d (default %d; 0 hides them)",
	  { KS_FLEET_TOP_MAX, KS_FLEET_TOP_DEFAULT } },
	{ "hash-only", 'H', NO, NULL, KS_CMD_FLEET, 0, KS_GRP_OPTIONS,
	  "key hashes instead of the key text agents publish" },
	{ "self", 'M', REQ, "HOST:PORT", KS_CMD_RING_LOOKUP, 0, KS_GRP_OPTIONS,
	  "the shard this host serves (lookup; checked only)" },
	{ "pins", 'P', REQ, "FILE", KS_CMD_RING_LOOKUP, 0, KS_GRP_OPTIONS,
	  "a pin file: its shard rules place keys on their dedicated\n"
	  "shards, named in a fourth column with the ring's own owner\n"
	  "(lookup; a rule naming a shard not in the ring exits 2)" },
	{ "keys",
	  'k',
	  REQ,
	  "N",
	  KS_CMD_RING_DIFF,
	  0,
	  KS_GRP_OPTIONS,
	  "sample keys for diff, 1..%d (default %d)",
	  { KS_DIFF_KEYS_MAX, KS_DIFF_KEYS_DEFAULT } },

	/* ---- RING: the clients' ring of run and replay ---- */
	{ "shards", 'S', REQ, "LIST", KS_CMD_RUN | KS_CMD_REPLAY, RUN_CONF,
	  KS_GRP_RING,
	  "host:port[:weight],... the shards of the clients' ring" },
	{ "shards-file", 'F', REQ, "FILE", KS_CMD_RUN | KS_CMD_REPLAY, RUN_CONF,
	  KS_GRP_RING, "the same, one 'host:port[:weight] [name]' per line" },
	{ "self", 'M', REQ, "HOST:PORT", KS_CMD_RUN | KS_CMD_REPLAY, RUN_CONF,
	  KS_GRP_RING,
	  "the shard this host serves (one of the list): keys the\n"
	  "ring gives to another shard count as misdirected" },
	{ "distribution", 'D', REQ, "D", KS_CMD_RUN | KS_CMD_REPLAY, RUN_CONF,
	  KS_GRP_RING,
	  "ketama (default), twemproxy, twemproxy-md5, vnode, modula, ketama-plain, modula-oaat, dalli, spymemcached, spymemcached-libmemcached, twemproxy-modula, pymemcache (at most 32 shards here; keys with a byte >= 0x80 count as ring_unplaced), pymemcache-bytes (ring lookup and diff only)" },
	{ "client", KS_OPTV_CLIENT, REQ, "NAME", KS_CMD_RUN | KS_CMD_REPLAY,
	  RUN_CONF, KS_GRP_RING,
	  "the distribution of a client library by name, instead of\n"
	  "--distribution (see 'agent ring --help', docs/ring.md)" },
	{ "vnodes",
	  'N',
	  REQ,
	  "N",
	  KS_CMD_RUN | KS_CMD_REPLAY,
	  RUN_CONF,
	  KS_GRP_RING,
	  "virtual nodes per shard for vnode (default %d)",
	  { KS_VNODES_DEFAULT } },
	{ "key-hash", KS_OPTV_KEY_HASH, REQ, "H", KS_CMD_RUN | KS_CMD_REPLAY,
	  RUN_CONF, KS_GRP_RING,
	  "the key hash instead of the distribution's: md5,\n"
	  "one_at_a_time, crc16, crc32, crc32a, fnv1_64, fnv1a_64,\n"
	  "fnv1_32, fnv1a_32, hsieh, murmur, jenkins" },
	{ "hash-tag", KS_OPTV_HASH_TAG, REQ, "XY", KS_CMD_RUN | KS_CMD_REPLAY,
	  RUN_CONF, KS_GRP_RING,
	  "twemproxy's hash_tag: hash only what is between X and Y" },
	{ "purge-rate",
	  KS_OPTV_PURGE_RATE,
	  REQ,
	  "N",
	  KS_CMD_RUN,
	  RUN_CONF,
	  KS_GRP_RING,
	  "with --self: when a new ring places keys of this shard\n"
	  "elsewhere, delete them from its memcached at N items/s\n"
	  "at most (default %d; 0: never; docs/fleet.md)",
	  { KS_PURGE_RATE_DEFAULT } },
	{ "purge-grace",
	  KS_OPTV_PURGE_GRACE,
	  REQ,
	  "S",
	  KS_CMD_RUN,
	  RUN_CONF,
	  KS_GRP_RING,
	  "repeat that purge for S seconds after the change, for\n"
	  "clients still on the old ring (default %d)",
	  { KS_PURGE_GRACE_DEFAULT } },
	{ "purge-sweep-rate",
	  KS_OPTV_PURGE_SWEEP,
	  REQ,
	  "N",
	  KS_CMD_RUN,
	  RUN_CONF,
	  KS_GRP_RING,
	  "at all times, sweep for items the ring places elsewhere\n"
	  "and delete them at N items/s at most (default %d; 0: off)",
	  { KS_PURGE_SWEEP_RATE_DEFAULT } },
	/* test-only: off keeps what a new ring places elsewhere (the
	 * purge's e2e control) */
	{ "ring-purge", KS_OPTV_RING_PURGE, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_RING, "on (default) or off" },

	/* ---- HOT KEYS (run) ---- */
	{ "shard-capacity", 'C', REQ, "OPS", KS_CMD_RUN, RUN_CONF, KS_GRP_HOT,
	  "one shard's capacity in ops/s (default 100000)" },
	{ "hot-fraction", 'H', REQ, "F", KS_CMD_RUN, RUN_CONF, KS_GRP_HOT,
	  "a key is hot at F x capacity ops/s, 0.0001..1 (default 0.1)" },
	{ "shard-capacity", 'C', REQ, "OPS", KS_CMD_REPLAY, 0, KS_GRP_HOT,
	  "as for 'agent run' (default 100000)" },
	{ "hot-fraction", KS_OPTV_HOT_FRACTION, REQ, "F", KS_CMD_REPLAY, 0,
	  KS_GRP_HOT, "as for 'agent run' (default 0.1)" },
	{ "limit-auto", KS_OPTV_LIMIT_AUTO, REQ, "F", KS_CMD_RUN, RUN_CONF,
	  KS_GRP_HOT,
	  "the automatic cap (default off): a key this shard\n"
	  "serves over F x --shard-capacity reads+writes/s of\n"
	  "(measured: what its copies took left out) for 3\n"
	  "intervals, counted from the hot-key policy's verdict\n"
	  "where it copies or splits the key, is rate-limited at\n"
	  "that rate as a `limit` rule would, until it has been\n"
	  "under 0.7 of it for 5 intervals; rules win. 0 < F <= 1,\n"
	  "needs --shard-capacity (docs/limits.md)" },
	{ "replicas",
	  'R',
	  REQ,
	  "LIST",
	  KS_CMD_RUN,
	  RUN_CONF,
	  KS_GRP_HOT,
	  "L1 replicas, HOST:PORT,... (IPv4, up to %d): a read-hot\n"
	  "key gets up to min(N + 1, 8) copies, the owner's\n"
	  "included, chosen per key by rendezvous hashing; the\n"
	  "agent copies value, flags and TTL from --self (which\n"
	  "it needs) with a TTL of a few intervals, and XDP sends\n"
	  "each lone UDP get of the key to one copy in turn.\n"
	  "Needs IPv4 forwarding on IF (the kernel's next-hop\n"
	  "lookup): sysctl -w net.ipv4.conf.IF.forwarding=1.\n"
	  "A write to the key sends its reads to the owner until\n"
	  "the copies hold the new value; a dead agent's steering\n"
	  "stops within 3 intervals",
	  { KS_MAX_REPLICAS } },
	{ "owner-share", 'W', REQ, "F", KS_CMD_RUN, RUN_CONF, KS_GRP_HOT,
	  "the owner's part of an armed key's reads, 0..1 (default\n"
	  "0: all to the replicas, which carry nothing else; the\n"
	  "owner still serves them while the key is dirty). With\n"
	  "libkeysteer clients give 0.015625 or more: the agent\n"
	  "counts the owner's TCP share of an armed key's reads for\n"
	  "all of them (docs/steering.md)" },
	{ "owner-replies", KS_OPTV_OWNER_REPLIES, REQ, "S", KS_CMD_RUN,
	  RUN_CONF, KS_GRP_HOT,
	  "on (default) or off: count the owner's hits and misses\n"
	  "of each hot key in its replies, with a tc program at\n"
	  "tcx egress of IF (kernel 6.6+; without tcx: off, said\n"
	  "at start). Exact for UDP gets and for TCP reads not\n"
	  "pipelined (docs/steering.md, \"Misses at the owner\")" },
	{ "balance", KS_OPTV_BALANCE, REQ, "F", KS_CMD_RUN, RUN_CONF,
	  KS_GRP_HOT,
	  "keep this shard within (1 + F) times the fleet's mean\n"
	  "shard (0.01..10; default 0: off). Needs --etcd: every\n"
	  "agent's load document gives the reads its shard served.\n"
	  "Over it, the agent lowers its read threshold (to 1/8 of\n"
	  "the policy's at most) until the keys above it cover the\n"
	  "excess; below (1 + F/2) times the mean it raises it back\n"
	  "step by step. For the keys under the hot threshold that\n"
	  "still pile up on one shard (docs/steering.md, \"Balance\")" },
	/* test-only: off stores copies unconditionally, so a fill that
	 * read the owner before a write may land after the write's
	 * invalidation; a fill delay widens that race (the control runs
	 * of the client freshness tests) */
	{ "copy-protocol", KS_OPTV_COPY_PROTOCOL, REQ, "S", KS_CMD_RUN,
	  RUN_TEST, KS_GRP_HOT, "on (default) or off" },
	{ "fill-delay-ms", KS_OPTV_FILL_DELAY, REQ, "MS", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_HOT,
	  "wait MS (0..1000) between a fill's read of the owner\n"
	  "and its stores (default 0)" },
	{ "pins", 'P', REQ, "FILE", KS_CMD_RUN | KS_CMD_PINS_SET, RUN_CONF,
	  KS_GRP_HOT,
	  "pin file: 'pin KEY COPIES', 'pin-prefix PREFIX COPIES',\n"
	  "'split-prefix PREFIX K', 'shard KEY|PREFIX* SHARD'\n"
	  "(a dedicated shard: host:port or a shard's name, which\n"
	  "the ring in force must have), '#' comments. Checked before\n"
	  "attaching (a bad line exits 2 with FILE:LINE); reloaded\n"
	  "on SIGHUP or a change, a bad new file keeps the old pins" },
	{ "routing-file", 'O', REQ, "PATH", KS_CMD_RUN, RUN_CONF, KS_GRP_HOT,
	  "the hot-key table as JSON with the ring version, written\n"
	  "atomically (PATH.tmp, rename; mode 0640) at start and\n"
	  "whenever the table changes" },
	{ "listen", 'L', REQ, "ADDR:PORT", KS_CMD_RUN, RUN_CONF, KS_GRP_HOT,
	  "serve the same document over HTTP (GET /routing); a\n"
	  "bare PORT binds 127.0.0.1; unix:PATH serves it on a\n"
	  "Unix socket only root (0600) or --group (0660) may use" },

	/* ---- METRICS (run) ---- */
	{ "metrics", 'm', REQ, "ADDR:PORT", KS_CMD_RUN, RUN_CONF,
	  KS_GRP_METRICS,
	  "serve Prometheus metrics (GET /metrics, text format\n"
	  "0.0.4), rendered once per interval; a bare PORT binds\n"
	  "127.0.0.1. The --listen address may be given too: one\n"
	  "server then answers /routing and /metrics" },
	{ "export-keys", 'K', NO, NULL, KS_CMD_RUN, RUN_CONF, KS_GRP_METRICS,
	  "label the top and hot keys with the keys themselves\n"
	  "(default: their 64-bit hashes only, keys are user data)" },

	/* ---- ETCD: the fleet's ring (run, ring get/set; docs/fleet.md) ---- */
	{ "etcd",
	  KS_OPTV_ETCD,
	  REQ,
	  "URL,...",
	  KS_CMD_ETCD,
	  RUN_CONF,
	  KS_GRP_ETCD,
	  "etcd endpoints, http[s]://HOST[:PORT],... (up to %d,\n"
	  "port 2379 by default), tried in turn. run: the ring\n"
	  "comes from /keysteer/CLUSTER/ring and follows it, and\n"
	  "the agent publishes /keysteer/CLUSTER/members/SELF",
	  { KS_ETCD_MAX_ENDPOINTS } },
	{ "cluster", KS_OPTV_CLUSTER, REQ, "NAME", KS_CMD_ETCD, RUN_CONF,
	  KS_GRP_ETCD,
	  "the fleet's name, its keys under /keysteer/NAME/\n"
	  "(default " KS_CLUSTER_DEFAULT "; letters, digits, '.', '-', '_')" },
	{ "etcd-ca", KS_OPTV_ETCD_CA, REQ, "FILE", KS_CMD_ETCD, RUN_CONF,
	  KS_GRP_ETCD,
	  "https: the CA of etcd's certificates (default: the\n"
	  "system's)" },
	{ "etcd-cert", KS_OPTV_ETCD_CERT, REQ, "FILE", KS_CMD_ETCD, RUN_CONF,
	  KS_GRP_ETCD, "https: a client certificate, with --etcd-key" },
	{ "etcd-key", KS_OPTV_ETCD_KEY, REQ, "FILE", KS_CMD_ETCD, RUN_CONF,
	  KS_GRP_ETCD, "https: the client certificate's key" },
	{ "etcd-user", KS_OPTV_ETCD_USER, REQ, "USER", KS_CMD_ETCD, RUN_CONF,
	  KS_GRP_ETCD,
	  "etcd user; the password from the environment variable\n" KS_ETCD_PASSWORD_ENV
	  " or --etcd-password-file,\n"
	  "never the command line" },
	{ "etcd-password-file", KS_OPTV_ETCD_PWFILE, REQ, "FILE", KS_CMD_ETCD,
	  RUN_CONF, KS_GRP_ETCD,
	  "the password of --etcd-user: the file's first line" },
	{ "etcd-timeout",
	  KS_OPTV_ETCD_TIMEOUT,
	  REQ,
	  "MS",
	  KS_CMD_ETCD,
	  RUN_CONF,
	  KS_GRP_ETCD,
	  "how long one call to etcd may take, in ms (1..60000;\n"
	  "default %d): more for a distant or busy etcd",
	  { KS_ETCD_TIMEOUT_MS } },
	{ "etcd-optional", KS_OPTV_ETCD_OPTIONAL, NO, NULL, KS_CMD_RUN,
	  RUN_CONF, KS_GRP_ETCD,
	  "if etcd cannot be reached or refuses the credentials at\n"
	  "start, warn and run as without --etcd (default: exit 2\n"
	  "before attaching); bad URLs are refused either way" },
	{ "etcd-hash-only", KS_OPTV_HASH_ONLY, NO, NULL, KS_CMD_RUN, RUN_CONF,
	  KS_GRP_ETCD,
	  "publish hot keys as hashes only, without their bytes\n"
	  "(default: hot/ entries carry the key, which clients\n"
	  "need to act on it; hosts/ top keys are hashes unless\n"
	  "--export-keys)" },
	{ "fleet-compat", KS_OPTV_FLEET_COMPAT, REQ, "MODE", KS_CMD_RUN,
	  RUN_CONF, KS_GRP_ETCD,
	  "what to write at hosts/SELF for readers before schema 2\n"
	  "(a rolling upgrade): members (default) rewrites it when\n"
	  "anything but a rate changes, full also when a rate moves\n"
	  "(for --balance agents before schema 2), off writes none\n"
	  "(every reader upgraded)" },
	{ "load-every", KS_OPTV_LOAD_EVERY, REQ, "N", KS_CMD_RUN, RUN_CONF,
	  KS_GRP_ETCD,
	  "write the load document (rates, top keys) at most every N\n"
	  "intervals (1..60; default 1); a ring revision or purge\n"
	  "state change goes at once" },
	/* test-only: 1 publishes as an agent before schema 2 did (hosts/
	 * only, rates and all), for a mixed fleet in a test */
	{ "fleet-schema", KS_OPTV_FLEET_SCHEMA, REQ, "N", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_ETCD, "2 (default) or 1" },
	/* test-only: off leaves a hot key's hot/ entry as it was between
	 * intervals, so a write shows as dirty only at the next one */
	{ "etcd-hot-events", KS_OPTV_HOT_EVENTS, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_ETCD, "on (default) or off" },

	/* test-only: loop renews the lease at most once per interval, from
	 * the interval loop's end, so work that holds the loop up lets the
	 * lease expire (the control of test_fleet_lease.sh) */
	{ "etcd-keepalive", KS_OPTV_KEEPALIVE, REQ, "S", KS_CMD_RUN, RUN_TEST,
	  KS_GRP_ETCD, "thread (default) or loop" },
	/* test-only: on makes the interval loop wait for one etcd call an
	 * interval, its whole deadline while etcd is away (the control of
	 * test_fleet_faults.sh's outage check) */
	{ "etcd-loop-call", KS_OPTV_ETCD_LOOP_CALL, REQ, "S", KS_CMD_RUN,
	  RUN_TEST, KS_GRP_ETCD, "off (default) or on" },

	/* ---- follow: the host follower (docs/client.md) ---- */
	{ "view-file", KS_OPTV_VIEW_FILE, REQ, "PATH", KS_CMD_FOLLOW, 0,
	  KS_GRP_OPTIONS,
	  "the view file the host's libkeysteer handles map\n"
	  "(default " KS_VIEW_FILE_DIR "/CLUSTER.view, which handles\n"
	  "with etcd= look for)" },
	/* test-only: documents under these (hot/,hosts/) left out of the
	 * file, a follower that skips events (the freshness control) */
	{ "view-drop", KS_OPTV_VIEW_DROP, REQ, "P,...", KS_CMD_FOLLOW,
	  KS_OPT_TEST | KS_OPT_HIDE, KS_GRP_OPTIONS, "test-only" },

	/* every command; the man page has it under 'help, --version' */
	{ "help", 'h', NO, NULL,
	  KS_CMD_RUN | V_OTHERS | KS_CMD_RING | KS_CMD_FLEET | KS_CMD_PINS |
		  KS_CMD_FOLLOW,
	  KS_OPT_SHORT | KS_OPT_HIDE, KS_GRP_OPTIONS, "this text" },
};

const unsigned int ks_cli_nopts = sizeof(ks_cli_opts) / sizeof(ks_cli_opts[0]);

void ks_cli_getopt_init(struct ks_cli_getopt *g, unsigned int cmd)
{
	size_t ns = 1;
	unsigned int i;

	memset(g, 0, sizeof(*g));
	g->shorts[0] = ':'; /* a missing value is ':', not '?' */
	for (i = 0; i < ks_cli_nopts; i++) {
		const struct ks_cli_opt *o = &ks_cli_opts[i];

		if (!(o->cmds & cmd) || g->n >= KS_CLI_MAX_OPTS)
			continue;
		g->lo[g->n++] = (struct option){ o->name, o->has_arg, NULL,
						 o->val };
		if ((o->flags & KS_OPT_SHORT) && ns + 2 < sizeof(g->shorts)) {
			g->shorts[ns++] = (char)o->val;
			if (o->has_arg == required_argument)
				g->shorts[ns++] = ':';
		}
	}
}

const struct ks_cli_opt *ks_cli_find(unsigned int cmd, const char *name)
{
	unsigned int i;

	for (i = 0; i < ks_cli_nopts; i++) {
		if ((ks_cli_opts[i].cmds & cmd) &&
		    !strcmp(ks_cli_opts[i].name, name))
			return &ks_cli_opts[i];
	}
	return NULL;
}

const struct ks_cli_opt *ks_cli_by_val(unsigned int cmd, int val)
{
	unsigned int i;

	for (i = 0; i < ks_cli_nopts; i++) {
		if ((ks_cli_opts[i].cmds & cmd) && ks_cli_opts[i].val == val)
			return &ks_cli_opts[i];
	}
	return NULL;
}

const struct ks_cli_opt *ks_cli_prefix(unsigned int cmd, const char *prefix,
				       const char *except)
{
	const struct ks_cli_opt *found = NULL;
	size_t len = strlen(prefix);
	unsigned int i;

	for (i = 0; i < ks_cli_nopts; i++) {
		const struct ks_cli_opt *o = &ks_cli_opts[i];

		if (!(o->cmds & cmd) || (except && !strcmp(o->name, except)) ||
		    strncmp(o->name, prefix, len))
			continue;
		if (found)
			return NULL; /* ambiguous, as getopt_long finds it */
		found = o;
	}
	return found;
}

void ks_cli_synopsis(const struct ks_cli_opt *o, char *buf, size_t len)
{
	const char *sp = o->metavar ? " " : "",
		   *mv = o->metavar ? o->metavar : "";

	if (o->flags & KS_OPT_SHORT)
		snprintf(buf, len, "-%c, --%s%s%s", o->val, o->name, sp, mv);
	else
		snprintf(buf, len, "--%s%s%s", o->name, sp, mv);
}

/* The help text column: two spaces, the synopsis, padded to 22. */
#define HELP_COL 22

void ks_cli_help(FILE *f, unsigned int cmd, enum ks_opt_group group)
{
	char syn[64], text[1024];
	unsigned int i;

	for (i = 0; i < ks_cli_nopts; i++) {
		const struct ks_cli_opt *o = &ks_cli_opts[i];
		const char *p, *nl;
		int pad;

		if (!(o->cmds & cmd) || o->group != group ||
		    (o->flags & KS_OPT_HIDE))
			continue;
		ks_cli_synopsis(o, syn, sizeof(syn));
		snprintf(text, sizeof(text), o->help, o->arg[0], o->arg[1]);
		pad = HELP_COL - 2 - (int)strlen(syn);
		fprintf(f, "  %s%*s", syn, pad > 0 ? pad : 2, "");
		for (p = text; p; p = nl ? nl + 1 : NULL) {
			nl = strchr(p, '\n');
			if (p != text)
				fprintf(f, "%*s", HELP_COL, "");
			fprintf(f, "%.*s\n",
				nl ? (int)(nl - p) : (int)strlen(p), p);
		}
	}
}
