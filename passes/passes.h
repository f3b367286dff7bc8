/* passes.h - the compiler's middle: autodiff, the schedule with recompute
 * inserted, liveness, static arena allocation and the plan checker.
 *
 * Pipeline (tools/pipeline.c, acc_compile, calls them in this order):
 *   fuse_linear     Graph -> the same graph with bias GEMMs as linear nodes
 *                   (not with --no-fuse)
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

/* ---- fusion of bias GEMMs (passes/fuse_linear.c) ------------------------- */

typedef struct {
    /* must-save / must-recompute globs from the command line: a matmul they
     * name is not fused away (the DSL's globs are in the graph) */
    const char *const *save_globs;
    int n_save_globs;
    const char *const *recompute_globs;
    int n_recompute_globs;
} FuseOptions;

/* requires: a verified graph. provides: add(matmul(x, w), b) rewritten into
 * linear(x, w, b) where it applies (see fuse_linear.c), the matmul removed,
 * ids dense again, the graph verified. Returns the number fused. */
int fuse_linear(Graph *g, const FuseOptions *o);

/* ---- precision ----------------------------------------------------------- */

/* requires: a verified graph of f32 activations (the front end's). provides:
 * with act DT_BF16, every op's inputs in the dtypes its precision rule asks
 * (ops.def): casts inserted, one per tensor and dtype, before the first op
 * that reads them; g->act_dtype set; outputs' dtypes from the rules; a loss
 * that would be bf16 widened by a cast; ids dense again, the graph verified.
 * With DT_F32 the graph is left as it is. Returns the number of casts. */
int precision_apply(Graph *g, DType act);

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

/* What becomes of a tensor the backward reads: kept in the arena from the
 * forward, dropped and recomputed before its first backward read, or
 * offloaded: copied to the host arena after its last forward read (its
 * device copy freed) and back before its first backward read. */
typedef enum { DEC_SAVE, DEC_RECOMPUTE, DEC_OFFLOAD } Decision;

/* The AdamW moments m and v (--optimizer-state): none (no optimizer), in the
 * arena as f32 (4 bytes an element) or bf16 (2 bytes an element; the update
 * computes in f32 and rounds m and v on store), or f32 in host memory, where
 * the update runs (host: the arena holds no moments). */
typedef enum { OPT_STATE_NONE, OPT_STATE_F32, OPT_STATE_BF16, OPT_STATE_HOST } OptState;

/* Bytes of one element of the moments in the arena (0 for none and host). */
int opt_state_elem_bytes(OptState st);
/* "none", "fp32", "bf16" or "host" (plan.json's optimizer_state). */
const char *opt_state_name(OptState st);

/* ---- data parallel (passes/dp.c) ----------------------------------------- */

/* How the parameter gradients are reduced over the ranks: buckets of
 * consecutive parameters, numbered in the order the backward completes
 * them; with ZeRO-1 (zero = 1) each bucket padded to ranks equal pieces;
 * with ZeRO-2 (zero = 2) each parameter, its gradient a buffer of the plan
 * that lives until its bucket is final. */
typedef struct {
    int ranks, zero; /* 1, 0: one rank (no buckets) */
    int n_buckets;
    int *bucket_of; /* [n]: a parameter's bucket, -1 */
    int64_t *pad;   /* [n]: bytes after the parameter (and after its gradient) */
} DpLayout;

/* requires: a verified graph. provides: the buckets of at most cap_bytes
 * (one parameter may exceed it) for ranks ranks (<= 1: one). */
void dp_layout(const Graph *g, int ranks, int zero, int64_t cap_bytes, DpLayout *out);
void dp_free(DpLayout *d);
/* Parameter node's bytes in the arena, and its gradient's (d NULL: one rank). */
int64_t dp_param_bytes(const DpLayout *d, const Graph *g, int node);
/* ZeRO-1 and -2: the elements of each of this rank's moments, and of its
 * gradients with ZeRO-2 (0 without ZeRO). */
int64_t dp_shard_elems(const DpLayout *d, const Graph *g);

