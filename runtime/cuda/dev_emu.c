/* dev_emu.c - the emulated device: the CUDA target's kernels (kernels.cu
 * compiled by the host compiler) and launch layer run on the CPU, with a
 * reference GEMM that follows cublasSgemmStridedBatched's contract to the
 * letter, and one with cuBLASLt's bias and bias-gradient epilogues (bf16
 * operands widened, summed in float, the output rounded once). Device memory
 * is host memory (one allocation, the arena), so the
 * generated schedule, ops.c and the kernels are exercised exactly as on the
 * GPU, and AddressSanitizer sees every access.
 *
 * Data parallel: the collectives of the gradients' buckets go through a
 * host-memory communicator (MPI stands in for NCCL: the arena is host
 * memory), at the latest moment the stream order allows (emu_coll_wait).
 *
 * Not emulated: the GPU's floating-point rounding of fused multiply-adds and
 * its transcendental functions (results match the CPU target to a stated
 * tolerance, not bit for bit), and concurrency between blocks.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bf16.h"
#include "device.h"
#include "emu_exec.h"

#define KA_DECL(name, sync) void name(acc_kargs a);
ACC_CUDA_KERNELS(KA_DECL)
#undef KA_DECL

static const struct {
    emu_kernel fn;
    int sync;
    const char *name;
} kernels[KID_COUNT] = {
#define KA_ROW(name, sync) {name, sync, #name},
    ACC_CUDA_KERNELS(KA_ROW)
#undef KA_ROW
};

/* One recorded call of a run: a launch, a GEMM (with an epilogue or not), a
 * phase mark, a copy of an offloaded activation (issue, wait, sync) or a
 * collective (issue, wait). */
typedef struct {
    enum {
        REC_LAUNCH,
        REC_GEMM,
        REC_GEMM_EP,
        REC_MARK,
        REC_COPY_ISSUE,
        REC_COPY_WAIT,
        REC_COPY_SYNC,
        REC_COLL_ISSUE,
        REC_COLL_WAIT
    } kind;
    acc_kernel_id k;
    unsigned grid, block;
    acc_kargs a;
    int bf16, ta, tb, phase, epi;
    long long m, n, kk, lda, sa, ldb, sb, ldc, sc, batch, ws_bytes;
    const void *A, *B;
    float beta;
    void *C, *bias, *ws;
    void *dst;      /* a copy: dst, A its source, m its bytes, phase its id, bf16 to_host */
    acc_comm *comm; /* a collective: comm, dst its buffer, m its count, phase its id, epi its kind */
} Rec;

/* A collective issued and not yet waited for. */
typedef struct {
    acc_comm *comm;
    float *buf;
    int64_t count;
    int kind, issued;
} Coll;

/* A copy to host memory issued and not yet done. */
typedef struct {
    void *dst;
    const void *src;
    size_t n;
    int id;
} Pending;

typedef struct {
    Rec *v;
    int n, cap;
    int runs; /* runs of the graph so far */
} Recording;

typedef struct {
    struct acc_dev head;
    unsigned char *arena;
    size_t arena_bytes;
    double mark_ms[ACC_PHASE_COUNT + 1];
    int last_phase;
    Recording graph[ACC_GRAPH_COUNT];
    Recording *recording; /* the graph being recorded, or NULL */
    int no_graphs;        /* ACC_CUDA_GRAPHS=0: every run calls its function */
    int no_epilogue;      /* ACC_EMU_NO_EPILOGUE=1: gemm_ep has no algorithm (the fallback's test) */
    /* The copy stream, adversarially: each copy happens at the last moment
     * its issue order and waits allow for a copy out (when a later copy,
     * its wait or the sync comes), at the first for a copy back (when
     * issued), so that a missing wait or an early issue corrupts data. */
    Pending *pend;
    int n_pend, cap_pend;
    /* the collectives, per id (the step's buckets, then the optimizer's
     * all-gathers) */
    Coll *coll;
    int coll_ids;
} EmuDev;

