/* test_emu.c - the device emulator and the launch layer, without a model.
 *
 * - kernels written against emu.h: a block reversal through shared memory
 *   (wrong without the barrier), a warp sum by shuffles (every lane must see
 *   the total), a grid-stride fill; a barrier one thread skips and a
 *   synchronizing call in a kernel launched as plain must be reported;
 * - the launch layer's matmul (cuBLAS conventions, run by the emulator's
 *   reference GEMM) against the CPU kernel k_matmul_fwd/bwd for every
 *   combination of transposes and batching; linear (the GEMM with the
 *   bias and bias-gradient epilogues, and without them) against
 *   k_linear_fwd/bwd and the emulated matmul and bias add;
 * - __syncwarp: a warp exchange through shared memory, and lanes meeting at
 *   a shuffle and a __syncwarp reported;
 * - the launch layer's attention (the tiled kernels, and the one-warp-per-row
 *   kernels for heads wider than the tiles) against k_attention_fwd/bwd:
 *   causal and not, GQA, head sizes on both sides of the tile's, lengths
 *   that are not a multiple of any tile, a recomputed forward bit for bit;
 * - the reductions over rows (ck_col_reduce, ck_col_final): the gradients of
 *   broadcast operands of add/sub/mul/div (bias-like suffixes and other
 *   broadcasts), the norms' weight and bias gradients, sum/mean over a
 *   middle axis, each with one and with several chunks (a scratch region
 *   too small for more than one, and a large one), against the CPU kernels;
 *   the embedding gradient (sort, then a warp per run of equal ids) bit for
 *   bit against the CPU's, with the tokens split into several segments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cuda_ops.h"
#include "device.h"
#include "test.h"
#include "emu_exec.h"


static void k_reverse(acc_kargs a);
static void k_warp_sum(acc_kargs a);
static void k_divergent(acc_kargs a);
static void k_warp_rotate(acc_kargs a);
static void k_warp_mixed(acc_kargs a);

/* p0 x: each block reverses its blockDim.x elements through shared memory */
static void k_reverse(acc_kargs a) {
    __shared__ float sh[256];
    float *x = a.p[0] + blockIdx.x * blockDim.x;
    sh[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = sh[blockDim.x - 1 - threadIdx.x];
}

/* p0 x: every lane gets the sum of its warp's values */
static void k_warp_sum(acc_kargs a) {
    float *x = a.p[0] + blockIdx.x * blockDim.x;
    float v = x[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    x[threadIdx.x] = v;
}

/* thread 0 returns before the barrier the others wait at */
static void k_divergent(acc_kargs a) {
    if (threadIdx.x == 0) return;
    __syncthreads();
    a.p[0][threadIdx.x] = 1;
}

/* p0 x: each warp rotates its 32 values by one lane through shared memory
 * (wrong without the warp barrier: lane 0 runs to the end before lane 1) */
static void k_warp_rotate(acc_kargs a) {
    __shared__ float sh[128];
    int t = (int)threadIdx.x, lane = t & 31;
    float *x = a.p[0] + blockIdx.x * blockDim.x;
    sh[t] = x[t];
    __syncwarp();
    x[t] = sh[(t & ~31) | ((lane + 1) & 31)];
}

/* the lanes of warp 0 split between a shuffle and a __syncwarp */
static void k_warp_mixed(acc_kargs a) {
    if (threadIdx.x & 1) __syncwarp();
    else a.p[0][threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

static void test_executor(void) {
    float x[512];
    for (int i = 0; i < 512; i++) x[i] = (float)i;
    acc_kargs a = {{x}, {0}, {0}};
    const char *err = emu_launch(k_reverse, 1, (emu_dim3){2, 1, 1}, (emu_dim3){256, 1, 1}, &a);
    EXPECT(!err, "reverse: %s", err);
    int ok = 1;
    for (int i = 0; i < 512; i++) ok &= x[i] == (float)((i / 256) * 256 + 255 - i % 256);
    EXPECT(ok, "reverse: the block did not see its own shared writes after the barrier");

    for (int i = 0; i < 128; i++) x[i] = (float)i;
    err = emu_launch(k_warp_sum, 1, (emu_dim3){1, 1, 1}, (emu_dim3){128, 1, 1}, &a);
    EXPECT(!err, "warp sum: %s", err);
    ok = 1;
    for (int i = 0; i < 128; i++) {
        int w = i / 32;
        float want = (float)(32 * 32 * w + 31 * 32 / 2); /* sum of 32w .. 32w+31 */
        ok &= x[i] == want;
    }
    EXPECT(ok, "warp sum: some lane's total is wrong (x[0] = %g, x[127] = %g)", x[0], x[127]);

    err = emu_launch(k_divergent, 1, (emu_dim3){1, 1, 1}, (emu_dim3){64, 1, 1}, &a);
    EXPECT(err && strstr(err, "divergent"), "a barrier thread 0 skipped was not reported (%s)", err ? err : "no error");
    err = emu_launch(k_reverse, 0, (emu_dim3){1, 1, 1}, (emu_dim3){32, 1, 1}, &a);
    EXPECT(err && strstr(err, "not synchronizing"), "__syncthreads in a plain kernel was not reported");
    err = emu_launch(k_warp_sum, 1, (emu_dim3){1, 1, 1}, (emu_dim3){48, 1, 1}, &a);
    EXPECT(err != NULL, "a partial warp in a synchronizing kernel was accepted");

    for (int i = 0; i < 256; i++) x[i] = (float)i;
    err = emu_launch(k_warp_rotate, 1, (emu_dim3){2, 1, 1}, (emu_dim3){128, 1, 1}, &a);
    EXPECT(!err, "warp rotate: %s", err);
    ok = 1;
    for (int i = 0; i < 256; i++) ok &= x[i] == (float)((i & ~31) | ((i + 1) & 31));
    EXPECT(ok, "warp rotate: a lane read its neighbour's shared value before the warp barrier");
    err = emu_launch(k_warp_mixed, 1, (emu_dim3){1, 1, 1}, (emu_dim3){32, 1, 1}, &a);
    EXPECT(err && strstr(err, "different warp barriers"), "a shuffle meeting a __syncwarp was not reported (%s)",
           err ? err : "no error");
    err = emu_launch(k_warp_rotate, 0, (emu_dim3){1, 1, 1}, (emu_dim3){32, 1, 1}, &a);
    EXPECT(err && strstr(err, "not synchronizing"), "__syncwarp in a plain kernel was not reported");
}

static void fill(float *x, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

static double max_diff(const float *a, const float *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d != d) return d; /* NaN: out, whatever follows */
        m = fmax(m, d);
    }
    return m;
}

extern const acc_device acc_device_cuda_emu;

static void test_matmul(void) {
    const int64_t batch = 3, M = 5, N = 7, K = 4;
    acc_model_desc desc;
    memset(&desc, 0, sizeof desc);
    /* one arena: a, b, out, dout, da, db for the device, then host copies */
    desc.arena_bytes = 4096 * 4;
    acc_dev *d = NULL;
    unsigned char *arena = NULL;
    int64_t extra = 0;
    EXPECT(acc_device_cuda_emu.open(&desc, &d, &arena, &extra) == ACC_OK, "emulated device did not open");
    if (!arena) return;
    float *A = (float *)(void *)arena, *B = A + 256, *O = B + 256, *dO = O + 256, *dA = dO + 256, *dB = dA + 256;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int bb = 0; bb < 2; bb++) {
                float a[256], b[256], o[256], dout[256], da[256], db[256];
                fill(a, batch * M * K, 1u + (unsigned)(ta * 4 + tb * 2 + bb));
                fill(b, (bb ? batch : 1) * K * N, 77u);
                fill(dout, batch * M * N, 5u);
                memcpy(A, a, sizeof a), memcpy(B, b, sizeof b), memcpy(dO, dout, sizeof dout);
                k_matmul_fwd(o, a, b, batch, M, N, K, ta, tb, bb);
                g_matmul_fwd(d, O, A, B, batch, M, N, K, ta, tb, bb);
                EXPECT(max_diff(o, O, batch * M * N) < 1e-5, "fwd ta %d tb %d batched %d: %g", ta, tb, bb,
                       max_diff(o, O, batch * M * N));
                /* backward accumulates: start both from the same values */
                fill(da, batch * M * K, 9u), fill(db, (bb ? batch : 1) * K * N, 11u);
                memcpy(dA, da, sizeof da), memcpy(dB, db, sizeof db);
                k_matmul_bwd(da, db, dout, a, b, batch, M, N, K, ta, tb, bb);
                g_matmul_bwd(d, dA, dB, dO, A, B, batch, M, N, K, ta, tb, bb);
                EXPECT(max_diff(da, dA, batch * M * K) < 1e-5, "da ta %d tb %d batched %d: %g", ta, tb, bb,
                       max_diff(da, dA, batch * M * K));
                EXPECT(max_diff(db, dB, (bb ? batch : 1) * K * N) < 1e-5, "db ta %d tb %d batched %d: %g", ta, tb, bb,
                       max_diff(db, dB, (bb ? batch : 1) * K * N));
            }
    EXPECT(d->status == ACC_OK, "device error: %s", dev_error(d));
    acc_device_cuda_emu.close(d);
}

/* The worst |got - want| / (atol + rtol |want|) over n elements (> 1: out of
 * tolerance; NaN counts as out). */
static double worst_ratio(const float *want, const float *got, int64_t n, double rtol, double atol) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]) / (atol + rtol * fabs((double)want[i]));
        if (e != e) return e; /* NaN: out, whatever follows */
        if (e > m) m = e;
    }
    return m;
}

