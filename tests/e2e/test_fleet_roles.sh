#!/usr/bin/env bash
# test_fleet_roles.sh - the etcd roles docs/operations.md ("Threat model:
# the fleet in etcd") tells operators to give, on Debian's etcd 3.4 with
# auth on, never a mock. One etcd in the server namespace on the veth
# address; users and roles made with etcdctl as root:
#   operator  ks-operator: read the prefix, readwrite the ring and the pins
#   agent     ks-agent: read the prefix, readwrite hot/ and its own
#             hosts/SELF, members/SELF and /keysteer-load/CLUSTER/SELF
#             only (single keys)
#   client    ks-client: read the prefix
#   nobody    no role
# Checks, each allowed action by its effect and each refusal by etcd's
# exact words ("etcdserver: permission denied"):
# - the operator's `agent ring set` and `agent pins set` land in etcd;
# - an agent run with --etcd-user agent (and --fleet-compat full, so that
#   the pinned key, only counted, has a hot/ entry) starts on that ring
#   and publishes hosts/SELF and the pinned key's hot/ entry (read back as
#   root);
# - the agent's credentials are refused writing the ring (`agent ring set`
#   and a raw etcdctl put) and another host's hosts/ entry; the ring is
#   unchanged in etcd;
# - a libkeysteer handle with etcd_user=client
#   (through the Python adapter) serves a set and a get, reads the fleet
#   (the ring's revision, the pinned key's hot/ entry) and follows the
#   operator's next ring through its watch;
#   etcdctl put with the client's credentials is refused;
# - nobody is refused reading the prefix (etcdctl and libkeysteer), a
#   handle without a user is refused, a wrong password is refused without
#   the password in the message;
# - control: the same raw put of the ring by the agent's user succeeds
#   once its role is granted the ring, so the refusals were the roles'.
# etcd and the agent are stopped by their pids on every exit path.
#
# A loaded machine: etcd with auth on checks a password with bcrypt in
# its raft loop, so one call of a client that authenticates took over 2 s
# (the agent's default --etcd-timeout) and over etcdctl's own 5 s beside
# `stress-ng --cpu 2`. This test is about roles, not timeouts: every etcd
# client here (etcdctl, the agent, libkeysteer) gets a deadline of 30 s
# per call (ECT, ETO, the specs' etcd_timeout_ms) and every wait for an
# effect polls for it with a deadline of 60 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=fleet_lib.sh
. "$E2E_DIR/fleet_lib.sh"
e2e_init fleet_roles

# shellcheck disable=SC2034 # fleet_etcd_cleanup stops it
ETCD_PID=
INTERVAL=0.5
CLUSTER=roles
PFX=/keysteer/$CLUSTER/
EXAMPLE=$E2E_ROOT/${OUT:-build}/ks_client_example
PINKEY=role:1
# a call's deadline for every etcd client (see above): bounded, generous
ETO=(--etcd-timeout 30000)
ECT=(--command-timeout=30s --dial-timeout=10s)

trap fleet_etcd_cleanup EXIT

e2e_need_etcd fleet_roles
if [ ! -x "$EXAMPLE" ]; then
	fail fleet_roles_setup "$EXAMPLE is missing; run 'make'"
	exit 1
fi
e2e_net_up

URL=http://$SADDR:2379
SELF=$SADDR:$PORT
OTHER=198.18.0.9:$PORT
fleet_etcd_up "$SNS" roles "$URL" fleet_roles_setup

# EC USER:PW ARGS: etcdctl as that user; ROOT: as root
EC() {
	local u=$1
	shift
	ks_in_ns "$SNS" etcdctl "${ECT[@]}" --endpoints "$URL" --user "$u" "$@"
}
ROOT() { EC root:rootpw "$@"; }

# ---- users and roles, then auth on ----------------------------------------
for u in operator agent client nobody; do
	printf '%s-pw\n' "$u" >"$E2E_TMP/$u.pw"
