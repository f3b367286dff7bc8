/* alloc_search.c - exact static allocation: does every buffer fit below a
 * capacity? A depth-first branch-and-bound in the spirit of MiniMalloc
 * (Moffitt, ASPLOS 2023), written from the paper's ideas.
 *
 * Time is cut into sections (between consecutive interval endpoints); a
 * buffer covers a run of sections. Buffers whose sections are not linked by
 * any buffer crossing a section boundary are independent components, solved
 * one after the other. The search only builds canonical solutions: every
 * buffer rests at offset 0 or on a buffer below it (any solution can be pushed
 * down into one). Its state is a skyline, floor[s] per section: nothing still
 * to place goes below it. At each node the lowest section still to be filled
 * and the run of sections at that floor (the segment) are taken, and the
 * branches are:
 *   - place one of the unplaced buffers that lie inside the segment at the
 *     floor (in a fixed value order: longest lifetime, then largest);
 *   - waste: nothing is placed at this floor here; the segment rises to its
 *     lower neighbour reached by some unplaced buffer (the first buffer placed
 *     there must cross the segment's edge).
 * Pruning:
 *   - capacity inference: floor[s] + (bytes still to place over s) <= cap
 *     for every section (placements keep the sum, waste raises it);
 *   - dominance: waste is skipped when some buffer inside the segment would
 *     fit entirely in the wasted space (moving it down gives a solution of a
 *     placing branch);
 *   - symmetry: identical buffers are placed in index order, and a buffer
 *     whose placement at a floor was refuted is not placed at that floor
 *     again in its siblings' subtrees (placements at one floor commute).
 * It is complete: INFEASIBLE is a proof. Deterministic: the budget counts
 * work units (sections scanned, buffers looked at, sections updated); the
 * wall-clock deadline is only a safety net.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_search.h"

#define INF INT64_MAX

typedef struct {
    int sa, sb;             /* the segment */
    int64_t m, m2;          /* its floor; the level waste raises it to (INF: none) */
    int cbeg, cend, next;   /* candidates in the candidate stack */
    int act;                /* -1 nothing applied, -2 waste applied, else the placed buffer */
    int ban_top;            /* ban stack height when the frame was made */
    int raise_top;          /* raise stack height before the frame's inference */
    bool waste_ok;
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
    int n, S;
    const AllocItem *items;
    int *s0, *s1;            /* [n] sections covered: s0..s1 */
    int *rank;               /* [n] position in the value order */
    int *prev_same;          /* [n] the previous identical buffer, -1 */
    int *start_beg, *start;  /* buffers by first section (CSR, in value order) */
    int64_t *rem0;           /* [S] bytes over each section */
    int *cross0;             /* [S] buffers crossing the boundary s | s+1 */
    int n_comp;
    int *comp_sa, *comp_sb;  /* [n_comp] section ranges */
    int *comp_beg, *comp_items; /* buffers per component (CSR) */
    /* search state */
    int64_t *floor, *rem, *off, *ban;
    int *cross;
    bool *placed;
    Frame *frames;
    int frames_cap;
    int *cand;
    int cand_n, cand_cap;
    Ban *bans;
    int bans_n, bans_cap;
    Raise *raises;
    int raises_n, raises_cap;
    int64_t *lo, *eff;
    int inference;
};

double alloc_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t round_up(int64_t x, int64_t a) { return a > 1 ? (x + a - 1) / a * a : x; }

