#!/bin/sh
# plan_vs_exact.sh [--check-min] ACC N MODEL [-D ...]: the optimal planner's
# search path (ACC_EXHAUSTIVE_MAX=0) costs no more than the proven optimum
# (+0.5%, DESIGN §8) at N budgets spread from the smallest peak acc reaches
# (the minimum an impossible budget reports) to the save-all peak. The
# optimum comes from ACC_EXHAUSTIVE_MAX=64: every assignment scored up to 24
# free decisions, a branch and bound above that; its status must be
# "optimal" (a proof). With --check-min, the minimum itself: the exact search
# finds no plan one allocation unit (64 bytes) below it and states the same
# minimum as proven, and the search path's refusal says whether its minimum
# is proven. At every budget the search path's lower bound (plan.json's
# solver.bound, the covering program of plan_bound.c) must not exceed the
# proven optimum: a bound above it would report a false gap.
set -eu
check_min=0
[ "$1" = --check-min ] && { check_min=1; shift; }
acc=$1 n=$2 model=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" "$2" | head -1; }
"$acc" compile "$model" --target cpu "$@" --budget 1 -o "$dir/one" >/dev/null 2>"$dir/one.err" || true
min=$(sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p' "$dir/one.err")
none=$(sh "$(dirname "$0")/budget_range.sh" "$acc" "$model" --target cpu "$@")
none=${none%% *}
[ -n "$min" ] && [ -n "$none" ] || { cat "$dir/one.err"; echo "plan_vs_exact: no budget range"; exit 1; }
fail=0
if [ "$check_min" = 1 ]; then
    grep -q "is below the minimum of $min bytes .* for this model$" "$dir/one.err" ||
        grep -q "is below the minimum of $min bytes .* that the planner's search reaches for this model; it is the best found, not a proven minimum$" "$dir/one.err" ||
        { cat "$dir/one.err"; echo "FAIL: the refusal does not say whether $min is proven"; fail=1; }
    # the exact minimum: the descent, then the branch and bound one unit below
    ACC_EXHAUSTIVE_MAX=64 "$acc" compile "$model" --target cpu "$@" --budget 1 -o "$dir/m" >/dev/null 2>"$dir/m.err" || true
    if grep -q "is below the minimum of $min bytes .* for this model$" "$dir/m.err"; then
        echo "ok   minimum $min: proven (no plan at $((min - 64)))"
    else
        cat "$dir/m.err"
        echo "FAIL: the exact search does not prove the minimum $min"
        fail=1
    fi
fi
i=0
while [ "$i" -lt "$n" ]; do
    b=$(awk -v a="$min" -v c="$none" -v f="$i" -v n="$n" 'BEGIN { printf "%.0f", a + (c - a) * f / n }')
    i=$((i + 1))
    ACC_EXHAUSTIVE_MAX=0 "$acc" compile "$model" --target cpu "$@" --budget "$b" -o "$dir/h" >/dev/null 2>&1 ||
        { echo "FAIL budget $b: the search found no plan"; fail=1; continue; }
    ACC_EXHAUSTIVE_MAX=64 "$acc" compile "$model" --target cpu "$@" --budget "$b" -o "$dir/x" >/dev/null 2>&1 ||
        { echo "FAIL budget $b: the exact search found no plan"; fail=1; continue; }
    h=$(field recompute_time_est "$dir/h/plan.json")
    x=$(field recompute_time_est "$dir/x/plan.json")
    lb=$(field bound "$dir/h/plan.json")
    status=$(field status "$dir/x/plan.json")
    [ "$status" = '"optimal"' ] || { echo "FAIL budget $b: the exact search ended $status"; fail=1; continue; }
    ok=$(awk -v h="$h" -v x="$x" -v lb="$lb" 'BEGIN { print (h <= x * 1.005 + 1e-15 && lb <= x * (1 + 1e-9) + 1e-15) ? "ok  " : "FAIL" }')
    echo "$ok budget $b: search $h, optimum $x, bound $lb"
    [ "$ok" = "ok  " ] || fail=1
done
exit $fail
