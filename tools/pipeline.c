/* pipeline.c - acc_compile: the compiler's passes in order, QBE-style.
 *
 *   parse      .acdsl text -> AST; elaborate: blocks instantiated, repeats
 *              unrolled, shapes inferred, the graph verified (frontend/)
 *   fuse       bias GEMMs -> linear nodes (not with --no-fuse)
 *   precision  bf16 activations: casts inserted (--precision bf16)
 *   constrain  the target's cost model; --save/--recompute checked honest
 *   autodiff   which nodes get gradients, what each backward reads
 *   plan       SAVE/RECOMPUTE per node within the budget (the planner
 *              reserves the target's workspace in it)
 *   schedule   forward, then backward with the recomputations inserted
 *   alloc      one arena, every buffer at a fixed offset; the step's memory
 *   check      an independent simulation of the schedule
 *   images     nvrtc targets: the kernels compiled to CUBIN and PTX
 *   report     plan.json, report.txt and the memory pictures
 *   emit       the host schedule and descriptor (<model>.c), the header
 *   build      cc and ar: lib<model>.a beside the runtime's archives (and
 *              with --shared lib<model>.so, everything in one)
 *
 * Each command stops where it needs to (AccUntil). Nothing here decides a
 * plan or emits code: it only calls the passes and reports their failures.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend.h"
#include "memviz.h"
#include "pipeline.h"

void acc_phase_start(const Options *o, const char *what, const char *detail) {
    if (o->verbose && detail) fprintf(stderr, "acc: %s: %s ...\n", what, detail);
}

void acc_phase_end(const Options *o, const char *what, double t0) {
    if (o->verbose) fprintf(stderr, "acc: %s: %.2f s\n", what, acc_now_s() - t0);
}

int acc_make_dir(const char *dir) {
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

int acc_write_text(const char *path, void (*fn)(const void *, FILE *), const void *arg) {
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

/* ---- the passes' failures ---- */

/* The buffer that dominates the peak of s: the largest one live at the
 * peak step that is not held throughout (NULL: none). */
static const Buffer *peak_buffer(const Schedule *s) {
    const Buffer *best = NULL;
    int t = s->peak_step;
    for (int i = 0; i < s->bufs.n; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (b->persistent || b->host || b->first > t || b->last < t || (best && b->size_bytes <= best->size_bytes))
            continue;
        best = b;
    }
    return best;
}

/* The budget is too small for the plan: the error at the DSL line of the
 * tensor that dominates the peak, with where the memory goes at the
 * smallest peak the planner reaches (or at the policy's plan). */
