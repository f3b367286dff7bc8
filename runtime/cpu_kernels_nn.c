/* cpu_kernels_nn.c - layernorm, rmsnorm, softmax, attention, RoPE, embedding
 * and cross-entropy: the row-wise neural-network kernels.
 *
 * Invariant (see cpu_kernels.h): forward kernels overwrite, backward kernels
 * accumulate; nothing allocates; per-column sums over rows (dw, db, dtable)
 * are done by column-block tasks walking the rows in order, so results do not
 * depend on the thread count. Written once over KT (ktype.h): the bf16
 * instance keeps every statistic and intermediate in float as the fp32
 * instance does and rounds only its stored element-type outputs, so on the
 * same inputs its outputs are the fp32 ones rounded once (test_bf16_nn), with
 * the limits stated at NN_ROW and at the attention.
 */
#include "cpu_kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels_internal.h"
#include "ktype.h"

#ifdef ACC_KT_BF16
/* The bf16 instance's row reductions (sums over a row of x, dy, y) run the
 * float instance's loops, textually, on float copies of the rows made
 * NN_ROW elements at a time on the stack: a loop over bf16 loads would be
 * vectorised with other lanes, so summed in another order. Rows up to NN_ROW
 * give the float instance's sums bit for bit; longer ones add the chunks'
 * sums in order (the statistics may then differ in the last float bits). */
#define NN_ROW 8192

static inline const float *nn_widen(float *restrict buf, const KT *restrict src, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) buf[i] = KLD(src, i);
    return buf;
}
#endif

/* ---- layernorm ---------------------------------------------------------- */

// y = (x - mean) * rstd * w + b per row (b NULL: no bias, as + 0); stats = (mean, rstd) per row
void KN(k_layernorm_fwd)(KT *y, float *stats, const KT *x, const float *w, const float *b, int64_t N, int64_t C,
                         float eps) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const KT *xr = x + n * C; // (C)
        KT *yr = y + n * C;
        float s = 0.0f;
#ifdef ACC_KT_BF16
        float xw[NN_ROW];
        for (int64_t c0 = 0; c0 < C; c0 += NN_ROW) {
            int64_t cn = K_MIN(NN_ROW, C - c0);
            const float *xc = nn_widen(xw, xr + c0, cn);
            float p = 0.0f;
#pragma omp simd reduction(+ : p)
            for (int64_t c = 0; c < cn; c++) p += xc[c];
            s = c0 > 0 ? s + p : p;
        }
        float mean = s / (float)C, var = 0.0f;
        for (int64_t c0 = 0; c0 < C; c0 += NN_ROW) {
            int64_t cn = K_MIN(NN_ROW, C - c0);
            const float *xc = C > NN_ROW ? nn_widen(xw, xr + c0, cn) : xw;
            float p = 0.0f;
#pragma omp simd reduction(+ : p)
            for (int64_t c = 0; c < cn; c++) p += (xc[c] - mean) * (xc[c] - mean);
            var = c0 > 0 ? var + p : p;
        }
#else
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < C; c++) s += xr[c];
        float mean = s / (float)C, var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int64_t c = 0; c < C; c++) var += (xr[c] - mean) * (xr[c] - mean);
#endif
        float rstd = 1.0f / sqrtf(var / (float)C + eps);
        for (int64_t c = 0; c < C; c++) KST(yr, c, (KLD(xr, c) - mean) * rstd * w[c] + (b ? b[c] : 0.0f));
        stats[2 * n] = mean;
        stats[2 * n + 1] = rstd;
    }
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w; dw += dy * xhat; db += dy
void KN(k_layernorm_bwd)(KT *dx, float *dw, float *db, const KT *dy, const KT *x, const float *w, const float *stats,
                         int64_t N, int64_t C) {
    if (dx) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t n = 0; n < N; n++) {
            const KT *xr = x + n * C, *gr = dy + n * C;
            float mean = stats[2 * n], rstd = stats[2 * n + 1];
            float gm = 0.0f, gxm = 0.0f;
#ifdef ACC_KT_BF16
            float xw[NN_ROW], gw[NN_ROW];
            for (int64_t c0 = 0; c0 < C; c0 += NN_ROW) {
                int64_t cn = K_MIN(NN_ROW, C - c0);
                const float *xc = nn_widen(xw, xr + c0, cn), *gc = nn_widen(gw, gr + c0, cn), *wc = w + c0;
                float pm = 0.0f, pxm = 0.0f;
#pragma omp simd reduction(+ : pm, pxm)
                for (int64_t c = 0; c < cn; c++) {
                    float g = gc[c] * wc[c];
                    pm += g;
                    pxm += g * (xc[c] - mean) * rstd;
                }
                gm = c0 > 0 ? gm + pm : pm;
                gxm = c0 > 0 ? gxm + pxm : pxm;
            }
#else
#pragma omp simd reduction(+ : gm, gxm)
            for (int64_t c = 0; c < C; c++) {
                float g = gr[c] * w[c];
                gm += g;
                gxm += g * (xr[c] - mean) * rstd;
            }
#endif
            gm /= (float)C;
            gxm /= (float)C;
            KT *dxr = dx + n * C;
            for (int64_t c = 0; c < C; c++) {
                float xhat = (KLD(xr, c) - mean) * rstd;
                KST(dxr, c, KLD(dxr, c) + rstd * (KLD(gr, c) * w[c] - gm - xhat * gxm));
            }
        }
    }
    if (dw || db) {
        int64_t nblk = (C + K_COL_BLOCK - 1) / K_COL_BLOCK;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t blk = 0; blk < nblk; blk++) {
            int64_t c0 = blk * K_COL_BLOCK, c1 = K_MIN(C, c0 + K_COL_BLOCK);
            for (int64_t n = 0; n < N; n++) {
                const KT *xr = x + n * C, *gr = dy + n * C;
                float mean = stats[2 * n], rstd = stats[2 * n + 1];
                for (int64_t c = c0; c < c1; c++) {
                    if (dw) dw[c] += KLD(gr, c) * (KLD(xr, c) - mean) * rstd;
                    if (db) db[c] += KLD(gr, c);
                }
            }
        }
    }
}

