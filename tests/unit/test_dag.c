/* test_dag.c - planning published graphs (passes/dag/): the JSON reader on
 * good and malformed input (clear errors with byte offsets, no crash, also
 * on thousands of random mutations), the simulator against the independent
 * baseline formula, a hand-made graph whose optimum is known, acc's plans
 * against an exhaustive search on random graphs of at most 10 nodes, and the
 * exact search over every schedule (dag_search.c) on its own: optimum, proof
 * of none below an upper bound, and its bound when stopped early. The sweep
 * over random DAGs of 11-16 nodes is test_dag_sweep.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag/dag_impl.h"
#include "passes.h"
#include "test.h"

static bool parse(const char *json, Dag *d, char *err, size_t n) {
    return dag_parse_json(json, strlen(json), d, err, n);
}

/* the input must be rejected with a message containing want */
static void bad(const char *json, const char *want) {
    Dag d;
    char err[512] = "";
    bool ok = parse(json, &d, err, sizeof err);
    ASSERT(false, ok);
    if (ok) dag_free(&d);
    if (!ASSERT_TRUE(strstr(err, want) != NULL)) printf("  input: %.80s\n  error: %s\n  wanted: %s\n", json, err, want);
    ASSERT_TRUE(!strncmp(err, "byte ", 5));
}

static const char checkmate_json[] =
    "{\"directed\": true, \"multigraph\": false, \"graph\": {\"name\": \"tiny\"}, \"nodes\": ["
    "{\"name\": \"a\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10, \"id\": 0},"
    "{\"name\": \"b\", \"backward\": false, \"cost_cpu\": 7, \"cost_ram\": 10, \"id\": 1},"
    "{\"name\": \"c\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10, \"id\": 2},"
    "{\"name\": \"d\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10, \"id\": 3},"
    "{\"name\": \"e\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 2, \"id\": 4}],"
    "\"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 2}, {\"source\": 2, \"target\": 3},"
    "{\"source\": 3, \"target\": 4}, {\"source\": 1, \"target\": 4}, {\"source\": 0, \"target\": 4}]}";

static void test_json_good(void) {
    Dag d;
    char err[512];
    ASSERT_TRUE(parse(checkmate_json, &d, err, sizeof err));
    ASSERT(5, d.n);
    ASSERT(6, d.n_edges);
    ASSERT_STR("tiny", d.title);
    ASSERT_STR("ids", d.order);
    ASSERT(7, (int)d.cost[1]);
    ASSERT(2, d.mem[4]);
    ASSERT(true, d.backward[3]);
    ASSERT(3, d.in_off[5] - d.in_off[4]); /* e reads a, b, d */
    ASSERT(0, d.in[d.in_off[4]]);
    ASSERT(40, dag_baseline_peak(&d));
    dag_free(&d);
    /* the random graphs' schema: "name" ids, links "0"/"1", graph.order; node 1
     * is the sink, so the ids are not a topological order */
    const char *rnd =
        "{\"directed\": true, \"graph\": {\"name\": \"r\", \"order\": [0, 2, 3, 1]},"
        " \"nodes\": [{\"out_cost\": 5, \"duration\": 0, \"name\": 0},"
        " {\"out_cost\": 1, \"duration\": 4, \"name\": 1}, {\"out_cost\": 3, \"duration\": 2.5, \"name\": 2},"
        " {\"out_cost\": 2, \"duration\": 1, \"name\": 3}],"
        " \"edges\": [{\"0\": 0, \"1\": 2}, {\"0\": 0, \"1\": 3}, {\"0\": 2, \"1\": 1}, {\"0\": 3, \"1\": 1},"
        " {\"0\": 3, \"1\": 1}]}";
    ASSERT_TRUE(parse(rnd, &d, err, sizeof err));
    ASSERT_STR("graph.order", d.order);
    ASSERT(4, d.n);
    ASSERT(4, d.n_edges);        /* the duplicate link is one edge */
    ASSERT_STR("1", d.label[3]); /* the sink runs last */
    ASSERT(2500, (int)(1000 * d.cost[1]));
    dag_free(&d);
    /* no graph.order and ids out of order: a topological sort */
    const char *sorted = "{\"nodes\": [{\"id\": 5, \"cost_cpu\": 1, \"cost_ram\": 1}, {\"id\": 2, \"cost_cpu\": 1,"
                         " \"cost_ram\": 1}], \"links\": [{\"source\": 5, \"target\": 2}]}";
    ASSERT_TRUE(parse(sorted, &d, err, sizeof err));
    ASSERT_STR("topological sort", d.order);
    ASSERT_STR("5", d.label[0]);
    dag_free(&d);
    /* escapes, a byte order mark, whitespace everywhere */
    const char *esc = "\xef\xbb\xbf { \"graph\" : { \"name\" : \"\\u00e9\\ud83d\\ude00\\n\\\"x\\\"\" } , \"nodes\" : ["
                      " { \"id\" : \"only\" , \"cost_cpu\" : 1e0 , \"cost_ram\" : 0 } ] , \"links\" : [ ] } \n";
    ASSERT_TRUE(parse(esc, &d, err, sizeof err));
    ASSERT_STR("\xc3\xa9\xf0\x9f\x98\x80\n\"x\"", d.title);
    ASSERT_STR("file", d.order);
    dag_free(&d);
}

