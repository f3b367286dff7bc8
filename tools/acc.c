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
#include <unistd.h>
#include <time.h>

#include "calibrate.h"
#include "codegen.h"
#include "frontend.h"
#include "ir.h"
#include "passes.h"
#include "dag_cmd.h"
#include "plandiff.h"
#include "memviz.h"
#include "options.h"
#include "report.h"

/* ---- where the runtime, the profiles, run_main.c and calibrate_main.c are ----
 * An installed acc (cmake --install) finds them relative to its own
 * executable: BINDIR/ACC_REL_DATADIR/acc/{runtime,hw,models,run_main.c} and
 * BINDIR/ACC_REL_LIBDIR/libaccrt*.a, the relative paths fixed when acc was
 * configured. It says so to the passes and code generation through the
 * environment variables they already read (ACC_HW_DIR, ACC_RUNTIME_DIR,
 * ACC_RUNTIME_LIB, ...), which a user's own settings override. Outside an
 * install layout (the build tree) the build's defaults apply. */
#ifndef ACC_REL_DATADIR
#define ACC_REL_DATADIR "../share"
#endif
#ifndef ACC_REL_LIBDIR
#define ACC_REL_LIBDIR "../lib"
#endif

static char tools_dir[4200] = ACC_TOOLS_DIR;

static bool file_exists(const char *path) {
    struct stat st;
    return !stat(path, &st);
}

