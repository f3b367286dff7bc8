#!/bin/sh
# random_graph.sh ACC [--nodes N[,N...]] [--seed S] [COMPILE ARGS...]: the
# optimal planner on random layered DAGs without repeated structure (DESIGN
# §8: "a graph of several thousand nodes with no repeated structure planned in
# under a minute, reporting its optimality gap"). For each size (default about
# 1000, 2000, 4000 and 8000 IR nodes as `acc check` counts them: parameters,
# inputs and ops) it writes a model with bench/planner/random_model.py (seed S,
# default 1), compiles it with --policy none to get the save-all peak and the
# persistent memory (parameters, gradients, optimizer state, inputs, loss),
# then plans it with the optimal policy at persistent + 60% of the save-all
# plan's dynamic memory, as speed.sh does, pinned to `--target cpu`. Extra
# arguments go to every compile (e.g. --time-limit 60, --hw h100-sxm).
#
# Prints per size: IR nodes, ops, candidates (the planner's free decisions),
# solve seconds (acc's stderr line), status, gap, overhead, the planned peak
# and the budget, schedules simulated, and the wall time of the whole
# `acc compile` with --policy none and with the optimal policy (parsing,
# scheduling, allocation and code generation included). A size whose compile
# fails prints its first error line instead. Plans are deterministic: only the
# times vary.
set -eu
acc=$1
shift
sizes="1000 2000 4000 8000"
seed=1
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) sizes=$(echo "$2" | tr , ' '); shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) break ;;
    esac
done
gen="$(dirname "$0")/random_model.py"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
now() { date +%s.%N; }
printf "%-6s %-5s %-10s %-8s %-10s %-7s %-8s %-11s %-11s %-6s %-7s %-7s\n" \
    nodes ops candidates solve_s status gap overhead peak budget evals none_s opt_s
for N in $sizes; do
    m="$dir/r$N.acdsl"
    python3 "$gen" --nodes "$N" --seed "$seed" -o "$m"
    counts=$("$acc" check "$m" | sed -n 's/^nodes: \([0-9]*\) (.* \([0-9]*\) ops)$/\1 \2/p')
    t0=$(now)
    if ! "$acc" compile "$m" --target cpu "$@" --budget 100T --policy none -o "$dir/n$N" >"$dir/n$N.log" 2>&1; then
        echo "$counts: --policy none failed: $(grep -m1 error "$dir/n$N.log")"
        continue
    fi
    t1=$(now)
    budget=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/peak \1/p; /"memory"/ { s/[{},]/ /g; p }' "$dir/n$N/plan.json" |
        awk '$1 == "peak" { peak = $2 } $1 == "\"memory\":" {
                 for (i = 2; i < NF; i += 2) if ($i ~ /parameters|gradients|optimizer|inputs|loss/ && $i !~ /activation/) pers += $(i + 1) }
             END { printf "%.0f", pers + 0.6 * (peak - pers) }')
    t2=$(now)
    if ! "$acc" compile "$m" --target cpu "$@" --budget "$budget" -o "$dir/o$N" >"$dir/o$N.log" 2>&1; then
        t3=$(now)
        echo "$counts: optimal at budget $budget failed after $(echo "$t2 $t3" | awk '{ printf "%.1f", $2 - $1 }') s: $(grep -m1 error "$dir/o$N.log")"
        continue
    fi
    t3=$(now)
    p="$dir/o$N/plan.json"
    cand=$(sed -n 's/.*"candidates": \([0-9]*\).*/\1/p' "$p")
    evals=$(sed -n 's/.*"evaluations": \([0-9]*\).*/\1/p' "$p")
    peak=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' "$p")
    grep 'solver' "$dir/o$N.log" |
        sed -n "s/.*+\([0-9.]*%\) step time.*solver \([a-z_]*\), gap \([0-9.]*%\), \([0-9.]*\) s.*/\4 \2 \3 \1/p" |
        awk -v n="$counts" -v c="$cand" -v e="$evals" -v pk="$peak" -v b="$budget" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" '{
            split(n, nn, " ")
            printf "%-6s %-5s %-10s %-8s %-10s %-7s %-8s %-11s %-11s %-6s %-7.1f %-7.1f\n",
                nn[1], nn[2], c, $1, $2, $3, $4, pk, b, e, t1 - t0, t3 - t2 }'
done
