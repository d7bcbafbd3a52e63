#!/usr/bin/env bash
# test_etcd_client.sh - the etcd client (user/net/etcd.c) against Debian's etcd
# 3.4, never a mock: in a network namespace of its own (its own loopback,
# so no port clashes with anything on the host) it starts three etcd
# processes, a plain one, one with auth on (root:pw, tokens living 2 s) and
# one over TLS that wants client certificates (a CA, server and client
# certificates made here with openssl), adds a veth pair where
# frames vanish (an unreachable address, 198.18.200.2), and runs
# $OUT/tests/etcd_test against them: put/range/prefix/delete, CAS won, lost
# and raced, leases expiring, kept alive and revoked, watches in order from
# a revision, failover, unreachable etcd within the deadline, wrong
# passwords and certificates, a watch across an etcd restart (an etcd that
# etcd_test starts itself; its pid in $E2E_TMP/restart.pid). Every etcd is
# stopped by its pid on every exit path, and the namespace deleted.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init etcd_client

ETCD_TEST=$E2E_ROOT/${OUT:-build}/tests/etcd_test
ENS=ks_etcd_$$
ETCD_PIDS=()
PLAIN=http://127.0.0.1:2379
AUTH=http://127.0.0.1:2479
TLS=https://127.0.0.1:2579
DOWN=http://127.0.0.1:2779         # nothing listens
BLACKHOLE=http://198.18.200.2:2379 # frames dropped (below)

etcd_cleanup() {
	local rc=$? pid
	for pid in "${ETCD_PIDS[@]}"; do
		ks_stop_pid "$pid" TERM 5
	done
	# etcd_test's own etcd, if it died before stopping it: by pid, and
	# only if that pid is still an etcd on our data folder
	if [ -s "$E2E_TMP/restart.pid" ]; then
		pid=$(cat "$E2E_TMP/restart.pid")
		if [ -r "/proc/$pid/cmdline" ] &&
			grep -qF "$E2E_TMP" <<<"$(tr '\0' ' ' <"/proc/$pid/cmdline")"; then
			kill -KILL "$pid" 2>/dev/null
		fi
	fi
	ks_ns_delete "$ENS"
	(exit "$rc")
	e2e_cleanup
}
trap etcd_cleanup EXIT

e2e_require etcd_client "make deps: etcd-server, etcd-client, openssl" \
	etcd etcdctl openssl
if [ ! -x "$ETCD_TEST" ]; then
	fail etcd_client "$ETCD_TEST is missing; run 'make' first"
	exit 1
fi

# The blackhole: a veth pair inside the namespace, 198.18.200.2 a fixed
# neighbour on one end; the frames reach the other end, which has no
# address and does not forward, and are dropped: a connect there hangs.
if ! ip netns add "$ENS" || ! ip -n "$ENS" link set lo up ||
	! ip -n "$ENS" link add "ks_bh$$" type veth peer name "ks_bp$$" ||
	! ip -n "$ENS" addr add 198.18.200.1/24 dev "ks_bh$$" ||
	! ip -n "$ENS" link set "ks_bh$$" up || ! ip -n "$ENS" link set "ks_bp$$" up ||
	! ip -n "$ENS" neigh add 198.18.200.2 lladdr 02:00:00:00:00:01 \
		dev "ks_bh$$" nud permanent; then
	fail etcd_client_setup "could not make the namespace"
	exit 1
fi

