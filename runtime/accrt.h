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

#define ACC_API_VERSION 1

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
} acc_status;

/* Human-readable text of a status. */
const char *acc_status_string(int status);

/* Options for creating an instance; set struct_size = sizeof(acc_options) and
 * api_version = ACC_API_VERSION so that the ABI can grow. */
typedef struct {
    uint32_t struct_size;
    uint32_t api_version;
    int num_threads;   /* 0: the OpenMP default */
    uint64_t seed;     /* dropout randomness (parameters take their own seed) */
} acc_options;

typedef enum { ACC_DT_F32 = 0, ACC_DT_I32 = 1 } acc_dtype;
typedef enum { ACC_INIT_ZEROS = 0, ACC_INIT_ONES, ACC_INIT_NORMAL, ACC_INIT_UNIFORM } acc_init;

typedef struct {
    const char *name;
    int ndim;
    int64_t dim[6];
    int64_t elems;
    int64_t offset, grad_offset, m_offset, v_offset; /* bytes into the arena; m/v -1 without optimizer */
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
} acc_input_desc;

typedef struct acc_model acc_model;

/* Phases timed by the counters. */
enum { ACC_PHASE_FWD = 0, ACC_PHASE_BWD = 1, ACC_PHASE_OPT = 2, ACC_PHASE_COUNT = 3 };

/* The run-time context a generated schedule receives. */
typedef struct {
    unsigned char *arena;
    uint64_t seed;
    uint32_t step;
    acc_model *model;
} acc_ctx;

typedef struct {
    uint32_t api_version;
    const char *model_name;
    const char *target; /* "cpu" */
    int64_t arena_bytes;
    int n_params;
    const acc_param_desc *params;
    int n_inputs;
    const acc_input_desc *inputs;
    int64_t loss_offset;
    int has_optimizer;
    /* forward + backward over the arena; returns an acc_status */
    int (*run)(acc_ctx *ctx);
    /* the plan's figures, for reports */
    int64_t budget_bytes, planned_peak_bytes;
    const char *plan_summary;
} acc_model_desc;

typedef struct {
    int64_t arena_bytes;         /* the arena allocated: the planned peak */
    int64_t peak_bytes_measured; /* every byte the runtime holds for this instance */
    double phase_ms[ACC_PHASE_COUNT]; /* last step's time per phase */
    double total_ms[ACC_PHASE_COUNT]; /* summed over all steps */
    int64_t steps;
} acc_counters;

int acc_create(const acc_model_desc *desc, const acc_options *opt, acc_model **out);
void acc_destroy(acc_model *m);
/* Detail of the last error on this instance ("" if none). Safe on NULL. */
const char *acc_last_error(const acc_model *m);

/* Initialise every parameter from its DSL initializer with a seed
 * (deterministic, counter-based); zeroes gradients and optimizer state. */
int acc_init_params(acc_model *m, uint64_t seed);
int acc_save_params(acc_model *m, const char *path);
int acc_load_params(acc_model *m, const char *path);
/* Write every parameter gradient (name, shape, float32 data). */
int acc_save_grads(acc_model *m, const char *path);

/* Set every input from a tensor file (the parameter-file format, holding the
 * inputs by name; i32 data stored as raw 4-byte integers). */
int acc_load_inputs(acc_model *m, const char *path);
/* Copy bytes into the named input; size must match exactly. */
int acc_set_input(acc_model *m, const char *name, const void *data, size_t size_bytes);
/* Forward and backward: loss in *loss, gradients of every parameter ready. */
int acc_step(acc_model *m, float *loss);
/* One fused AdamW update of every parameter from its gradient. */
int acc_adamw(acc_model *m, float lr, float beta1, float beta2, float eps, float weight_decay);

/* Pointers into the arena for a named parameter or its gradient. */
int acc_param(acc_model *m, const char *name, float **data, int64_t *elems);
int acc_grad(acc_model *m, const char *name, float **data, int64_t *elems);
int acc_get_counters(const acc_model *m, acc_counters *out);
const acc_model_desc *acc_describe(const acc_model *m);

/* For generated schedules: report a failure with detail and time phases. */
int acc_fail(acc_ctx *ctx, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void acc_phase(acc_ctx *ctx, int phase);

#ifdef __cplusplus
}
#endif
#endif
