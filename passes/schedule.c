/* schedule.c - the training step as a fixed list of steps over buffers.
 *
 * requires: autodiff for the graph and a decision per node. provides: the
 * forward steps in topological order, a SEED step (d loss = 1), the backward
 * steps in reverse order with RECOMPUTE steps inserted just before the first
 * backward step that reads a tensor the plan dropped, and every buffer's live
 * interval. A tensor decided RECOMPUTE lives in the forward until its last
 * forward read; its recomputed copy lives from the RECOMPUTE step to its last
 * backward read. One decided OFFLOAD is copied to a host buffer by an
 * OFFLOAD step right after its last forward read (or its own step, if none
 * reads it), which is its device copy's last use, and copied back by a FETCH
 * step where a recomputation would be; the host copy lives from the one to
 * the other, in a host arena of its own. Liveness comes from the reads alone,
 * so a buffer is freed right after its last use. sched_measure gives a plan's max-live and
 * recompute time by the same walk without building the lists (for search).
 */
#include <string.h>

#include "passes.h"

const char *const sched_step_kinds[] = {"forward", "recompute", "seed", "backward", "offload", "fetch"};

const char *buf_kind_name(BufKind k) {
    static const char *const names[BUF_KIND_COUNT] = {"parameters",  "gradients",  "optimizer_m",
                                                      "optimizer_v", "inputs",     "loss",
                                                      "activations", "statistics", "activation_gradients"};
    return names[k];
}

typedef struct {
    const Graph *g;
    const Autodiff *ad;
    const Decision *dec;
    Schedule *s;
    int *cur, *cur_aux;       /* [n] buffer holding node's tensor / aux now, -1 if none */
    int *host, *host_aux;     /* [n] its offloaded copy, -1 if none */
    int *grad;                /* [n] gradient buffer, -1 until its first contribution */
    bool *off;                /* [n] offloaded (sched_offloads) */
    int *off_head, *off_next; /* [n] the offloaded tensors whose last forward read is node i's step */
} Builder;

static int64_t round_up(int64_t x) { return (x + ACC_ALIGN - 1) / ACC_ALIGN * ACC_ALIGN; }

int opt_state_elem_bytes(OptState st) { return st == OPT_STATE_F32 ? 4 : st == OPT_STATE_BF16 ? 2 : 0; }
const char *opt_state_name(OptState st) {
    return st == OPT_STATE_F32 ? "fp32" : st == OPT_STATE_BF16 ? "bf16" : st == OPT_STATE_HOST ? "host" : "none";
}

/* The bytes of one moment (m or v) of parameter x: its elements at the
 * state's dtype. */
static int64_t moment_bytes(const Node *x, OptState st) { return shape_elems(&x->shape) * opt_state_elem_bytes(st); }

static int new_buf(Schedule *s, BufKind k, int node, int64_t bytes, bool persistent) {
    Buffer b = {k, node, round_up(bytes > 0 ? bytes : 1), -1, -1, -1, persistent, false};
    VEC_PUSH(s->bufs, b);
    return s->bufs.n - 1;
}

/* Whether node i is offloaded: decided so, or dropped where so marks it;
 * only a tensor the forward computes and the backward reads (never the
 * loss) has a copy worth keeping. */
static bool offloaded(const Graph *g, const Autodiff *ad, const Decision *dec, const SchedOptions *so, int i) {
    if (dec[i] != DEC_OFFLOAD && !(dec[i] == DEC_RECOMPUTE && so && so->offload && so->offload[i])) return false;
    const Node *x = graph_node(g, i);
    return i != g->loss && ad->live[i] && !(op_table[x->op].flags & OPF_LEAF);
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
    if (is_loss && kind == ST_FWD) st.out = b->s->loss_buf;
    else st.out = new_buf(b->s, BUF_ACT, node, node_tensor_bytes(x), false);
    if (x->aux_elems) st.aux = new_buf(b->s, BUF_AUX, node, x->aux_elems * 4, false);
    b->cur[node] = st.out;
    b->cur_aux[node] = st.aux;
    VEC_PUSH(b->s->steps, st);
    if (kind == ST_RECOMPUTE) b->s->n_recompute++;
}

