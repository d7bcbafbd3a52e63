#!/usr/bin/python3
"""agent_big_report.py DIR ROUNDS [BEFORE] [JSON] - the table of make
bench-agent-big from agent_big's RESULT, KERNEL and MAPMEM lines
(tests/bench/agent_big.sh): per simulated CPU count the median over the
rounds of user-space ms an interval, the kernel's copy (the fitted line
and the plain-array check), the per-CPU maps' memory and the agent's added
peak memory; with BEFORE, that build's user ms and the ratio this / before
of every round (median and range); with the sample log (nolog.N files
beside this.N), the same bench without the log in the same round, the
ratio of user ms with / without, and the drain's figures; with one.N
files, the same rounds drained by one thread against the automatic count
K of drain threads."""
import os
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


def against(row, rs, others, name, ratio_name):
    """This run's rounds rs against the same rounds of others (a build
    before, or no sample log): into row, their medians and the ratio
    this / other of every round; the table's two cells."""
    med = statistics.median
    ratios = [a['user_ms_p50'] / b['user_ms_p50'] for a, b in zip(rs, others)]
    row[name + 'user_ms'] = med(p['user_ms_p50'] for p in others)
    row[name + 'peak_added_mib'] = med(p['peak_added_kib'] for p in others) / 1024
    row[ratio_name + 'ratio'] = med(ratios)
    row[ratio_name + 'ratio_range'] = [min(ratios), max(ratios)]
    return ['%.2f' % row[name + 'user_ms'],
            'x%.2f (x%.2f-x%.2f)' % (row[ratio_name + 'ratio'],
                                     *row[ratio_name + 'ratio_range'])]


