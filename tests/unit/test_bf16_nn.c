/* test_bf16_nn.c - the bf16 instances of the kernels of cpu_kernels_nn.c and
 * cpu_kernels_shape.c against their fp32 instances.
 *
 * Inputs are random values rounded to bf16, so both instances see the same
 * numbers: the fp32 kernel runs on the widened values, the bf16 kernel on the
 * bf16 ones. The bf16 instance computes in float and rounds only its stored
 * element-type outputs, so each of those must equal acc_f32_bf16 of the fp32
 * output bit for bit, and each float output (statistics, lse, the loss,
 * weight and table gradients, reductions) must equal the fp32 one bit for
 * bit. Backwards run on gradient buffers that already hold values (checking
 * the one rounding of old + new) and on zeroed ones. Every kernel runs under
 * 1 and 2 threads, sizes are odd and large enough for the parallel paths, and
 * the bf16 bits must not depend on the thread count. Attention is exact where
 * its float accumulators cover the whole problem (D <= 128 and, for dq, S up
 * to the key chunk of the backward); the chunked cases get a stated
 * tolerance. `test_bf16_nn bench` times the attention (fp32 vs bf16).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bf16.h"
#include "cpu_kernels.h"
#include "test.h"
#include "kernel_test.h"

/* ---- buffers (every buffer is freed by bufs_free) ------------------------ */

#define MAX_BUFS 256
static void *bufs[MAX_BUFS];
static int n_bufs;

static void *talloc(size_t n) {
    void *p = calloc(n ? n : 1, 1);
    if (!p || n_bufs == MAX_BUFS) {
        fprintf(stderr, "test_bf16_nn: out of memory or buffers\n");
        abort();
    }
    bufs[n_bufs++] = p;
    return p;
}

static void bufs_free(void) {
    while (n_bufs > 0) free(bufs[--n_bufs]);
}

static float *fbuf(int64_t n) { return talloc((size_t)n * sizeof(float)); }
static acc_bf16 *bbuf(int64_t n) { return talloc((size_t)n * sizeof(acc_bf16)); }

/* random bf16 values in [lo, hi) */
static acc_bf16 *brand(int64_t n, float lo, float hi) {
    acc_bf16 *b = bbuf(n);
    for (int64_t i = 0; i < n; i++) b[i] = acc_f32_bf16(rnd_unif(lo, hi));
    return b;
}

static float *frand(int64_t n, float lo, float hi) {
    float *f = fbuf(n);
    for (int64_t i = 0; i < n; i++) f[i] = rnd_unif(lo, hi);
    return f;
}

static float *widen(const acc_bf16 *b, int64_t n) {
    float *f = fbuf(n);
    for (int64_t i = 0; i < n; i++) f[i] = acc_bf16_f32(b[i]);
    return f;
}

static acc_bf16 *bdup(const acc_bf16 *b, int64_t n) {
    acc_bf16 *c = bbuf(n);
    memcpy(c, b, (size_t)n * sizeof *c);
    return c;
}

static float *fdup(const float *f, int64_t n) {
    float *c = fbuf(n);
    memcpy(c, f, (size_t)n * sizeof *c);
    return c;
}

/* ---- comparisons ---------------------------------------------------------- */

/* got (bf16) == acc_f32_bf16(ref) bit for bit */
static void check_round(const char *what, const acc_bf16 *got, const float *ref, int64_t n) {
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (got[i] != acc_f32_bf16(ref[i]) && bad++ == 0) first = i;
    if (bad)
        printf("  %s: %lld of %lld differ; first [%lld]: got 0x%04x, want 0x%04x (fp32 %.9g)\n", what, (long long)bad,
               (long long)n, (long long)first, got[first], acc_f32_bf16(ref[first]), (double)ref[first]);
    ASSERT(0, bad);
}

/* two float buffers equal bit for bit */
static void check_f32(const char *what, const float *got, const float *ref, int64_t n) {
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &ref[i], sizeof *got) && bad++ == 0) first = i;
    if (bad)
        printf("  %s: %lld of %lld differ; first [%lld]: got %.9g, want %.9g\n", what, (long long)bad, (long long)n,
               (long long)first, (double)got[first], (double)ref[first]);
    ASSERT(0, bad);
}

/* two bf16 buffers equal bit for bit (the same kernel under 1 and 2 threads) */
static void check_same(const char *what, const acc_bf16 *a, const acc_bf16 *b, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += a[i] != b[i];
    if (bad) printf("  %s: %lld of %lld differ between 1 and 2 threads\n", what, (long long)bad, (long long)n);
    ASSERT(0, bad);
}

/* |got - ref| <= ulps bf16 ulps at the scale of the largest |ref| of the
 * tensor (2^-7 of a power of two at least that large): for results whose
 * float accumulation the bf16 kernel splits where the fp32 kernel does not */
