/* calibrate.c - `acc calibrate`: measure this CPU for the cost model and
 * write a hardware profile (the format of hw/<name>.hw). GEMM rates from the runtime's
 * k_matmul_fwd and k_matmul_fwd_bf16 (--precision bf16's GEMM), vector rate from k_gelu_fwd on cache-resident data, memory
 * bandwidth from k_add_fwd over buffers far larger than the caches, launch
 * latency from one-element kernels, the copies of offloaded activations
 * (host_bw, host_latency) from memcpy of such a buffer and of 64 bytes (on the
 * CPU target the host arena is more of the same memory). Medians of repeated
 * runs.
 */
#include "calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "ir.h"


static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*Bench)(float *a, float *b, float *c, int64_t n);

static void run_matmul(float *a, float *b, float *c, int64_t n) { k_matmul_fwd(c, a, b, 1, n, n, n, 0, 0, 0); }
/* the same buffers hold n x n bf16 values (half their bytes), from the fill below */
static void run_matmul_bf16(float *a, float *b, float *c, int64_t n) {
    k_matmul_fwd_bf16((acc_bf16 *)c, (const acc_bf16 *)a, (const acc_bf16 *)b, 1, n, n, n, 0, 0, 0);
}
static void run_gelu(float *a, float *b, float *c, int64_t n) { k_gelu_fwd(c, a, n); }
static void run_copy(float *a, float *b, float *c, int64_t n) {
    (void)b;
    memcpy(c, a, (size_t)n * sizeof(float));
}
static void run_add(float *a, float *b, float *c, int64_t n) {
    int64_t shape[1] = {n};
    k_add_fwd(c, a, b, 1, shape, shape, shape);
}

/* median seconds of reps runs */
static double time_it(Bench f, float *a, float *b, float *c, int64_t n, int reps) {
    double t[32];
    f(a, b, c, n); /* warm up */
    for (int r = 0; r < reps; r++) {
        double t0 = acc_now_s();
        f(a, b, c, n);
        t[r] = acc_now_s() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_d);
    return t[reps / 2];
}

int calibrate(const char *name, FILE *out) {
    const int64_t gemm = 1024, vec = 1 << 14, stream = (int64_t)1 << 24;
    size_t bytes = (size_t)(stream > gemm * gemm ? stream : gemm * gemm) * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        fprintf(stderr, "acc: error: calibrate: cannot allocate %zu bytes\n", 3 * bytes);
        return 1;
    }
    for (size_t i = 0; i < bytes / sizeof(float); i++) a[i] = b[i] = c[i] = (float)(i % 17) * 0.01f;
    double t_gemm = time_it(run_matmul, a, b, c, gemm, 7);
    for (size_t i = 0; i < bytes / sizeof(acc_bf16); i++) /* finite bf16 values (the float bits' halves need not be) */
        ((acc_bf16 *)a)[i] = ((acc_bf16 *)b)[i] = acc_f32_bf16((float)(i % 17) * 0.01f);
    double t_gemm16 = time_it(run_matmul_bf16, a, b, c, gemm, 7);
    double t_vec = time_it(run_gelu, a, b, c, vec, 31);
    double t_stream = time_it(run_add, a, b, c, stream, 7);
    double t_launch = time_it(run_add, a, b, c, 1, 31);
    double t_copy = time_it(run_copy, a, b, c, stream, 7), t_copy_small = time_it(run_copy, a, b, c, 16, 31);
    free(a), free(b), free(c);
    double matmul = 2.0 * (double)gemm * gemm * gemm / t_gemm, matmul16 = 2.0 * (double)gemm * gemm * gemm / t_gemm16;
    double vector = 16.0 * (double)vec / t_vec; /* the cost rule counts 16 FLOPs per GELU */
    double bw = 3.0 * 4.0 * (double)stream / t_stream;
    fprintf(out, "# measured by acc calibrate: GEMM %lldx%lldx%lld, GELU over %lld floats, add over %lld floats\n",
            (long long)gemm, (long long)gemm, (long long)gemm, (long long)vec, (long long)stream);
    fprintf(out,
            "name = %s\nmatmul_flops = %.4g\nmatmul_flops_bf16 = %.4g\nvector_flops = %.4g\nmem_bw = %.4g\n"
            "launch_latency = %.4g\nhost_bw = %.4g\nhost_latency = %.4g\n",
            name, matmul, matmul16, vector, bw, t_launch, 4.0 * (double)stream / t_copy,
            t_copy_small > 0 ? t_copy_small : 1e-9);
    return 0;
}
