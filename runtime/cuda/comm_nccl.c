/* comm_nccl.c - acc_comm over NCCL (libaccrt_nccl): the cuda target's
 * data-parallel collectives, fp32 sums in device memory, each enqueued on
 * the stream the device layer gives it (dev_cuda.c: a stream of the
 * collectives' own), so they are ordered by the stream alone and may be
 * captured into a CUDA graph.
 *
 * libnccl and the driver are loaded with dlopen (as dev_cuda.c loads the
 * driver and cuBLAS) when a communicator is made: a trainer linked with
 * this library starts on a machine without them and gets a status code with
 * a sentence. Not here: the choice of buckets and the order of the
 * collectives (the plan and the runtime), the launcher (the trainer's).
 * Nothing aborts; every NCCL and driver call is checked.
 *
 * Nothing hangs for ever either: while the host waits for the device's
 * stream (the device layer polls acc_comm's check, and allreduce_host its
 * own stream), NCCL's asynchronous error and the communicator's timeout_s
 * are checked; either gives up the communicator (an owned one is aborted
 * with ncclCommAbort, which returns its kernels) and the wait returns
 * ACC_ERR_COMM. ncclCommInitRank itself waits for every rank, unbounded.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <nccl.h>

#include "accrt_nccl.h"

#define STR_(x) #x
#define STR(x) STR_(x) /* after macro expansion: cuMemAlloc -> "cuMemAlloc_v2" */

_Static_assert(ACC_NCCL_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "ACC_NCCL_ID_BYTES is not NCCL's");

/* The NCCL entry points used (all in NCCL 2.13 and later). */
/* clang-format off */
#define NCCL_FUNCS(X)                                                                                        \
    X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy) X(ncclCommAbort) X(ncclCommCount)             \
    X(ncclCommUserRank) X(ncclCommCuDevice) X(ncclGetErrorString) X(ncclGetLastError) X(ncclAllReduce)      \
    X(ncclReduceScatter) X(ncclAllGather) X(ncclCommGetAsyncError)
/* the driver: the device's primary context, and allreduce_host's buffer and stream */
#define CU_FUNCS(X)                                                                                          \
    X(cuInit) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)   \
    X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuStreamCreate)         \
    X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamDestroy) X(cuGetErrorString)
/* clang-format on */

typedef struct {
    void *nccl_lib, *cu_lib;
#define FN_FIELD(f) __typeof__(&f) f;
    NCCL_FUNCS(FN_FIELD)
    CU_FUNCS(FN_FIELD)
#undef FN_FIELD
} Api;

typedef struct {
    acc_comm head;
    Api api;
    ncclComm_t nccl;
    int owned;     /* made by acc_comm_nccl_create: destroyed with the wrapper */
    int given_up;  /* an asynchronous error or a timeout: nothing more goes through */
    int cu_ready;  /* the driver part below is set up */
    int cu_failed; /* ... or could not be (its status) */
    int ordinal;   /* the GPU, the driver's ordinal */
    CUdevice dev;
    CUcontext ctx;
    int ctx_retained;
    CUstream stream;     /* allreduce_host's */
    CUdeviceptr scratch; /* allreduce_host's doubles */
    size_t scratch_bytes;
    char err[512];
} NcclComm;

