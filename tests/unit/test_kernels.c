/* test_kernels.c - numeric tests of the CPU kernels in libaccrt.
 *
 * Every backward kernel is checked against central finite differences of its
 * forward: loss = sum(out * r) for a random r, so dloss/dout = r is fed to the
 * backward. Gradient buffers are pre-filled with random values before the
 * backward and those are subtracted afterwards, which also checks that
 * backwards accumulate (+=) instead of overwriting. Forwards of matmul,
 * attention and the other non-trivial ops are checked against naive
 * reference implementations in double precision; linear bit for bit against
 * the matmul and bias add it fuses. Philox is checked against the Random123
 * known-answer vectors. A gradient check that held marks its op (the first
 * word of the case's name); test_fd_coverage then walks the ops with kernels
 * (ACC_KERNEL_OPS, generated from the op table) and fails for an op that has
 * no finite-difference check.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "philox.h"
#include "test.h"
#include "kernel_test.h"

static float *rnd_buf(int64_t n, float lo, float hi) {
    float *p = xmalloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = rnd_unif(lo, hi);
    return p;
}

static float *zero_buf(int64_t n) {
    float *p = xmalloc((size_t)n * sizeof *p);
    memset(p, 0, (size_t)n * sizeof *p);
    return p;
}

/* Values in [lo, hi] with a random sign: keeps inputs away from 0 (relu's
 * kink, division). */
static float *rnd_signed_buf(int64_t n, float lo, float hi) {
    float *p = rnd_buf(n, lo, hi);
    for (int64_t i = 0; i < n; i++)
        if (rnd_u32() & 1) p[i] = -p[i];
    return p;
}

static double max_abs_diff(const float *a, const double *b, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* ---- the gradient checker ----------------------------------------------- */

/* The ops with kernels, by name, and whether a gradient check of each held. */
static const char *const kernel_ops[] = {
#define KOP_NAME(code, name, ew) #name,
    ACC_KERNEL_OPS(KOP_NAME)
#undef KOP_NAME
};
#define N_KERNEL_OPS (int)(sizeof kernel_ops / sizeof *kernel_ops)
static int fd_checked[N_KERNEL_OPS];

/* Mark the op a case named "<op> ..." checks. */
static void fd_mark(const char *case_name) {
    size_t len = strcspn(case_name, " ");
    for (int k = 0; k < N_KERNEL_OPS; k++)
        if (strlen(kernel_ops[k]) == len && !strncmp(kernel_ops[k], case_name, len)) fd_checked[k] = 1;
}

#define MAX_IN 8

/* One op instance: inputs, output, the op's parameters, and adapters that
 * call its forward and backward kernels. */
typedef struct Case Case;
struct Case {
    const char *name;
    int nin;
    float *x[MAX_IN], *dx[MAX_IN];
    int64_t xn[MAX_IN];
    int diff[MAX_IN]; /* check the gradient of this input */
    float *out, *dout, *aux;
    int64_t on;
    int32_t *idx;
    int64_t d[8];
    int nd;
    int64_t s0[K_MAX_DIMS], s1[K_MAX_DIMS], s2[K_MAX_DIMS];
    int i0, i1, i2;
    float f0;
    float h; /* finite-difference step */
    void (*fwd)(Case *);
    void (*bwd)(Case *);
};

static Case case_new(const char *name, void (*fwd)(Case *), void (*bwd)(Case *), int64_t on, int64_t auxn) {
    Case c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.fwd = fwd;
    c.bwd = bwd;
    c.on = on;
    c.out = zero_buf(on);
    c.dout = rnd_buf(on, -1.0f, 1.0f);
    c.aux = auxn ? zero_buf(auxn) : NULL;
    c.h = 1e-3f;
    return c;
}

static float *case_in(Case *c, float *buf, int64_t n, int diff) {
    c->x[c->nin] = buf;
    c->xn[c->nin] = n;
    c->diff[c->nin] = diff;
    c->nin++;
    return buf;
}

static void case_free(Case *c) {
    for (int i = 0; i < c->nin; i++) {
        free(c->x[i]);
        free(c->dx[i]);
    }
    free(c->out);
    free(c->dout);
    free(c->aux);
    free(c->idx);
}

static double case_loss(const Case *c) {
    double s = 0.0;
    for (int64_t i = 0; i < c->on; i++) s += (double)c->out[i] * (double)c->dout[i];
    return s;
}

/* Check the analytic gradient of every differentiable input of c against
 * central differences, at up to max_checks elements per input (all of them
 * if the input is that small, else a random sample).
 *
 * Tolerance: |analytic - numeric| <= 1e-2 * max(|analytic|, |numeric|) + 1e-3.
 * The forward runs in float32, so each output carries a rounding error of
 * about 6e-8 relative; divided by the 2h = 2e-3 of the central difference
 * this is ~1e-4 per affected output, summed over the (few hundred at most)
 * outputs a single input touches, while the truncation error O(h^2 f''') is
 * ~1e-6. 1e-3 absolute covers the rounding noise on near-zero gradients and
 * 1% relative covers it on large ones, yet a wrong formula (a missing term,
 * a factor, a sign, an overwrite instead of +=) is off by far more. Where one
 * input element feeds thousands of outputs (a broadcast scalar, a shared
 * matmul weight, a sum over 1e5 elements) the noise grows with their square
 * root, so those cases take h = 1e-2: they are linear or nearly so in that
 * input, and the truncation error stays far below the tolerance. */
static void gradcheck(Case *c, int max_checks) {
    c->fwd(c);
    float *g0[MAX_IN] = {0};
    for (int i = 0; i < c->nin; i++) {
        if (!c->diff[i]) continue;
        g0[i] = rnd_buf(c->xn[i], -1.0f, 1.0f);
        c->dx[i] = xmalloc((size_t)c->xn[i] * sizeof(float));
        memcpy(c->dx[i], g0[i], (size_t)c->xn[i] * sizeof(float));
    }
    c->bwd(c);
    /* The many forwards of the finite differences run on one thread: kernels
     * give the same bits for any thread count (test_determinism checks it),
     * and thousands of tiny parallel regions crawl on a loaded machine. The
     * forward and backward above ran on the whole team. */
    int team = threads_get();
    threads_set(1);
    int bad = 0, checked = 0;
    for (int i = 0; i < c->nin; i++) {
        if (!c->diff[i]) continue;
        int64_t n = c->xn[i];
        int64_t nchk = n <= max_checks ? n : max_checks;
        for (int64_t k = 0; k < nchk; k++) {
            int64_t j = n <= max_checks ? k : (int64_t)(rnd_u32() % (uint32_t)n);
            float save = c->x[i][j];
            float xp = save + c->h, xm = save - c->h;
            c->x[i][j] = xp;
            c->fwd(c);
            double lp = case_loss(c);
            c->x[i][j] = xm;
            c->fwd(c);
            double lm = case_loss(c);
            c->x[i][j] = save;
            double num = (lp - lm) / ((double)xp - (double)xm);
            double ana = (double)c->dx[i][j] - (double)g0[i][j];
            double tol = 1e-2 * fmax(fabs(ana), fabs(num)) + 1e-3;
            checked++;
            if (fabs(ana - num) > tol) {
                if (bad < 5)
                    printf("  %s: d input %d [%lld]: analytic %.6g, numeric %.6g\n", c->name, i, (long long)j, ana,
                           num);
                bad++;
            }
        }
        free(g0[i]);
    }
    threads_set(team);
    c->fwd(c);
    if (!test_true(__FILE__, __LINE__, c->name, bad == 0 && checked > 0))
        printf("  %s: %d of %d gradient entries off\n", c->name, bad, checked);
    else fd_mark(c->name);
}

/* Every op with kernels has a finite-difference check above. */
static void test_fd_coverage(void) {
    for (int k = 0; k < N_KERNEL_OPS; k++)
        if (!test_true(__FILE__, __LINE__, kernel_ops[k], fd_checked[k]))
            printf("  op %s has no finite-difference gradient check (tests/unit/test_kernels.c)\n", kernel_ops[k]);
}

/* ---- philox ------------------------------------------------------------- */

static void test_philox(void) {
    /* Random123 tests/kat_vectors, "philox4x32 10": ctr[4] key[2] -> out[4] */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
         0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
         0x24126ea1},
    };
    for (int t = 0; t < 3; t++) {
        philox4x32 ctr = {{kat[t][0], kat[t][1], kat[t][2], kat[t][3]}};
        philox4x32 r = philox4x32_10(ctr, kat[t][4], kat[t][5]);
        for (int i = 0; i < 4; i++) ASSERT(kat[t][6 + i], r.v[i]);
    }
    /* uniform: in [0,1), a pure function of its keys, sensitive to each key */
    float u = philox_uniform(42, 7, 3, 12345);
    ASSERT_TRUE(u >= 0.0f && u < 1.0f);
    ASSERT_TRUE(u == philox_uniform(42, 7, 3, 12345));
    int differ = (u != philox_uniform(43, 7, 3, 12345)) + (u != philox_uniform(42, 8, 3, 12345)) +
                 (u != philox_uniform(42, 7, 4, 12345)) + (u != philox_uniform(42, 7, 3, 12346));
    ASSERT(4, differ);
    ASSERT_TRUE(philox_to_unit(0xffffffffu) < 1.0f);
    ASSERT_TRUE(philox_to_unit(0) == 0.0f);
}

/* ---- matmul ------------------------------------------------------------- */

static void mm_fwd(Case *c) {
    k_matmul_fwd(c->out, c->x[0], c->x[1], c->d[0], c->d[1], c->d[2], c->d[3], c->i0, c->i1, c->i2);
}

static void mm_bwd(Case *c) {
    k_matmul_bwd(c->dx[0], c->dx[1], c->dout, c->x[0], c->x[1], c->d[0], c->d[1], c->d[2], c->d[3], c->i0, c->i1,
                 c->i2);
}

// naive op(a) @ op(b) in double
static void mm_ref(double *out, const float *a, const float *b, int64_t batch, int64_t M, int64_t N, int64_t K, int ta,
                   int tb, int bb) {
    for (int64_t p = 0; p < batch; p++) {
        const float *ap = a + p * M * K, *bp = b + (bb ? p * K * N : 0);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0.0;
                for (int64_t k = 0; k < K; k++)
                    s += (double)(ta ? ap[k * M + i] : ap[i * K + k]) * (double)(tb ? bp[j * K + k] : bp[k * N + j]);
                out[(p * M + i) * N + j] = s;
            }
    }
}

static void test_matmul(void) {
    static char names[8][48];
    for (int combo = 0; combo < 8; combo++) {
        int ta = combo & 1, tb = (combo >> 1) & 1, bb = (combo >> 2) & 1;
        int64_t batch = 3, M = 4, N = 5, K = 6;
        snprintf(names[combo], sizeof names[combo], "matmul ta=%d tb=%d b_batched=%d", ta, tb, bb);
        Case c = case_new(names[combo], mm_fwd, mm_bwd, batch * M * N, 0);
        c.d[0] = batch, c.d[1] = M, c.d[2] = N, c.d[3] = K;
        c.i0 = ta, c.i1 = tb, c.i2 = bb;
        case_in(&c, rnd_buf(batch * M * K, -1, 1), batch * M * K, 1);
        int64_t nb = (bb ? batch : 1) * K * N;
        case_in(&c, rnd_buf(nb, -1, 1), nb, 1);
        c.fwd(&c);
        double ref[3 * 4 * 5];
        mm_ref(ref, c.x[0], c.x[1], batch, M, N, K, ta, tb, bb);
        ASSERT_TRUE(max_abs_diff(c.out, ref, c.on) < 1e-5);
        gradcheck(&c, 200);
        case_free(&c);
    }
    /* a larger one through the threaded BLAS path */
    Case c = case_new("matmul 2x70x90x80 tb", mm_fwd, mm_bwd, 2 * 70 * 90, 0);
    c.d[0] = 2, c.d[1] = 70, c.d[2] = 90, c.d[3] = 80, c.i1 = 1;
    case_in(&c, rnd_buf(2 * 70 * 80, -1, 1), 2 * 70 * 80, 1);
    case_in(&c, rnd_buf(90 * 80, -1, 1), 90 * 80, 1);
    c.fwd(&c);
    double *ref = xmalloc((size_t)c.on * sizeof *ref);
    mm_ref(ref, c.x[0], c.x[1], 2, 70, 90, 80, 0, 1, 0);
    ASSERT_TRUE(max_abs_diff(c.out, ref, c.on) < 1e-4);
    free(ref);
    c.h = 1e-2f; /* bilinear: no truncation error, and less rounding noise */
    gradcheck(&c, 20);
    case_free(&c);
}

