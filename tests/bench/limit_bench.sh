#!/usr/bin/env bash
# limit_bench.sh - a runaway key against its shard, with and without a
# per-key rate limit (issue 26, `make bench-limit`; a benchmark, not a
# test; docs/limits.md "Measured"). One shard: memcached (one worker
# thread) in a namespace, the agent on its veth. A Zipf load of other keys
# (ZRATE gets/s over UDP, 10,000 keys of 100 bytes, preloaded) runs SECS
# seconds in each configuration, round after round (ROUNDS), the
# configurations interleaved:
#   alone     the Zipf load only (the agent attached, no limit);
#   runaway   plus one key at 10x LIMIT gets/s, no limit rule;
#   limited   the same with `limit runaway:1 LIMIT/s` in the pin file;
#   atlimit   the runaway's sender itself at LIMIT gets/s, no rule: what
#             the shard would see if the key behaved, the floor a limit
#             can reach (limited - atlimit is what the refusals cost).
# The runaway key's value is large (RVALUE, 20,000 bytes: a big hot item,
# many datagrams per reply) so that one memcached thread cannot serve the
# runaway's 10x on this 2-core machine, where ks_load reaches about
# 20,000 gets/s: the shard is saturated without the limit, which is the
# damage a limit is for. Reported per configuration, median over rounds
# with min-max: the other keys' p50 and p99 latency, p99 against `alone`
# of the same round, the share of the offered Zipf gets completed
# (ks_load has one get in flight per connection: a shard that stalls
# shows as gets not sent, which latency alone hides), and for the runaway
# its gets served per second, refused and timed out; in `limited`, the
# refusals ks_load saw against the datapath's refused count (they must be
# equal: a difference is printed as a FAIL line, exit 1).
#
#   tests/bench/limit_bench.sh [--rounds N] [--seconds S] [--limit R]
#       [--zipf-rate R] [--json FILE] [--configs "alone runaway ..."]
#       [--run-value BYTES] [--run-conns N] [--run-timeout SEC]
#       [--mc-threads N] [--zipf-cpu C] [--run-cpu C] [--mc-cpu C] [--drop]
#       [--agent-cpu C] [--rps-server MASK] [--rps-client MASK]
#       [--napi-server C] [--napi-client C]
#
# --drop refuses by XDP_DROP (KS_CFG_LIMIT_DROP set in the pinned config
# map; the agent itself always replies): the runaway's client then waits
# its --run-timeout for each refusal, and its timeouts are compared with
# the datapath's count. --*-cpu pin the Zipf sender, the runaway's sender
# and memcached (taskset), --agent-cpu the agent. --rps-server and
# --rps-client set RPS (rps_cpus, a hex CPU mask) on the receive queues
# of the server's and the client's veth: the stack's half of a received
# packet (IP, UDP, the socket) then runs on those CPUs, though the XDP
# program on a veth runs where the packet was sent (the peer's transmit
# schedules the veth's NAPI on the sending CPU), so the datapath's check
# and its refusal replies stay on the sender's CPU. --napi-server and
# --napi-client move that too: the veth's NAPI threaded (its `threaded`
# in sysfs) and its kernel thread, napi/IF-N, pinned to CPU C, so the
# server veth's XDP program, its XDP_TX replies and the stack's receive
# run on the shard's CPU, and the client's receive on the client's
# (re-pinned after each agent start: attaching XDP makes a new thread).
# Everything is named
# by PID and removed on every exit path (names prefixed KS_NS_PREFIX,
# default ks).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"
AGENT=$ROOT/${OUT:-build}/agent
LOAD=$ROOT/${OUT:-build}/ks_load
EMPTY=$ROOT/${OUT:-build}/ks_empty.bpf.o
PY=/usr/bin/python3
ROUNDS=5
SECS=5
LIMIT=1000
ZRATE=3000
JSON=
DROP=0
CONFS="alone runaway limited atlimit"
ZCPU='' RCPU='' MCPU='' ACPU='' RPS_S='' RPS_C='' NAPI_S='' NAPI_C=''
RCONNS=16 RTIMEOUT=2 RVALUE=20000 MCT=1
while [ $# -gt 0 ]; do
	case $1 in
	--drop) DROP=1; shift ;;
	--configs) CONFS=$2; shift 2 ;;
	--zipf-cpu) ZCPU=$2; shift 2 ;;
	--run-cpu) RCPU=$2; shift 2 ;;
	--mc-cpu) MCPU=$2; shift 2 ;;
	--agent-cpu) ACPU=$2; shift 2 ;;
	--rps-server) RPS_S=$2; shift 2 ;;
	--rps-client) RPS_C=$2; shift 2 ;;
	--napi-server) NAPI_S=$2; shift 2 ;;
	--napi-client) NAPI_C=$2; shift 2 ;;
	--run-conns) RCONNS=$2; shift 2 ;;
	--run-timeout) RTIMEOUT=$2; shift 2 ;;
	--run-value) RVALUE=$2; shift 2 ;;
	--mc-threads) MCT=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--limit) LIMIT=$2; shift 2 ;;
	--zipf-rate) ZRATE=$2; shift 2 ;;
	--json) JSON=$2; shift 2 ;;
	*) sed -n '/^#   tests/,/^#  *\[--mc/p' "$0" >&2; exit 2 ;;
	esac
