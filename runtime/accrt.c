/* accrt.c - the model-independent part of every generated library: one arena
 * allocation, parameter initialisation and files, inputs, the step driver with
 * per-phase timing, AdamW, status codes and per-instance error detail.
 *
 * Invariant: after acc_create succeeds the instance holds exactly one
 * allocation, the arena of desc->arena_bytes (the planned peak), plus its own
 * small struct; nothing else is allocated while training.
 */
#include "accrt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_kernels.h"
#include "philox.h"

struct acc_model {
    const acc_model_desc *desc;
    unsigned char *arena; /* host memory, or the device address of the arena */
    unsigned char *host;  /* the host arena of offloaded activations, or NULL */
    float *host_state;    /* optimizer_host: every parameter's m, then every parameter's v; NULL otherwise */
    int64_t state_elems;  /* elements of each of the two */
    float *stage;         /* optimizer_host on a device: a chunk of parameters and one of gradients */
    acc_dev *dev;         /* NULL on the CPU target */
    uint64_t seed;
    uint32_t step;
    int64_t adam_t;
    unsigned char *input_set; /* one flag per input (inside the struct's own allocation) */
    unsigned char *param_set; /* one flag per parameter: given a value (init, load, write, a pointer handed out) */
    int failed;               /* a step failed midway: gradients are unusable until the next step */
    acc_counters counters;
    acc_comm *comm;         /* data parallel: the ranks (acc_set_comm), or NULL */
    unsigned char *pending; /* ZeRO-2: per bucket, its collective is not done (acc_grad_done) */
    int grad_sync;          /* acc_set_grad_sync: steps reduce the gradients over the ranks */
    double phase_start;
    int phase;
    char err[512];
};

#define F32(m, off) ((float *)((m)->arena + (off)))

static const char *const status_text[] = {
    [ACC_OK] = "success",
    [ACC_ERR_NULL] = "a required pointer argument is NULL",
    [ACC_ERR_SIZE] = "wrong buffer size",
    [ACC_ERR_NAME] = "no parameter or input of that name",
    [ACC_ERR_NOMEM] = "out of memory",
    [ACC_ERR_STATE] = "call out of order",
    [ACC_ERR_IO] = "file input/output error",
    [ACC_ERR_FORMAT] = "file does not match this model",
    [ACC_ERR_DATA] = "input data out of range",
    [ACC_ERR_VERSION] = "incompatible API version",
    [ACC_ERR_NO_DEVICE] = "no usable device",
    [ACC_ERR_ARG] = "argument out of range",
    [ACC_ERR_FAILED] = "instance unusable after an earlier failure",
    [ACC_ERR_DEVICE] = "a device operation failed",
    [ACC_ERR_COMM] = "a collective failed or the ranks disagree",
};

const char *acc_status_string(int status) {
    if (status < 0 || status >= (int)(sizeof status_text / sizeof *status_text) || !status_text[status])
        return "unknown status";
    return status_text[status];
}

static int fail(acc_model *m, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(acc_model *m, int status, const char *fmt, ...) {
    if (m) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->err, sizeof m->err, fmt, ap);
        va_end(ap);
    }
    return status;
}

int acc_fail(acc_ctx *ctx, int status, const char *fmt, ...) {
    if (ctx && ctx->model) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->model->err, sizeof ctx->model->err, fmt, ap);
        va_end(ap);
    }
    return status;
}

const char *acc_last_error(const acc_model *m) { return m ? m->err : "no instance (NULL)"; }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void acc_phase(acc_ctx *ctx, int phase) {
    acc_model *m = ctx->model;
    if (m->dev) { /* the device times its own phases (events) */
        m->desc->device->mark(m->dev, phase);
        return;
    }
    double t = now_ms();
    if (m->phase >= 0) { /* a step's micro-batches add up */
        m->counters.phase_ms[m->phase] += t - m->phase_start;
        m->counters.total_ms[m->phase] += t - m->phase_start;
    }
    m->phase = phase;
    m->phase_start = t;
}

/* ---- arena access: host memory, or copies through the device layer ------------ */

/* An instance whose device never opened can do nothing. */
static int unusable(acc_model *m) {
    return m->failed == 2 ? fail(m, ACC_ERR_NO_DEVICE, "the device could not be opened (see acc_create's error)") : 0;
}

static int dev_status(acc_model *m, int rc) {
    return rc == ACC_OK ? ACC_OK : fail(m, rc, "%s", m->desc->device->error(m->dev));
}

static int mem_put(acc_model *m, int64_t off, const void *src, size_t n) {
    if (!m->dev) {
        memcpy(m->arena + off, src, n);
        return ACC_OK;
    }
    return dev_status(m, m->desc->device->upload(m->dev, m->arena + off, src, n));
}

static int mem_get(acc_model *m, void *dst, int64_t off, size_t n) {
    if (!m->dev) {
        memcpy(dst, m->arena + off, n);
        return ACC_OK;
    }
    return dev_status(m, m->desc->device->download(m->dev, dst, m->arena + off, n));
}

static int mem_copy(acc_model *m, int64_t dst, int64_t src, size_t n) {
    if (!m->dev) {
        memcpy(m->arena + dst, m->arena + src, n);
        return ACC_OK;
    }
    return dev_status(m, m->desc->device->copy(m->dev, m->arena + dst, m->arena + src, n));
}

static int mem_zero(acc_model *m, int64_t off, size_t n) {
    if (!m->dev) {
        memset(m->arena + off, 0, n);
        return ACC_OK;
    }
    return dev_status(m, m->desc->device->zero(m->dev, m->arena + off, n));
}

/* Floats staged through host memory on a device target, per copy. */
#define STAGE_ELEMS ((int64_t)1 << 20)

/* --optimizer-state host: the moments (zero) and, on a device, the staging of
 * the update, counted in the host bytes. */
static int alloc_host_state(acc_model *m) {
    const acc_model_desc *d = m->desc;
    if (!d->optimizer_host_bytes) return ACC_OK;
    for (int p = 0; p < d->n_params; p++) m->state_elems += d->params[p].elems;
    if (d->optimizer_host_bytes != 8 * m->state_elems) return ACC_ERR_VERSION; /* not this runtime's layout */
    m->host_state = calloc((size_t)(2 * m->state_elems > 0 ? 2 * m->state_elems : 1), sizeof(float));
    if (d->device) m->stage = malloc((size_t)STAGE_ELEMS * 2 * sizeof(float));
    if (!m->host_state || (d->device && !m->stage)) return ACC_ERR_NOMEM;
    m->counters.host_bytes += 2 * m->state_elems * 4;
    return ACC_OK;
}

