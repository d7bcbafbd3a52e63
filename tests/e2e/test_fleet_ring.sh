#!/usr/bin/env bash
# test_fleet_ring.sh - the fleet's ring in etcd (issue 12, docs/fleet.md)
# against Debian's etcd 3.4, never a mock. Two etcd processes in the server
# namespace (its own loopback): a plain one and one with auth on
# (root:pw). Checks:
# - refused before anything is attached (exit 2, one line, nothing pinned):
#   a bad --etcd URL, etcd unreachable, a wrong password; --etcd-optional
#   with etcd unreachable starts anyway, with a warning;
# - 'ring set' then 'ring get' (text and --json) round-trip: revision,
#   digest (the same as 'ring diff' prints for the file), the shards; a bad
#   shard list is refused before anything is written;
# - two concurrent 'ring set --if-revision R' (5 rounds): exactly one wins,
#   the other exits 1 saying who won at which revision, never overwriting;
# - an agent (veth in a namespace, memcached behind it, --etcd, --self)
#   starts with the ring in etcd (its revision the report's ring version),
#   picks up a ring set after it started within 2 intervals (the report's
#   ring version and digest), refuses a malformed document and one whose
#   digest its shards do not build (old ring kept, counted: reload_errors
#   and the -v line), keeps counting traffic with etcd killed, and picks up
#   a change made after etcd is back.
# Every etcd is stopped by its pid on every exit path (the EXIT trap).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=fleet_lib.sh
. "$E2E_DIR/fleet_lib.sh"
e2e_init fleet_ring

ETCD_PIDS=()
PLAIN_PID=
URL=http://127.0.0.1:2379
AUTH=http://127.0.0.1:2479
DOWN=http://127.0.0.1:2779 # nothing listens
KEY=/keysteer/default/ring
SELF=198.18.0.2:11211
SHARDS4=$E2E_TMP/shards4.txt
SHARDS5=$E2E_TMP/shards5.txt
INTERVAL=1

fleet_cleanup() {
	local rc=$? pid
	# the agent first (it talks to etcd), then every etcd by its pid
	[ -n "$E2E_AGENT_PID" ] && e2e_agent_stop INT
	for pid in "${ETCD_PIDS[@]}" $PLAIN_PID; do
		ks_stop_pid "$pid" TERM 5
	done
	(exit "$rc")
	e2e_cleanup
}
trap fleet_cleanup EXIT

e2e_need_etcd fleet_ring
e2e_net_up

