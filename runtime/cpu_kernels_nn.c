/* cpu_kernels_nn.c - layernorm, rmsnorm, softmax, attention, RoPE, embedding
 * and cross-entropy: the row-wise neural-network kernels.
 *
 * Invariant (see cpu_kernels.h): forward kernels overwrite, backward kernels
 * accumulate; nothing allocates; per-column sums over rows (dw, db, dtable)
 * are done by column-block tasks walking the rows in order, so results do not
 * depend on the thread count.
 */
#include "cpu_kernels.h"

#include <math.h>
#include <string.h>

#include "kernels_internal.h"

/* ---- layernorm ---------------------------------------------------------- */

// y = (x - mean) * rstd * w + b per row; stats = (mean, rstd) per row
void k_layernorm_fwd(float *y, float *stats, const float *x, const float *w, const float *b,
                     int64_t N, int64_t C, float eps)
{
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *xr = x + n * C; // (C)
        float *yr = y + n * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < C; c++)
            s += xr[c];
        float mean = s / (float)C, var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int64_t c = 0; c < C; c++)
            var += (xr[c] - mean) * (xr[c] - mean);
        float rstd = 1.0f / sqrtf(var / (float)C + eps);
        for (int64_t c = 0; c < C; c++)
            yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
        stats[2 * n] = mean;
        stats[2 * n + 1] = rstd;
    }
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w; dw += dy * xhat; db += dy
void k_layernorm_bwd(float *dx, float *dw, float *db, const float *dy, const float *x,
                     const float *w, const float *stats, int64_t N, int64_t C)
{
    if (dx) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t n = 0; n < N; n++) {
            const float *xr = x + n * C, *gr = dy + n * C;
            float mean = stats[2 * n], rstd = stats[2 * n + 1];
            float gm = 0.0f, gxm = 0.0f;
#pragma omp simd reduction(+ : gm, gxm)
            for (int64_t c = 0; c < C; c++) {
                float g = gr[c] * w[c];
                gm += g;
                gxm += g * (xr[c] - mean) * rstd;
            }
            gm /= (float)C;
            gxm /= (float)C;
            float *dxr = dx + n * C;
            for (int64_t c = 0; c < C; c++) {
                float xhat = (xr[c] - mean) * rstd;
                dxr[c] += rstd * (gr[c] * w[c] - gm - xhat * gxm);
            }
        }
    }
    if (dw || db) {
        int64_t nblk = (C + K_COL_BLOCK - 1) / K_COL_BLOCK;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t blk = 0; blk < nblk; blk++) {
            int64_t c0 = blk * K_COL_BLOCK, c1 = K_MIN(C, c0 + K_COL_BLOCK);
            for (int64_t n = 0; n < N; n++) {
                const float *xr = x + n * C, *gr = dy + n * C;
                float mean = stats[2 * n], rstd = stats[2 * n + 1];
                for (int64_t c = c0; c < c1; c++) {
                    if (dw)
                        dw[c] += gr[c] * (xr[c] - mean) * rstd;
                    if (db)
                        db[c] += gr[c];
                }
            }
        }
    }
}

/* ---- rmsnorm ------------------------------------------------------------ */

// y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps); stats = rstd per row
void k_rmsnorm_fwd(float *y, float *stats, const float *x, const float *w, int64_t N, int64_t C,
                   float eps)
{
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *xr = x + n * C; // (C)
        float *yr = y + n * C;
        float ss = k_dot(xr, xr, C);
        float rstd = 1.0f / sqrtf(ss / (float)C + eps);
        for (int64_t c = 0; c < C; c++)
            yr[c] = xr[c] * rstd * w[c];
        stats[n] = rstd;
    }
}

// dx += rstd * g - x * rstd^3 * mean(g * x), g = dy * w; dw += dy * x * rstd
void k_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *w,
                   const float *stats, int64_t N, int64_t C)
{
    if (dx) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t n = 0; n < N; n++) {
            const float *xr = x + n * C, *gr = dy + n * C;
            float rstd = stats[n], gx = 0.0f;
#pragma omp simd reduction(+ : gx)
            for (int64_t c = 0; c < C; c++)
                gx += gr[c] * w[c] * xr[c];
            float k = rstd * rstd * rstd * gx / (float)C;
            float *dxr = dx + n * C;
            for (int64_t c = 0; c < C; c++)
                dxr[c] += rstd * gr[c] * w[c] - xr[c] * k;
        }
    }
    if (dw) {
        int64_t nblk = (C + K_COL_BLOCK - 1) / K_COL_BLOCK;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t blk = 0; blk < nblk; blk++) {
            int64_t c0 = blk * K_COL_BLOCK, c1 = K_MIN(C, c0 + K_COL_BLOCK);
            for (int64_t n = 0; n < N; n++) {
                const float *xr = x + n * C, *gr = dy + n * C;
                float rstd = stats[n];
                for (int64_t c = c0; c < c1; c++)
                    dw[c] += gr[c] * xr[c] * rstd;
            }
        }
    }
}

