/* dag.c - planning a published graph: acc's heuristic incumbents and the
 * driver of the methods (the integer programs are in dag_milp.c, the exact
 * search over every schedule in dag_search.c, the reference of the tests in
 * dag_exhaustive.c, the simulator every plan is scored by and the baseline in
 * dag_sim.c).
 *
 * requires: a Dag (dag_json.c), a budget. provides: a schedule (node
 * executions in order), its exact peak and total compute from dag_simulate.
 *
 * acc's method: (1) a greedy incumbent over retention decisions: a plan says,
 * per node and stage, whether the node's output may be kept into that stage;
 * what a stage needs and was not kept is recomputed there, inputs first
 * (Checkmate's "R from S", need-driven). Starting from keeping everything,
 * the greedy drops, at the peak, the held output whose drop buys the most
 * excess memory per unit of added compute, until the plan fits; then it
 * undoes drops that turn out unnecessary. (2) A compact integer program
 * (dag_milp.c) seeded with it. (3) The best plan that fits, by the simulator.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"
#include "lp.h"


/* ---- acc's greedy incumbent ---------------------------------------------------- */

typedef struct {
    Pool mem; /* this struct and its arrays but mem_at (heur_free frees them in one call) */
    const Dag *d;
    int n;
    int64_t budget;
    uint8_t *cut; /* [n*n] cut[t*n+i] > 0: i is not kept into stage t */
    int *present, *plist, *mark, *stack, *need;
    Staged cur;
    int64_t *mem_at; /* grows: from the heap */
    int mem_cap;
    double deadline;
} Heur;

typedef struct {
    int node, lo, hi; /* cut[t][node] for t in [lo, hi] */
} Cut;

/* The schedule that retention plan h->cut implies: each stage recomputes
 * what it needs and was not kept, ascending, then runs its node. */
static void derive(Heur *h, Staged *out) {
    const Dag *d = h->d;
    int n = h->n, np = 0;
    staged_clear(out);
    for (int i = 0; i < n; i++) h->present[i] = 0, h->mark[i] = -1;
    for (int t = 0; t < n; t++) {
        const uint8_t *row = h->cut + (size_t)t * n;
        int k = 0;
        for (int j = 0; j < np; j++) {
            int i = h->plist[j];
            if (row[i]) h->present[i] = 0;
            else h->plist[k++] = i;
        }
        np = k;
        int ns = 0, nn = 0;
        for (int q = d->in_off[t]; q < d->in_off[t + 1]; q++) {
            int p = d->in[q];
            if (!h->present[p] && h->mark[p] != t) h->mark[p] = t, h->stack[ns++] = p;
        }
        while (ns) {
            int u = h->stack[--ns];
            h->need[nn++] = u;
            for (int q = d->in_off[u]; q < d->in_off[u + 1]; q++) {
                int p = d->in[q];
                if (!h->present[p] && h->mark[p] != t) h->mark[p] = t, h->stack[ns++] = p;
            }
        }
        for (int a = 1; a < nn; a++) /* ascending (few items) */
            for (int b = a; b > 0 && h->need[b - 1] > h->need[b]; b--) {
                int x = h->need[b];
                h->need[b] = h->need[b - 1];
                h->need[b - 1] = x;
            }
        for (int a = 0; a < nn; a++) {
            staged_push(out, t, h->need[a]);
            h->present[h->need[a]] = 1;
            h->plist[np++] = h->need[a];
        }
        staged_push(out, t, t);
        h->present[t] = 1;
        h->plist[np++] = t;
    }
}

typedef struct {
    int64_t peak;
    double cost, excess;
} Score;

static Score score(Heur *h, const Staged *s) {
    if (s->ev.n > h->mem_cap) {
        h->mem_cap = 2 * s->ev.n;
        h->mem_at = acc_xrealloc(h->mem_at, (size_t)h->mem_cap * sizeof(int64_t));
    }
    DagSim sim;
    dag_simulate(h->d, s->ev.v, s->ev.n, &sim, h->mem_at);
    Score sc = {sim.peak, sim.compute, 0};
    for (int e = 0; e < s->ev.n; e++)
        if (h->mem_at[e] > h->budget) sc.excess += (double)(h->mem_at[e] - h->budget);
    return sc;
}

static void apply_cut(Heur *h, Cut c, int delta) {
    for (int t = c.lo; t <= c.hi; t++) {
        uint8_t *x = &h->cut[(size_t)t * h->n + c.node];
        ACC_ASSERT(delta > 0 ? *x < 255 : *x > 0);
        *x = (uint8_t)(*x + delta);
    }
}

/* Candidate cuts at the peak event of s: the copies held across it that it
 * does not read, each dropped from the stage after its last touch before the
 * peak through the stage of its next touch. */
static int peak_candidates(Heur *h, const Staged *s, Cut *out) {
    const Dag *d = h->d;
    int n_ev = s->ev.n;
    score(h, s);
    int peak_e = 0;
    for (int e = 1; e < n_ev; e++)
        if (h->mem_at[e] > h->mem_at[peak_e]) peak_e = e;
    int tp = s->stage.v[peak_e];
    Pool mem = {0}; /* called in the greedy's loop: returned at the end */
    int *inst = pool_alloc(&mem, (size_t)h->n * sizeof(int));
    int *before = pool_alloc(&mem, (size_t)n_ev * sizeof(int)), *after = pool_alloc(&mem, (size_t)n_ev * sizeof(int));
    bool *read_at_peak = pool_alloc(&mem, (size_t)n_ev * sizeof(bool));
    for (int i = 0; i < h->n; i++) inst[i] = -1;
    for (int e = 0; e < n_ev; e++) before[e] = e, after[e] = -1;
    for (int e = 0; e < n_ev; e++) {
        int v = s->ev.v[e];
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) {
            int x = inst[d->in[q]];
            if (e < peak_e) before[x] = e;
            else if (e == peak_e) read_at_peak[x] = true;
            else if (after[x] < 0) after[x] = e;
        }
        inst[v] = e;
    }
    int m = 0;
    for (int x = 0; x < peak_e; x++) {
        if (after[x] < 0 || read_at_peak[x]) continue; /* not held across the peak */
        int lo = s->stage.v[before[x]] + 1, hi = s->stage.v[after[x]];
        if (lo > tp || hi < tp) continue; /* stage boundaries cannot free it there */
        int node = s->ev.v[x];
        bool dup = false;
        for (int k = 0; k < m && !dup; k++) dup = out[k].node == node;
        if (!dup) out[m++] = (Cut){node, lo, hi};
    }
    pool_free(&mem);
    return m;
}

static Heur *heur_new(const Dag *d, int64_t budget, double deadline) {
    int n = d->n;
    Pool mem = {0};
    Heur *h = pool_alloc(&mem, sizeof *h); /* zeroed */
    h->mem = mem;
    h->d = d, h->n = n, h->budget = budget, h->deadline = deadline;
    h->cut = pool_alloc(&h->mem, (size_t)n * (size_t)n);
    h->present = pool_alloc(&h->mem, (size_t)n * sizeof(int));
    h->plist = pool_alloc(&h->mem, (size_t)n * sizeof(int));
    h->mark = pool_alloc(&h->mem, (size_t)n * sizeof(int));
    h->stack = pool_alloc(&h->mem, (size_t)n * sizeof(int));
    h->need = pool_alloc(&h->mem, (size_t)n * sizeof(int));
    return h;
}

static void heur_free(Heur *h) {
    staged_free(&h->cur);
    free(h->mem_at);
    Pool mem = h->mem; /* h itself lies in it */
    pool_free(&mem);
}

/* Greedy descent from h->cut to the budget: at the peak, the drop with the
 * least added compute per unit of excess memory removed. */
static bool greedy_cut(Heur *h) {
    const Dag *d = h->d;
    int n = h->n;
    Cut *cand = NULL;
    int cand_cap = 0;
    Staged trial = {0};
    bool ok = false;
    derive(h, &h->cur);
    Score cur = score(h, &h->cur);
    for (int iter = 0; iter < 50 * n + 100 && acc_now_s() < h->deadline; iter++) {
        if (cur.peak <= h->budget) break;
        if (cand_cap < h->cur.ev.n) {
            cand_cap = 2 * h->cur.ev.n;
            cand = acc_xrealloc(cand, (size_t)cand_cap * sizeof(Cut));
        }
        int m = peak_candidates(h, &h->cur, cand);
        int best = -1;
        double best_ratio = INFINITY;
        Score best_sc = cur;
        for (int k = 0; k < m && ((k & 15) || acc_now_s() < h->deadline); k++) {
            apply_cut(h, cand[k], +1);
            derive(h, &trial);
            Score sc = score(h, &trial);
            apply_cut(h, cand[k], -1);
            double gain = cur.excess - sc.excess, dc = sc.cost - cur.cost;
            if (gain <= 0) continue;
            double ratio = (dc > 0 ? dc : 0) / gain;
            if (ratio < best_ratio || (ratio == best_ratio && sc.excess < best_sc.excess))
                best = k, best_ratio = ratio, best_sc = sc;
        }
        (void)d;
        if (best < 0) break;
        apply_cut(h, cand[best], +1);
        derive(h, &h->cur);
        cur = score(h, &h->cur);
    }
    ok = cur.peak <= h->budget;
    staged_free(&trial);
    free(cand);
    return ok;
}

