/* acc.c - the command-line driver: a flat list of pipeline calls per command.
 *
 *   acc check FILE [-D k=v]...          parse, elaborate, summarise
 *   acc compile FILE --budget SIZE -o DIR [--emit=ir] [-D k=v]...
 *   acc run FILE [--budget SIZE] [--steps N] [--seed S] [--dump-grads PATH]
 *
 * Exit status: 0 success, 1 error in the input, 2 usage error.
 */
#include <errno.h>
#include <glpk.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calibrate.h"
#include "codegen.h"
#include "frontend.h"
#include "ir.h"
#include "passes.h"
#include "dag_cmd.h"
#include "plandiff.h"
#include "memviz.h"
#include "report.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

static const char usage[] =
    "usage: acc <command> [options]\n"
    "\n"
    "commands:\n"
    "  check FILE [-D NAME=VALUE]...      parse and elaborate a model, print a summary\n"
    "  compile FILE --budget SIZE -o DIR  compile a model into DIR/lib<model>.a,\n"
    "        [--emit=ir] [-D NAME=VALUE]...  DIR/<model>.h, libaccrt.a and accrt.h\n"
    "  explain FILE --budget SIZE [plan options]   per tensor: bytes, decision and\n"
    "                                     recompute cost; the peak; every policy\n"
    "  pareto FILE [--points N] [-o FILE.svg]   the optimal plan over a sweep of\n"
    "                                     budgets and every policy: peak and overhead\n"
    "  calibrate [-o FILE.hw]             measure this CPU for the cost model (--hw FILE.hw)\n"
    "  diff A.json B.json                 what changed between two plans (exit 1 if any)\n"
    "  alloc FILE.csv [--capacity SIZE] [--time-limit S] [-o OUT.csv]   place the\n"
    "                                     buffers of a MiniMalloc CSV instance\n"
    "                                     (id,lower,upper,size); print the arena\n"
    "                                     against max-live (exit 1: over capacity)\n"
    "  plan --graph FILE.json (--budget SIZE | --budget-frac F) [--method M]\n"
    "        [--time-limit S] [--emit=lp PATH]  plan a published graph (Checkmate's\n"
    "                                     and MOCCASIN's node-link JSON); acc plan -h\n"
    "  run FILE [--budget SIZE] [--steps N] [--seed S] [--lr LR] [--dump-grads PATH]\n"
    "        [-D NAME=VALUE]...            compile for the CPU, train N steps on\n"
    "                                     synthetic data, print JSON lines\n"
    "\n"
    "options:\n"
    "  -D NAME=VALUE   override a hyperparameter (also -DNAME=VALUE)\n"
    "  --budget SIZE   memory budget of the whole training step: 8G, 512M, 1.5GiB,\n"
    "                  8000MB or a number of bytes; K/M/G/T and KiB/MiB/GiB/TiB are\n"
    "                  powers of 1024, kB/MB/GB/TB powers of 1000\n"
    "  -o DIR          output directory (created if missing)\n"
    "  --emit=ir       only write the elaborated IR (DIR/<model>.ir)\n"
    "  --target T      cpu, cuda (NVRTC kernels + cuBLAS; the default of compile\n"
    "                  when acc was built with the CUDA Toolkit) or cuda-emu (the\n"
    "                  cuda target's kernels and schedule run by the CPU emulator);\n"
    "                  acc run defaults to cpu\n"
    "  --arch LIST     cuda: GPU architectures to embed (default sm_80,sm_90; PTX\n"
    "                  for the newest is added for later GPUs)\n"
    "  --tf32          cuda: let cuBLAS use TF32 tensor cores for the GEMMs\n"
    "  --no-fuse       no fusion: every forward step its own kernel (no elementwise\n"
    "                  chains), and a matmul and its bias add stay two ops (no linear)\n"
    "  --policy P      none, full, every:K, uniform:N, selective, ops:LIST, sqrt,\n"
    "                  optimal (default): what to recompute\n"
    "  --save GLOB     must-save tensors (fnmatch pattern on names; repeatable)\n"
    "  --recompute GLOB  must-recompute tensors (repeatable)\n"
    "  --hw NAME       hardware profile for the cost model (hw/NAME.hw; default cpu,\n"
    "                  h100-sxm for the cuda targets)\n"
    "  --time-limit S  stop the optimal planner after S seconds with its best plan\n"
    "  --steps N       training steps of acc run (default 10)\n"
    "  --seed S        parameter and data seed of acc run (default 1)\n"
    "  --lr LR         AdamW learning rate of acc run (default 0.001)\n"
    "  --dump-grads P  acc run: write every parameter gradient of the first step\n"
    "  --keep          acc run: keep the build directory\n"
    "  --params FILE   acc run: start from these parameters (libaccrt tensor file)\n"
    "  --inputs FILE   acc run: train on these inputs instead of synthetic data\n"
    "  -h, --help      this text\n"
    "  --version       acc's version and GLPK's\n"
    "\n"
    "exit status: 0 success, 1 error in the input (acc diff: the plans differ),\n"
    "2 usage error\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "acc: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(run 'acc --help' for usage)\n");
    va_end(ap);
    return EXIT_USAGE;
}