/* What every schedule of a plan shares besides the decisions. */
typedef struct {
    OptState optimizer;     /* AdamW state in the arena, its dtype */
    const bool *offload;    /* [n] or NULL: a tensor decided DEC_RECOMPUTE that is marked here is
                               offloaded instead (the planner's drops; DEC_OFFLOAD always is) */
    const double *transfer; /* [n] or NULL: seconds of an offloaded tensor's two copies (its cost) */
    const DpLayout *dp;     /* data parallel: padded parameters, the ZeRO shard (NULL: one rank) */
} SchedOptions;

typedef enum {
    BUF_PARAM,  /* parameters: persistent */
    BUF_PGRAD,  /* parameter gradients: persistent */
    BUF_ADAM_M, /* optimizer state: persistent */
    BUF_ADAM_V,
    BUF_INPUT, /* model inputs: persistent (set before the step) */
    BUF_LOSS,  /* the loss value: persistent (read after the step) */
    BUF_ACT,   /* a node's tensor (one buffer per computation of it) */
    BUF_AUX,   /* a node's statistics tail */
    BUF_GRAD,  /* gradient of an activation */
    BUF_KIND_COUNT
} BufKind;

const char *buf_kind_name(BufKind k);

typedef struct {
    BufKind kind;
    int node;
    int64_t size_bytes; /* rounded up to ACC_ALIGN */
    int64_t offset;     /* in the arena (host: in the host arena), set by alloc_assign */
    int first, last;    /* live over steps [first, last]; persistent: all */
    bool persistent;
    bool host; /* an offloaded tensor's copy (BUF_ACT, BUF_AUX) in the host arena */
} Buffer;

#define ACC_ALIGN 64

typedef enum { ST_FWD, ST_RECOMPUTE, ST_SEED, ST_BWD, ST_OFFLOAD, ST_FETCH } StepKind;
/* "forward", "recompute", "seed", "backward", "offload", "fetch" */
extern const char *const sched_step_kinds[];

/* One kernel launch of the schedule. Buffer indices are -1 where unused.
 * OFFLOAD copies in[0] (and its statistics tail in[1]) to the host buffers
 * out (and aux); FETCH copies the host buffers in[0], in[1] to new device
 * buffers out, aux. */
typedef struct {
    StepKind kind;
    int node;
    int out, aux;             /* FWD/RECOMPUTE: written; BWD: read if the rule says so */
    int in[ACC_MAX_IN];       /* input tensors read */
    int grad_out;             /* BWD: the node's gradient (read); SEED: d loss (written) */
    int grad_in[ACC_MAX_IN];  /* BWD: gradients accumulated into */
    bool zero_in[ACC_MAX_IN]; /* BWD: first contribution, zero the gradient first */
} Step;

typedef struct {
    const Graph *g;
    VEC(Step) steps;
    VEC(Buffer) bufs;
    int first_bwd_step;                                               /* index of the SEED step */
    int n_recompute;                                                  /* RECOMPUTE steps */
    int n_offload;                                                    /* OFFLOAD steps */
    OptState optimizer;                                               /* AdamW state in the arena, its dtype */
    int *param_buf, *pgrad_buf, *adam_m_buf, *adam_v_buf, *input_buf; /* [n] by node, -1 */
    int shard_m_buf, shard_v_buf; /* ZeRO: this rank's moments (adam_m/v_buf all -1); else -1 */
    int shard_g_buf;              /* ZeRO-2: this rank's pieces of the gradients; else -1 */
    int loss_buf;
    int64_t persistent_bytes, arena_bytes;
    int64_t host_bytes;      /* the host arena of offloaded copies (alloc_assign) */
    int peak_step;           /* step at which the most bytes are live */
    int64_t peak_live_bytes; /* max over steps of the live bytes (the allocation's lower bound) */
} Schedule;

/* requires: ad built for g; dec[n] for every node (only nodes whose tensors
 * the backward reads matter). provides: steps and buffers with live intervals. */
