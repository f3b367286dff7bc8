/* options.c - the driver's command line.
 *
 * One table of commands and one of options, each option row naming the
 * commands that take it: parsing rejects an option its command does not take,
 * and each command's help is the rows that name it. Numbers are parsed
 * strictly (no sign, space, hex, inf or nan; whole numbers are digits only)
 * and every range is stated in the message that rejects a value.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "options.h"
#include "passes.h"

typedef struct {
    const char *name, *synopsis, *summary;
} Command;

/* the general help lists these in this order */
static const Command commands[] = {
    {"check", "FILE [-D NAME=VALUE]...", "parse and elaborate a model, print a summary"},
    {"compile", "FILE --budget SIZE -o DIR [options]",
     "compile a model into DIR/lib<model>.a, DIR/<model>.h, libaccrt.a and accrt.h"},
    {"explain", "FILE [--budget SIZE] [options]",
     "per tensor: bytes, decision and recompute cost; the peak; every policy"},
    {"pareto", "FILE [--points N] [-o FILE.svg] [options]",
     "the optimal plan over a sweep of budgets and every policy: peak and overhead"},
    {"run", "FILE [--budget SIZE] [--steps N] [options]",
     "compile for the CPU, train N steps on synthetic data, print JSON lines"},
    {"calibrate", "[--target T] [--tf32] [-o FILE.hw]",
     "measure this CPU, or the GPU (--target cuda), for the cost model (--hw FILE.hw)"},
    {"diff", "A.json B.json", "what changed between two plans (exit 1 if any)"},
    {"alloc", "FILE.csv [--capacity SIZE] [--time-limit S] [-o OUT.csv]",
     "place the buffers of a MiniMalloc CSV instance (id,lower,upper,size); print the arena against max-live "
     "(exit 1: over capacity)"},
    {"plan", "--graph FILE.json (--budget SIZE | --budget-frac F) [options]",
     "plan a published graph (Checkmate's and MOCCASIN's node-link JSON); acc plan --help"},
    {"import", "--module FILE.py:FUNC -o DIR [--name NAME]",
     "import a PyTorch module (FUNC() returns (module, example_inputs)) into DIR/<name>.acdsl with its "
     "parameters; runs python3 -m acc import (needs PyTorch); acc import --help"},
};

typedef struct {
    const char *name, *arg, *help;
    const char *cmds; /* the commands that take it, space-separated */
} OptionRow;

