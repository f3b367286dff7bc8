#!/bin/sh
# exact_min.sh [--proven] ACC MIN MODEL [-D ...]: the planner reaches a minimum known
# from the exhaustive search (issue 18). MIN is the least arena over all
# plans, measured once by the branch and bound (ACC_EXHAUSTIVE_MAX=64, which
# takes minutes, too long for the suite): `acc compile --budget 1` must state
# it, and at --budget MIN the CPU target must plan and run with a measured
# peak equal to the planned one, within MIN.
# With --proven first, the statement must also say the minimum is proven
# (the branch and bound below it finished within its default node limit).
set -eu
proven=0
[ "$1" = --proven ] && { proven=1; shift; }
acc=$1 min=$2 model=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

"$acc" compile "$model" --target cpu "$@" --budget 1 -o "$dir/one" >/dev/null 2>"$dir/one.err" || true
m=$(sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p' "$dir/one.err")
if [ "$m" = "$min" ]; then
    echo "ok   --budget 1: states the minimum $m"
else
    cat "$dir/one.err"
    echo "FAIL: --budget 1 states ${m:-no minimum}, the exhaustive minimum is $min"
    fail=1
fi
if [ "$proven" = 1 ]; then
    if grep -q "is below the minimum of $min bytes .* for this model$" "$dir/one.err"; then
        echo "ok   --budget 1: the minimum $min is proven"
    else
        cat "$dir/one.err"
        echo "FAIL: --budget 1 does not state $min as a proven minimum"
        fail=1
    fi
fi

if "$acc" run "$model" "$@" --budget "$min" --steps 2 >"$dir/run.out" 2>"$dir/run.err"; then
    planned=$(sed -n 's/.*"peak_bytes_planned": \([0-9]*\).*/\1/p' "$dir/run.out")
    measured=$(sed -n 's/.*"peak_bytes_measured": \([0-9]*\).*/\1/p' "$dir/run.out")
    if [ -n "$planned" ] && [ "$planned" = "$measured" ] && [ "$planned" -le "$min" ]; then
        echo "ok   --budget $min: runs, planned peak $planned, measured $measured"
    else
        cat "$dir/run.out"
        echo "FAIL: --budget $min: planned ${planned:-?}, measured ${measured:-?}"
        fail=1
    fi
else
    cat "$dir/run.err"
    echo "FAIL: --budget $min refused or failed to run"
    fail=1
fi
exit $fail
