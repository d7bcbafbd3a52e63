#!/usr/bin/env bash
# limit_tcp_bench.sh - a runaway key against its shard through libkeysteer
# over TCP, with and without the key's rate limit, per client process and
# fleet-wide (issue 26; the TCP part of `make bench-limit`; a benchmark,
# not a test; docs/limits.md "A runaway through libkeysteer over TCP").
# One shard: memcached (one worker thread) and etcd on the loopback of a
# namespace of the bench's own; the ring and the pins written by `agent
# ring set` and `agent pins set` (no agent: the clients enforce the rules
# they read). PROCS client processes (build/tests/ks_client_load), each
# with its own view (one per process, as in production): ZTHREADS
# threads of a Zipf load of other keys (ZRATE gets/s fleet-wide, 10,000
# keys of 100 bytes, preloaded) and RTHREADS threads of the runaway key
# (a 20,000-byte value) at 10x LIMIT gets/s fleet-wide, split evenly over
# the processes. Configurations, interleaved round after round:
#   alone     the Zipf load only;
#   runaway   plus the runaway, no rule;
#   limited   `limit runaway:1 LIMIT/s` in the fleet's pins, the clients
#             opened with limit_share=1: each process lets LIMIT/s
#             through, so the fleet PROCS x LIMIT (the default before
#             the views counted each other);
#   shared    the same rule, the clients opened with limit_share=PROCS:
#             each process LIMIT/PROCS, the fleet LIMIT;
#   fleet     the same rule, no limit_share: each process's view
#             registers for the key and takes LIMIT / the views
#             registered (docs/limits.md "How the limit is shared");
#   join      as fleet, but the last process starts SECS/3 s after the
#             others and runs SECS/3 s: a client joining and leaving;
#   atlimit   the runaway's senders at LIMIT gets/s fleet-wide, no rule:
#             the floor a fleet-wide limit can reach.
# Reported per configuration, median over rounds [min-max]: the other
# keys' p50 and p99 (p99 against `alone` of the same round), the share of
# the offered Zipf gets completed, the runaway's gets served per second
# fleet-wide and per process, refusals. Checked every round (a FAIL line
# and exit 1 if not): each process's refusals (-KEYSTEER_ELIMIT returned
# to its threads) equal its handles' own limit_refused count, and
# memcached's cmd_get moved by exactly the gets sent (all gets minus all
# refusals): a refused get never reached the shard.
#
#   tests/bench/limit_tcp_bench.sh [--rounds N] [--seconds S] [--limit R]
#       [--procs P] [--zipf-rate R] [--json FILE] [--configs "alone ..."]
#       [--run-value BYTES] [--run-threads T] [--zipf-threads T]
#
# Everything is named by PID and removed on every exit path; names and
# ports from KS_NS_PREFIX (default ks) and KS_PORT_BASE (default 42010).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"
AGENT=$ROOT/${OUT:-build}/agent
LOAD=$ROOT/${OUT:-build}/ks_load
CLOAD=$ROOT/${OUT:-build}/tests/ks_client_load
LIB=$ROOT/${OUT:-build}/libkeysteer.so
PY=/usr/bin/python3
ROUNDS=5 SECS=5 LIMIT=1000 ZRATE=3000 PROCS=4 JSON=''
CONFS="alone runaway limited shared fleet join atlimit"
RTHREADS=4 ZTHREADS=2 RVALUE=20000
while [ $# -gt 0 ]; do
	case $1 in
	--configs) CONFS=$2; shift 2 ;;
	--procs) PROCS=$2; shift 2 ;;
	--run-threads) RTHREADS=$2; shift 2 ;;
	--zipf-threads) ZTHREADS=$2; shift 2 ;;
	--run-value) RVALUE=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--limit) LIMIT=$2; shift 2 ;;
	--zipf-rate) ZRATE=$2; shift 2 ;;
	--json) JSON=$2; shift 2 ;;
	*) sed -n '/^#   tests/,/^#  *\[--run-value/p' "$0" >&2; exit 2 ;;
	esac
