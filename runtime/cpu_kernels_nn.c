/* cpu_kernels_nn.c - layernorm, rmsnorm, softmax, attention, RoPE, embedding
 * and cross-entropy: the row-wise neural-network kernels.
 *
 * Invariant (see cpu_kernels.h): forward kernels overwrite, backward kernels
 * accumulate; nothing allocates; per-column sums over rows (dw, db, dtable)
 * are done by column-block tasks walking the rows in order, so results do not
 * depend on the thread count.
 */
#include "cpu_kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels_internal.h"

#ifndef ACC_KT_BF16 /* (the bf16 instance: not written yet) */

/* ---- layernorm ---------------------------------------------------------- */

// y = (x - mean) * rstd * w + b per row; stats = (mean, rstd) per row
void k_layernorm_fwd(float *y, float *stats, const float *x, const float *w, const float *b, int64_t N, int64_t C,
                     float eps) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *xr = x + n * C; // (C)
        float *yr = y + n * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < C; c++) s += xr[c];
        float mean = s / (float)C, var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int64_t c = 0; c < C; c++) var += (xr[c] - mean) * (xr[c] - mean);
        float rstd = 1.0f / sqrtf(var / (float)C + eps);
        for (int64_t c = 0; c < C; c++) yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
        stats[2 * n] = mean;
        stats[2 * n + 1] = rstd;
    }
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w; dw += dy * xhat; db += dy
void k_layernorm_bwd(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                     const float *stats, int64_t N, int64_t C) {
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
                    if (dw) dw[c] += gr[c] * (xr[c] - mean) * rstd;
                    if (db) db[c] += gr[c];
                }
            }
        }
    }
}

/* ---- rmsnorm ------------------------------------------------------------ */

// y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps); stats = rstd per row
void k_rmsnorm_fwd(float *y, float *stats, const float *x, const float *w, int64_t N, int64_t C, float eps) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *xr = x + n * C; // (C)
        float *yr = y + n * C;
        float ss = k_dot(xr, xr, C);
        float rstd = 1.0f / sqrtf(ss / (float)C + eps);
        for (int64_t c = 0; c < C; c++) yr[c] = xr[c] * rstd * w[c];
        stats[n] = rstd;
    }
}

// dx += rstd * g - x * rstd^3 * mean(g * x), g = dy * w; dw += dy * x * rstd
void k_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *stats, int64_t N,
                   int64_t C) {
    if (dx) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t n = 0; n < N; n++) {
            const float *xr = x + n * C, *gr = dy + n * C;
            float rstd = stats[n], gx = 0.0f;
#pragma omp simd reduction(+ : gx)
            for (int64_t c = 0; c < C; c++) gx += gr[c] * w[c] * xr[c];
            float k = rstd * rstd * rstd * gx / (float)C;
            float *dxr = dx + n * C;
            for (int64_t c = 0; c < C; c++) dxr[c] += rstd * gr[c] * w[c] - xr[c] * k;
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
                for (int64_t c = c0; c < c1; c++) dw[c] += gr[c] * xr[c] * rstd;
            }
        }
    }
}

/* ---- softmax ------------------------------------------------------------ */

// y = exp(x - max) / sum per row (in place allowed)
void k_softmax_fwd(float *y, const float *x, int64_t N, int64_t C) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *xr = x + n * C; // (C)
        float *yr = y + n * C;
        float mx = -INFINITY;
        for (int64_t c = 0; c < C; c++) mx = xr[c] > mx ? xr[c] : mx;
        float s = 0.0f;
        for (int64_t c = 0; c < C; c++) {
            yr[c] = expf(xr[c] - mx);
            s += yr[c];
        }
        k_scal(yr, 1.0f / s, C);
    }
}

// dx += y * (dy - sum(dy * y)) per row
void k_softmax_bwd(float *dx, const float *dy, const float *y, int64_t N, int64_t C) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *yr = y + n * C, *gr = dy + n * C; // (C)
        float *dxr = dx + n * C;
        float s = k_dot(gr, yr, C);
        for (int64_t c = 0; c < C; c++) dxr[c] += yr[c] * (gr[c] - s);
    }
}

/* ---- attention ---------------------------------------------------------- */

