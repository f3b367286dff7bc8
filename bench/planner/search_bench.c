/* search_bench.c - the exact search's time per state on random DAGs of
 * LO..HI nodes (4 budgets each, from the node-with-inputs bound up to the
 * save-all peak), for comparing builds of passes/dag/dag_search.c:
 *
 *   gcc -O3 -DNDEBUG -std=c11 -Ipasses -Iir -Ibuild -Ipasses/dag -Iruntime -Ifrontend \
 *       bench/planner/search_bench.c passes/dag/dag_search.c passes/dag/dag_search_wide.c \
 *       build/libacc_passes.a build/libacc_ir.a -lglpk -lm -o /tmp/search_bench
 *   /tmp/search_bench 20 30 6
 *
 * (an older dag_search.c, from git show, builds the same way). Prints the
 * cases, the optima found, the states and the time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "dag/dag_impl.h"
static uint64_t rng = 88172645463325252ull;
static unsigned rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}
int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: search_bench LO HI GRAPHS\n");
        return 2;
    }
    int lo_n = atoi(argv[1]), hi_n = atoi(argv[2]), graphs = atoi(argv[3]);
    double total = 0;
    long states = 0;
    int found = 0, cases = 0;
    for (int g = 0; g < graphs; g++) {
        int n = lo_n + (int)(rnd() % (unsigned)(hi_n - lo_n + 1));
        double cost[64];
        int64_t mem[64];
        int src[256], dst[256], m = 0;
        for (int i = 0; i < n; i++) {
            cost[i] = 1 + rnd() % 20;
            mem[i] = 1 + rnd() % 10;
            for (int k = 0, kk = 1 + (int)(rnd() % 3); i && k < kk && m < 256; k++) {
                int back = 1 + (int)(rnd() % (rnd() % 2 ? 2u : (unsigned)i));
                int p = i - (back > i ? i : back);
                int dup = 0;
                for (int q = 0; q < m; q++) dup |= src[q] == p && dst[q] == i;
                if (!dup) src[m] = p, dst[m] = i, m++;
            }
        }
        Dag d;
        dag_from_arrays(&d, n, cost, mem, m, src, dst);
        int64_t lo = dag_min_peak(&d), hi = dag_baseline_peak(&d);
        for (int k = 0; k < 4; k++) {
            int64_t b = lo + (hi - lo) * k / 4;
            DagSearch r;
            double t0 = acc_now_s();
            dag_search_exact(&d, b, INFINITY, t0 + 20, DAG_SEARCH_STATES, &r);
            total += acc_now_s() - t0;
            states += r.states;
            found += r.status == DAG_SEARCH_FOUND;
            cases++;
            dag_search_free(&r);
        }
        dag_free(&d);
    }
    printf("%d cases, %d found, %ld states, %.3f s, %.0f ns/state\n", cases, found, states, total,
           1e9 * total / (double)states);
    return 0;
}
