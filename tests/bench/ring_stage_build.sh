#!/usr/bin/env bash
# ring_stage_build.sh - the ringed sampled key's placement (ks_ring_place,
# bpf/ks_ring.bpf.h) stopped after successive stages, for line rate
# (issue 27: where a ringed sampled key's time goes,
# docs/benchmarks.md). line_bench.sh --object takes no --sample, so each
# stage is a whole scratch tree: DIR/STAGE is a copy of this tree's
# tracked files and of its build/ (so `make` rebuilds only the object,
# its skeleton and the bench), with ks_ring_place cut at STAGE; the tree
# itself is never touched. Then, taking turns with this tree:
#   KS_NETNS_PREFIX=xx DIR/STAGE/tests/bench/line_bench.sh --sample auto \
#     --log-samples on --ring 4 --keys 256 --width 0.012 --seconds 75
# A stage counts no shard on purpose: its run ends "0 keys placed" and
# exits 1, the ratio still printed.
#
#   tests/bench/ring_stage_build.sh DIR [STAGE ...]
#
# Stages (default all): meta (the ring half looked up, nshards checked),
# rules (and the shard rules' check, ks_dedicated_place), find (and the
# ring cache's find; the packet then counted unplaced), search (and, on
# a miss, the MD5, the owner's search and the keep: since the slot keeps
# the owner, a hit searches nothing), shards (and the ks_shards count);
# at 5ea5aa8 (the owner not kept) find stopped after the find, the MD5
# and keep of a miss, and search after the owner's search. nocall: the
# whole placement with ks_ring_cache_find inline. (pad, 320-byte slots,
# was cut here until the tree's slots became 320 bytes in a plain array,
# docs/benchmarks.md "The ring cache's find in one line".)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [meta|rules|find|search|shards|nocall ...]" >&2; exit 2; }
DIR=$1; shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ -f "$ROOT/build/tests/bench" ] || { echo "$0: build this tree first (make all tests)" >&2; exit 2; }
STAGES=("$@"); [ ${#STAGES[@]} -gt 0 ] || STAGES=(meta rules find search shards nocall)
for st in "${STAGES[@]}"; do
	case $st in meta | rules | find | search | shards | nocall) ;;
	*) echo "$0: unknown stage $st" >&2; exit 2 ;;
	esac
	d=$DIR/$st
	rm -rf "$d"; mkdir -p "$d"
	(cd "$ROOT" && git ls-files -z | tar --null -T - -cf -) | tar -C "$d" -xpf -
	cp -a "$ROOT/build" "$d/build"
	/usr/bin/python3 - "$st" "$d" <<'PY'
import sys
st, d = sys.argv[1], sys.argv[2]
def edit(path, old, new):
    p = d + '/' + path
    s = open(p).read()
    if old not in s:
        sys.exit('ring_stage_build.sh: %s: the text to cut at is gone' % path)
    open(p, 'w').write(s.replace(old, new, 1))
ring = 'bpf/ks_ring.bpf.h'
stop = '\t\treturn 1;\n'
if st == 'meta':
    edit(ring, '\t/* one shard owns every key', '\tif (h->meta.self != 12345)\n' + stop + '\t/* one shard owns every key')
elif st == 'rules':
    edit(ring, '\telse if (h->meta.dist == KS_DIST_PYMEMCACHE)', '\telse if (h->meta.self != 12345)\n' + stop + '\telse if (h->meta.dist == KS_DIST_PYMEMCACHE)')
elif st == 'find':
    edit(ring, '\tif (hit >> 33)\n', '\tif (hit != 12345)\n\t\treturn KS_RING_UNPLACED;\n\tif (hit >> 33)\n')
elif st == 'search':
    edit(ring, '\tif (owner == KS_RING_UNPLACED) {', '\tif (owner != 12345)\n\t\treturn 1;\n\tif (owner == KS_RING_UNPLACED) {')
elif st == 'shards':
    edit(ring, '\tpc = ks_pkt_counters();\n\tif (pc)\n\t\tpc->n[KS_PKT_RING_HIT]++;', '\treturn 1;\n\tpc = ks_pkt_counters();\n\tif (pc)\n\t\tpc->n[KS_PKT_RING_HIT]++;')
elif st == 'nocall':
    edit('bpf/ks_ring_cache.bpf.h', '__noinline __u64 ks_ring_cache_find(', 'static __always_inline __u64 ks_ring_cache_find(')
PY
	make -C "$d" -j2 build/tests/bench >"$d/build.log" 2>&1 ||
		{ tail "$d/build.log" >&2; echo "$0: $st: build failed" >&2; exit 1; }
	"$ROOT/build/tests/ks_vcount" "$d/build/keysteer.bpf.o" | grep ks_ingress || true
	echo "built $d (line_bench: $d/tests/bench/line_bench.sh)"
done
