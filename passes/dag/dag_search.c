/* dag_search.c - acc's exact search over every schedule of a graph of at
 * most 64 nodes: recomputations in any order and any number of times, first
 * executions in the topological order (the papers' model).
 *
 * requires: a Dag (n <= 64), a budget, an upper bound (an incumbent's
 * compute, or INFINITY), a deadline and a cap on the states kept. provides:
 * the cheapest schedule below the upper bound, or the proof that there is
 * none (with no incumbent: that no schedule fits at all), or, when the time
 * or the states run out, a lower bound on the compute of every schedule.
 *
 * A* over states (next first execution t, set P of outputs held): a step
 * executes t or recomputes an earlier node whose inputs are held, when what
 * is held plus its output fits; or frees a held output (at no cost). What no
 * later first execution can need (not an ancestor of t..n-1) is dropped and
 * never recomputed. The estimate of the compute still to come is the cost of
 * t..n-1 plus, once each, every node that must be recomputed: an input of
 * t..n-1 that is not held, and, transitively, each input of such a node that
 * is not held. It never overestimates and never falls by more than a step's
 * cost (executing a node removes at most that node from the set), so the
 * first time the goal is taken from the queue its compute is the optimum, and
 * the least estimate left in the queue bounds every schedule from below.
 * States whose estimate reaches the upper bound are not kept.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

typedef struct {
    double f, g;
    int state;
} Open;

typedef struct {
    const Dag *d;
    int n;
    uint64_t in[64], need[65], inputs_from[65]; /* inputs of v; ancestors of t..n-1; inputs of t..n-1 */
    double rest[65];                            /* cost of t..n-1 */
    /* the states */
    uint64_t *held;
    double *g;
    int *parent, *table;
    int8_t *t, *node; /* node: executed into this state, -1: a free */
    uint8_t *closed;
    int n_states, alloc, cap, table_mask; /* alloc: room in the arrays (doubles up to cap) */
    VEC(Open) open;
} Search;

static uint64_t bit(int i) { return (uint64_t)1 << i; }

static double h_est(const Search *s, int t, uint64_t P) {
    uint64_t below = t >= 64 ? ~(uint64_t)0 : bit(t) - 1;
    uint64_t m = s->inputs_from[t] & below & ~P, todo = m;
    double h = s->rest[t];
    while (todo) {
        int x = __builtin_ctzll(todo);
        todo &= todo - 1;
        h += s->d->cost[x];
        uint64_t add = s->in[x] & ~P & ~m;
        m |= add, todo |= add;
    }
    return h;
}

/* Can a schedule whose compute is at least f beat the upper bound? */
static bool below_upper(double f, double upper) { return isinf(upper) || f < upper - 1e-9 * (1 + fabs(upper)); }

static void open_push(Search *s, Open o) {
    VEC_PUSH(s->open, o);
    Open *v = s->open.v;
    /* least f first; among equal f the deeper (larger g) */
    for (int k = s->open.n - 1; k > 0;) {
        int p = (k - 1) / 2;
        if (v[p].f < v[k].f || (v[p].f == v[k].f && v[p].g >= v[k].g)) break;
        Open x = v[p];
        v[p] = v[k], v[k] = x, k = p;
    }
}

static Open open_pop(Search *s) {
    Open *v = s->open.v, top = v[0];
    v[0] = v[--s->open.n];
    for (int k = 0;;) {
        int l = 2 * k + 1, r = l + 1, m = k;
        if (l < s->open.n && (v[l].f < v[m].f || (v[l].f == v[m].f && v[l].g > v[m].g))) m = l;
        if (r < s->open.n && (v[r].f < v[m].f || (v[r].f == v[m].f && v[r].g > v[m].g))) m = r;
        if (m == k) break;
        Open x = v[m];
        v[m] = v[k], v[k] = x, k = m;
    }
    return top;
}

static uint64_t hash_state(int t, uint64_t P) {
    uint64_t x = P * 0x9E3779B97F4A7C15ull ^ (uint64_t)t * 0xC2B2AE3D27D4EB4Full;
    return x ^ (x >> 29);
}

/* Room for twice as many states (arrays doubled, the table rebuilt). */
static void grow(Search *s) {
    int a = s->alloc ? 2 * s->alloc : 1024;
    if (a > s->cap) a = s->cap;
    s->held = acc_xrealloc(s->held, (size_t)a * sizeof(uint64_t));
    s->g = acc_xrealloc(s->g, (size_t)a * sizeof(double));
    s->parent = acc_xrealloc(s->parent, (size_t)a * sizeof(int));
    s->t = acc_xrealloc(s->t, (size_t)a);
    s->node = acc_xrealloc(s->node, (size_t)a);
    s->closed = acc_xrealloc(s->closed, (size_t)a);
    s->alloc = a;
    int tsize = 1;
    while (tsize < 2 * a) tsize <<= 1;
    free(s->table);
    s->table = acc_xcalloc((size_t)tsize, sizeof(int));
    memset(s->table, 0xff, (size_t)tsize * sizeof(int));
    s->table_mask = tsize - 1;
    for (int x = 0; x < s->n_states; x++) {
        uint64_t k = hash_state(s->t[x], s->held[x]) & (uint64_t)s->table_mask;
        while (s->table[k] >= 0) k = (k + 1) & (uint64_t)s->table_mask;
        s->table[k] = x;
    }
}

