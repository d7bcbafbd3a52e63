#!/usr/bin/env bash
# test_clients.sh - every request of a real client counted once (issue 10).
# e2e-timeout: 900
# (run.sh's limit for this script: its 57 results took 152 s at load 15
# and 354 s at load 30 on 2 cores (stress-ng --cpu 2 beside other runs);
# E2E_TIMEOUT's 300 s timed it out at load 25.)
#
# Real clients from Debian's packages drive real memcached through the
# agent (--sample 1), and the agent's exact cumulative totals must equal
# memcached's own counts, per op, exactly:
#   libmemcached-tools: memcslap (set/get/mget), memcaslap, memccapable,
#   memccp/memccat/memctouch/memcrm; python3-pymemcache; python3-pylibmc;
#   text and binary where the client speaks both, TCP and UDP where it can.
# The whole matrix runs on veths with MTU 1500, again with MTU 9000 (XDP
# native both times), and once with the tc program and GRO on the veth.
#
# Truth (tests/e2e/ks_clients.py has the details and memcached's rules):
# memcached's `stats` deltas around each run (cmd_get = keys of
# get/gets/mg, cmd_touch = touch + gat/gats keys, cmd_set = storage
# requests, delete_*, incr_*/decr_*), taken from inside the server
# namespace over loopback, where the agent does not look; and memcached's
# own -vv log of every request it read (requests per op, 'other' included,
# refusals apart), itself checked against those stats. The agent's side is
# "totals" of `agent report --json` (while that is missing the numbers are
# read from the pinned maps with bpftool, and the case FAILs saying so).
# One PASS/FAIL line per pass x client x protocol x transport, after a
# table of the counts.
#
# Expected to FAIL until the stream-following datapath of issue 10 lands:
# today multi-gets and pipelines that cross segments, values that cross
# segments, keys with bytes <= 0x20 and fragmented UDP are miscounted,
# native XDP does not attach at MTU 9000.
#
# Care: memccapable's "ascii verbosity" test is left out (it sends
# "verbosity 0", which silences the -vv log); libmemcached sends no reads
# over UDP and memcrm has no --udp; memcslap over UDP bursts faster than a
# logging memcached reads, so it sends 30 sets (a UDP datagram dropped by
# memcached's socket makes the run void: no verdict, the case runs again,
# three times at most; void every time FAILs, never PASSes).
#
# Set-up: namespaces ksc_cli_PID / ksc_srv_PID joined by a veth pair
# (198.18.0.1 / 198.18.0.2), memcached -t 1 -vv on TCP and UDP 11211 in the
# server namespace; the EXIT trap (lib.sh) stops the agent and memcached
# and deletes the namespaces on every path. KSC_PASSES picks passes
# (default "mtu1500 mtu9000 tc_gro"), KSC_CLIENTS clients (default all).
# The passes run side by side, each in a process of its own with all of
# the above its own (KSC_SERIAL=1: one after another, as before).
# KSC_TC_ARGS: the `agent run` options that attach the tc program (default
# "--attach tc"; set it empty and the tc pass FAILs saying it has none).
set -u
# shellcheck source=tests/e2e/lib.sh disable=SC2034
. "$(dirname "$0")/lib.sh"
e2e_init clients
# Our own names: ksc_ / ksc- never clash with lib.sh's ks_ ones.
CNS=ksc_cli_$$
SNS=ksc_srv_$$
CIF=ksc-c$$
SIF=ksc-s$$

HELPER=$E2E_DIR/ks_clients.py
MCLOG=$E2E_TMP/memcached.log
CLIENT_TIMEOUT=25 # seconds for any one client command
PASSES=${KSC_PASSES:-mtu1500 mtu9000 tc_gro}
KSC_TC_ARGS=${KSC_TC_ARGS---attach tc}
CLIENTS=${KSC_CLIENTS:-memcslap memcaslap memccapable memctools pymemcache pylibmc}
SRV=$SADDR:$PORT

