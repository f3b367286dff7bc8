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
 *
 * With --host-budget the integer programs (the cut, the flip search) decide
 * offloading beside recomputing, each copy at its full time, and
 * plan_offload.c then refines each tensor's fate (kept, recomputed,
 * offloaded) by the copies' exposed time. Where no program decides (other
 * policies, the enumeration, ACC_OFFLOAD_FIXED, the widened set when the
 * programs find no plan), the drops of a seed set are offloads.
 *
 * Layering (calls go one way, down): planner.c (the context, the policies,
 * the exchange search and the driver, plan_make) -> plan_offload.c (offload
 * a free decision) and plan_search.c (the flip search, the branch and
 * bound) -> plan_cut.c (the cut, restoring) and
 * plan_bound.c (the lower bound) -> plan_core.c (scoring, closures, the
 * time left). planner_internal.h declares each file's part in that order.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner_internal.h"

/* Free decisions searched exhaustively; ACC_EXHAUSTIVE_MAX overrides it so
 * that benchmarks can compare the heuristic with the optimum: up to 24 every
 * assignment is scored, above that (up to 64) a branch and bound proves the
 * optimum (pl_exact_search). */
#define EXHAUSTIVE_MAX 12
#define ENUMERATE_MAX 24

/* ACC_OFFLOAD_FIXED=1 (for tests and benchmarks): with --host-budget, the
 * plan of the fixed-set approach - the seed set's drops offloaded, the rest
 * recomputed; no wider set, no search over the three fates
 * (pl_offload_search) - still reported by the exposed-time model. */
static bool offload_fixed(void) {
    const char *e = getenv("ACC_OFFLOAD_FIXED");
    return e && *e == '1';
}

/* ACC_OFFLOAD_SEARCH=0 (for tests): with --host-budget, the plan of the
 * integer programs and the searches around them as it is, without the
 * local search over the three fates (pl_offload_search). */
static bool offload_search(void) {
    const char *e = getenv("ACC_OFFLOAD_SEARCH");
    return !(e && *e == '0');
}

/* ACC_ENUMERATE_MAX (tests): scoring every assignment stops above this many
 * free decisions (default ENUMERATE_MAX); 0 sends every exact search to the
 * branch and bound, so that tests can check it against the enumeration on
 * models small enough for both. */
static int enumerate_max(void) {
    const char *e = getenv("ACC_ENUMERATE_MAX");
    int k = e && *e ? atoi(e) : ENUMERATE_MAX;
    return k < 0 ? 0 : k > ENUMERATE_MAX ? ENUMERATE_MAX : k;
}