static void test_json_bad(void) {
    bad("", "expected a value, found the end of the input");
    bad("   ", "byte 3");
    bad("{", "expected a string key in object");
    bad("[1, 2", "unterminated array");
    bad("{\"a\" 1}", "expected ':' after object key");
    bad("{\"a\": 1,}", "expected a string key in object, found '}'");
    bad("[1 2]", "expected ',' or ']' in array, found '2'");
    bad("{} x", "unexpected 'x' after the JSON value");
    bad("nul", "invalid literal");
    bad("01", "unexpected '1'");
    bad("1.", "invalid number (digits after '.')");
    bad("-", "invalid number");
    bad("1e+", "invalid number (exponent)");
    bad("1e999", "number out of range");
    bad("\"abc", "unterminated string");
    bad("\"a\\qb\"", "invalid escape '\\q'");
    bad("\"\\u12\"", "\\u needs four hex digits");
    bad("\"\\ud800\"", "unpaired UTF-16 surrogate");
    bad("\"a\tb\"", "control character 0x09");
    bad("[1, \x01]", "found byte 0x01");
    bad("\n\n  @", "byte 4 (line 3, column 3)");
    char deep[3000];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    bad(deep, "nesting deeper than");
    /* well-formed JSON, not a graph */
    bad("[]", "expected a JSON object");
    bad("{\"links\": []}", "no \"nodes\" array");
    bad("{\"nodes\": {}, \"links\": []}", "\"nodes\" must be an array");
    bad("{\"nodes\": [], \"links\": []}", "the graph has no nodes");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}]}", "no \"links\" (or \"edges\") array");
    bad("{\"directed\": false, \"nodes\": [], \"links\": []}", "the graph is undirected");
    bad("{\"nodes\": [1], \"links\": []}", "node 0: expected an object");
    bad("{\"nodes\": [{\"cost_cpu\": 1, \"cost_ram\": 1}], \"links\": []}", "node 0: no \"id\" (or \"name\")");
    bad("{\"nodes\": [{\"id\": 0, \"cost_ram\": 1}], \"links\": []}", "node 0: missing 'cost_cpu' (or 'duration')");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1}], \"links\": []}", "node 0: missing 'cost_ram' (or 'out_cost')");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": -1, \"cost_ram\": 1}], \"links\": []}",
        "'cost_cpu' must be a non-negative number");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1.5}], \"links\": []}",
        "'cost_ram' must be a non-negative integer");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": \"8\"}], \"links\": []}", "must be a non-negative");
    bad("{\"nodes\": [{\"id\": 1.5, \"cost_cpu\": 1, \"cost_ram\": 1}], \"links\": []}",
        "its id must be an integer or a string");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1, \"backward\": 3}], \"links\": []}",
        "\"backward\" must be true, false or null");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}, {\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}],"
        " \"links\": []}",
        "node 1: duplicate id (also node 0)");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}], \"links\": [{\"source\": 0, \"target\": 7}]}",
        "link 0: no node has this id");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}], \"links\": [{\"source\": 0, \"target\": 0}]}",
        "link 0: a node cannot read its own output");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}], \"links\": [{\"source\": 0}]}",
        "link 0: needs \"source\" and \"target\"");
    bad("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}, {\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 1}],"
        " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 0}]}",
        "the graph has a cycle");
    bad("{\"graph\": {\"order\": [1, 0]}, \"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}, {\"id\": 1,"
        " \"cost_cpu\": 1, \"cost_ram\": 1}], \"links\": [{\"source\": 0, \"target\": 1}]}",
        "graph.order is not a topological order");
    bad("{\"graph\": {\"order\": [0, 0]}, \"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}, {\"id\": 1,"
        " \"cost_cpu\": 1, \"cost_ram\": 1}], \"links\": []}",
        "graph.order: this node is listed twice");
    bad("{\"graph\": {\"order\": [0]}, \"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}, {\"id\": 1,"
        " \"cost_cpu\": 1, \"cost_ram\": 1}], \"links\": []}",
        "graph.order must list each of the 2 nodes once");
    /* a file that does not exist */
    Dag d;
    char err[512];
    ASSERT(false, dag_load("/nonexistent/graph.json", &d, err, sizeof err));
    ASSERT_TRUE(strstr(err, "cannot open") != NULL);
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random byte edits of a valid file: every outcome is a graph or a message. */
static void test_json_mutations(void) {
    size_t len = strlen(checkmate_json);
    char *buf = malloc(len + 64);
    int n_ok = 0, n_err = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(buf, checkmate_json, len + 1);
        size_t n = len;
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits && n > 0; e++) {
            size_t at = rnd() % n;
            switch (rnd() % 4) {
            case 0: buf[at] = (char)(rnd() % 256); break;
            case 1: memmove(buf + at, buf + at + 1, n - at), n--; break; /* delete */
            case 2: n = at; break;                                       /* truncate */
            default: buf[at] = "{}[]\",:0-e.\\ntf"[rnd() % 15]; break;
            }
        }
        Dag d;
        char err[512] = "";
        if (dag_parse_json(buf, n, &d, err, sizeof err)) {
            n_ok++;
            /* whatever parsed is a DAG in topological order */
            bool topo = true;
            for (int v = 0; v < d.n; v++)
                for (int q = d.in_off[v]; q < d.in_off[v + 1]; q++) topo = topo && d.in[q] < v;
            ASSERT_TRUE(topo);
            dag_free(&d);
        } else {
            n_err++;
            if (!ASSERT_TRUE(!strncmp(err, "byte ", 5))) printf("  error: %s\n", err);
        }
    }
    ASSERT_TRUE(n_err > 1000);
    printf("mutations: %d parsed, %d rejected\n", n_ok, n_err);
    free(buf);
}

