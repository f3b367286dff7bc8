/* test_alloc.c - the static allocator over plain intervals (passes/alloc.c,
 * passes/alloc_search.c): every placement is checked here, independently of
 * alloc_check, for overlaps, alignment and the arena; hand instances with
 * known optima; random small instances against a brute force over every
 * order of placement; proofs of infeasibility; determinism; the MiniMalloc
 * CSV reader's errors (each with its line number, never a crash).
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"
#include "test.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof *(a)))

/* Independent check: offsets aligned, inside [0, arena), no two buffers live
 * at the same time overlapping, arena = the highest top. */
static bool placement_ok(const AllocItem *it, int n, const int64_t *off, int64_t arena) {
    int64_t top = 0;
    for (int i = 0; i < n; i++) {
        if (it[i].size <= 0 || it[i].lower >= it[i].upper) continue;
        int64_t a = it[i].alignment > 1 ? it[i].alignment : 1;
        if (off[i] < 0 || off[i] % a || off[i] + it[i].size > arena) return false;
        if (off[i] + it[i].size > top) top = off[i] + it[i].size;
        for (int j = 0; j < i; j++) {
            if (it[j].size <= 0 || it[j].lower >= it[j].upper) continue;
            bool in_time = it[i].lower < it[j].upper && it[j].lower < it[i].upper;
            bool in_space = off[i] < off[j] + it[j].size && off[j] < off[i] + it[i].size;
            if (in_time && in_space) return false;
        }
    }
    return top == arena;
}

/* The optimum by brute force: every order, each buffer on top of the
 * buffers placed before it that it conflicts with, aligned (every pushed-down
 * placement arises from its buffers sorted by offset). n <= 8. */
static int64_t brute_force(const AllocItem *it, int n) {
    int perm[8], c[8] = {0};
    int64_t off[8], best = INT64_MAX;
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int k = 1;;) { /* Heap's algorithm */
        int64_t top = 0;
        for (int a = 0; a < n; a++) {
            int i = perm[a];
            int64_t at = 0, al = it[i].alignment > 1 ? it[i].alignment : 1;
            for (int b = 0; b < a; b++) {
                int j = perm[b];
                if (it[i].lower < it[j].upper && it[j].lower < it[i].upper && off[j] + it[j].size > at)
                    at = off[j] + it[j].size;
            }
            off[i] = at = (at + al - 1) / al * al;
            if (at + it[i].size > top) top = at + it[i].size;
        }
        if (top < best) best = top;
        while (k < n && c[k] >= k) c[k++] = 0;
        if (k >= n) break;
        int sw = k % 2 ? c[k] : 0, t = perm[sw];
        perm[sw] = perm[k], perm[k] = t;
        c[k]++, k = 1;
    }
    return best;
}

static const AllocOptions EXACT = {0, INT64_C(1) << 40, 0, 0}; /* minimise, no time limit */

static int64_t solve(const AllocItem *it, int n, int64_t *off, AllocResult *r) {
    int64_t a = alloc_intervals_ex(it, n, off, &EXACT, r);
    ASSERT_TRUE(placement_ok(it, n, off, a));
    char err[256];
    ASSERT_TRUE(alloc_check(it, n, off, a, err, sizeof err));
    return a;
}

static void test_trivial(void) {
    int64_t off[4] = {-1, -1, -1, -1};
    AllocResult r;
    ASSERT(0, alloc_intervals_ex(NULL, 0, off, &EXACT, &r));
    ASSERT(0, r.lower_bound);
    ASSERT_TRUE(r.optimal);
    AllocItem one[] = {{3, 9, 100, 1}};
    ASSERT(100, solve(one, 1, off, &r));
    ASSERT(0, off[0]);
    /* empty lifetimes and empty buffers conflict with nothing: offset 0 */
    AllocItem odd[] = {{0, 10, 64, 1}, {5, 5, 1000, 1}, {2, 8, 0, 1}, {1, 4, 32, 1}};
    ASSERT(96, solve(odd, 4, off, &r));
    ASSERT(0, off[1]);
    ASSERT(0, off[2]);
    ASSERT(96, alloc_max_live(odd, 4));
    /* half-open: [0,4) and [4,8) share memory */
    AllocItem touch[] = {{0, 4, 10, 1}, {4, 8, 10, 1}};
    ASSERT(10, solve(touch, 2, off, &r));
    ASSERT(off[0], off[1]);
}