/* Append r to the recording in progress, if any. */
static void record(EmuDev *e, const Rec *r) {
    Recording *g = e->recording;
    if (!g || e->head.status) return;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 256;
        Rec *v = realloc(g->v, (size_t)cap * sizeof *v);
        if (!v) {
            dev_fail(&e->head, ACC_ERR_NOMEM, __FILE__, __LINE__, "cannot record a launch");
            return;
        }
        g->v = v, g->cap = cap;
    }
    g->v[g->n++] = *r;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int emu_kernel_launch(acc_dev *d, acc_kernel_id k, unsigned grid, unsigned block, const acc_kargs *a) {
    record((EmuDev *)d, &(Rec){.kind = REC_LAUNCH, .k = k, .grid = grid, .block = block, .a = *a});
    const char *err = emu_launch(kernels[k].fn, kernels[k].sync, (emu_dim3){grid, 1, 1}, (emu_dim3){block, 1, 1}, a);
    if (err)
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__, "%s<<<%u, %u>>>: %s", kernels[k].name, grid, block, err);
    return ACC_OK;
}

/* C (m x n) = op(A) op(B) + beta C, column-major, summed in order of k;
 * beta == 0 does not read C. */
static void ref_gemm(int ta, int tb, long long m, long long n, long long k, const float *A, long long lda,
                     const float *B, long long ldb, float beta, float *C, long long ldc) {
#pragma omp parallel for if (m * n * k > 32768)
    for (long long j = 0; j < n; j++)
        for (long long i = 0; i < m; i++) {
            float s = 0.0f;
            for (long long p = 0; p < k; p++) {
                float x = ta ? A[p + i * lda] : A[i + p * lda];
                float y = tb ? B[j + p * ldb] : B[p + j * ldb];
                s += x * y;
            }
            C[i + j * ldc] = beta == 0.0f ? s : s + beta * C[i + j * ldc];
        }
}

/* ref_gemm over bf16 A, B and C: the operands widened, the products summed
 * in float in order of k, then C = round(s + bias[i]) (bias: bf16, or NULL)
 * or round(s + beta C), one rounding. */
static void ref_gemm_bf16(int ta, int tb, long long m, long long n, long long k, const acc_bf16 *A, long long lda,
                          const acc_bf16 *B, long long ldb, float beta, acc_bf16 *C, long long ldc,
                          const acc_bf16 *bias) {
#pragma omp parallel for if (m * n * k > 32768)
    for (long long j = 0; j < n; j++)
        for (long long i = 0; i < m; i++) {
            float s = 0.0f;
            for (long long p = 0; p < k; p++) {
                float x = acc_bf16_f32(ta ? A[p + i * lda] : A[i + p * lda]);
                float y = acc_bf16_f32(tb ? B[j + p * ldb] : B[p + j * ldb]);
                s += x * y;
            }
            if (bias) s += acc_bf16_f32(bias[i]);
            else if (beta != 0.0f) s += beta * acc_bf16_f32(C[i + j * ldc]);
            C[i + j * ldc] = acc_f32_bf16(s);
        }
}

/* cublasSgemmStridedBatched(handle, ta, tb, m, n, k, 1, A, lda, sA, B, ldb,
 * sB, beta, C, ldc, sC, batch), column-major, checked like cuBLAS checks its
 * arguments; beta == 0 does not read C. Sums in order of k. */
