/* dag_interval.c - the interval program for published graphs (acc plan
 * --graph --method intervals): each node is computed up to C times, each
 * computation's output is retained over one interval of events that starts
 * at it, a computation needs each input retained there, and memory is
 * checked at every event. MOCCASIN's model (Bartan et al., ICML 2023:
 * interval copies per node, precedence by containment, a cumulative memory
 * constraint) written as a 0/1 program GLPK can solve, which has no
 * cumulative or interval variables.
 *
 * requires: a Dag, a budget, a deadline, optionally an incumbent in stage
 * form. provides: a staged schedule (the caller scores it with
 * dag_simulate), the status, objective and the branch and bound's lower
 * bound, which holds for the plans of this program only (scope "intervals").
 *
 * The horizon. Stage t (the topological order, as in the papers' model)
 * has L_t recomputation slots followed by the first execution of node t at
 * the fixed event pos(t). A slot holds at most one computation, of any
 * earlier node in the stage's support, in any order: unlike the stage model
 * (dag_milp.c), recomputations need not be ascending, and a node may be
 * recomputed several times (copies 1..C-1).
 *
 * The variables. x[v,c,k] (binary): copy c >= 1 of v is computed at slot k;
 * copy 0 is fixed at pos(v). y[v,c,k] in [0,1] (continuous): copy c of v is
 * held at event k, over the events from the copy's earliest start to the
 * last event at which a reader of v can compute (after it nothing reads v).
 * z[v,c,k] (continuous, C >= 3 only): copy c has started by event k.
 *
 * The rows.
 *   interval:    y[v,c,k] <= y[v,c,k-1] + x[v,c,k] (held only from its start
 *                on, never again after a gap), y[v,c,k] >= x[v,c,k] (held at
 *                its own event), y[v,0,pos(v)] = 1;
 *   slot:        sum over v,c of x[v,c,k] <= 1, and a stage's slots are
 *                used in order (slot j+1 only if slot j): no two schedules
 *                differ only by where the empty slots are;
 *   containment: a computation of w at event k needs, for each input u,
 *                sum_c y[u,c,k] >= sum_c x[w,c,k] (1 for w's first);
 *   memory:      sum mem[v] y[v,c,k] <= budget at every event k;
 *   copies:      each copy is computed at most once; copy c is used only if copy c-1 is, and starts after it
 *                (x[v,c,k] <= z[v,c-1,k-1], z the running sum of x): the
 *                copies' symmetry is broken.
 *   objective:   the baseline compute plus cost[v] x[v,c,k].
 *
 * Why it is exact. Every 0/1 point is a schedule: the events in order, the
 * slots that hold a computation and the first executions. Only one
 * computation per event, and y is 0 before its copy's start, so an input
 * held at a computation's event was computed before it: the schedule is
 * valid. The simulator holds the latest copy of u from its start until its
 * last read; at such an event k the LP holds at least one unit of u: some
 * later read k' (before the next copy of u starts) has sum_c y[u,c,k'] >= 1
 * over copies started by k, and each y is nonincreasing after its start, so
 * the sum at k is at least as large. So the simulator's memory at every
 * event is at most the row's, within the budget. Conversely, a schedule
 * with first executions in order, at most C computations per node, at most
 * L_t recomputations in stage t, each on the support, is a 0/1 point: its
 * recomputations fill the first slots of their stages, y holds the latest
 * copy from its start to its last read (the simulator's memory, within the
 * budget; an empty slot holds a subset of the event before it), z counts.
 * Hence y may stay continuous: given x, the integral y above is feasible,
 * and only x is binary.
 *
 * The plan space, and so the bound's scope: C copies per node, L slots per
 * stage (both at least what the incumbent uses), recomputations of v in
 * stage t only where v is an ancestor of t within K hops (every earlier
 * node when the program is small enough) or the incumbent recomputes it
 * there. With C and L large enough and the full support it is every
 * schedule whose first executions follow the topological order.
 */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"
#include "lp.h"

#define IVL_MAX_NODES 4096  /* the support's table is n^2 bytes */
#define IVL_BINARY_CAP 6000 /* x columns: the support shrinks (fewer hops) until the program is this small */

