/* api_errors.c - the generated API's contract on bad use: every misuse is a
 * status code with a message, never a crash. Built against a generated mlp
 * library (see api_errors.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"
#include "test.h"

/* A tensor file (the parameter-file format) with one tensor's header, its
 * data (n floats of value v) and `trailing` extra bytes. */
static void write_one(const char *path, const char *name, int ndim, const int64_t *dims, int64_t n, float v,
                      int trailing) {
    FILE *f = fopen(path, "wb");
    uint32_t hdr[2] = {1, 1}, len = (uint32_t)strlen(name), nd = (uint32_t)ndim;
    fwrite("ACCPARAM", 8, 1, f);
    fwrite(hdr, sizeof hdr, 1, f);
    fwrite(&len, 4, 1, f);
    fwrite(name, 1, len, f);
    fwrite(&nd, 4, 1, f);
    fwrite(dims, 8, (size_t)ndim, f);
    for (int64_t i = 0; i < n; i++) fwrite(&v, 4, 1, f);
    for (int i = 0; i < trailing; i++) fputc(0, f);
    fclose(f);
}

/* Copy file from into to, less `cut` bytes at the end, plus `extra` zero bytes. */
static void copy_file(const char *from, const char *to, long cut, int extra) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    fseek(a, 0, SEEK_END);
    long n = ftell(a) - cut;
    fseek(a, 0, SEEK_SET);
    for (long i = 0; i < n; i++) fputc(fgetc(a), b);
    for (int i = 0; i < extra; i++) fputc(0, b);
    fclose(a);
    fclose(b);
}

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
    { /* a step before the parameters have values */
        mlp_model *m2 = NULL;
        const acc_model_desc *d2 = mlp_desc();
        float *x2 = calloc((size_t)d2->inputs[0].elems, 4), loss2 = 0;
        int32_t *y2 = calloc((size_t)d2->inputs[1].elems, 4);
        ASSERT(ACC_OK, mlp_create(&opt, &m2));
        ASSERT(ACC_OK, acc_set_input(m2, d2->inputs[0].name, x2, (size_t)d2->inputs[0].elems * 4));
        ASSERT(ACC_OK, acc_set_input(m2, d2->inputs[1].name, y2, (size_t)d2->inputs[1].elems * 4));
        ASSERT(ACC_ERR_STATE, mlp_step(m2, &loss2));
        ASSERT_TRUE(strstr(mlp_last_error(m2), "never given a value") != NULL);
        ASSERT(ACC_OK, mlp_init_params(m2, 3));
        ASSERT(ACC_OK, mlp_step(m2, &loss2));
        mlp_destroy(m2);
        free(x2);
        free(y2);
    }
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
    /* optimizer arguments, each with its own message; non-finite ones too */
    ASSERT(ACC_ERR_ARG, mlp_adamw(m, 1e-3f, 1.5f, 0.999f, 1e-8f, 0));
    ASSERT_TRUE(strstr(mlp_last_error(m), "beta1 = 1.5 must be in [0, 1)") != NULL);
    ASSERT(ACC_ERR_ARG, mlp_adamw(m, 1.0f / 0.0f, 0.9f, 0.999f, 1e-8f, 0));
    ASSERT_TRUE(strstr(mlp_last_error(m), "lr = inf is not a finite number") != NULL);
    ASSERT(ACC_ERR_ARG, mlp_adamw(m, 1e-3f, 0.9f, 0.999f, 0.0f / 0.0f, 0));
    ASSERT_TRUE(strstr(mlp_last_error(m), "eps = ") && strstr(mlp_last_error(m), "nan is not a finite number"));
    ASSERT(ACC_ERR_ARG, mlp_adamw(m, 1e-3f, 0.9f, 0.999f, 1e-8f, 1.0f / 0.0f));
    ASSERT_TRUE(strstr(mlp_last_error(m), "weight_decay = inf") != NULL);
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
    { /* a bad file changes no parameter: trailing bytes, a truncated last
         * tensor, a tensor of another model */
        char bad[4096];
        int last = d->n_params - 1;
        float *lastp = NULL;
        ASSERT(ACC_OK, mlp_param(m, d->params[last].name, &lastp, NULL));
        float first0 = data[0], last0 = lastp[0];
        data[0] = 111.0f, lastp[0] = 222.0f;
        snprintf(bad, sizeof bad, "%s/trailing.bin", tmp);
        copy_file(path, bad, 0, 3);
        ASSERT(ACC_ERR_FORMAT, mlp_load_params(m, bad));
        ASSERT_TRUE(strstr(mlp_last_error(m), "3 bytes after the last tensor") != NULL);
        ASSERT_TRUE(data[0] == 111.0f && lastp[0] == 222.0f);
        snprintf(bad, sizeof bad, "%s/truncated.bin", tmp);
        copy_file(path, bad, 4, 0);
        ASSERT(ACC_ERR_FORMAT, mlp_load_params(m, bad));
        ASSERT_TRUE(strstr(mlp_last_error(m), "is truncated") != NULL);
        ASSERT_TRUE(data[0] == 111.0f && lastp[0] == 222.0f);
        snprintf(bad, sizeof bad, "%s/other.bin", tmp);
        int64_t dims[1] = {d->params[0].elems};
        write_one(bad, d->params[0].name, 1, dims, d->params[0].elems, 5.0f, 0);
        ASSERT(ACC_ERR_FORMAT, mlp_load_params(m, bad));
        ASSERT_TRUE(data[0] == 111.0f && lastp[0] == 222.0f);
        ASSERT(ACC_OK, mlp_load_params(m, path));
        ASSERT_TRUE(data[0] == first0 && lastp[0] == last0);
    }
    { /* input files: the shape, not only the size; no allocation from a
         * header that asks for terabytes; nothing after the last tensor */
        char in[4096];
        const acc_input_desc *xi = &d->inputs[0];
        snprintf(in, sizeof in, "%s/inputs.bin", tmp);
        int64_t swapped[2] = {xi->dim[1], xi->dim[0]};
        write_one(in, xi->name, 2, swapped, xi->elems, 0.5f, 0);
        ASSERT(ACC_ERR_FORMAT, acc_load_inputs(m, in));
        ASSERT_TRUE(strstr(mlp_last_error(m), "the model's input is") != NULL);
        int64_t huge[2] = {(int64_t)1 << 20, (int64_t)1 << 20};
        write_one(in, xi->name, 2, huge, 0, 0, 0);
        ASSERT(ACC_ERR_FORMAT, acc_load_inputs(m, in));
        ASSERT_TRUE(strstr(mlp_last_error(m), "[1048576,1048576]") != NULL);
        write_one(in, "not_an_input", 2, huge, 0, 0, 0);
        ASSERT(ACC_ERR_NAME, acc_load_inputs(m, in));
        write_one(in, xi->name, xi->ndim, xi->dim, xi->elems, 0.5f, 2);
        ASSERT(ACC_ERR_FORMAT, acc_load_inputs(m, in));
        ASSERT_TRUE(strstr(mlp_last_error(m), "bytes after the last tensor") != NULL);
        write_one(in, xi->name, xi->ndim, xi->dim, xi->elems, 0.0f, 0);
        ASSERT(ACC_OK, acc_load_inputs(m, in));
    }
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
