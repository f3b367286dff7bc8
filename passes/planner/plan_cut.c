/* plan_cut.c - cutting a plan until it fits: the covering program over the
 * steps of the current plan that are over the target (GLPK, identical
 * tensors of identical blocks aggregated; with offload_cols, a tensor is
 * recomputed or offloaded, whichever the program finds cheaper together
 * with the others, within the host budget), and restoring, most expensive
 * first, the drops the cut made that the target can afford to save again.
 *
 * requires: a Ctx (plan_core.c) and a plan. provides: a plan whose max-live
 * is within the target (pl_cut_to) and one that recomputes no more than it
 * must (pl_restore). Layering: called by planner.c and plan_search.c; calls
 * only plan_core.c.
 */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner_internal.h"

/* ---- GLPK: a covering program, min cost x s.t. A x >= need ----------------- */

/* Branch and bound stops after this many subproblems (lp_node_limit). */
#define KNAPSACK_NODE_LIMIT 20000

/* cover_min_cost's integer program over the m item classes (rep: a class's
 * first item, count: its size; on an answer, count: how many it recomputes,
 * n_off: how many it offloads). */
typedef struct {
    const double *cost, *off, *a, *need, *host;
    double host_room;
    int stride, n_rows, m;
    const int *rep;
    int *count, *n_off;
    LpBuild prog; /* freed by cover_min_cost, even when GLPK fails midway */
    double best;  /* -1: no answer */
} Cover;

static void cover_solve(void *arg) {
    Cover *v = arg;
    int m = v->m, stride = v->stride;
    LpBuild *b = &v->prog;
    lp_build_init(b, NULL, false);
    for (int r = 0; r < v->n_rows; r++) lp_row(b, GLP_LO, v->need[r], 0);
    int *col = v->n_off;        /* class k's offload column, 0: none (n_off is written back from it) */
    for (int k = 0; k < m; k++) /* microseconds: GLPK's tolerances are absolute */
        lp_col(b, NULL, true, 0, v->count[k], v->cost[v->rep[k]] * 1e6);
    int host_row = 0;
    for (int k = 0; k < m; k++) {
        col[k] = 0;
        if (!v->off || v->off[v->rep[k]] < 0) continue;
        col[k] = lp_col(b, NULL, true, 0, v->count[k], v->off[v->rep[k]] * 1e6);
        if (v->count[k] > 1) { /* recomputed and offloaded together at most the class's size */
            int r = lp_row(b, GLP_UP, 0, v->count[k]);
            lp_coef(b, r, k + 1, 1), lp_coef(b, r, col[k], 1);
        }
        if (!host_row) host_row = lp_row(b, GLP_UP, 0, v->host_room / 1e3); /* kilobytes */
        lp_coef(b, host_row, col[k], v->host[v->rep[k]] / 1e3);
    }
    for (int r = 0; r < v->n_rows; r++)
        for (int k = 0; k < m; k++) {
            double a = v->a[(size_t)v->rep[k] * stride + r];
            lp_coef(b, r + 1, k + 1, a);
            if (col[k]) lp_coef(b, r + 1, col[k], a); /* an offload frees what a drop does */
        }
    lp_load(b);
    glp_prob *lp = b->lp;
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.mir_cuts = GLP_ON;
    io.cov_cuts = GLP_ON;
    int nodes_left = KNAPSACK_NODE_LIMIT;
    io.cb_func = lp_node_limit;
    io.cb_info = &nodes_left;
    int rc = lp_intopt_from_basis(lp, &io);
    v->best = -1;
    if (lp_mip_found(lp, rc)) {
        v->best = glp_mip_obj_val(lp) / 1e6;
        for (int k = 0; k < m; k++) {
            v->count[k] = (int)lround(glp_mip_col_val(lp, k + 1));
            col[k] = col[k] ? (int)lround(glp_mip_col_val(lp, col[k])) : 0;
        }
    }
    lp_build_free(b);
}


/* min cost over items i in [0, n), each taken (recomputed) at cost[i] or,
 * where off[i] >= 0 (off may be NULL), offloaded at off[i] - not both -
 * s.t. sum over taken i of a[i * stride + r] >= need[r] for each of n_rows
 * rows (a 0/1 knapsack when n_rows is 1), the offloaded items' host[i]
 * within host_room. Returns the optimal cost, x[i] DEC_SAVE (not taken),
 * DEC_RECOMPUTE or DEC_OFFLOAD, or -1 if even taking everything leaves a row
 * short. Items with equal costs, host bytes and coefficients in every row
 * (the same tensor of identical blocks) become one integer variable per
 * fate bounded by their count: no symmetric branching. */
