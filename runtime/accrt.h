/* accrt.h - libaccrt, the runtime that acc's generated libraries link.
 *
 * A generated library (lib<model>.a + <model>.h) describes its model as data
 * (acc_model_desc: parameters, inputs, arena size, plan figures) and supplies
 * the fixed schedule as a function; everything else - the arena, parameter
 * initialisation, loading and saving, inputs, the optimizer, counters and
 * status codes - lives here and is shared by every model. Nothing here calls
 * exit(); every function returns an acc_status, and the last error's detail is
 * kept per instance (acc_last_error).
 *
 * This header includes no compiler header; trainers include <model>.h, which
 * includes this one.
 */
#ifndef ACC_ACCRT_H
#define ACC_ACCRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACC_API_VERSION 3

typedef enum {
    ACC_OK = 0,
    ACC_ERR_NULL = 1,       /* a required pointer argument is NULL */
    ACC_ERR_SIZE = 2,       /* a buffer has the wrong size */
    ACC_ERR_NAME = 3,       /* no parameter or input of that name */
    ACC_ERR_NOMEM = 4,      /* the arena could not be allocated */
    ACC_ERR_STATE = 5,      /* call out of order (e.g. step before every input is set) */
    ACC_ERR_IO = 6,         /* a file could not be read or written */
    ACC_ERR_FORMAT = 7,     /* a parameter file does not match this model */
    ACC_ERR_DATA = 8,       /* input data out of range (a token index >= vocabulary) */
    ACC_ERR_VERSION = 9,    /* options from an incompatible API version */
    ACC_ERR_NO_DEVICE = 10, /* no usable GPU / driver */
    ACC_ERR_ARG = 11,       /* an argument out of range */
    ACC_ERR_FAILED = 12,    /* the instance is unusable after an earlier failure */
    ACC_ERR_DEVICE = 13,    /* a device call (driver, kernel launch, cuBLAS) failed */
    ACC_ERR_COMM = 14,      /* a collective failed, or the ranks disagree (plan, rank count) */
} acc_status;

/* Human-readable text of a status. */
const char *acc_status_string(int status);

/* Options for creating an instance; set struct_size = sizeof(acc_options) and
 * api_version = ACC_API_VERSION so that the ABI can grow. */
typedef struct {
    uint32_t struct_size;
    uint32_t api_version;
    int num_threads; /* 0: the OpenMP default */
    uint64_t seed;   /* dropout randomness (parameters take their own seed) */
} acc_options;

typedef enum { ACC_DT_F32 = 0, ACC_DT_I32 = 1, ACC_DT_BF16 = 2 } acc_dtype;
typedef enum { ACC_INIT_ZEROS = 0, ACC_INIT_ONES, ACC_INIT_NORMAL, ACC_INIT_UNIFORM } acc_init;

typedef struct {
    const char *name;
    int ndim;
    int64_t dim[6];
    int64_t elems;
    int64_t offset, grad_offset, m_offset, v_offset; /* bytes into the arena; m/v -1 without optimizer
                                                        (m/v hold the model's optimizer_dtype) */
    int init;                                        /* acc_init */
    float init_scale;
} acc_param_desc;

typedef struct {
    const char *name;
    int dtype; /* acc_dtype */
    int ndim;
    int64_t dim[6];
    int64_t elems;
    int64_t offset;
    int64_t index_bound; /* i32 inputs used as indices: values must be in [0, bound); else 0 */
    /* A step of micro-batches: the full batch (dim, elems) is set at
     * stage_offset, and before each micro-batch its slice of elems /
     * micro_batches elements (the rows of the batch in order) is copied to
     * offset, where the schedule reads it. -1: the input is not sliced
     * (one batch, or an input without the batch dimension): set at offset. */
    int64_t stage_offset;
} acc_input_desc;

typedef struct acc_model acc_model;

/* Phases timed by the counters. */
enum { ACC_PHASE_FWD = 0, ACC_PHASE_BWD = 1, ACC_PHASE_OPT = 2, ACC_PHASE_COUNT = 3 };

