#!/bin/sh
# prediction.sh ACC [MODEL -D ...]: recompute overhead measured by `acc run`
# against the plan's prediction. Calibrates this CPU (acc calibrate), then for
# several policies compares the measured step time over the save-all plan's
# with plan.json's predicted overhead. The save-all and the policy's runs
# alternate (ROUNDS rounds of STEPS steps each); the measured overhead is the
# median over rounds of (policy's median step time / save-all's in the same
# round) - 1, so a change in the machine's speed between rounds cancels.
# step_ms and save_all_ms are the medians of the rounds' medians. On a small
# shared machine set OMP_NUM_THREADS=1 (calibration and runs alike): two
# threads on two shared cores vary by 20% between rounds.
set -eu
acc=$1
shift
[ $# -gt 0 ] || set -- models/gpt2.acdsl -D L=4 -D C=256 -D H=4 -D T=128 -D B=4 -D V=512
steps=${STEPS:-6}
rounds=${ROUNDS:-4}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" calibrate -o "$dir/local.hw"
# build each plan's runner once (acc run --keep), then time the binaries
build() { # build NAME POLICY: the directory of acc run's kept build
    "$acc" run --target cpu "$@" --hw "$dir/local.hw" --steps 0 --keep 2>&1 >/dev/null | sed -n 's/^acc: kept //p'
}
round_ms() { # round_ms RUNNER: the median step time (ms) of one round
    "$1/run" --steps "$steps" | tail -n 1 | sed -n 's/.*"step_ms_median": \([0-9.]*\).*/\1/p'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(build "$@" --policy none)
printf "%-22s %-10s %-10s %-10s %-10s\n" policy predicted measured step_ms save_all_ms
for p in selective every:2 full ops:matmul,attention; do
    "$acc" compile --target cpu "$@" --hw "$dir/local.hw" --policy "$p" --budget 1T -o "$dir/p" >/dev/null 2>&1
    pred=$(sed -n 's/.*"overhead": \([^,]*\),/\1/p' "$dir/p/plan.json")
    run=$(build "$@" --policy "$p")
    : >"$dir/tb"
    : >"$dir/tp"
    r=0
    while [ "$r" -lt "$rounds" ]; do
        round_ms "$base" >>"$dir/tb"
        round_ms "$run" >>"$dir/tp"
        r=$((r + 1))
    done
    b=$(median <"$dir/tb") t=$(median <"$dir/tp")
    ratio=$(paste "$dir/tp" "$dir/tb" | awk '{ print $1 / $2 }' | median)
    rm -rf "$run"
    awk -v p="$p" -v pred="$pred" -v t="$t" -v b="$b" -v r="$ratio" \
        'BEGIN { printf "%-22s %-10s %-10s %-10.2f %-10.2f\n", p, sprintf("%.1f%%", 100 * pred), sprintf("%.1f%%", 100 * (r - 1)), t, b }'
done
rm -rf "$base"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
