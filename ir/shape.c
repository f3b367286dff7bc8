/* shape.c - the shape rules named in ops.def. Each checks its node's inputs
 * and attributes, then sets the node's shape, dtype and aux_elems, or writes
 * a one-line error naming the op and the offending shapes and returns false.
 * Rules never trust their inputs: ranks, dims, dtypes and input ids are
 * checked first, and every result is bounded by ACC_MAX_DIM / ACC_MAX_ELEMS.
 */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>

#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) \
    bool shape(const Graph *, Node *, char *, size_t);
#include "ops.def"
#undef X

/* A shape as text, in a buffer that lives until the end of the enclosing block. */
#define SHP(s) shape_str((s), (char[ACC_SHAPE_STR]){0})
#define IN(i) graph_node(g, n->in[i])
#define FAIL(...) fail(n, err, err_len, __VA_ARGS__)

static bool fail(const Node *n, char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Write "op: message" into err; always returns false. */
static bool fail(const Node *n, char *err, size_t err_len, const char *fmt, ...) {
    if (!err || !err_len) return false;
    const char *op = (unsigned)n->op < OP_COUNT ? op_table[n->op].name : "?";
    int k = snprintf(err, err_len, "%s: ", op);
    if (k >= 0 && (size_t)k < err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + k, err_len - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* Whether s has a valid rank, every dim in [1, ACC_MAX_DIM] and at most
 * ACC_MAX_ELEMS elements. */
static bool shape_ok(const Shape *s) {
    if (s->ndim < 0 || s->ndim > ACC_MAX_DIMS) return false;
    int64_t e = 1;
    for (int i = 0; i < s->ndim; i++) {
        if (s->dim[i] < 1 || s->dim[i] > ACC_MAX_DIM) return false;
        if (__builtin_mul_overflow(e, s->dim[i], &e) || e > ACC_MAX_ELEMS) return false;
    }
    return true;
}

/* Check the input count, the input ids and every input's dtype and shape. */
static bool check_inputs(const Graph *g, const Node *n, char *err, size_t err_len) {
    if ((unsigned)n->op >= OP_COUNT) return FAIL("bad op %d", (int)n->op);
    const OpInfo *oi = &op_table[n->op];
    if (n->n_in < oi->min_in || n->n_in > oi->max_in || n->n_in > ACC_MAX_IN) {
        if (oi->min_in == oi->max_in)
            return FAIL("takes %d input%s, got %d", oi->min_in, oi->min_in == 1 ? "" : "s", n->n_in);
        return FAIL("takes %d to %d inputs, got %d", oi->min_in, oi->max_in, n->n_in);
    }
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] < 0 || n->in[i] >= g->nodes.n) return FAIL("input %d is not a node (%%%d)", i, n->in[i]);
        const Node *x = IN(i);
        if ((unsigned)x->dtype >= DT_COUNT) return FAIL("input %d has bad dtype %d", i, (int)x->dtype);
        if (x->shape.ndim < 0 || x->shape.ndim > ACC_MAX_DIMS)
            return FAIL("input %d has bad rank %d", i, x->shape.ndim);
        if (!shape_ok(&x->shape)) return FAIL("input %d has a bad shape %s", i, SHP(&x->shape));
    }
    return true;
}

/* The dtype n computes in: that of its first float input of class a or p
 * (the precision pass made them all one), else the graph's activation dtype. */
static DType compute_dtype(const Graph *g, const Node *n) {
    for (int j = 0; j < n->n_in; j++) {
        char c = op_prec_class(n->op, j);
        DType t = graph_node(g, n->in[j])->dtype;
        if ((c == 'a' || c == 'p') && dtype_is_float(t)) return t;
    }
    return g->act_dtype;
}

/* The dtype the precision rule (ops.def) gives input i of n (i >= 0) or
 * its output (i = -1): the dtype n computes in for 'a' and 'p', f32 for
 * 'f', i32 for 'i'. */
