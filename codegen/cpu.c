/* cpu.c - code generation for the CPU target.
 *
 * requires: a graph, its autodiff and a schedule with offsets that passed the
 * plan check. provides: <model>.c - the schedule as straight-line C calling
 * libaccrt's k_* kernels with constant offsets and shapes, and the model's
 * descriptor (parameters, inputs, arena size) - and <model>.h, the public
 * header with the plan's figures and typed wrappers around libaccrt.
 * Output is deterministic: it depends on nothing but its inputs.
 */
#include <inttypes.h>
#include <string.h>

#include "codegen.h"

typedef struct {
    const Graph *g;
    const Schedule *s;
    FILE *out;
    const CgFusion *fu;
    const CgCopies *cp;
    const DpLayout *dp;          /* data parallel: buckets (NULL: none) */
    const struct CgUnits *units; /* their collectives (NULL: none) */
} Emit;

/* Steps per generated function (see emit_source). */
#define CG_STEPS_PER_FN 128

/* "F(offset)": the float pointer of buffer b ("H(offset)", acc_bf16, for a
 * bf16 tensor or gradient), or NULL. Parameters, their gradients, the loss
 * and the statistics tails are f32; the optimizer state is the runtime's
 * (acc_adamw, by the desc's optimizer_dtype), never a step's operand. */
static const char *ptr(const Emit *e, int b, char *buf) {
    if (b < 0) return "NULL";
    const Buffer *bf = &e->s->bufs.v[b];
    bool bf16 = (bf->kind == BUF_ACT || bf->kind == BUF_GRAD || bf->kind == BUF_INPUT) &&
                graph_node(e->g, bf->node)->dtype == DT_BF16;
    snprintf(buf, 48, "%s(%" PRId64 ")", bf16 ? "H" : "F", bf->offset);
    return buf;
}

/* "_bf16" where buffer b holds bf16 (the helpers k_zero, k_fill), else "". */
static const char *buf_sfx(const Emit *e, int b) {
    char p[48];
    return ptr(e, b, p)[0] == 'H' ? "_bf16" : "";
}

static const char *iptr(const Emit *e, int b, char *buf) {
    if (b < 0) return "NULL";
    snprintf(buf, 48, "I(%" PRId64 ")", e->s->bufs.v[b].offset);
    return buf;
}

static const Node *in_node(const Emit *e, const Node *n, int j) { return graph_node(e->g, n->in[j]); }

static int64_t prod(const Shape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= s->dim[i];
    return p;
}

static int norm_axis(int64_t axis, int rank) { return (int)(axis < 0 ? axis + rank : axis); }

/* "{d0, d1, ...}" of shape s left-padded with ones to rank nd (>= 1). */
static void emit_dims(FILE *out, const Shape *s, int nd) {
    fputc('{', out);
    for (int i = 0; i < nd; i++) {
        int k = i - (nd - s->ndim);
        fprintf(out, "%s%" PRId64, i ? ", " : "", k >= 0 ? s->dim[k] : (int64_t)1);
    }
    fputc('}', out);
}

typedef struct {
    int64_t batch, M, N, K;
    int trans_a, trans_b, b_batched;
} MatmulDims;

/* The kernel's view of a matmul: a (batch, M, K) times b, one b or one per item. */
static MatmulDims matmul_dims(const Emit *e, const Node *n) {
    const Node *a = in_node(e, n, 0), *b = in_node(e, n, 1);
    int ar = a->shape.ndim, rank = n->shape.ndim;
    MatmulDims d = {prod(&a->shape, 0, ar - 2), n->shape.dim[rank - 2],
                    n->shape.dim[rank - 1],     n->attr.transpose_a ? a->shape.dim[ar - 2] : a->shape.dim[ar - 1],
                    n->attr.transpose_a,        n->attr.transpose_b,
                    b->shape.ndim > 2};
    return d;
}

/* linear's inner dimension: the last of x */
static int64_t linear_k(const Emit *e, const Node *n) {
    const Node *x = in_node(e, n, 0);
    return x->shape.dim[x->shape.ndim - 1];
}

typedef struct {
    int64_t B, T, S, H, KVH, D;
} AttnDims;

static AttnDims attn_dims(const Emit *e, const Node *n) {
    const Node *q = in_node(e, n, 0), *k = in_node(e, n, 1);
    int64_t H = n->attr.heads;
    AttnDims d = {q->shape.dim[0],    q->shape.dim[1], k->shape.dim[1], H, n->attr.kv_heads > 0 ? n->attr.kv_heads : H,
                  q->shape.dim[2] / H};
    return d;
}

/* sum/mean: the input viewed as (outer, mid, inner), mid reduced */
static void reduce_dims(const Emit *e, const Node *n, int64_t *outer, int64_t *mid, int64_t *inner) {
    const Node *x = in_node(e, n, 0);
    *outer = 1, *mid = shape_elems(&x->shape), *inner = 1;
    if (n->attr.axis != ATTR_NONE) {
        int ax = norm_axis(n->attr.axis, x->shape.ndim);
        *outer = prod(&x->shape, 0, ax);
        *mid = x->shape.dim[ax];
        *inner = prod(&x->shape, ax + 1, x->shape.ndim);
    }
}

/* "{ static const int64_t so[] = {...}, sizes[] = {...};" of a concat */
static void emit_concat_shapes(Emit *e, const Node *n, int ax) {
    fprintf(e->out, "    {\n        static const int64_t so[] = ");
    emit_dims(e->out, &n->shape, n->shape.ndim);
    fprintf(e->out, ", sizes[] = {");
    for (int j = 0; j < n->n_in; j++) fprintf(e->out, "%s%" PRId64, j ? ", " : "", in_node(e, n, j)->shape.dim[ax]);
    fprintf(e->out, "};\n");
}

/* "_bf16" where n's kernel is the bf16 instance (a bf16 input or output),
 * else "" (f32; int32 tensors through the copies' f32 instance). */
static const char *sfx(const Emit *e, const Node *n) {
    bool bf16 = n->dtype == DT_BF16;
    for (int j = 0; j < n->n_in; j++) bf16 |= in_node(e, n, j)->dtype == DT_BF16;
    return bf16 ? "_bf16" : "";
}

static void emit_binary(Emit *e, const Step *st, const Node *n, bool fwd) {
    const Node *a = in_node(e, n, 0), *b = in_node(e, n, 1);
    int nd = n->shape.ndim > 0 ? n->shape.ndim : 1;
    char p0[48], p1[48], p2[48], p3[48], p4[48];
    fprintf(e->out, "    {\n        static const int64_t so[] = ");
    emit_dims(e->out, &n->shape, nd);
    fprintf(e->out, ", sa[] = ");
    emit_dims(e->out, &a->shape, nd);
    fprintf(e->out, ", sb[] = ");
    emit_dims(e->out, &b->shape, nd);
    fprintf(e->out, ";\n        ");
    const char *k = op_table[n->op].cpu_kernel;
    if (fwd && a->dtype == DT_I32) /* a comparison of i32 operands (exact) */
        fprintf(e->out, "k_cmp_i32_fwd%s(%s, %s, %s, %s, %d, so, sa, sb);\n", sfx(e, n), cg_chain_op_name(n->op),
                ptr(e, st->out, p0), iptr(e, st->in[0], p1), iptr(e, st->in[1], p2), nd);
    else if (fwd)
        fprintf(e->out, "%s_fwd%s(%s, %s, %s, %d, so, sa, sb);\n", k, sfx(e, n), ptr(e, st->out, p0),
                ptr(e, st->in[0], p1), ptr(e, st->in[1], p2), nd);
    else if (!op_table[n->op].grad_reads) /* add, sub: the backward reads no operand */
        fprintf(e->out, "%s_bwd%s(%s, %s, %s, %d, so, sa, sb);\n", k, sfx(e, n), ptr(e, st->grad_in[0], p0),
                ptr(e, st->grad_in[1], p1), ptr(e, st->grad_out, p2), nd);
    else
        fprintf(e->out, "%s_bwd%s(%s, %s, %s, %s, %s, %d, so, sa, sb);\n", k, sfx(e, n), ptr(e, st->grad_in[0], p0),
                ptr(e, st->grad_in[1], p1), ptr(e, st->grad_out, p2), ptr(e, st->in[0], p3), ptr(e, st->in[1], p4), nd);
    fprintf(e->out, "    }\n");
}

