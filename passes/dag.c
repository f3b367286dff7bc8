/* dag.c - planning a published graph: the simulator every plan is scored by,
 * the baseline, an exhaustive search for tests, acc's heuristic incumbent and
 * the driver of the three methods (the integer programs are in dag_milp.c).
 *
 * requires: a Dag (dag_json.c), a budget. provides: a schedule (node
 * executions in order), its exact peak and total compute from dag_simulate.
 *
 * acc's method: (1) a greedy incumbent over retention decisions: a plan says,
 * per node and stage, whether the node's output may be kept into that stage;
 * what a stage needs and was not kept is recomputed there, inputs first
 * (Checkmate's "R from S", need-driven). Starting from keeping everything,
 * the greedy drops, at the peak, the held output whose drop buys the most
 * excess memory per unit of added compute, until the plan fits; then it
 * undoes drops that turn out unnecessary. (2) A compact integer program
 * (dag_milp.c) seeded with it. (3) The best plan that fits, by the simulator.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dag_impl.h"

double dag_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void staged_clear(Staged *s) { s->ev.n = s->stage.n = 0; }
void staged_free(Staged *s) { VEC_FREE(s->ev), VEC_FREE(s->stage); }
void staged_push(Staged *s, int stage, int node) {
    VEC_PUSH(s->ev, node);
    VEC_PUSH(s->stage, stage);
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) acc_panic(__FILE__, __LINE__, "out of memory");
    return p;
}

/* ---- the simulator ------------------------------------------------------------ */

void dag_simulate(const Dag *d, const int *ev, int n_ev, DagSim *out, int64_t *mem_at) {
    memset(out, 0, sizeof *out);
    out->valid = true;
    out->n_events = n_ev;
    int *inst = xcalloc((size_t)d->n, sizeof(int)); /* node -> event of its latest copy, -1 */
    int *last = xcalloc((size_t)n_ev, sizeof(int));  /* event -> last event reading its copy */
    int64_t *delta = xcalloc((size_t)n_ev + 1, sizeof(int64_t));
    for (int i = 0; i < d->n; i++) inst[i] = -1;
    int distinct = 0;
    for (int e = 0; e < n_ev; e++) {
        int v = ev[e];
        last[e] = e;
        if (v < 0 || v >= d->n) {
            out->valid = false;
            continue;
        }
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) {
            int p = inst[d->in[k]];
            if (p < 0) out->valid = false; /* an input never computed */
            else last[p] = e;
        }
        if (inst[v] < 0) distinct++;
        inst[v] = e;
        out->compute += d->cost[v];
    }
    if (distinct < d->n) out->valid = false;
    for (int e = 0; e < n_ev; e++) {
        int v = ev[e];
        if (v < 0 || v >= d->n) continue;
        delta[e] += d->mem[v];
        delta[last[e] + 1] -= d->mem[v];
    }
    int64_t cur = 0;
    out->peak_event = -1;
    for (int e = 0; e < n_ev; e++) {
        cur += delta[e];
        if (mem_at) mem_at[e] = cur;
        if (out->peak_event < 0 || cur > out->peak) out->peak = cur, out->peak_event = e;
    }
    out->n_recompute = n_ev - distinct;
    free(inst), free(last), free(delta);
}

int64_t dag_baseline_peak(const Dag *d) {
    /* node i is held over steps [i, last use]; the peak is the largest sum */
    int64_t peak = 0;
    for (int k = 0; k < d->n; k++) {
        int64_t live = d->mem[k];
        for (int i = 0; i < k; i++) {
            int deg = d->out_off[i + 1] - d->out_off[i];
            if (deg && d->out[d->out_off[i + 1] - 1] >= k) live += d->mem[i];
        }
        if (live > peak) peak = live;
    }
    return peak;
}

double dag_baseline_compute(const Dag *d) {
    double c = 0;
    for (int i = 0; i < d->n; i++) c += d->cost[i];
    return c;
}