done
RRATE=$((LIMIT * 10))
[ "$(id -u)" = 0 ] || { echo "limit_tcp_bench: needs root (namespaces)" >&2; exit 1; }
for t in memcached etcd "$AGENT" "$LOAD" "$CLOAD" "$LIB"; do
	command -v "$t" >/dev/null || [ -e "$t" ] ||
		{ echo "limit_tcp_bench: $t is missing (make deps; make all tests)" >&2; exit 1; }
done

NS=${KS_NS_PREFIX:-ks}_ltb_$$
BASE=${KS_PORT_BASE:-42010}
MC_PORT=$BASE URL=http://127.0.0.1:$((BASE + 1)) PEER=$((BASE + 2))
CLUSTER=ltb
TMP=$(mktemp -d /tmp/ks_limit_tcp.XXXXXX)
MC_PID='' ETCD_PID='' CPIDS=()
cleanup() {
	local p
	for p in "${CPIDS[@]}"; do
		ks_stop_pid "$p" INT 5
	done
	ks_stop_pid "$ETCD_PID" TERM 5
	ks_stop_pid "$MC_PID" TERM 5
	ks_ns_delete "$NS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NS" && ip -n "$NS" link set lo up ||
	{ echo "limit_tcp_bench: cannot create namespace $NS" >&2; exit 1; }
ks_in_ns_bg "$NS" memcached -u nobody -l 127.0.0.1 -p "$MC_PORT" -U 0 -m 256 -t 1 -c 1024 \
	</dev/null >/dev/null 2>&1
MC_PID=$KS_BG_PID
ks_wait_tcp "$NS" 127.0.0.1 "$MC_PORT" 5 || { echo "limit_tcp_bench: memcached did not start" >&2; exit 1; }
ks_start_etcd "$NS" ltb "$URL" "$PEER" "$TMP" >"$TMP/etcd.start" 2>&1
ETCD_PID=$KS_ETCD_PID
[ -s "$TMP/etcd.start" ] && { echo "limit_tcp_bench: $(cat "$TMP/etcd.start")" >&2; exit 1; }
ks_in_ns "$NS" "$AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" \
	--shards "127.0.0.1:$MC_PORT" >"$TMP/ring.out" 2>&1 ||
	{ echo "limit_tcp_bench: ring set: $(cat "$TMP/ring.out")" >&2; exit 1; }
printf '# nothing limited\n' >"$TMP/none.txt"
printf 'limit runaway:1 %s/s\n' "$LIMIT" >"$TMP/limit.txt"
pins() {
	ks_in_ns "$NS" "$AGENT" pins set --etcd "$URL" --cluster "$CLUSTER" --pins "$1" \
		>"$TMP/pins.out" 2>&1 || { echo "limit_tcp_bench: pins set: $(cat "$TMP/pins.out")" >&2; exit 1; }
}

echo "limit_tcp_bench: preloading 10,000 keys and the runaway key" >&2
ks_in_ns "$NS" "$LOAD" --server "127.0.0.1:$MC_PORT" --proto tcp --mix get=100 --keys 10000 \
	--key-prefix key: --value-size 100 --preload --count 1 >/dev/null 2>&1 &&
	ks_in_ns "$NS" "$LOAD" --server "127.0.0.1:$MC_PORT" --proto tcp --mix get=100 \
		--keys 1 --key-prefix runaway: --value-size "$RVALUE" --preload --count 1 \
		>/dev/null 2>&1 || { echo "limit_tcp_bench: preload failed" >&2; exit 1; }

# cmd_get: memcached's own count of gets served.
cmd_get() {
	ks_in_ns "$NS" "$PY" "$ROOT/user/scripts/mc_stats.py" snap "127.0.0.1:$MC_PORT" |
		"$PY" -c 'import json, sys; print(json.load(sys.stdin)["servers"][sys.argv[1]]["cmd_get"])' \
			"127.0.0.1:$MC_PORT"
}

# one CONF ROUND: PROCS client processes for SECS s; each one's JSON in
# $TMP/CONF.ROUND.P.json, memcached's cmd_get delta in $TMP/CONF.ROUND.mc.
one() {
	local conf=$1 r=$2 p before after spec rate
	case $conf in
	limited | shared | fleet | join) pins "$TMP/limit.txt" ;;
	*) pins "$TMP/none.txt" ;;
	esac
	spec="etcd=$URL cluster=$CLUSTER timeout_ms=2000"
	[ "$conf" = limited ] && spec="$spec limit_share=1"
	[ "$conf" = shared ] && spec="$spec limit_share=$PROCS"
	rate=$([ "$conf" = atlimit ] && echo "$LIMIT" || echo "$RRATE")
	before=$(cmd_get)
	CPIDS=()
	for p in $(seq "$PROCS"); do
		dur=$SECS
		if [ "$conf" = join ] && [ "$p" = "$PROCS" ]; then
			# a bench, not a test: the joiner's schedule is the
			# measurement's own (a third in, for a third)
			sleep "$(echo "$SECS / 3" | bc -l)"
			dur=$(echo "$SECS / 3" | bc -l)
		fi
		args=(--spec "$spec" --threads "$ZTHREADS" --keys 10000 --zipf 0.99 --prefix key:
			--rate "$(( ZRATE / PROCS ))" --duration "$dur" --seed "$((r * 100 + p))")
		[ "$conf" != alone ] && args+=(--runaway runaway:1 --runaway-threads "$RTHREADS"
			--runaway-rate "$(( rate / PROCS ))")
		ks_in_ns_bg "$NS" "$CLOAD" "${args[@]}" >"$TMP/$conf.$r.$p.json" 2>"$TMP/$conf.$r.$p.err"
		CPIDS+=("$KS_BG_PID")
	done
	for p in "${CPIDS[@]}"; do
		# exit 1 is a get that failed (reported, not fatal); 2, 3: no run
		wait "$p"
		[ $? -ge 2 ] && { echo "limit_tcp_bench: a client failed: $(head -c 300 "$TMP/$conf.$r".*.err)" >&2; exit 1; }
	done
	CPIDS=()
	after=$(cmd_get)
	echo "$((after - before))" >"$TMP/$conf.$r.mc"
	echo "limit_tcp_bench: round $r $conf done" >&2
}

