/* dag_cache.c - a schedule for tight budgets: the nodes in the topological
 * order, each stage rebuilding its node's missing inputs from a cache of
 * held outputs, by the rebuild that needs the least memory of two (the
 * recursive one of dag_minpeak.c, or a sweep of the node's cone); the cache
 * evicted, farthest next need first, until the stage fits. Not a planner of
 * cheap schedules: dag.c runs it where nothing else fits, then prunes and
 * improves what it writes.
 *
 * requires: a Dag, a budget. provides: a staged schedule (stage t computes t
 * last) whose replay (dag_simulate) the caller checks, or false.
 *
 * Why: the recursive schedule of dag_minpeak.c fits MOCCASIN's
 * random_layered_n1000 at 0.6 of its peak but recomputes every node once per
 * path (2.4e35 events); the evictions, which rebuild from what they hold,
 * fail there because their rebuild chains hold every input at hand. Here a
 * stage rebuilds from the cache, so most stages rebuild nothing, and the
 * rebuild's peak is known before it runs: the stage fits when the cache's
 * memory plus the rebuild's peak is within the budget.
 *
 * A rebuild's peak, from the cache H (its outputs read, their memory counted
 * in the cache's): for x not in H, with its inputs not in H taken in the
 * recursive order,
 *     rec(x)   = max(mem(x) + sum mem(u), max_i (sum_{j<i} mem(u_j) + P(u_i)))
 *     sweep(x) = the most held when x's ancestors not in H run in the
 *                topological order, each freed after its last read among them
 *     P(x)     = the smaller of the two (rec only while its events are few).
 * Both are upper bounds of the replay: the simulator frees a copy after its
 * last read and reads take the latest copy, so a node recomputed again
 * inside a rebuild frees the copy held before (dag_minpeak.c's argument).
 * The stage's inputs rebuilt and its node join the cache (held to the end
 * of the stage in both rebuilds, so counting them after it adds nothing).
 * With an empty cache P(t) is t's peak from nothing: where the largest of
 * those is within the budget, every stage fits, so the schedule always
 * exists (the eviction ends at an empty cache).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

#define REC_EVENTS_PER_NODE (getenv("ACC_CACHE_CAP") ? atoi(getenv("ACC_CACHE_CAP")) : 4) /* a recursive rebuild at most 4n events; else the sweep */

typedef struct {
    const Dag *d;
    int n;
    uint8_t *held;  /* [n] in the cache */
    int64_t cached; /* their memory */
    /* the rebuild from the cache, per node of the current cone */
    int64_t *peak;  /* [n] P(x) */
    double *cnt;    /* [n] its events */
    uint8_t *sweep; /* [n] P(x) is the sweep */
    int *mark, stamp;
    int *cone, n_cone; /* the current stage's cone, ascending */
    int *stack, *ord, *last, *next;
    int *on; /* emit: held by a frame below */
} Cache;

/* The ancestors of x (x included) not in the cache, ascending, into c->cone;
 * marks them with a fresh stamp. */
static void collect_cone(Cache *c, int x) {
    const Dag *d = c->d;
    int ns = 0;
    c->n_cone = 0;
    c->stamp++;
    if (c->held[x]) return;
    c->mark[x] = c->stamp, c->stack[ns++] = x;
    while (ns) {
        int v = c->stack[--ns];
        c->cone[c->n_cone++] = v;
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) {
            int u = d->in[q];
            if (!c->held[u] && c->mark[u] != c->stamp) c->mark[u] = c->stamp, c->stack[ns++] = u;
        }
    }
    /* ascending: a counting pass would need n; the cones are short, but not always: a heap sort */
    int *a = c->cone, m = c->n_cone;
    for (int k = m / 2 - 1; k >= 0; k--)
        for (int i = k, j; (j = 2 * i + 1) < m; i = j) {
            if (j + 1 < m && a[j + 1] > a[j]) j++;
            if (a[i] >= a[j]) break;
            int tmp = a[i];
            a[i] = a[j], a[j] = tmp;
        }
    for (int e = m - 1; e > 0; e--) {
        int tmp = a[0];
        a[0] = a[e], a[e] = tmp;
        for (int i = 0, j; (j = 2 * i + 1) < e; i = j) {
            if (j + 1 < e && a[j + 1] > a[j]) j++;
            if (a[i] >= a[j]) break;
            tmp = a[i];
            a[i] = a[j], a[j] = tmp;
        }
    }
}

/* The sweep's peak for x over the part of the current cone that is x's
 * cone (x's ancestors not held: marked with sub). */