static const AllocItem *sort_items;
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
/* value order: longest lifetime, then largest, then index */
static int value_mode;
static int cmp_value(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    const AllocItem *x = &sort_items[i], *y = &sort_items[j];
    int64_t lx = x->upper - x->lower, ly = y->upper - y->lower;
    if (value_mode == 1) { lx = x->size; ly = y->size; }
    if (value_mode == 2) { double ax = (double)x->size * (double)lx, ay = (double)y->size * (double)ly; if (ax != ay) return ax > ay ? -1 : 1; }
    if (value_mode == 3) { lx = -lx; ly = -ly; }
    if (value_mode == 4) { lx = -x->size; ly = -y->size; }
    if (lx != ly) return lx > ly ? -1 : 1;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    return i - j;
}
static int cmp_identity(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    const AllocItem *x = &sort_items[i], *y = &sort_items[j];
    if (x->lower != y->lower) return x->lower < y->lower ? -1 : 1;
    if (x->upper != y->upper) return x->upper < y->upper ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    int64_t ax = x->alignment > 1 ? x->alignment : 1, ay = y->alignment > 1 ? y->alignment : 1;
    if (ax != ay) return ax < ay ? -1 : 1;
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
    AllocSearch *s = acc_xrealloc(NULL, sizeof *s);
    memset(s, 0, sizeof *s);
    s->n = n;
    s->items = items;
    size_t nn = (size_t)(n > 0 ? n : 1);
    int64_t *e = acc_xrealloc(NULL, 2 * nn * sizeof(int64_t));
    for (int i = 0; i < n; i++) e[2 * i] = items[i].lower, e[2 * i + 1] = items[i].upper;
    qsort(e, 2 * (size_t)n, sizeof(int64_t), cmp_i64);
    int k = 0;
    for (int i = 0; i < 2 * n; i++)
        if (!k || e[i] != e[k - 1]) e[k++] = e[i];
    s->S = k > 1 ? k - 1 : 1;
    size_t S = (size_t)s->S;
    s->s0 = acc_xrealloc(NULL, nn * sizeof(int));
    s->s1 = acc_xrealloc(NULL, nn * sizeof(int));
    for (int i = 0; i < n; i++) {
        s->s0[i] = find_endpoint(e, k, items[i].lower);
        s->s1[i] = find_endpoint(e, k, items[i].upper) - 1;
    }
    free(e);

    /* value order and identical buffers */
    int *ord = acc_xrealloc(NULL, nn * sizeof(int));
    for (int i = 0; i < n; i++) ord[i] = i;
    sort_items = items;
    value_mode = getenv("ACC_VAL") ? atoi(getenv("ACC_VAL")) : 0;
    qsort(ord, (size_t)n, sizeof(int), cmp_value);
    s->rank = acc_xrealloc(NULL, nn * sizeof(int));
    for (int r = 0; r < n; r++) s->rank[ord[r]] = r;
    int *ident = acc_xrealloc(NULL, nn * sizeof(int));
    for (int i = 0; i < n; i++) ident[i] = i;
    qsort(ident, (size_t)n, sizeof(int), cmp_identity);
    sort_items = NULL;
    s->prev_same = acc_xrealloc(NULL, nn * sizeof(int));
    for (int r = 0; r < n; r++) {
        int i = ident[r], p = r ? ident[r - 1] : -1;
        const AllocItem *x = &items[i];
        bool same = p >= 0 && items[p].lower == x->lower && items[p].upper == x->upper && items[p].size == x->size &&
                    (items[p].alignment > 1 ? items[p].alignment : 1) == (x->alignment > 1 ? x->alignment : 1);
        s->prev_same[i] = same ? p : -1;
    }
    free(ident);

    /* buffers by first section, in value order */
    s->start_beg = acc_xrealloc(NULL, (S + 1) * sizeof(int));
    memset(s->start_beg, 0, (S + 1) * sizeof(int));
    for (int i = 0; i < n; i++) s->start_beg[s->s0[i] + 1]++;
    for (size_t t = 0; t < S; t++) s->start_beg[t + 1] += s->start_beg[t];
    s->start = acc_xrealloc(NULL, nn * sizeof(int));
    int *fill = acc_xrealloc(NULL, S * sizeof(int));
    memcpy(fill, s->start_beg, S * sizeof(int));
    for (int r = 0; r < n; r++) s->start[fill[s->s0[ord[r]]]++] = ord[r];
    free(fill);
    free(ord);

    /* bytes per section, crossings per boundary */
    s->rem0 = acc_xrealloc(NULL, S * sizeof(int64_t));
    s->cross0 = acc_xrealloc(NULL, S * sizeof(int));
    int64_t *drem = acc_xrealloc(NULL, (S + 1) * sizeof(int64_t));
    int *dcross = acc_xrealloc(NULL, (S + 1) * sizeof(int));
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
    free(drem);
    free(dcross);

    /* components: runs of sections joined by crossing buffers */
    int *comp_of = acc_xrealloc(NULL, S * sizeof(int));
    s->comp_sa = acc_xrealloc(NULL, S * sizeof(int));
    s->comp_sb = acc_xrealloc(NULL, S * sizeof(int));
    s->n_comp = 0;
    for (int t = 0; t < s->S; t++) {
        comp_of[t] = -1;
        if (!s->rem0[t]) continue;
        if (t > 0 && s->rem0[t - 1] && s->cross0[t - 1] > 0) {
            comp_of[t] = s->n_comp - 1;
            s->comp_sb[s->n_comp - 1] = t;
        } else {
            comp_of[t] = s->n_comp;
            s->comp_sa[s->n_comp] = s->comp_sb[s->n_comp] = t;
            s->n_comp++;
        }
    }
    size_t nc = (size_t)(s->n_comp > 0 ? s->n_comp : 1);
    s->comp_beg = acc_xrealloc(NULL, (nc + 1) * sizeof(int));
    memset(s->comp_beg, 0, (nc + 1) * sizeof(int));
    for (int i = 0; i < n; i++) s->comp_beg[comp_of[s->s0[i]] + 1]++;
    for (int c = 0; c < s->n_comp; c++) s->comp_beg[c + 1] += s->comp_beg[c];
    s->comp_items = acc_xrealloc(NULL, nn * sizeof(int));
    int *cfill = acc_xrealloc(NULL, nc * sizeof(int));
    memcpy(cfill, s->comp_beg, nc * sizeof(int));
    for (int i = 0; i < n; i++) s->comp_items[cfill[comp_of[s->s0[i]]]++] = i;
    free(cfill);
    free(comp_of);

    s->floor = acc_xrealloc(NULL, S * sizeof(int64_t));
    s->rem = acc_xrealloc(NULL, S * sizeof(int64_t));
    s->cross = acc_xrealloc(NULL, S * sizeof(int));
    s->off = acc_xrealloc(NULL, nn * sizeof(int64_t));
    s->ban = acc_xrealloc(NULL, nn * sizeof(int64_t));
    s->placed = acc_xrealloc(NULL, nn * sizeof(bool));
    s->lo = acc_xrealloc(NULL, nn * sizeof(int64_t));
    s->eff = acc_xrealloc(NULL, S * sizeof(int64_t));
    const char *inf = getenv("ACC_INF");
    s->inference = inf ? atoi(inf) : 1;
    return s;
}

