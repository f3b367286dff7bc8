/* trainer_calls.c - the calls of a training loop against a generated library
 * (see trainer_calls.sh): gradient accumulation (acc_forward_backward,
 * acc_zero_grads), the forward alone (acc_forward) and global-norm clipping
 * (acc_clip_grad_norm), each against something independent: the gradients
 * of single steps read back and added on the host, a double-precision norm
 * of the gradients computed here. Built for any model: -DMODEL=<name> and
 * -include <name>.h; every input is filled with seeded random values.
 *
 * Usage: trainer_calls [exact | dropout | forward]. "exact": also require two
 * accumulated steps on one batch to give exactly twice one step's gradients,
 * which holds where every parameter gradient is one contribution of one
 * kernel (accrt.h). "dropout" (a model with dropout): only that acc_forward
 * turns it off: its loss differs from the step's, does not depend on the
 * step counter, and is printed ("forward loss %a") for trainer_calls.sh to
 * compare with "forward": the same printed by the model built without
 * dropout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define W(name) CAT(MODEL, name) /* the generated wrapper <model>_<name> */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

/* A batch: every input filled from the generator (indices in range). */
typedef struct {
    void **data;
} Batch;

static Batch make_batch(const acc_model_desc *d) {
    Batch b = {calloc((size_t)d->n_inputs, sizeof(void *))};
    for (int i = 0; i < d->n_inputs; i++) {
        const acc_input_desc *in = &d->inputs[i];
        b.data[i] = malloc((size_t)in->elems * 4);
        for (int64_t k = 0; k < in->elems; k++) {
            if (in->dtype == ACC_DT_I32)
                ((int32_t *)b.data[i])[k] = in->index_bound > 0 ? (int32_t)(rng() % (uint32_t)in->index_bound) : 0;
            else ((float *)b.data[i])[k] = (float)rng() / 4294967296.0f * 2.0f - 1.0f;
        }
    }
    return b;
}

static void free_batch(const acc_model_desc *d, Batch *b) {
    for (int i = 0; i < d->n_inputs; i++) free(b->data[i]);
    free(b->data);
}

static int set_batch(acc_model *m, const Batch *b) {
    const acc_model_desc *d = acc_describe(m);
    for (int i = 0; i < d->n_inputs; i++) {
        int rc = acc_set_input(m, d->inputs[i].name, b->data[i], (size_t)d->inputs[i].elems * 4);
        if (rc) return rc;
    }
    return ACC_OK;
}

/* Every parameter gradient (grad = 1) or parameter, concatenated. */
static int64_t total_elems(const acc_model_desc *d) {
    int64_t n = 0;
    for (int p = 0; p < d->n_params; p++) n += d->params[p].elems;
    return n;
}

static float *read_all(acc_model *m, int grad) {
    const acc_model_desc *d = acc_describe(m);
    float *v = malloc((size_t)total_elems(d) * 4), *at = v;
    for (int p = 0; p < d->n_params; p++) {
        if (acc_read(m, d->params[p].name, grad, at, (size_t)d->params[p].elems * 4)) {
            printf("acc_read %s: %s\n", d->params[p].name, acc_last_error(m));
            exit(1);
        }
        at += d->params[p].elems;
    }
    return v;
}

/* The first element where a and b differ in their bits, or -1. */
static int64_t first_diff(const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4)) return i;
    return -1;
}

static double norm2(const float *g, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    return sqrt(s);
}

static int bits_equal(float a, float b) { return !memcmp(&a, &b, 4); }

