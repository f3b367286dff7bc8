/* kernels.cu - the CUDA kernels of acc's generated libraries.
 *
 * One source, two compilers: at `acc compile --target cuda` time NVRTC
 * compiles this file (with abi.h and philox.h) to CUBIN for every --arch and
 * to PTX, and the images are embedded in the model's library; the device
 * emulator compiles the very same text with the host C compiler (emu.h maps
 * threadIdx, __syncthreads, __syncwarp, __shfl_xor_sync and __shared__) and
 * runs its thread blocks on the CPU. The text therefore stays in the subset
 * common to CUDA C++ and C11: no templates, references or overloads (kf4,
 * KALIGN16 and UNROLL below name float4, alignment and unrolling for both).
 * Static shared memory stays within the 48 KiB a block may declare.
 *
 * Conventions (those of the CPU kernels, runtime/cpu_kernels.h): float32,
 * contiguous row-major tensors; forward kernels overwrite, backward kernels
 * accumulate (+=); gradient pointers may be NULL (skipped). Every sum runs in
 * a fixed order that depends only on the launch geometry chosen by ops.c, so
 * results are deterministic: no atomics anywhere. Every kernel's arguments
 * are an acc_kargs block; each kernel names its fields at the top.
 * Index inputs were range-checked on the host (acc_set_input), so kernels
 * only guard against out-of-range indices, they do not report them.
 */
#ifdef __CUDACC__
#define KERNEL extern "C" __global__ void
#define DEVFN static __device__ __forceinline__
#define KALIGN16 __align__(16)
#define UNROLL _Pragma("unroll")
/* full occupancy (32 registers a thread) for a kernel of KA_BLOCK-thread
 * blocks whose bf16 path would otherwise raise its register count */
#define KFULL __launch_bounds__(KA_BLOCK, 2048 / KA_BLOCK)
/* three blocks of attention warps an SM: 170 registers a thread */
#define KATT3 __launch_bounds__(KA_ATT_THREADS, 3)
typedef float4 kf4;
#ifdef __CUDACC_RTC__
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#endif
#else
#include <string.h>

#include "emu.h"
#define KERNEL void
#define DEVFN static inline
#define KALIGN16 _Alignas(16)
#define UNROLL
#define KFULL
#define KATT3
typedef struct {
    float x, y, z, w;
} kf4; /* CUDA's float4: 16 bytes, read from 16-byte aligned shared memory */
#endif

#include "abi.h"
#include "ew_ops.h"
#include "philox.h"

#ifndef __CUDACC__ /* the emulator's view: plain functions (dev_emu.c's table) */
#define KA_PROTO(name, sync) void name(acc_kargs a);
ACC_CUDA_KERNELS(KA_PROTO)
#undef KA_PROTO
#endif

#define K_FULL 0xffffffffu
#ifdef __CUDACC__
#define NEG_INF __int_as_float(0xff800000)
#else
#define NEG_INF (-INFINITY)
#endif

/* The first global thread index and the grid's stride, for grid-stride loops. */
#define GSTART ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define GSTRIDE ((long long)gridDim.x * blockDim.x)

DEVFN float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(K_FULL, v, o);
    return v;
}

DEVFN float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(K_FULL, v, o));
    return v;
}

/* The sum of v over the block, returned to every thread; sh: 32 floats of
 * shared memory. Starts with a barrier so sh may be reused call after call. */
DEVFN float block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? sh[lane] : 0.0f;
    return warp_sum(v);
}

DEVFN float block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? sh[lane] : NEG_INF;
    return warp_max(v);
}

/* Online softmax statistics: fold x into a running max m and sum s of
 * exp(. - m), so one pass over a row gives both. */
DEVFN void online_add(float *m, float *s, float x) {
    if (x > *m) {
        *s = *s * expf(*m - x) + 1.0f;
        *m = x;
    } else if (*m != NEG_INF) { /* (-inf values add nothing) */
        *s += expf(x - *m);
    }
}

/* The block's combined (max, sum) of every thread's (m, s): the sum is
 * returned, the max stored in *mx, both to every thread. */
DEVFN float block_online(float m, float s, float *sh, float *mx) {
    float M = block_max(m, sh);
    *mx = M;
    return block_sum(M == NEG_INF ? 0.0f : s * expf(m - M), sh);
}

/* Element i of a 6-d iteration (dims outermost first) in two strided views:
 * *o1 += sum c_k s1[k], *o2 += sum c_k s2[k] over its coordinates c_k. Dims
 * of 1 cost nothing, and when the iteration has fewer than 2^32 elements
 * (small, uniform over the launch) the divisions are 32-bit, several times
 * cheaper on the GPU than 64-bit ones. */
DEVFN void idx6(long long i, const long long *dims, const long long *s1, const long long *s2, int small, long long *o1,
                long long *o2) {
    long long x = *o1, y = *o2;
    if (small) {
        unsigned r = (unsigned)i;
        for (int k = 5; k >= 0; k--) {
            unsigned d = (unsigned)dims[k];
            if (d == 1) continue;
            unsigned c = r % d;
            r /= d;
            x += (long long)c * s1[k];
            y += (long long)c * s2[k];
        }
    } else {
        long long r = i;
        for (int k = 5; k >= 0; k--) {
            if (dims[k] == 1) continue;
            long long c = r % dims[k];
            r /= dims[k];
            x += c * s1[k];
            y += c * s2[k];
        }
    }
    *o1 = x;
    *o2 = y;
}

#define SMALL(n) ((n) <= 0xffffffffLL)

/* bf16, stored as the high 16 bits of a float: widening is exact; rounding
 * is to nearest, ties to even, a NaN kept (quietened): runtime/bf16.h's
 * rule, bit for bit, so both targets store the same bf16 tensors. */
DEVFN float bf16_widen(unsigned short h) {
#ifdef __CUDACC__
    return __uint_as_float((uint32_t)h << 16);
#else
    return acc_bf16_f32(h);
#endif
}
DEVFN unsigned short bf16_round(float f) {
#ifdef __CUDACC__
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
#else
    return acc_f32_bf16(f);
#endif
}

/* Element i of an activation tensor that is f32 or bf16 (h: a kernel's
 * bf16 flag, from its kargs): widened on load, rounded to nearest even on
 * store, so that one kernel serves both precisions; the arithmetic between
 * is float in both. The pointer is the kargs' float one either way. */
DEVFN float ldx(const float *p, long long i, int h) { return h ? bf16_widen(((const unsigned short *)p)[i]) : p[i]; }
DEVFN void stx(float *p, long long i, float v, int h) {
    if (h) ((unsigned short *)p)[i] = bf16_round(v);
    else p[i] = v;
}
/* The address of element i of such a tensor, for ldx/stx from there (the
 * kargs' float pointer type; not dereferenced as a float when h). */
DEVFN float *xp(const float *p, long long i, int h) {
    return (float *)(unsigned long long)((const char *)p + i * (h ? 2 : 4));
}

/* Eight consecutive elements i..i+7 of an f32 or bf16 tensor of n elements
 * (h: bf16), as floats: one 16-byte load for bf16 (eight elements), two for
 * f32, where all eight are in range and the address is 16-byte aligned;
 * element by element otherwise (a tensor's tail, a slice at an odd offset).
 * st8 stores them the same way, bf16 rounded. The flat elementwise kernels
 * step eight elements a thread (KA_VEC, ops.c launches n / 8 threads), so a
 * warp moves 512 contiguous bytes of bf16 in one instruction where a scalar
 * loop issues eight. The arithmetic per element is unchanged: same bits. */
#ifdef __CUDACC__
DEVFN void ld_words(unsigned int w[4], const void *src) {
    uint4 u = *(const uint4 *)src;
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
}
DEVFN void st_words(void *dst, const unsigned int w[4]) { *(uint4 *)dst = make_uint4(w[0], w[1], w[2], w[3]); }
DEVFN float word_f(unsigned int w) { return __uint_as_float(w); }
DEVFN unsigned int f_word(float f) { return __float_as_uint(f); }
#else
DEVFN void ld_words(unsigned int w[4], const void *src) { memcpy(w, src, 16); }
DEVFN void st_words(void *dst, const unsigned int w[4]) { memcpy(dst, w, 16); }
DEVFN float word_f(unsigned int w) {
    float f;
    memcpy(&f, &w, 4);
    return f;
}
DEVFN unsigned int f_word(float f) {
    unsigned int w;
    memcpy(&w, &f, 4);
    return w;
}
#endif
DEVFN int vec_ok(const float *p, long long i, long long n, int h) {
    return i + KA_VEC <= n && !(((unsigned long long)p + (unsigned long long)i * (h ? 2u : 4u)) & 15u);
}
DEVFN void ld8(const float *p, long long i, long long n, int h, float v[KA_VEC]) {
    if (vec_ok(p, i, n, h)) {
        unsigned int w[4];
        if (h) {
            ld_words(w, (const unsigned short *)p + i);
            UNROLL for (int j = 0; j < 4; j++) {
                v[2 * j] = bf16_widen((unsigned short)(w[j] & 0xffffu));
                v[2 * j + 1] = bf16_widen((unsigned short)(w[j] >> 16));
            }
        } else {
            UNROLL for (int q = 0; q < 2; q++) {
                ld_words(w, p + i + 4 * q);
                UNROLL for (int j = 0; j < 4; j++) v[4 * q + j] = word_f(w[j]);
            }
        }
        return;
    }
    UNROLL for (int j = 0; j < KA_VEC; j++) v[j] = i + j < n ? ldx(p, i + j, h) : 0.0f;
}
DEVFN void st8(float *p, long long i, long long n, int h, const float v[KA_VEC]) {
    if (vec_ok(p, i, n, h)) {
        unsigned int w[4];
        if (h) {
            UNROLL for (int j = 0; j < 4; j++) w[j] = bf16_round(v[2 * j]) | (unsigned int)bf16_round(v[2 * j + 1])
                                                                                 << 16;
            st_words((unsigned short *)p + i, w);
        } else {
            UNROLL for (int q = 0; q < 2; q++) {
                UNROLL for (int j = 0; j < 4; j++) w[j] = f_word(v[4 * q + j]);
                st_words(p + i + 4 * q, w);
            }
        }
        return;
    }
    UNROLL for (int j = 0; j < KA_VEC; j++) if (i + j < n) stx(p, i + j, v[j], h);
}
/* the grid-stride loop of a kernel that steps KA_VEC elements a thread */
#define VSTART (KA_VEC * GSTART)
#define VSTRIDE (KA_VEC * GSTRIDE)
/* the same over a row's columns, a block per row (the norms) */
#define ROW_START (KA_VEC * (long long)threadIdx.x)
#define ROW_STRIDE (KA_VEC * (long long)blockDim.x)

/* ---- data movement --------------------------------------------------------- */

/* p0 x; i0 n, i1 bf16; f0 value: x[0..n) = value */
KERNEL ck_fill(acc_kargs a) {
    float *x = a.p[0];
    int h = (int)a.i[1];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) stx(x, i, a.f[0], h);
}

/* p0 dst, p1 src; i0 n (elements iterated), i1 accumulate, i2..i7 the six
 * iteration dims (outermost first, padded with 1), i8..i13 dst strides,
 * i14 dst offset, i15..i20 src strides, i21 src offset (in elements),
 * i22 bf16 (both tensors).
 * dst[off + sum c_k dstride_k] (+)= src[off + sum c_k sstride_k]: reshape,
 * transpose, slice and concat, forward and backward. The dst map must be
 * one-to-one (it is for all four). A bf16 copy moves the 2-byte elements as
 * they are (the CPU's memcpy); a bf16 sum rounds once. */
KERNEL KFULL ck_strided(acc_kargs a) {
    float *dst = a.p[0];
    const float *src = a.p[1];
    int small = SMALL(a.i[0]), h = (int)a.i[22];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        long long di = a.i[14], si = a.i[21];
        idx6(i, &a.i[2], &a.i[8], &a.i[15], small, &di, &si);
        if (h) {
            unsigned short *d16 = (unsigned short *)dst;
            const unsigned short *s16 = (const unsigned short *)src;
            if (a.i[1]) d16[di] = bf16_round(bf16_widen(d16[di]) + bf16_widen(s16[si]));
            else d16[di] = s16[si];
        } else if (a.i[1]) dst[di] += src[si];
        else dst[di] = src[si];
    }
}

/* ---- elementwise ------------------------------------------------------------ */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* The math of each elementwise unary op, written once for CUDA: ew_<op>(v)
 * the forward, ew_<op>_bwd(g, s) = g * f' the backward term, s the buffer
 * the op's row says its backward reads (its input x or its output). The
 * plain kernels (ck_unary_*) and the chains (ck_ew_chain) call these. */
DEVFN float ew_scale(float v, float alpha) { return alpha * v; }
DEVFN float ew_shift(float v, float beta) { return v + beta; }

/* GPT-2's tanh approximation; gelu'(x) with sech^2 = 1 - tanh^2 */
DEVFN float ew_gelu(float v) { return 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v))); }
DEVFN float ew_gelu_bwd(float g, float x) {
    float u = GELU_K * (x + 0.044715f * x * x * x), t = tanhf(u);
    return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x));
}

DEVFN float ew_relu(float v) { return v > 0.0f ? v : 0.0f; }
DEVFN float ew_relu_bwd(float g, float out) { return g * (out > 0.0f ? 1.0f : 0.0f); }

/* x * sigmoid(x); g * s(x) * (1 + x (1 - s(x))), s the sigmoid */
DEVFN float ew_silu(float v) { return v / (1.0f + expf(-v)); }
DEVFN float ew_silu_bwd(float g, float x) {
    float sg = 1.0f / (1.0f + expf(-x));
    return g * (sg * (1.0f + x * (1.0f - sg)));
}

DEVFN float ew_tanh(float v) { return tanhf(v); }
DEVFN float ew_tanh_bwd(float g, float out) { return g * (1.0f - out * out); }

DEVFN float ew_exp(float v) { return expf(v); }
DEVFN float ew_exp_bwd(float g, float out) { return g * out; }

/* PyTorch's default gelu, x * Phi(x) with the exact normal CDF Phi (erf);
 * gelu'(x) = Phi(x) + x * phi(x), phi the normal density */
DEVFN float ew_gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
DEVFN float ew_gelu_erf_bwd(float g, float x) {
    float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    return g * (cdf + x * 0.39894228040143268f * expf(-0.5f * x * x));
}

/* 1 / (1 + e^-v); its derivative from the output: s (1 - s) */
DEVFN float ew_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
DEVFN float ew_sigmoid_bwd(float g, float out) { return g * out * (1.0f - out); }

/* the natural log (NaN below 0, -inf at 0, as logf); 1/x */
DEVFN float ew_log(float v) { return logf(v); }
DEVFN float ew_log_bwd(float g, float x) { return g / x; }

/* sqrt (NaN below 0; NVRTC's sqrtf is IEEE-rounded without fast math); its
 * derivative from the output: 1 / (2 sqrt(x)) */
DEVFN float ew_sqrt(float v) { return sqrtf(v); }
DEVFN float ew_sqrt_bwd(float g, float out) { return g / (2.0f * out); }

/* 1 / sqrt(x), an IEEE division of the rounded sqrt (the CPU's bits, not
 * rsqrtf's approximation); its derivative from the output: -out^3 / 2 */
DEVFN float ew_rsqrt(float v) { return 1.0f / sqrtf(v); }
DEVFN float ew_rsqrt_bwd(float g, float out) { return -0.5f * g * out * out * out; }

/* |x|; its derivative sign(x), 0 at 0 */
DEVFN float ew_abs(float v) { return fabsf(v); }
DEVFN float ew_abs_bwd(float g, float x) { return x > 0.0f ? g : x < 0.0f ? -g : 0.0f; }

/* The casts of the precision pass, both ways and both directions, and
 * float(x) of an i32 x. p0 out, p1 x; i0 n, i1 x bf16 (2: x is i32), i2 out
 * bf16, i3 accumulate: out = x, or out += x, converted (widened on load,
 * rounded to nearest even on store). */
KERNEL ck_convert(acc_kargs a) {
    float x[KA_VEC], v[KA_VEC];
    int hx = (int)a.i[1], ho = (int)a.i[2];
    for (long long i = VSTART; i < a.i[0]; i += VSTRIDE) {
        if (hx == 2) {
            const int *xi = (const int *)a.p[1];
            UNROLL for (int j = 0; j < KA_VEC; j++) x[j] = i + j < a.i[0] ? (float)xi[i + j] : 0.0f;
        } else {
            ld8(a.p[1], i, a.i[0], hx, x);
        }
        if (a.i[3]) {
            ld8(a.p[0], i, a.i[0], ho, v);
            UNROLL for (int j = 0; j < KA_VEC; j++) x[j] += v[j];
        }
        st8(a.p[0], i, a.i[0], ho, x);
    }
}

/* The bf16 linear's bias without an epilogue (ops.c): p0 y (M, N), p1 x
 * (N), both bf16; i0 M, i1 N: the rows of y set to x. */
KERNEL ck_bias_bf16(acc_kargs a) {
    unsigned short *y = (unsigned short *)a.p[0];
    const unsigned short *x = (const unsigned short *)a.p[1];
    long long M = a.i[0], N = a.i[1];
    for (long long i = GSTART; i < M * N; i += GSTRIDE) y[i] = x[i % N];
}

/* op (scale, shift, a comparison with a number or a plain unary op,
 * ACC_OP_*) of v; alpha: scale's factor, shift's term or the number.
 * Shared by ck_unary_fwd and the chains of ck_ew_chain; the cases are the
 * op table's (acc_ops.h). */
DEVFN float unary_op(int op, float v, float alpha) {
    switch (op) {
    case ACC_OP_SCALE: return ew_scale(v, alpha);
    case ACC_OP_SHIFT: return ew_shift(v, alpha);
#define CMP_SCALAR_FWD(code, name, binary) \
    case ACC_OP_##code: return EW_##binary(v, alpha);
        ACC_EW_CMP_SCALAR_OPS(CMP_SCALAR_FWD)
#undef CMP_SCALAR_FWD
#define UNARY_FWD(code, name, saved) \
    case ACC_OP_##code: return ew_##name(v);
        ACC_EW_UNARY_OPS(UNARY_FWD)
#undef UNARY_FWD
    default: return v;
    }
}

/* The comparisons of int32 values, exact (ew_ops.h). */
EW_CMP_I32_FUNCTIONS(DEVFN)

/* p0 out, p1 x; i0 n, i1 op (ACC_OP_*), i2 bf16 (out; x too unless i3),
 * i3 x is int32 (a comparison with the number f0); f0 alpha (scale) */
KERNEL ck_unary_fwd(acc_kargs a) {
    float *out = a.p[0];
    const float *x = a.p[1];
    int op = (int)a.i[1], h = (int)a.i[2];
    float v[KA_VEC];
    for (long long i = VSTART; i < a.i[0]; i += VSTRIDE) {
        if (a.i[3]) {
            const int *xi = (const int *)a.p[1];
            UNROLL for (int j = 0; j < KA_VEC; j++) v[j] =
                i + j < a.i[0] ? ew_cmp_scalar_i32(op, xi[i + j], a.f[0]) : 0.0f;
        } else {
            ld8(x, i, a.i[0], h, v);
            UNROLL for (int j = 0; j < KA_VEC; j++) v[j] = unary_op(op, v[j], a.f[0]);
        }
        st8(out, i, a.i[0], h, v);
    }
}

/* p0 dx, p1 dout, p2 saved (the op's row says which: x or out; unused for
 * scale and shift); i0 n, i1 op, i2 bf16 (every tensor); f0 alpha.
 * dx += dout * f'(.) */
KERNEL ck_unary_bwd(acc_kargs a) {
    float *dx = a.p[0];
    const float *dy = a.p[1], *s = a.p[2];
    int op = (int)a.i[1], h = (int)a.i[2];
    long long n = a.i[0];
    float g[KA_VEC], sv[KA_VEC], v[KA_VEC];
    for (long long i = VSTART; i < n; i += VSTRIDE) {
        ld8(dy, i, n, h, g);
        ld8(dx, i, n, h, v);
        if (op != ACC_OP_SCALE && op != ACC_OP_SHIFT) ld8(s, i, n, h, sv);
        UNROLL for (int j = 0; j < KA_VEC; j++) {
            float d = 0.0f;
            switch (op) {
            case ACC_OP_SCALE: d = g[j] * a.f[0]; break;
            case ACC_OP_SHIFT: d = g[j]; break;
#define UNARY_BWD(code, name, saved) \
    case ACC_OP_##code: d = ew_##name##_bwd(g[j], sv[j]); break;
                ACC_EW_UNARY_OPS(UNARY_BWD)
#undef UNARY_BWD
            }
            v[j] += d;
        }
        st8(dx, i, n, h, v);
    }
}

/* op (a binary one, ACC_OP_*) of x and y: EW_<OP> of ew_ops.h, the math of
 * the binary ops on both targets; the cases are the op table's. */
DEVFN float binary_op(int op, float x, float y) {
    switch (op) {
#define BINARY_FWD(code, name, reads) \
    case ACC_OP_##code: return EW_##code(x, y);
        ACC_EW_BINARY_OPS(BINARY_FWD)
#undef BINARY_FWD
    default: return x;
    }
}

/* Does the backward of binary op `op` read its operands (the row's
 * grad_reads)? */
