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
 * the model created on the communicator's GPU takes a step with a finite
 * loss.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accrt_nccl.h"
#include "test.h"

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
        ASSERT(ACC_OK, acc_init_params(m, 1));
        ASSERT(ACC_OK, set_inputs(m));
        ASSERT(ACC_OK, acc_step(m, &loss));
        EXPECT(isfinite(loss), "loss %g: %s", (double)loss, acc_last_error(m));
        printf("one step on the GPU: loss %g\n", (double)loss);
    }
    acc_destroy(m);
    if (comm) comm->destroy(comm);
    TEST_DONE();
}
