/* plancheck.c - an independent simulation of a schedule.
 *
 * requires: a schedule with offsets. provides: true only if, stepping through
 * it, every buffer a step reads was written earlier by a step computing the
 * same node (or is persistent), every buffer is live at every step that
 * touches it, no two buffers live at the same step overlap in the arena, and
 * every buffer lies inside the arena; an offloaded tensor's copy steps read
 * the node's own buffers, from the arena to the host arena (OFFLOAD) or back
 * (FETCH), and the host arena is checked as the arena is. It recomputes what
 * it needs from the steps rather than trusting the schedule's own
 * bookkeeping.
 */
#include <string.h>

#include "passes.h"

#define FAIL(...) (fprintf(err, "plan check: " __VA_ARGS__), fputc('\n', err), false)

/* overlap: a sweep over the steps keeps the live buffers of one arena (the
 * host arena if host) sorted by offset (they never intersect); a buffer that
 * becomes live must not reach into the one below it nor the one above it.
 * Linear in steps and buffers but for the sorted insertions. */
static bool no_overlap(const Schedule *s, bool host, FILE *err) {
    int n_steps = s->steps.n, nb = s->bufs.n;
    bool ok = true;
    int *start_at = acc_xrealloc(NULL, (size_t)(n_steps + 2) * sizeof(int));
    int *end_at = acc_xrealloc(NULL, (size_t)(n_steps + 2) * sizeof(int));
    int *by_first = acc_xrealloc(NULL, (size_t)(nb + 1) * sizeof(int));
    int *by_last = acc_xrealloc(NULL, (size_t)(nb + 1) * sizeof(int));
    int *live = acc_xrealloc(NULL, (size_t)(nb + 1) * sizeof(int)); /* buffer ids by offset */
    memset(start_at, 0, (size_t)(n_steps + 2) * sizeof(int));
    memset(end_at, 0, (size_t)(n_steps + 2) * sizeof(int));
    for (int i = 0; i < nb; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (b->host != host || b->first < 0 || b->size_bytes <= 0 || b->first > b->last || b->first >= n_steps)
            continue;
        start_at[b->first + 1]++;
        end_at[(b->last < n_steps ? b->last : n_steps - 1) + 1]++;
    }
    for (int t = 0; t <= n_steps; t++) start_at[t + 1] += start_at[t], end_at[t + 1] += end_at[t];
    for (int i = 0; i < nb; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (b->host != host || b->first < 0 || b->size_bytes <= 0 || b->first > b->last || b->first >= n_steps)
            continue;
        by_first[start_at[b->first]++] = i;
        by_last[end_at[b->last < n_steps ? b->last : n_steps - 1]++] = i;
    }
    /* start_at[t]/end_at[t] now end the lists of step t: step t's are
     * [start_at[t - 1], start_at[t]) */
    int n_live = 0, fi = 0, li = 0;
    for (int t = 0; t < n_steps && ok; t++) {
        for (; li < end_at[t] && t > 0; li++) { /* buffers whose last step was t - 1 */
            int i = by_last[li];
            if (s->bufs.v[i].last >= t) break;
            int64_t off = s->bufs.v[i].offset;
            int lo = 0, hi = n_live;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                int64_t mo = s->bufs.v[live[mid]].offset;
                if (mo < off || (mo == off && live[mid] < i)) lo = mid + 1;
                else hi = mid;
            }
            ACC_ASSERT(lo < n_live && live[lo] == i);
            memmove(live + lo, live + lo + 1, (size_t)(n_live - lo - 1) * sizeof(int));
            n_live--;
        }
        for (; fi < start_at[t] && ok; fi++) {
            int i = by_first[fi];
            const Buffer *b = &s->bufs.v[i];
            int lo = 0, hi = n_live;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                int64_t mo = s->bufs.v[live[mid]].offset;
                if (mo < b->offset || (mo == b->offset && live[mid] < i)) lo = mid + 1;
                else hi = mid;
            }
            if (lo > 0) {
                const Buffer *p = &s->bufs.v[live[lo - 1]];
                if (p->offset + p->size_bytes > b->offset)
                    ok = FAIL("step %d: buffers %d and %d overlap in the %sarena", t, live[lo - 1], i,
                              host ? "host " : "");
            }
            if (ok && lo < n_live && s->bufs.v[live[lo]].offset < b->offset + b->size_bytes)
                ok = FAIL("step %d: buffers %d and %d overlap in the %sarena", t, i, live[lo], host ? "host " : "");
            memmove(live + lo + 1, live + lo, (size_t)(n_live - lo) * sizeof(int));
            live[lo] = i;
            n_live++;
        }
    }
    free(start_at), free(end_at), free(by_first), free(by_last), free(live);
    return ok;
}

