/* plan_bound.c - the planner's lower bound: what any plan within the budget
 * must recompute at least, so that the reported gap is a proven one.
 *
 * A lower bound on the recompute time of any plan that fits the budget.
 * Take the plan that saves everything it may (P0). At each step t of P0 where
 * more than the budget is live, any plan must free the excess there. The only
 * way is to drop tensors whose forward copy P0 keeps at t although its
 * forward reads are over and whose first backward read comes after t (a
 * dropped tensor read at or before t is recomputed by then and live again).
 * Each such tensor is read by the backward, so dropping it costs at least one
 * recomputation: x_i. Recomputing a node needs its intermediate inputs q (not
 * read by the backward, freed after the forward in P0): each is recomputed
 * too (y_q, which needs q's own intermediate inputs in turn, to any depth) or
 * kept from the forward (k_q), and a kept q is live from its last forward
 * read until the recomputation that reads it - at every forward step after
 * that read, and at the first backward steps unless a recomputation can have
 * run by then (lp_early_charges). The covering program
 *     min  sum time_i x_i + sum time_q y_q
 *     s.t. sum_{i in D(t)} s_i x_i - sum_q s_q (q kept and live at t) >= excess(t)
 * holds for every plan that fits, so its LP relaxation is below the cost of
 * every such plan (the LP alone, with a branch on the one waiver of the early
 * charges: an integer program is slow on deep models, and a time-limited one
 * would make the bound depend on the machine's load). Steps are matched by
 * the node they compute, so the recompute steps of other plans do not shift
 * them.
 *
 * Layering: called by planner.c and plan_search.c; calls only plan_core.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner_internal.h"


typedef struct {
    int q, from_col, node; /* node (column from_col) needs intermediate q */
} Need;

typedef struct {
    int row, col, q; /* at covering row `row`, q's bytes count column col */
} Charge;

typedef struct {
    Ctx *c;
    LpBuild prog;           /* the covering program (freed by pl_covering_bound, even when GLPK fails midway) */
    const bool *read;       /* [n] read by the backward */
    int *p_last;            /* [n] last forward step reading node's tensor in P0, -1 if none */
    int *fb;                /* [n] first backward step reading it in P0, ns if none */
    double *act_bytes;      /* [n] bytes of its forward tensor (a kept copy), 0 if none */
    int *col, *ycol, *kcol; /* [n] columns x (drop), y (recompute), k (keep); 0: none yet */
    VEC(Need) needs;
    VEC(Charge) charges;
    Pool *mem; /* pl_covering_bound's: also what the program's builders take, freed
                             * even when GLPK fails midway (lp_guarded) */
} Bound;

/* A column in {0, 1} costing `time` seconds (the objective is in
 * microseconds); integer for the root's cuts (lp_root_value), the simplex
 * takes it as [0, 1]. */
static int lp_binary(Bound *b, double time) { return lp_col(&b->prog, NULL, true, 0, 1, time * 1e6); }

/* An intermediate: a candidate the backward does not read, freed after the forward in P0. */
static bool lp_is_intermediate(const Bound *b, int q) {
    const Ctx *c = b->c;
    return !b->read[q] && c->cand[q] && c->forced[q] < 0 && b->p_last[q] >= 0;
}

static void lp_require_inputs(Bound *b, int from_col, int node);

/* The y and k columns of intermediate q, created with what y_q requires. */
static void lp_intermediate(Bound *b, int q) {
    if (b->ycol[q]) return;
    b->ycol[q] = lp_binary(b, b->c->time[q]);
    b->kcol[q] = lp_binary(b, 0);
    lp_require_inputs(b, b->ycol[q], q);
}

/* The x column of read node i, created with what x_i requires. */
static int lp_drop(Bound *b, int i) {
    if (!b->col[i]) {
        b->col[i] = lp_binary(b, b->c->drop[i]);
        if (!b->c->offload[i]) lp_require_inputs(b, b->col[i], i); /* a fetch needs no inputs */
    }
    return b->col[i];
}

/* The recomputation of node (column from_col) needs each intermediate input
 * q: from_col <= y_q + k_q. */
static void lp_require_inputs(Bound *b, int from_col, int node) {
    const Node *x = graph_node(b->c->g, node);
    for (int j = 0; j < x->n_in; j++) {
        int q = x->in[j];
        if (!lp_is_intermediate(b, q)) continue;
        lp_intermediate(b, q);
        int r = lp_row(&b->prog, GLP_UP, 0, 0);
        lp_coef(&b->prog, r, from_col, 1), lp_coef(&b->prog, r, b->ycol[q], -1), lp_coef(&b->prog, r, b->kcol[q], -1);
        Need nd = {q, from_col, node};
        VEC_PUSH(b->needs, nd);
    }
}

