/* dag_sim.c - the simulator every plan of a published graph is scored by,
 * the baseline (save everything), the least peak any schedule reaches, and
 * staged schedules (Checkmate's stage form, dag_impl.h). The core both
 * solvers use: dag.c (the heuristics and the driver) and dag_milp.c (the
 * integer programs) call it, it calls neither.
 */
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

void staged_clear(Staged *s) { s->ev.n = s->stage.n = 0; }
void staged_free(Staged *s) { VEC_FREE(s->ev), VEC_FREE(s->stage); }
void staged_push(Staged *s, int stage, int node) {
    VEC_PUSH(s->ev, node);
    VEC_PUSH(s->stage, stage);
}
void staged_copy(Staged *dst, const Staged *src) {
    staged_clear(dst);
    for (int e = 0; e < src->ev.n; e++) staged_push(dst, src->stage.v[e], src->ev.v[e]);
}

/* ---- the simulator ------------------------------------------------------------ */

void dag_simulate(const Dag *d, const int *ev, int n_ev, DagSim *out, int64_t *mem_at) {
    memset(out, 0, sizeof *out);
    out->valid = true;
    out->n_events = n_ev;
    Pool mem = {0};                                           /* called for every plan scored: returned at the end */
    int *inst = pool_alloc(&mem, (size_t)d->n * sizeof(int)); /* node -> event of its latest copy, -1 */
    int *last = pool_alloc(&mem, (size_t)n_ev * sizeof(int)); /* event -> last event reading its copy */
    int64_t *delta = pool_alloc(&mem, ((size_t)n_ev + 1) * sizeof(int64_t));
    for (int i = 0; i < d->n; i++) inst[i] = -1;
    int distinct = 0;
    for (int e = 0; e < n_ev; e++) {
        int v = ev[e];
        last[e] = e;
        if (v < 0 || v >= d->n) {
            out->valid = false;
            continue;
        }
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) {
            int p = inst[d->in[k]];
            if (p < 0) out->valid = false; /* an input never computed */
            else last[p] = e;
        }
        if (inst[v] < 0) distinct++;
        inst[v] = e;
        out->compute += d->cost[v];
    }
    if (distinct < d->n) out->valid = false;
    for (int e = 0; e < n_ev; e++) {
        int v = ev[e];
        if (v < 0 || v >= d->n) continue;
        delta[e] += d->mem[v];
        delta[last[e] + 1] -= d->mem[v];
    }
    int64_t cur = 0;
    out->peak_event = -1;
    for (int e = 0; e < n_ev; e++) {
        cur += delta[e];
        if (mem_at) mem_at[e] = cur;
        if (out->peak_event < 0 || cur > out->peak) out->peak = cur, out->peak_event = e;
    }
    out->n_recompute = n_ev - distinct;
    pool_free(&mem);
}

int64_t dag_baseline_peak(const Dag *d) {
    /* node i is held over steps [i, last use] (just step i without users);
     * the peak is the largest sum: a difference array, linear in the nodes
     * (users are sorted, so the last one is the last use) */
    int64_t *delta = acc_xcalloc((size_t)d->n + 1, sizeof(int64_t));
    for (int i = 0; i < d->n; i++) {
        int deg = d->out_off[i + 1] - d->out_off[i];
        int last = deg ? d->out[d->out_off[i + 1] - 1] : i;
        delta[i] += d->mem[i];
        delta[(last > i ? last : i) + 1] -= d->mem[i];
    }
    int64_t peak = 0, live = 0;
    for (int k = 0; k < d->n; k++) {
        live += delta[k];
        if (live > peak) peak = live;
    }
    free(delta);
    return peak;
}

double dag_baseline_compute(const Dag *d) {
    double c = 0;
    for (int i = 0; i < d->n; i++) c += d->cost[i];
    return c;
}

long dag_point_memory(const Dag *d, int64_t *own, int64_t *span) {
    long pairs = 0;
    for (int b = 0; b < d->n; b++) {
        own[b] = d->mem[b];
        for (int k = d->in_off[b]; k < d->in_off[b + 1]; k++)
            if (k == d->in_off[b] || d->in[k] != d->in[k - 1]) own[b] += d->mem[d->in[k]];
        if (span) span[b] = 0;
    }
    for (int x = 0; x < d->n; x++)
        for (int k = d->out_off[x], prev = x; k < d->out_off[x + 1]; prev = d->out[k++])
            for (int b = prev + 1; b < d->out[k]; b++, pairs++)
                if (span) span[b] += d->mem[x];
    return pairs;
}

int64_t dag_min_peak(const Dag *d) {
    int64_t best = 0;
    for (int v = 0; v < d->n; v++) {
        int64_t m = d->mem[v];
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) m += d->mem[d->in[k]];
        if (m > best) best = m;
    }
    return best;
}

/* For each event of a staged schedule, the last event that reads the copy
 * it computes (the event itself when none does). */
int *staged_last_reads(const Dag *d, const Staged *s) {
    int n_ev = s->ev.n;
    int *inst = acc_xcalloc((size_t)d->n, sizeof(int)), *last = acc_xcalloc((size_t)n_ev + 1, sizeof(int));
    for (int i = 0; i < d->n; i++) inst[i] = -1;
    for (int e = 0; e < n_ev; e++) {
        int j = s->ev.v[e];
        last[e] = e;
        for (int q = d->in_off[j]; q < d->in_off[j + 1]; q++) last[inst[d->in[q]]] = e;
        inst[j] = e;
    }
    free(inst);
    return last;
}
