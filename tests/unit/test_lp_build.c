/* test_lp_build.c - LpBuild (passes/lp.c) against GLPK's own matrix: rows
 * given in several lp_load calls (the later ones after a solve) leave GLPK
 * with the matrix one lp_load would have, element for element and in the
 * same list order (GLPK's answers depend on that order: the planners' plans
 * rely on it); the columns' kinds and bounds; lp_node_limit and lp_mip_found
 * on a small knapsack. */
#include <glpk.h>
#include <math.h>

#include "lp.h"
#include "test.h"

#define N_COLS 6
#define N_ROWS 5

/* Row r of the test program, added to b: coefficients in a fixed scattered
 * order, one of them zero (not stored). */
static void add_row(LpBuild *b, int r) {
    int row = lp_row(b, GLP_UP, 0, 10 + r);
    for (int k = 0; k < N_COLS; k++) {
        int col = 1 + (k * 5 + r) % N_COLS;
        lp_coef(b, row, col, k == r % N_COLS ? 0 : 1 + (r * N_COLS + k) % 7);
    }
}

static void add_cols(LpBuild *b) {
    lp_col(b, NULL, true, 0, 1, -3);        /* binary */
    lp_col(b, NULL, true, 0, 4, -2);        /* general integer */
    lp_col(b, NULL, false, 0, 1, -1);       /* continuous */
    lp_col(b, NULL, false, 1, INFINITY, 1); /* unbounded above */
    lp_col(b, NULL, true, 1, 1, 0);         /* fixed */
    lp_col(b, NULL, false, 0, 2, -1);
}

/* The number of places where GLPK's row and column lists of a and b differ. */
static int matrix_diff(glp_prob *a, glp_prob *b) {
    int ia[N_COLS + N_ROWS + 1], ib[N_COLS + N_ROWS + 1], bad = 0;
    double va[N_COLS + N_ROWS + 1], vb[N_COLS + N_ROWS + 1];
    for (int i = 1; i <= N_ROWS; i++) {
        int la = glp_get_mat_row(a, i, ia, va), lb = glp_get_mat_row(b, i, ib, vb);
        bad += la != lb || glp_get_row_ub(a, i) != glp_get_row_ub(b, i);
        for (int k = 1; k <= la && la == lb; k++) bad += ia[k] != ib[k] || va[k] != vb[k];
    }
    for (int j = 1; j <= N_COLS; j++) {
        int la = glp_get_mat_col(a, j, ia, va), lb = glp_get_mat_col(b, j, ib, vb);
        bad += la != lb;
        for (int k = 1; k <= la && la == lb; k++) bad += ia[k] != ib[k] || va[k] != vb[k];
    }
    return bad;
}

static void loads(void *arg) {
    int *bad = arg;
    LpBuild one, parts;
    lp_build_init(&one, "one", false);
    lp_build_init(&parts, NULL, false);
    add_cols(&one), add_cols(&parts);
    for (int r = 0; r < N_ROWS; r++) add_row(&one, r);
    lp_load(&one);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    add_row(&parts, 0);
    lp_load(&parts);
    glp_simplex(parts.lp, &sm); /* rows added after a solve, as the flip search does */
    add_row(&parts, 1), add_row(&parts, 2);
    lp_load(&parts);
    glp_simplex(parts.lp, &sm);
    add_row(&parts, 3), add_row(&parts, 4);
    lp_load(&parts);
    lp_load(&parts); /* nothing new: nothing changes */
    bad[0] = matrix_diff(one.lp, parts.lp);
    bad[1] = glp_get_num_rows(parts.lp) != N_ROWS || glp_get_num_nz(parts.lp) != glp_get_num_nz(one.lp);
    bad[2] = one.n_int != 3 || glp_get_col_kind(one.lp, 2) != GLP_IV || glp_get_col_ub(one.lp, 2) != 4 ||
             glp_get_col_type(one.lp, 4) != GLP_LO || glp_get_col_type(one.lp, 5) != GLP_FX ||
             glp_get_col_type(one.lp, 3) != GLP_DB;
    lp_build_free(&one), lp_build_free(&parts);
}

/* max sum v x over binaries with one knapsack row, within left nodes: did it give an answer? */
static void knapsack(void *arg) {
    int *left = arg;
    LpBuild b;
    lp_build_init(&b, NULL, false);
    int row = lp_row(&b, GLP_UP, 0, 50);
    for (int k = 0; k < 12; k++) lp_coef(&b, row, lp_col(&b, NULL, true, 0, 1, -(7 + k % 5)), 9 + (k * 7) % 11);
    lp_load(&b);
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.presolve = GLP_ON;
    io.cb_func = lp_node_limit;
    io.cb_info = left;
    int rc = glp_intopt(b.lp, &io);
    *left = lp_mip_found(b.lp, rc) ? *left : -1000;
    lp_build_free(&b);
}

int main(void) {
    char err[200];
    int bad[3] = {-1, -1, -1};
    ASSERT_TRUE(lp_guarded(loads, bad, err, sizeof err));
    ASSERT(0, bad[0]);
    ASSERT(0, bad[1]);
    ASSERT(0, bad[2]);

    int left = 1000; /* enough: an answer, with nodes to spare */
    ASSERT_TRUE(lp_guarded(knapsack, &left, err, sizeof err));
    ASSERT_TRUE(left > 0);
    TEST_DONE();
}