/* Flash attention over blocks of ATT_QB query rows and ATT_KB keys: the
 * block products (the scores, P @ V, and the backward's four) are OpenBLAS
 * sgemm calls on a score block that lives on the stack (no workspace); one
 * task owns the rows it writes: a query block's out rows (forward), or one kv
 * head's dk, dv and its query heads' dq (backward), so nothing races. Each
 * sgemm runs on one thread: OpenBLAS does not fork inside an active OpenMP
 * parallel region, and when the kernel is too small for one
 * (B*H*T*S*D < K_PAR_MIN) every block product has M*N*K < K_PAR_MIN, below
 * OpenBLAS's own threading threshold. So the results do not depend on the
 * thread count. */
#define ATT_QB 64
#define ATT_KB 64

/* The scores of query rows i0.. against keys s0.. (qn x kn, ld ATT_KB):
 * -inf where the key lies after the query (causal). */
static void att_mask(float *S, int64_t i0, int64_t qn, int64_t s0, int64_t kn) {
    for (int64_t i = 0; i < qn; i++)
        for (int64_t j = K_MAX(0, i0 + i + 1 - s0); j < kn; j++) S[i * ATT_KB + j] = -INFINITY;
}

/* One key block of the online softmax of qn rows: S (qn x kn, ld ATT_KB)
 * holds scaled scores, m and l each row's running max and sum. S becomes
 * exp(S - m_new); corr[i] = exp(m_old - m_new) rescales what was
 * accumulated before. */
K_CLONES static void att_fwd_block(float *S, int64_t qn, int64_t kn, float *m, float *l, float *corr) {
    for (int64_t i = 0; i < qn; i++) {
        float *s = S + i * ATT_KB, mb = m[i], sum = 0.0f;
#pragma omp simd reduction(max : mb)
        for (int64_t j = 0; j < kn; j++) mb = s[j] > mb ? s[j] : mb;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < kn; j++) {
            float p = k_expf(s[j] - mb);
            s[j] = p;
            sum += p;
        }
        corr[i] = k_expf(m[i] - mb); /* m = -inf before the first block: 0 */
        l[i] = l[i] * corr[i] + sum;
        m[i] = mb;
    }
}

// out[b,t,h] = softmax(q k^T / sqrt(D)) v by blocks of queries and keys with an
// online softmax; the out rows themselves are the accumulators
void k_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B, int64_t T,
                     int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    if (KVH <= 0) KVH = H;
    const int64_t group = H / KVH, qstride = H * D, kstride = KVH * D;
    const int64_t nqb = (T + ATT_QB - 1) / ATT_QB;
    const float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for collapse(3) schedule(dynamic, 1) if (B * H * T * S * D >= K_PAR_MIN)
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t qb = 0; qb < nqb; qb++) {
                int64_t i0 = qb * ATT_QB, qn = K_MIN(ATT_QB, T - i0);
                const float *qi = q + (b * T + i0) * qstride + h * D; // (qn, D), ld qstride
                float *oi = out + (b * T + i0) * qstride + h * D;
                const float *kb = k + b * S * kstride + (h / group) * D;
                const float *vb = v + b * S * kstride + (h / group) * D;
                int64_t send = causal ? K_MIN(i0 + qn, S) : S;
                float sc[ATT_QB * ATT_KB], m[ATT_QB], l[ATT_QB], corr[ATT_QB];
                for (int64_t i = 0; i < qn; i++) {
                    m[i] = -INFINITY;
                    l[i] = 0.0f;
                    if (send <= 0) /* no keys: a zero row */
                        memset(oi + i * qstride, 0, (size_t)D * sizeof *oi);
                }
                for (int64_t s0 = 0; s0 < send; s0 += ATT_KB) {
                    int64_t kn = K_MIN(ATT_KB, send - s0);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)qn, (int)kn, (int)D, scale, qi,
                                (int)qstride, kb + s0 * kstride, (int)kstride, 0.0f, sc, ATT_KB);
                    if (causal && s0 + kn - 1 > i0) att_mask(sc, i0, qn, s0, kn);
                    att_fwd_block(sc, qn, kn, m, l, corr);
                    if (s0 > 0)
                        for (int64_t i = 0; i < qn; i++) k_scal(oi + i * qstride, corr[i], D);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)qn, (int)D, (int)kn, 1.0f, sc, ATT_KB,
                                vb + s0 * kstride, (int)kstride, s0 > 0 ? 1.0f : 0.0f, oi, (int)qstride);
                }
                for (int64_t i = 0; i < qn; i++) {
                    if (l[i] > 0.0f) k_scal(oi + i * qstride, 1.0f / l[i], D);
                    lse[(b * H + h) * T + i0 + i] = m[i] + logf(l[i]);
                }
            }
}

