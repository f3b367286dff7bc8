/* test_dag_minpeak.c - the recursive schedule's peak (dag_minpeak.c) against
 * an independent reference on random small DAGs (dag_gen.h's four shapes):
 * the least peak of every schedule, by a bisection over budgets of the
 * exhaustive search (dag_exhaustive.c). Asserted for each graph:
 *   - the schedule, written out and replayed by the simulator, is valid and
 *     its peak is at most the peak dag_recursive_peak states (so the stated
 *     peak is one a schedule reaches: an upper bound that can be trusted);
 *   - the least peak of every schedule is at most the stated peak (an upper
 *     bound on it never below it), and at least the node-with-inputs bound;
 *   - on a chain with a collector (the last node reads every other output,
 *     each one built from its predecessor) the stated peak is the least one:
 *     exact where the recursion cannot do better, so a wrong order of the
 *     inputs (or a wrong sum) changes it.
 */
#include <stdlib.h>

#include "dag/dag_impl.h"
#include "dag_gen.h"
#include "passes.h"
#include "test.h"

/* The least peak of any schedule (first executions in the topological order). */
static int64_t least_peak(const Dag *d) {
    int64_t a = dag_min_peak(d), b = dag_baseline_peak(d);
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (dag_exhaustive(d, mid, false, NULL, NULL) >= 0) b = mid;
        else a = mid + 1;
    }
    return a;
}

static void check(const Dag *d, const char *what) {
    double events = 0;
    int64_t stated = dag_recursive_peak(d, NULL, &events);
    Staged s = {0};
    bool written = dag_recursive_schedule(d, 1 << 20, &s);
    ASSERT_TRUE(written);
    DagSim sim;
    dag_simulate(d, s.ev.v, s.ev.n, &sim, NULL);
    ASSERT_TRUE(sim.valid);
    if (!ASSERT_TRUE(sim.peak <= stated))
        printf("  %s: replayed %lld > stated %lld\n", what, (long long)sim.peak, (long long)stated);
    ASSERT_TRUE(s.ev.n <= events);
    int64_t least = least_peak(d);
    if (!ASSERT_TRUE(least <= stated))
        printf("  %s: least %lld > stated %lld\n", what, (long long)least, (long long)stated);
    ASSERT_TRUE(dag_min_peak(d) <= least);
    staged_free(&s);
}

/* A graph of unit costs (at most 16 nodes) whose least peak is known, and
 * the recursive schedule is to state exactly it. */
static void exact(int n, const int64_t *mem, int e, const int *src, const int *dst, int64_t least, const char *what) {
    double cost[16];
    for (int i = 0; i < n; i++) cost[i] = 1;
    Dag d;
    dag_from_arrays(&d, n, cost, mem, e, src, dst);
    ASSERT(least, least_peak(&d));
    ASSERT(least, dag_recursive_peak(&d, NULL, NULL));
    check(&d, what);
    dag_free(&d);
}

int main(void) {
    for (int g = 0; g < 48; g++) {
        Dag d;
        int shape = g % N_SHAPES, n = 8 + (int)(rnd() % 7u);
        gen(&d, n, shape);
        char what[64];
        snprintf(what, sizeof what, "graph %d (%s, %d nodes)", g, shape_name[shape], n);
        check(&d, what);
        dag_free(&d);
    }
    /* a chain 0 -> 1 -> ... -> 5 and a collector 6 reading 1..5, sizes 1, 4, 1, 3, 2, 5 and 1: every
     * input of 6 is held at its event (16 with 6's own), so no schedule needs less, and the recursion
     * reaches it with 6's inputs in the order 2, 4, 5, 1, 3 (R - mem 4, 3, 2, 1, 1); in the reverse
     * order it would state 19 (1, 3, 5 held, 12, while 4 needs 5; then 14 while 2 needs 5) */
    int64_t mem[7] = {1, 4, 1, 3, 2, 5, 1};
    int src[10] = {0, 1, 2, 3, 4, 1, 2, 3, 4, 5}, dst[10] = {1, 2, 3, 4, 5, 6, 6, 6, 6, 6};
    exact(7, mem, 10, src, dst, 16, "chain with a collector");
    /* a diamond over a large pair: 0 -> 1 (10 each), 1 -> 2 and 1 -> 3, 2 and 3 -> 4 (1 each). The
     * recursion computes 0 and 1 again for 3 while holding 2: 21; the sweep of 4's cone computes them
     * once, 2 and 3 while 1 is held: 20, the least (1 with its input) */
    int64_t mem5[5] = {10, 10, 1, 1, 1};
    int src5[5] = {0, 1, 1, 2, 3}, dst5[5] = {1, 2, 3, 4, 4};
    exact(5, mem5, 5, src5, dst5, 20, "diamond over a large pair");
    TEST_DONE();
}
