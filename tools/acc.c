/* acc.c - the command-line driver: each command parses its options once
 * (options.c), runs acc_compile (pipeline.c) as far as it needs, and reports.
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
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "calibrate.h"
#include "codegen.h"
#include "frontend.h"
#include "ir.h"
#include "passes.h"
#include "dag_cmd.h"
#include "plandiff.h"
#include "memviz.h"
#include "options.h"
#include "pipeline.h"
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
static char python_dir[4200] = ACC_PYTHON_DIR; /* holds the package acc/ (python/ in the source tree) */

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
    snprintf(python_dir, sizeof python_dir, "%s/python", data);
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
        if (n->op == OP_INPUT)
            fprintf(out, "%s %s %s%s", n_input++ ? "," : "", n->name, dtype_name(n->dtype), shape_str(&n->shape, buf));
        else if (n->op == OP_PARAM) n_param++;
        else n_op++;
    }
    fprintf(out, "\nparameters: %" PRId64 " (%" PRId64 " bytes, %s)\n", graph_param_count(g), graph_param_bytes(g),
            format_bytes(graph_param_bytes(g), b1, sizeof b1));
    fprintf(out, "nodes: %d (%d parameter tensor%s, %d input%s, %d op%s)\n", g->nodes.n, n_param,
            n_param == 1 ? "" : "s", n_input, n_input == 1 ? "" : "s", n_op, n_op == 1 ? "" : "s");
    const Node *loss = graph_node(g, g->loss);
    fprintf(out, "loss: %s\n", loss->name);
    if (g->precision)
        fprintf(out, "precision: %s (the model's; --precision overrides it; the sizes below are before its casts)\n",
                g->precision);
    if (g->optimizer_state)
        fprintf(out, "optimizer state: %s (the model's; --optimizer-state overrides it)\n", g->optimizer_state);
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

static int cmd_check(Options *o) {
    Compilation c;
    int rc = acc_compile(o, ACC_UNTIL_ELABORATED, NULL, &c);
    if (!rc) print_summary(&c.g, stdout);
    acc_compilation_free(&c);
    return rc;
}

static void ir_print_fn(const void *g, FILE *f) { ir_print(g, f); }

static int cmd_explain(Options *o) {
    double t0 = acc_now_s(), last_s = 0;
    Compilation pl;
    int rc = acc_compile(o, ACC_UNTIL_PLAN, NULL, &pl);
    const Graph *g = &pl.g;
    if (!rc) {
        report_explain(g, &pl.ad, &pl.sched, &pl.plan, &pl.hw, &pl.info, stdout);
        /* every policy at the same budget, scored by the same simulator */
        static const char *const policies[] = {
            "none", "full", "every:2", "uniform:2", "selective", "ops:matmul,attention", "sqrt", "optimal"};
        printf("\n%-22s %14s %10s  %s\n", "policy", "peak bytes", "overhead", "fits");
        int skipped = 0;
        for (size_t k = 0; k < sizeof policies / sizeof *policies; k++) {
            PlanOptions po = pl.po;
            po.policy = plan_policy(policies[k]);
            Plan p;
            /* the plan above is this row's when the policies agree (the
             * optimal planner runs once within --time-limit) */
            bool same = !strcmp(policies[k], pl.po.policy.text);
            /* with --time-limit, a row that would end after it (as long as
             * the last row took) is not scored: on large models scoring one
             * policy's plan (schedule and allocation) takes a second */
            double ts = acc_now_s();
            if (!same && o->time_limit_s > 0 && ts - t0 + last_s > o->time_limit_s) {
                printf("%-22s %14s %10s  %s\n", policies[k], "-", "-", "not scored (--time-limit)");
                skipped++;
                continue;
            }
            if (!same) plan_make(g, &pl.ad, &po, &p), last_s = acc_now_s() - ts;
            const Plan *q = same ? &pl.plan : &p;
            printf("%-22s %14" PRId64 " %9.2f%%  %s\n", policies[k], q->peak_bytes,
                   100 * q->recompute_time / (q->fwd_time + q->bwd_time), q->status == PLAN_INFEASIBLE ? "no" : "yes");
            if (!same) plan_free(&p);
        }
        fflush(stdout);
        if (skipped)
            fprintf(stderr, "acc: note: --time-limit %g s: %d polic%s of the table not scored\n", o->time_limit_s,
                    skipped, skipped == 1 ? "y" : "ies");
    }
    acc_compilation_free(&pl);
    return rc;
}

/* pareto's --time-limit: false when the next optimal solve, as long as the
 * last, would end after it; else that solve's share of what is left. */
