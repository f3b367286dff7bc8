/* dag_inputs.c - a floor under the compute of every schedule of a graph:
 * the forced windows' covering program (dag_window_lp, dag_milp.c) made
 * stronger by what a recomputation reads.
 *
 * requires: a Dag, a budget, a deadline. provides: a lower bound on the
 * compute of every schedule (first executions in the topological order,
 * recomputations anywhere, the papers' model), or NAN when the program is
 * too large or not solved by the deadline. It is not a planner: nothing here
 * builds a schedule.
 *
 * The windows program says: at the first execution of b, the outputs that
 * span b (x with a first execution that reads x, or x itself, on each side
 * of b, b not reading x) cannot all be held, so some are dropped, and each
 * dropped x runs again before its next reader. It does not ask what that
 * recomputation reads. Here it does. Fix a schedule and a point b in deficit
 * (b's output and inputs plus everything spanning b is over the budget).
 * Call b and b's inputs free at b (held at b whatever the schedule), the
 * nodes spanning b spanning, and every other node < b other (its readers
 * are all < b: no first execution still to come reads it). Nodes > b have
 * not run yet; the recomputations below are of nodes < b, whose inputs are
 * < b too. The program's variables, at b, given the schedule:
 *   a[x,b]  spanning x is not held at b (it then runs in (b, next(x,b)),
 *           next(x,b) the first reader of x after b: that reader's first
 *           execution needs it);
 *   e[q,b]  other q is held at b (extra memory at b);
 *   w[q,b]  other q runs in the open interval (b, h(q,b)) of the schedule,
 *           between the first executions of b and h(q,b), where h(q,b) is the
 *           largest horizon of the nodes at b that read q: next(x,b) for a
 *           spanning reader x, h(z,b) for an other reader z (the horizons are
 *           settled from b - 1 down, readers before inputs);
 *   y[x,g]  x is not held at some point in deficit inside its gap g (as in
 *           the windows program: then x runs again inside g).
 * Rows, each true of every schedule under that reading:
 *   - memory at b: b, b's inputs, the spanning x held and the other q held
 *     are distinct outputs held at b, so
 *       sum over spanning x of mem[x] a[x,b] - sum over other q of mem[q] e[q,b]
 *         >= own[b] + span[b] - budget;
 *     and, as a and e are 0 or 1, the windows program's covering row
 *       sum over spanning x of min(mem[x], deficit) a[x,b] >= deficit;
 *   - y[x,g] >= a[x,b] for b in g;
 *   - a recomputation's inputs: if N = a[z,b] or w[z,b] is 1, z runs at some
 *     t in (b, horizon of z) and every input q of z is present at t: the copy
 *     read was held at b, or it was computed in (b, t). For q free at b there
 *     is nothing to say; for q spanning b there is nothing new either (held:
 *     fine; not held: a[q,b] = 1, which already asks for q's inputs in turn,
 *     and y charges q's run); for other q, N <= e[q,b] + w[q,b], as t lies
 *     before z's horizon, which is at most q's.
 * A spanning x whose inputs are all free or spanning at b asks nothing of
 * its inputs: its a[x,b] is replaced by y[x,g] >= a[x,b] (each row it is in
 * only gets easier to satisfy). An other q with no other input needs no
 * w[q,b] of its own: the charge below stands for it. Rows may be left out
 * (inputs followed fewer hops deep, or at fewer points, to keep the program
 * small): each is a true statement, so fewer of them still bound.
 *
 * The cost, counted without counting an execution twice. baseline: each
 * node's first execution. y[x,g]: a run of x inside gap g of x, after x's
 * first execution and before its last reader's. w[q,b] = 1: a run of q after
 * b, and b comes after q's last reader (q is other at b), so it is neither
 * q's first execution nor inside one of q's gaps; but one run of q can serve
 * many points (a run after both b1 and b2 can lie in both intervals). q's
 * intervals (b, h(q,b)) are swept by ascending b and cut before a b that
 * every earlier interval ends at or before (the largest horizon so far is
 * <= b): a run in an earlier group's interval lies before the first
 * execution of that b, a run in a later group's after it, so the runs that
 * different groups ask for are distinct. One binary W[q,k] >= w[q,b] per group k
 * with cost[q]:
 *   compute >= baseline + sum cost[x] y[x,g] + sum cost[q] W[q,k].
 * The integer optimum of that, proven by branch and bound, bounds every
 * schedule, and so does its relaxation's optimum, which is below it. The
 * program contains the windows program's rows (with a <= y), so its optimum
 * is at least the windows program's, integer or relaxed alike.
 */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"