/* ---- linear ------------------------------------------------------------- */

static void lin_fwd(Case *c) { k_linear_fwd(c->out, c->x[0], c->x[1], c->x[2], c->d[0], c->d[1], c->d[2], c->i1); }

static void lin_bwd(Case *c) {
    k_linear_bwd(c->dx[0], c->dx[1], c->dx[2], c->dout, c->x[0], c->x[1], c->d[0], c->d[1], c->d[2], c->i1);
}

static float *copy_buf(const float *x, int64_t n) {
    float *y = xmalloc((size_t)n * sizeof *y);
    memcpy(y, x, (size_t)n * sizeof *y);
    return y;
}

/* linear is matmul, then the bias add: the finite-difference check, and bit
 * for bit the two kernels it fuses (k_matmul + k_add, forward and backward,
 * the gradients accumulating into the same starting values). */
static void test_linear(void) {
    static const int64_t shapes[][3] = {{1, 5, 3}, {12, 7, 9}, {300, 70, 50}};
    static char names[6][48];
    for (int t = 0; t < 6; t++) {
        int tb = t & 1;
        int64_t M = shapes[t / 2][0], N = shapes[t / 2][1], K = shapes[t / 2][2];
        snprintf(names[t], sizeof names[t], "linear %lldx%lldx%lld tb=%d", (long long)M, (long long)N, (long long)K,
                 tb);
        Case c = case_new(names[t], lin_fwd, lin_bwd, M * N, 0);
        c.d[0] = M, c.d[1] = N, c.d[2] = K, c.i1 = tb;
        case_in(&c, rnd_buf(M * K, -1, 1), M * K, 1);
        case_in(&c, rnd_buf(K * N, -1, 1), K * N, 1);
        case_in(&c, rnd_buf(N, -1, 1), N, 1);
        c.fwd(&c);
        float *mm = zero_buf(M * N), *want = zero_buf(M * N);
        const int64_t so[] = {M, N}, sb[] = {1, N};
        k_matmul_fwd(mm, c.x[0], c.x[1], 1, M, N, K, 0, tb, 0);
        k_add_fwd(want, mm, c.x[2], 2, so, so, sb);
        ASSERT(0, memcmp(want, c.out, (size_t)(M * N) * sizeof *want));
        float *dx = rnd_buf(M * K, -1, 1), *dw = rnd_buf(K * N, -1, 1), *db = rnd_buf(N, -1, 1);
        float *dx2 = copy_buf(dx, M * K), *dw2 = copy_buf(dw, K * N), *db2 = copy_buf(db, N);
        float *dmm = zero_buf(M * N);
        k_linear_bwd(dx, dw, db, c.dout, c.x[0], c.x[1], M, N, K, tb);
        k_add_bwd(dmm, db2, c.dout, 2, so, so, sb);
        k_matmul_bwd(dx2, dw2, dmm, c.x[0], c.x[1], 1, M, N, K, 0, tb, 0);
        ASSERT(0, memcmp(dx, dx2, (size_t)(M * K) * sizeof *dx));
        ASSERT(0, memcmp(dw, dw2, (size_t)(K * N) * sizeof *dw));
        ASSERT(0, memcmp(db, db2, (size_t)N * sizeof *db));
        /* NULL gradients are skipped */
        k_linear_bwd(NULL, NULL, db, c.dout, c.x[0], c.x[1], M, N, K, tb);
        k_add_bwd(NULL, db2, c.dout, 2, so, so, sb);
        ASSERT(0, memcmp(db, db2, (size_t)N * sizeof *db));
        free(mm), free(want), free(dx), free(dw), free(db), free(dx2), free(dw2), free(db2);
        free(dmm);
        if (M * N * K > 100000) c.h = 1e-2f; /* bilinear in x and w, linear in b */
        gradcheck(&c, 100);
        case_free(&c);
    }
}

/* ---- broadcasting binary ops -------------------------------------------- */

/* A double-precision reference of each binary op of the table
 * (ACC_EW_BINARY_OPS): ref_<op>(x, y). */
static double ref_add(double x, double y) { return x + y; }
static double ref_sub(double x, double y) { return x - y; }
static double ref_mul(double x, double y) { return x * y; }
static double ref_div(double x, double y) { return x / y; }
static double ref_eq(double x, double y) { return x == y; }
static double ref_ne(double x, double y) { return x != y; }
static double ref_lt(double x, double y) { return x < y; }
static double ref_le(double x, double y) { return x <= y; }
static double ref_gt(double x, double y) { return x > y; }
static double ref_ge(double x, double y) { return x >= y; }

/* The comparisons (0/1 out, no gradient) are checked on operands from a
 * grid of quarters, so that ties occur (eq's 1, le's and ge's edges). */
static bool is_cmp(const char *op) {
    static const char *const cmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(op, cmp[i])) return true;
    return false;
}
static float *grid_buf(int64_t n) {
    float *p = xmalloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)((int)(rnd_u32() % 9) - 4) * 0.25f;
    return p;
}

/* The binary ops under test, from the table: their kernels (the backward
 * given the operands if it reads them) and their references. */
#define BIN_BWD_OPERANDS_0
#define BIN_BWD_OPERANDS_1 c->x[0], c->x[1],
#define BIN_CASE(code, name, reads)                                                                               \
    static void bin_fwd_##name(Case *c) { k_##name##_fwd(c->out, c->x[0], c->x[1], c->nd, c->s0, c->s1, c->s2); } \
    static void bin_bwd_##name(Case *c) {                                                                         \
        k_##name##_bwd(c->dx[0], c->dx[1], c->dout, BIN_BWD_OPERANDS_##reads c->nd, c->s0, c->s1, c->s2);         \
    }
ACC_EW_BINARY_OPS(BIN_CASE)
#undef BIN_CASE
typedef struct {
    const char *name;
    void (*fwd)(Case *), (*bwd)(Case *);
    double (*ref)(double, double);
} BinaryOp;
static const BinaryOp bin_ops[] = {
#define BIN_OP(code, name, reads) {#name, bin_fwd_##name, bin_bwd_##name, ref_##name},
    ACC_EW_BINARY_OPS(BIN_OP)
#undef BIN_OP
};
#define N_BIN_OPS (int)(sizeof bin_ops / sizeof *bin_ops)

// naive broadcasting a OP b by multi-index arithmetic, in double
static void bin_ref(double *out, const BinaryOp *op, const float *a, const float *b, int nd, const int64_t *os,
                    const int64_t *as, const int64_t *bs) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= os[d];
    for (int64_t e = 0; e < n; e++) {
        int64_t rem = e, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t i = rem % os[d];
            rem /= os[d];
            ia += (as[d] == 1 ? 0 : i) * sa;
            ib += (bs[d] == 1 ? 0 : i) * sb;
            sa *= as[d];
            sb *= bs[d];
        }
        double x = a[ia], y = b[ib];
        out[e] = op->ref(x, y);
    }
}

typedef struct {
    const char *what;
    int nd;
    int64_t os[K_MAX_DIMS], as[K_MAX_DIMS], bs[K_MAX_DIMS];
} BinShape;