void sched_build(const Graph *g, const Autodiff *ad, const Decision *dec, const SchedOptions *so, Schedule *s);
void sched_free(Schedule *s);
/* sched_build reusing the memory of a schedule built before (for search). */
void sched_rebuild(const Graph *g, const Autodiff *ad, const Decision *dec, const SchedOptions *so, Schedule *s);
/* peak_live_bytes (persistent + the most bytes live at one step: the lower
 * bound of any allocation) and peak_step, from the live intervals alone. */
void sched_max_live(Schedule *s);
/* live[t], for each step t: the persistent bytes plus the bytes of the
 * buffers live at t (live has s->steps.n + 1 entries, the last scratch).
 * Returns the persistent bytes. */
int64_t sched_live_bytes(const Schedule *s, int64_t *live);
/* Data parallel: the step after which bucket k's gradients are final
 * (ready[k], -1 if the backward writes none of them). */
void dp_ready_steps(const DpLayout *d, const Schedule *s, int *ready);


/* requires: a built schedule. provides: offsets, arena_bytes, peak_step,
 * peak_live_bytes. Persistent buffers back to back first, then the rest placed
 * by alloc_intervals_ex with alloc_pipeline_options (deterministic). */
void alloc_assign(Schedule *s);

/* Measuring many plans of one graph: what every schedule of g shares (sizes,
 * inputs, what each backward step reads), indexed once. */
typedef struct SchedIndex SchedIndex;

typedef struct {
    int64_t peak_live_bytes; /* as sched_max_live computes it */
    int peak_step;
    int n_recompute;
    double recompute_time; /* sum of node_time over the RECOMPUTE steps, in step order */
    double transfer_time;  /* sum of the offloaded tensors' copies (so->transfer) */
} SchedMeasure;

/* requires: ad built for g. provides: the index for sched_measure. */
SchedIndex *sched_index_new(const Graph *g, const Autodiff *ad, const SchedOptions *so);
void sched_index_free(SchedIndex *x);
/* The peak, peak step and recompute steps of the schedule sched_build would
 * build for dec (then sched_max_live), computed without building it: exactly
 * equal, several times faster (the planner's inner loop). */
void sched_measure(SchedIndex *x, const Decision *dec, const double *node_time, SchedMeasure *m);

/* ---- the copies of offloaded tensors (passes/copies.c) ---- */

typedef struct {
    int step;        /* the OFFLOAD or FETCH step */
    int issue_after; /* issued after this step (-1: at the start of the run) */
    int wait_before; /* the steps from this one on wait for it (the step count: the run's end) */
    int id, n_ids;   /* its copies' ids: the tensor's, then its tail's */
    double time;     /* seconds on the copy stream: one way of the tensor's transfer, tail included */
} SchedCopy;

typedef struct {
    VEC(SchedCopy) v;
    int n_ids;
} SchedCopies;

/* requires: an allocated schedule. provides: when each copy of an offloaded
 * tensor may be issued and must be waited for (step positions), each with
 * half of transfer[node] (NULL: 0), its two copies' time. */
void sched_copies(const Schedule *s, const double *transfer, SchedCopies *out);
void sched_copies_free(SchedCopies *c);
/* The first step after t at which a buffer placed over buffer b's bytes is
 * written (its first step), or -1: how long work that reads or writes b
 * beside the step (a copy out, a collective) may run. */
int sched_first_overwrite(const Schedule *s, int b, int t);
/* Each step's estimated seconds: forward and recompute node_time, backward
 * twice it (the planner's estimate), the rest (seed, copies) 0. */
void sched_step_times(const Schedule *s, const double *node_time, double *out);

typedef struct {
    double copy_time;    /* all copies, on the copy stream */
    double exposed_time; /* what the compute stream waits for them */
} CopyTime;

/* The exposed-time model: the steps back to back on the compute stream
 * (step_time[n_steps]), the copies in issue order on one copy stream, each
 * starting when issued or when the one before ends; before step w the
 * compute stream waits for the copies whose wait_before is w. */
void copy_exposed(const double *step_time, int n_steps, const SchedCopy *c, int n_copies, CopyTime *out);
/* copy_exposed of an allocated schedule: sched_copies with transfer, the
 * steps timed by sched_step_times. The planner scores plans with it and the
 * plan reports it. */
