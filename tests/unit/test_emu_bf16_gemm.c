/* test_emu_bf16_gemm.c - the device layer's bf16 GEMMs and attention
 * (g_matmul_*_bf16, g_linear_*_bf16, g_attention_*_bf16) on the emulated
 * device against the CPU's bf16 kernels (cpu_kernels_t.h's _bf16
 * instances) on the same bf16 inputs.
 *
 * - matmul, every combination of transposes and batching, at a small shape
 *   and at one with K past the CPU GEMM's K block (130) and odd sizes, the
 *   backward accumulating onto nonzero gradients, with random inputs (within
 *   gemm_check's bound) and with small integers (every sum exact in float:
 *   the same bits, except where the device rounds more often, said there);
 * - linear, with the emulated cuBLASLt epilogues and without them
 *   (ACC_EMU_NO_EPILOGUE=1: the bias rows and the two-stage column
 *   reduction for the bias gradient);
 * - the GEMMs whose output rows are not 16-byte aligned, staged through
 *   the scratch region in chunks of columns (ops.c's rm_gemm_staged), in
 *   bf16 and float, bit for bit equal to the same GEMMs unstaged;
 * - a NaN in an input reaching the stores of every output it feeds;
 * - attention (the FP32-arithmetic tiled, register-tiled and wide kernels,
 *   and the TF32 tensor-core ones, which the bf16 step takes for D <= 64 a
 *   multiple of 8 with or without --tf32) with and without a workspace,
 *   against the CPU within the fp32 test's tolerance for those kernels plus
 *   one bf16 rounding, a recomputed forward bit for bit, dk NULL left
 *   untouched (ATT_DEBUG=1 prints every comparison).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu_kernels.h"
#include "cuda_ops.h"
#include "device.h"
#include "test.h"


extern const acc_device acc_device_cuda_emu;

/* An emulated device whose arena is `bytes` followed by a workspace of
 * ws_bytes; *arena its start. no_epilogue: gemm_ep has no algorithm. */
static acc_dev *open_emu(int64_t bytes, int64_t ws_bytes, int tf32, int no_epilogue, unsigned char **arena) {
    acc_model_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.workspace_offset = (bytes + 255) / 256 * 256;
    desc.workspace_bytes = ws_bytes;
    desc.arena_bytes = desc.workspace_offset + ws_bytes;
    desc.tf32 = tf32;
    acc_dev *d = NULL;
    int64_t extra = 0;
    *arena = NULL;
    if (no_epilogue) setenv("ACC_EMU_NO_EPILOGUE", "1", 1);
    EXPECT(acc_device_cuda_emu.open(&desc, &d, arena, &extra) == ACC_OK, "emulated device did not open");
    if (no_epilogue) unsetenv("ACC_EMU_NO_EPILOGUE");
    return d;
}

/* n bf16 values: uniform in [-1, 1) rounded, or integers in [-4, 4] */
static void fill(acc_bf16 *x, int64_t n, unsigned seed, int integers) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        float v = integers ? (float)((int)((seed >> 8) % 9u) - 4) : (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        x[i] = acc_f32_bf16(v);
    }
}

/* |x| widened */
static void widen_abs(float *f, const acc_bf16 *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) f[i] = fabsf(acc_bf16_f32(x[i]));
}

/* ---- GEMMs ---------------------------------------------------------------------- */

/* The bound on |device - CPU| for one element of a bf16 GEMM. Both compute
 * in float the exact sum S = c0 + sum_k a_k b_k of bf16 inputs (c0: the old
 * gradient, or the bias; a product of two bf16 values is exact in float),
 * in different orders (the emulator in order of k, the CPU over K blocks in
 * OpenBLAS's order), each float result s within (K + 1) u sum|terms| of S
 * (u = 2^-24, K + 1 additions), so |s_dev - s_cpu| <= (K + 1) 2^-23
 * sum|terms|. Each is rounded to bf16 once, |round(x) - x| <= 2^-8 |x|, so
 * the stored values differ by at most 2^-8 (|s_dev| + |s_cpu|) + |s_dev -
 * s_cpu| <= 2^-7 (1 + 2^-7) |cpu| + (K + 2) 2^-22 sum|terms| (the factors
 * cover the second-order terms). `roundings` more on the device (the shared
 * b's gradient with trans_a is rounded after each batch item, ops.c) add
 * 2^-8 sum|terms| each. sum|terms| is computed by the fp32 kernels on
 * |inputs| and |old values|. With exact set (integer inputs: every partial
 * sum exact in float) the bits must be equal. NaN must meet NaN. */
static double gemm_worst; /* the largest |device - CPU| / allowed seen */