DEVFN int binary_reads(int op) {
    switch (op) {
#define BINARY_READS(code, name, reads) \
    case ACC_OP_##code: return reads;
        ACC_EW_BINARY_OPS(BINARY_READS)
#undef BINARY_READS
    default: return 1;
    }
}

/* p0 out, p1 a, p2 b; i0 n, i1 op (ACC_OP_ADD..DIV), i2..i7 out dims (six, padded),
 * i8..i13 a's strides and i14..i19 b's, over out's dims (0: broadcast);
 * i20 bf16 (out; a and b too unless i21); i21 a and b are int32 (a
 * comparison, exact). */
KERNEL ck_binary_fwd(acc_kargs a) {
    float *out = a.p[0];
    const float *x = a.p[1], *y = a.p[2];
    int small = SMALL(a.i[0]), h = (int)a.i[20];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        long long ia = 0, ib = 0;
        idx6(i, &a.i[2], &a.i[8], &a.i[14], small, &ia, &ib);
        if (a.i[21]) stx(out, i, ew_cmp_i32((int)a.i[1], ((const int *)x)[ia], ((const int *)y)[ib]), h);
        else stx(out, i, binary_op((int)a.i[1], ldx(x, ia, h), ldx(y, ib, h)), h);
    }
}

/* The contribution of one out element to the gradient of x = (a if which
 * == 0 else b) of a binary op: g the out gradient, ia/ib the operands'
 * element indices (read only by the ops whose backward reads them), h the
 * operands' bf16 flag. */
DEVFN float binary_grad(int op, int which, float g, const float *A, const float *B, long long ia, long long ib, int h) {
    switch (op) {
#define BINARY_BWD(code, name, reads)                                  \
    case ACC_OP_##code:                                                \
        return which ? EW_##code##_DB(g, ldx(A, ia, h), ldx(B, ib, h)) \
                     : EW_##code##_DA(g, ldx(A, ia, h), ldx(B, ib, h));
        ACC_EW_BINARY_OPS(BINARY_BWD)
#undef BINARY_BWD
    default: return 0.0f;
    }
}

/* Step j of the reduction an element of x makes over the out elements it
 * reaches (x's coordinates xc; x broadcasts along the dims where xd differs
 * from out's od, which j enumerates in out order): the out element's index,
 * and its offsets by the strides s1 and s2 into *o1 and *o2. */
DEVFN long long bcast_reach(const long long *xc, const long long *xd, const long long *od, long long j,
                            const long long *s1, long long *o1, const long long *s2, long long *o2) {
    long long q = j, o = 0, ostride = 1, a = 0, b = 0;
    for (int k = 5; k >= 0; k--) {
        long long c = xc[k];
        if (xd[k] != od[k]) {
            c = q % od[k];
            q /= od[k];
        }
        o += c * ostride;
        ostride *= od[k];
        a += c * s1[k];
        b += c * s2[k];
    }
    *o1 = a, *o2 = b;
    return o;
}

/* The gradient of x = (a if which == 0 else b) of a broadcasting binary op
 * where x is not a suffix of out's shape (ops.c sends those to
 * ck_col_reduce): one thread per element of x sums the out elements it
 * reaches, in order; without broadcasting, one out element each.
 * p0 dx, p1 dout, p2 a, p3 b; i0 elements of x, i1 op, i2 which,
 * i3..i8 out dims, i9..i14 x dims (padded; 1 where x broadcasts),
 * i15..i20 a strides, i21..i26 b strides over out's dims, i27 bf16 (every
 * tensor; the sum runs in float and dx rounds once). */
KERNEL ck_binary_bwd(acc_kargs a) {
    float *dx = a.p[0];
    const float *dy = a.p[1], *A = a.p[2], *B = a.p[3];
    int op = (int)a.i[1], which = (int)a.i[2], h = (int)a.i[27];
    const long long *od = &a.i[3], *xd = &a.i[9], *as = &a.i[15], *bs = &a.i[21];
    long long nred = 1;
    for (int k = 0; k < 6; k++)
        if (xd[k] != od[k]) nred *= od[k];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        if (nred == 1 && !binary_reads(op)) { /* same shape, add or sub: no index arithmetic */
            stx(dx, i, ldx(dx, i, h) + binary_grad(op, which, ldx(dy, i, h), A, B, 0, 0, h), h);
            continue;
        }
        long long xc[6], r = i;
        for (int k = 5; k >= 0; k--) {
            xc[k] = r % xd[k];
            r /= xd[k];
        }
        float acc = 0.0f;
        for (long long j = 0; j < nred; j++) {
            long long ia, ib, o = bcast_reach(xc, xd, od, j, as, &ia, bs, &ib);
            acc += binary_grad(op, which, ldx(dy, o, h), A, B, ia, ib, h);
        }
        stx(dx, i, ldx(dx, i, h) + acc, h);
    }
}

/* where's condition at element k: an int32 mask (ci) or a float one of the
 * element type (h); nonzero (NaN too) picks a */
DEVFN int where_cond(const float *c, long long k, int ci, int h) {
    return ci ? ((const int *)c)[k] != 0 : ldx(c, k, h) != 0.0f;
}

/* p0 out, p1 cond, p2 a, p3 b; i0 n, i1 int32 cond, i2 bf16 (out, a, b and
 * a float cond), i3..i8 out dims (six, padded), i9..i14 cond's strides,
 * i15..i20 a's, i21..i26 b's over out's dims (0: broadcast).
 * out = cond != 0 ? a : b. */
KERNEL ck_where_fwd(acc_kargs a) {
    int small = SMALL(a.i[0]), ci = (int)a.i[1], h = (int)a.i[2];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        long long ic = 0, ia = 0, ib = 0, unused = 0;
        idx6(i, &a.i[3], &a.i[9], &a.i[15], small, &ic, &ia);
        idx6(i, &a.i[3], &a.i[21], &a.i[21], small, &ib, &unused);
        stx(a.p[0], i, where_cond(a.p[1], ic, ci, h) ? ldx(a.p[2], ia, h) : ldx(a.p[3], ib, h), h);
    }
}

/* The gradient of x (a if pick, else b) of where: one thread per element of
 * x sums, in out order and in float, dout over the out elements it reaches
 * where the condition picks x, and adds it to dx (rounded once): the CPU's
 * where_grad, the same order. p0 dx, p1 dout, p2 cond; i0 elements of x,
 * i1 int32 cond, i2 bf16 (dx, dout, a float cond), i3 pick, i4..i9 out dims,
 * i10..i15 x dims (padded; 1 where x broadcasts), i16..i21 cond's strides
 * over out's dims. */
KERNEL ck_where_bwd(acc_kargs a) {
    int ci = (int)a.i[1], h = (int)a.i[2], pick = (int)a.i[3];
    const long long *od = &a.i[4], *xd = &a.i[10], *cs = &a.i[16];
    long long nred = 1;
    for (int k = 0; k < 6; k++)
        if (xd[k] != od[k]) nred *= od[k];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        long long xc[6], r = i;
        for (int k = 5; k >= 0; k--) {
            xc[k] = r % xd[k];
            r /= xd[k];
        }
        float acc = 0.0f;
        for (long long j = 0; j < nred; j++) {
            long long ic, o = bcast_reach(xc, xd, od, j, cs, &ic, cs, &ic);
            if (where_cond(a.p[2], ic, ci, h) == pick) acc += ldx(a.p[1], o, h);
        }
        stx(a.p[0], i, ldx(a.p[0], i, h) + acc, h);
    }
}

/* element i of dropout(x) with keep probability 1-p: x / (1-p) or 0 */
DEVFN float dropout_at(float x, float p, long long seed, long long step, long long op_id, long long i) {
    float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    float u = philox_uniform((uint64_t)seed, (uint32_t)step, (uint32_t)op_id, (uint64_t)i);
    return p == 0.0f ? x : (u >= p ? x * scale : 0.0f);
}

/* p0 out, p1 x, p[KA_SCALARS_P] the step's seed and counter; i0 n, i3 op
 * id, i4 accumulate (the backward), i5 bf16; f0 p. out (+)= x / (1-p) where
 * philox_uniform(...) >= p, else 0: the mask of the CPU target, bit for bit. */
KERNEL ck_dropout(acc_kargs a) {
    float *y = a.p[0];
    const float *x = a.p[1];
    const acc_kscalars *sc = (const acc_kscalars *)a.p[KA_SCALARS_P];
    long long seed = (long long)sc->seed, step = sc->step;
    int h = (int)a.i[5];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        float v = dropout_at(ldx(x, i, h), a.f[0], seed, step, a.i[3], i);
        if (a.i[4]) stx(y, i, ldx(y, i, h) + v, h);
        else stx(y, i, v, h);
    }
}

/* p0 out, p1 x; i0 B, i1 T, i2 H, i3 D, i4 backward (rotate back and
 * accumulate), i5 bf16; f0 theta. One thread per (b, t, h, i < D/2) pair. */
KERNEL ck_rope(acc_kargs a) {
    float *y = a.p[0];
    const float *x = a.p[1];
    long long T = a.i[1], H = a.i[2], D = a.i[3], half = D / 2, n = a.i[0] * T * H * half;
    for (long long e = GSTART; e < n; e += GSTRIDE) {
        long long i = e % half, h = (e / half) % H, t = (e / (half * H)) % T, bt = e / (half * H);
        double freq = pow((double)a.f[0], -2.0 * (double)i / (double)D), ang = (double)t * freq;
        float cs = (float)cos(ang), sn = (float)sin(ang) * (a.i[4] ? -1.0f : 1.0f);
        long long o = bt * H * D + h * D + i;
        int hb = (int)a.i[5];
        float x1 = ldx(x, o, hb), x2 = ldx(x, o + half, hb), y1 = x1 * cs - x2 * sn, y2 = x2 * cs + x1 * sn;
        if (a.i[4]) {
            stx(y, o, ldx(y, o, hb) + y1, hb);
            stx(y, o + half, ldx(y, o + half, hb) + y2, hb);
        } else {
            stx(y, o, y1, hb);
            stx(y, o + half, y2, hb);
        }
    }
}

/* The inputs of a chain op (the ew column of the op table, acc_ops.h). */
DEVFN int ew_arity(int op) {
    switch (op) {
#define EW_ARITY(code, name, ew) \
    case ACC_OP_##code: return ew;
        ACC_KERNEL_OPS(EW_ARITY)
#undef EW_ARITY
    default: return 0;
    }
}

/* A chain of elementwise ops in one pass (the fused forward of consecutive
 * steps, codegen/fuse.c): v = x[i], then per op k: v = op_k(v) or
 * v OP operand_k[i mod modulus_k] (operand OP v if right_k), out[i] = v.
 * p0 out, p1 x, p2.. the operands of ops 0.., p[KA_SCALARS_P] the step's
 * seed and counter; i0 n, i1 ops, i2 bf16 (x, out and the operands), and
 * per op k at i[4 + 4k]: op (ACC_OP_*), modulus, right, op id; f[k] the op's
 * parameter (scale's alpha, dropout's p). out may be x. In bf16 every op's
 * result is rounded, as the op's own kernel stores it (the CPU's chain). */
KERNEL ck_ew_chain(acc_kargs a) {
    int n_ops = (int)a.i[1], h = (int)a.i[2];
    const acc_kscalars *sc = (const acc_kscalars *)a.p[KA_SCALARS_P];
    long long n = a.i[0];
    float v[KA_VEC];
    for (long long i = VSTART; i < n; i += VSTRIDE) {
        ld8(a.p[1], i, n, h, v);
        for (int k = 0; k < n_ops; k++) {
            const long long *d = &a.i[4 + 4 * k];
            int op = (int)d[0];
            UNROLL for (int j = 0; j < KA_VEC; j++) {
                if (op == ACC_OP_DROPOUT) {
                    v[j] = dropout_at(v[j], a.f[k], (long long)sc->seed, sc->step, d[3], i + j);
                } else if (ew_arity(op) == 2) {
                    float o = i + j < n ? ldx(a.p[2 + k], (i + j) % d[1], h) : 0.0f;
                    v[j] = d[2] ? binary_op(op, o, v[j]) : binary_op(op, v[j], o);
                } else {
                    v[j] = unary_op(op, v[j], a.f[k]);
                }
                if (h && k + 1 < n_ops) v[j] = bf16_widen(bf16_round(v[j]));
            }
        }
        st8(a.p[0], i, n, h, v);
    }
}

/* ---- embedding ----------------------------------------------------------- */

/* p0 out (N, C), p1 idx (N, int32), p2 table (V, C, float); i0 N, i1 V, i2 C,
 * i3 bf16 (out) */
KERNEL ck_embedding_fwd(acc_kargs a) {
    float *out = a.p[0];
    const int *idx = (const int *)a.p[1];
    const float *table = a.p[2];
    long long C = a.i[2];
    int h = (int)a.i[3];
    for (long long e = GSTART; e < a.i[0] * C; e += GSTRIDE) {
        long long n = e / C, c = e % C, v = idx[n];
        stx(out, e, v >= 0 && v < a.i[1] ? table[v * C + c] : 0.0f, h);
    }
}

/* The embedding gradient without atomics, in two launches. ck_embedding_sort
 * (one block) sorts the token positions by token id, stably (a binary radix
 * sort, one bit per pass, ids out of range last), into the scratch region;
 * ck_embedding_bwd gives each run of equal ids to one warp, whose lanes
 * walk the run's columns adding the rows in token order:
 * dtable[v, c] += dout[n, c] for the n with idx[n] = v, in increasing n,
 * the order of the CPU target.
 * ck_embedding_sort: p0 scratch (4 N ints: keys, positions, and their
 * copies), p1 idx; i0 N, i1 V, i2 bits (ceil(log2(V + 1))). The sorted
 * keys and positions end in the first two N-int arrays. */
KERNEL ck_embedding_sort(acc_kargs a) {
    __shared__ int scan[2][KA_BLOCK];
    long long N = a.i[0], V = a.i[1], per = (N + KA_BLOCK - 1) / KA_BLOCK;
    int *key = (int *)a.p[0], *pos = key + N, *key2 = key + 2 * N, *pos2 = key + 3 * N;
    const int *idx = (const int *)a.p[1];
    int t = threadIdx.x;
    long long lo = t * per < N ? t * per : N, hi = lo + per < N ? lo + per : N;
    for (long long i = lo; i < hi; i++) {
        int v = idx[i];
        key[i] = v >= 0 && v < V ? v : (int)V;
        pos[i] = (int)i;
    }
    for (int bit = 0; bit < (int)a.i[2]; bit++) {
        int zeros = 0;
        for (long long i = lo; i < hi; i++) zeros += !((key[i] >> bit) & 1);
        /* exclusive prefix sum of zeros over the threads (Hillis-Steele) */
        int cur = 0;
        scan[0][t] = zeros;
        __syncthreads();
        for (int off = 1; off < KA_BLOCK; off <<= 1) {
            int v = scan[cur][t] + (t >= off ? scan[cur][t - off] : 0);
            scan[cur ^ 1][t] = v;
            cur ^= 1;
            __syncthreads();
        }
        int total = scan[cur][KA_BLOCK - 1], zb = scan[cur][t] - zeros;
        long long ob = total + (lo - zb); /* ones before this thread's first element */
        for (long long i = lo; i < hi; i++) {
            long long at = (key[i] >> bit) & 1 ? ob++ : zb++;
            key2[at] = key[i];
            pos2[at] = pos[i];
        }
        __syncthreads();
        for (long long i = lo; i < hi; i++) {
            key[i] = key2[i];
            pos[i] = pos2[i];
        }
        __syncthreads();
    }
}

/* p0 dtable (V, C), p1 dout (N, C), p2 sorted keys and positions (from
 * ck_embedding_sort); i0 N, i1 V, i2 C, i3 bf16 (dout). One warp per sorted
 * position; the warp at the start of a run of a valid id does the run. */
KERNEL ck_embedding_bwd(acc_kargs a) {
    long long N = a.i[0], V = a.i[1], C = a.i[2];
    int h = (int)a.i[3];
    const int *key = (const int *)a.p[2], *pos = key + N;
    for (long long e = GSTART; e < N * 32; e += GSTRIDE) {
        long long i = e / 32, lane = e % 32, v = key[i];
        if (v >= V || (i > 0 && key[i - 1] == v)) continue;
        for (long long c = lane; c < C; c += 32) {
            float s = a.p[0][v * C + c];
            for (long long j = i; j < N && key[j] == v; j++) s += ldx(a.p[1], (long long)pos[j] * C + c, h);
            a.p[0][v * C + c] = s;
        }
    }
}

/* ---- reductions ----------------------------------------------------------- */

/* Column reductions in two stages. A tensor viewed as (outer, R, K) is
 * summed over its R rows into (outer, K): a block task owns 32 columns (one
 * per lane) of one chunk of rows, each of its KA_BLOCK/32 warps sums the
 * chunk's rows w, w + warps, ... with four accumulators, and the warps' sums
 * meet in shared memory in warp order. With one chunk the block stores the
 * result itself; with more, each task writes its partial sums to the
 * scratch region (the planned workspace) and ck_col_final adds the chunks
 * of each column in order. The chunking is chosen by ops.c from the shape
 * alone, so the order of every sum, and the result, is the same on every
 * run, GPU and plan. Modes (i5): COL_SUM v = dy; COL_BINARY v =
 * binary_grad(op, which, ...); COL_LAYERNORM v0 = dy xhat, v1 = dy (the
 * weight and bias gradients); COL_RMSNORM v0 = dy x rstd.
 * p0 dst0, p1 dst1 (layernorm's bias gradient, else NULL), p2 partial sums,
 * p3 dy, p4 a (the norms' x), p5 b (the norms' stats); i0 outer, i1 R, i2 K,
 * i3 chunks, i4 rows per chunk, i5 mode, i6 op, i7 which, i8 store
 * (COL_SET, COL_ADD), i9..i14 out dims, i15..i20 a strides, i21..i26 b
 * strides (COL_BINARY with mul or div), i27 bf16 of the element-type inputs
 * (dy; a, and b for COL_BINARY), i28 bf16 of dst0 (COL_BINARY's gradient:
 * the sum runs in float and is rounded once, when stored); f0 scale
 * (applied to the sum). */
#define COL_WARPS (KA_BLOCK / 32)

DEVFN void col_value(const acc_kargs *a, long long o, long long r, float *v0, float *v1) {
    int h = (int)a->i[27];
    float g = ldx(a->p[3], o, h);
    const float *x = a->p[4], *st = a->p[5];
    switch ((int)a->i[5]) {
    case COL_SUM: *v0 = g; break;
    case COL_BINARY: {
        long long ia = 0, ib = 0;
        if (binary_reads((int)a->i[6]))
            idx6(o, &a->i[9], &a->i[15], &a->i[21], SMALL(a->i[0] * a->i[1] * a->i[2]), &ia, &ib);
        *v0 = binary_grad((int)a->i[6], (int)a->i[7], g, x, st, ia, ib, h);
        break;
    }
    case COL_LAYERNORM:
        *v0 = g * (ldx(x, o, h) - st[2 * r]) * st[2 * r + 1];
        *v1 = g;
        break;
    default: *v0 = g * ldx(x, o, h) * st[r]; break;
    }
}

/* dst[at] = s or dst[at] += s; h: dst is bf16 */
DEVFN void col_store(float *dst, long long at, float s, long long store, int h) {
    if (!dst) return;
    if (store == COL_ADD) stx(dst, at, ldx(dst, at, h) + s, h);
    else stx(dst, at, s, h);
}

KERNEL ck_col_reduce(acc_kargs a) {
    __shared__ float sh[2][COL_WARPS][33];
    long long R = a.i[1], K = a.i[2], chunks = a.i[3], rows = a.i[4];
    long long tiles = (K + 31) / 32, tasks = a.i[0] * chunks * tiles;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (long long t = blockIdx.x; t < tasks; t += gridDim.x) {
        long long tile = t % tiles, c = (t / tiles) % chunks, ob = t / (tiles * chunks);
        long long k = tile * 32 + lane, r0 = c * rows, r1 = r0 + rows < R ? r0 + rows : R;
        float s0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (k < K) {
            long long r = r0 + w;
            for (; r + 3 * COL_WARPS < r1; r += 4 * COL_WARPS) UNROLL for (int u = 0; u < 4; u++) {
                    float v0 = 0.0f, v1 = 0.0f;
                    long long ru = r + u * COL_WARPS;
                    col_value(&a, (ob * R + ru) * K + k, ru, &v0, &v1);
                    s0[u] += v0;
                    s1[u] += v1;
                }
            UNROLL for (int u = 0; u < 3; u++) { /* the last rows (fewer than 4): constant indices */
                long long ru = r + u * COL_WARPS;
                float v0 = 0.0f, v1 = 0.0f;
                if (ru < r1) col_value(&a, (ob * R + ru) * K + k, ru, &v0, &v1);
                s0[u] += v0;
                s1[u] += v1;
            }
        }
        __syncthreads(); /* the previous task has read sh */
        sh[0][w][lane] = (s0[0] + s0[1]) + (s0[2] + s0[3]);
        sh[1][w][lane] = (s1[0] + s1[1]) + (s1[2] + s1[3]);
        __syncthreads();
        if (w == 0 && k < K) {
            float t0 = 0.0f, t1 = 0.0f;
            for (int j = 0; j < COL_WARPS; j++) {
                t0 += sh[0][j][lane];
                t1 += sh[1][j][lane];
            }
            if (chunks == 1) {
                col_store(a.p[0], ob * K + k, t0 * a.f[0], a.i[8], (int)a.i[28]);
                col_store(a.p[1], ob * K + k, t1 * a.f[0], a.i[8], 0);
            } else {
                long long at = (ob * chunks + c) * K + k;
                a.p[2][at] = t0;
                if (a.p[1]) a.p[2][a.i[0] * chunks * K + at] = t1;
            }
        }
    }
}

