#!/bin/sh
# cuda_compile.sh ACC MODEL [ARGS...]: the cuda target end to end on a machine
# without a GPU. `acc compile --target cuda ARGS` on the shipped model (its own
# shapes; ARGS e.g. --precision bf16 or --optimizer-state bf16):
#  - NVRTC builds every kernel for sm_80 and sm_90 (CUBIN) and compute_90
#    (PTX), with ptxas's resources recorded in kernels.txt and no spill;
#  - the images are embedded in lib<model>.a, plan.json records NVRTC and
#    counts the GEMM workspace;
#  - a trainer linked against the library (acc run's driver) fails to create
#    the model with ACC_ERR_NO_DEVICE and a sentence, exit status 1, where
#    no GPU exists (skipped where one does: the gpu label covers that).
set -eu
acc=$1
model=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" compile "$model" "$@" --target cuda --budget 1T -o "$dir/out" >"$dir/log" 2>&1 || {
    cat "$dir/log"
    echo "FAIL: acc compile --target cuda failed"
    exit 1
}
name=$(sed -n 's/^  "model": "\(.*\)",$/\1/p' "$dir/out/plan.json")
for arch in sm_80 sm_90; do
    grep -q "^$arch:" "$dir/out/kernels.txt" || { echo "FAIL: no $arch image in kernels.txt"; exit 1; }
done
grep -q '"images": \["sm_80", "sm_90", "compute_90"\], "spills": 0' "$dir/out/plan.json" ||
    { echo "FAIL: plan.json does not record the three images without spills"; exit 1; }
kernels=$(grep -c 'spill stores 0, spill loads 0' "$dir/out/kernels.txt")
spills=$(grep 'spill stores' "$dir/out/kernels.txt" | grep -vc 'spill stores 0, spill loads 0' || true)
[ "$spills" = 0 ] && [ "$kernels" -ge 40 ] || { echo "FAIL: $spills kernels spill ($kernels clean)"; exit 1; }
grep -q '"workspace": 33554[0-9]*,' "$dir/out/plan.json" || { echo "FAIL: plan.json has no GEMM workspace"; exit 1; }
nm "$dir/out/lib$name.a" | grep -q "${name}_images" || { echo "FAIL: no embedded images in lib$name.a"; exit 1; }
prec=$(sed -n 's/^  "precision": "\(.*\)",$/\1/p' "$dir/out/plan.json")
echo "ok   $name ($prec): $kernels kernel images (sm_80, sm_90) without spills, PTX for compute_90, embedded"
case " $* " in
*" --optimizer-state bf16 "*)
    state=$(sed -n 's/^  "optimizer_state": "\(.*\)",$/\1/p' "$dir/out/plan.json")
    [ "$state" = bf16 ] || { echo "FAIL: plan.json says optimizer_state $state, asked for bf16"; exit 1; }
    grep -q '\.optimizer_dtype = ACC_DT_BF16' "$dir/out/$name.c" ||
        { echo "FAIL: the library does not tell the runtime its moments are bf16"; exit 1; }
    echo "ok   $name: bf16 AdamW moments in plan.json and the library's desc"
    ;;
*" --precision bf16 "*)
    [ "$prec" = bf16 ] || { echo "FAIL: plan.json says precision $prec, asked for bf16"; exit 1; }
    grep -q 'k_linear_fwd_bf16(\|k_matmul_fwd_bf16(' "$dir/out/$name.c" ||
        { echo "FAIL: the schedule calls no bf16 GEMM"; exit 1; }
    ;;
esac

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    echo "skip no-GPU check: this machine has a GPU"
    exit 0
fi
set +e
"$acc" run "$model" "$@" -D B=1 --target cuda --steps 1 >"$dir/run.out" 2>"$dir/run.err"
rc=$?
set -e
grep -q 'cannot create the model: no usable device: .*dev_cuda.c:[0-9]*: ' "$dir/run.err" || {
    cat "$dir/run.err"
    echo "FAIL: without a GPU the trainer did not say why it cannot run"
    exit 1
}
[ "$rc" = 1 ] || { echo "FAIL: acc run exited $rc, expected 1"; exit 1; }
grep -v '^acc: error: ' "$dir/run.err" | head -1
echo "ok   without a GPU: a clear error, exit status 1, no crash"
