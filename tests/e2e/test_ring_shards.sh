#!/usr/bin/env bash
# test_ring_shards.sh - per-shard load on the clients' ring, end to end: the
# agent runs with --sample 1 and a ring of 4 shards whose shard #1 is the
# memcached we send to (--self); a real client (pymemcache) gets 400 known
# keys (short, punctuated and long ones, up to 250 bytes) and sets 120 of
# them. Every shard's reads, writes and misdirected keys in `agent report
# --json` must equal what `agent ring lookup` says of those keys: reads and
# writes by owner, misdirected = the keys of every shard but self. Then the
# ring is changed three ways while the agent runs:
# - SIGHUP after the shard file changed: ring v2, a new digest, 5 shards, and
#   the counts of the same keys sent again follow the new ring exactly;
# - the file changed with no signal: picked up by itself (ring v3);
# - a bad line: the error is logged with file:line, the report carries it,
#   and ring v3 stays.
# Also refused before anything is attached (exit 2, nothing left behind):
# --self not in the list, a bad shard-file line, --self with no list,
# pymemcache with more shards than the datapath takes, pymemcache-bytes.
#
# Set-up as lib.sh: namespaces ks_cli_PID / ks_srv_PID joined by a veth pair
# (198.18.0.1 / 198.18.0.2), memcached in ks_srv, the agent on the
# server-side veth, everything removed by the EXIT trap. The other shards
# (198.18.0.3-7) exist only in the ring: no packet is sent to them.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init ring_shards
e2e_net_up

KEYS=$E2E_TMP/keys.txt
SHARDS=$E2E_TMP/shards.txt
SELF=198.18.0.2:$PORT
SETS=120
DIST=ketama
RK() { "$PY" "$E2E_DIR/ks_ring_keys.py" "$@"; }

# ---- refusals: exit 2, a message naming what is wrong, nothing attached

S4=198.18.0.3:$PORT,$SELF,198.18.0.4:$PORT,198.18.0.5:$PORT
e2e_expect_refused ring_refuses_self_not_listed \
	"--self 198\.18\.9\.9:11211 is not in --shards; " \
	--sample 1 --shards "$S4" --self 198.18.9.9:11211
printf '# shards\n198.18.0.3:11211\n198.18.0.4:70000\n' >"$E2E_TMP/bad.txt"
e2e_expect_refused ring_refuses_bad_file_line \
	"$E2E_TMP/bad.txt:3: port 70000 out of range" \
	--shards-file "$E2E_TMP/bad.txt"
e2e_expect_refused ring_refuses_self_without_list \
	"--self needs a shard list" --self "$SELF"
e2e_expect_refused ring_refuses_bad_distribution \
	".*ketama" --shards "$S4" --distribution ring-of-fire
# pymemcache in the datapath: at most 32 shards (KS_RDV_MAX_NODES), str keys
# only (its bytes keys hash their repr)
e2e_expect_refused ring_refuses_pymemcache_33_shards \
	"--distribution pymemcache runs in the datapath for at most 32 shards .* has 33; " \
	--shards "$(seq -f '198.18.1.%g:11211' 1 33 | paste -sd,)" \
	--distribution pymemcache
e2e_expect_refused ring_refuses_pymemcache_bytes \
	"--distribution pymemcache-bytes is user space only .*; " \
	--shards "$S4" --distribution pymemcache-bytes

# ---- 4 shards, self is #1
printf '# the clients ring\n198.18.0.3:11211\n%s\n198.18.0.4:11211\n198.18.0.5:11211\n' \
	"$SELF" >"$SHARDS"
RK make "$KEYS" --count 400

# report_json OUT: one `agent report --json`, 0 if it parsed.
report_json() {
	e2e_agent report --iface "$SIF" --json >"$1" 2>"$1.err" &&
		"$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null
}

# wait_totals OUT WANT: polls the report (60 s a guard) until the shards'
# reads_total + writes_total add up to WANT, so every key sent has been
# counted and published; the last report is left in OUT.
wait_totals() {
	local out=$1 want=$2 sum t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 60 ]; do # a guard: intervals at load
		if report_json "$out"; then
			sum=$("$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(sum(s["reads_total"] + s["writes_total"] for s in r["shards"]))' "$out")
			[ "$sum" = "$want" ] && return 0
		fi
		sleep 0.2
	done
	note "the shards count $sum keys after 60 s, want $want"
	return 1
}

