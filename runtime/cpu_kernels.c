/* cpu_kernels.c - helpers, matmul, broadcasting elementwise ops, unary
 * activations, dropout, elementwise chains, casts and AdamW.
 *
 * Compiled twice (ktype.h): as float, and as bf16 by cpu_kernels_bf16.c.
 * Both instances compute in float; the bf16 one widens every load and rounds
 * every store, and keeps in float whatever the fp32 kernel keeps in float
 * (running sums, a chain's running value), so that its outputs are
 * acc_f32_bf16 of the fp32 kernel's on the same inputs wherever the
 * arithmetic is the same. The exception is the GEMM: fp32 is one cblas_sgemm,
 * bf16 a blocked GEMM (bgemm below: vdpbf16ps on bf16 operands where the
 * CPU has AVX512-BF16, else cblas_sgemm over widened panels), which sums in
 * another order.
 *
 * Invariant (see cpu_kernels.h): forward kernels overwrite, backward kernels
 * accumulate; nothing allocates; results do not depend on the thread count.
 */
#include "cpu_kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels_internal.h"
#include "ktype.h"
#include "philox.h"

/* ---- helpers ------------------------------------------------------------ */

void KN(k_zero)(KT *x, int64_t n) { /* +0.0 is all zero bits in both types */
    if (n > 0) memset(x, 0, (size_t)n * sizeof *x);
}

void KN(k_fill)(KT *x, float value, int64_t n) {
    for (int64_t i = 0; i < n; i++) KST(x, i, value);
}

void KN(k_add_into)(KT *y, const KT *x, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) KST(y, i, KLD(y, i) + KLD(x, i));
}

void KN(k_copy)(KT *y, const KT *x, int64_t n) {
    if (n > 0 && y != x) memcpy(y, x, (size_t)n * sizeof *y);
}

/* ---- casts ---------------------------------------------------------------- */

/* In the float instance KLD and KST are plain accesses: copies and adds. */
void KN(k_cast_fwd)(KT *out, const float *x, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) KST(out, i, x[i]);
}

void KN(k_cast_bwd)(float *dx, const KT *dout, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) dx[i] += KLD(dout, i);
}

void KN(k_uncast_fwd)(float *out, const KT *x, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = KLD(x, i);
}

void KN(k_uncast_bwd)(KT *dx, const float *dout, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) KST(dx, i, KLD(dx, i) + dout[i]);
}

/* ---- matmul ------------------------------------------------------------- */

static CBLAS_TRANSPOSE tr(int t) { return t ? CblasTrans : CblasNoTrans; }

#ifndef ACC_KT_BF16

/* C (m, n) = alpha * op(A) @ op(B) + beta * C, row-major */
static void gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float beta, float *C, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), (int)m, (int)n, (int)k, 1.0f, A, (int)lda, B, (int)ldb, beta, C,
                (int)ldc);
}

#else

/* The bf16 GEMM. C is cut into fixed tiles of BG_MT x BG_NT, each computed
 * into a float tile on the stack and rounded into C once at the end; tiles
 * run in parallel. Two ways to fill a tile:
 *  - on a CPU with AVX512-BF16, k_bgemm_block (cpu_bgemm.c) multiplies the
 *    bf16 operands as they are, K in blocks of K_BGEMM_KB;
 *  - elsewhere (OpenBLAS here has cblas_sgemm only: Debian's build exports
 *    no cblas_sbgemm), a tile walks K in blocks of BG_KB, widens the block's
 *    panels of op(A) and op(B) into float buffers on the stack and lets
 *    cblas_sgemm accumulate them into the tile. OpenBLAS's OpenMP build runs
 *    one thread inside a parallel region (its num_cpu_avail asks
 *    omp_in_parallel).
 * Stack per call at most (BG_MT*BG_KB + BG_KB*BG_NT + BG_MT*BG_NT) floats =
 * 192 KiB (no malloc, no thread-local state: the library may be dlopen'ed).
 * The tiling and the order of the K blocks are fixed, so the bits do not
 * depend on the thread count. Against fp32's single cblas_sgemm only the
 * float summation order and the final rounding differ. */
#define BG_MT K_BGEMM_MT
#define BG_NT K_BGEMM_NT
#define BG_KB 128

/* dst (rows, cols) = src rows of cols elements, ld apart, widened */
K_CLONES static void bg_widen(float *restrict dst, const acc_bf16 *restrict src, int64_t rows, int64_t cols,
                              int64_t ld) {
    for (int64_t r = 0; r < rows; r++) {
#pragma omp simd
        for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = acc_bf16_f32(src[r * ld + c]);
    }
}

/* C rows (rows, cols) = round(tile + bias), or round(C_old + tile) if acc, in
 * float (linear's bias only comes with an overwrite); tile rows ldt apart */
K_CLONES static void bg_store(acc_bf16 *restrict C, int64_t ldc, const float *restrict tile, int64_t ldt, int64_t rows,
                              int64_t cols, const acc_bf16 *restrict bias, int acc) {
    for (int64_t r = 0; r < rows; r++) {
        acc_bf16 *cr = C + r * ldc;
        const float *t = tile + r * ldt;
        if (bias) {
#pragma omp simd
            for (int64_t c = 0; c < cols; c++) cr[c] = acc_f32_bf16(t[c] + acc_bf16_f32(bias[c]));
        } else if (acc) {
#pragma omp simd
            for (int64_t c = 0; c < cols; c++) cr[c] = acc_f32_bf16(acc_bf16_f32(cr[c]) + t[c]);
        } else {
#pragma omp simd
            for (int64_t c = 0; c < cols; c++) cr[c] = acc_f32_bf16(t[c]);
        }
    }
}

/* A bf16 GEMM: C (m, n) = round(P + bias) (bias per column, or none), or
 * with acc C = round(C + P), where P = sum over q < kbatch of
 * op(A + q*sa) @ op(B + q*sb) (inner dim k each), summed in float: a shared
 * weight's gradient sums over the batch before its one rounding. */
typedef struct {
    int ta, tb;
    int64_t m, n, k;
    const acc_bf16 *A, *B;
    int64_t lda, ldb;
    int64_t kbatch, sa, sb;
    acc_bf16 *C;
    int64_t ldc;
    int acc;
    const acc_bf16 *bias;
} BgGemm;