/* Copy node's tensor (and tail) between the arena and its host copy:
 * OFFLOAD after its last forward read, FETCH before its first backward one. */
static void emit_copy(Builder *b, int node, StepKind kind) {
    const Node *x = graph_node(b->g, node);
    Step st = blank_step(kind, node);
    bool out = kind == ST_OFFLOAD;
    st.in[0] = out ? b->cur[node] : b->host[node];
    st.in[1] = out ? b->cur_aux[node] : b->host_aux[node];
    st.out = new_buf(b->s, BUF_ACT, node, node_tensor_bytes(x), false);
    if (x->aux_elems) st.aux = new_buf(b->s, BUF_AUX, node, x->aux_elems * 4, false);
    if (out) {
        b->s->bufs.v[st.out].host = true;
        if (st.aux >= 0) b->s->bufs.v[st.aux].host = true;
        b->host[node] = st.out, b->host_aux[node] = st.aux;
        b->cur[node] = b->cur_aux[node] = -1;
        b->s->n_offload++;
    } else {
        b->cur[node] = st.out, b->cur_aux[node] = st.aux;
    }
    VEC_PUSH(b->s->steps, st);
}

/* Make node's tensor available for a backward read, fetching its host copy
 * or recomputing it (and whatever dropped ancestors it needs) if the plan
 * dropped it. */
static void ensure(Builder *b, int node) {
    const Node *x = graph_node(b->g, node);
    if ((op_table[x->op].flags & OPF_LEAF) || b->cur[node] >= 0) return;
    if (b->host[node] >= 0) {
        emit_copy(b, node, ST_FETCH);
        return;
    }
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
                b->grad[in] = new_buf(b->s, BUF_GRAD, in, node_tensor_bytes(y), false);
            }
            st.zero_in[j] = true;
        }
        st.grad_in[j] = b->grad[in];
    }
    VEC_PUSH(b->s->steps, st);
}

void sched_build(const Graph *g, const Autodiff *ad, const Decision *dec, const SchedOptions *so, Schedule *s) {
    memset(s, 0, sizeof *s);
    sched_rebuild(g, ad, dec, so, s);
}

/* For each offloaded tensor, the forward step after which it is copied
 * out: its last forward reader's (its own if none), as lists by step node. */
static void plan_offloads(Builder *b, const SchedOptions *so) {
    const Graph *g = b->g;
    int n = g->nodes.n;
    int *last = b->off_next; /* its last forward reader, then reused as the list links */
    for (int i = 0; i < n; i++) {
        b->off[i] = offloaded(g, b->ad, b->dec, so, i);
        last[i] = i;
        b->off_head[i] = -1;
    }
    for (int j = 0; j < n; j++) {
        const Node *x = graph_node(g, j);
        if (!b->ad->live[j] || (op_table[x->op].flags & OPF_LEAF)) continue;
        for (int k = 0; k < x->n_in; k++) last[x->in[k]] = j;
    }
    for (int i = n - 1; i >= 0; i--) /* each list in ascending node order */
        if (b->off[i]) {
            int at = last[i];
            last[i] = b->off_head[at];
            b->off_head[at] = i;
        }
    for (int i = 0; i < n; i++)
        if (!b->off[i]) last[i] = -1;
}

/* ZeRO-2: each parameter's gradient lives until the last gradient of its
 * bucket is written (when the bucket's collectives start). */
