/* test_nccl_comm.c - libaccrt_nccl against a stand-in libnccl (fake_nccl.c,
 * named by ACC_NCCL_LIB), no GPU needed:
 *
 * - argument checks: NULL and short id buffers, NULL out, ranks out of
 *   range, a NULL NCCL communicator, each with its status and a message;
 * - the unique id is NCCL's bytes;
 * - a wrapped communicator takes NCCL's rank (1), size (4) and says device
 *   memory; its collectives become NCCL's calls: the all-reduce in place,
 *   the reduce-scatter from the whole buffer into this rank's piece (buf +
 *   rank * count), the all-gather from this rank's piece into the whole
 *   buffer, each fp32, sum, on the stream given; an unknown kind refused;
 *   NCCL's failure as ACC_ERR_COMM with NCCL's error string and last error;
 *   the wrapper's destroy leaves the trainer's communicator alone;
 * - the check that bounds the device's waits: NCCL's asynchronous error
 *   or the timeout (timeout_s from ACC_COMM_TIMEOUT, an invalid value
 *   refused) give the communicator up, say so and what the trainer must
 *   do, and every later call fails; the trainer's communicator is not
 *   aborted;
 * - the driver part: without a GPU, allreduce_host and create say so
 *   (ACC_ERR_NO_DEVICE and a sentence); with one, they succeed.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "accrt_nccl.h"
#include "fake_nccl.h"
#include "test.h"

/* ncclDataType_t and ncclRedOp_t values (nccl.h) */
enum { NCCL_FLOAT32 = 7, NCCL_FLOAT64 = 8, NCCL_SUM = 0 };

static FakeNcclLog *fake_log(void) {
    const char *lib = getenv("ACC_NCCL_LIB");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    FakeNcclLog *(*get)(void) = NULL;
    if (h) *(void **)&get = dlsym(h, "fake_nccl_log");
    return get ? get() : NULL;
}