/* One tile of C on AVX512-BF16: rows i0.., mb of them, columns j0.., nb. */
static void bg_tile_native(const BgGemm *g, int64_t i0, int64_t mb, int64_t j0, int64_t nb) {
    float tile[BG_MT * BG_NT];
    int64_t lda = g->lda, ldb = g->ldb, k = g->k;
    int first = 1;
    for (int64_t q = 0; q < g->kbatch; q++) {
        const acc_bf16 *A = g->A + q * g->sa, *B = g->B + q * g->sb;
        for (int64_t k0 = 0; k0 < k; k0 += K_BGEMM_KB) {
            int64_t kb = K_MIN(K_BGEMM_KB, k - k0);
            k_bgemm_block(tile, BG_NT, g->ta, g->tb, mb, nb, kb, g->ta ? A + k0 * lda + i0 : A + i0 * lda + k0, lda,
                          g->tb ? B + j0 * ldb + k0 : B + k0 * ldb + j0, ldb, first);
            first = 0;
        }
    }
    if (first) memset(tile, 0, sizeof tile); /* k == 0 */
    bg_store(g->C + i0 * g->ldc + j0, g->ldc, tile, BG_NT, mb, nb, g->bias ? g->bias + j0 : NULL, g->acc);
}

/* One tile by widening and cblas_sgemm. op(A) is widened as stored: (mb, kb)
 * rows of A, or (kb, mb) rows of A^T if ta (so every copied run is
 * contiguous), and cblas_sgemm is told the transpose. */
static void bg_tile_widen(const BgGemm *g, int64_t i0, int64_t mb, int64_t j0, int64_t nb) {
    float pa[BG_MT * BG_KB], pb[BG_KB * BG_NT], tile[BG_MT * BG_NT];
    int64_t lda = g->lda, ldb = g->ldb, k = g->k;
    int first = 1;
    for (int64_t q = 0; q < g->kbatch; q++) {
        const acc_bf16 *A = g->A + q * g->sa, *B = g->B + q * g->sb;
        for (int64_t k0 = 0; k0 < k; k0 += BG_KB) {
            int64_t kb = K_MIN(BG_KB, k - k0);
            if (g->ta) bg_widen(pa, A + k0 * lda + i0, kb, mb, lda);
            else bg_widen(pa, A + i0 * lda + k0, mb, kb, lda);
            if (g->tb) bg_widen(pb, B + j0 * ldb + k0, nb, kb, ldb);
            else bg_widen(pb, B + k0 * ldb + j0, kb, nb, ldb);
            cblas_sgemm(CblasRowMajor, tr(g->ta), tr(g->tb), (int)mb, (int)nb, (int)kb, 1.0f, pa,
                        (int)(g->ta ? mb : kb), pb, (int)(g->tb ? kb : nb), first ? 0.0f : 1.0f, tile, (int)nb);
            first = 0;
        }
    }
    if (first) memset(tile, 0, (size_t)(mb * nb) * sizeof *tile); /* k == 0 */
    bg_store(g->C + i0 * g->ldc + j0, g->ldc, tile, nb, mb, nb, g->bias ? g->bias + j0 : NULL, g->acc);
}

/* Always inside a team, even for one tile: outside one, OpenBLAS would split
 * a tile's sgemm over the threads, and its float results depend on the split
 * (measured: 128x128x128 differs between 1, 2 and 3 threads). A team of one
 * (OMP_NUM_THREADS=1) is no team, but then OpenBLAS has one thread too. */
static void bgemm(const BgGemm *g) {
    int64_t tm = (g->m + BG_MT - 1) / BG_MT, tn = (g->n + BG_NT - 1) / BG_NT, nt = tm * tn;
    void (*tile)(const BgGemm *, int64_t, int64_t, int64_t, int64_t) =
        k_bgemm_native() ? bg_tile_native : bg_tile_widen;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < nt; t++) {
        int64_t i0 = t / tn * BG_MT, j0 = t % tn * BG_NT;
        tile(g, i0, K_MIN(BG_MT, g->m - i0), j0, K_MIN(BG_NT, g->n - j0));
    }
}

/* gemm's contract over bf16: beta is 0 (overwrite) or 1 (accumulate) */
static void gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const KT *A, int64_t lda, const KT *B, int64_t ldb,
                 float beta, KT *C, int64_t ldc) {
    BgGemm g = {ta, tb, m, n, k, A, B, lda, ldb, 1, 0, 0, C, ldc, beta != 0.0f, NULL};
    bgemm(&g);
}

#endif

// out (batch, M, N) = op(a) @ op(b)
void KN(k_matmul_fwd)(KT *out, const KT *a, const KT *b, int64_t batch, int64_t M, int64_t N, int64_t K, int trans_a,
                      int trans_b, int b_batched) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    if (K <= 0) {
        KN(k_zero)(out, batch * M * N);
        return;
    }
    int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
    if (!trans_a && !b_batched) { /* one GEMM over all batch*M rows */
        gemm(0, trans_b, batch * M, N, K, a, lda, b, ldb, 0.0f, out, N);
        return;
    }
    for (int64_t i = 0; i < batch; i++)
        gemm(trans_a, trans_b, M, N, K, a + i * M * K, lda, b + (b_batched ? i * K * N : 0), ldb, 0.0f, out + i * M * N,
             N);
}

// da += d/da, db += d/db of out = op(a) @ op(b) (beta = 1 accumulates)
void KN(k_matmul_bwd)(KT *da, KT *db, const KT *dout, const KT *a, const KT *b, int64_t batch, int64_t M, int64_t N,
                      int64_t K, int trans_a, int trans_b, int b_batched) {
    if (batch <= 0 || M <= 0 || N <= 0 || K <= 0) return;
    int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
    if (da) {
        if (!trans_a && !b_batched) { /* da (batch*M, K) += dout @ op(b)^T */
            gemm(0, !trans_b, batch * M, K, N, dout, N, b, ldb, 1.0f, da, K);
        } else {
            for (int64_t i = 0; i < batch; i++) {
                const KT *bi = b + (b_batched ? i * K * N : 0);
                if (!trans_a) /* da_i (M, K) += dout_i @ op(b)^T */
                    gemm(0, !trans_b, M, K, N, dout + i * M * N, N, bi, ldb, 1.0f, da + i * M * K, K);
                else /* da_i (K, M) += op(b) @ dout_i^T */
                    gemm(trans_b, 1, K, M, N, bi, ldb, dout + i * M * N, N, 1.0f, da + i * M * K, M);
            }
        }
    }
    if (db) {
        if (!trans_a && !b_batched) { /* the batch folds into the GEMM's inner dim */
            if (!trans_b)             /* db (K, N) += a^T @ dout */
                gemm(1, 0, K, N, batch * M, a, K, dout, N, 1.0f, db, N);
            else /* db (N, K) += dout^T @ a */ gemm(1, 0, N, K, batch * M, dout, N, a, K, 1.0f, db, K);
#ifdef ACC_KT_BF16
        } else if (!b_batched) { /* trans_a, b shared: db sums the batch in float, then rounds once */
            BgGemm g = {!trans_a, 0, K, N, M, a, dout, lda, N, batch, M * K, M * N, db, N, 1, NULL};
            if (trans_b) g = (BgGemm){1, trans_a, N, K, M, dout, a, N, lda, batch, M * N, M * K, db, K, 1, NULL};
            bgemm(&g);
#endif
        } else {
            for (int64_t i = 0; i < batch; i++) {
                const KT *ai = a + i * M * K, *gi = dout + i * M * N;
                KT *dbi = db + (b_batched ? i * K * N : 0);
                if (!trans_b) /* db_i (K, N) += op(a)^T @ dout_i */
                    gemm(!trans_a, 0, K, N, M, ai, lda, gi, N, 1.0f, dbi, N);
                else /* db_i (N, K) += dout_i^T @ op(a) */ gemm(1, trans_a, N, K, M, gi, N, ai, lda, 1.0f, dbi, K);
            }
        }
    }
}

