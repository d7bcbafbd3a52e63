// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * help.c - the help texts and the usage errors. The prose (USAGE,
 * descriptions, EXAMPLES) is written here; every option list is printed
 * from the option table (cli_options.c, ks_cli_help).
 */
#include <getopt.h>
#include <string.h>
#include "keysteer.h"
#include "cli/cmds.h"
#include "cli/cli_options.h"
#include "ks_ring.h"
#include "core/shards.h"
#include "core/hotkeys.h"
#include "render/report.h"

void ks_help_main(FILE *f)
{
	fprintf(f,
		"keysteer %s - finds the hot keys of memcached from an XDP (or tc) program\n"
		"\n"
		"USAGE\n"
		"  agent run    --iface IF [--sample N|auto[:T]] [--interval SEC] [--ports P,...]\n"
		"               [--attach xdp|tc] [--xdp-mode native|generic|auto] [--top K]\n"
		"               [-v] [--config FILE]\n"
		"               [--shards LIST | --shards-file FILE [--self HOST:PORT]\n"
		"                [--distribution D] [--vnodes N]]\n"
		"               [--replicas LIST] [--listen PORT] [--metrics PORT] ...\n"
		"  agent report [--iface IF] [--top K] [--json] [--watch] [--hash-only]\n"
		"               [--shards-top N] [--interval SEC]  (also: agent --report ...)\n"
		"  agent trace  [--iface IF] [--count N] [--duration SEC] [--hash-only]\n"
		"  agent detach --iface IF\n"
		"  agent ring   lookup|diff|get|set ...  (the clients' ring; get/set: in etcd)\n"
		"  agent replay [--sample N|auto[:T]] [--json] [ring options] FILE.pcap|.pcapng\n"
		"  agent fleet  --etcd URL,... [--cluster NAME] [--json]  (every agent in etcd)\n"
		"  agent pins   get|set --etcd URL,... ...  (the fleet's pin rules in etcd)\n"
		"  agent follow --etcd URL,... [--cluster NAME] [--view-file PATH]\n"
		"               (one view of the fleet for every client of this host)\n"
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
		"OPTIONS\n",
		KS_PIN_ROOT);
	ks_cli_help(f, KS_CMD_RUN, KS_GRP_OPTIONS);
	fputs("\n"
	      "RING (per-shard load; see 'agent ring --help' for the list syntax)\n",
	      f);
	ks_cli_help(f, KS_CMD_RUN, KS_GRP_RING);
	fputs("  The ring is built before anything is attached; a bad list is refused\n"
	      "  with its line. SIGHUP, or a change of FILE (checked twice a second),\n"
	      "  rebuilds it; the new ring is swapped in whole, with a higher version, or\n"
	      "  if the new list is bad the error is logged and the old ring stays.\n"
	      "\n"
	      "HOT KEYS\n",
	      f);
	ks_cli_help(f, KS_CMD_RUN, KS_GRP_HOT);
	fputs("\n"
	      "METRICS (see docs/metrics.md)\n",
	      f);
	ks_cli_help(f, KS_CMD_RUN, KS_GRP_METRICS);
	fputs("\n"
	      "ETCD (the fleet's ring; docs/fleet.md)\n",
	      f);
	ks_cli_help(f, KS_CMD_RUN, KS_GRP_ETCD);
	fputs("  With --etcd the ring is /keysteer/CLUSTER/ring ('agent ring set'), read\n"
	      "  before anything is attached and then watched: a new ring is swapped in\n"
	      "  as a changed shard file is, its etcd revision as its version; a document\n"
	      "  that does not read or builds no valid ring is refused, logged, counted,\n"
	      "  and the old ring stays. --shards/--shards-file, if given, is the ring\n"
	      "  until etcd has one. If etcd goes away the last ring stays.\n",
	      f);
	fprintf(f,
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
		"/sys/fs/bpf");
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
		"OPTIONS\n",
		KS_PIN_ROOT);
	ks_cli_help(f, KS_CMD_DETACH, KS_GRP_OPTIONS);
	fputs("\n"
	      "EXAMPLES\n"
	      "  sudo agent detach --iface eth1\n",
	      f);
}