done
chmod 600 "$E2E_TMP"/*.pw
setup=(
	"user add root:rootpw"
	"role add ks-operator"
	"role grant-permission ks-operator read --prefix=true $PFX"
	"role grant-permission ks-operator readwrite ${PFX}ring"
	"role grant-permission ks-operator readwrite ${PFX}pins"
	"role add ks-agent"
	"role grant-permission ks-agent read --prefix=true $PFX"
	"role grant-permission ks-agent readwrite --prefix=true ${PFX}hot/"
	"role grant-permission ks-agent readwrite ${PFX}hosts/$SELF"
	"role grant-permission ks-agent readwrite ${PFX}members/$SELF"
	"role grant-permission ks-agent readwrite /keysteer-load/$CLUSTER/$SELF"
	"role add ks-client"
	"role grant-permission ks-client read --prefix=true $PFX"
	"user add operator:operator-pw"
	"user grant-role operator ks-operator"
	"user add agent:agent-pw"
	"user grant-role agent ks-agent"
	"user add client:client-pw"
	"user grant-role client ks-client"
	"user add nobody:nobody-pw"
	"auth enable"
)
for cmd in "${setup[@]}"; do
	# shellcheck disable=SC2086 # the words of one etcdctl command
	if ! ks_in_ns "$SNS" etcdctl "${ECT[@]}" --endpoints "$URL" $cmd >>"$E2E_TMP/setup.out" 2>&1; then
		fail fleet_roles_setup "etcdctl $cmd: $(tail -2 "$E2E_TMP/setup.out")"
		exit 1
	fi
done
# auth is on: anonymous reads are refused (else every check below is moot)
if ks_in_ns "$SNS" etcdctl "${ECT[@]}" --endpoints "$URL" get --prefix "$PFX" >/dev/null 2>&1; then
	fail fleet_roles_setup "etcd serves anonymous reads after 'auth enable'"
	exit 1
fi

# ring_rev: the ring key's mod_revision as root sees it ("" when none)
ring_rev() {
	ROOT get "${PFX}ring" -w json 2>/dev/null | "$PY" -c 'import json, sys
kvs = json.load(sys.stdin).get("kvs", [])
print(kvs[0]["mod_revision"] if kvs else "")'
}
denied() { grep -q '^Error: etcdserver: permission denied$' "$1"; }

# ---- the operator ---------------------------------------------------------
OPS=(--etcd "$URL" --cluster "$CLUSTER" --etcd-user operator
	--etcd-password-file "$E2E_TMP/operator.pw" "${ETO[@]}")
out=$(e2e_agent ring set "${OPS[@]}" --shards "$SELF" 2>&1)
rc=$?
REV=$(sed -n 's/^revision \([0-9]*\) digest \([0-9a-f]*\) 1 shards .*/\1/p' <<<"$out")
DIG=$(sed -n 's/^revision [0-9]* digest \([0-9a-f]*\) .*/\1/p' <<<"$out")
if [ $rc -eq 0 ] && [ -n "$REV" ] && [ "$(ring_rev)" = "$REV" ] &&
	grep -q "\"digest\": *\"$DIG\"" <<<"$(ROOT get --print-value-only "${PFX}ring" 2>&1)"; then
	pass fleet_roles_operator_ring_set
else
	fail fleet_roles_operator_ring_set "exit $rc: $out; etcd at '$(ring_rev)'"
fi
printf 'pin %s 1\n' "$PINKEY" >"$E2E_TMP/roles.pins"
out=$(e2e_agent pins set "${OPS[@]}" --pins "$E2E_TMP/roles.pins" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "pin $PINKEY 1" <<<"$(ROOT get --print-value-only "${PFX}pins" 2>&1)"; then
	pass fleet_roles_operator_pins_set
else
	fail fleet_roles_operator_pins_set "exit $rc: $out"
fi

# ---- the agent ------------------------------------------------------------
AGS=(--etcd "$URL" --cluster "$CLUSTER" --etcd-user agent
	--etcd-password-file "$E2E_TMP/agent.pw" "${ETO[@]}")
# published: hosts/SELF, members/SELF, its load document, and hot/ with
# the pinned key owned by SELF
published() {
	{
		ROOT get --prefix "$PFX" -w json 2>/dev/null
		echo
		ROOT get --prefix "/keysteer-load/$CLUSTER/" -w json 2>/dev/null
	} | "$PY" -c 'import base64, json, sys
pfx, self, key, cluster = sys.argv[1:5]
host = hot = False
docs = [json.loads(l) for l in sys.stdin.read().split("\n") if l.strip()]
kvs = [kv for d in docs for kv in d.get("kvs", [])]
want = {pfx + "hosts/" + self, pfx + "members/" + self,
        "/keysteer-load/" + cluster + "/" + self}
have = set()
for kv in kvs:
    k = base64.b64decode(kv["key"]).decode()
    v = base64.b64decode(kv["value"]).decode("latin-1")
    if k in want and int(kv.get("lease", 0)):
        have.add(k)
    host = have == want
    if k.startswith(pfx + "hot/") and int(kv.get("lease", 0)):
        d = json.loads(v)
        hot = hot or (d.get("key") == key and d.get("owner") == self)
sys.exit(0 if host and hot else 1)' "$PFX" "$SELF" "$PINKEY" "$CLUSTER"
}
# --fleet-compat full: a key only counted (the pin of one copy, no
# replicas) has its hot/ entry as before schema 2's readers want it, so
# the agent's hot/ grant and a client's read of hot/ are exercised (by
# default it would be in the load document only, docs/fleet.md)
if e2e_agent_start -v --interval "$INTERVAL" --self "$SELF" --fleet-compat full "${AGS[@]}"; then
	ok=0
	# a pin enters the hot table at the next interval, its entry is
	# handed to the publisher then: 60 s is room for a loaded machine
	for ((i = 0; i < 600; i++)); do
		published && ok=1 && break
		kill -0 "$E2E_AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ $ok = 1 ] && grep -q "etcd .* the ring is ${PFX}ring (read)" "$E2E_TMP/agent.out" &&
		! grep -qi 'permission denied' "$E2E_TMP/agent.out"; then
		pass fleet_roles_agent_publishes
	else
		fail fleet_roles_agent_publishes "hosts/$SELF and hot/ of $PINKEY: $ok; agent: $(grep -i 'etcd\|denied' "$E2E_TMP/agent.out" | head -c 600)"
	fi
else
	fail fleet_roles_agent_publishes "the agent did not start: $(head -c 600 "$E2E_TMP/agent.out")"
fi

out=$(e2e_agent ring set "${AGS[@]}" --shards "$SELF,$OTHER" 2>&1)
rc=$?
# ring set prints what the change moves first; its last line is the refusal
if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "agent: cannot write ${PFX}ring: etcd: etcdserver: permission denied ($URL)" ] &&
	[ "$(ring_rev)" = "$REV" ]; then
	pass fleet_roles_agent_ring_set_refused
	note "exit $rc: $out"
