/* test_dag_layered.c - acc plan --graph at tight budgets on random layered
 * DAGs in the shape of MOCCASIN's benchmarks (bench/planner/random_layered.py's
 * shape, generated here in C): at 0.7 and 0.6 of the save-all peak acc must
 * return a plan, within its time limit (+10%), that an independent replay of
 * the schedule (written here, not dag_simulate) finds valid (every node run,
 * first runs in the topological order, every read finds a copy) and under the
 * budget, at the compute and peak the plan states, with a gap.
 *
 * With --improve MIN_PCT, instead: the local improvement (dag_improve) alone,
 * from the costliest plan acc makes at tight budgets (each node computed
 * from nothing in turn by the pebbling search), at each fraction: the result
 * must replay valid, under the budget, never cost more than the start, and
 * on the sum over the fractions cost at least MIN_PCT% less.
 *
 * With --cheapest MIN_PCT, instead: the same plan (each node from nothing in
 * turn) with each node's path the depth-first search's first (dag_pebble)
 * and the cheapest (dag_pebble_cheapest below it): both must replay valid
 * and under the budget, the cheapest never dearer per node, and on the sum
 * over the fractions the plan at least MIN_PCT% cheaper.
 *
 * With --pebble-states S, also: at each fraction, before the plan, the
 * pebbling search from nothing for the last node (dag_pebble, as the proof
 * runs it) must find a path within S states, and the path, replayed here
 * from nothing, must compute that node within the budget. With --no-plan 1,
 * that search alone (no plan).
 *
 * With --max-overhead PCT, also: each plan's compute at most PCT% over the
 * baseline (the replay's compute).
 *
 * usage: test_dag_layered [--nodes N] [--seed S] [--limit SECONDS] [--fracs "0.7 0.6"] [--collector K]
 *                         [--late L] [--json FILE: write the graph] [--improve MIN_PCT] [--cheapest MIN_PCT]
 *                         [--pebble-states S] [--no-plan 1] [--fanin F] [--skip PCT]
 *                         [--max-overhead PCT]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag/dag_impl.h"
#include "passes.h"
#include "test.h"

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int rnd_int(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }

/* A source, layers of random width (mean 0.6 sqrt(n)), each node reading one
 * to fanin (3) nodes of the layer before and with probability skip% (15%) one
 * of an earlier layer, every node read by a later one, a sink reading the last
 * layer; sizes 20 .. 8,000, costs 0 .. 999. With collector > 0, the last
 * node reads the sink of the layers and that many other nodes drawn from the
 * whole graph (MOCCASIN's published random graphs end in such a node, which
 * reads 44 outputs made all over the graph: held to the end they fill the
 * budget, and rebuilt there they need chains 20 nodes deep). With late > 0,
 * closer to MOCCASIN's: the last node also reads the last layer (the sink's
 * inputs) and draws the others from the late nodes before the sink, which
 * are rebuilt from deeper chains. */