static int emu_gemm(acc_dev *d, int bf16, int ta, int tb, long long m, long long n, long long k, const void *A,
                    long long lda, long long sA, const void *B, long long ldb, long long sB, float beta, void *C,
                    long long ldc, long long sC, long long batch) {
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (ta ? k : m) || lda < 1 || ldb < (tb ? n : k) || ldb < 1 ||
        ldc < m || ldc < 1)
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__,
                        "gemm: invalid value (m %lld n %lld k %lld lda %lld ldb %lld ldc %lld)", m, n, k, lda, ldb,
                        ldc);
    record((EmuDev *)d, &(Rec){.kind = REC_GEMM,
                               .bf16 = bf16,
                               .ta = ta,
                               .tb = tb,
                               .m = m,
                               .n = n,
                               .kk = k,
                               .A = A,
                               .lda = lda,
                               .sa = sA,
                               .B = B,
                               .ldb = ldb,
                               .sb = sB,
                               .beta = beta,
                               .C = C,
                               .ldc = ldc,
                               .sc = sC,
                               .batch = batch});
    for (long long b = 0; b < batch; b++) {
        if (bf16)
            ref_gemm_bf16(ta, tb, m, n, k, (const acc_bf16 *)A + b * sA, lda, (const acc_bf16 *)B + b * sB, ldb, beta,
                          (acc_bf16 *)C + b * sC, ldc, NULL);
        else
            ref_gemm(ta, tb, m, n, k, (const float *)A + b * sA, lda, (const float *)B + b * sB, ldb, beta,
                     (float *)C + b * sC, ldc);
    }
    return ACC_OK;
}

/* cublasLtMatmul with one epilogue (DevOps.gemm_ep in device.h), checked
 * like cuBLASLt checks its descriptors: the GEMM of emu_gemm, then nothing
 * more (DEV_EPI_NONE), the bias
 * added to each row of D, or the bias gradient, the sums over k of op(A)'s
 * rows (BGRADA) or op(B)'s columns (BGRADB) in order of k. The workspace is
 * not used. With ACC_EMU_NO_EPILOGUE=1 it has no algorithm (DEV_NO_ALGO). */
static int emu_gemm_ep(acc_dev *d, int bf16, int epi, int ta, int tb, long long m, long long n, long long k,
                       const void *A, long long lda, const void *B, long long ldb, float beta, void *D, long long ldd,
                       void *bias, void *ws, long long ws_bytes) {
    if (epi != DEV_EPI_NONE && epi != DEV_EPI_BIAS && epi != DEV_EPI_BGRADA && epi != DEV_EPI_BGRADB)
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__, "gemm_ep: unknown epilogue %d", epi);
    if (m < 1 || n < 1 || k < 1 || lda < (ta ? k : m) || ldb < (tb ? n : k) || ldd < m || !A || !B || !D ||
        !bias != !epi || ws_bytes < 0 || (ws_bytes && !ws))
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__,
                        "gemm_ep: invalid value (epilogue %d m %lld n %lld k %lld lda %lld ldb %lld ldd %lld, bias %s, "
                        "workspace %lld)",
                        epi, m, n, k, lda, ldb, ldd, bias ? "set" : "NULL", ws_bytes);
    if (((EmuDev *)d)->no_epilogue) return DEV_NO_ALGO;
    record((EmuDev *)d, &(Rec){.kind = REC_GEMM_EP,
                               .bf16 = bf16,
                               .epi = epi,
                               .ta = ta,
                               .tb = tb,
                               .m = m,
                               .n = n,
                               .kk = k,
                               .A = A,
                               .lda = lda,
                               .B = B,
                               .ldb = ldb,
                               .beta = beta,
                               .C = D,
                               .ldc = ldd,
                               .bias = bias,
                               .ws = ws,
                               .ws_bytes = ws_bytes});
    if (bf16) {
        const acc_bf16 *a = A, *b = B;
        float *sums = bias;
        ref_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, beta, D, ldd, epi == DEV_EPI_BIAS ? bias : NULL);
        if (epi == DEV_EPI_BGRADA) {
            for (long long i = 0; i < m; i++) {
                float s = 0.0f;
                for (long long p = 0; p < k; p++) s += acc_bf16_f32(ta ? a[p + i * lda] : a[i + p * lda]);
                sums[i] = s;
            }
        } else if (epi == DEV_EPI_BGRADB) {
            for (long long j = 0; j < n; j++) {
                float s = 0.0f;
                for (long long p = 0; p < k; p++) s += acc_bf16_f32(tb ? b[j + p * ldb] : b[p + j * ldb]);
                sums[j] = s;
            }
        }
        return ACC_OK;
    }
    const float *a = A, *b = B;
    float *dd = D, *bs = bias;
    ref_gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, dd, ldd);
    if (epi == DEV_EPI_BIAS) {
        for (long long j = 0; j < n; j++)
            for (long long i = 0; i < m; i++) dd[i + j * ldd] += bs[i];
    } else if (epi == DEV_EPI_BGRADA) {
        for (long long i = 0; i < m; i++) {
            float s = 0.0f;
            for (long long p = 0; p < k; p++) s += ta ? a[p + i * lda] : a[i + p * lda];
            bs[i] = s;
        }
    } else if (epi == DEV_EPI_BGRADB) {
        for (long long j = 0; j < n; j++) {
            float s = 0.0f;
            for (long long p = 0; p < k; p++) s += tb ? b[j + p * ldb] : b[p + j * ldb];
            bs[j] = s;
        }
    }
    return ACC_OK;
}