else
	fail fleet_roles_agent_ring_set_refused "exit $rc: $out; ring at '$(ring_rev)', was $REV"
fi
RING_DOC=$(ROOT get --print-value-only "${PFX}ring" 2>/dev/null)
EC agent:agent-pw put "${PFX}ring" "$RING_DOC" >"$E2E_TMP/agent_put.out" 2>&1
rc=$?
EC agent:agent-pw put "${PFX}hosts/$OTHER" '{}' >"$E2E_TMP/agent_other.out" 2>&1
rc2=$?
if [ $rc -ne 0 ] && denied "$E2E_TMP/agent_put.out" && [ "$(ring_rev)" = "$REV" ]; then
	pass fleet_roles_agent_raw_ring_put_refused
else
	fail fleet_roles_agent_raw_ring_put_refused "exit $rc: $(cat "$E2E_TMP/agent_put.out"); ring at '$(ring_rev)', was $REV"
fi
if [ $rc2 -ne 0 ] && denied "$E2E_TMP/agent_other.out" &&
	[ -z "$(ROOT get --print-value-only "${PFX}hosts/$OTHER" 2>&1)" ]; then
	pass fleet_roles_agent_other_host_refused
else
	fail fleet_roles_agent_other_host_refused "exit $rc2: $(cat "$E2E_TMP/agent_other.out")"
fi

# ---- a libkeysteer client -------------------------------------------------
# Through the Python adapter (one handle, its own watch thread): a set and
# a get, the view up (its watch established), the fleet read (the ring's
# revision, the pinned key's hot/ entry), then the operator's next ring
# reaching the handle through its watch.
CSPEC="etcd=$URL cluster=$CLUSTER etcd_timeout_ms=30000 etcd_user=client etcd_password_file=$E2E_TMP/client.pw"
KX() { ks_in_ns "$CNS" "$EXAMPLE" "$@"; }
cat >"$E2E_TMP/client.py" <<'PYEOF'
import sys, time
from keysteer_client import Client
spec, rev = sys.argv[1], int(sys.argv[2])
with Client(spec) as c:
    c.set("role:v", b"hello")
    got = c.get("role:v")
    end = time.monotonic() + 60  # room for a loaded machine
    st = c.stats()
    while not st["view_up"] and time.monotonic() < end:
        time.sleep(0.05)
        st = c.stats()
    print("ready get %s view_up %d ring_revision %d hot_keys %d" % (
        got.decode() if got else None, st["view_up"], st["ring_revision"],
        st["hot_keys"]), flush=True)
    end = time.monotonic() + 60
    while st["ring_revision"] == rev and time.monotonic() < end:
        time.sleep(0.05)
        st = c.stats()
    print("moved ring_revision %d" % st["ring_revision"], flush=True)
PYEOF
ks_in_ns_bg "$CNS" env PYTHONPATH="$E2E_ROOT/user/client/python" \
	"$PY" "$E2E_TMP/client.py" "$CSPEC" "$REV" \
	</dev/null >"$E2E_TMP/client.out" 2>&1
CPID=$KS_BG_PID
if e2e_wait_line "$E2E_TMP/client.out" '^ready ' "$CPID" 900 &&
	grep -q "^ready get hello view_up 1 ring_revision $REV hot_keys [1-9]" "$E2E_TMP/client.out"; then
	pass fleet_roles_client_reads
	note "$(grep '^ready' "$E2E_TMP/client.out")"