void sched_copy_time(const Schedule *s, const double *node_time, const double *transfer, CopyTime *out);

/* ---- static allocation over plain intervals (passes/alloc.c) --------------- */

/* One buffer: `size` bytes live on the half-open interval [lower, upper) of
 * some time axis; its offset must be a multiple of `alignment` (<= 1: any).
 * Two buffers conflict when their intervals intersect; empty intervals and
 * empty buffers conflict with nothing. */
typedef struct {
    int64_t lower, upper;
    int64_t size;
    int64_t alignment;
} AllocItem;

typedef struct {
    /* Stop as soon as the arena is at most this (<= 0: the max-live lower
     * bound, i.e. minimise). Below the lower bound it is never met. */
    int64_t capacity;
    /* Exact search budget in work units (a deterministic count; a second of
     * search does 5e8 to 1e9 on one core, alloc_work_for_time assumes 2e8);
     * 0: greedy only; < 0: alloc_work_for_time(time_limit_s). */
    int64_t work_limit;
    /* Wall-clock safety net of the exact search (<= 0: none). When it, rather
     * than work_limit, ends the search the result may vary between runs. */
    double time_limit_s;
    /* Search only when the greedy arena exceeds max(capacity, lower bound) by
     * more than this fraction (0: whenever it exceeds it). */
    double search_above;
} AllocOptions;

typedef struct {
    int64_t arena;            /* max over buffers of offset + size */
    int64_t lower_bound;      /* max-live: the most bytes live at one time (>= any arena) */
    int64_t greedy_arena;     /* the best of the greedy orders */
    const char *greedy_order; /* which order gave it */
    double greedy_s, search_s;
    int64_t work, nodes; /* spent by the exact search */
    int n_solves;        /* decision searches run (capacities tried) */
    bool searched;       /* the exact search ran */
    bool optimal;        /* arena proven minimal (equal to the bound or proven by search) */
    bool time_out;       /* the time limit, not the work limit, ended the search */
} AllocResult;

/* Work units a time limit buys: the default budget of alloc_intervals. */
int64_t alloc_work_for_time(double seconds);
/* The most bytes live at one time: a lower bound of any arena. */
int64_t alloc_max_live(const AllocItem *items, int n);
/* Offsets for n items (offsets[i] for items[i]); returns the arena size.
 * A best-fit greedy over eight passes (orders by size, lifetime, size x
 * lifetime and start; best and first fit), then, if that is above the target
 * (capacity, else max-live) by more than search_above, the exact search of
 * passes/alloc_search.c (MiniMalloc-style branch-and-bound over canonical
 * placements, with restarts), deciding the target first, then bisecting;
 * the best placement found is kept. Deterministic for a given work_limit
 * unless the time limit cuts the search. r may be NULL. */
int64_t alloc_intervals_ex(const AllocItem *items, int n, int64_t *offsets, const AllocOptions *o, AllocResult *r);
/* Minimise the arena (<= 0: greedy only): the work budget is
 * alloc_work_for_time(time_limit_s), normally a fraction of that time, and
 * the search never runs longer than time_limit_s. */
int64_t alloc_intervals(const AllocItem *items, int n, int64_t *offsets, double time_limit_s);
/* Independent check: every offset aligned and >= 0, every buffer inside the
 * arena, no two conflicting buffers overlapping. Writes the first violation. */
bool alloc_check(const AllocItem *items, int n, const int64_t *offsets, int64_t arena, char *err, size_t err_len);

/* What alloc_assign uses (work_limit < 0 until the first call sets it).
 * Defaults: search when the greedy arena is more than 1% above max-live, with
 * the work of 0.5 s (alloc_work_for_time) and a 2 s safety net. The
 * environment variable ACC_ALLOC_SEARCH=SECONDS sets the work budget (0:
 * greedy only; the safety net grows to 4x). */
extern AllocOptions alloc_pipeline_options;

/* A MiniMalloc CSV instance: header `id,lower,upper,size` (columns in any
 * order; an `alignment` column is optional, an `offset` column is ignored). */
