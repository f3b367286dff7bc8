/* ddp_api.c - the data-parallel calls of the generated API, under mpirun
 * -np 2 against a library compiled with --ranks 2 (MODEL_DESC) and another
 * model's (OTHER_DESC, also --ranks 2):
 *   - acc_step before acc_set_comm is ACC_ERR_STATE (and acc_adamw with
 *     ZeRO-1); a communicator of the wrong size is ACC_ERR_ARG;
 *   - ranks running different plans (rank 1 with the other model) get
 *     ACC_ERR_COMM from acc_set_comm on every rank;
 *   - gradient accumulation with acc_set_grad_sync: a call that does not
 *     reduce, then one that does, gives twice one reduced step's gradients
 *     (relative 2-norm 1e-6), and the losses of both ranks are the whole
 *     batch's, equal on every rank;
 *   - with ZeRO-2 acc_set_grad_sync(m, 0) and reading a gradient are
 *     ACC_ERR_STATE (a rank keeps only its shard of the reduced gradients);
 *   - acc_clip_grad_norm's norm is printed ("norm N") for the script to
 *     compare across ZeRO-0, -1 and -2 builds, and is the same on every rank;
 *   - with the argument "late", a rank late by more than the
 *     communicator's timeout_s: the other's step returns ACC_ERR_COMM
 *     saying so within a few seconds instead of waiting for it, and so does
 *     the late rank's, whose last collective the first never joins; neither
 *     hangs. MPI cannot cancel a collective, and those given up still point
 *     into the models' arenas, so the job then ends as a trainer's must:
 *     MPI_Abort (exit 3, which the script expects).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accrt.h"
#include "accrt_mpi.h"

const acc_model_desc *MODEL_DESC(void);
const acc_model_desc *OTHER_DESC(void);

static int rank;

#define CHECK(cond, ...)                                 \
    do {                                                 \
        if (!(cond)) {                                   \
            fprintf(stderr, "ddp_api: rank %d: ", rank); \
            fprintf(stderr, __VA_ARGS__);                \
            fprintf(stderr, "\n");                       \
            MPI_Abort(MPI_COMM_WORLD, 1);                \
        }                                                \
    } while (0)

static acc_model *make(const acc_model_desc *d) {
    acc_options opt = {sizeof opt, ACC_API_VERSION, 1, 7};
    acc_model *m = NULL;
    int rc = acc_create(d, &opt, &m);
    CHECK(rc == ACC_OK, "acc_create: %s", acc_status_string(rc));
    CHECK(acc_init_params(m, 3) == ACC_OK, "init: %s", acc_last_error(m));
    for (int i = 0; i < d->n_inputs; i++) { /* this rank's rows: tokens from a rank-dependent chain */
        const acc_input_desc *in = &d->inputs[i];
        int32_t *x = malloc((size_t)in->elems * 4);
        for (int64_t k = 0; k < in->elems; k++) {
            int64_t bound = in->index_bound > 0 ? in->index_bound : 2;
            int64_t v = (7 * (k + rank * in->elems) + 3 * i + 1) % bound;
            if (in->dtype == ACC_DT_I32) x[k] = (int32_t)v;
            else ((float *)x)[k] = (float)v / (float)bound - 0.5f;
        }
        CHECK(acc_set_input(m, in->name, x, (size_t)in->elems * 4) == ACC_OK, "set_input: %s", acc_last_error(m));
        free(x);
    }
    return m;
}

/* Every parameter gradient, concatenated (malloc'ed). */
static float *grads(acc_model *m, int64_t *n) {
    const acc_model_desc *d = acc_describe(m);
    *n = 0;
    for (int p = 0; p < d->n_params; p++) *n += d->params[p].elems;
    float *g = malloc((size_t)*n * 4), *at = g;
    for (int p = 0; p < d->n_params; p++) {
        CHECK(acc_read(m, d->params[p].name, 1, at, (size_t)d->params[p].elems * 4) == ACC_OK, "read");
        at += d->params[p].elems;
    }
    return g;
}

/* The "late" run: rank 1 starts its step 3 s after rank 0, whose
 * communicator waits 1 s. */
