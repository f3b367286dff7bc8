/* alloc_search.c - exact static allocation: does every buffer fit below a
 * capacity? A depth-first branch-and-bound in the spirit of MiniMalloc
 * (Moffitt, ASPLOS 2023), written from the paper's ideas, not its code.
 *
 * Time is cut into sections (between consecutive interval endpoints); a
 * buffer covers a run of sections. The search only builds canonical
 * solutions: every buffer rests at offset 0 or on a buffer below it (any
 * solution can be pushed down into one). Its state is a skyline, floor[s]
 * per section: nothing still to place goes below it. A node takes a segment,
 * a run of sections at one floor m whose neighbours are higher (or have
 * nothing left to place), the one with the least slack (capacity - floor -
 * bytes still to place), and branches:
 *   - place one of the unplaced buffers that lie inside the segment at m
 *     (value order: touching an edge of the segment with its top flush with
 *     the neighbour there first, then the run's order of buffers);
 *   - waste: nothing more starts at m here; the segment rises to its lower
 *     neighbour reached by an unplaced buffer (the lowest buffer placed there
 *     later must cross the segment's edge).
 * Pruning and inference:
 *   - lo(b), the highest floor under buffer b, is where b goes at the
 *     lowest; each section's floor rises to the lowest lo of the buffers over
 *     it (to a fixpoint), and the node dies when some lo(b) + size(b) or some
 *     floor + bytes still to place over the section exceeds the capacity;
 *   - independence: when no unplaced buffer crosses some section boundaries,
 *     the groups between them are solved one after the other, and a group
 *     that cannot be placed fails the node without trying the others'
 *     alternatives;
 *   - dominance: waste is skipped when a buffer inside the segment would fit
 *     in the wasted space (moving it down gives a solution of a placing
 *     branch); refuted states (placed buffers and floors, hashed) are
 *     remembered and not searched again;
 *   - symmetry: identical buffers are placed in index order, and a buffer
 *     refuted at a floor is not placed at that floor again in its siblings'
 *     subtrees (placements at one floor commute).
 * Restarts: the search is restarted with budgets following the Luby sequence,
 * first with four fixed orders of the buffers (lifetime, size, area, start),
 * then with seeded random perturbations of them; refuted states carry over.
 * Complete: INFEASIBLE is a proof (up to a 64-bit hash collision in the table
 * of refuted states, which can only hide a solution, never make a wrong one).
 * Deterministic: the budget counts work units (sections scanned, buffers
 * looked at, tree operations); the wall-clock deadline is only a safety net.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_search.h"

#define INF INT64_MAX

#define N_ORDERS 4 /* fixed value orders; one more slot holds the random ones */
#define MAX_NESTING 1000

typedef struct {
    int sa, sb;           /* the segment */
    int64_t m, m2;        /* its floor; the level waste raises it to (INF: none) */
    int cbeg, cend, next; /* candidates in the candidate stack */
    int act;              /* -1 nothing applied, -2 waste applied, else the placed buffer */
    int ban_top;          /* ban stack height when the frame was made */
    int raise_top;        /* raise stack height when the frame was made */
    bool waste_ok;
    uint64_t key; /* the state at the node: placed buffers and floors of its range */
} Frame;

typedef struct {
    int item;
    int64_t old;
} Ban;

typedef struct {
    int sec;
    int64_t old;
} Raise;

