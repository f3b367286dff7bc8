/* abi.h - the contract between the CUDA kernels and the host that launches them.
 *
 * Every kernel in kernels.cu has one signature, `void ck_name(acc_kargs a)`:
 * a by-value block of pointers, integers and floats whose meaning each kernel
 * names at its top. One signature means one launch path: the driver API
 * passes &a as the only parameter, and the device emulator calls the same
 * function compiled by the host compiler through one function-pointer type.
 * The list below is the single source of the kernels' names and of whether a
 * kernel synchronizes (uses __syncthreads, __syncwarp or warp shuffles): the
 * emulator runs the threads of a kernel that does not synchronize as plain
 * calls, and stops with an error if such a kernel does synchronize.
 *
 * Included by kernels.cu (compiled by NVRTC, or by the host C compiler for
 * the emulator), by the launch layer (ops.c) and by both device backends.
 */
#ifndef ACC_CUDA_ABI_H
#define ACC_CUDA_ABI_H

#define KA_NP 12 /* pointers */
#define KA_NI 32 /* 64-bit integers */
#define KA_NF 8  /* floats */

typedef struct {
    float *p[KA_NP]; /* device addresses (int32 tensors are cast) */
    long long i[KA_NI];
    float f[KA_NF];
} acc_kargs;

/* The step's scalars, which kernels read from device memory rather than
 * from their launch arguments, so that the launches of a step captured once
 * (a CUDA graph) replay with each step's values: the device layer writes
 * them at the start of the workspace before every run, and a kernel that
 * needs them gets their address in argument pointer KA_SCALARS_P. The
 * layout is runtime/accrt.h's acc_scalars (device.h checks that the two
 * agree). */
typedef struct {
    unsigned long long seed;
    unsigned int step, pad;
    float lr, beta1, beta2, eps, weight_decay, bc1, bc2;
} acc_kscalars;
#define KA_SCALARS_P (KA_NP - 1)
#define KA_SCALARS_BYTES 256 /* their region: the workspace's first bytes */

/* Threads per block of the kernels that reduce with a block (a multiple of 32). */
#define KA_BLOCK 256
/* Elements a thread of the flat elementwise kernels steps over (ck_unary_*,
 * ck_ew_chain, the casts): 16 bytes of bf16 (kernels.cu's ld8/st8). */
#define KA_VEC 8
/* Attention. Head dimensions up to KA_ATT_TILE_D take the tiled kernels
 * (blocks of KA_ATT_THREADS threads, 4 warps; K/V and query tiles staged in
 * static shared memory): a block of ck_attention_fwd owns KA_ATT_FWD_ROWS
 * query rows of one (batch, head), one of ck_attention_bwd_dq
 * KA_ATT_DQ_ROWS, one of ck_attention_bwd_dkdv KA_ATT_DKDV_KEYS key rows of
 * one (batch, kv head). Wider heads, up to KA_ATT_MAX_D, take the *_wide
 * kernels: KA_ATT_WARPS warps per block, one query or key row per warp. */
#define KA_ATT_TILE_D 128
#define KA_ATT_RT_D 64 /* and up to this, the register-tiled forward (64 query rows a block) */
#define KA_ATT_RT_ROWS 64
#define KA_ATT_RB 32 /* query rows (dq) or keys (dk/dv) a block of the register-tiled backward */
#define KA_ATT_THREADS 128
#define KA_ATT_FWD_ROWS 32
#define KA_ATT_DQ_ROWS 16
#define KA_ATT_DKDV_KEYS 32
#define KA_ATT_WARPS 4
#define KA_ATT_MAX_D 256

/* X(name, synchronizes) */
#define ACC_CUDA_KERNELS(X)          \
    X(ck_fill, 0)                    \
    X(ck_strided, 0)                 \
    X(ck_unary_fwd, 0)               \
    X(ck_unary_bwd, 0)               \
    X(ck_binary_fwd, 0)              \
    X(ck_binary_bwd, 0)              \
    X(ck_where_fwd, 0)               \
    X(ck_where_bwd, 0)               \
    X(ck_dropout, 0)                 \
    X(ck_rope, 0)                    \
    X(ck_embedding_fwd, 0)           \
    X(ck_embedding_sort, 1)          \
    X(ck_embedding_bwd, 0)           \
    X(ck_col_reduce, 1)              \
    X(ck_col_final, 0)               \
    X(ck_reduce_fwd, 1)              \
    X(ck_reduce_bwd, 0)              \
    X(ck_argreduce, 0)               \
    X(ck_layernorm_fwd, 1)           \
    X(ck_layernorm_bwd_dx, 1)        \
    X(ck_rmsnorm_fwd, 1)             \
    X(ck_rmsnorm_bwd_dx, 1)          \
    X(ck_softmax_fwd, 1)             \
    X(ck_softmax_bwd, 1)             \
    X(ck_xent_lse, 1)                \
    X(ck_xent_loss, 1)               \
    X(ck_xent_bwd, 0)                \
    X(ck_attention_delta, 1)         \
    X(ck_attention_fwd, 1)           \
    X(ck_attention_fwd_rt, 1)        \
    X(ck_attention_fwd_tc, 1)        \
    X(ck_attention_bwd_dq_tc, 1)     \
    X(ck_attention_bwd_dkdv_tc, 1)   \
    X(ck_attention_fwd_hb, 1)        \
    X(ck_attention_bwd_dq_hb, 1)     \
    X(ck_attention_bwd_dkdv_hb, 1)   \
    X(ck_attention_bwd_dq_rt, 1)     \
    X(ck_attention_bwd_dkdv_rt, 1)   \
    X(ck_attention_bwd_dq, 1)        \
    X(ck_attention_bwd_dkdv, 1)      \
    X(ck_attention_fwd_wide, 1)      \
    X(ck_attention_bwd_dq_wide, 1)   \
    X(ck_attention_bwd_dkdv_wide, 1) \
    X(ck_attention_bwd_bias, 1)      \
    X(ck_ew_chain, 0)                \
    X(ck_convert, 0)                 \
    X(ck_adamw, 0)                   \
    X(ck_sum_squares, 1)             \
    X(ck_sum_squares_final, 1)       \
    X(ck_bias_bf16, 0)

typedef enum {
#define KA_ENUM(name, sync) KID_##name,
    ACC_CUDA_KERNELS(KA_ENUM)
#undef KA_ENUM
        KID_COUNT
} acc_kernel_id;

/* The shared unary and binary kernels take the op table's codes (ACC_OP_*,
 * acc_ops.h). */
/* Modes and stores of ck_col_reduce. */
enum { COL_SUM, COL_BINARY, COL_LAYERNORM, COL_RMSNORM };
enum { COL_SET, COL_ADD };

#endif