for r in $(seq "$ROUNDS"); do
	for conf in $CONFS; do
		one "$conf" "$r"
	done
done

"$PY" - "$TMP" "$ROUNDS" "$LIMIT" "$RRATE" "$ZRATE" "$SECS" "${JSON:-}" "$CONFS" "$PROCS" "$RVALUE" <<'EOF'
import json, os, statistics, sys
tmp, rounds, limit, rrate, zrate, secs, out, confs, procs, rvalue = sys.argv[1:11]
rounds, procs, secs, limit = int(rounds), int(procs), float(secs), int(limit)
def load(conf, r, p):
    return json.load(open(os.path.join(tmp, "%s.%d.%d.json" % (conf, r, p))))
def spread(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}
res = {"limit_per_s": limit, "runaway_per_s": int(rrate), "runaway_value_bytes": int(rvalue),
       "zipf_per_s": int(zrate), "seconds": secs, "rounds": rounds, "procs": procs, "confs": {}}
ok = True
print("one shard, memcached -t 1, over TCP through libkeysteer; %d client processes; "
      "Zipf %s gets/s (10,000 keys, 100-byte values); runaway key (%s-byte value) at %s gets/s, "
      "limit %d/s; %g s x %d rounds" % (procs, zrate, rvalue, rrate, limit, secs, rounds))
print("median over rounds [min-max]; zipf done: the Zipf gets completed / offered; "
      "served/s: the runaway's, fleet-wide and [per process, min-max over processes and rounds]")
print("%-8s %18s %22s %9s %9s %14s %16s %10s" % ("config", "Zipf p50 us", "Zipf p99 us",
      "p99/alone", "zipf done", "run served/s", "per process", "refused"))
