#!/usr/bin/python3
"""bounded_loads.py - consistent hashing with bounded loads (Mirrokni,
Thorup and Zadimoghaddam 2018; HAProxy's hash-balance-factor) against
keysteer's planned ring, on the workloads of make bench-plan, with every
key's share exact (no sampling; docs/placement.md).

  tests/bench/bounded_loads.py [--agent build/agent] [--shards 16]
      [--keys 100000] [--rate 16000] [--json FILE]

Workloads: 'flash' (Zipf 0.99 + flash:1 with 24%) and 'zipf1' (Zipf 1.0),
keys key:1..key:K as ks_client_load names them. Copies on as in the
bench: a key read at >= 3% of a shard's capacity (rate / shards) is
served by copies, its owner keeping 1/64 of its reads; the figure is the
owner load of each shard, busiest / mean.

  ketama     the names' ring (computed here, checked against 'agent ring
             lookup' and against the ring document's digest, which the
             agent verifies)
  planned    'agent ring plan --ring-file --load-file' on load documents
             written from the exact loads (each shard's load, its 10
             busiest keys with their bytes, its hot keys), as the agents
             would publish them with --export-keys
  CH-BL c    bounded loads: keys placed one at a time (a fixed random
             order of first requests), each on the first server clockwise
             from its hash whose load would stay <= c x the mean; c = 1.05
             (HAProxy hash-balance-factor 105) and 1.25

Changes of load, each from the state the previous placement left:
  drift      1% of the keys swap popularity with random others
  sale       zipf1 -> flash: the flash key arrives, the head shifts
For each: busiest/mean after it, and the keys whose server changed
(CH-BL: placed again with the new loads; planned: planned again from the
planned ring; ketama: none).
"""
import argparse
import hashlib
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

FNV_OFF, FNV_PRIME, M64 = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1
OWNER_SHARE, HOT_SHARE = 1 / 64, 0.03


def fnv(h, b):
    for x in b:
        h = ((h ^ x) * FNV_PRIME) & M64
    return h


def ketama(shards):
    """libmemcached's KETAMA_WEIGHTED for equal weights and port 11211 or
    not (docs/ring.md): 160 points a shard for the counts used here."""
    pts = []
    for i, (host, port) in enumerate(shards):
        for k in range(40):
            name = ("%s-%d" % (host, k)) if port == 11211 else ("%s:%d-%d" % (host, port, k))
            d = hashlib.md5(name.encode()).digest()
            for a in range(4):
                pts.append((struct.unpack_from("<I", d, 4 * a)[0], i))
    pts.sort()
    return pts


def ring_doc(shards, pts):
    h = FNV_OFF
    for v in (0, len(shards), len(pts)):
        h = fnv(h, struct.pack("<I", v))
    for host, port in shards:
        h = fnv(h, ("%s:%d\n" % (host, port)).encode())
    for v, s in pts:
        h = fnv(h, struct.pack("<II", v, s))
    return {"schema": 1, "kind": "keysteer-ring", "distribution": "ketama", "key_hash": "md5",
            "shards": [{"host": a, "port": p, "weight": 1} for a, p in shards],
            "points": len(pts), "digest": "%016x" % h, "clients": "keysteer"}


def khash(k):
    return struct.unpack_from("<I", hashlib.md5(k.encode()).digest(), 0)[0]


def workload(keys, s, flash, perm=None):
    w = [1.0 / (r ** s) for r in range(1, keys + 1)]
    t = sum(w)
    p = {"flash:1": flash}  # 0 before the sale: placed, never read
    names = ["key:%d" % r for r in range(1, keys + 1)]
    if perm:
        names = [names[i] for i in perm]
    for r in range(keys):
        p[names[r]] = (1 - flash) * w[r] / t
    return p


def owner_load(p, rate, n):
    """requests/s each key puts on its owner: copies take a hot key's."""
    thr = HOT_SHARE * rate / n
    return {k: (x * rate * OWNER_SHARE if x * rate >= thr else x * rate) for k, x in p.items()}, \
        {k for k, x in p.items() if x * rate >= thr}