/* One attention shape through the launch layer and the emulator against the
 * CPU kernels: out and lse, a second forward bit-identical to the first, and
 * the gradients accumulated onto the same random values (dk left NULL when
 * no_dk, as a plan that needs only dv passes it). The device tensors are
 * 16-byte aligned when `aligned` (the kernels stage tiles by cp.async, which
 * the emulator leaves NaN until the wait) and at odd offsets otherwise (the
 * kernels load tiles synchronously). */
static double attention_worst;                              /* over every shape and tensor checked in FP32 */
static double attention_rtol = 1e-4, attention_atol = 1e-5; /* TF32: looser */

static void check_attention(acc_dev *d, float *dev, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                            int causal, int no_dk, int aligned) {
    int64_t nq = B * T * H * D, nk = B * S * KVH * D, nl = B * H * T;
    /* host: q k v dout out lse dq dk dv; device: the same, then out2 lse2 */
    int64_t sizes[11] = {nq, nk, nk, nq, nq, nl, nq, nk, nk, nq, nl}, total = 0;
    for (int i = 0; i < 11; i++) total += sizes[i] + 4;
    float *host = malloc((size_t)total * sizeof *host), *h[11], *g[11];
    if (!host) return;
    float *hp = host, *gp = dev + (aligned ? 0 : 1);
    for (int i = 0; i < 11; i++) {
        h[i] = hp, g[i] = gp;
        hp += sizes[i] + 4, gp += aligned ? (sizes[i] + 3) / 4 * 4 : sizes[i] + 1;
    }
    enum { Q, K, V, DO, O, L, DQ, DK, DV, O2, L2 };
    for (int i = Q; i <= DO; i++) fill(h[i], sizes[i], 3u + (unsigned)(i * 7 + D + T));
    for (int i = DQ; i <= DV; i++) fill(h[i], sizes[i], 40u + (unsigned)i);
    for (int i = Q; i <= DV; i++)
        if (i != O && i != L) memcpy(g[i], h[i], (size_t)sizes[i] * sizeof(float));
    k_attention_fwd(h[O], h[L], h[Q], h[K], h[V], B, T, S, H, KVH, D, causal);
    g_attention_fwd(d, g[O], g[L], g[Q], g[K], g[V], B, T, S, H, KVH, D, causal);
    g_attention_fwd(d, g[O2], g[L2], g[Q], g[K], g[V], B, T, S, H, KVH, D, causal);
    k_attention_bwd(h[DQ], no_dk ? NULL : h[DK], h[DV], h[DO], h[Q], h[K], h[V], h[O], h[L], B, T, S, H, KVH, D,
                    causal);
    g_attention_bwd(d, g[DQ], no_dk ? NULL : g[DK], g[DV], g[DO], g[Q], g[K], g[V], g[O], g[L], B, T, S, H, KVH, D,
                    causal);
    EXPECT(d->status == ACC_OK, "attention D %lld: device error: %s", (long long)D, dev_error(d));
    static const char *const names[] = {"q", "k", "v", "dout", "out", "lse", "dq", "dk", "dv"};
    for (int i = O; i <= DV; i++) {
        if (i == DO || (i == DK && no_dk)) continue;
        double r = worst_ratio(h[i], g[i], sizes[i], attention_rtol, attention_atol);
        if (attention_rtol == 1e-4) attention_worst = r > attention_worst || r != r ? r : attention_worst;
        EXPECT(r <= 1.0,
               "attention B %lld T %lld S %lld H %lld KVH %lld D %lld causal %d aligned %d: %s off by %.3g "
               "of the tolerance",
               (long long)B, (long long)T, (long long)S, (long long)H, (long long)KVH, (long long)D, causal, aligned,
               names[i], r);
    }
    EXPECT(!memcmp(g[O], g[O2], (size_t)nq * sizeof(float)) && !memcmp(g[L], g[L2], (size_t)nl * sizeof(float)),
           "attention D %lld causal %d: a recomputed forward differs from the first", (long long)D, causal);
    if (no_dk) /* untouched */
        EXPECT(!memcmp(g[DK], h[DK], (size_t)nk * sizeof(float)), "attention: dk written though NULL was passed");
    free(host);
}

