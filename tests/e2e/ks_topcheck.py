#!/usr/bin/python3
"""ks_topcheck.py - read the agent's reports during a load and judge them.

    ks_topcheck.py poll --agent BIN --ns NS --iface IF --out FILE --stop FILE
    ks_topcheck.py compare --load LOAD.json --polls FILE --name NAME --tol T
                           [--min-intervals M] [--per-interval]

poll: runs `agent report --iface IF --json --top 40` in network namespace NS
four times a second until the file --stop appears (or --max-seconds pass),
and appends each answer, with the wall-clock times before and after it, to
--out as one JSON line.

compare: keeps the reports that describe an interval lying wholly inside the
paced phase of the load (see ks_load.py), one per interval, and checks them
against the exact counts the load sent. When each interval ended is known
to about a poll period from when its report first appeared; an interval is
left out if the client was running late at either of its edges. Prints one PASS/FAIL line per check;
detail lines start with two spaces so the test runner does not count them.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

TOP = 10


def cmd_poll(args):
    cmd = ["nsenter", "--net=/run/netns/" + args.ns, "--", args.agent,
           "report", "--iface", args.iface, "--json", "--top", "40"]
    deadline = time.time() + args.max_seconds
    with open(args.out, "a") as out:
        while not os.path.exists(args.stop) and time.time() < deadline:
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            t1 = time.time()
            rec = {"t0": t0, "t1": t1, "rc": p.returncode}
            try:
                rec["doc"] = json.loads(p.stdout)
            except ValueError:
                rec["stdout"] = p.stdout[-500:]
                rec["stderr"] = p.stderr[-500:]
            out.write(json.dumps(rec) + "\n")
            out.flush()
            time.sleep(max(0.0, 0.25 - (time.time() - t0)))


def interval_id(doc):
    """What tells one interval's report from the next."""
    for field in ("seq", "interval_seq", "updated_ns", "updated"):
        if field in doc:
            return (field, doc[field])
    # No sequence number in the document: an interval's report is the same
    # bytes every time it is read, and the next interval's differs.
    return json.dumps([doc.get("top"), doc.get("classes")], sort_keys=True)


def interval_edges(polls, margin):
    """[(doc, lo, hi)]: each report in the order published, with the span
    of time in which the interval it describes ended.

    The agent publishes an interval's report within `margin` of its end. If
    the poll that started at t0 still read the previous report and the next
    poll, which ended at t1, read this one, the interval ended between
    t0 - margin and t1: a span of about one poll period (0.25 s).
    """
    edges, prev = [], None
    for rec in polls:
        doc = rec.get("doc")
        if rec["rc"] != 0 or not doc:
            continue
        ident = interval_id(doc)
        if prev is not None and ident != prev[0]:
            edges.append((doc, prev[1]["t0"] - margin, rec["t1"]))
        prev = (ident, rec)
    return edges


def usable_reports(load, polls, margin, max_late):
    """Reports of intervals that lie wholly inside the paced phase, one
    each, and how many more were left out because the client ran late at
    one of their edges.

    An interval runs from the previous report's edge to its own. Its counts
    equal a frame's when neither edge fell where the client was behind its
    schedule by more than max_late: requests due before an edge but sent
    after it would land in the wrong interval. Lateness inside an interval,
    caught up before its end, changes nothing.
    """
    late = [(a, b) for a, b, lag in load.get("late", []) if lag > max_late]
    edges = interval_edges(polls, margin)
    kept, disturbed = [], 0
    for (_, lo0, hi0), (doc, lo1, hi1) in zip(edges, edges[1:]):
        span = float(doc.get("interval_s", 1.0))
        if hi0 - lo0 > 0.8 * span or hi1 - lo1 > 0.8 * span:
            continue  # the poller was held up: edges not known well enough
        if not 0.5 * span < (lo1 + hi1 - lo0 - hi0) / 2 < 1.5 * span:
            continue  # an interval's report was missed in between
        if lo0 < load["t_start"] or hi1 > load["t_end"]:
            continue  # overlaps the start or the end of the load
        if any(a < hi and b > lo for a, b in late
               for lo, hi in ((lo0, hi0), (lo1, hi1))):
            disturbed += 1
            continue
        kept.append(doc)
    return kept, disturbed


