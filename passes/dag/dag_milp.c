/* dag_milp.c - the integer programs for published graphs, solved by GLPK in a
 * child process under a watchdog.
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
 * GLPK runs in a forked child: tm_lim is overshot and some of GLPK's work
 * ignores it, so the parent waits on a pipe until the deadline plus a grace
 * period, then kills the child and keeps the best solution it had reported.
 * The child reports every improved incumbent and bound as it goes.
 */
#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dag_impl.h"
#include "glpk_guard.h"

#define WATCHDOG_GRACE_S 1.5
/* Programs with more stage pairs than this are not built (GLPK's memory and
 * time grow beyond use): Checkmate's above it reports no solution, acc's
 * bound is skipped and its search keeps to smaller supports. */
#define MAX_STAGE_PAIRS 400000L

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) acc_panic(__FILE__, __LINE__, "out of memory");
    return p;
}

/* ---- building a program ---------------------------------------------------------- */

typedef VEC(int) IntVec;
typedef VEC(double) DblVec;

typedef struct {
    glp_prob *lp;
    IntVec ia, ja;
    DblVec ar;
    DblVec row_lb, row_ub; /* [row] for checking an incumbent */
    IntVec row_type;
    int n_cols, n_rows, n_bin;
    bool names;
} Build;

static int add_col(Build *b, const char *name, bool binary, double lb, double ub, double obj) {
    int j = ++b->n_cols;
    glp_add_cols(b->lp, 1);
    if (binary) glp_set_col_kind(b->lp, j, GLP_BV), b->n_bin++;
    else glp_set_col_bnds(b->lp, j, lb == ub ? GLP_FX : GLP_DB, lb, ub);
    if (binary && lb == ub) glp_set_col_bnds(b->lp, j, GLP_FX, lb, ub);
    if (obj != 0) glp_set_obj_coef(b->lp, j, obj);
    if (b->names && name) glp_set_col_name(b->lp, j, name);
    return j;
}

static int add_row(Build *b, int type, double lb, double ub) {
    int i = ++b->n_rows;
    VEC_PUSH(b->row_type, type);
    VEC_PUSH(b->row_lb, lb);
    VEC_PUSH(b->row_ub, ub);
    return i;
}

static void coef(Build *b, int row, int col, double v) {
    if (v == 0) return;
    VEC_PUSH(b->ia, row);
    VEC_PUSH(b->ja, col);
    VEC_PUSH(b->ar, v);
}

static void build_finish(Build *b) {
    if (b->n_rows) glp_add_rows(b->lp, b->n_rows); /* GLPK rejects adding none */
    for (int i = 0; i < b->n_rows; i++) glp_set_row_bnds(b->lp, i + 1, b->row_type.v[i], b->row_lb.v[i], b->row_ub.v[i]);
    /* GLPK's arrays are 1-based */
    int nz = b->ia.n;
    int *ia = xcalloc((size_t)nz + 1, sizeof(int)), *ja = xcalloc((size_t)nz + 1, sizeof(int));
    double *ar = xcalloc((size_t)nz + 1, sizeof(double));
    if (nz) {
        memcpy(ia + 1, b->ia.v, (size_t)nz * sizeof(int));
        memcpy(ja + 1, b->ja.v, (size_t)nz * sizeof(int));
        memcpy(ar + 1, b->ar.v, (size_t)nz * sizeof(double));
    }
    glp_load_matrix(b->lp, nz, ia, ja, ar);
    free(ia), free(ja), free(ar);
}

/* Does x (1-based, every column) satisfy every row within tol? */
static bool check_point(const Build *b, const double *x, double tol, int *bad_row) {
    double *act = xcalloc((size_t)b->n_rows + 1, sizeof(double));
    for (int k = 0; k < b->ia.n; k++) act[b->ia.v[k]] += b->ar.v[k] * x[b->ja.v[k]];
    bool ok = true;
    for (int i = 1; i <= b->n_rows && ok; i++) {
        int ty = b->row_type.v[i - 1];
        double lb = b->row_lb.v[i - 1], ub = b->row_ub.v[i - 1];
        if ((ty == GLP_LO || ty == GLP_DB || ty == GLP_FX) && act[i] < lb - tol) ok = false;
        if ((ty == GLP_UP || ty == GLP_DB || ty == GLP_FX) && act[i] > ub + tol) ok = false;
        if (!ok) *bad_row = i;
    }
    free(act);
    return ok;
}

