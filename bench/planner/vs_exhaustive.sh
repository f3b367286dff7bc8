#!/bin/sh
# vs_exhaustive.sh ACC MODEL [-D ...]: the optimal planner's heuristic path
# (ACC_EXHAUSTIVE_MAX=0) against the proven optimum (ACC_EXHAUSTIVE_MAX=64:
# every save/recompute assignment up to 24 free decisions, a branch and bound
# above that), both scored by acc's exact schedule and allocation, at ten
# budgets spread between the smallest peak any policy reaches and the
# save-all peak. (tests/e2e/plan_vs_exact.sh spreads its budgets from the
# smallest peak acc reaches, lower.)
# Prints: budget, heuristic cost, exact cost, ratio, times, and "not proven"
# where the exact search did not finish.
set -eu
acc=$1 model=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
range=$(sh "$(dirname "$0")/../../tests/e2e/budget_range.sh" "$acc" "$model" "$@") || range=""
none=${range%% *} min=${range#* }
printf "%-10s %-14s %-14s %-8s %-8s %-8s\n" budget heuristic exhaustive ratio heur_s exh_s
for f in 0 1 2 3 4 5 6 7 8 9; do
    b=$(awk -v a="$min" -v c="$none" -v f="$f" 'BEGIN { printf "%.0f", a + (c - a) * f / 10 }')
    t0=$(date +%s.%N)
    ACC_EXHAUSTIVE_MAX=0 "$acc" compile "$model" --target cpu "$@" --budget "$b" -o "$dir/h" >/dev/null 2>&1 || { echo "$b heuristic found no plan"; continue; }
    t1=$(date +%s.%N)
    ACC_EXHAUSTIVE_MAX=64 "$acc" compile "$model" --target cpu "$@" --budget "$b" -o "$dir/x" >/dev/null 2>&1 || { echo "$b no plan"; continue; }
    t2=$(date +%s.%N)
    h=$(sed -n 's/.*"recompute_time_est": \([^,]*\),/\1/p' "$dir/h/plan.json")
    x=$(sed -n 's/.*"recompute_time_est": \([^,]*\),/\1/p' "$dir/x/plan.json")
    proof=$(grep -q '"status": "optimal"' "$dir/x/plan.json" && echo "" || echo "not proven")
    awk -v b="$b" -v h="$h" -v x="$x" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v p="$proof" \
        'BEGIN { printf "%-10d %-14.6g %-14.6g %-8.4f %-8.2f %-8.2f %s\n", b, h, x, (x > 0 ? h / x : (h == 0 ? 1 : 0)), t1 - t0, t2 - t1, p }'
done
