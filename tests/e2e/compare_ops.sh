#!/bin/sh
# compare_ops.sh ACC: the comparison operators (tests/e2e/compare_ops.acdsl)
# elaborate to the same IR, node for node, as their calls
# (tests/e2e/compare_calls.acdsl): the same relation (a swapped < and >, or
# a number on the left not mirrored, would differ), the same operands and the
# same precedence; an i32 operand of arithmetic converted as float(idx) is.
# Source locations are left out of the comparison. Run from
# the source root.
set -u
acc=$1
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for m in compare_ops compare_calls; do
    mkdir "$dir/$m"
    if ! "$acc" compile "$here/$m.acdsl" --budget 1G -o "$dir/$m" --emit=ir >"$dir/$m.log" 2>&1; then
        cat "$dir/$m.log"
        echo "compare_ops.sh: $m.acdsl did not compile"
        exit 1
    fi
    sed 's/  *; .*$//' "$dir/$m"/*.ir >"$dir/$m.ir"
done
if ! diff -u "$dir/compare_calls.ir" "$dir/compare_ops.ir"; then
    echo "compare_ops.sh: the operators' IR differs from the calls'"
    exit 1
fi
n=$(grep -c '= \(eq\|ne\|lt\|le\|gt\|ge\)\(_scalar\)\?(' "$dir/compare_ops.ir")
if [ "$n" -ne 16 ]; then
    echo "compare_ops.sh: expected 16 comparisons in the IR, found $n"
    exit 1
fi
echo "compare_ops.sh: $n comparisons, the same IR as their calls"
