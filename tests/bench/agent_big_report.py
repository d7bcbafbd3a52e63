#!/usr/bin/python3
"""agent_big_report.py DIR ROUNDS [BEFORE] [JSON] - the table of make
bench-agent-big from agent_big's RESULT, KERNEL and MAPMEM lines
(tests/bench/agent_big.sh): per simulated CPU count the median over the
rounds of user-space ms an interval, the kernel's copy (the fitted line
and the plain-array check), the per-CPU maps' memory and the agent's added
peak memory; with BEFORE, that build's user ms and the ratio this / before
of every round (median and range)."""
import json
import statistics
import sys


def parse(path):
    rows, kern, mem, check = {}, None, {}, []
    for line in open(path):
        w = line.split()
        if not w:
            continue
        kv = dict(x.split('=', 1) for x in w[1:] if '=' in x)
        if w[0] == 'RESULT':
            rows[int(kv['cpus'])] = {k: float(v) for k, v in kv.items()}
        elif w[0] == 'KERNEL':
            kern = {k: float(v) for k, v in kv.items()}
        elif w[0] == 'MAPMEM':
            mem[int(kv['cpus'])] = {k: float(v) for k, v in kv.items()}
        elif w[0] == 'CHECK':
            check.append(kv)
    return rows, kern, mem, check


def main():
    d, rounds = sys.argv[1], int(sys.argv[2])
    before = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    json_out = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    this = [parse('%s/this.%d' % (d, r)) for r in range(1, rounds + 1)]
    prev = [parse('%s/before.%d' % (d, r))[0] for r in range(1, rounds + 1)] if before else []
    out_checks = []
    for c in this[0][3]:
        # one value as large as a percpu value at N CPUs, against the line
        print('check, round 1: one %s of %s bytes (N = %s): plain array lookup %s ns (line %s), '
              'update %s ns (line %s)' % (c['value'], c['bytes'], c['cpus'], c['array_lookup_ns'],
                                          c['model_lookup_ns'], c['array_update_ns'],
                                          c['model_update_ns']))
        out_checks.append(c)
    cpus = sorted(this[0][0])
    med = statistics.median
    out = {'rounds': rounds, 'before': before, 'kernel_fit': [t[1] for t in this],
           'checks': out_checks, 'sizes': []}
    for k in ('lookup', 'update'):
        vals = [t[1]['%s_ns_per_byte' % k] for t in this]
        calls = [t[1]['%s_ns_per_call' % k] for t in this]
        print('kernel %s, a percpu map here (%d possible CPUs): %.0f ns a call + %.4f ns a byte '
              '(medians of %d rounds; ns/byte %.4f-%.4f)' % (
                  k, this[0][1]['possible_cpus'], med(calls), med(vals), rounds, min(vals), max(vals)))
    hdr = ('cpus', 'user ms', 'sketch', 'cands', 'rank', 'kernel ms line', 'kernel ms flat',
           'candidates', 'percpu maps MiB', 'of them ks_cms', 'agent peak +MiB', 'kept +MiB')
    if before:
        hdr += ('before user ms', 'this/before (range)')
    print(' | '.join(hdr))
    for n in cpus:
        rs = [t[0][n] for t in this]
        m = this[0][2][n]
        row = {
            'cpus': n,
            'user_ms': med(r['user_ms_p50'] for r in rs),
            'user_ms_range': [min(r['user_ms_p50'] for r in rs), max(r['user_ms_p50'] for r in rs)],
            'sketch_ms': med(r['sketch_ms'] for r in rs),
            'cands_ms': med(r['cands_ms'] for r in rs),
            'rank_ms': med(r['rank_ms'] for r in rs),
            'zero_ms': med(r['zero_ms'] for r in rs),
            'kernel_ms_line': med(r['kernel_ms_line'] for r in rs),
            'kernel_ms_flat': med(r['kernel_ms_flat'] for r in rs),
            'candidates': int(rs[0]['candidates']),
            'percpu_mib': m['percpu_bytes'] / 2**20,
            'cms_mib': m['cms_bytes'] / 2**20,
            'other_maps_mib': m['other_bytes'] / 2**20,
            'peak_added_mib': med(r['peak_added_kib'] for r in rs) / 1024,
            'kept_mib': med(r['kept_kib'] for r in rs) / 1024,
            'kernel_bytes': sum(v for k, v in rs[0].items() if k.endswith('_bytes')),
        }
        cells = ['%d' % n, '%.2f (%.2f-%.2f)' % (row['user_ms'], *row['user_ms_range']),
                 '%.2f' % row['sketch_ms'], '%.2f' % row['cands_ms'], '%.2f' % row['rank_ms'],
                 '%.2f' % row['kernel_ms_line'], '%.2f' % row['kernel_ms_flat'],
                 '%d' % row['candidates'], '%.1f' % row['percpu_mib'], '%.1f' % row['cms_mib'],
                 '%.1f' % row['peak_added_mib'], '%.1f' % row['kept_mib']]
        if before:
            ps = [p[n] for p in prev]
            ratios = [a['user_ms_p50'] / b['user_ms_p50'] for a, b in zip(rs, ps)]
            row['before_user_ms'] = med(p['user_ms_p50'] for p in ps)
            row['before_peak_added_mib'] = med(p['peak_added_kib'] for p in ps) / 1024
            row['ratio'] = med(ratios)
            row['ratio_range'] = [min(ratios), max(ratios)]
            cells += ['%.2f' % row['before_user_ms'],
                      'x%.2f (x%.2f-x%.2f)' % (row['ratio'], *row['ratio_range'])]
        print(' | '.join(cells))
        out['sizes'].append(row)
    if json_out:
        with open(json_out, 'w') as f:
            json.dump(out, f, indent=1)


main()
