/* dag_milp.c - the integer programs for published graphs, built with and
 * solved by GLPK through lp.c (in a child process under a watchdog).
 *
 * requires: a Dag, a budget, a deadline. provides: a staged schedule (the
 * caller scores it with dag_simulate), the solver's status, objective and
 * lower bound.
 *
 * checkmate: Checkmate's formulation (Jain et al., MLSys 2020, section 4) as
 *   published: binary R[t,i] (node i computed in stage t, i <= t, R[t,t] = 1)
 *   and S[t,i] (i kept from stage t-1 into t, i < t), binary FREE[t,i,k] (i
 *   freed after event k of stage t, i an input of k or k itself) linearised
 *   with the hazard count and its maximum, memory U[t,k] after each event
 *   <= budget. `integral` false: the LP relaxation, then the paper's
 *   deterministic rounding: S >= threshold for thresholds 0.1 .. 0.9, the
 *   cheapest R that makes the rounded S executable, the cheapest plan that
 *   fits; if none fits, the LP again at 0.9, 0.8, 0.7 of the budget (repair).
 *
 * acc: the same stage model, exploiting what is known about its solutions:
 *   - only R is binary. Given integral R, the least S (keep exactly what a
 *     later event reads) and the exact FREE are feasible and no other S or
 *     FREE uses less memory, so S and FREE may be continuous: O(support)
 *     binaries instead of O(n^2 + n|E|);
 *   - FREE is bounded by each hazard separately (FREE <= R[t,k],
 *     FREE <= 1 - S[t+1,i], FREE <= 1 - R[t,j] for each later reader j),
 *     which is tighter than the aggregated hazard count; a free after the
 *     last event of a stage is never needed; S[t,i] + R[t,i] <= 1;
 *   - R[t,i] exists only on a support: the incumbent's recomputations and
 *     the ancestors of t within K hops (K = all when the program is small),
 *     S only over the stages where a node can still be read;
 *   - the heuristic plan is installed as the incumbent (GLP_IHEUR), so the
 *     search only has to improve on it and the reported gap is meaningful.
 *   The bound it reports holds for plans of its support ("acc model"); with
 *   the full support it holds for every staged plan ("checkmate").
 *
 * GLPK runs in a forked child (lp_run_watched): tm_lim is overshot and some
 * of GLPK's work ignores it, so the parent waits on a pipe until the deadline
 * plus a grace period, then kills the child and keeps the best solution it
 * had reported. The child reports every improved incumbent and bound as it
 * goes.
 */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"
#include "lp.h"

/* Programs with more stage pairs than this are not built (GLPK's memory and
 * time grow beyond use): Checkmate's above it reports no solution, acc's
 * bound is skipped and its search keeps to smaller supports. */
#define MAX_STAGE_PAIRS 400000L

typedef VEC(int) IntVec;

/* ---- memory rows ----------------------------------------------------------------- */

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* Memory is scaled by the budget. Every sum of sizes is a multiple of their
 * gcd g, so the largest that fits is Bf = floor(B / g) g and the next is
 * Bf + g: the row bound sits half-way, far from both against GLPK's
 * tolerances. When g is tiny against B (sizes in bytes), the bound is put a
 * hair under Bf instead: GLPK's tolerance must not admit a plan over B. */
double dag_memory_ub(const Dag *d, int64_t budget, bool relaxation) {
    int64_t g = 0;
    for (int i = 0; i < d->n; i++) g = gcd64(g, d->mem[i]);
    if (g <= 0) g = 1;
    double bf = (double)(budget / g * g), half = 0.5 * (double)g / (double)budget;
    if (relaxation) return (bf + 0.5 * (double)g) / (double)budget; /* a bound must not cut off any plan */
    return half >= 1e-5 ? (bf + 0.5 * (double)g) / (double)budget : bf / (double)budget * (1 - 2e-6);
}

/* How long GLPK's child may overrun the deadline before it is killed: a
 * twentieth of the time it was given, 0.2 .. 1.5 s, so that a command keeps
 * within a tenth of its --time-limit. */
double dag_grace_for(double deadline) {
    double g = 0.05 * (deadline - acc_now_s());
    return g < 0.2 ? 0.2 : g > 1.5 ? 1.5 : g;
}

static void set_status(DagPlan *p, const LpResult *r) {
    const char *s = r->optimal && r->have_sol           ? "optimal"
                    : r->infeasible || r->lp_infeasible ? "infeasible"
                    : r->have_sol                       ? (r->timed_out ? "time_limit" : "feasible")
                                                        : "no_solution";
    snprintf(p->status, sizeof p->status, "%s", s);
}

static void plan_from_staged(DagPlan *p, const Staged *s) {
    free(p->ev);
    p->ev = acc_xcalloc((size_t)s->ev.n, sizeof(int));
    memcpy(p->ev, s->ev.v, (size_t)s->ev.n * sizeof(int));
    p->n_ev = s->ev.n;
}

/* ---- Checkmate's formulation ------------------------------------------------------- */

typedef struct {
    int n;
    int r0, s0; /* R[t,i] = r0 + t(t+1)/2 + i (i <= t); S[t,i] = s0 + t(t-1)/2 + i (i < t) */
} CmIndex;

static int cm_r(const CmIndex *x, int t, int i) { return x->r0 + t * (t + 1) / 2 + i; }
static int cm_s(const CmIndex *x, int t, int i) { return x->s0 + t * (t - 1) / 2 + i; }

