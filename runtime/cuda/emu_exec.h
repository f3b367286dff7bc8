/* emu_exec.h - the device emulator's launch entry (emu.c), used by the
 * emulated device backend (dev_emu.c). */
#ifndef ACC_CUDA_EMU_EXEC_H
#define ACC_CUDA_EMU_EXEC_H

#include "abi.h"
#include "emu.h"

typedef void (*emu_kernel)(acc_kargs);

/* Run every block of a launch of fn; sync: the kernel synchronizes (abi.h).
 * Returns NULL, or what went wrong (a barrier not every thread reached, a
 * synchronizing call in a kernel declared plain, bad geometry). */
const char *emu_launch(emu_kernel fn, int sync, emu_dim3 grid, emu_dim3 block, const acc_kargs *args);

#endif
