/* test_dag_sweep.c - acc's graph planner (acc plan --graph) against the
 * exhaustive reference (dag_exhaustive.c) on random small DAGs over a sweep
 * of budgets, from the least any schedule needs (and one unit under it) to
 * the save-all peak.
 *
 *   test_dag_sweep [--graphs N] [--nodes LO-HI] [--budgets K] [--seed S]
 *                  [--time-limit T] [--acc PATH] [--table]
 *
 * The graphs come from this file's generator, deterministic from the seed,
 * in four shapes: layered, a chain with long skips (U-Net-like, the shape of
 * a forward and backward pass), multi-branch blocks (fork, parallel branches
 * of different lengths, join), and random (1-3 earlier inputs, mostly
 * recent); costs 1..20 (a quarter of the nodes five times heavier), sizes
 * 1..10. The reference runs in both modes: every schedule (first executions
 * in order, recomputations anywhere) up to DAG_EXHAUSTIVE_MAX nodes, and
 * Checkmate's staged plan space up to DAG_EXHAUSTIVE_MAX_STAGED nodes; its
 * witness schedules must be accepted by the simulator at the stated cost.
 *
 * Asserted (unless --acc, which measures another acc binary through its
 * command line and only reports): a plan whenever the reference has one, its
 * compute within 0.5% of the optimum over every schedule, "infeasible" only
 * when the reference has no schedule, and then with the proof's scope "all
 * schedules"; and the floors over every schedule (dag_window_lp,
 * dag_inputs_lp) never above the optimum. --table prints the summary per
 * shape (bench/planner/small_dags.sh).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dag/dag_impl.h"
#include "dag_gen.h"
#include "passes.h"
#include "test.h"

/* The graph as node-link JSON (to reproduce a failure with acc plan). */
static void dump_json(const Dag *d, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    dag_write_json(d, "sweep", f);
    fclose(f);
}

typedef struct {
    bool fits;
    double compute, time_s;
    char status[32], scope[32];
} Result;

/* acc in this process, or another acc binary through its command line */
static Result run_acc(const Dag *d, int64_t budget, double limit, const char *acc) {
    Result r = {0};
    if (!acc) {
        DagPlanOptions o = {DAG_ACC, budget, limit, NULL, false, 0, 0};
        DagPlan p;
        char err[256];
        if (!dag_plan(d, &o, &p, err, sizeof err)) {
            printf("dag_plan failed: %s\n", err);
            snprintf(r.status, sizeof r.status, "error");
            return r;
        }
        r.fits = p.fits, r.compute = p.sim.compute, r.time_s = p.solve_s;
        snprintf(r.status, sizeof r.status, "%s", p.status);
        snprintf(r.scope, sizeof r.scope, "%s", p.bound_scope);
        dag_plan_free(&p);
        return r;
    }
    char path[64], cmd[512], out[8192] = "";
    snprintf(path, sizeof path, "/tmp/dag_sweep_%d.json", (int)getpid());
    dump_json(d, path);
    snprintf(cmd, sizeof cmd, "%s plan --graph %s --budget %lld --time-limit %g 2>/dev/null", acc, path,
             (long long)budget, limit);
    double t0 = acc_now_s();
    FILE *f = popen(cmd, "r");
    if (f) {
        size_t n = fread(out, 1, sizeof out - 1, f);
        out[n] = 0;
        pclose(f);
    }
    r.time_s = acc_now_s() - t0;
    remove(path);
    const char *c = strstr(out, "\"compute\": "), *s = strstr(out, "\"status\": \""),
               *b = strstr(out, "\"bound_scope\": \"");
    r.fits = strstr(out, "\"fits\": true") != NULL;
    if (c) r.compute = atof(c + 11);
    if (s) sscanf(s + 11, "%31[^\"]", r.status);
    if (b) sscanf(b + 16, "%31[^\"]", r.scope);
    return r;
}

/* The reference, its witness checked by the simulator. */
static double reference(const Dag *d, int64_t budget, bool staged) {
    int *ev = NULL, n_ev = 0;
    double c = dag_exhaustive(d, budget, staged, &ev, &n_ev);
    if (c >= 0) {
        DagSim s;
        dag_simulate(d, ev, n_ev, &s, NULL);
        if (!ASSERT_TRUE(s.valid && s.peak <= budget && fabs(s.compute - c) < 1e-6))
            printf("  witness: valid %d peak %lld budget %lld compute %g stated %g\n", s.valid, (long long)s.peak,
                   (long long)budget, s.compute, c);
    }
    free(ev);
    return c;
}

typedef struct {
    int cases, exists, found, within, infeasible_ok, false_infeasible, no_plan, staged_none, any_cheaper;
    int proven, fits, settled;
    double worst, worst_staged, max_s, sum_s;
} Stats;

