/* alloc.c - static offsets for buffers with known lifetimes in one arena.
 *
 * alloc_intervals_ex places plain intervals (AllocItem): first a best-fit
 * greedy over a few orders (each buffer at the smallest gap between the
 * buffers already placed that it conflicts with, else on top), keeping the
 * best; then, when that is above the target (the given capacity, else the
 * max-live lower bound), the exact search of alloc_search.c: first deciding
 * the target with half the work budget, then bisecting between the lowest
 * capacity not yet ruled out and the best arena found, each decision with
 * half of what is left; the best placement found is kept.
 *
 * alloc_assign: requires buffers with live intervals. provides: offsets, the
 * arena size (persistent region + the high-water mark of the rest), the step
 * where the most bytes are live and that maximum (max-live, a lower bound for
 * any allocation). Persistent buffers are laid out back to back first; the
 * others go through alloc_intervals_ex with alloc_pipeline_options. The first
 * greedy order is the historical one (largest first), so plans whose greedy
 * placement already meets max-live are unchanged. Deterministic: ties break
 * by index and the search's budget counts work, not time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_search.h"
#include "passes.h"

/* Work units a second of the exact search: about 5e8 to 1e9 were measured on
 * one core of a loaded x86 server; a fraction of that is taken so that the
 * time limit rarely has to cut a search that the work budget lets run. */
#define WORK_PER_S 2e8

AllocOptions alloc_pipeline_options = {0, -1, 2.0, 0.01};
static double pipeline_search_s = 0.5;

int64_t alloc_work_for_time(double seconds) {
    if (!(seconds > 0)) return 0;
    double w = seconds * WORK_PER_S;
    return w > 4e18 ? INT64_MAX : (int64_t)w + 1;
}

static bool live(const AllocItem *x) { return x->size > 0 && x->lower < x->upper; }
static int64_t align_of(const AllocItem *x) { return x->alignment > 1 ? x->alignment : 1; }
static int64_t round_up(int64_t x, int64_t a) { return a > 1 ? (x + a - 1) / a * a : x; }

/* ---- max-live ------------------------------------------------------------- */

typedef struct {
    int64_t t, delta;
} Event;

static int cmp_event(const void *a, const void *b) {
    const Event *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->delta < y->delta ? -1 : x->delta > y->delta; /* frees first: intervals are half-open */
}

int64_t alloc_max_live(const AllocItem *items, int n) {
    Event *ev = acc_xrealloc(NULL, (size_t)(2 * n + 1) * sizeof(Event));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (live(&items[i])) {
            ev[k++] = (Event){items[i].lower, items[i].size};
            ev[k++] = (Event){items[i].upper, -items[i].size};
        }
    qsort(ev, (size_t)k, sizeof(Event), cmp_event);
    int64_t run = 0, best = 0;
    for (int j = 0; j < k; j++) {
        run += ev[j].delta;
        if (run > best) best = run;
    }
    free(ev);
    return best;
}

/* ---- greedy ----------------------------------------------------------------- */

typedef enum { ORD_SIZE, ORD_LIFETIME, ORD_AREA, ORD_START, ORD_COUNT } GreedyOrder;
static const char *const order_names[ORD_COUNT] = {"size", "lifetime", "area", "start"};

static const AllocItem *cmp_items;
static GreedyOrder cmp_order;

static int cmp_greedy(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    const AllocItem *x = &cmp_items[i], *y = &cmp_items[j];
    int64_t lx = x->upper - x->lower, ly = y->upper - y->lower;
    switch (cmp_order) {
    case ORD_SIZE:
        if (x->size != y->size) return x->size > y->size ? -1 : 1;
        if (lx != ly) return lx > ly ? -1 : 1;
        break;
    case ORD_LIFETIME:
        if (lx != ly) return lx > ly ? -1 : 1;
        if (x->size != y->size) return x->size > y->size ? -1 : 1;
        break;
    case ORD_AREA: {
        double ax = (double)x->size * (double)lx, ay = (double)y->size * (double)ly;
        if (ax != ay) return ax > ay ? -1 : 1;
        if (x->size != y->size) return x->size > y->size ? -1 : 1;
        break;
    }
    case ORD_START:
        if (x->lower != y->lower) return x->lower < y->lower ? -1 : 1;
        if (x->size != y->size) return x->size > y->size ? -1 : 1;
        break;
    default: break;
    }
    return i - j;
}

