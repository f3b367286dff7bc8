#!/bin/sh
# hostile.sh ACC FILE...: run every DSL file through acc check, explain
# (unbounded and with a tiny budget), compile for the CPU at three budgets
# (1 byte, 1 KiB, 64 MiB) and run for one step, each under a time bound.
# Whatever the input, acc must answer with a message and an exit status below
# 124: a signal (>= 128: abort, segfault), a timeout (124), "internal error"
# or a sanitizer report in the output is a failure (issue 12).
set -u
# an allocation larger than the machine is NULL (an error message), as without ASan
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}allocator_may_return_null=1"
acc=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0 n=0
try() { # try SECONDS ARGS...
    limit=$1
    shift
    n=$((n + 1))
    timeout -k 5 "$limit" "$acc" "$@" >"$dir/out" 2>&1 </dev/null
    rc=$?
    why=""
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        why="timed out after ${limit}s"
    elif [ $rc -ge 124 ]; then
        why="exit status $rc"
    elif grep -q -e 'internal error' -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' -e 'runtime error:' "$dir/out"; then
        why="internal error or sanitizer report"
    fi
    if [ -n "$why" ]; then
        echo "FAIL ($why): acc $*"
        tail -15 "$dir/out" | sed 's/^/    /'
        fail=$((fail + 1))
    fi
    rm -rf "$dir/lib"
}
for f in "$@"; do
    try 20 check "$f"
    try 30 explain "$f"
    try 30 explain "$f" --budget 1K
    for b in 1 1K 64M; do
        try 60 compile "$f" --target cpu --budget $b -o "$dir/lib"
    done
    try 60 run "$f" --steps 1
done
echo "hostile: $n runs of acc on $# files, $fail failed"
[ $fail -eq 0 ]