int acc_create(const acc_model_desc *desc, const acc_options *opt, acc_model **out) {
    if (!out) return ACC_ERR_NULL;
    *out = NULL;
    if (!desc) return ACC_ERR_NULL;
    if (desc->api_version != ACC_API_VERSION) return ACC_ERR_VERSION;
    if (opt && (opt->struct_size < sizeof(uint32_t) * 2 || opt->api_version != ACC_API_VERSION)) return ACC_ERR_VERSION;
    if (desc->n_inputs < 0 || desc->n_params < 0) return ACC_ERR_ARG;
    if (desc->n_buckets < 0) return ACC_ERR_ARG;
    size_t self = sizeof(acc_model) + (size_t)desc->n_inputs + (size_t)desc->n_params + (size_t)desc->n_buckets + 1;
    acc_model *m = calloc(1, self);
    if (!m) return ACC_ERR_NOMEM;
    m->desc = desc;
    m->input_set = (unsigned char *)(m + 1);
    m->param_set = m->input_set + desc->n_inputs;
    m->pending = m->param_set + desc->n_params;
    m->phase = -1;
    m->grad_sync = 1;
    if (opt && opt->struct_size >= offsetof(acc_options, seed) + sizeof opt->seed) m->seed = opt->seed;
#ifdef _OPENMP
    if (opt && opt->struct_size >= offsetof(acc_options, num_threads) + sizeof(int) && opt->num_threads > 0)
        omp_set_num_threads(opt->num_threads);
#endif
    size_t bytes = (size_t)desc->arena_bytes;
    m->counters.arena_bytes = desc->arena_bytes;
    if (desc->device) {
        /* the instance is returned even when the device cannot be opened, so
         * that acc_last_error can say why; every other call then fails */
        int64_t extra = 0;
        int rc = desc->device->open(desc, &m->dev, &m->arena, &extra);
        if (rc != ACC_OK) {
            fail(m, rc, "%s", m->dev ? desc->device->error(m->dev) : "cannot open the device");
            m->failed = 2;
            *out = m;
            return rc;
        }
        m->counters.peak_bytes_measured = desc->arena_bytes + extra;
        *out = m;
        if (desc->host_bytes > 0) {
            rc = dev_status(m, desc->device->host_alloc(m->dev, (size_t)desc->host_bytes, &m->host));
            if (rc != ACC_OK) return m->failed = 2, rc;
            m->counters.host_bytes = desc->host_bytes;
        }
        if ((rc = alloc_host_state(m)) != ACC_OK) {
            m->failed = 2;
            return fail(m, rc, "no host memory for the optimizer state, or a layout of another runtime");
        }
        /* as on the CPU target, the arena starts zeroed (optimizer state) */
        return mem_zero(m, 0, bytes);
    }
    /* 64-byte alignment: every planned offset is a multiple of 64 */
    m->arena = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!m->arena) {
        free(m);
        return ACC_ERR_NOMEM;
    }
    memset(m->arena, 0, bytes);
    m->counters.peak_bytes_measured = (int64_t)((bytes + 63) / 64 * 64);
    if (desc->host_bytes > 0) { /* the offloaded activations' own memory, beside the arena */
        m->host = aligned_alloc(64, (size_t)(desc->host_bytes + 63) / 64 * 64);
        if (!m->host) {
            free(m->arena);
            free(m);
            return ACC_ERR_NOMEM;
        }
        m->counters.host_bytes = desc->host_bytes;
    }
    int rc = alloc_host_state(m);
    if (rc != ACC_OK) {
        acc_destroy(m);
        return rc;
    }
    *out = m;
    return ACC_OK;
}

int acc_copy_issue(acc_ctx *ctx, int id, int64_t host_off, void *p, size_t n, int to_host) {
    acc_model *m = ctx->model;
    unsigned char *h = ctx->host + host_off;
    if (!m->dev) {
        memcpy(to_host ? h : p, to_host ? p : (const void *)h, n);
        return ACC_OK;
    }
    return dev_status(
        m, m->desc->device->copy_issue(m->dev, id, to_host ? (void *)h : p, to_host ? p : (const void *)h, n, to_host));
}

int acc_copy_wait(acc_ctx *ctx, int id) {
    acc_model *m = ctx->model;
    return m->dev ? dev_status(m, m->desc->device->copy_wait(m->dev, id)) : ACC_OK;
}

int acc_copy_sync(acc_ctx *ctx) {
    acc_model *m = ctx->model;
    return m->dev ? dev_status(m, m->desc->device->copy_sync(m->dev)) : ACC_OK;
}

/* ---- data parallel ---- */

void acc_comm_destroy(acc_comm *c) {
    if (c && c->destroy) c->destroy(c);
}

double acc_comm_timeout(void) {
    const char *v = getenv("ACC_COMM_TIMEOUT");
    if (!v || !*v) return 600;
    char *end = NULL;
    double t = strtod(v, &end);
    return *end || !(t >= 0) || t > 1e9 ? -1 : t;
}

/* ACC_OK, or ACC_ERR_COMM with the communicator's detail. */
static int comm_status(acc_model *m, int rc, const char *what) {
    if (rc == ACC_OK) return ACC_OK;
    return fail(m, ACC_ERR_COMM, "%s: %s", what, m->comm->error ? m->comm->error(m->comm) : "failed");
}

static int ranks(const acc_model_desc *d) { return d->ranks > 1 ? d->ranks : 1; }
/* ZeRO-1 and -2: each rank keeps the moments of its pieces alone */
static int sharded(const acc_model_desc *d) { return d->ranks > 1 && d->zero; }
/* ZeRO-2: and of the gradients, each step's reduced as the backward goes */
static int zero2(const acc_model_desc *d) { return d->ranks > 1 && d->zero == 2; }

/* ZeRO-2 keeps no whole gradients to read. */
static int no_grads(acc_model *m, const char *what) {
    return fail(m, ACC_ERR_STATE,
                "%s: with ZeRO-2 a rank keeps only its shard of the reduced gradients, not the gradients of a "
                "parameter",
                what);
}


int acc_set_comm(acc_model *m, acc_comm *comm) {
    if (!m) return ACC_ERR_NULL;
    if (!comm || !comm->issue || !comm->wait || !comm->allreduce_host)
        return fail(m, ACC_ERR_NULL, "acc_set_comm: NULL communicator or one without its functions");
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    const acc_model_desc *d = m->desc;
    if (comm->size != ranks(d) || comm->rank < 0 || comm->rank >= comm->size)
        return fail(m, ACC_ERR_ARG,
                    "acc_set_comm: the library was compiled for %d rank%s (acc compile --ranks), the communicator "
                    "is rank %d of %d",
                    ranks(d), ranks(d) == 1 ? "" : "s", comm->rank, comm->size);
    if (m->comm && m->comm != comm) /* a device's recorded steps hold the first */
        return fail(m, ACC_ERR_STATE,
                    "acc_set_comm: the instance has a communicator already; a model is created for one group of "
                    "ranks");
    if (!d->device && comm->device_memory)
        return fail(m, ACC_ERR_ARG,
                    "acc_set_comm: the %s communicator reduces device memory; the %s target's arena is host "
                    "memory (acc_comm_mpi)",
                    comm->name, d->target);
    /* every rank runs the same plan: the largest and the smallest hash
     * equal this one's (in two exact halves of 32 bits) */
    double hi = (double)(d->plan_hash >> 32), lo = (double)(d->plan_hash & 0xffffffffu);
    double most[2] = {hi, lo}, least[2] = {hi, lo};
    m->comm = comm;
    int rc = comm_status(m, comm->allreduce_host(comm, most, 2, ACC_RED_MAX), "acc_set_comm");
    if (rc == ACC_OK) rc = comm_status(m, comm->allreduce_host(comm, least, 2, ACC_RED_MIN), "acc_set_comm");
    if (rc == ACC_OK && (most[0] != hi || most[1] != lo || least[0] != hi || least[1] != lo))
        rc = fail(m, ACC_ERR_COMM,
                  "acc_set_comm: the ranks run different plans (rank %d's plan hash is %016llx): every rank must "
                  "link the library of one compilation",
                  comm->rank, (unsigned long long)d->plan_hash);
    if (rc != ACC_OK) m->comm = NULL;
    return rc;
}