static void build_free(Build *b) {
    if (b->lp) glp_delete_prob(b->lp);
    VEC_FREE(b->ia), VEC_FREE(b->ja), VEC_FREE(b->ar);
    VEC_FREE(b->row_lb), VEC_FREE(b->row_ub), VEC_FREE(b->row_type);
}

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
static double memory_ub(const Dag *d, int64_t budget, bool relaxation) {
    int64_t g = 0;
    for (int i = 0; i < d->n; i++) g = gcd64(g, d->mem[i]);
    if (g <= 0) g = 1;
    double bf = (double)(budget / g * g), half = 0.5 * (double)g / (double)budget;
    if (relaxation) return (bf + 0.5 * (double)g) / (double)budget; /* a bound must not cut off any plan */
    return half >= 1e-5 ? (bf + 0.5 * (double)g) / (double)budget : bf / (double)budget * (1 - 2e-6);
}

/* ---- the watchdog: GLPK in a child process ---------------------------------------- */

typedef struct {
    glp_prob *lp;
    const int *report; /* columns whose values come back */
    int n_report;
    const double *heur; /* [n_cols + 1] an incumbent, or NULL */
    double deadline;
    bool lp_only, verbose;
} Job;

typedef struct {
    bool lp_solved;     /* the relaxation was solved to optimality */
    bool lp_infeasible; /* ... and has no solution */
    double lp_obj;
    bool have_sol;      /* an integer solution (or, lp_only, the LP's) */
    double obj, bound;
    double *vals;       /* [n_report] */
    bool optimal, infeasible, killed, timed_out;
    double heur_accepted; /* 1 if GLPK took the incumbent */
} JobResult;

/* child -> parent: type byte, payload length, doubles */
enum { MSG_BOUND = 'B', MSG_SOL = 'I', MSG_LP = 'L', MSG_RELAXED = 'C', MSG_DONE = 'D', MSG_HEUR = 'H' };

typedef struct {
    int fd;
    const Job *job;
    double last_obj, last_bound, last_bound_t;
    bool heur_done;
} Child;

static void write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(4);
        p += w, n -= (size_t)w;
    }
}

static void send_msg(int fd, char type, const double *nums, int n_nums, const double *vals, int n_vals) {
    int32_t len = (int32_t)((size_t)(n_nums + n_vals) * sizeof(double));
    write_all(fd, &type, 1);
    write_all(fd, &len, sizeof len);
    if (n_nums) write_all(fd, nums, (size_t)n_nums * sizeof(double));
    if (n_vals) write_all(fd, vals, (size_t)n_vals * sizeof(double));
}

static void send_solution(Child *c, char type, double obj, bool mip) {
    const Job *j = c->job;
    double *v = xcalloc((size_t)j->n_report + 1, sizeof(double));
    for (int k = 0; k < j->n_report; k++)
        v[k] = mip ? glp_mip_col_val(j->lp, j->report[k]) : glp_get_col_prim(j->lp, j->report[k]);
    send_msg(c->fd, type, &obj, 1, v, j->n_report);
    free(v);
}

static void child_error_hook(void *info) { _exit(3); }
static int child_quiet(void *info, const char *s) { return 1; }

static void child_callback(glp_tree *tree, void *info) {
    Child *c = info;
    const Job *j = c->job;
    if (glp_ios_reason(tree) == GLP_IHEUR && j->heur && !c->heur_done) {
        c->heur_done = true;
        double ok = glp_ios_heur_sol(tree, j->heur) == 0;
        send_msg(c->fd, MSG_HEUR, &ok, 1, NULL, 0);
    }
    if (glp_mip_status(j->lp) == GLP_FEAS) {
        double obj = glp_mip_obj_val(j->lp);
        if (obj < c->last_obj - 1e-9) {
            c->last_obj = obj;
            send_solution(c, MSG_SOL, obj, true);
        }
    }
    int best = glp_ios_best_node(tree);
    double now = acc_now_s();
    if (best) {
        double b = glp_ios_node_bound(tree, best);
        if (b > c->last_bound + 1e-9 && now - c->last_bound_t > 0.05) {
            c->last_bound = b, c->last_bound_t = now;
            send_msg(c->fd, MSG_BOUND, &b, 1, NULL, 0);
        }
    }
    if (now > j->deadline) glp_ios_terminate(tree);
}

static int ms_left(double deadline) {
    double s = deadline - acc_now_s();
    return s <= 0.001 ? 1 : s > 1e6 ? 1000000000 : (int)(s * 1000);
}

