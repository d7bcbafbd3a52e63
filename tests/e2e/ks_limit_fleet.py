#!/usr/bin/python3
"""ks_limit_fleet.py - one client process of test_client_limit_fleet.sh:
gets of one limited key through libkeysteer (its Python adapter) at an
offered rate for a time, with its own view (one per process, as an
application server has). Writes JSON: the monotonic times of the calls let
through (CLOCK_MONOTONIC is the host's, so the processes' times compare),
the refusals, and the bucket's share over time (keysteer_limit_stat).

  ks_limit_fleet.py SPEC KEY RATE SECONDS OUT [START_FILE [GO_FILE [STOP_FILE]]]

START_FILE: written once the first call is made (the script waits for it,
not for a time, before it starts the next process). GO_FILE: the client
open, OUT.ready is written and the calls wait for GO_FILE to exist (120 s
at most), so processes that a loaded machine started seconds apart run
their SECONDS together. STOP_FILE: the calls end when it exists (SECONDS
then bounds the run). OUT.share holds the bucket's share whenever it
changes, for a script that waits for it.
"""
import json
import os
import sys
import time

from keysteer_client import Client, RateLimited


def main():
    spec, key, rate, secs, out = sys.argv[1:6]
    start_file = sys.argv[6] if len(sys.argv) > 6 else None
    go_file = sys.argv[7] if len(sys.argv) > 7 else None
    stop_file = sys.argv[8] if len(sys.argv) > 8 else None
    rate, secs = float(rate), float(secs)
    c = Client(spec)
    if go_file:
        with open(out + ".ready", "w") as f:
            f.write("ready\n")
        deadline = time.monotonic() + 120
        while not os.path.exists(go_file):
            if time.monotonic() > deadline:
                sys.exit("ks_limit_fleet: %s never came" % go_file)
            time.sleep(0.01)
    allowed, shares = [], []
    refused = errors = 0
    why = []
    last_share = None
    t0 = time.monotonic()
    end = t0 + secs
    base = t0
    n = 0
    while True:
        now = time.monotonic()
        if now >= end or (stop_file and n % 25 == 0 and
                          os.path.exists(stop_file)):
            break
        # paced; a stall of this loaded machine is not caught up (the
        # schedule moves on): a catch-up would send the missed calls in
        # one burst, of which the bucket lets only its burst through,
        # and the control would show the stall, not its rate
        due = base + n / rate
        if due > now:
            time.sleep(min(due - now, 0.01))
            continue
        if now - due > 0.05:
            base = now - n / rate
        n += 1
        try:
            c.get(key)
            allowed.append(time.monotonic())
        except RateLimited:
            refused += 1
        except OSError as e:
            errors += 1
            if len(why) < 5:
                why.append(str(e))
        if n == 1 and start_file:
            with open(start_file, "w") as f:
                f.write("%f\n" % now)
        st = c.limit_stat(key)
        share = st["share"] if st else None
        if share != last_share:
            shares.append([time.monotonic(), share])
            last_share = share
            with open(out + ".share.tmp", "w") as f:
                f.write("%s\n" % share)
            os.replace(out + ".share.tmp", out + ".share")
    st = c.stats()
    closing = time.monotonic()
    c.close()
    json.dump({"start": t0, "closing": closing, "end": time.monotonic(), "calls": n,
               "allowed": allowed, "refused": refused, "errors": errors,
               "limit_refused": st["limit_refused"],
               "limit_allowed": st["limit_allowed"], "shares": shares,
               "errors_why": why,
               "reg_puts": st["limit_reg_puts"],
               "reg_errors": st["limit_reg_errors"]},
              open(out, "w"))


if __name__ == "__main__":
    main()
