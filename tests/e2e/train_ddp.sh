#!/bin/sh
# train_ddp.sh ACC TENSOR_COMPARE BLAS_DIR
# examples/train_ddp.c built as its header says against a small byte-level
# GPT compiled for 1 rank (batch 8) and for 2 ranks (--batch 8 --ranks 2, 4
# rows each; and again with --zero 1 and 2), trained 40 steps under mpirun: the
# first step's reduced gradients equal the one rank's on the whole batch
# (relative 2-norm 1e-5 per tensor), the loss falls, the printed losses of
# the 2-rank runs are those of the 1-rank run to the digits printed, and the
# measured peak per rank equals the planned one.
set -eu
acc=$1 tc=$2 blas=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
root=""
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
shape="-D V=256 -D L=2 -D C=64 -D H=4 -D T=32"
for cfg in "1 0" "2 0" "2 1" "2 2"; do
    set -- $cfg
    out="$dir/r$1z$2"
    "$acc" compile models/gpt2.acdsl --target cpu $shape --batch 8 --ranks "$1" --zero "$2" --budget 256M \
        -o "$out" >/dev/null 2>"$dir/err" || { cat "$dir/err"; exit 1; }
    ${MPICC:-mpicc} ${ACC_GEN_FLAGS:-} -std=c11 -O2 -fopenmp -Wall -Wextra -Werror examples/train_ddp.c -I"$out" \
        "$out/libgpt2.a" "$out/libaccrt_mpi.a" "$out/libaccrt.a" -L"$blas" -Wl,-rpath,"$blas" -lopenblas -lm \
        -o "$out/train_ddp"
    dump=""
    [ "$2" = 0 ] && dump="--dump-grads $out/g.bin" # ZeRO keeps only the rank's pieces reduced
    mpirun -np "$1" --oversubscribe $root "$out/train_ddp" 40 $dump >"$out/out"
    cat "$out/out"
    awk '/^train_ddp: loss/ { if (!($5 < 0.8 * $3)) { print "train_ddp: the loss did not fall"; exit 1 } ok = 1 }
        END { if (!ok) { print "train_ddp: no summary line"; exit 1 } }' "$out/out"
    grep -Eq 'peak memory ([0-9]+) bytes per rank \(planned \1\)' "$out/out" ||
        { echo "train_ddp: measured peak differs from the planned one"; exit 1; }
    grep '^step' "$out/out" | sed 's/  [0-9]* tokens\/s$//' >"$out/losses"
done
"$tc" "$dir/r1z0/g.bin" "$dir/r2z0/g.bin" --norm 1e-5 --atol 1e-7 --quiet
for r in r2z0 r2z1 r2z2; do
    cmp "$dir/r1z0/losses" "$dir/$r/losses" || { echo "train_ddp: $r's losses differ from one rank's"; exit 1; }
done
echo "train_ddp: 2 ranks (ZeRO-0, -1 and -2) train as one rank on the whole batch"