e2e_require clients_setup "make deps: memcached" memcached
# The reader of memcached's log, on logs of known content, before it judges
# (once: not again in each pass's own process, below)
[ -n "${KSC_PASS_CHILD:-}" ] || "$PY" "$HELPER" selftest
for tool in memcslap memccapable memccp memccat memctouch memcrm; do
	if ! command -v "$tool" >/dev/null; then
		fail clients_setup "$tool is missing (make deps: libmemcached-tools)"
		exit 1
	fi
done

# ---- the passes side by side ----
# Each pass is this script again (KSC_PASS_CHILD=1, KSC_PASSES one pass)
# in a process of its own, all at once: its own namespaces, veth pair,
# memcached, log and agent (pins under its own interface's name), its own
# EXIT trap that stops and removes them; nothing of one pass is read by
# another's checks. They ran one after another before, each mostly
# waiting (memcached's log still for 0.3 s twice a case, a Python start
# per snapshot): 98 to 154 s for the three. Their outputs are printed in
# pass order once all have ended. A datagram memcached's socket drops on
# the busier machine makes that case void and run again, as before.
# KSC_SERIAL=1: one after another in this process, as before.
if [ -z "${KSC_PASS_CHILD:-}" ] && [ -z "${KSC_SERIAL:-}" ] &&
	[ "$(wc -w <<<"$PASSES")" -gt 1 ]; then
	t0=$SECONDS
	# shellcheck disable=SC2086 # one word a pass
	e2e_side_by_side KSC_PASS_CHILD KSC_PASSES "$E2E_DIR/test_clients.sh" $PASSES
	note "the passes took $((SECONDS - t0)) s side by side"
	exit "$E2E_FAILED"
fi

# ---- network and memcached ----
if ! ks_pair_create "$CNS" "$SNS" "$CIF" "$SIF" "$CADDR/24" "$SADDR/24"; then
	fail clients_setup "could not create namespaces and veth pair"
	exit 1
fi
# -t 1: one worker thread, so memcached's -vv lines never interleave.
ks_in_ns_bg "$SNS" memcached -u nobody -l "$SADDR" -p "$PORT" -U "$PORT" \
	-m 256 -t 1 -c 1024 -vv </dev/null >/dev/null 2>"$MCLOG"
KS_MEMCACHED_PID=$KS_BG_PID # lib.sh's cleanup stops it
if ! ks_wait_tcp "$SNS" "$SADDR" "$PORT" 5; then
	fail clients_setup "memcached did not start: $(head -c 300 "$MCLOG")"
	exit 1
fi

set_mtu() {
	ip -n "$CNS" link set dev "$CIF" mtu "$1" &&
		ip -n "$SNS" link set dev "$SIF" mtu "$1"
}

# Wait until memcached has read everything the client sent: nothing
# waits in its sockets' receive queues, no connection the client closed
# is left unread (CLOSE_WAIT), and its log (every request it reads is
# logged) has not grown for 0.3 s since; 60 s at most (the check then
# says what differs). Sampled every 50 ms from memcached's own /proc
# files (its namespace's sockets; its stderr's offset, the log's size):
# no nsenter, no stat: those, cat and awk made a sample cost ~50 ms on a
# loaded machine, and each case waits twice.
# unread: bytes in receive queues (an accept backlog on a listener) of
# memcached's port, plus TCP connections in CLOSE_WAIT (/proc/net's st 08,
# which no UDP socket shows).
MC_PORT_HEX=$(printf ':%04X' "$PORT")
unread() {
	local n=/proc/$KS_MEMCACHED_PID/net
	cat "$n/tcp" "$n/tcp6" "$n/udp" "$n/udp6" 2>/dev/null |
		awk -v port="$MC_PORT_HEX" '
		function hex(h,  i, v) {
			v = 0
			for (i = 1; i <= length(h); i++)
				v = v * 16 + index("0123456789ABCDEF", toupper(substr(h, i, 1))) - 1
			return v
		}
		substr($2, length($2) - 4) == port {
			split($5, q, ":"); n += hex(q[2])
			if ($4 == "08") n++
		}
		END { print n + 0 }'
}

# log_size: memcached's stderr offset (its -vv log's size so far)
log_size() {
	local k v
	while read -r k v; do
		[ "$k" = pos: ] && echo "$v" && return 0
	done <"/proc/$KS_MEMCACHED_PID/fdinfo/2"
	stat -c %s "$MCLOG" # memcached gone: the file itself
}

