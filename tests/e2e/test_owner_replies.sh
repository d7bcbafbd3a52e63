#!/usr/bin/env bash
# test_owner_replies.sh - the owner's misses of a hot key, counted from its
# replies at tc egress (agent run --owner-replies, bpf/ks_reply.bpf.h),
# against memcached's own counters: a pinned hot key that expires (TTL 1 s)
# is read one request at a time over UDP and TCP (tests/e2e/
# ks_owner_replies.py); the hits and misses `agent report --json` shows for
# it must equal memcached's get_hits and get_misses deltas exactly (only
# this client talks to memcached). Also: the source is named in the report
# and the metrics; with --owner-replies off (the control) nothing is
# counted while memcached still misses; nothing is left after a stop.
#
# Set-up (lib.sh): namespaces ks_cli_PID / ks_srv_PID on a veth pair,
# memcached in ks_srv, the agent on the server-side veth, the client in
# ks_cli.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init owner_replies

KEY=hot:expiring
MPORT=19195
echo "pin $KEY 1" >"$E2E_TMP/pins.txt"
e2e_net_up

# report_json FILE: `agent report --json` into FILE; 0 when it worked.
report_json() {
	e2e_agent report --iface "$SIF" --json >"$1" 2>"$1.err"
}

# owner_counts FILE: "hits misses unpaired malformed" of KEY, or "none".
owner_counts() {
	"$PY" - "$1" "$KEY" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for k in doc.get("hot_keys", []):
    if k.get("key") == sys.argv[2] and k.get("owner"):
        o = k["owner"]
        print(o["hits"], o["misses"], o["unpaired"], o["malformed"])
        break
else:
    print("none")
PYEOF
}

# wait_owner_total N: until KEY's hits + misses + unpaired + malformed in
# the report reach N (the agent publishes them each interval), 60 s at
# most on a loaded machine. Leaves the last report in $E2E_TMP/rep.json.
wait_owner_total() {
	local want=$1 i c
	for ((i = 0; i < 600; i++)); do
		if report_json "$E2E_TMP/rep.json"; then
			c=$(owner_counts "$E2E_TMP/rep.json")
			if [ "$c" != none ] &&
				[ $(($(tr ' ' '+' <<<"$c"))) -ge "$want" ]; then
				return 0
			fi
		fi
		sleep 0.1
	done
	return 1
}

# --- on (the default) ------------------------------------------------------
if ! e2e_agent_start --sample 1 --interval 1 --pins "$E2E_TMP/pins.txt" \
	--metrics "$MPORT" -v; then
	fail owner_replies_setup "agent run did not attach"
	exit 1
fi
egress=$(ks_in_ns "$SNS" "$PY" "$E2E_DIR/ks_tcx.py" "$SIF" egress)
if grep -qx ks_tc_egress <<<"$egress" && [ -e "$PIN_ROOT/$SIF/egress_link" ] &&
	report_json "$E2E_TMP/rep0.json" &&
	"$PY" - "$E2E_TMP/rep0.json" "$KEY" <<'PYEOF'; then
import json, sys
doc = json.load(open(sys.argv[1]))
src = doc["owner_replies"]
keys = [k for k in doc["hot_keys"] if k.get("key") == sys.argv[2]]
sys.exit(0 if src == {"counted": True,
                      "source": "tc egress, exact for UDP and unpipelined TCP"}
         and keys and keys[0]["owner"] is not None else 1)
PYEOF
	pass owner_replies_attached_source_named
else
	fail owner_replies_attached_source_named "tcx egress: '$egress', pins: $(ls "$PIN_ROOT/$SIF" 2>/dev/null | tr '\n' ' '), report: $(head -c 400 "$E2E_TMP/rep0.json" 2>/dev/null)"
fi

if ! e2e_client "$E2E_DIR/ks_owner_replies.py" "$SADDR" "$PORT" "$KEY" 3 \
	"$E2E_TMP/client.json" >"$E2E_TMP/client.out" 2>&1; then
	fail owner_replies_client "the client failed: $(tail -c 400 "$E2E_TMP/client.out")"
	exit 1
