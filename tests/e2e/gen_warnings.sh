#!/bin/sh
# gen_warnings.sh ACC: the C that acc generates compiles without a warning
# under -Wall -Wextra -Werror, for the CPU and the emulated CUDA target of
# every shipped model (small shapes, with recomputation, and a schedule long
# enough to be split into several functions). A warning there is a code
# generation bug (a part of the schedule that dropped its status was one).
set -eu
acc=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
n=0
check() { # check NAME TARGET MODEL ARGS...
    name=$1 target=$2 model=$3
    shift 3
    "$acc" compile "$model" "$@" --target "$target" --policy full --budget 1G -o "$dir/$name" >/dev/null 2>"$dir/$name.err" ||
        { cat "$dir/$name.err"; echo "FAIL: acc compile $model --target $target"; exit 1; }
    c=$(ls "$dir/$name"/*.c | grep -v _images.c | head -n 1)
    ${CC:-cc} -std=c11 -O1 -fopenmp -Wall -Wextra -Werror -I"$root/runtime" -I"$root/runtime/cuda" -c "$c" \
        -o "$dir/$name.o" || { echo "FAIL: warnings in the C generated for $model ($target)"; exit 1; }
    n=$((n + 1))
}
for target in cpu cuda-emu; do
    check "gpt2_$target" "$target" models/gpt2.acdsl -D L=3 -D C=64 -D H=4 -D T=32 -D B=4 -D V=512 -D P=0.1
    check "llama_$target" "$target" models/llama.acdsl -D B=2 -D T=32 -D V=64 -D C=32 -D L=3 -D H=4 -D KVH=2 -D F=64
    check "mlp_$target" "$target" models/mlp.acdsl -D B=16 -D D_in=64 -D hidden=32 -D classes=5
    check "unet_$target" "$target" models/unet.acdsl -D B=2 -D N=32 -D C0=8 -D E=2
done
check long_cpu cpu tests/e2e/repeat_mat.acdsl -D N=60
echo "ok   $n generated schedules compile without a warning"
