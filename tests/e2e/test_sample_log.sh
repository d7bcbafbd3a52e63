#!/usr/bin/env bash
# test_sample_log.sh - the sample log (issue 27, docs/design.md "The
# sample log") gives the estimates the in-kernel sketch gives. A capture
# of Zipf gets with churn (the accuracy bench's generator, acc_gen: 3
# intervals of 1 s, 32 gets a datagram, keys of up to 12 bytes) goes
# through `agent replay --interval 1 --json` twice for each of --sample 1,
# 8 and auto: with the log (the datapath appends each sampled key, the
# agent's drain folds it into its own sketch and candidates, as in
# 'agent run') and with --log-samples off (the in-kernel sketch and
# candidates take every key). Replay runs on one CPU, so the kernel's
# sketch of that CPU times its rate and the fold's sketch are the same
# counters: every interval must have the same sampled count, the same
# top-64 keys and each key the same reads, writes and error bound. The
# run with the log must show every sampled key through it (replay's
# "samples" line: none taken by the in-kernel sketch, none late), the
# run without it none. Control: KEYSTEER_TEST_SWITCHES=1 and
# --log-samples drop (the drain takes the records and throws them away)
# at --sample 8 must give estimates that differ from the in-kernel ones.
#
# Also (live, the agent's drain thread): test_sample_auto.sh, whose
# estimates equal memcached's cmd_get with the agent draining the log,
# and whose control --log-samples drop (records taken from the log and
# thrown away) must miss.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init sample_log

GEN=$E2E_ROOT/${OUT:-build}/tests/acc_gen
if [ ! -x "$GEN" ] || [ ! -x "$AGENT" ]; then
	fail sample_log_setup "$GEN or $AGENT is missing; run 'make all tests' first"
	exit 1
fi
e2e_require sample_log_setup "make deps: python3" "$PY"
CAP=$E2E_TMP/c
if ! "$GEN" --out "$CAP" --hot 100000 --churn 1 --intervals 3 --seed 7 \
	>"$E2E_TMP/gen.out" 2>&1; then
	fail sample_log_setup "acc_gen failed: $(tail -n 3 "$E2E_TMP/gen.out")"
	exit 1
fi

# compare WITH WITHOUT: the same intervals, sampled counts and top keys
# with their estimates; a line saying what differs, else what was the same
compare() {
	"$PY" - "$1" "$2" <<'PY'
import json, sys

def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

on, off = load(sys.argv[1]), load(sys.argv[2])
bad = []
if len(on) != len(off) or len(on) < 3:
    bad.append("intervals: %d with the log, %d without" % (len(on), len(off)))
keys = 0
for a, b in zip(on, off):
    if a["sampled"] != b["sampled"]:
        bad.append("#%d sampled %d / %d" % (a["seq"], a["sampled"], b["sampled"]))
    ta = [(t["key"], t["reads"], t["writes"], t["err"]) for t in a["top"]]
    tb = [(t["key"], t["reads"], t["writes"], t["err"]) for t in b["top"]]
    if len(ta) < 64:
        bad.append("#%d only %d top keys" % (a["seq"], len(ta)))
    if sorted(ta) != sorted(tb):
        diff = sorted(set(ta) ^ set(tb))[:6]
        bad.append("#%d top keys differ: %s" % (a["seq"], diff))
    keys += len(ta)
if bad:
    print("; ".join(bad))
    sys.exit(1)
print("%d intervals, %d top keys, each the same with and without the log"
      % (len(on), keys))
PY
}

# replay S MODE: the JSON lines in $CAP.S.MODE.jsonl, stderr beside them
replay() {
	"$AGENT" replay --interval 1 --json --top 64 --sample "$1" \
		--log-samples "$2" "$CAP.pcap" >"$CAP.$1.$2.jsonl" \
		2>"$CAP.$1.$2.err"
}

for s in 1 8 auto; do
	if ! replay "$s" on || ! replay "$s" off; then
		fail "sample_log_same_estimates_sample_$s" \
			"replay failed: $(tail -n 3 "$CAP.$s.on.err" "$CAP.$s.off.err")"
		continue
	fi
	# the log took every sampled key, and nothing else did
	on=$(grep '^samples' "$CAP.$s.on.err")
	off=$(grep '^samples' "$CAP.$s.off.err")
	if [[ "$on" =~ ^samples\ +([0-9]+)\ through\ the\ sample\ log\ \(([0-9]+)\ records\ folded,\ 0\ late\),\ 0\ taken ]] &&
		[ "${BASH_REMATCH[1]}" -gt 0 ] &&
		[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] &&
		[[ "$off" == *"took every sampled key (--log-samples off)"* ]]; then
		pass "sample_log_used_sample_$s"
	else
		fail "sample_log_used_sample_$s" "with: '$on'; without: '$off'"
	fi
	if compare "$CAP.$s.on.jsonl" "$CAP.$s.off.jsonl" >"$E2E_TMP/cmp.$s" 2>&1; then
		note "--sample $s: $(cat "$E2E_TMP/cmp.$s")"
		pass "sample_log_same_estimates_sample_$s"
	else
		fail "sample_log_same_estimates_sample_$s" "$(cat "$E2E_TMP/cmp.$s")"
	fi
done

# control: the records thrown away, the estimates must not be the same
if KEYSTEER_TEST_SWITCHES=1 replay 8 drop &&
	grep -q '^samples .*(0 records folded' "$CAP.8.drop.err"; then
	if compare "$CAP.8.drop.jsonl" "$CAP.8.off.jsonl" >"$E2E_TMP/cmp.drop" 2>&1; then
		fail sample_log_control_drop_misses \
			"the estimates held with the records dropped: $(cat "$E2E_TMP/cmp.drop")"
	else
		note "--log-samples drop: $(cut -c1-160 "$E2E_TMP/cmp.drop")"
		pass sample_log_control_drop_misses
	fi
else
	fail sample_log_control_drop_misses \
		"replay --log-samples drop failed or folded records: $(tail -n 3 "$CAP.8.drop.err")"
fi
