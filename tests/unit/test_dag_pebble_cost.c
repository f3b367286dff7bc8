/* test_dag_pebble_cost.c - the cost-aware pebbling search (dag_pebble_cheapest)
 * against an independent reference on small random DAGs: one node x computed
 * within a budget from outputs held at the start (some pinned), at budgets
 * from under x's own event to the save-all peak.
 *
 * The reference is a forward shortest-path search written here: a state is
 * the set of outputs held (pinned ones aside: always there, off the budget);
 * a step computes a node not held whose inputs are there (the memory then:
 * the set plus its output) or drops one; it ends where x's inputs are there
 * and the set plus x fits. Dijkstra over every set (n <= 11) gives the least
 * compute, or none.
 *
 * Asserted: the cheapest search answers FOUND exactly when the reference has a
 * way and NONE otherwise (never STOPPED at these sizes), at the reference's
 * compute; its path replays (in a replay written here: every read finds a
 * copy, the peak within the budget); it never costs more than the first path
 * of the depth-first search (dag_pebble), and with the depth-first cost as
 * upper it answers NONE exactly when that cost is already the optimum. A
 * count of cases where the first path is dearer than the optimum must be
 * nonzero, so that the test would notice a search that returns the first path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag/dag_impl.h"
#include "dag_gen.h"
#include "passes.h"
#include "test.h"

#define MAXN 12

/* The least compute to run x from the held outputs (held[i]: 1 held, 2
 * pinned), or -1 when no way fits. */
static double reference(const Dag *d, int64_t budget, int x, const int *held) {
    int n = d->n, S = 1 << n;
    double *dist = malloc((size_t)S * sizeof(double));
    bool *done = calloc((size_t)S, sizeof(bool));
    uint32_t pinned = 0, start = 0;
    for (int i = 0; i < n; i++) {
        if (held[i] == 2) pinned |= 1u << i;
        if (held[i] == 1) start |= 1u << i;
    }
    for (int s = 0; s < S; s++) dist[s] = INFINITY;
    dist[start] = 0;
    double best = -1;
    for (;;) { /* dense Dijkstra: at most 4,096 sets */
        int u = -1;
        for (int s = 0; s < S; s++)
            if (!done[s] && isfinite(dist[s]) && (u < 0 || dist[s] < dist[u])) u = s;
        if (u < 0) break;
        done[u] = true;
        int64_t m = 0;
        for (int i = 0; i < n; i++)
            if (u >> i & 1) m += d->mem[i];
        bool ready = m + d->mem[x] <= budget;
        for (int q = d->in_off[x]; q < d->in_off[x + 1]; q++) ready = ready && ((u | pinned) >> d->in[q] & 1);
        if (ready && !(u >> x & 1)) {
            best = dist[u];
            break;
        }
        for (int f = 0; f < n; f++) {
            if (u >> f & 1) { /* drop f */
                int v = u & ~(1 << f);
                if (dist[u] < dist[v]) dist[v] = dist[u];
                continue;
            }
            if (pinned >> f & 1 || f == x || m + d->mem[f] > budget) continue;
            bool ok = true;
            for (int q = d->in_off[f]; q < d->in_off[f + 1]; q++) ok = ok && ((u | pinned) >> d->in[q] & 1);
            int v = u | 1 << f;
            if (ok && dist[u] + d->cost[f] < dist[v]) dist[v] = dist[u] + d->cost[f];
        }
    }
    free(dist), free(done);
    return best;
}

/* Replays seq then x from held: every read finds a copy (held at the start or
 * computed before: the latest), each copy held from its computation to its
 * last read (a start copy: from the start), pinned ones off the budget. The
 * peak, or -1 when a read finds nothing or a pinned node is computed. */
static int64_t replay(const Dag *d, const int *held, int x, const int *seq, int n_seq) {
    int n = d->n, n_ev = n_seq + 1;
    int *ev = malloc((size_t)n_ev * sizeof(int)), *latest = malloc((size_t)n * sizeof(int));
    int *until = malloc((size_t)(n_ev + n) * sizeof(int)); /* copies: the events, then the start's [n_ev + i] */
    memcpy(ev, seq, (size_t)n_seq * sizeof(int));
    ev[n_seq] = x;
    bool ok = true;
    for (int i = 0; i < n; i++) latest[i] = held[i] ? n_ev + i : -1, until[n_ev + i] = -1;
    for (int e = 0; e < n_ev; e++) {
        for (int q = d->in_off[ev[e]]; q < d->in_off[ev[e] + 1]; q++) {
            int c = latest[d->in[q]];
            if (c < 0) ok = false;
            else until[c] = e;
        }
        ok = ok && held[ev[e]] != 2;
        until[e] = e, latest[ev[e]] = e;
    }
    int64_t peak = 0;
    for (int e = 0; e < n_ev && ok; e++) {
        int64_t m = 0;
        for (int c = 0; c <= e; c++)
            if (until[c] >= e) m += d->mem[ev[c]];
        for (int i = 0; i < n; i++)
            if (held[i] == 1 && until[n_ev + i] >= e) m += d->mem[i];
        if (m > peak) peak = m;
    }
    free(ev), free(latest), free(until);
    return ok ? peak : -1;
}

