/* emu.h - what the host compiler needs to compile kernels.cu for the device
 * emulator: the CUDA built-in variables, barriers (block and warp), warp
 * shuffles and shared memory, mapped onto emu.c's cooperative thread
 * scheduler.
 *
 * Invariant: blocks run one at a time per OS thread, and the threads of a
 * block are coroutines on that OS thread, so `__shared__` (a thread-local
 * static) is shared by exactly the threads of the running block.
 */
#ifndef ACC_CUDA_EMU_H
#define ACC_CUDA_EMU_H

#include <math.h>
#include <stdint.h>

#include "bf16.h"

typedef struct {
    unsigned x, y, z;
} emu_dim3;

/* The running thread's coordinates (valid inside a kernel only). */
const emu_dim3 *emu_thread_idx(void);
const emu_dim3 *emu_block_idx(void);
const emu_dim3 *emu_block_dim(void);
const emu_dim3 *emu_grid_dim(void);
void emu_syncthreads(void);
void emu_syncwarp(void);
float emu_shfl_xor(unsigned mask, float v, int lane_mask);
float emu_shfl(unsigned mask, float v, int src_lane);
/* ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16 (n 1, 2 or 4): this
 * lane's row address in, its n registers out (see emu.c). */
void emu_ldmatrix(uint32_t *r, int n, int trans, const unsigned short *row);
/* cp.async: copy `bytes` of `size` from src to shared dst, zero-fill the
 * rest; lands by the thread's next emu_cp_async_wait (see emu.c). */
void emu_cp_async(void *dst, const void *src, int size, int bytes);
void emu_cp_async_wait(void);

#define threadIdx (*emu_thread_idx())
#define blockIdx (*emu_block_idx())
#define blockDim (*emu_block_dim())
#define gridDim (*emu_grid_dim())
#define __syncthreads() emu_syncthreads()
#define __syncwarp() emu_syncwarp()
#define __shfl_xor_sync(mask, v, lane_mask) emu_shfl_xor((mask), (v), (lane_mask))
#define __shfl_sync(mask, v, src_lane) emu_shfl((mask), (v), (src_lane))
#define __shared__ static _Thread_local

#endif
