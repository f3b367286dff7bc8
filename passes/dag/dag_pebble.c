/* dag_pebble.c - one node computed within a budget from what is held: the
 * black pebble game for a single target, searched backwards. Not a planner
 * of whole schedules: dag.c calls it where an eviction schedule fails at a
 * node (a node reading many outputs produced all over the graph), and to
 * prove that no schedule fits.
 *
 * requires: a Dag, a budget, the target x, the outputs held before (any of
 * them may be dropped, but those pinned: held throughout, their memory off
 * the budget the caller gives), a cap on the states and a deadline. provides: the
 * recomputations, in order, after which x runs with every event within the
 * budget; or, searched to the end, the proof that there are none.
 *
 * A state is a set T of nodes whose outputs are all held at one event; the
 * first is the inputs of x (held at x's event, with x's output). In any
 * schedule, let f be the node of T whose copy (the one read there) was
 * computed last: at f's event the other copies of T were already computed
 * and are still held, and so are f's inputs. So that event holds at least
 * mem(T + in(f)) and the state before it is T - f + in(f) (a node cannot be
 * held in two copies both read: the later one would be read). Peeling nodes
 * this way from x back to nothing follows every schedule that computes x:
 * the memory of each step is a lower bound on an event of that schedule.
 * Conversely a path of peels is itself a schedule (reversed, each step
 * computes f from inputs held and then holds the next state), so the search
 * is exact: a path to a state that lies within the outputs held (kept from
 * the start) gives the recomputations; with nothing held, no path at all
 * means that no schedule computes x within the budget, since every schedule
 * starts with nothing held. The least peak of any schedule is the largest,
 * over the nodes, of the least budget under which such a path exists
 * (computing each node from nothing in turn is a schedule).
 *
 * Depth first, states kept in a hash set (a state reached twice is expanded
 * once); the node peeled first is the latest one not held (the forward order
 * read backwards), so the path found tends to recompute little; seed > 0
 * perturbs that order. A state is stored as a bitset of n bits (32 bytes at
 * n = 250, where the sorted list it replaced took ~210; 128 at n = 1,000).
 * A child is built only when it fits: its memory is read from the parent's
 * bits at the peeled node's inputs, and its set is the parent's with f
 * cleared and f's inputs set. The states may take 320 MB (2.4 million at
 * n = 1,000): MOCCASIN's n1000 at 0.6 of its peak has a sink whose search
 * needs 1.48 million (about 3 s), where the 64 MB kept before stopped it at
 * 479,350. A state with a free peel (free_peel) has that
 * peel as its only child: the last node of MOCCASIN's random_layered_n250
 * at 0.6 of its peak needs 135,331 states so (1.19 million without).
 *
 * The first path is not the cheapest (often a long detour): dag_pebble_cheapest
 * searches the same states best first (A*, below) for the cheapest one, with
 * the first path's cost as the bound that cuts off every state that cannot
 * beat it.
 */
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

#define PEBBLE_MAX_BYTES (320 << 20)  /* the depth-first search's states: at most 320 MB */
#define CHEAPEST_MAX_BYTES (64 << 20) /* the best-first search's states and queue: at most 64 MB */
#define DESC_MAX_BYTES (16 << 20)     /* the best-first search's descendant sets: at most 16 MB */

typedef struct {
    int len;    /* T: |T|, its bits at bits[index * words ..] */
    int parent; /* the state peeled to get here (-1: the first) */
    int peeled; /* the node peeled from parent */
} PState;

typedef struct {
    const Dag *d;
    const int *held; /* NULL: nothing */
    VEC(PState) st;
    VEC(uint64_t) bits; /* the states' sets, words per state */
    uint64_t *scratch;  /* [words] */
    int words;
    /* open addressing: per slot the state index + 1 (0 empty) in the low 32 bits and the high 32 bits of
     * its set's hash, compared before the set itself (a probe past another state then reads no set); the
     * table doubles at half full, so a search of a few states touches a few pages (a table sized for the
     * state cap, 32 MB at 2,000,000 states, was cleared by calloc for each of n1000's 1,000 searches) */
    uint64_t *hash;
    size_t hash_cap;
} Peb;

static uint64_t set_hash(const uint64_t *w, int words) {
    uint64_t h = 1469598103934665603ull;
    for (int k = 0; k < words; k++) h = (h ^ w[k]) * 1099511628211ull, h ^= h >> 29;
    return h;
}

