#!/usr/bin/python3
"""ks_watch_log.py - the events an `etcdctl watch -w json` wrote to a file
(one JSON object a line per watch response), for the e2e scripts'
heredocs: `sys.path.insert(0, DIR); from ks_watch_log import events`."""
import json


def events(path):
    """Every event of the file, in order: etcd's JSON (base64 key and
    value, "type" absent for a put)."""
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            for ev in json.loads(line).get("Events") or []:
                yield ev