static void test_binary(void) {
    static const BinShape shapes[] = {
        {"same [2,3,4]", 3, {2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
        {"bias [2,3,8]+[1,1,8]", 3, {2, 3, 8}, {2, 3, 8}, {1, 1, 8}},
        {"bias-left [1,1,8]+[2,3,8]", 3, {2, 3, 8}, {1, 1, 8}, {2, 3, 8}},
        {"[2,1,4]*[2,3,1]", 3, {2, 3, 4}, {2, 1, 4}, {2, 3, 1}},
        {"scalar [2,3,4]+[1,1,1]", 3, {2, 3, 4}, {2, 3, 4}, {1, 1, 1}},
        {"column [6,5]+[6,1]", 2, {6, 5}, {6, 5}, {6, 1}},
        {"4-d [2,1,3,1]+[1,4,1,5]", 4, {2, 4, 3, 5}, {2, 1, 3, 1}, {1, 4, 1, 5}},
        {"6-d [2,1,2,3,1,2]+[1,2,1,3,2,1]", 6, {2, 2, 2, 3, 2, 2}, {2, 1, 2, 3, 1, 2}, {1, 2, 1, 3, 2, 1}},
        {"big bias [64,33,40]+[40]", 3, {64, 33, 40}, {64, 33, 40}, {1, 1, 40}},
        {"big [64,1,40]*[64,33,1]", 3, {64, 33, 40}, {64, 1, 40}, {64, 33, 1}},
        {"big same [3,100,300]", 3, {3, 100, 300}, {3, 100, 300}, {3, 100, 300}},
        {"big scalar [3,100,300]+[1]", 3, {3, 100, 300}, {3, 100, 300}, {1, 1, 1}},
        {"big column [600,80]+[600,1]", 2, {600, 80}, {600, 80}, {600, 1}},
    };
    static char names[N_BIN_OPS * sizeof shapes / sizeof shapes[0]][80];
    int ns = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < N_BIN_OPS; k++) {
            const BinShape *bs = &shapes[s];
            const BinaryOp *op = &bin_ops[k];
            char *name = names[s * N_BIN_OPS + k];
            snprintf(name, sizeof names[0], "%s %s", op->name, bs->what);
            int64_t on = 1, an = 1, bn = 1;
            for (int d = 0; d < bs->nd; d++) on *= bs->os[d], an *= bs->as[d], bn *= bs->bs[d];
            Case c = case_new(name, op->fwd, op->bwd, on, 0);
            c.nd = bs->nd;
            memcpy(c.s0, bs->os, sizeof c.s0);
            memcpy(c.s1, bs->as, sizeof c.s1);
            memcpy(c.s2, bs->bs, sizeof c.s2);
            bool cmp = is_cmp(op->name);
            case_in(&c, cmp ? grid_buf(an) : rnd_buf(an, -1, 1), an, 1);
            case_in(&c,
                    cmp                        ? grid_buf(bn)
                    : !strcmp(op->name, "div") ? rnd_signed_buf(bn, 0.5f, 1.5f)
                                               : rnd_buf(bn, -1, 1),
                    bn, 1);
            c.fwd(&c);
            double *ref = xmalloc((size_t)on * sizeof *ref);
            bin_ref(ref, op, c.x[0], c.x[1], c.nd, c.s0, c.s1, c.s2);
            if (!ASSERT_TRUE(max_abs_diff(c.out, ref, on) < 1e-6)) printf("  forward of %s\n", name);
            free(ref);
            if (an == on) { /* in place over a */
                float *y = xmalloc((size_t)on * sizeof *y);
                memcpy(y, c.x[0], (size_t)on * sizeof *y);
                Case ip = c;
                ip.out = y;
                ip.x[0] = y;
                op->fwd(&ip);
                if (!ASSERT_TRUE(memcmp(y, c.out, (size_t)on * sizeof *y) == 0))
                    printf("  in-place forward of %s\n", name);
                free(y);
            }
            /* a comparison's gradient is 0 away from ties: b off the grid by
             * an eighth, more than any step h below */
            if (cmp)
                for (int64_t i = 0; i < bn; i++) c.x[1][i] += 0.125f;
            if (on > 1000) /* one b element feeds many outputs: see gradcheck */
                c.h = 1e-2f;
            gradcheck(&c, on > 1000 ? 8 : 200);
            case_free(&c);
        }
}

/* ---- unary ops ---------------------------------------------------------- */

/* A double-precision reference of each plain unary op of the table
 * (ACC_EW_UNARY_OPS): ref_<op>(x). */
static double ref_gelu(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}
static double ref_relu(double x) { return x > 0 ? x : 0; }
static double ref_silu(double x) { return x / (1.0 + exp(-x)); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_exp(double x) { return exp(x); }
static double ref_gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_log(double x) { return log(x); }
static double ref_sqrt(double x) { return sqrt(x); }
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }
static double ref_abs(double x) { return fabs(x); }

/* The unary ops under test: scale (its factor alpha in the case's f0),
 * shift (its term beta in f0), then
 * the table's plain unary ops, their kernels and the buffer their backward
 * reads (UN_SAVED_x: the input, UN_SAVED_out: the output). */
enum { UN_SAVED_x, UN_SAVED_out };
typedef struct {
    const char *name;
    void (*fwd)(float *, const float *, int64_t);
    void (*bwd)(float *, const float *, const float *, int64_t);
    int saved_out;
    double (*ref)(double);
} UnaryOp;
static const UnaryOp un_ops[] = {{"scale", NULL, NULL, 0, NULL},
                                 {"shift", NULL, NULL, 0, NULL},
#define UN_OP(code, name, saved) {#name, k_##name##_fwd, k_##name##_bwd, UN_SAVED_##saved, ref_##name},
                                 ACC_EW_UNARY_OPS(UN_OP)
#undef UN_OP
};
#define N_UN_OPS (int)(sizeof un_ops / sizeof *un_ops)

static void un_fwd(Case *c) {
    const UnaryOp *u = &un_ops[c->i0];
    if (u->fwd) u->fwd(c->out, c->x[0], c->on);
    else if (c->i0 == 1) k_shift_fwd(c->out, c->x[0], c->f0, c->on);
    else k_scale_fwd(c->out, c->x[0], c->f0, c->on);
}

static void un_bwd(Case *c) {
    const UnaryOp *u = &un_ops[c->i0];
    if (u->bwd) u->bwd(c->dx[0], c->dout, u->saved_out ? c->out : c->x[0], c->on);
    else if (c->i0 == 1) k_shift_bwd(c->dx[0], c->dout, c->on);
    else k_scale_bwd(c->dx[0], c->dout, c->f0, c->on);
}

/* Each unary op against its reference, in place, and by finite differences;
 * inputs away from 0 for relu, whose derivative jumps there, and positive
 * for log. */
static void test_unary(void) {
    static char names[2 * N_UN_OPS][48];
    for (int big = 0; big < 2; big++)
        for (int op = 0; op < N_UN_OPS; op++) {
            int64_t n = big ? 40000 : 60;
            const UnaryOp *u = &un_ops[op];
            char *name = names[big * N_UN_OPS + op];
            snprintf(name, sizeof names[0], "%s n=%lld", u->name, (long long)n);
            Case c = case_new(name, un_fwd, un_bwd, n, 0);
            c.i0 = op;
            c.f0 = -1.7f;
            case_in(&c,
                    !strcmp(u->name, "relu") || !strcmp(u->name, "abs") ? rnd_signed_buf(n, 0.05f, 2.0f)
                    : !strcmp(u->name, "log") || !strcmp(u->name, "sqrt") || !strcmp(u->name, "rsqrt")
                        ? rnd_buf(n, 0.2f, 3.0f)
                        : rnd_buf(n, -2.5f, 2.5f),
                    n, 1);
            c.fwd(&c);
            double err = 0.0;
            for (int64_t i = 0; i < n; i++) {
                double r = u->ref ? u->ref(c.x[0][i]) : op == 1 ? (double)c.x[0][i] + c.f0 : c.f0 * (double)c.x[0][i];
                err = fmax(err, fabs(c.out[i] - r) / fmax(1.0, fabs(r)));
            }
            if (!ASSERT_TRUE(err < 1e-5)) printf("  forward of %s: rel err %g\n", name, err);
            float *y = xmalloc((size_t)n * sizeof *y); /* in place */
            memcpy(y, c.x[0], (size_t)n * sizeof *y);
            Case ip = c;
            ip.out = y;
            ip.x[0] = y;
            un_fwd(&ip);
            ASSERT_TRUE(memcmp(y, c.out, (size_t)n * sizeof *y) == 0);
            free(y);
            gradcheck(&c, big ? 8 : 200);
            case_free(&c);
        }
}

/* abs at 0: PyTorch's gradient sign(0) = 0; sqrt and rsqrt at 0: +inf and
 * inf, of a negative: NaN (no finite differences there). */
static void test_unary_edges(void) {
    float x[3] = {0.0f, -0.0f, -1.0f}, y[3], dx[3] = {0.5f, 0.5f, 0.5f}, g[3] = {1.0f, 1.0f, 1.0f};
    k_abs_fwd(y, x, 3);
    ASSERT_TRUE(y[0] == 0.0f && y[1] == 0.0f && !signbit(y[1]) && y[2] == 1.0f);
    k_abs_bwd(dx, g, x, 3);
    ASSERT_TRUE(dx[0] == 0.5f && dx[1] == 0.5f && dx[2] == -0.5f);
    k_sqrt_fwd(y, x, 3);
    ASSERT_TRUE(y[0] == 0.0f && isnan(y[2]));
    k_rsqrt_fwd(y, x, 3);
    ASSERT_TRUE(isinf(y[0]) && y[0] > 0 && isinf(y[1]) && isnan(y[2]));
}

/* The comparisons with a number (ACC_EW_CMP_SCALAR_OPS): the forward on a
 * grid with ties against the double relation, in place; a NaN compares
 * false (ne: true); the gradient (none) by finite differences off the ties. */
static void cs_fwd(Case *c) {
    switch (c->i0) {
#define CS_FWD(code, name, binary) \
    case ACC_OP_##code: k_##name##_fwd(c->out, c->x[0], c->f0, c->on); break;
        ACC_EW_CMP_SCALAR_OPS(CS_FWD)
#undef CS_FWD
    default: break;
    }
}
static void cs_bwd(Case *c) {
    switch (c->i0) {
#define CS_BWD(code, name, binary) \
    case ACC_OP_##code: k_##name##_bwd(c->dx[0], c->dout, c->on); break;
        ACC_EW_CMP_SCALAR_OPS(CS_BWD)
#undef CS_BWD
    default: break;
    }
}
static double (*cs_ref(int binary))(double, double) {
    return binary == ACC_OP_EQ   ? ref_eq
           : binary == ACC_OP_NE ? ref_ne
           : binary == ACC_OP_LT ? ref_lt
           : binary == ACC_OP_LE ? ref_le
           : binary == ACC_OP_GT ? ref_gt
                                 : ref_ge;
}
static void test_cmp_scalar(void) {
    const struct {
        int code;
        const char *name;
        double (*ref)(double, double);
    } ops[] = {
#define CS_OP(code, name, binary) {ACC_OP_##code, #name, cs_ref(ACC_OP_##binary)},
        ACC_EW_CMP_SCALAR_OPS(CS_OP)
#undef CS_OP
    };
    ASSERT(6, (int)(sizeof ops / sizeof *ops));
    static char names[6][48];
    for (int k = 0; k < 6; k++) {
        int64_t n = 500;
        snprintf(names[k], sizeof names[0], "%s n=%lld", ops[k].name, (long long)n);
        Case c = case_new(names[k], cs_fwd, cs_bwd, n, 0);
        c.i0 = ops[k].code;
        c.f0 = 0.25f;
        case_in(&c, grid_buf(n), n, 1);
        c.x[0][0] = NAN;
        c.fwd(&c);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += c.out[i] != (float)ops[k].ref(c.x[0][i], c.f0);
        if (!ASSERT(0, bad)) printf("  forward of %s\n", names[k]);
        ASSERT_TRUE(c.out[0] == (ops[k].code == ACC_OP_NE_SCALAR ? 1.0f : 0.0f));
        c.x[0][0] = 1.0f;
        for (int64_t i = 0; i < n; i++) c.x[0][i] += 0.125f; /* off the ties */
        gradcheck(&c, 50);
        case_free(&c);
    }
}

/* The comparisons of i32 operands are exact: 2^24 + 1 and 2^24 differ,
 * though they are one float; broadcast [2,3] against [3] and [2,1]; with a
 * number compared in double. Against the integer relation. */
static void test_cmp_i32(void) {
    static const int codes[6] = {ACC_OP_EQ, ACC_OP_NE, ACC_OP_LT, ACC_OP_LE, ACC_OP_GT, ACC_OP_GE};
    static const int scodes[6] = {ACC_OP_EQ_SCALAR, ACC_OP_NE_SCALAR, ACC_OP_LT_SCALAR,
                                  ACC_OP_LE_SCALAR, ACC_OP_GT_SCALAR, ACC_OP_GE_SCALAR};
    const int32_t a[6] = {16777217, 16777216, -5, INT32_MAX, INT32_MIN, 0};
    const int32_t b3[3] = {16777216, 16777216, -5}, b21[2] = {16777217, 0};
    const int64_t so[2] = {2, 3}, s3[2] = {1, 3}, s21[2] = {2, 1};
    int bad = 0;
    for (int k = 0; k < 6; k++) {
        float out[6];
        for (int form = 0; form < 3; form++) {
            if (form < 2) k_cmp_i32_fwd(codes[k], out, a, form ? b21 : b3, 2, so, so, form ? s21 : s3);
            else k_cmp_scalar_i32_fwd(scodes[k], out, a, 16777216.0f, 6);
            for (int e = 0; e < 6; e++) {
                int64_t x = a[e], y = form == 0 ? b3[e % 3] : form == 1 ? b21[e / 3] : 16777216;
                int want = k == 0   ? x == y
                           : k == 1 ? x != y
                           : k == 2 ? x < y
                           : k == 3 ? x <= y
                           : k == 4 ? x > y
                                    : x >= y;
                bad += out[e] != (float)want;
            }
        }
    }
    ASSERT(0, bad);
}

/* float(x): i32 values as f32, exact up to 2^24 in magnitude. It has no
 * gradient (an i32 input), so nothing to check by differences: the forward
 * check stands for its entry in test_fd_coverage. */
static void test_float(void) {
    int32_t x[6] = {0, -1, 7, 16777216, -16777216, 123456};
    float y[6];
    k_float_fwd(y, x, 6);
    int bad = 0;
    for (int i = 0; i < 6; i++) bad += y[i] != (float)(double)x[i] || (double)y[i] != (double)x[i];
    if (test_true(__FILE__, __LINE__, "float", bad == 0)) fd_mark("float (no gradient: an i32 input)");
}

/* ---- layernorm, rmsnorm, softmax ---------------------------------------- */

static void ln_fwd(Case *c) { k_layernorm_fwd(c->out, c->aux, c->x[0], c->x[1], c->x[2], c->d[0], c->d[1], c->f0); }

static void ln_bwd(Case *c) {
    k_layernorm_bwd(c->dx[0], c->dx[1], c->dx[2], c->dout, c->x[0], c->x[1], c->aux, c->d[0], c->d[1]);
}

static void rms_fwd(Case *c) { k_rmsnorm_fwd(c->out, c->aux, c->x[0], c->x[1], c->d[0], c->d[1], c->f0); }

static void rms_bwd(Case *c) { k_rmsnorm_bwd(c->dx[0], c->dx[1], c->dout, c->x[0], c->x[1], c->aux, c->d[0], c->d[1]); }

static void sm_fwd(Case *c) { k_softmax_fwd(c->out, c->x[0], c->d[0], c->d[1]); }

static void sm_bwd(Case *c) { k_softmax_bwd(c->dx[0], c->dout, c->out, c->d[0], c->d[1]); }

static void test_norms(void) {
    static const int64_t sizes[2][2] = {{5, 16}, {400, 100}};
    static char names[6][48];
    for (int s = 0; s < 2; s++) {
        int64_t N = sizes[s][0], C = sizes[s][1], n = N * C;
        int checks = s ? 8 : 200;

        /* with a bias, and without (b NULL: PyTorch's bias=False) */
        static char ln_names[2][2][48];
        Case c;
        double err;
        for (int nob = 0; nob < 2; nob++) {
            snprintf(ln_names[s][nob], sizeof ln_names[0][0], "layernorm%s [%lld,%lld]", nob ? " (no bias)" : "",
                     (long long)N, (long long)C);
            c = case_new(ln_names[s][nob], ln_fwd, ln_bwd, n, 2 * N);
            c.d[0] = N, c.d[1] = C, c.f0 = 1e-5f;
            case_in(&c, rnd_buf(n, -2, 2), n, 1);
            case_in(&c, rnd_buf(C, 0.5f, 1.5f), C, 1);
            if (!nob) case_in(&c, rnd_buf(C, -1, 1), C, 1);
            c.fwd(&c);
            err = 0.0;
            for (int64_t r = 0; r < N; r++) {
                const float *x = c.x[0] + r * C;
                double mean = 0, var = 0;
                for (int64_t j = 0; j < C; j++) mean += x[j];
                mean /= (double)C;
                for (int64_t j = 0; j < C; j++) var += (x[j] - mean) * (x[j] - mean);
                double rstd = 1.0 / sqrt(var / (double)C + 1e-5);
                for (int64_t j = 0; j < C; j++)
                    err = fmax(err,
                               fabs(c.out[r * C + j] - ((x[j] - mean) * rstd * c.x[1][j] + (nob ? 0.0 : c.x[2][j]))));
                err = fmax(err, fabs(c.aux[2 * r] - mean) + fabs(c.aux[2 * r + 1] - rstd) / rstd);
            }
            ASSERT_TRUE(err < 1e-5);
            gradcheck(&c, checks);
            case_free(&c);
        }

        snprintf(names[3 * s + 1], sizeof names[0], "rmsnorm [%lld,%lld]", (long long)N, (long long)C);
        c = case_new(names[3 * s + 1], rms_fwd, rms_bwd, n, N);
        c.d[0] = N, c.d[1] = C, c.f0 = 1e-5f;
        case_in(&c, rnd_buf(n, -2, 2), n, 1);
        case_in(&c, rnd_buf(C, 0.5f, 1.5f), C, 1);
        c.fwd(&c);
        err = 0.0;
        for (int64_t r = 0; r < N; r++) {
            const float *x = c.x[0] + r * C;
            double ss = 0;
            for (int64_t j = 0; j < C; j++) ss += (double)x[j] * x[j];
            double rstd = 1.0 / sqrt(ss / (double)C + 1e-5);
            for (int64_t j = 0; j < C; j++) err = fmax(err, fabs(c.out[r * C + j] - x[j] * rstd * c.x[1][j]));
            err = fmax(err, fabs(c.aux[r] - rstd) / rstd);
        }
        ASSERT_TRUE(err < 1e-5);
        gradcheck(&c, checks);
        case_free(&c);

        snprintf(names[3 * s + 2], sizeof names[0], "softmax [%lld,%lld]", (long long)N, (long long)C);
        c = case_new(names[3 * s + 2], sm_fwd, sm_bwd, n, 0);
        c.d[0] = N, c.d[1] = C;
        case_in(&c, rnd_buf(n, -3, 3), n, 1);
        c.fwd(&c);
        err = 0.0;
        for (int64_t r = 0; r < N; r++) {
            const float *x = c.x[0] + r * C;
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < C; j++) mx = fmax(mx, x[j]);
            for (int64_t j = 0; j < C; j++) sum += exp(x[j] - mx);
            for (int64_t j = 0; j < C; j++) err = fmax(err, fabs(c.out[r * C + j] - exp(x[j] - mx) / sum));
        }
        ASSERT_TRUE(err < 1e-6);
        float *y = xmalloc((size_t)n * sizeof *y); /* in place */
        memcpy(y, c.x[0], (size_t)n * sizeof *y);
        k_softmax_fwd(y, y, N, C);
        ASSERT_TRUE(memcmp(y, c.out, (size_t)n * sizeof *y) == 0);
        free(y);
        gradcheck(&c, checks);
        case_free(&c);
    }
}