static int late_rank(const acc_model_desc *d) {
    acc_comm *late = NULL;
    CHECK(acc_comm_mpi(MPI_COMM_WORLD, &late) == ACC_OK, "acc_comm_mpi");
    late->timeout_s = 1.0;
    acc_model *y = make(d);
    CHECK(acc_set_comm(y, late) == ACC_OK, "set_comm: %s", acc_last_error(y));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) nanosleep(&(struct timespec){3, 0}, NULL);
    time_t t0 = time(NULL);
    float loss;
    int rc = acc_step(y, &loss);
    CHECK(rc == ACC_ERR_COMM, "a step with a late rank: %s, not ACC_ERR_COMM", acc_status_string(rc));
    CHECK(strstr(acc_last_error(y), "did not complete within 1 s"), "message: %s", acc_last_error(y));
    CHECK(time(NULL) - t0 <= 10, "the step gave up after %ld s", (long)(time(NULL) - t0));
    rc = acc_step(y, &loss);
    CHECK(rc == ACC_ERR_COMM && strstr(acc_last_error(y), "given up"), "a step after: %s", acc_last_error(y));
    printf("rank %d: gave up: %s\n", rank, acc_last_error(y));
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 3;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run under mpirun -np 2");
    acc_comm *world = NULL, *self = NULL;
    CHECK(acc_comm_mpi(MPI_COMM_WORLD, &world) == ACC_OK && acc_comm_mpi(MPI_COMM_SELF, &self) == ACC_OK,
          "acc_comm_mpi");
    const acc_model_desc *d = MODEL_DESC();
    float loss, loss2;
    if (argc > 1 && !strcmp(argv[1], "late")) return late_rank(d);

    /* out of order, the wrong size */
    acc_model *m = make(d);
    CHECK(acc_step(m, &loss) == ACC_ERR_STATE, "a step before acc_set_comm was not ACC_ERR_STATE");
    if (d->zero) CHECK(acc_adamw(m, 1e-3f, 0.9f, 0.999f, 1e-8f, 0) == ACC_ERR_STATE, "ZeRO adamw before set_comm");
    CHECK(acc_set_comm(m, self) == ACC_ERR_ARG, "a 1-rank communicator was not ACC_ERR_ARG");
    CHECK(strstr(acc_last_error(m), "compiled for 2 ranks"), "message: %s", acc_last_error(m));
    CHECK(acc_set_grad_sync(m, 2) == ACC_ERR_ARG, "acc_set_grad_sync(2)");

    /* different plans on the ranks */
    acc_model *x = make(rank ? OTHER_DESC() : d);
    CHECK(acc_set_comm(x, world) == ACC_ERR_COMM, "different plans were not ACC_ERR_COMM");
    CHECK(strstr(acc_last_error(x), "different plans"), "message: %s", acc_last_error(x));
    acc_destroy(x);

    /* accumulation: no reduction, then the reduction of the sum */
    CHECK(acc_set_comm(m, world) == ACC_OK, "set_comm: %s", acc_last_error(m));
    CHECK(acc_step(m, &loss) == ACC_OK, "step: %s", acc_last_error(m));
    float other = loss;
    MPI_Bcast(&other, 1, MPI_FLOAT, 1, MPI_COMM_WORLD);
    CHECK(other == loss, "the ranks' losses differ: %.9g and %.9g", (double)loss, (double)other);
    int64_t n;
    float *one = d->zero ? NULL : grads(m, &n);
    if (d->zero == 2) { /* no gradients of its own: every step reduces, none can be read */
        CHECK(acc_set_grad_sync(m, 0) == ACC_ERR_STATE, "ZeRO-2: acc_set_grad_sync(0) was accepted");
        float g;
        CHECK(acc_read(m, d->params[0].name, 1, &g, sizeof g) == ACC_ERR_STATE, "ZeRO-2: a gradient was read");
    } else {
        CHECK(acc_set_grad_sync(m, 0) == ACC_OK, "grad_sync 0");
        CHECK(acc_forward_backward(m, &loss2, 0) == ACC_OK, "fb: %s", acc_last_error(m));
        CHECK(acc_set_grad_sync(m, 1) == ACC_OK, "grad_sync 1");
        CHECK(acc_forward_backward(m, &loss2, 1) == ACC_OK, "fb accumulate: %s", acc_last_error(m));
        CHECK(fabsf(loss2 - loss) <= 1e-6f * fabsf(loss), "the reduced loss %.9g != the step's %.9g", (double)loss2,
              (double)loss);
    }
    if (one) { /* ZeRO-1 holds only its pieces reduced: compared through the norm below */
        float *two = grads(m, &n);
        double num = 0, den = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = (double)two[i] - 2.0 * one[i];
            num += e * e, den += 4.0 * (double)one[i] * one[i];
        }
        CHECK(sqrt(num) <= 1e-6 * sqrt(den), "accumulated gradients are not twice one step's: %.3g", sqrt(num / den));
        free(two);
        free(one);
    }
    /* the norm of one reduced step, the same on every rank */
    CHECK(acc_step(m, &loss) == ACC_OK, "step: %s", acc_last_error(m));
    float norm;
    CHECK(acc_clip_grad_norm(m, 1e30f, &norm) == ACC_OK, "clip: %s", acc_last_error(m));
    float norm1 = norm;
    MPI_Bcast(&norm1, 1, MPI_FLOAT, 1, MPI_COMM_WORLD);
    CHECK(norm1 == norm, "the ranks' norms differ: %.9g and %.9g", (double)norm, (double)norm1);
    CHECK(acc_adamw(m, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f) == ACC_OK, "adamw: %s", acc_last_error(m));
    if (rank == 0) printf("norm %.9g\nloss %.9g\n", (double)norm, (double)loss);

    acc_destroy(m);
    acc_comm_destroy(world);
    acc_comm_destroy(self);
    MPI_Finalize();
    return 0;
}