int64_t dag_min_peak(const Dag *d) {
    int64_t best = 0;
    for (int v = 0; v < d->n; v++) {
        int64_t m = d->mem[v];
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) m += d->mem[d->in[k]];
        if (m > best) best = m;
    }
    return best;
}

/* ---- exhaustive search (tests) ------------------------------------------------- */

typedef struct {
    double dist;
    int state;
} HeapItem;

typedef VEC(HeapItem) HeapVec;

static void heap_push(HeapVec *h, HeapItem x) {
    VEC_PUSH(*h, x);
    for (int k = h->n - 1; k > 0 && h->v[(k - 1) / 2].dist > h->v[k].dist; k = (k - 1) / 2) {
        HeapItem t = h->v[k];
        h->v[k] = h->v[(k - 1) / 2];
        h->v[(k - 1) / 2] = t;
    }
}

static HeapItem heap_pop(HeapVec *h) {
    HeapItem top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int k = 0;;) {
        int l = 2 * k + 1, r = l + 1, s = k;
        if (l < h->n && h->v[l].dist < h->v[s].dist) s = l;
        if (r < h->n && h->v[r].dist < h->v[s].dist) s = r;
        if (s == k) break;
        HeapItem t = h->v[k];
        h->v[k] = h->v[s];
        h->v[s] = t;
        k = s;
    }
    return top;
}

/* Dijkstra over (next first execution t, set of held outputs P): execute t or
 * an earlier node not held whose inputs are held (memory: P plus the output),
 * or free one held output. */
double dag_exhaustive(const Dag *d, int64_t budget) {
    int n = d->n;
    ACC_ASSERT(n <= 16);
    uint32_t full = 1u << n;
    size_t n_states = (size_t)(n + 1) * full;
    double *dist = xcalloc(n_states, sizeof(double));
    uint32_t *inmask = xcalloc((size_t)n, sizeof(uint32_t));
    for (size_t s = 0; s < n_states; s++) dist[s] = INFINITY;
    for (int v = 0; v < n; v++)
        for (int k = d->in_off[v]; k < d->in_off[v + 1]; k++) inmask[v] |= 1u << d->in[k];
    HeapVec h = {0};
    dist[0] = 0;
    heap_push(&h, (HeapItem){0, 0});
    double best = -1;
    while (h.n) {
        HeapItem it = heap_pop(&h);
        if (it.dist > dist[it.state]) continue;
        int t = it.state / (int)full;
        uint32_t P = (uint32_t)it.state % full;
        if (t == n) {
            best = it.dist;
            break;
        }
        int64_t held = 0;
        for (int i = 0; i < n; i++)
            if (P >> i & 1) held += d->mem[i];
        for (int v = 0; v <= t; v++) {
            if ((P >> v & 1) || (inmask[v] & ~P) || held + d->mem[v] > budget) continue;
            int ns = (t + (v == t)) * (int)full + (int)(P | 1u << v);
            double nd = it.dist + d->cost[v];
            if (nd < dist[ns]) dist[ns] = nd, heap_push(&h, (HeapItem){nd, ns});
        }
        for (int u = 0; u < n; u++) {
            if (!(P >> u & 1)) continue;
            int ns = t * (int)full + (int)(P & ~(1u << u));
            if (it.dist < dist[ns]) dist[ns] = it.dist, heap_push(&h, (HeapItem){it.dist, ns});
        }
    }
    VEC_FREE(h);
    free(dist), free(inmask);
    return best;
}

/* ---- acc's greedy incumbent ---------------------------------------------------- */

typedef struct {
    const Dag *d;
    int n;
    int64_t budget;
    uint8_t *cut;    /* [n*n] cut[t*n+i] > 0: i is not kept into stage t */
    int *present, *plist, *mark, *stack, *need;
    Staged cur;
    int64_t *mem_at;
    int mem_cap;
    double deadline;
} Heur;

typedef struct {
    int node, lo, hi; /* cut[t][node] for t in [lo, hi] */
} Cut;

/* The schedule that retention plan h->cut implies: each stage recomputes
 * what it needs and was not kept, ascending, then runs its node. */