/* h->cut from a staged schedule: a node is kept into stage t exactly when
 * a later event reads the copy it holds then. */
static void cuts_from_schedule(Heur *h, const Staged *s) {
    const Dag *d = h->d;
    int n = h->n, n_ev = s->ev.n;
    memset(h->cut, 1, (size_t)n * (size_t)n);
    int *last = staged_last_reads(d, s);
    for (int e = 0; e < n_ev; e++)
        for (int t = s->stage.v[e] + 1; t <= s->stage.v[last[e]]; t++) h->cut[(size_t)t * n + s->ev.v[e]] = 0;
    free(last);
}

/* Undo drops the plan can afford: each maximal run of stages a node is not
 * kept into, if keeping it there fits and saves compute; most valuable first. */
static void restore_cuts(Heur *h) {
    int n = h->n;
    derive(h, &h->cur);
    Score cur = score(h, &h->cur);
    if (cur.peak > h->budget) return;
    /* recomputations per (stage, node) in the current schedule */
    VEC(Cut) runs = {0};
    VEC(double) val = {0};
    uint8_t *rec = acc_xcalloc((size_t)n * (size_t)n, 1);
    for (int e = 0; e < h->cur.ev.n; e++)
        if (h->cur.ev.v[e] != h->cur.stage.v[e]) rec[(size_t)h->cur.stage.v[e] * n + h->cur.ev.v[e]] = 1;
    for (int i = 0; i < n; i++)
        for (int t = i + 1; t < n;) {
            if (!h->cut[(size_t)t * n + i]) {
                t++;
                continue;
            }
            int a = t;
            double v = 0;
            while (t < n && h->cut[(size_t)t * n + i]) v += rec[(size_t)t * n + i] ? h->d->cost[i] : 0, t++;
            if (v > 0) {
                VEC_PUSH(runs, ((Cut){i, a, t - 1}));
                VEC_PUSH(val, v);
            }
        }
    /* most recompute saved first (selection sort: few runs) */
    Staged trial = {0};
    for (int pass = 0; pass < runs.n && acc_now_s() < h->deadline; pass++) {
        int b = -1;
        for (int k = 0; k < runs.n; k++)
            if (runs.v[k].node >= 0 && (b < 0 || val.v[k] > val.v[b])) b = k;
        if (b < 0) break;
        Cut c = runs.v[b];
        runs.v[b].node = -1;
        uint8_t *saved = acc_xcalloc((size_t)(c.hi - c.lo + 1), 1);
        for (int t = c.lo; t <= c.hi; t++)
            saved[t - c.lo] = h->cut[(size_t)t * n + c.node], h->cut[(size_t)t * n + c.node] = 0;
        derive(h, &trial);
        Score sc = score(h, &trial);
        if (sc.peak <= h->budget && sc.cost < cur.cost) cur = sc;
        else
            for (int t = c.lo; t <= c.hi; t++) h->cut[(size_t)t * n + c.node] = saved[t - c.lo];
        free(saved);
    }
    derive(h, &h->cur);
    staged_free(&trial);
    VEC_FREE(runs);
    VEC_FREE(val);
    free(rec);
}

/* ---- eviction (DTR-like) ---------------------------------------------------------- */

/* How an eviction schedule chooses: the score (0: cost per byte and time
 * to the next use, 1: per byte and time since the last use, 2: per byte),
 * lazy locking of the inputs at hand (materialize), a limit on the depth of
 * rebuild chains it prefers to keep (0: none), and a perturbation. */
typedef struct {
    int score;
    bool lazy;
    int max_depth;
    uint64_t noise;      /* 0, or the seed of a generator that perturbs the scores */
    int pebble;          /* > 0: where the eviction fails at a node, compute it by dag_pebble (seed pebble - 1) */
    int **from_nothing;  /* with pebble, [n]: a path found from nothing for node i (NULL: none yet), */
    int *n_from_nothing; /* its length, -1 where searched and not found (pebble_stage fills both) */
    int *held_stops;     /* with pebble, [n]: the kinds whose search at i from what is held stopped */
} EvictKind;

typedef struct {
    const Dag *d;
    int64_t budget, used;
    int variant, t, depth;
    uint64_t noise; /* 0, or the state of a generator that perturbs the scores */
    int *present, *lock, *ptr, *touched, *stamp;
    int *down, *up; /* rebuild_depths */
    int *work;      /* [n]: evicted_depths' stack */
    int max_depth;  /* > 0: prefer evictions that keep rebuild chains at most this deep */
    int clock, n_stamp;
    bool lazy; /* materialize: inputs at hand stay evictable while the missing ones are rebuilt */
    Staged *out;
    /* materialize gives up past this: the deadline plus a second. The deadline itself is checked every 64
     * nodes (an eviction that ends a little late is still used: under load or a sanitizer the small graphs'
     * evictions need it), but one node's rebuilds at n = 1,000 took 15 s past it */
    double hard_deadline;
} Evict;

/* Output bytes of the missing ancestors of p (itself included) that
 * rebuilding p would recompute. */
static long missing_cone(Evict *v, int p) {
    const Dag *d = v->d;
    int st = ++v->n_stamp, top = 0;
    int *stack = acc_xcalloc((size_t)d->n + 1, sizeof(int));
    long bytes = 0;
    stack[top++] = p;
    v->stamp[p] = st;
    while (top) {
        int u = stack[--top];
        bytes += (long)d->mem[u];
        for (int q = d->in_off[u]; q < d->in_off[u + 1]; q++) {
            int w = d->in[q];
            if (!v->present[w] && v->stamp[w] != st) v->stamp[w] = st, stack[top++] = w;
        }
    }
    free(stack);
    return bytes;
}

/* Is i still read by a first execution to come? */
static bool still_needed(Evict *v, int i) {
    const Dag *d = v->d;
    while (v->ptr[i] < d->out_off[i + 1] && d->out[v->ptr[i]] < v->t) v->ptr[i]++;
    return v->ptr[i] < d->out_off[i + 1];
}

/* The depth of the rebuild of every missing node (down: 1 + its deepest
 * missing input; 0 when present) and the height of the missing nodes still
 * needed above it (up: the rebuild chains that would go through it). */
static void rebuild_depths(Evict *v) {
    const Dag *d = v->d;
    for (int j = 0; j < v->t; j++) {
        v->down[j] = 0;
        if (v->present[j]) continue;
        for (int q = d->in_off[j]; q < d->in_off[j + 1]; q++)
            if (v->down[d->in[q]] + 1 > v->down[j]) v->down[j] = v->down[d->in[q]] + 1;
        if (v->down[j] == 0) v->down[j] = 1;
    }
    for (int j = v->t - 1; j >= 0; j--) {
        v->up[j] = -1; /* -1: no missing node still needed depends on j through missing nodes */
        if (still_needed(v, j)) v->up[j] = 0;
        for (int q = d->out_off[j]; q < d->out_off[j + 1]; q++) {
            int w = d->out[q];
            if (w < v->t && !v->present[w] && v->up[w] >= 0 && v->up[w] + 1 > v->up[j]) v->up[j] = v->up[w] + 1;
        }
    }
}

/* rebuild_depths after evicting b (present until now): only what b's
 * missing readers build on (down) and what b's inputs are rebuilt for (up)
 * grows, along missing nodes. The eviction loop of materialize used to
 * recompute both for the whole graph after each eviction: most of its time
 * on MOCCASIN's n250 at 0.6 of its peak (perf). A node is on the stack at
 * most once (stamp), and propagates its value when popped, so the stack
 * holds at most n. */