/* ---- planning ------------------------------------------------------------------ */

static void tiny(Dag *d) {
    char err[512];
    ASSERT_TRUE(parse(checkmate_json, d, err, sizeof err));
}

static double plan_cost(const Dag *d, DagMethod m, int64_t budget, bool *fits, char *status) {
    DagPlanOptions o = {m, budget, 20, NULL, false, 0, 0};
    DagPlan p;
    char err[256];
    ASSERT_TRUE(dag_plan(d, &o, &p, err, sizeof err));
    *fits = p.fits;
    if (status) strcpy(status, p.status);
    double c = p.sim.compute;
    /* the plan's reported peak is the simulator's */
    DagSim s;
    dag_simulate(d, p.ev, p.n_ev, &s, NULL);
    ASSERT(s.peak, p.sim.peak);
    ASSERT_TRUE(s.valid);
    dag_plan_free(&p);
    return c;
}

/* a(10) -> b(10, cost 7) -> c(10) -> d(10) -> e(2), and e also reads a and b.
 * Baseline peak 40 (a, b, c, d at d); e needs a, b, d and itself: 32. At 32,
 * drop a after b and recompute it (cost 1) for e: 11 + 1 = 12; dropping b
 * instead would cost 7. Below 32 nothing fits. */
static void test_tiny_optimum(void) {
    Dag d;
    tiny(&d);
    ASSERT(40, dag_baseline_peak(&d));
    ASSERT(32, dag_min_peak(&d));
    for (int staged = 0; staged < 2; staged++) {
        ASSERT(12, (int)dag_exhaustive(&d, 32, staged, NULL, NULL));
        ASSERT(11, (int)dag_exhaustive(&d, 40, staged, NULL, NULL));
        ASSERT(-1, (int)dag_exhaustive(&d, 31, staged, NULL, NULL));
    }
    static const DagMethod methods[] = {DAG_ACC, DAG_CHECKMATE_MILP, DAG_CHECKMATE_LP, DAG_INTERVALS};
    for (int k = 0; k < 4; k++) {
        bool fits;
        char status[32];
        double c = plan_cost(&d, methods[k], 32, &fits, status);
        ASSERT(true, fits);
        if (!ASSERT(12, (int)c)) printf("  method %d\n", k);
        if (methods[k] != DAG_CHECKMATE_LP) ASSERT_STR("optimal", status);
        c = plan_cost(&d, methods[k], 40, &fits, NULL);
        ASSERT(11, (int)c);
        ASSERT(true, fits);
    }
    bool fits;
    char status[32];
    plan_cost(&d, DAG_ACC, 31, &fits, status);
    ASSERT(false, fits);
    ASSERT_STR("infeasible", status);
    plan_cost(&d, DAG_CHECKMATE_MILP, 31, &fits, status);
    ASSERT(false, fits);
    ASSERT_STR("infeasible", status);
    plan_cost(&d, DAG_INTERVALS, 31, &fits, status);
    ASSERT(false, fits);
    ASSERT_STR("infeasible", status);
    dag_free(&d);
}