/* ---- attention ---------------------------------------------------------- */

static void att_fwd(Case *c) {
    k_attention_fwd(c->out, c->aux, c->x[0], c->x[1], c->x[2], c->d[0], c->d[1], c->d[2], c->d[3], c->d[4], c->d[5],
                    c->i0);
}

static void att_bwd(Case *c) {
    k_attention_bwd(c->dx[0], c->dx[1], c->dx[2], c->dout, c->x[0], c->x[1], c->x[2], c->out, c->aux, c->d[0], c->d[1],
                    c->d[2], c->d[3], c->d[4], c->d[5], c->i0);
}

// naive attention with an explicit score row and softmax, in double
static void att_ref(double *out, double *lse, const float *q, const float *k, const float *v, int64_t B, int64_t T,
                    int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    double *sc = xmalloc((size_t)S * sizeof *sc);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            int64_t kh = h / (H / KVH);
            for (int64_t t = 0; t < T; t++) {
                const float *qi = q + (b * T + t) * H * D + h * D;
                int64_t ns = causal ? t + 1 : S;
                double mx = -INFINITY, sum = 0;
                for (int64_t s = 0; s < ns; s++) {
                    const float *kj = k + (b * S + s) * KVH * D + kh * D;
                    double dot = 0;
                    for (int64_t i = 0; i < D; i++) dot += (double)qi[i] * kj[i];
                    sc[s] = dot / sqrt((double)D);
                    mx = fmax(mx, sc[s]);
                }
                for (int64_t s = 0; s < ns; s++) sum += exp(sc[s] - mx);
                lse[(b * H + h) * T + t] = mx + log(sum);
                for (int64_t i = 0; i < D; i++) {
                    double o = 0;
                    for (int64_t s = 0; s < ns; s++) o += exp(sc[s] - mx) / sum * v[(b * S + s) * KVH * D + kh * D + i];
                    out[(b * T + t) * H * D + h * D + i] = o;
                }
            }
        }
    free(sc);
}

static void test_attention(void) {
    static const struct {
        const char *name;
        int64_t B, T, S, H, KVH, D;
        int causal, checks;
    } cases[] = {
        {"attention MHA causal", 2, 5, 5, 2, 2, 4, 1, 200},
        {"attention GQA non-causal", 2, 4, 6, 4, 2, 4, 0, 200},
        {"attention GQA causal (MQA)", 1, 7, 7, 4, 1, 8, 1, 200},
        {"attention GQA causal T=150 (key blocks)", 1, 150, 150, 4, 2, 8, 1, 12},
        {"attention MHA non-causal T=70 S=130", 2, 70, 130, 2, 2, 16, 0, 12},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t B = cases[i].B, T = cases[i].T, S = cases[i].S, H = cases[i].H, KVH = cases[i].KVH, D = cases[i].D;
        int64_t nq = B * T * H * D, nk = B * S * KVH * D;
        Case c = case_new(cases[i].name, att_fwd, att_bwd, nq, B * H * T);
        c.d[0] = B, c.d[1] = T, c.d[2] = S, c.d[3] = H, c.d[4] = KVH, c.d[5] = D;
        c.i0 = cases[i].causal;
        case_in(&c, rnd_buf(nq, -1.5f, 1.5f), nq, 1);
        case_in(&c, rnd_buf(nk, -1.5f, 1.5f), nk, 1);
        case_in(&c, rnd_buf(nk, -1, 1), nk, 1);
        c.fwd(&c);
        double *ro = xmalloc((size_t)nq * sizeof *ro), *rl = xmalloc((size_t)(B * H * T) * sizeof *rl);
        att_ref(ro, rl, c.x[0], c.x[1], c.x[2], B, T, S, H, KVH, D, c.i0);
        double eo = max_abs_diff(c.out, ro, nq), el = max_abs_diff(c.aux, rl, B * H * T);
        if (!ASSERT_TRUE(eo < 1e-5 && el < 1e-5)) printf("  %s forward: out err %g, lse err %g\n", c.name, eo, el);
        free(ro);
        free(rl);
        gradcheck(&c, cases[i].checks);
        case_free(&c);
    }
}

/* ---- attention with a mask and a bias ----------------------------------- */

/* c->i1: the mask (0 none, 1 int32 in c->idx, 2 float in x[3]), its strides
 * over [B, H, T, S] in c->s1; c->i2: the bias's input (-1 none), its strides
 * in c->s0. */
static const void *attm_mask(const Case *c) { return c->i1 == 1 ? (const void *)c->idx : c->i1 == 2 ? c->x[3] : NULL; }

static void attm_fwd(Case *c) {
    k_attention_masked_fwd(c->out, c->aux, c->x[0], c->x[1], c->x[2], attm_mask(c), c->i1 == 1, c->s1,
                           c->i2 >= 0 ? c->x[c->i2] : NULL, c->s0, c->d[0], c->d[1], c->d[2], c->d[3], c->d[4], c->d[5],
                           c->i0);
}

static void attm_bwd(Case *c) {
    k_attention_masked_bwd(c->dx[0], c->dx[1], c->dx[2], c->i2 >= 0 ? c->dx[c->i2] : NULL, c->dout, c->x[0], c->x[1],
                           c->x[2], c->out, c->aux, attm_mask(c), c->i1 == 1, c->s1, c->i2 >= 0 ? c->x[c->i2] : NULL,
                           c->s0, c->d[0], c->d[1], c->d[2], c->d[3], c->d[4], c->d[5], c->i0);
}

/* Whether query t of head h of batch b attends key s under c's mask. */
static int attm_keep(const Case *c, int64_t b, int64_t h, int64_t t, int64_t s) {
    int64_t i = b * c->s1[0] + h * c->s1[1] + t * c->s1[2] + s * c->s1[3];
    return c->i1 == 1 ? c->idx[i] != 0 : c->i1 == 2 ? c->x[3][i] != 0.0f : 1;
}

/* The naive reference in double: an explicit score row over the attended
 * keys; a row with none is zero, its lse +inf. */
static void attm_ref(const Case *c, double *out, double *lse) {
    int64_t B = c->d[0], T = c->d[1], S = c->d[2], H = c->d[3], KVH = c->d[4], D = c->d[5];
    const float *q = c->x[0], *k = c->x[1], *v = c->x[2], *bias = c->i2 >= 0 ? c->x[c->i2] : NULL;
    double *sc = xmalloc((size_t)S * sizeof *sc);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++) {
                const float *qi = q + (b * T + t) * H * D + h * D;
                double mx = -INFINITY, sum = 0;
                for (int64_t s = 0; s < S; s++) {
                    const float *kj = k + (b * S + s) * KVH * D + h / (H / KVH) * D;
                    double dot = 0;
                    for (int64_t i = 0; i < D; i++) dot += (double)qi[i] * kj[i];
                    sc[s] = dot / sqrt((double)D);
                    if (bias) sc[s] += bias[b * c->s0[0] + h * c->s0[1] + t * c->s0[2] + s * c->s0[3]];
                    if ((c->i0 && s > t) || !attm_keep(c, b, h, t, s)) sc[s] = -INFINITY;
                    mx = fmax(mx, sc[s]);
                }
                for (int64_t s = 0; s < S && mx > -INFINITY; s++) sum += exp(sc[s] - mx);
                lse[(b * H + h) * T + t] = mx > -INFINITY ? mx + log(sum) : INFINITY;
                for (int64_t i = 0; i < D; i++) {
                    double o = 0;
                    for (int64_t s = 0; s < S && mx > -INFINITY; s++)
                        o += exp(sc[s] - mx) / sum * v[(b * S + s) * KVH * D + h / (H / KVH) * D + i];
                    out[(b * T + t) * H * D + h * D + i] = o;
                }
            }
    free(sc);
}

/* max |a - b|, NaN where either is NaN or they differ in infinity */
static double attm_diff(const float *a, const double *b, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (isinf(a[i]) || isinf(b[i])) {
            if ((double)a[i] != b[i]) return NAN;
            continue;
        }
        double d = fabs((double)a[i] - b[i]);
        if (isnan(d)) return NAN;
        m = fmax(m, d);
    }
    return m;
}

/* The mask of a test case over its dims md ([B, H, T, S], 1: broadcast),
 * as floats: M_KEYS a key-padding mask [B, 1, 1, S] whose batch 0 drops
 * every key; M_BLOCKS block-diagonal over [T, S] (packed sequences: three
 * blocks), M_RANDOM random; both with query row 1 dropping every key. */
enum { M_KEYS = 1, M_BLOCKS, M_RANDOM };
static float *attm_make(int kind, const int64_t md[4], int64_t T, int64_t S) {
    int64_t n = md[0] * md[1] * md[2] * md[3];
    float *m = zero_buf(n);
    for (int64_t e = 0; e < n; e++) {
        int64_t s = e % md[3], t = e / md[3] % md[2], b = e / (md[3] * md[2] * md[1]);
        int keep = kind == M_KEYS     ? b >= 1 && (rnd_u32() % 3 != 0 || s == 0)
                   : kind == M_BLOCKS ? t != 1 && t * 3 / T == s * 3 / S
                                      : t != 1 && (rnd_u32() % 3 != 0 || s == t % S);
        m[e] = keep ? 0.5f + (float)(e % 2) : 0.0f; /* any nonzero keeps */
    }
    return m;
}