static int exhaustive_max(void) {
    const char *e = getenv("ACC_EXHAUSTIVE_MAX");
    int k = e && *e ? atoi(e) : EXHAUSTIVE_MAX;
    return k < 0 ? 0 : k > 64 ? 64 : k;
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
static const char *pattern_source(const Node *x, const Graph *g, const char *const *cl, int n_cl, bool save, char *buf,
                                  size_t len, bool *from_cl) {
    int k = first_match(cl, n_cl, x->name);
    *from_cl = k >= 0;
    if (k >= 0) return snprintf(buf, len, "--%s '%s'", save ? "save" : "recompute", cl[k]), buf;
    if (x->hint == (save ? HINT_SAVE : HINT_RECOMPUTE))
        return snprintf(buf, len, "the model's annotation @%s (%s:%d)", save ? "save" : "recompute", x->loc.file,
                        x->loc.line),
               buf;
    const char *const *dsl = save ? g->save_globs.v : g->recompute_globs.v;
    k = first_match(dsl, save ? g->save_globs.n : g->recompute_globs.n, x->name);
    if (k >= 0) return snprintf(buf, len, "the model's %s \"%s\"", save ? "save" : "recompute", dsl[k]), buf;
    return NULL;
}

bool plan_check_patterns(const Graph *g, const char *const *save, int n_save, const char *const *rec, int n_rec,
                         char *err, size_t err_len, int *at) {
    *at = -1;
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
            snprintf(err, err_len,
                     "'%s' is both saved (%s) and recomputed (%s): a tensor is either saved or recomputed", x->name, sv,
                     rc);
            *at = i;
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

/* Into order, the free tensors the backward reads whose two copies take
 * less time than their recomputation (wide: all of them), the most time
 * saved first, then by node; returns how many. */
static int offload_order(const Ctx *c, bool wide, int *order) {
    int m = 0;
    for (int i = 0; i < c->g->nodes.n; i++)
        if (c->o->host_bytes > 0 && c->cand[i] && c->read[i] && c->forced[i] < 0 &&
            (wide || c->transfer[i] < c->time[i]))
            order[m++] = i;
    for (int a = 1; a < m; a++) /* insertion sort (candidates are few) */
        for (int b = a; b > 0; b--) {
            int p = order[b - 1], q = order[b];
            double sp = c->time[p] - c->transfer[p], sq = c->time[q] - c->transfer[q];
            if (sq > sp || (sq == sp && q < p)) order[b - 1] = q, order[b] = p;
            else break;
        }
    return m;
}

/* With host memory for offloading (o->host_bytes), the seed set: which
 * tensors the searches offload when they drop them, where no integer
 * program decides offloading (offload_in_programs). Those the backward reads
 * whose two copies take less time than their recomputation (wide: all of
 * them), the most time saved first, while their bytes together fit the host
 * memory (so any plan's host arena fits it). Dropping one then costs its
 * full transfer, an upper bound of its exposed time, in every search;
 * pl_offload_search then chooses each tensor's fate freely. Returns the
 * number of tensors in the set. */
static int choose_offloads(Ctx *c, bool wide) {
    int n = c->g->nodes.n, in_set = 0;
    int *order = acc_xrealloc(NULL, (size_t)(n > 0 ? n : 1) * sizeof(int));
    c->offload_cols = false; /* the set decides what a drop is */
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(c->g, i); /* its host buffers, as the schedule sizes them */
        int64_t t = node_tensor_bytes(x) > 0 ? node_tensor_bytes(x) : 1, a = x->aux_elems * 4;
        c->host_size[i] = (t + ACC_ALIGN - 1) / ACC_ALIGN * ACC_ALIGN + (a + ACC_ALIGN - 1) / ACC_ALIGN * ACC_ALIGN;
        c->transfer[i] = cost_transfer_time(x, c->o->hw);
        c->drop[i] = c->time[i];
        c->offload[i] = false;
    }
    int m = offload_order(c, wide, order);
    int64_t used = 0;
    for (int k = 0; k < m; k++) {
        int i = order[k];
        if (used + c->host_size[i] > c->o->host_bytes) continue;
        used += c->host_size[i];
        c->offload[i] = true;
        c->drop[i] = c->transfer[i];
        in_set++;
    }
    free(order);
    return in_set;
}

/* Whether a proof over the plans the set allows holds for every plan:
 * without a host budget, or with every tensor the backward reads in the set
 * (an offloaded drop frees at least what a recomputed one does, and needs no
 * inputs). When the host budget leaves some out, pl_offload_search may still
 * offload them, which the proofs (the covering rows, the enumeration) do not
 * see. */
static bool offload_set_complete(const Ctx *c) {
    for (int i = 0; c->o->host_bytes > 0 && i < c->g->nodes.n; i++)
        if (c->cand[i] && c->read[i] && c->forced[i] < 0 && !c->offload[i]) return false;
    return true;
}

/* When no plan with the seed set fits: offloading a tensor whose copies
 * cost more than its recomputation still frees its place without keeping
 * the recomputation's inputs or transients, so budgets below what
 * recomputing reaches may be met. Widen the set to every tensor the
 * backward reads (within the host budget); whether it grew. */
static bool widen_offloads(Ctx *c) {
    int before = 0;
    for (int i = 0; i < c->g->nodes.n; i++) before += c->offload[i];
    return c->o->host_bytes > 0 && !offload_fixed() && choose_offloads(c, true) > before;
}

/* With --host-budget (unless ACC_OFFLOAD_FIXED=1), for the searches of
 * `optimal` past the enumeration: the integer programs decide offloading,
 * an offload column beside the recompute column of each tensor that may be
 * offloaded (pl_may_offload), so that one program weighs recomputing one
 * tensor against copying another. The seed set is emptied: a drop is a
 * recomputation, an offload is DEC_OFFLOAD. */
static void offload_in_programs(Ctx *c) {
    if (c->o->host_bytes <= 0 || offload_fixed()) return;
    for (int i = 0; i < c->g->nodes.n; i++) c->offload[i] = false, c->drop[i] = c->time[i];
    c->offload_cols = true;
}

/* A policy's plan when the programs decide offloads (offload_cols): its
 * drops whose copies take less time than their recomputation offloaded
 * instead, the most time saved first, within the host budget - what the
 * seed set makes of a policy's drops. */
static void offload_cheap_drops(const Ctx *c, Decision *dec) {
    if (!c->offload_cols) return;
    int *order = acc_xrealloc(NULL, (size_t)(c->g->nodes.n + 1) * sizeof(int));
    int m = offload_order(c, false, order);
    int64_t used = pl_host_used(c, dec);
    for (int k = 0; k < m; k++) {
        int i = order[k];
        if (dec[i] != DEC_RECOMPUTE || !pl_may_offload(c, i) || used + c->host_size[i] > c->o->host_bytes) continue;
        used += c->host_size[i];
        dec[i] = DEC_OFFLOAD;
    }
    free(order);
}

static void ctx_init(Ctx *c, const Graph *g, const Autodiff *ad, const PlanOptions *o) {
    int n = g->nodes.n;
    memset(c, 0, sizeof *c);
    c->g = g, c->ad = ad, c->o = o;
    c->budget = plan_schedule_budget(o);
    c->time = pool_alloc(&c->mem, (size_t)n * sizeof(double));
    c->drop = pool_alloc(&c->mem, (size_t)n * sizeof(double));
    c->offload = pool_alloc(&c->mem, (size_t)n * sizeof(bool));
    c->transfer = pool_alloc(&c->mem, (size_t)n * sizeof(double));
    c->host_size = pool_alloc(&c->mem, (size_t)n * sizeof(int64_t));
    c->forced = pool_alloc(&c->mem, (size_t)n * sizeof(int));
    c->cand = pool_alloc(&c->mem, (size_t)n * sizeof(bool));
    c->read = pool_alloc(&c->mem, (size_t)n * sizeof(bool));
    c->group = pool_alloc(&c->mem, (size_t)n * sizeof(int));
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
    choose_offloads(c, false);
    c->so = (SchedOptions){o->optimizer, c->offload, c->transfer, o->dp};
    c->index = sched_index_new(g, ad, &c->so);
    c->t_start = acc_now_s();
    c->deadline = o->time_limit_s > 0 ? c->t_start + o->time_limit_s : 0;
}

static void ctx_free(Ctx *c) {
    sched_free(&c->scratch);
    sched_index_free(c->index);
    pool_free(&c->mem);
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

static void policy_decisions(const Ctx *c, const Policy *p, Decision *dec) {
    const Graph *g = c->g;
    int n = g->nodes.n;
    bool *pick = acc_xrealloc(NULL, (size_t)(c->n_groups + 1) * sizeof(bool));
    for (int i = 0; i < n; i++) dec[i] = DEC_SAVE;
    if (p->kind == POL_FULL || p->kind == POL_EVERY) {
        int k = p->kind == POL_EVERY ? p->k : 1;
        for (int gi = 0; gi < c->n_groups; gi++) pick[gi] = gi % k == 0;
        checkpoint_groups(c, dec, pick);
    } else if (p->kind == POL_UNIFORM) {
        checkpoint_chunks(c, dec, p->k);
    } else if (p->kind == POL_SQRT) {
        int k = (int)ceil(sqrt((double)(c->n_groups > 0 ? c->n_groups : 1)));
        checkpoint_chunks(c, dec, k);
    } else if (p->kind == POL_SELECTIVE) {
        for (int i = 0; i < n; i++)
            if (graph_node(g, i)->op == OP_ATTENTION) dec[i] = DEC_RECOMPUTE;
    } else if (p->kind == POL_OPS) {
        for (int i = 0; i < n; i++) dec[i] = p->keep[graph_node(g, i)->op] ? DEC_SAVE : DEC_RECOMPUTE;
    }
    free(pick);
    pl_apply_forced(c, dec);
}

typedef struct {
    int node;
    double dcost; /* change of recompute time */
    int64_t dmem; /* change of max-live */
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
/* Drop node i for the exchange search: offloaded when the programs decide
 * offloads (pl_may_offload), its two copies take less time than its
 * recomputation and its host bytes fit host_left; else recomputed, with the
 * intermediates it needs. */
static void exchange_drop(const Ctx *c, Decision *dec, int i, int64_t host_left) {
    if (pl_may_offload(c, i) && c->transfer[i] < c->time[i] && c->host_size[i] <= host_left) dec[i] = DEC_OFFLOAD;
    else pl_drop_closure(c, dec, i);
}

static void exchange(Ctx *c, Decision *dec, int64_t target) {
    int n = c->g->nodes.n;
    const bool *read = c->read;
    Pool mem = {0}; /* called in loops: returned when it ends */
    Decision *tmp = pool_alloc(&mem, (size_t)n * sizeof(Decision));
    Move *drops = pool_alloc(&mem, (size_t)n * sizeof(Move)), *saves = pool_alloc(&mem, (size_t)n * sizeof(Move));
    double(*pairs)[4] = NULL; /* grows */
    size_t pairs_cap = 0;
    for (int iter = 0; iter < 4 * n; iter++) {
        if (pl_out_of_time(c)) break;
        Eval base;
        pl_evaluate(c, dec, false, &base, NULL);
        int64_t host_left = c->offload_cols ? c->o->host_bytes - pl_host_used(c, dec) : 0;
        int nd = 0, nsv = 0;
        bool improved = false;
        for (int i = 0; i < n && !improved && !pl_out_of_time(c); i++) {
            if (!c->cand[i] || c->forced[i] >= 0 || !read[i]) continue;
            memcpy(tmp, dec, (size_t)n * sizeof(Decision));
            if (dec[i] == DEC_SAVE) exchange_drop(c, tmp, i, host_left);
            else tmp[i] = DEC_SAVE;
            Eval e;
            pl_evaluate(c, tmp, false, &e, NULL);
            Move mv = {i, e.cost - base.cost, e.max_live - base.max_live};
            if (e.max_live <= target && mv.dcost < -1e-12) { /* better on its own */
                memcpy(dec, tmp, (size_t)n * sizeof(Decision));
                improved = true;
            } else if (dec[i] == DEC_SAVE && mv.dmem < 0) {
                drops[nd++] = mv;
            } else if (dec[i] != DEC_SAVE && mv.dcost < 0) {
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
            exchange_drop(c, tmp, drops[(int)pairs[k][2]].node, host_left);
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
    pool_free(&mem), free(pairs);
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
    Pool mem = {0}; /* min_peak_search calls this in a loop: returned when it ends */
    Decision *dec = pool_alloc(&mem, (size_t)n * sizeof(Decision));
    Decision *cut = pool_alloc(&mem, (size_t)n * sizeof(Decision));
    Decision *trial = pool_alloc(&mem, (size_t)n * sizeof(Decision));
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
    static const char *const seeds[] = {
        "full", "every:2", "every:3", "uniform:2", "sqrt", "selective", "ops:matmul,attention", "ops:matmul"};
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        if (best < INFINITY && pl_out_of_time(c)) break;
        Policy pol = plan_policy(seeds[k]);
        policy_decisions(c, &pol, dec);
        offload_cheap_drops(c, dec);
        evaluate_within(c, dec, budget, &e);
        if (e.arena > budget || e.cost >= best) continue;
        double seed_cost = e.cost;
        if (!pl_out_of_time(c)) { /* else the policy's plan as it is */
            pl_restore(c, dec, budget - (e.arena - e.max_live));
            exchange(c, dec, budget - (e.arena - e.max_live));
            pl_evaluate(c, dec, true, &e, NULL);
        }
        if (e.arena > budget) { /* the improvement did not allocate within the budget: the policy's plan */
            policy_decisions(c, &pol, dec);
            offload_cheap_drops(c, dec);
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
    pool_free(&mem);
    return best < INFINITY;
}

static void finish(Ctx *c, Plan *p, PlanStatus status) {
    Eval e;
    Schedule s;
    for (int i = 0; i < c->g->nodes.n; i++) /* the drops of the offloaded set are offloads */
        if (p->dec[i] == DEC_RECOMPUTE && c->offload[i]) p->dec[i] = DEC_OFFLOAD;
    pl_evaluate(c, p->dec, true, &e, &s);
    p->status = status;
    p->peak_bytes = e.arena;
    p->max_live_bytes = s.peak_live_bytes;
    p->host_bytes = s.host_bytes;
    CopyTime ct; /* the copies as the code runs them: only their exposed time is the step's */
    sched_copy_time(&s, c->time, c->transfer, &ct);
    p->transfer_time = ct.copy_time;
    p->exposed_time = ct.exposed_time;
    p->recompute_time = 0;
    for (int t = 0; t < s.steps.n; t++)
        if (s.steps.v[t].kind == ST_RECOMPUTE) p->recompute_time += c->time[s.steps.v[t].node];
    p->recompute_time += ct.exposed_time;
    p->recompute_flops = e.flops;
    p->fwd_time = p->bwd_time = 0;
    for (int i = 0; i < c->g->nodes.n; i++)
        if (c->ad->live[i]) p->fwd_time += c->time[i];
    for (int k = 0; k < c->ad->bwd.n; k++) p->bwd_time += 2 * c->time[c->ad->bwd.v[k]];
    if (c->budget > 0 && e.arena > c->budget) p->status = PLAN_INFEASIBLE;
    p->n_evals = c->n_evals;
    p->solve_s = acc_now_s() - c->t_start;
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

/* The branch and bound's node limit for k free decisions: a proof's with at
 * most ACC_EXHAUSTIVE_MAX (benchmarks), else up to 64 the fallback's (when
 * the heuristics find no plan), 0 above. */
static long long bnb_nodes(int k) { return k <= exhaustive_max() ? PL_BNB_NODES : k <= 64 ? PL_BNB_FALLBACK_NODES : 0; }

/* Whether no plan peaks below *best (out: its plan). The covering rows of
 * the save-all schedule (plan_bound.c) at one allocation unit less: when
 * their program is infeasible, no plan's max-live, and so no arena, is that
 * small (allocations are multiples of the unit). Else, with at most
 * PL_BNB_PROOF_MAX free decisions, the branch and bound at that budget,
 * stopped at its first plan (PL_BNB_PROOF_NODES; a proof's node limit with
 * ACC_EXHAUSTIVE_MAX): a plan it
 * finds lowers *best (the descent missed it: one GPT-3-width layer needs
 * three simultaneous flips from the descent's plan) and the search repeats
 * below it; finishing without one is the proof. When the search neither
 * finds a plan nor finishes, it runs again with every decision in reverse
 * node order (consumers first): either finishing without a plan proves the
 * minimum, and on the U-Net (71 decisions, where neither finishes) the second
 * order finds plans the first misses within its nodes. plan_make runs the same
 * search at a budget the heuristics miss (fallback_exact: a prefix of it,
 * the same order until its first plan; past 64 decisions min_peak itself),
 * so its boundary is this one. */
static bool prove_min_peak(Ctx *c, Decision *out, const int *free_ids, int k, int64_t *best) {
    int n = c->g->nodes.n;
    if (*best <= ACC_ALIGN || pl_covering_bound(c, *best - ACC_ALIGN) == INFINITY) return true;
    long long nodes = k <= exhaustive_max() ? PL_BNB_NODES : k <= PL_BNB_PROOF_MAX ? PL_BNB_PROOF_NODES : 0;
    if (nodes == 0) return false;
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    bool done = false, found = true;
    while (found && !pl_out_of_time(c)) {
        for (int order = 0; order < 2; order++) { /* the second only when the first neither finds nor finishes */
            for (int i = 0; i < n; i++) dec[i] = DEC_SAVE;
            pl_apply_forced(c, dec);
            done = pl_exact_search(c, dec, free_ids, k, *best - ACC_ALIGN, INFINITY, -nodes, order == 1, &found);
            if (found || done || pl_out_of_time(c)) break;
        }
        if (!found) break;
        Eval e;
        pl_evaluate(c, dec, true, &e, NULL);
        ACC_ASSERT(e.arena < *best);
        *best = e.arena;
        memcpy(out, dec, (size_t)n * sizeof(Decision));
    }
    free(dec);
    return done && !found;
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
static int64_t min_peak_search(Ctx *c, Decision *out, int64_t enough, bool *proven) {
    int n = c->g->nodes.n;
    int *free_ids = pool_alloc(&c->mem, (size_t)n * sizeof(int)); /* once per Ctx: its pool */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (c->cand[i] && c->forced[i] < 0) free_ids[k++] = i;
    for (int i = 0; i < n; i++) out[i] = DEC_SAVE;
    pl_apply_forced(c, out);
    *proven = k <= exhaustive_max() && k <= enumerate_max();
    if (*proven) return (int64_t)enumerate(c, out, free_ids, k, 0, true);
    Decision *dec = pool_alloc(&c->mem, (size_t)n * sizeof(Decision));
    Decision *cut = pool_alloc(&c->mem, (size_t)n * sizeof(Decision));
    static const char *const seeds[] = {"none",       "full", "every:2",   "every:3",
                                        "uniform:2",  "sqrt", "selective", "ops:matmul,attention",
                                        "ops:matmul", NULL};
    int64_t best = INT64_MAX, checked = -1;
    Eval e;
    for (size_t t = 0; t < sizeof seeds / sizeof *seeds; t++) {
        if (seeds[t]) {
            Policy pol = plan_policy(seeds[t]);
            policy_decisions(c, &pol, dec);
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
    while (k <= 64 && best > ACC_ALIGN && !pl_out_of_time(c)) {
        memcpy(dec, out, (size_t)n * sizeof(Decision));
        if (!pl_peak_search(c, dec, free_ids, k, best - ACC_ALIGN)) break;
        pl_evaluate(c, dec, true, &e, NULL);
        best = e.arena;
        memcpy(out, dec, (size_t)n * sizeof(Decision));
    }
    if (!c->timed_out && best > enough) *proven = prove_min_peak(c, out, free_ids, k, &best);
    return best;
}

/* min_peak_search within the deadline: --time-limit, else (an error path,
 * bounded even without a limit) PLAN_MIN_PEAK_DEFAULT_S from now. *exact:
 * the search ended by itself. A minimum of at most `enough` (plan_make's
 * budget; 0 from plan_min_peak) is not proven: the plan fits, and no error
 * states it. */
static int64_t min_peak(Ctx *c, Decision *out, int64_t enough, bool *exact, bool *proven) {
    double deadline = c->deadline;
    if (deadline <= 0) c->deadline = acc_now_s() + PLAN_MIN_PEAK_DEFAULT_S;
    int64_t best = min_peak_search(c, out, enough, proven);
    *exact = !c->timed_out;
    *proven = *proven && *exact && offload_set_complete(c);
    if (deadline <= 0) c->deadline = 0, c->timed_out = false;
    return best;
}

/* When the heuristics find no plan and there are at most 64 free decisions:
 * the branch and bound at budget, node-limited (bnb_nodes), from save-all;
 * a plan it found without finishing is then polished. Not past --time-limit.
 * Whether it finds a plan depends on the budget only, as in prove_min_peak,
 * which runs it below the stated minimum. */
static bool fallback_exact(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t budget, PlanStatus *status) {
    long long nodes = bnb_nodes(k);
    if (nodes == 0 || pl_out_of_time(c) || pl_covering_bound(c, budget) == INFINITY) return false;
    for (int i = 0; i < c->g->nodes.n; i++) dec[i] = DEC_SAVE;
    pl_apply_forced(c, dec);
    bool found, done = pl_exact_search(c, dec, free_ids, k, budget, INFINITY, nodes, false, &found);
    *status = done ? PLAN_OPTIMAL : PLAN_HEURISTIC;
    if (found && !done) polish(c, dec, budget); /* stopped at its first plans: improve them */
    return found;
}

void plan_make(const Graph *g, const Autodiff *ad, const PlanOptions *o, Plan *p) {
    Ctx c;
    ctx_init(&c, g, ad, o);
    int n = g->nodes.n;
    memset(p, 0, sizeof *p);
    p->dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    for (int i = 0; i < n; i++) p->n_candidates += c.cand[i] && c.forced[i] < 0;
    int64_t budget = c.budget > 0 ? c.budget : INT64_MAX;
    if (o->policy.kind != POL_OPTIMAL) {
        policy_decisions(&c, &o->policy, p->dec);
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
    int *free_ids = pool_alloc(&c.mem, (size_t)n * sizeof(int));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (c.cand[i] && c.forced[i] < 0) free_ids[k++] = i;
    PlanStatus status = PLAN_HEURISTIC;
    if (k <= exhaustive_max() && k <= enumerate_max()) {
        status = enumerate(&c, p->dec, free_ids, k, budget, false) < INFINITY ? PLAN_OPTIMAL : PLAN_INFEASIBLE;
        if (status == PLAN_INFEASIBLE && widen_offloads(&c))
            status = enumerate(&c, p->dec, free_ids, k, budget, false) < INFINITY ? PLAN_OPTIMAL : PLAN_INFEASIBLE;
    } else if (k <= exhaustive_max()) { /* the heuristics' plan, then the proof */
        double incumbent = INFINITY;
        if (best_of_heuristics(&c, p->dec, budget, true)) pl_evaluate(&c, p->dec, false, &e, NULL), incumbent = e.cost;
        bool found;
        status = pl_exact_search(&c, p->dec, free_ids, k, budget, incumbent, PL_BNB_NODES, false, &found)
                     ? PLAN_OPTIMAL
                     : PLAN_HEURISTIC;
        if (!found) status = PLAN_INFEASIBLE;
    } else if ((offload_in_programs(&c), best_of_heuristics(&c, p->dec, budget, true)) ||
               (widen_offloads(&c) && best_of_heuristics(&c, p->dec, budget, true))) {
        status = PLAN_HEURISTIC;
    } else if (fallback_exact(&c, p->dec, free_ids, k, budget, &status)) {
        /* the branch and bound found a plan the heuristics missed */
    } else {
        bool exact, proven;
        int64_t least = min_peak(&c, p->dec, budget, &exact, &proven);
        if (least <= budget) { /* the smallest plan found fits: improve it */
            polish(&c, p->dec, budget);
        } else { /* p->dec: the plan at the smallest peak */
            p->min_peak_bytes = least, p->min_peak_exact = exact, p->min_peak_proven = proven;
            status = PLAN_INFEASIBLE;
        }
    }
    if (o->host_bytes > 0) {
        /* offload a free decision, scored as the code runs. The searches
         * above priced every copy at its full time (the programs' offload
         * columns, or the seed set's drops); over three fates with exposed
         * times nothing is proven, and a copy may hide entirely, so the
         * covering rows' prices are no lower bound: the bound is 0. */
        if (status != PLAN_INFEASIBLE && !offload_fixed() && offload_search()) pl_offload_search(&c, p->dec, budget);
        if (status == PLAN_OPTIMAL) status = PLAN_HEURISTIC;
        p->bound = 0;
    } else {
        p->bound = pl_covering_bound(&c, budget);
    }
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
    widen_offloads(&c); /* the least memory offloading reaches (plan_make widens the set before its descent) */
    out->min_peak_bytes = min_peak(&c, out->dec, 0, &out->min_peak_exact, &out->min_peak_proven);
    finish(&c, out, PLAN_HEURISTIC);
    ctx_free(&c);
}
