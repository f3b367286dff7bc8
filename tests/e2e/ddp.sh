#!/bin/sh
# ddp.sh ACC TENSOR_COMPARE TARGET MODEL [-D k=v ...]
# Data parallel under mpirun (acc run --ranks), one thread per rank, against
# one rank on the whole batch (--batch 4):
#   - 2 and 4 ranks: the loss and the reduced gradients of a step equal the
#     whole batch's within float rounding (relative 2-norm 1e-5 per tensor),
#     every rank holds the same parameters after 3 steps (byte for byte),
#     and each run's measured peak equals its planned peak;
#   - a repeated run gives the same bytes (gradients and parameters);
#   - ZeRO-1 and ZeRO-2 (--zero 1, 2): the parameters after 3 steps are
#     byte-identical to ZeRO-0's on as many ranks (with 2 ranks a sum is one
#     addition, the same whatever the collective; with 4, Open MPI's
#     reduce-scatter and all-reduce add in the same order); ZeRO-1's per-rank
#     plan holds 1/R of the AdamW state, below ZeRO-0's, and ZeRO-2's peak is
#     below ZeRO-1's with fewer gradient bytes at the peak;
#   - micro-batches under ZeRO-2 (each reduced into the shard) give the
#     first step's gradient norm of ZeRO-0 and of one rank (1e-6);
#   - refusals: --zero 1 without ranks, a rank count that does not divide the
#     batch.
# DDP_REF_TARGET=cpu: the one-rank reference runs on the cpu target instead
# (cuda-emu: the emulated cuda schedule with MPI standing in for NCCL,
# against the CPU's step; ZeRO-2's reduced pieces move into the shard by the
# device layer's launches inside the recorded step).
set -eu
acc=$1 tc=$2 target=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
command -v mpirun >/dev/null || { echo "ddp: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"; exit 1; }
field() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | head -1; }
run_target=$target
run() { # NAME STEPS ARGS...: parameters after the last step in NAME.p (--dump-grads in ARGS: NAME.bin)
    name=$1 steps=$2
    shift 2
    "$acc" run "$@" --target "$run_target" --steps "$steps" --dump-params "$dir/$name.p" >"$dir/$name.out" \
        2>"$dir/$name.err" || {
        cat "$dir/$name.err"
        echo "ddp: acc run $* failed"
        exit 1
    }
    planned=$(field peak_bytes_planned "$dir/$name.out")
    measured=$(field peak_bytes_measured "$dir/$name.out")
    [ -n "$planned" ] && [ "$planned" = "$measured" ] || {
        echo "ddp: $name: measured peak $measured != planned $planned"
        exit 1
    }
}
same_params() { # NAME RANKS: every rank's parameters are rank 0's
    r=1
    while [ "$r" -lt "$2" ]; do
        cmp "$dir/$1.p" "$dir/$1.p.r$r" || { echo "ddp: $1: rank $r's parameters differ from rank 0's"; exit 1; }
        r=$((r + 1))
    done
}
run_target=${DDP_REF_TARGET:-$target}
run one 1 "$@" --batch 4 --dump-grads "$dir/one.bin"
run_target=$target
sed -n 's/^{"step": 0, "loss": \([-0-9.e+naif]*\)}$/\1/p' "$dir/one.out" >"$dir/one.loss"
for r in 2 4; do
    run "r$r" 3 "$@" --batch 4 --ranks $r --bucket-size 16K --dump-grads "$dir/r$r.bin"
    "$tc" --loss "$dir/one.loss" "$dir/r$r.out" --rtol 1e-5 --atol 1e-7
    "$tc" "$dir/one.bin" "$dir/r$r.bin" --norm 1e-5 --atol 1e-7 --quiet
    same_params "r$r" $r
    grep -q "\"ranks\": $r, \"zero\": 0" "$dir/r$r.out" || { echo "ddp: r$r: not a $r-rank run"; exit 1; }
done
run r2again 3 "$@" --batch 4 --ranks 2 --bucket-size 16K --dump-grads "$dir/r2again.bin"
cmp "$dir/r2.bin" "$dir/r2again.bin" && cmp "$dir/r2.p" "$dir/r2again.p" ||
    { echo "ddp: a repeated 2-rank run differs"; exit 1; }
