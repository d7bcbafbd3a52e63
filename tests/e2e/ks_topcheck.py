#!/usr/bin/python3
"""ks_topcheck.py - read the agent's reports during a load and judge them.

    ks_topcheck.py poll --agent BIN --ns NS --iface IF --out FILE --stop FILE
    ks_topcheck.py wait --load LOAD.json --polls FILE [--max-seconds S]
    ks_topcheck.py compare --load LOAD.json --polls FILE --name NAME --tol T
                           [--min-intervals M] [--per-interval]
                           [--check-writes] [--class-tol T]

poll: runs `agent report --iface IF --json --top 40` in network namespace NS
four times a second until the file --stop appears (or --max-seconds pass),
and appends each answer, with the wall-clock times before and after it, to
--out as one JSON line.

compare: one report per interval, by its number (seq), checked against
what the client sent in that very interval, which ks_load.py run
--seq-map wrote down exactly (a request in flight across a flip makes a
range), so neither the client's pacing nor when a report was read
matters. Only intervals the load spanned whole are judged (the client sent
in the ones before and after them). Prints one PASS/FAIL line for every
planned check, FAIL for each it could not judge (an input missing, too few
intervals); detail lines start with two spaces so the test runner does not
count them.

wait: returns 0 once the poller has read the report of the last interval
the client sent in (every interval it spanned whole is then read, and so
are the datapath's final totals), 1 after --max-seconds.
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


def client_seqs(load):
    """The datapath intervals the client sent in."""
    seen = [int(s) for s in load.get("epochs", {})]
    return seen + [x for b, a, _, _ in load.get("straddled", [])
                   for x in (b, a)]


def cmd_wait(args):
    with open(args.load) as fh:
        seen = client_seqs(json.load(fh))
    if not seen:
        return 1
    deadline = time.time() + args.max_seconds
    while time.time() < deadline:
        with open(args.polls) as fh:
            for line in fh:
                try:
                    if json.loads(line)["doc"]["seq"] >= max(seen):
                        return 0
                except (ValueError, KeyError, TypeError):
                    pass
        time.sleep(0.2)
    return 1


def entry_counts(doc):
    """key -> (reads, writes) the agent estimated for the report's interval:
    its rates times the interval's measured length."""
    secs = float(doc["interval_measured_ms"]) / 1000.0
    return {e["key"]: (float(e["reads_per_s"]) * secs,
                       float(e["writes_per_s"]) * secs)
            for e in doc.get("top", []) if "key" in e}


def class_counts(doc):
    secs = float(doc["interval_measured_ms"]) / 1000.0
    out = {}
    for cls in ("read", "write"):
        c = doc.get("classes", {}).get(cls, {})
        for f in ("requests", "keys"):
            out[cls + "_" + f] = float(c.get(f + "_per_s", 0.0)) * secs
    return out


class Truth:
    """What the client sent in interval seq: lo, the requests certainly in
    it; hi, lo plus those that straddled a flip that may be in it."""

    def __init__(self, load, seq):
        e = load["epochs"].get(str(seq), {})
        self.lo = {"reads": dict(e.get("reads", {})),
                   "writes": dict(e.get("writes", {}))}
        self.cls_lo = {f: e.get(f, 0) for f in (
            "read_requests", "read_keys", "write_requests", "write_keys")}
        self.hi = {t: dict(v) for t, v in self.lo.items()}
        self.cls_hi = dict(self.cls_lo)
        for before, after, op, keys in load["straddled"]:
            if not before <= seq <= after:
                continue
            cls = "write" if op == "set" else "read"
            table = self.hi[cls + "s"]
            for k in keys:
                table[k] = table.get(k, 0) + 1
            self.cls_hi[cls + "_requests"] += 1
            self.cls_hi[cls + "_keys"] += len(keys)

    def both(self, bound, k):
        t = self.lo if bound == "lo" else self.hi
        return t["reads"].get(k, 0) + t["writes"].get(k, 0)


def summed(truths):
    """One Truth for several intervals together."""
    out = Truth({"epochs": {}, "straddled": []}, 0)
    for t in truths:
        for bound in ("lo", "hi"):
            dst, src = getattr(out, bound), getattr(t, bound)
            for table in ("reads", "writes"):
                for k, n in src[table].items():
                    dst[table][k] = dst[table].get(k, 0) + n
        for f in out.cls_lo:
            out.cls_lo[f] += t.cls_lo[f]
            out.cls_hi[f] += t.cls_hi[f]
    return out


def off_by(got, lo, hi):
    """Relative error of got against a truth known to lie in [lo, hi]."""
    if lo <= got <= hi:
        return 0.0
    want = lo if got < lo else hi
    return (got - want) / want if want else math.inf