static void test_attention_masked(void) {
    /* bias and mask shapes as dims over [B, H, T, S] (1: broadcast), 0 in
     * dim 0: none */
    static const struct {
        const char *name;
        int64_t B, T, S, H, KVH, D;
        int causal, mask, kind;
        int64_t mask_dims[4], bias[4];
        int checks;
    } cases[] = {
        {"attention masked i32, bias [H,T,S]", 2, 5, 6, 2, 2, 4, 0, 1, M_KEYS, {2, 1, 1, 6}, {1, 2, 5, 6}, 200},
        {"attention masked f32 causal GQA", 2, 6, 6, 4, 2, 4, 1, 2, M_KEYS, {2, 1, 1, 6}, {0}, 200},
        {"attention bias [B,H,T,S] causal", 2, 5, 5, 2, 1, 4, 1, 0, 0, {0}, {2, 2, 5, 5}, 200},
        {"attention bias [B,1,1,S] (additive padding)", 2, 4, 7, 2, 2, 8, 0, 0, 0, {0}, {2, 1, 1, 7}, 200},
        {"attention masked i32, bias [T,S], T=70 S=130 (key blocks)",
         2,
         70,
         130,
         2,
         2,
         16,
         0,
         1,
         M_KEYS,
         {2, 1, 1, 130},
         {1, 1, 70, 130},
         12},
        {"attention masked i32 causal T=150, bias [B,H,1,1]",
         1,
         150,
         150,
         2,
         2,
         8,
         1,
         1,
         M_KEYS,
         {1, 1, 1, 150},
         {1, 2, 1, 1},
         12},
        {"attention mask [T,S] i32 block-diagonal", 2, 6, 6, 2, 2, 4, 0, 1, M_BLOCKS, {1, 1, 6, 6}, {0}, 200},
        {"attention mask [T,S] f32 block-diagonal causal GQA, bias [H,T,S]",
         2,
         6,
         6,
         4,
         2,
         4,
         1,
         2,
         M_BLOCKS,
         {1, 1, 6, 6},
         {1, 4, 6, 6},
         200},
        {"attention mask [B,1,T,S] i32 causal MQA", 2, 5, 5, 2, 1, 4, 1, 1, M_RANDOM, {2, 1, 5, 5}, {0}, 200},
        {"attention mask [B,H,T,S] f32, bias [B,1,1,S]",
         2,
         4,
         7,
         2,
         2,
         8,
         0,
         2,
         M_RANDOM,
         {2, 2, 4, 7},
         {2, 1, 1, 7},
         200},
        {"attention mask [B,H,T,S] i32 T=70 S=130 (key blocks)",
         1,
         70,
         130,
         2,
         2,
         16,
         0,
         1,
         M_RANDOM,
         {1, 2, 70, 130},
         {0},
         12},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t B = cases[i].B, T = cases[i].T, S = cases[i].S, H = cases[i].H, KVH = cases[i].KVH, D = cases[i].D;
        int64_t nq = B * T * H * D, nk = B * S * KVH * D;
        const int64_t full[4] = {B, H, T, S};
        Case c = case_new(cases[i].name, attm_fwd, attm_bwd, nq, B * H * T);
        c.d[0] = B, c.d[1] = T, c.d[2] = S, c.d[3] = H, c.d[4] = KVH, c.d[5] = D;
        c.i0 = cases[i].causal, c.i1 = cases[i].mask, c.i2 = -1;
        case_in(&c, rnd_buf(nq, -1.5f, 1.5f), nq, 1);
        case_in(&c, rnd_buf(nk, -1.5f, 1.5f), nk, 1);
        case_in(&c, rnd_buf(nk, -1, 1), nk, 1);
        if (c.i1) {
            const int64_t *md = cases[i].mask_dims;
            int64_t stride = 1, nm = md[0] * md[1] * md[2] * md[3];
            for (int j = 3; j >= 0; j--) {
                c.s1[j] = md[j] == 1 && full[j] > 1 ? 0 : stride;
                stride *= md[j];
            }
            float *mf = attm_make(cases[i].kind, md, T, S);
            if (c.i1 == 1) {
                c.idx = xmalloc((size_t)nm * sizeof *c.idx);
                for (int64_t j = 0; j < nm; j++) c.idx[j] = mf[j] != 0.0f ? 1 + (int32_t)(j % 3) : 0;
                free(mf);
            } else {
                case_in(&c, mf, nm, 0);
            }
        }
        if (cases[i].bias[0]) {
            const int64_t *bd = cases[i].bias;
            int64_t stride = 1, nb = bd[0] * bd[1] * bd[2] * bd[3];
            for (int j = 3; j >= 0; j--) {
                c.s0[j] = bd[j] == 1 && full[j] > 1 ? 0 : stride;
                stride *= bd[j];
            }
            c.i2 = c.nin;
            case_in(&c, rnd_buf(nb, -1.0f, 1.0f), nb, 1);
        }
        c.fwd(&c);
        double *ro = xmalloc((size_t)nq * sizeof *ro), *rl = xmalloc((size_t)(B * H * T) * sizeof *rl);
        attm_ref(&c, ro, rl);
        double eo = attm_diff(c.out, ro, nq), el = attm_diff(c.aux, rl, B * H * T);
        if (!ASSERT_TRUE(eo < 1e-5 && el < 1e-5)) printf("  %s forward: out err %g, lse err %g\n", c.name, eo, el);
        /* the rows that attend to no key (batch 0 of a key-padding mask, row
         * 1 of the others): zeros ... */
        int64_t empty = 0;
        int zero = 1;
        for (int64_t r = 0; r < B * H * T; r++) {
            if (rl[r] != INFINITY) continue;
            int64_t t = r % T, h = r / T % H, b = r / (T * H);
            empty++;
            for (int64_t j = 0; j < D; j++) zero &= c.out[((b * T + t) * H + h) * D + j] == 0.0f;
        }
        if (c.i1 && !ASSERT_TRUE(empty > 0 && zero))
            printf("  %s: %lld empty rows, zero %d\n", c.name, (long long)empty, zero);
        gradcheck(&c, cases[i].checks);
        if (c.i1) { /* ... and their queries get no gradient: another backward leaves those rows of dq */
            int untouched = 1;
            float *before = xmalloc((size_t)nq * sizeof *before);
            memcpy(before, c.dx[0], (size_t)nq * sizeof *before);
            attm_bwd(&c);
            for (int64_t r = 0; r < B * H * T; r++) {
                if (rl[r] != INFINITY) continue;
                int64_t t = r % T, h = r / T % H, b = r / (T * H), at = ((b * T + t) * H + h) * D;
                for (int64_t j = 0; j < D; j++) untouched &= c.dx[0][at + j] == before[at + j];
            }
            free(before);
            ASSERT_TRUE(untouched);
        }
        free(ro);
        free(rl);
        case_free(&c);
    }
    /* a -inf bias drops its key as the mask does: a row of -inf is zero */
    int64_t B = 1, T = 3, S = 4, H = 1, D = 4, nq = B * T * H * D;
    Case c = case_new("attention -inf bias", attm_fwd, attm_bwd, nq, B * H * T);
    c.d[0] = B, c.d[1] = T, c.d[2] = S, c.d[3] = H, c.d[4] = H, c.d[5] = D;
    c.i2 = 3, c.s0[2] = S, c.s0[3] = 1;
    case_in(&c, rnd_buf(nq, -1, 1), nq, 1);
    case_in(&c, rnd_buf(B * S * D, -1, 1), B * S * D, 1);
    case_in(&c, rnd_buf(B * S * D, -1, 1), B * S * D, 1);
    float *bias = case_in(&c, rnd_buf(T * S, -1, 1), T * S, 1);
    for (int64_t s = 0; s < S; s++) bias[S + s] = -INFINITY; /* row 1: every key dropped */
    bias[2 * S + 1] = -INFINITY;                             /* row 2: key 1 dropped */
    c.fwd(&c);
    double ro[12], rl[3];
    attm_ref(&c, ro, rl);
    double eo = attm_diff(c.out, ro, nq), el = attm_diff(c.aux, rl, B * H * T);
    if (!ASSERT_TRUE(eo < 1e-6 && el < 1e-6)) printf("  -inf bias: out err %g, lse err %g\n", eo, el);
    ASSERT_TRUE(c.out[D] == 0.0f && c.aux[1] == INFINITY);
    for (int j = 0; j < 4; j++) c.dx[j] = zero_buf(c.xn[j]);
    attm_bwd(&c);
    int finite = 1;
    for (int j = 0; j < 4; j++)
        for (int64_t e = 0; e < c.xn[j]; e++)
            finite &= !isnan(c.dx[j][e]) && (j != 3 || e < S || e >= 2 * S || c.dx[3][e] == 0.0f);
    ASSERT_TRUE(finite);
    case_free(&c);
}

/* ---- rope --------------------------------------------------------------- */

static void rope_fwd(Case *c) { k_rope_fwd(c->out, c->x[0], c->d[0], c->d[1], c->d[2], c->d[3], c->f0); }

static void rope_bwd(Case *c) { k_rope_bwd(c->dx[0], c->dout, c->d[0], c->d[1], c->d[2], c->d[3], c->f0); }

static void test_rope(void) {
    int64_t B = 2, T = 5, H = 3, D = 8, n = B * T * H * D;
    Case c = case_new("rope", rope_fwd, rope_bwd, n, 0);
    c.d[0] = B, c.d[1] = T, c.d[2] = H, c.d[3] = D, c.f0 = 100.0f;
    case_in(&c, rnd_buf(n, -1, 1), n, 1);
    c.fwd(&c);
    double err = 0.0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < D / 2; i++) {
                    int64_t o = ((b * T + t) * H + h) * D;
                    double ang = (double)t * pow(100.0, -2.0 * (double)i / (double)D);
                    double x1 = c.x[0][o + i], x2 = c.x[0][o + i + D / 2];
                    err = fmax(err, fabs(c.out[o + i] - (x1 * cos(ang) - x2 * sin(ang))));
                    err = fmax(err, fabs(c.out[o + i + D / 2] - (x2 * cos(ang) + x1 * sin(ang))));
                }
    ASSERT_TRUE(err < 1e-6);
    gradcheck(&c, 500);
    /* in place */
    float *y = xmalloc((size_t)n * sizeof *y);
    memcpy(y, c.x[0], (size_t)n * sizeof *y);
    k_rope_fwd(y, y, B, T, H, D, c.f0);
    ASSERT_TRUE(memcmp(y, c.out, (size_t)n * sizeof *y) == 0);
    free(y);
    case_free(&c);
}

/* ---- embedding and cross-entropy ---------------------------------------- */

static void emb_fwd(Case *c) { k_embedding_fwd(c->out, c->idx, c->x[0], c->d[0], c->d[1], c->d[2]); }

static void emb_bwd(Case *c) { k_embedding_bwd(c->dx[0], c->dout, c->idx, c->d[0], c->d[1], c->d[2]); }

static void xent_fwd(Case *c) { k_cross_entropy_fwd(c->out, c->aux, c->x[0], c->idx, c->d[0], c->d[1]); }

static void xent_bwd(Case *c) { k_cross_entropy_bwd(c->dx[0], c->dout, c->x[0], c->aux, c->idx, c->d[0], c->d[1]); }