/* ---- softmax ------------------------------------------------------------ */

// y = exp(x - max) / sum per row (in place allowed)
void k_softmax_fwd(float *y, const float *x, int64_t N, int64_t C)
{
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *xr = x + n * C; // (C)
        float *yr = y + n * C;
        float mx = -INFINITY;
        for (int64_t c = 0; c < C; c++)
            mx = xr[c] > mx ? xr[c] : mx;
        float s = 0.0f;
        for (int64_t c = 0; c < C; c++) {
            yr[c] = expf(xr[c] - mx);
            s += yr[c];
        }
        k_scal(yr, 1.0f / s, C);
    }
}

// dx += y * (dy - sum(dy * y)) per row
void k_softmax_bwd(float *dx, const float *dy, const float *y, int64_t N, int64_t C)
{
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *yr = y + n * C, *gr = dy + n * C; // (C)
        float *dxr = dx + n * C;
        float s = k_dot(gr, yr, C);
        for (int64_t c = 0; c < C; c++)
            dxr[c] += yr[c] * (gr[c] - s);
    }
}

/* ---- attention ---------------------------------------------------------- */

/* Keys per online-softmax block: the block's scores live on the stack. */
#define ATT_KBLOCK 64

// out[b,t,h] = softmax(q k^T / sqrt(D)) v, one query row at a time with an
// online softmax over key blocks; the out row itself is the accumulator
void k_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v,
                     int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                     int causal)
{
    if (KVH <= 0)
        KVH = H;
    const int64_t group = H / KVH, qstride = H * D, kstride = KVH * D;
    const float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for collapse(3) schedule(dynamic, 16) if (B * H * T * S * D >= K_PAR_MIN)
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++) {
                const float *qi = q + (b * T + t) * qstride + h * D; // (D)
                float *oi = out + (b * T + t) * qstride + h * D;     // (D)
                const float *kb = k + b * S * kstride + (h / group) * D;
                const float *vb = v + b * S * kstride + (h / group) * D;
                int64_t send = causal ? K_MIN(t + 1, S) : S;
                float m = -INFINITY, l = 0.0f, sc[ATT_KBLOCK];
                memset(oi, 0, (size_t)D * sizeof *oi);
                for (int64_t s0 = 0; s0 < send; s0 += ATT_KBLOCK) {
                    int64_t ns = K_MIN(ATT_KBLOCK, send - s0);
                    float mb = -INFINITY;
                    for (int64_t j = 0; j < ns; j++) {
                        sc[j] = k_dot(qi, kb + (s0 + j) * kstride, D) * scale;
                        mb = sc[j] > mb ? sc[j] : mb;
                    }
                    if (mb > m) { /* rescale what was accumulated so far */
                        float corr = expf(m - mb);
                        l *= corr;
                        k_scal(oi, corr, D);
                        m = mb;
                    }
                    for (int64_t j = 0; j < ns; j++) {
                        float p = expf(sc[j] - m);
                        l += p;
                        k_axpy(oi, p, vb + (s0 + j) * kstride, D);
                    }
                }
                if (l > 0.0f)
                    k_scal(oi, 1.0f / l, D);
                lse[(b * H + h) * T + t] = m + logf(l);
            }
}

// dq, dk, dv += gradients of attention; p recomputed as exp(s - lse), and
// ds = p * (dout.v - rowsum(dout*out)). One task per (b, kv head) owns dk, dv
// of that kv head and dq of its query heads: no races under GQA.
void k_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *q,
                     const float *k, const float *v, const float *out, const float *lse,
                     int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                     int causal)
{
    if (KVH <= 0)
        KVH = H;
    const int64_t group = H / KVH, qstride = H * D, kstride = KVH * D;
    const float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (B * H * T * S * D >= K_PAR_MIN)
    for (int64_t b = 0; b < B; b++)
        for (int64_t kh = 0; kh < KVH; kh++) {
            const float *kb = k + b * S * kstride + kh * D, *vb = v + b * S * kstride + kh * D;
            float *dkb = dk ? dk + b * S * kstride + kh * D : NULL;
            float *dvb = dv ? dv + b * S * kstride + kh * D : NULL;
            for (int64_t h = kh * group; h < (kh + 1) * group; h++)
                for (int64_t t = 0; t < T; t++) {
                    int64_t row = (b * T + t) * qstride + h * D;
                    const float *qi = q + row, *oi = out + row, *gi = dout + row; // (D)
                    float *dqi = dq ? dq + row : NULL;
                    float L = lse[(b * H + h) * T + t];
                    float Di = k_dot(gi, oi, D);
                    int64_t send = causal ? K_MIN(t + 1, S) : S;
                    for (int64_t s = 0; s < send; s++) {
                        const float *kj = kb + s * kstride, *vj = vb + s * kstride; // (D)
                        float p = expf(k_dot(qi, kj, D) * scale - L);
                        if (dvb)
                            k_axpy(dvb + s * kstride, p, gi, D);
                        float ds = p * (k_dot(gi, vj, D) - Di) * scale;
                        if (dqi)
                            k_axpy(dqi, ds, kj, D);
                        if (dkb)
                            k_axpy(dkb + s * kstride, ds, qi, D);
                    }
                }
        }
}