static const DevOps emu_ops = {emu_kernel_launch, emu_gemm, emu_gemm_ep};

static int emu_open(const acc_model_desc *desc, acc_dev **out, unsigned char **arena, int64_t *extra) {
    EmuDev *e = calloc(1, sizeof *e);
    if (!e) return ACC_ERR_NOMEM;
    e->head.ops = &emu_ops;
    const char *g = getenv("ACC_CUDA_GRAPHS");
    e->no_graphs = g && !strcmp(g, "0");
    const char *ne = getenv("ACC_EMU_NO_EPILOGUE");
    e->no_epilogue = ne && !strcmp(ne, "1");
    const char *sf = getenv("ACC_EMU_STAGE_OUT"); /* stage the misaligned GEMMs from this size (tests) */
    e->head.stage_out = sf ? atoll(sf) : 0;
    *out = &e->head;
    e->arena_bytes = (size_t)desc->arena_bytes;
    e->arena = aligned_alloc(256, (e->arena_bytes + 255) / 256 * 256);
    if (!e->arena) return dev_fail(&e->head, ACC_ERR_NOMEM, __FILE__, __LINE__, "cannot allocate the arena");
    *arena = e->arena;
    dev_set_workspace(&e->head, e->arena + desc->workspace_offset, desc->workspace_bytes);
    e->head.tf32 = desc->tf32;
    *extra = 0;
    if (desc->n_buckets > 0) {
        e->coll_ids = 2 * desc->n_buckets;
        if (!(e->coll = calloc((size_t)e->coll_ids, sizeof *e->coll)))
            return dev_fail(&e->head, ACC_ERR_NOMEM, __FILE__, __LINE__, "no memory for the collectives");
    }
    return ACC_OK;
}

static void emu_close(acc_dev *d) {
    EmuDev *e = (EmuDev *)d;
    for (int g = 0; g < ACC_GRAPH_COUNT; g++) free(e->graph[g].v);
    free(e->pend);
    free(e->coll);
    free(e->arena);
    free(e);
}

static int in_arena(const EmuDev *e, const unsigned char *p, size_t n) {
    return p >= e->arena && n <= e->arena_bytes && (size_t)(p - e->arena) <= e->arena_bytes - n;
}

static int emu_upload(acc_dev *d, unsigned char *dst, const void *src, size_t n) {
    if (!in_arena((EmuDev *)d, dst, n))
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__, "upload outside the arena");
    memcpy(dst, src, n);
    return d->status;
}

static int emu_download(acc_dev *d, void *dst, const unsigned char *src, size_t n) {
    if (!in_arena((EmuDev *)d, src, n))
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__, "download outside the arena");
    memcpy(dst, src, n);
    return d->status;
}

static int emu_copy(acc_dev *d, unsigned char *dst, const unsigned char *src, size_t n) {
    if (!in_arena((EmuDev *)d, dst, n) || !in_arena((EmuDev *)d, src, n))
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__, "copy outside the arena");
    memmove(dst, src, n);
    return d->status;
}

