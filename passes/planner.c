/* planner.c - which activations to save and which to recompute.
 *
 * requires: autodiff of the graph, a cost model, a budget. provides: a
 * SAVE/RECOMPUTE decision per node. Every plan, whatever made it, is scored
 * by the schedule and allocation that code generation uses (sched_build +
 * alloc_assign): its peak is the arena the runtime allocates, its cost the
 * summed forward time of its RECOMPUTE steps. The search's many trial plans
 * are scored by sched_measure, which gives the same max-live and cost without
 * building the schedule.
 *
 * Policies reproduce what users know (save all, per-block checkpointing,
 * every K-th block, uniform chunks, Megatron's selective, op save lists,
 * sqrt). `optimal`: with few free decisions, an exhaustive search over the
 * exact schedule (a proven optimum; for benchmarks, a branch and bound up to
 * 64 decisions); otherwise the plan is cut until it fits by a covering
 * program over the steps of the current plan that are over the budget (GLPK;
 * identical tensors of identical blocks aggregated; rows added where the
 * simulated cut still peaks), over-dropped tensors are restored, an exchange
 * search trades drops for saves (with the intermediates a recomputation needs
 * dropped alongside), every policy's plan is improved the same way, and the
 * cheapest that fits goes through the flip search: an integer program over
 * sets of flips (drops and saves) whose recompute time is exact and whose
 * memory is the sum of simulated single and pairwise changes, verified by
 * simulation (plan_search.c). The lower bound is a covering program over
 * the steps of the save-all schedule (plan_bound.c), an LP solved by GLPK, so the
 * reported gap is a proven one. The smallest peak (min_peak), which an
 * impossible budget reports, is the boundary of what this search reaches.
 * User constraints (DSL annotations and patterns, --save/--recompute) bind
 * every policy; a tensor that is both must-save and must-recompute is saved.
 */
#include <fnmatch.h>
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "planner_internal.h"

/* Free decisions searched exhaustively; ACC_EXHAUSTIVE_MAX overrides it so
 * that benchmarks can compare the heuristic with the optimum: up to 24 every
 * assignment is scored, above that (up to 64) a branch and bound proves the
 * optimum (pl_exact_search). */
#define EXHAUSTIVE_MAX 12
#define ENUMERATE_MAX 24

static int exhaustive_max(void) {
    const char *e = getenv("ACC_EXHAUSTIVE_MAX");
    int k = e && *e ? atoi(e) : EXHAUSTIVE_MAX;
    return k < 0 ? 0 : k > 64 ? 64 : k;
}


double pl_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int pl_ms_left(Ctx *c) {
    if (c->deadline <= 0) return INT_MAX;
    double ms = (c->deadline - pl_now() - 3 * c->alloc_s) * 1e3;
    return ms < 1 ? 1 : ms > INT_MAX / 2 ? INT_MAX / 2 : (int)ms;
}

/* Score dec by its exact schedule: max-live and recompute time, the arena
 * too if alloc, the schedule itself into keep if given. Without either, the
 * schedule is measured (sched_measure), not built. */
void pl_evaluate(Ctx *c, const Decision *dec, bool alloc, Eval *e, Schedule *keep) {
    c->n_evals++;
    if (!alloc && !keep) {
        SchedMeasure m;
        sched_measure(c->index, dec, c->time, &m);
        e->max_live = m.peak_live_bytes;
        e->arena = -1;
        e->peak_step = m.peak_step;
        e->cost = m.recompute_time;
        e->flops = -1;
        return;
    }
    Schedule s;
    double t0 = alloc ? pl_now() : 0;
    if (keep) {
        sched_build(c->g, c->ad, dec, c->o->optimizer, &s);
    } else {
        sched_rebuild(c->g, c->ad, dec, c->o->optimizer, &c->scratch);
        s = c->scratch;
    }
    if (alloc) alloc_assign(&s);
    else sched_max_live(&s);
    e->max_live = s.peak_live_bytes;
    e->arena = alloc ? s.arena_bytes : -1;
    e->peak_step = s.peak_step;
    e->cost = e->flops = 0;
    for (int t = 0; t < s.steps.n; t++)
        if (s.steps.v[t].kind == ST_RECOMPUTE) {
            const Node *n = graph_node(c->g, s.steps.v[t].node);
            e->cost += c->time[n->id];
            e->flops += op_table[n->op].flops(c->g, n);
        }
    if (keep) *keep = s;
    else c->scratch = s;
    if (alloc) c->alloc_s = pl_now() - t0;
}

/* pl_evaluate with the allocation, unless the measured max-live is already
 * over limit: then e->arena is that max-live, a lower bound of the arena (an
 * allocation holds every buffer live at a step). One evaluation either way;
 * on large models an allocation costs as much as hundreds of measures. */
static void evaluate_within(Ctx *c, const Decision *dec, int64_t limit, Eval *e) {
    pl_evaluate(c, dec, false, e, NULL);
    if (e->max_live > limit) {
        e->arena = e->max_live;
        return;
    }
    c->n_evals--; /* the same plan, scored once more */
    pl_evaluate(c, dec, true, e, NULL);
}

static bool matches(const char *const *globs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!fnmatch(globs[i], name, 0)) return true;
    return false;
}

/* The first pattern of globs[0..n) that matches name, -1 if none. */
static int first_match(const char *const *globs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!fnmatch(globs[i], name, 0)) return i;
    return -1;
}

/* A source of a must-save (save) or must-recompute for node x, as text, from
 * the command line's patterns (cl; *from_cl set) first, then the model's;
 * NULL if none. */
static const char *pattern_source(const Node *x, const Graph *g, const char *const *cl, int n_cl, bool save,
                                  char *buf, size_t len, bool *from_cl) {
    int k = first_match(cl, n_cl, x->name);
    *from_cl = k >= 0;
    if (k >= 0) return snprintf(buf, len, "--%s '%s'", save ? "save" : "recompute", cl[k]), buf;
    if (x->hint == (save ? HINT_SAVE : HINT_RECOMPUTE))
        return snprintf(buf, len, "the model's annotation @%s (%s:%d)", save ? "save" : "recompute", x->loc.file,
                        x->loc.line), buf;
    const char *const *dsl = save ? g->save_globs.v : g->recompute_globs.v;
    k = first_match(dsl, save ? g->save_globs.n : g->recompute_globs.n, x->name);
    if (k >= 0) return snprintf(buf, len, "the model's %s \"%s\"", save ? "save" : "recompute", dsl[k]), buf;
    return NULL;
}

