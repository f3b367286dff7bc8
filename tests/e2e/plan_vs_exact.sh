#!/bin/sh
# plan_vs_exact.sh ACC N MODEL [-D ...]: the optimal planner's search path
# (ACC_EXHAUSTIVE_MAX=0) costs no more than the proven optimum (+0.5%, DESIGN
# §8) at N budgets spread from the smallest peak acc reaches (the minimum an
# impossible budget reports) to the save-all peak. The optimum comes from
# ACC_EXHAUSTIVE_MAX=64: every assignment scored up to 24 free decisions, a
# branch and bound above that; its status must be "optimal" (a proof).
set -eu
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
    status=$(field status "$dir/x/plan.json")
    [ "$status" = '"optimal"' ] || { echo "FAIL budget $b: the exact search ended $status"; fail=1; continue; }
    ok=$(awk -v h="$h" -v x="$x" 'BEGIN { print (h <= x * 1.005 + 1e-15) ? "ok  " : "FAIL" }')
    echo "$ok budget $b: search $h, optimum $x"
    [ "$ok" = "ok  " ] || fail=1
done
exit $fail
