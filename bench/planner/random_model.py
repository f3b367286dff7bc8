#!/usr/bin/env python3
"""random_model.py: write a random model in acc's DSL (.acdsl), a layered
random DAG with no repeated structure, for planner benchmarks (DESIGN §8: "a
graph of several thousand nodes with no repeated structure").

Every tensor is [B, T, C_i], C_i drawn from a small set of widths. The graph
keeps a few open branches (tensors not yet read); each statement takes one
of them (and sometimes a second tensor) and adds its result as a new open
branch:

  dense      matmul by a fresh [C_in, C_out] weight plus a fresh bias
             (C_out from the width set, so parameters of varied sizes)
  act        gelu / relu / tanh / silu
  norm       layernorm with fresh weight and bias
  residual   add or mul of two same-shaped tensors: another open branch (a
             merge) or a recent tensor
  skip       add of a tensor from far earlier in the graph (a long skip
             connection), projected by a dense layer if its width differs
  concat     concat of 2 or 3 tensors along the last axis (widths may differ),
             then a dense projection to a width from the set
  fork       a dense or act whose input stays open: a new parallel branch

Nothing repeats by construction: the kind, inputs, widths and activation
are drawn per statement, and there are no blocks or repeats (every node is
in the top-level group). Every tensor
is read by a later one (branches are merged by concat before the head), so
nothing is dead. The model ends with a projection to the target width and
the loss mean((y - target)^2), as models/unet.acdsl.

The output depends only on the arguments (Python's random.Random(seed), no
hash randomization involved). --nodes N stops at the first statement that
reaches N IR nodes as `acc check` counts them (parameters, inputs and ops);
--statements S stops after S statements.

Standard library only.
"""

import argparse
import random
import sys

WIDTHS = (32, 48, 64, 96, 128, 192, 256)
ACTS = ("gelu", "relu", "tanh", "silu")


