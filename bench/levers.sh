#!/bin/sh
# levers.sh - the planner's levers together against recompute alone, on the
# CPU target, over a sweep of budgets: from the save-all peak down to the
# least memory any plan reaches with micro-batches (--micro-batch auto).
# For each budget, the plan of recompute alone (one batch) and the combined
# plan (recompute, offload to host memory and the count of micro-batches
# chosen together; $LEVERS, default --micro-batch auto --host-budget 1G):
# whether
# each fits, its estimated step time (the cost model's) and its measured step
# time (acc run, the median of --steps steps), and the ratio combined /
# recompute alone. Where recompute alone has no plan, the combined one must.
# "fixed est": the combined plan's estimate when the planner offloads only
# the set fixed before its search (ACC_OFFLOAD_FIXED=1, the planner before
# offload became a free decision), scored by the same exposed-time model.
#
#   bench/levers.sh                      # GPT-2 shapes: 4 layers, width 256, T 256, B 8
#   POINTS=6 STEPS=5 bench/levers.sh models/gpt2.acdsl -D L=2 -D C=128 -D H=4 -D T=128 -D B=8 -D V=4096 --hw tests/e2e/offload.hw
#
# The acc binary: $ACC, else build/acc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
ACC=${ACC:-$root/build/acc}
[ -x "$ACC" ] || {
    echo "levers.sh: no acc binary at $ACC; build one or set ACC" >&2
    exit 2
}
points=${POINTS:-8}
levers=${LEVERS:---micro-batch auto --host-budget 1G}
steps=${STEPS:-6}
if [ $# -eq 0 ]; then
    set -- "$root/models/gpt2.acdsl" -D L=4 -D C=256 -D H=4 -D T=256 -D B=8 -D V=8192
fi
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model: $*"
minimum() { # the minimum the refusal of an impossible budget names
    "$ACC" explain "$@" --target cpu --budget 1 2>&1 | sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p'
}
peak=$("$ACC" explain "$@" --target cpu | sed -n 's/.*planned peak .* (\([0-9]*\) bytes).*/\1/p')
min1=$(minimum "$@")
# shellcheck disable=SC2086
minn=$(minimum "$@" $levers)
echo "levers: $levers"
echo "save-all peak $peak bytes; least memory: recompute alone $min1, with every lever $minn"
printf '%12s | %-10s %10s %10s | %8s %10s %10s | %8s | %10s\n' budget "recompute" "est ms" "meas ms" "N/off" "est ms" \
    "meas ms" ratio "fixed est"
run_ms() { # measured step time of a plan (empty: no plan)
    "$ACC" run "$@" --target cpu --steps "$steps" 2>/dev/null | tail -n 1 |
        sed -n 's/.*"step_ms_median": \([0-9.]*\).*/\1/p'
}
i=0
while [ $i -lt "$points" ]; do
    b=$(awk -v p="$peak" -v m="$minn" -v i="$i" -v n="$points" 'BEGIN { printf "%d", p - (p - m) * i / (n - 1) + 63 }')
    b=$((b / 64 * 64))
    rec=$("$ACC" explain "$@" --target cpu --budget "$b" 2>/dev/null |
        sed -n 's/^recompute [0-9.]* ms of a [0-9.]* ms step.*/&/p' | head -n 1)
    if [ -n "$rec" ]; then
        rec_est=$(echo "$rec" | awk '{ print $2 + $6 }')
        rec_ms=$(run_ms "$@" --budget "$b")
        rec_fit=fits
    else
        rec_est=- rec_ms=- rec_fit="no plan"
    fi
    # shellcheck disable=SC2086
    out=$("$ACC" explain "$@" --target cpu --budget "$b" $levers 2>/dev/null) || out=
    if [ -n "$out" ]; then
        n=$(echo "$out" | sed -n 's/^micro-batches: \([0-9]*\) of.*/\1/p')
        off=$(echo "$out" | sed -n 's/^offload: \([0-9]*\) tensors.*/\1/p')
        n="${n:-1}/${off:-0}"
        comb_est=$(echo "$out" | sed -n 's/^recompute \([0-9.]*\) ms of a \([0-9.]*\) ms step.*/\1 \2/p' | awk '{ print $1 + $2 }')
        # shellcheck disable=SC2086
        comb_ms=$(run_ms "$@" --budget "$b" $levers)
    else
        n=- comb_est=- comb_ms=-
    fi
    # shellcheck disable=SC2086
    fixed=$(ACC_OFFLOAD_FIXED=1 "$ACC" explain "$@" --target cpu --budget "$b" $levers 2>/dev/null |
        sed -n 's/^recompute \([0-9.]*\) ms of a \([0-9.]*\) ms step.*/\1 \2/p' | awk '{ print $1 + $2 }') || fixed=
    ratio=$(awk -v a="$comb_ms" -v r="$rec_ms" 'BEGIN { if (a + 0 > 0 && r + 0 > 0) printf "%.3f", a / r; else print "-" }')
    printf '%12s | %-10s %10s %10s | %8s %10s %10s | %8s | %10s\n' "$b" "$rec_fit" "$rec_est" "$rec_ms" "$n" "$comb_est" \
        "$comb_ms" "$ratio" "${fixed:--}"
    i=$((i + 1))
done