# wait_version OUT V: polls until the report's ring.version is V (60 s a
# guard: the agent's next interval, 5 to 9 s at load 43).
wait_version() {
	local out=$1 want=$2 t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 60 ]; do
		report_json "$out" &&
			[ "$(RK field --report "$out" ring.version)" = "$want" ] &&
			return 0
		sleep 0.2
	done
	return 1
}

RING_OPTS=() # more ring options for the lookup, as the agent was given
# send_and_check NAME NSHARDS: sends the keys, then checks every shard's
# totals against `agent ring lookup` on the current shard file.
send_and_check() {
	local name=$1 n=$2 self
	# the agent's ring pushed (its line comes after the attach line, which
	# e2e_agent_start waits for): keys sent before it count on no shard
	# (at load 15, twice a case counted 0 of 520)
	e2e_wait_line "$E2E_TMP/agent.out" '^keysteer: ring v[0-9]+ ' "$E2E_AGENT_PID"
	# self's index: its line among the shard lines (no comments here)
	self=$(($(grep -v '^#' "$SHARDS" | grep -nx "$SELF" | cut -d: -f1) - 1))
	"$AGENT" ring lookup --shards-file "$SHARDS" --distribution "$DIST" \
		"${RING_OPTS[@]}" <"$KEYS" >"$E2E_TMP/lookup.txt"
	RK expect --lookup "$E2E_TMP/lookup.txt" --sets "$SETS" --self "$self" \
		--nshards "$n" >"$E2E_TMP/expect.json"
	if ! e2e_client "$E2E_DIR/ks_ring_keys.py" send --server "$SADDR" \
		--port "$PORT" --keys "$KEYS" --sets "$SETS"; then
		fail "$name" "the client could not send the keys"
		return
	fi
	# On a timeout the check below says which shards are off; the agent's
	# log is kept (the next case's agent writes agent.out again) and its
	# last lines shown
	if ! wait_totals "$E2E_TMP/rep.json" $((400 + SETS)); then
		cp "$E2E_TMP/agent.out" "$E2E_TMP/$name.agent.out"
		note "$name: the agent's last lines: $(tail -n 4 "$E2E_TMP/agent.out" | tr '\n' ' ' | head -c 600)"
	fi
	RK check --report "$E2E_TMP/rep.json" --expect "$E2E_TMP/expect.json" \
		--name "$name" || E2E_FAILED=1
}

if ! e2e_agent_start --sample 1 --interval 0.5 --shards-file "$SHARDS" \
	--self "$SELF"; then
	fail ring_shards_setup "the agent did not attach with a ring"
	exit 1
fi
# The ring is pushed right after the attach line: wait for its line.
e2e_wait_line "$E2E_TMP/agent.out" '^keysteer: ring v1 ' "$E2E_AGENT_PID"
sed 's/^/  agent: /' "$E2E_TMP/agent.out"
d1=$(sed -n 's/^keysteer: ring v1 digest \([0-9a-f]\{16\}\) 4 shards ketama, self 198\.18\.0\.2:11211 .*/\1/p' \
	"$E2E_TMP/agent.out")
# The digest is the builder's: `agent ring diff` prints it for the same file.
d_cli=$("$AGENT" ring diff --from-file "$SHARDS" --to-file "$SHARDS" --keys 1 |
	sed -n 's/^from 4 shards (digest \([0-9a-f]*\)).*/\1/p')
if [ -n "$d1" ] && [ "$d1" = "$d_cli" ]; then
	pass ring_shards_push_logged
else
	fail ring_shards_push_logged "want 'ring v1 digest $d_cli 4 shards ketama, self $SELF' in: $(cat "$E2E_TMP/agent.out")"
fi

send_and_check ring_shards_counts_match_lookup 4

# The ring's identity and the clients that sent other shards' keys.
r=$E2E_TMP/rep.json
ring=$(RK field --report "$r" ring)
if "$PY" - "$r" "$d1" <<'EOF'; then
import json, sys
r = json.load(open(sys.argv[1]))
g = r["ring"]
want = {"distribution": "ketama", "version": 1, "digest": sys.argv[2],
        "nshards": 4, "self": "198.18.0.2:11211", "self_index": 1}
