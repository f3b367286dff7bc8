/* cpu_bgemm.c - the bf16 GEMM block on AVX512-BF16 (vdpbf16ps): bf16
 * operands multiplied and summed into float accumulators in one instruction,
 * twice the multiply-adds per instruction of a float FMA, with no widened
 * copy of the operands.
 *
 * k_bgemm_block adds op(A) @ op(B) of one (mb, nb, kb) block into a float
 * tile. It packs the block's operands into bf16 pairs along k (one 32-bit
 * word holds op(A)[i][2p] and op(A)[i][2p+1], or op(B)[2p][j] and
 * op(B)[2p+1][j]; an odd kb's last word has a zero high half), rows of A in
 * groups of BN_MR and columns of B in groups of BN_NR, zero-padded, on the
 * stack; then a microkernel holds a BN_MR x BN_NR piece of the tile in 16
 * registers over the whole block: per pair of k, two loads of B, BN_MR
 * broadcasts of A, 16 vdpbf16ps. The padding lets every microkernel run
 * full width: the tile must have room for mb rounded up to BN_MR rows and nb
 * rounded up to BN_NR columns.
 *
 * Invariant: the block's sums run in a fixed order (k ascending within each
 * accumulator), so the bits depend on neither the thread count nor the
 * caller's tiling of other blocks. They differ from the widening path's
 * (cblas_sgemm over float panels: another summation order) and the
 * instruction flushes denormal inputs and results to zero (bf16 values below
 * 2^-126 are outside the activations' range); both paths are checked against
 * the fp32 GEMM within a bound (test_bf16_nn).
 */
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "kernels_internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(ACC_NO_BF16_ISA)
#include <immintrin.h>

#define BN_MR 8
#define BN_NR 32
#define BN_ISA __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* ACC_BF16_GEMM=sgemm selects the widening path on any CPU (tests run
 * both paths). */
int k_bgemm_native(void) {
    const char *e = getenv("ACC_BF16_GEMM");
    return __builtin_cpu_supports("avx512bf16") && !(e && !strcmp(e, "sgemm"));
}

static inline uint32_t pair(acc_bf16 lo, acc_bf16 hi) { return (uint32_t)lo | (uint32_t)hi << 16; }

/* pa[(g * kp + p) * BN_MR + r] = op(A)[8g + r][2p .. 2p+1], zero past mb or
 * kb. Each loop reads its source in order (rows of A, or pairs of rows of
 * A^T whose interleaving vectorizes). */
BN_ISA static void pack_a(uint32_t *restrict pa, const acc_bf16 *restrict A, int64_t lda, int ta, int64_t mb,
                          int64_t kb) {
    int64_t kp = (kb + 1) / 2, rows = (mb + BN_MR - 1) / BN_MR * BN_MR;
    if (!ta) {
        for (int64_t i = 0; i < rows; i++) {
            uint32_t *d = pa + i / BN_MR * kp * BN_MR + i % BN_MR;
            const acc_bf16 *row = A + i * lda;
            if (i >= mb) {
                for (int64_t p = 0; p < kp; p++) d[p * BN_MR] = 0;
                continue;
            }
            for (int64_t p = 0; p < kb / 2; p++) d[p * BN_MR] = pair(row[2 * p], row[2 * p + 1]);
            if (kb & 1) d[(kp - 1) * BN_MR] = pair(row[kb - 1], 0);
        }
        return;
    }
    for (int64_t p = 0; p < kp; p++) {
        const acc_bf16 *lo = A + 2 * p * lda, *hi = A + (2 * p + 1) * lda;
        int two = 2 * p + 1 < kb;
        for (int64_t g = 0; g < rows / BN_MR; g++) {
            uint32_t *d = pa + (g * kp + p) * BN_MR;
            if (two && (g + 1) * BN_MR <= mb) {
#pragma omp simd
                for (int r = 0; r < BN_MR; r++) d[r] = pair(lo[g * BN_MR + r], hi[g * BN_MR + r]);
            } else {
                for (int r = 0; r < BN_MR; r++) {
                    int64_t i = g * BN_MR + r;
                    d[r] = i < mb ? pair(lo[i], two ? hi[i] : 0) : 0;
                }
            }
        }
    }
}

/* pb[(h * kp + p) * BN_NR + c] = op(B)[2p .. 2p+1][32h + c], zero past nb or
 * kb; read in order as pack_a reads */
