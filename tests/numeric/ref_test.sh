#!/bin/sh
# ref_test.sh - run one training step of a shipped model on the parameters
# and inputs of its PyTorch reference and compare the loss and every
# parameter gradient with the reference (tests/ref/README.md).
#
#   sh tests/numeric/ref_test.sh ACC TENSOR_COMPARE REF [OPTION]... [ACC_RUN_ARG]...
#
# Run from the repository root. REF names the files
# tests/ref/REF.{params.bin,inputs.bin,grads.bin,loss,args}; REF.args (written
# by make_ref.py) holds the model file and the -D arguments that give the
# reference's model and shapes. Options:
#   --rtol R, --atol A      gradient tolerance (default 1e-4, 2e-6):
#                           |got - ref| <= A + R |ref| for every element
#   --norm N                instead: per tensor ||got - ref|| <= N ||ref||
#                           (tensor_compare --norm; for --precision bf16)
#   --loss-rtol R           loss tolerance, relative (default 1e-5; the
#                           printed loss has 6 decimals, atol 2e-6 covers that)
# Any other argument goes to `acc run` (e.g. --budget 64K, or -D overrides,
# which only make sense if the reference was built with them).
# Exit status: 0 pass, 1 fail (or acc failed), 2 usage.
set -u

if [ $# -lt 3 ]; then
    echo "usage: $0 ACC TENSOR_COMPARE REF [--rtol R] [--atol A] [--loss-rtol R] [ACC_RUN_ARG]..." >&2
    exit 2
fi
acc=$1
tc=$2
name=$3
shift 3

rtol=1e-4
atol=2e-6
loss_rtol=1e-5
loss_atol=2e-6
extra=""
norm=""
while [ $# -gt 0 ]; do
    case $1 in
    --rtol) rtol=$2; shift 2 ;;
    --atol) atol=$2; shift 2 ;;
    --loss-rtol) loss_rtol=$2; shift 2 ;;
    --norm) norm="--norm $2"; shift 2 ;;
    *) extra="$extra $1"; shift ;;
    esac
done

ref=tests/ref/$name
for f in "$ref.params.bin" "$ref.inputs.bin" "$ref.grads.bin" "$ref.loss" "$ref.args"; do
    if [ ! -f "$f" ]; then
        echo "ref_test: missing $f (run from the repository root; regenerate with python3 tests/ref/make_ref.py)" >&2
        exit 2
    fi
done
# shellcheck disable=SC2046 # the model file, then -D NAME=VALUE words
set -- $(cat "$ref.args")
src=$1
shift
args="$*"
if [ ! -f "$src" ]; then
    echo "ref_test: $ref.args names $src, which does not exist" >&2
    exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/acc-ref-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck disable=SC2086 # args and extra are word lists on purpose
set -- run "$src" --steps 1 --params "$ref.params.bin" --inputs "$ref.inputs.bin" --dump-grads "$tmp/grads.bin" $args $extra
echo "+ $acc $*"
if ! "$acc" "$@" >"$tmp/out" 2>"$tmp/err"; then
    cat "$tmp/out" "$tmp/err"
    echo "ref_test: $name: acc run failed" >&2
    exit 1
fi
cat "$tmp/out"

status=0
"$tc" --loss "$ref.loss" "$tmp/out" --rtol "$loss_rtol" --atol "$loss_atol" || status=1
# shellcheck disable=SC2086 # norm is "" or "--norm N"
"$tc" "$ref.grads.bin" "$tmp/grads.bin" --rtol "$rtol" --atol "$atol" $norm || status=1
if [ $status -ne 0 ]; then
    echo "ref_test: $name: FAIL (see above)"
else
    echo "ref_test: $name: PASS"
fi
exit $status
