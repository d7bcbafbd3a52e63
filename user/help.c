// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <getopt.h>
#include <string.h>
#include "keysteer.h"
#include "cmds.h"
#include "config_file.h"
#include "ks_ring.h"
#include "shards.h"
#include "hotkeys.h"
#include "report.h"

void ks_help_main(FILE *f)
{
	fprintf(f,
"keysteer %s - finds the hot keys of memcached from an XDP (or tc) program\n"
"\n"
"USAGE\n"
"  agent run    --iface IF [--sample N] [--interval SEC] [--ports P,...]\n"
"               [--attach xdp|tc] [--xdp-mode native|generic|auto] [--top K]\n"
"               [-v] [--config FILE]\n"
"               [--shards LIST | --shards-file FILE [--self HOST:PORT]\n"
"                [--distribution D] [--vnodes N]]\n"
"               [--replicas LIST] [--listen PORT] [--metrics PORT] ...\n"
"  agent report [--iface IF] [--top K] [--json] [--watch] [--hash-only]\n"
"               [--shards-top N] [--interval SEC]  (also: agent --report ...)\n"
"  agent trace  [--iface IF] [--count N] [--duration SEC] [--hash-only]\n"
"  agent detach --iface IF\n"
"  agent ring   lookup|diff ...   (where keys live on the clients' ring)\n"
"  agent replay [--sample N] [--json] [ring options] FILE.pcap|.pcapng\n"
"  agent help [COMMAND] | agent COMMAND --help | agent --version\n"
"\n"
"EXAMPLES\n"
"  sudo agent run --iface eth1 --sample 16 --interval 0.5\n"
"  sudo agent run --config /etc/keysteer/eth1.conf --iface eth1\n"
"  sudo agent --report --iface eth1 --top 10\n"
"  sudo agent report --json --hash-only\n"
"  sudo agent trace --iface eth1 --count 20\n"
"  sudo agent detach --iface eth1\n"
"  agent ring lookup --shards 10.0.0.1:11211,10.0.0.2:11211 user:42\n",
		KS_VERSION_STR);
}

