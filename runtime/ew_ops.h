/* ew_ops.h - an elementwise chain (k_ew_chain in cpu_kernels.h, g_ew_chain
 * for the cuda targets): its ops are named by the op table's codes
 * (ACC_OP_*, acc_ops.h, generated from ir/ops.def), those whose ew column in
 * ACC_KERNEL_OPS is not 0; and the math of the binary ones. Shared by the
 * CPU kernels, the CUDA kernels (NVRTC gets this file as a header; it sees
 * the codes and the math) and what acc generates. */
#ifndef ACC_EW_OPS_H
#define ACC_EW_OPS_H

#include "acc_ops.h"

/* The math of each binary elementwise op of the table (ACC_EW_BINARY_OPS),
 * written once for both targets (plain IEEE arithmetic, the same bits on
 * each): EW_<OP>(x, y) the forward, EW_<OP>_DA(g, x, y) and
 * EW_<OP>_DB(g, x, y) the gradient terms of a and b given the incoming
 * gradient g. Macros, so that an operand a term does not read is never
 * evaluated (add's and sub's kernels get no operands). The CPU's
 * broadcasting kernels and chains (cpu_kernels.c) and the CUDA kernels
 * (kernels.cu) use these and nothing else. */
#define EW_ADD(x, y) ((x) + (y))
#define EW_ADD_DA(g, x, y) (g)
#define EW_ADD_DB(g, x, y) (g)
#define EW_SUB(x, y) ((x) - (y))
#define EW_SUB_DA(g, x, y) (g)
#define EW_SUB_DB(g, x, y) (-(g))
#define EW_MUL(x, y) ((x) * (y))
#define EW_MUL_DA(g, x, y) ((g) * (y))
#define EW_MUL_DB(g, x, y) ((g) * (x))
#define EW_DIV(x, y) ((x) / (y))
#define EW_DIV_DA(g, x, y) ((g) / (y))
#define EW_DIV_DB(g, x, y) (-(g) * (x) / ((y) * (y)))
/* The comparisons: 1 where the relation holds, else 0 (any relation with a
 * NaN is false, so ne of a NaN is 1, as IEEE and PyTorch have it). No
 * gradient flows through them (OPF_NOGRAD: their backward is never
 * scheduled; the terms are 0 for the generated kernels' sake). The
 * comparisons with a number (ACC_EW_CMP_SCALAR_OPS) use the same macros. */
#define EW_EQ(x, y) ((x) == (y) ? 1.0f : 0.0f)
#define EW_EQ_DA(g, x, y) 0.0f
#define EW_EQ_DB(g, x, y) 0.0f
#define EW_NE(x, y) ((x) != (y) ? 1.0f : 0.0f)
#define EW_NE_DA(g, x, y) 0.0f
#define EW_NE_DB(g, x, y) 0.0f
#define EW_LT(x, y) ((x) < (y) ? 1.0f : 0.0f)
#define EW_LT_DA(g, x, y) 0.0f
#define EW_LT_DB(g, x, y) 0.0f
#define EW_LE(x, y) ((x) <= (y) ? 1.0f : 0.0f)
#define EW_LE_DA(g, x, y) 0.0f
#define EW_LE_DB(g, x, y) 0.0f
#define EW_GT(x, y) ((x) > (y) ? 1.0f : 0.0f)
#define EW_GT_DA(g, x, y) 0.0f
#define EW_GT_DB(g, x, y) 0.0f
#define EW_GE(x, y) ((x) >= (y) ? 1.0f : 0.0f)
#define EW_GE_DA(g, x, y) 0.0f
#define EW_GE_DB(g, x, y) 0.0f
/* The comparisons of int32 operands, exact, written once as the functions
 * each target declares with its own qualifier (QUAL: static inline on the
 * host, DEVFN in kernels.cu): ew_cmp_i32, of two int32 values (op a
 * comparison's code, ACC_EW_CMP_OPS), and ew_cmp_scalar_i32, of an int32 x
 * with a number (op a *_SCALAR code), compared in double (exact for every
 * int32 and float). 0 or 1. */
/* clang-format off */
#define EW_CMP_I32_CASE(code, name) case ACC_OP_##code: return EW_##code(x, y);
#define EW_CMP_SCALAR_I32_CASE(code, name, binary) case ACC_OP_##code: return EW_##binary((double)x, (double)value);
/* clang-format on */
#define EW_CMP_I32_FUNCTIONS(QUAL)                             \
    QUAL float ew_cmp_i32(int op, int x, int y) {              \
        switch (op) {                                          \
            ACC_EW_CMP_OPS(EW_CMP_I32_CASE)                    \
        default: return 0.0f;                                  \
        }                                                      \
    }                                                          \
    QUAL float ew_cmp_scalar_i32(int op, int x, float value) { \
        switch (op) {                                          \
            ACC_EW_CMP_SCALAR_OPS(EW_CMP_SCALAR_I32_CASE)      \
        default: return 0.0f;                                  \
        }                                                      \
    }

/* The operands a binary op's backward entry point takes after dout, by the
 * reads column of ACC_EW_BINARY_OPS (ACC_EW_BWD_OPERANDS_<reads>(element type)), and the
 * arguments that pass them on (NULL where the op does not read them). */
#define ACC_EW_BWD_OPERANDS_0(T)
#define ACC_EW_BWD_OPERANDS_1(T) const T *a, const T *b,
#define ACC_EW_BWD_OPERAND_ARGS_0 NULL, NULL
#define ACC_EW_BWD_OPERAND_ARGS_1 a, b

/* Ops per chain (acc fuses at most this many). */
#define K_EW_MAX 4

#ifndef __CUDACC__
#include <stdint.h>

/* One op of a chain, on the host: v = op(v) for unary ops,
 * v OP operand[i % modulus] (operand OP v if operand_right) for binary ones;
 * param is scale's alpha, shift's beta or dropout's p, op_id dropout's
 * stream. */
typedef struct {
    int op;              /* ACC_OP_* */
    const void *operand; /* of the chain's element type (float or acc_bf16) */
    int64_t modulus;
    int operand_right;
    float param;
    uint32_t op_id;
} k_ew_op;
#endif

#endif