/* dag_pebble from nothing, node by node: whether every node can be computed
 * within budget (-1: a search did not finish). Each sequence found, followed
 * by its node, is appended to a schedule that must be valid and fit: the
 * search's paths are schedules. Exactness: the least peak of any schedule is
 * the largest least budget of a node from nothing, so the answer must equal
 * whether the reference finds a schedule. */
static int pebble_all(const Dag *d, int64_t budget) {
    VEC(int) ev = {0};
    int all = 1;
    for (int t = 0; t < d->n && all == 1; t++) {
        int *seq, n_seq;
        double c;
        int st = dag_pebble(d, budget, t, NULL, 1 << 16, acc_now_s() + 60, 0, &seq, &n_seq, &c);
        if (st == DAG_PEBBLE_FOUND) {
            for (int e = 0; e < n_seq; e++) VEC_PUSH(ev, seq[e]);
            VEC_PUSH(ev, t);
        }
        all = st == DAG_PEBBLE_FOUND ? 1 : st == DAG_PEBBLE_NONE ? 0 : -1;
        free(seq);
    }
    if (all == 1) {
        DagSim sim;
        dag_simulate(d, ev.v, ev.n, &sim, NULL);
        if (!ASSERT_TRUE(sim.valid && sim.peak <= budget)) all = -1;
    }
    VEC_FREE(ev);
    return all;
}

