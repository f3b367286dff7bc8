#!/bin/sh
# cpu_step.sh - acc's CPU training step against PyTorch eager on GPT-2 shapes
# (default: width 768, 4 layers, 12 heads, sequence 256, batch 4, vocabulary
# 50257; AdamW included on both sides). See bench/cpu_step.py for what is
# measured and how; every argument is passed on to it, e.g.
#
#   bench/cpu_step.sh --repeats 3 --steps 5 --threads 2
#   bench/cpu_step.sh -L 2 -T 128 --torch-attention sdpa
#
# The acc binary: $ACC, else build/acc (build it with
# cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && make -C build).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ -z "${ACC:-}" ]; then
    for c in "$root/build/acc"; do
        if [ -x "$c" ]; then ACC=$c; break; fi
    done
fi
if [ -z "${ACC:-}" ] || [ ! -x "$ACC" ]; then
    echo "cpu_step.sh: no acc binary; build one or set ACC=/path/to/acc" >&2
    exit 2
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec python3 "$here/cpu_step.py" --acc "$ACC" "$@"
