/* dag_search.c - acc's exact search over every schedule of a graph of at
 * most 128 nodes: recomputations in any order and any number of times, first
 * executions in the topological order (the papers' model).
 *
 * requires: a Dag (n <= DAG_SEARCH_MAX_NODES = 128), a budget, an upper bound (an incumbent's
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
 * t..n-1 plus, for each node x, a least number of its executions still to
 * come times its cost, the larger of two counts (window_costs below):
 * - once, if x must be recomputed: an input of t..n-1 that is not held, and,
 *   transitively, each input of such a node that is not held;
 * - the forced windows: a first execution b that cannot hold x (x is not an
 *   input of b, and x with b and b's inputs is over the budget) between two
 *   first executions that need x (x itself, its users) forces one more
 *   execution of x after b; so does such a b between now and x's next user,
 *   or x not held now. The windows are disjoint, so their count is a least
 *   number of executions of x.
 * Each count is a lower bound on x's executions still to come, and falls by
 * at most one, only when the step executes x (the windows move with t: a
 * window before x's next user becomes the window between two users once that
 * user runs; a blocking b runs only with x not held), so the estimate never
 * overestimates and never falls by more than a step's cost: the first time
 * the goal is taken from the queue its compute is the optimum, and the least
 * estimate left in the queue bounds every schedule from below. States whose
 * estimate reaches the upper bound are not kept.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

/* A set of nodes: one bit per node. This file is compiled twice: as itself,
 * with 64-bit sets, for graphs of at most 64 nodes (most, and the speed of
 * one-word code: measured, 128-bit sets cost about a fifth more per state
 * there), and by dag_search_wide.c with DAG_SEARCH_WIDE, 128-bit sets (GCC's
 * and clang's unsigned __int128, two machine words), for 65..128 nodes;
 * dag_search_exact picks one. */
#ifdef DAG_SEARCH_WIDE
__extension__ typedef unsigned __int128 Set;
#define SET_BITS 128
#define SEARCH_ENTRY dag_search_exact_wide
#else
typedef uint64_t Set;
#define SET_BITS 64
#define SEARCH_ENTRY dag_search_exact_narrow
#endif
static Set bit(int i) { return (Set)1 << i; }

/* The least node in the non-empty set m. */
static int set_first(Set m) {
#ifdef DAG_SEARCH_WIDE
    uint64_t lo = (uint64_t)m;
    return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(m >> 64));
#else
    return __builtin_ctzll(m);
#endif
}

/* The two words of a set, folded, for the hash. */
static uint64_t set_fold(Set m) {
#ifdef DAG_SEARCH_WIDE
    return (uint64_t)m ^ (uint64_t)(m >> 64) * 0xD6E8FEB86659FD93ull;
#else
    return m;
#endif
}

typedef struct {
    double f, g;
    int state;
} Open;

typedef struct {
    const Dag *d;
    int n;
    Set in[SET_BITS];                                  /* inputs of v */
    Set need[SET_BITS + 1], inputs_from[SET_BITS + 1]; /* ancestors, inputs of t..n-1 */
    double rest[SET_BITS + 1]; /* cost of t..n-1, and of the windows between first executions >= t */
    Set blocked[SET_BITS + 1]; /* x < t whose window before its next user (>= t) holds a blocking b */
    /* the states */
    Set *held;
    double *g;
    int *parent, *table;
    int16_t *t, *node; /* node: executed into this state, -1: a free */
    uint8_t *closed;
    int n_states, alloc, cap, table_mask; /* alloc: room in the arrays (doubles up to cap) */
    VEC(Open) open;
} Search;

/* The largest own[] over [lo, hi) (INT64_MIN if empty): a sparse table. */
typedef struct {
    int n, levels;
    int64_t *m; /* m[k * n + i]: the largest of own[i .. i + 2^k) */
} RangeMax;

