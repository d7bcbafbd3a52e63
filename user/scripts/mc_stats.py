#!/usr/bin/python3
"""mc_stats.py - memcached's own counters, for the e2e tests and benchmarks.

  mc_stats.py snap HOST:PORT...        'stats' of each server, as JSON
  mc_stats.py diff BEFORE AFTER [--fields F,...] [--group NAME=H:P,...]...
                                       per-server deltas of two snapshots and,
                                       per group and field, busiest / mean
  mc_stats.py version HOST:PORT...     'version' of each (null if it does not
                                       answer); exit 1 if any does not

snap and version talk TCP to the servers, so run them where the servers are
reachable (inside the client namespace). Standard library only.
"""
import argparse
import json
import socket
import sys
import time

DEFAULT_FIELDS = ("cmd_get", "cmd_set", "get_hits", "get_misses")


def split_addr(hostport):
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit("mc_stats.py: '%s' is not HOST:PORT; give e.g. 198.18.2.11:11211"
                         " or [2001:2::11]:11211" % hostport)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # an IPv6 literal
    return host, int(port)


def ask(hostport, command, timeout):
    """One text command; the reply up to its END (or the one line)."""
    with socket.create_connection(split_addr(hostport), timeout=timeout) as s:
        s.sendall(command.encode() + b"\r\n")
        buf = b""
        while True:
            data = s.recv(65536)
            if not data:
                break
            buf += data
            if command != "stats" and buf.endswith(b"\r\n"):
                break
            if buf.endswith(b"END\r\n") or buf.startswith(b"ERROR"):
                break
    return buf.decode(errors="replace")


def number(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def stats(hostport, timeout):
    out = {}
    for line in ask(hostport, "stats", timeout).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = number(parts[2])
    return out


def cmd_snap(args):
    snap = {"time": time.time(), "servers": {}}
    for hp in args.servers:
        try:
            snap["servers"][hp] = stats(hp, args.timeout)
        except OSError as e:
            raise SystemExit("mc_stats.py: stats from %s failed: %s; is memcached running there?"
                             % (hp, e))
    json.dump(snap, sys.stdout)
    print()
    return 0


def summary(deltas, members, field):
    vals = {hp: deltas[hp][field] for hp in members if hp in deltas}
    if not vals:
        return None
    busiest = max(vals, key=lambda hp: vals[hp])
    total = sum(vals.values())
    mean = total / len(vals)
    return {"busiest": busiest, "max": vals[busiest], "mean": mean, "total": total,
            "busiest_over_mean": (vals[busiest] / mean) if mean else None}


def cmd_diff(args):
    with open(args.before) as f:
        before = json.load(f)["servers"]
    with open(args.after) as f:
        after = json.load(f)["servers"]
    fields = args.fields.split(",")
    deltas = {}
    for hp in after:
        if hp in before:
            deltas[hp] = {fd: after[hp].get(fd, 0) - before[hp].get(fd, 0) for fd in fields}
    groups = {}
    for g in args.group or ["all=" + ",".join(deltas)]:
        name, _, members = g.partition("=")
        if not name or not members:
            raise SystemExit("mc_stats.py: --group '%s' is not NAME=H:P,...; give e.g. "
                             "--group shards=198.18.2.11:11211,198.18.2.12:11211" % g)
        groups[name] = {fd: summary(deltas, members.split(","), fd) for fd in fields}
    json.dump({"deltas": deltas, "groups": groups}, sys.stdout)
    print()
    return 0


def cmd_version(args):
    out, ok = {}, True
    for hp in args.servers:
        try:
            line = ask(hp, "version", args.timeout).strip()
            out[hp] = line.split(" ", 1)[1] if line.startswith("VERSION ") else None
        except OSError:
            out[hp] = None
        ok = ok and out[hp] is not None
    json.dump(out, sys.stdout)
    print()
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(prog="mc_stats.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snap", help="stats of each server as JSON")
    s.add_argument("servers", nargs="+", metavar="HOST:PORT")
    s.add_argument("--timeout", type=float, default=5)
    d = sub.add_parser("diff", help="deltas of two snapshots, busiest/mean")
    d.add_argument("before")
    d.add_argument("after")
    d.add_argument("--fields", default=",".join(DEFAULT_FIELDS))
    d.add_argument("--group", action="append", metavar="NAME=H:P,...")
    v = sub.add_parser("version", help="is every server answering?")
    v.add_argument("servers", nargs="+", metavar="HOST:PORT")
    v.add_argument("--timeout", type=float, default=2)
    args = p.parse_args()
    return {"snap": cmd_snap, "diff": cmd_diff, "version": cmd_version}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
