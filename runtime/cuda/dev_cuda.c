/* dev_cuda.c - the GPU device: the CUDA driver API, cuBLAS and cuBLASLt, all
 * loaded with dlopen when an instance is created.
 *
 * Loading at run time, rather than linking, is what lets a trainer built
 * against a CUDA library start on a machine without a driver or GPU and get
 * ACC_ERR_NO_DEVICE with a sentence instead of a loader failure. The
 * kernels come from the images embedded in the model's library (CUBIN per
 * architecture, PTX for newer GPUs); the arena is one cuMemAlloc, the cuBLAS
 * workspace a planned region inside it; everything runs on one stream of the
 * primary context (shared with the trainer's own CUDA code) of the GPU whose
 * context is current on the creating thread (GPU 0 if none), with events at
 * the phase boundaries; the copies of offloaded activations and the
 * data-parallel collectives (through the trainer's acc_comm, NCCL) run on
 * streams of their own, forked and joined with events. Every driver and cuBLAS call is checked and a
 * failure is recorded with its file and line.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>

#include "device.h"

#define STR_(x) #x
#define STR(x) STR_(x) /* after macro expansion: cuMemAlloc -> "cuMemAlloc_v2" */

/* The driver and cuBLAS entry points used; cuda.h and cublas_v2.h map the
 * names to their current versions, and STR spells the versioned symbol. */
/* clang-format off */
#define CU_FUNCS(X)                                                                                                  \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetName) \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuModuleLoadData)                \
    X(cuModuleUnload) X(cuModuleGetFunction) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)           \
    X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemsetD8)    \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuLaunchKernel) X(cuEventCreate) \
    X(cuEventRecord) X(cuEventElapsedTime) X(cuEventDestroy) X(cuGetErrorString) X(cuEventRecordWithFlags)      \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphDestroy)        \
    X(cuGraphExecDestroy) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuStreamQuery)
#define BLAS_FUNCS(X) \
    X(cublasCreate) X(cublasDestroy) X(cublasSetStream) X(cublasSetWorkspace) X(cublasSetMathMode) X(cublasSgemmStridedBatched) \
    X(cublasGemmStridedBatchedEx)
/* cuBLASLt: the GEMMs with a bias or bias-gradient epilogue (linear) */
#define LT_FUNCS(X)                                                                                                  \
    X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                  \
    X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)                 \
    X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)   \
    X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
/* clang-format on */

typedef struct {
    void *cu_lib, *blas_lib, *lt_lib;
#define FN_FIELD(f) __typeof__(&f) f;
    CU_FUNCS(FN_FIELD)
    BLAS_FUNCS(FN_FIELD)
    LT_FUNCS(FN_FIELD)
#undef FN_FIELD
} Api;

typedef struct {
    struct acc_dev head;
    Api api;
    CUdevice dev;
    CUcontext ctx;
    int ctx_retained;
    CUmodule module;
    CUfunction fn[KID_COUNT];
    CUstream stream;
    CUevent ev[ACC_PHASE_COUNT + 1];
    int ev_used[ACC_PHASE_COUNT + 1];
    cublasHandle_t blas;
    cublasLtHandle_t lt;
    int tf32; /* the model was compiled with --tf32 */
    CUdeviceptr arena;
    /* a CUDA graph per ACC_GRAPH_*: captured on its second run, launched after */
    CUgraph graph[ACC_GRAPH_COUNT];
    CUgraphExec exec[ACC_GRAPH_COUNT];
    int runs[ACC_GRAPH_COUNT];
    int graph_marks[ACC_GRAPH_COUNT]; /* the phase events a graph records (bits) */
    int capturing;                    /* the graph being captured + 1, or 0 */
    int no_graphs;                    /* ACC_CUDA_GRAPHS=0: every run launches one by one */
    /* the copies of offloaded activations: their stream, and per copy id an
     * event the step's stream records before it (ready) and one the copy
     * stream records after it (done); issued: not yet waited for */
    CUstream copy_stream;
    CUevent *copy_ready, *copy_done;
    unsigned char *copy_issued;
    int copy_ids;
    /* data parallel: the collectives' stream and, per collective id (the
     * step's buckets, then the optimizer's all-gathers), the same pair of
     * events as a copy's */
    CUstream coll_stream;
    CUevent *coll_ready, *coll_done;
    unsigned char *coll_issued;
    int coll_ids;
    acc_comm *comm; /* the communicator of the collectives issued: its check bounds the waits */
    int comm_lost;  /* it gave up: the stream is not waited for when closing */
} CudaDev;

static const char *const kernel_names[KID_COUNT] = {
#define KA_NAME(name, sync) #name,
    ACC_CUDA_KERNELS(KA_NAME)
#undef KA_NAME
};