static void evicted_depths(Evict *v, int b) {
    const Dag *d = v->d;
    int top = 0, *stack = v->work, st = ++v->n_stamp;
    v->down[b] = 1;
    for (int q = d->in_off[b]; q < d->in_off[b + 1]; q++)
        if (v->down[d->in[q]] + 1 > v->down[b]) v->down[b] = v->down[d->in[q]] + 1;
    stack[top++] = b, v->stamp[b] = st;
    while (top) { /* down: forward along missing readers before t */
        int j = stack[--top];
        v->stamp[j] = 0;
        for (int q = d->out_off[j]; q < d->out_off[j + 1]; q++) {
            int w = d->out[q];
            if (w >= v->t || v->present[w] || v->down[j] + 1 <= v->down[w]) continue;
            v->down[w] = v->down[j] + 1;
            if (v->stamp[w] != st) stack[top++] = w, v->stamp[w] = st;
        }
    }
    if (v->up[b] < 0) return;
    stack[top++] = b, v->stamp[b] = st;
    while (top) { /* up: backward from missing nodes to their inputs */
        int j = stack[--top];
        v->stamp[j] = 0;
        for (int q = d->in_off[j]; q < d->in_off[j + 1]; q++) {
            int u = d->in[q];
            if (v->up[j] + 1 <= v->up[u]) continue;
            v->up[u] = v->up[j] + 1;
            if (!v->present[u] && v->stamp[u] != st) stack[top++] = u, v->stamp[u] = st;
        }
    }
}

/* The deepest rebuild chain evicting the present node i would make. */
static int depth_if_evicted(Evict *v, int i) {
    const Dag *d = v->d;
    if (v->up[i] < 0) return 0;
    int down = 1;
    for (int q = d->in_off[i]; q < d->in_off[i + 1]; q++)
        if (d->in[q] < v->t && v->down[d->in[q]] + 1 > down) down = v->down[d->in[q]] + 1;
    return down + v->up[i];
}

/* Lower is evicted first: dead copies (no first execution reads them any
 * more), then by recompute cost per byte and time to the next use. */
static double evict_score(Evict *v, int i) {
    const Dag *d = v->d;
    while (v->ptr[i] < d->out_off[i + 1] && d->out[v->ptr[i]] < v->t) v->ptr[i]++;
    if (v->ptr[i] >= d->out_off[i + 1]) return -1.0 - (double)d->mem[i] * 1e-18;
    double rc = d->cost[i];
    for (int q = d->in_off[i]; q < d->in_off[i + 1]; q++)
        if (!v->present[d->in[q]]) rc += d->cost[d->in[q]];
    double m = (double)(d->mem[i] > 0 ? d->mem[i] : 1);
    if (v->noise) { /* a factor in [0.25, 4) */
        v->noise ^= v->noise << 13, v->noise ^= v->noise >> 7, v->noise ^= v->noise << 17;
        rc *= pow(2.0, (double)(v->noise >> 11) / 9007199254740992.0 * 4 - 2);
    }
    switch (v->variant) {
    case 0: return rc / (m * (double)(d->out[v->ptr[i]] - v->t + 1));
    case 1: return rc / (m * (double)(v->clock - v->touched[i] + 1));
    default: return rc / m;
    }
}

static bool materialize(Evict *v, int x) {
    const Dag *d = v->d;
    if (++v->depth > d->n + 1 || acc_now_s() > v->hard_deadline) {
        v->depth--;
        return false;
    }
    bool ok = true;
    /* inputs at hand are locked first; the missing ones are rebuilt largest
     * missing cone first (what needs the most room runs while least is held).
     * Lazy: the inputs at hand stay evictable while the missing ones are
     * rebuilt (a deep rebuild can then use their room), and those evicted
     * meanwhile are rebuilt in a second round, the others locked */
    int deg = d->in_off[x + 1] - d->in_off[x], n_locked = 0;
    int *order = acc_xcalloc((size_t)deg + 1, sizeof(int)), *locked = acc_xcalloc((size_t)deg + 1, sizeof(int));
    long *cone = acc_xcalloc((size_t)deg + 1, sizeof(long));
    for (int round = 0; ok; round++) {
        int n_miss = 0;
        for (int q = d->in_off[x]; q < d->in_off[x + 1]; q++) {
            int p = d->in[q];
            bool mine = false;
            for (int a = 0; a < n_locked && !mine; a++) mine = locked[a] == p;
            if (mine) continue;
            if (!v->present[p]) {
                cone[n_miss] = missing_cone(v, p);
                order[n_miss++] = p;
            } else if (!v->lazy || round > 0) {
                v->lock[p]++, v->touched[p] = v->clock, locked[n_locked++] = p;
            }
        }
        if (n_miss == 0 && (!v->lazy || round > 0)) break;
        if (round > 1) { /* a lazy second round locks what it finds: nothing is missing after it */
            ok = false;
            break;
        }
        for (int a = 1; a < n_miss; a++)
            for (int b = a; b > 0 && cone[b - 1] < cone[b]; b--) {
                long tc = cone[b];
                int to = order[b];
                cone[b] = cone[b - 1], order[b] = order[b - 1];
                cone[b - 1] = tc, order[b - 1] = to;
            }
        for (int a = 0; a < n_miss && ok; a++) {
            int p = order[a];
            if (!v->present[p]) ok = materialize(v, p);
            if (ok) v->lock[p]++, v->touched[p] = v->clock, locked[n_locked++] = p;
        }
    }
    if (ok && v->used + d->mem[x] > v->budget && v->max_depth > 0) rebuild_depths(v);
    while (ok && v->used + d->mem[x] > v->budget) {
        int best = -1, best_depth = INT32_MAX;
        double bs = INFINITY;
        for (int i = 0; i < d->n; i++) {
            if (!v->present[i] || v->lock[i]) continue;
            int dep = v->max_depth > 0 ? depth_if_evicted(v, i) : 0;
            if (dep < v->max_depth) dep = 0;
            double s = evict_score(v, i);
            if (dep < best_depth || (dep == best_depth && s < bs)) bs = s, best = i, best_depth = dep;
        }
        if (best < 0 || acc_now_s() > v->hard_deadline) {
            ok = false; /* everything held is an input being used, or the time is up */
        } else {
            v->present[best] = 0, v->used -= d->mem[best];
            if (v->max_depth > 0) evicted_depths(v, best);
        }
    }
    if (ok) {
        staged_push(v->out, v->t, x);
        v->present[x] = 1, v->used += d->mem[x], v->touched[x] = ++v->clock;
    }
    for (int a = 0; a < n_locked; a++) v->lock[locked[a]]--;
    free(order), free(locked), free(cone);
    v->depth--;
    return ok;
}

/* Stage x by the pebbling search (dag_pebble.c), from what is held or from
 * nothing, the cheaper: its recomputations, then x; what is held after is x
 * and its inputs. For a node the eviction cannot rebuild for: one that reads
 * many outputs made all over the graph, whose rebuild chains, each locking
 * the inputs at hand, fill the budget.
 *
 * The path from nothing does not depend on what the eviction holds, so it is
 * found once per node for all the kinds (from_nothing[x]; n_from_nothing[x]
 * is -1 where it was searched and not found): the proof's path
 * (prove_none_fits, with more states), else a search of PEBBLE_STATES with
 * the search's own order (seed 0). Each kind searched it again with its own
 * seed: on MOCCASIN's n250 at 0.6 of its peak those searches stopped at the
 * state cap in 415 of 421 stages, half of a kind's searching. The search
 * from what is held is the kind's own, but where it has stopped at x in
 * HELD_STOPS kinds it is not tried there again (counted, so the plan does not
 * depend on the load): there it stops in all 96 kinds at the last node but
 * one, whose inputs are made all over the graph, a fifth of a kind's time. */
