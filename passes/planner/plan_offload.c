/* plan_offload.c - offload as a free decision of the planner, by the
 * copies' exposed time.
 *
 * The searches price a plan by sched_measure, every copy at the full time
 * of its two transfers, an upper bound of what it costs: in the integer
 * programs (plan_cut.c, plan_search.c) a tensor the backward reads has an
 * offload column beside its recompute one and the chosen fates are
 * DEC_OFFLOAD and DEC_RECOMPUTE; where no program decides (the policies'
 * and enumeration's plans, the widened set) the drops of the seed set that
 * choose_offloads picks are offloads. Here the plan they found is improved
 * by moves among the three fates of every tensor the backward reads - kept,
 * recomputed or offloaded - each plan scored as its code runs
 * (pl_evaluate_exposed: allocated, its copies on the copy stream, costing
 * only the time the step waits for them) and kept only when its arena fits
 * the budget and its host arena the host budget:
 *
 *   - single moves of a dropped tensor: recomputed <-> offloaded, or saved;
 *   - pairs: two recomputed tensors of one block offloaded together;
 *   - trades: offload a saved tensor (its copies may hide behind compute)
 *     and save a recomputed one in the room it leaves.
 *
 * A move is applied as soon as it lowers the cost (the dropped tensors
 * costliest first), and the scan repeated while one does; the evaluations
 * are counted (OFFLOAD_EVALS, OFFLOAD_WORK), so the plan does not depend on
 * the machine. The result is never worse than the searches' plan by the
 * exact model: the search starts there.
 */
#include <string.h>

#include "planner_internal.h"

#define OFFLOAD_EVALS 3000  /* plans scored by one search at most */
#define OFFLOAD_WORK 500000 /* and at most this many nodes' worth of scoring (evaluations x nodes) */
#define OFFLOAD_PAIRS 8     /* saved and recomputed tensors tried in trades, each */

typedef struct {
    Ctx *c;
    int64_t budget;
    int evals;
    double best; /* the cost of the plan so far */
} Search;

static bool spent(const Search *q) {
    return q->evals >= OFFLOAD_EVALS || (double)q->evals * q->c->g->nodes.n > OFFLOAD_WORK || pl_out_of_time(q->c);
}

/* Whether trial fits and costs less than the plan so far (then its cost is
 * the new q->best). Measured first without an allocation (sched_measure): a
 * max-live over the budget or a recompute time alone at the cost to beat
 * rules it out (the arena is at least the max-live, the exposed time at
 * least 0); most moves end there, and an allocation costs as much as
 * hundreds of measures. */
static bool better(Search *q, const Decision *trial) {
    if (spent(q)) return false;
    q->evals++;
    SchedMeasure m;
    sched_measure(q->c->index, trial, q->c->time, &m);
    q->c->n_evals++;
    if (m.peak_live_bytes > q->budget || m.recompute_time >= q->best - 1e-12) return false;
    Eval e;
    int64_t host;
    pl_evaluate_exposed(q->c, trial, &e, &host);
    if (e.arena > q->budget || host > q->c->o->host_bytes || e.cost >= q->best - 1e-12) return false;
    q->best = e.cost;
    return true;
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
    int *saved = pool_alloc(&mem, (size_t)n * sizeof(int)), *dropped = pool_alloc(&mem, (size_t)n * sizeof(int));
    Search q = {c, budget, 0, 0};
    Eval cur;
    int64_t host;
    pl_evaluate_exposed(c, dec, &cur, &host);
    q.best = cur.cost;
    bool improved = cur.arena <= budget && host <= c->o->host_bytes; /* else (not expected) nothing is tried */
    while (improved && !spent(&q)) {
        improved = false;
        int ns = 0, nd = 0;
        for (int i = 0; i < n; i++)
            if (c->cand[i] && c->read[i] && c->forced[i] < 0) {
                if (dec[i] == DEC_SAVE) saved[ns++] = i;
                else dropped[nd++] = i;
            }
        /* single moves of the dropped tensors, the costliest first, each
         * applied when it pays (alone, a save dropped costs more) */
        pl_sort_by_time(c, dropped, nd);
        for (int k = 0; k < nd && !spent(&q); k++) {
            int i = dropped[k];
            static const Decision fates[] = {DEC_SAVE, DEC_RECOMPUTE, DEC_OFFLOAD};
            for (int f = 0; f < 3; f++) {
                if (fates[f] == dec[i]) continue;
                memcpy(trial, dec, (size_t)n * sizeof(Decision));
                trial[i] = fates[f];
                if (better(&q, trial)) {
                    memcpy(dec, trial, (size_t)n * sizeof(Decision));
                    improved = true;
                    break;
                }
            }
        }
        if (improved) continue;
        /* pairs: two recomputed tensors of one block (or both outside
         * blocks) offloaded together: the copies of both may hide where
         * those of either alone do not */
        for (int k = 0; k < nd && !improved && !spent(&q); k++)
            for (int l = k + 1; l < nd && !improved && !spent(&q); l++) {
                int i = dropped[k], j = dropped[l];
                if (dec[i] != DEC_RECOMPUTE || dec[j] != DEC_RECOMPUTE || c->group[i] != c->group[j]) continue;
                memcpy(trial, dec, (size_t)n * sizeof(Decision));
                trial[i] = trial[j] = DEC_OFFLOAD;
                if (better(&q, trial)) memcpy(dec, trial, (size_t)n * sizeof(Decision)), improved = true;
            }
        if (improved) continue;
        /* trades: the largest saved tensors offloaded, the costliest recomputations saved */
        for (int a = 1; a < ns; a++)
            for (int b = a; b > 0 && bytes_of(c, saved[b]) > bytes_of(c, saved[b - 1]); b--) {
                int t = saved[b];
                saved[b] = saved[b - 1], saved[b - 1] = t;
            }
        for (int a = 0; a < ns && a < OFFLOAD_PAIRS && !improved; a++)
            for (int k = 0, tried = 0; k < nd && tried < OFFLOAD_PAIRS && !improved; k++) {
                if (dec[dropped[k]] != DEC_RECOMPUTE) continue;
                tried++;
                memcpy(trial, dec, (size_t)n * sizeof(Decision));
                trial[saved[a]] = DEC_OFFLOAD, trial[dropped[k]] = DEC_SAVE;
                if (better(&q, trial)) memcpy(dec, trial, (size_t)n * sizeof(Decision)), improved = true;
            }
    }
    pool_free(&mem);
}