static bool pareto_share(PlanOptions *po, double t0, double limit, int *left, double *last_s) {
    if (limit <= 0) return true;
    double used = acc_now_s() - t0;
    if (used + *last_s > limit) return false;
    po->time_limit_s = (limit - used) / (*left > 0 ? *left : 1);
    --*left;
    return true;
}

/* acc pareto: the optimal planner over a sweep of budgets from the smallest
 * feasible peak to save-all, and every policy, as (peak, overhead) points. */
static int cmd_pareto(Options *o) {
    o->has_budget = false;
    Compilation pl;
    int rc = acc_compile(o, ACC_UNTIL_PLAN, NULL, &pl);
    Graph *g = &pl.g;
    if (rc) {
        acc_compilation_free(&pl);
        return rc;
    }
    static const char *const policies[] = {"none", "full", "every:2", "uniform:2", "selective", "ops:matmul,attention",
                                           "sqrt"};
    int n_pol = (int)(sizeof policies / sizeof *policies), n = o->points ? o->points : 12;
    MemvizPoint *pts = calloc((size_t)(n + 2 * n_pol), sizeof *pts);
    int k = 0;
    /* the sweep is over the schedule's arena, the plans' peaks: the target's
     * workspace is a constant beside it */
    PlanOptions po = pl.po;
    po.policy = plan_policy("none");
    po.budget_bytes = 0;
    po.workspace_bytes = 0;
    /* --time-limit bounds the optimal solves together (the minimum, the
     * sweep, one at each policy's peak): each gets an equal share of what
     * is left, and none starts that the last one's time says would end late */
    double t0 = acc_now_s(), limit = o->time_limit_s, last_s = 0;
    int left = n + n_pol + 1, skipped = 0;
    if (limit > 0) po.time_limit_s = limit / left;
    Plan p;
    plan_make(g, &pl.ad, &po, &p);
    int64_t none = p.peak_bytes;
    plan_free(&p);
    PlanOptions mpo = pl.po;
    mpo.time_limit_s = po.time_limit_s;
    plan_min_peak(g, &pl.ad, &mpo, &p);
    int64_t min = p.min_peak_bytes;
    plan_free(&p);
    last_s = acc_now_s() - t0, left--;
    printf("%-22s %14s %14s %10s  %s\n", "plan", "budget", "peak bytes", "overhead", "status");
    for (int i = 0; pts && i < n + n_pol; i++) {
        po.policy = plan_policy(i < n ? "optimal" : policies[i - n]);
        po.budget_bytes = i < n ? min + (none - min) * i / (n - 1) : 0;
        if (i < n && !pareto_share(&po, t0, limit, &left, &last_s)) {
            skipped++;
            continue;
        }
        double ts = acc_now_s();
        plan_make(g, &pl.ad, &po, &p);
        if (i < n) last_s = acc_now_s() - ts;
        double over = p.recompute_time / (p.fwd_time + p.bwd_time);
        printf("%-22s %14" PRId64 " %14" PRId64 " %9.2f%%  %s\n", po.policy.text, po.budget_bytes, p.peak_bytes,
               100 * over,
               p.status == PLAN_INFEASIBLE ? "infeasible"
               : p.status == PLAN_OPTIMAL  ? "optimal"
                                           : "ok");
        int same = -1; /* policies that give the same plan share one point */
        for (int j = 0; i >= n && j < k; j++)
            if (pts[j].label && pts[j].peak_bytes == p.peak_bytes && pts[j].overhead == over) same = j;
        if (same >= 0) pts[same].label = pool_printf(&g->pool, "%s, %s", pts[same].label, policies[i - n]);
        else if (p.status != PLAN_INFEASIBLE)
            pts[k++] = (MemvizPoint){p.peak_bytes, over, i < n ? NULL : policies[i - n]};
        plan_free(&p);
    }
    /* the optimal planner at each policy's peak too, so that the curve is
     * sampled wherever a policy could fall below it */
    int n_before = k;
    for (int j = 0; pts && j < n_before; j++) {
        if (!pts[j].label) continue;
        po.policy = plan_policy("optimal");
        po.budget_bytes = pts[j].peak_bytes;
        if (!pareto_share(&po, t0, limit, &left, &last_s)) {
            skipped++;
            continue;
        }
        double ts = acc_now_s();
        plan_make(g, &pl.ad, &po, &p);
        last_s = acc_now_s() - ts;
        double over = p.recompute_time / (p.fwd_time + p.bwd_time);
        const char *first = pts[j].label;
        size_t len = strcspn(first, ",");
        printf("optimal@%-14.*s %14" PRId64 " %14" PRId64 " %9.2f%%  %s\n", (int)(len < 14 ? len : 14), first,
               po.budget_bytes, p.peak_bytes, 100 * over,
               p.status == PLAN_INFEASIBLE ? "infeasible"
               : p.status == PLAN_OPTIMAL  ? "optimal"
                                           : "ok");
        if (p.status != PLAN_INFEASIBLE) pts[k++] = (MemvizPoint){p.peak_bytes, over, NULL};
        plan_free(&p);
    }
    fflush(stdout);
    if (skipped)
        fprintf(stderr, "acc: note: --time-limit %g s: %d optimal plan%s of the sweep skipped\n", limit, skipped,
                skipped == 1 ? "" : "s");
    if (o->out_dir && pts) {
        FILE *f = fopen(o->out_dir, "w");
        if (!f || (memviz_pareto_svg(g->model, pts, k, f), fclose(f))) {
            fprintf(stderr, "acc: error: cannot write '%s': %s\n", o->out_dir, strerror(errno));
            rc = EXIT_INPUT;
        } else {
            fprintf(stderr, "acc: wrote %s\n", o->out_dir);
        }
    }
    free(pts);
    acc_compilation_free(&pl);
    return rc;
}

