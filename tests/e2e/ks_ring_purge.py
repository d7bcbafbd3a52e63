#!/usr/bin/python3
"""ks_ring_purge.py - the plain clients of test_ring_purge.sh: pylibmc
(libmemcached's ketama, {"ketama_weighted": True}) writes, pymemcache
reads each key straight from the shard `agent ring lookup` names.

  ks_ring_purge.py write SERVERS VALUE < KEYS
      pylibmc over SERVERS ("h:p,h:p,...") sets every key (one a line) to
      "VALUE:KEY"; prints "written N".
  ks_ring_purge.py placed LOOKUP
      LOOKUP is `agent ring lookup`'s output (key TAB index TAB host:port)
      for the ring pylibmc wrote with: every key read from every server
      of the file; prints "placed N misplaced M absent A" (misplaced: held
      by another server than the one LOOKUP names, i.e. pylibmc and
      keysteer's ring disagree; absent: on no server).
  ks_ring_purge.py left LOOKUP_OLD LOOKUP_NEW VALUE
      for the keys whose owner differs between the two lookups: how many
      the old owner still holds with value "VALUE:KEY"; prints
      "moved N left L".
  ks_ring_purge.py final LOOKUP_OLD LOOKUP_MID
      after the ring went OLD -> MID -> OLD: every key read from its OLD
      owner; prints "moved N stale S lost L other O" where stale counts
      moved keys read as v1 (an acknowledged v2 undone), lost counts keys
      that never moved and are not v1 any more, other any other value.
"""
import sys

import pylibmc
from pymemcache.client.base import Client
from ring_lookup import owners as lookup


def conn(hp):
    host, port = hp.rsplit(":", 1)
    return Client((host, int(port)), connect_timeout=5, timeout=10)


def get_all(hp, keys):
    """{key: value str} of the keys hp holds, in batches."""
    c = conn(hp)
    out = {}
    keys = list(keys)
    for i in range(0, len(keys), 100):
        got = c.get_many(keys[i:i + 100])
        out.update({k: v.decode() for k, v in got.items()})
    c.close()
    return out


def by_owner(owner):
    groups = {}
    for k, hp in owner.items():
        groups.setdefault(hp, []).append(k)
    return groups


def cmd_write(servers, value):
    keys = [line.strip() for line in sys.stdin if line.strip()]
    c = pylibmc.Client(servers.split(","), behaviors={"ketama_weighted": True})
    n = 0
    for k in keys:
        if c.set(k, "%s:%s" % (value, k)):
            n += 1
    c.disconnect_all()
    print("written %d" % n)


def cmd_placed(path):
    owner = lookup(path)
    servers = sorted(set(owner.values()))
    held = {}
    for hp in servers:
        for k in get_all(hp, owner):
            held.setdefault(k, []).append(hp)
    placed = sum(1 for k, hp in owner.items() if held.get(k) == [hp])
    absent = sum(1 for k in owner if k not in held)
    print("placed %d misplaced %d absent %d" %
          (placed, len(owner) - placed - absent, absent))


def cmd_left(old_path, new_path, value):
    old, new = lookup(old_path), lookup(new_path)
    moved = {k: old[k] for k in old if new[k] != old[k]}
    left = 0
    for hp, keys in by_owner(moved).items():
        got = get_all(hp, keys)
        left += sum(1 for k in keys if got.get(k) == "%s:%s" % (value, k))
    print("moved %d left %d" % (len(moved), left))


def cmd_final(old_path, mid_path):
    old, mid = lookup(old_path), lookup(mid_path)
    stale = lost = other = 0
    for hp, keys in by_owner(old).items():
        got = get_all(hp, keys)
        for k in keys:
            v = got.get(k)
            if mid[k] != old[k]:
                if v == "v1:" + k:
                    stale += 1
                elif v is not None:
                    other += 1
            elif v != "v1:" + k:
                if v is None:
                    lost += 1
                else:
                    other += 1
    moved = sum(1 for k in old if mid[k] != old[k])
    print("moved %d stale %d lost %d other %d" % (moved, stale, lost, other))


def main():
    a = sys.argv[1:]
    if a[:1] == ["write"] and len(a) == 3:
        cmd_write(a[1], a[2])
    elif a[:1] == ["placed"] and len(a) == 2:
        cmd_placed(a[1])
    elif a[:1] == ["left"] and len(a) == 4:
        cmd_left(a[1], a[2], a[3])
    elif a[:1] == ["final"] and len(a) == 3:
        cmd_final(a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