static int report_refusal(const Options *o, Compilation *c) {
    char b1[32], b2[32];
    const Graph *g = &c->g;
    Diag d = diag_for_graph(g, stderr);
    /* the smallest peak the planner reaches, with its plan: the optimal
     * policy's plan is that plan already */
    Plan mp;
    Schedule ms;
    bool own = !c->plan.min_peak_bytes;
    if (own) {
        plan_min_peak(g, &c->ad, &c->po, &mp);
        SchedOptions so = {c->po.optimizer, NULL, NULL, c->po.dp};
        sched_build(g, &c->ad, mp.dec, &so, &ms);
        alloc_assign(&ms);
    }
    const Plan *m = own ? &mp : &c->plan;
    int64_t min = plan_step_memory(&c->po, m->min_peak_bytes).total_bytes;
    const Schedule *shown = o->budget_bytes < min && own ? &ms : &c->sched; /* the plan whose memory is shown */
    const Step *pk = &shown->steps.v[shown->peak_step];
    const Buffer *big = peak_buffer(shown);
    const Node *x = graph_node(g, big ? big->node : pk->node); /* the error is at its DSL line */
    if (o->budget_bytes < min && m->min_peak_exact) {
        diag_error(&d, x->loc, "the budget of %" PRId64 " bytes (%s) is below the minimum of %" PRId64 " bytes (%s) %s",
                   o->budget_bytes, format_bytes(o->budget_bytes, b1, sizeof b1), min, format_bytes(min, b2, sizeof b2),
                   m->min_peak_proven ? "for this model"
                                      : "that the planner's search reaches for this model; it is the best found, "
                                        "not a proven minimum");
        fprintf(stderr, "where the memory goes at that minimum:\n");
    } else if (o->budget_bytes < min) {
        diag_error(&d, x->loc,
                   "no plan within the budget of %" PRId64 " bytes (%s) was found; the search for the minimum "
                   "stopped after %g s (%s) at a smallest peak of %" PRId64 " bytes (%s): the minimum is at most that",
                   o->budget_bytes, format_bytes(o->budget_bytes, b1, sizeof b1),
                   o->time_limit_s > 0 ? o->time_limit_s : (double)PLAN_MIN_PEAK_DEFAULT_S,
                   o->time_limit_s > 0 ? "--time-limit" : "its limit without --time-limit", min,
                   format_bytes(min, b2, sizeof b2));
        fprintf(stderr, "where the memory goes at that peak:\n");
    } else {
        diag_error(&d, x->loc, "policy '%s' needs %" PRId64 " bytes (%s), over the budget of %" PRId64 " bytes (%s)",
                   c->po.policy.text, c->mem.total_bytes, format_bytes(c->mem.total_bytes, b1, sizeof b1),
                   o->budget_bytes, format_bytes(o->budget_bytes, b2, sizeof b2));
        fprintf(stderr, "where the memory goes:\n");
    }
    report_breakdown(shown, stderr);
    StepMemory sm = plan_step_memory(&c->po, shown->arena_bytes);
    report_step_rows(&sm, o->target->name, stderr);
    const char *const *kind = sched_step_kinds;
    fprintf(stderr, "note: the peak is at step %d (%s of '%s')", shown->peak_step, kind[pk->kind],
            graph_node(g, pk->node)->name);
    if (big)
        fprintf(stderr, "; its largest buffer is %s'%s' (%" PRId64 " bytes)",
                big->kind == BUF_GRAD ? "the gradient of " : "", x->name, big->size_bytes);
    fputc('\n', stderr);
    if (!(o->budget_bytes < min)) {
        fprintf(stderr,
                "note: the minimum for this model is %s%" PRId64 " bytes (%s%s); --policy optimal finds the "
                "cheapest plan that fits\n",
                m->min_peak_exact ? "" : "at most ", min, format_bytes(min, b1, sizeof b1),
                m->min_peak_exact && !m->min_peak_proven ? ", the best the planner's search found, not a proven minimum"
                                                         : "");
    }
    if (own) sched_free(&ms), plan_free(&mp);
    return EXIT_INPUT;
}

/* ---- the reports and the library ---- */

static void plan_json_fn(const void *arg, FILE *f) {
    const Compilation *c = arg;
    report_plan_json(&c->g, &c->ad, &c->sched, &c->plan, &c->hw, &c->info, f);
}

static void explain_fn(const void *arg, FILE *f) {
    const Compilation *c = arg;
    report_explain(&c->g, &c->ad, &c->sched, &c->plan, &c->hw, &c->info, f);
}

static void memory_svg_fn(const void *arg, FILE *f) {
    const Compilation *c = arg;
    memviz_svg(&c->g, &c->sched, c->info.budget_bytes, &c->mem, false, f);
}

static void memory_zoom_svg_fn(const void *arg, FILE *f) {
    const Compilation *c = arg;
    memviz_svg(&c->g, &c->sched, c->info.budget_bytes, &c->mem, true, f);
}

static void snapshot_fn(const void *arg, FILE *f) {
    const Compilation *c = arg;
    memviz_snapshot(&c->g, &c->sched, f);
}

