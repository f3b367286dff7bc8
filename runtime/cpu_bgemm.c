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
 * the fp32 GEMM within a bound (test_bf16_ew, test_bf16_ew_sgemm).
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

/* One operand of a block as bf16 pairs along k, in groups of G lines (rows
 * of op(A), G = BN_MR; columns of op(B), G = BN_NR): d[(g * kp + p) * G + r]
 * = pair (k = 2p, 2p+1) of line G*g + r, zero past n lines or kb. Element
 * (line i, k) is X[i * ld + k], or X[k * ld + i] when kmajor (A^T, or B as
 * stored). Each loop reads X in order: a line's pairs, or two k-rows whose
 * interleaving vectorizes. Inlined with G constant. */
BN_ISA static inline void pack(uint32_t *restrict d, const acc_bf16 *restrict X, int64_t ld, int kmajor, int64_t n,
                               int64_t kb, int G) {
    int64_t kp = (kb + 1) / 2, lines = (n + G - 1) / G * G;
    if (!kmajor) {
        for (int64_t i = 0; i < lines; i++) {
            uint32_t *o = d + i / G * kp * G + i % G;
            const acc_bf16 *x = X + i * ld;
            if (i >= n) {
                for (int64_t p = 0; p < kp; p++) o[p * G] = 0;
                continue;
            }
            for (int64_t p = 0; p < kb / 2; p++) o[p * G] = pair(x[2 * p], x[2 * p + 1]);
            if (kb & 1) o[(kp - 1) * G] = pair(x[kb - 1], 0);
        }
        return;
    }
    for (int64_t p = 0; p < kp; p++) {
        const acc_bf16 *lo = X + 2 * p * ld, *hi = X + (2 * p + 1) * ld;
        int two = 2 * p + 1 < kb;
        for (int64_t g = 0; g < lines / G; g++) {
            uint32_t *o = d + (g * kp + p) * G;
            if (two && (g + 1) * G <= n) {
#pragma omp simd
                for (int r = 0; r < G; r++) o[r] = pair(lo[g * G + r], hi[g * G + r]);
            } else {
                for (int r = 0; r < G; r++) {
                    int64_t i = g * G + r;
                    o[r] = i < n ? pair(lo[i], two ? hi[i] : 0) : 0;
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
    pack(pa, A, lda, ta, mb, kb, BN_MR);
    pack(pb, B, ldb, !tb, nb, kb, BN_NR);
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
