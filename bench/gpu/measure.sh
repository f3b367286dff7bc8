#!/bin/sh
# measure.sh [OUTDIR] - the whole GPU measurement of the CUDA target in one
# command, for a session on a GPU machine (see docs/gpu.md): the gpu test
# label, acc calibrate (FP32 and TF32 profiles), the kernel benchmark (float32 and TF32), the step benchmark
# (float32, TF32 and bf16, the default budgets and torch policies) and
# per-kernel Nsight Compute profiles of one GPT-2 small step in each
# precision, and the bf16 attention kernels' detail (ncu_att_bf16). Every result
# and log goes to OUTDIR (default $OUT, else out/gpu-measure), one file
# each, so a lease that ends early still leaves what was done. Run it from
# the repository root of a Release build (build/), e.g. on the GPU machine:
#   . .devkit/setup.sh && sh bench/gpu/measure.sh "$OUT"
# Each part is bounded by `timeout` (PART_S seconds, default 420); PARTS
# (default: all) names the parts to run, e.g. PARTS="gpu_tests ops_fp32", so
# one lease can be spent in several calls. TARBALL, when set, is rewritten
# after every part with the whole OUTDIR, for a machine that returns only a
# few files.
set -u
out=${1:-${OUT:-out/gpu-measure}}
mkdir -p "$out"
part=${PART_S:-420}
acc=${ACC:-build/acc}
log() { echo "== $*" | tee -a "$out/summary.txt"; }
parts=${PARTS:-"gpu_tests calibrate calibrate_tf32 ops_fp32 ops_tf32 step_fp32 step_tf32 step_bf16 ncu_step ncu_tf32 ncu_bf16 ncu_att_bf16"}
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
pack() { [ -n "${TARBALL:-}" ] && tar czf "$TARBALL" -C "$(dirname "$out")" "$(basename "$out")"; return 0; }
run() { # NAME CMD...: its output in OUTDIR/NAME.txt, its status in the summary
    name=$1
    shift
    want "$name" || return 0
    t0=$(date +%s)
    timeout "$part" "$@" >"$out/$name.txt" 2>&1
    rc=$?
    log "$name: exit $rc in $(($(date +%s) - t0)) s: $*"
    tail -n 25 "$out/$name.txt" >>"$out/summary.txt"
    pack
}
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || { log "no GPU: nvidia-smi failed"; exit 0; }
log "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null)"
run gpu_tests sh -c "cd build && ctest -L gpu --output-on-failure"
run calibrate "$acc" calibrate --target cuda -o "$out/gpu-local.hw"
run calibrate_tf32 "$acc" calibrate --target cuda --tf32 -o "$out/gpu-local-tf32.hw"
run ops_fp32 sh bench/gpu/ops.sh --acc "$acc" --json "$out/ops_fp32.json"
run ops_tf32 sh bench/gpu/ops.sh --acc "$acc" --tf32 --json "$out/ops_tf32.json"
run step_fp32 sh bench/gpu/run.sh --acc "$acc" --json "$out/step_fp32.json"
run step_tf32 sh bench/gpu/run.sh --acc "$acc" --tf32 --json "$out/step_tf32.json"
run step_bf16 sh bench/gpu/run.sh --acc "$acc" --precision bf16 --json "$out/step_bf16.json"
if command -v ncu >/dev/null 2>&1; then
    # one step of each precision, policy none: ncu_step (float32), ncu_tf32,
    # ncu_bf16 (a step's ~1,100-1,600 launches take ncu 2-3 minutes);
    # --clock-control none: the GPU's own clocks, as the other parts run
    for p in step tf32 bf16; do
        flag=; [ $p = tf32 ] && flag=--tf32; [ $p = bf16 ] && flag="--precision bf16"
        f="$out/ncu_$p"
        run "ncu_$p" ncu --clock-control none --cache-control none --target-processes all \
            --metrics gpu__time_duration.sum --csv --page raw --log-file "$f.csv" "$acc" run models/gpt2.acdsl \
            -D B=8 -D T=1024 --target cuda $flag --policy none --steps 1
        # the kernel time by kernel name, largest first
        [ -s "$f.csv" ] && python3 bench/gpu/ncu_by_kernel.py "$f.csv" >"$f.by_kernel.txt" 2>&1
        cat "$f.by_kernel.txt" >>"$out/summary.txt" 2>/dev/null
        rm -f "$f.csv.gz"; [ -s "$f.csv" ] && gzip -k "$f.csv"
    done
    # the bf16 attention kernels' detail (speed of light, occupancy, stalls,
    # instruction mix), one launch each in a GPT-2 small bf16 step
    for k in fwd_hb bwd_dq_hb bwd_dkdv_hb; do
        run "ncu_att_bf16" ncu --clock-control none -k "regex:ck_attention_$k" -c 1 --section SpeedOfLight \
            --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis \
            --section MemoryWorkloadAnalysis --section InstructionStats "$acc" run models/gpt2.acdsl -D B=8 -D T=1024 \
            --target cuda --precision bf16 --policy none --steps 1
        [ -s "$out/ncu_att_bf16.txt" ] && mv "$out/ncu_att_bf16.txt" "$out/ncu_att_$k.txt"
    done
fi
log "done: $out"
pack
