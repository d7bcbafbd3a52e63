#!/usr/bin/env bash
# test_install.sh - keysteer installed and run as a service, end to end:
#   install_files        `make install DESTDIR=tmp PREFIX=/usr` writes exactly
#                        the expected files with their modes, nothing in /etc
#   install_version_help the installed agent answers --version and --help
#   install_man_renders  the man page formats without a warning
#   install_man_complete every command of the help and every long option of
#                        each command's --help is in the man page
#   install_unit_verify  the unit passes `systemd-analyze verify` and names
#                        the installed agent, SIGINT, Restart=on-failure
#   install_example_keys every key of keysteer.conf.example is an option
#   install_config_run   `run --config FILE` attaches with the file's
#                        settings, the command line after it wins
#   install_report_schema a real `report --json` (and --hash-only) is valid
#                        against docs/report.schema.json; a broken copy is not
#   install_bad_config_* a bad file exits 2 naming FILE:LINE, leaves nothing
#                        (an abbreviated key, which getopt alone would take,
#                        included)
#   install_unit_sandbox the agent runs with only the unit's capabilities,
#                        no_new_privs and / and /sys read-only
#   install_unit_restart_takeover  and, so restricted, takes over the pins
#                        of an agent killed by SIGKILL (Restart=on-failure)
#   install_unit_syscalls under strace, every system call and socket family
#                        of a run is allowed by the unit's filters
#   install_uninstall    `make uninstall` removes every installed file
#
# Set-up (lib.sh): namespaces ks_cli_PID / ks_srv_PID on a veth pair, the
# agent on the server side, build/ks_load in ks_cli. The installed copy of
# the agent is what runs; the build's agent only cleans up.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init install

OUTDIR=$E2E_ROOT/${OUT:-build}
LOAD=$OUTDIR/ks_load
DEST=$E2E_TMP/root
PREFIX=/usr
INST_AGENT=$DEST$PREFIX/sbin/keysteer-agent
UNIT=$DEST$PREFIX/lib/systemd/system/keysteer@.service
MANPAGE=$DEST$PREFIX/share/man/man8/keysteer-agent.8
DOC=$DEST$PREFIX/share/doc/keysteer
BUILD_AGENT=$AGENT

if [ ! -x "$LOAD" ]; then
	fail install "$LOAD is missing; run 'make' first"
	exit 1
fi

# make_in_root TARGET...: make with our DESTDIR and PREFIX. The built
# programs are taken as they are (-o): the test installs the build it
# checks and never rebuilds.
make_in_root() {
	make -s -C "$E2E_ROOT" OUT="${OUT:-build}" -o "$OUTDIR/agent" \
		-o "$OUTDIR/ks_load" DESTDIR="$DEST" PREFIX="$PREFIX" "$@"
}

# --- install: the files and their modes ------------------------------------
if ! make_in_root install >"$E2E_TMP/install.out" 2>&1; then
	fail install_files "make install failed: $(head -c 300 "$E2E_TMP/install.out")"
	exit 1
fi
want="644 usr/include/libkeysteer.h
644 usr/lib/libkeysteer.a
644 usr/lib/pkgconfig/keysteer.pc
644 usr/lib/systemd/system/keysteer@.service
644 usr/share/doc/keysteer/README.md
644 usr/share/doc/keysteer/keysteer.conf.example
644 usr/share/doc/keysteer/operations.md
644 usr/share/doc/keysteer/report-json.md
644 usr/share/doc/keysteer/report.schema.json
644 usr/share/man/man8/keysteer-agent.8
755 usr/bin/ks_load
755 usr/lib/libkeysteer.so.0
755 usr/sbin/keysteer-agent
777 usr/lib/libkeysteer.so"
got=$(cd "$DEST" && find . ! -type d -printf '%m %P\n' | LC_ALL=C sort)
# without PREFIX the same files go under /usr/local
dry=$(make -s -n -C "$E2E_ROOT" OUT="${OUT:-build}" -o "$OUTDIR/agent" \
	-o "$OUTDIR/ks_load" DESTDIR="$DEST" install 2>&1)
