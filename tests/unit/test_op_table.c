/* test_op_table.c - walks the op table (ir/ops.def) and fails for an op that
 * lacks a kernel on a target, or whose facts the runtime sees differently.
 *
 * What each op must have, and how this test knows:
 *  - the runtime's view: runtime/acc_ops.h (generated from the table) gives
 *    every op the code of its row, and lists every op but the leaves with
 *    the kernel stem and fusion class of its row;
 *  - a CPU kernel: k_<stem>_fwd and k_<stem>_bwd (runtime/cpu_kernels.h),
 *    referenced below for every op of that list, so the test does not link
 *    without them;
 *  - a CUDA kernel: the device layer's g_<stem>_fwd and g_<stem>_bwd
 *    (runtime/cuda/cuda_ops.h, launching the kernels of kernels.cu),
 *    referenced the same way (acc_ops.h binds the schedule's k_<stem>_* to
 *    them, generated from the same list);
 *  - bf16 instances of all four (k_<stem>_fwd_bf16, g_<stem>_fwd_bf16, ...),
 *    which --precision bf16 schedules call;
 *  - a shape test and a finite-difference gradient test: test_shapes and
 *    test_kernels walk the table themselves (their test_coverage and
 *    test_fd_coverage), since they are the programs that ran the checks.
 */
#include <stdio.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cuda_ops.h"
#include "ir.h"
#include "test.h"

typedef void (*AnyFn)(void);

typedef struct {
    int code, ew;
    const char *stem;
    AnyFn cpu_fwd, cpu_bwd, dev_fwd, dev_bwd;
    AnyFn cpu_fwd16, cpu_bwd16, dev_fwd16, dev_bwd16; /* the bf16 instances */
} KernelOp;

static const KernelOp kernel_ops[] = {
#define KOP(code, name, ew)      \
    {ACC_OP_##code,              \
     ew,                         \
     #name,                      \
     (AnyFn)k_##name##_fwd,      \
     (AnyFn)k_##name##_bwd,      \
     (AnyFn)g_##name##_fwd,      \
     (AnyFn)g_##name##_bwd,      \
     (AnyFn)k_##name##_fwd_bf16, \
     (AnyFn)k_##name##_bwd_bf16, \
     (AnyFn)g_##name##_fwd_bf16, \
     (AnyFn)g_##name##_bwd_bf16},
    ACC_KERNEL_OPS(KOP)
#undef KOP
};
#define N_KERNEL_OPS (int)(sizeof kernel_ops / sizeof *kernel_ops)

/* The generated header and the table agree, row by row. */
static void test_codes(void) {
    ASSERT(OP_COUNT, ACC_OP_COUNT);
#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) ASSERT(OP_##e, ACC_OP_##e);
#include "ops.def"
#undef X
    int with_kernels = 0;
    for (int k = 0; k < OP_COUNT; k++) {
        const OpInfo *oi = &op_table[k];
        if (oi->flags & OPF_LEAF) continue;
        with_kernels++;
        const KernelOp *ko = NULL;
        for (int j = 0; j < N_KERNEL_OPS; j++)
            if (kernel_ops[j].code == k) ko = &kernel_ops[j];
        if (!ASSERT_TRUE(ko != NULL)) {
            printf("  op %s: not in ACC_KERNEL_OPS (rebuild: runtime/acc_ops.h is generated)\n", oi->name);
            continue;
        }
        char kernel[64];
        snprintf(kernel, sizeof kernel, "k_%s", ko->stem);
        if (!ASSERT_TRUE(oi->cpu_kernel && !strcmp(oi->cpu_kernel, kernel)))
            printf("  op %s: kernel %s in the table, %s in acc_ops.h\n", oi->name, oi->cpu_kernel, kernel);
        ASSERT(oi->flags & OPF_ELEM ? oi->max_in : 0, ko->ew);
    }
    ASSERT(with_kernels, N_KERNEL_OPS);
}

/* Every op has both kernels on both targets, in fp32 and in bf16 (the
 * references above link; --precision bf16 calls the _bf16 instances). */
static void test_kernels(void) {
    for (int j = 0; j < N_KERNEL_OPS; j++) {
        const KernelOp *ko = &kernel_ops[j];
        if (!ASSERT_TRUE(ko->cpu_fwd && ko->cpu_bwd && ko->dev_fwd && ko->dev_bwd))
            printf("  op %s: a kernel is missing\n", ko->stem);
        if (!ASSERT_TRUE(ko->cpu_fwd16 && ko->cpu_bwd16 && ko->dev_fwd16 && ko->dev_bwd16))
            printf("  op %s: a bf16 kernel is missing\n", ko->stem);
    }
}

/* Every row's precision rule is well formed: leaves have none; otherwise
 * one letter of a, p, f, i per input (at least min_in, a variadic op's last
 * covering the rest, never more than max_in), ':' and an output of a or f;
 * the cast alone is "c:c". */
static void test_precision_column(void) {
    for (int k = 0; k < OP_COUNT; k++) {
        const OpInfo *oi = &op_table[k];
        const char *r = oi->prec, *colon = strchr(r, ':');
        bool ok;
        if (oi->flags & OPF_LEAF) ok = !*r;
        else if (k == OP_CAST) ok = !strcmp(r, "c:c");
        else {
            int n = colon ? (int)(colon - r) : -1;
            ok = colon && n >= 1 && n <= oi->max_in &&
                 (n >= oi->min_in || n == oi->max_in || oi->max_in > oi->min_in) && strspn(r, "apfi") == (size_t)n &&
                 (colon[1] == 'a' || colon[1] == 'f') && !colon[2];
            for (int j = 0; ok && j < oi->max_in; j++) {
                char c = op_prec_class((OpKind)k, j);
                ok = c && strchr("apfi", c);
            }
            ok = ok && op_prec_class((OpKind)k, oi->max_in) == 0;
        }
        if (!ASSERT_TRUE(ok)) printf("  op %s: malformed precision rule \"%s\" (ir/ops.def)\n", oi->name, r);
    }
}

int main(void) {
    test_codes();
    test_kernels();
    test_precision_column();
    TEST_DONE();
}
