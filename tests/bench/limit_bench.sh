#!/usr/bin/env bash
# limit_bench.sh - a runaway key against its shard, with and without a
# per-key rate limit (issue 26, `make bench-limit`; a benchmark, not a
# test; docs/limits.md). One shard: memcached (one worker thread, so the
# runaway competes for what the shard can serve) in a namespace, the agent
# on its veth. A Zipf load of other keys (ZRATE gets/s over UDP, 10,000
# keys, preloaded) runs SECS seconds in each of three configurations,
# round after round (ROUNDS):
#   alone     the Zipf load only (the agent attached, no limit);
#   runaway   plus one key at RRATE gets/s (10x its limit), no limit rule;
#   limited   the same with `limit runaway:1 LIMIT/s` in the pin file.
# Reported per configuration, median over rounds: the other keys' p99 and
# p50 latency, ratios against `alone` of the same round, and for the
# runaway its gets answered, refused and timed out; in `limited`, the
# refusals ks_load saw against the datapath's refused count (they must be
# equal: a difference is printed as a FAIL line).
#
#   tests/bench/limit_bench.sh [--rounds N] [--seconds S] [--limit R]
#                              [--zipf-rate R] [--json FILE]
#
# Everything is named by PID and removed on every exit path.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"
AGENT=$ROOT/${OUT:-build}/agent
LOAD=$ROOT/${OUT:-build}/ks_load
EMPTY=$ROOT/${OUT:-build}/ks_empty.bpf.o
PY=/usr/bin/python3
ROUNDS=3
SECS=8
LIMIT=2000
ZRATE=3000
JSON=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--limit) LIMIT=$2; shift 2 ;;
	--zipf-rate) ZRATE=$2; shift 2 ;;
	--json) JSON=$2; shift 2 ;;
	*) echo "usage: $0 [--rounds N] [--seconds S] [--limit R] [--zipf-rate R] [--json FILE]" >&2; exit 2 ;;
	esac
done
RRATE=$((LIMIT * 10))
[ "$(id -u)" = 0 ] || { echo "limit_bench: needs root (namespaces, BPF)" >&2; exit 1; }
for t in memcached bpftool "$AGENT" "$LOAD"; do
	command -v "$t" >/dev/null || { echo "limit_bench: $t is missing (make deps; make)" >&2; exit 1; }
done

CNS=ks_lbc_$$ SNS=ks_lbs_$$ CIF=ks_lc$$ SIF=ks_ls$$
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
ks_in_ns_bg "$SNS" memcached -u nobody -l "$SADDR" -p "$PORT" -U "$PORT" \
	-m 256 -t 1 -c 1024 </dev/null >/dev/null 2>&1
MC_PID=$KS_BG_PID
ks_wait_tcp "$SNS" "$SADDR" "$PORT" 5 || { echo "limit_bench: memcached did not start" >&2; exit 1; }

