#!/usr/bin/python3
"""ks_ring_keys.py - a known set of keys for the per-shard e2e test.

    ks_ring_keys.py make OUT [--count N]
    ks_ring_keys.py send --server A --port P --keys FILE --sets N [--rate R]
    ks_ring_keys.py expect --lookup FILE --sets N --self I --nshards S
    ks_ring_keys.py check --report JSON --expect FILE --name NAME
    ks_ring_keys.py field --report JSON PATH
    ks_ring_keys.py place --watch JSONL --report JSON --expect FILE --name P
    ks_ring_keys.py send-shards --lookup FILE --hot I --extra N [--rate R]
    ks_ring_keys.py shard-load --watch JSONL --report JSON --before F
                    --after F --hot I --name P [--control]

make writes N distinct keys, one per line: short ones, ones with
punctuation, and long ones (up to memcached's 250 bytes, over several MD5
blocks), so the datapath's MD5 of the ketama ring meets every block count.
send gets every key once over TCP with pymemcache and sets the first N
(one request per key, each in its own segment), and exits non-zero if
memcached does not answer. expect turns `agent ring lookup` output
(key<TAB>index<TAB>host:port) into the counts every shard must show: reads,
writes, and misdirected = reads + writes for every shard but self. check
compares the per-shard totals of `agent report --json` with them and
prints one PASS/FAIL line. field prints one value of the report ("ring.version").
send-shards and shard-load are test_place_rate.sh's second part:
real memcached shards, each key sent to its owner, and each shard's load
in the report against memcached's own cmd_get (see cmd_shard_load).
Runs with Debian's /usr/bin/python3 and python3-pymemcache.
"""
import argparse
import json
import sys
import time


def cmd_make(args):
    keys = []
    i = 0
    while len(keys) < args.count:
        kind = i % 5
        if kind == 0:
            key = "user:%d" % i
        elif kind == 1:
            key = "cart/%d?session=%x&x=y" % (i, i * 2654435761 % 2**32)
        elif kind == 2:
            # 55..64 bytes: the second MD5 block starts at 56
            key = ("k%d:" % i).ljust(55 + i % 10, "p")
        elif kind == 3:
            key = ("long:%d:" % i).ljust(100 + (i * 7) % 151, "x")
        else:
            key = "item-%06d" % i
        keys.append(key[:250])
        i += 1
    with open(args.out, "w") as f:
        f.write("\n".join(keys) + "\n")


def cmd_send(args):
    from pymemcache.client.base import Client

    with open(args.keys) as f:
        keys = [k for k in f.read().split("\n") if k]
    client = Client((args.server, args.port), no_delay=True,
                    default_noreply=False, connect_timeout=5, timeout=5)
    t0 = time.monotonic()
    for i, key in enumerate(keys):
        client.get(key)
        if args.rate:
            # paced from the start, not from the last get: a late get
            # is not made up for by the ones after it waiting less
            wait = t0 + (i + 1) / args.rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
    for key in keys[:args.sets]:
        if not client.set(key, b"v"):
            sys.exit("ks_ring_keys: set %s was not stored" % key)
    client.close()


def cmd_expect(args):
    reads = [0] * args.nshards
    writes = [0] * args.nshards
    with open(args.lookup) as f:
        lines = [l for l in f.read().split("\n") if l]
    for n, line in enumerate(lines):
        key, idx, _ = line.split("\t")
        reads[int(idx)] += 1
        if n < args.sets:
            writes[int(idx)] += 1
    shards = []
    for i in range(args.nshards):
        mis = 0 if i == args.self else reads[i] + writes[i]
        shards.append({"reads": reads[i], "writes": writes[i],
                       "misdirected": mis})
    json.dump({"keys": len(lines), "self": args.self, "shards": shards},
              sys.stdout)
    print()