static void check_tol(const char *what, const acc_bf16 *got, const float *ref, int64_t n, double ulps) {
    double mx = 0.0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs((double)ref[i]));
    int e;
    frexp(mx, &e);
    double tol = ulps * ldexp(1.0, e - 8), worst = 0.0;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)acc_bf16_f32(got[i]) - (double)ref[i]);
        if (!(d <= tol) && bad++ == 0) first = i;
        if (d > worst) worst = d;
    }
    if (bad)
        printf("  %s: %lld of %lld beyond %.3g (max |ref| %.3g); first [%lld]: got %.9g, want %.9g\n", what,
               (long long)bad, (long long)n, tol, mx, (long long)first, (double)acc_bf16_f32(got[first]),
               (double)ref[first]);
    ASSERT(0, bad);
    (void)worst;
}

/* ---- layernorm, rmsnorm, softmax ------------------------------------------ */

static void test_layernorm(void) {
    static const int64_t shapes[][2] = {{3, 7}, {67, 515}};
    for (int si = 0; si < 2; si++) {
        int64_t N = shapes[si][0], C = shapes[si][1], nc = N * C;
        acc_bf16 *x = brand(nc, -3.0f, 3.0f), *dy = brand(nc, -1.0f, 1.0f), *dx0 = brand(nc, -1.0f, 1.0f);
        float *w = frand(C, 0.5f, 1.5f), *b = frand(C, -0.5f, 0.5f), *dw0 = frand(C, -1, 1), *db0 = frand(C, -1, 1);
        x[1] = acc_f32_bf16(INFINITY); /* row 0 becomes NaN in both */
        float *xf = widen(x, nc), *dyf = widen(dy, nc);
        acc_bf16 *keep[2] = {0, 0};
        for (int thr = 1; thr <= 2; thr++) {
            threads_set(thr);
            float *y32 = fbuf(nc), *st32 = fbuf(2 * N), *st16 = fbuf(2 * N);
            acc_bf16 *y16 = bbuf(nc);
            k_layernorm_fwd(y32, st32, xf, w, b, N, C, 1e-5f);
            k_layernorm_fwd_bf16(y16, st16, x, w, b, N, C, 1e-5f);
            check_round("layernorm fwd y", y16, y32, nc);
            check_f32("layernorm fwd stats", st16, st32, 2 * N);
            for (int zero = 0; zero < 2; zero++) {
                float *dx32 = zero ? fbuf(nc) : widen(dx0, nc), *dw32 = zero ? fbuf(C) : fdup(dw0, C);
                float *db32 = zero ? fbuf(C) : fdup(db0, C);
                acc_bf16 *dx16 = zero ? bbuf(nc) : bdup(dx0, nc);
                float *dw16 = zero ? fbuf(C) : fdup(dw0, C), *db16 = zero ? fbuf(C) : fdup(db0, C);
                k_layernorm_bwd(dx32, dw32, db32, dyf, xf, w, st32, N, C);
                k_layernorm_bwd_bf16(dx16, dw16, db16, dy, x, w, st16, N, C);
                check_round("layernorm bwd dx", dx16, dx32, nc);
                check_f32("layernorm bwd dw", dw16, dw32, C);
                check_f32("layernorm bwd db", db16, db32, C);
                if (!zero) keep[thr - 1] = dx16;
            }
            if (thr == 2) check_same("layernorm bwd dx", keep[0], keep[1], nc);
        }
    }
    bufs_free();
}

static void test_rmsnorm(void) {
    static const int64_t shapes[][2] = {{5, 9}, {67, 515}};
    for (int si = 0; si < 2; si++) {
        int64_t N = shapes[si][0], C = shapes[si][1], nc = N * C;
        acc_bf16 *x = brand(nc, -3.0f, 3.0f), *dy = brand(nc, -1.0f, 1.0f), *dx0 = brand(nc, -1.0f, 1.0f);
        float *w = frand(C, 0.5f, 1.5f), *dw0 = frand(C, -1, 1);
        float *xf = widen(x, nc), *dyf = widen(dy, nc);
        acc_bf16 *keep[2] = {0, 0};
        for (int thr = 1; thr <= 2; thr++) {
            threads_set(thr);
            float *y32 = fbuf(nc), *st32 = fbuf(N), *st16 = fbuf(N);
            acc_bf16 *y16 = bbuf(nc);
            k_rmsnorm_fwd(y32, st32, xf, w, N, C, 1e-6f);
            k_rmsnorm_fwd_bf16(y16, st16, x, w, N, C, 1e-6f);
            check_round("rmsnorm fwd y", y16, y32, nc);
            check_f32("rmsnorm fwd stats", st16, st32, N);
            for (int zero = 0; zero < 2; zero++) {
                float *dx32 = zero ? fbuf(nc) : widen(dx0, nc), *dw32 = zero ? fbuf(C) : fdup(dw0, C);
                acc_bf16 *dx16 = zero ? bbuf(nc) : bdup(dx0, nc);
                float *dw16 = zero ? fbuf(C) : fdup(dw0, C);
                k_rmsnorm_bwd(dx32, dw32, dyf, xf, w, st32, N, C);
                k_rmsnorm_bwd_bf16(dx16, dw16, dy, x, w, st16, N, C);
                check_round("rmsnorm bwd dx", dx16, dx32, nc);
                check_f32("rmsnorm bwd dw", dw16, dw32, C);
                if (!zero) keep[thr - 1] = dx16;
            }
            if (thr == 2) check_same("rmsnorm bwd dx", keep[0], keep[1], nc);
        }
    }
    bufs_free();
}

