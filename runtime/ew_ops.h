/* ew_ops.h - the ops an elementwise chain may hold (k_ew_chain in
 * cpu_kernels.h, g_ew_chain for the cuda targets): codes shared by the CPU
 * kernels, the CUDA kernels (NVRTC gets this file as a header; it sees only
 * the codes) and what acc generates. */
#ifndef ACC_EW_OPS_H
#define ACC_EW_OPS_H

enum {
    K_EW_ADD,
    K_EW_SUB,
    K_EW_MUL,
    K_EW_DIV,
    K_EW_SCALE,
    K_EW_GELU,
    K_EW_RELU,
    K_EW_SILU,
    K_EW_TANH,
    K_EW_EXP,
    K_EW_DROPOUT,
};

/* Ops per chain (acc fuses at most this many). */
#define K_EW_MAX 4

#ifndef __CUDACC__
#include <stdint.h>

/* One op of a chain, on the host: v = op(v) for unary ops,
 * v OP operand[i % modulus] (operand OP v if operand_right) for binary ones;
 * param is scale's alpha or dropout's p, op_id dropout's stream. */
typedef struct {
    int op; /* K_EW_* */
    const float *operand;
    int64_t modulus;
    int operand_right;
    float param;
    uint32_t op_id;
} k_ew_op;
#endif

#endif
