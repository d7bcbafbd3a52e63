#!/usr/bin/python3
"""ks_rate_check.py - what test_sample_auto.sh asks of 'agent report
--watch --json' output (one report a line, repeated while the interval
stays the same).

  ks_rate_check.py FILE quiet TARGET    a closed interval (seq >= 1) with
                                        every CPU at 1 in 1, auto at TARGET
  ks_rate_check.py FILE loaded MIN_N AFTER
                                        one after interval AFTER with some
                                        CPU at 1 in MIN_N or lower
  ks_rate_check.py FILE seq             the last interval's seq
  ks_rate_check.py FILE sum KEY TRUE [SCALE]
      every interval from the first to the last, none missing: KEY's
      estimated reads (x SCALE, 1 by default: the test switch's control
      breaks the scaling on purpose) summed, against TRUE (memcached's
      cmd_get); within the sum of the per-interval error bounds (2 sigma
      each, plus the count-min term) plus one count an interval (the
      report rounds each), and the intervals must span a rate change.
      Prints the figures; exit 0 inside, 1 outside.
Exit 1 when the condition does not hold (yet), 2 on bad input.
"""
import json
import sys


def reports(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue  # a line cut short while written
                if d.get('seq', 0) >= 1 or d.get('interval_measured_ms'):
                    out[d['seq']] = d
    except OSError:
        pass
    return out


def main():
    path, what = sys.argv[1], sys.argv[2]
    reps = reports(path)
    if what == 'seq':
        print(max(reps) if reps else -1)
        return 0
    if what == 'quiet':
        target = int(sys.argv[3])
        for seq, d in sorted(reps.items()):
            n = d.get('sample_cpu_n', [])
            if seq >= 1 and n and all(x == 1 for x in n) and \
                    d.get('sample_target') == target:
                print('%d interval #%d: every CPU at 1/1 (%d CPUs)' % (seq, seq, len(n)))
                return 0
        return 1
    if what == 'loaded':
        least, after = int(sys.argv[3]), int(sys.argv[4])
        for seq, d in sorted(reps.items()):
            n = d.get('sample_cpu_n', [])
            if seq > after and n and max(n) >= least:
                print('interval #%d: 1/N by CPU %s' % (seq, n))
                return 0
        return 1
    if what == 'sum':
        key, true = sys.argv[3], int(sys.argv[4])
        scale = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
        seqs = sorted(reps)
        missing = [s for s in range(seqs[0], seqs[-1] + 1) if s not in reps]
        if missing:
            print('intervals missing from the watch: %s' % missing[:10])
            return 2
        est = bound = 0.0
        rates = set()
        for s in seqs:
            d = reps[s]
            secs = float(d['interval_measured_ms']) / 1000.0
            rates.add(max(d.get('sample_cpu_n', [1])))
            for e in d.get('top', []):
                if e.get('key') == key:
                    est += e['reads'] * scale
                    bound += float(e['error_bound']) * secs + 1
        diff = est - true
        print('%s: %.0f estimated over intervals #%d-#%d at 1/N %s, memcached %d, '
              'off by %.0f (%.2f%%), bound %.0f' % (
                  key, est, seqs[0], seqs[-1], sorted(rates), true, diff,
                  100.0 * diff / true if true else 0, bound))
        if len(rates) < 2:
            print('no rate change among the intervals summed')
            return 1
        return 0 if abs(diff) <= bound else 1
    return 2


if __name__ == '__main__':
    sys.exit(main())
