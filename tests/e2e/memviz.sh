#!/bin/sh
# memviz.sh ACC MODEL BUDGET TARGET [-D ...]: acc compile writes memory.svg and
# memory_snapshot.pickle that agree with plan.json (tests/e2e/memviz_check.py;
# skipped, exit 77, without python3), and acc pareto draws a sweep.
set -eu
acc=$1 model=$2 budget=$3 target=$4
shift 4
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" compile "$model" "$@" --target "$target" --budget "$budget" -o "$dir/out" 2>"$dir/err" || { cat "$dir/err"; exit 1; }
python3 "$(dirname "$0")/memviz_check.py" "$dir/out"
"$acc" pareto "$model" "$@" --points 4 -o "$dir/pareto.svg" >"$dir/pareto.txt"
n=$(grep -c '^optimal ' "$dir/pareto.txt")
[ "$n" = 4 ] || { cat "$dir/pareto.txt"; echo "FAIL: acc pareto printed $n optimal points, not 4"; exit 1; }
python3 -c "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); \
n = len(r.findall('{http://www.w3.org/2000/svg}circle')); sys.exit(0 if n >= 4 else 1)" "$dir/pareto.svg" ||
    { echo "FAIL: pareto.svg is not an SVG with the sweep's points"; exit 1; }
# no policy below the optimal curve: each policy's point has an optimal one
# (the sweep's or the one at its peak) at no more memory and no more overhead
awk '$1 == "plan" { next } $NF == "infeasible" { next }
     $1 ~ /^optimal/ { op[++k] = $3; oo[k] = $4 + 0; next }
     { pp[++m] = $3; po[m] = $4 + 0; name[m] = $1 }
     END { for (i = 1; i <= m; i++) { ok = 0
             for (j = 1; j <= k; j++) if (op[j] + 0 <= pp[i] + 0 && oo[j] <= po[i] + 1e-6) ok = 1
             if (!ok) { print "FAIL: policy " name[i] " lies below the optimal curve"; bad = 1 } }
           exit bad }' "$dir/pareto.txt" || { cat "$dir/pareto.txt"; exit 1; }
echo "ok   acc pareto: $n optimal points and $(grep -vc '^optimal\|^plan ' "$dir/pareto.txt") policies, none below the curve, pareto.svg"
