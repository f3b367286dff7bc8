/* cuda_ops.h - the device layer's kernel entry points, called by the host
 * schedule that acc generates for the cuda and cuda-emu targets.
 *
 * g_NAME has the contract of the CPU kernel k_NAME (runtime/cpu_kernels.h:
 * forward kernels overwrite, backward kernels accumulate, NULL gradients are
 * skipped), with the instance's device first. Pointers are device addresses
 * in the arena. Launches are asynchronous: a failure is recorded on the
 * device and reported by acc_step; the int-returning entries return 0 (their
 * index inputs were range-checked when they were set).
 */
#ifndef ACC_CUDA_OPS_H
#define ACC_CUDA_OPS_H

#include <stdint.h>

#include "accrt.h"
#include "bf16.h"
#include "ew_ops.h"

void g_zero(acc_dev *d, float *x, int64_t n);
void g_ew_chain(acc_dev *d, float *out, const float *x, const k_ew_op *ops, int n_ops, int64_t n, uint64_t seed,
                uint32_t step);
void g_fill(acc_dev *d, float *x, float value, int64_t n); /* the loss seed */
void g_matmul_fwd(acc_dev *d, float *out, const float *a, const float *b, int64_t batch, int64_t M, int64_t N,
                  int64_t K, int trans_a, int trans_b, int b_batched);
void g_matmul_bwd(acc_dev *d, float *da, float *db, const float *dout, const float *a, const float *b, int64_t batch,
                  int64_t M, int64_t N, int64_t K, int trans_a, int trans_b, int b_batched);
void g_linear_fwd(acc_dev *d, float *out, const float *x, const float *w, const float *b, int64_t M, int64_t N,
                  int64_t K, int trans_b);
void g_linear_bwd(acc_dev *d, float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                  int64_t M, int64_t N, int64_t K, int trans_b);
/* The bf16 instances of the GEMMs (cpu_kernels_t.h): bf16 operands and
 * gradients, fp32 sums, one rounding per stored element (see ops.c). */
void g_matmul_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *a, const acc_bf16 *b, int64_t batch, int64_t M,
                       int64_t N, int64_t K, int trans_a, int trans_b, int b_batched);
void g_matmul_bwd_bf16(acc_dev *d, acc_bf16 *da, acc_bf16 *db, const acc_bf16 *dout, const acc_bf16 *a,
                       const acc_bf16 *b, int64_t batch, int64_t M, int64_t N, int64_t K, int trans_a, int trans_b,
                       int b_batched);
void g_linear_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, const acc_bf16 *w, const acc_bf16 *b, int64_t M,
                       int64_t N, int64_t K, int trans_b);
void g_linear_bwd_bf16(acc_dev *d, acc_bf16 *dx, acc_bf16 *dw, acc_bf16 *db, const acc_bf16 *dout, const acc_bf16 *x,
                       const acc_bf16 *w, int64_t M, int64_t N, int64_t K, int trans_b);
/* the binary elementwise ops of the op table (acc_ops.h), as k_<op>_* */
#define G_BINARY_DECL(code, name, reads)                                                                               \
    void g_##name##_fwd(acc_dev *d, float *out, const float *a, const float *b, int ndim, const int64_t *out_shape,    \
                        const int64_t *a_shape, const int64_t *b_shape);                                               \
    void g_##name##_bwd(acc_dev *d, float *da, float *db, const float *dout,                                           \
                        ACC_EW_BWD_OPERANDS_##reads(float) int ndim, const int64_t *out_shape, const int64_t *a_shape, \
                        const int64_t *b_shape);
ACC_EW_BINARY_OPS(G_BINARY_DECL)
#undef G_BINARY_DECL
/* The casts of the precision pass (cpu_kernels_t.h's k_cast_* and
 * k_uncast_* of the bf16 instance): out = round(x), dx += widen(dout);
 * out = widen(x), dx = round(dx + dout). */
