/* ops.c - the launch layer: each g_* entry of cuda_ops.h turned into kernel
 * launches (launch geometry and an acc_kargs block) and cuBLAS-convention
 * GEMMs, through the backend in acc_dev. The same object code serves the GPU
 * (dev_cuda.c) and the emulator (dev_emu.c), so what the emulator checks is
 * exactly the geometry and arguments the GPU receives.
 *
 * Shapes arrive as the CPU kernels take them (row-major, numpy broadcasting);
 * here they become the six padded dims and element strides the generic
 * kernels walk.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_ops.h"
#include "device.h"

/* A device address as the kernels' argument block holds it (the const of an
 * input is the kernel's promise, not the pointer's type there). */
#define DP(p) ((float *)(uintptr_t)(p))

int dev_fail(acc_dev *d, int status, const char *file, int line, const char *fmt, ...) {
    if (d->status != ACC_OK) return d->status;
    int k = snprintf(d->err, sizeof d->err, "%s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && (size_t)k < sizeof d->err) vsnprintf(d->err + k, sizeof d->err - (size_t)k, fmt, ap);
    va_end(ap);
    d->status = status;
    return status;
}

const char *dev_error(const acc_dev *d) { return d->err[0] ? d->err : "no error"; }

void dev_set_workspace(acc_dev *d, unsigned char *ws, long long ws_bytes) {
    int room = ws_bytes >= KA_SCALARS_BYTES;
    d->scalars = room ? ws : NULL;
    d->scratch = room ? ws + KA_SCALARS_BYTES : NULL;
    d->scratch_bytes = room ? ws_bytes - KA_SCALARS_BYTES : 0;
}

/* The device address of the run's acc_scalars, for a kernel that reads them. */
static float *scalars(acc_dev *d) {
    if (!d->scalars) dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "no workspace for the step's scalars");
    return (float *)d->scalars;
}

/* Blocks for `work` threads of `block` each; grid-stride kernels cover the
 * rest, so the grid is capped (fewer, fuller blocks on the GPU; bounded work
 * per launch in the emulator). */
#define GRID_CAP 4096

void dev_launch(acc_dev *d, acc_kernel_id k, long long work, unsigned block, const acc_kargs *a) {
    if (d->status != ACC_OK || work <= 0) return;
    long long grid = (work + block - 1) / block;
    if (grid > GRID_CAP) grid = GRID_CAP;
    d->ops->launch(d, k, (unsigned)grid, block, a);
}

/* One block per row of C columns: the block is the warps C needs, 32..256. */
static unsigned row_block(int64_t C) {
    int64_t b = (C + 31) / 32 * 32;
    return (unsigned)(b < 32 ? 32 : b > KA_BLOCK ? KA_BLOCK : b);
}

static void launch_rows(acc_dev *d, acc_kernel_id k, int64_t rows, int64_t C, const acc_kargs *a) {
    unsigned b = row_block(C);
    dev_launch(d, k, rows * (long long)b, b, a);
}

/* The same for the kernels that step KA_VEC columns a thread (the norms). */
static void launch_rows_vec(acc_dev *d, acc_kernel_id k, int64_t rows, int64_t C, const acc_kargs *a) {
    launch_rows(d, k, rows, (C + KA_VEC - 1) / KA_VEC, a);
}

/* ck_col_reduce over (outer, R, K) summed over R, mode and operands already
 * in *a: the chunks of rows are enough block tasks to fill a large GPU
 * (about COL_TASKS), at least COL_MIN_ROWS rows each, with the partial sums
 * of `channels` outputs inside the scratch region; then ck_col_final when
 * there is more than one chunk. The chunking depends on the shape and the
 * (fixed) workspace size only: every run sums in the same order. */
#define COL_TASKS 1024
#define COL_MIN_ROWS 64

static void col_reduce(acc_dev *d, acc_kargs *a, int64_t outer, int64_t R, int64_t K, int channels, float *dst0,
                       float *dst1, int store, float scale) {
    if (outer < 1 || K < 1) return; /* nothing to store */
    int64_t tiles = (K + 31) / 32, chunks = (COL_TASKS + outer * tiles - 1) / (outer * tiles);
    int64_t by_rows = (R + COL_MIN_ROWS - 1) / COL_MIN_ROWS, by_scratch = d->scratch_bytes / (4 * channels * outer * K);
    if (chunks > by_rows) chunks = by_rows;
    if (chunks > by_scratch) chunks = by_scratch;
    if (chunks < 1) chunks = 1;
    int64_t rows = (R + chunks - 1) / chunks;
    chunks = rows ? (R + rows - 1) / rows : 1;
    a->p[0] = dst0, a->p[1] = dst1, a->p[2] = (float *)d->scratch;
    a->i[0] = outer, a->i[1] = R, a->i[2] = K, a->i[3] = chunks, a->i[4] = rows, a->i[8] = store;
    a->f[0] = scale;
    dev_launch(d, KID_ck_col_reduce, outer * chunks * tiles * KA_BLOCK, KA_BLOCK, a);
    if (chunks > 1) dev_launch(d, KID_ck_col_final, outer * K, KA_BLOCK, a);
}

/* ---- helpers ------------------------------------------------------------------ */

/* h: the tensor is bf16 (every launcher's last argument h is the kernel's
 * bf16 flag: 0 for the fp32 entry points, 1 for the _bf16 ones) */
static void fill(acc_dev *d, void *x, float value, int64_t n, int h) {
    acc_kargs a = {{DP(x)}, {n, h}, {value}};
    dev_launch(d, KID_ck_fill, n, KA_BLOCK, &a);
}

void g_fill(acc_dev *d, float *x, float value, int64_t n) { fill(d, x, value, n, 0); }

void g_zero(acc_dev *d, float *x, int64_t n) { g_fill(d, x, 0.0f, n); }

void g_fill_bf16(acc_dev *d, acc_bf16 *x, float value, int64_t n) { fill(d, x, value, n, 1); }

void g_zero_bf16(acc_dev *d, acc_bf16 *x, int64_t n) { fill(d, x, 0.0f, n, 1); }

static void ew_chain(acc_dev *d, void *out, const void *x, const k_ew_op *ops, int n_ops, int64_t n, int h) {
    if (n_ops < 1 || n_ops > K_EW_MAX) {
        dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "an elementwise chain of %d ops (1..%d)", n_ops, K_EW_MAX);
        return;
    }
    acc_kargs a = {{DP(out), DP(x)}, {n, n_ops, h}, {0}};
    a.p[KA_SCALARS_P] = scalars(d); /* seed and step: read there (see acc_kscalars) */
    for (int k = 0; k < n_ops; k++) {
        a.p[2 + k] = DP(ops[k].operand);
        a.i[4 + 4 * k] = ops[k].op;
        a.i[5 + 4 * k] = ops[k].modulus > 0 ? ops[k].modulus : 1;
        a.i[6 + 4 * k] = ops[k].operand_right;
        a.i[7 + 4 * k] = ops[k].op_id;
        a.f[k] = ops[k].param;
    }
    dev_launch(d, KID_ck_ew_chain, (n + KA_VEC - 1) / KA_VEC, KA_BLOCK, &a);
}

/* seed and step are read from the step's scalars on the device */
void g_ew_chain(acc_dev *d, float *out, const float *x, const k_ew_op *ops, int n_ops, int64_t n, uint64_t seed,
                uint32_t step) {
    (void)seed, (void)step;
    ew_chain(d, out, x, ops, n_ops, n, 0);
}

void g_ew_chain_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, const k_ew_op *ops, int n_ops, int64_t n,
                     uint64_t seed, uint32_t step) {
    (void)seed, (void)step;
    ew_chain(d, out, x, ops, n_ops, n, 1);
}

/* ck_strided over `dims` (rank nd <= 6, outermost first): dst (+)= src with
 * the given element strides and offsets; h: both are bf16. */
static void strided_x(acc_dev *d, void *dst, const void *src, int accumulate, int nd, const int64_t *dims,
                      const int64_t *dst_stride, int64_t dst_off, const int64_t *src_stride, int64_t src_off, int h) {
    acc_kargs a = {{DP(dst), DP(src)}, {0}, {0}};
    int64_t n = 1;
    a.i[1] = accumulate;
    for (int k = 0; k < 6; k++) {
        int j = k - (6 - nd);
        a.i[2 + k] = j >= 0 ? dims[j] : 1;
        a.i[8 + k] = j >= 0 ? dst_stride[j] : 0;
        a.i[15 + k] = j >= 0 ? src_stride[j] : 0;
        n *= a.i[2 + k];
    }
    a.i[0] = n;
    a.i[14] = dst_off;
    a.i[21] = src_off;
    a.i[22] = h;
    dev_launch(d, KID_ck_strided, n, KA_BLOCK, &a);
}

static void contiguous_strides(int nd, const int64_t *dims, int64_t *st) {
    int64_t s = 1;
    for (int k = nd - 1; k >= 0; k--) {
        st[k] = s;
        s *= dims[k];
    }
}

static void copy_flat_x(acc_dev *d, void *dst, const void *src, int64_t n, int accumulate, int h) {
    int64_t one = 1;
    strided_x(d, dst, src, accumulate, 1, &n, &one, 0, &one, 0, h);
}

static void copy_flat(acc_dev *d, float *dst, const float *src, int64_t n, int accumulate) {
    copy_flat_x(d, dst, src, n, accumulate, 0);
}

/* ---- matmul through the backend's GEMM ---------------------------------------------- */

static int rm_gemm_staged(acc_dev *d, int h, void *C, const void *X, const void *Y, int64_t M, int64_t N, int64_t K,
                          int tx, int ty, float beta);

/* Row-major C (M x N) (+)= op(X) (M x K) op(Y) (K x N), X stored transposed
 * if tx, Y if ty, over `batch` items with element strides sx, sy, sc (0: one
 * operand shared); h: the operands and C are bf16 (device.h's gemm). As
 * cuBLAS is column-major this is C^T = op(Y)^T op(X)^T: the operands swap
 * places and keep their transposition flags. */
static void rm_gemm_h(acc_dev *d, int h, void *C, const void *X, const void *Y, int64_t M, int64_t N, int64_t K, int tx,
                      int ty, int64_t sx, int64_t sy, int64_t sc, int64_t batch, float beta) {
    if (d->status != ACC_OK || !C) return;
    if (batch == 1 && rm_gemm_staged(d, h, C, X, Y, M, N, K, tx, ty, beta)) return;
    d->ops->gemm(d, h, ty, tx, N, M, K, Y, ty ? K : N, sy, X, tx ? M : K, sx, beta, C, N, sc, batch);
}