def cmd_check(args):
    with open(args.report) as f:
        rep = json.load(f)
    with open(args.expect) as f:
        exp = json.load(f)
    got = rep.get("shards") or []
    bad = []
    if len(got) != len(exp["shards"]):
        bad.append("%d shards in the report, want %d" %
                   (len(got), len(exp["shards"])))
    for i, (g, e) in enumerate(zip(got, exp["shards"])):
        if g.get("index") != i:
            bad.append("row %d has index %s" % (i, g.get("index")))
        for field in ("reads", "writes", "misdirected"):
            if g.get(field + "_total") != e[field]:
                bad.append("shard %d %s: %s, want %d" %
                           (i, field, g.get(field + "_total"), e[field]))
        if g.get("self") != (i == exp["self"]):
            bad.append("shard %d self flag %s" % (i, g.get("self")))
    if bad:
        print("FAIL %s: %s" % (args.name, "; ".join(bad[:6])))
        return 1
    desc = ", ".join("#%d %d/%d/%d" % (i, e["reads"], e["writes"],
                                        e["misdirected"])
                     for i, e in enumerate(exp["shards"]))
    print("  %d keys, per shard reads/writes/misdirected: %s" %
          (exp["keys"], desc))
    print("PASS %s" % args.name)
    return 0


def p_moves(docs):
    """From `report --watch --json` documents (one a line, each seq
    once, in order): the largest P any CPU placed at (Pmax), each CPU's
    moves of P, and the slack they allow: a move of P on a CPU leaves at
    most the larger P's keys on the wrong side of it, (moves + 1) Pmax
    per CPU that moved, Pmax when none did."""
    ps = [d.get("place_cpu_p") or [] for d in docs]
    pmax = max([max(p) for p in ps if p] or [1])
    ncpu = max([len(p) for p in ps] or [1])
    moves, last = [0] * ncpu, [1] * ncpu
    for p in ps:
        for c, v in enumerate(p):
            if v != last[c]:
                moves[c] += 1
                last[c] = v
    slack = sum((m + 1) * pmax for m in moves if m) or pmax
    return ps, pmax, moves, slack


def read_watch(path):
    """The documents of a `report --watch --json` file, each seq once."""
    docs, seen = [], set()
    with open(path) as f:
        for line in f:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("seq") in seen:
                continue
            seen.add(d.get("seq"))
            docs.append(d)
    return docs


class Verdicts:
    """PASS/FAIL lines named PREFIX_NAME; rc 1 once one failed."""

    def __init__(self, prefix):
        self.prefix, self.rc = prefix, 0

    def __call__(self, name, ok, why):
        if ok:
            print("PASS %s_%s" % (self.prefix, name))
        else:
            print("FAIL %s_%s: %s" % (self.prefix, name, why))
            self.rc = 1


