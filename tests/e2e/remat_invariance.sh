#!/bin/sh
# remat_invariance.sh ACC MODEL [-D k=v ...]
# Checkpointing must not change the numbers: for every policy, and for the
# optimal planner at three budgets between the smallest peak any policy reaches
# and the save-all peak, one training step's parameter gradients must be
# byte-identical to the save-all plan's, and the runtime's measured peak must
# equal the planned peak and fit the budget. Also without fusion (--no-fuse:
# no elementwise chains, and matmul and bias add as two ops instead of one
# linear op, whose CPU kernels are those two bit for bit): the same bytes.
# With --precision bf16 the --no-fuse comparison is skipped: an unfused
# matmul rounds its product to bf16 before the bias add, the linear op once
# after it, so the two compilations differ by design (the elementwise chains
# round after every op, as the unfused ops do, and stay invisible).
set -eu
acc=$1
model=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

range=$(sh "$(dirname "$0")/budget_range.sh" "$acc" "$model" "$@") || range=""
none=${range%% *} min=${range#* }
[ -n "$range" ] || { echo "remat_invariance: cannot read the policy table"; exit 1; }
echo "save-all peak $none, smallest policy peak $min"

run() { # run NAME ARGS...: one step, gradients into $dir/NAME.bin; prints the summary line
    name=$1
    shift
    "$acc" run "$model" "$@" --steps 1 --dump-grads "$dir/$name.bin" >"$dir/$name.out" 2>"$dir/$name.err" || {
        cat "$dir/$name.err" >&2
        echo "remat_invariance: acc run $* failed" >&2
        exit 1
    }
    tail -n 1 "$dir/$name.out"
}

check() { # check NAME BUDGET(0: none): same gradients, measured == planned <= budget
    name=$1 budget=$2
    summary=$(tail -n 1 "$dir/$name.out")
    planned=$(echo "$summary" | sed -n 's/.*"peak_bytes_planned": \([0-9]*\).*/\1/p')
    measured=$(echo "$summary" | sed -n 's/.*"peak_bytes_measured": \([0-9]*\).*/\1/p')
    cmp -s "$dir/ref.bin" "$dir/$name.bin" || { echo "FAIL $name: gradients differ from save-all"; exit 1; }
    [ "$planned" = "$measured" ] || { echo "FAIL $name: measured peak $measured != planned $planned"; exit 1; }
    if [ "$budget" != 0 ] && [ "$planned" -gt "$budget" ]; then
        echo "FAIL $name: planned peak $planned over the budget $budget"
        exit 1
    fi
    echo "ok   $name: peak $planned, gradients identical"
}

run ref "$@" --policy none >/dev/null
# elementwise chains (one kernel for consecutive elementwise steps) change nothing
case " $* " in
*" bf16 "*) echo "skip nofuse: bf16 (linear rounds once where matmul and add round twice)" ;;
*)
    run nofuse "$@" --policy none --no-fuse >/dev/null
    check nofuse 0
    ;;
esac
for p in full every:2 uniform:2 selective ops:matmul,attention sqrt; do
    n=$(echo "$p" | tr ':,' '__')
    run "$n" "$@" --policy "$p" >/dev/null
    check "$n" 0
done
# a device target's plans add its GEMM workspace (codegen/target.c) to the schedule's
case " $* " in
*" cuda-emu "* | *" cuda "*) ws=33554432 ;;
*) ws=0 ;;
esac
for frac in 1 5 9; do
    budget=$(awk -v a="$min" -v b="$none" -v f="$frac" -v w="$ws" 'BEGIN { printf "%.0f", a + (b - a) * f / 10 + w }')
    run "optimal_$frac" "$@" --policy optimal --budget "$budget" >/dev/null
    check "optimal_$frac" "$budget"
done
