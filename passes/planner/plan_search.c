/* plan_search.c - the planner's searches past the cut: the flip search,
 * which improves a plan that fits by an integer program over sets of flips,
 * and the branch and bound that proves the optimum of small graphs for
 * benchmarks (ACC_EXHAUSTIVE_MAX above 24).
 *
 * Layering: called by planner.c; calls plan_cut.c (a flip set's plan is cut
 * and restored before it is scored), plan_bound.c (the rows over the budget)
 * and plan_core.c, never planner.c.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner_internal.h"

/* Live bytes at each anchor step of dec's schedule - the forward steps, the
 * seed and the backward steps, which every schedule of the graph has in the
 * same order - counting the recompute steps just before an anchor with it
 * (the most live at any of them). prof[] gets one entry per anchor (persistent
 * bytes included); returns how many. */
static int anchor_profile(Ctx *c, const Decision *dec, int64_t *prof, Eval *e) {
    c->n_evals++;
    Schedule *s = &c->scratch;
    sched_rebuild(c->g, c->ad, dec, &c->so, s);
    int ns = s->steps.n;
    int64_t *live = acc_xrealloc(NULL, (size_t)(ns + 1) * sizeof(int64_t));
    int64_t persistent = sched_live_bytes(s, live), seg = persistent, peak = persistent;
    int na = 0;
    e->cost = 0;
    for (int t = 0; t < ns; t++) {
        seg = live[t] > seg ? live[t] : seg;
        peak = live[t] > peak ? live[t] : peak;
        if (s->steps.v[t].kind == ST_RECOMPUTE || s->steps.v[t].kind == ST_FETCH) {
            if (s->steps.v[t].kind == ST_RECOMPUTE) e->cost += c->time[s->steps.v[t].node];
            continue;
        }
        if (s->steps.v[t].kind == ST_OFFLOAD) { /* counted with the step it follows */
            e->cost += c->transfer[s->steps.v[t].node];
            continue;
        }
        prof[na++] = seg;
        seg = persistent;
    }
    e->max_live = peak;
    e->arena = -1, e->flops = -1, e->peak_step = -1;
    free(live);
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

/* Whether flip f (of node flip[f] to fate[f]) drops a tensor the backward
 * reads to recompute it, with the intermediates it needs. */
static bool drops_closure(const Ctx *c, const int *flip, const Decision *fate, int f) {
    return c->read[flip[f]] && fate[f] == DEC_RECOMPUTE;
}

/* The flip search's program around plan dec. Columns 1..n_flips: x_f, flip f
 * of node flip[f] to fate[f] (a tensor the backward reads to any other of
 * its fates - kept, recomputed with the intermediates it needs, offloaded
 * where pl_may_offload - at most one of them; keep a dropped intermediate,
 * or a saved one some drop's closure would recompute). Then one column r_j
 * per intermediate j that may be recomputed: 1 when it is. The objective is
 * the cost of the flipped plan less `*constant`, exactly for the recompute
 * time: a read tensor costs its fate's (pl_fate_cost); an intermediate its
 * time when dropped and some recomputed node reads it (r_j >= r_k for each
 * consumer k, unless j is kept), or when a flip's closure drops it (r_j >=
 * x_f) - so two flips that share the intermediates their recomputation
 * needs pay for them once. With offload flips, the host bytes of the
 * offloads stay within the host budget (each tensor's own: a sum, at least
 * the host arena). */
static void flip_program(const Ctx *c, const Decision *dec, const int *flip, const Decision *fate, int n_flips,
                         double *constant, int *rcol, int *scratch /* [3n] */, LpBuild *p) {
    int n = c->g->nodes.n;
    int *xcol = scratch, *stamp = scratch + n, *list = scratch + 2 * n; /* xcol: a node's first flip */
    for (int i = 0; i < n; i++) xcol[i] = rcol[i] = 0, stamp[i] = -1;
    lp_build_init(p, NULL, false);
    *constant = 0;
    bool host = false; /* some flip offloads, or stops offloading */
    for (int f = 0; f < n_flips; f++) {
        int i = flip[f];
        double obj = c->read[i] ? pl_fate_cost(c, i, fate[f]) - pl_fate_cost(c, i, dec[i]) : 0;
        int col = lp_col(p, NULL, true, 0, 1, obj * 1e6);
        if (!xcol[i]) xcol[i] = col;
        host |= fate[f] == DEC_OFFLOAD || dec[i] == DEC_OFFLOAD;
    }
    for (int i = 0; i < n; i++)
        if (c->cand[i] && c->read[i] && dec[i] != DEC_SAVE) *constant += pl_fate_cost(c, i, dec[i]);
    for (int f = 1; f < n_flips; f++) /* a node's flips are exclusive */
        if (flip[f] == flip[f - 1]) {
            int r = lp_row(p, GLP_UP, 0, 1);
            lp_coef(p, r, f, 1), lp_coef(p, r, f + 1, 1);
        }
    if (host) {
        int r = lp_row(p, GLP_UP, 0, (double)(c->o->host_bytes - pl_host_used(c, dec)) / 1e3); /* kilobytes */
        for (int f = 0; f < n_flips; f++)
            if (fate[f] == DEC_OFFLOAD || dec[flip[f]] == DEC_OFFLOAD)
                lp_coef(p, r, f + 1, (fate[f] == DEC_OFFLOAD ? 1 : -1) * (double)c->host_size[flip[f]] / 1e3);
    }
    /* r columns: dropped intermediates, and those some flip's closure drops */
    for (int f = 0; f < n_flips; f++)
        if (drops_closure(c, flip, fate, f)) {
            int m = pl_closure_list(c, dec, flip[f], stamp, f, list, 0);
            for (int k = 0; k < m; k++) rcol[list[k]] = -1;
        }
    for (int i = 0; i < n; i++)
        if (c->cand[i] && !c->read[i] && (dec[i] == DEC_RECOMPUTE || rcol[i] < 0))
            rcol[i] = lp_col(p, NULL, false, 0, 1, c->time[i] * 1e6);
    int ind[6];
    double val[6];
    for (int f = 0; f < n_flips; f++) /* r_j >= x_f for j in f's closure */
        if (drops_closure(c, flip, fate, f)) {
            int m = pl_closure_list(c, dec, flip[f], stamp, n + f, list, 0);
            for (int k = 0; k < m; k++) { /* unless j is kept: r_j + x_j >= x_f */
                int r = lp_row(p, GLP_LO, 0, 0);
                lp_coef(p, r, rcol[list[k]], 1), lp_coef(p, r, f + 1, -1);
                if (xcol[list[k]]) lp_coef(p, r, xcol[list[k]], 1);
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
            } else if (xcol[k]) { /* k recomputed: cur_k + each flip's change of it */
                lo = dec[k] == DEC_RECOMPUTE;
                for (int g = xcol[k] - 1; g < n_flips && flip[g] == k; g++)
                    if ((fate[g] == DEC_RECOMPUTE) != (dec[k] == DEC_RECOMPUTE))
                        ind[++len] = g + 1, val[len] = fate[g] == DEC_RECOMPUTE ? -1 : 1;
            } else if (dec[k] == DEC_RECOMPUTE) {
                lo = 1;
            } else {
                continue;
            }
            int r = lp_row(p, GLP_LO, lo, 0);
            for (int e = 1; e <= len; e++) lp_coef(p, r, ind[e], val[e]);
        }
    }
}

