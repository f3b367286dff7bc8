/* dag_improve.c - local improvement of an any-order schedule that fits:
 * each stage (the recomputations before a node's first execution, and that
 * execution) re-solved by the pebbling search from what the schedule holds
 * when the stage begins, then the recomputations the schedule can do without
 * dropped; passes until one changes nothing or the deadline. Not a planner:
 * dag.c runs it on its best heuristic plan.
 *
 * requires: a Dag, a budget, a schedule in stage form (dag_impl.h) that is
 * valid and within the budget. provides: the same or a cheaper schedule,
 * valid and within the budget (every change is kept only when dag_simulate
 * says so: the simulator, not the search's accounting, decides).
 *
 * Why: at tight budgets acc's plans are evictions, pebbled stages or each
 * node computed from nothing in turn. Such a stage rebuilds its node from
 * what an eviction happened to keep, or from nothing, although the outputs
 * the schedule holds at that point (often more of them once the pruning has
 * let earlier copies live longer) could serve it. The search from those
 * outputs is the large neighbourhood of one stage; the staged programs
 * cannot improve these plans (they fix the order of recomputations within a
 * stage and need the plan's retention to fit as a staged plan).
 *
 * Each stage's search keeps the cheapest path it finds within its states
 * (dag_pebble_cheapest after dag_pebble's first path), and is tried first
 * with the copies the schedule's memory lets live on to the stage as held
 * (held_at). The search counts only what the stage's own path holds; the copies held
 * across the whole stage (read after it) are taken off its budget instead,
 * so that what it finds usually fits; the replay of the whole schedule
 * settles it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

#define IMPROVE_STATES 20000 /* per stage, as a pebbled stage's own search (dag.c) */
#define IMPROVE_KICKS 16     /* after the descent: the top 8 stages kicked, twice */

static double staged_cost(const Dag *d, const Staged *s, int64_t budget) {
    DagSim sim;
    dag_simulate(d, s->ev.v, s->ev.n, &sim, NULL);
    return sim.valid && sim.peak <= budget ? sim.compute : -1;
}

/* Append to out (as stage t) the recomputations that compute x from work
 * (dag_pebble's held: 1 held, 2 pinned), with pinned bytes off the budget,
 * then x. Returns their compute, or -1 when the search found none. */
static double build_node(const Dag *d, int64_t budget, int t, int x, const int *work, int64_t pinned, double deadline,
                         Staged *out) {
    if (budget <= pinned) return -1;
    int *seq = NULL, n_seq = 0;
    double c = 0;
    int st = dag_pebble(d, budget - pinned, x, work, IMPROVE_STATES, deadline, 0, &seq, &n_seq, &c);
    if (st == DAG_PEBBLE_FOUND) { /* the cheapest path below the first one, within the same states */
        int *s2 = NULL, n2 = 0;
        double c2 = 0;
        if (dag_pebble_cheapest(d, budget - pinned, x, work, c, IMPROVE_STATES, deadline, &s2, &n2, &c2) ==
            DAG_PEBBLE_FOUND)
            free(seq), seq = s2, n_seq = n2, c = c2;
        else free(s2);
    }
    if (st == DAG_PEBBLE_FOUND) {
        for (int k = 0; k < n_seq; k++) staged_push(out, t, seq[k]);
        staged_push(out, t, x);
    }
    free(seq);
    return st == DAG_PEBBLE_FOUND ? c + d->cost[x] : -1;
}

/* Stage t anew from held (1: held at its start; 2: also read after it,
 * pinned, its bytes `across` off the budget), leaving held at its end, with
 * t, the nodes exports[0..n_exports) (the copies the old stage made that
 * later stages read: without them those reads take an older copy, held
 * across the stage, or none, and the replay rejects the stage; on MOCCASIN's
 * n250 at 0.6 of its peak every stage re-solved cheaper was rejected so).
 * The cheapest of: the exports one at a time, each pinned once built, then
 * the search for t at once; and the exports and t's missing inputs one at a
 * time, each pinned once built (and those already held pinned), in four
 * orders (the most room needed beyond the others first, the latest first,
 * the earliest first, the largest first). One at a time, each search is
 * smaller and has the room the nodes not yet built leave; meant for a node
 * that reads many outputs made all over the graph, where the search at once
 * can stop on the way. (The last node but one of MOCCASIN's
 * random_layered_n250 at 0.6 of its peak is still out of reach: some input's
 * search stops at its 20,000 states in every order.) Fills out (stage t, t
 * last); returns its compute, or -1 when nothing was found. */