static void build_checkmate(const Dag *d, int64_t budget, bool integral, bool names, LpBuild *b, CmIndex *x) {
    int n = d->n;
    double ub = dag_memory_ub(d, budget, !integral), sc = (double)budget;
    char nm[64];
    lp_build_init(b, "checkmate", names);
    x->n = n;
    x->r0 = b->n_cols + 1;
    for (int t = 0; t < n; t++)
        for (int i = 0; i <= t; i++) {
            snprintf(nm, sizeof nm, "R_%d_%d", t, i);
            int j = integral ? lp_col(b, nm, true, i == t ? 1 : 0, 1, d->cost[i])
                             : lp_col(b, nm, false, i == t ? 1 : 0, 1, d->cost[i]);
            ACC_ASSERT(j == cm_r(x, t, i));
        }
    x->s0 = b->n_cols + 1;
    for (int t = 1; t < n; t++)
        for (int i = 0; i < t; i++) {
            snprintf(nm, sizeof nm, "S_%d_%d", t, i);
            lp_col(b, nm, integral, 0, 1, 0);
        }
    /* S[t+1,i] <= S[t,i] + R[t,i] */
    for (int t = 0; t + 1 < n; t++)
        for (int i = 0; i <= t; i++) {
            int row = lp_row(b, GLP_UP, 0, 0);
            lp_coef(b, row, cm_s(x, t + 1, i), 1);
            if (i < t) lp_coef(b, row, cm_s(x, t, i), -1);
            lp_coef(b, row, cm_r(x, t, i), -1);
        }
    /* R[t,v] <= R[t,u] + S[t,u] for every edge u -> v, v <= t */
    for (int t = 0; t < n; t++)
        for (int v = 0; v <= t; v++)
            for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) {
                int u = d->in[q], row = lp_row(b, GLP_UP, 0, 0);
                lp_coef(b, row, cm_r(x, t, v), 1);
                lp_coef(b, row, cm_r(x, t, u), -1);
                lp_coef(b, row, cm_s(x, t, u), -1);
            }
    /* memory: U[t,0] = R[t,0] m_0 + sum S[t,i] m_i; U[t,k+1] = U[t,k] + R[t,k+1] m_{k+1} - freed(k) */
    for (int t = 0; t < n; t++) {
        int prev_u = 0;
        for (int k = 0; k <= t; k++) {
            snprintf(nm, sizeof nm, "U_%d_%d", t, k);
            int u = lp_col(b, nm, false, 0, ub, 0);
            int row = lp_row(b, GLP_FX, 0, 0);
            lp_coef(b, row, u, 1);
            lp_coef(b, row, cm_r(x, t, k), -(double)d->mem[k] / sc);
            if (k == 0) {
                for (int i = 0; i < t; i++) lp_coef(b, row, cm_s(x, t, i), -(double)d->mem[i] / sc);
            } else {
                lp_coef(b, row, prev_u, -1);
                /* FREE[t,i,k-1] for i in DEPS[k-1] and k-1 itself */
                int kk = k - 1;
                for (int q = d->in_off[kk]; q <= d->in_off[kk + 1]; q++) {
                    int i = q < d->in_off[kk + 1] ? d->in[q] : kk;
                    snprintf(nm, sizeof nm, "FREE_%d_%d_%d", t, i, kk);
                    int f = lp_col(b, nm, integral, 0, 1, 0);
                    lp_coef(b, row, f, (double)d->mem[i] / sc);
                    /* hazards = 1 - R[t,kk] + S[t+1,i] + sum_{j user of i, kk < j <= t} R[t,j] */
                    int users = 0;
                    for (int w = d->out_off[i]; w < d->out_off[i + 1]; w++) users += d->out[w] > kk && d->out[w] <= t;
                    double kappa = 1 + (t + 1 < n) + users;
                    int lo = lp_row(b, GLP_LO, 0, 0);         /* 1 - FREE <= hazards */
                    int hi = lp_row(b, GLP_UP, 0, kappa - 1); /* kappa (1 - FREE) >= hazards */
                    lp_coef(b, lo, f, 1), lp_coef(b, hi, f, kappa);
                    lp_coef(b, lo, cm_r(x, t, kk), -1), lp_coef(b, hi, cm_r(x, t, kk), -1);
                    if (t + 1 < n) lp_coef(b, lo, cm_s(x, t + 1, i), 1), lp_coef(b, hi, cm_s(x, t + 1, i), 1);
                    for (int w = d->out_off[i]; w < d->out_off[i + 1]; w++) {
                        int jn = d->out[w];
                        if (jn > kk && jn <= t) lp_coef(b, lo, cm_r(x, t, jn), 1), lp_coef(b, hi, cm_r(x, t, jn), 1);
                    }
                }
            }
            prev_u = u;
        }
    }
    lp_load(b);
}

/* Checkmate's R from a rounded S: R[t,t] = 1; compute i in stage t if S
 * starts keeping it at t+1; then, from the last node of the stage down,
 * compute every input that is neither computed nor kept. */
static void r_from_s(const Dag *d, const uint8_t *S, Staged *out) {
    int n = d->n;
    uint8_t *R = acc_xcalloc((size_t)n, 1);
    staged_clear(out);
    for (int t = 0; t < n; t++) {
        memset(R, 0, (size_t)n);
        R[t] = 1;
        for (int i = 0; i <= t && t + 1 < n; i++)
            if (S[(size_t)(t + 1) * n + i] && !(i < t && S[(size_t)t * n + i])) R[i] = 1;
        for (int v = t; v >= 0; v--)
            if (R[v])
                for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) {
                    int u = d->in[q];
                    if (!R[u] && !S[(size_t)t * n + u]) R[u] = 1;
                }
        for (int i = 0; i <= t; i++)
            if (R[i]) staged_push(out, t, i);
    }
    free(R);
}

/* Every column of Checkmate's program for the staged schedule s (its R,
 * the least S, FREE as the hazards decide, U by the recurrence), in
 * build_checkmate's column order; NULL if s is not in stage form. */
static double *cm_point(const Dag *d, const CmIndex *x, const LpBuild *b, const Staged *s, int64_t budget) {
    int n = d->n, n_ev = s->ev.n;
    double *v = acc_xcalloc((size_t)b->n_cols + 1, sizeof(double));
    int *last = staged_last_reads(d, s);
    bool ok = true;
    for (int e = 0; e < n_ev; e++) {
        int t = s->stage.v[e], i = s->ev.v[e];
        if (i > t || v[cm_r(x, t, i)] > 0) ok = false;
        else v[cm_r(x, t, i)] = 1;
        for (int u = t + 1; u <= s->stage.v[last[e]]; u++) v[cm_s(x, u, i)] = 1;
    }
    int col = x->s0 + n * (n - 1) / 2;
    for (int t = 0; t < n && ok; t++) {
        double u = 0;
        for (int k = 0; k <= t; k++) {
            int ucol = col++;
            if (k == 0) {
                for (int i = 0; i < t; i++) u += v[cm_s(x, t, i)] * (double)d->mem[i];
            } else {
                int kk = k - 1;
                for (int q = d->in_off[kk]; q <= d->in_off[kk + 1]; q++) {
                    int i = q < d->in_off[kk + 1] ? d->in[q] : kk;
                    bool hazard = v[cm_r(x, t, kk)] < 0.5 || (t + 1 < n && v[cm_s(x, t + 1, i)] > 0.5);
                    for (int w = d->out_off[i]; w < d->out_off[i + 1]; w++) {
                        int jn = d->out[w];
                        if (jn > kk && jn <= t && v[cm_r(x, t, jn)] > 0.5) hazard = true;
                    }
                    v[col++] = hazard ? 0 : 1;
                    if (!hazard) u -= (double)d->mem[i];
                }
            }
            u += v[cm_r(x, t, k)] * (double)d->mem[k];
            v[ucol] = u / (double)budget;
        }
    }
    free(last);
    if (!ok) free(v), v = NULL;
    return v;
}