static int has(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

int main(void) {
    FakeNcclLog *log = fake_log();
    EXPECT(log != NULL, "ACC_NCCL_LIB must name fake_nccl's library (the test's CMake sets it)");
    if (!log) TEST_DONE();

    unsigned char id[ACC_NCCL_ID_BYTES + 8];
    ASSERT(ACC_ERR_NULL, acc_comm_nccl_unique_id(NULL, sizeof id));
    ASSERT(ACC_ERR_SIZE, acc_comm_nccl_unique_id(id, ACC_NCCL_ID_BYTES - 1));
    memset(id, 0, sizeof id);
    ASSERT(ACC_OK, acc_comm_nccl_unique_id(id, sizeof id));
    ASSERT(0x5a, id[0]);
    ASSERT(0x5a, id[ACC_NCCL_ID_BYTES - 1]);
    ASSERT(0, id[ACC_NCCL_ID_BYTES]);

    acc_comm *c = NULL;
    ASSERT(ACC_ERR_NULL, acc_comm_nccl_create(0, 1, id, 0, NULL));
    ASSERT(ACC_ERR_ARG, acc_comm_nccl_create(2, 2, id, 0, &c));
    EXPECT(c && has(c->error(c), "rank 2 of 2"), "create(rank 2 of 2): \"%s\"", c ? c->error(c) : "no comm");
    if (c) c->destroy(c);
    ASSERT(ACC_ERR_NULL, acc_comm_nccl_create(0, 1, NULL, 0, &c));
    if (c) c->destroy(c);
    ASSERT(ACC_ERR_NULL, acc_comm_nccl_wrap(NULL, NULL));
    ASSERT(ACC_ERR_NULL, acc_comm_nccl_wrap(NULL, &c));
    EXPECT(c && has(c->error(c), "no NCCL communicator"), "wrap(NULL): \"%s\"", c ? c->error(c) : "no comm");
    if (c) c->destroy(c);

    /* the trainer's communicator */
    c = NULL;
    ASSERT(ACC_OK, acc_comm_nccl_wrap((struct ncclComm *)(void *)log, &c));
    if (!c) TEST_DONE();
    ASSERT_STR("nccl", c->name);
    ASSERT(1, c->rank);
    ASSERT(4, c->size);
    ASSERT(1, c->device_memory);
    float buf[40];
    void *stream = (void *)&buf[39]; /* any pointer: passed through */
    ASSERT(ACC_OK, c->issue(c, 0, ACC_COLL_ALLREDUCE, buf, 10, stream));
    ASSERT_STR("allreduce", log->call);
    ASSERT_TRUE(log->send == buf && log->recv == buf && log->stream == stream);
    ASSERT(10, log->count);
    ASSERT(NCCL_FLOAT32, log->dtype);
    ASSERT(NCCL_SUM, log->op);
    ASSERT(ACC_OK, c->issue(c, 1, ACC_COLL_REDUCE_SCATTER, buf, 10, stream));
    ASSERT_STR("reducescatter", log->call);
    ASSERT_TRUE(log->send == buf && log->recv == buf + 10 && log->stream == stream);
    ASSERT(10, log->count);
    ASSERT(NCCL_FLOAT32, log->dtype);
    ASSERT(NCCL_SUM, log->op);
    ASSERT(ACC_OK, c->issue(c, 2, ACC_COLL_ALLGATHER, buf, 10, stream));
    ASSERT_STR("allgather", log->call);
    ASSERT_TRUE(log->send == buf + 10 && log->recv == buf && log->stream == stream);
    ASSERT(10, log->count);
    ASSERT(NCCL_FLOAT32, log->dtype);
    ASSERT(ACC_OK, c->wait(c, 2));
    ASSERT(ACC_ERR_ARG, c->issue(c, 3, 7, buf, 10, stream));
    EXPECT(has(c->error(c), "unknown kind 7"), "unknown kind: \"%s\"", c->error(c));
    ASSERT(ACC_ERR_ARG, c->issue(c, 3, ACC_COLL_ALLREDUCE, NULL, 10, stream));
    ASSERT(ACC_ERR_COMM, c->issue(c, 3, ACC_COLL_ALLREDUCE, buf, 13, stream));
    EXPECT(has(c->error(c), "fake invalid argument") && has(c->error(c), "a count of 13 refused"),
           "NCCL's failure: \"%s\"", c->error(c));

    /* allreduce_host needs the driver: here none (no GPU), elsewhere it works */
    double x[3] = {1, 2, 3};
    ASSERT(ACC_ERR_ARG, c->allreduce_host(c, x, 3, 9));
    int rc = c->allreduce_host(c, x, 3, ACC_RED_SUM);
    if (rc == ACC_OK) {
        ASSERT(NCCL_FLOAT64, log->dtype);
        ASSERT(3, log->count);
        ASSERT_TRUE(x[0] == 1 && x[1] == 2 && x[2] == 3); /* the fake reduces nothing */
    } else {
        ASSERT(ACC_ERR_NO_DEVICE, rc);
        EXPECT(has(c->error(c), "libcuda"), "allreduce_host without a driver: \"%s\"", c->error(c));
        ASSERT(ACC_ERR_NO_DEVICE, c->allreduce_host(c, x, 3, ACC_RED_SUM)); /* the same, without retrying */
    }
    c->destroy(c);
    ASSERT(0, log->destroyed);

    /* the waits' check: an asynchronous error */
    c = NULL;
    ASSERT(ACC_OK, acc_comm_nccl_wrap((struct ncclComm *)(void *)log, &c));
    if (!c) TEST_DONE();
    ASSERT_TRUE(c->check != NULL && c->timeout_s == 600);
    ASSERT(ACC_OK, c->check(c, 0.5));
    ASSERT(1, log->async_polls);
    log->async = 7; /* ncclInProgress: a nonblocking call still going, not an error */
    ASSERT(ACC_OK, c->check(c, 0.5));
    log->async = 6; /* ncclRemoteError */
    ASSERT(ACC_ERR_COMM, c->check(c, 0.5));
    EXPECT(has(c->error(c), "asynchronous error: fake remote error") && has(c->error(c), "ncclCommAbort"),
           "async error: \"%s\"", c->error(c));
    ASSERT(ACC_ERR_COMM, c->issue(c, 0, ACC_COLL_ALLREDUCE, buf, 10, stream));
    ASSERT(ACC_ERR_COMM, c->allreduce_host(c, x, 3, ACC_RED_SUM));
    ASSERT(ACC_ERR_COMM, c->check(c, 0.5));
    EXPECT(has(c->error(c), "given up"), "after giving up: \"%s\"", c->error(c));
    log->async = 0;
    c->destroy(c);
    ASSERT(0, log->destroyed); /* the trainer's: not aborted */

    /* the waits' check: the timeout, from the environment */
    setenv("ACC_COMM_TIMEOUT", "2.5", 1);
    c = NULL;
    ASSERT(ACC_OK, acc_comm_nccl_wrap((struct ncclComm *)(void *)log, &c));
    if (!c) TEST_DONE();
    ASSERT_TRUE(c->timeout_s == 2.5);
    ASSERT(ACC_OK, c->check(c, 2.4));
    ASSERT(ACC_ERR_COMM, c->check(c, 2.6));
    EXPECT(has(c->error(c), "did not complete within 2.5 s") && has(c->error(c), "ACC_COMM_TIMEOUT"), "timeout: \"%s\"",
           c->error(c));
    c->destroy(c);
    setenv("ACC_COMM_TIMEOUT", "0", 1); /* no limit */
    c = NULL;
    ASSERT(ACC_OK, acc_comm_nccl_wrap((struct ncclComm *)(void *)log, &c));
    ASSERT(ACC_OK, c ? c->check(c, 1e6) : -1);
    if (c) c->destroy(c);
    setenv("ACC_COMM_TIMEOUT", "ten", 1);
    c = NULL;
    ASSERT(ACC_ERR_ARG, acc_comm_nccl_wrap((struct ncclComm *)(void *)log, &c));
    EXPECT(c && has(c->error(c), "ACC_COMM_TIMEOUT='ten'"), "bad timeout: \"%s\"", c ? c->error(c) : "no comm");
    if (c) c->destroy(c);
    ASSERT(-1, (int)acc_comm_timeout());
    unsetenv("ACC_COMM_TIMEOUT");
    ASSERT(600, (int)acc_comm_timeout());
    ASSERT(0, log->destroyed);

    /* a communicator of acc's own: NCCL initialised after the GPU */
    c = NULL;
    rc = acc_comm_nccl_create(0, 1, id, 0, &c);
    if (rc == ACC_OK) {
        ASSERT(1, log->inits);
        ASSERT(0, c->rank);
        ASSERT(1, c->size);
    } else {
        ASSERT(ACC_ERR_NO_DEVICE, rc);
        ASSERT(0, log->inits);
        EXPECT(c && has(c->error(c), "no NVIDIA driver"), "create without a driver: \"%s\"",
               c ? c->error(c) : "no comm");
    }
    if (c) c->destroy(c);
    ASSERT(rc == ACC_OK, log->destroyed);
    TEST_DONE();
}