int acc_set_grad_sync(acc_model *m, int sync) {
    if (!m) return ACC_ERR_NULL;
    if (sync != 0 && sync != 1) return fail(m, ACC_ERR_ARG, "acc_set_grad_sync: sync = %d must be 0 or 1", sync);
    if (!sync && zero2(m->desc))
        return fail(m, ACC_ERR_STATE,
                    "acc_set_grad_sync: ZeRO-2 keeps no gradients of its own between steps: every step reduces "
                    "(and accumulates into the rank's shard)");
    m->grad_sync = sync;
    return ACC_OK;
}

/* Collective id on count floats at arena offset off: on a device beside
 * its launches, on the host through the communicator. */
static int coll_issue(acc_model *m, int id, int kind, int64_t off, int64_t count) {
    const acc_model_desc *d = m->desc;
    if (!m->dev) return comm_status(m, m->comm->issue(m->comm, id, kind, F32(m, off), count, NULL), "a collective");
    if (!d->device->coll_issue) return fail(m, ACC_ERR_COMM, "the %s device layer has no collectives", d->device->name);
    int rc = d->device->coll_issue(m->dev, m->comm, id, kind, F32(m, off), count);
    return rc == ACC_ERR_COMM ? fail(m, rc, "%s", d->device->error(m->dev)) : dev_status(m, rc);
}

static int coll_wait(acc_model *m, int id) {
    if (!m->dev) return comm_status(m, m->comm->wait(m->comm, id), "a collective");
    int rc = m->desc->device->coll_wait(m->dev, m->comm, id);
    return rc == ACC_ERR_COMM ? fail(m, rc, "%s", m->desc->device->error(m->dev)) : dev_status(m, rc);
}

/* Bucket k's reduction: all of it, or (ZeRO-1) this rank's piece. */
int acc_grad_ready(acc_ctx *ctx, int k) {
    if (!ctx->reduce) return ACC_OK;
    acc_model *m = ctx->model;
    const acc_model_desc *d = m->desc;
    const acc_bucket *b = &d->buckets[k];
    int64_t floats = b->bytes / 4;
    if (zero2(d)) m->pending[k] = 1;
    return d->zero ? coll_issue(m, k, ACC_COLL_REDUCE_SCATTER, b->grad_offset, floats / d->ranks)
                   : coll_issue(m, k, ACC_COLL_ALLREDUCE, b->grad_offset, floats);
}

/* ZeRO-2: this rank's piece of bucket k (one parameter's gradient) into
 * the shard, added when the step accumulates (micro-batches after the
 * first, acc_forward_backward's accumulate). */
int acc_grad_done(acc_ctx *ctx, int k) {
    acc_model *m = ctx->model;
    const acc_model_desc *d = m->desc;
    if (!ctx->reduce || !m->pending[k]) return ACC_OK;
    m->pending[k] = 0;
    int rc = coll_wait(m, k);
    const acc_bucket *b = &d->buckets[k];
    int64_t piece = b->bytes / d->ranks;
    int64_t src = b->grad_offset + m->comm->rank * piece, dst = d->shard_g_offset + 4 * b->shard_offset;
    if (rc != ACC_OK) return rc;
    if (m->dev) /* launches in the run, after the collective's wait */
        return dev_status(m, d->device->accumulate(m->dev, F32(m, dst), F32(m, src), piece / 4, ctx->accumulate));
    if (!ctx->accumulate) return mem_copy(m, dst, src, (size_t)piece);
    float *x = F32(m, dst);
    const float *y = F32(m, src);
    for (int64_t i = 0; i < piece / 4; i++) x[i] += y[i];
    return ACC_OK;
}

int acc_grad_sync(acc_ctx *ctx) {
    if (!ctx->reduce) return ACC_OK;
    acc_model *m = ctx->model;
    int rc = ACC_OK;
    for (int k = 0; rc == ACC_OK && k < m->desc->n_buckets; k++)
        rc = zero2(m->desc) ? acc_grad_done(ctx, k) : coll_wait(m, k);
    return rc;
}

/* ZeRO: fn on every run of this rank's pieces that lies in one parameter
 * (el: its first element in the parameter, n elements, sh: where its
 * moments, and with ZeRO-2 its gradients, start in the shard). */
typedef int (*shard_fn)(acc_model *m, const acc_param_desc *pd, int64_t el, int64_t n, int64_t sh, void *arg);

static int for_shard(acc_model *m, shard_fn fn, void *arg) {
    const acc_model_desc *d = m->desc;
    int rc = ACC_OK;
    for (int k = 0; rc == ACC_OK && k < d->n_buckets; k++) {
        const acc_bucket *b = &d->buckets[k];
        int64_t piece = b->bytes / d->ranks, lo = b->param_offset + m->comm->rank * piece, hi = lo + piece;
        for (int p = 0; rc == ACC_OK && p < d->n_params; p++) {
            const acc_param_desc *pd = &d->params[p];
            int64_t a = pd->offset > lo ? pd->offset : lo,
                    z = pd->offset + pd->elems * 4 < hi ? pd->offset + pd->elems * 4 : hi;
            if (a < z) rc = fn(m, pd, (a - pd->offset) / 4, (z - a) / 4, b->shard_offset + (a - lo) / 4, arg);
        }
    }
    return rc;
}

typedef struct {
    float lr, beta1, beta2, eps, wd;
} AdamArgs;

/* A piece's reduced gradients: in the parameter's gradient (ZeRO-0, -1)
 * or in the rank's shard of them (ZeRO-2). */
static float *piece_grad(acc_model *m, const acc_param_desc *pd, int64_t el, int64_t sh) {
    return zero2(m->desc) ? F32(m, m->desc->shard_g_offset) + sh : F32(m, pd->grad_offset) + el;
}

static int adamw_piece(acc_model *m, const acc_param_desc *pd, int64_t el, int64_t n, int64_t sh, void *arg) {
    const acc_model_desc *d = m->desc;
    const AdamArgs *a = arg;
    float *p = F32(m, pd->offset) + el, *g = piece_grad(m, pd, el, sh);
    size_t es = d->optimizer_dtype == ACC_DT_BF16 ? 2 : 4;
    unsigned char *mm = m->arena + d->shard_m_offset + sh * (int64_t)es,
                  *vv = m->arena + d->shard_v_offset + sh * (int64_t)es;
    if (m->dev) return d->device->adamw(m->dev, p, g, mm, vv, n, d->optimizer_dtype);
    if (d->optimizer_dtype == ACC_DT_BF16)
        k_adamw_bf16(p, g, (acc_bf16 *)mm, (acc_bf16 *)vv, n, a->lr, a->beta1, a->beta2, a->eps, a->wd, m->adam_t);
    else k_adamw(p, g, (float *)mm, (float *)vv, n, a->lr, a->beta1, a->beta2, a->eps, a->wd, m->adam_t);
    return ACC_OK;
}

/* ZeRO's update: this rank's pieces, then every rank's gathered (ids
 * n_buckets + k). On a device, the launches of one run. */
static int adamw_shard(acc_model *m, AdamArgs *a) {
    const acc_model_desc *d = m->desc;
    int rc = for_shard(m, adamw_piece, a);
    for (int k = 0; rc == ACC_OK && k < d->n_buckets; k++)
        rc = coll_issue(m, d->n_buckets + k, ACC_COLL_ALLGATHER, d->buckets[k].param_offset,
                        d->buckets[k].bytes / 4 / d->ranks);
    for (int k = 0; rc == ACC_OK && k < d->n_buckets; k++) rc = coll_wait(m, d->n_buckets + k);
    return rc;
}

void acc_destroy(acc_model *m) {
    if (!m) return;
    if (m->desc->device) {
        if (m->host) m->desc->device->host_free(m->dev, m->host);
        if (m->dev) m->desc->device->close(m->dev);
    } else {
        free(m->arena);
        free(m->host);
    }
    free(m->host_state);
    free(m->stage);
    free(m);
}


