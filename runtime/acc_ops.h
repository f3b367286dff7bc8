/* acc_ops.h - the op codes shared by the runtime and the code acc generates.
 *
 * GENERATED from ir/ops.def by tools/gen_ops.c when the project is built: do
 * not edit, edit the op table. The codes equal the compiler's OpKind. NVRTC
 * gets this file as a header of kernels.cu, so it holds only C that CUDA C++
 * accepts too.
 */
/* clang-format off */
#ifndef ACC_OPS_H
#define ACC_OPS_H

enum {
    ACC_OP_INPUT = 0,
    ACC_OP_PARAM = 1,
    ACC_OP_MATMUL = 2,
    ACC_OP_LINEAR = 3,
    ACC_OP_ADD = 4,
    ACC_OP_SUB = 5,
    ACC_OP_MUL = 6,
    ACC_OP_DIV = 7,
    ACC_OP_EQ = 8,
    ACC_OP_NE = 9,
    ACC_OP_LT = 10,
    ACC_OP_LE = 11,
    ACC_OP_GT = 12,
    ACC_OP_GE = 13,
    ACC_OP_EQ_SCALAR = 14,
    ACC_OP_NE_SCALAR = 15,
    ACC_OP_LT_SCALAR = 16,
    ACC_OP_LE_SCALAR = 17,
    ACC_OP_GT_SCALAR = 18,
    ACC_OP_GE_SCALAR = 19,
    ACC_OP_WHERE = 20,
    ACC_OP_SCALE = 21,
    ACC_OP_SHIFT = 22,
    ACC_OP_GELU = 23,
    ACC_OP_RELU = 24,
    ACC_OP_SILU = 25,
    ACC_OP_TANH = 26,
    ACC_OP_EXP = 27,
    ACC_OP_GELU_ERF = 28,
    ACC_OP_SIGMOID = 29,
    ACC_OP_LOG = 30,
    ACC_OP_SQRT = 31,
    ACC_OP_RSQRT = 32,
    ACC_OP_ABS = 33,
    ACC_OP_LAYERNORM = 34,
    ACC_OP_RMSNORM = 35,
    ACC_OP_SOFTMAX = 36,
    ACC_OP_ATTENTION = 37,
    ACC_OP_ROPE = 38,
    ACC_OP_EMBEDDING = 39,
    ACC_OP_CROSS_ENTROPY = 40,
    ACC_OP_DROPOUT = 41,
    ACC_OP_RESHAPE = 42,
    ACC_OP_TRANSPOSE = 43,
    ACC_OP_SLICE = 44,
    ACC_OP_CONCAT = 45,
    ACC_OP_SUM = 46,
    ACC_OP_MEAN = 47,
    ACC_OP_MAX = 48,
    ACC_OP_MIN = 49,
    ACC_OP_FLOAT = 50,
    ACC_OP_CAST = 51,
    ACC_OP_COUNT = 52
};

/* The ops with kernels (every op but the leaves), in table order:
 * X(CODE, name, ew): name the kernels' stem (k_<name>_fwd, g_<name>_fwd);
 * ew 1 or 2: the op may join an elementwise chain (k_ew_chain), with that
 * many inputs; 0: it may not. */