/* check a driver call: record "file:line: call: error" on failure */
#define CU_CHECK(c, call) cu_check((c), (call), #call, __FILE__, __LINE__)
static int cu_check(CudaDev *c, CUresult r, const char *what, const char *file, int line) {
    if (r == CUDA_SUCCESS) return ACC_OK;
    const char *msg = NULL;
    if (c->api.cuGetErrorString) c->api.cuGetErrorString(r, &msg);
    int status = r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ? ACC_ERR_NO_DEVICE
                 : r == CUDA_ERROR_OUT_OF_MEMORY                                     ? ACC_ERR_NOMEM
                                                                                     : ACC_ERR_DEVICE;
    return dev_fail(&c->head, status, file, line, "%s: %s (CUresult %d)", what, msg ? msg : "unknown error", (int)r);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The step's stream done. Once collectives have been issued, the host
 * polls it and, every millisecond, the communicator's check (NCCL's
 * asynchronous error, its timeout): a collective that a rank never joins
 * is then ACC_ERR_COMM, not a hang. Otherwise the driver's synchronize. */
static int stream_sync(CudaDev *c) {
    acc_comm *comm = c->comm;
    if (!comm || !comm->check) return CU_CHECK(c, c->api.cuStreamSynchronize(c->stream));
    double start = now(), last = start;
    for (;;) {
        CUresult r = c->api.cuStreamQuery(c->stream);
        if (r != CUDA_ERROR_NOT_READY) return CU_CHECK(c, r);
        double t = now();
        if (t - last < 1e-3) continue;
        last = t;
        if (comm->check(comm, t - start) != ACC_OK) {
            c->comm_lost = 1;
            const char *why = comm->error ? comm->error(comm) : "";
            return dev_fail(&c->head, ACC_ERR_COMM, __FILE__, __LINE__, "waiting for the step's collectives (%s): %s",
                            comm->name ? comm->name : "?", why && *why ? why : "given up");
        }
    }
}

#define BLAS_CHECK(c, call) blas_check((c), (call), #call, __FILE__, __LINE__)
static int blas_check(CudaDev *c, cublasStatus_t r, const char *what, const char *file, int line) {
    if (r == CUBLAS_STATUS_SUCCESS) return ACC_OK;
    return dev_fail(&c->head, r == CUBLAS_STATUS_ALLOC_FAILED ? ACC_ERR_NOMEM : ACC_ERR_DEVICE, file, line,
                    "%s: cuBLAS status %d", what, (int)r);
}