/* ---- the emission of each op (the emit column of ir/ops.def) ---------------
 * emit_<op>(e, st, n, fwd) writes the call of n's forward kernel (fwd, also
 * for a recompute step) or its backward kernel (gradients already zeroed if
 * first). */

/* the leaves have no kernel */
static void emit_none(Emit *e, const Step *st, const Node *n, bool fwd) {
    (void)e, (void)st, (void)n, (void)fwd;
    ACC_UNREACHABLE();
}

/* A plain unary elementwise op: <kernel>_fwd(out, x, n) and
 * <kernel>_bwd(dx, dout, saved, n), saved its output or its input as its
 * row's grad_reads say. */
static void emit_unary(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48];
    const char *k = op_table[n->op].cpu_kernel;
    int64_t elems = shape_elems(&n->shape);
    if (fwd)
        fprintf(e->out, "    %s_fwd%s(%s, %s, %" PRId64 ");\n", k, sfx(e, n), ptr(e, st->out, p0),
                ptr(e, st->in[0], p1), elems);
    else
        fprintf(e->out, "    %s_bwd%s(%s, %s, %s, %" PRId64 ");\n", k, sfx(e, n), ptr(e, st->grad_in[0], p1),
                ptr(e, st->grad_out, p0), ptr(e, op_table[n->op].grad_reads & GR_OUT ? st->out : st->in[0], p2), elems);
}

static void emit_matmul(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48], p3[48], p4[48];
    MatmulDims d = matmul_dims(e, n);
    if (fwd)
        fprintf(e->out,
                "    k_matmul_fwd%s(%s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %d, %d, %d);\n",
                sfx(e, n), ptr(e, st->out, p0), ptr(e, st->in[0], p1), ptr(e, st->in[1], p2), d.batch, d.M, d.N, d.K,
                d.trans_a, d.trans_b, d.b_batched);
    else
        fprintf(
            e->out,
            "    k_matmul_bwd%s(%s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %d, %d, %d);\n",
            sfx(e, n), ptr(e, st->grad_in[0], p1), ptr(e, st->grad_in[1], p2), ptr(e, st->grad_out, p0),
            ptr(e, st->in[0], p3), ptr(e, st->in[1], p4), d.batch, d.M, d.N, d.K, d.trans_a, d.trans_b, d.b_batched);
}

static void emit_linear(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48], p3[48], p4[48], p5[48];
    int64_t elems = shape_elems(&n->shape), N = n->shape.dim[n->shape.ndim - 1];
    if (fwd)
        fprintf(e->out, "    k_linear_fwd%s(%s, %s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %d);\n", sfx(e, n),
                ptr(e, st->out, p0), ptr(e, st->in[0], p1), ptr(e, st->in[1], p2), ptr(e, st->in[2], p3), elems / N, N,
                linear_k(e, n), n->attr.transpose_b);
    else
        fprintf(e->out, "    k_linear_bwd%s(%s, %s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %d);\n",
                sfx(e, n), ptr(e, st->grad_in[0], p1), ptr(e, st->grad_in[1], p2), ptr(e, st->grad_in[2], p3),
                ptr(e, st->grad_out, p0), ptr(e, st->in[0], p4), ptr(e, st->in[1], p5), elems / N, N, linear_k(e, n),
                n->attr.transpose_b);
}

/* scale (x * alpha), shift (x + beta) and the comparisons with a number
 * (x > value: eq_scalar ... ge_scalar): one number beside the tensor;
 * scale's backward takes it too, shift's does not (a comparison has none). */
static void emit_scalar(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], num[48] = "";
    bool scale = n->op == OP_SCALE;
    int64_t elems = shape_elems(&n->shape);
    double v = scale ? n->attr.alpha : n->op == OP_SHIFT ? n->attr.beta : n->attr.value;
    if (fwd || scale) snprintf(num, sizeof num, "(float)%.9g, ", v);
    if (fwd && in_node(e, n, 0)->dtype == DT_I32) /* a comparison of an i32 x with the number (exact) */
        fprintf(e->out, "    k_cmp_scalar_i32_fwd%s(%s, %s, %s, %s%" PRId64 ");\n", sfx(e, n), cg_chain_op_name(n->op),
                ptr(e, st->out, p0), iptr(e, st->in[0], p1), num, elems);
    else if (fwd)
        fprintf(e->out, "    %s_fwd%s(%s, %s, %s%" PRId64 ");\n", op_table[n->op].cpu_kernel, sfx(e, n),
                ptr(e, st->out, p0), ptr(e, st->in[0], p1), num, elems);
    else
        fprintf(e->out, "    %s_bwd%s(%s, %s, %s%" PRId64 ");\n", op_table[n->op].cpu_kernel, sfx(e, n),
                ptr(e, st->grad_in[0], p1), ptr(e, st->grad_out, p0), num, elems);
}

/* where(cond, a, b): k_where_fwd(out, cond, a, b, cond_i32, nd, so, sc,
 * sa, sb) and k_where_bwd(da, db, dout, cond, ...); a float cond gets no
 * gradient (its buffer, zeroed by the schedule, stays zero). */
static void emit_where(Emit *e, const Step *st, const Node *n, bool fwd) {
    int nd = n->shape.ndim > 0 ? n->shape.ndim : 1, ci = in_node(e, n, 0)->dtype == DT_I32;
    char p0[48], p1[48], p2[48], p3[48];
    fprintf(e->out, "    {\n        static const int64_t so[] = ");
    emit_dims(e->out, &n->shape, nd);
    const char *names[] = {"sc", "sa", "sb"};
    for (int j = 0; j < 3; j++) {
        fprintf(e->out, ", %s[] = ", names[j]);
        emit_dims(e->out, &in_node(e, n, j)->shape, nd);
    }
    fprintf(e->out, ";\n        ");
    const char *cond = ci ? iptr(e, st->in[0], p3) : ptr(e, st->in[0], p3);
    if (fwd)
        fprintf(e->out, "k_where_fwd%s(%s, %s, %s, %s, %d, %d, so, sc, sa, sb);\n", sfx(e, n), ptr(e, st->out, p0),
                cond, ptr(e, st->in[1], p1), ptr(e, st->in[2], p2), ci, nd);
    else
        fprintf(e->out, "k_where_bwd%s(%s, %s, %s, %s, %d, %d, so, sc, sa, sb);\n", sfx(e, n),
                ptr(e, st->grad_in[1], p0), ptr(e, st->grad_in[2], p1), ptr(e, st->grad_out, p2), cond, ci, nd);
    fprintf(e->out, "    }\n");
}

static void emit_layernorm(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48], p3[48], p4[48], p5[48], p6[48];
    int64_t C = n->shape.dim[n->shape.ndim - 1], rows = shape_elems(&n->shape) / C;
    if (fwd)
        fprintf(e->out, "    k_layernorm_fwd%s(%s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 ", (float)%.9g);\n",
                sfx(e, n), ptr(e, st->out, p0), ptr(e, st->aux, p1), ptr(e, st->in[0], p2), ptr(e, st->in[1], p3),
                ptr(e, st->in[2], p4), rows, C, n->attr.eps);
    else
        fprintf(e->out, "    k_layernorm_bwd%s(%s, %s, %s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 ");\n", sfx(e, n),
                ptr(e, st->grad_in[0], p1), ptr(e, st->grad_in[1], p2), ptr(e, st->grad_in[2], p3),
                ptr(e, st->grad_out, p0), ptr(e, st->in[0], p4), ptr(e, st->in[1], p5), ptr(e, st->aux, p6), rows, C);
}