#define ACC_KERNEL_OPS(X) \
    X(MATMUL, matmul, 0) \
    X(LINEAR, linear, 0) \
    X(ADD, add, 2) \
    X(SUB, sub, 2) \
    X(MUL, mul, 2) \
    X(DIV, div, 2) \
    X(EQ, eq, 2) \
    X(NE, ne, 2) \
    X(LT, lt, 2) \
    X(LE, le, 2) \
    X(GT, gt, 2) \
    X(GE, ge, 2) \
    X(EQ_SCALAR, eq_scalar, 1) \
    X(NE_SCALAR, ne_scalar, 1) \
    X(LT_SCALAR, lt_scalar, 1) \
    X(LE_SCALAR, le_scalar, 1) \
    X(GT_SCALAR, gt_scalar, 1) \
    X(GE_SCALAR, ge_scalar, 1) \
    X(WHERE, where, 0) \
    X(SCALE, scale, 1) \
    X(SHIFT, shift, 1) \
    X(GELU, gelu, 1) \
    X(RELU, relu, 1) \
    X(SILU, silu, 1) \
    X(TANH, tanh, 1) \
    X(EXP, exp, 1) \
    X(GELU_ERF, gelu_erf, 1) \
    X(SIGMOID, sigmoid, 1) \
    X(LOG, log, 1) \
    X(SQRT, sqrt, 1) \
    X(RSQRT, rsqrt, 1) \
    X(ABS, abs, 1) \
    X(LAYERNORM, layernorm, 0) \
    X(RMSNORM, rmsnorm, 0) \
    X(SOFTMAX, softmax, 0) \
    X(ATTENTION, attention, 0) \
    X(ROPE, rope, 0) \
    X(EMBEDDING, embedding, 0) \
    X(CROSS_ENTROPY, cross_entropy, 0) \
    X(DROPOUT, dropout, 1) \
    X(RESHAPE, reshape, 0) \
    X(TRANSPOSE, transpose, 0) \
    X(SLICE, slice, 0) \
    X(CONCAT, concat, 0) \
    X(SUM, sum, 0) \
    X(MEAN, mean, 0) \
    X(MAX, max, 0) \
    X(MIN, min, 0) \
    X(FLOAT, float, 0) \
    X(CAST, cast, 0)

/* The plain unary elementwise ops (one input, no attributes), whose
 * kernels all have one form: X(CODE, name, saved), saved the buffer the
 * backward reads (x or out). k_<name>_fwd(out, x, n): out = f(x);
 * k_<name>_bwd(dx, dout, saved, n): dx += dout * f'(x). */
#define ACC_EW_UNARY_OPS(X) \
    X(GELU, gelu, x) \
    X(RELU, relu, out) \
    X(SILU, silu, x) \
    X(TANH, tanh, out) \
    X(EXP, exp, out) \
    X(GELU_ERF, gelu_erf, x) \
    X(SIGMOID, sigmoid, out) \
    X(LOG, log, x) \
    X(SQRT, sqrt, out) \
    X(RSQRT, rsqrt, out) \
    X(ABS, abs, x)

/* The binary elementwise ops (two inputs, numpy broadcasting, no
 * attributes): X(CODE, name, reads), reads 1 if the backward reads the
 * operands. k_<name>_fwd(out, a, b, ndim, shapes); k_<name>_bwd(da, db,
 * dout, a, b, ndim, shapes), without a, b where reads is 0. */
#define ACC_EW_BINARY_OPS(X) \
    X(ADD, add, 0) \
    X(SUB, sub, 0) \
    X(MUL, mul, 1) \
    X(DIV, div, 1) \
    X(EQ, eq, 0) \
    X(NE, ne, 0) \
    X(LT, lt, 0) \
    X(LE, le, 0) \
    X(GT, gt, 0) \
    X(GE, ge, 0)

/* The comparisons of two tensors (OPF_NOGRAD binary rows): X(CODE,
 * name). Of i32 operands: k_cmp_i32_fwd(op, out, a, b, ndim, shapes). */
#define ACC_EW_CMP_OPS(X) \
    X(EQ, eq) \
    X(NE, ne) \
    X(LT, lt) \
    X(LE, le) \
    X(GT, gt) \
    X(GE, ge)

/* The comparisons of a tensor with a number (one input, the attribute
 * value): X(CODE, name, BINARY), BINARY the code of the comparison of two
 * tensors whose math (EW_<BINARY>(x, value), ew_ops.h) they share.
 * k_<name>_fwd(out, x, value, n): out = x OP value, 0 or 1; no gradient. */
#define ACC_EW_CMP_SCALAR_OPS(X) \
    X(EQ_SCALAR, eq_scalar, EQ) \
    X(NE_SCALAR, ne_scalar, NE) \
    X(LT_SCALAR, lt_scalar, LT) \
    X(LE_SCALAR, le_scalar, LE) \
    X(GT_SCALAR, gt_scalar, GT) \
    X(GE_SCALAR, ge_scalar, GE)

#endif

