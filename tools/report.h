/* report.h - what acc tells about a plan: plan.json (deterministic, for
 * regression tests and `acc diff`) and the human explanation. */
#ifndef ACC_REPORT_H
#define ACC_REPORT_H

#include "passes.h"

typedef struct {
    const char *policy, *hw, *target;
    const char *precision; /* "fp32", "tf32" or "bf16" */
    int64_t budget_bytes;
    StepMemory mem;           /* the schedule's arena, then (device targets) the workspace */
    const char *codegen_json; /* device targets: a JSON object on the kernel images, or NULL */
} ReportInfo;

void report_plan_json(const Graph *g, const Autodiff *ad, const Schedule *s, const Plan *p, const HwProfile *hw,
                      const ReportInfo *info, FILE *out);
void report_explain(const Graph *g, const Autodiff *ad, const Schedule *s, const Plan *p, const HwProfile *hw,
                    const ReportInfo *info, FILE *out);
/* Memory by category at the plan's peak; sums to the arena. */
void report_breakdown(const Schedule *s, FILE *out);

#endif
