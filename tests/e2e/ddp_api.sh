#!/bin/sh
# ddp_api.sh ACC BLAS_DIR TARGET: ddp_api.c under mpirun -np 2 against a small
# GPT-2 compiled with --ranks 2, ZeRO-0, -1 and -2 (the MLP as the other plan); each prints the gradient norm of one reduced
# step, which must agree (relative 1e-6: ZeRO sums the squares of the rank's
# pieces, then over the ranks); then a rank late by more than the
# communicator's timeout (ddp_api.c late).
set -eu
acc=$1 blas=$2 target=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
gpt2="-D L=1 -D C=32 -D H=4 -D T=8 -D V=64"
root=""
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
"$acc" compile models/mlp.acdsl --target "$target" --ranks 2 --budget 1G -o "$dir/mlp" >/dev/null 2>&1
zs="0 1 2"
for z in $zs; do
    out="$dir/z$z"
    "$acc" compile models/gpt2.acdsl $gpt2 --batch 4 --target "$target" --ranks 2 --zero $z --bucket-size 8K \
        --budget 1G -o "$out" >/dev/null 2>"$dir/err" || { cat "$dir/err"; exit 1; }
    dev=""
    [ "$target" = cuda-emu ] && dev="$out/libaccrt_emu.a"
    ${MPICC:-mpicc} ${ACC_GEN_FLAGS:-} -std=c11 -O1 -fopenmp -Wall -Wextra -Werror -DMODEL_DESC=gpt2_desc \
        -DOTHER_DESC=mlp_desc tests/e2e/ddp_api.c -I"$out" "$out/libgpt2.a" "$dir/mlp/libmlp.a" "$out/libaccrt_mpi.a" \
        $dev "$out/libaccrt.a" -L"$blas" -Wl,-rpath,"$blas" -lopenblas -lm -o "$out/ddp_api"
    timeout 300 mpirun -np 2 --oversubscribe $root "$out/ddp_api" >"$out/out" || { cat "$out/out"; exit 1; }
    sed -n 's/^norm //p' "$out/out" >"$dir/norm$z"
done
# a rank late by more than the timeout: both ranks' steps give up with
# ACC_ERR_COMM, then the job aborts (exit 3)
rc=0
timeout 300 mpirun -np 2 --oversubscribe $root "$dir/z0/ddp_api" late >"$dir/late" 2>"$dir/late.err" || rc=$?
if [ "$rc" != 3 ] || [ "$(grep -c 'gave up: .*did not complete within 1 s' "$dir/late")" != 2 ]; then
    cat "$dir/late" "$dir/late.err"
    echo "ddp_api: a late rank: exit $rc, not the two ranks giving up and the abort's 3"
    exit 1
fi
sed 's/^/ddp_api: late rank: /' "$dir/late"
for z in $zs; do
    awk -v a="$(cat "$dir/norm0")" -v b="$(cat "$dir/norm$z")" -v z="$z" 'BEGIN {
        d = a - b; if (d < 0) d = -d
        if (!(a > 0) || d > 1e-6 * a) { printf "ddp_api: ZeRO-%d norm %s != ZeRO-0 norm %s\n", z, b, a; exit 1 }
        printf "ddp_api: norm %s (ZeRO-0) and %s (ZeRO-%d)\n", a, b, z }'
done