/* ---- elementwise binary with broadcasting ------------------------------- */

/* A broadcast pattern after dropping size-1 output dims and merging adjacent
 * dims in which each operand is either full in both or broadcast in both.
 * [B,T,C] + [1,1,C] becomes [B*T, C] + [1, C]. Always nd >= 1. */
typedef struct {
    int nd;
    int64_t os[K_MAX_DIMS], as[K_MAX_DIMS], bs[K_MAX_DIMS];
    int64_t ostr[K_MAX_DIMS], astr[K_MAX_DIMS], bstr[K_MAX_DIMS]; /* 0 where broadcast */
    int64_t n;                                                    /* output elements */
} Bcast;

static void bcast_init(Bcast *bc, int ndim, const int64_t *os, const int64_t *as, const int64_t *bs) {
    int nd = 0, pa = -1, pb = -1;
    for (int d = 0; d < ndim; d++) {
        if (os[d] == 1) continue;
        int fa = as[d] == os[d], fb = bs[d] == os[d];
        if (nd > 0 && fa == pa && fb == pb) {
            bc->os[nd - 1] *= os[d];
            bc->as[nd - 1] *= as[d];
            bc->bs[nd - 1] *= bs[d];
        } else {
            bc->os[nd] = os[d];
            bc->as[nd] = as[d];
            bc->bs[nd] = bs[d];
            nd++;
        }
        pa = fa;
        pb = fb;
    }
    if (nd == 0) {
        bc->os[0] = bc->as[0] = bc->bs[0] = 1;
        nd = 1;
    }
    bc->nd = nd;
    k_strides(nd, bc->os, bc->ostr);
    k_strides(nd, bc->as, bc->astr);
    k_strides(nd, bc->bs, bc->bstr);
    for (int d = 0; d < nd; d++) {
        if (bc->as[d] != bc->os[d]) bc->astr[d] = 0;
        if (bc->bs[d] != bc->os[d]) bc->bstr[d] = 0;
    }
    bc->n = k_numel(nd, bc->os);
}

