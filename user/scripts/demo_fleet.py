#!/usr/bin/python3
"""demo_fleet.py - what demo_fleet.sh says about `agent fleet --json`
documents and mc_stats.py snapshots. Standard library only.

  demo_fleet.py ready FILE KEY         exit 0 when all 4 shards are up with
                                       reads and KEY has a hot/ entry
  demo_fleet.py story FILE KEY OWNER   step 2 checked: a WARNING line for
                                       each part of the story that did not
                                       happen (OWNER not the busiest, max/mean
                                       not well above 1, KEY not the top key,
                                       no hot/ entry from OWNER), else one
                                       line saying it did
  demo_fleet.py armed FILE KEY N       exit 0 when KEY is armed on N replicas
  demo_fleet.py spread KEY OWNER BEFORE AFTER FLEET...
                                       each host's gets/s as received (the
                                       FLEET documents' reads/s, averaged) and
                                       as served (cmd_get between the BEFORE
                                       and AFTER snapshots), with WARNING
                                       lines when the replicas do not serve
                                       KEY's reads or OWNER still does
  demo_fleet.py load FILE              ks_load --json's summary in one line
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def hot(doc, key):
    return next((h for h in doc.get("hot", []) if h.get("key") == key), None)


def ready(path, key):
    d = load(path)
    up = [s for s in d["shards"] if s["agent"] == "up" and s["reads_per_s"]]
    return 0 if len(up) == 4 and hot(d, key) else 1


def story(path, key, owner):
    d = load(path)
    warn = []
    if d["busiest"] != owner:
        warn.append("the busiest shard is %s, not %s which owns %s" % (d["busiest"], owner, key))
    mom = d["reads_per_s"]["max_over_mean"] or 0
    if mom < 1.5:
        warn.append("max/mean is %.2f, not well above 1" % mom)
    top = d["top_keys"][0].get("key") if d["top_keys"] else None
    if top != key:
        warn.append("the fleet's top key is %s, not %s" % (top, key))
    h = hot(d, key)
    if not h:
        warn.append("%s has no hot/ entry" % key)
    elif h["owner"] != owner:
        warn.append("the hot/ entry of %s names %s as its owner, not %s" % (key, h["owner"], owner))
    for w in warn:
        print("demo: WARNING: " + w)
    if not warn:
        print("as told: %s is the busiest at %.2f x the mean, %s tops the fleet's keys"
              " and has a hot/ entry from its owner (%s, %d copies)"
              % (owner, mom, key, h["state"], h["copies"]))
    return 0


def armed(path, key, n):
    h = hot(load(path), key)
    return 0 if h and h["state"] == "armed" and len(h["replicas"]) == int(n) else 1


def ratio(v):
    """busiest / mean"""
    return max(v) / (sum(v) / len(v)) if sum(v) else 0


def spread(key, owner, before, after, *fleet):
    before, after, docs = load(before), load(after), [load(p) for p in fleet]
    secs = after["time"] - before["time"]
    served = {hp: (int(after["servers"][hp]["cmd_get"]) - int(before["servers"][hp]["cmd_get"])) / secs
              for hp in after["servers"]}
    recv = {}
    for s in docs[0]["shards"]:
        rates = [t["reads_per_s"] or 0 for d in docs for t in d["shards"] if t["name"] == s["name"]]
        recv[s["name"]] = sum(rates) / len(rates)
    flash = sum(t["reads_per_s"] for d in docs for t in d["top_keys"] if t.get("key") == key) / len(docs)
    print("  %-7s %-20s %14s %14s" % ("", "", "received/s", "served/s"))
    print("  %-7s %-20s %14s %14s" % ("", "", "(agent fleet)", "(cmd_get)"))
    for hp, n in served.items():
        kind = "shard" if hp in recv else "replica"
        r = "%.0f" % recv[hp] if hp in recv else "-"
        print("  %-7s %-20s %14s %14.0f%s" % (kind, hp, r, n, "   <- owns " + key if hp == owner else ""))
    reps = [n for hp, n in served.items() if hp not in recv]
    print("  busiest shard / mean: %.2f as received, %.2f as served"
          % (ratio(list(recv.values())), ratio([served[hp] for hp in recv])))
    print("  %s receives %.0f gets/s and serves %.0f: %s's %.0f reads/s go on to the %d replicas,"
          " which serve %.0f" % (owner, recv[owner], served[owner], key, flash, len(reps), sum(reps)))
    if sum(reps) < 0.8 * flash:
        print("demo: WARNING: the replicas serve %.0f gets/s, less than 80%% of %s's %.0f reads/s"
              % (sum(reps), key, flash))
    if served[owner] > recv[owner] - 0.8 * flash:
        print("demo: WARNING: %s still serves %.0f of the %.0f gets/s it receives: %s is not taken off it"
              % (owner, served[owner], recv[owner], key))
    return 0


def load_summary(path):
    d = load(path)
    n = {f: sum(o[f] for o in d["ops"]) for f in ("ops", "hits", "timeouts", "errors")}
    first = d["first_steered_ms"]
    print("ks_load: %d gets in %.1f s, %d hits, %d answered by a replica (the first %s after"
          " the start), %d timeouts, %d errors"
          % (n["ops"], d["duration_s"], n["hits"], d["steered"],
             "none" if first is None else "%.1f s" % (first / 1000.0), n["timeouts"], n["errors"]))
    return 0


if __name__ == "__main__":
    MODES = {"ready": ready, "story": story, "armed": armed, "spread": spread, "load": load_summary}
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.exit("usage: demo_fleet.py ready|story|armed|spread|load ARGS... (see its docstring)")
    sys.exit(MODES[sys.argv[1]](*sys.argv[2:]))