static void derive(Heur *h, Staged *out) {
    const Dag *d = h->d;
    int n = h->n, np = 0;
    staged_clear(out);
    for (int i = 0; i < n; i++) h->present[i] = 0, h->mark[i] = -1;
    for (int t = 0; t < n; t++) {
        const uint8_t *row = h->cut + (size_t)t * n;
        int k = 0;
        for (int j = 0; j < np; j++) {
            int i = h->plist[j];
            if (row[i]) h->present[i] = 0;
            else h->plist[k++] = i;
        }
        np = k;
        int ns = 0, nn = 0;
        for (int q = d->in_off[t]; q < d->in_off[t + 1]; q++) {
            int p = d->in[q];
            if (!h->present[p] && h->mark[p] != t) h->mark[p] = t, h->stack[ns++] = p;
        }
        while (ns) {
            int u = h->stack[--ns];
            h->need[nn++] = u;
            for (int q = d->in_off[u]; q < d->in_off[u + 1]; q++) {
                int p = d->in[q];
                if (!h->present[p] && h->mark[p] != t) h->mark[p] = t, h->stack[ns++] = p;
            }
        }
        for (int a = 1; a < nn; a++) /* ascending (few items) */
            for (int b = a; b > 0 && h->need[b - 1] > h->need[b]; b--) {
                int x = h->need[b];
                h->need[b] = h->need[b - 1];
                h->need[b - 1] = x;
            }
        for (int a = 0; a < nn; a++) {
            staged_push(out, t, h->need[a]);
            h->present[h->need[a]] = 1;
            h->plist[np++] = h->need[a];
        }
        staged_push(out, t, t);
        h->present[t] = 1;
        h->plist[np++] = t;
    }
}

typedef struct {
    int64_t peak;
    double cost, excess;
} Score;

static Score score(Heur *h, const Staged *s) {
    if (s->ev.n > h->mem_cap) {
        h->mem_cap = 2 * s->ev.n;
        h->mem_at = acc_xrealloc(h->mem_at, (size_t)h->mem_cap * sizeof(int64_t));
    }
    DagSim sim;
    dag_simulate(h->d, s->ev.v, s->ev.n, &sim, h->mem_at);
    Score sc = {sim.peak, sim.compute, 0};
    for (int e = 0; e < s->ev.n; e++)
        if (h->mem_at[e] > h->budget) sc.excess += (double)(h->mem_at[e] - h->budget);
    return sc;
}

static void apply_cut(Heur *h, Cut c, int delta) {
    for (int t = c.lo; t <= c.hi; t++) {
        uint8_t *x = &h->cut[(size_t)t * h->n + c.node];
        ACC_ASSERT(delta > 0 ? *x < 255 : *x > 0);
        *x = (uint8_t)(*x + delta);
    }
}

/* Candidate cuts at the peak event of s: the copies held across it that it
 * does not read, each dropped from the stage after its last touch before the
 * peak through the stage of its next touch. */
static int peak_candidates(Heur *h, const Staged *s, Cut *out) {
    const Dag *d = h->d;
    int n_ev = s->ev.n;
    score(h, s);
    int peak_e = 0;
    for (int e = 1; e < n_ev; e++)
        if (h->mem_at[e] > h->mem_at[peak_e]) peak_e = e;
    int tp = s->stage.v[peak_e];
    int *inst = xcalloc((size_t)h->n, sizeof(int));
    int *before = xcalloc((size_t)n_ev, sizeof(int)), *after = xcalloc((size_t)n_ev, sizeof(int));
    bool *read_at_peak = xcalloc((size_t)n_ev, sizeof(bool));
    for (int i = 0; i < h->n; i++) inst[i] = -1;
    for (int e = 0; e < n_ev; e++) before[e] = e, after[e] = -1;
    for (int e = 0; e < n_ev; e++) {
        int v = s->ev.v[e];
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) {
            int x = inst[d->in[q]];
            if (e < peak_e) before[x] = e;
            else if (e == peak_e) read_at_peak[x] = true;
            else if (after[x] < 0) after[x] = e;
        }
        inst[v] = e;
    }
    int m = 0;
    for (int x = 0; x < peak_e; x++) {
        if (after[x] < 0 || read_at_peak[x]) continue; /* not held across the peak */
        int lo = s->stage.v[before[x]] + 1, hi = s->stage.v[after[x]];
        if (lo > tp || hi < tp) continue; /* stage boundaries cannot free it there */
        int node = s->ev.v[x];
        bool dup = false;
        for (int k = 0; k < m && !dup; k++) dup = out[k].node == node;
        if (!dup) out[m++] = (Cut){node, lo, hi};
    }
    free(inst), free(before), free(after), free(read_at_peak);
    return m;
}