/* GEMMs whose output rows are not 16-byte aligned. cuBLAS has only its slow
 * kernels for a leading dimension that is not a multiple of 16 bytes: on an
 * H200 the three GEMMs of GPT-2's output projection, whose logits are
 * [B T, 50257], took 15.8 ms of a 58.7 ms bf16 step in Turing-era align1
 * kernels. So a GEMM C = op(X) op(Y) with beta 0 whose C alone has such
 * rows runs in chunks of C's columns: each chunk computed by cuBLASLt into
 * the scratch region with rows of a multiple of 8 elements (the rest of the
 * scratch its workspace), then copied into C. Every element is still one
 * GEMM's sum over all of K with one rounding. Only where a chunk of C has at
 * least d->stage_out elements (default 2^22, enough 128x256 tiles for every
 * SM). Measured on the H200 (docs/gpu.md), this took the bf16 step from 56.2
 * to 52.7 ms. Staging the misaligned operand of the two backward GEMMs the
 * same way (chunks of their rows) was slower there (too few tiles a chunk:
 * 58.4 ms), and in bf16 it also moved the loss curve by more than rounding
 * explains (10.7099 against 10.7150 after one step; float and TF32 were
 * unchanged), which is not understood; so it is not done. A chunk cuBLASLt
 * has no algorithm for runs as the plain GEMM. Returns 1 when done, 0 when
 * the GEMM is not one of these (the caller runs it plainly). */
#define STAGE_ALIGN 8 /* elements: 16 bytes of bf16, 32 of float */

static int rm_gemm_staged(acc_dev *d, int h, void *C, const void *X, const void *Y, int64_t M, int64_t N, int64_t K,
                          int tx, int ty, float beta) {
    int64_t es = h ? 2 : 4, ldx = tx ? M : K, ldy = ty ? K : N;
    long long least = d->stage_out > 0 ? d->stage_out : (1LL << 22);
    if (!d->ops->gemm_ep || !d->scratch || beta != 0.0f || M < 1 || N < 1 || K < 1) return 0;
    if ((N * es) % 16 == 0 || (ldx * es) % 16 || (ldy * es) % 16 || ((uintptr_t)C | (uintptr_t)X | (uintptr_t)Y) % 16)
        return 0;
    /* the staged chunk, then cuBLASLt's workspace: an eighth of the scratch */
    int64_t ws = d->scratch_bytes / 8 / 256 * 256, room = (d->scratch_bytes - ws) / 256 * 256;
    unsigned char *S = d->scratch, *wsp = d->scratch + room;
    int64_t chunk = room / (M * es) / STAGE_ALIGN * STAGE_ALIGN; /* C's columns a chunk, M rows each */
    int64_t all = (N + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
    if (chunk > all) chunk = all;
    if (chunk < STAGE_ALIGN || (double)chunk * (double)M < (double)least) return 0; /* too few tiles a chunk */
    for (int64_t c0 = 0; c0 < N && d->status == ACC_OK; c0 += chunk) {
        int64_t n = N - c0 < chunk ? N - c0 : chunk;
        unsigned char *Cc = (unsigned char *)C + c0 * es;
        const unsigned char *Yc = (const unsigned char *)Y + (ty ? c0 * K : c0) * es; /* op(Y)'s columns c0.. */
        /* column-major: C'^T (n x M) = op(Y')^T op(X)^T, as rm_gemm_h */
        int rc = d->ops->gemm_ep(d, h, DEV_EPI_NONE, ty, tx, n, M, K, Yc, ldy, X, ldx, 0.0f, S, chunk, NULL, wsp, ws);
        if (rc == DEV_NO_ALGO) {
            d->ops->gemm(d, h, ty, tx, n, M, K, Yc, ldy, 0, X, ldx, 0, 0.0f, Cc, N, 0, 1);
            continue;
        }
        const int64_t dims[2] = {M, n}, c_st[2] = {N, 1}, s_st[2] = {chunk, 1};
        strided_x(d, Cc, S, 0, 2, dims, c_st, 0, s_st, 0, (int)h);
        d->staged++;
    }
    return 1;
}

static void rm_gemm(acc_dev *d, float *C, const float *X, const float *Y, int64_t M, int64_t N, int64_t K, int tx,
                    int ty, int64_t sx, int64_t sy, int64_t sc, int64_t batch, float beta) {
    rm_gemm_h(d, 0, C, X, Y, M, N, K, tx, ty, sx, sy, sc, batch, beta);
}

/* Element i of a tensor of floats (h 0) or bf16 (h 1). */
static const void *elem(const void *p, int64_t i, int h) { return (const char *)p + i * (h ? 2 : 4); }

/* matmul over either element type (h: bf16); the GEMMs do the math */
static void matmul_fwd(acc_dev *d, int h, void *out, const void *a, const void *b, int64_t batch, int64_t M, int64_t N,
                       int64_t K, int trans_a, int trans_b, int b_batched) {
    if (!b_batched && !trans_a) /* one GEMM over batch*M rows */
        rm_gemm_h(d, h, out, a, b, batch * M, N, K, 0, trans_b, 0, 0, 0, 1, 0.0f);
    else rm_gemm_h(d, h, out, a, b, M, N, K, trans_a, trans_b, M * K, b_batched ? K * N : 0, M * N, batch, 0.0f);
}

/* With A = op(a), B = op(b), out = A B: dA = dout B^T, dB = A^T dout. In
 * bf16 every GEMM accumulates into the gradient with one rounding, except
 * the shared b's gradient with trans_a: one rounding per batch item (the
 * CPU sums the items in float first; cuBLAS's workspace is the scratch
 * region, so there is no float buffer to sum them in). */
static void matmul_bwd(acc_dev *d, int h, void *da, void *db, const void *dout, const void *a, const void *b,
                       int64_t batch, int64_t M, int64_t N, int64_t K, int trans_a, int trans_b, int b_batched) {
    int64_t sb = b_batched ? K * N : 0;
    if (da) {
        if (!trans_a && !b_batched) /* da (batch*M, K) = dout B^T */
            rm_gemm_h(d, h, da, dout, b, batch * M, K, N, 0, !trans_b, 0, 0, 0, 1, 1.0f);
        else if (!trans_a) rm_gemm_h(d, h, da, dout, b, M, K, N, 0, !trans_b, M * N, sb, M * K, batch, 1.0f);
        else /* da stored (K, M) = dA^T = B dout^T */
            rm_gemm_h(d, h, da, b, dout, K, M, N, trans_b, 1, sb, M * N, M * K, batch, 1.0f);
    }
    if (!db) return;
    if (b_batched) {
        if (!trans_b) /* db (K, N) = A^T dout */
            rm_gemm_h(d, h, db, a, dout, K, N, M, !trans_a, 0, M * K, M * N, K * N, batch, 1.0f);
        else /* db stored (N, K) = dB^T = dout^T A */
            rm_gemm_h(d, h, db, dout, a, N, K, M, 1, trans_a, M * N, M * K, K * N, batch, 1.0f);
    } else if (!trans_a) { /* b shared: contract over all batch*M rows at once */
        if (!trans_b) rm_gemm_h(d, h, db, a, dout, K, N, batch * M, 1, 0, 0, 0, 0, 1, 1.0f);
        else rm_gemm_h(d, h, db, dout, a, N, K, batch * M, 1, 0, 0, 0, 0, 1, 1.0f);
    } else { /* b shared, a stored (K, M) per item: one accumulating GEMM per item, in order */
        for (int64_t i = 0; i < batch; i++) {
            const void *ai = elem(a, i * M * K, h), *gi = elem(dout, i * M * N, h);
            if (!trans_b) rm_gemm_h(d, h, db, ai, gi, K, N, M, 0, 0, 0, 0, 0, 1, 1.0f);
            else rm_gemm_h(d, h, db, gi, ai, N, K, M, 1, 1, 0, 0, 0, 1, 1.0f);
        }
    }
}

void g_matmul_fwd(acc_dev *d, float *out, const float *a, const float *b, int64_t batch, int64_t M, int64_t N,
                  int64_t K, int trans_a, int trans_b, int b_batched) {
    matmul_fwd(d, 0, out, a, b, batch, M, N, K, trans_a, trans_b, b_batched);
}

void g_matmul_bwd(acc_dev *d, float *da, float *db, const float *dout, const float *a, const float *b, int64_t batch,
                  int64_t M, int64_t N, int64_t K, int trans_a, int trans_b, int b_batched) {
    matmul_bwd(d, 0, da, db, dout, a, b, batch, M, N, K, trans_a, trans_b, b_batched);
}

static void binary_fwd(acc_dev *d, int op, float *out, const float *x, const float *y, int ndim, const int64_t *so,
                       const int64_t *sa, const int64_t *sb);
static void binary_bwd_one(acc_dev *d, int op, int which, float *dx, const float *dout, const float *x, const float *y,
                           int ndim, const int64_t *so, const int64_t *sa, const int64_t *sb);
static void binary_bwd_x(acc_dev *d, int op, int which, void *dx, const void *dout, const void *x, const void *y,
                         int ndim, const int64_t *so, const int64_t *sa, const int64_t *sb, int h);

/* ---- linear: a GEMM with a bias epilogue ----------------------------------------- */

/* Bytes of the scratch region the bias gradient of a linear backward takes
 * (n floats, rounded to 256 so cuBLASLt's workspace after it stays aligned). */
static long long bias_room(int64_t n) { return (n * 4 + 255) / 256 * 256; }

/* The backend's GEMM with an epilogue (device.h), skipped after a failure;
 * DEV_NO_ALGO when the backend has none for it. The bias gradient is written
 * at the start of the scratch region and the workspace is what follows. */
static int gemm_ep(acc_dev *d, int h, int epi, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *A,
                   int64_t lda, const void *B, int64_t ldb, float beta, void *D, int64_t ldd, void *bias) {
    if (d->status != ACC_OK) return d->status;
    long long skip = epi == DEV_EPI_BIAS ? 0 : bias_room(epi == DEV_EPI_BGRADA ? m : n);
    if (!d->ops->gemm_ep || (skip && (!d->scratch || skip > d->scratch_bytes))) return DEV_NO_ALGO;
    unsigned char *ws = d->scratch ? d->scratch + skip : NULL;
    return d->ops->gemm_ep(d, h, epi, ta, tb, m, n, k, A, lda, B, ldb, beta, D, ldd, bias, ws,
                           d->scratch ? d->scratch_bytes - skip : 0);
}

/* out (M, N) = x (M, K) op(w) + b. Column-major this is out^T (N x M) =
 * op(w)^T x^T, so the bias is per row of the column-major result: cuBLASLt's
 * BIAS epilogue. Without an algorithm for it: the GEMM, then the bias add. */
void g_linear_fwd(acc_dev *d, float *out, const float *x, const float *w, const float *b, int64_t M, int64_t N,
                  int64_t K, int trans_b) {
    if (d->status != ACC_OK || M < 1 || N < 1) return;
    if (gemm_ep(d, 0, DEV_EPI_BIAS, trans_b, 0, N, M, K, w, trans_b ? K : N, x, K, 0.0f, out, N, DP(b)) != DEV_NO_ALGO)
        return;
    rm_gemm(d, out, x, w, M, N, K, 0, trans_b, 0, 0, 0, 1, 0.0f);
    const int64_t so[] = {M, N}, sb[] = {1, N};
    binary_fwd(d, ACC_OP_ADD, out, out, b, 2, so, so, sb);
}

/* dx += dout op(w)^T (the matmul's); dw += x^T dout (w (K, N)) or dout^T x
 * (w (N, K)), with the bias-gradient epilogue summing dout over the M rows.
 * Column-major, dout (M, N) is stored as N x M: for w (K, N) the GEMM is
 * dw^T (N x K) += dout^T x with dout as A (BGRADA: N sums over k = M); for
 * w (N, K) it is dw^T (K x N) += x^T dout with dout as op(B) (BGRADB). The
 * epilogue writes the sums into the scratch region, and ck_strided adds them
 * into db (gradients accumulate). Without an algorithm: the plain GEMM, then
 * the column reduction of a bias add's gradient. */
void g_linear_bwd(acc_dev *d, float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                  int64_t M, int64_t N, int64_t K, int trans_b) {
    if (d->status != ACC_OK || M < 1 || N < 1) return;
    if (dx) rm_gemm(d, dx, dout, w, M, K, N, 0, !trans_b, 0, 0, 0, 1, 1.0f);
    if (dw && db) {
        float *sums = (float *)d->scratch;
        int rc = !trans_b ? gemm_ep(d, 0, DEV_EPI_BGRADA, 0, 1, N, K, M, dout, N, x, K, 1.0f, dw, N, sums)
                          : gemm_ep(d, 0, DEV_EPI_BGRADB, 0, 1, K, N, M, x, K, dout, N, 1.0f, dw, K, sums);
        if (rc != DEV_NO_ALGO) {
            if (rc == ACC_OK) copy_flat(d, db, sums, N, 1);
            return;
        }
    }
    if (dw) {
        if (!trans_b) rm_gemm(d, dw, x, dout, K, N, M, 1, 0, 0, 0, 0, 1, 1.0f);
        else rm_gemm(d, dw, dout, x, N, K, M, 1, 0, 0, 0, 0, 1, 1.0f);
    }
    const int64_t so[] = {M, N}, sb[] = {1, N};
    binary_bwd_one(d, ACC_OP_ADD, 1, db, dout, NULL, NULL, 2, so, so, sb);
}

/* ---- the bf16 GEMMs ---------------------------------------------------------- */

/* The bf16 instances of matmul and linear (cpu_kernels_t.h): every operand
 * and gradient bf16, the GEMMs in fp32 with one rounding per stored element
 * (device.h's gemm with bf16 set), as the CPU's bgemm does. */
void g_matmul_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *a, const acc_bf16 *b, int64_t batch, int64_t M,
                       int64_t N, int64_t K, int trans_a, int trans_b, int b_batched) {
    matmul_fwd(d, 1, out, a, b, batch, M, N, K, trans_a, trans_b, b_batched);
}