/* dlopen the first library of the list that loads; NULL if none. */
static void *open_first(const char *const *names, int n) {
    for (int i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

static int load_api(CudaDev *c) {
    static const char *const cu_names[] = {"libcuda.so.1", "libcuda.so"};
    static const char *const blas_names[] = {"libcublas.so." STR(CUBLAS_VER_MAJOR), "libcublas.so"};
    Api *a = &c->api;
    if (!(a->cu_lib = open_first(cu_names, 2)))
        return dev_fail(&c->head, ACC_ERR_NO_DEVICE, __FILE__, __LINE__,
                        "no NVIDIA driver: libcuda.so.1 cannot be loaded (%s); this library needs a GPU", dlerror());
    if (!(a->blas_lib = open_first(blas_names, 2)))
        return dev_fail(&c->head, ACC_ERR_NO_DEVICE, __FILE__, __LINE__,
                        "cuBLAS (libcublas.so.%d) cannot be loaded: %s; install the CUDA %d runtime libraries",
                        CUBLAS_VER_MAJOR, dlerror(), CUBLAS_VER_MAJOR);
    static const char *const lt_names[] = {"libcublasLt.so." STR(CUBLAS_VER_MAJOR), "libcublasLt.so"};
    if (!(a->lt_lib = open_first(lt_names, 2)))
        return dev_fail(&c->head, ACC_ERR_NO_DEVICE, __FILE__, __LINE__,
                        "cuBLASLt (libcublasLt.so.%d) cannot be loaded: %s; install the CUDA %d runtime libraries",
                        CUBLAS_VER_MAJOR, dlerror(), CUBLAS_VER_MAJOR);
#define FN_LOAD(f, lib)                                                                                            \
    if (!(*(void **)&a->f = dlsym(a->lib, STR(f))))                                                                \
        return dev_fail(&c->head, ACC_ERR_NO_DEVICE, __FILE__, __LINE__, "%s has no %s: driver or cuBLAS too old", \
                        #lib, STR(f));
#define CU_LOAD(f) FN_LOAD(f, cu_lib)
#define BLAS_LOAD(f) FN_LOAD(f, blas_lib)
#define LT_LOAD(f) FN_LOAD(f, lt_lib)
    CU_FUNCS(CU_LOAD)
    BLAS_FUNCS(BLAS_LOAD)
    LT_FUNCS(LT_LOAD)
#undef CU_LOAD
#undef BLAS_LOAD
#undef LT_LOAD
#undef FN_LOAD
    return ACC_OK;
}

/* The image for compute capability major.minor: a CUBIN of the same major
 * and a minor not above the device's, else PTX for an older architecture
 * (the driver compiles it). */
static const acc_image *pick_image(const acc_model_desc *desc, int major, int minor) {
    const acc_image *best = NULL;
    int cc = major * 10 + minor;
    for (int i = 0; i < desc->n_images; i++) {
        const acc_image *im = &desc->images[i];
        if (!im->ptx && im->sm / 10 == major && im->sm <= cc && (!best || best->ptx || im->sm > best->sm)) best = im;
    }
    for (int i = 0; !best && i < desc->n_images; i++)
        if (desc->images[i].ptx && desc->images[i].sm <= cc) best = &desc->images[i];
    return best;
}

static int cuda_launch(acc_dev *d, acc_kernel_id k, unsigned grid, unsigned block, const acc_kargs *a) {
    CudaDev *c = (CudaDev *)d;
    void *params[] = {(void *)(uintptr_t)a};
    return CU_CHECK(c, c->api.cuLaunchKernel(c->fn[k], grid, 1, 1, block, 1, 1, 0, c->stream, params, NULL));
}

/* bf16: cublasGemmStridedBatchedEx with A, B and C in CUDA_R_16BF, fp32
 * accumulation (CUBLAS_COMPUTE_32F: bf16 tensor cores where the GPU has
 * them) and fp32 alpha and beta; a GPU or library without bf16 GEMMs fails
 * here with cuBLAS's status (CUBLAS_STATUS_NOT_SUPPORTED or
 * ARCH_MISMATCH), recorded like any other. */
static int cuda_gemm(acc_dev *d, int bf16, int ta, int tb, long long m, long long n, long long k, const void *A,
                     long long lda, long long sA, const void *B, long long ldb, long long sB, float beta, void *C,
                     long long ldc, long long sC, long long batch) {
    CudaDev *c = (CudaDev *)d;
    const long long lim = 2147483647;
    if (m > lim || n > lim || k > lim || lda > lim || ldb > lim || ldc > lim || batch > lim)
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "GEMM dimension above 2^31");
    const float one = 1.0f;
    if (bf16)
        return BLAS_CHECK(c, c->api.cublasGemmStridedBatchedEx(c->blas, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                               tb ? CUBLAS_OP_T : CUBLAS_OP_N, (int)m, (int)n, (int)k,
                                                               &one, A, CUDA_R_16BF, (int)lda, sA, B, CUDA_R_16BF,
                                                               (int)ldb, sB, &beta, C, CUDA_R_16BF, (int)ldc, sC,
                                                               (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return BLAS_CHECK(c, c->api.cublasSgemmStridedBatched(
                             c->blas, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, (int)m, (int)n,
                             (int)k, &one, A, (int)lda, sA, B, (int)ldb, sB, &beta, C, (int)ldc, sC, (int)batch));
}

/* The alignment of a device address, for cuBLASLt's preferences: a power of
 * two from lo (the element size: 4, or 2 for bf16) to 256 (cuBLASLt's default
 * assumption, which the arena's 64-byte offsets need not meet). */
static uint32_t lt_align(const void *p, uint32_t lo) {
    uint32_t a = 256;
    while (a > lo && (uintptr_t)p % a) a /= 2;
    return a;
}

/* cublasLtMatmul with one epilogue (DevOps.gemm_ep, device.h): descriptors
 * for this call, compute type FP32 (TF32 tensor cores with --tf32), the first
 * algorithm of the heuristic (the same one for the same shape on the same
 * GPU and library), the given fixed workspace. No algorithm for the
 * epilogue (CUBLAS_STATUS_NOT_SUPPORTED or none returned) is DEV_NO_ALGO, not
 * a failure: ops.c then runs the plain GEMM and the bias kernels. */
static int cuda_gemm_ep(acc_dev *d, int bf16, int epi, int ta, int tb, long long m, long long n, long long k,
                        const void *A, long long lda, const void *B, long long ldb, float beta, void *D, long long ldd,
                        void *bias, void *ws, long long ws_bytes) {
    CudaDev *c = (CudaDev *)d;
    Api *a = &c->api;
    if (m < 1 || n < 1 || k < 1 || lda < 1 || ldb < 1 || ldd < 1 || ws_bytes < 0)
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "GEMM with an epilogue: bad dimensions");
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t e = epi == DEV_EPI_NONE     ? CUBLASLT_EPILOGUE_DEFAULT
                           : epi == DEV_EPI_BIAS   ? CUBLASLT_EPILOGUE_BIAS
                           : epi == DEV_EPI_BGRADA ? CUBLASLT_EPILOGUE_BGRADA
                                                   : CUBLASLT_EPILOGUE_BGRADB;
    uint64_t wsb = (uint64_t)ws_bytes;
    const float one = 1.0f;
    /* bf16: the matrices CUDA_R_16BF, the bias of BIAS bf16 (D's type), the
     * sums of BGRADA/B float; fp32 compute and scale either way */
    cudaDataType_t mt = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    int32_t bias_type = bf16 && epi == DEV_EPI_BIAS ? CUDA_R_16BF : CUDA_R_32F;
    int rc = BLAS_CHECK(c, a->cublasLtMatmulDescCreate(
                               &op, c->tf32 && !bf16 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    if (!rc) rc = BLAS_CHECK(c, a->cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    if (!rc) rc = BLAS_CHECK(c, a->cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    if (!rc) rc = BLAS_CHECK(c, a->cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    if (!rc && epi != DEV_EPI_NONE)
        rc =
            BLAS_CHECK(c, a->cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    if (!rc && bf16 && epi != DEV_EPI_NONE)
        rc = BLAS_CHECK(c, a->cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                             sizeof bias_type));
    if (!rc)
        rc = BLAS_CHECK(c, a->cublasLtMatrixLayoutCreate(&la, mt, (uint64_t)(ta ? k : m), (uint64_t)(ta ? m : k), lda));
    if (!rc)
        rc = BLAS_CHECK(c, a->cublasLtMatrixLayoutCreate(&lb, mt, (uint64_t)(tb ? n : k), (uint64_t)(tb ? k : n), ldb));
    if (!rc) rc = BLAS_CHECK(c, a->cublasLtMatrixLayoutCreate(&ld, mt, (uint64_t)m, (uint64_t)n, ldd));
    if (!rc) rc = BLAS_CHECK(c, a->cublasLtMatmulPreferenceCreate(&pref));
    if (!rc)
        rc = BLAS_CHECK(c, a->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
                                                                   sizeof wsb));
    /* only algorithms that work with these pointers' alignment (C is D) */
    const cublasLtMatmulPreferenceAttributes_t align_attr[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    const uint32_t lo = bf16 ? 2 : 4, align[] = {lt_align(A, lo), lt_align(B, lo), lt_align(D, lo), lt_align(D, lo)};
    for (int i = 0; i < 4 && !rc; i++)
        rc = BLAS_CHECK(c, a->cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align[i], sizeof align[i]));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    if (!rc) {
        memset(&res, 0, sizeof res);
        cublasStatus_t st = a->cublasLtMatmulAlgoGetHeuristic(c->lt, op, la, lb, ld, ld, pref, 1, &res, &found);
        if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found < 1)) rc = DEV_NO_ALGO;
        /* a bf16 epilogue (a float bias gradient) the library refuses */
        else if (bf16 && st == CUBLAS_STATUS_INVALID_VALUE) rc = DEV_NO_ALGO;
        else rc = BLAS_CHECK(c, st);
    }
    if (!rc)
        rc = BLAS_CHECK(c, a->cublasLtMatmul(c->lt, op, &one, A, la, B, lb, &beta, D, ld, D, ld, &res.algo, ws,
                                             (size_t)wsb, (cudaStream_t)c->stream));
    if (pref) a->cublasLtMatmulPreferenceDestroy(pref);
    if (ld) a->cublasLtMatrixLayoutDestroy(ld);
    if (lb) a->cublasLtMatrixLayoutDestroy(lb);
    if (la) a->cublasLtMatrixLayoutDestroy(la);
    if (op) a->cublasLtMatmulDescDestroy(op);
    return rc;
}

static const DevOps cuda_ops = {cuda_launch, cuda_gemm, cuda_gemm_ep};

static int cuda_open(const acc_model_desc *desc, acc_dev **out, unsigned char **arena, int64_t *extra) {
    CudaDev *c = calloc(1, sizeof *c);
    if (!c) return ACC_ERR_NOMEM;
    c->head.ops = &cuda_ops;
    *out = &c->head;
    const char *g = getenv("ACC_CUDA_GRAPHS");
    c->no_graphs = g && !strcmp(g, "0");
    *extra = 0;
    int rc = load_api(c);
    if (rc) return rc;
    Api *a = &c->api;
    int version = 0, count = 0, major = 0, minor = 0;
    if ((rc = CU_CHECK(c, a->cuInit(0)))) return rc;
    if ((rc = CU_CHECK(c, a->cuDriverGetVersion(&version)))) return rc;
    if (version < CUDA_VERSION)
        return dev_fail(
            &c->head, ACC_ERR_NO_DEVICE, __FILE__, __LINE__,
            "the NVIDIA driver supports CUDA %d.%d; this library was built with CUDA %d.%d: update the driver",
            version / 1000, version % 1000 / 10, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    if ((rc = CU_CHECK(c, a->cuDeviceGetCount(&count)))) return rc;
    if (count < 1) return dev_fail(&c->head, ACC_ERR_NO_DEVICE, __FILE__, __LINE__, "no CUDA device");
    /* the GPU of the thread's current context (the trainer's cudaSetDevice,
     * acc_comm_nccl_create's device: one process per GPU), else the first */
    CUcontext cur = NULL;
    if ((rc = CU_CHECK(c, a->cuCtxGetCurrent(&cur)))) return rc;
    rc = cur ? CU_CHECK(c, a->cuCtxGetDevice(&c->dev)) : CU_CHECK(c, a->cuDeviceGet(&c->dev, 0));
    if (rc) return rc;
    CU_CHECK(c, a->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev));
    CU_CHECK(c, a->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev));
    if (c->head.status) return c->head.status;
    const acc_image *im = pick_image(desc, major, minor);
    if (!im) {
        char have[128] = "";
        for (int i = 0; i < desc->n_images; i++)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s_%d", i ? ", " : "",
                     desc->images[i].ptx ? "compute" : "sm", desc->images[i].sm);
        return dev_fail(&c->head, ACC_ERR_NO_DEVICE, __FILE__, __LINE__,
                        "the GPU is sm_%d%d and the library holds kernels for %s only: recompile with --arch sm_%d%d",
                        major, minor, have, major, minor);
    }
    if ((rc = CU_CHECK(c, a->cuDevicePrimaryCtxRetain(&c->ctx, c->dev)))) return rc;
    c->ctx_retained = 1;
    if ((rc = CU_CHECK(c, a->cuCtxSetCurrent(c->ctx)))) return rc;
    if ((rc = CU_CHECK(c, a->cuModuleLoadData(&c->module, im->data)))) return rc;
    for (int k = 0; k < KID_COUNT; k++)
        if ((rc = CU_CHECK(c, a->cuModuleGetFunction(&c->fn[k], c->module, kernel_names[k])))) return rc;
    if ((rc = CU_CHECK(c, a->cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING)))) return rc;
    for (int p = 0; p <= ACC_PHASE_COUNT; p++)
        if ((rc = CU_CHECK(c, a->cuEventCreate(&c->ev[p], CU_EVENT_DEFAULT)))) return rc;
    if (desc->copy_ids > 0) { /* offloaded activations: the copy stream and its events, before any capture */
        if ((rc = CU_CHECK(c, a->cuStreamCreate(&c->copy_stream, CU_STREAM_NON_BLOCKING)))) return rc;
        c->copy_ready = calloc((size_t)desc->copy_ids, sizeof *c->copy_ready);
        c->copy_done = calloc((size_t)desc->copy_ids, sizeof *c->copy_done);
        c->copy_issued = calloc((size_t)desc->copy_ids, 1);
        if (!c->copy_ready || !c->copy_done || !c->copy_issued)
            return dev_fail(&c->head, ACC_ERR_NOMEM, __FILE__, __LINE__, "no memory for the copies' events");
        c->copy_ids = desc->copy_ids;
        for (int i = 0; i < c->copy_ids; i++) {
            if ((rc = CU_CHECK(c, a->cuEventCreate(&c->copy_ready[i], CU_EVENT_DISABLE_TIMING)))) return rc;
            if ((rc = CU_CHECK(c, a->cuEventCreate(&c->copy_done[i], CU_EVENT_DISABLE_TIMING)))) return rc;
        }
    }
    if (desc->n_buckets > 0) { /* data parallel: the same for the collectives */
        int ids = 2 * desc->n_buckets;
        if ((rc = CU_CHECK(c, a->cuStreamCreate(&c->coll_stream, CU_STREAM_NON_BLOCKING)))) return rc;
        c->coll_ready = calloc((size_t)ids, sizeof *c->coll_ready);
        c->coll_done = calloc((size_t)ids, sizeof *c->coll_done);
        c->coll_issued = calloc((size_t)ids, 1);
        if (!c->coll_ready || !c->coll_done || !c->coll_issued)
            return dev_fail(&c->head, ACC_ERR_NOMEM, __FILE__, __LINE__, "no memory for the collectives' events");
        c->coll_ids = ids;
        for (int i = 0; i < ids; i++) {
            if ((rc = CU_CHECK(c, a->cuEventCreate(&c->coll_ready[i], CU_EVENT_DISABLE_TIMING)))) return rc;
            if ((rc = CU_CHECK(c, a->cuEventCreate(&c->coll_done[i], CU_EVENT_DISABLE_TIMING)))) return rc;
        }
    }
    if ((rc = CU_CHECK(c, a->cuMemAlloc(&c->arena, (size_t)desc->arena_bytes)))) return rc;
    *arena = (unsigned char *)(uintptr_t)c->arena;
    dev_set_workspace(&c->head, *arena + desc->workspace_offset, desc->workspace_bytes);
    c->head.tf32 = desc->tf32;
    if ((rc = BLAS_CHECK(c, a->cublasCreate(&c->blas)))) return rc;
    if ((rc = BLAS_CHECK(c, a->cublasLtCreate(&c->lt)))) return rc;
    c->tf32 = desc->tf32;
    if ((rc = BLAS_CHECK(c, a->cublasSetStream(c->blas, c->stream)))) return rc;
    /* a fixed workspace inside the planned arena: no hidden allocation, and
     * cuBLAS picks the same algorithms every run (and can be captured) */
    if ((rc = BLAS_CHECK(c, a->cublasSetWorkspace(c->blas, c->head.scratch, (size_t)c->head.scratch_bytes)))) return rc;
    return BLAS_CHECK(c, a->cublasSetMathMode(c->blas, desc->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

static void cuda_close(acc_dev *d) {
    CudaDev *c = (CudaDev *)d;
    Api *a = &c->api;
    if (c->ctx && a->cuCtxSetCurrent) a->cuCtxSetCurrent(c->ctx);
    if (c->stream && !c->comm_lost) a->cuStreamSynchronize(c->stream);
    for (int g = 0; g < ACC_GRAPH_COUNT; g++) {
        if (c->exec[g]) a->cuGraphExecDestroy(c->exec[g]);
        if (c->graph[g]) a->cuGraphDestroy(c->graph[g]);
    }
    if (c->blas) a->cublasDestroy(c->blas);
    if (c->lt) a->cublasLtDestroy(c->lt);
    if (c->arena) a->cuMemFree(c->arena);
    for (int p = 0; p <= ACC_PHASE_COUNT; p++)
        if (c->ev[p]) a->cuEventDestroy(c->ev[p]);
    for (int i = 0; i < c->copy_ids; i++) {
        if (c->copy_ready && c->copy_ready[i]) a->cuEventDestroy(c->copy_ready[i]);
        if (c->copy_done && c->copy_done[i]) a->cuEventDestroy(c->copy_done[i]);
    }
    free(c->copy_ready), free(c->copy_done), free(c->copy_issued);
    if (c->copy_stream) a->cuStreamSynchronize(c->copy_stream), a->cuStreamDestroy(c->copy_stream);
    if (c->coll_stream && !c->comm_lost) a->cuStreamSynchronize(c->coll_stream);
    for (int i = 0; i < c->coll_ids; i++) {
        if (c->coll_ready && c->coll_ready[i]) a->cuEventDestroy(c->coll_ready[i]);
        if (c->coll_done && c->coll_done[i]) a->cuEventDestroy(c->coll_done[i]);
    }
    free(c->coll_ready), free(c->coll_done), free(c->coll_issued);
    if (c->coll_stream) a->cuStreamDestroy(c->coll_stream);
    if (c->stream) a->cuStreamDestroy(c->stream);
    if (c->module) a->cuModuleUnload(c->module);
    if (c->ctx_retained) a->cuDevicePrimaryCtxRelease(c->dev);
    if (a->lt_lib) dlclose(a->lt_lib);
    if (a->blas_lib) dlclose(a->blas_lib);
    if (a->cu_lib) dlclose(a->cu_lib);
    free(c);
}

static int cuda_upload(acc_dev *d, unsigned char *dst, const void *src, size_t n) {
    CudaDev *c = (CudaDev *)d;
    if (d->status) return d->status;
    if (stream_sync(c)) return d->status;
    return CU_CHECK(c, c->api.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, n));
}

static int cuda_download(acc_dev *d, void *dst, const unsigned char *src, size_t n) {
    CudaDev *c = (CudaDev *)d;
    if (d->status) return d->status;
    if (stream_sync(c)) return d->status;
    return CU_CHECK(c, c->api.cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, n));
}

static int cuda_copy(acc_dev *d, unsigned char *dst, const unsigned char *src, size_t n) {
    CudaDev *c = (CudaDev *)d;
    if (d->status) return d->status;
    if (stream_sync(c)) return d->status;
    return CU_CHECK(c, c->api.cuMemcpyDtoD((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
}

/* The host arena of offloaded activations: pinned, so that the copies are
 * asynchronous on the stream (and recordable). */
static int cuda_host_alloc(acc_dev *d, size_t n, unsigned char **host) {
    CudaDev *c = (CudaDev *)d;
    void *p = NULL;
    if (d->status) return d->status;
    if (CU_CHECK(c, c->api.cuMemHostAlloc(&p, n, 0))) return d->status;
    *host = p;
    return ACC_OK;
}

static void cuda_host_free(acc_dev *d, unsigned char *host) { ((CudaDev *)d)->api.cuMemFreeHost(host); }

/* Copy id on the copy stream after the step's launches so far: the fork
 * (and, in a captured run, the copy stream's part of the graph). */
static int cuda_copy_issue(acc_dev *d, int id, void *dst, const void *src, size_t n, int to_host) {
    CudaDev *c = (CudaDev *)d;
    Api *a = &c->api;
    if (d->status) return d->status;
    if (id < 0 || id >= c->copy_ids) return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "copy id %d out of range", id);
    if (CU_CHECK(c, a->cuEventRecord(c->copy_ready[id], c->stream))) return d->status;
    if (CU_CHECK(c, a->cuStreamWaitEvent(c->copy_stream, c->copy_ready[id], 0))) return d->status;
    if (to_host ? CU_CHECK(c, a->cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, n, c->copy_stream))
                : CU_CHECK(c, a->cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, n, c->copy_stream)))
        return d->status;
    if (CU_CHECK(c, a->cuEventRecord(c->copy_done[id], c->copy_stream))) return d->status;
    c->copy_issued[id] = 1;
    return ACC_OK;
}

/* The step's launches from here on wait for copy id: the join. */
static int cuda_copy_wait(acc_dev *d, int id) {
    CudaDev *c = (CudaDev *)d;
    if (d->status) return d->status;
    if (id < 0 || id >= c->copy_ids || !c->copy_issued[id])
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "wait for copy %d, which was not issued", id);
    c->copy_issued[id] = 0;
    return CU_CHECK(c, c->api.cuStreamWaitEvent(c->stream, c->copy_done[id], 0));
}

static int cuda_copy_sync(acc_dev *d) {
    CudaDev *c = (CudaDev *)d;
    for (int id = 0; id < c->copy_ids && !d->status; id++)
        if (c->copy_issued[id]) cuda_copy_wait(d, id);
    return d->status;
}

/* Collective id on the collectives' stream after the step's launches so
 * far (the fork: comm enqueues it there; in a captured run NCCL's kernels
 * become that branch of the graph), its done event recorded after it. */
static int cuda_coll_issue(acc_dev *d, acc_comm *comm, int id, int kind, float *buf, int64_t count) {
    CudaDev *c = (CudaDev *)d;
    Api *a = &c->api;
    if (d->status) return d->status;
    if (!comm) return dev_fail(d, ACC_ERR_COMM, __FILE__, __LINE__, "collective %d without a communicator", id);
    if (!comm->device_memory)
        return dev_fail(d, ACC_ERR_COMM, __FILE__, __LINE__,
                        "the communicator '%s' reaches host memory only, and the cuda target's gradients are in "
                        "device memory: use NCCL (acc_comm_nccl_create, accrt_nccl.h)",
                        comm->name ? comm->name : "?");
    if (id < 0 || id >= c->coll_ids)
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "collective id %d out of range (%d ids)", id, c->coll_ids);
    if (c->coll_issued[id])
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "collective %d issued again before its wait", id);
    if (CU_CHECK(c, a->cuEventRecord(c->coll_ready[id], c->stream))) return d->status;
    if (CU_CHECK(c, a->cuStreamWaitEvent(c->coll_stream, c->coll_ready[id], 0))) return d->status;
    c->comm = comm;
    int rc = comm->issue(comm, id, kind, buf, count, (void *)c->coll_stream);
    if (rc) {
        const char *why = comm->error ? comm->error(comm) : "";
        return dev_fail(d, rc, __FILE__, __LINE__, "collective %d (%s): %s", id, comm->name ? comm->name : "?",
                        why && *why ? why : acc_status_string(rc));
    }
    if (CU_CHECK(c, a->cuEventRecord(c->coll_done[id], c->coll_stream))) return d->status;
    c->coll_issued[id] = 1;
    return ACC_OK;
}

/* The step's launches from here on wait for collective id (the join), then
 * the communicator's own wait (nothing for one ordered on the stream). */
static int cuda_coll_wait(acc_dev *d, acc_comm *comm, int id) {
    CudaDev *c = (CudaDev *)d;
    if (d->status) return d->status;
    if (!comm) return dev_fail(d, ACC_ERR_COMM, __FILE__, __LINE__, "collective %d without a communicator", id);
    if (id < 0 || id >= c->coll_ids || !c->coll_issued[id])
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "wait for collective %d, which was not issued", id);
    c->coll_issued[id] = 0;
    if (CU_CHECK(c, c->api.cuStreamWaitEvent(c->stream, c->coll_done[id], 0))) return d->status;
    int rc = comm->wait(comm, id);
    if (rc) {
        const char *why = comm->error ? comm->error(comm) : "";
        return dev_fail(d, rc, __FILE__, __LINE__, "collective %d (%s): %s", id, comm->name ? comm->name : "?",
                        why && *why ? why : acc_status_string(rc));
    }
    return ACC_OK;
}