static int64_t gemm_check(const char *what, const acc_bf16 *dev, const acc_bf16 *cpu, const float *abs_sum, int64_t n,
                          int64_t K, int roundings, int exact) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = acc_bf16_f32(dev[i]), w = acc_bf16_f32(cpu[i]);
        double tol = 0x1.02p-7 * fabs(w) + ((double)(K + 2) * 0x1p-22 + roundings * 0x1p-8) * abs_sum[i];
        int ok = isnan(w) ? isnan(g) : exact ? dev[i] == cpu[i] : fabs(g - w) <= tol;
        if (!isnan(w) && tol > 0) gemm_worst = fmax(gemm_worst, fabs(g - w) / tol);
        if (ok) continue;
        if (!bad++)
            printf("  %s: element %lld: device %.9g, CPU %.9g, allowed %.3g%s\n", what, (long long)i, g, w, tol,
                   exact ? " (exact)" : "");
    }
    return bad;
}

/* host buffers of a GEMM case: bf16 inputs and results, float |.| copies */
typedef struct {
    acc_bf16 *h;
    float *f;
    int64_t n;
} Buf;

static Buf buf_new(int64_t n) {
    Buf b = {calloc((size_t)n + 1, sizeof(acc_bf16)), calloc((size_t)n + 1, sizeof(float)), n};
    return b;
}
static void buf_free(Buf *b) { free(b->h), free(b->f); }

/* A device copy of host buffer b at *at (bf16 elements), odd offsets when
 * `odd` (cuBLAS takes any element alignment) */
static acc_bf16 *dev_copy(acc_bf16 **at, Buf b, int odd) {
    acc_bf16 *p = *at + (odd ? 1 : 0);
    memcpy(p, b.h, (size_t)b.n * sizeof *p);
    *at = p + b.n + 8;
    return p;
}

static void matmul_case(acc_dev *d, unsigned char *arena, int64_t batch, int64_t M, int64_t N, int64_t K, int ta,
                        int tb, int bb, int integers, int odd) {
    int64_t na = batch * M * K, nb = (bb ? batch : 1) * K * N, no = batch * M * N;
    Buf a = buf_new(na), b = buf_new(nb), out = buf_new(no), dout = buf_new(no), da = buf_new(na), db = buf_new(nb);
    Buf so = buf_new(no), sa = buf_new(na), sb = buf_new(nb), ad = buf_new(no);
    unsigned seed = (unsigned)(batch * 1000 + M * 100 + K + ta * 4 + tb * 2 + bb);
    fill(a.h, na, seed, integers), fill(b.h, nb, seed + 1, integers), fill(dout.h, no, seed + 2, integers);
    fill(da.h, na, seed + 3, integers), fill(db.h, nb, seed + 4, integers);
    acc_bf16 *at = (acc_bf16 *)(void *)arena;
    acc_bf16 *A = dev_copy(&at, a, odd), *B = dev_copy(&at, b, odd), *O = dev_copy(&at, out, odd);
    acc_bf16 *dO = dev_copy(&at, dout, odd), *dA = dev_copy(&at, da, odd), *dB = dev_copy(&at, db, odd);
    /* the sums of |terms|, by the fp32 kernels */
    widen_abs(a.f, a.h, na), widen_abs(b.f, b.h, nb), widen_abs(ad.f, dout.h, no);
    widen_abs(sa.f, da.h, na), widen_abs(sb.f, db.h, nb);
    k_matmul_fwd(so.f, a.f, b.f, batch, M, N, K, ta, tb, bb);
    k_matmul_bwd(sa.f, sb.f, ad.f, a.f, b.f, batch, M, N, K, ta, tb, bb);
    k_matmul_fwd_bf16(out.h, a.h, b.h, batch, M, N, K, ta, tb, bb);
    k_matmul_bwd_bf16(da.h, db.h, dout.h, a.h, b.h, batch, M, N, K, ta, tb, bb);
    g_matmul_fwd_bf16(d, O, A, B, batch, M, N, K, ta, tb, bb);
    g_matmul_bwd_bf16(d, dA, dB, dO, A, B, batch, M, N, K, ta, tb, bb);
    EXPECT(d->status == ACC_OK, "matmul: device error: %s", dev_error(d));
    int per_item = ta && !bb ? (int)batch - 1 : 0; /* db rounded after each item on the device */
    int64_t bad = gemm_check("matmul out", O, out.h, so.f, no, K, 0, integers) +
                  gemm_check("matmul da", dA, da.h, sa.f, na, N, 0, integers) +
                  gemm_check("matmul db", dB, db.h, sb.f, nb, bb ? M : batch * M, per_item, integers && !per_item);
    EXPECT(!bad, "matmul batch %lld M %lld N %lld K %lld ta %d tb %d batched %d integers %d: %lld elements off",
           (long long)batch, (long long)M, (long long)N, (long long)K, ta, tb, bb, integers, (long long)bad);
    Buf *all[] = {&a, &b, &out, &dout, &da, &db, &so, &sa, &sb, &ad};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
}

static void test_matmul(void) {
    unsigned char *arena = NULL;
    acc_dev *d = open_emu(1 << 20, 1 << 16, 0, 0, &arena);
    if (!arena) return;
    static const int64_t shapes[][4] = {{3, 5, 7, 4}, {2, 33, 17, 130}, {1, 1, 9, 3}};
    int n = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int c = 0; c < 8; c++)
            for (int integers = 0; integers < 2; integers++, n++)
                matmul_case(d, arena, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], c >> 2 & 1, c >> 1 & 1,
                            c & 1, integers, n & 1);
    acc_device_cuda_emu.close(d);
    printf("bf16 matmul: %d cases, largest |device - CPU| / allowed = %.3f\n", n, gemm_worst);
}