void g_matmul_bwd_bf16(acc_dev *d, acc_bf16 *da, acc_bf16 *db, const acc_bf16 *dout, const acc_bf16 *a,
                       const acc_bf16 *b, int64_t batch, int64_t M, int64_t N, int64_t K, int trans_a, int trans_b,
                       int b_batched) {
    matmul_bwd(d, 1, da, db, dout, a, b, batch, M, N, K, trans_a, trans_b, b_batched);
}

/* ck_bias_bf16: the rows of out (M, N) bf16 set to b (N) */
static void bias_rows_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *b, int64_t M, int64_t N) {
    acc_kargs a = {{DP(out), DP(b)}, {M, N}, {0}};
    dev_launch(d, KID_ck_bias_bf16, M * N, KA_BLOCK, &a);
}

/* out = round(x op(w) + b), one rounding: the BIAS epilogue in bf16, or
 * without an algorithm for it the rows of out set to b and the GEMM
 * accumulating into them (cuBLAS sums out + x op(w) in fp32, rounds once). */
void g_linear_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, const acc_bf16 *w, const acc_bf16 *b, int64_t M,
                       int64_t N, int64_t K, int trans_b) {
    if (d->status != ACC_OK || M < 1 || N < 1) return;
    if (K > 0 && gemm_ep(d, 1, DEV_EPI_BIAS, trans_b, 0, N, M, K, w, trans_b ? K : N, x, K, 0.0f, out, N,
                         (void *)(uintptr_t)b) != DEV_NO_ALGO)
        return;
    bias_rows_bf16(d, out, b, M, N);
    if (K > 0) rm_gemm_h(d, 1, out, x, w, M, N, K, 0, trans_b, 0, 0, 0, 1, 1.0f);
}

/* dx, dw as the matmul's; db: the bias-gradient epilogue's float sums (in
 * the scratch region) added into db with one rounding (g_uncast_bwd_bf16), or
 * without an algorithm (cuBLASLt has none for bf16 BGRADA/B on an H200) the
 * two-stage column reduction of a bias add's gradient. */
void g_linear_bwd_bf16(acc_dev *d, acc_bf16 *dx, acc_bf16 *dw, acc_bf16 *db, const acc_bf16 *dout, const acc_bf16 *x,
                       const acc_bf16 *w, int64_t M, int64_t N, int64_t K, int trans_b) {
    if (d->status != ACC_OK || M < 1 || N < 1) return;
    if (dx && K > 0) rm_gemm_h(d, 1, dx, dout, w, M, K, N, 0, !trans_b, 0, 0, 0, 1, 1.0f);
    if (dw && db && K > 0) {
        float *sums = (float *)d->scratch;
        int rc = !trans_b ? gemm_ep(d, 1, DEV_EPI_BGRADA, 0, 1, N, K, M, dout, N, x, K, 1.0f, dw, N, sums)
                          : gemm_ep(d, 1, DEV_EPI_BGRADB, 0, 1, K, N, M, x, K, dout, N, 1.0f, dw, K, sums);
        if (rc != DEV_NO_ALGO) {
            if (rc == ACC_OK) g_uncast_bwd_bf16(d, db, sums, N);
            return;
        }
    }
    if (dw && K > 0) {
        if (!trans_b) rm_gemm_h(d, 1, dw, x, dout, K, N, M, 1, 0, 0, 0, 0, 1, 1.0f);
        else rm_gemm_h(d, 1, dw, dout, x, N, K, M, 1, 0, 0, 0, 0, 1, 1.0f);
    }
    const int64_t so[] = {M, N}, sb[] = {1, N};
    binary_bwd_x(d, ACC_OP_ADD, 1, db, dout, NULL, NULL, 2, so, so, sb, 1);
}

/* ---- elementwise ------------------------------------------------------------ */

/* The six padded dims of out and each operand's strides over them (0 where
 * it broadcasts). */
static void broadcast_args(acc_kargs *a, int first, int ndim, const int64_t *so, const int64_t *sa, const int64_t *sb) {
    int64_t st_a = 1, st_b = 1;
    for (int k = 5; k >= 0; k--) {
        int j = k - (6 - ndim);
        int64_t o = j >= 0 ? so[j] : 1, x = j >= 0 ? sa[j] : 1, y = j >= 0 ? sb[j] : 1;
        a->i[first + k] = o;
        a->i[first + 6 + k] = x == 1 && o != 1 ? 0 : st_a;
        a->i[first + 12 + k] = y == 1 && o != 1 ? 0 : st_b;
        st_a *= x;
        st_b *= y;
    }
}

static int64_t elems(int ndim, const int64_t *s) {
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= s[k];
    return n;
}

static void binary_fwd_x(acc_dev *d, int op, void *out, const void *x, const void *y, int ndim, const int64_t *so,
                         const int64_t *sa, const int64_t *sb, int h) {
    acc_kargs a = {{DP(out), DP(x), DP(y)}, {elems(ndim, so), op}, {0}};
    broadcast_args(&a, 2, ndim, so, sa, sb);
    a.i[20] = h;
    dev_launch(d, KID_ck_binary_fwd, a.i[0], KA_BLOCK, &a);
}

static void binary_fwd(acc_dev *d, int op, float *out, const float *x, const float *y, int ndim, const int64_t *so,
                       const int64_t *sa, const int64_t *sb) {
    binary_fwd_x(d, op, out, x, y, ndim, so, sa, sb, 0);
}

/* the comparisons of int32 operands (exact): ck_binary_fwd on int32 a and b,
 * ck_unary_fwd on an int32 x; out f32 or bf16 (h) */
static void cmp_i32_x(acc_dev *d, int op, void *out, const int32_t *x, const int32_t *y, int ndim, const int64_t *so,
                      const int64_t *sa, const int64_t *sb, int h) {
    acc_kargs a = {{DP(out), DP(x), DP(y)}, {elems(ndim, so), op}, {0}};
    broadcast_args(&a, 2, ndim, so, sa, sb);
    a.i[20] = h;
    a.i[21] = 1;
    dev_launch(d, KID_ck_binary_fwd, a.i[0], KA_BLOCK, &a);
}
void g_cmp_i32_fwd(acc_dev *d, int op, float *out, const int32_t *a, const int32_t *b, int ndim, const int64_t *so,
                   const int64_t *sa, const int64_t *sb) {
    cmp_i32_x(d, op, out, a, b, ndim, so, sa, sb, 0);
}
void g_cmp_i32_fwd_bf16(acc_dev *d, int op, acc_bf16 *out, const int32_t *a, const int32_t *b, int ndim,
                        const int64_t *so, const int64_t *sa, const int64_t *sb) {
    cmp_i32_x(d, op, out, a, b, ndim, so, sa, sb, 1);
}
static void cmp_scalar_i32_x(acc_dev *d, int op, void *out, const int32_t *x, float value, int64_t n, int h) {
    acc_kargs a = {{DP(out), DP(x)}, {n, op, h, 1}, {value}};
    dev_launch(d, KID_ck_unary_fwd, (n + KA_VEC - 1) / KA_VEC, KA_BLOCK, &a); /* KA_VEC elements a thread */
}
void g_cmp_scalar_i32_fwd(acc_dev *d, int op, float *out, const int32_t *x, float value, int64_t n) {
    cmp_scalar_i32_x(d, op, out, x, value, n, 0);
}
void g_cmp_scalar_i32_fwd_bf16(acc_dev *d, int op, acc_bf16 *out, const int32_t *x, float value, int64_t n) {
    cmp_scalar_i32_x(d, op, out, x, value, n, 1);
}

/* The gradient of one operand (which: 0 a, 1 b) of shape sx. When sx is a
 * suffix of out's shape (a bias), a column reduction over the leading rows;
 * otherwise one thread per element of dx. h: every tensor is bf16 (sums in
 * float, dx rounded once). */
