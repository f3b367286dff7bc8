/* report.h - what acc tells about a plan: plan.json (deterministic, for
 * regression tests and `acc diff`) and the human explanation. */
#ifndef ACC_REPORT_H
#define ACC_REPORT_H

#include "passes.h"

/* --micro-batch: the counts of micro-batches the planner tried. */
#define ACC_MICRO_MAX 64
typedef struct {
    int n;                            /* micro-batches */
    bool fits;                        /* its plan fits the budget */
    int64_t peak_bytes;               /* the step's memory; when it does not fit, its smallest */
    double step_time, recompute_time; /* estimated: the whole step (n runs), its recomputations */
} MicroCandidate;

typedef struct {
    int64_t batch;  /* the whole batch B */
    int chosen;     /* micro-batches of the plan */
    bool automatic; /* --micro-batch auto: the planner chose */
    float loss_scale;
    int n_cand;
    MicroCandidate cand[ACC_MICRO_MAX];
} MicroReport;

typedef struct {
    const char *policy, *hw, *target;
    const char *precision; /* "fp32", "tf32" or "bf16" */
    int64_t budget_bytes;
    StepMemory mem;            /* the schedule's arena, then (device targets) the workspace */
    const char *codegen_json;  /* device targets: a JSON object on the kernel images, or NULL */
    const MicroReport *micro;  /* --micro-batch, or NULL: one batch */
    int64_t host_budget_bytes; /* --host-budget (0: no offload) */
    const DpLayout *dp;        /* --ranks: the buckets and the shard (NULL or one rank: none) */
    int64_t bucket_cap_bytes;  /* --bucket-size */
} ReportInfo;

void report_plan_json(const Graph *g, const Autodiff *ad, const Schedule *s, const Plan *p, const HwProfile *hw,
                      const ReportInfo *info, FILE *out);
void report_explain(const Graph *g, const Autodiff *ad, const Schedule *s, const Plan *p, const HwProfile *hw,
                    const ReportInfo *info, FILE *out);
/* Memory by category at the plan's peak; sums to the arena. */
void report_breakdown(const Schedule *s, FILE *out);
/* What the step holds past the schedule's arena (the staging of the full
 * batch, the target's workspace with its alignment) and the step's total,
 * which the planned peak and the budget count; nothing when there is none. */
void report_step_rows(const StepMemory *m, const char *target, FILE *out);

#endif
