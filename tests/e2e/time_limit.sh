#!/bin/sh
# time_limit.sh ACC [N] [T] - the optimal planner honours --time-limit on a
# large model. The model is bench/scale.sh's (repeat N of matmul, layernorm,
# softmax, gelu, matmul, add; N = 1000: 9,002 nodes) at a budget just above
# its parameters, gradients and AdamW moments, where the search without a
# limit runs for seconds to tens of seconds (the cut finds nothing at the
# peak; the exchange step prices thousands of moves on an 18,000-step
# schedule).
#
#   acc compile -v --time-limit T: the plan phase (what -v prints for it,
#     which covers the planner, the final plan's schedule, allocation and
#     plan check) takes at most 1.1 T + 0.2 s. The output directory is under
#     a regular file, so the command stops after the plan phase with an
#     error instead of running cc for seconds.
#   acc explain --time-limit T: the whole command within 1.1 T + 0.5 s (the
#     policy rows it has no time for are not scored), the plan fits and its
#     solver line says that the limit ended the search (time_limit, the gap).
#
# ACC_TIMING=0 (the sanitizer build, where an allocation is ten times slower
# and the first plan alone takes longer than T) runs the same commands and
# checks everything but the times.
set -eu
acc=$1 n=${2:-1000} t=${3:-2}
model=$(dirname "$0")/repeat_mat.acdsl
within() { # within SECONDS LIMIT: true when SECONDS <= LIMIT, or times are not checked
    [ "${ACC_TIMING:-1}" = 0 ] || awk -v s="$1" -v l="$2" 'BEGIN { exit !(s <= l) }'
}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
budget=$((n * 4718592 / 1000)) # 4.5M at N = 1000, 9M at N = 2000
: >"$dir/file"
"$acc" compile "$model" -D N="$n" --budget "$budget" --target cpu --time-limit "$t" -v \
    -o "$dir/file/out" 2>"$dir/compile.err" && { cat "$dir/compile.err"; echo "FAIL: compiled into a file"; exit 1; }
plan=$(sed -n 's/^acc: plan: \([0-9.]*\) s$/\1/p' "$dir/compile.err")
[ -n "$plan" ] || { cat "$dir/compile.err"; echo "FAIL: no plan phase time"; exit 1; }
within "$plan" "$(awk -v t="$t" 'BEGIN { print 1.1 * t + 0.2 }')" ||
    { cat "$dir/compile.err"; echo "FAIL: N=$n --time-limit $t: the plan phase took $plan s (over 1.1 T + 0.2 s)"; exit 1; }
echo "ok   N=$n --budget $budget --time-limit $t: plan phase $plan s"

t0=$(date +%s.%N)
"$acc" explain "$model" -D N="$n" --budget "$budget" --target cpu --time-limit "$t" >"$dir/explain.txt" \
    2>"$dir/explain.err" || { cat "$dir/explain.err"; echo "FAIL: acc explain"; exit 1; }
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
within "$wall" "$(awk -v t="$t" 'BEGIN { print 1.1 * t + 0.5 }')" ||
    { cat "$dir/explain.err"; echo "FAIL: acc explain --time-limit $t took $wall s (over 1.1 T + 0.5 s)"; exit 1; }
grep -q "solver time_limit (--time-limit ended the search; gap [0-9.]*%)" "$dir/explain.txt" ||
    { head -5 "$dir/explain.txt"; echo "FAIL: the solver line does not say that the limit ended the search"; exit 1; }
grep -q "DOES NOT FIT" "$dir/explain.txt" && { head -5 "$dir/explain.txt"; echo "FAIL: the plan does not fit"; exit 1; }
echo "ok   acc explain in $wall s: $(grep -o 'solver time_limit.*' "$dir/explain.txt")"
