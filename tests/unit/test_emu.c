/* test_emu.c - the device emulator and the launch layer, without a model.
 *
 * - kernels written against emu.h: a block reversal through shared memory
 *   (wrong without the barrier), a warp sum by shuffles (every lane must see
 *   the total), a grid-stride fill; a barrier one thread skips and a
 *   synchronizing call in a kernel launched as plain must be reported;
 * - the launch layer's matmul (cuBLAS conventions, run by the emulator's
 *   reference GEMM) against the CPU kernel k_matmul_fwd/bwd for every
 *   combination of transposes and batching.
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

int main(void) {
    test_executor();
    test_matmul();
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}