static void child_main(const Job *j, int fd) {
    glp_term_hook(child_quiet, NULL);
    glp_term_out(GLP_OFF);
    glp_error_hook(child_error_hook, NULL);
    Child c = {fd, j, INFINITY, -INFINITY, 0, false};
    double c0 = acc_now_s();
    glp_scale_prob(j->lp, GLP_SF_AUTO);
    glp_adv_basis(j->lp, 0); /* as glpsol does; the standard basis is far slower here */
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = ms_left(j->deadline);
    sm.presolve = GLP_ON; /* removes the many rows that fix S; far faster on these programs */
    sm.meth = GLP_DUALP; /* measured: the primal simplex is several times slower on these programs */
    int ret = glp_simplex(j->lp, &sm);
    if (ret == 0 && glp_get_status(j->lp) == GLP_OPT) { /* the same basis, now factorised for branch and bound */
        sm.presolve = GLP_OFF;
        sm.tm_lim = ms_left(j->deadline);
        ret = glp_simplex(j->lp, &sm);
    }
    int st = glp_get_status(j->lp);
    if (ret == GLP_EFAIL || ret == GLP_ESING || ret == GLP_ECOND) { /* retry from a crash basis */
        glp_adv_basis(j->lp, 0);
        ret = glp_simplex(j->lp, &sm);
        st = glp_get_status(j->lp);
    }
    if (j->verbose) fprintf(stderr, "acc plan:   LP: status %d in %.2f s\n", st, acc_now_s() - c0);
    /* the presolver reports an infeasible program as GLP_ENOPFS */
    double lp[3] = {ret == 0 && st == GLP_OPT, ret == GLP_ENOPFS || (ret == 0 && st == GLP_NOFEAS),
                    ret == 0 && st == GLP_OPT ? glp_get_obj_val(j->lp) : NAN};
    if (j->lp_only) {
        if (lp[0]) send_solution(&c, MSG_LP, lp[2], false);
        send_msg(fd, MSG_DONE, lp, 3, NULL, 0);
        return;
    }
    send_msg(fd, MSG_RELAXED, lp, 3, NULL, 0); /* the relaxation's outcome */
    if (!lp[0]) return;
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.presolve = GLP_OFF;
    io.tm_lim = ms_left(j->deadline);
    io.cb_func = child_callback;
    io.cb_info = &c;
    io.mir_cuts = GLP_ON; /* the memory rows are knapsacks */
    io.gmi_cuts = GLP_OFF;
    io.cov_cuts = GLP_ON;
    io.clq_cuts = GLP_OFF;
    io.fp_heur = GLP_OFF; /* tried on Checkmate's program: neither GLPK heuristic found a plan in 60 s */
    io.ps_heur = GLP_OFF;
    io.br_tech = GLP_BR_DTH;
    io.bt_tech = GLP_BT_BLB;
    ret = glp_intopt(j->lp, &io);
    if (j->verbose) fprintf(stderr, "acc plan:   MILP: return %d in %.2f s\n", ret, acc_now_s() - c0);
    int ms = glp_mip_status(j->lp);
    if (ms == GLP_FEAS || ms == GLP_OPT) {
        double obj = glp_mip_obj_val(j->lp);
        if (obj < c.last_obj - 1e-9 || ms == GLP_OPT) send_solution(&c, MSG_SOL, obj, true);
    }
    double done[3] = {ms == GLP_OPT && ret == 0, ms == GLP_NOFEAS, ret == GLP_ETMLIM || ret == GLP_ESTOP};
    send_msg(fd, MSG_DONE, done, 3, NULL, 0);
}

