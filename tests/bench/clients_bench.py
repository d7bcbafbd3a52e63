#!/usr/bin/python3
"""clients_bench.py - application hosts x libkeysteer handles against one
etcd (issue 25; docs/fleet.md, "Clients at scale"; run by make
bench-clients).

For each point HOSTSxHANDLES: a fresh single-member etcd on 127.0.0.1, a
ring written with `agent ring set`, optionally CHURN of bench-fleet's
churning agents (build/tests/fleet_scale) writing meanwhile, then HOSTS
processes of build/tests/ks_client_swarm (one simulated application host
each) opening HANDLES handles each. Once every view follows etcd, WRITES
hot/ entries are put at RATE a second; each host reports when each of its
handles' views applied each write's revision. Printed per point, as one
RESULT line and a table row:

  etcd CPU      utime+stime of etcd from /proc/PID/stat over the writes'
                window, % of one core (churn included when on)
  every p50/p99 per write, the time until the last handle saw it; p50 and
                p99 over the writes (ms, from just before the put)
  all p50/p99   over every (write, handle) pair
  unseen        pairs not seen within --wait-ms
  view lag      revisions the slowest view was behind etcd at the end
  MiB/handle    (RSS at the end - RSS before any open) / handles, summed
                over the hosts
  open p50/p99  one keysteer_open (ms); hosts open at once
  host CPU      the host processes' CPU over the window, % of one core
  watchers      etcd's etcd_debugging_mvcc_watcher_total at the window
  follower MiB  per host follower (--host-follower), RSS at the end

Modes (how handles follow; the bench passes them through):
  --words 'W...'        spec words added to every keysteer_open, with
                        {host} (the host's index) and {dir} (its folder)
                        replaced, e.g. --words 'view_file={dir}/view'
  --host-follower CMD   started once per host before its handles, with
                        {etcd} {cluster} {host} {dir} replaced; with
  --follower-wait PATH  ({dir} replaced) the handles open once PATH exists
  --hosts-per-process K the handles of K simulated hosts in one process
                        (each host's handles open with its own words, so
                        with --file-mode on its own host's view file): a
                        machine of 2 cores cannot run 100 hosts' processes
                        and followers at once without the hosts' own
                        scheduling dominating every figure
  --file-mode           the host follower's mode in one word: 'agent
                        follow' per host, its file {dir}/view, the handles
                        on it (view_file=), the hosts' folders under
                        --host-dir (default /dev/shm: tmpfs, as /run is
                        on a real host; an ext4 folder makes every
                        snapshot a disk file's write and map)

Every wait is bounded; a point that passes --point-timeout is stopped and
reported failed. Processes are stopped by their pids, the folder removed.

  clients_bench.py [--points 10x10,5x40] [--churn-agents N] [--writes N]
      [--rate R] [--words W] [--host-follower CMD --follower-wait PATH]
      [--file-mode] [--host-dir DIR] [--hosts-per-process K]
      [--open-threads T] [--etcd-timeout-ms T] [--poll-us U] [--wait-ms W]
      [--point-timeout S]
      [--raw FILE] [--markdown FILE] [--etcd-url URL --etcd-pid PID]
"""
import argparse
import base64
import http.client
import json
import math
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
OUT = os.path.join(ROOT, os.environ.get('OUT', 'build'))
SWARM = os.path.join(OUT, 'tests', 'ks_client_swarm')
FLEET = os.path.join(OUT, 'tests', 'fleet_scale')
AGENT = os.path.join(OUT, 'agent')
CLUSTER = 'bench'  # fleet_scale's, so its churn lands in the watched range
TICK = os.sysconf('SC_CLK_TCK')


class Failed(Exception):
    pass