bool plan_check_patterns(const Graph *g, const char *const *save, int n_save, const char *const *rec, int n_rec,
                         char *err, size_t err_len) {
    for (int k = 0; k < n_save + n_rec; k++) {
        const char *p = k < n_save ? save[k] : rec[k - n_save], *opt = k < n_save ? "--save" : "--recompute";
        const char *bad = name_pattern_problem(p);
        if (bad) {
            snprintf(err, err_len, "%s '%s': malformed pattern: %s", opt, p, bad);
            return false;
        }
        bool hit = false, leaf = false;
        for (int i = 0; i < g->nodes.n && !hit; i++) {
            const Node *x = graph_node(g, i);
            if (fnmatch(p, x->name, 0)) continue;
            if (op_table[x->op].flags & OPF_LEAF) leaf = true;
            else hit = true;
        }
        if (!hit) {
            snprintf(err, err_len, "%s '%s': the pattern matches %s", opt, p,
                     leaf ? "only inputs and parameters (they are always kept)" : "no computed tensor of the model");
            return false;
        }
    }
    if (!n_save && !n_rec) return true;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *x = graph_node(g, i);
        if (op_table[x->op].flags & OPF_LEAF) continue;
        char a[320], b[320];
        bool cl_sv, cl_rc; /* the model's own constraints the front end checked among themselves */
        const char *sv = pattern_source(x, g, save, n_save, true, a, sizeof a, &cl_sv);
        const char *rc = pattern_source(x, g, rec, n_rec, false, b, sizeof b, &cl_rc);
        if (sv && rc && (cl_sv || cl_rc)) {
            snprintf(err, err_len, "'%s' is both saved (%s) and recomputed (%s): a tensor is either saved or recomputed",
                     x->name, sv, rc);
            return false;
        }
    }
    return true;
}

/* Nodes the backward reads (directly): dropping one costs a recomputation.
 * The others are intermediates, live in the backward only when a dropped
 * tensor's recomputation needs them. */
static void read_by_backward(const Ctx *c, bool *read) {
    for (int i = 0; i < c->g->nodes.n; i++) read[i] = false;
    for (int k = 0; k < c->ad->bwd.n; k++) {
        int m = c->ad->bwd.v[k];
        const Node *x = graph_node(c->g, m);
        GradReads r = ad_reads(c->ad, m);
        for (int j = 0; j < x->n_in; j++)
            if (r.in[j]) read[x->in[j]] = true;
        if (r.out || r.aux) read[m] = true;
    }
}

static void ctx_init(Ctx *c, const Graph *g, const Autodiff *ad, const PlanOptions *o) {
    int n = g->nodes.n;
    memset(c, 0, sizeof *c);
    c->g = g, c->ad = ad, c->o = o;
    c->time = acc_xrealloc(NULL, (size_t)n * sizeof(double));
    c->forced = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    c->cand = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
    c->read = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
    c->group = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    VEC(const char *) names = {0};
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(g, i);
        c->time[i] = cost_fwd_time(g, x, o->hw);
        c->cand[i] = ad->live[i] && (op_table[x->op].flags & OPF_RECOMPUTE) && i != g->loss;
        bool save = x->hint == HINT_SAVE || matches(g->save_globs.v, g->save_globs.n, x->name) ||
                    matches(o->save_globs, o->n_save_globs, x->name);
        bool rec = x->hint == HINT_RECOMPUTE || matches(g->recompute_globs.v, g->recompute_globs.n, x->name) ||
                   matches(o->recompute_globs, o->n_recompute_globs, x->name);
        c->forced[i] = save ? DEC_SAVE : rec && c->cand[i] ? DEC_RECOMPUTE : -1;
        c->group[i] = -1;
        if (*x->group) {
            int k = names.n - 1;
            while (k >= 0 && strcmp(names.v[k], x->group)) k--;
            if (k < 0) {
                VEC_PUSH(names, x->group);
                k = names.n - 1;
            }
            c->group[i] = k;
        }
    }
    c->n_groups = names.n;
    VEC_FREE(names);
    read_by_backward(c, c->read);
    c->index = sched_index_new(g, ad, o->optimizer);
    c->t_start = pl_now();
    c->deadline = o->time_limit_s > 0 ? c->t_start + o->time_limit_s : 0;
}

static void ctx_free(Ctx *c) {
    sched_free(&c->scratch);
    sched_index_free(c->index);
    free(c->time);
    free(c->forced);
    free(c->cand);
    free(c->read);
    free(c->group);
}

void pl_apply_forced(const Ctx *c, Decision *dec) {
    for (int i = 0; i < c->g->nodes.n; i++) {
        if (!c->cand[i]) dec[i] = DEC_SAVE;
        else if (c->forced[i] >= 0) dec[i] = (Decision)c->forced[i];
    }
}

/* ---- policies -------------------------------------------------------------- */

/* Checkpoint the groups for which pick(group) holds: inside them recompute
 * everything except tensors read by another group or the top level (the
 * block's outputs, which the next block takes as its input). */
static void checkpoint_groups(const Ctx *c, Decision *dec, const bool *pick) {
    const Graph *g = c->g;
    for (int i = 0; i < g->nodes.n; i++) dec[i] = DEC_SAVE;
    for (int i = 0; i < g->nodes.n; i++) {
        int gi = c->group[i];
        if (gi < 0 || !pick[gi]) continue;
        dec[i] = DEC_RECOMPUTE;
    }
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *x = graph_node(g, i);
        for (int j = 0; j < x->n_in; j++) {
            int p = x->in[j];
            if (c->group[p] >= 0 && c->group[p] != c->group[i]) dec[p] = DEC_SAVE;
        }
    }
}

/* uniform:N - chunks of N consecutive groups checkpointed as one */
static void checkpoint_chunks(const Ctx *c, Decision *dec, int chunk) {
    Ctx cc = *c;
    int *grp = acc_xrealloc(NULL, (size_t)c->g->nodes.n * sizeof(int));
    for (int i = 0; i < c->g->nodes.n; i++) grp[i] = c->group[i] >= 0 ? c->group[i] / chunk : -1;
    cc.group = grp;
    bool *pick = acc_xrealloc(NULL, (size_t)(c->n_groups + 1) * sizeof(bool));
    for (int k = 0; k <= c->n_groups; k++) pick[k] = true;
    checkpoint_groups(&cc, dec, pick);
    free(pick);
    free(grp);
}