/* plan.json, report.txt and the memory pictures into dir. */
static int write_reports(const Compilation *c, const char *dir) {
    static const struct {
        const char *name;
        void (*fn)(const void *, FILE *);
    } files[] = {{"plan.json", plan_json_fn},
                 {"report.txt", explain_fn},
                 {"memory.svg", memory_svg_fn},
                 {"memory_activations.svg", memory_zoom_svg_fn},
                 {"memory_snapshot.pickle", snapshot_fn}};
    char path[4200];
    int rc = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files && !rc; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        rc = acc_write_text(path, files[i].fn, c);
    }
    return rc;
}

/* dir/<model>.c and dir/<model>.h from the checked schedule. */
static int emit_host(const Options *o, const Compilation *c, const char *dir) {
    const Graph *g = &c->g;
    char c_path[4200], h_path[4200], summary[256];
    snprintf(c_path, sizeof c_path, "%s/%s.c", dir, g->model);
    snprintf(h_path, sizeof h_path, "%s/%s.h", dir, g->model);
    FILE *cf = fopen(c_path, "w"), *hf = fopen(h_path, "w");
    snprintf(summary, sizeof summary, "policy %s, %d tensors recomputed, recompute %.6g s (est.)", c->po.policy.text,
             c->sched.n_recompute, c->plan.recompute_time);
    /* no budget: the planned peak is the library's budget */
    /* micro-batches: each sliced input's whole batch at its place in the staging */
    int64_t *stage = NULL;
    if (c->stage_rel) {
        stage = acc_xrealloc(NULL, (size_t)g->nodes.n * sizeof *stage);
        for (int i = 0; i < g->nodes.n; i++)
            stage[i] = c->stage_rel[i] < 0 ? -1 : c->mem.staging_offset + c->stage_rel[i];
    }
    CgOptions cg = {o->target,
                    o->has_budget ? o->budget_bytes : c->mem.total_bytes,
                    c->mem,
                    summary,
                    !strcmp(c->precision, "tf32"),
                    c->n_images,
                    o->no_fuse,
                    c->micro_batches,
                    c->loss_scale,
                    stage,
                    &c->dp,
                    c->rank_scale};
    int rc = 0;
    if (!cf || !hf) {
        fprintf(stderr, "acc: error: cannot write into '%s': %s\n", dir, strerror(errno));
        rc = EXIT_INPUT;
    } else {
        cg_emit_host(g, &c->ad, &c->sched, &cg, cf, hf);
    }
    if (cf && fclose(cf)) rc = EXIT_INPUT;
    if (hf && fclose(hf)) rc = EXIT_INPUT;
    free(stage);
    return rc;
}

/* ---- micro-batches ---- */

/* A compilation of B/n rows whose step runs n micro-batches of the whole
 * batch (full: the model elaborated at B). */
typedef struct {
    const Graph *full;
    int n;
} MicroSplit;

/* o's hyperparameters with B = b last (the last definition wins); malloc'ed,
 * its value in a static buffer of the caller's thread (one at a time). */
static Define *with_batch(const Options *o, int64_t b) {
    static char value[32];
    snprintf(value, sizeof value, "%" PRId64, b);
    Define *d = acc_xrealloc(NULL, (size_t)(o->defs.n + 1) * sizeof *d);
    if (o->defs.n) memcpy(d, o->defs.v, (size_t)o->defs.n * sizeof *d);
    d[o->defs.n] = (Define){"B", value};
    return d;
}

/* Hyperparameter name's integer value in g, or -1. */
static int64_t hparam_int(const Graph *g, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < g->hparams.n; i++) {
        const char *h = g->hparams.v[i];
        char *end;
        if (strncmp(h, name, n) || h[n] != '=') continue;
        long long v = strtoll(h + n + 1, &end, 10);
        return *end ? -1 : (int64_t)v;
    }
    return -1;
}

/* The scale of each of n parts of the batch (micro-batches, ranks) in the
 * whole batch's loss: 1/n for a mean (the mean of the parts' means is the
 * batch's mean), 1 for a sum; false, with the error at the loss, for a loss
 * that is neither. */
