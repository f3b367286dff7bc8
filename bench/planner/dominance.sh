#!/bin/sh
# dominance.sh ACC MODEL [-D ...]: for every policy, the optimal planner at a
# budget equal to that policy's peak must cost no more. Prints policy, its
# peak and overhead, optimal's peak and overhead at that budget.
set -eu
acc=$1 model=$2
shift 2
printf "%-22s %-12s %-10s %-12s %-10s %s\n" policy peak overhead opt_peak opt_ovh ok
"$acc" explain "$model" "$@" | awk '/^policy +peak bytes/ { on = 1; next } on && NF >= 3 && $1 != "optimal" { print $1, $2, $3 }' |
while read -r p peak ovh; do
    line=$("$acc" explain "$model" "$@" --budget "$peak" | awk '$1 == "optimal" { print $2, $3 }')
    set -- "$@"
    echo "$p $peak $ovh $line" | awk '{ o = $3; sub("%", "", o); q = $5; sub("%", "", q);
        printf "%-22s %-12s %-10s %-12s %-10s %s\n", $1, $2, $3, $4, $5, (q + 0 <= o + 0.005 ? "yes" : "NO") }'
done
