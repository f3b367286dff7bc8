#!/bin/sh
# offload.sh ACC TARGET MODEL [-D k=v ...]
# Offload as the planner's third decision (--host-budget), on TARGET with the
# cost model of tests/e2e/offload.hw (copies worth making). The least memory
# with a host budget is below the least with recompute alone; at a budget
# between the two, recompute alone has no plan and the plan with offload
# exists, offloads tensors, and trains four steps whose losses (and first
# gradients) are byte-identical to save-all's, with measured == planned for
# the arena and for the host arena: on cuda-emu the copies run on the
# emulated copy stream, each as late (out) or early (back) as its waits
# allow, and from the third step replayed from the recording, so a missing
# wait or an early copy changes the numbers. acc diff names the decisions
# that became offloads. Then, with tests/e2e/offload_pcie.hw (copies slower
# than memory, hidden only behind compute), the plan mixes offload and
# recompute, its estimated step time is below the fixed offload set's
# (ACC_OFFLOAD_FIXED=1), and it trains like save-all, measured == planned.
set -eu
acc=$1 target=$2
shift 2
hw=tests/e2e/offload.hw
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
minimum() {
    "$acc" explain "$@" --target "$target" --hw "$hw" --budget 1 2>&1 |
        sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p'
}
m_rec=$(minimum "$@")
m_off=$(minimum "$@" --host-budget 1G)
[ -n "$m_rec" ] && [ -n "$m_off" ] && [ "$m_off" -lt "$m_rec" ] || {
    echo "offload: the least memory with offload ($m_off) is not below recompute alone's ($m_rec)"
    exit 1
}
budget=$(((m_rec + m_off) / 2))
if "$acc" explain "$@" --target "$target" --hw "$hw" --budget "$budget" >/dev/null 2>&1; then
    echo "offload: recompute alone fits $budget bytes, below its minimum $m_rec"
    exit 1