quiesce() {
	local last=-1 now same=0 i
	for ((i = 0; i < 1200; i++)); do
		now=$(log_size)
		if [ "$now" = "$last" ] && [ "$(unread)" = 0 ]; then
			same=$((same + 1))
			[ "$same" -ge 6 ] && return 0
		else
			same=0
		fi
		last=$now
		sleep 0.05
	done
	note "memcached had not read everything after 60 s: counts compared all the same"
}

# snapshot DIR WHEN [check ARGS...]: memcached's stats, then the agent's
# totals, by one process in the server namespace, which then runs the
# check when asked (a Python start costs 0.1 to 0.3 s on this 2-core
# machine, and there were five a case); exit 4 when the snapshot failed,
# else the check's status
snapshot() {
	ks_in_ns "$SNS" "$PY" "$HELPER" snapshot "$SADDR" "$PORT" "$AGENT" \
		"$SIF" "$@"
}

# cl CMD...: a client command in the client namespace, bounded.
cl() {
	ks_in_ns "$CNS" timeout -k 2 "$CLIENT_TIMEOUT" "$@"
}

# run_case NAME FUNC ARGS...: FUNC runs the client (with cl); then the
# counts are compared and the PASS/FAIL line printed. A comparison made
# void by UDP datagrams memcached's socket dropped (a loaded machine: the
# agent saw requests memcached never read) gives no verdict, so the case
# runs again, KSC_VOID_TRIES times at most (3); void every time FAILs.
run_case() {
	local name=$1 try rc
	shift
	for ((try = 1; ; try++)); do
		run_case_once "$name" "$@"
		rc=$?
		[ "$rc" = 3 ] || return 0
		if [ "$try" -ge "${KSC_VOID_TRIES:-3}" ]; then
			fail "$name" "void in each of $try runs (memcached dropped UDP datagrams every time; see the VOID lines above)"
			return 0
		fi
		note "$name: run $try void (datagrams dropped), running it again"
	done
}

# run_case_once NAME FUNC ARGS...: one run of the case; returns the
# check's exit status (3: void).
run_case_once() {
	local name=$1 d rc s e
	shift
	d=$E2E_TMP/$name
	rm -rf "$d"
	mkdir -p "$d"
	quiesce
	if ! snapshot "$d" before; then
		fail "$name" "could not read memcached's stats or the agent's totals"
		return 1
	fi
	s=$(stat -c %s "$MCLOG")
	"$@" >"$d/client.out" 2>&1
	rc=$?
	quiesce
	e=$(stat -c %s "$MCLOG")
	echo "$s $e" >"$d/log.range" # to rerun the check by hand (E2E_KEEP=1)
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		note "$name: the client timed out after ${CLIENT_TIMEOUT}s (counts compared all the same)"
	elif [ "$rc" != 0 ]; then
		note "$name: the client exited $rc: $(tail -n 2 "$d/client.out" | tr '\n' ' ' | head -c 200)"
	fi
	snapshot "$d" after check --name "$name" --dir "$d" --log "$MCLOG" \
		--log-start "$s" --log-end "$e" --transport "$3"
	rc=$?
	if [ "$rc" = 4 ]; then
		fail "$name" "could not read memcached's stats or the agent's totals"
		return 1
	fi
	# lib.sh's cleanup turns E2E_FAILED into exit 1
	case $rc in 0 | 3) ;; *) E2E_FAILED=1 ;; esac
	return "$rc"
}

