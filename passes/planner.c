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
 * simulation. The lower bound is a covering program over the steps of the
 * save-all schedule (see covering_bound), an LP solved by GLPK, so the
 * reported gap is a proven one. The smallest peak (min_peak), which an
 * impossible budget reports, is the boundary of what this search reaches.
 * User constraints (DSL annotations and patterns, --save/--recompute) bind
 * every policy; a tensor that is both must-save and must-recompute is saved.
 */
#include <fnmatch.h>
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes.h"

/* Free decisions searched exhaustively; ACC_EXHAUSTIVE_MAX overrides it so
 * that benchmarks can compare the heuristic with the optimum: up to 24 every
 * assignment is scored, above that (up to 64) a branch and bound proves the
 * optimum (exact_search). */
#define EXHAUSTIVE_MAX 12
#define ENUMERATE_MAX 24

static int exhaustive_max(void) {
    const char *e = getenv("ACC_EXHAUSTIVE_MAX");
    int k = e && *e ? atoi(e) : EXHAUSTIVE_MAX;
    return k < 0 ? 0 : k > 64 ? 64 : k;
}

typedef struct {
    const Graph *g;
    const Autodiff *ad;
    const PlanOptions *o;
    double *time;  /* [n] forward time */
    int *forced;   /* [n] -1 free, else the Decision the user forces */
    bool *cand;    /* [n] may be dropped */
    bool *read;    /* [n] read by the backward (else an intermediate) */
    int *group;    /* [n] block instance index, -1 at top level */
    int n_groups;
    int n_evals;
    double t_start;
    Schedule scratch; /* reused by evaluations that keep no schedule */
    SchedIndex *index; /* for evaluations that need no allocation */
} Ctx;

typedef struct {
    int64_t max_live, arena; /* arena: -1 unless allocated */
    double cost, flops;      /* flops: -1 unless the schedule was built */
    int peak_step;
} Eval;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Score dec by its exact schedule: max-live and recompute time, the arena
 * too if alloc, the schedule itself into keep if given. Without either, the
 * schedule is measured (sched_measure), not built. */
static void evaluate(Ctx *c, const Decision *dec, bool alloc, Eval *e, Schedule *keep) {
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
}

static bool matches(const char *const *globs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!fnmatch(globs[i], name, 0)) return true;
    return false;
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
        c->cand[i] = ad->live[i] && !(op_table[x->op].flags & (OPF_LEAF | OPF_NORECOMPUTE)) && i != g->loss;
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
    c->t_start = now_s();
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

static void apply_forced(const Ctx *c, Decision *dec) {
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
        long k = strtol(num, &end, 10);
        if (*num && !*end && k >= 1 && k <= 100000) return true;
        snprintf(err, err_len, "policy '%s': expected a positive integer after ':'", p);
        return false;
    }
    if (!strncmp(p, "ops:", 4)) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", p + 4);
        if (!*buf) {
            snprintf(err, err_len, "policy 'ops:' needs a comma-separated list of op names");
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
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) keep[op_lookup(tok)] = true;
        for (int i = 0; i < n; i++) dec[i] = keep[graph_node(g, i)->op] ? DEC_SAVE : DEC_RECOMPUTE;
    }
    free(pick);
    apply_forced(c, dec);
}

/* ---- moves of the search -------------------------------------------------- */

/* Drop node i together with the intermediates that feed it, so that its
 * recomputation recomputes them rather than keeping them alive. */
static void drop_closure(const Ctx *c, const bool *read, Decision *dec, int i) {
    dec[i] = DEC_RECOMPUTE;
    const Node *x = graph_node(c->g, i);
    for (int j = 0; j < x->n_in; j++) {
        int p = x->in[j];
        if (c->cand[p] && c->forced[p] < 0 && !read[p] && dec[p] == DEC_SAVE) drop_closure(c, read, dec, p);
    }
}

/* ---- GLPK: a covering program, min cost x s.t. A x >= need ----------------- */

static int glpk_quiet(void *info, const char *s) { return 1; }

/* Stop branch and bound after a fixed number of subproblems: a node limit,
 * unlike GLPK's time limit, gives the same answer on a loaded machine. */
#define KNAPSACK_NODE_LIMIT 20000
static void node_limit(glp_tree *tree, void *info) {
    int *left = info;
    if (glp_ios_reason(tree) == GLP_ISELECT && --*left <= 0) glp_ios_terminate(tree);
}

/* min cost.x over binary x[0..n) s.t. sum_i a[i * stride + r] x_i >= need[r]
 * for each of n_rows rows (a 0/1 knapsack when n_rows is 1). Returns the
 * optimal cost (and x), or -1 if even taking everything leaves a row short.
 * Items with equal cost and equal coefficients in every row (the same tensor
 * of identical blocks) become one integer variable bounded by their count: no
 * symmetric branching. */
static double cover_min_cost(const double *cost, const double *a, int stride, int n_rows, int n, const double *need,
                             bool *x) {
    bool any = false;
    for (int i = 0; i < n; i++) x[i] = false;
    for (int r = 0; r < n_rows; r++) {
        double total = 0;
        for (int i = 0; i < n; i++) total += a[(size_t)i * stride + r];
        if (total < need[r]) return -1;
        any |= need[r] > 0;
    }
    if (!any) return 0;
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
    glp_term_hook(glpk_quiet, NULL);
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, n_rows);
    glp_add_cols(lp, m);
    int *ind = acc_xrealloc(NULL, (size_t)(m + 1) * sizeof(int));
    double *val = acc_xrealloc(NULL, (size_t)(m + 1) * sizeof(double));
    for (int k = 0; k < m; k++) {
        glp_set_col_kind(lp, k + 1, GLP_IV);
        glp_set_col_bnds(lp, k + 1, GLP_DB, 0, count[k]);
        glp_set_obj_coef(lp, k + 1, cost[rep[k]] * 1e6); /* microseconds: GLPK's tolerances are absolute */
    }
    for (int r = 0; r < n_rows; r++) {
        int len = 0;
        for (int k = 0; k < m; k++)
            if (a[(size_t)rep[k] * stride + r] != 0) ind[++len] = k + 1, val[len] = a[(size_t)rep[k] * stride + r];
        glp_set_row_bnds(lp, r + 1, GLP_LO, need[r], 0);
        glp_set_mat_row(lp, r + 1, len, ind, val);
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
    double best;
    int rc = glp_simplex(lp, &sm) == 0 ? glp_intopt(lp, &io) : -1;
    if ((rc == 0 || rc == GLP_ESTOP) && (glp_mip_status(lp) == GLP_OPT || glp_mip_status(lp) == GLP_FEAS)) {
        best = glp_mip_obj_val(lp) / 1e6;
        for (int k = 0; k < m; k++) count[k] = (int)lround(glp_mip_col_val(lp, k + 1));
        for (int i = 0; i < n; i++)
            if (count[cls[i]] > 0) x[i] = true, count[cls[i]]--;
    } else { /* GLPK gave no answer in time: take everything */
        best = 0;
        for (int i = 0; i < n; i++) x[i] = true, best += cost[i];
    }
    free(ind), free(val), free(cls), free(rep), free(count);
    glp_delete_prob(lp);
    glp_term_hook(NULL, NULL);
    return best;
}

/* Each buffer's last forward reference and first backward reference
 * (recomputations included) in s: -1 and s->steps.n when there is none. */
static void read_spans(const Schedule *s, int *last_fwd, int *first_bwd) {
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

/* ---- the lower bound ----------------------------------------------------------
 *
 * A lower bound on the recompute time of any plan that fits the budget.
 * Take the plan that saves everything it may (P0). At each step t of P0 where
 * more than the budget is live, any plan must free the excess there. The only
 * way is to drop tensors whose forward copy P0 keeps at t although its
 * forward reads are over and whose first backward read comes after t (a
 * dropped tensor read at or before t is recomputed by then and live again).
 * Each such tensor is read by the backward, so dropping it costs at least one
 * recomputation: x_i. Recomputing a node needs its intermediate inputs q (not
 * read by the backward, freed after the forward in P0): each is recomputed
 * too (y_q, which needs q's own intermediate inputs in turn, to any depth) or
 * kept from the forward (k_q), and a kept q is live from its last forward
 * read until the recomputation that reads it - at every forward step after
 * that read, and at the first backward steps unless a recomputation can have
 * run by then (lp_early_charges). The covering program
 *     min  sum time_i x_i + sum time_q y_q
 *     s.t. sum_{i in D(t)} s_i x_i - sum_q s_q (q kept and live at t) >= excess(t)
 * holds for every plan that fits, so its LP relaxation is below the cost of
 * every such plan (the LP alone, with a branch on the one waiver of the early
 * charges: an integer program is slow on deep models, and a time-limited one
 * would make the bound depend on the machine's load). Steps are matched by
 * the node they compute, so the recompute steps of other plans do not shift
 * them. */

typedef struct {
    int q, from_col, node; /* node (column from_col) needs intermediate q */
} Need;

typedef struct {
    int row, col, q; /* at covering row `row`, q's bytes count column col */
} Charge;

typedef struct {
    int t, first, m; /* step of P0, first entry, entries */
    double need;     /* bytes over the budget */
} Row;

typedef struct {
    VEC(Row) v;
    VEC(int) ent_node; /* the droppable tensors of each row */
    VEC(double) ent_size;
} Rows;

typedef struct {
    const Ctx *c;
    glp_prob *lp;
    bool *read;             /* [n] read by the backward */
    int *p_last;            /* [n] last forward step reading node's tensor in P0, -1 if none */
    int *fb;                /* [n] first backward step reading it in P0, ns if none */
    double *act_bytes;      /* [n] bytes of its forward tensor (a kept copy), 0 if none */
    int *col, *ycol, *kcol; /* [n] columns x (drop), y (recompute), k (keep); 0: none yet */
    VEC(Need) needs;
    VEC(Charge) charges;
} Bound;

/* A 0/1 column costing `time` seconds (the objective is in microseconds). */
static int lp_binary(glp_prob *lp, double time) {
    int k = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, k, GLP_DB, 0, 1);
    glp_set_obj_coef(lp, k, time * 1e6);
    return k;
}