/* Box-Muller on two counter-based uniforms: a pure function of (seed, p, i). */
static float normal_at(uint64_t seed, uint32_t p, uint64_t i) {
    float u1 = philox_uniform(seed, 0x9a9a, p, 2 * i), u2 = philox_uniform(seed, 0x9a9a, p, 2 * i + 1);
    double r = sqrt(-2.0 * log(1.0 - (double)u1));
    return (float)(r * cos(6.283185307179586 * (double)u2));
}

/* Elements [i0, i0 + n) of parameter p's initial value into x. */
static void init_values(const acc_param_desc *pd, int p, uint64_t seed, float *x, int64_t i0, int64_t n) {
    float s = pd->init_scale;
    switch (pd->init) {
    case ACC_INIT_ZEROS: memset(x, 0, (size_t)n * 4); break;
    case ACC_INIT_ONES:
        for (int64_t i = 0; i < n; i++) x[i] = 1.0f;
        break;
    case ACC_INIT_NORMAL:
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) x[i] = s * normal_at(seed, (uint32_t)p, (uint64_t)(i0 + i));
        break;
    default:
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++)
            x[i] = s * (2.0f * philox_uniform(seed, 0x7a7a, (uint32_t)p, (uint64_t)(i0 + i)) - 1.0f);
        break;
    }
}

int acc_init_params(acc_model *m, uint64_t seed) {
    if (!m) return ACC_ERR_NULL;
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    const acc_model_desc *d = m->desc;
    float *stage = NULL;
    int rc = ACC_OK;
    for (int p = 0; rc == ACC_OK && p < d->n_params; p++) {
        const acc_param_desc *pd = &d->params[p];
        int64_t n = pd->elems;
        if (pd->init < ACC_INIT_ZEROS || pd->init > ACC_INIT_UNIFORM) {
            rc = fail(m, ACC_ERR_ARG, "parameter %s: unknown initializer %d", pd->name, pd->init);
            break;
        }
        if (!m->dev) {
            init_values(pd, p, seed, F32(m, pd->offset), 0, n);
        } else {
            if (!stage && !(stage = malloc((size_t)STAGE_ELEMS * 4)))
                return fail(m, ACC_ERR_NOMEM, "no staging buffer");
            for (int64_t i0 = 0; rc == ACC_OK && i0 < n; i0 += STAGE_ELEMS) {
                int64_t k = n - i0 < STAGE_ELEMS ? n - i0 : STAGE_ELEMS;
                init_values(pd, p, seed, stage, i0, k);
                rc = mem_put(m, pd->offset + i0 * 4, stage, (size_t)k * 4);
            }
        }
        if (rc == ACC_OK) rc = mem_zero(m, pd->grad_offset, (size_t)n * 4);
        /* the moments at their dtype's size (bf16 zero is all-zero bits too) */
        size_t state_bytes = (size_t)n * (d->optimizer_dtype == ACC_DT_BF16 ? 2 : 4);
        if (rc == ACC_OK && pd->m_offset >= 0) rc = mem_zero(m, pd->m_offset, state_bytes);
        if (rc == ACC_OK && pd->v_offset >= 0) rc = mem_zero(m, pd->v_offset, state_bytes);
        if (rc == ACC_OK) m->param_set[p] = 1;
    }
    free(stage);
    if (rc == ACC_OK && sharded(d)) { /* ZeRO: this rank's moments (and gradients) */
        size_t state_bytes = (size_t)d->shard_elems * (d->optimizer_dtype == ACC_DT_BF16 ? 2 : 4);
        if (d->has_optimizer) rc = mem_zero(m, d->shard_m_offset, state_bytes);
        if (rc == ACC_OK && d->has_optimizer) rc = mem_zero(m, d->shard_v_offset, state_bytes);
        if (rc == ACC_OK && zero2(d)) rc = mem_zero(m, d->shard_g_offset, (size_t)d->shard_elems * 4);
    }
    if (m->host_state) memset(m->host_state, 0, (size_t)(2 * m->state_elems) * sizeof(float));
    m->adam_t = 0;
    return rc;
}

/* --optimizer-state host: every parameter's update on the host, from its
 * moments there; a device's parameters and gradients copied in chunks (each
 * element's update is independent of the chunking). */
static int adamw_host(acc_model *m, float lr, float beta1, float beta2, float eps, float wd) {
    const acc_model_desc *d = m->desc;
    float *mm = m->host_state, *vv = m->host_state + m->state_elems;
    int rc = ACC_OK;
    for (int p = 0; rc == ACC_OK && p < d->n_params; p++) {
        const acc_param_desc *pd = &d->params[p];
        if (!m->dev) {
            k_adamw(F32(m, pd->offset), F32(m, pd->grad_offset), mm, vv, pd->elems, lr, beta1, beta2, eps, wd,
                    m->adam_t);
        } else {
            float *ps = m->stage, *gs = m->stage + STAGE_ELEMS;
            for (int64_t i0 = 0; rc == ACC_OK && i0 < pd->elems; i0 += STAGE_ELEMS) {
                int64_t k = pd->elems - i0 < STAGE_ELEMS ? pd->elems - i0 : STAGE_ELEMS;
                rc = mem_get(m, ps, pd->offset + i0 * 4, (size_t)k * 4);
                if (rc == ACC_OK) rc = mem_get(m, gs, pd->grad_offset + i0 * 4, (size_t)k * 4);
                if (rc != ACC_OK) break;
                k_adamw(ps, gs, mm + i0, vv + i0, k, lr, beta1, beta2, eps, wd, m->adam_t);
                rc = mem_put(m, pd->offset + i0 * 4, ps, (size_t)k * 4);
            }
        }
        mm += pd->elems, vv += pd->elems;
    }
    return rc;
}

/* Copy n floats between a FILE and the arena at off: into the arena when
 * to_arena, else out of it; on a device target through a staging buffer.
 * 0 or -1. */
static int file_arena_copy(acc_model *m, FILE *f, int64_t off, int64_t n, int to_arena) {
    if (!m->dev) {
        size_t done = to_arena ? fread(m->arena + off, 4, (size_t)n, f) : fwrite(m->arena + off, 4, (size_t)n, f);
        return done == (size_t)n ? 0 : -1;
    }
    float *stage = malloc((size_t)(n < STAGE_ELEMS ? n : STAGE_ELEMS) * 4 + 4);
    int bad = !stage;
    for (int64_t i0 = 0; !bad && i0 < n; i0 += STAGE_ELEMS) {
        int64_t k = n - i0 < STAGE_ELEMS ? n - i0 : STAGE_ELEMS;
        size_t bytes = (size_t)k * 4;
        if (to_arena)
            bad = fread(stage, 4, (size_t)k, f) != (size_t)k || mem_put(m, off + i0 * 4, stage, bytes) != ACC_OK;
        else bad = mem_get(m, stage, off + i0 * 4, bytes) != ACC_OK || fwrite(stage, 4, (size_t)k, f) != (size_t)k;
    }
    free(stage);
    return bad ? -1 : 0;
}

/* ---- parameter files ------------------------------------------------------
 * "ACCPARAM", u32 version 1, u32 count, then per tensor: u32 name length,
 * the name, u32 ndim, i64 dims[ndim], float32 data. Native byte order.
 */
static const char file_magic[8] = {'A', 'C', 'C', 'P', 'A', 'R', 'A', 'M'};

