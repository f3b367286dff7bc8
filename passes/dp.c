/* dp.c - data parallel: the buckets of parameter gradients and the shard.
 *
 * Every rank runs the same plan on its shard of the batch, and the
 * parameter gradients are reduced over the ranks in buckets, each as soon
 * as the backward has written its last gradient, while the rest of the
 * backward runs. The schedule lays the gradients out in the arena in the
 * parameters' order, in the parameters' own layout (one persistent region
 * each), so a bucket is a run of consecutive parameters and one collective
 * in place. Buckets are taken from the last parameter back, since the
 * backward finishes the last layers' gradients first: a bucket closes when
 * the next parameter would take it past the cap (a parameter larger than the
 * cap is a bucket of its own). Bucket 0 is the last parameters': the order
 * in which the backward, and so every rank, issues them.
 *
 * With ZeRO-1 a bucket is split into `ranks` equal pieces, rank r owning
 * piece r: its AdamW state, its update, and sending it to the others. So
 * that the pieces are equal and whole floats, each bucket's bytes are padded
 * to a multiple of ranks * ACC_ALIGN after its last parameter (the same pad
 * after its gradient), and the shard's moments hold the pieces of every
 * bucket back to back: (the padded bytes of all parameters) / ranks / 4
 * elements.
 *
 * With ZeRO-2 the gradients are not kept: each parameter's gradient is a
 * buffer of the plan that lives until its bucket is final, and is
 * reduce-scattered on its own (the unit of the collective is a parameter,
 * padded to a multiple of ranks * ACC_ALIGN), its piece moving to the
 * rank's shard of the gradients; the buckets still say when (all of a
 * bucket's parameters at once, when its last gradient is written).
 */
#include <stdlib.h>

#include "passes.h"

static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/* A parameter's bytes in the arena before its bucket's pad. */
static int64_t param_bytes(const Node *x) {
    int64_t b = node_bytes(x);
    return round_up(b > 0 ? b : 1, ACC_ALIGN);
}