typedef struct {
    const char *file, *out_dir, *emit, *target, *dump_grads, *steps, *seed, *lr, *params, *inputs;
    const char *policy, *hw, *arch;
    double time_limit_s;
    int64_t budget_bytes;
    bool has_budget, keep, tf32, no_fuse;
    int points;
    VEC(Define) defs;
    VEC(const char *) save_globs;
    VEC(const char *) recompute_globs;
} Options;

/* Parse the options after the command word; returns 0 or EXIT_USAGE. */
static int parse_options(int argc, char **argv, Options *o) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "-D", 2)) {
            const char *kv = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            const char *eq = kv ? strchr(kv, '=') : NULL;
            if (!kv || !eq || eq == kv || !eq[1]) return usage_error("-D needs NAME=VALUE, got '%s'", kv ? kv : "");
            Define d = {strndup(kv, (size_t)(eq - kv)), eq + 1};
            VEC_PUSH(o->defs, d);
        } else if (!strcmp(a, "--budget") || !strncmp(a, "--budget=", 9)) {
            const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) return usage_error("%s needs a size", a);
            if (!parse_size(v, &o->budget_bytes))
                return usage_error("invalid size '%s' (examples: 8G, 512M, 1.5GiB, 8000MB, 1073741824)", v);
            o->has_budget = true;
        } else if (!strcmp(a, "-o")) {
            if (i + 1 >= argc) return usage_error("%s needs a directory", a);
            o->out_dir = argv[++i];
        } else if (!strcmp(a, "--arch")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            o->arch = argv[++i];
        } else if (!strcmp(a, "--points")) {
            char *end;
            o->points = i + 1 < argc ? (int)strtol(argv[++i], &end, 10) : 0;
            if (o->points < 2 || o->points > 1000 || *end) return usage_error("--points needs a count from 2 to 1000");
        } else if (!strcmp(a, "--no-fuse")) {
            o->no_fuse = true;
        } else if (!strcmp(a, "--tf32")) {
            o->tf32 = true;
        } else if (!strcmp(a, "--target") || !strcmp(a, "--steps") || !strcmp(a, "--seed") || !strcmp(a, "--lr") ||
                   !strcmp(a, "--dump-grads") || !strcmp(a, "--params") || !strcmp(a, "--inputs")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--params") || !strcmp(a, "--inputs")) {
                *(a[2] == 'p' ? &o->params : &o->inputs) = v;
                continue;
            }
            if (a[2] == 't' && a[3] == 'a') o->target = v;
            else if (a[2] == 's' && a[3] == 't') o->steps = v;
            else if (a[2] == 's') o->seed = v;
            else if (a[2] == 'l') o->lr = v;
            else o->dump_grads = v;
            if (a[2] != 't' && a[2] != 'd') {
                char *end;
                double x = strtod(v, &end);
                if (!*v || *end || !(x >= 0) || x > 1e12) return usage_error("%s needs a non-negative number, got '%s'", a, v);
            }
        } else if (!strcmp(a, "--policy") || !strcmp(a, "--hw") || !strcmp(a, "--save") || !strcmp(a, "--recompute") ||
                   !strcmp(a, "--time-limit")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            const char *v = argv[++i];
            char err[256];
            if (!strcmp(a, "--policy")) {
                if (!plan_policy_valid(v, err, sizeof err)) return usage_error("%s", err);
                o->policy = v;
            } else if (!strcmp(a, "--hw")) {
                o->hw = v;
            } else if (!strcmp(a, "--save")) {
                VEC_PUSH(o->save_globs, v);
            } else if (!strcmp(a, "--recompute")) {
                VEC_PUSH(o->recompute_globs, v);
            } else {
                char *end;
                o->time_limit_s = strtod(v, &end);
                if (!*v || *end || !(o->time_limit_s > 0)) return usage_error("--time-limit needs seconds, got '%s'", v);
            }
        } else if (!strcmp(a, "--keep")) {
            o->keep = true;
        } else if (!strncmp(a, "--emit=", 7)) {
            o->emit = a + 7;
            if (strcmp(o->emit, "ir")) return usage_error("unknown --emit kind '%s' (known: ir)", o->emit);
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else if (!o->file) {
            o->file = a;
        } else {
            return usage_error("more than one input file ('%s')", a);
        }
    }
    if (!o->file) return usage_error("no input file");
    if (o->target && strcmp(o->target, "cpu") && !cg_is_device_target(o->target))
        return usage_error("unknown --target '%s' (known: cpu, cuda, cuda-emu)", o->target);
    return 0;
}

static void free_options(Options *o) {
    for (int i = 0; i < o->defs.n; i++) free((char *)(uintptr_t)o->defs.v[i].name);
    VEC_FREE(o->defs);
    VEC_FREE(o->save_globs);
    VEC_FREE(o->recompute_globs);
}