/* A random DAG: n nodes, each reading 1..3 earlier ones (mostly recent). */
static void random_dag(Dag *d, int n) {
    double cost[32];
    int64_t mem[32];
    int src[128], dst[128], m = 0;
    for (int i = 0; i < n; i++) {
        cost[i] = (double)(1 + rnd() % 20);
        mem[i] = (int64_t)(1 + rnd() % 10);
        if (i == 0) continue;
        int k = 1 + (int)(rnd() % 3);
        for (int e = 0; e < k; e++) {
            unsigned span = rnd() % 2 ? 2 : (unsigned)i; /* a recent node, or any */
            int back = 1 + (int)(rnd() % span);
            int p = i - (back > i ? i : back);
            bool dup = false;
            for (int q = 0; q < m; q++) dup = dup || (src[q] == p && dst[q] == i);
            if (!dup) src[m] = p, dst[m] = i, m++;
        }
    }
    dag_from_arrays(d, n, cost, mem, m, src, dst);
}

static void test_simulator_baseline(void) {
    for (int it = 0; it < 300; it++) {
        Dag d;
        random_dag(&d, 2 + (int)(rnd() % 30));
        int *ev = malloc((size_t)d.n * sizeof(int));
        for (int i = 0; i < d.n; i++) ev[i] = i;
        DagSim s;
        dag_simulate(&d, ev, d.n, &s, NULL);
        ASSERT(true, s.valid);
        ASSERT(dag_baseline_peak(&d), s.peak);
        ASSERT(0, s.n_recompute);
        ASSERT_TRUE(fabs(s.compute - dag_baseline_compute(&d)) < 1e-9);
        /* an input read before it was computed, or a node never run: invalid */
        if (d.n > 2 && d.in_off[d.n - 1] < d.in_off[d.n]) {
            ev[d.n - 1] = d.in[d.in_off[d.n - 1]];
            dag_simulate(&d, ev, d.n, &s, NULL);
            ASSERT(false, s.valid);
        }
        free(ev);
        dag_free(&d);
    }
}

/* The graph as node-link JSON (to reproduce a failure with acc plan). */
static void dump_json(const Dag *d, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    dag_write_json(d, "case", f);
    fclose(f);
}

/* acc's cost equals the exhaustive optimum over every schedule (first
 * executions in order, recomputations anywhere), which is never above the
 * optimum over Checkmate's plan space (recomputations between first
 * executions ascending); the heuristic alone always fits when it claims to;
 * its plans are feasible points of Checkmate's program. */
