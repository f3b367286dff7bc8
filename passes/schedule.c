/* schedule.c - the training step as a fixed list of steps over buffers.
 *
 * requires: autodiff for the graph and a decision per node. provides: the
 * forward steps in topological order, a SEED step (d loss = 1), the backward
 * steps in reverse order with RECOMPUTE steps inserted just before the first
 * backward step that reads a tensor the plan dropped, and every buffer's live
 * interval. A tensor decided RECOMPUTE lives in the forward until its last
 * forward read; its recomputed copy lives from the RECOMPUTE step to its last
 * backward read. Liveness comes from the reads alone, so a buffer is freed
 * right after its last use.
 */
#include <string.h>

#include "passes.h"

const char *buf_kind_name(BufKind k) {
    static const char *const names[BUF_KIND_COUNT] = {"parameters", "gradients",   "optimizer_m", "optimizer_v",
                                                      "inputs",     "loss",        "activations", "statistics",
                                                      "activation_gradients"};
    return names[k];
}

typedef struct {
    const Graph *g;
    const Autodiff *ad;
    const Decision *dec;
    Schedule *s;
    int *cur, *cur_aux; /* [n] buffer holding node's tensor / aux now, -1 if none */
    int *grad;          /* [n] gradient buffer, -1 until its first contribution */
} Builder;

static int64_t round_up(int64_t x) { return (x + ACC_ALIGN - 1) / ACC_ALIGN * ACC_ALIGN; }

static int new_buf(Schedule *s, BufKind k, int node, int64_t bytes, bool persistent) {
    Buffer b = {k, node, round_up(bytes > 0 ? bytes : 1), -1, -1, -1, persistent};
    VEC_PUSH(s->bufs, b);
    return s->bufs.n - 1;
}

static Step blank_step(StepKind k, int node) {
    Step st;
    memset(&st, 0, sizeof st);
    st.kind = k;
    st.node = node;
    st.out = st.aux = st.grad_out = -1;
    for (int j = 0; j < ACC_MAX_IN; j++) st.in[j] = st.grad_in[j] = -1;
    return st;
}

static int input_buf(Builder *b, int node) {
    const Node *x = graph_node(b->g, node);
    if (x->op == OP_PARAM) return b->s->param_buf[node];
    if (x->op == OP_INPUT) return b->s->input_buf[node];
    return b->cur[node];
}

/* Compute node (forward or recompute): its inputs must be available. */
static void emit_compute(Builder *b, int node, StepKind kind) {
    const Node *x = graph_node(b->g, node);
    Step st = blank_step(kind, node);
    for (int j = 0; j < x->n_in; j++) {
        st.in[j] = input_buf(b, x->in[j]);
        ACC_ASSERT(st.in[j] >= 0);
    }
    bool is_loss = node == b->g->loss;
    if (is_loss && kind == ST_FWD)
        st.out = b->s->loss_buf;
    else
        st.out = new_buf(b->s, BUF_ACT, node, shape_elems(&x->shape) * (int64_t)dtype_size(x->dtype), false);
    if (x->aux_elems) st.aux = new_buf(b->s, BUF_AUX, node, x->aux_elems * 4, false);
    b->cur[node] = st.out;
    b->cur_aux[node] = st.aux;
    VEC_PUSH(b->s->steps, st);
    if (kind == ST_RECOMPUTE) b->s->n_recompute++;
}

/* Make node's tensor available for a backward read, recomputing it (and
 * whatever dropped ancestors it needs) if the plan dropped it. */
static void ensure(Builder *b, int node) {
    const Node *x = graph_node(b->g, node);
    if ((op_table[x->op].flags & OPF_LEAF) || b->cur[node] >= 0) return;
    for (int j = 0; j < x->n_in; j++) ensure(b, x->in[j]);
    emit_compute(b, node, ST_RECOMPUTE);
}

static void emit_backward(Builder *b, int node) {
    const Node *x = graph_node(b->g, node);
    GradReads r = ad_reads(b->ad, node);
    for (int j = 0; j < x->n_in; j++)
        if (r.in[j]) ensure(b, x->in[j]);
    if (r.out || r.aux) ensure(b, node);
    Step st = blank_step(ST_BWD, node);
    for (int j = 0; j < x->n_in; j++)
        if (r.in[j]) st.in[j] = input_buf(b, x->in[j]);
    if (r.out) st.out = node == b->g->loss ? b->s->loss_buf : b->cur[node];
    if (r.aux) st.aux = b->cur_aux[node];
    st.grad_out = b->grad[node];
    ACC_ASSERT(st.grad_out >= 0);
    for (int j = 0; j < x->n_in; j++) {
        int in = x->in[j];
        if (!ad_input_gets_grad(b->ad, node, j)) continue;
        if (b->grad[in] < 0) {
            const Node *y = graph_node(b->g, in);
            if (y->op == OP_PARAM) {
                b->grad[in] = b->s->pgrad_buf[in];
            } else {
                b->grad[in] = new_buf(b->s, BUF_GRAD, in, shape_elems(&y->shape) * 4, false);
            }
            st.zero_in[j] = true;
        }
        st.grad_in[j] = b->grad[in];
    }
    VEC_PUSH(b->s->steps, st);
}

void sched_build(const Graph *g, const Autodiff *ad, const Decision *dec, bool optimizer, Schedule *s) {
    memset(s, 0, sizeof *s);
    sched_rebuild(g, ad, dec, optimizer, s);
}