bool plan_policy_valid(const char *p, char *err, size_t err_len) {
    static const char *const simple[] = {"none", "full", "selective", "sqrt", "optimal"};
    for (size_t i = 0; i < sizeof simple / sizeof *simple; i++)
        if (!strcmp(p, simple[i])) return true;
    if (!strncmp(p, "every:", 6) || !strncmp(p, "uniform:", 8)) {
        const char *num = strchr(p, ':') + 1;
        char *end;
        long k = *num >= '0' && *num <= '9' ? strtol(num, &end, 10) : 0;
        if (k && !*end && k >= 1 && k <= 100000) return true;
        snprintf(err, err_len, "policy '%s': expected a whole number from 1 to 100000 after ':'", p);
        return false;
    }
    if (!strncmp(p, "ops:", 4)) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", p + 4);
        size_t len = strlen(buf);
        if (!*buf || buf[0] == ',' || buf[len - 1] == ',' || strstr(buf, ",,")) {
            snprintf(err, err_len, "policy '%s': expected a comma-separated list of op names (none empty)", p);
            return false;
        }
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
            if (op_lookup(tok) == OP_COUNT) {
                snprintf(err, err_len, "policy '%s': unknown op '%s'", p, tok);
                return false;
            }
        return true;
    }
    snprintf(err, err_len, "unknown policy '%s' (none, full, every:K, uniform:N, selective, ops:LIST, sqrt, optimal)",
             p);
    return false;
}

static void policy_decisions(const Ctx *c, const char *p, Decision *dec) {
    const Graph *g = c->g;
    int n = g->nodes.n;
    bool *pick = acc_xrealloc(NULL, (size_t)(c->n_groups + 1) * sizeof(bool));
    for (int i = 0; i < n; i++) dec[i] = DEC_SAVE;
    if (!strcmp(p, "full") || !strncmp(p, "every:", 6)) {
        int k = p[0] == 'e' ? atoi(p + 6) : 1;
        for (int gi = 0; gi < c->n_groups; gi++) pick[gi] = gi % k == 0;
        checkpoint_groups(c, dec, pick);
    } else if (!strncmp(p, "uniform:", 8)) {
        checkpoint_chunks(c, dec, atoi(p + 8));
    } else if (!strcmp(p, "sqrt")) {
        int k = (int)ceil(sqrt((double)(c->n_groups > 0 ? c->n_groups : 1)));
        checkpoint_chunks(c, dec, k);
    } else if (!strcmp(p, "selective")) {
        for (int i = 0; i < n; i++)
            if (graph_node(g, i)->op == OP_ATTENTION) dec[i] = DEC_RECOMPUTE;
    } else if (!strncmp(p, "ops:", 4)) {
        bool keep[OP_COUNT] = {false};
        char buf[256];
        snprintf(buf, sizeof buf, "%s", p + 4);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            OpKind k = op_lookup(tok); /* OP_COUNT for an unknown name: no entry of keep */
            if (k < OP_COUNT) keep[k] = true;
        }
        keep[OP_LINEAR] |= keep[OP_MATMUL]; /* a linear is a matmul with its bias (torch's addmm) */
        for (int i = 0; i < n; i++) dec[i] = keep[graph_node(g, i)->op] ? DEC_SAVE : DEC_RECOMPUTE;
    }
    free(pick);
    pl_apply_forced(c, dec);
}

/* ---- moves of the search -------------------------------------------------- */

/* Whether p is an intermediate that dropping a consumer drops with it: a
 * saved candidate the backward does not read. */
static bool in_closure(const Ctx *c, const Decision *dec, int p) {
    return c->cand[p] && c->forced[p] < 0 && !c->read[p] && dec[p] == DEC_SAVE;
}

void pl_drop_closure(const Ctx *c, Decision *dec, int i) {
    dec[i] = DEC_RECOMPUTE;
    const Node *x = graph_node(c->g, i);
    for (int j = 0; j < x->n_in; j++)
        if (in_closure(c, dec, x->in[j])) pl_drop_closure(c, dec, x->in[j]);
}

int pl_closure_list(const Ctx *c, const Decision *dec, int i, int *stamp, int mark, int *out, int m) {
    const Node *x = graph_node(c->g, i);
    for (int j = 0; j < x->n_in; j++) {
        int p = x->in[j];
        if (in_closure(c, dec, p) && stamp[p] != mark) {
            stamp[p] = mark;
            out[m++] = p;
            m = pl_closure_list(c, dec, p, stamp, mark, out, m);
        }
    }
    return m;
}

/* ---- GLPK: a covering program, min cost x s.t. A x >= need ----------------- */

/* Stop branch and bound after a fixed number of subproblems: a node limit,
 * unlike GLPK's time limit, gives the same answer on a loaded machine. */
#define KNAPSACK_NODE_LIMIT 20000
static void node_limit(glp_tree *tree, void *info) {
    int *left = info;
    if (glp_ios_reason(tree) == GLP_ISELECT && --*left <= 0) glp_ios_terminate(tree);
}

/* cover_min_cost's integer program over the m item classes (rep: a class's
 * first item, count: its size; on an answer, count: how many it takes). */
typedef struct {
    const double *cost, *a, *need;
    int stride, n_rows, m;
    const int *rep;
    int *count, *ind;
    double *val;
    double best; /* -1: no answer */
} Cover;