def top_set_ok(agent_top, truth):
    """The agent's top 10 against a truth in ranges: every key surely in
    the true top 10 is in the agent's, and every key the agent has could
    be in the true top 10. Exact truth: the two top 10s are equal."""
    keys = set(truth.hi["reads"]) | set(truth.hi["writes"])
    if len(keys) <= TOP:
        return set(agent_top) == keys, sorted(keys ^ set(agent_top))
    his = sorted((truth.both("hi", k) for k in keys), reverse=True)
    los = sorted((truth.both("lo", k) for k in keys), reverse=True)

    def others(ranked, own):
        """The TOP-th largest of ranked once own is taken out of it."""
        return ranked[TOP] if own >= ranked[TOP - 1] else ranked[TOP - 1]

    sure = [k for k in keys
            if truth.both("lo", k) > others(his, truth.both("hi", k))]
    missing = sorted(k for k in sure if k not in agent_top)
    wrong = sorted(k for k in agent_top if truth.both("hi", k) <
                   others(los, truth.both("lo", k)))
    return not missing and not wrong, missing + wrong


def true_top(truth):
    keys = set(truth.lo["reads"]) | set(truth.lo["writes"])
    return sorted(keys, key=lambda k: (-truth.both("lo", k), k))[:TOP]


def report(ok, name, why):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))
    return ok


def planned(args):
    names = ["intervals", "top10"]
    if args.per_interval:
        names.append("top10_every_interval")
    names.append("reads")
    if args.per_interval:
        names.append("reads_every_interval")
    if args.check_writes:
        names.append("writes")
    names.append("classes")
    return [args.name + "_" + n for n in names]


def cmd_compare(args):
    names = planned(args)
    try:
        with open(args.load) as fh:
            load = json.load(fh)
        with open(args.polls) as fh:
            polls = [json.loads(line) for line in fh if line.strip()]
        if "epochs" not in load:
            raise ValueError("%s has no per-interval counts (ks_load.py "
                             "run --seq-map)" % args.load)
    except (OSError, ValueError) as e:
        for n in names:
            report(False, n, "no input: %s" % e)
        return 1
    return judge(args, load, polls, names)