static void linear_case(acc_dev *d, unsigned char *arena, int64_t M, int64_t N, int64_t K, int tb, int integers,
                        int no_epilogue, int with_dw) {
    int64_t nx = M * K, nw = K * N, no = M * N;
    Buf x = buf_new(nx), w = buf_new(nw), bias = buf_new(N), out = buf_new(no), dout = buf_new(no);
    Buf dx = buf_new(nx), dw = buf_new(nw), db = buf_new(N), so = buf_new(no), sx = buf_new(nx), sw = buf_new(nw),
        sbias = buf_new(N), ad = buf_new(no);
    unsigned seed = (unsigned)(M * 31 + N * 7 + K + tb);
    fill(x.h, nx, seed, integers), fill(w.h, nw, seed + 1, integers), fill(bias.h, N, seed + 2, integers);
    fill(dout.h, no, seed + 3, integers), fill(dx.h, nx, seed + 4, integers), fill(dw.h, nw, seed + 5, integers);
    fill(db.h, N, seed + 6, integers);
    acc_bf16 *at = (acc_bf16 *)(void *)arena;
    acc_bf16 *X = dev_copy(&at, x, 0), *W = dev_copy(&at, w, 0), *Bi = dev_copy(&at, bias, 0);
    acc_bf16 *O = dev_copy(&at, out, 0), *dO = dev_copy(&at, dout, 0), *dX = dev_copy(&at, dx, 0);
    acc_bf16 *dW = dev_copy(&at, dw, 0), *dB = dev_copy(&at, db, 0);
    widen_abs(x.f, x.h, nx), widen_abs(w.f, w.h, nw), widen_abs(bias.f, bias.h, N), widen_abs(ad.f, dout.h, no);
    widen_abs(sx.f, dx.h, nx), widen_abs(sw.f, dw.h, nw), widen_abs(sbias.f, db.h, N);
    k_linear_fwd(so.f, x.f, w.f, bias.f, M, N, K, tb);
    k_linear_bwd(sx.f, with_dw ? sw.f : NULL, sbias.f, ad.f, x.f, w.f, M, N, K, tb);
    k_linear_fwd_bf16(out.h, x.h, w.h, bias.h, M, N, K, tb);
    k_linear_bwd_bf16(dx.h, with_dw ? dw.h : NULL, db.h, dout.h, x.h, w.h, M, N, K, tb);
    g_linear_fwd_bf16(d, O, X, W, Bi, M, N, K, tb);
    g_linear_bwd_bf16(d, dX, with_dw ? dW : NULL, dB, dO, X, W, M, N, K, tb);
    EXPECT(d->status == ACC_OK, "linear: device error: %s", dev_error(d));
    int64_t bad = gemm_check("linear out", O, out.h, so.f, no, K + 1, 0, integers) +
                  gemm_check("linear dx", dX, dx.h, sx.f, nx, N, 0, integers) +
                  gemm_check("linear db", dB, db.h, sbias.f, N, M, 0, integers);
    if (with_dw) bad += gemm_check("linear dw", dW, dw.h, sw.f, nw, M, 0, integers);
    else EXPECT(!memcmp(dW, dw.h, (size_t)nw * sizeof *dW), "linear: dw written though NULL was passed");
    EXPECT(!bad, "linear M %lld N %lld K %lld trans_b %d integers %d epilogue %d dw %d: %lld elements off",
           (long long)M, (long long)N, (long long)K, tb, integers, !no_epilogue, with_dw, (long long)bad);
    Buf *all[] = {&x, &w, &bias, &out, &dout, &dx, &dw, &db, &so, &sx, &sw, &sbias, &ad};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
}

static void test_linear(void) {
    static const int64_t shapes[][3] = {{5, 7, 4}, {37, 19, 130}, {70, 3, 1}};
    int n = 0;
    for (int ne = 0; ne < 2; ne++) {
        unsigned char *arena = NULL;
        acc_dev *d = open_emu(1 << 20, 1 << 16, 0, ne, &arena);
        if (!arena) return;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int c = 0; c < 8; c++, n++)
                linear_case(d, arena, shapes[s][0], shapes[s][1], shapes[s][2], c & 1, c >> 1 & 1, ne, !(c >> 2 & 1));
        acc_device_cuda_emu.close(d);
    }
    printf("bf16 linear: %d cases with and without the epilogues, largest |device - CPU| / allowed = %.3f\n", n,
           gemm_worst);
}

/* A NaN in x (row 1) and in w (column 2): out's row 1 and column 2 are NaN
 * on the device as on the CPU, and nothing else is. */