typedef struct {
    int n, n_ev;
    int *copies;   /* [n] C_v */
    int *slots;    /* [n] L_t */
    int *pos;      /* [n] event of v's first execution; stage t's slots are pos(t)-L_t .. pos(t)-1 */
    int *stage_of; /* [n_ev] */
    uint8_t *can;  /* [n*n] can[t*n+v]: v may be recomputed in stage t */
    int *last;     /* [n] the last event at which a reader of v can compute */
    /* columns: per (v,c) the first event with a column, and the first column; 0: none */
    int *x_ev0, *x_col0, *y_ev0, *y_col0, *z_col0; /* [n*Cmax] */
    int cmax;
    int hops; /* the support: 1 << 30 for every earlier node */
} Ivl;

static void ivl_free(Ivl *m) {
    free(m->copies), free(m->slots), free(m->pos), free(m->stage_of), free(m->can), free(m->last);
    free(m->x_ev0), free(m->x_col0), free(m->y_ev0), free(m->y_col0), free(m->z_col0);
    memset(m, 0, sizeof *m);
}

/* the first and last slot events of stage t (first > last: none) */
static int slot_lo(const Ivl *m, int t) { return m->pos[t] - m->slots[t]; }

/* The support for k hops: can[t*n+v] for v an ancestor of t within k hops
 * (every earlier node when k >= n), plus the incumbent's pairs. */
static void make_can(const Dag *d, int k, const Staged *inc, uint8_t *can) {
    int n = d->n;
    memset(can, 0, (size_t)n * (size_t)n);
    int *depth = acc_xcalloc((size_t)n, sizeof(int)), *queue = acc_xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) depth[i] = -1;
    for (int t = 0; t < n; t++) {
        if (k >= n) {
            memset(can + (size_t)t * n, 1, (size_t)t);
            continue;
        }
        int qh = 0, qt = 0;
        depth[t] = 0, queue[qt++] = t;
        while (qh < qt) {
            int u = queue[qh++];
            if (depth[u] >= k) continue;
            for (int q = d->in_off[u]; q < d->in_off[u + 1]; q++)
                if (depth[d->in[q]] < 0) depth[d->in[q]] = depth[u] + 1, queue[qt++] = d->in[q];
        }
        for (int a = 0; a < qt; a++) {
            if (a > 0) can[(size_t)t * n + queue[a]] = 1;
            depth[queue[a]] = -1;
        }
    }
    if (inc)
        for (int e = 0; e < inc->ev.n; e++)
            if (inc->ev.v[e] != inc->stage.v[e]) can[(size_t)inc->stage.v[e] * n + inc->ev.v[e]] = 1;
    free(depth), free(queue);
}

/* Lay out the horizon for a support: slots, copies, positions, last reads;
 * returns the number of x columns. */
static long layout(const Dag *d, const Staged *inc, int copies, int slots, Ivl *m) {
    int n = d->n;
    int *inc_slots = acc_xcalloc((size_t)n, sizeof(int)), *inc_copies = acc_xcalloc((size_t)n, sizeof(int));
    if (inc)
        for (int e = 0; e < inc->ev.n; e++) {
            inc_copies[inc->ev.v[e]]++;
            if (inc->ev.v[e] != inc->stage.v[e]) inc_slots[inc->stage.v[e]]++;
        }
    int ev = 0;
    m->cmax = 1;
    for (int t = 0; t < n; t++) {
        int sup = 0;
        for (int v = 0; v < t; v++) sup += m->can[(size_t)t * n + v];
        m->slots[t] = slots < sup ? slots : sup;
        if (m->slots[t] < inc_slots[t]) m->slots[t] = inc_slots[t];
        ev += m->slots[t];
        m->pos[t] = ev++;
        m->copies[t] = d->out_off[t + 1] > d->out_off[t] ? copies : 1; /* nothing reads it: never again */
        if (m->copies[t] < inc_copies[t]) m->copies[t] = inc_copies[t];
        if (m->copies[t] > m->cmax) m->cmax = m->copies[t];
    }
    m->n_ev = ev;
    free(m->stage_of);
    m->stage_of = acc_xcalloc((size_t)ev + 1, sizeof(int));
    for (int t = 0; t < n; t++)
        for (int k = slot_lo(m, t); k <= m->pos[t]; k++) m->stage_of[k] = t;
    /* the last event at which w can compute: its own or the last slot of the last stage it may be recomputed in */
    int *w_last = acc_xcalloc((size_t)n, sizeof(int));
    for (int w = 0; w < n; w++) {
        w_last[w] = m->pos[w];
        if (m->copies[w] > 1)
            for (int t = n - 1; t > w; t--)
                if (m->can[(size_t)t * n + w] && m->slots[t] > 0) {
                    w_last[w] = m->pos[t] - 1;
                    break;
                }
    }
    long nx = 0;
    for (int v = 0; v < n; v++) {
        m->last[v] = m->pos[v];
        for (int q = d->out_off[v]; q < d->out_off[v + 1]; q++)
            if (w_last[d->out[q]] > m->last[v]) m->last[v] = w_last[d->out[q]];
        if (m->copies[v] > 1)
            for (int t = v + 1; t < n; t++)
                if (m->can[(size_t)t * n + v]) nx += (long)m->slots[t] * (m->copies[v] - 1);
    }
    free(w_last), free(inc_slots), free(inc_copies);
    return nx;
}