/* An intermediate: a candidate the backward does not read, freed after the forward in P0. */
static bool lp_is_intermediate(const Bound *b, int q) {
    const Ctx *c = b->c;
    return !b->read[q] && c->cand[q] && c->forced[q] < 0 && b->p_last[q] >= 0;
}

static void lp_require_inputs(Bound *b, int from_col, int node);

/* The y and k columns of intermediate q, created with what y_q requires. */
static void lp_intermediate(Bound *b, int q) {
    if (b->ycol[q]) return;
    b->ycol[q] = lp_binary(b->lp, b->c->time[q]);
    b->kcol[q] = lp_binary(b->lp, 0);
    lp_require_inputs(b, b->ycol[q], q);
}

/* The x column of read node i, created with what x_i requires. */
static int lp_drop(Bound *b, int i) {
    if (!b->col[i]) {
        b->col[i] = lp_binary(b->lp, b->c->time[i]);
        lp_require_inputs(b, b->col[i], i);
    }
    return b->col[i];
}

/* The recomputation of node (column from_col) needs each intermediate input
 * q: from_col <= y_q + k_q. */
static void lp_require_inputs(Bound *b, int from_col, int node) {
    const Node *x = graph_node(b->c->g, node);
    for (int j = 0; j < x->n_in; j++) {
        int q = x->in[j];
        if (!lp_is_intermediate(b, q)) continue;
        lp_intermediate(b, q);
        int r = glp_add_rows(b->lp, 1), li[4] = {0, from_col, b->ycol[q], b->kcol[q]};
        double lv[4] = {0, 1, -1, -1};
        glp_set_row_bnds(b->lp, r, GLP_UP, 0, 0);
        glp_set_mat_row(b->lp, r, 3, li, lv);
        Need nd = {q, from_col, node};
        VEC_PUSH(b->needs, nd);
    }
}

/* The early rows: backward rows at which at most EARLY_MAX tensors a plan
 * may drop have been read (F(t) below). A size limit, not a time limit. */
#define EARLY_MAX 1

/* Needs by intermediate, then consumer (a total order: deterministic). */
static int cmp_need(const void *a, const void *b) {
    const Need *x = a, *y = b;
    if (x->q != y->q) return x->q - y->q;
    return x->from_col != y->from_col ? x->from_col - y->from_col : x->node - y->node;
}

/* Charges at one early row (the first steps of the backward, where P0
 * usually peaks). Before step t a recomputation runs only when the backward
 * reads, at or before t, a dropped tensor d of F(t) (the droppable tensors
 * read so far), and it reaches node u only if d is u or descends from u. So
 * if intermediate q is kept for u (x_u - y_q > 0) and no such d is dropped,
 * u's recomputation, which reads q, comes after t: q is live at t. One
 * column m per q, m >= x_u - y_q - sum x_d for each u that needs q; q's
 * bytes count m at this row. b->needs sorted by q; anc[j * n + v]: v is an
 * ancestor of f[j]. */
static void lp_early_charges(Bound *b, int row, const int *f, int n_f, const bool *anc) {
    int n = b->c->g->nodes.n;
    int *li = acc_xrealloc(NULL, (size_t)(n_f + 4) * sizeof(int));
    double *lv = acc_xrealloc(NULL, (size_t)(n_f + 4) * sizeof(double));
    for (int k = 0; k < b->needs.n;) {
        int q = b->needs.v[k].q, m = lp_binary(b->lp, 0);
        for (; k < b->needs.n && b->needs.v[k].q == q; k++) {
            const Need *nd = &b->needs.v[k];
            int len = 0;
            bool free_q = false; /* u may be recomputed by t whatever the plan */
            li[++len] = m, lv[len] = 1;
            li[++len] = nd->from_col, lv[len] = -1;
            li[++len] = b->ycol[q], lv[len] = 1;
            for (int j = 0; j < n_f; j++) {
                if (f[j] != nd->node && !anc[(size_t)j * n + nd->node]) continue;
                if (f[j] == nd->node || b->c->forced[f[j]] == DEC_RECOMPUTE) free_q = true;
                else li[++len] = b->col[f[j]], lv[len] = 1;
            }
            if (free_q) continue;
            int r = glp_add_rows(b->lp, 1);
            glp_set_row_bnds(b->lp, r, GLP_LO, 0, 0);
            glp_set_mat_row(b->lp, r, len, li, lv);
        }
        Charge ch = {row, m, q};
        VEC_PUSH(b->charges, ch);
    }
    free(li), free(lv);
}

/* F: the first EARLY_MAX + 1 tensors the backward reads that a plan may drop,
 * by P0's first read (ties by id), with their x columns; the early rows'
 * charges. Returns how many F holds (f[0] is the early charges' waiver). */
static int lp_early(Bound *b, const Row *rows, int n_rows, int fbs, int ns, int *f) {
    const Ctx *c = b->c;
    int n = c->g->nodes.n, n_f = 0;
    for (int i = 0; i < n; i++) {
        if (!b->read[i] || !c->cand[i] || c->forced[i] == DEC_SAVE || b->fb[i] >= ns) continue;
        int k = n_f < EARLY_MAX + 1 ? n_f++ : EARLY_MAX + 1;
        for (; k > 0 && b->fb[f[k - 1]] > b->fb[i]; k--) /* insertion, keeping the first */
            if (k < EARLY_MAX + 1) f[k] = f[k - 1];
        if (k < EARLY_MAX + 1) f[k] = i;
    }
    size_t anc_len = (size_t)(EARLY_MAX + 1) * (size_t)n;
    bool *anc = acc_xrealloc(NULL, anc_len * sizeof(bool));
    for (size_t k = 0; k < anc_len; k++) anc[k] = false;
    for (int j = 0; j < n_f; j++) {
        bool *a = anc + (size_t)j * n;
        for (int v = f[j]; v >= 0; v--) { /* ids are topological: one pass down */
            if (v != f[j] && !a[v]) continue;
            const Node *x = graph_node(c->g, v);
            for (int k = 0; k < x->n_in; k++) a[x->in[k]] = true;
        }
        if (c->forced[f[j]] != DEC_RECOMPUTE) lp_drop(b, f[j]);
    }
    if (b->needs.n) qsort(b->needs.v, (size_t)b->needs.n, sizeof *b->needs.v, cmp_need);
    for (int k = 0; k < n_rows; k++) {
        int m = 0;
        while (m < n_f && b->fb[f[m]] <= rows[k].t) m++;
        if (m > EARLY_MAX) break;
        if (rows[k].t > fbs) lp_early_charges(b, k, f, m, anc);
    }
    free(anc);
    return n_f;
}

/* The covering rows. They are nearly nested (a step's droppable set grows
 * through the forward pass and shrinks through the backward), so row r is
 * written as a column S_r >= need_r defined by S_r = S_{r-1} + (row r -
 * row r-1): the same program, with a few entries per row instead of all of
 * them. Kept intermediates count at forward rows after their last forward
 * read, and at early rows through the charges. */
