#!/bin/sh
# speed.sh ACC [COMPILE ARGS...]: planning time of the optimal planner for
# GPT-style stacks of 12, 24, 48 and 96 layers (GPT-2 small widths, B=1,
# T=1024) at a budget that forces recomputation: the persistent memory plus
# 60% of the save-all plan's activation memory. Prints layers, candidates,
# solve seconds, status, gap, overhead and the schedules simulated. The
# instance is pinned to `--target cpu` (the CPU cost model, no device
# workspace) so that figures stay comparable whatever the default target;
# extra arguments go to every compile (e.g. --target cuda, -D C=12288 -D H=96
# -D T=2048 for GPT-3 widths). Plans are deterministic: only solve_s varies.
set -eu
acc=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf "%-7s %-11s %-9s %-10s %-8s %-10s %-6s\n" layers candidates solve_s status gap overhead evals
for L in 12 24 48 96; do
    "$acc" compile models/gpt2.acdsl -D L=$L -D B=1 -D T=1024 --target cpu "$@" --budget 100T --policy none \
        -o "$dir/n$L" >/dev/null 2>&1
    budget=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/peak \1/p; /"memory"/ { s/[{},]/ /g; p }' "$dir/n$L/plan.json" |
        awk '$1 == "peak" { peak = $2 } $1 == "\"memory\":" {
                 for (i = 2; i < NF; i += 2) if ($i ~ /parameters|gradients|optimizer|inputs|loss/ && $i !~ /activation/) pers += $(i + 1) }
             END { printf "%.0f", pers + 0.6 * (peak - pers) }')
    out=$("$acc" compile models/gpt2.acdsl -D L=$L -D B=1 -D T=1024 --target cpu "$@" --budget "$budget" \
        -o "$dir/o$L" 2>&1 | grep 'solver') || true
    cand=$(sed -n 's/.*"candidates": \([0-9]*\).*/\1/p' "$dir/o$L/plan.json" 2>/dev/null || echo -)
    evals=$(sed -n 's/.*"evaluations": \([0-9]*\).*/\1/p' "$dir/o$L/plan.json" 2>/dev/null || echo -)
    echo "$out" | sed -n "s/.*+\([0-9.]*%\) step time.*solver \([a-z]*\), gap \([0-9.]*%\), \([0-9.]*\) s/\4 \2 \3 \1/p" |
        awk -v L="$L" -v c="$cand" -v e="$evals" '{ printf "%-7s %-11s %-9s %-10s %-8s %-10s %-6s\n", L, c, $1, $2, $3, $4, e }'
done
