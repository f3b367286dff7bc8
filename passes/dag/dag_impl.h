/* dag_impl.h - private to passes/dag/: schedules in Checkmate's
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

/* dag_sim.c */
void staged_clear(Staged *s);
void staged_free(Staged *s);
void staged_push(Staged *s, int stage, int node);
void staged_copy(Staged *dst, const Staged *src); /* dst becomes src */
/* For each event, the last event that reads its copy (itself if none); caller frees. */
int *staged_last_reads(const Dag *d, const Staged *s);

/* The solvers (dag_milp.c). Each fills p (ev, status, objective, bound,
 * n_binaries, n_rows; the caller simulates). inc: a feasible schedule to
 * start from, or NULL. Return false with err on a failure of the tool. */
bool dag_solve_acc_milp(const Dag *d, int64_t budget, const Staged *inc, double deadline, bool verbose, double bound,
                        DagPlan *p, char *err, size_t err_len);
/* Write acc's complete program (every earlier node may be recomputed: an
 * exact reformulation of Checkmate's) in CPLEX LP format. */
bool dag_emit_acc_program(const Dag *d, int64_t budget, const char *path, char *err, size_t err_len);
/* The relaxation of the stage model that bounds memory only at each stage's
 * own event, over every earlier node: bound (NAN if not solved in time) is a
 * lower bound on the compute of every staged plan; infeasible: no staged
 * plan fits. keep: the LP's S values ([n*n], keep[t*n+i], malloc'ed) or NULL. */
bool dag_acc_bound(const Dag *d, int64_t budget, double deadline, bool verbose, double *bound, bool *infeasible,
                   double **keep, char *err, size_t err_len);
bool dag_solve_checkmate(const Dag *d, int64_t budget, bool integral, double deadline, const char *emit_lp,
                         bool verbose, DagPlan *p, char *err, size_t err_len);

/* The memory rows' bound, memory scaled by the budget (a plan over the
 * budget is never admitted within GLPK's tolerances; relaxation: a bound
 * that cuts off no plan), and how long GLPK's child may overrun deadline. */
double dag_memory_ub(const Dag *d, int64_t budget, bool relaxation);
double dag_grace_for(double deadline);
/* The interval program (dag_interval.c): at most copies computations per
 * node (< 1: 2), at most slots recomputations per stage (< 0: copies - 1,
 * at least 1), both raised to what inc uses; inc (or NULL) is installed as
 * GLPK's incumbent. Fills p like the solvers above; the bound's scope is
 * "intervals" (its plan space), "intervals (support)" when the support was
 * cut to fewer hops. */
bool dag_solve_intervals(const Dag *d, int64_t budget, const Staged *inc, int copies, int slots, double deadline,
                         bool verbose, DagPlan *p, char *err, size_t err_len);
/* Is the staged schedule s a feasible point of Checkmate's program (R, the
 * least S, the FREE the hazards imply, U)? For tests of the formulations;
 * bad_row: the first violated row, or -1. */
bool dag_checkmate_accepts(const Dag *d, int64_t budget, const Staged *s, int *bad_row);
/* The exact search over every schedule (dag_search.c). */
#define DAG_SEARCH_MAX_NODES 128
#define DAG_SEARCH_STATES 1500000 /* at most about 80 bytes each, the queue included */
enum { DAG_SEARCH_FOUND = 1, DAG_SEARCH_NONE, DAG_SEARCH_STOPPED };
typedef struct {
    int status;   /* FOUND: ev is the cheapest schedule (below upper); NONE: no schedule costs less than
                   * upper (none fits, when upper is INFINITY); STOPPED: the time or the states ran out */
    double cost;  /* ev's compute */
    double bound; /* no schedule costs less (NONE: upper; STOPPED: the least estimate left) */
    int *ev, n_ev;
    int states;
} DagSearch;
/* false: the graph is too large for it (n > DAG_SEARCH_MAX_NODES). */
bool dag_search_exact(const Dag *d, int64_t budget, double upper, double deadline, int max_states, DagSearch *r);
/* The same, with 64-bit sets (n <= 64) and 128-bit ones (dag_search_wide.c); dag_search_exact picks one. */
bool dag_search_exact_narrow(const Dag *d, int64_t budget, double upper, double deadline, int max_states, DagSearch *r);
bool dag_search_exact_wide(const Dag *d, int64_t budget, double upper, double deadline, int max_states, DagSearch *r);
void dag_search_free(DagSearch *r);
/* The memory at each first execution b, as the windows bounds see it
 * (dag_sim.c): own[b], b's output and its distinct inputs; span[b] (span
 * NULL: not filled), the outputs that span b (a first execution on each side
 * of b reads x, or is x, and b does not read x). Both [n]. Returns how many
 * (x, b) spanning pairs there are. */
long dag_point_memory(const Dag *d, int64_t *own, int64_t *span);
/* A lower bound on the compute of every schedule at budget, for graphs of
 * any size: the baseline plus the executions that the forced windows of
 * dag_search.c's estimate count from the start (a node that cannot stay held
 * between two first executions that read it is executed again). */