static int x_col(const Ivl *m, int v, int c, int k) { /* 0: no column */
    int a = v * m->cmax + c;
    if (c == 0 || c >= m->copies[v] || !m->x_col0[a] || k < m->x_ev0[a] || k >= m->pos[m->stage_of[k]]) return 0;
    if (!m->can[(size_t)m->stage_of[k] * m->n + v]) return 0;
    return m->x_col0[a] + k - m->x_ev0[a];
}
static int y_col(const Ivl *m, int v, int c, int k) {
    int a = v * m->cmax + c;
    if (c >= m->copies[v] || !m->y_col0[a] || k < m->y_ev0[a] || k > m->last[v]) return 0;
    return m->y_col0[a] + k - m->y_ev0[a];
}
static int z_col(const Ivl *m, int v, int c, int k) {
    int a = v * m->cmax + c;
    if (c == 0 || c >= m->copies[v] || !m->z_col0[a] || k < m->x_ev0[a] || k > m->last[v]) return 0;
    return m->z_col0[a] + k - m->x_ev0[a];
}

/* Build the program on m's layout. x columns span every event from the
 * first slot v may be recomputed in to the last (those outside a slot of a
 * stage on the support are fixed at 0, and GLPK's presolve removes them):
 * the index is then plain arithmetic. */