void ks_help_report(FILE *f)
{
	fputs("USAGE\n"
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
	      "OPTIONS\n",
	      f);
	ks_cli_help(f, KS_CMD_REPORT, KS_GRP_OPTIONS);
	fputs("\n"
	      "EXAMPLES\n"
	      "  sudo agent report --iface eth1\n"
	      "  sudo agent --report --top 5 --watch\n"
	      "  sudo agent report --json --hash-only | jq '.top[0]'\n"
	      "  sudo agent report --json | jq '.shards[] | select(.busiest)'\n",
	      f);
}

void ks_help_trace(FILE *f)
{
	fputs("USAGE\n"
	      "  agent trace [--iface IF] [--count N] [--duration SEC] [--hash-only]\n"
	      "\n"
	      "Prints one line per sampled key while it runs:\n"
	      "  <class> <op> <key> <client ip>:<port> <tcp|udp>\n"
	      "Tracing is switched on in the datapath while the command runs and off\n"
	      "when it ends (Ctrl-C, --count or --duration).\n"
	      "\n"
	      "OPTIONS\n",
	      f);
	ks_cli_help(f, KS_CMD_TRACE, KS_GRP_OPTIONS);
	fputs("\n"
	      "EXAMPLES\n"
	      "  sudo agent trace --iface eth1 --count 20\n"
	      "  sudo agent trace --duration 5 --hash-only\n",
	      f);
}

void ks_help_ring(FILE *f)
{
	fprintf(f,
		"USAGE\n"
		"  agent ring lookup (--shards LIST | --shards-file FILE) [--pins FILE] [options] [KEY...]\n"
		"  agent ring diff (--from LIST | --from-file FILE) (--to LIST | --to-file FILE)\n"
		"                  [--keys N] [options]\n"
		"  agent ring set --etcd URL,... [--cluster NAME] (--shards LIST |\n"
		"                 --shards-file FILE) [--distribution D] [--vnodes N]\n"
		"                 [--if-revision R] [--force] [etcd options]\n"
		"  agent ring get --etcd URL,... [--cluster NAME] [--json] [etcd options]\n"
		"  agent ring plan --etcd URL,... [--cluster NAME] --out FILE [--window SEC]\n"
		"                  [--target F] [etcd options]\n"
		"  agent ring set --etcd URL,... --plan FILE [--if-revision R] [--force]\n"
		"\n"
		"Builds the ring the memcached clients use, in user space, and answers from\n"
		"it. 'lookup' prints one line per key, key<TAB>index<TAB>host:port, the index\n"
		"counted from 0 in the order the shards are given; with no KEY it reads keys\n"
		"from stdin, one per line (blank lines skipped). 'diff' hashes N sample keys\n"
		"(key:0, key:1, ...) on both rings and prints how many move and between which\n"
		"shards, and each ring's balance (busiest shard / mean).\n"
		"'set' builds the ring as lookup does (a bad list is refused, exit 2) and\n"
		"writes it to etcd as a versioned JSON document, /keysteer/NAME/ring, with a\n"
		"compare-and-swap on the revision it read (or --if-revision): if someone else\n"
		"changed it in between, nothing is written and it says who won at which\n"
		"revision (exit 1). Before writing it prints what the change moves, as\n"
		"'diff' counts it on %d sample keys against the ring in etcd, and refuses\n"
		"(exit 1, nothing written) a change that moves more than twice the\n"
		"ideal share plus 1%% of the keys unless given --force. Then it prints\n"
		"'revision R digest D ...'. 'get' prints the\n"
		"document and its revision. 'agent run --etcd' follows the same key\n"
		"(docs/fleet.md). 'plan' reads the ring and every agent's load over a\n"
		"window and writes a ring of explicit points that brings the busiest shard\n"
		"near the mean moving the fewest keys, for 'set --plan' (only for fleets\n"
		"whose clients read the ring from etcd: docs/placement.md).\n"
		"\n"
		"SHARDS\n"
		"  LIST    host:port[:weight],...  (weight 1..%d, default 1)\n"
		"  FILE    one 'host:port[:weight] [name]' per line; '#' starts a comment;\n"
		"          a leading '- ' is allowed (a nutcracker.yml server list)\n"
		"  Hosts are hashed as written (IPv4 address or name; nothing is resolved).\n"
		"  Names are used by twemproxy and vnode; libmemcached has none.\n"
		"\n"
		"OPTIONS\n",
		KS_DIFF_KEYS_DEFAULT, KS_SHARD_WEIGHT_MAX);
	ks_cli_help(f, KS_CMD_RING, KS_GRP_OPTIONS);
	fputs("\n"
	      "ETCD (set, get, plan)\n",
	      f);
	ks_cli_help(f, KS_CMD_RING, KS_GRP_ETCD);
	fputs("\n"
	      "EXAMPLES\n"
	      "  agent ring lookup --shards 10.0.0.1:11211,10.0.0.2:11211:2 user:42 cart:7\n"
	      "  agent ring lookup --shards-file shards.txt --distribution twemproxy < keys.txt\n"
	      "  agent ring diff --from a:11211,b:11211,c:11211,d:11211 \\\n"
	      "                  --to a:11211,b:11211,c:11211,d:11211,e:11211\n"
	      "  agent ring set --etcd http://10.0.0.9:2379 --cluster web --shards-file shards.txt\n"
	      "  agent ring get --etcd http://10.0.0.9:2379 --cluster web --json\n",
	      f);
}