static void layered(Dag *d, int n_all, uint64_t seed, int collector, int late, int fanin, int skip) {
    rng_state = 0x9e3779b97f4a7c15ull ^ (seed * 0x2545f4914f6cdd1dull);
    int n = collector > 0 ? n_all - 1 : n_all;
    int *layer_of = calloc((size_t)n, sizeof(int)), *start = calloc((size_t)n + 1, sizeof(int));
    int n_layers = 1, next = 1, wmax = (int)(2 * fmax(1.0, 0.6 * sqrt((double)n))) - 1;
    start[0] = 0, start[1] = 1;
    while (next < n - 1) {
        int w = rnd_int(1, wmax > 1 ? wmax : 1);
        if (w > n - 1 - next) w = n - 1 - next;
        for (int i = next; i < next + w; i++) layer_of[i] = n_layers;
        next += w, start[++n_layers] = next;
    }
    layer_of[n - 1] = n_layers, start[++n_layers] = n; /* the sink */
    int cap = (fanin + 5) * n, m = 0;
    int *src = calloc((size_t)cap, sizeof(int)), *dst = calloc((size_t)cap, sizeof(int));
    bool *read = calloc((size_t)n, sizeof(bool));
    for (int l = 1; l < n_layers; l++) {
        int p0 = start[l - 1], pw = start[l] - p0;
        for (int v = start[l]; v < start[l + 1]; v++) {
            if (l == n_layers - 1) { /* the sink reads the whole layer before */
                for (int u = p0; u < p0 + pw; u++) src[m] = u, dst[m++] = v, read[u] = true;
                continue;
            }
            for (int k = rnd_int(1, fanin); k > 0; k--) {
                int u = p0 + rnd_int(0, pw - 1);
                src[m] = u, dst[m++] = v, read[u] = true;
            }
            if (l >= 2 && rnd() % 100 < (uint64_t)skip) {
                int ll = rnd_int(0, l - 2), u = start[ll] + rnd_int(0, start[ll + 1] - start[ll] - 1);
                src[m] = u, dst[m++] = v, read[u] = true;
            }
        }
        for (int u = p0; u < p0 + pw; u++)
            if (!read[u]) src[m] = u, dst[m++] = start[l] + rnd_int(0, start[l + 1] - start[l] - 1), read[u] = true;
    }
    if (collector > 0) {
        src = realloc(src, (size_t)(m + collector + n + 1) * sizeof(int));
        dst = realloc(dst, (size_t)(m + collector + n + 1) * sizeof(int));
        bool *picked = calloc((size_t)n, sizeof(bool));
        src[m] = n - 1, dst[m++] = n;
        for (int u = start[n_layers - 2]; late > 0 && u < n - 1; u++) /* the sink's inputs too */
            picked[u] = true, src[m] = u, dst[m++] = n;
        int lo = late > 0 && late < n - 2 ? n - 1 - late : 1; /* the others drawn from [lo, n - 2] */
        for (int k = 0; k < collector && k < n - 1 - lo; k++) {
            int u;
            do u = rnd_int(lo, n - 2);
            while (picked[u]);
            picked[u] = true, src[m] = u, dst[m++] = n;
        }
        free(picked);
    }
    double *cost = calloc((size_t)n_all, sizeof(double));
    int64_t *mem = calloc((size_t)n_all, sizeof(int64_t));
    for (int i = 0; i < n_all; i++) cost[i] = i ? rnd_int(0, 999) : 0, mem[i] = 10 * rnd_int(2, 800);
    dag_from_arrays(d, n_all, cost, mem, m, src, dst);
    free(layer_of), free(start), free(src), free(dst), free(read), free(cost), free(mem);
}

/* The replay: each copy is held from its run to the last run that reads it
 * (reads take the latest copy); the memory at a run is the sum of the copies
 * held there. Returns false when the schedule is not valid. */
static bool replay(const Dag *d, const int *ev, int n_ev, int64_t *peak, double *compute) {
    int *latest = malloc((size_t)d->n * sizeof(int)), *until = malloc((size_t)n_ev * sizeof(int));
    bool ok = true;
    int next_first = 0;
    *peak = 0, *compute = 0;
    for (int i = 0; i < d->n; i++) latest[i] = -1;
    for (int e = 0; e < n_ev && ok; e++) {
        int v = ev[e];
        if (v < 0 || v >= d->n || (latest[v] < 0 && v != next_first)) {
            ok = false; /* an unknown node, or a first run out of the topological order */
            break;
        }
        if (latest[v] < 0) next_first++;
        for (int q = d->in_off[v]; q < d->in_off[v + 1] && ok; q++) {
            int c = latest[d->in[q]];
            if (c < 0) ok = false;
            else until[c] = e;
        }
        until[e] = e, latest[v] = e, *compute += d->cost[v];
    }
    ok = ok && next_first == d->n;
    for (int e = 0; e < n_ev && ok; e++) {
        int64_t held = 0;
        for (int c = 0; c <= e; c++)
            if (until[c] >= e) held += d->mem[ev[c]];
        if (held > *peak) *peak = held;
    }
    free(latest), free(until);
    return ok;
}

/* The replay of a path from nothing: seq, then x, each copy held from its
 * run to its last read (reads take the latest copy). False when a read finds
 * no copy; *peak: the most memory held at a run. */
static bool replay_path(const Dag *d, const int *seq, int n_seq, int x, int64_t *peak, double *compute) {
    int *ev = malloc(((size_t)n_seq + 1) * sizeof(int)), *latest = malloc((size_t)d->n * sizeof(int));
    int *until = malloc(((size_t)n_seq + 1) * sizeof(int));
    bool ok = true;
    memcpy(ev, seq, (size_t)n_seq * sizeof(int));
    ev[n_seq] = x;
    *peak = 0, *compute = 0;
    for (int i = 0; i < d->n; i++) latest[i] = -1;
    for (int e = 0; e <= n_seq && ok; e++) {
        for (int q = d->in_off[ev[e]]; q < d->in_off[ev[e] + 1]; q++) {
            int c = latest[d->in[q]];
            if (c < 0) ok = false;
            else until[c] = e;
        }
        until[e] = e, latest[ev[e]] = e, *compute += d->cost[ev[e]];
    }
    for (int e = 0; e <= n_seq && ok; e++) {
        int64_t held = 0;
        for (int c = 0; c <= e; c++)
            if (until[c] >= e) held += d->mem[ev[c]];
        if (held > *peak) *peak = held;
    }
    free(ev), free(latest), free(until);
    return ok;
}