/* An emulated device whose arena is `floats` floats followed by a workspace
 * (the reductions' scratch) of ws_bytes. */
static acc_dev *open_emu(int64_t floats, int64_t ws_bytes, int tf32, float **dev) {
    acc_model_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.workspace_offset = (floats * 4 + 255) / 256 * 256;
    desc.workspace_bytes = ws_bytes;
    desc.arena_bytes = desc.workspace_offset + ws_bytes;
    desc.tf32 = tf32;
    acc_dev *d = NULL;
    unsigned char *arena = NULL;
    int64_t extra = 0;
    EXPECT(acc_device_cuda_emu.open(&desc, &d, &arena, &extra) == ACC_OK, "emulated device did not open");
    *dev = (float *)(void *)arena;
    return d;
}

/* The backward's delta precomputed in the workspace (ck_attention_delta)
 * and computed inside the kernels (no workspace): the same gradients, bit
 * for bit. */
static void test_attention_delta(void) {
    const int64_t B = 2, T = 37, H = 4, KVH = 2;
    for (int wide = 0; wide < 2; wide++) {
        int64_t D = wide ? 160 : 64, nq = B * T * H * D, nk = B * T * KVH * D, nl = B * H * T;
        float *got[2] = {NULL, NULL};
        for (int ws = 0; ws < 2; ws++) {
            float *dev = NULL;
            acc_dev *d = open_emu(8 * nq + nl, ws ? 1 << 20 : 0, 0, &dev);
            if (!dev) return;
            float *q = dev, *k = q + nq, *v = k + nk, *dO = v + nk, *o = dO + nq, *l = o + nq, *dq = l + nl,
                  *dk = dq + nq, *dv = dk + nk;
            fill(q, nq, 1u), fill(k, nk, 2u), fill(v, nk, 3u), fill(dO, nq, 4u);
            memset(dq, 0, (size_t)(nq + 2 * nk) * sizeof *dq);
            g_attention_fwd(d, o, l, q, k, v, B, T, T, H, KVH, D, 1);
            g_attention_bwd(d, dq, dk, dv, dO, q, k, v, o, l, B, T, T, H, KVH, D, 1);
            EXPECT(d->status == ACC_OK, "attention delta: %s", dev_error(d));
            got[ws] = malloc((size_t)(nq + 2 * nk) * sizeof(float));
            if (got[ws]) memcpy(got[ws], dq, (size_t)(nq + 2 * nk) * sizeof(float));
            acc_device_cuda_emu.close(d);
        }
        EXPECT(got[0] && got[1] && !memcmp(got[0], got[1], (size_t)(nq + 2 * nk) * sizeof(float)),
               "attention D %lld: gradients with the delta precomputed differ from those computed in the kernels",
               (long long)D);
        free(got[0]), free(got[1]);
    }
}

