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

typedef struct {
    const char *target;  /* "cpu" */
    int64_t budget_bytes;
    const char *plan_summary; /* one line for the header banner */
} CgOptions;

/* requires: a schedule that passed plan_check. Writes <model>.c and <model>.h. */
void cg_emit_cpu(const Graph *g, const Autodiff *ad, const Schedule *s, const CgOptions *o, FILE *c_out,
                 FILE *h_out);

/* Compile DIR/<model>.c into DIR/lib<model>.a and put libaccrt.a and accrt.h
 * beside it. Returns 0 or prints why not to err and returns nonzero. */
int cg_build_library(const char *dir, const char *model, FILE *err);

/* Run a program (argv[0] searched in PATH); 0 if it exited 0. */
int cg_run(const char *const argv[], FILE *err);

/* Where the runtime's header, archive and sources are (compile-time
 * defaults, overridable with ACC_RUNTIME_DIR / ACC_RUNTIME_LIB). */
const char *cg_runtime_include(void);
const char *cg_runtime_lib(void);
const char *cg_blas_dir(void); /* the OpenMP build of OpenBLAS */
const char *cg_gen_flags(void); /* extra cc flags for generated code ("" or sanitizers) */

#endif