static void binary_bwd_x(acc_dev *d, int op, int which, void *dx, const void *dout, const void *x, const void *y,
                         int ndim, const int64_t *so, const int64_t *sa, const int64_t *sb, int h) {
    if (!dx) return;
    const int64_t *sx = which ? sb : sa;
    int64_t R = 1, K = 1;
    int lead = 0, suffix = 1;
    for (; lead < ndim && sx[lead] == 1; lead++) R *= so[lead]; /* the dims x broadcasts over lead */
    for (int k = lead; k < ndim; k++) {
        suffix &= sx[k] == so[k];
        K *= so[k];
    }
    if (suffix && R > 1) {
        acc_kargs a = {{0, 0, 0, DP(dout), DP(x), DP(y)}, {0, 0, 0, 0, 0, COL_BINARY, op, which}, {0}};
        broadcast_args(&a, 9, ndim, so, sa, sb);
        a.i[27] = a.i[28] = h;
        col_reduce(d, &a, 1, R, K, 1, DP(dx), NULL, COL_ADD, 1.0f);
        return;
    }
    acc_kargs a = {{DP(dx), DP(dout), DP(x), DP(y)}, {elems(ndim, sx), op, which}, {0}};
    acc_kargs tmp = {{0}, {0}, {0}};
    broadcast_args(&tmp, 0, ndim, so, sa, sb);
    for (int k = 0; k < 6; k++) {
        int j = k - (6 - ndim);
        a.i[3 + k] = tmp.i[k];
        a.i[9 + k] = j >= 0 ? sx[j] : 1;
        a.i[15 + k] = tmp.i[6 + k];
        a.i[21 + k] = tmp.i[12 + k];
    }
    a.i[27] = h;
    dev_launch(d, KID_ck_binary_bwd, a.i[0], KA_BLOCK, &a);
}

static void binary_bwd_one(acc_dev *d, int op, int which, float *dx, const float *dout, const float *x, const float *y,
                           int ndim, const int64_t *so, const int64_t *sa, const int64_t *sb) {
    binary_bwd_x(d, op, which, dx, dout, x, y, ndim, so, sa, sb, 0);
}

/* where: cond int32 (ci) or of the element type; h: out, a, b (and a
 * float cond) bf16 */
static void where_fwd_x(acc_dev *d, void *out, const void *cond, const void *x, const void *y, int ci, int ndim,
                        const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb, int h) {
    acc_kargs a = {{DP(out), DP(cond), DP(x), DP(y)}, {elems(ndim, so), ci, h}, {0}};
    acc_kargs ca = {{0}, {0}, {0}}, bb = {{0}, {0}, {0}};
    broadcast_args(&ca, 0, ndim, so, sc, sa);
    broadcast_args(&bb, 0, ndim, so, sb, sb);
    for (int k = 0; k < 6; k++) {
        a.i[3 + k] = ca.i[k];
        a.i[9 + k] = ca.i[6 + k];
        a.i[15 + k] = ca.i[12 + k];
        a.i[21 + k] = bb.i[6 + k];
    }
    dev_launch(d, KID_ck_where_fwd, a.i[0], KA_BLOCK, &a);
}

/* dx += dout where the condition picks x (pick 1: a, 0: b), x of shape sx */
static void where_bwd_x(acc_dev *d, void *dx, const void *dout, const void *cond, int ci, int pick, int ndim,
                        const int64_t *so, const int64_t *sc, const int64_t *sx, int h) {
    if (!dx) return;
    acc_kargs a = {{DP(dx), DP(dout), DP(cond)}, {elems(ndim, sx), ci, h, pick}, {0}};
    acc_kargs tmp = {{0}, {0}, {0}};
    broadcast_args(&tmp, 0, ndim, so, sc, sc);
    for (int k = 0; k < 6; k++) {
        int j = k - (6 - ndim);
        a.i[4 + k] = tmp.i[k];
        a.i[10 + k] = j >= 0 ? sx[j] : 1;
        a.i[16 + k] = tmp.i[6 + k];
    }
    dev_launch(d, KID_ck_where_bwd, a.i[0], KA_BLOCK, &a);
}

void g_where_fwd(acc_dev *d, float *out, const void *cond, const float *a, const float *b, int cond_i32, int ndim,
                 const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb) {
    where_fwd_x(d, out, cond, a, b, cond_i32, ndim, so, sc, sa, sb, 0);
}
void g_where_bwd(acc_dev *d, float *da, float *db, const float *dout, const void *cond, int cond_i32, int ndim,
                 const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb) {
    where_bwd_x(d, da, dout, cond, cond_i32, 1, ndim, so, sc, sa, 0);
    where_bwd_x(d, db, dout, cond, cond_i32, 0, ndim, so, sc, sb, 0);
}
void g_where_fwd_bf16(acc_dev *d, acc_bf16 *out, const void *cond, const acc_bf16 *a, const acc_bf16 *b, int cond_i32,
                      int ndim, const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb) {
    where_fwd_x(d, out, cond, a, b, cond_i32, ndim, so, sc, sa, sb, 1);
}
void g_where_bwd_bf16(acc_dev *d, acc_bf16 *da, acc_bf16 *db, const acc_bf16 *dout, const void *cond, int cond_i32,
                      int ndim, const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb) {
    where_bwd_x(d, da, dout, cond, cond_i32, 1, ndim, so, sc, sa, 1);
    where_bwd_x(d, db, dout, cond, cond_i32, 0, ndim, so, sc, sb, 1);
}

/* the binary elementwise ops of the op table (acc_ops.h) */
#define BINARY(code, name, reads)                                                                            \
    void g_##name##_fwd(acc_dev *d, float *out, const float *a, const float *b, int ndim, const int64_t *so, \
                        const int64_t *sa, const int64_t *sb) {                                              \
        binary_fwd(d, ACC_OP_##code, out, a, b, ndim, so, sa, sb);                                           \
    }                                                                                                        \
    void g_##name##_bwd(acc_dev *d, float *da, float *db, const float *dout,                                 \
                        ACC_EW_BWD_OPERANDS_##reads(float) int ndim, const int64_t *so, const int64_t *sa,   \
                        const int64_t *sb) {                                                                 \
        binary_bwd_one(d, ACC_OP_##code, 0, da, dout, ACC_EW_BWD_OPERAND_ARGS_##reads, ndim, so, sa, sb);    \
        binary_bwd_one(d, ACC_OP_##code, 1, db, dout, ACC_EW_BWD_OPERAND_ARGS_##reads, ndim, so, sa, sb);    \
    }
ACC_EW_BINARY_OPS(BINARY)
#undef BINARY

/* their bf16 instance (cpu_kernels_t.h) */
#define BINARY_BF16(code, name, reads)                                                                             \
    void g_##name##_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *a, const acc_bf16 *b, int ndim,            \
                             const int64_t *so, const int64_t *sa, const int64_t *sb) {                            \
        binary_fwd_x(d, ACC_OP_##code, out, a, b, ndim, so, sa, sb, 1);                                            \
    }                                                                                                              \
    void g_##name##_bwd_bf16(acc_dev *d, acc_bf16 *da, acc_bf16 *db, const acc_bf16 *dout,                         \
                             ACC_EW_BWD_OPERANDS_##reads(acc_bf16) int ndim, const int64_t *so, const int64_t *sa, \
                             const int64_t *sb) {                                                                  \
        binary_bwd_x(d, ACC_OP_##code, 0, da, dout, ACC_EW_BWD_OPERAND_ARGS_##reads, ndim, so, sa, sb, 1);         \
        binary_bwd_x(d, ACC_OP_##code, 1, db, dout, ACC_EW_BWD_OPERAND_ARGS_##reads, ndim, so, sa, sb, 1);         \
    }
ACC_EW_BINARY_OPS(BINARY_BF16)
#undef BINARY_BF16

static void unary_x(acc_dev *d, acc_kernel_id k, int op, void *y, const void *x, const void *saved, float alpha,
                    int64_t n, int h) {
    acc_kargs a = {{DP(y), DP(x), DP(saved)}, {n, op, h}, {alpha}};
    dev_launch(d, k, (n + KA_VEC - 1) / KA_VEC, KA_BLOCK, &a); /* KA_VEC elements a thread */
}

static void unary(acc_dev *d, acc_kernel_id k, int op, float *y, const float *x, const float *saved, float alpha,
                  int64_t n) {
    unary_x(d, k, op, y, x, saved, alpha, n, 0);
}

void g_scale_fwd(acc_dev *d, float *out, const float *x, float alpha, int64_t n) {
    unary(d, KID_ck_unary_fwd, ACC_OP_SCALE, out, x, NULL, alpha, n);
}
void g_scale_bwd(acc_dev *d, float *dx, const float *dout, float alpha, int64_t n) {
    unary(d, KID_ck_unary_bwd, ACC_OP_SCALE, dx, dout, NULL, alpha, n);
}
void g_shift_fwd(acc_dev *d, float *out, const float *x, float beta, int64_t n) {
    unary(d, KID_ck_unary_fwd, ACC_OP_SHIFT, out, x, NULL, beta, n);
}
void g_shift_bwd(acc_dev *d, float *dx, const float *dout, int64_t n) {
    unary(d, KID_ck_unary_bwd, ACC_OP_SHIFT, dx, dout, NULL, 0.0f, n);
}

/* the precision pass's casts: bf16 pointers travel as the kargs' float ones;
 * hx, ho: x, out bf16; acc: out += x */
static void convert(acc_dev *d, void *out, const void *x, int64_t n, int hx, int ho, int acc) {
    acc_kargs a = {{(float *)out, DP(x)}, {n, hx, ho, acc}, {0}};
    dev_launch(d, KID_ck_convert, (n + KA_VEC - 1) / KA_VEC, KA_BLOCK, &a); /* KA_VEC elements a thread */
}
void g_cast_fwd_bf16(acc_dev *d, acc_bf16 *out, const float *x, int64_t n) { convert(d, out, x, n, 0, 1, 0); }
void g_cast_bwd_bf16(acc_dev *d, float *dx, const acc_bf16 *dout, int64_t n) { convert(d, dx, dout, n, 1, 0, 1); }
void g_uncast_fwd_bf16(acc_dev *d, float *out, const acc_bf16 *x, int64_t n) { convert(d, out, x, n, 1, 0, 0); }
void g_uncast_bwd_bf16(acc_dev *d, acc_bf16 *dx, const float *dout, int64_t n) { convert(d, dx, dout, n, 0, 1, 1); }
/* float(x) of an i32 x: out is f32 in both instances; no backward (an i32
 * input gets no gradient: never called) */
void g_float_fwd(acc_dev *d, float *out, const int32_t *x, int64_t n) { convert(d, out, x, n, 2, 0, 0); }
void g_float_bwd(acc_dev *d, int32_t *dx, const float *dout, int64_t n) { (void)d, (void)dx, (void)dout, (void)n; }
void g_float_fwd_bf16(acc_dev *d, float *out, const int32_t *x, int64_t n) { g_float_fwd(d, out, x, n); }
void g_float_bwd_bf16(acc_dev *d, int32_t *dx, const float *dout, int64_t n) { g_float_bwd(d, dx, dout, n); }
/* the f32 instance, as the CPU's: a copy (never emitted: fp32 has no casts) */
void g_cast_fwd(acc_dev *d, float *out, const float *x, int64_t n) { copy_flat(d, out, x, n, 0); }
void g_cast_bwd(acc_dev *d, float *dx, const float *dout, int64_t n) { copy_flat(d, dx, dout, n, 1); }

/* the plain unary elementwise ops of the op table (acc_ops.h) */
#define UNARY(code, name, saved)                                                                   \
    void g_##name##_fwd(acc_dev *d, float *out, const float *x, int64_t n) {                       \
        unary(d, KID_ck_unary_fwd, ACC_OP_##code, out, x, NULL, 0.0f, n);                          \
    }                                                                                              \
    void g_##name##_bwd(acc_dev *d, float *dx, const float *dout, const float *saved, int64_t n) { \
        unary(d, KID_ck_unary_bwd, ACC_OP_##code, dx, dout, saved, 0.0f, n);                       \
    }
ACC_EW_UNARY_OPS(UNARY)
#undef UNARY

/* the comparisons with a number (acc_ops.h): ck_unary_fwd's cases; no
 * gradient (the backward is never called and does nothing) */
#define CMP_SCALAR(code, name, binary)                                                               \
    void g_##name##_fwd(acc_dev *d, float *out, const float *x, float value, int64_t n) {            \
        unary(d, KID_ck_unary_fwd, ACC_OP_##code, out, x, NULL, value, n);                           \
    }                                                                                                \
    void g_##name##_bwd(acc_dev *d, float *dx, const float *dout, int64_t n) {                       \
        (void)d, (void)dx, (void)dout, (void)n;                                                      \
    }                                                                                                \
    void g_##name##_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, float value, int64_t n) { \
        unary_x(d, KID_ck_unary_fwd, ACC_OP_##code, out, x, NULL, value, n, 1);                      \
    }                                                                                                \
    void g_##name##_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t n) {            \
        (void)d, (void)dx, (void)dout, (void)n;                                                      \
    }
ACC_EW_CMP_SCALAR_OPS(CMP_SCALAR)
#undef CMP_SCALAR

/* scale, shift and the plain unary ops over bf16 */
void g_scale_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, float alpha, int64_t n) {
    unary_x(d, KID_ck_unary_fwd, ACC_OP_SCALE, out, x, NULL, alpha, n, 1);
}
void g_scale_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, float alpha, int64_t n) {
    unary_x(d, KID_ck_unary_bwd, ACC_OP_SCALE, dx, dout, NULL, alpha, n, 1);
}
void g_shift_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, float beta, int64_t n) {
    unary_x(d, KID_ck_unary_fwd, ACC_OP_SHIFT, out, x, NULL, beta, n, 1);
}
void g_shift_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t n) {
    unary_x(d, KID_ck_unary_bwd, ACC_OP_SHIFT, dx, dout, NULL, 0.0f, n, 1);
}
#define UNARY_BF16(code, name, saved)                                                                            \
    void g_##name##_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t n) {                          \
        unary_x(d, KID_ck_unary_fwd, ACC_OP_##code, out, x, NULL, 0.0f, n, 1);                                   \
    }                                                                                                            \
    void g_##name##_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, const acc_bf16 *saved, int64_t n) { \
        unary_x(d, KID_ck_unary_bwd, ACC_OP_##code, dx, dout, saved, 0.0f, n, 1);                                \
    }