double dag_resolve_stage(const Dag *d, int64_t budget, int t, const int *held, int64_t across, const int *exports,
                         int n_exports, double deadline, Staged *out) {
    int n = d->n, deg = d->in_off[t + 1] - d->in_off[t];
    int *work = acc_xcalloc((size_t)n, sizeof(int)), *order = acc_xcalloc((size_t)(deg + n_exports) + 1, sizeof(int));
    Staged trial = {0};
    staged_clear(out);
    double best = -1;
    /* need: what a node's own event holds beyond itself, the inputs of t and the exports (pinned once
     * built): built last, a node has the least room, what the others leave */
    int64_t *need = acc_xcalloc((size_t)n, sizeof(int64_t));
    memcpy(work, held, (size_t)n * sizeof(int));
    for (int q = d->in_off[t]; q < d->in_off[t + 1]; q++) work[d->in[q]] = 3;
    for (int k = 0; k < n_exports; k++) work[exports[k]] = 3;
    for (int k = 0; k < n; k++) {
        if (work[k] != 3) continue;
        for (int r = d->in_off[k]; r < d->in_off[k + 1]; r++)
            if (work[d->in[r]] != 3 && work[d->in[r]] != 2) need[k] += d->mem[d->in[r]];
    }
    for (int o = -1; o < 4 && acc_now_s() < deadline; o++) { /* o = -1: the exports, then t at once */
        memcpy(work, held, (size_t)n * sizeof(int));
        int64_t pinned = across;
        int m = 0;
        for (int k = 0; k < n_exports; k++) { /* a node is listed once: an export may be an input of t */
            int e = exports[k];
            if (!work[e]) order[m++] = e, work[e] = 4;
            else if (work[e] == 1) work[e] = 2, pinned += d->mem[e];
        }
        for (int q = d->in_off[t]; q < d->in_off[t + 1] && o >= 0; q++) {
            int p = d->in[q];
            if (!work[p]) order[m++] = p, work[p] = 4;
            else if (work[p] == 1) work[p] = 2, pinned += d->mem[p];
        }
        for (int a = 0; a < m; a++) work[order[a]] = 0;
        for (int a = 1; a < m; a++) /* few nodes */
            for (int b = a; b > 0; b--) {
                int u = order[b - 1], v = order[b];
                bool swap = o == 0 ? need[u] < need[v] : o <= 1 ? u < v : o == 2 ? u > v : d->mem[u] < d->mem[v];
                if (!swap) break;
                order[b - 1] = v, order[b] = u;
            }
        staged_clear(&trial);
        double c = 0;
        for (int a = 0; a < m && c >= 0; a++) {
            double ci = build_node(d, budget, t, order[a], work, pinned, deadline, &trial);
            c = ci < 0 ? -1 : c + ci;
            work[order[a]] = 2, pinned += d->mem[order[a]];
        }
        if (c < 0) continue;
        if (o < 0) { /* t at once, from what is held and the exports pinned */
            double ct = build_node(d, budget, t, t, work, pinned, deadline, &trial);
            if (ct < 0) continue;
            c += ct;
        } else {
            if (pinned + d->mem[t] > budget) continue;
            staged_push(&trial, t, t);
            c += d->cost[t];
        }
        if (best < 0 || c < best) {
            best = c;
            staged_clear(out);
            for (int e = 0; e < trial.ev.n; e++) staged_push(out, t, trial.ev.v[e]);
        }
    }
    staged_free(&trial);
    free(work), free(order), free(need);
    return best;
}

/* The nodes other than t whose copies made in the stage [a, b) are read
 * after it, in exports; their number. */
static int stage_exports(const Staged *s, const int *last, int a, int b, int *exports) {
    int m = 0;
    for (int e = a; e < b - 1; e++)
        if (last[e] >= b) exports[m++] = s->ev.v[e];
    return m;
}

/* held at a (the stage [a, b)): the copies made before a and read at a or
 * later; those also read after the stage pinned (2), held across it, their
 * bytes in *across. With wide, also the latest copy made before a of each
 * other node, held on from its last read (1) where the memory of every event
 * from there to a leaves room for it (mem_at: the memory per event; the
 * replay decides whether what the stage then reads fits). Returns the number
 * of copies so held on. */