/* The second stage: one thread per (outer, column) adds its chunks' partial
 * sums in chunk order. p0 dst0, p1 dst1, p2 partial sums; i0 outer, i2 K,
 * i3 chunks, i8 store, i28 bf16 of dst0; f0 scale. */
KERNEL ck_col_final(acc_kargs a) {
    long long K = a.i[2], chunks = a.i[3], n = a.i[0] * K;
    for (long long e = GSTART; e < n; e += GSTRIDE) {
        long long ob = e / K, k = e % K;
        for (int ch = 0; ch < 2; ch++) {
            float *dst = a.p[ch];
            if (!dst) continue;
            const float *part = a.p[2] + ch * n * chunks + ob * chunks * K + k;
            float s = 0.0f;
            for (long long c = 0; c < chunks; c++) s += part[c * K];
            col_store(dst, e, s * a.f[0], a.i[8], ch ? 0 : (int)a.i[28]);
        }
    }
}


/* p0 out (outer, inner, float), p1 x (outer, n, inner); i0 outer, i1 n,
 * i2 inner, i3 bf16 (x); f0 scale (1 for sum, 1/n for mean). One block per
 * output element. */
KERNEL ck_reduce_fwd(acc_kargs a) {
    __shared__ float sh[32];
    float *out = a.p[0];
    const float *x = a.p[1];
    long long n = a.i[1], inner = a.i[2];
    int h = (int)a.i[3];
    for (long long o = blockIdx.x; o < a.i[0] * inner; o += gridDim.x) {
        long long x0 = (o / inner) * n * inner + o % inner;
        float s = 0.0f;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) s += ldx(x, x0 + j * inner, h);
        s = block_sum(s, sh);
        if (threadIdx.x == 0) out[o] = s * a.f[0];
    }
}

/* p0 dx, p1 dout (float); i0 outer, i1 n, i2 inner, i3 bf16 (dx); f0 scale.
 * dx += dout * scale, broadcast over the reduced axis. */
KERNEL ck_reduce_bwd(acc_kargs a) {
    float *dx = a.p[0];
    const float *dy = a.p[1];
    long long n = a.i[1], inner = a.i[2];
    int h = (int)a.i[3];
    for (long long e = GSTART; e < a.i[0] * n * inner; e += GSTRIDE)
        stx(dx, e, ldx(dx, e, h) + dy[(e / (n * inner)) * inner + e % inner] * a.f[0], h);
}

/* max (i3 sign 1) and min (-1) over the middle axis of x (outer, n, inner),
 * one thread per column: the first index holding the extreme, or the first
 * NaN (cpu_kernels_shape.c's arg_extreme, the same walk). p0 out (forward)
 * or dx (backward), p1 x, p2 dout (backward); i0 outer * inner, i1 n,
 * i2 inner, i3 sign, i4 backward, i5 bf16 (every tensor). Forward: out =
 * the element; backward: dx[arg] += dout. */
KERNEL ck_argreduce(acc_kargs a) {
    long long n = a.i[1], inner = a.i[2];
    int h = (int)a.i[5];
    for (long long e = GSTART; e < a.i[0]; e += GSTRIDE) {
        long long base = (e / inner) * n * inner + e % inner, arg = 0;
        float best = ldx(a.p[1], base, h);
        for (long long j = 1; j < n && best == best; j++) {
            float v = ldx(a.p[1], base + j * inner, h);
            if (v != v || (a.i[3] > 0 ? v > best : v < best)) best = v, arg = j;
        }
        long long at = base + arg * inner;
        if (a.i[4]) stx(a.p[0], at, ldx(a.p[0], at, h) + ldx(a.p[2], e, h), h);
        else stx(a.p[0], e, best, h);
    }
}

/* ---- normalisation and softmax (one block per row) ------------------------- */

/* The norms, softmax and cross-entropy keep their statistics and sums in
 * float; their element-type tensors (x, y, dx, dy, logits) are f32 or bf16
 * by the flag i2 (ldx, stx). */

/* p0 y, p1 stats (N, 2) = (mean, rstd), p2 x, p3 w, p4 b (NULL: no bias, as
 * + 0); i0 N, i1 C, i2 bf16; f0 eps */
KERNEL ck_layernorm_fwd(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    int h = (int)a.i[2];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        const float *x = a.p[2];
        long long r = n * C;
        float s = 0.0f, v[KA_VEC], w[KA_VEC], b[KA_VEC];
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) {
            ld8(x, r + c, r + C, h, v);
            UNROLL for (int j = 0; j < KA_VEC; j++) s += v[j];
        }
        float mean = block_sum(s, sh) / (float)C;
        s = 0.0f;
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) {
            ld8(x, r + c, r + C, h, v);
            UNROLL for (int j = 0; j < KA_VEC; j++) if (c + j < C) s += (v[j] - mean) * (v[j] - mean);
        }
        float rstd = 1.0f / sqrtf(block_sum(s, sh) / (float)C + a.f[0]);
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) {
            ld8(x, r + c, r + C, h, v);
            ld8(a.p[3], c, C, 0, w);
            if (a.p[4]) ld8(a.p[4], c, C, 0, b);
            UNROLL for (int j = 0; j < KA_VEC; j++) v[j] = (v[j] - mean) * rstd * w[j] + (a.p[4] ? b[j] : 0.0f);
            st8(a.p[0], r + c, r + C, h, v);
        }
        if (threadIdx.x == 0) {
            a.p[1][2 * n] = mean;
            a.p[1][2 * n + 1] = rstd;
        }
    }
}

/* p0 dx, p1 dy, p2 x, p3 w, p4 stats; i0 N, i1 C, i2 bf16.
 * dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w. */
KERNEL ck_layernorm_bwd_dx(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    const float *w = a.p[3], *x = a.p[2], *dy = a.p[1];
    int h = (int)a.i[2];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        long long r = n * C;
        float mean = a.p[4][2 * n], rstd = a.p[4][2 * n + 1];
        float s1 = 0.0f, s2 = 0.0f, g[KA_VEC], xv[KA_VEC], wv[KA_VEC], v[KA_VEC];
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) { /* past the row: g = 0 */
            ld8(dy, r + c, r + C, h, g);
            ld8(x, r + c, r + C, h, xv);
            ld8(w, c, C, 0, wv);
            UNROLL for (int j = 0; j < KA_VEC; j++) {
                s1 += g[j] * wv[j];
                s2 += g[j] * wv[j] * (xv[j] - mean) * rstd;
            }
        }
        s1 = block_sum(s1, sh) / (float)C;
        s2 = block_sum(s2, sh) / (float)C;
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) {
            ld8(dy, r + c, r + C, h, g);
            ld8(x, r + c, r + C, h, xv);
            ld8(w, c, C, 0, wv);
            ld8(a.p[0], r + c, r + C, h, v);
            UNROLL for (int j = 0; j < KA_VEC; j++) v[j] += rstd * (g[j] * wv[j] - s1 - (xv[j] - mean) * rstd * s2);
            st8(a.p[0], r + c, r + C, h, v);
        }
    }
}

/* p0 y, p1 stats (N) = rstd, p2 x, p3 w; i0 N, i1 C, i2 bf16; f0 eps */
KERNEL ck_rmsnorm_fwd(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    const float *x = a.p[2];
    int h = (int)a.i[2];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        long long r = n * C;
        float s = 0.0f, v[KA_VEC], w[KA_VEC];
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) {
            ld8(x, r + c, r + C, h, v);
            UNROLL for (int j = 0; j < KA_VEC; j++) s += v[j] * v[j];
        }
        float rstd = 1.0f / sqrtf(block_sum(s, sh) / (float)C + a.f[0]);
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) {
            ld8(x, r + c, r + C, h, v);
            ld8(a.p[3], c, C, 0, w);
            UNROLL for (int j = 0; j < KA_VEC; j++) v[j] = v[j] * rstd * w[j];
            st8(a.p[0], r + c, r + C, h, v);
        }
        if (threadIdx.x == 0) a.p[1][n] = rstd;
    }
}

/* p0 dx, p1 dy, p2 x, p3 w, p4 stats; i0 N, i1 C, i2 bf16.
 * dx += rstd * g - x * rstd^3 * mean(g * x), g = dy * w. */
KERNEL ck_rmsnorm_bwd_dx(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    const float *w = a.p[3], *x = a.p[2], *dy = a.p[1];
    int h = (int)a.i[2];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        long long r = n * C;
        float rstd = a.p[4][n], s = 0.0f, g[KA_VEC], xv[KA_VEC], wv[KA_VEC], v[KA_VEC];
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) {
            ld8(dy, r + c, r + C, h, g);
            ld8(x, r + c, r + C, h, xv);
            ld8(w, c, C, 0, wv);
            UNROLL for (int j = 0; j < KA_VEC; j++) s += g[j] * wv[j] * xv[j];
        }
        s = block_sum(s, sh) / (float)C;
        for (long long c = ROW_START; c < C; c += ROW_STRIDE) {
            ld8(dy, r + c, r + C, h, g);
            ld8(x, r + c, r + C, h, xv);
            ld8(w, c, C, 0, wv);
            ld8(a.p[0], r + c, r + C, h, v);
            UNROLL for (int j = 0; j < KA_VEC; j++) v[j] += rstd * g[j] * wv[j] - xv[j] * rstd * rstd * rstd * s;
            st8(a.p[0], r + c, r + C, h, v);
        }
    }
}

/* p0 y, p1 x (y may alias x); i0 N, i1 C, i2 bf16 */
KERNEL ck_softmax_fwd(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    const float *x = a.p[1];
    int h = (int)a.i[2];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        long long r = n * C;
        float m = NEG_INF, s = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) online_add(&m, &s, ldx(x, r + c, h));
        s = block_online(m, s, sh, &m);
        for (long long c = threadIdx.x; c < C; c += blockDim.x) stx(a.p[0], r + c, expf(ldx(x, r + c, h) - m) / s, h);
    }
}

/* p0 dx, p1 dy, p2 y; i0 N, i1 C, i2 bf16. dx += y * (dy - sum(dy * y)) */
KERNEL ck_softmax_bwd(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    const float *dy = a.p[1], *y = a.p[2];
    int h = (int)a.i[2];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        long long r = n * C;
        float s = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) s += ldx(dy, r + c, h) * ldx(y, r + c, h);
        s = block_sum(s, sh);
        for (long long c = threadIdx.x; c < C; c += blockDim.x)
            stx(a.p[0], r + c, ldx(a.p[0], r + c, h) + ldx(y, r + c, h) * (ldx(dy, r + c, h) - s), h);
    }
}

/* ---- cross-entropy ----------------------------------------------------------- */

/* p0 lse (N), p1 logits (N, V); i0 N, i1 V, i2 bf16 (logits).
 * lse[n] = logsumexp(logits[n]) */
KERNEL ck_xent_lse(acc_kargs a) {
    __shared__ float sh[32];
    long long V = a.i[1];
    int h = (int)a.i[2];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        long long r = n * V;
        float m = NEG_INF, s = 0.0f;
        for (long long c = threadIdx.x; c < V; c += blockDim.x) online_add(&m, &s, ldx(a.p[1], r + c, h));
        s = block_online(m, s, sh, &m); /* one pass over the row */
        if (threadIdx.x == 0) a.p[0][n] = m + logf(s);
    }
}

/* p0 loss (1), p1 lse, p2 logits, p3 targets (int32); i0 N, i1 V, i2 bf16
 * (logits). One block: loss = mean over n of lse[n] - logits[n, targets[n]]. */
KERNEL ck_xent_loss(acc_kargs a) {
    __shared__ float sh[32];
    const int *tg = (const int *)a.p[3];
    int h = (int)a.i[2];
    float s = 0.0f;
    for (long long n = threadIdx.x; n < a.i[0]; n += blockDim.x) {
        long long t = tg[n];
        if (t >= 0 && t < a.i[1]) s += a.p[1][n] - ldx(a.p[2], n * a.i[1] + t, h);
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0 && blockIdx.x == 0) a.p[0][0] = s / (float)a.i[0];
}

/* p0 dlogits, p1 dloss (1), p2 logits, p3 lse, p4 targets; i0 N, i1 V, i2
 * bf16 (logits, dlogits). dlogits += dloss * (softmax(logits) - onehot(target))
 * / N. A block per row (no division per element). */
KERNEL ck_xent_bwd(acc_kargs a) {
    const int *tg = (const int *)a.p[4];
    long long V = a.i[1];
    float k = a.p[1][0] / (float)a.i[0];
    int h = (int)a.i[2];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        long long r = n * V;
        float lse = a.p[3][n];
        long long t = tg[n];
        for (long long c = threadIdx.x; c < V; c += blockDim.x)
            stx(a.p[0], r + c, ldx(a.p[0], r + c, h) + k * (expf(ldx(a.p[2], r + c, h) - lse) - (c == t ? 1.0f : 0.0f)),
                h);
    }
}

/* ---- attention ------------------------------------------------------------------ */

/* Layouts (runtime/cpu_kernels.h, k_attention_fwd/bwd): q, out, dq, dout
 * (B, T, H*D); k, v, dk, dv (B, S, KVH*D); lse (B, H, T). Query head h reads
 * kv head h / (H/KVH); scale 1/sqrt(D); causal: query t sees keys s <= t.
 * Integers of every attention kernel: i0 B, i1 T, i2 S, i3 H, i4 KVH, i5 D,
 * i6 causal. */

/* -- tiled (D <= KA_ATT_TILE_D) ---------------------------------------------------
 * A block of 4 warps owns a tile of query rows (forward, dq) or of key rows
 * (dk/dv) and walks the other side tile by tile through static shared memory
 * (at most 44 KiB). A score is one lane's whole dot product over shared
 * memory, no shuffles; the warp reduces only once per row and key tile (the
 * online softmax's max). Probabilities pass to the accumulation through
 * shared memory, where each lane owns the ATT_NC output columns
 * c = lane + 32 j. Tiles hold D4 = D rounded up to 4 columns, zero past D and
 * past their last valid row, so dot products run in float4 steps. A tile
 * whose rows the lanes of a warp read several at a time has row stride
 * ATT_KS (a float4 read of 8 rows by a quarter warp hits 8 distinct groups of
 * 4 banks); one whose rows a warp reads one at a time (in broadcast, or
 * consecutive columns) has stride KA_ATT_TILE_D.
 * Every sum runs in an order fixed by the tile sizes: no atomics. */

#define ATT_TK 32                     /* keys per tile of fwd and dq: one per lane */
#define ATT_KS (KA_ATT_TILE_D + 4)    /* row stride of the tiles lanes read several rows of */
#define ATT_NC (KA_ATT_TILE_D / 32)   /* output columns per lane */
#define ATT_FR (KA_ATT_FWD_ROWS / 4)  /* query rows per warp, forward */
#define ATT_QR (KA_ATT_DQ_ROWS / 4)   /* query rows per warp, dq */
#define ATT_KR (KA_ATT_DKDV_KEYS / 4) /* key rows per warp, dk/dv (8: lane % 8 picks one) */
#define ATT_DT 8                      /* query rows per step of dk/dv (lane / 8 picks two) */
#if KA_ATT_THREADS != 128 || KA_ATT_FWD_ROWS % 4 || KA_ATT_DQ_ROWS % 4 || KA_ATT_DKDV_KEYS != 32 || KA_ATT_TILE_D % 32
#error "the tiled attention kernels are written for 4 warps, 8 keys per warp in dk/dv, whole columns per lane"
#endif

DEVFN kf4 ld4(const float *p) { return *(const kf4 *)p; }

DEVFN float dot4(float s, kf4 x, kf4 y) { return s + x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w; }

DEVFN float f4_get(kf4 v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

/* Stage rows [0, n) of a global (., D) matrix with row stride ld into a
 * shared tile of `rows` rows, row stride ls, columns [0, D4): zeros past row
 * n and column D. Warps take rows in turn, lanes consecutive columns. */
DEVFN void att_load(float *dst, int ls, int rows, const float *src, long long ld, int n, int D, int D4, int h) {
    int lane = threadIdx.x & 31, nw = (int)(blockDim.x >> 5);
    for (int j = (int)(threadIdx.x >> 5); j < rows; j += nw)
        for (int d = lane; d < D4; d += 32) dst[j * ls + d] = j < n && d < D ? ldx(src, j * ld + d, h) : 0.0f;
}

/* Asynchronous staging (cp.async, sm_80 and later): att_stage starts the
 * copy of rows [0, n) of a global (., D) matrix with row stride ld into a
 * shared tile of `rows` rows, row stride ls, columns [0, D), zeros past row
 * n, 16 bytes a copy, and returns at once: the copy lands while the block
 * computes on other data. att_stage_wait() waits for every copy the thread
 * started; a __syncthreads after it shows them to the block. Columns past D
 * are not written (a kernel zeroes them once). Rows that are not 16-byte
 * aligned (D or ld not a multiple of 4) are copied at once, as att_load
 * does. The emulator fills a copy's destination with NaN until the wait
 * (emu.c), so a missing wait or barrier shows there as a wrong result. */

/* One cp.async of `size` bytes (16 or 4) from global src to shared dst, the
 * part past `bytes` zero-filled (bytes 0: zeros, src not read). */
DEVFN void cp_async(float *dst, const float *src, int size, int bytes) {
#ifdef __CUDACC__
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    if (size == 16) /* bypassing L1 (.cg takes 16 bytes only) */
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(bytes) : "memory");
    else asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(src), "r"(bytes) : "memory");
#else
    emu_cp_async(dst, src, size, bytes);
#endif
}

DEVFN void att_stage_wait(void) {
#ifdef __CUDACC__
    asm volatile("cp.async.wait_all;" ::: "memory");
#else
    emu_cp_async_wait();
#endif
}

DEVFN void att_stage(float *dst, int ls, int rows, const float *src, long long ld, int n, int D, int h) {
    if (h || (D & 3) || (ld & 3) || ((unsigned long long)src & 15)) {
        att_load(dst, ls, rows, src, ld, n, D, D, h);
        return;
    }
    int q = D >> 2;
    for (int e = (int)threadIdx.x; e < rows * q; e += (int)blockDim.x) {
        int j = e / q, c = 4 * (e - j * q);
        cp_async(dst + j * ls + c, j < n ? src + j * ld + c : src, 16, j < n ? 16 : 0);
    }
}

/* Zero columns [D, D4) of a shared tile of `rows` rows, row stride ls. */
DEVFN void att_zero_cols(float *dst, int ls, int rows, int D, int D4) {
    for (int e = (int)threadIdx.x; e < rows * (D4 - D); e += (int)blockDim.x)
        dst[e / (D4 - D) * ls + D + e % (D4 - D)] = 0.0f;
}

/* delta[j] = dout_j . out_j for the rows [0, n) of a tile of `rows` rows (0
 * past n); global rows with stride ld. Warps take rows in turn. */
DEVFN void att_delta(float *delta, int rows, const float *dO, const float *O, long long ld, int n, int D, int h) {
    int lane = threadIdx.x & 31, nw = (int)(blockDim.x >> 5);
    for (int j = (int)(threadIdx.x >> 5); j < rows; j += nw) {
        float s = 0.0f;
        if (j < n)
            for (int d = lane; d < D; d += 32) s += ldx(dO, j * ld + d, h) * ldx(O, j * ld + d, h);
        s = warp_sum(s);
        if (lane == 0) delta[j] = s;
    }
}

/* p0 delta (B, H, T), p1 dout, p2 out; ints as every attention kernel. The
 * backward's delta = dout . out of every query row, once, for the dq and
 * dk/dv kernels (which otherwise recompute it per tile: dk/dv once per key
 * tile). One warp per row, the sum in att_delta's order. */
KERNEL ck_attention_delta(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    long long T = a.i[1], H = a.i[3], D = a.i[5];
    int lane = threadIdx.x & 31, nw = (int)(blockDim.x >> 5);
    for (long long r = (long long)blockIdx.x * nw + (threadIdx.x >> 5); r < a.i[0] * H * T;
         r += (long long)gridDim.x * nw) {
        long long t = r % T, h = (r / T) % H, b = r / (T * H), row = ((b * T + t) * H + h) * D;
        float s = 0.0f;
        for (long long d = lane; d < D; d += 32) s += ldx(a.p[1], row + d, hb) * ldx(a.p[2], row + d, hb);
        s = warp_sum(s);
        if (lane == 0) a.p[0][r] = s;
    }
}

/* The delta of a tile's rows [0, n) (0 past n, `rows` in all) of query head
 * h from t0: from ck_attention_delta's array when there is one (pre), else
 * computed here (att_delta). */
