#!/bin/sh
# plan_large.sh ACC - acc plan --graph on a graph past the search's size limit
# (32768 nodes) that does not fit: status too_large, the topological order,
# a message naming the limit, exit 1; the same graph at a budget it fits in
# as it is: status optimal, exit 0.
set -eu
acc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk -v n=40000 'BEGIN { srand(3); printf "{\"directed\": true, \"graph\": {\"name\": \"chain\"}, \"nodes\": ["
    for (i = 0; i < n; i++) printf "%s{\"id\": %d, \"cost_cpu\": %d, \"cost_ram\": %d}", i ? "," : "", i, 1 + int(9 * rand()), 1 + int(9 * rand())
    printf "], \"links\": ["
    for (i = 0; i < n - 1; i++) printf "%s{\"source\": %d, \"target\": %d}", i ? "," : "", i, i + 1
    for (i = 0; i < n - 2; i += 3) { t = i + 2 + int(39 * rand()); if (t > n - 1) t = n - 1; printf ",{\"source\": %d, \"target\": %d}", i, t }
    print "]}" }' >"$dir/g.json"
rc=0
"$acc" plan --graph "$dir/g.json" --budget-frac 0.7 --time-limit 5 >"$dir/out" 2>"$dir/err" || rc=$?
[ "$rc" = 1 ] && grep -q '"status": "too_large"' "$dir/out" && grep -q "up to 32768 nodes" "$dir/err" ||
    { cat "$dir/err"; cut -c1-300 "$dir/out"; echo "FAIL: 40000 nodes over the budget (exit $rc)"; exit 1; }
echo "ok   40000 nodes over the budget: too_large"
"$acc" plan --graph "$dir/g.json" --budget-frac 1 >"$dir/out" 2>"$dir/err" ||
    { cat "$dir/err"; echo "FAIL: 40000 nodes at the baseline peak"; exit 1; }
grep -q '"status": "optimal"' "$dir/out" || { cut -c1-300 "$dir/out"; echo "FAIL: not optimal at the baseline"; exit 1; }
echo "ok   40000 nodes at the baseline peak: optimal"