/* dec with flips f[0..m) applied into out: the drops first (each with the
 * intermediates of dec it needs), then the saves and the keeps (an
 * intermediate kept from the forward pass although a drop's closure would
 * recompute it) and the offloads. */
static void apply_flips(const Ctx *c, const Decision *dec, const int *flip, const Decision *fate, const int *f, int m,
                        Decision *out) {
    memcpy(out, dec, (size_t)c->g->nodes.n * sizeof(Decision));
    for (int k = 0; k < m; k++)
        if (drops_closure(c, flip, fate, f[k])) pl_drop_closure(c, out, flip[f[k]]);
    for (int k = 0; k < m; k++)
        if (!drops_closure(c, flip, fate, f[k])) out[flip[f[k]]] = fate[f[k]];
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
    lp_node_limit(tree, &cb->nodes_left);
}

/* One memory row of the flip program: at anchor k, the live bytes with the
 * flips' (and interacting pairs') changes added stay within target. */
static void flip_row(LpBuild *p, const double *delta, int na, int k, int n_flips, int n_pairs, const int *pcol,
                     double room) {
    int r = lp_row(p, GLP_UP, 0, room / 1e3); /* kilobytes: keep the matrix well scaled */
    for (int f = 0; f < n_flips + n_pairs; f++)
        if (delta[(size_t)f * na + k] != 0 && (f < n_flips || pcol[f - n_flips]))
            lp_coef(p, r, f < n_flips ? f + 1 : pcol[f - n_flips], delta[(size_t)f * na + k] / 1e3);
}

/* The flip search's state: its arguments, the round's flips, pairs and
 * counters, and its scratch arrays, taken once from mem by pl_flip_search
 * (so that a failure of GLPK, which leaves flip_rounds midway, loses none of
 * them; delta and start grow with the round, from the heap). */
typedef struct {
    Ctx *c;
    Decision *dec;
    int64_t target, budget;
    Pool mem;                  /* the fixed-size arrays below */
    int n_flips, n_pairs, na;  /* this round's flips, interacting pairs, anchors */
    double work;               /* spent so far in this phase (FLIP_WORK) */
    int hood;                  /* the neighbourhood: 0 flips, 1 and keeps, 2 and pairs through a closure */
    bool presolve;             /* GLPK's MIP presolver on (else the LP's simplex first) */
    Eval base;                 /* dec's score at the start of the round */
    int64_t *base_prof, *prof; /* [2n + 2] */
    bool *in_lp;               /* [2n + 2] */
    Decision *tmp;             /* [n] */
    int *flip;                 /* [2n] each flip's node, a node's flips together */
    Decision *fate;            /* [2n] each flip's fate for its node */
    double *delta;             /* [flip * na + anchor]; pairs after the flips: their interaction */
    LpBuild prog;              /* the round's program (pl_flip_search frees it, should GLPK fail midway) */
    bool *pick;                /* [2n] */
    int *picked;               /* [2n] */
    int *fcol;                 /* [n] each node's first flip, -1 */
    int *pair, *pcol;          /* [2 n ACC_MAX_IN], [n ACC_MAX_IN] */
    int *rcol_of;              /* [n] */
    int *program;              /* [3n] flip_program's scratch */
    double *recomputed;        /* [n] */
    double *start;             /* [1 + columns] */
} Flip;

/* This round's flips (every free tensor the backward reads, and every
 * dropped intermediate) and the pairs of flips that interact (a flip of one
 * of a flipped node's inputs). False when the round is past the search's
 * bounds. */
static bool collect_flips(Flip *F) {
    Ctx *c = F->c;
    const Decision *dec = F->dec;
    int n = c->g->nodes.n, *flip = F->flip, *fcol = F->fcol, *pair = F->pair;
    int n_flips = 0, n_pairs = 0;
    bool *keep = F->pick; /* [n] scratch: saved intermediates some drop's closure recomputes */
    for (int i = 0; i < n; i++) keep[i] = false, fcol[i] = -1;
    for (int i = 0; i < n; i++)
        if (c->cand[i] && c->forced[i] < 0 && c->read[i] && dec[i] != DEC_RECOMPUTE) {
            int m = pl_closure_list(c, dec, i, fcol, i, F->picked, 0);
            for (int k = 0; k < m && F->hood > 0; k++) keep[F->picked[k]] = true;
        }
    Decision *fate = F->fate;
    for (int i = 0; i < n; i++) {
        if (!c->cand[i] || c->forced[i] >= 0 || !(c->read[i] || dec[i] == DEC_RECOMPUTE || keep[i])) continue;
        if (!c->read[i]) { /* an intermediate: kept */
            flip[n_flips] = i, fate[n_flips++] = DEC_SAVE;
            continue;
        }
        /* a read tensor: saved <-> recomputed, then offloaded or not */
        flip[n_flips] = i, fate[n_flips++] = dec[i] == DEC_SAVE ? DEC_RECOMPUTE : DEC_SAVE;
        if (dec[i] == DEC_OFFLOAD) flip[n_flips] = i, fate[n_flips++] = DEC_RECOMPUTE;
        else if (pl_may_offload(c, i)) flip[n_flips] = i, fate[n_flips++] = DEC_OFFLOAD;
    }
    F->n_flips = n_flips;
    if (n_flips == 0 || F->work >= FLIP_WORK || (double)n_flips * F->na > FLIP_MAX_ENTRIES) return false;
    for (int i = 0; i < n; i++) fcol[i] = -1;
    for (int f = n_flips - 1; f >= 0; f--) fcol[flip[f]] = f; /* a node's first flip; the others follow it */
    /* a flip interacts with the flips of the inputs of its node and, for a
     * drop, of the intermediates its closure recomputes with it: saving
     * such an input spares that recomputation, and its transient */
    int *stamp = F->program, *list = F->program + n, max_pairs = n * ACC_MAX_IN;
    for (int i = 0; i < n; i++) stamp[i] = -1;
    for (int f = 0; f < n_flips && n_pairs < max_pairs; f++) {
        list[0] = flip[f];
        int m = 1;
        if (F->hood == 2 && drops_closure(c, flip, fate, f)) m = pl_closure_list(c, dec, flip[f], stamp, f, list, 1);
        for (int l = 0; l < m; l++) {
            const Node *x = graph_node(c->g, list[l]);
            for (int q = 0; q < x->n_in && n_pairs < max_pairs; q++)
                for (int g2 = fcol[x->in[q]]; g2 >= 0 && g2 < n_flips && flip[g2] == x->in[q] && n_pairs < max_pairs;
                     g2++) {
                    bool dup = g2 == f;
                    for (int p = 0; p < n_pairs && !dup; p++) dup = pair[2 * p] == g2 && pair[2 * p + 1] == f;
                    if (!dup) pair[2 * n_pairs] = g2, pair[2 * n_pairs + 1] = f, n_pairs++;
                }
        }
    }
    F->n_pairs = n_pairs;
    return !(F->work >= FLIP_WORK || (double)(n_flips + n_pairs) * F->na > FLIP_MAX_ENTRIES);
}