#include "lp.h"

/* The spanning pairs at points in deficit past which nothing is built, and
 * the coefficients past which a program is cut down (measured: GLPK's
 * relaxation takes 0.2-0.6 s on 24,176, MOCCASIN's n100 at 0.5437 with
 * every hop, on a loaded two-core machine; see choose_program), and past
 * which branch and bound is not tried. */
#define INPUTS_MAX_PAIRS 1000000L
#define INPUTS_SOLVE_NONZEROS 25000
#define INPUTS_BRANCH_NONZEROS 12000

typedef struct {
    int x, next, y; /* x spans the point: its next reader, its gap's column */
} Span;

/* What every attempt shares: the points, their deficits, who spans them. */
typedef struct {
    const Dag *d;
    int64_t budget;
    int64_t *own, *span; /* [n] b's output and inputs; what spans b */
    int *sp_off;         /* [n + 1] the spanning pairs of point b: sp[sp_off[b] .. sp_off[b + 1]) */
    long pairs;
} Points;

/* Whether d->out[k] repeats the reader before it (the lists are ascending). */
static bool repeat_out(const Dag *d, int x, int k) { return k > d->out_off[x] && d->out[k] == d->out[k - 1]; }

/* One program into lb: at every point in deficit the covering and memory
 * rows; at the points with use[b] (use NULL: all) the inputs' rows too,
 * followed at most max_hops inputs deep from a spanning node (past that an
 * other node's run asks nothing of its inputs: fewer rows, a weaker but
 * valid program). nz_at (or NULL): [n] the coefficients each point added.
 * Returns the points in deficit, or -1 when the deadline passed first. */
