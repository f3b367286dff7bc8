/* cpu_kernels.h - the CPU kernels of libaccrt, called by generated host schedules.
 *
 * Conventions (the invariants every kernel keeps):
 *  - All tensors are float32 (indices int32), contiguous, row-major. Shapes
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

#include "ew_ops.h"

#define K_MAX_DIMS 6

/* ---- helpers ------------------------------------------------------------ */

void k_zero(float *x, int64_t n);                     /* x = 0 */
void k_fill(float *x, float value, int64_t n);        /* x = value (the loss seed) */
void k_add_into(float *y, const float *x, int64_t n); /* y += x */
void k_copy(float *y, const float *x, int64_t n);     /* y = x */

/* ---- matmul ------------------------------------------------------------- */

/* out (batch, M, N) = op(a) @ op(b).
 * a: (batch, M, K), or (batch, K, M) if trans_a.
 * b: (K, N), or (N, K) if trans_b; shared by every batch item if !b_batched,
 *    else one per batch item: (batch, K, N) / (batch, N, K). */
void k_matmul_fwd(float *out, const float *a, const float *b, int64_t batch, int64_t M, int64_t N, int64_t K,
                  int trans_a, int trans_b, int b_batched);
/* da += dout @ op(b)^T (transposed back if trans_a); db += op(a)^T @ dout
 * (summed over the batch when b is shared). reads: a, b. */
void k_matmul_bwd(float *da, float *db, const float *dout, const float *a, const float *b, int64_t batch, int64_t M,
                  int64_t N, int64_t K, int trans_a, int trans_b, int b_batched);

/* out (M, N) = x (M, K) @ op(w) + b, w (K, N), or (N, K) if trans_b; b (N)
 * added to every row. Bit for bit k_matmul_fwd followed by k_add_fwd of the
 * bias: the fused op changes the schedule's memory, not the CPU's numbers. */
void k_linear_fwd(float *out, const float *x, const float *w, const float *b, int64_t M, int64_t N, int64_t K,
                  int trans_b);
/* dx += dout @ op(w)^T; dw += x^T @ dout (stored as w is); db += the column
 * sums of dout (rows in order, as k_add_bwd sums a bias). reads: x, w. */
void k_linear_bwd(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w, int64_t M,
                  int64_t N, int64_t K, int trans_b);

/* ---- elementwise binary with numpy broadcasting ------------------------- */

/* The binary elementwise ops of the op table (ACC_EW_BINARY_OPS in
 * acc_ops.h: add, sub, mul, div; their math is EW_<OP> in ew_ops.h).
 * k_<op>_fwd: out = a OP b. ndim (0..K_MAX_DIMS) is the rank of out; a_shape
 * and b_shape are the inputs' shapes left-padded with 1s to that rank; a dim
 * of size 1 broadcasts. Fast paths: same shapes, one operand broadcast over
 * leading dims (bias add), scalar operand; any other pattern is handled
 * generally. k_<op>_bwd: da, db += the gradients, reduced over the dims
 * each operand broadcasts in (da += reduce(dout/b), db += reduce(-dout*a/b^2)
 * for div); it takes and reads a and b only if the op's backward reads them
 * (mul, div). */
#define K_BINARY_DECL(code, name, reads)                                                                \
    void k_##name##_fwd(float *out, const float *a, const float *b, int ndim, const int64_t *out_shape, \
                        const int64_t *a_shape, const int64_t *b_shape);                                \
    void k_##name##_bwd(float *da, float *db, const float *dout, ACC_EW_BWD_OPERANDS_##reads int ndim,  \
                        const int64_t *out_shape, const int64_t *a_shape, const int64_t *b_shape);
ACC_EW_BINARY_OPS(K_BINARY_DECL)
#undef K_BINARY_DECL

/* ---- elementwise unary (n elements) ------------------------------------- */

