/* autodiff.c - reverse-mode differentiation of the forward graph.
 *
 * requires: a verified graph with a loss. provides: which nodes contribute to
 * the loss (live), which get a gradient (need_grad: a float dtype, live, depending
 * on a parameter, through no OPF_NOGRAD op), the backward order, and per backward step the forward
 * buffers it reads, from the op table's grad column. The gradient kernels
 * themselves are the runtime's *_bwd functions; every one accumulates into
 * its inputs' gradients, so a tensor used several times sums its
 * contributions.
 */
#include "passes.h"

void ad_build(const Graph *g, Autodiff *ad) {
    int n = g->nodes.n;
    ad->g = g;
    ad->live = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
    ad->need_grad = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
    ad->bwd.v = NULL;
    ad->bwd.n = ad->bwd.cap = 0;
    ACC_ASSERT(g->loss >= 0);
    /* live: reaches the loss (walk backwards from it) */
    for (int i = 0; i < n; i++) ad->live[i] = false;
    ad->live[g->loss] = true;
    for (int i = g->loss; i >= 0; i--) {
        if (!ad->live[i]) continue;
        const Node *x = graph_node(g, i);
        for (int j = 0; j < x->n_in; j++) ad->live[x->in[j]] = true;
    }
    /* reaches the loss along edges a gradient flows on: not into the inputs
     * of an OPF_NOGRAD op (a comparison); need_grad marks it first */
    for (int i = 0; i < n; i++) ad->need_grad[i] = false;
    ad->need_grad[g->loss] = true;
    for (int i = g->loss; i >= 0; i--) {
        const Node *x = graph_node(g, i);
        if (!ad->need_grad[i] || (op_table[x->op].flags & OPF_NOGRAD)) continue;
        for (int j = 0; j < x->n_in; j++) ad->need_grad[x->in[j]] = true;
    }
    /* need_grad: a float tensor (f32, bf16) on such a path that depends on a
     * parameter through no OPF_NOGRAD op; its gradient has its dtype (a
     * parameter's is f32: a cast's backward widens) */
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        bool dep = x->op == OP_PARAM, reaches = ad->need_grad[i];
        for (int j = 0; j < x->n_in && !dep; j++) dep = ad->need_grad[x->in[j]];
        if (op_table[x->op].flags & OPF_NOGRAD) dep = false;
        ad->need_grad[i] = dep && reaches && dtype_is_float(x->dtype);
    }
    for (int i = n - 1; i >= 0; i--)
        if (ad->need_grad[i] && !(op_table[graph_node(g, i)->op].flags & OPF_LEAF)) VEC_PUSH(ad->bwd, i);
}

void ad_free(Autodiff *ad) {
    free(ad->live);
    free(ad->need_grad);
    VEC_FREE(ad->bwd);
}

bool ad_input_gets_grad(const Autodiff *ad, int n, int j) {
    const Node *x = graph_node(ad->g, n);
    return ad->need_grad[x->in[j]];
}

GradReads ad_reads(const Autodiff *ad, int n) {
    const Node *x = graph_node(ad->g, n);
    unsigned gr = op_table[x->op].grad_reads;
    GradReads r = {{false}, false, false};
    static const unsigned in_bit[] = {GR_IN0, GR_IN1, GR_IN2, GR_IN3, GR_IN4};
    for (int j = 0; j < x->n_in && j < 5; j++) r.in[j] = gr & in_bit[j];
    if (gr & GR_CROSS) {
        /* input j's gradient needs the other input */
        r.in[0] = ad_input_gets_grad(ad, n, 1);
        r.in[1] = ad_input_gets_grad(ad, n, 0);
    }
    r.out = gr & GR_OUT;
    r.aux = gr & GR_AUX;
    return r;
}