static DType prec_dtype(const Graph *g, const Node *n, int i) {
    char c = op_prec_class(n->op, i);
    return c == 'a' || c == 'p' ? compute_dtype(g, n) : c == 'i' ? DT_I32 : DT_F32;
}

/* Check that input i (called what in messages) has dtype t. */
static bool want_dtype(const Graph *g, const Node *n, int i, const char *what, DType t, char *err, size_t err_len) {
    const Node *x = IN(i);
    if (x->dtype == t) return true;
    return FAIL("%s must be %s, got %s%s", what, dtype_name(t), dtype_name(x->dtype), SHP(&x->shape));
}

/* Resolve a Python-style axis attribute (called what) against shape x. */
static bool get_axis(const Node *n, const char *what, int64_t axis, const Shape *x, int *out, char *err,
                     size_t err_len) {
    if (axis >= -(int64_t)x->ndim && axis < x->ndim) {
        *out = (int)(axis < 0 ? axis + x->ndim : axis);
        return true;
    }
    if (axis == ATTR_NONE) return FAIL("%s is required", what);
    return FAIL("%s=%" PRId64 " out of range for rank %d: %s", what, axis, x->ndim, SHP(x));
}

/* Store the result if its dims and element count are in range. */
static bool set_out(Node *n, const Shape *s, DType t, int64_t aux, char *err, size_t err_len) {
    if (!shape_ok(s)) return FAIL("result too large: %s", SHP(s));
    n->shape = *s;
    n->dtype = t;
    n->aux_elems = aux;
    return true;
}

static int64_t last_dim(const Shape *s) { return s->dim[s->ndim - 1]; }

bool shape_leaf(const Graph *g, Node *n, char *err, size_t err_len) {
    (void)g, (void)n, (void)err, (void)err_len;
    return true;
}

bool shape_matmul(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "a", prec_dtype(g, n, 0), err, err_len) ||
        !want_dtype(g, n, 1, "b", prec_dtype(g, n, 1), err, err_len))
        return false;
    const Shape *a = &IN(0)->shape, *b = &IN(1)->shape;
    bool ta = n->attr.transpose_a, tb = n->attr.transpose_b;
    const char *tr = ta ? (tb ? " (transpose_a, transpose_b)" : " (transpose_a)") : (tb ? " (transpose_b)" : "");
    int ra = a->ndim, rb = b->ndim;
    if (ra < 2) return FAIL("a must have rank >= 2: %s x %s", SHP(a), SHP(b));
    if (rb != 2 && rb != ra) return FAIL("b must have rank 2 or a's rank %d: %s x %s", ra, SHP(a), SHP(b));
    for (int i = 0; rb == ra && i < ra - 2; i++)
        if (a->dim[i] != b->dim[i]) return FAIL("batch dimensions differ: %s x %s", SHP(a), SHP(b));
    int64_t m = a->dim[ra - (ta ? 1 : 2)], ka = a->dim[ra - (ta ? 2 : 1)];
    int64_t kb = b->dim[rb - (tb ? 1 : 2)], nb = b->dim[rb - (tb ? 2 : 1)];
    if (ka != kb) return FAIL("inner dimensions differ: %s x %s%s", SHP(a), SHP(b), tr);
    Shape out = {.ndim = ra};
    for (int i = 0; i < ra - 2; i++) out.dim[i] = a->dim[i];
    out.dim[ra - 2] = m;
    out.dim[ra - 1] = nb;
    return set_out(n, &out, prec_dtype(g, n, -1), 0, err, err_len);
}

/* Whether b is a bias of width nb for an output of rank r: [nb], or [nb] with
 * leading ones and rank at most r. */
bool shape_is_bias(const Shape *b, int64_t nb, int r) {
    if (b->ndim < 1 || b->ndim > r || b->dim[b->ndim - 1] != nb) return false;
    for (int i = 0; i < b->ndim - 1; i++)
        if (b->dim[i] != 1) return false;
    return true;
}