# etcd_start NAME URL PEER_PORT [ARGS...]: one single-member etcd in the
# server namespace; sets ETCD_PID.
etcd_start() {
	if ! e2e_etcd_start "$SNS" "$@" >"$E2E_TMP/etcd_start.out"; then
		fail fleet_ring_setup "$(cat "$E2E_TMP/etcd_start.out")"
		exit 1
	fi
	ETCD_PID=$E2E_ETCD_PID
}
EC() { ks_in_ns "$SNS" etcdctl --endpoints "$URL" "$@"; }
RK() { "$PY" "$E2E_DIR/ks_ring_keys.py" "$@"; }
jfield() { "$PY" -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$@"; }

# ---- refused before anything is attached --------------------------------

e2e_expect_refused fleet_refuses_bad_url "--etcd: etcd endpoint 'ftp://x' is not an http" \
	--etcd ftp://x
e2e_expect_refused fleet_refuses_bad_url_optional "--etcd: .*a path" \
	--etcd http://127.0.0.1:2379/v3 --etcd-optional
e2e_expect_refused fleet_refuses_unreachable \
	"etcd at $DOWN: .*Connection refused.*--etcd-optional" --etcd "$DOWN"
e2e_expect_refused fleet_refuses_user_without_password \
	"--etcd-user root needs a password" --etcd "$DOWN" --etcd-user root

etcd_start plain "$URL" 2380
PLAIN_PID=$ETCD_PID
etcd_start auth "$AUTH" 2480
ETCD_PIDS+=("$ETCD_PID")
if ! ks_in_ns "$SNS" etcdctl --endpoints "$AUTH" user add root:pw >"$E2E_TMP/auth.out" 2>&1 ||
	! ks_in_ns "$SNS" etcdctl --endpoints "$AUTH" auth enable >>"$E2E_TMP/auth.out" 2>&1; then
	fail fleet_ring_setup "could not enable auth: $(tail -2 "$E2E_TMP/auth.out")"
	exit 1
fi
KEYSTEER_ETCD_PASSWORD=wrong e2e_expect_refused fleet_refuses_wrong_password \
	"etcd at $AUTH: .*authentication failed.*--etcd-user" \
	--etcd "$AUTH" --etcd-user root
printf 'wrong\n' >"$E2E_TMP/pw.txt"
e2e_expect_refused fleet_refuses_wrong_password_file \
	"etcd at $AUTH: .*authentication failed" \
	--etcd "$AUTH" --etcd-user root --etcd-password-file "$E2E_TMP/pw.txt"
# the right password is taken (ring get: there is no ring there, exit 1)
printf 'pw\n' >"$E2E_TMP/pw.txt"
out=$(e2e_agent ring get --etcd "$AUTH" --etcd-user root \
	--etcd-password-file "$E2E_TMP/pw.txt" 2>&1)
if [ $? -eq 1 ] && grep -q "no ring at $KEY" <<<"$out"; then
	pass fleet_password_file_taken
else
	fail fleet_password_file_taken "$out"
fi

# --etcd-optional: etcd unreachable, the agent starts anyway and warns
if e2e_agent_start --etcd "$DOWN" --etcd-optional --interval "$INTERVAL"; then
	if grep -q "warning: etcd at $DOWN: .*--etcd-optional: running without etcd" \
		"$E2E_TMP/agent.out"; then
		pass fleet_optional_starts
	else
		fail fleet_optional_starts "no warning in: $(head -c 400 "$E2E_TMP/agent.out")"
	fi
	e2e_agent_stop INT
else
	fail fleet_optional_starts "the agent did not start"
fi

# ---- ring set / ring get ------------------------------------------------
printf '# four shards, self second\n198.18.0.3:11211\n%s\n198.18.0.4:11211\n198.18.0.5:11211 five\n' \
	"$SELF" >"$SHARDS4"
{ cat "$SHARDS4"; printf '198.18.0.6:11211:3\n'; } >"$SHARDS5"
digest_of() { # the builder's digest of a shard file, from 'ring diff'
	"$AGENT" ring diff --from-file "$1" --to-file "$1" --keys 1 |
		sed -n 's/^from [0-9]* shards (digest \([0-9a-f]*\)).*/\1/p'
}
D4=$(digest_of "$SHARDS4")
D5=$(digest_of "$SHARDS5")

out=$(e2e_agent ring set --etcd "$URL" --shards-file "$SHARDS4" 2>&1)
rc=$?
R1=$(sed -n 's/^revision \([0-9]*\) digest \([0-9a-f]*\) 4 shards ketama .*/\1/p' <<<"$out")
if [ $rc -eq 0 ] && [ -n "$R1" ] && grep -q "digest $D4 " <<<"$out"; then
	pass fleet_ring_set
	note "$out"
else
	fail fleet_ring_set "exit $rc: $out (want digest $D4)"
fi
e2e_agent ring get --etcd "$URL" --json >"$E2E_TMP/get.json" 2>"$E2E_TMP/get.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(jfield "$E2E_TMP/get.json" revision)" = "$R1" ] &&
	[ "$(jfield "$E2E_TMP/get.json" valid)" = true ] &&
	[ "$(jfield "$E2E_TMP/get.json" ring.digest)" = "$D4" ] &&
	[ "$(jfield "$E2E_TMP/get.json" ring.schema)" = 1 ] &&
	[ "$(jfield "$E2E_TMP/get.json" ring.shards.3.name)" = five ] &&
	[ "$(jfield "$E2E_TMP/get.json" ring.shards.1.host)" = 198.18.0.2 ]; then
	pass fleet_ring_get_json