static bool loss_share(const Graph *g, int n, const char *parts, float *scale) {
    const Node *loss = graph_node(g, g->loss);
    if (loss->op == OP_MEAN || loss->op == OP_CROSS_ENTROPY) *scale = 1.0f / (float)n;
    else if (loss->op == OP_SUM) *scale = 1.0f;
    else {
        Diag d = diag_for_graph(g, stderr);
        diag_error(&d, loss->loc,
                   "%s need a loss that is a mean (mean, cross_entropy) or a sum over the batch, "
                   "so that the parts' losses add up to it; '%s' is %s",
                   parts, loss->name, op_table[loss->op].name);
        return false;
    }
    return true;
}

/* How the micro-batch graph c->g (B/n rows) takes the whole batch's inputs
 * (m->full): an input whose first dimension is n times smaller is sliced
 * along it (micro-batch i reads rows [i B/n, (i+1) B/n)), one of the same
 * shape is shared whole; and the loss's seed: 1/n for a mean (the mean of
 * the micro-batches' means is the batch's mean), 1 for a sum. Sets
 * c->stage_rel (each sliced input's place in the staging) and
 * c->loss_scale; returns the staging's bytes, or -1 with the error printed. */
static int64_t micro_inputs(const MicroSplit *m, Compilation *c) {
    const Graph *g = &c->g, *full = m->full;
    char b1[ACC_SHAPE_STR], b2[ACC_SHAPE_STR];
    Diag d = diag_for_graph(g, stderr);
    c->micro_batches = m->n;
    c->stage_rel = acc_xrealloc(NULL, (size_t)g->nodes.n * sizeof *c->stage_rel);
    int64_t staging = 0;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *x = graph_node(g, i);
        c->stage_rel[i] = -1;
        if (x->op != OP_INPUT) continue;
        int j = graph_find(full, x->name);
        const Shape *a = &x->shape, *b = j >= 0 ? &graph_node(full, j)->shape : NULL;
        if (b && shape_eq(a, b)) continue; /* shared by every micro-batch */
        bool sliced = b && a->ndim == b->ndim && a->ndim > 0 && a->dim[0] * m->n == b->dim[0];
        for (int k = 1; sliced && k < a->ndim; k++) sliced = a->dim[k] == b->dim[k];
        if (!sliced) {
            diag_error(&d, x->loc,
                       "input '%s' is %s%s at the whole batch but %s%s at a micro-batch of 1/%d of it: "
                       "micro-batches slice an input along its first dimension, the batch B",
                       x->name, dtype_name(x->dtype), b ? shape_str(b, b1) : "?", dtype_name(x->dtype),
                       shape_str(a, b2), m->n);
            return -1;
        }
        c->stage_rel[i] = staging;
        staging += (node_bytes(x) * m->n + ACC_ALIGN - 1) / ACC_ALIGN * ACC_ALIGN;
    }
    return loss_share(g, m->n, "micro-batches", &c->loss_scale) ? staging : -1;
}

static int plan_step(const Options *o, const Define *defs, int n_defs, const MicroSplit *micro, AccUntil until,
                     Compilation *c);

/* *dst = *src where src's parts point into it: the graph the autodiff and
 * the schedule read, the profile the planner's options and the report name
 * (src is spent). */
static void compilation_move(Compilation *dst, const Compilation *src) {
    *dst = *src;
    dst->ad.g = dst->sched.g = &dst->g;
    dst->po.hw = &dst->hw;
    dst->po.dp = dst->info.dp = &dst->dp;
    dst->info.hw = dst->hw.name;
}

/* The least memory of an infeasible compilation: the planner's smallest
 * peak (searched here when the plan did not search it, as the refusal
 * does), with the staging and the workspace. */
static int64_t least_memory(const Compilation *c) {
    int64_t min = c->plan.min_peak_bytes;
    if (!min) {
        Plan mp;
        plan_min_peak(&c->g, &c->ad, &c->po, &mp);
        min = mp.min_peak_bytes;
        plan_free(&mp);
    }
    return plan_step_memory(&c->po, min).total_bytes;
}

