#!/usr/bin/env bash
# run.sh - the two fresh-machine commands.
#
#   ./run.sh          install what is missing, build, run the main job
#   ./run.sh test     install what is missing, build, run the whole test suite
#
# Missing Debian packages are installed with apt-get (as root, or through sudo),
# missing Python packages (NumPy, PyTorch CPU) with pip (install_python).
# Build directories: build/ (the normal build), build-asan/ (AddressSanitizer
# + UndefinedBehaviorSanitizer) and build-fuzz/ (libFuzzer), the last two used
# by the test command.
set -euo pipefail
cd "$(dirname "$0")"

mode=${1:-main}
jobs=$(nproc 2>/dev/null || echo 2)
packages=(build-essential cmake flex bison libglpk-dev libopenblas-openmp-dev pkg-config clang clang-format libclang-rt-dev libomp-dev openmpi-bin libopenmpi-dev)

install_missing() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "run.sh: installing missing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Python packages: NumPy (the acc package, examples/train.py and their tests)
# with pip when `import numpy` fails (PEP 668 systems: --break-system-packages,
# else the Debian package python3-numpy); PyTorch CPU (acc import and its
# tests), from the CPU wheel index, else PyPI.
python_packages=(numpy)

install_python() {
    local p sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    for p in "${python_packages[@]}"; do
        python3 -c "import $p" 2>/dev/null && continue
        echo "run.sh: installing missing Python package: $p"
        python3 -m pip install -q "$p" ||
            python3 -m pip install -q --break-system-packages "$p" ||
            { $sudo apt-get update -qq &&
                DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "python3-$p"; }
        python3 -c "import $p" || { echo "run.sh: cannot install the Python package $p" >&2; exit 1; }
    done
    python3 -c 'import torch' 2>/dev/null && return 0
    echo "run.sh: installing PyTorch (CPU) for acc import"
    local pip=(python3 -m pip install -q torch)
    "${pip[@]}" --index-url https://download.pytorch.org/whl/cpu || "${pip[@]}" ||
        "${pip[@]}" --break-system-packages --index-url https://download.pytorch.org/whl/cpu ||
        "${pip[@]}" --break-system-packages
    python3 -c 'import torch' || { echo "run.sh: cannot install PyTorch (acc import and its tests need it)" >&2; exit 1; }
}

build() { # build DIR [cmake args...] [--target T]
    local dir=$1 target=()
    shift
    local args=()
    while [ $# -gt 0 ]; do
        if [ "$1" = --target ]; then target=(--target "$2"); shift 2; else args+=("$1"); shift; fi
    done
    cmake -S . -B "$dir" "${args[@]}" >/dev/null
    cmake --build "$dir" -j "$jobs" "${target[@]}"
}

install_missing
install_python
case "$mode" in
main)
    build build
    blas=$(sed -n 's/^ACC_OPENBLAS_LIBRARY:FILEPATH=//p' build/CMakeCache.txt | xargs dirname)
    echo "== acc --version"
    ./build/acc --version
    for m in models/*.acdsl; do
        echo "== acc check $m"
        ./build/acc check "$m"
    done
    echo "== acc compile models/gpt2.acdsl --budget 8G -o out/gpt2   (GPT-2 small, 124M parameters)"
    ./build/acc compile models/gpt2.acdsl --budget 8G -o out/gpt2
    echo "== train a small byte-level GPT on the CPU target (examples/train.c)"
    ./build/acc compile models/gpt2.acdsl --target cpu -D V=256 -D L=4 -D C=128 -D H=4 -D T=64 -D B=8 --budget 1G -o out/tiny
    cc -std=c11 -O2 -fopenmp examples/train.c -Iout/tiny out/tiny/libgpt2.a out/tiny/libaccrt.a \
        -L"$blas" -Wl,-rpath,"$blas" -lopenblas -lm -o out/train
    OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} ./out/train "${STEPS:-300}"
    echo "== the same from Python (examples/train.py over acc compile --shared, through python/acc)"
    OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} python3 examples/train.py --lib out/tiny-py --steps "${STEPS:-300}"
    ;;
test)
    build build
    (cd build && OMP_WAIT_POLICY=PASSIVE ctest --output-on-failure -j "$jobs")
    # the same tests under AddressSanitizer and UndefinedBehaviorSanitizer
    build build-asan -DACC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    (cd build-asan && OMP_WAIT_POLICY=PASSIVE ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs" -LE slow)
    # a short coverage-guided fuzzing run of the front end (libFuzzer, clang)
    CC=clang build build-fuzz -DACC_FUZZ=ON -DACC_CUDA=OFF --target fuzz_frontend
    (cd build-fuzz && ctest --output-on-failure -L fuzz)
    ;;
*)
    echo "usage: ./run.sh [test]" >&2
    exit 2
    ;;
esac