static void lp_cover_rows(Bound *b, const Row *rows, int n_rows, const int *ent_node, const double *ent_size,
                          int fbs) {
    int n = b->c->g->nodes.n, n_cols = glp_get_num_cols(b->lp) + 1;
    double *prev = acc_xrealloc(NULL, (size_t)n_cols * sizeof(double));
    double *cur = acc_xrealloc(NULL, (size_t)n_cols * sizeof(double));
    int *ind = acc_xrealloc(NULL, (size_t)(n_cols + 3) * sizeof(int));
    double *val = acc_xrealloc(NULL, (size_t)(n_cols + 3) * sizeof(double));
    for (int k = 0; k < n_cols; k++) prev[k] = 0;
    int prev_s = 0;
    for (int k = 0; k < n_rows; k++) {
        const Row *rw = &rows[k];
        for (int j = 0; j < n_cols; j++) cur[j] = 0;
        for (int e = rw->first; e < rw->first + rw->m; e++) /* megabytes: keep the matrix well scaled */
            cur[b->col[ent_node[e]]] = ent_size[e] / 1e6;
        for (int q = 0; q < n && rw->t <= fbs; q++)
            if (b->kcol[q] && b->p_last[q] < rw->t) cur[b->kcol[q]] = -b->act_bytes[q] / 1e6;
        for (int j = 0; j < b->charges.n; j++)
            if (b->charges.v[j].row == k) cur[b->charges.v[j].col] = -b->act_bytes[b->charges.v[j].q] / 1e6;
        int sc = glp_add_cols(b->lp, 1), m = 0;
        glp_set_col_bnds(b->lp, sc, GLP_LO, rw->need / 1e6, 0);
        ind[++m] = sc, val[m] = 1;
        if (prev_s) ind[++m] = prev_s, val[m] = -1;
        for (int j = 1; j < n_cols; j++)
            if (cur[j] != prev[j]) ind[++m] = j, val[m] = prev[j] - cur[j];
        int r = glp_add_rows(b->lp, 1);
        glp_set_row_bnds(b->lp, r, GLP_FX, 0, 0);
        glp_set_mat_row(b->lp, r, m, ind, val);
        double *tmp = prev;
        prev = cur, cur = tmp, prev_s = sc;
    }
    free(prev), free(cur), free(ind), free(val);
}

/* The optimum of the LP in seconds (warm: from the basis of the last solve);
 * INFINITY if infeasible, 0 if the simplex stops at its iteration limit (a
 * count, so the answer does not depend on the machine's load). */
static double lp_value(glp_prob *lp, bool warm) {
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.it_lim = 100 * (glp_get_num_rows(lp) + glp_get_num_cols(lp));
    sm.presolve = warm ? GLP_OFF : GLP_ON;
    if (warm) sm.meth = GLP_DUALP;
    int rc = glp_simplex(lp, &sm);
    if (rc == 0 && glp_get_status(lp) == GLP_OPT) return glp_get_obj_val(lp) / 1e6;
    if (rc == GLP_ENOPFS || (rc == 0 && glp_get_status(lp) == GLP_NOFEAS)) return INFINITY;
    return warm ? lp_value(lp, false) : 0;
}

/* The rows of the covering program: at each step of P0 (schedule s) where
 * more than the budget is live, the tensors whose dropping frees room there
 * (entries ent_node/ent_size; a step with the same entries as the last row
 * and no more need adds nothing). Returns the number of rows, -1 if at some
 * step nothing can make room (no plan fits). */
static int bound_rows(const Ctx *c, const Schedule *s, const int *last_fwd, const int *first_bwd, int64_t budget,
                      Rows *rows) {
    int n = c->g->nodes.n, nb = s->bufs.n, ns = s->steps.n, fbs = s->first_bwd_step;
    int64_t live = 0;
    int64_t *delta = acc_xrealloc(NULL, (size_t)(ns + 1) * sizeof(int64_t));
    memset(delta, 0, (size_t)(ns + 1) * sizeof(int64_t));
    for (int k = 0; k < nb; k++) {
        const Buffer *x = &s->bufs.v[k];
        if (x->persistent) live += x->size_bytes;
        else if (x->first >= 0) delta[x->first] += x->size_bytes, delta[x->last + 1] -= x->size_bytes;
    }
    double *size = acc_xrealloc(NULL, (size_t)n * sizeof(double)), prev_need = 0;
    int n_rows = 0, prev_m = -1;
    for (int t = 0; t < ns; t++) {
        live += delta[t];
        double need = (double)(live - budget);
        if (need <= 0) continue;
        for (int i = 0; i < n; i++) size[i] = 0;
        for (int k = 0; k < nb; k++) {
            const Buffer *x = &s->bufs.v[k];
            int nd = x->node;
            if (x->persistent || (x->kind != BUF_ACT && x->kind != BUF_AUX) || x->first < 0 || x->first >= fbs ||
                !(x->first <= t && t <= x->last))
                continue;
            if (t <= last_fwd[k] || first_bwd[k] <= t) continue;
            if (c->cand[nd] && c->forced[nd] < 0) size[nd] += (double)x->size_bytes;
        }
        int m = 0, first = rows->ent_node.n;
        for (int i = 0; i < n; i++)
            if (size[i] > 0) {
                VEC_PUSH(rows->ent_node, i);
                VEC_PUSH(rows->ent_size, size[i]);
                m++;
            }
        if (m == 0) { /* nothing can make room here */
            n_rows = -1;
            break;
        }
        if (m == prev_m && need <= prev_need) {
            rows->ent_node.n = rows->ent_size.n = first;
            continue;
        }
        prev_m = m, prev_need = need;
        Row r = {t, first, m, need};
        VEC_PUSH(rows->v, r);
        n_rows++;
    }
    free(delta), free(size);
    return n_rows;
}

/* The bound for budget (INFINITY: no plan fits; 0 when there is nothing to free). */
static double covering_bound(Ctx *c, int64_t budget) {
    int n = c->g->nodes.n;
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    for (int i = 0; i < n; i++) dec[i] = DEC_SAVE;
    apply_forced(c, dec);
    Schedule s;
    Eval e;
    evaluate(c, dec, false, &e, &s);
    int nb = s.bufs.n, ns = s.steps.n, fbs = s.first_bwd_step;
    int *last_fwd = acc_xrealloc(NULL, (size_t)nb * sizeof(int));
    int *first_bwd = acc_xrealloc(NULL, (size_t)nb * sizeof(int));
    read_spans(&s, last_fwd, first_bwd);
    Rows rows = {{0}, {0}, {0}};
    int n_rows = bound_rows(c, &s, last_fwd, first_bwd, budget, &rows);
    double bound = n_rows < 0 ? INFINITY : 0;
    if (n_rows > 0) {
        glp_term_hook(glpk_quiet, NULL);
        Bound b = {c, glp_create_prob(), NULL, NULL, NULL, NULL, NULL, NULL, NULL, {0}, {0}};
        glp_set_obj_dir(b.lp, GLP_MIN);
        int **cols[] = {&b.p_last, &b.fb, &b.col, &b.ycol, &b.kcol};
        for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) *cols[k] = acc_xrealloc(NULL, (size_t)n * sizeof(int));
        b.read = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
        b.act_bytes = acc_xrealloc(NULL, (size_t)n * sizeof(double));
        read_by_backward(c, b.read);
        for (int i = 0; i < n; i++) b.p_last[i] = -1, b.fb[i] = ns, b.act_bytes[i] = b.col[i] = b.ycol[i] = b.kcol[i] = 0;
        for (int k = 0; k < nb; k++) {
            const Buffer *x = &s.bufs.v[k];
            if ((x->kind != BUF_ACT && x->kind != BUF_AUX) || x->first < 0 || x->first >= fbs) continue;
            if (x->kind == BUF_ACT) b.p_last[x->node] = last_fwd[k], b.act_bytes[x->node] = (double)x->size_bytes;
            if (first_bwd[k] < b.fb[x->node]) b.fb[x->node] = first_bwd[k];
        }
        for (int k = 0; k < rows.ent_node.n; k++) lp_drop(&b, rows.ent_node.v[k]);
        int f[EARLY_MAX + 1];
        int n_f = lp_early(&b, rows.v.v, n_rows, fbs, ns, f);
        lp_cover_rows(&b, rows.v.v, n_rows, rows.ent_node.v, rows.ent_size.v, fbs);
        glp_scale_prob(b.lp, GLP_SF_AUTO);
        int w = n_f > 0 && b.charges.n ? b.col[f[0]] : 0;
        if (w) { /* the waiver of the early charges is 0 or 1: the smaller of both */
            glp_set_col_bnds(b.lp, w, GLP_FX, 0, 0);
            bound = lp_value(b.lp, false);
            if (c->time[f[0]] < bound) { /* else dropping f[0] alone costs more */
                glp_set_col_bnds(b.lp, w, GLP_FX, 1, 1);
                double v1 = lp_value(b.lp, true);
                bound = v1 < bound ? v1 : bound;
            }
        } else {
            bound = lp_value(b.lp, false);
        }
        glp_delete_prob(b.lp);
        glp_term_hook(NULL, NULL);
        VEC_FREE(b.needs), VEC_FREE(b.charges);
        for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) free(*cols[k]);
        free(b.read), free(b.act_bytes);
    }
    sched_free(&s);
    VEC_FREE(rows.v), VEC_FREE(rows.ent_node), VEC_FREE(rows.ent_size);
    free(dec), free(last_fwd), free(first_bwd);
    return bound;
}

/* Recompute time of dropping node i with drop_closure: i and the saved
 * intermediates that feed it. stamp[n] marks what was counted (with mark). */
