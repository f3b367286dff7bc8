/* cpu_kernels.h - the CPU kernels of libaccrt, called by generated host schedules.
 *
 * Conventions (the invariants every kernel keeps):
 *  - Tensors are float32 or bf16 (indices int32), contiguous, row-major. Each
 *    kernel exists for both (k_NAME, k_NAME_bf16; cpu_kernels_t.h): bf16
 *    elements are widened on load, computed in float and rounded to nearest
 *    even on every store (bf16.h). Shapes
 *    are passed as int64_t; the compiler's shape rules have already checked
 *    them, so kernels do not re-validate shapes.
 *  - Forward kernels OVERWRITE their outputs.
 *  - Backward kernels ACCUMULATE (+=) into every gradient buffer, so the
 *    schedule can sum the contributions of several users of a tensor. Zero a
 *    gradient buffer (k_zero) before its first contribution. Where a backward
 *    has several gradient outputs, any of them may be NULL when that gradient
 *    is not needed; it is then skipped.
 *  - Each backward's parameter list names exactly the forward tensors it
 *    reads (the planner must keep those alive or recompute them); the comment
 *    above it repeats the list as "reads: ...".
 *  - Kernels never allocate and never exit. Kernels that can meet bad data
 *    (an index out of range) return int: 0 ok, nonzero = bad index, and then
 *    write nothing.
 *  - Results are deterministic and do not depend on the number of OpenMP
 *    threads (no atomics, no racing accumulation; sums run in a fixed order).
 *    Matmul is the exception: its summation order is OpenBLAS's.
 *  - Outputs and gradients must not alias inputs, except where stated:
 *    elementwise forwards (binary, unary, dropout) may write over an input of
 *    the output's shape, as may softmax and rope.
 *  - The forward copies (k_copy, reshape, transpose, slice, concat) move
 *    4-byte elements without arithmetic, so int32 tensors may go through
 *    them with a pointer cast.
 */
#ifndef ACC_CPU_KERNELS_H
#define ACC_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "bf16.h"
#include "ew_ops.h"

#define K_MAX_DIMS 6

/* The kernels over an element type: fp32 (k_NAME) and bf16 (k_NAME_bf16). */
#define KDT float
#define KDN(name) name
#include "cpu_kernels_t.h"
#undef KDT
#undef KDN
#define KDT acc_bf16
#define KDN(name) name##_bf16
#include "cpu_kernels_t.h"
#undef KDT
#undef KDN

/* ---- optimiser ---------------------------------------------------------- */

/* One AdamW step (t >= 1) over n elements, in one fused loop:
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr * ((m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) + wd * p). */
void k_adamw(float *p, const float *g, float *m, float *v, int64_t n, float lr, float beta1, float beta2, float eps,
             float weight_decay, int64_t t);
/* k_adamw over bf16 moments (--optimizer-state bf16): m and v widened, the
 * step in float from the unrounded new m and v, which are stored rounded to
 * nearest even. */
void k_adamw_bf16(float *p, const float *g, acc_bf16 *m, acc_bf16 *v, int64_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int64_t t);

#endif
