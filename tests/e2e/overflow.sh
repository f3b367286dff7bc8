#!/bin/sh
# overflow.sh ACC: byte totals past int64 (issue 12). A model whose tensors
# total more than 2^58 bytes is an error at the tensor that passes it (check,
# explain and compile alike: no negative total, no internal error), and so is
# a published graph whose sizes do (acc plan --graph printed a wrapped peak).
set -u
acc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
expect() { # expect STATUS PATTERN CMD...: exit status STATUS and PATTERN in the output
    want=$1 pat=$2
    shift 2
    "$@" >"$dir/out" 2>&1
    got=$?
    if [ "$got" -ne "$want" ] || ! grep -q -- "$pat" "$dir/out"; then
        echo "FAIL: $* -> exit $got (expected $want and '$pat'):"
        head -20 "$dir/out"
        fail=1
    fi
    if grep -q 'internal error' "$dir/out"; then
        echo "FAIL: $*: internal error"
        fail=1
    fi
}
for f in overflow_repeat overflow_params; do
    for cmd in check explain; do
        expect 1 "hostile/$f.acdsl:[0-9]*:[0-9]*: error: model too large: with this tensor" "$acc" $cmd tests/hostile/$f.acdsl
    done
    expect 1 "error: model too large" "$acc" compile tests/hostile/$f.acdsl --target cpu --budget 1G -o "$dir/out_$f"
done
expect 1 "hostile/overflow_repeat.acdsl:5:24: error" "$acc" check tests/hostile/overflow_repeat.acdsl
# 1100 nodes of 2^53 bytes: 2^63.1 in all
{
    printf '{"directed": true, "graph": {"name": "big"}, "nodes": ['
    i=0
    while [ $i -lt 1100 ]; do
        [ $i -gt 0 ] && printf ', '
        printf '{"id": %d, "cost_cpu": 1, "cost_ram": 9007199254740992, "backward": %s}' $i "$([ $i -ge 550 ] && echo true || echo false)"
        i=$((i + 1))
    done
    printf '], "links": ['
    i=0
    while [ $i -lt 1099 ]; do
        [ $i -gt 0 ] && printf ', '
        printf '{"source": %d, "target": %d}' $i $((i + 1))
        i=$((i + 1))
    done
    printf ']}\n'
} >"$dir/big.json"
expect 1 "node 32: the nodes' sizes total more than 2^58 bytes" "$acc" plan --graph "$dir/big.json" --budget-frac 0.7
[ $fail -eq 0 ] && echo "overflow: all passed"
exit $fail
