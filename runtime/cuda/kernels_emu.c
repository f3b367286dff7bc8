/* kernels_emu.c - kernels.cu compiled by the host C compiler for the device
 * emulator (emu.h supplies the CUDA built-ins). Nothing else belongs here. */
#include "kernels.cu"