static void cover_solve(void *arg) {
    Cover *v = arg;
    int m = v->m, stride = v->stride;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, v->n_rows);
    glp_add_cols(lp, m);
    for (int k = 0; k < m; k++) {
        glp_set_col_kind(lp, k + 1, GLP_IV);
        glp_set_col_bnds(lp, k + 1, GLP_DB, 0, v->count[k]);
        glp_set_obj_coef(lp, k + 1, v->cost[v->rep[k]] * 1e6); /* microseconds: GLPK's tolerances are absolute */
    }
    for (int r = 0; r < v->n_rows; r++) {
        int len = 0;
        for (int k = 0; k < m; k++)
            if (v->a[(size_t)v->rep[k] * stride + r] != 0)
                v->ind[++len] = k + 1, v->val[len] = v->a[(size_t)v->rep[k] * stride + r];
        glp_set_row_bnds(lp, r + 1, GLP_LO, v->need[r], 0);
        glp_set_mat_row(lp, r + 1, len, v->ind, v->val);
    }
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.mir_cuts = GLP_ON;
    io.cov_cuts = GLP_ON;
    int nodes_left = KNAPSACK_NODE_LIMIT;
    io.cb_func = node_limit;
    io.cb_info = &nodes_left;
    int rc = glp_simplex(lp, &sm) == 0 ? glp_intopt(lp, &io) : -1;
    v->best = -1;
    if ((rc == 0 || rc == GLP_ESTOP) && (glp_mip_status(lp) == GLP_OPT || glp_mip_status(lp) == GLP_FEAS)) {
        v->best = glp_mip_obj_val(lp) / 1e6;
        for (int k = 0; k < m; k++) v->count[k] = (int)lround(glp_mip_col_val(lp, k + 1));
    }
    glp_delete_prob(lp);
}

/* Record the first failure of GLPK (the plan reports it). */
void pl_solver_failed(Ctx *c, const char *err) {
    if (!c->solver_error[0]) snprintf(c->solver_error, sizeof c->solver_error, "%s", err);
}

/* min cost.x over binary x[0..n) s.t. sum_i a[i * stride + r] x_i >= need[r]
 * for each of n_rows rows (a 0/1 knapsack when n_rows is 1). Returns the
 * optimal cost (and x), or -1 if even taking everything leaves a row short.
 * Items with equal cost and equal coefficients in every row (the same tensor
 * of identical blocks) become one integer variable bounded by their count: no
 * symmetric branching. */
static double cover_min_cost(Ctx *c, const double *cost, const double *a, int stride, int n_rows, int n,
                             const double *need, bool *x) {
    bool any = false;
    for (int i = 0; i < n; i++) x[i] = false;
    for (int r = 0; r < n_rows; r++) {
        double total = 0;
        for (int i = 0; i < n; i++) total += a[(size_t)i * stride + r];
        if (total < need[r]) return -1;
        any |= need[r] > 0;
    }
    if (!any || n == 0) return 0;
    int *cls = acc_xrealloc(NULL, (size_t)(n + 1) * sizeof(int)); /* item -> class */
    int *rep = acc_xrealloc(NULL, (size_t)(n + 1) * sizeof(int)); /* class -> first item */
    int *count = acc_xrealloc(NULL, (size_t)(n + 1) * sizeof(int));
    int m = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        for (; k < m; k++) {
            if (cost[rep[k]] != cost[i]) continue;
            int r = 0;
            while (r < n_rows && a[(size_t)rep[k] * stride + r] == a[(size_t)i * stride + r]) r++;
            if (r == n_rows) break;
        }
        if (k == m) rep[m] = i, count[m] = 0, m++;
        cls[i] = k;
        count[k]++;
    }
    Cover v = {cost, a, need, stride, n_rows, m, rep, count, acc_xrealloc(NULL, (size_t)(m + 1) * sizeof(int)),
               acc_xrealloc(NULL, (size_t)(m + 1) * sizeof(double)), -1};
    char err[200];
    if (!glpk_guarded(cover_solve, &v, err, sizeof err)) pl_solver_failed(c, err), v.best = -1;
    double best = v.best;
    if (best >= 0) {
        for (int i = 0; i < n; i++)
            if (count[cls[i]] > 0) x[i] = true, count[cls[i]]--;
    } else { /* GLPK gave no answer in time: take everything */
        best = 0;
        for (int i = 0; i < n; i++) x[i] = true, best += cost[i];
    }
    free(v.ind), free(v.val), free(cls), free(rep), free(count);
    return best;
}

/* Each buffer's last forward reference and first backward reference
 * (recomputations included) in s: -1 and s->steps.n when there is none. */
void pl_read_spans(const Schedule *s, int *last_fwd, int *first_bwd) {
    int nb = s->bufs.n, ns = s->steps.n, fbs = s->first_bwd_step;
    for (int k = 0; k < nb; k++) last_fwd[k] = -1, first_bwd[k] = ns;
    for (int t = 0; t < ns; t++) {
        const Step *st = &s->steps.v[t];
        int refs[ACC_MAX_IN + 2], m = 0;
        for (int j = 0; j < ACC_MAX_IN; j++)
            if (st->in[j] >= 0) refs[m++] = st->in[j];
        if (st->out >= 0) refs[m++] = st->out;
        if (st->aux >= 0) refs[m++] = st->aux;
        for (int r = 0; r < m; r++) {
            if (t < fbs) last_fwd[refs[r]] = t;
            else if (first_bwd[refs[r]] == ns) first_bwd[refs[r]] = t;
        }
    }
}


/* Recompute time of dropping node i with pl_drop_closure: i and the saved
 * intermediates that feed it (listed into list, stamped with mark). */
static double closure_time(const Ctx *c, const Decision *dec, int i, int *stamp, int mark, int *list) {
    double t = c->time[i];
    int m = pl_closure_list(c, dec, i, stamp, mark, list, 0);
    for (int k = 0; k < m; k++) t += c->time[list[k]];
    return t;
}

/* Rows of the cut at most: steps of the plan being cut whose excess the
 * covering program must remove together. */
#define CUT_ROWS 8

/* Cut the peak of dec until its max-live is at most target. Each round
 * drops the cheapest set of tensors (each with the intermediates its
 * recomputation needs) that removes the excess at the peak step, found by a
 * covering program over the steps of the current plan: the set is simulated,
 * and if the peak moves to another step still over the target, that step
 * becomes one more row of the program and it is solved again. So a tensor
 * that makes room at the peak but is live again (recomputed) at the next
 * step over the target loses to one that makes room at both. A step's
 * entries are the saved tensors whose forward copy is live there after its
 * last forward read and before its first backward read. Past the deadline
 * (--time-limit) each round solves the program of the peak step alone, but
 * the rounds go on: the cut is how a first plan is found (at most 4n + 16
 * rounds, each dropping at least one tensor), so a time limit never turns a
 * budget that fits into an error. */