static int held_at(const Dag *d, const Staged *s, const int *last, const int64_t *mem_at, int64_t budget, int a, int b,
                   bool wide, int *held, int64_t *suffix, int64_t *across) {
    memset(held, 0, (size_t)d->n * sizeof(int));
    *across = 0;
    for (int e = 0; e < a; e++)
        if (last[e] >= a) {
            held[s->ev.v[e]] = last[e] >= b ? 2 : 1;
            if (last[e] >= b) *across += d->mem[s->ev.v[e]];
        }
    if (!wide) return 0;
    suffix[a] = 0; /* suffix[k]: the most memory of events k .. a-1 */
    for (int e = a - 1; e >= 0; e--) suffix[e] = mem_at[e] > suffix[e + 1] ? mem_at[e] : suffix[e + 1];
    int k = 0;
    for (int e = a - 1; e >= 0; e--) { /* latest first: a node's latest copy is the one met first */
        int v = s->ev.v[e];
        if (held[v]) continue;
        held[v] = -1; /* met: an earlier copy of v is not its latest */
        if (suffix[last[e] + 1] + d->mem[v] <= budget) held[v] = -2, k++;
    }
    for (int i = 0; i < d->n; i++) held[i] = held[i] == -2 ? 1 : held[i] == -1 ? 0 : held[i];
    return k;
}

/* out = s with its stage [a, b) replaced by stage's events (all of stage t). */
static void splice_stage(const Staged *s, int a, int b, int t, const Staged *stage, Staged *out) {
    staged_clear(out);
    for (int e = 0; e < a; e++) staged_push(out, s->stage.v[e], s->ev.v[e]);
    for (int e = 0; e < stage->ev.n; e++) staged_push(out, t, stage->ev.v[e]);
    for (int e = b; e < s->ev.n; e++) staged_push(out, s->stage.v[e], s->ev.v[e]);
}

/* What the improvement remembers over its passes and kicks, so that the
 * same work is not done again (counted, not timed: the plan does not depend
 * on the load). dead[t]: the passes in which stage t's searches found
 * nothing; stale[t]: in the current descent, the passes that did not change
 * it; memo: each stage re-solved, by its node and a hash of what it was
 * solved from (dag_resolve_stage gives the same stage from the same held,
 * across and exports), its compute and its events (at ev[off ..]). On
 * MOCCASIN's n250 at 0.6 of its peak the last node but one's stage took 1-2
 * s a pass and found nothing in any, and every kick's descent re-solved the
 * same costly stages again (node 230's 24 times, 0.15 s each). */
#define DEAD_PASSES 2  /* a stage whose searches found nothing in 2 passes is not tried again */
#define STALE_PASSES 2 /* nor, in one descent, one that 2 passes did not change */
typedef struct {
    int t, off, n;
    uint64_t key;
    double c;
} Memo;
typedef struct {
    int *dead, *stale;
    VEC(Memo) memo;
    VEC(int) ev;
} Tries;

/* dag_resolve_stage through tr's memo. */
static double resolve_memo(const Dag *d, int64_t budget, int t, const int *held, int64_t across, const int *exports,
                           int n_exports, double deadline, Staged *out, Tries *tr) {
    uint64_t key = 1469598103934665603ull ^ (uint64_t)across;
    for (int i = 0; i < d->n; i++) key = (key ^ (uint64_t)held[i]) * 1099511628211ull;
    for (int k = 0; k < n_exports; k++) key = (key ^ (uint64_t)exports[k] << 8) * 1099511628211ull;
    for (int k = 0; k < tr->memo.n; k++) {
        const Memo *m = &tr->memo.v[k];
        if (m->t != t || m->key != key) continue;
        staged_clear(out);
        for (int e = 0; e < m->n; e++) staged_push(out, t, tr->ev.v[m->off + e]);
        return m->c;
    }
    double c = dag_resolve_stage(d, budget, t, held, across, exports, n_exports, deadline, out);
    if (acc_now_s() < deadline) { /* not cut short by the deadline: the same next time */
        Memo m = {t, tr->ev.n, c >= 0 ? out->ev.n : 0, key, c};
        for (int e = 0; e < m.n; e++) VEC_PUSH(tr->ev, out->ev.v[e]);
        VEC_PUSH(tr->memo, m);
    }
    return c;
}

