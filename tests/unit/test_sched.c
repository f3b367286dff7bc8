/* test_sched.c - sched_measure against the schedule it stands for.
 *
 * The planner scores most candidate plans with sched_measure, which replays
 * sched_build's walk without building the schedule. For the shipped models
 * at small shapes and random plans (a fixed seed), with and without the
 * optimizer state, its peak, peak step, recompute steps and recompute time
 * must equal what sched_build + sched_max_live give.
 */
#include "frontend.h"
#include "passes.h"
#include "test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

/* xorshift64*: a fixed sequence, so a failure reproduces */
static double rng_unit(void) {
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717u) >> 11) / 9007199254740992.0;
}

/* One random plan of g (each node dropped with probability p) both ways. */
static void check_plan(const Graph *g, const Autodiff *ad, SchedIndex *x, bool optimizer, double p,
                       const double *time, Decision *dec) {
    for (int i = 0; i < g->nodes.n; i++) dec[i] = rng_unit() < p ? DEC_RECOMPUTE : DEC_SAVE;
    Schedule s;
    sched_build(g, ad, dec, optimizer, &s);
    sched_max_live(&s);
    double cost = 0;
    for (int t = 0; t < s.steps.n; t++)
        if (s.steps.v[t].kind == ST_RECOMPUTE) cost += time[s.steps.v[t].node];
    SchedMeasure m;
    sched_measure(x, dec, time, &m);
    ASSERT(s.peak_live_bytes, m.peak_live_bytes);
    ASSERT(s.peak_step, m.peak_step);
    ASSERT(s.n_recompute, m.n_recompute);
    ASSERT_TRUE(cost == m.recompute_time);
    sched_free(&s);
}

/* Random plans of one model at several drop rates. */
static void check_model(const char *path, const Define *defs, int n_defs) {
    Graph g;
    graph_init(&g, "test");
    if (!ASSERT(0, fe_load_file(path, defs, n_defs, &g, stdout))) return;
    Autodiff ad;
    ad_build(&g, &ad);
    int n = g.nodes.n;
    double *time = acc_xrealloc(NULL, (size_t)n * sizeof(double));
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    for (int i = 0; i < n; i++) time[i] = 1e-6 * (1 + i % 7) + 1e-9 * i;
    static const double rates[] = {0, 0.1, 0.5, 0.9, 1};
    for (int opt = 0; opt < 2; opt++) {
        SchedIndex *x = sched_index_new(&g, &ad, opt);
        for (size_t r = 0; r < sizeof rates / sizeof *rates; r++)
            for (int k = 0; k < 20; k++) check_plan(&g, &ad, x, opt, rates[r], time, dec);
        sched_index_free(x);
    }
    free(time), free(dec);
    ad_free(&ad);
    graph_free(&g);
}

int main(void) {
    Define gpt2[] = {{"L", "3"}, {"C", "32"}, {"H", "4"}, {"T", "16"}, {"B", "2"}, {"V", "64"}};
    Define llama[] = {{"B", "2"}, {"T", "16"}, {"V", "64"}, {"C", "32"}, {"L", "2"}, {"H", "4"}, {"KVH", "2"}, {"F", "64"}};
    Define mlp[] = {{"B", "4"}, {"D_in", "16"}, {"hidden", "8"}, {"classes", "3"}};
    Define unet[] = {{"B", "2"}, {"N", "16"}, {"C0", "4"}, {"E", "2"}};
    check_model("models/gpt2.acdsl", gpt2, 6);
    check_model("models/llama.acdsl", llama, 8);
    check_model("models/mlp.acdsl", mlp, 4);
    check_model("models/unet.acdsl", unet, 4);
    TEST_DONE();
}
