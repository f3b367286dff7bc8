/* ops.c - the kernel benchmark's acc side: every kernel family of the CUDA
 * target on GPT-2 small and Llama (TinyLlama widths) shapes, through the
 * launch layer and kernels a generated library uses, one JSON line a case.
 *
 * bench/gpu/ops.sh builds it against a generated library (for the kernel
 * images: `<model>_desc()`) and the device layer (libaccrt_cuda on a GPU,
 * libaccrt_emu for a smoke test anywhere), and ops.py runs PyTorch on the
 * same shapes and prints both side by side. Each case opens a device with an
 * arena of its own (its tensors, filled with values in [-1, 1), then the
 * 32 MiB workspace), launches the op REPS times as one run of the device's
 * step graph (on the GPU: captured once as a CUDA graph, then replayed, so
 * launch overhead is not timed), and reports the median over ITERS runs of
 * the time per launch, with the bytes the op must move at least and its
 * FLOPs.
 *
 * Usage: ops [--small] [--tf32] [--iters N] [--reps N] [--only NAME]
 *   --small: shapes divided down for the emulator (a check of the harness,
 *   not a measurement).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"
#include "devbench.h"

const acc_model_desc *ACC_BENCH_DESC(void); /* the generated library's descriptor: its device and kernel images */

typedef struct Case Case;
typedef struct {
    const Case *c;
    acc_dev *d;
    float *t[8]; /* the case's tensors, in the order of its sizes */
    int64_t reps;
} Ctx;

/* One benchmark case: tensor sizes in floats (int32 index tensors count as
 * floats), the shape for the report, and the launches of one repetition. */
struct Case {
    const char *name, *model;
    int64_t B, T, C, H, KVH, D, V, F; /* the dims a case uses; ops.py reads them back */
    int64_t sizes[8];
    int index_tensor, index_bound; /* tensor holding token ids below index_bound (-1: none) */
    double bytes, flops;
    void (*launch)(const Ctx *x);
};