void ks_help_run(FILE *f)
{
	fprintf(f,
"USAGE\n"
"  agent run --iface IF [options]\n"
"\n"
"Attaches keysteer's XDP program to IF (its tc program with --attach tc),\n"
"pins its maps in %s/IF and every\n"
"interval estimates the reads/s and writes/s of the hottest keys for\n"
"'agent report'. Runs until SIGINT or SIGTERM, then detaches and removes\n"
"everything it made. If an agent died without detaching (SIGKILL, a crash),\n"
"its program keeps counting and passing traffic, and a new 'agent run' on\n"
"IF with the same --attach takes it over: the same pinned maps (counters,\n"
"sketch, ring, hot keys), its program swapped for this agent's with one\n"
"bpf_link_update (a tc filter: replaced in place). While an agent runs on\n"
"IF, another is refused.\n"
"\n"
"OPTIONS\n"
"  --iface IF          interface to watch (ingress), required\n"
"  --sample N          sample 1 in N keys, 1..1000000 (default 8)\n"
"  --interval SEC      seconds per interval, 0.1..3600, decimals allowed (default 1)\n"
"  --ports P,...       memcached ports, 1 to %d of them (default 11211)\n"
"  --attach HOOK       xdp (default) or tc: the tc program at clsact ingress,\n"
"                      which sees what the stack receives after GRO (up to\n"
"                      64 KiB aggregates; XDP sees wire packets) and counts\n"
"                      only (no steering). A tcx link where the kernel has\n"
"                      tcx (6.6+), else a cls_bpf filter at pref 65520 on the\n"
"                      clsact qdisc, which it adds if missing and then removes\n"
"  --xdp-mode MODE     native, generic or auto (default auto: native, else\n"
"                      generic); with --attach xdp only\n"
"  --top K             keys published per interval, 1..%d (default %d)\n"
"  -v, --verbose       a status line per interval and libbpf's debug output\n"
"  --log-keys          show key bytes in those lines (default: hashes; keys\n"
"                      may be user data)\n"
"  --group NAME        let group NAME read the pins (folders 0750, maps 0640)\n"
"                      and the routing file (0640); default root only\n"
"  --keep-privileges   keep every capability after attaching (default: only\n"
"                      CAP_BPF and CAP_NET_ADMIN stay, with no_new_privs)\n"
"  --stream-state S    on (default) or off. A test control, never in\n"
"                      production: off parses every TCP segment on its own,\n"
"                      as if it began a request, so requests continued from\n"
"                      an earlier segment are missed: counts go wrong and a\n"
"                      write to a hot key may leave its replicas serving the\n"
"                      old value (the control run of the freshness tests)\n"
"  --config FILE       read options from FILE: one 'key = value' per line, the\n"
"                      keys being these long options without the dashes\n"
"                      ('sample = 16', 'verbose = yes'), '#' comments; options\n"
"                      after --config override the file, a bad line exits 2\n"
"                      with FILE:LINE (man keysteer-agent, docs/operations.md)\n"
"\n"
"RING (per-shard load; see 'agent ring --help' for the list syntax)\n"
"  --shards LIST       host:port[:weight],... the shards of the clients' ring\n"
"  --shards-file FILE  the same, one 'host:port[:weight] [name]' per line\n"
"  --self HOST:PORT    the shard this host serves (one of the list): keys the\n"
"                      ring gives to another shard count as misdirected\n"
"  --distribution D    ketama (default), twemproxy, twemproxy-md5, vnode, modula\n"
"  --vnodes N          virtual nodes per shard for vnode (default %d)\n"
"  The ring is built before anything is attached; a bad list is refused\n"
"  with its line. SIGHUP, or a change of FILE (checked twice a second),\n"
"  rebuilds it; the new ring is swapped in whole, with a higher version, or\n"
"  if the new list is bad the error is logged and the old ring stays.\n"
"\n"
"HOT KEYS\n"
"  --shard-capacity OPS  one shard's capacity in ops/s (default 100000)\n"
"  --hot-fraction F    a key is hot at F x capacity ops/s, 0.0001..1 (default 0.1)\n"
"  --replicas LIST     L1 replicas, HOST:PORT,... (IPv4, up to %d): a read-hot\n"
"                      key gets up to min(N + 1, 8) copies, the owner's\n"
"                      included, chosen per key by rendezvous hashing; the\n"
"                      agent copies value, flags and TTL from --self (which\n"
"                      it needs) with a TTL of a few intervals, and XDP sends\n"
"                      each lone UDP get of the key to one copy in turn.\n"
"                      Needs IPv4 forwarding on IF (the kernel's next-hop\n"
"                      lookup): sysctl -w net.ipv4.conf.IF.forwarding=1.\n"
"                      A write to the key sends its reads to the owner until\n"
"                      the copies hold the new value; a dead agent's steering\n"
"                      stops within 3 intervals\n"
"  --owner-share F     the owner's part of an armed key's reads, 0..1 (default\n"
"                      0: all to the replicas, which carry nothing else; the\n"
"                      owner still serves them while the key is dirty)\n"
"  --pins FILE         pin file: 'pin KEY COPIES', 'pin-prefix PREFIX COPIES',\n"
"                      'split-prefix PREFIX K', '#' comments. Checked before\n"
"                      attaching (a bad line exits 2 with FILE:LINE); reloaded\n"
"                      on SIGHUP or a change, a bad new file keeps the old pins\n"
"  --routing-file PATH the hot-key table as JSON with the ring version, written\n"
"                      atomically (PATH.tmp, rename; mode 0640) at start and\n"
"                      whenever the table changes\n"
"  --listen ADDR:PORT  serve the same document over HTTP (GET /routing); a\n"
"                      bare PORT binds 127.0.0.1; unix:PATH serves it on a\n"
"                      Unix socket only root (0600) or --group (0660) may use\n"
"\n"
"METRICS (see docs/metrics.md)\n"
"  --metrics ADDR:PORT serve Prometheus metrics (GET /metrics, text format\n"
"                      0.0.4), rendered once per interval; a bare PORT binds\n"
"                      127.0.0.1. The --listen address may be given too: one\n"
"                      server then answers /routing and /metrics\n"
"  --export-keys       label the top and hot keys with the keys themselves\n"
"                      (default: their 64-bit hashes only, keys are user data)\n"
"\n"
"NAMESPACES\n"
"  The pins live on the bpffs at %s. 'ip netns exec' gives every command a\n"
"  fresh /sys without one, so an agent started that way mounts a private\n"
"  bpffs that 'agent report' in another 'ip netns exec' cannot see. Enter\n"
"  only the network namespace instead, and report from anywhere:\n"
"    sudo nsenter --net=/run/netns/NS agent run --iface IF\n"
"    sudo agent report --iface IF\n"
"  (or report from the agent's mount namespace: nsenter -t PID -m agent report)\n"
"\n"
"EXAMPLES\n"
"  sudo agent run --iface eth1\n"
"  sudo agent run --iface eth1 --sample 1 --interval 0.5 --ports 11211,11212\n"
"  sudo agent run --iface veth0 --xdp-mode generic -v\n"
"  sudo agent run --iface eth1 --attach tc     # after GRO, no steering\n"
"  sudo agent run --iface eth1 --metrics 9180   # curl localhost:9180/metrics\n"
"  sudo agent run --config /etc/keysteer/eth1.conf --iface eth1 --sample 1\n"
"  sudo agent run --iface eth1 --shards-file /etc/keysteer/shards.txt \\\n"
"                 --self 10.0.0.2:11211 --distribution ketama\n"
"  sudo kill -HUP $(pidof agent)      # reload the shard file now\n",
		KS_PIN_ROOT, KS_MAX_PORTS, KS_REPORT_TOP, KS_REPORT_TOP,
		KS_VNODES_DEFAULT, KS_MAX_REPLICAS, "/sys/fs/bpf");
}

