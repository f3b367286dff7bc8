/* run_main.c - the program `acc run` links against a generated library:
 * trains it for N steps on reproducible synthetic data and prints one JSON
 * object per step and a summary. Compiled with -DACC_MODEL_DESC=<model>_desc.
 *
 * Data: i32 inputs used as indices come from one deterministic token chain
 * (c[k+1] = (5 c[k] + 3) mod bound), input i starting i positions later, so a
 * second i32 input of the same shape is the next-token target of the first;
 * f32 inputs are standard normal. The same batch every step: the loss must
 * fall. --params FILE and --inputs FILE replace the initial parameters and
 * the data (files in libaccrt's tensor format).
 *
 * Data parallel (compiled with -DACC_MPI, run by `acc run --ranks R` under
 * mpirun): every rank takes its rows of one synthetic batch of R times its
 * inputs (every input split along its first dimension, rank r's shard the
 * elements [r n, (r + 1) n) of the whole batch's), so that R ranks train on
 * the batch one rank of R times the rows would. Rank 0 prints; --dump-params
 * writes PATH on rank 0 and PATH.r<rank> on the others.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accrt.h"
#include "philox.h"
#ifdef ACC_MPI
#include "accrt_mpi.h"
#endif

const acc_model_desc *ACC_MODEL_DESC(void);

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int check(acc_model *m, int rc, const char *what) {
    if (rc == ACC_OK) return 0;
    fprintf(stderr, "acc run: %s failed: %s: %s\n", what, acc_status_string(rc), acc_last_error(m));
    return 1;
}

static int rank = 0, n_ranks = 1;

static int run(int argc, char **argv);
static void print_summary(const acc_model_desc *d, acc_model *m, long steps, const double *times, float norm0,
                          double comm_ms);

int main(int argc, char **argv) {
#ifdef ACC_MPI
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "acc run: MPI_Init failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n_ranks);
    int rc = run(argc, argv);
    /* one rank's failure ends them all (the others may wait in a collective) */
    if (rc) MPI_Abort(MPI_COMM_WORLD, rc);
    MPI_Finalize();
    return rc;
#else
    return run(argc, argv);
#endif
}

static int run(int argc, char **argv) {
    long steps = 10;
    unsigned long long seed = 1;
    const char *dump = NULL, *params = NULL, *inputs = NULL, *dump_params = NULL;
    double lr = 1e-3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps")) steps = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--dump-grads")) dump = argv[i + 1];
        else if (!strcmp(argv[i], "--lr")) lr = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--params")) params = argv[i + 1];
        else if (!strcmp(argv[i], "--inputs")) inputs = argv[i + 1];
        else if (!strcmp(argv[i], "--dump-params")) dump_params = argv[i + 1];
    }
    const acc_model_desc *d = ACC_MODEL_DESC();
    acc_options opt = {sizeof opt, ACC_API_VERSION, 0, seed};
    acc_model *m = NULL;
    int rc = acc_create(d, &opt, &m);
    if (rc) {
        fprintf(stderr, "acc run: cannot create the model: %s%s%s\n", acc_status_string(rc), m ? ": " : "",
                m ? acc_last_error(m) : "");
        acc_destroy(m);
        return 1;
    }
#ifdef ACC_MPI
    acc_comm *comm = NULL;
    rc = acc_comm_mpi(MPI_COMM_WORLD, &comm);
    if (rc) {
        fprintf(stderr, "acc run: cannot make the MPI communicator: %s\n", acc_status_string(rc));
        return 1;
    }
    if (check(m, acc_set_comm(m, comm), "set_comm")) return 1;