static int build_program(const Points *pt, int max_hops, const uint8_t *use, double deadline, LpBuild *lb, int *n_other,
                         int *nz_at) {
    const Dag *d = pt->d;
    int n = d->n, n_points = 0;
    Span *sp = acc_xcalloc((size_t)pt->pairs + 1, sizeof(Span));
    int *fill = acc_xcalloc((size_t)n + 1, sizeof(int));
    memcpy(fill, pt->sp_off, (size_t)n * sizeof(int));
    for (int x = 0; x < n; x++)
        for (int k = d->out_off[x], prev = x; k < d->out_off[x + 1]; prev = d->out[k++]) {
            int c = 0;
            for (int b = prev + 1; b < d->out[k]; b++) {
                if (pt->own[b] + pt->span[b] <= pt->budget) continue;
                if (!c) c = lp_col(lb, NULL, true, 0, 1, d->cost[x]);
                sp[fill[b]++] = (Span){x, d->out[k], c};
            }
        }
    /* at point b: stamp[v] == b: v free or spanning; live[v] == b: v's run after b reads inputs (col[v] its
     * a or w, hzn[v] its horizon, hops[v] how deep); grp_col[q]/grp_end[q]: q's current group's W and the
     * largest horizon of q's intervals so far */
    int *stamp = acc_xcalloc((size_t)n, sizeof(int)), *live = acc_xcalloc((size_t)n, sizeof(int));
    int *col = acc_xcalloc((size_t)n, sizeof(int)), *hzn = acc_xcalloc((size_t)n, sizeof(int));
    int *grp_col = acc_xcalloc((size_t)n, sizeof(int)), *grp_end = acc_xcalloc((size_t)n, sizeof(int));
    int *hops = acc_xcalloc((size_t)n, sizeof(int));
    for (int v = 0; v < n; v++) stamp[v] = live[v] = -1;
    for (int b = 0; b < n; b++) {
        int64_t deficit = pt->own[b] + pt->span[b] - pt->budget;
        if (deficit <= 0) continue;
        if (acc_now_s() > deadline) {
            n_points = -1;
            break;
        }
        n_points++;
        int nz0 = lb->ia.n;
        double dd = (double)deficit;
        bool inputs = !use || use[b];
        stamp[b] = b;
        for (int k = d->in_off[b]; k < d->in_off[b + 1]; k++) stamp[d->in[k]] = b;
        for (int s = pt->sp_off[b]; s < pt->sp_off[b + 1]; s++) stamp[sp[s].x] = b;
        /* both rows divided by the deficit (GLPK's tolerances) */
        int mem_row = inputs ? lp_row(lb, GLP_LO, 1, 0) : 0, cover_row = lp_row(lb, GLP_LO, 1, 0);
        for (int s = pt->sp_off[b]; s < pt->sp_off[b + 1]; s++) {
            int x = sp[s].x, c = sp[s].y;
            bool reads_other = false;
            for (int k = d->in_off[x]; k < d->in_off[x + 1] && inputs && !reads_other; k++)
                reads_other = stamp[d->in[k]] != b;
            if (reads_other) {
                c = lp_col(lb, NULL, true, 0, 1, 0);
                int r = lp_row(lb, GLP_LO, 0, 0); /* y - a >= 0 */
                lp_coef(lb, r, sp[s].y, 1), lp_coef(lb, r, c, -1);
                live[x] = b, col[x] = c, hzn[x] = sp[s].next, hops[x] = 0;
            }
            if (mem_row) lp_coef(lb, mem_row, c, (double)d->mem[x] / dd);
            lp_coef(lb, cover_row, c, d->mem[x] < deficit ? (double)d->mem[x] / dd : 1);
        }
        /* the other nodes, readers before inputs: each one read by a live node gets e, and w or its group's W */
        for (int q = b - 1; q >= 0 && inputs; q--) {
            if (stamp[q] == b) continue;
            int h = -1, hop = INT32_MAX;
            for (int k = d->out_off[q]; k < d->out_off[q + 1]; k++)
                if (live[d->out[k]] == b) {
                    if (hzn[d->out[k]] > h) h = hzn[d->out[k]];
                    if (hops[d->out[k]] + 1 < hop) hop = hops[d->out[k]] + 1;
                }
            if (h < 0) continue;
            (*n_other)++;
            int e = lp_col(lb, NULL, true, 0, 1, 0);
            lp_coef(lb, mem_row, e, -(double)d->mem[q] / dd);
            if (!grp_col[q] || b >= grp_end[q]) grp_col[q] = lp_col(lb, NULL, true, 0, 1, d->cost[q]);
            if (h > grp_end[q]) grp_end[q] = h;
            int v = grp_col[q];
            bool reads_other = false;
            for (int k = d->in_off[q]; k < d->in_off[q + 1] && !reads_other && hop < max_hops; k++)
                reads_other = stamp[d->in[k]] != b;
            if (reads_other) {
                v = lp_col(lb, NULL, true, 0, 1, 0);
                int r = lp_row(lb, GLP_LO, 0, 0); /* W - w >= 0 */
                lp_coef(lb, r, grp_col[q], 1), lp_coef(lb, r, v, -1);
                live[q] = b, col[q] = v, hzn[q] = h, hops[q] = hop;
            }
            for (int k = d->out_off[q]; k < d->out_off[q + 1]; k++) {
                int u = d->out[k];
                if (live[u] != b || repeat_out(d, q, k)) continue;
                int r = lp_row(lb, GLP_UP, 0, 0); /* N[u] - e - w <= 0 */
                lp_coef(lb, r, col[u], 1), lp_coef(lb, r, e, -1), lp_coef(lb, r, v, -1);
            }
        }
        if (nz_at) nz_at[b] = lb->ia.n - nz0;
    }
    free(stamp), free(live), free(col), free(hzn), free(grp_col), free(grp_end), free(hops), free(sp), free(fill);
    return n_points;
}

typedef struct {
    int64_t deficit;
    int b;
} ByDeficit;

/* Decreasing deficit, then increasing point. */
static int by_deficit(const void *a, const void *b) {
    const ByDeficit *x = a, *y = b;
    return x->deficit != y->deficit ? (x->deficit < y->deficit) - (x->deficit > y->deficit) : x->b - y->b;
}

/* A program GLPK can solve in the time given: every hop at every point when
 * it has at most cap coefficients, else one hop, else one hop at the points
 * of largest deficit whose coefficients (each point's measured by building
 * the one-hop program once, its covering row included) sum to at most cap,
 * the other points keeping their covering rows only (on MOCCASIN's n1000
 * at 0.6 those rows alone are 139,209 coefficients, past the cap: the
 * windows program's own size). Returns the points in deficit (lb holds the
 * program), or -1 (lb empty). */
