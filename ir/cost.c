/* cost.c - the op table's cost rules: forward FLOPs of one node. Memory
 * traffic is not per op: passes/cost_model.c derives it from the sizes of the
 * tensors a node reads and writes. Transcendental functions count as a few
 * FLOPs each; elementwise ops are memory-bound on every target anyway.
 */
#include "ir.h"

#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) \
    double cost(const Graph *, const Node *);
#include "ops.def"
#undef X

static double elems(const Node *n) { return (double)shape_elems(&n->shape); }

double cost_none(const Graph *g, const Node *n) { return 0; }
double cost_elem1(const Graph *g, const Node *n) { return elems(n); }
double cost_elem4(const Graph *g, const Node *n) { return 4 * elems(n); }
double cost_elem8(const Graph *g, const Node *n) { return 8 * elems(n); }
double cost_elem16(const Graph *g, const Node *n) { return 16 * elems(n); }

double cost_reduce(const Graph *g, const Node *n) { return (double)shape_elems(&graph_node(g, n->in[0])->shape); }

/* 2 M N K per batch item */
double cost_matmul(const Graph *g, const Node *n) {
    const Node *a = graph_node(g, n->in[0]);
    int ar = a->shape.ndim;
    double k = (double)(n->attr.transpose_a ? a->shape.dim[ar - 2] : a->shape.dim[ar - 1]);
    return 2 * elems(n) * k;
}

/* the matmul's 2 M N K, plus one add per output element for the bias */
double cost_linear(const Graph *g, const Node *n) {
    const Node *x = graph_node(g, n->in[0]);
    return (2 * (double)x->shape.dim[x->shape.ndim - 1] + 1) * elems(n);
}

/* scores and weighted sum (4 B H T S D), halved when causal, plus the
 * softmax, plus one add a score for a bias and one test for a mask (their
 * bytes: cost_model.c counts every input) */
double cost_attention(const Graph *g, const Node *n) {
    const Node *q = graph_node(g, n->in[0]), *k = graph_node(g, n->in[1]);
    double B = (double)q->shape.dim[0], T = (double)q->shape.dim[1], S = (double)k->shape.dim[1];
    double H = (double)n->attr.heads, D = (double)q->shape.dim[2] / H;
    double pairs = B * H * T * S * (n->attr.causal ? 0.5 : 1.0);
    return pairs * (4 * D + 8 + (n->attr.mask != ATTR_NONE) + (n->attr.bias != ATTR_NONE));
}

/* a softmax over each row of logits */
double cost_xent(const Graph *g, const Node *n) { return 8 * (double)shape_elems(&graph_node(g, n->in[0])->shape); }