static void build(const Dag *d, int64_t budget, Ivl *m, LpBuild *b) {
    int n = d->n, cm = m->cmax;
    lp_build_init(b, "intervals", false);
    glp_set_obj_coef(b->lp, 0, dag_baseline_compute(d));
    size_t nc = (size_t)n * cm;
    m->x_ev0 = acc_xcalloc(nc, sizeof(int)), m->x_col0 = acc_xcalloc(nc, sizeof(int));
    m->y_ev0 = acc_xcalloc(nc, sizeof(int)), m->y_col0 = acc_xcalloc(nc, sizeof(int));
    m->z_col0 = acc_xcalloc(nc, sizeof(int));
    for (int v = 0; v < n; v++) {
        int first = -1, lastx = -1;
        for (int t = v + 1; t < n; t++)
            if (m->can[(size_t)t * n + v] && m->slots[t] > 0) {
                if (first < 0) first = slot_lo(m, t);
                lastx = m->pos[t] - 1;
            }
        for (int c = 0; c < m->copies[v]; c++) {
            int a = v * cm + c;
            if (c > 0 && first < 0) continue; /* never recomputable: copy absent */
            if (c > 0) {
                m->x_ev0[a] = first;
                m->x_col0[a] = b->n_cols + 1;
                for (int k = first; k <= lastx; k++) {
                    bool on = k < m->pos[m->stage_of[k]] && m->can[(size_t)m->stage_of[k] * n + v];
                    lp_col(b, NULL, on, 0, on ? 1 : 0, on ? d->cost[v] : 0);
                }
                if (c + 1 < m->copies[v]) { /* z for the next copy's order */
                    m->z_col0[a] = b->n_cols + 1;
                    for (int k = first; k <= m->last[v]; k++) lp_col(b, NULL, false, 0, 1, 0);
                }
            }
            m->y_ev0[a] = c == 0 ? m->pos[v] : first;
            m->y_col0[a] = b->n_cols + 1;
            for (int k = m->y_ev0[a]; k <= m->last[v]; k++)
                lp_col(b, NULL, false, c == 0 && k == m->pos[v] ? 1 : 0, 1, 0);
        }
    }
    /* interval rows */
    for (int v = 0; v < n; v++)
        for (int c = 0; c < m->copies[v]; c++) {
            int a = v * cm + c;
            if (!m->y_col0[a]) continue;
            for (int k = m->y_ev0[a]; k <= m->last[v]; k++) {
                int y = y_col(m, v, c, k), yp = y_col(m, v, c, k - 1), x = x_col(m, v, c, k);
                if (c == 0 && k == m->pos[v]) continue; /* fixed at 1 */
                int r = lp_row(b, GLP_UP, 0, 0);        /* y - y_prev - x <= 0 */
                lp_coef(b, r, y, 1);
                if (yp) lp_coef(b, r, yp, -1);
                if (x) {
                    lp_coef(b, r, x, -1);
                    r = lp_row(b, GLP_LO, 0, 0); /* y - x >= 0 */
                    lp_coef(b, r, y, 1), lp_coef(b, r, x, -1);
                }
                int z = z_col(m, v, c, k);
                if (z) { /* z = z_prev + x */
                    int zp = z_col(m, v, c, k - 1);
                    r = lp_row(b, GLP_FX, 0, 0);
                    lp_coef(b, r, z, 1);
                    if (zp) lp_coef(b, r, zp, -1);
                    if (x) lp_coef(b, r, x, -1);
                }
            }
            if (c >= 1) { /* one computation per copy */
                int r1 = lp_row(b, GLP_UP, 0, 1);
                for (int k = m->x_ev0[a]; k < m->pos[n - 1]; k++)
                    if (x_col(m, v, c, k)) lp_coef(b, r1, x_col(m, v, c, k), 1);
            }
            if (c >= 2) { /* copy c after copy c-1: x[c,k] <= z[c-1,k-1]; used only if c-1 is */
                int ru = lp_row(b, GLP_UP, 0, 0);
                for (int k = m->x_ev0[a]; k < m->pos[n - 1]; k++) {
                    int x = x_col(m, v, c, k), xp = x_col(m, v, c - 1, k);
                    if (x) lp_coef(b, ru, x, 1);
                    if (xp) lp_coef(b, ru, xp, -1);
                    if (!x) continue;
                    int r = lp_row(b, GLP_UP, 0, 0), zp = z_col(m, v, c - 1, k - 1);
                    lp_coef(b, r, x, 1);
                    if (zp) lp_coef(b, r, zp, -1);
                }
            }
        }
    /* slot rows: one computation each, used in order */
    for (int t = 0; t < n; t++)
        for (int k = slot_lo(m, t); k < m->pos[t]; k++) {
            int r = lp_row(b, GLP_UP, -INFINITY, 1), r2 = k > slot_lo(m, t) ? lp_row(b, GLP_UP, 0, 0) : 0;
            for (int v = 0; v < t; v++)
                for (int c = 1; c < m->copies[v]; c++) {
                    int x = x_col(m, v, c, k);
                    if (!x) continue;
                    lp_coef(b, r, x, 1);
                    if (r2) lp_coef(b, r2, x, 1);
                    if (r2 && x_col(m, v, c, k - 1)) lp_coef(b, r2, x_col(m, v, c, k - 1), -1);
                }
        }
    /* containment: each input held where a computation reads it */
    for (int w = 0; w < n; w++)
        for (int k = m->pos[w]; k <= m->pos[n - 1]; k++) {
            bool first = k == m->pos[w], any = first;
            for (int c = 1; c < m->copies[w] && !any; c++) any = x_col(m, w, c, k) != 0;
            if (!any) continue;
            for (int q = d->in_off[w]; q < d->in_off[w + 1]; q++) {
                int u = d->in[q];
                int r = lp_row(b, GLP_LO, first ? 1 : 0, 0); /* sum_c y[u,c,k] - sum_c x[w,c,k] >= 0 (1: first) */
                for (int c = 0; c < m->copies[u]; c++)
                    if (y_col(m, u, c, k)) lp_coef(b, r, y_col(m, u, c, k), 1);
                if (!first)
                    for (int c = 1; c < m->copies[w]; c++)
                        if (x_col(m, w, c, k)) lp_coef(b, r, x_col(m, w, c, k), -1);
            }
        }
    /* memory at every event, scaled by the budget (dag_memory_ub) */
    int *mrow = acc_xcalloc((size_t)m->n_ev, sizeof(int));
    double ub = dag_memory_ub(d, budget, false);
    for (int k = 0; k < m->n_ev; k++) mrow[k] = lp_row(b, GLP_UP, 0, ub);
    for (int v = 0; v < n; v++)
        for (int c = 0; c < m->copies[v]; c++)
            for (int k = m->y_ev0[v * cm + c]; m->y_col0[v * cm + c] && k <= m->last[v]; k++)
                lp_coef(b, mrow[k], y_col(m, v, c, k), (double)d->mem[v] / (double)budget);
    free(mrow);
    lp_load(b);
}

