#!/bin/sh
# calibrate_device.sh ACC: `acc calibrate --target cuda-emu` builds the
# device calibration program against a generated library and runs it on the
# emulator: the profile it writes has every field, positive, and the planner
# loads it (acc explain --hw); --target cuda without a GPU fails with the
# device layer's sentence, not a crash; --tf32 without a GPU target is a
# usage error.
set -u
acc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" calibrate --target cuda-emu -o "$dir/emu.hw" || { echo "FAIL: calibrate --target cuda-emu"; exit 1; }
for k in matmul_flops matmul_flops_bf16 vector_flops mem_bw launch_latency; do
    awk -v k="$k" '$1 == k && $3 + 0 > 0 { ok = 1 } END { exit !ok }' "$dir/emu.hw" ||
        { echo "FAIL: the profile has no positive $k:"; cat "$dir/emu.hw"; exit 1; }
done
"$acc" explain models/mlp.acdsl --target cpu --hw "$dir/emu.hw" | grep -q "hardware emu-local" ||
    { echo "FAIL: acc explain does not plan with the measured profile"; exit 1; }
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
echo "ok   calibrate --target cuda-emu: $(grep -c = "$dir/emu.hw") fields; the planner reads the profile"
