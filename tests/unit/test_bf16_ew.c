/* test_bf16_ew.c - the bf16 instance of cpu_kernels.c against its fp32 instance.
 *
 * Inputs are random values rounded to bf16, so both instances see the same
 * numbers: the fp32 kernel runs on the widened values, the bf16 kernel on the
 * bf16 ones. The bf16 kernels compute in float and round each store once, so
 * wherever they repeat the fp32 kernel's arithmetic (helpers, casts, the
 * elementwise and broadcasting ops, their backward reductions, dropout,
 * chains) the bf16 output must be exactly acc_f32_bf16(fp32 output),
 * gradients included: a gradient buffer starts nonzero (the same bf16 values
 * in both), so this also checks that an accumulation rounds old + term once.
 * The bf16 GEMM sums in another order than OpenBLAS's single sgemm and is
 * checked within the bound derived at gemm_check; with small integer inputs
 * (every partial sum exact) it must be exact too. Shapes are odd (not
 * multiples of the vector width, the chunks or the GEMM's 128 tiles), large
 * enough somewhere to run in parallel, and the results must be the same bits
 * with 1, 2 and 3 OpenMP threads.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "kernel_test.h"
#include "kernels_internal.h"
#include "test.h"

/* ---- data ----------------------------------------------------------------- */

/* A tensor in both types: h (bf16) and f = h widened. */
typedef struct {
    acc_bf16 *h;
    float *f;
    int64_t n;
} Buf;

static Buf buf_new(int64_t n) {
    Buf b = {xmalloc((size_t)n * sizeof *b.h), xmalloc((size_t)n * sizeof *b.f), n};
    for (int64_t i = 0; i < n; i++) b.h[i] = 0, b.f[i] = 0.0f;
    return b;
}

static void buf_set(Buf *b, int64_t i, float v) {
    b->h[i] = acc_f32_bf16(v);
    b->f[i] = acc_bf16_f32(b->h[i]);
}

/* values in [lo, hi], with a random sign if sign (keeps them away from 0) */
static Buf buf_rnd(int64_t n, float lo, float hi, int sign) {
    Buf b = buf_new(n);
    for (int64_t i = 0; i < n; i++) buf_set(&b, i, (sign && (rnd_u32() & 1) ? -1.0f : 1.0f) * rnd_unif(lo, hi));
    return b;
}

static Buf buf_dup(Buf s) {
    Buf b = buf_new(s.n);
    memcpy(b.h, s.h, (size_t)s.n * sizeof *b.h);
    memcpy(b.f, s.f, (size_t)s.n * sizeof *b.f);
    return b;
}

/* the bf16 half as f too (a bf16 kernel's output fed to the fp32 one) */
static void buf_sync(Buf *b) {
    for (int64_t i = 0; i < b->n; i++) b->f[i] = acc_bf16_f32(b->h[i]);
}

static void buf_free(Buf *b) {
    free(b->h);
    free(b->f);
}

/* NaN, +-Inf and the largest finite values (which overflow in a sum or
 * product) at a few places */
static void buf_specials(Buf *b) {
    static const float sp[] = {NAN, INFINITY, -INFINITY, 3.3e38f, -3.3e38f};
    for (int64_t k = 0; k < 5 && 7 * k < b->n; k++) buf_set(b, 7 * k, sp[k]);
}

/* Elements where the bf16 result is not acc_f32_bf16 of the fp32 one (two
 * NaNs count as equal: the payload is the hardware's business). Prints the
 * first one. */
static int64_t mismatches(const char *what, const acc_bf16 *got, const float *f32, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        acc_bf16 want = acc_f32_bf16(f32[i]);
        if (got[i] == want || (isnan(acc_bf16_f32(got[i])) && isnan(f32[i]))) continue;
        if (!bad++)
            printf("  %s: element %lld: bf16 %#06x (%g), acc_f32_bf16(fp32) %#06x (fp32 %.9g)\n", what, (long long)i,
                   got[i], (double)acc_bf16_f32(got[i]), want, (double)f32[i]);
    }
    return bad;
}

#define ASSERT_SAME(what, buf) ASSERT(0, mismatches(what, (buf).h, (buf).f, (buf).n))

/* ---- helpers and casts ------------------------------------------------------ */

static void test_helpers(void) {
    int64_t n = 1001;
    Buf x = buf_rnd(n, 0.1f, 4.0f, 1), y = buf_rnd(n, 0.1f, 4.0f, 1);
    buf_specials(&x);
    k_add_into(y.f, x.f, n);
    k_add_into_bf16(y.h, x.h, n);
    ASSERT_SAME("add_into", y);
    k_fill(y.f, 0.3f, n); /* not a bf16 value: rounded on the store */
    k_fill_bf16(y.h, 0.3f, n);
    ASSERT_SAME("fill", y);
    k_copy(y.f, x.f, n);
    k_copy_bf16(y.h, x.h, n);
    ASSERT_SAME("copy", y);
    k_zero(y.f, n);
    k_zero_bf16(y.h, n);
    ASSERT_SAME("zero", y);
    ASSERT_TRUE(y.h[0] == 0 && y.h[n - 1] == 0);
    buf_free(&x);
    buf_free(&y);
}

/* cast rounds a float tensor to bf16, uncast widens; their backwards add.
 * In the float instance all four are copies / adds. */
