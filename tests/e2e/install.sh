#!/bin/sh
# install.sh BUILD_DIR - cmake --install into a temporary prefix, move the
# prefix (an installed acc finds its runtime, profiles and models relative to
# itself), compile a model with the installed acc for the CPU target, and
# build against the installed runtime: a C++ trainer through
# find_package(acc) (the README's CMake snippet), a C one through the same
# snippet, and a C one through pkg-config. Each trains a few steps.
set -eu
build=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cmake --install "$build" --prefix "$dir/first" >"$dir/install.log"
mv "$dir/first" "$dir/prefix"
p=$dir/prefix
"$p/bin/acc" --version >"$dir/version"
grep -q "^runtime: $p/bin/" "$dir/version" || { cat "$dir/version"; echo "FAIL: the installed acc does not use its own runtime"; exit 1; }
grep -q "^hardware profiles: $p/bin/" "$dir/version" || { cat "$dir/version"; echo "FAIL: the installed acc does not use its own profiles"; exit 1; }
for f in include/accrt.h share/acc/hw/cpu.hw share/acc/models/gpt2.acdsl share/acc/runtime/cpu_kernels.h \
         share/acc/run_main.c lib/cmake/acc/accConfig.cmake; do
    [ -f "$p/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
ls "$p"/lib*/libaccrt.a "$p"/lib*/libaccrt_emu.a >/dev/null
# no hardware profile or runtime from the source tree
env -u ACC_HW_DIR "$p/bin/acc" compile "$p/share/acc/models/mlp.acdsl" -D B=8 -D D_in=32 -D hidden=16 -D classes=4 \
    --budget 64M --target cpu -o "$dir/out" 2>"$dir/compile.log" || { cat "$dir/compile.log"; exit 1; }
echo "ok   installed acc compiled models/mlp.acdsl"

mkdir -p "$dir/cxx" "$dir/c"
cat >"$dir/cxx/train.cpp" <<'SRC'
// A C++ trainer: the generated header and accrt.h are C, usable from C++.
#include <cstdio>
#include <vector>

#include "mlp.h"

int main() {
    acc_options opt = {sizeof opt, ACC_API_VERSION, 0, 1};
    mlp_model *m = nullptr;
    int rc = mlp_create(&opt, &m);
    if (!rc) rc = mlp_init_params(m, 7);
    std::vector<float> x(8 * 32);
    std::vector<int32_t> labels(8);
    for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>((i * 37) % 11) / 11.0f - 0.5f;
    for (size_t i = 0; i < labels.size(); i++) labels[i] = static_cast<int32_t>(i % 4);
    float first = 0, loss = 0;
    for (int s = 0; !rc && s < 20; s++) {
        rc = mlp_set_x(m, x.data());
        if (!rc) rc = mlp_set_labels(m, labels.data());
        if (!rc) rc = mlp_step(m, &loss);
        if (!rc) rc = mlp_adamw(m, 0.01f, 0.9f, 0.999f, 1e-8f, 0.0f);
        if (s == 0) first = loss;
    }
    if (rc) {
        std::fprintf(stderr, "train: %s: %s\n", mlp_status_string(rc), m ? mlp_last_error(m) : "");
        mlp_destroy(m);
        return 1;
    }
    std::printf("loss %.4f -> %.4f\n", static_cast<double>(first), static_cast<double>(loss));
    mlp_destroy(m);
    return loss < first ? 0 : 1;
}
SRC
sed -e 's/std::vector<float> x(8 \* 32);/float x[8 * 32];/' -e 's/std::vector<int32_t> labels(8);/int32_t labels[8];/' \
    -e 's/x.size()/(sizeof x \/ sizeof *x)/' -e 's/labels.size()/(sizeof labels \/ sizeof *labels)/' \
    -e 's/x.data()/x/' -e 's/labels.data()/labels/' -e 's/nullptr/NULL/' -e 's/static_cast<\([a-z0-9_]*\)>/(\1)/g' \
    -e 's/std:://g' -e 's/#include <cstdio>/#include <stdio.h>/' -e '/#include <vector>/d' -e 's|^//|/*|' \
    -e 's|C++\.$|C++. */|' "$dir/cxx/train.cpp" >"$dir/c/train.c"
# the README's snippet (CMake), for C++ and for C
for lang in cxx c; do
    src=train.cpp
    [ $lang = c ] && src=train.c
    cat >"$dir/$lang/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.20)
project(trainer LANGUAGES $( [ $lang = c ] && echo C || echo CXX ))
find_package(acc REQUIRED)
add_library(mlp STATIC IMPORTED)
set_target_properties(mlp PROPERTIES IMPORTED_LOCATION \${ACC_OUT}/libmlp.a
                      INTERFACE_INCLUDE_DIRECTORIES \${ACC_OUT} INTERFACE_LINK_LIBRARIES acc::runtime)
add_executable(train $src)
target_link_libraries(train PRIVATE mlp)
CMK
    cmake -S "$dir/$lang" -B "$dir/$lang/build" -DCMAKE_PREFIX_PATH="$p" -DACC_OUT="$dir/out" \
        -DCMAKE_C_FLAGS="${ACC_GEN_FLAGS:-}" -DCMAKE_CXX_FLAGS="${ACC_GEN_FLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${ACC_GEN_FLAGS:-}" >"$dir/$lang.log" 2>&1 &&
        cmake --build "$dir/$lang/build" >>"$dir/$lang.log" 2>&1 || { cat "$dir/$lang.log"; echo "FAIL: $lang trainer did not build"; exit 1; }
    "$dir/$lang/build/train" || { echo "FAIL: the $lang trainer"; exit 1; }
    echo "ok   $lang trainer through find_package(acc)"
done
# pkg-config
if command -v pkg-config >/dev/null; then
    flags=$(PKG_CONFIG_PATH=$(dirname "$(ls "$p"/lib*/pkgconfig/accrt.pc)") pkg-config --cflags --libs accrt)
    # shellcheck disable=SC2086
    ${CC:-cc} ${ACC_GEN_FLAGS:-} -std=c11 -O2 "$dir/c/train.c" -I"$dir/out" "$dir/out/libmlp.a" $flags -o "$dir/train_pc"
    "$dir/train_pc" || { echo "FAIL: the pkg-config trainer"; exit 1; }
    echo "ok   C trainer through pkg-config accrt"
fi
# Python: the installed train.py and package (share/acc) compile the model
# with the installed acc (--shared) and train two steps; NumPy is required
case "${ACC_GEN_FLAGS:-}" in
*sanitize*) # the sanitizer runtimes the generated library links, loaded first
    LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)" \
        ASAN_OPTIONS=detect_leaks=0 python3 -B "$p/share/acc/train.py" --lib "$dir/py" --compile "$p/bin/acc" \
        --steps 2 --eval 0 --defines "-D V=256 -D L=1 -D C=32 -D H=2 -D T=16 -D B=2" >"$dir/py.log" 2>&1 ;;
*) python3 -B "$p/share/acc/train.py" --lib "$dir/py" --compile "$p/bin/acc" --steps 2 --eval 0 \
    --defines "-D V=256 -D L=1 -D C=32 -D H=2 -D T=16 -D B=2" >"$dir/py.log" 2>&1 ;;
esac || { cat "$dir/py.log"; echo "FAIL: the installed train.py"; exit 1; }
grep -q '^train: loss' "$dir/py.log" || { cat "$dir/py.log"; echo "FAIL: the installed train.py did not train"; exit 1; }
echo "ok   installed train.py over a --shared library (share/acc/python)"