int main(void) {
    int cases = 0, found = 0, dearer = 0, upper_checked = 0;
    double sum_first = 0, sum_best = 0;
    for (int g = 0; g < 160; g++) {
        Dag d;
        int n = 8 + g % 4; /* 2,048 sets at most: the dense reference stays fast */
        gen(&d, n, g % N_SHAPES);
        int64_t peak = dag_baseline_peak(&d);
        for (int b = 0; b < 4; b++) {
            int64_t budget = peak * (3 + b) / 8 + b;
            for (int x = 1; x < n; x++) {
                int held[MAXN] = {0};
                if (g % 3) /* some earlier outputs held, a few pinned */
                    for (int i = 0; i < x; i++) held[i] = rnd() % 4 == 0 ? 1 + (rnd() % 3 == 0) : 0;
                int64_t pinned = 0;
                for (int i = 0; i < n; i++)
                    if (held[i] == 2) pinned += d.mem[i];
                if (pinned >= budget) continue;
                int64_t left = budget - pinned;
                double ref = reference(&d, left, x, held);
                int *seq = NULL, n_seq = 0, *seq1 = NULL, n_seq1 = 0;
                double c = 0, c1 = 0;
                int st = dag_pebble_cheapest(&d, left, x, held, INFINITY, 1 << 13, acc_now_s() + 10, &seq, &n_seq, &c);
                int st1 = dag_pebble(&d, left, x, held, 1 << 13, acc_now_s() + 10, 0, &seq1, &n_seq1, &c1);
                cases++;
                ASSERT(ref >= 0 ? DAG_PEBBLE_FOUND : DAG_PEBBLE_NONE, st);
                ASSERT(st, st1);
                if (st == DAG_PEBBLE_FOUND && st1 == DAG_PEBBLE_FOUND) {
                    found++;
                    EXPECT(fabs(c - ref) < 1e-9, "graph %d (%s) x %d budget %lld: cheapest %g, reference %g", g,
                           shape_name[g % N_SHAPES], x, (long long)left, c, ref);
                    EXPECT(c <= c1 + 1e-9, "graph %d x %d: cheapest %g dearer than the first path %g", g, x, c, c1);
                    int64_t pk = replay(&d, held, x, seq, n_seq);
                    EXPECT(pk >= 0 && pk <= left, "graph %d x %d: the path replays at %lld, budget %lld", g, x,
                           (long long)pk, (long long)left);
                    double sc = 0;
                    for (int e = 0; e < n_seq; e++) sc += d.cost[seq[e]];
                    ASSERT_TRUE(fabs(sc - c) < 1e-9);
                    dearer += c1 > c + 1e-9;
                    sum_first += c1, sum_best += c;
                    /* with the first path's cost as upper: a cheaper one exactly when there is one */
                    int *s2 = NULL, n2 = 0;
                    double c2 = 0;
                    int st2 = dag_pebble_cheapest(&d, left, x, held, c1, 1 << 13, acc_now_s() + 10, &s2, &n2, &c2);
                    ASSERT(c1 > c + 1e-9 ? DAG_PEBBLE_FOUND : DAG_PEBBLE_NONE, st2);
                    if (st2 == DAG_PEBBLE_FOUND) ASSERT_TRUE(fabs(c2 - c) < 1e-9);
                    upper_checked++;
                    free(s2);
                }
                free(seq), free(seq1);
            }
        }
        dag_free(&d);
    }
    printf("%d cases, %d with a way; the first path dearer than the optimum in %d (recomputation %.0f -> %.0f); "
           "%d checked with an upper\n",
           cases, found, dearer, sum_first, sum_best, upper_checked);
    ASSERT_TRUE(found > cases / 4);
    ASSERT_TRUE(dearer > 0);
    TEST_DONE();
}
