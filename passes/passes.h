/* passes.h - the compiler's middle: autodiff, the schedule with recompute
 * inserted, liveness, static arena allocation and the plan checker.
 *
 * Pipeline (tools/acc.c calls them in this order):
 *   ad_build        Graph -> which nodes get gradients, backward order, what
 *                   each backward reads (the planner's candidates)
 *   sched_build     + a SAVE/RECOMPUTE decision per node -> steps and buffers
 *                   with live intervals
 *   alloc_assign    offsets of every buffer in one arena; the arena size is
 *                   the step's memory
 *   plan_check      an independent simulation of the schedule
 * Includes only ir.h (layering: frontend and codegen are not visible here).
 */
#ifndef ACC_PASSES_H
#define ACC_PASSES_H

#include "ir.h"

/* ---- autodiff ------------------------------------------------------------ */

/* What one backward step reads of the forward pass. */
typedef struct {
    bool in[ACC_MAX_IN]; /* input j's tensor */
    bool out, aux;       /* the node's own tensor / statistics tail */
} GradReads;

typedef struct {
    const Graph *g;
    bool *live;      /* [n] node contributes to the loss (dead nodes are skipped) */
    bool *need_grad; /* [n] d loss / d node is computed */
    VEC(int) bwd;    /* nodes whose backward runs, in backward (reverse topological) order */
} Autodiff;

/* requires: a verified graph with a loss. provides: live, need_grad, bwd. */
void ad_build(const Graph *g, Autodiff *ad);
void ad_free(Autodiff *ad);
/* The forward buffers node n's backward reads, from the op table's grad column. */
GradReads ad_reads(const Autodiff *ad, int n);
/* Does input j of node n receive a gradient from n's backward? */
bool ad_input_gets_grad(const Autodiff *ad, int n, int j);

/* ---- schedule ------------------------------------------------------------ */

typedef enum { DEC_SAVE, DEC_RECOMPUTE } Decision;

typedef enum {
    BUF_PARAM,  /* parameters: persistent */
    BUF_PGRAD,  /* parameter gradients: persistent */
    BUF_ADAM_M, /* optimizer state: persistent */
    BUF_ADAM_V,
    BUF_INPUT,  /* model inputs: persistent (set before the step) */
    BUF_LOSS,   /* the loss value: persistent (read after the step) */
    BUF_ACT,    /* a node's tensor (one buffer per computation of it) */
    BUF_AUX,    /* a node's statistics tail */
    BUF_GRAD,   /* gradient of an activation */
    BUF_KIND_COUNT
} BufKind;

const char *buf_kind_name(BufKind k);

typedef struct {
    BufKind kind;
    int node;
    int64_t size_bytes; /* rounded up to ACC_ALIGN */
    int64_t offset;     /* in the arena, set by alloc_assign */
    int first, last;    /* live over steps [first, last]; persistent: all */
    bool persistent;
} Buffer;

#define ACC_ALIGN 64

typedef enum { ST_FWD, ST_RECOMPUTE, ST_SEED, ST_BWD } StepKind;

/* One kernel launch of the schedule. Buffer indices are -1 where unused. */
typedef struct {
    StepKind kind;
    int node;
    int out, aux;            /* FWD/RECOMPUTE: written; BWD: read if the rule says so */
    int in[ACC_MAX_IN];      /* input tensors read */
    int grad_out;            /* BWD: the node's gradient (read); SEED: d loss (written) */
    int grad_in[ACC_MAX_IN]; /* BWD: gradients accumulated into */
    bool zero_in[ACC_MAX_IN]; /* BWD: first contribution, zero the gradient first */
} Step;

typedef struct {
    const Graph *g;
    VEC(Step) steps;
    VEC(Buffer) bufs;
    int first_bwd_step;   /* index of the SEED step */
    int n_recompute;      /* RECOMPUTE steps */
    bool optimizer;       /* AdamW state is part of the arena */
    int *param_buf, *pgrad_buf, *adam_m_buf, *adam_v_buf, *input_buf; /* [n] by node, -1 */
    int loss_buf;
    int64_t persistent_bytes, arena_bytes;
    int peak_step;        /* step at which the most bytes are live */
    int64_t peak_live_bytes; /* max over steps of the live bytes (the allocation's lower bound) */
} Schedule;

