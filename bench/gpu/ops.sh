#!/bin/sh
# ops.sh - the kernel benchmark: every kernel family of acc's CUDA target
# (bench/gpu/ops.c) against the PyTorch op doing the same math in the same
# dtype on the same GPU (bench/gpu/ops.py), on GPT-2 small and Llama
# (TinyLlama widths) shapes: time per launch, achieved GB/s or TFLOP/s, and
# the ratio acc/torch, one table.
#
#   bench/gpu/ops.sh                     # every case, float32
#   bench/gpu/ops.sh --tf32              # cuBLAS and torch GEMMs on TF32
#   bench/gpu/ops.sh --only bias_grad    # one family (or NAME/MODEL)
#   bench/gpu/ops.sh --json out.json     # the rows as JSON too
#   bench/gpu/ops.sh --emu               # no GPU: the harness on the emulator
#                                        # at small shapes, acc side only
#
# The acc side is built here from a generated library's kernel images (acc
# compile of models/mlp.acdsl, whose library holds every kernel) and the
# device layer; the acc binary: --acc PATH, else $ACC, else build/acc.
# Without a GPU (and without --emu) it prints "no GPU: skipped" and exits 0.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$(dirname "$here")")
acc=${ACC:-$root/build/acc}
emu=0
pass=""
while [ $# -gt 0 ]; do
    case "$1" in
    --acc) acc=$2; shift 2 ;;
    --emu) emu=1; shift ;;
    *) pass="$pass $1"; shift ;;
    esac
done
if [ "$emu" = 0 ] && { ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; }; then
    echo "no GPU: skipped (nvidia-smi finds none)"
    exit 0
fi
[ -x "$acc" ] || { echo "ops.sh: no acc binary at $acc (build first, or --acc PATH)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ "$emu" = 1 ]; then target=cuda-emu lib=libaccrt_emu.a; else target=cuda lib=libaccrt_cuda.a; fi
"$acc" compile "$root/models/mlp.acdsl" --target "$target" --budget 1G -o "$dir/k" >/dev/null
blas=$(sed -n 's/^ACC_OPENBLAS_LIBRARY:FILEPATH=//p' "$(dirname "$acc")/CMakeCache.txt" 2>/dev/null | xargs -r dirname)
${CC:-cc} -std=c11 -O2 -fopenmp -D_POSIX_C_SOURCE=200809L -DACC_BENCH_DESC=mlp_desc \
    -I"$root/runtime" -I"$root/runtime/cuda" "$here/ops.c" "$dir/k/libmlp.a" "$dir/k/$lib" "$dir/k/libaccrt.a" \
    ${blas:+-L"$blas" -Wl,-rpath,"$blas"} -lopenblas -ldl -lm -o "$dir/ops"
if [ "$emu" = 1 ]; then
    # shellcheck disable=SC2086
    exec "$dir/ops" --small --iters 1 --reps 1 $pass
fi
# shellcheck disable=SC2086
python3 "$here/ops.py" --acc-ops "$dir/ops" $pass