fi
note "client: $(cat "$E2E_TMP/client.out")"
read -r mc_hits mc_misses mc_gets < <("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))["delta"]
print(d["get_hits"], d["get_misses"], d["cmd_get"])' "$E2E_TMP/client.json")

if [ "$mc_misses" -gt 0 ] && [ "$mc_hits" -gt 0 ] &&
	wait_owner_total "$mc_gets"; then
	read -r hits misses unpaired malformed <<<"$(owner_counts "$E2E_TMP/rep.json")"
	note "memcached: $mc_hits hits, $mc_misses misses of $mc_gets gets; agent: $hits hits, $misses misses, $unpaired unpaired, $malformed malformed"
	if [ "$misses" = "$mc_misses" ] && [ "$unpaired" = 0 ] && [ "$malformed" = 0 ]; then
		pass owner_replies_misses_equal_memcached
	else
		fail owner_replies_misses_equal_memcached "agent $misses misses ($unpaired unpaired, $malformed malformed), memcached $mc_misses"
	fi
	if [ "$hits" = "$mc_hits" ]; then
		pass owner_replies_hits_equal_memcached
	else
		fail owner_replies_hits_equal_memcached "agent $hits hits, memcached $mc_hits"
	fi
else
	fail owner_replies_misses_equal_memcached "memcached $mc_hits hits, $mc_misses misses of $mc_gets gets; the report never reached $mc_gets: $(owner_counts "$E2E_TMP/rep.json" 2>/dev/null)"
	fail owner_replies_hits_equal_memcached "see owner_replies_misses_equal_memcached"
fi

# The text report and the metrics name the source with the numbers.
e2e_agent report --iface "$SIF" >"$E2E_TMP/rep.txt" 2>&1
scrape_ok=0
ks_in_ns "$SNS" "$PY" - "$MPORT" "$E2E_TMP/m.prom" <<'PYEOF' && scrape_ok=1
import sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5) as r:
    open(sys.argv[2], "wb").write(r.read())
PYEOF
if grep -q "from its replies (tc egress, exact for UDP and unpipelined TCP)" "$E2E_TMP/rep.txt" &&
	[ "$scrape_ok" = 1 ] &&
	grep -q '^# HELP keysteer_hot_key_owner_misses_per_second .*tc egress, exact for UDP and unpipelined TCP' "$E2E_TMP/m.prom" &&
	grep -q '^keysteer_hot_key_owner_misses_per_second{hash="0x[0-9a-f]*"} ' "$E2E_TMP/m.prom"; then
	pass owner_replies_text_and_metrics
else
	fail owner_replies_text_and_metrics "text: $(grep -m2 'owner' "$E2E_TMP/rep.txt" | tr '\n' ';'), metrics: $(grep -m2 owner_misses "$E2E_TMP/m.prom" 2>/dev/null | tr '\n' ';')"
fi

e2e_agent_stop
e2e_expect_clean owner_replies_stop_leaves_nothing

# --- the control: --owner-replies off --------------------------------------
# The same reads: memcached misses, and the agent counts none of it, so the
# numbers above come from the egress program and nowhere else.
if ! e2e_agent_start --sample 1 --interval 1 --pins "$E2E_TMP/pins.txt" \
	--owner-replies off -v; then
	fail owner_replies_off_control "agent run did not attach"
	exit 1
fi
e2e_client "$E2E_DIR/ks_owner_replies.py" "$SADDR" "$PORT" "$KEY" 1 \
	"$E2E_TMP/client_off.json" >"$E2E_TMP/client_off.out" 2>&1
off_misses=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["delta"]["get_misses"])' \
	"$E2E_TMP/client_off.json" 2>/dev/null)
e2e_wait_intervals 2
egress=$(ks_in_ns "$SNS" "$PY" "$E2E_DIR/ks_tcx.py" "$SIF" egress)
if report_json "$E2E_TMP/rep_off.json" && [ "${off_misses:-0}" -gt 0 ] &&
	[ -z "$egress" ] &&
	[ "$(owner_counts "$E2E_TMP/rep_off.json")" = none ] &&
	grep -q '"owner_replies":{"counted":false,"source":null}' "$E2E_TMP/rep_off.json"; then
	pass owner_replies_off_control
else
	fail owner_replies_off_control "memcached misses ${off_misses:-?}, tcx egress '$egress', report: $(head -c 300 "$E2E_TMP/rep_off.json" 2>/dev/null)"
fi
e2e_agent_stop
