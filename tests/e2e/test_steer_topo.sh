#!/usr/bin/env bash
# test_steer_topo.sh - the steering topology of steer_topo.sh, without any
# agent: 4 shards and 2 replicas on one bridge. Every host must reach every
# memcached (a 'version' over TCP from each namespace; the client is the
# other end of its own connections); ks_load over UDP, routed with ketama
# from the client, must move each shard's own cmd_get by exactly what it says
# it sent there, with every reply from the shard it asked (none steered)
# and nothing at the replicas. ks_fresh.py must find no steered and no stale
# reads; against a stand-in for steering (a relay that answers from another
# port with a replica's value) it must find every read steered, re-armed at
# once when the relay copies each write to the replica before acknowledging
# it, and stale when the replica keeps an old value; ks_load must count the
# relay's replies as steered. steer_topo_down must leave no namespace,
# interface, process or file behind, and be safe to call twice.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init steer_topo
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
LOAD=$E2E_ROOT/${OUT:-build}/ks_load
MC_STATS=$E2E_ROOT/user/scripts/mc_stats.py

topo_cleanup() {
	local rc=$?
	[ -n "${FAKE_PID:-}" ] && ks_stop_pid "$FAKE_PID" TERM 3
	steer_topo_down
	(exit "$rc")
	e2e_cleanup
}
trap topo_cleanup EXIT

if [ ! -x "$LOAD" ]; then
	fail steer_topo "$LOAD is missing; run 'make' first"
	exit 1
fi
if ! steer_topo_up 4 2; then
	fail steer_topo_up "the topology did not come up (see above)"
	exit 1
fi

# ---- names and the pass-through XDP program on the shard ports
check_up() {
	local why="" i ifn seen=" "
	for i in "${!STEER_SHARD_IF[@]}"; do
		ifn=${STEER_SHARD_IF[i]}
		[ "${#ifn}" -le 15 ] || why="${why:+$why, }$ifn is longer than 15"
		[[ "$seen" == *" $ifn "* ]] && why="${why:+$why, }$ifn is used twice"
		seen+="$ifn "
		ip -n "${STEER_SHARD_NS[i]}" link show dev "$ifn" >/dev/null 2>&1 ||
			why="${why:+$why, }$ifn missing in ${STEER_SHARD_NS[i]}"
		grep -q 'prog/xdp' <<<"$(ip -n "$STEER_BR_NS" -d link show dev "kbs$((i + 1))_$$")" ||
			why="${why:+$why, }no XDP program on the bridge port of $ifn"
	done
	[ "$(wc -l <"$STEER_SHARDS_FILE")" -eq 4 ] || why="${why:+$why, }shards file has not 4 lines"
	[ "$STEER_REPLICAS" = "198.18.2.101:11211,198.18.2.102:11211" ] ||
		why="${why:+$why, }replicas list is '$STEER_REPLICAS'"
	if [ -z "$why" ]; then pass steer_topo_up; else fail steer_topo_up "$why"; fi
}
check_up

ALL_MC=()
for a in "${STEER_SHARD_ADDR[@]}" "${STEER_REPLICA_ADDR[@]}"; do
	ALL_MC+=("$a:$STEER_PORT")
done
SHARD_MC=("${ALL_MC[@]:0:4}")
REPLICA_MC=("${ALL_MC[@]:4:2}")

# ---- every namespace reaches every memcached
check_reach() {
	local why="" ns
	for ns in "$STEER_CLIENT_NS" "${STEER_SHARD_NS[@]}" "${STEER_REPLICA_NS[@]}"; do
		if ! ks_in_ns "$ns" "$PY" "$MC_STATS" version "${ALL_MC[@]}" \
			>"$E2E_TMP/reach.$ns" 2>&1; then
			why="${why:+$why; }from $ns: $(head -c 200 "$E2E_TMP/reach.$ns")"
		fi
	done
	if [ -z "$why" ]; then pass steer_topo_reach; else fail steer_topo_reach "$why"; fi
}
check_reach

