#!/bin/sh
# small_dags.sh [ACC] - acc plan --graph against the exhaustive reference on
# random small DAGs (tests/unit/test_dag_sweep.c's generator: layered, skips,
# multi-branch, random), over a sweep of budgets from one unit under the least
# any schedule needs to the save-all peak. Two runs, each a markdown table:
#   40 graphs of 11-16 nodes, 8 budgets each (the reference in both modes:
#   every schedule, and Checkmate's staged space up to 14 nodes);
#   12 graphs of 21-25 nodes, 6 budgets each (past the reference's 18 nodes:
#   against the optimum this build proves over every schedule).
# ACC: the acc binary to measure through its command line (default build/acc;
# another build measures that version). --time-limit 10 for each case.
set -eu
acc=${1:-build/acc}
sweep=${SWEEP:-build/tests/test_dag_sweep}
[ -x "$sweep" ] || { echo "small_dags.sh: build test_dag_sweep first (cmake --build build)" >&2; exit 2; }
echo "### 40 graphs of 11-16 nodes"
"$sweep" --graphs 40 --nodes 11-16 --budgets 8 --seed 1 --time-limit 10 --acc "$acc" | grep -v "passed,"
echo
echo "### 12 graphs of 21-25 nodes"
"$sweep" --graphs 12 --nodes 21-25 --budgets 6 --seed 5 --time-limit 10 --acc "$acc" | grep -v "passed,"