/* What acc compile made: the plan's figures and the files. */
static void print_compiled(const Compilation *c, const char *dir, bool shared) {
    char b1[32];
    const Graph *g = &c->g;
    const Plan *p = &c->plan;
    double gap = p->recompute_time > 0 ? (p->recompute_time - p->bound) / p->recompute_time : 0;
    fprintf(stderr,
            "acc: %s: policy %s: peak %" PRId64 " bytes (%s), %d tensors recomputed, +%.2f%% step time (est.), "
            "solver %s, gap %.2f%%, %.3f s\n",
            g->model, c->po.policy.text, c->mem.total_bytes, format_bytes(c->mem.total_bytes, b1, sizeof b1),
            c->sched.n_recompute, 100 * p->recompute_time / (p->fwd_time + p->bwd_time), plan_status_name(p),
            100 * (gap < 0 ? 0 : gap), p->solve_s);
    if (c->micro_batches > 1) /* the other levers, when used */
        fprintf(stderr, "acc: %s: %d micro-batches of %" PRId64 " rows\n", g->model, c->micro_batches,
                c->micro.batch / c->micro_batches);
    if (c->sched.n_offload)
        fprintf(stderr, "acc: %s: %d tensors offloaded to %s of host memory\n", g->model, c->sched.n_offload,
                format_bytes(c->sched.host_bytes, b1, sizeof b1));
    fprintf(stderr,
            "acc: wrote %s/lib%s.a, %s%s%s%s%s/%s.h, %s/plan.json, %s/report.txt, %s/memory.svg (and "
            "memory_activations.svg), "
            "%s/memory_snapshot.pickle (target %s)\n",
            dir, g->model, shared ? dir : "", shared ? "/lib" : "", shared ? g->model : "", shared ? ".so, " : "", dir,
            g->model, dir, dir, dir, dir, c->info.target);
}

static int cmd_compile(Options *o) {
    if (!o->has_budget) return usage_error("compile needs --budget SIZE");
    if (!o->out_dir) return usage_error("compile needs -o DIR");
    char b1[32];
    fprintf(stderr, "acc: budget %" PRId64 " bytes (%s)\n", o->budget_bytes,
            format_bytes(o->budget_bytes, b1, sizeof b1));
    Compilation c;
    int rc;
    if (o->emit) {
        rc = acc_compile(o, ACC_UNTIL_GRAPH, NULL, &c);
        if (!rc) rc = acc_make_dir(o->out_dir);
        char *path = rc ? NULL : pool_printf(&c.g.pool, "%s/%s.ir", o->out_dir, c.g.model);
        if (!rc) rc = acc_write_text(path, ir_print_fn, &c.g);
        if (!rc) fprintf(stderr, "acc: wrote %s\n", path);
    } else {
        rc = acc_compile(o, ACC_UNTIL_LIBRARY, o->out_dir, &c);
        if (!rc) print_compiled(&c, o->out_dir, o->shared);
    }
    acc_compilation_free(&c);
    return rc;
}

static void remove_tree(const char *dir) {
    const char *argv[] = {"rm", "-rf", dir, NULL};
    cg_run(argv, stderr);
}

