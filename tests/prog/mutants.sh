# mutants.sh - the loop the program tests' controls share
# (slog_control.sh, stack_control.sh), sourced from the tree's top.
#
#   mutants=("NAME|FILE|SED-EXPR" ...)   one edit each, of bpf/FILE
#   mutant_run ONLY ARGS...
#
# For each mutant (ONLY: that one alone, or "" for all): a copy of the
# tree in a temporary folder (bpf/ itself is never touched), its build
# folder too with its times kept, so only what the edit reaches is built
# again; the edit; prog_test built there and run with ARGS (-g GROUP...).
# Prints one line a mutant: "caught NAME (N tests failed: ...)" when the
# tests see the fault, "MISSED NAME" when they pass regardless, "# NAME:
# ..." when it could not be tried. Returns 0 only when every mutant tried
# is caught. OUT: the build folder's name (default build).
OUT=${OUT:-build}

mutant_run() {
	local only=$1 tmp m name file expr d res rc=0
	shift
	[ -x "$OUT/tests/prog_test" ] || {
		echo "$(basename "$0"): build first (make tests)" >&2
		return 2
	}
	tmp=$(mktemp -d /tmp/ks_mutants.XXXXXX)
	# shellcheck disable=SC2064 # tmp is fixed now
	trap "rm -rf '$tmp'" EXIT
	for m in "${mutants[@]}"; do
		IFS='|' read -r name file expr <<<"$m"
		[ -n "$only" ] && [ "$name" != "$only" ] && continue
		d=$tmp/$name
		mkdir -p "$d"
		cp -a Makefile bpf user tests vmlinux "$OUT" "$d/"
		sed -i "$expr" "$d/bpf/$file"
		if cmp -s "bpf/$file" "$d/bpf/$file"; then
			echo "# $name: the edit did not apply (bpf/$file changed?)"
			rc=1
			continue
		fi
		if ! make -s -C "$d" OUT="$OUT" "$OUT/tests/prog_test" >"$d/make.log" 2>&1; then
			echo "# $name: does not build: $(tail -c 300 "$d/make.log")"
			rc=1
			continue
		fi
		res=$("$d/$OUT/tests/prog_test" "$@" 2>&1)
		if grep -q "^FAIL prog_load" <<<"$res"; then
			echo "# $name: rejected by the verifier"
			rc=1
		elif grep -q "^FAIL" <<<"$res"; then
			echo "caught  $name ($(grep -c '^FAIL' <<<"$res") tests failed: $(grep '^FAIL' <<<"$res" | head -1 | cut -c1-200))"
		else
			echo "MISSED  $name"
			rc=1
		fi
	done
	return $rc
}
