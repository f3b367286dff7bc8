#!/bin/sh
# kernel_cache.sh ACC MODEL: the cuda target's kernel-image cache
# (codegen/cuda.c). `acc compile --target cuda --arch sm_80` with
# ACC_CACHE_DIR set to a fresh directory:
#  - the first compile runs NVRTC and leaves one entry per image (CUBIN and
#    PTX);
#  - a second compile writes the same kernels.txt and <model>_images.c and
#    rewrites no entry (their inodes are kept: read, not compiled);
#  - an entry with a byte of its image flipped, or cut short, is not used:
#    it is compiled again and written anew (a damaged entry used would be
#    kept as it is), with the same ptxas report; a compile after that reads
#    the new entry and writes what the recompile wrote;
#  - ACC_CACHE_DIR=off writes the same kernels.txt and touches no entry.
# Whether NVRTC gives the same bytes twice is NVRTC's affair: a recompiled
# image that differs from the first is reported, not failed (once seen in CI).
set -eu
acc=$1
model=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cache=$dir/cache
compile() { # OUT: compile into $dir/OUT
    "$acc" compile "$model" --target cuda --arch sm_80 --budget 1T -o "$dir/$1" >"$dir/$1.log" 2>&1 || {
        cat "$dir/$1.log"
        echo "FAIL: acc compile --target cuda failed ($1)"
        exit 1
    }
}
same() { # OUT: the same kernels.txt and images as the first compile
    for f in kernels.txt "$name"_images.c; do
        cmp -s "$dir/a/$f" "$dir/$1/$f" || { echo "FAIL: $1: $f differs from the first compile's"; exit 1; }
    done
}
inodes() { ls -i "$cache" | sort -k2; }
ACC_CACHE_DIR=$cache compile a
name=$(sed -n 's/^  "model": "\(.*\)",$/\1/p' "$dir/a/plan.json")
n=$(ls "$cache" | grep -c '\.img$' || true)
[ "$n" = 2 ] || { ls -l "$cache"; echo "FAIL: $n cache entries after the first compile, expected 2 (sm_80, compute_80)"; exit 1; }
inodes >"$dir/inodes.a"
ACC_CACHE_DIR=$cache compile b
same b
inodes | cmp -s - "$dir/inodes.a" || { echo "FAIL: the second compile rewrote a cache entry (a miss)"; exit 1; }
echo "ok   a second compile reads both images from the cache: the same output, no entry rewritten"

entry=$(ls "$cache"/*-sm_80.img)
cp "$entry" "$dir/entry.good"
size=$(wc -c <"$entry")
for damage in flip cut; do
    cp "$dir/entry.good" "$entry"
    if [ $damage = flip ]; then # the byte 100 before the end: inside the CUBIN
        printf '\377' | dd of="$entry" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
        cmp -s "$entry" "$dir/entry.good" && printf '\376' | dd of="$entry" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
    else
        head -c $((size - 100)) "$dir/entry.good" >"$entry"
    fi
    cmp -s "$entry" "$dir/entry.good" && { echo "FAIL: the damage ($damage) changed nothing"; exit 1; }
    cp "$entry" "$dir/entry.damaged"
    ACC_CACHE_DIR=$cache compile $damage
    cmp -s "$entry" "$dir/entry.damaged" && { echo "FAIL: the damaged entry ($damage) was used, not compiled again"; exit 1; }
    cmp -s "$dir/a/kernels.txt" "$dir/$damage/kernels.txt" || { echo "FAIL: $damage: kernels.txt differs"; exit 1; }
    ACC_CACHE_DIR=$cache compile $damage.again
    cmp -s "$dir/$damage/${name}_images.c" "$dir/$damage.again/${name}_images.c" ||
        { echo "FAIL: $damage: the entry written does not give what its compile wrote"; exit 1; }
    if cmp -s "$dir/a/${name}_images.c" "$dir/$damage/${name}_images.c" && cmp -s "$entry" "$dir/entry.good"; then
        echo "ok   an entry with its image damaged ($damage) is compiled again: the same output, the entry restored"
    else
        echo "ok   an entry with its image damaged ($damage) is compiled again (note: NVRTC gave other bytes this time)"
    fi
done

inodes >"$dir/inodes.c"
ACC_CACHE_DIR=off compile off
cmp -s "$dir/a/kernels.txt" "$dir/off/kernels.txt" || { echo "FAIL: off: kernels.txt differs"; exit 1; }
inodes | cmp -s - "$dir/inodes.c" || { echo "FAIL: ACC_CACHE_DIR=off touched the cache"; exit 1; }
echo "ok   ACC_CACHE_DIR=off: the same ptxas report without the cache, the cache untouched"
