#!/usr/bin/env bash
# line_bench.sh - packets/s per core through a veth pair (issues 10, 27):
# an unsampled 16-byte UDP get, in-order TCP gets and TCP segments
# continuing a set's value, with keysteer attached (native XDP) on the
# receiving veth against the empty program attached there, swapped every
# burst of a few milliseconds, until the ratio's spread is known.
#
#   sudo tests/bench/line_bench.sh [--packets N] [--trials N]
#        [--max-trials N] [--width W] [--seconds S] [--cpu N] [--json FILE]
#        [--trace FILE] [--no-hold] [--trafficgen] [--sample N|auto[:TARGET]]
#        [--log-samples on|off] [--slog] [--object OBJ] [--ring N]
#        [--keys N] [--place-target T|off]
#
# --packets: a burst's packets (32768); bursts come in blocks of four,
# E K K E or K E E K (E the empty program, K keysteer), and a block's
# ratio is keysteer's packets per CPU second over the empty program's.
# --trials: blocks at least (20); --max-trials: at most (20000);
# --seconds: at most this long (300); --width: stop once every kind's
# median ratio keysteer/empty has a 95% interval at most this wide (0.02).
# --no-hold: leave the programs out of the XDP dispatcher between bursts
# (each test run and swap then changes its set and waits out an RCU grace
# period, as before 3 Dec), for comparison. --trace FILE: a line per block (kind, block, ratio, wall-time ratio, CPU
# seconds of each program, wall seconds, largest share off the CPU).
# KS_NETNS_PREFIX names the namespaces (default ksl: ksl-gen-PID,
# ksl-rx-PID).
#
# --object OBJ (issue 27): keysteer's XDP program (ks_ingress, with its
# own maps) from another build's keysteer.bpf.o instead of this build's,
# on the same bench binary: main's object against a change's, or a stop
# of `tests/bench/stage_build.sh --express` against the empty program (a
# stop counts wrong on purpose: the rows are marked INVALID, exit 1, and
# the figures still printed). Not with --sample or --slog.
#
# --sample N|auto[:TARGET] (issue 27): one kind instead of the three, UDP
# gets whose keys all differ (the sender writes 4 of the 16 key bytes per
# frame), keysteer sampling them at 1 in N, or with auto at the rate
# auto's controller (the agent's, core/sample_rate.c) picks for the keys
# the last keysteer trial counted over its CPU time, i.e. the rate auto
# settles on at one CPU's line rate; the rate in force and the keys
# sampled are printed with the ratio. The sampled keys go through the
# sample log, drained by the agent's own drain (user/dp/slog.c) in a
# thread on another CPU, as 'agent run' drains it; --log-samples off
# leaves the log unused (the in-kernel sketch takes every sampled key),
# the build before the log for comparison.
#
# --slog (issue 27): the sample log on (KS_CFG_SLOG) with a thread of the
# benchmark moving every CPU's tail up to its head each millisecond: the
# datapath's side of the log alone (records written, the log never full),
# not the agent's drain and fold (instead of it: --slog implies
# --log-samples off). The keys logged and those a full log
# sent to the in-kernel sketch are printed at the end.
#
# --ring N (with --sample, issue 27): a ketama ring of N shards
# (1..1024; libmemcached's, the commonest client ring) loaded, as an
# agent with --shards loads one, so that every sampled key is placed on
# it and counted for its shard; this host is on none of them (a sender
# whose keys all differ cannot send only the keys one shard owns), so
# every key is counted as an owned key is and none is misdirected. The
# keys placed are printed at the end.
#
# --place-target T|off (with --sample, issue 27): the agent's option of
# that name (default 4096): after each keysteer trial the placement's
# 1 in P is picked from the keys it sampled over its CPU time, as the
# agent picks it every interval (core/sample_rate.c ks_place_next), and
# written with the sample rate into every CPU's ks_rate entry; with
# --ring, 1 in P sampled keys is then placed, each counted P, and the
# end checks that the shards' counts add up to the keys sampled (within
# the largest P for every move of P). off: every sampled key placed.
#
# --keys N (with --sample, issue 27): keys that come back, as in
# production: the sender draws each frame's key uniformly at random from
# N keys (1..16777216) instead of making every key new, so a sampled key
# was often sampled before and the ring cache (KS_RING_CACHE_SLOTS a CPU,
# direct mapped) may still hold its placement. The share of sampled keys
# it can hit once warm (its slots the N keys use, over N) is printed at
# the end. A uniform draw is the worst case for the cache at a given N:
# a skewed (Zipf) draw over the same keys hits more often.
#
# Makes two network namespaces of its own joined by a veth pair
# (198.18.1.1 and 198.18.1.2, 198.18.0.0/15 only) and three dummy devices
# in the sender's namespace (ksd0-2, two veth pairs left down; see
# --hold-if in bench_line.c), runs `bench line`
# (tests/bench/bench_line.c: BPF_PROG_TEST_RUN live frames, the engine of
# xdp-trafficgen, with memcached frames) pinned to one CPU, and removes
# both namespaces on every exit path. No other interface is touched.
# --trafficgen also runs Debian's xdp-trafficgen (xdp-tools) on the same
# pair for a plain UDP figure: its packets are IPv6 UDP with a payload of
# zeros, which is no memcached request (docs/benchmarks.md).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=$ROOT/${OUT:-build}/tests/bench
PACKETS=32768 TRIALS=20 MAX_TRIALS=20000 WIDTH=0.02 SECONDS_MAX=300 NO_HOLD='' CPU='' JSON_OUT='' TGEN='' SAMPLE= TRACE= SLOG= LOGS= OBJECT= RING= KEYS= PLACE=

usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-2}"
}

while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage 0 ;;
	--trafficgen) TGEN=1 ;;
	--slog) SLOG=1 ;;
	--no-hold) NO_HOLD=1 ;;
	--packets | --trials | --max-trials | --width | --seconds | --cpu | --json | --trace | --sample | --log-samples | --object | --ring | --keys | --place-target)
		[ $# -ge 2 ] || { echo "line_bench.sh: $1 needs a value; see --help" >&2; exit 2; }
		case $1 in
		--packets) PACKETS=$2 ;;
		--trials) TRIALS=$2 ;;
		--max-trials) MAX_TRIALS=$2 ;;
		--width) WIDTH=$2 ;;
		--seconds) SECONDS_MAX=$2 ;;
		--trace) TRACE=$2 ;;
		--cpu) CPU=$2 ;;
		--json) JSON_OUT=$2 ;;
		--sample) SAMPLE=$2 ;;
		--log-samples) LOGS=$2 ;;
		--object) OBJECT=$2 ;;
		--ring) RING=$2 ;;
		--keys) KEYS=$2 ;;
		--place-target) PLACE=$2 ;;
		esac
		shift ;;
	*) echo "line_bench.sh: unknown option $1; see --help" >&2; exit 2 ;;
	esac
	shift
done
# bad numbers refused before any namespace is made (bench line checks
# the ranges again)
for v in "$PACKETS" "$TRIALS" "$MAX_TRIALS" "$SECONDS_MAX" ${CPU:+"$CPU"}; do
	[[ "$v" =~ ^[0-9]+$ ]] || { echo "line_bench.sh: '$v' is not a count; see --help" >&2; exit 2; }
done
{ [ "$PACKETS" -ge 1000 ] && [ "$PACKETS" -le 740000 ] && [ "$TRIALS" -ge 1 ] && [ "$TRIALS" -le 100000 ] &&
	[ "$MAX_TRIALS" -ge 1 ] && [ "$MAX_TRIALS" -le 100000 ] && [ "$SECONDS_MAX" -ge 1 ] && [ "$SECONDS_MAX" -le 86400 ]; } ||
	{ echo "line_bench.sh: --packets 1000..740000, --trials and --max-trials 1..100000, --seconds 1..86400; see --help" >&2; exit 2; }
[[ "$WIDTH" =~ ^0?\.[0-9]*[1-9][0-9]*$ ]] || { echo "line_bench.sh: --width $WIDTH: a number in (0, 1); see --help" >&2; exit 2; }
[ -z "$SAMPLE" ] || [[ "$SAMPLE" =~ ^([1-9][0-9]{0,6}|auto(:[1-9][0-9]*)?)$ ]] ||
	{ echo "line_bench.sh: --sample $SAMPLE: N or auto[:TARGET]; see --help" >&2; exit 2; }
[ -z "$RING" ] || { [[ "$RING" =~ ^[1-9][0-9]{0,3}$ ]] && [ "$RING" -le 1024 ] && [ -n "$SAMPLE" ]; } ||
	{ echo "line_bench.sh: --ring $RING: 1..1024 shards, with --sample; see --help" >&2; exit 2; }
[ -z "$KEYS" ] || { [[ "$KEYS" =~ ^[1-9][0-9]{0,7}$ ]] && [ "$KEYS" -le 16777216 ] && [ -n "$SAMPLE" ]; } ||
	{ echo "line_bench.sh: --keys $KEYS: 1..16777216 keys, with --sample; see --help" >&2; exit 2; }
[ -z "$PLACE" ] || { [[ "$PLACE" =~ ^([1-9][0-9]{0,8}|off)$ ]] && [ -n "$SAMPLE" ]; } ||
	{ echo "line_bench.sh: --place-target $PLACE: placements/s or off, with --sample; see --help" >&2; exit 2; }
[ -z "$LOGS" ] || [ "$LOGS" = on ] || [ "$LOGS" = off ] ||
	{ echo "line_bench.sh: --log-samples $LOGS: on or off; see --help" >&2; exit 2; }
[ -z "$OBJECT" ] || [ -f "$OBJECT" ] ||
	{ echo "line_bench.sh: --object $OBJECT: no such file" >&2; exit 2; }