static void test_vs_exhaustive(void) {
    int n_cases = 0, n_tight = 0, n_order = 0;
    for (int it = 0; it < 60; it++) {
        Dag d;
        random_dag(&d, 6 + (int)(rnd() % 5));
        int64_t lo = dag_min_peak(&d), hi = dag_baseline_peak(&d);
        for (int k = 0; k < 3; k++) {
            int64_t budget = lo + (hi - lo) * k / 3;
            double best = dag_exhaustive(&d, budget, true, NULL, NULL),
                   any = dag_exhaustive(&d, budget, false, NULL, NULL);
            bool fits;
            char status[32];
            double c = plan_cost(&d, DAG_ACC, budget, &fits, status);
            n_cases++;
            ASSERT_TRUE(any <= best || best < 0);
            n_order += any >= 0 && (best < 0 || any < best);
            if (any < 0) {
                ASSERT(false, fits);
                ASSERT_STR("infeasible", status);
                continue;
            }
            n_tight += any > dag_baseline_compute(&d);
            ASSERT(true, fits);
            ASSERT_STR("optimal", status);
            if (!ASSERT_TRUE(fabs(c - any) < 1e-6)) {
                char path[64];
                snprintf(path, sizeof path, "/tmp/dag_case_%d_%d.json", it, k);
                dump_json(&d, path);
                printf("  case %d/%d: n=%d budget %lld: acc %g (%s), exhaustive %g, staged %g (%s)\n", it, k, d.n,
                       (long long)budget, c, status, any, best, path);
            }
            Staged h = {0};
            if (dag_heuristic(&d, budget, acc_now_s() + 5, &h)) {
                DagSim s;
                dag_simulate(&d, h.ev.v, h.ev.n, &s, NULL);
                ASSERT_TRUE(s.valid && s.peak <= budget);
                int bad_row;
                ASSERT_TRUE(dag_checkmate_accepts(&d, budget, &h, &bad_row));
            }
            staged_free(&h);
        }
        dag_free(&d);
    }
    printf("exhaustive: %d cases, %d needing recomputation, %d where an unordered stage does better\n", n_cases,
           n_tight, n_order);
    ASSERT_TRUE(n_tight > 20);
}

/* The exact search over every schedule (dag_search.c) on its own: the
 * optimum (witness checked by the simulator) equals the reference's; with the
 * optimum as the upper bound nothing cheaper exists (NONE); with no plan it
 * proves nothing fits exactly when the reference finds none; stopped early
 * (a cap of a few states) its bound never exceeds the optimum. */
static void test_search_exact(void) {
    int n_stopped = 0;
    for (int it = 0; it < 80; it++) {
        Dag d;
        random_dag(&d, 5 + (int)(rnd() % 8));
        int64_t lo = dag_min_peak(&d), hi = dag_baseline_peak(&d);
        for (int k = 0; k < 3; k++) {
            int64_t budget = lo + (hi - lo) * k / 3;
            double opt = dag_exhaustive(&d, budget, false, NULL, NULL);
            DagSearch r;
            ASSERT_TRUE(dag_search_exact(&d, budget, INFINITY, acc_now_s() + 10, 1 << 20, &r));
            if (opt < 0) {
                ASSERT(DAG_SEARCH_NONE, r.status);
            } else if (ASSERT(DAG_SEARCH_FOUND, r.status)) {
                ASSERT_TRUE(fabs(r.cost - opt) < 1e-6);
                DagSim s;
                dag_simulate(&d, r.ev, r.n_ev, &s, NULL);
                ASSERT_TRUE(s.valid && s.peak <= budget && fabs(s.compute - opt) < 1e-6);
            }
            dag_search_free(&r);
            if (opt < 0) continue;
            dag_search_exact(&d, budget, opt, acc_now_s() + 10, 1 << 20, &r);
            ASSERT(DAG_SEARCH_NONE, r.status);
            dag_search_free(&r);
            dag_search_exact(&d, budget, INFINITY, acc_now_s() + 10, 20, &r);
            if (r.status == DAG_SEARCH_STOPPED) n_stopped++, ASSERT_TRUE(r.bound <= opt + 1e-9);
            else ASSERT_TRUE(r.status == DAG_SEARCH_FOUND && fabs(r.cost - opt) < 1e-6);
            dag_search_free(&r);
        }
        dag_free(&d);
    }
    ASSERT_TRUE(n_stopped > 20);
}