static void extend_grads(Schedule *s, const DpLayout *dp) {
    int *ready = acc_xrealloc(NULL, (size_t)(dp->n_buckets > 0 ? dp->n_buckets : 1) * sizeof(int));
    for (int k = 0; k < dp->n_buckets; k++) ready[k] = -1;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < s->g->nodes.n; i++) {
            int k = dp->bucket_of[i], b = s->pgrad_buf[i];
            if (k < 0 || b < 0 || s->bufs.v[b].first < 0) continue;
            Buffer *bf = &s->bufs.v[b];
            if (pass == 0 && bf->last > ready[k]) ready[k] = bf->last;
            if (pass == 1) bf->last = ready[k];
        }
    free(ready);
}

void sched_rebuild(const Graph *g, const Autodiff *ad, const Decision *dec, const SchedOptions *so, Schedule *s) {
    int n = g->nodes.n;
    OptState optimizer = so ? so->optimizer : OPT_STATE_NONE;
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
    Builder b = {g, ad, dec, s, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    int *ints = acc_xrealloc(NULL, (size_t)n * 7 * sizeof(int));
    b.cur = ints, b.cur_aux = ints + n, b.host = ints + 2 * n, b.host_aux = ints + 3 * n, b.grad = ints + 4 * n;
    b.off_head = ints + 5 * n, b.off_next = ints + 6 * n;
    b.off = acc_xrealloc(NULL, (size_t)(n > 0 ? n : 1) * sizeof(bool));
    for (int i = 0; i < 5 * n; i++) ints[i] = -1;
    plan_offloads(&b, so);

    /* persistent buffers, grouped by kind so the arena layout is readable */
    /* the parameters, then their gradients in the same layout (data
     * parallel: each bucket a run of both, padded for ZeRO's pieces) */
    const DpLayout *dp = so ? so->dp : NULL;
    for (int i = 0; i < n; i++)
        if (graph_node(g, i)->op == OP_PARAM)
            s->param_buf[i] = new_buf(s, BUF_PARAM, i, dp_param_bytes(dp, g, i), true);
    bool zero2 = dp && dp->zero == 2; /* the gradients live until their bucket is final */
    for (int i = 0; i < n; i++)
        if (graph_node(g, i)->op == OP_PARAM)
            s->pgrad_buf[i] = new_buf(s, BUF_PGRAD, i, dp_param_bytes(dp, g, i), !zero2);
    s->shard_m_buf = s->shard_v_buf = s->shard_g_buf = -1;
    int64_t shard = dp_shard_elems(dp, g);
    if (zero2) s->shard_g_buf = new_buf(s, BUF_PGRAD, g->loss, shard * 4, true);
    for (int k = 0; opt_state_elem_bytes(optimizer) && k < 2; k++) {
        if (shard) { /* ZeRO-1: the moments of this rank's pieces alone */
            *(k ? &s->shard_v_buf : &s->shard_m_buf) =
                new_buf(s, k ? BUF_ADAM_V : BUF_ADAM_M, g->loss, shard * opt_state_elem_bytes(optimizer), true);
            continue;
        }
        for (int i = 0; i < n; i++) {
            const Node *x = graph_node(g, i);
            if (x->op == OP_PARAM)
                (k ? s->adam_v_buf : s->adam_m_buf)[i] =
                    new_buf(s, k ? BUF_ADAM_V : BUF_ADAM_M, i, moment_bytes(x, optimizer), true);
        }
    }
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        if (x->op == OP_INPUT) s->input_buf[i] = new_buf(s, BUF_INPUT, i, node_bytes(x), true);
    }
    s->loss_buf = new_buf(s, BUF_LOSS, g->loss, 4, true);

    /* forward, each offloaded tensor copied out after its last forward read */
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        if (!ad->live[i] || (op_table[x->op].flags & OPF_LEAF)) continue;
        emit_compute(&b, i, ST_FWD);
        for (int k = b.off_head[i]; k >= 0; k = b.off_next[k]) emit_copy(&b, k, ST_OFFLOAD);
    }
    /* the plan drops what it recomputes; the loss stays */
    for (int i = 0; i < n; i++)
        if (dec[i] != DEC_SAVE && !b.off[i] && i != g->loss) b.cur[i] = b.cur_aux[i] = -1;

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
    if (zero2) extend_grads(s, dp);
    free(ints);
    free(b.off);
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

