/* ew_ops.h - an elementwise chain (k_ew_chain in cpu_kernels.h, g_ew_chain
 * for the cuda targets): its ops are named by the op table's codes
 * (ACC_OP_*, acc_ops.h, generated from ir/ops.def), those whose ew column in
 * ACC_KERNEL_OPS is not 0. Shared by the CPU kernels, the CUDA kernels
 * (NVRTC gets this file as a header; it sees only the codes) and what acc
 * generates. */
#ifndef ACC_EW_OPS_H
#define ACC_EW_OPS_H

#include "acc_ops.h"

/* Ops per chain (acc fuses at most this many). */
#define K_EW_MAX 4

#ifndef __CUDACC__
#include <stdint.h>

/* One op of a chain, on the host: v = op(v) for unary ops,
 * v OP operand[i % modulus] (operand OP v if operand_right) for binary ones;
 * param is scale's alpha or dropout's p, op_id dropout's stream. */
typedef struct {
    int op; /* ACC_OP_* */
    const float *operand;
    int64_t modulus;
    int operand_right;
    float param;
    uint32_t op_id;
} k_ew_op;
#endif

#endif