/* ---- rmsnorm ------------------------------------------------------------ */

// y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps); stats = rstd per row
void KN(k_rmsnorm_fwd)(KT *y, float *stats, const KT *x, const float *w, int64_t N, int64_t C, float eps) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const KT *xr = x + n * C; // (C)
        KT *yr = y + n * C;
#ifdef ACC_KT_BF16
        float xw[NN_ROW], ss = 0.0f;
        for (int64_t c0 = 0; c0 < C; c0 += NN_ROW) {
            int64_t cn = K_MIN(NN_ROW, C - c0);
            const float *xc = nn_widen(xw, xr + c0, cn);
            float p = k_dot(xc, xc, cn);
            ss = c0 > 0 ? ss + p : p;
        }
#else
        float ss = k_dot(xr, xr, C);
#endif
        float rstd = 1.0f / sqrtf(ss / (float)C + eps);
        for (int64_t c = 0; c < C; c++) KST(yr, c, KLD(xr, c) * rstd * w[c]);
        stats[n] = rstd;
    }
}

// dx += rstd * g - x * rstd^3 * mean(g * x), g = dy * w; dw += dy * x * rstd
void KN(k_rmsnorm_bwd)(KT *dx, float *dw, const KT *dy, const KT *x, const float *w, const float *stats, int64_t N,
                       int64_t C) {
    if (dx) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t n = 0; n < N; n++) {
            const KT *xr = x + n * C, *gr = dy + n * C;
            float rstd = stats[n], gx = 0.0f;
#ifdef ACC_KT_BF16
            float xw[NN_ROW], gw[NN_ROW];
            for (int64_t c0 = 0; c0 < C; c0 += NN_ROW) {
                int64_t cn = K_MIN(NN_ROW, C - c0);
                const float *xc = nn_widen(xw, xr + c0, cn), *gc = nn_widen(gw, gr + c0, cn), *wc = w + c0;
                float p = 0.0f;
#pragma omp simd reduction(+ : p)
                for (int64_t c = 0; c < cn; c++) p += gc[c] * wc[c] * xc[c];
                gx = c0 > 0 ? gx + p : p;
            }
#else
#pragma omp simd reduction(+ : gx)
            for (int64_t c = 0; c < C; c++) gx += gr[c] * w[c] * xr[c];
#endif
            float k = rstd * rstd * rstd * gx / (float)C;
            KT *dxr = dx + n * C;
            for (int64_t c = 0; c < C; c++) KST(dxr, c, KLD(dxr, c) + (rstd * KLD(gr, c) * w[c] - KLD(xr, c) * k));
        }
    }
    if (dw) {
        int64_t nblk = (C + K_COL_BLOCK - 1) / K_COL_BLOCK;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
        for (int64_t blk = 0; blk < nblk; blk++) {
            int64_t c0 = blk * K_COL_BLOCK, c1 = K_MIN(C, c0 + K_COL_BLOCK);
            for (int64_t n = 0; n < N; n++) {
                const KT *xr = x + n * C, *gr = dy + n * C;
                float rstd = stats[n];
                for (int64_t c = c0; c < c1; c++) dw[c] += KLD(gr, c) * KLD(xr, c) * rstd;
            }
        }
    }
}

/* ---- softmax ------------------------------------------------------------ */

// y = exp(x - max) / sum per row (in place allowed)
void KN(k_softmax_fwd)(KT *y, const KT *x, int64_t N, int64_t C) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const KT *xr = x + n * C; // (C)
        KT *yr = y + n * C;
        float mx = -INFINITY;
        for (int64_t c = 0; c < C; c++) mx = KLD(xr, c) > mx ? KLD(xr, c) : mx;
        float s = 0.0f;
#ifdef ACC_KT_BF16
        /* the exponentials stay float: summed, then recomputed, scaled and
         * rounded on the store (y may alias x: element c is read before it
         * is written) */
        for (int64_t c = 0; c < C; c++) s += expf(KLD(xr, c) - mx);
        float inv = 1.0f / s;
        for (int64_t c = 0; c < C; c++) KST(yr, c, expf(KLD(xr, c) - mx) * inv);
#else
        for (int64_t c = 0; c < C; c++) {
            yr[c] = expf(xr[c] - mx);
            s += yr[c];
        }
        k_scal(yr, 1.0f / s, C);
#endif
    }
}