bool pl_cut_to(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    double *a = acc_xrealloc(NULL, (size_t)n * CUT_ROWS * sizeof(double)); /* item k, row r: a[k * CUT_ROWS + r] */
    double *cost = acc_xrealloc(NULL, (size_t)n * sizeof(double)), need[CUT_ROWS];
    int *id = acc_xrealloc(NULL, (size_t)n * sizeof(int)), *item = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    int *clist = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    int *stamp = acc_xrealloc(NULL, (size_t)n * sizeof(int)), *fwd_at = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    int *bwd_at = acc_xrealloc(NULL, (size_t)n * sizeof(int)), row_t[CUT_ROWS];
    bool *x = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
    Decision *tmp = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    int *last_fwd = NULL, *first_bwd = NULL;
    int64_t *live = NULL;
    for (int i = 0; i < n; i++) stamp[i] = -1;
    int mark = 0;
    bool ok = false;
    for (int iter = 0; iter < 4 * n + 16; iter++) {
        Schedule s;
        Eval e;
        pl_evaluate(c, dec, false, &e, &s);
        if (e.max_live <= target) {
            sched_free(&s);
            ok = true;
            break;
        }
        int nb = s.bufs.n, ns = s.steps.n;
        last_fwd = acc_xrealloc(last_fwd, (size_t)nb * sizeof(int));
        first_bwd = acc_xrealloc(first_bwd, (size_t)nb * sizeof(int));
        live = acc_xrealloc(live, (size_t)(ns + 1) * sizeof(int64_t));
        pl_read_spans(&s, last_fwd, first_bwd);
        sched_live_bytes(&s, live);
        for (int i = 0; i < n; i++) item[i] = fwd_at[i] = bwd_at[i] = -1;
        for (int t = 0; t < ns; t++) {
            const Step *st = &s.steps.v[t];
            if (st->kind == ST_FWD) fwd_at[st->node] = t;
            if (st->kind == ST_BWD) bwd_at[st->node] = t;
        }
        int m = 0, n_rows = 0, t = e.peak_step;
        bool made = false; /* tmp holds a cut */
        for (;;) {
            int r = n_rows;
            row_t[r] = t, need[r] = (double)(live[t] - target);
            for (int k = 0; k < m; k++) a[(size_t)k * CUT_ROWS + r] = 0;
            bool any = false;
            for (int k = 0; k < nb; k++) {
                const Buffer *b = &s.bufs.v[k];
                int i = b->node;
                if (b->persistent || (b->kind != BUF_ACT && b->kind != BUF_AUX) || b->first < 0 ||
                    b->first >= s.first_bwd_step || !(b->first <= t && t <= b->last) || t <= last_fwd[k] ||
                    t >= first_bwd[k] || !c->cand[i] || c->forced[i] >= 0 || dec[i] != DEC_SAVE)
                    continue;
                if (item[i] < 0) {
                    item[i] = m, id[m] = i, cost[m] = closure_time(c, dec, i, stamp, ++mark, clist);
                    for (int q = 0; q < CUT_ROWS; q++) a[(size_t)m * CUT_ROWS + q] = 0;
                    m++;
                }
                a[(size_t)item[i] * CUT_ROWS + r] += (double)b->size_bytes;
                any = true;
            }
            if (!any) break; /* nothing makes room at t */
            n_rows++;
            if (cover_min_cost(c, cost, a, CUT_ROWS, n_rows, m, need, x) < 0)
                for (int k = 0; k < m; k++) x[k] = a[(size_t)k * CUT_ROWS + r] > 0 || x[k];
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            for (int k = 0; k < m; k++)
                if (x[k]) pl_drop_closure(c, tmp, id[k]);
            made = true;
            Eval et;
            pl_evaluate(c, tmp, false, &et, NULL);
            if (et.max_live <= target || n_rows == CUT_ROWS || pl_out_of_time(c)) break;
            /* the step of the current plan where the cut's peak falls */
            sched_rebuild(c->g, c->ad, tmp, c->o->optimizer, &c->scratch);
            int u = et.peak_step;
            while (u < c->scratch.steps.n && c->scratch.steps.v[u].kind == ST_RECOMPUTE) u++;
            if (u == c->scratch.steps.n) break;
            const Step *st = &c->scratch.steps.v[u];
            t = st->kind == ST_FWD ? fwd_at[st->node] : st->kind == ST_BWD ? bwd_at[st->node] : s.first_bwd_step;
            bool seen = t < 0;
            for (int q = 0; q < n_rows; q++) seen |= row_t[q] == t;
            if (seen || live[t] <= target) break;
        }
        sched_free(&s);
        if (!made) break;
        memcpy(dec, tmp, (size_t)n * sizeof(Decision));
    }
    free(clist);
    free(a), free(cost), free(id), free(item), free(stamp), free(fwd_at), free(bwd_at), free(x), free(tmp);
    free(last_fwd), free(first_bwd), free(live);
    return ok;
}

static const double *cmp_time;
static int cmp_by_time(const void *a, const void *b) {
    double x = cmp_time[*(const int *)a], y = cmp_time[*(const int *)b];
    return x > y ? -1 : x < y ? 1 : *(const int *)a - *(const int *)b;
}

void pl_sort_by_time(const Ctx *c, int *ids, int n) {
    cmp_time = c->time;
    qsort(ids, (size_t)n, sizeof(int), cmp_by_time);
}

/* Save again, most expensive first, what the plan can afford to keep. */
void pl_restore(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    VEC(int) dropped = {0};
    for (int i = 0; i < n; i++)
        if (dec[i] == DEC_RECOMPUTE && c->forced[i] < 0) VEC_PUSH(dropped, i);
    cmp_time = c->time;
    if (dropped.n) qsort(dropped.v, (size_t)dropped.n, sizeof(int), cmp_by_time);
    Eval cur;
    pl_evaluate(c, dec, false, &cur, NULL);
    for (int k = 0; k < dropped.n; k++) {
        int i = dropped.v[k];
        dec[i] = DEC_SAVE;
        Eval e;
        pl_evaluate(c, dec, false, &e, NULL);
        if (e.max_live <= target && e.cost <= cur.cost) cur = e;
        else dec[i] = DEC_RECOMPUTE;
        if (pl_out_of_time(c)) break;
    }
    VEC_FREE(dropped);
}