static int cuda_zero(acc_dev *d, unsigned char *dst, size_t n) {
    CudaDev *c = (CudaDev *)d;
    if (d->status) return d->status;
    if (stream_sync(c)) return d->status;
    return CU_CHECK(c, c->api.cuMemsetD8((CUdeviceptr)(uintptr_t)dst, 0, n));
}

/* A phase boundary: an event on the stream, or, while a graph is being
 * captured, an event-record node of the graph (recorded at each launch). */
static int cuda_mark(acc_dev *d, int phase) {
    CudaDev *c = (CudaDev *)d;
    if (d->status) return d->status;
    c->ev_used[phase] = 1;
    if (c->capturing) {
        c->graph_marks[c->capturing - 1] |= 1 << phase;
        return CU_CHECK(c, c->api.cuEventRecordWithFlags(c->ev[phase], c->stream, CU_EVENT_RECORD_EXTERNAL));
    }
    return CU_CHECK(c, c->api.cuEventRecord(c->ev[phase], c->stream));
}

/* Write the scalars, then: the first run of a graph launches fn's kernels
 * one by one (cuBLAS and the module settle), the second captures them into
 * a CUDA graph and launches it, and every later run launches the graph
 * alone: no host work between kernels. The stream is idle on entry
 * (acc_step and acc_adamw end with finish), so the synchronous copy of the
 * scalars cannot overtake a kernel that reads them (the synchronize makes
 * sure). */
