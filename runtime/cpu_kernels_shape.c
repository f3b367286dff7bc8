/* cpu_kernels_shape.c - data movement (reshape, transpose, slice, concat),
 * where, and reductions (sum, mean, max, min).
 *
 * Invariant (see cpu_kernels.h): every backward here is the exact adjoint of
 * its forward and accumulates; copies are strided loops over contiguous
 * row-major buffers; sums do not depend on the thread count. Written once
 * over KT (ktype.h): in the bf16 instance a copy moves the 2-byte elements
 * unchanged, an accumulation adds in float and rounds once, and sum/mean
 * read bf16 and sum as the fp32 instance does (their outputs are float).
 */
#include "cpu_kernels.h"

#include <string.h>

#include "kernels_internal.h"
#include "ktype.h"

/* dst[0..n) = or += src[0..n) (bf16: a copy moves the 2-byte elements; an
 * accumulation widens both, adds in float and rounds) */
static void move_row(KT *restrict dst, const KT *restrict src, int64_t n, int accumulate) {
    if (accumulate) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) KST(dst, i, KLD(dst, i) + KLD(src, i));
    } else {
        memcpy(dst, src, (size_t)n * sizeof *dst);
    }
}

/* ---- reshape ------------------------------------------------------------ */

#ifdef ACC_KT_BF16
/* k_copy and k_add_into over bf16 (chunks of K_CHUNK in parallel) */
static void flat_move(KT *y, const KT *x, int64_t n, int accumulate) {
    if (!accumulate) {
        if (n > 0 && y != x) memcpy(y, x, (size_t)n * sizeof *y);
        return;
    }
    int64_t nblk = (n + K_CHUNK - 1) / K_CHUNK;
#pragma omp parallel for if (n >= K_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t i0 = blk * K_CHUNK;
        move_row(y + i0, x + i0, K_MIN(K_CHUNK, n - i0), 1);
    }
}

void KN(k_reshape_fwd)(KT *out, const KT *x, int64_t n) { flat_move(out, x, n, 0); }

void KN(k_reshape_bwd)(KT *dx, const KT *dout, int64_t n) { flat_move(dx, dout, n, 1); }
#else
void k_reshape_fwd(float *out, const float *x, int64_t n) { k_copy(out, x, n); }

void k_reshape_bwd(float *dx, const float *dout, int64_t n) { k_add_into(dx, dout, n); }
#endif

/* ---- transpose ---------------------------------------------------------- */

#define TR_TILE 32

// dst[c*dld + r] (+)= src[r*sld + c] for r in [r0, r1), c < C, in square tiles
static void transpose_2d(KT *dst, int64_t dld, const KT *src, int64_t sld, int64_t r0, int64_t r1, int64_t C,
                         int accumulate) {
    for (int64_t c0 = 0; c0 < C; c0 += TR_TILE) {
        int64_t c1 = K_MIN(C, c0 + TR_TILE);
        for (int64_t c = c0; c < c1; c++)
            for (int64_t r = r0; r < r1; r++) {
                if (accumulate) KST(dst, c * dld + r, KLD(dst, c * dld + r) + KLD(src, r * sld + c));
                else dst[c * dld + r] = src[r * sld + c];
            }
    }
}

