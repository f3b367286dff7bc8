#!/bin/sh
# plan_graph_limits.sh ACC - what `acc plan --graph` says when no plan fits,
# and how it uses --time-limit.
#
#   s -> a, s -> b, c reads a and b (sizes 10, 10, 10, 1). Every node with
#   its inputs needs at most 21, but a and b are never together without s
#   (each needs it), so no schedule runs in less than 30. At 25 the plan is
#   "infeasible" with the proof's scope "all schedules" and a note; at 30 it
#   fits and is proven optimal over every schedule.
#   A random layered graph of 250 nodes (bench/planner/random_layered.py) at
#   0.85 of its peak: the command ends within 1.1 x --time-limit + 0.3 s, and
#   while the gap is open it ran for at least 0.9 x the limit (not half of it);
#   its status is never "infeasible". ACC_TIMING=0 (the sanitizer build)
#   checks everything but the times.
set -eu
acc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
field() { # field NAME JSON: the value of a top-level number or string field
    printf '%s\n' "$2" | sed -n "s/.*\"$1\": \"\{0,1\}\([^,\"]*\)\"\{0,1\}[,}].*/\1/p"
}
cat >"$dir/s.json" <<'JSON'
{"directed": true, "graph": {"name": "fork"}, "nodes": [
 {"id": 0, "cost_cpu": 1, "cost_ram": 10}, {"id": 1, "cost_cpu": 1, "cost_ram": 10},
 {"id": 2, "cost_cpu": 1, "cost_ram": 10}, {"id": 3, "cost_cpu": 1, "cost_ram": 1}],
 "links": [{"source": 0, "target": 1}, {"source": 0, "target": 2}, {"source": 1, "target": 3},
 {"source": 2, "target": 3}]}
JSON
out=$("$acc" plan --graph "$dir/s.json" --budget 25) && fail "fits at 25: $out"
[ "$(field min_peak "$out")" = 21 ] || fail "min_peak: $out"
[ "$(field status "$out")" = infeasible ] || fail "status at 25: $out"
[ "$(field bound_scope "$out")" = "all schedules" ] || fail "scope at 25: $out"
printf '%s' "$out" | grep -q '"note": "no schedule fits' || fail "no note at 25: $out"
out=$("$acc" plan --graph "$dir/s.json" --budget 30) || fail "no plan at 30: $out"
[ "$(field status "$out")" = optimal ] || fail "status at 30: $out"
[ "$(field bound_scope "$out")" = "all schedules" ] || fail "scope at 30: $out"
echo "ok   fork: infeasible at 25 (proof over every schedule), optimal at 30"

python3 "$(dirname "$0")/../../bench/planner/random_layered.py" 250 3 >"$dir/l.json"
t=3
t0=$(date +%s.%N)
out=$("$acc" plan --graph "$dir/l.json" --budget-frac 0.85 --time-limit $t) || true
t1=$(date +%s.%N)
status=$(field status "$out") gap=$(field gap "$out")
[ "$status" != infeasible ] || fail "layered: infeasible without a proof: $out"
[ -n "$status" ] || fail "layered: no JSON: $out"
if [ "${ACC_TIMING:-1}" != 0 ]; then
    awk -v a="$t0" -v b="$t1" -v t=$t 'BEGIN { exit !(b - a <= 1.1 * t + 0.3) }' ||
        fail "layered: --time-limit $t took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s: $out"
    if [ "$status" != optimal ]; then
        awk -v a="$t0" -v b="$t1" -v t=$t 'BEGIN { exit !(b - a >= 0.9 * t) }' ||
            fail "layered: stopped early with the gap open ($status): $out"
    fi
fi
echo "ok   layered n=250 at 0.85: $status, gap $gap, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s of $t"
