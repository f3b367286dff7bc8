/* kernels.cu - the CUDA kernels of acc's generated libraries.
 *
 * One source, two compilers: at `acc compile --target cuda` time NVRTC
 * compiles this file (with abi.h and philox.h) to CUBIN for every --arch and
 * to PTX, and the images are embedded in the model's library; the device
 * emulator compiles the very same text with the host C compiler (emu.h maps
 * threadIdx, __syncthreads, __shfl_xor_sync and __shared__) and runs its
 * thread blocks on the CPU. The text therefore stays in the subset common to
 * CUDA C++ and C11: no templates, references or overloads.
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
#ifdef __CUDACC_RTC__
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#endif
#else
#include "emu.h"
#define KERNEL void
#define DEVFN static inline
#endif

#include "abi.h"
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

/* ---- data movement --------------------------------------------------------- */

/* p0 x; i0 n; f0 value: x[0..n) = value */
KERNEL ck_fill(acc_kargs a) {
    float *x = a.p[0];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) x[i] = a.f[0];
}

/* p0 dst, p1 src; i0 n (elements iterated), i1 accumulate, i2..i7 the six
 * iteration dims (outermost first, padded with 1), i8..i13 dst strides,
 * i14 dst offset, i15..i20 src strides, i21 src offset (in elements).
 * dst[off + sum c_k dstride_k] (+)= src[off + sum c_k sstride_k]: reshape,
 * transpose, slice and concat, forward and backward. The dst map must be
 * one-to-one (it is for all four). */
KERNEL ck_strided(acc_kargs a) {
    float *dst = a.p[0];
    const float *src = a.p[1];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        long long r = i, di = a.i[14], si = a.i[21];
        for (int k = 5; k >= 0; k--) {
            long long c = r % a.i[2 + k];
            r /= a.i[2 + k];
            di += c * a.i[8 + k];
            si += c * a.i[15 + k];
        }
        if (a.i[1])
            dst[di] += src[si];
        else
            dst[di] = src[si];
    }
}

/* ---- elementwise ------------------------------------------------------------ */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* p0 out, p1 x; i0 n, i1 op (KU_*); f0 alpha (scale) */
KERNEL ck_unary_fwd(acc_kargs a) {
    float *out = a.p[0];
    const float *x = a.p[1];
    int op = (int)a.i[1];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        float v = x[i], y = 0.0f;
        switch (op) {
        case KU_SCALE: y = a.f[0] * v; break;
        case KU_GELU: y = 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v))); break;
        case KU_RELU: y = v > 0.0f ? v : 0.0f; break;
        case KU_SILU: y = v / (1.0f + expf(-v)); break;
        case KU_TANH: y = tanhf(v); break;
        case KU_EXP: y = expf(v); break;
        }
        out[i] = y;
    }
}

/* p0 dx, p1 dout, p2 saved (x for gelu/silu, out for relu/tanh/exp, unused
 * for scale); i0 n, i1 op; f0 alpha. dx += dout * f'(.) */
KERNEL ck_unary_bwd(acc_kargs a) {
    float *dx = a.p[0];
    const float *dy = a.p[1], *s = a.p[2];
    int op = (int)a.i[1];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        float g = dy[i], d = 0.0f;
        switch (op) {
        case KU_SCALE: d = a.f[0]; break;
        case KU_GELU: {
            float v = s[i], u = GELU_K * (v + 0.044715f * v * v * v), t = tanhf(u);
            d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
            break;
        }
        case KU_RELU: d = s[i] > 0.0f ? 1.0f : 0.0f; break;
        case KU_SILU: {
            float sg = 1.0f / (1.0f + expf(-s[i]));
            d = sg * (1.0f + s[i] * (1.0f - sg));
            break;
        }
        case KU_TANH: d = 1.0f - s[i] * s[i]; break;
        case KU_EXP: d = s[i]; break;
        }
        dx[i] += g * d;
    }
}

DEVFN float binary_op(int op, float x, float y) {
    switch (op) {
    case KB_ADD: return x + y;
    case KB_SUB: return x - y;
    case KB_MUL: return x * y;
    default: return x / y;
    }
}

/* p0 out, p1 a, p2 b; i0 n, i1 op (KB_*), i2..i7 out dims (six, padded),
 * i8..i13 a's strides and i14..i19 b's, over out's dims (0: broadcast). */
