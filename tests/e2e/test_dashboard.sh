#!/usr/bin/env bash
# test_dashboard.sh - 'agent report --watch' as a live dashboard in a real
# terminal: tmux (a server of our own, tmux -L ks_dash_PID) runs it in a
# detached 80x24 window while a flash key is read; capture-pane checks
# what an operator sees, then the window shrinks to 50x15, then q, Ctrl-C
# and SIGTERM each end a dashboard and must leave the terminal as it was.
#
# Set-up (steer_topo.sh): a client, one shard host (memcached + the agent,
# --sample 1, 1 s intervals, --replicas on two replica hosts) and the
# ring of the clients, 4 shards of which only that one exists (the
# others are names in the ring: their keys count on their bars, as keys
# sent to the wrong shard). ks_load sends 1500 ops/s for 180 s at most
# (UDP gets, TCP sets) to the one shard, stopped by the test when it is
# done (it once ran 40 s, which a loaded machine spent before the checks); a flash key owned by it takes 30%
# (450 reads/s, over the 100/s hot threshold: capacity 1000 x 0.1), so it
# is hot, copied to the replicas and steered.
#
# Checks at 80x24 (capture-pane -J joins wrapped lines, so a line wider
# than the window would show): 24 lines, none over 80 columns, the header
# (interface, agent running), 4 shard bars with the busiest marked, the
# flash key in the top keys with a sparkline of >= 3 intervals, the
# flash key in the hot-key table. At 50x15: none over 50 columns, 15
# lines, the flash key still there with a shorter sparkline and fewer
# top-key rows. After each exit: status 0, the alternate screen off, the
# cursor visible, stty settings as before the dashboard.
#
# DASH_SCREENSHOT=DIR keeps the captures there, dashboard-80x24.txt and
# dashboard-50x15.txt (docs/dashboard.md shows them). Everything (tmux server, load, agent, namespaces) is removed on
# every exit path.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
e2e_init dashboard

e2e_require dashboard "make deps: tmux" tmux
LOAD=$E2E_ROOT/${OUT:-build}/ks_load
if [ ! -x "$LOAD" ]; then
	fail dashboard "$LOAD is missing; run 'make' first"
	exit 1
fi

TMUX_SOCK=ks_dash_$$
TMUX_PATH= # the socket file, which kill-server leaves behind
LOAD_PID=
# tmux -u: the client passes UTF-8 through whatever the caller's locale.
tm() { tmux -u -L "$TMUX_SOCK" "$@"; }
dash_cleanup() {
	tm kill-server >/dev/null 2>&1
	[ -n "$TMUX_PATH" ] && [ -S "$TMUX_PATH" ] && rm -f "$TMUX_PATH"
	[ -n "$LOAD_PID" ] && ks_stop_pid "$LOAD_PID" TERM 5
	LOAD_PID=
}
# e2e_cleanup takes the script's exit status from $?: hand it on.
dash_exit() {
	local rc=$?
	dash_cleanup
	steer_topo_down
	(exit "$rc")
	e2e_cleanup
}
trap dash_exit EXIT

if ! steer_topo_up 1 2 >"$E2E_TMP/topo.out" 2>&1; then
	fail dashboard_setup "$(tail -n 3 "$E2E_TMP/topo.out")"
	exit 1
fi
SELF=${STEER_SHARD_ADDR[0]}:$STEER_PORT
SIF_DASH=${STEER_SHARD_IF[0]}
RING=$E2E_TMP/ring.txt
printf '%s\n198.18.3.12:11211\n198.18.3.13:11211\n198.18.3.14:11211\n' \
	"$SELF" >"$RING"
# The flash key must be one the shard we watch owns on that ring.
KEY=
for i in $(seq 1 64); do
	if [ "$("$AGENT" ring lookup --shards-file "$RING" "flash:$i" | cut -f3)" = "$SELF" ]; then
		KEY=flash:$i
		break
	fi
