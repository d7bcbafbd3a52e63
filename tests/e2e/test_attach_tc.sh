#!/usr/bin/env bash
# test_attach_tc.sh - `agent run --attach tc`: the tc program (ks_tc_ingress)
# at tc ingress, both ways the agent attaches it: a tcx link (kernel 6.6+),
# and the classic cls_bpf filter on clsact that older kernels get (forced
# here with KS_TC_FORCE_FILTER=1). For each: the gets of a real client are
# counted (report --json totals, exact), the report and /metrics say "tc";
# a second agent (tc or xdp) is refused and the first goes on; after
# SIGKILL the program keeps counting, `--attach xdp` is refused with the
# hint to give --attach tc, `--attach tc` takes it over (same link or
# filter); `agent detach` and a SIGINT stop leave no pin, tcx program,
# filter or clsact qdisc behind. A clsact qdisc that was there before is
# left in place. Bad values (--attach bogus, --attach tc with --xdp-mode)
# exit 2 before anything is attached, `attach = tc` in a config file works,
# and a keysteer filter left without pins is refused, then removed by
# `agent detach`.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init attach_tc
e2e_net_up
MPORT=19193

# what_left: pins, XDP, tc things on our veth; empty when clean
what_left() {
	local left
	left=$(e2e_tc_left)
	e2e_pins_exist && left="${left:+$left, }pins"
	e2e_xdp_attached && left="${left:+$left, }an XDP program"
	echo "$left"
}

# refused NAME PATTERN [ENV=V] ARGS...: `agent run --iface SIF ARGS` exits 2
# with one "agent: ...; ..." line matching PATTERN, leaving nothing.
refused() {
	local name=$1 pattern=$2 rc left
	shift 2
	timeout 15 nsenter --net="/run/netns/$SNS" -- "$AGENT" run --iface "$SIF" "$@" \
		>"$E2E_TMP/ref.out" 2>"$E2E_TMP/ref.err"
	rc=$?
	left=$(what_left)
	note "$name: exit $rc: $(head -c 240 "$E2E_TMP/ref.err")"
	if [ "$rc" -ne 2 ]; then
		fail "$name" "exit $rc, want 2"
	elif [ "$(wc -l <"$E2E_TMP/ref.err")" -ne 1 ] ||
		! grep -qE -- "^agent: .*$pattern.*; " "$E2E_TMP/ref.err"; then
		fail "$name" "want one line 'agent: ...$pattern...; ...'"
	elif [ -n "$left" ]; then
		fail "$name" "left behind: $left"
	else
		pass "$name"
	fi
}

refused attach_tc_bad_value "--attach 'bogus'" --attach bogus
refused attach_tc_with_xdp_mode "--xdp-mode" --attach tc --xdp-mode native

# json_get EXPR: a field of `agent report --json` (python expression on d)
json_get() {
	e2e_agent report --iface "$SIF" --json 2>/dev/null |
		"$PY" -c 'import json,sys; d=json.load(sys.stdin); print('"$1"')' 2>/dev/null
}

# gets N PREFIX: N TCP gets from a real client (pymemcache), 0 if answered
gets() {
	e2e_client "$E2E_DIR/ks_send.py" --server "$SADDR" gets "$2" "$1" --keys 7
}

# attach_id: the tcx link id pinned, or the classic filter's program id
attach_id() {
	if [ "$kind" = tcx ]; then
		bpftool link show pinned "$PIN_ROOT/$SIF/link" 2>/dev/null |
			sed -n 's/^\([0-9]*\):.*/\1/p'
	else
		ks_in_ns "$SNS" tc filter show dev "$SIF" ingress 2>/dev/null |
			sed -n 's/.* id \([0-9]*\) .*/\1/p' | head -n 1
	fi
}

# attached_as_tc: our veth has keysteer's tc program the expected way
attached_as_tc() {
	if [ "$kind" = tcx ]; then
		grep -qx ks_tc_ingress <<<"$(ks_in_ns "$SNS" "$PY" "$E2E_DIR/ks_tcx.py" "$SIF")"
	else
		grep -q "ks_tc_ingress.*direct-action" \
			<<<"$(ks_in_ns "$SNS" tc filter show dev "$SIF" ingress 2>/dev/null)"
	fi
}

