/* dag_prune.c - drop the recomputations a schedule that fits can do without:
 * each, most expensive first, is removed when the schedule stays within the
 * budget (its readers then read the earlier copy, held longer); passes until
 * none goes or the deadline. Not a planner: dag.c runs it on every eviction
 * schedule that fits and dag_improve.c after each of its passes.
 *
 * requires: a Dag, a budget, a schedule in stage form (dag_impl.h) that is
 * valid and within the budget (one that is not is left as it is).
 * provides: a subsequence of it, valid and within the budget; the same one
 * that replaying the whole schedule for every candidate would give (the
 * decisions below are exact, not estimates).
 *
 * Why incremental: replaying the schedule per candidate costs O(events) per
 * recomputation, O(events^2) a pass; on MOCCASIN's random_layered_n100 at
 * 0.5437 of its peak an evicted schedule with pebbled stages has 3,000-7,000
 * events, and its pruning took 0.2-2.2 s of a kind's 0.25-2.3 s, which made
 * the number of kinds tried, and so the plan, depend on the machine's load.
 *
 * The memory of the simulator (dag_sim.c) is exact per event: a copy made at
 * event e is held over the events e .. its last read. Removing the
 * recomputation r of v (not v's first copy: only recomputations are
 * candidates, so a previous copy p of v exists) changes only:
 * - v: r's readers read p instead (reads take the latest copy, and p is
 *   the latest before r), so p is held from its last read (before r) on
 *   to r's last read: + mem(v) over the events between p's last read and r
 *   when r has readers; over r .. r's last read one copy of v is held as
 *   before. Nothing reads a copy that no longer exists: validity holds.
 * - r's inputs: the copy c of u that r read, when r was its last read, is
 *   held only to its previous read (or to c itself): - mem(u) from there
 *   to r.
 * - event r itself is gone and no longer counts.
 * Every other event keeps its memory. So, with the schedule within the
 * budget, the drop fits exactly when every event between p's last read and
 * r fits with v added and the shrunk inputs taken off (an r without
 * readers always goes). Accepting a drop updates the memory per event, the
 * last reads and the copies read over the same ranges.
 */
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

/* The events of rec in descending order of their node's cost, stable (a
 * merge sort: an eviction schedule at a tight budget can hold 10^5
 * recomputations, past what an insertion sort can order in time). */
static void sort_by_cost_desc(const Dag *d, const int *ev, int *rec, int n) {
    int *tmp = acc_xcalloc((size_t)n + 1, sizeof(int));
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, k = lo;
            while (i < mid || j < hi)
                tmp[k++] = j >= hi || (i < mid && d->cost[ev[rec[i]]] >= d->cost[ev[rec[j]]]) ? rec[i++] : rec[j++];
        }
        memcpy(rec, tmp, (size_t)n * sizeof(int));
    }
    free(tmp);
}

/* The schedule under pruning, by its original event numbers. */
typedef struct {
    const Dag *d;
    const int *ev;
    int64_t budget;
    int64_t *mem_at; /* memory at each event (gone events: not counted) */
    int *last;       /* event -> the last event that reads its copy (itself if none) */
    int *src, *off;  /* event e reads the copies src[off[e] .. off[e + 1]) (its node's inputs, in order) */
    int *prev;       /* event -> the previous live copy of its node, -1 */
    int *next;       /* event -> the next live copy of its node, -1 */
    uint8_t *gone;
} Prune;

/* Does event k read copy c? */
static bool reads(const Prune *pr, int k, int c) {
    for (int j = pr->off[k]; j < pr->off[k + 1]; j++)
        if (pr->src[j] == c) return true;
    return false;
}

/* Drop recomputation r when the schedule stays within the budget (see the
 * head comment); returns whether it did. */
