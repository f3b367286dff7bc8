/* nccl_trainer.c - a data-parallel trainer's first calls against a library
 * compiled for the cuda target and libaccrt_nccl with the real libnccl (see
 * nccl_link.sh): -DMODEL=<name> and -include <name>.h.
 *
 * Usage: nccl_trainer nogpu | gpu.
 * "nogpu" (a machine without a GPU): it links, and every call fails with a
 * status and a sentence instead of crashing: the unique id (NCCL may make
 * one without a GPU), the communicator (ACC_ERR_NO_DEVICE, the driver named)
 * and the model (ACC_ERR_NO_DEVICE).
 * "gpu" (one GPU): a one-rank NCCL group: the id, the communicator on GPU
 * 0, allreduce_host (sum, max and min over one rank: the values back), then
 * the model created on the communicator's GPU takes the communicator
 * (acc_set_comm: the plans' hashes through NCCL) and a step with a finite
 * loss; then the device layer's collectives alone (a one-rank group cannot
 * reduce anything, so this checks the path, not a sum): kernels, an
 * all-reduce on the collectives' stream forked and joined by events, more
 * kernels, in the run that launches directly, the one captured into a CUDA
 * graph (NCCL's kernels inside it) and its replays, the values those of the
 * kernels; and a host-memory communicator refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accrt_nccl.h"
#include "device.h"
#include "test.h"

extern const acc_device acc_device_cuda;

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define W(name) CAT(MODEL, name) /* the generated wrapper <model>_<name> */

