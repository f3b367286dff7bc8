#!/bin/sh
# bf16_follows_fp32.sh ACC MODEL [acc run args...]
# Trains MODEL twice from the same seed, in fp32 and with --precision bf16,
# and checks that the bf16 loss curve follows the fp32 one: at every step
# |loss_bf16 - loss_fp32| <= 0.005 |loss_fp32| + 0.005 (the largest
# difference measured on the test's GPT-2: 0.0017), the bf16 loss falls
# below 3/4 of its first value, and the bf16 run's measured peak equals its
# planned peak, which is below the fp32 plan's.
set -eu
acc=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$acc" run "$@" >"$dir/fp32" 2>"$dir/fp32.err" || { cat "$dir/fp32.err"; echo "bf16_follows_fp32: fp32 run failed"; exit 1; }
"$acc" run "$@" --precision bf16 >"$dir/bf16" 2>"$dir/bf16.err" || {
    cat "$dir/bf16.err"
    echo "bf16_follows_fp32: bf16 run failed"
    exit 1
}
losses() { sed -n 's/^{"step": \([0-9]*\), "loss": \([-0-9.e+naif]*\)}$/\1 \2/p' "$1"; }
losses "$dir/fp32" >"$dir/fp32.l"
losses "$dir/bf16" >"$dir/bf16.l"
peak() { tail -n 1 "$1" | sed -n "s/.*\"peak_bytes_$2\": \([0-9]*\).*/\1/p"; }
[ "$(peak "$dir/bf16" planned)" = "$(peak "$dir/bf16" measured)" ] || {
    echo "bf16_follows_fp32: bf16 measured peak $(peak "$dir/bf16" measured) != planned $(peak "$dir/bf16" planned)"
    exit 1
}
[ "$(peak "$dir/bf16" planned)" -lt "$(peak "$dir/fp32" planned)" ] || {
    echo "bf16_follows_fp32: bf16 plan $(peak "$dir/bf16" planned) not below fp32's $(peak "$dir/fp32" planned)"
    exit 1
}
paste "$dir/fp32.l" "$dir/bf16.l" | awk '
    { n++; d = $4 - $2; if (d < 0) d = -d; if (d > worst) worst = d
      if ($1 != $3 || $4 != $4 + 0 || d > 0.005 * ($2 < 0 ? -$2 : $2) + 0.005) {
          printf "bf16_follows_fp32: step %s: fp32 %s, bf16 %s\n", $1, $2, $4; bad = 1 }
      if (n == 1) first = $4; last = $4; lf = $2 }
    END { if (n < 2) { print "bf16_follows_fp32: no loss lines"; exit 1 }
          if (bad) exit 1
          if (!(last < 0.75 * first)) { printf "bf16_follows_fp32: bf16 loss went from %s to %s\n", first, last; exit 1 }
          printf "bf16_follows_fp32: %d steps, bf16 %s -> %s (fp32 ends at %s), largest difference %.4g\n", n, first, last, lf, worst }'