/* One pass over the stages: each with recomputations re-solved from what is
 * held at its start (first with the copies the memory lets live on, then
 * without), kept when the whole schedule fits and costs less. Returns the
 * number of stages changed; *cost follows s. */
static int improve_stages(const Dag *d, int64_t budget, double deadline, Staged *s, double *cost, Tries *tr) {
    int changed = 0;
    int *held = acc_xcalloc((size_t)d->n, sizeof(int));
    int *last = staged_last_reads(d, s);
    int64_t *mem_at = acc_xcalloc((size_t)s->ev.n + 1, sizeof(int64_t)),
            *suffix = acc_xcalloc((size_t)s->ev.n + 1, sizeof(int64_t));
    DagSim sim;
    dag_simulate(d, s->ev.v, s->ev.n, &sim, mem_at);
    Staged trial = {0}, stage = {0};
    for (int a = 0; a < s->ev.n && acc_now_s() < deadline;) {
        int t = s->stage.v[a], b = a;
        while (b < s->ev.n && s->stage.v[b] == t) b++;
        /* nothing recomputed here (or not a stage of this form), or given up (Tries) */
        if (b - a < 2 || s->ev.v[b - 1] != t || tr->dead[t] >= DEAD_PASSES || tr->stale[t] >= STALE_PASSES) {
            a = b;
            continue;
        }
        double old = 0;
        bool found = false, rejected = false;
        for (int e = a; e < b; e++) old += d->cost[s->ev.v[e]];
        bool kept = false;
        int *exports = acc_xcalloc((size_t)(b - a) + 1, sizeof(int)), n_exp = stage_exports(s, last, a, b, exports);
        /* with the copies the memory lets live on, then without; each first free to leave the exports out
         * (later reads may take an older copy that fits), then, if the replay rejects that, with them */
        for (int k = 0; k < 4 && !kept; k++) {
            int wide = k < 2, ex = k % 2 ? n_exp : 0;
            int64_t across;
            if (k % 2 && (!n_exp || !rejected)) continue;
            rejected = false;
            if (!held_at(d, s, last, mem_at, budget, a, b, wide, held, suffix, &across) && wide) continue;
            double c = resolve_memo(d, budget, t, held, across, exports, ex, deadline, &stage, tr);
            found = found || c >= 0;
            if (c < 0 || c >= old) continue;
            splice_stage(s, a, b, t, &stage, &trial);
            double tc = staged_cost(d, &trial, budget);
            rejected = tc < 0;
            if (tc >= 0 && tc < *cost) {
                staged_copy(s, &trial);
                *cost = tc, kept = true, changed++;
                free(last), free(mem_at), free(suffix);
                last = staged_last_reads(d, s);
                mem_at = acc_xcalloc((size_t)s->ev.n + 1, sizeof(int64_t));
                suffix = acc_xcalloc((size_t)s->ev.n + 1, sizeof(int64_t));
                dag_simulate(d, s->ev.v, s->ev.n, &sim, mem_at);
            }
        }
        free(exports);
        tr->dead[t] += !found, tr->stale[t] += !kept;
        a = kept ? a + stage.ev.n : b;
    }
    staged_free(&trial), staged_free(&stage);
    free(held), free(last), free(mem_at), free(suffix);
    return changed;
}

/* Passes (stages re-solved, then the pruning) until one changes nothing or
 * the deadline; *cost follows s. */
static void descend(const Dag *d, int64_t budget, double deadline, Staged *s, double *cost, int *passes, int *stages,
                    Tries *tr) {
    memset(tr->stale, 0, (size_t)d->n * sizeof(int)); /* each descent anew */
    for (bool again = true; again && acc_now_s() < deadline; (*passes)++) {
        int k = improve_stages(d, budget, deadline, s, cost, tr);
        *stages += k;
        dag_prune_recomputations(d, budget, deadline, s);
        double pruned = staged_cost(d, s, budget);
        ACC_ASSERT(pruned >= 0); /* the pruning keeps what fits */
        again = k > 0 || pruned < *cost;
        *cost = pruned;
    }
}

