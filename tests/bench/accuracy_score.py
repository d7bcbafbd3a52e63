#!/usr/bin/python3
"""accuracy_score.py - scores 'agent replay --interval --json' against the
ground truth tests/bench/acc/acc_gen.c wrote (docs/accuracy.md).

  accuracy_score.py TRUTH REPLAY.jsonl --churn X --sample N [--json OUT]

Per interval, against the exact counts:
  top-100 precision  share of the agent's 100 heaviest candidates (--ranked
                     100) whose true count reaches the 100th true count
  top-100 recall     true top 100 (ties at the 100th count included) found
                     among them, over 100
  top-10 rate error  |estimate - true| / true for each true top-10 key;
                     a key the agent did not rank counts as -100%
  detection delay    for each flash key: intervals from its onset (the
                     first interval it has requests in) to the first report
                     that lists it in its published top keys, and in the
                     hot-key table; 1 = at the end of its first interval
  shard load         with a ring (the truth's S lines, the replay's
                     "shards"): each shard's estimated keys in the
                     interval (reads_per_s + writes_per_s times its
                     elapsed_ns) against the exact requests to it;
                     |estimate - true| / true, the max and median over
                     shards and intervals after the first (the first
                     places every sampled key: P 1), whether the
                     report's busiest shard is the truly busiest, and
                     whether each shard's stated 95% interval
                     (load_err_per_s, the +/- of its load) covers its
                     exact requests
Prints one JSON object on stdout (and into --json OUT).

  accuracy_score.py --table [--docs FILE] [--load] SCORE.json...

prints the scores as one Markdown table; with --docs, also puts it (and
the lines of --note) between the markers of FILE (docs/accuracy.md).
--load: the load-level table (--sample 8 against auto at 10k..10M keys/s,
with the rates auto chose), between the bench-accuracy-load markers.
--shards: the shard-load table of the load levels' runs with a ring
(P in force, errors, the busiest shard, the 95% intervals' coverage),
between the bench-accuracy-shards markers, and the coverage check over
every row: exit status 1 when the intervals cover fewer than 93% of the
shard-intervals or are uselessly wide (coverage_check).
"""
import argparse
import json
import sys

FLASH = ('flash:1pct', 'flash:5pct')


def read_truth(path):
    ivs, top, shards = {}, {}, {}
    with open(path) as f:
        for line in f:
            p = line.rstrip('\n').split('\t')
            if p[0] == 'I':
                ivs[int(p[1])] = {'requests': int(p[2]), 'zipf': int(p[3]),
                                  'churn': int(p[4]), 'flash1': int(p[5]),
                                  'flash5': int(p[6])}
            elif p[0] == 'T':
                top.setdefault(int(p[1]), []).append((p[2], int(p[3])))
            elif p[0] == 'S':
                shards.setdefault(int(p[1]), {})[int(p[2])] = int(p[3])
    return ivs, top, shards


