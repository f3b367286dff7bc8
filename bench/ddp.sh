#!/bin/sh
# ddp.sh - data parallel on the CPU target under mpirun, one thread per rank:
#   - scaling: tokens/s of 1 rank against R ranks at the same rows per rank
#     (the step's batch R times larger), each the median step of acc run;
#     efficiency = tokens/s(R) / (R x tokens/s(1));
#   - how much of the gradients' reduction the backward hides: the
#     collectives of one step timed alone (acc run's comm_ms_alone: the
#     buckets issued and waited for without the backward) against the time
#     the R-rank step adds over the 1-rank step (exposed);
#   - per-rank memory: the planned peak of ZeRO-0, ZeRO-1 and ZeRO-2, against
#     the share of the AdamW state ZeRO-1 should save, (R - 1) / R of it;
#   - the cost model's estimate of the reduction and of what is exposed.
#
#   bench/ddp.sh                 # GPT-2 shapes: 4 layers, width 256, T 128, 4 rows per rank, 2 ranks, 4 MiB buckets
#   RANKS=4 STEPS=10 bench/ddp.sh models/gpt2.acdsl -D L=2 -D C=128 -D H=4 -D T=64 -D V=2048
#
# The model's batch hyperparameter is set by --batch (4 rows per rank, $ROWS).
# The acc binary: $ACC, else build/acc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
ACC=${ACC:-$root/build/acc}
[ -x "$ACC" ] || {
    echo "ddp.sh: no acc binary at $ACC; build one or set ACC" >&2
    exit 2
}
command -v mpirun >/dev/null || {
    echo "ddp.sh: no mpirun (apt-get install openmpi-bin libopenmpi-dev)" >&2
    exit 2
}
ranks=${RANKS:-2} rows=${ROWS:-4} steps=${STEPS:-12} bucket=${BUCKET:-4M}
if [ $# -eq 0 ]; then
    set -- "$root/models/gpt2.acdsl" -D L=4 -D C=256 -D H=4 -D T=128 -D V=8192
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
field() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | tail -1; }
echo "model: $* ; $rows rows per rank, $ranks ranks, buckets of $bucket, one thread per rank, $steps steps"
"$ACC" run "$@" --batch "$rows" --target cpu --steps "$steps" >"$dir/one.out"
"$ACC" run "$@" --batch $((rows * ranks)) --ranks "$ranks" --bucket-size "$bucket" --target cpu --steps "$steps" \
    >"$dir/dp.out"
t1=$(field step_ms_median "$dir/one.out") tr=$(field step_ms_median "$dir/dp.out") comm=$(field comm_ms_alone "$dir/dp.out")
T=$(echo "$*" | sed -n 's/.*T=\([0-9]*\).*/\1/p')
T=${T:-1}
awk -v t1="$t1" -v tr="$tr" -v c="$comm" -v r="$ranks" -v b="$rows" -v T="$T" 'BEGIN {
    k1 = b * T / t1 * 1e3; kr = r * b * T / tr * 1e3; ex = tr - t1; if (ex < 0) ex = 0
    printf "1 rank: %.1f ms/step, %.0f tokens/s\n", t1, k1
    printf "%d ranks: %.1f ms/step, %.0f tokens/s: %.2fx one rank (scaling efficiency %.0f%%)\n", r, tr, kr, kr / k1, 100 * kr / (r * k1)
    hid = c > 0 ? 100 * (1 - (ex < c ? ex : c) / c) : 0
    printf "reduction alone %.2f ms, exposed %.2f ms: the backward hides %.0f%% of it\n", c, ex, hid
}'
for z in 0 1 2; do
    "$ACC" compile "$@" --batch $((rows * ranks)) --ranks "$ranks" --zero $z --bucket-size "$bucket" --target cpu \
        --budget 64G -o "$dir/z$z" >/dev/null 2>&1
done
ce=$(field comm_time_est "$dir/z0/plan.json") ee=$(field exposed_time_est "$dir/z0/plan.json")
awk -v c="$ce" -v e="$ee" 'BEGIN { printf "the cost model (hw profile cpu): reduction %.2f ms, exposed %.2f ms\n", c * 1e3, e * 1e3 }'
p0=$(field peak_bytes "$dir/z0/plan.json") p1=$(field peak_bytes "$dir/z1/plan.json")
m0=$(field optimizer_m "$dir/z0/plan.json") v0=$(field optimizer_v "$dir/z0/plan.json")
p2=$(field peak_bytes "$dir/z2/plan.json")
awk -v p0="$p0" -v p1="$p1" -v p2="$p2" -v s="$((m0 + v0))" -v r="$ranks" 'BEGIN {
    printf "per-rank peak: ZeRO-0 %.2f MiB, ZeRO-1 %.2f MiB: %.2f MiB less; the AdamW state is %.2f MiB, (R-1)/R of it %.2f MiB\n",
        p0 / 1048576, p1 / 1048576, (p0 - p1) / 1048576, s / 1048576, s * (r - 1) / r / 1048576
    printf "per-rank peak with ZeRO-2: %.2f MiB (%.2f MiB below ZeRO-1)\n", p2 / 1048576, (p1 - p2) / 1048576 }'