DEVFN void att_tile_delta(float *delta, int rows, const float *pre, long long pre0, const float *dO, const float *O,
                          long long ld, int n, int D, int h) {
    if (!pre) {
        att_delta(delta, rows, dO, O, ld, n, D, h);
        return;
    }
    for (int j = (int)threadIdx.x; j < rows; j += (int)blockDim.x) delta[j] = j < n ? pre[pre0 + j] : 0.0f;
}

/* Query tile `tile` of a grid over (b, h, tiles of `rows` query rows), the
 * last tiles of a head first (under a causal mask they see the most keys):
 * its batch b, head h, first row t0, valid rows qn, the offset kv0 of its kv
 * head in K and V, the offset row0 of its first row in q, and the keys it
 * sees, [0, send). */
typedef struct {
    long long b, h, t0, kv0, row0, send;
    int qn;
} AttTile;

DEVFN AttTile att_query_tile(const acc_kargs *a, long long tile, long long nqt, int rows) {
    long long T = a->i[1], S = a->i[2], H = a->i[3], KVH = a->i[4], D = a->i[5], bh = tile / nqt;
    AttTile q;
    q.h = bh % H;
    q.b = bh / H;
    q.t0 = (nqt - 1 - tile % nqt) * rows;
    q.kv0 = q.b * S * KVH * D + q.h / (H / KVH) * D;
    q.row0 = (q.b * T + q.t0) * H * D + q.h * D;
    q.qn = (int)(T - q.t0 < rows ? T - q.t0 : rows);
    q.send = a->i[6] && q.t0 + q.qn < S ? q.t0 + q.qn : S;
    return q;
}

/* Key tile `tile` of the dk/dv tensor-core kernels' grid over (b, kv head,
 * 64-key tiles): batch b, kv head kvh, first key s0, valid keys kn, the
 * offset krow0 of its first key in K and V, and the query rows it sees:
 * from tfirst, in nrt tiles of 32 per query head. */
typedef struct {
    long long b, kvh, s0, krow0, tfirst, nrt;
    int kn;
} AttKeyTile;

DEVFN AttKeyTile att_key_tile(const acc_kargs *a, long long tile, long long nkt) {
    long long T = a->i[1], S = a->i[2], KVH = a->i[4], D = a->i[5], bk = tile / nkt;
    AttKeyTile t;
    t.kvh = bk % KVH, t.b = bk / KVH, t.s0 = tile % nkt * 64;
    t.krow0 = (t.b * S + t.s0) * KVH * D + t.kvh * D;
    t.tfirst = a->i[6] ? t.s0 : 0, t.nrt = (T - t.tfirst + 31) / 32;
    t.kn = (int)(S - t.s0 < 64 ? S - t.s0 : 64);
    return t;
}

/* -- register-tiled forward (D <= KA_ATT_RT_D) -----------------------------------
 * The forward for the common head sizes (64 and below: GPT-2, Llama) with
 * the work of each thread held in registers, as in a GEMM's micro-tile. A
 * block of KA_ATT_THREADS threads owns RT_ROWS query rows of one (b, h),
 * staged once, and walks RT_KEYS-key tiles of K and V in two shared
 * buffers, each staged by cp.async while the block computes on the other (V
 * during the scores, the next K during O += P V). Thread (g = tid / 8, x = tid % 8) scores rows 4g..4g+3 against keys
 * x, x+8, x+16, x+24 (16 dot products: 8 FMAs per float4 read of shared
 * memory; a quarter warp reads 8 consecutive key rows, conflict-free with
 * the padded row stride), the 8 lanes of a row group reduce the row's max by
 * shuffles (the online softmax), the probabilities go through shared memory,
 * and the thread accumulates its 4 rows' output columns 4x..4x+3 and
 * 32+4x..32+4x+3 (again 8 FMAs per read). A row's sum stays split over its
 * 8 lanes until the end. No atomics: every sum in an order fixed by the
 * tile sizes. Shared memory: 44,032 bytes. */
#define RT_ROWS KA_ATT_RT_ROWS
#define RT_KEYS 32
#define RT_LD (KA_ATT_RT_D + 4) /* row stride of the query and key/value tiles */
#define RT_PL (RT_KEYS + 4)     /* row stride of the probabilities */
#if KA_ATT_THREADS != 128 || KA_ATT_RT_D != 64
#error "the register-tiled forward is written for 128 threads (16 row groups of 4, 8 lanes each) and D <= 64"
#endif

DEVFN float group8_max(float v) {
    for (int o = 4; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(K_FULL, v, o));
    return v;
}

DEVFN float group8_sum(float v) {
    for (int o = 4; o > 0; o >>= 1) v += __shfl_xor_sync(K_FULL, v, o);
    return v;
}

/* p0 out, p1 lse, p2 q, p3 k, p4 v; the last query tiles of a head first. */
KERNEL ck_attention_fwd_rt(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float qs[RT_ROWS * RT_LD];
    __shared__ KALIGN16 float ks[RT_KEYS * RT_LD], vs[RT_KEYS * RT_LD];
    __shared__ KALIGN16 float ps[RT_ROWS * RT_PL];
    long long T = a.i[1], H = a.i[3], KVH = a.i[4], qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], D4 = (D + 3) & ~3, causal = (int)a.i[6];
    int g = threadIdx.x >> 3, x = threadIdx.x & 7;
    float scale = 1.0f / sqrtf((float)D);
    long long nqt = (T + RT_ROWS - 1) / RT_ROWS;
    att_zero_cols(qs, RT_LD, RT_ROWS, D, D4);
    att_zero_cols(ks, RT_LD, RT_KEYS, D, D4);
    att_zero_cols(vs, RT_LD, RT_KEYS, D, D4);
    for (long long tile = blockIdx.x; tile < a.i[0] * H * nqt; tile += gridDim.x) {
        AttTile at = att_query_tile(&a, tile, nqt, RT_ROWS);
        long long b = at.b, h = at.h, t0 = at.t0, kv0 = at.kv0, send = at.send;
        int qn = at.qn;
        float m[4], l[4], o[4][8];
        UNROLL for (int i = 0; i < 4; i++) {
            m[i] = NEG_INF;
            l[i] = 0.0f;
            UNROLL for (int c = 0; c < 8; c++) o[i][c] = 0.0f;
        }
        __syncthreads(); /* the previous tile is done with qs, ks and vs */
        att_stage(qs, RT_LD, RT_ROWS, xp(a.p[2], (b * T + t0) * qld + h * D, hb), qld, qn, D, hb);
        att_stage(ks, RT_LD, RT_KEYS, xp(a.p[3], kv0, hb), kld, (int)(send < RT_KEYS ? send : RT_KEYS), D, hb);
        for (long long s0 = 0; s0 < send; s0 += RT_KEYS) {
            int kn = (int)(send - s0 < RT_KEYS ? send - s0 : RT_KEYS);
            att_stage_wait();
            __syncthreads(); /* qs and this K are staged; every thread is done with the last V */
            att_stage(vs, RT_LD, RT_KEYS, xp(a.p[4], kv0 + s0 * kld, hb), kld, kn, D, hb); /* lands during the scores */
            float sc[4][4];
            UNROLL for (int i = 0; i < 4; i++) UNROLL for (int j = 0; j < 4; j++) sc[i][j] = 0.0f;
            for (int d = 0; d < D4; d += 4) {
                kf4 k4[4];
                UNROLL for (int j = 0; j < 4; j++) k4[j] = ld4(ks + (x + 8 * j) * RT_LD + d);
                UNROLL for (int i = 0; i < 4; i++) {
                    kf4 q4 = ld4(qs + (4 * g + i) * RT_LD + d);
                    UNROLL for (int j = 0; j < 4; j++) sc[i][j] = dot4(sc[i][j], q4, k4[j]);
                }
            }
            UNROLL for (int i = 0; i < 4; i++) {
                long long t = t0 + 4 * g + i;
                float mx = NEG_INF, sum = 0.0f;
                UNROLL for (int j = 0; j < 4; j++) {
                    int key = x + 8 * j, ok = key < kn && (!causal || s0 + key <= t);
                    sc[i][j] = ok ? sc[i][j] * scale : NEG_INF;
                    mx = fmaxf(mx, sc[i][j]);
                }
                float mn = fmaxf(m[i], group8_max(mx)), corr = mn == NEG_INF ? 1.0f : expf(m[i] - mn);
                UNROLL for (int j = 0; j < 4; j++) {
                    float p = sc[i][j] == NEG_INF ? 0.0f : expf(sc[i][j] - mn);
                    ps[(4 * g + i) * RT_PL + x + 8 * j] = p;
                    sum += p;
                }
                m[i] = mn;
                l[i] = l[i] * corr + sum;
                UNROLL for (int c = 0; c < 8; c++) o[i][c] *= corr;
            }
            att_stage_wait();
            __syncthreads();           /* V is staged; every thread is done with K; the probabilities are written */
            if (s0 + RT_KEYS < send) { /* the next K lands during O += P V */
                long long s1 = s0 + RT_KEYS;
                att_stage(ks, RT_LD, RT_KEYS, xp(a.p[3], kv0 + s1 * kld, hb), kld,
                          (int)(send - s1 < RT_KEYS ? send - s1 : RT_KEYS), D, hb);
            }
            for (int j = 0; j < kn; j += 4) { /* rows past kn: zero in both tiles */
                kf4 p4[4];
                UNROLL for (int i = 0; i < 4; i++) p4[i] = ld4(ps + (4 * g + i) * RT_PL + j);
                UNROLL for (int jj = 0; jj < 4; jj++) {
                    kf4 v0 = ld4(vs + (j + jj) * RT_LD + 4 * x), v1 = ld4(vs + (j + jj) * RT_LD + 32 + 4 * x);
                    UNROLL for (int i = 0; i < 4; i++) {
                        float p = f4_get(p4[i], jj);
                        o[i][0] += p * v0.x, o[i][1] += p * v0.y, o[i][2] += p * v0.z, o[i][3] += p * v0.w;
                        o[i][4] += p * v1.x, o[i][5] += p * v1.y, o[i][6] += p * v1.z, o[i][7] += p * v1.w;
                    }
                }
            }
        }
        float *og = xp(a.p[0], (b * T + t0) * qld + h * D, hb);
        UNROLL for (int i = 0; i < 4; i++) {
            int r = 4 * g + i;
            float lt = group8_sum(l[i]);
            if (r >= qn) continue;
            UNROLL for (int c = 0; c < 8; c++) {
                int col = (c < 4 ? 4 * x : 32 + 4 * x) + (c & 3);
                if (col < D) stx(og, r * qld + col, lt > 0.0f ? o[i][c] / lt : 0.0f, hb);
            }
            if (x == 0) a.p[1][(b * H + h) * T + t0 + r] = m[i] + logf(lt);
        }
    }
}

/* -- tensor cores (--tf32): mma.sync m16n8k8 on TF32 -------------------------------
 * A warp multiplies a 16x8 tile of A by an 8x8 tile of B into a 16x8 tile
 * of C held in registers, in the layout of the PTX ISA ("Matrix Fragments
 * for mma.m16n8k8", .tf32): with gid = lane / 4 and tig = lane % 4, a lane
 * holds A[gid][tig], A[gid+8][tig], A[gid][tig+4], A[gid+8][tig+4];
 * B[tig][gid], B[tig+4][gid]; C[gid][2tig], C[gid][2tig+1], C[gid+8][2tig],
 * C[gid+8][2tig+1]. On the GPU that is one instruction; the emulator runs
 * the same operation by shuffles from the lanes that hold each element (so
 * a kernel that loads its fragments against that layout is checked), with
 * the operands rounded to TF32 as cvt.rna.tf32.f32 rounds them and the
 * products summed in FP32. */
DEVFN float tf32(float x) {
#ifdef __CUDACC__
    uint32_t u;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
    return __uint_as_float(u);
#else
    union {
        float f;
        uint32_t u;
    } v = {x};
    if ((v.u & 0x7f800000u) != 0x7f800000u) v.u = (v.u + 0x1000u) & 0xffffe000u; /* nearest, ties away */
    return v.f;
#endif
}

/* c += a b for the warp's fragments (operands already TF32) */
DEVFN void mma_tf32(float c[4], const float a[4], float b0, float b1) {
#ifdef __CUDACC__
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
                   "r"(__float_as_uint(a[3])), "r"(__float_as_uint(b0)), "r"(__float_as_uint(b1)));
#else
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    for (int k = 0; k < 8; k++) {
        /* A[gid][k], A[gid+8][k] from lane gid*4 + k%4; B[k][2tig], B[k][2tig+1] from lanes (2tig)*4 + k%4, ... */
        float alo = __shfl_sync(K_FULL, k < 4 ? a[0] : a[2], gid * 4 + (k & 3));
        float ahi = __shfl_sync(K_FULL, k < 4 ? a[1] : a[3], gid * 4 + (k & 3));
        float b_0 = __shfl_sync(K_FULL, k < 4 ? b0 : b1, 2 * tig * 4 + (k & 3));
        float b_1 = __shfl_sync(K_FULL, k < 4 ? b0 : b1, (2 * tig + 1) * 4 + (k & 3));
        c[0] += alo * b_0;
        c[1] += alo * b_1;
        c[2] += ahi * b_0;
        c[3] += ahi * b_1;
    }
#endif
}

/* The A fragment (TF32) of a 16x8 tile held as a C fragment c, for a
 * product that consumes it: A[row][tig (+4)] is element tig & 1 of quad lane
 * tig / 2 (+2), in the half of the row. */
DEVFN void tc_c_to_a(float pa[4], const float c[4], int lane) {
    int tig = lane & 3, src = (lane & ~3) | (tig >> 1);
    UNROLL for (int i = 0; i < 4; i++) { /* a0, a1: columns tig; a2, a3: tig + 4 */
        int from = src + 2 * (i >> 1), hi = i & 1;
        float e0 = __shfl_sync(K_FULL, c[2 * hi], from), e1 = __shfl_sync(K_FULL, c[2 * hi + 1], from);
        pa[i] = tf32(tig & 1 ? e1 : e0);
    }
}

/* The attention forward on tensor cores for head dimensions up to 64 that
 * are a multiple of 8, under --tf32. A block of 4 warps owns 64 query rows
 * (warp w rows 16w..16w+15, its Q fragments scaled by 1/sqrt(D) and kept in
 * registers) and walks 64-key tiles of K and V staged in shared memory
 * by cp.async, V while the scores are computed and the next K during
 * O += P V (strides chosen so the fragment loads are conflict-free). Per tile: the
 * warp's 16x64 scores by mma (the C layout tells each lane its rows gid and
 * gid+8), the online softmax on them in registers (a row's max over the 4
 * lanes of a quad), the output rescaled in registers, and O += P V by mma,
 * P's A fragments gathered from the score fragments by quad shuffles. */
#define TC_KLD (KA_ATT_RT_D + 4) /* K tile row stride: B[d][key] reads hit 32 banks */

/* The online softmax of a forward key tile on the warp's 16 x 64 score
 * fragments s (C layout; this lane's rows t and t + 8, keys s0 + 8nt + 2tig
 * (+1), [0, kn) of them in the tile): the scores times scale, masked (past
 * kn, and under causal past the row), each row's running max m and sum l
 * updated (the max over the 4 lanes of a quad), o rescaled, and s replaced
 * by the probabilities, in FP32. Shared by the TF32 and bf16 forwards. */
DEVFN void tc_softmax_tile(float s[8][4], float o[8][4], float m[2], float l[2], float scale, int kn, int causal,
                           long long s0, long long t, int tig) {
    float mx[2] = {NEG_INF, NEG_INF}, sum[2] = {0.0f, 0.0f}, corr[2];
    /* no key masked for any row of the warp (t - gid its first): no tests */
    if (kn == 64 && (!causal || s0 + 63 <= t - (int)((threadIdx.x & 31) >> 2))) {
        UNROLL for (int nt = 0; nt < 8; nt++) UNROLL for (int i = 0; i < 4; i++) {
            s[nt][i] *= scale;
            mx[i >> 1] = fmaxf(mx[i >> 1], s[nt][i]);
        }
    } else {
        UNROLL for (int nt = 0; nt < 8; nt++) UNROLL for (int i = 0; i < 4; i++) {
            int key = 8 * nt + 2 * tig + (i & 1), ok = key < kn && (!causal || s0 + key <= t + 8 * (i >> 1));
            s[nt][i] = ok ? s[nt][i] * scale : NEG_INF;
            mx[i >> 1] = fmaxf(mx[i >> 1], s[nt][i]);
        }
    }
    UNROLL for (int hh = 0; hh < 2; hh++) {
        mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(K_FULL, mx[hh], 1));
        mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(K_FULL, mx[hh], 2));
        float mn = fmaxf(m[hh], mx[hh]);
        corr[hh] = mn == NEG_INF ? 1.0f : expf(m[hh] - mn);
        m[hh] = mn;
    }
    UNROLL for (int nt = 0; nt < 8; nt++) UNROLL for (int i = 0; i < 4; i++) {
        float p = s[nt][i] == NEG_INF ? 0.0f : expf(s[nt][i] - m[i >> 1]);
        s[nt][i] = p;
        sum[i >> 1] += p;
        o[nt][i] *= corr[i >> 1];
    }
    l[0] = l[0] * corr[0] + sum[0];
    l[1] = l[1] * corr[1] + sum[1];
}

/* The forward's end for the warp's rows r0 + gid (+8) of a query tile of
 * qn rows: out = o / l (l summed over the quad) stored at og (row stride
 * qld, f32 or bf16 by hb), lse = m + log l at lse (by row). */
DEVFN void tc_fwd_store(float o[8][4], const float m[2], float l[2], float *og, long long qld, float *lse, int r0,
                        int qn, int D, int tig, int hb) {
    UNROLL for (int hh = 0; hh < 2; hh++) {
        l[hh] += __shfl_xor_sync(K_FULL, l[hh], 1);
        l[hh] += __shfl_xor_sync(K_FULL, l[hh], 2);
    }
    UNROLL for (int nd = 0; nd < 8; nd++) UNROLL for (int i = 0; i < 4; i++) {
        int r = r0 + 8 * (i >> 1), d = 8 * nd + 2 * tig + (i & 1);
        if (r < qn && d < D) stx(og, r * qld + d, l[i >> 1] > 0.0f ? o[nd][i] / l[i >> 1] : 0.0f, hb);
    }
    UNROLL for (int hh = 0; hh < 2; hh++) {
        int r = r0 + 8 * hh;
        if (tig == 0 && r < qn) lse[r] = m[hh] + logf(l[hh]);
    }
}
#define TC_VLD (KA_ATT_RT_D + 8) /* V tile row stride: B[key][d] reads hit 32 banks */

/* p0 out, p1 lse, p2 q, p3 k, p4 v; the last query tiles of a head first. */
KERNEL ck_attention_fwd_tc(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float ks[64 * TC_KLD];
    __shared__ KALIGN16 float vs[64 * TC_VLD];
    long long T = a.i[1], H = a.i[3], KVH = a.i[4], qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], causal = (int)a.i[6];
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    float scale = 1.0f / sqrtf((float)D);
    long long nqt = (T + 63) / 64;
    for (long long tile = blockIdx.x; tile < a.i[0] * H * nqt; tile += gridDim.x) {
        AttTile at = att_query_tile(&a, tile, nqt, 64);
        long long b = at.b, h = at.h, t0 = at.t0, kv0 = at.kv0, send = at.send;
        int qn = at.qn, r0 = 16 * w + gid; /* this lane's rows r0, r0 + 8 */
        const float *qg = xp(a.p[2], at.row0, hb);
        float qa[8][4], o[8][4], m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f};
        UNROLL for (int kk = 0; kk < 8; kk++) UNROLL for (int i = 0; i < 4; i++) {
            int r = r0 + 8 * (i & 1), d = 8 * kk + tig + 4 * (i >> 1);
            qa[kk][i] = r < qn && d < D ? tf32(ldx(qg, r * qld + d, hb) * scale) : 0.0f;
            o[kk][i] = 0.0f;
        }
        __syncthreads(); /* every warp of the previous tile is done with K and V */
        att_stage(ks, TC_KLD, 64, xp(a.p[3], kv0, hb), kld, (int)(send < 64 ? send : 64), D, hb);
        for (long long s0 = 0; s0 < send; s0 += 64) {
            int kn = (int)(send - s0 < 64 ? send - s0 : 64);
            att_stage_wait();
            __syncthreads(); /* this K is staged; every warp is done with the last V */
            att_stage(vs, TC_VLD, 64, xp(a.p[4], kv0 + s0 * kld, hb), kld, kn, D, hb); /* lands during the scores */
            float s[8][4];
            UNROLL for (int nt = 0; nt < 8; nt++) {
                UNROLL for (int i = 0; i < 4; i++) s[nt][i] = 0.0f;
                if (8 * nt >= kn) continue;
                UNROLL for (int kk = 0; kk < 8; kk++) if (8 * kk < D)
                    mma_tf32(s[nt], qa[kk], tf32(ks[(8 * nt + gid) * TC_KLD + 8 * kk + tig]),
                             tf32(ks[(8 * nt + gid) * TC_KLD + 8 * kk + tig + 4]));
            }
            tc_softmax_tile(s, o, m, l, 1.0f, kn, causal, s0, t0 + r0, tig);
            att_stage_wait();
            __syncthreads();    /* V is staged; every warp is done with K */
            if (s0 + 64 < send) /* the next K lands during O += P V */
                att_stage(ks, TC_KLD, 64, xp(a.p[3], kv0 + (s0 + 64) * kld, hb), kld,
                          (int)(send - s0 - 64 < 64 ? send - s0 - 64 : 64), D, hb);
            UNROLL for (int kc = 0; kc < 8; kc++) { /* O += P V */
                if (8 * kc >= kn) continue;
                float pa[4];
                tc_c_to_a(pa, s[kc], lane);
                UNROLL for (int nd = 0; nd < 8; nd++) if (8 * nd < D)
                    mma_tf32(o[nd], pa, tf32(vs[(8 * kc + tig) * TC_VLD + 8 * nd + gid]),
                             tf32(vs[(8 * kc + tig + 4) * TC_VLD + 8 * nd + gid]));
            }
        }
        tc_fwd_store(o, m, l, xp(a.p[0], (b * T + t0) * qld + h * D, hb), qld, a.p[1] + (b * H + h) * T + t0, r0, qn, D,
                     tig, hb);
    }
}

