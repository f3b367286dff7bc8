/* lp.c - the one GLPK helper (lp.h): GLPK without abort(), building a
 * program, the node limit and answer of an in-process solve, GLPK in a
 * child process under a watchdog, writing a program.
 *
 * GLPK reports an internal error (a failed assertion, no memory) or a misuse
 * of its API (zero columns, an index out of range) through glp_error_hook:
 * its message goes to the terminal hook, then the hook runs, then abort().
 * lp_guarded's hook longjmps back to it and frees GLPK's environment, as
 * GLPK's manual prescribes for a hook that does not return. GLPK keeps one
 * environment per thread, so the run in progress is per thread too. In the
 * watchdog's child, GLPK's output is dropped and an error ends the child
 * (the parent keeps what it had reported).
 */
#include "lp.h"

#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    jmp_buf back;
    char line[2][200]; /* the last two complete lines GLPK printed, and the one in progress */
    char cur[200];
} Guard;

static _Thread_local Guard *active; /* the outermost run of this thread, NULL if none */

/* GLPK's terminal output: kept (the last lines), never printed. */
static int capture(void *info, const char *s) {
    Guard *g = info;
    for (; *s; s++) {
        size_t n = strlen(g->cur);
        if (*s == '\n') {
            memcpy(g->line[0], g->line[1], sizeof g->line[0]);
            memcpy(g->line[1], g->cur, sizeof g->line[1]);
            g->cur[0] = 0;
        } else if (n + 1 < sizeof g->cur) {
            g->cur[n] = *s, g->cur[n + 1] = 0;
        }
    }
    return 1;
}

static void on_error(void *info) {
    Guard *g = info;
    longjmp(g->back, 1);
}

bool lp_guarded(void (*body)(void *arg), void *arg, char *err, size_t err_len) {
    if (active) {
        body(arg);
        return true;
    }
    Guard g;
    memset(&g, 0, sizeof g);
    active = &g;
    glp_term_hook(capture, &g);
    glp_error_hook(on_error, &g);
    if (setjmp(g.back)) {
        active = NULL;
        glp_free_env(); /* hooks included: the next call of GLPK starts afresh */
        /* line[0]: GLPK's message; line[1]: "Error detected in file ... at line ..." */
        snprintf(err, err_len, "GLPK failed: %s (%s)", g.line[0][0] ? g.line[0] : "no message", g.line[1]);
        return false;
    }
    body(arg);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    active = NULL;
    return true;
}

/* ---- building a program ---------------------------------------------------------- */

void lp_build_init(LpBuild *b, const char *name, bool names) {
    memset(b, 0, sizeof *b);
    b->lp = glp_create_prob();
    b->names = names;
    if (name) glp_set_prob_name(b->lp, name);
    glp_set_obj_dir(b->lp, GLP_MIN);
}

int lp_col(LpBuild *b, const char *name, bool integer, double lb, double ub, double obj) {
    int j = ++b->n_cols;
    glp_add_cols(b->lp, 1);
    if (integer) glp_set_col_kind(b->lp, j, GLP_IV), b->n_int++;
    glp_set_col_bnds(b->lp, j, lb == ub ? GLP_FX : ub == INFINITY ? GLP_LO : GLP_DB, lb, ub);
    if (obj != 0) glp_set_obj_coef(b->lp, j, obj);
    if (b->names && name) glp_set_col_name(b->lp, j, name);
    return j;
}

int lp_row(LpBuild *b, int type, double lb, double ub) {
    int i = ++b->n_rows;
    VEC_PUSH(b->row_type, type);
    VEC_PUSH(b->row_lb, lb);
    VEC_PUSH(b->row_ub, ub);
    return i;
}

void lp_coef(LpBuild *b, int row, int col, double v) {
    ACC_ASSERT(row > b->n_loaded && row <= b->n_rows && col >= 1 && col <= b->n_cols);
    if (v == 0) return;
    VEC_PUSH(b->ia, row);
    VEC_PUSH(b->ja, col);
    VEC_PUSH(b->ar, v);
}

/* The first load gives GLPK every coefficient at once (glp_load_matrix);
 * a later one gives it each new row (glp_set_mat_row), its coefficients in
 * the order lp_coef had them. Either way GLPK's list of a row holds its
 * coefficients in reverse order of lp_coef, and the list of a column its
 * rows last first: the same matrix, element for element, so the same
 * answers. */