/* P = exp(S - lse_i) in place (S: qn x kn scaled scores, ld ATT_KB). */
K_CLONES static void att_bwd_probs(float *S, int64_t qn, int64_t kn, const float *L) {
    for (int64_t i = 0; i < qn; i++) {
        float *s = S + i * ATT_KB, Li = L[i];
#pragma omp simd
        for (int64_t j = 0; j < kn; j++) s[j] = k_expf(s[j] - Li);
    }
}

/* dP becomes dS = P * (dP - Di) * scale. */
K_CLONES static void att_bwd_ds(float *restrict dP, const float *restrict P, int64_t qn, int64_t kn, const float *Di,
                                float scale) {
    for (int64_t i = 0; i < qn; i++) {
        float *d = dP + i * ATT_KB, di = Di[i];
        const float *p = P + i * ATT_KB;
#pragma omp simd
        for (int64_t j = 0; j < kn; j++) d[j] = p[j] * (d[j] - di) * scale;
    }
}

// dq, dk, dv += gradients of attention, by blocks: P = exp(s - lse) recomputed,
// dS = P * (dout v^T - rowsum(dout * out)). One task per (b, kv head) owns dk,
// dv of that kv head and dq of its query heads: no races under GQA.
void k_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k, const float *v,
                     const float *out, const float *lse, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH,
                     int64_t D, int causal) {
    if (KVH <= 0) KVH = H;
    const int64_t group = H / KVH, qstride = H * D, kstride = KVH * D;
    const float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (B * H * T * S * D >= K_PAR_MIN)
    for (int64_t b = 0; b < B; b++)
        for (int64_t kh = 0; kh < KVH; kh++) {
            const float *kb = k + b * S * kstride + kh * D, *vb = v + b * S * kstride + kh * D;
            float *dkb = dk ? dk + b * S * kstride + kh * D : NULL;
            float *dvb = dv ? dv + b * S * kstride + kh * D : NULL;
            float P[ATT_QB * ATT_KB], dP[ATT_QB * ATT_KB], L[ATT_QB], Di[ATT_QB];
            for (int64_t h = kh * group; h < (kh + 1) * group; h++)
                for (int64_t i0 = 0; i0 < T; i0 += ATT_QB) {
                    int64_t qn = K_MIN(ATT_QB, T - i0), row = (b * T + i0) * qstride + h * D;
                    const float *qi = q + row, *oi = out + row, *gi = dout + row; // (qn, D)
                    float *dqi = dq ? dq + row : NULL;
                    for (int64_t i = 0; i < qn; i++) {
                        L[i] = lse[(b * H + h) * T + i0 + i];
                        Di[i] = k_dot(gi + i * qstride, oi + i * qstride, D);
                    }
                    int64_t send = causal ? K_MIN(i0 + qn, S) : S;
                    for (int64_t s0 = 0; s0 < send; s0 += ATT_KB) {
                        int64_t kn = K_MIN(ATT_KB, send - s0);
                        const float *kj = kb + s0 * kstride, *vj = vb + s0 * kstride; // (kn, D)
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)qn, (int)kn, (int)D, scale, qi,
                                    (int)qstride, kj, (int)kstride, 0.0f, P, ATT_KB);
                        if (causal && s0 + kn - 1 > i0) att_mask(P, i0, qn, s0, kn);
                        att_bwd_probs(P, qn, kn, L);
                        if (dvb) /* dv_j += P^T dout_i */
                            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)kn, (int)D, (int)qn, 1.0f, P,
                                        ATT_KB, gi, (int)qstride, 1.0f, dvb + s0 * kstride, (int)kstride);
                        if (!dqi && !dkb) continue;
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)qn, (int)kn, (int)D, 1.0f, gi,
                                    (int)qstride, vj, (int)kstride, 0.0f, dP, ATT_KB);
                        att_bwd_ds(dP, P, qn, kn, Di, scale);
                        if (dqi) /* dq_i += dS k_j */
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)qn, (int)D, (int)kn, 1.0f, dP,
                                        ATT_KB, kj, (int)kstride, 1.0f, dqi, (int)qstride);
                        if (dkb) /* dk_j += dS^T q_i */
                            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)kn, (int)D, (int)qn, 1.0f, dP,
                                        ATT_KB, qi, (int)qstride, 1.0f, dkb + s0 * kstride, (int)kstride);
                    }
                }
        }
}