// dx += y * (dy - sum(dy * y)) per row
void KN(k_softmax_bwd)(KT *dx, const KT *dy, const KT *y, int64_t N, int64_t C) {
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const KT *yr = y + n * C, *gr = dy + n * C; // (C)
        KT *dxr = dx + n * C;
#ifdef ACC_KT_BF16
        float gw[NN_ROW], yw[NN_ROW], s = 0.0f;
        for (int64_t c0 = 0; c0 < C; c0 += NN_ROW) {
            int64_t cn = K_MIN(NN_ROW, C - c0);
            float p = k_dot(nn_widen(gw, gr + c0, cn), nn_widen(yw, yr + c0, cn), cn);
            s = c0 > 0 ? s + p : p;
        }
#else
        float s = k_dot(gr, yr, C);
#endif
        for (int64_t c = 0; c < C; c++) KST(dxr, c, KLD(dxr, c) + KLD(yr, c) * (KLD(gr, c) - s));
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
 * thread count.
 *
 * The bf16 instance runs the same sgemm calls on float copies of its blocks
 * (att_rows widens them into stack buffers) and accumulates in float stack
 * buffers what the float instance accumulates in its outputs (att_acc, then
 * att_store rounds): a forward query block's out rows; in the backward dq of
 * a query block, dk and dv of a chunk of ATT_SCF / min(D, ATT_DC) keys (128
 * keys at D = 64; the loop runs over these key chunks outermost, so k and v
 * are widened once per chunk, q and dout once per query block and chunk).
 * Head dimensions above ATT_DC go in column chunks of ATT_DC (the score
 * products summed over the chunks, the outputs' columns a pass each,
 * recomputing the scores). So with D <= ATT_DC and, in the backward,
 * S <= the key chunk, the bf16 results are the float instance's rounded
 * once; otherwise the scores' sums are split over column chunks and dq is
 * rounded once per key chunk (dk, dv stay exact while D <= ATT_DC). Stack
 * per task: 112 KiB (forward) and 256 KiB (backward) of float buffers. In
 * the float instance the chunks are the whole, the buffers unused (size 1)
 * and every sgemm call the same as before the bf16 instance existed. */
#define ATT_QB 64
#define ATT_KB 64
#ifdef ACC_KT_BF16
#define ATT_DC 128   /* head-dimension columns per pass */
#define ATT_SCF 8192 /* floats of each of the backward's dk, dv accumulators */
#define ATT_WQ (ATT_QB * ATT_DC)
#define ATT_WK (ATT_KB * ATT_DC)
#define ATT_WS ATT_SCF
_Static_assert(ATT_SCF >= ATT_KB * ATT_DC, "a key chunk's k rows (D <= ATT_DC) fill at most ATT_SCF floats");
#else
#define ATT_WQ 1
#define ATT_WK 1
#define ATT_WS 1
#endif

/* Head-dimension columns per pass. */
static inline int64_t att_dchunk(int64_t D) {
#ifdef ACC_KT_BF16
    return K_MIN(D, ATT_DC);
#else
    return D;
#endif
}

/* Keys per pass of the backward (a multiple of ATT_KB in the bf16 instance). */
static inline int64_t att_schunk(int64_t S, int64_t dc) {
#ifdef ACC_KT_BF16
    (void)S;
    return dc > 0 ? K_MAX(ATT_KB, ATT_SCF / dc / ATT_KB * ATT_KB) : ATT_KB;
#else
    (void)dc;
    return S;
#endif
}

/* rows x cols of src (leading dimension ld) as floats for sgemm: src itself
 * in the float instance, else widened into buf (leading dimension cols);
 * *ldf is the leading dimension of the result. */
static inline const float *att_rows(float *buf, const KT *src, int64_t ld, int64_t rows, int64_t cols, int64_t *ldf) {
#ifdef ACC_KT_BF16
    for (int64_t r = 0; r < rows; r++) {
        float *d = buf + r * cols;
        const KT *s = src + r * ld;
#pragma omp simd
        for (int64_t c = 0; c < cols; c++) d[c] = KLD(s, c);
    }
    *ldf = cols;
    return buf;
#else
    (void)buf, (void)rows, (void)cols;
    *ldf = ld;
    return src;
#endif
}

/* The float accumulator of rows x cols of dst (leading dimension ld): dst
 * itself in the float instance, else buf (leading dimension cols), loaded
 * with dst widened if load. att_store rounds it back into dst. */
static inline float *att_acc(float *buf, KT *dst, int64_t ld, int64_t rows, int64_t cols, int load, int64_t *lda) {
#ifdef ACC_KT_BF16
    if (load) att_rows(buf, dst, ld, rows, cols, lda);
    *lda = cols;
    return buf;
#else
    (void)buf, (void)rows, (void)cols, (void)load;
    *lda = ld;
    return dst;
#endif
}

static inline void att_store(KT *dst, int64_t ld, const float *acc, int64_t lda, int64_t rows, int64_t cols) {
#ifdef ACC_KT_BF16
    for (int64_t r = 0; r < rows; r++) {
        KT *d = dst + r * ld;
        const float *a = acc + r * lda;
#pragma omp simd
        for (int64_t c = 0; c < cols; c++) KST(d, c, a[c]);
    }
#else
    (void)dst, (void)ld, (void)acc, (void)lda, (void)rows, (void)cols;
#endif
}

/* Sc (qn x kn, ld ATT_KB) = alpha * a b^T over the D columns of a (qn rows,
 * ld lda) and b (kn rows, ld ldb). With one column chunk (dc >= D, always in
 * the float instance) af and bf are a's and b's rows as floats (from
 * att_rows; leading dimensions ldaf, ldbf); otherwise the product is summed
 * over column chunks of dc, widened into aw and bw. */
static inline void att_scores(float *Sc, const float *af, int64_t ldaf, const float *bf, int64_t ldbf, const KT *a,
                              int64_t lda, const KT *b, int64_t ldb, int64_t qn, int64_t kn, int64_t D, int64_t dc,
                              float alpha, float *aw, float *bw) {
    int64_t d0 = 0;
    do {
        int64_t dn = K_MIN(dc, D - d0);
        if (dc < D) {
            af = att_rows(aw, a + d0, lda, qn, dn, &ldaf);
            bf = att_rows(bw, b + d0, ldb, kn, dn, &ldbf);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)qn, (int)kn, (int)dn, alpha, af, (int)ldaf, bf,
                    (int)ldbf, d0 > 0 ? 1.0f : 0.0f, Sc, ATT_KB);
        d0 += dc;
    } while (d0 < D);
}