/* Price every flip and every pair by simulation: delta, its change of the
 * live bytes at each anchor (a pair's: what it adds to its two flips' sum).
 * Stops early past the deadline (c->timed_out). */
static void price_flips(Flip *F) {
    Ctx *c = F->c;
    int n_flips = F->n_flips, n_pairs = F->n_pairs, na = F->na, *pair = F->pair;
    double *delta = F->delta = acc_xrealloc(F->delta, (size_t)(n_flips + n_pairs) * (size_t)na * sizeof(double));
    for (int f = 0; f < n_flips + n_pairs && !pl_out_of_time(c); f++) {
        int one[1] = {f};
        Eval e;
        apply_flips(c, F->dec, F->flip, F->fate, f < n_flips ? one : &pair[2 * (f - n_flips)], f < n_flips ? 1 : 2,
                    F->tmp);
        anchor_profile(c, F->tmp, F->prof, &e);
        double *d = &delta[(size_t)f * na];
        for (int k = 0; k < na; k++) d[k] = (double)(F->prof[k] - F->base_prof[k]);
        if (f < n_flips) continue;
        const double *d1 = &delta[(size_t)pair[2 * (f - n_flips)] * na];
        const double *d2 = &delta[(size_t)pair[2 * (f - n_flips) + 1] * na];
        for (int k = 0; k < na; k++) d[k] -= d1[k] + d2[k]; /* the interaction */
    }
}

/* A column z_p = x_a x_b for each pair that interacts (pcol[p], 0 if it
 * does not): linearised from below when the pair needs more memory than the
 * sum of its flips, from above when it needs less. */
static void add_pair_columns(Flip *F, LpBuild *lp) {
    int n_flips = F->n_flips, na = F->na;
    for (int p = 0; p < F->n_pairs; p++) {
        const double *d = &F->delta[(size_t)(n_flips + p) * na];
        bool more = false, less = false; /* the pair needs more / less memory than the sum */
        for (int k = 0; k < na; k++) more |= d[k] > 0, less |= d[k] < 0;
        F->pcol[p] = 0;
        if (!more && !less) continue;
        int z = F->pcol[p] = lp_col(lp, NULL, false, 0, 1, 0), xa = F->pair[2 * p] + 1, xb = F->pair[2 * p + 1] + 1;
        if (more) { /* z >= x_a + x_b - 1 */
            int r = lp_row(lp, GLP_LO, -1, 0);
            lp_coef(lp, r, z, 1), lp_coef(lp, r, xa, -1), lp_coef(lp, r, xb, -1);
        }
        for (int q = 0; q < 2 && less; q++) { /* z <= x_a, z <= x_b */
            int r = lp_row(lp, GLP_UP, 0, 0);
            lp_coef(lp, r, z, 1), lp_coef(lp, r, q ? xb : xa, -1);
        }
    }
}

/* The round's program: flip_program, the pairs' columns, and the memory rows
 * of the steps one flip alone could push over the target (in_lp). Also
 * records which nodes dec recomputes (the first incumbent's r columns). */
static void round_program(Flip *F, double *constant) {
    Ctx *c = F->c;
    int n = c->g->nodes.n, n_flips = F->n_flips, na = F->na;
    LpBuild *lp = &F->prog;
    flip_program(c, F->dec, F->flip, F->fate, n_flips, constant, F->rcol_of, F->program, lp);
    sched_rebuild(c->g, c->ad, F->dec, &c->so, &c->scratch);
    for (int i = 0; i < n; i++) F->recomputed[i] = 0;
    for (int t = 0; t < c->scratch.steps.n; t++)
        if (c->scratch.steps.v[t].kind == ST_RECOMPUTE) F->recomputed[c->scratch.steps.v[t].node] = 1;
    add_pair_columns(F, lp);
    for (int k = 0; k < na; k++) { /* the steps one flip alone pushes over the target */
        double worst = 0;
        for (int f = 0; f < n_flips; f++)
            worst = F->delta[(size_t)f * na + k] > worst ? F->delta[(size_t)f * na + k] : worst;
        F->in_lp[k] = (double)F->base_prof[k] + worst > (double)F->target;
        if (F->in_lp[k])
            flip_row(lp, F->delta, na, k, n_flips, F->n_pairs, F->pcol, (double)(F->target - F->base_prof[k]));
    }
}

/* Branch and bound on the round's program within what is left of FLIP_WORK
 * (nnz: its nonzeros + 1), from dec itself (no flip) as the incumbent.
 * Whether it found a set of flips. */