/* Greedy descent to the budget, then undo what is not needed. False when no
 * drop helps any more (the budget is out of the heuristic's reach). */
static bool heuristic(const Dag *d, int64_t budget, double deadline, Staged *best_out) {
    int n = d->n;
    Heur h = {0};
    h.d = d, h.n = n, h.budget = budget, h.deadline = deadline;
    h.cut = xcalloc((size_t)n * (size_t)n, 1);
    h.present = xcalloc((size_t)n, sizeof(int));
    h.plist = xcalloc((size_t)n, sizeof(int));
    h.mark = xcalloc((size_t)n, sizeof(int));
    h.stack = xcalloc((size_t)n, sizeof(int));
    h.need = xcalloc((size_t)n, sizeof(int));
    Cut *cand = NULL;
    int cand_cap = 0;
    VEC(Cut) applied = {0};
    Staged trial = {0};
    bool ok = false;
    derive(&h, &h.cur);
    Score cur = score(&h, &h.cur);
    for (int iter = 0; iter < 50 * n + 100 && dag_now_s() < deadline; iter++) {
        if (cur.peak <= budget) {
            ok = true;
            break;
        }
        if (cand_cap < h.cur.ev.n) {
            cand_cap = 2 * h.cur.ev.n;
            cand = acc_xrealloc(cand, (size_t)cand_cap * sizeof(Cut));
        }
        int m = peak_candidates(&h, &h.cur, cand);
        int best = -1;
        double best_ratio = INFINITY;
        Score best_sc = cur;
        for (int k = 0; k < m; k++) {
            apply_cut(&h, cand[k], +1);
            derive(&h, &trial);
            Score sc = score(&h, &trial);
            apply_cut(&h, cand[k], -1);
            double gain = cur.excess - sc.excess, dc = sc.cost - cur.cost;
            if (gain <= 0) continue;
            double ratio = (dc > 0 ? dc : 0) / gain;
            if (ratio < best_ratio || (ratio == best_ratio && sc.excess < best_sc.excess))
                best = k, best_ratio = ratio, best_sc = sc;
        }
        if (best < 0) break;
        apply_cut(&h, cand[best], +1);
        VEC_PUSH(applied, cand[best]);
        derive(&h, &h.cur);
        cur = score(&h, &h.cur);
    }
    if (!ok && cur.peak <= budget) ok = true;
    if (ok) { /* undo drops the plan can afford, most expensive recomputation first */
        for (int pass = 0; pass < 2; pass++)
            for (int k = applied.n - 1; k >= 0 && dag_now_s() < deadline; k--) {
                if (applied.v[k].node < 0) continue;
                apply_cut(&h, applied.v[k], -1);
                derive(&h, &trial);
                Score sc = score(&h, &trial);
                if (sc.peak <= budget && sc.cost <= cur.cost) {
                    cur = sc;
                    applied.v[k].node = -1;
                } else {
                    apply_cut(&h, applied.v[k], +1);
                }
            }
        derive(&h, best_out);
    }
    staged_free(&trial);
    staged_free(&h.cur);
    VEC_FREE(applied);
    free(cand), free(h.cut), free(h.present), free(h.plist), free(h.mark), free(h.stack), free(h.need), free(h.mem_at);
    return ok;
}