/* sum of g[i]*o[i] over D: k_dot (the bf16 instance: on widened chunks of dc
 * in buf, which holds 2*dc floats) */
static inline float att_rowdot(float *buf, const KT *g, const KT *o, int64_t D, int64_t dc) {
#ifdef ACC_KT_BF16
    float s = 0.0f;
    for (int64_t d0 = 0; d0 < D; d0 += dc) {
        int64_t dn = K_MIN(dc, D - d0), ld;
        att_rows(buf, g + d0, 0, 1, dn, &ld);
        att_rows(buf + dc, o + d0, 0, 1, dn, &ld);
        float p = k_dot(buf, buf + dc, dn);
        s = d0 > 0 ? s + p : p;
    }
    return s;
#else
    (void)buf, (void)dc;
    return k_dot(g, o, D);
#endif
}

/* The scores of query rows i0.. against keys s0.. (qn x kn, ld ATT_KB):
 * -inf where the key lies after the query (causal). */
static void att_mask(float *S, int64_t i0, int64_t qn, int64_t s0, int64_t kn) {
    for (int64_t i = 0; i < qn; i++)
        for (int64_t j = K_MAX(0, i0 + i + 1 - s0); j < kn; j++) S[i * ATT_KB + j] = -INFINITY;
}

/* The optional operands of a masked attention: mask, i32 or float, nonzero:
 * key s is attended by query t of head h of batch b, element (b, h, t, s) at
 * b*ms[0] + h*ms[1] + t*ms[2] + s*ms[3]; bias (float), added to the scaled
 * scores, element (b, h, t, s) at b*bs[0] + h*bs[1] + t*bs[2] + s*bs[3] (a
 * stride 0 where either broadcasts). NULL for plain attention. */
typedef struct {
    const void *mask;
    int mask_i32;
    const int64_t *ms;
    const float *bias;
    const int64_t *bs;
} AttMB;

/* whether the mask element at offset i keeps its key */
static inline int att_keep(const AttMB *mb, int64_t i) {
    return mb->mask_i32 ? ((const int32_t *)mb->mask)[i] != 0 : ((const float *)mb->mask)[i] != 0.0f;
}

/* the offset of mask (or bias, with st = bs) element (b, h, t, 0) */
static inline int64_t att_at(const int64_t *st, int64_t b, int64_t h, int64_t t) {
    return b * st[0] + h * st[1] + t * st[2];
}

/* The scores of query rows i0.. of head h of batch b against keys s0..
 * (qn x kn, ld ATT_KB): the bias added, -inf where the mask drops the key. */
static void att_adjust(float *Sc, const AttMB *mb, int64_t b, int64_t h, int64_t i0, int64_t qn, int64_t s0,
                       int64_t kn) {
    for (int64_t i = 0; i < qn; i++) {
        float *s = Sc + i * ATT_KB;
        if (mb->bias) {
            const float *br = mb->bias + att_at(mb->bs, b, h, i0 + i);
            for (int64_t j = 0; j < kn; j++) s[j] += br[(s0 + j) * mb->bs[3]];
        }
        if (mb->mask) {
            int64_t mr = att_at(mb->ms, b, h, i0 + i);
            for (int64_t j = 0; j < kn; j++)
                if (!att_keep(mb, mr + (s0 + j) * mb->ms[3])) s[j] = -INFINITY;
        }
    }
}

/* (The K_CLONES helpers are named with KN: clang makes the resolver of a
 * target_clones function a global symbol even when the function is static,
 * so the two instances' clones need two names.) */

/* One key block of the online softmax of qn rows: S (qn x kn, ld ATT_KB)
 * holds scaled scores, m and l each row's running max and sum. S becomes
 * exp(S - m_new); corr[i] = exp(m_old - m_new) rescales what was
 * accumulated before. */