def main():
    d, rounds = sys.argv[1], int(sys.argv[2])
    before = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    json_out = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    this = [parse('%s/this.%d' % (d, r)) for r in range(1, rounds + 1)]
    prev = [parse('%s/before.%d' % (d, r))[0] for r in range(1, rounds + 1)] if before else []
    slog = os.path.exists('%s/nolog.1' % d)
    nolog = [parse('%s/nolog.%d' % (d, r))[0] for r in range(1, rounds + 1)] if slog else []
    one = [parse('%s/one.%d' % (d, r))[0] for r in range(1, rounds + 1)] \
        if os.path.exists('%s/one.1' % d) else []
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
    out = {'rounds': rounds, 'before': before, 'slog': slog,
           'kernel_fit': [t[1] for t in this],
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
    if slog:
        hdr += ('no log: user ms', 'log/no log (range)', 'no log: peak +MiB')
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
            cells += against(row, rs, [p[n] for p in prev], 'before_', '')
        if slog:
            cells += against(row, rs, [p[n] for p in nolog], 'nolog_', 'slog_')
            cells.append('%.1f' % row['nolog_peak_added_mib'])
            sl = {}
            for k in ('slog_ns_per_record', 'slog_poll_us', 'slog_ms_per_s',
                      'slog_idle_ms_per_s', 'slog_cpus_served'):
                sl[k] = med(r[k] for r in rs)
                sl[k + '_range'] = [min(r[k] for r in rs), max(r[k] for r in rs)]
            for k in ('slog_rate', 'slog_records', 'slog_map_kib', 'slog_fold_kib',
                      'slog_late', 'slog_bad'):
                sl[k] = rs[0][k]
            row['slog'] = sl
        print(' | '.join(cells))
        out['sizes'].append(row)
    if slog:
        print('the sample log\'s drain (medians of %d rounds, range): keys a second a CPU %d' % (
            rounds, out['sizes'][0]['slog']['slog_rate']))
        print(' | '.join(('cpus', 'ns a record', 'poll us', 'drain ms a second at the rate',
                          'idle ms a second', 'CPUs one drain serves', 'records timed (all intervals)',
                          'log map MiB', 'fold MiB', 'agent peak +MiB less the log map',
                          'late', 'bad')))
        for row in out['sizes']:
            sl = row['slog']
            print(' | '.join((
                '%d' % row['cpus'],
                '%.1f (%.1f-%.1f)' % (sl['slog_ns_per_record'], *sl['slog_ns_per_record_range']),
                '%.2f (%.2f-%.2f)' % (sl['slog_poll_us'], *sl['slog_poll_us_range']),
                '%.0f (%.0f-%.0f)' % (sl['slog_ms_per_s'], *sl['slog_ms_per_s_range']),
                '%.3f' % sl['slog_idle_ms_per_s'],
                '%.1f (%.1f-%.1f)' % (sl['slog_cpus_served'], *sl['slog_cpus_served_range']),
                '%d' % sl['slog_records'], '%.1f' % (sl['slog_map_kib'] / 1024),
                '%.1f' % (sl['slog_fold_kib'] / 1024),
                '%.1f' % (row['peak_added_mib'] - sl['slog_map_kib'] / 1024),
                '%d' % sl['slog_late'], '%d' % sl['slog_bad'])))
    if one:
        # the same rounds drained by one thread: what K threads change
        print('one drain thread against the automatic count K (medians of %d rounds, range); '
              'K threads: the busiest one\'s CPU is what must fit in a core' % rounds)
        print(' | '.join(('cpus', 'K', 'ns a record: 1 / K', 'drain CPU ms a second, all: 1 / K',
                          'busiest thread ms a second: 1 / K', 'CPUs served: 1 / K',
                          'side by side: threads, ns a record wall / CPU (1 thread)',
                          'side by side (K)', 'interval user ms: 1 / K',
                          'fold MiB: 1 / K', 'agent peak +MiB: 1 / K')))
        for row in out['sizes']:
            n = row['cpus']
            rk = [t[0][n] for t in this]
            r1 = [o[n] for o in one]

            def m(rs, k):
                return med(r[k] for r in rs)

            def rng(rs, k):
                return '%.1f (%.1f-%.1f)' % (m(rs, k), min(r[k] for r in rs), max(r[k] for r in rs))
            row['one_thread'] = {k: m(r1, k) for k in (
                'slog_ns_per_record', 'slog_ms_per_s', 'slog_busiest_ms_per_s', 'slog_cpus_served_k',
                'slog_par_ns_per_record', 'slog_par_cpu_ns_per_record', 'user_ms_p50',
                'peak_added_kib', 'slog_fold_kib')}
            row['k_threads'] = {k: m(rk, k) for k in (
                'slog_threads', 'slog_ns_per_record', 'slog_ms_per_s', 'slog_busiest_ms_per_s',
                'slog_busiest_share', 'slog_cpus_served_k', 'slog_par_threads',
                'slog_par_ns_per_record', 'slog_par_cpu_ns_per_record', 'user_ms_p50',
                'peak_added_kib', 'slog_fold_kib')}
            print(' | '.join((
                '%d' % n, '%d' % m(rk, 'slog_threads'),
                '%s / %s' % (rng(r1, 'slog_ns_per_record'), rng(rk, 'slog_ns_per_record')),
                '%.0f / %.0f' % (m(r1, 'slog_ms_per_s'), m(rk, 'slog_ms_per_s')),
                '%.0f / %.0f' % (m(r1, 'slog_busiest_ms_per_s'), m(rk, 'slog_busiest_ms_per_s')),
                '%s / %s' % (rng(r1, 'slog_cpus_served_k'), rng(rk, 'slog_cpus_served_k')),
                '%d: %.1f / %.1f' % (m(r1, 'slog_par_threads'), m(r1, 'slog_par_ns_per_record'),
                                     m(r1, 'slog_par_cpu_ns_per_record')),
                '%d: %.1f / %.1f' % (m(rk, 'slog_par_threads'), m(rk, 'slog_par_ns_per_record'),
                                     m(rk, 'slog_par_cpu_ns_per_record')),
                '%s / %s' % (rng(r1, 'user_ms_p50'), rng(rk, 'user_ms_p50')),
                '%.1f / %.1f' % (m(r1, 'slog_fold_kib') / 1024, m(rk, 'slog_fold_kib') / 1024),
                '%.1f / %.1f' % (m(r1, 'peak_added_kib') / 1024, m(rk, 'peak_added_kib') / 1024))))
    if json_out:
        with open(json_out, 'w') as f:
            json.dump(out, f, indent=1)


main()