/* The nodes of set w, ascending, in v; their number. */
static int decode_set(const uint64_t *w, int words, int *v) {
    int n = 0;
    for (int k = 0; k < words; k++)
        for (uint64_t b = w[k]; b; b &= b - 1) v[n++] = 64 * k + __builtin_ctzll(b);
    return n;
}

/* The nodes of state si, ascending, in v; their number. */
static int decode(const Peb *p, int si, int *v) {
    return decode_set(p->bits.v + (size_t)si * (size_t)p->words, p->words, v);
}

/* Put state si (its set's hash h) in a free slot of the table. */
static void hash_put(Peb *p, uint64_t h, int si) {
    size_t mask = p->hash_cap - 1, k = (size_t)h & mask;
    while (p->hash[k]) k = (k + 1) & mask;
    p->hash[k] = (h >> 32 << 32) | (uint64_t)(si + 1);
}

/* Index of the state holding set w (len nodes) or, when absent, -1 after
 * adding it (with parent and peeled) in *added. w must not point into
 * p->bits (adding may move it). */
static int find_or_add(Peb *p, const uint64_t *w, int len, int parent, int peeled, int *added) {
    size_t words = (size_t)p->words;
    uint64_t h = set_hash(w, p->words);
    size_t mask = p->hash_cap - 1, k = (size_t)h & mask;
    *added = -1;
    for (; p->hash[k]; k = (k + 1) & mask) {
        if (p->hash[k] >> 32 != h >> 32) continue;
        int si = (int)(p->hash[k] & 0xffffffffu) - 1;
        if (p->st.v[si].len == len && !memcmp(p->bits.v + (size_t)si * words, w, words * sizeof(uint64_t))) return si;
    }
    PState s = {len, parent, peeled};
    for (size_t a = 0; a < words; a++) VEC_PUSH(p->bits, w[a]);
    VEC_PUSH(p->st, s);
    *added = p->st.n - 1;
    if (2 * (size_t)p->st.n > p->hash_cap) { /* grow: every state again, its hash from its set */
        free(p->hash);
        p->hash_cap *= 2;
        p->hash = acc_xcalloc(p->hash_cap, sizeof(uint64_t));
        for (int si = 0; si < p->st.n; si++) hash_put(p, set_hash(p->bits.v + (size_t)si * words, p->words), si);
    } else {
        p->hash[k] = (h >> 32 << 32) | (uint64_t)p->st.n;
    }
    return -1;
}

/* The first state, in(x), added to p. */
static void add_inputs(Peb *p, int x) {
    const Dag *d = p->d;
    int added;
    memset(p->scratch, 0, (size_t)p->words * sizeof(uint64_t));
    for (int q = d->in_off[x]; q < d->in_off[x + 1]; q++) p->scratch[d->in[q] / 64] |= 1ull << (d->in[q] % 64);
    find_or_add(p, p->scratch, d->in_off[x + 1] - d->in_off[x], -1, -1, &added);
}

/* The strict descendants of each node, as bitsets ([n * words]; the ids are
 * topological, so a node's users come after it). */
static uint64_t *descendants(const Dag *d, int words) {
    uint64_t *w = acc_xcalloc((size_t)d->n * (size_t)words, sizeof(uint64_t));
    for (int u = d->n - 1; u >= 0; u--) {
        uint64_t *du = w + (size_t)u * (size_t)words;
        for (int q = d->out_off[u]; q < d->out_off[u + 1]; q++) {
            const uint64_t *dc = w + (size_t)d->out[q] * (size_t)words;
            du[d->out[q] / 64] |= 1ull << (d->out[q] % 64);
            for (int k = 0; k < words; k++) du[k] |= dc[k];
        }
    }
    return w;
}

/* A free peel of state si (nodes v[0..n)): a node f not held whose inputs
 * are all in the state, the latest; -1 if none. Peeling it adds nothing, and
 * T - f, a subset of T, reaches nothing held whenever T does (a path from T,
 * each peel of a node not in the smaller state skipped, stays within the
 * larger states' memory): the depth-first search takes it as T's only child
 * without losing a path. With desc, only an f none of whose descendants is
 * in T: then no later peel reads f (every node peeled later is in T or an
 * ancestor of T's nodes), so the skipping path never peels f again and costs
 * no more: some cheapest path from T peels f first, and the best-first
 * search takes it as T's only child without losing the cheapest path. */
