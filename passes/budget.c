/* budget.c - the budget of the training step, read in one place.
 *
 * The driver gives the planner the whole step's budget and the target's
 * workspace (the device library's reservation, placed after the schedule's
 * arena at the next PLAN_WORKSPACE_ALIGN boundary), and with micro-batches
 * the staging of the full batch's inputs between the two. Here, and only here, the
 * budget becomes what the schedule may use, and a schedule's arena becomes
 * the step's memory (the arena the runtime allocates), which the plan's
 * reports and the generated descriptor state.
 */
#include "passes.h"

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/* The schedule's arena and the staging are multiples of ACC_ALIGN, so the
 * staging fits after any arena that fits the budget less the staging. */
int64_t plan_schedule_budget(const PlanOptions *o) {
    if (o->budget_bytes <= 0) return 0; /* unbounded */
    int64_t b = o->budget_bytes;
    if (o->workspace_bytes) b = (b - o->workspace_bytes) / PLAN_WORKSPACE_ALIGN * PLAN_WORKSPACE_ALIGN;
    b -= o->staging_bytes;
    return b < 1 ? 1 : b; /* nothing fits: infeasible, reported with the minimum */
}

StepMemory plan_step_memory(const PlanOptions *o, int64_t schedule_bytes) {
    int64_t end = schedule_bytes + o->staging_bytes;
    StepMemory m = {schedule_bytes, schedule_bytes, o->staging_bytes, end, o->workspace_bytes, end};
    if (o->workspace_bytes) {
        m.workspace_offset = align_up(end, PLAN_WORKSPACE_ALIGN);
        m.total_bytes = m.workspace_offset + o->workspace_bytes;
    }
    return m;
}