static int has(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

/* every input: zeros (index 0 is in range for any index input) */
static int set_inputs(acc_model *m) {
    const acc_model_desc *d = acc_describe(m);
    for (int i = 0; i < d->n_inputs; i++) {
        void *x = calloc((size_t)d->inputs[i].elems, 4);
        int rc = x ? acc_set_input(m, d->inputs[i].name, x, (size_t)d->inputs[i].elems * 4) : ACC_ERR_NOMEM;
        free(x);
        if (rc) return rc;
    }
    return ACC_OK;
}

typedef struct {
    acc_dev *d;
    acc_comm *comm;
    float *g;
    int64_t n;
} CollRun;

/* x *= 2, all-reduce (one rank: unchanged), x *= 3 */
static int coll_fn(void *arg) {
    CollRun *r = arg;
    dev_scale(r->d, r->g, r->n, 2.0f);
    acc_device_cuda.coll_issue(r->d, r->comm, 0, ACC_COLL_ALLREDUCE, r->g, r->n);
    acc_device_cuda.coll_wait(r->d, r->comm, 0);
    return dev_scale(r->d, r->g, r->n, 3.0f);
}

static int host_issue(acc_comm *c, int id, int kind, float *buf, int64_t count, void *stream) {
    (void)c, (void)id, (void)kind, (void)buf, (void)count, (void)stream;
    return ACC_OK;
}

/* The device layer's collectives on the GPU, through comm (one rank). */
static void check_device_collectives(acc_comm *comm) {
    acc_model_desc desc = *W(desc)(); /* its kernels and workspace; one bucket's ids */
    desc.n_buckets = 1;
    acc_dev *d = NULL;
    unsigned char *arena = NULL;
    int64_t extra = 0;
    int rc = acc_device_cuda.open(&desc, &d, &arena, &extra);
    EXPECT(rc == ACC_OK, "device: %s", d ? dev_error(d) : "");
    if (rc) {
        if (d) acc_device_cuda.close(d);
        return;
    }
    enum { N = 1000 };
    float x[N], got[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 13) - 6.0f;
    CollRun r = {d, comm, (float *)(void *)arena, N};
    acc_scalars sc;
    memset(&sc, 0, sizeof sc);
    double ms[ACC_PHASE_COUNT];
    for (int run = 0; run < 4; run++) { /* direct, captured, replayed twice */
        ASSERT(ACC_OK, acc_device_cuda.upload(d, arena, x, sizeof x));
        rc = acc_device_cuda.run(d, ACC_GRAPH_STEP_REDUCE, coll_fn, &r, &sc);
        if (!rc) rc = acc_device_cuda.finish(d, ms);
        EXPECT(rc == ACC_OK, "run %d: %s", run, dev_error(d));
        ASSERT(ACC_OK, acc_device_cuda.download(d, got, arena, sizeof got));
        int bad = 0;
        for (int i = 0; i < N; i++) bad += got[i] != x[i] * 6.0f;
        EXPECT(!bad, "run %d: %d of %d values are not the kernels' around the all-reduce", run, bad, N);
    }
    acc_device_cuda.close(d);
    /* a host-memory communicator on the GPU: refused */
    acc_comm host = {.name = "host", .rank = 0, .size = 1, .device_memory = 0, .issue = host_issue};
    d = NULL;
    if (acc_device_cuda.open(&desc, &d, &arena, &extra) == ACC_OK) {
        r.d = d, r.comm = &host, r.g = (float *)(void *)arena;
        ASSERT(ACC_ERR_COMM, acc_device_cuda.run(d, ACC_GRAPH_STEP_REDUCE, coll_fn, &r, &sc));
        EXPECT(has(dev_error(d), "host memory"), "refusal: \"%s\"", dev_error(d));
    }
    if (d) acc_device_cuda.close(d);
}

int main(int argc, char **argv) {
    int gpu = argc > 1 && !strcmp(argv[1], "gpu");
    unsigned char id[ACC_NCCL_ID_BYTES];
    int rc = acc_comm_nccl_unique_id(id, sizeof id);
    printf("unique id: %s\n", acc_status_string(rc));
    if (gpu) ASSERT(ACC_OK, rc);
    else ASSERT_TRUE(rc == ACC_OK || rc == ACC_ERR_NO_DEVICE || rc == ACC_ERR_COMM);
    if (rc) memset(id, 0, sizeof id); /* create must still fail cleanly */

    acc_comm *comm = NULL;
    rc = acc_comm_nccl_create(0, 1, id, 0, &comm);
    printf("communicator: %s: %s\n", acc_status_string(rc), comm ? comm->error(comm) : "");
    if (!gpu) {
        ASSERT(ACC_ERR_NO_DEVICE, rc);
        EXPECT(comm && has(comm->error(comm), "driver"), "no sentence about the driver");
    } else if (ASSERT(ACC_OK, rc)) {
        ASSERT(0, comm->rank);
        ASSERT(1, comm->size);
        for (int op = ACC_RED_SUM; op <= ACC_RED_MIN; op++) {
            double x[3] = {1.5, -2.0, 1e300};
            ASSERT(ACC_OK, comm->allreduce_host(comm, x, 3, op));
            EXPECT(x[0] == 1.5 && x[1] == -2.0 && x[2] == 1e300, "one rank's allreduce_host (op %d) changed x: %s", op,
                   comm->error(comm));
        }
    }

    acc_options opt = {sizeof opt, ACC_API_VERSION, 0, 7};
    acc_model *m = NULL;
    rc = W(create)(&opt, &m);
    printf("model: %s: %s\n", acc_status_string(rc), acc_last_error(m));
    if (!gpu) {
        ASSERT(ACC_ERR_NO_DEVICE, rc);
        ASSERT_TRUE(*acc_last_error(m) != '\0');
    } else if (ASSERT(ACC_OK, rc)) {
        float loss = NAN;
        if (comm) ASSERT(ACC_OK, W(set_comm)(m, comm));
        ASSERT(ACC_OK, acc_init_params(m, 1));
        ASSERT(ACC_OK, set_inputs(m));
        ASSERT(ACC_OK, acc_step(m, &loss));
        EXPECT(isfinite(loss), "loss %g: %s", (double)loss, acc_last_error(m));
        printf("one step on the GPU: loss %g\n", (double)loss);
    }
    acc_destroy(m);
    if (gpu && comm) check_device_collectives(comm);
    acc_comm_destroy(comm);
    TEST_DONE();
}