static int write_tensors(acc_model *m, const char *path, int grads) {
    if (!m || !path) return fail(m, ACC_ERR_NULL, "NULL argument");
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    FILE *f = fopen(path, "wb");
    if (!f) return fail(m, ACC_ERR_IO, "cannot open %s for writing", path);
    const acc_model_desc *d = m->desc;
    uint32_t hdr[2] = {1, (uint32_t)d->n_params};
    int ok = fwrite(file_magic, 8, 1, f) == 1 && fwrite(hdr, sizeof hdr, 1, f) == 1;
    for (int p = 0; ok && p < d->n_params; p++) {
        const acc_param_desc *pd = &d->params[p];
        uint32_t len = (uint32_t)strlen(pd->name), nd = (uint32_t)pd->ndim;
        ok = fwrite(&len, 4, 1, f) == 1 && fwrite(pd->name, 1, len, f) == len && fwrite(&nd, 4, 1, f) == 1 &&
             (nd == 0 || fwrite(pd->dim, 8, nd, f) == nd) &&
             file_arena_copy(m, f, grads ? pd->grad_offset : pd->offset, pd->elems, 0) == 0;
    }
    if (fclose(f) != 0) ok = 0;
    return ok ? ACC_OK : fail(m, ACC_ERR_IO, "cannot write %s", path);
}

int acc_save_params(acc_model *m, const char *path) { return write_tensors(m, path, 0); }
int acc_save_grads(acc_model *m, const char *path) {
    if (m && zero2(m->desc)) return no_grads(m, "acc_save_grads");
    return write_tensors(m, path, 1);
}

/* The header of parameter file tensor p (name, shape) checked against the
 * model; leaves f at the tensor's data. */
static int read_param_header(acc_model *m, FILE *f, const char *path, int p) {
    const acc_param_desc *pd = &m->desc->params[p];
    uint32_t len, nd;
    char name[512];
    int64_t dims[6];
    if (fread(&len, 4, 1, f) != 1 || len >= sizeof name || fread(name, 1, len, f) != len)
        return fail(m, ACC_ERR_FORMAT, "%s: truncated at tensor %d", path, p);
    name[len] = 0;
    if (strcmp(name, pd->name))
        return fail(m, ACC_ERR_FORMAT, "%s: tensor %d is '%s', the model expects '%s'", path, p, name, pd->name);
    if (fread(&nd, 4, 1, f) != 1 || nd != (uint32_t)pd->ndim || (nd && fread(dims, 8, nd, f) != nd) ||
        (nd && memcmp(dims, pd->dim, 8 * nd)))
        return fail(m, ACC_ERR_FORMAT, "%s: tensor '%s' has a different shape", path, name);
    return ACC_OK;
}

/* All or nothing: the whole file is checked (every header, every tensor's
 * length, no bytes after the last one) before any parameter changes. */
int acc_load_params(acc_model *m, const char *path) {
    if (!m || !path) return fail(m, ACC_ERR_NULL, "NULL argument");
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    FILE *f = fopen(path, "rb");
    if (!f) return fail(m, ACC_ERR_IO, "cannot open %s", path);
    const acc_model_desc *d = m->desc;
    char magic[8];
    uint32_t hdr[2];
    int rc = ACC_OK;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return fail(m, ACC_ERR_IO, "cannot read %s", path);
    }
    if (fread(magic, 8, 1, f) != 1 || memcmp(magic, file_magic, 8) || fread(hdr, sizeof hdr, 1, f) != 1 ||
        hdr[0] != 1) {
        rc = fail(m, ACC_ERR_FORMAT, "%s is not an acc parameter file (version 1)", path);
    } else if (hdr[1] != (uint32_t)d->n_params) {
        rc = fail(m, ACC_ERR_FORMAT, "%s holds %u tensors, the model has %d", path, hdr[1], d->n_params);
    }
    long data_start = ftell(f);
    for (int p = 0; rc == ACC_OK && p < d->n_params; p++) { /* check: headers and lengths */
        const acc_param_desc *pd = &d->params[p];
        rc = read_param_header(m, f, path, p);
        long at = ftell(f);
        if (rc == ACC_OK && (at < 0 || pd->elems > (size - at) / 4))
            rc = fail(m, ACC_ERR_FORMAT, "%s: tensor '%s' is truncated", path, pd->name);
        if (rc == ACC_OK && fseek(f, at + (long)pd->elems * 4, SEEK_SET) != 0)
            rc = fail(m, ACC_ERR_IO, "cannot read %s", path);
    }
    if (rc == ACC_OK && ftell(f) != size)
        rc = fail(m, ACC_ERR_FORMAT, "%s: %ld bytes after the last tensor (not a parameter file of this model)", path,
                  size - ftell(f));
    if (rc == ACC_OK && fseek(f, data_start, SEEK_SET) != 0) rc = fail(m, ACC_ERR_IO, "cannot read %s", path);
    for (int p = 0; rc == ACC_OK && p < d->n_params; p++) { /* copy */
        const acc_param_desc *pd = &d->params[p];
        rc = read_param_header(m, f, path, p);
        if (rc == ACC_OK && file_arena_copy(m, f, pd->offset, pd->elems, 1))
            rc = fail(m, ACC_ERR_IO, "%s: read error in tensor '%s' (the file changed while it was read?)", path,
                      pd->name);
        if (rc == ACC_OK) m->param_set[p] = 1;
    }
    fclose(f);
    return rc;
}

/* Each tensor is checked against the model's input of its name (the shape,
 * not only the size) before any memory is taken for it. */
int acc_load_inputs(acc_model *m, const char *path) {
    if (!m || !path) return fail(m, ACC_ERR_NULL, "NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) return fail(m, ACC_ERR_IO, "cannot open %s", path);
    const acc_model_desc *d = m->desc;
    char magic[8];
    uint32_t hdr[2] = {0, 0};
    int rc = ACC_OK;
    if (fread(magic, 8, 1, f) != 1 || memcmp(magic, file_magic, 8) || fread(hdr, sizeof hdr, 1, f) != 1 || hdr[0] != 1)
        rc = fail(m, ACC_ERR_FORMAT, "%s is not an acc tensor file (version 1)", path);
    for (uint32_t t = 0; rc == ACC_OK && t < hdr[1]; t++) {
        uint32_t len, nd;
        char name[512];
        int64_t dims[6];
        if (fread(&len, 4, 1, f) != 1 || len >= sizeof name || fread(name, 1, len, f) != len ||
            fread(&nd, 4, 1, f) != 1 || nd > 6 || (nd && fread(dims, 8, nd, f) != nd)) {
            rc = fail(m, ACC_ERR_FORMAT, "%s: truncated header of tensor %u", path, t);
            break;
        }
        name[len] = 0;
        const acc_input_desc *in = NULL;
        for (int i = 0; i < d->n_inputs && !in; i++)
            if (!strcmp(d->inputs[i].name, name)) in = &d->inputs[i];
        if (!in) {
            rc = fail(m, ACC_ERR_NAME, "%s: tensor '%s' is not an input of the model", path, name);
            break;
        }
        if (nd != (uint32_t)in->ndim || (nd && memcmp(dims, in->dim, 8 * nd))) {
            char got[160] = "[", want[160] = "[";
            for (uint32_t k = 0; k < nd; k++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? "," : "", (long long)dims[k]);
            for (int k = 0; k < in->ndim; k++)
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", k ? "," : "",
                         (long long)in->dim[k]);
            rc = fail(m, ACC_ERR_FORMAT, "%s: tensor '%s' is %s], the model's input is %s]", path, name, got, want);
            break;
        }
        void *buf = malloc((size_t)in->elems * 4 + 4);
        if (!buf) {
            rc = fail(m, ACC_ERR_NOMEM, "%s: cannot hold tensor '%s'", path, name);
            break;
        }
        if (fread(buf, 4, (size_t)in->elems, f) != (size_t)in->elems)
            rc = fail(m, ACC_ERR_FORMAT, "%s: tensor '%s' is truncated", path, name);
        else rc = acc_set_input(m, name, buf, (size_t)in->elems * 4);
        free(buf);
    }
    if (rc == ACC_OK && fgetc(f) != EOF) rc = fail(m, ACC_ERR_FORMAT, "%s: bytes after the last tensor", path);
    fclose(f);
    return rc;
}

