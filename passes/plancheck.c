/* plancheck.c - an independent simulation of a schedule.
 *
 * requires: a schedule with offsets. provides: true only if, stepping through
 * it, every buffer a step reads was written earlier by a step computing the
 * same node (or is persistent), every buffer is live at every step that
 * touches it, no two buffers live at the same step overlap in the arena, and
 * every buffer lies inside the arena. It recomputes what it needs from the
 * steps rather than trusting the schedule's own bookkeeping.
 */
#include <string.h>

#include "passes.h"

#define FAIL(...) (fprintf(err, "plan check: " __VA_ARGS__), fputc('\n', err), false)

static int cmp_off(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

bool plan_check(const Schedule *s, FILE *err) {
    int nb = s->bufs.n;
    bool *written = acc_xrealloc(NULL, (size_t)nb * sizeof(bool) + 1);
    bool ok = true;
    for (int i = 0; i < nb; i++) {
        const Buffer *b = &s->bufs.v[i];
        written[i] = b->persistent && b->kind != BUF_LOSS;
        if (b->first >= 0 && (b->offset < 0 || b->offset + b->size_bytes > s->arena_bytes)) {
            ok = FAIL("buffer %d (%s of %s) lies outside the arena", i, buf_kind_name(b->kind),
                      graph_node(s->g, b->node)->name);
            goto done;
        }
    }
    for (int t = 0; t < s->steps.n && ok; t++) {
        const Step *st = &s->steps.v[t];
        const Node *x = graph_node(s->g, st->node);
        bool writes_out = st->kind == ST_FWD || st->kind == ST_RECOMPUTE;
        int reads[ACC_MAX_IN + 3], n_reads = 0;
        for (int j = 0; j < ACC_MAX_IN; j++)
            if (st->in[j] >= 0) {
                if (s->bufs.v[st->in[j]].node != x->in[j]) {
                    ok = FAIL("step %d (%s): input %d reads a buffer of %s", t, x->name, j,
                              graph_node(s->g, s->bufs.v[st->in[j]].node)->name);
                    break;
                }
                reads[n_reads++] = st->in[j];
            }
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
    /* overlap: at each step, the live buffers sorted by offset must not intersect */
    if (ok) {
        int64_t (*live)[3] = acc_xrealloc(NULL, (size_t)(nb + 1) * sizeof *live);
        for (int t = 0; t < s->steps.n && ok; t++) {
            int n = 0;
            for (int i = 0; i < nb; i++) {
                const Buffer *b = &s->bufs.v[i];
                if (b->first >= 0 && b->first <= t && t <= b->last) {
                    live[n][0] = b->offset;
                    live[n][1] = b->offset + b->size_bytes;
                    live[n][2] = i;
                    n++;
                }
            }
            qsort(live, (size_t)n, sizeof *live, cmp_off);
            for (int i = 1; i < n && ok; i++)
                if (live[i][0] < live[i - 1][1])
                    ok = FAIL("step %d: buffers %d and %d overlap in the arena", t, (int)live[i - 1][2], (int)live[i][2]);
        }
        free(live);
    }
done:
    free(written);
    return ok;
}