BN_ISA static void pack_b(uint32_t *restrict pb, const acc_bf16 *restrict B, int64_t ldb, int tb, int64_t nb,
                          int64_t kb) {
    int64_t kp = (kb + 1) / 2, cols = (nb + BN_NR - 1) / BN_NR * BN_NR;
    if (tb) {
        for (int64_t j = 0; j < cols; j++) {
            uint32_t *d = pb + j / BN_NR * kp * BN_NR + j % BN_NR;
            const acc_bf16 *col = B + j * ldb;
            if (j >= nb) {
                for (int64_t p = 0; p < kp; p++) d[p * BN_NR] = 0;
                continue;
            }
            for (int64_t p = 0; p < kb / 2; p++) d[p * BN_NR] = pair(col[2 * p], col[2 * p + 1]);
            if (kb & 1) d[(kp - 1) * BN_NR] = pair(col[kb - 1], 0);
        }
        return;
    }
    for (int64_t p = 0; p < kp; p++) {
        const acc_bf16 *lo = B + 2 * p * ldb, *hi = B + (2 * p + 1) * ldb;
        int two = 2 * p + 1 < kb;
        for (int64_t h = 0; h < cols / BN_NR; h++) {
            uint32_t *d = pb + (h * kp + p) * BN_NR;
            if (two && (h + 1) * BN_NR <= nb) {
#pragma omp simd
                for (int c = 0; c < BN_NR; c++) d[c] = pair(lo[h * BN_NR + c], hi[h * BN_NR + c]);
            } else {
                for (int c = 0; c < BN_NR; c++) {
                    int64_t j = h * BN_NR + c;
                    d[c] = j < nb ? pair(lo[j], two ? hi[j] : 0) : 0;
                }
            }
        }
    }
}

/* c[r * ldt + 0 .. 31] (+)= sum over p of pa's row r times pb, r < BN_MR */
BN_ISA static void micro(float *c, int64_t ldt, const uint32_t *pa, const uint32_t *pb, int64_t kp, int first) {
    __m512 acc[BN_MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < BN_MR; r++) {
        acc[r][0] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldt);
        acc[r][1] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldt + 16);
    }
    for (int64_t p = 0; p < kp; p++) {
        __m512i b0 = _mm512_loadu_si512(pb + p * BN_NR), b1 = _mm512_loadu_si512(pb + p * BN_NR + 16);
#pragma GCC unroll 8
        for (int r = 0; r < BN_MR; r++) {
            __m512i a = _mm512_set1_epi32((int)pa[p * BN_MR + r]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], (__m512bh)a, (__m512bh)b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], (__m512bh)a, (__m512bh)b1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < BN_MR; r++) {
        _mm512_storeu_ps(c + r * ldt, acc[r][0]);
        _mm512_storeu_ps(c + r * ldt + 16, acc[r][1]);
    }
}

void k_bgemm_block(float *tile, int64_t ldt, int ta, int tb, int64_t mb, int64_t nb, int64_t kb, const acc_bf16 *A,
                   int64_t lda, const acc_bf16 *B, int64_t ldb, int first) {
    uint32_t pa[K_BGEMM_MT * K_BGEMM_KB / 2], pb[K_BGEMM_KB / 2 * K_BGEMM_NT];
    int64_t kp = (kb + 1) / 2;
    pack_a(pa, A, lda, ta, mb, kb);
    pack_b(pb, B, ldb, tb, nb, kb);
    for (int64_t h = 0; h * BN_NR < nb; h++)
        for (int64_t g = 0; g * BN_MR < mb; g++)
            micro(tile + g * BN_MR * ldt + h * BN_NR, ldt, pa + g * kp * BN_MR, pb + h * kp * BN_NR, kp, first);
}

#else

int k_bgemm_native(void) { return 0; }

void k_bgemm_block(float *tile, int64_t ldt, int ta, int tb, int64_t mb, int64_t nb, int64_t kb, const acc_bf16 *A,
                   int64_t lda, const acc_bf16 *B, int64_t ldb, int first) {
    (void)tile, (void)ldt, (void)ta, (void)tb, (void)mb, (void)nb, (void)kb, (void)A, (void)lda, (void)B, (void)ldb,
        (void)first;
}

#endif