if [ "$got" != "$want" ]; then
	fail install_files "installed files differ: $(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
elif ! grep -q "$DEST/usr/local/sbin/keysteer-agent" <<<"$dry"; then
	fail install_files "the default PREFIX is not /usr/local"
else
	note "$(echo "$got" | tr '\n' ';')"
	pass install_files
fi

# --- the installed agent runs ----------------------------------------------
version=$(sed -n 's/^#define KS_VERSION_STR "\(.*\)"/\1/p' "$E2E_ROOT/bpf/keysteer.h")
out=$("$INST_AGENT" --version 2>&1)
rc=$?
if [ "$rc" != 0 ] || [ "$out" != "keysteer $version" ]; then
	fail install_version_help "--version: exit $rc, '$out', want 'keysteer $version'"
elif ! "$INST_AGENT" --help >"$E2E_TMP/help.txt" 2>&1 ||
	! grep -q '^USAGE' "$E2E_TMP/help.txt"; then
	fail install_version_help "--help: $(head -c 200 "$E2E_TMP/help.txt")"
elif ! grep -q -- '--config FILE' <<<"$("$INST_AGENT" run --help)"; then
	fail install_version_help "'run --help' does not document --config"
else
	note "installed agent: $out"
	pass install_version_help
fi

# --- the man page ------------------------------------------------------------
if command -v groff >/dev/null; then
	warnings=$(groff -man -ww -z "$MANPAGE" 2>&1)
	text=$(MANWIDTH=80 man -l "$MANPAGE" 2>/dev/null | col -b 2>/dev/null)
	[ -n "$text" ] || text=$(groff -man -Tutf8 "$MANPAGE" 2>/dev/null)
	if [ -n "$warnings" ]; then
		fail install_man_renders "groff warns: $(head -c 300 <<<"$warnings")"
	elif ! grep -q '^NAME' <<<"$text" || ! grep -q 'keysteer-agent - ' <<<"$text" ||
		! grep -q '^CONFIGURATION FILE' <<<"$text"; then
		fail install_man_renders "rendered page lacks NAME or CONFIGURATION FILE"
	else
		note "man page: $(wc -l <<<"$text") lines at 80 columns, $(awk 'length > 80' <<<"$text" | wc -l) longer"
		pass install_man_renders
	fi
else
	# a weaker check of the roff alone would pass where the page is unread
	fail install_man_renders "groff is not installed (make deps: groff-base)"
fi

# The page's text with roff escapes undone, for finding option names.
plain_man() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/\\e/\\/g' "$MANPAGE"
}
# options_of CMD: every long option on the option lines of 'CMD --help'
# (lines that start with a dash after the indent), one per line.
options_of() {
	"$INST_AGENT" help "$1" 2>/dev/null | grep -E '^ +-' |
		grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}
missing=""
man=$(plain_man)
cmds=$( (grep -oE '^  agent [a-z]+' "$E2E_TMP/help.txt" | awk '{ print $2 }'
	grep -E '^\.SS ' "$MANPAGE" | awk '{ print $2 }' | tr -d ',') |
	grep -v '^help$' | sort -u)
nopts=0
for cmd in $cmds; do
	if ! "$INST_AGENT" help "$cmd" >/dev/null 2>&1; then
		missing="$missing $cmd(not a command of the agent)"
		continue
	fi
	grep -qE "^\.SS $cmd\$" "$MANPAGE" || missing="$missing $cmd(no .SS section)"
	for opt in $(options_of "$cmd"); do
		nopts=$((nopts + 1))
		grep -qE -- "${opt}([^a-z0-9-]|\$)" <<<"$man" ||
			missing="$missing $cmd:$opt"
	done
done
for opt in --version --report --help; do
	grep -qE -- "${opt}([^a-z0-9-]|\$)" <<<"$man" || missing="$missing $opt"
