#!/bin/sh
# alloc.sh [ACC] MINIMALLOC_DIR [TIME_LIMIT_S] - the static allocator (passes/alloc.c)
#
# 1. Every MiniMalloc CSV instance in MINIMALLOC_DIR (id,lower,upper,size; the
#    number in the file name is the capacity it must fit in, e.g.
#    benchmarks/challenging/ of github.com/google/minimalloc): the best-fit
#    greedy against the exact search, arena / max-live and arena / capacity
#    and the time, first deciding the capacity (acc alloc --capacity), then
#    minimising the arena (acc alloc) within TIME_LIMIT_S (default 10).
# 2. Every shipped model at small shapes and two budgets: peak_bytes /
#    max_live_bytes of the compiled plan (plan.json) and the bytes lost to
#    fragmentation, with the greedy alone (ACC_ALLOC_SEARCH=0) and with the
#    pipeline's default search, and the compile time; then the U-Net with the
#    ops:matmul,attention policy, whose schedule the greedy fragments.
#
# The acc binary: the first argument if it is an executable file, else $ACC,
# else build/acc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ $# -ge 2 ] && [ -f "$1" ] && [ -x "$1" ]; then
    ACC=$1
    shift
fi
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: bench/alloc.sh [ACC] MINIMALLOC_DIR [TIME_LIMIT_S]" >&2; exit 2; }
dir=$1
limit=${2:-10}
ACC=${ACC:-$root/build/acc}
[ -x "$ACC" ] || { echo "alloc.sh: no acc binary at $ACC; build one or set ACC=/path/to/acc" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "acc: $ACC"
echo

# field VALUE after "KEY:" in acc alloc's output ($1: file, $2: key, $3: field number)
field() { awk -v k="$2:" -v f="$3" '$1 == k { v = $f; gsub(/[(),x]/, "", v); print v; exit }' "$1"; }
# seconds in "..., 0.123 s)" of a line
secs() { awk -v k="$2:" '$1 == k { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^s[),]/) { print $i; exit } }' "$1"; }

echo "== MiniMalloc instances: deciding the capacity (acc alloc FILE --capacity C --time-limit $limit)"
printf "%-16s %5s %9s %9s | %8s %8s %7s | %8s %8s %7s %8s %5s\n" instance n max_live capacity \
    greedy/ml greedy/c g_s exact/ml exact/c exact_s nodes fits
for f in "$dir"/*.csv; do
    name=$(basename "$f")
    cap=$(echo "$name" | sed -n 's/^[^.]*\.\([0-9][0-9]*\)\.csv$/\1/p')
    [ -n "$cap" ] || { echo "$name: no capacity in the file name, skipped"; continue; }
    "$ACC" alloc "$f" --capacity "$cap" --time-limit "$limit" >"$tmp/out" 2>&1 || true
    n=$(field "$tmp/out" buffers 2)
    ml=$(field "$tmp/out" max_live 2)
    g=$(field "$tmp/out" greedy 2)
    gs=$(secs "$tmp/out" greedy)
    a=$(field "$tmp/out" arena 2)
    es=$(secs "$tmp/out" search)
    nodes=$(awk '$1 == "search:" { for (i = 1; i < NF; i++) if ($(i + 1) == "nodes,") print $i }' "$tmp/out")
    fits=$(grep -q "(fits" "$tmp/out" && echo yes || echo no)
    awk -v nm="$name" -v n="$n" -v ml="$ml" -v c="$cap" -v g="$g" -v gs="$gs" -v a="$a" -v es="${es:-0}" \
        -v nodes="${nodes:-0}" -v fits="$fits" 'BEGIN {
        printf "%-16s %5d %9d %9d | %8.4f %8.4f %7.3f | %8.4f %8.4f %7.3f %8d %5s\n",
               nm, n, ml, c, g / ml, g / c, gs, a / ml, a / c, es, nodes, fits }'
done
echo
echo "== MiniMalloc instances: minimising the arena (acc alloc FILE --time-limit $limit)"
printf "%-16s %9s %9s | %8s %8s %7s %8s\n" instance max_live arena arena/ml arena/c time_s optimal
for f in "$dir"/*.csv; do
    name=$(basename "$f")
    cap=$(echo "$name" | sed -n 's/^[^.]*\.\([0-9][0-9]*\)\.csv$/\1/p')
    [ -n "$cap" ] || continue
    "$ACC" alloc "$f" --time-limit "$limit" >"$tmp/out" 2>&1 || true
    ml=$(field "$tmp/out" max_live 2)
    a=$(field "$tmp/out" arena 2)
    es=$(secs "$tmp/out" search)
    opt=$(grep -q "^arena:.*optimal" "$tmp/out" && echo yes || echo no)
    awk -v nm="$name" -v ml="$ml" -v c="$cap" -v a="$a" -v es="${es:-0}" -v opt="$opt" 'BEGIN {
        printf "%-16s %9d %9d | %8.4f %8.4f %7.3f %8s\n", nm, ml, a, a / ml, a / c, es, opt }'
done
echo

echo "== shipped models, small shapes: peak_bytes / max_live_bytes of the compiled plan"
printf "%-6s %-9s %-8s | %12s %12s %8s %8s %6s | %12s %8s %8s %6s\n" model budget shapes max_live greedy_peak \
    ratio frag time_s exact_peak ratio frag time_s
run() { # model budget shapes args...
    m=$1 b=$2 sh=$3
    shift 3
    t0=$(date +%s.%N)
    ACC_ALLOC_SEARCH=0 "$ACC" compile "$root/models/$m.acdsl" "$@" --budget "$b" -o "$tmp/g" >/dev/null 2>&1 ||
        { echo "$m $b: greedy compile failed"; return; }
    t1=$(date +%s.%N)
    "$ACC" compile "$root/models/$m.acdsl" "$@" --budget "$b" -o "$tmp/x" >/dev/null 2>&1 ||
        { echo "$m $b: compile failed"; return; }
    t2=$(date +%s.%N)
    gp=$(sed -n 's/.*"peak_bytes": \([0-9]*\),.*/\1/p' "$tmp/g/plan.json")
    xp=$(sed -n 's/.*"peak_bytes": \([0-9]*\),.*/\1/p' "$tmp/x/plan.json")
    ml=$(sed -n 's/.*"max_live_bytes": \([0-9]*\),.*/\1/p' "$tmp/x/plan.json")
    gml=$(sed -n 's/.*"max_live_bytes": \([0-9]*\),.*/\1/p' "$tmp/g/plan.json")
    awk -v m="$m" -v b="$b" -v sh="$sh" -v ml="$ml" -v gml="$gml" -v gp="$gp" -v xp="$xp" -v t0="$t0" -v t1="$t1" \
        -v t2="$t2" 'BEGIN {
        printf "%-6s %-9s %-8s | %12d %12d %8.4f %8d %6.2f | %12d %8.4f %8d %6.2f\n", m, b, sh, ml, gp, gp / gml, gp - gml,
               t1 - t0, xp, xp / ml, xp - ml, t2 - t1 }'
}
G="-D L=2 -D C=64 -D H=4 -D T=32 -D B=4 -D V=512"
LL="-D B=2 -D T=32 -D V=64 -D C=32 -D L=3 -D H=4 -D KVH=2 -D F=64"
U="-D B=2 -D N=32 -D C0=8 -D E=2"
M="-D B=16 -D D_in=64 -D hidden=32 -D classes=5"
# shellcheck disable=SC2086
{
    run gpt2 4000000 small $G
    run gpt2 3000000 small $G
    run llama 1000000 small $LL
    run llama 720000 small $LL
    run mlp 100000 small $M
    run mlp 70000 small $M
    run unet 1100000 small $U
    run unet 1000000 small $U
    run unet 100G small $U --policy ops:matmul,attention
    run unet 100G default --policy ops:matmul,attention
}
