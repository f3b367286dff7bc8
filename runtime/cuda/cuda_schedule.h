/* cuda_schedule.h - binds the kernel names of the host schedule to the
 * device layer: the schedule acc generates is the same text for every target
 * (`k_matmul_fwd(F(a), ...)`), and a device target's build includes this
 * header instead of cpu_kernels.h, so each call becomes the g_* launch of
 * cuda_ops.h on the instance's device `D` (a local of the schedule). */
#ifndef ACC_CUDA_SCHEDULE_H
#define ACC_CUDA_SCHEDULE_H

#include "cuda_ops.h"

#define k_zero(...) g_zero(D, __VA_ARGS__)
#define k_fill(...) g_fill(D, __VA_ARGS__)
#define k_matmul_fwd(...) g_matmul_fwd(D, __VA_ARGS__)
#define k_matmul_bwd(...) g_matmul_bwd(D, __VA_ARGS__)
#define k_add_fwd(...) g_add_fwd(D, __VA_ARGS__)
#define k_sub_fwd(...) g_sub_fwd(D, __VA_ARGS__)
#define k_mul_fwd(...) g_mul_fwd(D, __VA_ARGS__)
#define k_div_fwd(...) g_div_fwd(D, __VA_ARGS__)
#define k_add_bwd(...) g_add_bwd(D, __VA_ARGS__)
#define k_sub_bwd(...) g_sub_bwd(D, __VA_ARGS__)
#define k_mul_bwd(...) g_mul_bwd(D, __VA_ARGS__)
#define k_div_bwd(...) g_div_bwd(D, __VA_ARGS__)
#define k_scale_fwd(...) g_scale_fwd(D, __VA_ARGS__)
#define k_scale_bwd(...) g_scale_bwd(D, __VA_ARGS__)
#define k_gelu_fwd(...) g_gelu_fwd(D, __VA_ARGS__)
#define k_gelu_bwd(...) g_gelu_bwd(D, __VA_ARGS__)
#define k_relu_fwd(...) g_relu_fwd(D, __VA_ARGS__)
#define k_relu_bwd(...) g_relu_bwd(D, __VA_ARGS__)
#define k_silu_fwd(...) g_silu_fwd(D, __VA_ARGS__)
#define k_silu_bwd(...) g_silu_bwd(D, __VA_ARGS__)
#define k_tanh_fwd(...) g_tanh_fwd(D, __VA_ARGS__)
#define k_tanh_bwd(...) g_tanh_bwd(D, __VA_ARGS__)
#define k_exp_fwd(...) g_exp_fwd(D, __VA_ARGS__)
#define k_exp_bwd(...) g_exp_bwd(D, __VA_ARGS__)
#define k_layernorm_fwd(...) g_layernorm_fwd(D, __VA_ARGS__)
#define k_layernorm_bwd(...) g_layernorm_bwd(D, __VA_ARGS__)
#define k_rmsnorm_fwd(...) g_rmsnorm_fwd(D, __VA_ARGS__)
#define k_rmsnorm_bwd(...) g_rmsnorm_bwd(D, __VA_ARGS__)
#define k_softmax_fwd(...) g_softmax_fwd(D, __VA_ARGS__)
#define k_softmax_bwd(...) g_softmax_bwd(D, __VA_ARGS__)
#define k_attention_fwd(...) g_attention_fwd(D, __VA_ARGS__)
#define k_attention_bwd(...) g_attention_bwd(D, __VA_ARGS__)
#define k_rope_fwd(...) g_rope_fwd(D, __VA_ARGS__)
#define k_rope_bwd(...) g_rope_bwd(D, __VA_ARGS__)
#define k_embedding_fwd(...) g_embedding_fwd(D, __VA_ARGS__)
#define k_embedding_bwd(...) g_embedding_bwd(D, __VA_ARGS__)
#define k_cross_entropy_fwd(...) g_cross_entropy_fwd(D, __VA_ARGS__)
#define k_cross_entropy_bwd(...) g_cross_entropy_bwd(D, __VA_ARGS__)
#define k_dropout_fwd(...) g_dropout_fwd(D, __VA_ARGS__)
#define k_dropout_bwd(...) g_dropout_bwd(D, __VA_ARGS__)
#define k_reshape_fwd(...) g_reshape_fwd(D, __VA_ARGS__)
#define k_reshape_bwd(...) g_reshape_bwd(D, __VA_ARGS__)
#define k_transpose_fwd(...) g_transpose_fwd(D, __VA_ARGS__)
#define k_transpose_bwd(...) g_transpose_bwd(D, __VA_ARGS__)
#define k_slice_fwd(...) g_slice_fwd(D, __VA_ARGS__)
#define k_slice_bwd(...) g_slice_bwd(D, __VA_ARGS__)
#define k_concat_fwd(...) g_concat_fwd(D, __VA_ARGS__)
#define k_concat_bwd(...) g_concat_bwd(D, __VA_ARGS__)
#define k_sum_fwd(...) g_sum_fwd(D, __VA_ARGS__)
#define k_sum_bwd(...) g_sum_bwd(D, __VA_ARGS__)
#define k_mean_fwd(...) g_mean_fwd(D, __VA_ARGS__)
#define k_mean_bwd(...) g_mean_bwd(D, __VA_ARGS__)

#endif