typedef struct {
    AllocItem *items;
    char **ids;
    int n;
} AllocInstance;

/* Reads an instance; false with "PATH:LINE: message" in err on any bad input. */
bool alloc_read_csv(const char *path, AllocInstance *inst, char *err, size_t err_len);
bool alloc_parse_csv(FILE *f, const char *name, AllocInstance *inst, char *err, size_t err_len);
/* Writes id,lower,upper,size,offset. */
void alloc_write_csv(const AllocInstance *inst, const int64_t *offsets, FILE *f);
void alloc_instance_free(AllocInstance *inst);

/* Re-simulate the schedule: every read finds its buffer live and computed from
 * the right node, no two live buffers overlap, everything fits in the arena.
 * Prints the first violation and returns false. */
bool plan_check(const Schedule *s, FILE *err);

/* ---- cost model ------------------------------------------------------------ */

/* A hardware profile (hw/<name>.hw): key = value lines. */
typedef struct {
    char name[128];
    double matmul_flops;      /* FLOP/s of GEMM-like ops (matmul, attention) */
    double matmul_flops_bf16; /* the same on bf16 operands (0 in the file: matmul_flops) */
    double vector_flops;      /* FLOP/s of everything else */
    double mem_bw;            /* bytes/s */
    double launch_latency;    /* seconds per kernel */
    double host_bw;           /* bytes/s of a copy between the arena and host memory, each way (0 in the
                                 file: mem_bw / 2, a copy within one memory reads and writes) */
    double host_latency;      /* seconds per such copy (0 in the file: launch_latency) */
    double coll_bw;           /* data parallel: bytes/s of a collective's bus bandwidth (as nccl-tests'
                                 busbw: an all-reduce of B bytes on R ranks takes 2 (R-1)/R B / coll_bw; 0 in
                                 the file: host_bw, a copy through shared memory) */
    double coll_latency;      /* seconds per collective (0 in the file: host_latency) */
} HwProfile;

/* Load profile NAME from the hw/ directory (or a path ending in .hw). */
bool hw_load(const char *name, HwProfile *hw, char *err, size_t err_len);
/* Bytes a node's forward reads and writes. */
double cost_bytes(const Graph *g, const Node *n);
/* Roofline time of a node's forward: max(FLOPs / rate, bytes / bandwidth)
 * plus the launch latency. The backward is costed as twice the forward. */
double cost_fwd_time(const Graph *g, const Node *n, const HwProfile *hw);
/* The time of an offloaded tensor's two copies (to host memory and back):
 * its bytes, tail included, each way at host_bw, plus two host_latency. */
double cost_transfer_time(const Node *n, const HwProfile *hw);

/* Data parallel: the collectives' time under the cost model. The step's
 * steps take their roofline time (a backward twice its forward), the
 * collectives run one after another beside them, each from the end of the
 * step that makes its bucket final; what ends after the backward is
 * exposed. The optimizer's all-gathers (ZeRO) follow the step. */
typedef struct {
    double comm_time;    /* the gradients' collectives, end to end */
    double exposed_time; /* of which after the backward's end */
    double gather_time;  /* ZeRO: the parameters' all-gathers after the update */
    double backward_time;
} DpTiming;
DpTiming dp_timing(const DpLayout *d, const Schedule *s, const HwProfile *hw);

/* ---- the planner (planner/) ------------------------------------------------ */

typedef enum { PLAN_OPTIMAL, PLAN_HEURISTIC, PLAN_POLICY, PLAN_INFEASIBLE } PlanStatus;

typedef enum { POL_NONE, POL_FULL, POL_EVERY, POL_UNIFORM, POL_SELECTIVE, POL_OPS, POL_SQRT, POL_OPTIMAL } PolicyKind;

/* A policy, parsed once (passes/policy.c). */
typedef struct {
    PolicyKind kind;
    int k;               /* every:K, uniform:N */
    bool keep[OP_COUNT]; /* ops:LIST: the op kinds whose outputs are saved (linear with matmul) */
    const char *text;    /* as written: none full every:K uniform:N selective ops:LIST sqrt optimal */
} Policy;