void ks_help_detach(FILE *f)
{
	fprintf(f,
"USAGE\n"
"  agent detach --iface IF\n"
"\n"
"Removes what a keysteer agent left on IF: the pinned link and maps in\n"
"%s/IF and the folder, and a keysteer XDP program still attached to IF.\n"
"Exits 1 when there was nothing to remove.\n"
"\n"
"EXAMPLES\n"
"  sudo agent detach --iface eth1\n",
		KS_PIN_ROOT);
}

void ks_help_report(FILE *f)
{
	fprintf(f,
"USAGE\n"
"  agent report [--iface IF] [options]      (also: agent --report ...)\n"
"\n"
"Prints the dashboard of the agent running on IF: request rates by class,\n"
"parse errors by reason, and the top keys with reads/s, writes/s, their\n"
"count in the interval, share of all requests and an error bound (--json\n"
"adds the exact totals since load: docs/report-json.md). With a ring\n"
"(agent run --shards...), also the ring (distribution, version, digest,\n"
"shards, self), one row per shard busiest first (reads/s, writes/s, share\n"
"of the keys placed on the ring, ratio to the mean shard, misdirected/s)\n"
"and the clients that sent keys of other shards here. --iface may be left\n"
"out when keysteer is attached to one interface only.\n"
"\n"
"OPTIONS\n"
"  --iface IF          interface the agent runs on\n"
"  --top K             keys to show, 1..%d (default 20)\n"
"  --json              one JSON document instead of the text dashboard\n"
"  --watch             on a terminal, a live dashboard redrawn every interval:\n"
"                      shard load bars, top keys with a sparkline of their\n"
"                      recent rate, hot keys, parse errors; fits the window\n"
"                      (resizes too). q quits, r redraws now, Ctrl-L clears;\n"
"                      Ctrl-C and SIGTERM also restore the terminal. Into a\n"
"                      pipe, or with --json: the report again every interval\n"
"  --interval SEC      redraw period for --watch (default: the agent's interval)\n"
"  --ascii             the dashboard in plain ASCII (the default when the\n"
"                      locale is not UTF-8)\n"
"  --hash-only         show 64-bit key hashes instead of key bytes\n"
"  --shards-top N      shard rows in the text, 1..%d (default %d); --json\n"
"                      always lists every shard, in index order\n"
"\n"
"EXAMPLES\n"
"  sudo agent report --iface eth1\n"
"  sudo agent --report --top 5 --watch\n"
"  sudo agent report --json --hash-only | jq '.top[0]'\n"
"  sudo agent report --json | jq '.shards[] | select(.busiest)'\n",
		KS_REPORT_TOP, KS_MAX_SHARDS, KS_SHARDS_TOP_DEFAULT);
}