#define PEBBLE_STATES 20000
#define HELD_STOPS 8
static bool pebble_stage(Evict *v, int x, const EvictKind *kind, double deadline) {
    const Dag *d = v->d;
    int **from_nothing = kind->from_nothing, *n_from_nothing = kind->n_from_nothing;
    int *seq[2] = {NULL, NULL}, n_seq[2] = {0, 0};
    double cost[2] = {0, 0};
    int st[2] = {DAG_PEBBLE_STOPPED, DAG_PEBBLE_STOPPED};
    if (kind->held_stops[x] < HELD_STOPS) {
        st[0] = dag_pebble(d, v->budget, x, v->present, PEBBLE_STATES, deadline, (uint64_t)kind->pebble - 1, &seq[0],
                           &n_seq[0], &cost[0]);
        kind->held_stops[x] += st[0] == DAG_PEBBLE_STOPPED;
    }
    if (!from_nothing[x] && n_from_nothing[x] == 0) {
        double c;
        if (dag_pebble(d, v->budget, x, NULL, PEBBLE_STATES, deadline, 0, &from_nothing[x], &n_from_nothing[x], &c) !=
            DAG_PEBBLE_FOUND)
            n_from_nothing[x] = -1;
    }
    st[1] = from_nothing[x] ? DAG_PEBBLE_FOUND : DAG_PEBBLE_STOPPED;
    if (from_nothing[x]) { /* borrowed, not freed here */
        seq[1] = from_nothing[x], n_seq[1] = n_from_nothing[x];
        for (int e = 0; e < n_seq[1]; e++) cost[1] += d->cost[seq[1][e]];
    }
    /* the first paths only: the evictions' time decides whether any fits; the local improvement then
     * re-solves these stages with the cheapest paths (dag_improve.c) */
    int k = st[0] == DAG_PEBBLE_FOUND && (st[1] != DAG_PEBBLE_FOUND || cost[0] <= cost[1]) ? 0
            : st[1] == DAG_PEBBLE_FOUND                                                    ? 1
                                                                                           : -1;
    if (k >= 0) {
        for (int e = 0; e < n_seq[k]; e++) staged_push(v->out, v->t, seq[k][e]);
        staged_push(v->out, v->t, x);
        for (int i = 0; i < d->n; i++) v->present[i] = 0;
        v->used = d->mem[x];
        v->present[x] = 1, v->touched[x] = ++v->clock;
        for (int q = d->in_off[x]; q < d->in_off[x + 1]; q++)
            v->present[d->in[q]] = 1, v->used += d->mem[d->in[q]], v->touched[d->in[q]] = v->clock;
    }
    free(seq[0]);
    return k >= 0;
}

/* Run the nodes in order, evicting under the budget, recomputing on demand;
 * with kind.pebble, a node that fails so is staged by pebble_stage from the
 * state before it. */
static bool evict_schedule(const Dag *d, int64_t budget, EvictKind kind, Staged *out, double deadline) {
    int n = d->n;
    Evict v = {.d = d,
               .budget = budget,
               .variant = kind.score,
               .noise = kind.noise,
               .max_depth = kind.max_depth,
               .lazy = kind.lazy,
               .out = out,
               .hard_deadline = deadline + 1.0};
    Pool mem = {0};
    v.stamp = pool_alloc(&mem, (size_t)n * sizeof(int));
    v.present = pool_alloc(&mem, (size_t)n * sizeof(int));
    v.lock = pool_alloc(&mem, (size_t)n * sizeof(int));
    v.ptr = pool_alloc(&mem, (size_t)n * sizeof(int));
    v.touched = pool_alloc(&mem, (size_t)n * sizeof(int));
    v.down = pool_alloc(&mem, (size_t)n * sizeof(int));
    v.up = pool_alloc(&mem, (size_t)n * sizeof(int));
    v.work = pool_alloc(&mem, (size_t)n * sizeof(int));
    int *before = kind.pebble > 0 ? pool_alloc(&mem, (size_t)n * sizeof(int)) : NULL;
    for (int i = 0; i < n; i++) v.ptr[i] = d->out_off[i];
    staged_clear(out);
    bool ok = true;
    for (int t = 0; t < n && ok; t++) {
        v.t = t;
        int n_ev = out->ev.n;
        int64_t used = v.used;
        if (before) memcpy(before, v.present, (size_t)n * sizeof(int));
        ok = materialize(&v, t);
        if (!ok && before) { /* back to the state before t (materialize left nothing locked) */
            memcpy(v.present, before, (size_t)n * sizeof(int));
            v.used = used, out->ev.n = out->stage.n = n_ev;
            ok = pebble_stage(&v, t, &kind, deadline);
        }
        ok = ok && ((t & 63) || acc_now_s() < deadline);
    }
    pool_free(&mem);
    return ok;
}

/* The k-th kind of eviction for tight budgets: the three scores, locking
 * eager and lazy, rebuild chains limited to 3, 6, 2, 4, 8, 10 nodes or not
 * at all (the 42 deterministic kinds); past those, a score, a locking and a
 * limit of 2 .. 13 drawn from k, with the scores perturbed (seed k). Which
 * one reaches the least peak depends on the graph: on random layered graphs
 * at 0.6-0.7 of the peak the limited depths fit where the others build
 * chains 20-30 nodes deep whose locked inputs fill the budget. */
#define TIGHT_FIXED_KINDS 42 /* tight_kind's kinds before the perturbed ones */
#define PEBBLED_KINDS 96     /* the kinds tried with pebbled stages: the fixed ones and 54 perturbed */
static EvictKind tight_kind(int k) {
    static const int depths[] = {3, 6, 2, 4, 8, 10, 0};
    if (k < TIGHT_FIXED_KINDS) return (EvictKind){k % 3, (k / 3) % 2, depths[k / 6], 0, 0, NULL, NULL, NULL};
    uint64_t h = (uint64_t)k * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    return (EvictKind){(int)(h % 3), (h >> 8) & 1, 2 + (int)((h >> 16) % 12), (uint64_t)k, 0, NULL, NULL, NULL};
}

/* One eviction schedule of kind at the budget (by deadline), pruned of the
 * recomputations it can do without (by prune_deadline); when it fits and
 * costs less than *best, it becomes *inc and its compute *best. Returns
 * whether it fit. */
static bool try_eviction(const Dag *d, int64_t budget, EvictKind kind, double deadline, double prune_deadline,
                         Staged *trial, double *best, Staged *inc) {
    if (!evict_schedule(d, budget, kind, trial, deadline)) return false;
    DagSim sim;
    dag_simulate(d, trial->ev.v, trial->ev.n, &sim, NULL);
    if (!sim.valid || sim.peak > budget) return false;
    dag_prune_recomputations(d, budget, prune_deadline, trial);
    dag_simulate(d, trial->ev.v, trial->ev.n, &sim, NULL);
    if (sim.compute < *best) {
        *best = sim.compute;
        staged_copy(inc, trial);
    }
    return true;
}

/* The best of: the greedy descent from keeping everything, and eviction
 * schedules under three scores; each then relieved of drops it can afford
 * (an eviction schedule whose retention plan does not fit as a staged plan is
 * taken as it is). */
static bool heuristic(const Dag *d, int64_t budget, double deadline, Staged *best_out, bool verbose) {
    static const char *names[] = {"greedy", "evict/next-use", "evict/staleness", "evict/cost"};
    Heur *h = heur_new(d, budget, deadline);
    Staged ev = {0};
    double best = INFINITY;
    for (int k = -1; k < 3 && acc_now_s() < deadline; k++) {
        bool ok, as_is = false;
        double t0 = acc_now_s();
        DagSim s = {0};
        if (k < 0) {
            memset(h->cut, 0, (size_t)d->n * (size_t)d->n);
            ok = greedy_cut(h);
        } else {
            ok = evict_schedule(d, budget, (EvictKind){k, false, 0, 0, 0, NULL, NULL, NULL}, &ev, deadline);
            if (ok) {
                dag_simulate(d, ev.ev.v, ev.ev.n, &s, NULL);
                cuts_from_schedule(h, &ev);
                derive(h, &h->cur);
                Score sc = score(h, &h->cur);
                as_is = sc.peak > budget && s.valid && s.peak <= budget;
                ok = as_is || (s.valid && sc.peak <= budget);
            }
        }
        double c0 = as_is ? s.compute : ok ? score(h, &h->cur).cost : NAN;
        if (ok && !as_is) restore_cuts(h);
        if (as_is) {
            dag_prune_recomputations(d, budget, deadline, &ev);
            dag_simulate(d, ev.ev.v, ev.ev.n, &s, NULL);
        }
        Score sc = as_is ? (Score){s.peak, s.compute, 0} : score(h, &h->cur);
        if (verbose)
            fprintf(stderr, "acc plan: heuristic %s: %s, compute %.6g -> %.6g, %.3f s\n", names[k + 1],
                    ok ? (as_is ? "fits (as it is)" : "fits") : "found nothing", c0, ok ? sc.cost : NAN,
                    acc_now_s() - t0);
        if (ok && sc.peak <= budget && sc.cost < best) {
            best = sc.cost;
            const Staged *from = as_is ? &ev : &h->cur;
            staged_copy(best_out, from);
        }
    }
    staged_free(&ev);
    heur_free(h);
    return isfinite(best);
}

/* Checkmate's deterministic rounding on acc's relaxation: keep i into stage t
 * when the LP keeps at least a threshold of it, recompute what is missing
 * (need-driven), repair with the greedy descent if over the budget, undo
 * affordable drops; the cheapest plan over thresholds 0.1 .. 0.9. */
