# shellcheck shell=bash
# bench_opts.sh - the command line of a benchmark script whose options all
# take one value. Source it; it defines functions only.
#
#   bench_opts '--rounds:ROUNDS --json:JSON_OUT ...' "$@"
#
# sets each VAR from its --option VALUE; -h/--help prints the script's head
# comment (line 2 up to `set -u`) and exits 0; an unknown option or a
# missing value exits 2 with a message naming it.

bench_usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-2}"
}

bench_opts() {
	local spec=$1 me pair var
	me=$(basename "$0")
	shift
	while [ $# -gt 0 ]; do
		case $1 in -h | --help) bench_usage 0 ;; esac
		var=
		for pair in $spec; do
			[ "${pair%%:*}" = "$1" ] && var=${pair#*:}
		done
		[ -n "$var" ] || { echo "$me: unknown option $1; see --help" >&2; exit 2; }
		[ $# -ge 2 ] || { echo "$me: $1 needs a value; see --help" >&2; exit 2; }
		printf -v "$var" '%s' "$2"
		shift 2
	done
}