ACC_EW_UNARY_OPS(UNARY_BF16)
#undef UNARY_BF16

/* ---- normalisation and softmax --------------------------------------------------- */

/* h: the element-type tensors (x, y, dx, dy) are bf16; weights, their
 * gradients and the statistics are float in both instances */
static void layernorm_fwd(acc_dev *d, void *y, float *stats, const void *x, const float *w, const float *b, int64_t N,
                          int64_t C, float eps, int h) {
    acc_kargs a = {{DP(y), stats, DP(x), DP(w), DP(b)}, {N, C, h}, {eps}};
    launch_rows_vec(d, KID_ck_layernorm_fwd, N, C, &a);
}

static void layernorm_bwd(acc_dev *d, void *dx, float *dw, float *db, const void *dy, const void *x, const float *w,
                          const float *stats, int64_t N, int64_t C, int h) {
    if (dx) {
        acc_kargs a = {{DP(dx), DP(dy), DP(x), DP(w), DP(stats)}, {N, C, h}, {0}};
        launch_rows_vec(d, KID_ck_layernorm_bwd_dx, N, C, &a);
    }
    if (dw || db) {
        acc_kargs a = {{0, 0, 0, DP(dy), DP(x), DP(stats)}, {0, 0, 0, 0, 0, COL_LAYERNORM}, {0}};
        a.i[27] = h;
        col_reduce(d, &a, 1, N, C, db ? 2 : 1, dw, db, COL_ADD, 1.0f);
    }
}

static void rmsnorm_fwd(acc_dev *d, void *y, float *stats, const void *x, const float *w, int64_t N, int64_t C,
                        float eps, int h) {
    acc_kargs a = {{DP(y), stats, DP(x), DP(w)}, {N, C, h}, {eps}};
    launch_rows_vec(d, KID_ck_rmsnorm_fwd, N, C, &a);
}

static void rmsnorm_bwd(acc_dev *d, void *dx, float *dw, const void *dy, const void *x, const float *w,
                        const float *stats, int64_t N, int64_t C, int h) {
    if (dx) {
        acc_kargs a = {{DP(dx), DP(dy), DP(x), DP(w), DP(stats)}, {N, C, h}, {0}};
        launch_rows_vec(d, KID_ck_rmsnorm_bwd_dx, N, C, &a);
    }
    if (dw) {
        acc_kargs a = {{0, 0, 0, DP(dy), DP(x), DP(stats)}, {0, 0, 0, 0, 0, COL_RMSNORM}, {0}};
        a.i[27] = h;
        col_reduce(d, &a, 1, N, C, 1, dw, NULL, COL_ADD, 1.0f);
    }
}

static void softmax_fwd(acc_dev *d, void *y, const void *x, int64_t N, int64_t C, int h) {
    acc_kargs a = {{DP(y), DP(x)}, {N, C, h}, {0}};
    launch_rows(d, KID_ck_softmax_fwd, N, C, &a);
}

static void softmax_bwd(acc_dev *d, void *dx, const void *dy, const void *y, int64_t N, int64_t C, int h) {
    acc_kargs a = {{DP(dx), DP(dy), DP(y)}, {N, C, h}, {0}};
    launch_rows(d, KID_ck_softmax_bwd, N, C, &a);
}

void g_layernorm_fwd(acc_dev *d, float *y, float *stats, const float *x, const float *w, const float *b, int64_t N,
                     int64_t C, float eps) {
    layernorm_fwd(d, y, stats, x, w, b, N, C, eps, 0);
}

void g_layernorm_bwd(acc_dev *d, float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                     const float *stats, int64_t N, int64_t C) {
    layernorm_bwd(d, dx, dw, db, dy, x, w, stats, N, C, 0);
}

void g_rmsnorm_fwd(acc_dev *d, float *y, float *stats, const float *x, const float *w, int64_t N, int64_t C,
                   float eps) {
    rmsnorm_fwd(d, y, stats, x, w, N, C, eps, 0);
}

void g_rmsnorm_bwd(acc_dev *d, float *dx, float *dw, const float *dy, const float *x, const float *w,
                   const float *stats, int64_t N, int64_t C) {
    rmsnorm_bwd(d, dx, dw, dy, x, w, stats, N, C, 0);
}

void g_softmax_fwd(acc_dev *d, float *y, const float *x, int64_t N, int64_t C) { softmax_fwd(d, y, x, N, C, 0); }

void g_softmax_bwd(acc_dev *d, float *dx, const float *dy, const float *y, int64_t N, int64_t C) {
    softmax_bwd(d, dx, dy, y, N, C, 0);
}

void g_layernorm_fwd_bf16(acc_dev *d, acc_bf16 *y, float *stats, const acc_bf16 *x, const float *w, const float *b,
                          int64_t N, int64_t C, float eps) {
    layernorm_fwd(d, y, stats, x, w, b, N, C, eps, 1);
}

void g_layernorm_bwd_bf16(acc_dev *d, acc_bf16 *dx, float *dw, float *db, const acc_bf16 *dy, const acc_bf16 *x,
                          const float *w, const float *stats, int64_t N, int64_t C) {
    layernorm_bwd(d, dx, dw, db, dy, x, w, stats, N, C, 1);
}

void g_rmsnorm_fwd_bf16(acc_dev *d, acc_bf16 *y, float *stats, const acc_bf16 *x, const float *w, int64_t N, int64_t C,
                        float eps) {
    rmsnorm_fwd(d, y, stats, x, w, N, C, eps, 1);
}

void g_rmsnorm_bwd_bf16(acc_dev *d, acc_bf16 *dx, float *dw, const acc_bf16 *dy, const acc_bf16 *x, const float *w,
                        const float *stats, int64_t N, int64_t C) {
    rmsnorm_bwd(d, dx, dw, dy, x, w, stats, N, C, 1);
}

void g_softmax_fwd_bf16(acc_dev *d, acc_bf16 *y, const acc_bf16 *x, int64_t N, int64_t C) {
    softmax_fwd(d, y, x, N, C, 1);
}

void g_softmax_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dy, const acc_bf16 *y, int64_t N, int64_t C) {
    softmax_bwd(d, dx, dy, y, N, C, 1);
}

/* ---- attention ---------------------------------------------------------------- */

static void attention_ints(acc_kargs *a, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                           int causal) {
    a->i[0] = B, a->i[1] = T, a->i[2] = S, a->i[3] = H, a->i[4] = KVH > 0 ? KVH : H, a->i[5] = D, a->i[6] = causal;
}

/* The tiled kernels (D <= KA_ATT_TILE_D): one block of KA_ATT_THREADS per
 * tile of `rows` query rows (or key rows) of each of `heads` (batch, head)
 * pairs; the kernels stride over the tiles past the grid cap. */
static void launch_tiles(acc_dev *d, acc_kernel_id k, int64_t heads, int64_t rows, int64_t tile, const acc_kargs *a) {
    dev_launch(d, k, heads * ((rows + tile - 1) / tile) * KA_ATT_THREADS, KA_ATT_THREADS, a);
}

/* The wide-head kernels: one warp per row, KA_ATT_WARPS warps per block. */
static void launch_warps(acc_dev *d, acc_kernel_id k, int64_t rows, const acc_kargs *a) {
    dev_launch(d, k, rows * 32, 32 * KA_ATT_WARPS, a);
}

/* Whether the attention takes the TF32 tensor-core kernels (*_tc): under
 * --tf32, and in the bf16 step (h) whatever --tf32 says, since bf16 values
 * are exact in TF32 (8 significant bits of TF32's 11): q, k, v and dout
 * enter the products unrounded, only q's 1/sqrt(D) scaling (for D not a
 * power of 4), P and dS are rounded to TF32 (2^-11 relative), finer than
 * the bf16 store of every output. Head dimensions up to 64, a multiple of
 * 8 (the mma's k). */
static int att_tc(const acc_dev *d, int h, int64_t D) { return (d->tf32 || h) && D <= KA_ATT_RT_D && D % 8 == 0; }

/* Whether the bf16 step takes the bf16 tensor-core kernels (*_hb) instead:
 * mma m16n8k16 on the bf16 operands as they are (twice the TF32 mma's
 * work an instruction, half its shared memory a tile), P and dS rounded
 * to bf16 for their products as flash attention does, statistics in FP32;
 * the head dimension a multiple of the mma's k (16), up to 64 (GPT-2's and
 * Llama's 64 among them). Others keep the TF32 kernels (D a multiple of 8)
 * or the FP32 ones. */
