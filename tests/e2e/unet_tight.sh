#!/bin/sh
# unet_tight.sh ACC GRAPH: the VGG U-Net (Checkmate's vgg_unet_b32_train.json, 71
# nodes) at 0.3983 of its peak, the smallest budget acc plans (issue 18). The
# simulator scores the plan (acc plan reports it); the forced windows bound every
# schedule at 34335, so a plan at most 36500 is within 6% of the optimum. Before
# the staged search dived from its incumbent (commit 6ac89ca) the plan was 37445
# in 30 s, and in 20 s under load; with it, 35680. Skips (77) where the graph,
# which is not in the repository, is absent.
set -eu
acc=$1 graph=$2
[ -f "$graph" ] || { echo "skip: $graph not found"; exit 77; }
out=$("$acc" plan --graph "$graph" --budget-frac 0.3983 --time-limit 20)
compute=$(echo "$out" | sed -n 's/.*"compute": \([0-9.]*\),.*/\1/p')
fits=$(echo "$out" | sed -n 's/.*"fits": \([a-z]*\),.*/\1/p')
echo "$out"
[ "$fits" = true ] || { echo "FAIL: the plan does not fit"; exit 1; }
awk -v c="$compute" 'BEGIN { exit !(c != "" && c + 0 <= 36500) }' ||
    { echo "FAIL: compute $compute above 36500"; exit 1; }
echo "ok   compute $compute <= 36500"