/* Parse a policy string; false with the reason in err (for a usage error). */
bool plan_policy_parse(const char *text, Policy *out, char *err, size_t err_len);
/* A built-in policy string (a bad one is a compiler bug). */
Policy plan_policy(const char *text);

typedef struct {
    Policy policy;
    int64_t budget_bytes;    /* the whole step's peak, the workspace included; <= 0: unbounded */
    int64_t workspace_bytes; /* the target's reservation after the schedule's arena (0: none) */
    double time_limit_s;
    const HwProfile *hw;
    OptState optimizer;            /* AdamW state in the arena: none, f32 or bf16 */
    const char *const *save_globs; /* from the command line (the DSL's are in the graph) */
    int n_save_globs;
    const char *const *recompute_globs;
    int n_recompute_globs;
    int64_t staging_bytes; /* micro-batches: the full batch's inputs, after the schedule's arena (0: none) */
    int64_t host_bytes;    /* offload: the host memory its copies may use (0: no offload) */
    const DpLayout *dp;    /* data parallel: the ranks' buckets and shard (NULL: one rank) */
} PlanOptions;

typedef struct {
    Decision *dec; /* [n] */
    PlanStatus status;
    int64_t peak_bytes; /* the arena of the plan's schedule */
    int64_t max_live_bytes;
    double recompute_time, recompute_flops, fwd_time, bwd_time;
    double transfer_time; /* the offloaded tensors' copies, all of their time (sched_copy_time) */
    double exposed_time;  /* what the step waits for them (recompute_time includes it) */
    int64_t host_bytes;   /* the host arena of the offloaded copies */
    double bound;         /* lower bound on recompute_time (optimal: equal) */
    double solve_s;
    int n_evals;      /* schedules simulated */
    int n_candidates; /* nodes the plan may drop */
    /* policy optimal over the budget, and plan_min_peak: the smallest peak
     * the planner reaches (dec holds that plan); 0 when not searched */
    int64_t min_peak_bytes;
    bool min_peak_exact;    /* false: --time-limit ended that search (the minimum is at most this) */
    bool min_peak_proven;   /* no plan peaks lower: every assignment scored, the covering rows of the
                                   save-all schedule infeasible one allocation unit below, or the
                                   branch and bound (ACC_EXHAUSTIVE_MAX) finding nothing there */
    bool timed_out;         /* --time-limit ended a search: the best plan found by then, and the bound
                                   the time allowed (0 when none was computed) */
    char solver_error[200]; /* GLPK's first failure ("": none): the search went on without that
                                   solve, so the plan is checked but may cost more than the optimum */
} Plan;

/* ---- the step's budget (passes/budget.c) ---- */

/* The workspace starts at this boundary after the schedule's arena. */
#define PLAN_WORKSPACE_ALIGN 256

/* The memory of the whole step: the schedule's arena, then the full
 * batch's inputs when the step runs micro-batches (each micro-batch's slice
 * is copied into the schedule's inputs), then the target's workspace (if
 * any) at the next PLAN_WORKSPACE_ALIGN boundary. */
typedef struct {
    int64_t schedule_bytes;   /* the schedule's arena */
    int64_t staging_offset;   /* where the full batch's inputs start (= schedule_bytes) */
    int64_t staging_bytes;    /* 0: one batch, no staging */
    int64_t workspace_offset; /* where the workspace starts */
    int64_t workspace_bytes;
    int64_t total_bytes; /* the arena the runtime allocates: the planned peak */
} StepMemory;

/* What the schedule's arena may use of o's budget: the one place the planner
 * reads the budget (0: unbounded; at least 1 when there is a budget). */
int64_t plan_schedule_budget(const PlanOptions *o);
/* The step's memory around a schedule arena of schedule_bytes: the one place
 * where "arena plus workspace" is computed. */
StepMemory plan_step_memory(const PlanOptions *o, int64_t schedule_bytes);

