/* cpu_kernels_shape_bf16.c - the bf16 instance of cpu_kernels_shape.c (ktype.h). */
#define ACC_KT_BF16 1
#include "cpu_kernels_shape.c"