static void test_casts(void) {
    int64_t n = 40003; /* over K_PAR_MIN: parallel */
    float *x = xmalloc((size_t)n * sizeof *x), *o = xmalloc((size_t)n * sizeof *o);
    for (int64_t i = 0; i < n; i++) x[i] = rnd_unif(-3.0f, 3.0f); /* not bf16 values */
    x[1] = NAN, x[2] = INFINITY, x[3] = 3.4e38f /* rounds to +inf */, x[4] = -0.0f;
    Buf out = buf_new(n);
    k_cast_fwd(out.f, x, n);
    ASSERT(0, memcmp(out.f, x, (size_t)n * sizeof *x));
    k_cast_fwd_bf16(out.h, x, n);
    ASSERT_SAME("cast_fwd", out);
    ASSERT_TRUE(isinf(acc_bf16_f32(out.h[3])) && out.h[4] == 0x8000);

    Buf g = buf_rnd(n, 0.1f, 2.0f, 1);
    float *dx = xmalloc((size_t)n * sizeof *dx), *want = xmalloc((size_t)n * sizeof *want);
    for (int64_t i = 0; i < n; i++) dx[i] = want[i] = x[i], want[i] += g.f[i];
    k_cast_bwd_bf16(dx, g.h, n);
    ASSERT(0, memcmp(dx, want, (size_t)n * sizeof *dx));
    for (int64_t i = 0; i < n; i++) dx[i] = x[i];
    k_cast_bwd(dx, g.f, n);
    ASSERT(0, memcmp(dx, want, (size_t)n * sizeof *dx));

    k_uncast_fwd_bf16(o, g.h, n);
    ASSERT(0, memcmp(o, g.f, (size_t)n * sizeof *o));
    k_uncast_fwd(o, g.f, n);
    ASSERT(0, memcmp(o, g.f, (size_t)n * sizeof *o));

    Buf d = buf_rnd(n, 0.1f, 2.0f, 1);
    buf_specials(&d);
    k_uncast_bwd(d.f, x, n); /* d += x, x not bf16 values: one rounding */
    k_uncast_bwd_bf16(d.h, x, n);
    ASSERT_SAME("uncast_bwd", d);
    free(x), free(o), free(dx), free(want);
    buf_free(&out), buf_free(&g), buf_free(&d);
}

/* ---- unary ops ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    void (*fwd)(float *, const float *, int64_t);
    void (*fwd_h)(acc_bf16 *, const acc_bf16 *, int64_t);
    void (*bwd)(float *, const float *, const float *, int64_t);
    void (*bwd_h)(acc_bf16 *, const acc_bf16 *, const acc_bf16 *, int64_t);
    int saves_out; /* the backward reads the output, not the input */
} UnOp;

static const UnOp un_ops[] = {
#define UN_OP(code, name, saved) \
    {#name, k_##name##_fwd, k_##name##_fwd_bf16, k_##name##_bwd, k_##name##_bwd_bf16, sizeof #saved == sizeof "out"},
    ACC_EW_UNARY_OPS(UN_OP)
#undef UN_OP
};

static void test_unary(void) {
    static const int64_t sizes[] = {1, 7, 1001, 40003};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int64_t n = sizes[s];
        for (size_t k = 0; k < sizeof un_ops / sizeof *un_ops; k++) {
            const UnOp *op = &un_ops[k];
            Buf x = buf_rnd(n, 0.01f, 4.0f, 1), out = buf_new(n), g = buf_rnd(n, 0.1f, 2.0f, 1);
            Buf dx = buf_rnd(n, 0.1f, 2.0f, 1);
            if (n > 100) buf_specials(&x), buf_specials(&g);
            op->fwd(out.f, x.f, n);
            op->fwd_h(out.h, x.h, n);
            if (!ASSERT_SAME("unary fwd", out)) printf("  op %s n %lld\n", op->name, (long long)n);
            Buf saved = x;
            if (op->saves_out) buf_sync(&out), saved = out; /* the bf16 output, as the bf16 schedule saves it */
            op->bwd(dx.f, g.f, saved.f, n);
            op->bwd_h(dx.h, g.h, saved.h, n);
            if (!ASSERT_SAME("unary bwd", dx)) printf("  op %s n %lld\n", op->name, (long long)n);
            /* in place */
            op->fwd(x.f, x.f, n);
            op->fwd_h(x.h, x.h, n);
            ASSERT_SAME("unary fwd in place", x);
            buf_free(&x), buf_free(&out), buf_free(&g), buf_free(&dx);
        }
        Buf x = buf_rnd(n, 0.01f, 4.0f, 1), out = buf_new(n), dx = buf_rnd(n, 0.1f, 2.0f, 1);
        k_scale_fwd(out.f, x.f, 0.3f, n);
        k_scale_fwd_bf16(out.h, x.h, 0.3f, n);
        ASSERT_SAME("scale fwd", out);
        k_scale_bwd(dx.f, x.f, -0.7f, n);
        k_scale_bwd_bf16(dx.h, x.h, -0.7f, n);
        ASSERT_SAME("scale bwd", dx);
        k_shift_fwd(out.f, x.f, -1.3f, n);
        k_shift_fwd_bf16(out.h, x.h, -1.3f, n);
        ASSERT_SAME("shift fwd", out);
        buf_sync(&dx); /* accumulate from the same bf16 values */
        k_shift_bwd(dx.f, x.f, n);
        k_shift_bwd_bf16(dx.h, x.h, n);
        ASSERT_SAME("shift bwd", dx);
        buf_free(&x), buf_free(&out), buf_free(&dx);
    }
}