/* One instance's device (opaque; NULL on the CPU target). */
typedef struct acc_dev acc_dev;
struct acc_model_desc;

/* The run-time context a generated schedule receives. On a device target
 * `arena` is the device address of the arena: the schedule only computes
 * addresses from it and hands them to the device layer. */
typedef struct {
    unsigned char *arena;
    uint64_t seed;
    uint32_t step;
    acc_model *model;
    acc_dev *dev;
    unsigned char *host; /* the host arena of offloaded activations (desc->host_bytes; NULL: none) */
    /* The parameter gradients are accumulators: the schedule zeroes each
     * before its first contribution unless `accumulate` is set (the
     * gradients of activations are always zeroed). `training` 0 (acc_forward)
     * turns dropout off. `reduce` (data parallel): the schedule hands each
     * bucket of parameter gradients to the communicator as soon as its last
     * gradient is written (acc_grad_ready) and waits for them all at its end
     * (acc_grad_sync); 0: the gradients stay this rank's own. */
    int accumulate, training, reduce;
} acc_ctx;

/* The values of one step or optimizer update that a device's kernels read
 * from device memory (written by the device layer before each run) rather
 * than from their launch arguments, so that launches recorded once can be
 * replayed with each step's values. */
typedef struct {
    uint64_t seed;
    uint32_t step, pad;                                  /* step: dropout's stream position (see acc_step) */
    float lr, beta1, beta2, eps, weight_decay, bc1, bc2; /* the optimizer's */
} acc_scalars;

/* The launch sequences a device may record and replay: a step that
 * overwrites the parameter gradients, the AdamW update, a step that adds to
 * them (acc_forward_backward's accumulate) and the forward alone
 * (acc_forward). Each is its own recording: the flags that tell them apart
 * are part of what is recorded, so no recording serves another. */
enum {
    ACC_GRAPH_STEP = 0,
    ACC_GRAPH_OPT = 1,
    ACC_GRAPH_STEP_ACCUM = 2,
    ACC_GRAPH_FORWARD = 3,
    ACC_GRAPH_STEP_REDUCE = 4,       /* data parallel: ACC_GRAPH_STEP reducing the gradients */
    ACC_GRAPH_STEP_ACCUM_REDUCE = 5, /* ... and ACC_GRAPH_STEP_ACCUM */
    ACC_GRAPH_COUNT = 6
};

/* ---- data parallel: the communicator ----
 *
 * A rank's view of a group of ranks that train one model together, each on
 * its shard of the batch. The trainer creates it from the engine it already
 * runs (libaccrt_mpi: acc_comm_mpi over an MPI communicator, in accrt_mpi.h;
 * libaccrt_nccl: acc_comm_nccl over an NCCL communicator, in accrt_nccl.h)
 * and hands it to acc_set_comm; it is not the model's: the trainer destroys
 * it after the model. This header needs neither engine's headers. */
typedef enum {
    /* count floats at buf summed over the ranks, in place */
    ACC_COLL_ALLREDUCE = 0,
    /* buf holds size * count floats; rank r's piece (floats r * count to
     * (r + 1) * count - 1) receives the sum over the ranks of that piece; the
     * other pieces are left undefined */
    ACC_COLL_REDUCE_SCATTER = 1,
    /* buf holds size * count floats; every rank's piece r receives rank r's
     * piece r */
    ACC_COLL_ALLGATHER = 2,
} acc_coll_kind;

typedef enum { ACC_RED_SUM = 0, ACC_RED_MAX = 1, ACC_RED_MIN = 2 } acc_red_op;