done
if [ -z "$cmds" ] || [ "$nopts" -lt 20 ]; then
	fail install_man_complete "found only $nopts options in $(tr '\n' ' ' <<<"$cmds"): the --help format changed?"
elif [ -n "$missing" ]; then
	fail install_man_complete "not in user/dist/keysteer-agent.8:$missing"
else
	note "man page covers $(wc -w <<<"$cmds") commands, $nopts options"
	pass install_man_complete
fi

# --- the unit ----------------------------------------------------------------
if ! grep -qx "ExecStart=$PREFIX/sbin/keysteer-agent run --config /etc/keysteer/%I.conf --iface %I" "$UNIT" ||
	! grep -qx 'KillSignal=SIGINT' "$UNIT" || ! grep -qx 'Restart=on-failure' "$UNIT"; then
	fail install_unit_verify "ExecStart, KillSignal=SIGINT or Restart=on-failure missing in $UNIT"
elif ! command -v systemd-analyze >/dev/null; then
	fail install_unit_verify "systemd-analyze is not installed (make deps: systemd)"
else
	# verify checks that ExecStart exists and that 'man keysteer-agent(8)'
	# works: point both into DESTDIR, in a copy named as an instance
	mkdir -p "$E2E_TMP/unit"
	sed "s|=$PREFIX/sbin/keysteer-agent|=$INST_AGENT|" "$UNIT" \
		>"$E2E_TMP/unit/keysteer@ks0.service"
	if MANPATH=$DEST$PREFIX/share/man systemd-analyze verify \
		"$E2E_TMP/unit/keysteer@ks0.service" >"$E2E_TMP/verify.out" 2>&1; then
		score=$(systemd-analyze security --offline=true \
			"$E2E_TMP/unit/keysteer@ks0.service" 2>/dev/null | tail -1)
		note "systemd-analyze verify: clean; ${score#→ }"
		pass install_unit_verify
	else
		fail install_unit_verify "$(tr '\n' ' ' <"$E2E_TMP/verify.out" | head -c 400)"
	fi
fi

# every key in the example config, commented out or not, is an option of run
bad_keys=""
run_opts=$(options_of run)
while read -r key; do
	grep -qx -- "--$key" <<<"$run_opts" || bad_keys="$bad_keys $key"
done < <(sed -nE 's/^#?([a-z][a-z0-9-]*) *=.*/\1/p' "$DOC/keysteer.conf.example")
nkeys=$(sed -nE 's/^#?([a-z][a-z0-9-]*) *=.*/\1/p' "$DOC/keysteer.conf.example" | wc -l)
if [ -n "$bad_keys" ] || [ "$nkeys" -lt 10 ]; then
	fail install_example_keys "not options of 'agent run':${bad_keys:- (only $nkeys keys found)}"
else
	pass install_example_keys
fi

# --- a config file run, with the installed agent ------------------------------
e2e_net_up
ip netns exec "$SNS" sysctl -qw "net.ipv4.conf.$SIF.forwarding=1"
AGENT=$INST_AGENT
CONF=$E2E_TMP/ks.conf
cat >"$CONF" <<EOF
# keysteer on the test's server veth
iface = $SIF
sample = 16            # the command line's --sample 1 wins
interval = 0.5
ports = 11211
shards = $SADDR:$PORT,198.18.0.3:11211
self = $SADDR:$PORT
# nothing listens there: copies fail fast, the table still fills
replicas = $SADDR:11212,$SADDR:11213
shard-capacity = 2000
hot-fraction = 0.1
verbose = yes
EOF
if ! e2e_agent_start --config "$CONF" --sample 1; then
	fail install_config_run "the installed agent did not attach with $CONF"
