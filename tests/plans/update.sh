#!/usr/bin/env bash
# update.sh - rewrite the plans (tests/plans/UNIT.plan) from a log of
# tests/run.sh: for each unit in the log, the names it reported, in order.
#
#   tests/plans/update.sh [--force] LOG [UNIT...]   (no UNIT: every unit in LOG)
#
# A plan is the suite's word on what a unit must report, so changing one is
# a deliberate act: run the units you changed (tests/run.sh e2e > LOG, or
# one script through run.sh's tiers), run this, and read `git diff
# tests/plans` before committing it. A removed name is a test that no
# longer runs; the diff is where a reviewer sees that.
#
# A unit whose section has a FAIL line of its own, that timed out or
# exited without one, or that the log ends inside, is left alone (its output may stop short, and a plan
# written from it would excuse the names it lost); --force writes it
# anyway. run.sh's own plan lines (planned ... but never reported, not in
# the plan, reported more than once, no plan) are not results and are
# ignored.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1

force=0
if [ "${1:-}" = --force ]; then
	force=1
	shift
fi
if [ $# -lt 1 ] || [ ! -r "$1" ]; then
	sed -n '2,6p' "$0" >&2
	exit 2
fi
log=$1
shift
want=" $* "

# unit<TAB>status<TAB>name, one line per result of the unit's own;
# unit<TAB>BROKEN<TAB>why for a section run.sh found broken
sections=$(awk '
	/^=== [^ ]+$/ { unit = $2; next }
	/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { unit = ""; next }
	unit == "" || !/^(PASS|FAIL|SKIP) / { next }
	{
		n = $2
		sub(/:$/, "", n)
	}
	/: (planned in tests\/plans\/.* but never reported|reported more than once by .*|reported by .* but not in tests\/plans\/.*)$/ { next }
	n == unit && /^FAIL [^ ]+: no plan tests\/plans\// { next }
	n == unit && /^FAIL [^ ]+: (timed out after|exited with status)/ {
		print unit "\tBROKEN\t" substr($0, length("FAIL " n ": ") + 1)
		next
	}
	{ print unit "\t" $1 "\t" n }
	# a log that ends inside a unit (a run still going, or cut short)
	# has not all of its names
	END { if (unit != "") print unit "\tBROKEN\tthe log ends inside it" }
' "$log")
if [ -z "$sections" ]; then
	echo "update.sh: no '=== UNIT' section with results in $log" >&2
	exit 1
fi

rc=0
for unit in $(cut -f1 <<<"$sections" | awk '!seen[$0]++'); do
	[ "$want" = "  " ] || [[ "$want" == *" $unit "* ]] || continue
	lines=$(awk -F'\t' -v u="$unit" '$1 == u' <<<"$sections")
	if [ "$force" = 0 ] && grep -qP '\t(FAIL|BROKEN)\t' <<<"$lines"; then
		echo "update.sh: $unit not written: it failed in $log ($(grep -cP '\t(FAIL|BROKEN)\t' <<<"$lines") lines); --force writes it anyway" >&2
		rc=1
		continue
	fi
	plan=tests/plans/$unit.plan
	new=$(awk -F'\t' '$2 != "BROKEN" && !seen[$3]++ { print $3 }' <<<"$lines")
	old=
	[ -f "$plan" ] && old=$(grep -v '^[[:space:]]*\(#\|$\)' "$plan" || true)
	if [ "$new" = "$old" ]; then
		echo "$plan: unchanged, $(wc -l <<<"$new") names"
		continue
	fi
	printf '%s\n' "$new" >"$plan"
	echo "$plan: $(wc -l <<<"$new") names, +$(comm -13 <(sort <<<"$old") <(sort <<<"$new") | grep -c .) -$(comm -23 <(sort <<<"$old") <(sort <<<"$new") | grep -c .)"
done
for unit in $want; do
	grep -q "^$unit	" <<<"$sections" ||
		{ echo "update.sh: no section '=== $unit' in $log" >&2 && rc=1; }
done
exit "$rc"