for r in 2 4; do
    for z in 1 2; do
        run "z$z.$r" 3 "$@" --batch 4 --ranks $r --bucket-size 16K --zero $z
        same_params "z$z.$r" $r
        cmp "$dir/r$r.p" "$dir/z$z.$r.p" || { echo "ddp: ZeRO-$z on $r ranks: parameters differ from ZeRO-0's"; exit 1; }
        "$acc" compile "$@" --batch 4 --ranks $r --bucket-size 16K --zero $z --target "$target" --budget 1G \
            -o "$dir/cz$z.$r" >/dev/null 2>&1
    done
    "$acc" compile "$@" --batch 4 --ranks $r --bucket-size 16K --target "$target" --budget 1G -o "$dir/c$r" \
        >/dev/null 2>&1
    m0=$(field optimizer_m "$dir/c$r/plan.json") m1=$(field optimizer_m "$dir/cz1.$r/plan.json")
    g1=$(field gradients "$dir/cz1.$r/plan.json") g2=$(field gradients "$dir/cz2.$r/plan.json")
    m2=$(field optimizer_m "$dir/cz2.$r/plan.json")
    p0=$(field peak_bytes "$dir/c$r/plan.json") p1=$(field peak_bytes "$dir/cz1.$r/plan.json")
    p2=$(field peak_bytes "$dir/cz2.$r/plan.json")
    [ "$((m1 * r))" -eq "$g1" ] && [ "$m1" -lt "$m0" ] && [ "$p1" -lt "$p0" ] || {
        echo "ddp: ZeRO-1 on $r ranks: moments $m1 (x$r != the gradients' $g1, or not below ZeRO-0's $m0), peak $p1 vs $p0"
        exit 1
    }
    # ZeRO-2: the gradients the plan keeps past their buckets are the shard
    # (its moments' size) and the ones still to be reduced: less than all
    [ "$p2" -lt "$p1" ] && [ "$g2" -lt "$g1" ] && [ "$g2" -ge "$m2" ] || {
        echo "ddp: ZeRO-2 on $r ranks: peak $p2 (ZeRO-1 $p1), gradients at the peak $g2 (ZeRO-1 $g1, shard $m2)"
        exit 1
    }
done
# micro-batches under ZeRO-2 add each one's reduced pieces into the shard:
# the first step's gradient norm equals ZeRO-0's (which reduces the sum
# once) and one rank's on the whole batch (relative 1e-6)
run mb1 1 "$@" --batch 8 --micro-batch 4
for z in 0 2; do
    run "mbz$z" 1 "$@" --batch 8 --ranks 2 --micro-batch 2 --zero $z --bucket-size 16K
done
n1=$(field grad_norm0 "$dir/mb1.out") n0=$(field grad_norm0 "$dir/mbz0.out") n2=$(field grad_norm0 "$dir/mbz2.out")
awk -v a="$n1" -v b="$n0" -v c="$n2" 'BEGIN { d0 = a - b; d2 = a - c; if (d0 < 0) d0 = -d0; if (d2 < 0) d2 = -d2
    printf "ddp: first-step gradient norm: one rank %s, ZeRO-0 %s, ZeRO-2 %s\n", a, b, c
    if (!(a > 0) || d0 > 1e-6 * a || d2 > 1e-6 * a) { printf "ddp: gradient norms: one rank %s, ZeRO-0 %s, ZeRO-2 %s\n", a, b, c; exit 1 } }'
if "$acc" explain "$@" --batch 4 --zero 1 --target "$target" >/dev/null 2>"$dir/e1"; then
    echo "ddp: --zero 1 without --ranks was accepted"
    exit 1
fi
grep -q "needs --ranks 2 or more" "$dir/e1" || { cat "$dir/e1"; exit 1; }
if "$acc" explain "$@" --batch 4 --ranks 3 --target "$target" >/dev/null 2>"$dir/e2"; then
    echo "ddp: --ranks 3 of a batch of 4 was accepted"
    exit 1
fi
grep -q "does not divide the batch B = 4" "$dir/e2" || { cat "$dir/e2"; exit 1; }
echo "ddp: $target: 2 and 4 ranks equal one rank's step; ZeRO-1 and ZeRO-2 equal ZeRO-0 in less memory"