static void test_nan(void) {
    const int64_t M = 4, N = 5, K = 3;
    for (int ne = 0; ne < 2; ne++) {
        unsigned char *arena = NULL;
        acc_dev *d = open_emu(1 << 16, 1 << 16, 0, ne, &arena);
        if (!arena) return;
        acc_bf16 x[12], w[15], b[5], out[20];
        fill(x, M * K, 1u, 0), fill(w, K * N, 2u, 0), fill(b, N, 3u, 0);
        x[1 * K + 1] = 0x7fc0;
        w[0 * N + 2] = 0x7fc0;
        acc_bf16 *X = (acc_bf16 *)(void *)arena, *W = X + 16, *B = W + 16, *O = B + 16;
        memcpy(X, x, sizeof x), memcpy(W, w, sizeof w), memcpy(B, b, sizeof b);
        k_linear_fwd_bf16(out, x, w, b, M, N, K, 0);
        g_linear_fwd_bf16(d, O, X, W, B, M, N, K, 0);
        int ok = d->status == ACC_OK;
        for (int64_t i = 0; i < M * N; i++) {
            int want = i / N == 1 || i % N == 2;
            ok &= isnan(acc_bf16_f32(O[i])) == want && isnan(acc_bf16_f32(out[i])) == want;
        }
        EXPECT(ok, "linear (epilogue %d): a NaN input did not reach exactly its row and column", !ne);
        acc_device_cuda_emu.close(d);
    }
}

/* ---- attention ---------------------------------------------------------------------- */

/* The device's and the CPU's float results (before the bf16 store) differ
 * as in test_emu's fp32 comparison, within atol + rtol |want| (1e-5, 1e-4;
 * the TF32 kernels: 1e-3, 3e-3, as under --tf32 on bf16 inputs, which TF32
 * holds exactly: the same products) on the same bf16 inputs; each is rounded once (the CPU
 * rounds dq once per key chunk, one chunk at these shapes: S <= the chunk's
 * ATT_SCF / min(D, 128) keys), |round(x) - x| <= 2^-8 |x|, so the stored
 * values differ by at most atol + (rtol + 2^-7 (1 + 2^-7)) |want|. lse is
 * float: atol + rtol |want|. The fraction of bf16 elements with the same
 * bits is printed (most: a difference has to cross a rounding boundary). */
static double att_worst;
static int64_t att_same, att_total;

static double att_ratio(const void *want, const void *got, int64_t n, int is_bf16, double rtol, double atol,
                        const double *terms) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = is_bf16 ? acc_bf16_f32(((const acc_bf16 *)want)[i]) : ((const float *)want)[i];
        double g = is_bf16 ? acc_bf16_f32(((const acc_bf16 *)got)[i]) : ((const float *)got)[i];
        double tol = atol + (rtol + (is_bf16 ? 0x1.02p-7 : 0.0)) * fabs(w) + (terms ? 0x1.02p-8 * terms[i] : 0.0);
        double e = fabs(g - w) / tol;
        if (e != e) return e;
        m = fmax(m, e);
        if (is_bf16) att_same += ((const acc_bf16 *)want)[i] == ((const acc_bf16 *)got)[i], att_total++;
    }
    return m;
}

/* The kernels a bf16 attention takes (ops.c's att_hb, att_tc): the bf16
 * tensor-core ones (D <= 64 and a multiple of 16), the TF32 tensor-core
 * ones (a multiple of 8), or the FP32-arithmetic ones; the backward's
 * tensor-core kernels only with a workspace for delta. The bf16 kernels'
 * scores are exact products of bf16 summed in FP32, as in the FP32
 * kernels (their tolerance), but P and dS enter their products rounded to
 * bf16: each term p_j x_j or ds_j x_j of a sum moves by at most 2^-8 of
 * itself (nearest with 8 significant bits: half of the spacing 2^-7 at 1),
 * so such a sum moves by at most 2^-8 sum |terms| (att_terms), allowed on
 * top (2^-8 (1 + 2^-7), for the second-order terms). Measured: a dq
 * element whose sum cancels, one term dominating, reaches about half of
 * it; the worst ratios are stores one rounding apart just past a power of
 * two (the 2^-7 term). */
enum { ATT_F32, ATT_TF32, ATT_BF16 };
static const double att_rtol[] = {1e-4, 3e-3, 1e-4}, att_atol[] = {1e-5, 1e-3, 1e-5};

static int att_kind(int64_t D, int backward, int workspace) {
    if (D > 64 || (backward && !workspace)) return ATT_F32;
    return D % 16 == 0 ? ATT_BF16 : D % 8 == 0 ? ATT_TF32 : ATT_F32;
}

/* sum |terms| of every output element that a rounding of P or dS moves, in
 * double from the bf16 inputs: out (B, T, H, D): sum_j p_j |v_j| (p
 * normalized); dq: scale sum_j |ds_j| |k_j|; dk: scale sum_t |ds_tj| |q_t|;
 * dv: sum_t p_tj |dout_t|, with ds = p (dout . v_j - dout . out). */