static void test_softmax(void) {
    static const int64_t shapes[][2] = {{4, 13}, {67, 515}};
    for (int si = 0; si < 2; si++) {
        int64_t N = shapes[si][0], C = shapes[si][1], nc = N * C;
        acc_bf16 *x = brand(nc, -6.0f, 6.0f), *dy = brand(nc, -1.0f, 1.0f), *dx0 = brand(nc, -0.1f, 0.1f);
        x[C + 2] = acc_f32_bf16(NAN); /* row 1 becomes NaN in both */
        float *xf = widen(x, nc), *dyf = widen(dy, nc);
        acc_bf16 *keep[2] = {0, 0};
        for (int thr = 1; thr <= 2; thr++) {
            threads_set(thr);
            float *y32 = fbuf(nc);
            acc_bf16 *y16 = bbuf(nc), *yin = bdup(x, nc);
            k_softmax_fwd(y32, xf, N, C);
            k_softmax_fwd_bf16(y16, x, N, C);
            check_round("softmax fwd", y16, y32, nc);
            k_softmax_fwd_bf16(yin, yin, N, C); /* in place */
            check_same("softmax fwd in place", y16, yin, nc);
            /* the backward reads y: give both instances the same (bf16) y */
            float *yf = widen(y16, nc);
            for (int zero = 0; zero < 2; zero++) {
                float *dx32 = zero ? fbuf(nc) : widen(dx0, nc);
                acc_bf16 *dx16 = zero ? bbuf(nc) : bdup(dx0, nc);
                k_softmax_bwd(dx32, dyf, yf, N, C);
                k_softmax_bwd_bf16(dx16, dy, y16, N, C);
                check_round("softmax bwd", dx16, dx32, nc);
                if (!zero) keep[thr - 1] = dx16;
            }
            if (thr == 2) check_same("softmax bwd", keep[0], keep[1], nc);
        }
    }
    bufs_free();
}

/* float results within rel * max|ref| of the fp32 ones */
static void check_f32_tol(const char *what, const float *got, const float *ref, int64_t n, double rel) {
    double mx = 0.0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs((double)ref[i]));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += !(fabs((double)got[i] - (double)ref[i]) <= rel * mx);
    if (bad) printf("  %s: %lld of %lld beyond %.3g relative\n", what, (long long)bad, (long long)n, rel);
    ASSERT(0, bad);
}

/* Rows longer than the bf16 instance's row buffer (8192 floats): its row sums
 * add the chunks' sums, so the statistics may differ from the fp32 ones in
 * the last float bits (relative 1e-5 allowed) and an element may round the
 * other way (1 bf16 ulp at the tensor's scale; 2 for the backwards, whose
 * sums of dy terms also split). */
static void test_long_rows(void) {
    int64_t N = 3, C = 8195, nc = N * C;
    acc_bf16 *x = brand(nc, -3, 3), *dy = brand(nc, -1, 1), *dx0 = brand(nc, -1, 1);
    float *w = frand(C, 0.5f, 1.5f), *b = frand(C, -0.5f, 0.5f), *xf = widen(x, nc), *dyf = widen(dy, nc);
    float *y32 = fbuf(nc), *st32 = fbuf(2 * N), *st16 = fbuf(2 * N);
    float *dx32 = widen(dx0, nc), *dw32 = fbuf(C), *db32 = fbuf(C), *dw16 = fbuf(C), *db16 = fbuf(C);
    acc_bf16 *y16 = bbuf(nc), *dx16 = bdup(dx0, nc);
    k_layernorm_fwd(y32, st32, xf, w, b, N, C, 1e-5f);
    k_layernorm_fwd_bf16(y16, st16, x, w, b, N, C, 1e-5f);
    check_tol("layernorm fwd long rows", y16, y32, nc, 1);
    check_f32_tol("layernorm stats long rows", st16, st32, 2 * N, 1e-5);
    k_layernorm_bwd(dx32, dw32, db32, dyf, xf, w, st32, N, C);
    k_layernorm_bwd_bf16(dx16, dw16, db16, dy, x, w, st16, N, C);
    check_tol("layernorm bwd long rows", dx16, dx32, nc, 2);
    check_f32_tol("layernorm dw long rows", dw16, dw32, C, 1e-5);
    k_rmsnorm_fwd(y32, st32, xf, w, N, C, 1e-6f);
    k_rmsnorm_fwd_bf16(y16, st16, x, w, N, C, 1e-6f);
    check_tol("rmsnorm fwd long rows", y16, y32, nc, 1);
    check_f32_tol("rmsnorm stats long rows", st16, st32, N, 1e-5);
    memset(dw32, 0, (size_t)C * sizeof *dw32);
    memset(dw16, 0, (size_t)C * sizeof *dw16);
    float *rx32 = fbuf(nc);
    acc_bf16 *rx16 = bbuf(nc);
    k_rmsnorm_bwd(rx32, dw32, dyf, xf, w, st32, N, C);
    k_rmsnorm_bwd_bf16(rx16, dw16, dy, x, w, st16, N, C);
    check_tol("rmsnorm bwd long rows", rx16, rx32, nc, 2);
    check_f32_tol("rmsnorm dw long rows", dw16, dw32, C, 1e-5);
    k_softmax_fwd_bf16(y16, x, N, C);
    float *yf = widen(y16, nc), *sx32 = fbuf(nc);
    acc_bf16 *sx16 = bbuf(nc);
    k_softmax_bwd(sx32, dyf, yf, N, C);
    k_softmax_bwd_bf16(sx16, dy, y16, N, C);
    check_tol("softmax bwd long rows", sx16, sx32, nc, 2);
    bufs_free();
}