for kind in tcx filter; do
	t=attach_tc_$kind
	if [ "$kind" = filter ]; then
		export KS_TC_FORCE_FILTER=1
		want="tc ingress, clsact filter; qdisc added"
	else
		unset KS_TC_FORCE_FILTER
		want="tc ingress, tcx link"
		if [ -z "$(ks_in_ns "$SNS" "$PY" - <<'EOF'
import ctypes, struct
buf = ctypes.create_string_buffer(struct.pack("=IIIIQII", 1, 46, 0, 0, 0, 0, 0), 128)
print("yes" if ctypes.CDLL(None, use_errno=True).syscall(321, 16, buf, 128) == 0 else "")
EOF
)" ]; then
			# every name the pass reports, so the plan holds on any kernel
			for n in attach counts report_says_tc second_refused_tc \
				second_refused fail_open takeover_xdp_refused takeover \
				detach_clean stop_clean; do
				skip "${t}_$n" "this kernel has no tcx (before 6.6); the filter pass covers it"
			done
			continue
		fi
	fi

	if ! e2e_agent_start --attach tc --sample 1 --interval 0.5 \
		--metrics "127.0.0.1:$MPORT"; then
		fail "${t}_attach" "agent run --attach tc did not attach"
		e2e_agent_stop INT
		continue
	fi
	first=$E2E_AGENT_PID
	if grep -q "attached to $SIF ($want)" "$E2E_TMP/agent.out" && attached_as_tc &&
		! e2e_xdp_attached; then
		pass "${t}_attach"
	else
		fail "${t}_attach" "want '($want)' and the program at tc ingress, no XDP: $(head -n 1 "$E2E_TMP/agent.out")"
	fi
	[ "$kind" = filter ] && note "tc filter: $(ks_in_ns "$SNS" tc filter show dev "$SIF" ingress | tr '\n' ' ')"
	id1=$(attach_id)

	# traffic: every get counted exactly (totals since load)
	g0=$(json_get 'd["totals"]["ops"]["get"]["requests"]')
	if gets 400 "tc$kind:"; then
		sleep 0.3
		g1=$(json_get 'd["totals"]["ops"]["get"]["requests"]')
		note "gets counted: ${g0:-?} -> ${g1:-?} (sent 400)"
		if [ -n "$g0" ] && [ -n "$g1" ] && [ $((g1 - g0)) -eq 400 ]; then
			pass "${t}_counts"
		else
			fail "${t}_counts" "gets counted ${g0:-?} -> ${g1:-?}, want +400"
		fi
	else
		fail "${t}_counts" "memcached did not answer the client"
	fi
	sleep 0.6 # an interval with the keys in it
	mode=$(json_get 'd["xdp_mode"]')
	head1=$(e2e_agent report --iface "$SIF" 2>/dev/null | head -n 1)
	metric=$(ks_in_ns "$SNS" "$PY" -c 'import urllib.request,sys
print(urllib.request.urlopen("http://127.0.0.1:'"$MPORT"'/metrics", timeout=3).read().decode())' 2>/dev/null |
		grep '^keysteer_agent_info')
	note "report: xdp_mode $mode; $head1; $metric"
	if [ "$mode" = tc ] && [[ $head1 == *"(tc ingress)"* ]] &&
		[[ $metric == *'xdp_mode="tc"'* ]]; then
		pass "${t}_report_says_tc"
	else
		fail "${t}_report_says_tc" "want xdp_mode tc in the JSON, '(tc ingress)' in the text and xdp_mode=\"tc\" in /metrics"
	fi

	# a second agent, either hook, is refused; the first goes on
	for second in "--attach tc" ""; do
		# shellcheck disable=SC2086
		timeout 15 nsenter --net="/run/netns/$SNS" -- "$AGENT" run --iface "$SIF" $second \
			>"$E2E_TMP/second.out" 2>"$E2E_TMP/second.err"
		rc=$?
		note "second agent ${second:-(xdp)}: exit $rc: $(head -c 200 "$E2E_TMP/second.err")"
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
			grep -q "already attached to $SIF (pid $first)" "$E2E_TMP/second.err" &&
			kill -0 "$first" 2>/dev/null && attached_as_tc && ! e2e_xdp_attached &&
			[ "$(attach_id)" = "$id1" ]; then
			pass "${t}_second_refused${second:+_tc}"
		else
			fail "${t}_second_refused${second:+_tc}" "want a refusal naming pid $first, the first agent and its attachment untouched"
		fi
	done

	# SIGKILL: the program stays and counts; xdp cannot take it over, tc can
	e2e_agent_stop KILL
	p0=$(json_get 'd["totals"]["ops"]["get"]["requests"]')
	gets 50 "dead$kind:" >/dev/null
	p1=$(json_get 'd["totals"]["ops"]["get"]["requests"]')
	if e2e_pins_exist && attached_as_tc && [ -n "$p0" ] && [ -n "$p1" ] &&
		[ $((p1 - p0)) -eq 50 ]; then
		pass "${t}_fail_open"
	else
		fail "${t}_fail_open" "after SIGKILL want pins, the program at tc ingress and +50 gets counted (${p0:-?} -> ${p1:-?})"
	fi
	timeout 15 nsenter --net="/run/netns/$SNS" -- "$AGENT" run --iface "$SIF" \
		>"$E2E_TMP/xdp.out" 2>"$E2E_TMP/xdp.err"
	rc=$?
	note "xdp over the dead tc agent: exit $rc: $(head -c 240 "$E2E_TMP/xdp.err")"
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q -- "give --attach tc" "$E2E_TMP/xdp.err" &&
		attached_as_tc && ! e2e_xdp_attached && [ "$(attach_id)" = "$id1" ]; then
		pass "${t}_takeover_xdp_refused"
	else
		fail "${t}_takeover_xdp_refused" "want a refusal saying '--attach tc', the tc attachment untouched"
	fi
	ks_in_ns_bg "$SNS" "$AGENT" run --iface "$SIF" --attach tc --sample 1 --interval 0.5 \
		</dev/null >"$E2E_TMP/run2.out" 2>&1
	second=$KS_BG_PID
	e2e_wait_line "$E2E_TMP/run2.out" "took over" "$second"
	id2=$(attach_id)
	note "take-over: $(head -n 1 "$E2E_TMP/run2.out"); id $id1 -> $id2"
	t0=$(json_get 'd["totals"]["ops"]["get"]["requests"]')
	gets 60 "again$kind:" >/dev/null
	t1=$(json_get 'd["totals"]["ops"]["get"]["requests"]')
	pid=$(json_get 'd["agent_pid"]')
	# tcx: the same link, its program swapped; filter: replaced in place
	if grep -q "took over" "$E2E_TMP/run2.out" && kill -0 "$second" 2>/dev/null &&
		[ "$pid" = "$second" ] && [ -n "$t0" ] && [ -n "$t1" ] &&
		[ "$t0" -ge "$p1" ] && [ $((t1 - t0)) -eq 60 ] && attached_as_tc &&
		{ [ "$kind" = filter ] || [ "$id2" = "$id1" ]; }; then
		pass "${t}_takeover"
	else
		fail "${t}_takeover" "want 'took over', pid $second in the report, counters carried on (${p1:-?} -> ${t0:-?} -> ${t1:-?}, +60) and the same link"
	fi

	# SIGKILL again, then agent detach removes it all
	kill -KILL "$second" 2>/dev/null
	wait "$second" 2>/dev/null
	e2e_agent detach --iface "$SIF" >"$E2E_TMP/detach.out" 2>&1
	rc=$?
	sed 's/^/  detach: /' "$E2E_TMP/detach.out" | grep -v "removed $PIN_ROOT/$SIF/ks_"
	left=$(what_left)
	if [ "$rc" -eq 0 ] && [ -z "$left" ]; then
		pass "${t}_detach_clean"
	else
		fail "${t}_detach_clean" "detach exit $rc, left behind: ${left:-nothing}"
	fi

	# a fresh agent (the hook from a config file), stopped with SIGINT:
	# nothing left
	printf 'attach = tc\nsample = 1\n' >"$E2E_TMP/tc.conf"
	if e2e_agent_start --config "$E2E_TMP/tc.conf" --interval 0.5 &&
		grep -q "attached to $SIF ($want)" "$E2E_TMP/agent.out"; then
		e2e_agent_stop INT
		left=$(what_left)
		if [ "$E2E_AGENT_RC" = 0 ] && [ -z "$left" ]; then
			pass "${t}_stop_clean"
		else
			fail "${t}_stop_clean" "exit $E2E_AGENT_RC on SIGINT, left behind: ${left:-nothing}"
		fi
	else
		fail "${t}_stop_clean" "a new agent (attach = tc in its config) did not attach at tc after detach"
		e2e_agent_stop INT
	fi