/* Each node from nothing in turn (dag_pebble), then dag_improve until limit
 * seconds: both replayed here. Returns the improved compute, adds the start's
 * to *start_total. */
static double improve_case(const Dag *d, int64_t budget, double limit, double *start_total) {
    Staged s = {0};
    for (int t = 0; t < d->n; t++) {
        int *seq = NULL, n_seq = 0;
        double c;
        int st = dag_pebble(d, budget, t, NULL, 1 << 20, acc_now_s() + limit, 0, &seq, &n_seq, &c);
        ASSERT(st, DAG_PEBBLE_FOUND);
        for (int e = 0; e < n_seq; e++) staged_push(&s, t, seq[e]);
        staged_push(&s, t, t);
        free(seq);
    }
    int64_t peak0, peak1;
    double c0, c1;
    ASSERT_TRUE(replay(d, s.ev.v, s.ev.n, &peak0, &c0));
    ASSERT_TRUE(peak0 <= budget);
    double t0 = acc_now_s();
    dag_improve(d, budget, t0 + limit, &s, false);
    double wall = acc_now_s() - t0;
    bool valid = replay(d, s.ev.v, s.ev.n, &peak1, &c1);
    printf("  budget %lld: each node from nothing %.0f (+%.1f%%) -> improved %.0f (+%.1f%%), peak %lld, %.2f s\n",
           (long long)budget, c0, 100 * (c0 / dag_baseline_compute(d) - 1), c1,
           100 * (c1 / dag_baseline_compute(d) - 1), (long long)peak1, wall);
    ASSERT_TRUE(valid);
    ASSERT_TRUE(peak1 <= budget);
    ASSERT_TRUE(c1 <= c0);
    ASSERT_TRUE(wall <= limit + 1);
    staged_free(&s);
    *start_total += c0;
    return c1;
}

/* Each node from nothing in turn, by the first path and by the cheapest: both
 * replayed here. Returns the cheapest plan's compute, adds the first's to
 * *first_total. */
static double cheapest_case(const Dag *d, int64_t budget, double limit, double *first_total) {
    Staged s[2];
    memset(s, 0, sizeof s);
    double t0 = acc_now_s();
    for (int t = 0; t < d->n; t++) {
        int *seq = NULL, n_seq = 0, *s2 = NULL, n2 = 0;
        double c, c2 = 0;
        int st = dag_pebble(d, budget, t, NULL, 1 << 20, t0 + limit, 0, &seq, &n_seq, &c);
        ASSERT(st, DAG_PEBBLE_FOUND);
        int st2 = dag_pebble_cheapest(d, budget, t, NULL, c, 1 << 20, t0 + limit, &s2, &n2, &c2);
        ASSERT_TRUE(st2 != DAG_PEBBLE_FOUND || c2 < c); /* STOPPED (its states ran out): the first path */
        if (st2 != DAG_PEBBLE_FOUND) free(s2), s2 = seq, n2 = n_seq;
        for (int e = 0; e < n_seq; e++) staged_push(&s[0], t, seq[e]);
        for (int e = 0; e < n2; e++) staged_push(&s[1], t, s2[e]);
        staged_push(&s[0], t, t), staged_push(&s[1], t, t);
        if (s2 != seq) free(s2);
        free(seq);
    }
    double wall = acc_now_s() - t0, c[2];
    for (int k = 0; k < 2; k++) {
        int64_t peak;
        ASSERT_TRUE(replay(d, s[k].ev.v, s[k].ev.n, &peak, &c[k]));
        ASSERT_TRUE(peak <= budget);
        staged_free(&s[k]);
    }
    printf("  budget %lld: each node from nothing, first paths %.0f (+%.1f%%), cheapest %.0f (+%.1f%%), %.2f s\n",
           (long long)budget, c[0], 100 * (c[0] / dag_baseline_compute(d) - 1), c[1],
           100 * (c[1] / dag_baseline_compute(d) - 1), wall);
    ASSERT_TRUE(c[1] <= c[0]);
    *first_total += c[0];
    return c[1];
}