static bool solve_program(Flip *F, glp_prob *lp, double nnz) {
    Ctx *c = F->c;
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.presolve = GLP_ON; /* off: lp_intopt_from_basis */
    io.mir_cuts = io.cov_cuts = GLP_ON;
    io.tm_lim = pl_ms_left(c);
    int nodes_given =
        (FLIP_WORK - F->work) / nnz < FLIP_NODE_LIMIT ? (int)((FLIP_WORK - F->work) / nnz) : FLIP_NODE_LIMIT;
    int nc = glp_get_num_cols(lp);
    double *start = F->start = acc_xrealloc(F->start, (size_t)(nc + 1) * sizeof(double));
    for (int j = 0; j <= nc; j++) start[j] = 0;
    for (int i = 0; i < c->g->nodes.n; i++) /* the intermediates the plan recomputes */
        if (F->rcol_of[i] > 0) start[F->rcol_of[i]] = F->recomputed[i];
    FlipCb cb = {nodes_given, start, false};
    io.cb_func = flip_callback;
    io.cb_info = &cb;
    int rc = F->presolve ? glp_intopt(lp, &io) : lp_intopt_from_basis(lp, &io);
    if (rc == LP_NO_BASIS) return false;
    int nodes_left = cb.nodes_left;
    F->work += nnz * (nodes_given - nodes_left + 1);
    if (rc == GLP_ETMLIM) c->timed_out = true;
    return lp_mip_found(lp, rc);
}

/* The plan of the chosen set (F->tmp, scored into e; it may be over the
 * target) is repaired by a cut if that keeps it cheaper than dec; if it then
 * fits, within the budget once allocated, it becomes dec. Whether it did. */
static bool take_if_better(Flip *F, Eval *e) {
    Ctx *c = F->c;
    if (e->max_live > F->target && e->cost < F->base.cost - 1e-12 && pl_cut_to(c, F->tmp, F->target)) { /* repair */
        pl_restore(c, F->tmp, F->target);
        pl_evaluate(c, F->tmp, false, e, NULL);
    }
    if (e->max_live <= F->target && e->cost < F->base.cost - 1e-12) {
        Eval ea;
        pl_evaluate(c, F->tmp, true, &ea, NULL);
        if (ea.arena <= F->budget) {
            memcpy(F->dec, F->tmp, (size_t)c->g->nodes.n * sizeof(Decision));
            return true;
        }
    }
    return false;
}

/* Exclude the chosen set (pick, m flips) from the program: sum over picked
 * (1 - x) + sum over the others x >= 1. */
static void exclude_set(Flip *F, int m) {
    int r = lp_row(&F->prog, GLP_LO, 1 - m, 0);
    for (int f = 0; f < F->n_flips; f++) lp_coef(&F->prog, r, f + 1, F->pick[f] ? -1 : 1);
}

/* Solve the round's program up to FLIP_SOLVES times: a set that the
 * simulation finds over the target at a step the program lacks adds that
 * step's row; a set that is no better once simulated (and repaired) is
 * excluded (the rows go to GLPK before the next solve). Whether dec
 * improved. */