#define PLANNING "compile explain pareto run"
static const OptionRow option_rows[] = {
    {"-D", "NAME=VALUE",
     "override a hyperparameter (also -DNAME=VALUE); VALUE is a number (5, 0.1, 1e-3, -2) or "
     "true/false",
     "check " PLANNING},
    {"--budget", "SIZE",
     "memory budget of the whole training step: 8G, 512M, 1.5GiB, 8000MB or a number of bytes; "
     "K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024, kB/MB/GB/TB powers of 1000",
     "compile explain run"},
    {"--host-budget", "SIZE",
     "host memory the plan may offload activations to (as --budget's sizes; default 0: no offload): a "
     "tensor the backward reads is then copied to host memory after its last forward read and back before "
     "its first backward read, where the copies take less time than recomputing it",
     "compile explain run"},
    {"-o", "DIR", "output directory (created if missing)", "compile"},
    {"-o", "FILE.svg", "write the plot", "pareto"},
    {"-o", "FILE.hw", "write the profile there instead of to standard output", "calibrate"},
    {"-o", "OUT.csv", "write the placement (the instance with an offset column)", "alloc"},
    {"--emit", "=ir", "only write the elaborated IR (DIR/<model>.ir)", "compile"},
    {"--target", "T",
     "cpu, cuda (NVRTC kernels + cuBLAS; the default of compile and explain when acc was built "
     "with the CUDA Toolkit) or cuda-emu (the cuda target's kernels and schedule run by the CPU "
     "emulator); acc run defaults to cpu",
     PLANNING},
    {"--target", "T",
     "cpu (default), cuda (this machine's GPU, through the generated library's launch layer) or "
     "cuda-emu (the same program on the emulator: a check, not a measurement)",
     "calibrate"},
    {"--arch", "LIST",
     "cuda: GPU architectures to embed (default sm_80,sm_90; PTX for the newest is added for "
     "later GPUs)",
     "compile run"},
    {"--precision", "P",
     "fp32 (default), tf32 (as --tf32) or bf16: activations, their gradients and the GEMMs' operands "
     "in bf16, computed in fp32 (f32 master weights, optimizer state, statistics and loss)",
     PLANNING},
    {"--optimizer-state", "S",
     "fp32 (default), bf16 or host: the AdamW moments m and v in the arena in fp32, in bf16 (half their "
     "memory; the update computes in fp32 and rounds m and v to nearest even on store), or in fp32 in host "
     "memory, where the update runs (none of their memory in the arena; each step copies the gradients to "
     "the host and the parameters back)",
     PLANNING},
    {"--batch", "B",
     "the whole batch, 1 to 1000000000: the model's hyperparameter B, the first dimension of its inputs "
     "(as -D B=...)",
     PLANNING},
    {"--micro-batch", "N",
     "auto or 1 to B (a divisor of the batch; default 1): the step runs N micro-batches of B/N rows with one "
     "plan and adds up their gradients before the optimizer; auto: the planner chooses N with the least "
     "estimated step time that fits the budget",
     "compile explain run"},
    {"--ranks", "R",
     "data parallel over R ranks, 1 to 4096 (default 1): every rank runs the plan on B/R rows of the batch B, "
     "and the gradients are reduced over the ranks in buckets while the backward runs (MPI on the cpu target "
     "and the emulator, NCCL on cuda); --budget is each rank's memory",
     "compile explain run"},
    {"--zero", "Z",
     "with --ranks: 0 (default; every rank keeps the whole AdamW state), 1 (ZeRO-1: each rank keeps and "
     "updates the state of its 1/R of the parameters, which the ranks then gather) or 2 (ZeRO-2: the gradients "
     "too: each parameter's gradient is reduce-scattered when its bucket is final, its memory then free for the "
     "rest of the backward, and the rank keeps 1/R of them)",
     "compile explain run"},
    {"--bucket-size", "SIZE",
     "with --ranks: the most bytes of gradients reduced as one collective (default 25M; a parameter larger "
     "than it is a bucket of its own)",
     "compile explain run"},
    {"--tf32", NULL, "cuda: let cuBLAS use TF32 tensor cores for the GEMMs", "compile run"},
    {"--tf32", NULL, "cuda: measure the GEMM rate on TF32 tensor cores", "calibrate"},
    {"--no-fuse", NULL,
     "no fusion: every forward step its own kernel (no elementwise chains), and a matmul and its "
     "bias add stay two ops (no linear)",
     "compile explain pareto run"},
    {"--policy", "P",
     "none, full, every:K, uniform:N, selective, ops:LIST, sqrt, optimal (default): what to "
     "recompute",
     "compile explain run"},
    {"--save", "GLOB", "must-save tensors (fnmatch pattern on names; repeatable)", PLANNING},
    {"--recompute", "GLOB", "must-recompute tensors (repeatable)", PLANNING},
    {"--hw", "NAME",
     "hardware profile for the cost model (hw/NAME.hw or a file; default cpu, h100-sxm for the cuda "
     "targets)",
     PLANNING},
    {"--time-limit", "S", "stop the optimal planner after S seconds (0 < S <= 1e6) with its best plan",
     "compile explain run"},
    {"--time-limit", "S",
     "the optimal solves of the sweep together take at most S seconds (0 < S <= 1e6); the "
     "sweep's points that do not fit are skipped",
     "pareto"},
    {"--time-limit", "S", "stop the search after S seconds (0 <= S <= 1e6; default 10; 0: the greedy placement only)",
     "alloc"},
    {"--capacity", "SIZE", "the arena's capacity (exit 1 when the placement does not fit)", "alloc"},
    {"--points", "N", "budgets in the sweep, 2 to 1000 (default 12)", "pareto"},
    {"--steps", "N", "training steps, 0 to 1000000000 (default 10)", "run"},
    {"--seed", "S", "parameter and data seed, 0 to 18446744073709551615 (default 1)", "run"},
    {"--lr", "LR", "AdamW learning rate, 0 to 1000 (default 0.001)", "run"},
    {"--dump-grads", "PATH", "write every parameter gradient of the first step", "run"},
    {"--dump-params", "PATH",
     "write every parameter after the last step (with --ranks: rank 0 to PATH, rank r to PATH.r<r>)", "run"},
    {"--keep", NULL, "keep the build directory", "run"},
    {"--shared", NULL,
     "also write DIR/lib<model>.so: the model, the runtime and its device layer in one shared library "
     "that Python's acc package (python/) or any program can dlopen",
     "compile"},
    {"--params", "FILE", "start from these parameters (libaccrt tensor file)", "run"},
    {"--inputs", "FILE", "train on these inputs instead of synthetic data", "run"},
    {"-v", NULL, "the phases and their times (parse, plan, emit, cc) and progress of long steps on stderr",
     "compile run"},
    {"-h", NULL, "this command's help (also --help)", "check compile explain pareto run calibrate diff alloc"},
};

