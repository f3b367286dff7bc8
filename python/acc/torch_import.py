"""torch_import.py - `acc import`: a torch.nn.Module -> an acc model (.acdsl) and its parameters.

    python3 -m acc import --module mymodel.py:build -o DIR [--name NAME]

FUNC() (here `build`) takes no arguments and returns `(module, example_inputs)`:
the module's forward takes the example inputs positionally (int64/int32
token ids or class labels, float32 features) and returns the training loss,
a float32 scalar. The module is exported with torch.export.export in its
current mode (train() by default, so dropout is kept) and its ATen graph is
mapped onto acc's ops (acc/torch_ops.py). Written into DIR:

    NAME.acdsl        the model: inputs, parameters named after the module's
                      parameters, repeated layers as a `repeat` (hparam L),
                      submodules as blocks, so `layers.7.attn.wq.weight` in
                      PyTorch is `layers.7.attn.wq.weight` in acc's plans and
                      reports; batch and sequence length as hparams B and T
    NAME.params.bin   the module's parameter values in libaccrt's tensor
                      format, in the model's parameter order (acc run
                      --params, acc_load_params)
    NAME.inputs.bin   the example inputs (acc run --inputs, acc_load_inputs)
    NAME.names        one line per parameter: its acc name, its PyTorch name

Which graph: the one torch.export.export returns (ATen ops before
run_decompositions). It keeps nn.Linear as aten.linear, nn.LayerNorm as
aten.layer_norm, F.scaled_dot_product_attention and F.cross_entropy as one
op each, which is what acc's ops are; the core-ATen graph after
run_decompositions would split each of them into a dozen primitives that
would have to be pattern-matched back together.

Exit status: 0 written, 1 the module cannot be imported (the message names
the ATen op and the line of the module's source that produced it), 2 usage.
"""
import argparse
import ctypes
import importlib.util
import os
import re
import struct
import sys
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

try:
    import torch
except ImportError:  # reported by main()
    torch = None

if torch is not None:
    from acc.torch_ops import ALIASES, IGNORED, OPS, Converter, ImportFailure, Val, dtype_of, shape_of, supported_ops

KEYWORDS = {"model", "hparam", "input", "param", "block", "repeat", "as", "return", "loss", "save", "recompute",
            "precision", "optimizer_state", "true", "false"}
# names the importer never gives a variable: acc's op names, builtins, dtypes, initializers
RESERVED = KEYWORDS | {"matmul", "linear", "add", "sub", "mul", "div", "scale", "gelu", "relu", "silu", "tanh", "exp",
                       "layernorm", "rmsnorm", "softmax", "attention", "rope", "embedding", "cross_entropy",
                       "dropout", "reshape", "transpose", "slice", "concat", "sum", "mean", "split", "sqrt", "shift",
                       "gelu_erf", "sigmoid", "log", "where", "max", "min", "f32", "i32", "bf16", "f16", "zeros",
                       "ones", "normal", "uniform", "input", "param"}
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Scope:
    """One body of the DSL being written: the top level, a block's body or a
    repeat's body. path: the torch module path it stands for (a repeat body:
    the first layer's); names: the names bound in this body, shared with the
    bodies around it up to the enclosing block (so a name in a repeat body
    never rebinds an outer one by accident); taken: block and hparam names."""

    def __init__(self, kind, path, parent, names, taken, all_vars):
        self.kind, self.path, self.parent, self.names = kind, path, parent, names
        self.taken, self.all_vars = taken, all_vars
        self.params = []  # (decl line, torch name, acc-relative name)
        self.lines = []
        self.order = []  # ('param', torch, rel) / ('call', inst, Scope) / ('repeat', name, n, Scope, layer paths)

    def fresh(self, base):
        base = re.sub(r"[^A-Za-z0-9_]", "_", base) or "t"
        if not IDENT.match(base):
            base = "_" + base
        name, i = base, 1
        while name in self.names or name in RESERVED or name in self.taken:
            name = "%s_%d" % (base, i)
            i += 1
        self.names.add(name)
        self.all_vars.add(name)
        return name

    def sees(self, other):
        s = self
        while s is not None:
            if s is other:
                return True
            if s.kind != "repeat":
                return False
            s = s.parent
        return False