static void test_attention(void) {
    static const struct {
        int64_t B, T, S, H, KVH, D;
        int causal, no_dk;
    } cases[] = {
        {2, 37, 37, 4, 2, 16, 1, 0},  {2, 37, 37, 4, 2, 16, 0, 0},  {2, 37, 37, 4, 2, 64, 1, 0},
        {2, 37, 37, 4, 2, 64, 0, 0},  {2, 37, 45, 4, 2, 64, 0, 0},  {2, 37, 37, 4, 4, 64, 1, 1},
        {2, 37, 37, 4, 2, 160, 1, 0}, {2, 37, 37, 4, 2, 160, 0, 0}, {1, 70, 70, 2, 1, 128, 1, 0},
        {1, 33, 33, 2, 2, 13, 1, 0},  {1, 5, 70, 4, 1, 96, 0, 0},
    };
    /* without a workspace (the backward computes delta in its kernels, the
     * register-tiled backward is not used), with one, and with one and TF32
     * (the tensor-core kernels where D allows: inputs rounded to TF32, so
     * rtol 3e-3, atol 1e-3 against the FP32 CPU kernels) */
    for (int run = 0; run < 3; run++) {
        float *dev = NULL;
        acc_dev *d = open_emu(1 << 20, run ? 1 << 20 : 0, run == 2, &dev);
        if (!dev) return;
        attention_rtol = run == 2 ? 3e-3 : 1e-4;
        attention_atol = run == 2 ? 1e-3 : 1e-5;
        for (int aligned = 0; aligned < 2; aligned++)
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                check_attention(d, dev, cases[i].B, cases[i].T, cases[i].S, cases[i].H, cases[i].KVH, cases[i].D,
                                cases[i].causal, cases[i].no_dk, aligned);
        acc_device_cuda_emu.close(d);
    }
    attention_rtol = 1e-4, attention_atol = 1e-5;
    printf("attention: %zu shapes, aligned and not, with and without a workspace and with TF32, worst FP32 element "
           "at %.3g of the tolerance (rtol 1e-4, atol 1e-5)\n",
           sizeof cases / sizeof cases[0], attention_worst);
}

/* worst_ratio, an infinity matching an infinity (a fully masked row's lse) */
static double worst_ratio_inf(const float *want, const float *got, int64_t n, double rtol, double atol) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isinf(want[i]) || isinf(got[i])) {
            if (want[i] != got[i]) return INFINITY;
            continue;
        }
        double r = worst_ratio(want + i, got + i, 1, rtol, atol);
        if (r != r) return r;
        m = fmax(m, r);
    }
    return m;
}

/* Attention with a mask and a bias (the one-warp-per-row kernels and
 * ck_attention_bwd_bias) against k_attention_masked_fwd/bwd: a key-padding
 * mask [B, S] that drops every key of batch 0 (zeros, lse +inf, no
 * gradient) and some of batch 1; masks over queries and keys [T, S]
 * (block-diagonal), [B, 1, T, S] and [B, H, T, S] whose query row 1 drops
 * every key; int32 and float masks, biases broadcast over batch, heads and
 * queries or none, causal and not, GQA, a head wider than the tiles, with
 * the backward's delta from the workspace and computed in the kernels. */