/* ---- inputs, step, optimizer ----------------------------------------------- */

int acc_set_input(acc_model *m, const char *name, const void *data, size_t size_bytes) {
    if (!m) return ACC_ERR_NULL;
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    if (!name || !data) return fail(m, ACC_ERR_NULL, "acc_set_input: NULL %s", name ? "data" : "name");
    const acc_model_desc *d = m->desc;
    for (int i = 0; i < d->n_inputs; i++) {
        const acc_input_desc *in = &d->inputs[i];
        if (strcmp(in->name, name)) continue;
        size_t want = (size_t)in->elems * 4;
        if (size_bytes != want)
            return fail(m, ACC_ERR_SIZE, "input '%s' takes %zu bytes, %zu given", name, want, size_bytes);
        if (in->index_bound > 0) {
            const int32_t *ix = data;
            for (int64_t k = 0; k < in->elems; k++)
                if (ix[k] < 0 || ix[k] >= in->index_bound)
                    return fail(m, ACC_ERR_DATA, "input '%s'[%lld] = %d is outside [0, %lld)", name, (long long)k,
                                (int)ix[k], (long long)in->index_bound);
        }
        int rc = mem_put(m, in->stage_offset >= 0 ? in->stage_offset : in->offset, data, want);
        if (rc == ACC_OK) m->input_set[i] = 1;
        return rc;
    }
    return fail(m, ACC_ERR_NAME, "the model has no input '%s'", name);
}

/* The generated schedule between the step's phase marks: the whole step, or
 * (ctx->training 0) the forward alone. */
static int run_schedule(void *arg) {
    acc_ctx *ctx = arg;
    acc_phase(ctx, ACC_PHASE_FWD);
    const acc_model_desc *d = ctx->model->desc;
    int rc = ctx->training ? d->run(ctx) : d->run_forward(ctx);
    acc_phase(ctx, ACC_PHASE_COUNT);
    return rc;
}

/* The AdamW launches of every parameter, on a device. */
static int adamw_launches(void *arg) {
    acc_model *m = arg;
    const acc_model_desc *d = m->desc;
    if (sharded(d)) return adamw_shard(m, NULL); /* the device's scalars hold the hyperparameters */
    int rc = ACC_OK;
    for (int p = 0; rc == ACC_OK && p < d->n_params; p++) {
        const acc_param_desc *pd = &d->params[p];
        rc = d->device->adamw(m->dev, F32(m, pd->offset), F32(m, pd->grad_offset), m->arena + pd->m_offset,
                              m->arena + pd->v_offset, pd->elems, d->optimizer_dtype);
    }
    return rc;
}

/* ACC_ERR_STATE (with the first missing value) until every parameter and
 * every input has a value. */
static int check_ready(acc_model *m) {
    const acc_model_desc *d = m->desc;
    for (int p = 0; p < d->n_params; p++)
        if (!m->param_set[p])
            return fail(m, ACC_ERR_STATE,
                        "parameter '%s' was never given a value (acc_init_params, acc_load_params or "
                        "acc_write)",
                        d->params[p].name);
    for (int i = 0; i < d->n_inputs; i++)
        if (!m->input_set[i]) return fail(m, ACC_ERR_STATE, "input '%s' was never set", d->inputs[i].name);
    return ACC_OK;
}

/* The kinds of run of the schedule. */
enum { RUN_STEP, RUN_STEP_ACCUM, RUN_FORWARD };

static int micro_batches(const acc_model_desc *d) { return d->micro_batches > 1 ? d->micro_batches : 1; }

/* Micro-batch mb's slice of every sliced input, from the staged full batch
 * to where the schedule reads it. */
static int stage_micro_batch(acc_model *m, int mb) {
    const acc_model_desc *d = m->desc;
    int rc = ACC_OK;
    for (int i = 0; rc == ACC_OK && i < d->n_inputs; i++) {
        const acc_input_desc *in = &d->inputs[i];
        if (in->stage_offset < 0) continue;
        size_t slice = (size_t)(in->elems / micro_batches(d)) * 4;
        rc = mem_copy(m, in->offset, in->stage_offset + (int64_t)slice * mb, slice);
    }
    return rc;
}

/* One run of the schedule: the device's launches, or the CPU's calls. */
static int run_once(acc_model *m, acc_ctx *ctx, int graph, double ms[ACC_PHASE_COUNT]) {
    const acc_model_desc *d = m->desc;
    int rc;
    m->phase = -1;
    if (m->dev) {
        acc_scalars s = {.seed = ctx->seed, .step = ctx->step};
        m->err[0] = 0; /* a failure the schedule reported (acc_fail, a collective) keeps its detail */
        rc = d->device->run(m->dev, graph, run_schedule, ctx, &s);
        if (rc != ACC_OK && !m->err[0]) rc = dev_status(m, rc);
    } else {
        rc = run_schedule(ctx);
    }
    m->phase = -1;
    if (m->dev) {
        /* launches are asynchronous: their failures surface here */
        int drc = dev_status(m, d->device->finish(m->dev, ms));
        if (rc == ACC_OK) rc = drc;
    }
    return rc;
}

/* One run of the schedule of kind `kind`, the loss into *loss. A step
 * advances the step counter (dropout's stream) and the counters; the
 * forward alone touches neither, nor the gradients, and leaves a failed
 * step's flag as it was. */