/* The state (t, P): its index, a new one (-1 when the cap is reached). */
static int state_get(Search *s, int t, uint64_t P, bool *fresh) {
    uint64_t k = hash_state(t, P) & (uint64_t)s->table_mask;
    for (;; k = (k + 1) & (uint64_t)s->table_mask) {
        int x = s->table[k];
        if (x < 0) break;
        if (s->t[x] == t && s->held[x] == P) {
            *fresh = false;
            return x;
        }
    }
    if (s->n_states >= s->cap) return -1;
    if (s->n_states >= s->alloc) {
        grow(s);
        return state_get(s, t, P, fresh);
    }
    int x = s->n_states++;
    s->table[k] = x;
    s->t[x] = (int8_t)t, s->held[x] = P, s->g[x] = INFINITY, s->closed[x] = 0;
    *fresh = true;
    return x;
}

/* Relax the step from state `from` into (t, P) at compute g; false when the
 * cap on states is reached. */
static bool relax(Search *s, int from, int node, int t, uint64_t P, double g, double upper) {
    double f = g + h_est(s, t, P);
    if (!below_upper(f, upper)) return true; /* cannot beat the incumbent */
    bool fresh;
    int x = state_get(s, t, P, &fresh);
    if (x < 0) return false;
    if (!(g < s->g[x])) return true;
    if (s->open.n >= 2 * s->cap) return false; /* the queue is bounded too */
    s->g[x] = g, s->parent[x] = from, s->node[x] = (int8_t)node;
    open_push(s, (Open){f, g, x});
    return true;
}

void dag_search_free(DagSearch *r) {
    free(r->ev);
    r->ev = NULL, r->n_ev = 0;
}

bool dag_search_exact(const Dag *d, int64_t budget, double upper, double deadline, int max_states, DagSearch *r) {
    memset(r, 0, sizeof *r);
    r->cost = NAN, r->bound = -INFINITY;
    int n = d->n;
    if (n < 1 || n > DAG_SEARCH_MAX_NODES) return false;
    Search s = {0};
    s.d = d, s.n = n;
    for (int v = 0; v < n; v++)
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) s.in[v] |= bit(d->in[k]);
    uint64_t anc[64];
    for (int v = 0; v < n; v++) {
        anc[v] = bit(v);
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) anc[v] |= anc[d->in[k]];
    }
    for (int t = n; t >= 0; t--) {
        s.need[t] = t < n ? s.need[t + 1] | anc[t] : 0;
        s.inputs_from[t] = t < n ? s.inputs_from[t + 1] | s.in[t] : 0;
        s.rest[t] = t < n ? s.rest[t + 1] + d->cost[t] : 0;
    }
    s.cap = max_states > 16 ? max_states : 16;
    grow(&s);
    bool fresh;
    int start = state_get(&s, 0, 0, &fresh);
    s.g[start] = 0, s.parent[start] = -1, s.node[start] = -1;
    if (below_upper(h_est(&s, 0, 0), upper)) open_push(&s, (Open){h_est(&s, 0, 0), 0, start});
    int goal = -1;
    bool stopped = false;
    for (long pops = 0; s.open.n; pops++) {
        if ((pops & 1023) == 0 && acc_now_s() > deadline) {
            stopped = true;
            break;
        }
        Open o = open_pop(&s);
        int x = o.state;
        if (s.closed[x] || o.g > s.g[x]) continue;
        s.closed[x] = 1;
        int t = s.t[x];
        if (t == n) {
            goal = x;
            break;
        }
        uint64_t P = s.held[x];
        int64_t held = 0;
        for (uint64_t m = P; m; m &= m - 1) held += d->mem[__builtin_ctzll(m)];
        bool ok = true;
        for (int v = 0; v <= t && ok; v++) {
            if (!(s.need[t] >> v & 1) || (P >> v & 1) || (s.in[v] & ~P) || held + d->mem[v] > budget) continue;
            if (v == t) ok = relax(&s, x, v, t + 1, (P | bit(v)) & s.need[t + 1], o.g + d->cost[v], upper);
            else ok = relax(&s, x, v, t, P | bit(v), o.g + d->cost[v], upper);
        }
        for (uint64_t m = P; m && ok; m &= m - 1) ok = relax(&s, x, -1, t, P & ~bit(__builtin_ctzll(m)), o.g, upper);
        if (!ok) {
            stopped = true;
            s.closed[x] = 0;
            open_push(&s, o); /* its bound still counts */
            break;
        }
    }
    r->states = s.n_states;
    if (goal >= 0) {
        r->status = DAG_SEARCH_FOUND;
        r->cost = r->bound = s.g[goal];
        VEC(int) rev = {0};
        for (int x = goal; x >= 0; x = s.parent[x])
            if (s.node[x] >= 0) VEC_PUSH(rev, s.node[x]);
        r->n_ev = rev.n;
        r->ev = acc_xcalloc((size_t)rev.n + 1, sizeof(int));
        for (int e = 0; e < rev.n; e++) r->ev[e] = rev.v[rev.n - 1 - e];
        VEC_FREE(rev);
    } else if (!stopped) {
        r->status = DAG_SEARCH_NONE;
        r->bound = upper;
    } else {
        r->status = DAG_SEARCH_STOPPED;
        double lo = upper;
        while (s.open.n) {
            Open o = open_pop(&s);
            if (!s.closed[o.state] && o.g <= s.g[o.state]) {
                lo = o.f < lo ? o.f : lo;
                break;
            }
        }
        r->bound = lo;
    }
    VEC_FREE(s.open);
    free(s.held), free(s.g), free(s.parent), free(s.t), free(s.node), free(s.closed), free(s.table);
    return true;
}