/* The exact search past 64 nodes: a random graph of 8-12 nodes, padded to
 * 90 with nodes that read nothing, are read by nobody, hold nothing (memory
 * 0) and cost 1: 50 before it, one after each of its nodes, the rest after
 * it, so its nodes straddle the 64th bit of the search's sets. A padded
 * schedule less its pads is a schedule of the small graph at the same peak,
 * and the small graph's with the pads put back is a padded one, so the
 * padded optimum is the small one (dag_exhaustive) plus one per pad, and
 * nothing fits exactly when nothing fits the small graph. */
static void test_search_past_64(void) {
    for (int it = 0; it < 12; it++) {
        Dag s;
        random_dag(&s, 8 + (int)(rnd() % 5));
        int n = 90, at[16], src[128], dst[128], m = 0;
        double cost[90];
        int64_t mem[90];
        for (int i = 0; i < n; i++) cost[i] = 1, mem[i] = 0;
        for (int v = 0; v < s.n; v++) {
            at[v] = 50 + 2 * v;
            cost[at[v]] = s.cost[v], mem[at[v]] = s.mem[v];
            for (int k = s.in_off[v]; k < s.in_off[v + 1]; k++) src[m] = at[s.in[k]], dst[m] = at[v], m++;
        }
        Dag d;
        dag_from_arrays(&d, n, cost, mem, m, src, dst);
        int n_pad = n - s.n;
        int64_t lo = dag_min_peak(&s), hi = dag_baseline_peak(&s);
        for (int k = -1; k < 4; k++) {
            int64_t budget = k < 0 ? lo - 1 : lo + (hi - lo) * k / 3;
            double opt = dag_exhaustive(&s, budget, false, NULL, NULL);
            DagSearch r;
            if (!ASSERT_TRUE(dag_search_exact(&d, budget, INFINITY, acc_now_s() + 10, 1 << 20, &r))) continue;
            if (opt < 0) {
                ASSERT(DAG_SEARCH_NONE, r.status);
            } else if (ASSERT(DAG_SEARCH_FOUND, r.status)) {
                ASSERT_TRUE(fabs(r.cost - (opt + n_pad)) < 1e-6);
                DagSim sim;
                dag_simulate(&d, r.ev, r.n_ev, &sim, NULL);
                ASSERT_TRUE(sim.valid && sim.peak <= budget && fabs(sim.compute - (opt + n_pad)) < 1e-6);
            }
            dag_search_free(&r);
            /* and through the planner: proven over every schedule */
            DagPlanOptions o = {DAG_ACC, budget, 10, NULL, false, 0, 0};
            DagPlan p;
            char err[256];
            if (!ASSERT_TRUE(dag_plan(&d, &o, &p, err, sizeof err))) continue;
            ASSERT_STR(opt < 0 ? "infeasible" : "optimal", p.status);
            ASSERT_STR("all schedules", p.bound_scope);
            if (opt >= 0) ASSERT_TRUE(p.fits && fabs(p.sim.compute - (opt + n_pad)) < 1e-6);
            dag_plan_free(&p);
        }
        dag_free(&d), dag_free(&s);
    }
}

/* The forced windows' bounds (dag_window_bound, and the covering program
 * dag_window_lp) and the inputs' program (dag_inputs_lp: whole, and cut to
 * one hop at a few points by a tiny size cap) never exceed the optimum over
 * every schedule (the exhaustive reference), at budgets from the least that
 * fits to the save-all peak; and they are not vacuous: above the baseline in
 * many cases, the inputs' program at least the windows program's and above
 * it in some (what a recomputation reads costs something). */