bad = ["%s=%r" % (k, g.get(k)) for k in want if g.get(k) != want[k]]
mis = r["misdirected_clients"]
if not mis or any(m["addr"] != "198.18.0.1" or m["owner"] == 1 or
                  m["proto"] != "tcp" for m in mis):
    bad.append("misdirected_clients %r" % mis[:3])
if sum(1 for s in r["shards"] if s["busiest"]) > 1:
    bad.append("more than one busiest shard")
if bad:
    sys.exit("  wrong: " + "; ".join(bad))
print("  ring %s\n  clients %s" % (g, mis[:2]))
EOF
	pass ring_shards_report_ring_fields
else
	fail ring_shards_report_ring_fields "ring: $ring; clients: $(RK field --report "$r" misdirected_clients)"
fi
# The text report carries the ring line and one row per shard.
e2e_agent report --iface "$SIF" >"$E2E_TMP/rep.txt" 2>&1
if grep -q "^ring ketama v1 digest $d1   4 shards   self $SELF (#1)" "$E2E_TMP/rep.txt" &&
	[ "$(grep -cE '^198\.18\.0\.[2-5]:11211 +[0-3] ' "$E2E_TMP/rep.txt")" = 4 ]; then
	pass ring_shards_text_report
else
	fail ring_shards_text_report "$(sed -n '/^ring/,$p' "$E2E_TMP/rep.txt" | head -12)"
fi

# ---- SIGHUP after the file changed: v2, new digest, 5 shards, and the
# counts restart with the new ring. The signal comes at once, before the
# file watcher (two checks 0.5 s apart) could act on the change.
printf '198.18.0.3:11211\n%s\n198.18.0.4:11211\n198.18.0.5:11211\n198.18.0.6:11211\n' \
	"$SELF" >"$SHARDS.new"
mv "$SHARDS.new" "$SHARDS"
kill -HUP "$E2E_AGENT_PID"
if wait_version "$r" 2; then
	d2=$(RK field --report "$r" ring.digest)
	n2=$(RK field --report "$r" ring.nshards)
	if [ "$d2" != "$d1" ] && [ "$n2" = 5 ] &&
		grep -q "SIGHUP: loading the new ring" "$E2E_TMP/agent.out" &&
		grep -q "^keysteer: ring v2 digest $d2 5 shards ketama" "$E2E_TMP/agent.out"; then
		note "ring v2 digest $d2 (was $d1), 5 shards"
		pass ring_shards_sighup_new_version
	else
		fail ring_shards_sighup_new_version "digest $d2 (was $d1), nshards $n2; agent: $(tail -n 3 "$E2E_TMP/agent.out")"
	fi
else
	fail ring_shards_sighup_new_version "ring.version is $(RK field --report "$r" ring.version) 5 s after SIGHUP"
fi
send_and_check ring_shards_counts_after_swap 5

# ---- the file changes, no signal: the watcher reloads it (v3)
printf '%s\n198.18.0.4:11211:2\n198.18.0.7:11211\n' "$SELF" >"$SHARDS.new"
mv "$SHARDS.new" "$SHARDS"
if wait_version "$r" 3 && [ "$(RK field --report "$r" ring.nshards)" = 3 ] &&
	[ "$(RK field --report "$r" ring.self_index)" = 0 ]; then
	pass ring_shards_file_change_reloads
else
	fail ring_shards_file_change_reloads "ring $(RK field --report "$r" ring) 5 s after the change"
fi
send_and_check ring_shards_counts_after_file_reload 3

# ---- a bad line: logged with file:line, published, v3 stays
printf '%s\n198.18.0.4:11211\n198.18.0.8:port\n' "$SELF" >"$SHARDS.new"
mv "$SHARDS.new" "$SHARDS"
kill -HUP "$E2E_AGENT_PID"
# Waited for: the refusal logged, then in the report; then four more
# intervals (2 s), by the report's seq, in which a retry would show.
e2e_wait_line "$E2E_TMP/agent.out" "ring not reloaded" "$E2E_AGENT_PID"
t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do # a guard
	report_json "$r" && grep -qv '^null$' <<<"$(RK field --report "$r" ring.last_reload_error 2>/dev/null)" && break
	sleep 0.1 # a poll's step