/* The estimated time of the whole step: n runs of the plan's forward,
 * backward and recomputations. */
static double step_time(const Compilation *c) {
    return c->micro_batches * (c->plan.fwd_time + c->plan.bwd_time + c->plan.recompute_time);
}

/* --micro-batch N or auto: the model at the whole batch B (--batch or the
 * model's), then a plan per count of micro-batches tried (N, or for auto
 * every divisor of B from 1 up), keeping the one with the least estimated
 * step time that fits the budget (fewer micro-batches on a tie). Auto stops
 * at the first plan that recomputes nothing: under the cost model more
 * micro-batches only add time (each op's time n max(F/rate, (W + A/n) /
 * bandwidth) + n latency grows with n, W the bytes every micro-batch reads
 * again, the weights). When none fits, the refusal is that of the count
 * with the smallest minimum. */
static int plan_micro_batches(const Options *o, AccUntil until, Compilation *c) {
    memset(c, 0, sizeof *c); /* nothing until a candidate moves in */
    Graph full;
    graph_init(&full, "model");
    Define *defs = o->batch ? with_batch(o, o->batch) : NULL;
    int rc = fe_load_file(o->file, defs ? defs : o->defs.v, o->defs.n + !!defs, &full, stderr) ? EXIT_INPUT : 0;
    free(defs);
    int64_t b = rc ? 0 : hparam_int(&full, "B");
    bool automatic = o->micro_batches == OPT_MICRO_AUTO;
    if (!rc && b < 1) {
        fprintf(stderr,
                "acc: error: --micro-batch needs the batch size as the model's integer hyperparameter B "
                "(the first dimension of the inputs it slices); %s has none\n",
                o->file);
        rc = EXIT_INPUT;
    } else if (!rc && !automatic && b % o->micro_batches) {
        fprintf(stderr, "acc: error: --micro-batch %d does not divide the batch B = %" PRId64 "\n", o->micro_batches,
                b);
        rc = EXIT_INPUT;
    } else if (!rc && automatic && until < ACC_UNTIL_PLAN) {
        fprintf(stderr, "acc: error: --micro-batch auto is a choice of the planner: give a count with --emit=ir\n");
        rc = EXIT_USAGE;
    }
    bool have = false;   /* c holds a plan that fits */
    Compilation refused; /* the smallest minimum when none fits */
    bool have_refused = false;
    int64_t refused_peak = 0;
    MicroReport mr = {b, 0, automatic, 1.0f, 0, {{0}}};
    for (int64_t n = automatic ? 1 : o->micro_batches; !rc && n <= b; n++) {
        if (b % n) continue;
        if (mr.n_cand == ACC_MICRO_MAX) break; /* auto tries the first ACC_MICRO_MAX divisors */
        Compilation t;
        defs = with_batch(o, b / n);
        MicroSplit split = {&full, (int)n};
        rc = plan_step(o, defs, o->defs.n + 1, &split, until, &t);
        free(defs);
        if (rc || until < ACC_UNTIL_PLAN) {
            if (!rc) compilation_move(c, &t); /* --emit=ir: the graph at the micro-batch */
            else acc_compilation_free(&t);
            break;
        }
        bool fits = t.plan.status != PLAN_INFEASIBLE, last = fits && t.plan.recompute_time == 0;
        int64_t peak = fits ? t.mem.total_bytes : least_memory(&t);
        mr.cand[mr.n_cand++] = (MicroCandidate){(int)n, fits, peak, step_time(&t), t.plan.recompute_time};
        if (fits && (!have || step_time(&t) < step_time(c))) {
            if (have) acc_compilation_free(c);
            compilation_move(c, &t);
            have = true;
        } else if (!fits && !have && (!have_refused || peak < refused_peak)) {
            if (have_refused) acc_compilation_free(&refused);
            compilation_move(&refused, &t);
            refused_peak = peak;
            have_refused = true;
        } else {
            acc_compilation_free(&t);
        }
        if (!automatic || last) break;
    }
    if (!rc && until >= ACC_UNTIL_PLAN && !have) { /* the refusal of the smallest minimum */
        compilation_move(c, &refused);
        have_refused = false;
    }
    if (have_refused) acc_compilation_free(&refused);
    if (!rc && until >= ACC_UNTIL_PLAN) {
        mr.chosen = c->micro_batches;
        mr.loss_scale = c->loss_scale;
        c->micro = mr;
        c->info.micro = &c->micro;
    }
    graph_free(&full);
    return rc;
}

