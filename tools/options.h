/* options.h - the driver's command line: one table of commands and options,
 * strict number parsing, the general and per-command help. */
#ifndef ACC_OPTIONS_H
#define ACC_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "codegen.h"
#include "frontend.h"
#include "ir.h"
#include "passes.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

/* Limits stated in the usage messages. */
#define OPT_TIME_LIMIT_MAX 1e6 /* seconds */
#define OPT_STEPS_MAX 1000000000LL
#define OPT_LR_MAX 1000.0
#define OPT_POINTS_MIN 2
#define OPT_POINTS_MAX 1000
#define OPT_BATCH_MAX 1000000000LL
#define OPT_MICRO_AUTO (-1)
#define OPT_RANKS_MAX 4096
#define OPT_BUCKET_DEFAULT (25LL << 20) /* --bucket-size: 25 MiB */

typedef struct {
    const char *cmd; /* the command word */
    const char *file, *out_dir, *emit, *dump_grads, *dump_params, *steps, *seed, *lr, *params, *inputs;
    const char *hw, *arch;
    const CgTarget *target; /* --target, looked up once; else the command's default */
    Policy policy;          /* --policy, parsed once (default optimal) */
    double time_limit_s;
    int64_t budget_bytes;
    int64_t host_budget_bytes; /* --host-budget: host memory for offloaded activations (0: no offload) */
    bool has_budget, keep, tf32, no_fuse, verbose, help;
    bool shared;           /* compile --shared: DIR/lib<model>.so too */
    const char *precision; /* --precision: "fp32", "tf32" or "bf16" (over the DSL's `precision`); --tf32 is "tf32" */
    const char *optimizer_state; /* --optimizer-state: "fp32" or "bf16" (the AdamW moments' dtype); NULL: fp32 */
    int points;
    int64_t batch;        /* --batch B: the whole batch (hparam B); 0: the model's */
    int micro_batches;    /* --micro-batch N; OPT_MICRO_AUTO: the planner chooses; 0 or 1: one batch */
    int ranks;            /* --ranks R: data parallel over R ranks (0 or 1: one) */
    int zero;             /* --zero 1: each rank keeps the AdamW state of its shard */
    int64_t bucket_bytes; /* --bucket-size: the cap of a bucket of gradients (0: OPT_BUCKET_DEFAULT) */
    VEC(Define) defs;
    VEC(const char *) save_globs;
    VEC(const char *) recompute_globs;
} Options;

/* Prints "acc: error: ..." and a pointer to the help; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether cmd is a command acc knows. */
bool opt_is_command(const char *cmd);
/* Whether command cmd takes option name ("--budget", "-o", "-D"). */
bool opt_takes(const char *cmd, const char *name);

/* The options after the command word of check, compile, explain, pareto and
 * run. Returns 0 (o->help set when -h/--help was given) or EXIT_USAGE. */
int opt_parse(const char *cmd, int argc, char **argv, Options *o);
void opt_free(Options *o);

/* The whole help (no command) or one command's. */
void opt_print_usage(FILE *out);
void opt_print_command_help(const char *cmd, FILE *out);

/* Strict numbers: decimal digits with an optional fraction and exponent, no
 * sign, space, hex, inf or nan (a leading '-' only where neg allows). */
bool opt_decimal(const char *s, bool neg, double *x);
/* A whole number from lo to hi (decimal digits only). */
bool opt_whole(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *x);
/* Seconds for --time-limit: 0 < S <= OPT_TIME_LIMIT_MAX (0 allowed with zero_ok). */
bool opt_seconds(const char *s, bool zero_ok, double *x);

#endif