/* The summary of `acc check`: counts, bytes and activation bytes per block. */
static void print_summary(const Graph *g, FILE *out) {
    char b1[32];
    fprintf(out, "model: %s (%s)\n", g->model, g->source);
    fprintf(out, "hyperparameters:");
    for (int i = 0; i < g->hparams.n; i++) fprintf(out, " %s", g->hparams.v[i]);
    fprintf(out, "\ninputs:");
    int n_param = 0, n_input = 0, n_op = 0;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        char buf[ACC_SHAPE_STR];
        if (n->op == OP_INPUT) fprintf(out, "%s %s %s%s", n_input++ ? "," : "", n->name, dtype_name(n->dtype),
                                       shape_str(&n->shape, buf));
        else if (n->op == OP_PARAM) n_param++;
        else n_op++;
    }
    fprintf(out, "\nparameters: %" PRId64 " (%" PRId64 " bytes, %s)\n", graph_param_count(g), graph_param_bytes(g),
            format_bytes(graph_param_bytes(g), b1, sizeof b1));
    fprintf(out, "nodes: %d (%d parameter tensor%s, %d input%s, %d op%s)\n", g->nodes.n, n_param, n_param == 1 ? "" : "s",
            n_input, n_input == 1 ? "" : "s", n_op, n_op == 1 ? "" : "s");
    const Node *loss = graph_node(g, g->loss);
    fprintf(out, "loss: %s\n", loss->name);
    /* activation bytes: every computed tensor, grouped by block instance in order */
    VEC(const char *) groups = {0};
    VEC(int64_t) bytes = {0};
    int64_t total = 0;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        if (op_table[n->op].flags & OPF_LEAF) continue;
        const char *grp = *n->group ? n->group : "(top level)";
        int k = groups.n - 1;
        while (k >= 0 && strcmp(groups.v[k], grp)) k--;
        if (k < 0) {
            VEC_PUSH(groups, grp);
            VEC_PUSH(bytes, 0);
            k = groups.n - 1;
        }
        bytes.v[k] += node_bytes(n);
        total += node_bytes(n);
    }
    fprintf(out, "activations: %" PRId64 " bytes (%s) if every tensor were kept\n", total,
            format_bytes(total, b1, sizeof b1));
    for (int k = 0; k < groups.n; k++)
        fprintf(out, "  %-24s %14" PRId64 "  %s\n", groups.v[k], bytes.v[k], format_bytes(bytes.v[k], b1, sizeof b1));
    VEC_FREE(groups);
    VEC_FREE(bytes);
}

/* mkdir -p: the output directory and any missing parents. */
static int make_dir(const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        fprintf(stderr, "acc: error: directory name too long: '%s'\n", dir);
        return EXIT_INPUT;
    }
    for (char *p = path + 1;; p++) {
        bool end = !*p;
        if (*p != '/' && !end) continue;
        *p = 0;
        if (mkdir(path, 0777) && errno != EEXIST) {
            fprintf(stderr, "acc: error: cannot create directory '%s': %s\n", path, strerror(errno));
            return EXIT_INPUT;
        }
        if (end) break;
        *p = '/';
    }
    return 0;
}

/* The graph every planning command works on: the model elaborated and
 * verified (fe_load_file), then the bias GEMMs fused into linear nodes
 * unless --no-fuse. Returns 0 or EXIT_INPUT. */
static int load_graph(const Options *o, Graph *g) {
    if (fe_load_file(o->file, o->defs.v, o->defs.n, g, stderr)) return EXIT_INPUT;
    if (!o->no_fuse) {
        FuseOptions fo = {o->save_globs.v, o->save_globs.n, o->recompute_globs.v, o->recompute_globs.n};
        fuse_linear(g, &fo);
    }
    return 0;
}

static int cmd_check(Options *o) {
    Graph g;
    graph_init(&g, "model");
    int rc = fe_load_file(o->file, o->defs.v, o->defs.n, &g, stderr) ? EXIT_INPUT : 0;
    if (!rc) print_summary(&g, stdout);
    graph_free(&g);
    return rc;
}

static int write_text(const char *path, void (*fn)(const void *, FILE *), const void *arg) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "acc: error: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_INPUT;
    }
    fn(arg, f);
    if (fclose(f)) {
        fprintf(stderr, "acc: error: cannot write '%s'\n", path);
        return EXIT_INPUT;
    }
    return 0;
}

static void ir_print_fn(const void *g, FILE *f) { ir_print(g, f); }

typedef struct {
    const Graph *g;
    const Autodiff *ad;
    const Schedule *s;
    const CgOptions *cg;
    FILE *h;
} EmitArgs;

/* Plan the step: the policy's decisions under the budget, then the schedule
 * and allocation code generation will use, checked by the plan checker. */