for conf in confs.split():
    p50 = []; p99 = []; ratio = []; done = []; served = []; perproc = []; ref = 0; errs = 0
    for r in range(1, rounds + 1):
        ds = [load(conf, r, p) for p in range(1, procs + 1)]
        # the other keys' latency: each process's own percentiles, the
        # fleet's taken as the median of the processes' (one histogram
        # each; their p99s are close as every process runs the same load)
        o = [d.get("others") or {"gets": d["gets"], "served": d["hits"] + d["misses"],
                                 "latency_us": d["latency_us"]} for d in ds]
        p50.append(statistics.median(x["latency_us"]["p50"] for x in o))
        p99.append(statistics.median(x["latency_us"]["p99"] for x in o))
        if conf != "alone" and "alone" in confs.split():
            a = [load("alone", r, p)["latency_us"]["p99"] for p in range(1, procs + 1)]
            ratio.append(p99[-1] / statistics.median(a))
        done.append(sum(x["served"] for x in o) / (float(zrate) * secs))
        sent = 0
        for p, d in enumerate(ds, 1):
            errs += d["errors"]
            sent += d["gets"] - d["refused"]
            if d["refused"] != d["limit_refused"]:
                ok = False
                print("FAIL %s round %d process %d: refused %d, its handles' limit_refused %d"
                      % (conf, r, p, d["refused"], d["limit_refused"]))
        mc = int(open(os.path.join(tmp, "%s.%d.mc" % (conf, r))).read())
        if mc != sent:
            ok = False
            print("FAIL %s round %d: memcached cmd_get +%d, the clients sent %d (errors %d)"
                  % (conf, r, mc, sent, errs))
        run = [d["runaway"] for d in ds if "runaway" in d]
        if run and conf in ("limited", "shared", "fleet", "join"):
            # per client: what each process saw refused (= its handles'
            # own count, checked above) and served
            print("  %s round %d, per process: refused %s; served/s %s" % (
                conf, r, " ".join(str(x["refused"]) for x in run),
                " ".join("%.0f" % (x["served"] / secs) for x in run)))
            res.setdefault("per_process", []).append(
                {"conf": conf, "round": r, "refused": [x["refused"] for x in run],
                 "limit_refused": [d["limit_refused"] for d in ds],
                 "served": [x["served"] for x in run], "memcached_cmd_get": mc, "sent": sent})
        if run:
            served.append(sum(x["served"] for x in run) / secs)
            perproc += [x["served"] / secs for x in run]
            ref += sum(x["refused"] for x in run)
    c = {"p50_us": spread(p50), "p99_us": spread(p99),
         "p99_over_alone": spread(ratio) if ratio else None,
         "zipf_done": spread(done), "errors": errs,
         "runaway_served_per_s": spread(served) if served else None,
         "runaway_served_per_s_per_process": spread(perproc) if perproc else None,
         "runaway_refused": ref}
    res["confs"][conf] = c
    f = lambda s, fmt: (fmt + " [" + fmt + "-" + fmt + "]") % (s["median"], s["min"], s["max"])
    print("%-8s %18s %22s %9s %9s %14s %16s %10d" % (conf, f(c["p50_us"], "%.0f"), f(c["p99_us"], "%.0f"),
          "%.2f" % c["p99_over_alone"]["median"] if ratio else "-", "%.3f" % c["zipf_done"]["median"],
          "%.0f" % c["runaway_served_per_s"]["median"] if served else "-",
          ("%.0f-%.0f" % (c["runaway_served_per_s_per_process"]["min"],
                          c["runaway_served_per_s_per_process"]["max"])) if perproc else "-", ref))
res["counts_exact"] = ok
print("refusals: every process's == its handles' limit_refused, memcached's cmd_get == gets sent, "
      "every round: %s" % ("yes" if ok else "NO"))
if out:
    json.dump(res, open(out, "w"), indent=1)
sys.exit(0 if ok else 1)
EOF