// out (+)= x with dims d0 and d1 swapped. x is viewed as (P, A, M, Bd, I):
// A = x[d0], Bd = x[d1], P the dims before d0, M between, I after d1; out is
// (P, Bd, M, A, I). I > 1 moves rows of I (covers (B,T,H,D) -> (B,H,T,D));
// I == 1 is a tiled 2-d transpose of (A, Bd) per (p, m) (covers the last two).
static void transpose_impl(KT *out, const KT *x, int ndim, const int64_t *xs, int d0, int d1, int accumulate) {
    if (d0 < 0) d0 += ndim;
    if (d1 < 0) d1 += ndim;
    if (d0 > d1) {
        int t = d0;
        d0 = d1;
        d1 = t;
    }
    int64_t n = k_numel(ndim, xs);
    if (n <= 0) return;
    if (d0 == d1) {
        move_row(out, x, n, accumulate);
        return;
    }
    int64_t P = 1, M = 1, I = 1, A = xs[d0], Bd = xs[d1];
    for (int d = 0; d < d0; d++) P *= xs[d];
    for (int d = d0 + 1; d < d1; d++) M *= xs[d];
    for (int d = d1 + 1; d < ndim; d++) I *= xs[d];
    if (I > 1) {
        int64_t rows = P * Bd * M * A;
#pragma omp parallel for if (n >= K_PAR_MIN)
        for (int64_t r = 0; r < rows; r++) { /* r indexes out's (p, bb, m, a) */
            int64_t a = r % A, rem = r / A;
            int64_t m = rem % M;
            rem /= M;
            int64_t bb = rem % Bd, p = rem / Bd;
            move_row(out + r * I, x + (((p * A + a) * M + m) * Bd + bb) * I, I, accumulate);
        }
        return;
    }
    int64_t ntile = (A + TR_TILE - 1) / TR_TILE, tasks = P * M * ntile;
#pragma omp parallel for if (n >= K_PAR_MIN)
    for (int64_t task = 0; task < tasks; task++) { /* (p, m, tile of A rows) */
        int64_t tile = task % ntile, pm = task / ntile;
        int64_t m = pm % M, p = pm / M;
        int64_t r0 = tile * TR_TILE, r1 = K_MIN(A, r0 + TR_TILE);
        /* x (A, Bd) at p*A*M*Bd + m*Bd with row stride M*Bd;
         * out (Bd, A) at p*Bd*M*A + m*A with row stride M*A */
        transpose_2d(out + p * Bd * M * A + m * A, M * A, x + p * A * M * Bd + m * Bd, M * Bd, r0, r1, Bd, accumulate);
    }
}

void KN(k_transpose_fwd)(KT *out, const KT *x, int ndim, const int64_t *x_shape, int dim0, int dim1) {
    transpose_impl(out, x, ndim, x_shape, dim0, dim1, 0);
}

// dx += swap(dout): dout has x's shape with dims swapped
void KN(k_transpose_bwd)(KT *dx, const KT *dout, int ndim, const int64_t *x_shape, int dim0, int dim1) {
    int64_t os[K_MAX_DIMS];
    int d0 = dim0 < 0 ? dim0 + ndim : dim0, d1 = dim1 < 0 ? dim1 + ndim : dim1;
    for (int d = 0; d < ndim; d++) os[d] = x_shape[d];
    os[d0] = x_shape[d1];
    os[d1] = x_shape[d0];
    transpose_impl(dx, dout, ndim, os, d0, d1, 1);
}

/* ---- slice and concat --------------------------------------------------- */

/* x as (outer, dim, inner) around axis */
static void split_axis(int ndim, const int64_t *shape, int axis, int64_t *outer, int64_t *inner) {
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= shape[d];
    for (int d = axis + 1; d < ndim; d++) *inner *= shape[d];
}

// out (outer, len, inner) (+)= x (outer, dim, inner)[:, start:start+len, :], or the
// adjoint when to_x: x[:, start:start+len, :] (+)= out
static void slice_impl(KT *out, KT *x_dst, const KT *x, const KT *out_src, int ndim, const int64_t *xs, int axis,
                       int64_t start, int64_t len, int accumulate) {
    if (axis < 0) axis += ndim;
    int64_t outer, inner;
    split_axis(ndim, xs, axis, &outer, &inner);
    int64_t dim = xs[axis], row = len * inner;
    if (row <= 0) return;
#pragma omp parallel for if (outer * row >= K_PAR_MIN && outer > 1)
    for (int64_t o = 0; o < outer; o++) {
        if (x_dst) move_row(x_dst + (o * dim + start) * inner, out_src + o * row, row, accumulate);
        else move_row(out + o * row, x + (o * dim + start) * inner, row, accumulate);
    }
}

void KN(k_slice_fwd)(KT *out, const KT *x, int ndim, const int64_t *x_shape, int axis, int64_t start, int64_t len) {
    slice_impl(out, NULL, x, NULL, ndim, x_shape, axis, start, len, 0);
}