/* The incumbent as a point of the program (NULL if it is not one): each
 * recomputation in the next free slot of its stage, copies numbered in time
 * order, the latest copy held from its start to its last read. */
static double *ivl_point(const Dag *d, const Ivl *m, const LpBuild *b, const Staged *s) {
    int n = d->n, n_ev = s->ev.n;
    double *p = acc_xcalloc((size_t)b->n_cols + 1, sizeof(double));
    int *last = staged_last_reads(d, s), *at = acc_xcalloc((size_t)n_ev + 1, sizeof(int));
    int *copy = acc_xcalloc((size_t)n_ev + 1, sizeof(int)), *count = acc_xcalloc((size_t)n, sizeof(int));
    bool ok = true;
    for (int e = 0, used = 0, prev = -1; e < n_ev && ok; e++) {
        int t = s->stage.v[e], v = s->ev.v[e];
        if (t != prev) used = 0, prev = t;
        copy[e] = count[v]++;
        if (v == t) {
            at[e] = m->pos[t];
            ok = copy[e] == 0;
        } else {
            at[e] = slot_lo(m, t) + used++;
            int x = at[e] < m->pos[t] ? x_col(m, v, copy[e], at[e]) : 0;
            if (!x || copy[e] == 0) ok = false;
            else p[x] = 1;
        }
    }
    for (int e = 0; e < n_ev && ok; e++) {
        int v = s->ev.v[e], c = copy[e];
        for (int k = at[e]; k <= at[last[e]]; k++) {
            int y = y_col(m, v, c, k);
            if (!y) ok = false;
            else p[y] = 1;
        }
        for (int k = at[e]; c > 0 && k <= m->last[v]; k++)
            if (z_col(m, v, c, k)) p[z_col(m, v, c, k)] = 1;
    }
    free(last), free(at), free(copy), free(count);
    if (!ok) free(p);
    return ok ? p : NULL;
}