# agent PINS: the agent attached with the pin file PINS, waits for its
# first interval.
agent_up() {
	ks_stop_pid "$AGENT_PID" INT 10
	AGENT_PID=
	ks_in_ns_bg "$SNS" "$AGENT" run --iface "$SIF" --interval 1 --sample 8 \
		--pins "$1" -v </dev/null >"$TMP/agent.out" 2>&1
	AGENT_PID=$KS_BG_PID
	for _ in $(seq 300); do
		grep -q '^keysteer: #[0-9]* ' "$TMP/agent.out" && return 0
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "limit_bench: the agent did not start: $(tail -n 3 "$TMP/agent.out")" >&2
	exit 1
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
		--keys 1 --key-prefix runaway: --value-size 100 --preload --count 1 \
		>/dev/null 2>&1 || { echo "limit_bench: preload failed" >&2; exit 1; }

printf '# nothing limited\n' >"$TMP/none.txt"
printf 'limit runaway:1 %s/s\n' "$LIMIT" >"$TMP/limit.txt"

# one CONF ROUND: the Zipf load for SECS s, with the runaway beside it
# unless CONF is alone; JSON of both loads in $TMP/CONF.ROUND.*.json.
one() {
	local conf=$1 r=$2 before after
	if [ "$conf" = limited ]; then agent_up "$TMP/limit.txt"; else agent_up "$TMP/none.txt"; fi
	before=$(refused)
	if [ "$conf" != alone ]; then
		ks_in_ns_bg "$CNS" "$LOAD" --json --server "$SADDR:$PORT" --proto udp \
			--mix get=100 --keys 1 --key-prefix runaway: --rate "$RRATE" \
			--duration "$SECS" --conns 8 --timeout 2 \
			>"$TMP/$conf.$r.run.json" 2>"$TMP/$conf.$r.run.err"
		RUN_PID=$KS_BG_PID
	fi
	ks_in_ns "$CNS" "$LOAD" --json "${zipf[@]}" --rate "$ZRATE" --duration "$SECS" \
		--seed "$r" >"$TMP/$conf.$r.zipf.json" 2>"$TMP/$conf.$r.zipf.err" ||
		{ echo "limit_bench: the Zipf load failed: $(head -c 300 "$TMP/$conf.$r.zipf.err")" >&2; exit 1; }
	if [ -n "$RUN_PID" ]; then
		wait "$RUN_PID" ||
			{ echo "limit_bench: the runaway load failed: $(head -c 300 "$TMP/$conf.$r.run.err")" >&2; exit 1; }
		RUN_PID=
	fi
	after=$(refused)
	echo "$((after - before))" >"$TMP/$conf.$r.dp"
	echo "limit_bench: round $r $conf done" >&2
}

for r in $(seq "$ROUNDS"); do
	for conf in alone runaway limited; do
		one "$conf" "$r"
	done
done
ks_stop_pid "$AGENT_PID" INT 10
AGENT_PID=

"$PY" - "$TMP" "$ROUNDS" "$LIMIT" "$RRATE" "$ZRATE" "$SECS" "${JSON:-}" <<'EOF'
import json, os, statistics, sys
tmp, rounds, limit, rrate, zrate, secs, out = sys.argv[1:8]
rounds = int(rounds)
def get(conf, r, kind):
    p = os.path.join(tmp, "%s.%d.%s.json" % (conf, r, kind))
    if not os.path.exists(p):
        return None
    d = json.load(open(p))
    return [o for o in d["ops"] if o["op"] == "get"][0] | {"secs": d["duration_s"]}
res = {"limit_per_s": int(limit), "runaway_per_s": int(rrate),
       "zipf_per_s": int(zrate), "seconds": int(secs), "rounds": rounds,
       "confs": {}}
ok = True
print("one shard, memcached -t 1; Zipf %s gets/s over UDP (10,000 keys); runaway key at %s gets/s, limit %s/s; %s s x %d rounds"
      % (zrate, rrate, limit, secs, rounds))
print("%-8s %10s %10s %10s %9s %9s %12s %12s %12s" % ("config", "p50 us", "p99 us",
      "p99/alone", "errors", "zipf ops", "run answered", "run refused", "run timeouts"))
for conf in ("alone", "runaway", "limited"):
    p50 = []; p99 = []; ratio = []; errs = 0; ops = 0; ans = 0; ref = 0; to = 0
    for r in range(1, rounds + 1):
        z = get(conf, r, "zipf"); a = get("alone", r, "zipf")
        p50.append(z["latency_us"]["p50"]); p99.append(z["latency_us"]["p99"])
        ratio.append(z["latency_us"]["p99"] / a["latency_us"]["p99"])
        errs += z["errors"]; ops += z["ops"]
        run = get(conf, r, "run")
        if run:
            ans += run["ops"] - run["errors"] - run["refused"]
            ref += run["refused"]; to += run["timeouts"]
            dp = int(open(os.path.join(tmp, "%s.%d.dp" % (conf, r))).read())
            if dp != run["refused"]:
                ok = False
                print("FAIL %s round %d: datapath refused %d, ks_load saw %d" % (conf, r, dp, run["refused"]))
    c = {"p50_us": statistics.median(p50), "p99_us": statistics.median(p99),
         "p99_over_alone": statistics.median(ratio), "zipf_errors": errs,
         "zipf_ops": ops, "runaway_answered": ans, "runaway_refused": ref,
         "runaway_timeouts": to}
    res["confs"][conf] = c
    print("%-8s %10.1f %10.1f %10.2f %9d %9d %12d %12d %12d" % (conf, c["p50_us"], c["p99_us"],
          c["p99_over_alone"], errs, ops, ans, ref, to))
res["refusals_exact"] = ok
print("refusals: datapath == ks_load in every limited round: %s" % ("yes" if ok else "NO"))
if out:
    json.dump(res, open(out, "w"), indent=1)
sys.exit(0 if ok else 1)
EOF
