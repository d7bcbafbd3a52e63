#!/usr/bin/python3
"""ks_live_ops.py - a running datapath's op totals, from its pinned maps.

    ks_live_ops.py PIN_DIR

Prints {"get": [requests, keys, bytes], ...} summed over CPUs, ops with
nothing left out: ks_ops, plus the lone gets the fast path counts in
ks_pkts (fast_get: requests of one key each, fast_get_bytes) added to
"get", as the agent's ks_ops_fold_fast() adds them. ks_ops alone misses
every such get, so a test comparing the datapath with memcached or with
a replay reads it here (or from `agent report --json`), not from ks_ops.
Op and counter names come from bpf/keysteer.h. Runs with Debian's
/usr/bin/python3; needs bpftool.
"""
import json
import os
import re
import subprocess
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def enum_names(enum):
    """Names of an enum in bpf/keysteer.h, in order, without the _MAX."""
    src = open(os.path.join(REPO, "bpf", "keysteer.h")).read()
    body = re.search(r"enum %s \{(.*?)\};" % enum, src, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = [n.split("=")[0].strip() for n in body.split(",")]
    return [n for n in names if n and not n.endswith("_MAX")]


def dump(path):
    out = subprocess.run(["bpftool", "-j", "map", "dump", "pinned", path],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def live_ops(pin_dir):
    ops_names = [n[len("KS_OP_"):].lower() for n in enum_names("ks_op")]
    pkt_names = enum_names("ks_pkt_counter")
    ops = {}
    for e in dump(os.path.join(pin_dir, "ks_ops")):
        f = e.get("formatted", e)
        tot = [0, 0, 0]
        for v in f["values"]:
            val = v["value"]
            tot = [tot[0] + val["requests"], tot[1] + val["keys"],
                   tot[2] + val["bytes"]]
        ops[ops_names[f["key"]]] = tot
    pc = [0] * len(pkt_names)
    for e in dump(os.path.join(pin_dir, "ks_pkts")):
        f = e.get("formatted", e)
        for v in f["values"]:
            for i, n in enumerate(v["value"]["n"]):
                pc[i] += n
    fast = pc[pkt_names.index("KS_PKT_FAST_GET")]
    get = ops.setdefault("get", [0, 0, 0])
    get[0] += fast
    get[1] += fast
    get[2] += pc[pkt_names.index("KS_PKT_FAST_GET_BYTES")]
    return {k: v for k, v in ops.items() if any(v)}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(json.dumps(live_ops(sys.argv[1])))
