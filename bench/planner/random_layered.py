#!/usr/bin/env python3
"""random_layered.py N SEED - a random layered DAG in the shape of the ones
MOCCASIN (ICML 2023) benchmarks on, written by acc's project for its own
benchmarks (bench/planner/layered.sh): a source, layers of random width (mean
0.6 sqrt(N), 1 .. twice that), each node reading one to three nodes of the
layer before, and with probability 0.15 a node of an earlier layer (a skip),
every node read by some later node, a sink reading the last layer; output
sizes 20 .. 8,000 (steps of 10), durations 0 .. 999. Printed as node-link JSON
in the random graphs' schema (name, duration, out_cost; links "0" -> "1"),
ids in topological order. Deterministic from SEED.
"""
import json
import math
import random
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: random_layered.py N SEED")
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    if n < 3:
        sys.exit("random_layered.py: N >= 3")
    rng = random.Random(seed)
    mean = max(1.0, 0.6 * math.sqrt(n))
    layers, left = [[0]], n - 2
    nxt = 1
    while left > 0:
        w = min(left, rng.randint(1, max(1, int(2 * mean) - 1)))
        layers.append(list(range(nxt, nxt + w)))
        nxt += w
        left -= w
    layers.append([nxt])  # the sink
    edges = set()
    for li in range(1, len(layers)):
        prev = layers[li - 1]
        for v in layers[li]:
            if li == len(layers) - 1:
                edges.update((u, v) for u in prev)
                continue
            for _ in range(rng.randint(1, 3)):
                edges.add((rng.choice(prev), v))
            if li >= 2 and rng.random() < 0.15:
                edges.add((rng.choice(layers[rng.randint(0, li - 2)]), v))
        readers = {u for (u, _) in edges}
        for u in prev:  # every node is read by a later one
            if u not in readers:
                edges.add((u, rng.choice(layers[li])))
    nodes = [{"name": i, "duration": 0 if i == 0 else rng.randint(0, 999),
              "out_cost": 10 * rng.randint(2, 800), "param_cost": 0} for i in range(n)]
    links = [{"0": u, "1": v} for (u, v) in sorted(edges)]
    g = {"directed": True, "multigraph": False,
         "graph": {"name": "acc_random_layered_n%d_seed%d" % (n, seed)},
         "nodes": nodes, "links": links}
    json.dump(g, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
