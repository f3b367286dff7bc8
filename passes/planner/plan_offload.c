/* plan_offload.c - offload as a free decision of the planner.
 *
 * The searches (plan_cut.c, plan_search.c, the exchange in planner.c) price
 * a plan by sched_measure: each tensor of the seed set that choose_offloads
 * picks (copies cheaper than recomputing, within the host budget) is
 * offloaded when dropped, at the full time of its two copies, an upper bound
 * of what it costs. Here the plan they found is improved by moves among the
 * three fates of every tensor the backward reads - kept, recomputed or
 * offloaded, whether or not the seed set holds it - each plan scored as its
 * code runs (pl_evaluate_exposed: allocated, its copies on the copy stream,
 * costing only the time the step waits for them) and kept only when its
 * arena fits the budget and its host arena the host budget:
 *
 *   - single moves of a dropped tensor: recomputed <-> offloaded, or saved;
 *   - trades: offload a saved tensor (its copies may hide behind compute)
 *     and save a recomputed one in the room it leaves.
 *
 * The best move of each round is applied while one lowers the cost; the
 * evaluations are counted (OFFLOAD_EVALS), so the plan does not depend on
 * the machine. The result is never worse than the seed plan by the exact
 * model: the search starts there.
 */
#include <string.h>

#include "planner_internal.h"

#define OFFLOAD_EVALS 3000 /* plans scored by one search at most */
#define OFFLOAD_PAIRS 8    /* saved and recomputed tensors tried in trades, each */

typedef struct {
    Ctx *c;
    int64_t budget;
    int evals;
    double best; /* the cost to beat */
    Decision *best_dec;
} Search;

/* Score trial; keep it as the best move if it fits and is cheaper. */
static void try_plan(Search *q, const Decision *trial) {
    if (q->evals >= OFFLOAD_EVALS || pl_out_of_time(q->c)) return;
    q->evals++;
    Eval e;
    int64_t host;
    pl_evaluate_exposed(q->c, trial, &e, &host);
    if (e.arena > q->budget || host > q->c->o->host_bytes || e.cost >= q->best - 1e-12) return;
    q->best = e.cost;
    memcpy(q->best_dec, trial, (size_t)q->c->g->nodes.n * sizeof(Decision));
}

static int64_t bytes_of(const Ctx *c, int i) { return node_tensor_bytes(graph_node(c->g, i)); }

void pl_offload_search(Ctx *c, Decision *dec, int64_t budget) {
    int n = c->g->nodes.n;
    for (int i = 0; i < n; i++) { /* the seed set's drops are offloads; from here every fate is explicit */
        if (dec[i] == DEC_RECOMPUTE && c->offload[i]) dec[i] = DEC_OFFLOAD;
        c->offload[i] = false;
    }
    c->so.offload = NULL;
    Pool mem = {0};
    Decision *trial = pool_alloc(&mem, (size_t)n * sizeof(Decision));
    int *saved = pool_alloc(&mem, (size_t)n * sizeof(int)), *recomputed = pool_alloc(&mem, (size_t)n * sizeof(int));
    Search q = {c, budget, 0, 0, pool_alloc(&mem, (size_t)n * sizeof(Decision))};
    Eval cur;
    int64_t host;
    pl_evaluate_exposed(c, dec, &cur, &host);
    if (cur.arena > budget || host > c->o->host_bytes) { /* not expected: the seed plan fits */
        pool_free(&mem);
        return;
    }
    while (q.evals < OFFLOAD_EVALS && !pl_out_of_time(c)) {
        q.best = cur.cost;
        int ns = 0, nr = 0;
        for (int i = 0; i < n; i++) {
            if (!c->cand[i] || !c->read[i] || c->forced[i] >= 0) continue;
            if (dec[i] == DEC_SAVE) { /* alone, a save dropped costs more: only in trades */
                saved[ns++] = i;
                continue;
            }
            if (dec[i] == DEC_RECOMPUTE) recomputed[nr++] = i;
            static const Decision fates[] = {DEC_SAVE, DEC_RECOMPUTE, DEC_OFFLOAD};
            for (int f = 0; f < 3; f++) {
                if (fates[f] == dec[i]) continue;
                memcpy(trial, dec, (size_t)n * sizeof(Decision));
                trial[i] = fates[f];
                try_plan(&q, trial);
            }
        }
        if (q.best == cur.cost) { /* trades: the largest saved tensors, the costliest recomputations */
            for (int a = 1; a < ns; a++)
                for (int b = a; b > 0 && bytes_of(c, saved[b]) > bytes_of(c, saved[b - 1]); b--) {
                    int t = saved[b];
                    saved[b] = saved[b - 1], saved[b - 1] = t;
                }
            pl_sort_by_time(c, recomputed, nr);
            for (int a = 0; a < ns && a < OFFLOAD_PAIRS; a++)
                for (int b = 0; b < nr && b < OFFLOAD_PAIRS; b++) {
                    memcpy(trial, dec, (size_t)n * sizeof(Decision));
                    trial[saved[a]] = DEC_OFFLOAD, trial[recomputed[b]] = DEC_SAVE;
                    try_plan(&q, trial);
                }
        }
        if (q.best == cur.cost) break;
        memcpy(dec, q.best_dec, (size_t)n * sizeof(Decision));
        cur.cost = q.best;
    }
    pool_free(&mem);
}