void g_cast_fwd_bf16(acc_dev *d, acc_bf16 *out, const float *x, int64_t n);
void g_cast_bwd_bf16(acc_dev *d, float *dx, const acc_bf16 *dout, int64_t n);
void g_uncast_fwd_bf16(acc_dev *d, float *out, const acc_bf16 *x, int64_t n);
void g_uncast_bwd_bf16(acc_dev *d, acc_bf16 *dx, const float *dout, int64_t n);
/* the comparisons of int32 operands, exact (cpu_kernels_t.h's
 * k_cmp_i32_fwd, k_cmp_scalar_i32_fwd): out 0 or 1 */
void g_cmp_i32_fwd(acc_dev *d, int op, float *out, const int32_t *a, const int32_t *b, int ndim, const int64_t *so,
                   const int64_t *sa, const int64_t *sb);
void g_cmp_i32_fwd_bf16(acc_dev *d, int op, acc_bf16 *out, const int32_t *a, const int32_t *b, int ndim,
                        const int64_t *so, const int64_t *sa, const int64_t *sb);
void g_cmp_scalar_i32_fwd(acc_dev *d, int op, float *out, const int32_t *x, float value, int64_t n);
void g_cmp_scalar_i32_fwd_bf16(acc_dev *d, int op, acc_bf16 *out, const int32_t *x, float value, int64_t n);
/* float(x) of an i32 x (f32 out in both instances; the backward does
 * nothing: an i32 input gets no gradient) */
void g_float_fwd(acc_dev *d, float *out, const int32_t *x, int64_t n);
void g_float_bwd(acc_dev *d, int32_t *dx, const float *dout, int64_t n);
void g_float_fwd_bf16(acc_dev *d, float *out, const int32_t *x, int64_t n);
void g_float_bwd_bf16(acc_dev *d, int32_t *dx, const float *dout, int64_t n);
/* their f32 instance: copies, as the CPU's */
void g_cast_fwd(acc_dev *d, float *out, const float *x, int64_t n);
void g_cast_bwd(acc_dev *d, float *dx, const float *dout, int64_t n);
/* where (cpu_kernels_t.h's k_where_*): cond int32 or float, broadcasting */
void g_where_fwd(acc_dev *d, float *out, const void *cond, const float *a, const float *b, int cond_i32, int ndim,
                 const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb);
void g_where_bwd(acc_dev *d, float *da, float *db, const float *dout, const void *cond, int cond_i32, int ndim,
                 const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb);
void g_where_fwd_bf16(acc_dev *d, acc_bf16 *out, const void *cond, const acc_bf16 *a, const acc_bf16 *b, int cond_i32,
                      int ndim, const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb);
void g_where_bwd_bf16(acc_dev *d, acc_bf16 *da, acc_bf16 *db, const acc_bf16 *dout, const void *cond, int cond_i32,
                      int ndim, const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb);
void g_scale_fwd(acc_dev *d, float *out, const float *x, float alpha, int64_t n);
void g_scale_bwd(acc_dev *d, float *dx, const float *dout, float alpha, int64_t n);
void g_shift_fwd(acc_dev *d, float *out, const float *x, float beta, int64_t n);
void g_shift_bwd(acc_dev *d, float *dx, const float *dout, int64_t n);
/* the plain unary elementwise ops of the op table (acc_ops.h) */
#define G_UNARY_DECL(code, name, saved)                                     \
    void g_##name##_fwd(acc_dev *d, float *out, const float *x, int64_t n); \
    void g_##name##_bwd(acc_dev *d, float *dx, const float *dout, const float *saved, int64_t n);
ACC_EW_UNARY_OPS(G_UNARY_DECL)
#undef G_UNARY_DECL
/* the comparisons with a number (acc_ops.h): out = x OP value, 0 or 1; no
 * gradient (the backward does nothing) */
#define G_CMP_SCALAR_DECL(code, name, binary)                                                       \
    void g_##name##_fwd(acc_dev *d, float *out, const float *x, float value, int64_t n);            \
    void g_##name##_bwd(acc_dev *d, float *dx, const float *dout, int64_t n);                       \
    void g_##name##_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, float value, int64_t n); \
    void g_##name##_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t n);
ACC_EW_CMP_SCALAR_OPS(G_CMP_SCALAR_DECL)
#undef G_CMP_SCALAR_DECL
void g_layernorm_fwd(acc_dev *d, float *y, float *stats, const float *x, const float *w, const float *b, int64_t N,
                     int64_t C, float eps);