/* o[j] = a[j*sa] OP b[j*sb] for j < L; sa, sb are 0 (broadcast) or 1 */
static void bin_row(int op, KT *o, const KT *a, const KT *b, int64_t L, int64_t sa, int64_t sb) {
    switch (op) {
#define BIN_ROW(code, name, reads)                                                      \
    case ACC_OP_##code:                                                                 \
        if (sa && sb) {                                                                 \
            for (int64_t j = 0; j < L; j++) KST(o, j, EW_##code(KLD(a, j), KLD(b, j))); \
        } else if (sa) {                                                                \
            float y = KLD(b, 0);                                                        \
            for (int64_t j = 0; j < L; j++) KST(o, j, EW_##code(KLD(a, j), y));         \
        } else if (sb) {                                                                \
            float x = KLD(a, 0);                                                        \
            for (int64_t j = 0; j < L; j++) KST(o, j, EW_##code(x, KLD(b, j)));         \
        } else {                                                                        \
            float v = EW_##code(KLD(a, 0), KLD(b, 0));                                  \
            for (int64_t j = 0; j < L; j++) KST(o, j, v);                               \
        }                                                                               \
        break;
        ACC_EW_BINARY_OPS(BIN_ROW)
#undef BIN_ROW
    default: break;
    }
}

/* Offsets of row r (an index over all but the last dim) in a and b. */
static void bcast_row_offsets(const Bcast *bc, int64_t r, int64_t *oa, int64_t *ob) {
    int64_t ia = 0, ib = 0;
    for (int d = bc->nd - 2; d >= 0; d--) {
        int64_t i = r % bc->os[d];
        r /= bc->os[d];
        ia += i * bc->astr[d];
        ib += i * bc->bstr[d];
    }
    *oa = ia;
    *ob = ib;
}

// out = a OP b with numpy broadcasting
static void binary_fwd(int op, KT *out, const KT *a, const KT *b, int ndim, const int64_t *os, const int64_t *as,
                       const int64_t *bs) {
    Bcast bc;
    bcast_init(&bc, ndim, os, as, bs);
    if (bc.n <= 0) return;
    int nd = bc.nd;
    int64_t L = bc.os[nd - 1];
    int64_t sa = bc.astr[nd - 1] ? 1 : 0, sb = bc.bstr[nd - 1] ? 1 : 0;
    if (nd == 1) { /* same shape or a scalar operand: chunks of one flat loop */
        const int64_t chunk = 8192, nch = (L + chunk - 1) / chunk;
#pragma omp parallel for if (L >= K_PAR_MIN)
        for (int64_t c = 0; c < nch; c++) {
            int64_t j0 = c * chunk;
            bin_row(op, out + j0, a + j0 * sa, b + j0 * sb, K_MIN(chunk, L - j0), sa, sb);
        }
        return;
    }
    int64_t rows = bc.n / L; /* bias add and the general case: rows of the last dim */
#pragma omp parallel for if (bc.n >= K_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        int64_t oa, ob;
        bcast_row_offsets(&bc, r, &oa, &ob);
        bin_row(op, out + r * L, a + oa, b + ob, L, sa, sb);
    }
}

/* The gradient contribution of one output element to operand `side`
 * (0: a, 1: b) given the incoming gradient g and the operands x (a), y (b). */
static inline float bin_term(int op, int side, float g, float x, float y) {
    switch (op) {
#define BIN_TERM(code, name, reads) \
    case ACC_OP_##code: return side ? EW_##code##_DB(g, x, y) : EW_##code##_DA(g, x, y);
        ACC_EW_BINARY_OPS(BIN_TERM)
#undef BIN_TERM
    default: return 0.0f;
    }
}

/* dx[j] += term(g[j], a[j*sa], b[j*sb]) for j < L, one rounding per element;
 * dx is the operand `side` (contiguous over j); a, b may be NULL where the op
 * does not read them. */
static void bwd_row(int op, int side, KT *restrict dx, const KT *restrict g, const KT *a, const KT *b, int64_t L,
                    int64_t sa, int64_t sb) {
    switch (op) {
#define BWD_ROW(code, name, reads)                                                                  \
    case ACC_OP_##code:                                                                             \
        if (side) {                                                                                 \
            for (int64_t j = 0; j < L; j++)                                                         \
                KST(dx, j, KLD(dx, j) + EW_##code##_DB(KLD(g, j), KLD(a, j * sa), KLD(b, j * sb))); \
        } else {                                                                                    \
            for (int64_t j = 0; j < L; j++)                                                         \
                KST(dx, j, KLD(dx, j) + EW_##code##_DA(KLD(g, j), KLD(a, j * sa), KLD(b, j * sb))); \
        }                                                                                           \
        break;
        ACC_EW_BINARY_OPS(BWD_ROW)
#undef BWD_ROW
    default: break;
    }
}

/* bwd_row into a float accumulator: acc[j] += term(...), no rounding (the
 * running column sums of bwd_bias) */
static void bwd_row_f(int op, int side, float *restrict acc, const KT *restrict g, const KT *a, const KT *b, int64_t L,
                      int64_t sa, int64_t sb) {
    switch (op) {
#define BWD_ROW_F(code, name, reads)                                                                             \
    case ACC_OP_##code:                                                                                          \
        if (side) {                                                                                              \
            for (int64_t j = 0; j < L; j++) acc[j] += EW_##code##_DB(KLD(g, j), KLD(a, j * sa), KLD(b, j * sb)); \
        } else {                                                                                                 \
            for (int64_t j = 0; j < L; j++) acc[j] += EW_##code##_DA(KLD(g, j), KLD(a, j * sa), KLD(b, j * sb)); \
        }                                                                                                        \
        break;
        ACC_EW_BINARY_OPS(BWD_ROW_F)
#undef BWD_ROW_F
    default: break;
    }
}

// dx (operand `side`, not broadcast anywhere) += term over the output
static void bwd_map(int op, int side, KT *dx, const KT *g, const KT *a, const KT *b, const Bcast *bc) {
    int nd = bc->nd;
    int64_t L = bc->os[nd - 1], rows = bc->n / L;
    int64_t sa = bc->astr[nd - 1] ? 1 : 0, sb = bc->bstr[nd - 1] ? 1 : 0;
    if (rows == 1) { /* flat: chunk it for the threads */
        const int64_t chunk = 8192, nch = (L + chunk - 1) / chunk;
#pragma omp parallel for if (L >= K_PAR_MIN)
        for (int64_t c = 0; c < nch; c++) {
            int64_t j0 = c * chunk;
            bwd_row(op, side, dx + j0, g + j0, a ? a + j0 * sa : a, b ? b + j0 * sb : b, K_MIN(chunk, L - j0), sa, sb);
        }
        return;
    }
#pragma omp parallel for if (bc->n >= K_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        int64_t oa, ob;
        bcast_row_offsets(bc, r, &oa, &ob);
        bwd_row(op, side, dx + r * L, g + r * L, a ? a + oa : a, b ? b + ob : b, L, sa, sb);
    }
}

// dx (operand `side`, shape [1, C] after merging) += sum over rows of term:
// each column's sum runs in float from dx's old value, rows in order, and is
// stored (rounded) once
static void bwd_bias(int op, int side, KT *dx, const KT *g, const KT *a, const KT *b, const Bcast *bc) {
    int64_t R = bc->os[0], C = bc->os[1];
    int64_t sa = bc->astr[1] ? 1 : 0, sb = bc->bstr[1] ? 1 : 0;
    int64_t nblk = (C + K_COL_BLOCK - 1) / K_COL_BLOCK;
#pragma omp parallel for if (bc->n >= K_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t c0 = blk * K_COL_BLOCK, len = K_MIN(K_COL_BLOCK, C - c0);
        float acc[K_COL_BLOCK];
        for (int64_t j = 0; j < len; j++) acc[j] = 0.0f;
        for (int64_t r = 0; r < R; r++) /* rows in order: deterministic */
            bwd_row_f(op, side, acc, g + r * C + c0, a ? a + r * bc->astr[0] + c0 * sa : a,
                      b ? b + r * bc->bstr[0] + c0 * sb : b, len, sa, sb);
        /* one addition to dx (the device's ck_col_reduce too): a bias
         * gradient accumulated over steps adds each step's sum in one rounding */
        for (int64_t j = 0; j < len; j++) KST(dx, c0 + j, KLD(dx, c0 + j) + acc[j]);
    }
}

/* Partial sums of a reduction to one scalar: a fixed count, whatever the threads. */
#define RED_CHUNKS 64

/* sum of term(g[j], a[j*sa], b[j*sb]) for j < L, in double */
static double term_sum(int op, int side, const KT *g, const KT *a, const KT *b, int64_t L, int64_t sa, int64_t sb) {
    double s = 0.0;
    for (int64_t j = 0; j < L; j++)
        s += bin_term(op, side, KLD(g, j), a ? KLD(a, j * sa) : 0.0f, b ? KLD(b, j * sb) : 0.0f);
    return s;
}

// dx (operand `side`, any broadcast pattern) += term summed over its broadcast dims
static void bwd_reduce(int op, int side, KT *dx, const KT *g, const KT *a, const KT *b, const Bcast *bc) {
    int nd = bc->nd;
    const int64_t *xs = side ? bc->bs : bc->as;
    int64_t nx = k_numel(nd, xs);
    if (nx == 1) { /* a scalar operand: the other one is full, nd == 1 */
        int64_t n = bc->n, chunk = (n + RED_CHUNKS - 1) / RED_CHUNKS;
        int64_t sa = bc->astr[0] ? 1 : 0, sb = bc->bstr[0] ? 1 : 0;
        double part[RED_CHUNKS];
#pragma omp parallel for if (n >= K_PAR_MIN)
        for (int c = 0; c < RED_CHUNKS; c++) {
            int64_t j0 = K_MIN(n, c * chunk), len = K_MIN(n, j0 + chunk) - j0;
            part[c] = term_sum(op, side, g + j0, a ? a + j0 * sa : a, b ? b + j0 * sb : b, len, sa, sb);
        }
        double s = 0.0;
        for (int c = 0; c < RED_CHUNKS; c++) s += part[c];
        KST(dx, 0, KLD(dx, 0) + (float)s);
        return;
    }
    int rd[K_MAX_DIMS], nrd = 0; /* the dims this operand is broadcast in */
    for (int d = 0; d < nd; d++)
        if (xs[d] != bc->os[d]) rd[nrd++] = d;
    /* a broadcast last dim is summed by a contiguous inner loop */
    int64_t L = 1, sa = 0, sb = 0;
    if (rd[nrd - 1] == nd - 1) {
        L = bc->os[nd - 1];
        sa = bc->astr[nd - 1] ? 1 : 0;
        sb = bc->bstr[nd - 1] ? 1 : 0;
        nrd--;
    }
    int64_t nq = 1;
    for (int k = 0; k < nrd; k++) nq *= bc->os[rd[k]];
#pragma omp parallel for if (bc->n >= K_PAR_MIN)
    for (int64_t e = 0; e < nx; e++) {
        int64_t go = 0, ao = 0, bo = 0, rem = e;
        for (int d = nd - 1; d >= 0; d--) { /* e's index; broadcast dims stay 0 */
            int64_t i = rem % xs[d];
            rem /= xs[d];
            go += i * bc->ostr[d];
            ao += i * bc->astr[d];
            bo += i * bc->bstr[d];
        }
        double s = 0.0;
        for (int64_t q = 0; q < nq; q++) {
            int64_t gq = go, aq = ao, bq = bo, qr = q;
            for (int k = nrd - 1; k >= 0; k--) {
                int d = rd[k];
                int64_t i = qr % bc->os[d];
                qr /= bc->os[d];
                gq += i * bc->ostr[d];
                aq += i * bc->astr[d];
                bq += i * bc->bstr[d];
            }
            s += term_sum(op, side, g + gq, a ? a + aq : a, b ? b + bq : b, L, sa, sb);
        }
        KST(dx, e, KLD(dx, e) + (float)s);
    }
}

// da, db += the gradients of out = a OP b, reduced over broadcast dims
static void binary_bwd(int op, KT *da, KT *db, const KT *dout, const KT *a, const KT *b, int ndim, const int64_t *os,
                       const int64_t *as, const int64_t *bs) {
    Bcast bc;
    bcast_init(&bc, ndim, os, as, bs);
    if (bc.n <= 0) return;
    for (int side = 0; side < 2; side++) {
        KT *dx = side ? db : da;
        if (!dx) continue;
        const int64_t *xs = side ? bc.bs : bc.as;
        const int64_t *xstr = side ? bc.bstr : bc.astr;
        int full = 1;
        for (int d = 0; d < bc.nd; d++) full &= xs[d] == bc.os[d];
        if (full) bwd_map(op, side, dx, dout, a, b, &bc);
        else if (bc.nd == 2 && xstr[0] == 0 && xstr[1] != 0) bwd_bias(op, side, dx, dout, a, b, &bc);
        else bwd_reduce(op, side, dx, dout, a, b, &bc);
    }
}

/* the entry points of the binary ops of the op table (acc_ops.h) */
#define K_BINARY_KERNELS(code, name, reads)                                                                          \
    void KN(k_##name##_fwd)(KT * out, const KT *a, const KT *b, int ndim, const int64_t *out_shape,                  \
                            const int64_t *a_shape, const int64_t *b_shape) {                                        \
        binary_fwd(ACC_OP_##code, out, a, b, ndim, out_shape, a_shape, b_shape);                                     \
    }                                                                                                                \
    void KN(k_##name##_bwd)(KT * da, KT * db, const KT *dout, ACC_EW_BWD_OPERANDS_##reads(KT) int ndim,              \
                            const int64_t *out_shape, const int64_t *a_shape, const int64_t *b_shape) {              \
        binary_bwd(ACC_OP_##code, da, db, dout, ACC_EW_BWD_OPERAND_ARGS_##reads, ndim, out_shape, a_shape, b_shape); \
    }
ACC_EW_BINARY_OPS(K_BINARY_KERNELS)
#undef K_BINARY_KERNELS

/* The comparisons of i32 operands, exact: out = a OP b, broadcasting as
 * binary_fwd, and x OP a number (ew_ops.h). 0 or 1 in the instance's type. */
EW_CMP_I32_FUNCTIONS(static inline)

void KN(k_cmp_i32_fwd)(int op, KT *out, const int32_t *a, const int32_t *b, int ndim, const int64_t *os,
                       const int64_t *as, const int64_t *bs) {
    Bcast bc;
    bcast_init(&bc, ndim, os, as, bs);
    if (bc.n <= 0) return;
    int64_t L = bc.os[bc.nd - 1], rows = bc.n / L;
    int64_t sa = bc.astr[bc.nd - 1] ? 1 : 0, sb = bc.bstr[bc.nd - 1] ? 1 : 0;
#pragma omp parallel for if (bc.n >= K_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        int64_t oa, ob;
        bcast_row_offsets(&bc, r, &oa, &ob);
        for (int64_t j = 0; j < L; j++) KST(out, r * L + j, ew_cmp_i32(op, a[oa + j * sa], b[ob + j * sb]));
    }
}

void KN(k_cmp_scalar_i32_fwd)(int op, KT *out, const int32_t *x, float value, int64_t n) {
#pragma omp parallel for if (n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) KST(out, i, ew_cmp_scalar_i32(op, x[i], value));
}

/* ---- linear: matmul with a bias ------------------------------------------ */

// out (M, N) = x @ op(w) + b. fp32: the GEMM, then the bias add of
// k_add_fwd; bf16: the bias is added to the GEMM's float tile, then rounded
// once (a separate add would round the product first)
void KN(k_linear_fwd)(KT *out, const KT *x, const KT *w, const KT *b, int64_t M, int64_t N, int64_t K, int trans_b) {
    if (M <= 0 || N <= 0) return;
#ifdef ACC_KT_BF16
    BgGemm g = {0, trans_b, M, N, K > 0 ? K : 0, x, w, K, trans_b ? K : N, 1, 0, 0, out, N, 0, b};
    bgemm(&g);
#else
    k_matmul_fwd(out, x, w, 1, M, N, K, 0, trans_b, 0);
    const int64_t so[] = {M, N}, sb[] = {1, N};
    binary_fwd(ACC_OP_ADD, out, out, b, 2, so, so, sb);
#endif
}

// dx, dw, db += the gradients of out = x @ op(w) + b
void KN(k_linear_bwd)(KT *dx, KT *dw, KT *db, const KT *dout, const KT *x, const KT *w, int64_t M, int64_t N, int64_t K,
                      int trans_b) {
    if (M <= 0 || N <= 0) return;
    KN(k_matmul_bwd)(dx, dw, dout, x, w, 1, M, N, K, 0, trans_b, 0);
    const int64_t so[] = {M, N}, sb[] = {1, N};
    if (db) binary_bwd(ACC_OP_ADD, NULL, db, dout, NULL, NULL, 2, so, so, sb);
}

/* ---- elementwise unary -------------------------------------------------- */

/* The math of each elementwise unary op, written once for the CPU: ew_<op>(v)
 * the forward, ew_<op>_bwd(g, s) = g * f' the backward term, s the buffer
 * the op's row says its backward reads (its input x or its output). The
 * op's kernels (generated below from ACC_EW_UNARY_OPS) and the elementwise
 * chains (k_ew_chain) call these and nothing else, so a fused op gives the
 * bits of its own kernel. gelu's k_tanhf is plain arithmetic (it
 * vectorises); expf and tanhf are libm calls (scalar inside simd loops). */
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

static inline float ew_scale(float v, float alpha) { return alpha * v; }
static inline float ew_shift(float v, float beta) { return v + beta; }

/* GPT-2's tanh approximation; gelu'(v) with sech^2 = 1 - tanh^2 */
static inline float ew_gelu(float v) { return 0.5f * v * (1.0f + k_tanhf(GELU_K * (v + 0.044715f * v * v * v))); }
static inline float ew_gelu_bwd(float g, float x) {
    float t = k_tanhf(GELU_K * (x + 0.044715f * x * x * x));
    return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x));
}

static inline float ew_relu(float v) { return v > 0.0f ? v : 0.0f; }
static inline float ew_relu_bwd(float g, float out) { return out > 0.0f ? g : 0.0f; }

/* x * sigmoid(x); g * s(x) * (1 + x (1 - s(x))), s the sigmoid */
static inline float ew_silu(float v) { return v / (1.0f + expf(-v)); }
static inline float ew_silu_bwd(float g, float x) {
    float s = 1.0f / (1.0f + expf(-x));
    return g * s * (1.0f + x * (1.0f - s));
}

static inline float ew_tanh(float v) { return tanhf(v); }
static inline float ew_tanh_bwd(float g, float out) { return g * (1.0f - out * out); }

static inline float ew_exp(float v) { return expf(v); }
static inline float ew_exp_bwd(float g, float out) { return g * out; }

/* PyTorch's default gelu, x * Phi(x) with the exact normal CDF Phi (erf);
 * gelu'(x) = Phi(x) + x * phi(x), phi the normal density */
static inline float ew_gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
static inline float ew_gelu_erf_bwd(float g, float x) {
    float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    return g * (cdf + x * 0.39894228040143268f * expf(-0.5f * x * x));
}

/* 1 / (1 + e^-v); its derivative from the output: s (1 - s) */
static inline float ew_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
static inline float ew_sigmoid_bwd(float g, float out) { return g * out * (1.0f - out); }

/* the natural log (NaN below 0, -inf at 0, as logf); 1/x */
static inline float ew_log(float v) { return logf(v); }
static inline float ew_log_bwd(float g, float x) { return g / x; }

/* sqrt (NaN below 0); its derivative from the output: 1 / (2 sqrt(x)) */
static inline float ew_sqrt(float v) { return sqrtf(v); }
static inline float ew_sqrt_bwd(float g, float out) { return g / (2.0f * out); }

/* 1 / sqrt(x) (IEEE division of the rounded sqrt, as on the device); its
 * derivative -x^-3/2 / 2 from the output: -out^3 / 2 */
static inline float ew_rsqrt(float v) { return 1.0f / sqrtf(v); }
static inline float ew_rsqrt_bwd(float g, float out) { return -0.5f * g * out * out * out; }

/* |x|; its derivative sign(x), 0 at 0 (PyTorch's) */
static inline float ew_abs(float v) { return fabsf(v); }
static inline float ew_abs_bwd(float g, float x) { return x > 0.0f ? g : x < 0.0f ? -g : 0.0f; }

void KN(k_scale_fwd)(KT *out, const KT *x, float alpha, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) KST(out, i, ew_scale(KLD(x, i), alpha));
}