# in_client_load OUT ARGS...: ks_load --json in the client namespace.
in_client_load() {
	local out=$1
	shift
	ks_in_ns "$STEER_CLIENT_NS" nice -n "$KS_NICE" "$LOAD" --json "$@" >"$out" 2>"$out.err"
}

# ---- ks_load over UDP with ketama: memcached's counters agree with it
check_load() {
	local name=steer_topo_ketama_udp_load out=$E2E_TMP/load.json why
	ks_in_ns "$STEER_CLIENT_NS" "$PY" "$MC_STATS" snap "${ALL_MC[@]}" >"$E2E_TMP/before.json" ||
		{ fail "$name" "stats failed"; return; }
	if ! in_client_load "$out" --shards-file "$STEER_SHARDS_FILE" --distribution ketama \
		--proto udp --mix get=80,mget=20 --mget-size 4 --keys 10000 --flash flash:0.2 \
		--duration 3 --rate 4000 --conns 2; then
		fail "$name" "ks_load failed: $(head -c 300 "$out.err")"
		return
	fi
	ks_in_ns "$STEER_CLIENT_NS" "$PY" "$MC_STATS" snap "${ALL_MC[@]}" >"$E2E_TMP/after.json" ||
		{ fail "$name" "stats failed"; return; }
	"$PY" "$MC_STATS" diff "$E2E_TMP/before.json" "$E2E_TMP/after.json" \
		--group "shards=$(IFS=,; echo "${SHARD_MC[*]}")" \
		--group "replicas=$(IFS=,; echo "${REPLICA_MC[*]}")" >"$E2E_TMP/diff.json"
	why=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1])); st = json.load(open(sys.argv[2]))
replicas = sys.argv[3].split(",")
out = []
errs = sum(o["errors"] for o in d["ops"])
msgs = sum(o["msgs"] for o in d["ops"])
if errs: out.append("%d errors" % errs)
for sh in d["shards"]:
    moved = st["deltas"][sh["addr"]]["cmd_get"]
    print("  %s: ks_load sent get_keys %d, cmd_get +%d" % (sh["addr"], sh["get_keys"], moved),
          file=sys.stderr)
    if moved != sh["get_keys"]: out.append("%s cmd_get +%d, sent %d" % (sh["addr"], moved, sh["get_keys"]))
    if not sh["get_keys"]: out.append("%s got nothing" % sh["addr"])
for r in replicas:
    if st["deltas"][r]["cmd_get"]: out.append("replica %s saw %d gets" % (r, st["deltas"][r]["cmd_get"]))
src = d["replies_by_source"]
if d["steered"] or set(src) - {s["addr"] for s in d["shards"]} or sum(src.values()) != msgs:
    out.append("replies by source %s, steered %d, %d requests" % (src, d["steered"], msgs))
g = st["groups"]["shards"]["cmd_get"]
print("  %d ops; shards cmd_get busiest/mean %.2f" % (sum(o["ops"] for o in d["ops"]),
      g["busiest_over_mean"]), file=sys.stderr)
print(", ".join(out))
' "$out" "$E2E_TMP/diff.json" "$(IFS=,; echo "${REPLICA_MC[*]}")" 2>"$E2E_TMP/load.notes") ||
		why="cannot compare: $(tail -n 1 "$E2E_TMP/load.notes")"
	cat "$E2E_TMP/load.notes"
	if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
}
check_load

# ---- ks_fresh.py, the freshness checker, without any agent: no steering
# means no steered and no stale reads.
FRESH=$E2E_DIR/ks_fresh.py
OWNER=${STEER_SHARD_ADDR[0]}
REPLICA=${STEER_REPLICA_ADDR[0]}:$STEER_PORT