int main(int argc, char **argv) {
    int exact = argc > 1 && !strcmp(argv[1], "exact");
    const acc_model_desc *d = W(desc)();
    int64_t N = total_elems(d);
    acc_options opt = {sizeof opt, ACC_API_VERSION, 0, 7};
    acc_model *m = NULL;
    ASSERT(ACC_OK, W(create)(&opt, &m));
    Batch A = make_batch(d), B = make_batch(d);
    float loss = 0, lossA, norm = 0;

    /* before the parameters have values: ACC_ERR_STATE, as acc_step */
    ASSERT(ACC_OK, set_batch(m, &A));
    ASSERT(ACC_ERR_STATE, W(forward_backward)(m, &loss, 0));
    ASSERT(ACC_ERR_STATE, W(forward_backward)(m, &loss, 1));
    ASSERT(ACC_ERR_STATE, W(forward)(m, &loss));
    ASSERT_TRUE(strstr(W(last_error)(m), "never given a value") != NULL);
    ASSERT(ACC_ERR_STATE, W(clip_grad_norm)(m, 1.0f, &norm));
    ASSERT_TRUE(strstr(W(last_error)(m), "never given a value") != NULL);
    ASSERT(ACC_OK, W(zero_grads)(m));
    /* NULL and out-of-range arguments */
    ASSERT(ACC_ERR_NULL, W(forward)(NULL, &loss));
    ASSERT(ACC_ERR_NULL, W(forward)(m, NULL));
    ASSERT(ACC_ERR_NULL, W(forward_backward)(NULL, &loss, 0));
    ASSERT(ACC_ERR_NULL, W(zero_grads)(NULL));
    ASSERT(ACC_ERR_NULL, W(clip_grad_norm)(NULL, 1.0f, &norm));
    ASSERT(ACC_ERR_ARG, W(forward_backward)(m, &loss, 2));
    ASSERT_TRUE(strstr(W(last_error)(m), "accumulate = 2 must be 0 or 1") != NULL);
    const float bad[] = {0.0f, -1.0f, NAN, INFINITY};
    for (int k = 0; k < 4; k++) {
        ASSERT(ACC_ERR_ARG, W(clip_grad_norm)(m, bad[k], &norm));
        ASSERT_TRUE(strstr(W(last_error)(m), "max_norm") != NULL);
    }

    ASSERT(ACC_OK, W(init_params)(m, 11));
    if (argc > 1 && (!strcmp(argv[1], "dropout") || !strcmp(argv[1], "forward"))) {
        float f1 = -1, f2 = -2;
        ASSERT(ACC_OK, W(forward)(m, &f1));
        ASSERT(ACC_OK, W(step)(m, &loss));
        ASSERT(ACC_OK, W(step)(m, &loss));
        ASSERT(ACC_OK, W(forward)(m, &f2));
        ASSERT_TRUE(bits_equal(f1, f2));
        if (!strcmp(argv[1], "dropout")) ASSERT_TRUE(!bits_equal(f1, loss)); /* the step keeps dropout */
        printf("forward loss %a\n", (double)f1);
        W(destroy)(m);
        free_batch(d, &A), free_batch(d, &B);
        TEST_DONE();
    }
    /* three rounds: a device records each kind of run on its second and
     * replays the recording from the third on (cuda-emu) */
    for (int round = 0; round < 3; round++) {
        printf("round %d\n", round);
        /* single steps on A and on B */
        ASSERT(ACC_OK, set_batch(m, &B));
        ASSERT(ACC_OK, W(step)(m, &loss));
        float *gB = read_all(m, 1);
        ASSERT(ACC_OK, set_batch(m, &A));
        ASSERT(ACC_OK, W(forward_backward)(m, &lossA, 0));
        float *gA = read_all(m, 1), *params = read_all(m, 0);
        ASSERT_TRUE(norm2(gA, N) > 0);

        /* the forward alone: the step's loss, bit for bit; nothing else moves */
        float lossF = -1;
        ASSERT(ACC_OK, W(forward)(m, &lossF));
        if (!ASSERT_TRUE(bits_equal(lossA, lossF))) printf("  step loss %.9g, forward loss %.9g\n", lossA, lossF);
        float *g = read_all(m, 1), *p = read_all(m, 0);
        ASSERT(-1, first_diff(gA, g, N));
        ASSERT(-1, first_diff(params, p, N));
        free(g), free(p);

        /* twice on A, accumulated: 2 x one step's gradients (bit for bit
         * where each gradient is one contribution, else within rounding) */
        ASSERT(ACC_OK, W(forward_backward)(m, &loss, 1));
        ASSERT_TRUE(bits_equal(loss, lossA));
        g = read_all(m, 1);
        int64_t worst = -1;
        for (int64_t i = 0; exact && i < N; i++)
            if (!bits_equal(g[i], 2.0f * gA[i]) && worst < 0) worst = i;
        if (!ASSERT(-1, worst))
            printf("  2 x A: element %lld: %.9g, want %.9g\n", (long long)worst, g[worst], 2 * gA[worst]);
        /* else per parameter: the 2-norm of the error within 1e-6 of the
         * gradient's (a sum of contributions that cancel rounds apart) */
        for (int q = 0, at = 0; !exact && q < d->n_params; at += (int)d->params[q].elems, q++) {
            double e2 = 0, w2 = 0;
            for (int64_t i = at; i < at + d->params[q].elems; i++) {
                double want = 2.0 * (double)gA[i];
                e2 += ((double)g[i] - want) * ((double)g[i] - want);
                w2 += want * want;
            }
            if (!ASSERT_TRUE(sqrt(e2) <= 1e-6 * sqrt(w2)))
                printf("  2 x A: %s: relative error %.3g\n", d->params[q].name, sqrt(e2 / w2));
        }
        free(g);

        /* A then B, accumulated: gA + gB within rtol 1e-6 of |gA| + |gB| */
        ASSERT(ACC_OK, set_batch(m, &B));
        ASSERT(ACC_OK, W(forward_backward)(m, &loss, 0));
        ASSERT(ACC_OK, set_batch(m, &A));
        ASSERT(ACC_OK, W(zero_grads)(m));
        g = read_all(m, 1);
        ASSERT(0, norm2(g, N));
        free(g);
        ASSERT(ACC_OK, W(forward_backward)(m, &loss, 1)); /* onto zeros: a fresh step */
        g = read_all(m, 1);
        ASSERT(-1, first_diff(gA, g, N));
        free(g);
        ASSERT(ACC_OK, set_batch(m, &B));
        ASSERT(ACC_OK, W(forward_backward)(m, &loss, 1));
        g = read_all(m, 1);
        worst = -1;
        for (int64_t i = 0; i < N; i++) {
            double want = (double)gA[i] + (double)gB[i];
            if (fabs((double)g[i] - want) > 1e-6 * (fabs((double)gA[i]) + fabs((double)gB[i])) && worst < 0) worst = i;
        }
        if (!ASSERT(-1, worst))
            printf("  A + B: element %lld: %.9g, want %.9g\n", (long long)worst, g[worst],
                   (double)gA[worst] + (double)gB[worst]);
        free(g);
        /* a step without accumulate overwrites what was accumulated */
        ASSERT(ACC_OK, set_batch(m, &A));
        ASSERT(ACC_OK, W(step)(m, &loss));
        g = read_all(m, 1);
        ASSERT(-1, first_diff(gA, g, N));
        free(g);

        /* clipping: the norm against the double 2-norm of the gradients read
         * back; under the limit nothing changes */
        double ref = norm2(gA, N);
        norm = -1;
        ASSERT(ACC_OK, W(clip_grad_norm)(m, (float)(ref * 10), &norm));
        if (!ASSERT_TRUE(fabs((double)norm - ref) <= 1e-6 * ref)) printf("  norm %.9g, reference %.9g\n", norm, ref);
        g = read_all(m, 1);
        ASSERT(-1, first_diff(gA, g, N));
        free(g);
        ASSERT(ACC_OK, W(clip_grad_norm)(m, (float)(ref * 10), NULL));
        /* over the limit: every gradient times max_norm / (norm + 1e-6) */
        float max_norm = (float)(ref / 4);
        ASSERT(ACC_OK, W(clip_grad_norm)(m, max_norm, &norm));
        ASSERT_TRUE(fabs((double)norm - ref) <= 1e-6 * ref);
        float factor = (float)((double)max_norm / (ref + 1e-6));
        g = read_all(m, 1);
        worst = -1;
        for (int64_t i = 0; i < N; i++) {
            float want = gA[i] * factor;
            if (fabsf(g[i] - want) > 2.5e-7f * fabsf(want) && worst < 0)
                worst = i; /* ~2 ulp: the factor may round apart */
        }
        if (!ASSERT(-1, worst))
            printf("  clipped: element %lld: %.9g, want %.9g\n", (long long)worst, g[worst], gA[worst] * factor);
        ASSERT_TRUE(fabs(norm2(g, N) - (double)max_norm) <= 1e-5 * (double)max_norm);
        free(g);
        free(gA), free(gB), free(params);
    }
    /* a learning rate per acc_adamw call (a schedule): four updates with
     * different rates against AdamW computed here from the gradients read
     * back; a device replays its recorded update from the third call on, so
     * a rate or bias correction baked into the recording would show */
    if (d->has_optimizer) {
        const float lrs[] = {1e-3f, 5e-3f, 2e-4f, 3e-2f}, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.01f;
        float *pm = calloc((size_t)N, 4), *pv = calloc((size_t)N, 4);
        for (int t = 1; t <= 4; t++) {
            ASSERT(ACC_OK, set_batch(m, t % 2 ? &A : &B));
            ASSERT(ACC_OK, W(step)(m, &loss));
            float *g = read_all(m, 1), *p = read_all(m, 0), lr = lrs[t - 1];
            float bc1 = (float)(1.0 - pow((double)b1, t)), bc2 = (float)(1.0 - pow((double)b2, t));
            for (int64_t i = 0; i < N; i++) {
                pm[i] = b1 * pm[i] + (1.0f - b1) * g[i];
                pv[i] = b2 * pv[i] + (1.0f - b2) * g[i] * g[i];
                p[i] -= lr * ((pm[i] / bc1) / (sqrtf(pv[i] / bc2) + eps) + wd * p[i]);
            }
            ASSERT(ACC_OK, W(adamw)(m, lr, b1, b2, eps, wd));
            float *q = read_all(m, 0);
            int64_t worst = -1;
            for (int64_t i = 0; i < N; i++)
                if (fabsf(q[i] - p[i]) > 1e-6f * fabsf(p[i]) + 1e-9f && worst < 0) worst = i;
            if (!ASSERT(-1, worst))
                printf("  adamw %d (lr %g): element %lld: %.9g, want %.9g\n", t, lr, (long long)worst, q[worst],
                       p[worst]);
            free(g), free(p), free(q);
        }
        free(pm), free(pv);
    }
    /* every call above ran inside the plan: the memory held is the planned peak */
    acc_counters c;
    ASSERT(ACC_OK, W(counters)(m, &c));
    ASSERT(d->planned_peak_bytes, c.peak_bytes_measured);
    W(destroy)(m);
    free_batch(d, &A), free_batch(d, &B);
    TEST_DONE();
}
