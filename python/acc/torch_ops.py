"""torch_ops.py - ATen ops of a torch.export graph mapped onto acc's ops.

Each torch value becomes a lazy `Val`: an acc op with its inputs, not yet
written. A Val is written (materialized) as one DSL statement only when
something needs it, so the shuffles PyTorch code does around an op (the
view/transpose that splits heads before scaled_dot_product_attention and
merges them after it) fold away: `reshape(transpose(transpose(reshape(x))))`
simplifies to `x` before anything is written.

Some ATen ops have no acc op of their own but are part of a pattern that is
one acc op (x * rsqrt(mean(x^2) + eps) * w is rmsnorm; q * cos +
rotate_half(q) * sin with cos/sin tables is rope). They become "pending"
Vals: harmless while only the pattern uses them, an error naming the ATen op
and the user's source line if anything else needs their value. Nothing is
approximated: every mapping is exact up to float32 rounding, and what is not
exact is refused, but for two documented cases (docs/from-pytorch.md): the
gradient of amax/amin at ties, and a number filled in by where/masked_fill
(t * 0.0 + s) where t is not finite.

What this is not: a general ATen compiler. The table OPS below is the list of
supported ops (printed by the unsupported-op error).
"""
import math

import torch


class ImportFailure(Exception):
    """An error for the user: the message, and the graph node it is about."""

    def __init__(self, msg, node=None):
        super().__init__(msg)
        self.node = node


class Val:
    """One torch value as acc sees it.

    kind: 'leaf' (a name already bound in the DSL: an input, a parameter, a
    block formal, a repeat variable), 'op' (an acc op call, written when
    needed), 'const' (a tensor known at import time: buffers, aranges, rope
    tables; acc has no constant tensors, so only patterns may use it),
    'pending' (part of a pattern; `what` names the ATen op for the error, or
    info['plain'] is the Val written when something else needs the value)."""

    def __init__(self, kind, shape, dtype, op=None, ins=(), attrs=None, node=None, scope=None, name=None,
                 const=None, what=None, info=None):
        self.kind, self.shape, self.dtype = kind, tuple(shape), dtype
        self.op, self.ins, self.attrs = op, list(ins), attrs or []
        self.node, self.scope, self.name = node, scope, name
        self.const, self.what, self.info = const, what, info or {}
        # per dimension: the hyperparameter it is ("B", "T", "B * T") or None (a literal)
        self.sym = (None,) * len(self.shape)


class Sym(str):
    """An attribute value written as an expression of hyperparameters."""


def infer_sym(shape, ins):
    """A dimension is a hyperparameter where an input has that
    hyperparameter at the same position with the same size (left-aligned:
    batch and sequence dimensions lead; ops that move dimensions say their
    own)."""
    out = []
    for i, d in enumerate(shape):
        s = None
        for x in ins:
            xs = getattr(x, "sym", None)
            if xs and i < len(x.shape) and x.shape[i] == d and xs[i]:
                s = xs[i]
                break
        out.append(s)
    return tuple(out)


def reshape_sym(src, shape):
    """The leading dimensions a reshape keeps keep their hyperparameters; an
    output dimension that merges leading input dimensions is their product."""
    out, i = [], 0
    for j, d in enumerate(shape):
        if i < len(src.shape) and src.shape[i] == d:
            out.append(src.sym[i])
            i += 1
            continue
        prod, k = 1, i
        while k < len(src.shape) and prod < d:
            prod *= src.shape[k]
            k += 1
        if prod == d and k - i > 1 and any(src.sym[i:k]):
            out.append(" * ".join(src.sym[m] or str(src.shape[m]) for m in range(i, k)))
            i = k
            continue
        out.extend([None] * (len(shape) - j))
        break
    return tuple(out)


def dtype_of(node, t=None):
    """acc's dtype for a torch dtype: f32 for float32, i32 for integers."""
    if t is None:
        t = node.meta.get("val")
    dt = getattr(t, "dtype", None)
    if dt == torch.float32:
        return "f32"
    if dt in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        return "i32"
    if dt == torch.bool:
        return "bool"
    raise ImportFailure("%s: dtype %s is not supported (acc models compute in float32; cast the module with "
                        ".float() before exporting)" % (node.name, dt), node)


def shape_of(node):
    t = node.meta.get("val")
    return tuple(int(d) for d in t.shape)


def axis(d, rank):
    d = int(d)
    return d + rank if d < 0 else d