double dag_window_bound(const Dag *d, int64_t budget);
/* The same windows as a covering program (dag_milp.c): its relaxation's
 * optimum plus the baseline bounds every schedule; bound NAN when not solved
 * by deadline. False with err on a failure of the tool. */
bool dag_window_lp(const Dag *d, int64_t budget, double deadline, bool verbose, double *bound, char *err,
                   size_t err_len);
/* The windows program with what a recomputation reads (dag_inputs.c): a
 * dropped output runs again after the point, and its inputs are then held
 * at the point (memory) or run after it (compute, each run counted once).
 * Its optimum (integer when proven by deadline, else the relaxation's) plus
 * the baseline bounds every schedule and is at least dag_window_lp's; bound
 * NAN when too large or not solved by deadline. max_nonzeros: the size it
 * keeps to, by fewer hops and points (0: the default, for about half a
 * second of GLPK). False with err on a failure of the tool. */
bool dag_inputs_lp(const Dag *d, int64_t budget, long max_nonzeros, double deadline, bool verbose, double *bound,
                   char *err, size_t err_len);
/* One node from what is held (dag_pebble.c): the recomputations (seq,
 * malloc'ed, in order; cost their compute) after which x runs within budget,
 * from the outputs held[i] != 0 (NULL: nothing). NONE: searched to the end,
 * there are none (with held NULL: no schedule fits at all). seed > 0
 * perturbs the order of the search. held[i] == 2: i is pinned, held
 * throughout and after (never recomputed), its memory not counted here: the
 * caller takes it off the budget. */
enum { DAG_PEBBLE_FOUND = 1, DAG_PEBBLE_NONE, DAG_PEBBLE_STOPPED };
int dag_pebble(const Dag *d, int64_t budget, int x, const int *held, int max_states, double deadline, uint64_t seed,
               int **seq, int *n_seq, double *cost);
/* The compute of the nodes v[0..len) not held and, through inputs not held,
 * of all their ancestors, each once (dag_pebble.c): what must still run
 * before they are all present, whatever the order; the cheapest path
 * search's estimate. mark/stack: [n] scratch; stamp: a value not in mark. */
double dag_cone_cost(const Dag *d, const int *held, const int *v, int len, int *mark, int *stack, int stamp);
/* The same problem, the cheapest way (dag_pebble.c): best first over the
 * same states, by the compute peeled so far plus a consistent estimate.
 * FOUND: seq is the cheapest path, and it costs less than upper; NONE:
 * searched to the end, none costs less than upper (with upper INFINITY:
 * none at all); STOPPED: the states, their memory or the deadline ran out
 * first. Meant to follow dag_pebble with upper the cost it found. */
int dag_pebble_cheapest(const Dag *d, int64_t budget, int x, const int *held, double upper, int max_states,
                        double deadline, int **seq, int *n_seq, double *cost);
/* Drop the recomputations a schedule that fits can do without, most
 * expensive first, while it stays valid and within the budget (dag_prune.c:
 * exact, and incremental: no replay of the whole schedule per candidate). */
void dag_prune_recomputations(const Dag *d, int64_t budget, double deadline, Staged *s);
/* Local improvement of a schedule that fits (dag_improve.c): each stage
 * re-solved by dag_pebble from what is held at its start, and the pruning,
 * until nothing changes or deadline; s stays valid and within the budget and
 * never costs more. */
void dag_improve(const Dag *d, int64_t budget, double deadline, Staged *s, bool verbose);
/* Stage t anew from held (dag_pebble's: 1 held, 2 pinned with bytes across
 * off the budget), exports[0..n_exports) held at its end with t: the
 * cheapest of the search for t at once and of t's missing inputs one at a
 * time (dag_improve.c). Fills out with the stage's events, t last; returns
 * their compute, or -1 when none was found. */
double dag_resolve_stage(const Dag *d, int64_t budget, int t, const int *held, int64_t across, const int *exports,
                         int n_exports, double deadline, Staged *out);
/* The recursive schedule (dag_minpeak.c): each node computed from nothing
 * by computing its inputs one at a time, those done held, or by a sweep of
 * its cone in the topological order, whichever peaks lower. Returns its peak,
 * the largest of r[x] (x's own peak so, [n] or NULL): a schedule with that
 * peak exists, so no budget at or above it is infeasible. events (or NULL):
 * its length, without the reuse below (a double: it grows with the paths). */
int64_t dag_recursive_peak(const Dag *d, int64_t *r, double *events);
/* Its events (each node in turn, stage t computing t; a node held by a frame
 * below is read, not recomputed); false, out empty, when it would take more
 * than max_events. */
bool dag_recursive_schedule(const Dag *d, int max_events, Staged *out);
/* Staged checkpoints (dag_stage.c): the nodes in order, a held set of
 * outputs capped at a fraction of the budget between stages, each stage's
 * missing inputs rebuilt by the pebbling search from it; the cheapest of a
 * few caps and scores, replayed by dag_simulate within the budget. False
 * (out empty) when none fits by deadline. */
bool dag_stage_checkpoints(const Dag *d, int64_t budget, double deadline, Staged *out, bool verbose);
/* acc's heuristic incumbent alone (tests). */
bool dag_heuristic(const Dag *d, int64_t budget, double deadline, Staged *out);

#endif