/* ---- binary ops with broadcasting ---------------------------------------------- */

typedef struct {
    const char *name;
    int code;
    void (*fwd)(float *, const float *, const float *, int, const int64_t *, const int64_t *, const int64_t *);
    void (*fwd_h)(acc_bf16 *, const acc_bf16 *, const acc_bf16 *, int, const int64_t *, const int64_t *,
                  const int64_t *);
    void (*bwd)(float *, float *, const float *, const float *, const float *, int, const int64_t *, const int64_t *,
                const int64_t *);
    void (*bwd_h)(acc_bf16 *, acc_bf16 *, const acc_bf16 *, const acc_bf16 *, const acc_bf16 *, int, const int64_t *,
                  const int64_t *, const int64_t *);
} BinOp;

/* every binary backward with one signature (add and sub take no operands) */
#define T_ARGS_0
#define T_ARGS_1 a, b,
#define BIN_WRAP(code, name, reads)                                                                               \
    static void name##_bwd_f(float *da, float *db, const float *g, const float *a, const float *b, int nd,        \
                             const int64_t *os, const int64_t *as, const int64_t *bs) {                           \
        (void)a, (void)b;                                                                                         \
        k_##name##_bwd(da, db, g, T_ARGS_##reads nd, os, as, bs);                                                 \
    }                                                                                                             \
    static void name##_bwd_h(acc_bf16 *da, acc_bf16 *db, const acc_bf16 *g, const acc_bf16 *a, const acc_bf16 *b, \
                             int nd, const int64_t *os, const int64_t *as, const int64_t *bs) {                   \
        (void)a, (void)b;                                                                                         \
        k_##name##_bwd_bf16(da, db, g, T_ARGS_##reads nd, os, as, bs);                                            \
    }
ACC_EW_BINARY_OPS(BIN_WRAP)
#undef BIN_WRAP

