#!/usr/bin/python3
"""ks_watch_log.py - the events an `etcdctl watch -w json` wrote to a file
(one JSON object a line per watch response), for the e2e scripts'
heredocs: `sys.path.insert(0, DIR); from ks_watch_log import events`.

As a program it also writes such a file with the time each line arrived,
for a test that asks when a key changed (not when a later poll saw it):

  ks_watch_log.py stamp ENDPOINTS PREFIX REV   etcdctl's watch of PREFIX
      from revision REV, each line as "WALL_MS JSON", until SIGTERM/SIGINT
  ks_watch_log.py first-delete FILE SUFFIX [AFTER_MS]   the WALL_MS of
      the first delete of a key ending in SUFFIX (that arrived at or after
      AFTER_MS, when given), or nothing
  ks_watch_log.py first-put FILE SUFFIX [AFTER_MS]   the same for a put
"""
import base64
import json
import signal
import subprocess
import sys
import time


def lines(path):
    """(wall ms or None, JSON line) for each watch response in the file."""
    for line in open(path):
        line = line.strip()
        at = None
        if line[:1].isdigit():
            at, _, line = line.partition(" ")
            at = int(at)
        if line.startswith("{"):
            yield at, line


def events(path):
    """Every event of the file, in order: etcd's JSON (base64 key and
    value, "type" absent for a put); "_at_ms" the arrival of its line
    when the file was stamped."""
    for at, line in lines(path):
        for ev in json.loads(line).get("Events") or []:
            if at is not None:
                ev["_at_ms"] = at
            yield ev


def stamp(endpoints, prefix, rev):
    def stop(*_):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    p = subprocess.Popen(["etcdctl", "--endpoints", endpoints, "watch",
                          "--prefix", prefix, "--rev", rev, "-w", "json"],
                         stdout=subprocess.PIPE, text=True)
    try:
        for line in p.stdout:
            print("%d %s" % (time.time_ns() // 1000000, line.strip()),
                  flush=True)
    finally:
        p.kill()
        p.wait()


def first_event(path, delete, suffix, after_ms=None):
    for ev in events(path):
        key = base64.b64decode(ev["kv"]["key"]).decode()
        if (ev.get("type") in (1, "DELETE")) == delete and key.endswith(suffix):
            if after_ms is not None and ev.get("_at_ms", 0) < int(after_ms):
                continue
            print(ev.get("_at_ms", ""))
            return


if __name__ == "__main__":
    if sys.argv[1:2] == ["stamp"] and len(sys.argv) == 5:
        stamp(*sys.argv[2:])
    elif sys.argv[1:2] in (["first-delete"], ["first-put"]) and \
            len(sys.argv) in (4, 5):
        first_event(sys.argv[2], sys.argv[1] == "first-delete", *sys.argv[3:])
    else:
        sys.exit(__doc__)
