/* dag_exhaustive.c - the reference the graph planner is tested against: the
 * cheapest schedule of a small graph by a plain shortest-path search over
 * every state, with the schedule that reaches it (the witness).
 *
 * requires: a Dag of at most 18 nodes (staged: 14), a budget. provides: the
 * least total compute of any schedule whose first executions follow the
 * topological order, recomputations anywhere (staged: recomputations between
 * two first executions in ascending order, Checkmate's plan space), or -1
 * when none fits; the witness schedule.
 *
 * Deliberately simple and independent of acc's own searches (dag_search.c
 * prunes and bounds; this does neither): Dijkstra over every state (next
 * first execution t, set P of outputs held[, the last node recomputed in this
 * stage]) with dense tables. A step executes t, or an earlier node not held
 * whose inputs are held (the memory then: P plus the output), or frees a
 * held output. Memory at an execution counts everything held, so the
 * simulator, which frees each copy right after its last read, scores the
 * witness at the same compute and at most the same peak.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

typedef struct {
    double dist;
    uint32_t state;
} HeapItem;

typedef VEC(HeapItem) HeapVec;

static void heap_push(HeapVec *h, HeapItem x) {
    VEC_PUSH(*h, x);
    for (int k = h->n - 1; k > 0 && h->v[(k - 1) / 2].dist > h->v[k].dist; k = (k - 1) / 2) {
        HeapItem t = h->v[k];
        h->v[k] = h->v[(k - 1) / 2];
        h->v[(k - 1) / 2] = t;
    }
}

static HeapItem heap_pop(HeapVec *h) {
    HeapItem top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int k = 0;;) {
        int l = 2 * k + 1, r = l + 1, s = k;
        if (l < h->n && h->v[l].dist < h->v[s].dist) s = l;
        if (r < h->n && h->v[r].dist < h->v[s].dist) s = r;
        if (s == k) break;
        HeapItem t = h->v[k];
        h->v[k] = h->v[s];
        h->v[s] = t;
        k = s;
    }
    return top;
}

double dag_exhaustive(const Dag *d, int64_t budget, bool staged, int **ev, int *n_ev) {
    int n = d->n;
    ACC_ASSERT(n >= 1 && n <= (staged ? DAG_EXHAUSTIVE_MAX_STAGED : DAG_EXHAUSTIVE_MAX));
    if (ev) *ev = NULL, *n_ev = 0;
    uint32_t full = 1u << n;
    uint32_t lasts = staged ? (uint32_t)n + 1 : 1; /* last recomputed + 1 (0: none yet) */
    size_t n_states = (size_t)(n + 1) * lasts * full;
    /* dist + 1 (0: not reached), so that pages of states never reached stay untouched */
    double *dist = acc_xcalloc(n_states, sizeof(double));
    uint32_t *pred = acc_xcalloc(n_states, sizeof(uint32_t));
    int8_t *node = acc_xcalloc(n_states, 1); /* the node executed into this state, -1: a free */
    uint32_t inmask[DAG_EXHAUSTIVE_MAX] = {0};
    for (int v = 0; v < n; v++)
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) inmask[v] |= 1u << d->in[k];
#define STATE(t, l, P) ((((uint32_t)(t)*lasts + (uint32_t)(l)) * full) + (P))
    HeapVec h = {0};
    dist[0] = 1;
    heap_push(&h, (HeapItem){0, 0});
    double best = -1;
    uint32_t goal = 0;
    while (h.n) {
        HeapItem it = heap_pop(&h);
        if (it.dist + 1 > dist[it.state]) continue;
        uint32_t P = it.state % full, tl = it.state / full, t = tl / lasts, l = tl % lasts;
        if (t == (uint32_t)n) {
            best = it.dist, goal = it.state;
            break;
        }
        int64_t held = 0;
        for (int i = 0; i < n; i++)
            if (P >> i & 1) held += d->mem[i];
        for (uint32_t v = staged && l > 0 ? l : 0; v <= t; v++) {
            if ((P >> v & 1) || (inmask[v] & ~P) || held + d->mem[v] > budget) continue;
            uint32_t ns = v == t ? STATE(t + 1, 0, P | 1u << v) : STATE(t, staged ? v + 1 : 0, P | 1u << v);
            double nd = it.dist + d->cost[v];
            if (!dist[ns] || nd + 1 < dist[ns]) {
                dist[ns] = nd + 1, pred[ns] = it.state, node[ns] = (int8_t)v;
                heap_push(&h, (HeapItem){nd, ns});
            }
        }
        for (int u = 0; u < n; u++) {
            if (!(P >> u & 1)) continue;
            uint32_t ns = STATE(t, l, P & ~(1u << u));
            if (!dist[ns] || it.dist + 1 < dist[ns]) {
                dist[ns] = it.dist + 1, pred[ns] = it.state, node[ns] = -1;
                heap_push(&h, (HeapItem){it.dist, ns});
            }
        }
    }
#undef STATE
    if (best >= 0 && ev) {
        VEC(int) rev = {0};
        for (uint32_t s = goal; s != 0; s = pred[s])
            if (node[s] >= 0) VEC_PUSH(rev, node[s]);
        *n_ev = rev.n;
        *ev = acc_xcalloc((size_t)rev.n + 1, sizeof(int));
        for (int e = 0; e < rev.n; e++) (*ev)[e] = rev.v[rev.n - 1 - e];
        VEC_FREE(rev);
    }
    VEC_FREE(h);
    free(dist), free(pred), free(node);
    return best;
}
