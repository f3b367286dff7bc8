#!/bin/sh
# calibrate_device.sh ACC: `acc calibrate --target cuda-emu` builds the
# device calibration program against a generated library and runs it on the
# emulator: the profile it writes has every field, positive, and the planner
# loads it (acc explain --hw); --target cuda without a GPU fails with the
# device layer's sentence, not a crash; --tf32 without a GPU target is a
# usage error. And `acc calibrate` on the CPU: the same fields (the bf16
# GEMM rate included), positive, read by the planner.
set -u
acc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" calibrate --target cuda-emu -o "$dir/emu.hw" || { echo "FAIL: calibrate --target cuda-emu"; exit 1; }
OMP_NUM_THREADS=1 "$acc" calibrate -o "$dir/cpu.hw" || { echo "FAIL: calibrate (cpu)"; exit 1; }
for p in emu cpu; do
    for k in matmul_flops matmul_flops_bf16 vector_flops mem_bw launch_latency; do
        awk -v k="$k" '$1 == k && $3 + 0 > 0 { ok = 1 } END { exit !ok }' "$dir/$p.hw" ||
            { echo "FAIL: the $p profile has no positive $k:"; cat "$dir/$p.hw"; exit 1; }
    done
    "$acc" explain models/mlp.acdsl --target cpu --precision bf16 --hw "$dir/$p.hw" | grep -q "hardware $p-local" ||
        { echo "FAIL: acc explain does not plan with the measured $p profile"; exit 1; }
done
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
    "$acc" calibrate --target cuda -o "$dir/gpu.hw" 2>"$dir/err"
    rc=$?
    if [ "$rc" -ne 1 ] || ! grep -q "error: calibrate: .*\(no NVIDIA driver\|no CUDA device\|no usable\)" "$dir/err"; then
        # a build without the CUDA Toolkit cannot compile for cuda: its own error, also exit 1
        grep -q "error:" "$dir/err" && [ "$rc" -eq 1 ] || { echo "FAIL: calibrate --target cuda without a GPU: exit $rc"; cat "$dir/err"; exit 1; }
    fi
fi
"$acc" calibrate --tf32 2>/dev/null
[ $? -eq 2 ] || { echo "FAIL: calibrate --tf32 on the CPU is not a usage error"; exit 1; }
echo "ok   calibrate --target cuda-emu: $(grep -c = "$dir/emu.hw") fields, cpu: $(grep -c = "$dir/cpu.hw"); the planner reads both"
