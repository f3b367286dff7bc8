#!/bin/sh
# cli.sh ACC - the command line: every malformed number, option a command does
# not take, unknown command and unwritable output ends in its message and the
# right exit status (2 usage, 1 input), and each command has its own help.
# Run from the repository root.
set -u
acc=$1
m=models/mlp.acdsl
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0

# expect STATUS REGEX ARGS...: acc ARGS exits STATUS and its stderr (or
# stdout for help) matches REGEX
expect() {
    want=$1 re=$2
    shift 2
    "$acc" "$@" >"$dir/out" 2>"$dir/err"
    got=$?
    if [ "$got" != "$want" ] || ! cat "$dir/err" "$dir/out" | grep -q -e "$re"; then
        echo "FAIL: acc $*: exit $got (want $want), output:"
        cat "$dir/err" "$dir/out" | head -5
        fails=$((fails + 1))
    else
        echo "ok   acc $*"
    fi
}

# numbers are parsed strictly, and the limits are in the message
expect 2 "the value must be a number" check $m -D B=+5
expect 2 "the value must be a number" check $m -D "B= 5"
expect 2 "the value must be a number" check $m -D B=0x10
expect 2 "the value must be a number" check $m -D B=inf
expect 2 "not a hyperparameter name" check $m -D "B =5"
expect 0 "parameters:" check $m -D B=5
expect 0 "parameters:" check $m -DB=5
expect 2 "from 0 to 1000000000, got '0.5'" run $m --steps 0.5
expect 2 "from 0 to 1000000000" run $m --steps " 3"
expect 2 "from 0 to 18446744073709551615" run $m --seed -1
expect 2 "from 0 to 1000, got 'nan'" run $m --lr nan
expect 2 "at most 1e6, got 'inf'" explain $m --time-limit inf
expect 2 "at most 1e6, got '+1'" explain $m --time-limit +1
expect 2 "at most 1e6, got '0'" compile $m --budget 1G -o "$dir/x" --time-limit 0
expect 2 "from 0 to 1e6, got 'inf'" alloc tests/alloc/stairs.csv --time-limit inf
expect 2 "at most 1e6, got 'inf'" plan --graph x.json --budget 1 --time-limit inf
expect 2 "0 < F <= 1e6, got ' 0.5'" plan --graph x.json --budget-frac " 0.5"
expect 2 "from 2 to 1000, got '1'" pareto $m --points 1
expect 2 "none empty" explain $m --policy ops:matmul,,relu
expect 2 "none empty" explain $m --policy ops:matmul,
expect 2 "longer than 255 characters" explain $m --policy "ops:$(printf 'matmul,%.0s' $(seq 40))attention"
expect 2 "from 1 to 100000" explain $m --policy every:+2
expect 2 "invalid size '1.5'" explain $m --budget 1.5
# options a command does not take; unknown options and commands
expect 2 "acc check does not take --budget" check $m --budget 1G
expect 2 "acc check does not take -o" check $m -o "$dir/x"
expect 2 "acc explain does not take --steps" explain $m --steps 3
expect 2 "acc pareto does not take --budget" pareto $m --budget 1G
expect 2 "acc alloc does not take '--budget'" alloc tests/alloc/stairs.csv --budget 1G
expect 2 "acc calibrate does not take '--hw'" calibrate --hw cpu
expect 2 "unknown option '-x'" check $m -x
expect 2 "unknown command 'frob'" frob $m
expect 2 "unknown command 'frob'" frob
expect 2 "acc check needs an input file" check
expect 2 "diff needs two plan files" diff a.json
# per-command help, on stdout, exit 0
expect 0 "usage: acc compile FILE --budget SIZE -o DIR" compile --help
expect 0 "--time-limit S" compile -h
expect 0 "usage: acc run" help run
expect 0 "usage: acc alloc" alloc --help
expect 0 "usage: acc diff" diff --help
expect 0 "usage: acc plan --graph" plan --help
expect 0 "'acc COMMAND --help'" --help
# a failed write to standard output is a failure
if [ -w /dev/full ]; then
    "$acc" check $m >/dev/full 2>"$dir/err"
    [ $? = 1 ] && grep -q "cannot write to standard output" "$dir/err" && echo "ok   acc check >/dev/full" ||
        { echo "FAIL: acc check >/dev/full did not fail"; fails=$((fails + 1)); }
    "$acc" --help >/dev/full 2>/dev/null && { echo "FAIL: acc --help >/dev/full exit 0"; fails=$((fails + 1)); }
