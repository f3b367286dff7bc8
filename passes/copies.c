/* copies.c - when the copies of offloaded tensors run, and how long the step
 * waits for them.
 *
 * requires: an allocated schedule (alloc_assign). provides: each copy's issue
 * and wait positions (sched_copies; codegen/overlap.c moves an issue to the
 * end of the fused chain it falls in and emits them) and the exposed-time
 * model (copy_exposed), the one function that both the planner's scoring and
 * the plan's report use.
 *
 * The copies run on one copy stream of their own, in the order they are
 * issued (the runtime has one such stream: a full-duplex link would need a
 * second for the two directions to overlap, so copies out and back queue
 * together), and the static allocation says how far each may move from its
 * step without a data race:
 *
 *   - a copy out (OFFLOAD at step t) is issued at t, after the steps before
 *     it; the steps must wait for it only before the first later step that
 *     writes over the bytes it reads (the first step of a buffer placed over
 *     them), or, if none does, at the end of the run;
 *   - a copy back (FETCH at step f) is waited for at f, and may be issued
 *     right after the last earlier step that uses the bytes it lands in (the
 *     last step of a buffer placed over them), but not before its tensor's
 *     copy out was issued.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static bool overlap(const Buffer *a, const Buffer *b) {
    return a->offset < b->offset + b->size_bytes && b->offset < a->offset + a->size_bytes;
}

int sched_first_overwrite(const Schedule *s, int b, int t) {
    const Buffer *d = &s->bufs.v[b];
    int first = -1;
    for (int i = 0; i < s->bufs.n; i++) {
        const Buffer *o = &s->bufs.v[i];
        if (i != b && !o->host && !o->persistent && o->first > t && overlap(o, d) && (first < 0 || o->first < first))
            first = o->first;
    }
    return first;
}

void sched_copies(const Schedule *s, const double *transfer, SchedCopies *out) {
    memset(out, 0, sizeof *out);
    int n = s->steps.n, id = 0;
    for (int t = 0; t < n; t++) {
        const Step *st = &s->steps.v[t];
        if (st->kind != ST_OFFLOAD && st->kind != ST_FETCH) continue;
        bool to_host = st->kind == ST_OFFLOAD;
        SchedCopy c = {t, t, to_host ? n : t, id, st->in[1] >= 0 ? 2 : 1, transfer ? transfer[st->node] / 2 : 0};
        id += c.n_ids;
        const int dev[2] = {to_host ? st->in[0] : st->out, to_host ? st->in[1] : st->aux};
        if (!to_host) c.issue_after = s->bufs.v[st->in[0]].first; /* the copy out into its host buffer */
        for (int k = 0; k < 2; k++) {
            if (dev[k] < 0) continue;
            if (to_host) {
                int w = sched_first_overwrite(s, dev[k], t);
                if (w >= 0 && w < c.wait_before) c.wait_before = w;
                continue;
            }
            const Buffer *d = &s->bufs.v[dev[k]];
            for (int i = 0; i < s->bufs.n; i++) {
                const Buffer *b = &s->bufs.v[i];
                if (b->host || b->persistent || b->first < 0 || i == dev[k] || !overlap(b, d)) continue;
                if (b->last < t && b->last > c.issue_after) c.issue_after = b->last;
            }
        }
        VEC_PUSH(out->v, c);
    }
    out->n_ids = id;
}

void sched_copies_free(SchedCopies *c) { VEC_FREE(c->v); }

void sched_step_times(const Schedule *s, const double *node_time, double *out) {
    for (int t = 0; t < s->steps.n; t++) {
        const Step *st = &s->steps.v[t];
        out[t] = st->kind == ST_FWD || st->kind == ST_RECOMPUTE ? node_time[st->node]
                 : st->kind == ST_BWD                           ? 2 * node_time[st->node]
                                                                : 0;
    }
}

/* Issue order: by position, then by step (a copy out is issued by its own
 * step's code, before the copies back issued after that step). */
static int cmp_issue(const void *a, const void *b) {
    const SchedCopy *x = *(const SchedCopy *const *)a, *y = *(const SchedCopy *const *)b;
    if (x->issue_after != y->issue_after) return x->issue_after < y->issue_after ? -1 : 1;
    return (x->step > y->step) - (x->step < y->step);
}

/* The compute stream runs the steps back to back; before step w it waits
 * for every copy whose wait_before is w (the step count: the end of the
 * run). The copy stream runs the copies one after another in issue order,
 * each starting when it is issued (the end of its issue_after step on the
 * compute stream, stalls included) or when the one before it ends, if
 * later. A copy's exposed time is what the compute stream waits for it. */
void copy_exposed(const double *step_time, int n_steps, const SchedCopy *c, int n_copies, CopyTime *out) {
    out->copy_time = out->exposed_time = 0;
    if (n_copies <= 0) return;
    const SchedCopy **order = acc_xrealloc(NULL, (size_t)n_copies * sizeof *order);
    double *end = acc_xrealloc(NULL, (size_t)n_copies * sizeof *end);
    for (int k = 0; k < n_copies; k++) order[k] = &c[k], out->copy_time += c[k].time;
    qsort(order, (size_t)n_copies, sizeof *order, cmp_issue);
    double now = 0, stream_free = 0;
    int next = 0; /* the next copy to issue, in order[] */
    for (int t = -1; t <= n_steps; t++) {
        if (t >= 0) { /* the waits before step t (at n_steps: the end of the run), then step t */
            for (int k = 0; k < n_copies; k++) {
                int w = c[k].wait_before < n_steps ? c[k].wait_before : n_steps;
                if (w != t) continue;
                ACC_ASSERT(c[k].issue_after < t); /* issued before it is waited for */
                if (end[k] > now) out->exposed_time += end[k] - now, now = end[k];
            }
            if (t == n_steps) break;
            now += step_time[t];
        }
        for (; next < n_copies && order[next]->issue_after <= t; next++) {
            double start = now > stream_free ? now : stream_free;
            stream_free = end[order[next] - c] = start + order[next]->time;
        }
    }
    free(order), free(end);
}

void sched_copy_time(const Schedule *s, const double *node_time, const double *transfer, CopyTime *out) {
    SchedCopies cp;
    sched_copies(s, transfer, &cp);
    double *st = acc_xrealloc(NULL, (size_t)(s->steps.n > 0 ? s->steps.n : 1) * sizeof *st);
    sched_step_times(s, node_time, st);
    copy_exposed(st, s->steps.n, cp.v.v, cp.v.n, out);
    free(st);
    sched_copies_free(&cp);
}
