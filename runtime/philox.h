/* philox.h - Philox4x32-10 counter-based random numbers (Salmon et al., SC'11).
 *
 * Invariant: every random number is a pure function of its keys
 * (seed, step, op_id, index): no state, no globals, only 32-bit integer
 * arithmetic, so a recomputed forward (or a backward that rebuilds a dropout
 * mask) reproduces the same bits on every platform and thread count.
 *
 * Layout: the key is the 64-bit seed; the counter is
 * (index / 4 low, index / 4 high, op_id, step); one block gives the four
 * numbers of indices 4k .. 4k+3.
 */
#ifndef ACC_PHILOX_H
#define ACC_PHILOX_H

/* Also compiled by NVRTC into the CUDA kernels (runtime/cuda/kernels.cu),
 * which supply uint32_t and uint64_t themselves. */
#ifdef __CUDACC__
#define PHILOX_FN static inline __host__ __device__
#else
#include <stdint.h>
#define PHILOX_FN static inline
#endif

typedef struct {
    uint32_t v[4];
} philox4x32;

/* hi and lo 32-bit halves of the 64-bit product a * b */
PHILOX_FN uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi) {
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

/* The Philox4x32 bijection with 10 rounds of counter ctr under key (k0, k1). */
PHILOX_FN philox4x32 philox4x32_10(philox4x32 ctr, uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint32_t hi0, hi1;
        uint32_t lo0 = philox_mulhilo(0xD2511F53u, ctr.v[0], &hi0);
        uint32_t lo1 = philox_mulhilo(0xCD9E8D57u, ctr.v[2], &hi1);
        philox4x32 next = {{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
        ctr = next;
    }
    return ctr;
}

/* The block holding the four random words of indices 4*block .. 4*block+3. */
PHILOX_FN philox4x32 philox_block(uint64_t seed, uint32_t step, uint32_t op_id, uint64_t block) {
    philox4x32 ctr = {{(uint32_t)block, (uint32_t)(block >> 32), op_id, step}};
    return philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* A 32-bit word to a float in [0, 1): its top 24 bits times 2^-24 (exact). */
PHILOX_FN float philox_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

/* The uniform float in [0, 1) for keys (seed, step, op_id, index). */
PHILOX_FN float philox_uniform(uint64_t seed, uint32_t step, uint32_t op_id, uint64_t index) {
    philox4x32 r = philox_block(seed, step, op_id, index >> 2);
    return philox_to_unit(r.v[index & 3]);
}

#endif