static int emu_host_alloc(acc_dev *d, size_t n, unsigned char **host) {
    *host = malloc(n > 0 ? n : 1);
    return *host ? d->status : dev_fail(d, ACC_ERR_NOMEM, __FILE__, __LINE__, "no host memory for offloading");
}

static void emu_host_free(acc_dev *d, unsigned char *host) {
    (void)d;
    free(host);
}

/* The pending copies out, in issue order, up to and including the last one
 * of id (all of them if id < 0). */
static void copy_flush(EmuDev *e, int id) {
    int upto = e->n_pend;
    if (id >= 0)
        for (upto = e->n_pend; upto > 0 && e->pend[upto - 1].id != id; upto--) continue;
    for (int i = 0; i < upto; i++) memcpy(e->pend[i].dst, e->pend[i].src, e->pend[i].n);
    memmove(e->pend, e->pend + upto, (size_t)(e->n_pend - upto) * sizeof *e->pend);
    e->n_pend -= upto;
}

static int copy_do(EmuDev *e, const Rec *r) {
    acc_dev *d = &e->head;
    switch (r->kind) {
    case REC_COPY_ISSUE:
        if (!in_arena(e, r->bf16 ? r->A : r->dst, (size_t)r->m))
            return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__, "copy %d outside the arena", r->phase);
        if (!r->bf16) { /* a copy back: after the copies out issued before it, now */
            copy_flush(e, -1);
            memcpy(r->dst, r->A, (size_t)r->m);
            return d->status;
        }
        if (e->n_pend == e->cap_pend) {
            int cap = e->cap_pend ? 2 * e->cap_pend : 64;
            Pending *p = realloc(e->pend, (size_t)cap * sizeof *p);
            if (!p) return dev_fail(d, ACC_ERR_NOMEM, __FILE__, __LINE__, "cannot queue a copy");
            e->pend = p, e->cap_pend = cap;
        }
        e->pend[e->n_pend++] = (Pending){r->dst, r->A, (size_t)r->m, r->phase};
        return d->status;
    case REC_COPY_WAIT: copy_flush(e, r->phase); return d->status;
    default: copy_flush(e, -1); return d->status;
    }
}

static int emu_copy_issue(acc_dev *d, int id, void *dst, const void *src, size_t n, int to_host) {
    Rec r = {.kind = REC_COPY_ISSUE, .dst = dst, .A = src, .m = (long long)n, .phase = id, .bf16 = to_host};
    record((EmuDev *)d, &r);
    return copy_do((EmuDev *)d, &r);
}

static int emu_copy_wait(acc_dev *d, int id) {
    Rec r = {.kind = REC_COPY_WAIT, .phase = id};
    record((EmuDev *)d, &r);
    return copy_do((EmuDev *)d, &r);
}

static int emu_copy_sync(acc_dev *d) {
    Rec r = {.kind = REC_COPY_SYNC};
    record((EmuDev *)d, &r);
    return copy_do((EmuDev *)d, &r);
}

/* comm's failure (rc) as the device's */
static int coll_fail(EmuDev *e, acc_comm *comm, int id, int rc) {
    const char *why = comm->error ? comm->error(comm) : "";
    return dev_fail(&e->head, rc, __FILE__, __LINE__, "collective %d (%s): %s", id, comm->name ? comm->name : "?",
                    why && *why ? why : acc_status_string(rc));
}

/* The collectives' stream, adversarially: a collective issued is only
 * noted, and runs at its wait, through comm->issue and comm->wait there,
 * so it reads its buffer as late as the stream order allows and writes its
 * result as late as well. A kernel that writes a bucket after its ready
 * point changes what is reduced, one that reads it before the wait reads
 * this rank's own gradients, and a collective never waited for does not run
 * at all (and the run fails at its end): each is a wrong result or an
 * error in the tests, never a lucky pass. (Issuing at the issue point
 * through MPI's non-blocking calls instead would let MPI's progress decide
 * when the buffer is read, which is not reproducible.) Every rank runs the
 * same schedule, so the collectives still start in the same order on every
 * rank. */
