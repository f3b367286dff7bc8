#!/bin/sh
# optstate_host.sh ACC TOL MODEL [acc run args...]
# Trains MODEL twice from the same seed, with the AdamW moments in fp32 in
# the arena and with --optimizer-state host (fp32 in host memory, updated
# there): the losses of every step agree within a relative TOL (0 on the cpu
# target: the same update kernel on the same values, so the same bits; on
# cuda-emu the host's update against the device's kernel); the host-state
# run's measured peak equals its planned peak, which is below the arena
# plan's by at least the 8 bytes an element m and v take; and the host memory
# the runtime holds equals plan.json's optimizer_host_bytes (compiled with
# the same arguments).
set -eu
acc=$1 tol=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for s in fp32 host; do
    "$acc" run "$@" --optimizer-state $s >"$dir/$s" 2>"$dir/$s.err" || {
        cat "$dir/$s.err"
        echo "optstate_host: the $s-state run failed"
        exit 1
    }
done
losses() { sed -n 's/^{"step": \([0-9]*\), "loss": \([-0-9.e+naif]*\)}$/\1 \2/p' "$1"; }
losses "$dir/fp32" >"$dir/fp32.l"
losses "$dir/host" >"$dir/host.l"
[ -s "$dir/fp32.l" ] || { echo "optstate_host: no losses"; exit 1; }
join "$dir/fp32.l" "$dir/host.l" | awk -v tol="$tol" '
    { d = $2 - $3; if (d < 0) d = -d; r = d / ($2 < 0 ? -$2 : $2); if (r > worst) worst = r; n++
      if (r > tol) { printf "optstate_host: step %d: loss %s (fp32 state) against %s (host state)\n", $1, $2, $3; bad = 1 } }
    END { printf "optstate_host: %d steps, worst relative difference %.3g (tolerance %s)\n", n, worst, tol; exit bad }'
field() { tail -n 1 "$dir/$1" | sed -n "s/.*\"$2\": \([0-9]*\).*/\1/p"; }
[ -n "$(field host peak_bytes_planned)" ] && [ "$(field host peak_bytes_planned)" = "$(field host peak_bytes_measured)" ] || {
    echo "optstate_host: measured peak $(field host peak_bytes_measured) != planned $(field host peak_bytes_planned)"
    exit 1
}
# the model's arguments for acc check (the file, -D) and acc compile (all but the run's)
check_args="" compile_args=""
while [ $# -gt 0 ]; do
    case $1 in
    --steps | --lr | --seed) shift 2 ;;
    -D) check_args="$check_args $1 $2" compile_args="$compile_args $1 $2"; shift 2 ;;
    --target) compile_args="$compile_args $1 $2"; shift 2 ;;
    *) check_args="$check_args $1" compile_args="$compile_args $1"; shift ;;
    esac
done
# shellcheck disable=SC2086
elems=$("$acc" check $check_args 2>/dev/null | sed -n 's/^parameters: \([0-9]*\).*/\1/p')
[ -n "$elems" ] && [ $(($(field fp32 peak_bytes_planned) - $(field host peak_bytes_planned))) -ge $((8 * elems)) ] || {
    echo "optstate_host: the host-state arena $(field host peak_bytes_planned) is not 8 bytes a parameter ($elems) below $(field fp32 peak_bytes_planned)"
    exit 1
}
# shellcheck disable=SC2086
"$acc" compile $compile_args --budget 64G --optimizer-state host -o "$dir/lib" >/dev/null 2>&1 || {
    echo "optstate_host: acc compile failed"
    exit 1
}
reported=$(sed -n 's/.*"optimizer_host_bytes": \([0-9]*\).*/\1/p' "$dir/lib/plan.json")
[ -n "$reported" ] && [ "$reported" = "$(field host host_bytes_measured)" ] && [ "$reported" = "$((8 * elems))" ] || {
    echo "optstate_host: host memory held $(field host host_bytes_measured), plan.json says $reported, 8 x $elems parameters"
    exit 1
}
echo "optstate_host: arena $(field fp32 peak_bytes_planned) -> $(field host peak_bytes_planned) bytes, host $reported bytes"