static int64_t sweep_peak(Cache *c, int x, int *n_events) {
    const Dag *d = c->d;
    int ns = 0, m = 0, sub = -x - 2; /* a mark no stamp takes */
    c->mark[x] = sub, c->stack[ns++] = x;
    while (ns) {
        int v = c->stack[--ns];
        m++;
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) {
            int u = d->in[q];
            if (!c->held[u] && c->mark[u] != sub) c->mark[u] = sub, c->stack[ns++] = u;
        }
    }
    /* the cone's nodes in order (they are all in c->cone), last reads among them */
    for (int k = 0; k < c->n_cone && c->cone[k] <= x; k++) c->last[c->cone[k]] = -1;
    for (int k = 0; k < c->n_cone && c->cone[k] <= x; k++) {
        int v = c->cone[k];
        if (c->mark[v] != sub) continue;
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++)
            if (c->mark[d->in[q]] == sub) c->last[d->in[q]] = v;
    }
    int64_t live = 0, most = 0;
    for (int k = 0; k < c->n_cone && c->cone[k] <= x; k++) {
        int v = c->cone[k];
        if (c->mark[v] != sub) continue;
        live += d->mem[v];
        if (live > most) most = live;
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++)
            if (c->mark[d->in[q]] == sub && c->last[d->in[q]] == v) live -= d->mem[d->in[q]];
    }
    for (int k = 0; k < c->n_cone && c->cone[k] <= x; k++) /* back to the cone's stamp */
        if (c->mark[c->cone[k]] == sub) c->mark[c->cone[k]] = c->stamp;
    *n_events = m;
    return most;
}

/* The non-held inputs of x in the recursive order (P(u) - mem(u) descending, ties by index). */
static int rebuild_order(Cache *c, int x, int *ord) {
    const Dag *d = c->d;
    int k = 0;
    for (int q = d->in_off[x]; q < d->in_off[x + 1]; q++) {
        int u = d->in[q], b;
        if (c->held[u]) continue;
        for (b = k++; b > 0; b--) {
            int w = ord[b - 1];
            if (c->peak[w] - d->mem[w] > c->peak[u] - d->mem[u] ||
                (c->peak[w] - d->mem[w] == c->peak[u] - d->mem[u] && w < u))
                break;
            ord[b] = w;
        }
        ord[b] = u;
    }
    return k;
}

/* P(x) for every node of x's cone from the cache (the cone ascending, so
 * each input's before its readers); returns P(x). */
static int64_t rebuild_peak(Cache *c, int x, int64_t slack) {
    const Dag *d = c->d;
    collect_cone(c, x);
    double cap = (double)REC_EVENTS_PER_NODE * c->n;
    for (int k = 0; k < c->n_cone; k++) {
        int v = c->cone[k];
        int m = rebuild_order(c, v, c->ord);
        int64_t held = 0, rec = 0;
        double cnt = 1;
        for (int i = 0; i < m; i++) {
            if (held + c->peak[c->ord[i]] > rec) rec = held + c->peak[c->ord[i]];
            held += d->mem[c->ord[i]];
            cnt += c->cnt[c->ord[i]];
        }
        if (held + d->mem[v] > rec) rec = held + d->mem[v];
        int n_sw = 0;
        /* the sweep is quadratic in the cone: only where the recursion is too long or too large */
        int64_t sw = m && (cnt > cap || rec > slack) ? sweep_peak(c, v, &n_sw) : rec;
        bool use_sweep = m && (cnt > cap || sw < rec);
        c->peak[v] = use_sweep ? sw : rec;
        c->cnt[v] = use_sweep ? n_sw : cnt;
        c->sweep[v] = use_sweep;
    }
    return c->held[x] ? 0 : c->peak[x];
}

static int by_id(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

/* Append x's rebuild (as rebuild_peak chose it) to s, stage t. */
static void emit(Cache *c, int x, int t, Staged *s) {
    const Dag *d = c->d;
    if (c->sweep[x]) { /* x's cone ascending: ancestors of x not held */
        int ns = 0, sub = -x - 2, first = s->ev.n;
        c->mark[x] = sub, c->stack[ns++] = x;
        while (ns) {
            int v = c->stack[--ns];
            staged_push(s, t, v);
            for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) {
                int u = d->in[q];
                if (!c->held[u] && c->mark[u] != sub) c->mark[u] = sub, c->stack[ns++] = u;
            }
        }
        for (int e = first; e < s->ev.n; e++) c->mark[s->ev.v[e]] = c->stamp;
        qsort(s->ev.v + first, (size_t)(s->ev.n - first), sizeof(int), by_id); /* one stage: stages unchanged */
        return;
    }
    int k = d->in_off[x + 1] - d->in_off[x];
    int *ord = acc_xcalloc((size_t)k + 1, sizeof(int)), n_mine = 0;
    int m = rebuild_order(c, x, ord);
    for (int i = 0; i < m; i++) {
        if (c->on[ord[i]]) continue;
        emit(c, ord[i], t, s);
        c->on[ord[i]] = 1, ord[n_mine++] = ord[i]; /* held by this frame until x runs */
    }
    staged_push(s, t, x);
    for (int i = 0; i < n_mine; i++) c->on[ord[i]] = 0;
    free(ord);
}