struct AllocSearch {
    Pool mem; /* this struct and every array of a fixed size (alloc_search_free frees them in one call) */
    int n, S;
    const AllocItem *items;
    int *s0, *s1;           /* [n] sections covered: s0..s1 */
    int *ranks;             /* [N_ORDERS + 1][n] position in each value order */
    const int *rank;        /* the order of the current run */
    int *prev_same;         /* [n] the previous identical buffer, -1 */
    int *start_beg, *start; /* buffers by first section (CSR) */
    int64_t *rem0;          /* [S] bytes over each section */
    int *cross0;            /* [S] buffers crossing the boundary s | s+1 */
    /* search state */
    int64_t *floor, *rem; /* [S] */
    int *cross;           /* [S] */
    int64_t *off, *ban;   /* [n] */
    bool *placed;         /* [n] */
    int *score;           /* [n] fit of each candidate (lower first) */
    int64_t *seg;         /* [4 * 2^ceil(log2 S)] segment trees of infer */
    int64_t *tmp;         /* [2n] */
    uint64_t *zob;        /* [n] random keys of the buffers */
    uint64_t *memo;       /* refuted states (0: empty slot) */
    size_t memo_mask;
    int64_t cap_now;
    Frame *frames;
    int depth, frames_cap, nesting; /* frames and the three below grow: from the heap */
    int *cand;
    int cand_n, cand_cap;
    Ban *bans;
    int bans_n, bans_cap;
    Raise *raises;
    int raises_n, raises_cap;
};


static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static int64_t round_up(int64_t x, int64_t a) { return a > 1 ? (x + a - 1) / a * a : x; }
static int64_t align_of(const AllocItem *x) { return x->alignment > 1 ? x->alignment : 1; }

static const AllocItem *sort_items;
static int sort_order;
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
/* value orders: 0 longest lifetime, then largest; 1 largest, then longest;
 * 2 largest size x lifetime; 3 earliest start, then largest; ties by index */
static int cmp_value(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    const AllocItem *x = &sort_items[i], *y = &sort_items[j];
    int64_t lx = x->upper - x->lower, ly = y->upper - y->lower;
    if (sort_order == 2) {
        double ax = (double)x->size * (double)lx, ay = (double)y->size * (double)ly;
        if (ax != ay) return ax > ay ? -1 : 1;
    }
    if (sort_order == 0 && lx != ly) return lx > ly ? -1 : 1;
    if (sort_order == 3 && x->lower != y->lower) return x->lower < y->lower ? -1 : 1;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    if (lx != ly) return lx > ly ? -1 : 1;
    return i - j;
}
static int cmp_identity(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    const AllocItem *x = &sort_items[i], *y = &sort_items[j];
    if (x->lower != y->lower) return x->lower < y->lower ? -1 : 1;
    if (x->upper != y->upper) return x->upper < y->upper ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    if (align_of(x) != align_of(y)) return align_of(x) < align_of(y) ? -1 : 1;
    return i - j;
}