/* Record the first failure's detail; returns status. */
static int fail(NcclComm *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(NcclComm *c, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return status;
}

/* check an NCCL call: its error string and NCCL's last message */
#define NCCL_CHECK(c, call) nccl_check((c), (call), #call, __LINE__)
static int nccl_check(NcclComm *c, ncclResult_t r, const char *what, int line) {
    if (r == ncclSuccess) return ACC_OK;
    const char *last = c->api.ncclGetLastError ? c->api.ncclGetLastError(c->nccl) : NULL;
    return fail(c, ACC_ERR_COMM, "%s:%d: %s: %s (ncclResult_t %d)%s%s", __FILE__, line, what,
                c->api.ncclGetErrorString(r), (int)r, last && *last ? ": " : "", last ? last : "");
}

#define CU_CHECK(c, call) cu_check((c), (call), #call, __LINE__)
static int cu_check(NcclComm *c, CUresult r, const char *what, int line) {
    if (r == CUDA_SUCCESS) return ACC_OK;
    const char *msg = NULL;
    if (c->api.cuGetErrorString) c->api.cuGetErrorString(r, &msg);
    return fail(c, r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE ? ACC_ERR_NO_DEVICE : ACC_ERR_COMM,
                "%s:%d: %s: %s (CUresult %d)", __FILE__, line, what, msg ? msg : "unknown error", (int)r);
}

/* libnccl: $ACC_NCCL_LIB, else the soname, else the one acc was built with */
static int load_nccl(NcclComm *c) {
#ifndef ACC_NCCL_LIB_DEFAULT
#define ACC_NCCL_LIB_DEFAULT "libnccl.so"
#endif
    const char *env = getenv("ACC_NCCL_LIB");
    const char *names[] = {env && *env ? env : "libnccl.so.2", "libnccl.so.2", ACC_NCCL_LIB_DEFAULT};
    Api *a = &c->api;
    for (int i = 0; i < 3 && !a->nccl_lib; i++) a->nccl_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!a->nccl_lib)
        return fail(c, ACC_ERR_NO_DEVICE, "NCCL cannot be loaded (%s): install libnccl2 or set ACC_NCCL_LIB",
                    dlerror());
#define FN_LOAD(f)                                                                                            \
    if (!(*(void **)&a->f = dlsym(a->nccl_lib, #f)))                                                          \
        return fail(c, ACC_ERR_NO_DEVICE, "libnccl has no %s: NCCL %d.%d or later is needed", #f, NCCL_MAJOR, \
                    NCCL_MINOR);
    NCCL_FUNCS(FN_LOAD)
#undef FN_LOAD
    return ACC_OK;
}

static int load_cuda(NcclComm *c) {
    Api *a = &c->api;
    if (!(a->cu_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)))
        return fail(c, ACC_ERR_NO_DEVICE, "no NVIDIA driver: libcuda.so.1 cannot be loaded (%s); NCCL needs a GPU",
                    dlerror());
#define FN_LOAD(f) \
    if (!(*(void **)&a->f = dlsym(a->cu_lib, STR(f)))) return fail(c, ACC_ERR_NO_DEVICE, "libcuda has no %s", STR(f));
    CU_FUNCS(FN_LOAD)
#undef FN_LOAD
    return ACC_OK;
}

/* The driver part: device ordinal's primary context current on this thread
 * (the one the trainer's CUDA code and the model's device layer share) and
 * allreduce_host's stream. */
static int open_device_now(NcclComm *c, int ordinal) {
    Api *a = &c->api;
    int rc, count = 0;
    if ((rc = load_cuda(c))) return rc;
    if ((rc = CU_CHECK(c, a->cuInit(0)))) return rc;
    if ((rc = CU_CHECK(c, a->cuDeviceGetCount(&count)))) return rc;
    if (ordinal < 0 || ordinal >= count)
        return fail(c, count ? ACC_ERR_ARG : ACC_ERR_NO_DEVICE, "CUDA device %d: this process sees %d GPU(s)", ordinal,
                    count);
    if ((rc = CU_CHECK(c, a->cuDeviceGet(&c->dev, ordinal)))) return rc;
    if ((rc = CU_CHECK(c, a->cuDevicePrimaryCtxRetain(&c->ctx, c->dev)))) return rc;
    c->ctx_retained = 1;
    if ((rc = CU_CHECK(c, a->cuCtxSetCurrent(c->ctx)))) return rc;
    return CU_CHECK(c, a->cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING));
}

/* open_device_now once: its status every time */
static int open_device(NcclComm *c) {
    if (!c->cu_ready && !c->cu_failed) {
        c->cu_failed = open_device_now(c, c->ordinal);
        c->cu_ready = !c->cu_failed;
    }
    return c->cu_failed;
}

static int given_up(NcclComm *c) {
    if (!c->given_up) return ACC_OK;
    if (!strstr(c->err, "given up")) snprintf(c->err, sizeof c->err, "this communicator was given up earlier");
    return ACC_ERR_COMM;
}

/* acc_comm's check: NCCL's asynchronous error, else the timeout. Either
 * gives the communicator up: an owned one is aborted (its kernels return,
 * so the stream waiting on them completes); the trainer's is left to it. */
static int nccl_check_wait(acc_comm *h, double waited_s) {
    NcclComm *c = (NcclComm *)h;
    if (given_up(c)) return ACC_ERR_COMM;
    if (!c->nccl) return fail(c, ACC_ERR_COMM, "no NCCL communicator");
    ncclResult_t async = ncclSuccess;
    int rc = NCCL_CHECK(c, c->api.ncclCommGetAsyncError(c->nccl, &async));
    if (rc == ACC_OK && async != ncclSuccess && async != ncclInProgress)
        rc = fail(c, ACC_ERR_COMM, "NCCL reported an asynchronous error: %s (ncclResult_t %d)",
                  c->api.ncclGetErrorString(async), (int)async);
    else if (rc == ACC_OK && h->timeout_s > 0 && waited_s > h->timeout_s)
        rc = fail(c, ACC_ERR_COMM,
                  "the collectives did not complete within %g s (the communicator's timeout_s, ACC_COMM_TIMEOUT): "
                  "a rank stopped, hangs or runs another step",
                  h->timeout_s);
    if (rc == ACC_OK) return ACC_OK;
    c->given_up = 1;
    size_t len = strlen(c->err);
    if (c->owned) {
        c->api.ncclCommAbort(c->nccl);
        c->nccl = NULL;
        snprintf(c->err + len, sizeof c->err - len, "; the communicator was given up and aborted");
    } else {
        snprintf(c->err + len, sizeof c->err - len,
                 "; the communicator was given up: abort the trainer's NCCL communicator (ncclCommAbort) before "
                 "destroying the model");
    }
    return ACC_ERR_COMM;
}

/* In place on the device, stream ordered: the reduce-scatter's result and
 * the all-gather's source are this rank's piece of buf. */
static int nccl_issue(acc_comm *h, int id, int kind, float *buf, int64_t count, void *stream) {
    NcclComm *c = (NcclComm *)h;
    Api *a = &c->api;
    (void)id;
    if (given_up(c)) return ACC_ERR_COMM;
    if (!buf || count < 0) return fail(c, ACC_ERR_ARG, "collective %d: no buffer or a negative count", id);
    cudaStream_t s = (cudaStream_t)stream;
    size_t n = (size_t)count;
    float *mine = buf + (size_t)h->rank * n;
    switch (kind) {
    case ACC_COLL_ALLREDUCE: return NCCL_CHECK(c, a->ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, c->nccl, s));
    case ACC_COLL_REDUCE_SCATTER:
        return NCCL_CHECK(c, a->ncclReduceScatter(buf, mine, n, ncclFloat32, ncclSum, c->nccl, s));
    case ACC_COLL_ALLGATHER: return NCCL_CHECK(c, a->ncclAllGather(mine, buf, n, ncclFloat32, c->nccl, s));
    default: return fail(c, ACC_ERR_ARG, "collective %d: unknown kind %d", id, kind);
    }
}