static const BinOp bin_ops[] = {
#define BIN_OP(code, name, reads) \
    {#name, ACC_OP_##code, k_##name##_fwd, k_##name##_fwd_bf16, name##_bwd_f, name##_bwd_h},
    ACC_EW_BINARY_OPS(BIN_OP)
#undef BIN_OP
};
#define N_BIN_OPS (int)(sizeof bin_ops / sizeof *bin_ops)

/* Every broadcast path of binary_fwd / binary_bwd: same shapes (flat), a bias
 * on either side (bwd_bias: float column sums, one rounding), a scalar
 * (the chunked double reduction), a column and a general pattern
 * (bwd_reduce); small and over K_PAR_MIN. */
static void test_binary(void) {
    static const int64_t shapes[][3][3] = {
        {{4, 33, 37}, {4, 33, 37}, {4, 33, 37}},     {{4, 33, 37}, {4, 33, 37}, {1, 1, 37}},
        {{4, 33, 37}, {1, 1, 37}, {4, 33, 37}},      {{4, 33, 37}, {4, 33, 37}, {1, 1, 1}},
        {{4, 33, 37}, {1, 1, 1}, {4, 33, 37}},       {{4, 33, 37}, {4, 33, 1}, {4, 33, 37}},
        {{4, 33, 37}, {4, 1, 37}, {1, 33, 1}},       {{1, 1, 40001}, {1, 1, 40001}, {1, 1, 40001}},
        {{1, 401, 130}, {1, 401, 130}, {1, 1, 130}}, {{1, 401, 130}, {1, 1, 1}, {1, 401, 130}},
        {{5, 99, 131}, {5, 1, 131}, {1, 99, 1}},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int64_t *os = shapes[s][0], *as = shapes[s][1], *bs = shapes[s][2];
        int64_t n = os[0] * os[1] * os[2], na = as[0] * as[1] * as[2], nb = bs[0] * bs[1] * bs[2];
        for (int k = 0; k < N_BIN_OPS; k++) {
            const BinOp *op = &bin_ops[k];
            Buf a = buf_rnd(na, 0.25f, 2.0f, 1), b = buf_rnd(nb, 0.25f, 2.0f, 1), out = buf_new(n);
            Buf g = buf_rnd(n, 0.1f, 1.0f, 1), da = buf_rnd(na, 0.1f, 1.0f, 1), db = buf_rnd(nb, 0.1f, 1.0f, 1);
            if (na > 100) buf_specials(&a);
            op->fwd(out.f, a.f, b.f, 3, os, as, bs);
            op->fwd_h(out.h, a.h, b.h, 3, os, as, bs);
            if (!ASSERT_SAME("binary fwd", out)) printf("  op %s shape %zu\n", op->name, s);
            if (na > 100) buf_free(&a), a = buf_rnd(na, 0.25f, 2.0f, 1); /* finite sums for the backward */
            op->bwd(da.f, db.f, g.f, a.f, b.f, 3, os, as, bs);
            op->bwd_h(da.h, db.h, g.h, a.h, b.h, 3, os, as, bs);
            int ok_a = ASSERT_SAME("binary bwd da", da), ok_b = ASSERT_SAME("binary bwd db", db);
            if (!ok_a || !ok_b) printf("  op %s shape %zu\n", op->name, s);
            if (na == n) { /* in place over a */
                op->fwd(a.f, a.f, b.f, 3, os, as, bs);
                op->fwd_h(a.h, a.h, b.h, 3, os, as, bs);
                ASSERT_SAME("binary fwd in place", a);
            }
            buf_free(&a), buf_free(&b), buf_free(&out), buf_free(&g), buf_free(&da), buf_free(&db);
        }
    }
}

/* ---- dropout ------------------------------------------------------------------ */

/* where, max and min move elements (the forward copies one, the backward
 * adds dout once per element or sums a broadcast in float): the bf16
 * instances give acc_f32_bf16 of the fp32 ones on the same inputs. */
static void test_select(void) {
    const int64_t so[] = {5, 7, 33}, sc[] = {5, 1, 33}, sa[] = {1, 7, 33}, sb[] = {5, 7, 1};
    int64_t no = 5 * 7 * 33, nc = 5 * 33, na = 7 * 33, nb = 5 * 7;
    Buf c = buf_rnd(nc, 0.5f, 2.0f, 1), a = buf_rnd(na, 0.1f, 3.0f, 1), b = buf_rnd(nb, 0.1f, 3.0f, 1);
    Buf out = buf_new(no), g = buf_rnd(no, 0.1f, 2.0f, 1), da = buf_rnd(na, 0.1f, 1.0f, 1);
    Buf db = buf_rnd(nb, 0.1f, 1.0f, 1);
    for (int64_t i = 0; i < nc; i += 3) buf_set(&c, i, 0.0f);
    k_where_fwd(out.f, c.f, a.f, b.f, 0, 3, so, sc, sa, sb);
    k_where_fwd_bf16(out.h, c.h, a.h, b.h, 0, 3, so, sc, sa, sb);
    ASSERT_SAME("where fwd", out);
    k_where_bwd(da.f, db.f, g.f, c.f, 0, 3, so, sc, sa, sb);
    k_where_bwd_bf16(da.h, db.h, g.h, c.h, 0, 3, so, sc, sa, sb);
    ASSERT_SAME("where bwd da", da);
    ASSERT_SAME("where bwd db", db);
    for (int mn = 0; mn < 2; mn++) {
        Buf x = buf_rnd(no, 0.01f, 4.0f, 1), e = buf_new(5 * 33), dx = buf_rnd(no, 0.1f, 1.0f, 1);
        Buf ge = buf_rnd(5 * 33, 0.1f, 2.0f, 1);
        (mn ? k_min_fwd : k_max_fwd)(e.f, x.f, 5, 7, 33);
        (mn ? k_min_fwd_bf16 : k_max_fwd_bf16)(e.h, x.h, 5, 7, 33);
        ASSERT_SAME(mn ? "min fwd" : "max fwd", e);
        (mn ? k_min_bwd : k_max_bwd)(dx.f, ge.f, x.f, 5, 7, 33);
        (mn ? k_min_bwd_bf16 : k_max_bwd_bf16)(dx.h, ge.h, x.h, 5, 7, 33);
        ASSERT_SAME(mn ? "min bwd" : "max bwd", dx);
        buf_free(&x), buf_free(&e), buf_free(&dx), buf_free(&ge);
    }
    buf_free(&c), buf_free(&a), buf_free(&b), buf_free(&out), buf_free(&g), buf_free(&da), buf_free(&db);
}

static void test_dropout(void) {
    static const float ps[] = {0.0f, 0.25f, 1.0f};
    static const int64_t sizes[] = {1001, 40003};
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 3; k++) {
            int64_t n = sizes[s];
            Buf x = buf_rnd(n, 0.1f, 3.0f, 1), out = buf_new(n), dx = buf_rnd(n, 0.1f, 3.0f, 1);
            buf_specials(&x);
            k_dropout_fwd(out.f, x.f, n, ps[k], 11, 3, 5);
            k_dropout_fwd_bf16(out.h, x.h, n, ps[k], 11, 3, 5);
            ASSERT_SAME("dropout fwd", out);
            k_dropout_bwd(dx.f, x.f, n, ps[k], 11, 3, 5);
            k_dropout_bwd_bf16(dx.h, x.h, n, ps[k], 11, 3, 5);
            ASSERT_SAME("dropout bwd", dx);
            buf_free(&x), buf_free(&out), buf_free(&dx);
        }
}

/* ---- elementwise chains --------------------------------------------------------- */

/* What the unfused bf16 ops give: each op of the chain run alone by the
 * fp32 kernel on the current (bf16-valued) floats, its result rounded, as
 * that op's bf16 kernel stores it. In place in v (n elements); operands are
 * the ops' float ones. */
static void chain_unfused(float *v, const k_ew_op *ops, int n_ops, int64_t n) {
    for (int k = 0; k < n_ops; k++) {
        k_ew_chain(v, v, &ops[k], 1, n, 5, 3);
        for (int64_t i = 0; i < n; i++) v[i] = acc_bf16_f32(acc_f32_bf16(v[i]));
    }
}

