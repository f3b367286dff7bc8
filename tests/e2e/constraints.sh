#!/bin/sh
# constraints.sh ACC: the command line's --save/--recompute patterns are
# honest constraints (issue 12): a pattern that is empty, malformed, matches
# nothing or only inputs and parameters, or that saves what another source
# recomputes (or the reverse), is a usage error naming it; a good one plans.
set -u
acc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
expect() { # expect STATUS PATTERN ARGS...: acc explain ARGS exits STATUS with PATTERN in its output
    want=$1 pat=$2
    shift 2
    "$acc" explain "$@" >"$dir/out" 2>&1
    got=$?
    if [ "$got" -ne "$want" ] || ! grep -q -- "$pat" "$dir/out"; then
        echo "FAIL: acc explain $* -> exit $got (expected $want and '$pat'):"
        head -5 "$dir/out"
        fail=1
    fi
}
m=tests/hostile/tiny_valid.acdsl h=tests/hostile/hint_save.acdsl
expect 2 "error: --save '\[': malformed pattern: '\[' without a closing '\]'" $m --save '['
expect 2 "error: --recompute 'h\[!\]': malformed pattern" $m --recompute 'h[!]'
expect 2 "error: --save '': malformed pattern: empty pattern" $m --save ''
expect 2 "error: --recompute 'x': the pattern matches only inputs and parameters" $m --recompute x
expect 2 "error: --save 'w\*': the pattern matches only inputs and parameters" $m --save 'w*'
expect 2 "error: --save 'nothing\*': the pattern matches no computed tensor" $m --save 'nothing*'
expect 2 "error: 'h' is both saved (--save 'h') and recomputed (--recompute '\*')" $m --save h --recompute '*'
expect 2 "error: 'y' is both saved (the model's annotation @save (tests/hostile/hint_save.acdsl:5)) and recomputed (--recompute 'y')" $h --recompute y
expect 2 "error: 'y' is both saved (the model's annotation @save" $h --recompute '*'
expect 0 "optimal" $m --save h --recompute e --budget 1K --target cpu
expect 0 "optimal" $h --save '*' --budget 1K --target cpu
[ $fail -eq 0 ] && echo "constraints: all passed"
exit $fail