void lp_load(LpBuild *b) {
    int m0 = b->n_loaded, nz0 = b->nz_loaded, nz = b->ia.n - nz0, m = b->n_rows - m0;
    if (m) glp_add_rows(b->lp, m); /* GLPK rejects adding none */
    for (int i = m0; i < b->n_rows; i++)
        glp_set_row_bnds(b->lp, i + 1, b->row_type.v[i], b->row_lb.v[i], b->row_ub.v[i]);
    /* GLPK's arrays are 1-based */
    int *ia = acc_xcalloc((size_t)nz + 1, sizeof(int)), *ja = acc_xcalloc((size_t)nz + 1, sizeof(int));
    double *ar = acc_xcalloc((size_t)nz + 1, sizeof(double));
    if (m0 == 0) {
        if (nz) {
            memcpy(ia + 1, b->ia.v, (size_t)nz * sizeof(int));
            memcpy(ja + 1, b->ja.v, (size_t)nz * sizeof(int));
            memcpy(ar + 1, b->ar.v, (size_t)nz * sizeof(double));
        }
        glp_load_matrix(b->lp, nz, ia, ja, ar);
    } else { /* the new rows' coefficients grouped by row, each row's in order */
        int *first = acc_xcalloc((size_t)m + 2, sizeof(int)); /* [r]: where row m0 + r starts in ja, ar */
        int *fill = acc_xcalloc((size_t)m + 2, sizeof(int));
        for (int k = nz0; k < b->ia.n; k++) first[b->ia.v[k] - m0 + 1]++;
        first[1] = 1;
        for (int r = 2; r <= m + 1; r++) first[r] += first[r - 1];
        memcpy(fill, first, ((size_t)m + 2) * sizeof(int));
        for (int k = nz0; k < b->ia.n; k++) {
            int at = fill[b->ia.v[k] - m0]++;
            ja[at] = b->ja.v[k], ar[at] = b->ar.v[k];
        }
        for (int r = 1; r <= m; r++) /* glp_set_mat_row reads ind[1..len] */
            glp_set_mat_row(b->lp, m0 + r, first[r + 1] - first[r], ja + first[r] - 1, ar + first[r] - 1);
        free(first), free(fill);
    }
    free(ia), free(ja), free(ar);
    b->n_loaded = b->n_rows, b->nz_loaded = b->ia.n;
}

/* Does x (1-based, every column) satisfy every row within tol? */
bool lp_check_point(const LpBuild *b, const double *x, double tol, int *bad_row) {
    double *act = acc_xcalloc((size_t)b->n_rows + 1, sizeof(double));
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

void lp_build_free(LpBuild *b) {
    if (b->lp) glp_delete_prob(b->lp);
    VEC_FREE(b->ia), VEC_FREE(b->ja), VEC_FREE(b->ar);
    VEC_FREE(b->row_lb), VEC_FREE(b->row_ub), VEC_FREE(b->row_type);
    memset(b, 0, sizeof *b);
}

/* ---- solving in process ---------------------------------------------------------- */

void lp_node_limit(glp_tree *tree, void *left) {
    int *n = left;
    if (glp_ios_reason(tree) == GLP_ISELECT && --*n <= 0) glp_ios_terminate(tree);
}

bool lp_mip_found(glp_prob *lp, int rc) {
    return (rc == 0 || rc == GLP_ESTOP) && (glp_mip_status(lp) == GLP_OPT || glp_mip_status(lp) == GLP_FEAS);
}

int lp_intopt_from_basis(glp_prob *lp, glp_iocp *io) {
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    if (glp_simplex(lp, &sm) != 0 || glp_get_status(lp) != GLP_OPT) return LP_NO_BASIS;
    io->presolve = GLP_OFF;
    return glp_intopt(lp, io);
}

bool lp_write(glp_prob *lp, const char *path, char *err, size_t err_len) {
    if (!path) return true;
    glp_term_out(GLP_OFF);
    int rc = glp_write_lp(lp, NULL, path);
    glp_term_out(GLP_ON);
    if (rc) snprintf(err, err_len, "cannot write the integer program to '%s'", path);
    return rc == 0;
}

/* ---- the watchdog: GLPK in a child process ---------------------------------------- */

#define WATCHDOG_GRACE_S 1.5

/* child -> parent: type byte, payload length, doubles */
enum { MSG_BOUND = 'B', MSG_SOL = 'I', MSG_LP = 'L', MSG_RELAXED = 'C', MSG_DONE = 'D', MSG_HEUR = 'H' };

typedef struct {
    int fd;
    const LpJob *job;
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
    const LpJob *j = c->job;
    double *v = acc_xcalloc((size_t)j->n_report + 1, sizeof(double));
    for (int k = 0; k < j->n_report; k++)
        v[k] = mip ? glp_mip_col_val(j->lp, j->report[k]) : glp_get_col_prim(j->lp, j->report[k]);
    send_msg(c->fd, type, &obj, 1, v, j->n_report);
    free(v);
}

static void child_error_hook(void *info) { _exit(3); }
static int child_quiet(void *info, const char *s) { return 1; }

static void child_callback(glp_tree *tree, void *info) {
    Child *c = info;
    const LpJob *j = c->job;
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

static void child_main(const LpJob *j, int fd) {
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
    sm.meth = GLP_DUALP;  /* measured: the primal simplex is several times slower on these programs */
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
    /* best local bound proves; in a neighbourhood around the incumbent the best projection dives
     * to better plans first (the VGG U-Net at 0.3983 of its peak: 37575 -> 35970 -> 35680 in two
     * neighbourhoods, where the best local bound improves nothing in 30 s) */
    io.bt_tech = j->improve ? GLP_BT_BPH : GLP_BT_BLB;
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

bool lp_run_watched(const LpJob *j, LpResult *r, char *err, size_t err_len) {
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
    r->vals = acc_xcalloc((size_t)j->n_report + 1, sizeof(double));
    VEC(char) buf = {0};
    bool done = false;
    for (;;) {
        double left = j->deadline + (j->grace_s > 0 ? j->grace_s : WATCHDOG_GRACE_S) - acc_now_s();
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