K_CLONES static void KN(att_fwd_block)(float *S, int64_t qn, int64_t kn, float *m, float *l, float *corr) {
    for (int64_t i = 0; i < qn; i++) {
        float *s = S + i * ATT_KB, mb = m[i], sum = 0.0f;
#pragma omp simd reduction(max : mb)
        for (int64_t j = 0; j < kn; j++) mb = s[j] > mb ? s[j] : mb;
        if (mb == -INFINITY) { /* every key so far masked out: nothing to add */
            memset(s, 0, (size_t)kn * sizeof *s);
            corr[i] = 1.0f;
            continue;
        }
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

// out[b,t,h] = softmax(q k^T / sqrt(D) + bias, masked) v by blocks of queries
// and keys with an online softmax; the out rows themselves are the
// accumulators (bf16: a float copy of them, a pass per column chunk). A row
// whose keys are all masked out is zero, its lse +inf (so the backward's
// probabilities exp(s - lse) are 0).
static void KN(att_fwd)(KT *out, float *lse, const KT *q, const KT *k, const KT *v, const AttMB *mb, int64_t B,
                        int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    if (KVH <= 0) KVH = H;
    const int64_t group = H / KVH, qstride = H * D, kstride = KVH * D, dc = att_dchunk(D);
    const int64_t nqb = (T + ATT_QB - 1) / ATT_QB;
    const float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for collapse(3) schedule(dynamic, 1) if (B * H * T * S * D >= K_PAR_MIN)
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t qb = 0; qb < nqb; qb++) {
                int64_t i0 = qb * ATT_QB, qn = K_MIN(ATT_QB, T - i0);
                const KT *qi = q + (b * T + i0) * qstride + h * D; // (qn, D), ld qstride
                KT *oi = out + (b * T + i0) * qstride + h * D;
                const KT *kb = k + b * S * kstride + (h / group) * D;
                const KT *vb = v + b * S * kstride + (h / group) * D;
                int64_t send = causal ? K_MIN(i0 + qn, S) : S;
                float sc[ATT_QB * ATT_KB], m[ATT_QB], l[ATT_QB], corr[ATT_QB];
                float qw[ATT_WQ], kw[ATT_WK], ow[ATT_WQ];
                const float *qf = NULL; /* one chunk: q's rows as floats, for every key block */
                int64_t e0 = 0, ldqf = 0;
                if (dc >= D) qf = att_rows(qw, qi, qstride, qn, D, &ldqf);
                do { /* out's columns e0.. */
                    int64_t en = K_MIN(dc, D - e0), ldo, ldv;
                    float *o = att_acc(ow, oi + e0, qstride, qn, en, 0, &ldo);
                    for (int64_t i = 0; i < qn; i++) {
                        m[i] = -INFINITY;
                        l[i] = 0.0f;
                        if (send <= 0) /* no keys: a zero row */
                            memset(o + i * ldo, 0, (size_t)en * sizeof *o);
                    }
                    for (int64_t s0 = 0; s0 < send; s0 += ATT_KB) {
                        int64_t kn = K_MIN(ATT_KB, send - s0);
                        const float *kf = NULL;
                        int64_t ldkf = 0;
                        if (dc >= D) kf = att_rows(kw, kb + s0 * kstride, kstride, kn, D, &ldkf);
                        att_scores(sc, qf, ldqf, kf, ldkf, qi, qstride, kb + s0 * kstride, kstride, qn, kn, D, dc,
                                   scale, qw, kw);
                        if (causal && s0 + kn - 1 > i0) att_mask(sc, i0, qn, s0, kn);
                        if (mb) att_adjust(sc, mb, b, h, i0, qn, s0, kn);
                        KN(att_fwd_block)(sc, qn, kn, m, l, corr);
                        if (s0 > 0)
                            for (int64_t i = 0; i < qn; i++) k_scal(o + i * ldo, corr[i], en);
                        const float *vf = att_rows(kw, vb + s0 * kstride + e0, kstride, kn, en, &ldv);
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)qn, (int)en, (int)kn, 1.0f, sc,
                                    ATT_KB, vf, (int)ldv, s0 > 0 ? 1.0f : 0.0f, o, (int)ldo);
                    }
                    for (int64_t i = 0; i < qn; i++) {
                        if (l[i] > 0.0f) k_scal(o + i * ldo, 1.0f / l[i], en);
                        lse[(b * H + h) * T + i0 + i] = l[i] > 0.0f ? m[i] + logf(l[i]) : INFINITY;
                    }
                    att_store(oi + e0, qstride, o, ldo, qn, en);
                    e0 += dc;
                } while (e0 < D);
            }
}

void KN(k_attention_fwd)(KT *out, float *lse, const KT *q, const KT *k, const KT *v, int64_t B, int64_t T, int64_t S,
                         int64_t H, int64_t KVH, int64_t D, int causal) {
    KN(att_fwd)(out, lse, q, k, v, NULL, B, T, S, H, KVH, D, causal);
}

void KN(k_attention_masked_fwd)(KT *out, float *lse, const KT *q, const KT *k, const KT *v, const void *mask,
                                int mask_i32, const int64_t *ms, const float *bias, const int64_t *bs, int64_t B,
                                int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    AttMB mb = {mask, mask_i32, ms, bias, bs};
    KN(att_fwd)(out, lse, q, k, v, &mb, B, T, S, H, KVH, D, causal);
}

/* P = exp(S - lse_i) in place (S: qn x kn scaled scores, ld ATT_KB). */
K_CLONES static void KN(att_bwd_probs)(float *S, int64_t qn, int64_t kn, const float *L) {
    for (int64_t i = 0; i < qn; i++) {
        float *s = S + i * ATT_KB, Li = L[i];
#pragma omp simd
        for (int64_t j = 0; j < kn; j++) s[j] = k_expf(s[j] - Li);
    }
}

/* dP becomes dS = P * (dP - Di) * scale. */
K_CLONES static void KN(att_bwd_ds)(float *restrict dP, const float *restrict P, int64_t qn, int64_t kn,
                                    const float *Di, float scale) {
    for (int64_t i = 0; i < qn; i++) {
        float *d = dP + i * ATT_KB, di = Di[i];
        const float *p = P + i * ATT_KB;
#pragma omp simd
        for (int64_t j = 0; j < kn; j++) d[j] = p[j] * (d[j] - di) * scale;
    }
}

