#!/bin/sh
# refused_budget.sh ACC MODEL [-D ...]: the optimal planner does not refuse a
# budget where a plan exists (issue 18). At bench/planner/speed.sh's budget -
# the persistent memory plus 60% of the save-all plan's activations - acc
# compile must plan, within the budget; and the minimum an impossible budget
# (--budget 1) states by default must be stated as proven and equal the one
# the exact search (ACC_EXHAUSTIVE_MAX=64) proves.
set -eu
acc=$1 model=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
minimum() { sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p' "$1"; }

"$acc" compile "$model" --target cpu "$@" --budget 100T --policy none -o "$dir/n" >/dev/null 2>&1
budget=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/peak \1/p; /"memory"/ { s/[{},]/ /g; p }' "$dir/n/plan.json" |
    awk '$1 == "peak" { peak = $2 } $1 == "\"memory\":" {
             for (i = 2; i < NF; i += 2) if ($i ~ /parameters|gradients|optimizer|inputs|loss/ && $i !~ /activation/) pers += $(i + 1) }
         END { printf "%.0f", pers + 0.6 * (peak - pers) }')
fail=0
if "$acc" compile "$model" --target cpu "$@" --budget "$budget" -o "$dir/o" >/dev/null 2>"$dir/o.err"; then
    peak=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' "$dir/o/plan.json")
    if [ "$peak" -le "$budget" ]; then
        echo "ok   --budget $budget: planned, peak $peak"
    else
        echo "FAIL: --budget $budget planned a peak of $peak"
        fail=1
    fi
else
    cat "$dir/o.err"
    echo "FAIL: --budget $budget refused"
    fail=1
fi

"$acc" compile "$model" --target cpu "$@" --budget 1 -o "$dir/one" >/dev/null 2>"$dir/one.err" || true
ACC_EXHAUSTIVE_MAX=64 "$acc" compile "$model" --target cpu "$@" --budget 1 -o "$dir/x" >/dev/null 2>"$dir/x.err" || true
m=$(minimum "$dir/one.err")
x=$(minimum "$dir/x.err")
if [ -n "$m" ] && [ "$m" = "$x" ] && grep -q "is below the minimum of $m bytes .* for this model$" "$dir/one.err" &&
    grep -q "is below the minimum of $x bytes .* for this model$" "$dir/x.err"; then
    echo "ok   minimum $m: stated as proven, equal to the exact search's"
else
    cat "$dir/one.err" "$dir/x.err"
    echo "FAIL: the default minimum ${m:-none} is not the exact search's proven ${x:-none}"
    fail=1
fi
exit $fail
