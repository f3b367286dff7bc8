/* device.h - the device layer's inside: what ops.c (the launch layer shared
 * by the GPU and the emulator) needs from a backend, and the sticky error
 * every backend keeps.
 *
 * Invariant: after the first failure on an instance, every launch is skipped
 * and the failure (with the file and line of the call) is what acc_step
 * reports; nothing is retried.
 */
#ifndef ACC_CUDA_DEVICE_H
#define ACC_CUDA_DEVICE_H

#include <stddef.h>

#include "abi.h"
#include "accrt.h"

typedef struct {
    /* launch kernel k on a 1-D grid of 1-D blocks */
    int (*launch)(acc_dev *d, acc_kernel_id k, unsigned grid, unsigned block, const acc_kargs *a);
    /* cublasSgemmStridedBatched's contract exactly: column-major, op(A) m x k,
     * op(B) k x n, C = alpha op(A) op(B) + beta C, with alpha 1 (beta 0: C is
     * not read). bf16: A, B and C hold bf16 (cublasGemmStridedBatchedEx with
     * CUDA_R_16BF, fp32 accumulation and fp32 alpha/beta): C = round(op(A)
     * op(B) + beta C), one rounding; otherwise they hold floats. */
    int (*gemm)(acc_dev *d, int bf16, int trans_a, int trans_b, long long m, long long n, long long k, const void *A,
                long long lda, long long stride_a, const void *B, long long ldb, long long stride_b, float beta,
                void *C, long long ldc, long long stride_c, long long batch);
    /* cublasLtMatmul's contract with one epilogue, for one column-major
     * matrix, alpha 1: D (m x n) = op(A) op(B) + beta D (beta 0: D is not
     * read), op(A) m x k, op(B) k x n, then
     *   DEV_EPI_BIAS:   D[i, j] += bias[i]                (bias: m elements, read)
     *   DEV_EPI_BGRADA: bias[i] = sum over p of op(A)[i, p] (m floats, written)
     *   DEV_EPI_BGRADB: bias[j] = sum over p of op(B)[p, j] (n floats, written)
     *   DEV_EPI_NONE:   nothing more                      (bias: NULL)
     * with at most ws_bytes of workspace at ws. bf16: A, B and D hold bf16,
     * the sum is fp32 and D is rounded once, after the bias; the BIAS
     * epilogue's bias is bf16, the bias gradients stay floats. Returns
     * ACC_OK; DEV_NO_ALGO when the library has no algorithm for this
     * epilogue, type and shape (nothing is written and no failure recorded:
     * the caller does the same math another way); or the recorded failure. */
    int (*gemm_ep)(acc_dev *d, int bf16, int epilogue, int trans_a, int trans_b, long long m, long long n, long long k,
                   const void *A, long long lda, const void *B, long long ldb, float beta, void *D, long long ldd,
                   void *bias, void *ws, long long ws_bytes);
} DevOps;

/* The epilogues of DevOps.gemm_ep (cuBLASLt's CUBLASLT_EPILOGUE_DEFAULT,
 * _BIAS, _BGRADA, _BGRADB). */
enum { DEV_EPI_NONE, DEV_EPI_BIAS, DEV_EPI_BGRADA, DEV_EPI_BGRADB };
#define DEV_NO_ALGO (-1)

/* The head of every backend's instance. */
struct acc_dev {
    const DevOps *ops;
    int status; /* the first failure (ACC_OK while none) */
    char err[512];
    /* The planned workspace: its first KA_SCALARS_BYTES hold the run's
     * acc_scalars (NULL without a workspace); the rest is cuBLAS's during a
     * GEMM and the partial sums of two-stage reductions between GEMMs (one
     * stream orders the two). */
    unsigned char *scalars, *scratch;
    long long scratch_bytes;
    int tf32; /* --tf32: attention on tensor cores too (the GEMMs: the backend's math mode) */
    /* the least elements of C a chunk of a GEMM whose one misaligned
     * operand is staged through the scratch must have (ops.c's
     * rm_gemm_staged); 0: 2^22 */
    long long stage_out;
    long long staged; /* the chunks run staged so far (tests, profiles) */
};

/* The kernels' view of acc_scalars is the runtime's. */
_Static_assert(sizeof(acc_kscalars) == sizeof(acc_scalars) && _Alignof(acc_kscalars) == _Alignof(acc_scalars) &&
                   offsetof(acc_kscalars, step) == offsetof(acc_scalars, step) &&
                   offsetof(acc_kscalars, lr) == offsetof(acc_scalars, lr) &&
                   offsetof(acc_kscalars, bc2) == offsetof(acc_scalars, bc2),
               "acc_kscalars (abi.h) and acc_scalars (accrt.h) differ");

/* Point d's scalars and scratch into the workspace at ws (ws_bytes). */
void dev_set_workspace(acc_dev *d, unsigned char *ws, long long ws_bytes);

/* Record the first failure with where it happened; returns status. */
int dev_fail(acc_dev *d, int status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
const char *dev_error(const acc_dev *d);

/* The launches and GEMM of ops.c, through d->ops, skipped after a failure. */
void dev_launch(acc_dev *d, acc_kernel_id k, long long work, unsigned block, const acc_kargs *a);
/* acc_device's adamw: m and v of state_dtype (ACC_DT_F32 or ACC_DT_BF16). */
int dev_adamw(acc_dev *d, float *p, const float *g, void *m, void *v, int64_t n, int state_dtype);
/* Gradient clipping (acc_device's sum_squares and scale): the launches; the
 * running total is a double at dev_sum_squares_total (device memory, read by
 * the backend's download after the launches). */
int dev_sum_squares(acc_dev *d, const float *x, int64_t n, int first);
const unsigned char *dev_sum_squares_total(const acc_dev *d);
int dev_scale(acc_dev *d, float *x, int64_t n, float factor);
/* acc_device's accumulate: dst = src, or dst += src (add), n floats, as
 * launches (recorded in a run like the step's kernels). */
int dev_accumulate(acc_dev *d, float *dst, const float *src, int64_t n, int add);

#endif