done
if [ -z "$KEY" ]; then
	fail dashboard_setup "no flash:N key owned by $SELF on $RING"
	exit 1
fi
note "flash key $KEY, owned by $SELF"

if ! steer_agent_start 0 --interval 1 --sample 1 --shard-capacity 1000 \
	--hot-fraction 0.1 --shards-file "$RING" --self "$SELF" \
	--replicas "$STEER_REPLICAS"; then
	fail dashboard_setup "agent did not attach: $(head -n 3 "$STEER_TMP/agent.0.out")"
	exit 1
fi

ks_in_ns_bg "$STEER_CLIENT_NS" "$LOAD" --server "$SELF" --proto udp-gets \
	--keys 2000 --zipf 0.9 --flash "$KEY:0.3" --mix get=97,set=3 --preload \
	--duration 180 --rate 1500 </dev/null >"$E2E_TMP/load.out" 2>&1
LOAD_PID=$KS_BG_PID

# The pane's script: three dashboards in turn (ended by q, Ctrl-C and
# SIGTERM), each followed by its exit status and the stty settings; the
# last sleep keeps the pane (and what it shows) for the checks. The shell
# ignores the Ctrl-C the terminal sends to it too (the agent installs its
# own handler over the ignored disposition it inherits).
cat >"$E2E_TMP/pane.sh" <<EOF
trap '' INT
stty -g >"$E2E_TMP/stty.before"
for n in 1 2 3; do
	LANG=C.UTF-8 LC_ALL=C.UTF-8 "$AGENT" report --iface "$SIF_DASH" --watch \\
		</dev/tty &
	echo \$! >"$E2E_TMP/pid.\$n"
	wait \$!
	rc=\$?
	stty -g >"$E2E_TMP/stty.\$n"
	echo \$rc >"$E2E_TMP/rc.\$n"
	i=0
	while [ ! -e "$E2E_TMP/go.\$n" ] && [ \$i -lt 300 ]; do
		sleep 0.1
		i=\$((i + 1))
	done
done
sleep 60
EOF

# capture FILE: the visible pane, wrapped lines joined.
capture() { tm capture-pane -p -J -t dash >"$1"; }
# wait_text TEXT SECONDS: until the pane shows TEXT (SECONDS by the clock,
# 60 at least: a guard, the dashboard's start at load).
wait_text() {
	local t0=$SECONDS secs=$2
	[ "$secs" -ge 60 ] || secs=60
	while [ $((SECONDS - t0)) -lt "$secs" ]; do
		capture "$E2E_TMP/cap"
		grep -qF -- "$1" "$E2E_TMP/cap" && return 0
		sleep 0.2 # a poll's step
	done
	return 1
}
# check_screen FILE W H: one line per problem: lines over W columns, more
# than H lines.
check_screen() {
	"$PY" - "$1" "$2" "$3" <<'PYEOF'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
if lines and lines[-1] == "":
    lines.pop()
w, h = int(sys.argv[2]), int(sys.argv[3])
for i, l in enumerate(lines):
    if len(l.rstrip()) > w:
        print("line %d is %d columns wide: %r" % (i + 1, len(l.rstrip()), l))
if len(lines) > h:
    print("%d lines in a %d-line window" % (len(lines), h))
PYEOF
}
# spark_len FILE KEY: sparkline glyphs on the key's top-keys row (the
# first row that starts with the key).
spark_len() {
	"$PY" - "$1" "$2" <<'PYEOF'
import sys
for l in open(sys.argv[1], encoding="utf-8"):
    if l.startswith(sys.argv[2] + " "):
        print(sum(1 for c in l if 0x2581 <= ord(c) <= 0x2588))
        break
else:
    print(0)
PYEOF
}
fmt() { tm display -p -t dash "$1"; }
# expect_exit N NAME: dashboard N ended with 0 and left the terminal as
# it found it.
expect_exit() {
	local n=$1 name=$2 i why=
	local t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 60 ]; do # a guard: its exit at load
		[ -s "$E2E_TMP/rc.$n" ] && break
		sleep 0.1 # a poll's step
	done
	if [ ! -s "$E2E_TMP/rc.$n" ]; then
		why="still running 60 s later"
	else
		[ "$(cat "$E2E_TMP/rc.$n")" = 0 ] || why="exit status $(cat "$E2E_TMP/rc.$n")"
		cmp -s "$E2E_TMP/stty.before" "$E2E_TMP/stty.$n" ||
			why="${why:+$why, }stty settings changed: $(cat "$E2E_TMP/stty.$n")"
		[ "$(fmt '#{alternate_on}')" = 0 ] || why="${why:+$why, }still on the alternate screen"
		[ "$(fmt '#{cursor_flag}')" = 1 ] || why="${why:+$why, }cursor hidden"
	fi
	if [ -z "$why" ]; then
		pass "$name"
	else
		fail "$name" "$why"
	fi
}

