/* planner_internal.h - what the model planner's files share; not part of the
 * passes' interface (passes.h). The files call each other in one direction,
 * and this header declares each one's part in that order, bottom last:
 *
 *   planner.c      the context, the policies, the exchange search, plan_make
 *     -> plan_offload.c  offload as a free decision, scored as the code runs
 *     -> plan_search.c   the flip search and the branch and bound
 *       -> plan_cut.c    cutting a plan until it fits, restoring
 *       -> plan_bound.c  the lower bound
 *         -> plan_core.c scoring a plan, closures, the time left
 *
 * A file calls only the files below it (plan_cut.c and plan_bound.c not
 * each other). The Ctx is built by planner.c and read by all.
 */
#ifndef ACC_PLANNER_INTERNAL_H
#define ACC_PLANNER_INTERNAL_H

#include <glpk.h>

#include "lp.h"
#include "passes.h"

typedef struct {
    const Graph *g;
    const Autodiff *ad;
    const PlanOptions *o;
    int64_t budget;     /* the schedule's share of the budget (plan_schedule_budget; 0: unbounded) */
    Pool mem;           /* the arrays that live as long as the Ctx (ctx_free frees them in one call) */
    double *time;       /* [n] forward time */
    double *drop;       /* [n] what dropping a read tensor costs: its transfer if offloaded, else its time */
    bool *offload;      /* [n] the seed set: dropped, it is offloaded rather than recomputed (--host-budget:
                           policies, ACC_OFFLOAD_FIXED, the enumeration, the widened set; empty while
                           offload_cols; cleared by pl_offload_search, whose fates are explicit) */
    double *transfer;   /* [n] its two copies' time, in full */
    int64_t *host_size; /* [n] its host buffers' bytes (tensor and tail), as the schedule sizes them */
    bool offload_cols;  /* the integer programs (cut, flip search) decide offloading: a tensor of
                           pl_may_offload has an offload column beside its recompute one */
    SchedOptions so;    /* every schedule the planner builds: the optimizer, the offloaded set */
    int *forced;        /* [n] -1 free, else the Decision the user forces */
    bool *cand;         /* [n] may be dropped */
    bool *read;         /* [n] read by the backward (else an intermediate) */
    int *group;         /* [n] block instance index, -1 at top level */
    int n_groups;
    int n_evals;
    double t_start;
    double deadline;        /* acc_now_s() past it: out of time (0: none; --time-limit) */
    double alloc_s;         /* seconds of the last evaluation that allocated (the reserve below) */
    bool timed_out;         /* the deadline ended some search early */
    Schedule scratch;       /* reused by evaluations that keep no schedule */
    SchedIndex *index;      /* for evaluations that need no allocation */
    char solver_error[200]; /* GLPK's first failure ("": none); the search went on without that solve */
} Ctx;

typedef struct {
    int64_t max_live, arena; /* arena: -1 unless allocated */
    double cost, flops;      /* flops: -1 unless the schedule was built */
    int peak_step;
} Eval;

typedef struct {
    int t, first, m; /* step of P0, first entry, entries */
    double need;     /* bytes over the budget */
} Row;

typedef struct {
    VEC(Row) v;
    VEC(int) ent_node; /* the droppable tensors of each row */
    VEC(double) ent_size;
} Rows;

/* ---- plan_search.c: the searches past the cut ---- */

/* Improve dec (within budget; target: the max-live its cut aims at) by the
 * flip search. */
void pl_flip_search(Ctx *c, Decision *dec, int64_t target, int64_t budget);
/* Lower dec's max-live to target by single and paired flips among the free
 * decisions free_ids[0..k) that lower the bytes over target summed over its
 * schedule; whether its arena then fits target. A heuristic. */
bool pl_peak_search(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t target);
bool pl_exact_search(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t budget, double incumbent,
                     long long node_limit, bool consumers_first, bool *found);
/* the branch and bound's node limit for a proof (ACC_EXHAUSTIVE_MAX), and
 * for the fallback when the heuristics find no plan (about 0.2 s on a
 * 51-decision Llama stack) */
#define PL_BNB_NODES 400000000LL
#define PL_BNB_FALLBACK_NODES 200000LL
/* below the stated minimum (prove_min_peak), where finishing is the proof,
 * each search stopped at its first plan: with the tensors that drops bring
 * back and the intermediates that recomputations hold counted
 * (plan_search.c), a two-layer Llama's proof takes 1,541 nodes (11.4
 * million, then 6,028 before), a three-layer one finds a plan after 67,636
 * and proves the next budget in 13,564 (1.2 s in all, Release, under load) */
