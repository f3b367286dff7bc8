/* test_shapes.c - every shape rule of ops.def on hand-built graphs: result
 * shapes, dtypes and aux tails, error messages for bad inputs, and a random
 * sweep over odd shapes and attributes that must never crash. Each op whose
 * rule gave an expected shape is marked; test_coverage then walks the op
 * table and fails for an op that has no such check. */
#include "ir.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>

#define NDIMS(...) (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define F32(...) leaf(&g, DT_F32, NDIMS(__VA_ARGS__), (const int64_t[]){__VA_ARGS__})
#define I32(...) leaf(&g, DT_I32, NDIMS(__VA_ARGS__), (const int64_t[]){__VA_ARGS__})
#define NIN(...) (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int))
#define SHAPE_TEXT(s) shape_str((s), (char[ACC_SHAPE_STR]){0})
#define BIG ((int64_t)1 << 40)

static bool verbose;
static bool shape_tested[OP_COUNT]; /* an EXPECT_OK of the op held */

/* Append an input leaf of dtype t and shape dims[0..ndim). */
static int leaf(Graph *g, DType t, int ndim, const int64_t *dims) {
    Node n;
    memset(&n, 0, sizeof n);
    n.op = OP_INPUT;
    n.dtype = t;
    n.shape.ndim = ndim;
    for (int i = 0; i < ndim && i < ACC_MAX_DIMS; i++) n.shape.dim[i] = dims[i];
    n.name = pool_printf(&g->pool, "x%d", g->nodes.n);
    return graph_add(g, &n);
}

/* Run op's shape rule on a fresh node with inputs in[0..n_in) and attributes a.
 * The node starts with junk dtype and aux so the rule must set both. */
static bool run(const Graph *g, OpKind op, const Attrs *a, int n_in, const int *in, Node *out, char *err,
                size_t err_len) {
    memset(out, 0, sizeof *out);
    out->op = op;
    for (int i = 0; i < n_in && i < ACC_MAX_IN; i++) out->in[i] = in[i];
    out->n_in = n_in;
    out->attr = *a;
    out->dtype = DT_BF16;
    out->aux_elems = -7;
    err[0] = 0;
    bool ok = op_table[op].shape(g, out, err, err_len);
    if (!ok && verbose) printf("  %s\n", err);
    return ok;
}

/* An error message is one line "op: ..." that contains want. */
static bool err_ok(OpKind op, const char *err, const char *want) {
    size_t k = strlen(op_table[op].name);
    return !strncmp(err, op_table[op].name, k) && !strncmp(err + k, ": ", 2) && !strchr(err, '\n') && strstr(err, want);
}

#define EXPECT_OK(op, a, want_shape, want_dt, want_aux, ...)                                                 \
    do {                                                                                                     \
        Node n_;                                                                                             \
        char e_[256];                                                                                        \
        if (ASSERT_TRUE(run(&g, op, a, NIN(__VA_ARGS__), (const int[]){__VA_ARGS__}, &n_, e_, sizeof e_))) { \
            ASSERT_STR(want_shape, SHAPE_TEXT(&n_.shape));                                                   \
            ASSERT(want_dt, n_.dtype);                                                                       \
            ASSERT(want_aux, n_.aux_elems);                                                                  \
            shape_tested[op] = true;                                                                         \
        } else {                                                                                             \
            printf("  error: %s\n", e_);                                                                     \
        }                                                                                                    \
    } while (0)

#define EXPECT_ERR(op, a, want, ...)                                                                     \
    do {                                                                                                 \
        Node n_;                                                                                         \
        char e_[256];                                                                                    \
        ASSERT(false, run(&g, op, a, NIN(__VA_ARGS__), (const int[]){__VA_ARGS__}, &n_, e_, sizeof e_)); \
        if (!ASSERT_TRUE(err_ok(op, e_, want))) printf("  got: \"%s\"\n", e_);                           \
    } while (0)

/* Default attributes of op k. */
static Attrs defaults(OpKind k) {
    Attrs a;
    attrs_defaults(k, &a);
    return a;
}

static void test_leaf(void) {
    Graph g;
    graph_init(&g, "t");
    Node n;
    memset(&n, 0, sizeof n);
    n.op = OP_PARAM;
    n.shape = (Shape){.ndim = 2, .dim = {3, 4}};
    ASSERT_TRUE(op_table[OP_PARAM].shape(&g, &n, NULL, 0));
    ASSERT_TRUE(op_table[OP_INPUT].shape(&g, &n, NULL, 0));
    ASSERT_STR("[3,4]", SHAPE_TEXT(&n.shape));
    shape_tested[OP_PARAM] = shape_tested[OP_INPUT] = true;
    graph_free(&g);
}

static void test_matmul(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_MATMUL), ta = a, tb = a, tab = a;
    ta.transpose_a = true;
    tb.transpose_b = true;
    tab.transpose_a = tab.transpose_b = true;
    int x = F32(4, 64, 768), w = F32(768, 2304), wt = F32(2304, 768), w2 = F32(512, 2304);
    int m = F32(3, 5), mt = F32(5, 3), k = F32(5, 7);
    int bq = F32(2, 8, 16, 32), bk = F32(2, 8, 16, 32), bk2 = F32(2, 9, 16, 32), bk3 = F32(2, 8, 32);
    int i = I32(768, 2304), s = F32(5), big = F32(BIG, 2), big2 = F32(2, BIG);
    EXPECT_OK(OP_MATMUL, &a, "[4,64,2304]", DT_F32, 0, x, w);
    EXPECT_OK(OP_MATMUL, &tb, "[4,64,2304]", DT_F32, 0, x, wt);
    EXPECT_OK(OP_MATMUL, &a, "[3,7]", DT_F32, 0, m, k);
    EXPECT_OK(OP_MATMUL, &ta, "[3,7]", DT_F32, 0, mt, k);
    EXPECT_OK(OP_MATMUL, &tab, "[3,3]", DT_F32, 0, mt, m);
    EXPECT_OK(OP_MATMUL, &tb, "[2,8,16,16]", DT_F32, 0, bq, bk); /* q @ k^T */
    EXPECT_OK(OP_MATMUL, &ta, "[2,8,32,32]", DT_F32, 0, bq, bk);
    EXPECT_ERR(OP_MATMUL, &a, "inner dimensions differ: [4,64,768] x [512,2304]", x, w2);
    EXPECT_ERR(OP_MATMUL, &tb, "inner dimensions differ: [4,64,768] x [768,2304] (transpose_b)", x, w);
    EXPECT_ERR(OP_MATMUL, &a, "inner dimensions differ", bq, bk);
    EXPECT_ERR(OP_MATMUL, &tb, "batch dimensions differ: [2,8,16,32] x [2,9,16,32]", bq, bk2);
    EXPECT_ERR(OP_MATMUL, &a, "rank 2 or a's rank 4", bq, bk3);
    EXPECT_ERR(OP_MATMUL, &a, "a must have rank >= 2: [5]", s, k);
    EXPECT_ERR(OP_MATMUL, &a, "b must be f32, got i32[768,2304]", x, i);
    EXPECT_ERR(OP_MATMUL, &a, "result too large: [1099511627776,1099511627776]", big, big2);
    EXPECT_ERR(OP_MATMUL, &a, "takes 2 inputs, got 1", x);
    graph_free(&g);
}

