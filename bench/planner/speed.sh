#!/bin/sh
# speed.sh ACC: planning time of the optimal planner for GPT-style stacks of
# 12, 24, 48 and 96 layers (GPT-2 small widths, B=1, T=1024) at a budget that
# forces recomputation: the persistent memory plus 60% of the save-all plan's
# activation memory. Prints layers, candidates, solve seconds, status, gap.
set -eu
acc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf "%-7s %-11s %-9s %-10s %-8s %-10s\n" layers candidates solve_s status gap overhead
for L in 12 24 48 96; do
    "$acc" compile models/gpt2.acdsl -D L=$L -D B=1 -D T=1024 --budget 1T --policy none -o "$dir/n$L" >/dev/null 2>&1
    budget=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/peak \1/p; /"memory"/ { s/[{},]/ /g; p }' "$dir/n$L/plan.json" |
        awk '$1 == "peak" { peak = $2 } $1 == "\"memory\":" {
                 for (i = 2; i < NF; i += 2) if ($i ~ /parameters|gradients|optimizer|inputs|loss/ && $i !~ /activation/) pers += $(i + 1) }
             END { printf "%.0f", pers + 0.6 * (peak - pers) }')
    out=$("$acc" compile models/gpt2.acdsl -D L=$L -D B=1 -D T=1024 --budget "$budget" -o "$dir/o$L" 2>&1 | grep 'solver') || true
    cand=$(sed -n 's/.*"candidates": \([0-9]*\).*/\1/p' "$dir/o$L/plan.json" 2>/dev/null || echo -)
    echo "$out" | sed -n "s/.*+\([0-9.]*%\) step time.*solver \([a-z]*\), gap \([0-9.]*%\), \([0-9.]*\) s/\4 \2 \3 \1/p" |
        awk -v L="$L" -v c="$cand" '{ printf "%-7s %-11s %-9s %-10s %-8s %-10s\n", L, c, $1, $2, $3, $4 }'
done