/* The backward on tensor cores (--tf32, D <= 64 and a multiple of 8, delta
 * precomputed). p = exp(scale q.k - lse) needs no running max, so both
 * kernels are chains of mma products with elementwise steps on the C
 * fragments between them.
 * ck_attention_bwd_dq_tc: a block of 4 warps owns 64 query rows (warp w rows
 * 16w.., their q (scaled) and dout fragments in registers) and walks 32-key
 * tiles of K and V in two shared buffers, the next tile staged by cp.async
 * during this one: S = q K^T and dP = dout V^T, ds = p (dP
 * - delta) on the fragments, dq += ds K (ds's A fragments by quad shuffles),
 * scaled once at the end.
 * ck_attention_bwd_dkdv_tc: a block of 4 warps owns 64 keys of a kv head
 * (warp w keys 16w.., their k and v fragments in registers) and walks
 * 32-row tiles of q and dout (with lse and delta; two buffers, the next
 * tile staged by cp.async during this one) of every query head that shares
 * the kv head: S^T = (scale k) q^T, dP^T = v dout^T, p^T and ds^T on the
 * fragments (lse and delta per column), dv += p^T dout, dk += scale ds^T q. */
#define TC_QLD (KA_ATT_RT_D + 4) /* the 32-row tiles: B[d][row] reads conflict-free */

/* The warp's A fragments of a 16-row block of a (., D) global matrix with
 * row stride ld (rows [0, n) of it valid), times f, TF32. */
DEVFN void tc_load_a(float fa[8][4], const float *src, long long ld, int n, int D, float f, int h) {
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    UNROLL for (int kk = 0; kk < 8; kk++) UNROLL for (int i = 0; i < 4; i++) {
        int r = gid + 8 * (i & 1), d = 8 * kk + tig + 4 * (i >> 1);
        fa[kk][i] = r < n && d < D ? tf32(ldx(src, r * ld + d, h) * f) : 0.0f;
    }
}

/* c[nt] (16 x 8 each) = A (fragments fa, D columns) times B^T where B is
 * nb rows of a shared (., D) tile with stride ls: C[r][j] = A[r] . B[8nt + j]. */
DEVFN void tc_abt(float c[][4], int nt_n, float fa[8][4], const float *bs, int ls, int D) {
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    UNROLL for (int nt = 0; nt < 4; nt++) {
        if (nt >= nt_n) continue;
        UNROLL for (int i = 0; i < 4; i++) c[nt][i] = 0.0f;
        UNROLL for (int kk = 0; kk < 8; kk++) if (8 * kk < D)
            mma_tf32(c[nt], fa[kk], tf32(bs[(8 * nt + gid) * ls + 8 * kk + tig]),
                     tf32(bs[(8 * nt + gid) * ls + 8 * kk + tig + 4]));
    }
}

/* acc[nd] (16 x D) += C (fragments c, 8 nt_n columns) times B, B a shared
 * (8 nt_n, D) tile with stride ls. */
DEVFN void tc_acc_cb(float acc[8][4], float c[][4], int nt_n, const float *bs, int ls, int D) {
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    UNROLL for (int kc = 0; kc < 4; kc++) {
        if (kc >= nt_n) continue;
        float pa[4];
        tc_c_to_a(pa, c[kc], lane);
        UNROLL for (int nd = 0; nd < 8; nd++) if (8 * nd < D)
            mma_tf32(acc[nd], pa, tf32(bs[(8 * kc + tig) * ls + 8 * nd + gid]),
                     tf32(bs[(8 * kc + tig + 4) * ls + 8 * nd + gid]));
    }
}

/* dq's ds on the warp's fragments of a 32-key tile from s0 (keys [0, kn)
 * valid) for rows r0 + gid (+8) of the query tile from t0 (qn rows): s (the
 * scores, times sc) becomes ds = p (dp - delta), p = exp(sc s - lse), zero
 * where masked. Shared by the TF32 (sc 1: q prescaled) and bf16 kernels. */
DEVFN void tc_dq_ds(float s[4][4], float dp[4][4], const float lse[2], const float delta[2], float sc, int kn, int qn,
                    int causal, long long s0, long long t0, int r0) {
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    if (kn == 32 && r0 + 16 <= qn && (!causal || s0 + 31 <= t0 + r0)) { /* nothing masked in the warp's rows */
        UNROLL for (int nt = 0; nt < 4; nt++) UNROLL for (int i = 0; i < 4; i++) s[nt][i] =
            expf(s[nt][i] * sc - lse[i >> 1]) * (dp[nt][i] - delta[i >> 1]);
        return;
    }
    UNROLL for (int nt = 0; nt < 4; nt++) UNROLL for (int i = 0; i < 4; i++) {
        int key = 8 * nt + 2 * tig + (i & 1), r = r0 + gid + 8 * (i >> 1);
        int ok = 8 * nt < kn && r < qn && key < kn && (!causal || s0 + key <= t0 + r);
        float p = ok ? expf(s[nt][i] * sc - lse[i >> 1]) : 0.0f;
        s[nt][i] = ok ? p * (dp[nt][i] - delta[i >> 1]) : 0.0f;
    }
}

/* dq (rows r0 + gid (+8) of a tile of qn rows from dq, row stride qld, f32
 * or bf16 by hb) += scale acc, rounded once. */
DEVFN void tc_dq_store(float acc[8][4], float *dq, long long qld, int r0, int qn, int D, float scale, int hb) {
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    UNROLL for (int nd = 0; nd < 8; nd++) UNROLL for (int i = 0; i < 4; i++) {
        int r = r0 + gid + 8 * (i >> 1), d = 8 * nd + 2 * tig + (i & 1);
        if (r < qn && d < D) stx(dq, r * qld + d, ldx(dq, r * qld + d, hb) + scale * acc[nd][i], hb);
    }
}

/* dk/dv's p^T and ds^T on the warp's fragments of a 32-row tile from t0
 * (rows [0, qn) valid; lse rl and delta rd by row) for keys k0 + gid (+8)
 * of the key tile from s0 (kn keys): s (S^T, times sc) becomes p^T =
 * exp(sc s - lse), dp (dP^T) ds^T = p^T (dp - delta), zero where masked.
 * Shared by the TF32 (sc 1: k prescaled) and bf16 kernels. */
DEVFN void tc_dkdv_p(float s[4][4], float dp[4][4], const float *rl, const float *rd, float sc, int qn, int kn,
                     int causal, long long s0, long long t0, int k0) {
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    if (qn == 32 && k0 + 16 <= kn && (!causal || s0 + k0 + 15 <= t0)) { /* nothing masked in the warp's keys */
        UNROLL for (int nt = 0; nt < 4; nt++) UNROLL for (int e = 0; e < 4; e++) {
            int row = 8 * nt + 2 * tig + (e & 1);
            float p = expf(s[nt][e] * sc - rl[row]);
            s[nt][e] = p;
            dp[nt][e] = p * (dp[nt][e] - rd[row]);
        }
        return;
    }
    UNROLL for (int nt = 0; nt < 4; nt++) UNROLL for (int e = 0; e < 4; e++) {
        int row = 8 * nt + 2 * tig + (e & 1), key = k0 + gid + 8 * (e >> 1);
        int ok = 8 * nt < qn && row < qn && key < kn && (!causal || s0 + key <= t0 + row);
        float p = ok ? expf(s[nt][e] * sc - rl[row & 31]) : 0.0f;
        s[nt][e] = p;
        dp[nt][e] = ok ? p * (dp[nt][e] - rd[row & 31]) : 0.0f;
    }
}

/* dk += scale gk and dv += gv (either NULL: skipped) for keys k0 + gid (+8)
 * of a tile of kn keys from element krow0 (row stride kld), rounded once. */
DEVFN void tc_dkdv_store(float gk[8][4], float gv[8][4], float *dk, float *dv, long long krow0, long long kld, int k0,
                         int kn, int D, float scale, int hb) {
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    UNROLL for (int nd = 0; nd < 8; nd++) UNROLL for (int e = 0; e < 4; e++) {
        int key = k0 + gid + 8 * (e >> 1), d = 8 * nd + 2 * tig + (e & 1);
        if (key >= kn || d >= D) continue;
        long long o = krow0 + (long long)key * kld + d;
        if (dk) stx(dk, o, ldx(dk, o, hb) + scale * gk[nd][e], hb);
        if (dv) stx(dv, o, ldx(dv, o, hb) + gv[nd][e], hb);
    }
}

/* p0 dq, p1 dout, p2 q, p3 k, p4 v, p5 out, p6 lse, p7 delta (required). */
KERNEL ck_attention_bwd_dq_tc(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float ks[2][32 * TC_QLD], vs[2][32 * TC_QLD];
    long long T = a.i[1], H = a.i[3], KVH = a.i[4], qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], causal = (int)a.i[6];
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2;
    float scale = 1.0f / sqrtf((float)D);
    long long nqt = (T + 63) / 64;
    for (long long tile = blockIdx.x; tile < a.i[0] * H * nqt; tile += gridDim.x) {
        AttTile at = att_query_tile(&a, tile, nqt, 64);
        long long b = at.b, h = at.h, t0 = at.t0, kv0 = at.kv0, send = at.send, row0 = at.row0;
        int qn = at.qn, r0 = 16 * w, wn = qn - r0; /* the warp's valid rows */
        float qa[8][4], ga[8][4], acc[8][4], lse[2], delta[2];
        tc_load_a(qa, xp(a.p[2], row0 + r0 * qld, hb), qld, wn, D, scale, hb);
        tc_load_a(ga, xp(a.p[1], row0 + r0 * qld, hb), qld, wn, D, 1.0f, hb);
        UNROLL for (int hh = 0; hh < 2; hh++) {
            int r = r0 + gid + 8 * hh;
            lse[hh] = r < qn ? a.p[6][(b * H + h) * T + t0 + r] : 0.0f;
            delta[hh] = r < qn ? a.p[7][(b * H + h) * T + t0 + r] : 0.0f;
        }
        UNROLL for (int nd = 0; nd < 8; nd++) UNROLL for (int i = 0; i < 4; i++) acc[nd][i] = 0.0f;
        __syncthreads(); /* every warp of the previous tile is done with both buffers */
        att_stage(ks[0], TC_QLD, 32, xp(a.p[3], kv0, hb), kld, (int)(send < 32 ? send : 32), D, hb);
        att_stage(vs[0], TC_QLD, 32, xp(a.p[4], kv0, hb), kld, (int)(send < 32 ? send : 32), D, hb);
        for (long long s0 = 0, c = 0; s0 < send; s0 += 32, c ^= 1) {
            int kn = (int)(send - s0 < 32 ? send - s0 : 32), ntn = (kn + 7) / 8;
            att_stage_wait();
            __syncthreads();      /* K and V of s0 are staged; every warp is done with the other buffers */
            if (s0 + 32 < send) { /* the next K and V land during this tile */
                int nn = (int)(send - s0 - 32 < 32 ? send - s0 - 32 : 32);
                att_stage(ks[c ^ 1], TC_QLD, 32, xp(a.p[3], kv0 + (s0 + 32) * kld, hb), kld, nn, D, hb);
                att_stage(vs[c ^ 1], TC_QLD, 32, xp(a.p[4], kv0 + (s0 + 32) * kld, hb), kld, nn, D, hb);
            }
            float s[4][4], dp[4][4];
            tc_abt(s, ntn, qa, ks[c], TC_QLD, D);
            tc_abt(dp, ntn, ga, vs[c], TC_QLD, D);
            tc_dq_ds(s, dp, lse, delta, 1.0f, kn, qn, causal, s0, t0, r0);
            tc_acc_cb(acc, s, ntn, ks[c], TC_QLD, D);
        }
        tc_dq_store(acc, xp(a.p[0], row0, hb), qld, r0, qn, D, scale, hb);
    }
}


/* Start staging the 32-row tile of query head h from row t0 for dk/dv: q,
 * dout, lse and delta (zeros past row T). */
DEVFN void tc_stage_rows(float *qs, float *gs, float *rl, float *rd, const acc_kargs *a, long long b, long long h,
                         long long t0, int D) {
    long long T = a->i[1], H = a->i[3], qld = H * D, row0 = (b * T + t0) * qld + h * D, l0 = (b * H + h) * T + t0;
    int hb = (int)a->i[7];
    int n = (int)(T - t0 < 32 ? T - t0 : 32);
    att_stage(qs, TC_QLD, 32, xp(a->p[3], row0, hb), qld, n, D, hb);
    att_stage(gs, TC_QLD, 32, xp(a->p[2], row0, hb), qld, n, D, hb);
    for (int r = (int)threadIdx.x; r < 32; r += (int)blockDim.x) {
        cp_async(rl + r, a->p[7] + (r < n ? l0 + r : l0), 4, r < n ? 4 : 0);
        cp_async(rd + r, a->p[8] + (r < n ? l0 + r : l0), 4, r < n ? 4 : 0);
    }
}

/* p0 dk, p1 dv, p2 dout, p3 q, p4 k, p5 v, p6 out, p7 lse, p8 delta
 * (required); either gradient may be NULL. */
KERNEL ck_attention_bwd_dkdv_tc(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float qs[2][32 * TC_QLD], gs[2][32 * TC_QLD];
    __shared__ float rowl[2][32], rowd[2][32];
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], G = H / KVH, kld = KVH * a.i[5];
    int D = (int)a.i[5], causal = (int)a.i[6];
    int w = threadIdx.x >> 5;
    float scale = 1.0f / sqrtf((float)D);
    long long nkt = (S + 63) / 64;
    for (long long tile = blockIdx.x; tile < a.i[0] * KVH * nkt; tile += gridDim.x) {
        AttKeyTile kt = att_key_tile(&a, tile, nkt);
        long long kvh = kt.kvh, b = kt.b, s0 = kt.s0, krow0 = kt.krow0, tfirst = kt.tfirst, nrt = kt.nrt;
        int kn = kt.kn, k0 = 16 * w, wn = kn - k0; /* the warp's valid keys */
        float ka[8][4], va[8][4], gk[8][4], gv[8][4];
        tc_load_a(ka, xp(a.p[4], krow0 + k0 * kld, hb), kld, wn, D, scale, hb); /* S^T = (scale k) q^T */
        tc_load_a(va, xp(a.p[5], krow0 + k0 * kld, hb), kld, wn, D, 1.0f, hb);
        UNROLL for (int nd = 0; nd < 8; nd++) UNROLL for (int i = 0; i < 4; i++) gk[nd][i] = gv[nd][i] = 0.0f;
        __syncthreads(); /* every warp of the previous tile is done with both buffers */
        /* row tile i: query head kvh G + i / nrt, rows tfirst + 32 (i % nrt) */
        if (nrt > 0) tc_stage_rows(qs[0], gs[0], rowl[0], rowd[0], &a, b, kvh * G, tfirst, D);
        for (long long i = 0; i < G * nrt; i++) {
            long long t0 = tfirst + i % nrt * 32;
            int c = (int)(i & 1), qn = (int)(T - t0 < 32 ? T - t0 : 32), ntn = (qn + 7) / 8;
            att_stage_wait();
            __syncthreads();     /* tile i is staged; every warp is done with tile i - 1 and its buffers */
            if (i + 1 < G * nrt) /* the next tile lands during this one */
                tc_stage_rows(qs[c ^ 1], gs[c ^ 1], rowl[c ^ 1], rowd[c ^ 1], &a, b, kvh * G + (i + 1) / nrt,
                              tfirst + (i + 1) % nrt * 32, D);
            float s[4][4], dp[4][4];
            tc_abt(s, ntn, ka, qs[c], TC_QLD, D);  /* S^T: keys x rows */
            tc_abt(dp, ntn, va, gs[c], TC_QLD, D); /* dP^T */
            tc_dkdv_p(s, dp, rowl[c], rowd[c], 1.0f, qn, kn, causal, s0, t0, k0);
            tc_acc_cb(gv, s, ntn, gs[c], TC_QLD, D);  /* dv += p^T dout */
            tc_acc_cb(gk, dp, ntn, qs[c], TC_QLD, D); /* dk += ds^T q, scaled at the end */
        }
        tc_dkdv_store(gk, gv, a.p[0], a.p[1], krow0, kld, k0, kn, D, scale, hb);
    }
}

/* -- tensor cores (bf16): mma.sync m16n8k16 on bf16 ---------------------------------
 * The bf16 step's attention for head dimensions up to 64 that are a
 * multiple of 16: the TF32 kernels' tiling and order, with q, k, v and dout
 * staged and multiplied as bf16 (the tiles half the TF32 ones' shared
 * memory), P and dS rounded to bf16 for the products that consume them (as
 * flash attention does in bf16), the statistics (row max, sum, lse, delta)
 * and every accumulator in FP32, each output rounded once on store. The
 * m16n8k16 fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16", .bf16;
 * two bf16 a 32-bit register, the lower index in the low half): with gid =
 * lane / 4 and tig = lane % 4, register a0 holds A[gid][2tig], A[gid][2tig+1];
 * a1 rows gid+8; a2, a3 the same at columns + 8; b0 holds B[2tig][gid],
 * B[2tig+1][gid], b1 the same at rows + 8; C as for m16n8k8. So the C
 * fragments of two adjacent 16x8 tiles are, rounded and paired, the A
 * fragment of a 16x16 one (hb_c_to_a): P and dS need no shuffles. The B
 * fragments come from the shared tiles by ldmatrix (.trans where B's rows
 * are the tile's rows), two mma's worth per instruction. The emulator runs
 * the mma by shuffles from the lanes holding each element, products exact
 * in FP32 and summed in FP32, and the ldmatrix from the row addresses the
 * lanes give (emu.c), so a wrong fragment layout or address shows there. */
#define HB_LD (KA_ATT_RT_D + 8) /* bf16 tile row stride (144 bytes): an ldmatrix's 8 rows hit 32 banks */

/* c += a b for the warp's fragments of bf16 pairs */
DEVFN void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
#ifdef __CUDACC__
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    for (int k = 0; k < 16; k++) {
        /* A[gid][k], A[gid+8][k]: half k & 1 of register a0/a1 (k < 8) or a2/a3 of lane gid*4 + k%8/2; B[k][n]:
         * half k & 1 of b0 (k < 8) or b1 of lane n*4 + k%8/2 */
        int q = (k & 7) >> 1, sh = 16 * (k & 1), r = k < 8 ? 0 : 2;
        float alo = __shfl_sync(K_FULL, bf16_widen((unsigned short)(a[r] >> sh)), gid * 4 + q);
        float ahi = __shfl_sync(K_FULL, bf16_widen((unsigned short)(a[r + 1] >> sh)), gid * 4 + q);
        float bk = bf16_widen((unsigned short)((k < 8 ? b0 : b1) >> sh));
        float b_0 = __shfl_sync(K_FULL, bk, 2 * tig * 4 + q), b_1 = __shfl_sync(K_FULL, bk, (2 * tig + 1) * 4 + q);
        c[0] += alo * b_0;
        c[1] += alo * b_1;
        c[2] += ahi * b_0;
        c[3] += ahi * b_1;
    }
#endif
}

/* x rounded to bf16 in the low half, y in the high half (nearest even) */
DEVFN uint32_t bf16_pack(float x, float y) {
#ifdef __CUDACC__
    uint32_t u;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(y), "f"(x));
    return u;
#else
    return (uint32_t)bf16_round(x) | (uint32_t)bf16_round(y) << 16;
#endif
}

/* p[0] in the low half, p[step] in the high half */
DEVFN uint32_t bf16_pair(const unsigned short *p, int step) { return (uint32_t)p[0] | (uint32_t)p[step] << 16; }

/* The A fragment (16 x 16) of the two 16 x 8 C fragments c0, c1 side by
 * side, rounded to bf16. */
DEVFN void hb_c_to_a(uint32_t pa[4], const float c0[4], const float c1[4]) {
    pa[0] = bf16_pack(c0[0], c0[1]);
    pa[1] = bf16_pack(c0[2], c0[3]);
    pa[2] = bf16_pack(c1[0], c1[1]);
    pa[3] = bf16_pack(c1[2], c1[3]);
}

/* The warp's A fragments of a 16-row block of a bf16 (., D) global matrix
 * with row stride ld, rows [0, n) of it valid (zeros past n and D). */
