/* test_dag_interval.c - the interval program (dag_interval.c) against the
 * exhaustive reference (dag_exhaustive.c) on random small DAGs.
 *
 *   test_dag_interval [--graphs N] [--nodes LO-HI] [--seed S]
 *
 * For each graph (dag_gen.h, the four shapes of test_dag_sweep) and budgets
 * from one unit under the least any schedule needs to the save-all peak,
 * the reference's optimum over every schedule (first executions in order,
 * recomputations anywhere, in any order, any number of times) and its
 * witness. The interval program is solved to optimality with C and L taken
 * from the witness (its most computations of one node, its most
 * recomputations in one stage), so the witness is in the program's plan
 * space, which is inside the reference's: the optimum must equal the
 * reference's, and the bound must not exceed it. With the default C = 2,
 * L = 1 (a smaller space) it must not beat the reference. With no schedule
 * it must not return a plan that fits. Every plan is replayed by the
 * simulator at the stated compute, valid and within the budget.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag/dag_impl.h"
#include "passes.h"
#include "test.h"
#include "dag_gen.h"

typedef struct {
    int cases, exact, bounded, none_ok, small_space, many_copies, beats_staged;
} Stats;

/* The witness's most computations of one node and most recomputations in one stage. */
static void witness_shape(const Dag *d, const int *ev, int n_ev, int *copies, int *slots) {
    int *count = acc_xcalloc((size_t)d->n, sizeof(int)), next = 0, in_stage = 0;
    *copies = 1, *slots = 0;
    for (int e = 0; e < n_ev; e++) {
        int v = ev[e];
        if (++count[v] > *copies) *copies = count[v];
        if (count[v] == 1 && v == next) next++, in_stage = 0;
        else if (++in_stage > *slots) *slots = in_stage;
    }
    free(count);
}

/* Solve, replay, and check the plan against its own claims. Returns the
 * compute (INFINITY: no plan that fits). */
static double solve(const Dag *d, int64_t budget, int copies, int slots, DagPlan *p) {
    memset(p, 0, sizeof *p);
    p->objective = p->bound = NAN;
    char err[200] = "";
    if (!ASSERT_TRUE(dag_solve_intervals(d, budget, NULL, copies, slots, acc_now_s() + 20, false, p, err, sizeof err)))
        printf("  %s\n", err);
    if (!p->ev) return INFINITY;
    dag_simulate(d, p->ev, p->n_ev, &p->sim, NULL);
    bool fits = p->sim.valid && p->sim.peak <= budget;
    if (!ASSERT_TRUE(fits && fabs(p->sim.compute - p->objective) < 1e-6))
        printf("  plan: valid %d peak %lld budget %lld compute %g objective %g\n", p->sim.valid, (long long)p->sim.peak,
               (long long)budget, p->sim.compute, p->objective);
    return fits ? p->sim.compute : INFINITY;
}

static void check(const Dag *d, int64_t budget, Stats *st, const char *what) {
    int *ev = NULL, n_ev = 0;
    double ref = dag_exhaustive(d, budget, false, &ev, &n_ev);
    st->cases++;
    DagPlan p;
    if (ref < 0) {
        double c = solve(d, budget, 2, 1, &p);
        st->none_ok += ASSERT_TRUE(!isfinite(c));
        dag_plan_free(&p);
        return;
    }
    int copies, slots;
    witness_shape(d, ev, n_ev, &copies, &slots);
    double c = solve(d, budget, copies < 2 ? 2 : copies, slots < 1 ? 1 : slots, &p);
    bool exact = ASSERT_TRUE(!strcmp(p.status, "optimal") && fabs(c - ref) < 1e-6);
    bool bounded = ASSERT_TRUE(isfinite(p.bound) && p.bound <= ref + 1e-6);
    if (!exact || !bounded)
        printf("  %s budget %lld: C %d L %d: status %s compute %g bound %g, reference %g\n", what, (long long)budget,
               copies, slots, p.status, c, p.bound, ref);
    st->exact += exact, st->bounded += bounded, st->many_copies += copies > 2;
    if (d->n <= DAG_EXHAUSTIVE_MAX_STAGED) { /* where the stage model (ascending, once a stage) costs more */
        double staged = dag_exhaustive(d, budget, true, NULL, NULL);
        st->beats_staged += staged < 0 || staged > c + 1e-6;
    }
    dag_plan_free(&p);
    c = solve(d, budget, 2, 1, &p); /* a smaller space: never below the reference */
    st->small_space += ASSERT_TRUE(!isfinite(c) || c >= ref - 1e-6);
    dag_plan_free(&p);
    free(ev);
}

int main(int argc, char **argv) {
    int graphs = 24, lo = 7, hi = 9;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--graphs")) graphs = atoi(v), i++;
        else if (!strcmp(argv[i], "--nodes")) sscanf(v, "%d-%d", &lo, &hi), i++;
        else if (!strcmp(argv[i], "--seed")) rng = strtoull(v, NULL, 10) * 2654435761ull + 1, i++;
    }
    Stats st = {0};
    for (int g = 0; g < graphs; g++) {
        int n = lo + g % (hi - lo + 1), shape = g % N_SHAPES;
        Dag d;
        gen(&d, n, shape);
        /* the least budget any schedule fits in (bisection on the reference) */
        int64_t a = dag_min_peak(&d), b = dag_baseline_peak(&d);
        while (a < b) {
            int64_t mid = a + (b - a) / 2;
            if (dag_exhaustive(&d, mid, false, NULL, NULL) >= 0) b = mid;
            else a = mid + 1;
        }
        int64_t top = dag_baseline_peak(&d), budgets[4] = {a - 1, a, a + (top - a) / 3, a + 2 * (top - a) / 3};
        char what[64];
        snprintf(what, sizeof what, "graph %d (%s, %d nodes)", g, shape_name[shape], n);
        for (int k = 0; k < 4; k++)
            if (budgets[k] > 0) check(&d, budgets[k], &st, what);
        dag_free(&d);
    }
    printf("test_dag_interval: %d cases: %d equal the reference, %d bounded by it, %d without a schedule found "
           "none, %d at C = 2 not below it; %d need C > 2, %d cheaper than the best staged plan\n",
           st.cases, st.exact, st.bounded, st.none_ok, st.small_space, st.many_copies, st.beats_staged);
    TEST_DONE();
}