void alloc_search_free(AllocSearch *s) {
    if (!s) return;
    free(s->s0), free(s->s1), free(s->rank), free(s->prev_same), free(s->start_beg), free(s->start);
    free(s->rem0), free(s->cross0), free(s->comp_sa), free(s->comp_sb), free(s->comp_beg), free(s->comp_items);
    free(s->floor), free(s->rem), free(s->cross), free(s->off), free(s->ban), free(s->placed);
    free(s->frames), free(s->cand), free(s->bans), free(s->raises), free(s->lo), free(s->eff);
    free(s);
}

static void place(AllocSearch *s, int i, int64_t at, SearchBudget *b) {
    int64_t size = s->items[i].size;
    for (int t = s->s0[i]; t <= s->s1[i]; t++) s->floor[t] = at + size, s->rem[t] -= size;
    for (int t = s->s0[i]; t < s->s1[i]; t++) s->cross[t]--;
    s->placed[i] = true;
    s->off[i] = at;
    b->work += s->s1[i] - s->s0[i] + 1;
}

static void unplace(AllocSearch *s, int i, int64_t floor) {
    int64_t size = s->items[i].size;
    for (int t = s->s0[i]; t <= s->s1[i]; t++) s->floor[t] = floor, s->rem[t] += size;
    for (int t = s->s0[i]; t < s->s1[i]; t++) s->cross[t]++;
    s->placed[i] = false;
}