static bool round_keep(const Dag *d, int64_t budget, const double *keep, double deadline, Staged *out, bool verbose) {
    int n = d->n;
    Heur *h = heur_new(d, budget, deadline);
    double best = INFINITY;
    for (int th = 1; th <= 9 && acc_now_s() < deadline; th++) {
        for (int t = 0; t < n; t++)
            for (int i = 0; i < t; i++) h->cut[(size_t)t * n + i] = keep[(size_t)t * n + i] < 0.1 * th - 1e-9;
        bool ok = greedy_cut(h); /* derives, repairs if over */
        if (!ok) continue;
        restore_cuts(h);
        Score sc = score(h, &h->cur);
        if (sc.peak <= budget && sc.cost < best) {
            best = sc.cost;
            staged_copy(out, &h->cur);
        }
    }
    if (verbose)
        fprintf(stderr, "acc plan: rounding the relaxation: %s %.8g\n", isfinite(best) ? "compute" : "nothing fits",
                best);
    heur_free(h);
    return isfinite(best);
}

bool dag_heuristic(const Dag *d, int64_t budget, double deadline, Staged *out) {
    return heuristic(d, budget, deadline, out, false);
}

/* ---- the driver ------------------------------------------------------------------- */

static void set_plan_events(DagPlan *p, const int *ev, int n_ev) {
    free(p->ev);
    p->ev = acc_xcalloc((size_t)n_ev, sizeof(int));
    memcpy(p->ev, ev, (size_t)n_ev * sizeof(int));
    p->n_ev = n_ev;
}

static void score_plan(const Dag *d, int64_t budget, DagPlan *p) {
    dag_simulate(d, p->ev, p->n_ev, &p->sim, NULL);
    p->fits = p->sim.valid && p->sim.peak <= budget;
}

/* The eviction schedules over budgets between the least any schedule needs
 * and the baseline's peak (a bisection): the least peak among them (-1 if
 * none was found before the deadline), for the report when no plan fits, and
 * in fit the cheapest of them that fits under budget, relieved of the drops
 * it can afford (the eviction at the budget itself can fail where one at a
 * smaller budget fits). Returns whether fit holds a plan. */
static bool evict_bisect(const Dag *d, int64_t budget, double deadline, int64_t *least, Staged *fit) {
    int64_t lo = dag_min_peak(d), hi = dag_baseline_peak(d);
    Staged s = {0};
    double fit_cost = INFINITY;
    int last_kind = 0;
    *least = -1;
    while (lo < hi && acc_now_s() < deadline) {
        int64_t mid = lo + (hi - lo) / 2;
        bool ok = false;
        /* the kind that fitted last first, then the others in turn */
        for (int j = 0; j < 42 && !ok && acc_now_s() < deadline; j++) {
            int k = j == 0 ? last_kind : j <= last_kind ? j - 1 : j;
            ok = evict_schedule(d, mid, tight_kind(k), &s, deadline);
            if (ok) last_kind = k;
        }
        DagSim sim;
        if (ok) dag_simulate(d, s.ev.v, s.ev.n, &sim, NULL);
        if (ok && sim.valid) {
            if (*least < 0 || sim.peak < *least) *least = sim.peak;
            if (sim.peak <= budget && sim.compute < fit_cost) {
                fit_cost = sim.compute;
                staged_copy(fit, &s);
            }
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    staged_free(&s);
    if (!isfinite(fit_cost)) return false;
    Heur *h = heur_new(d, budget, deadline);
    cuts_from_schedule(h, fit);
    derive(h, &h->cur);
    if (score(h, &h->cur).peak <= budget) {
        restore_cuts(h);
        Score sc = score(h, &h->cur);
        if (sc.peak <= budget && sc.cost < fit_cost) {
            staged_copy(fit, &h->cur);
        }
    }
    heur_free(h);
    dag_prune_recomputations(d, budget, deadline, fit);
    return true;
}

/* The reference (dag_exhaustive.c) as a method, for benchmarks. */
static void plan_exhaustive(const Dag *d, const DagPlanOptions *o, const int *topo, DagPlan *p) {
    bool staged = o->method == DAG_EXHAUSTIVE_STAGED;
    int max = staged ? DAG_EXHAUSTIVE_MAX_STAGED : DAG_EXHAUSTIVE_MAX;
    p->bound_scope = staged ? "checkmate" : "all schedules";
    if (d->n > max) {
        set_plan_events(p, topo, d->n);
        snprintf(p->status, sizeof p->status, "too_large");
        snprintf(p->note, sizeof p->note, "the exhaustive search takes graphs of at most %d nodes", max);
        return;
    }
    int *ev = NULL, n_ev = 0;
    double c = dag_exhaustive(d, o->budget, staged, &ev, &n_ev);
    if (c >= 0) {
        set_plan_events(p, ev, n_ev);
        p->objective = p->bound = c;
    } else {
        set_plan_events(p, topo, d->n);
    }
    snprintf(p->status, sizeof p->status, "%s", c >= 0 ? "optimal" : "infeasible");
    free(ev);
}

/* A schedule whose first executions follow the topological order, in stage
 * form (stage t: the events after t-1's first execution up to t's). False
 * if the first executions are out of order. */
static bool staged_from_events(const Dag *d, const int *ev, int n_ev, Staged *out) {
    uint8_t *seen = acc_xcalloc((size_t)d->n, 1);
    int next = 0;
    bool ok = true;
    staged_clear(out);
    for (int e = 0; e < n_ev && ok; e++) {
        int v = ev[e], stage = next; /* a recomputation belongs to the next first execution's stage */
        if (!seen[v]) ok = v == next++;
        else ok = next < d->n;
        seen[v] = 1;
        staged_push(out, stage, v);
    }
    free(seen);
    return ok && next == d->n;
}

static bool plan_dag(const Dag *d, const DagPlanOptions *o, DagPlan *p, char *err, size_t err_len);

/* --method intervals: the interval program (dag_interval.c) seeded by acc's
 * best plan: acc's method with half the time limit, then the program until
 * deadline. What it reports is the program's: its plan (at worst the seed,
 * a point of it), status and bound. */
static bool plan_intervals(const Dag *d, const DagPlanOptions *o, double limit, double deadline, DagPlan *p, char *err,
                           size_t err_len) {
    DagPlanOptions ao = *o;
    ao.method = DAG_ACC, ao.time_limit_s = 0.5 * limit;
    DagPlan a;
    if (!plan_dag(d, &ao, &a, err, err_len)) return false;
    Staged seed = {0};
    bool have = a.fits && staged_from_events(d, a.ev, a.n_ev, &seed);
    if (o->verbose)
        fprintf(stderr, "acc plan: intervals: %s\n",
                have ? "acc's plan seeds the program" : "no seed: acc has no plan");
    bool ok = dag_solve_intervals(d, o->budget, have ? &seed : NULL, o->copies, o->slots > 0 ? o->slots : -1, deadline,
                                  o->verbose, p, err, err_len);
    dag_plan_free(&a);
    staged_free(&seed);
    return ok;
}

/* acc's exact search over every schedule, for graphs of at most 128 nodes,
 * from the incumbent inc (if any) until deadline. Returns true when it
 * settled the question (p holds the optimum, or the proof that nothing
 * fits); else *bound is a lower bound on every schedule (or NAN). */
static bool search_every_schedule(const Dag *d, const DagPlanOptions *o, const Staged *inc, double deadline, DagPlan *p,
                                  double *bound) {
    *bound = NAN;
    if (d->n > DAG_SEARCH_MAX_NODES) return false;
    double upper = INFINITY;
    if (inc) {
        DagSim sim;
        dag_simulate(d, inc->ev.v, inc->ev.n, &sim, NULL);
        upper = sim.compute;
    }
    double t0 = acc_now_s();
    DagSearch s;
    dag_search_exact(d, o->budget, upper, deadline, DAG_SEARCH_STATES, &s);
    if (o->verbose)
        fprintf(stderr, "acc plan: search over every schedule: %s, %d states, bound %.8g, %.3f s\n",
                s.status == DAG_SEARCH_FOUND  ? "optimum found"
                : s.status == DAG_SEARCH_NONE ? (inc ? "the incumbent is optimal" : "nothing fits")
                                              : "stopped",
                s.states, s.bound, acc_now_s() - t0);
    bool settled = s.status != DAG_SEARCH_STOPPED;
    p->bound_scope = "all schedules";
    if (s.status == DAG_SEARCH_FOUND) {
        set_plan_events(p, s.ev, s.n_ev);
        p->objective = p->bound = s.cost;
    } else if (s.status == DAG_SEARCH_NONE && inc) {
        set_plan_events(p, inc->ev.v, inc->ev.n);
        p->objective = p->bound = upper;
    } else if (s.status == DAG_SEARCH_STOPPED && isfinite(s.bound)) {
        *bound = s.bound;
    }
    if (settled)
        snprintf(p->status, sizeof p->status, "%s", s.status == DAG_SEARCH_NONE && !inc ? "infeasible" : "optimal");
    if (settled && !inc && s.status == DAG_SEARCH_NONE)
        snprintf(p->note, sizeof p->note, "no schedule fits: the exact search over every schedule found none");
    dag_search_free(&s);
    return settled;
}

#define PROOF_STATES 2000000
/* The schedule that computes each node from nothing in turn (prove_none_fits's
 * all) made cheaper: each node's path replaced by the cheapest the best-first
 * search finds below it (the proof's states), the nodes with the costliest
 * paths first, until deadline; all rebuilt from them. Only where that plan is
 * used: its depth-first paths are often long detours. */
static void cheapen_from_nothing(const Dag *d, int64_t budget, double deadline, int **seqs, int *n_seqs, Staged *all) {
    int n = d->n, *order = acc_xcalloc((size_t)n, sizeof(int));
    double *c = acc_xcalloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) {
        order[i] = i;
        for (int e = 0; e < n_seqs[i]; e++) c[i] += d->cost[seqs[i][e]];
    }
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && c[order[b - 1]] < c[order[b]]; b--) {
            int t = order[b];
            order[b] = order[b - 1], order[b - 1] = t;
        }
    for (int a = 0; a < n && c[order[a]] > 0 && acc_now_s() < deadline; a++) {
        int x = order[a], *s2 = NULL, n2 = 0;
        double c2 = 0;
        if (dag_pebble_cheapest(d, budget, x, NULL, c[x], PROOF_STATES, deadline, &s2, &n2, &c2) == DAG_PEBBLE_FOUND)
            free(seqs[x]), seqs[x] = s2, n_seqs[x] = n2;
        else free(s2);
    }
    staged_clear(all);
    for (int t = 0; t < n; t++) {
        for (int e = 0; e < n_seqs[t]; e++) staged_push(all, t, seqs[t][e]);
        staged_push(all, t, t);
    }
    free(order), free(c);
}