static int att_hb(int h, int64_t D) { return h && D <= KA_ATT_RT_D && D % 16 == 0; }

/* The attention over either element type: h (kargs i7, the kernels' bf16
 * flag) says q, k, v, out and the gradients are bf16; lse and delta are
 * floats either way. */
static void attention_fwd(acc_dev *d, int h, void *out, float *lse, const void *q, const void *k, const void *v,
                          int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    if (D > KA_ATT_MAX_D) {
        dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "attention head dimension %lld > %d", (long long)D, KA_ATT_MAX_D);
        return;
    }
    acc_kargs a = {{DP(out), lse, DP(q), DP(k), DP(v)}, {0}, {0}};
    attention_ints(&a, B, T, S, H, KVH, D, causal);
    a.i[7] = h;
    if (att_hb(h, D)) launch_tiles(d, KID_ck_attention_fwd_hb, B * H, T, KA_ATT_RT_ROWS, &a);
    else if (att_tc(d, h, D)) launch_tiles(d, KID_ck_attention_fwd_tc, B * H, T, KA_ATT_RT_ROWS, &a);
    else if (D <= KA_ATT_RT_D) launch_tiles(d, KID_ck_attention_fwd_rt, B * H, T, KA_ATT_RT_ROWS, &a);
    else if (D <= KA_ATT_TILE_D) launch_tiles(d, KID_ck_attention_fwd, B * H, T, KA_ATT_FWD_ROWS, &a);
    else launch_warps(d, KID_ck_attention_fwd_wide, B * H * T, &a);
}

static void attention_bwd(acc_dev *d, int h, void *dq, void *dk, void *dv, const void *dout, const void *q,
                          const void *k, const void *v, const void *out, const float *lse, int64_t B, int64_t T,
                          int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    if (D > KA_ATT_MAX_D) {
        dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "attention head dimension %lld > %d", (long long)D, KA_ATT_MAX_D);
        return;
    }
    int tiled = D <= KA_ATT_TILE_D, tc = att_tc(d, h, D), hb = att_hb(h, D);
    /* delta = dout . out per query row, once, in the workspace when it fits */
    float *delta = NULL;
    if (B * H * T * 4 <= d->scratch_bytes) {
        delta = (float *)d->scratch;
        acc_kargs a = {{delta, DP(dout), DP(out)}, {0}, {0}};
        attention_ints(&a, B, T, S, H, KVH, D, causal);
        a.i[7] = h;
        launch_warps(d, KID_ck_attention_delta, B * H * T, &a);
    }
    if (dq) {
        acc_kargs a = {{DP(dq), DP(dout), DP(q), DP(k), DP(v), DP(out), DP(lse), delta}, {0}, {0}};
        attention_ints(&a, B, T, S, H, KVH, D, causal);
        a.i[7] = h;
        if (delta && hb) launch_tiles(d, KID_ck_attention_bwd_dq_hb, B * H, T, KA_ATT_RT_ROWS, &a);
        else if (delta && tc) launch_tiles(d, KID_ck_attention_bwd_dq_tc, B * H, T, KA_ATT_RT_ROWS, &a);
        else if (delta && D <= KA_ATT_RT_D) launch_tiles(d, KID_ck_attention_bwd_dq_rt, B * H, T, KA_ATT_RB, &a);
        else if (tiled) launch_tiles(d, KID_ck_attention_bwd_dq, B * H, T, KA_ATT_DQ_ROWS, &a);
        else launch_warps(d, KID_ck_attention_bwd_dq_wide, B * H * T, &a);
    }
    if (dk || dv) {
        acc_kargs a = {{DP(dk), DP(dv), DP(dout), DP(q), DP(k), DP(v), DP(out), DP(lse), delta}, {0}, {0}};
        attention_ints(&a, B, T, S, H, KVH, D, causal);
        a.i[7] = h;
        if (delta && hb) launch_tiles(d, KID_ck_attention_bwd_dkdv_hb, B * a.i[4], S, KA_ATT_RT_ROWS, &a);
        else if (delta && tc) launch_tiles(d, KID_ck_attention_bwd_dkdv_tc, B * a.i[4], S, KA_ATT_RT_ROWS, &a);
        else if (delta && D <= KA_ATT_RT_D) launch_tiles(d, KID_ck_attention_bwd_dkdv_rt, B * a.i[4], S, KA_ATT_RB, &a);
        else if (tiled) launch_tiles(d, KID_ck_attention_bwd_dkdv, B * a.i[4], S, KA_ATT_DKDV_KEYS, &a);
        else launch_warps(d, KID_ck_attention_bwd_dkdv_wide, B * a.i[4] * S, &a);
    }
}

void g_attention_fwd(acc_dev *d, float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                     int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    attention_fwd(d, 0, out, lse, q, k, v, B, T, S, H, KVH, D, causal);
}

void g_attention_bwd(acc_dev *d, float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                     const float *v, const float *out, const float *lse, int64_t B, int64_t T, int64_t S, int64_t H,
                     int64_t KVH, int64_t D, int causal) {
    attention_bwd(d, 0, dq, dk, dv, dout, q, k, v, out, lse, B, T, S, H, KVH, D, causal);
}

/* The bf16 instances: the same kernels, loading through ldx and storing
 * through stx (one rounding per stored element: the gradients are summed in
 * float over every key or query and added to the old value once), their
 * tiles loaded synchronously (no cp.async of bf16 rows); or, for the head
 * sizes att_hb takes, the bf16 tensor-core kernels, which stage bf16 rows
 * as they are (by cp.async when 16-byte aligned) and round P and dS to
 * bf16 as well. */
void g_attention_fwd_bf16(acc_dev *d, acc_bf16 *out, float *lse, const acc_bf16 *q, const acc_bf16 *k,
                          const acc_bf16 *v, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                          int causal) {
    attention_fwd(d, 1, out, lse, q, k, v, B, T, S, H, KVH, D, causal);
}

void g_attention_bwd_bf16(acc_dev *d, acc_bf16 *dq, acc_bf16 *dk, acc_bf16 *dv, const acc_bf16 *dout, const acc_bf16 *q,
                          const acc_bf16 *k, const acc_bf16 *v, const acc_bf16 *out, const float *lse, int64_t B,
                          int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    attention_bwd(d, 1, dq, dk, dv, dout, q, k, v, out, lse, B, T, S, H, KVH, D, causal);
}

/* Attention with a mask and/or a bias (cpu_kernels_t.h,
 * k_attention_masked_fwd): the one-warp-per-row kernels, whatever the head
 * dimension, with the mask (p5 forward) and the bias; kargs i8 the mask's
 * int32 flag, i9..i12 the bias's strides, i13..i16 the mask's. (The tiled
 * and tensor-core kernels take no mask or bias.) */
static void attention_mb_ints(acc_kargs *a, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                              int causal, int h, int mask_i32, const int64_t *ms, const int64_t *bs) {
    attention_ints(a, B, T, S, H, KVH, D, causal);
    a->i[7] = h, a->i[8] = mask_i32;
    for (int j = 0; j < 4; j++) a->i[9 + j] = bs[j], a->i[13 + j] = ms[j];
}

static void attention_masked_fwd(acc_dev *d, int h, void *out, float *lse, const void *q, const void *k, const void *v,
                                 const void *mask, int mask_i32, const int64_t *ms, const float *bias,
                                 const int64_t *bs, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                                 int causal) {
    if (D > KA_ATT_MAX_D) {
        dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "attention head dimension %lld > %d", (long long)D, KA_ATT_MAX_D);
        return;
    }
    acc_kargs a = {{DP(out), lse, DP(q), DP(k), DP(v), DP(mask), DP(bias)}, {0}, {0}};
    attention_mb_ints(&a, B, T, S, H, KVH, D, causal, h, mask_i32, ms, bs);
    launch_warps(d, KID_ck_attention_fwd_wide, B * H * T, &a);
}

static void attention_masked_bwd(acc_dev *d, int h, void *dq, void *dk, void *dv, float *dbias, const void *dout,
                                 const void *q, const void *k, const void *v, const void *out, const float *lse,
                                 const void *mask, int mask_i32, const int64_t *ms, const float *bias,
                                 const int64_t *bs, int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D,
                                 int causal) {
    if (D > KA_ATT_MAX_D) {
        dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "attention head dimension %lld > %d", (long long)D, KA_ATT_MAX_D);
        return;
    }
    float *delta = NULL;
    if (B * H * T * 4 <= d->scratch_bytes) {
        delta = (float *)d->scratch;
        acc_kargs a = {{delta, DP(dout), DP(out)}, {0}, {0}};
        attention_mb_ints(&a, B, T, S, H, KVH, D, causal, h, mask_i32, ms, bs);
        launch_warps(d, KID_ck_attention_delta, B * H * T, &a);
    }
    if (dq) {
        acc_kargs a = {{DP(dq), DP(dout), DP(q), DP(k), DP(v), DP(out), DP(lse), delta, DP(mask), DP(bias)}, {0}, {0}};
        attention_mb_ints(&a, B, T, S, H, KVH, D, causal, h, mask_i32, ms, bs);
        launch_warps(d, KID_ck_attention_bwd_dq_wide, B * H * T, &a);
    }
    if (dk || dv) {
        acc_kargs a = {
            {DP(dk), DP(dv), DP(dout), DP(q), DP(k), DP(v), DP(out), DP(lse), delta, DP(mask), DP(bias)}, {0}, {0}};
        attention_mb_ints(&a, B, T, S, H, KVH, D, causal, h, mask_i32, ms, bs);
        launch_warps(d, KID_ck_attention_bwd_dkdv_wide, B * a.i[4] * S, &a);
    }
    if (dbias && bias) {
        acc_kargs a = {{dbias, DP(dout), DP(q), DP(k), DP(v), DP(out), DP(lse), delta, DP(mask), DP(bias)}, {0}, {0}};
        attention_mb_ints(&a, B, T, S, H, KVH, D, causal, h, mask_i32, ms, bs);
        int64_t elems = (bs[0] ? B : 1) * (bs[1] ? H : 1) * (bs[2] ? T : 1) * (bs[3] ? S : 1);
        launch_warps(d, KID_ck_attention_bwd_bias, elems, &a);
    }
}

void g_attention_masked_fwd(acc_dev *d, float *out, float *lse, const float *q, const float *k, const float *v,
                            const void *mask, int mask_i32, const int64_t *ms, const float *bias, const int64_t *bs,
                            int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    attention_masked_fwd(d, 0, out, lse, q, k, v, mask, mask_i32, ms, bias, bs, B, T, S, H, KVH, D, causal);
}

void g_attention_masked_bwd(acc_dev *d, float *dq, float *dk, float *dv, float *dbias, const float *dout,
                            const float *q, const float *k, const float *v, const float *out, const float *lse,
                            const void *mask, int mask_i32, const int64_t *ms, const float *bias, const int64_t *bs,
                            int64_t B, int64_t T, int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    attention_masked_bwd(d, 0, dq, dk, dv, dbias, dout, q, k, v, out, lse, mask, mask_i32, ms, bias, bs, B, T, S, H,
                         KVH, D, causal);
}

