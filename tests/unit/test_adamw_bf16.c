/* test_adamw_bf16.c - AdamW over bf16 moments (--optimizer-state bf16): the
 * CPU kernel (k_adamw_bf16) and the emulated device's (ck_adamw with its
 * bf16 flag, through dev_adamw) against an independent reference.
 *
 * The reference is plain C in double: m = b1 m + (1-b1) g, v = b2 v +
 * (1-b2) g^2, p -= lr ((m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + wd p)
 * from the unrounded m and v, then m and v rounded to bf16 (nearest even)
 * for the next step. Six steps over 40000 elements (more than one chunk and
 * the CPU kernel's parallel threshold), random gradients of three scales
 * (1, 1e-3 and 1e-6: the small ones give a v whose updates bf16 loses),
 * weight decay on. Two references:
 *  - step by step, each step from the kernel's p, m and v before it: the
 *    kernel computes in float, the reference in double, so a value near a
 *    bf16 rounding boundary may round to its neighbour: every m and v
 *    within one bf16 ulp of the reference's, at most 0.2% of them not
 *    bit-identical (measured: ~0.02%; rounding by truncation instead of to
 *    nearest even would make about half of them differ), p within 1e-6 lr
 *    plus one float ulp of p (the kernel's float update: ~1e-7 of a step,
 *    and p's float store; a wrong formula moves whole steps);
 *  - the whole run from the same start: a neighbour in m or v changes the
 *    later steps of that element, so p is within 0.05 lr x step of the
 *    reference (measured: 1.5e-2 lr after six steps, on an element whose
 *    m is near zero) and the worst difference is printed.
 * The emulated device against the CPU kernel: bit-identical p, m and v (the
 * same float formula, element by element), with bf16 state and with f32
 * state (the flag off keeps k_adamw's update).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cuda_ops.h"
#include "device.h"
#include "test.h"


extern const acc_device acc_device_cuda_emu;

enum { N = 40000, STEPS = 6 };
static const float LR = 1e-2f, B1 = 0.9f, B2 = 0.999f, EPS = 1e-8f, WD = 0.01f;

static void *hmalloc(size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        printf("out of memory\n");
        exit(2);
    }
    return p;
}

/* uniform in [-0.5, 0.5), a fixed sequence */
static float urand(unsigned *seed) {
    *seed = *seed * 1664525u + 1013904223u;
    return (float)((*seed >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* step t's gradient of element i: three scales, a fixed sequence */
static void gradients(float *g, int t) {
    unsigned seed = 1000u + (unsigned)t;
    static const float scale[] = {1.0f, 1e-3f, 1e-6f};
    for (int i = 0; i < N; i++) g[i] = scale[i % 3] * urand(&seed);
}

/* one bf16 ulp at the magnitude of w (w's exponent, 7 mantissa bits) */
static double ulp16(double w) {
    int e;
    frexp(w == 0 ? 1e-38 : w, &e);
    return ldexp(1.0, e - 8);
}

/* The emulated device: its arena is host memory; the update's scalars at
 * the workspace's start. */
static acc_dev *dev;
static unsigned char *arena;

#define ARENA_BYTES (8ll << 20)

static void dev_open(void) {
    acc_model_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.workspace_offset = ARENA_BYTES;
    desc.workspace_bytes = 1 << 20;
    desc.arena_bytes = desc.workspace_offset + desc.workspace_bytes;
    int64_t extra = 0;
    EXPECT(acc_device_cuda_emu.open(&desc, &dev, &arena, &extra) == ACC_OK, "emulated device did not open");
}

static void set_scalars(int t) {
    acc_kscalars *sc = (acc_kscalars *)(void *)dev->scalars;
    sc->lr = LR, sc->beta1 = B1, sc->beta2 = B2, sc->eps = EPS, sc->weight_decay = WD;
    sc->bc1 = (float)(1.0 - pow((double)B1, (double)t)); /* as acc_adamw computes them */
    sc->bc2 = (float)(1.0 - pow((double)B2, (double)t));
}

/* The reference's update of one element at step t, in double; m and v
 * then rounded to bf16 (through float: a double that rounds to a float
 * on a bf16 tie is beyond this test's inputs). */
static void ref_step(double *p, double *m, double *v, float g, int t) {
    double b1 = B1, b2 = B2, gi = g;
    double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
    double mi = b1 * *m + (1 - b1) * gi, vi = b2 * *v + (1 - b2) * gi * gi;
    *p -= (double)LR * ((mi / bc1) / (sqrt(vi / bc2) + (double)EPS) + (double)WD * *p);
    *m = acc_bf16_f32(acc_f32_bf16((float)mi));
    *v = acc_bf16_f32(acc_f32_bf16((float)vi));
}

static void test_against_reference(void) {
    float *p = hmalloc(N * 4), *g = hmalloc(N * 4);
    acc_bf16 *m = hmalloc(N * 2), *v = hmalloc(N * 2);
    double *rp = hmalloc(N * 8), *rm = hmalloc(N * 8), *rv = hmalloc(N * 8); /* the whole run */
    double *sp = hmalloc(N * 8), *sm = hmalloc(N * 8), *sv = hmalloc(N * 8); /* this step */
    /* the emulated device's copies, in its arena */
    float *dp = (float *)(void *)arena, *dg = dp + N;
    acc_bf16 *dm = (acc_bf16 *)(void *)(dg + N), *dv = dm + N;
    unsigned seed = 7u;
    for (int i = 0; i < N; i++) rp[i] = p[i] = dp[i] = urand(&seed);
    double worst_run = 0, worst_step = 0, worst_mv = 0;
    int64_t near_mv = 0;
    for (int t = 1; t <= STEPS; t++) {
        gradients(g, t);
        memcpy(dg, g, N * 4);
        for (int i = 0; i < N; i++) sp[i] = p[i], sm[i] = acc_bf16_f32(m[i]), sv[i] = acc_bf16_f32(v[i]);
        k_adamw_bf16(p, g, m, v, N, LR, B1, B2, EPS, WD, t);
        set_scalars(t);
        dev_adamw(dev, dp, dg, dm, dv, N, ACC_DT_BF16);
        EXPECT(dev->status == ACC_OK, "dev_adamw: %s", dev_error(dev));
        int64_t differ = 0, over = 0, p_step = 0, p_run = 0;
        for (int i = 0; i < N; i++) {
            ref_step(&sp[i], &sm[i], &sv[i], g[i], t);
            ref_step(&rp[i], &rm[i], &rv[i], g[i], t);
            const double got[2] = {acc_bf16_f32(m[i]), acc_bf16_f32(v[i])}, want[2] = {sm[i], sv[i]};
            for (int k = 0; k < 2; k++) {
                double d = fabs(got[k] - want[k]);
                if (d > 0) differ++;
                if (d > ulp16(want[k])) over++;
                if (d / ulp16(want[k]) > worst_mv) worst_mv = d / ulp16(want[k]);
            }
            double ds = fabs((double)p[i] - sp[i]), dr = fabs((double)p[i] - rp[i]);
            if (ds > worst_step) worst_step = ds;
            if (dr > worst_run) worst_run = dr;
            if (ds > 1e-6 * LR + 0x1p-23 * fabs(sp[i])) p_step++; /* and the float store of p */
            if (dr > 0.05 * LR * t) p_run++;
        }
        near_mv += differ;
        EXPECT(over == 0, "step %d: %lld of m and v more than one bf16 ulp from the reference", t, (long long)over);
        EXPECT(differ <= 4 * N / 1000, "step %d: %lld of m and v not bit-identical to the reference (at most %d)", t,
               (long long)differ, 4 * N / 1000);
        EXPECT(p_step == 0, "step %d: %lld parameters more than 1e-6 lr + one float ulp from the step's reference", t,
               (long long)p_step);
        EXPECT(p_run == 0, "step %d: %lld parameters more than 0.05 lr t from the run's reference", t,
               (long long)p_run);
        EXPECT(!memcmp(p, dp, N * 4) && !memcmp(m, dm, N * 2) && !memcmp(v, dv, N * 2),
               "step %d: the emulated device's p, m, v differ from the CPU kernel's", t);
    }
    /* the state holds something: the small gradients' v is nonzero in bf16 */
    EXPECT(v[2] != 0 && m[0] != 0, "the moments stayed zero");
    printf("bf16 state vs double reference, %d steps x %d elements (lr %g): worst |dp| %.3g a step, %.3g over the "
           "run; m and v: %lld of %d a bf16 neighbour of the step's reference (worst %.3g ulp)\n",
           STEPS, N, (double)LR, worst_step, worst_run, (long long)near_mv, 2 * N * STEPS, worst_mv);
    free(p), free(g), free(m), free(v), free(rp), free(rm), free(rv), free(sp), free(sm), free(sv);
}

/* f32 state: the flag off, the device's update bit-identical to k_adamw's. */
static void test_f32_state(void) {
    float *p = hmalloc(N * 4), *g = hmalloc(N * 4), *m = hmalloc(N * 4), *v = hmalloc(N * 4);
    float *dp = (float *)(void *)arena, *dg = dp + N, *dm = dg + N, *dv = dm + N;
    memset(arena, 0, 4 * N * 4);
    unsigned seed = 9u;
    for (int i = 0; i < N; i++) p[i] = dp[i] = urand(&seed);
    for (int t = 1; t <= STEPS; t++) {
        gradients(g, t);
        memcpy(dg, g, N * 4);
        k_adamw(p, g, m, v, N, LR, B1, B2, EPS, WD, t);
        set_scalars(t);
        dev_adamw(dev, dp, dg, dm, dv, N, ACC_DT_F32);
        EXPECT(!memcmp(p, dp, N * 4) && !memcmp(m, dm, N * 4) && !memcmp(v, dv, N * 4),
               "f32 state, step %d: the emulated device's p, m, v differ from k_adamw's", t);
    }
    free(p), free(g), free(m), free(v);
}

int main(void) {
    dev_open();
    if (!dev) return 1;
    memset(arena, 0, 4 * N * 4);
    test_against_reference();
    test_f32_state();
    EXPECT(dev->status == ACC_OK, "device error: %s", dev_error(dev));
    acc_device_cuda_emu.close(dev);
    TEST_DONE();
}
