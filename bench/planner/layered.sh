#!/bin/sh
# layered.sh [ACC] - acc plan --graph on random layered graphs in the shape
# MOCCASIN benchmarks on (bench/planner/random_layered.py, seed 1) with 100,
# 250, 500 and 1,000 nodes, at 0.9, 0.8, 0.7 and 0.6 of the save-all peak,
# side by side with Checkmate's MILP and its LP rounding (acc's --method
# checkmate-milp / checkmate-lp), every method with a 30 s limit (LIMIT).
# Prints one markdown row per graph and budget: per method the status, the
# overhead (compute / baseline - 1), the gap and the wall time; for acc, the
# least peak it found when no plan fits.
# Environment: LIMIT (default 30), SIZES (default "100 250 500 1000"),
# FRACS (default "0.9 0.8 0.7 0.6"), CHECKMATE (default 1; 0: acc only),
# INTERVALS (default 1; 0 skips the --method intervals column).
set -eu
acc=${1:-build/acc}
limit=${LIMIT:-30}
sizes=${SIZES:-"100 250 500 1000"}
fracs=${FRACS:-"0.9 0.8 0.7 0.6"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
field() { printf '%s\n' "$2" | sed -n "s/.*\"$1\": \"\{0,1\}\([^,\"]*\)\"\{0,1\}[,}].*/\1/p"; }
cell() { # cell METHOD GRAPH FRAC
    t0=$(date +%s.%N)
    out=$("$acc" plan --graph "$2" --budget-frac "$3" --method "$1" --time-limit "$limit" 2>/dev/null) || true
    t1=$(date +%s.%N)
    st=$(field status "$out") fits=$(field fits "$out") ov=$(field overhead "$out") gap=$(field gap "$out")
    least=$(field least_peak_found "$out") peak=$(field baseline_peak "$out")
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    if [ "$fits" = true ]; then
        awk -v s="$st" -v o="$ov" -v g="$gap" -v w="$wall" 'BEGIN {
            printf " %s +%.2f%%, gap %s, %s s |", s, 100 * o, (g == "null" || g == "") ? "none" : sprintf("%.2f%%", 100 * g), w }'
    elif [ -n "$least" ]; then
        awk -v s="$st" -v l="$least" -v p="$peak" -v w="$wall" 'BEGIN { printf " %s (least peak %.3f), %s s |", s, l / p, w }'
    else
        printf ' %s, %s s |' "${st:-error}" "$wall"
    fi
}
printf '| n | budget |  acc | checkmate-milp | checkmate-lp | intervals |\n|---|---|---|---|---|---|\n'
for n in $sizes; do
    python3 "$(dirname "$0")/random_layered.py" "$n" 1 >"$dir/g$n.json"
    for f in $fracs; do
        printf '| %s | %s |' "$n" "$f"
        cell acc "$dir/g$n.json" "$f"
        if [ "${CHECKMATE:-1}" = 1 ]; then
            cell checkmate-milp "$dir/g$n.json" "$f"
            cell checkmate-lp "$dir/g$n.json" "$f"
        else
            printf ' - | - |'
        fi
        if [ "${INTERVALS:-1}" = 1 ]; then cell intervals "$dir/g$n.json" "$f"; else printf ' - |'; fi
        echo
    done
done
