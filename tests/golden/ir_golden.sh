#!/bin/sh
# ir_golden.sh ACC MODEL EXPECTED [-D NAME=VALUE]...
# Compiles MODEL with `ACC compile MODEL --budget 1G -o TMPDIR --emit=ir
# -D ...` and compares the IR it writes (TMPDIR/<model>.ir) with EXPECTED
# through golden.sh (so ACC_UPDATE_GOLDEN=1 regenerates EXPECTED). Run it from
# the source root: the IR records source locations as MODEL's path.
#
# Internally it calls itself as `ir_golden.sh --emit ACC MODEL [-D ...]`,
# which prints the .ir file on success, or acc's messages on failure.
set -u
here=$(dirname "$0")
if [ "${1:-}" = --emit ]; then
    acc=$2 model=$3
    shift 3
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    "$acc" compile "$model" --budget 1G -o "$dir" --emit=ir "$@" >"$dir/log" 2>&1
    rc=$?
    set -- "$dir"/*.ir
    if [ "$rc" -ne 0 ] || [ "$#" -ne 1 ] || [ ! -f "$1" ]; then
        cat "$dir/log"
        echo "ir_golden.sh: acc compile exited $rc and wrote no single .ir file"
        exit 1
    fi
    cat "$1"
    exit 0
fi
if [ "$#" -lt 3 ]; then
    echo "usage: ir_golden.sh ACC MODEL EXPECTED [-D NAME=VALUE]..." >&2
    exit 2
fi
acc=$1 model=$2 expected=$3
shift 3
exec sh "$here/golden.sh" "$expected" sh "$0" --emit "$acc" "$model" "$@"