/* ---- RoPE --------------------------------------------------------------- */

// rotate each head's (x[i], x[i+D/2]) pairs by +angle (dir 1) or -angle (dir -1),
// y = or += the result
static void rope_apply(float *y, const float *x, int64_t B, int64_t T, int64_t H, int64_t D,
                       float theta, int dir, int accumulate)
{
    const int64_t half = D / 2, C = H * D;
#pragma omp parallel for collapse(2) if (B * T * C >= K_PAR_MIN)
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            const float *xr = x + (b * T + t) * C; // (H*D)
            float *yr = y + (b * T + t) * C;
            for (int64_t i = 0; i < half; i++) {
                double freq = pow((double)theta, -2.0 * (double)i / (double)D);
                double ang = (double)t * freq;
                float cs = (float)cos(ang), sn = (float)sin(ang) * (float)dir;
                for (int64_t h = 0; h < H; h++) {
                    float x1 = xr[h * D + i], x2 = xr[h * D + i + half];
                    float y1 = x1 * cs - x2 * sn, y2 = x2 * cs + x1 * sn;
                    if (accumulate) {
                        yr[h * D + i] += y1;
                        yr[h * D + i + half] += y2;
                    } else {
                        yr[h * D + i] = y1;
                        yr[h * D + i + half] = y2;
                    }
                }
            }
        }
}

void k_rope_fwd(float *out, const float *x, int64_t B, int64_t T, int64_t H, int64_t D,
                float theta)
{
    rope_apply(out, x, B, T, H, D, theta, 1, 0);
}

void k_rope_bwd(float *dx, const float *dout, int64_t B, int64_t T, int64_t H, int64_t D,
                float theta)
{
    rope_apply(dx, dout, B, T, H, D, theta, -1, 1);
}

/* ---- embedding ---------------------------------------------------------- */

static int bad_index(const int32_t *idx, int64_t N, int64_t V)
{
    for (int64_t n = 0; n < N; n++)
        if (idx[n] < 0 || idx[n] >= V)
            return 1;
    return 0;
}

// out[n] = table[idx[n]]
int k_embedding_fwd(float *out, const int32_t *idx, const float *table, int64_t N, int64_t V,
                    int64_t C)
{
    if (bad_index(idx, N, V))
        return 1;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++)
        memcpy(out + n * C, table + (int64_t)idx[n] * C, (size_t)C * sizeof *out);
    return 0;
}

// dtable[idx[n]] += dout[n], column blocks in parallel, rows in order
int k_embedding_bwd(float *dtable, const float *dout, const int32_t *idx, int64_t N, int64_t V,
                    int64_t C)
{
    if (bad_index(idx, N, V))
        return 1;
    int64_t nblk = (C + K_COL_BLOCK - 1) / K_COL_BLOCK;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t c0 = blk * K_COL_BLOCK, len = K_MIN(K_COL_BLOCK, C - c0);
        for (int64_t n = 0; n < N; n++) {
            float *dr = dtable + (int64_t)idx[n] * C + c0;
            const float *gr = dout + n * C + c0;
            for (int64_t c = 0; c < len; c++)
                dr[c] += gr[c];
        }
    }
    return 0;
}

/* ---- cross-entropy ------------------------------------------------------ */

// lse[n] = logsumexp(logits[n]); *loss = mean(lse[n] - logits[n, target[n]])
int k_cross_entropy_fwd(float *loss, float *lse, const float *logits, const int32_t *targets,
                        int64_t N, int64_t V)
{
    if (bad_index(targets, N, V))
        return 1;
#pragma omp parallel for if (N * V >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *lr = logits + n * V; // (V)
        float mx = -INFINITY;
        for (int64_t j = 0; j < V; j++)
            mx = lr[j] > mx ? lr[j] : mx;
        float s = 0.0f;
        for (int64_t j = 0; j < V; j++)
            s += expf(lr[j] - mx);
        lse[n] = mx + logf(s);
    }
    double total = 0.0; /* serial: deterministic */
    for (int64_t n = 0; n < N; n++)
        total += (double)lse[n] - (double)logits[n * V + targets[n]];
    *loss = N > 0 ? (float)(total / (double)N) : 0.0f;
    return 0;
}

// dlogits += dloss/N * (exp(logits - lse) - onehot(target))
int k_cross_entropy_bwd(float *dlogits, const float *dloss, const float *logits, const float *lse,
                        const int32_t *targets, int64_t N, int64_t V)
{
    if (bad_index(targets, N, V))
        return 1;
    if (N <= 0)
        return 0;
    float g = dloss[0] / (float)N;
#pragma omp parallel for if (N * V >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *lr = logits + n * V; // (V)
        float *dr = dlogits + n * V, L = lse[n];
        for (int64_t j = 0; j < V; j++)
            dr[j] += g * expf(lr[j] - L);
        dr[targets[n]] -= g;
    }
    return 0;
}