/* Are the command line's --save/--recompute patterns (save[0..n_save),
 * rec[0..n_rec)) honest constraints on g? Each must be well formed and match
 * a computed tensor (not only inputs and parameters), and no tensor may be
 * both saved and recomputed by them together with the model's own
 * annotations and save/recompute statements (which the front end checked
 * among themselves). On failure err names the pattern, and for a conflict
 * both sources and the tensor, whose node *at is (-1: the error is the
 * pattern's, not a tensor's) for a diagnostic at its DSL line. */
bool plan_check_patterns(const Graph *g, const char *const *save, int n_save, const char *const *rec, int n_rec,
                         char *err, size_t err_len, int *at);
/* requires: autodiff of g. provides: a decision per node by the policy, the
 * user's constraints applied, scored by the same schedule and allocation as
 * code generation. status PLAN_INFEASIBLE when the policy's plan does not fit. */
void plan_make(const Graph *g, const Autodiff *ad, const PlanOptions *o, Plan *out);
void plan_free(Plan *p);
/* The solver status of plan.json and explain: optimal, heuristic, policy,
 * infeasible, or time_limit (a heuristic plan, --time-limit ended a search). */
const char *plan_status_name(const Plan *p);
/* The smallest peak acc's planner reaches for g (out->min_peak_bytes, its
 * plan in out), for the infeasible-budget error: plan_make (optimal) at
 * exactly this budget fits, one allocation unit (64 bytes) below it does not,
 * and no policy peaks below it - unless --time-limit ended the search
 * (min_peak_exact false). plan_make with the optimal policy fills the same
 * fields when the budget is below it. */
void plan_min_peak(const Graph *g, const Autodiff *ad, const PlanOptions *o, Plan *out);
/* Without --time-limit, the search for the minimum stops after this many
 * seconds (min_peak_exact false): graphs of several thousand nodes. */
#define PLAN_MIN_PEAK_DEFAULT_S 60

/* ==== published graphs (dag/: dag_json.c, dag.c, dag_milp.c) ================
 * Planning a bare DAG given as data, in the format the Checkmate (MLSys 2020)
 * and MOCCASIN (ICML 2023) papers published (networkx node-link JSON): each
 * node has a compute cost and an output size. The model is the papers':
 * a schedule is a sequence of node executions (every node at least once, its
 * inputs computed earlier); each computed output is held from its execution to
 * the last execution that reads it (reads take the most recent copy) and freed
 * right after; the memory at an execution is the sum of the outputs held then
 * (its inputs and its own output included). The baseline executes each node
 * once in the topological order; a budget is a fraction of its peak. The cost
 * of a plan is its total compute, recomputation included. Independent of the
 * tensor IR above: this is acc's planner measured on the papers' inputs.
 */

typedef struct {
    int n; /* nodes, renumbered 0..n-1 in the topological order used */
    int n_edges;
    double *cost;       /* [n] compute cost (the file's unit) */
    int64_t *mem;       /* [n] output size (bytes or the file's unit) */
    bool *backward;     /* [n] Checkmate's forward/backward flag (false if absent) */
    char **label;       /* [n] the file's node id, as text */
    int *in_off, *in;   /* inputs of i: in[in_off[i] .. in_off[i+1]), ascending */
    int *out_off, *out; /* users of i: out[out_off[i] .. out_off[i+1]), ascending */
    char *title;        /* the graph's "name", or "" */
    const char *order;  /* where the order came from: "graph.order", "ids", "topological sort" */
} Dag;

/* Parse node-link JSON (text[0..len)). Bad input: false and a message with
 * the byte offset in err; never aborts. */
bool dag_parse_json(const char *text, size_t len, Dag *d, char *err, size_t err_len);
/* Write d in the node-link JSON dag_parse_json reads (a graph named name):
 * a case to reproduce with acc plan --graph. */
void dag_write_json(const Dag *d, const char *name, FILE *f);
bool dag_load(const char *path, Dag *d, char *err, size_t err_len);
/* Build a Dag from arrays (tests): edges src[k] -> dst[k] must go forward. */
void dag_from_arrays(Dag *d, int n, const double *cost, const int64_t *mem, int n_edges, const int *src,
                     const int *dst);
void dag_free(Dag *d);