static double cover_min_cost(Ctx *c, const double *cost, const double *off, const double *host, double host_room,
                             const double *a, int stride, int n_rows, int n, const double *need, Decision *x) {
    bool any = false;
    for (int i = 0; i < n; i++) x[i] = DEC_SAVE;
    for (int r = 0; r < n_rows; r++) {
        double total = 0;
        for (int i = 0; i < n; i++) total += a[(size_t)i * stride + r];
        if (total < need[r]) return -1;
        any |= need[r] > 0;
    }
    if (!any || n == 0) return 0;
    Pool mem = {0}; /* called for every row of every cut: returned when it ends */
    int *cls = pool_alloc(&mem, (size_t)(n + 1) * sizeof(int)); /* item -> class */
    int *rep = pool_alloc(&mem, (size_t)(n + 1) * sizeof(int)); /* class -> first item */
    int *count = pool_alloc(&mem, (size_t)(n + 1) * sizeof(int));
    int *n_off = pool_alloc(&mem, (size_t)(n + 1) * sizeof(int));
    int m = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        for (; k < m; k++) {
            int j = rep[k];
            if (cost[j] != cost[i] || (off && (off[j] != off[i] || (off[i] >= 0 && host[j] != host[i])))) continue;
            int r = 0;
            while (r < n_rows && a[(size_t)j * stride + r] == a[(size_t)i * stride + r]) r++;
            if (r == n_rows) break;
        }
        if (k == m) rep[m] = i, count[m] = 0, m++;
        cls[i] = k;
        count[k]++;
    }
    Cover v = {cost, off, a, need, host, host_room, stride, n_rows, m, rep, count, n_off, {0}, -1};
    char err[200];
    if (!lp_guarded(cover_solve, &v, err, sizeof err)) /* the program went with GLPK's environment */
        pl_solver_failed(c, err), v.best = -1, v.prog.lp = NULL;
    lp_build_free(&v.prog);
    double best = v.best;
    if (best >= 0) {
        for (int i = 0; i < n; i++)
            if (count[cls[i]] > 0) x[i] = DEC_RECOMPUTE, count[cls[i]]--;
            else if (n_off[cls[i]] > 0) x[i] = DEC_OFFLOAD, n_off[cls[i]]--;
    } else { /* GLPK gave no answer in time: take everything */
        best = 0;
        for (int i = 0; i < n; i++) x[i] = DEC_RECOMPUTE, best += cost[i];
    }
    pool_free(&mem);
    return best;
}


/* Recompute time of dropping node i with pl_drop_closure: i and the saved
 * intermediates that feed it (listed into list, stamped with mark). */
static double closure_time(const Ctx *c, const Decision *dec, int i, int *stamp, int mark, int *list) {
    if (c->offload[i]) return c->drop[i]; /* copied back, not recomputed: nothing feeds it */
    double t = c->time[i];
    int m = pl_closure_list(c, dec, i, stamp, mark, list, 0);
    for (int k = 0; k < m; k++) t += c->time[list[k]];
    return t;
}

/* Rows of the cut at most: steps of the plan being cut whose excess the
 * covering program must remove together. */
#define CUT_ROWS 8

/* Cut the peak of dec until its max-live is at most target. Each round
 * drops the cheapest set of tensors (each with the intermediates its
 * recomputation needs) that removes the excess at the peak step, found by a
 * covering program over the steps of the current plan: the set is simulated,
 * and if the peak moves to another step still over the target, that step
 * becomes one more row of the program and it is solved again. So a tensor
 * that makes room at the peak but is live again (recomputed) at the next
 * step over the target loses to one that makes room at both. A step's
 * entries are the saved tensors whose forward copy is live there after its
 * last forward read and before its first backward read. Past the deadline
 * (--time-limit) each round solves the program of the peak step alone, but
 * the rounds go on: the cut is how a first plan is found (at most 4n + 16
 * rounds, each dropping at least one tensor), so a time limit never turns a
 * budget that fits into an error. */
