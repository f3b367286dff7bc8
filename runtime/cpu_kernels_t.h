/* cpu_kernels_t.h - the declarations of the CPU kernels over an element type.
 *
 * Included twice by cpu_kernels.h (no include guard): with KDT float and
 * KDN(name) name (the fp32 kernels), then with KDT acc_bf16 and KDN(name)
 * name##_bf16 (the bf16 kernels; their bodies are the same source compiled
 * with ACC_KT_BF16, ktype.h). Arguments typed float are float in both
 * instances: norm weights and their gradients, statistics (mean/rstd, lse),
 * the embedding table and its gradient, the loss, reductions' outputs.
 */

/* ---- helpers ------------------------------------------------------------ */

void KDN(k_zero)(KDT *x, int64_t n);                   /* x = 0 */
void KDN(k_fill)(KDT *x, float value, int64_t n);      /* x = value (the loss seed) */
void KDN(k_add_into)(KDT *y, const KDT *x, int64_t n); /* y += x */
void KDN(k_copy)(KDT *y, const KDT *x, int64_t n);     /* y = x */

/* ---- matmul ------------------------------------------------------------- */

/* out (batch, M, N) = op(a) @ op(b).
 * a: (batch, M, K), or (batch, K, M) if trans_a.
 * b: (K, N), or (N, K) if trans_b; shared by every batch item if !b_batched,
 *    else one per batch item: (batch, K, N) / (batch, N, K). */
void KDN(k_matmul_fwd)(KDT *out, const KDT *a, const KDT *b, int64_t batch, int64_t M, int64_t N, int64_t K,
                       int trans_a, int trans_b, int b_batched);
/* da += dout @ op(b)^T (transposed back if trans_a); db += op(a)^T @ dout
 * (summed over the batch when b is shared). reads: a, b. */
void KDN(k_matmul_bwd)(KDT *da, KDT *db, const KDT *dout, const KDT *a, const KDT *b, int64_t batch, int64_t M,
                       int64_t N, int64_t K, int trans_a, int trans_b, int b_batched);

/* out (M, N) = x (M, K) @ op(w) + b, w (K, N), or (N, K) if trans_b; b (N)
 * added to every row. Bit for bit k_matmul_fwd followed by k_add_fwd of the
 * bias: the fused op changes the schedule's memory, not the CPU's numbers. */
void KDN(k_linear_fwd)(KDT *out, const KDT *x, const KDT *w, const KDT *b, int64_t M, int64_t N, int64_t K,
                       int trans_b);
/* dx += dout @ op(w)^T; dw += x^T @ dout (stored as w is); db += the column
 * sums of dout (rows in order, as k_add_bwd sums a bias). reads: x, w. */
void KDN(k_linear_bwd)(KDT *dx, KDT *dw, KDT *db, const KDT *dout, const KDT *x, const KDT *w, int64_t M, int64_t N,
                       int64_t K, int trans_b);

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
#define K_BINARY_DECL(code, name, reads)                                                                     \
    void KDN(k_##name##_fwd)(KDT * out, const KDT *a, const KDT *b, int ndim, const int64_t *out_shape,      \
                             const int64_t *a_shape, const int64_t *b_shape);                                \
    void KDN(k_##name##_bwd)(KDT * da, KDT * db, const KDT *dout, ACC_EW_BWD_OPERANDS_##reads(KDT) int ndim, \
                             const int64_t *out_shape, const int64_t *a_shape, const int64_t *b_shape);
ACC_EW_BINARY_OPS(K_BINARY_DECL)
#undef K_BINARY_DECL
/* The comparisons of i32 operands, exact (the schedule's call for a
 * comparison whose inputs are i32): out = a OP b, 0 or 1, op the
 * comparison's code (ACC_EW_CMP_OPS), broadcasting; and x OP value, op a
 * *_SCALAR code (ACC_EW_CMP_SCALAR_OPS). No backward (i32 inputs). */
void KDN(k_cmp_i32_fwd)(int op, KDT *out, const int32_t *a, const int32_t *b, int ndim, const int64_t *out_shape,
                        const int64_t *a_shape, const int64_t *b_shape);
void KDN(k_cmp_scalar_i32_fwd)(int op, KDT *out, const int32_t *x, float value, int64_t n);

/* ---- elementwise unary (n elements) ------------------------------------- */