static void emit_rmsnorm(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48], p3[48], p4[48], p5[48], p6[48];
    int64_t C = n->shape.dim[n->shape.ndim - 1], rows = shape_elems(&n->shape) / C;
    if (fwd)
        fprintf(e->out, "    k_rmsnorm_fwd%s(%s, %s, %s, %s, %" PRId64 ", %" PRId64 ", (float)%.9g);\n", sfx(e, n),
                ptr(e, st->out, p0), ptr(e, st->aux, p1), ptr(e, st->in[0], p2), ptr(e, st->in[1], p3), rows, C,
                n->attr.eps);
    else
        fprintf(e->out, "    k_rmsnorm_bwd%s(%s, %s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 ");\n", sfx(e, n),
                ptr(e, st->grad_in[0], p1), ptr(e, st->grad_in[1], p2), ptr(e, st->grad_out, p0), ptr(e, st->in[0], p4),
                ptr(e, st->in[1], p5), ptr(e, st->aux, p6), rows, C);
}

static void emit_softmax(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48];
    int64_t C = n->shape.dim[n->shape.ndim - 1], rows = shape_elems(&n->shape) / C;
    if (fwd)
        fprintf(e->out, "    k_softmax_fwd%s(%s, %s, %" PRId64 ", %" PRId64 ");\n", sfx(e, n), ptr(e, st->out, p0),
                ptr(e, st->in[0], p1), rows, C);
    else
        fprintf(e->out, "    k_softmax_bwd%s(%s, %s, %s, %" PRId64 ", %" PRId64 ");\n", sfx(e, n),
                ptr(e, st->grad_in[0], p1), ptr(e, st->grad_out, p0), ptr(e, st->out, p2), rows, C);
}

/* attention with a mask or a bias: k_attention_masked_fwd(out, lse, q, k, v,
 * mask, mask_i32, ms, bias, bs, dims..., causal) and
 * k_attention_masked_bwd(dq, dk, dv, dbias, dout, q, k, v, out, lse, mask,
 * mask_i32, ms, bias, bs, ...); ms, bs: the mask's and the bias's element
 * strides over [B, heads, Tq, Tk], 0 where they broadcast (a rank-2 mask is
 * [B, Tk]); an absent operand is NULL. A mask gets no gradient (a float
 * mask's buffer, zeroed by the schedule, stays zero). */
static void emit_attention_masked(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p[12][48];
    AttnDims d = attn_dims(e, n);
    int mi = (int)n->attr.mask, bi = (int)n->attr.bias, m_i32 = 0;
    const char *mask = "NULL", *bias = "NULL", *dbias = "NULL";
    const int64_t full[4] = {d.B, d.H, d.T, d.S};
    int64_t ms[4] = {0, 0, 0, 0}, bs[4] = {0, 0, 0, 0};
    if (n->attr.mask != ATTR_NONE) {
        const Node *m = in_node(e, n, mi);
        m_i32 = m->dtype == DT_I32;
        mask = m_i32 ? iptr(e, st->in[mi], p[9]) : ptr(e, st->in[mi], p[9]);
        ACC_ASSERT(attn_operand_strides(&m->shape, full, true, ms));
    }
    if (n->attr.bias != ATTR_NONE) {
        bias = ptr(e, st->in[bi], p[10]);
        if (!fwd) dbias = ptr(e, st->grad_in[bi], p[11]);
        ACC_ASSERT(attn_operand_strides(&in_node(e, n, bi)->shape, full, false, bs));
    }
    fprintf(e->out,
            "    {\n        static const int64_t ms[] = {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
            "}, bs[] = {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "};\n        ",
            ms[0], ms[1], ms[2], ms[3], bs[0], bs[1], bs[2], bs[3]);
    if (fwd)
        fprintf(e->out, "k_attention_masked_fwd%s(%s, %s, %s, %s, %s, ", sfx(e, n), ptr(e, st->out, p[0]),
                ptr(e, st->aux, p[1]), ptr(e, st->in[0], p[2]), ptr(e, st->in[1], p[3]), ptr(e, st->in[2], p[4]));
    else
        fprintf(e->out, "k_attention_masked_bwd%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, ", sfx(e, n),
                ptr(e, st->grad_in[0], p[0]), ptr(e, st->grad_in[1], p[1]), ptr(e, st->grad_in[2], p[2]), dbias,
                ptr(e, st->grad_out, p[3]), ptr(e, st->in[0], p[4]), ptr(e, st->in[1], p[5]), ptr(e, st->in[2], p[6]),
                ptr(e, st->out, p[7]), ptr(e, st->aux, p[8]));
    fprintf(e->out,
            "%s, %d, ms, %s, bs, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
            ", %d);\n    }\n",
            mask, m_i32, bias, d.B, d.T, d.S, d.H, d.KVH, d.D, n->attr.causal);
}

static void emit_attention(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48], p3[48], p4[48], p5[48], p6[48], p7[48], p8[48];
    AttnDims d = attn_dims(e, n);
    if (n->attr.mask != ATTR_NONE || n->attr.bias != ATTR_NONE) {
        emit_attention_masked(e, st, n, fwd);
        return;
    }
    if (fwd)
        fprintf(e->out,
                "    k_attention_fwd%s(%s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                ", %" PRId64 ", %d);\n",
                sfx(e, n), ptr(e, st->out, p0), ptr(e, st->aux, p1), ptr(e, st->in[0], p2), ptr(e, st->in[1], p3),
                ptr(e, st->in[2], p4), d.B, d.T, d.S, d.H, d.KVH, d.D, n->attr.causal);
    else
        fprintf(e->out,
                "    k_attention_bwd%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64
                ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %d);\n",
                sfx(e, n), ptr(e, st->grad_in[0], p1), ptr(e, st->grad_in[1], p2), ptr(e, st->grad_in[2], p3),
                ptr(e, st->grad_out, p0), ptr(e, st->in[0], p4), ptr(e, st->in[1], p5), ptr(e, st->in[2], p6),
                ptr(e, st->out, p7), ptr(e, st->aux, p8), d.B, d.T, d.S, d.H, d.KVH, d.D, n->attr.causal);
}

static void emit_rope(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48];
    const char *dst = fwd ? ptr(e, st->out, p0) : ptr(e, st->grad_in[0], p1);
    const char *src = fwd ? ptr(e, st->in[0], p1) : ptr(e, st->grad_out, p0);
    fprintf(e->out, "    k_rope_%s%s(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", (float)%.9g);\n",
            fwd ? "fwd" : "bwd", sfx(e, n), dst, src, n->shape.dim[0], n->shape.dim[1], n->attr.heads,
            n->shape.dim[2] / n->attr.heads, n->attr.theta);
}

static void emit_embedding(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48];
    const Node *t = in_node(e, n, 1);
    int64_t elems = shape_elems(&n->shape);
    if (fwd)
        fprintf(e->out,
                "    if (k_embedding_fwd%s(%s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 "))\n"
                "        return acc_fail(ctx, ACC_ERR_DATA, \"%s: index out of range\");\n",
                sfx(e, n), ptr(e, st->out, p0), iptr(e, st->in[0], p1), ptr(e, st->in[1], p2), elems / t->shape.dim[1],
                t->shape.dim[0], t->shape.dim[1], n->name);
    else
        fprintf(e->out,
                "    if (k_embedding_bwd%s(%s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 "))\n"
                "        return acc_fail(ctx, ACC_ERR_DATA, \"%s: index out of range\");\n",
                sfx(e, n), ptr(e, st->grad_in[1], p1), ptr(e, st->grad_out, p0), iptr(e, st->in[0], p2),
                elems / t->shape.dim[1], t->shape.dim[0], t->shape.dim[1], n->name);
}