/* A bf16 chain rounds after every op, as the unfused bf16 kernels store each
 * op's result: fusion depends on the plan (a saved intermediate ends a
 * chain), so it must not change the bits. Exactly the unfused ops, for every
 * binary op on either side with a broadcast operand of several periods,
 * then scale, a unary op or dropout, a 4-op chain and in place; and once
 * against the unfused kernels themselves (scale, then gelu). A chain that
 * kept its value in float between ops fails them. */
static void test_chain(void) {
    static const int64_t rows_cols[][2] = {{1000, 1}, {41, 7}, {3, 300}, {2, 333}, {1, 1001}, {70, 1001}};
    static const int un_code[] = {
#define UN_CODE(code, name, saved) ACC_OP_##code,
        ACC_EW_UNARY_OPS(UN_CODE)
#undef UN_CODE
    };
    int bad = 0, cases = 0, n_un = (int)(sizeof un_ops / sizeof *un_ops);
    for (size_t rc = 0; rc < sizeof rows_cols / sizeof *rows_cols; rc++) {
        int64_t R = rows_cols[rc][0], C = rows_cols[rc][1], n = R * C;
        Buf x = buf_rnd(n, 0.5f, 2.0f, 1), o = buf_rnd(C, 0.5f, 2.0f, 1), out = buf_new(n);
        buf_specials(&x);
        for (int b = 0; b < N_BIN_OPS; b++)
            for (int right = 0; right < 2; right++)
                for (int u = 0; u < n_un + 3; u++) { /* binary, then scale, a unary op, dropout, or nothing */
                    k_ew_op ops[2] = {{bin_ops[b].code, NULL, C, right, 0.0f, 0}, {ACC_OP_SCALE, NULL, 1, 0, 0.75f, 0}};
                    int n_ops = 2;
                    if (u >= 1 && u <= n_un) {
                        ops[1].op = un_code[u - 1];
                    } else if (u == n_un + 1) {
                        ops[1] = (k_ew_op){ACC_OP_DROPOUT, NULL, 1, 0, 0.25f, 9};
                    } else if (u == n_un + 2) {
                        n_ops = 1;
                    }
                    ops[0].operand = o.f;
                    memcpy(out.f, x.f, (size_t)n * sizeof *out.f);
                    chain_unfused(out.f, ops, n_ops, n);
                    ops[0].operand = o.h;
                    k_ew_chain_bf16(out.h, x.h, ops, n_ops, n, 5, 3);
                    int64_t m = mismatches("chain", out.h, out.f, n);
                    if (m)
                        printf("  chain: op %s right %d step %d shape %lldx%lld\n", bin_ops[b].name, right, u,
                               (long long)R, (long long)C);
                    bad += m != 0;
                    cases++;
                }
        /* four ops: a full-size operand, a scalar one on the right, exp, scale */
        Buf full = buf_rnd(n, 0.5f, 2.0f, 1), sc = buf_rnd(1, 0.5f, 2.0f, 1);
        k_ew_op ops[4] = {{ACC_OP_MUL, NULL, n, 0, 0.0f, 0},
                          {ACC_OP_SUB, NULL, 1, 1, 0.0f, 0},
                          {ACC_OP_EXP, NULL, 1, 0, 0.0f, 0},
                          {ACC_OP_SCALE, NULL, 1, 0, -1.5f, 0}};
        ops[0].operand = full.f, ops[1].operand = sc.f;
        memcpy(out.f, x.f, (size_t)n * sizeof *out.f);
        chain_unfused(out.f, ops, 4, n);
        ops[0].operand = full.h, ops[1].operand = sc.h;
        k_ew_chain_bf16(out.h, x.h, ops, 4, n, 5, 3);
        bad += mismatches("chain of 4", out.h, out.f, n) != 0;
        cases++;
        /* in place */
        Buf y = buf_dup(x);
        chain_unfused(y.f, ops + 2, 2, n);
        k_ew_chain_bf16(y.h, y.h, ops + 2, 2, n, 5, 3);
        bad += mismatches("chain in place", y.h, y.f, n) != 0;
        cases++;
        buf_free(&x), buf_free(&o), buf_free(&out), buf_free(&full), buf_free(&sc), buf_free(&y);
    }
    ASSERT(0, bad);
    ASSERT(6 * (N_BIN_OPS * 2 * (n_un + 3) + 2), cases);

    /* fusion keeps the bits in bf16: x*0.75 then gelu, fused and by the kernels */
    int64_t n = 4096;
    Buf x = buf_rnd(n, 0.5f, 2.0f, 1), fused = buf_new(n), unfused = buf_new(n);
    k_ew_op ops[2] = {{ACC_OP_SCALE, NULL, 1, 0, 0.75f, 0}, {ACC_OP_GELU, NULL, 1, 0, 0.0f, 0}};
    k_ew_chain_bf16(fused.h, x.h, ops, 2, n, 5, 3);
    k_scale_fwd_bf16(unfused.h, x.h, 0.75f, n);
    k_gelu_fwd_bf16(unfused.h, unfused.h, n);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++) differ += fused.h[i] != unfused.h[i];
    ASSERT(0, differ);
    buf_free(&x), buf_free(&fused), buf_free(&unfused);
}

/* ---- GEMM -------------------------------------------------------------------------- */