typedef struct {
    HwProfile hw;
    Autodiff ad;
    Plan plan;
    Schedule sched;
    PlanOptions po;
    ReportInfo info;
} Planned;

static int plan_graph(const Graph *g, const Options *o, Planned *pl) {
    char err[512], b1[32], b2[32];
    memset(pl, 0, sizeof *pl);
    /* the cost model of the machine the target runs on, unless --hw says */
    const char *hw = o->hw ? o->hw : o->target && cg_is_device_target(o->target) ? "h100-sxm" : "cpu";
    if (!hw_load(hw, &pl->hw, err, sizeof err)) {
        fprintf(stderr, "acc: error: %s\n", err);
        return EXIT_USAGE;
    }
    ad_build(g, &pl->ad);
    const char *target = o->target ? o->target : "cpu";
    /* a device target's GEMM workspace is part of the budget: the schedule
     * gets what is left */
    int64_t ws = cg_is_device_target(target) ? CG_DEVICE_WORKSPACE_BYTES : 0;
    int64_t sched_budget = !o->has_budget ? 0 : ws ? cg_device_schedule_budget(o->budget_bytes, ws) : o->budget_bytes;
    if (o->has_budget && sched_budget < 1) sched_budget = 1; /* infeasible: reported below with the minimum */
    pl->po = (PlanOptions){o->policy ? o->policy : "optimal", sched_budget, o->time_limit_s,
                           &pl->hw, true, o->save_globs.v, o->save_globs.n, o->recompute_globs.v,
                           o->recompute_globs.n};
    pl->info = (ReportInfo){pl->po.policy, pl->hw.name, target, o->has_budget ? o->budget_bytes : 0, 0, NULL};
    plan_make(g, &pl->ad, &pl->po, &pl->plan);
    sched_build(g, &pl->ad, pl->plan.dec, true, &pl->sched);
    alloc_assign(&pl->sched);
    /* what the device adds to the schedule's arena: alignment and workspace */
    if (ws) pl->info.workspace_bytes = cg_device_arena_bytes(pl->sched.arena_bytes, ws) - pl->sched.arena_bytes;
    if (!plan_check(&pl->sched, stderr)) acc_panic(__FILE__, __LINE__, "the schedule failed the plan check");
    if (pl->plan.status != PLAN_INFEASIBLE) return 0;
    /* the smallest peak the planner reaches, with its plan: the optimal
     * policy's plan is that plan already */
    Plan mp;
    Schedule ms;
    bool own = !pl->plan.min_peak_bytes;
    if (own) {
        plan_min_peak(g, &pl->ad, &pl->po, &mp);
        sched_build(g, &pl->ad, mp.dec, true, &ms);
        alloc_assign(&ms);
    }
    const Plan *m = own ? &mp : &pl->plan;
    int64_t min_sched = m->min_peak_bytes, min = ws ? cg_device_arena_bytes(min_sched, ws) : min_sched;
    if (o->budget_bytes < min && m->min_peak_exact) {
        fprintf(stderr,
                "acc: error: the budget of %" PRId64 " bytes (%s) is below the minimum of %" PRId64 " bytes (%s) "
                "for this model\nwhere the memory goes at that minimum:\n",
                o->budget_bytes, format_bytes(o->budget_bytes, b1, sizeof b1), min, format_bytes(min, b2, sizeof b2));
        report_breakdown(own ? &ms : &pl->sched, stderr);
    } else if (o->budget_bytes < min) {
        fprintf(stderr,
                "acc: error: no plan within the budget of %" PRId64 " bytes (%s) was found; the search for the "
                "minimum stopped after %g s (%s) at a smallest peak of %" PRId64 " bytes (%s): the minimum is at "
                "most that\nwhere the memory goes at that peak:\n",
                o->budget_bytes, format_bytes(o->budget_bytes, b1, sizeof b1),
                o->time_limit_s > 0 ? o->time_limit_s : (double)PLAN_MIN_PEAK_DEFAULT_S,
                o->time_limit_s > 0 ? "--time-limit" : "its limit without --time-limit", min,
                format_bytes(min, b2, sizeof b2));
        report_breakdown(own ? &ms : &pl->sched, stderr);
    } else {
        fprintf(stderr,
                "acc: error: policy '%s' needs %" PRId64 " bytes (%s), over the budget of %" PRId64 " bytes (%s)\n"
                "where the memory goes:\n",
                pl->po.policy, pl->sched.arena_bytes + pl->info.workspace_bytes,
                format_bytes(pl->sched.arena_bytes + pl->info.workspace_bytes, b1, sizeof b1),
                o->budget_bytes, format_bytes(o->budget_bytes, b2, sizeof b2));
        report_breakdown(&pl->sched, stderr);
        fprintf(stderr, "note: the minimum for this model is %s%" PRId64 " bytes (%s); --policy optimal finds the "
                        "cheapest plan that fits\n", m->min_peak_exact ? "" : "at most ", min,
                format_bytes(min, b1, sizeof b1));
    }
    if (own) sched_free(&ms), plan_free(&mp);
    return EXIT_INPUT;
}

