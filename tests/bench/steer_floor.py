#!/usr/bin/python3
"""steer_floor.py - how even the flash sale of bench-steer can get when
steering moves exactly the keys above a read threshold, and where a run's
busiest shard got its reads (docs/steering.md, "Where the rest of the
busiest shard came from").

  tests/bench/steer_floor.py --shards-file FILE [--agent build/agent]
      [--keys 100000] [--zipf 0.99] [--flash-share 0.24] [--rate 15000]
      [--owner-share 0.015625] [--threshold R ...] [--balance F]
      [--load-json FILE]

Every key's share of the requests is exact (the Zipf weights of
user/load/zipf.c plus the flash key), its owner is `agent ring lookup` on
the same shard file (ketama by default, as the bench), so the table is the
load each shard would carry, per second, with no sampling noise:

  none          nothing moved
  thr R/s       every key read at R/s or more moved (the owner keeps its
                --owner-share)
  balance F     then, for each shard over (1 + F) x the mean, its next
                hottest keys moved until it is not (what agent run
                --balance aims at)

--load-json: ks_client_load's output with --per-key (steer_bench.sh
--keep keeps it): each shard's reads of the top keys that the library sent
to the owner in the measured window, against the same keys' whole reads.
"""
import argparse
import json
import subprocess
import sys


def owners(agent, shards_file, keys):
    out = subprocess.run([agent, "ring", "lookup", "--shards-file", shards_file],
                         input="\n".join(keys) + "\n", capture_output=True,
                         text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        k, idx, _ = line.split("\t")
        res[k] = int(idx)
    return res


def loads(p, own, nshards, moved, share):
    per = [0.0] * nshards
    for k, pk in p.items():
        per[own[k]] += pk * (share if k in moved else 1.0)
    return per


def ratio(per):
    mean = sum(per) / len(per)
    return max(per) / mean if mean else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shards-file", required=True)
    ap.add_argument("--agent", default="build/agent")
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--zipf", type=float, default=0.99)
    ap.add_argument("--flash-share", type=float, default=0.24)
    ap.add_argument("--flash-key", default="flash:1")
    ap.add_argument("--prefix", default="key:")
    ap.add_argument("--rate", type=float, default=15000)
    ap.add_argument("--owner-share", type=float, default=1 / 64)
    ap.add_argument("--threshold", type=float, action="append")
    ap.add_argument("--balance", type=float, default=0.10)
    ap.add_argument("--load-json")
    ap.add_argument("--window", default="3:13",
                    help="seconds of --load-json's per_second cells, A:B")
    a = ap.parse_args()
    if a.keys < 1 or not 0 <= a.flash_share < 1 or a.rate <= 0:
        sys.exit("steer_floor.py: --keys >= 1, --flash-share 0..1, --rate > 0")
    w = [1.0 / (r ** a.zipf) for r in range(1, a.keys + 1)]
    h = sum(w)
    p = {a.flash_key: a.flash_share}
    for r in range(1, a.keys + 1):
        p["%s%d" % (a.prefix, r)] = (1 - a.flash_share) * w[r - 1] / h
    own = owners(a.agent, a.shards_file, list(p))
    n = max(own.values()) + 1
    ranked = sorted(p, key=lambda k: -p[k])
    print("%-26s %7s %12s  per-shard reads/s" % ("moved", "keys", "busiest/mean"))

    def row(name, moved):
        per = loads(p, own, n, moved, a.owner_share)
        print("%-26s %7d %12.3f  %s" % (name, len(moved), ratio(per),
                                        " ".join("%6.0f" % (x * a.rate) for x in per)))
        return per

    row("none", set())
    for thr in a.threshold or [56.25]:
        moved = {k for k in p if p[k] * a.rate >= thr}
        row("thr %g/s" % thr, moved)
        while True:
            per = loads(p, own, n, moved, a.owner_share)
            mean = sum(per) / n
            more = [next((k for k in ranked if own[k] == s and k not in moved), None)
                    for s in range(n) if per[s] > (1 + a.balance) * mean]
            more = [k for k in more if k]
            if not more:
                break
            moved |= set(more)
        row("  + balance %g" % a.balance, moved)
    if a.load_json:
        d = json.load(open(a.load_json))
        lo, hi = (int(x) for x in a.window.split(":"))
        to_owner = [0] * n
        whole = [0] * n
        for rank, cells in d.get("per_key", {}).items():
            k = a.flash_key if rank == "0" else "%s%s" % (a.prefix, rank)
            g = sum(cells["gets"][lo:hi])
            c = sum(cells["copies"][lo:hi])
            to_owner[own[k]] += g - c
            whole[own[k]] += g
        print("top %d keys, seconds %d..%d: reads sent to the owner / all their reads, per shard"
              % (len(d.get("per_key", {})) - 1, lo, hi))
        print("  " + " ".join("%d/%d" % (o, t) for o, t in zip(to_owner, whole)))


if __name__ == "__main__":
    main()