static double closure_cost(const Ctx *c, const bool *read, const Decision *dec, int i, int *stamp, int mark) {
    stamp[i] = mark;
    double t = c->time[i];
    const Node *x = graph_node(c->g, i);
    for (int j = 0; j < x->n_in; j++) {
        int p = x->in[j];
        if (c->cand[p] && c->forced[p] < 0 && !read[p] && dec[p] == DEC_SAVE && stamp[p] != mark)
            t += closure_cost(c, read, dec, p, stamp, mark);
    }
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
 * last forward read and before its first backward read. */
static bool cut_to(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    double *a = acc_xrealloc(NULL, (size_t)n * CUT_ROWS * sizeof(double)); /* item k, row r: a[k * CUT_ROWS + r] */
    double *cost = acc_xrealloc(NULL, (size_t)n * sizeof(double)), need[CUT_ROWS];
    int *id = acc_xrealloc(NULL, (size_t)n * sizeof(int)), *item = acc_xrealloc(NULL, (size_t)n * sizeof(int));
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
        evaluate(c, dec, false, &e, &s);
        if (e.max_live <= target) {
            sched_free(&s);
            ok = true;
            break;
        }
        int nb = s.bufs.n, ns = s.steps.n;
        last_fwd = acc_xrealloc(last_fwd, (size_t)nb * sizeof(int));
        first_bwd = acc_xrealloc(first_bwd, (size_t)nb * sizeof(int));
        live = acc_xrealloc(live, (size_t)(ns + 1) * sizeof(int64_t));
        read_spans(&s, last_fwd, first_bwd);
        memset(live, 0, (size_t)(ns + 1) * sizeof(int64_t));
        int64_t persistent = 0;
        for (int k = 0; k < nb; k++) {
            const Buffer *b = &s.bufs.v[k];
            if (b->persistent) persistent += b->size_bytes;
            else if (b->first >= 0) live[b->first] += b->size_bytes, live[b->last + 1] -= b->size_bytes;
        }
        int64_t run = 0;
        for (int t = 0; t < ns; t++) run += live[t], live[t] = persistent + run;
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
                    item[i] = m, id[m] = i, cost[m] = closure_cost(c, c->read, dec, i, stamp, ++mark);
                    for (int q = 0; q < CUT_ROWS; q++) a[(size_t)m * CUT_ROWS + q] = 0;
                    m++;
                }
                a[(size_t)item[i] * CUT_ROWS + r] += (double)b->size_bytes;
                any = true;
            }
            if (!any) break; /* nothing makes room at t */
            n_rows++;
            if (cover_min_cost(cost, a, CUT_ROWS, n_rows, m, need, x) < 0)
                for (int k = 0; k < m; k++) x[k] = a[(size_t)k * CUT_ROWS + r] > 0 || x[k];
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            for (int k = 0; k < m; k++)
                if (x[k]) drop_closure(c, c->read, tmp, id[k]);
            made = true;
            Eval et;
            evaluate(c, tmp, false, &et, NULL);
            if (et.max_live <= target || n_rows == CUT_ROWS) break;
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
        if (c->o->time_limit_s > 0 && now_s() - c->t_start > c->o->time_limit_s) break;
    }
    free(a), free(cost), free(id), free(item), free(stamp), free(fwd_at), free(bwd_at), free(x), free(tmp);
    free(last_fwd), free(first_bwd), free(live);
    return ok;
}

static const Decision *cmp_dec;
static const double *cmp_time;
static int cmp_by_time(const void *a, const void *b) {
    double x = cmp_time[*(const int *)a], y = cmp_time[*(const int *)b];
    return x > y ? -1 : x < y ? 1 : *(const int *)a - *(const int *)b;
}

/* Save again, most expensive first, what the plan can afford to keep. */
static void restore(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    VEC(int) dropped = {0};
    for (int i = 0; i < n; i++)
        if (dec[i] == DEC_RECOMPUTE && c->forced[i] < 0) VEC_PUSH(dropped, i);
    cmp_time = c->time;
    cmp_dec = dec;
    if (dropped.n) qsort(dropped.v, (size_t)dropped.n, sizeof(int), cmp_by_time);
    Eval cur;
    evaluate(c, dec, false, &cur, NULL);
    for (int k = 0; k < dropped.n; k++) {
        int i = dropped.v[k];
        dec[i] = DEC_SAVE;
        Eval e;
        evaluate(c, dec, false, &e, NULL);
        if (e.max_live <= target && e.cost <= cur.cost) cur = e;
        else dec[i] = DEC_RECOMPUTE;
        if (c->o->time_limit_s > 0 && now_s() - c->t_start > c->o->time_limit_s) break;
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
        if (c->o->time_limit_s > 0 && now_s() - c->t_start > c->o->time_limit_s) break;
        Eval base;
        evaluate(c, dec, false, &base, NULL);
        int nd = 0, nsv = 0;
        bool improved = false;
        for (int i = 0; i < n && !improved; i++) {
            if (!c->cand[i] || c->forced[i] >= 0 || !read[i]) continue;
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            if (dec[i] == DEC_SAVE) drop_closure(c, read, tmp, i);
            else tmp[i] = DEC_SAVE;
            Eval e;
            evaluate(c, tmp, false, &e, NULL);
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
        for (size_t k = 0; k < np && k < 8 && !improved; k++) {
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            drop_closure(c, read, tmp, drops[(int)pairs[k][2]].node);
            tmp[saves[(int)pairs[k][3]].node] = DEC_SAVE;
            Eval e;
            evaluate(c, tmp, false, &e, NULL);
            if (e.max_live <= target && e.cost < base.cost - 1e-12) {
                memcpy(dec, tmp, (size_t)n * sizeof(Decision));
                improved = true;
            }
        }
        if (!improved) break;
    }
    free(tmp), free(drops), free(saves), free(pairs);
}

/* Live bytes at each anchor step of dec's schedule - the forward steps, the
 * seed and the backward steps, which every schedule of the graph has in the
 * same order - counting the recompute steps just before an anchor with it
 * (the most live at any of them). prof[] gets one entry per anchor (persistent
 * bytes included); returns how many. */
static int anchor_profile(Ctx *c, const Decision *dec, int64_t *prof, Eval *e) {
    c->n_evals++;
    Schedule *s = &c->scratch;
    sched_rebuild(c->g, c->ad, dec, c->o->optimizer, s);
    int ns = s->steps.n;
    int64_t *delta = acc_xrealloc(NULL, (size_t)(ns + 1) * sizeof(int64_t)), persistent = 0;
    memset(delta, 0, (size_t)(ns + 1) * sizeof(int64_t));
    for (int k = 0; k < s->bufs.n; k++) {
        const Buffer *b = &s->bufs.v[k];
        if (b->persistent) persistent += b->size_bytes;
        else if (b->first >= 0) delta[b->first] += b->size_bytes, delta[b->last + 1] -= b->size_bytes;
    }
    int64_t run = 0, seg = 0, peak = 0;
    int na = 0;
    e->cost = 0;
    for (int t = 0; t < ns; t++) {
        run += delta[t];
        seg = run > seg ? run : seg;
        peak = run > peak ? run : peak;
        if (s->steps.v[t].kind == ST_RECOMPUTE) {
            e->cost += c->time[s->steps.v[t].node];
            continue;
        }
        prof[na++] = persistent + seg;
        seg = 0;
    }
    e->max_live = persistent + peak;
    e->arena = -1, e->flops = -1, e->peak_step = -1;
    free(delta);
    return na;
}

/* Bounds of the flip search: at most FLIP_SOLVES programs per round, each
 * stopped after FLIP_NODE_LIMIT subproblems, and all of them together after
 * FLIP_WORK units of work (subproblems x nonzeros of the program, with GLPK's
 * cuts about a microsecond each on the development machine), on plans with
 * at most FLIP_MAX_ENTRIES flips and interacting pairs x anchor steps (the
 * small models where trades of several tensors matter; deep stacks of
 * identical blocks are cut close to their bound already): deterministic, and
 * well under a second. */
#define FLIP_SOLVES 8
#define FLIP_NODE_LIMIT 1000
#define FLIP_WORK 6e5
#define FLIP_MAX_ENTRIES 60000

/* Intermediates drop_closure(i) would drop with i: into out (stamped). */
static int closure_list(const Ctx *c, const Decision *dec, int i, int *stamp, int mark, int *out, int m) {
    const Node *x = graph_node(c->g, i);
    for (int j = 0; j < x->n_in; j++) {
        int p = x->in[j];
        if (c->cand[p] && c->forced[p] < 0 && !c->read[p] && dec[p] == DEC_SAVE && stamp[p] != mark) {
            stamp[p] = mark;
            out[m++] = p;
            m = closure_list(c, dec, p, stamp, mark, out, m);
        }
    }
    return m;
}

/* The flip search's program around plan dec. Columns 1..n_flips: x_f, flip f
 * (drop a saved tensor the backward reads, with the intermediates it needs;
 * save a dropped one; keep a dropped intermediate). Then one column r_j per
 * intermediate j that may be recomputed: 1 when it is. The objective is the
 * recompute time of the flipped plan less `*constant`, exactly: a read tensor
 * costs its time when dropped; an intermediate when dropped and some
 * recomputed node reads it (r_j >= r_k for each consumer k, unless j is
 * kept), or when a flip's closure drops it (r_j >= x_f) - so two flips that
 * share the intermediates their recomputation needs pay for them once. */
static glp_prob *flip_program(const Ctx *c, const Decision *dec, const int *flip, int n_flips, double *constant,
                              int *rcol) {
    int n = c->g->nodes.n;
    int *xcol = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    int *stamp = acc_xrealloc(NULL, (size_t)n * sizeof(int)), *list = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) xcol[i] = rcol[i] = 0, stamp[i] = -1;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, n_flips);
    *constant = 0;
    for (int f = 0; f < n_flips; f++) {
        int i = flip[f];
        xcol[i] = f + 1;
        glp_set_col_kind(lp, f + 1, GLP_BV);
        if (c->read[i]) glp_set_obj_coef(lp, f + 1, (dec[i] == DEC_SAVE ? 1 : -1) * c->time[i] * 1e6);
    }
    for (int i = 0; i < n; i++)
        if (c->cand[i] && c->read[i] && dec[i] == DEC_RECOMPUTE) *constant += c->time[i];
    /* r columns: dropped intermediates, and those some flip's closure drops */
    for (int f = 0; f < n_flips; f++)
        if (c->read[flip[f]] && dec[flip[f]] == DEC_SAVE) {
            int m = closure_list(c, dec, flip[f], stamp, f, list, 0);
            for (int k = 0; k < m; k++) rcol[list[k]] = -1;
        }
    for (int i = 0; i < n; i++)
        if (c->cand[i] && !c->read[i] && (dec[i] == DEC_RECOMPUTE || rcol[i] < 0)) {
            rcol[i] = glp_add_cols(lp, 1);
            glp_set_col_bnds(lp, rcol[i], GLP_DB, 0, 1);
            glp_set_obj_coef(lp, rcol[i], c->time[i] * 1e6);
        }
    int ind[4];
    double val[4];
    for (int f = 0; f < n_flips; f++) /* r_j >= x_f for j in f's closure */
        if (c->read[flip[f]] && dec[flip[f]] == DEC_SAVE) {
            int m = closure_list(c, dec, flip[f], stamp, n + f, list, 0);
            for (int k = 0; k < m; k++) {
                int r = glp_add_rows(lp, 1);
                ind[1] = rcol[list[k]], val[1] = 1, ind[2] = f + 1, val[2] = -1;
                glp_set_row_bnds(lp, r, GLP_LO, 0, 0);
                glp_set_mat_row(lp, r, 2, ind, val);
            }
        }
    for (int k = 0; k < n; k++) { /* r_j >= (k recomputed) - x_j for dropped j read by k */
        const Node *x = graph_node(c->g, k);
        if (!c->cand[k]) continue;
        for (int q = 0; q < x->n_in; q++) {
            int j = x->in[q];
            if (!rcol[j] || dec[j] != DEC_RECOMPUTE) continue;
            int len = 0;
            double lo = 0;
            ind[++len] = rcol[j], val[len] = 1;
            if (xcol[j]) ind[++len] = xcol[j], val[len] = 1;
            if (!c->read[k]) {
                if (!rcol[k]) continue;
                ind[++len] = rcol[k], val[len] = -1;
            } else if (xcol[k]) { /* k recomputed: cur_k + (1 - 2 cur_k) x_k */
                lo = dec[k] == DEC_RECOMPUTE;
                ind[++len] = xcol[k], val[len] = dec[k] == DEC_RECOMPUTE ? 1 : -1;
            } else if (dec[k] == DEC_RECOMPUTE) {
                lo = 1;
            } else {
                continue;
            }
            int r = glp_add_rows(lp, 1);
            glp_set_row_bnds(lp, r, GLP_LO, lo, 0);
            glp_set_mat_row(lp, r, len, ind, val);
        }
    }
    free(xcol), free(stamp), free(list);
    return lp;
}