/* Stream ordered: the device layer's waits order what follows. */
static int nccl_wait(acc_comm *h, int id) {
    (void)h, (void)id;
    return ACC_OK;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* allreduce_host's stream done, checked as the device layer checks its
 * own (nccl_check_wait) every millisecond. */
static int stream_wait(NcclComm *c) {
    double start = now(), last = start;
    for (;;) {
        CUresult r = c->api.cuStreamQuery(c->stream);
        if (r != CUDA_ERROR_NOT_READY) return CU_CHECK(c, r);
        double t = now();
        if (t - last >= 1e-3) {
            last = t;
            int rc = nccl_check_wait(&c->head, t - start);
            if (rc) return rc;
        }
    }
}

/* x[0..n) through a device buffer of doubles, on the communicator's own
 * stream, synchronously (a wrapped communicator opens its GPU here). */
static int nccl_allreduce_host(acc_comm *h, double *x, int n, int op) {
    NcclComm *c = (NcclComm *)h;
    Api *a = &c->api;
    int rc;
    if (n < 0 || (n && !x)) return fail(c, ACC_ERR_ARG, "allreduce_host: %d values at %p", n, (void *)x);
    if (op != ACC_RED_SUM && op != ACC_RED_MAX && op != ACC_RED_MIN)
        return fail(c, ACC_ERR_ARG, "allreduce_host: unknown op %d", op);
    if (n == 0) return ACC_OK;
    if (given_up(c)) return ACC_ERR_COMM;
    size_t bytes = (size_t)n * sizeof *x;
    if ((rc = open_device(c))) return rc;
    if ((rc = CU_CHECK(c, a->cuCtxSetCurrent(c->ctx)))) return rc;
    if (bytes > c->scratch_bytes) {
        if (c->scratch) a->cuMemFree(c->scratch), c->scratch = 0, c->scratch_bytes = 0;
        if ((rc = CU_CHECK(c, a->cuMemAlloc(&c->scratch, bytes)))) return rc;
        c->scratch_bytes = bytes;
    }
    ncclRedOp_t r = op == ACC_RED_SUM ? ncclSum : op == ACC_RED_MAX ? ncclMax : ncclMin;
    void *p = (void *)(uintptr_t)c->scratch;
    if ((rc = CU_CHECK(c, a->cuMemcpyHtoD(c->scratch, x, bytes)))) return rc;
    if ((rc = NCCL_CHECK(c, a->ncclAllReduce(p, p, (size_t)n, ncclFloat64, r, c->nccl, (cudaStream_t)c->stream))))
        return rc;
    if ((rc = stream_wait(c))) return rc;
    return CU_CHECK(c, a->cuMemcpyDtoH(x, c->scratch, bytes));
}

static const char *nccl_error(const acc_comm *h) { return ((const NcclComm *)h)->err; }

static void nccl_destroy(acc_comm *h) {
    NcclComm *c = (NcclComm *)h;
    Api *a = &c->api;
    if (c->ctx_retained) a->cuCtxSetCurrent(c->ctx);
    if (c->stream && !c->given_up) a->cuStreamSynchronize(c->stream);
    if (c->stream) a->cuStreamDestroy(c->stream);
    if (c->scratch) a->cuMemFree(c->scratch);
    if (c->owned && c->nccl) a->ncclCommDestroy(c->nccl);
    if (c->ctx_retained) a->cuDevicePrimaryCtxRelease(c->dev);
    /* libnccl stays loaded: a dlclose under NCCL's own threads is unsafe */
    if (a->cu_lib) dlclose(a->cu_lib);
    free(c);
}

static NcclComm *comm_new(void) {
    NcclComm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->head.name = "nccl";
    c->head.device_memory = 1;
    c->head.issue = nccl_issue;
    c->head.wait = nccl_wait;
    c->head.allreduce_host = nccl_allreduce_host;
    c->head.error = nccl_error;
    c->head.destroy = nccl_destroy;
    c->head.impl = c;
    c->head.check = nccl_check_wait;
    c->head.timeout_s = acc_comm_timeout();
    return c;
}

static int bad_timeout(NcclComm *c) {
    return fail(c, ACC_ERR_ARG, "ACC_COMM_TIMEOUT='%s' is not a number of seconds (0: no limit)",
                getenv("ACC_COMM_TIMEOUT"));
}

int acc_comm_nccl_unique_id(void *id, size_t size) {
    if (!id) return ACC_ERR_NULL;
    if (size < ACC_NCCL_ID_BYTES) return ACC_ERR_SIZE;
    NcclComm *c = comm_new();
    if (!c) return ACC_ERR_NOMEM;
    ncclUniqueId u;
    int rc = load_nccl(c);
    if (!rc) rc = NCCL_CHECK(c, c->api.ncclGetUniqueId(&u));
    if (!rc) memcpy(id, &u, sizeof u);
    else fprintf(stderr, "acc_comm_nccl_unique_id: %s\n", c->err); /* no instance to keep the detail in */
    free(c);
    return rc;
}

int acc_comm_nccl_create(int rank, int size, const void *id, int cuda_device, acc_comm **out) {
    if (!out) return ACC_ERR_NULL;
    *out = NULL;
    NcclComm *c = comm_new();
    if (!c) return ACC_ERR_NOMEM;
    *out = &c->head;
    c->owned = 1;
    c->head.rank = rank, c->head.size = size;
    if (c->head.timeout_s < 0) return bad_timeout(c);
    if (!id) return fail(c, ACC_ERR_NULL, "acc_comm_nccl_create: no unique id");
    if (size < 1 || rank < 0 || rank >= size)
        return fail(c, ACC_ERR_ARG, "acc_comm_nccl_create: rank %d of %d ranks", rank, size);
    c->ordinal = cuda_device;
    int rc = load_nccl(c);
    if (!rc) rc = open_device(c);
    if (rc) return rc;
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    rc = NCCL_CHECK(c, c->api.ncclCommInitRank(&c->nccl, size, u, rank));
    if (rc) c->nccl = NULL;
    return rc;
}

int acc_comm_nccl_wrap(struct ncclComm *nccl, acc_comm **out) {
    if (!out) return ACC_ERR_NULL;
    *out = NULL;
    NcclComm *c = comm_new();
    if (!c) return ACC_ERR_NOMEM;
    *out = &c->head;
    if (c->head.timeout_s < 0) return bad_timeout(c);
    if (!nccl) return fail(c, ACC_ERR_NULL, "acc_comm_nccl_wrap: no NCCL communicator");
    c->nccl = nccl;
    int rc = load_nccl(c);
    if (!rc) rc = NCCL_CHECK(c, c->api.ncclCommUserRank(nccl, &c->head.rank));
    if (!rc) rc = NCCL_CHECK(c, c->api.ncclCommCount(nccl, &c->head.size));
    if (!rc) rc = NCCL_CHECK(c, c->api.ncclCommCuDevice(nccl, &c->ordinal));
    return rc; /* the driver when allreduce_host first needs it */
}