static void emit_cross_entropy(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48], p3[48], p4[48];
    const Node *l = in_node(e, n, 0);
    int64_t V = l->shape.dim[l->shape.ndim - 1];
    if (fwd)
        fprintf(e->out,
                "    if (k_cross_entropy_fwd%s(%s, %s, %s, %s, %" PRId64 ", %" PRId64 "))\n"
                "        return acc_fail(ctx, ACC_ERR_DATA, \"%s: target out of range\");\n",
                sfx(e, n), ptr(e, st->out, p0), ptr(e, st->aux, p1), ptr(e, st->in[0], p2), iptr(e, st->in[1], p3),
                shape_elems(&l->shape) / V, V, n->name);
    else
        fprintf(e->out,
                "    if (k_cross_entropy_bwd%s(%s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 "))\n"
                "        return acc_fail(ctx, ACC_ERR_DATA, \"%s: target out of range\");\n",
                sfx(e, n), ptr(e, st->grad_in[0], p1), ptr(e, st->grad_out, p0), ptr(e, st->in[0], p2),
                ptr(e, st->aux, p3), iptr(e, st->in[1], p4), shape_elems(&l->shape) / V, V, n->name);
}

static void emit_dropout(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48];
    const char *dst = fwd ? ptr(e, st->out, p0) : ptr(e, st->grad_in[0], p1);
    const char *src = fwd ? ptr(e, st->in[0], p1) : ptr(e, st->grad_out, p0);
    /* p = 0 (acc_forward: ctx->training 0) keeps every element as it is */
    fprintf(e->out,
            "    k_dropout_%s%s(%s, %s, %" PRId64 ", ctx->training ? (float)%.9g : 0.0f, ctx->seed, ctx->step, %u);\n",
            fwd ? "fwd" : "bwd", sfx(e, n), dst, src, shape_elems(&n->shape), n->attr.p, cg_dropout_stream(e->g, n));
}

static void emit_reshape(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48];
    const char *dst = fwd ? ptr(e, st->out, p0) : ptr(e, st->grad_in[0], p1);
    const char *src = fwd ? ptr(e, st->in[0], p1) : ptr(e, st->grad_out, p0);
    fprintf(e->out, "    k_reshape_%s%s(%s, %s, %" PRId64 ");\n", fwd ? "fwd" : "bwd", sfx(e, n), dst, src,
            shape_elems(&n->shape));
}

/* transpose and slice: their forward (out <- x) and backward (dx += dout)
 * kernels take the same arguments */
static void emit_strided(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48];
    const char *dst = fwd ? ptr(e, st->out, p0) : ptr(e, st->grad_in[0], p1);
    const char *src = fwd ? ptr(e, st->in[0], p1) : ptr(e, st->grad_out, p0);
    const char *dir = fwd ? "fwd" : "bwd";
    const Node *x = in_node(e, n, 0);
    int nd = x->shape.ndim;
    fprintf(e->out, "    {\n        static const int64_t sx[] = ");
    emit_dims(e->out, &x->shape, nd);
    if (n->op == OP_TRANSPOSE)
        fprintf(e->out, ";\n        k_transpose_%s%s(%s, %s, %d, sx, %d, %d);\n    }\n", dir, sfx(e, n), dst, src, nd,
                norm_axis(n->attr.dim0, nd), norm_axis(n->attr.dim1, nd));
    else
        fprintf(e->out, ";\n        k_slice_%s%s(%s, %s, %d, sx, %d, %" PRId64 ", %" PRId64 ");\n    }\n", dir,
                sfx(e, n), dst, src, nd, norm_axis(n->attr.axis, nd), n->attr.start, n->attr.len);
}

static void emit_concat(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48];
    int rank = n->shape.ndim, ax = norm_axis(n->attr.axis, rank);
    emit_concat_shapes(e, n, ax);
    if (fwd) {
        fprintf(e->out, "        const %s *xs[] = {", n->dtype == DT_BF16 ? "acc_bf16" : "float");
        for (int j = 0; j < n->n_in; j++) fprintf(e->out, "%s%s", j ? ", " : "", ptr(e, st->in[j], p0));
        fprintf(e->out, "};\n        k_concat_fwd%s(%s, xs, %d, %d, so, %d, sizes);\n    }\n", sfx(e, n),
                ptr(e, st->out, p1), n->n_in, rank, ax);
    } else {
        fprintf(e->out, "        %s *dxs[] = {", n->dtype == DT_BF16 ? "acc_bf16" : "float");
        for (int j = 0; j < n->n_in; j++) fprintf(e->out, "%s%s", j ? ", " : "", ptr(e, st->grad_in[j], p1));
        fprintf(e->out, "};\n        k_concat_bwd%s(dxs, %s, %d, %d, so, %d, sizes);\n    }\n", sfx(e, n),
                ptr(e, st->grad_out, p0), n->n_in, rank, ax);
    }
}

/* cast (the precision pass's): f32 -> bf16 is k_cast_*_bf16, bf16 -> f32
 * k_uncast_*_bf16; forward out = x converted, backward dx += dout converted. */
static void emit_cast(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48];
    const char *dst = fwd ? ptr(e, st->out, p0) : ptr(e, st->grad_in[0], p1);
    const char *src = fwd ? ptr(e, st->in[0], p1) : ptr(e, st->grad_out, p0);
    fprintf(e->out, "    k_%s_%s_bf16(%s, %s, %" PRId64 ");\n", n->dtype == DT_BF16 ? "cast" : "uncast",
            fwd ? "fwd" : "bwd", dst, src, shape_elems(&n->shape));
}

/* float(x): k_float_fwd(out, (const int32_t *)x, n); no backward (an i32
 * input gets no gradient) */
static void emit_float(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48];
    ACC_ASSERT(fwd);
    fprintf(e->out, "    k_float_fwd(%s, %s, %" PRId64 ");\n", ptr(e, st->out, p0), iptr(e, st->in[0], p1),
            shape_elems(&n->shape));
}

/* sum and mean */
static void emit_reduce(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48];
    int64_t outer, mid, inner;
    reduce_dims(e, n, &outer, &mid, &inner);
    const char *dst = fwd ? ptr(e, st->out, p0) : ptr(e, st->grad_in[0], p1);
    const char *src = fwd ? ptr(e, st->in[0], p1) : ptr(e, st->grad_out, p0);
    fprintf(e->out, "    %s_%s%s(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ");\n", op_table[n->op].cpu_kernel,
            fwd ? "fwd" : "bwd", sfx(e, n), dst, src, outer, mid, inner);
}

/* max, min: <kernel>_fwd(out, x, outer, n, inner) and
 * <kernel>_bwd(dx, dout, x, outer, n, inner) (the backward finds the arg
 * max again from x) */
static void emit_argreduce(Emit *e, const Step *st, const Node *n, bool fwd) {
    char p0[48], p1[48], p2[48];
    int64_t outer, mid, inner;
    reduce_dims(e, n, &outer, &mid, &inner);
    if (fwd)
        fprintf(e->out, "    %s_fwd%s(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ");\n", op_table[n->op].cpu_kernel,
                sfx(e, n), ptr(e, st->out, p0), ptr(e, st->in[0], p1), outer, mid, inner);
    else
        fprintf(e->out, "    %s_bwd%s(%s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ");\n",
                op_table[n->op].cpu_kernel, sfx(e, n), ptr(e, st->grad_in[0], p0), ptr(e, st->grad_out, p1),
                ptr(e, st->in[0], p2), outer, mid, inner);
}