def lookup(agent, args, keys):
    out = subprocess.run([agent, "ring", "lookup"] + args, input="\n".join(keys) + "\n",
                         capture_output=True, text=True, check=True).stdout
    return {l.split("\t")[0]: int(l.split("\t")[1]) for l in out.splitlines()}


def ratio(per):
    m = sum(per) / len(per)
    return max(per) / m


def per_shard(load, own, n):
    per = [0.0] * n
    for k, x in load.items():
        per[own[k]] += x
    return per


def chbl(pts, n, load, order, c, hashes):
    """Weighted bounded loads: each key on the first server clockwise
    from its hash whose load stays <= c x mean (Mirrokni et al.'s rule
    with balls of the keys' weights); a key too big for any goes to its
    first choice."""
    import bisect
    vals = [v for v, _ in pts]
    cap = c * sum(load.values()) / n
    per = [0.0] * n
    own = {}
    for k in order:
        w = load[k]
        i = bisect.bisect_left(vals, hashes[k]) % len(pts)
        first, seen = pts[i][1], set()
        while True:
            s = pts[i][1]
            if s not in seen:
                seen.add(s)
                if per[s] + w <= cap:
                    break
                if len(seen) == n:
                    s = first
                    break
            i = (i + 1) % len(pts)
        own[k] = s
        per[s] += w
    return own, per