DEVFN void hb_load_a(uint32_t fa[4][4], const float *src, long long ld, int n, int D) {
    const unsigned short *s16 = (const unsigned short *)src;
    int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    UNROLL for (int kk = 0; kk < 4; kk++) UNROLL for (int i = 0; i < 4; i++) {
        int r = gid + 8 * (i & 1), d = 16 * kk + 2 * tig + 8 * (i >> 1);
        fa[kk][i] = r < n && d < D ? bf16_pair(s16 + r * ld + d, 1) : 0u;
    }
}

/* Stage rows [0, n) of a bf16 (., D) global matrix with row stride ld into
 * a shared bf16 tile of `rows` rows, row stride HB_LD, columns [0, D), zeros
 * past row n: by cp.async 16 bytes at a time when the rows are 16-byte
 * aligned (att_stage_wait and a barrier before use), else element by
 * element at once. */
DEVFN void hb_stage(unsigned short *dst, int rows, const float *src, long long ld, int n, int D) {
    const unsigned short *s16 = (const unsigned short *)src;
    if (((unsigned long long)src & 15) || (ld & 7) || (D & 7)) {
        for (int e = (int)threadIdx.x; e < rows * D; e += (int)blockDim.x) {
            int j = e / D, c = e - j * D;
            dst[j * HB_LD + c] = j < n ? s16[j * ld + c] : (unsigned short)0;
        }
        return;
    }
    int q = D >> 3;
    for (int e = (int)threadIdx.x; e < rows * q; e += (int)blockDim.x) {
        int j = e / q, c = 8 * (e - j * q);
        cp_async((float *)(void *)(dst + j * HB_LD + c), (const float *)(const void *)(j < n ? s16 + j * ld + c : s16),
                 16, j < n ? 16 : 0);
    }
}

/* The K and V tile of `rows` keys from key s0 (of send, the keys this query
 * tile sees) into kb and vb: p3 k, p4 v, kv0 the tile's first element */
DEVFN void hb_stage_kv(unsigned short *kb, unsigned short *vb, int rows, const acc_kargs *a, long long kv0,
                       long long kld, long long s0, long long send, int D) {
    int n = (int)(send - s0 < rows ? send - s0 : rows);
    hb_stage(kb, rows, xp(a->p[3], kv0 + s0 * kld, 1), kld, n, D);
    hb_stage(vb, rows, xp(a->p[4], kv0 + s0 * kld, 1), kld, n, D);
}

/* ldmatrix.sync.aligned.m8n8.x4 (x2 for n 2) of 8x8 bf16 matrices from
 * shared memory: lane l gives the 16-byte row l % 8 of matrix l / 8 at row,
 * and gets in r[i] matrix i's row l / 4, columns 2 (l % 4) and + 1 (trans:
 * column l / 4 of rows 2 (l % 4) and + 1), the lower index in the low half:
 * an mma's B fragments (b0, b1) of two 8-column tiles in one instruction. */
DEVFN void ldsm(uint32_t r[4], int n, int trans, const unsigned short *row) {
#ifdef __CUDACC__
    unsigned s = (unsigned)__cvta_generic_to_shared(row);
    if (n == 4 && trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(s));
    else if (n == 4)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(s));
    else asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
#else
    emu_ldmatrix(r, n, trans, row);
#endif
}

/* c (16 x 8) = A (fragments fa, D columns) times B^T, B the 8 rows of a
 * shared bf16 tile from bs: C[r][j] = A[r] . B[j]. B's fragments by
 * ldmatrix: matrix i is the 8 rows at columns 16 kk + 8 i (b0, b1 of kk,
 * then of kk + 1); a lone last kk (D 16 or 48) takes two matrices. */
DEVFN void hb_abt(float c[4], uint32_t fa[4][4], const unsigned short *bs, int D) {
    int lane = threadIdx.x & 31;
    const unsigned short *row = bs + (lane & 7) * HB_LD + 8 * (lane >> 3);
    UNROLL for (int i = 0; i < 4; i++) c[i] = 0.0f;
    UNROLL for (int kk = 0; kk < 4; kk += 2) if (16 * kk < D) {
        uint32_t b[4];
        int two = 16 * (kk + 1) < D;
        ldsm(b, two ? 4 : 2, 0, row + 16 * kk);
        mma_bf16(c, fa[kk], b[0], b[1]);
        if (two) mma_bf16(c, fa[kk + 1], b[2], b[3]);
    }
}

/* acc[nd] (16 x D) += pa (a 16 x 16 A fragment) times B, B the 16 rows of
 * a shared bf16 (., D) tile from bs. B's fragments by ldmatrix.trans:
 * matrix i is rows 8 (i % 2).. at columns 8 (nd + i / 2) (b0, b1 of nd,
 * then of nd + 1; D a multiple of 16 takes whole pairs). */
DEVFN void hb_acc(float acc[8][4], const uint32_t pa[4], const unsigned short *bs, int D) {
    int lane = threadIdx.x & 31, i = lane >> 3;
    const unsigned short *row = bs + (8 * (i & 1) + (lane & 7)) * HB_LD + 8 * (i >> 1);
    UNROLL for (int nd = 0; nd < 8; nd += 2) if (8 * nd < D) {
        uint32_t b[4];
        ldsm(b, 4, 1, row + 8 * nd);
        mma_bf16(acc[nd], pa, b[0], b[1]);
        mma_bf16(acc[nd + 1], pa, b[2], b[3]);
    }
}

/* The forward: ck_attention_fwd_tc's blocks and tiles. q's fragments
 * unscaled (bf16 exact), the scores scaled in FP32; 64-key tiles of K and V
 * in two buffers, the next tile staged by cp.async during this one; O += P
 * V on P rounded to bf16, l summed from the FP32 p.
 * p0 out, p1 lse, p2 q, p3 k, p4 v (bf16). */
KERNEL ck_attention_fwd_hb(acc_kargs a) {
    __shared__ KALIGN16 unsigned short ks[2][64 * HB_LD], vs[2][64 * HB_LD];
    long long T = a.i[1], H = a.i[3], KVH = a.i[4], qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], causal = (int)a.i[6];
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    float scale = 1.0f / sqrtf((float)D);
    long long nqt = (T + 63) / 64;
    for (long long tile = blockIdx.x; tile < a.i[0] * H * nqt; tile += gridDim.x) {
        AttTile at = att_query_tile(&a, tile, nqt, 64);
        long long b = at.b, h = at.h, t0 = at.t0, kv0 = at.kv0, send = at.send;
        int qn = at.qn, r0 = 16 * w + gid; /* this lane's rows r0, r0 + 8 */
        uint32_t qa[4][4];
        float o[8][4], m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f};
        hb_load_a(qa, xp(a.p[2], at.row0 + 16 * w * qld, 1), qld, qn - 16 * w, D);
        UNROLL for (int nd = 0; nd < 8; nd++) UNROLL for (int i = 0; i < 4; i++) o[nd][i] = 0.0f;
        __syncthreads(); /* every warp of the previous tile is done with both buffers */
        hb_stage_kv(ks[0], vs[0], 64, &a, kv0, kld, 0, send, D);
        for (long long s0 = 0, c = 0; s0 < send; s0 += 64, c ^= 1) {
            int kn = (int)(send - s0 < 64 ? send - s0 : 64);
            att_stage_wait();
            __syncthreads();    /* K and V of s0 are staged; every warp is done with the other buffers */
            if (s0 + 64 < send) /* the next K and V land during this tile */
                hb_stage_kv(ks[c ^ 1], vs[c ^ 1], 64, &a, kv0, kld, s0 + 64, send, D);
            float s[8][4];
            UNROLL for (int nt = 0; nt < 8; nt++) {
                if (8 * nt < kn) hb_abt(s[nt], qa, ks[c] + 8 * nt * HB_LD, D);
                else UNROLL for (int i = 0; i < 4; i++) s[nt][i] = 0.0f;
            }
            tc_softmax_tile(s, o, m, l, scale, kn, causal, s0, t0 + r0, tig);
            UNROLL for (int kc = 0; kc < 4; kc++) { /* O += P V, 16 keys a step (V zero past kn) */
                if (16 * kc >= kn) continue;
                uint32_t pa[4];
                hb_c_to_a(pa, s[2 * kc], s[2 * kc + 1]);
                hb_acc(o, pa, vs[c] + 16 * kc * HB_LD, D);
            }
        }
        tc_fwd_store(o, m, l, xp(a.p[0], (b * T + t0) * qld + h * D, 1), qld, a.p[1] + (b * H + h) * T + t0, r0, qn, D,
                     tig, 1);
    }
}

/* The dq backward: ck_attention_bwd_dq_tc's blocks and 32-key tiles (two
 * buffers each of K and V, as there), q and dout fragments bf16, S scaled in FP32, dS
 * rounded to bf16 for dq += dS K. p0 dq, p1 dout, p2 q, p3 k, p4 v, p5 out,
 * p6 lse, p7 delta (required). */
KERNEL ck_attention_bwd_dq_hb(acc_kargs a) {
    __shared__ KALIGN16 unsigned short ks[2][32 * HB_LD], vs[2][32 * HB_LD];
    long long T = a.i[1], H = a.i[3], KVH = a.i[4], qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], causal = (int)a.i[6];
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2;
    float scale = 1.0f / sqrtf((float)D);
    long long nqt = (T + 63) / 64;
    for (long long tile = blockIdx.x; tile < a.i[0] * H * nqt; tile += gridDim.x) {
        AttTile at = att_query_tile(&a, tile, nqt, 64);
        long long b = at.b, h = at.h, t0 = at.t0, kv0 = at.kv0, send = at.send, row0 = at.row0;
        int qn = at.qn, r0 = 16 * w, wn = qn - r0; /* the warp's valid rows */
        uint32_t qa[4][4], ga[4][4];
        float acc[8][4], lse[2], delta[2];
        hb_load_a(qa, xp(a.p[2], row0 + r0 * qld, 1), qld, wn, D);
        hb_load_a(ga, xp(a.p[1], row0 + r0 * qld, 1), qld, wn, D);
        UNROLL for (int hh = 0; hh < 2; hh++) {
            int r = r0 + gid + 8 * hh;
            lse[hh] = r < qn ? a.p[6][(b * H + h) * T + t0 + r] : 0.0f;
            delta[hh] = r < qn ? a.p[7][(b * H + h) * T + t0 + r] : 0.0f;
        }
        UNROLL for (int nd = 0; nd < 8; nd++) UNROLL for (int i = 0; i < 4; i++) acc[nd][i] = 0.0f;
        __syncthreads(); /* every warp of the previous tile is done with both buffers */
        hb_stage_kv(ks[0], vs[0], 32, &a, kv0, kld, 0, send, D);
        for (long long s0 = 0, c = 0; s0 < send; s0 += 32, c ^= 1) {
            int kn = (int)(send - s0 < 32 ? send - s0 : 32);
            att_stage_wait();
            __syncthreads();    /* K and V of s0 are staged; every warp is done with the other buffers */
            if (s0 + 32 < send) /* the next K and V land during this tile */
                hb_stage_kv(ks[c ^ 1], vs[c ^ 1], 32, &a, kv0, kld, s0 + 32, send, D);
            float s[4][4], dp[4][4];
            UNROLL for (int nt = 0; nt < 4; nt++) {
                if (8 * nt >= kn) continue;
                hb_abt(s[nt], qa, ks[c] + 8 * nt * HB_LD, D);
                hb_abt(dp[nt], ga, vs[c] + 8 * nt * HB_LD, D);
            }
            tc_dq_ds(s, dp, lse, delta, scale, kn, qn, causal, s0, t0, r0);
            UNROLL for (int kc = 0; kc < 2; kc++) { /* dq += ds K, 16 keys a step (K zero past kn) */
                if (16 * kc >= kn) continue;
                uint32_t pa[4];
                hb_c_to_a(pa, s[2 * kc], s[2 * kc + 1]);
                hb_acc(acc, pa, ks[c] + 16 * kc * HB_LD, D);
            }
        }
        tc_dq_store(acc, xp(a.p[0], row0, 1), qld, r0, qn, D, scale, 1);
    }
}

/* Start staging the 32-row tile of query head h from row t0 for the bf16
 * dk/dv: q, dout (bf16), lse and delta (zeros past row T). */
DEVFN void hb_stage_rows(unsigned short *qs, unsigned short *gs, float *rl, float *rd, const acc_kargs *a, long long b,
                         long long h, long long t0) {
    long long T = a->i[1], H = a->i[3], D = a->i[5], qld = H * D, row0 = (b * T + t0) * qld + h * D,
              l0 = (b * H + h) * T + t0;
    int n = (int)(T - t0 < 32 ? T - t0 : 32);
    hb_stage(qs, 32, xp(a->p[3], row0, 1), qld, n, (int)D);
    hb_stage(gs, 32, xp(a->p[2], row0, 1), qld, n, (int)D);
    for (int r = (int)threadIdx.x; r < 32; r += (int)blockDim.x) {
        cp_async(rl + r, a->p[7] + (r < n ? l0 + r : l0), 4, r < n ? 4 : 0);
        cp_async(rd + r, a->p[8] + (r < n ? l0 + r : l0), 4, r < n ? 4 : 0);
    }
}

/* The dk/dv backward: ck_attention_bwd_dkdv_tc's blocks and 32-row tiles
 * (two buffers each of q, dout, lse and delta, as there), k and v fragments bf16, S^T
 * scaled in FP32, p^T and dS^T rounded to bf16 for dv += p^T dout and dk +=
 * dS^T q. p0 dk, p1 dv, p2 dout, p3 q, p4 k, p5 v, p6 out, p7 lse, p8 delta
 * (required); either gradient may be NULL. */
KERNEL KATT3 ck_attention_bwd_dkdv_hb(acc_kargs a) {
    __shared__ KALIGN16 unsigned short qs[2][32 * HB_LD], gs[2][32 * HB_LD];
    __shared__ float rowl[2][32], rowd[2][32];
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], G = H / KVH, kld = KVH * a.i[5];
    int D = (int)a.i[5], causal = (int)a.i[6];
    int w = threadIdx.x >> 5;
    float scale = 1.0f / sqrtf((float)D);
    long long nkt = (S + 63) / 64;
    for (long long tile = blockIdx.x; tile < a.i[0] * KVH * nkt; tile += gridDim.x) {
        AttKeyTile kt = att_key_tile(&a, tile, nkt);
        long long kvh = kt.kvh, b = kt.b, s0 = kt.s0, krow0 = kt.krow0, tfirst = kt.tfirst, nrt = kt.nrt;
        int kn = kt.kn, k0 = 16 * w, wn = kn - k0; /* the warp's valid keys */
        uint32_t ka[4][4], va[4][4];
        float gk[8][4], gv[8][4];
        hb_load_a(ka, xp(a.p[4], krow0 + k0 * kld, 1), kld, wn, D);
        hb_load_a(va, xp(a.p[5], krow0 + k0 * kld, 1), kld, wn, D);
        UNROLL for (int nd = 0; nd < 8; nd++) UNROLL for (int i = 0; i < 4; i++) gk[nd][i] = gv[nd][i] = 0.0f;
        __syncthreads(); /* every warp of the previous tile is done with both buffers */
        /* row tile i: query head kvh G + i / nrt, rows tfirst + 32 (i % nrt) */
        if (nrt > 0) hb_stage_rows(qs[0], gs[0], rowl[0], rowd[0], &a, b, kvh * G, tfirst);
        for (long long i = 0; i < G * nrt; i++) {
            long long t0 = tfirst + i % nrt * 32;
            int c = (int)(i & 1), qn = (int)(T - t0 < 32 ? T - t0 : 32);
            att_stage_wait();
            __syncthreads();     /* tile i is staged; every warp is done with tile i - 1 and its buffers */
            if (i + 1 < G * nrt) /* the next tile lands during this one */
                hb_stage_rows(qs[c ^ 1], gs[c ^ 1], rowl[c ^ 1], rowd[c ^ 1], &a, b, kvh * G + (i + 1) / nrt,
                              tfirst + (i + 1) % nrt * 32);
            float s[4][4], dp[4][4];
            UNROLL for (int nt = 0; nt < 4; nt++) {
                if (8 * nt >= qn) continue;
                hb_abt(s[nt], ka, qs[c] + 8 * nt * HB_LD, D);  /* S^T: keys x rows */
                hb_abt(dp[nt], va, gs[c] + 8 * nt * HB_LD, D); /* dP^T */
            }
            tc_dkdv_p(s, dp, rowl[c], rowd[c], scale, qn, kn, causal, s0, t0, k0);
            UNROLL for (int kc = 0; kc < 2; kc++) { /* 16 rows a step (q and dout zero past qn) */
                if (16 * kc >= qn) continue;
                uint32_t pa[4], da[4];
                hb_c_to_a(pa, s[2 * kc], s[2 * kc + 1]);
                hb_c_to_a(da, dp[2 * kc], dp[2 * kc + 1]);
                hb_acc(gv, pa, gs[c] + 16 * kc * HB_LD, D); /* dv += p^T dout */
                hb_acc(gk, da, qs[c] + 16 * kc * HB_LD, D); /* dk += ds^T q, scaled at the end */
            }
        }
        tc_dkdv_store(gk, gv, a.p[0], a.p[1], krow0, kld, k0, kn, D, scale, 1);
    }
}

/* -- register-tiled backward (D <= KA_ATT_RT_D, delta precomputed) ---------------
 * Tiles of RB = 32 query rows and 32 keys. Both kernels first compute, for
 * the tile pair, the scores and dout . v of thread (g = tid / 8, x = tid % 8)
 * for rows 2g, 2g+1 and keys x, x+8, x+16, x+24 (float4 reads of four
 * staged tiles, conflict-free as in the forward), then p = exp(scale s -
 * lse) and ds = p (dout . v - delta). ck_attention_bwd_dq_rt (a block per 32
 * query rows, walking the key tiles) keeps ds in shared memory and accumulates
 * dq += ds K for rows 2g, 2g+1 and columns 4x.., 32+4x..;
 * ck_attention_bwd_dkdv_rt (a block per 32 keys of a kv head, walking the
 * query rows of each head that shares it) keeps p and ds transposed and
 * accumulates dv += p^T dout and dk += ds^T q for keys 2g, 2g+1 and the same
 * columns. Every product reads 4 rows' float4s at a time: about 6 FMAs a
 * read. Tiles are staged by cp.async while the block computes: in dq, the
 * next K (two K buffers) during the whole tile and the next V during
 * dq += ds K; in dk/dv, the next q during dv += p^T dout (dk's product first). */
#define RB KA_ATT_RB
#define RB_PL (RB + 4) /* row stride of p and ds */

/* For rows 2g, 2g+1 of the staged query tile (qs, gs: q and dout) against
 * keys x + 8j of the staged K and V tiles: the scores and dout . v. */
DEVFN void rb_scores(const float *qs, const float *gs, const float *ks, const float *vs, int D4, int g, int x,
                     float sc[2][4], float dp[2][4]) {
    UNROLL for (int i = 0; i < 2; i++) UNROLL for (int j = 0; j < 4; j++) sc[i][j] = dp[i][j] = 0.0f;
    for (int d = 0; d < D4; d += 4) {
        kf4 k4[4], v4[4];
        UNROLL for (int j = 0; j < 4; j++) {
            k4[j] = ld4(ks + (x + 8 * j) * RT_LD + d);
            v4[j] = ld4(vs + (x + 8 * j) * RT_LD + d);
        }
        UNROLL for (int i = 0; i < 2; i++) {
            kf4 q4 = ld4(qs + (2 * g + i) * RT_LD + d), g4 = ld4(gs + (2 * g + i) * RT_LD + d);
            UNROLL for (int j = 0; j < 4; j++) {
                sc[i][j] = dot4(sc[i][j], q4, k4[j]);
                dp[i][j] = dot4(dp[i][j], g4, v4[j]);
            }
        }
    }
}

/* acc[c] += w * (row[4x..4x+3], row[32+4x..32+4x+3]) */
DEVFN void rb_axpy8(float *acc, float w, const float *row, int x) {
    kf4 a0 = ld4(row + 4 * x), a1 = ld4(row + 32 + 4 * x);
    acc[0] += w * a0.x, acc[1] += w * a0.y, acc[2] += w * a0.z, acc[3] += w * a0.w;
    acc[4] += w * a1.x, acc[5] += w * a1.y, acc[6] += w * a1.z, acc[7] += w * a1.w;
}

/* column c of a thread's 8: 4x + c, then 32 + 4x + c - 4 */
DEVFN int rb_col(int x, int c) { return (c < 4 ? 4 * x : 32 + 4 * x) + (c & 3); }