def cmd_place(args):
    """The ring placement's 1 in P (issue 27) under a load of one pass
    over the keys: every report of --watch (one JSON document a line)
    and the final report. Prints a PASS/FAIL line per check, prefixed
    with --name: _p_over_1_under_load (some CPU placed 1 in P > 1 in
    some interval), _p_back_to_1_idle (the last report: every CPU at 1),
    _shard_estimates_within_bound (each shard's reads_total within
    4 sqrt(true (Pmax - 1)) + slack of its true count, the sum within
    slack, slack = (moves + 1) Pmax per CPU that moved, a move of P on a
    CPU leaving at most the larger P's keys on the wrong side of it;
    misdirected_total = reads_total on every shard but self, 0 on self)
    and _control_one_a_placement_misses (the placements themselves,
    totals.packets.ring_hit, i.e. what counting 1 a placement would
    sum to, must miss the sum's bound)."""
    import math
    with open(args.expect) as f:
        exp = json.load(f)
    with open(args.report) as f:
        rep = json.load(f)
    docs = read_watch(args.watch)
    ps, pmax, moves, slack = p_moves(docs)
    verdict = Verdicts(args.name)

    verdict("p_over_1_under_load", pmax > 1,
            "no report with a CPU placing fewer than all (%d reports)" %
            len(docs))
    lastp = ps[-1] if ps else []
    verdict("p_back_to_1_idle", bool(lastp) and max(lastp) == 1,
            "the last report's place_cpu_p: %s" % lastp)
    got = rep.get("shards") or []
    bad = []
    est_sum = true_sum = 0
    for i, e in enumerate(exp["shards"]):
        g = got[i] if i < len(got) else {}
        est = g.get("reads_total", 0) + g.get("writes_total", 0)
        true = e["reads"] + e["writes"]
        bound = 4 * math.sqrt(true * (pmax - 1)) + slack
        est_sum += est
        true_sum += true
        if abs(est - true) > bound:
            bad.append("shard %d: %d, true %d, bound %.0f" %
                       (i, est, true, bound))
        want_mis = 0 if i == exp["self"] else est
        if g.get("misdirected_total") != want_mis:
            bad.append("shard %d misdirected %s, want %d" %
                       (i, g.get("misdirected_total"), want_mis))
    if abs(est_sum - true_sum) > slack:
        bad.append("sum %d, true %d, slack %d" % (est_sum, true_sum, slack))
    print("  P up to %d, moves per CPU %s, slack %d; shards %s against %s" %
          (pmax, moves, slack,
           [g.get("reads_total", 0) + g.get("writes_total", 0) for g in got],
           [e["reads"] + e["writes"] for e in exp["shards"]]))
    verdict("shard_estimates_within_bound", not bad, "; ".join(bad[:6]))
    hit = ((rep.get("totals") or {}).get("packets") or {}).get("ring_hit", 0)
    print("  placements (ring_hit) %d of %d keys" % (hit, true_sum))
    verdict("control_one_a_placement_misses", abs(hit - true_sum) > slack,
            "the placements, %d, are within %d of the %d keys: the "
            "weights were not needed" % (hit, slack, true_sum))
    return verdict.rc


def cmd_send_shards(args):
    """Gets every key of --lookup once from the shard that owns it (the
    clients' ring: `agent ring lookup` output), and --extra more gets of
    the keys of shard --hot, cycled: a load skewed onto one shard. The
    requests are shuffled (a fixed seed), so that the keys the datapath's
    1-in-P countdown places are a simple random sample of them whatever
    the repeats (see cmd_shard_load). One pymemcache client per shard."""
    import random
    from pymemcache.client.base import Client

    owner, hot, hot_hp = [], [], None
    with open(args.lookup) as f:
        for line in f:
            if line.strip():
                key, idx, hp = line.rstrip("\n").split("\t")
                owner.append((key, hp))
                if int(idx) == args.hot:
                    hot.append(key)
                    hot_hp = hp
    reqs = owner + [(hot[i % len(hot)], hot_hp) for i in range(args.extra)]
    random.Random(args.seed).shuffle(reqs)
    clients = {}
    for _, hp in reqs:
        if hp not in clients:
            host, port = hp.rsplit(":", 1)
            clients[hp] = Client((host, int(port)), no_delay=True,
                                 connect_timeout=5, timeout=5)
    t0 = time.monotonic()
    for i, (key, hp) in enumerate(reqs):
        clients[hp].get(key)
        if args.rate:
            wait = t0 + (i + 1) / args.rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
    for c in clients.values():
        c.close()
    print("  %d gets (%d onto %s) in %.1f s" %
          (len(reqs), args.extra, hot_hp, time.monotonic() - t0))