/* linear(x, w, b): x[..., K] @ w[K, N] (w[N, K] with transpose_b) + b[N] */
bool shape_linear(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "x", prec_dtype(g, n, 0), err, err_len) ||
        !want_dtype(g, n, 1, "w", prec_dtype(g, n, 1), err, err_len) ||
        !want_dtype(g, n, 2, "b", prec_dtype(g, n, 2), err, err_len))
        return false;
    const Shape *x = &IN(0)->shape, *w = &IN(1)->shape, *b = &IN(2)->shape;
    bool tb = n->attr.transpose_b;
    const char *tr = tb ? " (transpose_b)" : "";
    int r = x->ndim;
    if (r < 2) return FAIL("x must have rank >= 2: %s x %s", SHP(x), SHP(w));
    if (w->ndim != 2) return FAIL("w must have rank 2: %s x %s", SHP(x), SHP(w));
    int64_t k = w->dim[tb ? 1 : 0], nb = w->dim[tb ? 0 : 1];
    if (x->dim[r - 1] != k) return FAIL("inner dimensions differ: %s x %s%s", SHP(x), SHP(w), tr);
    if (!shape_is_bias(b, nb, r))
        return FAIL("b must be [%" PRId64 "] (or with leading ones): %s x %s%s + %s", nb, SHP(x), SHP(w), tr, SHP(b));
    Shape out = *x;
    out.dim[r - 1] = nb;
    return set_out(n, &out, prec_dtype(g, n, -1), 0, err, err_len);
}

/* An i32 input of a comparison (OPF_NOGRAD) is compared as it is, exactly:
 * the dtype a comparison's input i must have given input j's. */
static DType cmp_dtype(const Graph *g, const Node *n, int j) {
    bool cmp = op_table[n->op].flags & OPF_NOGRAD;
    return cmp && graph_node(g, n->in[j])->dtype == DT_I32 ? DT_I32 : prec_dtype(g, n, 0);
}

/* add ... div and the comparisons: two inputs of the dtype the op computes
 * in (a comparison's: two i32 too; its output is then the activation dtype,
 * 0/1), the shapes broadcast. */
bool shape_broadcast(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len)) return false;
    const Node *x = IN(0), *y = IN(1);
    DType want = cmp_dtype(g, n, 0);
    if (x->dtype != want || y->dtype != want)
        return FAIL("inputs must be %s, got %s%s and %s%s", dtype_name(want), dtype_name(x->dtype), SHP(&x->shape),
                    dtype_name(y->dtype), SHP(&y->shape));
    int rx = x->shape.ndim, ry = y->shape.ndim, r = rx > ry ? rx : ry;
    Shape out = {.ndim = r};
    for (int i = 1; i <= r; i++) {
        int64_t dx = i <= rx ? x->shape.dim[rx - i] : 1, dy = i <= ry ? y->shape.dim[ry - i] : 1;
        if (dx != dy && dx != 1 && dy != 1)
            return FAIL("shapes do not broadcast: %s vs %s", SHP(&x->shape), SHP(&y->shape));
        out.dim[r - i] = dx == 1 ? dy : dx;
    }
    return set_out(n, &out, prec_dtype(g, n, -1), 0, err, err_len);
}

/* where(cond, a, b): a and b in the dtype the op computes in, cond that or
 * i32; the three shapes broadcast together as a binary op's two do. */