/* ---- RoPE --------------------------------------------------------------- */

// rotate each head's (x[i], x[i+D/2]) pairs by +angle (dir 1) or -angle (dir -1),
// y = or += the result
static void rope_apply(float *y, const float *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta, int dir,
                       int accumulate) {
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

void k_rope_fwd(float *out, const float *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta) {
    rope_apply(out, x, B, T, H, D, theta, 1, 0);
}

void k_rope_bwd(float *dx, const float *dout, int64_t B, int64_t T, int64_t H, int64_t D, float theta) {
    rope_apply(dx, dout, B, T, H, D, theta, -1, 1);
}

/* ---- embedding ---------------------------------------------------------- */

static int bad_index(const int32_t *idx, int64_t N, int64_t V) {
    for (int64_t n = 0; n < N; n++)
        if (idx[n] < 0 || idx[n] >= V) return 1;
    return 0;
}

// out[n] = table[idx[n]]
int k_embedding_fwd(float *out, const int32_t *idx, const float *table, int64_t N, int64_t V, int64_t C) {
    if (bad_index(idx, N, V)) return 1;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) memcpy(out + n * C, table + (int64_t)idx[n] * C, (size_t)C * sizeof *out);
    return 0;
}

// dtable[idx[n]] += dout[n], column blocks in parallel, rows in order
int k_embedding_bwd(float *dtable, const float *dout, const int32_t *idx, int64_t N, int64_t V, int64_t C) {
    if (bad_index(idx, N, V)) return 1;
    int64_t nblk = (C + K_COL_BLOCK - 1) / K_COL_BLOCK;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t c0 = blk * K_COL_BLOCK, len = K_MIN(K_COL_BLOCK, C - c0);
        for (int64_t n = 0; n < N; n++) {
            float *dr = dtable + (int64_t)idx[n] * C + c0;
            const float *gr = dout + n * C + c0;
            for (int64_t c = 0; c < len; c++) dr[c] += gr[c];
        }
    }
    return 0;
}

/* ---- cross-entropy ------------------------------------------------------ */

/* logsumexp of a row of n */
K_CLONES static float row_lse(const float *x, int64_t n) {
    float mx = -INFINITY, s = 0.0f;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; j++) s += k_expf(x[j] - mx);
    return mx + logf(s);
}

// lse[n] = logsumexp(logits[n]); *loss = mean(lse[n] - logits[n, target[n]])
int k_cross_entropy_fwd(float *loss, float *lse, const float *logits, const int32_t *targets, int64_t N, int64_t V) {
    if (bad_index(targets, N, V)) return 1;
#pragma omp parallel for if (N * V >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) lse[n] = row_lse(logits + n * V, V);
    double total = 0.0; /* serial: deterministic */
    for (int64_t n = 0; n < N; n++) total += (double)lse[n] - (double)logits[n * V + targets[n]];
    *loss = N > 0 ? (float)(total / (double)N) : 0.0f;
    return 0;
}

/* d[j] += g * exp(x[j] - L) for j < n */
K_CLONES static void row_softmax_grad(float *restrict d, const float *restrict x, float g, float L, int64_t n) {
#pragma omp simd
    for (int64_t j = 0; j < n; j++) d[j] += g * k_expf(x[j] - L);
}

// dlogits += dloss/N * (exp(logits - lse) - onehot(target))
int k_cross_entropy_bwd(float *dlogits, const float *dloss, const float *logits, const float *lse,
                        const int32_t *targets, int64_t N, int64_t V) {
    if (bad_index(targets, N, V)) return 1;
    if (N <= 0) return 0;
    float g = dloss[0] / (float)N;
#pragma omp parallel for if (N * V >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        row_softmax_grad(dlogits + n * V, logits + n * V, g, lse[n], V);
        dlogits[n * V + targets[n]] -= g;
    }
    return 0;
}

#endif