typedef struct acc_comm acc_comm;
struct acc_comm {
    const char *name; /* "mpi", "nccl" */
    int rank, size;
    /* Memory the collectives reach: 0 host memory (the cpu target, the
     * emulator's arena), 1 device memory (the cuda target). */
    int device_memory;
    /* Start collective `id` (acc_coll_kind) on buf. stream: the device
     * stream it is ordered on (a CUstream; NULL on the host). Collectives
     * are issued in the same order on every rank. An id is free again once
     * waited for. */
    int (*issue)(acc_comm *c, int id, int kind, float *buf, int64_t count, void *stream);
    /* The host waits for collective `id` (a collective ordered on a stream
     * completes on it: nothing to wait for here). */
    int (*wait)(acc_comm *c, int id);
    /* Blocking, in host memory: x[0..n) reduced over the ranks with op
     * (acc_red_op), the same result on every rank. */
    int (*allreduce_host)(acc_comm *c, double *x, int n, int op);
    /* Detail of the last failure ("" if none). */
    const char *(*error)(const acc_comm *c);
    void (*destroy)(acc_comm *c);
    void *impl;
    /* How long the host waits for this communicator's collectives before it
     * gives up, in seconds (<= 0: without limit). The constructors set it
     * from acc_comm_timeout(); a trainer may change it. A rank that died,
     * hangs or runs another step then costs a failed call, not a hang. */
    double timeout_s;
    /* Called while the host waits for device work that includes this
     * communicator's collectives (the cuda device layer polls it), with how
     * long it has waited so far. ACC_OK: keep waiting. ACC_ERR_COMM: stop: a
     * collective failed asynchronously or the wait passed timeout_s; the
     * communicator was aborted (what it had in flight will not complete;
     * make a new one) and error() says why. NULL: the host waits on its own
     * terms (a host-memory communicator bounds its waits itself). */
    int (*check)(acc_comm *c, double waited_s);
};
/* Free a communicator made by acc_comm_mpi or acc_comm_nccl (NULL: nothing). */
void acc_comm_destroy(acc_comm *c);

/* The collectives' default timeout, seconds: ACC_COMM_TIMEOUT from the
 * environment (a number of seconds; 0: without limit), else 600. -1 if the
 * variable is set but not a non-negative number (the constructors then
 * return ACC_ERR_ARG). */
double acc_comm_timeout(void);

/* A device layer (libaccrt_cuda: the GPU through the driver API and cuBLAS;
 * libaccrt_emu: the same kernels and schedule emulated on the CPU). The
 * runtime reaches device memory only through it. Every function returns an
 * acc_status; the detail of a failure is in `error`. */