KERNEL ck_binary_fwd(acc_kargs a) {
    float *out = a.p[0];
    const float *x = a.p[1], *y = a.p[2];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        long long r = i, ia = 0, ib = 0;
        for (int k = 5; k >= 0; k--) {
            long long c = r % a.i[2 + k];
            r /= a.i[2 + k];
            ia += c * a.i[8 + k];
            ib += c * a.i[14 + k];
        }
        out[i] = binary_op((int)a.i[1], x[ia], y[ib]);
    }
}

/* The gradient of x = (a if which == 0 else b) of a broadcasting binary op:
 * one thread per element of x sums the out elements it reaches, in order.
 * p0 dx, p1 dout, p2 a, p3 b; i0 elements of x, i1 op, i2 which,
 * i3..i8 out dims, i9..i14 x dims (padded; 1 where x broadcasts),
 * i15..i20 a strides, i21..i26 b strides over out's dims. */
KERNEL ck_binary_bwd(acc_kargs a) {
    float *dx = a.p[0];
    const float *dy = a.p[1], *A = a.p[2], *B = a.p[3];
    int op = (int)a.i[1], which = (int)a.i[2];
    const long long *od = &a.i[3], *xd = &a.i[9], *as = &a.i[15], *bs = &a.i[21];
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
            long long q = j, o = 0, ia = 0, ib = 0, ostride = 1;
            for (int k = 5; k >= 0; k--) {
                long long c = xc[k];
                if (xd[k] != od[k]) {
                    c = q % od[k];
                    q /= od[k];
                }
                o += c * ostride;
                ostride *= od[k];
                ia += c * as[k];
                ib += c * bs[k];
            }
            float g = dy[o];
            switch (op) {
            case KB_ADD: acc += g; break;
            case KB_SUB: acc += which ? -g : g; break;
            case KB_MUL: acc += g * (which ? A[ia] : B[ib]); break;
            default: acc += which ? -g * A[ia] / (B[ib] * B[ib]) : g / B[ib]; break;
            }
        }
        dx[i] += acc;
    }
}

/* p0 out, p1 x; i0 n, i1 seed, i2 step, i3 op id, i4 accumulate (the
 * backward); f0 p. out (+)= x / (1-p) where philox_uniform(...) >= p, else 0:
 * the mask of the CPU target, bit for bit. */
KERNEL ck_dropout(acc_kargs a) {
    float *y = a.p[0];
    const float *x = a.p[1];
    float p = a.f[0], scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        float u = philox_uniform((uint64_t)a.i[1], (uint32_t)a.i[2], (uint32_t)a.i[3], (uint64_t)i);
        float v = p == 0.0f ? x[i] : (u >= p ? x[i] * scale : 0.0f);
        if (a.i[4])
            y[i] += v;
        else
            y[i] = v;
    }
}

/* p0 out, p1 x; i0 B, i1 T, i2 H, i3 D, i4 backward (rotate back and
 * accumulate); f0 theta. One thread per (b, t, h, i < D/2) pair. */
KERNEL ck_rope(acc_kargs a) {
    float *y = a.p[0];
    const float *x = a.p[1];
    long long T = a.i[1], H = a.i[2], D = a.i[3], half = D / 2, n = a.i[0] * T * H * half;
    for (long long e = GSTART; e < n; e += GSTRIDE) {
        long long i = e % half, h = (e / half) % H, t = (e / (half * H)) % T, bt = e / (half * H);
        double freq = pow((double)a.f[0], -2.0 * (double)i / (double)D), ang = (double)t * freq;
        float cs = (float)cos(ang), sn = (float)sin(ang) * (a.i[4] ? -1.0f : 1.0f);
        long long o = bt * H * D + h * D + i;
        float x1 = x[o], x2 = x[o + half], y1 = x1 * cs - x2 * sn, y2 = x2 * cs + x1 * sn;
        if (a.i[4]) {
            y[o] += y1;
            y[o + half] += y2;
        } else {
            y[o] = y1;
            y[o + half] = y2;
        }
    }
}

/* ---- embedding ----------------------------------------------------------- */