bool shape_where(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len)) return false;
    const Node *c = IN(0), *x = IN(1), *y = IN(2);
    DType want = prec_dtype(g, n, 1);
    if (x->dtype != want || y->dtype != want)
        return FAIL("a and b must be %s, got %s%s and %s%s", dtype_name(want), dtype_name(x->dtype), SHP(&x->shape),
                    dtype_name(y->dtype), SHP(&y->shape));
    if (c->dtype != DT_I32 && c->dtype != want)
        return FAIL("cond must be i32 or %s, got %s%s", dtype_name(want), dtype_name(c->dtype), SHP(&c->shape));
    int r = 0;
    for (int j = 0; j < 3; j++)
        if (IN(j)->shape.ndim > r) r = IN(j)->shape.ndim;
    Shape out = {.ndim = r};
    for (int i = 1; i <= r; i++) {
        int64_t d = 1;
        for (int j = 0; j < 3; j++) {
            const Shape *s = &IN(j)->shape;
            int64_t dj = i <= s->ndim ? s->dim[s->ndim - i] : 1;
            if (dj != 1 && d != 1 && dj != d)
                return FAIL("shapes do not broadcast: %s, %s and %s", SHP(&c->shape), SHP(&x->shape), SHP(&y->shape));
            if (dj != 1) d = dj;
        }
        out.dim[r - i] = d;
    }
    return set_out(n, &out, prec_dtype(g, n, -1), 0, err, err_len);
}

bool shape_same(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "x", cmp_dtype(g, n, 0), err, err_len)) return false;
    const Shape *x = &IN(0)->shape;
    if (n->op == OP_SOFTMAX && x->ndim < 1) return FAIL("x must have rank >= 1: %s", SHP(x));
    if (n->op == OP_DROPOUT && !(n->attr.p >= 0 && n->attr.p < 1))
        return FAIL("p must be in [0, 1), got %g", n->attr.p);
    return set_out(n, x, prec_dtype(g, n, -1), 0, err, err_len);
}

/* Common checks of layernorm and rmsnorm: x [..., C] (f32 or bf16), each
 * further input f32 [C], eps > 0. Sets *rows to the number of normalized rows. */
static bool check_norm(const Graph *g, Node *n, int64_t *rows, char *err, size_t err_len) {
    static const char *const names[] = {"x", "w", "b"};
    if (!check_inputs(g, n, err, err_len)) return false;
    for (int i = 0; i < n->n_in; i++)
        if (!want_dtype(g, n, i, names[i], prec_dtype(g, n, i), err, err_len)) return false;
    const Shape *x = &IN(0)->shape;
    if (x->ndim < 1) return FAIL("x must have rank >= 1: %s", SHP(x));
    int64_t c = last_dim(x);
    for (int i = 1; i < n->n_in; i++) {
        const Shape *p = &IN(i)->shape;
        if (p->ndim != 1 || p->dim[0] != c)
            return FAIL("%s must be [%" PRId64 "] to match x: %s vs %s", names[i], c, SHP(x), SHP(p));
    }
    if (!(n->attr.eps > 0) || !isfinite(n->attr.eps)) return FAIL("eps must be > 0, got %g", n->attr.eps);
    *rows = shape_elems(x) / c;
    return true;
}

bool shape_layernorm(const Graph *g, Node *n, char *err, size_t err_len) {
    int64_t rows;
    if (!check_norm(g, n, &rows, err, err_len)) return false;
    return set_out(n, &IN(0)->shape, prec_dtype(g, n, -1), 2 * rows, err, err_len);
}

bool shape_rmsnorm(const Graph *g, Node *n, char *err, size_t err_len) {
    int64_t rows;
    if (!check_norm(g, n, &rows, err, err_len)) return false;
    return set_out(n, &IN(0)->shape, prec_dtype(g, n, -1), rows, err, err_len);
}