static void test_linear(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_LINEAR), tb = a;
    tb.transpose_b = true;
    int x = F32(4, 64, 768), w = F32(768, 2304), wt = F32(2304, 768), b = F32(2304), b1 = F32(1, 1, 2304);
    int m = F32(3, 5), k = F32(5, 7), bk = F32(7), bad = F32(2303), b2 = F32(2, 2304), bw = F32(2, 768, 2304);
    int i = I32(2304), s = F32(768), big = F32(1, 1, 1, 2304);
    EXPECT_OK(OP_LINEAR, &a, "[4,64,2304]", DT_F32, 0, x, w, b);
    EXPECT_OK(OP_LINEAR, &tb, "[4,64,2304]", DT_F32, 0, x, wt, b);
    EXPECT_OK(OP_LINEAR, &a, "[4,64,2304]", DT_F32, 0, x, w, b1);
    EXPECT_OK(OP_LINEAR, &a, "[3,7]", DT_F32, 0, m, k, bk);
    EXPECT_ERR(OP_LINEAR, &tb, "inner dimensions differ: [4,64,768] x [768,2304] (transpose_b)", x, w, b);
    EXPECT_ERR(OP_LINEAR, &a, "b must be [2304] (or with leading ones)", x, w, bad);
    EXPECT_ERR(OP_LINEAR, &a, "b must be [2304]", x, w, b2);
    EXPECT_ERR(OP_LINEAR, &a, "b must be [2304]", x, w, big);
    EXPECT_ERR(OP_LINEAR, &a, "w must have rank 2", x, bw, b);
    EXPECT_ERR(OP_LINEAR, &a, "x must have rank >= 2: [768]", s, w, b);
    EXPECT_ERR(OP_LINEAR, &a, "b must be f32, got i32[2304]", x, w, i);
    EXPECT_ERR(OP_LINEAR, &a, "takes 3 inputs, got 2", x, w);
    graph_free(&g);
}

static void test_broadcast(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_ADD);
    int x = F32(4, 64, 768), b = F32(768), c = F32(4, 1, 768), r = F32(64, 1), r2 = F32(63, 1),
        sc = leaf(&g, DT_F32, 0, NULL);
    int bad = F32(4, 64, 767), i = I32(768), col = F32(BIG, 1), row = F32(1, BIG);
    EXPECT_OK(OP_ADD, &a, "[4,64,768]", DT_F32, 0, x, b);
    EXPECT_OK(OP_SUB, &a, "[4,64,768]", DT_F32, 0, b, x);
    EXPECT_OK(OP_MUL, &a, "[4,64,768]", DT_F32, 0, c, x);
    EXPECT_OK(OP_DIV, &a, "[4,64,768]", DT_F32, 0, x, sc);
    EXPECT_OK(OP_ADD, &a, "[64,768]", DT_F32, 0, r, b);
    EXPECT_OK(OP_ADD, &a, "[]", DT_F32, 0, sc, sc);
    EXPECT_ERR(OP_ADD, &a, "shapes do not broadcast: [4,64,768] vs [4,64,767]", x, bad);
    EXPECT_ERR(OP_MUL, &a, "do not broadcast: [63,1] vs [4,64,768]", r2, x);
    EXPECT_OK(OP_MUL, &a, "[4,63,768]", DT_F32, 0, r2, c);
    EXPECT_OK(OP_MUL, &a, "[4,64,768]", DT_F32, 0, r, c);
    EXPECT_ERR(OP_SUB, &a, "inputs must be f32, got f32[4,64,768] and i32[768]", x, i);
    EXPECT_ERR(OP_DIV, &a, "result too large", col, row);
    /* every op of the table with add's rule (the binary elementwise ops) */
    for (int k = 0; k < OP_COUNT; k++) {
        if (op_table[k].shape != op_table[OP_ADD].shape) continue;
        EXPECT_OK((OpKind)k, &a, "[4,64,768]", DT_F32, 0, x, b);
        EXPECT_OK((OpKind)k, &a, "[4,63,768]", DT_F32, 0, r2, c);
        EXPECT_ERR((OpKind)k, &a, "shapes do not broadcast: [4,64,768] vs [4,64,767]", x, bad);
        EXPECT_ERR((OpKind)k, &a, "inputs must be f32, got f32[4,64,768] and i32[768]", x, i);
    }
    graph_free(&g);
}

/* where(cond, a, b): the three shapes broadcast; cond i32 or float */
static void test_where(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_WHERE);
    int x = F32(4, 64, 768), b = F32(768), m = I32(4, 1, 768), mf = F32(4, 64, 1), sc = leaf(&g, DT_F32, 0, NULL);
    int bad = F32(4, 64, 767), i = I32(768), key = I32(4, 1, 1, 64), s4 = F32(4, 2, 64, 64);
    EXPECT_OK(OP_WHERE, &a, "[4,64,768]", DT_F32, 0, m, x, b);
    EXPECT_OK(OP_WHERE, &a, "[4,64,768]", DT_F32, 0, mf, b, x);
    EXPECT_OK(OP_WHERE, &a, "[4,64,768]", DT_F32, 0, m, sc, mf);
    EXPECT_OK(OP_WHERE, &a, "[4,2,64,64]", DT_F32, 0, key, s4, sc);
    EXPECT_OK(OP_WHERE, &a, "[]", DT_F32, 0, sc, sc, sc);
    EXPECT_ERR(OP_WHERE, &a, "shapes do not broadcast: [4,1,768], [4,64,768] and [4,64,767]", m, x, bad);
    EXPECT_ERR(OP_WHERE, &a, "a and b must be f32, got f32[4,64,768] and i32[768]", m, x, i);
    EXPECT_ERR(OP_WHERE, &a, "takes 3 inputs, got 2", m, x);
    graph_free(&g);
}