/* Link DIR/<exe_name> from the tool program main_name (run_main.c,
 * calibrate_main.c) and the library acc_compile wrote into dir for g. */
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
    const CgTarget *tg = o->target;
    snprintf(dev_rt, sizeof dev_rt, "%s/%s", dir, tg->device_archive ? tg->device_archive : "");
    snprintf(exe, exe_len, "%s/%.*s", dir, (int)(strcspn(main_name, "_.")), main_name);
    /* data parallel: the program runs under mpirun, with libaccrt_mpi */
    bool mpi = o->ranks > 1;
    const char *cc = mpi                             ? (getenv("MPICC") && *getenv("MPICC") ? getenv("MPICC") : "mpicc")
                     : getenv("CC") && *getenv("CC") ? getenv("CC")
                                                     : "cc";
    char mpi_rt[4200];
    snprintf(mpi_rt, sizeof mpi_rt, "%s/libaccrt_mpi.a", dir);
    const char *link[36] = {cc,      "-std=c11", "-O2",    "-fopenmp", "-D_POSIX_C_SOURCE=200809L", inc_dir, inc_rt,
                            inc_dev, def,        main_src, lib};
    int nl = 11;
    if (mpi) link[nl++] = "-DACC_MPI", link[nl++] = mpi_rt;
    if (tg->device_archive) link[nl++] = dev_rt;
    link[nl++] = rt, link[nl++] = blas_l, link[nl++] = blas_rpath;
    /* the target's libraries, word by word */
    char libs[256];
    snprintf(libs, sizeof libs, "%s", tg->libs);
    for (char *w = strtok(libs, " "); w && nl < 30; w = strtok(NULL, " ")) link[nl++] = w;
    link[nl++] = "-o", link[nl++] = exe;
    if (*cg_gen_flags()) link[nl++] = cg_gen_flags();
    link[nl] = NULL;
    double t0 = acc_now_s();
    acc_phase_start(o, "link", main_name);
    if (cg_run(link, stderr)) return EXIT_INPUT;
    acc_phase_end(o, "link", t0);
    return 0;
}

static int cmd_run(Options *o) {
    char dir[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/acc-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "acc: error: cannot create a temporary directory: %s\n", strerror(errno));
        return EXIT_INPUT;
    }
    Compilation c;
    int rc = acc_compile(o, ACC_UNTIL_LIBRARY, dir, &c);
    bool made = c.parsed; /* a model the front end refused leaves nothing to keep */
    if (!made) remove_tree(dir);
    char exe[4200];
    if (!rc) rc = link_program(o, &c.g, dir, "run_main.c", exe, sizeof exe);
    if (!rc) {
        /* data parallel: R processes of the program under Open MPI's mpirun
         * (as root it must be told so; more ranks than cores are allowed) */
        const char *argv[32];
        char np[16];
        int k = 0;
        if (o->ranks > 1) {
            snprintf(np, sizeof np, "%d", o->ranks);
            argv[k++] = getenv("MPIRUN") && *getenv("MPIRUN") ? getenv("MPIRUN") : "mpirun";
            argv[k++] = "-np", argv[k++] = np, argv[k++] = "--oversubscribe";
            if (geteuid() == 0) argv[k++] = "--allow-run-as-root";
        }
        argv[k++] = exe;
        if (o->steps) argv[k++] = "--steps", argv[k++] = o->steps;
        if (o->seed) argv[k++] = "--seed", argv[k++] = o->seed;
        if (o->lr) argv[k++] = "--lr", argv[k++] = o->lr;
        if (o->dump_grads) argv[k++] = "--dump-grads", argv[k++] = o->dump_grads;
        if (o->dump_params) argv[k++] = "--dump-params", argv[k++] = o->dump_params;
        if (o->params) argv[k++] = "--params", argv[k++] = o->params;
        if (o->inputs) argv[k++] = "--inputs", argv[k++] = o->inputs;
        argv[k] = NULL;
        double t0 = acc_now_s();
        if (cg_run(argv, stderr)) rc = EXIT_INPUT;
        else acc_phase_end(o, "train", t0);
    }
    if (made && !o->keep) remove_tree(dir);
    if (made && o->keep) fprintf(stderr, "acc: kept %s\n", dir);
    acc_compilation_free(&c);
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
        printf("capacity: %" PRId64 " (%s, arena/capacity %.4f)\n", capacity,
               arena <= capacity ? "fits" : "does not fit", (double)arena / (double)capacity);
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
static int calibrate_device(const CgTarget *target, bool tf32, const char *path) {
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
                         "loss mean(matmul(x, w));\n",
                         f) < 0;
    if (f && fclose(f)) rc = 1;
    if (rc) fprintf(stderr, "acc: error: cannot write '%s'\n", model);
    Options o = {.cmd = "calibrate", .file = model, .target = target, .tf32 = tf32, .policy = plan_policy("optimal")};
    Compilation c;
    memset(&c, 0, sizeof c); /* freed on every path */
    if (!rc) rc = acc_compile(&o, ACC_UNTIL_LIBRARY, dir, &c);
    if (!rc) rc = link_program(&o, &c.g, dir, "calibrate_main.c", exe, sizeof exe);
    if (!rc) {
        /* the emulator measures a small problem: a check, not a measurement */
        const char *argv[] = {exe,
                              target->calibrate,
                              path ? path : "-",
                              target->emulated ? "--small"
                              : tf32           ? "--tf32"
                                               : NULL,
                              tf32 ? "--tf32" : NULL,
                              NULL};
        if (cg_run(argv, stderr)) rc = EXIT_INPUT;
    }
    remove_tree(dir);
    acc_compilation_free(&c);
    return rc ? EXIT_INPUT : 0;
}

