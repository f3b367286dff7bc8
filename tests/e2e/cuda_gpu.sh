#!/bin/sh
# cuda_gpu.sh ACC TENSOR_COMPARE: the real cuda path, where a GPU exists
# (exit 77, skipped, elsewhere). Each shipped model, small shapes, one step
# on the GPU against the CPU target (rtol 1e-4, atol 1e-6; TF32 off), and a
# recomputing plan's gradients identical to the GPU's save-all plan; then
# four steps with AdamW (the second captured as a CUDA graph, the later ones
# replayed): losses equal to the CPU target's within rtol 1e-4 and identical
# to the same steps launched one by one (ACC_CUDA_GRAPHS=0); and with --tf32
# (tensor-core GEMMs and attention) gradients within rtol 3e-3, atol 1e-4;
# with --precision bf16 (GPT-2 with 64-wide heads over 160 tokens, so the
# bf16 attention kernels run whole and diagonal tiles), gradients within the
# bf16 reference's norm of the CPU target's bf16 step (emu_vs_cpu_bf16.sh).
set -eu
acc=$1
compare=$2
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
    echo "no GPU on this machine: skipped"
    exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
check_model() { # NAME MODEL ARGS...
    name=$1 model=$2
    shift 2
    "$acc" run "$model" "$@" --policy none --steps 1 --dump-grads "$dir/$name.cpu.bin" >/dev/null
    "$acc" run "$model" "$@" --target cuda --policy none --steps 1 --dump-grads "$dir/$name.gpu.bin" >"$dir/$name.out"
    "$acc" run "$model" "$@" --target cuda --policy full --steps 1 --dump-grads "$dir/$name.full.bin" >/dev/null
    tail -n 1 "$dir/$name.out"
    "$compare" "$dir/$name.cpu.bin" "$dir/$name.gpu.bin" --rtol 1e-4 --atol 1e-6 --quiet ||
        { echo "FAIL $name: GPU gradients differ from the CPU target's"; exit 1; }
    cmp -s "$dir/$name.gpu.bin" "$dir/$name.full.bin" ||
        { echo "FAIL $name: policy full changed the GPU gradients"; exit 1; }
    echo "ok   $name on the GPU"
}
check_model gpt2 models/gpt2.acdsl -D L=3 -D C=64 -D H=4 -D T=32 -D B=4 -D V=512 -D P=0.1
check_model llama models/llama.acdsl -D B=2 -D T=32 -D V=64 -D C=32 -D L=3 -D H=4 -D KVH=2 -D F=64
check_model mlp models/mlp.acdsl -D B=16 -D D_in=64 -D hidden=32 -D classes=5
check_model unet models/unet.acdsl -D B=2 -D N=32 -D C0=8 -D E=2

steps() { # NAME TARGET MODEL ARGS...: four steps, the losses into $dir/NAME.loss
    name=$1 target=$2 model=$3
    shift 3
    "$acc" run "$model" "$@" --target "$target" --policy none --steps 4 >"$dir/$name.out"
    sed -n 's/{"step": [0-9]*, "loss": \([-0-9.e]*\)}/\1/p' "$dir/$name.out" >"$dir/$name.loss"
}
gpt2="models/gpt2.acdsl -D L=3 -D C=64 -D H=4 -D T=32 -D B=4 -D V=512 -D P=0.1"
# shellcheck disable=SC2086
steps cpu4 cpu $gpt2
# shellcheck disable=SC2086
steps graph4 cuda $gpt2
# shellcheck disable=SC2086
ACC_CUDA_GRAPHS=0 steps direct4 cuda $gpt2
[ "$(wc -l <"$dir/graph4.loss")" -eq 4 ] || { echo "FAIL: four steps printed $(wc -l <"$dir/graph4.loss") losses"; exit 1; }
cmp -s "$dir/graph4.loss" "$dir/direct4.loss" ||
    { paste "$dir/graph4.loss" "$dir/direct4.loss"; echo "FAIL: CUDA graph steps differ from direct launches"; exit 1; }
paste "$dir/cpu4.loss" "$dir/graph4.loss" | awk '{ d = $1 - $2; if (d < 0) d = -d; a = $1 < 0 ? -$1 : $1;
    if (!(d <= 1e-4 * a + 1e-6)) { print "FAIL: step " NR - 1 ": loss " $2 " (GPU) vs " $1 " (cpu)"; bad = 1 } }
    END { exit bad }'
echo "ok   four GPU steps with CUDA graphs: losses $(tr '\n' ' ' <"$dir/graph4.loss")equal to the CPU's and to direct launches"

# shellcheck disable=SC2086
"$acc" run $gpt2 --target cuda --tf32 --policy none --steps 1 --dump-grads "$dir/tf32.gpu.bin" >/dev/null
"$compare" "$dir/gpt2.cpu.bin" "$dir/tf32.gpu.bin" --rtol 3e-3 --atol 1e-4 --quiet ||
    { echo "FAIL: --tf32 GPU gradients differ from the CPU target's beyond TF32 rounding"; exit 1; }
echo "ok   --tf32 on the GPU: gradients within TF32 tolerance of the CPU target's"

DEVICE_TARGET=cuda sh tests/e2e/emu_vs_cpu_bf16.sh "$acc" "$compare" 0.035 models/gpt2.acdsl \
    -D L=2 -D C=256 -D H=4 -D T=160 -D B=2 -D V=512 ||
    { echo "FAIL: --precision bf16 GPU gradients differ from the CPU target's bf16 step"; exit 1; }
echo "ok   --precision bf16 on the GPU: gradients within the bf16 norm of the CPU target's"