/* The early rows: backward rows at which at most EARLY_MAX tensors a plan
 * may drop have been read (F(t) below). A size limit, not a time limit. */
#define EARLY_MAX 1

/* Needs by intermediate, then consumer (a total order: deterministic). */
static int cmp_need(const void *a, const void *b) {
    const Need *x = a, *y = b;
    if (x->q != y->q) return x->q - y->q;
    return x->from_col != y->from_col ? x->from_col - y->from_col : x->node - y->node;
}

/* Charges at one early row (the first steps of the backward, where P0
 * usually peaks). Before step t a recomputation runs only when the backward
 * reads, at or before t, a dropped tensor d of F(t) (the droppable tensors
 * read so far), and it reaches node u only if d is u or descends from u. So
 * if intermediate q is kept for u (x_u - y_q > 0) and no such d is dropped,
 * u's recomputation, which reads q, comes after t: q is live at t. One
 * column m per q, m >= x_u - y_q - sum x_d for each u that needs q; q's
 * bytes count m at this row. b->needs sorted by q; anc[j * n + v]: v is an
 * ancestor of f[j]. */
static void lp_early_charges(Bound *b, int row, const int *f, int n_f, const bool *anc) {
    int n = b->c->g->nodes.n;
    int li[EARLY_MAX + 4];
    double lv[EARLY_MAX + 4];
    ACC_ASSERT(n_f <= EARLY_MAX);
    for (int k = 0; k < b->needs.n;) {
        int q = b->needs.v[k].q, m = lp_binary(b, 0);
        for (; k < b->needs.n && b->needs.v[k].q == q; k++) {
            const Need *nd = &b->needs.v[k];
            int len = 0;
            bool free_q = false; /* u may be recomputed by t whatever the plan */
            li[++len] = m, lv[len] = 1;
            li[++len] = nd->from_col, lv[len] = -1;
            li[++len] = b->ycol[q], lv[len] = 1;
            for (int j = 0; j < n_f; j++) {
                if (f[j] != nd->node && !anc[(size_t)j * n + nd->node]) continue;
                if (f[j] == nd->node || b->c->forced[f[j]] == DEC_RECOMPUTE) free_q = true;
                else li[++len] = b->col[f[j]], lv[len] = 1;
            }
            if (free_q) continue;
            int r = lp_row(&b->prog, GLP_LO, 0, 0);
            for (int j = 1; j <= len; j++) lp_coef(&b->prog, r, li[j], lv[j]);
        }
        Charge ch = {row, m, q};
        VEC_PUSH(b->charges, ch);
    }
}

/* F: the first EARLY_MAX + 1 tensors the backward reads that a plan may drop,
 * by P0's first read (ties by id), with their x columns; the early rows'
 * charges. Returns how many F holds (f[0] is the early charges' waiver). */
static int lp_early(Bound *b, const Row *rows, int n_rows, int fbs, int ns, int *f) {
    const Ctx *c = b->c;
    int n = c->g->nodes.n, n_f = 0;
    for (int i = 0; i < n; i++) {
        if (!b->read[i] || !c->cand[i] || c->forced[i] == DEC_SAVE || b->fb[i] >= ns) continue;
        int k = n_f < EARLY_MAX + 1 ? n_f++ : EARLY_MAX + 1;
        for (; k > 0 && b->fb[f[k - 1]] > b->fb[i]; k--) /* insertion, keeping the first */
            if (k < EARLY_MAX + 1) f[k] = f[k - 1];
        if (k < EARLY_MAX + 1) f[k] = i;
    }
    size_t anc_len = (size_t)(EARLY_MAX + 1) * (size_t)n;
    bool *anc = pool_alloc(b->mem, anc_len * sizeof(bool)); /* zeroed */
    for (int j = 0; j < n_f; j++) {
        bool *a = anc + (size_t)j * n;
        for (int v = f[j]; v >= 0; v--) { /* ids are topological: one pass down */
            if (v != f[j] && !a[v]) continue;
            const Node *x = graph_node(c->g, v);
            for (int k = 0; k < x->n_in; k++) a[x->in[k]] = true;
        }
        if (c->forced[f[j]] != DEC_RECOMPUTE) lp_drop(b, f[j]);
    }
    if (b->needs.n) qsort(b->needs.v, (size_t)b->needs.n, sizeof *b->needs.v, cmp_need);
    for (int k = 0; k < n_rows; k++) {
        int m = 0;
        while (m < n_f && b->fb[f[m]] <= rows[k].t) m++;
        if (m > EARLY_MAX) break;
        if (rows[k].t > fbs) lp_early_charges(b, k, f, m, anc);
    }
    return n_f;
}