static int free_peel(const Peb *p, int si, const int *v, int n, const uint64_t *desc) {
    const uint64_t *w = p->bits.v + (size_t)si * (size_t)p->words;
    const Dag *d = p->d;
    for (int a = n - 1; a >= 0; a--) {
        int f = v[a], q = d->in_off[f], k = 0;
        if (p->held && p->held[f]) continue;
        while (q < d->in_off[f + 1] && (w[d->in[q] / 64] >> (d->in[q] % 64) & 1)) q++;
        if (q < d->in_off[f + 1]) continue;
        for (const uint64_t *df = desc ? desc + (size_t)f * (size_t)p->words : NULL; df && k < p->words; k++)
            if (df[k] & w[k]) break;
        if (!desc || k == p->words) return f;
    }
    return -1;
}

static bool within_held(const Peb *p, const int *v, int n) {
    for (int a = 0; a < n; a++)
        if (!p->held || !p->held[v[a]]) return false;
    return true;
}

/* The path to goal: the nodes peeled from the goal back to the first
 * state, which is the forward order of their computations; *cost their sum. */
static void write_path(const Dag *d, const Peb *p, int goal, int **seq, int *n_seq, double *cost) {
    int k = 0;
    for (int s = goal; p->st.v[s].parent >= 0; s = p->st.v[s].parent) k++;
    *seq = acc_xcalloc((size_t)k + 1, sizeof(int));
    for (int s = goal; p->st.v[s].parent >= 0; s = p->st.v[s].parent) {
        int f = p->st.v[s].peeled;
        (*seq)[(*n_seq)++] = f;
        *cost += d->cost[f];
    }
}

/* The memory of x's own event: x and its inputs not pinned. */
static int64_t own_event_mem(const Dag *d, const int *held, int x) {
    int64_t m = d->mem[x];
    for (int q = d->in_off[x]; q < d->in_off[x + 1]; q++)
        if (!held || held[d->in[q]] != 2) m += d->mem[d->in[q]];
    return m;
}

/* The memory of T's nodes not pinned. */
static int64_t state_mem(const Dag *d, const int *held, const int *v, int n) {
    int64_t m = 0;
    for (int a = 0; a < n; a++)
        if (!held || held[v[a]] != 2) m += d->mem[v[a]];
    return m;
}

/* What peeling f from the state of set w adds: the memory of f's inputs
 * not in it (and not pinned), their number in *n_new. Only f's inputs are
 * looked at, so a peel over the budget is refused without building its
 * state (building each child by merging lists took 89% of the search). */
static int64_t peel_extra(const Dag *d, const int *held, const uint64_t *w, int f, int *n_new) {
    int64_t extra = 0;
    *n_new = 0;
    for (int q = d->in_off[f]; q < d->in_off[f + 1]; q++) {
        int u = d->in[q];
        if (w[u / 64] >> (u % 64) & 1) continue;
        ++*n_new;
        if (!held || held[u] != 2) extra += d->mem[u];
    }
    return extra;
}

/* Peel f from the state of set w: T - f + in(f), in out. */
static void peel_set(const Dag *d, const uint64_t *w, int words, int f, uint64_t *out) {
    memcpy(out, w, (size_t)words * sizeof(uint64_t));
    out[f / 64] &= ~(1ull << (f % 64));
    for (int q = d->in_off[f]; q < d->in_off[f + 1]; q++) out[d->in[q] / 64] |= 1ull << (d->in[q] % 64);
}

/* Order the indices order[0..len) by key, ties in index order (stable): a
 * merge sort. With a seed the keys are random and a state of MOCCASIN's
 * n250 holds ~50-100 nodes: the insertion sort this replaces was 85% of
 * the search's time there (perf), the same order. */
static void sort_by_key(int *order, const int *key, int *tmp, int len) {
    for (int w = 1; w < len; w *= 2) {
        for (int lo = 0; lo < len; lo += 2 * w) {
            int mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
            int i = lo, j = mid, k = lo;
            while (i < mid || j < hi)
                tmp[k++] = j >= hi || (i < mid && key[order[i]] <= key[order[j]]) ? order[i++] : order[j++];
        }
        memcpy(order, tmp, (size_t)len * sizeof(int));
    }
}

