/* gen_ops.c - writes runtime/acc_ops.h from the op table (ir/ops.def).
 *
 * The runtime includes no compiler header, yet its kernels and the code acc
 * generates must agree with the compiler on what each op is called. This
 * build tool prints that agreement from the one list: the op codes (equal to
 * OpKind), the ops that have kernels with their fusion class, and the names
 * of their kernels on the device targets, so that no second list of ops is
 * kept by hand in the runtime. Run by the build (see
 * CMakeLists.txt) whenever ops.def changes; usage: gen_ops OUT.h
 */
#include <stdio.h>
#include <string.h>

#include "ir.h"

typedef struct {
    const char *enum_name, *kernel, *attrs;
    int min_in, max_in, flags, grad_reads;
} Row;

static const Row rows[] = {
#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) \
    {#e, kernel, attrs, mn, mx, flags, grad},
#include "ops.def"
#undef X
};

/* "gelu" of the kernel "k_gelu" */
static const char *stem_of(const Row *r) { return r->kernel && !strncmp(r->kernel, "k_", 2) ? r->kernel + 2 : "?"; }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_ops OUT.h\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int n = (int)(sizeof rows / sizeof *rows);
    fprintf(f, "/* acc_ops.h - the op codes shared by the runtime and the code acc generates.\n"
               " *\n"
               " * GENERATED from ir/ops.def by tools/gen_ops.c when the project is built: do\n"
               " * not edit, edit the op table. The codes equal the compiler's OpKind. NVRTC\n"
               " * gets this file as a header of kernels.cu, so it holds only C that CUDA C++\n"
               " * accepts too.\n"
               " */\n"
               "/* clang-format off */\n"
               "#ifndef ACC_OPS_H\n#define ACC_OPS_H\n\n");
    fprintf(f, "enum {\n");
    for (int i = 0; i < n; i++) fprintf(f, "    ACC_OP_%s = %d,\n", rows[i].enum_name, i);
    fprintf(f, "    ACC_OP_COUNT = %d\n};\n\n", n);
    fprintf(f, "/* The ops with kernels (every op but the leaves), in table order:\n"
               " * X(CODE, name, ew): name the kernels' stem (k_<name>_fwd, g_<name>_fwd);\n"
               " * ew 1 or 2: the op may join an elementwise chain (k_ew_chain), with that\n"
               " * many inputs; 0: it may not. */\n");
    fprintf(f, "#define ACC_KERNEL_OPS(X)");
    for (int i = 0; i < n; i++) {
        if (rows[i].flags & OPF_LEAF) continue;
        fprintf(f, " \\\n    X(%s, %s, %d)", rows[i].enum_name, stem_of(&rows[i]),
                rows[i].flags & OPF_ELEM ? rows[i].max_in : 0);
    }
    fprintf(f, "\n\n/* The plain unary elementwise ops (one input, no attributes), whose\n"
               " * kernels all have one form: X(CODE, name, saved), saved the buffer the\n"
               " * backward reads (x or out). k_<name>_fwd(out, x, n): out = f(x);\n"
               " * k_<name>_bwd(dx, dout, saved, n): dx += dout * f'(x). */\n"
               "#define ACC_EW_UNARY_OPS(X)");
    for (int i = 0; i < n; i++)
        if ((rows[i].flags & OPF_ELEM) && rows[i].max_in == 1 && !*rows[i].attrs)
            fprintf(f, " \\\n    X(%s, %s, %s)", rows[i].enum_name, stem_of(&rows[i]),
                    rows[i].grad_reads & GR_OUT ? "out" : "x");
    fprintf(f, "\n\n/* The binary elementwise ops (two inputs, numpy broadcasting, no\n"
               " * attributes): X(CODE, name, reads), reads 1 if the backward reads the\n"
               " * operands. k_<name>_fwd(out, a, b, ndim, shapes); k_<name>_bwd(da, db,\n"
               " * dout, a, b, ndim, shapes), without a, b where reads is 0. */\n"
               "#define ACC_EW_BINARY_OPS(X)");
    for (int i = 0; i < n; i++)
        if ((rows[i].flags & OPF_ELEM) && rows[i].max_in == 2 && !*rows[i].attrs)
            fprintf(f, " \\\n    X(%s, %s, %d)", rows[i].enum_name, stem_of(&rows[i]), rows[i].grad_reads != 0);
    fprintf(f, "\n\n/* The comparisons of two tensors (OPF_NOGRAD binary rows): X(CODE,\n"
               " * name). Of i32 operands: k_cmp_i32_fwd(op, out, a, b, ndim, shapes). */\n"
               "#define ACC_EW_CMP_OPS(X)");
    for (int i = 0; i < n; i++)
        if ((rows[i].flags & OPF_NOGRAD) && rows[i].max_in == 2)
            fprintf(f, " \\\n    X(%s, %s)", rows[i].enum_name, stem_of(&rows[i]));
    fprintf(f, "\n\n/* The comparisons of a tensor with a number (one input, the attribute\n"
               " * value): X(CODE, name, BINARY), BINARY the code of the comparison of two\n"
               " * tensors whose math (EW_<BINARY>(x, value), ew_ops.h) they share.\n"
               " * k_<name>_fwd(out, x, value, n): out = x OP value, 0 or 1; no gradient. */\n"
               "#define ACC_EW_CMP_SCALAR_OPS(X)");
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].attrs, "value:f!")) {
            size_t len = strlen(rows[i].enum_name) - strlen("_SCALAR");
            fprintf(f, " \\\n    X(%s, %s, %.*s)", rows[i].enum_name, stem_of(&rows[i]), (int)len, rows[i].enum_name);
        }
    fprintf(f, "\n\n#endif\n\n"
               "/* On a device target (cuda_schedule.h defines ACC_SCHEDULE_ON_DEVICE) the\n"
               " * host schedule's k_<stem>_fwd / _bwd of every op are the device layer's\n"
               " * g_<stem>_fwd / _bwd (cuda_ops.h) on the instance's device D, and the\n"
               " * bf16 instances k_<stem>_fwd_bf16 g_<stem>_fwd_bf16. Outside\n"
               " * the guard above: acc_ops.h may have been included before. */\n"
               "#if defined(ACC_SCHEDULE_ON_DEVICE) && !defined(ACC_OPS_ON_DEVICE_H)\n"
               "#define ACC_OPS_ON_DEVICE_H\n");
    for (int i = 0; i < n; i++) {
        if (rows[i].flags & OPF_LEAF) continue;
        const char *stem = stem_of(&rows[i]);
        for (int k = 0; k < 4; k++) /* fwd, bwd, and their bf16 instances */
            fprintf(f, "#define k_%s_%s%s(...) g_%s_%s%s(D, __VA_ARGS__)\n", stem, k & 1 ? "bwd" : "fwd",
                    k & 2 ? "_bf16" : "", stem, k & 1 ? "bwd" : "fwd", k & 2 ? "_bf16" : "");
    }
    fprintf(f, "#endif\n");
    return fclose(f) ? 1 : 0;
}
