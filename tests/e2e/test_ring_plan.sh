#!/usr/bin/env bash
# test_ring_plan.sh - a ring planned from measured load (issue 26,
# docs/placement.md), end to end on real etcd and real memcached:
#
# 1. 4 shards (memcached on the server namespace), `agent ring set` of
#    their ketama ring; load documents of the 4 shards in etcd, shard 0
#    twice the others with 6 of its keys known (what agents publish with
#    --export-keys, written here so the figures are exact).
# 2. `agent ring plan` refuses a ring that does not say its clients read
#    it ("clients": "keysteer"), and refuses while the agents count
#    misdirected requests; then plans: busiest/mean from 1.6 to <= 1.05.
# 3. `agent ring set --plan` refuses the plan with --clients any, then
#    writes it (schema 2, compare-and-swap); a plan with no key known
#    (slices only, 8.8% of the keys) is held to the ring-change limit
#    without --force; `ring get` reads the plan back;
#    `ring lookup --plan` and `ring diff --to-plan` follow its points.
# 4. libkeysteer (the Python adapter on its C library, a handle on etcd)
#    writes 300 keys once its view has the planned ring, and each
#    memcached is asked which keys it holds: every key is on the shard
#    the planned points give it, and the known keys the plan carved are
#    not on their ketama owner (what a client on the names' ring would
#    use: the control, the same keys on the names' ring, must disagree).
# 5. `ring set` of the names' ring again, without --clients: schema 1,
#    and the "clients" declaration of the ring it replaced stays.
# Everything is this script's own, by PID, removed on every exit path.
# About 15 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init ring_plan
e2e_need_etcd ring_plan
MC_PIDS=()
ETCD_PID=
COUNT_PID=
plan_cleanup() {
	local rc=$? p
	for p in $COUNT_PID "${MC_PIDS[@]}" $ETCD_PID; do
		ks_stop_pid "$p" TERM 5
	done
	(exit "$rc")
	e2e_cleanup
}
trap plan_cleanup EXIT
e2e_net_up
NET_MC=$KS_MEMCACHED_PID

# ports of this test's own range (24500-24999)
SH=$E2E_TMP/shards.txt
: >"$SH"
for i in 0 1 2 3; do
	if ! ks_start_memcached "$SNS" "$SADDR" $((24510 + i)); then
		fail ring_plan_setup "memcached $i did not start"
		exit 1
	fi
	MC_PIDS+=("$KS_MEMCACHED_PID")
	echo "$SADDR:$((24510 + i))" >>"$SH"
done
KS_MEMCACHED_PID=$NET_MC
URL=http://$SADDR:24579
CL=hpplan
if ! e2e_etcd_start "$SNS" hpplan "$URL" 24580 >"$E2E_TMP/etcd.out"; then
	ETCD_PID=$E2E_ETCD_PID
	fail ring_plan_setup "etcd: $(cat "$E2E_TMP/etcd.out")"
	exit 1
fi
ETCD_PID=$E2E_ETCD_PID
E=(--etcd "$URL" --cluster "$CL")
ctl() { ks_in_ns "$SNS" env ETCDCTL_API=3 etcdctl --endpoints "$URL" "$@"; }

if ! e2e_agent ring set "${E[@]}" --shards-file "$SH" >"$E2E_TMP/set0.out" 2>&1; then
	fail ring_plan_setup "ring set: $(cat "$E2E_TMP/set0.out")"
	exit 1
fi
rev() { e2e_agent ring get "${E[@]}" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["revision"])'; }

# the known keys: 6 keys of shard 0
mapfile -t KNOWN < <(for i in $(seq 0 400); do echo "plan:$i"; done |
	"$AGENT" ring lookup --shards-file "$SH" | awk -F'\t' '$2 == 0 {print $1}' | head -n 6)