int dag_pebble(const Dag *d, int64_t budget, int x, const int *held, int max_states, double deadline, uint64_t seed,
               int **seq, int *n_seq, double *cost) {
    *seq = NULL, *n_seq = 0, *cost = 0;
    if (own_event_mem(d, held, x) > budget) return DAG_PEBBLE_NONE;
    Peb p = {.d = d, .held = held, .words = (d->n + 63) / 64};
    p.scratch = acc_xcalloc(2 * (size_t)p.words, sizeof(uint64_t));
    uint64_t *pw = p.scratch + p.words; /* the state expanded: its set (adding states may move p.bits) */
    int *cur = acc_xcalloc((size_t)d->n + 1, sizeof(int));
    p.hash_cap = 1024;
    p.hash = acc_xcalloc(p.hash_cap, sizeof(uint64_t));
    int n = d->n;
    int *key = acc_xcalloc((size_t)n + 1, sizeof(int)), *order = acc_xcalloc((size_t)n + 1, sizeof(int));
    int *tmp = acc_xcalloc((size_t)n + 1, sizeof(int)), *grow = acc_xcalloc((size_t)n + 1, sizeof(int));
    VEC(int) stack = {0};
    int added, n_new, goal = -1, status = DAG_PEBBLE_STOPPED;
    bool stopped = false;
    add_inputs(&p, x);
    VEC_PUSH(stack, 0);
    uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int iter = 0; stack.n; iter++) {
        if (p.st.n >= max_states || p.bits.n * sizeof(uint64_t) + (size_t)p.st.n * sizeof(PState) > PEBBLE_MAX_BYTES ||
            ((iter & 15) == 0 && acc_now_s() > deadline)) {
            stopped = true;
            break;
        }
        int si = stack.v[--stack.n];
        int len = decode(&p, si, cur);
        memcpy(pw, p.bits.v + (size_t)si * (size_t)p.words, (size_t)p.words * sizeof(uint64_t));
        if (within_held(&p, cur, len)) {
            goal = si;
            break;
        }
        int64_t mt = state_mem(d, held, cur, len);
        int fr = free_peel(&p, si, cur, len, NULL);
        if (fr >= 0) { /* T - f holds less and is a subset of T: its only child (exact, see free_peel) */
            peel_extra(d, held, pw, fr, &n_new);
            peel_set(d, pw, p.words, fr, p.scratch);
            find_or_add(&p, p.scratch, len - 1 + n_new, si, fr, &added);
            if (added >= 0) VEC_PUSH(stack, added);
            continue;
        }
        /* children in order of preference: not held first, then the latest;
         * pushed least preferred first. Only those that fit are ordered (the
         * keys drawn for every node, so the order is the same): most peels
         * are over the budget */
        int m = 0;
        for (int a = 0; a < len; a++) {
            int f = cur[a];
            int k = (held && held[f] ? 0 : n) + f;
            if (seed) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                k = (held && held[f] ? 0 : n) + (int)(rng % (uint64_t)n);
            }
            if (held && held[f] == 2) continue; /* pinned: held throughout, never recomputed */
            if (mt + peel_extra(d, held, pw, f, &n_new) > budget) continue;
            key[a] = k, grow[a] = n_new, order[m++] = a;
        }
        sort_by_key(order, key, tmp, m);
        for (int oa = 0; oa < m; oa++) {
            int f = cur[order[oa]];
            peel_set(d, pw, p.words, f, p.scratch);
            find_or_add(&p, p.scratch, len - 1 + grow[order[oa]], si, f, &added);
            if (added >= 0) VEC_PUSH(stack, added);
        }
    }
    if (goal >= 0) {
        status = DAG_PEBBLE_FOUND;
        write_path(d, &p, goal, seq, n_seq, cost);
    } else if (!stopped) { /* every state expanded */
        status = DAG_PEBBLE_NONE;
    }
    VEC_FREE(stack);
    VEC_FREE(p.st);
    VEC_FREE(p.bits);
    free(p.scratch), free(cur);
    free(p.hash), free(key), free(order), free(tmp), free(grow);
    return status;
}

/* ---- the cheapest path: best first ------------------------------------------------ */

typedef struct {
    double f, g; /* g: the compute peeled so far; f: g plus the estimate */
    int si;
} PItem;

/* Pops first the least f, then the most g (the deepest: nearest a goal),
 * then the earliest state: a total order, so the search is deterministic. */
static bool item_before(PItem a, PItem b) {
    if (a.f != b.f) return a.f < b.f;
    if (a.g != b.g) return a.g > b.g;
    return a.si < b.si;
}

static void heap_push(PItem **h, int *n, int *cap, PItem it) {
    if (*n == *cap) *cap = *cap ? 2 * *cap : 1024, *h = acc_xrealloc(*h, (size_t)*cap * sizeof(PItem));
    int k = (*n)++;
    for (; k > 0 && item_before(it, (*h)[(k - 1) / 2]); k = (k - 1) / 2) (*h)[k] = (*h)[(k - 1) / 2];
    (*h)[k] = it;
}

