/* cpu_kernels_nn_bf16.c - the bf16 instance of cpu_kernels_nn.c (ktype.h). */
#define ACC_KT_BF16 1
#include "cpu_kernels_nn.c"
