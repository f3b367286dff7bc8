#!/bin/sh
# cuda_emu.sh ACC TENSOR_COMPARE MODEL [-D k=v ...]
# The cuda target without a GPU: the model's CUDA kernels and launch layer,
# run by the device emulator (--target cuda-emu), against the CPU target.
# One training step at save-all and under the policies full and optimal at
# three budgets between the smallest policy peak and save-all:
#  - every plan's gradients byte-identical to the emulated save-all plan's
#    (recomputation on the device reproduces the forward exactly);
#  - the save-all plan without fusion (--no-fuse: no elementwise chains, no
#    linear ops) byte-identical to the fused plan whose linear ops take the
#    fallback without cuBLASLt epilogues (ACC_EMU_NO_EPILOGUE=1), and that
#    within tolerance of the CPU target;
#  - the emulated save-all gradients equal to the CPU target's within
#    rtol 1e-4, atol 1e-6 (the kernels differ in summation order and in
#    their tanh/exp; tests/ref/README.md states the same tolerance against
#    float64 PyTorch);
#  - the measured peak (arena + the planned GEMM workspace) equal to the
#    planned peak and within the budget;
#  - four steps with AdamW: every step's loss equal to the CPU target's
#    within rtol 1e-4, and byte-identical to the same run with the graph
#    replay off (ACC_CUDA_GRAPHS=0): the third and fourth steps and the
#    optimizer updates from the second on replay the launches recorded once
#    (the GPU's CUDA graphs), so a step counter, seed or learning rate baked
#    into a recorded launch would show here (dropout masks, AdamW bias
#    corrections);
#  - with --tf32 (attention on tensor cores, emulated with TF32 rounding):
#    gradients within rtol 3e-3, atol 1e-4 of the CPU target's, and a plan
#    that recomputes (policy full) byte-identical to the TF32 save-all plan.
set -eu
acc=$1
compare=$2
model=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ws=33554432 # the device targets' GEMM workspace (codegen/target.c, workspace_bytes)

range=$(sh "$(dirname "$0")/budget_range.sh" "$acc" "$model" "$@") || range=""
none=${range%% *} min=${range#* }
[ -n "$range" ] || { echo "cuda_emu: cannot read the policy table"; exit 1; }
echo "schedule: save-all peak $none, smallest policy peak $min; device plans add $ws bytes of workspace"

run() { # run NAME TARGET ARGS...: one step, gradients into $dir/NAME.bin
    name=$1 target=$2
    shift 2
    "$acc" run "$model" "$@" --target "$target" --steps 1 --dump-grads "$dir/$name.bin" >"$dir/$name.out" 2>"$dir/$name.err" || {
        cat "$dir/$name.err"
        echo "FAIL $name: acc run --target $target $* failed"
        exit 1
    }
}

peaks() { # peaks NAME BUDGET(0: none): measured == planned <= budget
    summary=$(tail -n 1 "$dir/$1.out")
    planned=$(echo "$summary" | sed -n 's/.*"peak_bytes_planned": \([0-9]*\).*/\1/p')
    measured=$(echo "$summary" | sed -n 's/.*"peak_bytes_measured": \([0-9]*\).*/\1/p')
    [ -n "$planned" ] && [ "$planned" = "$measured" ] || { echo "FAIL $1: measured peak $measured != planned $planned"; exit 1; }
    if [ "$2" != 0 ] && [ "$planned" -gt "$2" ]; then
        echo "FAIL $1: planned peak $planned over the budget $2"
        exit 1
    fi
}

run cpu cpu "$@" --policy none
run emu cuda-emu "$@" --policy none
peaks emu 0
"$compare" "$dir/cpu.bin" "$dir/emu.bin" --rtol 1e-4 --atol 1e-6 --quiet || {
    "$compare" "$dir/cpu.bin" "$dir/emu.bin" --rtol 1e-4 --atol 1e-6 | grep -v '^ok' || true
    echo "FAIL: the emulated cuda target's gradients differ from the CPU target's"
    exit 1
}
cpu_loss=$(sed -n 's/{"step": 0, "loss": \([-0-9.e]*\)}/\1/p' "$dir/cpu.out")
emu_loss=$(sed -n 's/{"step": 0, "loss": \([-0-9.e]*\)}/\1/p' "$dir/emu.out")
awk -v a="$cpu_loss" -v b="$emu_loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-4 * (a < 0 ? -a : a) + 1e-6) }' || {
    echo "FAIL: loss $emu_loss (cuda-emu) vs $cpu_loss (cpu)"
    exit 1
}
echo "ok   save-all: loss $emu_loss (cpu $cpu_loss), gradients within tolerance of the CPU target"