static bool improve_round(Flip *F, double constant) {
    Ctx *c = F->c;
    int na = F->na;
    glp_prob *lp = F->prog.lp;
    for (int solve = 0; solve < FLIP_SOLVES && !pl_out_of_time(c); solve++) {
        lp_load(&F->prog);
        double nnz = glp_get_num_nz(lp) + 1;
        if (F->work + nnz >= FLIP_WORK) break;
        if (!solve_program(F, lp, nnz)) break;
        if (constant + glp_mip_obj_val(lp) / 1e6 > F->base.cost * (1 - 1e-9) - 1e-15) break; /* nothing cheaper */
        int m = 0;
        for (int f = 0; f < F->n_flips; f++) {
            F->pick[f] = glp_mip_col_val(lp, f + 1) > 0.5;
            if (F->pick[f]) F->picked[m++] = f;
        }
        Eval e;
        apply_flips(c, F->dec, F->flip, F->fate, F->picked, m, F->tmp);
        anchor_profile(c, F->tmp, F->prof, &e);
        bool added = false; /* steps over the target that the program did not have */
        for (int k = 0; k < na; k++)
            if (F->prof[k] > F->target && !F->in_lp[k]) {
                F->in_lp[k] = added = true;
                flip_row(&F->prog, F->delta, na, k, F->n_flips, F->n_pairs, F->pcol,
                         (double)(F->target - F->base_prof[k]));
            }
        if (added) continue;
        if (take_if_better(F, &e)) return true;
        exclude_set(F, m);
    }
    return false;
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
 * that the sum says fits but the simulation does not is repaired (pl_cut_to and
 * pl_restore) if that keeps it cheaper, else excluded, and the program solved
 * again. Repeat from the improved plan. This finds trades of several saves for
 * several drops at once (save three cheap norms, drop two activations; drop q
 * and k of an attention, which share the projection their recomputation
 * needs, and save five tensors of the MLP) that one-for-one exchanges and the
 * peak cuts cannot reach. */
static void flip_rounds(void *arg) {
    Flip *F = arg;
    Ctx *c = F->c;
    F->work = 0;
    for (int round = 0; round < c->g->nodes.n; round++) {
        if (pl_out_of_time(c)) break;
        F->na = anchor_profile(c, F->dec, F->base_prof, &F->base);
        if (!collect_flips(F)) break;
        price_flips(F);
        if (c->timed_out) break; /* the flips were not all simulated */
        double constant;
        round_program(F, &constant);
        bool improved = improve_round(F, constant);
        lp_build_free(&F->prog);
        if (!improved) break;
    }
}

void pl_flip_search(Ctx *c, Decision *dec, int64_t target, int64_t budget) {
    size_t n = (size_t)c->g->nodes.n, ns_max = 2 * n + 2;
    Flip F;
    memset(&F, 0, sizeof F);
    F.c = c, F.dec = dec, F.target = target, F.budget = budget;
    F.base_prof = pool_alloc(&F.mem, ns_max * sizeof(int64_t));
    F.prof = pool_alloc(&F.mem, ns_max * sizeof(int64_t));
    F.in_lp = pool_alloc(&F.mem, ns_max * sizeof(bool));
    F.tmp = pool_alloc(&F.mem, n * sizeof(Decision));
    F.flip = pool_alloc(&F.mem, 2 * n * sizeof(int)); /* a read tensor has two flips at most */
    F.fate = pool_alloc(&F.mem, 2 * n * sizeof(Decision));
    F.pick = pool_alloc(&F.mem, 2 * n * sizeof(bool));
    F.picked = pool_alloc(&F.mem, 2 * n * sizeof(int));
    F.fcol = pool_alloc(&F.mem, n * sizeof(int));
    F.pair = pool_alloc(&F.mem, n * 2 * ACC_MAX_IN * sizeof(int));
    F.pcol = pool_alloc(&F.mem, n * ACC_MAX_IN * sizeof(int));
    F.rcol_of = pool_alloc(&F.mem, n * sizeof(int));
    F.program = pool_alloc(&F.mem, 3 * n * sizeof(int));
    F.recomputed = pool_alloc(&F.mem, n * sizeof(double));
    /* one search from dec in each neighbourhood, the cheapest plan kept
     * (the first on a tie): local searches, none of whose paths contains
     * another's */
    Decision *start = pool_alloc(&F.mem, n * sizeof(Decision)), *best = pool_alloc(&F.mem, n * sizeof(Decision));
    memcpy(start, dec, n * sizeof(Decision));
    double best_cost = INFINITY;
    for (int hood = 0; hood < 3 && !pl_out_of_time(c); hood++) {
        char err[200];
        F.hood = hood;
        memcpy(dec, start, n * sizeof(Decision));
        F.presolve = true;
        bool ok = lp_guarded(flip_rounds, &F, err, sizeof err); /* else dec: the last plan taken */
        if (!ok) {            /* GLPK's MIP presolver fails on a program it reduces to rows without columns
                      ("glp_add_cols: ncs = 0"): again from dec, without it */
            F.prog.lp = NULL; /* the program went with GLPK's environment */
            lp_build_free(&F.prog);
            F.presolve = false;
            ok = lp_guarded(flip_rounds, &F, err, sizeof err);
        }
        if (!ok) pl_solver_failed(c, err), F.prog.lp = NULL;
        lp_build_free(&F.prog);
        Eval e;
        pl_evaluate(c, dec, false, &e, NULL);
        if (e.cost < best_cost) best_cost = e.cost, memcpy(best, dec, n * sizeof(Decision));
    }
    if (best_cost < INFINITY) memcpy(dec, best, n * sizeof(Decision));
    pool_free(&F.mem);
    free(F.delta), free(F.start);
}

/* ---- the peak search: a plan under a target max-live ---------------------------
 * The descent steers by cost and its shrink step takes a flip only when it
 * lowers the max-live. Where the peak is reached at several places of the
 * schedule (a two-layer Llama: in each layer's backward), no single flip or
 * pair lowers it, although flips that each lower one place do together
 * (that Llama's least peak needs seven changed decisions from the descent's
 * plan). So this search lowers the bytes over the target summed over the
 * anchor steps, which each such flip does. */

/* Bytes over floor summed over dec's anchor steps; *peak: the most live. */
static int64_t peak_excess(Ctx *c, const Decision *dec, int64_t floor, int64_t *prof, int64_t *peak) {
    Eval e;
    int na = anchor_profile(c, dec, prof, &e);
    int64_t over = 0;
    for (int a = 0; a < na; a++) over += prof[a] > floor ? prof[a] - floor : 0;
    *peak = e.max_live;
    return over;
}

/* Flip node i of dec: save it if dropped, else drop it with the
 * intermediates its recomputation needs (a saved intermediate: dropped). */
static void peak_flip(const Ctx *c, Decision *dec, int i) {
    if (dec[i] != DEC_SAVE) dec[i] = DEC_SAVE;
    else if (c->read[i]) pl_drop_closure(c, dec, i);
    else dec[i] = DEC_RECOMPUTE;
}

/* Descend from dec on the bytes over floor until a plan's max-live fits
 * target (true, in dec) or no single or paired flip lowers them. */
static bool peak_descent(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t floor, int64_t target) {
    size_t n = (size_t)c->g->nodes.n;
    int64_t *prof = acc_xrealloc(NULL, (2 * n + 2) * sizeof(int64_t));
    Decision *one = acc_xrealloc(NULL, n * sizeof(Decision)), *two = acc_xrealloc(NULL, n * sizeof(Decision));
    int64_t peak, o, cur = peak_excess(c, dec, floor, prof, &peak);
    bool improved = true;
    while (peak > target && improved && !pl_out_of_time(c)) {
        improved = false;
        for (int x = 0; x < k && !improved; x++) {
            memcpy(one, dec, n * sizeof(Decision));
            peak_flip(c, one, free_ids[x]);
            if ((o = peak_excess(c, one, floor, prof, &peak)) < cur || peak <= target)
                cur = o, improved = true, memcpy(dec, one, n * sizeof(Decision));
        }
        for (int x = 0; x < k && !improved; x++) {
            memcpy(one, dec, n * sizeof(Decision));
            peak_flip(c, one, free_ids[x]);
            for (int y = x + 1; y < k && !improved; y++) {
                if (one[free_ids[y]] != dec[free_ids[y]]) continue; /* the first flip's closure moved it */
                memcpy(two, one, n * sizeof(Decision));
                peak_flip(c, two, free_ids[y]);
                if ((o = peak_excess(c, two, floor, prof, &peak)) < cur || peak <= target)
                    cur = o, improved = true, memcpy(dec, two, n * sizeof(Decision));
            }
        }
        if (!improved) peak_excess(c, dec, floor, prof, &peak); /* dec's own, not the last tried */
    }
    free(prof), free(one), free(two);
    return peak <= target;
}

bool pl_peak_search(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t target) {
    size_t n = (size_t)c->g->nodes.n;
    Decision *start = acc_xrealloc(NULL, n * sizeof(Decision));
    memcpy(start, dec, n * sizeof(Decision));
    bool fits = false;
    for (int s = 0; s <= 6 && !fits; s++) {
        memcpy(dec, start, n * sizeof(Decision));
        if (peak_descent(c, dec, free_ids, k, target - (s ? target >> (8 - s) : 0), target)) {
            Eval e;
            pl_evaluate(c, dec, true, &e, NULL);
            fits = e.arena <= target;
        }
    }
    free(start);
    return fits;
}

/* ---- exact search by branch and bound (benchmarks) ---------------------------
 * For ENUMERATE_MAX < free decisions <= ACC_EXHAUSTIVE_MAX: a depth-first
 * search over the free decisions, the tensors the backward reads first (most
 * expensive first, saved before dropped), then the intermediates, consumers
 * before inputs (an intermediate none of whose consumers is dropped is never
 * recomputed: only saved). A node is pruned when some step of the save-all
 * plan (P0) over the budget can no longer be covered - any plan that fits
 * must drop, among the tensors P0 keeps there only for a later backward
 * read, at least the excess (pl_covering_bound's rows) - or when the time of the
 * dropped read tensors plus, for the worst row, the cheapest fractional cover
 * of its remaining excess reaches the best plan so far (first the
 * heuristics'). Leaves are scored by the exact schedule and allocation. */

typedef struct {
    Ctx *c;
    int64_t budget;
    int k, *var, *var_of; /* decision order; node -> variable, -1 */
    Decision *dec;
    int n_rows;
    double *need, *covered, *avail;     /* per row: excess, bytes dropped, bytes still droppable */
    int *row_first, *row_len, *ent_var; /* row entries, by time per byte */
    double *ent_size;
    int *vr_first, *vr_len, *vr_row; /* rows of each variable, with sizes */
    double *vr_size;
    double fixed, best;
    Decision *best_dec;
    long long nodes, node_limit;
    bool stopped;         /* the node limit, or the deadline with a plan in hand */
    int *use_first, *use; /* consumers of variable v: use[use_first[v] .. use_first[v + 1]) */
    bool first_fit;       /* stop at the first plan that fits (a node_limit < 0) */
    bool revive;          /* no forced recomputation: every schedule's anchors are P0's steps */
    int *row_t;           /* per row: its step of P0 */
    int *fb, *back;       /* [n] first backward step of P0 reading the node (ns: none); when it is back */
    double *ravail;       /* per row: bytes still droppable that are not back by its step */
    VEC(int) undo;        /* (node, its former back) pairs, undone on the way up */
    int *fwd_last;        /* [n] the last step of P0 holding its forward tensor (-1: none in the forward) */
    double *fwd_size;     /* [n] that tensor's bytes */
    bool *rec;            /* [n] fixed as dropped and recomputed (an intermediate: for a consumer) */
} Bnb;

/* The tensors that fixed drops bring back. A dropped tensor p frees its
 * bytes at step t of P0 only until its recomputed copy exists: the schedule
 * recomputes p before the first backward step reading it (fb), and, since a
 * recomputation ensures every input it reads (schedule.c's ensure), also
 * when a dropped consumer u of p is recomputed, unless u is offloaded
 * (fetched, its inputs unread). So p is back by back(p) = min(fb(p),
 * back(u) over dropped, recomputed consumers u), and live from there to its
 * last backward read, past every row t with back(p) <= t < its first
 * backward read (its row entries end there). More drops only lower back(p):
 * computed from the fixed drops, back(p) is at or above its value in every
 * completion, so ravail (the bytes of the entries not saved and not back by
 * the row's step) is at least what any completion frees there - a row whose
 * ravail is short of its need is short in every completion, and no leaf
 * below fits. Needs P0's steps to be every schedule's anchors, which forced
 * recomputations would break: then off (b->revive). */

/* Row r can still free its excess: among all its droppable bytes, and among
 * those not back by its step. */
static bool row_covers(const Bnb *b, int r) {
    return b->avail[r] >= b->need[r] - 1e-6 && b->ravail[r] >= b->need[r] - 1e-6;
}

/* The intermediates that the fixed decisions hold in the backward pass. An
 * intermediate q read by a recomputed consumer u is live until the last such
 * recomputation, which is in the segment of step back(u) of P0: when q is
 * decided, so are its consumers and everything downstream of them (the
 * intermediates come last, consumers first; later drops lower back() only
 * along their own inputs, which come before q), so back(u) and whether u is
 * recomputed (rec) are final - the schedule's, not only bounds. And q is
 * live from
 *   - its forward step, if the branch saves (keeps) it: P0 freed it after
 *     its last forward read (fwd_last);
 *   - its recomputation, if dropped: by back(q), final too.
 * So at each row of P0 from fwd_last(q) + 1, or back(q), up to (not
 * including) max back(u) over the recomputed consumers u, every completion
 * holds q's bytes on top of what P0 holds there less what it drops: the
 * row's excess grows by them (its entries are read tensors, never q). Needs
 * P0's steps as every schedule's anchors: b->revive. False: a row fell
 * short. */
static bool bnb_hold_rows(Bnb *b, int q, int from, double sign) {
    int until = -1, d = b->var_of[q];
    for (int u = b->use_first[d]; u < b->use_first[d + 1]; u++)
        if (b->rec[b->use[u]] && b->back[b->use[u]] > until) until = b->back[b->use[u]];
    bool ok = true;
    for (int r = 0; r < b->n_rows; r++)
        if (from <= b->row_t[r] && b->row_t[r] < until) {
            b->need[r] += sign * b->fwd_size[q];
            ok &= row_covers(b, r);
        }
    return ok;
}

/* Count p as back from `to` on (to < back(p)): its entries at rows from to
 * up to its former back no longer count while it is not saved, and if it is
 * dropped, its inputs are back by then too. False: a row fell short. */
static bool bnb_lower(Bnb *b, int p, int to) {
    if (b->var_of[p] < 0 || to >= b->back[p]) return true;
    int d = b->var_of[p], old = b->back[p];
    bool ok = true;
    VEC_PUSH(b->undo, p);
    VEC_PUSH(b->undo, old);
    b->back[p] = to;
    if (b->dec[p] != DEC_SAVE)
        for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) {
            int r = b->vr_row[q];
            if (to <= b->row_t[r] && b->row_t[r] < old) {
                b->ravail[r] -= b->vr_size[q];
                ok &= b->ravail[r] >= b->need[r] - 1e-6;
            }
        }
    if (b->dec[p] == DEC_RECOMPUTE && !b->c->offload[p]) {
        const Node *x = graph_node(b->c->g, p);
        for (int j = 0; j < x->n_in; j++) ok &= bnb_lower(b, x->in[j], to);
    }
    return ok;
}