static void test_hand(void) {
    int64_t off[16];
    AllocResult r;
    /* a nest: the long buffers must go below the short ones; 12 = max-live */
    AllocItem nest[] = {{0, 3, 4, 1}, {3, 9, 4, 1}, {0, 9, 4, 1}, {9, 21, 4, 1}, {0, 21, 4, 1}};
    ASSERT(12, alloc_max_live(nest, N_OF(nest)));
    ASSERT(12, solve(nest, N_OF(nest), off, &r));
    ASSERT_TRUE(r.optimal);

    /* every greedy order needs 15 here; the optimum is max-live, 12 */
    AllocItem fit[] = {{5, 8, 3, 1}, {5, 10, 3, 1}, {7, 9, 6, 1}, {4, 5, 5, 1}, {3, 7, 4, 1}};
    ASSERT(12, alloc_max_live(fit, N_OF(fit)));
    ASSERT(12, brute_force(fit, N_OF(fit)));
    ASSERT(12, solve(fit, N_OF(fit), off, &r));
    ASSERT(15, r.greedy_arena);
    ASSERT_TRUE(r.searched);
    ASSERT_TRUE(r.optimal);

    /* alignment pushes the optimum above max-live (22): the search must
     * prove that nothing below 64 + 11 works */
    AllocItem al2[] = {{0, 4, 11, 64}, {2, 6, 11, 64}, {0, 6, 0, 1}};
    ASSERT(22, alloc_max_live(al2, N_OF(al2)));
    ASSERT(75, solve(al2, N_OF(al2), off, &r));
    ASSERT_TRUE(r.optimal);
    AllocItem al3[] = {{0, 4, 3, 4}, {2, 6, 5, 4}, {4, 8, 3, 4}, {1, 7, 2, 1}, {5, 9, 6, 2}};
    int64_t want = brute_force(al3, N_OF(al3));
    ASSERT(want, solve(al3, N_OF(al3), off, &r));
    ASSERT_TRUE(r.optimal);
    ASSERT_TRUE(want > alloc_max_live(al3, N_OF(al3)));

    /* alignment: offsets multiple of 64 */
    AllocItem al[] = {{0, 4, 10, 64}, {0, 4, 70, 64}, {2, 6, 5, 1}};
    int64_t a = solve(al, N_OF(al), off, &r);
    ASSERT_TRUE(a >= 64 + 70 || a >= 128 + 10);
    ASSERT(0, off[0] % 64);
    ASSERT(0, off[1] % 64);
}

static uint64_t rng_state = 12345;
static int64_t rnd(int64_t lo, int64_t hi) { /* [lo, hi] */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (int64_t)((rng_state >> 33) % (uint64_t)(hi - lo + 1));
}

/* Random small instances: the allocator's minimum equals the brute force's,
 * with a proof; deciding one byte below it says infeasible. */
static void test_random_vs_brute_force(void) {
    int greedy_worse = 0, mismatches = 0, above_bound = 0;
    for (int trial = 0; trial < 400; trial++) {
        int n = (int)rnd(1, 7);
        AllocItem it[8];
        for (int i = 0; i < n; i++) {
            int64_t lo = rnd(0, 9);
            /* a third with alignments (optima above max-live: proofs) */
            it[i] = (AllocItem){lo, lo + rnd(1, 6), rnd(1, 9) * (trial % 3 ? 1 : 8), trial % 3 == 1 ? rnd(1, 4) : 1};
        }
        int64_t off[8], want = brute_force(it, n);
        AllocResult r;
        int64_t got = solve(it, n, off, &r);
        if (got != want || !r.optimal) {
            mismatches++;
            if (mismatches < 4)
                printf("trial %d: n=%d optimum %lld, got %lld (optimal %d)\n", trial, n, (long long)want,
                       (long long)got, r.optimal);
        }
        greedy_worse += r.greedy_arena > want;
        above_bound += want > r.lower_bound;
        /* capacity below the optimum: the best found stays the optimum */
        AllocOptions tight = EXACT;
        tight.capacity = want - 1;
        ASSERT(want, alloc_intervals_ex(it, n, off, &tight, &r));
        ASSERT_TRUE(placement_ok(it, n, off, want));
    }
    ASSERT(0, mismatches);
    ASSERT_TRUE(greedy_worse > 0); /* the search was needed somewhere */
    ASSERT_TRUE(above_bound > 0);  /* and had to prove optimality above the bound */
}