void ks_help_fleet(FILE *f)
{
	fputs("USAGE\n"
	      "  agent fleet --etcd URL,... [--cluster NAME] [--watch] [--json]\n"
	      "              [--top K] [--hash-only]\n"
	      "\n"
	      "One range read of /keysteer/CLUSTER/, one consistent snapshot: the\n"
	      "ring, every agent's members/SELF (published by 'agent run --etcd' under\n"
	      "a lease, so a dead agent's entry goes by itself; hosts/SELF from agents\n"
	      "before schema 2) and every hot/HASH entry; and one of\n"
	      "/keysteer-load/CLUSTER/, each agent's rates.\n"
	      "Shows every shard of the ring with its agent's reads/s, writes/s, share\n"
	      "of the fleet's reads, ratio to the mean, misdirected/s and the ring\n"
	      "revision it runs (OLD RING when older than the ring's), the agent up or\n"
	      "gone; the busiest shard marked '*' and named with max/mean; hosts whose\n"
	      "entry names no shard; the fleet's top keys merged across hosts; the\n"
	      "hot-key table (entries that do not read are listed as refused). Without\n"
	      "a ring, one line per host. Needs no root. docs/fleet.md.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  agent fleet --etcd http://10.0.0.9:2379 --cluster web\n"
	      "  agent fleet --etcd http://10.0.0.9:2379 --watch --top 5 --hash-only\n"
	      "  agent fleet --etcd http://10.0.0.9:2379 --json | jq .shards\n"
	      "\n"
	      "OPTIONS\n",
	      f);
	ks_cli_help(f, KS_CMD_FLEET, KS_GRP_OPTIONS);
	fputs("\n"
	      "ETCD\n",
	      f);
	ks_cli_help(f, KS_CMD_FLEET, KS_GRP_ETCD);
}

