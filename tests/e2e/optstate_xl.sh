#!/bin/sh
# optstate_xl.sh ACC: GPT-2 XL shapes (models/gpt2.acdsl -D L=48 -D C=1600
# -D H=25, 1.56e9 parameters), planned for the cpu target:
#  - with fp32 moments a 20 GiB budget is refused with the impossible-budget
#    error (the minimum, 25.38 GiB, is above it);
#  - with --optimizer-state bf16 the fixed state (parameters, gradients,
#    optimizer_m, optimizer_v in the memory table) is smaller by exactly
#    2 bytes x parameters x 2 (m and v), the same 20 GiB budget plans (exit
#    0, planned peak within it, no DOES NOT FIT), and the bf16 minimum that
#    --budget 1 reports is below 20 GiB (printed).
set -eu
acc=$1
model="models/gpt2.acdsl -D L=48 -D C=1600 -D H=25"
xl="$model --target cpu"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# shellcheck disable=SC2086
params=$("$acc" check $model 2>&1 | sed -n 's/^parameters: \([0-9]*\) .*/\1/p')
[ -n "$params" ] || { echo "optstate_xl: no parameter count from acc check"; exit 1; }
fixed() { awk '$1 == "parameters" || $1 == "gradients" || $1 == "optimizer_m" || $1 == "optimizer_v" { s += $2 }
               END { printf "%.0f\n", s }' "$1"; }
minimum() { sed -n 's/.*is below the minimum of \([0-9]*\) bytes.*/\1/p' "$1"; }
g20=21474836480

# shellcheck disable=SC2086
if "$acc" explain $xl --budget 20G >"$dir/fp32" 2>&1; then
    cat "$dir/fp32"
    echo "FAIL: fp32 moments: --budget 20G planned"
    exit 1
fi
m32=$(minimum "$dir/fp32")
[ -n "$m32" ] && [ "$m32" -gt "$g20" ] || { cat "$dir/fp32"; echo "FAIL: fp32 moments: no minimum above 20 GiB in the error"; exit 1; }
echo "ok   fp32 moments: --budget 20G refused, minimum $m32 bytes"

# shellcheck disable=SC2086
"$acc" explain $xl --budget 20G --optimizer-state bf16 >"$dir/bf16" 2>&1 || {
    cat "$dir/bf16"
    echo "FAIL: bf16 moments: --budget 20G refused"
    exit 1
}
peak=$(sed -n 's/^budget .*planned peak .* (\([0-9]*\) bytes).*/\1/p' "$dir/bf16")
[ -n "$peak" ] && [ "$peak" -le "$g20" ] && ! grep -q "DOES NOT FIT" "$dir/bf16" || {
    head -20 "$dir/bf16"
    echo "FAIL: bf16 moments: the plan does not fit 20 GiB (peak $peak)"
    exit 1
}
grep -q "optimizer state bf16" "$dir/bf16" || { echo "FAIL: the explanation does not name the bf16 state"; exit 1; }
f32=$(fixed "$dir/fp32") f16=$(fixed "$dir/bf16")
[ $((f32 - f16)) -eq $((4 * params)) ] || {
    echo "FAIL: fixed state fp32 $f32, bf16 $f16: differ by $((f32 - f16)), not 2 x 2 x $params = $((4 * params))"
    exit 1
}
echo "ok   bf16 moments: --budget 20G plans a peak of $peak bytes; fixed state $f16 bytes, $((f32 - f16)) (= 4 x $params parameters) below fp32's $f32"

# shellcheck disable=SC2086
if "$acc" explain $xl --budget 1 --optimizer-state bf16 >"$dir/min" 2>&1; then
    echo "FAIL: bf16 moments: --budget 1 planned"
    exit 1
fi
m16=$(minimum "$dir/min")
[ -n "$m16" ] && [ "$m16" -le "$g20" ] || { cat "$dir/min"; echo "FAIL: bf16 moments: minimum $m16 not within 20 GiB"; exit 1; }
echo "ok   bf16 moments: minimum $m16 bytes (fp32 moments: $m32)"