class Group:
    """The nodes one module call produced, in graph order: fx nodes and
    child Groups."""

    def __init__(self, path, cls):
        self.path, self.cls, self.items, self.split = path, cls, [], False
        self.mode = "inline"  # 'block', 'inline' or 'layer' (repeat layer i: self.rep, self.layer)
        self.rep, self.layer = None, 0

    def nodes(self):
        for it in self.items:
            if isinstance(it, Group):
                yield from it.nodes()
            else:
                yield it


def rel(path, scope_path):
    """path relative to scope_path, or None if outside it."""
    if scope_path == "":
        return path
    if path.startswith(scope_path + "."):
        return path[len(scope_path) + 1:]
    return None


def mangle(name):
    s = name.replace(".", "_")
    return s if IDENT.match(s) else "_" + re.sub(r"[^A-Za-z0-9_]", "_", s)


def where(node):
    """'FILE:LINE, in FUNC:\\n      CODE' for the innermost frame of the
    user's source that made this node (its stack_trace)."""
    st = node.meta.get("stack_trace") if node is not None else None
    if not st:
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', st)
    if not frames:
        return None
    f, line, fn, code = frames[-1]
    r = os.path.relpath(f)
    if not r.startswith(".."):
        f = r  # as compilers print paths: relative to the working directory when under it
    return "%s:%s, in %s:\n      %s" % (f, line, fn, code.strip())


