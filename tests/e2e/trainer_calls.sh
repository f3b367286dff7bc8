#!/bin/sh
# trainer_calls.sh ACC BLAS_DIR TARGET MODE MODEL [ACC COMPILE ARGS...]
# Compiles models/MODEL.acdsl for TARGET and runs trainer_calls.c against
# the library. MODE "exact" also requires accumulated gradients to be exactly
# twice one step's, "-" within rounding; "dropout" (the ARGS build dropout
# in, e.g. -D P=0.1) checks that acc_forward turns it off: its loss must be
# the bits of acc_forward's loss of the same model built with -D P=0 as
# well. The environment passes through (ACC_CUDA_GRAPHS=0: the emulator runs
# every launch, recording nothing).
set -eu
acc=$1 blas=$2 target=$3 mode=$4 model=$5
shift 5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# build DIR [ACC COMPILE ARGS...]: trainer_calls.c against a library compiled into DIR
build() {
    out=$1
    shift
    "$acc" compile "models/$model.acdsl" --target "$target" "$@" -o "$out" 2>"$dir/compile.err" ||
        { cat "$dir/compile.err"; exit 1; }
    dev=""
    [ "$target" = cuda-emu ] && dev="$out/libaccrt_emu.a"
    ${CC:-cc} ${ACC_GEN_FLAGS:-} -std=c11 -O1 -fopenmp -Wall -Wextra -Werror -DMODEL="$model" -include "$out/$model.h" \
        tests/e2e/trainer_calls.c -Itests/unit -I"$out" "$out/lib$model.a" $dev "$out/libaccrt.a" -L"$blas" \
        -Wl,-rpath,"$blas" -lopenblas -lm -o "$out/trainer_calls"
}
build "$dir/m" "$@"
[ "$mode" = dropout ] || exec "$dir/m/trainer_calls" "$mode"
"$dir/m/trainer_calls" dropout | tee "$dir/m.out"
build "$dir/ref" "$@" -D P=0
"$dir/ref/trainer_calls" forward | tee "$dir/ref.out"
with=$(grep '^forward loss' "$dir/m.out")
without=$(grep '^forward loss' "$dir/ref.out")
[ -n "$with" ] && [ "$with" = "$without" ] ||
    { echo "trainer_calls: acc_forward with dropout built in ($with) is not the loss without it ($without)"; exit 1; }
