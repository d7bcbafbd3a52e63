#!/usr/bin/env bash
# test_limit_short.sh - a refused UDP get of a short key is answered on
# veth (docs/limits.md, "Room for the reply"): real memcached in a
# namespace, the agent with `limit run:1 50/s`, build/ks_load over UDP.
#
# "get run:1\r\n" is a 61-byte frame; its SERVER_ERROR reply is 82. On
# veth the datapath gets the sender's skb, whose tailroom is what the
# sender left, so growing the frame at its tail fails for most of these
# requests; the datapath then grows it at its head.
#
# 1. The key at 20x its limit (1,000 gets/s, 600 gets): every get has an
#    answer (no timeout, no error); the refusals ks_load saw equal the
#    datapath's (its replied count, ks_limit_pkts), none went unanswered
#    (no_reply 0), some replies grew at the head (grown_at_head > 0: the
#    case this test is for happened); agent report --json and the metric
#    keysteer_limit_reply_grown_at_head_total say the same.
# 2. Control: the agent with --limit-reply-head off (a test-only switch:
#    the tail alone, as before the head path) on the same load: refusals
#    go unanswered (no_reply > 0) and ks_load times out on them. The
#    control passes when it sees them.
#
# Namespaces krp_cli_PID / krp_srv_PID joined by the veth pair krp_cPID /
# krp_sPID (198.18.0.1 / 198.18.0.2), removed by lib.sh's EXIT trap.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init limit_short
e2e_prefix krp
e2e_need_load limit_short
e2e_require limit_short_setup "make deps: bpftool" bpftool
KEY=run:1
PINS=$E2E_TMP/pins.txt
printf 'limit %s 50/s\n' "$KEY" >"$PINS"

e2e_net_up
# XDP_TX on the server's veth hands the reply to its peer, which takes
# XDP frames only with an XDP program of its own: the pass-through one
if ! ip -n "$CNS" link set dev "$CIF" xdpdrv obj \
	"$E2E_ROOT/${OUT:-build}/ks_empty.bpf.o" sec xdp; then
	fail limit_short_setup "cannot attach the pass-through XDP program to $CIF"
	exit 1
fi

# The datapath's check counters, summed over CPUs: "replied dropped
# no_reply grown_at_head" (enum ks_limit_pkt, bpf/ks_limit.h).
dp_pkts() {
	ks_in_ns "$SNS" "$PY" - "$PIN_ROOT/$SIF/ks_limit_pkts" <<'EOF'
import json, subprocess, sys
out = subprocess.run(["bpftool", "-j", "map", "dump", "pinned", sys.argv[1]],
                     check=True, capture_output=True, text=True).stdout
n = [0] * 6
for c in json.loads(out)[0]["formatted"]["values"]:
    for i in range(6):
        n[i] += c["value"]["n"][i]
# checked replied dropped no_reply other grown_at_head
print(n[1], n[2], n[3], n[5])
EOF
}

# run_short NAME TIMEOUT COUNT CONNS: the key at 1,000 gets/s; sets
# ops refused errors timeouts (ks_load's) and d_replied d_dropped
# d_noreply d_head (the datapath's, over the run). 1 when something could
# not run.
run_short() {
	local name=$1 tmo=$2 count=$3 conns=$4
	if ! dp_pkts >"$E2E_TMP/$name.before" ||
		! ks_in_ns "$CNS" nice -n "$KS_NICE" "$LOAD" --json \
			--server "$SADDR:$PORT" --proto udp --mix get=100 --keys 1 \
			--key-prefix run: --rate 1000 --count "$count" \
			--timeout "$tmo" --conns "$conns" \
			>"$E2E_TMP/$name.json" 2>"$E2E_TMP/$name.err" ||
		! dp_pkts >"$E2E_TMP/$name.after"; then
		fail "$name" "the run failed: $(head -c 300 "$E2E_TMP/$name.err")"
		return 1
	fi
	read -r ops refused errors timeouts d_replied d_dropped d_noreply d_head \
		< <("$PY" - "$E2E_TMP/$name" <<'EOF'
import json, sys
p = sys.argv[1]
g = [o for o in json.load(open(p + ".json"))["ops"] if o["op"] == "get"][0]
b = [int(x) for x in open(p + ".before").read().split()]
a = [int(x) for x in open(p + ".after").read().split()]
print(g["ops"], g["refused"], g["errors"], g["timeouts"],
      *[y - x for x, y in zip(b, a)])
EOF
		)
	note "$name: $ops gets, ks_load refused $refused, errors $errors" \
		"(timeouts $timeouts); datapath replied $d_replied" \
		"(grown at the head $d_head), no_reply $d_noreply, dropped $d_dropped"
}