/* Undo bnb_lower's changes down to mark entries of b->undo (latest first). */
static void bnb_unlower(Bnb *b, int mark) {
    while (b->undo.n > mark) {
        int old = b->undo.v[--b->undo.n], p = b->undo.v[--b->undo.n], d = b->var_of[p];
        if (b->dec[p] != DEC_SAVE)
            for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) {
                int r = b->vr_row[q];
                if (b->back[p] <= b->row_t[r] && b->row_t[r] < old) b->ravail[r] += b->vr_size[q];
            }
        b->back[p] = old;
    }
}

static double bnb_bound(const Bnb *b) {
    double worst = 0;
    for (int r = 0; r < b->n_rows; r++) {
        double rem = b->need[r] - b->covered[r], cost = 0;
        for (int e = b->row_first[r]; e < b->row_first[r] + b->row_len[r] && rem > 0; e++) {
            int v = b->ent_var[e], i = b->var[v];
            if (b->dec[i] != (Decision)-1) continue;
            double take = b->ent_size[e] < rem ? b->ent_size[e] : rem;
            cost += b->c->drop[i] * take / b->ent_size[e];
            rem -= take;
        }
        worst = cost > worst ? cost : worst;
    }
    return worst;
}

static void bnb_visit(Bnb *b, int d);