# fresh_check NAME WANT_RC OUT CHECK: CHECK is Python over the document d
# printing what is wrong (nothing when right).
fresh_check() {
	local name=$1 want=$2 out=$3 check=$4 rc why
	rc=$(cat "$out.rc")
	why=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = d["rearm_ms_percentiles"]
print("  %s: %d reads (%d steered, %d stale, %d misses, %d timeouts), %d writes, rearm %s" %
      (sys.argv[3], d["reads"], d["steered_reads"], d["stale_reads"], d["misses"],
       d["timeouts"], d["writes"], p and "p50 %.2f ms max %.2f ms" % (p["p50"], p["max"])),
      file=sys.stderr)
out = []
if d["reads"] < 100 or d["writes"] < 10: out.append("too few reads or writes")
if d["timeouts"] or d["errors"]: out.append("timeouts %d, errors %s" % (d["timeouts"], d["errors"]))
exec(sys.argv[2])
print(", ".join(out))
' "$out" "$check" "$name" 2>"$out.notes") || why="bad JSON: $(head -c 200 "$out")"
	cat "$out.notes"
	[ "$rc" = "$want" ] || why="${why:+$why, }exit $rc, want $want"
	if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
}

# fresh OUT ARGS...: ks_fresh.py in the client namespace; exit status in OUT.rc.
fresh() {
	local out=$1
	shift
	ks_in_ns "$STEER_CLIENT_NS" "$PY" "$FRESH" --key fresh:hot --duration 2 \
		--readers 3 --write-interval 0.05 "$@" >"$out" 2>"$out.err"
	echo $? >"$out.rc"
}

fresh "$E2E_TMP/fresh.json" --owner "$OWNER:$STEER_PORT"
fresh_check ks_fresh_no_steering 0 "$E2E_TMP/fresh.json" '
if d["steered_reads"] or d["stale_reads"] or d["misses"]: out.append("steered, stale or missed reads")
if d["writes_never_rearmed"] != d["writes"]: out.append("re-armed writes without steering")'

# A stand-in for steering, to see the checker catch what it is there for:
# a relay on the owner's address (port FAKE) passes sets to the owner's
# memcached and gets to a replica's, whose replies it sends back from port
# FAKE+1 (a reply from another address: steered). With 'sync' it also
# passes every set to the replica before acknowledging it (steering that
# is never stale, re-armed at once); with 'stale' the replica keeps an old
# value.
FAKE=11300
cat >"$E2E_TMP/fake_steer.py" <<'PYEOF'
import select, socket, sys, threading, time
addr, port, mc, replica, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rhost, rport = replica.split(":")
end = time.monotonic() + 20  # bounded, whatever happens to the test

def exchange(conn, data):
    conn.sendall(data)
    buf = b""
    while not buf.endswith(b"\r\n"):
        buf += conn.recv(4096)
    return buf

def serve_tcp(client):
    owner = socket.create_connection((addr, mc))
    rep = socket.create_connection((rhost, int(rport)))
    buf = b""
    while time.monotonic() < end:
        d = client.recv(65536)
        if not d:
            return
        buf += d
        while b"\r\n" in buf:
            line, rest = buf.split(b"\r\n", 1)
            need = int(line.split()[4]) + 2
            if len(rest) < need:
                break
            cmd, buf = line + b"\r\n" + rest[:need], rest[need:]
            if mode == "sync":
                exchange(rep, cmd)
            client.sendall(exchange(owner, cmd))

lst = socket.socket()
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind((addr, port))
lst.listen(4)
threading.Thread(target=lambda: [threading.Thread(target=serve_tcp, args=(lst.accept()[0],),
                 daemon=True).start() for _ in range(4)], daemon=True).start()
def udp(p):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, p))
    return s
inp, out, up = udp(port), udp(port + 1), udp(0)
client = {}
while time.monotonic() < end:
    r, _, _ = select.select([inp, up], [], [], 0.5)
    for s in r:
        d, src = s.recvfrom(65536)
        if s is inp:
            client[d[:2]] = src
            up.sendto(d, (rhost, int(rport)))
        elif d[:2] in client:
            out.sendto(d, client[d[:2]])
PYEOF
FAKE_PID=
fake_start() {
	ks_in_ns_bg "${STEER_SHARD_NS[0]}" "$PY" "$E2E_TMP/fake_steer.py" "$OWNER" "$FAKE" \
		"$STEER_PORT" "$REPLICA" "$1" </dev/null >"$E2E_TMP/fake.$1.out" 2>&1
	FAKE_PID=$KS_BG_PID
	ks_wait_tcp "${STEER_SHARD_NS[0]}" "$OWNER" "$FAKE" 5
}
fake_stop() {
	ks_stop_pid "$FAKE_PID" TERM 3
	FAKE_PID=
}