static void test_same(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_GELU), sc = defaults(OP_SCALE), sh = defaults(OP_SHIFT), dp = defaults(OP_DROPOUT);
    int x = F32(2, 3, 4), s = leaf(&g, DT_F32, 0, NULL), i = I32(2, 3);
    /* every op of the table with gelu's rule and no attributes (the plain
     * unary ops and softmax) */
    for (int k = 0; k < OP_COUNT; k++) {
        if (op_table[k].shape != op_table[OP_GELU].shape || *op_table[k].attrs) continue;
        EXPECT_OK((OpKind)k, &a, "[2,3,4]", DT_F32, 0, x);
        EXPECT_ERR((OpKind)k, &a, "x must be f32, got i32[2,3]", i);
    }
    EXPECT_OK(OP_GELU, &a, "[]", DT_F32, 0, s);
    EXPECT_ERR(OP_SOFTMAX, &a, "x must have rank >= 1: []", s);
    sc.alpha = -1e300;
    EXPECT_OK(OP_SCALE, &sc, "[2,3,4]", DT_F32, 0, x);
    sc.alpha = 0;
    EXPECT_OK(OP_SCALE, &sc, "[]", DT_F32, 0, s);
    sh.beta = -2.5;
    EXPECT_OK(OP_SHIFT, &sh, "[2,3,4]", DT_F32, 0, x);
    EXPECT_OK(OP_SHIFT, &sh, "[]", DT_F32, 0, s);
    EXPECT_ERR(OP_SHIFT, &sh, "x must be f32, got i32[2,3]", i);
    /* the comparisons with a number: x's shape, f32 (0/1), of an i32 x too
     * (compared exactly); of two tensors: two i32 give f32 too, an i32 and
     * an f32 are the front end's to convert (float) */
    for (int k = OP_EQ_SCALAR; k <= OP_GE_SCALAR; k++) {
        Attrs cv = defaults((OpKind)k);
        cv.value = 0.5;
        EXPECT_OK((OpKind)k, &cv, "[2,3,4]", DT_F32, 0, x);
        EXPECT_OK((OpKind)k, &cv, "[]", DT_F32, 0, s);
        EXPECT_OK((OpKind)k, &cv, "[2,3]", DT_F32, 0, i);
    }
    int i1 = I32(1, 3);
    for (int k = OP_EQ; k <= OP_GE; k++) {
        Attrs cv = defaults((OpKind)k);
        EXPECT_OK((OpKind)k, &cv, "[2,3]", DT_F32, 0, i, i1);
        EXPECT_ERR((OpKind)k, &cv, "inputs must be i32, got i32[2,3] and f32[2,3,4]", i, x);
        EXPECT_ERR((OpKind)k, &cv, "inputs must be f32, got f32[2,3,4] and i32[2,3]", x, i);
    }
    EXPECT_ERR(OP_GELU, &a, "x must be f32, got i32[2,3]", i);
    /* float: i32 in, f32 out, any shape */
    Attrs fl = defaults(OP_FLOAT);
    EXPECT_OK(OP_FLOAT, &fl, "[2,3]", DT_F32, 0, i);
    EXPECT_ERR(OP_FLOAT, &fl, "x must be i32, got f32[2,3,4]", x);
    EXPECT_ERR(OP_FLOAT, &fl, "takes 1 input, got 2", i, i);
    dp.p = 0;
    EXPECT_OK(OP_DROPOUT, &dp, "[2,3,4]", DT_F32, 0, x);
    dp.p = 0.999;
    EXPECT_OK(OP_DROPOUT, &dp, "[2,3,4]", DT_F32, 0, x);
    dp.p = 1;
    EXPECT_ERR(OP_DROPOUT, &dp, "p must be in [0, 1), got 1", x);
    dp.p = -0.1;
    EXPECT_ERR(OP_DROPOUT, &dp, "p must be in [0, 1)", x);
    dp.p = NAN;
    EXPECT_ERR(OP_DROPOUT, &dp, "p must be in [0, 1)", x);
    EXPECT_ERR(OP_RELU, &a, "takes 1 input, got 2", x, x);
    graph_free(&g);
}

static void test_norms(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs ln = defaults(OP_LAYERNORM), rn = defaults(OP_RMSNORM);
    int x = F32(4, 64, 768), w = F32(768), b = F32(768), v = F32(8), w2 = F32(767), w3 = F32(1, 768);
    int s = leaf(&g, DT_F32, 0, NULL), wi = I32(768);
    EXPECT_OK(OP_LAYERNORM, &ln, "[4,64,768]", DT_F32, 2 * 4 * 64, x, w, b);
    EXPECT_OK(OP_LAYERNORM, &ln, "[8]", DT_F32, 2, v, v, v);
    EXPECT_OK(OP_LAYERNORM, &ln, "[4,64,768]", DT_F32, 2 * 4 * 64, x, w); /* no bias */
    EXPECT_OK(OP_RMSNORM, &rn, "[4,64,768]", DT_F32, 4 * 64, x, w);
    EXPECT_OK(OP_RMSNORM, &rn, "[8]", DT_F32, 1, v, v);
    EXPECT_ERR(OP_LAYERNORM, &ln, "b must be [768] to match x: [4,64,768] vs [767]", x, w, w2);
    EXPECT_ERR(OP_LAYERNORM, &ln, "w must be [768] to match x: [4,64,768] vs [1,768]", x, w3, b);
    EXPECT_ERR(OP_RMSNORM, &rn, "w must be [768]", x, w2);
    EXPECT_ERR(OP_RMSNORM, &rn, "x must have rank >= 1: []", s, w);
    EXPECT_ERR(OP_LAYERNORM, &ln, "w must be f32, got i32[768]", x, wi, b);
    EXPECT_ERR(OP_RMSNORM, &rn, "takes 2 inputs, got 3", x, w, b);
    EXPECT_ERR(OP_LAYERNORM, &ln, "takes 2 to 3 inputs, got 1", x);
    ln.eps = 0;
    EXPECT_ERR(OP_LAYERNORM, &ln, "eps must be > 0, got 0", x, w, b);
    rn.eps = -1;
    EXPECT_ERR(OP_RMSNORM, &rn, "eps must be > 0", x, w);
    rn.eps = INFINITY;
    EXPECT_ERR(OP_RMSNORM, &rn, "eps must be > 0", x, w);
    graph_free(&g);
}