typedef struct {
    int node;
    double dcost;   /* change of recompute time */
    int64_t dmem;   /* change of max-live */
} Move;

static int cmp_net(const void *a, const void *b) {
    const double *x = a, *y = b;
    return x[0] > y[0] ? -1 : x[0] < y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* Exchange search: price every single move by simulation - dropping a saved
 * tensor (with its intermediates) or saving a dropped one - then apply the
 * best pair (one drop, one save) whose predicted cost falls while its
 * predicted peak stays within target, verified by simulation; repeat. This
 * finds the chains (drop a tensor and what feeds it together) that one-at-a-
 * time knapsack steps cannot see. */
static void exchange(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    const bool *read = c->read;
    Decision *tmp = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    Move *drops = acc_xrealloc(NULL, (size_t)n * sizeof(Move)), *saves = acc_xrealloc(NULL, (size_t)n * sizeof(Move));
    double (*pairs)[4] = NULL;
    size_t pairs_cap = 0;
    for (int iter = 0; iter < 4 * n; iter++) {
        if (pl_out_of_time(c)) break;
        Eval base;
        pl_evaluate(c, dec, false, &base, NULL);
        int nd = 0, nsv = 0;
        bool improved = false;
        for (int i = 0; i < n && !improved && !pl_out_of_time(c); i++) {
            if (!c->cand[i] || c->forced[i] >= 0 || !read[i]) continue;
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            if (dec[i] == DEC_SAVE) pl_drop_closure(c, tmp, i);
            else tmp[i] = DEC_SAVE;
            Eval e;
            pl_evaluate(c, tmp, false, &e, NULL);
            Move mv = {i, e.cost - base.cost, e.max_live - base.max_live};
            if (e.max_live <= target && mv.dcost < -1e-12) { /* better on its own */
                memcpy(dec, tmp, (size_t)n * sizeof(Decision));
                improved = true;
            } else if (dec[i] == DEC_SAVE && mv.dmem < 0) {
                drops[nd++] = mv;
            } else if (dec[i] == DEC_RECOMPUTE && mv.dcost < 0) {
                saves[nsv++] = mv;
            }
        }
        if (improved) continue;
        if (c->timed_out) break; /* the moves were not all priced */
        size_t np = 0;
        for (int a = 0; a < nd; a++)
            for (int b = 0; b < nsv; b++) {
                double net = -(drops[a].dcost + saves[b].dcost);
                if (net <= 1e-12 || base.max_live + drops[a].dmem + saves[b].dmem > target) continue;
                if (np == pairs_cap) {
                    pairs_cap = pairs_cap ? 2 * pairs_cap : 256;
                    pairs = acc_xrealloc(pairs, pairs_cap * sizeof *pairs);
                }
                pairs[np][0] = net, pairs[np][1] = a * 1e6 + b, pairs[np][2] = a, pairs[np][3] = b;
                np++;
            }
        if (np) qsort(pairs, np, sizeof *pairs, cmp_net);
        for (size_t k = 0; k < np && k < 8 && !improved && !pl_out_of_time(c); k++) {
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            pl_drop_closure(c, tmp, drops[(int)pairs[k][2]].node);
            tmp[saves[(int)pairs[k][3]].node] = DEC_SAVE;
            Eval e;
            pl_evaluate(c, tmp, false, &e, NULL);
            if (e.max_live <= target && e.cost < base.cost - 1e-12) {
                memcpy(dec, tmp, (size_t)n * sizeof(Decision));
                improved = true;
            }
        }
        if (!improved) break;
    }
    free(tmp), free(drops), free(saves), free(pairs);
}

/* Every assignment of the free candidates, scored by the exact schedule:
 * the cheapest whose arena fits budget, or (least_peak) the smallest arena.
 * Its plan into dec; returns its cost (arena), INFINITY when none fits. */
static double enumerate(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t budget, bool least_peak) {
    int n = c->g->nodes.n;
    Decision *try = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    memcpy(try, dec, (size_t)n * sizeof(Decision));
    double best = INFINITY;
    for (uint32_t mask = 0; mask < (1u << k); mask++) {
        for (int b = 0; b < k; b++) try[free_ids[b]] = (mask >> b) & 1 ? DEC_RECOMPUTE : DEC_SAVE;
        Eval e;
        pl_evaluate(c, try, false, &e, NULL);
        if (least_peak ? (double)e.max_live >= best : e.max_live > budget || e.cost >= best) continue;
        pl_evaluate(c, try, true, &e, NULL);
        if (least_peak ? (double)e.arena >= best : e.arena > budget) continue;
        best = least_peak ? (double)e.arena : e.cost;
        memcpy(dec, try, (size_t)n * sizeof(Decision));
    }
    free(try);
    return best;
}

/* Improve a plan that fits the budget without leaving it: pl_restore, exchange
 * (kept only if the allocation still fits), then the flip search. */
static void polish(Ctx *c, Decision *dec, int64_t budget) {
    int n = c->g->nodes.n;
    Decision *keep = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    memcpy(keep, dec, (size_t)n * sizeof(Decision));
    Eval e;
    pl_evaluate(c, dec, true, &e, NULL);
    int64_t target = budget - (e.arena - e.max_live);
    pl_restore(c, dec, target);
    exchange(c, dec, target);
    pl_evaluate(c, dec, true, &e, NULL);
    if (e.arena > budget) memcpy(dec, keep, (size_t)n * sizeof(Decision)), pl_evaluate(c, dec, true, &e, NULL);
    pl_flip_search(c, dec, budget - (e.arena - e.max_live), budget);
    free(keep);
}

/* The cut from save-all, and every policy's plan that fits, each improved by
 * restoring what it can afford to save and by exchanges; the cheapest that
 * fits, then (if polish) improved by the flip search. Whether it finds a plan
 * does not depend on polish. */
static bool best_of_heuristics(Ctx *c, Decision *out, int64_t budget, bool polish) {
    int n = c->g->nodes.n;
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    Decision *cut = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    Decision *trial = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    double best = INFINITY, cut_cost = INFINITY;
    Eval e;
    /* the allocation may need more than max-live: tighten the target and
     * retry. Restore and exchange fill the plan up to the target, so near the
     * smallest peak the allocation can overshoot every round while a cut
     * alone, which frees more than it must, fits: the cheapest such cut is
     * the plan when no improved one fits. */
    int64_t target = budget;
    for (int round = 0; round < 6 && target > 0; round++) {
        for (int i = 0; i < n; i++) dec[i] = DEC_SAVE;
        pl_apply_forced(c, dec);
        if (!pl_cut_to(c, dec, target)) break;
        memcpy(trial, dec, (size_t)n * sizeof(Decision));
        bool improve = !pl_out_of_time(c); /* else the cut as it is */
        if (improve) pl_restore(c, dec, target), exchange(c, dec, target);
        pl_evaluate(c, dec, true, &e, NULL);
        if (e.arena <= budget) {
            best = e.cost;
            memcpy(out, dec, (size_t)n * sizeof(Decision));
            break;
        }
        target -= e.arena - budget;
        Eval ec = e;
        if (improve) pl_evaluate(c, trial, true, &ec, NULL);
        if (ec.arena <= budget && ec.cost < cut_cost)
            cut_cost = ec.cost, memcpy(cut, trial, (size_t)n * sizeof(Decision));
        if (cut_cost < INFINITY && pl_out_of_time(c)) break; /* a plan that fits: the best so far */
    }
    if (best == INFINITY && cut_cost < INFINITY) best = cut_cost, memcpy(out, cut, (size_t)n * sizeof(Decision));
    free(cut), free(trial);
    static const char *const seeds[] = {"full", "every:2", "every:3", "uniform:2", "sqrt", "selective",
                                        "ops:matmul,attention", "ops:matmul"};
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        if (best < INFINITY && pl_out_of_time(c)) break;
        policy_decisions(c, seeds[k], dec);
        evaluate_within(c, dec, budget, &e);
        if (e.arena > budget || e.cost >= best) continue;
        double seed_cost = e.cost;
        if (!pl_out_of_time(c)) { /* else the policy's plan as it is */
            pl_restore(c, dec, budget - (e.arena - e.max_live));
            exchange(c, dec, budget - (e.arena - e.max_live));
            pl_evaluate(c, dec, true, &e, NULL);
        }
        if (e.arena > budget) { /* the improvement did not allocate within the budget: the policy's plan */
            policy_decisions(c, seeds[k], dec);
            e.cost = seed_cost;
        }
        if (e.cost < best) {
            best = e.cost;
            memcpy(out, dec, (size_t)n * sizeof(Decision));
        }
    }
    if (best < INFINITY && polish && !pl_out_of_time(c)) {
        pl_evaluate(c, out, true, &e, NULL);
        pl_flip_search(c, out, budget - (e.arena - e.max_live), budget);
    }
    free(dec);
    return best < INFINITY;
}