static bool conflict(const AllocItem *x, const AllocItem *y) { return x->lower < y->upper && y->lower < x->upper; }

/* Which placed buffers conflict with a new one, without scanning them all:
 * the time axis compressed to the distinct bounds; each placed buffer whose
 * lifetime spans at most LONG_SPAN bounds listed once, in the bucket of its
 * start (PER_BUCKET bounds each), the longer ones in a list scanned every
 * time. A buffer that starts more than LONG_SPAN bounds before the new one
 * and is short cannot reach it, so a query scans the buckets from there to
 * the new buffer's end. */
#define LONG_SPAN 256
#define PER_BUCKET 16

typedef struct {
    int64_t *bounds; /* sorted distinct lower/upper values */
    int n_bounds, n_buckets;
    VEC(int) * bucket;
    VEC(int) longs;
} TimeIndex;

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void tindex_init(TimeIndex *t, const AllocItem *items, int n) {
    memset(t, 0, sizeof *t);
    t->bounds = acc_xrealloc(NULL, (size_t)(2 * n + 1) * sizeof(int64_t));
    for (int i = 0; i < n; i++) t->bounds[t->n_bounds++] = items[i].lower, t->bounds[t->n_bounds++] = items[i].upper;
    qsort(t->bounds, (size_t)t->n_bounds, sizeof(int64_t), cmp_i64);
    int k = 0;
    for (int i = 0; i < t->n_bounds; i++)
        if (!k || t->bounds[i] != t->bounds[k - 1]) t->bounds[k++] = t->bounds[i];
    t->n_bounds = k;
    t->n_buckets = k / PER_BUCKET + 1;
    t->bucket = calloc((size_t)t->n_buckets, sizeof *t->bucket);
    if (!t->bucket) acc_panic(__FILE__, __LINE__, "out of memory");
}

static void tindex_free(TimeIndex *t) {
    for (int b = 0; b < t->n_buckets; b++) VEC_FREE(t->bucket[b]);
    free(t->bucket), free(t->bounds);
    VEC_FREE(t->longs);
}

static void tindex_clear(TimeIndex *t) {
    for (int b = 0; b < t->n_buckets; b++) t->bucket[b].n = 0;
    t->longs.n = 0;
}

/* the positions of x's bounds among the distinct bounds */
static void tindex_span(const TimeIndex *t, const AllocItem *x, int *lo, int *hi) {
    const int64_t *l = bsearch(&x->lower, t->bounds, (size_t)t->n_bounds, sizeof(int64_t), cmp_i64);
    const int64_t *h = bsearch(&x->upper, t->bounds, (size_t)t->n_bounds, sizeof(int64_t), cmp_i64);
    *lo = (int)(l - t->bounds), *hi = (int)(h - t->bounds);
}

static void tindex_add(TimeIndex *t, const AllocItem *items, int i) {
    int lo, hi;
    tindex_span(t, &items[i], &lo, &hi);
    if (hi - lo > LONG_SPAN) VEC_PUSH(t->longs, i);
    else VEC_PUSH(t->bucket[lo / PER_BUCKET], i);
}

/* a conflicting placed buffer: its offset, when it was placed, its index */
typedef struct {
    int64_t off;
    int seq, item;
} Placed;

static bool placed_less(const Placed *x, const Placed *y) {
    return x->off != y->off ? x->off < y->off : x->seq < y->seq;
}

/* by offset, then placement order (the order the greedy visits them in):
 * insertion sort for short runs, merged bottom-up; tmp: scratch [n] */