void KN(k_slice_bwd)(KT *dx, const KT *dout, int ndim, const int64_t *x_shape, int axis, int64_t start, int64_t len) {
    slice_impl(NULL, dx, NULL, dout, ndim, x_shape, axis, start, len, 1);
}

// out (outer, total, inner) = the inputs (outer, sizes[i], inner) side by side
void KN(k_concat_fwd)(KT *out, const KT *const *xs, int n, int ndim, const int64_t *out_shape, int axis,
                      const int64_t *sizes) {
    if (axis < 0) axis += ndim;
    int64_t outer, inner, total = out_shape[axis], off = 0;
    split_axis(ndim, out_shape, axis, &outer, &inner);
    for (int i = 0; i < n; i++) {
        int64_t row = sizes[i] * inner;
        if (row > 0) {
#pragma omp parallel for if (outer * row >= K_PAR_MIN && outer > 1)
            for (int64_t o = 0; o < outer; o++) move_row(out + (o * total + off) * inner, xs[i] + o * row, row, 0);
        }
        off += sizes[i];
    }
}

// dxs[i] += its part of dout
void KN(k_concat_bwd)(KT *const *dxs, const KT *dout, int n, int ndim, const int64_t *out_shape, int axis,
                      const int64_t *sizes) {
    if (axis < 0) axis += ndim;
    int64_t outer, inner, total = out_shape[axis], off = 0;
    split_axis(ndim, out_shape, axis, &outer, &inner);
    for (int i = 0; i < n; i++) {
        int64_t row = sizes[i] * inner;
        if (dxs[i] && row > 0) {
#pragma omp parallel for if (outer * row >= K_PAR_MIN && outer > 1)
            for (int64_t o = 0; o < outer; o++) move_row(dxs[i] + o * row, dout + (o * total + off) * inner, row, 1);
        }
        off += sizes[i];
    }
}

/* ---- sum and mean ------------------------------------------------------- */

/* Partial sums of a full reduction: a fixed count, whatever the threads. */
#define RED_CHUNKS 64

/* dst[0..n) (float) += src[0..n) */
static void add_row_f(float *restrict dst, const KT *restrict src, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) dst[i] += KLD(src, i);
}

// out (outer, inner) = scale * sum over the middle axis of x (outer, n, inner)
static void reduce_fwd(float *out, const KT *x, int64_t outer, int64_t n, int64_t inner, double scale) {
    if (outer * inner <= 0) return;
    if (outer == 1 && inner == 1) { /* everything: fixed chunks, summed in order */
        double part[RED_CHUNKS];
        int64_t chunk = (n + RED_CHUNKS - 1) / RED_CHUNKS;
#pragma omp parallel for if (n >= K_PAR_MIN)
        for (int c = 0; c < RED_CHUNKS; c++) {
            int64_t i0 = c * chunk, i1 = K_MIN(n, i0 + chunk);
            double s = 0.0;
            for (int64_t i = i0; i < i1; i++) s += KLD(x, i);
            part[c] = s;
        }
        double s = 0.0;
        for (int c = 0; c < RED_CHUNKS; c++) s += part[c];
        out[0] = (float)(s * scale);
        return;
    }
    if (inner == 1) { /* contiguous rows */
#pragma omp parallel for if (outer * n >= K_PAR_MIN)
        for (int64_t o = 0; o < outer; o++) {
            double s = 0.0;
            for (int64_t j = 0; j < n; j++) s += KLD(x, o * n + j);
            out[o] = (float)(s * scale);
        }
        return;
    }
    /* strided: tasks own (o, block of inner columns) and walk the n rows */
    int64_t nblk = (inner + 256 - 1) / 256;
#pragma omp parallel for collapse(2) if (outer * n * inner >= K_PAR_MIN)
    for (int64_t o = 0; o < outer; o++)
        for (int64_t blk = 0; blk < nblk; blk++) {
            int64_t c0 = blk * 256, len = K_MIN(256, inner - c0);
            float *orow = out + o * inner + c0;
            const KT *xb = x + o * n * inner + c0;
            memset(orow, 0, (size_t)len * sizeof *orow);
            for (int64_t j = 0; j < n; j++) add_row_f(orow, xb + j * inner, len);
            k_scal(orow, (float)scale, len);
        }
}