void KN(k_scale_bwd)(KT *dx, const KT *dout, float alpha, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) KST(dx, i, KLD(dx, i) + alpha * KLD(dout, i));
}

void KN(k_shift_fwd)(KT *out, const KT *x, float beta, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) KST(out, i, ew_shift(KLD(x, i), beta));
}

void KN(k_shift_bwd)(KT *dx, const KT *dout, int64_t n) { KN(k_add_into)(dx, dout, n); }

/* The K_CLONES helpers carry the instance's name (KN): clang gives the
 * resolver of a static target_clones function an external symbol, so the
 * two instances' copies would clash at link time.
 *
 * The kernels of every plain unary op of the table (acc_ops.h), one form:
 * threads over chunks of K_CHUNK, each chunk a simd loop over the op's math.
 * k_<op>_fwd: out[i] = ew_<op>(x[i]), out may be x; k_<op>_bwd:
 * dx[i] += ew_<op>_bwd(dout[i], saved[i]). */
#define K_UNARY_KERNELS(code, name, saved)                                                                      \
    K_CLONES static void KN(name##_fwd_chunk)(KT * out, const KT *x, int64_t n) {                               \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) KST(out, i, ew_##name(KLD(x, i)));                  \
    }                                                                                                           \
    void KN(k_##name##_fwd)(KT * out, const KT *x, int64_t n) {                                                 \
        int64_t nch = (n + K_CHUNK - 1) / K_CHUNK;                                                              \
        _Pragma("omp parallel for if (n >= K_PAR_MIN)") for (int64_t c = 0; c < nch; c++)                       \
            KN(name##_fwd_chunk)(out + c * K_CHUNK, x + c * K_CHUNK, K_MIN(K_CHUNK, n - c * K_CHUNK));          \
    }                                                                                                           \
    K_CLONES static void KN(name##_bwd_chunk)(KT *restrict dx, const KT *restrict dout, const KT *restrict s,   \
                                              int64_t n) {                                                      \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                                     \
            KST(dx, i, KLD(dx, i) + ew_##name##_bwd(KLD(dout, i), KLD(s, i)));                                  \
    }                                                                                                           \
    void KN(k_##name##_bwd)(KT * dx, const KT *dout, const KT *saved, int64_t n) {                              \
        int64_t nch = (n + K_CHUNK - 1) / K_CHUNK;                                                              \
        _Pragma("omp parallel for if (n >= K_PAR_MIN)") for (int64_t c = 0; c < nch; c++) KN(name##_bwd_chunk)( \
            dx + c * K_CHUNK, dout + c * K_CHUNK, saved + c * K_CHUNK, K_MIN(K_CHUNK, n - c * K_CHUNK));        \
    }
ACC_EW_UNARY_OPS(K_UNARY_KERNELS)
#undef K_UNARY_KERNELS

/* The comparisons with a number (acc_ops.h): out[i] = x[i] OP value, 0 or
 * 1, the math of the comparisons of two tensors (ew_ops.h). No gradient
 * flows through them: the backward entry is never called and does nothing. */
#define K_CMP_SCALAR_KERNELS(code, name, binary)                                                        \
    void KN(k_##name##_fwd)(KT * out, const KT *x, float value, int64_t n) {                            \
        _Pragma("omp parallel for simd if (parallel : n >= K_PAR_MIN)") for (int64_t i = 0; i < n; i++) \
            KST(out, i, EW_##binary(KLD(x, i), value));                                                 \
    }                                                                                                   \
    void KN(k_##name##_bwd)(KT * dx, const KT *dout, int64_t n) { (void)dx, (void)dout, (void)n; }
ACC_EW_CMP_SCALAR_OPS(K_CMP_SCALAR_KERNELS)
#undef K_CMP_SCALAR_KERNELS

/* float(x): an i32 tensor's values as f32 (the output is f32 in both
 * instances); no backward (an i32 input gets no gradient; never called). */
void KN(k_float_fwd)(float *out, const int32_t *x, int64_t n) {
#pragma omp parallel for simd if (parallel : n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = (float)x[i];
}
void KN(k_float_bwd)(int32_t *dx, const float *dout, int64_t n) { (void)dx, (void)dout, (void)n; }

/* ---- dropout ------------------------------------------------------------ */

// y (+)= mask * x / (1-p), the mask drawn from philox blocks of 4 elements
static void dropout_apply(KT *y, const KT *x, int64_t n, float p, uint64_t seed, uint32_t step, uint32_t op_id,
                          int accumulate) {
    if (n <= 0) return;
    if (!(p < 1.0f)) { /* drop everything (also p = NaN) */
        if (!accumulate) KN(k_zero)(y, n);
        return;
    }
    if (p == 0.0f) { /* keep everything: u >= 0 = p always, scale 1 */
        if (accumulate) KN(k_add_into)(y, x, n);
        else KN(k_copy)(y, x, n);
        return;
    }
    float scale = 1.0f / (1.0f - p);
    int64_t nblk = (n + 3) / 4;
#pragma omp parallel for if (n >= K_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++) {
        philox4x32 r = philox_block(seed, step, op_id, (uint64_t)blk);
        for (int lane = 0; lane < 4; lane++) {
            int64_t i = blk * 4 + lane;
            if (i >= n) break;
            float v = philox_to_unit(r.v[lane]) >= p ? KLD(x, i) * scale : 0.0f;
            if (accumulate) KST(y, i, KLD(y, i) + v);
            else KST(y, i, v);
        }
    }
}

void KN(k_dropout_fwd)(KT *out, const KT *x, int64_t n, float p, uint64_t seed, uint32_t step, uint32_t op_id) {
    dropout_apply(out, x, n, p, seed, step, op_id, 0);
}

void KN(k_dropout_bwd)(KT *dx, const KT *dout, int64_t n, float p, uint64_t seed, uint32_t step, uint32_t op_id) {
    dropout_apply(dx, dout, n, p, seed, step, op_id, 1);
}

/* ---- elementwise chains --------------------------------------------------- */

#define EW_TILE 256

/* v[j] = v[j] OP o[j] (o[j] OP v[j] if right) for j < len: a run of a
 * binary op whose operand is contiguous, vectorised as the ops' own kernels
 * are (the same IEEE operation per element, so the same bits). */
K_CLONES static void KN(ew_binary)(int op, int right, float *restrict v, const float *restrict o, int64_t len) {
    switch (op) {
#define EW_BINARY(code, name, reads)                                                            \
    case ACC_OP_##code:                                                                         \
        if (right) {                                                                            \
            _Pragma("omp simd") for (int64_t j = 0; j < len; j++) v[j] = EW_##code(o[j], v[j]); \
        } else {                                                                                \
            _Pragma("omp simd") for (int64_t j = 0; j < len; j++) v[j] = EW_##code(v[j], o[j]); \
        }                                                                                       \
        break;
        ACC_EW_BINARY_OPS(EW_BINARY)
#undef EW_BINARY
    default: break;
    }
}

/* v[j] = op(v[j]) for j < len, op scale, shift, a comparison with a number
 * (param) or a plain unary op: its math
 * (ew_* above) in a simd loop, as its own kernel runs it. */
K_CLONES static void KN(ew_unary)(int op, float param, float *restrict v, int64_t len) {
    switch (op) {
    case ACC_OP_SCALE:
#pragma omp simd
        for (int64_t j = 0; j < len; j++) v[j] = ew_scale(v[j], param);
        break;
    case ACC_OP_SHIFT:
#pragma omp simd
        for (int64_t j = 0; j < len; j++) v[j] = ew_shift(v[j], param);
        break;
#define EW_UNARY_CASE(code, name, saved) \
    case ACC_OP_##code: _Pragma("omp simd") for (int64_t j = 0; j < len; j++) v[j] = ew_##name(v[j]); break;
        ACC_EW_UNARY_OPS(EW_UNARY_CASE)
#undef EW_UNARY_CASE
#define EW_CMP_SCALAR_CASE(code, name, binary) \
    case ACC_OP_##code: _Pragma("omp simd") for (int64_t j = 0; j < len; j++) v[j] = EW_##binary(v[j], param); break;
        ACC_EW_CMP_SCALAR_OPS(EW_CMP_SCALAR_CASE)
#undef EW_CMP_SCALAR_CASE
    default: break;
    }
}

/* The tile's running values are float in both instances. In bf16 a chain
 * widens x once, applies each op in float and rounds its result to bf16
 * (ew_round) as that op's own kernel stores it, so a chain gives the unfused
 * ops' bits in bf16 as in fp32: fusion depends on the plan (a saved
 * intermediate ends a chain), and the plan must not change the numbers. */
static void ew_load(float *restrict v, const KT *restrict x, int64_t len) {
#ifdef ACC_KT_BF16
    for (int64_t j = 0; j < len; j++) v[j] = KLD(x, j);
#else
    memcpy(v, x, (size_t)len * sizeof *v);
#endif
}

#ifdef ACC_KT_BF16
static void ew_round(float *v, int64_t len) {
#pragma omp simd
    for (int64_t j = 0; j < len; j++) v[j] = acc_bf16_f32(acc_f32_bf16(v[j]));
}
#endif

static void ew_store(KT *restrict out, const float *restrict v, int64_t len) {
#ifdef ACC_KT_BF16
    for (int64_t j = 0; j < len; j++) KST(out, j, v[j]);
#else
    memcpy(out, v, (size_t)len * sizeof *v);
#endif
}

/* A run of len operand elements as float: the operand itself (fp32), or
 * widened into buf (bf16). */
static const float *ew_operand(const KT *o, float *buf, int64_t len) {
#ifdef ACC_KT_BF16
    for (int64_t j = 0; j < len; j++) buf[j] = KLD(o, j);
    return buf;
#else
    (void)buf;
    (void)len;
    return o;
#endif
}

/* Apply op to the tile v[0..len) of elements i0.. : the arithmetic of the
 * op's own kernel above, element by element (the same ew_* math in the same
 * simd loops; no libm call is vectorised, so expf and tanhf give the scalar
 * results those kernels give). A broadcast
 * operand (element i reads operand[i % modulus]) goes in contiguous runs. */
static void ew_tile(const k_ew_op *op, float *v, int64_t i0, int64_t len, uint64_t seed, uint32_t step) {
    const KT *o = op->operand;
    int64_t m = op->modulus > 0 ? op->modulus : 1, k = i0 % m;
    switch (op->op) {
#define EW_BINARY_CASE(code, name, reads) case ACC_OP_##code:
        ACC_EW_BINARY_OPS(EW_BINARY_CASE)
#undef EW_BINARY_CASE
        if (m == 1) { /* one value for every element */
            float splat[EW_TILE];
            float o0 = KLD(o, 0);
            for (int64_t j = 0; j < len; j++) splat[j] = o0;
            KN(ew_binary)(op->op, op->operand_right, v, splat, len);
            break;
        }
        float wide[EW_TILE];
        for (int64_t j = 0; j < len; k = 0) {
            int64_t run = K_MIN(len - j, m - k);
            KN(ew_binary)(op->op, op->operand_right, v + j, ew_operand(o + k, wide, run), run);
            j += run;
        }
        break;
    case ACC_OP_DROPOUT: { /* as dropout_apply: p == 0 keeps v as it is */
        float p = op->param, scale = 1.0f / (1.0f - p);
        if (p == 0.0f) break;
        philox4x32 r = philox_block(seed, step, op->op_id, (uint64_t)i0 >> 2);
        for (int64_t j = 0; j < len; j++) {
            uint64_t i = (uint64_t)(i0 + j);
            if (j > 0 && (i & 3) == 0) r = philox_block(seed, step, op->op_id, i >> 2);
            v[j] = philox_to_unit(r.v[i & 3]) >= p ? v[j] * scale : 0.0f;
        }
        break;
    }
    default: /* scale, shift and the plain unary ops */ KN(ew_unary)(op->op, op->param, v, len); break;
    }
}

void KN(k_ew_chain)(KT *out, const KT *x, const k_ew_op *ops, int n_ops, int64_t n, uint64_t seed, uint32_t step) {
    int64_t ntile = (n + EW_TILE - 1) / EW_TILE;
#pragma omp parallel for if (n >= K_PAR_MIN)
    for (int64_t t = 0; t < ntile; t++) {
        float v[EW_TILE];
        int64_t i0 = t * EW_TILE, len = K_MIN(EW_TILE, n - i0);
        ew_load(v, x + i0, len);
        for (int k = 0; k < n_ops; k++) {
            ew_tile(&ops[k], v, i0, len, seed, step);
#ifdef ACC_KT_BF16
            if (k + 1 < n_ops) ew_round(v, len);
#endif
        }
        ew_store(out + i0, v, len);
    }
}

#ifndef ACC_KT_BF16 /* the optimizer updates float weights: one instance */

/* ---- AdamW -------------------------------------------------------------- */

/* The parameter's step from the new moments (decoupled weight decay) and
 * the bias correction 1 - beta^t: shared by the f32 and bf16 moments. */
static inline float adamw_param(float p, float mi, float vi, float lr, float eps, float weight_decay, float bc1,
                                float bc2) {
    float mhat = mi / bc1, vhat = vi / bc2;
    return p - lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * p);
}
static float adamw_bc(float beta, int64_t t) { return (float)(1.0 - pow((double)beta, (double)t)); }

/* AdamW over n elements: the loop of k_adamw, vectorized */
K_CLONES static void adamw_chunk(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
                                 int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                                 float bc1, float bc2) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = adamw_param(p[i], mi, vi, lr, eps, weight_decay, bc1, bc2);
    }
}