#endif
    if (check(m, acc_init_params(m, seed), "init_params")) return 1;
    if (params && check(m, acc_load_params(m, params), "load params")) return 1;
    if (inputs && check(m, acc_load_inputs(m, inputs), "load inputs")) return 1;
    for (int i = 0; i < d->n_inputs && !inputs; i++) {
        const acc_input_desc *in = &d->inputs[i];
        void *buf = malloc((size_t)in->elems * 4);
        if (!buf) return 1;
        int64_t k0 = (int64_t)rank * in->elems; /* this rank's shard of the whole batch */
        if (in->dtype == ACC_DT_I32) {
            int32_t *x = buf;
            int64_t bound = in->index_bound > 0 ? in->index_bound : 2;
            int64_t c = (int64_t)(seed % (unsigned long long)bound);
            for (int64_t k = 0; k < i + k0; k++) c = (5 * c + 3) % bound;
            for (int64_t k = 0; k < in->elems; k++) {
                x[k] = (int32_t)c;
                c = (5 * c + 3) % bound;
            }
        } else {
            float *x = buf;
            for (int64_t k = 0; k < in->elems; k++) {
                float u1 = philox_uniform(seed, 77, (uint32_t)i, 2 * (uint64_t)(k0 + k));
                float u2 = philox_uniform(seed, 77, (uint32_t)i, 2 * (uint64_t)(k0 + k) + 1);
                x[k] = (float)(sqrt(-2.0 * log(1.0 - (double)u1)) * cos(6.283185307179586 * (double)u2));
            }
        }
        rc = acc_set_input(m, in->name, buf, (size_t)in->elems * 4);
        free(buf);
        if (check(m, rc, "set_input")) return 1;
    }
    double *times = calloc((size_t)(steps > 0 ? steps : 1), sizeof(double));
    float norm0 = 0;
    for (long s = 0; s < steps; s++) {
        float loss;
        double t0 = now_ms();
        if (check(m, acc_step(m, &loss), "step")) return 1;
        if (s == 0 && dump && rank == 0 && check(m, acc_save_grads(m, dump), "dump-grads")) return 1;
        /* the first step's gradient norm (a limit no norm reaches: nothing scaled) */
        if (s == 0 && check(m, acc_clip_grad_norm(m, FLT_MAX, &norm0), "gradient norm")) return 1;
        if (d->has_optimizer && check(m, acc_adamw(m, (float)lr, 0.9f, 0.999f, 1e-8f, 0.0f), "adamw")) return 1;
        times[s] = now_ms() - t0;
        if (rank == 0) printf("{\"step\": %ld, \"loss\": %.6f}\n", s, (double)loss);
        fflush(stdout);
    }
    if (dump_params) {
        char path[4200];
        snprintf(path, sizeof path, rank ? "%s.r%d" : "%s", dump_params, rank);
        if (check(m, acc_save_params(m, path), "dump-params")) return 1;
    }
    qsort(times, (size_t)(steps > 0 ? steps : 0), sizeof(double), cmp_double);
    /* data parallel: the time of one step's collectives alone (the
     * gradients' buckets, issued and waited for as the step does, without
     * the backward to hide them), the median of 5 */
    double comm_ms = 0;
#ifdef ACC_MPI
    if (n_ranks > 1 && d->n_buckets > 0) {
        float *g0;
        int64_t e0;
        if (check(m, acc_param(m, d->params[0].name, &g0, &e0), "param")) return 1;
        float *arena = (float *)((unsigned char *)g0 - d->params[0].offset);
        double t[5];
        for (int r = 0; r < 5; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now_ms();
            for (int k = 0; k < d->n_buckets; k++) {
                const acc_bucket *b = &d->buckets[k];
                int64_t count = b->bytes / 4 / (d->zero ? n_ranks : 1);
                rc = comm->issue(comm, k, d->zero ? ACC_COLL_REDUCE_SCATTER : ACC_COLL_ALLREDUCE,
                                 arena + b->grad_offset / 4, count, NULL);
                if (rc) return check(m, rc, "collective");
            }
            for (int k = 0; k < d->n_buckets; k++)
                if ((rc = comm->wait(comm, k))) return check(m, rc, "collective");
            t[r] = now_ms() - t0;
        }
        qsort(t, 5, sizeof *t, cmp_double);
        comm_ms = t[2];
    }
#endif
    if (!rank) { /* rank 0 speaks for all: they run one plan */
        print_summary(d, m, steps, times, norm0, comm_ms);
    }
    free(times);
    acc_destroy(m);
#ifdef ACC_MPI
    acc_comm_destroy(comm);
#endif
    return 0;
}

/* The summary line: the plan's figures and the counters after the run. */
static void print_summary(const acc_model_desc *d, acc_model *m, long steps, const double *times, float norm0,
                          double comm_ms) {
    acc_counters c;
    acc_get_counters(m, &c);
    double n = c.steps ? (double)c.steps : 1;
    printf("{\"model\": \"%s\", \"steps\": %ld, \"peak_bytes_planned\": %lld, \"peak_bytes_measured\": %lld, "
           "\"step_ms_median\": %.3f, \"fwd_ms_mean\": %.3f, \"bwd_ms_mean\": %.3f, \"opt_ms_mean\": %.3f",
           d->model_name, steps, (long long)d->planned_peak_bytes, (long long)c.peak_bytes_measured,
           steps > 0 ? times[steps / 2] : 0.0, c.total_ms[ACC_PHASE_FWD] / n, c.total_ms[ACC_PHASE_BWD] / n,
           c.total_ms[ACC_PHASE_OPT] / n);
    if (d->host_bytes || d->optimizer_host_bytes) /* offload, host optimizer state: planned and held */
        printf(", \"host_bytes_planned\": %lld, \"host_bytes_measured\": %lld",
               (long long)(d->host_bytes + d->optimizer_host_bytes), (long long)c.host_bytes);
    if (steps > 0) printf(", \"grad_norm0\": %.9g", (double)norm0);
    if (n_ranks > 1)
        printf(", \"ranks\": %d, \"zero\": %d, \"buckets\": %d, \"comm_ms_alone\": %.3f", n_ranks, d->zero,
               d->n_buckets, comm_ms);
    printf("}\n");
}