void g_attention_masked_fwd_bf16(acc_dev *d, acc_bf16 *out, float *lse, const acc_bf16 *q, const acc_bf16 *k,
                                 const acc_bf16 *v, const void *mask, int mask_i32, const int64_t *ms,
                                 const float *bias, const int64_t *bs, int64_t B, int64_t T, int64_t S, int64_t H,
                                 int64_t KVH, int64_t D, int causal) {
    attention_masked_fwd(d, 1, out, lse, q, k, v, mask, mask_i32, ms, bias, bs, B, T, S, H, KVH, D, causal);
}

void g_attention_masked_bwd_bf16(acc_dev *d, acc_bf16 *dq, acc_bf16 *dk, acc_bf16 *dv, float *dbias,
                                 const acc_bf16 *dout, const acc_bf16 *q, const acc_bf16 *k, const acc_bf16 *v,
                                 const acc_bf16 *out, const float *lse, const void *mask, int mask_i32,
                                 const int64_t *ms, const float *bias, const int64_t *bs, int64_t B, int64_t T,
                                 int64_t S, int64_t H, int64_t KVH, int64_t D, int causal) {
    attention_masked_bwd(d, 1, dq, dk, dv, dbias, dout, q, k, v, out, lse, mask, mask_i32, ms, bias, bs, B, T, S, H,
                         KVH, D, causal);
}

/* ---- rope, embedding, loss, dropout ---------------------------------------------------- */

static void rope(acc_dev *d, void *y, const void *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta,
                 int backward, int h) {
    acc_kargs a = {{DP(y), DP(x)}, {B, T, H, D, backward, h}, {theta}};
    dev_launch(d, KID_ck_rope, B * T * H * (D / 2), KA_BLOCK, &a);
}

void g_rope_fwd(acc_dev *d, float *out, const float *x, int64_t B, int64_t T, int64_t H, int64_t D, float theta) {
    rope(d, out, x, B, T, H, D, theta, 0, 0);
}
void g_rope_bwd(acc_dev *d, float *dx, const float *dout, int64_t B, int64_t T, int64_t H, int64_t D, float theta) {
    rope(d, dx, dout, B, T, H, D, theta, 1, 0);
}
void g_rope_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t B, int64_t T, int64_t H, int64_t D,
                     float theta) {
    rope(d, out, x, B, T, H, D, theta, 0, 1);
}
void g_rope_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t B, int64_t T, int64_t H, int64_t D,
                     float theta) {
    rope(d, dx, dout, B, T, H, D, theta, 1, 1);
}

/* h: out (forward) or dout (backward) is bf16; the table and its gradient are float */
static void embedding_fwd(acc_dev *d, void *out, const int32_t *idx, const float *table, int64_t N, int64_t V,
                          int64_t C, int h) {
    acc_kargs a = {{DP(out), DP(idx), DP(table)}, {N, V, C, h}, {0}};
    dev_launch(d, KID_ck_embedding_fwd, N * C, KA_BLOCK, &a);
}

/* ck_embedding_sort then ck_embedding_bwd, over segments of tokens whose
 * sort fits the scratch region (4 ints a token); segments in order keep the
 * sums of every row in token order. */
static void embedding_bwd(acc_dev *d, float *dtable, const void *dout, const int32_t *idx, int64_t N, int64_t V,
                          int64_t C, int h) {
    if (!dtable) return;
    int64_t seg = d->scratch_bytes / 16, bits = 1;
    if (seg > INT32_MAX / 4) seg = INT32_MAX / 4;
    while (bits < 31 && ((int64_t)1 << bits) <= V) bits++;
    if (seg < 1) {
        dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "the embedding gradient needs a workspace");
        return;
    }
    size_t esize = h ? sizeof(acc_bf16) : sizeof(float);
    for (int64_t n0 = 0; n0 < N; n0 += seg) {
        int64_t n = N - n0 < seg ? N - n0 : seg;
        acc_kargs s = {{(float *)d->scratch, DP(idx + n0)}, {n, V, bits}, {0}};
        dev_launch(d, KID_ck_embedding_sort, KA_BLOCK, KA_BLOCK, &s); /* one block */
        const unsigned char *seg_dout = (const unsigned char *)dout + (size_t)(n0 * C) * esize;
        acc_kargs a = {{dtable, DP(seg_dout), (float *)d->scratch}, {n, V, C, h}, {0}};
        dev_launch(d, KID_ck_embedding_bwd, n * 32, KA_BLOCK, &a);
    }
}

int g_embedding_fwd(acc_dev *d, float *out, const int32_t *idx, const float *table, int64_t N, int64_t V, int64_t C) {
    embedding_fwd(d, out, idx, table, N, V, C, 0);
    return 0;
}
int g_embedding_bwd(acc_dev *d, float *dtable, const float *dout, const int32_t *idx, int64_t N, int64_t V, int64_t C) {
    embedding_bwd(d, dtable, dout, idx, N, V, C, 0);
    return 0;
}
int g_embedding_fwd_bf16(acc_dev *d, acc_bf16 *out, const int32_t *idx, const float *table, int64_t N, int64_t V,
                         int64_t C) {
    embedding_fwd(d, out, idx, table, N, V, C, 1);
    return 0;
}
int g_embedding_bwd_bf16(acc_dev *d, float *dtable, const acc_bf16 *dout, const int32_t *idx, int64_t N, int64_t V,
                         int64_t C) {
    embedding_bwd(d, dtable, dout, idx, N, V, C, 1);
    return 0;
}

/* h: logits and dlogits are bf16; the loss, dloss and lse are float */
static void cross_entropy_fwd(acc_dev *d, float *loss, float *lse, const void *logits, const int32_t *targets,
                              int64_t N, int64_t V, int h) {
    acc_kargs a = {{lse, DP(logits)}, {N, V, h}, {0}};
    launch_rows(d, KID_ck_xent_lse, N, V, &a);
    acc_kargs b = {{loss, lse, DP(logits), DP(targets)}, {N, V, h}, {0}};
    dev_launch(d, KID_ck_xent_loss, KA_BLOCK, KA_BLOCK, &b); /* one block */
}

static void cross_entropy_bwd(acc_dev *d, void *dlogits, const float *dloss, const void *logits, const float *lse,
                              const int32_t *targets, int64_t N, int64_t V, int h) {
    if (!dlogits) return;
    acc_kargs a = {{DP(dlogits), DP(dloss), DP(logits), DP(lse), DP(targets)}, {N, V, h}, {0}};
    launch_rows(d, KID_ck_xent_bwd, N, V, &a);
}

int g_cross_entropy_fwd(acc_dev *d, float *loss, float *lse, const float *logits, const int32_t *targets, int64_t N,
                        int64_t V) {
    cross_entropy_fwd(d, loss, lse, logits, targets, N, V, 0);
    return 0;
}
int g_cross_entropy_bwd(acc_dev *d, float *dlogits, const float *dloss, const float *logits, const float *lse,
                        const int32_t *targets, int64_t N, int64_t V) {
    cross_entropy_bwd(d, dlogits, dloss, logits, lse, targets, N, V, 0);
    return 0;
}
int g_cross_entropy_fwd_bf16(acc_dev *d, float *loss, float *lse, const acc_bf16 *logits, const int32_t *targets,
                             int64_t N, int64_t V) {
    cross_entropy_fwd(d, loss, lse, logits, targets, N, V, 1);
    return 0;
}
int g_cross_entropy_bwd_bf16(acc_dev *d, acc_bf16 *dlogits, const float *dloss, const acc_bf16 *logits,
                             const float *lse, const int32_t *targets, int64_t N, int64_t V) {
    cross_entropy_bwd(d, dlogits, dloss, logits, lse, targets, N, V, 1);
    return 0;
}

static void dropout(acc_dev *d, void *y, const void *x, int64_t n, float p, uint32_t op_id, int accumulate, int h) {
    acc_kargs a = {{DP(y), DP(x)}, {n, 0, 0, op_id, accumulate, h}, {p}};
    a.p[KA_SCALARS_P] = scalars(d); /* seed and step: read there (see acc_kscalars) */
    dev_launch(d, KID_ck_dropout, n, KA_BLOCK, &a);
}

void g_dropout_fwd(acc_dev *d, float *out, const float *x, int64_t n, float p, uint64_t seed, uint32_t step,
                   uint32_t op_id) {
    (void)seed, (void)step;
    dropout(d, out, x, n, p, op_id, 0, 0);
}
void g_dropout_bwd(acc_dev *d, float *dx, const float *dout, int64_t n, float p, uint64_t seed, uint32_t step,
                   uint32_t op_id) {
    (void)seed, (void)step;
    dropout(d, dx, dout, n, p, op_id, 1, 0);
}
void g_dropout_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t n, float p, uint64_t seed, uint32_t step,
                        uint32_t op_id) {
    (void)seed, (void)step;
    dropout(d, out, x, n, p, op_id, 0, 1);
}
void g_dropout_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t n, float p, uint64_t seed,
                        uint32_t step, uint32_t op_id) {
    (void)seed, (void)step;
    dropout(d, dx, dout, n, p, op_id, 1, 1);
}

/* ---- data movement --------------------------------------------------------------- */

/* h: the tensors are bf16 (2-byte elements: a copy moves them as they are,
 * an accumulation rounds once) */
void g_reshape_fwd(acc_dev *d, float *out, const float *x, int64_t n) { copy_flat(d, out, x, n, 0); }
void g_reshape_bwd(acc_dev *d, float *dx, const float *dout, int64_t n) { copy_flat(d, dx, dout, n, 1); }
void g_reshape_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t n) { copy_flat_x(d, out, x, n, 0, 1); }
void g_reshape_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int64_t n) {
    copy_flat_x(d, dx, dout, n, 1, 1);
}

/* transpose: iterate over out (x's dims with d0, d1 swapped); out is
 * contiguous, x read with its strides permuted the same way. */
static void transpose(acc_dev *d, void *out, const void *x, int nd, const int64_t *sx, int d0, int d1, int bwd, int h) {
    int64_t dims[6] = {0}, st[6] = {0}, xs[6] = {0}, os[6] = {0};
    contiguous_strides(nd, sx, xs);
    for (int k = 0; k < nd; k++) dims[k] = sx[k], st[k] = xs[k];
    dims[d0] = sx[d1], dims[d1] = sx[d0], st[d0] = xs[d1], st[d1] = xs[d0];
    contiguous_strides(nd, dims, os);
    if (!bwd) strided_x(d, out, x, 0, nd, dims, os, 0, st, 0, h);
    else /* dx (shape sx) += swap(dout), dout has the swapped dims */
        strided_x(d, out, x, 1, nd, dims, st, 0, os, 0, h);
}

void g_transpose_fwd(acc_dev *d, float *out, const float *x, int ndim, const int64_t *x_shape, int dim0, int dim1) {
    transpose(d, out, x, ndim, x_shape, dim0, dim1, 0, 0);
}
void g_transpose_bwd(acc_dev *d, float *dx, const float *dout, int ndim, const int64_t *x_shape, int dim0, int dim1) {
    transpose(d, dx, dout, ndim, x_shape, dim0, dim1, 1, 0);
}
void g_transpose_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int ndim, const int64_t *x_shape, int dim0,
                          int dim1) {
    transpose(d, out, x, ndim, x_shape, dim0, dim1, 0, 1);
}
void g_transpose_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int ndim, const int64_t *x_shape, int dim0,
                          int dim1) {
    transpose(d, dx, dout, ndim, x_shape, dim0, dim1, 1, 1);
}