static int run_model(acc_model *m, float *loss, int kind, const char *what) {
    if (!m) return ACC_ERR_NULL;
    if (!loss) return fail(m, ACC_ERR_NULL, "%s: NULL loss pointer", what);
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    int rc = check_ready(m);
    if (rc != ACC_OK) return rc;
    if (kind == RUN_STEP_ACCUM && m->failed)
        return fail(m, ACC_ERR_FAILED,
                    "%s: the last step failed; its gradients cannot be added to (acc_zero_grads, or a step "
                    "without accumulate)",
                    what);
    const acc_model_desc *d = m->desc;
    int parallel = d->ranks > 1 && kind != RUN_FORWARD;
    if (parallel && !m->comm)
        return fail(m, ACC_ERR_STATE, "%s: the library was compiled for %d ranks: acc_set_comm first", what, d->ranks);
    static const int graph[] = {
        [RUN_STEP] = ACC_GRAPH_STEP, [RUN_STEP_ACCUM] = ACC_GRAPH_STEP_ACCUM, [RUN_FORWARD] = ACC_GRAPH_FORWARD};
    static const int graph_reduce[] = {
        [RUN_STEP] = ACC_GRAPH_STEP_REDUCE, [RUN_STEP_ACCUM] = ACC_GRAPH_STEP_ACCUM_REDUCE, [RUN_FORWARD] = -1};
    /* micro-batch mb > 0 adds to the gradients of the ones before it; each
     * draws its dropout masks at its own position of the stream */
    int n = micro_batches(d);
    double phase_ms[ACC_PHASE_COUNT] = {0};
    acc_counters before = m->counters; /* the forward alone leaves them as they were */
    m->counters.phase_ms[ACC_PHASE_FWD] = m->counters.phase_ms[ACC_PHASE_BWD] = 0;
    for (int mb = 0; rc == ACC_OK && mb < n; mb++) {
        int accumulate = kind == RUN_STEP_ACCUM || mb > 0;
        int g = kind == RUN_FORWARD ? RUN_FORWARD : accumulate ? RUN_STEP_ACCUM : RUN_STEP;
        /* data parallel: the last micro-batch reduces the sum of them all */
        int reduce = parallel && (zero2(d) || (m->grad_sync && mb == n - 1)); /* ZeRO-2: each into the shard */
        acc_ctx ctx = {m->arena,
                       m->seed,
                       m->step * (uint32_t)n + (uint32_t)mb,
                       m,
                       m->dev,
                       m->host,
                       accumulate,
                       kind != RUN_FORWARD,
                       reduce};
        double ms[ACC_PHASE_COUNT] = {0};
        float part = 0.0f;
        if (n > 1) rc = stage_micro_batch(m, mb);
        if (rc == ACC_OK) rc = run_once(m, &ctx, reduce ? graph_reduce[g] : graph[g], ms);
        if (rc == ACC_OK) rc = mem_get(m, n > 1 ? &part : loss, d->loss_offset, sizeof *loss);
        if (n > 1) *loss = mb ? *loss + part * d->loss_scale : part * d->loss_scale;
        for (int p = 0; p < ACC_PHASE_COUNT; p++) phase_ms[p] += ms[p];
    }
    if (m->dev)
        for (int p = 0; kind != RUN_FORWARD && p < ACC_PHASE_OPT; p++) {
            m->counters.phase_ms[p] = phase_ms[p];
            m->counters.total_ms[p] += phase_ms[p];
        }
    if (kind == RUN_FORWARD) {
        m->counters = before;
        return rc;
    }
    if (rc == ACC_OK && parallel && (m->grad_sync || zero2(d))) { /* the whole batch's loss */
        double sum = *loss;
        rc = comm_status(m, m->comm->allreduce_host(m->comm, &sum, 1, ACC_RED_SUM), "the loss's reduction");
        *loss = (float)(sum * d->rank_scale);
    }
    if (rc != ACC_OK) {
        m->failed = 1;
        return rc;
    }
    m->failed = 0;
    m->step++;
    m->counters.steps++;
    return ACC_OK;
}

int acc_step(acc_model *m, float *loss) { return run_model(m, loss, RUN_STEP, "acc_step"); }

int acc_forward_backward(acc_model *m, float *loss, int accumulate) {
    if (m && accumulate != 0 && accumulate != 1)
        return fail(m, ACC_ERR_ARG, "acc_forward_backward: accumulate = %d must be 0 or 1", accumulate);
    return run_model(m, loss, accumulate ? RUN_STEP_ACCUM : RUN_STEP, "acc_forward_backward");
}

int acc_forward(acc_model *m, float *loss) { return run_model(m, loss, RUN_FORWARD, "acc_forward"); }

int acc_zero_grads(acc_model *m) {
    if (!m) return ACC_ERR_NULL;
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    const acc_model_desc *d = m->desc;
    int rc = ACC_OK;
    for (int p = 0; rc == ACC_OK && p < d->n_params; p++)
        rc = mem_zero(m, d->params[p].grad_offset, (size_t)d->params[p].elems * 4);
    if (rc == ACC_OK && zero2(d)) rc = mem_zero(m, d->shard_g_offset, (size_t)d->shard_elems * 4);
    if (rc == ACC_OK) m->failed = 0;
    return rc;
}

/* The sum of x[i]^2 over n floats in double, in a fixed order: fixed chunks
 * (whatever the thread count), each summed in order, then the chunks in
 * order. */
static double sum_squares(const float *x, int64_t n) {
    enum { CHUNKS = 64 };
    double part[CHUNKS];
    int64_t per = (n + CHUNKS - 1) / CHUNKS;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int c = 0; c < CHUNKS; c++) {
        double s = 0.0;
        int64_t i1 = (c + 1) * per < n ? (c + 1) * per : n;
        for (int64_t i = c * per; i < i1; i++) s += (double)x[i] * (double)x[i];
        part[c] = s;
    }
    double s = 0.0;
    for (int c = 0; c < CHUNKS; c++) s += part[c];
    return s;
}

/* fn on every parameter's gradient whole, or (ZeRO) on this rank's pieces
 * of them, which alone are reduced. */
static int for_grads(acc_model *m, shard_fn fn, void *arg) {
    const acc_model_desc *d = m->desc;
    if (sharded(d)) return for_shard(m, fn, arg);
    int rc = ACC_OK;
    for (int p = 0; rc == ACC_OK && p < d->n_params; p++) rc = fn(m, &d->params[p], 0, d->params[p].elems, 0, arg);
    return rc;
}

typedef struct {
    double sum; /* of the squares */
    int first;  /* no piece seen yet (a device's sum restarts) */
    float factor;
    int scale; /* 0: sum the squares, 1: multiply by factor */
} ClipArgs;

static int clip_piece(acc_model *m, const acc_param_desc *pd, int64_t el, int64_t n, int64_t sh, void *arg) {
    ClipArgs *c = arg;
    float *g = piece_grad(m, pd, el, sh);
    const acc_device *dv = m->desc->device;
    int first = c->first;
    c->first = 0;
    if (c->scale) {
        if (m->dev) return dev_status(m, dv->scale(m->dev, g, n, c->factor));
#pragma omp parallel for schedule(static) if (n >= 65536)
        for (int64_t i = 0; i < n; i++) g[i] *= c->factor;
        return ACC_OK;
    }
    if (m->dev) return dev_status(m, dv->sum_squares(m->dev, g, n, first));
    c->sum += sum_squares(g, n);
    return ACC_OK;
}

int acc_clip_grad_norm(acc_model *m, float max_norm, float *norm) {
    if (!m) return ACC_ERR_NULL;
    if (!isfinite(max_norm) || !(max_norm > 0))
        return fail(m, ACC_ERR_ARG, "acc_clip_grad_norm: max_norm = %g must be a finite number > 0", (double)max_norm);
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    const acc_model_desc *d = m->desc;
    for (int p = 0; p < d->n_params; p++)
        if (!m->param_set[p])
            return fail(m, ACC_ERR_STATE, "acc_clip_grad_norm: parameter '%s' was never given a value",
                        d->params[p].name);
    if (m->failed) return fail(m, ACC_ERR_FAILED, "the last step failed; its gradients are not usable");
    if (sharded(d) && !m->comm)
        return fail(m, ACC_ERR_STATE, "acc_clip_grad_norm: the gradients are sharded over %d ranks: acc_set_comm first",
                    d->ranks);
    ClipArgs c = {0.0, 1, 1.0f, 0};
    int rc = for_grads(m, clip_piece, &c);
    if (m->dev && rc == ACC_OK && !c.first) rc = dev_status(m, d->device->sum_squares_result(m->dev, &c.sum));
    if (rc == ACC_OK && sharded(d)) /* every rank's pieces */
        rc = comm_status(m, m->comm->allreduce_host(m->comm, &c.sum, 1, ACC_RED_SUM), "acc_clip_grad_norm");
    if (rc != ACC_OK) return rc;
    double total = sqrt(c.sum);
    if (norm) *norm = (float)total;
    if (!isfinite(total) || !(total > (double)max_norm)) return ACC_OK;
    c.factor = (float)((double)max_norm / (total + 1e-6));
    c.scale = 1;
    rc = for_grads(m, clip_piece, &c);
    if (m->dev && rc == ACC_OK) {
        double ms[ACC_PHASE_COUNT];
        rc = dev_status(m, d->device->finish(m->dev, ms));
    }
    return rc;
}

