#!/usr/bin/python3
"""ks_swr.py - writers and readers of one key through libkeysteer with
stale-while-revalidate (docs/client.md "Stale-while-revalidate"), for
test_client_swr.sh.

    ks_swr.py run --spec SPEC --key K --db FILE --threads N --seconds S
                  [--writer --max-stale S] [--ready FILE] [--go FILE]
    ks_swr.py check --max-stale S [--control] RUN.json...

run: N reader threads, a keysteer_client.Client each, read K flat out
for S seconds, a third each with get_or_fill(allow_stale=True), with
get_or_fill() and with get(). The "database" is FILE ("VERSION FILL_MS"):
a fill reads it, sleeps FILL_MS and returns b"VERSION". With --writer a
thread writes the database then calls delete(K, max_stale=S): every
250 ms for 4 s with 40 ms fills (a refill lands between writes), then
three writes 1 s apart with fills 1 s longer than the bound, so the old
value is served flagged until its first mark ends (the later writes must
not move that end); then 40 ms fills again. Prints one JSON
document: every write's version, mark start and acknowledgement, every
read's start, end, kind, version and flag (CLOCK_MONOTONIC, shared by the
processes of the machine), errors and the library's stats.

check: prints PASS/FAIL lines (names in tests/plans/test_client_swr.plan).
"""
import argparse
import bisect
import json
import sys
import threading
import time

from herd_lib import Callers, KeysteerError, db_read, db_write

KINDS = ("stale_ok", "fresh", "get")
AGE_SLACK_MS = 500  # memcached's 1 s clock timer, late on a loaded host


def run(a):
    lock = threading.Lock()
    reads, errors, writes = [], {}, []
    callers = Callers(a.spec, a.threads + (1 if a.writer else 0))

    def fill():
        v, ms = db_read(a.db)
        time.sleep(ms / 1000.0)
        return b"%d" % v

    def reader(i):
        c, mine = callers.open(i), []
        if c is None:
            return
        while time.monotonic() < callers.t0 + a.seconds:
            # a kind per thread: a thread waiting for a fill must not
            # hold up the stale serves of another kind
            kind = KINDS[i % len(KINDS)]
            s = time.monotonic()
            try:
                if kind == "get":
                    v = c.get(a.key)
                else:
                    v = c.get_or_fill(a.key, fill, expire=30,
                                      lease=a.max_stale + 3,
                                      wait_ms=(a.max_stale + 6) * 1000,
                                      allow_stale=kind == "stale_ok")
            except KeysteerError as e:
                with lock:
                    m = str(e)[:100]
                    errors[m] = errors.get(m, 0) + 1
                continue
            e = time.monotonic()
            mine.append([round(s, 5), round(e, 5), kind,
                         None if v is None else int(bytes(v)),
                         bool(getattr(v, "stale", False))])
        with lock:
            reads.extend(mine)

    def writer(i):
        c = callers.open(i)
        version = [db_read(a.db)[0]]

        def write(fill_ms):
            version[0] += 1
            db_write(a.db, version[0], fill_ms)
            s = time.monotonic()
            c.delete(a.key, max_stale=a.max_stale)
            writes.append([version[0], round(s, 5),
                           round(time.monotonic(), 5), fill_ms])

        for _ in range(16):
            write(40)
            time.sleep(0.25)
        # fills longer than the bound: the old value is served flagged
        # until its first mark ends, never after; the writes in between
        # must not move that end
        for _ in range(3):
            write(a.max_stale * 1000 + 1000)
            time.sleep(1)
        time.sleep(a.max_stale + 0.5)
        write(40)

    callers.run([reader] * a.threads + ([writer] if a.writer else []),
                a.ready, a.go)
    st = callers.close()
    json.dump({"reads": reads, "writes": writes, "errors": errors,
               "opened": callers.handles(),
               "stats": st}, sys.stdout)


def verdict(name, ok, why, detail):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))
    print("# %s: %s" % (name, detail))
    return ok