/* slice: iterate over the slice's dims (x's with len on axis). into = 0:
 * y (contiguous) (+)= x[slice]; into = 1: y[slice] (+)= x (contiguous). */
static void slice(acc_dev *d, void *y, const void *x, int nd, const int64_t *sx, int axis, int64_t start, int64_t len,
                  int into, int accumulate, int h) {
    int64_t dims[6] = {0}, xs[6] = {0}, os[6] = {0};
    contiguous_strides(nd, sx, xs);
    for (int k = 0; k < nd; k++) dims[k] = sx[k];
    dims[axis] = len;
    contiguous_strides(nd, dims, os);
    if (!into) strided_x(d, y, x, accumulate, nd, dims, os, 0, xs, start * xs[axis], h);
    else strided_x(d, y, x, accumulate, nd, dims, xs, start * xs[axis], os, 0, h);
}

void g_slice_fwd(acc_dev *d, float *out, const float *x, int ndim, const int64_t *x_shape, int axis, int64_t start,
                 int64_t len) {
    slice(d, out, x, ndim, x_shape, axis, start, len, 0, 0, 0);
}
void g_slice_bwd(acc_dev *d, float *dx, const float *dout, int ndim, const int64_t *x_shape, int axis, int64_t start,
                 int64_t len) {
    slice(d, dx, dout, ndim, x_shape, axis, start, len, 1, 1, 0);
}
void g_slice_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int ndim, const int64_t *x_shape, int axis,
                      int64_t start, int64_t len) {
    slice(d, out, x, ndim, x_shape, axis, start, len, 0, 0, 1);
}
void g_slice_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, int ndim, const int64_t *x_shape, int axis,
                      int64_t start, int64_t len) {
    slice(d, dx, dout, ndim, x_shape, axis, start, len, 1, 1, 1);
}

/* concat: input i is the slice [off_i, off_i + sizes[i]) of out along axis */
void g_concat_fwd(acc_dev *d, float *out, const float *const *xs, int n, int ndim, const int64_t *out_shape, int axis,
                  const int64_t *sizes) {
    int64_t off = 0;
    for (int i = 0; i < n; off += sizes[i], i++) slice(d, out, xs[i], ndim, out_shape, axis, off, sizes[i], 1, 0, 0);
}

void g_concat_bwd(acc_dev *d, float *const *dxs, const float *dout, int n, int ndim, const int64_t *out_shape, int axis,
                  const int64_t *sizes) {
    int64_t off = 0;
    for (int i = 0; i < n; off += sizes[i], i++)
        if (dxs[i]) slice(d, dxs[i], dout, ndim, out_shape, axis, off, sizes[i], 0, 1, 0);
}

void g_concat_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *const *xs, int n, int ndim, const int64_t *out_shape,
                       int axis, const int64_t *sizes) {
    int64_t off = 0;
    for (int i = 0; i < n; off += sizes[i], i++) slice(d, out, xs[i], ndim, out_shape, axis, off, sizes[i], 1, 0, 1);
}

void g_concat_bwd_bf16(acc_dev *d, acc_bf16 *const *dxs, const acc_bf16 *dout, int n, int ndim,
                       const int64_t *out_shape, int axis, const int64_t *sizes) {
    int64_t off = 0;
    for (int i = 0; i < n; off += sizes[i], i++)
        if (dxs[i]) slice(d, dxs[i], dout, ndim, out_shape, axis, off, sizes[i], 0, 1, 1);
}

/* ---- reductions ---------------------------------------------------------------- */

/* Over the last axis (inner 1) a block per row; over another axis the
 * column reduction, which reads the rows contiguously. h: x (forward) or dx
 * (backward) is bf16; out and dout are float in both instances. */
static void reduce_fwd(acc_dev *d, float *out, const void *x, int64_t outer, int64_t n, int64_t inner, float scale,
                       int h) {
    if (inner > 1) {
        acc_kargs a = {{0, 0, 0, DP(x)}, {0, 0, 0, 0, 0, COL_SUM}, {0}};
        a.i[27] = h;
        col_reduce(d, &a, outer, n, inner, 1, out, NULL, COL_SET, scale);
        return;
    }
    acc_kargs a = {{out, DP(x)}, {outer, n, inner, h}, {scale}};
    launch_rows(d, KID_ck_reduce_fwd, outer * inner, n, &a);
}

static void reduce_bwd(acc_dev *d, void *dx, const float *dout, int64_t outer, int64_t n, int64_t inner, float scale,
                       int h) {
    acc_kargs a = {{DP(dx), DP(dout)}, {outer, n, inner, h}, {scale}};
    dev_launch(d, KID_ck_reduce_bwd, outer * n * inner, KA_BLOCK, &a);
}

/* max (sign 1) and min (-1): one thread per column (ck_argreduce) */
static void argreduce(acc_dev *d, void *y, const void *x, const void *dout, int64_t outer, int64_t n, int64_t inner,
                      int sign, int h) {
    acc_kargs a = {{DP(y), DP(x), DP(dout)}, {outer * inner, n, inner, sign, dout != NULL, h}, {0}};
    dev_launch(d, KID_ck_argreduce, outer * inner, KA_BLOCK, &a);
}
#define ARGREDUCE(name, sign)                                                                                         \
    void g_##name##_fwd(acc_dev *d, float *out, const float *x, int64_t outer, int64_t n, int64_t inner) {            \
        argreduce(d, out, x, NULL, outer, n, inner, sign, 0);                                                         \
    }                                                                                                                 \
    void g_##name##_bwd(acc_dev *d, float *dx, const float *dout, const float *x, int64_t outer, int64_t n,           \
                        int64_t inner) {                                                                              \
        argreduce(d, dx, x, dout, outer, n, inner, sign, 0);                                                          \
    }                                                                                                                 \
    void g_##name##_fwd_bf16(acc_dev *d, acc_bf16 *out, const acc_bf16 *x, int64_t outer, int64_t n, int64_t inner) { \
        argreduce(d, out, x, NULL, outer, n, inner, sign, 1);                                                         \
    }                                                                                                                 \
    void g_##name##_bwd_bf16(acc_dev *d, acc_bf16 *dx, const acc_bf16 *dout, const acc_bf16 *x, int64_t outer,        \
                             int64_t n, int64_t inner) {                                                              \
        argreduce(d, dx, x, dout, outer, n, inner, sign, 1);                                                          \
    }
ARGREDUCE(max, 1)
ARGREDUCE(min, -1)
#undef ARGREDUCE

void g_sum_fwd(acc_dev *d, float *out, const float *x, int64_t outer, int64_t n, int64_t inner) {
    reduce_fwd(d, out, x, outer, n, inner, 1.0f, 0);
}
void g_sum_bwd(acc_dev *d, float *dx, const float *dout, int64_t outer, int64_t n, int64_t inner) {
    reduce_bwd(d, dx, dout, outer, n, inner, 1.0f, 0);
}
void g_mean_fwd(acc_dev *d, float *out, const float *x, int64_t outer, int64_t n, int64_t inner) {
    reduce_fwd(d, out, x, outer, n, inner, 1.0f / (float)n, 0);
}
void g_mean_bwd(acc_dev *d, float *dx, const float *dout, int64_t outer, int64_t n, int64_t inner) {
    reduce_bwd(d, dx, dout, outer, n, inner, 1.0f / (float)n, 0);
}
void g_sum_fwd_bf16(acc_dev *d, float *out, const acc_bf16 *x, int64_t outer, int64_t n, int64_t inner) {
    reduce_fwd(d, out, x, outer, n, inner, 1.0f, 1);
}
void g_sum_bwd_bf16(acc_dev *d, acc_bf16 *dx, const float *dout, int64_t outer, int64_t n, int64_t inner) {
    reduce_bwd(d, dx, dout, outer, n, inner, 1.0f, 1);
}
void g_mean_fwd_bf16(acc_dev *d, float *out, const acc_bf16 *x, int64_t outer, int64_t n, int64_t inner) {
    reduce_fwd(d, out, x, outer, n, inner, 1.0f / (float)n, 1);
}
void g_mean_bwd_bf16(acc_dev *d, acc_bf16 *dx, const float *dout, int64_t outer, int64_t n, int64_t inner) {
    reduce_bwd(d, dx, dout, outer, n, inner, 1.0f / (float)n, 1);
}

/* ---- optimizer --------------------------------------------------------------------- */

int dev_adamw(acc_dev *d, float *p, const float *g, void *m, void *v, int64_t n, int state_dtype) {
    acc_kargs a = {{p, DP(g), m, v}, {n, state_dtype == ACC_DT_BF16}, {0}};
    a.p[KA_SCALARS_P] = scalars(d); /* the hyperparameters */
    dev_launch(d, KID_ck_adamw, n, KA_BLOCK, &a);
    return d->status;
}

/* ---- gradient clipping -------------------------------------------------------------- */

/* Blocks of a sum of squares at most: their partial sums (doubles) follow
 * the total in the scratch region. */
#define SUMSQ_BLOCKS 1024

/* The running total of dev_sum_squares: the first double of the scratch. */
const unsigned char *dev_sum_squares_total(const acc_dev *d) { return d->scratch; }

int dev_sum_squares(acc_dev *d, const float *x, int64_t n, int first) {
    if (d->status) return d->status;
    if (!d->scratch || d->scratch_bytes < (SUMSQ_BLOCKS + 1) * (long long)sizeof(double))
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "no scratch for a sum of squares");
    double *total = (double *)(void *)d->scratch, *part = total + 1;
    long long grid = (n + KA_BLOCK - 1) / KA_BLOCK;
    grid = grid < 1 ? 1 : grid > SUMSQ_BLOCKS ? SUMSQ_BLOCKS : grid;
    acc_kargs a = {{DP(x), DP(part)}, {n}, {0}};
    if (d->ops->launch(d, KID_ck_sum_squares, (unsigned)grid, KA_BLOCK, &a)) return d->status;
    acc_kargs b = {{DP(part), DP(total)}, {grid, first}, {0}};
    d->ops->launch(d, KID_ck_sum_squares_final, 1, KA_BLOCK, &b);
    return d->status;
}

int dev_scale(acc_dev *d, float *x, int64_t n, float factor) {
    g_scale_fwd(d, x, x, factor, n); /* elementwise: in place is safe */
    return d->status;
}

/* ZeRO-2's reduced piece into the gradient shard: a copy is a scale by 1
 * (exact), an addition the add op's kernel in place. */
int dev_accumulate(acc_dev *d, float *dst, const float *src, int64_t n, int add) {
    if (add) g_add_fwd(d, dst, dst, src, 1, &n, &n, &n);
    else g_scale_fwd(d, dst, src, 1.0f, n);
    return d->status;
}