static void test_window_bounds(void) {
    int n_cases = 0, n_above = 0, n_lp_above = 0, n_in_above = 0, n_cut_above = 0;
    for (int it = 0; it < 120; it++) {
        Dag d;
        random_dag(&d, 5 + (int)(rnd() % 9));
        int64_t lo = dag_min_peak(&d), hi = dag_baseline_peak(&d);
        while (lo < hi && dag_exhaustive(&d, lo, false, NULL, NULL) < 0) lo++;
        double base = dag_baseline_compute(&d);
        for (int k = 0; k < 5; k++) {
            int64_t budget = lo + (hi - lo) * k / 4;
            double opt = dag_exhaustive(&d, budget, false, NULL, NULL);
            if (!ASSERT_TRUE(opt >= 0)) continue;
            double w = dag_window_bound(&d, budget), lp = NAN, in = NAN, cut = NAN;
            char err[256];
            ASSERT_TRUE(dag_window_lp(&d, budget, acc_now_s() + 10, false, &lp, err, sizeof err));
            ASSERT_TRUE(dag_inputs_lp(&d, budget, 0, acc_now_s() + 10, false, &in, err, sizeof err));
            ASSERT_TRUE(dag_inputs_lp(&d, budget, 40, acc_now_s() + 10, false, &cut, err, sizeof err));
            n_cases++;
            n_above += w > base + 1e-9, n_lp_above += lp > base + 1e-9;
            n_in_above += in > lp + 1e-6, n_cut_above += cut > lp + 1e-6;
            if (!ASSERT_TRUE(w <= opt + 1e-6 && lp <= opt + 1e-6 && w >= base && lp >= base) ||
                !ASSERT_TRUE(in <= opt + 1e-6 && in >= lp - 1e-6 && cut <= opt + 1e-6 && cut >= lp - 1e-6))
                printf("  n %d budget %lld: optimum %g, windows %g, program %g, inputs %g (cut %g), baseline %g\n", d.n,
                       (long long)budget, opt, w, lp, in, cut, base);
        }
        dag_free(&d);
    }
    printf("window bounds: %d cases, above the baseline: windows %d, program %d; inputs above the program %d "
           "(cut %d)\n",
           n_cases, n_above, n_lp_above, n_in_above, n_cut_above);
    ASSERT_TRUE(n_above > 10 && n_lp_above > n_above && n_in_above > 0);
}

/* acc's MILP around an incumbent that recomputes everywhere: a chain of 800
 * nodes, stage t recomputing the whole chain before t (319,600 recomputation
 * pairs, past the 50,000 of dag_milp.c's guard). The program of its pairs
 * alone takes seconds to build whatever the deadline (10.3 s here without
 * the guard; MOCCASIN's n1000 at 0.6: 25 s past a 30 s limit); the solver
 * must return by its deadline with the incumbent as its plan. */
static void test_milp_large_incumbent(void) {
    enum { N = 800 };
    static double cost[N];
    static int64_t mem[N];
    static int src[N], dst[N];
    for (int i = 0; i < N; i++) cost[i] = 1, mem[i] = 1 + i % 3;
    for (int i = 1; i < N; i++) src[i - 1] = i - 1, dst[i - 1] = i;
    Dag d;
    dag_from_arrays(&d, N, cost, mem, N - 1, src, dst);
    Staged inc = {0};
    for (int t = 0; t < N; t++) {
        for (int i = 0; i < t; i++) staged_push(&inc, t, i);
        staged_push(&inc, t, t);
    }
    DagSim sim;
    dag_simulate(&d, inc.ev.v, inc.ev.n, &sim, NULL);
    ASSERT_TRUE(sim.valid);
    DagPlan p = {0};
    char err[256] = "";
    double t0 = acc_now_s();
    ASSERT_TRUE(dag_solve_acc_milp(&d, sim.peak, &inc, t0 + 0.5, false, NAN, &p, err, sizeof err));
    double wall = acc_now_s() - t0;
    printf("MILP around a 319,600-pair incumbent: %s, %.2f s\n", p.status, wall);
    ASSERT_TRUE(wall < 1.0);
    ASSERT_TRUE(p.ev != NULL && p.n_ev == inc.ev.n);
    ASSERT_TRUE(fabs(p.objective - sim.compute) < 1e-9);
    dag_plan_free(&p);
    staged_free(&inc);
    dag_free(&d);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--past-64")) { /* ctest test_dag_past_64 */
        test_search_past_64();
        test_window_bounds();
        TEST_DONE();
    }
    test_json_good();
    test_json_bad();
    test_json_mutations();
    test_simulator_baseline();
    test_tiny_optimum();
    test_vs_exhaustive();
    test_search_exact();
    test_milp_large_incumbent();
    TEST_DONE();
}
