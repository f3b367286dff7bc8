/* ew_ops.h - the ops an elementwise chain may hold (k_ew_chain in
 * cpu_kernels.h, g_ew_chain for the cuda targets): codes shared by the CPU
 * kernels, the CUDA kernels (NVRTC gets this file as a header) and what acc
 * generates. No includes: NVRTC compiles it as it is. */
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

#endif