static int coll_do(EmuDev *e, const Rec *r) {
    acc_dev *d = &e->head;
    int id = r->phase;
    if (!r->comm) return dev_fail(d, ACC_ERR_COMM, __FILE__, __LINE__, "collective %d without a communicator", id);
    if (id < 0 || id >= e->coll_ids)
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "collective id %d out of range (%d ids)", id, e->coll_ids);
    Coll *c = &e->coll[id];
    if (r->kind == REC_COLL_WAIT) {
        if (!c->issued)
            return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "wait for collective %d, which was not issued", id);
        c->issued = 0;
        int rc = c->comm->issue(c->comm, id, c->kind, c->buf, c->count, NULL);
        if (!rc) rc = c->comm->wait(c->comm, id);
        return rc ? coll_fail(e, c->comm, id, rc) : d->status;
    }
    if (r->comm->device_memory)
        return dev_fail(d, ACC_ERR_COMM, __FILE__, __LINE__,
                        "the communicator '%s' reaches device memory, and the emulator's arena is host memory: use a "
                        "host-memory one (MPI: acc_comm_mpi, accrt_mpi.h)",
                        r->comm->name ? r->comm->name : "?");
    if (c->issued)
        return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "collective %d issued again before its wait", id);
    int64_t floats = (int64_t)(e->arena_bytes / sizeof(float));
    int64_t n = r->epi == ACC_COLL_ALLREDUCE || r->m < 0 || r->m > floats ? r->m : r->m * r->comm->size;
    if (r->m < 0 || n > floats || !in_arena(e, r->dst, (size_t)n * sizeof(float)))
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__, "collective %d: %lld floats outside the arena", id,
                        (long long)n);
    *c = (Coll){r->comm, r->dst, r->m, r->epi, 1};
    return d->status;
}

static int emu_coll_issue(acc_dev *d, acc_comm *comm, int id, int kind, float *buf, int64_t count) {
    Rec r = {.kind = REC_COLL_ISSUE, .comm = comm, .dst = buf, .m = count, .phase = id, .epi = kind};
    if (d->status) return d->status;
    record((EmuDev *)d, &r);
    return coll_do((EmuDev *)d, &r);
}

static int emu_coll_wait(acc_dev *d, acc_comm *comm, int id) {
    Rec r = {.kind = REC_COLL_WAIT, .comm = comm, .phase = id};
    if (d->status) return d->status;
    record((EmuDev *)d, &r);
    return coll_do((EmuDev *)d, &r);
}

/* A collective still pending at the end of a run was never waited for. */
static int coll_check_done(EmuDev *e) {
    for (int id = 0; id < e->coll_ids && !e->head.status; id++)
        if (e->coll[id].issued) {
            e->coll[id].issued = 0;
            return dev_fail(&e->head, ACC_ERR_COMM, __FILE__, __LINE__,
                            "collective %d was issued and never waited for: its result was not reduced", id);
        }
    return e->head.status;
}

static int emu_zero(acc_dev *d, unsigned char *dst, size_t n) {
    if (!in_arena((EmuDev *)d, dst, n))
        return dev_fail(d, ACC_ERR_DEVICE, __FILE__, __LINE__, "memset outside the arena");
    memset(dst, 0, n);
    return d->status;
}

static int emu_mark(acc_dev *d, int phase) {
    EmuDev *e = (EmuDev *)d;
    record(e, &(Rec){.kind = REC_MARK, .phase = phase});
    e->mark_ms[phase] = now_ms();
    if (phase == ACC_PHASE_FWD) e->mark_ms[ACC_PHASE_BWD] = e->mark_ms[ACC_PHASE_FWD];
    return d->status;
}