static void locate_install(void) {
    char exe[4096], data[4096 + 64], lib[4096 + 64], path[4096 + 128];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = 0;
    snprintf(data, sizeof data, "%s/%s/acc", exe, ACC_REL_DATADIR);
    snprintf(lib, sizeof lib, "%s/%s", exe, ACC_REL_LIBDIR);
    snprintf(path, sizeof path, "%s/hw/cpu.hw", data);
    if (!file_exists(path)) return; /* not installed: the build tree's defaults */
    snprintf(path, sizeof path, "%s/hw", data);
    setenv("ACC_HW_DIR", path, 0);
    snprintf(path, sizeof path, "%s/runtime", data);
    setenv("ACC_RUNTIME_DIR", path, 0);
    snprintf(path, sizeof path, "%s/libaccrt.a", lib);
    setenv("ACC_RUNTIME_LIB", path, 0);
    snprintf(path, sizeof path, "%s/libaccrt_emu.a", lib);
    setenv("ACC_RUNTIME_EMU_LIB", path, 0);
    snprintf(path, sizeof path, "%s/libaccrt_cuda.a", lib);
    if (file_exists(path)) setenv("ACC_RUNTIME_CUDA_LIB", path, 0);
    snprintf(tools_dir, sizeof tools_dir, "%s", data);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* -v: a line when a phase that may take long starts, and its time when it
 * ends (parse, plan, cuda, emit, cc, link, train) */
static void phase_start(const Options *o, const char *what, const char *detail) {
    if (o->verbose && detail) fprintf(stderr, "acc: %s: %s ...\n", what, detail);
}

static void phase_end(const Options *o, const char *what, double t0) {
    if (o->verbose) fprintf(stderr, "acc: %s: %.2f s\n", what, now_s() - t0);
}

/* fe_load_file with the parse phase timed */
static int load_model(const Options *o, Graph *g) {
    double t0 = now_s();
    int rc = fe_load_file(o->file, o->defs.v, o->defs.n, g, stderr) ? EXIT_INPUT : 0;
    if (!rc) phase_end(o, "parse", t0);
    return rc;
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
    /* group name -> index + 1, open addressing: linear in the nodes (a scan
     * of the groups per node was quadratic in a repeat's iterations) */
    size_t cap = 16;
    while (cap < 2 * (size_t)g->nodes.n) cap *= 2;
    int *slot = calloc(cap, sizeof *slot);
    if (!slot) acc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        if (op_table[n->op].flags & OPF_LEAF) continue;
        const char *grp = *n->group ? n->group : "(top level)";
        uint64_t h = 1469598103934665603u;
        for (const char *c = grp; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211u;
        size_t at = (size_t)h & (cap - 1);
        while (slot[at] && strcmp(groups.v[slot[at] - 1], grp)) at = (at + 1) & (cap - 1);
        if (!slot[at]) {
            VEC_PUSH(groups, grp);
            VEC_PUSH(bytes, 0);
            slot[at] = groups.n;
        }
        int k = slot[at] - 1;
        bytes.v[k] += node_bytes(n);
        total += node_bytes(n);
    }
    free(slot);
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
    int rc = load_model(o, g);
    if (!rc && !o->no_fuse) {
        FuseOptions fo = {o->save_globs.v, o->save_globs.n, o->recompute_globs.v, o->recompute_globs.n};
        fuse_linear(g, &fo);
    }
    return rc;
}

static int cmd_check(Options *o) {
    Graph g;
    graph_init(&g, "model");
    int rc = load_model(o, &g);
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
    if (!plan_check_patterns(g, o->save_globs.v, o->save_globs.n, o->recompute_globs.v, o->recompute_globs.n, err,
                             sizeof err)) {
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
    if (pl->plan.solver_error[0])
        fprintf(stderr, "acc: warning: %s; the search went on without that solve: the plan is checked, "
                        "but may cost more than the optimum\n", pl->plan.solver_error);
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
    memviz_svg(r->g, &r->pl->sched, r->pl->info.budget_bytes, r->pl->info.workspace_bytes, false, f);
}

static void memory_zoom_svg_fn(const void *arg, FILE *f) {
    const ReportArgs *r = arg;
    memviz_svg(r->g, &r->pl->sched, r->pl->info.budget_bytes, r->pl->info.workspace_bytes, true, f);
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
    char b1[32], detail[128];
    snprintf(detail, sizeof detail, "%d nodes, policy %s", g->nodes.n, o->policy ? o->policy : "optimal");
    phase_start(o, "plan", detail);
    double t0 = now_s();
    int rc = plan_graph(g, o, &pl);
    if (!rc) phase_end(o, "plan", t0);
    if (!rc) rc = make_dir(dir);
    /* the cuda target's kernels: compiled by NVRTC before plan.json is
     * written, which records how */
    int n_images = 0;
    if (!rc && !strcmp(pl.info.target, "cuda")) {
        phase_start(o, "nvrtc", "the cuda target's kernels");
        t0 = now_s();
        n_images = cg_cuda_images(g, dir, o->arch ? o->arch : "sm_80,sm_90", &pl.info.codegen_json, stderr);
        if (n_images < 0) rc = EXIT_INPUT;
        else phase_end(o, "nvrtc", t0);
    }
    if (!rc) {
        char c_path[4200], h_path[4200], json_path[4200], report_path[4200];
        snprintf(c_path, sizeof c_path, "%s/%s.c", dir, g->model);
        snprintf(h_path, sizeof h_path, "%s/%s.h", dir, g->model);
        snprintf(json_path, sizeof json_path, "%s/plan.json", dir);
        snprintf(report_path, sizeof report_path, "%s/report.txt", dir);
        ReportArgs ra = {g, &pl};
        t0 = now_s();
        rc = write_text(json_path, plan_json_fn, &ra);
        if (!rc) rc = write_text(report_path, explain_fn, &ra);
        snprintf(report_path, sizeof report_path, "%s/memory.svg", dir);
        if (!rc) rc = write_text(report_path, memory_svg_fn, &ra);
        snprintf(report_path, sizeof report_path, "%s/memory_activations.svg", dir);
        if (!rc) rc = write_text(report_path, memory_zoom_svg_fn, &ra);
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
        if (!rc) phase_end(o, "emit", t0);
        snprintf(detail, sizeof detail, "cc -O2 %s/%s.c (%d steps)", dir, g->model, pl.sched.steps.n);
        if (!rc) phase_start(o, "cc", detail);
        t0 = now_s();
        if (!rc && cg_build_library(dir, g->model, pl.info.target, stderr)) rc = EXIT_INPUT;
        if (!rc) phase_end(o, "cc", t0);
        if (!rc && verbose) {
            double gap = pl.plan.recompute_time > 0 ? (pl.plan.recompute_time - pl.plan.bound) / pl.plan.recompute_time : 0;
            fprintf(stderr,
                    "acc: %s: policy %s: peak %" PRId64 " bytes (%s), %d tensors recomputed, +%.2f%% step time (est.), "
                    "solver %s, gap %.2f%%, %.3f s\n",
                    g->model, pl.po.policy, pl.sched.arena_bytes + pl.info.workspace_bytes,
                    format_bytes(pl.sched.arena_bytes + pl.info.workspace_bytes, b1, sizeof b1),
                    pl.sched.n_recompute, 100 * pl.plan.recompute_time / (pl.plan.fwd_time + pl.plan.bwd_time),
                    plan_status_name(&pl.plan),
                    100 * (gap < 0 ? 0 : gap), pl.plan.solve_s);
            fprintf(stderr, "acc: wrote %s/lib%s.a, %s/%s.h, %s/plan.json, %s/report.txt, %s/memory.svg (and "
                            "memory_activations.svg), "
                            "%s/memory_snapshot.pickle (target %s)\n",
                    dir, g->model, dir, g->model, dir, dir, dir, dir, pl.info.target);
        }
    }
    planned_free(&pl);
    return rc;
}

/* compile's target when --target is not given: cuda where acc was built with
 * the CUDA Toolkit, else cpu; explain and pareto plan for the same target
 * (and so the same cost model) */
static void default_target(Options *o) {
#ifdef ACC_HAVE_NVRTC
    if (!o->target) o->target = "cuda";
#else
    if (!o->target) o->target = "cpu";
#endif
}

static int cmd_explain(Options *o) {
    double t0 = now_s(), last_s = 0;
    default_target(o);
    Graph g;
    graph_init(&g, "model");
    int rc = load_graph(o, &g);
    Planned pl;
    memset(&pl, 0, sizeof pl); /* freed on every path (an impossible budget fills it too) */
    if (!rc) rc = plan_graph(&g, o, &pl);
    if (!rc) {
        report_explain(&g, &pl.ad, &pl.sched, &pl.plan, &pl.hw, &pl.info, stdout);
        /* every policy at the same budget, scored by the same simulator */
        static const char *const policies[] = {"none", "full", "every:2", "uniform:2", "selective", "ops:matmul,attention",
                                               "sqrt", "optimal"};
        printf("\n%-22s %14s %10s  %s\n", "policy", "peak bytes", "overhead", "fits");
        int skipped = 0;
        for (size_t k = 0; k < sizeof policies / sizeof *policies; k++) {
            PlanOptions po = pl.po;
            po.policy = policies[k];
            Plan p;
            /* the plan above is this row's when the policies agree (the
             * optimal planner runs once within --time-limit) */
            bool same = !strcmp(policies[k], pl.po.policy);
            /* with --time-limit, a row that would end after it (as long as
             * the last row took) is not scored: on large models scoring one
             * policy's plan (schedule and allocation) takes a second */
            double ts = now_s();
            if (!same && o->time_limit_s > 0 && ts - t0 + last_s > o->time_limit_s) {
                printf("%-22s %14s %10s  %s\n", policies[k], "-", "-", "not scored (--time-limit)");
                skipped++;
                continue;
            }
            if (!same) plan_make(&g, &pl.ad, &po, &p), last_s = now_s() - ts;
            const Plan *q = same ? &pl.plan : &p;
            printf("%-22s %14" PRId64 " %9.2f%%  %s\n", policies[k], q->peak_bytes,
                   100 * q->recompute_time / (q->fwd_time + q->bwd_time),
                   q->status == PLAN_INFEASIBLE ? "no" : "yes");
            if (!same) plan_free(&p);
        }
        fflush(stdout);
        if (skipped)
            fprintf(stderr, "acc: note: --time-limit %g s: %d polic%s of the table not scored\n", o->time_limit_s,
                    skipped, skipped == 1 ? "y" : "ies");
    }
    planned_free(&pl);
    graph_free(&g);
    return rc;
}

/* pareto's --time-limit: false when the next optimal solve, as long as the
 * last, would end after it; else that solve's share of what is left. */
static bool pareto_share(PlanOptions *po, double t0, double limit, int *left, double *last_s) {
    if (limit <= 0) return true;
    double used = now_s() - t0;
    if (used + *last_s > limit) return false;
    po->time_limit_s = (limit - used) / (*left > 0 ? *left : 1);
    --*left;
    return true;
}

/* acc pareto: the optimal planner over a sweep of budgets from the smallest
 * feasible peak to save-all, and every policy, as (peak, overhead) points. */
static int cmd_pareto(Options *o) {
    default_target(o);
    Graph g;
    graph_init(&g, "model");
    int rc = load_graph(o, &g);
    o->has_budget = false;
    Planned pl;
    memset(&pl, 0, sizeof pl);
    if (!rc) rc = plan_graph(&g, o, &pl);
    if (rc) {
        planned_free(&pl);
        graph_free(&g);
        return rc;
    }
    static const char *const policies[] = {"none", "full", "every:2", "uniform:2", "selective", "ops:matmul,attention",
                                           "sqrt"};
    int n_pol = (int)(sizeof policies / sizeof *policies), n = o->points ? o->points : 12;
    MemvizPoint *pts = calloc((size_t)(n + 2 * n_pol), sizeof *pts);
    int k = 0;
    PlanOptions po = pl.po;
    po.policy = "none";
    po.budget_bytes = 0;
    /* --time-limit bounds the optimal solves together (the minimum, the
     * sweep, one at each policy's peak): each gets an equal share of what
     * is left, and none starts that the last one's time says would end late */
    double t0 = now_s(), limit = o->time_limit_s, last_s = 0;
    int left = n + n_pol + 1, skipped = 0;
    if (limit > 0) po.time_limit_s = limit / left;
    Plan p;
    plan_make(&g, &pl.ad, &po, &p);
    int64_t none = p.peak_bytes;
    plan_free(&p);
    PlanOptions mpo = pl.po;
    mpo.time_limit_s = po.time_limit_s;
    plan_min_peak(&g, &pl.ad, &mpo, &p);
    int64_t min = p.min_peak_bytes;
    plan_free(&p);
    last_s = now_s() - t0, left--;
    printf("%-22s %14s %14s %10s  %s\n", "plan", "budget", "peak bytes", "overhead", "status");
    for (int i = 0; pts && i < n + n_pol; i++) {
        po.policy = i < n ? "optimal" : policies[i - n];
        po.budget_bytes = i < n ? min + (none - min) * i / (n - 1) : 0;
        if (i < n && !pareto_share(&po, t0, limit, &left, &last_s)) {
            skipped++;
            continue;
        }
        double ts = now_s();
        plan_make(&g, &pl.ad, &po, &p);
        if (i < n) last_s = now_s() - ts;
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
    /* the optimal planner at each policy's peak too, so that the curve is
     * sampled wherever a policy could fall below it */
    int n_before = k;
    for (int j = 0; pts && j < n_before; j++) {
        if (!pts[j].label) continue;
        po.policy = "optimal";
        po.budget_bytes = pts[j].peak_bytes;
        if (!pareto_share(&po, t0, limit, &left, &last_s)) {
            skipped++;
            continue;
        }
        double ts = now_s();
        plan_make(&g, &pl.ad, &po, &p);
        last_s = now_s() - ts;
        double over = p.recompute_time / (p.fwd_time + p.bwd_time);
        const char *first = pts[j].label;
        size_t len = strcspn(first, ",");
        printf("optimal@%-14.*s %14" PRId64 " %14" PRId64 " %9.2f%%  %s\n", (int)(len < 14 ? len : 14), first,
               po.budget_bytes, p.peak_bytes, 100 * over,
               p.status == PLAN_INFEASIBLE ? "infeasible" : p.status == PLAN_OPTIMAL ? "optimal" : "ok");
        if (p.status != PLAN_INFEASIBLE) pts[k++] = (MemvizPoint){p.peak_bytes, over, NULL};
        plan_free(&p);
    }
    fflush(stdout);
    if (skipped)
        fprintf(stderr, "acc: note: --time-limit %g s: %d optimal plan%s of the sweep skipped\n", limit, skipped,
                skipped == 1 ? "" : "s");
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
    default_target(o);
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

/* Link DIR/<exe_name> from the tool program main_name (run_main.c,
 * calibrate_main.c) and the library compile_graph wrote into dir for g. */
static int link_program(const Options *o, const Graph *g, const char *dir, const char *main_name, char *exe,
                        size_t exe_len) {
    char main_src[4400], inc_dir[4200], inc_rt[4200], inc_dev[4200], def[256], lib[4200], rt[4200], dev_rt[4200];
    char blas_l[4200], blas_rpath[4200];
    snprintf(blas_l, sizeof blas_l, "-L%s", cg_blas_dir());
    snprintf(blas_rpath, sizeof blas_rpath, "-Wl,-rpath,%s", cg_blas_dir());
    snprintf(main_src, sizeof main_src, "%s/%s", tools_dir, main_name);
    snprintf(inc_dir, sizeof inc_dir, "-I%s", dir);
    snprintf(inc_rt, sizeof inc_rt, "-I%s", cg_runtime_include());
    snprintf(inc_dev, sizeof inc_dev, "-I%s/cuda", cg_runtime_include()); /* the device layer's headers */
    snprintf(def, sizeof def, "-DACC_MODEL_DESC=%s_desc", g->model);
    snprintf(lib, sizeof lib, "%s/lib%s.a", dir, g->model);
    snprintf(rt, sizeof rt, "%s/libaccrt.a", dir);
    const char *target = o->target ? o->target : "cpu";
    bool dev = cg_is_device_target(target);
    snprintf(dev_rt, sizeof dev_rt, "%s/libaccrt_%s.a", dir, !strcmp(target, "cuda") ? "cuda" : "emu");
    snprintf(exe, exe_len, "%s/%.*s", dir, (int)(strcspn(main_name, "_.")), main_name);
    const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    const char *link[24] = {cc, "-std=c11", "-O2", "-fopenmp", "-D_POSIX_C_SOURCE=200809L", inc_dir, inc_rt, inc_dev,
                            def, main_src, lib};
    int nl = 11;
    if (dev) link[nl++] = dev_rt;
    link[nl++] = rt, link[nl++] = blas_l, link[nl++] = blas_rpath, link[nl++] = "-lopenblas", link[nl++] = "-lm";
    if (!strcmp(target, "cuda")) link[nl++] = "-ldl";
    link[nl++] = "-o", link[nl++] = exe;
    if (*cg_gen_flags()) link[nl++] = cg_gen_flags();
    link[nl] = NULL;
    double t0 = now_s();
    phase_start(o, "link", main_name);
    if (cg_run(link, stderr)) return EXIT_INPUT;
    phase_end(o, "link", t0);
    return 0;
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
    char exe[4200];
    if (!rc) rc = link_program(o, &g, dir, "run_main.c", exe, sizeof exe);
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
        double t0 = now_s();
        if (cg_run(argv, stderr)) rc = EXIT_INPUT;
        else phase_end(o, "train", t0);
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
            if (!opt_seconds(argv[++i], true, &time_limit))
                return usage_error("--time-limit needs seconds, a number from 0 to 1e6, got '%s'", argv[i]);
        } else if (!strcmp(a, "-o")) {
            out = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return usage_error("acc alloc does not take '%s' (acc alloc --help lists its options)", a);
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

/* acc calibrate --target cuda|cuda-emu: a model of one GEMM compiled for
 * the target gives tools/calibrate_main.c the device and its kernels; that
 * program measures them and writes the profile (path, or standard output). */
static int calibrate_device(const char *target, bool tf32, const char *path) {
    char dir[4096], model[4200], exe[4200];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/acc-calibrate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "acc: error: cannot create a temporary directory: %s\n", strerror(errno));
        return EXIT_INPUT;
    }
    snprintf(model, sizeof model, "%s/calib.acdsl", dir);
    FILE *f = fopen(model, "w");
    int rc = !f || fputs("model calib;\ninput x: f32[4, 8];\nparam w: f32[8, 8] = normal(0.02);\n"
                         "loss mean(matmul(x, w));\n", f) < 0;
    if (f && fclose(f)) rc = 1;
    if (rc) fprintf(stderr, "acc: error: cannot write '%s'\n", model);
    Options o = {.cmd = "calibrate", .file = model, .target = target, .tf32 = tf32};
    Graph g;
    graph_init(&g, "model");
    if (!rc) rc = load_model(&o, &g);
    if (!rc) rc = compile_graph(&g, &o, dir, false);
    if (!rc) rc = link_program(&o, &g, dir, "calibrate_main.c", exe, sizeof exe);
    if (!rc) {
        const char *argv[] = {exe, strcmp(target, "cuda") ? "emu-local" : "gpu-local", path ? path : "-",
                              strcmp(target, "cuda") ? "--small" : tf32 ? "--tf32" : NULL, tf32 ? "--tf32" : NULL, NULL};
        if (cg_run(argv, stderr)) rc = EXIT_INPUT;
    }
    remove_tree(dir);
    graph_free(&g);
    return rc ? EXIT_INPUT : 0;
}

/* acc calibrate [--target T] [--tf32] [-o FILE.hw] */
static int cmd_calibrate(int argc, char **argv) {
    const char *path = NULL, *target = "cpu";
    bool tf32 = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc && !path) path = argv[++i];
        else if (!strcmp(argv[i], "-o")) return usage_error("-o needs a file (once)");
        else if (!strcmp(argv[i], "--target") && i + 1 < argc) target = argv[++i];
        else if (!strcmp(argv[i], "--tf32")) tf32 = true;
        else return usage_error("acc calibrate does not take '%s' (acc calibrate --help lists its options)", argv[i]);
    }
    if (strcmp(target, "cpu") && strcmp(target, "cuda") && strcmp(target, "cuda-emu"))
        return usage_error("unknown target '%s' (cpu, cuda or cuda-emu)", target);
    if (!strcmp(target, "cpu") && tf32) return usage_error("--tf32 measures a GPU: it needs --target cuda");
    if (strcmp(target, "cpu")) return calibrate_device(target, tf32, path);
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "acc: error: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_INPUT;
    }
    int rc = calibrate("cpu-local", f);
    if (path && fclose(f)) {
        fprintf(stderr, "acc: error: cannot write '%s': %s\n", path, strerror(errno));
        rc = EXIT_INPUT;
    }
    return rc ? EXIT_INPUT : 0;
}