done
RRATE=$((LIMIT * 10))
[ "$(id -u)" = 0 ] || { echo "limit_bench: needs root (namespaces, BPF)" >&2; exit 1; }
for t in memcached bpftool "$AGENT" "$LOAD"; do
	command -v "$t" >/dev/null || { echo "limit_bench: $t is missing (make deps; make)" >&2; exit 1; }
done

P=${KS_NS_PREFIX:-ks}
CNS=${P}_lbc_$$ SNS=${P}_lbs_$$ CIF=${P}_lc$$ SIF=${P}_ls$$
SADDR=198.18.0.2 PORT=11211
TMP=$(mktemp -d /tmp/ks_limit_bench.XXXXXX)
MC_PID='' AGENT_PID='' RUN_PID=''
cleanup() {
	ks_stop_pid "$RUN_PID" INT 5
	ks_stop_pid "$AGENT_PID" INT 10
	[ -e "/sys/fs/bpf/keysteer/$SIF" ] &&
		ks_in_ns "$SNS" "$AGENT" detach --iface "$SIF" >/dev/null 2>&1
	ks_stop_pid "$MC_PID" TERM 5
	ks_ns_delete "$CNS" "$SNS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ks_pair_create "$CNS" "$SNS" "$CIF" "$SIF" 198.18.0.1/24 "$SADDR/24" ||
	{ echo "limit_bench: cannot create the namespaces" >&2; exit 1; }
# the reply a refusal sends back is an XDP_TX frame: the client's veth
# takes it only with an XDP program of its own (steer_topo.sh does the same)
ip -n "$CNS" link set dev "$CIF" xdpdrv obj "$EMPTY" sec xdp ||
	{ echo "limit_bench: cannot attach $EMPTY to $CIF" >&2; exit 1; }
pin() { [ -n "$1" ] && echo taskset -c "$1"; }
# rps NS IF MASK: RPS on every receive queue of IF (ip netns exec, not
# ks_in_ns: it mounts the namespace's own sysfs, where IF is)
rps() {
	[ -n "$3" ] || return 0
	ip netns exec "$1" sh -c 'for q in /sys/class/net/$0/queues/rx-*/rps_cpus; do echo "$1" >"$q" || exit 1; done' "$2" "$3" ||
		{ echo "limit_bench: cannot set rps_cpus $3 on $2" >&2; exit 1; }
}
rps "$SNS" "$SIF" "$RPS_S"
rps "$CNS" "$CIF" "$RPS_C"
# napi NS IF CPU: IF's NAPI threaded, its threads (napi/IF-N; the name
# as ps shows it, cut at 15 bytes) pinned to CPU
napi() {
	local pid n=0 name
	[ -n "$3" ] || return 0
	ip netns exec "$1" sh -c 'echo 1 >/sys/class/net/$0/threaded' "$2" ||
		{ echo "limit_bench: cannot make $2's NAPI threaded" >&2; exit 1; }
	name=$(printf 'napi/%s-' "$2" | cut -c1-15)
	for pid in $(ps -e -o pid= -o comm= | awk -v n="$name" 'index($2, n) == 1 {print $1}'); do
		taskset -p -c "$3" "$pid" >/dev/null && n=$((n + 1))
	done
	[ "$n" -gt 0 ] || { echo "limit_bench: no NAPI thread of $2 to pin" >&2; exit 1; }
}
napi "$CNS" "$CIF" "$NAPI_C"
# shellcheck disable=SC2046 # pin's words, or none
ks_in_ns_bg "$SNS" $(pin "$MCPU") memcached -u nobody -l "$SADDR" -p "$PORT" -U "$PORT" \
	-m 256 -t "$MCT" -c 1024 </dev/null >/dev/null 2>&1
MC_PID=$KS_BG_PID
ks_wait_tcp "$SNS" "$SADDR" "$PORT" 5 || { echo "limit_bench: memcached did not start" >&2; exit 1; }

# agent PINS: the agent attached with the pin file PINS, waits for its
# first interval.
agent_up() {
	ks_stop_pid "$AGENT_PID" INT 10
	AGENT_PID=
	# shellcheck disable=SC2046
	ks_in_ns_bg "$SNS" $(pin "$ACPU") "$AGENT" run --iface "$SIF" --interval 1 --sample 8 \
		--pins "$1" -v </dev/null >"$TMP/agent.out" 2>&1
	AGENT_PID=$KS_BG_PID
	for _ in $(seq 300); do
		grep -q '^keysteer: #[0-9]* ' "$TMP/agent.out" && { napi "$SNS" "$SIF" "$NAPI_S"; return 0; }
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "limit_bench: the agent did not start: $(tail -n 3 "$TMP/agent.out")" >&2
	exit 1
}

# set_drop: KS_CFG_LIMIT_DROP (0x200) in ks_config.flags (bytes 36-39),
# so refused gets are dropped, not answered; the agent keeps bits it does
# not own when it rewrites the config.
set_drop() {
	ks_in_ns "$SNS" "$PY" - "/sys/fs/bpf/keysteer/$SIF/ks_config" <<'EOF'
import json, subprocess, sys
p = sys.argv[1]
v = json.loads(subprocess.run(["bpftool", "-j", "map", "lookup", "pinned", p, "key", "0", "0", "0", "0"],
                              check=True, capture_output=True, text=True).stdout)["value"]
b = [int(x, 16) for x in v]
f = int.from_bytes(bytes(b[36:40]), "little") | 0x200
b[36:40] = list(f.to_bytes(4, "little"))
subprocess.run(["bpftool", "map", "update", "pinned", p, "key", "0", "0", "0", "0", "value"] +
               [str(x) for x in b], check=True)
EOF
}

# mc_ticks: memcached's CPU time so far (utime + stime, clock ticks).
mc_ticks() {
	awk '{print $14 + $15}' "/proc/$MC_PID/stat"
}

# refused: the datapath's refused count of the limited key (0 when none).
refused() {
	ks_in_ns "$SNS" "$PY" - "/sys/fs/bpf/keysteer/$SIF" <<'EOF'
import json, subprocess, sys
def dump(name):
    return json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "pinned",
                                      sys.argv[1] + "/" + name], check=True,
                                     capture_output=True, text=True).stdout)