typedef struct {
    bool valid;   /* every node executed, every read finds a copy */
    int64_t peak; /* the most memory held at one execution */
    int peak_event;
    double compute; /* summed cost of every execution */
    int n_events, n_recompute;
} DagSim;

/* The one simulator every plan is scored by. ev[0..n_ev) are node indices in
 * execution order; mem_at (optional, [n_ev]) receives the memory per event. */
void dag_simulate(const Dag *d, const int *ev, int n_ev, DagSim *out, int64_t *mem_at);
/* Peak of the topological order, each output freed after its last use,
 * computed from live ranges (independently of dag_simulate). */
int64_t dag_baseline_peak(const Dag *d);
double dag_baseline_compute(const Dag *d);
/* No schedule runs in less: the largest node with all its inputs. */
int64_t dag_min_peak(const Dag *d);

/* DAG_EXHAUSTIVE[_STAGED]: the reference of the tests (dag_exhaustive), for
 * benchmarks; graphs of at most DAG_EXHAUSTIVE_MAX[_STAGED] nodes. */
typedef enum {
    DAG_ACC,
    DAG_CHECKMATE_MILP,
    DAG_CHECKMATE_LP,
    DAG_INTERVALS,
    DAG_EXHAUSTIVE,
    DAG_EXHAUSTIVE_STAGED
} DagMethod;

typedef struct {
    DagMethod method;
    int64_t budget;
    double time_limit_s; /* <= 0: default (acc 20 s, checkmate 60 s) */
    const char *emit_lp; /* write the integer program here (glp_write_lp) */
    bool verbose;        /* progress on stderr */
    int copies;          /* intervals: computations per node at most (0: 2) */
    int slots;           /* intervals: recomputations per stage at most (0: copies - 1, at least 1) */
} DagPlanOptions;

/* dag_plan's searches keep node x stage tables: larger graphs that do not fit
 * as they are get status "too_large" (the topological order) at once */
#define DAG_DENSE_MAX_NODES 32768

typedef struct {
    int *ev, n_ev;    /* the schedule */
    DagSim sim;       /* scored by dag_simulate */
    bool fits;        /* sim.valid && sim.peak <= budget */
    char status[24];  /* optimal, feasible, time_limit, infeasible, no_solution, too_large; acc says
                       * infeasible only with a proof for every schedule (bound_scope "all schedules") */
    double objective; /* the solver's objective (total compute); NAN if none */
    double bound;     /* proven lower bound on total compute; NAN if none */
    double gap;       /* (compute - bound) / compute; NAN if no bound */
    double solve_s;
    int n_binaries, n_rows;  /* size of the integer program solved (0: none) */
    const char *bound_scope; /* what the bound holds for: "all schedules", "checkmate", "acc model" */
    int64_t least_peak;      /* no plan fits: the least peak of a schedule acc found (-1: none looked for) */
    int64_t recursive_peak;  /* no plan fits: a peak some schedule reaches, the recursive one's (dag_minpeak.c),
                              * not written out (-1: not computed) */
    char note[200];          /* what a status without a plan rests on, or "" */
} DagPlan;

/* Plan d under o->budget with o->method. Returns false with err set on a
 * failure of the tool (a file that cannot be written), not on a plan that
 * does not fit (p->fits is false then). */
bool dag_plan(const Dag *d, const DagPlanOptions *o, DagPlan *p, char *err, size_t err_len);
void dag_plan_free(DagPlan *p);
/* The reference of the tests (dag_exhaustive.c): the cheapest total compute
 * of any schedule whose first executions follow the topological order
 * (recomputations anywhere, in any order), by a plain shortest-path search
 * over (next node, set of outputs held); staged: recomputations between two
 * first executions in ascending order, Checkmate's plan space. -1: none fits.
 * ev (may be NULL): the witness schedule, malloc'ed, n_ev events. */
#define DAG_EXHAUSTIVE_MAX 18
#define DAG_EXHAUSTIVE_MAX_STAGED 14
double dag_exhaustive(const Dag *d, int64_t budget, bool staged, int **ev, int *n_ev);
/* ==== end of published graphs ============================================== */

#endif