static int find_endpoint(const int64_t *e, int k, int64_t v) {
    int lo = 0, hi = k - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (e[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

AllocSearch *alloc_search_new(const AllocItem *items, int n) {
    Pool mem = {0};
    AllocSearch *s = pool_alloc(&mem, sizeof *s); /* zeroed */
    s->mem = mem;
    s->n = n;
    s->items = items;
    size_t nn = (size_t)(n > 0 ? n : 1);
    int64_t *e = pool_alloc(&s->mem, 2 * nn * sizeof(int64_t));
    for (int i = 0; i < n; i++) e[2 * i] = items[i].lower, e[2 * i + 1] = items[i].upper;
    qsort(e, 2 * (size_t)n, sizeof(int64_t), cmp_i64);
    int k = 0;
    for (int i = 0; i < 2 * n; i++)
        if (!k || e[i] != e[k - 1]) e[k++] = e[i];
    s->S = k > 1 ? k - 1 : 1;
    size_t S = (size_t)s->S;
    s->s0 = pool_alloc(&s->mem, nn * sizeof(int));
    s->s1 = pool_alloc(&s->mem, nn * sizeof(int));
    for (int i = 0; i < n; i++) {
        s->s0[i] = find_endpoint(e, k, items[i].lower);
        s->s1[i] = find_endpoint(e, k, items[i].upper) - 1;
    }

    int *ord = pool_alloc(&s->mem, nn * sizeof(int));
    s->ranks = pool_alloc(&s->mem, (N_ORDERS + 1) * nn * sizeof(int));
    sort_items = items;
    for (int o = 0; o < N_ORDERS; o++) {
        for (int i = 0; i < n; i++) ord[i] = i;
        sort_order = o;
        qsort(ord, (size_t)n, sizeof(int), cmp_value);
        for (int r = 0; r < n; r++) s->ranks[(size_t)o * nn + (size_t)ord[r]] = r;
    }
    s->rank = s->ranks;
    for (int i = 0; i < n; i++) ord[i] = i;
    qsort(ord, (size_t)n, sizeof(int), cmp_identity);
    sort_items = NULL;
    s->prev_same = pool_alloc(&s->mem, nn * sizeof(int));
    for (int r = 0; r < n; r++) {
        int i = ord[r], p = r ? ord[r - 1] : -1;
        const AllocItem *x = &items[i];
        bool same = p >= 0 && items[p].lower == x->lower && items[p].upper == x->upper && items[p].size == x->size &&
                    align_of(&items[p]) == align_of(x);
        s->prev_same[i] = same ? p : -1;
    }

    s->start_beg = pool_alloc(&s->mem, (S + 1) * sizeof(int));
    memset(s->start_beg, 0, (S + 1) * sizeof(int));
    for (int i = 0; i < n; i++) s->start_beg[s->s0[i] + 1]++;
    for (size_t t = 0; t < S; t++) s->start_beg[t + 1] += s->start_beg[t];
    s->start = pool_alloc(&s->mem, nn * sizeof(int));
    int *fill = pool_alloc(&s->mem, S * sizeof(int));
    memcpy(fill, s->start_beg, S * sizeof(int));
    for (int i = 0; i < n; i++) s->start[fill[s->s0[i]]++] = i;

    s->rem0 = pool_alloc(&s->mem, S * sizeof(int64_t));
    s->cross0 = pool_alloc(&s->mem, S * sizeof(int));
    int64_t *drem = pool_alloc(&s->mem, (S + 1) * sizeof(int64_t));
    int *dcross = pool_alloc(&s->mem, (S + 1) * sizeof(int));
    memset(drem, 0, (S + 1) * sizeof(int64_t));
    memset(dcross, 0, (S + 1) * sizeof(int));
    for (int i = 0; i < n; i++) {
        drem[s->s0[i]] += items[i].size, drem[s->s1[i] + 1] -= items[i].size;
        dcross[s->s0[i]]++, dcross[s->s1[i]]--;
    }
    int64_t run = 0;
    int runc = 0;
    for (size_t t = 0; t < S; t++) {
        run += drem[t], runc += dcross[t];
        s->rem0[t] = run;
        s->cross0[t] = runc;
    }

    s->floor = pool_alloc(&s->mem, S * sizeof(int64_t));
    s->rem = pool_alloc(&s->mem, S * sizeof(int64_t));
    s->cross = pool_alloc(&s->mem, S * sizeof(int));
    s->off = pool_alloc(&s->mem, nn * sizeof(int64_t));
    s->ban = pool_alloc(&s->mem, nn * sizeof(int64_t));
    s->placed = pool_alloc(&s->mem, nn * sizeof(bool));
    s->zob = pool_alloc(&s->mem, nn * sizeof(uint64_t));
    for (int i = 0; i < n; i++) s->zob[i] = mix64((uint64_t)i + 0x1234567);
    size_t want = 1;
    while (want < 64 * nn && want < ((size_t)1 << 20)) want *= 2;
    s->memo = pool_alloc(&s->mem, want * sizeof(uint64_t));
    s->memo_mask = want - 1;
    size_t P = 1;
    while (P < S) P *= 2;
    s->seg = pool_alloc(&s->mem, 4 * P * sizeof(int64_t));
    s->tmp = pool_alloc(&s->mem, 2 * nn * sizeof(int64_t));
    s->score = pool_alloc(&s->mem, nn * sizeof(int));
    memset(s->score, 0, nn * sizeof(int));
    return s;
}

void alloc_search_free(AllocSearch *s) {
    if (!s) return;
    free(s->frames), free(s->cand), free(s->bans), free(s->raises);
    Pool mem = s->mem; /* s itself lies in it */
    pool_free(&mem);
}

/* ---- state changes, all undone in reverse order --------------------------- */

static void place(AllocSearch *s, int i, int64_t at, SearchBudget *b) {
    int64_t size = s->items[i].size;
    for (int t = s->s0[i]; t <= s->s1[i]; t++) s->floor[t] = at + size, s->rem[t] -= size;
    for (int t = s->s0[i]; t < s->s1[i]; t++) s->cross[t]--;
    s->placed[i] = true;
    s->off[i] = at;
    b->work += s->s1[i] - s->s0[i] + 1;
}

/* floor: the level of the buffer's sections before it was placed */
static void unplace(AllocSearch *s, int i, int64_t floor) {
    int64_t size = s->items[i].size;
    for (int t = s->s0[i]; t <= s->s1[i]; t++) s->floor[t] = floor, s->rem[t] += size;
    for (int t = s->s0[i]; t < s->s1[i]; t++) s->cross[t]++;
    s->placed[i] = false;
}

static void raise_floor(AllocSearch *s, int t, int64_t v) {
    if (s->raises_n == s->raises_cap) {
        s->raises_cap = s->raises_cap ? 2 * s->raises_cap : 256;
        s->raises = acc_xrealloc(s->raises, (size_t)s->raises_cap * sizeof(Raise));
    }
    s->raises[s->raises_n++] = (Raise){t, s->floor[t]};
    s->floor[t] = v;
}

static void push_ban(AllocSearch *s, int i, int64_t at) {
    if (s->bans_n == s->bans_cap) {
        s->bans_cap = s->bans_cap ? 2 * s->bans_cap : 256;
        s->bans = acc_xrealloc(s->bans, (size_t)s->bans_cap * sizeof(Ban));
    }
    s->bans[s->bans_n++] = (Ban){i, s->ban[i]};
    s->ban[i] = at;
}

static void push_cand(AllocSearch *s, int i) {
    if (s->cand_n == s->cand_cap) {
        s->cand_cap = s->cand_cap ? 2 * s->cand_cap : 256;
        s->cand = acc_xrealloc(s->cand, (size_t)s->cand_cap * sizeof(int));
    }
    s->cand[s->cand_n++] = i;
}

static int push_frame(AllocSearch *s) {
    if (s->depth == s->frames_cap) {
        s->frames_cap = s->frames_cap ? 2 * s->frames_cap : 256;
        s->frames = acc_xrealloc(s->frames, (size_t)s->frames_cap * sizeof(Frame));
    }
    Frame *f = &s->frames[s->depth];
    memset(f, 0, sizeof *f);
    f->act = -1;
    f->m2 = INF;
    f->ban_top = s->bans_n;
    f->raise_top = s->raises_n;
    f->cbeg = f->cend = f->next = s->cand_n;
    return s->depth++;
}

/* Undo the top frame's action, then drop the frame. */
static void pop_frame(AllocSearch *s) {
    Frame *f = &s->frames[s->depth - 1];
    if (f->act >= 0) unplace(s, f->act, f->m);
    else if (f->act == -2)
        for (int t = f->sa; t <= f->sb; t++) s->floor[t] = f->m;
    while (s->bans_n > f->ban_top) {
        Ban *x = &s->bans[--s->bans_n];
        s->ban[x->item] = x->old;
    }
    while (s->raises_n > f->raise_top) {
        Raise *x = &s->raises[--s->raises_n];
        s->floor[x->sec] = x->old;
    }
    s->cand_n = f->cbeg;
    s->depth--;
}

/* ---- inference ------------------------------------------------------------- */

/* No unplaced buffer goes below the highest floor of its sections (its lo);
 * no section is filled below the lowest lo of the buffers over it. Raise the
 * floors of [ra, rb] to that until nothing changes; false if a buffer or a
 * section then cannot hold what is left. Range maxima and range minima go
 * through segment trees over [ra, rb]: O(buffers x log sections) a round. */
static bool infer(AllocSearch *s, int ra, int rb, int64_t cap, SearchBudget *b) {
    int len = rb - ra + 1, P = 1, lg = 0;
    while (P < len) P *= 2, lg++;
    int64_t *mx = s->seg, *mn = s->seg + 2 * (size_t)P;
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < P; k++) mx[P + k] = k < len ? s->floor[ra + k] : 0, mn[P + k] = INF;
        for (int k = P - 1; k >= 1; k--) mx[k] = mx[2 * k] > mx[2 * k + 1] ? mx[2 * k] : mx[2 * k + 1], mn[k] = INF;
        int n_items = 0;
        for (int k = s->start_beg[ra]; k < s->start_beg[rb + 1]; k++) {
            int i = s->start[k];
            if (s->placed[i]) continue;
            n_items++;
            int64_t lo = 0;
            for (int l = s->s0[i] - ra + P, r = s->s1[i] - ra + P + 1; l < r; l >>= 1, r >>= 1) {
                if (l & 1) lo = mx[l] > lo ? mx[l] : lo, l++;
                if (r & 1) --r, lo = mx[r] > lo ? mx[r] : lo;
            }
            if (lo > cap - s->items[i].size) return false;
            for (int l = s->s0[i] - ra + P, r = s->s1[i] - ra + P + 1; l < r; l >>= 1, r >>= 1) {
                if (l & 1) mn[l] = lo < mn[l] ? lo : mn[l], l++;
                if (r & 1) --r, mn[r] = lo < mn[r] ? lo : mn[r];
            }
        }
        for (int k = 1; k < P; k++) {
            if (mn[k] < mn[2 * k]) mn[2 * k] = mn[k];
            if (mn[k] < mn[2 * k + 1]) mn[2 * k + 1] = mn[k];
        }
        b->work += 3 * P + 4 * (int64_t)n_items * (lg + 1);
        bool changed = false;
        for (int t = ra; t <= rb; t++) {
            if (!s->rem[t]) continue;
            int64_t eff = mn[P + t - ra];
            if (eff > cap - s->rem[t]) return false;
            if (eff > s->floor[t]) raise_floor(s, t, eff), changed = true;
        }
        if (!changed) break;
    }
    return true;
}

/* ---- refuted states ------------------------------------------------------------ */

/* The subproblem of a node: which buffers of its range are placed and the
 * floors of the sections still to fill (the capacity is fixed per run). */
static uint64_t state_key(const AllocSearch *s, int ra, int rb, SearchBudget *b) {
    uint64_t h = mix64(((uint64_t)(uint32_t)ra << 32) ^ (uint32_t)rb ^ (uint64_t)s->cap_now * 0x9E3779B97F4A7C15ull);
    for (int k = s->start_beg[ra]; k < s->start_beg[rb + 1]; k++)
        if (s->placed[s->start[k]]) h ^= s->zob[s->start[k]];
    for (int t = ra; t <= rb; t++)
        if (s->rem[t]) h += mix64(((uint64_t)t << 40) ^ (uint64_t)s->floor[t]);
    b->work += (s->start_beg[rb + 1] - s->start_beg[ra]) + (rb - ra + 1);
    return h ? h : 1;
}

static bool memo_has(const AllocSearch *s, uint64_t key) {
    for (size_t j = 0, at = key & s->memo_mask; j < 8; j++, at = (at + 1) & s->memo_mask) {
        if (s->memo[at] == key) return true;
        if (!s->memo[at]) return false;
    }
    return false;
}

static void memo_add(AllocSearch *s, uint64_t key) {
    size_t at = key & s->memo_mask;
    for (size_t j = 0; j < 8; j++, at = (at + 1) & s->memo_mask)
        if (!s->memo[at] || s->memo[at] == key) {
            s->memo[at] = key;
            return;
        }
    s->memo[key & s->memo_mask] = key; /* full run of slots: replace the first */
}

/* ---- the search ------------------------------------------------------------ */

enum { NODE_BRANCH = 3 };

static int cmp_rank_of(const AllocSearch *s, int i, int j) {
    if (s->score[i] != s->score[j]) return s->score[i] - s->score[j];
    return s->rank[i] - s->rank[j];
}

/* by score, then rank (a total order): insertion sort for short lists, a
 * merge sort for the long ones of large instances (was quadratic there) */
static void sort_cands(AllocSearch *s, int beg, int end) {
    int n = end - beg, *a = s->cand + beg;
    if (n <= 32) {
        for (int k = 1; k < n; k++) {
            int x = a[k], j = k;
            while (j > 0 && cmp_rank_of(s, a[j - 1], x) > 0) a[j] = a[j - 1], j--;
            a[j] = x;
        }
        return;
    }
    int *tmp = acc_xrealloc(NULL, (size_t)n * sizeof(int)), *src = a, *dst = tmp;
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = cmp_rank_of(s, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        int *t = src;
        src = dst, dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof(int));
    free(tmp);
}

static int dfs(AllocSearch *s, int ra, int rb, int64_t cap, SearchBudget *b);

/* A new node over [ra, rb] (which has unplaced buffers): push its frame,
 * infer, then either solve independent groups one by one (SEARCH_FOUND,
 * SEARCH_LIMIT, or a frame without branches) or set up the branches on the
 * lowest segment (NODE_BRANCH). */
static int push_node(AllocSearch *s, int ra, int rb, int64_t cap, SearchBudget *b) {
    /* a node over a large range costs milliseconds: the deadline first */
    if (b->time_out || (b->deadline > 0 && acc_now_s() > b->deadline)) {
        b->time_out = true;
        return SEARCH_LIMIT;
    }
    int fi = push_frame(s);
    uint64_t key = state_key(s, ra, rb, b);
    s->frames[fi].key = key;
    if (memo_has(s, key)) {
        s->frames[fi].key = 0;
        return NODE_BRANCH; /* refuted before: dead */
    }
    if (!infer(s, ra, rb, cap, b)) return NODE_BRANCH; /* no branches: dead */

    /* independent groups: runs of sections joined by unplaced buffers */
    int n_groups = 0;
    for (int t = ra; t <= rb; t++)
        if (s->rem[t] && !(t > ra && s->rem[t - 1] && s->cross[t - 1] > 0)) n_groups++;
    b->work += rb - ra + 1;
    if (n_groups > 1 && s->nesting < MAX_NESTING) {
        s->nesting++;
        int st = SEARCH_FOUND;
        for (int t = ra; t <= rb && st == SEARCH_FOUND; t++) {
            if (!s->rem[t]) continue;
            int ga = t;
            while (t < rb && s->rem[t + 1] && s->cross[t] > 0) t++;
            st = dfs(s, ga, t, cap, b);
        }
        s->nesting--;
        if (st == SEARCH_INFEASIBLE) { /* one group cannot be placed whatever the others do */
            while (s->depth > fi + 1) pop_frame(s);
            return NODE_BRANCH; /* frame fi has no branches */
        }
        return st;
    }

    Frame *f = &s->frames[fi];
    int64_t m = INF;
    int sa = -1, sb = -1;
    { /* the local-minimum segment with the least slack */
        int64_t best_slack = INF;
        for (int t = ra; t <= rb; t++) {
            if (!s->rem[t]) continue;
            int u = t;
            int64_t fl = s->floor[t], slack = cap - fl - s->rem[t];
            while (u < rb && s->rem[u + 1] && s->floor[u + 1] == fl) {
                u++;
                if (cap - fl - s->rem[u] < slack) slack = cap - fl - s->rem[u];
            }
            bool left_ok = t == ra || !s->rem[t - 1] || s->floor[t - 1] > fl;
            bool right_ok = u == rb || !s->rem[u + 1] || s->floor[u + 1] > fl;
            if (left_ok && right_ok && (slack < best_slack || (slack == best_slack && fl < m)))
                best_slack = slack, m = fl, sa = t, sb = u;
            t = u;
        }
    }
    b->work += rb - ra + 1;
    int64_t m2 = INF;
    if (sa > ra && s->cross[sa - 1] > 0) m2 = s->floor[sa - 1];
    if (sb < rb && s->cross[sb] > 0 && s->floor[sb + 1] < m2) m2 = s->floor[sb + 1];
    bool waste_ok = m2 < INF;
    for (int t = sa; waste_ok && t <= sb; t++)
        if (m2 > cap - s->rem[t]) waste_ok = false;
    f->sa = sa, f->sb = sb, f->m = m, f->m2 = m2;
    for (int t = sa; t <= sb; t++) {
        for (int k = s->start_beg[t]; k < s->start_beg[t + 1]; k++) {
            int i = s->start[k];
            b->work++;
            if (s->placed[i] || s->s1[i] > sb) continue;
            const AllocItem *x = &s->items[i];
            int64_t at = round_up(m, x->alignment);
            if (m2 < INF && at <= m2 - x->size) waste_ok = false; /* dominated */
            if (s->prev_same[i] >= 0 && !s->placed[s->prev_same[i]]) continue;
            if (s->ban[i] == at || (m2 < INF && at >= m2)) continue;
            if (at != m) { /* an alignment gap raises the floor: recheck the capacity */
                bool fits = true;
                for (int u = s->s0[i]; fits && u <= s->s1[i]; u++) fits = at <= cap - s->rem[u];
                b->work += s->s1[i] - s->s0[i] + 1;
                if (!fits) continue;
            }
            push_cand(s, i);
        }
    }
    f = &s->frames[fi];
    f->cend = s->cand_n;
    f->waste_ok = waste_ok;
    /* value order: the fit first (touching an edge of the segment, with the
     * top flush with the neighbour there), then the run's order */
    for (int k = f->cbeg; k < f->cend; k++) {
        int i = s->cand[k];
        int64_t top = round_up(m, s->items[i].alignment) + s->items[i].size;
        int sc = 0;
        if (s->s0[i] == sa) sc += 1 + 2 * (sa > ra && s->rem[sa - 1] && s->floor[sa - 1] == top);
        if (s->s1[i] == sb) sc += 1 + 2 * (sb < rb && s->rem[sb + 1] && s->floor[sb + 1] == top);
        s->score[i] = -sc;
    }
    sort_cands(s, f->cbeg, f->cend);
    return NODE_BRANCH;
}

static bool out_of_budget(SearchBudget *b) {
    if (b->work >= b->work_limit) return true;
    /* the clock at every node: on large instances one node takes milliseconds */
    if (b->deadline > 0 && acc_now_s() > b->deadline) b->time_out = true;
    return b->time_out;
}

/* Place every unplaced buffer of [ra, rb] (a range no unplaced buffer
 * crosses out of). SEARCH_FOUND leaves them placed, with the frames that did
 * it on the stack; SEARCH_INFEASIBLE leaves the state as it found it. */
static int dfs(AllocSearch *s, int ra, int rb, int64_t cap, SearchBudget *b) {
    int base = s->depth, left = 0;
    for (int k = s->start_beg[ra]; k < s->start_beg[rb + 1]; k++) left += !s->placed[s->start[k]];
    if (!left) return SEARCH_FOUND;
    int st = push_node(s, ra, rb, cap, b);
    if (st != NODE_BRANCH) return st;
    while (s->depth > base) {
        Frame *f = &s->frames[s->depth - 1];
        if (f->act >= 0) { /* the subtree below this placement failed */
            int i = f->act;
            unplace(s, i, f->m);
            left++;
            f->act = -1;
            if (s->off[i] == f->m) push_ban(s, i, f->m); /* not at this floor in the siblings' subtrees */
        } else if (f->act == -2) {
            for (int t = f->sa; t <= f->sb; t++) s->floor[t] = f->m;
            f->act = -1;
            f->waste_ok = false;
        }
        if (f->next < f->cend) {
            int i = s->cand[f->next++];
            place(s, i, round_up(f->m, s->items[i].alignment), b);
            left--;
            f->act = i;
        } else if (f->waste_ok) {
            for (int t = f->sa; t <= f->sb; t++) s->floor[t] = f->m2;
            b->work += f->sb - f->sa + 1;
            f->act = -2;
        } else { /* exhausted: the node's state has no solution */
            if (f->key) memo_add(s, f->key);
            pop_frame(s);
            continue;
        }
        b->nodes++;
        if (out_of_budget(b)) return SEARCH_LIMIT;
        if (!left) return SEARCH_FOUND;
        st = push_node(s, ra, rb, cap, b);
        if (st != NODE_BRANCH) return st;
    }
    return SEARCH_INFEASIBLE;
}

static void reset(AllocSearch *s) {
    for (int t = 0; t < s->S; t++) s->floor[t] = 0, s->rem[t] = s->rem0[t], s->cross[t] = s->cross0[t];
    for (int i = 0; i < s->n; i++) s->placed[i] = false, s->ban[i] = -1;
    s->depth = s->nesting = s->cand_n = s->bans_n = s->raises_n = 0;
}

/* 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ... */
static int64_t luby(int64_t i) {
    for (;;) {
        int64_t k = 1;
        while ((INT64_C(1) << k) - 1 < i) k++;
        if ((INT64_C(1) << k) - 1 == i) return INT64_C(1) << (k - 1);
        i -= (INT64_C(1) << (k - 1)) - 1;
    }
}

static int cmp_pair(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}
static void sort_tmp_pairs(int64_t *t, int n) { qsort(t, (size_t)n, 2 * sizeof(int64_t), cmp_pair); }

SearchStatus alloc_search_fit(AllocSearch *s, int64_t capacity, int64_t *offsets, SearchBudget *b) {
    if (!s->n) return SEARCH_FOUND;
    s->cap_now = capacity;
    memset(s->memo, 0, (s->memo_mask + 1) * sizeof(uint64_t));
    for (int t = 0; t < s->S; t++)
        if (s->rem0[t] > capacity) return SEARCH_INFEASIBLE;
    /* restarts (Luby sequence of budgets): the fixed value orders first, then
     * seeded random perturbations of them; refuted states stay refuted */
    int64_t limit = b->work_limit, unit = 0;
    for (int i = 0; i < s->n; i++) unit += 4 * (s->s1[i] - s->s0[i] + 1);
    if (unit < 10000) unit = 10000;
    unit *= 100;
    SearchStatus st = SEARCH_LIMIT;
    int *rnd = s->ranks + (size_t)N_ORDERS * (size_t)s->n;
    uint64_t seed = 0x5EED;
    for (int r = 0; st == SEARCH_LIMIT && b->work < limit && !b->time_out; r++) {
        int64_t slice = unit * luby(r + 1);
        if (r < N_ORDERS) {
            s->rank = s->ranks + (size_t)r * (size_t)s->n;
        } else {
            const int *base = s->ranks + (size_t)(r % N_ORDERS) * (size_t)s->n;
            int64_t spread = s->n / 4 + 1;
            for (int i = 0; i < s->n; i++) {
                seed = mix64(seed);
                s->tmp[2 * i] = (int64_t)base[i] + (int64_t)(seed % (uint64_t)spread);
                s->tmp[2 * i + 1] = i;
            }
            sort_tmp_pairs(s->tmp, s->n);
            for (int k = 0; k < s->n; k++) rnd[s->tmp[2 * k + 1]] = k;
            s->rank = rnd;
        }
        b->work_limit = limit - b->work > slice ? b->work + slice : limit;
        reset(s);
        st = (SearchStatus)dfs(s, 0, s->S - 1, capacity, b);
    }
    b->work_limit = limit;
    if (st == SEARCH_FOUND)
        for (int i = 0; i < s->n; i++) offsets[i] = s->off[i];
    return st;
}