/* Larger random instances: valid placements, the search never worse than
 * the greedy, identical results on a second run (work budget, no deadline). */
static void test_random_larger(void) {
    for (int trial = 0; trial < 30; trial++) {
        int n = (int)rnd(20, 120);
        AllocItem *it = malloc((size_t)n * sizeof *it);
        int64_t *a = malloc((size_t)n * sizeof(int64_t)), *b = malloc((size_t)n * sizeof(int64_t));
        for (int i = 0; i < n; i++) {
            int64_t lo = rnd(0, 200);
            it[i] = (AllocItem){lo, lo + rnd(1, 60), rnd(1, 100) * 64, trial % 2 ? 64 : 1};
        }
        AllocOptions o = {0, 3000000, 0, 0};
        AllocResult r1, r2;
        int64_t x = alloc_intervals_ex(it, n, a, &o, &r1), y = alloc_intervals_ex(it, n, b, &o, &r2);
        ASSERT_TRUE(placement_ok(it, n, a, x));
        ASSERT(x, y);
        ASSERT_TRUE(!memcmp(a, b, (size_t)n * sizeof(int64_t)));
        ASSERT_TRUE(x <= r1.greedy_arena);
        ASSERT_TRUE(x >= r1.lower_bound);
        ASSERT(r1.lower_bound, alloc_max_live(it, n));
        /* greedy only */
        AllocOptions g = {0, 0, 0, 0};
        int64_t z = alloc_intervals_ex(it, n, b, &g, &r2);
        ASSERT_TRUE(placement_ok(it, n, b, z));
        ASSERT(r1.greedy_arena, z);
        ASSERT_TRUE(!r2.searched);
        free(it), free(a), free(b);
    }
    /* the simple entry point */
    AllocItem it[] = {{0, 2, 4, 1}, {1, 3, 3, 1}, {2, 4, 4, 1}, {3, 5, 3, 1}};
    int64_t off[4];
    int64_t x = alloc_intervals(it, 4, off, 0.5);
    ASSERT(brute_force(it, 4), x);
    ASSERT_TRUE(placement_ok(it, 4, off, x));
}

/* ---- CSV ------------------------------------------------------------------ */

static bool parse(const char *text, AllocInstance *inst, char *err, size_t len) {
    FILE *f = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
    bool ok = alloc_parse_csv(f, "in.csv", inst, err, len);
    fclose(f);
    return ok;
}

#define CSV_BAD(text, msg)                                                              \
    do {                                                                                \
        AllocInstance inst_;                                                            \
        char err_[256] = "";                                                            \
        ASSERT(false, parse(text, &inst_, err_, sizeof err_));                          \
        if (!ASSERT_TRUE(strstr(err_, msg) != NULL)) printf("  error was: %s\n", err_); \
    } while (0)