static void att_terms(double *out, double *dq, double *dk, double *dv, const acc_bf16 *q, const acc_bf16 *k,
                      const acc_bf16 *v, const acc_bf16 *dout, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH,
                      int64_t D, int causal) {
    double scale = 1.0 / sqrt((double)D), *p = calloc((size_t)S, sizeof *p), *dp = calloc((size_t)S, sizeof *dp);
    memset(out, 0, (size_t)(B * T * H * D) * sizeof *out), memset(dq, 0, (size_t)(B * T * H * D) * sizeof *dq);
    memset(dk, 0, (size_t)(B * S * KVH * D) * sizeof *dk), memset(dv, 0, (size_t)(B * S * KVH * D) * sizeof *dv);
#define AT_Q(x, t, d) acc_bf16_f32(x[((b * T + (t)) * H + hq) * D + (d)])
#define AT_K(x, j, d) acc_bf16_f32(x[((b * S + (j)) * KVH + hk) * D + (d)])
    for (int64_t b = 0; b < B; b++)
        for (int64_t hq = 0; hq < H; hq++)
            for (int64_t t = 0; t < T; t++) {
                int64_t hk = hq / (H / KVH), n = causal && t + 1 < S ? t + 1 : S, o = ((b * T + t) * H + hq) * D;
                double mx = -INFINITY, l = 0, delta = 0;
                for (int64_t j = 0; j < n; j++) {
                    double sc = 0, g = 0;
                    for (int64_t e = 0; e < D; e++)
                        sc += AT_Q(q, t, e) * AT_K(k, j, e), g += AT_Q(dout, t, e) * AT_K(v, j, e);
                    p[j] = sc * scale, dp[j] = g;
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j < n; j++) l += p[j] = exp(p[j] - mx);
                for (int64_t j = 0; j < n; j++) p[j] /= l, delta += p[j] * dp[j];
                for (int64_t j = 0; j < n; j++) {
                    double ds = fabs(p[j] * (dp[j] - delta));
                    for (int64_t e = 0; e < D; e++) {
                        int64_t kj = ((b * S + j) * KVH + hk) * D + e;
                        out[o + e] += p[j] * fabs(AT_K(v, j, e));
                        dq[o + e] += scale * ds * fabs(AT_K(k, j, e));
                        dk[kj] += scale * ds * fabs(AT_Q(q, t, e));
                        dv[kj] += p[j] * fabs(AT_Q(dout, t, e));
                    }
                }
            }
#undef AT_Q
#undef AT_K
    free(p), free(dp);
}

static void check_attention(acc_dev *d, unsigned char *arena, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH,
                            int64_t D, int causal, int no_dk, int workspace, int aligned) {
    int64_t nq = B * T * H * D, nk = B * S * KVH * D, nl = B * H * T;
    enum { Q, K, V, DO, O, L, DQ, DK, DV, O2, L2, NT };
    int64_t sizes[NT] = {nq, nk, nk, nq, nq, nl, nq, nk, nk, nq, nl};
    void *h[NT], *g[NT];
    unsigned char *at = arena;
    for (int i = 0; i < NT; i++) {
        size_t bytes = (size_t)sizes[i] * (i == L || i == L2 ? 4 : 2);
        h[i] = calloc(bytes + 16, 1);
        g[i] =
            at + (i == L || i == L2 || aligned ? 0 : 2); /* bf16 tensors at odd element offsets, or 64-byte aligned */
        at += (bytes + 2 + 63) / 64 * 64;
    }
    for (int i = Q; i <= DV; i++)
        if (i != O && i != L) { /* in [-0.5, 0.5), as test_emu's (halving is exact) */
            acc_bf16 *x = h[i];
            fill(x, sizes[i], 3u + (unsigned)(i * 7 + D + T), 0);
            for (int64_t e = 0; e < sizes[i]; e++) x[e] = acc_f32_bf16(0.5f * acc_bf16_f32(x[e]));
        }
    for (int i = Q; i <= DV; i++)
        if (i != O && i != L) memcpy(g[i], h[i], (size_t)sizes[i] * 2);
    k_attention_fwd_bf16(h[O], h[L], h[Q], h[K], h[V], B, T, S, H, KVH, D, causal);
    g_attention_fwd_bf16(d, g[O], g[L], g[Q], g[K], g[V], B, T, S, H, KVH, D, causal);
    g_attention_fwd_bf16(d, g[O2], g[L2], g[Q], g[K], g[V], B, T, S, H, KVH, D, causal);
    /* the backward from the same out and lse on both sides (the CPU's) */
    memcpy(g[O], h[O], (size_t)nq * 2);
    memcpy(g[L], h[L], (size_t)nl * 4);
    k_attention_bwd_bf16(h[DQ], no_dk ? NULL : h[DK], h[DV], h[DO], h[Q], h[K], h[V], h[O], h[L], B, T, S, H, KVH, D,
                         causal);
    g_attention_bwd_bf16(d, g[DQ], no_dk ? NULL : g[DK], g[DV], g[DO], g[Q], g[K], g[V], g[O], g[L], B, T, S, H, KVH, D,
                         causal);
    EXPECT(d->status == ACC_OK, "attention D %lld: device error: %s", (long long)D, dev_error(d));
    static const char *const names[] = {"q", "k", "v", "dout", "out", "lse", "dq", "dk", "dv"};
    double *terms[4] = {malloc((size_t)nq * sizeof(double)), malloc((size_t)nq * sizeof(double)),
                        malloc((size_t)nk * sizeof(double)), malloc((size_t)nk * sizeof(double))};
    att_terms(terms[0], terms[1], terms[2], terms[3], h[Q], h[K], h[V], h[DO], B, T, S, H, KVH, D, causal);
    for (int i = O; i <= DV; i++) {
        if (i == DO || (i == DK && no_dk)) continue;
        const void *got = i == O ? g[O2] : i == L ? g[L2] : g[i]; /* out and lse: the second forward's */
        int kind = att_kind(D, i >= DQ, workspace);
        const double *t = kind != ATT_BF16 || i == L ? NULL : i == O ? terms[0] : terms[i - DQ + 1];
        double r = att_ratio(h[i], got, sizes[i], i != L, att_rtol[kind], att_atol[kind], t);
        att_worst = r > att_worst || r != r ? r : att_worst;
        if (getenv("ATT_DEBUG"))
            printf("  T %lld S %lld D %lld causal %d workspace %d kernels %d: %s at %.3f of the tolerance\n",
                   (long long)T, (long long)S, (long long)D, causal, workspace, kind, names[i], r);
        EXPECT(r <= 1.0,
               "attention B %lld T %lld S %lld H %lld KVH %lld D %lld causal %d: %s off by %.3g of the tolerance",
               (long long)B, (long long)T, (long long)S, (long long)H, (long long)KVH, (long long)D, causal, names[i],
               r);
    }
    /* the first forward: g[O], g[L] now hold the CPU's, so recompute once more */
    g_attention_fwd_bf16(d, g[O], g[L], g[Q], g[K], g[V], B, T, S, H, KVH, D, causal);
    EXPECT(!memcmp(g[O], g[O2], (size_t)nq * 2) && !memcmp(g[L], g[L2], (size_t)nl * 4),
           "attention D %lld causal %d: a recomputed forward differs from the first", (long long)D, causal);
    if (no_dk) EXPECT(!memcmp(g[DK], h[DK], (size_t)nk * 2), "attention: dk written though NULL was passed");
    for (int i = 0; i < NT; i++) free(h[i]);
    for (int i = 0; i < 4; i++) free(terms[i]);
}