static int cuda_run(acc_dev *d, int graph, int (*fn)(void *), void *arg, const acc_scalars *s) {
    CudaDev *c = (CudaDev *)d;
    Api *a = &c->api;
    if (d->status) return d->status;
    if (!d->scalars) return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "no workspace for the step's scalars");
    if (stream_sync(c)) return d->status;
    if (CU_CHECK(c, a->cuMemcpyHtoD((CUdeviceptr)(uintptr_t)d->scalars, s, sizeof *s))) return d->status;
    if (c->no_graphs || c->runs[graph] < 1) {
        c->runs[graph]++;
        int rc = fn(arg);
        return rc ? rc : d->status;
    }
    if (!c->exec[graph]) {
        if (CU_CHECK(c, a->cuStreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))) return d->status;
        c->capturing = graph + 1;
        c->graph_marks[graph] = 0;
        int rc = fn(arg);
        c->capturing = 0;
        CUgraph g = NULL;
        CUresult end = a->cuStreamEndCapture(c->stream, &g); /* ends the capture even after a failure */
        if (rc || d->status) {
            if (g) a->cuGraphDestroy(g);
            return rc ? rc : d->status;
        }
        if (CU_CHECK(c, end)) return d->status;
        c->graph[graph] = g;
        if (CU_CHECK(c, a->cuGraphInstantiate(&c->exec[graph], g, 0))) return d->status;
    }
    for (int p = 0; p <= ACC_PHASE_COUNT; p++)
        if (c->graph_marks[graph] >> p & 1) c->ev_used[p] = 1;
    c->runs[graph]++;
    return CU_CHECK(c, a->cuGraphLaunch(c->exec[graph], c->stream));
}

