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
 * exact schedule (a proven optimum); otherwise the peak of the current plan is
 * cut by a knapsack over the tensors live there (GLPK; identical tensors of
 * identical blocks aggregated), re-simulated until the plan fits, over-dropped
 * tensors are restored, and an exchange search trades drops for saves (with
 * the intermediates a recomputation needs dropped alongside). Every policy's
 * plan is improved the same way, and the cheapest that fits wins. The lower
 * bound is a covering program over the steps of the save-all schedule (see
 * covering_bound), an LP solved by GLPK, so the reported gap is a proven one.
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

/* Free decisions searched exhaustively; ACC_EXHAUSTIVE_MAX overrides it (up
 * to 24) so that benchmarks can compare the heuristic with the optimum. */
#define EXHAUSTIVE_MAX 12

static int exhaustive_max(void) {
    const char *e = getenv("ACC_EXHAUSTIVE_MAX");
    int k = e && *e ? atoi(e) : EXHAUSTIVE_MAX;
    return k < 0 ? 0 : k > 24 ? 24 : k;
}

typedef struct {
    const Graph *g;
    const Autodiff *ad;
    const PlanOptions *o;
    double *time;  /* [n] forward time */
    int *forced;   /* [n] -1 free, else the Decision the user forces */
    bool *cand;    /* [n] may be dropped */
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

static void ctx_init(Ctx *c, const Graph *g, const Autodiff *ad, const PlanOptions *o) {
    int n = g->nodes.n;
    memset(c, 0, sizeof *c);
    c->g = g, c->ad = ad, c->o = o;
    c->time = acc_xrealloc(NULL, (size_t)n * sizeof(double));
    c->forced = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    c->cand = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
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
    c->index = sched_index_new(g, ad, o->optimizer);
    c->t_start = now_s();
}

static void ctx_free(Ctx *c) {
    sched_free(&c->scratch);
    sched_index_free(c->index);
    free(c->time);
    free(c->forced);
    free(c->cand);
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

/* ---- GLPK: a 0/1 knapsack, min cost x s.t. size x >= need ------------------ */

static int glpk_quiet(void *info, const char *s) { return 1; }

/* Stop branch and bound after a fixed number of subproblems: a node limit,
 * unlike GLPK's time limit, gives the same answer on a loaded machine. */
#define KNAPSACK_NODE_LIMIT 20000
static void node_limit(glp_tree *tree, void *info) {
    int *left = info;
    if (glp_ios_reason(tree) == GLP_ISELECT && --*left <= 0) glp_ios_terminate(tree);
}

/* Returns the optimal cost (and x) or -1 if even taking everything is short.
 * Items with equal cost and size (the same tensor of identical blocks) become
 * one integer variable bounded by their count: no symmetric branching. */
static double knapsack_min_cost(const double *cost, const double *size, int n, double need, bool *x) {
    double total = 0;
    for (int i = 0; i < n; i++) total += size[i], x[i] = false;
    if (need <= 0) return 0;
    if (total < need) return -1;
    int *cls = acc_xrealloc(NULL, (size_t)(n + 1) * sizeof(int)); /* item -> class */
    int *rep = acc_xrealloc(NULL, (size_t)(n + 1) * sizeof(int)); /* class -> first item */
    int *count = acc_xrealloc(NULL, (size_t)(n + 1) * sizeof(int));
    int m = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < m && !(cost[rep[k]] == cost[i] && size[rep[k]] == size[i])) k++;
        if (k == m) rep[m] = i, count[m] = 0, m++;
        cls[i] = k;
        count[k]++;
    }
    glp_term_hook(glpk_quiet, NULL);
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, 1, GLP_LO, need, 0);
    glp_add_cols(lp, m);
    int *ind = acc_xrealloc(NULL, (size_t)(m + 1) * sizeof(int));
    double *val = acc_xrealloc(NULL, (size_t)(m + 1) * sizeof(double));
    for (int k = 0; k < m; k++) {
        glp_set_col_kind(lp, k + 1, GLP_IV);
        glp_set_col_bnds(lp, k + 1, GLP_DB, 0, count[k]);
        glp_set_obj_coef(lp, k + 1, cost[rep[k]]);
        ind[k + 1] = k + 1;
        val[k + 1] = size[rep[k]];
    }
    glp_set_mat_row(lp, 1, m, ind, val);
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
        best = glp_mip_obj_val(lp);
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

/* Forward buffers kept past their last forward read at step t: what a plan
 * could free there by dropping their nodes. Fills size[n] (bytes per node). */