// dq, dk, dv += gradients of attention, by blocks: P = exp(s - lse) recomputed,
// dS = P * (dout v^T - rowsum(dout * out)). One task per (b, kv head) owns dk,
// dv of that kv head and dq of its query heads: no races under GQA. (bf16:
// a pass per chunk of keys and per chunk of columns, see above.)
static void KN(att_bwd)(KT *dq, KT *dk, KT *dv, const KT *dout, const KT *q, const KT *k, const KT *v, const KT *out,
                        const float *lse, const AttMB *mb, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH,
                        int64_t D, int causal) {
#ifdef ACC_KT_BF16
    /* Gradients that are one buffer (attention(x, kv, kv): dk is dv) would
     * each be widened into a float accumulator and stored over the other's
     * sums: one pass per gradient, each adding to what the last stored. */
    if ((dq && (dq == dk || dq == dv)) || (dk && dk == dv)) {
        KN(att_bwd)(dq, NULL, NULL, dout, q, k, v, out, lse, mb, B, T, S, H, KVH, D, causal);
        KN(att_bwd)(NULL, dk, NULL, dout, q, k, v, out, lse, mb, B, T, S, H, KVH, D, causal);
        KN(att_bwd)(NULL, NULL, dv, dout, q, k, v, out, lse, mb, B, T, S, H, KVH, D, causal);
        return;
    }
#endif
    if (KVH <= 0) KVH = H;
    const int64_t group = H / KVH, qstride = H * D, kstride = KVH * D;
    const int64_t dc = att_dchunk(D), scn = att_schunk(S, dc);
    const float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (B * H * T * S * D >= K_PAR_MIN)
    for (int64_t b = 0; b < B; b++)
        for (int64_t kh = 0; kh < KVH; kh++) {
            const KT *kb = k + b * S * kstride + kh * D, *vb = v + b * S * kstride + kh * D;
            KT *dkb = dk ? dk + b * S * kstride + kh * D : NULL;
            KT *dvb = dv ? dv + b * S * kstride + kh * D : NULL;
            float P[ATT_QB * ATT_KB], dP[ATT_QB * ATT_KB], L[ATT_QB], Di[ATT_QB];
            float qw[ATT_WQ], gw[ATT_WQ], kw[ATT_WS], vw[ATT_WS], dqw[ATT_WQ], dkw[ATT_WS], dvw[ATT_WS];
            const int one = dc >= D; /* one column chunk: the blocks widened once (float instance: always) */
            for (int64_t c0 = 0; c0 < S; c0 += scn) { /* keys c0..c1 */
                int64_t c1 = K_MIN(S, c0 + scn), e0 = 0;
                do { /* the gradients' columns e0.. */
                    int64_t en = K_MIN(dc, D - e0), ldk = 0, ldv = 0;
                    float *dka = dkb ? att_acc(dkw, dkb + c0 * kstride + e0, kstride, c1 - c0, en, 1, &ldk) : NULL;
                    float *dva = dvb ? att_acc(dvw, dvb + c0 * kstride + e0, kstride, c1 - c0, en, 1, &ldv) : NULL;
                    const float *kcf = NULL, *vcf = NULL; /* one chunk: the chunk's k and v rows as floats */
                    int64_t ldkc = 0, ldvc = 0;
                    if (one) {
                        kcf = att_rows(kw, kb + c0 * kstride, kstride, c1 - c0, D, &ldkc);
                        vcf = att_rows(vw, vb + c0 * kstride, kstride, c1 - c0, D, &ldvc);
                    }
                    for (int64_t h = kh * group; h < (kh + 1) * group; h++)
                        for (int64_t i0 = 0; i0 < T; i0 += ATT_QB) {
                            int64_t qn = K_MIN(ATT_QB, T - i0), row = (b * T + i0) * qstride + h * D;
                            const KT *qi = q + row, *oi = out + row, *gi = dout + row; // (qn, D)
                            KT *dqi = dq ? dq + row : NULL;
                            int64_t send = causal ? K_MIN(i0 + qn, c1) : c1;
                            if (send <= c0) continue; /* no visible key in this chunk */
                            const float *qf = NULL, *gf = NULL;
                            int64_t ldq = 0, ldqf = 0, ldgf = 0, ldo;
                            if (one) {
                                qf = att_rows(qw, qi, qstride, qn, D, &ldqf);
                                gf = att_rows(gw, gi, qstride, qn, D, &ldgf);
                            }
                            for (int64_t i = 0; i < qn; i++) {
                                L[i] = lse[(b * H + h) * T + i0 + i];
                                if (one) /* dP: scratch for a row of out */
                                    Di[i] = k_dot(gf + i * ldgf, att_rows(dP, oi + i * qstride, 0, 1, D, &ldo), D);
                                else Di[i] = att_rowdot(dP, gi + i * qstride, oi + i * qstride, D, dc);
                            }
                            float *dqa = dqi ? att_acc(dqw, dqi + e0, qstride, qn, en, 1, &ldq) : NULL;
                            for (int64_t s0 = c0; s0 < send; s0 += ATT_KB) {
                                int64_t kn = K_MIN(ATT_KB, send - s0), ldkf = 0, ldvf = 0, ldf;
                                const KT *kj = kb + s0 * kstride, *vj = vb + s0 * kstride; // (kn, D)
                                const float *kf = NULL, *vf = NULL;
                                if (one) {
                                    kf = kcf + (s0 - c0) * ldkc, ldkf = ldkc;
                                    vf = vcf + (s0 - c0) * ldvc, ldvf = ldvc;
                                }
                                att_scores(P, qf, ldqf, kf, ldkf, qi, qstride, kj, kstride, qn, kn, D, dc, scale, qw,
                                           kw);
                                if (causal && s0 + kn - 1 > i0) att_mask(P, i0, qn, s0, kn);
                                if (mb) att_adjust(P, mb, b, h, i0, qn, s0, kn);
                                KN(att_bwd_probs)(P, qn, kn, L);
                                if (dva) { /* dv_j += P^T dout_i */
                                    const float *ge = one ? gf : att_rows(qw, gi + e0, qstride, qn, en, &ldf);
                                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)kn, (int)en, (int)qn,
                                                1.0f, P, ATT_KB, ge, (int)(one ? ldgf : ldf), 1.0f,
                                                dva + (s0 - c0) * ldv, (int)ldv);
                                }
                                if (!dqa && !dka) continue;
                                att_scores(dP, gf, ldgf, vf, ldvf, gi, qstride, vj, kstride, qn, kn, D, dc, 1.0f, qw,
                                           kw);
                                KN(att_bwd_ds)(dP, P, qn, kn, Di, scale);
                                if (dqa) { /* dq_i += dS k_j */
                                    const float *ke = one ? kf : att_rows(kw, kj + e0, kstride, kn, en, &ldf);
                                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)qn, (int)en, (int)kn,
                                                1.0f, dP, ATT_KB, ke, (int)(one ? ldkf : ldf), 1.0f, dqa, (int)ldq);
                                }
                                if (dka) { /* dk_j += dS^T q_i */
                                    const float *qe = one ? qf : att_rows(qw, qi + e0, qstride, qn, en, &ldf);
                                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)kn, (int)en, (int)qn,
                                                1.0f, dP, ATT_KB, qe, (int)(one ? ldqf : ldf), 1.0f,
                                                dka + (s0 - c0) * ldk, (int)ldk);
                                }
                            }
                            if (dqa) att_store(dqi + e0, qstride, dqa, ldq, qn, en);
                        }
                    if (dka) att_store(dkb + c0 * kstride + e0, kstride, dka, ldk, c1 - c0, en);
                    if (dva) att_store(dvb + c0 * kstride + e0, kstride, dva, ldv, c1 - c0, en);
                    e0 += dc;
                } while (e0 < D);
            }
        }
}

