#!/bin/sh
# plan_tight.sh ACC GRAPH FRAC LIMIT MAX: acc plan --graph GRAPH at FRAC of
# its peak with --time-limit LIMIT must give a plan that fits, at compute at
# most MAX, within LIMIT + 10% (issue 18: a published graph at the smallest
# budget acc plans; why each MAX, in tests/CMakeLists.txt). ACC_TIMING=0 (the
# sanitizer build, several times slower, so its searches reach less within
# the limit) checks only that the plan fits. Skips (77) where the graph,
# which is not in the repository, is absent.
set -eu
acc=$1 graph=$2 frac=$3 limit=$4 max=$5
[ -f "$graph" ] || { echo "skip: $graph not found"; exit 77; }
out=$("$acc" plan --graph "$graph" --budget-frac "$frac" --time-limit "$limit")
field() { echo "$out" | sed -n "s/.*\"$1\": \\([a-z0-9.e+-]*\\).*/\\1/p"; }
compute=$(field compute) fits=$(field fits) secs=$(field time_s)
echo "$out"
[ "$fits" = true ] || { echo "FAIL: the plan does not fit"; exit 1; }
[ "${ACC_TIMING:-1}" = 0 ] && { echo "ok   fits (ACC_TIMING=0: compute $compute not checked)"; exit 0; }
awk -v c="$compute" -v m="$max" 'BEGIN { exit !(c != "" && c + 0 <= m + 0) }' ||
    { echo "FAIL: compute $compute above $max"; exit 1; }
awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s != "" && s + 0 <= 1.1 * l) }' ||
    { echo "FAIL: $secs s past the limit of $limit + 10%"; exit 1; }
echo "ok   compute $compute <= $max, $secs s"