static void droppable_at(const Ctx *c, const Schedule *s, const Decision *dec, int t, double *size) {
    int nb = s->bufs.n;
    int *last_fwd = acc_xrealloc(NULL, (size_t)nb * sizeof(int));
    for (int i = 0; i < nb; i++) last_fwd[i] = -1;
    for (int k = 0; k < s->first_bwd_step; k++) {
        const Step *st = &s->steps.v[k];
        for (int j = 0; j < ACC_MAX_IN; j++)
            if (st->in[j] >= 0) last_fwd[st->in[j]] = k;
        if (st->out >= 0) last_fwd[st->out] = k > last_fwd[st->out] ? k : last_fwd[st->out];
        if (st->aux >= 0) last_fwd[st->aux] = k > last_fwd[st->aux] ? k : last_fwd[st->aux];
    }
    for (int i = 0; i < c->g->nodes.n; i++) size[i] = 0;
    for (int i = 0; i < nb; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (b->persistent || (b->kind != BUF_ACT && b->kind != BUF_AUX) || b->first < 0) continue;
        if (b->first >= s->first_bwd_step) continue; /* a recomputed copy */
        if (!(b->first <= t && t <= b->last) || t <= last_fwd[i]) continue;
        int n = b->node;
        if (c->cand[n] && c->forced[n] < 0 && dec[n] == DEC_SAVE) size[n] += (double)b->size_bytes;
    }
    free(last_fwd);
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

static void read_by_backward(const Ctx *c, bool *read);

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
    for (int k = 0; k < nb; k++) last_fwd[k] = -1, first_bwd[k] = ns;
    for (int t = 0; t < ns; t++) {
        const Step *st = &s.steps.v[t];
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

/* Cut the peak of dec until its max-live is at most target. */
static bool cut_to(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    double *size = acc_xrealloc(NULL, (size_t)n * sizeof(double));
    double *cost = acc_xrealloc(NULL, (size_t)n * sizeof(double));
    double *sz = acc_xrealloc(NULL, (size_t)n * sizeof(double));
    int *id = acc_xrealloc(NULL, (size_t)n * sizeof(int));
    bool *x = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
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
        droppable_at(c, &s, dec, e.peak_step, size);
        sched_free(&s);
        int m = 0;
        for (int i = 0; i < n; i++)
            if (size[i] > 0) cost[m] = c->time[i], sz[m] = size[i], id[m] = i, m++;
        if (m == 0) break;
        if (knapsack_min_cost(cost, sz, m, (double)(e.max_live - target), x) < 0)
            for (int k = 0; k < m; k++) x[k] = true;
        for (int k = 0; k < m; k++)
            if (x[k]) dec[id[k]] = DEC_RECOMPUTE;
        if (c->o->time_limit_s > 0 && now_s() - c->t_start > c->o->time_limit_s) break;
    }
    free(size), free(cost), free(sz), free(id), free(x);
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
    bool *read = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
    read_by_backward(c, read);
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
    free(read), free(tmp), free(drops), free(saves), free(pairs);
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

/* The knapsack descent from save-all, and every policy's plan that fits, each
 * improved by restoring what it can afford to save; the cheapest that fits. */
static bool best_of_heuristics(Ctx *c, Decision *out, int64_t budget) {
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
        restore(c, dec, budget - (e.arena - e.max_live));
        exchange(c, dec, budget - (e.arena - e.max_live));
        evaluate(c, dec, true, &e, NULL);
        if (e.arena <= budget && e.cost < best) {
            best = e.cost;
            memcpy(out, dec, (size_t)n * sizeof(Decision));
        }
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
    if (k <= exhaustive_max()) {
        status = exhaustive(&c, p->dec, free_ids, k, budget) ? PLAN_OPTIMAL : PLAN_INFEASIBLE;
    } else {
        status = best_of_heuristics(&c, p->dec, budget) ? PLAN_HEURISTIC : PLAN_INFEASIBLE;
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
    int n = g->nodes.n;
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    static const char *const tries[] = {"none", "full", "sqrt", "selective", "uniform:2"};
    int64_t best = INT64_MAX;
    for (size_t t = 0; t <= sizeof tries / sizeof *tries; t++) {
        if (t < sizeof tries / sizeof *tries) {
            policy_decisions(&c, tries[t], dec);
        } else { /* drop everything that may be dropped */
            for (int i = 0; i < n; i++) dec[i] = c.cand[i] ? DEC_RECOMPUTE : DEC_SAVE;
            apply_forced(&c, dec);
        }
        Eval e;
        evaluate(&c, dec, true, &e, NULL);
        if (e.arena < best) best = e.arena;
    }
    free(dec);
    ctx_free(&c);
    return best;
}