static void test_attention_masked(void) {
    static const struct {
        int64_t B, T, S, H, KVH, D;
        int causal, mask; /* 0 none, 1 int32, 2 float */
        int64_t bias[4];  /* dims over [B, H, T, S], 1: broadcast; 0: no bias */
        int over;         /* the mask: 0 [B, S], 1 [T, S], 2 [B, 1, T, S], 3 [B, H, T, S] */
    } cases[] = {
        {2, 9, 11, 4, 2, 16, 0, 1, {1, 4, 9, 11}, 0}, {2, 9, 9, 2, 2, 16, 1, 2, {2, 1, 1, 9}, 0},
        {2, 7, 7, 2, 1, 160, 1, 1, {0}, 0},           {2, 6, 10, 2, 2, 8, 0, 0, {2, 2, 6, 10}, 0},
        {1, 5, 5, 2, 2, 8, 1, 2, {1, 1, 5, 5}, 0},    {2, 6, 6, 2, 2, 16, 0, 1, {0}, 1},
        {2, 7, 7, 2, 1, 160, 1, 2, {1, 2, 7, 7}, 1},  {2, 6, 6, 4, 2, 16, 1, 1, {2, 1, 1, 6}, 2},
        {2, 5, 7, 2, 2, 8, 0, 2, {1, 1, 5, 7}, 3},
    };
    double worst = 0;
    for (int ws = 0; ws < 2; ws++) {
        float *dev = NULL;
        acc_dev *d = open_emu(1 << 20, ws ? 1 << 20 : 0, 0, &dev);
        if (!dev) return;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            int64_t B = cases[c].B, T = cases[c].T, S = cases[c].S, H = cases[c].H, KVH = cases[c].KVH, D = cases[c].D,
                    nq = B * T * H * D, nk = B * S * KVH * D, nl = B * H * T;
            const int64_t *bd = cases[c].bias, full[4] = {B, H, T, S};
            int64_t bs[4] = {0}, nb = bd[0] ? bd[0] * bd[1] * bd[2] * bd[3] : 0, stride = 1;
            for (int j = 3; j >= 0 && nb; j--) {
                bs[j] = bd[j] == 1 && full[j] > 1 ? 0 : stride;
                stride *= bd[j];
            }
            int over = cases[c].over;
            const int64_t md[4] = {over == 1 ? 1 : B, over == 3 ? H : 1, over ? T : 1, S};
            int64_t ms[4], nm = md[0] * md[1] * md[2] * md[3];
            stride = 1;
            for (int j = 3; j >= 0; j--) {
                ms[j] = md[j] == 1 ? 0 : stride;
                stride *= md[j];
            }
            enum { Q, K, V, DO, O, L, DQ, DK, DV, M, BI, DB, N_BUF };
            int64_t sizes[N_BUF] = {nq, nk, nk, nq, nq, nl, nq, nk, nk, nm, nb, nb}, total = 0;
            for (int i = 0; i < N_BUF; i++) total += sizes[i] + 4;
            float *host = malloc((size_t)total * sizeof *host), *h[N_BUF], *g[N_BUF];
            if (!host) return;
            float *hp = host, *gp = dev;
            for (int i = 0; i < N_BUF; i++) {
                h[i] = hp, g[i] = gp;
                hp += sizes[i] + 4, gp += (sizes[i] + 3) / 4 * 4;
            }
            for (int i = Q; i <= DO; i++) fill(h[i], sizes[i], 5u + (unsigned)(i * 11 + D + T));
            for (int i = DQ; i <= DV; i++) fill(h[i], sizes[i], 60u + (unsigned)i);
            fill(h[BI], nb, 77u), fill(h[DB], nb, 78u);
            for (int64_t j = 0; j < nm; j++) {
                int64_t s = j % S, t = j / S % md[2];
                int keep = !over       ? j >= S && j % 3 != 1
                           : over == 1 ? t != 1 && t * 3 / T == s * 3 / S
                                       : t != 1 && (j % 3 != 1 || s == t % S);
                if (cases[c].mask == 1) ((int32_t *)h[M])[j] = keep ? 2 : 0;
                else h[M][j] = keep ? 0.5f : 0.0f;
            }
            for (int i = Q; i <= DB; i++)
                if (i != O && i != L) memcpy(g[i], h[i], (size_t)sizes[i] * sizeof(float));
            const void *hm = cases[c].mask ? h[M] : NULL, *gm = cases[c].mask ? g[M] : NULL;
            int mi = cases[c].mask == 1, causal = cases[c].causal;
            const float *hb = nb ? h[BI] : NULL, *gb = nb ? g[BI] : NULL;
            k_attention_masked_fwd(h[O], h[L], h[Q], h[K], h[V], hm, mi, ms, hb, bs, B, T, S, H, KVH, D, causal);
            g_attention_masked_fwd(d, g[O], g[L], g[Q], g[K], g[V], gm, mi, ms, gb, bs, B, T, S, H, KVH, D, causal);
            k_attention_masked_bwd(h[DQ], h[DK], h[DV], nb ? h[DB] : NULL, h[DO], h[Q], h[K], h[V], h[O], h[L], hm, mi,
                                   ms, hb, bs, B, T, S, H, KVH, D, causal);
            g_attention_masked_bwd(d, g[DQ], g[DK], g[DV], nb ? g[DB] : NULL, g[DO], g[Q], g[K], g[V], g[O], g[L], gm,
                                   mi, ms, gb, bs, B, T, S, H, KVH, D, causal);
            EXPECT(d->status == ACC_OK, "masked attention: device error: %s", dev_error(d));
            static const char *const names[] = {"q", "k", "v", "dout", "out", "lse", "dq", "dk", "dv", "", "", "dbias"};
            for (int i = O; i <= DB; i++) {
                if (i == DO || i == M || i == BI) continue;
                double r = worst_ratio_inf(h[i], g[i], sizes[i], 1e-4, 1e-5);
                worst = r > worst || r != r ? r : worst;
                EXPECT(r <= 1.0, "masked attention case %zu workspace %d: %s off by %.3g of the tolerance", c, ws,
                       names[i], r);
            }
            if (cases[c].mask) /* batch 0 (key padding) or query row 1 attends to nothing */
                EXPECT(g[O][over ? H * D : 0] == 0.0f && isinf(g[L][over ? 1 : 0]),
                       "masked attention case %zu: a fully masked row is not zero", c);
            free(host);
        }
        acc_device_cuda_emu.close(d);
    }
    printf("masked attention: %zu shapes, with and without a workspace, worst element at %.3g of the tolerance "
           "(rtol 1e-4, atol 1e-5)\n",
           sizeof cases / sizeof cases[0], worst);
}

static void expect_close(const char *what, const float *want, const float *got, int64_t n, long long ws) {
    double r = worst_ratio(want, got, n, 1e-4, 1e-5);
    EXPECT(r <= 1.0, "%s (workspace %lld): off by %.3g of the tolerance", what, ws, r);
}

/* The binary ops of the op table (ACC_EW_BINARY_OPS): the backward of each
 * on the CPU (h*) and on the device (g*), given the operands if it reads
 * them. */
#define BIN_OPERANDS_0(a, b)
#define BIN_OPERANDS_1(a, b) a, b,
#define BIN_BWD(code, name, reads)                                                                                \
    static void bwd_##name(acc_dev *d, float *hda, float *hdb, const float *dout, const float *a, const float *b, \
                           float *gda, float *gdb, const float *gd, const float *ga, const float *gb, int ndim,   \
                           const int64_t *so, const int64_t *sa, const int64_t *sb) {                             \
        k_##name##_bwd(hda, hdb, dout, BIN_OPERANDS_##reads(a, b) ndim, so, sa, sb);                              \
        g_##name##_bwd(d, gda, gdb, gd, BIN_OPERANDS_##reads(ga, gb) ndim, so, sa, sb);                           \
    }
