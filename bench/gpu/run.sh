#!/bin/sh
# run.sh - GPT-2 training on one NVIDIA GPU: acc's generated CUDA library at
# several memory budgets against PyTorch eager with its checkpointing policies
# (none, torch.utils.checkpoint on every block and on every other block,
# torch.compile's activation_memory_budget knapsack). Step time, tokens/s,
# MFU, peak memory, and the ratios acc/torch. See bench/gpu/run.py for what is
# measured and how; every argument is passed on to it, e.g.
#
#   bench/gpu/run.sh                               # GPT-2 small, B=8, T=1024
#   bench/gpu/run.sh -B 4 --tf32 --budgets none,75%,50%,min,full
#   bench/gpu/run.sh --only torch --torch-policies none,full
#   bench/gpu/run.sh --device cpu --acc-target cpu -L 1 -C 64 -H 2 -T 32 -B 2 -V 256
#                                                  # smoke test of the harness, no GPU
#
# Without a GPU (no nvidia-smi, no device, or a PyTorch that cannot use it)
# it prints "no GPU: skipped" and exits 0. The acc binary: --acc PATH, else
# $ACC, else build/acc (a build with the CUDA target: cmake -S . -B build
# -DCMAKE_BUILD_TYPE=Release && cmake --build build -j).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$(dirname "$here")")
device=cuda
prev=
for arg in "$@"; do
    case "$arg" in --device=*) device=${arg#--device=} ;; esac
    [ "$prev" = --device ] && device=$arg
    prev=$arg
done
if [ "$device" = cuda ] && ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "no GPU: skipped (nvidia-smi is not installed)"
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "run.sh: python3 is needed (with PyTorch for the torch side)" >&2
    exit 2
fi
exec python3 "$here/run.py" --acc "${ACC:-$root/build/acc}" "$@"
