#!/bin/sh
# plan_golden.sh ACC EXPECTED.json MODEL BUDGET [acc compile args...]
# Compiles MODEL for BUDGET twice: the two plan.json files must be
# byte-identical (plans are deterministic), and `acc diff` against EXPECTED
# must find no difference - the regression test that catches a plan changing
# silently. ACC_UPDATE_GOLDEN=1 rewrites EXPECTED; review the diff.
set -eu
acc=$1 expected=$2 model=$3 budget=$4
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" compile "$model" --target cpu --budget "$budget" -o "$dir/a" "$@" 2>"$dir/a.err" || { cat "$dir/a.err"; exit 1; }
"$acc" compile "$model" --target cpu --budget "$budget" -o "$dir/b" "$@" 2>"$dir/b.err" || { cat "$dir/b.err"; exit 1; }
cmp "$dir/a/plan.json" "$dir/b/plan.json" || { echo "plan_golden: two compiles gave different plans"; exit 1; }
cmp "$dir/a/report.txt" "$dir/b/report.txt" || { echo "plan_golden: two compiles gave different reports"; exit 1; }
if [ "${ACC_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$dir/a/plan.json" "$expected"
    echo "updated $expected"
    exit 0
fi
"$acc" diff "$expected" "$dir/a/plan.json"