static void test_attention(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_ATTENTION);
    ASSERT(0, a.kv_heads);
    ASSERT(true, a.causal);
    a.heads = 12;
    int q = F32(4, 64, 768), kv = F32(4, 64, 768), k2 = F32(4, 32, 768), gqa = F32(4, 64, 256);
    int kb = F32(3, 64, 768), q2 = F32(4, 64), qi = I32(4, 64, 768);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, kv, kv);
    a.kv_heads = ATTR_NONE;
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, kv, kv);
    a.kv_heads = 4; /* GQA: D = 64, k/v carry 4 heads */
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, gqa, gqa);
    a.kv_heads = 1;
    EXPECT_ERR(OP_ATTENTION, &a, "k's last dim must be kv_heads*D = 1*64", q, gqa, gqa);
    a.kv_heads = 5;
    EXPECT_ERR(OP_ATTENTION, &a, "heads=12 is not a multiple of kv_heads=5", q, kv, kv);
    a.kv_heads = -2;
    EXPECT_ERR(OP_ATTENTION, &a, "kv_heads must be >= 0", q, kv, kv);
    a.kv_heads = 0;
    EXPECT_ERR(OP_ATTENTION, &a, "causal attention needs equal query and key lengths: q [4,64,768], k [4,32,768]", q,
               k2, k2);
    a.causal = false;
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2); /* cross-attention */
    EXPECT_ERR(OP_ATTENTION, &a, "k and v shapes differ: [4,32,768] vs [4,64,768]", q, k2, kv);
    EXPECT_ERR(OP_ATTENTION, &a, "batch sizes differ", q, kb, kb);
    EXPECT_ERR(OP_ATTENTION, &a, "must have rank 3", q2, kv, kv);
    EXPECT_ERR(OP_ATTENTION, &a, "q must be f32", qi, kv, kv);
    a.heads = 7;
    EXPECT_ERR(OP_ATTENTION, &a, "q's last dim 768 is not divisible by heads=7", q, kv, kv);
    a.heads = 0;
    EXPECT_ERR(OP_ATTENTION, &a, "heads must be > 0", q, kv, kv);
    a.heads = INT64_MAX;
    EXPECT_ERR(OP_ATTENTION, &a, "not divisible by heads", q, kv, kv);
    a.heads = ATTR_NONE;
    EXPECT_ERR(OP_ATTENTION, &a, "heads must be > 0", q, kv, kv);
    /* the keyword operands: a mask (input 3), rank 2 the key padding [B,
     * Tk], ranks 1, 3, 4 broadcast to [B, heads, Tq, Tk] from the last
     * dimension; a bias broadcast so too (after the mask) */
    a.heads = 12, a.causal = false;
    ASSERT(true, a.mask == ATTR_NONE && a.bias == ATTR_NONE);
    int mi = I32(4, 32), mf = F32(4, 32), mb = F32(4, 64), m3 = I32(4, 1, 32);
    int m1 = I32(1, 32), mk = F32(32), mqk = I32(1, 64, 32), mb1 = F32(4, 1, 64, 32), mbh = I32(4, 12, 64, 32);
    int mqk2 = I32(64, 32), mbad = F32(4, 12, 32, 64), m5 = I32(1, 4, 1, 64, 32);
    int mbf = leaf(&g, DT_BF16, 2, (const int64_t[]){4, 32});
    int bh = F32(12, 64, 32), bb = F32(4, 1, 1, 32), bfull = F32(4, 12, 64, 32), bts = F32(64, 32);
    int bbad = F32(5, 64, 32), bi = I32(12, 64, 32), b5 = F32(1, 4, 12, 64, 32);
    a.mask = 3;
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, mi);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, mf);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, m1);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, mk);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, mqk);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, mb1);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, mbh);
    EXPECT_ERR(OP_ATTENTION, &a, "a rank-2 mask is the key-padding mask [B, Tk] = [4,32] (B may be 1), got [4,64]", q,
               k2, k2, mb);
    EXPECT_ERR(OP_ATTENTION, &a, "got [64,32]; write a mask over queries and keys [Tq, Tk] as [1, Tq, Tk]", q, k2, k2,
               mqk2);
    EXPECT_ERR(OP_ATTENTION, &a, "mask [4,1,32] does not broadcast to [B, heads, Tq, Tk] = [4,12,64,32]", q, k2, k2,
               m3);
    EXPECT_ERR(OP_ATTENTION, &a, "mask [4,12,32,64] does not broadcast", q, k2, k2, mbad);
    EXPECT_ERR(OP_ATTENTION, &a, "mask [1,4,1,64,32] does not broadcast", q, k2, k2, m5);
    EXPECT_ERR(OP_ATTENTION, &a, "mask must be i32 or f32, got bf16[4,32]", q, k2, k2, mbf);
    EXPECT_ERR(OP_ATTENTION, &a, "takes 4 inputs with its mask and bias, got 3", q, k2, k2);
    a.bias = 4;
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, mi, bh);
    a.mask = ATTR_NONE, a.bias = 3;
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, bb);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, bfull);
    EXPECT_OK(OP_ATTENTION, &a, "[4,64,768]", DT_F32, 4 * 12 * 64, q, k2, k2, bts);
    EXPECT_ERR(OP_ATTENTION, &a, "bias [5,64,32] does not broadcast to [B, heads, Tq, Tk] = [4,12,64,32]", q, k2, k2,
               bbad);
    EXPECT_ERR(OP_ATTENTION, &a, "bias must be f32, got i32[12,64,32]", q, k2, k2, bi);
    EXPECT_ERR(OP_ATTENTION, &a, "does not broadcast", q, k2, k2, b5);
    a.bias = 4;
    EXPECT_ERR(OP_ATTENTION, &a, "bias is not input 3", q, k2, k2, bb);
    a.bias = ATTR_NONE;
    EXPECT_ERR(OP_ATTENTION, &a, "takes 3 inputs with its mask and bias, got 4", q, k2, k2, bb);
    graph_free(&g);
}

static void test_rope(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_ROPE);
    ASSERT(10000, a.theta);
    a.heads = 12;
    int x = F32(4, 64, 768), odd = F32(4, 64, 12 * 3), r2 = F32(64, 768), xi = I32(4, 64, 768);
    EXPECT_OK(OP_ROPE, &a, "[4,64,768]", DT_F32, 0, x);
    a.heads = 384;
    EXPECT_OK(OP_ROPE, &a, "[4,64,768]", DT_F32, 0, x);
    a.heads = 768;
    EXPECT_ERR(OP_ROPE, &a, "D even, heads=768: [4,64,768]", x);
    a.heads = 12;
    EXPECT_ERR(OP_ROPE, &a, "D even", odd);
    EXPECT_ERR(OP_ROPE, &a, "x must have rank 3", r2);
    EXPECT_ERR(OP_ROPE, &a, "x must be f32", xi);
    a.heads = -1;
    EXPECT_ERR(OP_ROPE, &a, "heads must be > 0", x);
    a.heads = 12;
    a.theta = 0;
    EXPECT_ERR(OP_ROPE, &a, "theta must be > 0", x);
    graph_free(&g);
}

