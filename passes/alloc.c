/* alloc.c - static offsets for every buffer of a schedule in one arena.
 *
 * requires: buffers with live intervals. provides: offsets, the arena size
 * (persistent region + the high-water mark of the rest), the step where the
 * most bytes are live and that maximum (max-live, a lower bound for any
 * allocation). Persistent buffers are laid out back to back first; the others
 * are placed largest first, each at the lowest offset where it overlaps no
 * already placed buffer that is live at the same time (best fit by size).
 * Deterministic: ties break by buffer index.
 */
#include <string.h>

#include "passes.h"

typedef struct {
    int64_t lo, hi;
} Range;

static int cmp_range(const void *a, const void *b) {
    const Range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

static const Schedule *sort_sched;
static int cmp_by_size(const void *a, const void *b) {
    const Buffer *x = &sort_sched->bufs.v[*(const int *)a], *y = &sort_sched->bufs.v[*(const int *)b];
    if (x->size_bytes != y->size_bytes) return x->size_bytes > y->size_bytes ? -1 : 1;
    int lx = x->last - x->first, ly = y->last - y->first;
    if (lx != ly) return lx > ly ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

void alloc_assign(Schedule *s) {
    int64_t top = 0;
    VEC(int) dyn = {0};
    for (int i = 0; i < s->bufs.n; i++) {
        Buffer *b = &s->bufs.v[i];
        if (b->persistent) {
            b->offset = top;
            top += b->size_bytes;
        } else if (b->first >= 0) {
            VEC_PUSH(dyn, i);
        } else {
            b->offset = 0; /* never used */
        }
    }
    s->persistent_bytes = top;
    sort_sched = s;
    qsort(dyn.v, (size_t)dyn.n, sizeof(int), cmp_by_size);
    sort_sched = NULL;
    Range *busy = acc_xrealloc(NULL, (size_t)(dyn.n + 1) * sizeof(Range));
    int64_t high = 0;
    for (int k = 0; k < dyn.n; k++) {
        Buffer *b = &s->bufs.v[dyn.v[k]];
        int n_busy = 0;
        for (int m = 0; m < k; m++) {
            const Buffer *o = &s->bufs.v[dyn.v[m]];
            if (o->first <= b->last && b->first <= o->last) busy[n_busy++] = (Range){o->offset, o->offset + o->size_bytes};
        }
        qsort(busy, (size_t)n_busy, sizeof(Range), cmp_range);
        /* smallest gap that fits, else the end */
        int64_t at = 0, best = -1, best_gap = INT64_MAX;
        for (int m = 0; m < n_busy; m++) {
            if (busy[m].lo > at) {
                int64_t gap = busy[m].lo - at;
                if (gap >= b->size_bytes && gap < best_gap) best = at, best_gap = gap;
            }
            if (busy[m].hi > at) at = busy[m].hi;
        }
        b->offset = best >= 0 ? best : at;
        if (b->offset + b->size_bytes > high) high = b->offset + b->size_bytes;
    }
    for (int k = 0; k < dyn.n; k++) s->bufs.v[dyn.v[k]].offset += s->persistent_bytes;
    s->arena_bytes = s->persistent_bytes + high;

    sched_max_live(s);
    free(busy);
    VEC_FREE(dyn);
}