void KN(k_attention_bwd)(KT *dq, KT *dk, KT *dv, const KT *dout, const KT *q, const KT *k, const KT *v, const KT *out,
                         const float *lse, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                         int causal) {
    KN(att_bwd)(dq, dk, dv, dout, q, k, v, out, lse, NULL, B, T, S, H, KVH, D, causal);
}

/* sum of x[i]*y[i] over n elements, in float, in order */
static inline float att_kdot(const KT *x, const KT *y, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += KLD(x, i) * KLD(y, i);
    return s;
}

// dbias += dS = P * (dout v^T - rowsum(dout * out)), summed over the
// dimensions the bias broadcasts over. One task per bias row (b', h', t')
// owns that row's elements and walks the (b, h, t) it covers in order, every
// score and product recomputed one pair at a time: no races, and the sums
// do not depend on the thread count.
static void KN(att_bias_grad)(float *dbias, const KT *dout, const KT *q, const KT *k, const KT *v, const KT *out,
                              const float *lse, const AttMB *mb, int64_t B, int64_t T, int64_t S, int64_t H,
                              int64_t KVH, int64_t D, int causal) {
    const int64_t group = H / KVH, qstride = H * D, kstride = KVH * D, *bs = mb->bs;
    const int64_t nb = bs[0] ? B : 1, nh = bs[1] ? H : 1, nt = bs[2] ? T : 1;
    const float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for collapse(3) schedule(dynamic, 1) if (B * H * T * S * D >= K_PAR_MIN)
    for (int64_t b1 = 0; b1 < nb; b1++)
        for (int64_t h1 = 0; h1 < nh; h1++)
            for (int64_t t1 = 0; t1 < nt; t1++) {
                int64_t at = b1 * bs[0] + h1 * bs[1] + t1 * bs[2];
                float *db = dbias + at;
                const float *br = mb->bias + at;
                for (int64_t b = bs[0] ? b1 : 0; b < (bs[0] ? b1 + 1 : B); b++)
                    for (int64_t h = bs[1] ? h1 : 0; h < (bs[1] ? h1 + 1 : H); h++)
                        for (int64_t t = bs[2] ? t1 : 0; t < (bs[2] ? t1 + 1 : T); t++) {
                            int64_t row = (b * T + t) * qstride + h * D, send = causal ? K_MIN(t + 1, S) : S;
                            float L = lse[(b * H + h) * T + t];
                            if (L == INFINITY) continue; /* every key masked out: no gradient */
                            float Di = att_kdot(dout + row, out + row, D);
                            const KT *kb = k + b * S * kstride + (h / group) * D,
                                     *vb = v + b * S * kstride + (h / group) * D;
                            for (int64_t s = 0; s < send; s++) {
                                if (mb->mask && !att_keep(mb, att_at(mb->ms, b, h, t) + s * mb->ms[3])) continue;
                                float sc = scale * att_kdot(q + row, kb + s * kstride, D) + br[s * bs[3]];
                                float p = expf(sc - L), dp = att_kdot(dout + row, vb + s * kstride, D);
                                db[s * bs[3]] += p * (dp - Di);
                            }
                        }
            }
}

void KN(k_attention_masked_bwd)(KT *dq, KT *dk, KT *dv, float *dbias, const KT *dout, const KT *q, const KT *k,
                                const KT *v, const KT *out, const float *lse, const void *mask, int mask_i32,
                                const int64_t *ms, const float *bias, const int64_t *bs, int64_t B, int64_t T,
                                int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    AttMB mb = {mask, mask_i32, ms, bias, bs};
    if (KVH <= 0) KVH = H;
    if (dq || dk || dv) KN(att_bwd)(dq, dk, dv, dout, q, k, v, out, lse, &mb, B, T, S, H, KVH, D, causal);
    if (dbias && bias) KN(att_bias_grad)(dbias, dout, q, k, v, out, lse, &mb, B, T, S, H, KVH, D, causal);
}

/* ---- RoPE --------------------------------------------------------------- */

