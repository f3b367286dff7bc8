#!/bin/sh
# bnb_vs_enum.sh ACC N MODEL [-D ...]: the branch and bound (plan_search.c)
# against scoring every assignment, on a model with at most 24 free
# decisions where both run: ACC_EXHAUSTIVE_MAX=64 ACC_ENUMERATE_MAX=0 sends
# every exact search to the branch and bound, ACC_EXHAUSTIVE_MAX=24 to the
# enumeration, which shares none of its pruning. Both must state the same
# minimum (--budget 1), proven, and at the minimum, one allocation unit
# below it and N budgets from it to the save-all peak, agree on whether a
# plan fits and on the optimum's recompute time. A pruning rule that cuts
# off a plan that fits (a bound too strong) states a higher minimum, refuses
# a budget that fits, or reports a dearer optimum.
set -eu
acc=$1 n=$2 model=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" "$2" | head -1; }
bnb() { ACC_EXHAUSTIVE_MAX=64 ACC_ENUMERATE_MAX=0 "$acc" "$@"; }
enu() { ACC_EXHAUSTIVE_MAX=24 "$acc" "$@"; }
fail=0
for s in enu bnb; do
    $s compile "$model" --target cpu "$@" --budget 1 -o "$dir/one" >/dev/null 2>"$dir/$s.err" || true
done
min=$(sed -n 's/.*is below the minimum of \([0-9]*\) bytes.* for this model$/\1/p' "$dir/enu.err")
mb=$(sed -n 's/.*is below the minimum of \([0-9]*\) bytes.* for this model$/\1/p' "$dir/bnb.err")
if [ -n "$min" ] && [ "$min" = "$mb" ]; then
    echo "ok   minimum $min, proven by both"
else
    cat "$dir/enu.err" "$dir/bnb.err"
    echo "FAIL: the proven minimum: enumeration ${min:-none}, branch and bound ${mb:-none}"
    exit 1
fi
none=$(sh "$(dirname "$0")/budget_range.sh" "$acc" "$model" --target cpu "$@")
none=${none%% *}
budgets="$((min - 64)) $min"
i=1
while [ "$i" -le "$n" ]; do
    budgets="$budgets $(awk -v a="$min" -v c="$none" -v f="$i" -v n="$n" 'BEGIN { printf "%.0f", a + (c - a) * f / (n + 1) }')"
    i=$((i + 1))
done
for b in $budgets; do
    for s in enu bnb; do
        rm -rf "$dir/$s"
        if $s compile "$model" --target cpu "$@" --budget "$b" -o "$dir/$s" >/dev/null 2>&1; then
            eval "st_$s=\$(field status \"\$dir/\$s/plan.json\") t_$s=\$(field recompute_time_est \"\$dir/\$s/plan.json\")"
        else
            eval "st_$s=refused t_$s=-"
        fi
    done
    ok=$(awk -v a="$t_enu" -v b="$t_bnb" -v sa="$st_enu" -v sb="$st_bnb" \
        'BEGIN { print (sa == sb && (sa == "refused" || (sa == "\"optimal\"" && b <= a * (1 + 1e-9) + 1e-15 && a <= b * (1 + 1e-9) + 1e-15))) ? "ok  " : "FAIL" }')
    echo "$ok budget $b: enumeration $st_enu $t_enu, branch and bound $st_bnb $t_bnb"
    [ "$ok" = "ok  " ] || fail=1
done
exit $fail