/* p0 out (N, C), p1 idx (N, int32), p2 table (V, C); i0 N, i1 V, i2 C */
KERNEL ck_embedding_fwd(acc_kargs a) {
    float *out = a.p[0];
    const int *idx = (const int *)a.p[1];
    const float *table = a.p[2];
    long long C = a.i[2];
    for (long long e = GSTART; e < a.i[0] * C; e += GSTRIDE) {
        long long n = e / C, c = e % C, v = idx[n];
        out[e] = v >= 0 && v < a.i[1] ? table[v * C + c] : 0.0f;
    }
}

/* p0 dtable, p1 dout, p2 idx; i0 N, i1 V, i2 C. One thread per column walks
 * the tokens in order: dtable[idx[n], c] += dout[n, c], deterministic. */
KERNEL ck_embedding_bwd(acc_kargs a) {
    float *dt = a.p[0];
    const float *dy = a.p[1];
    const int *idx = (const int *)a.p[2];
    long long C = a.i[2];
    for (long long c = GSTART; c < C; c += GSTRIDE)
        for (long long n = 0; n < a.i[0]; n++) {
            long long v = idx[n];
            if (v >= 0 && v < a.i[1]) dt[v * C + c] += dy[n * C + c];
        }
}

/* ---- reductions ----------------------------------------------------------- */

/* p0 out (outer, inner), p1 x (outer, n, inner); i0 outer, i1 n, i2 inner;
 * f0 scale (1 for sum, 1/n for mean). One block per output element. */
KERNEL ck_reduce_fwd(acc_kargs a) {
    __shared__ float sh[32];
    float *out = a.p[0];
    const float *x = a.p[1];
    long long n = a.i[1], inner = a.i[2];
    for (long long o = blockIdx.x; o < a.i[0] * inner; o += gridDim.x) {
        const float *xr = x + (o / inner) * n * inner + o % inner;
        float s = 0.0f;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) s += xr[j * inner];
        s = block_sum(s, sh);
        if (threadIdx.x == 0) out[o] = s * a.f[0];
    }
}

/* p0 dx, p1 dout; i0 outer, i1 n, i2 inner; f0 scale. dx += dout * scale,
 * broadcast over the reduced axis. */
KERNEL ck_reduce_bwd(acc_kargs a) {
    float *dx = a.p[0];
    const float *dy = a.p[1];
    long long n = a.i[1], inner = a.i[2];
    for (long long e = GSTART; e < a.i[0] * n * inner; e += GSTRIDE)
        dx[e] += dy[(e / (n * inner)) * inner + e % inner] * a.f[0];
}

/* ---- normalisation and softmax (one block per row) ------------------------- */

/* p0 y, p1 stats (N, 2) = (mean, rstd), p2 x, p3 w, p4 b; i0 N, i1 C; f0 eps */
KERNEL ck_layernorm_fwd(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        const float *x = a.p[2] + n * C;
        float *y = a.p[0] + n * C;
        float s = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
        float mean = block_sum(s, sh) / (float)C;
        s = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) s += (x[c] - mean) * (x[c] - mean);
        float rstd = 1.0f / sqrtf(block_sum(s, sh) / (float)C + a.f[0]);
        for (long long c = threadIdx.x; c < C; c += blockDim.x) y[c] = (x[c] - mean) * rstd * a.p[3][c] + a.p[4][c];
        if (threadIdx.x == 0) {
            a.p[1][2 * n] = mean;
            a.p[1][2 * n + 1] = rstd;
        }
    }
}

/* p0 dx, p1 dy, p2 x, p3 w, p4 stats; i0 N, i1 C.
 * dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w. */
KERNEL ck_layernorm_bwd_dx(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    const float *w = a.p[3];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        const float *x = a.p[2] + n * C, *dy = a.p[1] + n * C;
        float *dx = a.p[0] + n * C, mean = a.p[4][2 * n], rstd = a.p[4][2 * n + 1];
        float s1 = 0.0f, s2 = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) {
            float g = dy[c] * w[c];
            s1 += g;
            s2 += g * (x[c] - mean) * rstd;
        }
        s1 = block_sum(s1, sh) / (float)C;
        s2 = block_sum(s2, sh) / (float)C;
        for (long long c = threadIdx.x; c < C; c += blockDim.x)
            dx[c] += rstd * (dy[c] * w[c] - s1 - (x[c] - mean) * rstd * s2);
    }
}