/* The emission of every op, from its row. */
typedef void (*EmitFn)(Emit *e, const Step *st, const Node *n, bool fwd);
static const EmitFn emit_op[OP_COUNT] = {
#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) emit,
#include "ops.def"
#undef X
};

/* The kernel call of a forward (or recompute) step. */
static void emit_fwd(Emit *e, const Step *st) {
    const Node *n = graph_node(e->g, st->node);
    emit_op[n->op](e, st, n, true);
}

/* The kernel call of a backward step (gradients already zeroed if first). */
static void emit_bwd(Emit *e, const Step *st) {
    const Node *n = graph_node(e->g, st->node);
    emit_op[n->op](e, st, n, false);
}

/* One kernel for the fused elementwise steps of chain c (codegen/fuse.c). */
static void emit_chain(Emit *e, const CgChain *c) {
    char p0[48], p1[48];
    fprintf(e->out, "    {\n        const k_ew_op ops[] = {\n");
    for (int k = 0; k < c->n_ops; k++) {
        const CgChainOp *op = &c->ops[k];
        fprintf(e->out, "            {%s, %s, %" PRId64 ", %d, %s(float)%.9g%s, %d},\n", cg_chain_op_name(op->op),
                ptr(e, op->operand_buf, p0), op->operand_buf >= 0 ? op->modulus : 1, op->operand_right,
                op->op == OP_DROPOUT ? "ctx->training ? " : "", op->param, op->op == OP_DROPOUT ? " : 0.0f" : "",
                op->op_id);
    }
    fprintf(e->out, "        };\n        k_ew_chain%s(%s, %s, ops, %d, %" PRId64 ", ctx->seed, ctx->step);\n    }\n",
            buf_sfx(e, c->out_buf), ptr(e, c->out_buf, p0), ptr(e, c->ops[0].value_buf, p1), c->n_ops, c->elems);
}

/* The largest index an i32 input may hold: the smallest table or class count
 * among the ops that index with it (0: not an index). */
static int64_t index_bound(const Graph *g, int input) {
    int64_t bound = 0;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        int64_t b = 0;
        if (n->op == OP_EMBEDDING && n->in[0] == input) b = graph_node(g, n->in[1])->shape.dim[0];
        if (n->op == OP_CROSS_ENTROPY && n->in[1] == input) {
            const Node *l = graph_node(g, n->in[0]);
            b = l->shape.dim[l->shape.ndim - 1];
        }
        if (b && (!bound || b < bound)) bound = b;
    }
    return bound;
}

/* The shape the trainer sets: a sliced input's whole batch (micro-batches
 * times the schedule's rows), else the node's. */
static Shape set_shape(const CgOptions *opt, const Node *n) {
    Shape sh = n->shape;
    if (opt->stage_offset && opt->stage_offset[n->id] >= 0) sh.dim[0] *= opt->micro_batches;
    return sh;
}

/* The copies of an offloaded tensor (and its tail) between the arena and
 * the host arena, issued on the copy stream (overlap.c says when). */
static void emit_copy_issue(Emit *e, const CgCopy *c) {
    const Step *st = &e->s->steps.v[c->step];
    const Node *x = graph_node(e->g, st->node);
    bool out = st->kind == ST_OFFLOAD;
    for (int k = 0; k < c->n_ids; k++) {
        int dev = out ? st->in[k] : k ? st->aux : st->out, host = out ? (k ? st->aux : st->out) : st->in[k];
        char p[48];
        fprintf(e->out,
                "    if (acc_copy_issue(ctx, %d, %" PRId64 ", %s, %" PRId64
                ", %d)) return ACC_ERR_DEVICE; /* %s %s */\n",
                c->id + k, e->s->bufs.v[host].offset, ptr(e, dev, p), k ? x->aux_elems * 4 : node_tensor_bytes(x), out,
                out ? "offload" : "fetch", x->name);
    }
}

/* Before step t: the waits for the copies whose bytes it needs; after it:
 * the copies back that may start then. */
static void emit_copy_waits(Emit *e, int t) {
    for (int i = 0; i < e->cp->v.n; i++) {
        const CgCopy *c = &e->cp->v.v[i];
        for (int k = 0; k < c->n_ids && c->wait_before == t; k++)
            fprintf(e->out, "    if (acc_copy_wait(ctx, %d)) return ACC_ERR_DEVICE;\n", c->id + k);
    }
}

static void emit_copy_issues_after(Emit *e, int t) {
    for (int i = 0; i < e->cp->v.n; i++)
        if (e->cp->v.v[i].issue_after == t && e->s->steps.v[e->cp->v.v[i].step].kind == ST_FETCH)
            emit_copy_issue(e, &e->cp->v.v[i]);
}

/* Data parallel: the collectives of the gradients. A unit is one
 * collective: a bucket (ZeRO-0 and -1: its gradients are one buffer's run),
 * or with ZeRO-2 one parameter of a bucket (its gradient a buffer of the
 * plan). The units of bucket k start right after the code that writes its
 * last gradient; with ZeRO-2 a unit is done (waited for, its piece moved to
 * the shard) before the first later step that writes over its buffer. */
typedef struct CgUnits {
    int n;
    int *bucket, *node; /* [n]: node -1: the whole bucket */
    int *done_before;   /* [n]: ZeRO-2: the step before which it is done (-1: the end of the run) */
    int *ready;         /* [n_buckets]: the emitted position after which bucket k is final, -1 */
} CgUnits;

static void emit_grad_ready_after(Emit *e, int t) {
    for (int j = 0; e->units && j < e->units->n; j++)
        if (e->units->ready[e->units->bucket[j]] == t)
            fprintf(e->out, "    {\n        int rc_ = acc_grad_ready(ctx, %d);\n        if (rc_) return rc_;\n    }\n",
                    j);
}

static void emit_grad_done_before(Emit *e, int t) {
    for (int j = 0; e->units && j < e->units->n; j++)
        if (e->units->done_before[j] == t)
            fprintf(e->out, "    {\n        int rc_ = acc_grad_done(ctx, %d);\n        if (rc_) return rc_;\n    }\n",
                    j);
}

static void cg_units(const Schedule *s, const CgFusion *fu, const DpLayout *dp, CgUnits *u) {
    memset(u, 0, sizeof *u);
    if (!dp || !dp->n_buckets) return;
    int n = s->g->nodes.n, cap = dp->zero == 2 ? n : dp->n_buckets;
    u->bucket = acc_xrealloc(NULL, (size_t)cap * sizeof(int));
    u->node = acc_xrealloc(NULL, (size_t)cap * sizeof(int));
    u->done_before = acc_xrealloc(NULL, (size_t)cap * sizeof(int));
    u->ready = acc_xrealloc(NULL, (size_t)dp->n_buckets * sizeof(int));
    dp_ready_steps(dp, s, u->ready);
    for (int k = 0; k < dp->n_buckets; k++) {
        int c = u->ready[k] >= 0 ? fu->chain_of[u->ready[k]] : -1;
        if (c >= 0) u->ready[k] = fu->chains.v[c].ops[fu->chains.v[c].n_ops - 1].step;
        if (dp->zero != 2) {
            u->bucket[u->n] = k, u->node[u->n] = -1, u->done_before[u->n++] = -1;
            continue;
        }
        for (int i = n - 1; i >= 0; i--) { /* a parameter without a gradient has no collective */
            if (dp->bucket_of[i] != k || s->bufs.v[s->pgrad_buf[i]].first < 0) continue;
            int b = s->pgrad_buf[i];
            u->bucket[u->n] = k, u->node[u->n] = i,
            u->done_before[u->n++] = sched_first_overwrite(s, b, s->bufs.v[b].last);
        }
    }
}

static void cg_units_free(CgUnits *u) {
    free(u->bucket);
    free(u->node);
    free(u->done_before);
    free(u->ready);
}

