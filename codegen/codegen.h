/* codegen.h - from a checked schedule to a static library.
 *
 * cg_emit_cpu writes the host schedule as C (one kernel call per step, every
 * buffer a constant offset into the arena) plus the model's descriptor, and
 * the public header; cg_build_library drives the host C compiler and ar.
 * Includes passes.h and ir.h only.
 */
#ifndef ACC_CODEGEN_H
#define ACC_CODEGEN_H

#include "passes.h"

/* ---- targets (codegen/target.c): one row each, looked up once ---- */

typedef struct {
    const char *name;               /* --target NAME */
    const char *device;             /* the runtime's device layer, acc_device_<device>; NULL: the CPU kernels */
    const char *kernels_header;     /* what the host schedule includes to bind its k_* calls */
    const char *device_archive;     /* the device layer's archive beside libaccrt.a, or NULL */
    const char *device_lib_env;     /* the environment variable that says where it is */
    const char *device_lib_default; /* else where the build put it ("": not built) */
    const char *archives;           /* what a trainer links after lib<model>.a */
    const char *libs;               /* and the libraries after them */
    bool nvrtc;                     /* kernels compiled by NVRTC into <model>_images.c */
    bool emulated;                  /* the device layer runs on the CPU: a check, not a measurement */
    int64_t workspace_bytes;        /* the device library's workspace, reserved by every plan (in the budget) */
    const char *hw;                 /* the default hardware profile of the cost model */
    const char *calibrate;          /* tools/calibrate_main.c's mode */
    bool bf16;                      /* it has bf16 kernels: --precision bf16 compiles for it */
} CgTarget;

/* The row of target name, NULL if none; the default target of compile,
 * explain and pareto (run: true for acc run, always cpu). */
const CgTarget *cg_target_find(const char *name);
const CgTarget *cg_target_default(bool run);
/* Every target's name, "cpu, cuda, cuda-emu", for messages. */
const char *cg_target_names(void);

typedef struct {
    const CgTarget *target;
    int64_t budget_bytes;
    StepMemory mem;              /* the plan's arena: the schedule's, then the target's workspace */
    const char *plan_summary;    /* one line for the header banner */
    int tf32;                    /* device targets: GEMMs may use TF32 */
    int n_images;                /* cuda: kernel images in <model>_images.c */
    bool no_fuse;                /* emit every step alone (no elementwise chains) */
    int micro_batches;           /* the step's micro-batches (1: one batch) */
    float loss_scale;            /* the loss gradient's seed: 1 / micro_batches for a mean, else 1 */
    const int64_t *stage_offset; /* [nodes]: a sliced input's full batch in mem's staging (-1: not
                                    sliced); NULL: one batch */
    const DpLayout *dp;          /* data parallel: the buckets (NULL or one rank: none) */
    float rank_scale;            /* data parallel: each rank's share of the loss (1 / ranks for a mean) */
} CgOptions;

/* requires: a schedule that passed plan_check. Writes <model>.c and <model>.h:
 * the host schedule (the same text for every target: kernel calls k_* with
 * constant offsets, bound to the CPU kernels or to the device layer by the
 * header the target includes) and the model's descriptor. */
void cg_emit_host(const Graph *g, const Autodiff *ad, const Schedule *s, const CgOptions *o, FILE *c_out, FILE *h_out);

/* ---- elementwise chains (codegen/fuse.c) ---- */

#define CG_CHAIN_MAX 4

typedef struct {
    int step; /* the schedule step this op was */
    OpKind op;
    int value_buf;      /* the buffer its chain value came from (the head's: the chain input) */
    int operand_buf;    /* the other input of a binary op, else -1 */
    bool operand_right; /* the operand is the left input: o OP v */
    int64_t modulus;    /* the operand is read at i mod its size (a suffix of the shape) */
    float param;        /* scale's alpha, dropout's p */
    int op_id;          /* dropout's random stream: the node id */
} CgChainOp;

typedef struct {
    CgChainOp ops[CG_CHAIN_MAX];
    int n_ops;
    int64_t elems;
    int out_buf;
} CgChain;

typedef struct {
    int *chain_of; /* per step: its chain, or -1 */
    VEC(CgChain) chains;
} CgFusion;

/* requires: an allocated schedule. provides: the chains (see fuse.c). */
void cg_fuse(const Graph *g, const Schedule *s, CgFusion *f);
void cg_fusion_free(CgFusion *f);
const char *cg_chain_op_name(OpKind op);
/* The random stream of dropout node n: its ordinal among the graph's
 * dropout nodes, which fusing a matmul into a linear (a pass that renumbers
 * the nodes) does not change, so that a plan with and one without fusion
 * draw the same masks. */
uint32_t cg_dropout_stream(const Graph *g, const Node *n);

/* ---- the copies of offloaded tensors (codegen/overlap.c) ---- */

typedef SchedCopy CgCopy;
typedef SchedCopies CgCopies;

/* requires: an allocated schedule and its fusion. provides: sched_copies'
 * positions with each issue moved to the emitted position of its step (the
 * end of the fused chain it is in). */
void cg_copies(const Schedule *s, const CgFusion *fu, CgCopies *out);
void cg_copies_free(CgCopies *c);

/* ---- the CUDA kernels (codegen/cuda.c) ---- */

/* The kernel images of the cuda target: NVRTC compiles the runtime's
 * kernels.cu to CUBIN for each architecture in archs ("sm_80,sm_90") and to
 * PTX for the newest; writes DIR/<model>_images.c (the bytes, embedded in
 * the library) and DIR/kernels.txt (NVRTC version, options, and ptxas's
 * registers, spills and shared memory per kernel and architecture). *json
 * gets a JSON object for plan.json (pool-allocated in g). Returns the number
 * of images, or -1 (the NVRTC log on err) if a compilation fails or a kernel
 * spills. */
int cg_cuda_images(Graph *g, const char *dir, const char *archs, const char **json, FILE *err);

/* Compile DIR/<model>.c (and DIR/<model>_images.c for cuda) into
 * DIR/lib<model>.a and put the runtime archives and accrt.h beside it; with
 * shared also DIR/lib<model>.so: the model's objects and the whole runtime
 * (its device layer included) linked with what they need (OpenBLAS, OpenMP,
 * -ldl), so that one dlopen gives every acc_* call and <model>_desc.
 * Returns 0 or prints why not to err and returns nonzero. */
int cg_build_library(const char *dir, const char *model, const CgTarget *target, bool shared, FILE *err);

/* Run a program (argv[0] searched in PATH); 0 if it exited 0. */
int cg_run(const char *const argv[], FILE *err);

/* Where the runtime's header, archive and sources are (compile-time
 * defaults, overridable with ACC_RUNTIME_DIR / ACC_RUNTIME_LIB). */
const char *cg_runtime_include(void);
const char *cg_runtime_lib(void);
const char *cg_blas_dir(void);  /* the OpenMP build of OpenBLAS */
const char *cg_gen_flags(void); /* extra cc flags for generated code ("" or sanitizers) */

#endif