void g_layernorm_bwd(acc_dev *d, float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                     const float *stats, int64_t N, int64_t C);
void g_rmsnorm_fwd(acc_dev *d, float *y, float *stats, const float *x, const float *w, int64_t N, int64_t C, float eps);
void g_rmsnorm_bwd(acc_dev *d, float *dx, float *dw, const float *dy, const float *x, const float *w,
                   const float *stats, int64_t N, int64_t C);
void g_softmax_fwd(acc_dev *d, float *y, const float *x, int64_t N, int64_t C);
void g_softmax_bwd(acc_dev *d, float *dx, const float *dy, const float *y, int64_t N, int64_t C);
void g_attention_fwd(acc_dev *d, float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                     int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);
void g_attention_bwd(acc_dev *d, float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                     const float *v, const float *out, const float *lse, int64_t B, int64_t T, int64_t S, int64_t H,
                     int64_t KVH, int64_t D, int causal);
/* bf16 q, k, v, out and their gradients; lse float (the kernels' flag) */
void g_attention_fwd_bf16(acc_dev *d, acc_bf16 *out, float *lse, const acc_bf16 *q, const acc_bf16 *k,
                          const acc_bf16 *v, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                          int causal);
void g_attention_bwd_bf16(acc_dev *d, acc_bf16 *dq, acc_bf16 *dk, acc_bf16 *dv, const acc_bf16 *dout, const acc_bf16 *q,
                          const acc_bf16 *k, const acc_bf16 *v, const acc_bf16 *out, const float *lse, int64_t B,
                          int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);
/* with a key mask and/or a bias (cpu_kernels_t.h, k_attention_masked_fwd) */
void g_attention_masked_fwd(acc_dev *d, float *out, float *lse, const float *q, const float *k, const float *v,
                            const void *mask, int mask_i32, const int64_t *ms, const float *bias, const int64_t *bs,
                            int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);
void g_attention_masked_bwd(acc_dev *d, float *dq, float *dk, float *dv, float *dbias, const float *dout,
                            const float *q, const float *k, const float *v, const float *out, const float *lse,
                            const void *mask, int mask_i32, const int64_t *ms, const float *bias, const int64_t *bs,
                            int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);
void g_attention_masked_fwd_bf16(acc_dev *d, acc_bf16 *out, float *lse, const acc_bf16 *q, const acc_bf16 *k,
                                 const acc_bf16 *v, const void *mask, int mask_i32, const int64_t *ms,
                                 const float *bias, const int64_t *bs, int64_t B, int64_t T, int64_t S, int64_t H,
                                 int64_t KVH, int64_t D, int causal);
void g_attention_masked_bwd_bf16(acc_dev *d, acc_bf16 *dq, acc_bf16 *dk, acc_bf16 *dv, float *dbias,
                                 const acc_bf16 *dout, const acc_bf16 *q, const acc_bf16 *k, const acc_bf16 *v,
                                 const acc_bf16 *out, const float *lse, const void *mask, int mask_i32,
                                 const int64_t *ms, const float *bias, const int64_t *bs, int64_t B, int64_t T,
                                 int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);
void g_rope_fwd(acc_dev *d, float *out, const float *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta);
void g_rope_bwd(acc_dev *d, float *dx, const float *dout, int64_t B, int64_t T, int64_t H, int64_t D, float theta);
int g_embedding_fwd(acc_dev *d, float *out, const int32_t *idx, const float *table, int64_t N, int64_t V, int64_t C);
int g_embedding_bwd(acc_dev *d, float *dtable, const float *dout, const int32_t *idx, int64_t N, int64_t V, int64_t C);
int g_cross_entropy_fwd(acc_dev *d, float *loss, float *lse, const float *logits, const int32_t *targets, int64_t N,
                        int64_t V);
int g_cross_entropy_bwd(acc_dev *d, float *dlogits, const float *dloss, const float *logits, const float *lse,
                        const int32_t *targets, int64_t N, int64_t V);
