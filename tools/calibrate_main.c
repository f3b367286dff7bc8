/* calibrate_main.c - the program `acc calibrate --target cuda` (or
 * cuda-emu) links against a generated library: it measures the device
 * through the launch layer the generated step uses and prints a hardware
 * profile (the format of hw/<name>.hw) for the cost model. Compiled with
 * -DACC_MODEL_DESC=<model>_desc; the library is only the kernel images and
 * the device.
 *
 * matmul_flops: an n x n x n GEMM (n 4096; TF32 with --tf32, which is the
 * rate acc's GEMMs and tensor-core attention run at then);
 * matmul_flops_bf16: the same GEMM on bf16 operands (--precision bf16's
 * g_matmul_fwd_bf16: fp32 accumulation); vector_flops:
 * GELU over a tensor that stays in the L2 cache, at the cost rule's 16 FLOPs
 * an element; mem_bw: an elementwise add over tensors far larger than the
 * caches (two reads and a write an element); launch_latency: the time a
 * launch adds inside a replayed step (one-element kernels); host_bw and
 * host_latency: the device layer's copies of offloaded activations, from the
 * arena to pinned host memory, of a large tensor and of 16 floats. Each is
 * the median over replays of its launches captured as the step graph.
 *
 * Usage: calibrate NAME OUT [--tf32] [--small]: the profile named NAME to
 * the file OUT (- for standard output); --small: the emulator's sizes, a
 * check of the program, not of a GPU.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_ops.h"
#include "devbench.h"

const acc_model_desc *ACC_MODEL_DESC(void);

typedef struct {
    acc_dev *d;
    float *t[3];
    int64_t n;
    int reps;
    int kind; /* 0 gemm, 1 gelu, 2 add, 3 launch, 4 bf16 gemm, 5 copy to host */
    unsigned char *host;
} Job;

static int launches(void *arg) {
    const Job *j = arg;
    for (int r = 0; r < j->reps; r++) {
        int64_t shape[1] = {j->n};
        switch (j->kind) {
        case 0: g_matmul_fwd(j->d, j->t[2], j->t[0], j->t[1], 1, j->n, j->n, j->n, 0, 0, 0); break;
        case 1: g_gelu_fwd(j->d, j->t[1], j->t[0], j->n); break;
        case 2: g_add_fwd(j->d, j->t[2], j->t[0], j->t[1], 1, shape, shape, shape); break;
        case 4: /* the float fill read as bf16 pairs: some are NaN, which tensor cores run at full rate */
            g_matmul_fwd_bf16(j->d, (acc_bf16 *)j->t[2], (const acc_bf16 *)j->t[0], (const acc_bf16 *)j->t[1], 1, j->n,
                              j->n, j->n, 0, 0, 0);
            break;
        case 5: { /* on the copy stream, joined at once: the copy's time alone */
            const acc_device *dv = ACC_MODEL_DESC()->device;
            if (!dv->copy_issue(j->d, 0, j->host, j->t[0], (size_t)j->n * 4, 1)) dv->copy_wait(j->d, 0);
            break;
        }
        default: g_fill(j->d, j->t[0], 1.0f, 1); break;
        }
    }
    return j->d->status;
}

/* ms per launch of kind over tensors of n (n x n for the GEMM) floats */
static double measure(int kind, int64_t n, int reps, int tf32, const char **err) {
    const acc_model_desc *base = ACC_MODEL_DESC();
    const acc_device *dv = base->device;
    int64_t elems = kind == 0 || kind == 4 ? n * n : n, sizes[3] = {elems, elems, elems};
    Job j = {NULL, {NULL}, n, reps, kind, NULL};
    int rc = devbench_open(base, 3, sizes, tf32, &j.d, j.t);
    if (rc == ACC_OK && kind == 5) rc = dv->host_alloc(j.d, (size_t)n * 4, &j.host);
    for (int i = 0; rc == ACC_OK && i < 2; i++) rc = devbench_fill(dv, j.d, j.t[i], elems, 0, 7u + (unsigned)i);
    double ms = rc == ACC_OK ? devbench_time(dv, j.d, launches, &j, 9, reps) : -1;
    static char msg[600];
    if (ms < 0) {
        snprintf(msg, sizeof msg, "%s", j.d ? dv->error(j.d) : acc_status_string(rc));
        *err = msg;
    }
    if (j.host) dv->host_free(j.d, j.host);
    if (j.d) dv->close(j.d);
    return ms;
}

int main(int argc, char **argv) {
    int tf32 = 0, small = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--tf32")) tf32 = 1;
        else if (!strcmp(argv[i], "--small")) small = 1;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: calibrate NAME OUT [--tf32] [--small]\n");
        return 2;
    }
    int64_t gemm = small ? 64 : 4096, l2 = small ? 4096 : (int64_t)1 << 22, stream = small ? 1 << 16 : (int64_t)1 << 27;
    const char *err = NULL;
    double t_gemm = measure(0, gemm, small ? 1 : 10, tf32, &err);
    double t_gemm16 = err ? 0 : measure(4, gemm, small ? 1 : 10, tf32, &err);
    double t_gelu = err ? 0 : measure(1, l2, small ? 1 : 50, tf32, &err);
    double t_add = err ? 0 : measure(2, stream, small ? 1 : 10, tf32, &err);
    double t_launch = err ? 0 : measure(3, 1, small ? 4 : 200, tf32, &err);
    double t_copy = err ? 0 : measure(5, stream, small ? 1 : 10, tf32, &err);
    double t_copy_small = err ? 0 : measure(5, 16, small ? 4 : 200, tf32, &err);
    if (err) {
        fprintf(stderr, "acc: error: calibrate: %s\n", err);
        return 1;
    }
    FILE *out = strcmp(argv[2], "-") ? fopen(argv[2], "w") : stdout;
    if (!out) {
        fprintf(stderr, "acc: error: cannot write '%s'\n", argv[2]);
        return 1;
    }
    fprintf(out,
            "# measured by acc calibrate on %s%s: GEMM %lldx%lldx%lld, GELU over %lld floats, add over %lld "
            "floats, launches in a replayed CUDA graph\n",
            ACC_MODEL_DESC()->device->name, tf32 ? " (TF32)" : "", (long long)gemm, (long long)gemm, (long long)gemm,
            (long long)l2, (long long)stream);
    fprintf(out,
            "name = %s\nmatmul_flops = %.4g\nmatmul_flops_bf16 = %.4g\nvector_flops = %.4g\nmem_bw = %.4g\n"
            "launch_latency = %.4g\nhost_bw = %.4g\nhost_latency = %.4g\n",
            argv[1], 2.0 * (double)gemm * gemm * gemm / (t_gemm * 1e-3),
            2.0 * (double)gemm * gemm * gemm / (t_gemm16 * 1e-3), 16.0 * (double)l2 / (t_gelu * 1e-3),
            12.0 * (double)stream / (t_add * 1e-3), t_launch * 1e-3, 4.0 * (double)stream / (t_copy * 1e-3),
            t_copy_small > 0 ? t_copy_small * 1e-3 : 1e-9);
    if (out != stdout && fclose(out)) {
        fprintf(stderr, "acc: error: cannot write '%s'\n", argv[2]);
        return 1;
    }
    return 0;
}
