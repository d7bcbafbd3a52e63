#!/usr/bin/python3
"""ks_herd.py - one client host's callers of one hot, expiring key, for
test_client_herd.sh and tests/bench/herd.sh (docs/client.md
"Read-through"): THREADS threads, a keysteer_client.Client each, read KEY
flat out for SECONDS; on a miss the "database" (fill) sleeps FILL_MS and
is counted. Prints one JSON document: every fill's start and end
(CLOCK_MONOTONIC, shared by every process of the machine, so the driver
can merge hosts), every call's latency, errors and the library's stats.

    ks_herd.py --spec SPEC --key K --threads N --seconds S --ttl T
               --fill-ms MS --mode fetch|plain [--lease S] [--wait-ms MS]
               [--fill-fails-every N] [--die-in-fill-after S]
               [--refresh S] [--prefill]
               [--zipf-keys N [--hot-share P] [--zipf-s S] [--zipf-prefill]]
               [--db FILE [--invalidate-every S [--max-stale S]]
                [--allow-stale]]
               [--ready FILE] [--go FILE]

--mode plain is the pattern without protection (get, fill on a miss,
set): the control. --die-in-fill-after S: the first fill starting S
seconds or later into the run SIGKILLs its own process mid-fill (the
lease winner dies). --fill-fails-every N: every Nth fill of this process
raises. --ready FILE is written once every thread has its handle;
with --go FILE the threads start only once FILE exists (so two processes
start together).

Amid normal traffic (make bench-herd): with --zipf-keys N each call reads
KEY with probability P (the hot key's share, default 1%), else one of N
other keys drawn from a Zipf(S) law, through the same pattern (their fills
take no time and are counted apart; --zipf-prefill stores them all with a
long TTL first, so they hit). --db FILE: the fill returns the version the
file "database" holds (herd_lib.db_read) and every call of KEY records the
version it returned and whether it was flagged stale. --invalidate-every
S: a writer thread of this process writes a new version every S seconds
and then deletes KEY (plain), or marks it stale for at most --max-stale s
(delete(max_stale=...), keysteer_delete_stale); --allow-stale: the
callers of KEY take stale values (get_or_fill(allow_stale=True)).
"""
import argparse
import bisect
import json
import os
import random
import signal
import sys
import threading
import time

from herd_lib import Callers, KeysteerError, db_read, db_write