/* The bound on |bf16 - fp32| for one element of a GEMM. Both the bf16 GEMM
 * (float sums over K blocks, in sgemm's order within a block) and the fp32
 * one (one sgemm) compute in float the same exact sum S = c0 + sum_k a_k b_k
 * of bf16 inputs (c0: the old gradient, or the bias; a product of two bf16
 * values is exact in float), each within about (K + 1) u sum|terms| of S
 * (u = 2^-24, K + 1 additions), so the two float results s', s differ by at
 * most (K + 1) 2^-23 sum|terms|. The bf16 store rounds s' to 8 significant
 * bits: |round(s') - s'| <= 2^-8 |s'| <= 2^-8 (|s| + |s' - s|). Allowed, with
 * a factor 2 on the second term for the higher-order terms and 2^-8 of it:
 * 2^-8 |fp32| + (K + 2) 2^-22 sum|terms|, sum|terms| computed by the fp32
 * instance on |inputs| and |old values|. The first term alone is the
 * rounding: an element just above a power of two nearly reaches it (the test
 * prints the largest ratio seen, ~0.5-1). A GEMM that dropped a K block, read
 * a wrong transpose or rounded a partial sum exceeds it (and the integer
 * cases, exact, catch any intermediate rounding). */
static double gemm_worst; /* the largest |bf16 - fp32| / allowed seen */

static int64_t gemm_check(const char *what, const acc_bf16 *got, const float *f32, const float *abs_sum, int64_t n,
                          int64_t K) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = acc_bf16_f32(got[i]), w = f32[i];
        double tol = 0x1p-8 * fabs(w) + (double)(K + 2) * 0x1p-22 * abs_sum[i];
        if (!isnan(w) && tol > 0) gemm_worst = fmax(gemm_worst, fabs(g - w) / tol);
        if (isnan(w) ? isnan(g) : fabs(g - w) <= tol) continue;
        if (!bad++) printf("  %s: element %lld: bf16 %.9g, fp32 %.9g, allowed %.3g\n", what, (long long)i, g, w, tol);
    }
    return bad;
}

static void buf_abs(Buf *dst, Buf src) {
    for (int64_t i = 0; i < src.n; i++) dst->f[i] = fabsf(src.f[i]);
}

/* matmul forward and backward at one shape: within gemm_check's bound (or
 * exact with integer inputs) */
static void gemm_case(int64_t batch, int64_t M, int64_t N, int64_t K, int ta, int tb, int bb, int integers) {
    int64_t na = batch * M * K, nb = (bb ? batch : 1) * K * N, no = batch * M * N;
    float hi = 2.0f;
    Buf a = buf_new(na), b = buf_new(nb), out = buf_new(no), g = buf_new(no);
    for (int64_t i = 0; i < na; i++) buf_set(&a, i, integers ? (float)(int)rnd_unif(-4.0f, 4.99f) : rnd_unif(-hi, hi));
    for (int64_t i = 0; i < nb; i++) buf_set(&b, i, integers ? (float)(int)rnd_unif(-4.0f, 4.99f) : rnd_unif(-hi, hi));
    for (int64_t i = 0; i < no; i++) buf_set(&g, i, integers ? (float)(int)rnd_unif(-4.0f, 4.99f) : rnd_unif(-hi, hi));
    Buf da = buf_rnd(na, 0.1f, 1.0f, 1), db = buf_rnd(nb, 0.1f, 1.0f, 1);
    if (integers) {
        for (int64_t i = 0; i < na; i++) buf_set(&da, i, (float)(i % 5));
        for (int64_t i = 0; i < nb; i++) buf_set(&db, i, (float)(i % 3));
    }
    /* sum|terms|: the fp32 GEMMs on |inputs|, the old gradients' | | added */
    Buf aa = buf_new(na), ab = buf_new(nb), ag = buf_new(no), sa = buf_new(na), sb = buf_new(nb), so = buf_new(no);
    buf_abs(&aa, a), buf_abs(&ab, b), buf_abs(&ag, g), buf_abs(&sa, da), buf_abs(&sb, db);
    k_matmul_fwd(so.f, aa.f, ab.f, batch, M, N, K, ta, tb, bb);
    k_matmul_bwd(sa.f, sb.f, ag.f, aa.f, ab.f, batch, M, N, K, ta, tb, bb);

    k_matmul_fwd(out.f, a.f, b.f, batch, M, N, K, ta, tb, bb);
    k_matmul_fwd_bf16(out.h, a.h, b.h, batch, M, N, K, ta, tb, bb);
    k_matmul_bwd(da.f, db.f, g.f, a.f, b.f, batch, M, N, K, ta, tb, bb);
    k_matmul_bwd_bf16(da.h, db.h, g.h, a.h, b.h, batch, M, N, K, ta, tb, bb);
    int64_t kb = bb ? M : batch * M; /* db's inner dimension (the batch folds in when b is shared) */
    int64_t bad;
    if (integers) /* every partial sum is an integer below 2^24: exact in both */
        bad = mismatches("matmul fwd", out.h, out.f, no) + mismatches("matmul da", da.h, da.f, na) +
              mismatches("matmul db", db.h, db.f, nb);
    else
        bad = gemm_check("matmul fwd", out.h, out.f, so.f, no, K) + gemm_check("matmul da", da.h, da.f, sa.f, na, N) +
              gemm_check("matmul db", db.h, db.f, sb.f, nb, kb);
    if (!ASSERT(0, bad))
        printf("  matmul batch %lld M %lld N %lld K %lld ta %d tb %d bb %d integers %d\n", (long long)batch,
               (long long)M, (long long)N, (long long)K, ta, tb, bb, integers);
    Buf *all[] = {&a, &b, &out, &g, &da, &db, &aa, &ab, &ag, &sa, &sb, &so};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) buf_free(all[i]);
}