static bool word_in(const char *word, const char *list) {
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return true;
    return false;
}

static const Command *find_command(const char *cmd) {
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(commands[i].name, cmd)) return &commands[i];
    return NULL;
}

bool opt_is_command(const char *cmd) { return find_command(cmd) != NULL; }

bool opt_takes(const char *cmd, const char *name) {
    for (size_t i = 0; i < sizeof option_rows / sizeof *option_rows; i++)
        if (!strcmp(option_rows[i].name, name) && word_in(cmd, option_rows[i].cmds)) return true;
    return false;
}

int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "acc: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(run 'acc --help' for usage)\n");
    va_end(ap);
    return EXIT_USAGE;
}

/* text wrapped at width 80 after an indent of col */
static void print_wrapped(FILE *out, const char *text, int col, int indent) {
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (col > indent && col + 1 + (int)n > 80) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, n, out);
        col += (int)n;
        p += n;
        while (*p == ' ') p++;
    }
    fputc('\n', out);
}

void opt_print_usage(FILE *out) {
    fputs("usage: acc <command> [options]\n\ncommands:\n", out);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        int col = fprintf(out, "  %s %s", commands[i].name, commands[i].synopsis);
        if (col < 40) fprintf(out, "%*s", 40 - col, ""), col = 40;
        else fprintf(out, "\n%*s", 40, ""), col = 40;
        print_wrapped(out, commands[i].summary, col, 40);
    }
    fputs("\n'acc COMMAND --help' lists the options of a command.\n"
          "  --version       acc's version and GLPK's\n"
          "  -h, --help      this text\n"
          "\nexit status: 0 success, 1 error in the input (acc diff: the plans differ),\n2 usage error\n",
          out);
}

void opt_print_command_help(const char *cmd, FILE *out) {
    const Command *c = find_command(cmd);
    if (!c) return;
    fprintf(out, "usage: acc %s %s\n", c->name, c->synopsis);
    print_wrapped(out, c->summary, 0, 0);
    bool any = false;
    for (size_t i = 0; i < sizeof option_rows / sizeof *option_rows; i++) {
        const OptionRow *r = &option_rows[i];
        if (!word_in(cmd, r->cmds)) continue;
        if (!any) fputs("\noptions:\n", out), any = true;
        int col = fprintf(out, "  %s%s%s", r->name, r->arg && r->arg[0] != '=' ? " " : "", r->arg ? r->arg : "");
        if (col < 22) fprintf(out, "%*s", 22 - col, ""), col = 22;
        else fprintf(out, "\n%*s", 22, ""), col = 22;
        print_wrapped(out, r->help, col, 22);
    }
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool opt_decimal(const char *s, bool neg, double *x) {
    const char *p = s;
    if (neg && *p == '-') p++;
    size_t n_int = 0, n_frac = 0;
    while (is_digit(*p)) p++, n_int++;
    if (*p == '.') {
        p++;
        while (is_digit(*p)) p++, n_frac++;
    }
    if (!n_int && !n_frac) return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+') p++;
        if (!is_digit(*p)) return false;
        while (is_digit(*p)) p++;
    }
    if (*p) return false;
    errno = 0;
    *x = strtod(s, NULL);
    return isfinite(*x) && errno != ERANGE;
}

bool opt_whole(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *x) {
    if (!is_digit(*s)) return false;
    for (const char *p = s; *p; p++)
        if (!is_digit(*p)) return false;
    errno = 0;
    *x = strtoull(s, NULL, 10);
    return errno != ERANGE && *x >= lo && *x <= hi;
}

bool opt_seconds(const char *s, bool zero_ok, double *x) {
    return opt_decimal(s, false, x) && (*x > 0 || (zero_ok && *x == 0)) && *x <= OPT_TIME_LIMIT_MAX;
}

/* -D NAME=VALUE: NAME an identifier; a VALUE that reads as a number must be a
 * strict one (other words go to the front end, which says what type the
 * hyperparameter has) */
static int parse_define(const char *kv, Options *o) {
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!kv || !eq || eq == kv || !eq[1]) return usage_error("-D needs NAME=VALUE, got '%s'", kv ? kv : "");
    for (const char *p = kv; p < eq; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (p > kv && is_digit(*p))))
            return usage_error("-D %s: '%.*s' is not a hyperparameter name", kv, (int)(eq - kv), kv);
    double x;
    const char *v = eq + 1;
    char *end;
    strtod(v, &end);
    bool numeric = end != v || is_digit(*v) || strchr("+-. \t", *v);
    if (numeric && !opt_decimal(v, true, &x))
        return usage_error("-D %s: the value must be a number (digits with an optional '-', fraction and exponent: "
                           "5, -2, 0.1, 1e-3) or true/false",
                           kv);
    Define d = {strndup(kv, (size_t)(eq - kv)), eq + 1};
    VEC_PUSH(o->defs, d);
    return 0;
}

