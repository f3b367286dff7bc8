#!/bin/sh
# micro_batch.sh ACC TENSOR_COMPARE TARGET MODEL [-D k=v ...]
# A step of micro-batches against the step on the whole batch (-D B=8 in
# the arguments): one training step from the same seed and data with 1, 2
# and 4 micro-batches on TARGET; the parameter gradients of the accumulated
# steps equal the whole batch's within float rounding (per tensor, relative
# 2-norm 1e-5), the losses within 1e-5, and each run's measured peak equals
# its planned peak (the staged whole batch included). For one count the
# gradients are byte-identical across plans: save-all, recompute-all and the
# cheapest plan under a tight budget. At a budget below the whole batch's
# minimum, --micro-batch auto finds a plan of more micro-batches, and
# explains the choice.
set -eu
acc=$1 tc=$2 target=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { # NAME ARGS...: one step, its gradients in NAME.bin
    name=$1
    shift
    "$acc" run "$@" --target "$target" --steps 1 --dump-grads "$dir/$name.bin" >"$dir/$name.out" 2>"$dir/$name.err" || {
        cat "$dir/$name.err"
        echo "micro_batch: acc run $* failed"
        exit 1
    }
    summary=$(tail -n 1 "$dir/$name.out")
    planned=$(echo "$summary" | sed -n 's/.*"peak_bytes_planned": \([0-9]*\).*/\1/p')
    measured=$(echo "$summary" | sed -n 's/.*"peak_bytes_measured": \([0-9]*\).*/\1/p')
    [ -n "$planned" ] && [ "$planned" = "$measured" ] || {
        echo "micro_batch: $name: measured peak $measured != planned $planned"
        exit 1
    }
}
run whole "$@" --policy none
sed -n 's/^{"step": 0, "loss": \([-0-9.e+naif]*\)}$/\1/p' "$dir/whole.out" >"$dir/whole.loss"
for n in 2 4; do
    run "mb$n" "$@" --policy none --micro-batch $n
    "$tc" --loss "$dir/whole.loss" "$dir/mb$n.out" --rtol 1e-5 --atol 1e-7
    "$tc" "$dir/whole.bin" "$dir/mb$n.bin" --norm 1e-5 --atol 1e-7 --quiet
done
# the same count, other plans: the same bits
run mb2_full "$@" --policy full --micro-batch 2
cmp "$dir/mb2.bin" "$dir/mb2_full.bin" || {
    echo "micro_batch: 2 micro-batches: recompute-all gradients differ from save-all's"
    exit 1
}
# a budget between the minimum of 2 micro-batches and that of the whole batch
min_of() { # the minimum the refusal names, for ARGS
    "$acc" explain "$@" --target "$target" --budget 1 2>&1 | sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p'
}
m1=$(min_of "$@")
m2=$(min_of "$@" --micro-batch 2)
[ -n "$m1" ] && [ -n "$m2" ] && [ "$m2" -lt "$m1" ] || {
    echo "micro_batch: the minimum of 2 micro-batches ($m2) is not below the whole batch's ($m1)"
    exit 1
}
budget=$(((m1 + m2) / 2))
if "$acc" explain "$@" --target "$target" --budget "$budget" >/dev/null 2>&1; then
    echo "micro_batch: the whole batch fits $budget bytes, below its minimum $m1"
    exit 1
fi
"$acc" explain "$@" --target "$target" --budget "$budget" --micro-batch auto >"$dir/auto.txt" || {
    echo "micro_batch: --micro-batch auto found no plan at $budget bytes (2 micro-batches need $m2)"
    exit 1
}
grep -q "chosen by the planner" "$dir/auto.txt" && grep -q "<- least time that fits" "$dir/auto.txt" || {
    cat "$dir/auto.txt"
    echo "micro_batch: explain does not say which count the planner chose"
    exit 1
}
run mb2_tight "$@" --budget "$budget" --micro-batch 2
cmp "$dir/mb2.bin" "$dir/mb2_tight.bin" || {
    echo "micro_batch: 2 micro-batches under $budget bytes: gradients differ from save-all's"
    exit 1
}
echo "micro_batch ($target): 2 and 4 micro-batches match the whole batch; minimum $m1 -> $m2 bytes with 2"
