/* bf16.h - the bfloat16 storage type of libaccrt and its two conversions.
 *
 * A bf16 value is the high half of a float32 (sign, 8 exponent bits, 7
 * mantissa bits). Widening is exact; narrowing rounds to nearest, ties to
 * even, as the GPU's cvt.rn.bf16.f32 does: overflow gives infinity, a NaN
 * stays a NaN of the same sign (quietened). Kernels compute in float and
 * round on every store, so a bf16 tensor's bits do not depend on the target
 * or on the number of threads. Shared by the CPU kernels, the emulator and
 * what acc generates; no compiler header.
 */
#ifndef ACC_BF16_H
#define ACC_BF16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t acc_bf16;

static inline float acc_bf16_f32(acc_bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline acc_bf16 acc_f32_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (acc_bf16)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (acc_bf16)(u >> 16);
}

#endif