def cmd_shard_load(args):
    """Each shard's load as the agent reports it against memcached's own
    cmd_get, the load placed 1 in P (issue 27). Truth: every shard's
    cmd_get delta (--before, --after: lists of ks_clients.py stats
    documents, in shard order).
    The agent's: reads_total + writes_total of the final report (the
    keys since the ring's push, each placed key counted P by the
    datapath, times the sample rate, 1 here).

    The bound, per shard i with t_i gets: on one CPU the 1-in-P countdown
    places every P-th sampled key; the requests were shuffled, so the
    keys at those positions are a simple random sample of the CPU's keys
    (without replacement), and the placed keys shard i owns vary with
    variance at most t_i (1/P)(1 - 1/P): the estimate, P times them, at
    most t_i (P - 1), with P the largest any CPU used (Pmax). A move of
    P on a CPU leaves at most the larger P's keys on the wrong side of
    the change (counted with the old P or the new), so each move adds at
    most Pmax to one shard's error: slack = sum over CPUs of (moves + 1)
    Pmax. Bound: |estimate - t_i| <= 4 sqrt(t_i (Pmax - 1)) + slack, a
    4-sigma bound (about 6e-5 two-sided for a normal count) plus the
    moves. Checks, prefixed with --name:
      _p_over_1: some interval placed 1 in P > 1 (else the check shows
        nothing about P);
      _shard_load_matches_cmd_get: every shard within its bound;
      _busiest_is_the_hot_shard: the hot shard (--hot) has the most
        cmd_get, the most reads_total, and every interval with at least
        MIN_IV keys names it busiest (at least 2 such intervals);
      _intervals_state_their_error: every such interval placed 1 in
        P > 1 gives each shard with load a load_err_per_s above 0.
    --control (the agent ran with --place-scaling off: each placement
    counted 1): _control_misses_cmd_get passes only when the
    shard-load check fails."""
    import math
    MIN_IV = 400
    with open(args.report) as f:
        rep = json.load(f)
    with open(args.before) as f:
        before = json.load(f)
    with open(args.after) as f:
        after = json.load(f)
    docs = read_watch(args.watch)
    truth = [a["cmd_get"] - b["cmd_get"] for a, b in zip(after, before)]
    got = rep.get("shards") or []
    est = [g.get("reads_total", 0) + g.get("writes_total", 0) for g in got]
    _, pmax, moves, slack = p_moves(docs)
    verdict = Verdicts(args.name)

    bad = []
    worst = 0.0
    for i, t in enumerate(truth):
        e = est[i] if i < len(est) else 0
        bound = 4 * math.sqrt(t * max(pmax - 1, 0)) + slack
        worst = max(worst, abs(e - t) / bound if bound else float("inf"))
        if abs(e - t) > bound:
            bad.append("shard %d: %d, cmd_get %d, bound %.0f" %
                       (i, e, t, bound))
    if len(est) != len(truth):
        bad.append("%d shards in the report, %d memcacheds" %
                   (len(est), len(truth)))
    print("  P up to %d, moves per CPU %s, slack %d; agent %s against "
          "cmd_get %s; worst shard %.2f of its bound" %
          (pmax, moves, slack, est, truth, worst))
    if args.control:
        verdict("control_misses_cmd_get", bool(bad),
                "each placement counted 1 stayed within the bound (worst "
                "%.2f of it): the check cannot tell" % worst)
        return verdict.rc
    verdict("p_over_1", pmax > 1,
            "no interval placed fewer than all (%d reports): the load did "
            "not raise P" % len(docs))
    verdict("shard_load_matches_cmd_get", not bad, "; ".join(bad[:4]))
    ivs = []
    for d in docs:
        ring = d.get("ring") or {}
        keys = (ring.get("keys_per_s") or 0) * (ring.get("interval_s") or 0)
        if keys >= MIN_IV:
            ivs.append((d.get("seq"), ring.get("busiest"), round(keys)))
    hot = args.hot
    why = []
    if max(range(len(truth)), key=lambda i: truth[i]) != hot:
        why.append("cmd_get's busiest is not shard %d: %s" % (hot, truth))
    if not est or max(range(len(est)), key=lambda i: est[i]) != hot:
        why.append("reads_total's busiest is not shard %d: %s" % (hot, est))
    wrong = [iv for iv in ivs if iv[1] != hot]
    if len(ivs) < 2 or wrong:
        why.append("%d intervals of %d keys or more, naming %s" %
                   (len(ivs), MIN_IV, [(s, b) for s, b, _ in ivs]))
    print("  intervals with the load (seq, busiest, keys): %s" % ivs)
    verdict("busiest_is_the_hot_shard", not why, "; ".join(why))
    # each interval placed 1 in P > 1 states every loaded shard's +/-
    # (load_err_per_s, from the live agent's per-CPU counts); cmd_get
    # cannot be read at the agent's interval boundaries, so its coverage
    # is checked against exact counts elsewhere (docs/accuracy.md)
    unstated, stated = [], []
    for d in docs:
        ring = d.get("ring") or {}
        keys = (ring.get("keys_per_s") or 0) * (ring.get("interval_s") or 0)
        if keys < MIN_IV or max(d.get("place_cpu_p") or [1]) <= 1:
            continue
        for s in d.get("shards") or []:
            load = s.get("reads_per_s", 0) + s.get("writes_per_s", 0)
            e = s.get("load_err_per_s")
            if load > 0 and (e is None or e <= 0):
                unstated.append((d.get("seq"), s.get("index"), e))
            elif load > 0:
                stated.append(e / load)
    print("  +/- a shard an interval at P > 1, of its load: %s" %
          (["%.1f%%" % (100 * x) for x in sorted(stated)[::max(
              1, len(stated) // 8)]]))
    verdict("intervals_state_their_error", stated and not unstated,
            "no interval at P > 1 with load" if not stated else
            "(seq, shard, load_err_per_s) without a +/-: %s" % unstated[:6])
    return verdict.rc


def cmd_field(args):
    with open(args.report) as f:
        val = json.load(f)
    for part in args.path.split("."):
        if isinstance(val, list):
            val = val[int(part)]
        elif isinstance(val, dict):
            val = val.get(part)
        else:
            val = None
    print("null" if val is None else
          json.dumps(val) if isinstance(val, (dict, list)) else
          str(val).lower() if isinstance(val, bool) else val)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make")
    p.add_argument("out")
    p.add_argument("--count", type=int, default=400)
    p = sub.add_parser("send")
    p.add_argument("--server", required=True)
    p.add_argument("--port", type=int, default=11211)
    p.add_argument("--keys", required=True)
    p.add_argument("--sets", type=int, default=0)
    p.add_argument("--rate", type=float, default=0,
                   help="gets a second at most (0: as fast as it goes)")
    p = sub.add_parser("expect")
    p.add_argument("--lookup", required=True)
    p.add_argument("--sets", type=int, default=0)
    p.add_argument("--self", type=int, required=True)
    p.add_argument("--nshards", type=int, required=True)
    p = sub.add_parser("check")
    p.add_argument("--report", required=True)
    p.add_argument("--expect", required=True)
    p.add_argument("--name", required=True)
    p = sub.add_parser("place")
    p.add_argument("--watch", required=True)
    p.add_argument("--report", required=True)
    p.add_argument("--expect", required=True)
    p.add_argument("--name", required=True)
    p = sub.add_parser("field")
    p.add_argument("--report", required=True)
    p.add_argument("path")
    p = sub.add_parser("send-shards")
    p.add_argument("--lookup", required=True)
    p.add_argument("--hot", type=int, required=True,
                   help="the shard (its index in the ring) to load more")
    p.add_argument("--extra", type=int, required=True)
    p.add_argument("--rate", type=float, default=0)
    p.add_argument("--seed", type=int, default=27)
    p = sub.add_parser("shard-load")
    p.add_argument("--watch", required=True)
    p.add_argument("--report", required=True)
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--hot", type=int, required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--control", action="store_true")
    args = ap.parse_args()
    fn = {"make": cmd_make, "send": cmd_send, "expect": cmd_expect,
          "check": cmd_check, "place": cmd_place,
          "field": cmd_field, "send-shards": cmd_send_shards,
          "shard-load": cmd_shard_load}[args.cmd]
    sys.exit(fn(args) or 0)


if __name__ == "__main__":
    main()