/* The covering rows. They are nearly nested (a step's droppable set grows
 * through the forward pass and shrinks through the backward), so row r is
 * written as a column S_r >= need_r defined by S_r = S_{r-1} + (row r -
 * row r-1): the same program, with a few entries per row instead of all of
 * them. Kept intermediates count at forward rows after their last forward
 * read, and at early rows through the charges. */
static void lp_cover_rows(Bound *b, const Row *rows, int n_rows, const int *ent_node, const double *ent_size, int fbs) {
    LpBuild *p = &b->prog;
    int n = b->c->g->nodes.n, n_cols = p->n_cols + 1;
    double *prev = pool_alloc(b->mem, (size_t)n_cols * sizeof(double));
    double *cur = pool_alloc(b->mem, (size_t)n_cols * sizeof(double));
    for (int k = 0; k < n_cols; k++) prev[k] = 0;
    int prev_s = 0;
    for (int k = 0; k < n_rows; k++) {
        const Row *rw = &rows[k];
        for (int j = 0; j < n_cols; j++) cur[j] = 0;
        for (int e = rw->first; e < rw->first + rw->m; e++) /* megabytes: keep the matrix well scaled */
            cur[b->col[ent_node[e]]] = ent_size[e] / 1e6;
        for (int q = 0; q < n && rw->t <= fbs; q++)
            if (b->kcol[q] && b->p_last[q] < rw->t) cur[b->kcol[q]] = -b->act_bytes[q] / 1e6;
        for (int j = 0; j < b->charges.n; j++)
            if (b->charges.v[j].row == k) cur[b->charges.v[j].col] = -b->act_bytes[b->charges.v[j].q] / 1e6;
        int sc = lp_col(p, NULL, false, rw->need / 1e6, INFINITY, 0), r = lp_row(p, GLP_FX, 0, 0);
        lp_coef(p, r, sc, 1);
        if (prev_s) lp_coef(p, r, prev_s, -1);
        for (int j = 1; j < n_cols; j++)
            if (cur[j] != prev[j]) lp_coef(p, r, j, prev[j] - cur[j]);
        double *tmp = prev;
        prev = cur, cur = tmp, prev_s = sc;
    }
}

/* The optimum of the LP in seconds (warm: from the basis of the last solve);
 * INFINITY if infeasible, 0 if the simplex stops at its iteration limit (a
 * count, so without --time-limit the answer does not depend on the machine's
 * load) or at the deadline (--time-limit; recorded in c->timed_out). */
static double lp_value(Ctx *c, glp_prob *lp, bool warm) {
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.it_lim = 100 * (glp_get_num_rows(lp) + glp_get_num_cols(lp));
    sm.tm_lim = pl_ms_left(c);
    sm.presolve = warm ? GLP_OFF : GLP_ON;
    if (warm) sm.meth = GLP_DUALP;
    int rc = glp_simplex(lp, &sm);
    if (rc == 0 && glp_get_status(lp) == GLP_OPT) return glp_get_obj_val(lp) / 1e6;
    if (rc == GLP_ENOPFS || (rc == 0 && glp_get_status(lp) == GLP_NOFEAS)) return INFINITY;
    if (rc == GLP_ETMLIM) return c->timed_out = true, 0;
    return warm ? lp_value(c, lp, false) : 0;
}

/* The root's count of subproblem selections (GLPK selects the root, then,
 * once its cuts are in, one of its two children) and the best bound seen. */
typedef struct {
    int selects;
    double bound; /* microseconds; -INFINITY: none yet */
} RootCb;

static void root_cb(glp_tree *tree, void *info) {
    RootCb *r = info;
    int best = glp_ios_best_node(tree); /* the active subproblem of least bound: a bound of every one */
    if (best) {
        double v = glp_ios_node_bound(tree, best);
        if (v > r->bound) r->bound = v;
    }
    if (glp_ios_reason(tree) == GLP_ISELECT && ++r->selects == 2) glp_ios_terminate(tree);
}