int64_t sched_live_bytes(const Schedule *s, int64_t *live) {
    int n_steps = s->steps.n;
    memset(live, 0, (size_t)(n_steps + 1) * sizeof(int64_t));
    int64_t persistent = 0;
    for (int i = 0; i < s->bufs.n; i++) { /* changes at each step, then their running sum */
        const Buffer *b = &s->bufs.v[i];
        if (b->host) continue; /* not in the arena */
        if (b->persistent) {
            persistent += b->size_bytes;
        } else if (b->first >= 0) {
            live[b->first] += b->size_bytes;
            live[b->last + 1] -= b->size_bytes;
        }
    }
    int64_t run = 0;
    for (int t = 0; t < n_steps; t++) run += live[t], live[t] = persistent + run;
    return persistent;
}

void sched_max_live(Schedule *s) {
    int n_steps = s->steps.n;
    int64_t *live = acc_xrealloc(NULL, (size_t)(n_steps + 1) * sizeof(int64_t));
    int64_t persistent = sched_live_bytes(s, live);
    s->peak_live_bytes = persistent;
    s->peak_step = 0;
    for (int t = 0; t < n_steps; t++)
        if (live[t] > s->peak_live_bytes) s->peak_live_bytes = live[t], s->peak_step = t;
    free(live);
}

/* ---- measuring without building ---------------------------------------------
 * sched_measure replays sched_rebuild's walk over the same steps in the same
 * order, but keeps only each buffer's first and last step, in slots fixed per
 * node (forward copy, its statistics tail, recomputed copy, its tail,
 * gradient): a node is computed at most once in the forward and recomputed at
 * most once (or fetched from its host copy once, into the recompute slots), so
 * five slots hold every buffer of the arena a schedule can have. Persistent
 * buffers (parameters, their gradients and moments, inputs, the loss) are one
 * constant. test_sched checks it against sched_build on random plans. */

enum { SL_ACT, SL_AUX, SL_RACT, SL_RAUX, SL_GRAD, SL_COUNT };
#define SL_NONE (-1)
#define SL_PERSIST (-2)

struct SchedIndex {
    Pool mem; /* this struct and its arrays (sched_index_free frees them in one call) */
    const Graph *g;
    const Autodiff *ad;
    const SchedOptions *so;
    int n, n_steps_max;
    int64_t persistent;
    int64_t *slot_bytes; /* [n * SL_COUNT] */
    bool *leaf_persist;  /* [n] a parameter or input: its tensor is persistent */
    bool *fwd;           /* [n] computed by the forward pass */
    GradReads *reads;    /* [n] what node's backward reads */
    /* per measure: */
    int *first, *last;         /* [n * SL_COUNT] steps, -1 if the buffer does not exist */
    int *cur, *cur_aux, *grad; /* [n] slot holding the tensor / tail / gradient now */
    bool *off, *on_host;       /* [n] offloaded; its host copy is the only one now */
    int *last_read, *off_head; /* [n] each offloaded tensor's last forward reader; the lists by reader */
    int64_t *delta;            /* [n_steps_max + 1] */
    const double *time;
    int t, n_recompute;
    double cost, transfer;
    const DpLayout *dp; /* ZeRO-2: the parameters' gradients are slots until their bucket is final; else NULL */
    int *ready;         /* [dp->n_buckets] */
};

