#!/bin/sh
# golden.sh EXPECTED CMD [ARGS...]
# Runs CMD from the current directory, captures stdout and stderr together and
# the exit status (as a last line "exit: N"), and compares that with the file
# EXPECTED. With ACC_UPDATE_GOLDEN=1 it rewrites EXPECTED instead; review the
# diff before committing an update.
set -u
expected=$1
shift
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
"$@" >"$actual" 2>&1
echo "exit: $?" >>"$actual"
if [ "${ACC_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$actual" "$expected"
    echo "updated $expected"
    exit 0
fi
if [ ! -f "$expected" ]; then
    echo "golden.sh: missing expected file $expected (run with ACC_UPDATE_GOLDEN=1 to create it); output was:"
    cat "$actual"
    exit 1
fi
if ! diff -u "$expected" "$actual"; then
    echo "golden.sh: output differs from $expected"
    exit 1
fi