class FillError(Exception):
    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--key", default="herd:hot")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--ttl", type=int, default=2)
    ap.add_argument("--fill-ms", type=float, default=50)
    ap.add_argument("--mode", choices=("fetch", "plain"), default="fetch")
    ap.add_argument("--lease", type=int, default=0)
    ap.add_argument("--wait-ms", type=int, default=0)
    ap.add_argument("--fill-fails-every", type=int, default=0)
    ap.add_argument("--die-in-fill-after", type=float, default=-1)
    ap.add_argument("--refresh", type=int, default=0)
    ap.add_argument("--prefill", action="store_true")
    ap.add_argument("--zipf-keys", type=int, default=0)
    ap.add_argument("--hot-share", type=float, default=0.01)
    ap.add_argument("--zipf-s", type=float, default=0.99)
    ap.add_argument("--zipf-prefill", action="store_true")
    ap.add_argument("--db")
    ap.add_argument("--invalidate-every", type=float, default=0)
    ap.add_argument("--max-stale", type=int, default=0)
    ap.add_argument("--allow-stale", action="store_true")
    ap.add_argument("--ready")
    ap.add_argument("--go")
    a = ap.parse_args()

    lock = threading.Lock()
    fills = []        # [start, end, ok]
    lat = []          # every call's [start, seconds]
    errors = {}       # message -> count
    raised_seen = [0]  # fill exceptions that reached their own caller
    nfill = [0]
    bg_lat = []       # the other keys' calls: [start, seconds]
    bg_fills = [0]
    values = []       # with --db, KEY's calls: [start, version, stale]
    writes = []       # [version, mark or delete start, acknowledged]
    writer = a.db is not None and a.invalidate_every > 0
    callers = Callers(a.spec, a.threads + (1 if writer else 0))
    # the Zipf law's cumulative weights over the other keys, rank 1 first
    cdf, acc = [], 0.0
    for r in range(1, a.zipf_keys + 1):
        acc += 1.0 / r ** a.zipf_s
        cdf.append(acc)

    def fill():
        start = time.monotonic()
        with lock:
            nfill[0] += 1
            n = nfill[0]
        if a.die_in_fill_after >= 0 and start - callers.t0 >= a.die_in_fill_after:
            # the winner dies holding the lease; its time for the check
            sys.stderr.write(json.dumps({"died_in_fill_at": start}) + "\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(a.fill_ms / 1000.0)
        end = time.monotonic()
        fail = a.fill_fails_every and n % a.fill_fails_every == 0
        with lock:
            fills.append([start, end, not fail])
        if fail:
            raise FillError("fill %d fails on purpose" % n)
        return b"v%d:%d" % (os.getpid(), n)

    def db_fill():
        # the database read at the fill's start: a write after it makes
        # this value old, as a real read would be
        start = time.monotonic()
        v = db_read(a.db)[0]
        time.sleep(a.fill_ms / 1000.0)
        with lock:
            fills.append([start, time.monotonic(), True])
        return b"%d" % v

    def bg_fill():
        with lock:
            bg_fills[0] += 1
        return b"normal"

    def bg_call(c, key):
        if a.mode == "fetch":
            c.get_or_fill(key, bg_fill, expire=3600)
        elif c.get(key) is None:
            c.set(key, bg_fill(), expire=3600)

    def hot_call(c):
        """KEY's call by the run's pattern: the value it returned."""
        f = db_fill if a.db else fill
        if a.mode == "fetch":
            return c.get_or_fill(a.key, f, expire=a.ttl, lease=a.lease,
                                 wait_ms=a.wait_ms, refresh=a.refresh,
                                 allow_stale=a.allow_stale)
        v = c.get(a.key)
        if v is None:
            v = f()
            c.set(a.key, v, expire=a.ttl)
        return v

    def worker(i):
        c = callers.open(i)
        if c is None:
            return
        mine, bg, vals = [], [], []
        rnd = random.Random(os.getpid() * 1000 + i)
        while time.monotonic() < callers.t0 + a.seconds:
            if a.zipf_keys and rnd.random() >= a.hot_share:
                key = "zipf:%d" % bisect.bisect_left(cdf, rnd.random() * acc)
                s = time.monotonic()
                try:
                    bg_call(c, key)
                except KeysteerError as e:
                    with lock:
                        m = "other keys: " + str(e).split(":")[0][:80]
                        errors[m] = errors.get(m, 0) + 1
                bg.append((round(s, 4), round(time.monotonic() - s, 4)))
                continue
            s = time.monotonic()
            try:
                v = hot_call(c)
                if a.db and v is not None:
                    vals.append((round(s, 5), int(bytes(v)),
                                 bool(getattr(v, "stale", False))))
            except FillError:
                with lock:
                    raised_seen[0] += 1
            except KeysteerError as e:
                with lock:
                    m = str(e).split(":")[0][:80] + " errno %d" % e.errno
                    errors[m] = errors.get(m, 0) + 1
            mine.append((round(s, 4), round(time.monotonic() - s, 4)))
        with lock:
            lat.append(mine)
            bg_lat.extend(bg)
            values.extend(vals)

    def invalidator(i):
        c = callers.open(i)
        version = db_read(a.db)[0]
        while True:
            time.sleep(a.invalidate_every)
            # a write the callers have no time left to read is no
            # invalidation they could fill (late wake-ups when loaded)
            if time.monotonic() > callers.t0 + a.seconds - 0.5:
                break
            version += 1
            db_write(a.db, version, int(a.fill_ms))
            s = time.monotonic()
            try:
                c.delete(a.key, max_stale=a.max_stale)
            except KeysteerError as e:
                with lock:
                    m = "delete: " + str(e).split(":")[0][:80]
                    errors[m] = errors.get(m, 0) + 1
                continue
            writes.append([version, round(s, 5), round(time.monotonic(), 5)])

    def prefill(cs):
        # the key there before the run: every miss in it is an expiry
        # (the stats read later are the run's alone)
        # (the other keys first: their sets take seconds when loaded, and
        # the hot key's short TTL runs from its own set)
        c = cs.clients[0]
        if a.zipf_prefill and c is not None:
            for r in range(a.zipf_keys):
                c.set("zipf:%d" % r, b"normal", expire=3600)
        if a.prefill and c is not None:
            c.set(a.key, b"%d" % db_read(a.db)[0] if a.db else b"prefill",
                  expire=a.ttl)

    callers.run([worker] * a.threads + ([invalidator] if writer else []),
                a.ready, a.go, prefill)
    st = callers.close(("fetches", "fills", "fill_errors", "lease_wins",
                        "lease_waits", "shared_fills", "stale_serves",
                        "fetch_timeouts", "refreshes", "gets", "hits",
                        "errors"))
    json.dump({"pid": os.getpid(), "mode": a.mode, "t0": callers.t0,
               "wait_ms": a.wait_ms,
               "t1": callers.t0 + a.seconds,
               "handles": sum(c is not None for c in callers.clients[:a.threads]),
               "fills": fills, "fill_raised_to_caller": raised_seen[0],
               "calls": sum(len(x) for x in lat),
               "latencies": [x for m in lat for x in m],
               "bg_latencies": bg_lat, "bg_fills": bg_fills[0],
               "values": values, "writes": writes, "max_stale": a.max_stale,
               "errors": errors, "stats": st}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
