#!/bin/sh
# run_short.sh [-t SECONDS] [FUZZ_BINARY]
# A short libFuzzer run of the front end (default 30 s) from a copy of
# tests/fuzz/corpus with tests/fuzz/acdsl.dict. FUZZ_BINARY is a built
# fuzz_frontend (ctest passes the one of a -DACC_FUZZ=ON build); without it the
# script builds one with clang in $ACC_FUZZ_BUILD (default: build-fuzz in the
# repository root). If clang with libFuzzer is not available it says why and
# exits 77 (ctest's SKIP_RETURN_CODE). Exit status 1: the fuzzer found a crash,
# a leak or a timeout; the input that did it is kept and its path printed.
set -u
secs=30
if [ "${1:-}" = "-t" ]; then
    secs=$2
    shift 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fuzzer=${1:-}

if [ -z "$fuzzer" ]; then
    if ! command -v clang >/dev/null 2>&1; then
        echo "run_short.sh: SKIP: clang is not installed (libFuzzer needs clang)"
        exit 77
    fi
    probe=$(mktemp -d)
    printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
    if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >"$probe/log" 2>&1; then
        echo "run_short.sh: SKIP: clang cannot link with -fsanitize=fuzzer (no libFuzzer):"
        sed 's/^/  /' "$probe/log" | head -5
        rm -rf "$probe"
        exit 77
    fi
    rm -rf "$probe"
    build=${ACC_FUZZ_BUILD:-$root/build-fuzz}
    echo "run_short.sh: building fuzz_frontend in $build"
    mkdir -p "$build"
    log=$build/run_short_build.log
    if ! (CC=clang cmake -S "$root" -B "$build" -DACC_FUZZ=ON -DACC_CUDA=OFF >"$log" 2>&1 &&
          cmake --build "$build" --target fuzz_frontend >>"$log" 2>&1); then
        echo "run_short.sh: building fuzz_frontend failed; the end of $log:"
        tail -20 "$log"
        exit 1
    fi
    fuzzer=$build/fuzz_frontend
fi
if [ ! -x "$fuzzer" ]; then
    echo "run_short.sh: SKIP: no fuzz target at '$fuzzer'"
    exit 77
fi

work=$(mktemp -d)
mkdir "$work/corpus" "$work/artifacts"
cp "$here"/corpus/* "$work/corpus/"
echo "run_short.sh: $fuzzer for $secs s from $(ls "$work/corpus" | wc -l) seeds"
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -dict="$here/acdsl.dict" \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" >"$work/log" 2>&1
rc=$?
grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$work/log"
if [ $rc -ne 0 ] || [ -n "$(ls "$work/artifacts")" ]; then
    tail -40 "$work/log"
    echo "run_short.sh: FAILED (exit $rc); inputs that failed: $(ls -d "$work"/artifacts/* 2>/dev/null)"
    echo "run_short.sh: reproduce with: $fuzzer FILE"
    exit 1
fi
rm -rf "$work"
echo "run_short.sh: no crash"
