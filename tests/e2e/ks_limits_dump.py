#!/usr/bin/python3
# ks_limits_dump.py PIN_DIR - the datapath's rate limits (docs/limits.md)
# from an agent's pinned maps: every ks_limits entry, one a line, as
# "KEY allowed refused collided tcp" with its ks_limit_stats row summed
# over CPUs; nothing when no key is limited. Run where bpftool can read
# the pins (the agent's namespace, as root).
import json
import subprocess
import sys


def dump(pins, name):
    out = subprocess.run(["bpftool", "-j", "map", "dump", "pinned",
                          pins + "/" + name], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def key_of(v):
    raw = v["key"]
    if isinstance(raw, str):  # bpftool prints a printable array so
        return raw[:v["len"]]
    return bytes(int(b, 0) if isinstance(b, str) else b
                 for b in raw[:v["len"]]).decode(errors="replace")


def main():
    pins = sys.argv[1]
    stats = {e["formatted"]["key"]: e["formatted"]["values"]
             for e in dump(pins, "ks_limit_stats")}
    for e in dump(pins, "ks_limits"):
        v = e["formatted"]["value"]
        tot = {"allowed": 0, "refused": 0, "collided": 0, "tcp": 0}
        for c in stats[v["id"]]:
            for k in tot:
                tot[k] += c["value"][k]
        print(key_of(v), tot["allowed"], tot["refused"], tot["collided"],
              tot["tcp"])


if __name__ == "__main__":
    main()