class Importer:
    def __init__(self, ep, module, inputs, name):
        self.ep, self.module, self.inputs, self.model = ep, module, inputs, name
        self.sig = ep.graph_signature
        self.nodes = list(ep.graph.nodes)
        self.names = set()  # block and hparam names
        self.var_names = set()  # every variable of every body
        self.env = {}
        self.conv = Converter()
        self.blocks = {}  # body text -> block name
        self.block_defs = []
        self.hparams = []
        self.param_node = {}  # placeholder node -> canonical torch name
        self.param_aliases = {}
        self.n_repeat = 0

    # ---- parameters, buffers, inputs ----
    def placeholders(self):
        params = dict(self.sig.inputs_to_parameters)
        buffers = dict(self.sig.inputs_to_buffers)
        consts = dict(getattr(self.sig, "inputs_to_lifted_tensor_constants", {}) or {})
        first = {}
        for pname, p in self.module.named_parameters(remove_duplicate=False):
            first.setdefault(id(p), []).append(pname)
        by_name = {}
        for names in first.values():
            for pname in names:
                by_name[pname] = names
        self.user_inputs = []
        self.unused = []
        for n in self.nodes:
            if n.op != "placeholder":
                continue
            if n.name in params:
                names = by_name.get(params[n.name], [params[n.name]])
                if not n.users:
                    self.unused.append(names[0])
                    continue  # another placeholder of a tied parameter, or a parameter the loss does not use
                if names[0] in self.param_aliases:
                    raise ImportFailure("parameter %s appears twice in the exported graph" % names[0], n)
                self.param_node[n] = names[0]
                self.param_aliases[names[0]] = names
            elif n.name in buffers or n.name in consts:
                key = buffers.get(n.name) or consts.get(n.name)
                t = self.ep.state_dict.get(key) if key in self.ep.state_dict else self.ep.constants.get(key)
                self.env[n] = Val("const", t.shape, "f32" if t.is_floating_point() else "i32", node=n, const=t)
            else:
                self.user_inputs.append(n)
        if len(self.user_inputs) != len(self.inputs):
            raise ImportFailure("the module takes %d inputs, build() gave %d" % (len(self.user_inputs),
                                                                                len(self.inputs)))

    def param_tensor(self, tname):
        return dict(self.module.named_parameters(remove_duplicate=False))[tname]

    # ---- the module tree ----
    def tree(self):
        root = Group("", type(self.module).__name__)
        seen = {}
        for n in self.nodes:
            if n.op != "call_function":
                continue
            stack = [v for v in (n.meta.get("nn_module_stack") or {}).values() if v[0]]
            g = root
            for path, cls in stack:
                last = g.items[-1] if g.items else None
                if isinstance(last, Group) and last.path == path:
                    g = last
                    continue
                child = Group(path, cls if isinstance(cls, str) else getattr(cls, "__name__", str(cls)))
                if path in seen:
                    seen[path].split = child.split = True
                seen[path] = child
                g.items.append(child)
                g = child
            g.items.append(n)
        return root

    def inside(self, g):
        return set(g.nodes())

    def io(self, g, ins_set=None):
        """(inputs, outputs) of a group: nodes it reads that are made outside,
        nodes it makes that are read outside (or are the graph's output)."""
        ins_set = ins_set or self.inside(g)
        inputs, outputs = [], []
        for n in g.nodes():
            for a in n.all_input_nodes:
                if a not in ins_set and a not in inputs:
                    if a in self.param_node and all(u in ins_set for u in a.users):
                        continue  # declared inside
                    inputs.append(a)
            if any(u not in ins_set for u in n.users) and self.source(n) in ins_set:
                outputs.append(n)
        return inputs, outputs

    def source(self, n):
        """The node n aliases: x.float() on a float32 x, contiguous(), ...
        give their input itself, so reading them outside a module is reading
        what the module was given, not one more result of it."""
        while str(n.target) in ALIASES and n.args and isinstance(n.args[0], torch.fx.Node) and \
                getattr(n.meta.get("val"), "dtype", None) == getattr(n.args[0].meta.get("val"), "dtype", 0):
            n = n.args[0]
        return n

    def decide(self, g, scope_path):
        """Choose how each child group is written: a block, a repeat of
        layers, or inline in the enclosing scope."""
        items = g.items
        i = 0
        while i < len(items):
            it = items[i]
            if not isinstance(it, Group):
                i += 1
                continue
            run = self.layer_run(items, i, scope_path)
            if run:
                rep = {"id": self.n_repeat, "groups": run[0], "carry": run[1], "name": run[2]}
                self.n_repeat += 1
                for k, lg in enumerate(run[0]):
                    lg.mode, lg.rep, lg.layer = "layer", rep, k
                    self.decide(lg, lg.path)
                i += len(run[0])
                continue
            r = rel(it.path, scope_path)
            _, outs = self.io(it)
            if not it.split and r is not None and IDENT.match(r) and r not in KEYWORDS and len(outs) == 1:
                it.mode = "block"
                self.decide(it, it.path)
            else:
                self.decide(it, scope_path)
            i += 1

    def layer_run(self, items, i, scope_path):
        """Groups items[i:i+N] that are layers P.0 .. P.{N-1} with one
        structure (same ops, same shapes, each one's own parameters), each
        taking the previous one's output: (groups, carry of layer 0, P)."""
        m = re.match(r"^(.*)\.0$", items[i].path)
        if not m:
            return None
        base = m.group(1)
        r = rel(base, scope_path)
        if r is None or not IDENT.match(r) or r in KEYWORDS:
            return None
        run = []
        for k in range(i, len(items)):
            it = items[k]
            if not isinstance(it, Group) or it.path != "%s.%d" % (base, len(run)) or it.split:
                break
            run.append(it)
        if len(run) < 2:
            return None
        outs, ins = [], []
        for lg in run:
            inside = self.inside(lg)
            for n in self.nodes:  # a layer's own parameters are used only inside it
                if n in self.param_node and self.param_node[n].startswith(lg.path + "."):
                    if not all(u in inside for u in n.users):
                        return None
            a, o = self.io(lg, inside)
            if len(o) != 1:
                return None
            ins.append(a)
            outs.append(o[0])
        for k in range(len(run) - 1):
            if not all(u in self.inside(run[k + 1]) for u in outs[k].users):
                return None
        sig1 = self.signature(run[1], outs[0])
        for k in range(2, len(run)):
            if self.signature(run[k], outs[k - 1]) != sig1:
                return None
        for c in ins[0]:
            if self.signature(run[0], c) == sig1:
                return run, c, r
        return None

    def signature(self, lg, carry):
        index = {}
        sig = []
        for j, n in enumerate(lg.nodes()):
            index[n] = j

        def canon(a):
            if isinstance(a, torch.fx.Node):
                if a in index:
                    return ("n", index[a])
                if a is carry:
                    return ("carry",)
                if a in self.param_node:
                    r = rel(self.param_node[a], lg.path)
                    if r is not None:
                        return ("p", r, tuple(shape_of(a)))
                return ("ext", a.name)
            if isinstance(a, (list, tuple)):
                return tuple(canon(x) for x in a)
            if isinstance(a, dict):
                return tuple(sorted((k, canon(v)) for k, v in a.items()))
            return repr(a)

        for n in lg.nodes():
            stack = tuple(rel(v[0], lg.path) for v in (n.meta.get("nn_module_stack") or {}).values() if v[0])
            val = n.meta.get("val")
            sig.append((str(n.target), canon(n.args), canon(n.kwargs), stack,
                        tuple(getattr(val, "shape", ()) or ())))
        return tuple(sig)

    # ---- where each parameter is declared ----
    def chains(self, root):
        """For every node, the list of keys of the scopes it is written in."""
        chain = {}

        def walk(g, keys):
            for it in g.items:
                if isinstance(it, Group):
                    if it.mode == "block":
                        walk(it, keys + [("b", id(it))])
                    elif it.mode == "layer":
                        walk(it, keys + [("r", it.rep["id"], it.layer)])
                    else:
                        walk(it, keys)
                else:
                    chain[it] = keys

        walk(root, [])
        self.decl = {}
        for n, tname in self.param_node.items():
            cs = [chain[u] for u in n.users if u in chain]
            common = []
            for k in range(min(len(c) for c in cs) if cs else 0):
                key = cs[0][k]
                if all(c[k] == key for c in cs):
                    common.append(key)
                else:
                    break
            self.decl[n] = common[-1] if common else None

    # ---- writing ----
    def declare_params(self, scope, key, layer_path=None):
        for n, tname in self.param_node.items():
            if self.decl.get(n) != key:
                continue
            if key is not None and key[0] == "r" and key[2] != 0:
                continue  # later layers: the body declares the first layer's
            p = self.param_tensor(tname)
            r = rel(tname, scope.path)
            relname = mangle(r if r is not None else tname)
            name = scope.fresh(relname)
            shape = ", ".join(str(d) for d in p.shape)
            init = "normal(0.02)" if p.dim() >= 2 else ("ones" if tname.endswith("weight") else "zeros")
            aliases = self.param_aliases.get(tname, [tname])
            note = "" if r is not None and name == r.replace(".", "_") and len(aliases) == 1 else \
                "    # PyTorch: %s" % ", ".join(aliases)
            scope.params.append("param %s: f32[%s] = %s;%s" % (name, shape, init, note))
            scope.order.append(("param", tname, name))
            self.env[n] = Val("leaf", p.shape, "f32", name=name, scope=scope, node=n)

    def run_node(self, scope, n):
        self.conv.scope = scope
        key = str(n.target)
        if key in IGNORED:
            return
        args = torch.fx.node.map_arg(n.args, lambda a: self.value(a))
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: self.value(a))
        flat = [x for x in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(x, Val)]
        if all(v.kind == "const" for v in flat) and key != "<built-in function getitem>" and \
                "dropout" not in key and "rand" not in key:
            cargs = torch.utils._pytree.tree_map(lambda x: x.const if isinstance(x, Val) else x, (args, kwargs))
            try:
                out = n.target(*cargs[0], **cargs[1])
            except Exception as e:  # noqa: BLE001 - reported as an import error
                raise ImportFailure("%s on constants failed while folding it: %s" % (key, e), n)
            self.env[n] = torch.utils._pytree.tree_map(
                lambda t: Val("const", t.shape, "f32" if t.is_floating_point() else "i32", node=n, const=t)
                if isinstance(t, torch.Tensor) else t, out)
            return
        h = OPS.get(key)
        if h is None:
            raise ImportFailure("unsupported ATen op %s" % key, n)
        self.env[n] = h(self.conv, n, args, kwargs)

    def value(self, a):
        if a not in self.env:
            raise ImportFailure("internal: %s used before it is made" % a.name, a)
        return self.env[a]

    def name_in(self, scope, v):
        def check(x):
            if x.name is not None and x.scope is not None and not scope.sees(x.scope):
                raise ImportFailure("a value crosses a module boundary in a way acc's blocks cannot express "
                                    "(%s)" % (x.node.name if x.node is not None else "?"), x.node)
            for i in x.ins:
                check(i)

        check(v)
        return self.conv.name_of(v)

    def emit(self, g, scope):
        for it in g.items:
            if not isinstance(it, Group):
                self.run_node(scope, it)
            elif it.mode == "block":
                self.emit_block(it, scope)
            elif it.mode == "layer":
                if it.layer == 0:
                    self.emit_repeat(it.rep, scope)
            else:
                self.emit(it, scope)

    def emit_block(self, g, scope):
        inputs, outs = self.io(g)
        inst = rel(g.path, scope.path)
        sub = Scope("block", g.path, scope, set(), self.names, self.var_names)
        self.declare_params(sub, ("b", id(g)))
        formals, args, saved = [], [], {}
        for a in inputs:
            v = self.value(a)
            if isinstance(v, Val) and v.kind == "pending" and v.info.get("pat") == "cond":
                x = v.info["x"]  # a mask condition (m != 0) enters as its mask m, and is m != 0 inside
                args.append(self.name_in(scope, x))
                f = sub.fresh("mask")
                formals.append(f)
                saved[a] = v
                xl = Val("leaf", x.shape, x.dtype, name=f, scope=sub, node=a)
                xl.sym = x.sym
                self.env[a] = Val("pending", v.shape, v.dtype, node=v.node, scope=sub, what=v.what,
                                  info=dict(v.info, x=xl))
                continue
            if not isinstance(v, Val) or v.kind in ("const", "pending"):
                continue  # constants and pattern parts pass through as they are
            args.append(self.name_in(scope, v))
            base = self.param_node.get(a)
            f = sub.fresh(mangle(rel(base, scope.path) or base) if base else "x")
            formals.append(f)
            saved[a] = v
            self.env[a] = Val("leaf", v.shape, v.dtype, name=f, scope=sub, node=a)
            self.env[a].sym = v.sym
        self.emit(g, sub)
        rv = self.value(outs[0])
        back = {id(self.env[a]): v for a, v in saved.items()}
        for a, v in saved.items():
            self.env[a] = v
        for n in g.nodes():  # aliases of a formal read outside: the outer value
            if isinstance(self.env.get(n), Val) and id(self.env[n]) in back:
                self.env[n] = back[id(self.env[n])]
        if not sub.lines and not sub.params and id(rv) in back:  # the module computes nothing (eval dropout)
            self.env[outs[0]] = back[id(rv)]
            return
        ret = self.name_in(sub, rv)
        body = sub.params + sub.lines + ["return %s;" % ret]
        bname = self.block_name(g.cls, formals, body)
        out = scope.fresh(inst)
        scope.lines.append("%s = %s(%s) as %s;" % (out, bname, ", ".join(args), inst))
        scope.order.append(("call", inst, sub))
        self.env[outs[0]] = Val("leaf", shape_of(outs[0]), dtype_of(outs[0]), name=out, scope=scope, node=outs[0])
        self.env[outs[0]].sym = rv.sym

    def block_name(self, cls, formals, body):
        text = "(%s) {\n%s\n}" % (", ".join(formals), "\n".join("    " + x for x in body))
        if text in self.blocks:
            return self.blocks[text]
        base = re.sub(r"[^A-Za-z0-9_]", "_", cls.split(".")[-1]) or "Block"
        if base in RESERVED or not IDENT.match(base):
            base = base + "_block"
        name, i = base, 2
        while name in self.names or name in self.var_names:
            name = "%s_%d" % (base, i)
            i += 1
        self.names.add(name)
        self.blocks[text] = name
        self.block_defs.append("block %s%s" % (name, text))
        return name

    def emit_repeat(self, rep, scope):
        groups, carry = rep["groups"], rep["carry"]
        n = len(groups)
        lname = "L" if not self.hparams else "L%d" % (len(self.hparams) + 1)
        self.names.add(lname)
        self.hparams.append("hparam %s = %d;    # %s: %d layers" % (lname, n, rep["name"], n))
        c = self.value(carry)
        cname = self.name_in(scope, c)
        var = scope.fresh("x")
        scope.lines.append("%s = %s;" % (var, cname))
        body = Scope("repeat", groups[0].path, scope, scope.names, self.names, self.var_names)
        self.env[carry] = Val("leaf", c.shape, c.dtype, name=var, scope=body, node=carry)
        self.env[carry].sym = c.sym
        self.declare_params(body, ("r", rep["id"], 0))
        self.emit(groups[0], body)
        _, outs = self.io(groups[0])
        out = self.name_in(body, self.value(outs[0]))
        body.lines.append("%s = %s;" % (var, out))
        self.env[carry] = c
        scope.lines.append("repeat %s as %s {" % (lname, rep["name"]))
        scope.lines.extend("    " + x for x in body.params + body.lines)
        scope.lines.append("}")
        scope.order.append(("repeat", rep["name"], n, body, [g.path for g in groups]))
        _, last = self.io(groups[-1])
        self.env[last[0]] = Val("leaf", c.shape, c.dtype, name=var, scope=scope, node=last[0])
        self.env[last[0]].sym = c.sym

    def recover_hparams(self):
        """B: the first dimension every input shares; T: the second dimension
        every integer input of rank 2 or more shares (token ids and targets).
        They become hparams, and the dimensions that follow them in the graph
        (torch_ops.infer_sym) are written as B and T, so -D B=64 compiles
        the same model at another batch size."""
        ts = list(self.inputs)
        if ts and all(t.dim() >= 1 for t in ts) and len({t.shape[0] for t in ts}) == 1:
            self.conv.hparams["B"] = int(ts[0].shape[0])
        ints = [t for t in ts if not t.is_floating_point() and t.dim() >= 2]
        if ints and len({t.shape[1] for t in ints}) == 1:
            self.conv.hparams["T"] = int(ints[0].shape[1])
        self.names.update(self.conv.hparams)

    def input_sym(self, t, i):
        if i == 0 and "B" in self.conv.hparams:
            return "B"
        if i == 1 and "T" in self.conv.hparams and not t.is_floating_point():
            return "T"
        return None

    def check_ignore_index(self):
        """F.cross_entropy skips targets equal to ignore_index (-100 by
        default); acc's cross_entropy has no such targets. Refuse example
        targets that hold it rather than compute another loss."""
        example = dict(zip(self.user_inputs, self.inputs))
        for n in self.nodes:
            if str(n.target) not in ("aten.cross_entropy_loss.default", "aten.nll_loss.default",
                                     "aten.nll_loss_forward.default"):
                continue
            ig = n.args[4] if len(n.args) > 4 else n.kwargs.get("ignore_index", -100)
            t = n.args[1]
            while isinstance(t, torch.fx.Node) and t not in example and t.args and isinstance(t.args[0], torch.fx.Node):
                t = t.args[0]  # through view/reshape
            if t in example and bool((example[t] == ig).any()):
                raise ImportFailure("the example targets hold ignore_index (%d), which %s skips; acc's "
                                    "cross_entropy averages over every target" % (ig, n.target), n)

    def param_order(self, scope, prefix, subst):
        """(acc name, torch name) of every parameter in the order acc
        elaborates them: the order of libaccrt's parameter files."""
        out = []
        for item in scope.order:
            if item[0] == "param":
                tname = item[1]
                for a, b in subst:
                    if tname.startswith(a + "."):
                        tname = b + tname[len(a):]
                out.append((prefix + item[2], tname))
            elif item[0] == "call":
                out += self.param_order(item[2], prefix + item[1] + ".", subst)
            else:
                _, name, n, body, paths = item
                for i in range(n):
                    out += self.param_order(body, "%s%s.%d." % (prefix, name, i), subst + [(paths[0], paths[i])])
        return out

    def run(self):
        self.placeholders()
        root_scope = Scope("top", "", None, set(), self.names, self.var_names)
        self.names.add(self.model)
        self.recover_hparams()
        inputs = []
        for n, t in zip(self.user_inputs, self.inputs):
            dt = dtype_of(n, t)
            if dt == "bool":
                raise ImportFailure("input %s is a bool tensor: acc's inputs are f32 or i32" % n.name, n)
            name = root_scope.fresh(n.name)
            v = Val("leaf", t.shape, dt, name=name, scope=root_scope, node=n)
            v.sym = tuple(self.input_sym(t, i) for i in range(t.dim()))
            inputs.append((name, t, dt, v.sym))
            self.env[n] = v
        tree = self.tree()
        self.decide(tree, "")
        self.chains(tree)
        self.declare_params(root_scope, None)
        self.emit(tree, root_scope)
        outn = [n for n in self.nodes if n.op == "output"][0]
        res = outn.args[0]
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        if len(res) != 1 or not isinstance(res[0], torch.fx.Node) or shape_of(res[0]) != () or \
                dtype_of(res[0]) != "f32":
            got = "%d values" % len(res) if len(res) != 1 else "a tensor of shape %s" % (
                list(shape_of(res[0])) if isinstance(res[0], torch.fx.Node) else "?")
            raise ImportFailure("forward must return the training loss, one float32 scalar; it returns %s" % got)
        self.check_ignore_index()
        lv = self.value(res[0])
        loss = self.name_in(root_scope, lv)
        lines = ["# %s: imported from PyTorch by `acc import` (torch %s)." % (self.model, torch.__version__),
                 "# Parameters named as in the module (hierarchy from blocks and repeats); their values are",
                 "# in %s.params.bin (the initializers below are placeholders)." % self.model,
                 "model %s;" % self.model, ""]
        hp = ["hparam B = %d;    # batch" % self.conv.hparams["B"]] if "B" in self.conv.hparams else []
        if "T" in self.conv.hparams:
            hp.append("hparam T = %d;    # sequence length" % self.conv.hparams["T"])
        hp += self.hparams
        lines += hp + ([""] if hp else [])
        for name, t, dt, sym in inputs:
            lines.append("input %s: %s[%s];" % (name, dt, ", ".join(y or str(d) for d, y in zip(t.shape, sym))))
        lines.append("")
        for b in self.block_defs:
            lines += b.split("\n") + [""]
        lines += root_scope.params + root_scope.lines
        lines.append("loss %s;" % loss)
        self.text = "\n".join(lines) + "\n"
        self.order = self.param_order(root_scope, "", [])
        self.input_list = inputs
        return self.text


