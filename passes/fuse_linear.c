/* fuse_linear.c - bias GEMMs as one op: add(matmul(x, w), b) -> linear(x, w, b).
 *
 * requires: a verified graph (the front end's). provides: the same graph with
 * every bias add of a plain matmul rewritten into a linear node and the
 * matmul removed, ids renumbered densely in the same order; verified again.
 *
 * A matmul is fused when it is not transpose_a, its w is 2-D (not batched),
 * the bias add is its only reader, it carries no save/recompute hint and no
 * save/recompute glob names it (fusing would drop the tensor the user named),
 * and the other operand of the add is a bias of the matmul's last dim ([N],
 * or [N] with leading ones). The add becomes the linear node: it keeps its
 * name, group, source location and hint, so the plan names what the DSL
 * named. The fused op has one [M, N] tensor where there were two (the
 * matmul's output and its gradient are gone), which the planner, schedule
 * and allocation see because the matmul is no longer in the graph at all.
 */
#include <fnmatch.h>
#include <string.h>

#include "passes.h"

static bool glob_hit(const char *const *globs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!fnmatch(globs[i], name, 0)) return true;
    return false;
}

/* Whether node m (read n_users times) can become the GEMM of add node a
 * whose other operand is b. */
static bool fusable(const Graph *g, const Node *a, const Node *m, const Node *b, int n_users, const FuseOptions *o) {
    if (m->op != OP_MATMUL || m->attr.transpose_a || n_users != 1 || m->id == g->loss || m->hint != HINT_NONE)
        return false;
    if (graph_node(g, m->in[1])->shape.ndim != 2 || a->in[0] == a->in[1]) return false;
    if (b->dtype != DT_F32 || !shape_eq(&a->shape, &m->shape)) return false;
    int r = m->shape.ndim;
    if (!shape_is_bias(&b->shape, m->shape.dim[r - 1], r)) return false;
    return !glob_hit(g->save_globs.v, g->save_globs.n, m->name) &&
           !glob_hit(g->recompute_globs.v, g->recompute_globs.n, m->name) &&
           !glob_hit(o->save_globs, o->n_save_globs, m->name) &&
           !glob_hit(o->recompute_globs, o->n_recompute_globs, m->name);
}

int fuse_linear(Graph *g, const FuseOptions *o) {
    int n = g->nodes.n, n_fused = 0;
    int *users = acc_xrealloc(NULL, ((size_t)n + 1) * sizeof(int));
    bool *dead = acc_xrealloc(NULL, ((size_t)n + 1) * sizeof(bool));
    for (int i = 0; i < n; i++) users[i] = 0, dead[i] = false;
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        for (int j = 0; j < x->n_in; j++) users[x->in[j]]++;
    }
    for (int i = 0; i < n; i++) {
        Node *a = graph_node(g, i);
        if (a->op != OP_ADD) continue;
        for (int side = 0; side < 2; side++) {
            const Node *m = graph_node(g, a->in[side]), *b = graph_node(g, a->in[1 - side]);
            if (!fusable(g, a, m, b, users[m->id], o)) continue;
            Node fused = *a;
            fused.op = OP_LINEAR;
            attrs_defaults(OP_LINEAR, &fused.attr);
            fused.attr.transpose_b = m->attr.transpose_b;
            fused.n_in = 3;
            fused.in[0] = m->in[0], fused.in[1] = m->in[1], fused.in[2] = b->id;
            char err[256];
            if (!op_table[OP_LINEAR].shape(g, &fused, err, sizeof err) || !shape_eq(&fused.shape, &a->shape)) {
                Diag d = diag_for_graph(g, stderr); /* a shape error this late is a bug: where in the model */
                diag_error(&d, a->loc, "internal error: fusing '%s' into a linear: %s", a->name, err);
                acc_panic(__FILE__, __LINE__, "fusing %s into a linear: %s", a->name, err);
            }
            dead[m->id] = true;
            *a = fused;
            n_fused++;
            break;
        }
    }
    if (n_fused) {
        /* drop the fused matmuls; every other node keeps its order */
        int *new_id = users, k = 0;
        for (int i = 0; i < n; i++) new_id[i] = dead[i] ? -1 : k++;
        for (int i = 0; i < n; i++) {
            if (dead[i]) continue;
            Node x = g->nodes.v[i];
            x.id = new_id[i];
            for (int j = 0; j < x.n_in; j++) {
                ACC_ASSERT(new_id[x.in[j]] >= 0);
                x.in[j] = new_id[x.in[j]];
            }
            g->nodes.v[x.id] = x;
        }
        g->nodes.n = k;
        if (g->loss >= 0) g->loss = new_id[g->loss];
    }
    free(users);
    free(dead);
    if (!ir_verify(g, stderr)) acc_panic(__FILE__, __LINE__, "the linear fusion left an invalid graph");
    return n_fused;
}