typedef struct acc_device {
    const char *name;
    /* Open the device, load the model's kernels and allocate its arena
     * (desc->arena_bytes, the workspace included) plus anything else the
     * device holds (*extra_bytes); *arena is the arena's device address.
     * On failure *dev may be set (for the error). */
    int (*open)(const struct acc_model_desc *desc, acc_dev **dev, unsigned char **arena, int64_t *extra_bytes);
    void (*close)(acc_dev *dev);
    int (*upload)(acc_dev *dev, unsigned char *dst, const void *src, size_t n);
    int (*download)(acc_dev *dev, void *dst, const unsigned char *src, size_t n);
    int (*zero)(acc_dev *dev, unsigned char *dst, size_t n);
    /* n bytes within the arena, after the launches issued before it */
    int (*copy)(acc_dev *dev, unsigned char *dst, const unsigned char *src, size_t n);
    /* A phase boundary of the step (ACC_PHASE_*; ACC_PHASE_COUNT ends it). */
    int (*mark)(acc_dev *dev, int phase);
    /* Wait for the device; the time of each phase of the last step. */
    int (*finish)(acc_dev *dev, double phase_ms[ACC_PHASE_COUNT]);
    /* Write *s where the kernels read it, then have fn(arg) issue the
     * launches of one step (ACC_GRAPH_STEP) or optimizer update
     * (ACC_GRAPH_OPT). A device may record the launches of a run and replay
     * the recording for the later runs of the same graph instead of calling
     * fn (the GPU's CUDA graphs): fn's launches may depend on nothing but *s,
     * the model and the graph. */
    int (*run)(acc_dev *dev, int graph, int (*fn)(void *arg), void *arg, const acc_scalars *s);
    /* One parameter's AdamW update, with the hyperparameters of the run;
     * m and v hold n elements of state_dtype (ACC_DT_F32, or ACC_DT_BF16:
     * widened, updated in float, rounded to nearest even on store). */
    int (*adamw)(acc_dev *dev, float *p, const float *g, void *m, void *v, int64_t n, int state_dtype);
    const char *(*error)(const acc_dev *dev);
    /* Gradient clipping, outside any run: add the sum of x[i]^2 over n
     * floats, each squared and summed in double, to a total on the device
     * (first: the total restarts at 0); sum_squares_result waits and copies
     * the total to *sum; scale multiplies n floats by factor in place. */
    int (*sum_squares)(acc_dev *dev, const float *x, int64_t n, int first);
    int (*sum_squares_result)(acc_dev *dev, double *sum);
    int (*scale)(acc_dev *dev, float *x, int64_t n, float factor);
    /* ZeRO-2, inside a run (recordable): dst = src, or dst += src when add,
     * n floats of the arena, after the launches issued so far. */
    int (*accumulate)(acc_dev *dev, float *dst, const float *src, int64_t n, int add);
    /* Offloaded activations: the host arena of n bytes (pinned where the
     * device copies to and from host memory without staging), freed by
     * host_free. Their copies run on a stream of their own, in issue order,
     * and are recordable in a run: copy_issue starts copy id (n bytes, from
     * the arena to host memory if to_host, else back) after the launches
     * issued so far; copy_wait makes the launches issued after it wait for
     * copy id; copy_sync, for every copy issued in the run. */
    int (*host_alloc)(acc_dev *dev, size_t n, unsigned char **host);
    void (*host_free)(acc_dev *dev, unsigned char *host);
    int (*copy_issue)(acc_dev *dev, int id, void *dst, const void *src, size_t n, int to_host);
    int (*copy_wait)(acc_dev *dev, int id);
    int (*copy_sync)(acc_dev *dev);
    /* Data parallel: collective id through comm (comm->issue's kind, buf,
     * count) beside the step, recordable in a run: coll_issue starts it
     * after the launches issued so far (on a stream of the collectives' own
     * where the device has streams); coll_wait makes the launches issued
     * after it wait for it. A device whose memory comm cannot reach returns
     * ACC_ERR_COMM. */
    int (*coll_issue)(acc_dev *dev, acc_comm *comm, int id, int kind, float *buf, int64_t count);
    int (*coll_wait)(acc_dev *dev, acc_comm *comm, int id);
} acc_device;

/* A kernel image embedded in a device library: CUBIN for one architecture
 * (sm = 80 for sm_80) or PTX (ptx = 1) that newer GPUs compile at load. */
typedef struct {
    int sm;
    int ptx;
    const unsigned char *data;
    size_t size;
} acc_image;

/* Data parallel: one bucket of parameter gradients (with ZeRO-2 one
 * parameter's), reduced as one collective as soon as the backward has
 * written its last gradient (with ZeRO-2, the last of its bucket's). Its
 * gradients are grad_offset .. grad_offset + bytes in the arena, and their
 * parameters lie at param_offset, in the same layout; with --zero 1, bytes
 * is a multiple of ranks * 4, and rank r owns piece r of ranks equal pieces
 * (its AdamW state at shard_offset floats into the shard's moments). */
typedef struct {
    int64_t grad_offset, param_offset, bytes, shard_offset;
} acc_bucket;

