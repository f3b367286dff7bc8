/* devbench.h - measuring a device through its launch layer, for the
 * programs that do (acc calibrate's calibrate_main.c, bench/gpu/ops.c): open
 * the device of a generated library's descriptor (its kernel images) with an
 * arena of one's own followed by the planned-size workspace, fill tensors,
 * and time a function's launches as replays of the device's step graph (on a
 * GPU a CUDA graph: no launch overhead timed). Header-only; the programs
 * include it once.
 */
#ifndef ACC_CUDA_DEVBENCH_H
#define ACC_CUDA_DEVBENCH_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "device.h"

#define DEVBENCH_WS_BYTES ((int64_t)32 << 20)

static inline double devbench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static inline int devbench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Open base's device with n tensors of sizes[i] floats (256-byte aligned,
 * at t[i]) and the workspace after them; tf32 as --tf32. */
static inline int devbench_open(const acc_model_desc *base, int n, const int64_t *sizes, int tf32, acc_dev **d,
                                float **t) {
    acc_model_desc desc = *base;
    int64_t off = 0;
    unsigned char *arena = NULL;
    int64_t extra = 0;
    for (int i = 0; i < n; i++) off += (sizes[i] * 4 + 255) / 256 * 256;
    desc.workspace_offset = off;
    desc.workspace_bytes = DEVBENCH_WS_BYTES;
    desc.arena_bytes = off + DEVBENCH_WS_BYTES;
    desc.tf32 = tf32;
    desc.copy_ids = 1; /* a copy to host memory, for the offload rate */
    int rc = desc.device->open(&desc, d, &arena, &extra);
    for (int i = 0, at = 0; rc == ACC_OK && i < n; at += (int)((sizes[i] * 4 + 255) / 256 * 256), i++)
        t[i] = (float *)(void *)(arena + at);
    return rc;
}

/* Fill n floats at dst (device) with values in [-1, 1), or with token ids
 * below bound when bound > 0, 1 Mi at a time through the upload. */
static inline int devbench_fill(const acc_device *dv, acc_dev *d, float *dst, int64_t n, int bound, unsigned seed) {
    enum { CHUNK = 1 << 20 };
    static float buf[CHUNK];
    for (int64_t at = 0; at < n; at += CHUNK) {
        int64_t k = n - at < CHUNK ? n - at : CHUNK;
        for (int64_t i = 0; i < k; i++) {
            seed = seed * 1664525u + 1013904223u;
            if (bound > 0) ((int32_t *)(void *)buf)[i] = (int32_t)((seed >> 8) % (unsigned)bound);
            else buf[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        }
        int rc = dv->upload(d, (unsigned char *)(dst + at), buf, (size_t)k * 4);
        if (rc) return rc;
    }
    return ACC_OK;
}

/* The median milliseconds of iters runs of fn(arg) as the step graph (after
 * a direct run and the captured one), divided by per (the launches a run
 * makes); negative on a device error. */
static inline double devbench_time(const acc_device *dv, acc_dev *d, int (*fn)(void *), void *arg, int iters,
                                   double per) {
    acc_scalars s = {.seed = 1, .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .bc1 = 0.1f, .bc2 = 0.001f};
    double ms[ACC_PHASE_COUNT], *t = calloc((size_t)iters, sizeof *t), med = -1;
    int rc = t ? ACC_OK : ACC_ERR_NOMEM;
    for (int i = 0; rc == ACC_OK && i < 2 + iters; i++) {
        double t0 = devbench_now_ms();
        if (!(rc = dv->run(d, ACC_GRAPH_STEP, fn, arg, &s))) rc = dv->finish(d, ms);
        if (i >= 2) t[i - 2] = (devbench_now_ms() - t0) / per;
    }
    if (rc == ACC_OK) {
        qsort(t, (size_t)iters, sizeof *t, devbench_cmp);
        med = t[iters / 2];
    }
    free(t);
    return med;
}

#endif