#define N_ (x->c->B * x->c->T)
static void l_bias_grad(const Ctx *x) {
    int64_t o[2] = {N_, x->c->F}, b[2] = {1, x->c->F};
    g_add_bwd(x->d, NULL, x->t[1], x->t[0], 2, o, o, b);
}
static void l_layernorm_fwd(const Ctx *x) {
    g_layernorm_fwd(x->d, x->t[1], x->t[2], x->t[0], x->t[3], x->t[4], N_, x->c->C, 1e-5f);
}
static void l_layernorm_bwd(const Ctx *x) {
    g_layernorm_bwd(x->d, x->t[5], x->t[6], x->t[7], x->t[1], x->t[0], x->t[3], x->t[2], N_, x->c->C);
}
static void l_rmsnorm_fwd(const Ctx *x) { g_rmsnorm_fwd(x->d, x->t[1], x->t[2], x->t[0], x->t[3], N_, x->c->C, 1e-5f); }
static void l_rmsnorm_bwd(const Ctx *x) {
    g_rmsnorm_bwd(x->d, x->t[4], x->t[5], x->t[1], x->t[0], x->t[3], x->t[2], N_, x->c->C);
}
static void l_softmax_fwd(const Ctx *x) { g_softmax_fwd(x->d, x->t[1], x->t[0], N_, x->c->T); }
static void l_softmax_bwd(const Ctx *x) { g_softmax_bwd(x->d, x->t[2], x->t[0], x->t[1], N_, x->c->T); }
static void l_xent_fwd(const Ctx *x) {
    g_cross_entropy_fwd(x->d, x->t[3], x->t[2], x->t[0], (const int32_t *)x->t[1], N_, x->c->V);
}
static void l_xent_bwd(const Ctx *x) {
    g_cross_entropy_bwd(x->d, x->t[4], x->t[3], x->t[0], x->t[2], (const int32_t *)x->t[1], N_, x->c->V);
}
static void l_adamw(const Ctx *x) { dev_adamw(x->d, x->t[0], x->t[1], x->t[2], x->t[3], x->c->sizes[0]); }
static void l_embedding_fwd(const Ctx *x) {
    g_embedding_fwd(x->d, x->t[2], (const int32_t *)x->t[0], x->t[1], N_, x->c->V, x->c->C);
}
static void l_embedding_bwd(const Ctx *x) {
    g_embedding_bwd(x->d, x->t[1], x->t[2], (const int32_t *)x->t[0], N_, x->c->V, x->c->C);
}
static void l_gelu_fwd(const Ctx *x) { g_gelu_fwd(x->d, x->t[1], x->t[0], N_ * x->c->F); }
static void l_gelu_bwd(const Ctx *x) { g_gelu_bwd(x->d, x->t[2], x->t[1], x->t[0], N_ * x->c->F); }
/* bias add then residual add (the fused chain of a GPT-2 projection) */
static void l_ew_chain(const Ctx *x) {
    k_ew_op ops[2] = {{ACC_OP_ADD, x->t[1], x->c->C, 0, 0.0f, 1}, {ACC_OP_ADD, x->t[2], N_ * x->c->C, 0, 0.0f, 2}};
    g_ew_chain(x->d, x->t[3], x->t[0], ops, 2, N_ * x->c->C, 1, 0);
}
static void l_dropout_fwd(const Ctx *x) { g_dropout_fwd(x->d, x->t[1], x->t[0], N_ * x->c->C, 0.1f, 1, 0, 7); }
static void l_attention_fwd(const Ctx *x) {
    const Case *c = x->c;
    g_attention_fwd(x->d, x->t[3], x->t[4], x->t[0], x->t[1], x->t[2], c->B, c->T, c->T, c->H, c->KVH, c->D, 1);
}
static void l_attention_bwd(const Ctx *x) {
    const Case *c = x->c;
    g_attention_bwd(x->d, x->t[5], x->t[6], x->t[7], x->t[3], x->t[0], x->t[1], x->t[2], x->t[3], x->t[4], c->B, c->T,
                    c->T, c->H, c->KVH, c->D, 1);
}
static void l_matmul_fwd(const Ctx *x) {
    g_matmul_fwd(x->d, x->t[2], x->t[0], x->t[1], 1, N_, x->c->F, x->c->C, 0, 0, 0);
}
static void l_matmul_bwd(const Ctx *x) {
    g_matmul_bwd(x->d, x->t[3], x->t[4], x->t[2], x->t[0], x->t[1], 1, N_, x->c->F, x->c->C, 0, 0, 0);
}
static void l_linear_fwd(const Ctx *x) {
    g_linear_fwd(x->d, x->t[3], x->t[0], x->t[1], x->t[2], N_, x->c->F, x->c->C, 0);
}
static void l_linear_bwd(const Ctx *x) {
    g_linear_bwd(x->d, x->t[4], x->t[5], x->t[6], x->t[3], x->t[0], x->t[1], N_, x->c->F, x->c->C, 0);
}
static void l_rope_fwd(const Ctx *x) {
    g_rope_fwd(x->d, x->t[1], x->t[0], x->c->B, x->c->T, x->c->H, x->c->D, 10000.0f);
}

static int run_reps(void *arg) {
    const Ctx *x = arg;
    for (int64_t r = 0; r < x->reps; r++) x->c->launch(x);
    return x->d->status;
}

static int bench(const Case *c, int iters, int64_t reps, int tf32) {
    const acc_model_desc *base = ACC_BENCH_DESC();
    const acc_device *dv = base->device;
    acc_dev *d = NULL;
    Ctx x = {c, NULL, {0}, reps};
    int rc = devbench_open(base, 8, c->sizes, tf32, &d, x.t);
    x.d = d;
    for (int i = 0; rc == ACC_OK && i < 8; i++) {
        if (!c->sizes[i]) x.t[i] = NULL;
        else
            rc =
                devbench_fill(dv, d, x.t[i], c->sizes[i], i == c->index_tensor ? c->index_bound : 0, 17u + (unsigned)i);
    }
    double med = rc == ACC_OK ? devbench_time(dv, d, run_reps, &x, iters, (double)reps) : -1;
    if (med >= 0) {
        printf(
            "{\"case\": \"%s\", \"model\": \"%s\", \"B\": %lld, \"T\": %lld, \"C\": %lld, \"H\": %lld, \"KVH\": %lld, "
            "\"D\": %lld, \"V\": %lld, \"F\": %lld, \"ms\": %.6f, \"bytes\": %.0f, \"flops\": %.0f, \"gbps\": %.1f, "
            "\"tflops\": %.2f}\n",
            c->name, c->model, (long long)c->B, (long long)c->T, (long long)c->C, (long long)c->H, (long long)c->KVH,
            (long long)c->D, (long long)c->V, (long long)c->F, med, c->bytes, c->flops, c->bytes / med * 1e-6,
            c->flops / med * 1e-9);
        fflush(stdout);
    } else {
        fprintf(stderr, "ops: %s: %s\n", c->name, d ? dv->error(d) : "cannot open the device");
        rc = rc ? rc : ACC_ERR_DEVICE;
    }
    if (d) dv->close(d);
    return rc;
}