/* Sizes, reads and the persistent total, once per graph; scratch for sched_measure. */
SchedIndex *sched_index_new(const Graph *g, const Autodiff *ad, const SchedOptions *so) {
    int n = g->nodes.n;
    OptState optimizer = so ? so->optimizer : OPT_STATE_NONE;
    Pool mem = {0};
    SchedIndex *x = pool_alloc(&mem, sizeof *x); /* zeroed */
    x->mem = mem;
    x->g = g, x->ad = ad, x->so = so, x->n = n;
    x->off = pool_alloc(&x->mem, (size_t)n * sizeof(bool));
    x->on_host = pool_alloc(&x->mem, (size_t)n * sizeof(bool));
    x->last_read = pool_alloc(&x->mem, (size_t)n * sizeof(int));
    x->off_head = pool_alloc(&x->mem, (size_t)n * sizeof(int));
    x->slot_bytes = pool_alloc(&x->mem, (size_t)n * SL_COUNT * sizeof(int64_t));
    x->leaf_persist = pool_alloc(&x->mem, (size_t)n * sizeof(bool));
    x->fwd = pool_alloc(&x->mem, (size_t)n * sizeof(bool));
    x->reads = pool_alloc(&x->mem, (size_t)n * sizeof(GradReads));
    x->first = pool_alloc(&x->mem, (size_t)n * SL_COUNT * sizeof(int));
    x->last = pool_alloc(&x->mem, (size_t)n * SL_COUNT * sizeof(int));
    x->cur = pool_alloc(&x->mem, (size_t)n * sizeof(int));
    x->cur_aux = pool_alloc(&x->mem, (size_t)n * sizeof(int));
    x->grad = pool_alloc(&x->mem, (size_t)n * sizeof(int));
    int64_t loss_bytes = round_up(4);
    x->persistent = loss_bytes;
    const DpLayout *dp = so ? so->dp : NULL;
    bool zero2 = dp && dp->zero == 2;
    x->dp = zero2 ? dp : NULL;
    int n_fwd = 0;
    for (int i = 0; i < n; i++) {
        const Node *nd = graph_node(g, i);
        int64_t act = round_up(node_tensor_bytes(nd));
        int64_t *sb = &x->slot_bytes[i * SL_COUNT];
        sb[SL_ACT] = sb[SL_RACT] = act > 0 ? act : ACC_ALIGN;
        sb[SL_AUX] = sb[SL_RAUX] = round_up(nd->aux_elems * 4);
        sb[SL_GRAD] = round_up(i == g->loss ? 4 : node_tensor_bytes(nd) > 0 ? node_tensor_bytes(nd) : 1);
        x->leaf_persist[i] = nd->op == OP_PARAM || nd->op == OP_INPUT;
        if (nd->op == OP_PARAM) { /* the parameter, its gradient and, with the optimizer, m and v */
            int64_t pb = dp_param_bytes(so ? so->dp : NULL, g, i);
            x->persistent += zero2 ? pb : pb * 2; /* ZeRO-2: its gradient a slot of the step */
            if (zero2) sb[SL_GRAD] = pb;
            if (opt_state_elem_bytes(optimizer) && !dp_shard_elems(dp, g)) {
                int64_t mb = moment_bytes(nd, optimizer);
                x->persistent += round_up(mb > 0 ? mb : 1) * 2;
            }
        }
        if (nd->op == OP_INPUT) x->persistent += round_up(node_bytes(nd) > 0 ? node_bytes(nd) : 1);
        x->fwd[i] = ad->live[i] && !(op_table[nd->op].flags & OPF_LEAF);
        n_fwd += x->fwd[i];
        x->reads[i] = ad_reads(ad, i);
    }
    int64_t shard = dp_shard_elems(dp, g); /* ZeRO: the shard's m and v, and with ZeRO-2 its gradients */
    if (shard && opt_state_elem_bytes(optimizer))
        x->persistent += round_up(shard * opt_state_elem_bytes(optimizer)) * 2;
    if (zero2) x->persistent += round_up(shard * 4);
    /* forward (and an offload) once each, seed, recompute or fetch at most once each, backward */
    x->n_steps_max = 3 * n_fwd + 1 + ad->bwd.n;
    if (zero2) x->ready = pool_alloc(&x->mem, (size_t)(dp->n_buckets > 0 ? dp->n_buckets : 1) * sizeof(int));
    x->delta = pool_alloc(&x->mem, (size_t)(x->n_steps_max + 1) * sizeof(int64_t));
    return x;
}