bool dag_solve_intervals(const Dag *d, int64_t budget, const Staged *inc, int copies, int slots, double deadline,
                         bool verbose, DagPlan *p, char *err, size_t err_len) {
    int n = d->n;
    double t0 = acc_now_s();
    p->bound_scope = "intervals";
    if (n <= 0 || n > IVL_MAX_NODES) { /* the support is an n x n table */
        snprintf(p->status, sizeof p->status, "too_large");
        snprintf(p->note, sizeof p->note, "the interval program takes graphs of 1 to %d nodes", IVL_MAX_NODES);
        return true;
    }
    if (copies < 1) copies = 2;
    if (slots < 0) slots = copies - 1 > 1 ? copies - 1 : 1;
    Ivl m = {0};
    m.n = n;
    m.copies = acc_xcalloc((size_t)n, sizeof(int)), m.slots = acc_xcalloc((size_t)n, sizeof(int));
    m.pos = acc_xcalloc((size_t)n, sizeof(int)), m.last = acc_xcalloc((size_t)n, sizeof(int));
    m.can = acc_xcalloc((size_t)n * (size_t)n, 1);
    static const int hops[] = {1 << 30, 16, 8, 4, 2, 1, 0};
    long nx = 0;
    for (size_t h = 0; h < sizeof hops / sizeof *hops; h++) {
        m.hops = hops[h];
        make_can(d, hops[h], inc, m.can);
        nx = layout(d, inc, copies, slots, &m);
        if (nx <= IVL_BINARY_CAP) break;
    }
    LpBuild b = {0};
    build(d, budget, &m, &b);
    p->n_binaries = b.n_int, p->n_rows = b.n_rows;
    bool full = m.hops >= n;
    if (!full) p->bound_scope = "intervals (support)";
    if (verbose)
        fprintf(stderr,
                "acc plan: intervals: %d copies, %d slots a stage, support %s%d hops, %d events; %d columns (%d "
                "binary), %d rows, %d nonzeros, built in %.2f s\n",
                copies, slots, full ? "every earlier node, " : "", full ? n : m.hops, m.n_ev, b.n_cols, b.n_int,
                b.n_rows, glp_get_num_nz(b.lp), acc_now_s() - t0);
    double *heur = inc ? ivl_point(d, &m, &b, inc) : NULL;
    if (heur) {
        int bad = 0;
        if (!lp_check_point(&b, heur, 1e-6, &bad)) {
            if (verbose) fprintf(stderr, "acc plan: intervals: the incumbent violates row %d; not installed\n", bad);
            free(heur);
            heur = NULL;
        }
    } else if (inc && verbose) {
        fprintf(stderr, "acc plan: intervals: the incumbent is not a point of the program\n");
    }
    /* what comes back: x */
    int *report = acc_xcalloc((size_t)nx + 1, sizeof(int)), *rv = acc_xcalloc((size_t)nx + 1, sizeof(int));
    int *rc = acc_xcalloc((size_t)nx + 1, sizeof(int)), *rk = acc_xcalloc((size_t)nx + 1, sizeof(int));
    int nr = 0;
    for (int v = 0; v < n; v++)
        for (int c = 1; c < m.copies[v]; c++)
            for (int k = 0; k < m.n_ev && nr < nx; k++)
                if (x_col(&m, v, c, k)) report[nr] = x_col(&m, v, c, k), rv[nr] = v, rc[nr] = c, rk[nr++] = k;
    LpJob j = {b.lp, report, nr, heur, deadline, false, verbose, dag_grace_for(deadline), false};
    LpResult r;
    bool ok = lp_run_watched(&j, &r, err, err_len);
    if (ok) {
        const char *st = r.optimal && r.have_sol           ? "optimal"
                         : r.infeasible || r.lp_infeasible ? "infeasible"
                         : r.have_sol                      ? (r.timed_out ? "time_limit" : "feasible")
                                                           : "no_solution";
        snprintf(p->status, sizeof p->status, "%s", st);
        p->bound = r.optimal && r.have_sol ? r.obj : isfinite(r.bound) ? r.bound : r.lp_solved ? r.lp_obj : NAN;
        Staged s = {0};
        if (!r.have_sol && heur) { /* GLPK found none before the deadline: the seed is the program's best point */
            for (int e = 0; e < inc->ev.n; e++) staged_push(&s, inc->stage.v[e], inc->ev.v[e]);
            DagSim sim;
            dag_simulate(d, s.ev.v, s.ev.n, &sim, NULL);
            p->objective = sim.compute;
            snprintf(p->status, sizeof p->status, "time_limit");
        } else if (r.have_sol) {
            p->objective = r.obj;
            int *node_at = acc_xcalloc((size_t)m.n_ev, sizeof(int));
            for (int k = 0; k < m.n_ev; k++) node_at[k] = -1;
            for (int t = 0; t < n; t++) node_at[m.pos[t]] = t;
            for (int q = 0; q < nr; q++)
                if (r.vals[q] > 0.5) node_at[rk[q]] = rv[q];
            for (int k = 0; k < m.n_ev; k++)
                if (node_at[k] >= 0) staged_push(&s, m.stage_of[k], node_at[k]);
            free(node_at);
        }
        if (s.ev.n) {
            free(p->ev);
            p->ev = acc_xcalloc((size_t)s.ev.n, sizeof(int));
            memcpy(p->ev, s.ev.v, (size_t)s.ev.n * sizeof(int));
            p->n_ev = s.ev.n;
        }
        staged_free(&s);
        if (verbose)
            fprintf(stderr, "acc plan: intervals: %s, LP %.8g, objective %.8g, bound %.8g, incumbent %s, %.2f s\n", st,
                    r.lp_obj, r.obj, r.bound,
                    !heur             ? "none"
                    : r.heur_accepted ? "accepted"
                                      : "not taken (rejected, or the root LP not solved)",
                    acc_now_s() - t0);
    }
    (void)rc;
    free(r.vals);
    free(report), free(rv), free(rc), free(rk), free(heur);
    lp_build_free(&b);
    ivl_free(&m);
    return ok;
}
