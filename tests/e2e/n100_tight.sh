#!/bin/sh
# n100_tight.sh ACC GRAPH: MOCCASIN's random_layered_n100 at 0.5437 of its
# peak, its smallest budget with a plan (issue 18). The plan comes from the
# evictions with pebbled stages; the best of them is the 66th kind, and when
# the kinds were timed instead of counted (before commit b40b779, where the
# pruning of each plan took most of a kind's time) the plan depended on the
# load: compute 393405 (+724%) at load 2.5, 758012 (+1487%) at load 4, never
# below 393405. Counted: 134366 (+181%); with the local improvement's kicks
# (dag_improve.c) 112030 (+135%). A plan that fits at compute at most
# 120000 is asked for with --time-limit 30 (at 20 the kinds' share is 10 s,
# short of the 66 kinds under a loaded ctest), and the time within it + 10%.
# ACC_TIMING=0 (the sanitizer build, several times slower: fewer kinds fit in
# their share) checks only that the plan fits. Skips (77) where the graph,
# which is not in the repository, is absent.
set -eu
acc=$1 graph=$2
[ -f "$graph" ] || { echo "skip: $graph not found"; exit 77; }
out=$("$acc" plan --graph "$graph" --budget-frac 0.5437 --time-limit 30)
compute=$(echo "$out" | sed -n 's/.*"compute": \([0-9.]*\),.*/\1/p')
fits=$(echo "$out" | sed -n 's/.*"fits": \([a-z]*\),.*/\1/p')
secs=$(echo "$out" | sed -n 's/.*"time_s": \([0-9.e+-]*\).*/\1/p')
echo "$out"
[ "$fits" = true ] || { echo "FAIL: the plan does not fit"; exit 1; }
[ "${ACC_TIMING:-1}" = 0 ] && { echo "ok   fits (ACC_TIMING=0: compute $compute not checked)"; exit 0; }
awk -v c="$compute" 'BEGIN { exit !(c != "" && c + 0 <= 120000) }' ||
    { echo "FAIL: compute $compute above 120000"; exit 1; }
awk -v s="$secs" 'BEGIN { exit !(s != "" && s + 0 <= 33) }' || { echo "FAIL: $secs s past the limit of 30 + 10%"; exit 1; }
echo "ok   compute $compute <= 120000, $secs s"