def judge(args, load, polls, names):
    name, tol = args.name, args.tol
    done = set()

    def check(ok, suffix, why):
        done.add(name + "_" + suffix)
        return report(ok, name + "_" + suffix, why)

    def rest_fail(why):
        for n in names:
            if n not in done:
                report(False, n, why)
        return 1

    print("  load: %d requests/s, %d keys/s, %d distinct keys, max pacing "
          "lag %.1f ms (it does not matter: truth is per interval), "
          "overrun %.4f"
          % (load["requests_per_period"] / load["period_s"],
             load["keys_per_period"] / load["period_s"],
             load["distinct_keys_per_period"], 1000 * load["max_lag_s"],
             load["overrun"]))
    answered = [r for r in polls if r["rc"] == 0 and r.get("doc")]
    # One report per interval, by its number.
    docs = {}
    for r in answered:
        docs.setdefault(r["doc"]["seq"], r["doc"])
    seen = client_seqs(load)
    if not seen or not docs:
        last = polls[-1] if polls else {}
        check(False, "intervals", "no %s" % (
            "interval number read by the client" if not seen else
            "report could be read (%s)"
            % (last.get("stderr") or "no poll ran").strip()))
        return rest_fail("not judged: no intervals")
    first, last = min(seen), max(seen)
    # The intervals the load spanned whole: the client sent in the ones
    # before and after them.
    usable = [s for s in sorted(docs) if first < s < last]
    print("  %d reports read (intervals %d-%d); the client sent in "
          "intervals %d-%d, %d requests straddled a flip; %d whole "
          "intervals with a report"
          % (len(answered), min(docs), max(docs), first, last,
             len(load["straddled"]), len(usable)))
    if not check(len(usable) >= args.min_intervals, "intervals",
                 "only %d whole interval(s) of the load were reported, "
                 "need %d" % (len(usable), args.min_intervals)):
        return rest_fail("not judged: too few intervals")

    per = {s: entry_counts(docs[s]) for s in usable}
    truths = {s: Truth(load, s) for s in usable}
    tsum = summed(truths.values())
    got = {}
    for s in usable:
        for k, (r, w) in per[s].items():
            gr, gw = got.get(k, (0.0, 0.0))
            got[k] = (gr + r, gw + w)
    # A key missing from an interval's list counts 0 there, as it should.
    agent_top = sorted(got, key=lambda k: -(got[k][0] + got[k][1]))[:TOP]
    truth = true_top(tsum)
    print("  summed over the %d intervals:" % len(usable))
    print("  %-4s %-10s %12s %12s %8s %10s"
          % ("rank", "key", "true reads", "agent reads", "error",
             "agent writes"))
    for i, k in enumerate(truth):
        r, w = got.get(k, (0.0, 0.0))
        print("  %-4d %-10s %12d %12.1f %+7.2f%% %10.1f"
              % (i + 1, k, tsum.lo["reads"].get(k, 0), r,
                 100 * off_by(r, tsum.lo["reads"].get(k, 0),
                              tsum.hi["reads"].get(k, 0)), w))

    ok = True
    good, bad = top_set_ok(agent_top, tsum)
    ok &= check(good, "top10", "true top-10 keys and the agent's differ in "
                "%s (agent: %s)" % (bad, agent_top))
    if args.per_interval:
        bad = []
        for s in usable:
            counts = per[s]
            top = sorted(counts, key=lambda k: -sum(counts[k]))[:TOP]
            good, which = top_set_ok(top, truths[s])
            if not good:
                bad.append("interval %d: %s" % (s, which))
        ok &= check(not bad, "top10_every_interval", "; ".join(bad))

    errs = {k: off_by(got.get(k, (0, 0))[0], tsum.lo["reads"].get(k, 0),
                      tsum.hi["reads"].get(k, 0)) for k in truth}
    worst = max(truth, key=lambda k: abs(errs[k]))
    ok &= check(abs(errs[worst]) <= tol, "reads",
                "%s reads off by %+.2f%% (allowed %.0f%%), sum of %d "
                "intervals" % (worst, 100 * errs[worst], 100 * tol,
                               len(usable)))
    print("  worst reads error over the top 10: %+.2f%% (%s)"
          % (100 * errs[worst], worst))

    if args.per_interval:
        bad, worst1 = [], 0.0
        for s in usable:
            t = truths[s]
            for k in true_top(t):
                e = off_by(per[s].get(k, (0, 0))[0], t.lo["reads"].get(k, 0),
                           t.hi["reads"].get(k, 0))
                worst1 = max(worst1, abs(e))
                if abs(e) > tol:
                    bad.append("interval %d %s %+.2f%%" % (s, k, 100 * e))
        print("  worst reads error of one interval: %.2f%%" % (100 * worst1))
        ok &= check(not bad, "reads_every_interval", ", ".join(bad[:5]))

    # The agent's own +/- bound, for information: how often the true count
    # of an interval (reads + writes) lay within it.
    inside = total = 0
    for s in usable:
        secs = float(docs[s]["interval_measured_ms"]) / 1000.0
        t = truths[s]
        for e in docs[s].get("top", []):
            k = e.get("key")
            if k in truth:
                est = (float(e["reads_per_s"]) + float(e["writes_per_s"])) \
                    * secs
                bound = float(e["error_bound"]) * secs
                total += 1
                inside += (t.both("lo", k) - bound <= est <=
                           t.both("hi", k) + bound)
    if total:
        print("  the agent's error bound held in %d of %d interval estimates "
              "of the top 10 (%.0f%%)" % (inside, total, 100.0 * inside / total))

    if args.check_writes:
        gotw = sum(got.get(k, (0, 0))[1] for k in truth)
        lo = sum(tsum.lo["writes"].get(k, 0) for k in truth)
        hi = sum(tsum.hi["writes"].get(k, 0) for k in truth)
        ok &= check(abs(off_by(gotw, lo, hi)) <= tol, "writes",
                    "writes of the top 10 together %.1f, sent %d-%d"
                    % (gotw, lo, hi))

    ok &= check_classes(args, load, answered, docs, usable, truths, check)
    return 0 if ok else 1


def check_classes(args, load, answered, docs, usable, truths, check):
    """Class counters see every request, sampled or not. The datapath's
    totals at the end must be what was sent, exactly; the per-interval
    rates over the whole intervals within --class-tol of what was sent in
    them (they are taken from the totals a little after each flip, so a
    few requests can move across an edge)."""
    final = answered[-1]["doc"].get("totals", {}).get("classes", {})
    bad = []
    for f, w in load["sent"].items():
        cls, what = f.split("_")
        got = final.get(cls, {}).get(what)
        print("  totals %-15s sent %9d counted %s" % (f, w, got))
        if got != w:
            bad.append("%s counted %s, sent %d" % (f, got, w))
    tsum = summed(truths.values())
    got = {}
    for s in usable:
        for f, n in class_counts(docs[s]).items():
            got[f] = got.get(f, 0.0) + n
    for f in load["sent"]:
        e = off_by(got[f], tsum.cls_lo[f], tsum.cls_hi[f])
        print("  rates %-15s sent %9d agent %11.1f (%+.2f%%)"
              % (f, tsum.cls_lo[f], got[f], 100 * e))
        if abs(e) > args.class_tol:
            bad.append("%s over the intervals %.1f, sent %d" % (
                f, got[f], tsum.cls_lo[f]))
    return check(not bad, "classes", "; ".join(bad))


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
    c.add_argument("--per-interval", action="store_true")
    c.add_argument("--check-writes", action="store_true")
    w = sub.add_parser("wait")
    w.add_argument("--load", required=True)
    w.add_argument("--polls", required=True)
    w.add_argument("--max-seconds", type=float, default=30)
    args = ap.parse_args()
    return {"poll": cmd_poll, "wait": cmd_wait,
            "compare": cmd_compare}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
