#!/usr/bin/python3
"""demo_ring.py - the plain memcached client of demo_ring.sh, and what it
says about the agents' reports and the fleet view.

The client is pymemcache (Debian's python3-pymemcache) with no ring of its
own: each key goes to the shard `agent ring lookup` names for it (LOOKUP
files are that command's output, key TAB index TAB host:port), which is
where libmemcached's ketama, and every client compatible with it, puts it.
Writes are acknowledged (noreply off): a value written is one memcached
said it stored.

  demo_ring.py write LOOKUP VALUE [HOST:PORT]
      every key of LOOKUP (only those HOST:PORT owns, when given) set to
      "VALUE:KEY" on its owner; prints "written N"
  demo_ring.py held LOOKUP_OLD LOOKUP_NEW VALUE
      of the keys the change moved, how many their old owner still holds
      as "VALUE:KEY"; prints "moved N held H"
  demo_ring.py final LOOKUP_OLD LOOKUP_MID
      after the ring went OLD -> MID -> OLD, every key read from its owner;
      prints "moved N stale S missing M lost L": stale, moved keys that
      read v1 again (their v2 was acknowledged on the MID owner, then
      undone); missing, moved keys that miss (the application reads them
      from its database: correct); lost, keys that never moved and do not
      read v1 (should be none)
  demo_ring.py agents REV ring|purged REPORT...
      exit 0 when every REPORT (`agent report --json`) runs ring version
      REV and, with purged, has ended a purge pass for REV
  demo_ring.py field REPORT PATH
      one field of a JSON file ("ring.purge.state")
  demo_ring.py purging FLEET N
      exit 0 when `agent fleet --json` (the file FLEET) marks N shards
      purging
  demo_ring.py flush HOST:PORT...
      flush_all on each: memcached empty, as if fresh
  demo_ring.py summary FINAL_OFF FINAL_ON
      the closing lines, from the two "final" lines; a WARNING line for
      each part of the story that did not come out as told
"""
import json
import signal
import sys

from pymemcache.client.base import Client

BATCH = 100  # keys a request: a few kB of reply, no huge buffers


def owners(path, only=None):
    """{host:port: [key, ...]} of a LOOKUP file (one host's keys with only)."""
    found = {}
    with open(path) as f:
        for line in f:
            key, _, hp = line.rstrip("\n").split("\t")
            if only in (None, hp):
                found.setdefault(hp, []).append(key)
    return found


def placement(path):
    return {k: hp for hp, keys in owners(path).items() for k in keys}


def shard(hp):
    host, port = hp.rsplit(":", 1)
    return Client((host, int(port)), connect_timeout=5, timeout=10)


def chunks(keys):
    return (keys[i:i + BATCH] for i in range(0, len(keys), BATCH))


def read(placed):
    """{key: value} of the keys of {key: host:port}, each read from its host."""
    by_host = {}
    for k, hp in placed.items():
        by_host.setdefault(hp, []).append(k)
    values = {}
    for hp, keys in by_host.items():
        c = shard(hp)
        for part in chunks(keys):
            values.update((k, v.decode()) for k, v in c.get_many(part).items())
        c.close()
    return values


def write(lookup, value, only=None):
    n = 0
    for hp, keys in owners(lookup, only).items():
        c = shard(hp)
        for part in chunks(keys):
            failed = c.set_many({k: "%s:%s" % (value, k) for k in part}, noreply=False)
            n += len(part) - len(failed)
        c.close()
    print("written %d" % n)
    return 0


def moved_from(old_path, new_path):
    """{key: its old owner} of the keys whose owner changed."""
    old, new = placement(old_path), placement(new_path)
    return old, {k: hp for k, hp in old.items() if new[k] != hp}


def held(old_path, new_path, value):
    _, moved = moved_from(old_path, new_path)
    got = read(moved)
    print("moved %d held %d" % (len(moved), sum(got.get(k) == "%s:%s" % (value, k) for k in moved)))
    return 0


def final(old_path, mid_path):
    old, moved = moved_from(old_path, mid_path)
    got = read(old)
    stale = sum(got.get(k) == "v1:" + k for k in moved)
    missing = sum(k not in got for k in moved)
    lost = sum(got.get(k) != "v1:" + k for k in old if k not in moved)
    print("moved %d stale %d missing %d lost %d" % (len(moved), stale, missing, lost))
    return 0


def field(doc, path):
    for name in path.split("."):
        doc = doc.get(name) if isinstance(doc, dict) else None
    return doc


def agents(rev, what, *reports):
    for path in reports:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return 1  # no report yet (the agent is starting, or busy)
        if field(doc, "ring.version") != int(rev):
            return 1
        if what == "purged" and (field(doc, "ring.purge.ring_version") != int(rev)
                                 or (field(doc, "ring.purge.passes") or 0) < 1):
            return 1
    return 0


def print_field(path, name):
    with open(path) as f:
        print(field(json.load(f), name))
    return 0


def purging(path, n):
    try:
        with open(path) as f:
            shards = json.load(f)["shards"]
    except (OSError, ValueError, KeyError):
        return 1
    return 0 if sum(bool(s.get("purging")) for s in shards) == int(n) else 1


def flush(*servers):
    for hp in servers:
        shard(hp).flush_all(noreply=False)
    return 0


def summary(off, on):
    off, on = (dict(zip(line.split()[::2], map(int, line.split()[1::2]))) for line in (off, on))
    print("without the purge: %d of %d moved keys read their old value v1 again, though v2"
          " was acknowledged on E" % (off["stale"], off["moved"]))
    print("with the purge:    %d of %d (%d miss: the application reads them from its database"
          " and writes them back)" % (on["stale"], on["moved"], on["missing"]))
    print("keys that never moved and lost their value: %d without, %d with"
          % (off["lost"], on["lost"]))
    if off["stale"] == 0:
        print("demo: WARNING: without the purge no old value came back: the demo shows nothing")
    if on["stale"]:
        print("demo: WARNING: with the purge %d old values came back" % on["stale"])
    if off["lost"] or on["lost"]:
        print("demo: WARNING: keys that never moved lost their value")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the demo's cleanup, no traceback
    MODES = {"write": write, "held": held, "final": final, "agents": agents,
             "purging": purging, "field": print_field, "flush": flush, "summary": summary}
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.exit("usage: demo_ring.py write|held|final|agents|field|purging|flush|summary ARGS..."
                 " (see its docstring)")
    sys.exit(MODES[sys.argv[1]](*sys.argv[2:]))
