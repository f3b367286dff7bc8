#!/bin/sh
# moccasin.sh DIR [OUT] - acc's planner on MOCCASIN's published graphs (the
# train graphs and the random layered graphs of haoming-codes/moccasin,
# folder data/, copied into DIR; they are not in this repository) at
# budgets of 0.9 .. 0.6 of the save-all peak, one JSON line per cell in OUT
# (default moccasin.jsonl), prefixed by "graph|fraction|load|rc|wall s|".
# Each run has --time-limit LIMIT (default 30) and is killed at 3 x LIMIT.
#
# Getting the data (no credentials needed):
#   git clone --depth 1 https://github.com/haoming-codes/moccasin /tmp/moccasin
#   mkdir -p /tmp/moccasin-data && cp /tmp/moccasin/data/*.json /tmp/moccasin-data/
#
# Environment: ACC (default build/acc), LIMIT, BUDGETS (default "0.9 0.8 0.7
# 0.6"), GRAPHS (file name prefixes, default the four random layered graphs,
# ResNet50, segnet and fcn_8_vgg), METHOD (default acc).
set -eu
dir=${1:?usage: moccasin.sh DIR [OUT]}
out=${2:-moccasin.jsonl}
acc=${ACC:-build/acc}
limit=${LIMIT:-30}
method=${METHOD:-acc}
budgets=${BUDGETS:-"0.9 0.8 0.7 0.6"}
graphs=${GRAPHS:-"random_layered_n100_ random_layered_n250_ random_layered_n500_ random_layered_n1000_ ResNet50 segnet fcn_8_vgg"}
[ -x "$acc" ] || { echo "moccasin.sh: no acc binary at '$acc' (set ACC)" >&2; exit 2; }
: >"$out"
for g in $graphs; do
    file=$(ls "$dir" | grep "^$g" | grep -v _test_nx | head -n 1 || true)
    [ -n "$file" ] || { echo "moccasin.sh: no graph '$g*' in $dir" >&2; continue; }
    for f in $budgets; do
        load=$(uptime | sed 's/.*average: //; s/,.*//')
        t0=$(date +%s.%N)
        rc=0
        line=$(timeout $((3 * limit)) "$acc" plan --graph "$dir/$file" --budget-frac "$f" --method "$method" \
            --time-limit "$limit" 2>/dev/null) || rc=$?
        t1=$(date +%s.%N)
        echo "${file%.json}|$f|load=$load|rc=$rc|wall=$(echo "$t1 - $t0" | bc)|$line" >>"$out"
        echo "${file%.json} $f: rc $rc" >&2
    done
done
