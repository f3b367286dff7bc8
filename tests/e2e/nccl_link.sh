#!/bin/sh
# nccl_link.sh ACC BLAS_DIR NCCL_ARCHIVE MODE: the data-parallel cuda target
# links: models/mlp.acdsl compiled for the cuda target (sm_90 only: the
# link is the point), nccl_trainer.c built against the library,
# libaccrt_nccl (NCCL_ARCHIVE) and the runtime, and run. MODE "nogpu":
# where no GPU exists every call fails with a status and a sentence (and
# the test is skipped, exit 77, where one does: MODE "gpu" covers it);
# "gpu": a one-rank NCCL group and one step on the GPU (skipped, exit 77,
# without one).
set -eu
acc=$1 blas=$2 nccl=$3 mode=$4
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then gpu=1; fi
if [ "$mode" = gpu ] && [ $gpu = 0 ]; then echo "no GPU on this machine: skipped"; exit 77; fi
if [ "$mode" = nogpu ] && [ $gpu = 1 ]; then echo "a GPU on this machine: nccl_gpu covers it; skipped"; exit 77; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" compile models/mlp.acdsl -D B=16 -D D_in=64 -D hidden=32 -D classes=5 --target cuda --arch sm_90 \
    --budget 1G -o "$dir/out" >"$dir/log" 2>&1 || { cat "$dir/log"; echo "FAIL: acc compile --target cuda"; exit 1; }
# shellcheck disable=SC2086 # ACC_GEN_FLAGS: several flags
${CC:-cc} ${ACC_GEN_FLAGS:-} -std=c11 -O1 -fopenmp -Wall -Wextra -Werror -DMODEL=mlp -include "$dir/out/mlp.h" \
    tests/e2e/nccl_trainer.c -Itests/unit -Iruntime -Iruntime/cuda -I"$dir/out" "$dir/out/libmlp.a" "$nccl" \
    "$dir/out/libaccrt_cuda.a" "$dir/out/libaccrt.a" -L"$blas" -Wl,-rpath,"$blas" -lopenblas -ldl -lm \
    -o "$dir/nccl_trainer" || { echo "FAIL: the trainer does not link with libaccrt_nccl"; exit 1; }
"$dir/nccl_trainer" "$mode"
