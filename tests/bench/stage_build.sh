#!/usr/bin/env bash
# stage_build.sh - agents whose datapath stops after successive stages, for
# tests/bench/stage_bench.sh (issue 14: where the live time goes). The
# stops are compile-time switches in tests/bench/stages.patch, applied to
# a scratch copy of the tree, never to the tree itself.
#
#   tests/bench/stage_build.sh DIR [STAGE[:fixed] ...]
#
# Builds DIR/build-STAGE/agent for each STAGE (default: 1 2 3 4 5 6 7 8
# 9 99), from a copy of this tree (its working files) in DIR/src with the
# patch applied; `:fixed` also defines KS_FIXED_COL=1 (every key in sketch
# column 0 and candidate bucket 0), the agent then in DIR/build-STAGEf.
# Stages: 1 the maps looked up and the packet counted; 2 Ethernet to the
# payload parsed; 3 the per-CPU scratch filled; 4 the TCP flow found (UDP:
# the memcached counters); 5 the lone get parsed and counted, the sample
# decided; 6 a sampled key copied (bpf_xdp_load_bytes); 7 hashed; 8 the
# sketch updated; 9 the candidate table offered the key; 99 the whole
# program. Prints each
# build's verifier counts (build-*/tests/ks_vcount). Then, for example:
#   tests/bench/stage_bench.sh --agents "s5=DIR/build-5/agent full=DIR/build-99/agent"
#
#   tests/bench/stage_build.sh --express DIR [STAGE ...]
#
# (issue 27) Builds DIR/build-STAGE/keysteer.bpf.o only, with
# tests/bench/express_stages.patch instead: the express path (ks_express*:
# the unsampled UDP get, the in-order TCP get, the value continuation)
# stopped at each STAGE (default 0 1 2 3 4 5 6 7 11 12 13 20 21 22 99; the patch's
# head lists them), for `build/tests/bench --against OBJ`, whose "this
# build - the other" is then what the packet pays after that stop. A stage
# counts its packets wrong on purpose: the bench marks its rows INVALID
# (exit 1) and still prints the timings. For example:
#   for n in 1 2 3; do build/tests/bench --against DIR/build-$n/keysteer.bpf.o \
#     --runs 12 --cpu 1 --only 'get16_unsampled$,cont_value$'; done
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EXPRESS='' PATCH=stages.patch
if [ "${1:-}" = --express ]; then
	EXPRESS=1 PATCH=express_stages.patch
	shift
fi
[ $# -ge 1 ] || { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
DIR=$1
shift
if [ -n "$EXPRESS" ]; then
	STAGES=${*:-0 1 2 3 4 5 6 7 11 12 13 20 21 22 99}
else
	STAGES=${*:-1 2 3 4 5 6 7 8 9 99}
fi
ARCH=$(uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
rm -rf "$DIR/src"
mkdir -p "$DIR/src"
(cd "$ROOT" && cp -a Makefile bpf user tests vmlinux "$DIR/src/")
(cd "$DIR/src" && patch -s -p1 <"$ROOT/tests/bench/$PATCH")
for st in $STAGES; do
	if [ -n "$EXPRESS" ]; then
		[[ "$st" =~ ^[0-9]+$ ]] || { echo "stage_build.sh: bad stage '$st'" >&2; exit 2; }
		make -s -C "$DIR/src" OUT="build-$st" BPF_CFLAGS="-g -O2 -target bpf \
-D__TARGET_ARCH_$ARCH -Wall -Werror -Wno-unused-function -Ibuild-$st \
-Ivmlinux/$ARCH -Ibpf -DKS_XSTAGE=$st" "build-$st/keysteer.bpf.o" >/dev/null
		ln -sfn "src/build-$st" "$DIR/build-$st"
		echo "$DIR/build-$st/keysteer.bpf.o"
		continue
	fi
	n=${st%%:*} defs="-DKS_STAGE=${st%%:*}" out=build-${st%%:*}
	[[ "$n" =~ ^[0-9]+$ ]] || { echo "stage_build.sh: bad stage '$st'" >&2; exit 2; }
	if [ "$st" != "$n" ]; then
		[ "${st#*:}" = fixed ] || { echo "stage_build.sh: bad stage '$st'" >&2; exit 2; }
		defs="$defs -DKS_FIXED_COL=1" out=${out}f
	fi
	make -s -C "$DIR/src" OUT="$out" BPF_CFLAGS="-g -O2 -target bpf \
-D__TARGET_ARCH_$ARCH -Wall -Werror -Wno-unused-function -I$out \
-Ivmlinux/$ARCH -Ibpf $defs" "$out/agent" "$out/tests/ks_vcount" >/dev/null
	ln -sfn "src/$out" "$DIR/$out"
	echo "$out: $("$DIR/$out/tests/ks_vcount" "$DIR/$out/keysteer.bpf.o" 2>&1 |
		grep -o 'ks[a-z_]*ingress verified_insns=[0-9]*' | tr '\n' ' ')"
done