static PItem heap_pop(PItem *h, int *n) {
    PItem top = h[0], last = h[--*n];
    int k = 0;
    for (;;) {
        int c = 2 * k + 1;
        if (c >= *n) break;
        if (c + 1 < *n && item_before(h[c + 1], h[c])) c++;
        if (!item_before(h[c], last)) break;
        h[k] = h[c], k = c;
    }
    if (*n) h[k] = last;
    return top;
}

/* The estimate of T: the compute of every node that must still run, T's
 * nodes not held and, through inputs not held, their ancestors (each must be
 * computed at least once before x, whatever the order: a node leaves T only
 * by its peel, and its inputs enter T then). Peeling f lowers it by at most
 * f's compute, so it is consistent: a state popped first is reached at its
 * least compute (dag_cone_cost, dag_impl.h). */
double dag_cone_cost(const Dag *d, const int *held, const int *v, int len, int *mark, int *stack, int stamp) {
    double h = 0;
    int top = 0;
    for (int a = 0; a < len; a++)
        if ((!held || !held[v[a]]) && mark[v[a]] != stamp) mark[v[a]] = stamp, stack[top++] = v[a];
    while (top) {
        int u = stack[--top];
        h += d->cost[u];
        for (int q = d->in_off[u]; q < d->in_off[u + 1]; q++) {
            int w = d->in[q];
            if ((!held || !held[w]) && mark[w] != stamp) mark[w] = stamp, stack[top++] = w;
        }
    }
    return h;
}

/* The estimate from bitsets: anc[u] is u with the ancestors reached from it
 * through outputs not held (empty for a held u: the walk never enters one),
 * so a set's estimate is the compute of the union of anc over its nodes, the
 * same set as dag_cone_cost's walk, in words operations a node instead of a walk
 * of the graph per child (the walk was a quarter of the local improvement's
 * time on MOCCASIN's n250 at 0.6 of its peak, perf). */
static uint64_t *free_ancestors(const Dag *d, const int *held, int words) {
    uint64_t *anc = acc_xcalloc((size_t)d->n * (size_t)words, sizeof(uint64_t));
    for (int u = 0; u < d->n; u++) { /* inputs first: the ids are topological */
        if (held && held[u]) continue;
        uint64_t *au = anc + (size_t)u * (size_t)words;
        au[u / 64] |= 1ull << (u % 64);
        for (int q = d->in_off[u]; q < d->in_off[u + 1]; q++)
            for (int k = 0; k < words; k++) au[k] |= anc[(size_t)d->in[q] * (size_t)words + (size_t)k];
    }
    return anc;
}

static double estimate_bits(const Dag *d, const uint64_t *anc, const uint64_t *w, int words, uint64_t *un) {
    memset(un, 0, (size_t)words * sizeof(uint64_t));
    for (int k = 0; k < words; k++)
        for (uint64_t b = w[k]; b; b &= b - 1) {
            const uint64_t *au = anc + (size_t)(64 * k + __builtin_ctzll(b)) * (size_t)words;
            for (int j = 0; j < words; j++) un[j] |= au[j];
        }
    double h = 0;
    for (int k = 0; k < words; k++)
        for (uint64_t b = un[k]; b; b &= b - 1) h += d->cost[64 * k + __builtin_ctzll(b)];
    return h;
}