ents = dump("ks_limits")
if not ents:
    print(0)
    sys.exit()
sid = ents[0]["formatted"]["value"]["id"]
row = [e for e in dump("ks_limit_stats") if e["formatted"]["key"] == sid][0]
print(sum(c["value"]["refused"] for c in row["formatted"]["values"]))
EOF
}

zipf=(--server "$SADDR:$PORT" --proto udp --mix get=100 --keys 10000
	--zipf 0.99 --key-prefix key: --value-size 100 --conns 4 --timeout 2)
echo "limit_bench: preloading 10,000 keys and the runaway key" >&2
ks_in_ns "$CNS" "$LOAD" "${zipf[@]}" --preload --count 1 >/dev/null 2>&1 &&
	ks_in_ns "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto udp --mix get=100 \
		--keys 1 --key-prefix runaway: --value-size "$RVALUE" --preload --count 1 \
		>/dev/null 2>&1 || { echo "limit_bench: preload failed" >&2; exit 1; }

printf '# nothing limited\n' >"$TMP/none.txt"
printf 'limit runaway:1 %s/s\n' "$LIMIT" >"$TMP/limit.txt"

# one CONF ROUND: the Zipf load for SECS s, with the runaway beside it
# unless CONF is alone; JSON of both loads in $TMP/CONF.ROUND.*.json.
one() {
	local conf=$1 r=$2 before after t0
	if [ "$conf" = limited ]; then agent_up "$TMP/limit.txt"; else agent_up "$TMP/none.txt"; fi
	[ "$conf" = limited ] && [ "$DROP" = 1 ] && set_drop
	before=$(refused)
	t0=$(mc_ticks)
	if [ "$conf" != alone ]; then
		# shellcheck disable=SC2046
		ks_in_ns_bg "$CNS" $(pin "$RCPU") "$LOAD" --json --server "$SADDR:$PORT" --proto udp \
			--mix get=100 --keys 1 --key-prefix runaway: \
			--rate "$([ "$conf" = atlimit ] && echo "$LIMIT" || echo "$RRATE")" \
			--duration "$SECS" --conns "$RCONNS" --timeout "$RTIMEOUT" \
			>"$TMP/$conf.$r.run.json" 2>"$TMP/$conf.$r.run.err"
		RUN_PID=$KS_BG_PID
	fi
	# shellcheck disable=SC2046
	ks_in_ns "$CNS" $(pin "$ZCPU") "$LOAD" --json "${zipf[@]}" --rate "$ZRATE" --duration "$SECS" \
		--seed "$r" >"$TMP/$conf.$r.zipf.json" 2>"$TMP/$conf.$r.zipf.err" ||
		{ echo "limit_bench: the Zipf load failed: $(head -c 300 "$TMP/$conf.$r.zipf.err")" >&2; exit 1; }
	if [ -n "$RUN_PID" ]; then
		wait "$RUN_PID" ||
			{ echo "limit_bench: the runaway load failed: $(head -c 300 "$TMP/$conf.$r.run.err")" >&2; exit 1; }
		RUN_PID=
	fi
	after=$(refused)
	echo "$((after - before))" >"$TMP/$conf.$r.dp"
	echo "$(($(mc_ticks) - t0))" >"$TMP/$conf.$r.mcticks"
	echo "limit_bench: round $r $conf done" >&2
}