def write_tensors(path, tensors):
    """libaccrt's tensor file: "ACCPARAM", u32 version 1, u32 count, then per
    tensor u32 name length, name, u32 ndim, i64 dims, 4-byte little-endian
    elements (float32, or int32 for i32 inputs)."""
    if sys.byteorder != "little":
        raise ImportFailure("acc's tensor files are little-endian; this machine is not")
    with open(path, "wb") as f:
        f.write(b"ACCPARAM" + struct.pack("<II", 1, len(tensors)))
        for name, t in tensors:
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb)
            f.write(struct.pack("<I", t.dim()) + struct.pack("<%dq" % t.dim(), *t.shape))
            t = t.detach().cpu()
            if t.dtype.is_floating_point:
                t = t.to(torch.float32)
            else:
                lo, hi = (int(t.min()), int(t.max())) if t.numel() else (0, 0)
                if lo < -2 ** 31 or hi >= 2 ** 31:
                    raise ImportFailure("input %s holds values outside int32 (acc's i32)" % name)
                t = t.to(torch.int32)
            t = t.contiguous()
            f.write(ctypes.string_at(t.data_ptr(), t.numel() * 4))  # the bytes as they are (no NumPy needed)


def load_builder(spec):
    """FILE.py:FUNC -> FUNC()'s (module, example inputs)."""
    if ":" not in spec:
        raise SystemExit("acc import: --module takes FILE.py:FUNC (FUNC() returns (module, example_inputs))")
    path, func = spec.rsplit(":", 1)
    if not os.path.isfile(path):
        raise SystemExit("acc import: %s: no such file" % path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    s = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    mod = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    if not hasattr(mod, func):
        raise SystemExit("acc import: %s has no function %s" % (path, func))
    res = getattr(mod, func)()
    if not (isinstance(res, (tuple, list)) and len(res) == 2 and isinstance(res[0], torch.nn.Module)):
        raise SystemExit("acc import: %s() must return (module, example_inputs)" % func)
    module, inputs = res
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    return module, tuple(inputs)


def report(e, supported):
    msg = "acc import: error: %s" % e
    w = where(e.node)
    if w:
        msg += "\n  from %s" % w
    if supported:
        msg += "\n  acc maps these ATen ops:"
        line = "   "
        for op in supported_ops():
            if len(line) + len(op) > 100:
                msg += "\n" + line
                line = "   "
            line += " " + op + ","
        msg += "\n" + line.rstrip(",")
    print(msg, file=sys.stderr)


def main(argv):
    ap = argparse.ArgumentParser(prog="acc import", description="Import a torch.nn.Module into an acc model "
                                 "(.acdsl) with its parameters.")
    ap.add_argument("--module", required=True, metavar="FILE.py:FUNC",
                    help="FUNC() returns (module, example_inputs); forward(*example_inputs) returns the loss")
    ap.add_argument("-o", dest="out", required=True, metavar="DIR", help="output directory")
    ap.add_argument("--name", help="the model's name (default: the module's class, lower case)")
    args = ap.parse_args(argv)
    if torch is None:
        print("acc import: error: PyTorch is not installed (python3 -m pip install torch; CPU wheels: "
              "--index-url https://download.pytorch.org/whl/cpu)", file=sys.stderr)
        return 1
    module, inputs = load_builder(args.module)
    name = args.name or re.sub(r"[^a-z0-9_]", "_", type(module).__name__.lower())
    if not IDENT.match(name) or name in RESERVED or name.startswith("acc") or name == "main":
        print("acc import: error: '%s' cannot name an acc model; give --name" % name, file=sys.stderr)
        return 2
    try:
        ep = torch.export.export(module, inputs)
    except Exception as e:  # noqa: BLE001
        print("acc import: error: torch.export.export failed: %s" % str(e).strip().split("\n")[0], file=sys.stderr)
        return 1
    imp = Importer(ep, module, inputs, name)
    try:
        text = imp.run()
        os.makedirs(args.out, exist_ok=True)
        params = [(acc_name, imp.param_tensor(tname)) for acc_name, tname in imp.order]
        write_tensors(os.path.join(args.out, name + ".params.bin"), params)
        write_tensors(os.path.join(args.out, name + ".inputs.bin"), [(n, t) for n, t, _, _ in imp.input_list])
        with open(os.path.join(args.out, name + ".names"), "w") as f:
            f.writelines("%s %s\n" % (acc_name, tname) for acc_name, tname in imp.order)
    except ImportFailure as e:
        report(e, str(e).startswith("unsupported"))
        return 1
    path = os.path.join(args.out, name + ".acdsl")
    with open(path, "w") as f:
        f.write(text)
    n_el = sum(p.numel() for _, p in params)
    print("acc import: wrote %s (%d parameters, %d elements), %s.params.bin, %s.inputs.bin, %s.names" % (
        path, len(params), n_el, name, name, name))
    seen = set()
    for msg, node in imp.conv.caveats:
        at = where(node)
        if (msg, at) not in seen:
            seen.add((msg, at))
            print("acc import: warning: %s%s" % (msg, "\n  at " + at if at else ""), file=sys.stderr)
    for u in imp.unused:
        if u not in imp.param_aliases:
            print("acc import: note: parameter %s does not reach the loss; it is not in the model" % u)
    return 0