int acc_adamw(acc_model *m, float lr, float beta1, float beta2, float eps, float weight_decay) {
    if (!m) return ACC_ERR_NULL;
    const acc_model_desc *d = m->desc;
    if (!d->has_optimizer) return fail(m, ACC_ERR_STATE, "the library was compiled without the optimizer");
    if (m->failed) return fail(m, ACC_ERR_FAILED, "the last step failed; its gradients are not usable");
    const struct {
        const char *name, *range;
        float v;
        int ok;
    } hp[] = {{"lr", ">= 0", lr, lr >= 0},
              {"beta1", "in [0, 1)", beta1, beta1 >= 0 && beta1 < 1},
              {"beta2", "in [0, 1)", beta2, beta2 >= 0 && beta2 < 1},
              {"eps", "> 0", eps, eps > 0},
              {"weight_decay", ">= 0", weight_decay, weight_decay >= 0}};
    for (size_t k = 0; k < sizeof hp / sizeof *hp; k++) {
        if (!isfinite(hp[k].v))
            return fail(m, ACC_ERR_ARG, "acc_adamw: %s = %g is not a finite number", hp[k].name, (double)hp[k].v);
        if (!hp[k].ok)
            return fail(m, ACC_ERR_ARG, "acc_adamw: %s = %g must be %s", hp[k].name, (double)hp[k].v, hp[k].range);
    }
    if (unusable(m)) return ACC_ERR_NO_DEVICE;
    if (sharded(d) && !m->comm)
        return fail(m, ACC_ERR_STATE,
                    "acc_adamw: the library shards the optimizer state over %d ranks: acc_set_comm first", d->ranks);
    double t0 = now_ms();
    m->adam_t++;
    float bc1 = (float)(1.0 - pow((double)beta1, (double)m->adam_t));
    float bc2 = (float)(1.0 - pow((double)beta2, (double)m->adam_t));
    int rc = ACC_OK;
    if (d->optimizer_host_bytes) {
        rc = adamw_host(m, lr, beta1, beta2, eps, weight_decay);
    } else if (m->dev) {
        acc_scalars s = {m->seed, m->step, 0, lr, beta1, beta2, eps, weight_decay, bc1, bc2};
        rc = d->device->run(m->dev, ACC_GRAPH_OPT, adamw_launches, m, &s);
    } else if (sharded(d)) {
        AdamArgs a = {lr, beta1, beta2, eps, weight_decay};
        rc = adamw_shard(m, &a);
    } else {
        for (int p = 0; p < d->n_params; p++) {
            const acc_param_desc *pd = &d->params[p];
            if (d->optimizer_dtype == ACC_DT_BF16)
                k_adamw_bf16(F32(m, pd->offset), F32(m, pd->grad_offset), (acc_bf16 *)(m->arena + pd->m_offset),
                             (acc_bf16 *)(m->arena + pd->v_offset), pd->elems, lr, beta1, beta2, eps, weight_decay,
                             m->adam_t);
            else
                k_adamw(F32(m, pd->offset), F32(m, pd->grad_offset), F32(m, pd->m_offset), F32(m, pd->v_offset),
                        pd->elems, lr, beta1, beta2, eps, weight_decay, m->adam_t);
        }
    }
    if (m->dev && rc == ACC_OK) {
        double ms[ACC_PHASE_COUNT];
        rc = d->device->finish(m->dev, ms);
    }
    if (rc != ACC_OK) {
        m->failed = 1;
        return dev_status(m, rc);
    }
    double dt = now_ms() - t0;
    m->counters.phase_ms[ACC_PHASE_OPT] = dt;
    m->counters.total_ms[ACC_PHASE_OPT] += dt;
    return ACC_OK;
}

static int find_param(acc_model *m, const char *name, int grad, float **data, int64_t *elems) {
    if (!m) return ACC_ERR_NULL;
    if (!name || !data) return fail(m, ACC_ERR_NULL, "NULL argument");
    const acc_model_desc *d = m->desc;
    if (grad && zero2(d)) return no_grads(m, "acc_grad");
    for (int p = 0; p < d->n_params; p++)
        if (!strcmp(d->params[p].name, name)) {
            *data = F32(m, grad ? d->params[p].grad_offset : d->params[p].offset);
            if (elems) *elems = d->params[p].elems;
            if (!grad) m->param_set[p] = 1; /* the caller may write its value through the pointer */
            return ACC_OK;
        }
    return fail(m, ACC_ERR_NAME, "the model has no parameter '%s'", name);
}

int acc_param(acc_model *m, const char *name, float **data, int64_t *elems) {
    return find_param(m, name, 0, data, elems);
}
int acc_grad(acc_model *m, const char *name, float **data, int64_t *elems) {
    return find_param(m, name, 1, data, elems);
}

/* The named parameter's descriptor, or NULL with the error set. */
static const acc_param_desc *param_named(acc_model *m, const char *name) {
    for (int p = 0; p < m->desc->n_params; p++)
        if (!strcmp(m->desc->params[p].name, name)) return &m->desc->params[p];
    fail(m, ACC_ERR_NAME, "the model has no parameter '%s'", name);
    return NULL;
}

/* The checks of acc_read and acc_write: the parameter for a copy of exactly
 * size_bytes to or from buf, or NULL with the status in *rc. */
static const acc_param_desc *param_for_copy(acc_model *m, const char *what, const char *name, const void *buf,
                                            size_t size_bytes, int *rc) {
    *rc = !name || !buf ? fail(m, ACC_ERR_NULL, "%s: NULL argument", what) : unusable(m);
    const acc_param_desc *pd = *rc ? NULL : param_named(m, name);
    if (!*rc && !pd) *rc = ACC_ERR_NAME;
    if (pd && size_bytes != (size_t)pd->elems * 4) {
        *rc = fail(m, ACC_ERR_SIZE, "parameter '%s' has %lld bytes, %zu given", name, (long long)pd->elems * 4,
                   size_bytes);
        pd = NULL;
    }
    return pd;
}

int acc_read(acc_model *m, const char *name, int grad, float *dst, size_t size_bytes) {
    if (!m) return ACC_ERR_NULL;
    int rc;
    if (grad && zero2(m->desc)) return no_grads(m, "acc_read");
    const acc_param_desc *pd = param_for_copy(m, "acc_read", name, dst, size_bytes, &rc);
    return pd ? mem_get(m, dst, grad ? pd->grad_offset : pd->offset, size_bytes) : rc;
}

int acc_write(acc_model *m, const char *name, const float *src, size_t size_bytes) {
    if (!m) return ACC_ERR_NULL;
    int rc;
    const acc_param_desc *pd = param_for_copy(m, "acc_write", name, src, size_bytes, &rc);
    if (!pd) return rc;
    rc = mem_put(m, pd->offset, src, size_bytes);
    if (rc == ACC_OK) m->param_set[pd - m->desc->params] = 1;
    return rc;
}

int acc_get_counters(const acc_model *m, acc_counters *out) {
    if (!m || !out) return ACC_ERR_NULL;
    *out = m->counters;
    return ACC_OK;
}

const acc_model_desc *acc_describe(const acc_model *m) { return m ? m->desc : NULL; }