void dp_layout(const Graph *g, int ranks, int zero, int64_t cap_bytes, DpLayout *out) {
    int n = g->nodes.n;
    *out = (DpLayout){ranks > 1 ? ranks : 1, ranks > 1 ? zero : 0, 0, NULL, NULL};
    out->bucket_of = acc_xrealloc(NULL, (size_t)(n > 0 ? n : 1) * sizeof(int));
    out->pad = acc_xrealloc(NULL, (size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    for (int i = 0; i < n; i++) out->bucket_of[i] = -1, out->pad[i] = 0;
    if (out->ranks == 1) return;
    int64_t filled = 0;
    int first = -1; /* the lowest parameter of the open bucket, which ends it in the arena */
    for (int i = n - 1; i >= 0; i--) {
        const Node *x = graph_node(g, i);
        if (x->op != OP_PARAM) continue;
        int64_t b = param_bytes(x);
        if (first >= 0 && filled + b > cap_bytes) { /* close the open bucket */
            out->n_buckets++;
            filled = 0;
            first = -1;
        }
        out->bucket_of[i] = out->n_buckets;
        filled += b;
        first = i;
    }
    if (first >= 0) out->n_buckets++;
    if (!out->zero) return;
    int64_t unit = (int64_t)out->ranks * ACC_ALIGN;
    if (out->zero == 2) { /* every parameter its own pieces */
        for (int i = 0; i < n; i++)
            if (out->bucket_of[i] >= 0) {
                int64_t b = param_bytes(graph_node(g, i));
                out->pad[i] = round_up(b, unit) - b;
            }
        return;
    }
    /* the pad after each bucket's last parameter in the arena (the highest
     * node of the bucket: buckets are runs of consecutive parameters) */
    for (int k = 0; k < out->n_buckets; k++) {
        int64_t bytes = 0;
        int last = -1;
        for (int i = 0; i < n; i++)
            if (out->bucket_of[i] == k) bytes += param_bytes(graph_node(g, i)), last = i;
        out->pad[last] = round_up(bytes, unit) - bytes;
    }
}

void dp_free(DpLayout *d) {
    free(d->bucket_of);
    free(d->pad);
    d->bucket_of = NULL;
    d->pad = NULL;
}

int64_t dp_param_bytes(const DpLayout *d, const Graph *g, int node) {
    return param_bytes(graph_node(g, node)) + (d ? d->pad[node] : 0);
}

/* ZeRO-1 and ZeRO-2: the elements of this rank's pieces (of the moments,
 * and with ZeRO-2 of the gradients). */
int64_t dp_shard_elems(const DpLayout *d, const Graph *g) {
    if (!d || !d->zero) return 0;
    int64_t bytes = 0;
    for (int i = 0; i < g->nodes.n; i++)
        if (graph_node(g, i)->op == OP_PARAM) bytes += dp_param_bytes(d, g, i);
    return bytes / 4 / d->ranks;
}

void dp_ready_steps(const DpLayout *d, const Schedule *s, int *ready) {
    for (int k = 0; k < d->n_buckets; k++) ready[k] = -1;
    for (int t = 0; t < s->steps.n; t++) {
        const Step *st = &s->steps.v[t];
        if (st->kind != ST_BWD) continue;
        for (int j = 0; j < ACC_MAX_IN; j++) {
            int b = st->grad_in[j];
            if (b < 0 || s->bufs.v[b].kind != BUF_PGRAD) continue;
            int k = d->bucket_of[s->bufs.v[b].node];
            if (k >= 0 && t > ready[k]) ready[k] = t;
        }
    }
}

DpTiming dp_timing(const DpLayout *d, const Schedule *s, const HwProfile *hw) {
    DpTiming t = {0, 0, 0, 0};
    int n = s->steps.n, r = d->ranks;
    double *end = acc_xrealloc(NULL, (size_t)(n > 0 ? n : 1) * sizeof(double)), now = 0;
    for (int k = 0; k < n; k++) { /* the compute stream */
        const Step *st = &s->steps.v[k];
        double f = st->kind == ST_FWD || st->kind == ST_RECOMPUTE || st->kind == ST_BWD
                       ? cost_fwd_time(s->g, graph_node(s->g, st->node), hw)
                       : 0;
        now += st->kind == ST_BWD ? 2 * f : f;
        end[k] = now;
    }
    t.backward_time = now - (s->first_bwd_step > 0 ? end[s->first_bwd_step - 1] : 0);
    int *ready = acc_xrealloc(NULL, (size_t)(d->n_buckets > 0 ? d->n_buckets : 1) * sizeof(int));
    dp_ready_steps(d, s, ready);
    /* the buckets' bytes, then their collectives in the order they start */
    double share = (double)(r - 1) / r, reduce = d->zero ? share : 2 * share, busy = 0, first = -1;
    for (int done = 0; done < d->n_buckets; done++) {
        int k = -1;
        for (int j = 0; j < d->n_buckets; j++) /* the next to start: the earliest final, then the lowest */
            if (ready[j] >= -1 && (k < 0 || ready[j] < ready[k])) k = j;
        double at = ready[k] >= 0 ? end[ready[k]] : now, bytes = 0;
        for (int i = 0; i < s->g->nodes.n; i++)
            if (d->bucket_of[i] == k) bytes += (double)s->bufs.v[s->pgrad_buf[i]].size_bytes;
        ready[k] = -2; /* started */
        double start = at > busy ? at : busy;
        if (first < 0) first = start;
        /* ZeRO-2 reduce-scatters each parameter on its own: a latency each */
        int units = 1;
        if (d->zero == 2) {
            units = 0;
            for (int i = 0; i < s->g->nodes.n; i++) units += d->bucket_of[i] == k;
        }
        busy = start + units * hw->coll_latency + reduce * bytes / hw->coll_bw;
        t.gather_time += d->zero ? units * hw->coll_latency + share * bytes / hw->coll_bw : 0;
        t.comm_time += busy - start;
    }
    t.exposed_time = busy > now ? busy - now : 0;
    free(ready);
    free(end);
    return t;
}