/* A proof that no schedule fits, past the node-with-inputs bound: the
 * pebbling search from nothing (dag_pebble.c), run to its end for a node,
 * finds no way to compute it within the budget. The nodes with the most
 * memory at their own event first, until deadline. Fills p and returns true
 * when one is proven. When every node is found to fit, all is the schedule
 * that computes each node from nothing in turn (stage t: node t's
 * recomputations and t): it fits, however much it recomputes. */
#define STAGE_MIN_NODES 400         /* staged checkpoints (dag_stage.c) from this many nodes */
#define RECURSIVE_MAX_EVENTS 200000 /* the recursive schedule written out as a plan up to this length */
static bool prove_none_fits(const Dag *d, int64_t budget, double deadline, DagPlan *p, bool verbose, int **seqs,
                            int *n_seqs, Staged *all) {
    int n = d->n, *order = acc_xcalloc((size_t)n, sizeof(int));
    int64_t *own = acc_xcalloc((size_t)n, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        order[i] = i, own[i] = d->mem[i];
        for (int q = d->in_off[i]; q < d->in_off[i + 1]; q++) own[i] += d->mem[d->in[q]];
    }
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && own[order[b - 1]] < own[order[b]]; b--) {
            int t = order[b];
            order[b] = order[b - 1], order[b - 1] = t;
        }
    int proven = -1, n_fit = 0;
    for (int a = 0; a < n && proven < 0 && acc_now_s() < deadline; a++) {
        double c = 0;
        int st =
            dag_pebble(d, budget, order[a], NULL, PROOF_STATES, deadline, 0, &seqs[order[a]], &n_seqs[order[a]], &c);
        n_fit += st == DAG_PEBBLE_FOUND;
        if (verbose)
            fprintf(stderr, "acc plan: node %s from nothing: %s\n", d->label[order[a]],
                    st == DAG_PEBBLE_FOUND  ? "fits"
                    : st == DAG_PEBBLE_NONE ? "cannot fit (searched to the end)"
                                            : "search stopped");
        if (st == DAG_PEBBLE_NONE) proven = order[a];
    }
    staged_clear(all);
    for (int t = 0; t < n && n_fit == n; t++) {
        for (int e = 0; e < n_seqs[t]; e++) staged_push(all, t, seqs[t][e]);
        staged_push(all, t, t);
    }
    if (proven >= 0) {
        snprintf(p->status, sizeof p->status, "infeasible");
        p->bound_scope = "all schedules";
        snprintf(p->note, sizeof p->note,
                 "no schedule fits: node %.40s cannot be computed within the budget from nothing (every way, "
                 "searched to the end)",
                 d->label[proven]);
    }
    free(order), free(own);
    return proven >= 0;
}

