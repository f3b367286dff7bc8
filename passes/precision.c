/* precision.c - the model's precision: activations in bf16, casts where an
 * op's precision rule asks for another dtype.
 *
 * requires: a verified graph whose activations are f32 (the front end's,
 * after fuse). provides: for act = DT_BF16, g->act_dtype = DT_BF16 and every
 * op's inputs in the dtypes of its row's precision rule (ir/ops.def): an 'a'
 * input in bf16 (the GEMMs), a 'p' input in the dtype the op computes in
 * (bf16, or f32 when one of its 'p' inputs is a computed f32 tensor: a
 * reduction's result, or what was computed from one, as autocast promotes),
 * an 'f' input in f32. Where a tensor's dtype differs a cast
 * node is inserted just before the first op that reads it, and shared by the
 * later readers: the bf16 copy of a weight is an ordinary activation, which
 * the planner keeps from the forward to the backward or recomputes by cost
 * and memory like any other. Parameters stay f32 (master weights: the cast's
 * backward widens their gradient into the f32 parameter gradient); the
 * statistics tails (aux) stay f32. If the loss would come out bf16 a cast
 * to f32 is appended and becomes the loss. A cast takes the group and
 * source location of the op that asked for it (so a diagnostic points at
 * the DSL line) and the name of its source with ".bf16" or ".f32" appended.
 * Ids are renumbered densely in the new order; every shape rule runs again
 * (each sets its output's dtype from the rule) and the graph is verified.
 */
#include <string.h>

#include "passes.h"

typedef struct {
    Graph *g;
    const Node *old; /* the graph's nodes before the pass */
    int n_old;
    Node *out; /* the new node list */
    int n_out;
    int *cast_of; /* [old id * 2 + (dtype == DT_BF16)]: the new id of the cast, -1 */
} Prec;

/* Run n's shape rule; a failure this late is a bug in the pass. */
static void reshape(Graph *g, Node *n) {
    char err[256];
    if (!op_table[n->op].shape(g, n, err, sizeof err)) {
        Diag d = diag_for_graph(g, stderr);
        diag_error(&d, n->loc, "internal error: precision of '%s': %s", n->name, err);
        acc_panic(__FILE__, __LINE__, "precision of %s: %s", n->name, err);
    }
}

static bool name_taken(const Prec *p, const char *name) {
    for (int i = 0; i < p->n_old; i++)
        if (!strcmp(p->old[i].name, name)) return true;
    for (int i = 0; i < p->n_out; i++)
        if (!strcmp(p->out[i].name, name)) return true;
    return false;
}

/* A name no node has: base + suffix, or with _2, _3, ... after it. */
static const char *fresh_name(Prec *p, const char *base, const char *suffix) {
    const char *name = pool_printf(&p->g->pool, "%s%s", base, suffix);
    for (int k = 2; name_taken(p, name); k++) name = pool_printf(&p->g->pool, "%s%s_%d", base, suffix, k);
    return name;
}

/* The new id of src (a new id) in dtype want: src itself, or its cast,
 * appended now (before the node that asked, whose group and loc it takes). */
static int cast_to(Prec *p, int old_src, int src, DType want, const Node *asker) {
    const Node *x = &p->out[src];
    if (x->dtype == want || !dtype_is_float(x->dtype)) return src;
    int *slot = &p->cast_of[old_src * 2 + (want == DT_BF16)];
    if (*slot >= 0) return *slot;
    Node c;
    memset(&c, 0, sizeof c);
    c.id = p->n_out;
    c.op = OP_CAST;
    c.n_in = 1;
    c.in[0] = src;
    c.dtype = want;
    c.name = fresh_name(p, x->name, want == DT_BF16 ? ".bf16" : ".f32");
    c.group = asker->group;
    c.loc = asker->loc;
    p->out[p->n_out++] = c;
    p->g->nodes.v = p->out; /* the rule reads its input through the graph */
    p->g->nodes.n = p->n_out;
    reshape(p->g, &p->out[c.id]);
    return *slot = c.id;
}

/* The dtype x (inputs already renumbered) computes in: act, or f32 when one
 * of its 'p' inputs is a computed f32 tensor. */
static DType compute_in(const Prec *p, const Node *x, DType act) {
    for (int j = 0; j < x->n_in; j++) {
        const Node *in = &p->out[x->in[j]];
        if (op_prec_class(x->op, j) == 'p' && in->dtype == DT_F32 && !(op_table[in->op].flags & OPF_LEAF))
            return DT_F32;
    }
    return act;
}

int precision_apply(Graph *g, DType act) {
    if (act == DT_F32) return 0;
    ACC_ASSERT(act == DT_BF16 && g->act_dtype == DT_F32);
    int n = g->nodes.n, n_casts = 0;
    Node *old = g->nodes.v;
    /* every node, at most two casts per node, and the loss's cast */
    int cap = 3 * n + 1;
    Prec p = {
        g, old, n, acc_xcalloc((size_t)cap, sizeof(Node)), 0, acc_xcalloc((size_t)2 * (size_t)n + 2, sizeof(int))};
    int *new_id = acc_xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < 2 * n + 2; i++) p.cast_of[i] = -1;
    g->act_dtype = act;
    for (int i = 0; i < n; i++) {
        Node x = old[i];
        int old_in[ACC_MAX_IN];
        for (int j = 0; j < x.n_in; j++) old_in[j] = x.in[j], x.in[j] = new_id[x.in[j]];
        DType cd = compute_in(&p, &x, act);
        for (int j = 0; j < x.n_in; j++) {
            char c = op_prec_class(x.op, j);
            bool flt = dtype_is_float(p.out[x.in[j]].dtype);
            if (flt && c != 'a' && c != 'p' && c != 'f') /* a rule the op table got wrong */
                acc_panic(__FILE__, __LINE__, "%s: input %d is float, its precision class is '%c'", x.name, j,
                          c ? c : '0');
            int before = p.n_out;
            if (flt) x.in[j] = cast_to(&p, old_in[j], x.in[j], c == 'a' ? act : c == 'p' ? cd : DT_F32, &x);
            n_casts += p.n_out - before;
        }
        x.id = p.n_out;
        new_id[i] = x.id;
        p.out[p.n_out++] = x;
        g->nodes.v = p.out;
        g->nodes.n = p.n_out;
        if (!(op_table[x.op].flags & OPF_LEAF)) reshape(g, &p.out[x.id]);
    }
    if (g->loss >= 0) {
        g->loss = new_id[g->loss];
        if (p.out[g->loss].dtype != DT_F32) {
            const Node *l = &p.out[g->loss];
            int before = p.n_out;
            g->loss = cast_to(&p, n, g->loss, DT_F32, l);
            n_casts += p.n_out - before;
        }
    }
    g->nodes.cap = cap;
    free(old);
    free(p.cast_of);
    free(new_id);
    if (!ir_verify(g, stderr)) acc_panic(__FILE__, __LINE__, "the precision pass left an invalid graph");
    return n_casts;
}