/* The LP's optimum lp_v (seconds, the basis optimal in lp) raised by the
 * root of GLPK's branch and bound: Gomory's mixed-integer cuts, which every
 * 0/1 point of the program satisfies - so every plan does - cut off
 * fractional covers (a row's last tensor taken in part), then the bound of
 * the root with its cuts (or the integer optimum, when the root solves the
 * program). GLPK's tolerances are relative, about 1e-7 to 1e-9: the result
 * is lowered by 1e-6 of itself so that rounding cannot lift it past a plan.
 * The root only, and no time limit but --time-limit's: the same answer on a
 * loaded machine. */
static double lp_root_value(Ctx *c, glp_prob *lp, double lp_v) {
    if (!(lp_v > 0 && lp_v < INFINITY) || pl_out_of_time(c)) return lp_v;
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.gmi_cuts = GLP_ON;
    io.tm_lim = pl_ms_left(c);
    RootCb r = {0, -INFINITY};
    io.cb_func = root_cb;
    io.cb_info = &r;
    int rc = glp_intopt(lp, &io);
    double v = r.bound;
    if (rc == 0 && glp_mip_status(lp) == GLP_OPT) v = glp_mip_obj_val(lp);
    v = v / 1e6 * (1 - 1e-6);
    return v > lp_v ? v : lp_v;
}

/* The rows of the covering program: at each step of P0 (schedule s) where
 * more than the budget is live, the tensors whose dropping frees room there
 * (entries ent_node/ent_size; a step with the same entries as the last row
 * and no more need adds nothing). Returns the number of rows, -1 if at some
 * step nothing can make room (no plan fits), -2 if the deadline
 * (--time-limit) passed first: each row scans every buffer, and deep models
 * have tens of thousands of rows. */
int pl_bound_rows(Ctx *c, const Schedule *s, const int *last_fwd, const int *first_bwd, int64_t budget, Rows *rows) {
    int n = c->g->nodes.n, nb = s->bufs.n, ns = s->steps.n, fbs = s->first_bwd_step;
    int64_t live = 0;
    int64_t *delta = acc_xrealloc(NULL, (size_t)(ns + 1) * sizeof(int64_t));
    memset(delta, 0, (size_t)(ns + 1) * sizeof(int64_t));
    for (int k = 0; k < nb; k++) {
        const Buffer *x = &s->bufs.v[k];
        if (x->persistent) live += x->size_bytes;
        else if (x->first >= 0) delta[x->first] += x->size_bytes, delta[x->last + 1] -= x->size_bytes;
    }
    double *size = acc_xrealloc(NULL, (size_t)n * sizeof(double)), prev_need = 0;
    int n_rows = 0, prev_m = -1;
    for (int t = 0; t < ns; t++) {
        live += delta[t];
        double need = (double)(live - budget);
        if (need <= 0) continue;
        if (pl_out_of_time(c)) {
            n_rows = -2;
            break;
        }
        for (int i = 0; i < n; i++) size[i] = 0;
        for (int k = 0; k < nb; k++) {
            const Buffer *x = &s->bufs.v[k];
            int nd = x->node;
            if (x->persistent || (x->kind != BUF_ACT && x->kind != BUF_AUX) || x->first < 0 || x->first >= fbs ||
                !(x->first <= t && t <= x->last))
                continue;
            if (t <= last_fwd[k] || first_bwd[k] <= t) continue;
            if (c->cand[nd] && c->forced[nd] < 0) size[nd] += (double)x->size_bytes;
        }
        int m = 0, first = rows->ent_node.n;
        for (int i = 0; i < n; i++)
            if (size[i] > 0) {
                VEC_PUSH(rows->ent_node, i);
                VEC_PUSH(rows->ent_size, size[i]);
                m++;
            }
        if (m == 0) { /* nothing can make room here */
            n_rows = -1;
            break;
        }
        if (m == prev_m && need <= prev_need) {
            rows->ent_node.n = rows->ent_size.n = first;
            continue;
        }
        prev_m = m, prev_need = need;
        Row r = {t, first, m, need};
        VEC_PUSH(rows->v, r);
        n_rows++;
    }
    free(delta), free(size);
    return n_rows;
}

/* The covering program's part of pl_covering_bound, run under lp_guarded. */
typedef struct {
    Bound *b;
    const Rows *rows;
    int n_rows, fbs, ns;
    double bound;
} BoundRun;