static void test_attention(void) {
    static const struct {
        int64_t B, T, S, H, KVH, D;
        int causal, no_dk;
    } cases[] = {
        {2, 37, 37, 4, 2, 16, 1, 0},   {2, 37, 37, 4, 2, 64, 1, 0},  {2, 37, 45, 4, 2, 64, 0, 0},
        {2, 37, 37, 4, 4, 64, 1, 1},   {1, 63, 63, 2, 1, 128, 1, 0}, {2, 37, 37, 4, 2, 160, 1, 0},
        {1, 33, 33, 2, 2, 13, 1, 0},   {1, 5, 70, 4, 1, 96, 0, 0},   {1, 33, 33, 2, 1, 32, 0, 0},
        {1, 100, 100, 4, 1, 32, 1, 0}, {1, 70, 130, 2, 1, 48, 0, 0}, {1, 37, 37, 2, 1, 24, 1, 0},
        {1, 130, 130, 2, 1, 64, 1, 0},
    };
    /* without a workspace (delta in the kernels, no register-tiled
     * backward), with one, and with one, TF32 and aligned tensors (the
     * tensor-core kernels' cp.async staging; the bf16 step takes the same
     * kernels with or without TF32) */
    for (int run = 0; run < 3; run++) {
        unsigned char *arena = NULL;
        acc_dev *d = open_emu(4 << 20, run ? 1 << 20 : 0, run == 2, 0, &arena);
        if (!arena) return;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            check_attention(d, arena, cases[i].B, cases[i].T, cases[i].S, cases[i].H, cases[i].KVH, cases[i].D,
                            cases[i].causal, cases[i].no_dk, run > 0, run == 2);
        acc_device_cuda_emu.close(d);
    }
    printf("bf16 attention: %zu shapes x 3 runs, worst element at %.3g of the tolerance, %.1f%% of the bf16 elements "
           "bit-identical to the CPU's\n",
           sizeof cases / sizeof cases[0], att_worst, att_total ? 100.0 * (double)att_same / (double)att_total : 0.0);
}

/* Masked attention in bf16 (the wide FP32-arithmetic kernels and
 * ck_attention_bwd_bias) against k_attention_masked_*_bf16: an int32 mask
 * [B, S] dropping every key of batch 0 and some of batch 1, or one over
 * queries and keys ([B, 1, T, S], [T, S]) whose query row 1 drops every
 * key; a bias [H, T, S] and a causal one [B, 1, 1, S]; the backward from the CPU's out and lse. The
 * FP32 tolerance plus one bf16 rounding of each stored element; lse and
 * dbias (float) the FP32 tolerance. */