static void planned_free(Planned *pl) {
    sched_free(&pl->sched);
    plan_free(&pl->plan);
    ad_free(&pl->ad);
}

typedef struct {
    const Graph *g;
    const Planned *pl;
} ReportArgs;

static void memory_svg_fn(const void *arg, FILE *f) {
    const ReportArgs *r = arg;
    memviz_svg(r->g, &r->pl->sched, r->pl->info.budget_bytes, r->pl->info.workspace_bytes, f);
}

static void snapshot_fn(const void *arg, FILE *f) {
    const ReportArgs *r = arg;
    memviz_snapshot(r->g, &r->pl->sched, f);
}

static void plan_json_fn(const void *arg, FILE *f) {
    const ReportArgs *r = arg;
    report_plan_json(r->g, &r->pl->ad, &r->pl->sched, &r->pl->plan, &r->pl->hw, &r->pl->info, f);
}

static void explain_fn(const void *arg, FILE *f) {
    const ReportArgs *r = arg;
    report_explain(r->g, &r->pl->ad, &r->pl->sched, &r->pl->plan, &r->pl->hw, &r->pl->info, f);
}

/* The pipeline from a graph to DIR/lib<model>.a, plan.json and report.txt. */
static int compile_graph(Graph *g, const Options *o, const char *dir, bool verbose) {
    Planned pl;
    int rc = plan_graph(g, o, &pl);
    char b1[32];
    if (!rc) rc = make_dir(dir);
    /* the cuda target's kernels: compiled by NVRTC before plan.json is
     * written, which records how */
    int n_images = 0;
    if (!rc && !strcmp(pl.info.target, "cuda")) {
        n_images = cg_cuda_images(g, dir, o->arch ? o->arch : "sm_80,sm_90", &pl.info.codegen_json, stderr);
        if (n_images < 0) rc = EXIT_INPUT;
    }
    if (!rc) {
        char c_path[4200], h_path[4200], json_path[4200], report_path[4200];
        snprintf(c_path, sizeof c_path, "%s/%s.c", dir, g->model);
        snprintf(h_path, sizeof h_path, "%s/%s.h", dir, g->model);
        snprintf(json_path, sizeof json_path, "%s/plan.json", dir);
        snprintf(report_path, sizeof report_path, "%s/report.txt", dir);
        ReportArgs ra = {g, &pl};
        rc = write_text(json_path, plan_json_fn, &ra);
        if (!rc) rc = write_text(report_path, explain_fn, &ra);
        snprintf(report_path, sizeof report_path, "%s/memory.svg", dir);
        if (!rc) rc = write_text(report_path, memory_svg_fn, &ra);
        snprintf(report_path, sizeof report_path, "%s/memory_snapshot.pickle", dir);
        if (!rc) rc = write_text(report_path, snapshot_fn, &ra);
        FILE *c = rc ? NULL : fopen(c_path, "w"), *h = rc ? NULL : fopen(h_path, "w");
        char summary[256];
        snprintf(summary, sizeof summary, "policy %s, %d tensors recomputed, recompute %.6g s (est.)", pl.po.policy,
                 pl.sched.n_recompute, pl.plan.recompute_time);
        CgOptions cg = {pl.info.target, o->has_budget ? o->budget_bytes : pl.sched.arena_bytes + pl.info.workspace_bytes,
                        summary, cg_is_device_target(pl.info.target) ? CG_DEVICE_WORKSPACE_BYTES : 0, o->tf32, n_images,
                        o->no_fuse};
        if (!rc && (!c || !h)) {
            fprintf(stderr, "acc: error: cannot write into '%s': %s\n", dir, strerror(errno));
            rc = EXIT_INPUT;
        } else if (!rc) {
            cg_emit_host(g, &pl.ad, &pl.sched, &cg, c, h);
        }
        if (c && fclose(c)) rc = EXIT_INPUT;
        if (h && fclose(h)) rc = EXIT_INPUT;
        if (!rc && cg_build_library(dir, g->model, pl.info.target, stderr)) rc = EXIT_INPUT;
        if (!rc && verbose) {
            double gap = pl.plan.recompute_time > 0 ? (pl.plan.recompute_time - pl.plan.bound) / pl.plan.recompute_time : 0;
            fprintf(stderr,
                    "acc: %s: policy %s: peak %" PRId64 " bytes (%s), %d tensors recomputed, +%.2f%% step time (est.), "
                    "solver %s, gap %.2f%%, %.3f s\n",
                    g->model, pl.po.policy, pl.sched.arena_bytes + pl.info.workspace_bytes,
                    format_bytes(pl.sched.arena_bytes + pl.info.workspace_bytes, b1, sizeof b1),
                    pl.sched.n_recompute, 100 * pl.plan.recompute_time / (pl.plan.fwd_time + pl.plan.bwd_time),
                    pl.plan.status == PLAN_OPTIMAL ? "optimal" : pl.plan.status == PLAN_POLICY ? "policy" : "heuristic",
                    100 * (gap < 0 ? 0 : gap), pl.plan.solve_s);
            fprintf(stderr, "acc: wrote %s/lib%s.a, %s/%s.h, %s/plan.json, %s/report.txt, %s/memory.svg, "
                            "%s/memory_snapshot.pickle (target %s)\n",
                    dir, g->model, dir, g->model, dir, dir, dir, dir, pl.info.target);
        }
    }
    planned_free(&pl);
    return rc;
}

