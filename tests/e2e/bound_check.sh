#!/bin/sh
# bound_check.sh ACC MODEL [-D ...]: the optimal planner's proven lower bound
# never exceeds the true optimum. At five budgets spread between the smallest
# peak any policy reaches and the save-all peak, the search path
# (ACC_EXHAUSTIVE_MAX=0) reports its bound, and an exhaustive search over every
# save/recompute assignment (ACC_EXHAUSTIVE_MAX=24, the model must have at most
# 24 free decisions) gives the optimum; bound <= optimum at every budget.
set -eu
acc=$1 model=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
range=$(sh "$(dirname "$0")/budget_range.sh" "$acc" "$model" "$@")
none=${range%% *} min=${range#* }
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" "$2" | head -1; }
fail=0
for f in 0 2 4 6 8; do
    b=$(awk -v a="$min" -v c="$none" -v f="$f" 'BEGIN { printf "%.0f", a + (c - a) * f / 10 }')
    ACC_EXHAUSTIVE_MAX=0 "$acc" compile "$model" "$@" --budget "$b" -o "$dir/h" >/dev/null 2>&1 || { echo "$b: no plan"; exit 1; }
    ACC_EXHAUSTIVE_MAX=24 "$acc" compile "$model" "$@" --budget "$b" -o "$dir/x" >/dev/null 2>&1 || { echo "$b: no plan"; exit 1; }
    bound=$(field bound "$dir/h/plan.json")
    opt=$(field objective "$dir/x/plan.json")
    status=$(field status "$dir/x/plan.json")
    ok=$(awk -v b="$bound" -v o="$opt" 'BEGIN { print (b <= o * (1 + 1e-9) + 1e-15) ? "ok" : "BOUND ABOVE THE OPTIMUM" }')
    echo "budget $b: bound $bound, optimum $opt ($status) $ok"
    [ "$status" = '"optimal"' ] || { echo "the exhaustive search did not run"; fail=1; }
    [ "$ok" = ok ] || fail=1
done
exit $fail