/* next[u]: the first stage at or after t that reads u, directly or through
 * a reader before t that is not held (and must be rebuilt); n if none. */
static void next_need(Cache *c, int t) {
    const Dag *d = c->d;
    for (int u = c->n - 1; u >= 0; u--) {
        int b = c->n;
        for (int q = d->out_off[u]; q < d->out_off[u + 1]; q++) {
            int w = d->out[q], at = w >= t ? w : c->held[w] ? c->n : c->next[w];
            if (at < b) b = at;
        }
        c->next[u] = b;
    }
}

/* Keep in the cache what stage t (events from first on) rebuilt and a later
 * stage may need, soonest need first, where the stage's memory leaves room:
 * a kept copy lives from its event to the end of the stage (then it is
 * counted in the cache). */
static void keep_rebuilt(Cache *c, const Staged *s, int first, int64_t budget) {
    const Dag *d = c->d;
    int m = s->ev.n - first;
    if (m <= 1) return;
    const int *ev = s->ev.v + first;
    int *lastread = acc_xcalloc((size_t)m, sizeof(int)), *cand = acc_xcalloc((size_t)m, sizeof(int));
    int64_t *at = acc_xcalloc((size_t)m + 1, sizeof(int64_t));
    for (int e = 0; e < m; e++) c->last[ev[e]] = -1;
    for (int e = 0; e < m; e++) {
        lastread[e] = e;
        for (int q = d->in_off[ev[e]]; q < d->in_off[ev[e] + 1]; q++)
            if (!c->held[d->in[q]] && c->last[d->in[q]] >= 0) lastread[c->last[d->in[q]]] = e;
        c->last[ev[e]] = e;
    }
    for (int e = 0; e < m; e++) at[e] += d->mem[ev[e]], at[lastread[e] + 1] -= d->mem[ev[e]];
    for (int e = 0; e < m; e++) at[e] += (e ? at[e - 1] : c->cached);
    int n_c = 0;
    for (int e = 0; e < m - 1; e++)
        if (c->last[ev[e]] == e && !c->held[ev[e]] && c->next[ev[e]] < c->n) cand[n_c++] = e;
    for (int a = 1; a < n_c; a++) /* soonest need first */
        for (int b = a; b > 0 && c->next[ev[cand[b - 1]]] > c->next[ev[cand[b]]]; b--) {
            int tmp = cand[b];
            cand[b] = cand[b - 1], cand[b - 1] = tmp;
        }
    for (int k = 0; k < n_c; k++) {
        int e = cand[k], v = ev[e];
        int64_t most = 0;
        for (int f = lastread[e] + 1; f < m; f++)
            if (at[f] > most) most = at[f];
        if (most + d->mem[v] > budget) continue;
        for (int f = lastread[e] + 1; f < m; f++) at[f] += d->mem[v];
        c->held[v] = 1, c->cached += d->mem[v];
    }
    free(lastread), free(cand), free(at);
}

static void drop(Cache *c, int u) {
    c->held[u] = 0;
    c->cached -= c->d->mem[u];
}