/* Variable d saved: its bytes can no longer make room; a kept intermediate
 * adds its own (bnb_hold_rows). */
static void bnb_save(Bnb *b, int d) {
    int i = b->var[d];
    b->dec[i] = DEC_SAVE;
    bool ok = true, hold = b->revive && !b->c->read[i] && b->fwd_last[i] >= 0;
    for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) {
        int r = b->vr_row[q];
        b->avail[r] -= b->vr_size[q];
        if (b->back[i] > b->row_t[r]) b->ravail[r] -= b->vr_size[q];
        ok &= row_covers(b, r);
    }
    if (hold) ok &= bnb_hold_rows(b, i, b->fwd_last[i] + 1, 1);
    if (ok) bnb_visit(b, d + 1);
    for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) {
        int r = b->vr_row[q];
        b->avail[r] += b->vr_size[q];
        if (b->back[i] > b->row_t[r]) b->ravail[r] += b->vr_size[q];
    }
    if (hold) bnb_hold_rows(b, i, b->fwd_last[i] + 1, -1);
}

/* Variable d dropped: its bytes cover its rows, its recomputation costs; a
 * recomputed intermediate holds its bytes (bnb_hold_rows). */
static void bnb_drop(Bnb *b, int d) {
    int i = b->var[d];
    bool read = b->c->read[i];
    b->dec[i] = DEC_RECOMPUTE;
    if (read) b->fixed += b->c->drop[i];
    for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) b->covered[b->vr_row[q]] += b->vr_size[q];
    int mark = b->undo.n;
    bool ok = true;
    b->rec[i] = read && !b->c->offload[i];
    for (int u = b->use_first[d]; u < b->use_first[d + 1] && !read; u++) b->rec[i] |= b->rec[b->use[u]];
    if (b->revive && !b->c->offload[i]) { /* its recomputation brings its inputs back with it */
        const Node *x = graph_node(b->c->g, i);
        for (int j = 0; j < x->n_in; j++) ok &= bnb_lower(b, x->in[j], b->back[i]);
    }
    bool hold = b->revive && b->rec[i] && !read && b->fwd_last[i] >= 0;
    if (hold) ok &= bnb_hold_rows(b, i, b->back[i], 1);
    if (ok) bnb_visit(b, d + 1);
    if (hold) bnb_hold_rows(b, i, b->back[i], -1);
    b->rec[i] = false;
    bnb_unlower(b, mark);
    for (int q = b->vr_first[d]; q < b->vr_first[d] + b->vr_len[d]; q++) b->covered[b->vr_row[q]] -= b->vr_size[q];
    if (read) b->fixed -= b->c->drop[i];
}

