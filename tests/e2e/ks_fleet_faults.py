#!/usr/bin/python3
"""ks_fleet_faults.py - small readers for test_fleet_faults.sh.

    ks_fleet_faults.py hosts          etcdctl get -w json (stdin) of hosts/:
                                      one "SELF MOD_REVISION LEASE" a line
    ks_fleet_faults.py hot            etcdctl get -w json (stdin) of hot/:
                                      the owner of each entry that parses
    ks_fleet_faults.py counted        etcdctl get -w json (stdin) of the
                                      load documents: the owner of each key
                                      listed as only counted
    ks_fleet_faults.py at REV DIGEST  etcdctl get --rev -w json (stdin) of
                                      the ring: exit 0 if the key is at
                                      mod_revision REV with that digest
    ks_fleet_faults.py bad-digest     a ring document (stdin) with its
                                      digest replaced by 0123456789abcdef
    ks_fleet_faults.py report FILE    agent report --json: "SEQ INTERVAL_MS
                                      OPS VERSION DIGEST RELOAD_ERRORS"
                                      (OPS: every request the datapath
                                      counted, all classes)
    ks_fleet_faults.py load FILE      ks_load --json: "FAILED OPS"
    ks_fleet_faults.py fleet FILE     agent fleet --json: "VALID_HOSTS
                                      REV,REV,... WITHOUT,... HOT_REFUSED"
                                      (HOT_REFUSED "none" if not there)

Runs with Debian's /usr/bin/python3.
"""
import base64
import json
import sys


def kvs():
    try:
        return json.load(sys.stdin).get("kvs", [])
    except ValueError:
        return []


def text(b64):
    return base64.b64decode(b64 or "").decode("utf-8", "replace")


def cmd_hosts(_):
    for kv in kvs():
        print(text(kv["key"]).rsplit("/", 1)[1], kv["mod_revision"],
              kv.get("lease", 0))


def cmd_hot(_):
    for kv in kvs():
        try:
            doc = json.loads(text(kv.get("value")))
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("owner"), str):
            print(doc["owner"])


def cmd_counted(_):
    """The owner of each key a load document lists as only counted (an
    item with its entry: no hot/ entry, docs/fleet.md "hot/HASH")."""
    for kv in kvs():
        try:
            doc = json.loads(text(kv.get("value")))
        except ValueError:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("hot"), list):
            continue
        for item in doc["hot"]:
            if isinstance(item, dict) and "entry" in item:
                print(doc.get("self"))


def cmd_at(args):
    rows = kvs()
    if not rows or str(rows[0]["mod_revision"]) != args[0]:
        return 1
    try:
        return 0 if json.loads(text(rows[0]["value"]))["digest"] == args[1] else 1
    except (ValueError, KeyError, TypeError):
        return 1


def cmd_bad_digest(_):
    doc = json.load(sys.stdin)
    doc["digest"] = "0123456789abcdef"
    print(json.dumps(doc))


def cmd_report(args):
    with open(args[0]) as f:
        r = json.load(f)
    ring = r.get("ring") or {}
    print(r["seq"], int(r["interval_measured_ms"]),
          sum(v["requests"] for v in r["totals"]["classes"].values()),
          ring.get("version", "-"), ring.get("digest", "-"),
          ring.get("reload_errors", "-"))


def cmd_load(args):
    with open(args[0]) as f:
        d = json.load(f)
    print(sum(o["errors"] for o in d["ops"]), sum(o["ops"] for o in d["ops"]))


def cmd_fleet(args):
    with open(args[0]) as f:
        d = json.load(f)
    hosts = [h for h in d["hosts"] if h["valid"]]
    print(len(hosts),
          ",".join(str(h["ring_revision"]) for h in hosts) or "-",
          ",".join(d["shards_without_agent"]) or "-",
          d["hot_refused"]["count"])


def main():
    cmds = {"hosts": cmd_hosts, "hot": cmd_hot, "counted": cmd_counted,
            "at": cmd_at,
            "bad-digest": cmd_bad_digest, "report": cmd_report,
            "load": cmd_load,
            "fleet": cmd_fleet}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    return cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