/* The kick: into out, s with its rank-th costliest stage (by recomputation,
 * 0 the costliest) re-solved from only the copies held across it (pinned),
 * as if those ending in it were not there. Returns out's compute when it
 * fits, else -1. A move the descent does not make (it re-solves a stage
 * only from more held, and keeps only what is cheaper): the stage may come
 * out dearer, but what it holds after differs, and the descent from there
 * can reach a cheaper plan. */
static double kick(const Dag *d, int64_t budget, double deadline, const Staged *s, int rank, Tries *tr, Staged *out) {
    int n = d->n, *start = acc_xcalloc((size_t)n, sizeof(int)), *end = acc_xcalloc((size_t)n, sizeof(int));
    double *rc = acc_xcalloc((size_t)n, sizeof(double)), c = -1;
    for (int a = 0; a < s->ev.n;) {
        int t = s->stage.v[a], b = a;
        while (b < s->ev.n && s->stage.v[b] == t) b++;
        if (s->ev.v[b - 1] == t) /* a stage of the usual form: recomputations, then t */
            for (int e = a; e < b - 1; e++) rc[t] += d->cost[s->ev.v[e]];
        start[t] = a, end[t] = b;
        a = b;
    }
    int t = -1;
    for (int r = 0; r <= rank; r++) { /* the rank-th costliest */
        t = -1;
        for (int u = 0; u < n; u++)
            if (rc[u] > 0 && (t < 0 || rc[u] > rc[t])) t = u;
        if (t < 0) break;
        if (r < rank) rc[t] = 0;
    }
    if (t >= 0 && tr->dead[t] < DEAD_PASSES) { /* a stage given up on (improve_stages) is not kicked either */
        int a = start[t], b = end[t], *held = acc_xcalloc((size_t)n, sizeof(int)), *last = staged_last_reads(d, s);
        int64_t across;
        held_at(d, s, last, NULL, budget, a, b, false, held, NULL, &across);
        for (int u = 0; u < n; u++) held[u] = held[u] == 2 ? 2 : 0; /* only the pinned: those ending in it not there */
        Staged stage = {0};
        int *exports = acc_xcalloc((size_t)(b - a) + 1, sizeof(int)), n_exp = stage_exports(s, last, a, b, exports);
        for (int ex = 0; ex < 2 && c < 0; ex++) /* without the exports, then with them (improve_stages) */
            if ((ex == 0 || n_exp) &&
                resolve_memo(d, budget, t, held, across, exports, ex ? n_exp : 0, deadline, &stage, tr) >= 0) {
                splice_stage(s, a, b, t, &stage, out);
                c = staged_cost(d, out, budget);
            }
        staged_free(&stage);
        free(held), free(last), free(exports);
    }
    free(start), free(end), free(rc);
    return c;
}

void dag_improve(const Dag *d, int64_t budget, double deadline, Staged *s, bool verbose) {
    double t0 = acc_now_s(), cost = staged_cost(d, s, budget), start = cost;
    if (cost < 0) return; /* not a plan that fits: nothing to keep it within */
    int passes = 0, stages = 0, kept = 0;
    Tries tr = {.dead = acc_xcalloc((size_t)d->n, sizeof(int)), .stale = acc_xcalloc((size_t)d->n, sizeof(int))};
    descend(d, budget, deadline, s, &cost, &passes, &stages, &tr);
    /* then IMPROVE_KICKS kicks, counted (the plan does not depend on the load where they finish): the kick
     * r re-solves the (r mod 8)-th costliest stage of the best plan, the descent follows, and the result is
     * kept when cheaper (MOCCASIN's n100 at 0.5437 of its peak: 134,366 -> 112,030) */
    Staged trial = {0};
    for (int r = 0; r < IMPROVE_KICKS && acc_now_s() < deadline; r++) {
        double c = kick(d, budget, deadline, s, r % 8, &tr, &trial);
        if (c < 0) continue;
        descend(d, budget, deadline, &trial, &c, &passes, &stages, &tr);
        if (c < cost) {
            staged_copy(s, &trial);
            cost = c, kept++;
        }
    }
    staged_free(&trial);
    free(tr.dead), free(tr.stale);
    VEC_FREE(tr.memo), VEC_FREE(tr.ev);
    if (verbose)
        fprintf(stderr,
                "acc plan: local improvement: compute %.8g -> %.8g, %d stages re-solved, %d passes, %d kicks kept, "
                "%.3f s\n",
                start, cost, stages, passes, kept, acc_now_s() - t0);
}