# loads MIS [NOKEYS]: one load document per shard at the ring's revision, shard 0
# served 2000/s with its 6 keys at 150/s each, the others 1000/s; MIS
# misdirected requests/s on shard 1
loads() {
	local mis=$1 nokeys=${2:-} r i doc top
	r=$(rev)
	for i in 0 1 2 3; do
		top=
		if [ "$i" = 0 ] && [ -z "$nokeys" ]; then
			top=$(printf '%s\n' "${KNOWN[@]}" | awk '{printf "%s{\"hash\":\"%016x\",\"key\":\"%s\",\"reads_per_s\":150,\"writes_per_s\":0}", (NR > 1 ? "," : ""), NR, $1}')
		fi
		doc=$(printf '{"schema":2,"kind":"keysteer-load","self":"%s:%d","ring_revision":%s,"class_rates":{"read":%d,"write":0,"other":0},"shard":{"name":"%s:%d","reads_per_s":%d,"writes_per_s":0,"misdirected_per_s":%d,"served_per_s":%d},"top":[%s],"updated_at":"2026-12-02T00:00:00Z"}' \
			"$SADDR" $((24510 + i)) "$r" $((i ? 1000 : 2000)) "$SADDR" $((24510 + i)) \
			$((i ? 1000 : 2000)) $((i == 1 ? mis : 0)) $((i ? 1000 : 2000)) "$top")
		ctl put "/keysteer-load/$CL/$SADDR:$((24510 + i))" "$doc" >/dev/null || return 1
	done
}
plan() { e2e_agent ring plan "${E[@]}" --window 2 --target 1.05 --out "$E2E_TMP/plan.json" "$@"; }

# --- 2. refusals, then the plan ------------------------------------------------
loads 0 || { fail ring_plan_setup "etcdctl put failed"; exit 1; }
out=$(plan 2>&1)
rc=$?
if [ "$rc" = 1 ] && grep -q '"clients": "keysteer"' <<<"$out" && [ ! -e "$E2E_TMP/plan.json" ]; then
	pass ring_plan_refuses_a_fleet_whose_clients_build_their_ring
else
	fail ring_plan_refuses_a_fleet_whose_clients_build_their_ring "exit $rc: $out"
fi
e2e_agent ring set "${E[@]}" --shards-file "$SH" --clients keysteer >"$E2E_TMP/set1.out" 2>&1 ||
	fail ring_plan_setup "ring set --clients keysteer: $(cat "$E2E_TMP/set1.out")"
loads 100 || fail ring_plan_setup "etcdctl put failed"
out=$(plan 2>&1)
rc=$?
if [ "$rc" = 1 ] && grep -q 'misdirected' <<<"$out" && [ ! -e "$E2E_TMP/plan.json" ]; then
	pass ring_plan_refuses_while_requests_are_misdirected
else
	fail ring_plan_refuses_while_requests_are_misdirected "exit $rc: $out"
fi
# no key known: slices only, 8.8% of the keys; ring set holds it to the
# ring-change limit (1% for a change of no shard) unless --force
loads 0 nokeys || fail ring_plan_setup "etcdctl put failed"
plan >"$E2E_TMP/plan0.out" 2>&1
r0=$(rev)
out=$(e2e_agent ring set "${E[@]}" --plan "$E2E_TMP/plan.json" 2>&1)
rc=$?
note "no key known: $(grep -E '^moves' "$E2E_TMP/plan0.out")"
if [ "$rc" = 1 ] && grep -q 'ring not written' <<<"$out" && [ "$(rev)" = "$r0" ]; then
	pass ring_set_plan_keeps_the_move_limit
else
	fail ring_set_plan_keeps_the_move_limit "exit $rc: $out"
fi
rm -f "$E2E_TMP/plan.json"
loads 0 || fail ring_plan_setup "etcdctl put failed"
plan >"$E2E_TMP/plan.out" 2>&1
rc=$?
note "$(grep -E 'busiest|moves|sample keys|planned ring' "$E2E_TMP/plan.out")"
after=$(sed -n 's/^busiest\/mean: now \([0-9.]*\), planned \([0-9.]*\).*/\1 \2/p' "$E2E_TMP/plan.out")
if [ "$rc" = 0 ] && [ -s "$E2E_TMP/plan.json" ] &&
	awk -v a="$after" 'BEGIN { split(a, x, " "); exit !(x[1] > 1.5 && x[2] <= 1.05) }' &&
	grep -q '"schema":2' "$E2E_TMP/plan.json" && grep -q '"clients":"keysteer"' "$E2E_TMP/plan.json"; then
	pass ring_plan_proposes_points
