#!/usr/bin/python3
"""host_report.py - the arithmetic of tests/bench/host_bench.sh.

  host_report.py metrics-read-keys BEFORE AFTER   read keys keysteer counted
  host_report.py replay-read-keys REPLAY_JSON     read keys in a capture
  host_report.py perf-cost PERF_DATA --hz HZ      the observers' kernel time
  host_report.py run --round R --config C ...     one run as a JSON line
  host_report.py line < RUN_JSON                  that line for people
  host_report.py summary RUNS.jsonl [--markdown FILE] ...
                                                  medians, ratios, the table

Standard library only.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys

TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
CONFIG_NAMES = {
    "none": "nothing attached",
    "empty": "empty XDP program",
    "ks8": "keysteer --sample 8",
    "ks1": "keysteer --sample 1",
    "ksauto": "keysteer --sample auto",
    "ks8ring": "keysteer --sample 8, 64-shard ketama ring",
    "ks8hot": "keysteer --sample 8, hot table on (flash key armed)",
    "pcap": "tcpdump -s 0 to a file",
    "pcap96": "tcpdump -s 96 to a file",
}
WORKLOAD_NAMES = {"udp": "UDP gets", "tcp": "TCP gets", "mix": "TCP get/mget/set"}


def scrape(path):
    out = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        head, val = line.rstrip("\n").rsplit(" ", 1)
        out[head] = float(val)
    return out


def cmd_metrics_read_keys(a):
    m0, m1 = scrape(a.before), scrape(a.after)
    pick = [k for k in m1 if k.startswith("keysteer_keys_total{") and 'class="read"' in k]
    print(int(sum(m1[k] - m0.get(k, 0) for k in pick)))


def sampled_fraction(m0, m1):
    """Keys sampled over keys counted between two scrapes (all classes):
    the rate in force, as the datapath applied it.

    >>> sampled_fraction({}, {'keysteer_sampled_keys_total': 25.0,
    ...     'keysteer_keys_total{class="read"}': 90.0,
    ...     'keysteer_keys_total{class="write"}': 10.0})
    0.25
    """
    keys = sum(v - m0.get(k, 0) for k, v in m1.items() if k.startswith("keysteer_keys_total{"))
    sampled = m1.get("keysteer_sampled_keys_total", 0) - m0.get("keysteer_sampled_keys_total", 0)
    return sampled / keys if keys else None


def cmd_metrics_sampled(a):
    f = sampled_fraction(scrape(a.before), scrape(a.after))
    print("null" if f is None else "%.6f" % f)


def cmd_replay_read_keys(a):
    d = json.load(open(a.file))
    print(sum(v["keys"] for op, v in d["totals"]["ops"].items()
              if op in ("get", "gets", "gat", "gats", "mg")))


# AF_PACKET's receive functions: tcpdump's copy of each frame (TPACKET_V3
# maps to tpacket_rcv; packet_rcv is the copy-per-read socket's)
PCAP_SYMS = re.compile(r"^(tpacket_rcv|packet_rcv)$")
# keysteer's entry programs (the whole program, its global functions under
# them) and the empty program; the topology's own XDP programs (the veth
# peers' ks_empty) run in every configuration and are in the second
KS_SYMS = re.compile(r"^bpf_prog_[0-9a-f]+_(ks_ingress|ks_tc_ingress)$")
EMPTY_SYMS = re.compile(r"^bpf_prog_[0-9a-f]+_ks_empty$")
PERF_LINE = re.compile(r"^\s*([0-9.]+)%\s+([0-9.]+)%\s+(\d+)\s+\[[k.]\]\s+(\S+)")


def perf_cost(lines, hz):
    """Kernel ns in tcpdump's copy and in the XDP program, from the lines
    of `perf report --children --sort sym -n -g none`: a symbol's
    inclusive share of all samples, each sample 1/hz s of one CPU."""
    total, pcap_pct, ks_pct, empty_pct = 0, 0.0, 0.0, 0.0
    for line in lines:
        m = PERF_LINE.match(line)
        if not m:
            continue
        children, sym = float(m.group(1)), m.group(4)
        total += int(m.group(3))  # self samples: they add up to all
        if PCAP_SYMS.match(sym):
            pcap_pct += children
        elif KS_SYMS.match(sym):
            ks_pct += children
        elif EMPTY_SYMS.match(sym):
            empty_pct += children
    ns = total * 1e9 / hz
    return {"perf_hz": hz, "perf_samples": total, "perf_pcap_ns": ns * pcap_pct / 100,
            "perf_ks_ns": ns * ks_pct / 100, "perf_empty_ns": ns * empty_pct / 100}


def cmd_perf_cost(a):
    out = subprocess.run(["perf", "report", "-i", a.file, "--children", "--sort", "sym",
                          "--stdio", "-n", "-q", "-g", "none"],
                         capture_output=True, text=True, check=True).stdout
    cost = perf_cost(out.splitlines(), a.hz)
    # a low --perf-hz can miss a short run whole: the run's other figures
    # still stand, and its line and table say "no samples"
    if not cost["perf_samples"]:
        print("host_report.py: warning: no perf samples in %s" % a.file, file=sys.stderr)
    print(json.dumps(cost))


def num(x):
    return None if x in (None, "null", "") else float(x)


def cmd_run(a):
    load = json.load(open(a.load))
    mc0, mc1 = json.load(open(a.mc0)), json.load(open(a.mc1))
    cmd_get = sum(mc1["servers"][s]["cmd_get"] - mc0["servers"][s]["cmd_get"]
                  for s in mc1["servers"])
    ops = sum(o["ops"] for o in load["ops"])
    errors = sum(o["errors"] + o["timeouts"] for o in load["ops"])
    # the p99 of the run's commonest op: its gets
    gets = max(load["ops"], key=lambda o: o["ops"])
    rt0, rc0 = (int(x) for x in a.prog[0].split())
    rt1, rc1 = (int(x) for x in a.prog[1].split())
    wall = float(a.wall[1]) - float(a.wall[0])
    run = {
        "round": a.round, "config": a.config, "workload": a.workload,
        "duration_s": load["duration_s"], "ops": ops, "errors": errors,
        "ops_per_s": ops / load["duration_s"],
        "p99_us": gets["latency_us"]["p99"],
        "cmd_get": cmd_get,
        "prog_run_ns": rt1 - rt0, "prog_runs": rc1 - rc0,
        "prog_ns_per_packet": (rt1 - rt0) / (rc1 - rc0) if rc1 > rc0 else None,
        "softirq_ns": (float(a.softirq[1]) - float(a.softirq[0])) * TICK_NS,
        "agent_cpu_ns": (float(a.agent[1]) - float(a.agent[0])) * TICK_NS,
        "dump_cpu_ns": (float(a.dump[1]) - float(a.dump[0])) * TICK_NS,
        "memcached_cpu_ns": (float(a.memcached[1]) - float(a.memcached[0])) * TICK_NS,
        "ks_all_run_ns": ks_all_delta(a.ks_all[0], a.ks_all[1]),
        "sampled_fraction": num(a.sampled),
        "seen_keys": num(a.seen), "captured": num(a.captured),
        "dropped": num(a.dropped), "wall_s": wall,
    }
    if a.loadavg:
        # the machine's 1-minute load average as the run began and ended
        run["loadavg"] = [float(x) for x in a.loadavg]
    if a.perf not in (None, "null", ""):
        run.update(json.load(open(a.perf)))
    print(json.dumps(run))


def fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def run_line(r):
    """One run for people; perf's part says "no samples" when perf saw
    none of the observer (a low --perf-hz on a short run):

    >>> r = {"round": 1, "config": "ks8", "workload": "udp", "ops": 500,
    ...      "ops_per_s": 100.0, "p99_us": 80.0, "prog_ns_per_packet": None,
    ...      "softirq_ns": 2e9, "seen_keys": None, "cmd_get": 500,
    ...      "captured": None, "dropped": None}
    >>> run_line(dict(r, **perf_cost([], 999))).split("  ")[-1]
    'kernel no samples (perf, 999 Hz)'
    >>> run_line(dict(r, **perf_cost(["  5.00%  5.00%  10  [k] bpf_prog_1f_ks_ingress",
    ...                               " 95.00% 95.00% 190  [k] other"], 1000))).split("  ")[-1]
    'kernel 20000 ns/request (perf)'
    >>> run_line(dict(r, config="none", **perf_cost([], 999))).split("  ")[-1]
    'softirq 2.00 s'
    """
    seen = ""
    if r["seen_keys"] is not None and r["cmd_get"]:
        seen = "  saw %.4f of cmd_get" % (r["seen_keys"] / r["cmd_get"])
    if r["captured"] is not None:
        seen += "  tcpdump %d captured, %d dropped" % (r["captured"], r["dropped"] or 0)
    k = kernel_ns(r["config"], r)
    if k is not None and r["ops"]:
        seen += "  kernel %.0f ns/request (perf)" % (k / r["ops"])
    elif "perf_samples" in r and r["config"] != "none":
        seen += "  kernel no samples (perf, %d Hz)" % r["perf_hz"]
    if "loadavg" in r:
        seen += "  load %.1f-%.1f" % tuple(r["loadavg"])
    return "round %d %-8s %-4s %9.0f ops/s  p99 %6.0f us  prog %s ns/pkt  softirq %.2f s%s" % (
        r["round"], r["config"], r["workload"], r["ops_per_s"], r["p99_us"],
        fmt(r["prog_ns_per_packet"], ".0f"), r["softirq_ns"] / 1e9, seen)


def cmd_line(_a):
    print(run_line(json.loads(sys.stdin.readline())))


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def spread(vals):
    vals = [v for v in vals if v is not None]
    if len(vals) < 2:
        return None
    m = statistics.median(vals)
    return (max(vals) - min(vals)) / m if m else None


def ratio(a, b):
    return a / b if a is not None and b else None


def kernel_ns(config, r):
    """The observer's kernel time in a run, by perf: None without perf,
    for nothing attached, or when perf has no sample of the observer (a
    time it did not measure, not a zero)."""
    if "perf_samples" not in r or config == "none":
        return None
    if config.startswith("pcap"):
        ns = r["perf_pcap_ns"]
    elif config == "empty":
        ns = r["perf_empty_ns"]
    else:
        share = ks_share(r)
        ns = r["perf_ks_ns"] * share if share is not None else None
    return ns or None


def ks_all_delta(before, after):
    """The run time every keysteer program on the machine ran between two
    `ID:RUN_TIME_NS,...` lists ("-": none), program by program: one
    loaded during the run counts from 0, one unloaded is left out.

    >>> ks_all_delta("7:100,9:50", "7:400,11:30")
    330.0
    >>> ks_all_delta("-", "-")
    0.0
    >>> ks_all_delta("100", "450")
    350.0
    """
    if ":" not in before + after and "-" not in (before, after):
        return float(after) - float(before)  # plain sums (older runs)

    def parse(s):
        return {} if s in ("-", "") else {
            int(i): float(t) for i, t in (x.split(":") for x in s.split(","))}
    b, a = parse(before), parse(after)
    return float(sum(t - b.get(i, 0) for i, t in a.items()))


def ks_share(r):
    """This run's keysteer program's share of every keysteer program's
    run time on the machine (bpf_stats), by which perf's samples of the
    symbol are split: other work's keysteer programs have the same name.

    >>> ks_share({"prog_run_ns": 300.0, "ks_all_run_ns": 400.0})
    0.75
    >>> ks_share({"prog_run_ns": 300.0})
    1.0
    >>> ks_share({"prog_run_ns": 300.0, "ks_all_run_ns": 200.0}) is None
    True
    """
    alln = r.get("ks_all_run_ns")
    if alln is None:
        return 1.0
    if alln < r["prog_run_ns"]:
        # less than this program alone: another one was unloaded during
        # the run (a sum of totals before the lists were kept by ID)
        return None
    return r["prog_run_ns"] / alln if alln else 1.0


def med_range(vals):
    """(median, min, max) of the values that are there, or None."""
    vals = [v for v in vals if v is not None]
    return (statistics.median(vals), min(vals), max(vals)) if vals else None


def fmt_range(mr, spec=",.0f"):
    return "-" if mr is None else "%s [%s..%s]" % (
        format(mr[0], spec), format(mr[1], spec), format(mr[2], spec))


def per_round(runs):
    """Issue 27's figures of every run, keyed by (workload, config, round):
    the observer's CPU per request counted by perf (its kernel share plus
    its process: the agent, or tcpdump), by bpf_stats (keysteer's program
    plus the agent; tcpdump has none), and by the host's CPU (its process
    plus what memcached's process time and the softirq time per request
    grew over `none` in the same round), and the host's CPU per request
    (memcached's process time plus the softirq time).

    >>> base = {"workload": "udp", "round": 0, "ops": 1000, "agent_cpu_ns": 0,
    ...         "dump_cpu_ns": 0, "prog_run_ns": 0, "memcached_cpu_ns": 4e6,
    ...         "softirq_ns": 6e6}
    >>> rs = [dict(base, config="none"),
    ...       dict(base, config="pcap", dump_cpu_ns=2e5, softirq_ns=6.8e6),
    ...       dict(base, config="ks8", agent_cpu_ns=1e4, prog_run_ns=1.5e5,
    ...            softirq_ns=6.1e6)]
    >>> f = per_round(rs)
    >>> f[("udp", "pcap", 0)]["delta"], f[("udp", "ks8", 0)]["delta"]
    (1000.0, 110.0)
    >>> f[("udp", "ks8", 0)]["stats"], f[("udp", "ks8", 0)]["host"]
    (160.0, 10100.0)
    """
    host, mc, out = {}, {}, {}
    for r in runs:
        n = r["ops"]
        if not n or "memcached_cpu_ns" not in r:
            continue
        key = (r["workload"], r["config"], r["round"])
        host[key] = (r["memcached_cpu_ns"] + r["softirq_ns"]) / n
        mc[key] = r["memcached_cpu_ns"] / n
    for r in runs:
        key = (r["workload"], r["config"], r["round"])
        if r["config"] == "none" or key not in host:
            continue
        n, c = r["ops"], r["config"]
        proc = (r["agent_cpu_ns"] + r["dump_cpu_ns"]) / n
        k = kernel_ns(c, r)
        base = host.get((r["workload"], "none", r["round"]))
        out[key] = {
            "perf": k / n + proc if k is not None else None,
            "stats": (r["prog_run_ns"] / n + proc) if not c.startswith("pcap") else None,
            "delta": proc + host[key] - base if base is not None else None,
            "host": host[key],
            "memcached": mc[key],
            "sampled": r.get("sampled_fraction"),
        }
    return out


def median_interval(vals, level=0.95):
    """(median, lo, hi, n, confidence): lo..hi the widest-inward pair of
    order statistics X(k)..X(n+1-k) that still holds the median with at
    least `level` confidence (binomial, no assumption of normal noise); the
    min..max when even that falls short; None without values.

    >>> median_interval([3.0, 1.0, 2.0, 5.0, 4.0, 6.0])[:3]
    (3.5, 1.0, 6.0)
    >>> r = median_interval([float(x) for x in range(1, 13)])
    >>> r[1], r[2], round(r[4], 3)
    (3.0, 10.0, 0.961)
    """
    v = sorted(x for x in vals if x is not None)
    n = len(v)
    if not n:
        return None
    def conf(k):
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2.0 ** n
    k = 1
    while k + 1 <= n // 2 and conf(k + 1) >= level:
        k += 1
    return statistics.median(v), v[k - 1], v[n - k], n, conf(k) if n > 1 else 0.0


def goal_table(runs, rounds):
    """Issue 27's goal for bench-host, as markdown: each observer's CPU per
    request with its spread over the rounds and its share of the host's,
    then tcpdump / keysteer round by round with the interval."""
    f = per_round(runs)
    if not f:
        return ""
    with_perf = any(v["perf"] is not None for v in f.values())
    method = ("perf (`perf record -e cpu-clock -a -g`: the kernel time under "
              "tcpdump's `tpacket_rcv`/`packet_rcv` or keysteer's XDP entry program) "
              "plus the observer's process time (tcpdump, or the agent)"
              if with_perf else
              "no perf: keysteer's `bpf_stats` run time plus the agent's process time; "
              "tcpdump's process time plus what memcached's process time and the softirq "
              "time per request grew over `none` in the same round")
    col = "perf" if with_perf else None
    nr = len({k[2] for k in f})
    conf = 1 - 2.0 ** (1 - nr) if nr > 1 else 0
    out = ["Observer CPU per request, counted by %s; the host delta column counts "
           "every observer by the host's CPU instead (its process time plus what "
           "memcached's process time and the softirq time per request grew over "
           "`none` in the same round). The host's CPU per request is memcached's "
           "process time plus the softirq time, the same run; share = observer / "
           "host. The softirq time is the whole machine's: where other work "
           "shares the machine its softirq is in it too, and the share of "
           "memcached's process time alone is given beside it. Medians "
           "[min..max] of %d rounds." % (method, nr), "",
           "| workload | observer | CPU ns per request | spread | by bpf_stats + agent "
           "| by host delta | "
           "host CPU ns per request | share of host | memcached ns per request "
           "| share of memcached's | keys sampled |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    workloads = [w for w in WORKLOAD_NAMES if any(k[0] == w for k in f)]
    configs = [c for c in CONFIG_NAMES if any(k[1] == c for k in f)]

    def obs(w, c, r):
        v = f.get((w, c, r))
        if v is None:
            return None
        if col:
            return v[col]
        return v["delta"] if c.startswith("pcap") else v["stats"]

    for w in workloads:
        for c in configs:
            rs = sorted(k[2] for k in f if k[0] == w and k[1] == c)
            if not rs:
                continue
            o = med_range([obs(w, c, r) for r in rs])
            h = med_range([f[(w, c, r)]["host"] for r in rs])
            sh = med_range([obs(w, c, r) / f[(w, c, r)]["host"]
                            if obs(w, c, r) is not None else None for r in rs])
            sp = med_range([f[(w, c, r)]["sampled"] for r in rs])
            mcr = med_range([f[(w, c, r)]["memcached"] for r in rs])
            shm = med_range([obs(w, c, r) / f[(w, c, r)]["memcached"]
                             if obs(w, c, r) is not None and f[(w, c, r)]["memcached"]
                             else None for r in rs])
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                WORKLOAD_NAMES[w], CONFIG_NAMES[c], fmt_range(o),
                fmt((o[2] - o[1]) / o[0] if o and o[0] else None, ".0%"),
                fmt_range(med_range([f[(w, c, r)]["stats"] for r in rs])),
                fmt_range(med_range([f[(w, c, r)]["delta"] for r in rs])),
                fmt(h and h[0], ",.0f"), fmt_range(sh, ".3f"),
                fmt(mcr and mcr[0], ",.0f"), fmt_range(shm, ".3f"),
                fmt(sp and sp[0], ".4f", "")))
    out += ["", "tcpdump / keysteer, CPU per request, round by round (each round's "
            "two runs side by side); the interval is a pair of the rounds' order "
            "statistics that holds the median with at least 95%% confidence where "
            "the rounds allow, else their min..max (%.0f%% at %d rounds; a round "
            "without a figure for both is left out); the goal is at least 3x:"
            % (conf * 100, nr), "",
            "| workload | pair | ratio, median | interval | rounds (confidence) "
            "| keysteer by bpf_stats + agent | by host delta | goal >= 3 |",
            "|---|---|---:|---:|---:|---:|---:|---|"]
    for w in workloads:
        for p in (c for c in configs if c.startswith("pcap")):
            for k in (c for c in configs if c.startswith("ks")):
                rs = sorted({x[2] for x in f if x[0] == w})
                rat = [obs(w, p, r) / obs(w, k, r) if obs(w, p, r) is not None
                       and obs(w, k, r) else None for r in rs]
                dl = [f[(w, p, r)]["delta"] / f[(w, k, r)]["delta"]
                      if (w, p, r) in f and (w, k, r) in f and f[(w, k, r)]["delta"]
                      and f[(w, k, r)]["delta"] > 0 and f[(w, p, r)]["delta"] is not None
                      else None for r in rs]
                # tcpdump as above, keysteer by its own program's bpf_stats
                # (no other program's time in it; its clock reads in it)
                bs = [obs(w, p, r) / f[(w, k, r)]["stats"] if obs(w, p, r) is not None
                      and (w, k, r) in f and f[(w, k, r)]["stats"] else None for r in rs]
                mr = median_interval(rat)
                if mr is None:
                    continue
                verdict = ("met" if mr[1] >= 3 else "not met" if mr[2] < 3
                           else "undecided (interval spans 3)")
                out.append("| %s | %s / %s | %.2f | %.2f..%.2f | %d (%.0f%%) | %s | %s | %s |" % (
                    WORKLOAD_NAMES[w], CONFIG_NAMES[p], CONFIG_NAMES[k], mr[0],
                    mr[1], mr[2], mr[3], 100 * mr[4],
                    fmt_range(med_range(bs), ".2f"), fmt_range(med_range(dl), ".2f"),
                    verdict))
    return "\n".join(out)


def cmd_summary(a):
    # several runs' files pool their rounds (each file's rounds apart)
    runs = []
    for i, path in enumerate(a.runs):
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                if len(a.runs) > 1:
                    r["round"] = i * 1000 + r["round"]
                runs.append(r)
    by = {}
    for r in runs:
        by.setdefault((r["workload"], r["config"]), []).append(r)
    workloads = [w for w in WORKLOAD_NAMES if any(k[0] == w for k in by)]
    configs = [c for c in CONFIG_NAMES if any(k[1] == c for k in by)]
    with_perf = any("perf_samples" in r for r in runs)
    out = []
    out.append("| workload | observer | ops/s | vs none | vs empty | p99 us | vs none "
               "| saw / cmd_get | CPU ns per request (observer) | softirq ns per request "
               "| XDP run ns per packet | vs empty | ops/s spread |"
               + (" kernel ns per request (perf) | process + kernel ns per request |"
                  if with_perf else ""))
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
               + ("---:|---:|" if with_perf else ""))
    for w in workloads:
        base = {c: by.get((w, c), []) for c in configs}
        m = {}
        for c, rs in base.items():
            if not rs:
                continue
            reqs = [r["ops"] for r in rs]
            m[c] = {
                "ops": med([r["ops_per_s"] for r in rs]),
                "p99": med([r["p99_us"] for r in rs]),
                "saw": med([r["seen_keys"] / r["cmd_get"] if r["seen_keys"] is not None and r["cmd_get"]
                            else (r["captured"] / (r["captured"] + (r["dropped"] or 0))
                                  if r["captured"] else None) for r in rs]),
                "cpu": med([(r["agent_cpu_ns"] + r["dump_cpu_ns"] + r["prog_run_ns"]
                             if c != "empty" else r["prog_run_ns"]) / n if n else None
                            for r, n in zip(rs, reqs)]),
                "sirq": med([r["softirq_ns"] / n if n else None for r, n in zip(rs, reqs)]),
                "pkt": med([r["prog_ns_per_packet"] for r in rs]),
                "spread": spread([r["ops_per_s"] for r in rs]),
                # the same sampling for both kinds of observer: tcpdump's
                # tpacket_rcv, keysteer's XDP program (empty: its own)
                "kern": med([kernel_ns(c, r) / n if n and kernel_ns(c, r) is not None
                             else None for r, n in zip(rs, reqs)]),
                "all": med([(kernel_ns(c, r) + r["agent_cpu_ns"] + r["dump_cpu_ns"]) / n
                            if n and kernel_ns(c, r) is not None else None
                            for r, n in zip(rs, reqs)]),
            }
        none, empty = m.get("none"), m.get("empty")
        for c in configs:
            if c not in m:
                continue
            x = m[c]
            nos = "" if c == "none" else "no samples"
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                WORKLOAD_NAMES[w], CONFIG_NAMES[c], fmt(x["ops"], ",.0f"),
                fmt(ratio(x["ops"], none and none["ops"]), ".3f"),
                fmt(ratio(x["ops"], empty and empty["ops"]), ".3f"),
                fmt(x["p99"], ".0f"), fmt(ratio(x["p99"], none and none["p99"]), ".2f"),
                fmt(x["saw"], ".4f") if c not in ("none", "empty") else "",
                fmt(x["cpu"], ".0f") if c not in ("none",) else "",
                fmt(x["sirq"], ".0f"),
                fmt(x["pkt"], ".0f"),
                fmt(ratio(x["pkt"], empty and empty["pkt"]), ".2f") if c.startswith("ks") else "",
                fmt(x["spread"], ".0%"))
                + (" %s | %s |" % (fmt(x["kern"], ".0f", nos), fmt(x["all"], ".0f", nos))
                   if with_perf else ""))
    table = "\n".join(out)
    head = ("`tests/bench/host_bench.sh --rounds %d --duration %d --conns %d`: median of %d "
            "rounds per cell, configurations interleaved in rotating order." % (
                a.rounds, a.duration, a.conns, a.rounds))
    loads = [x for r in runs for x in r.get("loadavg", [])]
    if loads:
        head += " Load average (1 min) during the runs: %.1f to %.1f." % (min(loads), max(loads))
    head += "\n\n"
    goal = goal_table(runs, a.rounds)
    if goal:
        table += "\n\n" + goal
    print(head + table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(head + table + "\n")


def main():
    p = argparse.ArgumentParser(prog="host_report.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("metrics-read-keys")
    s.add_argument("before")
    s.add_argument("after")
    s.set_defaults(fn=cmd_metrics_read_keys)
    s = sub.add_parser("metrics-sampled")
    s.add_argument("before")
    s.add_argument("after")
    s.set_defaults(fn=cmd_metrics_sampled)
    s = sub.add_parser("replay-read-keys")
    s.add_argument("file")
    s.set_defaults(fn=cmd_replay_read_keys)
    s = sub.add_parser("run")
    s.add_argument("--round", type=int, required=True)
    for name in ("config", "workload", "load", "mc0", "mc1", "seen", "captured", "dropped"):
        s.add_argument("--" + name, required=True)
    s.add_argument("--sampled", default="null")
    for name in ("prog", "softirq", "agent", "dump", "memcached", "ks_all", "wall"):
        s.add_argument("--" + name, nargs=2, required=True)
    s.add_argument("--perf", help="perf-cost's JSON, or null")
    s.add_argument("--loadavg", nargs=2, help="1-minute load average at the start and end")
    s.set_defaults(fn=cmd_run)
    s = sub.add_parser("perf-cost")
    s.add_argument("file")
    s.add_argument("--hz", type=int, required=True)
    s.set_defaults(fn=cmd_perf_cost)
    s = sub.add_parser("line")
    s.set_defaults(fn=cmd_line)
    s = sub.add_parser("summary")
    s.add_argument("runs", nargs="+")
    s.add_argument("--markdown")
    s.add_argument("--rounds", type=int, default=0)
    s.add_argument("--duration", type=int, default=0)
    s.add_argument("--conns", type=int, default=0)
    s.set_defaults(fn=cmd_summary)
    a = p.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main() or 0)