bool pl_cut_to(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    Pool mem = {0};                                                      /* called in loops: returned when it ends */
    double *a = pool_alloc(&mem, (size_t)n * CUT_ROWS * sizeof(double)); /* item k, row r: a[k * CUT_ROWS + r] */
    double *cost = pool_alloc(&mem, (size_t)n * sizeof(double)), need[CUT_ROWS];
    double *off = pool_alloc(&mem, (size_t)n * sizeof(double)), *host = pool_alloc(&mem, (size_t)n * sizeof(double));
    int *id = pool_alloc(&mem, (size_t)n * sizeof(int)), *item = pool_alloc(&mem, (size_t)n * sizeof(int));
    int *clist = pool_alloc(&mem, (size_t)n * sizeof(int));
    int *stamp = pool_alloc(&mem, (size_t)n * sizeof(int)), *fwd_at = pool_alloc(&mem, (size_t)n * sizeof(int));
    int *bwd_at = pool_alloc(&mem, (size_t)n * sizeof(int)), row_t[CUT_ROWS];
    Decision *x = pool_alloc(&mem, (size_t)n * sizeof(Decision));
    Decision *tmp = pool_alloc(&mem, (size_t)n * sizeof(Decision));
    int *last_fwd = NULL, *first_bwd = NULL; /* these grow with the schedule */
    int64_t *live = NULL;
    for (int i = 0; i < n; i++) stamp[i] = -1;
    int mark = 0;
    bool ok = false;
    for (int iter = 0; iter < 4 * n + 16; iter++) {
        Schedule s;
        Eval e;
        pl_evaluate(c, dec, false, &e, &s);
        if (e.max_live <= target) {
            sched_free(&s);
            ok = true;
            break;
        }
        int nb = s.bufs.n, ns = s.steps.n;
        last_fwd = acc_xrealloc(last_fwd, (size_t)nb * sizeof(int));
        first_bwd = acc_xrealloc(first_bwd, (size_t)nb * sizeof(int));
        live = acc_xrealloc(live, (size_t)(ns + 1) * sizeof(int64_t));
        pl_read_spans(&s, last_fwd, first_bwd);
        sched_live_bytes(&s, live);
        for (int i = 0; i < n; i++) item[i] = fwd_at[i] = bwd_at[i] = -1;
        for (int t = 0; t < ns; t++) {
            const Step *st = &s.steps.v[t];
            if (st->kind == ST_FWD) fwd_at[st->node] = t;
            if (st->kind == ST_BWD) bwd_at[st->node] = t;
        }
        int m = 0, n_rows = 0, t = e.peak_step;
        double host_room = c->offload_cols ? (double)(c->o->host_bytes - pl_host_used(c, dec)) : 0;
        bool made = false; /* tmp holds a cut */
        for (;;) {
            int r = n_rows;
            row_t[r] = t, need[r] = (double)(live[t] - target);
            for (int k = 0; k < m; k++) a[(size_t)k * CUT_ROWS + r] = 0;
            bool any = false;
            for (int k = 0; k < nb; k++) {
                const Buffer *b = &s.bufs.v[k];
                int i = b->node;
                if (b->persistent || (b->kind != BUF_ACT && b->kind != BUF_AUX) || b->first < 0 ||
                    b->first >= s.first_bwd_step || !(b->first <= t && t <= b->last) || t <= last_fwd[k] ||
                    t >= first_bwd[k] || !c->cand[i] || c->forced[i] >= 0 || dec[i] != DEC_SAVE)
                    continue;
                if (item[i] < 0) {
                    item[i] = m, id[m] = i, cost[m] = closure_time(c, dec, i, stamp, ++mark, clist);
                    off[m] = pl_may_offload(c, i) ? c->transfer[i] : -1, host[m] = (double)c->host_size[i];
                    for (int q = 0; q < CUT_ROWS; q++) a[(size_t)m * CUT_ROWS + q] = 0;
                    m++;
                }
                a[(size_t)item[i] * CUT_ROWS + r] += (double)b->size_bytes;
                any = true;
            }
            if (!any) break; /* nothing makes room at t */
            n_rows++;
            if (cover_min_cost(c, cost, c->offload_cols ? off : NULL, host, host_room > 0 ? host_room : 0, a, CUT_ROWS,
                               n_rows, m, need, x) < 0)
                for (int k = 0; k < m; k++)
                    if (a[(size_t)k * CUT_ROWS + r] > 0) x[k] = DEC_RECOMPUTE;
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            for (int k = 0; k < m; k++)
                if (x[k] == DEC_RECOMPUTE) pl_drop_closure(c, tmp, id[k]);
                else if (x[k] == DEC_OFFLOAD) tmp[id[k]] = DEC_OFFLOAD; /* nothing feeds it: no closure */
            made = true;
            Eval et;
            pl_evaluate(c, tmp, false, &et, NULL);
            if (et.max_live <= target || n_rows == CUT_ROWS || pl_out_of_time(c)) break;
            /* the step of the current plan where the cut's peak falls */
            sched_rebuild(c->g, c->ad, tmp, &c->so, &c->scratch);
            int u = et.peak_step;
            while (u < c->scratch.steps.n &&
                   (c->scratch.steps.v[u].kind == ST_RECOMPUTE || c->scratch.steps.v[u].kind == ST_OFFLOAD ||
                    c->scratch.steps.v[u].kind == ST_FETCH))
                u++; /* to the forward, seed or backward step it precedes */
            if (u == c->scratch.steps.n) break;
            const Step *st = &c->scratch.steps.v[u];
            t = st->kind == ST_FWD ? fwd_at[st->node] : st->kind == ST_BWD ? bwd_at[st->node] : s.first_bwd_step;
            bool seen = t < 0;
            for (int q = 0; q < n_rows; q++) seen |= row_t[q] == t;
            if (seen || live[t] <= target) break;
        }
        sched_free(&s);
        if (!made) break;
        memcpy(dec, tmp, (size_t)n * sizeof(Decision));
    }
    pool_free(&mem);
    free(last_fwd), free(first_bwd), free(live);
    return ok;
}