static int emu_finish(acc_dev *d, double ms[ACC_PHASE_COUNT]) {
    EmuDev *e = (EmuDev *)d;
    coll_check_done(e);
    ms[ACC_PHASE_FWD] = e->mark_ms[ACC_PHASE_BWD] - e->mark_ms[ACC_PHASE_FWD];
    ms[ACC_PHASE_BWD] = e->mark_ms[ACC_PHASE_COUNT] - e->mark_ms[ACC_PHASE_BWD];
    ms[ACC_PHASE_OPT] = 0;
    return d->status;
}

/* The GPU's graphs, emulated: the first run of a graph calls fn, the second
 * calls fn and records every launch, GEMM and mark, and the later runs
 * replay the recording. A value fn passed by launch argument that should
 * have come from the scalars would be replayed stale, and the tests that
 * compare several steps with the CPU target would see it. */
static int emu_run(acc_dev *d, int graph, int (*fn)(void *), void *arg, const acc_scalars *s) {
    EmuDev *e = (EmuDev *)d;
    if (d->status) return d->status;
    if (!d->scalars) return dev_fail(d, ACC_ERR_ARG, __FILE__, __LINE__, "no workspace for the step's scalars");
    memcpy(d->scalars, s, sizeof *s);
    Recording *g = &e->graph[graph];
    if (e->no_graphs || g->runs < 1) {
        g->runs++;
        int rc = fn(arg);
        return rc ? rc : coll_check_done(e);
    }
    if (g->runs == 1) {
        g->n = 0;
        e->recording = g;
        int rc = fn(arg);
        e->recording = NULL;
        if (!rc) rc = coll_check_done(e);
        if (rc == ACC_OK && !d->status) g->runs++; /* else record again next time */
        return rc ? rc : d->status;
    }
    for (int i = 0; i < g->n && !d->status; i++) {
        const Rec *r = &g->v[i];
        if (r->kind == REC_LAUNCH) emu_kernel_launch(d, r->k, r->grid, r->block, &r->a);
        else if (r->kind == REC_GEMM)
            emu_gemm(d, r->bf16, r->ta, r->tb, r->m, r->n, r->kk, r->A, r->lda, r->sa, r->B, r->ldb, r->sb, r->beta,
                     r->C, r->ldc, r->sc, r->batch);
        else if (r->kind >= REC_COLL_ISSUE) coll_do(e, r);
        else if (r->kind >= REC_COPY_ISSUE) copy_do(e, r);
        else if (r->kind == REC_GEMM_EP)
            emu_gemm_ep(d, r->bf16, r->epi, r->ta, r->tb, r->m, r->n, r->kk, r->A, r->lda, r->B, r->ldb, r->beta, r->C,
                        r->ldc, r->bias, r->ws, r->ws_bytes);
        else emu_mark(d, r->phase);
    }
    return coll_check_done(e);
}

static const char *emu_error(const acc_dev *d) { return dev_error(d); }

static int emu_sum_squares_result(acc_dev *d, double *sum) {
    return emu_download(d, sum, dev_sum_squares_total(d), sizeof *sum);
}

const acc_device acc_device_cuda_emu = {
    .name = "cuda-emu",
    .open = emu_open,
    .close = emu_close,
    .upload = emu_upload,
    .download = emu_download,
    .zero = emu_zero,
    .copy = emu_copy,
    .mark = emu_mark,
    .finish = emu_finish,
    .run = emu_run,
    .adamw = dev_adamw,
    .error = emu_error,
    .sum_squares = dev_sum_squares,
    .sum_squares_result = emu_sum_squares_result,
    .scale = dev_scale,
    .accumulate = dev_accumulate,
    .host_alloc = emu_host_alloc,
    .host_free = emu_host_free,
    .copy_issue = emu_copy_issue,
    .copy_wait = emu_copy_wait,
    .copy_sync = emu_copy_sync,
    .coll_issue = emu_coll_issue,
    .coll_wait = emu_coll_wait,
};
