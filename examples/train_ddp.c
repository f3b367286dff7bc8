/* train_ddp.c - data-parallel training with an acc-generated library under
 * mpirun: every rank runs the same plan on its share of each batch, the
 * library reduces the gradients over the ranks in buckets while the
 * backward runs, and every rank applies the same update. The corpus and the
 * batches are those of examples/train.c (byte-level lines of arithmetic),
 * drawn by the same generator on every rank: a step's whole batch is
 * R x B windows, rank r trains on windows r B .. (r + 1) B - 1, so R ranks
 * compute the step one rank would on the whole batch.
 *
 * Usage: mpirun -np R train_ddp [STEPS [LR]] [--dump-grads FILE]
 *   STEPS updates (200), LR the peak learning rate (3e-3; linear warmup over
 *   STEPS / 10, then cosine to LR / 10); --dump-grads writes the reduced
 *   gradients of the first step (rank 0) in libaccrt's tensor format.
 *
 * Build (after `acc compile models/gpt2.acdsl --target cpu -D V=256 -D L=2
 * -D C=64 -D H=4 -D T=32 --batch 8 --ranks 2 --budget 256M -o out/ddp`, the
 * batch of 8 the whole batch of the 2 ranks, 4 rows each):
 *   mpicc -O2 -fopenmp examples/train_ddp.c -Iout/ddp out/ddp/libgpt2.a \
 *      out/ddp/libaccrt_mpi.a out/ddp/libaccrt.a -lopenblas -lm -o train_ddp
 *   OMP_NUM_THREADS=1 mpirun -np 2 ./train_ddp
 * With --zero 1 in the compile each rank keeps the AdamW state of 1/R of the
 * parameters; the trainer does not change.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accrt_mpi.h"
#include "gpt2.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint32_t rng(void) { /* xorshift64*, the same sequence on every rank */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

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

static int rank, ranks;

/* One rank's failure ends the job: the others may wait in a collective. */
static void die(gpt2_model *m, int rc, const char *what) {
    fprintf(stderr, "train_ddp: rank %d: %s: %s: %s\n", rank, what, gpt2_status_string(rc),
            m ? gpt2_last_error(m) : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The step's whole batch of ranks x B windows drawn in order (every rank
 * draws all of them, to stay in step); this rank keeps its B. */
static void sample(const char *text, size_t hi, int64_t B, int64_t T, int32_t *idx, int32_t *tgt) {
    for (int64_t w = 0; w < ranks * B; w++) {
        size_t off = rng() % (hi - (size_t)T - 1);
        if (w / B != rank) continue;
        int64_t b = w % B;
        for (int64_t t = 0; t < T; t++) {
            idx[b * T + t] = (unsigned char)text[off + (size_t)t];
            tgt[b * T + t] = (unsigned char)text[off + (size_t)t + 1];
        }
    }
}

static float lr_at(int s, int n, int warmup, float lr) {
    if (s < warmup) return lr * (float)(s + 1) / (float)warmup;
    double done = n - warmup > 1 ? (double)(s - warmup) / (double)(n - warmup - 1) : 1.0;
    return (float)(0.1 * lr + 0.45 * lr * (1.0 + cos(3.141592653589793 * done)));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int steps = 200, npos = 0;
    float lr = 3e-3f;
    const char *dump = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dump-grads") && i + 1 < argc) dump = argv[++i];
        else if (argv[i][0] != '-' && npos == 0) steps = atoi(argv[i]), npos++;
        else if (argv[i][0] != '-' && npos == 1) lr = (float)atof(argv[i]), npos++;
        else {
            if (!rank) fprintf(stderr, "usage: mpirun -np R train_ddp [STEPS [LR]] [--dump-grads FILE]\n");
            MPI_Finalize();
            return 2;
        }
    }
    const acc_model_desc *d = gpt2_desc();
    int64_t B = 0, T = 0;
    for (int i = 0; i < d->n_inputs; i++)
        if (!strcmp(d->inputs[i].name, "idx")) B = d->inputs[i].dim[0], T = d->inputs[i].dim[1];
    if (B <= 0 || T <= 0) die(NULL, ACC_ERR_NAME, "the library has no input 'idx' of shape (B, T)");

    /* the communicator from the launcher's, handed to the model: it checks
     * that the library was compiled for this many ranks and that every rank
     * runs the same plan */
    acc_comm *comm = NULL;
    int rc = acc_comm_mpi(MPI_COMM_WORLD, &comm);
    if (rc) die(NULL, rc, "acc_comm_mpi");
    acc_options opt = {sizeof opt, ACC_API_VERSION, 0, 1234};
    gpt2_model *m = NULL;
    if ((rc = gpt2_create(&opt, &m))) die(m, rc, "create");
    if ((rc = gpt2_set_comm(m, comm))) die(m, rc, "set_comm");
    if ((rc = gpt2_init_params(m, 42))) die(m, rc, "init"); /* one seed: the same parameters on every rank */

    size_t n = 1 << 20;
    char *text = make_corpus(n);
    int32_t *idx = malloc((size_t)(B * T) * 4), *tgt = malloc((size_t)(B * T) * 4);
    if (!text || !idx || !tgt) die(m, ACC_ERR_NOMEM, "buffers");
    if (!rank)
        printf("train_ddp: model %s on %d rank%s, B=%lld per rank (%lld a step) T=%lld, arena %.1f MiB per rank%s\n",
               d->model_name, ranks, ranks > 1 ? "s" : "", (long long)B, (long long)(B * ranks), (long long)T,
               (double)d->arena_bytes / (1 << 20), d->zero ? ", ZeRO-1" : "");
    double t0 = now_s(), first = 0, last = 0;
    for (int s = 0; s < steps; s++) {
        float loss; /* the whole batch's: the library reduces it with the gradients */
        sample(text, n, B, T, idx, tgt);
        if ((rc = gpt2_set_idx(m, idx)) || (rc = gpt2_set_targets(m, tgt))) die(m, rc, "set input");
        if ((rc = gpt2_step(m, &loss))) die(m, rc, "step");
        if (s == 0 && dump && !rank && (rc = acc_save_grads(m, dump))) die(m, rc, "dump-grads");
        float lr_s = lr_at(s, steps, steps / 10 > 0 ? steps / 10 : 1, lr);
        if ((rc = gpt2_adamw(m, lr_s, 0.9f, 0.95f, 1e-8f, 0.0f))) die(m, rc, "adamw");
        if (s == 0) first = loss;
        last = loss;
        if (!rank && (s % 25 == 0 || s == steps - 1))
            printf("step %4d  loss %.4f  lr %.2e  %.0f tokens/s\n", s, (double)loss, (double)lr_s,
                   (double)(s + 1) * (double)(ranks * B * T) / (now_s() - t0));
        fflush(stdout);
    }
    acc_counters c;
    gpt2_counters(m, &c);
    if (!rank)
        printf("train_ddp: loss %.4f -> %.4f over %d steps; peak memory %lld bytes per rank (planned %lld)\n", first,
               last, steps, (long long)c.peak_bytes_measured, (long long)d->planned_peak_bytes);
    free(text);
    free(idx);
    free(tgt);
    gpt2_destroy(m);
    acc_comm_destroy(comm);
    MPI_Finalize();
    return 0;
}