ACC_EW_BINARY_OPS(BIN_BWD)
#undef BIN_BWD
typedef struct {
    const char *name;
    void (*bwd)(acc_dev *, float *, float *, const float *, const float *, const float *, float *, float *,
                const float *, const float *, const float *, int, const int64_t *, const int64_t *, const int64_t *);
} BinOp;
static const BinOp bin_ops[] = {
#define BIN_OP(code, name, reads) {#name, bwd_##name},
    ACC_EW_BINARY_OPS(BIN_OP)
#undef BIN_OP
};
#define N_BIN_OPS (int)(sizeof bin_ops / sizeof *bin_ops)

/* Both operand gradients of the binary op bin_ops[op] (shapes padded to
 * ndim), emulated against the CPU kernel, from the same random values. */
static void check_binary(acc_dev *d, float *dev, int op, int ndim, const int64_t *so, const int64_t *sa,
                         const int64_t *sb, long long ws) {
    int64_t no = 1, na = 1, nb = 1;
    for (int k = 0; k < ndim; k++) no *= so[k], na *= sa[k], nb *= sb[k];
    float *h = malloc((size_t)(2 * (no + 2 * na + 2 * nb)) * sizeof *h);
    if (!h) return;
    float *dout = h, *a = dout + no, *b = a + na, *da = b + nb, *db = da + na;
    float *gd = dev, *ga = gd + no, *gb = ga + na, *gda = gb + nb, *gdb = gda + na, *hda = db + nb, *hdb = hda + na;
    fill(dout, no, 3u + (unsigned)op), fill(a, na, 5u), fill(b, nb, 7u), fill(da, na, 11u), fill(db, nb, 13u);
    for (int64_t i = 0; i < nb; i++) b[i] = b[i] > 0 ? b[i] + 0.5f : b[i] - 0.5f; /* a divisor away from 0 */
    memcpy(gd, dout, (size_t)(no + 2 * na + 2 * nb) * sizeof *h);
    memcpy(hda, da, (size_t)(na + nb) * sizeof *h);
    bin_ops[op].bwd(d, hda, hdb, dout, a, b, gda, gdb, gd, ga, gb, ndim, so, sa, sb);
    char what[96];
    snprintf(what, sizeof what, "%s_bwd da (b %lld elements)", bin_ops[op].name, (long long)nb);
    expect_close(what, hda, gda, na, ws);
    snprintf(what, sizeof what, "%s_bwd db (b %lld elements)", bin_ops[op].name, (long long)nb);
    expect_close(what, hdb, gdb, nb, ws);
    free(h);
}

static void test_reductions(void) {
    /* a scratch of 256 bytes (one chunk, 16 tokens a segment), and 32 MiB */
    static const long long ws_sizes[] = {KA_SCALARS_BYTES + 256, 32 << 20};
    for (int w = 0; w < 2; w++) {
        long long ws = ws_sizes[w];
        float *dev = NULL;
        acc_dev *d = open_emu(1 << 20, ws, 0, &dev);
        if (!dev) return;
        /* binary ops: a bias over rows, a bias over a 3-d tensor, a broadcast
         * over a middle axis (not a suffix), no broadcast at all */
        const int64_t o2[] = {300, 70}, b2[] = {1, 70}, o3[] = {3, 100, 70}, b3[] = {1, 1, 70}, m3[] = {3, 1, 70};
        for (int op = 0; op < N_BIN_OPS; op++) {
            check_binary(d, dev, op, 2, o2, o2, b2, ws);
            check_binary(d, dev, op, 3, o3, o3, b3, ws);
            check_binary(d, dev, op, 3, o3, m3, o3, ws);
            check_binary(d, dev, op, 2, o2, o2, o2, ws);
        }
        /* the norms' weight and bias gradients (and dx, which they share a call with) */
        const int64_t N = 1000, C = 200, n = N * C;
        float *h = malloc((size_t)(10 * n) * sizeof *h);
        if (!h) return;
        float *dy = h, *x = dy + n, *wt = x + n, *st = wt + C, *dx = st + 2 * N, *dw = dx + n, *db = dw + C;
        fill(dy, n, 21u), fill(x, n, 22u), fill(wt, C, 23u), fill(dx, n, 24u), fill(dw, C, 25u), fill(db, C, 26u);
        for (int rms = 0; rms < 2; rms++)
            for (int with_db = 0; with_db < 2 - rms; with_db++) {
                float *y = db + C, *hdx = y + n, *hdw = hdx + n, *hdb = hdw + C;
                float *g = dev, *gdy = g, *gx = g + n, *gw = gx + n, *gst = gw + C, *gdx = gst + 2 * N, *gdw = gdx + n,
                      *gdb = gdw + C, *gy = gdb + C;
                if (rms) k_rmsnorm_fwd(y, st, x, wt, N, C, 1e-5f);
                else k_layernorm_fwd(y, st, x, wt, wt, N, C, 1e-5f);
                memcpy(gdy, dy, (size_t)(2 * n + C + 2 * N + n + 2 * C) * sizeof *h);
                memcpy(hdx, dx, (size_t)(n + 2 * C) * sizeof *h);
                (void)gy;
                if (rms) {
                    k_rmsnorm_bwd(hdx, hdw, dy, x, wt, st, N, C);
                    g_rmsnorm_bwd(d, gdx, gdw, gdy, gx, gw, gst, N, C);
                } else {
                    k_layernorm_bwd(hdx, hdw, with_db ? hdb : NULL, dy, x, wt, st, N, C);
                    g_layernorm_bwd(d, gdx, gdw, with_db ? gdb : NULL, gdy, gx, gw, gst, N, C);
                }
                const char *nm = rms ? "rmsnorm" : "layernorm";
                char what[64];
                snprintf(what, sizeof what, "%s dx", nm), expect_close(what, hdx, gdx, n, ws);
                snprintf(what, sizeof what, "%s dw", nm), expect_close(what, hdw, gdw, C, ws);
                snprintf(what, sizeof what, "%s db", nm), expect_close(what, hdb, gdb, C, ws);
            }
        /* sum and mean over the middle axis of (3, 200, 40), and over the last */
        {
            float *out = h, *gout = dev + n;
            for (int mean = 0; mean < 2; mean++)
                for (int last = 0; last < 2; last++) {
                    int64_t outer = last ? 120 : 3, rn = last ? 200 : 200, inner = last ? 1 : 40;
                    fill(x, outer * rn * inner, 31u);
                    memcpy(dev, x, (size_t)(outer * rn * inner) * sizeof *h);
                    if (mean) {
                        k_mean_fwd(out, x, outer, rn, inner);
                        g_mean_fwd(d, gout, dev, outer, rn, inner);
                    } else {
                        k_sum_fwd(out, x, outer, rn, inner);
                        g_sum_fwd(d, gout, dev, outer, rn, inner);
                    }
                    char what[64];
                    snprintf(what, sizeof what, "%s over %s axis", mean ? "mean" : "sum",
                             last ? "the last" : "a middle");
                    expect_close(what, out, gout, outer * inner, ws);
                }
        }
        /* the embedding gradient: repeated ids in every order, bit for bit */
        {
            const int64_t T = 500, V = 37, E = 50;
            int32_t *idx = (int32_t *)(void *)(h + 6 * n), *gidx = (int32_t *)(void *)(dev + 3 * T * E + V * E);
            float *dout = h, *dt = h + T * E, *gdout = dev, *gdt = dev + T * E;
            for (int64_t i = 0; i < T; i++) idx[i] = (int32_t)((i * 7 + i / 13) % V);
            idx[3] = idx[4] = idx[5] = 0; /* a run, and the id 0 */
            fill(dout, T * E, 41u), fill(dt, V * E, 42u);
            memcpy(gdout, dout, (size_t)(T * E + V * E) * sizeof *h);
            memcpy(gidx, idx, (size_t)T * sizeof *idx);
            EXPECT(k_embedding_bwd(dt, dout, idx, T, V, E) == 0, "k_embedding_bwd refused valid ids");
            g_embedding_bwd(d, gdt, gdout, gidx, T, V, E);
            EXPECT(
                !memcmp(dt, gdt, (size_t)(V * E) * sizeof *h),
                "embedding_bwd (workspace %lld, %lld tokens a segment): not bit-identical to the CPU's (max diff %g)",
                ws, ws / 16, max_diff(dt, gdt, V * E));
        }
        EXPECT(d->status == ACC_OK, "device error: %s", dev_error(d));
        free(h);
        acc_device_cuda_emu.close(d);
    }
}