done
seq0=$(RK field --report "$r" seq 2>/dev/null)
t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do # a guard: 4 intervals at load
	report_json "$r" && [ "$(RK field --report "$r" seq 2>/dev/null)" -ge $((${seq0:-0} + 4)) ] 2>/dev/null && break
	sleep 0.1 # a poll's step
done
if [ "$(RK field --report "$r" ring.version)" = 3 ] &&
	grep -q "ring not reloaded, v3 stays: $SHARDS:3: " "$E2E_TMP/agent.out" &&
	grep -q "^$SHARDS:3: " <<<"$(RK field --report "$r" ring.last_reload_error)"; then
	note "$(grep 'ring not reloaded' "$E2E_TMP/agent.out" | head -n 1)"
	pass ring_shards_bad_reload_keeps_ring
else
	fail ring_shards_bad_reload_keeps_ring "version $(RK field --report "$r" ring.version), error $(RK field --report "$r" ring.last_reload_error); agent: $(tail -n 3 "$E2E_TMP/agent.out")"
fi
# The bad file was loaded once (SIGHUP): the watcher does not retry it.
n_err=$(grep -c "ring not reloaded" "$E2E_TMP/agent.out")
if [ "$n_err" = 1 ]; then
	pass ring_shards_bad_file_logged_once
else
	fail ring_shards_bad_file_logged_once "logged $n_err times"
fi

e2e_agent_stop INT
if [ "$E2E_AGENT_RC" = 0 ]; then
	pass ring_shards_agent_exit
else
	fail ring_shards_agent_exit "agent exited with status $E2E_AGENT_RC on SIGINT"
fi
e2e_expect_clean ring_shards_detached

# ---- the other key hashes in the kernel (FNV-1a for twemproxy, MD5 of
# vnode points, pymemcache's rendezvous murmur3 of "host:port-key" per
# shard), with the shards given by --shards: the same exact counts (the
# keys are ASCII, which the datapath places for pymemcache)
printf '198.18.0.3:11211\n198.18.0.4:11211\n%s\n198.18.0.5:11211\n' "$SELF" >"$SHARDS"
for DIST in twemproxy vnode pymemcache; do
	if ! e2e_agent_start --sample 1 --interval 0.5 --distribution "$DIST" \
		--shards "$(paste -sd, "$SHARDS")" --self "$SELF"; then
		fail "ring_shards_counts_$DIST" "the agent did not attach"
		continue
	fi
	send_and_check "ring_shards_counts_$DIST" 4
	e2e_agent_stop INT
	e2e_expect_clean "ring_shards_detached_$DIST"
done

# ---- key hashes and a hash tag of their own (issue 15): twemproxy's
# modula with murmur and hash_tag {}, gomemcache's modula with crc32a
for SPEC in "twemproxy-modula murmur {}" "modula crc32a -"; do
	read -r DIST KH TAG <<<"$SPEC"
	RING_OPTS=(--key-hash "$KH")
	[ "$TAG" != - ] && RING_OPTS+=(--hash-tag "$TAG")
	if ! e2e_agent_start --sample 1 --interval 0.5 --distribution "$DIST" \
		"${RING_OPTS[@]}" --shards "$(paste -sd, "$SHARDS")" --self "$SELF"; then
		fail "ring_shards_counts_${DIST}_$KH" "the agent did not attach"
		continue
	fi
	send_and_check "ring_shards_counts_${DIST//-/_}_$KH" 4
	want="$DIST key hash $KH"
	[ "$TAG" != - ] && want+=" hash tag $TAG"
	if grep -qF -- "$want" "$E2E_TMP/agent.out"; then
		pass "ring_shards_log_${DIST//-/_}_$KH"
	else
		fail "ring_shards_log_${DIST//-/_}_$KH" "the push's log line does not say '$want'"
	fi
	e2e_agent_stop INT
	e2e_expect_clean "ring_shards_detached_${DIST//-/_}_$KH"
done
RING_OPTS=()
