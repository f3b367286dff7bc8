#!/bin/sh
# format.sh: every C, header and CUDA source of the tree is formatted as
# .clang-format says (clang-format --dry-run --Werror), so the tree has one
# style. run.sh installs clang-format; the files are git's tracked ones (every
# *.c, *.h and *.cu outside build trees when the tree is not a git checkout).
# Fix a failure with: clang-format -i FILE
set -eu
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null 2>&1 || {
    echo "FAIL: clang-format is not installed (./run.sh test installs it)"
    exit 1
}
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.c' '*.h' '*.cu')
else
    files=$(find . -path './build*' -prune -o -path './.devkit' -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -print)
fi
bad=0
for f in $files; do
    [ -f "$f" ] || continue
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || {
        echo "not formatted: $f"
        bad=$((bad + 1))
    }
done
[ "$bad" -eq 0 ] || {
    echo "FAIL: $bad files differ from .clang-format (clang-format -i FILE)"
    exit 1
}
echo "ok: $(echo "$files" | wc -w) files formatted as .clang-format says ($(clang-format --version))"
