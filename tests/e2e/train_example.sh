#!/bin/sh
# train_example.sh ACC RUNTIME_INCLUDE BLAS_DIR
# Compiles a tiny byte-level GPT with acc, builds examples/train.c against the
# generated library exactly as the README shows, trains a few steps and checks
# that the loss fell and the trainer reports peak memory.
set -eu
acc=$1 blas=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" compile models/gpt2.acdsl --target cpu -D V=256 -D L=2 -D C=64 -D H=4 -D T=32 -D B=4 --budget 256M -o "$dir/tiny"
${CC:-cc} ${ACC_GEN_FLAGS:-} -std=c11 -O2 -fopenmp -Wall -Wextra -Werror examples/train.c -I"$dir/tiny" "$dir/tiny/libgpt2.a" \
    "$dir/tiny/libaccrt.a" -L"$blas" -Wl,-rpath,"$blas" -lopenblas -lm -o "$dir/train"
out=$("$dir/train" 60 0.003)
echo "$out"
echo "$out" | awk '/^train: loss/ { split($0, w, " "); f = w[3]; l = w[5];
    if (!(l < 0.8 * f)) { print "train_example: loss did not fall"; exit 1 } ok = 1 }
    /peak memory/ { mem = 1 } END { if (!ok || !mem) { print "train_example: no summary line"; exit 1 } }'