void ks_help_trace(FILE *f)
{
	fprintf(f,
"USAGE\n"
"  agent trace [--iface IF] [--count N] [--duration SEC] [--hash-only]\n"
"\n"
"Prints one line per sampled key while it runs:\n"
"  <class> <op> <key> <client ip>:<port> <tcp|udp>\n"
"Tracing is switched on in the datapath while the command runs and off\n"
"when it ends (Ctrl-C, --count or --duration).\n"
"\n"
"OPTIONS\n"
"  --iface IF          interface the agent runs on\n"
"  --count N           stop after N lines\n"
"  --duration SEC      stop after SEC seconds (decimals allowed)\n"
"  --hash-only         print key hashes instead of key bytes\n"
"\n"
"EXAMPLES\n"
"  sudo agent trace --iface eth1 --count 20\n"
"  sudo agent trace --duration 5 --hash-only\n");
}

void ks_help_ring(FILE *f)
{
	fprintf(f,
"USAGE\n"
"  agent ring lookup (--shards LIST | --shards-file FILE) [options] [KEY...]\n"
"  agent ring diff (--from LIST | --from-file FILE) (--to LIST | --to-file FILE)\n"
"                  [--keys N] [options]\n"
"\n"
"Builds the ring the memcached clients use, in user space, and answers from\n"
"it. 'lookup' prints one line per key, key<TAB>index<TAB>host:port, the index\n"
"counted from 0 in the order the shards are given; with no KEY it reads keys\n"
"from stdin, one per line (blank lines skipped). 'diff' hashes N sample keys\n"
"(key:0, key:1, ...) on both rings and prints how many move and between which\n"
"shards, and each ring's balance (busiest shard / mean).\n"
"\n"
"SHARDS\n"
"  LIST    host:port[:weight],...  (weight 1..%d, default 1)\n"
"  FILE    one 'host:port[:weight] [name]' per line; '#' starts a comment;\n"
"          a leading '- ' is allowed (a nutcracker.yml server list)\n"
"  Hosts are hashed as written (IPv4 address or name; nothing is resolved).\n"
"  Names are used by twemproxy and vnode; libmemcached has none.\n"
"\n"
"OPTIONS\n"
"  --distribution D    how the clients place keys (default ketama):\n"
"                        ketama         libmemcached KETAMA_WEIGHTED (PHP\n"
"                                       OPT_LIBKETAMA_COMPATIBLE), MD5\n"
"                        twemproxy      nutcracker ketama, hash fnv1a_64\n"
"                        twemproxy-md5  nutcracker ketama, hash md5\n"
"                        vnode          %d virtual nodes 'name#i' per shard\n"
"                        modula         MD5 hash %% number of shards\n"
"  --vnodes N          virtual nodes per shard for vnode (at most %d in all)\n"
"  --self HOST:PORT    the shard this host serves (lookup; checked only)\n"
"  --keys N            sample keys for diff, 1..%d (default %d)\n"
"\n"
"EXAMPLES\n"
"  agent ring lookup --shards 10.0.0.1:11211,10.0.0.2:11211:2 user:42 cart:7\n"
"  agent ring lookup --shards-file shards.txt --distribution twemproxy < keys.txt\n"
"  agent ring diff --from a:11211,b:11211,c:11211,d:11211 \\\n"
"                  --to a:11211,b:11211,c:11211,d:11211,e:11211\n",
		KS_SHARD_WEIGHT_MAX, KS_VNODES_DEFAULT, KS_RING_MAX_POINTS,
		10000000, 100000);
}