bool shape_attention(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "q", prec_dtype(g, n, 0), err, err_len) ||
        !want_dtype(g, n, 1, "k", prec_dtype(g, n, 1), err, err_len) ||
        !want_dtype(g, n, 2, "v", prec_dtype(g, n, 2), err, err_len))
        return false;
    const Shape *q = &IN(0)->shape, *k = &IN(1)->shape, *v = &IN(2)->shape;
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3)
        return FAIL("q, k, v must have rank 3 [B, T, heads*D]: %s, %s, %s", SHP(q), SHP(k), SHP(v));
    int64_t h = n->attr.heads, kvh = n->attr.kv_heads;
    if (h <= 0) return FAIL("heads must be > 0, got %" PRId64, h);
    if (kvh == 0 || kvh == ATTR_NONE) kvh = h;
    if (kvh < 0) return FAIL("kv_heads must be >= 0, got %" PRId64, kvh);
    if (h % kvh) return FAIL("heads=%" PRId64 " is not a multiple of kv_heads=%" PRId64, h, kvh);
    if (q->dim[2] % h)
        return FAIL("q's last dim %" PRId64 " is not divisible by heads=%" PRId64 ": %s", q->dim[2], h, SHP(q));
    int64_t d = q->dim[2] / h;
    if (!shape_eq(k, v)) return FAIL("k and v shapes differ: %s vs %s", SHP(k), SHP(v));
    if (k->dim[0] != q->dim[0]) return FAIL("batch sizes differ: q %s, k %s", SHP(q), SHP(k));
    if (k->dim[2] != kvh * d)
        return FAIL("k's last dim must be kv_heads*D = %" PRId64 "*%" PRId64 ": q %s, k %s", kvh, d, SHP(q), SHP(k));
    if (n->attr.causal && q->dim[1] != k->dim[1])
        return FAIL("causal attention needs equal query and key lengths: q %s, k %s", SHP(q), SHP(k));
    /* the keyword operands: mask (input 3) then bias (3 or 4), as given */
    int64_t want_in = 3, mi = n->attr.mask, bi = n->attr.bias;
    if (mi != ATTR_NONE && mi != want_in++) return FAIL("mask is not input 3 (%%%" PRId64 ")", mi);
    if (bi != ATTR_NONE && bi != want_in++)
        return FAIL("bias is not input %" PRId64 " (%%%" PRId64 ")", want_in - 1, bi);
    if (n->n_in != want_in) return FAIL("takes %" PRId64 " inputs with its mask and bias, got %d", want_in, n->n_in);
    const int64_t full[4] = {q->dim[0], h, q->dim[1], k->dim[1]};
    const Shape fs = {4, {full[0], full[1], full[2], full[3]}};
    int64_t st[4];
    if (mi != ATTR_NONE) {
        const Node *m = IN(mi);
        if (m->dtype != DT_I32 && m->dtype != DT_F32)
            return FAIL("mask must be i32 or f32, got %s%s", dtype_name(m->dtype), SHP(&m->shape));
        if (m->shape.ndim == 2 && !attn_operand_strides(&m->shape, full, true, st))
            return FAIL("a rank-2 mask is the key-padding mask [B, Tk] = [%" PRId64 ",%" PRId64 "] (B may be 1), "
                        "got %s; write a mask over queries and keys [Tq, Tk] as [1, Tq, Tk]",
                        full[0], full[3], SHP(&m->shape));
        if (!attn_operand_strides(&m->shape, full, true, st))
            return FAIL("mask %s does not broadcast to [B, heads, Tq, Tk] = %s (rank 2: [B, Tk]; rank 1, 3, 4: "
                        "aligned from the last dimension)",
                        SHP(&m->shape), SHP(&fs));
    }
    if (bi != ATTR_NONE) {
        const Node *b = IN(bi);
        if (b->dtype != DT_F32) return FAIL("bias must be f32, got %s%s", dtype_name(b->dtype), SHP(&b->shape));
        if (!attn_operand_strides(&b->shape, full, false, st))
            return FAIL("bias %s does not broadcast to [B, heads, Tq, Tk] = %s", SHP(&b->shape), SHP(&fs));
    }
    return set_out(n, q, prec_dtype(g, n, -1), q->dim[0] * h * q->dim[1], err, err_len);
}

