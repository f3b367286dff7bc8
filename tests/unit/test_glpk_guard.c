/* test_glpk_guard.c - lp_guarded turns GLPK's abort() into an error: a
 * misuse of GLPK's API comes back as false with GLPK's message, GLPK works
 * again afterwards, and an error inside a nested run ends the outer run. */
#include <glpk.h>

#include "lp.h"
#include "test.h"

/* glp_add_cols(lp, 0): GLPK prints "invalid number of columns" and aborts. */
static void zero_columns(void *arg) {
    int *reached = arg;
    glp_prob *lp = glp_create_prob();
    glp_add_cols(lp, 0);
    *reached = 1; /* not reached */
    glp_delete_prob(lp);
}

/* min x subject to x >= 2: the value in *arg. */
static void tiny_lp(void *arg) {
    double *value = arg;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, 1, GLP_LO, 2, 0);
    glp_set_obj_coef(lp, 1, 1);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    *value = glp_simplex(lp, &sm) == 0 ? glp_get_obj_val(lp) : -1;
    glp_delete_prob(lp);
}

static void nested(void *arg) {
    int *inner_returned = arg;
    char err[200];
    int reached = 0;
    lp_guarded(zero_columns, &reached, err, sizeof err);
    *inner_returned = 1; /* not reached: the error ends the outer run */
}

int main(void) {
    char err[200] = "";
    int reached = 0;
    ASSERT_TRUE(!lp_guarded(zero_columns, &reached, err, sizeof err));
    ASSERT(0, reached);
    ASSERT_TRUE(strstr(err, "glp_add_cols") != NULL);
    ASSERT_TRUE(strstr(err, "GLPK failed") == err);

    double value = 0;
    ASSERT_TRUE(lp_guarded(tiny_lp, &value, err, sizeof err));
    ASSERT(2, (int)value);

    int inner_returned = 0;
    ASSERT_TRUE(!lp_guarded(nested, &inner_returned, err, sizeof err));
    ASSERT(0, inner_returned);
    ASSERT_TRUE(strstr(err, "glp_add_cols") != NULL);

    value = 0; /* and GLPK once more, after the failures */
    ASSERT_TRUE(lp_guarded(tiny_lp, &value, err, sizeof err));
    ASSERT(2, (int)value);
    TEST_DONE();
}