for r in $(seq "$ROUNDS"); do
	for conf in $CONFS; do
		one "$conf" "$r"
	done
done
ks_stop_pid "$AGENT_PID" INT 10
AGENT_PID=

"$PY" - "$TMP" "$ROUNDS" "$LIMIT" "$RRATE" "$ZRATE" "$SECS" "${JSON:-}" "$CONFS" "$DROP" "$RVALUE" "$(getconf CLK_TCK)" <<'EOF'
import json, os, statistics, sys
tmp, rounds, limit, rrate, zrate, secs, out, confs, drop, rvalue, hz = sys.argv[1:12]
rounds = int(rounds); drop = drop == "1"
def get(conf, r, kind):
    p = os.path.join(tmp, "%s.%d.%s.json" % (conf, r, kind))
    if not os.path.exists(p):
        return None
    d = json.load(open(p))
    return [o for o in d["ops"] if o["op"] == "get"][0] | {"secs": d["duration_s"]}
def spread(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}
res = {"limit_per_s": int(limit), "runaway_per_s": int(rrate), "runaway_value_bytes": int(rvalue),
       "zipf_per_s": int(zrate), "seconds": int(secs), "rounds": rounds,
       "refused_by": "drop" if drop else "reply", "confs": {}}
ok = True
print("one shard, memcached -t 1; Zipf %s gets/s over UDP (10,000 keys, 100-byte values); "
      "runaway key (%s-byte value) at %s gets/s, limit %s/s (refused by %s); %s s x %d rounds"
      % (zrate, rvalue, rrate, limit, res["refused_by"], secs, rounds))