// one fused AdamW step with bias correction (decoupled weight decay)
void k_adamw(float *p, const float *g, float *m, float *v, int64_t n, float lr, float beta1, float beta2, float eps,
             float weight_decay, int64_t t) {
    float bc1 = adamw_bc(beta1, t), bc2 = adamw_bc(beta2, t);
    const int64_t chunk = 4 * K_CHUNK, nch = (n + chunk - 1) / chunk;
#pragma omp parallel for if (n >= K_PAR_MIN)
    for (int64_t c = 0; c < nch; c++) {
        int64_t i0 = c * chunk;
        adamw_chunk(p + i0, g + i0, m + i0, v + i0, K_MIN(chunk, n - i0), lr, beta1, beta2, eps, weight_decay, bc1,
                    bc2);
    }
}

/* adamw_chunk over bf16 moments: m and v widened, the update in float as
 * adamw_chunk's (the parameter from the unrounded m and v), the new m and v
 * rounded to nearest even on store. */
K_CLONES static void adamw_chunk_bf16(float *restrict p, const float *restrict g, acc_bf16 *restrict m,
                                      acc_bf16 *restrict v, int64_t n, float lr, float beta1, float beta2, float eps,
                                      float weight_decay, float bc1, float bc2) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = beta1 * acc_bf16_f32(m[i]) + (1.0f - beta1) * gi;
        float vi = beta2 * acc_bf16_f32(v[i]) + (1.0f - beta2) * gi * gi;
        m[i] = acc_f32_bf16(mi);
        v[i] = acc_f32_bf16(vi);
        p[i] = adamw_param(p[i], mi, vi, lr, eps, weight_decay, bc1, bc2);
    }
}

void k_adamw_bf16(float *p, const float *g, acc_bf16 *m, acc_bf16 *v, int64_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int64_t t) {
    float bc1 = adamw_bc(beta1, t), bc2 = adamw_bc(beta2, t);
    const int64_t chunk = 4 * K_CHUNK, nch = (n + chunk - 1) / chunk;
#pragma omp parallel for if (n >= K_PAR_MIN)
    for (int64_t c = 0; c < nch; c++) {
        int64_t i0 = c * chunk;
        adamw_chunk_bf16(p + i0, g + i0, m + i0, v + i0, K_MIN(chunk, n - i0), lr, beta1, beta2, eps, weight_decay, bc1,
                         bc2);
    }
}

#endif
