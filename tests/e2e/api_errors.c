/* api_errors.c - the generated API's contract on bad use: every misuse is a
 * status code with a message, never a crash. Built against a generated mlp
 * library (see api_errors.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"
#include "test.h"

int main(int argc, char **argv) {
    const char *tmp = argc > 1 ? argv[1] : "/tmp";
    char path[4096];
    /* create */
    ASSERT(ACC_ERR_NULL, mlp_create(NULL, NULL));
    acc_options bad = {sizeof bad, ACC_API_VERSION + 1, 0, 0};
    mlp_model *m = (mlp_model *)0x1;
    ASSERT(ACC_ERR_VERSION, mlp_create(&bad, &m));
    ASSERT_TRUE(m == NULL);
    acc_options opt = {sizeof opt, ACC_API_VERSION, 1, 7};
    ASSERT(ACC_OK, mlp_create(&opt, &m));
    ASSERT_TRUE(m != NULL);
    /* NULL instance everywhere */
    float loss = 0, *data = NULL;
    int64_t n = 0;
    ASSERT(ACC_ERR_NULL, mlp_step(NULL, &loss));
    ASSERT(ACC_ERR_NULL, mlp_init_params(NULL, 1));
    ASSERT(ACC_ERR_NULL, mlp_adamw(NULL, 1e-3f, 0.9f, 0.999f, 1e-8f, 0));
    ASSERT(ACC_ERR_NULL, mlp_param(NULL, "x", &data, &n));
    ASSERT_TRUE(strlen(mlp_last_error(NULL)) > 0);
    ASSERT(ACC_OK, mlp_init_params(m, 1));
    /* step before the inputs are set */
    ASSERT(ACC_ERR_STATE, mlp_step(m, &loss));
    ASSERT_TRUE(strstr(mlp_last_error(m), "never set") != NULL);
    /* inputs: wrong name, wrong size, NULL data, out-of-range class */
    const acc_model_desc *d = mlp_desc();
    float *x = calloc((size_t)d->inputs[0].elems, 4);
    int32_t *y = calloc((size_t)d->inputs[1].elems, 4);
    ASSERT(ACC_ERR_NAME, acc_set_input(m, "nope", x, 4));
    ASSERT(ACC_ERR_SIZE, acc_set_input(m, d->inputs[0].name, x, 4));
    ASSERT(ACC_ERR_NULL, acc_set_input(m, d->inputs[0].name, NULL, 4));
    ASSERT(ACC_OK, acc_set_input(m, d->inputs[0].name, x, (size_t)d->inputs[0].elems * 4));
    y[0] = 1000;
    ASSERT(ACC_ERR_DATA, acc_set_input(m, d->inputs[1].name, y, (size_t)d->inputs[1].elems * 4));
    ASSERT_TRUE(strstr(mlp_last_error(m), "outside") != NULL);
    y[0] = 0;
    ASSERT(ACC_OK, acc_set_input(m, d->inputs[1].name, y, (size_t)d->inputs[1].elems * 4));
    ASSERT(ACC_ERR_NULL, mlp_step(m, NULL));
    ASSERT(ACC_OK, mlp_step(m, &loss));
    ASSERT_TRUE(loss > 0);
    /* optimizer arguments */
    ASSERT(ACC_ERR_ARG, mlp_adamw(m, 1e-3f, 1.5f, 0.999f, 1e-8f, 0));
    ASSERT(ACC_OK, mlp_adamw(m, 1e-3f, 0.9f, 0.999f, 1e-8f, 0));
    /* parameters by name */
    ASSERT(ACC_ERR_NAME, mlp_param(m, "no.such.param", &data, &n));
    ASSERT(ACC_OK, mlp_param(m, d->params[0].name, &data, &n));
    ASSERT(d->params[0].elems, n);
    ASSERT(ACC_OK, mlp_grad(m, d->params[0].name, &data, &n));
    /* files: missing, garbage, round trip */
    ASSERT(ACC_ERR_IO, mlp_load_params(m, "/nonexistent/dir/params.bin"));
    snprintf(path, sizeof path, "%s/garbage.bin", tmp);
    FILE *f = fopen(path, "wb");
    fputs("not a parameter file", f);
    fclose(f);
    ASSERT(ACC_ERR_FORMAT, mlp_load_params(m, path));
    snprintf(path, sizeof path, "%s/params.bin", tmp);
    ASSERT(ACC_OK, mlp_save_params(m, path));
    float before;
    ASSERT(ACC_OK, mlp_param(m, d->params[0].name, &data, &n));
    before = data[0];
    data[0] = 12345.0f;
    ASSERT(ACC_OK, mlp_load_params(m, path));
    ASSERT_TRUE(data[0] == before);
    /* acc_read / acc_write: exact sizes, names, a round trip through the arena */
    {
        float got[4] = {0}, one[1] = {0};
        int64_t elems = d->params[0].elems;
        float *buf = malloc((size_t)elems * 4);
        ASSERT_TRUE(buf != NULL);
        ASSERT(ACC_ERR_NULL, acc_read(m, d->params[0].name, 0, NULL, 4));
        ASSERT(ACC_ERR_NAME, acc_read(m, "no_such_param", 0, got, sizeof got));
        ASSERT(ACC_ERR_SIZE, acc_read(m, d->params[0].name, 0, one, sizeof one));
        ASSERT(ACC_OK, acc_read(m, d->params[0].name, 0, buf, (size_t)elems * 4));
        ASSERT_TRUE(buf[0] == data[0]);
        buf[0] = 7.5f;
        ASSERT(ACC_OK, acc_write(m, d->params[0].name, buf, (size_t)elems * 4));
        ASSERT_TRUE(data[0] == 7.5f);
        ASSERT(ACC_ERR_SIZE, acc_write(m, d->params[0].name, buf, 4));
        ASSERT(ACC_OK, acc_read(m, d->params[0].name, 1, buf, (size_t)elems * 4));
        float *g = NULL;
        ASSERT(ACC_OK, mlp_grad(m, d->params[0].name, &g, NULL));
        ASSERT_TRUE(buf[0] == g[0]);
        ASSERT(ACC_OK, mlp_load_params(m, path)); /* back to the saved values */
        free(buf);
    }
    /* counters */
    acc_counters c;
    ASSERT(ACC_ERR_NULL, mlp_counters(m, NULL));
    ASSERT(ACC_OK, mlp_counters(m, &c));
    ASSERT(d->arena_bytes, c.arena_bytes);
    ASSERT(1, c.steps);
    ASSERT_STR("success", mlp_status_string(ACC_OK));
    ASSERT_STR("unknown status", mlp_status_string(-5));
    free(x);
    free(y);
    mlp_destroy(m);
    mlp_destroy(NULL);
    TEST_DONE();
}