static int choose_program(const Points *pt, long cap, double deadline, LpBuild *lb, int *n_other) {
    int n = pt->d->n;
    int *nz_at = acc_xcalloc((size_t)n, sizeof(int)), n_points = -1;
    uint8_t *use = NULL;
    for (int attempt = 0; attempt < 3; attempt++) {
        *n_other = 0;
        lp_build_init(lb, "inputs", false);
        n_points = build_program(pt, attempt ? 1 : INT32_MAX, use, deadline, lb, n_other, attempt == 1 ? nz_at : NULL);
        if (n_points < 0 || lb->ia.n <= cap || attempt == 2) break;
        lp_build_free(lb);
        if (attempt == 1) { /* the points of largest deficit first, while the program stays within the cap */
            ByDeficit *order = acc_xcalloc((size_t)n, sizeof(ByDeficit));
            int m = 0;
            for (int b = 0; b < n; b++)
                if (pt->own[b] + pt->span[b] > pt->budget) order[m++] = (ByDeficit){pt->own[b] + pt->span[b], b};
            qsort(order, (size_t)m, sizeof(ByDeficit), by_deficit);
            use = acc_xcalloc((size_t)n, sizeof(uint8_t));
            long taken = 0;
            for (int i = 0; i < m; i++)
                if (taken + nz_at[order[i].b] <= cap) use[order[i].b] = 1, taken += nz_at[order[i].b];
            free(order);
        }
    }
    if (n_points < 0) lp_build_free(lb);
    free(nz_at), free(use);
    return n_points;
}

bool dag_inputs_lp(const Dag *d, int64_t budget, long max_nonzeros, double deadline, bool verbose, double *bound,
                   char *err, size_t err_len) {
    int n = d->n;
    *bound = NAN;
    Points pt = {d,
                 budget,
                 acc_xcalloc((size_t)n + 1, sizeof(int64_t)),
                 acc_xcalloc((size_t)n + 1, sizeof(int64_t)),
                 acc_xcalloc((size_t)n + 2, sizeof(int)),
                 0};
    dag_point_memory(d, pt.own, pt.span);
    /* the spanning pairs at points in deficit, counted by point */
    for (int x = 0; x < n; x++)
        for (int k = d->out_off[x], prev = x; k < d->out_off[x + 1]; prev = d->out[k++])
            for (int b = prev + 1; b < d->out[k]; b++)
                if (pt.own[b] + pt.span[b] > budget) pt.sp_off[b + 1]++, pt.pairs++;
    for (int b = 0; b < n; b++) pt.sp_off[b + 1] += pt.sp_off[b];
    bool ok = true;
    int n_other = 0;
    LpBuild lb = {0};
    /* too large, or out of time while building: no bound, and not a failure of the tool */
    int n_points =
        pt.pairs > INPUTS_MAX_PAIRS
            ? -1
            : choose_program(&pt, max_nonzeros > 0 ? max_nonzeros : INPUTS_SOLVE_NONZEROS, deadline, &lb, &n_other);
    if (n_points > 0) {
        lp_load(&lb);
        /* branch and bound only where it can end: on larger programs it runs to the deadline without a proof
         * (MOCCASIN's n100 at 0.5437, 24,176 coefficients: none in 20 s), and the relaxation, returned at once,
         * leaves the time to the windows program and the planner */
        bool lp_only = lb.ia.n > INPUTS_BRANCH_NONZEROS;
        LpJob j = {lb.lp, NULL, 0, NULL, deadline, lp_only, verbose, dag_grace_for(deadline), false};
        LpResult r;
        ok = lp_run_watched(&j, &r, err, err_len);
        /* the integer optimum, else the relaxation's, as dag_window_lp */
        double lo = ok && r.optimal && r.have_sol ? r.obj : ok && r.lp_solved ? r.lp_obj : NAN;
        if (isfinite(lo)) *bound = dag_baseline_compute(d) + lo;
        if (verbose && ok)
            fprintf(stderr, "acc plan: inputs program: %s\n",
                    r.optimal && r.have_sol ? "integer optimum"
                    : r.lp_solved           ? "relaxation"
                                            : "not solved");
        if (ok) free(r.vals);
    } else if (n_points == 0) {
        *bound = dag_baseline_compute(d); /* nothing is in deficit: the baseline fits */
    }
    if (verbose)
        fprintf(stderr,
                "acc plan: inputs program: %d points, %d other nodes read, %d rows, %d columns, %d "
                "coefficients, bound %.8g\n",
                n_points, n_other, lb.n_rows, lb.n_cols, lb.ia.n, *bound);
    lp_build_free(&lb);
    free(pt.own), free(pt.span), free(pt.sp_off);
    return ok;
}