static bool wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
    return false;
}

static int run_command(const char *cmd, int argc, char **argv) {
    if (strcmp(cmd, "plan") && wants_help(argc, argv)) {
        opt_print_command_help(cmd, stdout);
        return 0;
    }
    if (!strcmp(cmd, "calibrate")) return cmd_calibrate(argc, argv);
    if (!strcmp(cmd, "diff")) {
        if (argc != 2 || argv[0][0] == '-' || argv[1][0] == '-')
            return usage_error("diff needs two plan files: acc diff A.json B.json");
        return plan_diff(argv[0], argv[1], stdout);
    }
    if (!strcmp(cmd, "alloc")) return cmd_alloc(argc, argv);
    if (!strcmp(cmd, "plan")) return acc_plan_main(argc, argv);
    Options o = {0};
    int rc = opt_parse(cmd, argc, argv, &o);
    if (!rc) {
        if (!strcmp(cmd, "check")) rc = cmd_check(&o);
        else if (!strcmp(cmd, "compile")) rc = cmd_compile(&o);
        else if (!strcmp(cmd, "run")) rc = cmd_run(&o);
        else if (!strcmp(cmd, "explain")) rc = cmd_explain(&o);
        else rc = cmd_pareto(&o);
    }
    opt_free(&o);
    return rc;
}

