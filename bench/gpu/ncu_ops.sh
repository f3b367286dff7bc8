#!/bin/sh
# ncu_ops.sh - Nsight Compute's detail (speed of light, occupancy, launch
# statistics, warp stalls) for acc's kernels in one case of the kernel
# benchmark (bench/gpu/ops.c), for finding why a kernel is slow:
#
#   bench/gpu/ncu_ops.sh --only attention_fwd/gpt2 --tf32 [--kernel REGEX]
#
# Runs the acc side only, two launches per kernel (--iters 1 --reps 1), on the
# GPU's own clocks. Needs a GPU and ncu; the acc binary: $ACC, else build/acc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$(dirname "$here")")
acc=${ACC:-$root/build/acc}
kernel='^ck_'
pass=
while [ $# -gt 0 ]; do
    case "$1" in
    --kernel) kernel=$2; shift 2 ;;
    *) pass="$pass $1"; shift ;;
    esac
done
command -v ncu >/dev/null 2>&1 || { echo "ncu_ops.sh: ncu is not installed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" compile "$root/models/mlp.acdsl" --target cuda --budget 1G -o "$dir/k" >/dev/null
blas=$(sed -n 's/^ACC_OPENBLAS_LIBRARY:FILEPATH=//p' "$(dirname "$acc")/CMakeCache.txt" 2>/dev/null | xargs -r dirname)
${CC:-cc} -std=c11 -O2 -fopenmp -D_POSIX_C_SOURCE=200809L -DACC_BENCH_DESC=mlp_desc \
    -I"$root/runtime" -I"$root/runtime/cuda" "$here/ops.c" "$dir/k/libmlp.a" "$dir/k/libaccrt_cuda.a" "$dir/k/libaccrt.a" \
    ${blas:+-L"$blas" -Wl,-rpath,"$blas"} -lopenblas -ldl -lm -o "$dir/ops"
# shellcheck disable=SC2086
ncu --clock-control none -k "regex:$kernel" --launch-count 4 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    "$dir/ops" --iters 1 --reps 1 $pass