void ks_help_pins(FILE *f)
{
	fputs("USAGE\n"
	      "  agent pins set --etcd URL,... [--cluster NAME] --pins FILE\n"
	      "                 [--if-revision R] [etcd options]\n"
	      "  agent pins get --etcd URL,... [--cluster NAME] [--json] [etcd options]\n"
	      "\n"
	      "The fleet's pin and split rules, /keysteer/NAME/pins: the text of a pin\n"
	      "file (the syntax of 'agent run --pins') in a versioned JSON document that\n"
	      "every 'agent run --etcd' of the cluster watches; while it is there it\n"
	      "replaces the agent's own --pins file. 'set' checks the file as the agent\n"
	      "would (a bad line exits 2 with FILE:LINE, nothing written; so does a\n"
	      "shard rule naming a shard the fleet's ring lacks) and writes it\n"
	      "with a compare-and-swap on the revision it read (or --if-revision): a\n"
	      "concurrent change is refused naming the winner (exit 1). An empty file\n"
	      "is a fleet with no pins. 'get' prints the rules and their revision.\n"
	      "docs/fleet.md.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  agent pins set --etcd http://10.0.0.9:2379 --cluster web --pins pins.txt\n"
	      "  agent pins get --etcd http://10.0.0.9:2379 --cluster web --json\n"
	      "\n"
	      "OPTIONS\n",
	      f);
	ks_cli_help(f, KS_CMD_PINS, KS_GRP_OPTIONS);
	ks_cli_help(f, KS_CMD_PINS, KS_GRP_HOT);
	fputs("\n"
	      "ETCD\n",
	      f);
	ks_cli_help(f, KS_CMD_PINS, KS_GRP_ETCD);
}

void ks_help_follow(FILE *f)
{
	fputs("USAGE\n"
	      "  agent follow --etcd URL,... [--cluster NAME] [--view-file PATH] [-v]\n"
	      "               [etcd options]\n"
	      "\n"
	      "The host follower: one watch of the documents libkeysteer handles\n"
	      "follow (/keysteer/NAME/), published after every change as a view file\n"
	      "that every handle on this host maps read-only (view_file=PATH, or the\n"
	      "default path, which handles with etcd= take when it is fresh) instead\n"
	      "of watching etcd itself. A new view is a new file renamed over the\n"
	      "path; the follower beats a heartbeat in it every 100 ms. Dead, stopped\n"
	      "or cut off from etcd, its view goes stale and handles read owners only\n"
	      "after their stale_view_ms. Runs until SIGINT or SIGTERM; needs no root\n"
	      "but write access to the file's folder. docs/client.md, \"One view per\n"
	      "host\"; docs/operations.md has a systemd unit.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  agent follow --etcd http://10.0.0.9:2379 --cluster web\n"
	      "  agent follow --etcd http://10.0.0.9:2379 --cluster web --view-file /run/ks/web.view\n"
	      "\n"
	      "OPTIONS\n",
	      f);
	ks_cli_help(f, KS_CMD_FOLLOW, KS_GRP_OPTIONS);
	fputs("\n"
	      "ETCD\n",
	      f);
	ks_cli_help(f, KS_CMD_FOLLOW, KS_GRP_ETCD);
}

void ks_help_replay(FILE *f)
{
	fputs("USAGE\n"
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
	      "OPTIONS\n",
	      f);
	ks_cli_help(f, KS_CMD_REPLAY, KS_GRP_OPTIONS);
	fputs("\n"
	      "RING (the clients' ring, as for 'agent run': per-shard load)\n",
	      f);
	ks_cli_help(f, KS_CMD_REPLAY, KS_GRP_RING);
	fputs("\n"
	      "HOT KEYS (with --interval: the table 'agent run' would keep, updated\n"
	      "from each interval's 256 heaviest keys)\n",
	      f);
	ks_cli_help(f, KS_CMD_REPLAY, KS_GRP_HOT);
	fputs("\n"
	      "A bad or cut-short file is refused before anything runs, with\n"
	      "'FILE: record N at byte B: <what>' and exit status 1.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  sudo tcpdump -i eth1 -Q in -w /tmp/mc.pcap port 11211\n"
	      "  sudo agent replay /tmp/mc.pcap\n"
	      "  sudo agent replay --json --top 10 /tmp/mc.pcapng | jq '.top[0]'\n"
	      "  sudo agent replay --shards-file /etc/keysteer/shards.txt \\\n"
	      "                    --self 10.0.0.2:11211 /tmp/any.pcap\n",
	      f);
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
		{ "replay", ks_help_replay }, { "fleet", ks_help_fleet },
		{ "pins", ks_help_pins },     { "follow", ks_help_follow },
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