static int cmd_explain(Options *o) {
    Graph g;
    graph_init(&g, "model");
    int rc = load_graph(o, &g);
    Planned pl;
    if (!rc) rc = plan_graph(&g, o, &pl);
    if (!rc) {
        report_explain(&g, &pl.ad, &pl.sched, &pl.plan, &pl.hw, &pl.info, stdout);
        /* every policy at the same budget, scored by the same simulator */
        static const char *const policies[] = {"none", "full", "every:2", "uniform:2", "selective", "ops:matmul,attention",
                                               "sqrt", "optimal"};
        printf("\n%-22s %14s %10s  %s\n", "policy", "peak bytes", "overhead", "fits");
        for (size_t k = 0; k < sizeof policies / sizeof *policies; k++) {
            PlanOptions po = pl.po;
            po.policy = policies[k];
            Plan p;
            plan_make(&g, &pl.ad, &po, &p);
            printf("%-22s %14" PRId64 " %9.2f%%  %s\n", policies[k], p.peak_bytes,
                   100 * p.recompute_time / (p.fwd_time + p.bwd_time),
                   p.status == PLAN_INFEASIBLE ? "no" : "yes");
            plan_free(&p);
        }
    }
    if (!rc) planned_free(&pl);
    graph_free(&g);
    return rc;
}

/* acc pareto: the optimal planner over a sweep of budgets from the smallest
 * feasible peak to save-all, and every policy, as (peak, overhead) points. */
static int cmd_pareto(Options *o) {
    Graph g;
    graph_init(&g, "model");
    int rc = load_graph(o, &g);
    o->has_budget = false;
    Planned pl;
    if (!rc) rc = plan_graph(&g, o, &pl);
    if (rc) {
        graph_free(&g);
        return rc;
    }
    static const char *const policies[] = {"none", "full", "every:2", "uniform:2", "selective", "ops:matmul,attention",
                                           "sqrt"};
    int n_pol = (int)(sizeof policies / sizeof *policies), n = o->points ? o->points : 12;
    MemvizPoint *pts = calloc((size_t)(n + n_pol), sizeof *pts);
    int k = 0;
    PlanOptions po = pl.po;
    po.policy = "none";
    po.budget_bytes = 0;
    Plan p;
    plan_make(&g, &pl.ad, &po, &p);
    int64_t none = p.peak_bytes;
    plan_free(&p);
    plan_min_peak(&g, &pl.ad, &pl.po, &p);
    int64_t min = p.min_peak_bytes;
    plan_free(&p);
    printf("%-22s %14s %14s %10s  %s\n", "plan", "budget", "peak bytes", "overhead", "status");
    for (int i = 0; pts && i < n + n_pol; i++) {
        po.policy = i < n ? "optimal" : policies[i - n];
        po.budget_bytes = i < n ? min + (none - min) * i / (n - 1) : 0;
        plan_make(&g, &pl.ad, &po, &p);
        double over = p.recompute_time / (p.fwd_time + p.bwd_time);
        printf("%-22s %14" PRId64 " %14" PRId64 " %9.2f%%  %s\n", po.policy, po.budget_bytes, p.peak_bytes, 100 * over,
               p.status == PLAN_INFEASIBLE ? "infeasible" : p.status == PLAN_OPTIMAL ? "optimal" : "ok");
        int same = -1; /* policies that give the same plan share one point */
        for (int j = 0; i >= n && j < k; j++)
            if (pts[j].label && pts[j].peak_bytes == p.peak_bytes && pts[j].overhead == over) same = j;
        if (same >= 0)
            pts[same].label = pool_printf(&g.pool, "%s, %s", pts[same].label, policies[i - n]);
        else if (p.status != PLAN_INFEASIBLE)
            pts[k++] = (MemvizPoint){p.peak_bytes, over, i < n ? NULL : policies[i - n]};
        plan_free(&p);
    }
    fflush(stdout);
    if (o->out_dir && pts) {
        FILE *f = fopen(o->out_dir, "w");
        if (!f || (memviz_pareto_svg(g.model, pts, k, f), fclose(f))) {
            fprintf(stderr, "acc: error: cannot write '%s': %s\n", o->out_dir, strerror(errno));
            rc = EXIT_INPUT;
        } else {
            fprintf(stderr, "acc: wrote %s\n", o->out_dir);
        }
    }
    free(pts);
    planned_free(&pl);
    graph_free(&g);
    return rc;
}

