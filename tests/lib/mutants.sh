# shellcheck shell=bash
# mutants.sh - the loop the mutation controls share, sourced from the
# tree's top: the program tests' (tests/prog/slog_control.sh,
# stack_control.sh, edits of bpf/, judged by prog_test) and the unit
# tests' (tests/unit/mutants.sh, edits of user/core/, judged by
# unit_test).
#
#   mutants=("NAME|FILE|SED-EXPR" ...)   one edit each, of $MUTANT_SRC/FILE
#   mutant_run ONLY ARGS...
#
# For each mutant (ONLY: that one alone, or "" for all): a copy of the
# tree in a temporary folder (the tree itself is never touched), its
# build folder too with its times kept, so only what the edit reaches is
# built again; the edit; $MUTANT_BIN built there and run with ARGS (-g
# GROUP...). Prints one line a mutant: "caught NAME (N tests failed:
# ...)" when the tests see the fault (or the binary dies or hangs without
# a FAIL line), "MISSED NAME" when they pass regardless, "# NAME: ..."
# when it could not be tried. Returns 0 only when every mutant tried is
# caught. Each copy is removed once its mutant is judged.
#
#   OUT            the build folder's name (default build)
#   MUTANT_SRC     the folder the edits are made in (default bpf)
#   MUTANT_BIN     the test binary, under $OUT (default tests/prog_test)
#   MUTANT_TIMEOUT seconds one run of it may take (default 0: no limit);
#                  past it the run is killed, and a mutant that loops for
#                  ever is caught, not waited for
#   MUTANT_BASELINE=1  first run the tree's own build with ARGS, and stop
#                  if that fails: a suite failing already would "catch"
#                  every mutant
OUT=${OUT:-build}
MUTANT_SRC=${MUTANT_SRC:-bpf}
MUTANT_BIN=${MUTANT_BIN:-tests/prog_test}
MUTANT_TIMEOUT=${MUTANT_TIMEOUT:-0}

mutant_run() {
	local only=$1 tmp m name file expr d res rc=0 brc why
	shift
	[ -x "$OUT/$MUTANT_BIN" ] || {
		echo "$(basename "$0"): build first (make tests)" >&2
		return 2
	}
	if [ "${MUTANT_BASELINE:-0}" = 1 ]; then
		res=$(timeout -k 20 "$MUTANT_TIMEOUT" "$OUT/$MUTANT_BIN" "$@" 2>&1)
		brc=$?
		if [ $brc -ne 0 ] || grep -aq "^FAIL" <<<"$res"; then
			echo "# the tree's own $MUTANT_BIN fails (exit $brc): $(grep -a '^FAIL' <<<"$res" | head -3 | cut -c1-200)"
			return 2
		fi
	fi
	tmp=$(mktemp -d /tmp/ks_mutants.XXXXXX)
	# shellcheck disable=SC2064 # tmp is fixed now
	trap "rm -rf '$tmp'" EXIT
	# shellcheck disable=SC2154 # mutants: the sourcing script's
	for m in "${mutants[@]}"; do
		IFS='|' read -r name file expr <<<"$m"
		[ -n "$only" ] && [ "$name" != "$only" ] && continue
		d=$tmp/$name
		mkdir -p "$d"
		cp -a Makefile bpf user tests vmlinux "$OUT" "$d/"
		sed -i "$expr" "$d/$MUTANT_SRC/$file"
		if cmp -s "$MUTANT_SRC/$file" "$d/$MUTANT_SRC/$file"; then
			echo "# $name: the edit did not apply ($MUTANT_SRC/$file changed?)"
			rc=1
			rm -rf "$d"
			continue
		fi
		if ! make -s -C "$d" OUT="$OUT" "$OUT/$MUTANT_BIN" >"$d/make.log" 2>&1; then
			echo "# $name: does not build: $(tail -c 300 "$d/make.log")"
			rc=1
			rm -rf "$d"
			continue
		fi
		res=$(timeout -k 20 "$MUTANT_TIMEOUT" "$d/$OUT/$MUTANT_BIN" "$@" 2>&1)
		brc=$?
		if grep -aq "^FAIL prog_load" <<<"$res"; then
			echo "# $name: rejected by the verifier"
			rc=1
		elif grep -aq "^FAIL" <<<"$res"; then
			echo "caught  $name ($(grep -ac '^FAIL' <<<"$res") tests failed: $(grep -a '^FAIL' <<<"$res" | head -1 | cut -c1-200))"
		elif [ $brc -ne 0 ]; then
			case $brc in
			124 | 137) why="timed out after ${MUTANT_TIMEOUT} s" ;;
			12[89] | 1[3-9][0-9] | 2[0-9][0-9]) why="killed by signal $((brc - 128))" ;;
			*) why="exit $brc" ;;
			esac
			echo "caught  $name ($why, no FAIL line; last: $(tail -1 <<<"$res" | cut -c1-120))"
		else
			echo "MISSED  $name"
			rc=1
		fi
		rm -rf "$d"
	done
	return $rc
}
