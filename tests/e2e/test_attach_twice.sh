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

# Traffic for 3 s (six intervals of 0.5 s). The first agent's report must
# be its own and fresh (of a later interval than before the traffic), list
# the client's keys, and the datapath's totals hold every get, exactly. No
# rate is compared: a busy machine can hold the client's pacing up.
report_doc() { e2e_agent report --iface "$SIF" --json 2>/dev/null; }
read -r before gets0 <<<"$(report_doc | "$PY" -c 'import json,sys
d = json.load(sys.stdin); print(d["seq"], d["totals"]["ops"]["get"]["requests"])')"
e2e_client "$E2E_DIR/ks_send.py" --server "$SADDR" gets twice: 3000 \
	--keys 10 --over 3 &
client=$!
# twice_reads FILE: the report's pid, alive, seq and reads/s of twice:*
twice_reads() {
	"$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(d["agent_pid"], d["agent_alive"], d["seq"], sum(e["reads_per_s"]
      for e in d["top"] if e.get("key", "").startswith("twice:")))' "$1" 2>/dev/null
}
# waited for: a report of an interval with the client's gets in it
for ((i = 0; i < 200; i++)); do
	report_doc >"$E2E_TMP/report.json"
	read -r pid alive seq reads <<<"$(twice_reads "$E2E_TMP/report.json")"
	[ "${seq:-0}" -gt "${before:-0}" ] && [ "${reads:-0}" != 0 ] && break
	sleep 0.1
done
wait "$client" || fail attach_twice_traffic "memcached did not answer the client"
# every get has had its reply, so has gone through the datapath
gets=$(report_doc | "$PY" -c 'import json,sys
print(json.load(sys.stdin)["totals"]["ops"]["get"]["requests"] - int(sys.argv[1]))' "${gets0:-0}")
note "report: agent_pid ${pid:-?} alive ${alive:-?} seq ${before:-?} -> ${seq:-?}, twice:* reads/s ${reads:-?}; gets counted ${gets:-?} (sent 3000)"
if [ "${pid:-}" = "$first" ] && [ "${alive:-}" = True ] &&
	[ "${seq:-0}" -gt "${before:-0}" ] && [ "${reads:-0}" != 0 ] &&
	[ "${gets:-}" = 3000 ]; then
	pass attach_twice_first_reports
else
	fail attach_twice_first_reports "the first agent's report is not its own, stale, lists none of the client's keys, or its totals miss gets"
fi

e2e_agent_stop INT
if [ "$E2E_AGENT_RC" = 0 ]; then
	pass attach_twice_first_exit
else
	fail attach_twice_first_exit "first agent exited $E2E_AGENT_RC on SIGINT"
fi
e2e_expect_clean attach_twice_detached