/* dec with flips f[0..m) applied into out: the drops first (each with the
 * intermediates of dec it needs), then the saves. */
static void apply_flips(const Ctx *c, const Decision *dec, const int *flip, const int *f, int m, Decision *out) {
    memcpy(out, dec, (size_t)c->g->nodes.n * sizeof(Decision));
    for (int k = 0; k < m; k++)
        if (dec[flip[f[k]]] == DEC_SAVE) drop_closure(c, c->read, out, flip[f[k]]);
    for (int k = 0; k < m; k++)
        if (dec[flip[f[k]]] == DEC_RECOMPUTE) out[flip[f[k]]] = DEC_SAVE;
}

/* The flip program's callback: the node limit, and the plan itself (no flip)
 * as the first incumbent, so that branch and bound prunes from the start. */
typedef struct {
    int nodes_left;
    const double *start; /* [1 + columns] */
    bool given;
} FlipCb;

static void flip_callback(glp_tree *tree, void *info) {
    FlipCb *cb = info;
    if (glp_ios_reason(tree) == GLP_IHEUR && !cb->given) {
        cb->given = true;
        glp_ios_heur_sol(tree, cb->start);
    }
    if (glp_ios_reason(tree) == GLP_ISELECT && --cb->nodes_left <= 0) glp_ios_terminate(tree);
}

/* One memory row of the flip program: at anchor k, the live bytes with the
 * flips' (and interacting pairs') changes added stay within target. */
static void flip_row(glp_prob *lp, const double *delta, int na, int k, int n_flips, int n_pairs, const int *pcol,
                     double room, int *ind, double *val) {
    int len = 0;
    for (int f = 0; f < n_flips + n_pairs; f++)
        if (delta[(size_t)f * na + k] != 0 && (f < n_flips || pcol[f - n_flips]))
            ind[++len] = f < n_flips ? f + 1 : pcol[f - n_flips], val[len] = delta[(size_t)f * na + k] / 1e3;
    int r = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, r, GLP_UP, 0, room / 1e3); /* kilobytes: keep the matrix well scaled */
    glp_set_mat_row(lp, r, len, ind, val);
}

/* Flip search: from a plan that fits, price every single flip by
 * simulation - its change of the live bytes at every anchor step - and let
 * GLPK choose the set of flips with the least recompute time (exact, see
 * flip_program) such that, with the changes of live bytes added up, every
 * step stays within target. A flip and a flip of one of its node's inputs
 * interact (a recomputation reads the other's tensor): each such pair is
 * simulated too and its interaction counted when both are chosen. Memory rows
 * are added lazily: first the steps one flip alone could push over the
 * target, then each step the simulation of a chosen set finds over it. A set
 * that the sum says fits but the simulation does not is repaired (cut_to and
 * restore) if that keeps it cheaper, else excluded, and the program solved
 * again. Repeat from the improved plan. This finds trades of several saves for
 * several drops at once (save three cheap norms, drop two activations; drop q
 * and k of an attention, which share the projection their recomputation
 * needs, and save five tensors of the MLP) that one-for-one exchanges and the
 * peak cuts cannot reach. */