// dx (outer, n, inner) += scale * dout (outer, inner) broadcast over n
static void reduce_bwd(KT *dx, const float *dout, int64_t outer, int64_t n, int64_t inner, float scale) {
    int64_t rows = outer * n;
#pragma omp parallel for if (rows * inner >= K_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        KT *d = dx + r * inner;
        const float *g = dout + (r / n) * inner;
        for (int64_t i = 0; i < inner; i++) KST(d, i, KLD(d, i) + scale * g[i]);
    }
}

void KN(k_sum_fwd)(float *out, const KT *x, int64_t outer, int64_t n, int64_t inner) {
    reduce_fwd(out, x, outer, n, inner, 1.0);
}

void KN(k_sum_bwd)(KT *dx, const float *dout, int64_t outer, int64_t n, int64_t inner) {
    reduce_bwd(dx, dout, outer, n, inner, 1.0f);
}

void KN(k_mean_fwd)(float *out, const KT *x, int64_t outer, int64_t n, int64_t inner) {
    reduce_fwd(out, x, outer, n, inner, n > 0 ? 1.0 / (double)n : 0.0);
}

void KN(k_mean_bwd)(KT *dx, const float *dout, int64_t outer, int64_t n, int64_t inner) {
    reduce_bwd(dx, dout, outer, n, inner, n > 0 ? 1.0f / (float)n : 0.0f);
}

/* ---- max and min -------------------------------------------------------- */

/* The index along the middle axis of the max (sign > 0) or min of a column
 * of n elements inner apart: the first that holds it, or the first NaN
 * (which then is the result, as PyTorch's max propagates NaN). The CUDA
 * kernel ck_argreduce walks the same way. */
static int64_t arg_extreme(const KT *x, int64_t n, int64_t inner, int sign) {
    float best = KLD(x, 0);
    int64_t arg = 0;
    for (int64_t j = 1; j < n && best == best; j++) {
        float v = KLD(x, j * inner);
        if (v != v || (sign > 0 ? v > best : v < best)) best = v, arg = j;
    }
    return arg;
}

static void extreme_fwd(KT *out, const KT *x, int64_t outer, int64_t n, int64_t inner, int sign) {
#pragma omp parallel for if (outer * n * inner >= K_PAR_MIN)
    for (int64_t e = 0; e < outer * inner; e++) {
        const KT *col = x + (e / inner) * n * inner + e % inner;
        out[e] = col[arg_extreme(col, n, inner, sign) * inner];
    }
}

static void extreme_bwd(KT *dx, const KT *dout, const KT *x, int64_t outer, int64_t n, int64_t inner, int sign) {
#pragma omp parallel for if (outer * n * inner >= K_PAR_MIN)
    for (int64_t e = 0; e < outer * inner; e++) {
        int64_t base = (e / inner) * n * inner + e % inner, at = base + arg_extreme(x + base, n, inner, sign) * inner;
        KST(dx, at, KLD(dx, at) + KLD(dout, e));
    }
}

void KN(k_max_fwd)(KT *out, const KT *x, int64_t outer, int64_t n, int64_t inner) {
    extreme_fwd(out, x, outer, n, inner, 1);
}
void KN(k_max_bwd)(KT *dx, const KT *dout, const KT *x, int64_t outer, int64_t n, int64_t inner) {
    extreme_bwd(dx, dout, x, outer, n, inner, 1);
}
void KN(k_min_fwd)(KT *out, const KT *x, int64_t outer, int64_t n, int64_t inner) {
    extreme_fwd(out, x, outer, n, inner, -1);
}
void KN(k_min_bwd)(KT *dx, const KT *dout, const KT *x, int64_t outer, int64_t n, int64_t inner) {
    extreme_bwd(dx, dout, x, outer, n, inner, -1);
}

/* ---- where -------------------------------------------------------------- */

/* The six padded dims of out (od) and the strides over them (0 where it
 * broadcasts) of an operand of shape s (ndim dims, right-aligned) in st. */