int main(int argc, char **argv) {
    int small = 0, tf32 = 0, iters = 20;
    int64_t reps = 10;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small")) small = 1;
        else if (!strcmp(argv[i], "--tf32")) tf32 = 1;
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: ops [--small] [--tf32] [--iters N] [--reps N] [--only NAME]\n");
            return 2;
        }
    }
    if (iters < 1 || reps < 1) {
        fprintf(stderr, "ops: --iters and --reps take a positive count\n");
        return 2;
    }
    /* GPT-2 small (B 8, T 1024, C 768, H 12, V 50257) and TinyLlama's widths
     * (C 2048, H 32, KVH 4) at B 2, T 2048; --small divides them */
    int64_t s = small ? 16 : 1;
    int64_t gB = 8 / (small ? 4 : 1), gT = 1024 / s, gC = 768 / s, gH = 12 / (small ? 4 : 1), gV = 50257 / s;
    int64_t gN = gB * gT, gF = 4 * gC, gD = gC / gH;
    int64_t lB = 2 / (small ? 2 : 1), lT = 2048 / s, lC = 2048 / s, lH = 32 / (small ? 8 : 1),
            lKV = 4 / (small ? 2 : 1);
    int64_t lN = lB * lT, lD = lC / lH;
    int64_t np = small ? 1 << 16 : 124439808; /* GPT-2 small's parameters */
    double f4 = 4.0;
    /* clang-format off */
    Case cases[] = {
        {"bias_grad", "gpt2", gB, gT, gC, gH, 0, 0, 0, gF, {gN * gF, gF}, -1, 0, f4 * (gN * gF + 2 * gF), 0, l_bias_grad},
        {"layernorm_fwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, 0, {gN * gC, gN * gC, 2 * gN, gC, gC}, -1, 0,
         f4 * (2 * gN * gC + 2 * gN), 0, l_layernorm_fwd},
        {"layernorm_bwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, 0, {gN * gC, gN * gC, 2 * gN, gC, gC, gN * gC, gC, gC}, -1, 0,
         f4 * (4 * gN * gC + 2 * gN), 0, l_layernorm_bwd},
        {"rmsnorm_fwd", "llama", lB, lT, lC, 0, 0, 0, 0, 0, {lN * lC, lN * lC, lN, lC}, -1, 0, f4 * (2 * lN * lC + lN), 0,
         l_rmsnorm_fwd},
        {"rmsnorm_bwd", "llama", lB, lT, lC, 0, 0, 0, 0, 0, {lN * lC, lN * lC, lN, lC, lN * lC, lC}, -1, 0,
         f4 * (4 * lN * lC + lN), 0, l_rmsnorm_bwd},
        {"softmax_fwd", "gpt2", gB, gT, 0, 0, 0, 0, 0, 0, {gN * gT, gN * gT}, -1, 0, f4 * 2 * gN * gT, 0, l_softmax_fwd},
        {"softmax_bwd", "gpt2", gB, gT, 0, 0, 0, 0, 0, 0, {gN * gT, gN * gT, gN * gT}, -1, 0, f4 * 4 * gN * gT, 0,
         l_softmax_bwd},
        {"xent_fwd", "gpt2", gB, gT, 0, 0, 0, 0, gV, 0, {gN * gV, gN, gN, 1}, 1, (int)gV, f4 * gN * gV, 0, l_xent_fwd},
        {"xent_bwd", "gpt2", gB, gT, 0, 0, 0, 0, gV, 0, {gN * gV, gN, gN, 1, gN * gV}, 1, (int)gV, f4 * 3 * gN * gV, 0,
         l_xent_bwd},
        {"adamw", "gpt2", 0, 0, 0, 0, 0, 0, 0, 0, {np, np, np, np}, -1, 0, f4 * 7 * np, 0, l_adamw},
        {"embedding_fwd", "gpt2", gB, gT, gC, 0, 0, 0, gV, 0, {gN, gV * gC, gN * gC}, 0, (int)gV, f4 * 2 * gN * gC, 0,
         l_embedding_fwd},
        {"embedding_bwd", "gpt2", gB, gT, gC, 0, 0, 0, gV, 0, {gN, gV * gC, gN * gC}, 0, (int)gV, f4 * 3 * gN * gC, 0,
         l_embedding_bwd},
        {"gelu_fwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, gF, {gN * gF, gN * gF}, -1, 0, f4 * 2 * gN * gF, 0, l_gelu_fwd},
        {"gelu_bwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, gF, {gN * gF, gN * gF, gN * gF}, -1, 0, f4 * 4 * gN * gF, 0,
         l_gelu_bwd},
        {"bias_residual", "gpt2", gB, gT, gC, 0, 0, 0, 0, 0, {gN * gC, gC, gN * gC, gN * gC}, -1, 0, f4 * 3 * gN * gC, 0,
         l_ew_chain},
        {"dropout_fwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, 0, {gN * gC, gN * gC}, -1, 0, f4 * 2 * gN * gC, 0, l_dropout_fwd},
        {"attention_fwd", "gpt2", gB, gT, gC, gH, gH, gD, 0, 0, {gN * gC, gN * gC, gN * gC, gN * gC, gB * gH * gT}, -1, 0,
         f4 * 4 * gN * gC, 2.0 * gB * gH * gT * gT * gD, l_attention_fwd},
        {"attention_bwd", "gpt2", gB, gT, gC, gH, gH, gD, 0, 0,
         {gN * gC, gN * gC, gN * gC, gN * gC, gB * gH * gT, gN * gC, gN * gC, gN * gC}, -1, 0, f4 * 8 * gN * gC,
         5.0 * gB * gH * gT * gT * gD, l_attention_bwd},
        {"attention_fwd", "llama", lB, lT, lC, lH, lKV, lD, 0, 0,
         {lN * lC, lN * lKV * lD, lN * lKV * lD, lN * lC, lB * lH * lT}, -1, 0, f4 * (2 * lN * lC + 2 * lN * lKV * lD),
         2.0 * lB * lH * lT * lT * lD, l_attention_fwd},
        {"attention_bwd", "llama", lB, lT, lC, lH, lKV, lD, 0, 0,
         {lN * lC, lN * lKV * lD, lN * lKV * lD, lN * lC, lB * lH * lT, lN * lC, lN * lKV * lD, lN * lKV * lD}, -1, 0,
         f4 * (4 * lN * lC + 4 * lN * lKV * lD), 5.0 * lB * lH * lT * lT * lD, l_attention_bwd},
        {"matmul_fwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, gF, {gN * gC, gC * gF, gN * gF}, -1, 0,
         f4 * (gN * gC + gC * gF + gN * gF), 2.0 * gN * gC * gF, l_matmul_fwd},
        {"matmul_bwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, gF, {gN * gC, gC * gF, gN * gF, gN * gC, gC * gF}, -1, 0,
         f4 * 2 * (gN * gC + gC * gF + gN * gF), 4.0 * gN * gC * gF, l_matmul_bwd},
        {"linear_fwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, gF, {gN * gC, gC * gF, gF, gN * gF}, -1, 0,
         f4 * (gN * gC + gC * gF + gF + gN * gF), 2.0 * gN * gC * gF, l_linear_fwd},
        {"linear_bwd", "gpt2", gB, gT, gC, 0, 0, 0, 0, gF, {gN * gC, gC * gF, gF, gN * gF, gN * gC, gC * gF, gF}, -1,
         0, f4 * 2 * (gN * gC + gC * gF + gF + gN * gF), 4.0 * gN * gC * gF, l_linear_bwd},
        {"rope_fwd", "llama", lB, lT, lC, lH, 0, lD, 0, 0, {lN * lC, lN * lC}, -1, 0, f4 * 2 * lN * lC, 0, l_rope_fwd},
    };
    /* clang-format on */
    int failed = 0, ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s/%s", cases[i].name, cases[i].model);
        if (only && strcmp(only, cases[i].name) && strcmp(only, key)) continue;
        ran++;
        failed |= bench(&cases[i], iters, reps, tf32) != ACC_OK;
    }
    if (!ran) fprintf(stderr, "ops: no case named %s\n", only ? only : "");
    return failed || !ran;
}