class Converter:
    """Builds Vals for ATen nodes (handlers in OPS) and writes them into
    scopes (torch_emit.Scope) when they are needed."""

    def __init__(self):
        self.scope = None  # the scope new Vals belong to
        self.hparams = {}  # recovered hyperparameters: name -> value
        self.caveats = []  # (message, node): mappings exact only on some data, printed as warnings

    def caveat(self, msg, node):
        """Say (once per message and source line) where the import is exact
        only on some data: nothing differs silently."""
        self.caveats.append((msg, node))

    # ---- making Vals ----
    def op(self, op, ins, attrs, shape, dtype="f32", node=None, sym=None):
        v = Val("op", shape, dtype, op=op, ins=ins, attrs=attrs, node=node, scope=self.scope)
        v.sym = tuple(sym) if sym is not None else infer_sym(v.shape, ins)
        return v

    def pending(self, what, node, shape, dtype="f32", **info):
        return Val("pending", shape, dtype, node=node, what=what, info=info, scope=self.scope)

    def reshape(self, v, shape, node=None):
        shape = tuple(shape)
        if v.shape == shape:
            return v
        if v.kind == "op" and v.op == "reshape" and v.name is None:
            return self.reshape(v.ins[0], shape, node)
        sym = reshape_sym(v, shape)
        dims = [Sym(y) if y else d for d, y in zip(shape, sym)]
        return self.op("reshape", [v], [("shape", dims)], shape, v.dtype, node, sym)

    def transpose(self, v, d0, d1, node=None):
        r = len(v.shape)
        d0, d1 = sorted((axis(d0, r), axis(d1, r)))
        if d0 == d1:
            return v
        if v.kind == "op" and v.op == "transpose" and v.name is None and v.info.get("dims") == (d0, d1):
            return v.ins[0]
        if d1 == d0 + 1 and 1 in (v.shape[d0], v.shape[d1]):  # moves a size-1 axis: the same order in memory
            s = list(v.shape)
            s[d0], s[d1] = s[d1], s[d0]
            return self.reshape(v, s, node)
        s, y = list(v.shape), list(v.sym)
        s[d0], s[d1] = s[d1], s[d0]
        y[d0], y[d1] = y[d1], y[d0]
        t = self.op("transpose", [v], [("dim0", d0), ("dim1", d1)], s, v.dtype, node, y)
        t.info["dims"] = (d0, d1)
        return t

    def heads_to_acc(self, v, node):
        """[B, H, T, D] (PyTorch's attention layout) -> [B, T, H*D] (acc's)."""
        b, h, t, d = v.shape
        return self.reshape(self.transpose(v, 1, 2, node), (b, t, h * d), node)

    def heads_from_acc(self, v, h, node):
        """[B, T, H*D] -> [B, H, T, D]."""
        b, t, hd = v.shape
        return self.transpose(self.reshape(v, (b, t, h, hd // h), node), 1, 2, node)

    # ---- writing Vals ----
    def name_of(self, v):
        """The DSL name of v, writing v (and what it needs) first."""
        if v.name is not None:
            return v.name
        if v.kind == "const":
            raise ImportFailure("a constant tensor (%s, computed from buffers or literals) is used by an op acc "
                                "cannot take it in: acc models have no constant tensors; make it a parameter "
                                "or an input" % (v.node.name if v.node is not None else "?"), v.node)
        if v.kind == "pending" and v.info.get("plain") is not None:  # a pattern's start, needed as itself
            v.name = self.name_of(v.info["plain"])
            return v.name
        if v.info.get("alias") is not None:  # the same acc tensor under another torch dtype (bool.float())
            v.name = self.name_of(v.info["alias"])
            return v.name
        if v.kind == "pending":
            raise ImportFailure("unsupported: %s" % v.what, v.node)
        args = [self.name_of(i) for i in v.ins]
        scope = v.scope
        name = scope.fresh(v.info.get("base") or v.op)
        kw = v.info.get("kw_ins", ())  # the last inputs are keyword operands (attention's mask=, bias=)
        if kw:
            args = args[:len(args) - len(kw)] + ["%s=%s" % (k, a) for k, a in zip(kw, args[len(args) - len(kw):])]
        if v.info.get("num") is not None:  # a comparison with a number: gt(x, 0.5)
            args.append(fmt(v.info["num"]))
        if v.op in ("add", "sub", "mul", "div") and not v.attrs:
            expr = "%s %s %s" % (args[0], {"add": "+", "sub": "-", "mul": "*", "div": "/"}[v.op], args[1])
        else:
            expr = "%s(%s)" % (v.op, ", ".join(args + ["%s=%s" % (k, fmt(a)) for k, a in v.attrs]))
        scope.lines.append("%s = %s;" % (name, expr))
        v.name = name
        return name


def fmt(a):
    """A DSL literal."""
    if isinstance(a, Sym):
        return str(a)
    if isinstance(a, bool):
        return "true" if a else "false"
    if isinstance(a, int):
        return str(a)
    if isinstance(a, float):
        s = repr(a)
        return s if ("." in s or "e" in s) else s + ".0"
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in a) + "]"
    raise TypeError(a)


# ---- handlers: (converter, node, args, kwargs) -> Val (or a list of Vals) ----
# args are the node's arguments with every graph node replaced by its Val.


def need(cond, msg, node):
    if not cond:
        raise ImportFailure(msg, node)


def is_val(x):
    return isinstance(x, Val)


def h_identity(c, n, a, k):
    """An alias (clone, contiguous, ...) or a dtype conversion: x.bool() of
    an i32 or f32 x is x != 0; .float() of a bool (acc's comparisons give
    float32 0/1 already) is the same tensor, of an integer tensor acc's
    float(x); nothing else converts."""
    v = a[0]
    out_dt = dtype_of(n)
    if out_dt == v.dtype:
        return v
    if out_dt == "bool" and v.dtype in ("i32", "f32") and v.kind in ("leaf", "op"):  # mask.bool(): mask != 0
        return cond_val(c, n, v, False)
    if out_dt == "f32" and v.dtype == "bool" and is_bool_val(v):
        f = Val("op", v.shape, "f32", op="alias", node=n, scope=c.scope, info={"alias": v})
        f.sym = v.sym
        return f
    if out_dt == "f32" and v.dtype == "i32" and v.kind in ("leaf", "op"):
        return c.op("float", [v], [], shape_of(n), "f32", n)
    raise ImportFailure("%s: a conversion from %s to %s; acc converts bool and integer tensors to float32 only "
                        "(its comparisons give float32 0/1, its integers are indices)" % (n.target, v.dtype, out_dt),
                        n)


def h_reshape(c, n, a, k):
    v, out = a[0], shape_of(n)
    if v.kind == "pending" and v.info.get("pat") == "cond":  # (m != 0).view(...) is m.view(...) != 0
        return cond_val(c, n, c.reshape(v.info["x"], out, n), v.info["neg"])
    if v.kind == "pending" and v.info.get("pat") == "kvexpand":
        b, h, s, d = v.info["x"].shape
        if out == (b, h * v.info["rep"], s, d):  # grouped-query attention's repeat_kv: kv head j // rep
            return c.pending(v.what, n, out, pat="gqa", x=v.info["x"])
    return c.reshape(v, out, n)


def h_numpy_t(c, n, a, k):
    v = a[0]
    return h_permute(c, n, [v, list(range(len(v.shape)))[::-1]], {})


def h_transpose(c, n, a, k):
    return c.transpose(a[0], a[1], a[2], n)


def h_t(c, n, a, k):
    need(len(a[0].shape) == 2, "aten.t: expected a matrix", n)
    return c.transpose(a[0], 0, 1, n)


def h_permute(c, n, a, k):
    v = a[0]
    r = len(v.shape)
    perm = [axis(d, r) for d in a[1]]
    cur = list(range(r))  # cur[i]: which original axis sits at position i
    for i in range(r):  # selection sort by swaps: each swap one acc transpose
        j = cur.index(perm[i])
        if j != i:
            v = c.transpose(v, i, j, n)
            cur[i], cur[j] = cur[j], cur[i]
    return v


def h_expand(c, n, a, k):
    v = a[0]
    out = shape_of(n)
    if v.shape == out:
        return v
    if v.kind == "op" and v.op == "reshape" and v.name is None and len(out) == 5 and len(v.ins[0].shape) == 4:
        b, h, s, d = v.ins[0].shape
        if v.shape == (b, h, 1, s, d) and out[:2] == (b, h) and out[3:] == (s, d):
            return c.pending("repeat_kv (x[:, :, None].expand(...).reshape(...)) is known only as the key or "
                             "value of scaled_dot_product_attention", n, out, pat="kvexpand", x=v.ins[0], rep=out[2])
    # broadcasting ops take the unexpanded tensor (same values)
    return c.pending("aten.expand (acc has no broadcast op; only an elementwise op may take it)", n, shape_of(n),
                     v.dtype, src=v)


def unexpand(v):
    if v.kind == "pending" and "src" in v.info:
        return v.info["src"]
    return v


def h_slice(c, n, a, k):
    v = a[0]
    r = len(v.shape)
    d = axis(a[1] if len(a) > 1 else 0, r)
    size = v.shape[d]
    start = a[2] if len(a) > 2 and a[2] is not None else 0
    end = a[3] if len(a) > 3 and a[3] is not None else size
    step = a[4] if len(a) > 4 else 1
    need(step == 1, "aten.slice with step %d: acc's slice takes consecutive elements" % step, n)
    start = max(0, min(size, start + size if start < 0 else start))
    end = max(start, min(size, end + size if end < 0 else end))
    if v.kind == "const":
        return const_val(c, n, v.const.narrow(d, start, end - start))
    if start == 0 and end == size:
        return v
    need(end > start, "aten.slice: an empty slice", n)
    s = list(v.shape)
    s[d] = end - start
    out = c.op("slice", [v], [("axis", d), ("start", start), ("len", end - start)], s, v.dtype, n)
    out.info["slice"] = (d, start, end - start)
    return out


def h_select(c, n, a, k):
    v = a[0]
    r = len(v.shape)
    d = axis(a[1], r)
    i = a[2] + v.shape[d] if a[2] < 0 else a[2]
    s = h_slice(c, n, [v, d, i, i + 1], {})
    return c.reshape(s, shape_of(n), n)


def h_split(c, n, a, k):
    v = a[0]
    size = a[1]
    d = axis(a[2] if len(a) > 2 else k.get("dim", 0), len(v.shape))
    parts, start = [], 0
    while start < v.shape[d]:
        ln = min(size, v.shape[d] - start)
        parts.append(h_slice(c, n, [v, d, start, start + ln], {}))
        start += ln
    return parts


def h_split_with_sizes(c, n, a, k):
    v = a[0]
    d = axis(a[2] if len(a) > 2 else k.get("dim", 0), len(v.shape))
    parts, start = [], 0
    for ln in a[1]:
        parts.append(h_slice(c, n, [v, d, start, start + ln], {}))
        start += ln
    return parts


def h_chunk(c, n, a, k):
    v = a[0]
    d = axis(a[2] if len(a) > 2 else k.get("dim", 0), len(v.shape))
    size = -(-v.shape[d] // a[1])
    return h_split(c, n, [v, size, d], {})


def h_cat(c, n, a, k):
    vs = list(a[0])
    d = axis(a[1] if len(a) > 1 else k.get("dim", 0), len(shape_of(n)))
    need(2 <= len(vs) <= 8, "aten.cat of %d tensors: acc's concat takes 2 to 8" % len(vs), n)
    return c.op("concat", vs, [("axis", d)], shape_of(n), vs[0].dtype, n)


def h_linear(c, n, a, k):
    x, w = a[0], a[1]
    b = a[2] if len(a) > 2 else None
    need(len(w.shape) == 2, "aten.linear: weight of rank %d" % len(w.shape), n)
    need(len(x.shape) >= 2, "aten.linear on a vector: acc's linear needs a batch dimension", n)
    if b is None:
        return c.op("matmul", [x, w], [("transpose_b", True)], shape_of(n), "f32", n)
    return c.op("linear", [x, w, b], [("transpose_b", True)], shape_of(n), "f32", n)


def matmul_operand(c, v):
    """v, or (u, True) when v is u with its last two axes swapped."""
    r = len(v.shape)
    if v.kind == "op" and v.op == "transpose" and v.name is None and v.info.get("dims") == (r - 2, r - 1):
        return v.ins[0], True
    return v, False


def h_matmul(c, n, a, k):
    x, w = a[0], a[1]
    need(len(x.shape) >= 2 and len(w.shape) >= 2, "%s on a vector: acc's matmul takes matrices" % n.target, n)
    need(len(w.shape) == 2 or (len(w.shape) == len(x.shape) and w.shape[:-2] == x.shape[:-2]),
         "%s: batch dimensions %s x %s; acc's matmul takes a matrix or equal batch dimensions (no broadcasting)"
         % (n.target, list(x.shape), list(w.shape)), n)
    x, ta = matmul_operand(c, x)
    w, tb = matmul_operand(c, w)
    attrs = ([("transpose_a", True)] if ta else []) + ([("transpose_b", True)] if tb else [])
    return c.op("matmul", [x, w], attrs, shape_of(n), "f32", n)


def h_addmm(c, n, a, k):
    need(k.get("beta", 1) == 1 and k.get("alpha", 1) == 1, "aten.addmm with beta or alpha", n)
    m = h_matmul(c, n, [a[1], a[2]], {})
    return binary(c, n, "add", m, a[0])


def is_const(v):
    return is_val(v) and v.kind == "const"


def as_float(c, n, v):
    """v, an integer tensor that PyTorch promotes to float32 here, as acc's
    float(v) (exact up to 2^24 in magnitude, as PyTorch's promotion)."""
    if is_val(v) and v.dtype == "i32" and v.kind in ("leaf", "op"):
        return c.op("float", [v], [], v.shape, "f32", n, v.sym)
    return v


def binary(c, n, op, x, y):
    """add/sub/mul/div of two tensors, or a tensor and a number. An integer
    tensor is promoted (float), also where PyTorch's result stays an integer
    tensor (1 - mask): acc's arithmetic is float, of the same values up to
    2^24 in magnitude; an index computed so is refused where it is used."""
    if not is_val(x) and not is_val(y):
        raise ImportFailure("%s of two numbers" % n.target, n)
    x, y = as_float(c, n, x), as_float(c, n, y)
    if not is_val(y) or not is_val(x):  # a tensor and a number
        t, s = (x, y) if is_val(x) else (y, x)
        s = float(s)
        need(math.isfinite(s), "%s with the number %r: acc's DSL has no infinite or NaN literal" % (n.target, s), n)
        if op == "mul" or (op == "div" and is_val(x)):
            alpha = s if op == "mul" else 1.0 / s
            return c.op("scale", [t], [("alpha", alpha)], shape_of(n), "f32", n)
        if op == "add" and t.kind == "pending" and t.info.get("pat") == "meansq":
            return c.pending("mean(x*x) + eps outside RMSNorm", n, shape_of(n), pat="meansq_eps", x=t.info["x"],
                             eps=s, plain=c.op("shift", [t], [("beta", s)], shape_of(n), "f32", n))
        if op == "div":
            return c.pending("%s of a number by a tensor (acc's DSL has no number / tensor)" % n.target, n,
                             shape_of(n))
        if op == "sub" and is_val(y):  # s - t: -t + s
            t = c.op("scale", [t], [("alpha", -1.0)], shape_of(n), "f32", n)
            return c.op("shift", [t], [("beta", s)], shape_of(n), "f32", n)
        return c.op("shift", [t], [("beta", s if op == "add" else -s)], shape_of(n), "f32", n)
    x, y = unexpand(x), unexpand(y)
    if op == "mul":
        for p, q in ((x, y), (y, x)):
            if p.kind == "pending" and p.info.get("pat") == "rstd" and p.info["x"] is q:
                return c.pending("x * rsqrt(mean(x^2) + eps)", n, shape_of(n), pat="rms0", x=q,
                                 eps=p.info["eps"], plain=c.op("mul", [x, y], [], shape_of(n), "f32", n))
            if p.kind == "pending" and p.info.get("pat") == "rms0" and q.kind in ("leaf", "op") and \
                    len(q.shape) == 1 and q.shape[0] == p.shape[-1]:
                return c.op("rmsnorm", [p.info["x"], q], [("eps", p.info["eps"])], shape_of(n), "f32", n)
            if is_const(p) and q.kind in ("leaf", "op"):
                return c.pending("aten.mul.Tensor by a constant tensor (acc has no constant tensors; the "
                                 "patterns it knows: rotary embeddings q * cos + rotate_half(q) * sin)", n,
                                 shape_of(n), pat="mulconst", x=q, k=p.const)
    if op == "div":
        if y.kind == "pending" and y.info.get("pat") == "std":
            return c.pending("x / sqrt(mean(x^2) + eps)", n, shape_of(n), pat="rms0", x=x, eps=y.info["eps"],
                             plain=c.op("div", [x, y], [], shape_of(n), "f32", n)) if y.info["x"] is x else \
                c.op("div", [x, y], [], shape_of(n), "f32", n)
    if op == "add" and x.kind == "pending" and y.kind == "pending" and \
            x.info.get("pat") == "mulconst" and y.info.get("pat") == "mulconst":
        r = rope(c, n, x, y) or rope(c, n, y, x)
        if r is not None:
            return r
    if x.kind == "const" or y.kind == "const":
        raise ImportFailure("%s with a constant tensor: acc models have no constant tensors" % n.target, n)
    return c.op(op, [x, y], [], shape_of(n), "f32", n)


def h_binary(op):
    def h(c, n, a, k):
        need(k.get("alpha", 1) == 1, "%s with alpha" % n.target, n)
        need(k.get("rounding_mode") is None, "%s with rounding_mode" % n.target, n)
        return binary(c, n, op, a[0], a[1])

    return h


def h_rsub(c, n, a, k):
    need(k.get("alpha", 1) == 1, "%s with alpha" % n.target, n)
    return binary(c, n, "sub", a[1], a[0])


def h_neg(c, n, a, k):
    return c.op("scale", [a[0]], [("alpha", -1.0)], shape_of(n), "f32", n)


def h_unary(op):
    def h(c, n, a, k):
        return c.op(op, [a[0]], [], shape_of(n), "f32", n)

    return h


def h_gelu(c, n, a, k):
    """approximate='tanh' is acc's gelu; 'none' (erf) is gelu_erf, what the
    DSL writes gelu(x, exact=true)."""
    approx = k.get("approximate", a[1] if len(a) > 1 else "none")
    need(approx in ("tanh", "none"), "aten.gelu with approximate='%s'" % approx, n)
    return c.op("gelu" if approx == "tanh" else "gelu_erf", [a[0]], [], shape_of(n), "f32", n)


def h_pow(c, n, a, k):
    if a[1] == 2:  # x * x: what PyTorch computes for pow(x, 2), to the bit
        return c.op("mul", [a[0], a[0]], [], shape_of(n), "f32", n)
    if a[1] == 1:
        return a[0]
    return c.pending("aten.pow.Tensor_Scalar with exponent %r (acc has x * x for exponent 2)" % a[1], n,
                     shape_of(n))


def reduce_dims(n, a, k, rank):
    dims = a[1] if len(a) > 1 else k.get("dim")
    keep = a[2] if len(a) > 2 else k.get("keepdim", False)
    dt = a[3] if len(a) > 3 else k.get("dtype")
    need(dt is None or dt == torch.float32, "%s with dtype %s" % (n.target, dt), n)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return None, keep
    if isinstance(dims, int):
        dims = [dims]
    need(len(dims) == 1, "%s over several dimensions %s: acc's reductions take one axis (or all)" % (
        n.target, list(dims)), n)
    return axis(dims[0], rank), keep


def h_reduce(op):
    """sum, mean, max, min over one axis or all; out: the result's shape
    (the node's own by default)."""

    def h(c, n, a, k, out=None):
        v = a[0]
        out = shape_of(n) if out is None else out
        d, keep = reduce_dims(n, a, k, len(v.shape))
        attrs = [] if d is None else [("axis", d)]
        if keep:
            attrs.append(("keepdim", True))
        sym = [] if d is None else list(v.sym)
        if d is not None:
            if keep:
                sym[d] = None
            else:
                del sym[d]
        if d is None and keep:
            sym = [None] * len(v.shape)
        r = c.op(op, [v], attrs, out, "f32", n, sym)
        if op in ("max", "min"):
            c.caveat("%s: where several elements tie for the %s, acc gives the gradient to the first of them "
                     "and PyTorch splits it evenly" % (n.target, op), n)
        if op == "mean" and v.kind == "op" and v.op == "mul" and v.name is None and v.ins[0] is v.ins[1] and \
                d == len(v.shape) - 1 and keep:  # perhaps RMSNorm's mean(x^2)
            return c.pending("mean of x*x", n, out, pat="meansq", x=v.ins[0], plain=r)
        return r

    return h


def h_max_dim(op):
    """max.dim/min.dim: (values, indices). The values are acc's max/min;
    the indices (argmax) are refused where something reads them."""

    def h(c, n, a, k):
        v = a[0]
        vals = h_reduce(op)(c, n, [v, a[1], a[2] if len(a) > 2 else k.get("keepdim", False)], {},
                            shape_of_item(n, 0))
        idx = c.pending("the indices of %s (acc's %s gives the values only; there is no argmax)" % (n.target, op),
                        n, shape_of_item(n, 1), "i32")
        return [vals, idx]

    return h


def shape_of_item(n, i):
    return tuple(int(d) for d in n.meta.get("val")[i].shape)


def cond_val(c, n, v, neg):
    """A bool mask known as `v != 0` (neg False) or `v == 0` (neg True):
    where (and masked_fill) take v itself as their cond; anything else reads
    the comparison ne(v, 0.0) or eq(v, 0.0) (plain)."""
    plain = c.op("eq" if neg else "ne", [v], [], shape_of(n), "bool", n)
    plain.info["num"] = 0.0
    return c.pending("a bool tensor", n, shape_of(n), "bool", pat="cond", x=v, neg=neg, plain=plain)


def is_bool_val(v):
    """A bool tensor acc holds: a comparison (float32 0/1), or the mask != 0
    pattern (written as one where its value is needed)."""
    return is_val(v) and v.dtype == "bool" and (v.kind in ("leaf", "op") or v.info.get("plain") is not None)


MIRROR = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def compare(c, n, op, x, y):
    """acc's comparison op of two tensors (broadcasting) or of a tensor and
    a number; a bool result, which acc holds as float32 0 and 1."""
    if not is_val(x) and not is_val(y):
        raise ImportFailure("%s of two numbers" % n.target, n)
    if not is_val(x):  # s < t is t > s
        x, y, op = y, x, MIRROR[op]
    for t in (x, y):
        need(not is_val(t) or t.kind != "const", "%s with a constant tensor: acc models have no constant tensors"
             % n.target, n)
    if not is_val(y):
        s = float(y)
        need(math.isfinite(s), "%s with the number %r: acc's DSL has no infinite or NaN literal" % (n.target, s), n)
        v = c.op(op, [x], [], shape_of(n), "bool", n)
        v.info["num"] = s
        return v
    return c.op(op, [unexpand(x), unexpand(y)], [], shape_of(n), "bool", n)


def h_compare(op):
    """eq/ne/lt/le/gt/ge (.Tensor, .Scalar). m != 0 and m == 0 of an i32 or
    f32 tensor stay the mask pattern where and masked_fill take as m itself
    (no comparison written), and are written as the comparison elsewhere."""

    def h(c, n, a, k):
        v, s = a[0], a[1]
        if op in ("ne", "eq") and is_val(v) and v.kind in ("leaf", "op") and v.dtype != "bool" and \
                not is_val(s) and s == 0:
            return cond_val(c, n, v, op == "eq")
        return compare(c, n, op, v, s)

    return h


def h_not(c, n, a, k):
    """~b and logical_not(b) of a bool tensor acc holds: m != 0 becomes
    m == 0 and back (the mask pattern kept), any other comparison eq(b, 0.0)
    of its 0/1 (exact, NaN included: ~(x < y) is true where x is NaN)."""
    v = a[0]
    need(is_bool_val(v), "%s of a tensor that is not a bool tensor acc computes (a comparison, or mask.bool() of "
         "an i32 or f32 mask): acc has no integer bitwise operations" % n.target, n)
    if v.info.get("pat") == "cond":
        return cond_val(c, n, v.info["x"], not v.info["neg"])
    e = c.op("eq", [v], [], shape_of(n), "bool", n)
    e.info["num"] = 0.0
    return e


def fill_like(c, n, t, s):
    """A tensor of t's shape filled with the number s: t * 0.0 + s (acc has no
    constant tensors; exact where t is finite)."""
    s = float(s)
    need(math.isfinite(s), "%s with the fill value %r: acc's DSL has no infinite or NaN literal (a large finite "
         "value such as -1e4 works)" % (n.target, s), n)
    c.caveat("%s: the number %r is filled in as t * 0.0 + %r, which is NaN where t is infinite or NaN (PyTorch "
             "gives %r there)" % (n.target, s, s, s), n)
    z = c.op("scale", [t], [("alpha", 0.0)], t.shape, "f32", n)
    return z if s == 0 else c.op("shift", [z], [("beta", s)], t.shape, "f32", n)


def where(c, n, cond, x, y):
    """acc's where(cond, x, y); x or y may be a number (filled from the other).
    cond: m != 0 or m == 0 (m itself, the branches swapped for ==), or any
    other bool tensor (a comparison's 0/1)."""
    need(is_bool_val(cond), "%s with a condition acc cannot take: it takes a bool tensor (a comparison, or "
         "mask.bool() of an i32 or f32 mask)" % n.target, n)
    if not is_val(x) and not is_val(y):
        raise ImportFailure("%s of two numbers" % n.target, n)
    x = unexpand(x) if is_val(x) else fill_like(c, n, unexpand(y), x)
    y = unexpand(y) if is_val(y) else fill_like(c, n, x, y)
    for t in (x, y):
        need(t.kind != "const", "%s with a constant tensor: acc models have no constant tensors" % n.target, n)
    if cond.info.get("pat") != "cond":
        return c.op("where", [unexpand(cond), x, y], [], shape_of(n), "f32", n)
    if cond.info["neg"]:
        x, y = y, x
    return c.op("where", [cond.info["x"], x, y], [], shape_of(n), "f32", n)


def h_where(c, n, a, k):
    return where(c, n, a[0], a[1], a[2])


def h_masked_fill(c, n, a, k):
    v, mask, s = a[0], a[1], a[2]
    if is_val(s):
        need(s.kind == "const" and s.const.dim() == 0, "%s with a tensor fill value" % n.target, n)
        s = float(s.const)
    return where(c, n, mask, s, v)


def h_rsqrt(c, n, a, k):
    """acc's rsqrt; inside RMSNorm (rsqrt(mean(x*x) + eps)) the start of
    that pattern, written as rsqrt where its value is needed."""
    v = a[0]
    r = c.op("rsqrt", [v], [], shape_of(n), "f32", n)
    if v.kind == "pending" and v.info.get("pat") == "meansq_eps":
        return c.pending("aten.rsqrt", n, shape_of(n), pat="rstd", x=v.info["x"], eps=v.info["eps"], plain=r)
    return r


def h_sqrt(c, n, a, k):
    """acc's sqrt; sqrt(mean(x*x) + eps) is RMSNorm's divisor (see h_rsqrt)."""
    v = a[0]
    r = c.op("sqrt", [v], [], shape_of(n), "f32", n)
    if v.kind == "pending" and v.info.get("pat") == "meansq_eps":
        return c.pending("aten.sqrt", n, shape_of(n), pat="std", x=v.info["x"], eps=v.info["eps"], plain=r)
    return r


def h_rms_norm(c, n, a, k):
    x, shape = a[0], a[1]
    w = a[2] if len(a) > 2 else None
    eps = a[3] if len(a) > 3 else None
    need(len(shape) == 1, "aten.rms_norm over %d dimensions: acc's rmsnorm normalizes the last one" % len(shape), n)
    need(w is not None, "aten.rms_norm without a weight: acc's rmsnorm has one", n)
    if eps is None:
        eps = float(torch.finfo(torch.float32).eps)
    return c.op("rmsnorm", [x, w], [("eps", float(eps))], shape_of(n), "f32", n)


def h_layer_norm(c, n, a, k):
    x, shape = a[0], a[1]
    w = a[2] if len(a) > 2 else None
    b = a[3] if len(a) > 3 else None
    eps = a[4] if len(a) > 4 else 1e-5
    need(len(shape) == 1, "aten.layer_norm over %d dimensions: acc's layernorm normalizes the last one"
         % len(shape), n)
    need(w is not None, "aten.layer_norm without a weight: acc's layernorm has one (nn.LayerNorm("
         "elementwise_affine=True))", n)
    return c.op("layernorm", [x, w] + ([b] if b is not None else []), [("eps", float(eps))], shape_of(n), "f32", n)


def h_softmax(c, n, a, k):
    v = a[0]
    need(axis(a[1], len(v.shape)) == len(v.shape) - 1, "%s over dimension %d: acc's softmax is over the last one"
         % (n.target, a[1]), n)
    return c.op("softmax", [v], [], shape_of(n), "f32", n)


def h_log_softmax(c, n, a, k):
    v = a[0]
    if axis(a[1], len(v.shape)) == len(v.shape) - 1:
        return c.pending("aten.log_softmax (acc has it only inside cross-entropy: log_softmax then nll_loss)", n,
                         shape_of(n), pat="logsoftmax", x=v)
    return c.pending("aten.log_softmax over a dimension other than the last", n, shape_of(n))


def flat_pair(c, logits, targets):
    """Undo the flattening F.cross_entropy(logits.view(-1, V), t.view(-1))
    does: acc's cross_entropy takes [..., V] and [...] as they are."""
    if logits.kind == "op" and logits.op == "reshape" and logits.name is None and \
            targets.kind == "op" and targets.op == "reshape" and targets.name is None:
        lo, to = logits.ins[0], targets.ins[0]
        if lo.shape[:-1] == to.shape and lo.shape[-1] == logits.shape[-1]:
            return lo, to
    return logits, targets


def cross_entropy(c, n, logits, targets, weight, reduction, ignore_index, smoothing):
    need(weight is None, "%s with class weights" % n.target, n)
    need(reduction == 1, "%s with reduction=%s: acc's cross_entropy is the mean" % (
        n.target, {0: "'none'", 2: "'sum'"}.get(reduction, reduction)), n)
    need(not smoothing, "%s with label_smoothing" % n.target, n)
    need(targets.dtype == "i32", "%s with probability targets: acc's cross_entropy takes class indices" % n.target, n)
    need(len(targets.shape) == len(logits.shape) - 1, "%s with logits %s and targets %s" % (
        n.target, list(logits.shape), list(targets.shape)), n)
    logits, targets = flat_pair(c, logits, targets)
    out = c.op("cross_entropy", [logits, targets], [], (), "f32", n)
    out.info["ignore_index"] = ignore_index
    return out


def h_cross_entropy(c, n, a, k):
    g = lambda i, key, d: a[i] if len(a) > i else k.get(key, d)  # noqa: E731
    return cross_entropy(c, n, a[0], a[1], g(2, "weight", None), g(3, "reduction", 1), g(4, "ignore_index", -100),
                         g(5, "label_smoothing", 0.0))


def h_nll_loss(c, n, a, k):
    x = a[0]
    need(x.kind == "pending" and x.info.get("pat") == "logsoftmax",
         "%s on something other than log_softmax: acc has cross-entropy (log_softmax then nll_loss) only" % n.target,
         n)
    g = lambda i, key, d: a[i] if len(a) > i else k.get(key, d)  # noqa: E731
    return cross_entropy(c, n, x.info["x"], a[1], g(2, "weight", None), g(3, "reduction", 1),
                         g(4, "ignore_index", -100), 0.0)


def h_embedding(c, n, a, k):
    w, idx = a[0], a[1]
    need(len(w.shape) == 2, "aten.embedding: table of rank %d" % len(w.shape), n)
    need((a[2] if len(a) > 2 else -1) == -1, "aten.embedding with padding_idx: its gradient differs from acc's "
         "embedding", n)
    if idx.kind == "const":  # positions: arange(0, T) picks the first T rows
        ids = idx.const.reshape(-1).tolist()
        need(idx.const.dim() == 1 and ids == list(range(len(ids))),
             "aten.embedding with constant indices other than arange(0, T)", n)
        if len(ids) == w.shape[0]:
            return w
        out = h_slice(c, n, [w, 0, 0, len(ids)], {})
        if c.hparams.get("T") == len(ids):  # positions 0 .. T-1 of the sequence
            out.attrs = [("axis", 0), ("start", 0), ("len", Sym("T"))]
            out.sym = ("T",) + out.sym[1:]
        return out
    need(idx.dtype == "i32", "aten.embedding: indices of dtype %s" % idx.dtype, n)
    return c.op("embedding", [idx, w], [], shape_of(n), "f32", n)


def h_dropout(c, n, a, k):
    p = a[1] if len(a) > 1 else k.get("p", 0.5)
    train = a[2] if len(a) > 2 else k.get("train", True)
    if not train or p == 0:
        return a[0]
    return c.op("dropout", [a[0]], [("p", float(p))], shape_of(n), "f32", n)


def h_sdpa(c, n, a, k):
    q, kk, v = a[0], a[1], a[2]
    g = lambda i, key, d: a[i] if len(a) > i else k.get(key, d)  # noqa: E731
    if kk.kind == "pending" and kk.info.get("pat") == "gqa" and v.kind == "pending" and v.info.get("pat") == "gqa":
        kk, v = kk.info["x"], v.info["x"]  # repeat_kv written out: acc's attention takes the kv heads as they are
        need(kk.shape == v.shape, "scaled_dot_product_attention: k and v repeated differently", n)
        need(q.shape[1] % kk.shape[1] == 0, "scaled_dot_product_attention: repeat_kv to a head count other than "
             "q's", n)
        k = dict(k, enable_gqa=True)
        a = list(a[:7])
    need(g(4, "dropout_p", 0.0) == 0.0, "scaled_dot_product_attention with dropout_p: acc's attention has no "
         "dropout", n)
    causal = bool(g(5, "is_causal", False))
    need(len(q.shape) == 4 and len(kk.shape) == 4 and kk.shape == v.shape,
         "scaled_dot_product_attention: expected q [B, H, T, D] and k, v [B, KVH, T, D], got %s, %s, %s" % (
             list(q.shape), list(kk.shape), list(v.shape)), n)
    b, h, t, d = q.shape
    kvh = kk.shape[1]
    scale = g(6, "scale", None)
    need(scale is None or abs(scale * math.sqrt(d) - 1) < 1e-6, "scaled_dot_product_attention with scale=%r: "
         "acc's attention scales by 1/sqrt(head size)" % scale, n)
    need(kvh == h or g(7, "enable_gqa", False), "scaled_dot_product_attention: %d key heads for %d query heads "
         "without enable_gqa" % (kvh, h), n)
    need(h % kvh == 0, "scaled_dot_product_attention: %d query heads is not a multiple of %d key heads" % (h, kvh), n)
    need(not causal or kk.shape[2] == t, "causal attention with %d queries and %d keys" % (t, kk.shape[2]), n)
    attrs = [("heads", h)] + ([("kv_heads", kvh)] if kvh != h else []) + [("causal", causal)]
    ins, kw = [c.heads_to_acc(q, n), c.heads_to_acc(kk, n), c.heads_to_acc(v, n)], []
    m = g(3, "attn_mask", None)
    if m is not None:
        ins.append(sdpa_mask(c, n, m, (b, h, t, kk.shape[2])))
        kw.append("mask" if is_bool_val(unexpand(m) if is_val(m) else m) else "bias")
    o = c.op("attention", ins, attrs, (b, t, h * d), "f32", n)
    o.info["kw_ins"] = tuple(kw)
    return c.heads_from_acc(o, h, n)


def sdpa_mask(c, n, m, full):
    """scaled_dot_product_attention's attn_mask as acc's attention takes it.
    A boolean mask (True attends) of any shape that broadcasts to [B, H, Tq,
    Tk], aligned from the last dimension as PyTorch aligns it, becomes mask=:
    m != 0 or m.bool() of an i32 or f32 m the tensor m itself, m == 0
    eq(m, 0.0), any other bool tensor (ids != pad, a comparison of segment
    ids) that comparison's 0/1. A key-padding mask ([B or 1, 1, 1, Tk]) is
    passed as acc's rank-2 [B, Tk]; a mask over queries too as a rank-4
    [B or 1, H or 1, Tq, Tk] (acc reads a rank-2 mask as [B, Tk], so a [Tq,
    Tk] one must not stay rank 2). A float mask, added to the scores,
    becomes bias= (broadcast to [B, H, Tq, Tk] as PyTorch broadcasts it)."""
    b, h, t, s = full
    m = unexpand(m) if is_val(m) else m
    if is_bool_val(m):
        shape = tuple(m.shape)
        need(1 <= len(shape) <= 4 and all(x in (1, y) for x, y in zip(shape[::-1], full[::-1])),
             "scaled_dot_product_attention with a boolean attn_mask of shape %s: it must broadcast to [B, H, Tq, "
             "Tk] = %s" % (list(shape), list(full)), n)
        p4 = (1,) * (4 - len(shape)) + shape
        to = (p4[0], s) if p4[1] == 1 and p4[2] == 1 else p4  # [B, Tk] key padding, else rank 4
        if m.info.get("pat") == "cond":  # m != 0: mask=m; m == 0: mask=eq(m, 0.0)
            x = c.reshape(m.info["x"], to, n)
            if not m.info["neg"]:
                return x
            e = c.op("eq", [x], [], to, "bool", n)
            e.info["num"] = 0.0
            return e
        return c.reshape(m, to, n)
    need(is_val(m) and m.kind in ("leaf", "op") and m.dtype == "f32",
         "scaled_dot_product_attention with this attn_mask (%s): acc takes a boolean mask it computes (a "
         "comparison, or m.bool() of an i32 or f32 tensor; not a constant such as a causal tril buffer: use "
         "is_causal=True) or a float mask added to the scores"
         % (m.what if is_val(m) and m.kind == "pending" else "a constant tensor" if is_val(m) and m.kind == "const"
            else getattr(m, "dtype", type(m).__name__)), n)
    shape = tuple(m.shape)
    need(1 <= len(shape) <= 4 and all(x in (1, y) for x, y in zip(shape[::-1], full[::-1])),
         "scaled_dot_product_attention with a float attn_mask of shape %s: it must broadcast to [B, H, Tq, Tk] = %s"
         % (list(shape), list(full)), n)
    return m


def rope(c, n, qc, rs):
    """q * cos + rotate_half(q) * sin -> acc's rope, or None if this is not
    that pattern. rotate_half(q) = cat(-q[..., D/2:], q[..., :D/2]); the
    tables must be cos/sin(t * theta^(-2i/D)) at every position t along q's
    sequence axis (checked, to float32 accuracy, with theta read off them)."""
    q, cos, r, sin = qc.info["x"], qc.info["k"], rs.info["x"], rs.info["k"]
    dd = q.shape[-1]
    if len(q.shape) != 4 or dd % 2 or not (r.kind == "op" and r.op == "concat" and len(r.ins) == 2):
        return None
    neg, first = r.ins
    half = dd // 2
    if not (neg.kind == "op" and neg.op == "scale" and neg.attrs == [("alpha", -1.0)]):
        return None
    second = neg.ins[0]
    last = len(q.shape) - 1
    if not (second.kind == "op" and second.op == "slice" and second.ins[0] is q and
            second.info["slice"] == (last, half, half)):
        return None
    if not (first.kind == "op" and first.op == "slice" and first.ins[0] is q and first.info["slice"] == (last, 0, half)):
        return None
    cos = torch.broadcast_to(cos.double(), q.shape)
    sin = torch.broadcast_to(sin.double(), q.shape)
    for ta, layout in ((2, "bhtd"), (1, "bthd")):
        t = q.shape[ta]
        if t < 2:
            continue
        idx = [0] * 4
        idx[ta] = 1
        idx[3] = 1
        if half >= 2:
            ang = math.atan2(float(sin[tuple(idx)]), float(cos[tuple(idx)]))
            if ang <= 0:
                continue
            theta = float("%.5g" % (ang ** (-dd / 2)))
        else:
            theta = 10000.0
        inv = torch.tensor([theta ** (-2.0 * i / dd) for i in range(half)], dtype=torch.float64)
        shape = [1, 1, 1, dd]
        shape[ta] = t
        angle = (torch.arange(t, dtype=torch.float64).reshape(-1, 1) * torch.cat([inv, inv])).reshape(shape)
        tol = 1e-6 + 4e-7 * t
        if (cos - angle.cos()).abs().max() <= tol and (sin - angle.sin()).abs().max() <= tol:
            heads = q.shape[1] if layout == "bhtd" else q.shape[2]
            x = c.heads_to_acc(q, n) if layout == "bhtd" else c.reshape(q, (q.shape[0], t, heads * dd), n)
            o = c.op("rope", [x], [("heads", heads), ("theta", theta)], x.shape, "f32", n)
            return c.heads_from_acc(o, heads, n) if layout == "bhtd" else c.reshape(o, q.shape, n)
    return None


def const_val(c, n, t):
    return Val("const", t.shape, dtype_of(n, t) if t.dtype != torch.bool else "bool", node=n, const=t, scope=c.scope)


def h_getitem(c, n, a, k):
    seq, i = a[0], a[1]
    need(isinstance(seq, (list, tuple)), "getitem on something other than a list of tensors", n)
    return seq[i]


OPS = {
    "aten.linear.default": h_linear,
    "aten.matmul.default": h_matmul,
    "aten.mm.default": h_matmul,
    "aten.bmm.default": h_matmul,
    "aten.addmm.default": h_addmm,
    "aten.t.default": h_t,
    "aten.numpy_T.default": h_numpy_t,
    "aten.transpose.int": h_transpose,
    "aten.permute.default": h_permute,
    "aten.add.Tensor": h_binary("add"),
    "aten.sub.Tensor": h_binary("sub"),
    "aten.rsub.Scalar": h_rsub,
    "aten.mul.Tensor": h_binary("mul"),
    "aten.div.Tensor": h_binary("div"),
    "aten.neg.default": h_neg,
    "aten.gelu.default": h_gelu,
    "aten.relu.default": h_unary("relu"),
    "aten.silu.default": h_unary("silu"),
    "aten.tanh.default": h_unary("tanh"),
    "aten.exp.default": h_unary("exp"),
    "aten.sigmoid.default": h_unary("sigmoid"),
    "aten.log.default": h_unary("log"),
    "aten.where.self": h_where,
    "aten.where.ScalarSelf": h_where,
    "aten.where.ScalarOther": h_where,
    "aten.masked_fill.Scalar": h_masked_fill,
    "aten.masked_fill.Tensor": h_masked_fill,
    "aten.eq.Scalar": h_compare("eq"),
    "aten.ne.Scalar": h_compare("ne"),
    "aten.lt.Scalar": h_compare("lt"),
    "aten.le.Scalar": h_compare("le"),
    "aten.gt.Scalar": h_compare("gt"),
    "aten.ge.Scalar": h_compare("ge"),
    "aten.eq.Tensor": h_compare("eq"),
    "aten.ne.Tensor": h_compare("ne"),
    "aten.lt.Tensor": h_compare("lt"),
    "aten.le.Tensor": h_compare("le"),
    "aten.gt.Tensor": h_compare("gt"),
    "aten.ge.Tensor": h_compare("ge"),
    "aten.bitwise_not.default": h_not,
    "aten.logical_not.default": h_not,
    "aten.abs.default": h_unary("abs"),
    "aten.layer_norm.default": h_layer_norm,
    "aten.rms_norm.default": h_rms_norm,
    "aten.pow.Tensor_Scalar": h_pow,
    "aten.rsqrt.default": h_rsqrt,
    "aten.sqrt.default": h_sqrt,
    "aten.softmax.int": h_softmax,
    "aten._softmax.default": h_softmax,
    "aten.log_softmax.int": h_log_softmax,
    "aten._log_softmax.default": h_log_softmax,
    "aten.scaled_dot_product_attention.default": h_sdpa,
    "aten.embedding.default": h_embedding,
    "aten.cross_entropy_loss.default": h_cross_entropy,
    "aten.nll_loss.default": h_nll_loss,
    "aten.nll_loss_forward.default": h_nll_loss,
    "aten.dropout.default": h_dropout,
    "aten.view.default": h_reshape,
    "aten.reshape.default": h_reshape,
    "aten._unsafe_view.default": h_reshape,
    "aten.flatten.using_ints": h_reshape,
    "aten.unsqueeze.default": h_reshape,
    "aten.squeeze.dim": h_reshape,
    "aten.squeeze.dims": h_reshape,
    "aten.expand.default": h_expand,
    "aten.slice.Tensor": h_slice,
    "aten.select.int": h_select,
    "aten.split.Tensor": h_split,
    "aten.split_with_sizes.default": h_split_with_sizes,
    "aten.chunk.default": h_chunk,
    "aten.cat.default": h_cat,
    "aten.sum.dim_IntList": h_reduce("sum"),
    "aten.sum.default": h_reduce("sum"),
    "aten.mean.dim": h_reduce("mean"),
    "aten.mean.default": h_reduce("mean"),
    "aten.amax.default": h_reduce("max"),
    "aten.amin.default": h_reduce("min"),
    "aten.max.default": h_reduce("max"),
    "aten.min.default": h_reduce("min"),
    "aten.max.dim": h_max_dim("max"),
    "aten.min.dim": h_max_dim("min"),
    "aten.contiguous.default": h_identity,
    "aten.clone.default": h_identity,
    "aten.alias.default": h_identity,
    "aten.detach.default": h_identity,
    "aten.to.dtype": h_identity,
    "aten.to.dtype_layout": h_identity,
    "aten._to_copy.default": h_identity,
    "aten.type_as.default": h_identity,
    "<built-in function getitem>": h_getitem,
}

# ops whose result is their input (when the dtype does not change)
ALIASES = {k for k, h in OPS.items() if h is h_identity}

# asserts and shape bookkeeping torch.export inserts: no value
IGNORED = ("aten._assert_tensor_metadata.default", "aten._assert_scalar.default", "aten.sym_constrain_range_for_size")


def supported_ops():
    return sorted(k for k in OPS if k.startswith("aten."))
