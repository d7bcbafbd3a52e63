#!/usr/bin/env bash
# test_attach_twice.sh - a second `agent run` on an interface where keysteer
# already runs is refused with a clear message and a non-zero exit, and the
# first agent goes on unaffected: still attached, still publishing reports,
# still counting traffic, and it still detaches cleanly on SIGINT.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init attach_twice
e2e_net_up

if ! e2e_agent_start --sample 1 --interval 0.5; then
	fail attach_twice_first "the first agent did not attach"
	exit 1
fi
first=$E2E_AGENT_PID

timeout 15 nsenter --net="/run/netns/$SNS" -- "$AGENT" run --iface "$SIF" \
	>"$E2E_TMP/second.out" 2>"$E2E_TMP/second.err"
rc=$?
note "second agent: exit $rc: $(head -c 300 "$E2E_TMP/second.err")"
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
	fail attach_twice_refused "second 'agent run' exited $rc instead of refusing"
elif ! grep -q "already attached to $SIF" "$E2E_TMP/second.err"; then
	fail attach_twice_refused "message does not say keysteer is already attached to $SIF"
elif ! grep -q "agent detach --iface $SIF" "$E2E_TMP/second.err"; then
	fail attach_twice_refused "message does not tell how to detach"
elif ! grep -q "pid $first" "$E2E_TMP/second.err"; then
	fail attach_twice_refused "message does not name the running agent's pid $first"
else
	pass attach_twice_refused
fi

# The first agent: alive, its pins and program in place, and still working.
if kill -0 "$first" 2>/dev/null && [ -e "$PIN_ROOT/$SIF/link" ] &&
	e2e_xdp_attached; then
	pass attach_twice_first_intact
else
	fail attach_twice_first_intact "the first agent, its link pin or its XDP program is gone"
fi

# Traffic for 3 s (six intervals of 0.5 s); the report read in the middle
# describes an interval that lay wholly inside it.
before=$(e2e_agent report --iface "$SIF" --json 2>/dev/null |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["seq"])')
e2e_client "$E2E_DIR/ks_send.py" --server "$SADDR" gets twice: 3000 \
	--keys 10 --over 3 &
client=$!
sleep 2
e2e_agent report --iface "$SIF" --json >"$E2E_TMP/report.json" 2>&1
wait "$client" || fail attach_twice_traffic "memcached did not answer the client"
if "$PY" - "$E2E_TMP/report.json" "$first" "${before:-0}" <<'EOF'; then
import json, sys
doc = json.load(open(sys.argv[1]))
pid, before = int(sys.argv[2]), int(sys.argv[3])
reads = sum(e["reads_per_s"] for e in doc["top"]
            if e.get("key", "").startswith("twice:"))
print("  report: agent_pid %s alive %s seq %s -> %s, twice:* reads/s %.0f "
      "(sent 1000/s)" % (doc["agent_pid"], doc["agent_alive"], before,
                         doc["seq"], reads))
# The first agent's own report, fresh, and counting what the client sends.
ok = (doc["agent_pid"] == pid and doc["agent_alive"] and doc["seq"] > before
      and 900 < reads < 1100)
sys.exit(0 if ok else 1)
EOF
	pass attach_twice_first_reports
else
	fail attach_twice_first_reports "the first agent's report is not its own, stale, or does not count the client's gets"
fi

e2e_agent_stop INT
if [ "$E2E_AGENT_RC" = 0 ]; then
	pass attach_twice_first_exit
else
	fail attach_twice_first_exit "first agent exited $E2E_AGENT_RC on SIGINT"
fi
e2e_expect_clean attach_twice_detached