static void test_embedding_xent(void) {
    static const int64_t esz[2][3] = {{9, 5, 4}, {300, 50, 130}}; /* N, V, C */
    static char names[2][48];
    for (int s = 0; s < 2; s++) {
        int64_t N = esz[s][0], V = esz[s][1], C = esz[s][2];
        snprintf(names[s], sizeof names[0], "embedding N=%lld V=%lld C=%lld", (long long)N, (long long)V, (long long)C);
        Case c = case_new(names[s], emb_fwd, emb_bwd, N * C, 0);
        c.d[0] = N, c.d[1] = V, c.d[2] = C;
        c.idx = xmalloc((size_t)N * sizeof *c.idx);
        for (int64_t i = 0; i < N; i++)
            c.idx[i] = (int32_t)(rnd_u32() % (uint32_t)(V - 1)); /* repeats, and row V-1 unused */
        case_in(&c, rnd_buf(V * C, -1, 1), V * C, 1);
        ASSERT(0, k_embedding_fwd(c.out, c.idx, c.x[0], N, V, C));
        int ok = 1;
        for (int64_t i = 0; i < N; i++)
            ok &= memcmp(c.out + i * C, c.x[0] + c.idx[i] * C, (size_t)C * sizeof(float)) == 0;
        ASSERT_TRUE(ok);
        gradcheck(&c, s ? 16 : 200);
        /* a bad index: an error code, nothing written */
        int32_t saved = c.idx[N / 2];
        float *probe = zero_buf(N * C);
        c.idx[N / 2] = (int32_t)V;
        ASSERT(1, k_embedding_fwd(probe, c.idx, c.x[0], N, V, C) != 0);
        ASSERT(1, k_embedding_bwd(probe, c.out, c.idx, N, V, C) != 0);
        c.idx[N / 2] = -1;
        ASSERT(1, k_embedding_fwd(probe, c.idx, c.x[0], N, V, C) != 0);
        int untouched = 1;
        for (int64_t i = 0; i < N * C; i++) untouched &= probe[i] == 0.0f;
        ASSERT_TRUE(untouched);
        free(probe);
        c.idx[N / 2] = saved;
        case_free(&c);
    }

    static const int64_t xsz[2][2] = {{6, 7}, {64, 600}}; /* N, V */
    static char xnames[2][48];
    for (int s = 0; s < 2; s++) {
        int64_t N = xsz[s][0], V = xsz[s][1];
        snprintf(xnames[s], sizeof xnames[0], "cross_entropy N=%lld V=%lld", (long long)N, (long long)V);
        Case c = case_new(xnames[s], xent_fwd, xent_bwd, 1, N);
        c.d[0] = N, c.d[1] = V;
        c.idx = xmalloc((size_t)N * sizeof *c.idx);
        for (int64_t i = 0; i < N; i++) c.idx[i] = (int32_t)(rnd_u32() % (uint32_t)V);
        case_in(&c, rnd_buf(N * V, -3, 3), N * V, 1);
        ASSERT(0, k_cross_entropy_fwd(c.out, c.aux, c.x[0], c.idx, N, V));
        double loss = 0.0, lerr = 0.0;
        for (int64_t r = 0; r < N; r++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < V; j++) mx = fmax(mx, c.x[0][r * V + j]);
            for (int64_t j = 0; j < V; j++) sum += exp(c.x[0][r * V + j] - mx);
            lerr = fmax(lerr, fabs(c.aux[r] - (mx + log(sum))));
            loss += mx + log(sum) - c.x[0][r * V + c.idx[r]];
        }
        loss /= (double)N;
        ASSERT_TRUE(fabs(c.out[0] - loss) < 1e-5 && lerr < 1e-5);
        gradcheck(&c, s ? 16 : 200);
        float probe = 123.0f;
        c.idx[0] = (int32_t)V;
        ASSERT(1, k_cross_entropy_fwd(&probe, c.aux, c.x[0], c.idx, N, V) != 0);
        ASSERT(1, k_cross_entropy_bwd(c.x[0], &probe, c.x[0], c.aux, c.idx, N, V) != 0);
        ASSERT_TRUE(probe == 123.0f);
        c.idx[0] = 0;
        case_free(&c);
    }
}

/* ---- dropout ------------------------------------------------------------ */

enum { DROP_SEED = 1234, DROP_STEP = 7, DROP_OP = 42 };

static void drop_fwd(Case *c) { k_dropout_fwd(c->out, c->x[0], c->on, c->f0, DROP_SEED, DROP_STEP, DROP_OP); }

static void drop_bwd(Case *c) { k_dropout_bwd(c->dx[0], c->dout, c->on, c->f0, DROP_SEED, DROP_STEP, DROP_OP); }

static void test_dropout(void) {
    int64_t n = 101;
    Case c = case_new("dropout p=0.3", drop_fwd, drop_bwd, n, 0);
    c.f0 = 0.3f;
    case_in(&c, rnd_signed_buf(n, 0.1f, 1.0f), n, 1);
    gradcheck(&c, 200);
    case_free(&c);

    /* a big tensor: reproducible, keep fraction ~ 1-p, bwd uses the fwd mask */
    n = 1 << 20;
    float p = 0.3f, scale = 1.0f / (1.0f - p);
    float *x = rnd_signed_buf(n, 0.1f, 1.0f), *y1 = zero_buf(n), *y2 = zero_buf(n);
    float *ones = xmalloc((size_t)n * sizeof *ones), *dx = zero_buf(n);
    for (int64_t i = 0; i < n; i++) ones[i] = 1.0f;
    k_dropout_fwd(y1, x, n, p, 99, 5, 3);
    k_dropout_fwd(y2, x, n, p, 99, 5, 3);
    ASSERT_TRUE(memcmp(y1, y2, (size_t)n * sizeof *y1) == 0);
    int64_t kept = 0, scaled_ok = 1, same_mask = 1;
    for (int64_t i = 0; i < n; i++) {
        int keep = y1[i] != 0.0f;
        kept += keep;
        if (keep) scaled_ok &= y1[i] == x[i] * scale;
        /* element i's mask is philox_uniform(seed, step, op, i) >= p */
        if (i < 4096) same_mask &= keep == (philox_uniform(99, 5, 3, (uint64_t)i) >= p);
    }
    double frac = (double)kept / (double)n;
    if (!ASSERT_TRUE(fabs(frac - (1.0 - p)) < 0.003))
        printf("  dropout keep fraction %g, expected %g\n", frac, 1.0 - p);
    ASSERT_TRUE(scaled_ok);
    ASSERT_TRUE(same_mask);
    k_dropout_bwd(dx, ones, n, p, 99, 5, 3);
    int match = 1;
    for (int64_t i = 0; i < n; i++) match &= (dx[i] != 0.0f) == (y1[i] != 0.0f) && (dx[i] == 0.0f || dx[i] == scale);
    ASSERT_TRUE(match);
    /* other keys give another mask */
    k_dropout_fwd(y2, x, n, p, 99, 6, 3);
    ASSERT_TRUE(memcmp(y1, y2, (size_t)n * sizeof *y1) != 0);
    k_dropout_fwd(y2, x, n, p, 99, 5, 4);
    ASSERT_TRUE(memcmp(y1, y2, (size_t)n * sizeof *y1) != 0);
    /* p = 0 is the identity, p = 1 drops everything */
    k_dropout_fwd(y2, x, n, 0.0f, 99, 5, 3);
    ASSERT_TRUE(memcmp(x, y2, (size_t)n * sizeof *x) == 0);
    k_dropout_fwd(y2, x, n, 1.0f, 99, 5, 3);
    int all_zero = 1;
    for (int64_t i = 0; i < n; i++) all_zero &= y2[i] == 0.0f;
    ASSERT_TRUE(all_zero);
    free(x);
    free(y1);
    free(y2);
    free(ones);
    free(dx);
}

/* ---- reshape, transpose, slice, concat ---------------------------------- */

static void reshape_fwd(Case *c) { k_reshape_fwd(c->out, c->x[0], c->on); }

static void reshape_bwd(Case *c) { k_reshape_bwd(c->dx[0], c->dout, c->on); }

static void tr_fwd(Case *c) { k_transpose_fwd(c->out, c->x[0], c->nd, c->s0, c->i0, c->i1); }

static void tr_bwd(Case *c) { k_transpose_bwd(c->dx[0], c->dout, c->nd, c->s0, c->i0, c->i1); }

static void slice_fwd(Case *c) { k_slice_fwd(c->out, c->x[0], c->nd, c->s0, c->i0, c->d[0], c->d[1]); }

static void slice_bwd(Case *c) { k_slice_bwd(c->dx[0], c->dout, c->nd, c->s0, c->i0, c->d[0], c->d[1]); }

static void cat_fwd(Case *c) {
    const float *xs[MAX_IN];
    for (int i = 0; i < c->nin; i++) xs[i] = c->x[i];
    k_concat_fwd(c->out, xs, c->nin, c->nd, c->s0, c->i0, c->d);
}

static void cat_bwd(Case *c) { k_concat_bwd(c->dx, c->dout, c->nin, c->nd, c->s0, c->i0, c->d); }

/* The flat index in x (shape xs) of out's element e, out being x with dims
 * d0 and d1 swapped. */
static int64_t tr_src(int64_t e, int nd, const int64_t *xs, int d0, int d1) {
    int64_t os[K_MAX_DIMS], idx[K_MAX_DIMS];
    for (int d = 0; d < nd; d++) os[d] = xs[d];
    os[d0] = xs[d1];
    os[d1] = xs[d0];
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = e % os[d];
        e /= os[d];
    }
    int64_t t = idx[d0];
    idx[d0] = idx[d1];
    idx[d1] = t;
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off = off * xs[d] + idx[d];
    return off;
}

static void test_movement(void) {
    Case c = case_new("reshape", reshape_fwd, reshape_bwd, 24, 0);
    case_in(&c, rnd_buf(24, -1, 1), 24, 1);
    gradcheck(&c, 200);
    case_free(&c);

    static const struct {
        const char *name;
        int nd;
        int64_t xs[K_MAX_DIMS];
        int d0, d1;
    } trs[] = {
        {"transpose last two [2,3,4]", 3, {2, 3, 4}, -2, -1},
        {"transpose middle two [2,3,4,5]", 4, {2, 3, 4, 5}, 1, 2},
        {"transpose dims 0,2 of [2,3,4,5]", 4, {2, 3, 4, 5}, 0, 2},
        {"transpose dims 1,3 of [2,3,4,5]", 4, {2, 3, 4, 5}, 3, 1},
        {"transpose dims 0,-1 of [3,2,5]", 3, {3, 2, 5}, 0, -1},
        {"transpose 6-d dims 1,4", 6, {2, 3, 1, 2, 4, 2}, 1, 4},
        {"transpose big last two [3,70,45]", 3, {3, 70, 45}, 1, 2},
        {"transpose big [4,64,12,16] 1,2", 4, {4, 64, 12, 16}, 1, 2},
    };
    for (size_t i = 0; i < sizeof trs / sizeof trs[0]; i++) {
        int64_t n = 1;
        for (int d = 0; d < trs[i].nd; d++) n *= trs[i].xs[d];
        c = case_new(trs[i].name, tr_fwd, tr_bwd, n, 0);
        c.nd = trs[i].nd;
        memcpy(c.s0, trs[i].xs, sizeof c.s0);
        c.i0 = trs[i].d0, c.i1 = trs[i].d1;
        case_in(&c, rnd_buf(n, -1, 1), n, 1);
        c.fwd(&c);
        int d0 = c.i0 < 0 ? c.i0 + c.nd : c.i0, d1 = c.i1 < 0 ? c.i1 + c.nd : c.i1;
        int ok = 1;
        for (int64_t e = 0; e < n; e++) ok &= c.out[e] == c.x[0][tr_src(e, c.nd, c.s0, d0, d1)];
        if (!ASSERT_TRUE(ok)) printf("  forward of %s\n", c.name);
        gradcheck(&c, n > 1000 ? 12 : 200);
        case_free(&c);
    }

    static const struct {
        const char *name;
        int nd;
        int64_t xs[K_MAX_DIMS];
        int axis;
        int64_t start, len;
    } sls[] = {
        {"slice axis 1", 3, {3, 7, 4}, 1, 2, 3},
        {"slice axis 0", 3, {3, 7, 4}, 0, 1, 2},
        {"slice axis -1", 3, {3, 7, 4}, -1, 1, 2},
        {"slice big axis 1", 3, {50, 40, 30}, 1, 10, 25},
    };
    for (size_t i = 0; i < sizeof sls / sizeof sls[0]; i++) {
        int axis = sls[i].axis < 0 ? sls[i].axis + sls[i].nd : sls[i].axis;
        int64_t n = 1, on = 1;
        for (int d = 0; d < sls[i].nd; d++) {
            n *= sls[i].xs[d];
            on *= d == axis ? sls[i].len : sls[i].xs[d];
        }
        c = case_new(sls[i].name, slice_fwd, slice_bwd, on, 0);
        c.nd = sls[i].nd;
        memcpy(c.s0, sls[i].xs, sizeof c.s0);
        c.i0 = sls[i].axis, c.d[0] = sls[i].start, c.d[1] = sls[i].len;
        case_in(&c, rnd_buf(n, -1, 1), n, 1);
        c.fwd(&c);
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < axis; d++) outer *= c.s0[d];
        for (int d = axis + 1; d < c.nd; d++) inner *= c.s0[d];
        int ok = 1;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < c.d[1]; j++)
                for (int64_t k = 0; k < inner; k++)
                    ok &= c.out[(o * c.d[1] + j) * inner + k] == c.x[0][(o * c.s0[axis] + c.d[0] + j) * inner + k];
        ASSERT_TRUE(ok);
        gradcheck(&c, n > 1000 ? 12 : 200);
        case_free(&c);
    }

    static const struct {
        const char *name;
        int nd, n, axis;
        int64_t os[K_MAX_DIMS];
        int64_t sizes[3];
    } cats[] = {
        {"concat axis 1", 3, 3, 1, {2, 7, 3}, {2, 1, 4}},
        {"concat axis 0", 2, 2, 0, {5, 3}, {2, 3}},
        {"concat axis -1", 3, 3, -1, {2, 3, 9}, {4, 2, 3}},
        {"concat big axis 1", 3, 2, 1, {40, 60, 30}, {25, 35}},
    };
    for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++) {
        int axis = cats[i].axis < 0 ? cats[i].axis + cats[i].nd : cats[i].axis;
        int64_t on = 1;
        for (int d = 0; d < cats[i].nd; d++) on *= cats[i].os[d];
        c = case_new(cats[i].name, cat_fwd, cat_bwd, on, 0);
        c.nd = cats[i].nd;
        memcpy(c.s0, cats[i].os, sizeof c.s0);
        c.i0 = cats[i].axis;
        for (int k = 0; k < cats[i].n; k++) {
            int64_t xn = on / cats[i].os[axis] * cats[i].sizes[k];
            c.d[k] = cats[i].sizes[k];
            case_in(&c, rnd_buf(xn, -1, 1), xn, 1);
        }
        c.fwd(&c);
        /* each output element is the matching element of its input */
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < axis; d++) outer *= c.s0[d];
        for (int d = axis + 1; d < c.nd; d++) inner *= c.s0[d];
        int ok = 1;
        for (int64_t o = 0; o < outer; o++) {
            int64_t a = 0;
            for (int k = 0; k < c.nin; k++)
                for (int64_t j = 0; j < c.d[k]; j++, a++)
                    for (int64_t m = 0; m < inner; m++)
                        ok &= c.out[(o * c.s0[axis] + a) * inner + m] == c.x[k][(o * c.d[k] + j) * inner + m];
        }
        ASSERT_TRUE(ok);
        gradcheck(&c, on > 1000 ? 12 : 200);
        case_free(&c);
    }
}