typedef struct acc_model_desc {
    uint32_t api_version;
    const char *model_name;
    const char *target;       /* "cpu", "cuda", "cuda-emu" */
    const acc_device *device; /* NULL: the host CPU */
    const acc_image *images;  /* device targets: the kernels, per architecture */
    int n_images;
    int64_t workspace_offset, workspace_bytes; /* the GEMM library's workspace in the arena */
    int tf32;                                  /* GEMMs may use TF32 tensor cores */
    int64_t arena_bytes;
    int n_params;
    const acc_param_desc *params;
    int n_inputs;
    const acc_input_desc *inputs;
    int64_t loss_offset;
    int has_optimizer;
    int optimizer_dtype; /* the AdamW moments m and v: ACC_DT_F32 or ACC_DT_BF16 (acc_dtype) */
    /* forward + backward over the arena; returns an acc_status */
    int (*run)(acc_ctx *ctx);
    /* the steps of run before the loss's gradient is seeded: the loss alone */
    int (*run_forward)(acc_ctx *ctx);
    /* the plan's figures, for reports */
    int64_t budget_bytes, planned_peak_bytes;
    const char *plan_summary;
    /* Micro-batches (0 or 1: one batch): each step runs the schedule once
     * per micro-batch on its slice of the inputs, the parameter gradients
     * accumulating; the loss's gradient is seeded with loss_scale (1 /
     * micro_batches for a mean over the batch, 1 for a sum), and the step's
     * loss is the sum of the micro-batches' losses times loss_scale. */
    int micro_batches;
    float loss_scale;
    /* Offload: the host arena the plan copies activations to (0: none),
     * allocated beside the arena (acc_counters.host_bytes). */
    int64_t host_bytes;
    /* --optimizer-state host: the bytes of the AdamW moments, f32 in host
     * memory (the params' m/v offsets -1; 0: none), allocated by acc_create
     * and counted in acc_counters.host_bytes; acc_adamw updates there (a
     * device's parameters and gradients copied through a staging chunk of
     * 8 MiB of host memory, not counted). */
    int64_t optimizer_host_bytes;
    /* Offload: the ids of the copies the schedule issues (0 to copy_ids - 1). */
    int copy_ids;
    /* Data parallel (acc compile --ranks): the ranks the plan is for (0 or
     * 1: one; acc_set_comm checks the communicator's size), each running this
     * plan on its shard of the batch. The gradients are reduced in buckets,
     * in the order the schedule issues them (ACC_COLL_ALLREDUCE, or with
     * zero = 1 ACC_COLL_REDUCE_SCATTER: each rank's optimizer updates its
     * pieces and ACC_COLL_ALLGATHER shares them). rank_scale: 1 / ranks for
     * a loss that is a mean (the seed of the loss's gradient includes it),
     * 1 for a sum; the step's loss is the sum over the ranks times it. */
    int ranks, zero;
    float rank_scale;
    int n_buckets;
    const acc_bucket *buckets;
    /* zero = 1 or 2: this rank's AdamW moments (optimizer_dtype),
     * shard_elems elements each at shard_m_offset and shard_v_offset (the
     * params' m/v offsets -1). zero = 2 (ZeRO-2): the gradients are not
     * kept: each bucket (acc_bucket) is one parameter's gradient, a buffer of
     * the plan reduce-scattered when its backward bucket is final, this
     * rank's piece moved (added, when the step accumulates) to
     * shard_g_offset + 4 * shard_offset, shard_elems floats in all, where
     * acc_adamw and acc_clip_grad_norm read them. */
    int64_t shard_m_offset, shard_v_offset, shard_elems, shard_g_offset;
    /* a hash of the plan: every rank must run the same (acc_set_comm) */
    uint64_t plan_hash;
} acc_model_desc;

typedef struct {
    int64_t arena_bytes;              /* the arena allocated: the planned peak */
    int64_t peak_bytes_measured;      /* every byte the runtime holds for this instance */
    double phase_ms[ACC_PHASE_COUNT]; /* last step's time per phase */
    double total_ms[ACC_PHASE_COUNT]; /* summed over all steps */
    int64_t steps;
    int64_t host_bytes; /* host memory for the step: offloaded activations' arena, host optimizer state */
} acc_counters;

/* On a device target whose device cannot be opened (no driver, no GPU, no
 * image for its architecture) this returns ACC_ERR_NO_DEVICE and still sets
 * *out, so that acc_last_error can say why; destroy it. */