static void finish(Ctx *c, Plan *p, PlanStatus status) {
    Eval e;
    Schedule s;
    pl_evaluate(c, p->dec, true, &e, &s);
    p->status = status;
    p->peak_bytes = e.arena;
    p->max_live_bytes = s.peak_live_bytes;
    p->recompute_time = e.cost;
    p->recompute_flops = e.flops;
    p->fwd_time = p->bwd_time = 0;
    for (int i = 0; i < c->g->nodes.n; i++)
        if (c->ad->live[i]) p->fwd_time += c->time[i];
    for (int k = 0; k < c->ad->bwd.n; k++) p->bwd_time += 2 * c->time[c->ad->bwd.v[k]];
    if (c->o->budget_bytes > 0 && e.arena > c->o->budget_bytes) p->status = PLAN_INFEASIBLE;
    p->n_evals = c->n_evals;
    p->solve_s = pl_now() - c->t_start;
    p->timed_out = c->timed_out;
    snprintf(p->solver_error, sizeof p->solver_error, "%s", c->solver_error);
    sched_free(&s);
}

/* Lower dec's max-live by single flips - save a dropped tensor (its
 * recomputation may have kept its inputs alive), or drop a saved one with
 * the intermediates it needs - taking each that lowers it, in node order;
 * two passes at most. For min_peak: the cut and restore steer by cost and
 * stop at a target, and a flip past the target can still lower the peak. */
static void shrink(Ctx *c, Decision *dec) {
    int n = c->g->nodes.n;
    Decision *tmp = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    Eval cur, e;
    pl_evaluate(c, dec, false, &cur, NULL);
    for (int pass = 0; pass < 2; pass++) {
        bool improved = false;
        for (int i = 0; i < n && !pl_out_of_time(c); i++) {
            if (!c->cand[i] || c->forced[i] >= 0 || (dec[i] == DEC_SAVE && !c->read[i])) continue;
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            if (dec[i] == DEC_SAVE) pl_drop_closure(c, tmp, i);
            else tmp[i] = DEC_SAVE;
            pl_evaluate(c, tmp, false, &e, NULL);
            if (e.max_live < cur.max_live) cur = e, improved = true, memcpy(dec, tmp, (size_t)n * sizeof(Decision));
        }
        if (!improved) break;
    }
    free(tmp);
}

/* The smallest peak the planner reaches, with its plan in out: what an
 * impossible budget reports, so it must be exactly the boundary of what
 * plan_make finds. With few free decisions, the exhaustive minimum. Otherwise
 * the smallest of every policy's plan and of dropping everything, then a
 * descent with the search plan_make runs: at a budget one allocation unit
 * below the best peak so far, until the search finds nothing; and what
 * plan_make returns at the final peak itself (the search's plan, or when it
 * finds none this plan polished) must not peak lower. So plan_make at the
 * minimum M fits with a peak of exactly M, at M - 64 it does not (the
 * polish does not change whether the search finds a plan), and no policy
 * peaks below M. */