fi
"$acc" explain "$@" --target "$target" --hw "$hw" --budget "$budget" --host-budget 1G >"$dir/explain.txt" || {
    echo "offload: no plan at $budget bytes with offload (its minimum is $m_off)"
    exit 1
}
n=$(sed -n 's/^offload: \([0-9]*\) tensors.*/\1/p' "$dir/explain.txt")
[ -n "$n" ] && [ "$n" -gt 0 ] || {
    cat "$dir/explain.txt"
    echo "offload: the plan at $budget bytes offloads nothing"
    exit 1
}
run() { # NAME ARGS...
    name=$1
    shift
    "$acc" run "$@" --target "$target" --hw "$hw" --steps 4 --dump-grads "$dir/$name.bin" >"$dir/$name.out" \
        2>"$dir/$name.err" || {
        cat "$dir/$name.err"
        echo "offload: acc run $* failed"
        exit 1
    }
}
run all "$@" --policy none
run off "$@" --budget "$budget" --host-budget 1G
cmp "$dir/all.bin" "$dir/off.bin" || {
    echo "offload: gradients of the offloading plan differ from save-all's"
    exit 1
}
grep '"loss"' "$dir/all.out" >"$dir/all.loss"
grep '"loss"' "$dir/off.out" >"$dir/off.loss"
[ "$(wc -l <"$dir/all.loss")" -eq 4 ] && cmp "$dir/all.loss" "$dir/off.loss" || {
    paste "$dir/all.loss" "$dir/off.loss"
    echo "offload: the losses of four steps differ from save-all's"
    exit 1
}
summary=$(tail -n 1 "$dir/off.out")
field() { echo "$summary" | sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p"; }
[ -n "$(field peak_bytes_planned)" ] && [ "$(field peak_bytes_planned)" = "$(field peak_bytes_measured)" ] &&
    [ -n "$(field host_bytes_planned)" ] && [ "$(field host_bytes_planned)" -gt 0 ] &&
    [ "$(field host_bytes_planned)" = "$(field host_bytes_measured)" ] || {
    echo "offload: measured != planned: $summary"
    exit 1
}
# what changed against the recompute-only plan at a budget both meet
"$acc" compile "$@" --target "$target" --hw "$hw" --budget "$m_rec" -o "$dir/rec" >/dev/null 2>&1
"$acc" compile "$@" --target "$target" --hw "$hw" --budget "$m_rec" --host-budget 1G -o "$dir/off" >/dev/null 2>&1
"$acc" diff "$dir/rec/plan.json" "$dir/off/plan.json" >"$dir/diff.txt" || true
grep -q -- "-> offload" "$dir/diff.txt" || {
    cat "$dir/diff.txt"
    echo "offload: acc diff shows no decision that became an offload"
    exit 1
}
# Offload a free decision, costed by its exposed time: with copies slower than
# memory (tests/e2e/offload_pcie.hw), no tensor's two copies take less time
# than its recomputation, so the fixed-set planner (ACC_OFFLOAD_FIXED=1: the
# set chosen before the search by full transfer time) offloads nothing; the
# planner, which scores the copies that compute hides as free, offloads some
# tensors and recomputes others at recompute alone's minimum (with half the
# host memory it would offload to without a limit), and its step
# time estimate (its own model) is below the fixed set's. That plan trains
# with gradients byte-identical to save-all's, measured == planned.
hw=tests/e2e/offload_pcie.hw
m_pcie=$(minimum "$@")
[ -n "$m_pcie" ] || {
    echo "offload: no minimum with $hw"
    exit 1
}
# half the host memory the plan offloads to with 1G: not everything dropped fits there
"$acc" compile "$@" --target "$target" --hw "$hw" --budget "$m_pcie" --host-budget 1G -o "$dir/all_host" >/dev/null
host=$(sed -n 's/.*"offload": {"host_budget_bytes": [0-9]*, "host_bytes": \([0-9]*\),.*/\1/p' "$dir/all_host/plan.json")
[ -n "$host" ] && [ "$host" -gt 0 ] || {
    echo "offload: the plan at $m_pcie bytes with $hw offloads nothing"
    exit 1
}
host=$((host / 2))
"$acc" compile "$@" --target "$target" --hw "$hw" --budget "$m_pcie" --host-budget "$host" -o "$dir/mix" >/dev/null
ACC_OFFLOAD_FIXED=1 "$acc" compile "$@" --target "$target" --hw "$hw" --budget "$m_pcie" --host-budget "$host" \
    -o "$dir/fixed" >/dev/null
decisions() { grep -c "\"decision\": \"$2\"" "$1/plan.json" || true; }
step_time() { sed -n 's/^  "step_time_est": \([0-9.e+-]*\),$/\1/p' "$1/plan.json"; }
n_off=$(decisions "$dir/mix" offload) n_rec=$(decisions "$dir/mix" recompute)
[ "$n_off" -gt 0 ] && [ "$n_rec" -gt 0 ] || {
    echo "offload: the plan at $m_pcie bytes with $hw does not mix offload ($n_off) and recompute ($n_rec)"
    exit 1
}
# plan.json's copies: all of their time and the part the step waits for (at most all of it)
copies=$(sed -n 's/.*"transfer_time_est": \([0-9.e+-]*\), "exposed_time_est": \([0-9.e+-]*\)}.*/\1 \2/p' \
    "$dir/mix/plan.json")
echo "$copies" | awk '{ exit !(NF == 2 && $1 > 0 && $2 >= 0 && $2 <= $1) }' || {
    echo "offload: plan.json's copy times (all, exposed) are not 0 <= exposed <= all: '$copies'"
    exit 1
}
t_mix=$(step_time "$dir/mix") t_fixed=$(step_time "$dir/fixed")
awk -v a="$t_mix" -v b="$t_fixed" 'BEGIN { exit !(a != "" && b != "" && a + 0 < b + 0) }' || {
    echo "offload: step time estimate $t_mix is not below the fixed offload set's $t_fixed"
    exit 1
}
run mix "$@" --budget "$m_pcie" --host-budget "$host"
cmp "$dir/all.bin" "$dir/mix.bin" || {
    echo "offload: gradients of the plan mixing offload and recompute differ from save-all's"
    exit 1
}
summary=$(tail -n 1 "$dir/mix.out")
[ "$(field peak_bytes_planned)" = "$(field peak_bytes_measured)" ] && [ "$(field host_bytes_planned)" -gt 0 ] &&
    [ "$(field host_bytes_planned)" = "$(field host_bytes_measured)" ] || {
    echo "offload: measured != planned for the mixed plan: $summary"
    exit 1
}
echo "offload ($target): minimum $m_rec -> $m_off bytes; $n tensors offloaded at $budget bytes, gradients identical;" \
    "with $hw at $m_pcie bytes and $host host bytes $n_off offloaded and $n_rec recomputed, step $t_mix s" \
    "(fixed set: $t_fixed s)"