static void flip_search(Ctx *c, Decision *dec, int64_t target, int64_t budget) {
    int n = c->g->nodes.n, ns_max = 2 * n + 2;
    int64_t *base_prof = acc_xrealloc(NULL, (size_t)ns_max * sizeof(int64_t));
    int64_t *prof = acc_xrealloc(NULL, (size_t)ns_max * sizeof(int64_t));
    bool *in_lp = acc_xrealloc(NULL, (size_t)ns_max * sizeof(bool));
    Decision *tmp = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    int *flip = acc_xrealloc(NULL, (size_t)n * sizeof(int)), n_flips = 0;
    double *delta = NULL; /* [flip * na + anchor]; pairs after the flips: their interaction */
    int *ind = acc_xrealloc(NULL, (size_t)(n * (ACC_MAX_IN + 1) + 1) * sizeof(int));
    double *val = acc_xrealloc(NULL, (size_t)(n * (ACC_MAX_IN + 1) + 1) * sizeof(double));
    bool *pick = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
    int *picked = acc_xrealloc(NULL, (size_t)n * sizeof(int)), *fcol = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    int *pair = acc_xrealloc(NULL, (size_t)n * 2 * ACC_MAX_IN * sizeof(int)), n_pairs = 0;
    int *pcol = acc_xrealloc(NULL, (size_t)n * ACC_MAX_IN * sizeof(int));
    int *rcol_of = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    double *recomputed = acc_xrealloc(NULL, (size_t)n * sizeof(double)), *start = NULL;
    double work = 0;
    for (int round = 0; round < n; round++) {
        if (c->o->time_limit_s > 0 && now_s() - c->t_start > c->o->time_limit_s) break;
        Eval base, e;
        int na = anchor_profile(c, dec, base_prof, &base);
        n_flips = 0;
        for (int i = 0; i < n; i++)
            if (c->cand[i] && c->forced[i] < 0 && (c->read[i] || dec[i] == DEC_RECOMPUTE)) flip[n_flips++] = i;
        if (work >= FLIP_WORK || (double)n_flips * na > FLIP_MAX_ENTRIES) break;
        for (int i = 0; i < n; i++) fcol[i] = -1;
        for (int f = 0; f < n_flips; f++) fcol[flip[f]] = f;
        n_pairs = 0;
        for (int f = 0; f < n_flips; f++) {
            const Node *x = graph_node(c->g, flip[f]);
            for (int q = 0; q < x->n_in; q++) {
                int g2 = fcol[x->in[q]];
                bool dup = g2 < 0;
                for (int p = 0; p < n_pairs && !dup; p++) dup = pair[2 * p] == g2 && pair[2 * p + 1] == f;
                if (!dup) pair[2 * n_pairs] = g2, pair[2 * n_pairs + 1] = f, n_pairs++;
            }
        }
        if (work >= FLIP_WORK || (double)(n_flips + n_pairs) * na > FLIP_MAX_ENTRIES) break;
        delta = acc_xrealloc(delta, (size_t)(n_flips + n_pairs) * (size_t)na * sizeof(double));
        for (int f = 0; f < n_flips + n_pairs; f++) {
            int one[1] = {f};
            apply_flips(c, dec, flip, f < n_flips ? one : &pair[2 * (f - n_flips)], f < n_flips ? 1 : 2, tmp);
            anchor_profile(c, tmp, prof, &e);
            double *d = &delta[(size_t)f * na];
            for (int k = 0; k < na; k++) d[k] = (double)(prof[k] - base_prof[k]);
            if (f < n_flips) continue;
            const double *d1 = &delta[(size_t)pair[2 * (f - n_flips)] * na];
            const double *d2 = &delta[(size_t)pair[2 * (f - n_flips) + 1] * na];
            for (int k = 0; k < na; k++) d[k] -= d1[k] + d2[k]; /* the interaction */
        }
        glp_term_hook(glpk_quiet, NULL);
        double constant;
        glp_prob *lp = flip_program(c, dec, flip, n_flips, &constant, rcol_of);
        sched_rebuild(c->g, c->ad, dec, c->o->optimizer, &c->scratch);
        for (int i = 0; i < n; i++) recomputed[i] = 0;
        for (int t = 0; t < c->scratch.steps.n; t++)
            if (c->scratch.steps.v[t].kind == ST_RECOMPUTE) recomputed[c->scratch.steps.v[t].node] = 1;
        for (int p = 0; p < n_pairs; p++) { /* z_p = x_a x_b for the pairs that interact */
            const double *d = &delta[(size_t)(n_flips + p) * na];
            bool more = false, less = false; /* the pair needs more / less memory than the sum */
            for (int k = 0; k < na; k++) more |= d[k] > 0, less |= d[k] < 0;
            pcol[p] = 0;
            if (!more && !less) continue;
            int z = pcol[p] = glp_add_cols(lp, 1), xa = pair[2 * p] + 1, xb = pair[2 * p + 1] + 1;
            glp_set_col_bnds(lp, z, GLP_DB, 0, 1);
            int li[4] = {0, z, xa, xb};
            double lv[4] = {0, 1, -1, -1};
            if (more) { /* z >= x_a + x_b - 1 */
                int r = glp_add_rows(lp, 1);
                glp_set_row_bnds(lp, r, GLP_LO, -1, 0);
                glp_set_mat_row(lp, r, 3, li, lv);
            }
            for (int q = 0; q < 2 && less; q++) { /* z <= x_a, z <= x_b */
                int r = glp_add_rows(lp, 1);
                li[2] = q ? xb : xa;
                glp_set_row_bnds(lp, r, GLP_UP, 0, 0);
                glp_set_mat_row(lp, r, 2, li, lv);
            }
        }
        for (int k = 0; k < na; k++) { /* the steps one flip alone pushes over the target */
            double worst = 0;
            for (int f = 0; f < n_flips; f++) worst = delta[(size_t)f * na + k] > worst ? delta[(size_t)f * na + k] : worst;
            in_lp[k] = (double)base_prof[k] + worst > (double)target;
            if (in_lp[k]) flip_row(lp, delta, na, k, n_flips, n_pairs, pcol, (double)(target - base_prof[k]), ind, val);
        }
        bool improved = false;
        for (int solve = 0; solve < FLIP_SOLVES && !improved; solve++) {
            double nnz = glp_get_num_nz(lp) + 1;
            if (work + nnz >= FLIP_WORK) break;
            glp_iocp io;
            glp_init_iocp(&io);
            io.msg_lev = GLP_MSG_OFF;
            io.presolve = GLP_ON;
            io.mir_cuts = io.cov_cuts = GLP_ON;
            int nodes_given = (FLIP_WORK - work) / nnz < FLIP_NODE_LIMIT ? (int)((FLIP_WORK - work) / nnz) : FLIP_NODE_LIMIT;
            int nc = glp_get_num_cols(lp);
            start = acc_xrealloc(start, (size_t)(nc + 1) * sizeof(double));
            for (int j = 0; j <= nc; j++) start[j] = 0;
            for (int i = 0; i < n; i++) /* the intermediates the plan recomputes */
                if (rcol_of[i] > 0) start[rcol_of[i]] = recomputed[i];
            FlipCb cb = {nodes_given, start, false};
            io.cb_func = flip_callback;
            io.cb_info = &cb;
            glp_term_hook(glpk_quiet, NULL); /* the repair below (cut_to) resets it */
            int rc = glp_intopt(lp, &io);
            int nodes_left = cb.nodes_left;
            work += nnz * (nodes_given - nodes_left + 1);
            if (!((rc == 0 || rc == GLP_ESTOP) && (glp_mip_status(lp) == GLP_OPT || glp_mip_status(lp) == GLP_FEAS)))
                break;
            if (constant + glp_mip_obj_val(lp) / 1e6 > base.cost * (1 - 1e-9) - 1e-15) break; /* nothing cheaper */
            int m = 0;
            for (int f = 0; f < n_flips; f++) {
                pick[f] = glp_mip_col_val(lp, f + 1) > 0.5;
                if (pick[f]) picked[m++] = f;
            }
            apply_flips(c, dec, flip, picked, m, tmp);
            anchor_profile(c, tmp, prof, &e);
            bool added = false; /* steps over the target that the program did not have */
            for (int k = 0; k < na; k++)
                if (prof[k] > target && !in_lp[k]) {
                    in_lp[k] = added = true;
                    flip_row(lp, delta, na, k, n_flips, n_pairs, pcol, (double)(target - base_prof[k]), ind, val);
                }
            if (added) continue;
            if (e.max_live > target && e.cost < base.cost - 1e-12 && cut_to(c, tmp, target)) { /* repair */
                restore(c, tmp, target);
                evaluate(c, tmp, false, &e, NULL);
            }
            if (e.max_live <= target && e.cost < base.cost - 1e-12) {
                Eval ea;
                evaluate(c, tmp, true, &ea, NULL);
                if (ea.arena <= budget) {
                    memcpy(dec, tmp, (size_t)n * sizeof(Decision));
                    improved = true;
                    break;
                }
            }
            /* exclude this set: sum over picked (1 - x) + sum over the others x >= 1 */
            int len = 0;
            for (int f = 0; f < n_flips; f++) ind[++len] = f + 1, val[len] = pick[f] ? -1 : 1;
            int r = glp_add_rows(lp, 1);
            glp_set_row_bnds(lp, r, GLP_LO, 1 - m, 0);
            glp_set_mat_row(lp, r, len, ind, val);
        }
        glp_delete_prob(lp);
        glp_term_hook(NULL, NULL);
        if (!improved) break;
    }
    free(base_prof), free(prof), free(in_lp), free(tmp), free(flip), free(delta), free(ind), free(val), free(pick);
    free(picked), free(fcol), free(pair), free(pcol), free(rcol_of), free(recomputed), free(start);
}

/* Every assignment of the free candidates, scored by the exact schedule. */
static bool exhaustive(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t budget) {
    int n = c->g->nodes.n;
    Decision *try = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    memcpy(try, dec, (size_t)n * sizeof(Decision));
    double best = INFINITY;
    for (uint32_t mask = 0; mask < (1u << k); mask++) {
        for (int b = 0; b < k; b++) try[free_ids[b]] = (mask >> b) & 1 ? DEC_RECOMPUTE : DEC_SAVE;
        Eval e;
        evaluate(c, try, false, &e, NULL);
        if (e.max_live > budget || e.cost >= best) continue;
        evaluate(c, try, true, &e, NULL);
        if (e.arena > budget) continue;
        best = e.cost;
        memcpy(dec, try, (size_t)n * sizeof(Decision));
    }
    free(try);
    return best < INFINITY;
}