fi
# acc diff rejects what is not a plan: another file, a truncated plan, a
# plan with text after its end
"$acc" compile $m --budget 1G --target cpu -o "$dir/p" 2>/dev/null || { echo "FAIL: compile"; exit 1; }
head -c 300 "$dir/p/plan.json" >"$dir/trunc.json"
{ cat "$dir/p/plan.json"; echo "{}"; } >"$dir/tail.json"
printf '{\n  "acc_version": "0.1.0"\n}\n' >"$dir/fake.json"
expect 2 "is not a plan written by acc compile" diff "$dir/p/plan.json" "$dir/p/memory.svg"
expect 2 "not a complete plan" diff "$dir/p/plan.json" "$dir/trunc.json"
expect 2 "text after its end" diff "$dir/p/plan.json" "$dir/tail.json"
expect 2 "is not a plan" diff "$dir/fake.json" "$dir/p/plan.json"
expect 2 "is not a plan" diff "$dir/p/plan.json" "$dir"
expect 0 "plans are identical" diff "$dir/p/plan.json" "$dir/p/plan.json"
# the memory levers' options and the models they do not fit
expect 2 "from 1 to 1000000000, got '0'" explain $m --micro-batch 0
expect 2 "auto or a whole number" explain $m --micro-batch half
expect 2 "from 1 to 1000000000, got '-4'" explain $m --batch -4
expect 2 "invalid size 'lots'" explain $m --host-budget lots
expect 2 "known: fp32, bf16 or host" explain $m --optimizer-state cpu
expect 2 "does not take --micro-batch" check $m --micro-batch 2
expect 1 "--micro-batch 3 does not divide the batch B = 128" explain $m --micro-batch 3
expect 2 "--micro-batch auto is a choice of the planner" compile $m --micro-batch auto --budget 1G --emit=ir -o "$dir/ir"
expect 0 "micro-batches: 2 of 64 rows" explain $m --target cpu --batch 128 --micro-batch 2
# every count's least memory is a search's, not 0 (a small graph's plan does not search it)
expect 1 "least memory by count of micro-batches: 1: [1-9][0-9.]* MiB, 2: [1-9]" explain $m --target cpu --budget 1 --micro-batch auto
cat >"$dir/nob.acdsl" <<'EOF2'
model nob;
input x: f32[4, 8];
param w: f32[8, 2] = normal(0.1);
loss mean(matmul(x, w));
EOF2
expect 1 "needs the batch size as the model's integer hyperparameter B" explain "$dir/nob.acdsl" --micro-batch 2
cat >"$dir/rows.acdsl" <<'EOF2'
model rows;
hparam B = 4;
input x: f32[8, B];
param w: f32[B, 2] = normal(0.1);
loss mean(matmul(x, w));
EOF2
expect 1 "rows.acdsl:3:.*micro-batches slice an input along its first dimension" explain "$dir/rows.acdsl" --micro-batch 2
cat >"$dir/max.acdsl" <<'EOF2'
model lossop;
hparam B = 4;
input x: f32[B, 8];
param w: f32[8, 1] = normal(0.1);
loss scale(sum(matmul(x, w)), alpha=0.5);
EOF2
expect 1 "need a loss that is a mean (mean, cross_entropy) or a sum" explain "$dir/max.acdsl" --micro-batch 2
[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all command lines behave"
