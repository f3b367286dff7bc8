/* lp.h - the one GLPK helper every integer program of acc uses (lp.c):
 * running GLPK without abort() with its terminal output captured
 * (lp_guarded), building a program from (row, column, value) triplets, rows
 * added after a solve too (LpBuild), the node limit and the answer of an
 * in-process branch and bound (lp_node_limit, lp_mip_found), solving one in
 * a child process under a watchdog (lp_run_watched), and writing one in
 * CPLEX LP format (lp_write). Used by the model planner (planner/), which
 * solves in process under lp_guarded with limits that are counts (nodes,
 * iterations: the same plan on a loaded machine) and warm starts, and by
 * the planner of published graphs (dag/), whose large programs run under
 * the watchdog. Part of passes/, not of its interface (passes.h).
 */
#ifndef ACC_LP_H
#define ACC_LP_H

#include <glpk.h>
#include <stdbool.h>
#include <stddef.h>

#include "ir.h"

/* ---- GLPK without abort() -------------------------------------------------------- */

/* Run body(arg) with GLPK's terminal output captured (not printed) and an
 * error hook installed. GLPK answers an internal error or a misuse of its
 * API by printing a message and calling abort(); here the hook jumps back
 * instead, GLPK's environment is freed (every problem object with it: the
 * body's problem pointers are dangling then) and false is returned with
 * GLPK's message in err. Memory the body took from malloc and had not freed
 * yet is lost on that path. A run inside a run is the outer one's: an error
 * ends the outermost run, whose problems are gone too. */
bool lp_guarded(void (*body)(void *arg), void *arg, char *err, size_t err_len);


/* ---- building a program ---------------------------------------------------------- */

/* A program under construction: columns go to GLPK at once, rows and their
 * coefficients are kept (for lp_check_point too) and given to GLPK by
 * lp_load. Rows may be added after a load (and a solve): the next lp_load
 * appends them, so a cutting-plane loop adds its cuts through b too.
 * lp_build_init starts one; lp_build_free deletes lp too. After a failed
 * lp_guarded, GLPK's environment is gone and lp with it: set lp to NULL
 * before lp_build_free. */
typedef struct {
    glp_prob *lp;
    VEC(int) ia;
    VEC(int) ja;
    VEC(double) ar;
    VEC(double) row_lb, row_ub; /* [row] for checking an incumbent */
    VEC(int) row_type;
    int n_cols, n_rows, n_int;
    int n_loaded, nz_loaded; /* rows and coefficients given to GLPK */
    bool names;
} LpBuild;

/* An empty minimisation; name: the program's (NULL: none); names: keep the
 * columns' names too (for lp_write). */
void lp_build_init(LpBuild *b, const char *name, bool names);
/* A column (1-based index returned): integer, or continuous, in [lb, ub]
 * (ub INFINITY: no upper bound); obj: its objective coefficient; name kept
 * when b->names. */
int lp_col(LpBuild *b, const char *name, bool integer, double lb, double ub, double obj);
/* A row of GLPK type (GLP_LO, GLP_UP, GLP_DB, GLP_FX) and bounds, filled by
 * lp_coef (before the lp_load that gives it to GLPK). */
int lp_row(LpBuild *b, int type, double lb, double ub);
void lp_coef(LpBuild *b, int row, int col, double v);
/* Give GLPK the rows not given yet, and their coefficients. The matrix GLPK
 * holds is the same, row by row and column by column in the same order,
 * whether the rows come in one load or in several. */
void lp_load(LpBuild *b);
/* Does x (1-based, every column) satisfy every row within tol? bad_row: the first that does not. */
bool lp_check_point(const LpBuild *b, const double *x, double tol, int *bad_row);
void lp_build_free(LpBuild *b);
/* ---- solving in process ---------------------------------------------------------- */

/* A glp_iocp callback (cb_info: an int): one less of *left for each
 * subproblem GLPK selects, and branch and bound stopped when none is left.
 * A node limit, unlike GLPK's time limit, gives the same answer on a loaded
 * machine. */
void lp_node_limit(glp_tree *tree, void *left);
/* Whether glp_intopt, returning rc, left an integer solution: optimal, or
 * the best found when a callback stopped it. */
bool lp_mip_found(glp_prob *lp, int rc);
/* glp_intopt without its presolver (io->presolve is set off), which needs
 * an optimal basis of the LP relaxation: the primal simplex first, with
 * GLPK's default options, quiet. Returns glp_intopt's code, or
 * LP_NO_BASIS when the simplex fails or ends without an optimum (the
 * planner's cut and flip search; plan_bound.c keeps its own simplex, with
 * limits, whose basis its root solve reuses). */
#define LP_NO_BASIS (-1)
int lp_intopt_from_basis(glp_prob *lp, glp_iocp *io);

/* Write lp in CPLEX LP format to path (nothing if path is NULL). */
bool lp_write(glp_prob *lp, const char *path, char *err, size_t err_len);

/* ---- the watchdog: GLPK in a child process --------------------------------------- */

/* The dual simplex (with presolve, then again on the optimal basis), then,
 * unless lp_only, branch and bound with GLPK's MIR and cover cuts, reporting
 * every improved incumbent and bound to the parent as it goes. GLPK's tm_lim
 * is overshot and some of its work ignores it, so the parent waits until the
 * deadline plus a grace period, then kills the child and keeps the best
 * solution it had reported. */
typedef struct {
    glp_prob *lp;
    const int *report; /* columns whose values come back */
    int n_report;
    const double *heur; /* [n_cols + 1] an incumbent, or NULL */
    double deadline;
    bool lp_only, verbose;
    double grace_s; /* the child is killed this long after the deadline (0: 1.5 s) */
    bool improve;   /* a neighbourhood around the incumbent: better plans first, not the bound */
} LpJob;

typedef struct {
    bool lp_solved;     /* the relaxation was solved to optimality */
    bool lp_infeasible; /* ... and has no solution */
    double lp_obj;
    bool have_sol; /* an integer solution (or, lp_only, the LP's) */
    double obj, bound;
    double *vals; /* [n_report] */
    bool optimal, infeasible, killed, timed_out;
    double heur_accepted; /* 1 if GLPK took the incumbent */
} LpResult;

/* Run j; r->vals is malloc'ed (the caller frees it). False only if fork or pipe fail. */
bool lp_run_watched(const LpJob *j, LpResult *r, char *err, size_t err_len);

#endif