static void test_embedding(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_EMBEDDING);
    int idx = I32(4, 64), tab = F32(50257, 768), s = leaf(&g, DT_I32, 0, NULL), i5 = I32(1, 2, 3, 4, 5);
    int i6 = I32(1, 2, 3, 4, 5, 6), fidx = F32(4, 64), t3 = F32(2, 3, 4), big = I32(BIG, 1024), wide = F32(2, BIG);
    EXPECT_OK(OP_EMBEDDING, &a, "[4,64,768]", DT_F32, 0, idx, tab);
    EXPECT_OK(OP_EMBEDDING, &a, "[768]", DT_F32, 0, s, tab);
    EXPECT_OK(OP_EMBEDDING, &a, "[1,2,3,4,5,768]", DT_F32, 0, i5, tab);
    EXPECT_ERR(OP_EMBEDDING, &a, "idx must have rank <= 5: [1,2,3,4,5,6]", i6, tab);
    EXPECT_ERR(OP_EMBEDDING, &a, "idx must be i32, got f32[4,64]", fidx, tab);
    EXPECT_ERR(OP_EMBEDDING, &a, "table must have rank 2 [V, C]: [2,3,4]", idx, t3);
    EXPECT_ERR(OP_EMBEDDING, &a, "table must be f32", idx, idx);
    EXPECT_ERR(OP_EMBEDDING, &a, "result too large", big, tab);
    EXPECT_ERR(OP_EMBEDDING, &a, "result too large", big, wide);
    graph_free(&g);
}

static void test_xent(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_CROSS_ENTROPY);
    int l3 = F32(4, 64, 50257), t2 = I32(4, 64), l1 = F32(10), t0 = leaf(&g, DT_I32, 0, NULL), l2 = F32(256, 10);
    int t1 = I32(256), bad = I32(4, 63), tf = F32(4, 64), s = leaf(&g, DT_F32, 0, NULL);
    EXPECT_OK(OP_CROSS_ENTROPY, &a, "[]", DT_F32, 4 * 64, l3, t2);
    EXPECT_OK(OP_CROSS_ENTROPY, &a, "[]", DT_F32, 1, l1, t0);
    EXPECT_OK(OP_CROSS_ENTROPY, &a, "[]", DT_F32, 256, l2, t1);
    EXPECT_ERR(OP_CROSS_ENTROPY, &a, "targets must be logits' shape without the last dim: [4,64,50257] vs [4,63]", l3,
               bad);
    EXPECT_ERR(OP_CROSS_ENTROPY, &a, "without the last dim", l3, t1);
    EXPECT_ERR(OP_CROSS_ENTROPY, &a, "targets must be i32, got f32[4,64]", l3, tf);
    EXPECT_ERR(OP_CROSS_ENTROPY, &a, "logits must be f32", t2, t2);
    EXPECT_ERR(OP_CROSS_ENTROPY, &a, "logits must have rank >= 1: []", s, t0);
    graph_free(&g);
}

static void test_reshape(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_RESHAPE);
    int x = F32(4, 64, 768), one = F32(1, 1), i = I32(6, 4);
    a.shape = (Shape){.ndim = 4, .dim = {4, 64, 12, 64}};
    EXPECT_OK(OP_RESHAPE, &a, "[4,64,12,64]", DT_F32, 0, x);
    a.shape = (Shape){.ndim = 2, .dim = {-1, 768}};
    EXPECT_OK(OP_RESHAPE, &a, "[256,768]", DT_F32, 0, x);
    a.shape = (Shape){.ndim = 3, .dim = {4, -1, 2}};
    EXPECT_OK(OP_RESHAPE, &a, "[4,3,2]", DT_I32, 0, i);
    a.shape = (Shape){.ndim = 0};
    EXPECT_OK(OP_RESHAPE, &a, "[]", DT_F32, 0, one);
    a.shape = (Shape){.ndim = 1, .dim = {-1}};
    EXPECT_OK(OP_RESHAPE, &a, "[1]", DT_F32, 0, one);
    a.shape = (Shape){.ndim = 0};
    EXPECT_ERR(OP_RESHAPE, &a, "cannot reshape [4,64,768] (196608 elements) to []", x);
    a.shape = (Shape){.ndim = 2, .dim = {256, 769}};
    EXPECT_ERR(OP_RESHAPE, &a, "cannot reshape [4,64,768] (196608 elements) to [256,769]", x);
    a.shape = (Shape){.ndim = 2, .dim = {-1, 7}};
    EXPECT_ERR(OP_RESHAPE, &a, "cannot reshape", x);
    a.shape = (Shape){.ndim = 3, .dim = {-1, 64, -1}};
    EXPECT_ERR(OP_RESHAPE, &a, "more than one -1 in target [-1,64,-1]", x);
    a.shape = (Shape){.ndim = 2, .dim = {0, 768}};
    EXPECT_ERR(OP_RESHAPE, &a, "bad dimension 0 in target [0,768]", x);
    a.shape = (Shape){.ndim = 2, .dim = {-3, 768}};
    EXPECT_ERR(OP_RESHAPE, &a, "bad dimension -3", x);
    a.shape = (Shape){.ndim = 4, .dim = {BIG, BIG, BIG, -1}};
    EXPECT_ERR(OP_RESHAPE, &a, "target too large", x);
    a.shape = (Shape){.ndim = 2, .dim = {INT64_MAX, 1}};
    EXPECT_ERR(OP_RESHAPE, &a, "bad dimension", x);
    a.shape = (Shape){.ndim = 7};
    EXPECT_ERR(OP_RESHAPE, &a, "target rank 7 out of range", x);
    a.shape = (Shape){.ndim = -1};
    EXPECT_ERR(OP_RESHAPE, &a, "target rank -1 out of range", x);
    graph_free(&g);
}

static void test_transpose(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_TRANSPOSE);
    ASSERT(-2, a.dim0);
    ASSERT(-1, a.dim1);
    int x = F32(2, 3, 4, 5), v = F32(7), m = I32(3, 4);
    EXPECT_OK(OP_TRANSPOSE, &a, "[2,3,5,4]", DT_F32, 0, x);
    EXPECT_OK(OP_TRANSPOSE, &a, "[4,3]", DT_I32, 0, m);
    a.dim0 = 0;
    a.dim1 = 2;
    EXPECT_OK(OP_TRANSPOSE, &a, "[4,3,2,5]", DT_F32, 0, x);
    a.dim0 = -4;
    a.dim1 = 1;
    EXPECT_OK(OP_TRANSPOSE, &a, "[3,2,4,5]", DT_F32, 0, x);
    a.dim0 = a.dim1 = 3;
    EXPECT_OK(OP_TRANSPOSE, &a, "[2,3,4,5]", DT_F32, 0, x);
    a.dim0 = 4;
    EXPECT_ERR(OP_TRANSPOSE, &a, "dim0=4 out of range for rank 4: [2,3,4,5]", x);
    a.dim0 = 0;
    a.dim1 = -5;
    EXPECT_ERR(OP_TRANSPOSE, &a, "dim1=-5 out of range", x);
    a.dim1 = INT64_MIN + 1;
    EXPECT_ERR(OP_TRANSPOSE, &a, "dim1=-9223372036854775807 out of range", x);
    a = defaults(OP_TRANSPOSE);
    EXPECT_ERR(OP_TRANSPOSE, &a, "dim0=-2 out of range for rank 1: [7]", v);
    graph_free(&g);
}