/* requires: ad built for g; dec[n] for every node (only nodes whose tensors
 * the backward reads matter). provides: steps and buffers with live intervals. */
void sched_build(const Graph *g, const Autodiff *ad, const Decision *dec, bool optimizer, Schedule *s);
void sched_free(Schedule *s);
/* peak_live_bytes (persistent + the most bytes live at one step: the lower
 * bound of any allocation) and peak_step, from the live intervals alone. */
void sched_max_live(Schedule *s);

/* requires: a built schedule. provides: offsets, arena_bytes, peak_step,
 * peak_live_bytes. Persistent buffers first, then a best-fit placement of the
 * rest by decreasing size. */
void alloc_assign(Schedule *s);

/* Re-simulate the schedule: every read finds its buffer live and computed from
 * the right node, no two live buffers overlap, everything fits in the arena.
 * Prints the first violation and returns false. */
bool plan_check(const Schedule *s, FILE *err);

/* ---- cost model ------------------------------------------------------------ */

/* A hardware profile (hw/<name>.hw): key = value lines. */
typedef struct {
    char name[128];
    double matmul_flops;   /* FLOP/s of GEMM-like ops (matmul, attention) */
    double vector_flops;   /* FLOP/s of everything else */
    double mem_bw;         /* bytes/s */
    double launch_latency; /* seconds per kernel */
} HwProfile;

/* Load profile NAME from the hw/ directory (or a path ending in .hw). */
bool hw_load(const char *name, HwProfile *hw, char *err, size_t err_len);
/* Bytes a node's forward reads and writes. */
double cost_bytes(const Graph *g, const Node *n);
/* Roofline time of a node's forward: max(FLOPs / rate, bytes / bandwidth)
 * plus the launch latency. The backward is costed as twice the forward. */
double cost_fwd_time(const Graph *g, const Node *n, const HwProfile *hw);

/* ---- the planner ----------------------------------------------------------- */

typedef enum { PLAN_OPTIMAL, PLAN_HEURISTIC, PLAN_POLICY, PLAN_INFEASIBLE } PlanStatus;

typedef struct {
    const char *policy;         /* none full every:K uniform:N selective ops:LIST sqrt optimal */
    int64_t budget_bytes;       /* the whole step's peak; <= 0: unbounded */
    double time_limit_s;
    const HwProfile *hw;
    bool optimizer;             /* AdamW state in the arena */
    const char *const *save_globs;      /* from the command line (the DSL's are in the graph) */
    int n_save_globs;
    const char *const *recompute_globs;
    int n_recompute_globs;
} PlanOptions;

typedef struct {
    Decision *dec;              /* [n] */
    PlanStatus status;
    int64_t peak_bytes;         /* the arena of the plan's schedule */
    int64_t max_live_bytes;
    double recompute_time, recompute_flops, fwd_time, bwd_time;
    double bound;               /* lower bound on recompute_time (optimal: equal) */
    double solve_s;
    int n_evals;                /* schedules simulated */
    int n_candidates;           /* nodes the plan may drop */
} Plan;

/* Is the policy string well formed? (for the command line) */
bool plan_policy_valid(const char *policy, char *err, size_t err_len);
/* requires: autodiff of g. provides: a decision per node by the policy, the
 * user's constraints applied, scored by the same schedule and allocation as
 * code generation. status PLAN_INFEASIBLE when the policy's plan does not fit. */
void plan_make(const Graph *g, const Autodiff *ad, const PlanOptions *o, Plan *out);
void plan_free(Plan *p);
/* The smallest peak acc can reach for g (every recomputable tensor dropped or
 * the best of the policies), for the infeasible-budget error. */
int64_t plan_min_peak(const Graph *g, const Autodiff *ad, const PlanOptions *o);

#endif