/* p0 y, p1 stats (N) = rstd, p2 x, p3 w; i0 N, i1 C; f0 eps */
KERNEL ck_rmsnorm_fwd(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        const float *x = a.p[2] + n * C;
        float s = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) s += x[c] * x[c];
        float rstd = 1.0f / sqrtf(block_sum(s, sh) / (float)C + a.f[0]);
        for (long long c = threadIdx.x; c < C; c += blockDim.x) a.p[0][n * C + c] = x[c] * rstd * a.p[3][c];
        if (threadIdx.x == 0) a.p[1][n] = rstd;
    }
}

/* p0 dx, p1 dy, p2 x, p3 w, p4 stats; i0 N, i1 C.
 * dx += rstd * g - x * rstd^3 * mean(g * x), g = dy * w. */
KERNEL ck_rmsnorm_bwd_dx(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    const float *w = a.p[3];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        const float *x = a.p[2] + n * C, *dy = a.p[1] + n * C;
        float *dx = a.p[0] + n * C, rstd = a.p[4][n], s = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) s += dy[c] * w[c] * x[c];
        s = block_sum(s, sh) / (float)C;
        for (long long c = threadIdx.x; c < C; c += blockDim.x)
            dx[c] += rstd * dy[c] * w[c] - x[c] * rstd * rstd * rstd * s;
    }
}

/* The weight (and bias) gradients of both norms: one thread per column walks
 * the rows in order. p0 dw, p1 db (NULL for rmsnorm or when not needed),
 * p2 dy, p3 x, p4 stats; i0 N, i1 C, i2 rms (stats hold rstd only). */
KERNEL ck_norm_bwd_dw(acc_kargs a) {
    long long C = a.i[1];
    const float *dy = a.p[2], *x = a.p[3], *st = a.p[4];
    for (long long c = GSTART; c < C; c += GSTRIDE) {
        float sw = 0.0f, sb = 0.0f;
        for (long long n = 0; n < a.i[0]; n++) {
            float g = dy[n * C + c];
            float xhat = a.i[2] ? x[n * C + c] * st[n] : (x[n * C + c] - st[2 * n]) * st[2 * n + 1];
            sw += g * xhat;
            sb += g;
        }
        if (a.p[0]) a.p[0][c] += sw;
        if (a.p[1]) a.p[1][c] += sb;
    }
}

/* p0 y, p1 x (y may alias x); i0 N, i1 C */
KERNEL ck_softmax_fwd(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        const float *x = a.p[1] + n * C;
        float *y = a.p[0] + n * C, m = NEG_INF, s = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) m = fmaxf(m, x[c]);
        m = block_max(m, sh);
        for (long long c = threadIdx.x; c < C; c += blockDim.x) s += expf(x[c] - m);
        s = block_sum(s, sh);
        for (long long c = threadIdx.x; c < C; c += blockDim.x) y[c] = expf(x[c] - m) / s;
    }
}

/* p0 dx, p1 dy, p2 y; i0 N, i1 C. dx += y * (dy - sum(dy * y)) */
KERNEL ck_softmax_bwd(acc_kargs a) {
    __shared__ float sh[32];
    long long C = a.i[1];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        const float *dy = a.p[1] + n * C, *y = a.p[2] + n * C;
        float *dx = a.p[0] + n * C, s = 0.0f;
        for (long long c = threadIdx.x; c < C; c += blockDim.x) s += dy[c] * y[c];
        s = block_sum(s, sh);
        for (long long c = threadIdx.x; c < C; c += blockDim.x) dx[c] += y[c] * (dy[c] - s);
    }
}

/* ---- cross-entropy ----------------------------------------------------------- */

/* p0 lse (N), p1 logits (N, V); i0 N, i1 V. lse[n] = logsumexp(logits[n]) */
KERNEL ck_xent_lse(acc_kargs a) {
    __shared__ float sh[32];
    long long V = a.i[1];
    for (long long n = blockIdx.x; n < a.i[0]; n += gridDim.x) {
        const float *l = a.p[1] + n * V;
        float m = NEG_INF, s = 0.0f;
        for (long long c = threadIdx.x; c < V; c += blockDim.x) m = fmaxf(m, l[c]);
        m = block_max(m, sh);
        for (long long c = threadIdx.x; c < V; c += blockDim.x) s += expf(l[c] - m);
        s = block_sum(s, sh);
        if (threadIdx.x == 0) a.p[0][n] = m + logf(s);
    }
}