/* ---- sum and mean ------------------------------------------------------- */

static void red_fwd(Case *c) {
    if (c->i0) k_mean_fwd(c->out, c->x[0], c->d[0], c->d[1], c->d[2]);
    else k_sum_fwd(c->out, c->x[0], c->d[0], c->d[1], c->d[2]);
}

static void red_bwd(Case *c) {
    if (c->i0) k_mean_bwd(c->dx[0], c->dout, c->d[0], c->d[1], c->d[2]);
    else k_sum_bwd(c->dx[0], c->dout, c->d[0], c->d[1], c->d[2]);
}

static void test_reductions(void) {
    static const int64_t shapes[][3] = {
        {1, 24, 1}, {3, 4, 5}, {6, 5, 1}, {1, 4, 7}, {1, 100000, 1}, {20, 30, 400},
    };
    static char names[2 * sizeof shapes / sizeof shapes[0]][64];
    int ns = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < ns; s++)
        for (int mean = 0; mean < 2; mean++) {
            int64_t O = shapes[s][0], N = shapes[s][1], I = shapes[s][2];
            char *name = names[2 * s + mean];
            snprintf(name, sizeof names[0], "%s (%lld,%lld,%lld)", mean ? "mean" : "sum", (long long)O, (long long)N,
                     (long long)I);
            Case c = case_new(name, red_fwd, red_bwd, O * I, 0);
            c.d[0] = O, c.d[1] = N, c.d[2] = I, c.i0 = mean;
            case_in(&c, rnd_buf(O * N * I, -1, 1), O * N * I, 1);
            c.fwd(&c);
            double err = 0.0;
            for (int64_t o = 0; o < O; o++)
                for (int64_t i = 0; i < I; i++) {
                    double sum = 0;
                    for (int64_t j = 0; j < N; j++) sum += c.x[0][(o * N + j) * I + i];
                    if (mean) sum /= (double)N;
                    err = fmax(err, fabs(c.out[o * I + i] - sum));
                }
            if (!ASSERT_TRUE(err < 1e-4)) printf("  forward of %s: err %g\n", name, err);
            /* sums over many elements: a larger step keeps the rounding of
             * the float output (~1e-7 relative of ~N^0.5) under the tolerance */
            if (N * I > 10000) c.h = 1e-2f;
            gradcheck(&c, 12);
            case_free(&c);
        }
}

/* ---- where ---------------------------------------------------------------- */

/* where's shapes (out, cond, a, b; rank 3) for the case adapters */
static int64_t wh_so[3], wh_sc[3], wh_sa[3], wh_sb[3];

/* x[0] a, x[1] b, and cond: idx (int32, i0 1) or x[2] (float, i0 0) */
static const void *wh_cond(const Case *c) { return c->i0 ? (const void *)c->idx : (const void *)c->x[2]; }
static void wh_fwd(Case *c) { k_where_fwd(c->out, wh_cond(c), c->x[0], c->x[1], c->i0, 3, wh_so, wh_sc, wh_sa, wh_sb); }
static void wh_bwd(Case *c) {
    k_where_bwd(c->dx[0], c->dx[1], c->dout, wh_cond(c), c->i0, 3, wh_so, wh_sc, wh_sa, wh_sb);
}

static int64_t wh_at(const int64_t *s, int64_t i0, int64_t i1, int64_t i2) {
    return ((s[0] > 1 ? i0 : 0) * s[1] + (s[1] > 1 ? i1 : 0)) * s[2] + (s[2] > 1 ? i2 : 0);
}

/* where(cond, a, b) against a direct loop and by finite differences, cond
 * int32 and float (zeros, ones and other values, NaN picking a), each of
 * cond, a and b broadcast along some axis; and without broadcasting. */
static void test_where(void) {
    static const int64_t shapes[2][4][3] = {
        {{3, 4, 5}, {3, 1, 5}, {1, 4, 5}, {3, 4, 1}},
        {{2, 3, 7}, {2, 3, 7}, {2, 3, 7}, {2, 3, 7}},
    };
    static char names[4][64];
    for (int s = 0; s < 2; s++)
        for (int ci = 0; ci < 2; ci++) {
            memcpy(wh_so, shapes[s][0], sizeof wh_so), memcpy(wh_sc, shapes[s][1], sizeof wh_sc);
            memcpy(wh_sa, shapes[s][2], sizeof wh_sa), memcpy(wh_sb, shapes[s][3], sizeof wh_sb);
            int64_t no = wh_so[0] * wh_so[1] * wh_so[2], nc = wh_sc[0] * wh_sc[1] * wh_sc[2];
            int64_t na = wh_sa[0] * wh_sa[1] * wh_sa[2], nb = wh_sb[0] * wh_sb[1] * wh_sb[2];
            char *name = names[2 * s + ci];
            snprintf(name, sizeof names[0], "where (%s cond%s)", ci ? "i32" : "f32", s ? "" : ", broadcast");
            Case c = case_new(name, wh_fwd, wh_bwd, no, 0);
            c.i0 = ci;
            case_in(&c, rnd_buf(na, -1, 1), na, 1);
            case_in(&c, rnd_buf(nb, -1, 1), nb, 1);
            if (ci) {
                c.idx = xmalloc((size_t)nc * sizeof *c.idx);
                for (int64_t k = 0; k < nc; k++) c.idx[k] = k % 3 == 0 ? 0 : (int32_t)(rnd_u32() % 5) - 2 + 3;
            } else {
                float *cf = rnd_buf(nc, -2, 2);
                for (int64_t k = 0; k < nc; k++)
                    if (k % 3 == 0) cf[k] = 0.0f;
                cf[1] = NAN;
                case_in(&c, cf, nc, 0);
            }
            c.fwd(&c);
            int bad = 0;
            for (int64_t i0 = 0; i0 < wh_so[0]; i0++)
                for (int64_t i1 = 0; i1 < wh_so[1]; i1++)
                    for (int64_t i2 = 0; i2 < wh_so[2]; i2++) {
                        int64_t kc = wh_at(wh_sc, i0, i1, i2);
                        int pick = ci ? c.idx[kc] != 0 : c.x[2][kc] != 0.0f;
                        float want = pick ? c.x[0][wh_at(wh_sa, i0, i1, i2)] : c.x[1][wh_at(wh_sb, i0, i1, i2)];
                        bad += c.out[(i0 * wh_so[1] + i1) * wh_so[2] + i2] != want;
                    }
            ASSERT(0, bad);
            gradcheck(&c, 200);
            case_free(&c);
        }
}

/* ---- max and min ---------------------------------------------------------- */

static void ext_fwd(Case *c) {
    if (c->i0) k_min_fwd(c->out, c->x[0], c->d[0], c->d[1], c->d[2]);
    else k_max_fwd(c->out, c->x[0], c->d[0], c->d[1], c->d[2]);
}

static void ext_bwd(Case *c) {
    if (c->i0) k_min_bwd(c->dx[0], c->dout, c->x[0], c->d[0], c->d[1], c->d[2]);
    else k_max_bwd(c->dx[0], c->dout, c->x[0], c->d[0], c->d[1], c->d[2]);
}

/* max and min over an axis against a direct loop and by finite
 * differences (distinct values 0.01 apart, so that no step of 1e-3 changes
 * the arg); then ties (the gradient goes to the first) and NaN (the result,
 * its gradient to the first NaN). */
static void test_extremes(void) {
    static const int64_t shapes[][3] = {{1, 24, 1}, {3, 4, 5}, {6, 5, 1}, {1, 4, 7}, {2, 300, 3}};
    static char names[2 * sizeof shapes / sizeof shapes[0]][64];
    int ns = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < ns; s++)
        for (int mn = 0; mn < 2; mn++) {
            int64_t O = shapes[s][0], N = shapes[s][1], I = shapes[s][2], n = O * N * I;
            char *name = names[2 * s + mn];
            snprintf(name, sizeof names[0], "%s (%lld,%lld,%lld)", mn ? "min" : "max", (long long)O, (long long)N,
                     (long long)I);
            Case c = case_new(name, ext_fwd, ext_bwd, O * I, 0);
            c.d[0] = O, c.d[1] = N, c.d[2] = I, c.i0 = mn;
            float *x = case_in(&c, xmalloc((size_t)n * sizeof(float)), n, 1);
            for (int64_t k = 0; k < n; k++) x[k] = 0.01f * (float)((k * 7919) % n) - 0.005f * (float)n;
            c.fwd(&c);
            int bad = 0;
            for (int64_t o = 0; o < O; o++)
                for (int64_t i = 0; i < I; i++) {
                    float e = x[o * N * I + i];
                    for (int64_t j = 1; j < N; j++) {
                        float v = x[(o * N + j) * I + i];
                        e = mn ? fminf(e, v) : fmaxf(e, v);
                    }
                    bad += c.out[o * I + i] != e;
                }
            ASSERT(0, bad);
            gradcheck(&c, 200);
            case_free(&c);
        }
    /* ties and NaN: one column of 6 */
    float x[6] = {1, 3, -2, 3, -2, 0}, out = 0, g = 1.5f, dx[6] = {0};
    k_max_fwd(&out, x, 1, 6, 1);
    k_max_bwd(dx, &g, x, 1, 6, 1);
    ASSERT_TRUE(out == 3 && dx[1] == 1.5f && dx[3] == 0);
    k_min_fwd(&out, x, 1, 6, 1);
    k_min_bwd(dx, &g, x, 1, 6, 1);
    ASSERT_TRUE(out == -2 && dx[2] == 1.5f && dx[4] == 0);
    x[4] = NAN, x[5] = NAN;
    memset(dx, 0, sizeof dx);
    k_max_fwd(&out, x, 1, 6, 1);
    k_max_bwd(dx, &g, x, 1, 6, 1);
    ASSERT_TRUE(isnan(out) && dx[4] == 1.5f && dx[5] == 0 && dx[1] == 0);
}

/* ---- adamw and helpers -------------------------------------------------- */

