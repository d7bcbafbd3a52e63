#!/usr/bin/env bash
# test_replay.sh - `agent replay` of real captures gives what the live agent
# counted. While `agent run --sample 1` watches the server-side veth, four
# tcpdumps capture the same traffic in the server namespace: Ethernet pcap
# (microseconds), Ethernet pcap (nanoseconds), Linux cooked SLL2 and SLL
# ('-i any', both directions: replay must skip what the host sent); a
# pcapng is made from the nanosecond pcap by a converter below (two
# sections of opposite byte order, two interfaces of different timestamp
# resolution, a block to skip, epb_flags). ks_load drives known load over
# TCP (gets, multi-gets, sets) and UDP (gets) with --exact-counts.
#
# Then, for every capture, `agent replay --json` must give:
# - a document valid against docs/report.schema.json;
# - requests, keys and bytes by op (its totals.ops, and the table it
#   prints on stderr) equal to the live datapath's own counters (ks_ops,
#   read with bpftool from the agent's pins, and the live report's
#   totals.ops), totals.classes the sums of its ops, and the live agent's
#   parse-error totals (but not_memcached: the live program also saw
#   frames before the capture started);
# - the same top-10 keys as the live agent's report of its one interval,
#   each key's count (top[].count) within 1% of the live one and of the
#   exact count ks_load logged; keys within 2% of the 10th are ties.
# The live interval (--interval 12) is long enough to hold the whole load,
# and its class rates x its measured length must equal ks_ops, or the
# comparison is void (FAIL, never PASS). tcpdump must report 0 drops (the
# pcapng: those of the pcap it is made from) and cut no frame short, or
# the capture is not the traffic (FAIL with the reason).
# Also: replay pins nothing and leaves the running agent alone; a cut
# capture gives "FILE: record N at byte B: ..." and exit 1; non-root is
# refused; the text report gives the frames and exact counts, then the
# rates.
#
# Set-up as lib.sh: namespaces ks_cli_PID / ks_srv_PID joined by a veth pair
# (198.18.0.1 / 198.18.0.2), memcached in the server namespace; the EXIT
# trap stops the tcpdumps, the agent and memcached and deletes everything.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init replay

TCPDUMP=$(command -v tcpdump 2>/dev/null)
for t in /usr/sbin/tcpdump /usr/bin/tcpdump; do
	[ -z "$TCPDUMP" ] && [ -x "$t" ] && TCPDUMP=$t
done
if [ -z "$TCPDUMP" ]; then
	fail replay "tcpdump is not installed (make deps: tcpdump)"
	exit 1
fi
LOAD=$E2E_ROOT/${OUT:-build}/ks_load
if [ ! -x "$LOAD" ]; then
	fail replay "$LOAD is missing; run 'make' first"
	exit 1
fi
IV=12 # seconds: the first interval holds the whole load (~3 s at its pace)
CAPS=(eth nano sll2 sll)
declare -A CAP_PID=()

replay_cleanup() {
	local rc=$? c
	for c in "${!CAP_PID[@]}"; do
		ks_stop_pid "${CAP_PID[$c]}" TERM 3
	done
	(exit "$rc")
	e2e_cleanup
}
trap replay_cleanup EXIT

# start_capture NAME ARGS...: tcpdump in the server namespace writing
# $E2E_TMP/NAME.pcap; returns once it says it listens. -Z root: it must not
# drop to the tcpdump user, which cannot write in our 0700 folder.
# --immediate-mode: otherwise libpcap hands packets over in blocks that fill
# or time out (1 s), and the block still filling when tcpdump stops is lost.
# Immediate mode makes libpcap use a ring of fixed-size slots, each as large
# as the snaplen on '-i any' and on a veth with offloads (-s 0: 256 KiB, so
# a 16 MiB ring had 64 slots, and a tcpdump kept off the CPU for a few ms
# dropped). -s 4096 holds every frame of this load (one request in flight
# per connection; a frame cut short fails the check below) and -B 131072
# gives each capture ~31,000 slots: the whole load's frames, both
# directions, even if tcpdump gets no CPU until it ends. -U writes each
# packet to the file as it is taken from the ring, so the file shows how
# far tcpdump has got (the sentinel below).
start_capture() {
	local name=$1 i
	shift
	ks_in_ns_bg "$SNS" "$TCPDUMP" -n -Z root -B 131072 -s 4096 --immediate-mode -U \
		-w "$E2E_TMP/$name.pcap" "$@" </dev/null >/dev/null \
		2>"$E2E_TMP/$name.err"
	CAP_PID[$name]=$KS_BG_PID
	e2e_wait_line "$E2E_TMP/$name.err" "listening on" "$KS_BG_PID" 50
}

