/* cuda_schedule.h - binds the kernel names of the host schedule to the
 * device layer: the schedule acc generates is the same text for every target
 * (`k_matmul_fwd(F(a), ...)`), and a device target's build includes this
 * header instead of cpu_kernels.h, so each call becomes the g_* launch of
 * cuda_ops.h on the instance's device `D` (a local of the schedule). The
 * ops' kernels are bound in acc_ops.h, generated from the op table; the
 * helpers that are no op's are bound here. */
#ifndef ACC_CUDA_SCHEDULE_H
#define ACC_CUDA_SCHEDULE_H

#include "cuda_ops.h"

/* the kernels of the ops: generated from the op table (acc_ops.h) */
#define ACC_SCHEDULE_ON_DEVICE
#include "acc_ops.h"

#define k_zero(...) g_zero(D, __VA_ARGS__)
#define k_ew_chain(...) g_ew_chain(D, __VA_ARGS__)
#define k_fill(...) g_fill(D, __VA_ARGS__)
#define k_zero_bf16(...) g_zero_bf16(D, __VA_ARGS__)
#define k_ew_chain_bf16(...) g_ew_chain_bf16(D, __VA_ARGS__)
#define k_fill_bf16(...) g_fill_bf16(D, __VA_ARGS__)
#define k_uncast_fwd_bf16(...) g_uncast_fwd_bf16(D, __VA_ARGS__)
#define k_uncast_bwd_bf16(...) g_uncast_bwd_bf16(D, __VA_ARGS__)
/* the comparisons of i32 operands (codegen/cpu.c, emit_binary, emit_scalar) */
#define k_cmp_i32_fwd(...) g_cmp_i32_fwd(D, __VA_ARGS__)
#define k_cmp_i32_fwd_bf16(...) g_cmp_i32_fwd_bf16(D, __VA_ARGS__)
#define k_cmp_scalar_i32_fwd(...) g_cmp_scalar_i32_fwd(D, __VA_ARGS__)
#define k_cmp_scalar_i32_fwd_bf16(...) g_cmp_scalar_i32_fwd_bf16(D, __VA_ARGS__)
/* attention's call with a mask or a bias (codegen/cpu.c, emit_attention) */
#define k_attention_masked_fwd(...) g_attention_masked_fwd(D, __VA_ARGS__)
#define k_attention_masked_bwd(...) g_attention_masked_bwd(D, __VA_ARGS__)
#define k_attention_masked_fwd_bf16(...) g_attention_masked_fwd_bf16(D, __VA_ARGS__)
#define k_attention_masked_bwd_bf16(...) g_attention_masked_bwd_bf16(D, __VA_ARGS__)
#endif
