/* test_emu.c - the device emulator and the launch layer, without a model.
 *
 * - kernels written against emu.h: a block reversal through shared memory
 *   (wrong without the barrier), a warp sum by shuffles (every lane must see
 *   the total), a grid-stride fill; a barrier one thread skips and a
 *   synchronizing call in a kernel launched as plain must be reported;
 * - the launch layer's matmul (cuBLAS conventions, run by the emulator's
 *   reference GEMM) against the CPU kernel k_matmul_fwd/bwd for every
 *   combination of transposes and batching;
 * - __syncwarp: a warp exchange through shared memory, and lanes meeting at
 *   a shuffle and a __syncwarp reported;
 * - the launch layer's attention (the tiled kernels, and the one-warp-per-row
 *   kernels for heads wider than the tiles) against k_attention_fwd/bwd:
 *   causal and not, GQA, head sizes on both sides of the tile's, lengths
 *   that are not a multiple of any tile, a recomputed forward bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cuda_ops.h"
#include "device.h"
#include "emu_exec.h"

static int failures, checks;

#define EXPECT(cond, ...)                      \
    do {                                       \
        checks++;                              \
        if (!(cond)) {                         \
            failures++;                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);               \
            printf("\n");                      \
        }                                      \
    } while (0)

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
    if (threadIdx.x & 1)
        __syncwarp();
    else
        a.p[0][threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
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
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - (double)b[i]));
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
        if (!(e <= m)) m = e;
    }
    return m;
}

/* One attention shape through the launch layer and the emulator against the
 * CPU kernels: out and lse, a second forward bit-identical to the first, and
 * the gradients accumulated onto the same random values (dk left NULL when
 * no_dk, as a plan that needs only dv passes it). */
static double attention_worst; /* over every shape and tensor checked */

static void check_attention(acc_dev *d, float *dev, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH,
                            int64_t D, int causal, int no_dk) {
    int64_t nq = B * T * H * D, nk = B * S * KVH * D, nl = B * H * T;
    /* host: q k v dout out lse dq dk dv; device: the same at odd offsets (no
     * alignment beyond a float's), then out2 lse2 */
    int64_t sizes[11] = {nq, nk, nk, nq, nq, nl, nq, nk, nk, nq, nl}, total = 0;
    for (int i = 0; i < 11; i++) total += sizes[i] + 1;
    float *host = malloc((size_t)total * sizeof *host), *h[11], *g[11];
    if (!host) return;
    float *hp = host, *gp = dev + 1;
    for (int i = 0; i < 11; i++) {
        h[i] = hp, g[i] = gp;
        hp += sizes[i] + 1, gp += sizes[i] + 1;
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
        double r = worst_ratio(h[i], g[i], sizes[i], 1e-4, 1e-5);
        attention_worst = r > attention_worst || r != r ? r : attention_worst;
        EXPECT(r <= 1.0, "attention B %lld T %lld S %lld H %lld KVH %lld D %lld causal %d: %s off by %.3g of the "
               "tolerance", (long long)B, (long long)T, (long long)S, (long long)H, (long long)KVH, (long long)D,
               causal, names[i], r);
    }
    EXPECT(!memcmp(g[O], g[O2], (size_t)nq * sizeof(float)) && !memcmp(g[L], g[L2], (size_t)nl * sizeof(float)),
           "attention D %lld causal %d: a recomputed forward differs from the first", (long long)D, causal);
    if (no_dk) /* untouched */
        EXPECT(!memcmp(g[DK], h[DK], (size_t)nk * sizeof(float)), "attention: dk written though NULL was passed");
    free(host);
}

static void test_attention(void) {
    static const struct {
        int64_t B, T, S, H, KVH, D;
        int causal, no_dk;
    } cases[] = {
        {2, 37, 37, 4, 2, 16, 1, 0},  {2, 37, 37, 4, 2, 16, 0, 0},   {2, 37, 37, 4, 2, 64, 1, 0},
        {2, 37, 37, 4, 2, 64, 0, 0},  {2, 37, 45, 4, 2, 64, 0, 0},   {2, 37, 37, 4, 4, 64, 1, 1},
        {2, 37, 37, 4, 2, 160, 1, 0}, {2, 37, 37, 4, 2, 160, 0, 0},  {1, 70, 70, 2, 1, 128, 1, 0},
        {1, 33, 33, 2, 2, 13, 1, 0},  {1, 5, 70, 4, 1, 96, 0, 0},
    };
    acc_model_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.arena_bytes = 4 << 20;
    acc_dev *d = NULL;
    unsigned char *arena = NULL;
    int64_t extra = 0;
    EXPECT(acc_device_cuda_emu.open(&desc, &d, &arena, &extra) == ACC_OK, "emulated device did not open");
    if (!arena) return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_attention(d, (float *)(void *)arena, cases[i].B, cases[i].T, cases[i].S, cases[i].H, cases[i].KVH,
                        cases[i].D, cases[i].causal, cases[i].no_dk);
    printf("attention: %zu shapes, worst element at %.3g of the tolerance (rtol 1e-4, atol 1e-5)\n",
           sizeof cases / sizeof cases[0], attention_worst);
    acc_device_cuda_emu.close(d);
}

int main(void) {
    test_executor();
    test_matmul();
    test_attention();
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}
