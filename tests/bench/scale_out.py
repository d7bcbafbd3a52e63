#!/usr/bin/python3
"""scale_out.py - one run of `make bench-scale-out` (tests/bench/scale_out.sh
sets up the fleet and calls this once per client kind; docs/benchmarks.md,
"Scale-out").

  scale_out.py --kind library|library-off|plain --etcd URL --cluster C
               --ring-cmd CMD --owners4 FILE --owners5 FILE --keys N
               --before S --after S [--zipf 0.99] [--seed N]

A read-through cache in front of a counted "database": a read that misses
asks the database (counted) and sets the value through the same client.
Every key is filled first (the cache warm on four shards); a Zipf read load
runs BEFORE seconds, CMD adds the fifth shard, and the load runs AFTER more
seconds from the moment the client follows the new ring. Kinds:

  library      libkeysteer (user/client/python), its defaults: warm-up
  library-off  libkeysteer with the test-only ring_union=off (no warm-up,
               the previous ring ignored: a client that just follows)
  plain        pymemcache, one client per server, owners from `agent ring
               lookup` (libmemcached's ketama) before and after the change

OWNERS4/OWNERS5 are `agent ring lookup` outputs for the keys under each
ring: which keys moved, exactly. Prints one JSON object.
"""
import argparse
import bisect
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "user", "client", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from ring_lookup import owners  # noqa: E402


def zipf_cdf(n, s):
    w = [1.0 / (i + 1) ** s for i in range(n)]
    tot = sum(w)
    acc, out = 0.0, []
    for x in w:
        acc += x / tot
        out.append(acc)
    return out


class Plain:
    """pymemcache to the owner the ring names: a plain ketama client."""

    def __init__(self, own):
        from pymemcache.client.base import Client
        self.own, self.c = own, {}
        self.Client = Client

    def _cl(self, k):
        hp = self.own[k]
        if hp not in self.c:
            h, p = hp.rsplit(":", 1)
            # no_delay: without it Nagle holds a set's value behind its
            # header, 40 ms a write
            self.c[hp] = self.Client((h, int(p)), connect_timeout=2,
                                     timeout=2, no_delay=True)
        return self.c[hp]

    def get(self, k):
        return self._cl(k).get(k)

    def set(self, k, v):
        self._cl(k).set(k, v)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--kind", "--etcd", "--cluster", "--ring-cmd", "--owners4",
              "--owners5"):
        ap.add_argument(a, required=True)
    ap.add_argument("--keys", type=int, default=20000)
    ap.add_argument("--before", type=float, default=5)
    ap.add_argument("--after", type=float, default=30)
    ap.add_argument("--zipf", type=float, default=0.99)
    ap.add_argument("--seed", type=int, default=1)
    o = ap.parse_args()
    o4, o5 = owners(o.owners4), owners(o.owners5)
    keys = ["so:%d" % i for i in range(o.keys)]
    moved = {k for k in keys if o4[k] != o5[k]}
    spec = "etcd=%s cluster=%s timeout_ms=1000 etcd_timeout_ms=10000" % (
        o.etcd, o.cluster)
    if o.kind == "plain":
        c = Plain(o4)
        stats = None
    else:
        from keysteer_client import Client
        c = Client(spec=spec + (" ring_union=off"
                                if o.kind == "library-off" else ""))
        stats = c.stats
    for k in keys:  # the cache filled from the database before the run
        c.set(k, b"db:" + k.encode())
    cdf = zipf_cdf(o.keys, o.zipf)
    rnd = random.Random(o.seed)
    # the phase's counts: reads, of moved keys, database reads (all, of
    # moved keys, distinct keys)
    ph = {p: {"reads": 0, "moved_reads": 0, "db_reads": 0,
              "db_reads_moved": 0, "db_keys": set(), "moved_keys": set()}
          for p in ("before", "after")}
    phase, t0, changed_at = "before", time.monotonic(), None
    st0 = None
    while True:
        now = time.monotonic()
        if phase == "before" and now - t0 >= o.before:
            if subprocess.call(o.ring_cmd, shell=True):
                sys.exit("scale_out.py: the ring command failed")
            if o.kind == "plain":
                c.own = o5  # the new ring pushed to the clients' config
            else:  # the event: the handle's view has the new ring
                w = time.monotonic()
                while stats()["ring_changes"] == 0:
                    if time.monotonic() - w > 30:
                        sys.exit("scale_out.py: no ring change in 30 s")
                    time.sleep(0.001)
            phase, changed_at = "after", time.monotonic()
            st0 = stats() if stats else None
        if phase == "after" and now - changed_at >= o.after:
            break
        k = keys[bisect.bisect_left(cdf, rnd.random())]
        p = ph[phase]
        p["reads"] += 1
        if k in moved:
            p["moved_reads"] += 1
            p["moved_keys"].add(k)
        if c.get(k) is None:
            p["db_reads"] += 1
            p["db_keys"].add(k)
            if k in moved:
                p["db_reads_moved"] += 1
            c.set(k, b"db:" + k.encode())
    out = {"kind": o.kind, "keys": o.keys, "moved_keys": len(moved),
           "zipf": o.zipf, "after_s": o.after}
    for name, p in ph.items():
        out[name] = {"reads": p["reads"], "moved_reads": p["moved_reads"],
                     "moved_keys_read": len(p["moved_keys"]),
                     "db_reads": p["db_reads"],
                     "db_reads_moved": p["db_reads_moved"],
                     "db_keys": len(p["db_keys"])}
    if stats:
        st = stats()
        out["library"] = {n: st[n] - st0[n] for n in (
            "ring_old_reads", "ring_warmups", "ring_warm_undone",
            "owner_reads")}
        out["library"]["ring_grace_ms_left"] = st["ring_grace_ms"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