/* p0 loss (1), p1 lse, p2 logits, p3 targets (int32); i0 N, i1 V. One block:
 * loss = mean over n of lse[n] - logits[n, targets[n]]. */
KERNEL ck_xent_loss(acc_kargs a) {
    __shared__ float sh[32];
    const int *tg = (const int *)a.p[3];
    float s = 0.0f;
    for (long long n = threadIdx.x; n < a.i[0]; n += blockDim.x) {
        long long t = tg[n];
        if (t >= 0 && t < a.i[1]) s += a.p[1][n] - a.p[2][n * a.i[1] + t];
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0 && blockIdx.x == 0) a.p[0][0] = s / (float)a.i[0];
}

/* p0 dlogits, p1 dloss (1), p2 logits, p3 lse, p4 targets; i0 N, i1 V.
 * dlogits += dloss * (softmax(logits) - onehot(target)) / N */
KERNEL ck_xent_bwd(acc_kargs a) {
    const int *tg = (const int *)a.p[4];
    long long V = a.i[1];
    float k = a.p[1][0] / (float)a.i[0];
    for (long long e = GSTART; e < a.i[0] * V; e += GSTRIDE) {
        long long n = e / V;
        float p = expf(a.p[2][e] - a.p[3][n]) - (tg[n] == e % V ? 1.0f : 0.0f);
        a.p[0][e] += k * p;
    }
}

/* ---- attention: one warp per query (or key) row ------------------------------ */

#define ATT_R (KA_ATT_MAX_D / 32) /* registers per lane */

/* The warp's rows: row r of `rows`, grid-stride; uniform over the warp. */
#define WARP_ROWS(r, rows)                                                                 \
    for (long long r = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < (rows); \
         r += (long long)gridDim.x * (blockDim.x >> 5))

/* lane's share of the dot product of two D-vectors */
DEVFN float lane_dot(const float *x, const float *y, int lane, long long D) {
    float s = 0.0f;
    for (long long d = lane; d < D; d += 32) s += x[d] * y[d];
    return s;
}

/* p0 out (B, T, H*D), p1 lse (B, H, T), p2 q (B, T, H*D), p3 k, p4 v
 * (B, S, KVH*D); i0 B, i1 T, i2 S, i3 H, i4 KVH, i5 D, i6 causal.
 * Online softmax over the keys; scale 1/sqrt(D). */
KERNEL ck_attention_fwd(acc_kargs a) {
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], D = a.i[5];
    int lane = threadIdx.x & 31;
    float scale = 1.0f / sqrtf((float)D);
    WARP_ROWS(r, a.i[0] * H * T) {
        long long t = r % T, h = (r / T) % H, b = r / (T * H), kvh = h / (H / KVH);
        const float *q = a.p[2] + ((b * T + t) * H + h) * D;
        float o[ATT_R], m = NEG_INF, l = 0.0f;
        for (int j = 0; j < ATT_R; j++) o[j] = 0.0f;
        long long send = a.i[6] ? t + 1 : S;
        for (long long s = 0; s < send; s++) {
            const float *k = a.p[3] + ((b * S + s) * KVH + kvh) * D, *v = a.p[4] + ((b * S + s) * KVH + kvh) * D;
            float sc = warp_sum(lane_dot(q, k, lane, D)) * scale;
            float mn = fmaxf(m, sc), corr = expf(m - mn), p = expf(sc - mn);
            l = l * corr + p;
            for (int j = 0; j < ATT_R; j++) {
                long long d = lane + 32 * j;
                o[j] = o[j] * corr + (d < D ? p * v[d] : 0.0f);
            }
            m = mn;
        }
        float *out = a.p[0] + ((b * T + t) * H + h) * D;
        for (int j = 0; j < ATT_R; j++)
            if (lane + 32 * j < D) out[lane + 32 * j] = o[j] / l;
        if (lane == 0) a.p[1][(b * H + h) * T + t] = m + logf(l);
    }
}

/* p0 dq, p1 dout, p2 q, p3 k, p4 v, p5 out, p6 lse; ints as the forward.
 * One warp per query row: dq += scale * sum_s p (dout.v_s - dout.out) k_s. */
