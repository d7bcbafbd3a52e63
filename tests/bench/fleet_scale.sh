#!/usr/bin/env bash
# fleet_scale.sh - one etcd for many hosts (issue 12, docs/fleet.md,
# "Scale"): runs $OUT/tests/fleet_scale (N simulated agents, the agent's own
# publishing code) against a fresh single-member etcd for each N and each
# repeat, then prints one table of min and median over the repeats.
#
#   tests/bench/fleet_scale.sh [--agents 16,64,256] [--repeats N]
#       [--warmup S] [--steady S] [--churn S] [--raw FILE] [-- ARGS...]
#
# ARGS go to fleet_scale as they are (--flat, --churn-replace K, ...).
# etcd (Debian's etcd-server) listens on 127.0.0.1 only, on ports nobody
# holds, with its data in a temporary folder; it is stopped by its pid on
# every exit path, and the folder removed. Runs go round the Ns repeat by
# repeat, so drift on a shared machine falls on every N alike. Before each
# run the load average and the busiest processes are logged (the machine
# is shared: say what else ran). Each run is bounded by timeout(1); the
# whole by the sum.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/${OUT:-build}/tests/fleet_scale
AGENTS=16,64,256
REPEATS=2
WARMUP=5
STEADY=30
CHURN=20
RAW=
PASS=()

usage() {
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
	case $1 in
	--agents) AGENTS=$2; shift 2 ;;
	--repeats) REPEATS=$2; shift 2 ;;
	--warmup) WARMUP=$2; shift 2 ;;
	--steady) STEADY=$2; shift 2 ;;
	--churn) CHURN=$2; shift 2 ;;
	--raw) RAW=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; PASS=("$@"); break ;;
	*) echo "fleet_scale.sh: unknown option $1; see --help" >&2; exit 2 ;;
	esac
done
for v in "$REPEATS" "$WARMUP" "$STEADY" "$CHURN"; do
	case $v in
	'' | *[!0-9]*) echo "fleet_scale.sh: '$v' is not a whole number" >&2; exit 2 ;;
	esac
done
IFS=, read -r -a NS <<<"$AGENTS"
for n in "${NS[@]}"; do
	case $n in
	'' | *[!0-9]*) echo "fleet_scale.sh: --agents '$AGENTS': '$n' is not a number" >&2; exit 2 ;;
	esac
done
for tool in etcd python3 timeout curl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "fleet_scale.sh: $tool is missing; run 'make deps' (etcd-server, python3, coreutils, curl)" >&2
		exit 1
	fi
done
if [ ! -x "$BIN" ]; then
	echo "fleet_scale.sh: $BIN is not built; run 'make ${OUT:+OUT=$OUT }$(basename "${OUT:-build}")/tests/fleet_scale' or 'make bench-fleet'" >&2
	exit 1
fi

TMP=$(mktemp -d /tmp/keysteer-fleet-scale.XXXXXX)
ETCD_PID=
BENCH_PID=

stop_pid() { # PID: TERM, then KILL after 5 s
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

cleanup() {
	trap - EXIT INT TERM HUP
	[ -n "$BENCH_PID" ] && stop_pid "$BENCH_PID"
	[ -n "$ETCD_PID" ] && stop_pid "$ETCD_PID"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# Two ports nobody listens on now, from the kernel.
free_ports() {
	python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))
'
}

start_etcd() { # NAME: sets ETCD_PID and ETCD_URL
	local name=$1 cport pport
	read -r cport pport <<<"$(free_ports)"
	ETCD_URL=http://127.0.0.1:$cport
	etcd --name "$name" --data-dir "$TMP/$name.data" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls "http://127.0.0.1:$pport" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
		--initial-cluster "$name=http://127.0.0.1:$pport" \
		</dev/null >"$TMP/$name.log" 2>&1 &
	ETCD_PID=$!
	for _ in $(seq 100); do
		curl -sf "$ETCD_URL/health" 2>/dev/null | grep -q true && return 0
		kill -0 "$ETCD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "fleet_scale.sh: etcd did not start: $(tail -3 "$TMP/$name.log")" >&2
	return 1
}