def log(*a):
    print(*a, flush=True)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(('127.0.0.1', 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def cpu_s(pid):
    """utime+stime of pid and its threads, in seconds."""
    with open('/proc/%d/stat' % pid) as f:
        st = f.read().rsplit(')', 1)[1].split()
    return (int(st[11]) + int(st[12])) / TICK


def rss_kib(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def stop(p):
    if p is None or p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def deadline_left(deadline):
    left = deadline - time.monotonic()
    if left <= 0:
        raise Failed('point timed out')
    return left


class Etcd:
    """A JSON-gateway client of one etcd (keep-alive connection)."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)

    def call(self, path, body):
        self.conn.request('POST', path, json.dumps(body),
                          {'Content-Type': 'application/json'})
        r = self.conn.getresponse()
        data = r.read()
        if r.status != 200:
            raise Failed('etcd %s: %d %s' % (path, r.status, data[:200]))
        return json.loads(data)

    def put(self, key, value):
        b = lambda s: base64.b64encode(s.encode()).decode()
        return int(self.call('/v3/kv/put', {'key': b(key), 'value': b(value)})
                   ['header']['revision'])


def metrics(url):
    """etcd's /metrics as {name: value} for the lines without labels and
    the sum over labels of a few."""
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request('GET', '/metrics')
    out = {}
    for line in c.getresponse().read().decode().splitlines():
        if line.startswith('#') or not line.strip():
            continue
        name, _, val = line.rpartition(' ')
        base = name.split('{', 1)[0]
        try:
            out[base] = out.get(base, 0.0) + float(val)
        except ValueError:
            pass
    c.close()
    return out


def start_etcd(tmp, name):
    cport, pport = free_ports(2)
    url = 'http://127.0.0.1:%d' % cport
    peer = 'http://127.0.0.1:%d' % pport
    logf = open(os.path.join(tmp, name + '.etcd.log'), 'w')
    p = subprocess.Popen(
        ['etcd', '--name', name, '--data-dir', os.path.join(tmp, name + '.data'),
         '--listen-client-urls', url, '--advertise-client-urls', url,
         '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
         '--initial-cluster', '%s=%s' % (name, peer)],
        stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if p.poll() is not None:
            break
        try:
            c = http.client.HTTPConnection('127.0.0.1', cport, timeout=2)
            c.request('GET', '/health')
            if b'true' in c.getresponse().read():
                return p, url
        except OSError:
            pass
        time.sleep(0.1)
    stop(p)
    raise Failed('etcd did not start: see ' + logf.name)


class Host:
    """One ks_client_swarm process and its reader thread."""

    def __init__(self, idx, specs, args, tmp):
        self.idx = idx
        self.n = args.handles_now * len(specs)  # its handles
        self.lines = queue.Queue()
        self.seen = []
        self.err = open(os.path.join(tmp, 'host%d.err' % idx), 'w')
        self.p = subprocess.Popen(
            [SWARM] + [a for sp in specs for a in ('--spec', sp)] +
            ['--handles', str(self.n),
             '--poll-us', str(args.poll_us), '--wait-ms', str(args.wait_ms),
             '--open-threads', str(args.open_threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
            text=True, bufsize=1)
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for line in self.p.stdout:
            if line.startswith('SEEN '):
                f = line.split()
                self.seen.append((int(f[1]), int(f[2]), int(f[3]),
                                  [int(x) for x in f[4:]]))
            else:
                self.lines.put(line)
        self.lines.put(None)

    def send(self, s):
        self.p.stdin.write(s + '\n')
        self.p.stdin.flush()

    def expect(self, word, deadline):
        """The next line starting with word, as {key: value}."""
        while True:
            try:
                line = self.lines.get(timeout=deadline_left(deadline))
            except queue.Empty:
                raise Failed('host %d: no %s line in time' % (self.idx, word))
            if line is None:
                self.err.flush()
                raise Failed('host %d exited: %s' % (
                    self.idx, open(self.err.name).read()[-300:].strip()))
            if line.startswith(word + ' '):
                return dict(kv.split('=', 1) for kv in line.split()[1:])

    def stats(self, deadline):
        self.send('S')
        return self.expect('STATS', deadline)


def hot_doc(h, seq):
    return json.dumps({
        'schema': 1, 'hash': h, 'owner': '198.18.8.1:11211',
        'read_hot': True, 'write_hot': False, 'pinned': False, 'copies': 1,
        'replicas': [], 'subkeys': 1, 'state': 'counting',
        'write_seq': seq, 'reads_per_s': 1000.0, 'writes_per_s': 0.0},
        separators=(',', ':'))


def pct(vals, q):
    if not vals:
        return float('nan')
    vals = sorted(vals)  # nearest rank: of 100, p99 is the 99th
    return vals[max(0, math.ceil(q * len(vals)) - 1)]


def run_point(args, tmp, hosts_n, handles_n, name):
    deadline = time.monotonic() + args.point_timeout
    procs, hosts, followers = [], [], []
    etcd_p = None
    try:
        if args.etcd_url:
            url, etcd_pid = args.etcd_url, args.etcd_pid
        else:
            etcd_p, url = start_etcd(tmp, name)
            procs.append(etcd_p)
            etcd_pid = etcd_p.pid
        ring = subprocess.run(
            [AGENT, 'ring', 'set', '--etcd', url, '--cluster', CLUSTER,
             '--force', '--shards',
             ','.join('198.18.8.%d:11211' % i for i in range(1, 5))],
            capture_output=True, text=True, timeout=deadline_left(deadline))
        if ring.returncode:
            raise Failed('ring set: ' + (ring.stderr or ring.stdout)[-300:])
        if args.churn_agents:
            fl = subprocess.Popen(
                [FLEET, '--etcd', url, '--cluster', CLUSTER, '--agents',
                 str(args.churn_agents), '--warmup', '3', '--steady', '0',
                 '--churn', '3600'],
                stdout=subprocess.PIPE, stderr=open(
                    os.path.join(tmp, name + '.fleet.err'), 'w'), text=True)
            procs.append(fl)
            first = fl.stdout.readline()
            if not first.startswith('# fleet_scale'):
                raise Failed('fleet_scale did not start: see %s.fleet.err' %
                             name)
            # its churn phase starts after 3 intervals of warm-up
            time.sleep(min(4.0, deadline_left(deadline)))
        etcd = Etcd(url)
        for i in range(hosts_n):
            d = os.path.join(args.host_dir, '%s.host%d' % (name, i))
            os.makedirs(d, exist_ok=True)
            sub = {'etcd': url, 'cluster': CLUSTER, 'host': str(i), 'dir': d}
            if args.host_follower:
                fp = subprocess.Popen(
                    [w.format(**sub) for w in shlex.split(args.host_follower)],
                    stdin=subprocess.DEVNULL, stdout=open(
                        os.path.join(d, 'follower.log'), 'w'),
                    stderr=subprocess.STDOUT)
                procs.append(fp)
                followers.append(fp)
                if args.follower_wait:
                    path = args.follower_wait.format(**sub)
                    while not os.path.exists(path):
                        if fp.poll() is not None:
                            raise Failed('host follower %d exited: see %s' %
                                         (i, os.path.join(d, 'follower.log')))
                        deadline_left(deadline)
                        time.sleep(0.05)
        args.handles_now = handles_n
        t_open = time.monotonic()
        specs = []
        for i in range(hosts_n):
            d = os.path.join(args.host_dir, '%s.host%d' % (name, i))
            sub = {'etcd': url, 'cluster': CLUSTER, 'host': str(i), 'dir': d}
            specs.append(('etcd=%s cluster=%s etcd_timeout_ms=%d %s' % (
                url, CLUSTER, args.etcd_timeout_ms,
                args.words.format(**sub))).strip())
        # a process per simulated host, or one per K of them
        k = args.hosts_per_process
        for j in range(0, hosts_n, k):
            h = Host(j // k, specs[j:j + k], args, tmp)
            hosts.append(h)
            procs.append(h.p)
        opened = [h.expect('OPENED', deadline) for h in hosts]
        open_s = time.monotonic() - t_open
        # every view follows etcd (its watch started) before the writes
        while True:
            st = [h.stats(deadline) for h in hosts]
            if all(int(s['view_up']) == h.n for s, h in zip(st, hosts)):
                break
            time.sleep(0.2)
        m0 = metrics(url)
        c0 = cpu_s(etcd_pid)
        f0 = [cpu_s(p.pid) for p in followers]
        t0 = time.monotonic()
        writes = []
        for k in range(args.writes):
            due = t0 + k / args.rate
            time.sleep(max(0.0, min(due - time.monotonic(),
                                    deadline_left(deadline))))
            h = '%016x' % (0xb0b0000000000000 + k % 16)
            ts = time.monotonic_ns()
            rev = etcd.put('/keysteer/%s/hot/%s' % (CLUSTER, h), hot_doc(h, k))
            put_ms = (time.monotonic_ns() - ts) / 1e6
            for ho in hosts:
                ho.send('W %d %d' % (rev, ts))
            writes.append((rev, put_ms))
        while any(len(h.seen) < len(writes) for h in hosts):
            deadline_left(deadline)
            for h in hosts:
                if h.p.poll() is not None and len(h.seen) < len(writes):
                    raise Failed('host %d exited during the writes' % h.idx)
            time.sleep(0.05)
        win = time.monotonic() - t0
        c1 = cpu_s(etcd_pid)
        m1 = metrics(url)
        f1 = [cpu_s(p.pid) for p in followers]
        st1 = [h.stats(deadline) for h in hosts]
        head_rev = etcd.put('/keysteer-bench/now', 'x')
        etcd_rss = rss_kib(etcd_pid) / 1024
        frss = [rss_kib(p.pid) / 1024 for p in followers]
    finally:
        # the churn first, then a host still opening is not waited for:
        # 10 s for all to close their handles, then every process by pid
        for p in procs:
            if p is not etcd_p and p not in [h.p for h in hosts]:
                stop(p)
        for h in hosts:
            try:
                h.send('Q')
            except (BrokenPipeError, ValueError):
                pass
        end = time.monotonic() + 10
        for h in hosts:
            try:
                h.p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in reversed(procs):
            stop(p)

    total = hosts_n * handles_n
    every, allp, unseen, overrun = [], [], 0, 0
    for w in range(len(writes)):
        worst = 0
        for h in hosts:
            rev, seen, ov, ds = h.seen[w]
            unseen += h.n - seen
            overrun += ov
            ok = [d for d in ds if d >= 0]
            allp.extend(ok)
            worst = max([worst] + ok)
        every.append(worst)
    host_cpu = sum(float(s['cpu_ms']) for s in st1) - sum(
        float(s['cpu_ms']) for s in st)
    rss_delta = sum(int(s['rss_kib']) for s in st1) - sum(
        int(o['rss0_kib']) for o in opened)
    opens = [float(o['open_p50_ms']) for o in opened]
    r = {
        'hosts': hosts_n, 'handles': handles_n, 'total': total,
        'churn_agents': args.churn_agents, 'words': args.words or '-',
        'follower': 'yes' if args.host_follower else 'no',
        'writes': len(writes), 'window_s': '%.1f' % win,
        'etcd_cpu_pct': '%.1f' % (100 * (c1 - c0) / win),
        'etcd_rss_mib': '%.0f' % etcd_rss,
        'watchers': '%.0f' % m1.get('etcd_debugging_mvcc_watcher_total', -1),
        'etcd_sent_kib_ps': '%.0f' % (
            (m1.get('etcd_network_client_grpc_sent_bytes_total', 0) -
             m0.get('etcd_network_client_grpc_sent_bytes_total', 0)) / 1024 /
            win),
        'puts_ps': '%.0f' % ((m1.get('etcd_mvcc_put_total', 0) -
                             m0.get('etcd_mvcc_put_total', 0)) / win),
        'every_p50_ms': '%.1f' % (pct(every, 0.5) / 1e3),
        'every_p99_ms': '%.1f' % (pct(every, 0.99) / 1e3),
        'all_p50_ms': '%.1f' % (pct(allp, 0.5) / 1e3),
        'all_p99_ms': '%.1f' % (pct(allp, 0.99) / 1e3),
        'unseen': unseen, 'overrun': overrun,
        # how far the slowest view was behind etcd at the window's end
        'view_lag_revs': head_rev - min(int(s['min_rev']) for s in st1),
        'put_p50_ms': '%.1f' % pct([w[1] for w in writes], 0.5),
        'mib_per_handle': '%.2f' % (rss_delta / 1024 / total),
        'host_base_mib': '%.1f' % (sum(int(o['rss0_kib']) for o in opened) /
                                   1024 / len(hosts)),
        'processes': len(hosts),
        'open_p50_ms': '%.1f' % pct(opens, 0.5),
        'open_p99_ms': '%.1f' % max(float(o['open_p99_ms']) for o in opened),
        'open_all_s': '%.1f' % open_s,
        'host_cpu_pct': '%.1f' % (host_cpu / 10 / win),
        'threads': sum(int(s['threads']) for s in st1),
        'refused': sum(int(s['refused']) for s in st1),
        'sweep_max_ms': '%.1f' % (max(float(s['sweep_max_us'])
                                      for s in st1) / 1e3),
        'follower_mib': '%.1f' % (sum(frss) / len(frss)) if frss else '-',
        'follower_cpu_pct': '%.1f' % (100 * sum(
            b - a for a, b in zip(f0, f1)) / win / len(f0)) if f0 else '-',
    }
    return r


COLS = [('hosts x handles', lambda r: '%d x %d' % (r['hosts'], r['handles'])),
        ('handles', 'total'), ('processes', 'processes'),
        ('churn agents', 'churn_agents'),
        ('etcd CPU %', 'etcd_cpu_pct'), ('watchers', 'watchers'),
        ('every p50 ms', 'every_p50_ms'), ('every p99 ms', 'every_p99_ms'),
        ('all p99 ms', 'all_p99_ms'), ('unseen', 'unseen'),
        ('view lag', 'view_lag_revs'),
        ('MiB/handle', 'mib_per_handle'), ('open p50 ms', 'open_p50_ms'),
        ('open p99 ms', 'open_p99_ms'), ('host CPU %', 'host_cpu_pct'),
        ('follower MiB', 'follower_mib'), ('etcd sent KiB/s',
                                           'etcd_sent_kib_ps')]


def table(rows):
    head = [c[0] for c in COLS]
    out = ['| ' + ' | '.join(head) + ' |', '|' + '---:|' * len(head)]
    for r in rows:
        out.append('| ' + ' | '.join(
            str(f(r) if callable(f) else r[f]) for _, f in COLS) + ' |')
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--points', default='10x10',
                    help='HOSTSxHANDLES,... (default 10x10)')
    ap.add_argument('--churn-agents', type=int, default=0,
                    help="bench-fleet's churning agents meanwhile (0: none)")
    ap.add_argument('--writes', type=int, default=100)
    ap.add_argument('--rate', type=float, default=10.0,
                    help='hot/ writes a second (default 10)')
    ap.add_argument('--words', default='',
                    help='spec words for every open ({host}, {dir})')
    ap.add_argument('--host-follower', default='',
                    help='command per host ({etcd} {cluster} {host} {dir})')
    ap.add_argument('--follower-wait', default='',
                    help='path ({dir}) that exists once the follower serves')
    ap.add_argument('--file-mode', action='store_true',
                    help="'agent follow' per host, handles on its file")
    ap.add_argument('--host-dir', default='',
                    help="the hosts' folders under this (default: the "
                    "run's folder; /dev/shm with --file-mode)")
    ap.add_argument('--hosts-per-process', type=int, default=1,
                    help='simulated hosts per ks_client_swarm process '
                    '(default 1; each host its own spec: its own view file '
                    'with --file-mode)')
    ap.add_argument('--open-threads', type=int, default=4,
                    help='opens at once per host (default 4)')
    ap.add_argument('--etcd-timeout-ms', type=int, default=30000,
                    help="the handles' etcd_timeout_ms (default 30000: "
                    'under churn, opens at once wait long for their read)')
    ap.add_argument('--poll-us', type=int, default=1000)
    ap.add_argument('--wait-ms', type=int, default=20000)
    ap.add_argument('--point-timeout', type=float, default=300)
    ap.add_argument('--raw', default='', help='append RESULT lines here')
    ap.add_argument('--markdown', default='', help='write the table here')
    ap.add_argument('--etcd-url', default='',
                    help='an etcd already running (its data is left)')
    ap.add_argument('--etcd-pid', type=int, default=0)
    args = ap.parse_args()
    if not 1 <= args.hosts_per_process <= 64:
        ap.error('--hosts-per-process: 1 to 64')
    if args.file_mode:
        if args.host_follower or args.follower_wait:
            ap.error('--file-mode is --host-follower and --follower-wait')
        args.host_follower = (shlex.quote(AGENT) + ' follow --etcd {etcd} '
                              '--cluster {cluster} --view-file {dir}/view')
        args.follower_wait = '{dir}/view'
        args.words = ('view_file={dir}/view ' + args.words).strip()
        if not args.host_dir:
            args.host_dir = '/dev/shm'
    if args.etcd_url and not args.etcd_pid:
        ap.error('--etcd-url needs --etcd-pid (its CPU is the figure)')
    points = []
    for p in args.points.split(','):
        try:
            h, n = (int(x) for x in p.lower().split('x'))
        except ValueError:
            ap.error('--points: %r is not HOSTSxHANDLES' % p)
        if h < 1 or n < 1:
            ap.error('--points: %r: both at least 1' % p)
        points.append((h, n))
    need = [SWARM, AGENT] + ([FLEET] if args.churn_agents else [])
    for b in need:
        if not os.access(b, os.X_OK):
            sys.exit('clients_bench: %s is not built; run make bench-clients'
                     % b)
    if not args.etcd_url and not shutil.which('etcd'):
        sys.exit('clients_bench: etcd is missing; run make deps (etcd-server)')
    def on_term(*_):
        # once: the cleanup that follows must not be cut short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_term)
    tmp = tempfile.mkdtemp(prefix='keysteer-clients.')
    host_root = args.host_dir
    # the hosts' folders: a folder of this run's own under --host-dir
    args.host_dir = (tempfile.mkdtemp(prefix='keysteer-clients.',
                                      dir=host_root) if host_root else tmp)
    rows, failed = [], 0
    log('clients_bench: points %s, churn agents %d, %d writes at %g/s, '
        'words %r, host follower %r' % (args.points, args.churn_agents,
                                        args.writes, args.rate, args.words,
                                        args.host_follower))
    log('machine: %d CPUs, %s, load %s' % (
        os.cpu_count(), os.uname().release,
        ' '.join(open('/proc/loadavg').read().split()[:3])))
    try:
        for i, (h, n) in enumerate(points):
            log('== %d hosts x %d handles: load %s' % (
                h, n, ' '.join(open('/proc/loadavg').read().split()[:3])))
            try:
                r = run_point(args, tmp, h, n, 'p%d' % i)
            except (Failed, OSError, subprocess.TimeoutExpired) as e:
                log('   FAILED: %s' % e)
                failed = 1
                continue
            line = 'RESULT ' + ' '.join('%s=%s' % (k, str(v).replace(' ', '_'))
                                        for k, v in r.items())
            log(line)
            if args.raw:
                with open(args.raw, 'a') as f:
                    f.write(line + '\n')
            rows.append(r)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(args.host_dir, ignore_errors=True)
    md = table(rows)
    log()
    log(md)
    if args.markdown:
        with open(args.markdown, 'w') as f:
            f.write(md + '\n')
    return failed


if __name__ == '__main__':
    sys.exit(main())
