#!/bin/sh
# optstate_xl.sh ACC: GPT-2 XL shapes (models/gpt2.acdsl -D L=48 -D C=1600
# -D H=25, 1.56e9 parameters), planned for the cpu target:
#  - with fp32 moments a 20 GiB budget is refused with the impossible-budget
#    error (the minimum, 25.38 GiB, is above it);
#  - with --optimizer-state bf16 the fixed state (parameters, gradients,
#    optimizer_m, optimizer_v in the memory table) is smaller by exactly
#    2 bytes x parameters x 2 (m and v), the same 20 GiB budget plans (exit
#    0, planned peak within it, no DOES NOT FIT), and the bf16 minimum that
#    --budget 1 reports is below 20 GiB (printed);
#  - with every lever (--optimizer-state host, --micro-batch auto,
#    --host-budget) the minimum is below the bf16 one's and 16 GiB plans;
#  - the DSL's `optimizer_state bf16;` (a small model) plans bf16 moments
#    (plan.json's optimizer_state, half the optimizer_m bytes) and
#    --optimizer-state fp32 overrides it.
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

# every lever: the moments in host memory, micro-batches, offload
# shellcheck disable=SC2086
if "$acc" explain $xl --budget 1 --optimizer-state host --micro-batch auto --host-budget 64G >"$dir/all" 2>&1; then
    echo "FAIL: every lever: --budget 1 planned"
    exit 1
fi
mall=$(minimum "$dir/all")
[ -n "$mall" ] && [ "$mall" -lt "$m16" ] && grep -q "least memory by count of micro-batches" "$dir/all" || {
    cat "$dir/all"
    echo "FAIL: every lever: minimum $mall not below the bf16 moments' $m16"
    exit 1
}
# shellcheck disable=SC2086
"$acc" explain $xl --budget 16G --optimizer-state host --micro-batch auto --host-budget 64G >"$dir/h16" 2>&1 || {
    cat "$dir/h16"
    echo "FAIL: every lever: --budget 16G refused (minimum $mall)"
    exit 1
}
grep -q "optimizer state in host memory" "$dir/h16" || { echo "FAIL: explain does not say the state is in host memory"; exit 1; }
echo "ok   every lever (host moments, micro-batches, offload): minimum $mall bytes; --budget 16G plans"

cat >"$dir/m.acdsl" <<'MODEL'
model m;
optimizer_state bf16;
input x: f32[4, 8];
param w: f32[8, 64] = normal(0.1);
loss sum(matmul(x, w));
MODEL
"$acc" compile "$dir/m.acdsl" --target cpu --budget 1G -o "$dir/dsl" >/dev/null || { echo "FAIL: compile with optimizer_state bf16;"; exit 1; }
"$acc" compile "$dir/m.acdsl" --target cpu --budget 1G --optimizer-state fp32 -o "$dir/opt" >/dev/null ||
    { echo "FAIL: compile with --optimizer-state fp32"; exit 1; }
state() { sed -n 's/.*"optimizer_state": "\([a-z0-9]*\)".*/\1/p' "$1/plan.json"; }
mbytes() { sed -n 's/.*"optimizer_m": \([0-9]*\).*/\1/p' "$1/plan.json"; }
[ "$(state "$dir/dsl")" = bf16 ] && [ "$(state "$dir/opt")" = fp32 ] &&
    [ "$(mbytes "$dir/dsl")" -eq 1024 ] && [ "$(mbytes "$dir/opt")" -eq 2048 ] || {
    echo "FAIL: optimizer_state bf16; gives $(state "$dir/dsl") ($(mbytes "$dir/dsl") bytes of m), with --optimizer-state fp32 $(state "$dir/opt") ($(mbytes "$dir/opt") bytes)"
    exit 1
}
echo "ok   optimizer_state bf16; in the model: bf16 moments (1024 bytes of m); --optimizer-state fp32 overrides it (2048)"