/* Frees the index (NULL: nothing). */
void sched_index_free(SchedIndex *x) {
    if (!x) return;
    Pool mem = x->mem; /* x itself lies in it */
    pool_free(&mem);
}

/* A reference to a slot at the current step (persistent buffers: none). */
static void m_touch(SchedIndex *x, int slot) {
    if (slot < 0) return;
    if (x->first[slot] < 0) x->first[slot] = x->t;
    x->last[slot] = x->t;
}

static int m_input(const SchedIndex *x, int node) { return x->leaf_persist[node] ? SL_PERSIST : x->cur[node]; }

/* emit_compute: one step computing node (forward or recompute). */
static void m_compute(SchedIndex *x, int node, bool recompute) {
    const Node *nd = graph_node(x->g, node);
    for (int j = 0; j < nd->n_in; j++) {
        int in = m_input(x, nd->in[j]);
        ACC_ASSERT(in != SL_NONE);
        m_touch(x, in);
    }
    int base = node * SL_COUNT;
    int out = node == x->g->loss && !recompute ? SL_PERSIST : base + (recompute ? SL_RACT : SL_ACT);
    int aux = nd->aux_elems ? base + (recompute ? SL_RAUX : SL_AUX) : SL_NONE;
    m_touch(x, out);
    m_touch(x, aux);
    x->cur[node] = out, x->cur_aux[node] = aux;
    if (recompute) x->n_recompute++, x->cost += x->time ? x->time[node] : 0;
    x->t++;
}

/* emit_copy: OFFLOAD (the device copy's last read) or FETCH (into the
 * recompute slots). */
static void m_copy(SchedIndex *x, int node, bool out) {
    int base = node * SL_COUNT;
    if (out) {
        m_touch(x, x->cur[node]);
        m_touch(x, x->cur_aux[node]);
        x->cur[node] = x->cur_aux[node] = SL_NONE;
        x->on_host[node] = true;
        x->transfer += x->so && x->so->transfer ? x->so->transfer[node] : 0;
    } else {
        x->cur[node] = base + SL_RACT;
        x->cur_aux[node] = graph_node(x->g, node)->aux_elems ? base + SL_RAUX : SL_NONE;
        m_touch(x, x->cur[node]);
        m_touch(x, x->cur_aux[node]);
        x->on_host[node] = false;
    }
    x->t++;
}

/* ensure: fetch node's host copy, or recompute node (and the dropped
 * ancestors it needs), if it has no copy. */
static void m_ensure(SchedIndex *x, int node) {
    if (x->leaf_persist[node] || x->cur[node] != SL_NONE) return;
    if (x->on_host[node]) {
        m_copy(x, node, false);
        return;
    }
    const Node *nd = graph_node(x->g, node);
    for (int j = 0; j < nd->n_in; j++) m_ensure(x, nd->in[j]);
    m_compute(x, node, true);
}

/* emit_backward: the recomputation node's backward needs, then its step. */
static void m_backward(SchedIndex *x, int node) {
    const Node *nd = graph_node(x->g, node);
    GradReads r = x->reads[node];
    for (int j = 0; j < nd->n_in; j++)
        if (r.in[j]) m_ensure(x, nd->in[j]);
    if (r.out || r.aux) m_ensure(x, node);
    for (int j = 0; j < nd->n_in; j++)
        if (r.in[j]) m_touch(x, m_input(x, nd->in[j]));
    if (r.out) m_touch(x, node == x->g->loss ? SL_PERSIST : x->cur[node]);
    if (r.aux) m_touch(x, x->cur_aux[node]);
    ACC_ASSERT(x->grad[node] != SL_NONE);
    m_touch(x, x->grad[node]);
    for (int j = 0; j < nd->n_in; j++) {
        int in = nd->in[j];
        if (!x->ad->need_grad[in]) continue;
        if (x->grad[in] == SL_NONE)
            x->grad[in] = graph_node(x->g, in)->op == OP_PARAM && !x->dp ? SL_PERSIST : in * SL_COUNT + SL_GRAD;
        m_touch(x, x->grad[in]);
    }
    x->t++;
}

