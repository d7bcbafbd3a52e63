#!/usr/bin/python3
"""ks_fleet_faults.py - small readers for test_fleet_faults.sh.

    ks_fleet_faults.py hosts          etcdctl get -w json (stdin) of hosts/:
                                      one "SELF MOD_REVISION LEASE" a line
    ks_fleet_faults.py hot            etcdctl get -w json (stdin) of hot/:
                                      the owner of each entry that parses
    ks_fleet_faults.py counted        etcdctl get -w json (stdin) of the
                                      load documents: the owner of each key
                                      listed as only counted
    ks_fleet_faults.py at REV DIGEST  etcdctl get --rev -w json (stdin) of
                                      the ring: exit 0 if the key is at
                                      mod_revision REV with that digest
    ks_fleet_faults.py bad-digest     a ring document (stdin) with its
                                      digest replaced by 0123456789abcdef
    ks_fleet_faults.py report FILE    agent report --json: "SEQ INTERVAL_MS
                                      OPS VERSION DIGEST RELOAD_ERRORS"
                                      (OPS: every request the datapath
                                      counted, all classes)
    ks_fleet_faults.py span FILE FROM TO [VERSION]
                                      an agent's -v log, its bytes FROM to
                                      TO (TO "-": to the end): "INTERVALS
                                      REQS VERSIONS FIRST", INTERVALS its
                                      "#SEQ N req/s" lines (one an
                                      interval), REQS the sum of their N,
                                      VERSIONS the ring versions of its
                                      "#SEQ ring vV:" lines (comma, "-"
                                      if none), FIRST how many intervals
                                      came before the first ring line at
                                      VERSION (-1: none)
    ks_fleet_faults.py waits FILE FROM TO
                                      an agent's -v log: how long its
                                      loop waited for etcd calls in its
                                      bytes FROM to TO, "CALLS MS" (the
                                      last "the loop waited MS ms in
                                      CALLS etcd calls" of its etcd lines
                                      before TO less the last before
                                      FROM; the figures count from the
                                      agent's start); "- -" when no line
                                      came between
    ks_fleet_faults.py states PID...  samples the state of each PID's main
                                      thread (/proc/PID/task/PID/stat)
                                      every 10 ms until SIGTERM, then one
                                      "PID SAMPLES D" a line: how many
                                      samples, how many of them in D
                                      (uninterruptible: the kernel's
                                      locks, a grace period)
    ks_fleet_faults.py load FILE      ks_load --json: "FAILED OPS"
    ks_fleet_faults.py fleet FILE     agent fleet --json: "VALID_HOSTS
                                      REV,REV,... WITHOUT,... HOT_REFUSED"
                                      (HOT_REFUSED "none" if not there)

Runs with Debian's /usr/bin/python3.
"""
import base64
import json
import re
import signal
import sys
import time


def kvs():
    try:
        return json.load(sys.stdin).get("kvs", [])
    except ValueError:
        return []


def text(b64):
    return base64.b64decode(b64 or "").decode("utf-8", "replace")


def cmd_hosts(_):
    for kv in kvs():
        print(text(kv["key"]).rsplit("/", 1)[1], kv["mod_revision"],
              kv.get("lease", 0))


def cmd_hot(_):
    for kv in kvs():
        try:
            doc = json.loads(text(kv.get("value")))
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("owner"), str):
            print(doc["owner"])


def cmd_counted(_):
    """The owner of each key a load document lists as only counted (an
    item with its entry: no hot/ entry, docs/fleet.md "hot/HASH")."""
    for kv in kvs():
        try:
            doc = json.loads(text(kv.get("value")))
        except ValueError:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("hot"), list):
            continue
        for item in doc["hot"]:
            if isinstance(item, dict) and "entry" in item:
                print(doc.get("self"))


def cmd_at(args):
    rows = kvs()
    if not rows or str(rows[0]["mod_revision"]) != args[0]:
        return 1
    try:
        return 0 if json.loads(text(rows[0]["value"]))["digest"] == args[1] else 1
    except (ValueError, KeyError, TypeError):
        return 1


def cmd_bad_digest(_):
    doc = json.load(sys.stdin)
    doc["digest"] = "0123456789abcdef"
    print(json.dumps(doc))


def cmd_report(args):
    with open(args[0]) as f:
        r = json.load(f)
    ring = r.get("ring") or {}
    print(r["seq"], int(r["interval_measured_ms"]),
          sum(v["requests"] for v in r["totals"]["classes"].values()),
          ring.get("version", "-"), ring.get("digest", "-"),
          ring.get("reload_errors", "-"))


def cmd_span(args):
    with open(args[0], "rb") as f:
        f.seek(int(args[1]))
        data = f.read() if args[2] == "-" else f.read(int(args[2]) - int(args[1]))
    want = args[3] if len(args) > 3 else None
    n, reqs, versions, first = 0, 0.0, [], -1
    for line in data.decode("utf-8", "replace").split("\n"):
        m = re.match(r"keysteer: #\d+ ([0-9.]+) req/s ", line)
        if m:
            n += 1
            reqs += float(m.group(1))
            continue
        m = re.match(r"keysteer: #\d+ ring v(\d+): ", line)
        if m:
            if m.group(1) not in versions:
                versions.append(m.group(1))
            if want is not None and first < 0 and m.group(1) == want:
                first = n
    print(n, "%.1f" % reqs, ",".join(versions) or "-", first)


WAITED = re.compile(rb"^keysteer: #\d+ etcd: .*; the loop waited ([0-9.]+) ms "
                    rb"in (\d+) etcd calls$", re.M)


def cmd_waits(args):
    with open(args[0], "rb") as f:
        data = f.read(int(args[2]))
    start = int(args[1])
    before, after = (0, 0.0), None
    for m in WAITED.finditer(data):
        fig = (int(m.group(2)), float(m.group(1)))
        if m.end() <= start:
            before = fig
        else:
            after = fig
    if after is None:
        print("- -")
    else:
        print(after[0] - before[0], "%.1f" % (after[1] - before[1]))


def cmd_states(args):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    counts = {pid: [0, 0] for pid in args}
    while not stop:
        for pid in args:
            try:
                with open("/proc/%s/task/%s/stat" % (pid, pid)) as f:
                    st = f.read()
            except OSError:
                continue
            counts[pid][0] += 1
            if st[st.rindex(")") + 2] == "D":
                counts[pid][1] += 1
        time.sleep(0.01)
    for pid in args:
        print(pid, *counts[pid])


def cmd_load(args):
    with open(args[0]) as f:
        d = json.load(f)
    print(sum(o["errors"] for o in d["ops"]), sum(o["ops"] for o in d["ops"]))


def cmd_fleet(args):
    with open(args[0]) as f:
        d = json.load(f)
    hosts = [h for h in d["hosts"] if h["valid"]]
    print(len(hosts),
          ",".join(str(h["ring_revision"]) for h in hosts) or "-",
          ",".join(d["shards_without_agent"]) or "-",
          d["hot_refused"]["count"])


def main():
    cmds = {"hosts": cmd_hosts, "hot": cmd_hot, "counted": cmd_counted,
            "at": cmd_at,
            "bad-digest": cmd_bad_digest, "report": cmd_report,
            "span": cmd_span, "waits": cmd_waits, "states": cmd_states, "load": cmd_load,
            "fleet": cmd_fleet}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    return cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