/* ---- the pipeline ---- */

/* The passes from the file to a checked plan, with the hyperparameters defs
 * (micro: the micro-batching of this compilation, or NULL). Stops at until
 * (at most ACC_UNTIL_PLAN). An infeasible plan is left in c for the caller
 * to report (c->plan.status PLAN_INFEASIBLE). */
static int plan_step(const Options *o, const Define *defs, int n_defs, const MicroSplit *micro, AccUntil until,
                     Compilation *c) {
    char err[512], detail[128];
    memset(c, 0, sizeof *c);
    graph_init(&c->g, "model");
    Graph *g = &c->g;
    c->micro_batches = 1;
    c->loss_scale = c->rank_scale = 1.0f;

    /* parse + elaborate: the .acdsl file -> a verified graph */
    double t0 = acc_now_s();
    if (fe_load_file(o->file, defs, n_defs, g, stderr)) return EXIT_INPUT;
    c->parsed = true;
    acc_phase_end(o, "parse", t0);
    /* micro-batches: how the inputs are sliced, the loss's seed */
    int64_t staging = 0;
    if (micro && (staging = micro_inputs(micro, c)) < 0) return EXIT_INPUT;
    if (until == ACC_UNTIL_ELABORATED) return 0;

    /* fuse: add(matmul(x, w), b) -> linear(x, w, b), unless --no-fuse */
    if (!o->no_fuse) {
        FuseOptions fo = {o->save_globs.v, o->save_globs.n, o->recompute_globs.v, o->recompute_globs.n};
        fuse_linear(g, &fo);
    }
    /* precision: --precision, else the DSL's; bf16 activations, casts where an
     * op's rule asks */
    c->precision = o->precision ? o->precision : g->precision ? g->precision : "fp32";
    bool bf16 = !strcmp(c->precision, "bf16");
    if (bf16 && !o->target->bf16) {
        fprintf(stderr, "acc: error: target '%s' has no bf16 kernels yet: precision bf16 runs on the cpu target\n",
                o->target->name);
        return EXIT_USAGE;
    }
    precision_apply(g, bf16 ? DT_BF16 : DT_F32);
    if (until == ACC_UNTIL_GRAPH) return 0;

    /* constrain: the cost model of the machine the target runs on (unless
     * --hw says), the command line's --save/--recompute checked honest */
    snprintf(detail, sizeof detail, "%d nodes, policy %s", g->nodes.n, o->policy.text);
    acc_phase_start(o, "plan", detail);
    t0 = acc_now_s();
    if (!hw_load(o->hw ? o->hw : o->target->hw, &c->hw, err, sizeof err)) {
        fprintf(stderr, "acc: error: %s\n", err);
        return EXIT_USAGE;
    }
    int at;
    if (!plan_check_patterns(g, o->save_globs.v, o->save_globs.n, o->recompute_globs.v, o->recompute_globs.n, err,
                             sizeof err, &at)) {
        if (at >= 0) { /* a tensor both saved and recomputed: at its DSL line */
            Diag d = diag_for_graph(g, stderr);
            diag_error(&d, graph_node(g, at)->loc, "%s", err);
        } else {
            fprintf(stderr, "acc: error: %s\n", err);
        }
        return EXIT_USAGE;
    }

    /* autodiff: which nodes get gradients, what each backward reads */
    ad_build(g, &c->ad);
    /* data parallel: the buckets of gradients, the pieces of ZeRO-1 */
    if (o->ranks > 1 && !loss_share(g, o->ranks, "data parallel ranks", &c->rank_scale)) return EXIT_INPUT;
    dp_layout(g, o->ranks, o->zero, o->bucket_bytes ? o->bucket_bytes : OPT_BUCKET_DEFAULT, &c->dp);

    /* plan: a decision per node under the whole step's budget, of which the
     * planner reserves the target's workspace and the staging of the whole
     * batch's inputs (a budget of 0 fits nothing) */
    int64_t budget = !o->has_budget ? 0 : o->budget_bytes > 0 ? o->budget_bytes : 1;
    /* the AdamW moments: f32, or bf16 with --optimizer-state bf16 or the
     * DSL's `optimizer_state bf16;` (half the fixed memory they take) */
    const char *state = o->optimizer_state ? o->optimizer_state : g->optimizer_state; /* option over the DSL's */
    OptState opt_state = !state || !strcmp(state, "fp32") ? OPT_STATE_F32
                         : !strcmp(state, "bf16")         ? OPT_STATE_BF16
                                                          : OPT_STATE_HOST;
    if (opt_state == OPT_STATE_HOST && o->ranks > 1) {
        fprintf(stderr, "acc: error: --optimizer-state host runs on one rank; with --ranks keep the state on the "
                        "device (fp32 or bf16, sharded with --zero 1)\n");
        return EXIT_USAGE;
    }
    c->po = (PlanOptions){o->policy,
                          budget,
                          o->target->workspace_bytes,
                          o->time_limit_s,
                          &c->hw,
                          opt_state,
                          o->save_globs.v,
                          o->save_globs.n,
                          o->recompute_globs.v,
                          o->recompute_globs.n,
                          staging,
                          o->host_budget_bytes,
                          &c->dp};
    plan_make(g, &c->ad, &c->po, &c->plan);
    if (c->plan.solver_error[0])
        fprintf(stderr,
                "acc: warning: %s; the search went on without that solve: the plan is checked, "
                "but may cost more than the optimum\n",
                c->plan.solver_error);

    /* schedule: forward, seed, backward with the recomputations inserted */
    SchedOptions so = {c->po.optimizer, NULL, NULL, c->po.dp};
    sched_build(g, &c->ad, c->plan.dec, &so, &c->sched);

    /* alloc: every buffer at an offset of one arena; the step's memory */
    alloc_assign(&c->sched);
    c->mem = plan_step_memory(&c->po, c->sched.arena_bytes);
    c->info = (ReportInfo){c->po.policy.text,
                           c->hw.name,
                           o->target->name,
                           c->precision,
                           o->has_budget ? o->budget_bytes : 0,
                           c->mem,
                           NULL,
                           NULL,
                           o->host_budget_bytes,
                           &c->dp,
                           o->bucket_bytes ? o->bucket_bytes : OPT_BUCKET_DEFAULT};

    /* check: an independent simulation of the schedule */
    if (!plan_check(&c->sched, stderr)) acc_panic(__FILE__, __LINE__, "the schedule failed the plan check");
    acc_phase_end(o, "plan", t0);
    return 0;
}