else
	# The load runs until the report shows top keys and the agent has
	# logged a status line (the event: an interval with the load in it
	# published), 30 s at most; then SIGTERM ends it with its summary. A
	# fixed 2 s of load left it to the machine whether one had.
	ks_in_ns_bg "$CNS" nice -n "$KS_NICE" "$LOAD" --server "$SADDR:$PORT" \
		--duration 30 --rate 2000 --keys 1000 --zipf 0.9 \
		--flash flash:1:0.3 --mix get=90,set=10 </dev/null >"$E2E_TMP/load.out" 2>&1
	load_pid=$KS_BG_PID
	while kill -0 "$load_pid" 2>/dev/null; do
		e2e_agent report --iface "$SIF" --json >"$E2E_TMP/report.json" 2>"$E2E_TMP/report.err" &&
			"$PY" -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1]))["top"])' \
				"$E2E_TMP/report.json" 2>/dev/null &&
			grep -q "keysteer: #" "$E2E_TMP/agent.out" && break
		sleep 0.2
	done
	kill -0 "$load_pid" 2>/dev/null && kill -TERM "$load_pid"
	wait "$load_pid" || note "ks_load: $(tail -2 "$E2E_TMP/load.out")"
	e2e_agent report --iface "$SIF" --json --hash-only >"$E2E_TMP/report_h.json" 2>&1
	why=$("$PY" - "$E2E_TMP/report.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
why = []
if d["sample_n"] != 1:
    why.append("sample_n %s, want 1 (the command line after --config)" % d["sample_n"])
if d["interval_s"] != 0.5:
    why.append("interval_s %s, want 0.5 (the file)" % d["interval_s"])
r = d["ring"] or {}
if r.get("nshards") != 2 or r.get("self_index") != 0:
    why.append("ring %r, want 2 shards, self 0 (the file)" % r)
if len(d.get("replicas", [])) != 2:
    why.append("replicas %r, want 2 (the file)" % d.get("replicas"))
if not d["top"]:
    why.append("no top keys after the load")
print("; ".join(why))
print("  top %s, %d hot keys, %d misdirected clients" % (
    d["top"][0]["key"] if d["top"] else None, len(d.get("hot_keys", [])),
    len(d["misdirected_clients"])), file=sys.stderr)
PYEOF
	)
	if [ -n "$why" ]; then
		fail install_config_run "$why"
	elif ! grep -q "keysteer: #" "$E2E_TMP/agent.out"; then
		fail install_config_run "'verbose = yes' gave no status lines"
	else
		pass install_config_run
	fi

	# the real report against the schema, and a broken copy must fail
	if ! "$PY" "$E2E_DIR/ks_json_schema.py" "$E2E_ROOT/docs/report.schema.json" \
		"$E2E_TMP/report.json" "$E2E_TMP/report_h.json" >"$E2E_TMP/schema.out" 2>&1; then
		fail install_report_schema "$(head -c 400 "$E2E_TMP/schema.out")"
	else
		"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1])); del d["version"]; d["undocumented"] = 1
json.dump(d, open(sys.argv[2], "w"))' "$E2E_TMP/report.json" "$E2E_TMP/broken.json"
		if "$PY" "$E2E_DIR/ks_json_schema.py" "$E2E_ROOT/docs/report.schema.json" \
			"$E2E_TMP/broken.json" >"$E2E_TMP/broken.out" 2>&1 ||
			! grep -q "'version'" "$E2E_TMP/broken.out" ||
			! grep -q "undocumented" "$E2E_TMP/broken.out"; then
			fail install_report_schema "a report without 'version' and with an undocumented field passed"
		else
			note "$(tail -1 "$E2E_TMP/schema.out")"
			pass install_report_schema
		fi
	fi
	e2e_agent_stop INT
	if [ "$E2E_AGENT_RC" != 0 ]; then
		fail install_config_stop "SIGINT: exit $E2E_AGENT_RC, want 0"
	fi
	e2e_expect_clean install_config_clean
fi