#define PL_BNB_PROOF_NODES 1500000LL
/* the most free decisions the proof below the stated minimum searches (the
 * fallback at a budget stops at 64): past 64 it finds lower minima (a U-Net
 * of 71 decisions at N=32: 978240 for the descent's 980800) without proving
 * them */
#define PL_BNB_PROOF_MAX 128

/* ---- plan_offload.c: offload as a free decision ---- */

/* Improve dec (within budget and the host budget) by moves among the three
 * fates of the tensors the backward reads, scored by pl_evaluate_exposed. */
void pl_offload_search(Ctx *c, Decision *dec, int64_t budget);

/* ---- plan_cut.c: a plan that fits ---- */

bool pl_cut_to(Ctx *c, Decision *dec, int64_t target);
void pl_restore(Ctx *c, Decision *dec, int64_t target);

/* ---- plan_bound.c: the lower bound ---- */

int pl_bound_rows(Ctx *c, const Schedule *s, const int *last_fwd, const int *first_bwd, int64_t budget, Rows *rows);
double pl_covering_bound(Ctx *c, int64_t budget);

/* ---- plan_core.c: what every file above uses ---- */

/* Whether the programs may offload node i (DEC_OFFLOAD): with offload_cols,
 * a free tensor the backward reads, not of the seed set (whose drops are
 * offloads already), whose host buffers alone fit the host budget. */
static inline bool pl_may_offload(const Ctx *c, int i) {
    return c->offload_cols && c->cand[i] && c->read[i] && c->forced[i] < 0 && !c->offload[i] &&
           c->host_size[i] <= c->o->host_bytes;
}
/* What node i's fate d costs the searches: nothing kept, its time
 * recomputed (its transfer if the seed set offloads its drops), its two
 * copies in full offloaded (an upper bound of their exposed time). */
static inline double pl_fate_cost(const Ctx *c, int i, Decision d) {
    return d == DEC_SAVE ? 0 : d == DEC_OFFLOAD ? c->transfer[i] : c->drop[i];
}
/* The host bytes of dec's offloads (DEC_OFFLOAD), each tensor's own: at
 * least its host arena, which reuses space. */
int64_t pl_host_used(const Ctx *c, const Decision *dec);

/* Whether the deadline (--time-limit) has passed, less a reserve for what
 * follows the searches (recorded in c->timed_out): scoring the final plan in
 * finish() and the caller's schedule, allocation and plan check of it, three
 * allocating evaluations timed as the last one. The searches that improve a
 * plan stop then, with the best plan so far; the cut that finds the first
 * plan only takes fewer rows. */
static inline bool pl_out_of_time(Ctx *c) {
    if (c->deadline > 0 && acc_now_s() + 3 * c->alloc_s > c->deadline) c->timed_out = true;
    return c->timed_out;
}
/* Milliseconds left before the deadline, for GLPK's tm_lim (INT_MAX: no deadline). */
int pl_ms_left(Ctx *c);
void pl_evaluate(Ctx *c, const Decision *dec, bool alloc, Eval *e, Schedule *keep);
/* Score dec as its code runs: allocated, its cost the recompute time plus
 * the copies' exposed time (sched_copy_time), where pl_evaluate costs every
 * copy in full (an upper bound); *host: the host arena. */
void pl_evaluate_exposed(Ctx *c, const Decision *dec, Eval *e, int64_t *host);
void pl_apply_forced(const Ctx *c, Decision *dec);
/* Drop node i together with the intermediates that feed it (saved
 * candidates the backward does not read), so that its recomputation
 * recomputes them rather than keeping them alive. */
void pl_drop_closure(const Ctx *c, Decision *dec, int i);
/* The intermediates pl_drop_closure(i) would drop with i, appended to out
 * from out[m] (each stamped with mark; those already stamped skipped);
 * returns the new count. */
int pl_closure_list(const Ctx *c, const Decision *dec, int i, int *stamp, int mark, int *out, int m);
void pl_solver_failed(Ctx *c, const char *err);
void pl_read_spans(const Schedule *s, int *last_fwd, int *first_bwd);
void pl_sort_by_time(const Ctx *c, int *ids, int n);

#endif