static void test_slice(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_SLICE);
    int x = F32(4, 64, 2304), i = I32(10);
    a.axis = -1, a.start = 768, a.len = 768;
    EXPECT_OK(OP_SLICE, &a, "[4,64,768]", DT_F32, 0, x);
    a.axis = 1, a.start = 0, a.len = 64;
    EXPECT_OK(OP_SLICE, &a, "[4,64,2304]", DT_F32, 0, x);
    a.axis = 0, a.start = 9, a.len = 1;
    EXPECT_OK(OP_SLICE, &a, "[1]", DT_I32, 0, i);
    a.start = 9, a.len = 2;
    EXPECT_ERR(OP_SLICE, &a, "start=9 len=2 out of range for axis 0 of [10]", i);
    a.start = -1, a.len = 1;
    EXPECT_ERR(OP_SLICE, &a, "start=-1 len=1 out of range", i);
    a.start = 0, a.len = 0;
    EXPECT_ERR(OP_SLICE, &a, "len=0 out of range", i);
    a.start = 10, a.len = 1;
    EXPECT_ERR(OP_SLICE, &a, "out of range", i);
    a.start = 5, a.len = INT64_MAX;
    EXPECT_ERR(OP_SLICE, &a, "out of range", i);
    a.start = INT64_MAX, a.len = INT64_MAX;
    EXPECT_ERR(OP_SLICE, &a, "out of range", i);
    a.axis = 3, a.start = 0, a.len = 1;
    EXPECT_ERR(OP_SLICE, &a, "axis=3 out of range for rank 3: [4,64,2304]", x);
    a.axis = ATTR_NONE;
    EXPECT_ERR(OP_SLICE, &a, "axis is required", x);
    graph_free(&g);
}

static void test_concat(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_CONCAT);
    ASSERT(-1, a.axis);
    int x = F32(4, 64, 768), y = F32(4, 64, 256), z = F32(4, 32, 768), i = I32(4, 64, 768), v = F32(64, 768);
    int s = leaf(&g, DT_F32, 0, NULL), big = F32(BIG);
    EXPECT_OK(OP_CONCAT, &a, "[4,64,1024]", DT_F32, 0, x, y);
    EXPECT_OK(OP_CONCAT, &a, "[4,64,2304]", DT_F32, 0, x, x, x);
    EXPECT_OK(OP_CONCAT, &a, "[4,64,6144]", DT_F32, 0, x, x, x, x, x, x, x, x);
    a.axis = 1;
    EXPECT_OK(OP_CONCAT, &a, "[4,96,768]", DT_F32, 0, x, z);
    a.axis = -2;
    EXPECT_OK(OP_CONCAT, &a, "[4,96,768]", DT_F32, 0, z, x);
    EXPECT_ERR(OP_CONCAT, &a, "input 1 shape differs off axis 1: [4,64,768] vs [4,64,256]", x, y);
    EXPECT_ERR(OP_CONCAT, &a, "input 1 shape differs off axis 1: [4,64,768] vs [64,768]", x, v);
    EXPECT_ERR(OP_CONCAT, &a, "input 1 dtype differs: f32[4,64,768] vs i32[4,64,768]", x, i);
    a.axis = 3;
    EXPECT_ERR(OP_CONCAT, &a, "axis=3 out of range for rank 3", x, x);
    a.axis = 0;
    EXPECT_ERR(OP_CONCAT, &a, "axis=0 out of range for rank 0: []", s, s);
    EXPECT_ERR(OP_CONCAT, &a, "result too large: [2199023255552]", big, big);
    EXPECT_ERR(OP_CONCAT, &a, "takes 2 to 8 inputs, got 1", x);
    EXPECT_ERR(OP_CONCAT, &a, "takes 2 to 8 inputs, got 9", x, x, x, x, x, x, x, x, x);
    graph_free(&g);
}

static void test_reduce(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_SUM);
    ASSERT(ATTR_NONE, a.axis);
    ASSERT(false, a.keepdim);
    int x = F32(2, 3, 4), s = leaf(&g, DT_F32, 0, NULL), i = I32(2, 3);
    EXPECT_OK(OP_SUM, &a, "[]", DT_F32, 0, x);
    EXPECT_OK(OP_MEAN, &a, "[]", DT_F32, 0, s);
    a.keepdim = true;
    EXPECT_OK(OP_MEAN, &a, "[1,1,1]", DT_F32, 0, x);
    EXPECT_OK(OP_SUM, &a, "[]", DT_F32, 0, s);
    a.axis = 1;
    EXPECT_OK(OP_SUM, &a, "[2,1,4]", DT_F32, 0, x);
    a.axis = -1;
    EXPECT_OK(OP_MEAN, &a, "[2,3,1]", DT_F32, 0, x);
    a.keepdim = false;
    EXPECT_OK(OP_MEAN, &a, "[2,3]", DT_F32, 0, x);
    a.axis = 0;
    EXPECT_OK(OP_SUM, &a, "[3,4]", DT_F32, 0, x);
    EXPECT_OK(OP_MAX, &a, "[3,4]", DT_F32, 0, x);
    a.axis = -1, a.keepdim = true;
    EXPECT_OK(OP_MIN, &a, "[2,3,1]", DT_F32, 0, x);
    a.keepdim = false;
    EXPECT_ERR(OP_MAX, &a, "x must be f32, got i32[2,3]", i);
    a.axis = 0;
    a.axis = 3;
    EXPECT_ERR(OP_SUM, &a, "axis=3 out of range for rank 3: [2,3,4]", x);
    a.axis = -4;
    EXPECT_ERR(OP_MEAN, &a, "axis=-4 out of range", x);
    a.axis = 0;
    EXPECT_ERR(OP_SUM, &a, "axis=0 out of range for rank 0", s);
    EXPECT_ERR(OP_MEAN, &a, "x must be f32, got i32[2,3]", i);
    graph_free(&g);
}

/* cast: to the node's own dtype, f32 <-> bf16 only. */
static bool run_cast(const Graph *g, int x, DType to, Node *out, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    out->op = OP_CAST;
    out->n_in = 1;
    out->in[0] = x;
    out->dtype = to;
    out->aux_elems = -7;
    return op_table[OP_CAST].shape(g, out, err, err_len);
}