static void push_cand(AllocSearch *s, int i) {
    if (s->cand_n == s->cand_cap) {
        s->cand_cap = s->cand_cap ? 2 * s->cand_cap : 256;
        s->cand = acc_xrealloc(s->cand, (size_t)s->cand_cap * sizeof(int));
    }
    s->cand[s->cand_n++] = i;
}

static const int *sort_rank;
static int cmp_rank(const void *a, const void *b) { return sort_rank[*(const int *)a] - sort_rank[*(const int *)b]; }

static void raise_floor(AllocSearch *s, int t, int64_t v) {
    if (s->raises_n == s->raises_cap) {
        s->raises_cap = s->raises_cap ? 2 * s->raises_cap : 256;
        s->raises = acc_xrealloc(s->raises, (size_t)s->raises_cap * sizeof(Raise));
    }
    s->raises[s->raises_n++] = (Raise){t, s->floor[t]};
    s->floor[t] = v;
}

/* Inference: no unplaced buffer goes below the highest floor of its
 * sections (lo); no section is filled below the lowest lo of its buffers
 * (eff). Raise floors to eff until nothing changes; false if some section
 * then cannot hold what is left over it. */
static bool infer(AllocSearch *s, int c, int64_t cap, SearchBudget *b) {
    int ca = s->comp_sa[c], cb = s->comp_sb[c];
    for (int round = 0; round < 4; round++) {
        for (int t = ca; t <= cb; t++) s->eff[t] = INF;
        for (int k = s->comp_beg[c]; k < s->comp_beg[c + 1]; k++) {
            int i = s->comp_items[k];
            if (s->placed[i]) continue;
            int64_t lo = 0;
            for (int t = s->s0[i]; t <= s->s1[i]; t++)
                if (s->floor[t] > lo) lo = s->floor[t];
            if (lo > cap - s->items[i].size) return false;
            for (int t = s->s0[i]; t <= s->s1[i]; t++)
                if (lo < s->eff[t]) s->eff[t] = lo;
            b->work += 2 * (s->s1[i] - s->s0[i] + 1);
        }
        bool changed = false;
        for (int t = ca; t <= cb; t++) {
            if (!s->rem[t]) continue;
            if (s->eff[t] > cap - s->rem[t]) return false;
            if (s->eff[t] > s->floor[t]) raise_floor(s, t, s->eff[t]), changed = true;
        }
        if (!changed) break;
    }
    return true;
}

/* The lowest segment of component [ca, cb], its candidates and whether
 * wasting it may lead anywhere. */
