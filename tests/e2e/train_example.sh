#!/bin/sh
# train_example.sh ACC RUNTIME_INCLUDE BLAS_DIR
# Compiles a tiny byte-level GPT with acc, builds examples/train.c against the
# generated library exactly as the README shows, trains a few steps and checks
# that the loss fell and the trainer reports peak memory; again with gradient
# accumulation, clipping and evaluation (--accum 2 --clip 1 --eval 10): the
# loss and the held-out loss must fall, the measured peak must equal the
# planned one, and the gradient norm is printed. Then the same
# trainer source against the emulated cuda target's library (the loss must
# fall there too) and, where acc has NVRTC, against the cuda library: on a
# machine without a GPU it must stop with a clear message and status 1.
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

# the trainer's calls: accumulation over 2 micro-batches, clipping, evaluation
out=$("$dir/train" 40 0.003 --accum 2 --clip 1.0 --eval 10)
echo "$out"
echo "$out" | awk '/^train: loss/ { split($0, w, " "); if (!(w[5] < 0.8 * w[3])) { print "train_example: loss did not fall (--accum 2)"; exit 1 } ok = 1 }
    /micro-batches per update/ { acc = 1 } / grad norm [0-9.]+ / { norm = 1 }
    /eval loss/ { n++; if (n == 1) e1 = $5; el = $5 }
    END { if (!ok || !acc || !norm) { print "train_example: --accum/--clip output missing"; exit 1 }
          if (n < 4 || !(el < e1)) { print "train_example: the eval loss did not fall (" n " evaluations)"; exit 1 } }'
echo "$out" | grep -Eq 'peak memory ([0-9]+) bytes \(planned \1\)' ||
    { echo "train_example: measured peak differs from the planned one"; exit 1; }

# the same trainer on the emulated cuda target
"$acc" compile models/gpt2.acdsl --target cuda-emu -D V=256 -D L=2 -D C=64 -D H=4 -D T=32 -D B=4 --budget 256M \
    -o "$dir/emu" 2>/dev/null
${CC:-cc} ${ACC_GEN_FLAGS:-} -std=c11 -O2 -fopenmp -Wall -Wextra -Werror examples/train.c -I"$dir/emu" "$dir/emu/libgpt2.a" \
    "$dir/emu/libaccrt_emu.a" "$dir/emu/libaccrt.a" -L"$blas" -Wl,-rpath,"$blas" -lopenblas -lm -o "$dir/train_emu"
out=$("$dir/train_emu" 15 0.003 --accum 2 --clip 1.0 --eval 5)
echo "$out" | tail -n 3
echo "$out" | grep -q 'eval loss' || { echo "train_example: no eval loss on cuda-emu"; exit 1; }
echo "$out" | grep -q 'grad norm' || { echo "train_example: no gradient norm on cuda-emu"; exit 1; }
echo "$out" | awk '/^train: loss/ { split($0, w, " "); if (!(w[5] < 0.9 * w[3])) { print "train_example: loss did not fall on cuda-emu"; exit 1 } ok = 1 }
    END { if (!ok) { print "train_example: no summary line from cuda-emu"; exit 1 } }'

# and on the cuda target (where acc has NVRTC); without a GPU: a clear message
if "$acc" compile models/gpt2.acdsl --target cuda -D V=256 -D L=2 -D C=64 -D H=4 -D T=32 -D B=4 --budget 256M \
    -o "$dir/cuda" 2>"$dir/cuda.err"; then
    ${CC:-cc} ${ACC_GEN_FLAGS:-} -std=c11 -O2 -fopenmp -Wall -Wextra -Werror examples/train.c -I"$dir/cuda" \
        "$dir/cuda/libgpt2.a" "$dir/cuda/libaccrt_cuda.a" "$dir/cuda/libaccrt.a" -L"$blas" -Wl,-rpath,"$blas" \
        -lopenblas -ldl -lm -o "$dir/train_cuda"
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
        set +e
        "$dir/train_cuda" 5 >"$dir/cuda.out" 2>"$dir/cuda.run.err"
        rc=$?
        set -e
        cat "$dir/cuda.run.err"
        [ "$rc" = 1 ] && grep -q 'train: create: no usable device: .*libcuda' "$dir/cuda.run.err" ||
            { echo "train_example: the cuda build did not fail cleanly without a GPU (exit $rc)"; exit 1; }
    fi
elif grep -q 'built without the CUDA Toolkit' "$dir/cuda.err"; then
    echo "train_example: acc has no NVRTC: cuda build skipped"
else
    cat "$dir/cuda.err"
    exit 1
fi