/* Improve a plan that fits the budget without leaving it: restore, exchange
 * (kept only if the allocation still fits), then the flip search. */
static void polish(Ctx *c, Decision *dec, int64_t budget) {
    int n = c->g->nodes.n;
    Decision *keep = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    memcpy(keep, dec, (size_t)n * sizeof(Decision));
    Eval e;
    evaluate(c, dec, true, &e, NULL);
    int64_t target = budget - (e.arena - e.max_live);
    restore(c, dec, target);
    exchange(c, dec, target);
    evaluate(c, dec, true, &e, NULL);
    if (e.arena > budget) memcpy(dec, keep, (size_t)n * sizeof(Decision)), evaluate(c, dec, true, &e, NULL);
    flip_search(c, dec, budget - (e.arena - e.max_live), budget);
    free(keep);
}

/* The cut from save-all, and every policy's plan that fits, each improved by
 * restoring what it can afford to save and by exchanges; the cheapest that
 * fits, then (if polish) improved by the flip search. Whether it finds a plan
 * does not depend on polish. */
static bool best_of_heuristics(Ctx *c, Decision *out, int64_t budget, bool polish) {
    int n = c->g->nodes.n;
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    double best = INFINITY;
    Eval e;
    /* the allocation may need more than max-live: tighten the target and retry */
    int64_t target = budget;
    for (int round = 0; round < 6 && target > 0; round++) {
        for (int i = 0; i < n; i++) dec[i] = DEC_SAVE;
        apply_forced(c, dec);
        if (!cut_to(c, dec, target)) break;
        restore(c, dec, target);
        exchange(c, dec, target);
        evaluate(c, dec, true, &e, NULL);
        if (e.arena <= budget) {
            best = e.cost;
            memcpy(out, dec, (size_t)n * sizeof(Decision));
            break;
        }
        target -= e.arena - budget;
    }
    static const char *const seeds[] = {"full", "every:2", "every:3", "uniform:2", "sqrt", "selective",
                                        "ops:matmul,attention", "ops:matmul"};
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        policy_decisions(c, seeds[k], dec);
        evaluate(c, dec, true, &e, NULL);
        if (e.arena > budget || e.cost >= best) continue;
        double seed_cost = e.cost;
        restore(c, dec, budget - (e.arena - e.max_live));
        exchange(c, dec, budget - (e.arena - e.max_live));
        evaluate(c, dec, true, &e, NULL);
        if (e.arena > budget) { /* the improvement did not allocate within the budget: the policy's plan */
            policy_decisions(c, seeds[k], dec);
            e.cost = seed_cost;
        }
        if (e.cost < best) {
            best = e.cost;
            memcpy(out, dec, (size_t)n * sizeof(Decision));
        }
    }
    if (best < INFINITY && polish) {
        evaluate(c, out, true, &e, NULL);
        flip_search(c, out, budget - (e.arena - e.max_live), budget);
    }
    free(dec);
    return best < INFINITY;
}

static void finish(Ctx *c, Plan *p, PlanStatus status) {
    Eval e;
    Schedule s;
    evaluate(c, p->dec, true, &e, &s);
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
    p->solve_s = now_s() - c->t_start;
    sched_free(&s);
}

/* ---- exact search by branch and bound (benchmarks) ---------------------------
 * For ENUMERATE_MAX < free decisions <= ACC_EXHAUSTIVE_MAX: a depth-first
 * search over the free decisions, the tensors the backward reads first (most
 * expensive first, saved before dropped), then the intermediates, consumers
 * before inputs (an intermediate none of whose consumers is dropped is never
 * recomputed: only saved). A node is pruned when some step of the save-all
 * plan (P0) over the budget can no longer be covered - any plan that fits
 * must drop, among the tensors P0 keeps there only for a later backward
 * read, at least the excess (covering_bound's rows) - or when the time of the
 * dropped read tensors plus, for the worst row, the cheapest fractional cover
 * of its remaining excess reaches the best plan so far (first the
 * heuristics'). Leaves are scored by the exact schedule and allocation. */

#define BNB_NODE_LIMIT 400000000LL

typedef struct {
    Ctx *c;
    int64_t budget;
    int k, *var, *var_of;   /* decision order; node -> variable, -1 */
    Decision *dec;
    int n_rows;
    double *need, *covered, *avail; /* per row: excess, bytes dropped, bytes still droppable */
    int *row_first, *row_len, *ent_var; /* row entries, by time per byte */
    double *ent_size;
    int *vr_first, *vr_len, *vr_row;    /* rows of each variable, with sizes */
    double *vr_size;
    double fixed, best;
    Decision *best_dec;
    long long nodes;
} Bnb;

static double bnb_bound(const Bnb *b) {
    double worst = 0;
    for (int r = 0; r < b->n_rows; r++) {
        double rem = b->need[r] - b->covered[r], cost = 0;
        for (int e = b->row_first[r]; e < b->row_first[r] + b->row_len[r] && rem > 0; e++) {
            int v = b->ent_var[e], i = b->var[v];
            if (b->dec[i] != (Decision)-1) continue;
            double take = b->ent_size[e] < rem ? b->ent_size[e] : rem;
            cost += b->c->time[i] * take / b->ent_size[e];
            rem -= take;
        }
        worst = cost > worst ? cost : worst;
    }
    return worst;
}

static void bnb_visit(Bnb *b, int d) {
    Ctx *c = b->c;
    if (++b->nodes > BNB_NODE_LIMIT) return;
    if (b->fixed + bnb_bound(b) >= b->best * (1 - 1e-9)) return;
    if (d == b->k) {
        Eval e;
        evaluate(c, b->dec, false, &e, NULL);
        if (e.max_live > b->budget || e.cost >= b->best * (1 - 1e-9)) return;
        evaluate(c, b->dec, true, &e, NULL);
        if (e.arena > b->budget) return;
        b->best = e.cost;
        memcpy(b->best_dec, b->dec, (size_t)c->g->nodes.n * sizeof(Decision));
        return;
    }
    int i = b->var[d];
    bool may_drop = c->read[i];
    for (int m = 0; m < c->g->nodes.n && !may_drop; m++) { /* an intermediate: is a consumer dropped? */
        const Node *x = graph_node(c->g, m);
        for (int j = 0; j < x->n_in && !may_drop; j++) may_drop = x->in[j] == i && b->dec[m] == DEC_RECOMPUTE;
    }
    /* save: its bytes can no longer make room */
    b->dec[i] = DEC_SAVE;
    bool ok = true;
    for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) {
        b->avail[b->vr_row[q]] -= b->vr_size[q];
        ok &= b->avail[b->vr_row[q]] >= b->need[b->vr_row[q]] - 1e-6;
    }
    if (ok) bnb_visit(b, d + 1);
    for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) b->avail[b->vr_row[q]] += b->vr_size[q];
    if (may_drop) {
        b->dec[i] = DEC_RECOMPUTE;
        if (c->read[i]) b->fixed += c->time[i];
        for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) b->covered[b->vr_row[q]] += b->vr_size[q];
        bnb_visit(b, d + 1);
        for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) b->covered[b->vr_row[q]] -= b->vr_size[q];
        if (c->read[i]) b->fixed -= c->time[i];
    }
    b->dec[i] = (Decision)-1;
}

static const double *bnb_ratio;
static int cmp_ratio(const void *a, const void *b) {
    double x = bnb_ratio[*(const int *)a], y = bnb_ratio[*(const int *)b];
    return x < y ? -1 : x > y ? 1 : *(const int *)a - *(const int *)b;
}

/* The optimum over the free candidates free_ids[0..k) below budget into dec
 * (which holds the heuristics' plan, or save-all if they found none, with
 * cost `incumbent`, INFINITY for none). Returns whether the search finished
 * (a proof) and sets *found. */
