"""ncu_by_kernel.py CSV - an Nsight Compute CSV (--csv --page raw with
gpu__time_duration.sum) summed by kernel name, largest first: time, share,
launches (used by measure.sh)."""
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
cols = rows[head]
k, t = cols.index("Kernel Name"), cols.index("gpu__time_duration.sum")
g = cols.index("Grid Size") if "Grid Size" in cols else None
tot = collections.Counter(); cnt = collections.Counter()
for r in rows[head + 2:]:
    try:
        tot[r[k]] += float(r[t].replace(",", "")); cnt[r[k]] += 1
    except (ValueError, IndexError): pass
all_ns = sum(tot.values())
for name, ns in tot.most_common(45):
    print(f"{ns / 1e6:10.3f} ms {100 * ns / all_ns:5.1f}% {cnt[name]:5d}x {name[:110]}")
print(f"{all_ns / 1e6:10.3f} ms total, {sum(cnt.values())} launches")
