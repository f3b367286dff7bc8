#!/bin/sh
# python_api.sh ACC MODE [ARGS...] - the acc Python package (python/acc) in
# the test suite. MODE:
#   cpu, cuda-emu  tests/e2e/python_api.py on that target (against acc run)
#   cuda           a --shared cuda library links and loads; without a GPU
#                  acc.load raises AccError naming the missing driver
#   train          examples/train.py trains a few steps (loss and eval loss
#                  fall, checkpoint saved and resumed)
#   pip            `pip install ./python` gives an importable package
# NumPy is required (./run.sh installs it): missing, the test fails, it
# does not skip. In a sanitizer build the generated libraries link the
# sanitizer runtimes, which must be loaded first: they are preloaded into
# Python (leak checking off: the interpreter's own allocations are not ours).
set -eu
acc=$1 mode=$2
shift 2
python3 -c 'import numpy' 2>/dev/null || {
    echo "python_api: NumPy is missing: install it with 'python3 -m pip install numpy' (./run.sh does)"
    exit 1
}
case "${ACC_GEN_FLAGS:-}" in
*sanitize*)
    LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)"
    ASAN_OPTIONS=detect_leaks=0
    export LD_PRELOAD ASAN_OPTIONS
    ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
case "$mode" in
cpu | cuda-emu)
    python3 tests/e2e/python_api.py "$acc" "$mode" "$dir"
    ;;
cuda)
    if ! "$acc" compile models/mlp.acdsl --target cuda --arch sm_80 -D B=4 -D D_in=6 -D hidden=5 -D classes=3 \
        --budget 256M --shared -o "$dir/m" 2>"$dir/err"; then
        if grep -q 'built without the CUDA Toolkit' "$dir/err"; then
            echo "python_api: acc has no NVRTC: the cuda library is not built here"
            exit 0
        fi
        cat "$dir/err"
        exit 1
    fi
    python3 - "$dir/m" <<'PY'
import subprocess, sys
import acc
try:
    m = acc.load(sys.argv[1])
except acc.AccError as e:
    print(f"python_api: cuda without a GPU: {e}")
    assert e.status == 10 and "libcuda" in str(e), e
    sys.exit(0)
# a GPU: parameters are DLPack tensors on device cuda:0
m.init_params(1)
t = m.parameter("fc1.w")
assert t.__dlpack_device__() == (2, 0), t
print(f"python_api: cuda: {t!r}")
try:
    import torch
except ImportError:
    torch = None
if torch is not None and torch.cuda.is_available():  # torch sees the same device memory
    x = torch.from_dlpack(t)
    want = m.read("fc1.w")
    assert x.is_cuda and tuple(x.shape) == want.shape, (x.device, x.shape)
    assert (x.cpu().numpy() == want).all(), "torch.from_dlpack reads other values"
    x.mul_(2.0)
    torch.cuda.synchronize()
    assert (m.read("fc1.w") == 2.0 * want).all(), "a write through torch is not the model's"
    g = torch.from_dlpack(m.grad("fc1.w"))
    assert g.is_cuda and g.data_ptr() != x.data_ptr()
    print("python_api: cuda: torch.from_dlpack sees and writes the parameter's device memory")
PY
    ;;
train)
    out=$(python3 examples/train.py --lib "$dir/tiny" --compile "$acc" --steps 40 --eval 10 --accum 2 --clip 1.0 \
        --save "$dir/ckpt.bin" --defines "-D V=256 -D L=2 -D C=64 -D H=4 -D T=32 -D B=4")
    echo "$out"
    echo "$out" | awk '/^train: loss/ { if (!($5 < 0.8 * $3)) { print "python_api: train.py loss did not fall"; exit 1 } ok = 1 }
        /eval loss/ { n++; if (n == 1) e1 = $5; el = $5 }
        END { if (!ok) { print "python_api: no summary line from train.py"; exit 1 }
              if (n < 3 || !(el < e1)) { print "python_api: train.py eval loss did not fall"; exit 1 } }'
    echo "$out" | grep -Eq 'peak memory ([0-9]+) bytes \(planned \1\)' ||
        { echo "python_api: train.py's measured peak differs from the planned one"; exit 1; }
    first=$(echo "$out" | awk '/^train: loss/ { print $3 }')
    # resume from the checkpoint: its first loss is near the last one above,
    # far below the first
    out=$(python3 examples/train.py --lib "$dir/tiny" --steps 2 --eval 0 --resume "$dir/ckpt.bin")
    echo "$out"
    echo "$out" | grep -q "resumed from $dir/ckpt.bin" || { echo "python_api: train.py did not resume"; exit 1; }
    echo "$out" | awk -v first="$first" '/^train: loss/ { if (!($3 < 0.8 * first)) { print "python_api: the resumed loss " $3 " is not below the first " first; exit 1 } ok = 1 }
        END { if (!ok) exit 1 }' 
    ;;
pip)
    unset LD_PRELOAD # nothing generated is loaded
    # a copy: pip builds in the source tree (build/, *.egg-info)
    cp -r python "$dir/src"
    isolation=--no-build-isolation # setuptools from this Python, no download
    python3 -c 'import setuptools' 2>/dev/null || isolation=
    python3 -m pip install -q --no-deps $isolation --target "$dir/site" "$dir/src" >"$dir/pip.log" 2>&1 ||
        { cat "$dir/pip.log"; echo "python_api: pip install ./python failed"; exit 1; }
    PYTHONPATH="$dir/site" python3 -c "import acc, sys; f = acc.__file__; assert f.startswith(sys.argv[1]), f; print('python_api: pip installed', f, acc.__version__)" "$dir/site"
    ;;
*)
    echo "python_api: unknown mode $mode"
    exit 2
    ;;
esac