/* p0 dq, p1 dout, p2 q, p3 k, p4 v, p5 out, p6 lse, p7 delta (required). */
KERNEL ck_attention_bwd_dq_rt(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float qs[RB * RT_LD], gs[RB * RT_LD], ks[2][RB * RT_LD], vs[RB * RT_LD];
    __shared__ KALIGN16 float dss[RB * RB_PL]; /* ds, (row, key); 48,128 bytes in all */
    long long T = a.i[1], H = a.i[3], KVH = a.i[4], qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], D4 = (D + 3) & ~3, causal = (int)a.i[6];
    int g = threadIdx.x >> 3, x = threadIdx.x & 7;
    float scale = 1.0f / sqrtf((float)D);
    long long nqt = (T + RB - 1) / RB;
    att_zero_cols(qs, RT_LD, RB, D, D4);
    att_zero_cols(gs, RT_LD, RB, D, D4);
    att_zero_cols(ks[0], RT_LD, RB, D, D4);
    att_zero_cols(ks[1], RT_LD, RB, D, D4);
    att_zero_cols(vs, RT_LD, RB, D, D4);
    for (long long tile = blockIdx.x; tile < a.i[0] * H * nqt; tile += gridDim.x) {
        AttTile at = att_query_tile(&a, tile, nqt, RB);
        long long b = at.b, h = at.h, t0 = at.t0, kv0 = at.kv0, send = at.send, row0 = at.row0;
        int qn = at.qn;
        float lse[2], delta[2], acc[2][8];
        UNROLL for (int i = 0; i < 2; i++) {
            int r = 2 * g + i;
            lse[i] = r < qn ? a.p[6][(b * H + h) * T + t0 + r] : 0.0f;
            delta[i] = r < qn ? a.p[7][(b * H + h) * T + t0 + r] : 0.0f;
            UNROLL for (int c = 0; c < 8; c++) acc[i][c] = 0.0f;
        }
        __syncthreads(); /* the previous tile is done with every buffer */
        att_stage(qs, RT_LD, RB, xp(a.p[2], row0, hb), qld, qn, D, hb);
        att_stage(gs, RT_LD, RB, xp(a.p[1], row0, hb), qld, qn, D, hb);
        att_stage(ks[0], RT_LD, RB, xp(a.p[3], kv0, hb), kld, (int)(send < RB ? send : RB), D, hb);
        att_stage(vs, RT_LD, RB, xp(a.p[4], kv0, hb), kld, (int)(send < RB ? send : RB), D, hb);
        for (long long s0 = 0, c = 0; s0 < send; s0 += RB, c ^= 1) {
            int kn = (int)(send - s0 < RB ? send - s0 : RB), nn = (int)(send - s0 - RB < RB ? send - s0 - RB : RB);
            att_stage_wait();
            __syncthreads(); /* this K and V are staged; every thread is done with the other K */
            if (nn > 0)      /* the next K lands during this tile */
                att_stage(ks[c ^ 1], RT_LD, RB, xp(a.p[3], kv0 + (s0 + RB) * kld, hb), kld, nn, D, hb);
            float sc[2][4], dp[2][4];
            rb_scores(qs, gs, ks[c], vs, D4, g, x, sc, dp);
            UNROLL for (int i = 0; i < 2; i++) UNROLL for (int j = 0; j < 4; j++) {
                int r = 2 * g + i, key = x + 8 * j, ok = r < qn && key < kn && (!causal || s0 + key <= t0 + r);
                float p = ok ? expf(sc[i][j] * scale - lse[i]) : 0.0f;
                dss[r * RB_PL + key] = p * (dp[i][j] - delta[i]);
            }
            __syncthreads(); /* every thread is done with V; (the group's rows of ds are written) */
            if (nn > 0)      /* the next V lands during dq += ds K */
                att_stage(vs, RT_LD, RB, xp(a.p[4], kv0 + (s0 + RB) * kld, hb), kld, nn, D, hb);
            for (int j = 0; j < kn; j += 4) { /* keys past kn: ds 0, K rows 0 */
                kf4 d4[2];
                UNROLL for (int i = 0; i < 2; i++) d4[i] = ld4(dss + (2 * g + i) * RB_PL + j);
                UNROLL for (int jj = 0; jj < 4; jj++) UNROLL for (int i = 0; i < 2; i++)
                    rb_axpy8(acc[i], f4_get(d4[i], jj), ks[c] + (j + jj) * RT_LD, x);
            }
        }
        float *dq = xp(a.p[0], row0, hb);
        UNROLL for (int i = 0; i < 2; i++) {
            int r = 2 * g + i;
            if (r >= qn) continue;
            UNROLL for (int c = 0; c < 8; c++) if (rb_col(x, c) < D) {
                long long e = r * qld + rb_col(x, c);
                stx(dq, e, ldx(dq, e, hb) + scale * acc[i][c], hb);
            }
        }
    }
}

/* p0 dk, p1 dv, p2 dout, p3 q, p4 k, p5 v, p6 out, p7 lse, p8 delta
 * (required); either gradient may be NULL. */
KERNEL ck_attention_bwd_dkdv_rt(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float qs[RB * RT_LD], gs[RB * RT_LD], ks[RB * RT_LD], vs[RB * RT_LD];
    __shared__ KALIGN16 float pt[RB * RB_PL], dst[RB * RB_PL]; /* p and ds, (key, row) */
    __shared__ float rowl[RB], rowd[RB];                       /* lse, delta */
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], G = H / KVH, qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], D4 = (D + 3) & ~3, causal = (int)a.i[6];
    int g = threadIdx.x >> 3, x = threadIdx.x & 7;
    float scale = 1.0f / sqrtf((float)D);
    long long nkt = (S + RB - 1) / RB;
    att_zero_cols(qs, RT_LD, RB, D, D4);
    att_zero_cols(gs, RT_LD, RB, D, D4);
    att_zero_cols(ks, RT_LD, RB, D, D4);
    att_zero_cols(vs, RT_LD, RB, D, D4);
    for (long long tile = blockIdx.x; tile < a.i[0] * KVH * nkt; tile += gridDim.x) {
        long long bk = tile / nkt, kvh = bk % KVH, b = bk / KVH, s0 = tile % nkt * RB;
        long long krow0 = (b * S + s0) * kld + kvh * D;
        int kn = (int)(S - s0 < RB ? S - s0 : RB);
        float gk[2][8], gv[2][8];
        UNROLL for (int k = 0; k < 2; k++) UNROLL for (int c = 0; c < 8; c++) gk[k][c] = gv[k][c] = 0.0f;
        long long tfirst = causal ? s0 : 0, nrt = (T - tfirst + RB - 1) / RB; /* row tiles per query head */
        __syncthreads(); /* the previous tile is done with every buffer */
        att_stage(ks, RT_LD, RB, xp(a.p[4], krow0, hb), kld, kn, D, hb);
        att_stage(vs, RT_LD, RB, xp(a.p[5], krow0, hb), kld, kn, D, hb);
        if (nrt > 0)
            att_stage(qs, RT_LD, RB, xp(a.p[3], (b * T + tfirst) * qld + kvh * G * D, hb), qld,
                      (int)(T - tfirst < RB ? T - tfirst : RB), D, hb);
        /* row tile i: query head kvh G + i / nrt, rows tfirst + RB (i % nrt) */
        for (long long it = 0; it < G * nrt; it++) {
            long long h = kvh * G + it / nrt, t0 = tfirst + it % nrt * RB, row0 = (b * T + t0) * qld + h * D;
            int qn = (int)(T - t0 < RB ? T - t0 : RB);
            if (it > 0) __syncthreads(); /* every thread is done with the last dout, p and ds */
            att_stage(gs, RT_LD, RB, xp(a.p[2], row0, hb), qld, qn, D, hb); /* (q was staged during the last tile) */
            for (int j = (int)threadIdx.x; j < RB; j += (int)blockDim.x) {
                long long l0 = (b * H + h) * T + t0;
                cp_async(rowl + j, a.p[7] + (j < qn ? l0 + j : l0), 4, j < qn ? 4 : 0);
                cp_async(rowd + j, a.p[8] + (j < qn ? l0 + j : l0), 4, j < qn ? 4 : 0);
            }
            att_stage_wait();
            __syncthreads(); /* the rows (and K and V) are staged */
            float sc[2][4], dp[2][4];
            rb_scores(qs, gs, ks, vs, D4, g, x, sc, dp);
            UNROLL for (int i = 0; i < 2; i++) UNROLL for (int j = 0; j < 4; j++) {
                int r = 2 * g + i, key = x + 8 * j, ok = r < qn && key < kn && (!causal || s0 + key <= t0 + r);
                float p = ok ? expf(sc[i][j] * scale - rowl[r]) : 0.0f;
                pt[key * RB_PL + r] = p;
                dst[key * RB_PL + r] = p * (dp[i][j] - rowd[r]);
            }
            __syncthreads();                  /* p and ds of every (key, row) are written */
            for (int i = 0; i < qn; i += 4) { /* rows past qn: p, ds, q and dout 0 */
                kf4 d4[2];
                UNROLL for (int k = 0; k < 2; k++) d4[k] = ld4(dst + (2 * g + k) * RB_PL + i);
                UNROLL for (int ii = 0; ii < 4; ii++) UNROLL for (int k = 0; k < 2; k++)
                    rb_axpy8(gk[k], f4_get(d4[k], ii), qs + (i + ii) * RT_LD, x);
            }
            __syncthreads();        /* every thread is done with q */
            if (it + 1 < G * nrt) { /* the next q lands during dv += p^T dout */
                long long h1 = kvh * G + (it + 1) / nrt, t1 = tfirst + (it + 1) % nrt * RB;
                att_stage(qs, RT_LD, RB, xp(a.p[3], (b * T + t1) * qld + h1 * D, hb), qld,
                          (int)(T - t1 < RB ? T - t1 : RB), D, hb);
            }
            for (int i = 0; i < qn; i += 4) {
                kf4 p4[2];
                UNROLL for (int k = 0; k < 2; k++) p4[k] = ld4(pt + (2 * g + k) * RB_PL + i);
                UNROLL for (int ii = 0; ii < 4; ii++) UNROLL for (int k = 0; k < 2; k++)
                    rb_axpy8(gv[k], f4_get(p4[k], ii), gs + (i + ii) * RT_LD, x);
            }
        }
        UNROLL for (int k = 0; k < 2; k++) {
            int key = 2 * g + k;
            if (key >= kn) continue;
            long long o = krow0 + (long long)key * kld;
            UNROLL for (int c = 0; c < 8; c++) {
                int col = rb_col(x, c);
                if (col >= D) continue;
                if (a.p[0]) stx(a.p[0], o + col, ldx(a.p[0], o + col, hb) + scale * gk[k][c], hb);
                if (a.p[1]) stx(a.p[1], o + col, ldx(a.p[1], o + col, hb) + gv[k][c], hb);
            }
        }
    }
}

/* p0 out, p1 lse, p2 q, p3 k, p4 v. A block per KA_ATT_FWD_ROWS query rows
 * of one (b, h), grid-stride, the last rows of a head first (under a causal
 * mask they see the most keys); warp w owns ATT_FR rows. Per key tile, K
 * then V in one shared buffer: lane j scores key j against the warp's rows,
 * the warp's max advances each row's online softmax, and the probabilities
 * go through shared memory to the P V accumulation. Each lane keeps its part
 * of a row's sum, added across the warp once at the end. */
KERNEL ck_attention_fwd(acc_kargs a) {
    int hb = (int)a.i[7];                                          /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float qs[KA_ATT_FWD_ROWS * KA_ATT_TILE_D]; /* the query rows */
    __shared__ KALIGN16 float kv[ATT_TK * ATT_KS];                 /* K tile, then V tile */
    __shared__ KALIGN16 float ps[KA_ATT_FWD_ROWS * ATT_TK];        /* probabilities, (row, key) */
    long long T = a.i[1], H = a.i[3], KVH = a.i[4], qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], D4 = (D + 3) & ~3, causal = (int)a.i[6], lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    float scale = 1.0f / sqrtf((float)D);
    long long nqt = (T + KA_ATT_FWD_ROWS - 1) / KA_ATT_FWD_ROWS;
    const float *qw = qs + w * ATT_FR * KA_ATT_TILE_D;
    float *pw = ps + w * ATT_FR * ATT_TK;
    for (long long tile = blockIdx.x; tile < a.i[0] * H * nqt; tile += gridDim.x) {
        AttTile at = att_query_tile(&a, tile, nqt, KA_ATT_FWD_ROWS);
        long long b = at.b, h = at.h, t0 = at.t0, kv0 = at.kv0, send = at.send;
        int qn = at.qn;
        float m[ATT_FR], l[ATT_FR], o[ATT_FR][ATT_NC];
        UNROLL for (int r = 0; r < ATT_FR; r++) {
            m[r] = NEG_INF;
            l[r] = 0.0f;
            UNROLL for (int c = 0; c < ATT_NC; c++) o[r][c] = 0.0f;
        }
        __syncthreads(); /* the previous tile is done with qs */
        att_load(qs, KA_ATT_TILE_D, KA_ATT_FWD_ROWS, xp(a.p[2], (b * T + t0) * qld + h * D, hb), qld, qn, D, D4, hb);
        for (long long s0 = 0; s0 < send; s0 += ATT_TK) {
            int kn = (int)(send - s0 < ATT_TK ? send - s0 : ATT_TK);
            __syncthreads(); /* qs is staged; every warp is done with the last V */
            att_load(kv, ATT_KS, ATT_TK, xp(a.p[3], kv0 + s0 * kld, hb), kld, kn, D, D4, hb);
            __syncthreads();
            float sc[ATT_FR];
            UNROLL for (int r = 0; r < ATT_FR; r++) sc[r] = 0.0f;
            for (int d = 0; d < D4; d += 4) {
                kf4 k4 = ld4(kv + lane * ATT_KS + d);
                UNROLL for (int r = 0; r < ATT_FR; r++) sc[r] = dot4(sc[r], ld4(qw + r * KA_ATT_TILE_D + d), k4);
            }
            UNROLL for (int r = 0; r < ATT_FR; r++) {
                int ok = lane < kn && (!causal || s0 + lane <= t0 + w * ATT_FR + r);
                float x = ok ? sc[r] * scale : NEG_INF, mn = fmaxf(m[r], warp_max(x));
                float corr = mn == NEG_INF ? 1.0f : expf(m[r] - mn), p = ok ? expf(x - mn) : 0.0f;
                m[r] = mn;
                l[r] = l[r] * corr + p;
                UNROLL for (int c = 0; c < ATT_NC; c++) o[r][c] *= corr;
                pw[r * ATT_TK + lane] = p;
            }
            __syncthreads(); /* every warp is done with K */
            att_load(kv, ATT_KS, ATT_TK, xp(a.p[4], kv0 + s0 * kld, hb), kld, kn, D, D4, hb);
            __syncthreads();
            for (int j = 0; j < kn; j += 4) {
                kf4 p4[ATT_FR];
                UNROLL for (int r = 0; r < ATT_FR; r++) p4[r] = ld4(pw + r * ATT_TK + j);
                UNROLL for (int jj = 0; jj < 4; jj++) UNROLL for (int c = 0; c < ATT_NC; c++) {
                    if (32 * c >= D) continue;
                    float vv = kv[(j + jj) * ATT_KS + lane + 32 * c];
                    UNROLL for (int r = 0; r < ATT_FR; r++) o[r][c] += f4_get(p4[r], jj) * vv;
                }
            }
        }
        float *og = xp(a.p[0], (b * T + t0) * qld + h * D, hb);
        UNROLL for (int r = 0; r < ATT_FR; r++) {
            int i = w * ATT_FR + r;
            float lt = warp_sum(l[r]);
            if (i >= qn) continue;
            UNROLL for (int c = 0; c < ATT_NC; c++) if (lane + 32 * c < D)
                stx(og, i * qld + lane + 32 * c, lt > 0.0f ? o[r][c] / lt : 0.0f, hb);
            if (lane == 0) a.p[1][(b * H + h) * T + t0 + i] = m[r] + logf(lt);
        }
    }
}

/* p0 dq, p1 dout, p2 q, p3 k, p4 v, p5 out, p6 lse, p7 delta (or NULL:
 * computed here; see att_tile_delta). A block per
 * KA_ATT_DQ_ROWS query rows of one (b, h), warp w owning ATT_QR of them, the
 * last rows first: dq += scale * sum_s p (dout.v_s - delta) k_s, with
 * p = exp(scale q.k_s - lse) and delta = dout.out per row. Per key tile, V
 * then K in one shared buffer: lane j computes dout.v_j, then q.k_j and the
 * row's ds_j, which a warp barrier hands to the ds K accumulation. */
KERNEL ck_attention_bwd_dq(acc_kargs a) {
    int hb = (int)a.i[7];                                         /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float qs[KA_ATT_DQ_ROWS * KA_ATT_TILE_D]; /* q rows */
    __shared__ KALIGN16 float gs[KA_ATT_DQ_ROWS * KA_ATT_TILE_D]; /* dout rows */
    __shared__ KALIGN16 float kv[ATT_TK * ATT_KS];                /* V tile, then K tile */
    __shared__ KALIGN16 float dss[KA_ATT_DQ_ROWS * ATT_TK];       /* ds, (row, key) */
    __shared__ float rowd[KA_ATT_DQ_ROWS];                        /* delta */
    long long T = a.i[1], H = a.i[3], KVH = a.i[4], qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], D4 = (D + 3) & ~3, causal = (int)a.i[6], lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    float scale = 1.0f / sqrtf((float)D);
    long long nqt = (T + KA_ATT_DQ_ROWS - 1) / KA_ATT_DQ_ROWS;
    const float *qw = qs + w * ATT_QR * KA_ATT_TILE_D, *gw = gs + w * ATT_QR * KA_ATT_TILE_D;
    float *dw = dss + w * ATT_QR * ATT_TK;
    for (long long tile = blockIdx.x; tile < a.i[0] * H * nqt; tile += gridDim.x) {
        AttTile at = att_query_tile(&a, tile, nqt, KA_ATT_DQ_ROWS);
        long long b = at.b, h = at.h, t0 = at.t0, kv0 = at.kv0, send = at.send, row0 = at.row0;
        int qn = at.qn;
        __syncthreads(); /* the previous tile is done with qs, gs, rowd */
        att_load(qs, KA_ATT_TILE_D, KA_ATT_DQ_ROWS, xp(a.p[2], row0, hb), qld, qn, D, D4, hb);
        att_load(gs, KA_ATT_TILE_D, KA_ATT_DQ_ROWS, xp(a.p[1], row0, hb), qld, qn, D, D4, hb);
        att_tile_delta(rowd, KA_ATT_DQ_ROWS, a.p[7], (b * H + h) * T + t0, xp(a.p[1], row0, hb), xp(a.p[5], row0, hb),
                       qld, qn, D, hb);
        __syncthreads();
        float lse[ATT_QR], delta[ATT_QR], g[ATT_QR][ATT_NC];
        UNROLL for (int r = 0; r < ATT_QR; r++) {
            int i = w * ATT_QR + r;
            lse[r] = i < qn ? a.p[6][(b * H + h) * T + t0 + i] : 0.0f;
            delta[r] = rowd[i];
            UNROLL for (int c = 0; c < ATT_NC; c++) g[r][c] = 0.0f;
        }
        for (long long s0 = 0; s0 < send; s0 += ATT_TK) {
            int kn = (int)(send - s0 < ATT_TK ? send - s0 : ATT_TK);
            __syncthreads(); /* every warp is done with the last K */
            att_load(kv, ATT_KS, ATT_TK, xp(a.p[4], kv0 + s0 * kld, hb), kld, kn, D, D4, hb);
            __syncthreads();
            float dp[ATT_QR], sc[ATT_QR];
            UNROLL for (int r = 0; r < ATT_QR; r++) dp[r] = sc[r] = 0.0f;
            for (int d = 0; d < D4; d += 4) {
                kf4 v4 = ld4(kv + lane * ATT_KS + d);
                UNROLL for (int r = 0; r < ATT_QR; r++) dp[r] = dot4(dp[r], ld4(gw + r * KA_ATT_TILE_D + d), v4);
            }
            __syncthreads(); /* every warp is done with V */
            att_load(kv, ATT_KS, ATT_TK, xp(a.p[3], kv0 + s0 * kld, hb), kld, kn, D, D4, hb);
            __syncthreads();
            for (int d = 0; d < D4; d += 4) {
                kf4 k4 = ld4(kv + lane * ATT_KS + d);
                UNROLL for (int r = 0; r < ATT_QR; r++) sc[r] = dot4(sc[r], ld4(qw + r * KA_ATT_TILE_D + d), k4);
            }
            UNROLL for (int r = 0; r < ATT_QR; r++) {
                int i = w * ATT_QR + r, ok = i < qn && lane < kn && (!causal || s0 + lane <= t0 + i);
                float p = ok ? expf(sc[r] * scale - lse[r]) : 0.0f;
                dw[r * ATT_TK + lane] = p * (dp[r] - delta[r]);
            }
            __syncwarp();
            for (int j = 0; j < kn; j += 4) {
                kf4 d4[ATT_QR];
                UNROLL for (int r = 0; r < ATT_QR; r++) d4[r] = ld4(dw + r * ATT_TK + j);
                UNROLL for (int jj = 0; jj < 4; jj++) UNROLL for (int c = 0; c < ATT_NC; c++) {
                    if (32 * c >= D) continue;
                    float kk = kv[(j + jj) * ATT_KS + lane + 32 * c];
                    UNROLL for (int r = 0; r < ATT_QR; r++) g[r][c] += f4_get(d4[r], jj) * kk;
                }
            }
        }
        float *dq = xp(a.p[0], row0, hb);
        UNROLL for (int r = 0; r < ATT_QR; r++) {
            int i = w * ATT_QR + r;
            if (i >= qn) continue;
            UNROLL for (int c = 0; c < ATT_NC; c++) if (lane + 32 * c < D) {
                long long e = i * qld + lane + 32 * c;
                stx(dq, e, ldx(dq, e, hb) + scale * g[r][c], hb);
            }
        }
    }
}