done

# The classic filter on a clsact qdisc that was there before: the qdisc stays.
export KS_TC_FORCE_FILTER=1
kind=filter
ks_in_ns "$SNS" tc qdisc add dev "$SIF" clsact
if ks_in_ns_bg "$SNS" "$AGENT" run --iface "$SIF" --attach tc --interval 0.5 \
	</dev/null >"$E2E_TMP/own.out" 2>&1 &&
	e2e_wait_line "$E2E_TMP/own.out" "attached to" "$KS_BG_PID"; then
	E2E_AGENT_PID=$KS_BG_PID
	note "$(head -n 1 "$E2E_TMP/own.out")"
	grep -q "(tc ingress, clsact filter)" "$E2E_TMP/own.out" ||
		fail attach_tc_qdisc_kept "want '(tc ingress, clsact filter)' without 'qdisc added'"
	e2e_agent_stop INT
	left=$(what_left)
	if [ "$E2E_AGENT_RC" = 0 ] && [ "$left" = "a clsact qdisc" ]; then
		pass attach_tc_qdisc_kept
	else
		fail attach_tc_qdisc_kept "exit $E2E_AGENT_RC; want only the clsact qdisc left, have: ${left:-nothing}"
	fi
else
	fail attach_tc_qdisc_kept "the agent did not attach on an existing clsact"
	E2E_AGENT_PID=$KS_BG_PID
	e2e_agent_stop INT
