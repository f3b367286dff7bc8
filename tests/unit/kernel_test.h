/* kernel_test.h - what the kernel tests share: the OpenMP team size and a
 * small deterministic RNG (xorshift64*). Include once per test program,
 * after test.h. A program that wants other data sets rng_state first.
 */
#ifndef ACC_KERNEL_TEST_H
#define ACC_KERNEL_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* The thread count of the OpenMP team (1 without OpenMP). */
static inline int threads_get(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static inline void threads_set(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;

static inline uint32_t rnd_u32(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Uniform on [lo, hi), 24 random bits. */
static inline float rnd_unif(float lo, float hi) {
    return lo + (hi - lo) * (float)(rnd_u32() >> 8) * (1.0f / 16777216.0f);
}

/* malloc that exits the test on failure (at least one byte). */
static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

#endif