bool shape_rope(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "x", prec_dtype(g, n, 0), err, err_len)) return false;
    const Shape *x = &IN(0)->shape;
    int64_t h = n->attr.heads;
    if (x->ndim != 3) return FAIL("x must have rank 3 [B, T, heads*D]: %s", SHP(x));
    if (h <= 0) return FAIL("heads must be > 0, got %" PRId64, h);
    if (x->dim[2] % h || (x->dim[2] / h) % 2)
        return FAIL("x's last dim must be heads*D with D even, heads=%" PRId64 ": %s", h, SHP(x));
    if (!(n->attr.theta > 0) || !isfinite(n->attr.theta)) return FAIL("theta must be > 0, got %g", n->attr.theta);
    return set_out(n, x, prec_dtype(g, n, -1), 0, err, err_len);
}

bool shape_embedding(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "idx", prec_dtype(g, n, 0), err, err_len) ||
        !want_dtype(g, n, 1, "table", prec_dtype(g, n, 1), err, err_len))
        return false;
    const Shape *idx = &IN(0)->shape, *t = &IN(1)->shape;
    if (t->ndim != 2) return FAIL("table must have rank 2 [V, C]: %s", SHP(t));
    if (idx->ndim > ACC_MAX_DIMS - 1) return FAIL("idx must have rank <= %d: %s", ACC_MAX_DIMS - 1, SHP(idx));
    Shape out = *idx;
    out.dim[out.ndim++] = t->dim[1];
    return set_out(n, &out, prec_dtype(g, n, -1), 0, err, err_len);
}

bool shape_xent(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "logits", prec_dtype(g, n, 0), err, err_len) ||
        !want_dtype(g, n, 1, "targets", prec_dtype(g, n, 1), err, err_len))
        return false;
    const Shape *l = &IN(0)->shape, *t = &IN(1)->shape;
    if (l->ndim < 1) return FAIL("logits must have rank >= 1: %s", SHP(l));
    Shape rows = *l;
    rows.dim[--rows.ndim] = 0;
    if (!shape_eq(&rows, t))
        return FAIL("targets must be logits' shape without the last dim: %s vs %s", SHP(l), SHP(t));
    Shape out = {.ndim = 0};
    return set_out(n, &out, prec_dtype(g, n, -1), shape_elems(&rows), err, err_len);
}

bool shape_reshape(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len)) return false;
    const Node *x = IN(0);
    const Shape *t = &n->attr.shape;
    if (t->ndim < 0 || t->ndim > ACC_MAX_DIMS) return FAIL("target rank %d out of range", t->ndim);
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < t->ndim; i++) {
        int64_t d = t->dim[i];
        if (d == -1 && infer >= 0) return FAIL("more than one -1 in target %s", SHP(t));
        if (d == -1) {
            infer = i;
            continue;
        }
        if (d < 1 || d > ACC_MAX_DIM) return FAIL("bad dimension %" PRId64 " in target %s", d, SHP(t));
        if (__builtin_mul_overflow(known, d, &known) || known > ACC_MAX_ELEMS)
            return FAIL("target too large: %s", SHP(t));
    }
    int64_t elems = shape_elems(&x->shape);
    Shape out = {.ndim = t->ndim};
    for (int i = 0; i < t->ndim; i++) out.dim[i] = t->dim[i];
    if (infer >= 0 && elems % known == 0) {
        out.dim[infer] = elems / known;
        known = elems;
    }
    if (known != elems) return FAIL("cannot reshape %s (%" PRId64 " elements) to %s", SHP(&x->shape), elems, SHP(t));
    return set_out(n, &out, x->dtype, 0, err, err_len);
}