static void test_attention_masked(void) {
    static const struct {
        int64_t B, T, S, H, KVH, D;
        int causal;
        int64_t bias[4];
        int over; /* the mask: 0 [B, S], 1 [T, S], 2 [B, 1, T, S] */
    } cases[] = {{2, 9, 11, 4, 2, 16, 0, {1, 4, 9, 11}, 0},
                 {2, 8, 8, 2, 1, 32, 1, {2, 1, 1, 8}, 0},
                 {2, 8, 8, 2, 2, 16, 1, {1, 2, 8, 8}, 2},
                 {2, 6, 9, 4, 2, 16, 0, {2, 1, 1, 9}, 1}};
    unsigned char *arena = NULL;
    acc_dev *d = open_emu(4 << 20, 1 << 20, 0, 0, &arena);
    if (!arena) return;
    double worst = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t B = cases[c].B, T = cases[c].T, S = cases[c].S, H = cases[c].H, KVH = cases[c].KVH, D = cases[c].D;
        int64_t nq = B * T * H * D, nk = B * S * KVH * D, nl = B * H * T, full[4] = {B, H, T, S}, bs[4], stride = 1;
        const int64_t *bd = cases[c].bias;
        int64_t nb = bd[0] * bd[1] * bd[2] * bd[3];
        for (int j = 3; j >= 0; j--) bs[j] = bd[j] == 1 && full[j] > 1 ? 0 : stride, stride *= bd[j];
        int over = cases[c].over;
        int64_t md[4] = {over == 1 ? 1 : B, 1, over ? T : 1, S}, ms[4], nm = md[0] * md[2] * md[3];
        stride = 1;
        for (int j = 3; j >= 0; j--) ms[j] = md[j] == 1 ? 0 : stride, stride *= md[j];
        enum { Q, K, V, DO, O, L, DQ, DK, DV, M, BI, DB, NT };
        int64_t sizes[NT] = {nq, nk, nk, nq, nq, nl, nq, nk, nk, nm, nb, nb};
        void *h[NT], *g[NT];
        unsigned char *at = arena;
        for (int i = 0; i < NT; i++) {
            size_t bytes = (size_t)sizes[i] * (i == L || i >= M ? 4 : 2);
            h[i] = calloc(bytes + 16, 1);
            g[i] = at;
            at += (bytes + 63) / 64 * 64;
        }
        for (int i = Q; i <= DV; i++)
            if (i != O && i != L) fill(h[i], sizes[i], 9u + (unsigned)(i * 5 + D), 0);
        for (int64_t j = 0; j < nb; j++) ((float *)h[BI])[j] = (float)((j * 7) % 11) / 11.0f - 0.5f;
        for (int64_t j = 0; j < nm; j++) {
            int64_t s = j % S, t = j / S % md[2];
            ((int32_t *)h[M])[j] = !over       ? j >= S && j % 3 != 1
                                   : over == 1 ? t != 1 && t * 3 / T == s * 3 / S
                                               : t != 1 && (j % 3 != 1 || s == t % S);
        }
        for (int i = Q; i < NT; i++)
            if (i != O && i != L) memcpy(g[i], h[i], (size_t)sizes[i] * (i >= M ? 4 : 2));
        const float *hb = h[BI], *gb = g[BI];
        k_attention_masked_fwd_bf16(h[O], h[L], h[Q], h[K], h[V], h[M], 1, ms, hb, bs, B, T, S, H, KVH, D,
                                    cases[c].causal);
        g_attention_masked_fwd_bf16(d, g[O], g[L], g[Q], g[K], g[V], g[M], 1, ms, gb, bs, B, T, S, H, KVH, D,
                                    cases[c].causal);
        double r[NT] = {0};
        r[O] = att_ratio(h[O], g[O], nq, 1, 1e-4, 1e-5, NULL);
        for (int64_t j = 0; j < nl; j++) /* lse: +inf where every key is dropped */
            r[L] = fmax(r[L], isinf(((float *)h[L])[j])
                                  ? (((float *)g[L])[j] == ((float *)h[L])[j] ? 0 : INFINITY)
                                  : att_ratio((float *)h[L] + j, (float *)g[L] + j, 1, 0, 1e-4, 1e-5, NULL));
        memcpy(g[O], h[O], (size_t)nq * 2);
        memcpy(g[L], h[L], (size_t)nl * 4);
        k_attention_masked_bwd_bf16(h[DQ], h[DK], h[DV], h[DB], h[DO], h[Q], h[K], h[V], h[O], h[L], h[M], 1, ms, hb,
                                    bs, B, T, S, H, KVH, D, cases[c].causal);
        g_attention_masked_bwd_bf16(d, g[DQ], g[DK], g[DV], g[DB], g[DO], g[Q], g[K], g[V], g[O], g[L], g[M], 1, ms, gb,
                                    bs, B, T, S, H, KVH, D, cases[c].causal);
        EXPECT(d->status == ACC_OK, "masked bf16 attention: device error: %s", dev_error(d));
        for (int i = DQ; i <= DV; i++) r[i] = att_ratio(h[i], g[i], sizes[i], 1, 1e-4, 1e-5, NULL);
        r[DB] = att_ratio(h[DB], g[DB], nb, 0, 1e-4, 1e-5, NULL);
        static const char *const names[NT] = {"", "", "", "", "out", "lse", "dq", "dk", "dv", "", "", "dbias"};
        for (int i = 0; i < NT; i++) {
            if (!*names[i]) continue;
            worst = r[i] > worst || r[i] != r[i] ? r[i] : worst;
            EXPECT(r[i] <= 1.0, "masked bf16 attention case %zu: %s off by %.3g of the tolerance", c, names[i], r[i]);
        }
        for (int i = 0; i < NT; i++) free(h[i]);
    }
    acc_device_cuda_emu.close(d);
    printf("masked bf16 attention: %zu shapes, worst element at %.3g of the tolerance\n",
           sizeof cases / sizeof cases[0], worst);
}