static bool plan_dag(const Dag *d, const DagPlanOptions *o, DagPlan *p, char *err, size_t err_len) {
    double t0 = acc_now_s();
    memset(p, 0, sizeof *p);
    p->objective = p->bound = p->gap = NAN;
    p->bound_scope = "";
    p->least_peak = p->recursive_peak = -1;
    double limit = o->time_limit_s > 0 ? o->time_limit_s : o->method == DAG_ACC ? 20 : 60;
    double deadline = t0 + limit;
    int n = d->n;
    int *topo = acc_xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) topo[i] = i;
    double base_compute = dag_baseline_compute(d);
    /* what every schedule computes at least: each node once, and again after each forced window */
    double floor_any = n <= DAG_DENSE_MAX_NODES ? dag_window_bound(d, o->budget) : base_compute;
    bool ok = true;
    bool fits_as_is = dag_baseline_peak(d) <= o->budget;
    int64_t least = -1; /* the least peak found, when no heuristic fits */
    if (n > DAG_DENSE_MAX_NODES && !fits_as_is) {
        /* the searches keep node x stage tables (n^2 bytes and time): past
         * this size they could not finish, nor respect the time limit; the
         * plan is the topological order, which does not fit */
        set_plan_events(p, topo, n);
        snprintf(p->status, sizeof p->status, "too_large");
    } else if (o->method == DAG_EXHAUSTIVE || o->method == DAG_EXHAUSTIVE_STAGED) {
        plan_exhaustive(d, o, topo, p);
    } else if (o->method == DAG_INTERVALS) {
        ok = plan_intervals(d, o, limit, deadline - fmin(0.05 * limit, 0.75), p, err, err_len);
        if (ok && !p->ev) set_plan_events(p, topo, n); /* no solution: the baseline, which does not fit */
    } else if (o->method != DAG_ACC) {
        /* GLPK's child may overrun its deadline by its grace (dag_milp.c): end it early by as much */
        ok = dag_solve_checkmate(d, o->budget, o->method == DAG_CHECKMATE_MILP, deadline - fmin(0.05 * limit, 0.75),
                                 o->emit_lp, o->verbose, p, err, err_len);
        if (ok && !p->ev) set_plan_events(p, topo, n); /* no solution: report the baseline, which does not fit */
    } else if (o->emit_lp && !dag_emit_acc_program(d, o->budget, o->emit_lp, err, err_len)) {
        ok = false;
    } else if (fits_as_is) {
        set_plan_events(p, topo, n);
        snprintf(p->status, sizeof p->status, "optimal");
        p->objective = p->bound = base_compute;
        p->bound_scope = "all schedules";
    } else if (dag_min_peak(d) > o->budget) { /* some node with its inputs alone is over */
        set_plan_events(p, topo, n);
        snprintf(p->status, sizeof p->status, "infeasible");
        p->bound_scope = "all schedules";
        snprintf(p->note, sizeof p->note, "no schedule fits: a node with its inputs needs %lld",
                 (long long)dag_min_peak(d));
    } else {
        /* the heuristics; on small graphs the exact search over every
         * schedule; else the relaxation's bound and its rounding, then the
         * search over staged plans */
        Staged inc = {0}, rounded = {0}, all = {0}, first = {0};
        /* the inputs' program holds the windows program's rows, so it is the higher floor once solved; it
         * gets the bounds' share of the limit (0.05, what the windows program alone had; its relaxation
         * returns at once on large programs, MOCCASIN's n1000 at 0.6 takes about 1 s of it), the windows
         * program what is left (its integer optimum, proven where the other's is not, can be higher), or,
         * when the inputs' program was not solved in time, 0.02 of the limit, so that the floor does not
         * fall back to the count alone */
        double windows = NAN, inputs = NAN;
        char werr[256]; /* no bound from it if GLPK's child cannot start; the solvers below report that */
        if (dag_inputs_lp(d, o->budget, 0, t0 + 0.05 * limit, o->verbose, &inputs, werr, sizeof werr) &&
            inputs > floor_any)
            floor_any = inputs;
        double wdl = t0 + 0.05 * limit;
        if (!isfinite(inputs) && wdl < acc_now_s() + 0.02 * limit) wdl = acc_now_s() + 0.02 * limit;
        if (acc_now_s() < wdl && dag_window_lp(d, o->budget, wdl, o->verbose, &windows, werr, sizeof werr) &&
            windows > floor_any)
            floor_any = windows;
        if (o->verbose)
            fprintf(stderr, "acc plan: forced windows: every schedule computes at least %.8g (baseline %.8g)\n",
                    floor_any, base_compute);
        int **seqs = acc_xcalloc((size_t)n, sizeof(int *)), *n_seqs = acc_xcalloc((size_t)n, sizeof(int));
        bool have = heuristic(d, o->budget, t0 + 0.15 * limit, &inc, o->verbose);
        /* none fits: the recursive schedule (dag_minpeak.c), where its peak is within the budget and it is
         * short enough to write out, is a plan (pruned; the phases below make it cheaper) */
        double rec_events = 0;
        int64_t rec = dag_recursive_peak(d, NULL, &rec_events);
        if (o->verbose)
            fprintf(stderr, "acc plan: recursive schedule: peak %lld, %.3g events\n", (long long)rec, rec_events);
        if (!have && rec <= o->budget && dag_recursive_schedule(d, RECURSIVE_MAX_EVENTS, &inc)) {
            dag_prune_recomputations(d, o->budget, acc_now_s() + 0.05 * limit, &inc);
            have = true;
        }
        /* none fits, on a large graph: staged checkpoints (dag_stage.c), each stage rebuilt from the outputs
         * held. Its plan, when it has one, replaces the proof and the pebbled kinds below (on MOCCASIN's n1000
         * at 0.6 they took 18 s for a plan ~200 times dearer); the evictions still run, and replace it where
         * cheaper (n1000 at 0.7). Not on smaller graphs, where the evictions with pebbled stages find cheaper
         * plans (MOCCASIN's n100 at 0.5437: 519,021 with it first, 112,030 without) */
        Staged staged = {0};
        double stage_start = acc_now_s();
        bool have_staged = !have && n >= STAGE_MIN_NODES &&
                           dag_stage_checkpoints(d, o->budget, acc_now_s() + 0.35 * limit, &staged, o->verbose);
        /* with its plan the proof and the pebbled kinds do not run: the evictions' shares start after it */
        double stage_s = have_staged ? acc_now_s() - stage_start : 0;
        double any_bound = NAN;
        double proof_start = acc_now_s();
        if (!have && !have_staged &&
            prove_none_fits(d, o->budget, proof_start + 0.35 * limit, p, o->verbose, seqs, n_seqs, &all)) {
            staged_free(&inc), staged_free(&all), staged_free(&staged);
            for (int i = 0; i < n; i++) free(seqs[i]);
            free(seqs), free(n_seqs);
            goto scored;
        }
        double e0 = t0 + (acc_now_s() - proof_start) + stage_s; /* the evictions' shares, after the proof's time */
        if (!have) {
            have = evict_bisect(d, o->budget, acc_now_s() + 0.1 * limit, &least, &inc);
            /* evictions with perturbed scores at the budget, the cheapest that fits (pruned) */
            double best = INFINITY;
            Staged trial = {0};
            if (have) {
                DagSim sim;
                dag_simulate(d, inc.ev.v, inc.ev.n, &sim, NULL);
                best = sim.compute;
            }
            if (have_staged) { /* replayed within the budget by dag_stage_checkpoints */
                DagSim sim;
                dag_simulate(d, staged.ev.v, staged.ev.n, &sim, NULL);
                if (sim.compute < best) {
                    best = sim.compute, have = true;
                    staged_copy(&inc, &staged);
                }
            }
            /* the fixed kinds and more for 0.1 of the limit first; where none fits by then, the pebbled kinds
             * below run first, and the perturbed ones resume after them (the same kinds in the same order: where
             * one fits early, as on MOCCASIN's n100 at 0.6, nothing changes) */
            int n_fit = 0, k = 0;
            for (; (k < TIGHT_FIXED_KINDS || acc_now_s() < e0 + 0.1 * limit) && acc_now_s() < e0 + 0.3 * limit; k++)
                n_fit +=
                    try_eviction(d, o->budget, tight_kind(k), e0 + 0.3 * limit, e0 + 0.35 * limit, &trial, &best, &inc);
            /* none fits: the same kinds with the nodes where they fail staged by the pebbling search, the
             * cheapest that fits: PEBBLED_KINDS of them, counted and not timed, so that the plan does not depend
             * on the machine's load (on MOCCASIN's n100 at 0.5437 of its peak the best is the 66th, and a kind
             * takes 0.03-0.1 s), within 0.5 of the limit (on MOCCASIN's n250 at 0.6 a kind takes 0.3-0.9 s, and
             * one kind more is worth more than the improvement's time after) */
            int n_pebbled = 0, n_tried = 0, *held_stops = acc_xcalloc((size_t)n, sizeof(int));
            for (bool none = !isfinite(best); none && n_tried < PEBBLED_KINDS && acc_now_s() < e0 + 0.5 * limit;
                 n_tried++) {
                EvictKind kind = tight_kind(n_tried);
                kind.pebble = n_tried + 1, kind.from_nothing = seqs, kind.n_from_nothing = n_seqs;
                kind.held_stops = held_stops;
                n_pebbled += try_eviction(d, o->budget, kind, e0 + 0.5 * limit, e0 + 0.55 * limit, &trial, &best, &inc);
            }
            if (o->verbose && n_tried)
                fprintf(stderr, "acc plan: evictions with pebbled stages: %d of %d kinds fit, the best %.8g\n",
                        n_pebbled, n_tried, best);
            free(held_stops);
            for (; acc_now_s() < e0 + 0.3 * limit; k++)
                n_fit +=
                    try_eviction(d, o->budget, tight_kind(k), e0 + 0.3 * limit, e0 + 0.35 * limit, &trial, &best, &inc);
            if (o->verbose)
                fprintf(stderr, "acc plan: perturbed evictions: %d of %d kinds fit, the best %.8g\n", n_fit, k, best);
            have = have || n_fit > 0 || n_pebbled > 0;
            staged_free(&trial);
            if (!have && all.ev.n) { /* each node from nothing in turn, the cheapest paths, pruned */
                cheapen_from_nothing(d, o->budget, fmax(acc_now_s() + 0.05 * limit, e0 + 0.55 * limit), seqs, n_seqs,
                                     &all);
                dag_prune_recomputations(d, o->budget, e0 + 0.6 * limit, &all);
                DagSim sim;
                dag_simulate(d, all.ev.v, all.ev.n, &sim, NULL);
                if (sim.valid && sim.peak <= o->budget) {
                    have = true;
                    for (int e = 0; e < all.ev.n; e++) staged_push(&inc, all.stage.v[e], all.ev.v[e]);
                }
                if (o->verbose)
                    fprintf(stderr, "acc plan: each node from nothing: %d events, compute %.8g\n", all.ev.n,
                            sim.compute);
            }
        }
        staged_free(&all);
        for (int i = 0; i < n; i++) free(seqs[i]);
        free(seqs), free(n_seqs);
        /* the incumbent improved locally (dag_improve.c), until 0.6 of the time limit (at least 0.3 of it,
         * ending 0.1 before the limit); it stops earlier when a pass changes nothing */
        double improve_end = fmin(fmax(acc_now_s() + 0.3 * limit, t0 + 0.6 * limit), deadline - 0.1 * limit);
        bool other = have_staged &&
                     (inc.ev.n != staged.ev.n || memcmp(inc.ev.v, staged.ev.v, (size_t)inc.ev.n * sizeof(int)) != 0);
        if (other) {
            /* an eviction beat the staged checkpoints' plan as it was; improved, it may win back (MOCCASIN's
             * n1000 at 0.65: 660,535 against the eviction's 815,780): each gets half the time, the cheaper kept */
            DagSim a, b;
            dag_improve(d, o->budget, acc_now_s() + 0.5 * (improve_end - acc_now_s()), &staged, o->verbose);
            dag_improve(d, o->budget, improve_end, &inc, o->verbose);
            dag_simulate(d, staged.ev.v, staged.ev.n, &a, NULL);
            dag_simulate(d, inc.ev.v, inc.ev.n, &b, NULL);
            if (a.valid && a.peak <= o->budget && a.compute < b.compute) {
                staged_copy(&inc, &staged);
            }
        } else if (have) {
            dag_improve(d, o->budget, improve_end, &inc, o->verbose);
        }
        staged_free(&staged);
        if (search_every_schedule(d, o, have ? &inc : NULL, t0 + 0.5 * limit, p, &any_bound)) {
            staged_free(&inc);
            goto scored;
        }
        double bound = NAN, *keep = NULL;
        bool infeasible = false;
        double now = acc_now_s(), left = deadline - now;
        ok = dag_acc_bound(d, o->budget, now + 0.25 * left, o->verbose, &bound, &infeasible, &keep, err, err_len);
        if (ok && keep && round_keep(d, o->budget, keep, acc_now_s() + 0.1 * left, &rounded, o->verbose)) {
            DagSim a, b;
            dag_simulate(d, rounded.ev.v, rounded.ev.n, &b, NULL);
            if (have) dag_simulate(d, inc.ev.v, inc.ev.n, &a, NULL);
            if (!have || b.compute < a.compute) {
                if (have) /* kept: the search also starts from it (below) */
                    for (int e = 0; e < inc.ev.n; e++) staged_push(&first, inc.stage.v[e], inc.ev.v[e]);
                staged_copy(&inc, &rounded);
                have = true;
            }
        }
        free(keep);
        staged_free(&rounded);
        if (ok && infeasible) {
            /* proven for staged plans only: not a proof for every schedule */
            snprintf(p->status, sizeof p->status, "no_solution");
            snprintf(p->note, sizeof p->note,
                     "no staged plan fits (the relaxation proves it); schedules with other recomputation orders "
                     "were not searched to the end");
        } else if (ok) {
            /* GLPK's child may overrun its deadline by its grace (dag_milp.c): end it early by as much */
            double milp_end = deadline - fmin(0.05 * limit, 0.75);
            if (first.ev.n) {
                /* the search's neighbourhoods are around its incumbent: a third of its time around the
                 * heuristic's plan that the rounding displaced (on the VGG U-Net at 0.3983 of its peak the
                 * search improves from it, not from the rounding's), the better result goes on */
                DagPlan q = {0};
                ok = dag_solve_acc_milp(d, o->budget, &first, acc_now_s() + (milp_end - acc_now_s()) / 3, o->verbose,
                                        bound, &q, err, err_len);
                if (ok && q.ev) {
                    DagSim a, b;
                    dag_simulate(d, q.ev, q.n_ev, &b, NULL);
                    dag_simulate(d, inc.ev.v, inc.ev.n, &a, NULL);
                    Staged better = {0}; /* a staged plan: its first executions are in order */
                    if (b.valid && b.peak <= o->budget && b.compute < a.compute &&
                        staged_from_events(d, q.ev, q.n_ev, &better)) {
                        staged_free(&inc);
                        inc = better;
                    } else {
                        staged_free(&better);
                    }
                }
                dag_plan_free(&q);
            }
            ok = ok &&
                 dag_solve_acc_milp(d, o->budget, have ? &inc : NULL, milp_end, o->verbose, bound, p, err, err_len);
            if (ok && !strcmp(p->status, "infeasible")) {
                snprintf(p->status, sizeof p->status, "no_solution");
                snprintf(p->note, sizeof p->note,
                         "no staged plan fits (the complete program proves it); schedules with other recomputation "
                         "orders were not searched to the end");
                p->bound = NAN;
            }
        }
        if (ok) {
            /* the best plan that fits, by the simulator */
            DagPlan h = {0};
            if (have) {
                set_plan_events(&h, inc.ev.v, inc.ev.n);
                score_plan(d, o->budget, &h);
            }
            if (p->ev) score_plan(d, o->budget, p);
            if (have && h.fits && (!p->ev || !p->fits || h.sim.compute < p->sim.compute)) {
                set_plan_events(p, h.ev, h.n_ev);
                if (!strcmp(p->status, "no_solution")) snprintf(p->status, sizeof p->status, "time_limit");
            }
            free(h.ev);
            if (!p->ev) set_plan_events(p, topo, n);
            /* the search's bound holds for every schedule, the staged plans included: the larger one stands */
            if (isfinite(any_bound) && (!isfinite(p->bound) || any_bound > p->bound))
                p->bound = any_bound, p->bound_scope = "all schedules";
        }
        staged_free(&inc), staged_free(&first);
    }