int main(int argc, char **argv) {
    int n = 150, collector = 0, late = 0;
    double improve = -1, cheapest = -1, max_overhead = -1;
    int pebble_states = 0, no_plan = 0, fanin = 3, skip = 15;
    const char *json = NULL;
    uint64_t seed = 1;
    double limit = 3;
    const char *fracs = "0.7 0.6";
    for (int a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--nodes")) n = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--seed")) seed = (uint64_t)atoll(argv[a + 1]);
        else if (!strcmp(argv[a], "--limit")) limit = atof(argv[a + 1]);
        else if (!strcmp(argv[a], "--fracs")) fracs = argv[a + 1];
        else if (!strcmp(argv[a], "--collector")) collector = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--late")) late = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--json")) json = argv[a + 1];
        else if (!strcmp(argv[a], "--improve")) improve = atof(argv[a + 1]);
        else if (!strcmp(argv[a], "--cheapest")) cheapest = atof(argv[a + 1]);
        else if (!strcmp(argv[a], "--pebble-states")) pebble_states = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--no-plan")) no_plan = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--fanin")) fanin = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--skip")) skip = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--max-overhead")) max_overhead = atof(argv[a + 1]);
    }
    if (n < 4) n = 4;
    if (fanin < 1) fanin = 1;
    Dag d;
    layered(&d, n, seed, collector, late, fanin, skip);
    if (json) { /* the graph, for acc plan --graph */
        FILE *f = fopen(json, "w");
        if (f) dag_write_json(&d, "layered", f), fclose(f);
    }
    int64_t base = dag_baseline_peak(&d);
    printf("layered graph: %d nodes, %d edges, seed %llu, save-all peak %lld, node with inputs %lld\n", d.n, d.n_edges,
           (unsigned long long)seed, (long long)base, (long long)dag_min_peak(&d));
    double start_total = 0, improved_total = 0;
    for (const char *f = fracs; *f;) {
        char *end;
        double frac = strtod(f, &end);
        if (end == f) break;
        f = end;
        if (cheapest >= 0) {
            improved_total += cheapest_case(&d, (int64_t)ceil(frac * (double)base), limit, &start_total);
            continue;
        }
        if (improve >= 0) {
            improved_total += improve_case(&d, (int64_t)ceil(frac * (double)base), limit, &start_total);
            continue;
        }
        if (pebble_states > 0) {
            int64_t budget = (int64_t)ceil(frac * (double)base), peak = -1;
            int *seq = NULL, n_seq = 0;
            double c = 0, compute = 0;
            int st = dag_pebble(&d, budget, d.n - 1, NULL, pebble_states, acc_now_s() + 60, 0, &seq, &n_seq, &c);
            printf("  %.3f of the peak: the last node from nothing within %d states: %s, %d recomputations\n", frac,
                   pebble_states, st == DAG_PEBBLE_FOUND ? "found" : "not found", n_seq);
            ASSERT(DAG_PEBBLE_FOUND, st);
            /* the path, then the node: a schedule of that node alone (reads and memory) */
            ASSERT_TRUE(st != DAG_PEBBLE_FOUND || replay_path(&d, seq, n_seq, d.n - 1, &peak, &compute));
            ASSERT_TRUE(peak <= budget);
            free(seq);
        }
        if (no_plan) continue;
        DagPlanOptions o = {DAG_ACC, (int64_t)ceil(frac * (double)base), limit, NULL, false, 0, 0};
        DagPlan p;
        char err[200] = "";
        double t0 = acc_now_s();
        bool ran = dag_plan(&d, &o, &p, err, sizeof err);
        double wall = acc_now_s() - t0;
        ASSERT_TRUE(ran);
        int64_t peak = -1;
        double compute = -1;
        bool valid = ran && replay(&d, p.ev, p.n_ev, &peak, &compute);
        printf("  %.2f of the peak (budget %lld): %s, fits %d, peak %lld, compute %.0f (+%.1f%%), gap %.1f%%, %.2f s\n",
               frac, (long long)o.budget, p.status, p.fits, (long long)peak, compute,
               100 * (compute / dag_baseline_compute(&d) - 1), 100 * p.gap, wall);
        ASSERT_TRUE(p.fits);
        ASSERT_TRUE(valid);
        ASSERT_TRUE(peak <= o.budget);
        ASSERT(p.sim.peak, peak);
        ASSERT_TRUE(fabs(p.sim.compute - compute) <= 1e-9 * compute);
        ASSERT_TRUE(isfinite(p.gap) && p.gap >= 0 && isfinite(p.bound) && p.bound <= compute);
        ASSERT_TRUE(wall <= 1.1 * limit);
        ASSERT_TRUE(max_overhead < 0 || compute <= (1 + max_overhead / 100) * dag_baseline_compute(&d));
        dag_plan_free(&p);
    }
    if (cheapest >= 0) {
        printf("  the cheapest paths over the fractions: %.1f%% cheaper (at least %.1f%% asserted)\n",
               100 * (1 - improved_total / start_total), cheapest);
        ASSERT_TRUE(improved_total <= (1 - cheapest / 100) * start_total);
    }
    if (improve >= 0) {
        printf("  improvement over the fractions: %.1f%% (at least %.1f%% asserted)\n",
               100 * (1 - improved_total / start_total), improve);
        ASSERT_TRUE(improved_total <= (1 - improve / 100) * start_total);
    }
    dag_free(&d);
    TEST_DONE();
}
