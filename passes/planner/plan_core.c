/* plan_core.c - the services every part of the model planner uses: scoring
 * a plan by its exact schedule (pl_evaluate), the user's forced decisions,
 * dropping a tensor with the intermediates its recomputation needs, the read
 * spans of a schedule's buffers, the time left, GLPK's first failure.
 *
 * The bottom of the planner's layering (planner.c -> plan_search.c ->
 * plan_cut.c, plan_bound.c -> plan_core.c): it calls no other file of the
 * planner. It holds no search and no policy; its functions change only the
 * Ctx's counters and scratch schedule and the decisions they are given.
 */
#include <limits.h>
#include <stdlib.h>

#include "planner_internal.h"

/* Milliseconds left before the deadline, for GLPK's tm_lim (INT_MAX: no deadline). */
int pl_ms_left(Ctx *c) {
    if (c->deadline <= 0) return INT_MAX;
    double ms = (c->deadline - acc_now_s() - 3 * c->alloc_s) * 1e3;
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
        e->cost = m.recompute_time + m.transfer_time;
        e->flops = -1;
        return;
    }
    Schedule s;
    double t0 = alloc ? acc_now_s() : 0;
    if (keep) {
        sched_build(c->g, c->ad, dec, &c->so, &s);
    } else {
        sched_rebuild(c->g, c->ad, dec, &c->so, &c->scratch);
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
        } else if (s.steps.v[t].kind == ST_OFFLOAD) {
            e->cost += c->transfer[s.steps.v[t].node];
        }
    if (keep) *keep = s;
    else c->scratch = s;
    if (alloc) c->alloc_s = acc_now_s() - t0;
}

void pl_evaluate_exposed(Ctx *c, const Decision *dec, Eval *e, int64_t *host) {
    c->n_evals++;
    double t0 = acc_now_s();
    sched_rebuild(c->g, c->ad, dec, &c->so, &c->scratch);
    Schedule *s = &c->scratch;
    alloc_assign(s);
    c->alloc_s = acc_now_s() - t0;
    e->max_live = s->peak_live_bytes;
    e->arena = s->arena_bytes;
    e->peak_step = s->peak_step;
    e->cost = 0, e->flops = -1;
    for (int t = 0; t < s->steps.n; t++)
        if (s->steps.v[t].kind == ST_RECOMPUTE) e->cost += c->time[s->steps.v[t].node];
    CopyTime ct;
    sched_copy_time(s, c->time, c->transfer, &ct);
    e->cost += ct.exposed_time;
    *host = s->host_bytes;
}

int64_t pl_host_used(const Ctx *c, const Decision *dec) {
    int64_t used = 0;
    for (int i = 0; i < c->g->nodes.n; i++)
        if (dec[i] == DEC_OFFLOAD) used += c->host_size[i];
    return used;
}

void pl_apply_forced(const Ctx *c, Decision *dec) {
    for (int i = 0; i < c->g->nodes.n; i++) {
        if (!c->cand[i]) dec[i] = DEC_SAVE;
        else if (c->forced[i] >= 0) dec[i] = (Decision)c->forced[i];
    }
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

/* Record the first failure of GLPK (the plan reports it). */
void pl_solver_failed(Ctx *c, const char *err) {
    if (!c->solver_error[0]) snprintf(c->solver_error, sizeof c->solver_error, "%s", err);
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


static const double *cmp_time;
static int cmp_by_time(const void *a, const void *b) {
    double x = cmp_time[*(const int *)a], y = cmp_time[*(const int *)b];
    return x > y ? -1 : x < y ? 1 : *(const int *)a - *(const int *)b;
}

void pl_sort_by_time(const Ctx *c, int *ids, int n) {
    cmp_time = c->time;
    qsort(ids, (size_t)n, sizeof(int), cmp_by_time);
}