void ks_help_replay(FILE *f)
{
	fprintf(f,
"USAGE\n"
"  agent replay [options] FILE\n"
"\n"
"Runs every frame of a capture through keysteer's XDP program with\n"
"BPF_PROG_TEST_RUN and prints what it counted. First, since a capture is\n"
"finite: the capture's format, frames read, run and skipped (frames the\n"
"capturing host sent, frames over the test-run limit), the span, and the\n"
"exact counts (requests, keys and bytes by class and by op, parse errors\n"
"by reason, resyncs; on stderr with --json, whose 'totals' holds them).\n"
"Then the report 'agent report' shows, for one interval as long as the\n"
"capture: rates per second of its span, each top key's count in it.\n"
"Nothing is attached and nothing is pinned: no interface, no traffic, no\n"
"running agent is touched. Needs root (it loads a BPF program).\n"
"\n"
"FILE   pcap (either byte order, micro- or nanosecond timestamps) or pcapng\n"
"       (any number of interfaces and sections); link types Ethernet and\n"
"       Linux cooked SLL/SLL2 ('tcpdump -i any'). Capture the receiving\n"
"       side: 'tcpdump -i IF -Q in -w FILE port 11211'.\n"
"\n"
"OPTIONS\n"
"  --sample N          sample 1 in N keys, 1..1000000 (default 1: every key)\n"
"  --ports P,...       memcached ports, 1 to %d of them (default 11211)\n"
"  --top K             keys to show, 1..%d (default 20)\n"
"  --json              the report as one JSON document (as 'agent report --json')\n"
"  --hash-only         show 64-bit key hashes instead of key bytes\n"
"  --shards-top N      shard rows in the text, 1..%d (default %d)\n"
"  --shards LIST, --shards-file FILE, --self HOST:PORT, --distribution D,\n"
"  --vnodes N          the clients' ring, as for 'agent run': per-shard load\n"
"  -v, --verbose       libbpf's debug output\n"
"\n"
"A bad or cut-short file is refused before anything runs, with\n"
"'FILE: record N at byte B: <what>' and exit status 1.\n"
"\n"
"EXAMPLES\n"
"  sudo tcpdump -i eth1 -Q in -w /tmp/mc.pcap port 11211\n"
"  sudo agent replay /tmp/mc.pcap\n"
"  sudo agent replay --json --top 10 /tmp/mc.pcapng | jq '.top[0]'\n"
"  sudo agent replay --shards-file /etc/keysteer/shards.txt \\\n"
"                    --self 10.0.0.2:11211 /tmp/any.pcap\n",
		KS_MAX_PORTS, KS_REPORT_TOP, KS_MAX_SHARDS,
		KS_SHARDS_TOP_DEFAULT);
}

int ks_help_for(const char *cmd, FILE *f)
{
	static const struct {
		const char *name;
		void (*fn)(FILE *f);
	} tab[] = {
		{ "run", ks_help_run },       { "detach", ks_help_detach },
		{ "report", ks_help_report }, { "trace", ks_help_trace },
		{ "ring", ks_help_ring },     { "help", ks_help_main },
		{ "replay", ks_help_replay },
	};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (!strcmp(cmd, tab[i].name)) {
			tab[i].fn(f);
			return 0;
		}
	}
	return -1;
}

int ks_bad_option(const char *cmd, int c, char **argv)
{
	char what[128];

	/* A word from 'agent run --config FILE' is named by its FILE:LINE. */
	if (ks_conf_bad_option(c, argv[optind - 1]))
		return KS_EXIT_USAGE;
	if (c == ':')
		snprintf(what, sizeof(what), "option '%s' needs a value",
			 argv[optind - 1]);
	else
		snprintf(what, sizeof(what), "unknown option '%s'",
			 argv[optind - 1]);
	return ks_usage_error(cmd, what);
}

int ks_no_args(const char *cmd, int argc, char **argv)
{
	char what[128];

	if (optind >= argc)
		return 0;
	snprintf(what, sizeof(what), "unexpected argument '%s'", argv[optind]);
	return ks_usage_error(cmd, what);
}

int ks_usage_error(const char *cmd, const char *what)
{
	fprintf(stderr, "agent: %s; see 'agent %s --help'\n", what, cmd);
	return KS_EXIT_USAGE;
}
