/* kernels_internal.h - private helpers shared by the cpu_kernels*.c files.
 *
 * Invariant: nothing here is part of the runtime's API; only the kernel .c
 * files include it. The vector helpers take restrict pointers, so their
 * arguments must not overlap.
 */
#ifndef ACC_KERNELS_INTERNAL_H
#define ACC_KERNELS_INTERNAL_H

#include <stdint.h>

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

#define K_MIN(a, b) ((a) < (b) ? (a) : (b))
#define K_MAX(a, b) ((a) > (b) ? (a) : (b))

/* sum of x[i]*y[i] */
static inline float k_dot(const float *restrict x, const float *restrict y, int64_t n)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

/* y += a*x */
static inline void k_axpy(float *restrict y, float a, const float *restrict x, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* x *= a */
static inline void k_scal(float *x, float a, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        x[i] *= a;
}

/* Contiguous row-major strides of shape (ndim dims) into str. */
static inline void k_strides(int ndim, const int64_t *shape, int64_t *str)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        str[d] = s;
        s *= shape[d];
    }
}

static inline int64_t k_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

#endif