else
	fail ring_plan_proposes_points "exit $rc: $(cat "$E2E_TMP/plan.out")"
fi

# --- 2b. the load from the agents' counters, not their rates ------------------
# Documents whose rates say every shard serves 1000/s but whose counters
# ("shard"."totals", rewritten every 0.2 s as an agent's would be) say
# shard 0 served 2000/s over the window: the plan follows the counters
# (the rates are one interval's, and a document stays until its agent
# writes again). Control: the same documents without counters plan from
# the rates and see nothing to balance. A fleet with one agent before
# the counters: that shard from its rates, the others from their counters.
# counting WHO: documents with counters ("" for none on every shard, "3"
# for none on shard 3) until killed
counting() {
	# a file: an asynchronous command's stdin is /dev/null
	cat >"$E2E_TMP/counting.py" <<'PYEOF'
import base64, json, sys, time, urllib.request
url, cl, addr, rev, plain = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
t0, base = time.monotonic(), int(time.time() * 1000)
while True:
    ms = int((time.monotonic() - t0) * 1000) + 5000
    for i in range(4):
        rate = 2000 if i == 0 else 1000
        sh = {"name": "%s:%d" % (addr, 24510 + i), "reads_per_s": 1000, "writes_per_s": 0,
              "misdirected_per_s": 0, "served_per_s": 1000}
        if plain != "all" and plain != str(i):
            n = rate * ms // 1000
            sh["totals"] = {"base": base + i, "ms": ms, "reads": n, "served": n - n // 5,
                            "writes": n // 10, "misdirected": 0, "fills": n // 10}
        doc = {"schema": 2, "kind": "keysteer-load", "self": sh["name"], "ring_revision": rev,
               "class_rates": {"read": 1000, "write": 0, "other": 0}, "shard": sh, "top": []}
        body = json.dumps({"key": base64.b64encode(("/keysteer-load/%s/%s" % (cl, sh["name"])).encode()).decode(),
                           "value": base64.b64encode(json.dumps(doc).encode()).decode()}).encode()
        urllib.request.urlopen(urllib.request.Request(url + "/v3/kv/put", data=body), timeout=5).read()
    print("written", ms, flush=True)
    time.sleep(0.2)
PYEOF
	ks_in_ns_bg "$SNS" "$PY" "$E2E_TMP/counting.py" "$URL" "$CL" "$SADDR" "$(rev)" "$1" \
		>"$E2E_TMP/counting.out" 2>&1
	COUNT_PID=$KS_BG_PID
	# the first round of documents is in etcd (bounded: 30 s)
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q written "$E2E_TMP/counting.out" && return 0
		kill -0 "$COUNT_PID" 2>/dev/null || break
		sleep 0.1
	done
	fail ring_plan_setup "the documents' writer: $(tail -c 300 "$E2E_TMP/counting.out")"
	return 1
}
counting_stop() {
	ks_stop_pid "$COUNT_PID" TERM 5
	COUNT_PID=
}
# plan_from WHO NAME: a plan over 3 reads with documents counting as WHO
plan_from() {
	counting "$1" || return 1
	plan --window 3 --out "$E2E_TMP/plan.$2.json" >"$E2E_TMP/plan.$2.out" 2>&1
	echo $? >"$E2E_TMP/plan.$2.rc"
	counting_stop
	note "$2: $(grep -E '^load|^busiest' "$E2E_TMP/plan.$2.out" | tr '\n' ' ')"
}
plan_from "" counted
if [ "$(cat "$E2E_TMP/plan.counted.rc")" = 0 ] &&
	grep -q "^load: 4 shards from their agents' counters over" "$E2E_TMP/plan.counted.out" &&
	! grep -q "^load: .* from the mean" "$E2E_TMP/plan.counted.out" &&
	grep -Eq '^busiest/mean: now 1\.6[0-9]*, planned (1\.0[0-4][0-9]*|1\.050)' "$E2E_TMP/plan.counted.out" &&
	awk '$2 == "'"$SADDR"':24510" && $3 > 1900 && $3 < 2100 { ok = 1 } END { exit !ok }' "$E2E_TMP/plan.counted.out"; then
	pass ring_plan_takes_the_agents_counters
else
	fail ring_plan_takes_the_agents_counters "$(cat "$E2E_TMP/plan.counted.out")"
fi
plan_from all rates
if [ "$(cat "$E2E_TMP/plan.rates.rc")" = 0 ] &&
	grep -q "^load: 4 shards from the mean of 3 reads of their rates, as their documents carry no counters" "$E2E_TMP/plan.rates.out" &&
	grep -q '^busiest/mean: now 1\.000' "$E2E_TMP/plan.rates.out"; then
	pass ring_plan_control_rates_without_counters
else
	fail ring_plan_control_rates_without_counters "$(cat "$E2E_TMP/plan.rates.out")"
fi
plan_from 3 mixed
if [ "$(cat "$E2E_TMP/plan.mixed.rc")" = 0 ] &&
	grep -q "^load: 3 shards from their agents' counters" "$E2E_TMP/plan.mixed.out" &&
	grep -q "^load: 1 shard from the mean of 3 reads of their rates.*: $SADDR:24513\$" "$E2E_TMP/plan.mixed.out" &&
	grep -Eq '^busiest/mean: now 1\.6' "$E2E_TMP/plan.mixed.out"; then
	pass ring_plan_mixed_fleet_counters_and_rates
else
	fail ring_plan_mixed_fleet_counters_and_rates "$(cat "$E2E_TMP/plan.mixed.out")"
fi
rm -f "$E2E_TMP/plan.json"
loads 0 || fail ring_plan_setup "etcdctl put failed"
plan >"$E2E_TMP/plan.out" 2>&1 || fail ring_plan_setup "plan again: $(cat "$E2E_TMP/plan.out")"

# --- 3. ring set --plan, get, lookup, diff --------------------------------------
out=$(e2e_agent ring set "${E[@]}" --plan "$E2E_TMP/plan.json" --clients any 2>&1)
rc=$?
r0=$(rev)
if [ "$rc" = 2 ] && grep -q 'explicit points' <<<"$out" && [ "$(rev)" = "$r0" ]; then
	pass ring_set_plan_refused_for_clients_any
else
	fail ring_set_plan_refused_for_clients_any "exit $rc: $out"
fi
e2e_agent ring set "${E[@]}" --plan "$E2E_TMP/plan.json" --if-revision "$r0" >"$E2E_TMP/set2.out" 2>&1
rc=$?
got=$(e2e_agent ring get "${E[@]}" --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["valid"], d["ring"]["schema"], len(d["ring"]["explicit_points"]))')
if [ "$rc" = 0 ] && grep -q 'explicit points' "$E2E_TMP/set2.out" && [ "${got%% *}" = True ] &&
	[ "$(cut -d' ' -f2 <<<"$got")" = 2 ]; then
	pass ring_set_plan_writes_schema_2
else
	fail ring_set_plan_writes_schema_2 "exit $rc: $(cat "$E2E_TMP/set2.out"); get: $got"
fi
note "$(grep -E '^moves|^revision' "$E2E_TMP/set2.out")"
diff_out=$("$AGENT" ring diff --from-file "$SH" --to-plan "$E2E_TMP/plan.json" 2>&1)
if grep -q '^moved' <<<"$diff_out"; then
	pass ring_diff_to_plan
else
	fail ring_diff_to_plan "$diff_out"
fi

# --- 4. libkeysteer writes; each memcached says what it holds -------------------
{
	printf '%s\n' "${KNOWN[@]}"
	for i in $(seq 0 299); do echo "w:$i"; done
} >"$E2E_TMP/keys"
"$AGENT" ring lookup --plan "$E2E_TMP/plan.json" <"$E2E_TMP/keys" >"$E2E_TMP/want" 2>&1
"$AGENT" ring lookup --shards-file "$SH" <"$E2E_TMP/keys" >"$E2E_TMP/names" 2>&1
want_rev=$(rev)
ks_in_ns "$CNS" env KEYSTEER_LIB="$E2E_ROOT/${OUT:-build}/libkeysteer.so" \
	PYTHONPATH="$E2E_ROOT/user/client/python" "$PY" - "etcd=$URL cluster=$CL timeout_ms=2000" \
	"$want_rev" "$E2E_TMP/keys" "$SADDR" >"$E2E_TMP/py.out" 2>&1 <<'PYEOF'
import socket, sys, time
from keysteer_client import Client
spec, rev, keys, addr = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
keys = [k.strip() for k in open(keys) if k.strip()]
with Client(spec) as c:
    # the handle's view reads the ring from etcd (a guard of 30 s)
    end = time.monotonic() + 30
    while c.stats()["ring_revision"] < rev and time.monotonic() < end:
        time.sleep(0.05)
    assert c.stats()["ring_revision"] >= rev, c.stats()
    for k in keys:
        c.set(k, b"v-" + k.encode())
# which memcached holds each key (asked directly, not through the library)
for i in range(4):
    s = socket.create_connection((addr, 24510 + i), timeout=5)
    f = s.makefile("rb")
    for k in keys:
        s.sendall(b"get " + k.encode() + b"\r\n")
        line = f.readline()
        if line.startswith(b"VALUE"):
            f.readline(); f.readline()
            print("%s\t%d" % (k, i))
    s.close()
PYEOF
rc=$?
ok=$("$PY" - "$E2E_TMP/py.out" "$E2E_TMP/want" "$E2E_TMP/names" "${KNOWN[@]}" <<'PYEOF'
import sys
held = {}
for line in open(sys.argv[1]):
    if "\t" in line:
        k, i = line.rstrip("\n").split("\t")
        held.setdefault(k, []).append(int(i))
want = {l.split("\t")[0]: int(l.split("\t")[1]) for l in open(sys.argv[2]) if "\t" in l}
names = {l.split("\t")[0]: int(l.split("\t")[1]) for l in open(sys.argv[3]) if "\t" in l}
known = sys.argv[4:]
bad = [k for k in want if held.get(k) != [want[k]]]
carved = [k for k in known if want[k] != names[k]]
ctrl = [k for k in want if held.get(k) != [names[k]]]
print(len(want), len(bad), len(carved), len(ctrl))
PYEOF
)
read -r nkeys nbad ncarved nctrl <<<"$ok"
note "libkeysteer: $nkeys keys, $nbad off the planned points; $ncarved of ${#KNOWN[@]} known keys carved off shard 0; control (the names' ring): $nctrl keys elsewhere"
if [ "$rc" = 0 ] && [ "${nkeys:-0}" = $((300 + ${#KNOWN[@]})) ] && [ "$nbad" = 0 ] && [ "${ncarved:-0}" -ge 1 ]; then
	pass ring_plan_libkeysteer_routes_by_explicit_points
else
	fail ring_plan_libkeysteer_routes_by_explicit_points "exit $rc: $ok $(tail -c 400 "$E2E_TMP/py.out")"
fi
if [ "${nctrl:-0}" -ge "${ncarved:-1}" ] && [ "${nctrl:-0}" -ge 1 ]; then
	pass ring_plan_control_names_ring_disagrees
else
	fail ring_plan_control_names_ring_disagrees "the names' ring places every key as the plan: $ok"
fi

# --- 5. back to the names' ring: the declaration stays -------------------------
e2e_agent ring set "${E[@]}" --shards-file "$SH" >"$E2E_TMP/set3.out" 2>&1
rc=$?
got=$(e2e_agent ring get "${E[@]}" --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin)["ring"]; print(d["schema"], d.get("clients"))')
if [ "$rc" = 0 ] && [ "$got" = "1 keysteer" ]; then
	pass ring_set_keeps_the_clients_declaration
else
	fail ring_set_keeps_the_clients_declaration "exit $rc: $(tail -n 2 "$E2E_TMP/set3.out"); get: $got"
fi