int main(int argc, char **argv) {
    int graphs = 50, lo_n = 11, hi_n = 14, budgets = 5;
    double limit = 10;
    const char *acc = NULL;
    bool table = false;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--graphs")) graphs = atoi(v), i++;
        else if (!strcmp(argv[i], "--nodes")) sscanf(v, "%d-%d", &lo_n, &hi_n), i++;
        else if (!strcmp(argv[i], "--budgets")) budgets = atoi(v), i++;
        else if (!strcmp(argv[i], "--seed")) rng = strtoull(v, NULL, 10) * 2654435761ull + 1, i++;
        else if (!strcmp(argv[i], "--time-limit")) limit = atof(v), i++;
        else if (!strcmp(argv[i], "--acc")) acc = v, i++;
        else if (!strcmp(argv[i], "--table")) table = true;
        else {
            fprintf(stderr, "usage: test_dag_sweep [--graphs N] [--nodes LO-HI] [--budgets K] [--seed S] "
                            "[--time-limit T] [--acc PATH] [--table]\n");
            return 2;
        }
    }
    if (lo_n < 2 || hi_n < lo_n || hi_n > 64 || budgets < 2 || graphs < 1) { /* the generator's arrays */
        fprintf(stderr, "test_dag_sweep: bad arguments\n");
        return 2;
    }
    Stats st[N_SHAPES + 1] = {0};
    int n_floor = 0, n_floor_above = 0; /* cases with an optimum; the inputs' floor above the windows' */
    for (int g = 0; g < graphs; g++) {
        Dag d;
        int shape = g % N_SHAPES, n = lo_n + (int)(rnd() % (unsigned)(hi_n - lo_n + 1));
        gen(&d, n, shape);
        bool ref = n <= DAG_EXHAUSTIVE_MAX, ref_staged = n <= DAG_EXHAUSTIVE_MAX_STAGED;
        int64_t hi = dag_baseline_peak(&d), lo = dag_min_peak(&d);
        if (ref) /* the least budget any schedule fits in */
            for (int64_t a = lo, b = hi; a < b;) {
                int64_t mid = a + (b - a) / 2;
                if (dag_exhaustive(&d, mid, false, NULL, NULL) >= 0) b = mid;
                else a = mid + 1;
                lo = a;
            }
        int64_t prev = -1;
        for (int k = -1; k < budgets; k++) {
            int64_t budget = k < 0 ? lo - 1 : lo + (hi - lo) * k / (budgets - 1);
            if (budget < 1 || budget == prev) continue;
            prev = budget;
            double any = ref ? reference(&d, budget, false) : NAN;
            double staged = ref_staged ? reference(&d, budget, true) : NAN;
            Result r = run_acc(&d, budget, limit, acc);
            bool ref_case = ref;
            if (!ref && acc) { /* past the reference: this acc's proofs over every schedule, for the table */
                Result me = run_acc(&d, budget, limit, NULL);
                bool proven = !strcmp(me.scope, "all schedules") &&
                              ((me.fits && !strcmp(me.status, "optimal")) || !strcmp(me.status, "infeasible"));
                if (proven) any = me.fits ? me.compute : -1, ref_case = true;
            }
            for (int s = 0; s < 2; s++) {
                Stats *x = &st[s ? N_SHAPES : shape];
                x->cases++;
                x->sum_s += r.time_s;
                if (r.time_s > x->max_s) x->max_s = r.time_s;
                bool infeasible = !strcmp(r.status, "infeasible");
                x->fits += r.fits;
                x->proven += (r.fits && !strcmp(r.status, "optimal")) || infeasible;
                if (ref_staged && staged < 0 && any >= 0) x->staged_none++;
                if (ref_staged && staged >= 0 && any >= 0 && any < staged - 1e-9) x->any_cheaper++;
                if (r.fits && ref_staged && staged >= 0) {
                    double ex = r.compute / staged - 1;
                    if (ex > x->worst_staged) x->worst_staged = ex;
                }
                if (!ref_case) continue;
                x->settled++;
                if (any >= 0) {
                    x->exists++;
                    x->found += r.fits;
                    x->false_infeasible += infeasible;
                    x->no_plan += !r.fits;
                    if (r.fits) {
                        double ex = r.compute / any - 1;
                        if (ex > x->worst) x->worst = ex;
                        x->within += ex <= 0.005;
                    }
                } else {
                    x->infeasible_ok += infeasible && !strcmp(r.scope, "all schedules");
                }
            }
            if (acc || !ref) continue;
            /* the assertions */
            if (any >= 0) { /* the floors over every schedule: never above the optimum, the inputs' at least the
                             * windows program's */
                double win = NAN, in = NAN;
                char err[256];
                ASSERT_TRUE(dag_window_lp(&d, budget, acc_now_s() + 10, false, &win, err, sizeof err));
                ASSERT_TRUE(dag_inputs_lp(&d, budget, 0, acc_now_s() + 10, false, &in, err, sizeof err));
                if (!ASSERT_TRUE(win <= any + 1e-6 && in <= any + 1e-6 && in >= win - 1e-6))
                    printf("  graph %d (%s, n=%d) budget %lld: optimum %g, windows %g, inputs %g\n", g,
                           shape_name[shape], n, (long long)budget, any, win, in);
                n_floor++, n_floor_above += in > win + 1e-6;
            }
            int peb = pebble_all(&d, budget);
            if (!ASSERT(any >= 0 ? 1 : 0, peb))
                printf("  graph %d (%s, n=%d) budget %lld: pebbling from nothing %d, optimum %g\n", g,
                       shape_name[shape], n, (long long)budget, peb, any);
            char what[320];
            snprintf(what, sizeof what, "graph %d (%s, n=%d) budget %lld: acc %s %g (%s), optimum %g, staged %g", g,
                     shape_name[shape], n, (long long)budget, r.fits ? "fits" : "no plan", r.compute, r.status, any,
                     staged);
            bool ok;
            if (any >= 0) {
                ok = ASSERT_TRUE(r.fits) && ASSERT_TRUE(r.compute <= any * 1.005 + 1e-9) &&
                     ASSERT_TRUE(r.compute >= any - 1e-6); /* nothing beats the optimum */
            } else {
                ok = ASSERT_TRUE(!r.fits) && ASSERT_STR("infeasible", r.status) && ASSERT_STR("all schedules", r.scope);
            }
            if (!ok) {
                char path[64];
                snprintf(path, sizeof path, "/tmp/dag_sweep_case_%d.json", g);
                dump_json(&d, path);
                printf("  %s; graph in %s\n", what, path);
            }
        }
        dag_free(&d);
    }
    if (table || acc) {
        if (hi_n > DAG_EXHAUSTIVE_MAX)
            printf("Past %d nodes the optimum is the one this build of acc proves over every schedule (the cases it "
                   "settles: %d of %d).\n\n",
                   DAG_EXHAUSTIVE_MAX, st[N_SHAPES].settled, st[N_SHAPES].cases);
        printf("| shape | cases | a schedule exists | acc: a plan | within 0.5%% | worst over optimum | worst over "
               "staged optimum | infeasible, proven | false infeasible | no staged plan, a schedule exists | "
               "any order cheaper | acc fits | optimal or infeasible proven | time max / mean (s) |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (int s = 0; s <= N_SHAPES; s++) {
            Stats *x = &st[s];
            if (!x->cases) continue;
            printf("| %s | %d | %d | %d | %d | %+.1f%% | %+.1f%% | %d | %d | %d | %d | %d | %d | %.2f / %.3f |\n",
                   s < N_SHAPES ? shape_name[s] : "all", x->cases, x->exists, x->found, x->within, 100 * x->worst,
                   100 * x->worst_staged, x->infeasible_ok, x->false_infeasible, x->staged_none, x->any_cheaper,
                   x->fits, x->proven, x->max_s, x->sum_s / x->cases);
        }
    }
    if (!acc) {
        Stats *x = &st[N_SHAPES];
        printf("sweep: %d graphs of %d-%d nodes, %d cases, a schedule in %d, acc's plan in %d, within 0.5%% in %d\n",
               graphs, lo_n, hi_n, x->cases, x->exists, x->found, x->within);
        printf("floors: %d cases with an optimum, the inputs' program above the windows program in %d\n", n_floor,
               n_floor_above);
        if (hi_n <= DAG_EXHAUSTIVE_MAX) ASSERT_TRUE(x->exists > x->cases / 2); /* the sweep is not all infeasible */
    }
    TEST_DONE();
}