def plan(agent, tmp, ring_file, load, hot, own, n, shards, target, name):
    docs = []
    byshard = [[] for _ in range(n)]
    for k, x in load.items():
        byshard[own[k]].append((x, k))
    hid = {k: "%016x" % (i + 1) for i, k in enumerate(sorted(load))}
    per = per_shard(load, own, n)
    for s in range(n):
        top = sorted(byshard[s], reverse=True)[:10]
        docs.append({"schema": 2, "kind": "keysteer-load", "self": "%s:%d" % shards[s],
                     "ring_revision": 0,
                     "shard": {"name": "%s:%d" % shards[s], "reads_per_s": per[s],
                               "writes_per_s": 0, "misdirected_per_s": 0,
                               "served_per_s": per[s]},
                     "top": [{"hash": hid[k], "key": k, "reads_per_s": x, "writes_per_s": 0}
                             for x, k in top],
                     "hot": [{"hash": hid[k], "reads_per_s": load[k] / OWNER_SHARE,
                              "writes_per_s": 0, "owner_hits_per_s": load[k],
                              "owner_misses_per_s": 0}
                             for x, k in byshard[s] if k in hot][:256]})
    lf = os.path.join(tmp, name + ".loads.json")
    json.dump(docs, open(lf, "w"))
    out = os.path.join(tmp, name + ".plan.json")
    r = subprocess.run([agent, "ring", "plan", "--ring-file", ring_file, "--load-file", lf,
                        "--target", str(target), "--out", out], capture_output=True, text=True)
    if r.returncode:
        sys.exit("bounded_loads.py: ring plan: " + r.stderr + r.stdout)
    return out, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", default="build/agent")
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--rate", type=float, default=16000)
    ap.add_argument("--target", type=float, default=1.03)
    ap.add_argument("--json")
    a = ap.parse_args()
    n = a.shards
    shards = [("198.18.2.%d" % (11 + i), 11211) for i in range(n)]
    pts = ketama(shards)
    tmpd = tempfile.TemporaryDirectory(prefix="ks_bounded.")  # removed at exit
    tmp = tmpd.name
    sf = os.path.join(tmp, "shards.txt")
    open(sf, "w").write("".join("%s:%d\n" % s for s in shards))
    ringf = os.path.join(tmp, "ring.json")
    json.dump(ring_doc(shards, pts), open(ringf, "w"))
    rnd = random.Random(26)
    res = {"config": vars(a), "workloads": {}, "changes": {}}
    allkeys = ["flash:1"] + ["key:%d" % r for r in range(1, a.keys + 1)]
    hashes = {k: khash(k) for k in allkeys}
    names = lookup(a.agent, ["--shards-file", sf], allkeys)
    import bisect
    vals = [v for v, _ in pts]
    bad = sum(1 for k in allkeys[:5000] if pts[bisect.bisect_left(vals, hashes[k]) % len(pts)][1] != names[k])
    if bad:
        sys.exit("bounded_loads.py: this ketama places %d of 5000 keys unlike the agent" % bad)
    order = list(allkeys)
    rnd.shuffle(order)
    perm = list(range(a.keys))
    for _ in range(a.keys // 200):  # 1% of the keys swap with others
        i, j = rnd.randrange(a.keys), rnd.randrange(a.keys)
        perm[i], perm[j] = perm[j], perm[i]
    wls = {"flash": workload(a.keys, 0.99, 0.24), "zipf1": workload(a.keys, 1.0, 0.0),
           "zipf1_drift": workload(a.keys, 1.0, 0.0, perm)}
    state = {}
    print("%-12s %-10s %12s %12s" % ("workload", "placement", "busiest/mean", "keys moved"))
    for wl in ("flash", "zipf1"):
        load, hot = owner_load(wls[wl], a.rate, n)
        row = {"ketama": ratio(per_shard(load, names, n))}
        pf, pout = plan(a.agent, tmp, ringf, load, hot, names, n, shards, a.target, wl)
        pown = lookup(a.agent, ["--plan", pf], allkeys)
        row["planned"] = ratio(per_shard(load, pown, n))
        row["planned_keys_moved"] = sum(1 for k in allkeys if pown[k] != names[k])
        for c in (1.05, 1.25):
            own, per = chbl(pts, n, load, order, c, hashes)
            row["chbl_%.2f" % c] = ratio(per)
            row["chbl_%.2f_keys_off_ketama" % c] = sum(1 for k in allkeys if own[k] != names[k])
            state[(wl, c)] = own
        state[(wl, "plan")] = (pf, pown)
        res["workloads"][wl] = row
        print("%-12s %-10s %12.3f %12s" % (wl, "ketama", row["ketama"], "-"))
        print("%-12s %-10s %12.3f %12d" % (wl, "planned", row["planned"], row["planned_keys_moved"]))
        for c in (1.05, 1.25):
            print("%-12s %-10s %12.3f %12d" % (wl, "CH-BL %.2f" % c, row["chbl_%.2f" % c],
                                               row["chbl_%.2f_keys_off_ketama" % c]))
    # changes of load, from the placements above
    for ch, (src, dst) in {"drift": ("zipf1", "zipf1_drift"), "sale": ("zipf1", "flash")}.items():
        load, hot = owner_load(wls[dst], a.rate, n)
        row = {"ketama": ratio(per_shard(load, names, n)), "ketama_keys_moved": 0}
        pf0, pown0 = state[(src, "plan")]
        # the ring the fleet runs, measured again under the new load
        row["plan_before_replan"] = ratio(per_shard(load, pown0, n))
        pf, _ = plan(a.agent, tmp, pf0, load, hot, pown0, n, shards, a.target, ch)
        pown = lookup(a.agent, ["--plan", pf], allkeys)
        row["replanned"] = ratio(per_shard(load, pown, n))
        row["replanned_keys_moved"] = sum(1 for k in allkeys if pown[k] != pown0[k])
        for c in (1.05, 1.25):
            own, per = chbl(pts, n, load, order, c, hashes)
            row["chbl_%.2f" % c] = ratio(per)
            row["chbl_%.2f_keys_moved" % c] = sum(1 for k in allkeys if own[k] != state[(src, c)][k])
        res["changes"][ch] = row
        print("change %-6s ketama %.3f (0 moved); plan kept %.3f, replanned %.3f (%d keys moved); "
              "CH-BL 1.05 %.3f (%d moved), 1.25 %.3f (%d moved)" % (
                  ch, row["ketama"], row["plan_before_replan"], row["replanned"],
                  row["replanned_keys_moved"], row["chbl_1.05"], row["chbl_1.05_keys_moved"],
                  row["chbl_1.25"], row["chbl_1.25_keys_moved"]))
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)
        print("figures in %s" % a.json)


if __name__ == "__main__":
    main()