/* Run j; the result's vals are malloc'ed. False only if fork/pipe fail. */
static bool run_job(const Job *j, JobResult *r, char *err, size_t err_len) {
    memset(r, 0, sizeof *r);
    r->obj = r->bound = r->lp_obj = NAN;
    int fds[2];
    if (pipe(fds)) {
        snprintf(err, err_len, "pipe: %s", strerror(errno));
        return false;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        snprintf(err, err_len, "fork: %s", strerror(errno));
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(j, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    r->vals = xcalloc((size_t)j->n_report + 1, sizeof(double));
    VEC(char) buf = {0};
    bool done = false;
    for (;;) {
        double left = j->deadline + WATCHDOG_GRACE_S - acc_now_s();
        if (left <= 0) break;
        struct pollfd pf = {fds[0], POLLIN, 0};
        int pr = poll(&pf, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) continue; /* the deadline is checked above */
        char chunk[65536];
        ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            done = true;
            break;
        }
        for (ssize_t k = 0; k < got; k++) VEC_PUSH(buf, chunk[k]);
        /* complete messages */
        int pos = 0;
        while (buf.n - pos >= 5) {
            int32_t len;
            memcpy(&len, buf.v + pos + 1, sizeof len);
            if (buf.n - pos - 5 < len) break;
            char type = buf.v[pos];
            const char *pl = buf.v + pos + 5;
            double x[3] = {0, 0, 0};
            memcpy(x, pl, (size_t)(len < 24 ? len : 24));
            if (type == MSG_BOUND) {
                if (!(x[0] <= r->bound)) r->bound = x[0];
            } else if (type == MSG_HEUR) {
                r->heur_accepted = x[0];
            } else if (type == MSG_SOL || type == MSG_LP) {
                r->have_sol = true;
                r->obj = x[0];
                memcpy(r->vals, pl + sizeof(double), (size_t)j->n_report * sizeof(double));
            } else if (type == MSG_RELAXED) {
                r->lp_solved = x[0] != 0, r->lp_infeasible = x[1] != 0, r->lp_obj = x[2];
                if (r->lp_solved && !(r->bound >= x[2])) r->bound = x[2];
            } else if (type == MSG_DONE) {
                if (j->lp_only) {
                    r->lp_solved = x[0] != 0, r->lp_infeasible = x[1] != 0, r->lp_obj = x[2];
                } else {
                    r->optimal = x[0] != 0, r->infeasible = x[1] != 0, r->timed_out = x[2] != 0;
                }
            }
            pos += 5 + len;
        }
        memmove(buf.v, buf.v + pos, (size_t)(buf.n - pos));
        buf.n -= pos;
    }
    if (!done) {
        kill(pid, SIGKILL);
        r->killed = r->timed_out = true;
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (done && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) && j->verbose)
        fprintf(stderr, "acc plan: the GLPK child ended abnormally (status %d)\n", status);
    if (r->optimal && r->have_sol) r->bound = r->obj;
    VEC_FREE(buf);
    return true;
}

static void set_status(DagPlan *p, const JobResult *r) {
    const char *s = r->optimal && r->have_sol ? "optimal"
                    : r->infeasible || r->lp_infeasible ? "infeasible"
                    : r->have_sol ? (r->timed_out ? "time_limit" : "feasible")
                                  : "no_solution";
    snprintf(p->status, sizeof p->status, "%s", s);
}

static void plan_from_staged(DagPlan *p, const Staged *s) {
    free(p->ev);
    p->ev = xcalloc((size_t)s->ev.n, sizeof(int));
    memcpy(p->ev, s->ev.v, (size_t)s->ev.n * sizeof(int));
    p->n_ev = s->ev.n;
}

static bool emit(glp_prob *lp, const char *path, char *err, size_t err_len) {
    if (!path) return true;
    glp_term_out(GLP_OFF);
    int rc = glp_write_lp(lp, NULL, path);
    glp_term_out(GLP_ON);
    if (rc) snprintf(err, err_len, "cannot write the integer program to '%s'", path);
    return rc == 0;
}

/* ---- Checkmate's formulation ------------------------------------------------------- */

typedef struct {
    int n;
    int r0, s0; /* R[t,i] = r0 + t(t+1)/2 + i (i <= t); S[t,i] = s0 + t(t-1)/2 + i (i < t) */
} CmIndex;

static int cm_r(const CmIndex *x, int t, int i) { return x->r0 + t * (t + 1) / 2 + i; }
static int cm_s(const CmIndex *x, int t, int i) { return x->s0 + t * (t - 1) / 2 + i; }

static void build_checkmate(const Dag *d, int64_t budget, bool integral, bool names, Build *b, CmIndex *x) {
    int n = d->n;
    double ub = memory_ub(d, budget, !integral), sc = (double)budget;
    char nm[64];
    b->lp = glp_create_prob();
    b->names = names;
    glp_set_prob_name(b->lp, "checkmate");
    glp_set_obj_dir(b->lp, GLP_MIN);
    x->n = n;
    x->r0 = b->n_cols + 1;
    for (int t = 0; t < n; t++)
        for (int i = 0; i <= t; i++) {
            snprintf(nm, sizeof nm, "R_%d_%d", t, i);
            int j = integral ? add_col(b, nm, true, i == t ? 1 : 0, 1, d->cost[i])
                             : add_col(b, nm, false, i == t ? 1 : 0, 1, d->cost[i]);
            ACC_ASSERT(j == cm_r(x, t, i));
        }
    x->s0 = b->n_cols + 1;
    for (int t = 1; t < n; t++)
        for (int i = 0; i < t; i++) {
            snprintf(nm, sizeof nm, "S_%d_%d", t, i);
            add_col(b, nm, integral, 0, 1, 0);
        }
    /* S[t+1,i] <= S[t,i] + R[t,i] */
    for (int t = 0; t + 1 < n; t++)
        for (int i = 0; i <= t; i++) {
            int row = add_row(b, GLP_UP, 0, 0);
            coef(b, row, cm_s(x, t + 1, i), 1);
            if (i < t) coef(b, row, cm_s(x, t, i), -1);
            coef(b, row, cm_r(x, t, i), -1);
        }
    /* R[t,v] <= R[t,u] + S[t,u] for every edge u -> v, v <= t */
    for (int t = 0; t < n; t++)
        for (int v = 0; v <= t; v++)
            for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) {
                int u = d->in[q], row = add_row(b, GLP_UP, 0, 0);
                coef(b, row, cm_r(x, t, v), 1);
                coef(b, row, cm_r(x, t, u), -1);
                coef(b, row, cm_s(x, t, u), -1);
            }
    /* memory: U[t,0] = R[t,0] m_0 + sum S[t,i] m_i; U[t,k+1] = U[t,k] + R[t,k+1] m_{k+1} - freed(k) */
    for (int t = 0; t < n; t++) {
        int prev_u = 0;
        for (int k = 0; k <= t; k++) {
            snprintf(nm, sizeof nm, "U_%d_%d", t, k);
            int u = add_col(b, nm, false, 0, ub, 0);
            int row = add_row(b, GLP_FX, 0, 0);
            coef(b, row, u, 1);
            coef(b, row, cm_r(x, t, k), -(double)d->mem[k] / sc);
            if (k == 0) {
                for (int i = 0; i < t; i++) coef(b, row, cm_s(x, t, i), -(double)d->mem[i] / sc);
            } else {
                coef(b, row, prev_u, -1);
                /* FREE[t,i,k-1] for i in DEPS[k-1] and k-1 itself */
                int kk = k - 1;
                for (int q = d->in_off[kk]; q <= d->in_off[kk + 1]; q++) {
                    int i = q < d->in_off[kk + 1] ? d->in[q] : kk;
                    snprintf(nm, sizeof nm, "FREE_%d_%d_%d", t, i, kk);
                    int f = add_col(b, nm, integral, 0, 1, 0);
                    coef(b, row, f, (double)d->mem[i] / sc);
                    /* hazards = 1 - R[t,kk] + S[t+1,i] + sum_{j user of i, kk < j <= t} R[t,j] */
                    int users = 0;
                    for (int w = d->out_off[i]; w < d->out_off[i + 1]; w++) users += d->out[w] > kk && d->out[w] <= t;
                    double kappa = 1 + (t + 1 < n) + users;
                    int lo = add_row(b, GLP_LO, 0, 0);  /* 1 - FREE <= hazards */
                    int hi = add_row(b, GLP_UP, 0, kappa - 1); /* kappa (1 - FREE) >= hazards */
                    coef(b, lo, f, 1), coef(b, hi, f, kappa);
                    coef(b, lo, cm_r(x, t, kk), -1), coef(b, hi, cm_r(x, t, kk), -1);
                    if (t + 1 < n) coef(b, lo, cm_s(x, t + 1, i), 1), coef(b, hi, cm_s(x, t + 1, i), 1);
                    for (int w = d->out_off[i]; w < d->out_off[i + 1]; w++) {
                        int jn = d->out[w];
                        if (jn > kk && jn <= t) coef(b, lo, cm_r(x, t, jn), 1), coef(b, hi, cm_r(x, t, jn), 1);
                    }
                }
            }
            prev_u = u;
        }
    }
    build_finish(b);
}

