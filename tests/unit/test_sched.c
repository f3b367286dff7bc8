/* test_sched.c - sched_measure against the schedule it stands for, and the
 * linear fusion pass.
 *
 * The planner scores most candidate plans with sched_measure, which replays
 * sched_build's walk without building the schedule. For the shipped models
 * at small shapes (as elaborated, and with their bias GEMMs fused into
 * linear nodes) and random plans (a fixed seed), without the optimizer
 * state and with it in f32 and in bf16, its peak, peak step, recompute steps and recompute time
 * must equal what sched_build + sched_max_live give.
 *
 * fuse_linear: which adds of a matmul become linear nodes (either operand
 * order, a [1, N] bias), which do not (transpose_a, a batched or shared
 * matmul output, a hint, a DSL or command-line glob naming the matmul, a
 * bias that is not the last dim), that the fused node keeps the add's name
 * and location, and that no node is left that only the removed matmul read.
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
/* One random plan of g (each node dropped with probability p, a third of
 * the drops decided DEC_OFFLOAD; so may offload more of them) both ways. */
static void check_plan(const Graph *g, const Autodiff *ad, SchedIndex *x, const SchedOptions *so, double p,
                       const double *time, Decision *dec) {
    for (int i = 0; i < g->nodes.n; i++)
        dec[i] = rng_unit() >= p ? DEC_SAVE : rng_unit() < 1.0 / 3 ? DEC_OFFLOAD : DEC_RECOMPUTE;
    Schedule s;
    sched_build(g, ad, dec, so, &s);
    sched_max_live(&s);
    double cost = 0, transfer = 0;
    for (int t = 0; t < s.steps.n; t++) {
        if (s.steps.v[t].kind == ST_RECOMPUTE) cost += time[s.steps.v[t].node];
        if (s.steps.v[t].kind == ST_OFFLOAD) transfer += so->transfer[s.steps.v[t].node];
    }
    SchedMeasure m;
    sched_measure(x, dec, time, &m);
    ASSERT(s.peak_live_bytes, m.peak_live_bytes);
    ASSERT(s.peak_step, m.peak_step);
    ASSERT(s.n_recompute, m.n_recompute);
    ASSERT_TRUE(cost == m.recompute_time);
    ASSERT_TRUE(transfer == m.transfer_time);
    sched_free(&s);
}