scored:
    if (ok && !p->ev) set_plan_events(p, topo, n); /* no plan: report the topological order, which does not fit */
    free(topo);
    if (!ok) return false;
    score_plan(d, o->budget, p);
    /* a proof that nothing fits, against a schedule that fits (the recursive one, dag_minpeak.c): one of
     * them is wrong, a bug (test_dag_sweep crosses them at every budget) */
    ACC_ASSERT(o->method != DAG_ACC || strcmp(p->status, "infeasible") ||
               dag_recursive_peak(d, NULL, NULL) > o->budget);
    if (p->fits) p->note[0] = 0; /* notes are for statuses without a plan */
    if (p->fits && isfinite(p->bound) && p->sim.compute < p->bound - 1e-9 * (1 + fabs(p->bound))) {
        /* a staged bound, and a plan outside the staged space (an eviction schedule) below it */
        p->bound = floor_any, p->bound_scope = "all schedules";
        if (!strcmp(p->status, "optimal")) snprintf(p->status, sizeof p->status, "feasible");
    }
    if (!strcmp(p->status, "infeasible")) p->bound = p->gap = NAN;
    else if (!isfinite(p->bound) && p->fits && o->method == DAG_ACC) /* every node runs at least once */
        p->bound = floor_any, p->bound_scope = "all schedules";
    else if (!isfinite(p->bound)) p->bound_scope = ""; /* no bound, no scope */
    /* a solver's claim stands only if the simulator agrees */
    if (!strcmp(p->status, "optimal") && (!p->fits || !(p->sim.compute <= p->bound + 1e-9 * (1 + fabs(p->bound)))))
        snprintf(p->status, sizeof p->status, "%s", p->fits ? "feasible" : "no_solution");
    if (p->fits && isfinite(p->bound)) {
        /* the forced windows hold for every schedule; the staged bounds are above them or below the plan */
        double b = p->bound < base_compute ? base_compute : p->bound;
        if (o->method == DAG_ACC && b < floor_any) b = floor_any, p->bound_scope = "all schedules";
        p->bound = b;
        p->gap = p->sim.compute > 0 ? (p->sim.compute - b) / p->sim.compute : 0;
        if (p->gap < 0) p->gap = 0;
        /* a plan at a bound that holds for every schedule is optimal, whoever found which */
        if (o->method == DAG_ACC && !strcmp(p->bound_scope, "all schedules") &&
            p->sim.compute <= b + 1e-9 * (1 + fabs(b)))
            snprintf(p->status, sizeof p->status, "optimal");
    }
    if (!p->fits && o->method == DAG_ACC && strcmp(p->status, "infeasible") && strcmp(p->status, "too_large")) {
        p->least_peak = least;
        double events = 0;
        p->recursive_peak = dag_recursive_peak(d, NULL, &events);
        if (!p->note[0] && p->recursive_peak <= o->budget)
            snprintf(p->note, sizeof p->note,
                     "no plan found within the time limit, but a schedule fits: the recursive one (peak %lld, "
                     "%.2g events: too long to write out); every schedule needs at least %lld",
                     (long long)p->recursive_peak, events, (long long)dag_min_peak(d));
        else if (!p->note[0]) /* the least peak known: a schedule written out (least) or the recursive one */
            snprintf(p->note, sizeof p->note,
                     "no plan found within the time limit, and none proven impossible; the least peak of any "
                     "schedule is at most %lld (%s) and at least %lld",
                     (long long)(least >= 0 && least < p->recursive_peak ? least : p->recursive_peak),
                     least >= 0 && least < p->recursive_peak ? "a schedule found" : "the recursive schedule",
                     (long long)dag_min_peak(d));
    }
    p->solve_s = acc_now_s() - t0;
    return true;
}

typedef struct {
    const Dag *d;
    const DagPlanOptions *o;
    DagPlan *p;
    char *err;
    size_t err_len;
    bool ok;
} DagRun;

static void dag_plan_run(void *arg) {
    DagRun *r = arg;
    r->ok = plan_dag(r->d, r->o, r->p, r->err, r->err_len);
}

/* plan_dag under lp_guarded: a failure of GLPK is an error, not abort(). */
bool dag_plan(const Dag *d, const DagPlanOptions *o, DagPlan *p, char *err, size_t err_len) {
    DagRun r = {d, o, p, err, err_len, false};
    char gerr[200];
    if (lp_guarded(dag_plan_run, &r, gerr, sizeof gerr)) return r.ok;
    snprintf(err, err_len, "%s", gerr);
    return false;
}

void dag_plan_free(DagPlan *p) {
    free(p->ev);
    p->ev = NULL;
}