/* FNV-1a: h mixed with the 8 bytes of x. */
static uint64_t mix(uint64_t h, int64_t x) {
    for (int b = 0; b < 8; b++) h = (h ^ (((uint64_t)x >> (8 * b)) & 0xff)) * 1099511628211ULL;
    return h;
}

/* A hash of the plan's steps, buffers and buckets: what every rank must
 * share. */
static uint64_t plan_hash(const Schedule *s, const DpLayout *dp, const CgOptions *opt) {
    uint64_t h = 1469598103934665603ULL;
    for (int t = 0; t < s->steps.n; t++) {
        const Step *st = &s->steps.v[t];
        int64_t f[] = {st->kind, st->node, st->out, st->aux, st->grad_out};
        for (size_t k = 0; k < sizeof f / sizeof *f; k++) h = mix(h, f[k]);
        for (int j = 0; j < ACC_MAX_IN; j++) h = mix(mix(h, st->in[j]), st->grad_in[j]);
    }
    for (int i = 0; i < s->bufs.n; i++) h = mix(mix(h, s->bufs.v[i].offset), s->bufs.v[i].size_bytes);
    h = mix(mix(h, opt->mem.total_bytes), opt->micro_batches);
    if (dp) {
        h = mix(mix(mix(h, dp->ranks), dp->zero), dp->n_buckets);
        for (int i = 0; i < s->g->nodes.n; i++) h = mix(mix(h, dp->bucket_of[i]), dp->pad[i]);
    }
    return h;
}

/* The descriptor's units (acc_bucket): a bucket is a run of consecutive
 * parameters, their gradients in the same layout (checked); a ZeRO-2 unit
 * is one parameter's gradient buffer. */
static void emit_buckets(Emit *e) {
    const Schedule *s = e->s;
    const DpLayout *dp = e->dp;
    FILE *o = e->out;
    fprintf(o, "static const acc_bucket buckets[] = {\n");
    int64_t shard = 0;
    for (int j = 0; j < e->units->n; j++) {
        int64_t grad = -1, param = -1, bytes = 0;
        for (int i = 0; i < e->g->nodes.n; i++) {
            if (dp->bucket_of[i] != e->units->bucket[j] || (e->units->node[j] >= 0 && i != e->units->node[j])) continue;
            const Buffer *p = &s->bufs.v[s->param_buf[i]], *gr = &s->bufs.v[s->pgrad_buf[i]];
            if (grad < 0) grad = gr->offset, param = p->offset;
            ACC_ASSERT(gr->offset == grad + bytes && p->offset == param + bytes && p->size_bytes == gr->size_bytes);
            bytes += gr->size_bytes;
        }
        fprintf(o, "    {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "},\n", grad, param, bytes, shard);
        if (dp->zero) {
            ACC_ASSERT(bytes % (4 * dp->ranks) == 0);
            shard += bytes / 4 / dp->ranks;
        }
    }
    fprintf(o, "};\n\n");
}

static void emit_desc_dims(FILE *o, const Shape *s) {
    fprintf(o, "%d, {", s->ndim);
    for (int i = 0; i < s->ndim; i++) fprintf(o, "%s%" PRId64, i ? ", " : "", s->dim[i]);
    fprintf(o, "}, %" PRId64, shape_elems(s));
}