/* Save again, together, the dropped consumers of one kept intermediate (a
 * tensor the backward does not read, saved: kept for their
 * recomputations), for each with two or more. Dropping the three slices q,
 * k, v of a saved projection output frees nothing (the projection is kept
 * until they are recomputed, in their place) but costs three
 * recomputations, and saving any one of them back alone needs more memory
 * (the projection stays, for the other two): only the three at once give
 * the time back. Accepted when the plan stays within target and costs
 * less; repeated while a pass saves something. */
static void restore_groups(Ctx *c, Decision *dec, int64_t target, Eval *cur) {
    const Graph *g = c->g;
    int n = g->nodes.n;
    int *first = acc_xrealloc(NULL, (size_t)(n + 1) * sizeof(int)), *fill = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    for (int i = 0; i <= n; i++) first[i] = 0;
    for (int v = 0; v < n; v++) {
        const Node *x = graph_node(g, v);
        for (int j = 0; j < x->n_in; j++) first[x->in[j] + 1]++;
    }
    for (int i = 0; i < n; i++) first[i + 1] += first[i], fill[i] = first[i];
    int *cons = acc_xrealloc(NULL, (size_t)(first[n] + 1) * sizeof(int));
    int *saved = acc_xrealloc(NULL, (size_t)(first[n] + 1) * sizeof(int)); /* the consumers a group saves */
    for (int v = 0; v < n; v++) {
        const Node *x = graph_node(g, v);
        for (int j = 0; j < x->n_in; j++)
            if (fill[x->in[j]] == first[x->in[j]] || cons[fill[x->in[j]] - 1] != v) cons[fill[x->in[j]]++] = v;
    }
    for (int pass = 0; pass < 4 && !pl_out_of_time(c); pass++) {
        bool changed = false;
        for (int s = 0; s < n && !pl_out_of_time(c); s++) {
            if (!c->cand[s] || c->read[s] || dec[s] != DEC_SAVE) continue; /* a kept intermediate */
            int m = 0;
            for (int k = first[s]; k < fill[s]; k++)
                if (dec[cons[k]] == DEC_RECOMPUTE && c->forced[cons[k]] < 0) saved[m++] = cons[k];
            if (m < 2) continue;
            for (int k = 0; k < m; k++) dec[saved[k]] = DEC_SAVE;
            Eval e;
            pl_evaluate(c, dec, false, &e, NULL);
            if (e.max_live <= target && e.cost < cur->cost) {
                *cur = e, changed = true;
                continue;
            }
            for (int k = 0; k < m; k++) dec[saved[k]] = DEC_RECOMPUTE;
        }
        if (!changed) break;
    }
    free(first), free(fill), free(cons), free(saved);
}

/* Save again, most expensive first, what the plan can afford to keep; then
 * groups (restore_groups). */
void pl_restore(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    VEC(int) dropped = {0};
    for (int i = 0; i < n; i++)
        if (dec[i] != DEC_SAVE && c->forced[i] < 0) VEC_PUSH(dropped, i);
    if (dropped.n) pl_sort_by_time(c, dropped.v, dropped.n);
    Eval cur;
    pl_evaluate(c, dec, false, &cur, NULL);
    for (int k = 0; k < dropped.n; k++) {
        int i = dropped.v[k];
        Decision was = dec[i];
        dec[i] = DEC_SAVE;
        Eval e;
        pl_evaluate(c, dec, false, &e, NULL);
        if (e.max_live <= target && e.cost <= cur.cost) cur = e;
        else dec[i] = was;
        if (pl_out_of_time(c)) break;
    }
    VEC_FREE(dropped);
    restore_groups(c, dec, target, &cur);
}
