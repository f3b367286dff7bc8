#!/bin/sh
# api_errors.sh ACC BLAS_DIR: compile the mlp model and run api_errors.c against it.
set -eu
acc=$1 blas=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" compile models/mlp.acdsl --target cpu -D B=4 -D D_in=8 -D hidden=8 -D classes=3 --budget 64M -o "$dir/mlp" 2>/dev/null
${CC:-cc} ${ACC_GEN_FLAGS:-} -std=c11 -O1 -fopenmp -Wall -Wextra -Werror tests/e2e/api_errors.c -Itests/unit -I"$dir/mlp" \
    "$dir/mlp/libmlp.a" "$dir/mlp/libaccrt.a" -L"$blas" -Wl,-rpath,"$blas" -lopenblas -lm -o "$dir/api_errors"
"$dir/api_errors" "$dir"