/* Random plans of one model at several drop rates. */
static void check_model(const char *path, const Define *defs, int n_defs, bool fuse) {
    Graph g;
    graph_init(&g, "test");
    if (!ASSERT(0, fe_load_file(path, defs, n_defs, &g, stdout))) return;
    FuseOptions fo = {0};
    if (fuse) fuse_linear(&g, &fo);
    Autodiff ad;
    ad_build(&g, &ad);
    int n = g.nodes.n;
    double *time = acc_xrealloc(NULL, (size_t)n * sizeof(double));
    Decision *dec = acc_xrealloc(NULL, (size_t)n * sizeof(Decision));
    for (int i = 0; i < n; i++) time[i] = 1e-6 * (1 + i % 7) + 1e-9 * i;
    static const double rates[] = {0, 0.1, 0.5, 0.9, 1};
    bool *offload = acc_xrealloc(NULL, (size_t)n * sizeof(bool));
    double *transfer = acc_xrealloc(NULL, (size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) offload[i] = i % 3 == 1, transfer[i] = 1e-7 * (1 + i % 5);
    /* one rank; data parallel on 4 ranks: ZeRO-1 (the moments' shard),
     * ZeRO-2 (the gradients live until their bucket is final) */
    DpLayout dps[3];
    for (int z = 0; z < 3; z++) dp_layout(&g, z ? 4 : 1, z, 256, &dps[z]);
    for (OptState opt = OPT_STATE_NONE; opt <= OPT_STATE_BF16; opt++)
        for (int with = 0; with < 2; with++) /* without and with a set the planner offloads */
            for (int z = 0; z < 3; z++) {
                SchedOptions so = {opt, with ? offload : NULL, transfer, z ? &dps[z] : NULL};
                SchedIndex *x = sched_index_new(&g, &ad, &so);
                for (size_t r = 0; r < sizeof rates / sizeof *rates; r++)
                    for (int k = 0; k < 20; k++) check_plan(&g, &ad, x, &so, rates[r], time, dec);
                sched_index_free(x);
            }
    for (int z = 0; z < 3; z++) dp_free(&dps[z]);
    free(time), free(dec), free(offload), free(transfer);
    ad_free(&ad);
    graph_free(&g);
}

static const char fuse_src[] = "model m;\n"
                               "input x: f32[2, 3, 4];\n"
                               "param w: f32[4, 5] = normal(0.1);\n"
                               "param wt: f32[5, 4] = normal(0.1);\n"
                               "param b: f32[5] = zeros;\n"
                               "param b1: f32[1, 5] = zeros;\n"
                               "param b2: f32[3, 5] = zeros;\n"
                               "param w4: f32[3, 4] = normal(0.1);\n"
                               "a1 = matmul(x, w) + b;\n"                     /* fused */
                               "a2 = b1 + matmul(x, wt, transpose_b=true);\n" /* fused: bias on the left, [1, 5] */
                               "a3 = matmul(x, w) + b2;\n"                    /* not: the bias is not the last dim's */
                               "m4 = matmul(x, w);\n"
                               "a4 = m4 + b;\n" /* not: m4 is read twice */
                               "a5 = matmul(x, w4, transpose_a=true);\n"
                               "@save s6 = matmul(x, w);\n"
                               "a6 = s6 + b;\n"           /* not: a hint on the matmul */
                               "a7 = matmul(x, w) + b;\n" /* not: the glob below names it */
                               "a8 = matmul(x, w) + b;\n" /* not: --save names it */
                               "save \"matmul_3\";\n"
                               "loss sum(a1 + a2 + a3 + m4 + a4 + a6 + a7 + a8) + sum(a5);\n";

static void test_fuse_linear(void) {
    Graph g;
    graph_init(&g, "test");
    if (!ASSERT(0, fe_load_source("fuse.acdsl", fuse_src, sizeof fuse_src - 1, NULL, 0, &g, stdout))) {
        graph_free(&g);
        return;
    }
    int n0 = g.nodes.n;
    const char *cli[] = {"matmul_4"};
    FuseOptions fo = {cli, 1, NULL, 0};
    ASSERT(2, fuse_linear(&g, &fo));
    ASSERT(n0 - 2, g.nodes.n);
    ASSERT_TRUE(ir_verify(&g, stdout));
    int a1 = graph_find(&g, "a1"), a2 = graph_find(&g, "a2");
    if (ASSERT_TRUE(a1 >= 0 && a2 >= 0)) {
        const Node *x = graph_node(&g, a1), *y = graph_node(&g, a2);
        ASSERT(OP_LINEAR, x->op);
        ASSERT(OP_LINEAR, y->op);
        ASSERT(false, x->attr.transpose_b);
        ASSERT(true, y->attr.transpose_b);
        ASSERT_STR("b", graph_node(&g, x->in[2])->name);
        ASSERT_STR("b1", graph_node(&g, y->in[2])->name);
        ASSERT_STR("x", graph_node(&g, x->in[0])->name);
        ASSERT(9, x->loc.line);
    }
    static const char *const kept[] = {"a3", "a4", "a6", "a7", "a8"};
    for (int k = 0; k < 5; k++) {
        int i = graph_find(&g, kept[k]);
        if (ASSERT_TRUE(i >= 0)) ASSERT(OP_ADD, graph_node(&g, i)->op);
    }
    ASSERT(-1, graph_find(&g, "matmul"));
    ASSERT(-1, graph_find(&g, "matmul_1"));
    ASSERT_TRUE(graph_find(&g, "matmul_3") >= 0);
    ASSERT_TRUE(graph_find(&g, "matmul_4") >= 0);
    /* nothing dead: every node but the loss is read */
    bool *read = calloc((size_t)g.nodes.n, sizeof *read);
    for (int i = 0; i < g.nodes.n; i++)
        for (int j = 0; j < graph_node(&g, i)->n_in; j++) read[graph_node(&g, i)->in[j]] = true;
    int unread = 0;
    for (int i = 0; i < g.nodes.n; i++) unread += !read[i] && i != g.loss;
    ASSERT(0, unread);
    free(read);
    graph_free(&g);
}

int main(void) {
    Define gpt2[] = {{"L", "3"}, {"C", "32"}, {"H", "4"}, {"T", "16"}, {"B", "2"}, {"V", "64"}};
    Define llama[] = {{"B", "2"}, {"T", "16"}, {"V", "64"},  {"C", "32"},
                      {"L", "2"}, {"H", "4"},  {"KVH", "2"}, {"F", "64"}};
    Define mlp[] = {{"B", "4"}, {"D_in", "16"}, {"hidden", "8"}, {"classes", "3"}};
    Define unet[] = {{"B", "2"}, {"N", "16"}, {"C0", "4"}, {"E", "2"}};
    for (int fuse = 0; fuse < 2; fuse++) {
        check_model("models/gpt2.acdsl", gpt2, 6, fuse);
        check_model("models/llama.acdsl", llama, 8, fuse);
        check_model("models/mlp.acdsl", mlp, 4, fuse);
        check_model("models/unet.acdsl", unet, 4, fuse);
    }
    test_fuse_linear();
    TEST_DONE();
}