[ -z "$OBJECT" ] || [ -z "$SAMPLE$SLOG" ] ||
	{ echo "line_bench.sh: --object times the unsampled kinds only (not with --sample or --slog)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "line_bench.sh: needs root (network namespaces, XDP)" >&2; exit 1; }
[ -x "$BENCH" ] || { echo "line_bench.sh: $BENCH missing; run make first" >&2; exit 1; }

PFX=${KS_NETNS_PREFIX:-ksl}
case $PFX in
*[!A-Za-z0-9_-]* | '') echo "line_bench.sh: KS_NETNS_PREFIX: letters, digits, - and _ only" >&2; exit 2 ;;
esac
GEN=$PFX-gen-$$ RX=$PFX-rx-$$
GEN_MAC=02:00:00:00:10:01 RX_MAC=02:00:00:00:10:02
cleanup() {
	ip netns del "$GEN" 2>/dev/null
	ip netns del "$RX" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# no IPv6 in either namespace: no neighbour discovery packets in the counts
ip netns add "$GEN" && ip netns add "$RX" &&
	ip netns exec "$GEN" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
	ip netns exec "$RX" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
	ip -n "$GEN" link add ksl0 address $GEN_MAC type veth peer name ksl1 address $RX_MAC netns "$RX" &&
	ip -n "$GEN" addr add 198.18.1.1/24 dev ksl0 &&
	ip -n "$RX" addr add 198.18.1.2/24 dev ksl1 &&
	ip -n "$GEN" link set ksl0 up && ip -n "$RX" link set ksl1 up &&
	ip -n "$GEN" link set lo up && ip -n "$RX" link set lo up &&
	# three devices that no packet reaches (two veth pairs left down: this
	# kernel has no dummy driver): bench line attaches the sending program,
	# the empty one and keysteer to one each (generic XDP), so that none
	# leaves the kernel's XDP dispatcher during the run and no burst waits
	# out the dispatcher's grace periods
	ip -n "$GEN" link add ksd0 type veth peer name ksd1 &&
	ip -n "$GEN" link add ksd2 type veth peer name ksd3 &&
	# the frames go to 198.19.255.9: not the receiver's, and it does not
	# forward, so its stack drops them after the route lookup
	ip netns exec "$RX" sysctl -qw net.ipv4.ip_forward=0 ||
	{ echo "line_bench.sh: making the namespaces and the veth pair failed" >&2; exit 1; }

args=(line --gen-ns "$GEN" --gen-if ksl0 --rx-ns "$RX" --rx-if ksl1 --rx-mac $RX_MAC
	--packets "$PACKETS" --trials "$TRIALS" --max-trials "$MAX_TRIALS" --width "$WIDTH"
	--seconds "$SECONDS_MAX")
[ -z "$NO_HOLD" ] && args+=(--hold-if ksd)
[ -n "$CPU" ] && args+=(--cpu "$CPU")
[ -n "$SAMPLE" ] && args+=(--sample "$SAMPLE")
[ -n "$LOGS" ] && args+=(--log-samples "$LOGS")
[ -n "$SLOG" ] && args+=(--slog)
[ -n "$OBJECT" ] && args+=(--object "$OBJECT")
[ -n "$RING" ] && args+=(--ring "$RING")
[ -n "$KEYS" ] && args+=(--keys "$KEYS")
[ -n "$PLACE" ] && args+=(--place-target "$PLACE")
"$BENCH" "${args[@]}" ${TRACE:+--trace "$TRACE"}
rc=$?
if [ -n "$JSON_OUT" ] && [ $rc = 0 ]; then
	"$BENCH" "${args[@]}" --json > "$JSON_OUT" || rc=$?
fi

if [ -n "$TGEN" ]; then
	if ! command -v xdp-trafficgen >/dev/null; then
		echo "line_bench.sh: xdp-trafficgen missing (apt-get install xdp-tools)" >&2
		exit 1
	fi
	# xdp-trafficgen udp needs the peer to take XDP frames: the empty
	# program on the receiver, then keysteer (via bench line's loader is
	# not needed: the figure is the generator's own rate)
	echo "xdp-trafficgen udp (IPv6 UDP to port 11211, payload of zeros), $PACKETS packets:"
	ip netns exec "$RX" ip link set ksl1 xdp obj "$ROOT/${OUT:-build}/ks_empty.bpf.o" sec xdp 2>&1 ||
		echo "line_bench.sh: attaching the empty program for xdp-trafficgen failed" >&2
	pin=()
	[ -n "$CPU" ] && pin=(taskset -c "$CPU")
	timeout 60 ip netns exec "$GEN" "${pin[@]}" xdp-trafficgen udp -m $RX_MAC -M $GEN_MAC \
		-p 11211 -n "$PACKETS" -t 1 ksl0 2>&1 | tail -n 5
	echo "xdp-trafficgen exit: ${PIPESTATUS[0]}"
	ip netns exec "$RX" ip link set ksl1 xdp off 2>/dev/null
fi
exit $rc
