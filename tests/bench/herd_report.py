#!/usr/bin/python3
"""herd_report.py - the tables of `make bench-herd` (tests/bench/herd_bench.sh,
docs/benchmarks.md) from the runs' summaries (ks_herd_check.py summary, one
TAG.sum a run in DIR).

    herd_report.py DIR THREADS_PER_HOST SECONDS [JSON_OUT]
"""
import json
import os
import sys


def ms(x):
    return "%.1f ms" % (x * 1e3)


def refresh_table(s):
    """Early refresh amid the Zipf load: a reader sees an expiry when its
    call waits for another's fill or wins the lease on a miss (a win on a
    value, the refresh, is no expiry). The other keys' calls go through
    the same handles, so their misses would count too: none when their
    fills are 0."""
    st = s["stats"]
    seen = (st.get("lease_waits", 0) + st.get("lease_wins", 0)
            - st.get("refreshes", 0))
    print("\nThe hot key with early refresh on (TTL 3 s, refresh 2 s), "
          "amid the Zipf load:\n")
    print("| callers | hot-key calls | expiries seen by readers | waits | "
          "lease wins on a miss | fills | refreshes won | other keys' "
          "fills | timeouts | errors | p99 call | max call |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
          "---: | ---: | ---: |")
    print("| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s |" % (
        s["handles"], s["calls"], seen, st.get("lease_waits", 0),
        st.get("lease_wins", 0) - st.get("refreshes", 0), s["fills"],
        st.get("refreshes", 0), s["bg_fills"], st.get("fetch_timeouts", 0),
        sum(s["errors"].values()), ms(s["p99_call_s"]), ms(s["max_call_s"])))


def main():
    d, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    runs = {}
    for tag in ("plain", "fetch", "plain_amid", "fetch_amid", "plain_del",
                "fetch_del", "fetch_swr", "fetch_refresh"):
        path = os.path.join(d, tag + ".sum")
        if os.path.exists(path):  # herd_bench.sh --alone: the first two
            with open(path) as f:
                runs[tag] = json.load(f)

    print("One hot key expiring (1 s TTL):\n")
    print("| pattern | traffic | callers | fills | expiries seen | fills "
          "per expiry | hot-key calls | errors | p99 call | p99 call during "
          "an expiry | max call |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
          "---: | ---: |")
    for tag, name, traffic in (
            ("plain", "plain get/fill/set", "the hot key alone"),
            ("fetch", "get_or_fill", "the hot key alone"),
            ("plain_amid", "plain get/fill/set", "1% of a Zipf load"),
            ("fetch_amid", "get_or_fill", "1% of a Zipf load")):
        if tag not in runs:
            continue
        s = runs[tag]
        print("| %s | %s | %d | %d | %d | %.2f | %d | %d | %s | %s | %s |" % (
            name, traffic, s["handles"], s["fills"], s["expiries_seen"],
            s["fills_per_expiry"], s["calls"], sum(s["errors"].values()),
            ms(s["p99_call_s"]), ms(s["p99_call_during_expiry_s"]),
            ms(s["max_call_s"])))

    if "fetch_swr" not in runs:
        print("fetch library stats: %s" % json.dumps(runs["fetch"]["stats"]))
        return
    print("\nThe Zipf load beside it (the other keys' calls):\n")
    print("| run | all calls | hot key's share | other keys' fills | p99 "
          "call | p99 call during an expiry or invalidation | max call |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for tag in ("plain_amid", "fetch_amid", "plain_del", "fetch_del",
                "fetch_swr"):
        s = runs[tag]
        print("| %s | %d | %.2f%% | %d | %s | %s | %s |" % (
            tag, s["calls"] + s["bg_calls"], s["hot_share"] * 100,
            s["bg_fills"], ms(s["bg_p99_call_s"]),
            ms(s["bg_p99_call_during_expiry_s"]), ms(s["bg_max_call_s"])))

    print("\nThe hot key invalidated every second (TTL 60 s), amid the Zipf "
          "load:\n")
    print("| writer, readers | invalidations | fills | fills per "
          "invalidation | hot-key values | flagged stale | staleness p50 | "
          "staleness max | bound (max_stale) | unflagged older than an "
          "acknowledged write | p99 call during an invalidation | errors |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
          "---: | ---: | ---: |")
    for tag, name in (
            ("plain_del", "delete, plain get/fill/set"),
            ("fetch_del", "delete, get_or_fill"),
            ("fetch_swr", "delete(max_stale), get_or_fill(allow_stale)")):
        s = runs[tag]
        print("| %s | %d | %d | %.2f | %d | %d | %.0f ms | %.0f ms | %s | "
              "%d | %s | %d |" % (
                  name, s["invalidations"], s["fills"],
                  s["fills_per_invalidation"], s["values"], s["flagged"],
                  s["staleness_p50_ms"], s["staleness_max_ms"],
                  "%d s" % s["max_stale_s"] if s["max_stale_s"] else "-",
                  s["unflagged_older_than_a_write"],
                  ms(s["p99_call_during_expiry_s"]),
                  sum(s["errors"].values())))
    for tag in ("plain_del", "fetch_del", "fetch_swr"):
        took = runs[tag]["invalidation_call_ms"]
        print("%s: the writer's delete calls took %s ms; versions never "
              "read fresh: %s" % (
                  tag, " ".join("%.1f" % x for x in took),
                  runs[tag]["writes_never_read_fresh"] or "none"))
    ages = runs["fetch_swr"]["staleness_ms"]
    bounds = (25, 50, 100, 250, 500, 1000, 2000)
    print("\nStaleness of each flagged value (ms after the write that "
          "superseded it began): %s; over %d ms: %d" % (
              ", ".join("<= %d: %d" % (b, sum(
                  1 for x in ages if lo < x <= b)) for lo, b in
                  zip((float("-inf"),) + bounds, bounds)),
              bounds[-1], sum(1 for x in ages if x > bounds[-1])))
    if "fetch_refresh" in runs:
        refresh_table(runs["fetch_refresh"])
    for tag in ("fetch", "fetch_amid", "fetch_swr", "fetch_refresh"):
        if tag not in runs:
            continue
        print("%s library stats: %s" % (tag, json.dumps(runs[tag]["stats"])))
    if len(sys.argv) > 4 and sys.argv[4]:
        with open(sys.argv[4], "w") as f:
            json.dump({"threads_per_host": threads, "seconds": seconds,
                       "runs": runs}, f)


if __name__ == "__main__":
    main()