results=$TMP/results
: >"$results"
per_run=$((WARMUP + STEADY + CHURN + 30))
echo "fleet_scale: agents ${NS[*]}, $REPEATS repeat(s), $WARMUP+$STEADY+$CHURN s a run, at most $((per_run * ${#NS[@]} * REPEATS)) s"
echo "machine: $(nproc) CPUs, $(uname -r), $(etcd --version | head -1), data dir on $(df -T "$TMP" | awk 'NR==2 {print $2}')"
failed=0
for r in $(seq "$REPEATS"); do
	for n in "${NS[@]}"; do
		name=fs$n-$r
		echo "== N=$n repeat $r: $(uptime | sed 's/^ *//')"
		top -bn1 -o %CPU 2>/dev/null | sed -n '8,12p' |
			awk '{printf "   busy: %s %s%% %s\n", $1, $9, $12}'
		start_etcd "$name" || { failed=1; continue; }
		timeout -k 5 "$per_run" "$BIN" --etcd "$ETCD_URL" --agents "$n" \
			--etcd-pid "$ETCD_PID" --warmup "$WARMUP" --steady "$STEADY" \
			--churn "$CHURN" "${PASS[@]}" >"$TMP/$name.out" 2>"$TMP/$name.err" &
		BENCH_PID=$!
		wait "$BENCH_PID"
		rc=$?
		BENCH_PID=
		stop_pid "$ETCD_PID"
		ETCD_PID=
		if [ "$rc" -ne 0 ]; then
			echo "   fleet_scale exited $rc: $(tail -3 "$TMP/$name.err")"
			failed=1
		fi
		grep -m3 -i 'warn\|error' "$TMP/$name.err" | sed 's/^/   /'
		grep '^RESULT' "$TMP/$name.out" | sed "s/^RESULT/RESULT repeat=$r/" | tee -a "$results" |
			awk '{for (i = 2; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}
			printf "   %-6s puts/s %s txns/s %s keepalives/s %s client events/s %s watch p50 %s p99 %s ms etcd CPU %s%%\n",
				v["phase"], v["mvcc_puts_ps"], v["grpc_txn_ps"], v["grpc_keepalive_ps"], v["client_events_ps"],
				v["watch_p50_ms"], v["watch_p99_ms"], v["etcd_cpu_pct"]}'
		rm -rf "$TMP/$name.data"
	done
done
[ -n "$RAW" ] && cp "$results" "$RAW"

python3 - "$results" <<'EOF'
import statistics
import sys

rows = {}
for line in open(sys.argv[1]):
    kv = dict(f.split('=', 1) for f in line.split()[1:])
    ph = kv['phase']
    if ph == 'churn' and kv['churn_agents'] != kv['agents']:
        ph += ' (%s of them)' % kv['churn_agents']
    rows.setdefault((int(kv['agents']), ph), []).append(kv)

cols = [('puts/s', 'mvcc_puts_ps', 1), ('dels/s', 'mvcc_deletes_ps', 1),
        ('txns/s', 'grpc_txn_ps', 1), ('keepalives/s', 'grpc_keepalive_ps', 0),
        ('client events/s', 'client_events_ps', 1),
        ('load docs/s', 'load_sets_ps', 1),
        ('puts/s/agent', 'per_agent_puts_ps', 2),
        ('txns/interval/agent', 'per_agent_txns_pi', 2),
        ('watch p50 ms', 'watch_p50_ms', 1), ('p99 ms', 'watch_p99_ms', 1),
        ('max ms', 'watch_max_ms', 1), ('etcd CPU %', 'etcd_cpu_pct', 1),
        ('RSS MiB', 'etcd_rss_mib', 0), ('bench CPU %', 'bench_cpu_pct', 0)]


def cell(runs, key, prec):
    if any(key not in r for r in runs):
        return '-'  # a binary before the field
    vals = sorted(float(r[key]) for r in runs)
    if key.startswith('watch_') and all(int(r['watch_n']) == 0 for r in runs):
        return '-'
    lo, med = vals[0], statistics.median(vals)
    if len(vals) == 1:
        return '%.*f' % (prec, lo)
    return '%.*f / %.*f' % (prec, lo, prec, med)


print()
print('min / median over %d repeat(s); watch: from the hand-over to the '
      'publisher to the event at one watcher' %
      max(len(v) for v in rows.values()) if rows else 'no results')
head = ['N', 'phase'] + [c[0] for c in cols] + ['watch n', 'unmatched',
                                                'errors']
print('| ' + ' | '.join(head) + ' |')
print('|' + '---|' * len(head))
for (n, ph) in sorted(rows, key=lambda k: (k[0], k[1] != 'steady', k[1])):
    runs = rows[(n, ph)]
    out = [str(n), ph] + [cell(runs, k, p) for _, k, p in cols]
    out.append(str(sum(int(r['watch_n']) for r in runs)))
    out.append(str(sum(int(r['watch_unmatched']) for r in runs)))
    out.append(str(sum(int(r['pub_errors']) for r in runs)))
    print('| ' + ' | '.join(out) + ' |')
EOF
exit "$failed"