void g_dropout_fwd(acc_dev *d, float *out, const float *x, int64_t n, float p, uint64_t seed, uint32_t step,
                   uint32_t op_id);
void g_dropout_bwd(acc_dev *d, float *dx, const float *dout, int64_t n, float p, uint64_t seed, uint32_t step,
                   uint32_t op_id);
void g_reshape_fwd(acc_dev *d, float *out, const float *x, int64_t n);
void g_reshape_bwd(acc_dev *d, float *dx, const float *dout, int64_t n);
void g_transpose_fwd(acc_dev *d, float *out, const float *x, int ndim, const int64_t *x_shape, int dim0, int dim1);
void g_transpose_bwd(acc_dev *d, float *dx, const float *dout, int ndim, const int64_t *x_shape, int dim0, int dim1);
void g_slice_fwd(acc_dev *d, float *out, const float *x, int ndim, const int64_t *x_shape, int axis, int64_t start,
                 int64_t len);
void g_slice_bwd(acc_dev *d, float *dx, const float *dout, int ndim, const int64_t *x_shape, int axis, int64_t start,
                 int64_t len);
void g_concat_fwd(acc_dev *d, float *out, const float *const *xs, int n, int ndim, const int64_t *out_shape, int axis,
                  const int64_t *sizes);
void g_concat_bwd(acc_dev *d, float *const *dxs, const float *dout, int n, int ndim, const int64_t *out_shape, int axis,
                  const int64_t *sizes);
/* max and min over the middle axis (cpu_kernels_t.h's k_max_*): the first
 * arg; the backward reads x */
#define G_ARGREDUCE_DECL(name)                                                                                       \
    void g_##name##_fwd(acc_dev *d, float *out, const float *x, int64_t outer, int64_t n, int64_t inner);            \
    void g_##name##_bwd(acc_dev *d, float *dx, const float *dout, const float *x, int64_t outer, int64_t n,          \
                        int64_t inner);                                                                              \
    void g_##name##_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t outer, int64_t n, int64_t inner); \
    void g_##name##_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, const acc_bf16 *x, int64_t outer,       \
                             int64_t n, int64_t inner);
G_ARGREDUCE_DECL(max)
G_ARGREDUCE_DECL(min)
#undef G_ARGREDUCE_DECL
void g_sum_fwd(acc_dev *d, float *out, const float *x, int64_t outer, int64_t n, int64_t inner);
void g_sum_bwd(acc_dev *d, float *dx, const float *dout, int64_t outer, int64_t n, int64_t inner);
void g_mean_fwd(acc_dev *d, float *out, const float *x, int64_t outer, int64_t n, int64_t inner);
void g_mean_bwd(acc_dev *d, float *dx, const float *dout, int64_t outer, int64_t n, int64_t inner);


/* ---- the bf16 instance (cpu_kernels_t.h's k_*_bf16): the element-type
 * tensors (activations and their gradients) are acc_bf16, rounded to nearest
 * even on every store; norm weights, statistics, the embedding table, the
 * loss and the reductions' outputs stay float, as on the CPU. The GEMMs'
 * and attention's are declared with theirs. ---- */
void g_zero_bf16(acc_dev *d, acc_bf16 *x, int64_t n);
void g_fill_bf16(acc_dev *d, acc_bf16 *x, float value, int64_t n);
void g_ew_chain_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, const k_ew_op *ops, int n_ops, int64_t n,
                     uint64_t seed, uint32_t step);
#define G_BINARY_DECL_BF16(code, name, reads)                                                           \
    void g_##name##_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *a, const acc_bf16 *b, int ndim, \
                             const int64_t *out_shape, const int64_t *a_shape, const int64_t *b_shape); \
    void g_##name##_bwd_bf16(acc_dev *d, acc_bf16 *da, acc_bf16 *db, const acc_bf16 *dout,              \
                             ACC_EW_BWD_OPERANDS_##reads(acc_bf16) int ndim, const int64_t *out_shape,  \
                             const int64_t *a_shape, const int64_t *b_shape);