if ! tm -f /dev/null new-session -d -s dash -x 80 -y 24 "sh $E2E_TMP/pane.sh"; then
	fail dashboard_tmux "tmux new-session failed"
	exit 1
fi
TMUX_PATH=$(tm display -p '#{socket_path}')

# --- 80x24 --------------------------------------------------------------
# Wait for the flash key's sparkline to cover a few intervals (more for
# the screenshot, so it shows the load's steady state).
want=4
[ -n "${DASH_SCREENSHOT:-}" ] && want=16
got=0
if wait_text "TOP KEYS" 10; then
	# the agent's intervals (1 s, 5 to 9 s at load 43): 60 s and 10 s
	# an interval wanted, a guard
	t0=$SECONDS
	while [ $((SECONDS - t0)) -lt $((60 + want * 10)) ]; do
		capture "$E2E_TMP/cap80"
		got=$(spark_len "$E2E_TMP/cap80" "$KEY")
		[ "$got" -ge "$want" ] && break
		sleep 0.25 # a poll's step
	done
fi
capture "$E2E_TMP/cap80"
[ -n "${DASH_SCREENSHOT:-}" ] && cp "$E2E_TMP/cap80" "$DASH_SCREENSHOT/dashboard-80x24.txt"
sed 's/^/  | /' "$E2E_TMP/cap80"
why=$(check_screen "$E2E_TMP/cap80" 80 24)
[ "$(wc -l <"$E2E_TMP/cap80")" = 24 ] || why="$why; $(wc -l <"$E2E_TMP/cap80") lines, want 24"
grep -q "^$SIF_DASH  agent running" <<<"$(head -n 1 "$E2E_TMP/cap80")" ||
	why="$why; header: $(head -n 1 "$E2E_TMP/cap80")"
[ "$(fmt '#{alternate_on}')" = 1 ] || why="$why; not on the alternate screen"
[ "$(fmt '#{cursor_flag}')" = 0 ] || why="$why; cursor shown"
if [ -z "$why" ]; then
	pass dashboard_80x24_fits
else
	fail dashboard_80x24_fits "${why#; }"
fi

why=
shards=$(grep -cE '^[ *](198\.18\.2\.11|198\.18\.3\.1[234]):11211 ' "$E2E_TMP/cap80")
[ "$shards" = 4 ] || why="$why; $shards shard rows, want 4"
grep -qE "^\*[0-9.:]+ +[0-9.]+k?  ..*x$" "$E2E_TMP/cap80" || why="$why; no busiest shard row"
[ "$got" -ge 4 ] || why="$why; $KEY sparkline has $got intervals, want >= 4"
grep -qE "^$KEY +[0-9.]+k? +[0-9.]+k?  " "$E2E_TMP/cap80" || why="$why; no top-keys row for $KEY"
grep -qE "^$KEY +[0-9.]+k? +[0-9]/[0-9] (armed|dirty|filling) " <<<"$(sed -n '/^HOT KEYS/,$p' "$E2E_TMP/cap80")" ||
	why="$why; $KEY not in the hot-key table"