# stop_capture NAME: SIGTERM (tcpdump flushes and prints its counts), then
# "captured dropped" into $E2E_TMP/NAME.stats.
stop_capture() {
	local name=$1 pid=${CAP_PID[$1]}
	ks_stop_pid "$pid" TERM 5
	unset "CAP_PID[$name]"
	awk '/packets captured/ {c = $1} /dropped by kernel/ {d = $1}
	     END {print c + 0, (d == "" ? -1 : d)}' "$E2E_TMP/$name.err" \
		>"$E2E_TMP/$name.stats"
}

# make_pcapng IN OUT: a pcapng of the packets of the pcap IN.
make_pcapng() {
	"$PY" - "$@" <<'PYEOF'
import struct, sys

data = open(sys.argv[1], "rb").read()
e = "<" if struct.unpack("<I", data[:4])[0] in (0xa1b2c3d4, 0xa1b23c4d) else ">"
nsec = struct.unpack(e + "I", data[:4])[0] == 0xa1b23c4d
snap, lt = struct.unpack(e + "II", data[16:24])
recs, off = [], 24
while off + 16 <= len(data):
    sec, frac, cap, wire = struct.unpack(e + "IIII", data[off:off + 16])
    recs.append((sec * 10**9 + (frac if nsec else frac * 1000),
                 data[off + 16:off + 16 + cap], wire))
    off += 16 + cap

def pad(b):
    return b + b"\0" * (-len(b) % 4)

def block(o, btype, body):
    body = pad(body)
    n = len(body) + 12
    return struct.pack(o + "II", btype, n) + body + struct.pack(o + "I", n)

def opt(o, code, val):
    return struct.pack(o + "HH", code, len(val)) + pad(val)

def section(o, pkts):
    out = block(o, 0x0A0D0D0A, struct.pack(o + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    # interface 0 in nanoseconds (if_tsresol 9), interface 1 in the
    # default microseconds; a custom block every reader skips
    out += block(o, 1, struct.pack(o + "HHI", lt, 0, snap) +
                 opt(o, 9, b"\x09") + opt(o, 0, b""))
    out += block(o, 1, struct.pack(o + "HHI", lt, 0, snap))
    out += block(o, 0x40000BAD, b"\0\0\0\0keysteer: skip me")
    for i, (ts, frame, wire) in enumerate(pkts):
        ifc = i % 2
        t = ts if ifc == 0 else ts // 1000
        out += block(o, 6, struct.pack(o + "IIIII", ifc, t >> 32,
                                       t & 0xffffffff, len(frame), wire) +
                     pad(frame) + opt(o, 2, struct.pack(o + "I", 1)) +
                     opt(o, 0, b""))
    return out

half = len(recs) // 2
with open(sys.argv[2], "wb") as f:
    f.write(section("<", recs[:half]) + section(">", recs[half:]))
print(len(recs))
PYEOF
}

# The live datapath's op totals summed over CPUs: {"get": [req, keys, bytes]},
# ks_ops with the fast path's gets from ks_pkts added (ks_live_ops.py).
live_ops() {
	"$PY" "$E2E_ROOT/tests/e2e/ks_live_ops.py" "$PIN_ROOT/$SIF"
}

# ---- refusals that need no traffic ----
printf 'not a capture at all\n' >"$E2E_TMP/junk.pcap"
out=$("$AGENT" replay "$E2E_TMP/junk.pcap" 2>&1)
rc=$?
if [ "$rc" = 1 ] && [[ "$out" == *"junk.pcap: file header at byte 0: not a pcap or pcapng file"* ]]; then
	pass replay_not_a_capture
else
	fail replay_not_a_capture "exit $rc, said: $out"
fi
out=$("$AGENT" replay 2>&1)
rc=$?
if [ "$rc" = 2 ] && [[ "$out" == *"replay needs a capture FILE"* ]]; then
	pass replay_no_file
else
	fail replay_no_file "exit $rc, said: $out"
fi

e2e_net_up
# The captures start first: their start-up on a loaded machine is then not
# part of the live agent's first interval, which must hold the whole load.
ok=1
start_capture eth -i "$SIF" -Q in || ok=0
start_capture nano -i "$SIF" -Q in --time-stamp-precision nano || ok=0
start_capture sll2 -i any || ok=0
start_capture sll -i any -y LINUX_SLL || ok=0
if [ "$ok" = 0 ]; then
	fail replay_capture "a tcpdump did not start: $(cat "$E2E_TMP"/*.err | head -c 400)"
	exit 1
fi
if ! e2e_agent_start --sample 1 --interval "$IV"; then
	fail replay_setup "agent run --sample 1 did not attach"
	exit 1
fi
t_attach=$(date +%s.%N)

# Known load: TCP gets, 8-key multi-gets and sets over 2 connections, then
# UDP gets; paced, bounded by count.
COMMON=(--server "$SADDR:$PORT" --keys 400 --zipf 1.1 --json)
if ! ks_in_ns "$CNS" nice -n "$KS_NICE" "$LOAD" "${COMMON[@]}" --proto tcp \
	--mix get=70,mget=20,set=10 --mget-size 8 --value-size 100 --conns 2 \
	--count 6000 --rate 3000 --seed 11 --exact-counts "$E2E_TMP/exact.tcp" \
	>"$E2E_TMP/load.tcp.json" 2>"$E2E_TMP/load.tcp.err" ||
	! ks_in_ns "$CNS" nice -n "$KS_NICE" "$LOAD" "${COMMON[@]}" --proto udp \
		--mix get=100 --conns 2 --count 2000 --rate 2000 --seed 12 \
		--exact-counts "$E2E_TMP/exact.udp" \
		>"$E2E_TMP/load.udp.json" 2>"$E2E_TMP/load.udp.err"; then
	fail replay_load "ks_load failed: $(cat "$E2E_TMP"/load.*.err | head -c 400)"
	exit 1
fi
t_load_end=$(date +%s.%N)
# A sentinel after the load: one UDP datagram from the client to a port
# nothing serves (not memcached's: the live agent and the replay both see
# it and count it alike). tcpdump takes packets from its ring in order,
# so once a capture's file holds the sentinel it holds all the load
# before it; stopped earlier, tcpdump leaves what is still in its ring
# unwritten and uncounted (no drop). 30 s: a guard for a loaded machine.
SENTINEL=ks_replay_sentinel_$$
ks_in_ns "$CNS" bash -c "printf %s $SENTINEL >/dev/udp/$SADDR/9"
for c in "${CAPS[@]}"; do
	for ((i = 0; i < 300; i++)); do
		grep -qaF "$SENTINEL" "$E2E_TMP/$c.pcap" && break
		kill -0 "${CAP_PID[$c]}" 2>/dev/null || break
		sleep 0.1
	done
	grep -qaF "$SENTINEL" "$E2E_TMP/$c.pcap" ||
		note "capture $c has not written the sentinel: it may lack the load's last frames"
done
for c in "${CAPS[@]}"; do
	stop_capture "$c"
done
live_ops >"$E2E_TMP/live_ops.json"

# The live agent's first interval: its report appears once it ends.
live=$E2E_TMP/live.json
for ((i = 0; i < 4 * (IV + 5); i++)); do
	e2e_agent report --iface "$SIF" --json --top 40 >"$live" 2>/dev/null &&
		"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["seq"] == 0 and d["sampled_keys"] > 0))' "$live" 2>/dev/null &&
		break
	rm -f "$live"
	sleep 0.25
done
if [ ! -s "$live" ]; then
	fail replay_live "the live agent published no report of its first interval"
	exit 1
fi
# Whether the first interval held the whole load is checked exactly below
# (its requests against ks_ops); a loaded machine stretches both the load
# and the interval, so the clock only explains a failure.
note "the load ended $(awk -v a="$t_attach" -v b="$t_load_end" 'BEGIN{printf "%.1f", b - a}') s after the attach; the first interval lasted $("$PY" -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["interval_measured_ms"] / 1000))' "$live") s"

# ---- the captures ----
n=$(make_pcapng "$E2E_TMP/nano.pcap" "$E2E_TMP/ng.pcapng")
note "pcapng made from nano.pcap: $n frames, 2 sections, 2 interfaces"
ls -A "$BPFFS" >"$E2E_TMP/bpffs.before"
ls -A "$PIN_ROOT/$SIF" >"$E2E_TMP/pins.before"
for c in eth nano sll2 sll ng; do
	f=$E2E_TMP/$c.pcap
	src=$c
	# the pcapng is nano.pcap's frames: it lacks whatever that one dropped
	[ "$c" = ng ] && f=$E2E_TMP/ng.pcapng && src=nano
	read -r captured dropped <"$E2E_TMP/$src.stats"
	if [ "$dropped" != 0 ]; then
		fail "replay_$c" "tcpdump dropped '$dropped' of $captured packets of $src.pcap: the capture is not the traffic"
		continue
	fi
	if ! "$AGENT" replay --json --top 20 "$f" >"$E2E_TMP/rep.$c.json" \
		2>"$E2E_TMP/rep.$c.err"; then
		fail "replay_$c" "agent replay failed: $(head -c 400 "$E2E_TMP/rep.$c.err")"
		continue
	fi
	grep '^frames' "$E2E_TMP/rep.$c.err" | sed "s/^/  $c: /"
	if ! "$PY" "$E2E_DIR/ks_json_schema.py" "$E2E_ROOT/docs/report.schema.json" \
		"$E2E_TMP/rep.$c.json" >"$E2E_TMP/rep.$c.schema" 2>&1; then
		fail "replay_$c" "not valid against docs/report.schema.json: $(head -c 400 "$E2E_TMP/rep.$c.schema")"
		continue
	fi
	"$PY" - "$c" "$live" "$E2E_TMP/live_ops.json" "$E2E_TMP/rep.$c.json" \
		"$E2E_TMP/rep.$c.err" "$E2E_TMP/exact.tcp" \
		"$E2E_TMP/exact.udp" <<'PYEOF'
import json, sys

name, live_f, ops_f, rep_f, err_f = sys.argv[1:6]
exact_files = sys.argv[6:]
live = json.load(open(live_f))
live_ops = json.load(open(ops_f))
rep = json.load(open(rep_f))
fails = []

# requests by op, as the replay prints them under its report
rep_ops, in_table = {}, False
for line in open(err_f):
    w = line.split()
    if line.startswith("requests by op"):
        in_table = True
    elif in_table and len(w) == 4 and w[0] != "op":
        rep_ops[w[0]] = [int(x) for x in w[1:]]
    elif in_table and not line.startswith("  "):
        in_table = False
cut = [l.split()[0] for l in open(err_f) if "cut by the capture's snaplen" in l]
if cut:
    fails.append("%s frames cut by tcpdump's -s: raise it in start_capture" % cut[0])
if rep_ops != live_ops:
    fails.append("requests/keys/bytes by op: replay %s, live %s" % (rep_ops, live_ops))

# the same in the JSON's exact totals, the replay's and the live report's
def totals_ops(doc):
    return {op: [v["requests"], v["keys"], v["bytes"]]
            for op, v in doc["totals"]["ops"].items() if any(v.values())}
for who, doc in (("replay", rep), ("live", live)):
    if totals_ops(doc) != live_ops:
        fails.append("%s totals.ops %s, ks_ops %s" % (who, totals_ops(doc), live_ops))
cls = {}
for op, v in rep["totals"]["ops"].items():
    c = "read" if op in ("get", "gets", "gat", "gats", "mg") else \
        "other" if op in ("me", "mn", "other") else "write"
    cls[c] = [a + b for a, b in zip(cls.get(c, [0, 0, 0]),
                                    (v["requests"], v["keys"], v["bytes"]))]
for c, v in rep["totals"]["classes"].items():
    if [v["requests"], v["keys"], v["bytes"]] != cls.get(c, [0, 0, 0]):
        fails.append("totals.classes.%s %s, its ops add up to %s" % (c, v, cls.get(c)))
for reason, n in rep["totals"]["errors"].items():
    if n != rep["errors"][reason]["total"]:
        fails.append("totals.errors.%s %d, errors.%s.total %d"
                     % (reason, n, reason, rep["errors"][reason]["total"]))

# the live interval must hold all of it, or the key comparison is void;
# its rates are over its measured length, which a loaded machine stretches
# past --interval
def class_reqs(doc):
    secs = doc["interval_measured_ms"] / 1000
    return sum(float(c["requests_per_s"]) for c in doc["classes"].values()) * secs
live_total = sum(v[0] for v in live_ops.values())
if abs(class_reqs(live) - live_total) > max(2, 0.005 * live_total):
    fails.append("the live interval (%.3f s) holds %.0f requests, ks_ops %d: not the whole load"
                 % (live["interval_measured_ms"] / 1000, class_reqs(live), live_total))

for reason, e in rep["errors"].items():
    if reason != "not_memcached" and e["total"] != live["errors"][reason]["total"]:
        fails.append("%s errors: replay %d, live %d" % (reason, e["total"],
                                                       live["errors"][reason]["total"]))

exact = {}
for fn in exact_files:
    for line in open(fn):
        k, g, s = line.split("\t")
        exact[k] = exact.get(k, 0) + int(g) + int(s)
ranked = sorted(exact.values(), reverse=True)
tenth = ranked[9]

def counts(doc):
    return {e["key"]: e["count"] for e in doc["top"]}

# a key's count is its rate over the measured interval
span = rep["interval_measured_ms"] / 1000
for e in rep["top"]:
    r = (float(e["reads_per_s"]) + float(e["writes_per_s"])) * span
    if abs(r - e["count"]) > max(1, 0.001 * e["count"]):
        fails.append("key %s: count %d, rate x span %.1f" % (e["key"], e["count"], r))
# share is of all requests (top_share_of): the replay's interval is the
# capture, so its totals are the interval's requests
all_req = sum(v["requests"] for v in rep["totals"]["classes"].values())
if rep["top_share_of"] != "requests":
    fails.append("top_share_of %r" % rep["top_share_of"])
for e in rep["top"]:
    if all_req and abs(float(e["share"]) - e["count"] / all_req) > 1e-6:
        fails.append("key %s: share %s, count / requests %.6f"
                     % (e["key"], e["share"], e["count"] / all_req))
rc, lc = counts(rep), counts(live)
rtop = sorted(rc, key=lambda k: -rc[k])[:10]
ltop = sorted(lc, key=lambda k: -lc[k])[:10]
for who, top in (("replay", rtop), ("live", ltop)):
    wrong = [k for k in top if exact.get(k, 0) < 0.98 * tenth]
    missing = [k for k, v in exact.items() if v > 1.02 * tenth and k not in top]
    if wrong or missing:
        fails.append("%s top 10: %s not in the true top 10, %s missing"
                     % (who, wrong, missing))
for k in rtop:
    if k not in lc or abs(rc[k] - lc[k]) > 0.01 * lc[k]:
        fails.append("key %s: replay %.1f, live %s" % (k, rc[k], lc.get(k)))
    if abs(rc[k] - exact.get(k, 0)) > 0.01 * exact.get(k, 1):
        fails.append("key %s: replay %.1f, sent %d" % (k, rc[k], exact.get(k, 0)))
print("  %s: %d requests in %d ops, span %.3f s; top key %s %.0f (live %.0f, sent %d)"
      % (name, sum(v[0] for v in rep_ops.values()), len(rep_ops), span, rtop[0],
         rc[rtop[0]], lc.get(rtop[0], 0), exact.get(rtop[0], 0)))
print(("PASS replay_%s" % name) if not fails else
      ("FAIL replay_%s: %s" % (name, "; ".join(fails[:4]))))
PYEOF
done

# Replay touched neither bpffs nor the running agent.
ls -A "$BPFFS" >"$E2E_TMP/bpffs.after"
ls -A "$PIN_ROOT/$SIF" >"$E2E_TMP/pins.after"
if cmp -s "$E2E_TMP/bpffs.before" "$E2E_TMP/bpffs.after" &&
	cmp -s "$E2E_TMP/pins.before" "$E2E_TMP/pins.after" &&
	e2e_agent report --iface "$SIF" --json >/dev/null 2>&1 &&
	kill -0 "$E2E_AGENT_PID" 2>/dev/null; then
	pass replay_pins_nothing
else
	fail replay_pins_nothing "bpffs or the agent's pins changed, or the agent stopped"
fi

# The text report: the capture and the exact counts first, the rates after.
"$AGENT" replay "$E2E_TMP/sll2.pcap" >"$E2E_TMP/rep.text" 2>"$E2E_TMP/rep.text.err"
rc=$?
line_of() { grep -n -m1 -e "$1" "$E2E_TMP/rep.text" | cut -d: -f1; }
if [ "$rc" = 0 ] && grep -q '^top .* keys' "$E2E_TMP/rep.text" &&
	grep -q '^capture .*sll2.pcap: pcap, microsecond timestamps, frames Linux cooked SLL2' "$E2E_TMP/rep.text" &&
	grep -q '^frames .* skipped; [0-9]* sent by the capturing host' "$E2E_TMP/rep.text" &&
	grep -q '^  get ' "$E2E_TMP/rep.text" && grep -q '^resyncs [0-9]' "$E2E_TMP/rep.text" &&
	[ "$(line_of '^resyncs ')" -lt "$(line_of '^class .*requests/s')" ] &&
	[ "$(line_of '^  get ')" -lt "$(line_of '^top .* keys')" ]; then
	pass replay_text
else
	fail replay_text "exit $rc; $(tail -n 8 "$E2E_TMP/rep.text" | tr '\n' '|') $(head -c 300 "$E2E_TMP/rep.text.err")"
fi

# A capture cut mid-record: one clear error, exit 1, no report.
size=$(stat -c %s "$E2E_TMP/eth.pcap")
head -c $((size - 7)) "$E2E_TMP/eth.pcap" >"$E2E_TMP/cut.pcap"
out=$("$AGENT" replay "$E2E_TMP/cut.pcap" 2>&1)
rc=$?
if [ "$rc" = 1 ] && [[ "$out" =~ cut\.pcap:\ record\ [0-9]+\ at\ byte\ [0-9]+:\ .*runs\ past\ the\ end ]] &&
	[ "$(printf '%s\n' "$out" | wc -l)" = 1 ]; then
	pass replay_cut_capture
else
	fail replay_cut_capture "exit $rc, said: $(printf '%s' "$out" | head -c 300)"
fi

# Not root: refused before anything is loaded.
chmod 755 "$E2E_TMP"
chmod 644 "$E2E_TMP/eth.pcap"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$AGENT" replay "$E2E_TMP/eth.pcap" 2>&1)
rc=$?
chmod 700 "$E2E_TMP"
if [ "$rc" = 1 ] && [[ "$out" == *"needs root"* ]]; then
	pass replay_not_root
else
	fail replay_not_root "exit $rc, said: $out"
fi

e2e_agent_stop INT
e2e_expect_clean replay_agent_detached