static void emit_source(Emit *e, const CgOptions *opt) {
    const Graph *g = e->g;
    const Schedule *s = e->s;
    FILE *o = e->out;
    const char *m = g->model;
    fprintf(
        o,
        "/* %s.c - generated by acc %s from %s; do not edit.\n * target %s, %d steps (%d recomputed), arena %" PRId64
        " bytes. */\n",
        m, ACC_VERSION, g->source, opt->target->name, s->steps.n, s->n_recompute, s->arena_bytes);
    const CgTarget *tg = opt->target;
    fprintf(o,
            "#include <stddef.h>\n#include <stdint.h>\n\n#include \"accrt.h\"\n#include \"%s\"\n#include \"%s.h\"\n\n",
            tg->kernels_header, m);
    fprintf(o, "#define F(off) ((float *)(A + (off)))\n#define I(off) ((const int32_t *)(A + (off)))\n");
    if (g->act_dtype == DT_BF16) fprintf(o, "#define H(off) ((acc_bf16 *)(A + (off)))\n");
    fprintf(o, "\n");
    /* the schedule in functions of at most CG_STEPS_PER_FN steps: cc's time
     * on one function grows faster than its length */
    int n_parts = 0, n_fwd_parts = -1, in_part = 0, seed_t = -1;
    for (int t = 0; t < s->steps.n; t++) {
        /* a new part every CG_STEPS_PER_FN steps and at the seed, so that
         * the parts before the seed are the forward alone (run_forward) */
        if (s->steps.v[t].kind == ST_SEED && n_fwd_parts < 0) {
            n_fwd_parts = n_parts;
            seed_t = t;
            in_part = 0;
        }
        if (in_part++ % CG_STEPS_PER_FN == 0) {
            if (n_parts) fprintf(o, "    return ACC_OK;\n}\n\n");
            fprintf(
                o,
                "static int run_%d(acc_ctx *ctx) {\n    unsigned char *A = ctx->arena;\n    acc_dev *D = ctx->dev;\n"
                "    (void)A;\n    (void)D;\n",
                n_parts++);
        }
        const Step *st = &s->steps.v[t];
        const Node *n = graph_node(g, st->node);
        char p[48];
        const char *const *kind = sched_step_kinds;
        fprintf(o, "    /* %d: %s %s (%s) */\n", t, kind[st->kind], n->name, op_table[n->op].name);
        /* run_forward ends at the seed: every forward step, and every op
         * of a fused chain, falls on one side of it */
        ACC_ASSERT(st->kind != ST_FWD || n_fwd_parts < 0);
        emit_copy_waits(e, t);
        emit_grad_done_before(e, t);
        int ch = e->fu->chain_of[t];
        if (ch >= 0) {
            const CgChain *c = &e->fu->chains.v[ch];
            ACC_ASSERT(seed_t < 0 || c->ops[0].step > seed_t);
            if (c->ops[c->n_ops - 1].step == t) emit_chain(e, c);
            else fprintf(o, "    /* (fused into step %d) */\n", c->ops[c->n_ops - 1].step);
            emit_copy_issues_after(e, t);
            emit_grad_ready_after(e, t);
            continue;
        }
        switch (st->kind) {
        case ST_FWD:
        case ST_RECOMPUTE: emit_fwd(e, st); break;
        case ST_SEED:
            /* micro-batches of a mean: each seeds 1 / micro_batches */
            /* (and of ranks: 1 / ranks more, the reduction a sum) */
            if (opt->loss_scale * opt->rank_scale == 1.0f)
                fprintf(o, "    acc_phase(ctx, ACC_PHASE_BWD);\n    k_fill%s(%s, 1.0f, 1);\n", buf_sfx(e, st->grad_out),
                        ptr(e, st->grad_out, p));
            else
                fprintf(o, "    acc_phase(ctx, ACC_PHASE_BWD);\n    k_fill%s(%s, (float)%.9g, 1);\n",
                        buf_sfx(e, st->grad_out), ptr(e, st->grad_out, p), opt->loss_scale * opt->rank_scale);
            break;
        case ST_OFFLOAD:
            for (int i = 0; i < e->cp->v.n; i++)
                if (e->cp->v.v[i].step == t) emit_copy_issue(e, &e->cp->v.v[i]);
            break;
        case ST_FETCH: break; /* issued earlier, waited for above */
        case ST_BWD:
            /* a parameter's gradient is an accumulator: zeroed unless the
             * step adds to it (acc_forward_backward) */
            for (int j = 0; j < n->n_in; j++)
                if (st->zero_in[j])
                    fprintf(o, "    %sk_zero%s(%s, %" PRId64 ");\n",
                            s->bufs.v[st->grad_in[j]].persistent && s->bufs.v[st->grad_in[j]].kind == BUF_PGRAD
                                ? "if (!ctx->accumulate) "
                                : "",
                            buf_sfx(e, st->grad_in[j]), ptr(e, st->grad_in[j], p),
                            shape_elems(&in_node(e, n, j)->shape));
            emit_bwd(e, st);
            break;
        }
        emit_copy_issues_after(e, t);
        emit_grad_ready_after(e, t);
    }
    if (n_parts) fprintf(o, "    return ACC_OK;\n}\n\n");
    /* every copy of the run waited for before it ends (a device's copy
     * stream joins the step's) */
    const char *sync = e->cp->n_ids ? "    if (acc_copy_sync(ctx)) return ACC_ERR_DEVICE;\n" : "";
    /* a part's failure (an index out of range: acc_fail) ends the step */
    fprintf(o, "static int run(acc_ctx *ctx) {\n    int rc;\n");
    for (int k = 0; k < n_parts; k++) fprintf(o, "    if ((rc = run_%d(ctx))) return rc;\n", k);
    /* data parallel: a bucket no backward step writes is final at the end;
     * the run ends when every bucket's collective has */
    for (int j = 0; e->units && j < e->units->n; j++)
        if (e->units->ready[e->units->bucket[j]] < 0)
            fprintf(o, "    if ((rc = acc_grad_ready(ctx, %d))) return rc;\n", j);
    if (e->units && e->units->n) fprintf(o, "    if ((rc = acc_grad_sync(ctx))) return rc;\n");
    fprintf(o, "%s    (void)rc;\n    return ACC_OK;\n}\n\n", sync);
    /* the forward alone: every step before the seed (a fused chain never
     * spans the seed: the seed is no elementwise op) */
    ACC_ASSERT(n_fwd_parts >= 0);
    fprintf(o, "static int run_forward(acc_ctx *ctx) {\n    int rc;\n");
    for (int k = 0; k < n_fwd_parts; k++) fprintf(o, "    if ((rc = run_%d(ctx))) return rc;\n", k);
    fprintf(o, "%s    (void)rc;\n    return ACC_OK;\n}\n\n", sync);

    fprintf(o, "static const acc_param_desc params[] = {\n");
    int n_params = 0, n_inputs = 0;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        if (n->op != OP_PARAM) continue;
        n_params++;
        fprintf(o, "    {\"%s\", ", n->name);
        emit_desc_dims(o, &n->shape);
        fprintf(o, ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %d, (float)%.9g},\n",
                s->bufs.v[s->param_buf[i]].offset, s->bufs.v[s->pgrad_buf[i]].offset,
                s->adam_m_buf[i] >= 0 ? s->bufs.v[s->adam_m_buf[i]].offset : -1,
                s->adam_v_buf[i] >= 0 ? s->bufs.v[s->adam_v_buf[i]].offset : -1, (int)n->init.kind, n->init.scale);
    }
    fprintf(o, "};\n\nstatic const acc_input_desc inputs[] = {\n");
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        if (n->op != OP_INPUT) continue;
        n_inputs++;
        fprintf(o, "    {\"%s\", %s, ", n->name, n->dtype == DT_I32 ? "ACC_DT_I32" : "ACC_DT_F32");
        Shape full = set_shape(opt, n);
        emit_desc_dims(o, &full);
        fprintf(o, ", %" PRId64 ", %" PRId64 ", %" PRId64 "},\n", s->bufs.v[s->input_buf[i]].offset,
                n->dtype == DT_I32 ? index_bound(g, i) : 0, opt->stage_offset ? opt->stage_offset[i] : -1);
    }
    fprintf(o, "};\n\n");
    int64_t ws_off = opt->mem.workspace_offset, arena = opt->mem.total_bytes;
    if (tg->device) {
        fprintf(o, "extern const acc_device acc_device_%s;\n", tg->device);
        if (tg->nvrtc) fprintf(o, "extern const acc_image %s_images[];\n", m);
        fprintf(o, "\n");
    }
    bool dp = e->dp && e->dp->ranks > 1;
    if (dp) emit_buckets(e);
    fprintf(o, "static const acc_model_desc desc = {\n");
    fprintf(o, "    .api_version = ACC_API_VERSION,\n    .model_name = \"%s\",\n    .target = \"%s\",\n", m, tg->name);
    if (tg->device) {
        fprintf(o, "    .device = &acc_device_%s,\n", tg->device);
        if (tg->nvrtc) fprintf(o, "    .images = %s_images,\n    .n_images = %d,\n", m, opt->n_images);
        fprintf(o, "    .workspace_offset = %" PRId64 ",\n    .workspace_bytes = %" PRId64 ",\n    .tf32 = %d,\n",
                ws_off, opt->mem.workspace_bytes, opt->tf32);
    }
    fprintf(o,
            "    .arena_bytes = %" PRId64 ",\n    .n_params = %d,\n    .params = params,\n    .n_inputs = %d,\n"
            "    .inputs = inputs,\n    .loss_offset = %" PRId64 ",\n    .has_optimizer = %d,\n"
            "    .optimizer_dtype = %s,\n    .run = run,\n    .run_forward = run_forward,\n",
            arena, n_params, n_inputs, s->bufs.v[s->loss_buf].offset, s->optimizer != OPT_STATE_NONE,
            s->optimizer == OPT_STATE_BF16 ? "ACC_DT_BF16" : "ACC_DT_F32");
    fprintf(o,
            "    .budget_bytes = %" PRId64 ",\n    .planned_peak_bytes = %" PRId64 ",\n    .plan_summary = \"%s\",\n",
            opt->budget_bytes, arena, opt->plan_summary ? opt->plan_summary : "");
    fprintf(o,
            "    .micro_batches = %d,\n    .loss_scale = (float)%.9g,\n    .host_bytes = %" PRId64
            ",\n    .optimizer_host_bytes = %" PRId64 ",\n    .copy_ids = %d,\n",
            opt->micro_batches, opt->loss_scale, s->host_bytes,
            s->optimizer == OPT_STATE_HOST ? 8 * graph_param_count(g) : 0, e->cp->n_ids);
    if (dp)
        fprintf(o,
                "    .ranks = %d,\n    .zero = %d,\n    .rank_scale = (float)%.9g,\n    .n_buckets = %d,\n"
                "    .buckets = buckets,\n    .shard_m_offset = %" PRId64 ",\n    .shard_v_offset = %" PRId64
                ",\n    .shard_elems = %" PRId64 ",\n    .shard_g_offset = %" PRId64 ",\n",
                e->dp->ranks, e->dp->zero, opt->rank_scale, e->units->n,
                s->shard_m_buf >= 0 ? s->bufs.v[s->shard_m_buf].offset : -1,
                s->shard_v_buf >= 0 ? s->bufs.v[s->shard_v_buf].offset : -1, dp_shard_elems(e->dp, g),
                s->shard_g_buf >= 0 ? s->bufs.v[s->shard_g_buf].offset : -1);
    fprintf(o, "    .plan_hash = 0x%016" PRIx64 "ULL,\n};\n\n", plan_hash(s, e->dp, opt));
    fprintf(o, "const acc_model_desc *%s_desc(void) { return &desc; }\n", m);
}