else
	fail fleet_ring_get_json "exit $rc: $(head -c 600 "$E2E_TMP/get.json") $(cat "$E2E_TMP/get.err")"
fi
out=$(e2e_agent ring get --etcd "$URL" 2>&1)
if head -1 <<<"$out" | grep -q "^$KEY revision $R1 " &&
	sed -n 2p <<<"$out" | grep -q "^4 shards ketama, 640 points, digest $D4$"; then
	pass fleet_ring_get_text
else
	fail fleet_ring_get_text "$(head -c 300 <<<"$out")"
fi
# what etcd holds is the document (etcdctl reads it back)
if EC get --print-value-only "$KEY" | "$PY" -c 'import json,sys; d = json.load(sys.stdin); assert d["kind"] == "keysteer-ring" and len(d["shards"]) == 4'; then
	pass fleet_ring_in_etcd
else
	fail fleet_ring_in_etcd "etcdctl get: $(EC get "$KEY" | head -c 300)"
fi
# a bad list is refused before anything is written
out=$(e2e_agent ring set --etcd "$URL" --shards 198.18.0.3:70000 2>&1)
rc=$?
rev=$(e2e_agent ring get --etcd "$URL" --json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["revision"])')
if [ $rc -eq 2 ] && grep -q "port 70000 out of range" <<<"$out" && [ "$rev" = "$R1" ]; then
	pass fleet_ring_set_refuses_bad_list
else
	fail fleet_ring_set_refuses_bad_list "exit $rc, revision $rev (want $R1): $out"
fi

# ---- two concurrent ring sets: one wins, the other is refused ------------
ring_now() {
	e2e_agent ring get --etcd "$URL" --json | "$PY" -c 'import json,sys
d = json.load(sys.stdin); print(d["revision"], (d["ring"] or {}).get("digest"))'
}
set5() { e2e_agent ring set --etcd "$URL" --shards-file "$SHARDS5" "$@"; }
set4() { e2e_agent ring set --etcd "$URL" --shards-file "$SHARDS4" "$@"; }
ok=1
for round in 1 2 3 4 5; do
	if ! fleet_ring_race "$E2E_TMP" "$KEY" ring_now set5 set4; then
		fail fleet_concurrent_set "round $round: $RACE_WHY"
		ok=0
		break
	fi
	[ $round -eq 1 ] && note "$RACE_NOTE"
done
[ $ok = 1 ] && pass fleet_concurrent_set

# ---- the agent follows the ring in etcd -------------------------------------
report_json() {
	e2e_agent report --iface "$SIF" --json >"$1" 2>"$1.err" &&
		"$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null
}
# wait_ring OUT VERSION DIGEST TENTHS: polls the report until its ring is
# VERSION with DIGEST; 0 and the time it took in $WAITED_MS (up to the end
# of the report that showed it, not of the checks after it, which a loaded
# machine can make slow).
wait_ring() {
	local out=$1 v=$2 d=$3 tenths=$4 t0 t1 i
	t0=$(date +%s%N)
	for ((i = 0; i < tenths * 2; i++)); do
		report_json "$out"
		t1=$(date +%s%N)
		if [ "$(RK field --report "$out" ring.version 2>/dev/null)" = "$v" ] &&
			[ "$(RK field --report "$out" ring.digest 2>/dev/null)" = "$d" ]; then
			WAITED_MS=$(((t1 - t0) / 1000000))
			return 0
		fi
		sleep 0.05
	done
	return 1
}

out=$(e2e_agent ring set --etcd "$URL" --shards-file "$SHARDS4" 2>&1)
R2=$(awk '/^revision / {print $2}' <<<"$out")
if ! e2e_agent_start --sample 1 --interval "$INTERVAL" --etcd "$URL" --self "$SELF" -v; then
	fail fleet_agent_setup "the agent did not attach with --etcd"
	exit 1