/* On a device target (cuda_schedule.h defines ACC_SCHEDULE_ON_DEVICE) the
 * host schedule's k_<stem>_fwd / _bwd of every op are the device layer's
 * g_<stem>_fwd / _bwd (cuda_ops.h) on the instance's device D, and the
 * bf16 instances k_<stem>_fwd_bf16 g_<stem>_fwd_bf16. Outside
 * the guard above: acc_ops.h may have been included before. */
#if defined(ACC_SCHEDULE_ON_DEVICE) && !defined(ACC_OPS_ON_DEVICE_H)
#define ACC_OPS_ON_DEVICE_H
#define k_matmul_fwd(...) g_matmul_fwd(D, __VA_ARGS__)
#define k_matmul_bwd(...) g_matmul_bwd(D, __VA_ARGS__)
#define k_matmul_fwd_bf16(...) g_matmul_fwd_bf16(D, __VA_ARGS__)
#define k_matmul_bwd_bf16(...) g_matmul_bwd_bf16(D, __VA_ARGS__)
#define k_linear_fwd(...) g_linear_fwd(D, __VA_ARGS__)
#define k_linear_bwd(...) g_linear_bwd(D, __VA_ARGS__)
#define k_linear_fwd_bf16(...) g_linear_fwd_bf16(D, __VA_ARGS__)
#define k_linear_bwd_bf16(...) g_linear_bwd_bf16(D, __VA_ARGS__)
#define k_add_fwd(...) g_add_fwd(D, __VA_ARGS__)
#define k_add_bwd(...) g_add_bwd(D, __VA_ARGS__)
#define k_add_fwd_bf16(...) g_add_fwd_bf16(D, __VA_ARGS__)
#define k_add_bwd_bf16(...) g_add_bwd_bf16(D, __VA_ARGS__)
#define k_sub_fwd(...) g_sub_fwd(D, __VA_ARGS__)
#define k_sub_bwd(...) g_sub_bwd(D, __VA_ARGS__)
#define k_sub_fwd_bf16(...) g_sub_fwd_bf16(D, __VA_ARGS__)
#define k_sub_bwd_bf16(...) g_sub_bwd_bf16(D, __VA_ARGS__)
#define k_mul_fwd(...) g_mul_fwd(D, __VA_ARGS__)
#define k_mul_bwd(...) g_mul_bwd(D, __VA_ARGS__)
#define k_mul_fwd_bf16(...) g_mul_fwd_bf16(D, __VA_ARGS__)
#define k_mul_bwd_bf16(...) g_mul_bwd_bf16(D, __VA_ARGS__)
#define k_div_fwd(...) g_div_fwd(D, __VA_ARGS__)
#define k_div_bwd(...) g_div_bwd(D, __VA_ARGS__)
#define k_div_fwd_bf16(...) g_div_fwd_bf16(D, __VA_ARGS__)
#define k_div_bwd_bf16(...) g_div_bwd_bf16(D, __VA_ARGS__)
#define k_eq_fwd(...) g_eq_fwd(D, __VA_ARGS__)
#define k_eq_bwd(...) g_eq_bwd(D, __VA_ARGS__)
#define k_eq_fwd_bf16(...) g_eq_fwd_bf16(D, __VA_ARGS__)
#define k_eq_bwd_bf16(...) g_eq_bwd_bf16(D, __VA_ARGS__)
#define k_ne_fwd(...) g_ne_fwd(D, __VA_ARGS__)
#define k_ne_bwd(...) g_ne_bwd(D, __VA_ARGS__)
#define k_ne_fwd_bf16(...) g_ne_fwd_bf16(D, __VA_ARGS__)
#define k_ne_bwd_bf16(...) g_ne_bwd_bf16(D, __VA_ARGS__)
#define k_lt_fwd(...) g_lt_fwd(D, __VA_ARGS__)
#define k_lt_bwd(...) g_lt_bwd(D, __VA_ARGS__)
#define k_lt_fwd_bf16(...) g_lt_fwd_bf16(D, __VA_ARGS__)
#define k_lt_bwd_bf16(...) g_lt_bwd_bf16(D, __VA_ARGS__)
#define k_le_fwd(...) g_le_fwd(D, __VA_ARGS__)
#define k_le_bwd(...) g_le_bwd(D, __VA_ARGS__)
#define k_le_fwd_bf16(...) g_le_fwd_bf16(D, __VA_ARGS__)
#define k_le_bwd_bf16(...) g_le_bwd_bf16(D, __VA_ARGS__)
#define k_gt_fwd(...) g_gt_fwd(D, __VA_ARGS__)
#define k_gt_bwd(...) g_gt_bwd(D, __VA_ARGS__)
#define k_gt_fwd_bf16(...) g_gt_fwd_bf16(D, __VA_ARGS__)
#define k_gt_bwd_bf16(...) g_gt_bwd_bf16(D, __VA_ARGS__)
#define k_ge_fwd(...) g_ge_fwd(D, __VA_ARGS__)
#define k_ge_bwd(...) g_ge_bwd(D, __VA_ARGS__)
#define k_ge_fwd_bf16(...) g_ge_fwd_bf16(D, __VA_ARGS__)
#define k_ge_bwd_bf16(...) g_ge_bwd_bf16(D, __VA_ARGS__)
#define k_eq_scalar_fwd(...) g_eq_scalar_fwd(D, __VA_ARGS__)
#define k_eq_scalar_bwd(...) g_eq_scalar_bwd(D, __VA_ARGS__)
#define k_eq_scalar_fwd_bf16(...) g_eq_scalar_fwd_bf16(D, __VA_ARGS__)
#define k_eq_scalar_bwd_bf16(...) g_eq_scalar_bwd_bf16(D, __VA_ARGS__)
#define k_ne_scalar_fwd(...) g_ne_scalar_fwd(D, __VA_ARGS__)
#define k_ne_scalar_bwd(...) g_ne_scalar_bwd(D, __VA_ARGS__)
#define k_ne_scalar_fwd_bf16(...) g_ne_scalar_fwd_bf16(D, __VA_ARGS__)
#define k_ne_scalar_bwd_bf16(...) g_ne_scalar_bwd_bf16(D, __VA_ARGS__)
#define k_lt_scalar_fwd(...) g_lt_scalar_fwd(D, __VA_ARGS__)
#define k_lt_scalar_bwd(...) g_lt_scalar_bwd(D, __VA_ARGS__)
#define k_lt_scalar_fwd_bf16(...) g_lt_scalar_fwd_bf16(D, __VA_ARGS__)
#define k_lt_scalar_bwd_bf16(...) g_lt_scalar_bwd_bf16(D, __VA_ARGS__)
#define k_le_scalar_fwd(...) g_le_scalar_fwd(D, __VA_ARGS__)
#define k_le_scalar_bwd(...) g_le_scalar_bwd(D, __VA_ARGS__)
#define k_le_scalar_fwd_bf16(...) g_le_scalar_fwd_bf16(D, __VA_ARGS__)
#define k_le_scalar_bwd_bf16(...) g_le_scalar_bwd_bf16(D, __VA_ARGS__)
#define k_gt_scalar_fwd(...) g_gt_scalar_fwd(D, __VA_ARGS__)
#define k_gt_scalar_bwd(...) g_gt_scalar_bwd(D, __VA_ARGS__)
#define k_gt_scalar_fwd_bf16(...) g_gt_scalar_fwd_bf16(D, __VA_ARGS__)
#define k_gt_scalar_bwd_bf16(...) g_gt_scalar_bwd_bf16(D, __VA_ARGS__)
#define k_ge_scalar_fwd(...) g_ge_scalar_fwd(D, __VA_ARGS__)
#define k_ge_scalar_bwd(...) g_ge_scalar_bwd(D, __VA_ARGS__)
#define k_ge_scalar_fwd_bf16(...) g_ge_scalar_fwd_bf16(D, __VA_ARGS__)
#define k_ge_scalar_bwd_bf16(...) g_ge_scalar_bwd_bf16(D, __VA_ARGS__)
#define k_where_fwd(...) g_where_fwd(D, __VA_ARGS__)
#define k_where_bwd(...) g_where_bwd(D, __VA_ARGS__)
#define k_where_fwd_bf16(...) g_where_fwd_bf16(D, __VA_ARGS__)
#define k_where_bwd_bf16(...) g_where_bwd_bf16(D, __VA_ARGS__)
#define k_scale_fwd(...) g_scale_fwd(D, __VA_ARGS__)
#define k_scale_bwd(...) g_scale_bwd(D, __VA_ARGS__)
#define k_scale_fwd_bf16(...) g_scale_fwd_bf16(D, __VA_ARGS__)
#define k_scale_bwd_bf16(...) g_scale_bwd_bf16(D, __VA_ARGS__)
#define k_shift_fwd(...) g_shift_fwd(D, __VA_ARGS__)
#define k_shift_bwd(...) g_shift_bwd(D, __VA_ARGS__)
#define k_shift_fwd_bf16(...) g_shift_fwd_bf16(D, __VA_ARGS__)
#define k_shift_bwd_bf16(...) g_shift_bwd_bf16(D, __VA_ARGS__)
#define k_gelu_fwd(...) g_gelu_fwd(D, __VA_ARGS__)
#define k_gelu_bwd(...) g_gelu_bwd(D, __VA_ARGS__)
#define k_gelu_fwd_bf16(...) g_gelu_fwd_bf16(D, __VA_ARGS__)
#define k_gelu_bwd_bf16(...) g_gelu_bwd_bf16(D, __VA_ARGS__)
#define k_relu_fwd(...) g_relu_fwd(D, __VA_ARGS__)
#define k_relu_bwd(...) g_relu_bwd(D, __VA_ARGS__)
#define k_relu_fwd_bf16(...) g_relu_fwd_bf16(D, __VA_ARGS__)
#define k_relu_bwd_bf16(...) g_relu_bwd_bf16(D, __VA_ARGS__)
#define k_silu_fwd(...) g_silu_fwd(D, __VA_ARGS__)
#define k_silu_bwd(...) g_silu_bwd(D, __VA_ARGS__)
#define k_silu_fwd_bf16(...) g_silu_fwd_bf16(D, __VA_ARGS__)
#define k_silu_bwd_bf16(...) g_silu_bwd_bf16(D, __VA_ARGS__)
#define k_tanh_fwd(...) g_tanh_fwd(D, __VA_ARGS__)
#define k_tanh_bwd(...) g_tanh_bwd(D, __VA_ARGS__)
#define k_tanh_fwd_bf16(...) g_tanh_fwd_bf16(D, __VA_ARGS__)
#define k_tanh_bwd_bf16(...) g_tanh_bwd_bf16(D, __VA_ARGS__)
#define k_exp_fwd(...) g_exp_fwd(D, __VA_ARGS__)
#define k_exp_bwd(...) g_exp_bwd(D, __VA_ARGS__)
#define k_exp_fwd_bf16(...) g_exp_fwd_bf16(D, __VA_ARGS__)
#define k_exp_bwd_bf16(...) g_exp_bwd_bf16(D, __VA_ARGS__)
#define k_gelu_erf_fwd(...) g_gelu_erf_fwd(D, __VA_ARGS__)
#define k_gelu_erf_bwd(...) g_gelu_erf_bwd(D, __VA_ARGS__)
#define k_gelu_erf_fwd_bf16(...) g_gelu_erf_fwd_bf16(D, __VA_ARGS__)
#define k_gelu_erf_bwd_bf16(...) g_gelu_erf_bwd_bf16(D, __VA_ARGS__)
#define k_sigmoid_fwd(...) g_sigmoid_fwd(D, __VA_ARGS__)
#define k_sigmoid_bwd(...) g_sigmoid_bwd(D, __VA_ARGS__)
#define k_sigmoid_fwd_bf16(...) g_sigmoid_fwd_bf16(D, __VA_ARGS__)
#define k_sigmoid_bwd_bf16(...) g_sigmoid_bwd_bf16(D, __VA_ARGS__)
#define k_log_fwd(...) g_log_fwd(D, __VA_ARGS__)
#define k_log_bwd(...) g_log_bwd(D, __VA_ARGS__)
#define k_log_fwd_bf16(...) g_log_fwd_bf16(D, __VA_ARGS__)
#define k_log_bwd_bf16(...) g_log_bwd_bf16(D, __VA_ARGS__)
#define k_sqrt_fwd(...) g_sqrt_fwd(D, __VA_ARGS__)
#define k_sqrt_bwd(...) g_sqrt_bwd(D, __VA_ARGS__)
#define k_sqrt_fwd_bf16(...) g_sqrt_fwd_bf16(D, __VA_ARGS__)
#define k_sqrt_bwd_bf16(...) g_sqrt_bwd_bf16(D, __VA_ARGS__)
#define k_rsqrt_fwd(...) g_rsqrt_fwd(D, __VA_ARGS__)
#define k_rsqrt_bwd(...) g_rsqrt_bwd(D, __VA_ARGS__)
#define k_rsqrt_fwd_bf16(...) g_rsqrt_fwd_bf16(D, __VA_ARGS__)
#define k_rsqrt_bwd_bf16(...) g_rsqrt_bwd_bf16(D, __VA_ARGS__)
#define k_abs_fwd(...) g_abs_fwd(D, __VA_ARGS__)
#define k_abs_bwd(...) g_abs_bwd(D, __VA_ARGS__)
#define k_abs_fwd_bf16(...) g_abs_fwd_bf16(D, __VA_ARGS__)
#define k_abs_bwd_bf16(...) g_abs_bwd_bf16(D, __VA_ARGS__)
#define k_layernorm_fwd(...) g_layernorm_fwd(D, __VA_ARGS__)
#define k_layernorm_bwd(...) g_layernorm_bwd(D, __VA_ARGS__)
#define k_layernorm_fwd_bf16(...) g_layernorm_fwd_bf16(D, __VA_ARGS__)
#define k_layernorm_bwd_bf16(...) g_layernorm_bwd_bf16(D, __VA_ARGS__)
#define k_rmsnorm_fwd(...) g_rmsnorm_fwd(D, __VA_ARGS__)
#define k_rmsnorm_bwd(...) g_rmsnorm_bwd(D, __VA_ARGS__)
#define k_rmsnorm_fwd_bf16(...) g_rmsnorm_fwd_bf16(D, __VA_ARGS__)
#define k_rmsnorm_bwd_bf16(...) g_rmsnorm_bwd_bf16(D, __VA_ARGS__)
#define k_softmax_fwd(...) g_softmax_fwd(D, __VA_ARGS__)
#define k_softmax_bwd(...) g_softmax_bwd(D, __VA_ARGS__)
#define k_softmax_fwd_bf16(...) g_softmax_fwd_bf16(D, __VA_ARGS__)
#define k_softmax_bwd_bf16(...) g_softmax_bwd_bf16(D, __VA_ARGS__)
#define k_attention_fwd(...) g_attention_fwd(D, __VA_ARGS__)
#define k_attention_bwd(...) g_attention_bwd(D, __VA_ARGS__)
#define k_attention_fwd_bf16(...) g_attention_fwd_bf16(D, __VA_ARGS__)
#define k_attention_bwd_bf16(...) g_attention_bwd_bf16(D, __VA_ARGS__)
#define k_rope_fwd(...) g_rope_fwd(D, __VA_ARGS__)
#define k_rope_bwd(...) g_rope_bwd(D, __VA_ARGS__)
#define k_rope_fwd_bf16(...) g_rope_fwd_bf16(D, __VA_ARGS__)
#define k_rope_bwd_bf16(...) g_rope_bwd_bf16(D, __VA_ARGS__)
#define k_embedding_fwd(...) g_embedding_fwd(D, __VA_ARGS__)
#define k_embedding_bwd(...) g_embedding_bwd(D, __VA_ARGS__)
#define k_embedding_fwd_bf16(...) g_embedding_fwd_bf16(D, __VA_ARGS__)
#define k_embedding_bwd_bf16(...) g_embedding_bwd_bf16(D, __VA_ARGS__)
#define k_cross_entropy_fwd(...) g_cross_entropy_fwd(D, __VA_ARGS__)
#define k_cross_entropy_bwd(...) g_cross_entropy_bwd(D, __VA_ARGS__)
#define k_cross_entropy_fwd_bf16(...) g_cross_entropy_fwd_bf16(D, __VA_ARGS__)
#define k_cross_entropy_bwd_bf16(...) g_cross_entropy_bwd_bf16(D, __VA_ARGS__)
#define k_dropout_fwd(...) g_dropout_fwd(D, __VA_ARGS__)
#define k_dropout_bwd(...) g_dropout_bwd(D, __VA_ARGS__)
#define k_dropout_fwd_bf16(...) g_dropout_fwd_bf16(D, __VA_ARGS__)
#define k_dropout_bwd_bf16(...) g_dropout_bwd_bf16(D, __VA_ARGS__)
#define k_reshape_fwd(...) g_reshape_fwd(D, __VA_ARGS__)
#define k_reshape_bwd(...) g_reshape_bwd(D, __VA_ARGS__)
#define k_reshape_fwd_bf16(...) g_reshape_fwd_bf16(D, __VA_ARGS__)
#define k_reshape_bwd_bf16(...) g_reshape_bwd_bf16(D, __VA_ARGS__)
#define k_transpose_fwd(...) g_transpose_fwd(D, __VA_ARGS__)
#define k_transpose_bwd(...) g_transpose_bwd(D, __VA_ARGS__)
#define k_transpose_fwd_bf16(...) g_transpose_fwd_bf16(D, __VA_ARGS__)
#define k_transpose_bwd_bf16(...) g_transpose_bwd_bf16(D, __VA_ARGS__)
#define k_slice_fwd(...) g_slice_fwd(D, __VA_ARGS__)
#define k_slice_bwd(...) g_slice_bwd(D, __VA_ARGS__)
#define k_slice_fwd_bf16(...) g_slice_fwd_bf16(D, __VA_ARGS__)
#define k_slice_bwd_bf16(...) g_slice_bwd_bf16(D, __VA_ARGS__)
#define k_concat_fwd(...) g_concat_fwd(D, __VA_ARGS__)
#define k_concat_bwd(...) g_concat_bwd(D, __VA_ARGS__)
#define k_concat_fwd_bf16(...) g_concat_fwd_bf16(D, __VA_ARGS__)
#define k_concat_bwd_bf16(...) g_concat_bwd_bf16(D, __VA_ARGS__)
#define k_sum_fwd(...) g_sum_fwd(D, __VA_ARGS__)
#define k_sum_bwd(...) g_sum_bwd(D, __VA_ARGS__)
#define k_sum_fwd_bf16(...) g_sum_fwd_bf16(D, __VA_ARGS__)
#define k_sum_bwd_bf16(...) g_sum_bwd_bf16(D, __VA_ARGS__)
#define k_mean_fwd(...) g_mean_fwd(D, __VA_ARGS__)
#define k_mean_bwd(...) g_mean_bwd(D, __VA_ARGS__)
#define k_mean_fwd_bf16(...) g_mean_fwd_bf16(D, __VA_ARGS__)
#define k_mean_bwd_bf16(...) g_mean_bwd_bf16(D, __VA_ARGS__)
#define k_max_fwd(...) g_max_fwd(D, __VA_ARGS__)
#define k_max_bwd(...) g_max_bwd(D, __VA_ARGS__)
#define k_max_fwd_bf16(...) g_max_fwd_bf16(D, __VA_ARGS__)
#define k_max_bwd_bf16(...) g_max_bwd_bf16(D, __VA_ARGS__)
#define k_min_fwd(...) g_min_fwd(D, __VA_ARGS__)
#define k_min_bwd(...) g_min_bwd(D, __VA_ARGS__)
#define k_min_fwd_bf16(...) g_min_fwd_bf16(D, __VA_ARGS__)
#define k_min_bwd_bf16(...) g_min_bwd_bf16(D, __VA_ARGS__)
#define k_float_fwd(...) g_float_fwd(D, __VA_ARGS__)
#define k_float_bwd(...) g_float_bwd(D, __VA_ARGS__)
#define k_float_fwd_bf16(...) g_float_fwd_bf16(D, __VA_ARGS__)
#define k_float_bwd_bf16(...) g_float_bwd_bf16(D, __VA_ARGS__)
#define k_cast_fwd(...) g_cast_fwd(D, __VA_ARGS__)
#define k_cast_bwd(...) g_cast_bwd(D, __VA_ARGS__)
#define k_cast_fwd_bf16(...) g_cast_fwd_bf16(D, __VA_ARGS__)
#define k_cast_bwd_bf16(...) g_cast_bwd_bf16(D, __VA_ARGS__)
#endif