void k_scale_fwd(float *out, const float *x, float alpha, int64_t n);
/* dx += alpha*dout. reads: nothing. */
void k_scale_bwd(float *dx, const float *dout, float alpha, int64_t n);
/* The plain unary elementwise ops of the op table (ACC_EW_UNARY_OPS in
 * acc_ops.h: gelu, relu, ...; their math is ew_<op> in cpu_kernels.c).
 * k_<op>_fwd: out = f(x); k_<op>_bwd: dx += dout * f'(x), reading x or out
 * as the op's row says. */
#define K_UNARY_DECL(code, name, saved)                         \
    void k_##name##_fwd(float *out, const float *x, int64_t n); \
    void k_##name##_bwd(float *dx, const float *dout, const float *saved, int64_t n);
ACC_EW_UNARY_OPS(K_UNARY_DECL)
#undef K_UNARY_DECL

/* ---- normalisation and softmax ------------------------------------------ */

/* y (N, C) = (x - mean) * rstd * w + b over each row; stats (N, 2) = (mean, rstd). */
void k_layernorm_fwd(float *y, float *stats, const float *x, const float *w, const float *b, int64_t N, int64_t C,
                     float eps);
/* dx, dw, db += ... reads: x, w, stats (not y, not b). */
void k_layernorm_bwd(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                     const float *stats, int64_t N, int64_t C);
/* y (N, C) = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps); stats (N) = rstd. */
void k_rmsnorm_fwd(float *y, float *stats, const float *x, const float *w, int64_t N, int64_t C, float eps);
/* dx, dw += ... reads: x, w, stats. */
void k_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *stats, int64_t N,
                   int64_t C);
/* y (N, C) = softmax over the last axis of x. y may alias x. */
void k_softmax_fwd(float *y, const float *x, int64_t N, int64_t C);
/* dx += y * (dy - rowsum(dy*y)). reads: y (the forward output). */
void k_softmax_bwd(float *dx, const float *dy, const float *y, int64_t N, int64_t C);

/* ---- attention ---------------------------------------------------------- */

/* Scaled dot-product attention, flash style (online softmax over key blocks;
 * no (T, S) score matrix is ever stored; no workspace).
 * q, out (B, T, H*D); k, v (B, S, KVH*D); lse (B, H, T) = logsumexp of the
 * scaled scores of each query row. Scale 1/sqrt(D). Query head h reads kv head
 * h / (H/KVH) (KVH must divide H; KVH <= 0 means KVH = H). causal: query t
 * sees keys s <= t (needs T == S). */
void k_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B, int64_t T,
                     int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);
/* dq, dk, dv += ...; recomputes the probabilities block by block from lse.
 * reads: q, k, v, out, lse. */
void k_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k, const float *v,
                     const float *out, const float *lse, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH,
                     int64_t D, int causal);

/* ---- rotary position embedding ------------------------------------------ */

/* Rotate-half RoPE (HuggingFace Llama) on x, out (B, T, H*D), position = t:
 * freq_i = theta^(-2i/D), out[i] = x[i]cos - x[i+D/2]sin,
 * out[i+D/2] = x[i+D/2]cos + x[i]sin. out may alias x. */
void k_rope_fwd(float *out, const float *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta);
/* dx += inverse rotation of dout. reads: nothing. */
void k_rope_bwd(float *dx, const float *dout, int64_t B, int64_t T, int64_t H, int64_t D, float theta);

/* ---- embedding and loss ------------------------------------------------- */

/* out (N, C) = table[idx[n]], table (V, C). Returns nonzero (and writes
 * nothing) if some idx is outside [0, V). */
int k_embedding_fwd(float *out, const int32_t *idx, const float *table, int64_t N, int64_t V, int64_t C);
/* dtable[idx[n]] += dout[n]; deterministic. reads: idx. Nonzero on a bad idx. */
int k_embedding_bwd(float *dtable, const float *dout, const int32_t *idx, int64_t N, int64_t V, int64_t C);
/* *loss = mean over n of (lse[n] - logits[n, targets[n]]), lse (N) the
 * logsumexp of each row of logits (N, V). Nonzero on a target outside [0, V). */
