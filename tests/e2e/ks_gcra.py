#!/usr/bin/python3
"""ks_gcra.py - was each verdict of a rate limit one its bucket could give?

A limited key's bucket is a GCRA (bpf/ks_limit.h ks_limit_take, the same
in the datapath and libkeysteer): a call at `now` is allowed when the
theoretical arrival time `tat` is at most `tau` ahead of it, and then
moves `tat` to max(tat, now) + interval. The test cannot see the clock
reading the library took for a call, only that it lies between the
monotonic times just before and just after the call (the same clock,
CLOCK_MONOTONIC). So `tat` is known as an interval [lo, hi], carried
through the calls:

- allowed: tat <= c + tau, possible only when lo <= after + tau; then
  tat becomes max(tat, c) + interval, within [max(lo, before),
  max(hi', after)] + interval, where hi' = min(hi, after + tau) (what
  the verdict says of tat);
- refused: tat > c + tau, possible only when hi > before + tau; tat
  stays, and is now known to be above before + tau.

A verdict outside what is possible is a fault of the limiter, whatever
the machine's load: a process held off the CPU for a second makes fewer
calls, never a wrong verdict. The allowed count over a fixed time is not
such a figure (the client's pace sets it), which is why the test asks
this instead (test_client_limit.sh).

check(calls, interval_s, tau_s, full_before) -> None or the first
impossible verdict, as text. calls: [(before, after, allowed)] in the
order made; full_before: a time by which the bucket was full (tat at or
before it), e.g. the end of the rest before the first call; None for a
bucket the first call makes, which a view following etcd starts cold
(one call, then the rate: client/limit.c ksc_limit_take_cold). Both sides
get EPS_S of room: the library's clock is integer nanoseconds, Python's
a float of the same clock.
"""

EPS_S = 1e-6


def check(calls, interval_s, tau_s, full_before=None):
    lo, hi = float("-inf"), full_before
    if full_before is None and calls:
        # a new bucket, cold (client/limit.c ksc_limit_take_cold): tat
        # is the first call's own clock + tau, so that call is allowed
        # and tat then its clock + tau + interval
        before, after, allowed = calls[0]
        if not allowed:
            return ("call 0 at %.6f..%.6f refused: a new bucket lets its "
                    "first call through" % (before, after))
        lo, hi = before + tau_s + interval_s, after + tau_s + interval_s
        calls = [None] + list(calls[1:])
    for i, call in enumerate(calls):
        if call is None:
            continue
        before, after, allowed = call
        if allowed:
            if lo > after + tau_s + EPS_S:
                return ("call %d at %.6f..%.6f allowed, but tat was at least "
                        "%.6f: more than tau %.3f s ahead (over the rate)"
                        % (i, before, after, lo, tau_s))
            hi = min(hi, after + tau_s)
            lo, hi = max(lo, before) + interval_s, max(hi, after) + interval_s
        else:
            if hi <= before + tau_s - EPS_S:
                return ("call %d at %.6f..%.6f refused, but tat was at most "
                        "%.6f: within tau %.3f s (a token was there)"
                        % (i, before, after, hi, tau_s))
            lo = max(lo, before + tau_s)
    return None


def controls(calls, interval_s, tau_s, full_before):
    """The check on two broken copies of a real run's calls: its first
    allowed call turned refused (the bucket was full, or new: a refusal
    no bucket gives), and that call followed at once by as many more allowed calls
    of the same times as the bucket could not hold (the burst, and one
    more for each interval the call took). Returns the copies the check
    let pass (empty: both caught); a run without an allowed call, or
    whose own calls the check refuses, has no copies: both "let pass"."""
    first = next((i for i, c in enumerate(calls) if c[2]), None)
    if first is None or check(calls, interval_s, tau_s, full_before):
        return ["a refusal of a full bucket (no copy made)",
                "calls over the burst (no copy made)"]
    missed = []
    b, a, _ = calls[first]
    refusal = calls[:first] + [(b, a, False)] + calls[first + 1:]
    extra = int(round(tau_s / interval_s)) + 2 + int((a - b) / interval_s)
    over = calls[:first + 1] + [(b, a, True)] * extra + calls[first + 1:]
    for name, bad in (("a refusal of a full bucket", refusal),
                      ("calls over the burst", over)):
        if check(bad, interval_s, tau_s, full_before) is None:
            missed.append(name)
    return missed
