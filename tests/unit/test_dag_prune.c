/* test_dag_prune.c - the pruning of recomputations (dag_prune.c) against the
 * plain way it replaces, written here: every recomputation, most expensive
 * first (stable), dropped when a replay of the whole schedule without it (and
 * without those dropped before it) by dag_simulate is valid and within the
 * budget; passes until none goes.
 *
 * Schedules: small random DAGs (dag_gen.h's four shapes, 6-40 nodes), each
 * stage recomputing 70-100% of its node's ancestors and a few other earlier
 * nodes in ascending order (so every read finds a copy); budgets the
 * schedule's own peak (nothing that raises an event above it may go), a
 * quarter of the way up to the save-all peak, and that peak. Asserted: the same events and stages as the reference,
 * valid and within the budget; and, so that the test exercises both
 * answers, some cases where a drop is refused and some where one is taken.
 *
 * Then the speed that makes the plan at tight budgets independent of the
 * machine's load (dag.c counts the kinds of evictions with pebbled stages,
 * each pruned, instead of timing them): a schedule of ~24,000 events on 64
 * nodes (twenty sweeps a stage) must reach the pruning's fixed point within 2 s, which a second
 * pruning then confirms (it drops nothing). The plain way needs a replay of
 * the whole schedule per recomputation, ~5e8 event steps a pass, and does
 * not get there in that time.
 */
#include <stdlib.h>
#include <string.h>

#include "dag/dag_impl.h"
#include "dag_gen.h"
#include "passes.h"
#include "test.h"

/* The reference: the pruning by whole replays. */
static void prune_by_replay(const Dag *d, int64_t budget, Staged *s) {
    for (bool again = true; again;) {
        again = false;
        int n_ev = s->ev.n, n_rec = 0;
        int *rec = calloc((size_t)n_ev + 1, sizeof(int));
        bool *seen = calloc((size_t)d->n, sizeof(bool));
        for (int e = 0; e < n_ev; e++) {
            if (seen[s->ev.v[e]]) rec[n_rec++] = e;
            seen[s->ev.v[e]] = true;
        }
        for (int a = 1; a < n_rec; a++) /* stable: insertion, by cost descending */
            for (int b = a; b > 0 && d->cost[s->ev.v[rec[b - 1]]] < d->cost[s->ev.v[rec[b]]]; b--) {
                int t = rec[b];
                rec[b] = rec[b - 1], rec[b - 1] = t;
            }
        bool *drop = calloc((size_t)n_ev + 1, sizeof(bool));
        int *ev = calloc((size_t)n_ev + 1, sizeof(int));
        for (int k = 0; k < n_rec; k++) {
            drop[rec[k]] = true;
            int m = 0;
            for (int e = 0; e < n_ev; e++)
                if (!drop[e]) ev[m++] = s->ev.v[e];
            DagSim sim;
            dag_simulate(d, ev, m, &sim, NULL);
            if (sim.valid && sim.peak <= budget) again = true;
            else drop[rec[k]] = false;
        }
        int w = 0;
        for (int e = 0; e < n_ev; e++)
            if (!drop[e]) s->ev.v[w] = s->ev.v[e], s->stage.v[w] = s->stage.v[e], w++;
        s->ev.n = s->stage.n = w;
        free(rec), free(seen), free(drop), free(ev);
    }
}

/* Stage t recomputes each ancestor of t with probability pct% (each
 * earlier node with probability pct/8 %) in ascending order, sweeps times
 * over, then runs t: the recomputations that rebuild t's cone keep copies
 * short-lived, so that at the schedule's own peak many of them are needed. */
static void random_schedule(const Dag *d, int pct, int sweeps, Staged *s) {
    uint64_t anc[64] = {0}; /* n <= 64: the ancestors of each node */
    for (int v = 0; v < d->n; v++)
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) anc[v] |= anc[d->in[q]] | 1ull << d->in[q];
    staged_clear(s);
    for (int t = 0; t < d->n; t++) {
        for (int k = 0; k < sweeps; k++)
            for (int u = 0; u < t; u++)
                if ((int)(rnd() % 800) < (anc[t] >> u & 1 ? 8 * pct : pct)) staged_push(s, t, u);
        staged_push(s, t, t);
    }
}

static void copy_staged(const Staged *from, Staged *to) {
    staged_clear(to);
    for (int e = 0; e < from->ev.n; e++) staged_push(to, from->stage.v[e], from->ev.v[e]);
}

int main(void) {
    int cases = 0, refused = 0, taken = 0;
    Staged s = {0}, ref = {0}, fast = {0};
    for (int c = 0; c < 400; c++) {
        Dag d;
        int n = 6 + (int)(rnd() % 35);
        gen(&d, n, c % N_SHAPES);
        random_schedule(&d, 70 + (int)(rnd() % 31), 1, &s);
        DagSim sim;
        dag_simulate(&d, s.ev.v, s.ev.n, &sim, NULL);
        int64_t hi = dag_baseline_peak(&d) > sim.peak ? dag_baseline_peak(&d) : sim.peak;
        for (int b = 0; b < 3; b++) {
            int64_t budget = sim.peak + (hi - sim.peak) * b * b / 4; /* the schedule's peak, a quarter up, save-all */
            copy_staged(&s, &ref), copy_staged(&s, &fast);
            prune_by_replay(&d, budget, &ref);
            dag_prune_recomputations(&d, budget, acc_now_s() + 60, &fast);
            bool same = ref.ev.n == fast.ev.n;
            for (int e = 0; same && e < ref.ev.n; e++)
                same = ref.ev.v[e] == fast.ev.v[e] && ref.stage.v[e] == fast.stage.v[e];
            if (!ASSERT_TRUE(same))
                printf("  case %d (%s, %d nodes, budget %lld): %d events, the reference keeps %d, the pruning %d\n", c,
                       shape_name[c % N_SHAPES], n, (long long)budget, s.ev.n, ref.ev.n, fast.ev.n);
            DagSim after;
            dag_simulate(&d, fast.ev.v, fast.ev.n, &after, NULL);
            ASSERT_TRUE(after.valid && after.peak <= budget);
            int n_rec = s.ev.n - n, left = fast.ev.n - n;
            refused += left > 0, taken += left < n_rec;
            cases++;
        }
        dag_free(&d);
    }
    printf("%d cases: %d keep a recomputation, %d drop one\n", cases, refused, taken);
    ASSERT_TRUE(refused > cases / 20 && taken > cases / 2);

    /* the speed: 64 nodes, every stage recomputing about 5/8 of the earlier nodes in each of its sweeps */
    Dag d;
    gen(&d, 64, SHAPE_RANDOM);
    random_schedule(&d, 100, 20, &s);
    DagSim sim;
    dag_simulate(&d, s.ev.v, s.ev.n, &sim, NULL);
    double t0 = acc_now_s();
    dag_prune_recomputations(&d, sim.peak, t0 + 2.0, &s);
    double took = acc_now_s() - t0;
    int kept = s.ev.n;
    dag_prune_recomputations(&d, sim.peak, acc_now_s() + 2.0, &s);
    printf("a schedule of %d events pruned to %d in %.3f s; a second pruning keeps %d\n", sim.n_events, kept, took,
           s.ev.n);
    ASSERT_TRUE(sim.n_events > 20000);
    ASSERT(kept, s.ev.n);
    dag_free(&d);
    staged_free(&s), staged_free(&ref), staged_free(&fast);
    TEST_DONE();
}
