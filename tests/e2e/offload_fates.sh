#!/bin/sh
# offload_fates.sh ACC TARGET
# Offload and recompute chosen by the same integer programs (issue 15). In
# tests/e2e/offload_fates.acdsl two tensors of one size (so their copies
# cost the same) must both leave the device to meet the budget: a, cheaper
# to recompute than to copy, and c, dearer to recompute than to copy
# (tests/e2e/offload_pcie.hw). With --host-budget the plan of the integer
# programs (ACC_EXHAUSTIVE_MAX=0: not the enumeration of a small graph;
# ACC_OFFLOAD_SEARCH=0: without the local search over the three fates that
# follows them) recomputes a and offloads c, and so does the default
# planner; the programs' plan trains with losses and gradients
# byte-identical to save-all's, measured == planned for the arena and the
# host arena.
set -eu
acc=$1 target=$2
model=tests/e2e/offload_fates.acdsl
hw=tests/e2e/offload_pcie.hw
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
    echo "offload_fates ($target): $*"
    exit 1
}
# the least memory of recompute alone: both dropped
budget=$("$acc" explain $model --target "$target" --hw $hw --budget 1 2>&1 |
    sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p')
[ -n "$budget" ] || fail "no minimum for recompute alone"
field() { # PLAN TENSOR FIELD
    sed -n "s/.*\"name\": \"$2\", .*\"$3\": \"*\([^,\"]*\)\"*[,}].*/\1/p" "$1/plan.json"
}
compile() { # NAME ARGS...
    name=$1
    shift
    "$acc" compile $model --target "$target" --hw $hw --budget "$budget" "$@" -o "$dir/$name" >"$dir/$name.log" 2>&1 || {
        cat "$dir/$name.log"
        fail "acc compile $* failed"
    }
}
compile rec
[ "$(field "$dir/rec" a decision)" = recompute ] && [ "$(field "$dir/rec" c decision)" = recompute ] ||
    fail "recompute alone at its minimum $budget does not drop both a and c"
ACC_EXHAUSTIVE_MAX=0 ACC_OFFLOAD_SEARCH=0 compile ilp --host-budget 1M
compile default --host-budget 1M
for p in ilp default; do
    a=$(field "$dir/$p" a decision) c=$(field "$dir/$p" c decision)
    [ "$a" = recompute ] && [ "$c" = offload ] || {
        grep '"decision"' "$dir/$p/plan.json"
        fail "plan $p at $budget bytes: a $a, c $c (expected: a recompute, c offload)"
    }
done
# the premise: c's copies (all the plan's) cost less than its recomputation, a's (the same bytes) more than a's
copies=$(sed -n 's/.*"transfer_time_est": \([0-9.e+-]*\),.*/\1/p' "$dir/ilp/plan.json")
awk -v t="$copies" -v a="$(field "$dir/ilp" a recompute_time)" -v c="$(field "$dir/ilp" c recompute_time)" \
    'BEGIN { exit !(t != "" && a + 0 < t + 0 && t + 0 < c + 0) }' ||
    fail "not recompute(a) < copies(c) = copies(a) < recompute(c): copies $copies"
run() { # NAME ARGS...
    name=$1
    shift
    "$acc" run $model --target "$target" --hw $hw --steps 3 --dump-grads "$dir/$name.bin" "$@" >"$dir/$name.out" \
        2>"$dir/$name.err" || {
        cat "$dir/$name.err"
        fail "acc run $* failed"
    }
}
run all --policy none
ACC_EXHAUSTIVE_MAX=0 ACC_OFFLOAD_SEARCH=0 run ilp --budget "$budget" --host-budget 1M
cmp "$dir/all.bin" "$dir/ilp.bin" || fail "gradients differ from save-all's"
grep '"loss"' "$dir/all.out" >"$dir/all.loss"
grep '"loss"' "$dir/ilp.out" >"$dir/ilp.loss"
[ "$(wc -l <"$dir/all.loss")" -eq 3 ] && cmp "$dir/all.loss" "$dir/ilp.loss" || fail "losses differ from save-all's"
summary=$(tail -n 1 "$dir/ilp.out")
num() { echo "$summary" | sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p"; }
[ -n "$(num peak_bytes_planned)" ] && [ "$(num peak_bytes_planned)" = "$(num peak_bytes_measured)" ] &&
    [ "$(num host_bytes_planned)" -gt 0 ] && [ "$(num host_bytes_planned)" = "$(num host_bytes_measured)" ] ||
    fail "measured != planned: $summary"
echo "offload_fates ($target): at $budget bytes a recomputed, c offloaded (copies $copies s); gradients identical"