static void range_max_build(RangeMax *r, const int64_t *a, int n) {
    r->n = n, r->levels = 1;
    while ((1 << r->levels) <= n) r->levels++;
    r->m = acc_xcalloc((size_t)r->levels * (size_t)(n ? n : 1), sizeof(int64_t));
    memcpy(r->m, a, (size_t)n * sizeof(int64_t));
    for (int k = 1; k < r->levels; k++)
        for (int i = 0; i + (1 << k) <= n; i++) {
            int64_t x = r->m[(k - 1) * n + i], y = r->m[(k - 1) * n + i + (1 << (k - 1))];
            r->m[k * n + i] = x > y ? x : y;
        }
}

static int64_t range_max(const RangeMax *r, int lo, int hi) {
    if (lo >= hi) return INT64_MIN;
    int k = 0;
    while ((2 << k) <= hi - lo) k++;
    int64_t x = r->m[k * r->n + lo], y = r->m[k * r->n + hi - (1 << k)];
    return x > y ? x : y;
}

/* The forced windows of every node at budget (see the head comment): win[t]
 * (t = 0..n) the cost of the windows between two first executions >= t that
 * need the same node, summed over the nodes; blocked[t] (NULL, or n <= SET_BITS)
 * the nodes x < t whose window before their next user >= t holds a first
 * execution that cannot hold x. Between two consecutive first executions
 * that need x no other node reads x, so b blocks x there exactly when its
 * output and inputs (own[b]) leave no room for x: one range maximum. */
static void window_costs(const Dag *d, int64_t budget, double *win, Set *blocked) {
    int n = d->n;
    int64_t *own = acc_xcalloc((size_t)n + 1, sizeof(int64_t));
    dag_point_memory(d, own, NULL);
    RangeMax r;
    range_max_build(&r, own, n);
    for (int t = 0; t <= n; t++) {
        win[t] = 0;
        if (blocked) blocked[t] = 0;
    }
    for (int x = 0; x < n; x++) {
        int64_t room = budget - d->mem[x]; /* b blocks x when own[b] > room */
        for (int k = d->out_off[x], prev = x; k < d->out_off[x + 1]; k++) {
            int u = d->out[k];
            if (u == prev) continue;
            if (range_max(&r, prev + 1, u) > room) win[prev] += d->cost[x];
            /* x < t <= u: the next user is u; blocked when some b in [t, u) blocks x */
            int64_t most = INT64_MIN;
            for (int t = u; blocked && t > prev; t--) {
                if (most > room) blocked[t] |= bit(x);
                most = own[t - 1] > most ? own[t - 1] : most;
            }
            prev = u;
        }
    }
    for (int t = n - 1; t >= 0; t--) win[t] += win[t + 1]; /* the windows that start at t or later */
    free(r.m), free(own);
}

#ifndef DAG_SEARCH_WIDE
double dag_window_bound(const Dag *d, int64_t budget) {
    double *win = acc_xcalloc((size_t)d->n + 1, sizeof(double));
    window_costs(d, budget, win, NULL);
    double c = dag_baseline_compute(d) + win[0];
    free(win);
    return c;
}
#endif