bool plan_check(const Schedule *s, FILE *err) {
    int nb = s->bufs.n;
    bool *written = acc_xrealloc(NULL, (size_t)nb * sizeof(bool) + 1);
    bool ok = true;
    for (int i = 0; i < nb; i++) {
        const Buffer *b = &s->bufs.v[i];
        written[i] = b->persistent && b->kind != BUF_LOSS;
        int64_t end = b->host ? s->host_bytes : s->arena_bytes;
        if (b->first >= 0 && (b->offset < 0 || b->offset + b->size_bytes > end)) {
            ok = FAIL("buffer %d (%s of %s) lies outside the %sarena", i, buf_kind_name(b->kind),
                      graph_node(s->g, b->node)->name, b->host ? "host " : "");
            goto done;
        }
    }
    for (int t = 0; t < s->steps.n && ok; t++) {
        const Step *st = &s->steps.v[t];
        const Node *x = graph_node(s->g, st->node);
        bool copy = st->kind == ST_OFFLOAD || st->kind == ST_FETCH;
        bool writes_out = st->kind == ST_FWD || st->kind == ST_RECOMPUTE || copy;
        int reads[ACC_MAX_IN + 3], n_reads = 0;
        if (copy) { /* the node's own tensor and tail, from one arena to the other */
            bool to_host = st->kind == ST_OFFLOAD, tail = x->aux_elems > 0;
            if (st->in[0] < 0 || st->out < 0 || (st->in[1] >= 0) != tail || (st->aux >= 0) != tail)
                ok = FAIL("step %d (%s): a copy without its tensor or its tail", t, x->name);
            const int from[2] = {st->in[0], st->in[1]}, to[2] = {st->out, st->aux};
            for (int k = 0; k < 4 && ok; k++) {
                int id = k < 2 ? from[k] : to[k - 2];
                bool want_host = k < 2 ? !to_host : to_host;
                if (id >= 0 && (s->bufs.v[id].node != st->node || s->bufs.v[id].host != want_host))
                    ok = FAIL("step %d (%s): a copy %s the host touches a buffer of %s in the wrong arena", t, x->name,
                              to_host ? "to" : "from", graph_node(s->g, s->bufs.v[id].node)->name);
            }
        }
        for (int j = 0; j < ACC_MAX_IN && !copy; j++)
            if (st->in[j] >= 0) {
                if (s->bufs.v[st->in[j]].node != x->in[j]) {
                    ok = FAIL("step %d (%s): input %d reads a buffer of %s", t, x->name, j,
                              graph_node(s->g, s->bufs.v[st->in[j]].node)->name);
                    break;
                }
                reads[n_reads++] = st->in[j];
            }
        for (int j = 0; j < 2 && copy; j++)
            if (st->in[j] >= 0) reads[n_reads++] = st->in[j];
        if (!writes_out) {
            if (st->out >= 0) reads[n_reads++] = st->out;
            if (st->aux >= 0) reads[n_reads++] = st->aux;
        }
        if (st->kind == ST_BWD) reads[n_reads++] = st->grad_out;
        for (int r = 0; r < n_reads && ok; r++) {
            const Buffer *b = &s->bufs.v[reads[r]];
            if (!written[reads[r]])
                ok = FAIL("step %d (%s) reads %s of %s before it is written", t, x->name, buf_kind_name(b->kind),
                          graph_node(s->g, b->node)->name);
            else if (!b->persistent && (t < b->first || t > b->last))
                ok = FAIL("step %d (%s) reads %s of %s outside its live range", t, x->name, buf_kind_name(b->kind),
                          graph_node(s->g, b->node)->name);
        }
        if (writes_out) {
            if (st->out >= 0) written[st->out] = true;
            if (st->aux >= 0) written[st->aux] = true;
        }
        if (st->kind == ST_SEED) written[st->grad_out] = true;
        for (int j = 0; j < ACC_MAX_IN; j++) {
            int gb = st->grad_in[j];
            if (gb < 0) continue;
            if (!written[gb] && !st->zero_in[j]) {
                ok = FAIL("step %d (%s) accumulates into an unset gradient of input %d", t, x->name, j);
                break;
            }
            written[gb] = true;
        }
    }
    if (ok) ok = no_overlap(s, false, err) && no_overlap(s, true, err);
done:
    free(written);
    return ok;
}
