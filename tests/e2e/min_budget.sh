#!/bin/sh
# min_budget.sh [--at-most A] ACC MODEL [-D ...]: the minimum an impossible budget reports
# is exactly the boundary of what the planner reaches. With --budget 1, acc
# compile fails and states a minimum M, and the breakdown it prints totals M;
# --budget M compiles, with a planned peak of exactly M; --budget M-64 (one
# allocation unit less) fails and states the same M; and no policy in the
# table of `acc explain --budget M` peaks below M. With --at-most A (the
# arena of a plan known to exist), M must also be at most A: the search
# reaches that plan or a smaller one.
set -eu
at_most=
[ "$1" = --at-most ] && { at_most=$2; shift 2; }
acc=$1 model=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
minimum() { sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p' "$1"; }

if "$acc" compile "$model" --target cpu "$@" --budget 1 -o "$dir/one" >/dev/null 2>"$dir/one.err"; then
    echo "FAIL: --budget 1 compiled"
    exit 1
fi
m=$(minimum "$dir/one.err")
[ -n "$m" ] || { cat "$dir/one.err"; echo "FAIL: no minimum in the error"; exit 1; }
total=$(sed -n 's/^ *total (arena) *\([0-9]*\).*/\1/p' "$dir/one.err")
[ "$total" = "$m" ] || { cat "$dir/one.err"; echo "FAIL: the breakdown totals $total, not the minimum $m"; exit 1; }
echo "ok   --budget 1: minimum $m, breakdown totals $total"
if [ -n "$at_most" ]; then
    [ "$m" -le "$at_most" ] || { echo "FAIL: the minimum $m is above $at_most, a plan known to exist"; exit 1; }
    echo "ok   --budget 1: minimum $m is at most $at_most"
fi

# a target with a workspace past the arena (cuda's GEMM workspace): the
# breakdown goes on to the step's total, which is the minimum it states
if "$acc" compile "$model" --target cuda "$@" --budget 1 -o "$dir/cu" >/dev/null 2>"$dir/cu.err"; then
    echo "FAIL: --target cuda --budget 1 compiled"
    exit 1
fi
if grep -q "is below the minimum" "$dir/cu.err"; then
    mc=$(minimum "$dir/cu.err")
    step=$(sed -n 's/^ *total (step) *\([0-9]*\).*/\1/p' "$dir/cu.err")
    grep -q "^ *workspace (cuda) " "$dir/cu.err" && [ "$step" = "$mc" ] ||
        { cat "$dir/cu.err"; echo "FAIL: --target cuda: the breakdown's step total $step is not the minimum $mc"; exit 1; }
    echo "ok   --target cuda --budget 1: minimum $mc, the breakdown with the workspace totals $step"
else
    grep "error" "$dir/cu.err" | head -n 1
    echo "skip --target cuda: not built"
fi

"$acc" compile "$model" --target cpu "$@" --budget "$m" -o "$dir/m" >/dev/null 2>"$dir/m.err" ||
    { cat "$dir/m.err"; echo "FAIL: --budget $m (the minimum) does not compile"; exit 1; }
peak=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' "$dir/m/plan.json")
[ "$peak" = "$m" ] || { echo "FAIL: --budget $m planned a peak of $peak"; exit 1; }
echo "ok   --budget $m: compiles, planned peak $peak"

below=$((m - 64))
if "$acc" compile "$model" --target cpu "$@" --budget "$below" -o "$dir/b" >/dev/null 2>"$dir/b.err"; then
    echo "FAIL: --budget $below, below the minimum $m, compiled (peak $(sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' "$dir/b/plan.json"))"
    exit 1
fi
m2=$(minimum "$dir/b.err")
[ "$m2" = "$m" ] || { cat "$dir/b.err"; echo "FAIL: --budget $below reports the minimum $m2, not $m"; exit 1; }
echo "ok   --budget $below: fails, minimum $m2"

"$acc" explain "$model" --target cpu "$@" --budget "$m" >"$dir/explain.txt" 2>&1 ||
    { cat "$dir/explain.txt"; echo "FAIL: acc explain --budget $m"; exit 1; }
awk -v m="$m" '
    /^policy +peak bytes/ { on = 1; next }
    on && NF >= 3 { n++; if ($2 + 0 < m + 0) { print "FAIL: policy " $1 " peaks at " $2 ", below the minimum " m; bad = 1 } }
    END { if (n < 8) { print "FAIL: the policy table has " n " rows"; bad = 1 } exit bad }' "$dir/explain.txt" ||
    { cat "$dir/explain.txt"; exit 1; }
echo "ok   every policy in acc explain peaks at or above $m"

# --time-limit ends the searches that improve a plan, never the cut that finds
# the first one: one allocation unit below the smallest policy peak (where no
# policy fits and the cut is what finds a plan), a limit of a microsecond
# still compiles within the budget. Below the minimum it fails, stating either
# the same minimum or, when the limit cut the search for it short, a smallest
# peak found that is no lower.
low=$(awk '/^policy +peak bytes/ { on = 1; next } on && NF >= 3 && $1 != "optimal" && (p == "" || $2 + 0 < p + 0) { p = $2 } END { print p }' "$dir/explain.txt")
mid=$((low - 64))
if [ "$mid" -ge "$m" ]; then
    "$acc" compile "$model" --target cpu "$@" --budget "$mid" --time-limit 0.000001 -o "$dir/t" >/dev/null 2>"$dir/t.err" ||
        { cat "$dir/t.err"; echo "FAIL: --budget $mid --time-limit 0.000001 did not compile"; exit 1; }
    peak=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' "$dir/t/plan.json")
    [ "$peak" -le "$mid" ] || { echo "FAIL: --budget $mid --time-limit 0.000001 planned a peak of $peak"; exit 1; }
    echo "ok   --budget $mid --time-limit 0.000001: compiles, peak $peak"
fi
if "$acc" compile "$model" --target cpu "$@" --budget 1 --time-limit 0.000001 -o "$dir/t1" >/dev/null 2>"$dir/t1.err"; then
    echo "FAIL: --budget 1 --time-limit 0.000001 compiled"
    exit 1
fi
m3=$(minimum "$dir/t1.err")
[ -n "$m3" ] || m3=$(sed -n 's/.*at a smallest peak of \([0-9]*\) bytes.*/\1/p' "$dir/t1.err")
[ -n "$m3" ] && [ "$m3" -ge "$m" ] || { cat "$dir/t1.err"; echo "FAIL: --budget 1 --time-limit 0.000001 states $m3"; exit 1; }
echo "ok   --budget 1 --time-limit 0.000001: fails, states $m3 (>= $m)"
