# shellcheck shell=bash
# demo_lib.sh - what the parts of `make demo` (demo.sh, demo_steer.sh,
# demo_fleet.sh, demo_ring.sh) share. Source it; it defines functions only.
#
#   say TEXT...                 a "== TEXT" heading, after a blank line
#   die TEXT...                 "demo: TEXT" on stderr, exit 1 (the caller's
#                               EXIT trap cleans up)
#   warn TEXT...                "demo: WARNING: TEXT" on stdout, in the demo's
#                               own output: the story did not come out as told
#   nap SECONDS                 a sleep Ctrl-C interrupts at once
#   demo_need_root              die unless root
#   demo_seconds NAME VALUE MIN MAX   die unless VALUE is a whole number of
#                               seconds in MIN..MAX (NAME: the knob's name)
#   demo_traps CLEANUP          CLEANUP on every exit: the EXIT trap, and
#                               Ctrl-C, TERM and HUP exit with 128 + signal
#   demo_etcd_topo_down         for the parts on steer_topo.sh with an etcd
#                               (its PID in ETCD_PID): the agents, etcd,
#                               memcached and the namespaces stopped and
#                               removed, said in one line
#
# and the paths they use: PY (Debian's python3, which has pymemcache), LOAD
# (build/ks_load), MC_STATS (mc_stats.py: memcached's own counters).

# shellcheck disable=SC2034 # for the scripts that source this
{
	DEMO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	PY=/usr/bin/python3
	LOAD=$DEMO_ROOT/${OUT:-build}/ks_load
	MC_STATS=$DEMO_ROOT/user/scripts/mc_stats.py
}

say() { printf '\n== %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }
warn() { echo "demo: WARNING: $*"; }

# nap SECONDS: sleep in the background and wait for it. Ctrl-C reaches bash
# while it waits in the `wait` builtin, which runs the INT trap at once; a
# foreground sleep would leave it to bash's wait-and-see rule for SIGINT.
# NAP_PID is the sleep's PID while it runs, for the caller's cleanup.
NAP_PID=
nap() {
	sleep "$1" &
	NAP_PID=$!
	wait "$NAP_PID"
	NAP_PID=
}

demo_need_root() {
	[ "$(id -u)" -eq 0 ] ||
		die "run as root: the demo creates namespaces and loads BPF (sudo make demo)"
}

demo_seconds() {
	local name=$1 value=$2 min=$3 max=$4
	case $value in
	'' | *[!0-9]*) die "$name='$value' is not a whole number of seconds" ;;
	esac
	if [ "$value" -lt "$min" ] || [ "$value" -gt "$max" ]; then
		die "$name must be $min..$max"
	fi
}

DEMO_STDOUT='' DEMO_STDERR=''
demo_traps() {
	exec {DEMO_STDOUT}>&1 {DEMO_STDERR}>&2
	# shellcheck disable=SC2064 # the function's name, fixed now
	trap "_demo_exit $1" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
}

_demo_rc() { return "$1"; }

# _demo_exit CLEANUP: CLEANUP with $? still the script's exit status. A
# signal can end the script inside a shell function whose output is
# redirected (ks_in_ns ... >"$STEER_TMP/report.json"): the trap runs with
# that redirection in force, and the cleanup's lines would go to a file it
# deletes. So they go back to where the demo's output goes first.
_demo_exit() {
	local rc=$?
	exec 1>&"$DEMO_STDOUT" 2>&"$DEMO_STDERR"
	_demo_rc "$rc"
	"$1"
	exit "$rc"
}

demo_etcd_topo_down() {
	local names
	[ -n "$NAP_PID" ] && ks_stop_pid "$NAP_PID" TERM 1
	# The agents first, while etcd is up: each revokes its lease on the way.
	steer_agents_stop
	[ -n "$ETCD_PID" ] && ks_stop_pid "$ETCD_PID" TERM 5
	names=${STEER_ALL_NS[*]}
	steer_topo_down
	[ -n "$names" ] && echo "removed etcd, the agents, memcached and namespaces $names"
}
