#!/bin/sh
# prediction.sh ACC [MODEL -D ...]: recompute overhead measured by `acc run`
# against the plan's prediction. Calibrates this CPU (acc calibrate), then for
# several policies compares the measured step time over the save-all plan's
# (median of STEPS steps) with plan.json's predicted overhead.
set -eu
acc=$1
shift
[ $# -gt 0 ] || set -- models/gpt2.acdsl -D L=4 -D C=256 -D H=4 -D T=128 -D B=4 -D V=512
steps=${STEPS:-12}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" calibrate -o "$dir/local.hw"
median() { "$acc" run "$@" --hw "$dir/local.hw" --steps "$steps" | tail -n 1 | sed -n 's/.*"step_ms_median": \([0-9.]*\).*/\1/p'; }
base=$(median "$@" --policy none)
printf "%-22s %-10s %-10s %-10s\n" policy predicted measured step_ms
for p in selective every:2 full ops:matmul,attention; do
    "$acc" compile --target cpu "$@" --hw "$dir/local.hw" --policy "$p" --budget 1T -o "$dir/p" >/dev/null 2>&1
    pred=$(sed -n 's/.*"overhead": \([^,]*\),/\1/p' "$dir/p/plan.json")
    t=$(median "$@" --policy "$p")
    awk -v p="$p" -v pred="$pred" -v t="$t" -v b="$base" \
        'BEGIN { printf "%-22s %-10s %-10s %-10s\n", p, sprintf("%.1f%%", 100 * pred), sprintf("%.1f%%", 100 * (t / b - 1)), t }'
done
echo "save-all step: $base ms"
