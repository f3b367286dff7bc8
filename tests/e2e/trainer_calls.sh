#!/bin/sh
# trainer_calls.sh ACC BLAS_DIR TARGET EXACT MODEL [ACC COMPILE ARGS...]
# Compiles models/MODEL.acdsl for TARGET and runs trainer_calls.c against
# the library; EXACT "exact" also requires accumulated gradients to be exactly
# twice one step's ("-": within rounding). The environment passes through
# (ACC_CUDA_GRAPHS=0: the emulator runs every launch, recording nothing).
set -eu
acc=$1 blas=$2 target=$3 exact=$4 model=$5
shift 5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" compile "models/$model.acdsl" --target "$target" "$@" -o "$dir/m" 2>"$dir/compile.err" ||
    { cat "$dir/compile.err"; exit 1; }
dev=""
[ "$target" = cuda-emu ] && dev="$dir/m/libaccrt_emu.a"
${CC:-cc} ${ACC_GEN_FLAGS:-} -std=c11 -O1 -fopenmp -Wall -Wextra -Werror -DMODEL="$model" -include "$dir/m/$model.h" \
    tests/e2e/trainer_calls.c -Itests/unit -I"$dir/m" "$dir/m/lib$model.a" $dev "$dir/m/libaccrt.a" -L"$blas" \
    -Wl,-rpath,"$blas" -lopenblas -lm -o "$dir/trainer_calls"
"$dir/trainer_calls" "$exact"
