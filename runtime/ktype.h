/* ktype.h - the element type of a kernel instance.
 *
 * Every CPU kernel that reads or writes activations (or their gradients) is
 * written once, over the element type KT, and compiled twice: as float (the
 * plain names, k_gelu_fwd) and, with ACC_KT_BF16 defined, as bf16 (the names
 * with a _bf16 suffix, k_gelu_fwd_bf16; the cpu_kernels*_bf16.c files). Weights
 * of norms and the embedding table, statistics, the loss and reductions'
 * outputs stay float in both instances. Arithmetic is float in both:
 * KLD(p, i) widens element i, KST(p, i, v) rounds v to nearest even and
 * stores it; in the float instance both are plain accesses, so that
 * instance is the fp32 kernel bit for bit. KN(name) is the instance's name of
 * a function. Code that exists once (the optimizer, helpers on float
 * statistics) is guarded by #ifndef ACC_KT_BF16.
 */
#ifndef ACC_KTYPE_H
#define ACC_KTYPE_H

#include "bf16.h"

#ifdef ACC_KT_BF16
#define KT acc_bf16
#define KN(name) name##_bf16
#define KLD(p, i) acc_bf16_f32((p)[i])
#define KST(p, i, v) ((p)[i] = acc_f32_bf16(v))
#else
#define KT float
#define KN(name) name
#define KLD(p, i) ((p)[i])
#define KST(p, i, v) ((p)[i] = (v))
#endif

#endif