int main(int argc, char **argv) {
    int rc;
    locate_install();
    const char *cmd = argc < 2 ? NULL : argv[1];
    if (!cmd) {
        opt_print_usage(stderr);
        return EXIT_USAGE;
    } else if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        if (argc > 2 && opt_is_command(argv[2])) opt_print_command_help(argv[2], stdout);
        else if (argc > 2) return usage_error("unknown command '%s'", argv[2]);
        else opt_print_usage(stdout);
        rc = 0;
    } else if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        const char *hw = getenv("ACC_HW_DIR");
        printf("acc %s (GLPK %s)\nruntime: %s\nruntime library: %s\nhardware profiles: %s\n", ACC_VERSION,
               glp_version(), cg_runtime_include(), cg_runtime_lib(), hw && *hw ? hw : ACC_HW_DIR);
        rc = 0;
    } else if (!opt_is_command(cmd)) {
        return usage_error(cmd[0] == '-' ? "'%s' is an option; a command comes first (check, compile, explain, pareto, "
                                           "run, calibrate, diff, alloc, plan)"
                                         : "unknown command '%s' (commands: check, compile, explain, pareto, run, "
                                           "calibrate, diff, alloc, plan)",
                           cmd);
    } else {
        rc = run_command(cmd, argc - 2, argv + 2);
    }
    /* output that could not be written is a failure, not a silent success */
    if (fflush(stdout) == EOF || ferror(stdout)) {
        fprintf(stderr, "acc: error: cannot write to standard output: %s\n", strerror(errno));
        if (!rc) rc = EXIT_INPUT;
    }
    return rc;
}
