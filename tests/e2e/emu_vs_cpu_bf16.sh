#!/bin/sh
# emu_vs_cpu_bf16.sh ACC TENSOR_COMPARE NORM MODEL [-D k=v ...]
# The cuda target's bf16 kernels and launch layer, run by the device
# emulator, against the cpu target's bf16 kernels (the reference for the
# bf16 semantics): one training step from the same seed on both, the
# parameter gradients within a relative 2-norm of NORM per tensor
# (tensor_compare --norm: the kernels sum in other orders, so bf16 stores
# can land one rounding apart), the loss within 1e-3, and the emulated
# run's measured peak equal to its planned peak. DEVICE_TARGET=cuda runs
# the device side on the real GPU instead (tests/e2e/cuda_gpu.sh).
set -eu
dev=${DEVICE_TARGET:-cuda-emu}
acc=$1 tc=$2 norm=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for t in cpu "$dev"; do
    "$acc" run "$@" --precision bf16 --target "$t" --policy none --steps 1 --dump-grads "$dir/$t.bin" \
        >"$dir/$t.out" 2>"$dir/$t.err" || {
        cat "$dir/$t.err"
        echo "emu_vs_cpu_bf16: acc run --target $t failed"
        exit 1
    }
done
summary=$(tail -n 1 "$dir/$dev.out")
planned=$(echo "$summary" | sed -n 's/.*"peak_bytes_planned": \([0-9]*\).*/\1/p')
measured=$(echo "$summary" | sed -n 's/.*"peak_bytes_measured": \([0-9]*\).*/\1/p')
[ -n "$planned" ] && [ "$planned" = "$measured" ] || {
    echo "emu_vs_cpu_bf16: measured peak $measured != planned $planned"
    exit 1
}
sed -n 's/^{"step": 0, "loss": \([-0-9.e+naif]*\)}$/\1/p' "$dir/cpu.out" >"$dir/cpu.loss"
"$tc" --loss "$dir/cpu.loss" "$dir/$dev.out" --rtol 1e-3 --atol 1e-6
"$tc" "$dir/cpu.bin" "$dir/$dev.bin" --norm "$norm" --atol 1e-6 --quiet