static void test_cast(void) {
    Graph g;
    graph_init(&g, "t");
    int f = F32(2, 3), h = leaf(&g, DT_BF16, 2, (const int64_t[]){2, 3}), i = I32(2, 3);
    Node n;
    char e[256];
    if (ASSERT_TRUE(run_cast(&g, f, DT_BF16, &n, e, sizeof e))) {
        ASSERT_STR("[2,3]", SHAPE_TEXT(&n.shape));
        ASSERT(DT_BF16, n.dtype);
        ASSERT(0, n.aux_elems);
        shape_tested[OP_CAST] = true;
    }
    if (ASSERT_TRUE(run_cast(&g, h, DT_F32, &n, e, sizeof e))) ASSERT(DT_F32, n.dtype);
    ASSERT(false, run_cast(&g, f, DT_F32, &n, e, sizeof e));
    ASSERT_TRUE(err_ok(OP_CAST, e, "cannot cast f32[2,3] to f32"));
    ASSERT(false, run_cast(&g, i, DT_BF16, &n, e, sizeof e));
    ASSERT_TRUE(err_ok(OP_CAST, e, "cannot cast i32[2,3] to bf16"));
    ASSERT(false, run_cast(&g, f, DT_F16, &n, e, sizeof e));
    graph_free(&g);
}

/* With bf16 activations (g.act_dtype, set by the precision pass) each rule
 * checks its row's precision: the a and p inputs in one float dtype, the
 * one the op computes in (the first's; the pass decides it), its output in
 * it too or f32 for an 'f' output; 'f' inputs f32. */
static void test_precision_rules(void) {
    Graph g;
    graph_init(&g, "t");
    g.act_dtype = DT_BF16;
    const int64_t d23[] = {2, 3}, d3[] = {3}, d33[] = {3, 3};
    int x = leaf(&g, DT_BF16, 2, d23), w = leaf(&g, DT_BF16, 2, d33), wf = leaf(&g, DT_F32, 2, d33);
    int nw = leaf(&g, DT_F32, 1, d3), nwh = leaf(&g, DT_BF16, 1, d3), xf = F32(2, 3), t = I32(2);
    Attrs a = defaults(OP_MATMUL);
    EXPECT_OK(OP_MATMUL, &a, "[2,3]", DT_BF16, 0, x, w);
    EXPECT_ERR(OP_MATMUL, &a, "b must be bf16, got f32[3,3]", x, wf);
    a = defaults(OP_ADD);
    EXPECT_OK(OP_ADD, &a, "[2,3]", DT_BF16, 0, x, x);
    EXPECT_ERR(OP_ADD, &a, "inputs must be bf16, got bf16[2,3] and f32[2,3]", x, xf);
    a = defaults(OP_LAYERNORM);
    EXPECT_OK(OP_LAYERNORM, &a, "[2,3]", DT_BF16, 4, x, nw, nw);
    EXPECT_ERR(OP_LAYERNORM, &a, "w must be f32, got bf16[3]", x, nwh, nw);
    a = defaults(OP_CROSS_ENTROPY);
    EXPECT_OK(OP_CROSS_ENTROPY, &a, "[]", DT_F32, 2, x, t);
    a = defaults(OP_SUM);
    EXPECT_OK(OP_SUM, &a, "[]", DT_F32, 0, x);
    a = defaults(OP_GELU);
    EXPECT_OK(OP_GELU, &a, "[2,3]", DT_F32, 0, xf); /* promoted: computes in f32 */
    EXPECT_OK(OP_GELU, &a, "[2,3]", DT_BF16, 0, x);
    a = defaults(OP_SUB);
    EXPECT_ERR(OP_SUB, &a, "inputs must be f32, got f32[2,3] and bf16[2,3]", xf, x);
    a = defaults(OP_CONCAT);
    a.axis = 0;
    EXPECT_OK(OP_CONCAT, &a, "[6,3]", DT_BF16, 0, x, x, x); /* a variadic rule's last letter covers the rest */
    a = defaults(OP_RESHAPE);
    a.shape = (Shape){.ndim = 1, .dim = {6}};
    EXPECT_OK(OP_RESHAPE, &a, "[6]", DT_BF16, 0, x);
    graph_free(&g);
}

/* Malformed inputs: bad ids, ranks, dims, dtypes, element counts. */
static void test_bad_inputs(void) {
    Graph g;
    graph_init(&g, "t");
    Attrs a = defaults(OP_RELU);
    int ok = F32(2, 3), r7 = F32(1), zero = F32(2, 0), neg = F32(-3), huge = F32(BIG * 2);
    int many = F32(1 << 20, 1 << 20, 1 << 20), dt = F32(2);
    graph_node(&g, r7)->shape.ndim = 7;
    graph_node(&g, dt)->dtype = DT_COUNT;
    EXPECT_ERR(OP_RELU, &a, "input 0 is not a node (%-1)", -1);
    EXPECT_ERR(OP_RELU, &a, "input 0 is not a node", 1000);
    EXPECT_ERR(OP_RELU, &a, "input 0 has bad rank 7", r7);
    EXPECT_ERR(OP_RELU, &a, "input 0 has a bad shape [2,0]", zero);
    EXPECT_ERR(OP_ADD, &a, "input 1 has a bad shape [-3]", ok, neg);
    EXPECT_ERR(OP_RELU, &a, "input 0 has a bad shape [2199023255552]", huge);
    EXPECT_ERR(OP_RELU, &a, "input 0 has a bad shape", many);
    EXPECT_ERR(OP_RELU, &a, "input 0 has bad dtype 4", dt);
    Node n;
    char e[8];
    ASSERT(false, run(&g, OP_RELU, &a, 1, (const int[]){r7}, &n, e, sizeof e)); /* truncated message */
    ASSERT_STR("relu: i", e);
    ASSERT(false, run(&g, OP_RELU, &a, 1, (const int[]){r7}, &n, e, 3));
    ASSERT_STR("re", e);
    memset(&n, 0, sizeof n);
    n.op = OP_RELU;
    n.n_in = 1;
    n.in[0] = r7;
    ASSERT(false, op_table[OP_RELU].shape(&g, &n, NULL, 0)); /* no room for a message */
    graph_free(&g);
}

