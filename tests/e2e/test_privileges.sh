#!/usr/bin/env bash
# test_privileges.sh - least privilege of a running agent: after attaching
# it keeps CAP_BPF and CAP_NET_ADMIN only (effective, permitted and bounding
# sets) with no_new_privs; its pins are root's only; its routing file is
# 0640; key bytes reach neither its log (-v) nor its pins' names. With
# --keep-privileges nothing is dropped. Either way it keeps working: the
# hot key is found and the agent detaches cleanly on SIGINT.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init privileges

LOAD=$E2E_ROOT/${OUT:-build}/ks_load
SECRET=customer:4711:card
WANT=0000008000001000 # CAP_BPF (39) | CAP_NET_ADMIN (12)
e2e_net_up

caps() { # PID FIELD
	awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"
}

mkdir -p "$E2E_TMP/route"
if ! e2e_agent_start --sample 1 --interval 0.5 --shard-capacity 1000 \
	--routing-file "$E2E_TMP/route/r.json" -v; then
	fail privileges "the agent did not attach"
	exit 1
fi
sleep 0.5
eff=$(caps "$E2E_AGENT_PID" CapEff)
prm=$(caps "$E2E_AGENT_PID" CapPrm)
bnd=$(caps "$E2E_AGENT_PID" CapBnd)
nnp=$(caps "$E2E_AGENT_PID" NoNewPrivs)
if [ "$eff" = "$WANT" ] && [ "$prm" = "$WANT" ] && [ "$bnd" = "$WANT" ] &&
	[ "$nnp" = 1 ]; then
	pass privileges_capabilities_dropped
	note "CapEff $eff CapPrm $prm CapBnd $bnd NoNewPrivs $nnp"
else
	fail privileges_capabilities_dropped "CapEff $eff CapPrm $prm CapBnd $bnd NoNewPrivs $nnp, want $WANT and 1"
fi

# it still works: a hot key over UDP and TCP, found and published
ks_in_ns "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto udp-gets --keys 100 \
	--flash "$SECRET:0.5" --mix get=90,set=10 --duration 2 --rate 1000 \
	>/dev/null 2>&1
if grep -q "$SECRET" "$E2E_TMP/route/r.json" 2>/dev/null &&
	grep -q "$SECRET" <<<"$(e2e_agent report --iface "$SIF" --json 2>/dev/null)"; then
	pass privileges_agent_still_works
else
	fail privileges_agent_still_works "the hot key is not in the routing file or the report"
fi

# The pin root is every agent's on this host: another agent's --group (a
# parallel test, an operator's) makes it 0750 for that group while it runs,
# which opens nothing here, as this agent's own folder stays 0700. So the
# root must be root's, closed to others and to group writes, not 0700.
modes=$(stat -c '%a %U' "$PIN_ROOT/$SIF" "$PIN_ROOT/$SIF/ks_report" \
	"$PIN_ROOT/$SIF/link" 2>&1 | tr '\n' ' ')
root=$(stat -c '%a %U %G' "$PIN_ROOT" 2>&1)
rmode=$(stat -c %a "$E2E_TMP/route/r.json" 2>/dev/null)
if [ "$modes" = "700 root 600 root 600 root " ] && [ "$rmode" = 640 ] &&
	[[ "$root" =~ ^7[05]0\ root\  ]]; then
	pass privileges_file_modes
	[[ "$root" == 700* ]] || note "pin root $root: shared by another agent's --group"
else
	fail privileges_file_modes "pins: $modes root $root routing file: $rmode"
fi

e2e_agent_stop INT
if [ "$E2E_AGENT_RC" = 0 ] && ! e2e_pins_exist && ! e2e_xdp_attached; then
	pass privileges_clean_stop
else
	fail privileges_clean_stop "exit ${E2E_AGENT_RC:-?}, pins or program left"
fi
if grep -q "$SECRET" "$E2E_TMP/agent.out"; then
	fail privileges_no_keys_in_log "the agent's -v log holds the key: $(grep -m1 "$SECRET" "$E2E_TMP/agent.out")"
elif [ -s "$E2E_TMP/agent.out" ]; then
	pass privileges_no_keys_in_log
	note "$(wc -l <"$E2E_TMP/agent.out") log lines, none with the key"
else
	fail privileges_no_keys_in_log "no log to check"
fi

# --group: a group may read the pins, the routing file and its socket
SOCK=$E2E_TMP/route/ks.sock
if e2e_agent_start --sample 1 --group nogroup --routing-file "$E2E_TMP/route/g.json" \
	--listen "unix:$SOCK"; then
	sleep 0.3
	modes=$(stat -c '%a %G' "$PIN_ROOT/$SIF" "$PIN_ROOT/$SIF/ks_report" \
		"$E2E_TMP/route/g.json" "$SOCK" 2>&1 | tr '\n' ' ')
	if [ "$modes" = "750 nogroup 640 nogroup 640 nogroup 660 nogroup " ]; then
		pass privileges_group
	else
		fail privileges_group "modes and groups: $modes"
	fi
	got=$("$PY" - "$SOCK" <<'PYEOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(sys.argv[1])
s.sendall(b"GET /routing HTTP/1.0\r\n\r\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
head, _, body = data.partition(b"\r\n\r\n")
print("ok" if head.startswith(b"HTTP/1.1 200") and "keys" in json.loads(body) else head[:80])
PYEOF
)
	if [ "$got" = ok ]; then
		pass privileges_unix_socket_routing
	else
		fail privileges_unix_socket_routing "$got"
	fi
	e2e_agent_stop INT
	if [ ! -e "$SOCK" ]; then
		pass privileges_unix_socket_removed
	else
		fail privileges_unix_socket_removed "$SOCK left after the agent stopped"
	fi
else
	fail privileges_group "the agent did not attach with --group nogroup"
fi
e2e_agent run --iface "$SIF" --group no_such_group_$$ >"$E2E_TMP/g.out" 2>&1
rc=$?
if [ "$rc" = 2 ] && grep -q "no_such_group_$$" "$E2E_TMP/g.out" && ! e2e_pins_exist; then
	pass privileges_group_unknown_refused
else
	fail privileges_group_unknown_refused "exit $rc: $(head -c 200 "$E2E_TMP/g.out")"
fi

if e2e_agent_start --sample 1 --keep-privileges; then
	eff=$(caps "$E2E_AGENT_PID" CapEff)
	if [ "$eff" != "$WANT" ] && [ "$(caps "$E2E_AGENT_PID" NoNewPrivs)" = 0 ]; then
		pass privileges_keep_privileges
	else
		fail privileges_keep_privileges "CapEff $eff with --keep-privileges"
	fi
	e2e_agent_stop INT
else
	fail privileges_keep_privileges "the agent did not attach"
fi
exit "$E2E_FAILED"
