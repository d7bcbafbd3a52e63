#!/usr/bin/env bash
# stack_control.sh - the control of the stack's headroom check
# (tests/prog/t_stack.c): builds copies of the tree, each broken one way
# (in a temporary folder: bpf/ itself is never touched), runs
# `prog_test -g stack` against each and prints one line per mutant:
# "caught NAME (N tests failed)" when the check sees it, "MISSED NAME"
# when it passes regardless. Exit status 0 only when every mutant is
# caught. Root (loads BPF); a few minutes a mutant on a loaded machine.
#
#   tests/prog/stack_control.sh [NAME]   (NAME: that mutant alone)
#
# Mutants:
#   md5-spills    the MD5 steps read their block words as plain loads, as
#                 before issue 27's fix: clang keeps them on the stack,
#                 the MD5 frame grows from 32 to 128 bytes and the XDP
#                 sampled get's chain with a ring to 48 bytes short of
#                 the 512 (the object itself still loads)
#   plant-folded  the plant compiled away, as clang would if it could
#                 share its bytes with other slots: the planted copy
#                 loads, but proves nothing (the check must see that
#                 the frames did not grow)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ONLY=${1:-}
. tests/lib/mutants.sh

# name|file|sed expression (one edit each)
mutants=(
	"md5-spills|ks_hash.h|s/+ KS_MD5_WORD(w) +/+ (w) +/"
	"plant-folded|keysteer.bpf.c|s/if (KS_STACK_PLANT) {/if (0) {/"
)

mutant_run "$ONLY" -g stack