fi
if wait_ring "$E2E_TMP/rep.json" "$R2" "$D4" 50 &&
	[ "$(RK field --report "$E2E_TMP/rep.json" ring.source)" = "etcd $KEY" ] &&
	grep -q "^keysteer: ring v$R2 digest $D4 4 shards ketama, self $SELF " "$E2E_TMP/agent.out"; then
	pass fleet_agent_starts_with_etcd_ring
else
	fail fleet_agent_starts_with_etcd_ring "want ring v$R2 $D4 from etcd: $(head -c 300 "$E2E_TMP/rep.json"); agent: $(head -c 600 "$E2E_TMP/agent.out")"
fi

# a ring set after the start: in the report within 2 intervals
out=$(e2e_agent ring set --etcd "$URL" --shards-file "$SHARDS5" 2>&1)
R3=$(awk '/^revision / {print $2}' <<<"$out")
if wait_ring "$E2E_TMP/rep.json" "$R3" "$D5" 40 && [ "$WAITED_MS" -le $((2 * INTERVAL * 1000)) ]; then
	pass fleet_agent_picks_up_ring_set
	note "ring v$R3 ($D5, 5 shards) in the report $WAITED_MS ms after 'ring set' returned"
else
	fail fleet_agent_picks_up_ring_set "want v$R3 $D5 within $((2 * INTERVAL)) s (took ${WAITED_MS:-more than 4000} ms): $(head -c 300 "$E2E_TMP/rep.json")"
fi

# bad documents: refused, logged once each, counted; the ring stays.
# Each document's revision is the one etcd returned for its own put: the
# agent's lease and host writes take revisions too, so the next put's
# revision cannot be computed from the last.
put_rev() { EC put -w json "$KEY" "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])'; }
bad1=$(put_rev '{"schema":1,"kind":"keysteer-ring","distribution":')
doc=$("$PY" - "$SHARDS4" <<'PYEOF'
import json, sys
shards = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].split()
    if not line:
        continue
    host, port = line[0].split(":")[:2]
    s = {"host": host, "port": int(port), "weight": 1}
    if len(line) > 1:
        s["name"] = line[1]
    shards.append(s)
print(json.dumps({"schema": 1, "kind": "keysteer-ring", "distribution": "ketama",
                  "key_hash": "md5", "shards": shards, "points": 640,
                  "digest": "0123456789abcdef"}))
PYEOF
)
bad2=$(put_rev "$doc")
# Both refusals logged, then two more whole intervals, counted by the
# agent's own interval lines, in which a refusal repeated would show.
e2e_wait_line "$E2E_TMP/agent.out" "etcd $KEY revision $bad1 refused" "$E2E_AGENT_PID" 300 &&
	e2e_wait_line "$E2E_TMP/agent.out" "etcd $KEY revision $bad2 refused" "$E2E_AGENT_PID" 300
e2e_wait_intervals 2
report_json "$E2E_TMP/rep.json"
nlog1=$(grep -c "ring not reloaded, v$R3 stays: etcd $KEY revision $bad1 refused: the ring document is not JSON" "$E2E_TMP/agent.out")
nlog2=$(grep -c "ring not reloaded, v$R3 stays: etcd $KEY revision $bad2 refused: the ring document says 640 points, digest 0123456789abcdef, but its shards build 640 points, digest $D4" "$E2E_TMP/agent.out")
if [ "$(RK field --report "$E2E_TMP/rep.json" ring.version)" = "$R3" ] &&
	[ "$(RK field --report "$E2E_TMP/rep.json" ring.digest)" = "$D5" ] &&
	[ "$(RK field --report "$E2E_TMP/rep.json" ring.reload_errors)" = 2 ] &&
	[ "$nlog1" = 1 ] && [ "$nlog2" = 1 ] &&
	grep -q "etcd: ring revision $R3 from $KEY, watch up, 2 refused" "$E2E_TMP/agent.out"; then
	pass fleet_agent_refuses_bad_documents
	note "$(grep -m1 "revision $bad2 refused" "$E2E_TMP/agent.out" | head -c 200)"