static void test_matmul(void) {
    static const int64_t cases[][7] = {
        /* batch, M, N, K, trans_a, trans_b, b_batched */
        {1, 1, 1, 1, 0, 0, 0},      {1, 130, 129, 300, 0, 0, 0}, {2, 150, 70, 129, 0, 1, 0}, {3, 37, 200, 257, 1, 0, 1},
        {2, 65, 131, 140, 1, 1, 0}, {2, 129, 5, 3, 0, 0, 1},     {1, 7, 257, 513, 1, 1, 0},  {3, 40, 33, 260, 1, 0, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int integers = 0; integers < 2; integers++) {
            const int64_t *s = cases[c];
            gemm_case(s[0], s[1], s[2], s[3], (int)s[4], (int)s[5], (int)s[6], integers);
        }
    /* K = 0: zeros */
    Buf out = buf_rnd(12, 1.0f, 2.0f, 0);
    k_matmul_fwd_bf16(out.h, NULL, NULL, 1, 3, 4, 0, 0, 0, 0);
    int zero = 1;
    for (int i = 0; i < 12; i++) zero &= out.h[i] == 0;
    ASSERT_TRUE(zero);
    buf_free(&out);
    /* a NaN or Inf in a reaches its output row through the one rounding */
    int64_t M = 5, N = 140, K = 200;
    Buf a = buf_rnd(M * K, 0.5f, 1.0f, 1), b = buf_rnd(K * N, 0.5f, 1.0f, 0), o = buf_new(M * N);
    buf_set(&a, 0 * K + 150, NAN);
    buf_set(&a, 2 * K + 3, INFINITY);
    k_matmul_fwd(o.f, a.f, b.f, 1, M, N, K, 0, 0, 0);
    k_matmul_fwd_bf16(o.h, a.h, b.h, 1, M, N, K, 0, 0, 0);
    int ok = 1;
    for (int64_t j = 0; j < N; j++) {
        ok &= isnan(acc_bf16_f32(o.h[j])) && isnan(o.f[j]);
        ok &= isinf(acc_bf16_f32(o.h[2 * N + j])) && acc_bf16_f32(o.h[2 * N + j]) > 0 && o.f[2 * N + j] > 0;
        ok &= isfinite(acc_bf16_f32(o.h[N + j]));
    }
    ASSERT_TRUE(ok);
    buf_free(&a), buf_free(&b), buf_free(&o);
}

/* linear: the bias joins the GEMM's float tile before the one rounding;
 * db is float column sums from the old value, rounded once (exact). */
static void test_linear(void) {
    static const int64_t cases[][4] = {{300, 260, 200, 0}, {300, 260, 200, 1}, {1, 3, 5, 0}, {129, 131, 0, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t M = cases[c][0], N = cases[c][1], K = cases[c][2];
        int tb = (int)cases[c][3];
        Buf x = buf_rnd(M * K, 0.05f, 2.0f, 1), w = buf_rnd(K * N, 0.05f, 2.0f, 1), b = buf_rnd(N, 0.05f, 2.0f, 1);
        Buf out = buf_new(M * N), g = buf_rnd(M * N, 0.05f, 2.0f, 1);
        Buf dx = buf_rnd(M * K, 0.1f, 1.0f, 1), dw = buf_rnd(K * N, 0.1f, 1.0f, 1), db = buf_rnd(N, 0.1f, 1.0f, 1);
        Buf ax = buf_new(M * K), aw = buf_new(K * N), ab = buf_new(N), ag = buf_new(M * N);
        Buf sx = buf_new(M * K), sw = buf_new(K * N), sdb = buf_new(N), so = buf_new(M * N);
        buf_abs(&ax, x), buf_abs(&aw, w), buf_abs(&ab, b), buf_abs(&ag, g), buf_abs(&sx, dx), buf_abs(&sw, dw);
        k_linear_fwd(so.f, ax.f, aw.f, ab.f, M, N, K, tb);
        k_linear_bwd(sx.f, sw.f, sdb.f, ag.f, ax.f, aw.f, M, N, K, tb);

        k_linear_fwd(out.f, x.f, w.f, b.f, M, N, K, tb);
        k_linear_fwd_bf16(out.h, x.h, w.h, b.h, M, N, K, tb);
        int64_t bad = gemm_check("linear fwd", out.h, out.f, so.f, M * N, K);
        if (K == 0) bad += mismatches("linear fwd K=0", out.h, out.f, M * N);
        k_linear_bwd(dx.f, dw.f, db.f, g.f, x.f, w.f, M, N, K, tb);
        k_linear_bwd_bf16(dx.h, dw.h, db.h, g.h, x.h, w.h, M, N, K, tb);
        bad +=
            gemm_check("linear dx", dx.h, dx.f, sx.f, M * K, N) + gemm_check("linear dw", dw.h, dw.f, sw.f, K * N, M);
        bad += mismatches("linear db", db.h, db.f, N);
        /* db alone, from the bf16 db (rounded) in both */
        buf_sync(&db);
        k_linear_bwd(NULL, NULL, db.f, g.f, x.f, w.f, M, N, K, tb);
        k_linear_bwd_bf16(NULL, NULL, db.h, g.h, x.h, w.h, M, N, K, tb);
        bad += mismatches("linear db alone", db.h, db.f, N);
        if (!ASSERT(0, bad))
            printf("  linear M %lld N %lld K %lld tb %d\n", (long long)M, (long long)N, (long long)K, tb);
        Buf *all[] = {&x, &w, &b, &out, &g, &dx, &dw, &db, &ax, &aw, &ab, &ag, &sx, &sw, &sdb, &so};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) buf_free(all[i]);
    }
}

/* ---- thread counts ------------------------------------------------------------------ */

/* The bf16 kernels that split work across threads, their outputs in order. */
static int64_t det_run(acc_bf16 *res) {
    uint64_t saved = rng_state;
    rng_state = 4242;
    int64_t at = 0, M = 300, N = 260, K = 300;
    Buf a = buf_rnd(M * K, 0.05f, 2.0f, 1), w = buf_rnd(K * N, 0.05f, 2.0f, 1), bias = buf_rnd(N, 0.05f, 2.0f, 1);
    Buf g = buf_rnd(M * N, 0.05f, 2.0f, 1);
    k_linear_fwd_bf16(res + at, a.h, w.h, bias.h, M, N, K, 1);
    at += M * N;
    acc_bf16 *dx = res + at, *dw = res + at + M * K, *db = res + at + M * K + K * N;
    memset(dx, 0, (size_t)(M * K + K * N + N) * sizeof *dx);
    k_linear_bwd_bf16(dx, dw, db, g.h, a.h, w.h, M, N, K, 0);
    at += M * K + K * N + N;
    memset(res + at, 0, (size_t)(M * K + K * N) * sizeof *res);
    k_matmul_bwd_bf16(res + at, res + at + M * K, g.h, a.h, w.h, 2, M / 2, N, K, 1, 0, 0); /* db: the batch summed */
    at += M * K + K * N;
    /* GEMMs of one tile each: outside a team of threads OpenBLAS would split
     * each sgemm, and its float bits depend on the split (rarely visible
     * after the rounding to bf16, hence many elements) */
    Buf ba = buf_rnd(8 * 128 * 300, 0.05f, 2.0f, 1), bb = buf_rnd(8 * 300 * 128, 0.05f, 2.0f, 1);
    k_matmul_fwd_bf16(res + at, ba.h, bb.h, 8, 128, 128, 300, 0, 0, 1);
    at += 8 * 128 * 128;
    buf_free(&ba), buf_free(&bb);
    int64_t os[2] = {M, N}, ss[2] = {1, 1}, cs[2] = {M, 1};
    res[at] = 0;
    k_mul_bwd_bf16(NULL, res + at, g.h, g.h, bias.h, 2, os, os, ss); /* scalar: chunked reduction */
    at += 1;
    memset(res + at, 0, (size_t)M * sizeof *res);
    k_add_bwd_bf16(NULL, res + at, g.h, 2, os, os, cs); /* a column */
    at += M;
    k_ew_op ops[2] = {{ACC_OP_MUL, bias.h, N, 0, 0.0f, 0}, {ACC_OP_DROPOUT, NULL, 1, 0, 0.25f, 9}};
    k_ew_chain_bf16(res + at, g.h, ops, 2, M * N, 5, 3);
    at += M * N;
    k_gelu_fwd_bf16(res + at, g.h, M * N);
    at += M * N;
    buf_free(&a), buf_free(&w), buf_free(&bias), buf_free(&g);
    rng_state = saved;
    return at;
}

static void test_threads(void) {
    int64_t cap = 1000000;
    acc_bf16 *r[3];
    int64_t len[3];
    int team = threads_get();
    for (int t = 0; t < 3; t++) {
        r[t] = xmalloc((size_t)cap * sizeof *r[t]);
        threads_set(t + 1);
        len[t] = det_run(r[t]);
    }
    threads_set(team);
    ASSERT_TRUE(len[0] <= cap && len[0] == len[1] && len[0] == len[2]);
    ASSERT(0, memcmp(r[0], r[1], (size_t)len[0] * sizeof *r[0]));
    ASSERT(0, memcmp(r[0], r[2], (size_t)len[0] * sizeof *r[0]));
    for (int t = 0; t < 3; t++) free(r[t]);
}

int main(void) {
    rng_state = 0x9E3779B97F4A7C15ULL;
    test_helpers();
    test_casts();
    test_unary();
    test_binary();
    test_select();
    test_dropout();
    test_chain();
    test_matmul();
    test_linear();
    printf("bf16 GEMM (%s): largest |bf16 - fp32| / allowed = %.3f\n",
           k_bgemm_native() ? "AVX512-BF16" : "widened panels and cblas_sgemm", gemm_worst);
    test_threads();
    TEST_DONE();
}