ACC_EW_BINARY_OPS(G_BINARY_DECL_BF16)
#undef G_BINARY_DECL_BF16
void g_scale_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, float alpha, int64_t n);
void g_scale_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, float alpha, int64_t n);
void g_shift_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, float beta, int64_t n);
void g_shift_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t n);
#define G_UNARY_DECL_BF16(code, name, saved)                                           \
    void g_##name##_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t n); \
    void g_##name##_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, const acc_bf16 *saved, int64_t n);
ACC_EW_UNARY_OPS(G_UNARY_DECL_BF16)
#undef G_UNARY_DECL_BF16
void g_dropout_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t n, float p, uint64_t seed, uint32_t step,
                        uint32_t op_id);
void g_dropout_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t n, float p, uint64_t seed,
                        uint32_t step, uint32_t op_id);
void g_layernorm_fwd_bf16(acc_dev *d, acc_bf16 *y, float *stats, const acc_bf16 *x, const float *w, const float *b,
                          int64_t N, int64_t C, float eps);
void g_layernorm_bwd_bf16(acc_dev *d, acc_bf16 *dx, float *dw, float *db, const acc_bf16 *dy, const acc_bf16 *x,
                          const float *w, const float *stats, int64_t N, int64_t C);
void g_rmsnorm_fwd_bf16(acc_dev *d, acc_bf16 *y, float *stats, const acc_bf16 *x, const float *w, int64_t N, int64_t C,
                        float eps);
void g_rmsnorm_bwd_bf16(acc_dev *d, acc_bf16 *dx, float *dw, const acc_bf16 *dy, const acc_bf16 *x, const float *w,
                        const float *stats, int64_t N, int64_t C);
void g_softmax_fwd_bf16(acc_dev *d, acc_bf16 *y, const acc_bf16 *x, int64_t N, int64_t C);
void g_softmax_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dy, const acc_bf16 *y, int64_t N, int64_t C);
void g_rope_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t B, int64_t T, int64_t H, int64_t D,
                     float theta);
void g_rope_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t B, int64_t T, int64_t H, int64_t D,
                     float theta);
int g_embedding_fwd_bf16(acc_dev *d, acc_bf16 *out, const int32_t *idx, const float *table, int64_t N, int64_t V,
                         int64_t C);
int g_embedding_bwd_bf16(acc_dev *d, float *dtable, const acc_bf16 *dout, const int32_t *idx, int64_t N, int64_t V,
                         int64_t C);
int g_cross_entropy_fwd_bf16(acc_dev *d, float *loss, float *lse, const acc_bf16 *logits, const int32_t *targets,
                             int64_t N, int64_t V);
int g_cross_entropy_bwd_bf16(acc_dev *d, acc_bf16 *dlogits, const float *dloss, const acc_bf16 *logits,
                             const float *lse, const int32_t *targets, int64_t N, int64_t V);
void g_reshape_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t n);
void g_reshape_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t n);
void g_transpose_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int ndim, const int64_t *x_shape, int dim0,
                          int dim1);
void g_transpose_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int ndim, const int64_t *x_shape, int dim0,
                          int dim1);
void g_slice_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int ndim, const int64_t *x_shape, int axis,
                      int64_t start, int64_t len);
void g_slice_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int ndim, const int64_t *x_shape, int axis,
                      int64_t start, int64_t len);
void g_concat_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *const *xs, int n, int ndim, const int64_t *out_shape,
                       int axis, const int64_t *sizes);
void g_concat_bwd_bf16(acc_dev *d, acc_bf16 *const *dxs, const acc_bf16 *dout, int n, int ndim,
                       const int64_t *out_shape, int axis, const int64_t *sizes);
void g_sum_fwd_bf16(acc_dev *d, float *out, const acc_bf16 *x, int64_t outer, int64_t n, int64_t inner);
void g_sum_bwd_bf16(acc_dev *d, acc_bf16 *dx, const float *dout, int64_t outer, int64_t n, int64_t inner);
void g_mean_fwd_bf16(acc_dev *d, float *out, const acc_bf16 *x, int64_t outer, int64_t n, int64_t inner);
void g_mean_bwd_bf16(acc_dev *d, acc_bf16 *dx, const float *dout, int64_t outer, int64_t n, int64_t inner);

#endif