int acc_create(const acc_model_desc *desc, const acc_options *opt, acc_model **out);
void acc_destroy(acc_model *m);
/* Detail of the last error on this instance ("" if none). Safe on NULL. */
const char *acc_last_error(const acc_model *m);

/* Initialise every parameter from its DSL initializer with a seed
 * (deterministic, counter-based); zeroes gradients and optimizer state. */
int acc_init_params(acc_model *m, uint64_t seed);
int acc_save_params(acc_model *m, const char *path);
/* All or nothing: the whole file (every name, shape and length, nothing after
 * the last tensor) is checked before any parameter changes. */
int acc_load_params(acc_model *m, const char *path);
/* Write every parameter gradient (name, shape, float32 data). */
int acc_save_grads(acc_model *m, const char *path);

/* Set every input from a tensor file (the parameter-file format, holding the
 * inputs by name; i32 data stored as raw 4-byte integers). Each tensor's
 * name and shape must be one of the model's inputs. */
int acc_load_inputs(acc_model *m, const char *path);
/* Copy bytes into the named input; size must match exactly. */
int acc_set_input(acc_model *m, const char *name, const void *data, size_t size_bytes);
/* Forward and backward: loss in *loss, gradients of every parameter ready.
 * ACC_ERR_STATE until every parameter has a value (acc_init_params,
 * acc_load_params, acc_write, or a pointer from acc_param) and every input
 * is set. A model compiled with micro-batches (acc compile --micro-batch)
 * takes the whole batch's inputs and runs its plan once per micro-batch,
 * adding up the parameter gradients (desc->micro_batches); dropout then
 * draws each micro-batch's masks at its own stream position (step *
 * micro_batches + i), so the step equals the one-batch step in expectation
 * (and, without dropout, within float rounding). */
int acc_step(acc_model *m, float *loss);
/* Forward and backward, as acc_step, when accumulate = 0. With accumulate =
 * 1 the parameter gradients of this step are added to those already held
 * (gradient accumulation over micro-batches: acc_zero_grads or a step with
 * accumulate = 0 starts a new sum; acc_init_params leaves them zero). The
 * accumulators are the planned parameter gradients themselves: the schedule
 * skips their zeroing, nothing is allocated. Each contribution is added in
 * float as it arrives, so two accumulated steps on one batch give exactly
 * twice one step's gradient where a parameter's gradient is one addition of
 * one kernel (a weight of one GEMM, a bias); a tied weight, a GEMM the BLAS
 * splits along its inner dimension or a sum over rows added row by row adds
 * in several roundings (the sum within float rounding). With --precision
 * bf16 the parameter gradients are f32 and accumulate in f32. ACC_ERR_ARG
 * unless accumulate is 0 or 1; ACC_ERR_FAILED when accumulating onto the
 * gradients of a failed step; otherwise as acc_step. */
int acc_forward_backward(acc_model *m, float *loss, int accumulate);
/* Set every parameter gradient to zero (valid at any time; it also makes the
 * gradients usable again after a failed step). */
int acc_zero_grads(acc_model *m);
/* The forward steps alone (evaluation): the loss in *loss, the same bits as
 * acc_step's loss on the same inputs and parameters, with dropout off (every
 * dropout keeps every element, as PyTorch's model.eval(), on every target;
 * so with dropout in the model the loss is that of the model without it).
 * Parameters, their gradients and the optimizer state are not touched, nor
 * the step counter (dropout's random stream) or the counters; activations
 * are (the next step recomputes them). ACC_ERR_STATE as acc_step. */
int acc_forward(acc_model *m, float *loss);
/* Global-norm gradient clipping, PyTorch's clip_grad_norm_ rule: norm = the
 * 2-norm over every parameter gradient (each square summed in double, on the
 * CPU and on a device), written to *norm when norm is not NULL; when norm >
 * max_norm every gradient is multiplied by (float)(max_norm / (norm +
 * 1e-6)). A non-finite norm (an overflow or NaN in the gradients) is
 * returned and the gradients are left as they are, so that the trainer can
 * skip the update. ACC_ERR_ARG unless max_norm is finite and > 0;
 * ACC_ERR_STATE before every parameter has a value; ACC_ERR_FAILED after a
 * failed step. */
