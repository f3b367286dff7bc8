/* target.c - the targets acc compiles for, as data.
 *
 * One row per target: its name, the runtime's device layer the host schedule
 * runs on, the archives and libraries a program links, the workspace the
 * device library needs (every plan for the target reserves it inside the
 * budget), the default hardware profile, calibrate's mode and whether it
 * has bf16 kernels. The driver
 * looks a target up once (cg_target_find) and every later phase reads the
 * row; no phase compares target names.
 */
#include <string.h>

#include "codegen.h"

/* Where the device layers' archives are built (ACC_RUNTIME_EMU_LIB /
 * ACC_RUNTIME_CUDA_LIB override): the emulator always, the GPU's with the
 * CUDA Toolkit ("" without). */
#ifndef ACC_RUNTIME_EMU_LIB_DEFAULT
#define ACC_RUNTIME_EMU_LIB_DEFAULT "libaccrt_emu.a"
#endif
#ifndef ACC_RUNTIME_CUDA_LIB_DEFAULT
#define ACC_RUNTIME_CUDA_LIB_DEFAULT ""
#endif

/* The cuBLAS workspace (the size cuBLAS recommends on Hopper). */
#define CUBLAS_WORKSPACE_BYTES ((int64_t)32 << 20)

static const CgTarget targets[] = {
    {.name = "cpu",
     .kernels_header = "cpu_kernels.h",
     .archives = "libaccrt.a",
     .libs = "-lopenblas -fopenmp -lm",
     .hw = "cpu",
     .calibrate = "cpu-local",
     .bf16 = true},
    {.name = "cuda",
     .device = "cuda",
     .kernels_header = "cuda_schedule.h",
     .device_archive = "libaccrt_cuda.a",
     .device_lib_env = "ACC_RUNTIME_CUDA_LIB",
     .device_lib_default = ACC_RUNTIME_CUDA_LIB_DEFAULT,
     .archives = "libaccrt_cuda.a libaccrt.a",
     .libs = "-lopenblas -fopenmp -ldl -lm",
     .nvrtc = true,
     .workspace_bytes = CUBLAS_WORKSPACE_BYTES,
     .hw = "h100-sxm",
     .calibrate = "gpu-local",
     .bf16 = true},
    {.name = "cuda-emu",
     .device = "cuda_emu",
     .kernels_header = "cuda_schedule.h",
     .device_archive = "libaccrt_emu.a",
     .device_lib_env = "ACC_RUNTIME_EMU_LIB",
     .device_lib_default = ACC_RUNTIME_EMU_LIB_DEFAULT,
     .archives = "libaccrt_emu.a libaccrt.a",
     .libs = "-lopenblas -fopenmp -lm",
     .emulated = true,
     .workspace_bytes = CUBLAS_WORKSPACE_BYTES,
     .hw = "h100-sxm",
     .calibrate = "emu-local",
     .bf16 = true},
};

const CgTarget *cg_target_find(const char *name) {
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++)
        if (!strcmp(targets[i].name, name)) return &targets[i];
    return NULL;
}

const CgTarget *cg_target_default(bool run) {
#ifdef ACC_HAVE_NVRTC
    if (!run) return &targets[1];
#endif
    (void)run;
    return &targets[0];
}

const char *cg_target_names(void) { return "cpu, cuda, cuda-emu"; }