typedef struct {
    const Dag *d;
    int64_t budget;
    const Staged *s;
    int *bad_row;
    bool ok;
} Accepts;

static void checkmate_accepts(void *arg) {
    Accepts *a = arg;
    LpBuild b = {0};
    CmIndex x;
    build_checkmate(a->d, a->budget, true, false, &b, &x);
    double *v = cm_point(a->d, &x, &b, a->s, a->budget);
    *a->bad_row = -1;
    a->ok = v && lp_check_point(&b, v, 1e-6, a->bad_row);
    free(v);
    lp_build_free(&b);
}

bool dag_checkmate_accepts(const Dag *d, int64_t budget, const Staged *s, int *bad_row) {
    Accepts a = {d, budget, s, bad_row, false};
    char err[200];
    return lp_guarded(checkmate_accepts, &a, err, sizeof err) && a.ok; /* a GLPK failure: not accepted */
}

bool dag_solve_checkmate(const Dag *d, int64_t budget, bool integral, double deadline, const char *emit_lp,
                         bool verbose, DagPlan *p, char *err, size_t err_len) {
    int n = d->n;
    LpBuild b = {0};
    CmIndex x;
    double t0 = acc_now_s();
    p->bound_scope = "checkmate";
    if ((long)n * (n + 1) / 2 > MAX_STAGE_PAIRS) {
        snprintf(p->status, sizeof p->status, "too_large");
        if (verbose) fprintf(stderr, "acc plan: checkmate: %d nodes, too large a program to build\n", n);
        return true;
    }
    build_checkmate(d, budget, integral, emit_lp != NULL, &b, &x);
    p->n_binaries = b.n_int;
    p->n_rows = b.n_rows;
    p->bound_scope = "checkmate";
    if (verbose)
        fprintf(stderr, "acc plan: checkmate %s: %d columns (%d binary), %d rows, %d nonzeros, built in %.2f s\n",
                integral ? "MILP" : "LP", b.n_cols, b.n_int, b.n_rows, glp_get_num_nz(b.lp), acc_now_s() - t0);
    if (!lp_write(b.lp, emit_lp, err, err_len)) {
        lp_build_free(&b);
        return false;
    }
    Staged s = {0};
    bool ok = true;
    if (integral) {
        int nr = n * (n + 1) / 2;
        int *report = acc_xcalloc((size_t)nr, sizeof(int));
        for (int k = 0; k < nr; k++) report[k] = x.r0 + k;
        LpJob j = {b.lp, report, nr, NULL, deadline, false, verbose, dag_grace_for(deadline), false};
        LpResult r;
        ok = lp_run_watched(&j, &r, err, err_len);
        if (ok) {
            set_status(p, &r);
            p->bound = r.bound;
            if (r.have_sol) {
                p->objective = r.obj;
                for (int t = 0; t < n; t++)
                    for (int i = 0; i <= t; i++)
                        if (r.vals[cm_r(&x, t, i) - x.r0] > 0.5) staged_push(&s, t, i);
                plan_from_staged(p, &s);
            }
        }
        free(r.vals);
        free(report);
    } else {
        /* the relaxation at the budget, then at 0.9, 0.8, 0.7 of it while no rounding fits */
        int ns = n * (n - 1) / 2;
        int *report = acc_xcalloc((size_t)ns + 1, sizeof(int));
        for (int k = 0; k < ns; k++) report[k] = x.s0 + k;
        uint8_t *S = acc_xcalloc((size_t)n * (size_t)n, 1);
        static const double shrink[] = {1.0, 0.9, 0.8, 0.7};
        double best = INFINITY;
        bool any_lp = false;
        for (size_t a = 0; a < sizeof shrink / sizeof *shrink && ok && !isfinite(best); a++) {
            if (a > 0) { /* same program, tighter memory rows */
                lp_build_free(&b);
                b = (LpBuild){0};
                build_checkmate(d, (int64_t)(shrink[a] * (double)budget), false, false, &b, &x);
            }
            LpJob j = {b.lp, report, ns, NULL, deadline, true, verbose, dag_grace_for(deadline), false};
            LpResult r;
            ok = lp_run_watched(&j, &r, err, err_len);
            if (ok && a == 0) {
                p->bound = r.lp_solved ? r.lp_obj : NAN; /* the relaxation bounds Checkmate's optimum */
                snprintf(p->status, sizeof p->status, "%s",
                         r.lp_solved       ? "feasible"
                         : r.lp_infeasible ? "infeasible"
                                           : "no_solution");
                if (r.lp_solved) p->objective = r.lp_obj;
            }
            if (ok && r.have_sol) {
                any_lp = true;
                Staged trial = {0};
                for (int th = 1; th <= 9; th++) {
                    memset(S, 0, (size_t)n * (size_t)n);
                    for (int t = 1; t < n; t++)
                        for (int i = 0; i < t; i++)
                            S[(size_t)t * n + i] = r.vals[cm_s(&x, t, i) - x.s0] >= 0.1 * th - 1e-9;
                    r_from_s(d, S, &trial);
                    DagSim sim;
                    dag_simulate(d, trial.ev.v, trial.ev.n, &sim, NULL);
                    if (sim.valid && sim.peak <= budget && sim.compute < best) {
                        best = sim.compute;
                        staged_copy(&s, &trial);
                    }
                }
                staged_free(&trial);
                if (verbose)
                    fprintf(stderr, "acc plan: checkmate LP at %.0f%% of the budget: %s\n", 100 * shrink[a],
                            isfinite(best) ? "a rounding fits" : "no rounding fits");
            }
            free(r.vals);
            if (r.lp_infeasible || acc_now_s() > deadline) break;
        }
        if (s.ev.n) plan_from_staged(p, &s);
        else if (any_lp && !strcmp(p->status, "feasible")) snprintf(p->status, sizeof p->status, "no_solution");
        free(S), free(report);
    }
    staged_free(&s);
    lp_build_free(&b);
    return ok;
}