/* ---- the driver ------------------------------------------------------------------- */

static void set_plan_events(DagPlan *p, const int *ev, int n_ev) {
    free(p->ev);
    p->ev = xcalloc((size_t)n_ev, sizeof(int));
    memcpy(p->ev, ev, (size_t)n_ev * sizeof(int));
    p->n_ev = n_ev;
}

static void score_plan(const Dag *d, int64_t budget, DagPlan *p) {
    dag_simulate(d, p->ev, p->n_ev, &p->sim, NULL);
    p->fits = p->sim.valid && p->sim.peak <= budget;
}

bool dag_plan(const Dag *d, const DagPlanOptions *o, DagPlan *p, char *err, size_t err_len) {
    double t0 = dag_now_s();
    memset(p, 0, sizeof *p);
    p->objective = p->bound = p->gap = NAN;
    p->bound_scope = "";
    double limit = o->time_limit_s > 0 ? o->time_limit_s : o->method == DAG_ACC ? 20 : 60;
    double deadline = t0 + limit;
    int n = d->n;
    int *topo = xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) topo[i] = i;
    double base_compute = dag_baseline_compute(d);
    bool ok = true;
    if (o->method != DAG_ACC) {
        ok = dag_solve_checkmate(d, o->budget, o->method == DAG_CHECKMATE_MILP, deadline, o->emit_lp, o->verbose, p,
                                 err, err_len);
        if (ok && !p->ev) set_plan_events(p, topo, n); /* no solution: report the baseline, which does not fit */
    } else if (dag_baseline_peak(d) <= o->budget && !o->emit_lp) {
        set_plan_events(p, topo, n);
        snprintf(p->status, sizeof p->status, "optimal");
        p->objective = p->bound = base_compute;
        p->bound_scope = "all schedules";
    } else if (dag_min_peak(d) > o->budget) { /* some node with its inputs alone is over */
        set_plan_events(p, topo, n);
        snprintf(p->status, sizeof p->status, "infeasible");
        p->bound_scope = "all schedules";
    } else {
        Staged inc = {0};
        double h_deadline = t0 + 0.25 * limit;
        bool have = heuristic(d, o->budget, h_deadline, &inc);
        if (o->verbose) {
            DagSim s;
            if (have) dag_simulate(d, inc.ev.v, inc.ev.n, &s, NULL);
            fprintf(stderr, "acc plan: heuristic %s in %.3f s%s%.6g\n", have ? "fits" : "found nothing",
                    dag_now_s() - t0, have ? ", compute " : "", have ? s.compute : 0.0);
        }
        ok = dag_solve_acc_milp(d, o->budget, have ? &inc : NULL, deadline, o->emit_lp, o->verbose, p, err, err_len);
        if (ok) {
            /* the best plan that fits, by the simulator */
            DagPlan h = {0};
            if (have) {
                set_plan_events(&h, inc.ev.v, inc.ev.n);
                score_plan(d, o->budget, &h);
            }
            if (p->ev) score_plan(d, o->budget, p);
            if (have && h.fits && (!p->ev || !p->fits || h.sim.compute < p->sim.compute)) {
                set_plan_events(p, h.ev, h.n_ev);
                if (!strcmp(p->status, "no_solution")) snprintf(p->status, sizeof p->status, "time_limit");
            }
            free(h.ev);
            if (!p->ev) set_plan_events(p, topo, n);
        }
        staged_free(&inc);
    }
    free(topo);
    if (!ok) return false;
    score_plan(d, o->budget, p);
    if (p->fits && isfinite(p->bound)) {
        double b = p->bound < base_compute ? base_compute : p->bound;
        p->bound = b;
        p->gap = p->sim.compute > 0 ? (p->sim.compute - b) / p->sim.compute : 0;
        if (p->gap < 0) p->gap = 0;
    }
    p->solve_s = dag_now_s() - t0;
    return true;
}

void dag_plan_free(DagPlan *p) {
    free(p->ev);
    p->ev = NULL;
}