/* Checkmate's R from a rounded S: R[t,t] = 1; compute i in stage t if S
 * starts keeping it at t+1; then, from the last node of the stage down,
 * compute every input that is neither computed nor kept. */
static void r_from_s(const Dag *d, const uint8_t *S, Staged *out) {
    int n = d->n;
    uint8_t *R = xcalloc((size_t)n, 1);
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
static double *cm_point(const Dag *d, const CmIndex *x, const Build *b, const Staged *s, int64_t budget) {
    int n = d->n, n_ev = s->ev.n;
    double *v = xcalloc((size_t)b->n_cols + 1, sizeof(double));
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
    Build b = {0};
    CmIndex x;
    build_checkmate(a->d, a->budget, true, false, &b, &x);
    double *v = cm_point(a->d, &x, &b, a->s, a->budget);
    *a->bad_row = -1;
    a->ok = v && check_point(&b, v, 1e-6, a->bad_row);
    free(v);
    build_free(&b);
}

bool dag_checkmate_accepts(const Dag *d, int64_t budget, const Staged *s, int *bad_row) {
    Accepts a = {d, budget, s, bad_row, false};
    char err[200];
    return glpk_guarded(checkmate_accepts, &a, err, sizeof err) && a.ok; /* a GLPK failure: not accepted */
}

bool dag_solve_checkmate(const Dag *d, int64_t budget, bool integral, double deadline, const char *emit_lp,
                         bool verbose, DagPlan *p, char *err, size_t err_len) {
    int n = d->n;
    Build b = {0};
    CmIndex x;
    double t0 = acc_now_s();
    p->bound_scope = "checkmate";
    if ((long)n * (n + 1) / 2 > MAX_STAGE_PAIRS) {
        snprintf(p->status, sizeof p->status, "too_large");
        if (verbose) fprintf(stderr, "acc plan: checkmate: %d nodes, too large a program to build\n", n);
        return true;
    }
    build_checkmate(d, budget, integral, emit_lp != NULL, &b, &x);
    p->n_binaries = b.n_bin;
    p->n_rows = b.n_rows;
    p->bound_scope = "checkmate";
    if (verbose)
        fprintf(stderr, "acc plan: checkmate %s: %d columns (%d binary), %d rows, built in %.2f s\n",
                integral ? "MILP" : "LP", b.n_cols, b.n_bin, b.n_rows, acc_now_s() - t0);
    if (!emit(b.lp, emit_lp, err, err_len)) {
        build_free(&b);
        return false;
    }
    Staged s = {0};
    bool ok = true;
    if (integral) {
        int nr = n * (n + 1) / 2;
        int *report = xcalloc((size_t)nr, sizeof(int));
        for (int k = 0; k < nr; k++) report[k] = x.r0 + k;
        Job j = {b.lp, report, nr, NULL, deadline, false, verbose};
        JobResult r;
        ok = run_job(&j, &r, err, err_len);
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
        int *report = xcalloc((size_t)ns + 1, sizeof(int));
        for (int k = 0; k < ns; k++) report[k] = x.s0 + k;
        uint8_t *S = xcalloc((size_t)n * (size_t)n, 1);
        static const double shrink[] = {1.0, 0.9, 0.8, 0.7};
        double best = INFINITY;
        bool any_lp = false;
        for (size_t a = 0; a < sizeof shrink / sizeof *shrink && ok && !isfinite(best); a++) {
            if (a > 0) { /* same program, tighter memory rows */
                build_free(&b);
                b = (Build){0};
                build_checkmate(d, (int64_t)(shrink[a] * (double)budget), false, false, &b, &x);
            }
            Job j = {b.lp, report, ns, NULL, deadline, true, verbose};
            JobResult r;
            ok = run_job(&j, &r, err, err_len);
            if (ok && a == 0) {
                p->bound = r.lp_solved ? r.lp_obj : NAN; /* the relaxation bounds Checkmate's optimum */
                snprintf(p->status, sizeof p->status, "%s",
                         r.lp_solved ? "feasible" : r.lp_infeasible ? "infeasible" : "no_solution");
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
                        staged_clear(&s);
                        for (int e = 0; e < trial.ev.n; e++) staged_push(&s, trial.stage.v[e], trial.ev.v[e]);
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
    build_free(&b);
    return ok;
}

/* ---- acc's compact program ---------------------------------------------------------- */

#define ACC_SUPPORT_CAP 4000 /* binaries: GLPK proves optima of this size in seconds */

typedef struct {
    int node, col;
} FreeCol;

typedef VEC(FreeCol) FreeVec;

typedef struct {
    int n;
    IntVec *sup;    /* [n] nodes that may be recomputed in stage t, ascending */
    int **rcol;     /* [n][|sup[t]|] their R columns */
    int *s_hi;      /* [n] last stage at which node i may be read */
    int *s_col0;    /* S[t,i] = s_col0[i] + t - (i + 1), t in (i, s_hi[i]] */
    int **ucol;     /* [n][|sup[t]| + 1] U after each event of stage t */
    int **free_off; /* [n][|sup[t]| + 1] FREE after event a: frees[free_off[t][a] .. free_off[t][a+1]) */
    FreeVec frees;
} AccIndex;

static int acc_s(const AccIndex *x, int t, int i) {
    return t > i && t <= x->s_hi[i] ? x->s_col0[i] + t - (i + 1) : 0;
}

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
    int *depth = xcalloc((size_t)n, sizeof(int)), *queue = xcalloc((size_t)n, sizeof(int));
    uint8_t *in_set = xcalloc((size_t)n, 1);
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
    for (int t = 0; t < x->n; t++) {
        VEC_FREE(x->sup[t]);
        if (x->rcol) free(x->rcol[t]);
        if (x->ucol) free(x->ucol[t]);
        if (x->free_off) free(x->free_off[t]);
    }
    free(x->sup), free(x->rcol), free(x->ucol), free(x->free_off), free(x->s_hi), free(x->s_col0);
    VEC_FREE(x->frees);
}

/* relaxed: memory only at each stage's own event, exactly (what is read
 * there plus what is kept into the next stage): a relaxation of the stage
 * model, for a lower bound over every staged plan; no FREE, no U. */
static void build_acc(const Dag *d, int64_t budget, AccIndex *x, Build *b, bool names, bool relaxed) {
    int n = d->n;
    double ub = memory_ub(d, budget, relaxed), sc = (double)budget;
    char nm[64];
    b->lp = glp_create_prob();
    b->names = names;
    glp_set_prob_name(b->lp, relaxed ? "acc_relaxation" : "acc");
    glp_set_obj_dir(b->lp, GLP_MIN);
    double base = 0;
    for (int i = 0; i < n; i++) base += d->cost[i];
    glp_set_obj_coef(b->lp, 0, base); /* every node runs once */
    x->rcol = xcalloc((size_t)n, sizeof(int *));
    x->ucol = xcalloc((size_t)n, sizeof(int *));
    x->free_off = xcalloc((size_t)n, sizeof(int *));
    x->s_hi = xcalloc((size_t)n, sizeof(int));
    x->s_col0 = xcalloc((size_t)n, sizeof(int));
    /* R on the support; S over the stages where a node can still be read */
    for (int i = 0; i < n; i++) x->s_hi[i] = i;
    for (int t = 0; t < n; t++) {
        x->rcol[t] = xcalloc((size_t)x->sup[t].n + 1, sizeof(int));
        for (int a = 0; a < x->sup[t].n; a++) {
            int i = x->sup[t].v[a];
            snprintf(nm, sizeof nm, "R_%d_%d", t, i);
            x->rcol[t][a] = add_col(b, nm, true, 0, 1, d->cost[i]);
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
            add_col(b, nm, false, 0, 1, 0);
        }
    }
    /* S[t+1,i] <= S[t,i] + R[t,i]  (R[i,i] = 1 makes t = i trivial) */
    for (int i = 0; i < n; i++)
        for (int t = i + 1; t < x->s_hi[i]; t++) {
            int row = add_row(b, GLP_UP, 0, 0);
            coef(b, row, acc_s(x, t + 1, i), 1);
            coef(b, row, acc_s(x, t, i), -1);
            int r = acc_r(x, t, i);
            if (r) coef(b, row, r, -1);
        }
    /* S[t,i] + R[t,i] <= 1: never keep and recompute */
    for (int t = 0; t < n; t++)
        for (int a = 0; a < x->sup[t].n; a++) {
            int s = acc_s(x, t, x->sup[t].v[a]);
            if (!s) continue;
            int row = add_row(b, GLP_UP, 0, 1);
            coef(b, row, s, 1), coef(b, row, x->rcol[t][a], 1);
        }
    /* R[t,j] <= R[t,i] + S[t,i] for each input i of an event j (j = t: R = 1) */
    for (int t = 0; t < n; t++)
        for (int a = 0; a <= x->sup[t].n; a++) {
            bool last = a == x->sup[t].n;
            int j = last ? t : x->sup[t].v[a];
            for (int q = d->in_off[j]; q < d->in_off[j + 1]; q++) {
                int i = d->in[q], ri = acc_r(x, t, i), si = acc_s(x, t, i);
                int row = last ? add_row(b, GLP_LO, 1, 0) : add_row(b, GLP_UP, 0, 0);
                double sign = last ? 1 : -1;
                if (!last) coef(b, row, x->rcol[t][a], 1);
                if (ri) coef(b, row, ri, sign);
                if (si) coef(b, row, si, sign);
            }
        }
    for (int t = 0; t < n && relaxed; t++) {
        int row = add_row(b, GLP_UP, 0, ub - (double)d->mem[t] / sc);
        for (int i = 0; i < t; i++) {
            if (reads(d, t, i)) {
                b->row_ub.v[row - 1] -= (double)d->mem[i] / sc;
                continue;
            }
            int s1 = acc_s(x, t + 1, i);
            if (s1) coef(b, row, s1, (double)d->mem[i] / sc);
        }
    }
    /* memory after each event of stage t: U = kept + computed so far - freed so far */
    for (int t = 0; t < n && !relaxed; t++) {
        int m = x->sup[t].n, prev_u = 0;
        x->ucol[t] = xcalloc((size_t)m + 1, sizeof(int));
        x->free_off[t] = xcalloc((size_t)m + 2, sizeof(int));
        for (int a = 0; a <= m; a++) {
            int k = a < m ? x->sup[t].v[a] : t;
            snprintf(nm, sizeof nm, "U_%d_%d", t, k);
            int u = x->ucol[t][a] = add_col(b, nm, false, 0, ub, 0);
            double mk = (double)d->mem[k] / sc;
            int row = a == m ? add_row(b, GLP_FX, mk, mk) : add_row(b, GLP_FX, 0, 0);
            coef(b, row, u, 1);
            if (a < m) coef(b, row, x->rcol[t][a], -mk);
            x->free_off[t][a] = x->frees.n;
            if (a == 0) {
                for (int i = 0; i < t; i++) {
                    int s = acc_s(x, t, i);
                    if (s) coef(b, row, s, -(double)d->mem[i] / sc);
                }
            } else {
                coef(b, row, prev_u, -1);
                /* frees after the previous event kp, a recomputation */
                int kp = x->sup[t].v[a - 1], rk = x->rcol[t][a - 1];
                for (int q = d->in_off[kp]; q <= d->in_off[kp + 1]; q++) {
                    int i = q < d->in_off[kp + 1] ? d->in[q] : kp;
                    if (reads(d, t, i)) continue; /* node t reads it later in the stage */
                    snprintf(nm, sizeof nm, "F_%d_%d_%d", t, i, kp);
                    int f = add_col(b, nm, false, 0, 1, 0);
                    VEC_PUSH(x->frees, ((FreeCol){i, f}));
                    coef(b, row, f, (double)d->mem[i] / sc);
                    int r1 = add_row(b, GLP_UP, 0, 0); /* FREE <= R[t,kp] */
                    coef(b, r1, f, 1), coef(b, r1, rk, -1);
                    int s1 = acc_s(x, t + 1, i);
                    if (s1) { /* FREE <= 1 - S[t+1,i] */
                        int r2 = add_row(b, GLP_UP, 0, 1);
                        coef(b, r2, f, 1), coef(b, r2, s1, 1);
                    }
                    for (int c = a; c < m; c++) { /* FREE <= 1 - R[t,j] for a later reader j */
                        if (!reads(d, x->sup[t].v[c], i)) continue;
                        int r3 = add_row(b, GLP_UP, 0, 1);
                        coef(b, r3, f, 1), coef(b, r3, x->rcol[t][c], 1);
                    }
                }
            }
            prev_u = u;
        }
        x->free_off[t][m + 1] = x->frees.n;
    }
    build_finish(b);
}

/* Every column's value for the staged schedule s: its R, the least S (kept
 * exactly while a later event reads the copy), the exact FREE, U by the
 * recurrence. NULL if s uses a pair outside the support. */
static double *acc_point(const Dag *d, const AccIndex *x, const Build *b, const Staged *s) {
    int n = d->n, n_ev = s->ev.n;
    double *v = xcalloc((size_t)b->n_cols + 1, sizeof(double));
    int *inst = xcalloc((size_t)n, sizeof(int)), *last = staged_last_reads(d, s);
    int *in_stage = xcalloc((size_t)n, sizeof(int)); /* node -> its event in the current stage, -1 */
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
    x.sup = xcalloc((size_t)n, sizeof(IntVec));
    long size;
    int k = choose_support(d, cap, inc, x.sup, &size);
    Build b = {0};
    build_acc(d, budget, &x, &b, emit_lp != NULL, relaxed);
    memset(out, 0, sizeof *out);
    out->obj = out->bound = out->lp = NAN;
    out->size = size;
    out->n_bin = b.n_bin, out->n_rows = b.n_rows;
    bool full = k == 1 << 30;
    if (verbose)
        fprintf(stderr, "acc plan: acc %s: support %s%d hops (%ld pairs), %d columns (%d binary), %d rows\n",
                relaxed ? "bound LP" : "MILP", full ? "every earlier node, " : "", full ? n : k, size, b.n_cols,
                b.n_bin, b.n_rows);
    if (emit_lp) {
        bool ok = emit(b.lp, emit_lp, err, err_len);
        build_free(&b);
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
            if (!check_point(&b, heur, 1e-6, &bad)) {
                if (verbose) fprintf(stderr, "acc plan: the incumbent violates row %d; not installed\n", bad);
                free(heur);
                heur = NULL;
            }
        }
    }
    /* what comes back: R (the schedule), or for the relaxation every column */
    int *report = xcalloc((size_t)b.n_cols + 1, sizeof(int));
    int nr = 0;
    if (relaxed)
        for (int c = 1; c <= b.n_cols; c++) report[nr++] = c;
    else
        for (int t = 0; t < n; t++)
            for (int a = 0; a < x.sup[t].n; a++) report[nr++] = x.rcol[t][a];
    Job j = {b.lp, report, nr, heur, deadline, relaxed, verbose};
    JobResult r;
    bool ok = run_job(&j, &r, err, err_len);
    if (ok) {
        DagPlan tmp = {0};
        set_status(&tmp, &r);
        snprintf(out->status, sizeof out->status, "%s",
                 relaxed ? (r.lp_solved ? "bound" : r.lp_infeasible ? "infeasible" : "no_bound") : tmp.status);
        out->lp = r.lp_obj;
        out->bound = relaxed ? r.lp_obj : r.bound;
        out->optimal = !relaxed && r.optimal && r.have_sol;
        if (relaxed && r.have_sol && r.lp_solved) {
            out->keep = xcalloc((size_t)n * (size_t)n, sizeof(double));
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
                    relaxed ? r.lp_obj : r.obj, !heur ? "none" : r.heur_accepted ? "accepted" : "rejected",
                    acc_now_s() - t0);
    }
    free(r.vals);
    free(report), free(heur);
    build_free(&b);
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
    static const long caps[] = {400, 1200, 3000};
    size_t ci = 0;
    bool proven = false, any = false;
    snprintf(p->status, sizeof p->status, "%s", inc ? "feasible" : "no_solution");
    while (ci < sizeof caps / sizeof *caps && acc_now_s() < deadline - 0.05) {
        double left = deadline - acc_now_s();
        double slice = ci + 1 < sizeof caps / sizeof *caps ? left / 2 : left;
        AccRun r;
        if (!acc_run(d, budget, caps[ci], cur.ev.n ? &cur : NULL, acc_now_s() + slice, false, verbose, &r, err,
                     err_len, NULL))
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
            staged_clear(&cur);
            for (int e = 0; e < r.sol.ev.n; e++) staged_push(&cur, r.sol.stage.v[e], r.sol.ev.v[e]);
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
                IntVec *sup = xcalloc((size_t)d->n, sizeof(IntVec));
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