static void emit_header(Emit *e, const CgOptions *opt, const Autodiff *ad) {
    const Graph *g = e->g;
    const Schedule *s = e->s;
    FILE *o = e->out;
    const char *m = g->model;
    char up[128];
    size_t k = 0;
    for (; m[k] && k < sizeof up - 1; k++) up[k] = (char)(m[k] >= 'a' && m[k] <= 'z' ? m[k] - 32 : m[k]);
    up[k] = 0;
    int64_t cat[BUF_KIND_COUNT] = {0};
    for (int i = 0; i < s->bufs.n; i++)
        if (s->bufs.v[i].persistent) cat[s->bufs.v[i].kind] += s->bufs.v[i].size_bytes;
    fprintf(o, "/* %s.h - generated by acc %s from %s. DO NOT EDIT.\n *\n", m, ACC_VERSION, g->source);
    fprintf(o, " * Training step of model '%s' for the %s target, %s.\n", m, opt->target->name,
            g->act_dtype == DT_BF16 ? "bf16 activations (f32 parameters, gradients of parameters, optimizer state)"
            : opt->tf32             ? "f32 (GEMMs on TF32 tensor cores)"
                                    : "f32");
    if (s->optimizer == OPT_STATE_HOST)
        fprintf(o, " * AdamW moments m and v in host memory, updated there (--optimizer-state host).\n");
    if (s->optimizer == OPT_STATE_BF16)
        fprintf(o, " * AdamW moments m and v stored in bf16 (--optimizer-state bf16).\n");
    fprintf(o, " * Memory plan (bytes):\n");
    fprintf(o, " *   budget                 %16" PRId64 "\n", opt->budget_bytes);
    fprintf(o, " *   arena (planned peak)   %16" PRId64 "\n", opt->mem.total_bytes);
    if (opt->mem.workspace_bytes)
        fprintf(o, " *     %-20s %16" PRId64 "\n", "GEMM workspace", opt->mem.workspace_bytes);
    if (opt->mem.staging_bytes)
        fprintf(o, " *     %-20s %16" PRId64 "  (the whole batch, sliced into %d micro-batches)\n", "batch inputs",
                opt->mem.staging_bytes, opt->micro_batches);
    for (int c = 0; c < BUF_KIND_COUNT; c++)
        if (cat[c]) fprintf(o, " *     %-20s %16" PRId64 "\n", buf_kind_name((BufKind)c), cat[c]);
    fprintf(o, " *     %-20s %16" PRId64 "  (activations and gradients, statically placed)\n", "dynamic",
            s->arena_bytes - s->persistent_bytes);
    fprintf(o, " *   max-live lower bound   %16" PRId64 "\n", s->peak_live_bytes);
    fprintf(o, " *   steps %d, recomputed %d\n", s->steps.n, s->n_recompute);
    if (opt->plan_summary && *opt->plan_summary) fprintf(o, " *   plan: %s\n", opt->plan_summary);
    fprintf(o, " *\n * Link: lib%s.a %s %s\n */\n", m, opt->target->archives, opt->target->libs);
    fprintf(o, "#ifndef ACC_MODEL_%s_H\n#define ACC_MODEL_%s_H\n\n#include \"accrt.h\"\n\n", up, up);
    fprintf(o, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    fprintf(o, "#define %s_ARENA_BYTES %" PRId64 "\n\n", up, opt->mem.total_bytes);
    fprintf(o, "typedef acc_model %s_model;\n\n", m);
    fprintf(o,
            "/* The model as data: parameters, inputs, arena, schedule. */\nconst acc_model_desc *%s_desc(void);\n\n",
            m);
    fprintf(o,
            "/* The API (accrt.h documents each call). A training loop: set the inputs, %s_step\n"
            " * (%s_forward_backward with accumulate = 1 adds the gradients of further\n"
            " * micro-batches), optionally %s_clip_grad_norm, then %s_adamw with each update's\n"
            " * learning rate; %s_forward gives an evaluation loss (dropout off). */\n",
            m, m, m, m, m);
    fprintf(
        o,
        "static inline int %s_create(const acc_options *opt, %s_model **out) { return acc_create(%s_desc(), opt, out); }\n"
        "static inline void %s_destroy(%s_model *m) { acc_destroy(m); }\n"
        "static inline int %s_init_params(%s_model *m, uint64_t seed) { return acc_init_params(m, seed); }\n"
        "static inline int %s_load_params(%s_model *m, const char *path) { return acc_load_params(m, path); }\n"
        "static inline int %s_save_params(%s_model *m, const char *path) { return acc_save_params(m, path); }\n"
        "static inline int %s_step(%s_model *m, float *loss) { return acc_step(m, loss); }\n"
        "static inline int %s_forward_backward(%s_model *m, float *loss, int accumulate) {\n"
        "    return acc_forward_backward(m, loss, accumulate);\n}\n"
        "static inline int %s_zero_grads(%s_model *m) { return acc_zero_grads(m); }\n"
        "static inline int %s_forward(%s_model *m, float *loss) { return acc_forward(m, loss); }\n"
        "static inline int %s_clip_grad_norm(%s_model *m, float max_norm, float *norm) {\n"
        "    return acc_clip_grad_norm(m, max_norm, norm);\n}\n"
        "static inline int %s_adamw(%s_model *m, float lr, float beta1, float beta2, float eps, float wd) {\n"
        "    return acc_adamw(m, lr, beta1, beta2, eps, wd);\n}\n"
        "static inline int %s_param(%s_model *m, const char *name, float **data, int64_t *elems) {\n"
        "    return acc_param(m, name, data, elems);\n}\n"
        "static inline int %s_grad(%s_model *m, const char *name, float **data, int64_t *elems) {\n"
        "    return acc_grad(m, name, data, elems);\n}\n"
        "static inline int %s_counters(const %s_model *m, acc_counters *c) { return acc_get_counters(m, c); }\n"
        "static inline const char *%s_status_string(int status) { return acc_status_string(status); }\n"
        "static inline const char *%s_last_error(const %s_model *m) { return acc_last_error(m); }\n\n",
        m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m);
    fprintf(o,
            "/* Data parallel (compiled with --ranks; the plan is for %d rank%s): the ranks' communicator\n"
            " * (acc_comm_mpi in accrt_mpi.h), and whether steps reduce the gradients. */\n"
            "static inline int %s_set_comm(%s_model *m, acc_comm *comm) { return acc_set_comm(m, comm); }\n"
            "static inline int %s_set_grad_sync(%s_model *m, int sync) { return acc_set_grad_sync(m, sync); }\n\n",
            e->dp ? e->dp->ranks : 1, e->dp ? "s" : "", m, m, m, m);
    fprintf(o, "/* Inputs, with their exact sizes. */\n");
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        if (n->op != OP_INPUT) continue;
        char buf[ACC_SHAPE_STR];
        const char *ct = n->dtype == DT_I32 ? "int32_t" : "float";
        Shape full = set_shape(opt, n);
        fprintf(o,
                "/* %s: %s%s */\nstatic inline int %s_set_%s(%s_model *m, const %s *data) {\n"
                "    return acc_set_input(m, \"%s\", data, %" PRId64 ");\n}\n",
                n->name, dtype_name(n->dtype), shape_str(&full, buf), m, n->name, m, ct, n->name,
                shape_elems(&full) * (int64_t)dtype_size(n->dtype));
    }
    (void)ad;
    fprintf(o, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

void cg_emit_host(const Graph *g, const Autodiff *ad, const Schedule *s, const CgOptions *o, FILE *c_out, FILE *h_out) {
    CgFusion fu;
    cg_fuse(g, s, &fu);
    for (int t = 0; o->no_fuse && t < s->steps.n; t++) fu.chain_of[t] = -1;
    CgCopies cp;
    cg_copies(s, &fu, &cp);
    const DpLayout *dp = o->dp && o->dp->ranks > 1 ? o->dp : NULL;
    CgUnits units;
    cg_units(s, &fu, dp, &units);
    Emit e = {g, s, c_out, &fu, &cp, dp, dp ? &units : NULL};
    emit_source(&e, o);
    e.out = h_out;
    emit_header(&e, o, ad);
    cg_units_free(&units);
    cg_copies_free(&cp);
    cg_fusion_free(&fu);
}