/* p0 dk, p1 dv, p2 dout, p3 q, p4 k, p5 v, p6 out, p7 lse, p8 delta (or
 * NULL); either gradient may be NULL. A block per KA_ATT_DKDV_KEYS keys of
 * one (b, kv head), staged
 * once; it walks the query rows of the query heads that share the kv head
 * (under a causal mask, rows from the first key on), ATT_DT rows at a time
 * with their q, dout, lse and delta in shared memory. Warp w owns ATT_KR
 * keys: lane (key lane % 8, rows 2 (lane / 8) and the next) computes p and ds
 * of two (row, key) pairs, dot products over shared memory, and after a warp
 * barrier each lane adds the rows into its columns of dv += p dout and
 * dk += ds q for the warp's keys; dk is scaled once at the end. */
KERNEL ck_attention_bwd_dkdv(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    __shared__ KALIGN16 float ks[KA_ATT_DKDV_KEYS * ATT_KS];
    __shared__ KALIGN16 float vs[KA_ATT_DKDV_KEYS * ATT_KS];
    __shared__ KALIGN16 float qs[ATT_DT * ATT_KS];            /* q rows */
    __shared__ KALIGN16 float gs[ATT_DT * ATT_KS];            /* dout rows */
    __shared__ KALIGN16 float ps[ATT_DT * KA_ATT_DKDV_KEYS];  /* p, (row, key) */
    __shared__ KALIGN16 float dss[ATT_DT * KA_ATT_DKDV_KEYS]; /* ds, (row, key) */
    __shared__ float rowl[ATT_DT], rowd[ATT_DT];              /* lse, delta */
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], G = H / KVH, qld = H * a.i[5], kld = KVH * a.i[5];
    int D = (int)a.i[5], D4 = (D + 3) & ~3, causal = (int)a.i[6], lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int key = w * ATT_KR + (lane & 7), r0 = (lane >> 3) * 2; /* this lane's pairs */
    float scale = 1.0f / sqrtf((float)D);
    long long nkt = (S + KA_ATT_DKDV_KEYS - 1) / KA_ATT_DKDV_KEYS;
    for (long long tile = blockIdx.x; tile < a.i[0] * KVH * nkt; tile += gridDim.x) {
        long long bk = tile / nkt, kvh = bk % KVH, b = bk / KVH, s0 = tile % nkt * KA_ATT_DKDV_KEYS;
        long long krow0 = (b * S + s0) * kld + kvh * D;
        int kn = (int)(S - s0 < KA_ATT_DKDV_KEYS ? S - s0 : KA_ATT_DKDV_KEYS);
        float gk[ATT_KR][ATT_NC], gv[ATT_KR][ATT_NC];
        UNROLL for (int k = 0; k < ATT_KR; k++) UNROLL for (int c = 0; c < ATT_NC; c++) gk[k][c] = gv[k][c] = 0.0f;
        __syncthreads(); /* the previous tile is done with ks, vs */
        att_load(ks, ATT_KS, KA_ATT_DKDV_KEYS, xp(a.p[4], krow0, hb), kld, kn, D, D4, hb);
        att_load(vs, ATT_KS, KA_ATT_DKDV_KEYS, xp(a.p[5], krow0, hb), kld, kn, D, D4, hb);
        for (long long h = kvh * G; h < (kvh + 1) * G; h++)
            for (long long t0 = causal ? s0 : 0; t0 < T; t0 += ATT_DT) {
                long long row0 = (b * T + t0) * qld + h * D;
                int qn = (int)(T - t0 < ATT_DT ? T - t0 : ATT_DT);
                __syncthreads(); /* ks, vs are staged; every warp is done with the last rows */
                att_load(qs, ATT_KS, ATT_DT, xp(a.p[3], row0, hb), qld, qn, D, D4, hb);
                att_load(gs, ATT_KS, ATT_DT, xp(a.p[2], row0, hb), qld, qn, D, D4, hb);
                att_tile_delta(rowd, ATT_DT, a.p[8], (b * H + h) * T + t0, xp(a.p[2], row0, hb), xp(a.p[6], row0, hb),
                               qld, qn, D, hb);
                if (threadIdx.x < ATT_DT)
                    rowl[threadIdx.x] = (int)threadIdx.x < qn ? a.p[7][(b * H + h) * T + t0 + threadIdx.x] : 0.0f;
                __syncthreads();
                float sc[2] = {0.0f, 0.0f}, dp[2] = {0.0f, 0.0f};
                for (int d = 0; d < D4; d += 4) {
                    kf4 k4 = ld4(ks + key * ATT_KS + d), v4 = ld4(vs + key * ATT_KS + d);
                    UNROLL for (int r = 0; r < 2; r++) {
                        sc[r] = dot4(sc[r], ld4(qs + (r0 + r) * ATT_KS + d), k4);
                        dp[r] = dot4(dp[r], ld4(gs + (r0 + r) * ATT_KS + d), v4);
                    }
                }
                UNROLL for (int r = 0; r < 2; r++) {
                    int i = r0 + r, ok = i < qn && key < kn && (!causal || s0 + key <= t0 + i);
                    float p = ok ? expf(sc[r] * scale - rowl[i]) : 0.0f;
                    ps[i * KA_ATT_DKDV_KEYS + key] = p;
                    dss[i * KA_ATT_DKDV_KEYS + key] = p * (dp[r] - rowd[i]);
                }
                __syncwarp(); /* the warp's keys' p and ds are written */
                for (int i = 0; i < qn; i++) {
                    const float *pi = ps + i * KA_ATT_DKDV_KEYS + w * ATT_KR;
                    const float *di = dss + i * KA_ATT_DKDV_KEYS + w * ATT_KR;
                    kf4 pa = ld4(pi), pb = ld4(pi + 4), da = ld4(di), db = ld4(di + 4);
                    UNROLL for (int c = 0; c < ATT_NC; c++) {
                        if (32 * c >= D) continue;
                        float qc = qs[i * ATT_KS + lane + 32 * c], gc = gs[i * ATT_KS + lane + 32 * c];
                        UNROLL for (int k = 0; k < 4; k++) {
                            gv[k][c] += f4_get(pa, k) * gc;
                            gk[k][c] += f4_get(da, k) * qc;
                            gv[k + 4][c] += f4_get(pb, k) * gc;
                            gk[k + 4][c] += f4_get(db, k) * qc;
                        }
                    }
                }
            }
        UNROLL for (int k = 0; k < ATT_KR; k++) {
            long long o = krow0 + (long long)(w * ATT_KR + k) * kld;
            if (w * ATT_KR + k >= kn) continue;
            UNROLL for (int c = 0; c < ATT_NC; c++) {
                if (lane + 32 * c >= D) continue;
                if (a.p[0]) stx(a.p[0], o + lane + 32 * c, ldx(a.p[0], o + lane + 32 * c, hb) + scale * gk[k][c], hb);
                if (a.p[1]) stx(a.p[1], o + lane + 32 * c, ldx(a.p[1], o + lane + 32 * c, hb) + gv[k][c], hb);
            }
        }
    }
}

/* -- wide heads (KA_ATT_TILE_D < D <= KA_ATT_MAX_D): one warp per row ------------
 * Heads too wide for the tiles' shared memory. A lane holds D/32 <= ATT_R
 * columns of the row's accumulators; every dot product is a warp sum. */

#define ATT_R (KA_ATT_MAX_D / 32) /* registers per lane */

/* The warp's rows: row r of `rows`, grid-stride; uniform over the warp. */
#define WARP_ROWS(r, rows)                                                                         \
    for (long long r = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < (rows); \
         r += (long long)gridDim.x * (blockDim.x >> 5))

/* lane's share of the dot product of two D-vectors */
DEVFN float lane_dot(const float *x, const float *y, int lane, long long D, int h) {
    float s = 0.0f;
    for (long long d = lane; d < D; d += 32) s += ldx(x, d, h) * ldx(y, d, h);
    return s;
}

/* The mask and the bias of a masked attention (runtime/cpu_kernels_t.h,
 * k_attention_masked_fwd), which takes these kernels whatever its head
 * dimension: mask float, or int32 when i8 is set, element (b, h, t, s) at
 * b*i13 + h*i14 + t*i15 + s*i16, nonzero: query t of head h attends key s;
 * bias float, element (b, h, t, s) at b*i9 + h*i10 + t*i11 + s*i12 (strides
 * 0 where either broadcasts). Either pointer NULL: none (plain attention).
 * A query row whose keys are all dropped gives zeros and lse +inf (no
 * gradient). */
DEVFN int att_dropped(const acc_kargs *a, const float *mask, long long b, long long h, long long t, long long s) {
    long long i = b * a->i[13] + h * a->i[14] + t * a->i[15] + s * a->i[16];
    return mask && (a->i[8] ? ((const int *)mask)[i] == 0 : mask[i] == 0.0f);
}

DEVFN float att_bias(const acc_kargs *a, const float *bias, long long b, long long h, long long t, long long s) {
    return bias ? bias[b * a->i[9] + h * a->i[10] + t * a->i[11] + s * a->i[12]] : 0.0f;
}

/* p0 out, p1 lse, p2 q, p3 k, p4 v, p5 mask, p6 bias (NULL: none). One
 * warp per query row: online softmax over the keys, each read from global
 * memory, each score a warp sum. */
KERNEL ck_attention_fwd_wide(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], D = a.i[5];
    int lane = threadIdx.x & 31;
    float scale = 1.0f / sqrtf((float)D);
    WARP_ROWS(r, a.i[0] * H * T) {
        long long t = r % T, h = (r / T) % H, b = r / (T * H), kvh = h / (H / KVH);
        const float *q = xp(a.p[2], ((b * T + t) * H + h) * D, hb);
        float o[ATT_R], m = NEG_INF, l = 0.0f;
        for (int j = 0; j < ATT_R; j++) o[j] = 0.0f;
        long long send = a.i[6] ? t + 1 : S;
        for (long long s = 0; s < send; s++) {
            if (att_dropped(&a, a.p[5], b, h, t, s)) continue;
            const float *k = xp(a.p[3], ((b * S + s) * KVH + kvh) * D, hb),
                        *v = xp(a.p[4], ((b * S + s) * KVH + kvh) * D, hb);
            float sc = warp_sum(lane_dot(q, k, lane, D, hb)) * scale + att_bias(&a, a.p[6], b, h, t, s);
            if (sc == NEG_INF) continue; /* a -inf bias drops the key too */
            float mn = fmaxf(m, sc), corr = expf(m - mn), p = expf(sc - mn);
            l = l * corr + p;
            for (int j = 0; j < ATT_R; j++) {
                long long d = lane + 32 * j;
                o[j] = o[j] * corr + (d < D ? p * ldx(v, d, hb) : 0.0f);
            }
            m = mn;
        }
        float *out = xp(a.p[0], ((b * T + t) * H + h) * D, hb);
        for (int j = 0; j < ATT_R; j++)
            if (lane + 32 * j < D) stx(out, lane + 32 * j, l > 0.0f ? o[j] / l : 0.0f, hb);
        if (lane == 0) a.p[1][(b * H + h) * T + t] = l > 0.0f ? m + logf(l) : -NEG_INF;
    }
}

/* p0 dq, p1 dout, p2 q, p3 k, p4 v, p5 out, p6 lse, p7 delta (or NULL),
 * p8 mask, p9 bias; ints as the forward. One warp per query row:
 * dq += scale * sum_s p (dout.v_s - dout.out) k_s. */
KERNEL ck_attention_bwd_dq_wide(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], D = a.i[5];
    int lane = threadIdx.x & 31;
    float scale = 1.0f / sqrtf((float)D);
    WARP_ROWS(r, a.i[0] * H * T) {
        long long t = r % T, h = (r / T) % H, b = r / (T * H), kvh = h / (H / KVH), row = ((b * T + t) * H + h) * D;
        const float *q = xp(a.p[2], row, hb), *dO = xp(a.p[1], row, hb);
        float lse = a.p[6][(b * H + h) * T + t];
        float delta = a.p[7] ? a.p[7][(b * H + h) * T + t] : warp_sum(lane_dot(dO, xp(a.p[5], row, hb), lane, D, hb));
        float g[ATT_R];
        for (int j = 0; j < ATT_R; j++) g[j] = 0.0f;
        long long send = a.i[6] ? t + 1 : S;
        for (long long s = 0; s < send; s++) {
            if (att_dropped(&a, a.p[8], b, h, t, s)) continue;
            const float *k = xp(a.p[3], ((b * S + s) * KVH + kvh) * D, hb),
                        *v = xp(a.p[4], ((b * S + s) * KVH + kvh) * D, hb);
            float p = expf(warp_sum(lane_dot(q, k, lane, D, hb)) * scale + att_bias(&a, a.p[9], b, h, t, s) - lse);
            float ds = p * (warp_sum(lane_dot(dO, v, lane, D, hb)) - delta);
            for (int j = 0; j < ATT_R; j++)
                if (lane + 32 * j < D) g[j] += ds * ldx(k, lane + 32 * j, hb);
        }
        float *dq = xp(a.p[0], row, hb);
        for (int j = 0; j < ATT_R; j++)
            if (lane + 32 * j < D) stx(dq, lane + 32 * j, ldx(dq, lane + 32 * j, hb) + scale * g[j], hb);
    }
}

/* p0 dk, p1 dv, p2 dout, p3 q, p4 k, p5 v, p6 out, p7 lse, p8 delta (or
 * NULL), p9 mask, p10 bias; ints as the forward. One warp per key row (b,
 * kv head, s), summing over the query heads that share it and the queries
 * that see it; either gradient may be NULL. */
KERNEL ck_attention_bwd_dkdv_wide(acc_kargs a) {
    int hb = (int)a.i[7]; /* q, k, v, out and the gradients bf16 */
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], D = a.i[5], G = H / KVH;
    int lane = threadIdx.x & 31;
    float scale = 1.0f / sqrtf((float)D);
    WARP_ROWS(r, a.i[0] * KVH * S) {
        long long s = r % S, kvh = (r / S) % KVH, b = r / (S * KVH), krow = ((b * S + s) * KVH + kvh) * D;
        const float *k = xp(a.p[4], krow, hb), *v = xp(a.p[5], krow, hb);
        float gk[ATT_R], gv[ATT_R];
        for (int j = 0; j < ATT_R; j++) gk[j] = gv[j] = 0.0f;
        for (long long h = kvh * G; h < (kvh + 1) * G; h++)
            for (long long t = a.i[6] ? s : 0; t < T; t++) {
                if (att_dropped(&a, a.p[9], b, h, t, s)) continue; /* no gradient where the key is dropped */
                long long row = ((b * T + t) * H + h) * D;
                const float *q = xp(a.p[3], row, hb), *dO = xp(a.p[2], row, hb);
                float p = expf(warp_sum(lane_dot(q, k, lane, D, hb)) * scale + att_bias(&a, a.p[10], b, h, t, s) -
                               a.p[7][(b * H + h) * T + t]);
                float delta =
                    a.p[8] ? a.p[8][(b * H + h) * T + t] : warp_sum(lane_dot(dO, xp(a.p[6], row, hb), lane, D, hb));
                float ds = p * (warp_sum(lane_dot(dO, v, lane, D, hb)) - delta);
                for (int j = 0; j < ATT_R; j++) {
                    long long d = lane + 32 * j;
                    if (d < D) {
                        gv[j] += p * ldx(dO, d, hb);
                        gk[j] += ds * ldx(q, d, hb);
                    }
                }
            }
        for (int j = 0; j < ATT_R; j++) {
            long long d = lane + 32 * j;
            if (d >= D) continue;
            if (a.p[0]) stx(a.p[0], krow + d, ldx(a.p[0], krow + d, hb) + scale * gk[j], hb);
            if (a.p[1]) stx(a.p[1], krow + d, ldx(a.p[1], krow + d, hb) + gv[j], hb);
        }
    }
}

/* p0 dbias, p1 dout, p2 q, p3 k, p4 v, p5 out, p6 lse, p7 delta (or NULL),
 * p8 mask, p9 bias; ints as the forward. dbias += dS = P (dout.v - delta)
 * summed over what the bias broadcasts over: one warp per bias element,
 * walking the (b, h, t, s) it covers in order (no atomics), each score and
 * product recomputed. */
KERNEL ck_attention_bwd_bias(acc_kargs a) {
    int hb = (int)a.i[7];
    long long B = a.i[0], T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], D = a.i[5], G = H / KVH;
    long long nb = a.i[9] ? B : 1, nh = a.i[10] ? H : 1, nt = a.i[11] ? T : 1, ns = a.i[12] ? S : 1;
    int lane = threadIdx.x & 31;
    float scale = 1.0f / sqrtf((float)D);
    WARP_ROWS(r, nb * nh * nt * ns) {
        long long s1 = r % ns, t1 = (r / ns) % nt, h1 = (r / (ns * nt)) % nh, b1 = r / (ns * nt * nh);
        float acc = 0.0f;
        for (long long b = a.i[9] ? b1 : 0; b < (a.i[9] ? b1 + 1 : B); b++)
            for (long long h = a.i[10] ? h1 : 0; h < (a.i[10] ? h1 + 1 : H); h++)
                for (long long t = a.i[11] ? t1 : 0; t < (a.i[11] ? t1 + 1 : T); t++)
                    for (long long s = a.i[12] ? s1 : 0; s < (a.i[12] ? s1 + 1 : S); s++) {
                        if ((a.i[6] && s > t) || att_dropped(&a, a.p[8], b, h, t, s)) continue;
                        long long row = ((b * T + t) * H + h) * D, krow = ((b * S + s) * KVH + h / G) * D;
                        const float *q = xp(a.p[2], row, hb), *dO = xp(a.p[1], row, hb);
                        float sc = warp_sum(lane_dot(q, xp(a.p[3], krow, hb), lane, D, hb)) * scale +
                                   att_bias(&a, a.p[9], b, h, t, s);
                        float p = expf(sc - a.p[6][(b * H + h) * T + t]);
                        float delta = a.p[7] ? a.p[7][(b * H + h) * T + t]
                                             : warp_sum(lane_dot(dO, xp(a.p[5], row, hb), lane, D, hb));
                        acc += p * (warp_sum(lane_dot(dO, xp(a.p[4], krow, hb), lane, D, hb)) - delta);
                    }
        if (lane == 0) a.p[0][b1 * a.i[9] + h1 * a.i[10] + t1 * a.i[11] + s1 * a.i[12]] += acc;
    }
}

/* ---- optimizer ------------------------------------------------------------- */

/* p0 param, p1 grad, p2 m, p3 v, p[KA_SCALARS_P] the update's lr, betas,
 * eps, weight decay and bias corrections bc1 = 1 - beta1^t, bc2 =
 * 1 - beta2^t; i0 n, i1 the moments' bf16 flag (--optimizer-state bf16:
 * widened on load, rounded to nearest even on store; the parameter's step
 * from the unrounded values). The CPU kernels' formula (k_adamw,
 * k_adamw_bf16). */
KERNEL ck_adamw(acc_kargs a) {
    float *p = a.p[0], *m = a.p[2], *v = a.p[3];
    const float *g = a.p[1];
    const acc_kscalars *sc = (const acc_kscalars *)a.p[KA_SCALARS_P];
    float lr = sc->lr, b1 = sc->beta1, b2 = sc->beta2, eps = sc->eps, wd = sc->weight_decay, bc1 = sc->bc1,
          bc2 = sc->bc2;
    int h = (int)a.i[1];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        float gi = g[i], mi = b1 * ldx(m, i, h) + (1.0f - b1) * gi, vi = b2 * ldx(v, i, h) + (1.0f - b2) * gi * gi;
        stx(m, i, mi, h);
        stx(v, i, vi, h);
        p[i] -= lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p[i]);
    }
}

/* ---- gradient clipping: the sum of squares ---------------------------------- */

/* The sum of v over the block in double, valid in thread 0; sh: blockDim.x
 * (a power of two) doubles of shared memory. A tree: the same order every
 * run. */
DEVFN double block_sum_f64(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
        __syncthreads();
    }
    return sh[0];
}

/* p0 x, p1 partial sums (double, one per block); i0 n. Block b writes the
 * sum of x[i]^2, each square and the sums in double, over its grid-stride
 * share of x. Blocks of KA_BLOCK threads. */
KERNEL ck_sum_squares(acc_kargs a) {
    __shared__ double sh[KA_BLOCK];
    const float *x = a.p[0];
    double s = 0.0;
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) s += (double)x[i] * (double)x[i];
    s = block_sum_f64(s, sh);
    if (threadIdx.x == 0) ((double *)a.p[1])[blockIdx.x] = s;
}

/* p0 partial sums (double), p1 the total (one double); i0 partial sums, i1
 * first. One block of KA_BLOCK threads: total = (first ? 0 : total) + the
 * sum of the partial sums, in a fixed order. */
KERNEL ck_sum_squares_final(acc_kargs a) {
    __shared__ double sh[KA_BLOCK];
    const double *part = (const double *)a.p[0];
    double s = 0.0;
    for (long long i = threadIdx.x; i < a.i[0]; i += blockDim.x) s += part[i];
    s = block_sum_f64(s, sh);
    if (threadIdx.x == 0) {
        double *total = (double *)a.p[1];
        *total = (a.i[1] ? 0.0 : *total) + s;
    }
}