print("median over rounds [min-max]; zipf done: the Zipf gets completed / offered")
print("mc cpu: memcached's CPU time over the configuration's run, as a share of one CPU")
print("%-8s %22s %24s %10s %10s %12s %12s %9s %7s" % ("config", "Zipf p50 us", "Zipf p99 us",
      "p99/alone", "zipf done", "run served/s", "run refused", "run t/o", "mc cpu"))
for conf in confs.split():
    p50 = []; p99 = []; ratio = []; done = []; served = []; errs = 0; ref = 0; to = 0; mcpu = []
    for r in range(1, rounds + 1):
        z = get(conf, r, "zipf"); a = get("alone", r, "zipf")
        p50.append(z["latency_us"]["p50"]); p99.append(z["latency_us"]["p99"])
        if a:
            ratio.append(z["latency_us"]["p99"] / a["latency_us"]["p99"])
        done.append((z["ops"] - z["errors"]) / (float(zrate) * float(secs)))
        mcpu.append(int(open(os.path.join(tmp, "%s.%d.mcticks" % (conf, r))).read())
                    / float(hz) / z["secs"])
        errs += z["errors"]
        run = get(conf, r, "run")
        if run:
            served.append((run["ops"] - run["errors"] - run["refused"]) / run["secs"])
            ref += run["refused"]; to += run["timeouts"]
            dp = int(open(os.path.join(tmp, "%s.%d.dp" % (conf, r))).read())
            # a drop leaves the client its timeout: there every refusal
            # is a timeout, and only refusals time out
            seen = run["timeouts"] if drop and conf == "limited" else run["refused"]
            if dp != seen:
                ok = False
                print("FAIL %s round %d: datapath refused %d, ks_load saw %d" % (conf, r, dp, seen))
    c = {"p50_us": spread(p50), "p99_us": spread(p99),
         "p99_over_alone": spread(ratio) if ratio else None,
         "zipf_done": spread(done), "zipf_errors": errs,
         "runaway_served_per_s": spread(served) if served else None,
         "runaway_refused": ref, "runaway_timeouts": to, "memcached_cpu": spread(mcpu)}
    res["confs"][conf] = c
    f = lambda s, fmt: (fmt + " [" + fmt + "-" + fmt + "]") % (s["median"], s["min"], s["max"])
    print("%-8s %22s %24s %10s %10s %12s %12d %9d %7s" % (conf, f(c["p50_us"], "%.0f"), f(c["p99_us"], "%.0f"),
          "%.2f" % c["p99_over_alone"]["median"] if ratio else "-", "%.3f" % c["zipf_done"]["median"],
          "%.0f" % c["runaway_served_per_s"]["median"] if served else "-", ref, to,
          "%.2f" % c["memcached_cpu"]["median"]))
res["refusals_exact"] = ok
print("refusals: datapath == ks_load in every limited round: %s" % ("yes" if ok else "NO"))
if out:
    json.dump(res, open(out, "w"), indent=1)
sys.exit(0 if ok else 1)
EOF