else
	fail fleet_agent_refuses_bad_documents "version $(RK field --report "$E2E_TMP/rep.json" ring.version) (want $R3), reload_errors $(RK field --report "$E2E_TMP/rep.json" ring.reload_errors), logged $nlog1 and $nlog2 times; $(grep -E 'refused|etcd' "$E2E_TMP/agent.out" | tail -5)"
fi

# etcd killed: the ring stays and traffic is still counted
KEYS=$E2E_TMP/keys.txt
RK make "$KEYS" --count 200
shard_sum() { "$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(sum(s["reads_total"] + s["writes_total"] for s in r["shards"]))' "$1"; }
# The agent's log from the kill on: a watch that broke before it is the
# machine's (at load 15 etcd once took more than 2 s to start the watch:
# "did not start the watch within 2000 ms", logged as broke, then up).
L0=$(wc -l <"$E2E_TMP/agent.out")
broke_since() { tail -n +"$((L0 + 1))" "$E2E_TMP/agent.out" | grep -c "etcd: the watch of $KEY broke"; }
{ ks_stop_pid "$PLAIN_PID" KILL 5; } 2>/dev/null # no job notice
PLAIN_PID=
t0=$SECONDS
while [ "$(broke_since)" = 0 ] && kill -0 "$E2E_AGENT_PID" 2>/dev/null &&
	[ $((SECONDS - t0)) -lt 60 ]; do
	sleep 0.1 # a poll's step
done
report_json "$E2E_TMP/rep.json"
before=$(shard_sum "$E2E_TMP/rep.json")
if ! e2e_client "$E2E_DIR/ks_ring_keys.py" send --server "$SADDR" --port "$PORT" \
	--keys "$KEYS" --sets 0; then
	fail fleet_agent_counts_without_etcd "the client could not send the keys"
fi
t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do # a guard: the agent's next interval
	report_json "$E2E_TMP/rep.json" &&
		[ "$(shard_sum "$E2E_TMP/rep.json")" -ge $((before + 200)) ] && break
	sleep 0.2 # a poll's step
done
after=$(shard_sum "$E2E_TMP/rep.json")
if [ "$after" -eq $((before + 200)) ] && kill -0 "$E2E_AGENT_PID" &&
	[ "$(RK field --report "$E2E_TMP/rep.json" ring.version)" = "$R3" ] &&
	[ "$(broke_since)" = 1 ]; then
	pass fleet_agent_counts_without_etcd
	note "200 keys counted with etcd gone ($before -> $after), ring v$R3 kept"
else
	fail fleet_agent_counts_without_etcd "shard totals $before -> $after (want +200), ring $(RK field --report "$E2E_TMP/rep.json" ring.version), the watch's break logged $(broke_since) times since the kill (want 1); $(grep etcd "$E2E_TMP/agent.out" | tail -3)"
fi

# etcd back (same data): a change made then reaches the agent
etcd_start plain "$URL" 2380
PLAIN_PID=$ETCD_PID
out=$(e2e_agent ring set --etcd "$URL" --shards-file "$SHARDS4" 2>&1)
R4=$(awk '/^revision / {print $2}' <<<"$out")
if [ -n "$R4" ] && wait_ring "$E2E_TMP/rep.json" "$R4" "$D4" 100; then
	pass fleet_agent_follows_after_etcd_returns
	note "ring v$R4 in the report $WAITED_MS ms after 'ring set' (etcd restarted)"
else
	fail fleet_agent_follows_after_etcd_returns "want v$R4 $D4: $out; $(grep etcd "$E2E_TMP/agent.out" | tail -4)"
fi
if kill -0 "$E2E_AGENT_PID" 2>/dev/null; then
	pass fleet_agent_survives
else
	fail fleet_agent_survives "the agent exited: $(tail -5 "$E2E_TMP/agent.out")"
fi
sed 's/^/  agent: /' "$E2E_TMP/agent.out" | grep -E "ring v|etcd|refused" | head -20
e2e_agent_stop INT
e2e_expect_clean fleet_agent_clean_exit