/* sched_rebuild's walk and sched_max_live's sweep, on slots instead of buffers. */
void sched_measure(SchedIndex *x, const Decision *dec, const double *node_time, SchedMeasure *m) {
    int n = x->n, ns = n * SL_COUNT;
    const Graph *g = x->g;
    memset(x->first, -1, (size_t)ns * sizeof(int));
    for (int i = 0; i < n; i++) x->cur[i] = x->cur_aux[i] = x->grad[i] = SL_NONE;
    x->time = node_time;
    x->t = x->n_recompute = 0;
    x->cost = x->transfer = 0;
    /* plan_offloads' lists */
    for (int i = 0; i < n; i++) {
        x->off[i] = offloaded(g, x->ad, dec, x->so, i);
        x->on_host[i] = false;
        x->last_read[i] = i, x->off_head[i] = -1;
    }
    for (int j = 0; j < n; j++)
        if (x->fwd[j])
            for (int k = 0; k < graph_node(g, j)->n_in; k++) x->last_read[graph_node(g, j)->in[k]] = j;
    for (int i = n - 1; i >= 0; i--)
        if (x->off[i]) {
            int at = x->last_read[i];
            x->last_read[i] = x->off_head[at];
            x->off_head[at] = i;
        }
    for (int i = 0; i < n; i++) {
        if (!x->fwd[i]) continue;
        m_compute(x, i, false);
        for (int k = x->off_head[i]; k >= 0; k = x->last_read[k]) m_copy(x, k, true);
    }
    for (int i = 0; i < n; i++)
        if (dec[i] != DEC_SAVE && !x->off[i] && i != g->loss) x->cur[i] = x->cur_aux[i] = SL_NONE;
    x->grad[g->loss] = g->loss * SL_COUNT + SL_GRAD; /* the seed step */
    m_touch(x, x->grad[g->loss]);
    x->t++;
    for (int k = 0; k < x->ad->bwd.n; k++) m_backward(x, x->ad->bwd.v[k]);
    int steps = x->t;
    ACC_ASSERT(steps <= x->n_steps_max);
    if (x->dp) { /* extend_grads */
        for (int k = 0; k < x->dp->n_buckets; k++) x->ready[k] = -1;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < n; i++) {
                int k = x->dp->bucket_of[i], sl = i * SL_COUNT + SL_GRAD;
                if (k < 0 || x->first[sl] < 0) continue;
                if (pass == 0 && x->last[sl] > x->ready[k]) x->ready[k] = x->last[sl];
                if (pass == 1) x->last[sl] = x->ready[k];
            }
    }
    memset(x->delta, 0, (size_t)(steps + 1) * sizeof(int64_t));
    for (int s = 0; s < ns; s++)
        if (x->first[s] >= 0) x->delta[x->first[s]] += x->slot_bytes[s], x->delta[x->last[s] + 1] -= x->slot_bytes[s];
    int64_t run = 0, peak = 0;
    m->peak_step = 0;
    for (int t = 0; t < steps; t++) {
        run += x->delta[t];
        if (run > peak) peak = run, m->peak_step = t;
    }
    m->peak_live_bytes = peak + x->persistent;
    m->n_recompute = x->n_recompute;
    m->recompute_time = x->cost;
    m->transfer_time = x->transfer;
}