static void test_adamw(void) {
    int64_t n = 1000;
    float *p = rnd_buf(n, -1, 1), *m = zero_buf(n), *v = zero_buf(n);
    double *rp = xmalloc((size_t)n * sizeof *rp), *rm = xmalloc((size_t)n * sizeof *rm);
    double *rv = xmalloc((size_t)n * sizeof *rv);
    for (int64_t i = 0; i < n; i++) rp[i] = p[i], rm[i] = 0.0, rv[i] = 0.0;
    const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
    double err = 0.0;
    for (int t = 1; t <= 5; t++) {
        float *g = rnd_buf(n, -1, 1);
        k_adamw(p, g, m, v, n, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd, t);
        for (int64_t i = 0; i < n; i++) {
            rm[i] = b1 * rm[i] + (1 - b1) * g[i];
            rv[i] = b2 * rv[i] + (1 - b2) * (double)g[i] * g[i];
            double mh = rm[i] / (1 - pow(b1, t)), vh = rv[i] / (1 - pow(b2, t));
            rp[i] -= lr * (mh / (sqrt(vh) + eps) + wd * rp[i]);
        }
        free(g);
    }
    err = fmax(max_abs_diff(p, rp, n), fmax(max_abs_diff(m, rm, n), max_abs_diff(v, rv, n)));
    if (!ASSERT_TRUE(err < 1e-5)) printf("  adamw: err %g\n", err);
    free(p), free(m), free(v), free(rp), free(rm), free(rv);

    float a[5] = {1, 2, 3, 4, 5}, b[5] = {1, 1, 1, 1, 1};
    k_add_into(a, b, 5);
    ASSERT_TRUE(a[0] == 2 && a[4] == 6);
    k_zero(a, 5);
    ASSERT_TRUE(a[0] == 0 && a[4] == 0);
    k_copy(a, b, 5);
    ASSERT_TRUE(a[2] == 1);
}

/* ---- determinism across thread counts ---------------------------------- */

/* Results of the kernels that sum across rows, tasks or chunks, as bytes. */
static void det_run(float *res, int64_t *len) {
    uint64_t saved = rng_state;
    rng_state = 77;
    int64_t N = 256, C = 200, n = N * C, at = 0;
    float *x = rnd_buf(n, -1, 1), *dy = rnd_buf(n, -1, 1), *w = rnd_buf(C, 0.5f, 1.5f);
    float *b = rnd_buf(C, -1, 1), *y = zero_buf(n), *st = zero_buf(2 * N);
    float *col = rnd_buf(N, -1, 1); /* (N, 1) */
    k_layernorm_fwd(y, st, x, w, b, N, C, 1e-5f);
    float *dx = res + at, *dw = res + at + n, *db = res + at + n + C;
    at += n + 2 * C;
    k_layernorm_bwd(dx, dw, db, dy, x, w, st, N, C);
    int64_t os[2] = {N, C}, rs[2] = {1, C}, cs[2] = {N, 1}, ss[2] = {1, 1};
    k_mul_bwd(NULL, res + at, dy, x, w, 2, os, os, rs);
    at += C;
    k_mul_bwd(NULL, res + at, dy, x, col, 2, os, os, cs);
    at += N;
    k_mul_bwd(NULL, res + at, dy, x, w, 2, os, os, ss);
    at += 1;
    k_sum_fwd(res + at, x, 1, n, 1);
    at += 1;
    k_mean_fwd(res + at, x, 1, N, C);
    at += C;
    int32_t idx[256];
    for (int i = 0; i < 256; i++) idx[i] = (i * 7) % 50;
    k_embedding_bwd(res + at, dy, idx, N, 50, C);
    at += 50 * C;
    int64_t B = 2, T = 96, H = 4, KVH = 2, D = 16, nq = B * T * H * D, nk = B * T * KVH * D;
    float *q = rnd_buf(nq, -1, 1), *k = rnd_buf(nk, -1, 1), *v = rnd_buf(nk, -1, 1);
    float *g = rnd_buf(nq, -1, 1), *o = res + at, *l = res + at + nq;
    at += nq + B * H * T;
    k_attention_fwd(o, l, q, k, v, B, T, T, H, KVH, D, 1);
    k_attention_bwd(res + at, res + at + nq, res + at + nq + nk, g, q, k, v, o, l, B, T, T, H, KVH, D, 1);
    at += nq + 2 * nk;
    *len = at;
    free(x), free(dy), free(w), free(b), free(col), free(y), free(st);
    free(q), free(k), free(v), free(g);
    rng_state = saved;
}

static void test_determinism(void) {
    int64_t cap = 300000, len1 = 0, len3 = 0;
    float *r1 = zero_buf(cap), *r3 = zero_buf(cap);
    int team = threads_get();
    threads_set(1);
    det_run(r1, &len1);
    threads_set(3); /* another split of the work than both 1 and the default */
    det_run(r3, &len3);
    threads_set(team);
    ASSERT(len1, len3);
    ASSERT_TRUE(len1 <= cap && memcmp(r1, r3, (size_t)len1 * sizeof *r1) == 0);
    free(r1);
    free(r3);
}

/* An elementwise chain (k_ew_chain) gives the bits of its ops' own kernels
 * run one after another: every binary op, then scale, shift, every plain unary op
 * of the table (ACC_EW_UNARY_OPS), dropout or nothing; a broadcast operand on
 * either side whose period is 1, shorter than a tile, not a multiple of it,
 * and the whole tensor, and lengths that end inside a tile. */
static void test_ew_chain(void) {
    typedef void (*Binary)(float *, const float *, const float *, int, const int64_t *, const int64_t *,
                           const int64_t *);
    static const int bin_code[] = {
#define BIN_CODE(code, name, reads) ACC_OP_##code,
        ACC_EW_BINARY_OPS(BIN_CODE)
#undef BIN_CODE
    };
    static const Binary bin_fn[] = {
#define BIN_FN(code, name, reads) k_##name##_fwd,
        ACC_EW_BINARY_OPS(BIN_FN)
#undef BIN_FN
    };
    static const int un_code[N_UN_OPS] = {ACC_OP_SCALE, ACC_OP_SHIFT,
#define UN_CODE(code, name, saved) ACC_OP_##code,
                                          ACC_EW_UNARY_OPS(UN_CODE)
#undef UN_CODE
    };
    static const int64_t rows_cols[][2] = {{1000, 1}, {41, 7}, {3, 300}, {2, 333}, {1, 1001}};
    int bad = 0, cases = 0;
    for (size_t rc = 0; rc < sizeof rows_cols / sizeof *rows_cols; rc++) {
        int64_t R = rows_cols[rc][0], C = rows_cols[rc][1], n = R * C;
        float *x = rnd_signed_buf(n, 0.5f, 2.0f), *o = rnd_signed_buf(C, 0.5f, 2.0f);
        float *want = zero_buf(n), *got = zero_buf(n);
        int64_t full[2] = {R, C}, row[2] = {1, C};
        for (int b = 0; b < N_BIN_OPS; b++)
            for (int right = 0; right < 2; right++)
                for (int u = 0; u < N_UN_OPS + 2; u++) { /* binary, then a unary op (or none) */
                    if (right) bin_fn[b](want, o, x, 2, full, row, full);
                    else bin_fn[b](want, x, o, 2, full, full, row);
                    k_ew_op ops[2] = {{bin_code[b], o, C, right, 0.0f, 0}, {ACC_OP_SCALE, NULL, 1, 0, 0.75f, 0}};
                    int n_ops = 2;
                    if (u == 0) {
                        k_scale_fwd(want, want, 0.75f, n);
                    } else if (u == 1) {
                        ops[1].op = ACC_OP_SHIFT;
                        k_shift_fwd(want, want, 0.75f, n);
                    } else if (u < N_UN_OPS) {
                        ops[1].op = un_code[u];
                        un_ops[u].fwd(want, want, n);
                    } else if (u == N_UN_OPS) {
                        ops[1] = (k_ew_op){ACC_OP_DROPOUT, NULL, 1, 0, 0.25f, 9};
                        k_dropout_fwd(want, want, n, 0.25f, 5, 3, 9);
                    } else {
                        n_ops = 1;
                    }
                    k_ew_chain(got, x, ops, n_ops, n, 5, 3);
                    bad += memcmp(want, got, (size_t)n * sizeof *got) != 0;
                    cases++;
                }
        free(x), free(o), free(want), free(got);
    }
    ASSERT(0, bad);
    ASSERT(5 * N_BIN_OPS * 2 * (N_UN_OPS + 2), cases);
    /* a comparison with a number in a chain (after shift, before mul by an
     * operand: relu written out) gives its own kernel's bits, ties included */
    enum { NC = 777 };
    float *x = grid_buf(NC), *o = rnd_buf(NC, -1, 1), *want = zero_buf(NC), *got = zero_buf(NC);
    int64_t full[1] = {NC};
    bad = 0;
#define CS_CHAIN(code, name, binary)                            \
    k_shift_fwd(want, x, 0.25f, NC);                            \
    k_##name##_fwd(want, want, 0.5f, NC);                       \
    k_mul_fwd(want, want, o, 1, full, full, full);              \
    {                                                           \
        k_ew_op ops[3] = {{ACC_OP_SHIFT, NULL, 1, 0, 0.25f, 0}, \
                          {ACC_OP_##code, NULL, 1, 0, 0.5f, 0}, \
                          {ACC_OP_MUL, o, NC, 0, 0.0f, 0}};     \
        k_ew_chain(got, x, ops, 3, NC, 5, 3);                   \
    }                                                           \
    bad += memcmp(want, got, sizeof(float) * NC) != 0;
    ACC_EW_CMP_SCALAR_OPS(CS_CHAIN)
#undef CS_CHAIN
    ASSERT(0, bad);
    free(x), free(o), free(want), free(got);
}

/* The precision pass's casts. Their gradient is the identity converted
 * (cast back), as autocast's is. A finite difference sees it where rounding
 * is exact: at a bf16 value x with h its bf16 spacing, x - h and x + h are
 * bf16 values too, so (cast(x + h) - cast(x - h)) / 2h is the derivative
 * without rounding error; the backward must give the same, accumulated. */
static void test_cast(void) {
    enum { N = 1000 };
    static float x[N], xp[N], xm[N], dx[N], d2[N], back[N];
    static acc_bf16 y[N], yp[N], ym[N], dy[N], dh[N];
    for (int i = 0; i < N; i++) {
        x[i] = acc_bf16_f32(acc_f32_bf16(rnd_unif(-4.0f, 4.0f)));
        int e;
        frexpf(x[i], &e);
        float h = x[i] == 0.0f ? 1e-3f : ldexpf(1.0f, e - 8); /* the bf16 spacing in [2^(e-1), 2^e) */
        xp[i] = x[i] + h, xm[i] = x[i] - h;
        dy[i] = acc_f32_bf16(1.0f);
        dx[i] = 0.5f;
        d2[i] = 0.0f;
        dh[i] = acc_f32_bf16(0.25f);
    }
    k_cast_fwd_bf16(y, x, N);
    k_cast_fwd_bf16(yp, xp, N);
    k_cast_fwd_bf16(ym, xm, N);
    k_cast_bwd_bf16(dx, dy, N);
    k_uncast_fwd_bf16(back, y, N);
    k_uncast_bwd_bf16(dh, d2, N);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float num = (acc_bf16_f32(yp[i]) - acc_bf16_f32(ym[i])) / (xp[i] - xm[i]);
        if (x[i] != 0.0f && num != 1.0f) bad++;  /* the derivative, exactly */
        if (dx[i] != 1.5f) bad++;                /* dx += widen(dout) */
        if (back[i] != x[i]) bad++;              /* a bf16 value round-trips */
        if (acc_bf16_f32(dh[i]) != 0.25f) bad++; /* dx += 0 leaves it */
        if (acc_bf16_f32(y[i]) != x[i]) bad++;
    }
    if (test_true(__FILE__, __LINE__, "cast", bad == 0)) fd_mark("cast (finite differences at bf16 values)");
    else printf("  cast: %d entries off\n", bad);
    /* rounding: to nearest, ties to even, NaN kept, overflow to infinity */
    float ties[] = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 3.4e38f, -0.0f};
    acc_bf16 r[4];
    k_cast_fwd_bf16(r, ties, 4);
    ASSERT(0x3f80, r[0]); /* 1 + 2^-8 ties to 1 (even) */
    ASSERT(0x3f82, r[1]); /* 1 + 3*2^-8 ties to 1 + 2^-6 (even) */
    ASSERT(0x7f80, r[2]); /* rounds up past the largest bf16: +inf */
    ASSERT(0x8000, r[3]);
    float nan = NAN;
    k_cast_fwd_bf16(r, &nan, 1);
    ASSERT_TRUE(acc_bf16_f32(r[0]) != acc_bf16_f32(r[0]));
}

int main(void) {
    test_philox();
    test_cast();
    test_matmul();
    test_linear();
    test_binary();
    test_unary();
    test_unary_edges();
    test_cmp_scalar();
    test_float();
    test_cmp_i32();
    test_norms();
    test_attention();
    test_attention_masked();
    test_rope();
    test_embedding_xent();
    test_dropout();
    test_ew_chain();
    test_movement();
    test_reductions();
    test_where();
    test_extremes();
    test_adamw();
    test_determinism();
    test_fd_coverage();
    TEST_DONE();
}