// rotate each head's (x[i], x[i+D/2]) pairs by +angle (dir 1) or -angle (dir -1),
// y = or += the result
static void rope_apply(KT *y, const KT *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta, int dir,
                       int accumulate) {
    const int64_t half = D / 2, C = H * D;
#pragma omp parallel for collapse(2) if (B * T * C >= K_PAR_MIN)
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            const KT *xr = x + (b * T + t) * C; // (H*D)
            KT *yr = y + (b * T + t) * C;
            for (int64_t i = 0; i < half; i++) {
                double freq = pow((double)theta, -2.0 * (double)i / (double)D);
                double ang = (double)t * freq;
                float cs = (float)cos(ang), sn = (float)sin(ang) * (float)dir;
                for (int64_t h = 0; h < H; h++) {
                    float x1 = KLD(xr, h * D + i), x2 = KLD(xr, h * D + i + half);
                    float y1 = x1 * cs - x2 * sn, y2 = x2 * cs + x1 * sn;
                    if (accumulate) {
                        KST(yr, h * D + i, KLD(yr, h * D + i) + y1);
                        KST(yr, h * D + i + half, KLD(yr, h * D + i + half) + y2);
                    } else {
                        KST(yr, h * D + i, y1);
                        KST(yr, h * D + i + half, y2);
                    }
                }
            }
        }
}

void KN(k_rope_fwd)(KT *out, const KT *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta) {
    rope_apply(out, x, B, T, H, D, theta, 1, 0);
}

void KN(k_rope_bwd)(KT *dx, const KT *dout, int64_t B, int64_t T, int64_t H, int64_t D, float theta) {
    rope_apply(dx, dout, B, T, H, D, theta, -1, 1);
}

/* ---- embedding ---------------------------------------------------------- */

static int bad_index(const int32_t *idx, int64_t N, int64_t V) {
    for (int64_t n = 0; n < N; n++)
        if (idx[n] < 0 || idx[n] >= V) return 1;
    return 0;
}

// out[n] = table[idx[n]] (bf16: rounded)
int KN(k_embedding_fwd)(KT *out, const int32_t *idx, const float *table, int64_t N, int64_t V, int64_t C) {
    if (bad_index(idx, N, V)) return 1;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
#ifdef ACC_KT_BF16
        const float *tr = table + (int64_t)idx[n] * C;
        KT *orow = out + n * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) KST(orow, c, tr[c]);
#else
        memcpy(out + n * C, table + (int64_t)idx[n] * C, (size_t)C * sizeof *out);
#endif
    }
    return 0;
}

// dtable[idx[n]] += dout[n], column blocks in parallel, rows in order
int KN(k_embedding_bwd)(float *dtable, const KT *dout, const int32_t *idx, int64_t N, int64_t V, int64_t C) {
    if (bad_index(idx, N, V)) return 1;
    int64_t nblk = (C + K_COL_BLOCK - 1) / K_COL_BLOCK;
#pragma omp parallel for if (N * C >= K_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t c0 = blk * K_COL_BLOCK, len = K_MIN(K_COL_BLOCK, C - c0);
        for (int64_t n = 0; n < N; n++) {
            float *dr = dtable + (int64_t)idx[n] * C + c0;
            const KT *gr = dout + n * C + c0;
            for (int64_t c = 0; c < len; c++) dr[c] += KLD(gr, c);
        }
    }
    return 0;
}

/* ---- cross-entropy ------------------------------------------------------ */

/* logsumexp of a row of n */
K_CLONES static float KN(row_lse)(const KT *x, int64_t n) {
    float mx = -INFINITY, s = 0.0f;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < n; j++) mx = KLD(x, j) > mx ? KLD(x, j) : mx;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; j++) s += k_expf(KLD(x, j) - mx);
    return mx + logf(s);
}

// lse[n] = logsumexp(logits[n]); *loss = mean(lse[n] - logits[n, target[n]])
int KN(k_cross_entropy_fwd)(float *loss, float *lse, const KT *logits, const int32_t *targets, int64_t N, int64_t V) {
    if (bad_index(targets, N, V)) return 1;
#pragma omp parallel for if (N * V >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) lse[n] = KN(row_lse)(logits + n * V, V);
    double total = 0.0; /* serial: deterministic */
    for (int64_t n = 0; n < N; n++) total += (double)lse[n] - (double)KLD(logits, n * V + targets[n]);
    *loss = N > 0 ? (float)(total / (double)N) : 0.0f;
    return 0;
}

/* d[j] += g * exp(x[j] - L) for j < n; the bf16 instance also subtracts g at
 * the target t before the one rounding (the float instance's caller does it
 * on the float sum) */
K_CLONES static void KN(row_softmax_grad)(KT *restrict d, const KT *restrict x, float g, float L, int64_t n,
                                          int64_t t) {
#ifdef ACC_KT_BF16
#pragma omp simd
    for (int64_t j = 0; j < n; j++) {
        float s = KLD(d, j) + g * k_expf(KLD(x, j) - L);
        KST(d, j, j == t ? s - g : s);
    }
#else
    (void)t;
#pragma omp simd
    for (int64_t j = 0; j < n; j++) d[j] += g * k_expf(x[j] - L);
#endif
}

// dlogits += dloss/N * (exp(logits - lse) - onehot(target))
int KN(k_cross_entropy_bwd)(KT *dlogits, const float *dloss, const KT *logits, const float *lse, const int32_t *targets,
                            int64_t N, int64_t V) {
    if (bad_index(targets, N, V)) return 1;
    if (N <= 0) return 0;
    float g = dloss[0] / (float)N;
#pragma omp parallel for if (N * V >= K_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        KN(row_softmax_grad)(dlogits + n * V, logits + n * V, g, lse[n], V, targets[n]);
#ifndef ACC_KT_BF16
        dlogits[n * V + targets[n]] -= g;
#endif
    }
    return 0;
}
