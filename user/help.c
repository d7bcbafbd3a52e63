// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "keysteer.h"
#include "cmds.h"

void ks_help_main(FILE *f)
{
	fprintf(f,
"keysteer %s - finds the hot keys of memcached from an XDP program\n"
"\n"
"USAGE\n"
"  agent run    --iface IF [--sample N] [--interval SEC] [--ports P,...]\n"
"               [--xdp-mode native|generic|auto] [--top K] [-v]\n"
"  agent report [--iface IF] [--top K] [--json] [--watch] [--hash-only]\n"
"               [--interval SEC]                 (also: agent --report ...)\n"
"  agent trace  [--iface IF] [--count N] [--duration SEC] [--hash-only]\n"
"  agent detach --iface IF\n"
"  agent help [COMMAND] | agent COMMAND --help | agent --version\n"
"\n"
"EXAMPLES\n"
"  sudo agent run --iface eth1 --sample 16 --interval 0.5\n"
"  sudo agent --report --iface eth1 --top 10\n"
"  sudo agent report --json --hash-only\n"
"  sudo agent trace --iface eth1 --count 20\n"
"  sudo agent detach --iface eth1\n",
		KS_VERSION_STR);
}

void ks_help_run(FILE *f)
{
	fprintf(f,
"USAGE\n"
"  agent run --iface IF [options]\n"
"\n"
"Attaches keysteer's XDP program to IF, pins its maps in %s/IF and\n"
"every interval estimates the reads/s and writes/s of the hottest keys for\n"
"'agent report'. Runs until SIGINT or SIGTERM, then detaches and removes\n"
"everything it made.\n"
"\n"
"OPTIONS\n"
"  --iface IF          interface to watch (ingress), required\n"
"  --sample N          sample 1 in N keys, 1..1000000 (default 8)\n"
"  --interval SEC      seconds per interval, 0.1..3600, decimals allowed (default 1)\n"
"  --ports P,...       memcached ports, 1 to %d of them (default 11211)\n"
"  --xdp-mode MODE     native, generic or auto (default auto: native, else generic)\n"
"  --top K             keys published per interval, 1..%d (default %d)\n"
"  -v, --verbose       a status line per interval and libbpf's debug output\n"
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
"  sudo agent run --iface veth0 --xdp-mode generic -v\n",
		KS_PIN_ROOT, KS_MAX_PORTS, KS_REPORT_TOP, KS_REPORT_TOP,
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
"parse errors by reason, and the top keys with reads/s, writes/s, share of\n"
"all requests and an error bound. --iface may be left out when keysteer is\n"
"attached to one interface only.\n"
"\n"
"OPTIONS\n"
"  --iface IF          interface the agent runs on\n"
"  --top K             keys to show, 1..%d (default 20)\n"
"  --json              one JSON document instead of the text dashboard\n"
"  --watch             redraw in place every interval until Ctrl-C\n"
"  --interval SEC      redraw period for --watch (default: the agent's interval)\n"
"  --hash-only         show 64-bit key hashes instead of key bytes\n"
"\n"
"EXAMPLES\n"
"  sudo agent report --iface eth1\n"
"  sudo agent --report --top 5 --watch\n"
"  sudo agent report --json --hash-only | jq '.top[0]'\n",
		KS_REPORT_TOP);
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

int ks_help_for(const char *cmd, FILE *f)
{
	static const struct {
		const char *name;
		void (*fn)(FILE *f);
	} tab[] = {
		{ "run", ks_help_run },       { "detach", ks_help_detach },
		{ "report", ks_help_report }, { "trace", ks_help_trace },
		{ "help", ks_help_main },
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

int ks_usage_error(const char *cmd, const char *what)
{
	fprintf(stderr, "agent: %s; see 'agent %s --help'\n", what, cmd);
	return KS_EXIT_USAGE;
}