fi
ks_in_ns "$SNS" tc qdisc del dev "$SIF" clsact

# keysteer's filter left without its pins (someone removed the folder): a
# new agent refuses, `agent detach` removes the filter.
if e2e_agent_start --attach tc --interval 0.5; then
	e2e_agent_stop KILL
	rm -rf "${PIN_ROOT:?}/$SIF"
	timeout 15 nsenter --net="/run/netns/$SNS" -- "$AGENT" run --iface "$SIF" --attach tc \
		>"$E2E_TMP/np.out" 2>"$E2E_TMP/np.err"
	rc=$?
	note "tc over a pinless keysteer filter: exit $rc: $(head -c 200 "$E2E_TMP/np.err")"
	if [ "$rc" -ne 0 ] && grep -q "already attached to $SIF (pid unknown)" "$E2E_TMP/np.err" &&
		attached_as_tc && ! e2e_pins_exist; then
		pass attach_tc_pinless_refused
	else
		fail attach_tc_pinless_refused "want 'already attached (pid unknown)', the filter untouched, no new pins"
	fi
	e2e_agent detach --iface "$SIF" >"$E2E_TMP/d2.out" 2>&1
	rc=$?
	sed 's/^/  detach: /' "$E2E_TMP/d2.out"
	# the qdisc it made stays: who made it was in the pins
	ks_in_ns "$SNS" tc qdisc del dev "$SIF" clsact 2>/dev/null
	left=$(what_left)
	if [ "$rc" -eq 0 ] && grep -q "removed the tc filter" "$E2E_TMP/d2.out" && [ -z "$left" ]; then
		pass attach_tc_pinless_detach
	else
		fail attach_tc_pinless_detach "detach exit $rc; left: ${left:-nothing}"
	fi
else
	fail attach_tc_pinless_refused "the agent did not attach"
	e2e_agent_stop INT
fi
unset KS_TC_FORCE_FILTER
e2e_expect_clean attach_tc_final_clean