static void bnb_visit(Bnb *b, int d) {
    Ctx *c = b->c;
    if (b->stopped) return;
    if (++b->nodes > b->node_limit || (b->best < INFINITY && b->nodes % 1024 == 0 && pl_out_of_time(c))) {
        b->stopped = true;
        return;
    }
    if (b->best < INFINITY && b->fixed + bnb_bound(b) >= b->best * (1 - 1e-9)) return; /* no plan yet: no bound */
    if (d == b->k) {
        Eval e;
        pl_evaluate(c, b->dec, false, &e, NULL);
        if (e.max_live > b->budget || e.cost >= b->best * (1 - 1e-9)) return;
        pl_evaluate(c, b->dec, true, &e, NULL);
        if (e.arena > b->budget) return;
        b->best = e.cost;
        memcpy(b->best_dec, b->dec, (size_t)c->g->nodes.n * sizeof(Decision));
        b->stopped |= b->first_fit;
        return;
    }
    int i = b->var[d];
    bool may_drop = c->read[i];
    for (int u = b->use_first[d]; u < b->use_first[d + 1] && !may_drop; u++) /* an intermediate: a consumer dropped? */
        may_drop = b->dec[b->use[u]] == DEC_RECOMPUTE;
    bool drop_first = b->best == INFINITY; /* no plan yet: one that fits first, not a cheap one */
    for (int side = 0; side < 2; side++) {
        if ((side == 0) == drop_first) {
            if (may_drop) bnb_drop(b, d);
        } else {
            bnb_save(b, d);
        }
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
 * cost `incumbent`, INFINITY for none), visiting at most node_limit nodes.
 * Returns whether the search finished (a proof) and sets *found; a negative
 * node_limit (-N: N nodes) stops it at its first plan. Without an
 * incumbent only the node limit stops it, so whether it finds a plan depends
 * on the budget alone, not on the clock. consumers_first: the decisions in
 * reverse node order rather than the read tensors by time first (a second
 * order for the proof below the minimum). */
bool pl_exact_search(Ctx *c, Decision *dec, const int *free_ids, int k, int64_t budget, double incumbent,
                     long long node_limit, bool consumers_first, bool *found) {
    int n = c->g->nodes.n;
    Bnb b;
    memset(&b, 0, sizeof b);
    b.c = c, b.budget = budget, b.k = k, b.best = incumbent, b.node_limit = llabs(node_limit);
    b.first_fit = node_limit < 0;
    Pool mem = {0}; /* the search's arrays, freed in one call at its end */
    b.var = pool_alloc(&mem, (size_t)k * sizeof(int));
    b.var_of = pool_alloc(&mem, (size_t)n * sizeof(int));
    b.dec = pool_alloc(&mem, (size_t)n * sizeof(Decision));
    b.best_dec = dec;
    /* order: read tensors by time (descending), then intermediates, last
     * node first; or every decision last node first (consumers_first) */
    int m = 0;
    for (int j = 0; j < k && !consumers_first; j++)
        if (c->read[free_ids[j]]) b.var[m++] = free_ids[j];
    pl_sort_by_time(c, b.var, m);
    for (int j = k - 1; j >= 0; j--)
        if (consumers_first || !c->read[free_ids[j]]) b.var[m++] = free_ids[j];
    for (int i = 0; i < n; i++) b.var_of[i] = -1;
    for (int v = 0; v < k; v++) b.var_of[b.var[v]] = v;
    /* each variable's consumers, once (the search asks at every node) */
    b.use_first = pool_alloc(&mem, (size_t)(k + 1) * sizeof(int));
    VEC(int) use = {0};
    for (int v = 0; v < k; v++) {
        b.use_first[v] = use.n;
        for (int u = 0; u < n; u++) {
            const Node *x = graph_node(c->g, u);
            for (int j = 0; j < x->n_in; j++)
                if (x->in[j] == b.var[v]) {
                    VEC_PUSH(use, u);
                    break;
                }
        }
    }
    b.use_first[k] = use.n;
    b.use = use.v;
    /* the covering rows of P0 */
    for (int i = 0; i < n; i++) b.dec[i] = DEC_SAVE;
    pl_apply_forced(c, b.dec);
    Schedule s;
    Eval e;
    pl_evaluate(c, b.dec, false, &e, &s);
    int *last_fwd = pool_alloc(&mem, (size_t)s.bufs.n * sizeof(int));
    int *first_bwd = pool_alloc(&mem, (size_t)s.bufs.n * sizeof(int));
    pl_read_spans(&s, last_fwd, first_bwd);
    Rows rows = {{0}, {0}, {0}};
    int n_rows = pl_bound_rows(c, &s, last_fwd, first_bwd, budget, &rows);
    b.fb = pool_alloc(&mem, (size_t)n * sizeof(int));
    b.back = pool_alloc(&mem, (size_t)n * sizeof(int));
    b.revive = true;
    for (int i = 0; i < n; i++) b.fb[i] = s.steps.n, b.revive &= c->forced[i] != DEC_RECOMPUTE;
    for (int j = 0; j < s.bufs.n; j++) {
        const Buffer *x = &s.bufs.v[j];
        if ((x->kind == BUF_ACT || x->kind == BUF_AUX) && x->first >= 0 && x->first < s.first_bwd_step &&
            first_bwd[j] < b.fb[x->node])
            b.fb[x->node] = first_bwd[j];
    }
    for (int i = 0; i < n; i++) b.back[i] = b.revive ? b.fb[i] : INT_MAX; /* INT_MAX: never back */
    b.fwd_last = pool_alloc(&mem, (size_t)n * sizeof(int));
    b.fwd_size = pool_alloc(&mem, (size_t)n * sizeof(double));
    b.rec = pool_alloc(&mem, (size_t)n * sizeof(bool));
    for (int i = 0; i < n; i++) b.fwd_last[i] = -1, b.fwd_size[i] = 0, b.rec[i] = false;
    for (int j = 0; j < s.bufs.n; j++) {
        const Buffer *x = &s.bufs.v[j];
        if (x->kind == BUF_ACT && x->first >= 0 && x->last < s.first_bwd_step)
            b.fwd_last[x->node] = x->last, b.fwd_size[x->node] = (double)x->size_bytes;
    }
    sched_free(&s);
    bool done = n_rows >= 0;
    if (done) {
        b.n_rows = n_rows;
        int ne = rows.ent_node.n;
        b.need = pool_alloc(&mem, (size_t)(n_rows + 1) * sizeof(double));
        b.covered = pool_alloc(&mem, (size_t)(n_rows + 1) * sizeof(double));
        b.avail = pool_alloc(&mem, (size_t)(n_rows + 1) * sizeof(double));
        b.ravail = pool_alloc(&mem, (size_t)(n_rows + 1) * sizeof(double));
        b.row_first = pool_alloc(&mem, (size_t)(n_rows + 1) * sizeof(int));
        b.row_len = pool_alloc(&mem, (size_t)(n_rows + 1) * sizeof(int));
        b.row_t = pool_alloc(&mem, (size_t)(n_rows + 1) * sizeof(int));
        b.ent_var = pool_alloc(&mem, (size_t)(ne + 1) * sizeof(int));
        b.ent_size = pool_alloc(&mem, (size_t)(ne + 1) * sizeof(double));
        b.vr_first = pool_alloc(&mem, (size_t)(k + 1) * sizeof(int));
        b.vr_len = pool_alloc(&mem, (size_t)(k + 1) * sizeof(int));
        b.vr_row = pool_alloc(&mem, (size_t)(ne + 1) * sizeof(int));
        b.vr_size = pool_alloc(&mem, (size_t)(ne + 1) * sizeof(double));
        double *ratio = pool_alloc(&mem, (size_t)(ne + 1) * sizeof(double));
        int *perm = pool_alloc(&mem, (size_t)(ne + 1) * sizeof(int));
        for (int r = 0; r < n_rows; r++) {
            const Row *rw = &rows.v.v[r];
            b.need[r] = rw->need, b.covered[r] = b.avail[r] = 0;
            b.row_first[r] = rw->first, b.row_len[r] = rw->m, b.row_t[r] = rw->t;
            for (int q = 0; q < rw->m; q++) {
                int e2 = rw->first + q;
                perm[q] = e2;
                ratio[e2] = c->drop[rows.ent_node.v[e2]] / rows.ent_size.v[e2];
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
        bool short_row = false;
        for (int r = 0; r < n_rows; r++) {
            b.ravail[r] = 0;
            for (int e2 = b.row_first[r]; e2 < b.row_first[r] + b.row_len[r]; e2++)
                if (b.back[b.var[b.ent_var[e2]]] > b.row_t[r]) b.ravail[r] += b.ent_size[e2];
            short_row |= b.ravail[r] < b.need[r] - 1e-6;
        }
        if (!short_row) bnb_visit(&b, 0); /* else not even dropping all of it covers a row */
        done = !b.stopped;
    }
    *found = b.best < INFINITY;
    VEC_FREE(rows.v), VEC_FREE(rows.ent_node), VEC_FREE(rows.ent_size);
    pool_free(&mem), free(b.use), VEC_FREE(b.undo);
    return done;
}