/* ---- attention ------------------------------------------------------------ */

typedef struct {
    const char *name;
    int64_t B, T, S, H, KVH, D;
    int causal;
    double tol_out, tol_dq, tol_dkv; /* bf16 ulps (check_tol); 0: exact */
} AttCase;

static void test_attention(void) {
    /* Exact: D <= 128 (one column chunk) and S within the backward's key
     * chunk (8192 / D keys, a multiple of 64). D = 64, S = 200 has two key
     * chunks: out, dk and dv stay exact (their float accumulators cover their
     * sums), dq is rounded once per key chunk, so it may be 1 ulp off per
     * rounding (3 ulps: 2 chunks + the final one). D = 160: two column chunks
     * (128 + 32) split the score sums, so the probabilities differ in the
     * last float bits and every output may round the other way (2 ulps); and
     * 8192 / 128 = 64-key chunks: dq is rounded once per chunk (S = 150: 3
     * chunks, 5 ulps). */
    static const AttCase cases[] = {
        {"MHA causal", 2, 70, 70, 4, 4, 16, 1, 0, 0, 0},
        {"GQA non-causal T=70 S=130", 2, 70, 130, 4, 2, 24, 0, 0, 0, 0},
        {"MQA causal T=1", 1, 1, 1, 3, 1, 8, 1, 0, 0, 0},
        {"GQA causal D=64 S=200 (2 key chunks)", 1, 200, 200, 4, 2, 64, 1, 0, 3, 0},
        {"MHA causal D=160 (column chunks)", 1, 150, 150, 2, 2, 160, 1, 2, 5, 2},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const AttCase *c = &cases[ci];
        int64_t nq = c->B * c->T * c->H * c->D, nk = c->B * c->S * c->KVH * c->D, nl = c->B * c->H * c->T;
        acc_bf16 *q = brand(nq, -2, 2), *k = brand(nk, -2, 2), *v = brand(nk, -1, 1), *g = brand(nq, -1, 1);
        acc_bf16 *dq0 = brand(nq, -0.5f, 0.5f), *dk0 = brand(nk, -0.5f, 0.5f), *dv0 = brand(nk, -0.5f, 0.5f);
        float *qf = widen(q, nq), *kf = widen(k, nk), *vf = widen(v, nk), *gf = widen(g, nq);
        acc_bf16 *keep[2][4] = {{0}};
        printf("attention %s\n", c->name);
        for (int thr = 1; thr <= 2; thr++) {
            threads_set(thr);
            float *o32 = fbuf(nq), *l32 = fbuf(nl), *l16 = fbuf(nl);
            acc_bf16 *o16 = bbuf(nq);
            k_attention_fwd(o32, l32, qf, kf, vf, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            k_attention_fwd_bf16(o16, l16, q, k, v, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            if (c->tol_out == 0) {
                check_round("attention fwd out", o16, o32, nq);
                check_f32("attention fwd lse", l16, l32, nl);
            } else {
                check_tol("attention fwd out", o16, o32, nq, c->tol_out);
            }
            keep[thr - 1][3] = o16;
            /* the backward reads out and lse: the same (bf16) out for both */
            float *of = widen(o16, nq);
            float *dq32 = widen(dq0, nq), *dk32 = widen(dk0, nk), *dv32 = widen(dv0, nk);
            acc_bf16 *dq16 = bdup(dq0, nq), *dk16 = bdup(dk0, nk), *dv16 = bdup(dv0, nk);
            k_attention_bwd(dq32, dk32, dv32, gf, qf, kf, vf, of, l16, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            k_attention_bwd_bf16(dq16, dk16, dv16, g, q, k, v, o16, l16, c->B, c->T, c->S, c->H, c->KVH, c->D,
                                 c->causal);
            const char *nm[3] = {"attention bwd dq", "attention bwd dk", "attention bwd dv"};
            acc_bf16 *got[3] = {dq16, dk16, dv16};
            float *ref[3] = {dq32, dk32, dv32};
            double tol[3] = {c->tol_dq, c->tol_dkv, c->tol_dkv};
            for (int i = 0; i < 3; i++) {
                int64_t n = i ? nk : nq;
                if (tol[i] == 0) check_round(nm[i], got[i], ref[i], n);
                else check_tol(nm[i], got[i], ref[i], n, tol[i]);
                keep[thr - 1][i] = got[i];
            }
            /* zeroed gradients, and one gradient at a time (NULL others) */
            acc_bf16 *zq = bbuf(nq), *zk = bbuf(nk), *zv = bbuf(nk);
            float *z32 = fbuf(nq > nk ? nq : nk);
            k_attention_bwd(z32, NULL, NULL, gf, qf, kf, vf, of, l16, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            k_attention_bwd_bf16(zq, NULL, NULL, g, q, k, v, o16, l16, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            if (c->tol_dq == 0) check_round("attention bwd dq alone", zq, z32, nq);
            else check_tol("attention bwd dq alone", zq, z32, nq, c->tol_dq);
            k_attention_bwd_bf16(NULL, zk, NULL, g, q, k, v, o16, l16, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            k_attention_bwd_bf16(NULL, NULL, zv, g, q, k, v, o16, l16, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            memset(z32, 0, (size_t)nk * sizeof *z32);
            k_attention_bwd(NULL, z32, NULL, gf, qf, kf, vf, of, l16, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            if (c->tol_dkv == 0) check_round("attention bwd dk alone", zk, z32, nk);
            else check_tol("attention bwd dk alone", zk, z32, nk, c->tol_dkv);
            memset(z32, 0, (size_t)nk * sizeof *z32);
            k_attention_bwd(NULL, NULL, z32, gf, qf, kf, vf, of, l16, c->B, c->T, c->S, c->H, c->KVH, c->D, c->causal);
            if (c->tol_dkv == 0) check_round("attention bwd dv alone", zv, z32, nk);
            else check_tol("attention bwd dv alone", zv, z32, nk, c->tol_dkv);
            if (thr == 2) {
                check_same("attention fwd out", keep[0][3], keep[1][3], nq);
                check_same("attention bwd dq", keep[0][0], keep[1][0], nq);
                check_same("attention bwd dk", keep[0][1], keep[1][1], nk);
                check_same("attention bwd dv", keep[0][2], keep[1][2], nk);
            }
        }
        bufs_free();
    }
}

/* ---- RoPE, embedding, cross-entropy ----------------------------------------- */

static void test_rope(void) {
    static const int64_t shapes[][4] = {{2, 9, 3, 10}, {2, 67, 4, 64}};
    for (int si = 0; si < 2; si++) {
        int64_t B = shapes[si][0], T = shapes[si][1], H = shapes[si][2], D = shapes[si][3], n = B * T * H * D;
        acc_bf16 *x = brand(n, -2, 2), *dx0 = brand(n, -1, 1);
        x[3] = acc_f32_bf16(-INFINITY);
        float *xf = widen(x, n);
        acc_bf16 *keep[2] = {0, 0};
        for (int thr = 1; thr <= 2; thr++) {
            threads_set(thr);
            float *o32 = fbuf(n);
            acc_bf16 *o16 = bbuf(n), *oin = bdup(x, n);
            k_rope_fwd(o32, xf, B, T, H, D, 10000.0f);
            k_rope_fwd_bf16(o16, x, B, T, H, D, 10000.0f);
            check_round("rope fwd", o16, o32, n);
            k_rope_fwd_bf16(oin, oin, B, T, H, D, 10000.0f);
            check_same("rope fwd in place", o16, oin, n);
            float *dx32 = widen(dx0, n);
            acc_bf16 *dx16 = bdup(dx0, n);
            k_rope_bwd(dx32, xf, B, T, H, D, 10000.0f); /* x as dout */
            k_rope_bwd_bf16(dx16, x, B, T, H, D, 10000.0f);
            check_round("rope bwd", dx16, dx32, n);
            keep[thr - 1] = dx16;
            if (thr == 2) check_same("rope bwd", keep[0], keep[1], n);
        }
    }
    bufs_free();
}

static void test_embedding(void) {
    int64_t N = 71, V = 37, C = 515, nc = N * C;
    int32_t *idx = talloc((size_t)N * sizeof *idx);
    for (int64_t i = 0; i < N; i++) idx[i] = (int32_t)(rnd_u32() % (uint32_t)V);
    float *table = frand(V * C, -2, 2), *dt0 = frand(V * C, -1, 1);
    table[5] = 3.3999e38f; /* finite in float, rounds to inf in bf16 */
    acc_bf16 *dout = brand(nc, -1, 1);
    float *doutf = widen(dout, nc);
    for (int thr = 1; thr <= 2; thr++) {
        threads_set(thr);
        float *o32 = fbuf(nc);
        acc_bf16 *o16 = bbuf(nc);
        ASSERT(0, k_embedding_fwd(o32, idx, table, N, V, C));
        ASSERT(0, k_embedding_fwd_bf16(o16, idx, table, N, V, C));
        check_round("embedding fwd", o16, o32, nc);
        float *dt32 = fdup(dt0, V * C), *dt16 = fdup(dt0, V * C);
        ASSERT(0, k_embedding_bwd(dt32, doutf, idx, N, V, C));
        ASSERT(0, k_embedding_bwd_bf16(dt16, dout, idx, N, V, C));
        check_f32("embedding bwd", dt16, dt32, V * C);
    }
    idx[3] = (int32_t)V;
    ASSERT(1, k_embedding_fwd_bf16(bbuf(nc), idx, table, N, V, C));
    ASSERT(1, k_embedding_bwd_bf16(fbuf(V * C), dout, idx, N, V, C));
    bufs_free();
}

static void test_cross_entropy(void) {
    static const int64_t shapes[][2] = {{3, 11}, {37, 1031}};
    for (int si = 0; si < 2; si++) {
        int64_t N = shapes[si][0], V = shapes[si][1], nv = N * V;
        acc_bf16 *x = brand(nv, -4, 4), *dx0 = brand(nv, -0.01f, 0.01f);
        int32_t *t = talloc((size_t)N * sizeof *t);
        for (int64_t i = 0; i < N; i++) t[i] = (int32_t)(rnd_u32() % (uint32_t)V);
        float *xf = widen(x, nv), dloss = 1.5f;
        acc_bf16 *keep[2] = {0, 0};
        for (int thr = 1; thr <= 2; thr++) {
            threads_set(thr);
            float loss32 = 0, loss16 = 0, *l32 = fbuf(N), *l16 = fbuf(N);
            ASSERT(0, k_cross_entropy_fwd(&loss32, l32, xf, t, N, V));
            ASSERT(0, k_cross_entropy_fwd_bf16(&loss16, l16, x, t, N, V));
            check_f32("cross_entropy fwd loss", &loss16, &loss32, 1);
            check_f32("cross_entropy fwd lse", l16, l32, N);
            for (int zero = 0; zero < 2; zero++) {
                float *dx32 = zero ? fbuf(nv) : widen(dx0, nv);
                acc_bf16 *dx16 = zero ? bbuf(nv) : bdup(dx0, nv);
                ASSERT(0, k_cross_entropy_bwd(dx32, &dloss, xf, l32, t, N, V));
                ASSERT(0, k_cross_entropy_bwd_bf16(dx16, &dloss, x, l16, t, N, V));
                check_round("cross_entropy bwd", dx16, dx32, nv);
                if (!zero) keep[thr - 1] = dx16;
            }
            if (thr == 2) check_same("cross_entropy bwd", keep[0], keep[1], nv);
        }
        t[0] = -1;
        float loss = 0;
        ASSERT(1, k_cross_entropy_fwd_bf16(&loss, fbuf(N), x, t, N, V));
        ASSERT(1, k_cross_entropy_bwd_bf16(bbuf(nv), &dloss, x, fbuf(N), t, N, V));
    }
    bufs_free();
}

/* ---- data movement ---------------------------------------------------------- */

/* The largest finite bf16 (3.3895e38): adding 1e36 gives a float sum that
 * is finite but rounds to inf in bf16. */
#define BF_MAX 0x7f7f

static void test_reshape(void) {
    int64_t n = 40001;
    acc_bf16 *x = brand(n, -1, 1), *d0 = brand(n, -1, 1);
    x[7] = acc_f32_bf16(NAN);
    x[8] = BF_MAX;
    d0[8] = acc_f32_bf16(1.0e36f); /* the sum overflows bf16 only */
    float *xf = widen(x, n);
    for (int thr = 1; thr <= 2; thr++) {
        threads_set(thr);
        float *o32 = fbuf(n), *d32 = widen(d0, n);
        acc_bf16 *o16 = bbuf(n), *d16 = bdup(d0, n);
        k_reshape_fwd(o32, xf, n);
        k_reshape_fwd_bf16(o16, x, n);
        check_round("reshape fwd", o16, o32, n);
        k_reshape_bwd(d32, xf, n);
        k_reshape_bwd_bf16(d16, x, n);
        check_round("reshape bwd", d16, d32, n);
        ASSERT(0x7f80, d16[8]);
    }
    bufs_free();
}

static void test_transpose(void) {
    static const struct {
        int ndim;
        int64_t shape[4];
        int d0, d1;
    } cases[] = {
        {4, {2, 3, 5, 7}, 1, 2},   /* rows of the last dim */
        {4, {2, 3, 5, 7}, -1, -2}, /* tiled 2-d */
        {3, {3, 130, 97}, 1, 2},   /* tiled, parallel */
        {3, {37, 3, 341}, 0, 1},   /* rows, parallel */
        {2, {5, 9}, 0, 0},         /* a plain move */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int ndim = cases[ci].ndim;
        const int64_t *xs = cases[ci].shape;
        int64_t n = 1;
        for (int d = 0; d < ndim; d++) n *= xs[d];
        acc_bf16 *x = brand(n, -1, 1), *d0 = brand(n, -1, 1);
        x[1] = acc_f32_bf16(NAN);
        float *xf = widen(x, n);
        for (int thr = 1; thr <= 2; thr++) {
            threads_set(thr);
            float *o32 = fbuf(n), *d32 = widen(d0, n);
            acc_bf16 *o16 = bbuf(n), *d16 = bdup(d0, n);
            k_transpose_fwd(o32, xf, ndim, xs, cases[ci].d0, cases[ci].d1);
            k_transpose_fwd_bf16(o16, x, ndim, xs, cases[ci].d0, cases[ci].d1);
            check_round("transpose fwd", o16, o32, n);
            /* the backward of out = swap(x): dout has out's shape (here x as dout) */
            k_transpose_bwd(d32, xf, ndim, xs, cases[ci].d0, cases[ci].d1);
            k_transpose_bwd_bf16(d16, x, ndim, xs, cases[ci].d0, cases[ci].d1);
            check_round("transpose bwd", d16, d32, n);
        }
    }
    bufs_free();
}

static void test_slice_concat(void) {
    int64_t xs[3] = {5, 9, 1001}, n = 5 * 9 * 1001;
    int64_t start = 2, len = 5, ns = 5 * len * 1001;
    acc_bf16 *x = brand(n, -1, 1), *g = brand(ns, -1, 1), *d0 = brand(n, -1, 1);
    float *xf = widen(x, n), *gf = widen(g, ns);
    /* concat of three inputs along axis 1 (sizes 2, 3, 4 of out's 9) */
    int64_t sizes[3] = {2, 3, 4};
    acc_bf16 *parts[3];
    float *partsf[3];
    for (int i = 0; i < 3; i++) {
        parts[i] = brand(5 * sizes[i] * 1001, -1, 1);
        partsf[i] = widen(parts[i], 5 * sizes[i] * 1001);
    }
    parts[1][4] = acc_f32_bf16(INFINITY);
    partsf[1][4] = INFINITY;
    for (int thr = 1; thr <= 2; thr++) {
        threads_set(thr);
        float *s32 = fbuf(ns), *d32 = widen(d0, n);
        acc_bf16 *s16 = bbuf(ns), *d16 = bdup(d0, n);
        k_slice_fwd(s32, xf, 3, xs, 1, start, len);
        k_slice_fwd_bf16(s16, x, 3, xs, -2, start, len);
        check_round("slice fwd", s16, s32, ns);
        k_slice_bwd(d32, gf, 3, xs, 1, start, len);
        k_slice_bwd_bf16(d16, g, 3, xs, 1, start, len);
        check_round("slice bwd", d16, d32, n);

        float *c32 = fbuf(n);
        acc_bf16 *c16 = bbuf(n);
        const float *in32[3] = {partsf[0], partsf[1], partsf[2]};
        const acc_bf16 *in16[3] = {parts[0], parts[1], parts[2]};
        k_concat_fwd(c32, in32, 3, 3, xs, 1, sizes);
        k_concat_fwd_bf16(c16, in16, 3, 3, xs, 1, sizes);
        check_round("concat fwd", c16, c32, n);
        acc_bf16 *g16[3] = {brand(5 * sizes[0] * 1001, -1, 1), NULL, brand(5 * sizes[2] * 1001, -1, 1)};
        float *g32[3] = {widen(g16[0], 5 * sizes[0] * 1001), NULL, widen(g16[2], 5 * sizes[2] * 1001)};
        k_concat_bwd(g32, xf, 3, 3, xs, -2, sizes);
        k_concat_bwd_bf16(g16, x, 3, 3, xs, -2, sizes);
        check_round("concat bwd 0", g16[0], g32[0], 5 * sizes[0] * 1001);
        check_round("concat bwd 2", g16[2], g32[2], 5 * sizes[2] * 1001);
    }
    bufs_free();
}

/* ---- sum and mean ------------------------------------------------------------- */

static void test_reduce(void) {
    static const int64_t shapes[][3] = {{1, 40001, 1}, {1, 7, 1}, {37, 1001, 1}, {3, 129, 300}, {2, 5, 3}};
    for (int si = 0; si < 5; si++) {
        int64_t outer = shapes[si][0], n = shapes[si][1], inner = shapes[si][2], nx = outer * n * inner,
                no = outer * inner;
        acc_bf16 *x = brand(nx, -1, 1), *d0 = brand(nx, -1, 1);
        float *xf = widen(x, nx), *g = frand(no, -2, 2);
        for (int thr = 1; thr <= 2; thr++) {
            threads_set(thr);
            for (int mean = 0; mean < 2; mean++) {
                float *o32 = fbuf(no), *o16 = fbuf(no), *d32 = widen(d0, nx);
                acc_bf16 *d16 = bdup(d0, nx);
                if (mean) {
                    k_mean_fwd(o32, xf, outer, n, inner);
                    k_mean_fwd_bf16(o16, x, outer, n, inner);
                    k_mean_bwd(d32, g, outer, n, inner);
                    k_mean_bwd_bf16(d16, g, outer, n, inner);
                } else {
                    k_sum_fwd(o32, xf, outer, n, inner);
                    k_sum_fwd_bf16(o16, x, outer, n, inner);
                    k_sum_bwd(d32, g, outer, n, inner);
                    k_sum_bwd_bf16(d16, g, outer, n, inner);
                }
                check_f32(mean ? "mean fwd" : "sum fwd", o16, o32, no);
                check_round(mean ? "mean bwd" : "sum bwd", d16, d32, nx);
            }
        }
    }
    bufs_free();
}

/* ---- the attention's time: fp32 against bf16 ----------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* B=1, T=1024, H=12, D=64, causal, forward + backward, best of reps */
static void bench_attention(int reps) {
    int64_t B = 1, T = 1024, H = 12, D = 64, n = B * T * H * D, nl = B * H * T;
    acc_bf16 *q = brand(n, -2, 2), *k = brand(n, -2, 2), *v = brand(n, -1, 1), *g = brand(n, -1, 1);
    float *qf = widen(q, n), *kf = widen(k, n), *vf = widen(v, n), *gf = widen(g, n);
    float *o32 = fbuf(n), *l32 = fbuf(nl), *dq32 = fbuf(n), *dk32 = fbuf(n), *dv32 = fbuf(n), *l16 = fbuf(nl);
    acc_bf16 *o16 = bbuf(n), *dq16 = bbuf(n), *dk16 = bbuf(n), *dv16 = bbuf(n);
    double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}};
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        k_attention_fwd(o32, l32, qf, kf, vf, B, T, T, H, H, D, 1);
        double t1 = now_s();
        k_attention_bwd(dq32, dk32, dv32, gf, qf, kf, vf, o32, l32, B, T, T, H, H, D, 1);
        double t2 = now_s();
        k_attention_fwd_bf16(o16, l16, q, k, v, B, T, T, H, H, D, 1);
        double t3 = now_s();
        k_attention_bwd_bf16(dq16, dk16, dv16, g, q, k, v, o16, l16, B, T, T, H, H, D, 1);
        double t4 = now_s();
        best[0][0] = fmin(best[0][0], t1 - t0);
        best[0][1] = fmin(best[0][1], t2 - t1);
        best[1][0] = fmin(best[1][0], t3 - t2);
        best[1][1] = fmin(best[1][1], t4 - t3);
    }
    printf("attention B=1 T=1024 H=12 D=64 causal, best of %d (ms): fp32 fwd %.2f bwd %.2f total %.2f; "
           "bf16 fwd %.2f bwd %.2f total %.2f\n",
           reps, 1e3 * best[0][0], 1e3 * best[0][1], 1e3 * (best[0][0] + best[0][1]), 1e3 * best[1][0],
           1e3 * best[1][1], 1e3 * (best[1][0] + best[1][1]));
    bufs_free();
}

/* attention(x, kv, kv): one buffer receives both dk and dv (and with q = k
 * too, dq). The float instance adds both into it; the bf16 instance must
 * too (it accumulates each in a float buffer of its own and must not store
 * one over the other's sums): within a few bf16 roundings of the float
 * instance's sum, masked and not. */
static void test_attention_aliased(void) {
    int64_t B = 2, T = 9, H = 2, D = 8, n = B * T * H * D, bs[4] = {0, T * T, T, 1}, ms[4] = {T, 0, 0, 1};
    int32_t mask[18];
    for (int i = 0; i < 18; i++) mask[i] = i % 4 != 3;
    acc_bf16 *x = brand(n, -2, 2), *g = brand(n, -1, 1), *o16 = bbuf(n);
    float *xf = widen(x, n), *gf = widen(g, n), *o32 = fbuf(n), *l = fbuf(B * H * T), *bias = frand(H * T * T, -1, 1);
    for (int masked = 0; masked < 2; masked++) {
        if (masked) k_attention_masked_fwd(o32, l, xf, xf, xf, mask, 1, ms, bias, bs, B, T, T, H, H, D, 0);
        else k_attention_fwd(o32, l, xf, xf, xf, B, T, T, H, H, D, 0);
        for (int64_t i = 0; i < n; i++) o16[i] = acc_f32_bf16(o32[i]), o32[i] = acc_bf16_f32(o16[i]);
        float *d32 = fbuf(n), *db = fbuf(H * T * T);
        acc_bf16 *d16 = bbuf(n);
        memset(d32, 0, (size_t)n * sizeof *d32), memset(d16, 0, (size_t)n * sizeof *d16);
        if (masked) {
            k_attention_masked_bwd(d32, d32, d32, db, gf, xf, xf, xf, o32, l, mask, 1, ms, bias, bs, B, T, T, H, H, D,
                                   0);
            k_attention_masked_bwd_bf16(d16, d16, d16, db, g, x, x, x, o16, l, mask, 1, ms, bias, bs, B, T, T, H, H, D,
                                        0);
        } else {
            k_attention_bwd(d32, d32, d32, gf, xf, xf, xf, o32, l, B, T, T, H, H, D, 0);
            k_attention_bwd_bf16(d16, d16, d16, g, x, x, x, o16, l, B, T, T, H, H, D, 0);
        }
        check_tol(masked ? "attention bwd, q = k = v, masked" : "attention bwd, q = k = v", d16, d32, n, 4);
    }
}

int main(int argc, char **argv) {
    rng_state = 0x9E3779B97F4A7C15ULL;
    if (argc > 1 && !strcmp(argv[1], "bench")) {
        bench_attention(argc > 2 ? atoi(argv[2]) : 10);
        return 0;
    }
    test_layernorm();
    test_rmsnorm();
    test_softmax();
    test_long_rows();
    test_attention();
    test_attention_aliased();
    test_rope();
    test_embedding();
    test_cross_entropy();
    test_reshape();
    test_transpose();
    test_slice_concat();
    test_reduce();
    TEST_DONE();
}
