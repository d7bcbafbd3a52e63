#!/usr/bin/env bash
# plant_bugs.sh - does the differential fuzzer find real datapath bugs?
# Builds copies of the BPF object, each with one small bug planted (in a
# temporary folder: bpf/ itself is never touched), links dfuzz against each
# and runs it for a few seconds. Prints one line per mutant: found (with
# the finding's name and the executions it took) or MISSED.
#
#   tests/fuzz/plant_bugs.sh [SECONDS [NAME]]  (default 15 per mutant; root;
#                                               NAME: that mutant alone)
#
# The first seven bugs are in the parser, the next five in the stream layer
# (found by dfuzz's stream mode), the last in the multi-get key runs, which
# only run when a key is not due for sampling (found at dfuzz --sample 3; a
# fourth field gives dfuzz's extra arguments), the very last in the express
# path's own sampling into the sample log, which runs only with the log on
# and tracing off (found at dfuzz --slog). A "found" counts only mismatches that are
# not known disagreements (known:*), which the datapath has without a bug.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
SECS=${1:-15}
ONLY=${2:-}
OUT=${OUT:-build}
ARCH=$(uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
tmp=$(mktemp -d /tmp/ks_plant.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# name|file|sed expression (one edit each)[|dfuzz arguments]
mutants=(
	"digits-off-by-one|ks_parse_mc.bpf.h|s/i <= KS_MAX_DIGITS; i++/i < KS_MAX_DIGITS; i++/"
	"data-cr-not-checked|ks_parse_mc.bpf.h|s/if ((tail < s->end/if (0 \&\& (tail < s->end/"
	"scan-reads-stale-bytes|ks_parse_mc.bpf.h|0,/return p < stop ? (int)p : -1;/s//return (int)p;/"
	"stale-key-bytes|ks_sample.bpf.h|0,/^\tks_key_clear(s);$/s//\t;/"
	"keys-before-bad-key-lost|ks_parse_mc.bpf.h|0,/\t\t\tks_count_op(s->op, 0, s->nkeys, 0);/s//\t\t\t;/"
	"lf-only-line-end-refused|ks_parse_mc.bpf.h|s/^\tif (c == '\\\\n')$/\tif (0)/"
	"gats-alone-refused|ks_parse_mc.bpf.h|s/s->op != KS_OP_GAT \&\& s->op != KS_OP_GATS/s->op != KS_OP_GAT/"
	"overlap-parsed-again|ks_flow.bpf.h|s/s->seg_start = f->next_seq - seq;/s->seg_start = 0;/"
	"duplicate-parsed-again|ks_flow.bpf.h|s/if ((__s32)(seq + plen - f->next_seq) <= 0) {/if (0) {/"
	"gap-not-counted|ks_flow.bpf.h|s/ks_count_pkt(KS_PKT_RESYNC_GAP);/;/"
	"carry-dropped|ks_stream.bpf.h|s/w.carry = r;/w.carry = 0;/"
	"data-left-forgotten|ks_stream.bpf.h|s/w.left = f->left;/w.left = 0;/"
	"key-run-countdown-off|ks_parse_mc.bpf.h|s/\ts->countdown = cd - (__u32)n;/\ts->countdown = cd - (__u32)n + 1;/|--sample 3"
	"express-key-tail-shifted|ks_fast_sample.bpf.h|0,/w = \*(__u64 \*)q >> ((8 - rem) \* 8);/!s/w = \*(__u64 \*)q >> ((8 - rem) \* 8);/w = *(__u64 *)q >> ((7 - rem) * 8);/|--slog"
)

for m in "${mutants[@]}"; do
	IFS='|' read -r name file expr args <<<"$m"
	[ -n "$ONLY" ] && [ "$name" != "$ONLY" ] && continue
	d=$tmp/$name
	mkdir -p "$d/build"
	cp -r bpf "$d/bpf"
	sed -i "$expr" "$d/bpf/$file"
	if cmp -s "bpf/$file" "$d/bpf/$file"; then
		echo "# $name: the edit did not apply (bpf/$file changed?)"
		continue
	fi
	if ! clang -g -O2 -target bpf -D__TARGET_ARCH_"$ARCH" -Wall -Wno-unused-function \
		-I"$d/build" -Ivmlinux/"$ARCH" -I"$d/bpf" -c "$d/bpf/keysteer.bpf.c" \
		-o "$d/build/keysteer.bpf.o" 2>"$d/cc.log" ||
		! bpftool gen skeleton "$d/build/keysteer.bpf.o" >"$d/build/keysteer.skel.h"; then
		echo "# $name: does not build: $(head -c 200 "$d/cc.log")"
		continue
	fi
	# what the Makefile links dfuzz with: libks.a for the user-space
	# helpers it calls (names, purge.c's hex digits since 9fb97b7: until
	# 3 Dec this line named names.c alone, so no mutant linked and each
	# was skipped without a word)
	if ! gcc -O2 -g -D_GNU_SOURCE -I"$d/build" -Ibpf -Iuser -Itests/lib -Itests/fuzz \
		tests/fuzz/dfuzz.c tests/fuzz/dfuzz_dp.c tests/fuzz/dfuzz_gen.c \
		tests/fuzz/ref_mc.c tests/lib/pkt.c user/dp/load_private.c user/dp/cpu_maps.c \
		"$OUT/libks.a" -o "$d/dfuzz" -lbpf -lelf -lz -lm 2>"$d/ld.log"; then
		echo "FAIL $name: dfuzz does not link: $(grep -m1 -E 'error|undefined' "$d/ld.log")"
		continue
	fi
	# shellcheck disable=SC2086 # args: words for dfuzz
	res=$("$d/dfuzz" --seconds "$SECS" --findings "$d/findings" --name "$name" ${args:-} 2>&1)
	echo "$res" | grep -v 'known:' | grep 'first at execution' >"$d/found"
	if grep -q "^FAIL $name: cannot load" <<<"$res"; then
		echo "# $name: rejected by the verifier"
	elif grep -q "^FAIL" <<<"$res"; then
		# "#   SIG  N inputs, first at execution E: PATH", earliest first
		echo "found   $name: $(cat "$d/found" | sed 's/:$//;s/: .*//' |
			awk '{print $NF, $2}' | sort -n | awk '
			NR == 1 { first = $2 " at execution " $1 }
			END { printf "%s (%d kinds of mismatch)", first, NR }')"
	else
		echo "MISSED  $name"
	fi
done
