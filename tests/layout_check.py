#!/usr/bin/python3
"""layout_check.py - user/ keeps the shape docs/design.md gives it.

Prints one PASS/FAIL line per rule (tests/run.sh counts them):
  layout_no_include_cycle   no cycle among user/ modules (x.c and x.h are one
                            module; an edge is a quoted include of another)
  layout_pure_core          core/, render/ and util/ (libks.a) include no
                            dp/, net/, agent/ or cli/ header and no libbpf
  layout_core_no_io         core/ includes no header of the rest but util/
  layout_client_lib         client/ (libkeysteer) includes only core/, util/,
                            net/ and its own headers, no libbpf; nothing
                            outside client/ includes a client/ header
  layout_agent_threads      the agent's code (every dir but client/, and
                            user/agent.c) creates threads only through
                            util/thread.c's ks_thread_start: signals
                            blocked, capabilities dropped (docs/operations.md,
                            "The agent's threads")
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
USER = os.path.join(ROOT, 'user')
INC = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)
DIRS = ('cli', 'core', 'render', 'dp', 'net', 'agent', 'util', 'client')


def modules():
    mods = {}
    for d in DIRS:
        for f in sorted(os.listdir(os.path.join(USER, d))):
            if f.endswith(('.c', '.h')):
                mod = d + '/' + f[:-2]
                with open(os.path.join(USER, d, f), errors='replace') as fh:
                    mods.setdefault(mod, []).extend(INC.findall(fh.read()))
    return mods


def edges(mods):
    g = {m: set() for m in mods}
    for m, incs in mods.items():
        for kind, path in incs:
            if kind == '"' and path.endswith('.h'):
                dep = path[:-2]
                if dep in mods and dep != m:
                    g[m].add(dep)
    return g


def find_cycle(g):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(g[n]):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(g):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main():
    mods = modules()
    g = edges(mods)
    fails = 0
    cycle = find_cycle(g)
    if cycle:
        print('FAIL layout_no_include_cycle: ' + ' -> '.join(cycle))
        fails += 1
    else:
        print('PASS layout_no_include_cycle (%d modules)' % len(mods))
    bad = []
    for m, incs in sorted(mods.items()):
        if m.split('/')[0] not in ('core', 'render', 'util'):
            continue
        for kind, path in incs:
            top = path.split('/')[0]
            if (kind == '"' and top in ('dp', 'net', 'agent', 'cli')) or \
               path.startswith('bpf/'):
                bad.append('%s includes %s' % (m, path))
    if bad:
        print('FAIL layout_pure_core: ' + '; '.join(bad[:8]))
        fails += 1
    else:
        print('PASS layout_pure_core')
    bad = ['%s includes %s' % (m, p) for m, incs in sorted(mods.items())
           if m.startswith('core/') for k, p in incs
           if k == '"' and p.split('/')[0] in DIRS and
           p.split('/')[0] not in ('core', 'util')]
    if bad:
        print('FAIL layout_core_no_io: ' + '; '.join(bad[:8]))
        fails += 1
    else:
        print('PASS layout_core_no_io')
    bad = []
    for m, incs in sorted(mods.items()):
        inside = m.startswith('client/')
        for k, p in incs:
            top = p.split('/')[0]
            if inside and ((k == '"' and top in DIRS and
                            top not in ('core', 'util', 'net', 'client')) or
                           p.startswith(('bpf/', 'linux/bpf.h')) or
                           p.endswith('.skel.h')):
                bad.append('%s includes %s' % (m, p))
            if not inside and k == '"' and top == 'client':
                bad.append('%s includes %s' % (m, p))
    if bad:
        print('FAIL layout_client_lib: ' + '; '.join(bad[:8]))
        fails += 1
    else:
        print('PASS layout_client_lib')
    bad = []
    call = re.compile(r'\bpthread_create\s*\(')
    srcs = [os.path.join(USER, 'agent.c')] + [
        os.path.join(USER, d, f) for d in DIRS if d != 'client'
        for f in sorted(os.listdir(os.path.join(USER, d)))
        if f.endswith(('.c', '.h'))]
    for path in srcs:
        rel = os.path.relpath(path, USER)
        if rel == 'util/thread.c':
            continue
        with open(path, errors='replace') as fh:
            if call.search(fh.read()):
                bad.append(rel)
    if bad:
        print('FAIL layout_agent_threads: pthread_create outside '
              'util/thread.c in ' + ', '.join(bad[:8]))
        fails += 1
    else:
        print('PASS layout_agent_threads')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
