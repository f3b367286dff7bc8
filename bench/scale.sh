#!/bin/sh
# scale.sh [ACC] - how acc's commands scale with the size of their input, and
# whether --time-limit holds (issue 12, "bounded time"). Generates its inputs
# in a temporary directory (awk, fixed seeds) and prints one line per run:
# what, the command, wall seconds, peak resident KB.
#
#   check    a repeat of 6 ops, 1000 / 10000 / 100000 iterations (600k nodes)
#   compile  repeat N of (matmul, layernorm, softmax, gelu, matmul, add), CPU
#            target, N = 250, 500, 1000, 2000; GPT-2 with 96 layers at 16G
#   plan     a chain graph with skip edges, 30000 nodes --time-limit 5, and
#            10^6 nodes --time-limit 10 (over the search's size limit)
#   alloc    random MiniMalloc-style instances, 20000 and 100000 buffers,
#            --time-limit 5
#
# The acc binary: the first argument if it is an executable file, else $ACC,
# else build/acc. Takes about five minutes on one core.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
acc=${1:-${ACC:-$root/build/acc}}
[ -x "$acc" ] || { echo "scale.sh: no acc binary at '$acc'" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

run() { # run WHAT ARGS...: one line with the wall time and peak memory
    what=$1
    shift
    /usr/bin/time -f "%e %M" -o "$dir/time" "$acc" "$@" >"$dir/out" 2>"$dir/err" || true
    read -r secs kb <<EOF2
$(tail -n 1 "$dir/time")
EOF2
    printf '%-28s %8s s %9s KB   acc %s\n' "$what" "$secs" "$kb" "$*"
}

for n in 1000 10000 100000; do
    cat >"$dir/rep$n.acdsl" <<SRC
model t;
input x: f32[4, 8];
h = x;
repeat $n as r { a = relu(h); b = a * 2.0; c = b + a; d = gelu(c); e = d * h; h = e + b; }
loss mean(h);
SRC
    run "check, $((6 * n)) nodes" check "$dir/rep$n.acdsl"
done

for n in 250 500 1000 2000; do
    run "compile, repeat $n" compile "$root/tests/e2e/repeat_mat.acdsl" -D N=$n --budget 1G --target cpu -o "$dir/m$n"
done
run "compile, GPT-2 96 layers" compile "$root/models/gpt2.acdsl" -D L=96 --budget 16G --target cpu -o "$dir/gpt96"

for n in 30000 1000000; do
    awk -v n=$n 'BEGIN { srand(1); printf "{\"directed\": true, \"graph\": {\"name\": \"chain%d\"}, \"nodes\": [", n
        for (i = 0; i < n; i++) printf "%s{\"id\": %d, \"cost_cpu\": %d, \"cost_ram\": %d}", i ? "," : "", i, 1 + int(9 * rand()), 1 + int(9 * rand())
        printf "], \"links\": ["
        for (i = 0; i < n - 1; i++) printf "%s{\"source\": %d, \"target\": %d}", i ? "," : "", i, i + 1
        for (i = 0; i < n - 2; i += 3) { t = i + 2 + int(39 * rand()); if (t > n - 1) t = n - 1; printf ",{\"source\": %d, \"target\": %d}", i, t }
        print "]}" }' >"$dir/g$n.json"
done
run "plan, 30000 nodes, limit 5" plan --graph "$dir/g30000.json" --budget-frac 0.7 --time-limit 5
run "plan, 10^6 nodes, limit 10" plan --graph "$dir/g1000000.json" --budget-frac 0.7 --time-limit 10

for n in 20000 100000; do
    awk -v n=$n 'BEGIN { srand(2); print "id,lower,upper,size"
        for (i = 0; i < n; i++) { lo = int(n * rand()); printf "%d,%d,%d,%d\n", i, lo, lo + 1 + int(200 * rand()), 1 + int(1000 * rand()) } }' \
        >"$dir/a$n.csv"
    run "alloc, $n buffers, limit 5" alloc "$dir/a$n.csv" --time-limit 5
done
