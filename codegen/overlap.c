/* overlap.c - where the emitted code issues and waits for the copies of
 * offloaded tensors: sched_copies' positions (passes/copies.c, which the
 * planner's exposed-time model reads too), with each issue moved to the
 * position its step is emitted at: a step fused into an elementwise chain is
 * emitted with the chain's last step, so an issue after it comes after the
 * chain (a wait before it comes before the chain in any case).
 */
#include "codegen.h"

/* The position step t is emitted at. */
static int position(const CgFusion *fu, int t) {
    int c = t >= 0 ? fu->chain_of[t] : -1;
    return c >= 0 ? fu->chains.v[c].ops[fu->chains.v[c].n_ops - 1].step : t;
}

void cg_copies(const Schedule *s, const CgFusion *fu, CgCopies *out) {
    sched_copies(s, NULL, out);
    for (int k = 0; k < out->v.n; k++) out->v.v[k].issue_after = position(fu, out->v.v[k].issue_after);
}

void cg_copies_free(CgCopies *c) { sched_copies_free(c); }