static void test_csv(void) {
    AllocInstance inst;
    char err[256];
    ASSERT_TRUE(parse("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n", &inst, err, sizeof err));
    ASSERT(2, inst.n);
    ASSERT_STR("b2", inst.ids[1]);
    ASSERT(3, inst.items[1].lower);
    ASSERT(9, inst.items[1].upper);
    ASSERT(4, inst.items[1].size);
    ASSERT(1, inst.items[1].alignment);
    alloc_instance_free(&inst);
    /* columns in any order, alignment and offset columns, CRLF, spaces, a
     * byte order mark, blank lines and comments */
    ASSERT_TRUE(parse("\xEF\xBB\xBFsize, upper ,lower,id,alignment,offset\r\n\r\n# c\n 8 ,5,1,x,64,0\r\n", &inst, err,
                      sizeof err));
    ASSERT(1, inst.n);
    ASSERT(8, inst.items[0].size);
    ASSERT(5, inst.items[0].upper);
    ASSERT(1, inst.items[0].lower);
    ASSERT(64, inst.items[0].alignment);
    ASSERT_STR("x", inst.ids[0]);
    alloc_instance_free(&inst);
    ASSERT_TRUE(parse("id,lower,upper,size\n", &inst, err, sizeof err)); /* no buffers */
    ASSERT(0, inst.n);
    alloc_instance_free(&inst);

    CSV_BAD("", "in.csv:1: error: empty file");
    CSV_BAD("\n\n", "empty file");
    CSV_BAD("id,lower,upper\n", "in.csv:1: error: the header lacks column 'size'");
    CSV_BAD("id,lower,upper,size,colour\n", "in.csv:1: error: unknown column 'colour'");
    CSV_BAD("id,lower,upper,size,size\n", "column 'size' appears twice");
    CSV_BAD("id,lower,upper,size\nb,0,3\n", "in.csv:2: error: 3 fields, the header has 4");
    CSV_BAD("id,lower,upper,size\nb,0,3,4,5\n", "in.csv:2: error: 5 fields");
    CSV_BAD("id,lower,upper,size\nb,0,3,4\nc,x,3,4\n", "in.csv:3: error: lower 'x' is not an integer");
    CSV_BAD("id,lower,upper,size\nb,0,3,4k\n", "size '4k' is not an integer");
    CSV_BAD("id,lower,upper,size\nb,0,3,\n", "size '' is not an integer");
    CSV_BAD("id,lower,upper,size\nb,0,3,99999999999999999999\n", "is not an integer");
    CSV_BAD("id,lower,upper,size\nb,-1,3,4\n", "in.csv:2: error: lower -1 is negative");
    CSV_BAD("id,lower,upper,size\nb,3,3,4\n", "upper 3 must be greater than lower 3");
    CSV_BAD("id,lower,upper,size\nb,0,3,0\n", "size 0 must be positive");
    CSV_BAD("id,lower,upper,size\nb,0,3,-4\n", "size -4 must be positive");
    CSV_BAD("id,lower,upper,size\nb,0,3,9223372036854775807\n", "is too large");
    CSV_BAD("id,lower,upper,size\n,0,3,4\n", "in.csv:2: error: empty id");
    CSV_BAD("id,lower,upper,size,alignment\nb,0,3,4,0\n", "alignment 0 must be positive");
    CSV_BAD("id,lower,upper,size\n\n\nb,0,3,4\nb,0\n", "in.csv:5:");
    const char nul[] = "id,lower,upper,size\nb,0,3\0,4\n";
    FILE *f = fmemopen((void *)(uintptr_t)nul, sizeof nul - 1, "r");
    ASSERT(false, alloc_parse_csv(f, "in.csv", &inst, err, sizeof err));
    ASSERT_TRUE(strstr(err, "in.csv:2: error: a NUL byte") != NULL);
    fclose(f);
    ASSERT(false, alloc_read_csv("/nonexistent/x.csv", &inst, err, sizeof err));
    ASSERT_TRUE(strstr(err, "/nonexistent/x.csv: error: cannot open") != NULL);

    /* write, read back */
    ASSERT_TRUE(parse("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\n", &inst, err, sizeof err));
    int64_t off[3];
    int64_t a = alloc_intervals(inst.items, inst.n, off, 0);
    ASSERT(8, a);
    char buf[256];
    FILE *w = fmemopen(buf, sizeof buf, "w");
    alloc_write_csv(&inst, off, w);
    fclose(w);
    const char *head = "id,lower,upper,size,offset\nb1,0,3,4,";
    ASSERT_TRUE(!strncmp(buf, head, strlen(head)));
    AllocInstance back;
    ASSERT_TRUE(parse(buf, &back, err, sizeof err));
    ASSERT(3, back.n);
    alloc_instance_free(&back);
    alloc_instance_free(&inst);
}

int main(void) {
    test_trivial();
    test_hand();
    test_random_vs_brute_force();
    test_random_larger();
    test_csv();
    TEST_DONE();
}
