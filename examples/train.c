/* train.c - a trainer linking an acc-generated library: trains a small
 * byte-level GPT on a corpus generated reproducibly (lines of arithmetic,
 * "417+38=455\n"), printing the loss, tokens/s and the memory the step holds.
 * It shows the calls of a training loop: gradient accumulation over
 * micro-batches (gpt2_forward_backward), global-norm gradient clipping
 * (gpt2_clip_grad_norm), a learning rate set per update (cosine schedule
 * with linear warmup; gpt2_adamw takes it per call) and an evaluation loss
 * on held-out text (gpt2_forward: the forward alone, dropout off).
 *
 * Usage: train [STEPS [LR]] [--accum N] [--clip X] [--warmup W] [--eval K]
 *   STEPS optimizer updates (300), LR the peak learning rate (3e-3), N
 *   micro-batches per update (1), X the gradient norm limit (0: no
 *   clipping), W warmup updates (STEPS / 10), K updates between evaluations
 *   (25; 0: none).
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
#include <math.h>
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

/* A batch of B windows of T + 1 bytes from text[lo, hi): inputs and the
 * next byte as targets. */
static void sample(const char *text, size_t lo, size_t hi, int64_t B, int64_t T, int32_t *idx, int32_t *tgt) {
    for (int64_t b = 0; b < B; b++) {
        size_t off = lo + rng() % (hi - lo - (size_t)T - 1);
        for (int64_t t = 0; t < T; t++) {
            idx[b * T + t] = (unsigned char)text[off + (size_t)t];
            tgt[b * T + t] = (unsigned char)text[off + (size_t)t + 1];
        }
    }
}

/* The learning rate of update s of n: linear warmup over `warmup` updates
 * to lr, then a cosine decay to lr / 10 at the last update. */
static float lr_at(int s, int n, int warmup, float lr) {
    if (s < warmup) return lr * (float)(s + 1) / (float)warmup;
    double done = n - warmup > 1 ? (double)(s - warmup) / (double)(n - warmup - 1) : 1.0;
    return (float)(0.1 * lr + 0.45 * lr * (1.0 + cos(3.141592653589793 * done)));
}

int main(int argc, char **argv) {
    int steps = 300, accum = 1, warmup = -1, eval_every = 25, npos = 0;
    float lr = 3e-3f, clip = 0.0f;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--accum") && i + 1 < argc) accum = atoi(argv[++i]);
        else if (!strcmp(a, "--clip") && i + 1 < argc) clip = (float)atof(argv[++i]);
        else if (!strcmp(a, "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--eval") && i + 1 < argc) eval_every = atoi(argv[++i]);
        else if (a[0] != '-' && npos == 0) steps = atoi(a), npos++;
        else if (a[0] != '-' && npos == 1) lr = (float)atof(a), npos++;
        else {
            fprintf(stderr, "usage: train [STEPS [LR]] [--accum N] [--clip X] [--warmup W] [--eval K]\n");
            return 2;
        }
    }
    if (warmup < 0) warmup = steps / 10;
    if (accum < 1 || clip < 0) {
        fprintf(stderr, "train: --accum must be >= 1 and --clip >= 0\n");
        return 2;
    }
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

    /* the corpus: training windows from the first 90%, the held-out batch
     * (the same every evaluation) from the rest */
    size_t n = 1 << 20, split = n / 10 * 9;
    char *text = make_corpus(n);
    int32_t *idx = malloc((size_t)(B * T) * 4), *tgt = malloc((size_t)(B * T) * 4);
    int32_t *eval_idx = malloc((size_t)(B * T) * 4), *eval_tgt = malloc((size_t)(B * T) * 4);
    if (!text || !idx || !tgt || !eval_idx || !eval_tgt) return 1;
    sample(text, split, n, B, T, eval_idx, eval_tgt);
    printf("train: model %s, B=%lld T=%lld, %d micro-batch%s per update, arena %.1f MiB, corpus %zu bytes\n",
           d->model_name, (long long)B, (long long)T, accum, accum > 1 ? "es" : "", (double)d->arena_bytes / (1 << 20),
           n);
    double t0 = now_s(), first = 0, last = 0;
    for (int s = 0; s < steps; s++) {
        /* the gradients of `accum` micro-batches, summed: the first step
         * overwrites the last update's gradients, the others add to them */
        float loss = 0;
        for (int k = 0; k < accum; k++) {
            float micro;
            sample(text, 0, split, B, T, idx, tgt);
            if ((rc = gpt2_set_idx(m, idx)) || (rc = gpt2_set_targets(m, tgt))) return die(m, rc, "set input");
            if ((rc = gpt2_forward_backward(m, &micro, k > 0))) return die(m, rc, "forward_backward");
            loss += micro / (float)accum;
        }
        /* The sum of the micro-batches' gradients is accum times their
         * mean: AdamW does not see the scale (but for eps), and the mean's
         * norm limit `clip` is accum * clip for the sum. */
        float norm = 0;
        if (clip > 0 && (rc = gpt2_clip_grad_norm(m, clip * (float)accum, &norm))) return die(m, rc, "clip");
        float lr_s = lr_at(s, steps, warmup, lr);
        if ((rc = gpt2_adamw(m, lr_s, 0.9f, 0.95f, 1e-8f, 0.0f))) return die(m, rc, "adamw");
        if (s == 0) first = loss;
        last = loss;
        if (s % 25 == 0 || s == steps - 1) {
            double dt = now_s() - t0;
            printf("step %4d  loss %.4f  lr %.2e", s, (double)loss, (double)lr_s);
            if (clip > 0) printf("  grad norm %.3f", (double)norm / accum);
            printf("  %.0f tokens/s\n", (double)(s + 1) * (double)(accum * B * T) / dt);
        }
        if (eval_every > 0 && (s % eval_every == eval_every - 1 || s == steps - 1)) {
            float eval;
            if ((rc = gpt2_set_idx(m, eval_idx)) || (rc = gpt2_set_targets(m, eval_tgt)))
                return die(m, rc, "set input");
            if ((rc = gpt2_forward(m, &eval))) return die(m, rc, "forward");
            printf("step %4d  eval loss %.4f (held-out batch)\n", s, (double)eval);
        }
        fflush(stdout);
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
    free(eval_idx);
    free(eval_tgt);
    gpt2_destroy(m);
    return 0;
}