# ---- the clients ----
# memcslap: sets, then gets and multi-gets (each loads its keys first).
c_memcslap() { # proto transport
	local o=(--servers="$SRV" --concurrency=2 --flush)
	[ "$1" = binary ] && o+=(--binary)
	[ "$2" = udp ] && o+=(--udp)
	if [ "$2" = udp ]; then
		# Sets only: libmemcached sends no reads over UDP (memcslap
		# asserts on them). memcslap sends them as fast as it can, and
		# memcached, writing its -vv log (~50 writes a binary request),
		# drains its socket's 208 KiB more slowly; a datagram dropped
		# there is one the agent saw and memcached did not (the check
		# reads the namespace's UDP InErrors and calls such a run void).
		# Pacing does not help: memcslap's non-blocking socket then gets
		# EAGAIN and gives up. So one thread and a burst that fits.
		local b=()
		[ "$1" = binary ] && b=(--binary)
		cl memcslap --servers="$SRV" --udp --flush --concurrency=1 \
			--test=set --execute-number="${KSC_UDP_SETS:-30}" "${b[@]}"
		return
	fi
	cl memcslap "${o[@]}" --test=set --execute-number=400
	cl memcslap "${o[@]}" --test=get --execute-number=300
	cl memcslap "${o[@]}" --test=mget --execute-number=100
}

# memcaslap: its default mix (9 get : 1 set, 64-byte keys that start with
# 0x10 bytes, values up to 1 KiB), then 16-key multi-gets.
c_memcaslap() {
	local o=(-s "$SRV" -T 1 -c 4)
	[ "$1" = binary ] && o+=(-B)
	[ "$2" = udp ] && o+=(-U)
	cl memcaslap "${o[@]}" -x 2000 &&
		{ [ "$2" = udp ] || cl memcaslap "${o[@]}" -x 400 -d 16; }
}

# memccapable: every test of libmemcached 1.1.4's but "ascii verbosity",
# which sends "verbosity 0" and so turns memcached's -vv log (our truth) off
# for the rest of the run; one memccapable per test (-T) for text.
MEMCCAPABLE_ASCII=("ascii version" "ascii quit" "ascii set" "ascii set noreply"
	"ascii get" "ascii gets" "ascii mget" "ascii flush" "ascii flush noreply"
	"ascii add" "ascii add noreply" "ascii replace" "ascii replace noreply"
	"ascii cas" "ascii cas noreply" "ascii delete" "ascii delete noreply"
	"ascii incr" "ascii incr noreply" "ascii decr" "ascii decr noreply"
	"ascii append" "ascii append noreply" "ascii prepend"
	"ascii prepend noreply" "ascii stat")
c_memccapable() {
	local t rc=0
	if [ "$1" = binary ]; then
		cl memccapable -h "$SADDR" -p "$PORT" -t 5 -b
		return
	fi
	for t in "${MEMCCAPABLE_ASCII[@]}"; do
		cl memccapable -h "$SADDR" -p "$PORT" -t 5 -a -T "$t" || rc=$?
	done
	return "$rc"
}

# memccp of files from 100 B to 300 KiB, memccat of them (not over UDP:
# libmemcached sends no reads there), memctouch, memcrm.
KSC_FILES=()
KSC_SMALL_FILES=()
make_files() {
	local s f
	for s in 100 1400 3000 9000 20000 65536 300000; do
		f=$E2E_TMP/file_$s
		head -c "$s" /dev/urandom | base64 -w 76 | head -c "$s" >"$f"
		KSC_FILES+=("$f")
		[ "$s" -le 20000 ] && KSC_SMALL_FILES+=("$f")
	done
}
c_memctools() {
	local o=(--servers="$SRV") keys=() f
	[ "$1" = binary ] && o+=(--binary)
	[ "$2" = udp ] && o+=(--udp)
	local files=("${KSC_FILES[@]}")
	# a UDP request is one datagram: up to 20 KB, fragmented by IP
	[ "$2" = udp ] && files=("${KSC_SMALL_FILES[@]}")
	for f in "${files[@]}"; do keys+=("$(basename "$f")"); done
	cl memccp "${o[@]}" "${files[@]}" || return
	cl memccp "${o[@]}" --add "${files[@]}" # NOT_STORED: still counted
	cl memccp "${o[@]}" --replace "${files[@]}" || return
	# libmemcached reads nothing over UDP, and memcrm has no --udp
	[ "$2" = udp ] && return
	cl memccat "${o[@]}" "${keys[@]}" >/dev/null || return
	cl memccat "${o[@]}" "${keys[@]}" nope1 nope2 >/dev/null
	cl memctouch "${o[@]}" --expire=300 "${keys[@]}" || return
	cl memcrm "${o[@]}" "${keys[@]}"
}