static int cmd_compile(Options *o) {
    if (!o->has_budget) return usage_error("compile needs --budget SIZE");
    if (!o->out_dir) return usage_error("compile needs -o DIR");
    char b1[32];
    fprintf(stderr, "acc: budget %" PRId64 " bytes (%s)\n", o->budget_bytes,
            format_bytes(o->budget_bytes, b1, sizeof b1));
#ifdef ACC_HAVE_NVRTC
    if (!o->target) o->target = "cuda";
#endif
    Graph g;
    graph_init(&g, "model");
    int rc = load_graph(o, &g);
    if (!rc && o->emit) {
        rc = make_dir(o->out_dir);
        char *path = pool_printf(&g.pool, "%s/%s.ir", o->out_dir, g.model);
        if (!rc) rc = write_text(path, ir_print_fn, &g);
        if (!rc) fprintf(stderr, "acc: wrote %s\n", path);
    } else if (!rc) {
        rc = compile_graph(&g, o, o->out_dir, true);
    }
    graph_free(&g);
    return rc;
}

static void remove_tree(const char *dir) {
    const char *argv[] = {"rm", "-rf", dir, NULL};
    cg_run(argv, stderr);
}

static int cmd_run(Options *o) {
    Graph g;
    graph_init(&g, "model");
    int rc = load_graph(o, &g);
    char dir[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/acc-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!rc && !mkdtemp(dir)) {
        fprintf(stderr, "acc: error: cannot create a temporary directory: %s\n", strerror(errno));
        rc = EXIT_INPUT;
    }
    bool made = !rc;
    if (!rc) rc = compile_graph(&g, o, dir, false);
    if (!rc) {
        char main_src[4200], inc_dir[4200], inc_rt[4200], def[256], lib[4200], rt[4200], exe[4200], dev_rt[4200];
        char blas_l[4200], blas_rpath[4200];
        snprintf(blas_l, sizeof blas_l, "-L%s", cg_blas_dir());
        snprintf(blas_rpath, sizeof blas_rpath, "-Wl,-rpath,%s", cg_blas_dir());
        snprintf(main_src, sizeof main_src, "%s/run_main.c", ACC_TOOLS_DIR);
        snprintf(inc_dir, sizeof inc_dir, "-I%s", dir);
        snprintf(inc_rt, sizeof inc_rt, "-I%s", cg_runtime_include());
        snprintf(def, sizeof def, "-DACC_MODEL_DESC=%s_desc", g.model);
        snprintf(lib, sizeof lib, "%s/lib%s.a", dir, g.model);
        snprintf(rt, sizeof rt, "%s/libaccrt.a", dir);
        const char *target = o->target ? o->target : "cpu";
        bool dev = cg_is_device_target(target);
        snprintf(dev_rt, sizeof dev_rt, "%s/libaccrt_%s.a", dir, !strcmp(target, "cuda") ? "cuda" : "emu");
        snprintf(exe, sizeof exe, "%s/run", dir);
        const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
        const char *link[20] = {cc, "-std=c11", "-O2", "-fopenmp", inc_dir, inc_rt, def, main_src, lib};
        int nl = 9;
        if (dev) link[nl++] = dev_rt;
        link[nl++] = rt, link[nl++] = blas_l, link[nl++] = blas_rpath, link[nl++] = "-lopenblas", link[nl++] = "-lm";
        if (!strcmp(target, "cuda")) link[nl++] = "-ldl";
        link[nl++] = "-o", link[nl++] = exe;
        if (*cg_gen_flags()) link[nl++] = cg_gen_flags();
        link[nl] = NULL;
        if (cg_run(link, stderr)) rc = EXIT_INPUT;
        if (!rc) {
            const char *argv[16] = {exe};
            int k = 1;
            if (o->steps) argv[k++] = "--steps", argv[k++] = o->steps;
            if (o->seed) argv[k++] = "--seed", argv[k++] = o->seed;
            if (o->lr) argv[k++] = "--lr", argv[k++] = o->lr;
            if (o->dump_grads) argv[k++] = "--dump-grads", argv[k++] = o->dump_grads;
            if (o->params) argv[k++] = "--params", argv[k++] = o->params;
            if (o->inputs) argv[k++] = "--inputs", argv[k++] = o->inputs;
            argv[k] = NULL;
            if (cg_run(argv, stderr)) rc = EXIT_INPUT;
        }
    }
    if (made && !o->keep) remove_tree(dir);
    if (made && o->keep) fprintf(stderr, "acc: kept %s\n", dir);
    graph_free(&g);
    return rc;
}

