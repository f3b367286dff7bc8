#!/bin/sh
# doc_examples.sh ACC DOC
# Checks the examples of a Markdown document (docs/dsl.md) with `ACC check`.
# Fenced blocks by info string:
#   ```acdsl            a complete model: must pass
#   ```acdsl prelude    prepended to every snippet
#   ```acdsl snippet    prelude + snippet (+ "loss mean(y);" unless the
#                       snippet has a loss statement): must pass
#   ```acdsl error      a complete model: must fail with exit status 1; if the
#                       next fenced block is ```text output, acc's messages
#                       (the file named example.acdsl) must equal it
# Other blocks are ignored.
set -u
if [ "$#" -ne 2 ]; then
    echo "usage: doc_examples.sh ACC DOC" >&2
    exit 2
fi
acc=$1 doc=$2
case $acc in /*) ;; *) acc=$(pwd)/$acc ;; esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Split the document: $dir/N.KIND holds block N's text, $dir/N.expected the
# output expected of error block N, $dir/lines each block's first line.
awk -v dir="$dir" '
    /^```/ {
        if (!infence) {
            infence = 1
            info = substr($0, 4)
            sub(/[ \t]+$/, "", info)
            out = ""
            if (info == "acdsl") kind = "model"
            else if (info == "acdsl prelude") kind = "prelude"
            else if (info == "acdsl snippet") kind = "snippet"
            else if (info == "acdsl error") kind = "error"
            else if (info == "text output" && last_error != "" && prev_was_error) kind = "expected"
            else kind = ""
            if (kind == "expected") out = dir "/" last_error ".expected"
            else if (kind == "prelude") out = dir "/prelude"
            else if (kind != "") { n++; out = sprintf("%s/%03d.%s", dir, n, kind) }
            if (out != "") printf "" > out
            if (kind == "error") last_error = sprintf("%03d", n)
            prev_was_error = (kind == "error")
            next
        }
        infence = 0
        if (out != "") close(out)
        next
    }
    infence && out != "" {
        print >> out
        if (!(out in seen)) { seen[out] = 1; print out " " NR > (dir "/lines") }
    }
' "$doc"

fail=0 count=0
for f in "$dir"/[0-9]*.model "$dir"/[0-9]*.snippet "$dir"/[0-9]*.error; do
    [ -f "$f" ] || continue
    count=$((count + 1))
    line=$(awk -v f="$f" '$1 == f { print $2 }' "$dir/lines")
    kind=${f##*.}
    mkdir -p "$dir/run"
    case $kind in
    model | error) cp "$f" "$dir/run/example.acdsl" ;;
    snippet)
        if [ ! -f "$dir/prelude" ]; then
            echo "$doc:$line: snippet without an \`\`\`acdsl prelude block"
            fail=1
            continue
        fi
        cat "$dir/prelude" "$f" >"$dir/run/example.acdsl"
        grep -q '^[ \t]*loss[ \t]' "$f" || echo 'loss mean(y);' >>"$dir/run/example.acdsl"
        ;;
    esac
    (cd "$dir/run" && "$acc" check example.acdsl) >"$dir/run/out" 2>&1
    rc=$?
    if [ "$kind" = error ]; then
        if [ "$rc" -ne 1 ]; then
            echo "$doc:$line: this example should fail with exit status 1, got $rc:"
            cat "$dir/run/out"
            fail=1
        elif [ -f "${f%.error}.expected" ] && ! diff -u "${f%.error}.expected" "$dir/run/out"; then
            echo "$doc:$line: acc's messages differ from the text output block that follows the example"
            fail=1
        fi
    elif [ "$rc" -ne 0 ]; then
        echo "$doc:$line: this example does not pass acc check:"
        cat "$dir/run/example.acdsl"
        echo "--- acc check says:"
        cat "$dir/run/out"
        fail=1
    fi
done
if [ "$count" -eq 0 ]; then
    echo "doc_examples.sh: no examples found in $doc"
    exit 1
fi
[ "$fail" -eq 0 ] && echo "doc_examples.sh: $count examples of $doc pass"
exit "$fail"