def check(a):
    runs = [json.load(open(p)) for p in a.files]
    reads = [r for d in runs for r in d["reads"]]
    writes = sorted(w for d in runs for w in d["writes"])
    errors = {}
    for d in runs:
        for m, n in d["errors"].items():
            errors[m] = errors.get(m, 0) + n
    acks = sorted((w[2], w[0]) for w in writes)
    ack_t = [x[0] for x in acks]
    newest = [0] * len(acks)  # the highest version acknowledged by then
    for i, (_, v) in enumerate(acks):
        newest[i] = max(v, newest[i - 1] if i else 0)
    mark = {w[0]: w[1] for w in writes}
    unflagged_old, flagged, ages, worst, unasked = 0, 0, [], None, 0
    by_kind = {k: 0 for k in KINDS}
    fresh_versions = set()
    for s, e, kind, v, stale in reads:
        if v is None:
            continue
        by_kind[kind] += 1
        i = bisect.bisect_left(ack_t, s) - 1
        due = newest[i] if i >= 0 else 0
        if not stale:
            fresh_versions.add(v)
            if v < due:
                unflagged_old += 1
                if worst is None or due - v > worst[1] - worst[0]:
                    worst = (v, due, kind)
            continue
        flagged += 1
        if kind != "stale_ok":
            unasked += 1
        if v + 1 in mark:  # superseded by write v+1, marked at mark[v+1]
            ages.append(((s - mark[v + 1]) * 1000.0, v, kind))
    nreads = sum(by_kind.values())
    summary = ("%d reads with a value (%s), %d writes, %d flagged, %d "
               "unflagged older than an acknowledged write%s" %
               (nreads, ", ".join("%s %d" % kv for kv in by_kind.items()),
                len(writes), flagged, unflagged_old,
                "" if worst is None else
                " (worst: version %d read by %s after %d acknowledged)" %
                (worst[0], worst[2], worst[1])))
    opened = sum(d["opened"] for d in runs)
    if a.control:
        return verdict(
            "swr_control_stale_as_fresh_shows_unflagged",
            unflagged_old > 0 and len(writes) >= 15 and nreads >= 200,
            "readers taking a stale item as fresh returned no old value "
            "unflagged: the check cannot see the violation (%s)" % summary,
            summary)
    ok = True
    bound = a.max_stale * 1000.0 + AGE_SLACK_MS
    ok &= verdict(
        "swr_no_stale_value_unflagged",
        unflagged_old == 0 and unasked == 0 and len(writes) >= 15 and
        nreads >= 200 and min(by_kind.values()) >= 20,
        "%s, %d flagged to callers that did not allow stale; want 0 old "
        "unflagged, 0 unasked, at least 15 writes, 200 reads, 20 of each "
        "kind" % (summary, unasked), summary)
    oldest = max(ages) if ages else (0.0, 0, "")
    # memcached's clock counts whole seconds: a mark of S s ends between
    # S - 1 and S s after it, so the oldest serve must pass half of S - 1
    ok &= verdict(
        "swr_flagged_never_older_than_max_stale",
        ages and oldest[0] <= bound and
        oldest[0] >= (a.max_stale - 1) * 500.0 and flagged >= 20,
        "%d flagged; the oldest served %.0f ms after the write that "
        "superseded it (version %d, %s); want at least 20, none past "
        "%.0f ms (max_stale %d s + %d ms for memcached's clock) and the "
        "oldest past half of max_stale - 1 s (else the long fill never "
        "kept it stale)" % (flagged, oldest[0], oldest[1], oldest[2], bound,
                    a.max_stale, AGE_SLACK_MS),
        "%d flagged, oldest %.0f ms after the superseding write (bound "
        "%.0f)" % (flagged, oldest[0], bound))
    quick = [w[0] for w in writes if w[3] == 40 and w[0] + 1 in mark and
             mark[w[0] + 1] - w[2] >= 0.2]
    refilled = sum(v in fresh_versions for v in quick)
    ok &= verdict(
        "swr_lease_winner_refills",
        quick and refilled * 2 >= len(quick),
        "of %d writes followed by 200 ms without one, %d were read fresh "
        "(refilled); want at least half" % (len(quick), refilled),
        "%d of %d writes refilled and read fresh before the next; stats "
        "%s" % (refilled, len(quick),
                {k: runs[0]["stats"].get(k, 0) + (runs[1]["stats"].get(
                    k, 0) if len(runs) > 1 else 0)
                 for k in ("fills", "lease_wins", "stale_serves",
                           "stale_misses", "hand_backs", "stale_marks")}))
    ok &= verdict(
        "swr_every_call_answered", not errors and opened >= 2,
        "errors %s, handles %d" % (errors, opened),
        "%d handles, no errors" % opened)
    return ok


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--spec", required=True)
    r.add_argument("--key", default="swr:hot")
    r.add_argument("--db", required=True)
    r.add_argument("--threads", type=int, default=6)
    r.add_argument("--seconds", type=float, default=10)
    r.add_argument("--writer", action="store_true")
    r.add_argument("--max-stale", type=int, default=3)
    r.add_argument("--ready")
    r.add_argument("--go")
    c = sub.add_parser("check")
    c.add_argument("--max-stale", type=int, default=3)
    c.add_argument("--control", action="store_true")
    c.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.cmd == "run":
        run(a)
        return 0
    try:
        return 0 if check(a) else 1
    except Exception as e:  # a checker that fails is a FAIL, never a pass
        print("FAIL swr_check: the checker failed: %r" % (e,))
        return 1


if __name__ == "__main__":
    sys.exit(main())
