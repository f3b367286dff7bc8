#!/bin/sh
# loss_falls.sh ACC MODEL [acc run args...]
# Trains MODEL with `acc run` and checks that every line parses, the loss is
# finite, and the last loss is below 3/4 of the first; also that the runtime's
# measured peak equals the planned peak.
set -eu
acc=$1
shift
out=$("$acc" run "$@") || { echo "$out"; echo "loss_falls: acc run failed"; exit 1; }
echo "$out"
first=$(echo "$out" | sed -n 's/^{"step": 0, "loss": \([-0-9.e+naif]*\)}$/\1/p')
last=$(echo "$out" | grep '"step"' | tail -n 1 | sed -n 's/.*"loss": \([-0-9.e+naif]*\)}$/\1/p')
summary=$(echo "$out" | tail -n 1)
planned=$(echo "$summary" | sed -n 's/.*"peak_bytes_planned": \([0-9]*\).*/\1/p')
measured=$(echo "$summary" | sed -n 's/.*"peak_bytes_measured": \([0-9]*\).*/\1/p')
[ -n "$first" ] && [ -n "$last" ] || { echo "loss_falls: no loss lines"; exit 1; }
[ -n "$planned" ] && [ "$planned" = "$measured" ] || { echo "loss_falls: measured peak $measured != planned $planned"; exit 1; }
awk -v f="$first" -v l="$last" 'BEGIN {
    if (f != f + 0 || l != l + 0 || l > 1e30 || l < -1e30) { print "loss_falls: loss is not finite"; exit 1 }
    if (!(l < 0.75 * f)) { printf "loss_falls: loss went from %s to %s\n", f, l; exit 1 }
    printf "loss_falls: %s -> %s\n", f, l }'