class Gen:
    def __init__(self, rng, max_open, b, t, c_in, c_out):
        self.rng = rng
        self.max_open = max_open
        self.lines = []
        self.nodes = 2          # inputs x and target
        self.ntensor = 0
        self.nparam = 0
        self.width = {}         # tensor name -> last dimension
        self.order = []         # every computed tensor, in creation order
        self.open = []          # tensors no later op reads yet
        self.b, self.t, self.c_in, self.c_out = b, t, c_in, c_out

    # -- emitting -------------------------------------------------------
    def new_tensor(self, expr, width, ops):
        name = "t%d" % self.ntensor
        self.ntensor += 1
        self.lines.append("%s = %s;" % (name, expr))
        self.nodes += ops
        self.width[name] = width
        self.order.append(name)
        return name

    def param(self, shape, init):
        name = "p%d" % self.nparam
        self.nparam += 1
        self.lines.append("param %s: f32[%s] = %s;" % (name, ", ".join(str(d) for d in shape), init))
        self.nodes += 1
        return name

    def dense(self, x, c_out, bias=True):
        c_in = self.width[x]
        w = self.param((c_in, c_out), "normal(%.4g)" % (1.0 / c_in ** 0.5))
        if bias:
            b = self.param((c_out,), "zeros")
            return self.new_tensor("matmul(%s, %s) + %s" % (x, w, b), c_out, 2)
        return self.new_tensor("matmul(%s, %s)" % (x, w), c_out, 1)

    # -- choosing inputs ------------------------------------------------
    def take_open(self):
        """Remove and return a random open branch (recent ones more often)."""
        i = len(self.open) - 1 - min(int(self.rng.expovariate(1.0)), len(self.open) - 1)
        return self.open.pop(i)

    def recent(self, width, exclude, window=12):
        """A tensor of the given width among the last `window` created, or None."""
        cand = [n for n in self.order[-window:] if self.width[n] == width and n not in exclude]
        return self.rng.choice(cand) if cand else None

    def far(self, exclude, min_back=40):
        """A tensor created at least min_back tensors ago, or None."""
        if len(self.order) <= min_back:
            return None
        cand = self.order[: len(self.order) - min_back]
        for _ in range(8):
            n = self.rng.choice(cand)
            if n not in exclude:
                return n
        return None

    def same_width(self, y, width):
        """y, projected to `width` by a fresh dense layer if needed."""
        return y if self.width[y] == width else self.dense(y, width, bias=self.rng.random() < 0.5)

    # -- statements -----------------------------------------------------
    def statement(self):
        rng = self.rng
        r = rng.random()
        if len(self.open) < self.max_open and r < 0.08:
            # fork: a new branch from an open tensor, which stays open
            x = self.open[rng.randrange(len(self.open))]
            if rng.random() < 0.6:
                y = self.dense(x, rng.choice(WIDTHS))
            else:
                y = self.new_tensor("%s(%s)" % (rng.choice(ACTS), x), self.width[x], 1)
            self.open.append(y)
            return
        x = self.take_open()
        w = self.width[x]
        r = rng.random()
        if r < 0.26:
            y = self.dense(x, rng.choice(WIDTHS), bias=rng.random() < 0.85)
        elif r < 0.44:
            y = self.new_tensor("%s(%s)" % (rng.choice(ACTS), x), w, 1)
        elif r < 0.54:
            g = self.param((w,), "ones")
            bb = self.param((w,), "zeros")
            y = self.new_tensor("layernorm(%s, %s, %s)" % (x, g, bb), w, 1)
        elif r < 0.72:
            # residual add / mul with another open branch (merge) or a recent tensor
            if self.open and rng.random() < 0.5:
                z = self.same_width(self.take_open(), w)
            else:
                z = self.recent(w, {x})
                if z is None:
                    z = self.same_width(self.rng.choice([n for n in self.order[-12:] if n != x] or [x]), w)
            op = "+" if rng.random() < 0.75 else "*"
            y = self.new_tensor("%s %s %s" % (x, op, z), w, 1)
        elif r < 0.84:
            # long skip connection to a far earlier tensor
            z = self.far({x})
            if z is None:
                y = self.new_tensor("%s(%s)" % (rng.choice(ACTS), x), w, 1)
            else:
                z = self.same_width(z, w)
                y = self.new_tensor("%s + %s" % (x, z), w, 1)
        else:
            # concat of 2-3 tensors along the last axis, then a projection
            parts = [x]
            k = 2 if rng.random() < 0.7 else 3
            while len(parts) < k:
                if self.open and rng.random() < 0.5:
                    parts.append(self.take_open())
                else:
                    z = self.far(set(parts), min_back=4) if rng.random() < 0.5 else None
                    z = z or self.recent(rng.choice(WIDTHS), set(parts), window=30)
                    if z is None:
                        break
                    parts.append(z)
            if len(parts) == 1:
                y = self.dense(x, rng.choice(WIDTHS))
            else:
                cw = sum(self.width[p] for p in parts)
                c = self.new_tensor("concat(%s, axis=-1)" % ", ".join(parts), cw, 1)
                y = self.dense(c, rng.choice(WIDTHS))
        self.open.append(y)

    def finish(self):
        # merge the open branches, then project to the target width
        while len(self.open) > 1:
            parts = [self.open.pop() for _ in range(min(len(self.open), 8))]
            c = self.new_tensor("concat(%s, axis=-1)" % ", ".join(parts), sum(self.width[p] for p in parts), 1)
            self.open.append(self.dense(c, self.rng.choice(WIDTHS)))
        y = self.open.pop()
        g = self.param((self.width[y],), "ones")
        bb = self.param((self.width[y],), "zeros")
        h = self.new_tensor("layernorm(%s, %s, %s)" % (y, g, bb), self.width[y], 1)
        w = self.param((self.width[h], self.c_out), "normal(0.02)")
        b = self.param((self.c_out,), "zeros")
        self.lines.append("y = matmul(%s, %s) + %s;" % (h, w, b))
        self.lines.append("err = y - target;")
        self.lines.append("loss mean(err * err);")
        self.nodes += 2 + 1 + 2  # matmul, add; sub; mul, mean


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--nodes", type=int, help="stop once the model has about N IR nodes (default 2000)")
    g.add_argument("--statements", type=int, help="stop after S random statements")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--branches", type=int, default=4, help="most open branches at once (default 4)")
    ap.add_argument("--batch", type=int, default=4, help="default of hparam B (default 4)")
    ap.add_argument("--seq", type=int, default=128, help="default of hparam T (default 128)")
    ap.add_argument("-o", "--output", help="output file (default stdout)")
    a = ap.parse_args()
    if a.nodes is None and a.statements is None:
        a.nodes = 2000
    rng = random.Random(a.seed)
    c_in = rng.choice(WIDTHS)
    c_out = rng.choice(WIDTHS)
    gen = Gen(rng, max(1, a.branches), a.batch, a.seq, c_in, c_out)

    # the stem: a dense layer from the input
    gen.width["x"] = c_in
    gen.open.append(gen.dense("x", rng.choice(WIDTHS)))
    n = 0
    tail = 16  # about the nodes finish() adds for the merge and the head
    while True:
        if a.statements is not None and n >= a.statements:
            break
        if a.nodes is not None and gen.nodes + tail + 6 * len(gen.open) >= a.nodes:
            break
        gen.statement()
        n += 1
    gen.finish()

    head = [
        "# Random layered DAG without repeated structure, written by",
        "# bench/planner/random_model.py --seed %d %s (%d statements, %d IR nodes:"
        % (a.seed, "--nodes %d" % a.nodes if a.nodes is not None else "--statements %d" % a.statements,
           n, gen.nodes),
        "# %d parameter tensors, 2 inputs, %d ops)." % (gen.nparam, gen.nodes - gen.nparam - 2),
        "model random_s%d;" % a.seed,
        "",
        "hparam B = %d;" % a.batch,
        "hparam T = %d;" % a.seq,
        "",
        "input x: f32[B, T, %d];" % c_in,
        "input target: f32[B, T, %d];" % c_out,
        "",
    ]
    text = "\n".join(head + gen.lines) + "\n"
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