/* ---- GEMMs staged through the scratch region ------------------------------------ */

/* matmul forward and backward (batch 1) twice on the same inputs, unstaged
 * and staged (every GEMM that qualifies, whatever its size, through a 2 KiB
 * scratch: several chunks), element type bf16 (h) or float: the same bits,
 * and how many chunks ran staged. */
static long long staged_case(acc_dev *d, unsigned char *arena, int h, int64_t M, int64_t N, int64_t K, int ta, int tb) {
    int64_t na = M * K, nb = K * N, no = M * N, es = h ? 2 : 4, n = na + nb + 3 * no + na + nb;
    int64_t at[6] = {0}; /* a, b, dout, da, db, out: each at a 256-byte boundary */
    int64_t sizes[6] = {na, nb, no, na, nb, no}, off = 0;
    for (int i = 0; i < 6; i++) at[i] = off, off += (sizes[i] * es + 255) / 256 * 256;
    unsigned char *init = malloc((size_t)off), *got[2] = {malloc((size_t)off), malloc((size_t)off)};
    acc_bf16 *tmp = malloc((size_t)n * sizeof *tmp);
    fill(tmp, n, (unsigned)(M * 7 + N * 5 + K * 3 + ta * 2 + tb), 0);
    for (int i = 0, k = 0; i < 6; i++)
        for (int64_t j = 0; j < sizes[i]; j++, k++) {
            if (h) memcpy(init + at[i] + j * 2, &tmp[k], 2);
            else {
                float f = acc_bf16_f32(tmp[k]);
                memcpy(init + at[i] + j * 4, &f, 4);
            }
        }
    long long before = d->staged;
    for (int staged = 0; staged < 2; staged++) {
        d->stage_out = staged ? 1 : (1LL << 62);
        memcpy(arena, init, (size_t)off);
        void *p[6];
        for (int i = 0; i < 6; i++) p[i] = arena + at[i];
        if (h) {
            g_matmul_fwd_bf16(d, p[5], p[0], p[1], 1, M, N, K, ta, tb, 0);
            g_matmul_bwd_bf16(d, p[3], p[4], p[2], p[0], p[1], 1, M, N, K, ta, tb, 0);
        } else {
            g_matmul_fwd(d, p[5], p[0], p[1], 1, M, N, K, ta, tb, 0);
            g_matmul_bwd(d, p[3], p[4], p[2], p[0], p[1], 1, M, N, K, ta, tb, 0);
        }
        EXPECT(d->status == ACC_OK, "staged matmul: device error: %s", dev_error(d));
        memcpy(got[staged], arena, (size_t)off);
    }
    EXPECT(!memcmp(got[0], got[1], (size_t)off),
           "staged matmul %s M %lld N %lld K %lld ta %d tb %d: not the unstaged GEMMs' bits", h ? "bf16" : "float",
           (long long)M, (long long)N, (long long)K, ta, tb);
    free(init), free(got[0]), free(got[1]), free(tmp);
    return d->staged - before;
}

static void test_staged(void) {
    unsigned char *arena = NULL;
    acc_dev *d = open_emu(1 << 20, KA_SCALARS_BYTES + 2048, 0, 0, &arena);
    if (!arena) return;
    /* one odd dimension each: N (C and op(B)), K (A or B), M (A transposed, C) */
    static const int64_t shapes[][3] = {{40, 37, 24}, {40, 24, 37}, {37, 24, 40}, {40, 24, 16}};
    long long chunks = 0;
    int cases = 0;
    for (int h = 0; h < 2; h++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int c = 0; c < 4; c++, cases++)
                chunks += staged_case(d, arena, h, shapes[s][0], shapes[s][1], shapes[s][2], c >> 1, c & 1);
    /* the forward into [40, 37] with b transposed (the output projection's
     * shape), ta 0 and 1: 3 chunks of 16 columns in bf16, 5 of 8 in float,
     * each; the backward GEMMs accumulate (beta 1) and are not staged */
    EXPECT(chunks == 2 * 3 + 2 * 5, "%lld chunks staged over %d cases, expected 16", chunks, cases);
    d->stage_out = 0;
    acc_device_cuda_emu.close(d);
    printf("staged GEMMs: %d cases, %lld chunks staged, the same bits as unstaged\n", cases, chunks);
}

int main(void) {
    test_attention_masked();
    test_matmul();
    test_staged();
    test_linear();
    test_nan();
    test_attention();
    TEST_DONE();
}