static void where_dims(int ndim, const int64_t *so, const int64_t *s, int64_t *od, int64_t *st) {
    int64_t stride = 1;
    for (int k = 5; k >= 0; k--) {
        int j = k - (6 - ndim);
        int64_t o = j >= 0 ? so[j] : 1, x = j >= 0 ? s[j] : 1;
        od[k] = o;
        st[k] = x == 1 && o != 1 ? 0 : stride;
        stride *= x;
    }
}

/* where's condition at element k: an int32 mask or a float one of the
 * element type; nonzero (NaN too) picks a */
static int where_cond(const void *cond, int cond_i32, int64_t k) {
    return cond_i32 ? ((const int32_t *)cond)[k] != 0 : KLD((const KT *)cond, k) != 0.0f;
}

// out = cond != 0 ? a : b elementwise, the three broadcast to out (a copy of the picked element)
void KN(k_where_fwd)(KT *out, const void *cond, const KT *a, const KT *b, int cond_i32, int ndim, const int64_t *so,
                     const int64_t *sc, const int64_t *sa, const int64_t *sb) {
    int64_t od[6], stc[6], sta[6], stb[6], n = 1;
    where_dims(ndim, so, sc, od, stc);
    where_dims(ndim, so, sa, od, sta);
    where_dims(ndim, so, sb, od, stb);
    for (int k = 0; k < 6; k++) n *= od[k];
#pragma omp parallel for if (n >= K_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i, ic = 0, ia = 0, ib = 0;
        for (int k = 5; k >= 0; k--) {
            int64_t c = r % od[k];
            r /= od[k];
            ic += c * stc[k], ia += c * sta[k], ib += c * stb[k];
        }
        out[i] = where_cond(cond, cond_i32, ic) ? a[ia] : b[ib];
    }
}

/* dx (shape sx) += the sum over the out elements that element reaches of
 * dout where the condition picks x (pick 1: cond != 0, a; 0: b), in out
 * order, in float, rounded once: one pass per element of dx, as the CUDA
 * kernel ck_where_bwd sums, so both targets give the same bits. */
static void where_grad(KT *dx, const KT *dout, const void *cond, int cond_i32, int pick, int ndim, const int64_t *so,
                       const int64_t *sc, const int64_t *sx) {
    int64_t od[6], xd[6], stc[6], stx[6], nred = 1, nx = 1;
    where_dims(ndim, so, sc, od, stc);
    where_dims(ndim, so, sx, od, stx);
    for (int k = 0; k < 6; k++) {
        int j = k - (6 - ndim);
        xd[k] = j >= 0 ? sx[j] : 1;
        if (xd[k] != od[k]) nred *= od[k];
        nx *= xd[k];
    }
#pragma omp parallel for if (nx * nred >= K_PAR_MIN)
    for (int64_t i = 0; i < nx; i++) {
        int64_t xc[6], r = i;
        for (int k = 5; k >= 0; k--) {
            xc[k] = r % xd[k];
            r /= xd[k];
        }
        float acc = 0.0f;
        for (int64_t q0 = 0; q0 < nred; q0++) {
            int64_t q = q0, o = 0, ic = 0, ostride = 1;
            for (int k = 5; k >= 0; k--) {
                int64_t c = xc[k];
                if (xd[k] != od[k]) {
                    c = q % od[k];
                    q /= od[k];
                }
                o += c * ostride;
                ostride *= od[k];
                ic += c * stc[k];
            }
            if (where_cond(cond, cond_i32, ic) == pick) acc += KLD(dout, o);
        }
        KST(dx, i, KLD(dx, i) + acc);
    }
}

// da += dout where cond != 0, db += dout where cond == 0, each summed over what it broadcasts over
void KN(k_where_bwd)(KT *da, KT *db, const KT *dout, const void *cond, int cond_i32, int ndim, const int64_t *so,
                     const int64_t *sc, const int64_t *sa, const int64_t *sb) {
    if (da) where_grad(da, dout, cond, cond_i32, 1, ndim, so, sc, sa);
    if (db) where_grad(db, dout, cond, cond_i32, 0, ndim, so, sc, sb);
}