# etcd_start NAME CLIENT_URL PEER_PORT [ARGS...]: one single-member etcd in
# the namespace, its data and log under $E2E_TMP/NAME; waits for its port.
etcd_start() {
	local name=$1 url=$2 peer=http://127.0.0.1:$3 port
	shift 3
	# KS_ETCD_NICE and KS_ETCD_DATA (tmpfs): lib.sh's, as every etcd of
	# the suite
	ks_in_ns_bg "$ENS" nice -n "$KS_ETCD_NICE" etcd --name "$name" --data-dir "$KS_ETCD_DATA/$name.data" \
		--listen-client-urls "$url" --advertise-client-urls "$url" \
		--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
		--initial-cluster "$name=$peer" "$@" \
		</dev/null >"$E2E_TMP/$name.log" 2>&1
	ETCD_PIDS+=("$KS_BG_PID")
	port=${url##*:}
	if ! ks_wait_tcp "$ENS" 127.0.0.1 "$port" 10; then
		fail etcd_client_setup "etcd $name did not start:"
		tail -5 "$E2E_TMP/$name.log" | sed 's/^/    /'
		exit 1
	fi
}

# certificates: a CA, etcd's (IP SAN 127.0.0.1), a client's (CN root),
# and another CA that signed none of them
cert() {
	local name=$1 cn=$2 ext=$3
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$E2E_TMP/$name.key" -out "$E2E_TMP/$name.csr" -subj "/CN=$cn" 2>/dev/null &&
		printf '%s\n' "$ext" >"$E2E_TMP/$name.ext" &&
		openssl x509 -req -in "$E2E_TMP/$name.csr" -CA "$E2E_TMP/ca.pem" \
			-CAkey "$E2E_TMP/ca.key" -CAcreateserial -days 1 \
			-extfile "$E2E_TMP/$name.ext" -out "$E2E_TMP/$name.pem" 2>/dev/null
}
for ca in ca other-ca; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$E2E_TMP/$ca.key" -out "$E2E_TMP/$ca.pem" -days 1 \
		-subj "/CN=keysteer test $ca" 2>/dev/null ||
		{ fail etcd_client_setup "openssl could not make $ca"; exit 1; }
done
if ! cert server etcd $'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth' ||
	! cert client root 'extendedKeyUsage=clientAuth'; then
	fail etcd_client_setup "openssl could not make the certificates"
	exit 1
fi

etcd_start plain "$PLAIN" 2380
etcd_start auth "$AUTH" 2480 --auth-token-ttl 2
etcd_start tls "$TLS" 2580 --cert-file "$E2E_TMP/server.pem" \
	--key-file "$E2E_TMP/server.key" --trusted-ca-file "$E2E_TMP/ca.pem" \
	--client-cert-auth

# auth on: the root user with a password (etcdctl grants it the root role)
if ! ks_in_ns "$ENS" etcdctl --endpoints "$AUTH" user add root:pw >"$E2E_TMP/auth.out" 2>&1 ||
	! ks_in_ns "$ENS" etcdctl --endpoints "$AUTH" auth enable >>"$E2E_TMP/auth.out" 2>&1; then
	fail etcd_client_setup "could not enable auth: $(tail -2 "$E2E_TMP/auth.out")"
	exit 1
fi

note "etcd $(etcd --version | head -1 | awk '{print $3}'); gateway paths served:" \
	"$(for p in v3 v3beta v3alpha; do
		code=$(ks_in_ns "$ENS" curl -s -o /dev/null -w '%{http_code}' \
			"$PLAIN/$p/kv/range" -d '{"key":"Zm9v"}')
		printf '/%s/ %s  ' "$p" "$code"
	done)"

out=$E2E_TMP/etcd_test.out
ks_in_ns "$ENS" "$ETCD_TEST" --plain "$PLAIN" --down "$DOWN" --blackhole "$BLACKHOLE" \
	--auth "$AUTH" --password pw \
	--tls "$TLS" --ca "$E2E_TMP/ca.pem" --cert "$E2E_TMP/client.pem" \
	--key "$E2E_TMP/client.key" --other-ca "$E2E_TMP/other-ca.pem" \
	--etcd-bin "$(command -v etcd)" --dir "$E2E_TMP" --restart-port 2679 \
	>"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$out"; then
	fail etcd_test "exited with status $rc without reporting a failure"
fi
grep -q '^FAIL ' "$out" && E2E_FAILED=1

# every etcd this script started is still up (none crashed under the tests)
for pid in "${ETCD_PIDS[@]}"; do
	kill -0 "$pid" 2>/dev/null || fail etcd_client_servers "etcd pid $pid died during the tests"
done
exit 0
