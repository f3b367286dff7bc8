/* fuse.c - elementwise chains: which consecutive forward steps one kernel runs.
 *
 * requires: an allocated schedule. provides: for every step, whether it is
 * emitted alone, folded into the step after it, or ends a chain (and where
 * the chain starts). A chain is a run of consecutive forward (or recompute)
 * steps of elementwise ops with one output shape, each reading the previous
 * one's tensor, whose tensor nothing else reads: the backward does not need
 * it (else it would be live later) and no other step uses it. The fused
 * kernel reads the chain's input and each op's other operand once and writes
 * only the last tensor: the intermediate tensors keep their planned buffers
 * (the plan, and so the measured peak, does not change) but are never
 * touched, which saves their memory traffic.
 *
 * Operands must be the chain's shape or a suffix of it (a bias, a scalar:
 * read at i mod its size), and must not overlap the chain's output buffer
 * unless they are the same tensor's exact place (an elementwise kernel may
 * write over what it reads at the same index, nothing else). The fused result
 * equals the unfused one bit for bit: each op computes what its own kernel
 * computes, in the same order.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

/* The runtime's code of an op inside a chain (runtime/acc_ops.h), or NULL:
 * the ops of the table's fusion class OPF_ELEM. */
const char *cg_chain_op_name(OpKind op) {
    static const char *const code[OP_COUNT] = {
#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) "ACC_OP_" #e,
#include "ops.def"
#undef X
    };
    return (unsigned)op < OP_COUNT && (op_table[op].flags & OPF_ELEM) ? code[op] : NULL;
}

/* Is `s` a suffix of `full` (after dropping s's leading ones)? */
static bool is_suffix(const Shape *s, const Shape *full) {
    int k = s->ndim;
    while (k > 0 && s->dim[s->ndim - k] == 1) k--; /* leading ones */
    if (k > full->ndim) return false;
    for (int i = 0; i < k; i++)
        if (s->dim[s->ndim - 1 - i] != full->dim[full->ndim - 1 - i]) return false;
    return true;
}

static bool overlaps(const Buffer *a, const Buffer *b) {
    return a->offset < b->offset + b->size_bytes && b->offset < a->offset + a->size_bytes;
}

/* The chain-shaped elementwise step t (in the activation dtype, its inputs
 * too: not a comparison of i32 tensors), or NULL. */
static const Node *ew_node(const Graph *g, const Schedule *s, int t) {
    const Step *st = &s->steps.v[t];
    if (st->kind != ST_FWD && st->kind != ST_RECOMPUTE) return NULL;
    const Node *n = graph_node(g, st->node);
    for (int j = 0; j < n->n_in; j++)
        if (graph_node(g, n->in[j])->dtype != n->dtype) return NULL;
    return cg_chain_op_name(n->op) && n->dtype == g->act_dtype ? n : NULL;
}

/* Fill op k of chain c from step t; `from` is the buffer carrying the chain
 * value into it (-1: t is the head, which takes a full-shape input). False
 * if the step cannot join. */
static bool add_op(const Graph *g, const Schedule *s, int t, int from, const Shape *shape, CgChainOp *op) {
    const Step *st = &s->steps.v[t];
    const Node *n = graph_node(g, st->node);
    memset(op, 0, sizeof *op);
    op->step = t;
    op->op = n->op;
    op->operand_buf = -1;
    op->param = n->op == OP_SCALE                                ? (float)n->attr.alpha
                : n->op == OP_SHIFT                              ? (float)n->attr.beta
                : n->op == OP_DROPOUT                            ? (float)n->attr.p
                : n->op >= OP_EQ_SCALAR && n->op <= OP_GE_SCALAR ? (float)n->attr.value /* x > value */
                                                                 : 0.0f;
    op->op_id = n->op == OP_DROPOUT ? cg_dropout_stream(g, n) : (uint32_t)n->id;
    if (n->n_in == 1) {
        op->value_buf = st->in[0];
        return from < 0 || st->in[0] == from;
    }
    /* binary: which input carries the chain value, which is the operand */
    int v = -1;
    for (int j = 0; j < 2; j++) {
        const Node *x = graph_node(g, n->in[j]);
        bool full = shape_eq(&x->shape, shape);
        if (v < 0 && full && (from < 0 ? true : st->in[j] == from)) v = j;
    }
    if (v < 0 || st->in[0] == st->in[1]) return false;
    const Node *o = graph_node(g, n->in[1 - v]);
    if (!is_suffix(&o->shape, shape) || o->dtype != g->act_dtype) return false;
    op->value_buf = st->in[v];
    op->operand_buf = st->in[1 - v];
    op->operand_right = v == 1; /* the operand is the left input: o OP v */
    op->modulus = shape_elems(&o->shape);
    return true;
}

/* Operands and the chain input must not overlap the output buffer, unless
 * they sit exactly on it with the full shape. */
static bool safe_with_out(const Schedule *s, const CgChain *c, int out_buf) {
    const Buffer *out = &s->bufs.v[out_buf];
    const Buffer *in = &s->bufs.v[c->ops[0].value_buf];
    if (overlaps(in, out) && in->offset != out->offset) return false;
    for (int k = 0; k < c->n_ops; k++) {
        if (c->ops[k].operand_buf < 0) continue;
        const Buffer *b = &s->bufs.v[c->ops[k].operand_buf];
        bool full = c->ops[k].modulus == c->elems;
        if (overlaps(b, out) && !(full && b->offset == out->offset)) return false;
    }
    return true;
}

void cg_fuse(const Graph *g, const Schedule *s, CgFusion *f) {
    int n = s->steps.n;
    f->chain_of = malloc((size_t)(n > 0 ? n : 1) * sizeof *f->chain_of);
    memset(&f->chains, 0, sizeof f->chains);
    for (int t = 0; t < n; t++) f->chain_of[t] = -1;
    for (int t = 0; t < n;) {
        const Node *head = ew_node(g, s, t);
        CgChain c;
        memset(&c, 0, sizeof c);
        if (!head || !add_op(g, s, t, -1, &head->shape, &c.ops[0])) {
            t++;
            continue;
        }
        c.elems = shape_elems(&head->shape);
        c.n_ops = 1;
        int last = t;
        while (c.n_ops < CG_CHAIN_MAX && last + 1 < n) {
            const Step *prev = &s->steps.v[last], *next = &s->steps.v[last + 1];
            const Node *x = ew_node(g, s, last + 1);
            const Buffer *carried = &s->bufs.v[prev->out];
            if (!x || next->kind != prev->kind || !shape_eq(&x->shape, &head->shape) || carried->persistent ||
                carried->last != last + 1 || prev->aux >= 0)
                break;
            CgChain longer = c;
            if (!add_op(g, s, last + 1, prev->out, &head->shape, &longer.ops[c.n_ops])) break;
            longer.n_ops++;
            if (!safe_with_out(s, &longer, next->out)) break;
            c = longer;
            last++;
        }
        if (c.n_ops >= 2) {
            c.out_buf = s->steps.v[last].out;
            for (int k = t; k <= last; k++) f->chain_of[k] = f->chains.n;
            VEC_PUSH(f->chains, c);
        }
        t = last + 1;
    }
}

void cg_fusion_free(CgFusion *f) {
    free(f->chain_of);
    VEC_FREE(f->chains);
}

uint32_t cg_dropout_stream(const Graph *g, const Node *n) {
    uint32_t k = 0;
    for (int i = 0; i < n->id; i++) k += graph_node(g, i)->op == OP_DROPOUT;
    return k;
}
