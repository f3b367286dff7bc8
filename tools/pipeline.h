/* pipeline.h - acc_compile: the compiler's passes in order, one call each,
 * from a .acdsl file to a static library (or as far as a command needs).
 * The commands of tools/acc.c (check, compile, explain, pareto, run,
 * calibrate) all go through it; see pipeline.c for the list. */
#ifndef ACC_PIPELINE_H
#define ACC_PIPELINE_H

#include "codegen.h"
#include "options.h"
#include "passes.h"
#include "report.h"

/* How far acc_compile goes. */
typedef enum {
    ACC_UNTIL_ELABORATED, /* the verified graph as the front end built it (check) */
    ACC_UNTIL_GRAPH,      /* ... and fused (compile --emit=ir) */
    ACC_UNTIL_PLAN,       /* ... planned, scheduled, allocated and checked (explain, pareto) */
    ACC_UNTIL_LIBRARY     /* ... and DIR/lib<model>.a with its header and reports (compile, run) */
} AccUntil;

/* Everything one compilation made; acc_compilation_free frees what there is. */
typedef struct {
    Graph g;
    HwProfile hw;
    Autodiff ad;
    PlanOptions po;
    Plan plan;
    Schedule sched;
    StepMemory mem;        /* the schedule's arena and the target's workspace: the step's memory */
    ReportInfo info;       /* what plan.json and the reports say about the target and budget */
    int n_images;          /* nvrtc targets: kernel images */
    const char *precision; /* "fp32", "tf32", "bf16": --precision, else the DSL's, else fp32 */
    bool parsed;           /* the front end accepted the model (g holds it) */
    int micro_batches;     /* the step's micro-batches (1: one batch) */
    float loss_scale;      /* the loss gradient's seed (1 / micro_batches for a mean) */
    int64_t *stage_rel;    /* [nodes]: a sliced input's place in the staging (-1); NULL: one batch */
    MicroReport micro;     /* --micro-batch: the counts tried (info.micro points here) */
    DpLayout dp;           /* --ranks: the buckets and the shard (one rank: none) */
    float rank_scale;      /* --ranks: each rank's share of the loss (1 / ranks for a mean) */
} Compilation;

/* Run the passes of pipeline.c on o->file up to until (DIR: the library's
 * directory, which must exist, for ACC_UNTIL_LIBRARY). Errors are reported
 * on stderr. Returns 0, EXIT_INPUT (an error in the model or its budget) or
 * EXIT_USAGE (a bad --hw or --save/--recompute). */
int acc_compile(const Options *o, AccUntil until, const char *dir, Compilation *c);
void acc_compilation_free(Compilation *c);

/* ---- what the commands share with the pipeline ---- */

/* -v: a line when a phase that may take long starts, and its time when it ends */
void acc_phase_start(const Options *o, const char *what, const char *detail);
void acc_phase_end(const Options *o, const char *what, double t0);
/* mkdir -p; 0 or EXIT_INPUT with the reason printed */
int acc_make_dir(const char *dir);
/* path written by fn(arg, file); 0 or EXIT_INPUT with the reason printed */
int acc_write_text(const char *path, void (*fn)(const void *, FILE *), const void *arg);

#endif