/* acc alloc: the static allocator on a MiniMalloc CSV instance. */
static int cmd_alloc(int argc, char **argv) {
    const char *file = NULL, *out = NULL;
    int64_t capacity = 0;
    double time_limit = 10;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--capacity") || !strcmp(a, "--time-limit") || !strcmp(a, "-o")) && i + 1 >= argc)
            return usage_error("%s needs a value", a);
        if (!strcmp(a, "--capacity")) {
            if (!parse_size(argv[++i], &capacity) || capacity <= 0)
                return usage_error("invalid size '%s' (examples: 1048576, 1M, 1.5GiB)", argv[i]);
        } else if (!strcmp(a, "--time-limit")) {
            char *end;
            time_limit = strtod(argv[++i], &end);
            if (!*argv[i] || *end || !(time_limit >= 0) || time_limit > 1e6)
                return usage_error("--time-limit needs seconds, got '%s'", argv[i]);
        } else if (!strcmp(a, "-o")) {
            out = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s' for alloc", a);
        } else if (file) {
            return usage_error("more than one input file ('%s')", a);
        } else {
            file = a;
        }
    }
    if (!file) return usage_error("alloc needs a CSV file (id,lower,upper,size)");
    char err[512];
    AllocInstance inst;
    if (!alloc_read_csv(file, &inst, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return EXIT_INPUT;
    }
    int64_t *off = malloc((size_t)(inst.n + 1) * sizeof(int64_t));
    AllocOptions ao = {capacity, alloc_work_for_time(time_limit), time_limit, 0};
    AllocResult r;
    int64_t arena = alloc_intervals_ex(inst.items, inst.n, off, &ao, &r);
    if (!off || !alloc_check(inst.items, inst.n, off, arena, err, sizeof err))
        acc_panic(__FILE__, __LINE__, "the allocation failed its check: %s", off ? err : "out of memory");
    double lb = r.lower_bound > 0 ? (double)r.lower_bound : 1;
    printf("buffers: %d\nmax_live: %" PRId64 "\n", inst.n, r.lower_bound);
    printf("greedy: %" PRId64 " (%.4fx max-live, order %s, %.3f s)\n", r.greedy_arena, (double)r.greedy_arena / lb,
           r.greedy_order, r.greedy_s);
    if (r.searched)
        printf("search: %" PRId64 " (%.4fx max-live, %d solve%s, %" PRId64 " nodes, %" PRId64 " work, %.3f s%s)\n",
               arena, (double)arena / lb, r.n_solves, r.n_solves == 1 ? "" : "s", r.nodes, r.work, r.search_s,
               r.time_out ? ", time limit" : "");
    printf("arena: %" PRId64 " (%.4fx max-live%s)\n", arena, (double)arena / lb, r.optimal ? ", optimal" : "");
    int rc = 0;
    if (capacity > 0) {
        printf("capacity: %" PRId64 " (%s, arena/capacity %.4f)\n", capacity, arena <= capacity ? "fits" : "does not fit",
               (double)arena / (double)capacity);
        rc = arena <= capacity ? 0 : EXIT_INPUT;
    }
    if (out) {
        FILE *f = fopen(out, "w");
        if (f) alloc_write_csv(&inst, off, f);
        if (!f || fclose(f)) {
            fprintf(stderr, "acc: error: cannot write '%s': %s\n", out, strerror(errno));
            rc = EXIT_INPUT;
        }
    }
    free(off);
    alloc_instance_free(&inst);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("acc %s (GLPK %s)\n", ACC_VERSION, glp_version());
        return 0;
    }
    if (!strcmp(cmd, "calibrate")) {
        const char *path = argc == 4 && !strcmp(argv[2], "-o") ? argv[3] : NULL;
        if (argc != 2 && !path) return usage_error("usage: acc calibrate [-o FILE.hw]");
        FILE *f = path ? fopen(path, "w") : stdout;
        if (!f) {
            fprintf(stderr, "acc: error: cannot write '%s': %s\n", path, strerror(errno));
            return EXIT_INPUT;
        }
        int rc = calibrate("cpu-local", f);
        if (path && fclose(f)) rc = EXIT_INPUT;
        return rc ? EXIT_INPUT : 0;
    }
    if (!strcmp(cmd, "diff")) {
        if (argc != 4) return usage_error("diff needs two plan files: acc diff A.json B.json");
        return plan_diff(argv[2], argv[3], stdout);
    }
    if (!strcmp(cmd, "alloc")) return cmd_alloc(argc - 2, argv + 2);
    if (!strcmp(cmd, "plan")) return acc_plan_main(argc - 2, argv + 2);
    Options o = {0};
    int rc = parse_options(argc - 2, argv + 2, &o);
    if (!rc) {
        if (!strcmp(cmd, "check")) rc = cmd_check(&o);
        else if (!strcmp(cmd, "compile")) rc = cmd_compile(&o);
        else if (!strcmp(cmd, "run")) rc = cmd_run(&o);
        else if (!strcmp(cmd, "explain")) rc = cmd_explain(&o);
        else if (!strcmp(cmd, "pareto")) rc = cmd_pareto(&o);
        else rc = usage_error("unknown command '%s'", cmd);
    }
    free_options(&o);
    return rc;
}