/* From a checked plan to DIR/lib<model>.a, its header and reports. */
static int build_library(const Options *o, const char *dir, Compilation *c) {
    char detail[128];
    double t0;
    Graph *g = &c->g;
    /* images: the nvrtc target's kernels, compiled before plan.json, which
     * records how */
    int rc = acc_make_dir(dir);
    if (!rc && o->target->nvrtc) {
        acc_phase_start(o, "nvrtc", "the cuda target's kernels");
        t0 = acc_now_s();
        c->n_images = cg_cuda_images(g, dir, o->arch ? o->arch : "sm_80,sm_90", &c->info.codegen_json, stderr);
        if (c->n_images < 0) rc = EXIT_INPUT;
        else acc_phase_end(o, "nvrtc", t0);
    }

    /* report + emit: plan.json, report.txt, the pictures; <model>.c and .h */
    t0 = acc_now_s();
    if (!rc) rc = write_reports(c, dir);
    if (!rc) rc = emit_host(o, c, dir);
    if (!rc) acc_phase_end(o, "emit", t0);

    /* build: lib<model>.a, the runtime's archives and accrt.h in dir */
    snprintf(detail, sizeof detail, "cc -O2 %s/%s.c (%d steps)", dir, g->model, c->sched.steps.n);
    if (!rc) acc_phase_start(o, "cc", detail);
    t0 = acc_now_s();
    if (!rc && cg_build_library(dir, g->model, o->target, o->shared, stderr)) rc = EXIT_INPUT;
    if (!rc) acc_phase_end(o, "cc", t0);
    return rc;
}