static bool exact_search(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t budget, double incumbent,
                         bool *found) {
    int n = c->g->nodes.n;
    Bnb b;
    memset(&b, 0, sizeof b);
    b.c = c, b.budget = budget, b.k = k, b.best = incumbent;
    b.var = acc_xrealloc(NULL, (size_t)k * sizeof(int));
    b.var_of = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    b.dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    b.best_dec = dec;
    /* order: read tensors by time (descending), then intermediates, last node first */
    int m = 0;
    for (int j = 0; j < k; j++)
        if (c->read[free_ids[j]]) b.var[m++] = free_ids[j];
    cmp_time = c->time;
    qsort(b.var, (size_t)m, sizeof(int), cmp_by_time);
    for (int j = k - 1; j >= 0; j--)
        if (!c->read[free_ids[j]]) b.var[m++] = free_ids[j];
    for (int i = 0; i < n; i++) b.var_of[i] = -1;
    for (int v = 0; v < k; v++) b.var_of[b.var[v]] = v;
    /* the covering rows of P0 */
    for (int i = 0; i < n; i++) b.dec[i] = DEC_SAVE;
    apply_forced(c, b.dec);
    Schedule s;
    Eval e;
    evaluate(c, b.dec, false, &e, &s);
    int *last_fwd = acc_xrealloc(NULL, (size_t)s.bufs.n * sizeof(int));
    int *first_bwd = acc_xrealloc(NULL, (size_t)s.bufs.n * sizeof(int));
    read_spans(&s, last_fwd, first_bwd);
    Rows rows = {{0}, {0}, {0}};
    int n_rows = bound_rows(c, &s, last_fwd, first_bwd, budget, &rows);
    sched_free(&s);
    free(last_fwd), free(first_bwd);
    bool done = n_rows >= 0;
    if (done) {
        b.n_rows = n_rows;
        int ne = rows.ent_node.n;
        b.need = acc_xrealloc(NULL, (size_t)(n_rows + 1) * sizeof(double));
        b.covered = acc_xrealloc(NULL, (size_t)(n_rows + 1) * sizeof(double));
        b.avail = acc_xrealloc(NULL, (size_t)(n_rows + 1) * sizeof(double));
        b.row_first = acc_xrealloc(NULL, (size_t)(n_rows + 1) * sizeof(int));
        b.row_len = acc_xrealloc(NULL, (size_t)(n_rows + 1) * sizeof(int));
        b.ent_var = acc_xrealloc(NULL, (size_t)(ne + 1) * sizeof(int));
        b.ent_size = acc_xrealloc(NULL, (size_t)(ne + 1) * sizeof(double));
        b.vr_first = acc_xrealloc(NULL, (size_t)(k + 1) * sizeof(int));
        b.vr_len = acc_xrealloc(NULL, (size_t)(k + 1) * sizeof(int));
        b.vr_row = acc_xrealloc(NULL, (size_t)(ne + 1) * sizeof(int));
        b.vr_size = acc_xrealloc(NULL, (size_t)(ne + 1) * sizeof(double));
        double *ratio = acc_xrealloc(NULL, (size_t)(ne + 1) * sizeof(double));
        int *perm = acc_xrealloc(NULL, (size_t)(ne + 1) * sizeof(int));
        for (int r = 0; r < n_rows; r++) {
            const Row *rw = &rows.v.v[r];
            b.need[r] = rw->need, b.covered[r] = b.avail[r] = 0;
            b.row_first[r] = rw->first, b.row_len[r] = rw->m;
            for (int q = 0; q < rw->m; q++) {
                int e2 = rw->first + q;
                perm[q] = e2;
                ratio[e2] = c->time[rows.ent_node.v[e2]] / rows.ent_size.v[e2];
                b.avail[r] += rows.ent_size.v[e2];
            }
            bnb_ratio = ratio;
            qsort(perm, (size_t)rw->m, sizeof(int), cmp_ratio);
            for (int q = 0; q < rw->m; q++) {
                b.ent_var[rw->first + q] = b.var_of[rows.ent_node.v[perm[q]]];
                b.ent_size[rw->first + q] = rows.ent_size.v[perm[q]];
            }
        }
        int len = 0;
        for (int v = 0; v < k; v++) {
            b.vr_first[v] = len;
            for (int e2 = 0; e2 < ne; e2++)
                if (b.ent_var[e2] == v) {
                    int r = 0;
                    while (r + 1 < n_rows && b.row_first[r + 1] <= e2) r++;
                    b.vr_row[len] = r, b.vr_size[len] = b.ent_size[e2], len++;
                }
            b.vr_len[v] = len - b.vr_first[v];
        }
        for (int v = 0; v < k; v++) b.dec[b.var[v]] = (Decision)-1;
        bnb_visit(&b, 0);
        done = b.nodes <= BNB_NODE_LIMIT;
        free(ratio), free(perm);
        free(b.need), free(b.covered), free(b.avail), free(b.row_first), free(b.row_len), free(b.ent_var);
        free(b.ent_size), free(b.vr_first), free(b.vr_len), free(b.vr_row), free(b.vr_size);
    }
    *found = b.best < INFINITY;
    VEC_FREE(rows.v), VEC_FREE(rows.ent_node), VEC_FREE(rows.ent_size);
    free(b.var), free(b.var_of), free(b.dec);
    return done;
}

/* The smallest arena of any assignment of the free candidates (the
 * exhaustive path's minimum), its plan into dec. */
static int64_t exhaustive_min_peak(Ctx *c, Decision *dec, const int *free_ids, int k) {
    int n = c->g->nodes.n;
    Decision *try = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    memcpy(try, dec, (size_t)n * sizeof(Decision));
    int64_t best = INT64_MAX;
    for (uint32_t mask = 0; mask < (1u << k); mask++) {
        for (int b = 0; b < k; b++) try[free_ids[b]] = (mask >> b) & 1 ? DEC_RECOMPUTE : DEC_SAVE;
        Eval e;
        evaluate(c, try, false, &e, NULL);
        if (e.max_live >= best) continue;
        evaluate(c, try, true, &e, NULL);
        if (e.arena >= best) continue;
        best = e.arena;
        memcpy(dec, try, (size_t)n * sizeof(Decision));
    }
    free(try);
    return best;
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
static int64_t min_peak(Ctx *c, Decision *out) {
    int n = c->g->nodes.n;
    int *free_ids = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (c->cand[i] && c->forced[i] < 0) free_ids[k++] = i;
    for (int i = 0; i < n; i++) out[i] = DEC_SAVE;
    apply_forced(c, out);
    if (k <= exhaustive_max() && k <= ENUMERATE_MAX) {
        int64_t best = exhaustive_min_peak(c, out, free_ids, k);
        free(free_ids);
        return best;
    }
    free(free_ids);
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    static const char *const seeds[] = {"none",      "full",      "every:2", "every:3", "uniform:2", "sqrt",
                                        "selective", "ops:matmul,attention", "ops:matmul", NULL};
    int64_t best = INT64_MAX, checked = -1;
    Eval e;
    for (size_t t = 0; t < sizeof seeds / sizeof *seeds; t++) {
        if (seeds[t]) {
            policy_decisions(c, seeds[t], dec);
        } else { /* drop everything that may be dropped */
            for (int i = 0; i < n; i++) dec[i] = c->cand[i] ? DEC_RECOMPUTE : DEC_SAVE;
            apply_forced(c, dec);
        }
        evaluate(c, dec, true, &e, NULL);
        if (e.arena < best) best = e.arena, memcpy(out, dec, (size_t)n * sizeof(Decision));
    }
    for (int iter = 0; iter < 4 * n + 16; iter++) {
        if (c->o->time_limit_s > 0 && now_s() - c->t_start > c->o->time_limit_s) break;
        int64_t b = best - ACC_ALIGN;
        bool found = b > 0 && best_of_heuristics(c, dec, b, false);
        if (!found) { /* the boundary: plan_make at best itself must not go lower */
            if (checked == best) break;
            checked = best;
            if (!best_of_heuristics(c, dec, best, true)) { /* plan_make's fallback: this plan, polished */
                memcpy(dec, out, (size_t)n * sizeof(Decision));
                polish(c, dec, best);
            }
        }
        evaluate(c, dec, true, &e, NULL);
        if (e.arena >= best) break;
        best = e.arena;
        memcpy(out, dec, (size_t)n * sizeof(Decision));
    }
    free(dec);
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
    apply_forced(&c, p->dec);
    Eval e;
    evaluate(&c, p->dec, true, &e, NULL);
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
        status = exhaustive(&c, p->dec, free_ids, k, budget) ? PLAN_OPTIMAL : PLAN_INFEASIBLE;
    } else if (k <= exhaustive_max()) { /* the heuristics' plan, then the proof */
        double incumbent = INFINITY;
        if (best_of_heuristics(&c, p->dec, budget, true)) evaluate(&c, p->dec, false, &e, NULL), incumbent = e.cost;
        bool found;
        status = exact_search(&c, p->dec, free_ids, k, budget, incumbent, &found) ? PLAN_OPTIMAL : PLAN_HEURISTIC;
        if (!found) status = PLAN_INFEASIBLE;
    } else if (best_of_heuristics(&c, p->dec, budget, true)) {
        status = PLAN_HEURISTIC;
    } else if (min_peak(&c, p->dec) <= budget) { /* the smallest plan the planner knows fits: improve it */
        polish(&c, p->dec, budget);
    } else {
        status = PLAN_INFEASIBLE;
    }
    p->bound = covering_bound(&c, budget);
    free(free_ids);
    finish(&c, p, status);
    if (p->status == PLAN_OPTIMAL) p->bound = p->recompute_time;
    ctx_free(&c);
}

void plan_free(Plan *p) { free(p->dec); }

int64_t plan_min_peak(const Graph *g, const Autodiff *ad, const PlanOptions *o) {
    Ctx c;
    ctx_init(&c, g, ad, o);
    Decision *dec = acc_xrealloc(NULL, (size_t)g->nodes.n * sizeof(Decision));
    int64_t best = min_peak(&c, dec);
    free(dec);
    ctx_free(&c);
    return best;
}