steps() { # steps NAME TARGET ARGS...: four steps, the losses into $dir/NAME.loss
    name=$1 target=$2
    shift 2
    "$acc" run "$model" "$@" --target "$target" --steps 4 >"$dir/$name.out" 2>"$dir/$name.err" || {
        cat "$dir/$name.err"
        echo "FAIL $name: acc run --target $target --steps 4 $* failed"
        exit 1
    }
    sed -n 's/{"step": [0-9]*, "loss": \([-0-9.e]*\)}/\1/p' "$dir/$name.out" >"$dir/$name.loss"
}
steps cpu4 cpu "$@" --policy none
steps emu4 cuda-emu "$@" --policy none
ACC_CUDA_GRAPHS=0 steps direct4 cuda-emu "$@" --policy none
[ "$(wc -l <"$dir/emu4.loss")" -eq 4 ] || { echo "FAIL: four steps printed $(wc -l <"$dir/emu4.loss") losses"; exit 1; }
cmp -s "$dir/emu4.loss" "$dir/direct4.loss" || {
    paste "$dir/emu4.loss" "$dir/direct4.loss"
    echo "FAIL: replayed steps differ from the same steps launched one by one"
    exit 1
}
paste "$dir/cpu4.loss" "$dir/emu4.loss" | awk '{ d = $1 - $2; if (d < 0) d = -d; a = $1 < 0 ? -$1 : $1;
    if (!(d <= 1e-4 * a + 1e-6)) { print "FAIL: step " NR - 1 ": loss " $2 " (cuda-emu) vs " $1 " (cpu)"; bad = 1 } }
    END { exit bad }'
echo "ok   four steps with AdamW: losses $(tr '\n' ' ' <"$dir/emu4.loss")equal to the CPU's, replay == direct"

run tf32 cuda-emu "$@" --policy none --tf32
"$compare" "$dir/cpu.bin" "$dir/tf32.bin" --rtol 3e-3 --atol 1e-4 --quiet || {
    "$compare" "$dir/cpu.bin" "$dir/tf32.bin" --rtol 3e-3 --atol 1e-4 | grep -v '^ok' || true
    echo "FAIL: the emulated TF32 gradients differ from the CPU target's beyond TF32 rounding"
    exit 1
}
run tf32_full cuda-emu "$@" --policy full --tf32
cmp -s "$dir/tf32.bin" "$dir/tf32_full.bin" || { echo "FAIL tf32_full: gradients differ from the TF32 save-all plan"; exit 1; }
echo "ok   --tf32: gradients within TF32 tolerance of the CPU target's; policy full identical to save-all"

check() { # check NAME BUDGET
    peaks "$1" "$2"
    cmp -s "$dir/emu.bin" "$dir/$1.bin" || { echo "FAIL $1: gradients differ from the emulated save-all plan"; exit 1; }
    echo "ok   $1: gradients identical to save-all, peak $planned"
}
run full cuda-emu "$@" --policy full
check full 0
# --no-fuse also keeps matmul and bias add apart: the same math as the
# linear op's fallback (no cuBLASLt epilogue: the plain GEMM, the bias add,
# the column reduction), which ACC_EMU_NO_EPILOGUE=1 forces
ACC_EMU_NO_EPILOGUE=1 run noepi cuda-emu "$@" --policy none
peaks noepi 0
run nofuse cuda-emu "$@" --policy none --no-fuse
peaks nofuse 0
cmp -s "$dir/noepi.bin" "$dir/nofuse.bin" || { echo "FAIL nofuse: gradients differ from the linear fallback's"; exit 1; }
"$compare" "$dir/cpu.bin" "$dir/noepi.bin" --rtol 1e-4 --atol 1e-6 --quiet || {
    echo "FAIL noepi: the linear fallback's gradients differ from the CPU target's"
    exit 1
}
echo "ok   nofuse: gradients identical to the linear op's fallback (no epilogue), which match the CPU's"
for frac in 1 5 9; do
    budget=$(awk -v a="$min" -v b="$none" -v f="$frac" -v w="$ws" 'BEGIN { printf "%.0f", a + (b - a) * f / 10 + w }')
    run "optimal_$frac" cuda-emu "$@" --policy optimal --budget "$budget"
    check "optimal_$frac" "$budget"
done