c_pymemcache() { cl "$PY" "$HELPER" pymemcache "$SADDR" "$PORT"; }
c_pylibmc() { cl "$PY" "$HELPER" pylibmc "$SADDR" "$PORT" "$1" "$2"; }

# client -> the protocol/transport combinations it speaks
combos() {
	case $1 in
	memcslap | memctools | pylibmc) echo "text:tcp binary:tcp text:udp binary:udp" ;;
	memcaslap) echo "text:tcp binary:tcp text:udp" ;;
	memccapable) echo "text:tcp binary:tcp" ;;
	pymemcache) echo "text:tcp" ;;
	esac
}

have_client() {
	case $1 in
	memcaslap) command -v memcaslap >/dev/null ;;
	pymemcache) "$PY" -c 'import pymemcache' 2>/dev/null ;;
	pylibmc) "$PY" -c 'import pylibmc' 2>/dev/null ;;
	*) return 0 ;;
	esac
}

matrix() { # PASS
	local c pt
	for c in $CLIENTS; do
		if ! have_client "$c"; then
			# the same names as when it is there, so the plan holds
			for pt in $(combos "$c"); do
				fail "clients_$1_${c}_${pt%:*}_${pt#*:}" "$c is not installed (make deps)"
			done
			continue
		fi
		for pt in $(combos "$c"); do
			run_case "clients_$1_${c}_${pt%:*}_${pt#*:}" "c_$c" "${pt%:*}" "${pt#*:}"
		done
	done
}

agent_pass() { # PASS MTU ARGS...
	local p=$1 mtu=$2
	shift 2
	if ! set_mtu "$mtu"; then
		fail "clients_${p}_setup" "could not set MTU $mtu on the veth pair"
		return
	fi
	if ! e2e_agent_start --sample 1 --interval 1 "$@"; then
		fail "clients_${p}_attach" "agent run --sample 1 $* did not attach at MTU $mtu: $(tail -n 2 "$E2E_TMP/agent.out" | tr '\n' ' ')"
		e2e_agent_stop INT
		return
	fi
	note "$p: $(grep -m1 "attached to" "$E2E_TMP/agent.out")"
	matrix "$p"
	e2e_agent_stop INT
	if [ "$E2E_AGENT_RC" != 0 ]; then
		fail "clients_${p}_agent_exit" "agent exited $E2E_AGENT_RC on SIGINT"
	fi
	e2e_expect_clean "clients_${p}_detached"
}

make_files
t0=$SECONDS
for p in $PASSES; do
	case $p in
	mtu1500) agent_pass mtu1500 1500 --xdp-mode native ;;
	mtu9000) agent_pass mtu9000 9000 --xdp-mode native ;;
	tc_gro)
		if [ -z "${KSC_TC_ARGS:-}" ]; then
			fail clients_tc_gro "KSC_TC_ARGS is empty: no options to attach the tc program (agent run --attach tc)"
			continue
		fi
		if ! ks_in_ns "$SNS" ethtool -K "$SIF" gro on ||
			! ks_in_ns "$CNS" ethtool -K "$CIF" tso on gso on; then
			fail clients_tc_gro_setup "ethtool could not turn GRO on for $SIF"
			continue
		fi
		# TSO frames skip the veth's NAPI: without RPS one connection's
		# segments can be parsed on two CPUs at once, which a NIC's
		# queues never do and a stream's state is not made for (the
		# likely cause of a CI run's pipelined set counted 6,145 bytes
		# short, 3 Dec: docs/operations.md, "One CPU per flow")
		if ! ks_flow_one_cpu "$SNS" "$SIF"; then
			fail clients_tc_gro_setup "could not set RPS on $SIF (one CPU per flow)"
			continue
		fi
		# shellcheck disable=SC2086 # options, one word each
		agent_pass tc_gro 1500 $KSC_TC_ARGS
		ks_in_ns "$SNS" ethtool -K "$SIF" gro off
		;;
	*) fail clients_setup "unknown pass '$p' in KSC_PASSES" ;;
	esac
done
note "matrix took $((SECONDS - t0)) s"