# --- bad config files: exit 2, FILE:LINE, nothing attached ---------------------
# bad_config NAME WANT TEXT: a file holding TEXT (no file for TEXT "-")
# must make the agent exit 2 with WANT (a fixed string; FILE stands for the
# file's path) on stderr.
bad_config() {
	local name=$1 want=${2//FILE/$E2E_TMP/bad_$1.conf} rc
	rm -f "$E2E_TMP/bad_$name.conf"
	[ "$3" = - ] || printf '%b' "$3" >"$E2E_TMP/bad_$name.conf"
	timeout 10 nsenter --net="/run/netns/$SNS" -- "$INST_AGENT" run \
		--config "$E2E_TMP/bad_$name.conf" --iface "$SIF" >"$E2E_TMP/bad.out" 2>&1
	rc=$?
	if [ "$rc" != 2 ]; then
		fail "install_bad_config_$name" "exit $rc, want 2: $(head -c 200 "$E2E_TMP/bad.out")"
	elif ! grep -qF -- "$want" "$E2E_TMP/bad.out"; then
		fail "install_bad_config_$name" "no '$want' in: $(head -c 300 "$E2E_TMP/bad.out")"
	elif e2e_pins_exist || e2e_xdp_attached; then
		fail "install_bad_config_$name" "refused, but left pins or XDP on $SIF"
	else
		pass "install_bad_config_$name"
	fi
}
bad_config unknown_key "agent: FILE:3: unknown key 'smaple'; see 'agent run --help' for the keys" \
	"iface = $SIF\n# a typo\nsmaple = 8\n"
bad_config bad_value "agent: FILE:2: 'interval = 0.01' is refused" \
	"iface = $SIF\ninterval = 0.01\n"
bad_config flag_value "FILE:2: 'verbose' is a flag" "iface = $SIF\nverbose = 1\n"
bad_config syntax "FILE:2: 'sample 8' is not 'key = value'" "iface = $SIF\nsample 8\n"
bad_config duplicate "FILE:4: 'sample' is set twice (first on line 2)" \
	"iface = $SIF\nsample = 8\n\nsample = 16\n"
bad_config abbreviated_key "agent: FILE:2: unknown key 'samp' (did you mean 'sample'?)" \
	"iface = $SIF\nsamp = 8\n"
bad_config missing_file "FILE: cannot open it (No such file or directory)" -
# a test-only switch without KEYSTEER_TEST_SWITCHES=1 (docs/operations.md)
KEYSTEER_TEST_SWITCHES= bad_config test_switch "agent: --copy-protocol off is a test-only switch, for a test's control run; leave it out, or in a test set KEYSTEER_TEST_SWITCHES=1" \
	"iface = $SIF\ncopy-protocol = off\n"

# --- the unit's privileges, emulated: its capability bounding set, no new
# privileges, / and /sys read-only (ProtectSystem=strict,
# ProtectKernelTunables) with the bpffs left writable (ReadWritePaths) ---
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
setpriv_caps=$(for c in $caps; do printf ',+%s' "$(tr '[:upper:]' '[:lower:]' <<<"${c#CAP_}")"; done)

# wait_attached OUT PID: until OUT says the agent attached (0), PID exits
# or 10 s pass (1).
wait_attached() {
	for _ in $(seq 100); do
		grep -q "attached to $SIF" "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# sandbox_run NAME WANT: the installed agent in that sandbox must print WANT,
# attach, publish a report that 'report' outside sees, and detach on SIGINT.
sandbox_run() {
	local name=$1 want=$2 out=$E2E_TMP/$1.out alive i
	# unshare and sh exec: the background PID is the agent's own
	# shellcheck disable=SC2016 # expanded by the inner sh
	ks_in_ns_bg "$SNS" unshare -m -- sh -c 'mount -o remount,bind,ro / &&
		mount -o remount,bind,ro /sys &&
		[ ! -w / ] && [ ! -w /sys/kernel ] && [ -w /sys/fs/bpf ] &&
		exec setpriv --bounding-set "-all$1" --inh-caps -all --no-new-privs -- "$2" run --config "$3" --iface "$4"' \
		sh "$setpriv_caps" "$INST_AGENT" "$E2E_TMP/sandbox.conf" "$SIF" \
		</dev/null >"$out" 2>&1
	E2E_AGENT_PID=$KS_BG_PID
	wait_attached "$out" "$E2E_AGENT_PID"
	# the report outside, once the agent has published one (its first
	# interval; 30 s: a guard for a loaded machine, not a property)
	for ((i = 0; i < 150; i++)); do
		alive=$("$BUILD_AGENT" report --iface "$SIF" --json 2>/dev/null |
			"$PY" -c 'import json, sys; d = json.load(sys.stdin); print(d["agent_alive"], d["sample_n"])' 2>/dev/null)
		[ "$alive" = "True 4" ] && break
		kill -0 "$E2E_AGENT_PID" 2>/dev/null || break
		sleep 0.2
	done
	e2e_agent_stop INT
	if ! grep -q "attached to $SIF" "$out"; then
		fail "$name" "did not attach with $caps: $(head -c 300 "$out")"
	elif ! grep -q "$want" "$out"; then
		fail "$name" "no '$want' in: $(head -c 300 "$out")"
	elif [ "$alive" != "True 4" ]; then
		fail "$name" "report from outside: '$alive', want alive, sample 4"
	elif [ "$E2E_AGENT_RC" != 0 ]; then
		fail "$name" "SIGINT: exit $E2E_AGENT_RC: $(tail -c 300 "$out")"
	elif e2e_pins_exist || e2e_xdp_attached; then
		fail "$name" "left pins or XDP on $SIF after SIGINT"
	else
		pass "$name"
	fi
}

if ! command -v setpriv >/dev/null || ! command -v unshare >/dev/null; then
	fail install_unit_sandbox "setpriv or unshare is not installed (make deps: util-linux)"
	fail install_unit_restart_takeover "setpriv or unshare is not installed (make deps: util-linux)"
elif [ -z "$caps" ]; then
	fail install_unit_sandbox "no CapabilityBoundingSet in $UNIT"
else
	# the service sees the host's bpffs; mount it first if the host has none
	e2e_bpffs_mounted || mount -t bpf bpf "$BPFFS"
	printf 'sample = 4\ninterval = 0.5\nshards = %s\nself = %s\n' \
		"$SADDR:$PORT" "$SADDR:$PORT" >"$E2E_TMP/sandbox.conf"
	note "sandbox: $caps, no_new_privs, / and /sys read-only"
	sandbox_run install_unit_sandbox "attached to $SIF"
	# Restart=on-failure after a crash: the pins are still there and the
	# restarted agent, with the same privileges, must take them over
	ks_in_ns_bg "$SNS" "$BUILD_AGENT" run --config "$E2E_TMP/sandbox.conf" \
		--iface "$SIF" </dev/null >"$E2E_TMP/crashed.out" 2>&1
	crashed=$KS_BG_PID
	wait_attached "$E2E_TMP/crashed.out" "$crashed"
	kill -KILL "$crashed"
	wait "$crashed" 2>/dev/null
	if ! e2e_pins_exist; then
		fail install_unit_restart_takeover "the SIGKILLed agent left no pins to take over"
	else
		sandbox_run install_unit_restart_takeover "taking over keysteer on $SIF"
	fi
fi

# --- the system calls and socket families of a run against the unit's filters --
if ! command -v strace >/dev/null || ! command -v systemd-analyze >/dev/null; then
	fail install_unit_syscalls "strace or systemd-analyze is not installed (make deps: strace, systemd)"
else
	ks_in_ns_bg "$SNS" strace -f -qq -o "$E2E_TMP/strace.out" "$INST_AGENT" \
		run --config "$CONF" --listen 19182 --metrics 19183 \
		--routing-file "$E2E_TMP/route.json" \
		</dev/null >"$E2E_TMP/strace_agent.out" 2>&1
	tracer=$KS_BG_PID
	wait_attached "$E2E_TMP/strace_agent.out" "$tracer"
	ks_in_ns "$CNS" "$LOAD" --server "$SADDR:$PORT" --duration 1 --rate 1000 \
		--keys 100 --flash flash:1:0.5 --mix get=90,set=10 >/dev/null 2>&1
	e2e_agent report --iface "$SIF" >/dev/null 2>&1
	# each path until it answers 200 (503 until the traced agent's first
	# interval: strace slows it), so the answers' calls are traced; 30 s:
	# a guard
	ks_in_ns "$SNS" "$PY" -c 'import time, urllib.request as u
end = time.monotonic() + 30
for port, path in ((19182, "routing"), (19183, "metrics")):
    while True:
        try:
            u.urlopen("http://127.0.0.1:%d/%s" % (port, path), timeout=5).read()
            break
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)' ||
		note "the HTTP requests to the traced agent failed"
	# SIGINT to the agent itself: strace would detach on its own SIGINT
	traced=$(pgrep -P "$tracer" | head -1)
	[ -n "$traced" ] && kill -INT "$traced"
	wait "$tracer" 2>/dev/null
	verdict=$("$PY" - "$UNIT" "$E2E_TMP/strace.out" <<'PYEOF'
import re, subprocess, sys
unit = open(sys.argv[1]).read()
filt = re.search(r"^SystemCallFilter=(.*)$", unit, re.M).group(1).split()
fams = set(re.search(r"^RestrictAddressFamilies=(.*)$", unit, re.M).group(1).split())
groups, cur = {}, None
for line in subprocess.run(["systemd-analyze", "syscall-filter"],
                           capture_output=True, text=True).stdout.splitlines():
    if line.startswith("@"):
        cur = line.strip(); groups[cur] = []
    elif cur and line.strip() and not line.strip().startswith("#"):
        groups[cur].append(line.strip())
def expand(name):
    return set().union(*(expand(m) for m in groups.get(name, []))) \
        if name.startswith("@") else {name}
allowed = set().union(*(expand(n) for n in filt))
used, used_fams = set(), set()
for line in open(sys.argv[2]):
    m = re.match(r"\d+\s+([a-z_0-9]+)\(", line)
    if m:
        used.add(m.group(1))
    m = re.match(r"\d+\s+socket\((AF_[A-Z0-9]+)", line)
    if m:
        used_fams.add(m.group(1))
why = []
if "bpf" not in used:
    why.append("no bpf() call traced: the trace is empty?")
if used - allowed:
    why.append("system calls outside SystemCallFilter: " + " ".join(sorted(used - allowed)))
if used_fams - fams:
    why.append("socket families outside RestrictAddressFamilies: " + " ".join(sorted(used_fams - fams)))
print("; ".join(why) if why else "ok %d system calls, families %s" % (len(used), " ".join(sorted(used_fams))))
PYEOF
	)
	if [[ $verdict == ok* ]] && grep -q "detached from $SIF" "$E2E_TMP/strace_agent.out"; then
		note "$verdict"
		pass install_unit_syscalls
	else
		fail install_unit_syscalls "${verdict:-no verdict}; agent: $(tail -c 200 "$E2E_TMP/strace_agent.out")"
	fi
fi

# --- uninstall ------------------------------------------------------------------
AGENT=$BUILD_AGENT # the cleanup's detach must not need the installed copy
if ! make_in_root uninstall >"$E2E_TMP/uninstall.out" 2>&1; then
	fail install_uninstall "make uninstall failed: $(head -c 300 "$E2E_TMP/uninstall.out")"
else
	left=$(cd "$DEST" && find . ! -type d -printf '%P ')
	if [ -n "$left" ]; then
		fail install_uninstall "left behind: $left"
	elif [ -e "$DOC" ]; then
		fail install_uninstall "left the empty $DOC"
	else
		pass install_uninstall
	fi
fi