static int cuda_finish(acc_dev *d, double ms[ACC_PHASE_COUNT]) {
    CudaDev *c = (CudaDev *)d;
    for (int p = 0; p < ACC_PHASE_COUNT; p++) ms[p] = 0;
    if (d->status) return d->status;
    if (stream_sync(c)) return d->status;
    float t;
    if (c->ev_used[ACC_PHASE_FWD] && c->ev_used[ACC_PHASE_BWD] && c->ev_used[ACC_PHASE_COUNT]) {
        if (!CU_CHECK(c, c->api.cuEventElapsedTime(&t, c->ev[ACC_PHASE_FWD], c->ev[ACC_PHASE_BWD])))
            ms[ACC_PHASE_FWD] = t;
        if (!CU_CHECK(c, c->api.cuEventElapsedTime(&t, c->ev[ACC_PHASE_BWD], c->ev[ACC_PHASE_COUNT])))
            ms[ACC_PHASE_BWD] = t;
    }
    memset(c->ev_used, 0, sizeof c->ev_used);
    return d->status;
}

static const char *cuda_error(const acc_dev *d) { return dev_error(d); }

static int cuda_sum_squares_result(acc_dev *d, double *sum) {
    return cuda_download(d, sum, dev_sum_squares_total(d), sizeof *sum);
}

const acc_device acc_device_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .upload = cuda_upload,
    .download = cuda_download,
    .zero = cuda_zero,
    .copy = cuda_copy,
    .mark = cuda_mark,
    .finish = cuda_finish,
    .run = cuda_run,
    .adamw = dev_adamw,
    .error = cuda_error,
    .sum_squares = dev_sum_squares,
    .sum_squares_result = cuda_sum_squares_result,
    .scale = dev_scale,
    .accumulate = dev_accumulate,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .copy_issue = cuda_copy_issue,
    .copy_wait = cuda_copy_wait,
    .copy_sync = cuda_copy_sync,
    .coll_issue = cuda_coll_issue,
    .coll_wait = cuda_coll_wait,
};