int dag_pebble_cheapest(const Dag *d, int64_t budget, int x, const int *held, double upper, int max_states,
                        double deadline, int **seq, int *n_seq, double *cost) {
    *seq = NULL, *n_seq = 0, *cost = 0;
    int n = d->n;
    if (own_event_mem(d, held, x) > budget) return DAG_PEBBLE_NONE;
    Peb p = {.d = d, .held = held, .words = (d->n + 63) / 64};
    p.scratch = acc_xcalloc(2 * (size_t)p.words, sizeof(uint64_t));
    uint64_t *pw = p.scratch + p.words; /* the state expanded: its set (adding states may move p.bits) */
    p.hash_cap = 1024;
    p.hash = acc_xcalloc(p.hash_cap, sizeof(uint64_t));
    int *cur = acc_xcalloc((size_t)n + 1, sizeof(int)), *tmp = acc_xcalloc((size_t)n + 1, sizeof(int));
    int *mark = acc_xcalloc((size_t)n, sizeof(int)), *dfs = acc_xcalloc((size_t)n, sizeof(int));
    /* the descendants for the free peels; past DESC_MAX_BYTES (n of about 11,000) none are taken */
    uint64_t *desc = (size_t)n * (size_t)p.words * sizeof(uint64_t) <= DESC_MAX_BYTES ? descendants(d, p.words) : NULL;
    uint64_t *anc = desc ? free_ancestors(d, held, p.words) : NULL,
             *un = acc_xcalloc((size_t)p.words, sizeof(uint64_t));
    VEC(double) g = {0}, hv = {0}; /* per state: the least compute to reach it, its estimate */
    VEC(char) closed = {0};
    PItem *heap = NULL;
    int n_heap = 0, cap_heap = 0, added, n_new, goal = -1, status = DAG_PEBBLE_STOPPED, stamp = 0;
    bool stopped = false;
    int len0 = d->in_off[x + 1] - d->in_off[x];
    add_inputs(&p, x);
    double h0 = dag_cone_cost(d, held, d->in + d->in_off[x], len0, mark, dfs, ++stamp);
    VEC_PUSH(g, 0.0);
    VEC_PUSH(hv, h0);
    VEC_PUSH(closed, 0);
    if (h0 < upper) heap_push(&heap, &n_heap, &cap_heap, (PItem){h0, 0, 0});
    for (int iter = 0; n_heap; iter++) {
        size_t bytes = p.bits.n * sizeof(uint64_t) +
                       (size_t)p.st.n * (sizeof(PState) + 2 * sizeof(double) + 1 + 2 * sizeof(int)) +
                       (size_t)cap_heap * sizeof(PItem);
        if (p.st.n >= max_states || bytes > CHEAPEST_MAX_BYTES || ((iter & 15) == 0 && acc_now_s() > deadline)) {
            stopped = true;
            break;
        }
        PItem it = heap_pop(heap, &n_heap);
        if (closed.v[it.si] || it.g > g.v[it.si]) continue; /* reached again more cheaply */
        closed.v[it.si] = 1;
        int len = decode(&p, it.si, cur);
        memcpy(pw, p.bits.v + (size_t)it.si * (size_t)p.words, (size_t)p.words * sizeof(uint64_t));
        if (within_held(&p, cur, len)) {
            goal = it.si;
            break;
        }
        int64_t mt = state_mem(d, held, cur, len);
        int fr = desc ? free_peel(&p, it.si, cur, len, desc) : -1;
        for (int a = 0; a < len; a++) {
            int f = cur[a];
            if (held && held[f] == 2) continue; /* pinned: held throughout, never recomputed */
            if (fr >= 0 && f != fr) continue;   /* a free peel that no later peel reads: the only child */
            if (mt + peel_extra(d, held, pw, f, &n_new) > budget) continue;
            double gc = it.g + d->cost[f];
            peel_set(d, pw, p.words, f, p.scratch);
            int si = find_or_add(&p, p.scratch, len - 1 + n_new, it.si, f, &added);
            if (added >= 0) {
                double hc = anc ? estimate_bits(d, anc, p.scratch, p.words, un)
                                : dag_cone_cost(d, held, tmp, decode_set(p.scratch, p.words, tmp), mark, dfs, ++stamp),
                       fc = gc + hc;
                VEC_PUSH(g, gc);
                VEC_PUSH(hv, hc);
                VEC_PUSH(closed, 0);
                if (fc < upper) heap_push(&heap, &n_heap, &cap_heap, (PItem){fc, gc, added});
            } else if (!closed.v[si] && gc < g.v[si]) {
                double fc = gc + hv.v[si];
                g.v[si] = gc, p.st.v[si].parent = it.si, p.st.v[si].peeled = f;
                if (fc < upper) heap_push(&heap, &n_heap, &cap_heap, (PItem){fc, gc, si});
            }
        }
    }
    if (goal >= 0) {
        status = DAG_PEBBLE_FOUND;
        write_path(d, &p, goal, seq, n_seq, cost);
    } else if (!stopped) {
        status = DAG_PEBBLE_NONE;
    }
    VEC_FREE(g);
    VEC_FREE(hv);
    VEC_FREE(closed);
    VEC_FREE(p.st);
    VEC_FREE(p.bits);
    free(heap), free(p.scratch), free(cur), free(tmp), free(mark), free(dfs), free(p.hash), free(desc), free(anc),
        free(un);
    return status;
}