else
	fail fleet_roles_client_reads "$(head -c 600 "$E2E_TMP/client.out") (want get hello, view_up 1, ring_revision $REV, a hot key)"
fi
# the operator's next ring (a weight: the one shard still owns every key)
out=$(e2e_agent ring set "${OPS[@]}" --shards "$SELF:2" 2>&1)
R2=$(sed -n 's/^revision \([0-9]*\) .*/\1/p' <<<"$out")
wait "$CPID"
rc=$?
if [ -n "$R2" ] && [ $rc -eq 0 ] && grep -q "^moved ring_revision $R2$" "$E2E_TMP/client.out"; then
	pass fleet_roles_client_follows_ring
	REV=$R2
else
	fail fleet_roles_client_follows_ring "ring set: $out; client exit $rc: $(tail -c 400 "$E2E_TMP/client.out")"
	[ -n "$R2" ] && REV=$R2
fi
RING_DOC=$(ROOT get --print-value-only "${PFX}ring" 2>/dev/null)
EC client:client-pw put "${PFX}ring" "$RING_DOC" >"$E2E_TMP/client_put.out" 2>&1
rc=$?
EC client:client-pw put "${PFX}hot/0000000000000001" '{}' >"$E2E_TMP/client_hot.out" 2>&1
rc2=$?
if [ $rc -ne 0 ] && [ $rc2 -ne 0 ] && denied "$E2E_TMP/client_put.out" &&
	denied "$E2E_TMP/client_hot.out" && [ "$(ring_rev)" = "$REV" ]; then
	pass fleet_roles_client_write_refused
else
	fail fleet_roles_client_write_refused "exits $rc $rc2: $(cat "$E2E_TMP/client_put.out" "$E2E_TMP/client_hot.out")"
fi

# ---- nobody, no user, a wrong password ------------------------------------
EC nobody:nobody-pw get --prefix "$PFX" >"$E2E_TMP/nobody_get.out" 2>&1
rc=$?
NSPEC="etcd=$URL cluster=$CLUSTER etcd_timeout_ms=30000 etcd_user=nobody etcd_password_file=$E2E_TMP/nobody.pw"
out=$(KX "$NSPEC" stats 2>&1)
rc2=$?
if [ $rc -ne 0 ] && denied "$E2E_TMP/nobody_get.out" && [ $rc2 -eq 2 ] &&
	[ "$out" = "keysteer_open: etcd: reading $PFX: etcd: etcdserver: permission denied ($URL)" ]; then
	pass fleet_roles_nobody_read_refused
	note "$out"
else
	fail fleet_roles_nobody_read_refused "etcdctl exit $rc: $(cat "$E2E_TMP/nobody_get.out"); libkeysteer exit $rc2: $out"
fi
out=$(KX "etcd=$URL cluster=$CLUSTER etcd_timeout_ms=30000" stats 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -q "^keysteer_open: .*etcd has auth enabled and no user was given" <<<"$out"; then
	pass fleet_roles_anonymous_client_refused
else
	fail fleet_roles_anonymous_client_refused "exit $rc: $out"
fi
printf 'not-the-pw-4711\n' >"$E2E_TMP/wrong.pw"
out=$(KX "etcd=$URL cluster=$CLUSTER etcd_timeout_ms=30000 etcd_user=client etcd_password_file=$E2E_TMP/wrong.pw" stats 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -q "^keysteer_open: .*etcd refused the user and password" <<<"$out" &&
	! grep -q 'not-the-pw-4711' <<<"$out"; then
	pass fleet_roles_client_wrong_password_refused
else
	fail fleet_roles_client_wrong_password_refused "exit $rc: $out"
fi

# ---- control: the role granted the ring, the same put goes through -------
ROOT role grant-permission ks-agent readwrite "${PFX}ring" >"$E2E_TMP/grant.out" 2>&1
EC agent:agent-pw put "${PFX}ring" "$RING_DOC" >"$E2E_TMP/agent_put2.out" 2>&1
rc=$?
now=$(ring_rev)
ROOT role revoke-permission ks-agent "${PFX}ring" >>"$E2E_TMP/grant.out" 2>&1
if [ $rc -eq 0 ] && [ -n "$now" ] && [ "$now" != "$REV" ]; then
	pass fleet_roles_control_granted_put_lands
	note "with the ring granted to ks-agent the agent's put is revision $now (was $REV)"
else
	fail fleet_roles_control_granted_put_lands "exit $rc: $(cat "$E2E_TMP/grant.out" "$E2E_TMP/agent_put2.out"); ring at '$now', was $REV"
fi

e2e_agent_stop INT
exit "$E2E_FAILED"
