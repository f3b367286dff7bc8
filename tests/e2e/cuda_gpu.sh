#!/bin/sh
# cuda_gpu.sh ACC TENSOR_COMPARE: the real cuda path, where a GPU exists
# (exit 77, skipped, elsewhere). Each shipped model, small shapes, one step
# on the GPU against the CPU target (rtol 1e-4, atol 1e-6; TF32 off), and a
# recomputing plan's gradients identical to the GPU's save-all plan.
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
