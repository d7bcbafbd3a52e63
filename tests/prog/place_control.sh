#!/usr/bin/env bash
# place_control.sh - the control of the ring placement's program tests
# (tests/prog/t_place.c, issue 27): builds copies of the tree, each with
# the placement's 1 in P broken one way (in a temporary folder: bpf/
# itself is never touched), runs `prog_test -g place` against each and
# prints one line per mutant: "caught NAME (N tests failed)" when the
# tests see the violation, "MISSED NAME" when they pass regardless. Exit
# status 0 only when every mutant is caught. Root (loads BPF); a few
# minutes a mutant on a loaded machine.
#
#   tests/prog/place_control.sh [NAME]   (NAME: that mutant alone)
#
# Mutants:
#   weight-one          a placed key adds 1 to its shard, not P (the
#                       estimate P times too small)
#   misdirect-once      a placed misdirected key adds 1 to misdirected
#   rate-ignored        P never read from ks_rate (every key placed, 1
#                       each, whatever the agent wrote)
#   general-every       the general path places every sampled key,
#                       each counted P
#   express-every       the express path places every sampled key
#   express-untick      the express path's sampled key leaves the
#                       countdown where it was
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ONLY=${1:-}
. tests/lib/mutants.sh
# name|file|sed expression (one edit each)
mutants=(
	"weight-one|ks_ring.bpf.h|s/w = s->place_w;/w = 1;/"
	"misdirect-once|ks_ring.bpf.h|s/st->misdirected += w;/st->misdirected++;/"
	"rate-ignored|ks_sample.bpf.h|s/p = e ? e->p \& ~KS_RATE_P_UNIT : 0;/p = 0;/"
	"general-every|ks_ring.bpf.h|s/^\tif (next)$/\tif (0)/"
	"express-every|ks_fast_sample.bpf.h|s/place = ks_place_next(s);/place = 0;/"
	"express-untick|ks_fast_sample.bpf.h|s/s->place_cd = place;//"
)

mutant_run "$ONLY" -g place