static void bound_solve(void *arg) {
    BoundRun *run = arg;
    Bound *b = run->b;
    Ctx *c = b->c;
    const Rows *rows = run->rows;
    lp_build_init(&b->prog, NULL, false);
    for (int k = 0; k < rows->ent_node.n; k++) lp_drop(b, rows->ent_node.v[k]);
    int f[EARLY_MAX + 1];
    int n_f = lp_early(b, rows->v.v, run->n_rows, run->fbs, run->ns, f);
    lp_cover_rows(b, rows->v.v, run->n_rows, rows->ent_node.v, rows->ent_size.v, run->fbs);
    lp_load(&b->prog);
    glp_prob *lp = b->prog.lp;
    glp_scale_prob(lp, GLP_SF_AUTO);
    int w = n_f > 0 && b->charges.n ? b->col[f[0]] : 0;
    if (w) { /* the waiver of the early charges is 0 or 1: the smaller of both */
        glp_set_col_bnds(lp, w, GLP_FX, 0, 0);
        run->bound = lp_root_value(c, lp, lp_value(c, lp, false));
        if (c->drop[f[0]] < run->bound) { /* else dropping f[0] alone costs more */
            glp_set_col_bnds(lp, w, GLP_FX, 1, 1);
            double v1 = lp_root_value(c, lp, lp_value(c, lp, false));
            run->bound = v1 < run->bound ? v1 : run->bound;
        }
    } else {
        run->bound = lp_root_value(c, lp, lp_value(c, lp, false));
    }
    lp_build_free(&b->prog);
}

/* The bound for budget (INFINITY: no plan fits; 0 when there is nothing to
 * free, when GLPK failed, or when the deadline came first: a bound that
 * proves nothing). */
double pl_covering_bound(Ctx *c, int64_t budget) {
    if (pl_out_of_time(c)) return 0;
    int n = c->g->nodes.n;
    Pool mem = {0}; /* the bound's arrays, the program's builders' too */
    Decision *dec = pool_alloc(&mem, (size_t)n * sizeof(Decision));
    for (int i = 0; i < n; i++) dec[i] = DEC_SAVE;
    pl_apply_forced(c, dec);
    Schedule s;
    Eval e;
    pl_evaluate(c, dec, false, &e, &s);
    int nb = s.bufs.n, ns = s.steps.n, fbs = s.first_bwd_step;
    int *last_fwd = pool_alloc(&mem, (size_t)nb * sizeof(int));
    int *first_bwd = pool_alloc(&mem, (size_t)nb * sizeof(int));
    pl_read_spans(&s, last_fwd, first_bwd);
    Rows rows = {{0}, {0}, {0}};
    int n_rows = pl_bound_rows(c, &s, last_fwd, first_bwd, budget, &rows);
    double bound = n_rows == -1 ? INFINITY : 0;
    if (n_rows > 0) {
        Bound b = {c, {0}, NULL, NULL, NULL, NULL, NULL, NULL, NULL, {0}, {0}, &mem};
        int **cols[] = {&b.p_last, &b.fb, &b.col, &b.ycol, &b.kcol};
        for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) *cols[k] = pool_alloc(&mem, (size_t)n * sizeof(int));
        b.act_bytes = pool_alloc(&mem, (size_t)n * sizeof(double));
        b.read = c->read;
        for (int i = 0; i < n; i++)
            b.p_last[i] = -1, b.fb[i] = ns, b.act_bytes[i] = b.col[i] = b.ycol[i] = b.kcol[i] = 0;
        for (int k = 0; k < nb; k++) {
            const Buffer *x = &s.bufs.v[k];
            if ((x->kind != BUF_ACT && x->kind != BUF_AUX) || x->first < 0 || x->first >= fbs) continue;
            if (x->kind == BUF_ACT) b.p_last[x->node] = last_fwd[k], b.act_bytes[x->node] = (double)x->size_bytes;
            if (first_bwd[k] < b.fb[x->node]) b.fb[x->node] = first_bwd[k];
        }
        BoundRun run = {&b, &rows, n_rows, fbs, ns, 0};
        char err[200];
        if (!lp_guarded(bound_solve, &run, err, sizeof err)) /* the program went with GLPK's environment */
            pl_solver_failed(c, err), run.bound = 0, b.prog.lp = NULL;
        bound = run.bound;
        lp_build_free(&b.prog);
        VEC_FREE(b.needs), VEC_FREE(b.charges);
    }
    sched_free(&s);
    VEC_FREE(rows.v), VEC_FREE(rows.ent_node), VEC_FREE(rows.ent_size);
    pool_free(&mem);
    return bound;
}