static bool try_drop(Prune *pr, int r, int *shrunk, int *shrink_to) {
    const Dag *d = pr->d;
    int v = pr->ev[r], p = pr->prev[r], end = pr->last[r];
    ACC_ASSERT(p >= 0);
    /* the copies r read whose last read is r, and their previous read (or themselves) */
    int m = 0;
    for (int j = pr->off[r]; j < pr->off[r + 1]; j++) {
        int c = pr->src[j];
        bool dup = false;
        for (int a = 0; a < m && !dup; a++) dup = shrunk[a] == c;
        if (dup || pr->last[c] != r) continue;
        int k = r - 1;
        while (k > c && (pr->gone[k] || !reads(pr, k, c))) k--;
        shrunk[m] = c, shrink_to[m++] = k;
    }
    if (end > r)
        for (int k = pr->last[p] + 1; k < r; k++) {
            if (pr->gone[k]) continue;
            int64_t mem = pr->mem_at[k] + d->mem[v];
            for (int a = 0; a < m; a++)
                if (k > shrink_to[a]) mem -= d->mem[pr->ev[shrunk[a]]];
            if (mem > pr->budget) return false;
        }
    if (end > r) {
        for (int k = pr->last[p] + 1; k < r; k++) pr->mem_at[k] += d->mem[v];
        for (int k = r + 1; k <= end; k++)
            if (!pr->gone[k])
                for (int j = pr->off[k]; j < pr->off[k + 1]; j++)
                    if (pr->src[j] == r) pr->src[j] = p;
        pr->last[p] = end;
    }
    for (int a = 0; a < m; a++) {
        for (int k = shrink_to[a] + 1; k <= r; k++) pr->mem_at[k] -= d->mem[pr->ev[shrunk[a]]];
        pr->last[shrunk[a]] = shrink_to[a];
    }
    pr->gone[r] = 1;
    pr->next[p] = pr->next[r];
    if (pr->next[r] >= 0) pr->prev[pr->next[r]] = p;
    return true;
}

/* One pass over the recomputations of s, most expensive first; returns
 * whether any was dropped (s then holds the rest). */
static bool prune_pass(const Dag *d, int64_t budget, double deadline, Staged *s) {
    int n_ev = s->ev.n;
    Pool mem = {0};
    Prune pr = {.d = d, .ev = s->ev.v, .budget = budget};
    pr.mem_at = pool_alloc(&mem, ((size_t)n_ev + 1) * sizeof(int64_t));
    pr.off = pool_alloc(&mem, ((size_t)n_ev + 1) * sizeof(int));
    pr.prev = pool_alloc(&mem, ((size_t)n_ev + 1) * sizeof(int));
    pr.next = pool_alloc(&mem, ((size_t)n_ev + 1) * sizeof(int));
    pr.gone = pool_alloc(&mem, (size_t)n_ev + 1);
    int *inst = pool_alloc(&mem, (size_t)d->n * sizeof(int)); /* node -> its latest copy so far, -1 */
    int *rec = pool_alloc(&mem, ((size_t)n_ev + 1) * sizeof(int)), n_rec = 0;
    int *shrunk = pool_alloc(&mem, ((size_t)d->n + 1) * sizeof(int));
    int *shrink_to = pool_alloc(&mem, ((size_t)d->n + 1) * sizeof(int));
    for (int e = 0; e < n_ev; e++) pr.off[e + 1] = pr.off[e] + d->in_off[s->ev.v[e] + 1] - d->in_off[s->ev.v[e]];
    pr.src = pool_alloc(&mem, ((size_t)pr.off[n_ev] + 1) * sizeof(int));
    for (int i = 0; i < d->n; i++) inst[i] = -1;
    for (int e = 0; e < n_ev; e++) {
        int v = s->ev.v[e];
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) pr.src[pr.off[e] + q - d->in_off[v]] = inst[d->in[q]];
        pr.prev[e] = inst[v], pr.next[e] = -1;
        if (inst[v] >= 0) pr.next[inst[v]] = e, rec[n_rec++] = e;
        inst[v] = e;
    }
    pr.last = staged_last_reads(d, s);
    DagSim sim;
    dag_simulate(d, s->ev.v, n_ev, &sim, pr.mem_at);
    bool any = false;
    if (sim.valid && sim.peak <= budget) {
        sort_by_cost_desc(d, s->ev.v, rec, n_rec);
        for (int k = 0; k < n_rec && acc_now_s() < deadline; k++) any |= try_drop(&pr, rec[k], shrunk, shrink_to);
    }
    if (any) {
        int w = 0;
        for (int e = 0; e < n_ev; e++)
            if (!pr.gone[e]) s->ev.v[w] = s->ev.v[e], s->stage.v[w] = s->stage.v[e], w++;
        s->ev.n = s->stage.n = w;
    }
    free(pr.last);
    pool_free(&mem);
    return any;
}

void dag_prune_recomputations(const Dag *d, int64_t budget, double deadline, Staged *s) {
    while (acc_now_s() < deadline && prune_pass(d, budget, deadline, s)) {
    }
}