def median(v):
    s = sorted(v)
    n = len(s)
    if not n:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def score_shards(truth_shards, reps):
    """Each interval's shard load against the exact requests per shard."""
    per_iv = []
    for rep in reps:
        i = rep['seq']
        true = truth_shards.get(i)
        rows = rep.get('shards') or []
        if not true or not rows:
            continue
        secs = rep['elapsed_ns'] / 1e9
        errs, cover = [], []
        for row in rows:
            t = true.get(row['index'], 0)
            est = (row['reads_per_s'] + row['writes_per_s']) * secs
            if t > 0:
                errs.append(abs(est - t) / t)
            hw = row.get('load_err_per_s')
            if hw is not None:
                hw *= secs
                # the rates are milli-keys/s: half a key of rounding
                cover.append({'covered': abs(est - t) <= hw + 0.5,
                              'err': abs(est - t), 'hw': hw,
                              'hw_rel': hw / t if t > 0 else None})
        order = sorted(true, key=lambda k: (-true[k], k))
        gap = ((true[order[0]] - true[order[1]]) / true[order[0]]
               if len(order) > 1 and true[order[0]] else None)
        per_iv.append({'seq': i, 'place_p': rep.get('place_p', 1),
                       'sample_n': rep.get('sample_n'),
                       'err_max': max(errs) if errs else None,
                       'errs': errs, 'cover': cover,
                       'busiest': rep.get('busiest'),
                       'true_busiest': order[0],
                       'true_gap': gap})
    if not per_iv:
        return None
    steady = per_iv[1:] if len(per_iv) > 1 else per_iv
    all_errs = [e for iv in steady for e in iv['errs']]
    ps = [iv['place_p'] for iv in steady]
    cov = [c for iv in steady for c in iv['cover']]
    return {
        'shard_intervals': len(cov),
        'covered': sum(1 for c in cov if c['covered']),
        'hw_median': median([c['hw_rel'] for c in cov
                             if c['hw_rel'] is not None]),
        # |error| / +/- of every shard-interval with a +/- (for the
        # check over all rows: its 95th percentile)
        'err_over_hw': [c['err'] / c['hw'] for c in cov if c['hw'] > 0],
        'intervals': len(steady),
        'err_max': max(all_errs) if all_errs else None,
        'err_median': median(all_errs),
        'err_max_median': median([iv['err_max'] for iv in steady
                                  if iv['err_max'] is not None]),
        'busiest_first': sum(1 for iv in steady
                             if iv['busiest'] == iv['true_busiest']),
        'true_gap_min': min(iv['true_gap'] for iv in steady
                            if iv['true_gap'] is not None),
        'place_p': [min(ps), max(ps)],
        'first_err_max': per_iv[0]['err_max'],
        'per_interval': [{k: v for k, v in iv.items()
                          if k not in ('errs', 'cover')}
                         for iv in per_iv],
    }