if [ -z "$why" ]; then
	pass dashboard_80x24_content
else
	fail dashboard_80x24_content "${why#; }"
fi

# --- 50x15: the same dashboard, reduced -----------------------------------
# The redraw at the new size is the event: the header on the first of 15
# lines and the key line on the last. Until the dashboard redraws, tmux
# shows the old screen cut to 50x15 (the alternate screen is not
# reflowed), whose first line is not the header. 60 s: a guard.
tm resize-window -t dash -x 50 -y 15
t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do
	capture "$E2E_TMP/cap50"
	[ "$(wc -l <"$E2E_TMP/cap50")" = 15 ] &&
		grep -q "^$SIF_DASH  agent running" <<<"$(head -n 1 "$E2E_TMP/cap50")" &&
		grep -q "^q quit" <<<"$(tail -n 1 "$E2E_TMP/cap50")" && break
	sleep 0.2
done
[ -n "${DASH_SCREENSHOT:-}" ] && cp "$E2E_TMP/cap50" "$DASH_SCREENSHOT/dashboard-50x15.txt"
sed 's/^/  | /' "$E2E_TMP/cap50"
why=$(check_screen "$E2E_TMP/cap50" 50 15)
[ "$(wc -l <"$E2E_TMP/cap50")" = 15 ] || why="$why; $(wc -l <"$E2E_TMP/cap50") lines, want 15"
got50=$(spark_len "$E2E_TMP/cap50" "$KEY")
[ "$got50" -ge 1 ] && [ "$got50" -le 26 ] || why="$why; $KEY sparkline $got50 glyphs at 50 columns"
rows80=$(sed -n '/^TOP KEYS/,/^HOT KEYS/p' "$E2E_TMP/cap80" | wc -l)
rows50=$(sed -n '/^TOP KEYS/,/^HOT KEYS/p' "$E2E_TMP/cap50" | wc -l)
[ "$rows50" -lt "$rows80" ] || why="$why; top keys not reduced ($rows50 lines at 50x15, $rows80 at 80x24)"
if [ -z "$why" ]; then
	pass dashboard_50x15_degrades
else
	fail dashboard_50x15_degrades "${why#; }"
fi
tm resize-window -t dash -x 80 -y 24

# --- the three ways out ---------------------------------------------------
tm send-keys -t dash q
expect_exit 1 dashboard_quit_q_restores
touch "$E2E_TMP/go.1"
if wait_text "TOP KEYS" 10; then
	tm send-keys -t dash C-c
	expect_exit 2 dashboard_ctrl_c_restores
else
	fail dashboard_ctrl_c_restores "the second dashboard did not start"
fi
touch "$E2E_TMP/go.2"
if wait_text "TOP KEYS" 10; then
	kill -TERM "$(cat "$E2E_TMP/pid.3")"
	expect_exit 3 dashboard_sigterm_restores
else
	fail dashboard_sigterm_restores "the third dashboard did not start"
fi
touch "$E2E_TMP/go.3"

# --- into a pipe: the plain report, as before -------------------------------
# Until its first report is out (30 s: a guard), then stopped by its PID.
"$AGENT" report --iface "$SIF_DASH" --watch --interval 0.5 \
	</dev/null >"$E2E_TMP/plain.out" 2>&1 &
plain_pid=$!
e2e_wait_line "$E2E_TMP/plain.out" "^top [0-9]* keys" "$plain_pid" 300
ks_stop_pid "$plain_pid" TERM 5
if grep -q "^top [0-9]* keys" "$E2E_TMP/plain.out" &&
	! grep -q $'\033\\[?1049h' "$E2E_TMP/plain.out"; then
	pass dashboard_pipe_plain_report
else
	fail dashboard_pipe_plain_report "$(head -c 300 "$E2E_TMP/plain.out")"
fi