/* A small GPT-style graph built with the rules passes ir_verify. */
static void test_verify(void) {
    Graph g;
    graph_init(&g, "tiny");
    int idx = I32(2, 8), tgt = I32(2, 8), emb = F32(100, 32), lw = F32(32), lb = F32(32), wqkv = F32(32, 96);
    struct {
        OpKind op;
        int n_in, in[3];
    } steps[] = {
        {OP_EMBEDDING, 2, {idx, emb}},    {OP_LAYERNORM, 3, {-1, lw, lb}},
        {OP_MATMUL, 2, {-1, wqkv}},       {OP_SLICE, 1, {-1}},
        {OP_ATTENTION, 3, {-1, -1, -1}},  {OP_MATMUL, 2, {-1, emb}},
        {OP_CROSS_ENTROPY, 2, {-1, tgt}},
    };
    int prev = -1;
    for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
        Node n;
        memset(&n, 0, sizeof n);
        n.op = steps[s].op;
        n.n_in = steps[s].n_in;
        for (int i = 0; i < n.n_in; i++) n.in[i] = steps[s].in[i] < 0 ? prev : steps[s].in[i];
        attrs_defaults(n.op, &n.attr);
        n.name = pool_printf(&g.pool, "n%zu", s);
        if (n.op == OP_SLICE) n.attr.axis = -1, n.attr.start = 0, n.attr.len = 32;
        if (n.op == OP_ATTENTION) n.attr.heads = 4;
        if (n.op == OP_MATMUL && s == 5) n.attr.transpose_b = true;
        char e[256];
        if (!ASSERT_TRUE(op_table[n.op].shape(&g, &n, e, sizeof e))) printf("  error: %s\n", e);
        prev = graph_add(&g, &n);
    }
    g.loss = prev;
    ASSERT_STR("[]", SHAPE_TEXT(&graph_node(&g, prev)->shape));
    ASSERT(16, graph_node(&g, prev)->aux_elems);
    ASSERT_TRUE(ir_verify(&g, stdout));
    graph_free(&g);
}

/* Random ops on random (also malformed) inputs and attributes: a rule either
 * yields a valid shape or a one-line "op: ..." error, and never crashes. */
static void test_random(void) {
    static const int64_t dims[] = {1, 2, 3, 4, 6, 8, 12, 64, 768, 1 << 20, BIG, 0, -1};
    static const int64_t ints[] = {0, 1, 2, 3, -1, -2, -7, 4, 64, ATTR_NONE, INT64_MAX, INT64_MIN + 1, 1 << 30};
    static const double reals[] = {0, 1e-5, 0.5, 1, -1, 1e308, -0.0, 10000};
    Graph g;
    graph_init(&g, "t");
    unsigned seed = 12345;
#define RND(n) ((seed = seed * 1103515245u + 12345u) >> 16) % (unsigned)(n)
    for (int i = 0; i < 400; i++) {
        int64_t d[ACC_MAX_DIMS];
        int nd = (int)RND(ACC_MAX_DIMS + 1);
        for (int k = 0; k < nd; k++) d[k] = RND(8) ? dims[RND(9)] : dims[RND(sizeof dims / sizeof *dims)];
        leaf(&g, RND(4) ? DT_F32 : DT_I32, nd, d);
    }
    int n_ok = 0, n_err = 0, n_bad = 0;
    for (int it = 0; it < 200000; it++) {
        OpKind op = (OpKind)(2 + RND(OP_COUNT - 2));
        Attrs a = defaults(op);
        if (RND(2)) a.axis = ints[RND(sizeof ints / sizeof *ints)];
        if (RND(2)) a.start = ints[RND(sizeof ints / sizeof *ints)];
        if (RND(2)) a.len = ints[RND(sizeof ints / sizeof *ints)];
        if (RND(4)) a.dim0 = ints[RND(sizeof ints / sizeof *ints)];
        if (RND(4)) a.dim1 = ints[RND(sizeof ints / sizeof *ints)];
        a.heads = RND(2) ? (int64_t)(1 + RND(12)) : ints[RND(sizeof ints / sizeof *ints)];
        if (RND(2)) a.kv_heads = ints[RND(sizeof ints / sizeof *ints)];
        a.transpose_a = RND(2), a.transpose_b = RND(2), a.causal = RND(2), a.keepdim = RND(2);
        a.eps = reals[RND(sizeof reals / sizeof *reals)];
        a.p = reals[RND(sizeof reals / sizeof *reals)];
        a.alpha = reals[RND(sizeof reals / sizeof *reals)];
        a.theta = reals[RND(sizeof reals / sizeof *reals)];
        a.shape.ndim = (int)RND(ACC_MAX_DIMS + 2);
        if (RND(16) == 0) a.shape.ndim = -1;
        for (int k = 0; k < ACC_MAX_DIMS; k++) a.shape.dim[k] = RND(3) ? dims[RND(sizeof dims / sizeof *dims)] : -1;
        int in[ACC_MAX_IN];
        int n_in = op_table[op].min_in + (int)RND(op_table[op].max_in - op_table[op].min_in + 1);
        if (RND(50) == 0) n_in = (int)RND(ACC_MAX_IN + 3);
        for (int k = 0; k < ACC_MAX_IN; k++) in[k] = RND(100) ? (int)RND(g.nodes.n) : (int)RND(3) - 1;
        /* favour inputs that fit together: reuse the first input's node */
        for (int k = 1; k < ACC_MAX_IN; k++)
            if (RND(3) == 0) in[k] = in[0];
        Node n;
        char e[96];
        if (run(&g, op, &a, n_in, in, &n, e, sizeof e)) {
            n_ok++;
            Node copy = n;
            char e2[96];
            bool ok = n.shape.ndim >= 0 && n.shape.ndim <= ACC_MAX_DIMS && n.aux_elems >= 0 &&
                      (unsigned)n.dtype < DT_COUNT && shape_elems(&n.shape) <= ACC_MAX_ELEMS;
            for (int k = 0; k < n.shape.ndim; k++) ok = ok && n.shape.dim[k] >= 1 && n.shape.dim[k] <= ACC_MAX_DIM;
            /* rerunning the rule on its own result is stable */
            ok = ok && op_table[op].shape(&g, &copy, e2, sizeof e2) && shape_eq(&copy.shape, &n.shape);
            if (!ok && n_bad++ < 5) printf("  random: bad result: %s -> %s\n", op_table[op].name, SHAPE_TEXT(&n.shape));
        } else {
            n_err++;
            size_t k = strlen(op_table[op].name);
            if ((strncmp(e, op_table[op].name, k) || strchr(e, '\n')) && n_bad++ < 5)
                printf("  random: bad error: %s\n", e);
        }
    }
#undef RND
    ASSERT(0, n_bad);
    ASSERT_TRUE(n_ok > 1000);
    ASSERT_TRUE(n_err > 1000);
    if (verbose) printf("random: %d ok, %d errors\n", n_ok, n_err);
    graph_free(&g);
}

/* Every row of the op table has a shape test above. */
static void test_coverage(void) {
    for (int k = 0; k < OP_COUNT; k++)
        if (!ASSERT_TRUE(shape_tested[k]))
            printf("  op %s has no shape test (tests/unit/test_shapes.c)\n", op_table[k].name);
}

int main(void) {
    verbose = getenv("VERBOSE") != NULL;
    test_leaf();
    test_matmul();
    test_linear();
    test_broadcast();
    test_where();
    test_same();
    test_norms();
    test_attention();
    test_rope();
    test_embedding();
    test_xent();
    test_reshape();
    test_transpose();
    test_slice();
    test_concat();
    test_reduce();
    test_cast();
    test_precision_rules();
    test_bad_inputs();
    test_verify();
    test_random();
    test_coverage();
    TEST_DONE();
}