/* Softmax and cross-entropy (one pass of online max and sum per row) against
 * the CPU kernels, over rows wider and narrower than a block, one of them
 * with -inf entries (softmax). */
static void test_softmax_xent(void) {
    enum { N = 5 };
    const int64_t C = 1000, V = 3001;
    float *dev = NULL;
    acc_dev *d = open_emu(4 * N * V + 4 * N, 1 << 20, 0, &dev);
    if (!dev) return;
    float *h = malloc((size_t)(4 * N * V + 4 * N) * sizeof *h);
    if (!h) return;
    for (int64_t width = 3; width <= C; width += C - 3) {
        float *x = h, *y = x + N * width, *dy = y + N * width, *dx = dy + N * width;
        fill(x, N * width, 51u), fill(dy, N * width, 52u), fill(dx, N * width, 53u);
        x[1] = x[width + 2] = -INFINITY;
        memcpy(dev, h, (size_t)(4 * N * width) * sizeof *h);
        float *gx = dev, *gy = gx + N * width, *gdy = gy + N * width, *gdx = gdy + N * width;
        k_softmax_fwd(y, x, N, width);
        g_softmax_fwd(d, gy, gx, N, width);
        expect_close("softmax_fwd", y, gy, N * width, 1 << 20);
        k_softmax_bwd(dx, dy, y, N, width);
        g_softmax_bwd(d, gdx, gdy, gy, N, width);
        expect_close("softmax_bwd", dx, gdx, N * width, 1 << 20);
    }
    float *logits = h, *lse = logits + N * V, *loss = lse + N, *dloss = loss + 1, *dl = dloss + 1;
    int32_t tg[N] = {0, 7, 3000, 1500, 42};
    fill(logits, N * V, 61u), fill(dl, N * V, 62u);
    for (int64_t i = 0; i < N * V; i++) logits[i] *= 8.0f;
    *dloss = 1.0f;
    memcpy(dev, h, (size_t)(N * V + N + 2 + N * V) * sizeof *h);
    int32_t *gtg = (int32_t *)(void *)(dev + 2 * N * V + N + 2);
    memcpy(gtg, tg, sizeof tg);
    float *glogits = dev, *glse = glogits + N * V, *gloss = glse + N, *gdloss = gloss + 1, *gdl = gdloss + 1;
    EXPECT(k_cross_entropy_fwd(loss, lse, logits, tg, N, V) == 0, "k_cross_entropy_fwd refused its targets");
    g_cross_entropy_fwd(d, gloss, glse, glogits, gtg, N, V);
    expect_close("cross_entropy lse", lse, glse, N, 1 << 20);
    expect_close("cross_entropy loss", loss, gloss, 1, 1 << 20);
    EXPECT(k_cross_entropy_bwd(dl, dloss, logits, lse, tg, N, V) == 0, "k_cross_entropy_bwd refused its targets");
    g_cross_entropy_bwd(d, gdl, gdloss, glogits, glse, gtg, N, V);
    expect_close("cross_entropy dlogits", dl, gdl, N * V, 1 << 20);
    EXPECT(d->status == ACC_OK, "device error: %s", dev_error(d));
    free(h);
    acc_device_cuda_emu.close(d);
}