def read_replay(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def score(truth_ivs, truth_top, reps, k=100, k_err=10):
    prec, rec, errs, per_iv = [], [], [], []
    onset = {}
    for name in FLASH:
        col = 'flash1' if name == FLASH[0] else 'flash5'
        hit = [i for i in sorted(truth_ivs) if truth_ivs[i][col] > 0]
        onset[name] = hit[0] if hit else None
    seen_top, seen_hot = {}, {}
    for rep in reps:
        i = rep['seq']
        if i not in truth_top:
            continue
        true = truth_top[i]
        counts = dict(true)
        kth = true[k - 1][1] if len(true) >= k else 0
        true_set = {key for key, c in true if c >= kth}
        ranked = rep.get('ranked', [])[:k]
        got = [e['key'] for e in ranked]
        good = sum(1 for key in got if counts.get(key, 0) >= kth)
        p = good / len(got) if got else 0.0
        r = min(1.0, len(true_set & set(got)) / k)
        prec.append(p)
        rec.append(r)
        est = {e['key']: e['reads'] + e['writes'] for e in rep.get('ranked', [])}
        for key, c in true[:k_err]:
            errs.append((est.get(key, 0) - c) / c)
        top_keys = {e['key'] for e in rep['top']}
        hot_keys = {e['key'] for e in rep['hot']}
        for name in FLASH:
            o = onset[name]
            if o is None or i < o:
                continue
            if name in top_keys and name not in seen_top:
                seen_top[name] = i - o + 1
            if name in hot_keys and name not in seen_hot:
                seen_hot[name] = i - o + 1
        per_iv.append({'seq': i, 'precision': p, 'recall': r,
                       'candidates': rep['candidates'],
                       'sample_n': rep.get('sample_n')})
    abs_errs = [abs(e) for e in errs]
    # after the first interval: --sample auto starts a replay at 1 in 1
    steady = [iv['precision'] for iv in per_iv[1:]]
    return {
        'precision_steady_mean': sum(steady) / len(steady) if steady else None,
        'precision_steady_min': min(steady) if steady else None,
        'intervals': len(prec),
        'precision_mean': sum(prec) / len(prec) if prec else None,
        'precision_min': min(prec) if prec else None,
        'recall_mean': sum(rec) / len(rec) if rec else None,
        'recall_min': min(rec) if rec else None,
        'top10_err_mean': sum(abs_errs) / len(abs_errs) if errs else None,
        'top10_err_max': max(abs_errs) if errs else None,
        'top10_err_signed_mean': sum(errs) / len(errs) if errs else None,
        'delay_top': {n: seen_top.get(n) for n in FLASH},
        'delay_hot': {n: seen_hot.get(n) for n in FLASH},
        'onset': onset,
        'per_interval': per_iv,
    }


BEGIN = '<!-- bench-accuracy:begin -->'
END = '<!-- bench-accuracy:end -->'
LOAD_BEGIN = '<!-- bench-accuracy-load:begin -->'
LOAD_END = '<!-- bench-accuracy-load:end -->'
SHARD_BEGIN = '<!-- bench-accuracy-shards:begin -->'
SHARD_END = '<!-- bench-accuracy-shards:end -->'


def fmt(v, pct=False):
    if v is None:
        return 'never'
    return '%.1f%%' % (100 * v) if pct else '%.3f' % v


def table(scores):
    rows = ['| churn | --sample | top-100 precision mean (min) '
            '| recall mean (min) | top-10 rate error mean / max '
            '| 1% key: intervals to top / hot table '
            '| 5% key: intervals to top / hot table |',
            '|---:|---:|---:|---:|---:|---:|---:|']
    for d in sorted(scores, key=lambda d: (d['churn'], d['sample'])):
        rows.append('| %gx | %d | %s (%s) | %s (%s) | %s / %s | %s / %s | %s / %s |' % (
            d['churn'], d['sample'], fmt(d['precision_mean']),
            fmt(d['precision_min']), fmt(d['recall_mean']),
            fmt(d['recall_min']), fmt(d['top10_err_mean'], True),
            fmt(d['top10_err_max'], True),
            d['delay_top'][FLASH[0]] or 'never',
            d['delay_hot'][FLASH[0]] or 'never',
            d['delay_top'][FLASH[1]] or 'never',
            d['delay_hot'][FLASH[1]] or 'never'))
    return '\n'.join(rows) + '\n'


def rates(d):
    """The 1 in N of each scored interval, folded: '1', '8-16'."""
    ns = [iv['sample_n'] for iv in d['per_interval'] if iv.get('sample_n')]
    if not ns:
        return '?'
    lo, hi = min(ns), max(ns)
    return '%d' % lo if lo == hi else '%d-%d' % (lo, hi)


def load_table(scores):
    rows = ['| keys/s | --sample | 1 in N per interval | top-100 precision mean (min) '
            '| ... after the first interval | recall mean (min) '
            '| top-10 rate error mean / max |',
            '|---:|---:|---:|---:|---:|---:|---:|']
    for d in sorted(scores, key=lambda d: (d['requests_per_interval'],
                                           str(d['sample']))):
        rows.append('| %s | %s | %s | %s (%s) | %s (%s) | %s (%s) | %s / %s |' % (
            '{:,}'.format(d['requests_per_interval']), d['sample'], rates(d),
            fmt(d['precision_mean']), fmt(d['precision_min']),
            fmt(d.get('precision_steady_mean')),
            fmt(d.get('precision_steady_min')),
            fmt(d['recall_mean']), fmt(d['recall_min']),
            fmt(d['top10_err_mean'], True), fmt(d['top10_err_max'], True)))
    return '\n'.join(rows) + '\n'


def span(v):
    lo, hi = v
    return '%d' % lo if lo == hi else '%d-%d' % (lo, hi)


def shard_table(scores):
    rows = ['| keys/s | --sample | --place-target | 1 in N | 1 in P '
            '| shard load error: max (median) '
            '| worst shard an interval, median of the intervals '
            '| busiest shard named busiest | the truly busiest ahead of the next by '
            '| its 95% interval covers it (median +/-) |',
            '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    for d in sorted(scores, key=lambda d: (d['requests_per_interval'],
                                           str(d['sample']),
                                           str(d.get('place_target')))):
        s = d.get('shards')
        if not s:
            continue
        rows.append('| %s | %s | %s | %s | %s | %s (%s) | %s | %d of %d | %s or more | %s |' % (
            '{:,}'.format(d['requests_per_interval']), d['sample'],
            d.get('place_target') or 'default', rates(d), span(s['place_p']),
            fmt(s['err_max'], True), fmt(s['err_median'], True),
            fmt(s['err_max_median'], True), s['busiest_first'],
            s['intervals'], fmt(s['true_gap_min'], True),
            '%d of %d (%s)' % (s['covered'], s['shard_intervals'],
                               fmt(s['hw_median'], True))
            if s.get('shard_intervals') else '-'))
    return '\n'.join(rows) + '\n'