# start NAME ARGS...: the agent with the pins and ARGS, its first interval
# logged (the rule and KS_CFG_LIMITS are in the datapath then); 1 with
# FAIL NAME if not.
start() {
	local name=$1
	shift
	if ! e2e_agent_start --sample 1 --interval 1 --pins "$PINS" -v "$@"; then
		fail "$name" "agent run did not attach"
		return 1
	fi
	if ! e2e_wait_intervals 1; then
		fail "$name" "the agent logged no interval"
		return 1
	fi
}

# --- 1. every refusal answered ----------------------------------------------
MPORT=24081 # the metrics server, on the server namespace's loopback
start limit_short_answered --metrics "$MPORT" || exit 1
if run_short limit_short_answered 2 600 4; then
	why=""
	[ "$ops" = 600 ] || why="$ops gets sent, asked for 600"
	[ "$errors" = 0 ] || why="${why:+$why, }$errors errors ($timeouts timeouts)"
	[ "$refused" -gt 0 ] || why="${why:+$why, }nothing refused"
	[ "$d_replied" = "$refused" ] ||
		why="${why:+$why, }datapath replied $d_replied, ks_load saw $refused refusals"
	[ "$d_noreply" = 0 ] && [ "$d_dropped" = 0 ] ||
		why="${why:+$why, }refusals not answered: no_reply $d_noreply, dropped $d_dropped"
	# the head path is what answered the requests the tail had no room for
	[ "$d_head" -gt 0 ] || why="${why:+$why, }no reply grew at the head"
	if [ -z "$why" ]; then pass limit_short_answered; else fail limit_short_answered "$why"; fi
fi
head_total=${d_head:-0}
# the report publishes the counters each interval
e2e_wait_intervals 2
if e2e_report_json limit_short_report_json "$E2E_TMP/report.json"; then
	# the pinned counters against the report's (no load runs meanwhile)
	if read -r _ _ r_nor r_head < <(dp_pkts) &&
		ks_in_ns "$SNS" "$PY" - "$E2E_TMP/report.json" "$r_nor" "$r_head" "$MPORT" \
			>"$E2E_TMP/report.check" 2>&1 <<'EOF'; then
import json, re, sys, urllib.request
lim = json.load(open(sys.argv[1]))["limits"]
assert lim["no_reply"] == int(sys.argv[2]) == 0, lim
assert lim["grown_at_head"] == int(sys.argv[3]) > 0, lim
assert lim["grown_at_head"] <= lim["replied"], lim
# the metric: the same pinned counter
text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[4],
                              timeout=5).read().decode()
m = re.search(r"^keysteer_limit_reply_grown_at_head_total (\S+)$", text, re.M)
assert m and float(m.group(1)) == int(sys.argv[3]), m and m.group(0)
EOF
		pass limit_short_report_json
	else
		fail limit_short_report_json "$(tail -c 400 "$E2E_TMP/report.check")"
	fi
fi
e2e_agent_stop INT
if [ "$E2E_AGENT_RC" != 0 ]; then
	fail limit_short_answered "agent exited $E2E_AGENT_RC"
fi

# --- 2. control: the tail alone ---------------------------------------------
KEYSTEER_TEST_SWITCHES=1 start limit_short_control_tail_only_drops \
	--limit-reply-head off || exit 1
# a short timeout: each unanswered refusal holds its connection that long
if run_short limit_short_control_tail_only_drops 0.25 300 8; then
	why=""
	[ "$d_noreply" -gt 0 ] || why="no refusal went unanswered (no_reply 0)"
	[ "$timeouts" -gt 0 ] || why="${why:+$why, }ks_load timed out on none"
	[ "$d_head" = 0 ] || why="${why:+$why, }$d_head replies grew at the head"
	grep -q "test-only switches in force.*--limit-reply-head off" "$E2E_TMP/agent.out" ||
		why="${why:+$why, }no test-switch warning"
	if [ -z "$why" ]; then
		note "the control sees the drops the head path prevents" \
			"(head path's run: $head_total grown at the head)"
		pass limit_short_control_tail_only_drops
	else
		fail limit_short_control_tail_only_drops "$why"
	fi
fi
e2e_agent_stop INT
e2e_expect_clean limit_short_clean
exit "$E2E_FAILED"