static int64_t min_peak_search(Ctx *c, Decision *out) {
    int n = c->g->nodes.n;
    int *free_ids = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (c->cand[i] && c->forced[i] < 0) free_ids[k++] = i;
    for (int i = 0; i < n; i++) out[i] = DEC_SAVE;
    pl_apply_forced(c, out);
    if (k <= exhaustive_max() && k <= ENUMERATE_MAX) {
        int64_t best = (int64_t)enumerate(c, out, free_ids, k, 0, true);
        free(free_ids);
        return best;
    }
    free(free_ids);
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    Decision *cut = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    static const char *const seeds[] = {"none",      "full",      "every:2", "every:3", "uniform:2", "sqrt",
                                        "selective", "ops:matmul,attention", "ops:matmul", NULL};
    int64_t best = INT64_MAX, checked = -1;
    Eval e;
    for (size_t t = 0; t < sizeof seeds / sizeof *seeds; t++) {
        if (seeds[t]) {
            policy_decisions(c, seeds[t], dec);
        } else { /* drop everything that may be dropped */
            for (int i = 0; i < n; i++) dec[i] = c->cand[i] ? DEC_RECOMPUTE : DEC_SAVE;
            pl_apply_forced(c, dec);
        }
        evaluate_within(c, dec, best - 1, &e);
        if (e.arena < best) best = e.arena, memcpy(out, dec, (size_t)n * sizeof(Decision));
    }
    for (int iter = 0; iter < 4 * n + 16; iter++) {
        if (pl_out_of_time(c)) break;
        int64_t b = best - ACC_ALIGN;
        bool found = b > 0 && best_of_heuristics(c, dec, b, false);
        if (found) { /* the cut alone can free more than the improved plan keeps: the lower of the two */
            for (int i = 0; i < n; i++) cut[i] = DEC_SAVE;
            pl_apply_forced(c, cut);
            if (pl_cut_to(c, cut, b)) {
                Eval ec;
                pl_evaluate(c, cut, true, &ec, NULL);
                pl_evaluate(c, dec, true, &e, NULL);
                if (ec.arena < e.arena) memcpy(dec, cut, (size_t)n * sizeof(Decision));
            }
            shrink(c, dec);
        } else { /* the boundary: plan_make at best itself must not go lower */
            if (checked == best) break;
            checked = best;
            if (!best_of_heuristics(c, dec, best, true)) { /* plan_make's fallback: this plan, polished */
                memcpy(dec, out, (size_t)n * sizeof(Decision));
                polish(c, dec, best);
            }
        }
        pl_evaluate(c, dec, true, &e, NULL);
        if (e.arena >= best) break;
        best = e.arena;
        memcpy(out, dec, (size_t)n * sizeof(Decision));
    }
    free(dec), free(cut);
    return best;
}

/* min_peak_search within the deadline: --time-limit, else (an error path,
 * bounded even without a limit) PLAN_MIN_PEAK_DEFAULT_S from now. *exact:
 * the search ended by itself. */
static int64_t min_peak(Ctx *c, Decision *out, bool *exact) {
    double deadline = c->deadline;
    if (deadline <= 0) c->deadline = pl_now() + PLAN_MIN_PEAK_DEFAULT_S;
    int64_t best = min_peak_search(c, out);
    *exact = !c->timed_out;
    if (deadline <= 0) c->deadline = 0, c->timed_out = false;
    return best;
}

void plan_make(const Graph *g, const Autodiff *ad, const PlanOptions *o, Plan *p) {
    Ctx c;
    ctx_init(&c, g, ad, o);
    int n = g->nodes.n;
    memset(p, 0, sizeof *p);
    p->dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    for (int i = 0; i < n; i++) p->n_candidates += c.cand[i] && c.forced[i] < 0;
    int64_t budget = o->budget_bytes > 0 ? o->budget_bytes : INT64_MAX;
    if (strcmp(o->policy, "optimal")) {
        policy_decisions(&c, o->policy, p->dec);
        finish(&c, p, PLAN_POLICY);
        ctx_free(&c);
        return;
    }
    for (int i = 0; i < n; i++) p->dec[i] = DEC_SAVE;
    pl_apply_forced(&c, p->dec);
    Eval e;
    evaluate_within(&c, p->dec, budget, &e);
    if (e.arena <= budget) { /* saving everything that may be saved fits */
        p->bound = e.cost;
        finish(&c, p, PLAN_OPTIMAL);
        ctx_free(&c);
        return;
    }
    int *free_ids = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (c.cand[i] && c.forced[i] < 0) free_ids[k++] = i;
    PlanStatus status = PLAN_HEURISTIC;
    if (k <= exhaustive_max() && k <= ENUMERATE_MAX) {
        status = enumerate(&c, p->dec, free_ids, k, budget, false) < INFINITY ? PLAN_OPTIMAL : PLAN_INFEASIBLE;
    } else if (k <= exhaustive_max()) { /* the heuristics' plan, then the proof */
        double incumbent = INFINITY;
        if (best_of_heuristics(&c, p->dec, budget, true)) pl_evaluate(&c, p->dec, false, &e, NULL), incumbent = e.cost;
        bool found;
        status = pl_exact_search(&c, p->dec, free_ids, k, budget, incumbent, &found) ? PLAN_OPTIMAL : PLAN_HEURISTIC;
        if (!found) status = PLAN_INFEASIBLE;
    } else if (best_of_heuristics(&c, p->dec, budget, true)) {
        status = PLAN_HEURISTIC;
    } else {
        bool exact;
        int64_t least = min_peak(&c, p->dec, &exact);
        if (least <= budget) { /* the smallest plan found fits: improve it */
            polish(&c, p->dec, budget);
        } else { /* p->dec: the plan at the smallest peak */
            p->min_peak_bytes = least, p->min_peak_exact = exact;
            status = PLAN_INFEASIBLE;
        }
    }
    p->bound = pl_covering_bound(&c, budget);
    free(free_ids);
    finish(&c, p, status);
    if (p->status == PLAN_OPTIMAL) p->bound = p->recompute_time;
    ctx_free(&c);
}

void plan_free(Plan *p) { free(p->dec); }

const char *plan_status_name(const Plan *p) {
    static const char *const name[] = {"optimal", "heuristic", "policy", "infeasible"};
    return p->status == PLAN_HEURISTIC && p->timed_out ? "time_limit" : name[p->status];
}

void plan_min_peak(const Graph *g, const Autodiff *ad, const PlanOptions *o, Plan *out) {
    Ctx c;
    ctx_init(&c, g, ad, o);
    memset(out, 0, sizeof *out);
    out->dec = acc_xrealloc(NULL, (size_t)g->nodes.n * sizeof(Decision));
    for (int i = 0; i < g->nodes.n; i++) out->n_candidates += c.cand[i] && c.forced[i] < 0;
    out->min_peak_bytes = min_peak(&c, out->dec, &out->min_peak_exact);
    finish(&c, out, PLAN_HEURISTIC);
    ctx_free(&c);
}
