#!/usr/bin/env python3
"""host_report.py RAW - the table of tests/bench/host_bench.sh from its raw
lines: medians over rounds of each configuration's figures, ratios taken
round by round against nothing attached and the empty program of the same
round (docs/benchmarks.md, "Live traffic")."""
import statistics
import sys
from collections import defaultdict

CLK_TCK = 100


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def spread(v):
    v = [x for x in v if x is not None]
    return f"{min(v):.2f}..{max(v):.2f}" if v else "-"


def main(path):
    trials = {}  # (round, cfg, proto) -> dict
    captured = {}  # (round, cfg) -> packets
    order = []
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[2] == "both":
            captured[(f[0], f[1])] = int(f[4])
            continue
        r, cfg, proto = f[0], f[1], f[2]
        ops, p99, gets, seen, run_ns, run_cnt, ticks = f[3:10]
        trials[(r, cfg, proto)] = dict(ops=float(ops), p99=float(p99),
                                       gets=int(gets), seen=int(seen),
                                       run_ns=int(run_ns),
                                       run_cnt=int(run_cnt),
                                       ticks=int(ticks))
        if cfg not in order:
            order.append(cfg)
    rounds = sorted({k[0] for k in trials})
    print(f"{'config':8} {'proto':5} {'ops/s':>9} {'/none':>6} {'/empty':>7}"
          f" {'p99 us':>7} {'p99/empty':>9} {'seen/cmd_get':>12}"
          f" {'ns/pkt':>7} {'x empty':>7} {'CPU us/req':>10}")
    for cfg in order:
        for proto in ("tcp", "udp"):
            row = defaultdict(list)
            for r in rounds:
                t = trials.get((r, cfg, proto))
                n = trials.get((r, "none", proto))
                e = trials.get((r, "empty", proto))
                if not t:
                    continue
                row["ops"].append(t["ops"])
                row["p99"].append(t["p99"])
                if n:
                    row["r_none"].append(t["ops"] / n["ops"])
                if e:
                    row["r_empty"].append(t["ops"] / e["ops"])
                    row["p99_empty"].append(t["p99"] / e["p99"])
                if t["seen"] >= 0 and t["gets"]:
                    row["seen"].append(t["seen"] / t["gets"])
                if t["run_cnt"]:
                    row["ns"].append(t["run_ns"] / t["run_cnt"])
                    if e and e["run_cnt"]:
                        row["x_empty"].append((t["run_ns"] / t["run_cnt"]) /
                                              (e["run_ns"] / e["run_cnt"]))
                if t["ticks"] and t["gets"]:
                    row["cpu"].append(t["ticks"] * 1e6 / CLK_TCK / t["gets"])
                if (r, cfg) in captured:
                    tt = trials.get((r, cfg, "tcp"))
                    tu = trials.get((r, cfg, "udp"))
                    if tt and tu and proto == "tcp":
                        row["seen"].append(captured[(r, cfg)] /
                                           (tt["gets"] + tu["gets"]))

            def fmt(k, w, p=2):
                v = med(row[k])
                return f"{v:{w}.{p}f}" if v is not None else f"{'-':>{w}}"
            print(f"{cfg:8} {proto:5} {fmt('ops', 9, 0)} {fmt('r_none', 6)}"
                  f" {fmt('r_empty', 7)} {fmt('p99', 7, 1)}"
                  f" {fmt('p99_empty', 9)} {fmt('seen', 12, 4)}"
                  f" {fmt('ns', 7, 1)} {fmt('x_empty', 7)} {fmt('cpu', 10, 2)}")
    print(f"rounds: {len(rounds)}; ratios per round, then the median; "
          "spread of ops/none over rounds in the raw lines")


if __name__ == "__main__":
    main(sys.argv[1])