void KDN(k_scale_fwd)(KDT *out, const KDT *x, float alpha, int64_t n);
/* dx += alpha*dout. reads: nothing. */
void KDN(k_scale_bwd)(KDT *dx, const KDT *dout, float alpha, int64_t n);
/* out = x + beta (a scalar operand: x + 1.0, 1.0 - x) */
void KDN(k_shift_fwd)(KDT *out, const KDT *x, float beta, int64_t n);
/* dx += dout. reads: nothing. */
void KDN(k_shift_bwd)(KDT *dx, const KDT *dout, int64_t n);
/* The plain unary elementwise ops of the op table (ACC_EW_UNARY_OPS in
 * acc_ops.h: gelu, relu, ...; their math is ew_<op> in cpu_kernels.c).
 * k_<op>_fwd: out = f(x); k_<op>_bwd: dx += dout * f'(x), reading x or out
 * as the op's row says. */
#define K_UNARY_DECL(code, name, saved)                           \
    void KDN(k_##name##_fwd)(KDT * out, const KDT *x, int64_t n); \
    void KDN(k_##name##_bwd)(KDT * dx, const KDT *dout, const KDT *saved, int64_t n);
ACC_EW_UNARY_OPS(K_UNARY_DECL)
#undef K_UNARY_DECL
/* The comparisons with a number (ACC_EW_CMP_SCALAR_OPS: eq_scalar, ...):
 * out = x OP value, 0 or 1. No gradient: the backward does nothing (never
 * called). */
#define K_CMP_SCALAR_DECL(code, name, binary)                                  \
    void KDN(k_##name##_fwd)(KDT * out, const KDT *x, float value, int64_t n); \
    void KDN(k_##name##_bwd)(KDT * dx, const KDT *dout, int64_t n);
ACC_EW_CMP_SCALAR_OPS(K_CMP_SCALAR_DECL)
#undef K_CMP_SCALAR_DECL

/* ---- normalisation and softmax ------------------------------------------ */

/* y (N, C) = (x - mean) * rstd * w + b over each row; stats (N, 2) = (mean, rstd). */
void KDN(k_layernorm_fwd)(KDT *y, float *stats, const KDT *x, const float *w, const float *b, int64_t N, int64_t C,
                          float eps);
/* dx, dw, db += ... reads: x, w, stats (not y, not b). */
void KDN(k_layernorm_bwd)(KDT *dx, float *dw, float *db, const KDT *dy, const KDT *x, const float *w,
                          const float *stats, int64_t N, int64_t C);
/* y (N, C) = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps); stats (N) = rstd. */
void KDN(k_rmsnorm_fwd)(KDT *y, float *stats, const KDT *x, const float *w, int64_t N, int64_t C, float eps);
/* dx, dw += ... reads: x, w, stats. */
void KDN(k_rmsnorm_bwd)(KDT *dx, float *dw, const KDT *dy, const KDT *x, const float *w, const float *stats, int64_t N,
                        int64_t C);
/* y (N, C) = softmax over the last axis of x. y may alias x. */
void KDN(k_softmax_fwd)(KDT *y, const KDT *x, int64_t N, int64_t C);
/* dx += y * (dy - rowsum(dy*y)). reads: y (the forward output). */
void KDN(k_softmax_bwd)(KDT *dx, const KDT *dy, const KDT *y, int64_t N, int64_t C);

/* ---- attention ---------------------------------------------------------- */

/* Scaled dot-product attention, flash style (online softmax over key blocks;
 * no (T, S) score matrix is ever stored; no workspace).
 * q, out (B, T, H*D); k, v (B, S, KVH*D); lse (B, H, T) = logsumexp of the
 * scaled scores of each query row. Scale 1/sqrt(D). Query head h reads kv head
 * h / (H/KVH) (KVH must divide H; KVH <= 0 means KVH = H). causal: query t
 * sees keys s <= t (needs T == S). */
void KDN(k_attention_fwd)(KDT *out, float *lse, const KDT *q, const KDT *k, const KDT *v, int64_t B, int64_t T,
                          int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);
/* dq, dk, dv += ...; recomputes the probabilities block by block from lse.
 * reads: q, k, v, out, lse. */
void KDN(k_attention_bwd)(KDT *dq, KDT *dk, KDT *dv, const KDT *dout, const KDT *q, const KDT *k, const KDT *v,
                          const KDT *out, const float *lse, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH,
                          int64_t D, int causal);
/* Attention with a mask and/or an additive bias (either NULL): mask, int32
 * (mask_i32) or float, element (b, h, t, s) at b*ms[0] + h*ms[1] + t*ms[2] +
 * s*ms[3]: nonzero, query t of head h attends key s; zero: that key is
 * dropped for it (a key-padding mask (B, S) is ms = {S, 0, 0, 1}); bias
 * (float) is added to the scaled scores, element (b, h, t, s) at b*bs[0] +
 * h*bs[1] + t*bs[2] + s*bs[3] (strides 0 where either broadcasts). A query
 * row whose keys are all dropped (by the mask, a -inf bias or causality)
 * gives zeros, its lse +inf, and no gradient. */
void KDN(k_attention_masked_fwd)(KDT *out, float *lse, const KDT *q, const KDT *k, const KDT *v, const void *mask,
                                 int mask_i32, const int64_t *ms, const float *bias, const int64_t *bs, int64_t B,
                                 int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);
/* dq, dk, dv, dbias += ... (any may be NULL; dbias sums over what the bias
 * broadcasts over). reads: q, k, v, out, lse, mask, bias. */
void KDN(k_attention_masked_bwd)(KDT *dq, KDT *dk, KDT *dv, float *dbias, const KDT *dout, const KDT *q, const KDT *k,
                                 const KDT *v, const KDT *out, const float *lse, const void *mask, int mask_i32,
                                 const int64_t *ms, const float *bias, const int64_t *bs, int64_t B, int64_t T,
                                 int64_t S, int64_t H, int64_t KVH, int64_t D, int causal);

/* ---- rotary position embedding ------------------------------------------ */

/* Rotate-half RoPE (HuggingFace Llama) on x, out (B, T, H*D), position = t:
 * freq_i = theta^(-2i/D), out[i] = x[i]cos - x[i+D/2]sin,
 * out[i+D/2] = x[i+D/2]cos + x[i]sin. out may alias x. */
void KDN(k_rope_fwd)(KDT *out, const KDT *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta);
/* dx += inverse rotation of dout. reads: nothing. */
void KDN(k_rope_bwd)(KDT *dx, const KDT *dout, int64_t B, int64_t T, int64_t H, int64_t D, float theta);

/* ---- embedding and loss ------------------------------------------------- */

/* out (N, C) = table[idx[n]], table (V, C). Returns nonzero (and writes
 * nothing) if some idx is outside [0, V). */
int KDN(k_embedding_fwd)(KDT *out, const int32_t *idx, const float *table, int64_t N, int64_t V, int64_t C);
/* dtable[idx[n]] += dout[n]; deterministic. reads: idx. Nonzero on a bad idx. */
int KDN(k_embedding_bwd)(float *dtable, const KDT *dout, const int32_t *idx, int64_t N, int64_t V, int64_t C);
/* *loss = mean over n of (lse[n] - logits[n, targets[n]]), lse (N) the
 * logsumexp of each row of logits (N, V). Nonzero on a target outside [0, V). */
int KDN(k_cross_entropy_fwd)(float *loss, float *lse, const KDT *logits, const int32_t *targets, int64_t N, int64_t V);
/* dlogits += dloss[0] * (softmax(logits) - onehot(targets)) / N.
 * reads: logits, lse, targets. Nonzero on a bad target. */
int KDN(k_cross_entropy_bwd)(KDT *dlogits, const float *dloss, const KDT *logits, const float *lse,
                             const int32_t *targets, int64_t N, int64_t V);

/* ---- dropout ------------------------------------------------------------ */

/* out[i] = x[i] / (1-p) if philox_uniform(seed, step, op_id, i) >= p else 0
 * (keep probability 1-p; p >= 1 drops everything). No mask is stored. */
void KDN(k_dropout_fwd)(KDT *out, const KDT *x, int64_t n, float p, uint64_t seed, uint32_t step, uint32_t op_id);
/* dx += the same mask (rebuilt from the keys) applied to dout. reads: nothing. */
void KDN(k_dropout_bwd)(KDT *dx, const KDT *dout, int64_t n, float p, uint64_t seed, uint32_t step, uint32_t op_id);

/* ---- elementwise chains --------------------------------------------------- */

/* out[i] = ops[n_ops-1](...ops[0](x[i])) for i < n: the fused forward of
 * consecutive elementwise steps, equal bit for bit to running each op's own
 * kernel (the same per-element arithmetic; dropout draws the same Philox
 * numbers from seed and step). out may be x; operands must not overlap out
 * unless full-sized and at the same place. */
void KDN(k_ew_chain)(KDT *out, const KDT *x, const k_ew_op *ops, int n_ops, int64_t n, uint64_t seed, uint32_t step);

/* ---- casts (inserted by the precision pass) -------------------------------- */

/* cast: out (the instance's type) = x rounded to nearest even; bwd: dx += dout
 * widened. uncast: out (float) = x widened; bwd: dx += dout, rounded. In the
 * float instance both are copies. reads: nothing. */
void KDN(k_cast_fwd)(KDT *out, const float *x, int64_t n);
void KDN(k_cast_bwd)(float *dx, const KDT *dout, int64_t n);
void KDN(k_uncast_fwd)(float *out, const KDT *x, int64_t n);
void KDN(k_uncast_bwd)(KDT *dx, const float *dout, int64_t n);
/* float(x): out = x (i32) as f32, in both instances; no backward (an i32
 * input gets no gradient: never called). */
void KDN(k_float_fwd)(float *out, const int32_t *x, int64_t n);
void KDN(k_float_bwd)(int32_t *dx, const float *dout, int64_t n);

/* ---- data movement ------------------------------------------------------ */

/* reshape: a copy of n elements; bwd dx += dout. */
void KDN(k_reshape_fwd)(KDT *out, const KDT *x, int64_t n);
void KDN(k_reshape_bwd)(KDT *dx, const KDT *dout, int64_t n);
/* out = x with dims dim0 and dim1 swapped; x_shape is x's shape (ndim <= 6),
 * negative dims count from the end. bwd: dx += the swap of dout. */
void KDN(k_transpose_fwd)(KDT *out, const KDT *x, int ndim, const int64_t *x_shape, int dim0, int dim1);
void KDN(k_transpose_bwd)(KDT *dx, const KDT *dout, int ndim, const int64_t *x_shape, int dim0, int dim1);
/* out = x[..., start:start+len, ...] along axis; bwd: dx[that slice] += dout. */
void KDN(k_slice_fwd)(KDT *out, const KDT *x, int ndim, const int64_t *x_shape, int axis, int64_t start, int64_t len);
void KDN(k_slice_bwd)(KDT *dx, const KDT *dout, int ndim, const int64_t *x_shape, int axis, int64_t start, int64_t len);
/* out = concat of the n inputs xs along axis; out_shape is out's shape and
 * sizes[i] the extent of input i along axis. bwd: dxs[i] += its part of dout
 * (NULL entries skipped). */
void KDN(k_concat_fwd)(KDT *out, const KDT *const *xs, int n, int ndim, const int64_t *out_shape, int axis,
                       const int64_t *sizes);
void KDN(k_concat_bwd)(KDT *const *dxs, const KDT *dout, int n, int ndim, const int64_t *out_shape, int axis,
                       const int64_t *sizes);

/* ---- where -------------------------------------------------------------- */

/* out = cond != 0 ? a : b elementwise; cond is int32 (cond_i32) or of the
 * element type (nonzero, NaN too, picks a); cond, a and b broadcast to out
 * (ndim dims each, right-aligned as a binary op's). bwd: da += dout where
 * cond != 0, db += dout where cond == 0 (either NULL: skipped), summed over
 * what each broadcasts over; reads: cond. */
void KDN(k_where_fwd)(KDT *out, const void *cond, const KDT *a, const KDT *b, int cond_i32, int ndim,
                      const int64_t *out_shape, const int64_t *cond_shape, const int64_t *a_shape,
                      const int64_t *b_shape);
void KDN(k_where_bwd)(KDT *da, KDT *db, const KDT *dout, const void *cond, int cond_i32, int ndim,
                      const int64_t *out_shape, const int64_t *cond_shape, const int64_t *a_shape,
                      const int64_t *b_shape);

/* ---- reductions --------------------------------------------------------- */

/* View x as (outer, n, inner) and reduce the middle axis: out (outer, inner).
 * A reduction over all elements is outer = inner = 1. keepdim does not change
 * the memory layout. bwd: dx += dout broadcast back (mean: divided by n). */
void KDN(k_sum_fwd)(float *out, const KDT *x, int64_t outer, int64_t n, int64_t inner);
void KDN(k_sum_bwd)(KDT *dx, const float *dout, int64_t outer, int64_t n, int64_t inner);
void KDN(k_mean_fwd)(float *out, const KDT *x, int64_t outer, int64_t n, int64_t inner);
void KDN(k_mean_bwd)(KDT *dx, const float *dout, int64_t outer, int64_t n, int64_t inner);
/* max and min over the middle axis of x (outer, n, inner): out (outer,
 * inner) the extreme element itself (a NaN, if the column has one); the arg
 * is the first index that holds it (ties: the first). bwd: dx[arg] += dout,
 * the arg found again from x; reads: x. */
void KDN(k_max_fwd)(KDT *out, const KDT *x, int64_t outer, int64_t n, int64_t inner);
void KDN(k_max_bwd)(KDT *dx, const KDT *dout, const KDT *x, int64_t outer, int64_t n, int64_t inner);
void KDN(k_min_fwd)(KDT *out, const KDT *x, int64_t outer, int64_t n, int64_t inner);
void KDN(k_min_bwd)(KDT *dx, const KDT *dout, const KDT *x, int64_t outer, int64_t n, int64_t inner);