def entry_rates(doc):
    """key -> (reads/s, writes/s) from one report."""
    return {e["key"]: (float(e["reads_per_s"]), float(e["writes_per_s"]))
            for e in doc.get("top", []) if "key" in e}


def report(ok, name, why):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))
    return ok


def rel(got, want):
    return (got - want) / want if want else math.inf


def cmd_compare(args):
    with open(args.load) as fh:
        load = json.load(fh)
    with open(args.polls) as fh:
        polls = [json.loads(line) for line in fh if line.strip()]
    name, tol = args.name, args.tol
    period = load["period_s"]
    reads, writes = load["reads"], load["writes"]
    true_rate = {k: reads.get(k, 0) / period for k in set(reads) | set(writes)}
    true_wrate = {k: writes.get(k, 0) / period for k in true_rate}
    truth = load["ranked"][:TOP]

    print("  load: %d requests/s, %d keys/s, %d distinct keys, max pacing "
          "lag %.1f ms, overrun %.4f"
          % (load["requests_per_period"] / period,
             load["keys_per_period"] / period,
             load["distinct_keys_per_period"], 1000 * load["max_lag_s"],
             load["overrun"]))

    answered = [r for r in polls if r["rc"] == 0 and r.get("doc")]
    if not answered:
        last = polls[-1] if polls else {}
        report(False, name + "_intervals", "no report could be read (%s)"
               % (last.get("stderr") or "no poll ran").strip())
        return 1
    docs, disturbed = usable_reports(load, polls, args.margin, args.max_late)
    print("  %d reports read, %d intervals inside the paced phase, %d more "
          "left out: the client ran > %.0f ms late in them"
          % (len(answered), len(docs), disturbed, 1000 * args.max_late))
    # Too few clean intervals is the test's (or the machine's) fault, but it
    # is still no evidence that the agent works: FAIL, never PASS.
    if not report(len(docs) >= args.min_intervals, name + "_intervals",
                  "only %d undisturbed interval(s) wholly inside the load "
                  "were reported, need %d (%d left out for client lateness: "
                  "is the machine busy?)"
                  % (len(docs), args.min_intervals, disturbed)):
        return 1

    per = [entry_rates(d) for d in docs]
    mean = {}
    for rates in per:
        for k, (r, w) in rates.items():
            mr, mw = mean.get(k, (0.0, 0.0))
            mean[k] = (mr + r / len(per), mw + w / len(per))
    # A key missing from an interval's list counts 0 there, as it should.
    agent_top = sorted(mean, key=lambda k: -(mean[k][0] + mean[k][1]))[:TOP]

    print("  %-4s %-10s %12s %12s %8s %10s" % ("rank", "key", "true r/s",
                                             "agent r/s", "error", "agent w/s"))
    for i, k in enumerate(truth):
        r, w = mean.get(k, (0.0, 0.0))
        print("  %-4d %-10s %12.1f %12.1f %+7.2f%% %10.1f"
              % (i + 1, k, true_rate[k], r, 100 * rel(r, true_rate[k]), w))

    ok = True
    missing = [k for k in truth if k not in agent_top]
    extra = [k for k in agent_top if k not in truth]
    ok &= report(not missing, name + "_top10",
                 "true top-10 keys %s missing, %s reported instead"
                 % (missing, extra))
    if args.per_interval:
        bad = []
        for n, rates in enumerate(per):
            got = sorted(rates, key=lambda k: -sum(rates[k]))[:TOP]
            if set(got) != set(truth):
                bad.append("interval %d: missing %s" % (
                    n, sorted(set(truth) - set(got))))
        ok &= report(not bad, name + "_top10_every_interval", "; ".join(bad))

    worst = max(truth, key=lambda k: abs(rel(mean.get(k, (0, 0))[0],
                                               true_rate[k])))
    err = rel(mean.get(worst, (0, 0))[0], true_rate[worst])
    ok &= report(abs(err) <= tol, name + "_reads",
                 "%s reads/s off by %+.2f%% (allowed %.0f%%), mean of %d "
                 "intervals" % (worst, 100 * err, 100 * tol, len(per)))
    print("  worst reads/s error over the top 10: %+.2f%% (%s)"
          % (100 * err, worst))

    if args.per_interval:
        bad = []
        for n, rates in enumerate(per):
            for k in truth:
                e = rel(rates.get(k, (0, 0))[0], true_rate[k])
                if abs(e) > tol:
                    bad.append("interval %d %s %+.2f%%" % (n, k, 100 * e))
        ok &= report(not bad, name + "_reads_every_interval",
                     ", ".join(bad[:5]))

    # The agent's own +/- bound, for information: how often the true rate of
    # an interval (reads + writes) lay within it.
    inside = total = 0
    for d in docs:
        for e in d.get("top", []):
            k = e.get("key")
            if k in truth:
                want_rw = true_rate[k] + true_wrate[k]
                got_rw = float(e["reads_per_s"]) + float(e["writes_per_s"])
                total += 1
                inside += abs(got_rw - want_rw) <= float(e["error_bound"])
    if total:
        print("  the agent's error bound held in %d of %d interval estimates "
              "of the top 10 (%.0f%%)" % (inside, total, 100.0 * inside / total))

    if args.check_writes:
        want = sum(true_wrate[k] for k in truth)
        got = sum(mean.get(k, (0, 0))[1] for k in truth)
        ok &= report(abs(rel(got, want)) <= tol, name + "_writes",
                     "writes/s of the top 10 together %.1f, sent %.1f"
                     % (got, want))

    # Class counters count every request, sampled or not: exact at any N.
    classes = {}
    for d in docs:
        for cls in ("read", "write"):
            c = d.get("classes", {}).get(cls, {})
            for f in ("requests_per_s", "keys_per_s"):
                classes[(cls, f)] = classes.get((cls, f), 0.0) + \
                    float(c.get(f, 0.0)) / len(docs)
    want = {
        ("read", "requests_per_s"): load["read_requests_per_period"] / period,
        ("read", "keys_per_s"): load["read_keys_per_period"] / period,
        ("write", "requests_per_s"): load["write_requests_per_period"] / period,
        ("write", "keys_per_s"): load["write_keys_per_period"] / period,
    }
    bad = []
    for key, w in want.items():
        print("  class %-5s %-15s true %9.1f agent %9.1f (%+.2f%%)"
              % (key[0], key[1], w, classes[key], 100 * rel(classes[key], w)))
        if abs(rel(classes[key], w)) > args.class_tol:
            bad.append("%s %s %.1f, sent %.1f" % (key[0], key[1],
                                                  classes[key], w))
    ok &= report(not bad, name + "_classes", "; ".join(bad))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("poll")
    p.add_argument("--agent", required=True)
    p.add_argument("--ns", required=True)
    p.add_argument("--iface", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stop", required=True)
    p.add_argument("--max-seconds", type=float, default=120)
    c = sub.add_parser("compare")
    c.add_argument("--load", required=True)
    c.add_argument("--polls", required=True)
    c.add_argument("--name", required=True)
    c.add_argument("--tol", type=float, required=True)
    c.add_argument("--class-tol", type=float, default=0.02)
    c.add_argument("--min-intervals", type=int, default=3)
    c.add_argument("--margin", type=float, default=0.1)
    c.add_argument("--max-late", type=float, default=0.005,
                   help="client lateness (s) that disqualifies an interval")
    c.add_argument("--per-interval", action="store_true")
    c.add_argument("--check-writes", action="store_true")
    args = ap.parse_args()
    return cmd_poll(args) if args.cmd == "poll" else cmd_compare(args)


if __name__ == "__main__":
    sys.exit(main())