bool dag_cache_schedule(const Dag *d, int64_t budget, double deadline, Staged *out) {
    int n = d->n;
    Pool mem = {0};
    Cache c = {.d = d, .n = n};
    c.held = pool_alloc(&mem, (size_t)n);
    c.sweep = pool_alloc(&mem, (size_t)n);
    c.peak = pool_alloc(&mem, (size_t)n * sizeof(int64_t));
    c.cnt = pool_alloc(&mem, (size_t)n * sizeof(double));
    int **ints[] = {&c.mark, &c.cone, &c.stack, &c.ord, &c.last, &c.next, &c.on};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) *ints[k] = pool_alloc(&mem, (size_t)n * sizeof(int));
    int *by_need = pool_alloc(&mem, (size_t)n * sizeof(int));
    staged_clear(out);
    bool ok = true;
    for (int t = 0; t < n && ok; t++) {
        if ((t & 15) == 0 && acc_now_s() > deadline) {
            ok = false;
            break;
        }
        next_need(&c, t);
        int n_by = 0;
        for (int u = 0; u < t; u++) {
            if (!c.held[u]) continue;
            if (c.next[u] >= n) drop(&c, u); /* nothing will read it again */
            else by_need[n_by++] = u;
        }
        /* evict, farthest next need first, until the stage fits; the stage's own inputs last */
        for (int a = 1; a < n_by; a++)
            for (int b = a; b > 0; b--) {
                int u = by_need[b], w = by_need[b - 1];
                bool u_in = c.next[u] == t, w_in = c.next[w] == t;
                if (u_in > w_in || (u_in == w_in && c.next[w] >= c.next[u])) break;
                by_need[b] = w, by_need[b - 1] = u;
            }
        int64_t p = rebuild_peak(&c, t, budget - c.cached);
        int64_t p0 = p, c0 = c.cached;
        int k = 0;
        for (; c.cached + p > budget && k < n_by; k++) {
            int u = by_need[k];
            bool read = false; /* by the rebuild (its cone is marked; t is in it) */
            for (int q = d->out_off[u]; q < d->out_off[u + 1] && !read; q++) read = c.mark[d->out[q]] == c.stamp;
            if (read) break;
            drop(&c, u);
        }
        /* the rest read by the rebuild: each time the one whose drop leaves the least */
        while (c.cached + p > budget && getenv("ACC_CACHE_BEST")) {
            int best = -1;
            int64_t best_total = c.cached + p;
            int tried = 0, most = getenv("ACC_CACHE_K") ? atoi(getenv("ACC_CACHE_K")) : 1000000;
            for (int j = k; j < n_by && tried < most; j++) {
                int u = by_need[j];
                if (!c.held[u]) continue;
                tried++;
                drop(&c, u);
                int64_t q = rebuild_peak(&c, t, budget - c.cached);
                if (c.cached + q < best_total) best_total = c.cached + q, best = u;
                c.held[u] = 1, c.cached += d->mem[u];
            }
            if (best < 0) break;
            drop(&c, best);
            p = rebuild_peak(&c, t, budget - c.cached);
        }
        for (; c.cached + p > budget && k < n_by; k++) {
            int u = by_need[k];
            if (!c.held[u]) continue;
            drop(&c, u);
            p = rebuild_peak(&c, t, budget - c.cached);
        }
        if (getenv("ACC_CACHE_DEBUG") && p0 + c0 > budget)
            fprintf(stderr, "cache: stage %d: cached %lld + %lld -> %lld + %lld, %d of %d\n", t, (long long)c0,
                    (long long)p0, (long long)c.cached, (long long)p, k, n_by);
        if (c.cached + p > budget) {
            if (getenv("ACC_CACHE_DEBUG"))
                fprintf(stderr, "cache: stage %d: cached %lld + rebuild %lld > %lld (cone %d)\n", t,
                        (long long)c.cached, (long long)p, (long long)budget, c.n_cone);
            ok = false;
            break;
        }
        int first = out->ev.n;
        emit(&c, t, t, out);
        int64_t before = c.cached;
        for (int q = d->in_off[t]; q < d->in_off[t + 1]; q++)
            if (!c.held[d->in[q]]) c.held[d->in[q]] = 2, c.cached += d->mem[d->in[q]];
        c.held[t] = 2, c.cached += d->mem[t];
        if (getenv("ACC_CACHE_KEEP")) {
            next_need(&c, t + 1);
            int64_t after = c.cached;
            c.cached = before; /* keep_rebuilt counts the stage's own copies */
            for (int q = d->in_off[t]; q <= d->in_off[t + 1]; q++) {
                int u = q < d->in_off[t + 1] ? d->in[q] : t;
                if (c.held[u] == 2) c.held[u] = 0, c.next[u] = c.n; /* joining anyway */
            }
            keep_rebuilt(&c, out, first, budget);
            for (int q = d->in_off[t]; q <= d->in_off[t + 1]; q++) {
                int u = q < d->in_off[t + 1] ? d->in[q] : t;
                if (!c.held[u]) c.held[u] = 2; /* not kept by keep_rebuilt: it skips them */
            }
            c.cached += after - before;
        }
        for (int q = d->in_off[t]; q <= d->in_off[t + 1]; q++) {
            int u = q < d->in_off[t + 1] ? d->in[q] : t;
            if (c.held[u] == 2) c.held[u] = 1;
        }
    }
    pool_free(&mem);
    if (!ok) staged_clear(out);
    return ok;
}
