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
               [--ready FILE] [--go FILE]

--mode plain is the pattern without protection (get, fill on a miss,
set): the control. --die-in-fill-after S: the first fill starting S
seconds or later into the run SIGKILLs its own process mid-fill (the
lease winner dies). --fill-fails-every N: every Nth fill of this process
raises. --ready FILE is written once every thread has its handle;
with --go FILE the threads start only once FILE exists (so two processes
start together).
"""
import argparse
import json
import os
import signal
import sys
import threading
import time

from herd_lib import Callers, KeysteerError


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
    ap.add_argument("--ready")
    ap.add_argument("--go")
    a = ap.parse_args()

    lock = threading.Lock()
    fills = []        # [start, end, ok]
    lat = []          # every call's [start, seconds]
    errors = {}       # message -> count
    raised_seen = [0]  # fill exceptions that reached their own caller
    nfill = [0]
    callers = Callers(a.spec, a.threads)

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

    def worker(i):
        c = callers.open(i)
        if c is None:
            return
        mine = []
        while time.monotonic() < callers.t0 + a.seconds:
            s = time.monotonic()
            try:
                if a.mode == "fetch":
                    c.get_or_fill(a.key, fill, expire=a.ttl, lease=a.lease,
                                  wait_ms=a.wait_ms, refresh=a.refresh)
                else:
                    v = c.get(a.key)
                    if v is None:
                        c.set(a.key, fill(), expire=a.ttl)
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

    def prefill(cs):
        # the key there before the run: every miss in it is an expiry
        # (the stats read later are the run's alone)
        if a.prefill and cs.clients[0] is not None:
            cs.clients[0].set(a.key, b"prefill", expire=a.ttl)

    callers.run([worker] * a.threads, a.ready, a.go, prefill)
    st = callers.close(("fetches", "fills", "fill_errors", "lease_wins",
                        "lease_waits", "shared_fills", "stale_serves",
                        "fetch_timeouts", "refreshes", "gets", "hits",
                        "errors"))
    json.dump({"pid": os.getpid(), "mode": a.mode, "t0": callers.t0,
               "wait_ms": a.wait_ms,
               "t1": callers.t0 + a.seconds, "handles": callers.handles(),
               "fills": fills, "fill_raised_to_caller": raised_seen[0],
               "calls": sum(len(x) for x in lat),
               "latencies": [x for m in lat for x in m],
               "errors": errors, "stats": st}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
