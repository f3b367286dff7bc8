#!/bin/sh
# budget_range.sh ACC MODEL [-D ...]: prints "SAVE_ALL_PEAK SMALLEST_PEAK", the
# save-all plan's peak and the smallest peak any policy reaches, from the
# policy table of `acc explain` - the range the planner tests and benchmarks
# spread their budgets over.
set -eu
acc=$1
model=$2
shift 2
"$acc" explain "$model" "$@" | awk '
    /^policy +peak bytes/ { on = 1; next }
    on && NF >= 3 { if ($1 == "none") none = $2; if (min == "" || $2 + 0 < min + 0) min = $2 }
    END { if (none == "" || min == "") exit 1; print none, min }'
