/* dag_impl.h - private to dag.c and dag_milp.c: schedules in Checkmate's
 * stage form and the solvers' entry points.
 *
 * A staged schedule: stage t (t = 0..n-1, the topological order) executes
 * some earlier nodes again (recomputations, ascending) and then node t for
 * the first time. Every method's plan has this form, so a plan is also a
 * set of (stage, node) pairs: Checkmate's R matrix.
 */
#ifndef ACC_DAG_IMPL_H
#define ACC_DAG_IMPL_H

#include "passes.h"

typedef struct {
    VEC(int) ev;    /* node per event */
    VEC(int) stage; /* stage per event */
} Staged;

void staged_clear(Staged *s);
void staged_free(Staged *s);
void staged_push(Staged *s, int stage, int node);

double dag_now_s(void);

/* The solvers (dag_milp.c). Each fills p (ev, status, objective, bound,
 * n_binaries, n_rows; the caller simulates). inc: a feasible schedule to
 * start from, or NULL. Return false with err on a failure of the tool. */
bool dag_solve_acc_milp(const Dag *d, int64_t budget, const Staged *inc, double deadline, const char *emit_lp,
                        bool verbose, DagPlan *p, char *err, size_t err_len);
bool dag_solve_checkmate(const Dag *d, int64_t budget, bool integral, double deadline, const char *emit_lp,
                         bool verbose, DagPlan *p, char *err, size_t err_len);

#endif