KERNEL ck_attention_bwd_dq(acc_kargs a) {
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], D = a.i[5];
    int lane = threadIdx.x & 31;
    float scale = 1.0f / sqrtf((float)D);
    WARP_ROWS(r, a.i[0] * H * T) {
        long long t = r % T, h = (r / T) % H, b = r / (T * H), kvh = h / (H / KVH), row = ((b * T + t) * H + h) * D;
        const float *q = a.p[2] + row, *dO = a.p[1] + row;
        float lse = a.p[6][(b * H + h) * T + t], delta = warp_sum(lane_dot(dO, a.p[5] + row, lane, D));
        float g[ATT_R];
        for (int j = 0; j < ATT_R; j++) g[j] = 0.0f;
        long long send = a.i[6] ? t + 1 : S;
        for (long long s = 0; s < send; s++) {
            const float *k = a.p[3] + ((b * S + s) * KVH + kvh) * D, *v = a.p[4] + ((b * S + s) * KVH + kvh) * D;
            float p = expf(warp_sum(lane_dot(q, k, lane, D)) * scale - lse);
            float ds = p * (warp_sum(lane_dot(dO, v, lane, D)) - delta);
            for (int j = 0; j < ATT_R; j++)
                if (lane + 32 * j < D) g[j] += ds * k[lane + 32 * j];
        }
        float *dq = a.p[0] + row;
        for (int j = 0; j < ATT_R; j++)
            if (lane + 32 * j < D) dq[lane + 32 * j] += scale * g[j];
    }
}

/* p0 dk, p1 dv, p2 dout, p3 q, p4 k, p5 v, p6 out, p7 lse; ints as the
 * forward. One warp per key row (b, kv head, s), summing over the query heads
 * that share it and the queries that see it; either gradient may be NULL. */
KERNEL ck_attention_bwd_dkdv(acc_kargs a) {
    long long T = a.i[1], S = a.i[2], H = a.i[3], KVH = a.i[4], D = a.i[5], G = H / KVH;
    int lane = threadIdx.x & 31;
    float scale = 1.0f / sqrtf((float)D);
    WARP_ROWS(r, a.i[0] * KVH * S) {
        long long s = r % S, kvh = (r / S) % KVH, b = r / (S * KVH), krow = ((b * S + s) * KVH + kvh) * D;
        const float *k = a.p[4] + krow, *v = a.p[5] + krow;
        float gk[ATT_R], gv[ATT_R];
        for (int j = 0; j < ATT_R; j++) gk[j] = gv[j] = 0.0f;
        for (long long h = kvh * G; h < (kvh + 1) * G; h++)
            for (long long t = a.i[6] ? s : 0; t < T; t++) {
                long long row = ((b * T + t) * H + h) * D;
                const float *q = a.p[3] + row, *dO = a.p[2] + row;
                float p = expf(warp_sum(lane_dot(q, k, lane, D)) * scale - a.p[7][(b * H + h) * T + t]);
                float delta = warp_sum(lane_dot(dO, a.p[6] + row, lane, D));
                float ds = p * (warp_sum(lane_dot(dO, v, lane, D)) - delta);
                for (int j = 0; j < ATT_R; j++) {
                    long long d = lane + 32 * j;
                    if (d < D) {
                        gv[j] += p * dO[d];
                        gk[j] += ds * q[d];
                    }
                }
            }
        for (int j = 0; j < ATT_R; j++) {
            long long d = lane + 32 * j;
            if (d >= D) continue;
            if (a.p[0]) a.p[0][krow + d] += scale * gk[j];
            if (a.p[1]) a.p[1][krow + d] += gv[j];
        }
    }
}

/* ---- optimizer ------------------------------------------------------------- */

/* p0 param, p1 grad, p2 m, p3 v; i0 n; f0 lr, f1 beta1, f2 beta2, f3 eps,
 * f4 weight decay, f5 1 - beta1^t, f6 1 - beta2^t. The CPU kernel's formula. */
KERNEL ck_adamw(acc_kargs a) {
    float *p = a.p[0], *m = a.p[2], *v = a.p[3];
    const float *g = a.p[1];
    float b1 = a.f[1], b2 = a.f[2];
    for (long long i = GSTART; i < a.i[0]; i += GSTRIDE) {
        float gi = g[i], mi = b1 * m[i] + (1.0f - b1) * gi, vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= a.f[0] * ((mi / a.f[5]) / (sqrtf(vi / a.f[6]) + a.f[3]) + a.f[4] * p[i]);
    }
}