/* --ranks R: the options of one rank, whose batch is B/R of the whole
 * batch B (--batch, else the model's hyperparameter B). */
static int rank_options(const Options *o, Options *per) {
    *per = *o;
    if (o->zero && o->ranks < 2) {
        fprintf(stderr, "acc: error: --zero %d shards the optimizer state over the ranks: it needs --ranks 2 or more\n",
                o->zero);
        return EXIT_USAGE;
    }
    if (o->ranks < 2) return 0;
    int64_t b = o->batch;
    if (!b) {
        Graph g;
        graph_init(&g, "model");
        int rc = fe_load_file(o->file, o->defs.v, o->defs.n, &g, stderr) ? EXIT_INPUT : 0;
        b = rc ? 0 : hparam_int(&g, "B");
        graph_free(&g);
        if (rc) return rc;
        if (b < 1) {
            fprintf(stderr,
                    "acc: error: --ranks needs the batch size as the model's integer hyperparameter B (the first "
                    "dimension of its inputs, which the ranks split); %s has none\n",
                    o->file);
            return EXIT_INPUT;
        }
    }
    if (b % o->ranks) {
        fprintf(stderr, "acc: error: --ranks %d does not divide the batch B = %" PRId64 "\n", o->ranks, b);
        return EXIT_INPUT;
    }
    per->batch = b / o->ranks;
    return 0;
}

int acc_compile(const Options *o, AccUntil until, const char *dir, Compilation *c) {
    Options per; /* one rank's */
    int rc = rank_options(o, &per);
    if (rc) {
        memset(c, 0, sizeof *c);
        graph_init(&c->g, "model");
        return rc;
    }
    o = &per;
    bool micro = o->micro_batches == OPT_MICRO_AUTO || o->micro_batches > 1;
    if (micro) {
        rc = plan_micro_batches(o, until, c);
    } else if (o->batch) { /* --batch B: as -D B=... */
        Define *defs = with_batch(o, o->batch);
        rc = plan_step(o, defs, o->defs.n + 1, NULL, until, c);
        free(defs);
    } else {
        rc = plan_step(o, o->defs.v, o->defs.n, NULL, until, c);
    }
    if (rc || until < ACC_UNTIL_PLAN) return rc;
    if (c->plan.status == PLAN_INFEASIBLE) {
        rc = report_refusal(o, c);
        const MicroReport *m = c->info.micro;
        for (int i = 0; m && i < m->n_cand; i++) {
            char b1[32];
            fprintf(stderr, "%s%d: %s%s", i ? ", " : "note: the least memory by count of micro-batches: ", m->cand[i].n,
                    format_bytes(m->cand[i].peak_bytes, b1, sizeof b1), i + 1 == m->n_cand ? "\n" : "");
        }
        return rc;
    }
    if (until == ACC_UNTIL_PLAN) return 0;
    return build_library(o, dir, c);
}

void acc_compilation_free(Compilation *c) {
    free(c->stage_rel);
    dp_free(&c->dp);
    sched_free(&c->sched);
    plan_free(&c->plan);
    ad_free(&c->ad);
    graph_free(&c->g);
}