static void sort_placed(Placed *a, int n, Placed *tmp) {
    enum { RUN = 16 };
    for (int r = 0; r < n; r += RUN) {
        int end = r + RUN < n ? r + RUN : n;
        for (int i = r + 1; i < end; i++) {
            Placed x = a[i];
            int j = i;
            for (; j > r && placed_less(&x, &a[j - 1]); j--) a[j] = a[j - 1];
            a[j] = x;
        }
    }
    for (int w = RUN; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = placed_less(&a[j], &a[i]) ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

/* Place in `order`; each buffer at the smallest gap among the placed buffers
 * it conflicts with that holds it (best fit) or the lowest (first fit), else
 * on top of them: the conflicting buffers, from the time index, visited by
 * offset and then placement order. seq, cand: scratch [n]. Returns the arena. */
static int64_t greedy(const AllocItem *items, const int *order, int n, bool best_fit, int64_t *off, int *seq,
                      int *by_off, Placed *cand, Placed *tmp, TimeIndex *t) {
    int64_t top = 0;
    int n_placed = 0;
    tindex_clear(t);
    for (int k = 0; k < n; k++) {
        int i = order[k];
        const AllocItem *b = &items[i];
        if (!live(b)) {
            off[i] = 0;
            continue;
        }
        /* the placed buffers that conflict with b (each is listed once) */
        int nc = 0, lo_b, hi_b;
        tindex_span(t, b, &lo_b, &hi_b);
        int b0 = (lo_b > LONG_SPAN ? lo_b - LONG_SPAN : 0) / PER_BUCKET, b1 = (hi_b - 1) / PER_BUCKET;
        for (int q = 0; q < t->longs.n; q++) {
            int j = t->longs.v[q];
            if (conflict(&items[j], b)) cand[nc++] = (Placed){off[j], seq[j], j};
        }
        for (int bk = b0; bk <= b1; bk++)
            for (int q = 0; q < t->bucket[bk].n; q++) {
                int j = t->bucket[bk].v[q];
                if (conflict(&items[j], b)) cand[nc++] = (Placed){off[j], seq[j], j};
            }
        /* in offset order: sorted, or, when most placed buffers conflict,
         * filtered from the placed ones kept by offset */
        if ((int64_t)nc * 16 > n_placed) {
            nc = 0;
            for (int m = 0; m < n_placed; m++)
                if (conflict(&items[by_off[m]], b)) cand[nc++] = (Placed){off[by_off[m]], seq[by_off[m]], by_off[m]};
        } else {
            sort_placed(cand, nc, tmp);
        }
        int64_t a = align_of(b), at = 0, best = -1, best_gap = INT64_MAX;
        for (int m = 0; m < nc; m++) {
            const AllocItem *o = &items[cand[m].item];
            int64_t lo = cand[m].off, start = round_up(at, a);
            if (lo >= start && lo - start >= b->size) {
                int64_t gap = lo - at;
                if (gap < best_gap) best = start, best_gap = gap;
                if (!best_fit) break;
            }
            if (lo + o->size > at) at = lo + o->size;
        }
        if (best < 0) best = round_up(at, a);
        off[i] = best;
        seq[i] = k;
        if (best + b->size > top) top = best + b->size;
        tindex_add(t, items, i);
        int lo = 0, hi = n_placed; /* insert after the placed buffers at offsets <= best */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (off[by_off[mid]] <= best) lo = mid + 1;
            else hi = mid;
        }
        memmove(by_off + lo + 1, by_off + lo, (size_t)(n_placed - lo) * sizeof(int));
        by_off[lo] = i;
        n_placed++;
    }
    return top;
}

/* ---- the driver ------------------------------------------------------------- */

int64_t alloc_intervals_ex(const AllocItem *items, int n, int64_t *offsets, const AllocOptions *o, AllocResult *r) {
    AllocResult res_local;
    if (!r) r = &res_local;
    memset(r, 0, sizeof *r);
    double t0 = acc_now_s();
    size_t nn = (size_t)(n > 0 ? n : 1);
    int64_t bound = alloc_max_live(items, n);
    r->lower_bound = bound;
    int64_t stop_at = o->capacity > bound ? o->capacity : bound;

    Pool mem = {0}; /* the call's arrays, freed in one call at its end */
    int *order = pool_alloc(&mem, nn * sizeof(int));
    int *scratch = pool_alloc(&mem, nn * sizeof(int)), *by_off = pool_alloc(&mem, nn * sizeof(int));
    Placed *cand = pool_alloc(&mem, nn * sizeof(Placed)), *cand_tmp = pool_alloc(&mem, nn * sizeof(Placed));
    TimeIndex tix;
    tindex_init(&tix, items, n);
    int64_t *off = pool_alloc(&mem, nn * sizeof(int64_t));
    int64_t best = INT64_MAX;
    /* the time limit is a safety net: after the first pass, a pass starts
     * only if one more (as long as the last) ends before it */
    double deadline = o->time_limit_s > 0 ? t0 + o->time_limit_s : 0, pass_s = 0;
    for (int pass = 0; pass < 2 * ORD_COUNT && best > stop_at; pass++) {
        double tp = acc_now_s();
        if (pass && deadline && tp + pass_s > deadline) break;
        GreedyOrder ord = (GreedyOrder)(pass % ORD_COUNT);
        bool best_fit = pass < ORD_COUNT;
        for (int i = 0; i < n; i++) order[i] = i;
        cmp_items = items;
        cmp_order = ord;
        qsort(order, (size_t)n, sizeof(int), cmp_greedy);
        cmp_items = NULL;
        int64_t a = greedy(items, order, n, best_fit, off, scratch, by_off, cand, cand_tmp, &tix);
        pass_s = acc_now_s() - tp;
        if (a < best) {
            best = a;
            memcpy(offsets, off, (size_t)n * sizeof(int64_t));
            r->greedy_order = order_names[ord];
        }
    }
    if (n == 0) best = 0, r->greedy_order = order_names[0];
    r->greedy_arena = best;
    r->greedy_s = acc_now_s() - t0;

    int64_t work = o->work_limit < 0 ? alloc_work_for_time(o->time_limit_s) : o->work_limit;
    int64_t proven = bound; /* no placement below it */
    if (best > stop_at && work > 0 && (double)best > (double)stop_at * (1 + o->search_above) &&
        !(deadline && acc_now_s() > deadline)) {
        double t1 = acc_now_s();
        r->searched = true;
        /* the search sees only the buffers that conflict with something */
        int m = 0;
        AllocItem *sub = pool_alloc(&mem, nn * sizeof(AllocItem));
        for (int i = 0; i < n; i++)
            if (live(&items[i])) order[m] = i, sub[m++] = items[i];
        AllocSearch *s = alloc_search_new(sub, m);
        /* the time limit covers the whole call, the greedy passes included */
        SearchBudget b = {0, o->time_limit_s > 0 ? t0 + o->time_limit_s : 0, 0, 0, false};
        int64_t lo = stop_at; /* next capacity to try, from below */
        for (bool first = true; lo < best && b.work < work && !b.time_out; first = false) {
            int64_t cap = first ? lo : lo + (best - 1 - lo) / 2;
            int64_t left = work - b.work;
            b.work_limit = b.work + (left > 1000 ? left / 2 : left);
            r->n_solves++;
            SearchStatus st = alloc_search_fit(s, cap, off, &b);
            if (st == SEARCH_FOUND) {
                int64_t a = 0;
                for (int k = 0; k < m; k++)
                    if (off[k] + sub[k].size > a) a = off[k] + sub[k].size;
                best = a;
                for (int k = 0; k < m; k++) offsets[order[k]] = off[k];
            } else {
                if (st == SEARCH_INFEASIBLE && cap + 1 > proven) proven = cap + 1;
                lo = cap + 1;
            }
        }
        r->work = b.work;
        r->nodes = b.nodes;
        r->time_out = b.time_out;
        alloc_search_free(s);
        r->search_s = acc_now_s() - t1;
    }
    for (int i = 0; i < n; i++)
        if (!live(&items[i])) offsets[i] = 0;
    r->arena = best;
    r->optimal = best <= proven;
    tindex_free(&tix);
    pool_free(&mem);
    return best;
}

int64_t alloc_intervals(const AllocItem *items, int n, int64_t *offsets, double time_limit_s) {
    AllocOptions o = {0, alloc_work_for_time(time_limit_s), time_limit_s > 0 ? time_limit_s : 0, 0};
    return alloc_intervals_ex(items, n, offsets, &o, NULL);
}

bool alloc_check(const AllocItem *items, int n, const int64_t *offsets, int64_t arena, char *err, size_t err_len) {
    for (int i = 0; i < n; i++) {
        const AllocItem *x = &items[i];
        if (!live(x)) continue;
        if (offsets[i] < 0 || offsets[i] % align_of(x) || offsets[i] > arena - x->size) {
            snprintf(err, err_len,
                     "buffer %d at offset %" PRId64 " (size %" PRId64 ", alignment %" PRId64
                     ") is misaligned or outside the arena of %" PRId64 " bytes",
                     i, offsets[i], x->size, align_of(x), arena);
            return false;
        }
    }
    /* sweep over time: buffers sorted by lower, each checked against the live ones */
    int *ord = acc_xrealloc(NULL, (size_t)(n > 0 ? n : 1) * sizeof(int));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (live(&items[i])) ord[k++] = i;
    cmp_items = items;
    cmp_order = ORD_START;
    qsort(ord, (size_t)k, sizeof(int), cmp_greedy);
    cmp_items = NULL;
    bool ok = true;
    for (int a = 0; a < k && ok; a++) {
        const AllocItem *x = &items[ord[a]];
        for (int b = a + 1; b < k && items[ord[b]].lower < x->upper; b++) {
            int64_t ox = offsets[ord[a]], oy = offsets[ord[b]];
            if (ox < oy + items[ord[b]].size && oy < ox + x->size) {
                snprintf(err, err_len, "buffers %d and %d are live at the same time and overlap in memory", ord[a],
                         ord[b]);
                ok = false;
                break;
            }
        }
    }
    free(ord);
    return ok;
}

/* ---- alloc_assign: a schedule's buffers ------------------------------------ */

static void pipeline_init(void) {
    static bool done;
    if (done) return;
    done = true;
    const char *v = getenv("ACC_ALLOC_SEARCH");
    if (v && *v) {
        char *end;
        double x = strtod(v, &end);
        if (!*end && x >= 0 && x < 1e6) {
            pipeline_search_s = x;
            if (4 * x > alloc_pipeline_options.time_limit_s) alloc_pipeline_options.time_limit_s = 4 * x;
        }
    }
    if (alloc_pipeline_options.work_limit < 0)
        alloc_pipeline_options.work_limit = alloc_work_for_time(pipeline_search_s);
}

/* The host copies of offloaded tensors in the host arena of their own, by
 * the same interval allocation. */
static void alloc_host(Schedule *s) {
    VEC(int) host = {0};
    for (int i = 0; i < s->bufs.n; i++)
        if (s->bufs.v[i].host && s->bufs.v[i].first >= 0) VEC_PUSH(host, i);
    s->host_bytes = 0;
    if (host.n) {
        AllocItem *items = acc_xrealloc(NULL, (size_t)host.n * sizeof(AllocItem));
        int64_t *off = acc_xrealloc(NULL, (size_t)host.n * sizeof(int64_t));
        for (int k = 0; k < host.n; k++) {
            const Buffer *b = &s->bufs.v[host.v[k]];
            items[k] = (AllocItem){b->first, b->last + 1, b->size_bytes, ACC_ALIGN};
        }
        s->host_bytes = alloc_intervals_ex(items, host.n, off, &alloc_pipeline_options, NULL);
        for (int k = 0; k < host.n; k++) s->bufs.v[host.v[k]].offset = off[k];
        free(items);
        free(off);
    }
    VEC_FREE(host);
}

void alloc_assign(Schedule *s) {
    pipeline_init();
    int64_t top = 0;
    VEC(int) dyn = {0};
    alloc_host(s);
    for (int i = 0; i < s->bufs.n; i++) {
        Buffer *b = &s->bufs.v[i];
        if (b->host) continue;
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
    size_t nn = (size_t)(dyn.n > 0 ? dyn.n : 1);
    AllocItem *items = acc_xrealloc(NULL, nn * sizeof(AllocItem));
    int64_t *off = acc_xrealloc(NULL, nn * sizeof(int64_t));
    for (int k = 0; k < dyn.n; k++) {
        const Buffer *b = &s->bufs.v[dyn.v[k]];
        items[k] = (AllocItem){b->first, b->last + 1, b->size_bytes, ACC_ALIGN};
    }
    int64_t high = alloc_intervals_ex(items, dyn.n, off, &alloc_pipeline_options, NULL);
    for (int k = 0; k < dyn.n; k++) s->bufs.v[dyn.v[k]].offset = s->persistent_bytes + off[k];
    s->arena_bytes = s->persistent_bytes + high;

    sched_max_live(s);
    free(items);
    free(off);
    VEC_FREE(dyn);
}

/* ---- MiniMalloc CSV --------------------------------------------------------- */

void alloc_instance_free(AllocInstance *inst) {
    for (int i = 0; i < inst->n; i++) free(inst->ids[i]);
    free(inst->ids);
    free(inst->items);
    memset(inst, 0, sizeof *inst);
}

/* Split line at commas in place; trims spaces. Returns the field count (at most max). */
static int split_fields(char *line, char **f, int max) {
    int k = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (k < max) f[k] = p;
        k++;
        char *c = strchr(p, ',');
        char *end = c ? c : p + strlen(p);
        while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
        *end = '\0';
        if (!c) break;
        p = c + 1;
    }
    return k;
}

static bool parse_i64(const char *s, int64_t *v) {
    if (!*s) return false;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *v = x;
    return true;
}

#define CSV_FAIL(...) (snprintf(err, err_len, __VA_ARGS__), ok = false)

bool alloc_parse_csv(FILE *f, const char *name, AllocInstance *inst, char *err, size_t err_len) {
    memset(inst, 0, sizeof *inst);
    enum { C_ID, C_LOWER, C_UPPER, C_SIZE, C_ALIGN, C_OFFSET, C_N };
    static const char *const names[C_N] = {"id", "lower", "upper", "size", "alignment", "offset"};
    int col[C_N], n_cols = 0, cap = 0;
    int64_t total = 0;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    long lineno = 0;
    bool ok = true, header = false;
    char *fields[16];
    while (ok && (len = getline(&line, &line_cap, f)) >= 0) {
        lineno++;
        if ((size_t)len != strlen(line)) {
            CSV_FAIL("%s:%ld: error: a NUL byte in the line", name, lineno);
            break;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (lineno == 1 && (unsigned char)line[0] == 0xEF && (unsigned char)line[1] == 0xBB &&
            (unsigned char)line[2] == 0xBF)
            memmove(line, line + 3, strlen(line + 3) + 1); /* UTF-8 byte order mark */
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '#') continue;
        int k = split_fields(line, fields, 16);
        if (!header) {
            header = true;
            n_cols = k;
            for (int c = 0; c < C_N; c++) col[c] = -1;
            if (k > 16) {
                CSV_FAIL("%s:%ld: error: %d columns in the header; expected id,lower,upper,size", name, lineno, k);
                break;
            }
            for (int j = 0; j < k && ok; j++) {
                int c = 0;
                while (c < C_N && strcmp(fields[j], names[c])) c++;
                if (c == C_N)
                    CSV_FAIL("%s:%ld: error: unknown column '%s' in the header; expected id,lower,upper,size", name,
                             lineno, fields[j]);
                else if (col[c] >= 0) CSV_FAIL("%s:%ld: error: column '%s' appears twice", name, lineno, names[c]);
                else col[c] = j;
            }
            for (int c = 0; ok && c < C_ALIGN; c++)
                if (col[c] < 0)
                    CSV_FAIL("%s:%ld: error: the header lacks column '%s' (expected id,lower,upper,size)", name, lineno,
                             names[c]);
            continue;
        }
        if (k != n_cols) {
            CSV_FAIL("%s:%ld: error: %d field%s, the header has %d", name, lineno, k, k == 1 ? "" : "s", n_cols);
            break;
        }
        int64_t v[C_N] = {0};
        for (int c = C_LOWER; c < C_N && ok; c++) {
            if (col[c] < 0 || c == C_OFFSET) continue;
            if (!parse_i64(fields[col[c]], &v[c]))
                CSV_FAIL("%s:%ld: error: %s '%s' is not an integer", name, lineno, names[c], fields[col[c]]);
        }
        if (!ok) break;
        if (!*fields[col[C_ID]]) CSV_FAIL("%s:%ld: error: empty id", name, lineno);
        else if (v[C_LOWER] < 0) CSV_FAIL("%s:%ld: error: lower %" PRId64 " is negative", name, lineno, v[C_LOWER]);
        else if (v[C_UPPER] <= v[C_LOWER])
            CSV_FAIL("%s:%ld: error: upper %" PRId64 " must be greater than lower %" PRId64, name, lineno, v[C_UPPER],
                     v[C_LOWER]);
        else if (v[C_SIZE] <= 0) CSV_FAIL("%s:%ld: error: size %" PRId64 " must be positive", name, lineno, v[C_SIZE]);
        else if (v[C_SIZE] > (INT64_C(1) << 52))
            CSV_FAIL("%s:%ld: error: size %" PRId64 " is too large", name, lineno, v[C_SIZE]);
        else if (col[C_ALIGN] >= 0 && (v[C_ALIGN] <= 0 || v[C_ALIGN] > (INT64_C(1) << 40)))
            CSV_FAIL("%s:%ld: error: alignment %" PRId64 " must be positive", name, lineno, v[C_ALIGN]);
        else if (inst->n == (1 << 24)) CSV_FAIL("%s:%ld: error: more than %d buffers", name, lineno, 1 << 24);
        else if ((total += v[C_SIZE] + (col[C_ALIGN] >= 0 ? v[C_ALIGN] - 1 : 0)) > (INT64_C(1) << 62))
            CSV_FAIL("%s:%ld: error: the sizes (with their alignment padding) add up to more than 2^62 bytes", name,
                     lineno); /* so that no offset the allocator tries overflows */
        if (!ok) break;
        if (inst->n == cap) {
            cap = cap ? 2 * cap : 256;
            inst->items = acc_xrealloc(inst->items, (size_t)cap * sizeof(AllocItem));
            inst->ids = acc_xrealloc(inst->ids, (size_t)cap * sizeof(char *));
        }
        inst->items[inst->n] = (AllocItem){v[C_LOWER], v[C_UPPER], v[C_SIZE], col[C_ALIGN] >= 0 ? v[C_ALIGN] : 1};
        inst->ids[inst->n++] = strdup(fields[col[C_ID]]);
    }
    if (ok && ferror(f)) CSV_FAIL("%s:%ld: error: read error", name, lineno + 1);
    if (ok && !header) CSV_FAIL("%s:1: error: empty file; expected the header id,lower,upper,size", name);
    free(line);
    if (!ok) alloc_instance_free(inst);
    return ok;
}

bool alloc_read_csv(const char *path, AllocInstance *inst, char *err, size_t err_len) {
    memset(inst, 0, sizeof *inst);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "%s: error: cannot open: %s", path, strerror(errno));
        return false;
    }
    bool ok = alloc_parse_csv(f, path, inst, err, err_len);
    fclose(f);
    return ok;
}

void alloc_write_csv(const AllocInstance *inst, const int64_t *offsets, FILE *f) {
    fprintf(f, "id,lower,upper,size,offset\n");
    for (int i = 0; i < inst->n; i++)
        fprintf(f, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n", inst->ids[i], inst->items[i].lower,
                inst->items[i].upper, inst->items[i].size, offsets[i]);
}