bool shape_transpose(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len)) return false;
    const Node *x = IN(0);
    int a = 0, b = 0;
    if (!get_axis(n, "dim0", n->attr.dim0, &x->shape, &a, err, err_len) ||
        !get_axis(n, "dim1", n->attr.dim1, &x->shape, &b, err, err_len))
        return false;
    Shape out = x->shape;
    out.dim[a] = x->shape.dim[b];
    out.dim[b] = x->shape.dim[a];
    return set_out(n, &out, x->dtype, 0, err, err_len);
}

bool shape_slice(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len)) return false;
    const Node *x = IN(0);
    int ax = 0;
    if (!get_axis(n, "axis", n->attr.axis, &x->shape, &ax, err, err_len)) return false;
    int64_t d = x->shape.dim[ax], start = n->attr.start, len = n->attr.len;
    if (start < 0 || len < 1 || start > d || len > d - start)
        return FAIL("start=%" PRId64 " len=%" PRId64 " out of range for axis %d of %s", start, len, ax, SHP(&x->shape));
    Shape out = x->shape;
    out.dim[ax] = len;
    return set_out(n, &out, x->dtype, 0, err, err_len);
}

bool shape_concat(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len)) return false;
    const Node *x = IN(0);
    int ax = 0;
    if (!get_axis(n, "axis", n->attr.axis, &x->shape, &ax, err, err_len)) return false;
    Shape out = x->shape;
    for (int i = 1; i < n->n_in; i++) {
        const Node *y = IN(i);
        if (y->dtype != x->dtype)
            return FAIL("input %d dtype differs: %s%s vs %s%s", i, dtype_name(x->dtype), SHP(&x->shape),
                        dtype_name(y->dtype), SHP(&y->shape));
        bool same = y->shape.ndim == x->shape.ndim;
        for (int d = 0; same && d < x->shape.ndim; d++) same = d == ax || y->shape.dim[d] == x->shape.dim[d];
        if (!same) return FAIL("input %d shape differs off axis %d: %s vs %s", i, ax, SHP(&x->shape), SHP(&y->shape));
        out.dim[ax] += y->shape.dim[ax]; /* at most 8 * ACC_MAX_DIM: no overflow */
    }
    return set_out(n, &out, x->dtype, 0, err, err_len);
}

bool shape_reduce(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "x", prec_dtype(g, n, 0), err, err_len)) return false;
    const Shape *x = &IN(0)->shape;
    bool keep = n->attr.keepdim;
    Shape out = {.ndim = 0};
    if (n->attr.axis == ATTR_NONE) {
        for (int i = 0; keep && i < x->ndim; i++) out.dim[out.ndim++] = 1;
        return set_out(n, &out, prec_dtype(g, n, -1), 0, err, err_len);
    }
    int ax = 0;
    if (!get_axis(n, "axis", n->attr.axis, x, &ax, err, err_len)) return false;
    for (int i = 0; i < x->ndim; i++)
        if (i != ax || keep) out.dim[out.ndim++] = i == ax ? 1 : x->dim[i];
    return set_out(n, &out, prec_dtype(g, n, -1), 0, err, err_len);
}

/* cast: x to the node's own dtype (set by the precision pass), f32 <-> bf16. */
bool shape_cast(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len)) return false;
    const Node *x = IN(0);
    if (!dtype_is_float(x->dtype) || !dtype_is_float(n->dtype) || x->dtype == n->dtype)
        return FAIL("cannot cast %s%s to %s", dtype_name(x->dtype), SHP(&x->shape), dtype_name(n->dtype));
    return set_out(n, &x->shape, n->dtype, 0, err, err_len);
}

/* float(x): an i32 tensor's values as f32 (exact up to 2^24 in magnitude, as
 * C's conversion rounds beyond). */
bool shape_float(const Graph *g, Node *n, char *err, size_t err_len) {
    if (!check_inputs(g, n, err, err_len) || !want_dtype(g, n, 0, "x", prec_dtype(g, n, 0), err, err_len)) return false;
    return set_out(n, &IN(0)->shape, prec_dtype(g, n, -1), 0, err, err_len);
}