static void setup_frame(AllocSearch *s, Frame *f, int c, int64_t cap, SearchBudget *b) {
    int ca = s->comp_sa[c], cb = s->comp_sb[c];
    f->raise_top = s->raises_n;
    if (s->inference && !infer(s, c, cap, b)) { /* dead: no branches */
        f->sa = f->sb = ca, f->m = 0, f->m2 = INF;
        f->cbeg = f->cend = f->next = s->cand_n;
        f->act = -1;
        f->ban_top = s->bans_n;
        f->waste_ok = false;
        return;
    }
    int64_t m = INF;
    int sa = -1;
    for (int t = ca; t <= cb; t++)
        if (s->rem[t] > 0 && s->floor[t] < m) m = s->floor[t], sa = t;
    b->work += cb - ca + 1;
    int sb = sa;
    while (sb < cb && s->rem[sb + 1] > 0 && s->floor[sb + 1] == m) sb++;
    int64_t m2 = INF;
    if (sa > ca && s->cross[sa - 1] > 0) m2 = s->floor[sa - 1];
    if (sb < cb && s->cross[sb] > 0 && s->floor[sb + 1] < m2) m2 = s->floor[sb + 1];
    bool waste_ok = m2 < INF;
    for (int t = sa; waste_ok && t <= sb; t++)
        if (m2 > cap - s->rem[t]) waste_ok = false;
    f->sa = sa, f->sb = sb, f->m = m, f->m2 = m2;
    f->cbeg = s->cand_n;
    f->next = f->cbeg;
    f->act = -1;
    f->ban_top = s->bans_n;
    for (int t = sa; t <= sb; t++) {
        for (int k = s->start_beg[t]; k < s->start_beg[t + 1]; k++) {
            int i = s->start[k];
            b->work++;
            if (s->placed[i] || s->s1[i] > sb) continue;
            const AllocItem *x = &s->items[i];
            int64_t at = round_up(m, x->alignment);
            if (m2 < INF && at + x->size <= m2) waste_ok = false; /* dominated */
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
    f->cend = s->cand_n;
    f->waste_ok = waste_ok;
    if (f->cend - f->cbeg > 1) {
        sort_rank = s->rank;
        qsort(s->cand + f->cbeg, (size_t)(f->cend - f->cbeg), sizeof(int), cmp_rank);
        sort_rank = NULL;
    }
}

static SearchStatus solve_component(AllocSearch *s, int c, int64_t cap, SearchBudget *b) {
    int ca = s->comp_sa[c], cb = s->comp_sb[c];
    for (int t = ca; t <= cb; t++) {
        if (s->rem0[t] > cap) return SEARCH_INFEASIBLE;
        s->floor[t] = 0, s->rem[t] = s->rem0[t], s->cross[t] = s->cross0[t];
    }
    int left = s->comp_beg[c + 1] - s->comp_beg[c];
    for (int k = s->comp_beg[c]; k < s->comp_beg[c + 1]; k++) {
        int i = s->comp_items[k];
        s->placed[i] = false;
        s->ban[i] = -1;
    }
    if (!left) return SEARCH_FOUND;
    s->cand_n = s->bans_n = 0;
    int depth = 0;
    if (!s->frames_cap) {
        s->frames_cap = 256;
        s->frames = acc_xrealloc(NULL, (size_t)s->frames_cap * sizeof(Frame));
    }
    s->raises_n = 0;
    setup_frame(s, &s->frames[depth++], c, cap, b);
    while (depth > 0) {
        Frame *f = &s->frames[depth - 1];
        if (f->act >= 0) { /* the subtree below this placement failed */
            int i = f->act;
            unplace(s, i, f->m);
            left++;
            if (s->off[i] == f->m) { /* refuted at this floor: not again in the siblings' subtrees */
                if (s->bans_n == s->bans_cap) {
                    s->bans_cap = s->bans_cap ? 2 * s->bans_cap : 256;
                    s->bans = acc_xrealloc(s->bans, (size_t)s->bans_cap * sizeof(Ban));
                }
                s->bans[s->bans_n++] = (Ban){i, s->ban[i]};
                s->ban[i] = f->m;
            }
            f->act = -1;
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
        } else { /* exhausted */
            while (s->bans_n > f->ban_top) {
                Ban *x = &s->bans[--s->bans_n];
                s->ban[x->item] = x->old;
            }
            s->cand_n = f->cbeg;
            while (s->raises_n > f->raise_top) {
                Raise *x = &s->raises[--s->raises_n];
                s->floor[x->sec] = x->old;
            }
            depth--;
            continue;
        }
        b->nodes++;
        if (b->work >= b->work_limit) return SEARCH_LIMIT;
        if (b->deadline > 0 && !(b->nodes & 1023) && alloc_now_s() > b->deadline) {
            b->time_out = true;
            return SEARCH_LIMIT;
        }
        if (!left) return SEARCH_FOUND;
        if (depth == s->frames_cap) {
            s->frames_cap *= 2;
            s->frames = acc_xrealloc(s->frames, (size_t)s->frames_cap * sizeof(Frame));
        }
        setup_frame(s, &s->frames[depth++], c, cap, b);
    }
    return SEARCH_INFEASIBLE;
}

SearchStatus alloc_search_fit(AllocSearch *s, int64_t capacity, int64_t *offsets, SearchBudget *b) {
    for (int c = 0; c < s->n_comp; c++) {
        SearchStatus st = solve_component(s, c, capacity, b);
        if (st != SEARCH_FOUND) return st;
        for (int k = s->comp_beg[c]; k < s->comp_beg[c + 1]; k++) offsets[s->comp_items[k]] = s->off[s->comp_items[k]];
    }
    return SEARCH_FOUND;
}