/* The launch layer's linear (a GEMM with cuBLASLt's bias and bias-gradient
 * epilogues, emulated) against the CPU's k_linear_fwd/bwd, and bit for bit
 * against the emulated matmul and bias add where the math is the same (the
 * output, dx, dw); the bias gradient, summed by the epilogue in order of the
 * rows, within tolerance of the column reduction's. Three ways: the
 * epilogues (a workspace for the bias gradient), no workspace (the forward
 * keeps its epilogue, the backward falls back), and no epilogue at all
 * (ACC_EMU_NO_EPILOGUE=1: the plain GEMM and the bias kernels). */
static void test_linear(void) {
    static const int64_t shapes[][3] = {{1, 5, 3}, {37, 20, 11}, {130, 70, 50}};
    for (int way = 0; way < 3; way++)
        for (int t = 0; t < 6; t++) {
            int tb = t & 1;
            int64_t M = shapes[t / 2][0], N = shapes[t / 2][1], K = shapes[t / 2][2];
            int64_t nx = M * K, nw = K * N, no = M * N;
            long long ws = way == 1 ? 0 : 1 << 20;
            if (way == 2) setenv("ACC_EMU_NO_EPILOGUE", "1", 1);
            float *dev;
            acc_dev *d = open_emu(3 * nx + 3 * nw + 3 * N + 4 * no, ws, 0, &dev);
            if (way == 2) unsetenv("ACC_EMU_NO_EPILOGUE");
            if (!d) return;
            float *X = dev, *W = X + nx, *B = W + nw, *O = B + N, *dO = O + no, *dX = dO + no, *dW = dX + nx;
            float *dB = dW + nw, *O2 = dB + N, *dX2 = O2 + no, *dW2 = dX2 + nx, *dB2 = dW2 + nw, *dMM = dB2 + N;
            float *h = malloc((size_t)(3 * nx + 3 * nw + 3 * N + 2 * no) * sizeof *h);
            float *x = h, *w = x + nx, *b = w + nw, *o = b + N, *dout = o + no, *dx = dout + no, *dw = dx + nx;
            float *db = dw + nw, *dx0 = db + N, *dw0 = dx0 + nx, *db0 = dw0 + nw;
            fill(x, nx, 3u + (unsigned)t), fill(w, nw, 17u), fill(b, N, 29u), fill(dout, no, 31u);
            fill(dx0, nx, 41u), fill(dw0, nw, 43u), fill(db0, N, 47u);
            memcpy(X, x, (size_t)nx * 4), memcpy(W, w, (size_t)nw * 4), memcpy(B, b, (size_t)N * 4);
            memcpy(dO, dout, (size_t)no * 4);
            memcpy(dX, dx0, (size_t)nx * 4), memcpy(dW, dw0, (size_t)nw * 4), memcpy(dB, db0, (size_t)N * 4);
            memcpy(dX2, dx0, (size_t)nx * 4), memcpy(dW2, dw0, (size_t)nw * 4), memcpy(dB2, db0, (size_t)N * 4);
            memset(dMM, 0, (size_t)no * 4);
            memcpy(dx, dx0, (size_t)nx * 4), memcpy(dw, dw0, (size_t)nw * 4), memcpy(db, db0, (size_t)N * 4);
            char what[96];
            snprintf(what, sizeof what, "linear %lldx%lldx%lld tb %d way %d", (long long)M, (long long)N, (long long)K,
                     tb, way);
            k_linear_fwd(o, x, w, b, M, N, K, tb);
            g_linear_fwd(d, O, X, W, B, M, N, K, tb);
            expect_close(what, o, O, no, ws);
            const int64_t so[] = {M, N}, sb[] = {1, N};
            g_matmul_fwd(d, O2, X, W, 1, M, N, K, 0, tb, 0);
            g_add_fwd(d, O2, O2, B, 2, so, so, sb);
            EXPECT(!memcmp(O, O2, (size_t)no * 4), "%s: forward not bit-identical to matmul + bias add", what);
            k_linear_bwd(dx, dw, db, dout, x, w, M, N, K, tb);
            g_linear_bwd(d, dX, dW, dB, dO, X, W, M, N, K, tb);
            expect_close(what, dx, dX, nx, ws);
            expect_close(what, dw, dW, nw, ws);
            expect_close(what, db, dB, N, ws);
            g_add_bwd(d, dMM, dB2, dO, 2, so, so, sb);
            g_matmul_bwd(d, dX2, dW2, dMM, X, W, 1, M, N, K, 0, tb, 0);
            EXPECT(!memcmp(dX, dX2, (size_t)nx * 4) && !memcmp(dW, dW2, (size_t)nw * 4),
                   "%s: dx, dw not bit-identical to matmul + bias add", what);
            expect_close(what, dB2, dB, N, ws);
            if (way == 2) EXPECT(!memcmp(dB, dB2, (size_t)N * 4), "%s: the fallback's db is not the bias add's", what);
            EXPECT(d->status == ACC_OK, "%s: device error: %s", what, dev_error(d));
            free(h);
            acc_device_cuda_emu.close(d);
        }
}

int main(void) {
    test_executor();
    test_matmul();
    test_linear();
    test_attention();
    test_attention_masked();
    test_reductions();
    test_attention_delta();
    test_softmax_xent();
    TEST_DONE();
}
