/* kernels_internal.h - private helpers shared by the cpu_kernels*.c files.
 *
 * Invariant: nothing here is part of the runtime's API; only the kernel .c
 * files include it. The vector helpers take restrict pointers, so their
 * arguments must not overlap.
 */
#ifndef ACC_KERNELS_INTERNAL_H
#define ACC_KERNELS_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "bf16.h"

/* The hot loops carry `omp simd` so they vectorize at -O2 too. Under the
 * sanitizers clang cannot vectorize them and says so with -Wpass-failed;
 * the code is still correct, so that notice is not an error here. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

/* Below this many elements of work a kernel runs on one thread: forking the
 * OpenMP team costs more than it saves. */
#define K_PAR_MIN 32768

/* Columns per task where a kernel sums over rows (dw, db, dtable): a task
 * owns a block of columns and walks the rows in order, so the sums are
 * race-free and independent of the thread count. */
#define K_COL_BLOCK 64

/* The bf16 GEMM on AVX512-BF16 (cpu_bgemm.c). k_bgemm_native: the CPU has
 * the instruction and ACC_BF16_GEMM is not "sgemm". k_bgemm_block: tile
 * (float, row stride ldt) = (first ? 0 : tile) + op(A) @ op(B) for one block
 * of at most K_BGEMM_MT x K_BGEMM_NT x K_BGEMM_KB, A and B pointing at the
 * block's first element of op(A) and op(B) as stored (ta, tb: transposed);
 * the tile has room for K_BGEMM_MT x K_BGEMM_NT. Stack: 128 KiB. */
#define K_BGEMM_MT 128
#define K_BGEMM_NT 128
#define K_BGEMM_KB 256
int k_bgemm_native(void);
void k_bgemm_block(float *tile, int64_t ldt, int ta, int tb, int64_t mb, int64_t nb, int64_t kb, const acc_bf16 *A,
                   int64_t lda, const acc_bf16 *B, int64_t ldb, int first);

#define K_MIN(a, b) ((a) < (b) ? (a) : (b))
#define K_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Elements per task of the flat elementwise kernels. */
#define K_CHUNK 8192

/* K_CLONES on a function without OpenMP pragmas of its own (a row or chunk
 * helper that a parallel loop calls) compiles it for AVX-512, AVX2 and the
 * baseline ISA, picked once per process from the CPU (GCC/clang
 * target_clones, x86-64 ELF only). Within one process every thread runs the
 * same clone, so results still do not depend on the thread count. The
 * clones must not carry `omp parallel` themselves: an outlined parallel body
 * would not be cloned. Off with -DACC_NO_CLONES. */
#if defined(__x86_64__) && defined(__ELF__) && !defined(ACC_NO_CLONES) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define K_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef K_CLONES
#define K_CLONES
#endif

/* Vectorizable exp, tanh (plain arithmetic and bit moves, no libm call, so
 * `omp simd` loops over them vectorize; the runtime is compiled with
 * -fno-trapping-math so that their selects if-convert). */
static inline float k_bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t k_f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* exp(x), relative error below 2 ulp (Cephes' expf polynomial on
 * |r| <= ln2/2, x = n ln2 + r); exp(x < -87.33) = 0 (no subnormal results),
 * exp(x > 88.72) = +inf, NaN stays NaN. */
static inline float k_expf(float x) {
    float xc = x < -87.33654f ? -87.33654f : (x > 88.72283f ? 88.72283f : x);
    float t = xc * 1.44269504088896341f + 12582912.0f; /* + 1.5 * 2^23: rounds n */
    float n = t - 12582912.0f;
    uint32_t e = (k_f_bits(t) - 0x4B400000u) << 23; /* n in the exponent field */
    float r = xc - n * 0.693359375f;                /* ln2 in two parts */
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    float y = k_bits_f(k_f_bits(p) + e);
    y = x < -87.33654f ? 0.0f : y;
    y = x > 88.72283f ? HUGE_VALF : y;
    return x != x ? x : y;
}

/* tanh(x) = 1 - 2 / (1 + exp(2x)); |x| > 9 gives +-1 (as in float). Absolute
 * error ~1e-7 (relative to tiny results it is larger: use it where the result
 * is added to O(1) terms, as in GELU). */
static inline float k_tanhf(float x) {
    float xc = x < -9.0f ? -9.0f : (x > 9.0f ? 9.0f : x);
    return 1.0f - 2.0f / (1.0f + k_expf(2.0f * xc));
}

/* sum of x[i]*y[i] */
static inline float k_dot(const float *restrict x, const float *restrict y, int64_t n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

/* y += a*x */
static inline void k_axpy(float *restrict y, float a, const float *restrict x, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* x *= a */
static inline void k_scal(float *x, float a, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) x[i] *= a;
}

/* Contiguous row-major strides of shape (ndim dims) into str. */
static inline void k_strides(int ndim, const int64_t *shape, int64_t *str) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        str[d] = s;
        s *= shape[d];
    }
}

static inline int64_t k_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

#endif