/* The value of option a: "--opt=value", or the next argument. */
static const char *option_value(const char *a, size_t name_len, int argc, char **argv, int *i) {
    if (a[name_len] == '=') return a + name_len + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

int opt_parse(const char *cmd, int argc, char **argv, Options *o) {
    o->cmd = cmd;
    o->policy = plan_policy("optimal");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            if (o->file) return usage_error("more than one input file ('%s')", a);
            o->file = a;
            continue;
        }
        /* the option's name: up to '=' for long options, "-D" for -DNAME=V */
        char name[32];
        size_t len = a[1] == '-' ? strcspn(a, "=") : 2;
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), a);
        if (!strcmp(name, "--help")) snprintf(name, sizeof name, "-h");
        if (!strcmp(a, "--emit")) return usage_error("--emit needs a kind: --emit=ir");
        bool known = false;
        for (size_t r = 0; r < sizeof option_rows / sizeof *option_rows; r++)
            known |= !strcmp(option_rows[r].name, name);
        if (!known || (a[1] != '-' && a[2] && strcmp(name, "-D")))
            return usage_error("unknown option '%s' (acc %s --help lists the options)", a, cmd);
        if (!opt_takes(cmd, name))
            return usage_error("acc %s does not take %s (acc %s --help lists its options)", cmd, name, cmd);
        if (a[1] == '-' && a[len] == '=' && !strcmp(name, "--tf32")) return usage_error("%s takes no value", name);
        const char *v = NULL;
        bool flag = !strcmp(name, "-h") || !strcmp(name, "-v") || !strcmp(name, "--tf32") ||
                    !strcmp(name, "--no-fuse") || !strcmp(name, "--keep") || !strcmp(name, "--shared");
        if (flag) {
            if (a[len] == '=') return usage_error("%s takes no value", name);
        } else if (!strcmp(name, "-D")) {
            v = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
        } else {
            v = option_value(a, len, argc, argv, &i);
            if (!v) return usage_error("%s needs a value", name);
        }
        unsigned long long u;
        double x;
        if (!strcmp(name, "-h")) o->help = true;
        else if (!strcmp(name, "-v")) o->verbose = true;
        else if (!strcmp(name, "--tf32")) o->tf32 = true; /* = --precision tf32 */
        else if (!strcmp(name, "--no-fuse")) o->no_fuse = true;
        else if (!strcmp(name, "--keep")) o->keep = true;
        else if (!strcmp(name, "--shared")) o->shared = true;
        else if (!strcmp(name, "-D")) {
            if (parse_define(v, o)) return EXIT_USAGE;
        } else if (!strcmp(name, "--budget")) {
            if (!parse_size(v, &o->budget_bytes))
                return usage_error("invalid size '%s' (examples: 8G, 512M, 1.5GiB, 8000MB, 1073741824; at most 8 EiB)",
                                   v);
            o->has_budget = true;
        } else if (!strcmp(name, "--host-budget")) {
            if (strcmp(v, "0") && !parse_size(v, &o->host_budget_bytes))
                return usage_error("invalid size '%s' (examples: 8G, 512M, 1.5GiB, 8000MB, 1073741824; at most 8 EiB)",
                                   v);
        } else if (!strcmp(name, "-o")) o->out_dir = v;
        else if (!strcmp(name, "--emit")) {
            o->emit = v;
            if (strcmp(v, "ir")) return usage_error("unknown --emit kind '%s' (known: ir)", v);
        } else if (!strcmp(name, "--target")) {
            o->target = cg_target_find(v);
            if (!o->target) return usage_error("unknown --target '%s' (known: %s)", v, cg_target_names());
        } else if (!strcmp(name, "--arch")) o->arch = v;
        else if (!strcmp(name, "--policy")) {
            char err[256];
            if (!plan_policy_parse(v, &o->policy, err, sizeof err)) return usage_error("%s", err);
        } else if (!strcmp(name, "--save")) VEC_PUSH(o->save_globs, v);
        else if (!strcmp(name, "--recompute")) VEC_PUSH(o->recompute_globs, v);
        else if (!strcmp(name, "--hw")) o->hw = v;
        else if (!strcmp(name, "--precision")) {
            if (!precision_known(v)) return usage_error("unknown --precision '%s' (known: " ACC_PRECISIONS ")", v);
            if (o->precision && strcmp(o->precision, v))
                return usage_error("--precision %s and --precision %s exclude each other", o->precision, v);
            o->precision = v;
        } else if (!strcmp(name, "--optimizer-state")) {
            if (strcmp(v, "fp32") && strcmp(v, "bf16") && strcmp(v, "host"))
                return usage_error("unknown --optimizer-state '%s' (known: fp32, bf16 or host)", v);
            if (o->optimizer_state && strcmp(o->optimizer_state, v))
                return usage_error("--optimizer-state %s and --optimizer-state %s exclude each other",
                                   o->optimizer_state, v);
            o->optimizer_state = v;
        } else if (!strcmp(name, "--batch")) {
            if (!opt_whole(v, 1, OPT_BATCH_MAX, &u))
                return usage_error("--batch needs a whole number from 1 to 1000000000, got '%s'", v);
            o->batch = (int64_t)u;
        } else if (!strcmp(name, "--micro-batch")) {
            if (!strcmp(v, "auto")) o->micro_batches = OPT_MICRO_AUTO;
            else if (opt_whole(v, 1, OPT_BATCH_MAX, &u)) o->micro_batches = (int)u;
            else return usage_error("--micro-batch needs auto or a whole number from 1 to 1000000000, got '%s'", v);
        } else if (!strcmp(name, "--ranks")) {
            if (!opt_whole(v, 1, OPT_RANKS_MAX, &u))
                return usage_error("--ranks needs a whole number from 1 to 4096, got '%s'", v);
            o->ranks = (int)u;
        } else if (!strcmp(name, "--zero")) {
            if (strcmp(v, "0") && strcmp(v, "1") && strcmp(v, "2"))
                return usage_error("--zero needs 0, 1 (the optimizer state sharded) or 2 (the gradients too), got '%s'",
                                   v);
            o->zero = v[0] - '0';
        } else if (!strcmp(name, "--bucket-size")) {
            if (!parse_size(v, &o->bucket_bytes) || o->bucket_bytes < 1)
                return usage_error("invalid size '%s' (examples: 25M, 4MiB, 1048576; at least 1 byte)", v);
        } else if (!strcmp(name, "--time-limit")) {
            if (!opt_seconds(v, false, &o->time_limit_s))
                return usage_error("--time-limit needs seconds, a number greater than 0 and at most 1e6, got '%s'", v);
        } else if (!strcmp(name, "--points")) {
            if (!opt_whole(v, OPT_POINTS_MIN, OPT_POINTS_MAX, &u))
                return usage_error("--points needs a whole number from 2 to 1000, got '%s'", v);
            o->points = (int)u;
        } else if (!strcmp(name, "--steps")) {
            if (!opt_whole(v, 0, OPT_STEPS_MAX, &u))
                return usage_error("--steps needs a whole number from 0 to 1000000000, got '%s'", v);
            o->steps = v;
        } else if (!strcmp(name, "--seed")) {
            if (!opt_whole(v, 0, ~0ULL, &u))
                return usage_error("--seed needs a whole number from 0 to 18446744073709551615, got '%s'", v);
            o->seed = v;
        } else if (!strcmp(name, "--lr")) {
            if (!opt_decimal(v, false, &x) || x > OPT_LR_MAX)
                return usage_error("--lr needs a number from 0 to 1000, got '%s'", v);
            o->lr = v;
        } else if (!strcmp(name, "--dump-grads")) o->dump_grads = v;
        else if (!strcmp(name, "--dump-params")) o->dump_params = v;
        else if (!strcmp(name, "--params")) o->params = v;
        else if (!strcmp(name, "--inputs")) o->inputs = v;
        else return usage_error("option '%s' is not handled by acc %s", name, cmd); /* a row without a case */
    }
    if (o->help) return 0;
    if (!o->file) return usage_error("acc %s needs an input file", cmd);
    /* compile's target when --target is not given: cuda where acc was built
     * with the CUDA Toolkit, else cpu; explain and pareto plan for the same
     * target (and so the same cost model); run trains on the CPU */
    if (!o->target) o->target = cg_target_default(!strcmp(cmd, "run"));
    if (o->precision && o->tf32 && strcmp(o->precision, "tf32"))
        return usage_error("--tf32 and --precision %s exclude each other", o->precision);
    if (o->tf32) o->precision = "tf32";
    return 0;
}

void opt_free(Options *o) {
    for (int i = 0; i < o->defs.n; i++) free((char *)(uintptr_t)o->defs.v[i].name);
    VEC_FREE(o->defs);
    VEC_FREE(o->save_globs);
    VEC_FREE(o->recompute_globs);
}