def coverage_check(scores, floor=0.93, wide=0.5):
    """The stated 95% intervals over every row's shard-intervals: covered
    in at least floor of them, and not uselessly wide: the 95th percentile
    of |error| / +/- at least wide (halving every +/- would leave more
    than 5% uncovered). Of the shard-intervals with a +/- (P 1 at N 1 is
    exact: +/- 0, and covered when the count is)."""
    n = sum(d['shards'].get('shard_intervals', 0)
            for d in scores if d.get('shards'))
    cov = sum(d['shards'].get('covered', 0)
              for d in scores if d.get('shards'))
    ratios = sorted(r for d in scores if d.get('shards')
                    for r in d['shards'].get('err_over_hw', []))
    if not n:
        return 'shard intervals: none scored', False
    q95 = ratios[int(0.95 * (len(ratios) - 1))] if ratios else None
    ok = cov >= floor * n and (q95 is None or q95 >= wide)
    return ('shard intervals: 95%% interval covered %d of %d (%.1f%%, at '
            'least %.0f%% wanted); 95th percentile of |error| / +/- %s '
            '(at least %.2f wanted: not uselessly wide), median %s: %s' % (
                cov, n, 100.0 * cov / n, 100 * floor,
                '%.2f' % q95 if q95 is not None else '-', wide,
                '%.2f' % median(ratios) if ratios else '-',
                'ok' if ok else 'FAILED'), ok)


def write_docs(path, text, begin=BEGIN, end=END):
    with open(path) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        print('accuracy_score: %s has no %s ... %s markers' % (path, begin, end),
              file=sys.stderr)
        return 1
    head, rest = doc.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(path, 'w') as f:
        f.write(head + begin + '\n' + text + end + tail)
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--table':
        ap = argparse.ArgumentParser()
        ap.add_argument('--table', action='store_true')
        ap.add_argument('--docs')
        ap.add_argument('--note', action='append', default=[])
        ap.add_argument('--load', action='store_true')
        ap.add_argument('--shards', action='store_true')
        ap.add_argument('scores', nargs='+')
        a = ap.parse_args()
        scores = []
        for p in a.scores:
            with open(p) as f:
                scores.append(json.loads(f.read()))
        text = (shard_table(scores) if a.shards
                else load_table(scores) if a.load else table(scores))
        ok = True
        if a.shards:
            line, ok = coverage_check(scores)
            text += '\n' + line + '\n'
        if a.note:
            text += '\n' + '\n'.join(a.note) + '\n'
        sys.stdout.write(text)
        if not ok:
            print('accuracy_score: the shards\' 95% intervals failed the '
                  'coverage check', file=sys.stderr)
        if not a.docs:
            return 0 if ok else 1
        if a.shards:
            return write_docs(a.docs, text, SHARD_BEGIN, SHARD_END) or (
                0 if ok else 1)
        if a.load:
            return write_docs(a.docs, text, LOAD_BEGIN, LOAD_END)
        return write_docs(a.docs, text)
    ap = argparse.ArgumentParser()
    ap.add_argument('truth')
    ap.add_argument('replay')
    ap.add_argument('--churn', type=float, required=True)
    ap.add_argument('--sample', required=True,
                    help='N, or auto[:T]')
    ap.add_argument('--place-target',
                    help='the replay\'s --place-target, for the tables')
    ap.add_argument('--json')
    a = ap.parse_args()
    ivs, top, shards = read_truth(a.truth)
    reps = read_replay(a.replay)
    if not reps:
        print('accuracy_score: %s holds no interval' % a.replay,
              file=sys.stderr)
        return 1
    out = score(ivs, top, reps)
    out['churn'] = a.churn
    out['sample'] = int(a.sample) if a.sample.isdigit() else a.sample
    out['requests_per_interval'] = ivs[min(ivs)]['requests']
    out['place_target'] = a.place_target
    out['shards'] = score_shards(shards, reps)
    text = json.dumps(out, sort_keys=True)
    print(text)
    if a.json:
        with open(a.json, 'w') as f:
            f.write(text + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