int k_cross_entropy_fwd(float *loss, float *lse, const float *logits, const int32_t *targets, int64_t N, int64_t V);
/* dlogits += dloss[0] * (softmax(logits) - onehot(targets)) / N.
 * reads: logits, lse, targets. Nonzero on a bad target. */
int k_cross_entropy_bwd(float *dlogits, const float *dloss, const float *logits, const float *lse,
                        const int32_t *targets, int64_t N, int64_t V);

/* ---- dropout ------------------------------------------------------------ */

/* out[i] = x[i] / (1-p) if philox_uniform(seed, step, op_id, i) >= p else 0
 * (keep probability 1-p; p >= 1 drops everything). No mask is stored. */
void k_dropout_fwd(float *out, const float *x, int64_t n, float p, uint64_t seed, uint32_t step, uint32_t op_id);
/* dx += the same mask (rebuilt from the keys) applied to dout. reads: nothing. */
void k_dropout_bwd(float *dx, const float *dout, int64_t n, float p, uint64_t seed, uint32_t step, uint32_t op_id);

/* ---- elementwise chains --------------------------------------------------- */

/* out[i] = ops[n_ops-1](...ops[0](x[i])) for i < n: the fused forward of
 * consecutive elementwise steps, equal bit for bit to running each op's own
 * kernel (the same per-element arithmetic; dropout draws the same Philox
 * numbers from seed and step). out may be x; operands must not overlap out
 * unless full-sized and at the same place. */
void k_ew_chain(float *out, const float *x, const k_ew_op *ops, int n_ops, int64_t n, uint64_t seed, uint32_t step);

/* ---- data movement ------------------------------------------------------ */

/* reshape: a copy of n elements; bwd dx += dout. */
void k_reshape_fwd(float *out, const float *x, int64_t n);
void k_reshape_bwd(float *dx, const float *dout, int64_t n);
/* out = x with dims dim0 and dim1 swapped; x_shape is x's shape (ndim <= 6),
 * negative dims count from the end. bwd: dx += the swap of dout. */
void k_transpose_fwd(float *out, const float *x, int ndim, const int64_t *x_shape, int dim0, int dim1);
void k_transpose_bwd(float *dx, const float *dout, int ndim, const int64_t *x_shape, int dim0, int dim1);
/* out = x[..., start:start+len, ...] along axis; bwd: dx[that slice] += dout. */
void k_slice_fwd(float *out, const float *x, int ndim, const int64_t *x_shape, int axis, int64_t start, int64_t len);
void k_slice_bwd(float *dx, const float *dout, int ndim, const int64_t *x_shape, int axis, int64_t start, int64_t len);
/* out = concat of the n inputs xs along axis; out_shape is out's shape and
 * sizes[i] the extent of input i along axis. bwd: dxs[i] += its part of dout
 * (NULL entries skipped). */
void k_concat_fwd(float *out, const float *const *xs, int n, int ndim, const int64_t *out_shape, int axis,
                  const int64_t *sizes);
void k_concat_bwd(float *const *dxs, const float *dout, int n, int ndim, const int64_t *out_shape, int axis,
                  const int64_t *sizes);

/* ---- reductions --------------------------------------------------------- */

/* View x as (outer, n, inner) and reduce the middle axis: out (outer, inner).
 * A reduction over all elements is outer = inner = 1. keepdim does not change
 * the memory layout. bwd: dx += dout broadcast back (mean: divided by n). */
void k_sum_fwd(float *out, const float *x, int64_t outer, int64_t n, int64_t inner);
void k_sum_bwd(float *dx, const float *dout, int64_t outer, int64_t n, int64_t inner);
void k_mean_fwd(float *out, const float *x, int64_t outer, int64_t n, int64_t inner);
void k_mean_bwd(float *dx, const float *dout, int64_t outer, int64_t n, int64_t inner);

/* ---- optimiser ---------------------------------------------------------- */

/* One AdamW step (t >= 1) over n elements, in one fused loop:
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr * ((m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) + wd * p). */
void k_adamw(float *p, const float *g, float *m, float *v, int64_t n, float lr, float beta1, float beta2, float eps,
             float weight_decay, int64_t t);

#endif