fake_start sync
fresh "$E2E_TMP/fresh_sync.json" --owner "$OWNER:$FAKE"
fake_stop
fresh_check ks_fresh_rearm_with_fake_steering 0 "$E2E_TMP/fresh_sync.json" '
if d["steered_reads"] != d["reads"] or d["stale_reads"]: out.append("want every read steered, none stale")
if d["writes_never_rearmed"] > 1: out.append("%d writes never re-armed" % d["writes_never_rearmed"])
if not p or p["p50"] > 50: out.append("rearm %s, want p50 <= 50 ms" % p)'

# The replica holds "v0-": every steered read is older than the first write.
# shellcheck disable=SC2016 # expanded by the inner bash
ks_in_ns "$STEER_CLIENT_NS" bash -c 'exec 3<>/dev/tcp/${0%:*}/${0#*:}; printf "set fresh:hot 0 0 3\r\nv0-\r\n" >&3; read -r l <&3' "$REPLICA"
fake_start stale
fresh "$E2E_TMP/fresh_stale.json" --owner "$OWNER:$FAKE"
fake_stop
fresh_check ks_fresh_detects_stale_reads 1 "$E2E_TMP/fresh_stale.json" '
if d["stale_reads"] != d["reads"] or d["steered_reads"] != d["reads"]: out.append("want every read stale and steered")
if not d["stale_examples"] or d["stale_examples"][0]["got"] != 0: out.append("examples %s" % d["stale_examples"][:1])'

# ks_load takes the replies of the fake steering, from another address
# than it asked, and counts them as steered, by source.
check_load_steered() {
	local name=ks_load_counts_steered_replies out=$E2E_TMP/steered.json why
	fake_start sync
	in_client_load "$out" --server "$OWNER:$FAKE" --proto udp --mix get=90,mget=10 \
		--keys 100 --count 1000 --rate 0 --conns 2
	fake_stop
	why=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1])); relay = sys.argv[2]
errs = sum(o["errors"] for o in d["ops"]); msgs = sum(o["msgs"] for o in d["ops"])
out = []
print("  steered %d of %d, by source %s, the first after %s ms" %
      (d["steered"], msgs, d["replies_by_source"], d["first_steered_ms"]), file=sys.stderr)
if errs: out.append("%d errors" % errs)
if d["steered"] != msgs: out.append("steered %d, want %d" % (d["steered"], msgs))
if d["replies_by_source"] != {relay: msgs}: out.append("by source %s" % d["replies_by_source"])
f = d["first_steered_ms"]
if f is None or not 0 <= f <= d["duration_s"] * 1000: out.append("first_steered_ms %s" % f)
print(", ".join(out))
' "$out" "$OWNER:$((FAKE + 1))" 2>"$out.notes") || why="bad JSON: $(head -c 300 "$out.err")"
	cat "$out.notes"
	if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
}
check_load_steered

# ---- teardown leaves nothing behind, and a second call is harmless
check_down() {
	local why="" pids=("${STEER_MC_PIDS[@]}") tmp=$STEER_TMP pid left
	steer_topo_down
	local ours="_$$"'( |$)'
	left=$(ip netns list | grep -E "$ours")
	[ -z "$left" ] || why="namespaces left: $(echo "$left" | tr '\n' ' ')"
	left=$(ip -o link show | grep -E "_$$[@:]")
	[ -z "$left" ] || why="${why:+$why, }interfaces left in the root namespace"
	for pid in "${pids[@]}"; do
		kill -0 "$pid" 2>/dev/null && why="${why:+$why, }memcached $pid still runs"
	done
	[ "${#pids[@]}" -eq 6 ] || why="${why:+$why, }${#pids[@]} memcached PIDs recorded, want 6"
	[ -e "$tmp" ] && why="${why:+$why, }$tmp left"
	steer_topo_down || why="${why:+$why, }a second steer_topo_down failed"
	if [ -z "$why" ]; then pass steer_topo_down; else fail steer_topo_down "$why"; fi
}
check_down