int acc_clip_grad_norm(acc_model *m, float max_norm, float *norm);
/* One fused AdamW update of every parameter from its gradient. Every
 * hyperparameter must be finite: lr, weight_decay >= 0, beta1 and beta2 in
 * [0, 1), eps > 0 (else ACC_ERR_ARG naming it). Every call takes its own
 * values (a learning-rate schedule passes each step's lr; a device's
 * recorded update reads them, and the bias corrections of the call's
 * counter, from device memory, not from the recording). */
int acc_adamw(acc_model *m, float lr, float beta1, float beta2, float eps, float weight_decay);

/* Pointers into the arena for a named parameter or its gradient (device
 * addresses on a device target; acc_read/acc_write copy on every target). */
int acc_param(acc_model *m, const char *name, float **data, int64_t *elems);
int acc_grad(acc_model *m, const char *name, float **data, int64_t *elems);
/* Copy a named parameter (grad = 0) or its gradient (grad = 1) to or from
 * host memory; size_bytes must be the tensor's exact size. */
int acc_read(acc_model *m, const char *name, int grad, float *dst, size_t size_bytes);
int acc_write(acc_model *m, const char *name, const float *src, size_t size_bytes);
int acc_get_counters(const acc_model *m, acc_counters *out);

/* Data parallel (a library compiled with --ranks R): the communicator of
 * the R ranks, before the first step. Checks that its size is R and that
 * every rank runs the same plan (ACC_ERR_ARG, ACC_ERR_COMM; collective: every
 * rank calls it). Each rank then sets its own shard of the batch as its
 * inputs (the inputs' shapes are one rank's) and calls acc_step and
 * acc_adamw as one rank would; every rank must start from the same
 * parameters (acc_init_params with one seed, or one file). The gradients
 * after a step are the whole batch's: reduced over the ranks (with zero = 1
 * only this rank's pieces of each bucket are; acc_adamw then updates them
 * and gathers every rank's parameters, and acc_clip_grad_norm sums the
 * norm over the ranks). */
int acc_set_comm(acc_model *m, acc_comm *comm);
/* (Once per instance: another communicator later is ACC_ERR_STATE, since a
 * device's recorded steps hold the first.) */
/* Whether acc_step and acc_forward_backward reduce the gradients over the
 * ranks (1, the default). Accumulating over calls, turn it off for every
 * call but the last (each call adds to this rank's own gradients; the last
 * one reduces the sum), as DDP's no_sync. ACC_ERR_ARG unless 0 or 1. */
int acc_set_grad_sync(acc_model *m, int sync);
const acc_model_desc *acc_describe(const acc_model *m);

/* For generated schedules: report a failure with detail and time phases. */
int acc_fail(acc_ctx *ctx, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void acc_phase(acc_ctx *ctx, int phase);
/* For generated schedules: the copies of offloaded activations, n bytes
 * between the arena (at p) and the host arena (at host_off), to the host if
 * to_host. On a device they run beside the step (acc_device's copy_issue,
 * copy_wait, copy_sync); on the CPU each is done when issued. */
int acc_copy_issue(acc_ctx *ctx, int id, int64_t host_off, void *p, size_t n, int to_host);
int acc_copy_wait(acc_ctx *ctx, int id);
int acc_copy_sync(acc_ctx *ctx);
/* For generated schedules (data parallel): bucket k's gradients are final
 * (its collective starts when ctx->reduce); every bucket's collective
 * waited for. */
int acc_grad_ready(acc_ctx *ctx, int k);
int acc_grad_sync(acc_ctx *ctx);
/* ZeRO-2: bucket k's collective waited for and this rank's piece moved to
 * the shard, before the schedule writes over its buffer (acc_grad_sync
 * does it for the buckets not done). */
int acc_grad_done(acc_ctx *ctx, int k);

#ifdef __cplusplus
}
#endif
#endif