/* acc calibrate [--target T] [--tf32] [-o FILE.hw] */
static int cmd_calibrate(int argc, char **argv) {
    const char *path = NULL, *name = NULL;
    bool tf32 = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc && !path) path = argv[++i];
        else if (!strcmp(argv[i], "-o")) return usage_error("-o needs a file (once)");
        else if (!strcmp(argv[i], "--target") && i + 1 < argc) name = argv[++i];
        else if (!strcmp(argv[i], "--tf32")) tf32 = true;
        else return usage_error("acc calibrate does not take '%s' (acc calibrate --help lists its options)", argv[i]);
    }
    const CgTarget *target = name ? cg_target_find(name) : cg_target_default(true);
    if (!target) return usage_error("unknown target '%s' (cpu, cuda or cuda-emu)", name);
    if (!target->device && tf32) return usage_error("--tf32 measures a GPU: it needs --target cuda");
    if (target->device) return calibrate_device(target, tf32, path);
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "acc: error: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_INPUT;
    }
    int rc = calibrate(target->calibrate, f);
    if (path && fclose(f)) {
        fprintf(stderr, "acc: error: cannot write '%s': %s\n", path, strerror(errno));
        rc = EXIT_INPUT;
    }
    return rc ? EXIT_INPUT : 0;
}

/* acc import ARGS...: python3 -m acc import ARGS... with the acc package
 * (python_dir, or ACC_PYTHON_DIR) first on PYTHONPATH; the Python side parses
 * the arguments, says when PyTorch is missing, and its exit status is ours. */
static int cmd_import(int argc, char **argv) {
    const char *env = getenv("ACC_PYTHON_DIR");
    const char *dir = env && *env ? env : python_dir;
    char pkg[4300];
    snprintf(pkg, sizeof pkg, "%s/acc/torch_import.py", dir);
    if (!file_exists(pkg)) {
        fprintf(stderr,
                "acc: error: acc import: the Python package is missing (%s; set ACC_PYTHON_DIR to the "
                "directory holding acc/)\n",
                pkg);
        return EXIT_INPUT;
    }
    const char *old = getenv("PYTHONPATH");
    size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
    char *path = malloc(n);
    if (!path) return EXIT_INPUT;
    snprintf(path, n, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    setenv("PYTHONPATH", path, 1);
    free(path);
    const char **args = calloc((size_t)argc + 5, sizeof *args);
    if (!args) return EXIT_INPUT;
    args[0] = "python3", args[1] = "-m", args[2] = "acc", args[3] = "import";
    for (int i = 0; i < argc; i++) args[4 + i] = argv[i];
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "acc: error: cannot start python3: %s\n", strerror(errno));
        free(args);
        return EXIT_INPUT;
    }
    if (pid == 0) {
        execvp(args[0], (char *const *)(uintptr_t)args); /* execvp does not modify argv */
        fprintf(stderr,
                "acc: error: acc import needs python3 (%s); install Python 3 and PyTorch "
                "(python3 -m pip install torch)\n",
                strerror(errno));
        _exit(EXIT_INPUT);
    }
    free(args);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return EXIT_INPUT;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    fprintf(stderr, "acc: error: python3 was killed by signal %d\n", WTERMSIG(status));
    return EXIT_INPUT;
}

static bool wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
    return false;
}

static int run_command(const char *cmd, int argc, char **argv) {
    if (!strcmp(cmd, "import")) return cmd_import(argc, argv); /* its options are Python's */
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
                                           "run, calibrate, diff, alloc, plan, import)"
                                         : "unknown command '%s' (commands: check, compile, explain, pareto, run, "
                                           "calibrate, diff, alloc, plan, import)",
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
