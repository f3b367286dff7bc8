/* train.c - a trainer linking an acc-generated library: trains a small
 * byte-level GPT on a corpus generated reproducibly (lines of arithmetic,
 * "417+38=455\n"), printing the loss, tokens/s and the memory the step holds.
 *
 * Build (after `acc compile models/gpt2.acdsl --target cpu -D V=256 ... -o out/tiny`):
 *   cc -O2 -fopenmp examples/train.c -Iout/tiny out/tiny/libgpt2.a out/tiny/libaccrt.a \
 *      -lopenblas -lm -o train
 * The same source builds against the cuda target's library (--target cuda;
 * add out/tiny/libaccrt_cuda.a before libaccrt.a and -ldl) or the emulated
 * one (--target cuda-emu; add out/tiny/libaccrt_emu.a): the trainer only
 * calls the generated API, which copies to and from the device itself.
 * The model must have byte-level tokens (V = 256) and inputs idx and targets
 * of shape (B, T); B and T are read from the library's descriptor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt2.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint32_t rng(void) { /* xorshift64*, reproducible */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

/* The corpus: n bytes of "a+b=c\n" lines with a, b < 1000. */
static char *make_corpus(size_t n) {
    char *text = malloc(n + 32);
    if (!text) return NULL;
    size_t at = 0;
    while (at < n) {
        unsigned a = rng() % 1000, b = rng() % 1000;
        at += (size_t)sprintf(text + at, "%u+%u=%u\n", a, b, a + b);
    }
    return text;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int die(gpt2_model *m, int rc, const char *what) {
    fprintf(stderr, "train: %s: %s: %s\n", what, gpt2_status_string(rc), gpt2_last_error(m));
    gpt2_destroy(m);
    return 1;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 300;
    float lr = argc > 2 ? (float)atof(argv[2]) : 3e-3f;
    const acc_model_desc *d = gpt2_desc();
    int64_t B = 0, T = 0;
    for (int i = 0; i < d->n_inputs; i++)
        if (!strcmp(d->inputs[i].name, "idx")) B = d->inputs[i].dim[0], T = d->inputs[i].dim[1];
    if (B <= 0 || T <= 0) {
        fprintf(stderr, "train: the library has no input 'idx' of shape (B, T)\n");
        return 1;
    }
    acc_options opt = {sizeof opt, ACC_API_VERSION, 0, 1234};
    gpt2_model *m = NULL;
    int rc = gpt2_create(&opt, &m);
    if (rc) return die(m, rc, "create");
    if ((rc = gpt2_init_params(m, 42))) return die(m, rc, "init");

    size_t n = 1 << 20;
    char *text = make_corpus(n);
    int32_t *idx = malloc((size_t)(B * T) * 4), *tgt = malloc((size_t)(B * T) * 4);
    if (!text || !idx || !tgt) return 1;
    printf("train: model %s, B=%lld T=%lld, arena %.1f MiB, corpus %zu bytes\n", d->model_name, (long long)B,
           (long long)T, (double)d->arena_bytes / (1 << 20), n);
    double t0 = now_s(), first = 0, last = 0;
    for (int s = 0; s < steps; s++) {
        for (int64_t b = 0; b < B; b++) {
            size_t off = rng() % (n - (size_t)T - 1);
            for (int64_t t = 0; t < T; t++) {
                idx[b * T + t] = (unsigned char)text[off + (size_t)t];
                tgt[b * T + t] = (unsigned char)text[off + (size_t)t + 1];
            }
        }
        float loss;
        if ((rc = gpt2_set_idx(m, idx)) || (rc = gpt2_set_targets(m, tgt))) return die(m, rc, "set input");
        if ((rc = gpt2_step(m, &loss))) return die(m, rc, "step");
        if ((rc = gpt2_adamw(m, lr, 0.9f, 0.95f, 1e-8f, 0.0f))) return die(m, rc, "adamw");
        if (s == 0) first = loss;
        last = loss;
        if (s % 25 == 0 || s == steps - 1) {
            double dt = now_s() - t0;
            printf("step %4d  loss %.4f  %.0f tokens/s\n", s, (double)loss, (double)(s + 1) * (double)(B * T) / dt);
            fflush(stdout);
        }
    }
    acc_counters c;
    gpt2_counters(m, &c);
    printf("train: loss %.4f -> %.4f over %d steps; peak memory %lld bytes (planned %lld); %.1f ms/step\n", first, last,
           steps, (long long)c.peak_bytes_measured, (long long)d->planned_peak_bytes,
           (c.total_ms[ACC_PHASE_FWD] + c.total_ms[ACC_PHASE_BWD] + c.total_ms[ACC_PHASE_OPT]) /
               (steps > 0 ? steps : 1));
    free(text);
    free(idx);
    free(tgt);
    gpt2_destroy(m);
    return 0;
}