/* ---- acc's compact program ---------------------------------------------------------- */

#define ACC_SUPPORT_CAP 4000 /* binaries: GLPK proves optima of this size in seconds */

typedef struct {
    int node, col;
} FreeCol;

typedef VEC(FreeCol) FreeVec;

typedef struct {
    Pool mem; /* sup and the arrays of columns below (acc_index_free frees them in one call) */
    int n;
    IntVec *sup;    /* [n] nodes that may be recomputed in stage t, ascending */
    int **rcol;     /* [n][|sup[t]|] their R columns */
    int *s_hi;      /* [n] last stage at which node i may be read */
    int *s_col0;    /* S[t,i] = s_col0[i] + t - (i + 1), t in (i, s_hi[i]] */
    int **ucol;     /* [n][|sup[t]| + 1] U after each event of stage t */
    int **free_off; /* [n][|sup[t]| + 1] FREE after event a: frees[free_off[t][a] .. free_off[t][a+1]) */
    FreeVec frees;
} AccIndex;

static int acc_s(const AccIndex *x, int t, int i) { return t > i && t <= x->s_hi[i] ? x->s_col0[i] + t - (i + 1) : 0; }

static int sup_pos(const IntVec *s, int i) {
    int lo = 0, hi = s->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (s->v[mid] == i) return mid;
        if (s->v[mid] < i) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int acc_r(const AccIndex *x, int t, int i) { /* 0: not in the support */
    int a = sup_pos(&x->sup[t], i);
    return a < 0 ? 0 : x->rcol[t][a];
}

static int int_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static bool reads(const Dag *d, int j, int i) {
    for (int q = d->in_off[j]; q < d->in_off[j + 1]; q++)
        if (d->in[q] == i) return true;
    return false;
}

/* The support of stage t: every earlier node when k is unbounded (then the
 * program covers every staged plan); otherwise the ancestors of t within k
 * hops and the nodes that read one of them (computed here while their
 * inputs are at hand, kept for a later stage), plus the incumbent's pairs. */
static long make_support(const Dag *d, int k, const Staged *inc, IntVec *sup) {
    int n = d->n;
    int *depth = acc_xcalloc((size_t)n, sizeof(int)), *queue = acc_xcalloc((size_t)n, sizeof(int));
    uint8_t *in_set = acc_xcalloc((size_t)n, 1);
    for (int i = 0; i < n; i++) depth[i] = -1;
    long total = 0;
    for (int t = 0; t < n; t++) {
        sup[t].n = 0;
        if (k >= n) {
            for (int i = 0; i < t; i++) VEC_PUSH(sup[t], i);
            continue;
        }
        int qh = 0, qt = 0;
        depth[t] = 0;
        queue[qt++] = t;
        while (qh < qt) {
            int u = queue[qh++];
            if (depth[u] >= k) continue;
            for (int q = d->in_off[u]; q < d->in_off[u + 1]; q++) {
                int p = d->in[q];
                if (depth[p] >= 0) continue;
                depth[p] = depth[u] + 1;
                queue[qt++] = p;
            }
        }
        for (int a = 1; a < qt; a++) {
            VEC_PUSH(sup[t], queue[a]);
            in_set[queue[a]] = 1;
        }
        if (k > 0) /* readers of the ancestors found */
            for (int a = 1; a < qt; a++) {
                int p = queue[a];
                for (int w = d->out_off[p]; w < d->out_off[p + 1]; w++) {
                    int r = d->out[w];
                    if (r < t && !in_set[r]) {
                        in_set[r] = 1;
                        VEC_PUSH(sup[t], r);
                    }
                }
            }
        for (int a = 0; a < sup[t].n; a++) in_set[sup[t].v[a]] = 0;
        for (int a = 0; a < qt; a++) depth[queue[a]] = -1;
    }
    if (inc)
        for (int e = 0; e < inc->ev.n; e++) {
            int t = inc->stage.v[e], i = inc->ev.v[e];
            if (i != t) VEC_PUSH(sup[t], i);
        }
    for (int t = 0; t < n; t++) {
        if (sup[t].n > 1) qsort(sup[t].v, (size_t)sup[t].n, sizeof(int), int_cmp);
        int m = 0;
        for (int a = 0; a < sup[t].n; a++)
            if (!m || sup[t].v[m - 1] != sup[t].v[a]) sup[t].v[m++] = sup[t].v[a];
        sup[t].n = m;
        total += m;
    }
    free(depth), free(queue), free(in_set);
    return total;
}

static void acc_index_free(AccIndex *x) {
    for (int t = 0; t < x->n; t++) VEC_FREE(x->sup[t]);
    VEC_FREE(x->frees);
    pool_free(&x->mem);
}

/* relaxed: memory only at each stage's own event, exactly (what is read
 * there plus what is kept into the next stage): a relaxation of the stage
 * model, for a lower bound over every staged plan; no FREE, no U. */
static void build_acc(const Dag *d, int64_t budget, AccIndex *x, LpBuild *b, bool names, bool relaxed) {
    int n = d->n;
    double ub = dag_memory_ub(d, budget, relaxed), sc = (double)budget;
    char nm[64];
    lp_build_init(b, relaxed ? "acc_relaxation" : "acc", names);
    double base = 0;
    for (int i = 0; i < n; i++) base += d->cost[i];
    glp_set_obj_coef(b->lp, 0, base); /* every node runs once */
    x->rcol = pool_alloc(&x->mem, (size_t)n * sizeof(int *));
    x->ucol = pool_alloc(&x->mem, (size_t)n * sizeof(int *));
    x->free_off = pool_alloc(&x->mem, (size_t)n * sizeof(int *));
    x->s_hi = pool_alloc(&x->mem, (size_t)n * sizeof(int));
    x->s_col0 = pool_alloc(&x->mem, (size_t)n * sizeof(int));
    /* R on the support; S over the stages where a node can still be read */
    for (int i = 0; i < n; i++) x->s_hi[i] = i;
    for (int t = 0; t < n; t++) {
        x->rcol[t] = pool_alloc(&x->mem, ((size_t)x->sup[t].n + 1) * sizeof(int));
        for (int a = 0; a < x->sup[t].n; a++) {
            int i = x->sup[t].v[a];
            snprintf(nm, sizeof nm, "R_%d_%d", t, i);
            x->rcol[t][a] = lp_col(b, nm, true, 0, 1, d->cost[i]);
        }
        for (int a = 0; a <= x->sup[t].n; a++) {
            int j = a < x->sup[t].n ? x->sup[t].v[a] : t;
            for (int q = d->in_off[j]; q < d->in_off[j + 1]; q++)
                if (x->s_hi[d->in[q]] < t) x->s_hi[d->in[q]] = t;
        }
    }
    for (int i = 0; i < n; i++) {
        x->s_col0[i] = b->n_cols + 1;
        for (int t = i + 1; t <= x->s_hi[i]; t++) {
            snprintf(nm, sizeof nm, "S_%d_%d", t, i);
            lp_col(b, nm, false, 0, 1, 0);
        }
    }
    /* S[t+1,i] <= S[t,i] + R[t,i]  (R[i,i] = 1 makes t = i trivial) */
    for (int i = 0; i < n; i++)
        for (int t = i + 1; t < x->s_hi[i]; t++) {
            int row = lp_row(b, GLP_UP, 0, 0);
            lp_coef(b, row, acc_s(x, t + 1, i), 1);
            lp_coef(b, row, acc_s(x, t, i), -1);
            int r = acc_r(x, t, i);
            if (r) lp_coef(b, row, r, -1);
        }
    /* S[t,i] + R[t,i] <= 1: never keep and recompute */
    for (int t = 0; t < n; t++)
        for (int a = 0; a < x->sup[t].n; a++) {
            int s = acc_s(x, t, x->sup[t].v[a]);
            if (!s) continue;
            int row = lp_row(b, GLP_UP, 0, 1);
            lp_coef(b, row, s, 1), lp_coef(b, row, x->rcol[t][a], 1);
        }
    /* R[t,j] <= R[t,i] + S[t,i] for each input i of an event j (j = t: R = 1) */
    for (int t = 0; t < n; t++)
        for (int a = 0; a <= x->sup[t].n; a++) {
            bool last = a == x->sup[t].n;
            int j = last ? t : x->sup[t].v[a];
            for (int q = d->in_off[j]; q < d->in_off[j + 1]; q++) {
                int i = d->in[q], ri = acc_r(x, t, i), si = acc_s(x, t, i);
                int row = last ? lp_row(b, GLP_LO, 1, 0) : lp_row(b, GLP_UP, 0, 0);
                double sign = last ? 1 : -1;
                if (!last) lp_coef(b, row, x->rcol[t][a], 1);
                if (ri) lp_coef(b, row, ri, sign);
                if (si) lp_coef(b, row, si, sign);
            }
        }
    for (int t = 0; t < n && relaxed; t++) {
        int row = lp_row(b, GLP_UP, 0, ub - (double)d->mem[t] / sc);
        for (int i = 0; i < t; i++) {
            if (reads(d, t, i)) {
                b->row_ub.v[row - 1] -= (double)d->mem[i] / sc;
                continue;
            }
            int s1 = acc_s(x, t + 1, i);
            if (s1) lp_coef(b, row, s1, (double)d->mem[i] / sc);
        }
    }
    /* memory after each event of stage t: U = kept + computed so far - freed so far */
    for (int t = 0; t < n && !relaxed; t++) {
        int m = x->sup[t].n, prev_u = 0;
        x->ucol[t] = pool_alloc(&x->mem, ((size_t)m + 1) * sizeof(int));
        x->free_off[t] = pool_alloc(&x->mem, ((size_t)m + 2) * sizeof(int));
        for (int a = 0; a <= m; a++) {
            int k = a < m ? x->sup[t].v[a] : t;
            snprintf(nm, sizeof nm, "U_%d_%d", t, k);
            int u = x->ucol[t][a] = lp_col(b, nm, false, 0, ub, 0);
            double mk = (double)d->mem[k] / sc;
            int row = a == m ? lp_row(b, GLP_FX, mk, mk) : lp_row(b, GLP_FX, 0, 0);
            lp_coef(b, row, u, 1);
            if (a < m) lp_coef(b, row, x->rcol[t][a], -mk);
            x->free_off[t][a] = x->frees.n;
            if (a == 0) {
                for (int i = 0; i < t; i++) {
                    int s = acc_s(x, t, i);
                    if (s) lp_coef(b, row, s, -(double)d->mem[i] / sc);
                }
            } else {
                lp_coef(b, row, prev_u, -1);
                /* frees after the previous event kp, a recomputation */
                int kp = x->sup[t].v[a - 1], rk = x->rcol[t][a - 1];
                for (int q = d->in_off[kp]; q <= d->in_off[kp + 1]; q++) {
                    int i = q < d->in_off[kp + 1] ? d->in[q] : kp;
                    if (reads(d, t, i)) continue; /* node t reads it later in the stage */
                    snprintf(nm, sizeof nm, "F_%d_%d_%d", t, i, kp);
                    int f = lp_col(b, nm, false, 0, 1, 0);
                    VEC_PUSH(x->frees, ((FreeCol){i, f}));
                    lp_coef(b, row, f, (double)d->mem[i] / sc);
                    int r1 = lp_row(b, GLP_UP, 0, 0); /* FREE <= R[t,kp] */
                    lp_coef(b, r1, f, 1), lp_coef(b, r1, rk, -1);
                    int s1 = acc_s(x, t + 1, i);
                    if (s1) { /* FREE <= 1 - S[t+1,i] */
                        int r2 = lp_row(b, GLP_UP, 0, 1);
                        lp_coef(b, r2, f, 1), lp_coef(b, r2, s1, 1);
                    }
                    for (int c = a; c < m; c++) { /* FREE <= 1 - R[t,j] for a later reader j */
                        if (!reads(d, x->sup[t].v[c], i)) continue;
                        int r3 = lp_row(b, GLP_UP, 0, 1);
                        lp_coef(b, r3, f, 1), lp_coef(b, r3, x->rcol[t][c], 1);
                    }
                }
            }
            prev_u = u;
        }
        x->free_off[t][m + 1] = x->frees.n;
    }
    lp_load(b);
}

/* Every column's value for the staged schedule s: its R, the least S (kept
 * exactly while a later event reads the copy), the exact FREE, U by the
 * recurrence. NULL if s uses a pair outside the support. */
static double *acc_point(const Dag *d, const AccIndex *x, const LpBuild *b, const Staged *s) {
    int n = d->n, n_ev = s->ev.n;
    double *v = acc_xcalloc((size_t)b->n_cols + 1, sizeof(double));
    int *inst = acc_xcalloc((size_t)n, sizeof(int)), *last = staged_last_reads(d, s);
    int *in_stage = acc_xcalloc((size_t)n, sizeof(int)); /* node -> its event in the current stage, -1 */
    for (int i = 0; i < n; i++) in_stage[i] = -1;
    bool ok = true;
    for (int e = 0; e < n_ev && ok; e++) {
        int t = s->stage.v[e], i = s->ev.v[e];
        if (i != t) {
            int r = acc_r(x, t, i);
            if (!r) ok = false;
            else v[r] = 1;
        }
        for (int u = t + 1; u <= s->stage.v[last[e]]; u++) v[acc_s(x, u, i)] = 1; /* kept into stage u */
    }
    for (int i = 0; i < n; i++) inst[i] = -1;
    int e = 0;
    for (int t = 0; t < n && ok; t++) {
        int e0 = e;
        while (e < n_ev && s->stage.v[e] == t) e++;
        /* copies read by each event of the stage: a copy is freed after event
         * f if f is its last touch (f reads it, or computes it) */
        for (int f = e0; f < e; f++) in_stage[s->ev.v[f]] = f;
        int m = x->sup[t].n;
        double u = 0;
        for (int i = 0; i < t; i++) {
            int sc_ = acc_s(x, t, i);
            if (sc_ && v[sc_] > 0.5) u += (double)d->mem[i];
        }
        /* walk the support's events; those the schedule runs are R = 1 */
        for (int a = 0; a <= m; a++) {
            int k = a < m ? x->sup[t].v[a] : t;
            int ek = in_stage[k];
            if (a > 0) { /* frees after the previous support event */
                int kp = x->sup[t].v[a - 1], ep = in_stage[kp];
                for (int q = x->free_off[t][a]; q < x->free_off[t][a + 1]; q++) {
                    FreeCol fc = x->frees.v[q];
                    double fv = 0;
                    if (ep >= 0) {
                        int copy = fc.node == kp ? ep : inst[fc.node];
                        fv = copy >= 0 && last[copy] == ep;
                    }
                    v[fc.col] = fv;
                    u -= fv * (double)d->mem[fc.node];
                }
            }
            if (ek >= 0) {
                u += (double)d->mem[k];
                inst[k] = ek;
            }
            v[x->ucol[t][a]] = u;
        }
        for (int f = e0; f < e; f++) in_stage[s->ev.v[f]] = -1;
    }
    free(inst), free(last), free(in_stage);
    if (!ok) {
        free(v);
        return NULL;
    }
    return v;
}

/* A support for k hops (the largest k whose support has at most cap pairs;
 * 1 << 30: every earlier node). Returns the k used. */
static int choose_support(const Dag *d, long cap, const Staged *inc, IntVec *sup, long *size) {
    static const int hops[] = {1 << 30, 16, 8, 6, 4, 3, 2, 1, 0};
    int k = 0;
    *size = 0;
    for (size_t h = 0; h < sizeof hops / sizeof *hops; h++) {
        k = hops[h];
        if (k >= d->n && (long)d->n * (d->n - 1) / 2 > cap) continue; /* surely too large */
        *size = make_support(d, k, inc, sup);
        if (*size <= cap) break;
    }
    return k;
}

typedef struct {
    bool ok, have_sol, optimal;
    double obj, bound, lp;
    Staged sol;
    char status[24];
    int n_bin, n_rows;
    double *keep; /* relaxed: [n*n] the LP's S[t,i] at keep[t*n+i], or NULL */
    long size;    /* support pairs */
} AccRun;

/* One exact program on the support of k hops around inc, until deadline. */
static bool acc_run(const Dag *d, int64_t budget, long cap, const Staged *inc, double deadline, bool relaxed,
                    bool verbose, AccRun *out, char *err, size_t err_len, const char *emit_lp) {
    int n = d->n;
    double t0 = acc_now_s();
    AccIndex x = {0};
    x.n = n;
    x.sup = pool_alloc(&x.mem, (size_t)n * sizeof(IntVec));
    long size;
    int k = choose_support(d, cap, inc, x.sup, &size);
    LpBuild b = {0};
    build_acc(d, budget, &x, &b, emit_lp != NULL, relaxed);
    memset(out, 0, sizeof *out);
    out->obj = out->bound = out->lp = NAN;
    out->size = size;
    out->n_bin = b.n_int, out->n_rows = b.n_rows;
    bool full = k == 1 << 30;
    if (verbose)
        fprintf(stderr, "acc plan: acc %s: support %s%d hops (%ld pairs), %d columns (%d binary), %d rows\n",
                relaxed ? "bound LP" : "MILP", full ? "every earlier node, " : "", full ? n : k, size, b.n_cols,
                b.n_int, b.n_rows);
    if (emit_lp) {
        bool ok = lp_write(b.lp, emit_lp, err, err_len);
        lp_build_free(&b);
        acc_index_free(&x);
        return ok;
    }
    double *heur = NULL;
    if (inc && !relaxed) {
        heur = acc_point(d, &x, &b, inc);
        if (heur) {
            for (int t = 0; t < n; t++)
                for (int a = 0; a <= x.sup[t].n; a++) heur[x.ucol[t][a]] /= (double)budget;
            int bad = 0;
            if (!lp_check_point(&b, heur, 1e-6, &bad)) {
                if (verbose) fprintf(stderr, "acc plan: the incumbent violates row %d; not installed\n", bad);
                free(heur);
                heur = NULL;
            }
        }
    }
    /* what comes back: R (the schedule), or for the relaxation every column */
    int *report = acc_xcalloc((size_t)b.n_cols + 1, sizeof(int));
    int nr = 0;
    if (relaxed)
        for (int c = 1; c <= b.n_cols; c++) report[nr++] = c;
    else
        for (int t = 0; t < n; t++)
            for (int a = 0; a < x.sup[t].n; a++) report[nr++] = x.rcol[t][a];
    LpJob j = {b.lp, report, nr, heur, deadline, relaxed, verbose, dag_grace_for(deadline), heur && !full};
    LpResult r;
    bool ok = lp_run_watched(&j, &r, err, err_len);
    if (ok) {
        DagPlan tmp = {0};
        set_status(&tmp, &r);
        snprintf(out->status, sizeof out->status, "%s",
                 relaxed ? (r.lp_solved       ? "bound"
                            : r.lp_infeasible ? "infeasible"
                                              : "no_bound")
                         : tmp.status);
        out->lp = r.lp_obj;
        out->bound = relaxed ? r.lp_obj : r.bound;
        out->optimal = !relaxed && r.optimal && r.have_sol;
        if (relaxed && r.have_sol && r.lp_solved) {
            out->keep = acc_xcalloc((size_t)n * (size_t)n, sizeof(double));
            for (int i = 0; i < n; i++)
                for (int t = i + 1; t < n; t++) {
                    int c = acc_s(&x, t, i);
                    if (c) out->keep[(size_t)t * n + i] = r.vals[c - 1];
                }
        }
        if (!relaxed && r.have_sol) {
            out->have_sol = true;
            out->obj = r.obj;
            int q = 0;
            for (int t = 0; t < n; t++) {
                for (int a = 0; a < x.sup[t].n; a++, q++)
                    if (r.vals[q] > 0.5) staged_push(&out->sol, t, x.sup[t].v[a]);
                staged_push(&out->sol, t, t);
            }
        }
        if (verbose)
            fprintf(stderr, "acc plan: acc %s: %s, LP %.8g, %s %.8g, incumbent %s, %.2f s\n",
                    relaxed ? "bound LP" : "MILP", out->status, r.lp_obj, relaxed ? "bound" : "objective",
                    relaxed ? r.lp_obj : r.obj,
                    !heur             ? "none"
                    : r.heur_accepted ? "accepted"
                                      : "rejected",
                    acc_now_s() - t0);
    }
    free(r.vals);
    free(report), free(heur);
    lp_build_free(&b);
    acc_index_free(&x);
    out->ok = ok;
    if (ok && full) out->n_bin = -out->n_bin; /* marks "the full support" to the caller */
    return ok;
}

bool dag_acc_bound(const Dag *d, int64_t budget, double deadline, bool verbose, double *bound, bool *infeasible,
                   double **keep, char *err, size_t err_len) {
    AccRun br;
    *bound = NAN, *infeasible = false, *keep = NULL;
    if ((long)d->n * (d->n - 1) / 2 > MAX_STAGE_PAIRS) return true;
    if (!acc_run(d, budget, 1L << 40, NULL, deadline, true, verbose, &br, err, err_len, NULL)) return false;
    *bound = br.bound;
    *infeasible = !strcmp(br.status, "infeasible");
    *keep = br.keep;
    return true;
}

/* acc's search: exact programs on growing supports around the incumbent,
 * each seeded with it (a large-neighbourhood search); a program whose
 * support is every earlier node, solved to optimality, proves the plan
 * optimal over every staged plan. bound: a lower bound known already. */
bool dag_emit_acc_program(const Dag *d, int64_t budget, const char *path, char *err, size_t err_len) {
    AccRun e;
    return acc_run(d, budget, 1L << 40, NULL, 0, false, false, &e, err, err_len, path);
}

/* Past this many pairs in the incumbent alone, no program is built: one with recomputations everywhere
 * (MOCCASIN's n1000 at 0.6 of its peak: 442,909 pairs, 17.9 million rows) took 25 s to build, past a 30 s
 * time limit, where n500's 22,734 pairs take under a second. */
#define ACC_MAX_PAIRS 50000
bool dag_solve_acc_milp(const Dag *d, int64_t budget, const Staged *inc, double deadline, bool verbose, double bound,
                        DagPlan *p, char *err, size_t err_len) {
    p->bound_scope = "checkmate";
    Staged cur = {0};
    double cur_obj = INFINITY;
    if (inc) {
        for (int e = 0; e < inc->ev.n; e++) staged_push(&cur, inc->stage.v[e], inc->ev.v[e]);
        DagSim sim;
        dag_simulate(d, cur.ev.v, cur.ev.n, &sim, NULL);
        cur_obj = sim.compute;
    }
    static const long caps[] = {400, 1200, 3000, 8000, 20000};
    size_t ci = 0;
    bool proven = false, any = false;
    snprintf(p->status, sizeof p->status, "%s", inc ? "feasible" : "no_solution");
    if (cur.ev.n) { /* every neighbourhood holds the incumbent's own pairs (the support of 0 hops) */
        IntVec *sup = acc_xcalloc((size_t)d->n, sizeof(IntVec));
        long size = make_support(d, 0, &cur, sup);
        for (int t = 0; t < d->n; t++) VEC_FREE(sup[t]);
        free(sup);
        if (size > ACC_MAX_PAIRS) {
            ci = sizeof caps / sizeof *caps; /* no program: the incumbent stands */
            if (verbose)
                fprintf(stderr, "acc plan: acc MILP: not built, the incumbent alone has %ld pairs (at most %d)\n", size,
                        ACC_MAX_PAIRS);
        }
    }
    while (ci < sizeof caps / sizeof *caps && acc_now_s() < deadline - 0.05) {
        double slice = deadline - acc_now_s(); /* a neighbourhood not solved in it ends the search */
        AccRun r;
        if (!acc_run(d, budget, caps[ci], cur.ev.n ? &cur : NULL, acc_now_s() + slice, false, verbose, &r, err, err_len,
                     NULL))
            return false;
        any = true;
        bool full = r.n_bin < 0;
        p->n_binaries = full ? -r.n_bin : r.n_bin;
        p->n_rows = r.n_rows;
        if (!strcmp(r.status, "infeasible") && full) {
            snprintf(p->status, sizeof p->status, "infeasible");
            staged_free(&r.sol);
            break;
        }
        bool improved = r.have_sol && (!isfinite(cur_obj) || r.obj < cur_obj - 1e-9 * (1 + fabs(cur_obj)));
        if (improved) {
            staged_copy(&cur, &r.sol);
            cur_obj = r.obj;
        }
        if (r.have_sol || cur.ev.n) snprintf(p->status, sizeof p->status, "feasible");
        if (r.optimal && full) { /* every ancestor, solved: optimal over all staged plans */
            proven = true;
            if (r.obj > bound || !isfinite(bound)) bound = r.obj;
        } else if (full && isfinite(r.bound) && (r.bound > bound || !isfinite(bound))) {
            bound = r.bound; /* the search's bound over the full support holds for every staged plan */
        }
        staged_free(&r.sol);
        if (proven || full) break;
        /* the neighbourhood is exhausted (or holds no plan): widen it; out of time on it: stop */
        if (!improved && (r.optimal || !strcmp(r.status, "infeasible"))) {
            for (ci++; ci < sizeof caps / sizeof *caps; ci++) { /* skip caps that give the same support */
                IntVec *sup = acc_xcalloc((size_t)d->n, sizeof(IntVec));
                long size;
                choose_support(d, caps[ci], cur.ev.n ? &cur : NULL, sup, &size);
                for (int t = 0; t < d->n; t++) VEC_FREE(sup[t]);
                free(sup);
                if (size != r.size) break;
            }
        } else if (!improved) {
            break;
        }
    }
    if (!any && !inc) snprintf(p->status, sizeof p->status, "no_solution");
    if (proven) snprintf(p->status, sizeof p->status, "optimal");
    else if (cur.ev.n && acc_now_s() >= deadline - 0.05) snprintf(p->status, sizeof p->status, "time_limit");
    if (isfinite(cur_obj) && isfinite(bound) && bound >= cur_obj - 1e-9 * (1 + fabs(cur_obj)))
        snprintf(p->status, sizeof p->status, "optimal");
    p->bound = bound;
    if (cur.ev.n) {
        p->objective = cur_obj;
        plan_from_staged(p, &cur);
    }
    staged_free(&cur);
    return true;
}

/* ---- the forced windows' covering program ------------------------------------------- */

/* A lower bound on the compute of every schedule (first executions in the
 * topological order, recomputations anywhere), for graphs of any shape.
 *
 * For node x, its points are its first execution and its users' first
 * executions, ascending; gap i lies between points i and i + 1, where no
 * other node reads x. At the first execution of a node b inside a gap of x,
 * x is held or it is not; if not, x runs again after b and before the next
 * point: one execution inside that gap, distinct from every other gap's and
 * from x's first. Let y[x,i] = 1 when x is not held at some first execution
 * inside gap i. At b, what is held includes b's inputs and every x spanning
 * b with y = 0, and with b's output stays within the budget:
 *     sum over spanning x of mem[x] * y[x,i] >= deficit[b]
 *       = own[b] + sum over spanning x of mem[x] - budget,
 * still true with each coefficient capped at deficit[b] (y is 0 or 1), and
 * compute >= baseline + sum of cost[x] * y[x,i]. The program's relaxation
 * (y in [0, 1]) is below its integer optimum, and both bound every schedule
 * once the baseline is added: the integer optimum when branch and bound
 * proves it by the deadline, else the relaxation's. *bound: that, or NAN (not solved by deadline, or
 * too large). */
#define WINDOW_MAX_NONZEROS 2000000L
bool dag_window_lp(const Dag *d, int64_t budget, double deadline, bool verbose, double *bound, char *err,
                   size_t err_len) {
    int n = d->n;
    *bound = NAN;
    int64_t *own = acc_xcalloc((size_t)n + 1, sizeof(int64_t)), *span = acc_xcalloc((size_t)n + 1, sizeof(int64_t));
    /* the gaps: a gap is worth a column only if it spans a b in deficit */
    if (dag_point_memory(d, own, span) > WINDOW_MAX_NONZEROS) {
        free(own), free(span);
        return true;
    }
    bool ok = true;
    LpBuild lb = {0};
    lp_build_init(&lb, "windows", false);
    int *row = acc_xcalloc((size_t)n + 1, sizeof(int)), n_rows = 0;
    for (int b = 0; b < n; b++) {
        int64_t deficit = own[b] + span[b] - budget;
        if (deficit > 0) row[b] = lp_row(&lb, GLP_LO, 1, 0), n_rows++; /* divided by the deficit: GLPK's tolerances */
    }
    for (int x = 0; x < n; x++)
        for (int k = d->out_off[x], prev = x; k < d->out_off[x + 1]; prev = d->out[k++]) {
            int col = 0;
            for (int b = prev + 1; b < d->out[k]; b++) {
                if (!row[b]) continue;
                if (!col) col = lp_col(&lb, NULL, true, 0, 1, d->cost[x]);
                int64_t deficit = own[b] + span[b] - budget;
                lp_coef(&lb, row[b], col, d->mem[x] < deficit ? (double)d->mem[x] / (double)deficit : 1);
            }
        }
    if (n_rows) {
        lp_load(&lb);
        LpJob j = {lb.lp, NULL, 0, NULL, deadline, false, verbose, dag_grace_for(deadline), false};
        LpResult r;
        ok = lp_run_watched(&j, &r, err, err_len);
        /* the integer optimum, else the relaxation's (branch and bound's bounds are not used: a program it
         * stopped early or misjudged would leave one that no plan was checked against) */
        double lo = ok && r.optimal && r.have_sol ? r.obj : ok && r.lp_solved ? r.lp_obj : NAN;
        if (isfinite(lo)) *bound = dag_baseline_compute(d) + lo;
        if (ok) free(r.vals);
    } else {
        *bound = dag_baseline_compute(d); /* nothing is in deficit: the baseline fits */
    }
    if (verbose)
        fprintf(stderr, "acc plan: forced windows LP: %d rows, %d columns, bound %.8g\n", n_rows, lb.n_cols, *bound);
    free(row);
    lp_build_free(&lb);
    free(own), free(span);
    return ok;
}
