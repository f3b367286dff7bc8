/* dag_gen.h - the random small DAGs of the graph planner's tests
 * (test_dag_sweep, test_dag_interval): four shapes, deterministic from the
 * state of rnd(). Include once per test program, after passes.h.
 */
#ifndef ACC_DAG_GEN_H
#define ACC_DAG_GEN_H

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

enum { SHAPE_LAYERED, SHAPE_SKIPS, SHAPE_BRANCHES, SHAPE_RANDOM, N_SHAPES };
static const char *shape_name[] = {"layered", "skips", "multi-branch", "random"};

typedef struct {
    int src[256], dst[256], m;
} Edges;

static void edge(Edges *e, int s, int t) {
    if (s < 0 || s >= t || e->m >= 256) return;
    for (int k = 0; k < e->m; k++)
        if (e->src[k] == s && e->dst[k] == t) return;
    e->src[e->m] = s, e->dst[e->m] = t, e->m++;
}

static void gen(Dag *d, int n, int shape) {
    double cost[64];
    int64_t mem[64];
    Edges e = {0};
    for (int i = 0; i < n; i++) {
        cost[i] = (double)(1 + rnd() % 20) * (rnd() % 4 == 0 ? 5 : 1);
        mem[i] = (int64_t)(1 + rnd() % 10);
    }
    switch (shape) {
    case SHAPE_LAYERED: { /* layers of 1..3 nodes, each reading 1..2 of the previous layer, sometimes two back */
        int start[64], n_layers = 0;
        for (int i = 0; i < n; i += 1 + (int)(rnd() % 3)) start[n_layers++] = i;
        start[n_layers] = n;
        for (int l = 1; l < n_layers; l++)
            for (int v = start[l]; v < start[l + 1]; v++) {
                int w = start[l] - start[l - 1], k = 1 + (int)(rnd() % 2);
                for (int j = 0; j < k; j++) edge(&e, start[l - 1] + (int)(rnd() % (unsigned)w), v);
                if (l >= 2 && rnd() % 3 == 0)
                    edge(&e, start[l - 2] + (int)(rnd() % (unsigned)(start[l - 1] - start[l - 2])), v);
            }
        break;
    }
    case SHAPE_SKIPS: /* a chain; the second half reads its mirror in the first half */
        for (int v = 1; v < n; v++) {
            edge(&e, v - 1, v);
            if (v > n / 2 && rnd() % 3 != 0) edge(&e, n - 1 - v, v);
            if (rnd() % 6 == 0) edge(&e, (int)(rnd() % (unsigned)v), v);
        }
        break;
    case SHAPE_BRANCHES: { /* fork, 2..3 branches of 1..3 nodes each reading the fork, a join reading every end */
        int v = 1, fork = 0;
        while (v < n) {
            int b = 2 + (int)(rnd() % 2), ends[3], n_ends = 0;
            for (int k = 0; k < b && v < n - 1; k++) {
                int len = 1 + (int)(rnd() % 3), prev = fork;
                for (int j = 0; j < len && v < n - 1; j++, v++) edge(&e, prev, v), prev = v;
                ends[n_ends++] = prev;
            }
            for (int k = 0; k < n_ends; k++) edge(&e, ends[k], v);
            if (!n_ends) edge(&e, fork, v);
            if (rnd() % 3 == 0) edge(&e, fork, v); /* a residual around the block */
            fork = v++;
        }
        break;
    }
    default: /* 1..3 earlier inputs, mostly recent */
        for (int v = 1; v < n; v++) {
            int k = 1 + (int)(rnd() % 3);
            for (int j = 0; j < k; j++) {
                unsigned span = rnd() % 2 ? 2 : (unsigned)v;
                int back = 1 + (int)(rnd() % span);
                edge(&e, v - (back > v ? v : back), v);
            }
        }
    }
    dag_from_arrays(d, n, cost, mem, e.m, e.src, e.dst);
}

#endif