static double h_est(const Search *s, int t, Set P) {
    Set below = t >= SET_BITS ? ~(Set)0 : bit(t) - 1;
    Set m = s->inputs_from[t] & below & ~P, todo = m;
    double h = s->rest[t];
    /* held, yet blocked before its next user (not held: counted with m) */
    for (Set b = s->blocked[t] & P; b; b &= b - 1) h += s->d->cost[set_first(b)];
    while (todo) {
        int x = set_first(todo);
        todo &= todo - 1;
        h += s->d->cost[x];
        Set add = s->in[x] & ~P & ~m;
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

static uint64_t hash_state(int t, Set P) {
    uint64_t x = set_fold(P) * 0x9E3779B97F4A7C15ull ^ (uint64_t)t * 0xC2B2AE3D27D4EB4Full;
    return x ^ (x >> 29);
}

/* Room for twice as many states (arrays doubled, the table rebuilt). */
static void grow(Search *s) {
    int a = s->alloc ? 2 * s->alloc : 1024;
    if (a > s->cap) a = s->cap;
    s->held = acc_xrealloc(s->held, (size_t)a * sizeof(Set));
    s->g = acc_xrealloc(s->g, (size_t)a * sizeof(double));
    s->parent = acc_xrealloc(s->parent, (size_t)a * sizeof(int));
    s->t = acc_xrealloc(s->t, (size_t)a * sizeof(int16_t));
    s->node = acc_xrealloc(s->node, (size_t)a * sizeof(int16_t));
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
static int state_get(Search *s, int t, Set P, bool *fresh) {
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
    s->t[x] = (int16_t)t, s->held[x] = P, s->g[x] = INFINITY, s->closed[x] = 0;
    *fresh = true;
    return x;
}

/* Relax the step from state `from` into (t, P) at compute g; false when the
 * cap on states is reached. */
static bool relax(Search *s, int from, int node, int t, Set P, double g, double upper) {
    double f = g + h_est(s, t, P);
    if (!below_upper(f, upper)) return true; /* cannot beat the incumbent */
    bool fresh;
    int x = state_get(s, t, P, &fresh);
    if (x < 0) return false;
    if (!(g < s->g[x])) return true;
    if (s->open.n >= 2 * s->cap) return false; /* the queue is bounded too */
    s->g[x] = g, s->parent[x] = from, s->node[x] = (int16_t)node;
    open_push(s, (Open){f, g, x});
    return true;
}

#ifndef DAG_SEARCH_WIDE
void dag_search_free(DagSearch *r) {
    free(r->ev);
    r->ev = NULL, r->n_ev = 0;
}

bool dag_search_exact(const Dag *d, int64_t budget, double upper, double deadline, int max_states, DagSearch *r) {
    return d->n <= 64 ? dag_search_exact_narrow(d, budget, upper, deadline, max_states, r)
                      : dag_search_exact_wide(d, budget, upper, deadline, max_states, r);
}
#endif

bool SEARCH_ENTRY(const Dag *d, int64_t budget, double upper, double deadline, int max_states, DagSearch *r) {
    memset(r, 0, sizeof *r);
    r->cost = NAN, r->bound = -INFINITY;
    int n = d->n;
    if (n < 1 || n > SET_BITS || n > DAG_SEARCH_MAX_NODES) return false;
    Search s = {0};
    s.d = d, s.n = n;
    for (int v = 0; v < n; v++)
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) s.in[v] |= bit(d->in[k]);
    Set anc[SET_BITS];
    for (int v = 0; v < n; v++) {
        anc[v] = bit(v);
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) anc[v] |= anc[d->in[k]];
    }
    for (int t = n; t >= 0; t--) {
        s.need[t] = t < n ? s.need[t + 1] | anc[t] : 0;
        s.inputs_from[t] = t < n ? s.inputs_from[t + 1] | s.in[t] : 0;
        s.rest[t] = t < n ? s.rest[t + 1] + d->cost[t] : 0;
    }
    double win[SET_BITS + 1];
    window_costs(d, budget, win, s.blocked);
    for (int t = 0; t <= n; t++) s.rest[t] += win[t];
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
        Set P = s.held[x];
        int64_t held = 0;
        for (Set m = P; m; m &= m - 1) held += d->mem[set_first(m)];
        bool ok = true;
        for (int v = 0; v <= t && ok; v++) {
            if (!(s.need[t] >> v & 1) || (P >> v & 1) || (s.in[v] & ~P) || held + d->mem[v] > budget) continue;
            if (v == t) ok = relax(&s, x, v, t + 1, (P | bit(v)) & s.need[t + 1], o.g + d->cost[v], upper);
            else ok = relax(&s, x, v, t, P | bit(v), o.g + d->cost[v], upper);
        }
        for (Set m = P; m && ok; m &= m - 1) ok = relax(&s, x, -1, t, P & ~bit(set_first(m)), o.g, upper);
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