void sched_rebuild(const Graph *g, const Autodiff *ad, const Decision *dec, bool optimizer, Schedule *s) {
    int n = g->nodes.n;
    Schedule keep = *s; /* reuse the arrays' memory: the planner rebuilds thousands of times */
    memset(s, 0, sizeof *s);
    s->steps.v = keep.steps.v, s->steps.cap = keep.steps.cap;
    s->bufs.v = keep.bufs.v, s->bufs.cap = keep.bufs.cap;
    s->g = g;
    s->optimizer = optimizer;
    int **maps[] = {&s->param_buf, &s->pgrad_buf, &s->adam_m_buf, &s->adam_v_buf, &s->input_buf};
    int *kept[] = {keep.param_buf, keep.pgrad_buf, keep.adam_m_buf, keep.adam_v_buf, keep.input_buf};
    for (size_t k = 0; k < sizeof maps / sizeof *maps; k++) {
        *maps[k] = acc_xrealloc(kept[k], (size_t)n * sizeof(int));
        for (int i = 0; i < n; i++) (*maps[k])[i] = -1;
    }
    Builder b = {g, ad, dec, s, NULL, NULL, NULL};
    b.cur = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    b.cur_aux = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    b.grad = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) b.cur[i] = b.cur_aux[i] = b.grad[i] = -1;

    /* persistent buffers, grouped by kind so the arena layout is readable */
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        if (x->op == OP_PARAM) s->param_buf[i] = new_buf(s, BUF_PARAM, i, node_bytes(x), true);
    }
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        if (x->op == OP_PARAM) s->pgrad_buf[i] = new_buf(s, BUF_PGRAD, i, node_bytes(x), true);
    }
    for (int k = 0; optimizer && k < 2; k++)
        for (int i = 0; i < n; i++) {
            const Node *x = graph_node(g, i);
            if (x->op == OP_PARAM)
                (k ? s->adam_v_buf : s->adam_m_buf)[i] = new_buf(s, k ? BUF_ADAM_V : BUF_ADAM_M, i, node_bytes(x), true);
        }
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        if (x->op == OP_INPUT) s->input_buf[i] = new_buf(s, BUF_INPUT, i, node_bytes(x), true);
    }
    s->loss_buf = new_buf(s, BUF_LOSS, g->loss, 4, true);

    /* forward */
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        if (ad->live[i] && !(op_table[x->op].flags & OPF_LEAF)) emit_compute(&b, i, ST_FWD);
    }
    /* the plan drops what it recomputes; the loss stays */
    for (int i = 0; i < n; i++)
        if (dec[i] == DEC_RECOMPUTE && i != g->loss) b.cur[i] = b.cur_aux[i] = -1;

    /* backward */
    s->first_bwd_step = s->steps.n;
    Step seed = blank_step(ST_SEED, g->loss);
    b.grad[g->loss] = seed.grad_out = new_buf(s, BUF_GRAD, g->loss, 4, false);
    VEC_PUSH(s->steps, seed);
    for (int k = 0; k < ad->bwd.n; k++) emit_backward(&b, ad->bwd.v[k]);

    /* live intervals from the steps' reads and writes */
    int last = s->steps.n - 1;
    for (int i = 0; i < s->bufs.n; i++) {
        Buffer *bf = &s->bufs.v[i];
        if (bf->persistent) bf->first = 0, bf->last = last;
    }
    for (int t = 0; t < s->steps.n; t++) {
        const Step *st = &s->steps.v[t];
        int refs[2 * ACC_MAX_IN + 3] = {st->out, st->aux, st->grad_out};
        for (int j = 0; j < ACC_MAX_IN; j++) refs[3 + j] = st->in[j], refs[3 + ACC_MAX_IN + j] = st->grad_in[j];
        for (size_t r = 0; r < sizeof refs / sizeof *refs; r++) {
            if (refs[r] < 0) continue;
            Buffer *bf = &s->bufs.v[refs[r]];
            if (bf->persistent) continue;
            if (bf->first < 0) bf->first = t;
            bf->last = t;
        }
    }
    free(b.cur);
    free(b.cur_aux);
    free(b.grad);
}

void sched_free(Schedule *s) {
    VEC_FREE(s->steps);
    VEC_FREE(s->bufs);
    free(s->param_buf);
    free(s->pgrad_buf);
    free(s->adam_m_buf);
    free(s->adam_v_buf);
    free(s->input_buf);
}

void sched_max_live(Schedule *s) {
    int n_steps = s->steps.n;
    int64_t *delta = acc_xrealloc(NULL, (size_t)(n_steps + 1) * sizeof(int64_t));
    memset(delta, 0, (size_t)(n_steps + 1) * sizeof(int64_t));
    int64_t persistent = 0;
    for (int i = 0; i < s->bufs.n; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (b->persistent) {
            persistent += b->size_bytes;
        } else if (b->first >= 0) {
            delta[b->first] += b->size_bytes;
            delta[b->last + 1] -= b->size_bytes;
        }
    }
    int64_t run = 0;
    s->peak_live_bytes = 0;
    s->peak_step = 0;
    for (int t = 0; t < n_steps; t++) {
        run += delta[t];
        if (run > s->peak_live_bytes) s->peak_live_bytes = run, s->peak_step = t;
    }
    s->peak_live_bytes += persistent;
    free(delta);
}
