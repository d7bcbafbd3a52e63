#!/usr/bin/python3
"""ks_thread_caps.py - every thread of a running agent, from
/proc/PID/task/*/status, against docs/operations.md ("The agent's
threads"): its capabilities and whether it blocks the signals the main
thread handles (test_privileges_threads.sh).

  ks_thread_caps.py PID MODE WANT_NAME...

MODE fix: prints one line per thread, then "ok N threads" or one
"bad caps|signals|listed: ..." line per breach: the main thread (tid PID)
must have exactly CAP_BPF|CAP_NET_ADMIN in CapEff, CapPrm and CapBnd and
block none of SIGINT, SIGTERM, SIGHUP;
every other thread no more than its table row (ks-housekeep CAP_BPF,
every other worker nothing) in CapEff and CapPrm, a CapBnd within the
main thread's, CapInh 0, NoNewPrivs 1, and the three signals blocked;
the sample log's drains at nice -10 ("bad nice: ..."). A
thread the table does not name (a library's, named after the thread that
started it) is held to its starter's row by that name. Every WANT_NAME
must be among the threads' names.

MODE control: prints the threads whose CapPrm holds a capability the main
thread's does not, then "kept N" (N of them).
"""
import glob
import sys

CAP_NET_ADMIN = 12
CAP_BPF = 39
MAIN = 1 << CAP_BPF | 1 << CAP_NET_ADMIN
# what each worker keeps (docs/operations.md); any other name: nothing
KEEP = {"ks-housekeep": 1 << CAP_BPF}
SIGHUP, SIGINT, SIGTERM = 1, 2, 15
DRAIN_NICE = -10  # KS_SLOG_NICE: it takes CAP_SYS_NICE, before the drop
HANDLED = 1 << (SIGHUP - 1) | 1 << (SIGINT - 1) | 1 << (SIGTERM - 1)


def threads(pid):
    out = []
    for path in sorted(glob.glob("/proc/%s/task/*/status" % pid)):
        f = {}
        try:
            with open(path) as fh:
                for line in fh:
                    k, _, v = line.partition(":")
                    f[k] = v.strip()
        except OSError:
            continue  # a thread that ended meanwhile
        try:
            with open(path[:-len("status")] + "stat") as fh:
                # after the ")" that ends comm: state is field 3, nice 19
                nice = int(fh.read().rpartition(")")[2].split()[16])
        except (OSError, IndexError, ValueError):
            nice = None
        out.append({
            "nice": nice,
            "tid": int(f["Pid"]),
            "name": f["Name"],
            "eff": int(f["CapEff"], 16),
            "prm": int(f["CapPrm"], 16),
            "bnd": int(f["CapBnd"], 16),
            "inh": int(f["CapInh"], 16),
            "nnp": int(f.get("NoNewPrivs", "-1")),
            "blk": int(f["SigBlk"], 16),
        })
    return out


def main():
    pid, mode, want = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    ts = threads(pid)
    for t in ts:
        print("  %(tid)d %(name)s CapEff %(eff)016x CapPrm %(prm)016x "
              "CapBnd %(bnd)016x CapInh %(inh)016x NoNewPrivs %(nnp)d "
              "SigBlk %(blk)016x nice %(nice)s" % t)
    main_t = [t for t in ts if t["tid"] == pid]
    if not main_t:
        print("bad listed: no main thread (the agent is gone)")
        return
    m = main_t[0]
    if mode == "control":
        kept = [t for t in ts if t["prm"] & ~m["prm"]]
        for t in kept:
            print("  kept: %d %s CapPrm %016x" % (t["tid"], t["name"], t["prm"]))
        print("kept %d" % len(kept))
        return
    bad = []
    if not (m["eff"] == m["prm"] == m["bnd"] == MAIN):
        bad.append("caps: main thread CapEff %x CapPrm %x CapBnd %x, want %x"
                   % (m["eff"], m["prm"], m["bnd"], MAIN))
    if m["blk"] & HANDLED:
        bad.append("signals: main thread blocks the signals it handles (SigBlk %x)"
                   % m["blk"])
    for t in ts:
        if t is m:
            continue
        who = "%d %s" % (t["tid"], t["name"])
        keep = KEEP.get(t["name"], 0)
        if t["eff"] != keep or t["prm"] != keep:
            bad.append("caps: %s: CapEff %x CapPrm %x, want %x"
                       % (who, t["eff"], t["prm"], keep))
        if t["bnd"] & ~m["bnd"]:
            bad.append("caps: %s: CapBnd %x beyond the main thread's %x"
                       % (who, t["bnd"], m["bnd"]))
        if t["inh"] or t["nnp"] != 1:
            bad.append("caps: %s: CapInh %x NoNewPrivs %d" % (who, t["inh"], t["nnp"]))
        if t["blk"] & HANDLED != HANDLED:
            bad.append("signals: %s: SigBlk %x leaves SIGINT, SIGTERM or SIGHUP open"
                       % (who, t["blk"]))
        if t["name"].startswith("ks-drain-") and t["nice"] != DRAIN_NICE:
            bad.append("nice: %s: nice %s, want %d (set before its drop)"
                       % (who, t["nice"], DRAIN_NICE))
    names = {t["name"] for t in ts}
    for n in want:
        if n not in names:
            bad.append("listed: no %s thread among %s" % (n, sorted(names)))
    for b in bad:
        print("bad " + b)
    if not bad:
        print("ok %d threads" % len(ts))


if __name__ == "__main__":
    main()
