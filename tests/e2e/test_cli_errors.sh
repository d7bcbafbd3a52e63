#!/usr/bin/env bash
# test_cli_errors.sh - `agent run` with bad flags, an unknown interface, or
# without root: non-zero exit, one line "agent: <what>; <what to do>" on
# stderr, and nothing attached or pinned afterwards.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init cli_errors
e2e_net_up

# expect_refusal NAME WANT_RC PATTERN ARGS...: `agent ARGS` in the server
# namespace must exit with WANT_RC ("nonzero" for any failure), print one
# stderr line starting "agent: " that matches PATTERN, and leave nothing.
expect_refusal() {
	local name=$1 want=$2 pattern=$3 rc lines
	shift 3
	timeout 10 nsenter --net="/run/netns/$SNS" -- "$@" \
		>"$E2E_TMP/out" 2>"$E2E_TMP/err"
	rc=$?
	lines=$(wc -l <"$E2E_TMP/err")
	note "$name: exit $rc: $(head -c 200 "$E2E_TMP/err")"
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
		fail "$name" "exit status $rc, want a refusal"
	elif [ "$want" != nonzero ] && [ "$rc" -ne "$want" ]; then
		fail "$name" "exit status $rc, want $want"
	elif [ "$lines" -ne 1 ] || ! grep -q '^agent: .*; ' "$E2E_TMP/err"; then
		fail "$name" "want one stderr line 'agent: <what>; <what to do>', got $lines line(s)"
	elif ! grep -qiE -- "$pattern" "$E2E_TMP/err"; then
		fail "$name" "message does not mention '$pattern'"
	elif e2e_pins_exist || e2e_xdp_attached; then
		fail "$name" "refused, but left pins or an XDP program on $SIF"
	else
		pass "$name"
	fi
}

# Usage errors exit 2 (the contract); the interface is real, so the flag is
# the only thing wrong.
expect_refusal cli_sample_zero 2 "sample" "$AGENT" run --iface "$SIF" --sample 0
expect_refusal cli_sample_negative 2 "sample" "$AGENT" run --iface "$SIF" --sample -1
expect_refusal cli_interval_text 2 "interval" "$AGENT" run --iface "$SIF" --interval abc
expect_refusal cli_interval_too_small 2 "interval" "$AGENT" run --iface "$SIF" --interval 0.01
expect_refusal cli_ports_too_big 2 "70000" "$AGENT" run --iface "$SIF" --ports 70000
expect_refusal cli_ports_too_many 2 "ports" "$AGENT" run --iface "$SIF" --ports 1,2,3,4,5,6,7,8,9
expect_refusal cli_xdp_mode 2 "mode" "$AGENT" run --iface "$SIF" --xdp-mode turbo
expect_refusal cli_no_iface 2 "iface" "$AGENT" run --sample 4
expect_refusal cli_unknown_option 2 "bogus" "$AGENT" run --iface "$SIF" --bogus
expect_refusal cli_unknown_iface nonzero "ks_none$$" "$AGENT" run --iface "ks_none$$"
RING=(--shards "$SADDR:$PORT" --self "$SADDR:$PORT")
expect_refusal cli_replicas_bad_address 2 "replicas" "$AGENT" run --iface "$SIF" \
	"${RING[@]}" --replicas 198.18.0.9:11211,198.18.0:11211
expect_refusal cli_replicas_duplicate 2 "repeats" "$AGENT" run --iface "$SIF" \
	"${RING[@]}" --replicas 198.18.0.9:11211,198.18.0.9:11211
expect_refusal cli_replicas_mixed_families 2 "is IPv6 but entry 1 is IPv4" \
	"$AGENT" run --iface "$SIF" "${RING[@]}" \
	--replicas 198.18.0.9:11211,[2001:2::9]:11211
expect_refusal cli_replicas_ipv6_unbracketed 2 "goes in brackets" \
	"$AGENT" run --iface "$SIF" "${RING[@]}" --replicas 2001:2::9:11211
expect_refusal cli_replicas_without_self 2 "self" "$AGENT" run --iface "$SIF" \
	--replicas 198.18.0.9:11211
expect_refusal cli_drain_threads_zero 2 "drain-threads '0' is out of range" \
	"$AGENT" run --iface "$SIF" --drain-threads 0
expect_refusal cli_drain_threads_text 2 "drain-threads 'many'.*or auto" \
	"$AGENT" run --iface "$SIF" --drain-threads many
# Test-only switches (docs/operations.md) are refused unless the
# environment says KEYSTEER_TEST_SWITCHES=1 ("0" is no yes).
for sw in "copy-protocol off" "fill-delay-ms 20" "stream-state off" \
	"etcd-hot-events on" "rate-scaling off" "ring-purge off" \
	"limit-reply-head off" "fleet-schema 1" "limit-auto-residual verdict" \
	"stall-interval 5:8000" "etcd-keepalive loop" "log-samples drop" \
	"drain-share on" "etcd-loop-call on"; do
	n=${sw%% *}
	expect_refusal "cli_test_switch_${n//-/_}" 2 \
		"^agent: --$sw is a test-only switch.*KEYSTEER_TEST_SWITCHES=1" \
		env KEYSTEER_TEST_SWITCHES=0 "$AGENT" run --iface "$SIF" --$sw
done
# replay's one (the control of test_sample_log.sh), refused before the
# capture is read
expect_refusal cli_test_switch_replay_log_samples 2 \
	"^agent: --log-samples drop is a test-only switch.*KEYSTEER_TEST_SWITCHES=1" \
	env KEYSTEER_TEST_SWITCHES=0 "$AGENT" replay --log-samples drop /nonexistent.pcap
expect_refusal cli_listen_bad 2 "listen" "$AGENT" run --iface "$SIF" --listen 127.0.0.1:99999
# a port already taken in the server namespace: refused before attaching
ks_in_ns_bg "$SNS" "$PY" -c 'import socket,time
s = socket.socket(); s.bind(("127.0.0.1", 19180)); s.listen(1); time.sleep(8)'
taker=$KS_BG_PID
sleep 0.5
expect_refusal cli_listen_in_use 2 "in use" "$AGENT" run --iface "$SIF" --listen 19180
kill "$taker" 2>/dev/null
wait "$taker" 2>/dev/null

# Not root: drop to nobody with setpriv. nobody may not be able to reach the
# build folder (CI clones into root's home), so it runs a copy from a folder
# it can read; the copy is the same binary.
if ! command -v setpriv >/dev/null; then
	fail cli_not_root "setpriv is not installed (make deps: util-linux)"
elif ! setpriv --reuid=nobody --regid=nogroup --clear-groups true 2>/dev/null; then
	fail cli_not_root "setpriv cannot switch to user nobody here"
else
	mkdir -p "$E2E_TMP/bin"
	cp "$AGENT" "$E2E_TMP/bin/agent"
	chmod 755 "$E2E_TMP" "$E2E_TMP/bin" "$E2E_TMP/bin/agent"
	if ! setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$E2E_TMP/bin/agent" --version >/dev/null 2>&1; then
		fail cli_not_root "user nobody cannot run a copy of the agent from $E2E_TMP (a noexec /tmp?)"
	else
		expect_refusal cli_not_root nonzero "root" setpriv --reuid=nobody \
			--regid=nogroup --clear-groups "$E2E_TMP/bin/agent" run --iface "$SIF"
	fi
fi

e2e_expect_clean cli_errors_nothing_left
