/* test_emu_bf16_ops.c - the device layer's bf16 entry points (all but the
 * GEMMs' and attention's) on the emulator, against the CPU's bf16 kernels
 * (cpu_kernels_t.h's k_*_bf16) on the same bf16 inputs.
 *
 * Bit for bit where the device's float arithmetic is the CPU's, element for
 * element in the same order: the helpers (zero, fill), scale and the plain
 * unary ops, the binary ops' forward and their same-shape backward,
 * dropout, where (fp32 too), the elementwise chains (rounded after every op), RoPE, the
 * copies (reshape, transpose, slice, concat: 2-byte elements moved as they
 * are, a signalling NaN included), the backward of sum and mean, the
 * embedding's forward and backward. Within a tolerance where the device
 * sums in another order than the CPU (a block's tree or a column reduction
 * against a sequential or double sum): the broadcast reductions of the
 * binary ops' backward, the norms, softmax, cross-entropy and the forward
 * of sum and mean. Their float results are within the fp32 emulator tests'
 * tolerance of the CPU's (rtol 1e-4, atol 1e-5, test_emu.c), and a bf16
 * store of two such floats may round to neighbours: a bf16 output is
 * allowed one bf16 ulp of the CPU's value plus that tolerance; float
 * outputs (statistics, weight gradients, the loss, sums) that tolerance.
 * Gradients accumulate into nonzero values; sizes are odd; NaNs pass
 * through stores.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cuda_ops.h"
#include "device.h"
#include "test.h"


extern const acc_device acc_device_cuda_emu;

/* ---- the emulated device and its memory ------------------------------------- */

#define ARENA_BYTES (64ll << 20)

static acc_dev *dev;
static unsigned char *arena;
static size_t arena_used;

static void dev_open(long long ws_bytes) {
    acc_model_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.workspace_offset = ARENA_BYTES;
    desc.workspace_bytes = ws_bytes;
    desc.arena_bytes = desc.workspace_offset + ws_bytes;
    int64_t extra = 0;
    dev = NULL;
    arena = NULL;
    arena_used = 0;
    EXPECT(acc_device_cuda_emu.open(&desc, &dev, &arena, &extra) == ACC_OK, "emulated device did not open");
}

static void dev_close(void) {
    EXPECT(dev->status == ACC_OK, "device error: %s", dev_error(dev));
    acc_device_cuda_emu.close(dev);
    dev = NULL;
}

/* bytes of device memory (the emulator's arena is host memory), 64-aligned */
static void *dalloc(size_t bytes) {
    void *p = arena + arena_used;
    arena_used += (bytes + 63) / 64 * 64;
    if (arena_used > (size_t)ARENA_BYTES) {
        printf("test arena too small\n");
        exit(2);
    }
    return p;
}

/* a device copy of n bf16 (or float) host values */
static acc_bf16 *dcopy16(const acc_bf16 *x, int64_t n) {
    acc_bf16 *p = dalloc((size_t)n * sizeof *p);
    memcpy(p, x, (size_t)n * sizeof *p);
    return p;
}
static float *dcopy32(const float *x, int64_t n) {
    float *p = dalloc((size_t)n * sizeof *p);
    memcpy(p, x, (size_t)n * sizeof *p);
    return p;
}

static void *hmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        printf("out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- inputs ----------------------------------------------------------------- */

static float urand(unsigned *seed) {
    *seed = *seed * 1664525u + 1013904223u;
    return (float)((*seed >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* n bf16 values uniform in [-scale/2, scale/2), rounded */
static acc_bf16 *rand16(int64_t n, unsigned seed, float scale) {
    acc_bf16 *x = hmalloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = acc_f32_bf16(scale * urand(&seed));
    return x;
}
static float *rand32(int64_t n, unsigned seed, float scale) {
    float *x = hmalloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = scale * urand(&seed);
    return x;
}
static acc_bf16 *dup16(const acc_bf16 *x, int64_t n) {
    acc_bf16 *y = hmalloc((size_t)n * sizeof *y);
    memcpy(y, x, (size_t)n * sizeof *y);
    return y;
}

#define BF16_QNAN ((acc_bf16)0x7fc1)
#define BF16_SNAN ((acc_bf16)0xff81) /* a signalling NaN: copies keep its bits */

/* ---- comparisons ------------------------------------------------------------ */

static void expect_bits16(const char *what, const acc_bf16 *want, const acc_bf16 *got, int64_t n) {
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (want[i] != got[i]) bad = i;
    EXPECT(bad < 0, "%s: not bit-identical to the CPU's: element %lld is 0x%04x (%g), the CPU's 0x%04x (%g)", what,
           (long long)bad, bad < 0 ? 0 : got[bad], bad < 0 ? 0.0 : (double)acc_bf16_f32(got[bad]),
           bad < 0 ? 0 : want[bad], bad < 0 ? 0.0 : (double)acc_bf16_f32(want[bad]));
}

static void expect_bits32(const char *what, const float *want, const float *got, int64_t n) {
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (memcmp(&want[i], &got[i], sizeof *got)) bad = i;
    EXPECT(bad < 0, "%s: not bit-identical to the CPU's: element %lld is %.9g, the CPU's %.9g", what, (long long)bad,
           bad < 0 ? 0.0 : (double)got[bad], bad < 0 ? 0.0 : (double)want[bad]);
}

#define RTOL 1e-4
#define ATOL 1e-5

/* the worst ratios to the tolerance over every check within tolerance, and
 * the bf16 outputs of those that differ from the CPU's at all */
static double worst16, worst32;
static int64_t near16_elems, near16_diff;

/* one bf16 ulp at w: the spacing of bf16 values around |w| (8 bits of mantissa) */
static double ulp16(double w) {
    int e;
    if (w == 0.0 || !isfinite(w)) return 0.0;
    frexp(w, &e); /* |w| = m 2^e, m in [0.5, 1) */
    return ldexp(1.0, e - 8);
}

/* |got - want| <= ulp16(want) + ATOL + RTOL |want| for every element (both
 * NaN, or the same infinity, also pass); the worst ratio is printed */
static void expect_near16(const char *what, const acc_bf16 *want, const acc_bf16 *got, int64_t n) {
    double worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < n; i++) {
        double w = acc_bf16_f32(want[i]), g = acc_bf16_f32(got[i]);
        if ((w != w && g != g) || (isinf(w) && w == g)) continue;
        double r = fabs(g - w) / (ulp16(w) + ATOL + RTOL * fabs(w));
        if (r != r || r > worst) worst = r != r ? INFINITY : r, at = i;
        near16_diff += want[i] != got[i];
    }
    near16_elems += n;
    if (worst > worst16) worst16 = worst;
    EXPECT(worst <= 1.0, "%s: element %lld is %g, the CPU's %g (%.3g of the tolerance: 1 bf16 ulp + fp32's)", what,
           (long long)at, at < 0 ? 0.0 : (double)acc_bf16_f32(got[at]), at < 0 ? 0.0 : (double)acc_bf16_f32(want[at]),
           worst);
}

static void expect_near32(const char *what, const float *want, const float *got, int64_t n) {
    double worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < n; i++) {
        double w = want[i], g = got[i];
        if ((w != w && g != g) || (isinf(w) && w == g)) continue;
        double r = fabs(g - w) / (ATOL + RTOL * fabs(w));
        if (r != r || r > worst) worst = r != r ? INFINITY : r, at = i;
    }
    if (worst > worst32) worst32 = worst;
    EXPECT(worst <= 1.0, "%s: element %lld is %.9g, the CPU's %.9g (%.3g of the tolerance)", what, (long long)at,
           at < 0 ? 0.0 : (double)got[at], at < 0 ? 0.0 : (double)want[at], worst);
}

/* ---- helpers, scale and the unary ops -------------------------------------------- */

static void test_fill(void) {
    dev_open(1 << 20);
    const int64_t n = 1001;
    acc_bf16 *h = rand16(n, 1u, 1.0f), *g = dcopy16(h, n);
    k_fill_bf16(h, 1.2345f, n);
    g_fill_bf16(dev, g, 1.2345f, n);
    expect_bits16("fill_bf16", h, g, n);
    k_fill_bf16(h, NAN, n);
    g_fill_bf16(dev, g, NAN, n);
    expect_bits16("fill_bf16 NaN", h, g, n);
    k_zero_bf16(h, n);
    g_zero_bf16(dev, g, n);
    expect_bits16("zero_bf16", h, g, n);
    free(h);
    dev_close();
}

/* the precision pass's casts (one device kernel, ck_convert): bit for bit,
 * at an odd length and one element past a 16-byte boundary too */
static void test_casts(void) {
    dev_open(1 << 20);
    const int64_t n = 1003;
    float *x = rand32(n, 11u, 6.0f), *f0 = rand32(n, 12u, 1.0f);
    acc_bf16 *hx = rand16(n, 13u, 6.0f), *h0 = rand16(n, 14u, 1.0f);
    x[3] = NAN, x[4] = INFINITY, x[5] = 3.0e38f; /* NaN kept, overflow to infinity */
    for (int off = 0; off < 2; off++) {
        int64_t m = n - off;
        acc_bf16 *h = dup16(h0, n), *g = dcopy16(h0, n);
        float *hf = hmalloc(n * sizeof *hf), *gf = dcopy32(f0, n);
        memcpy(hf, f0, n * sizeof *hf);
        k_cast_fwd_bf16(h + off, x + off, m);
        g_cast_fwd_bf16(dev, g + off, dcopy32(x, n) + off, m);
        expect_bits16("cast_fwd_bf16", h, g, n);
        k_cast_bwd_bf16(hf + off, hx + off, m);
        g_cast_bwd_bf16(dev, gf + off, dcopy16(hx, n) + off, m);
        expect_bits32("cast_bwd_bf16", hf, gf, n);
        k_uncast_fwd_bf16(hf + off, hx + off, m);
        g_uncast_fwd_bf16(dev, gf + off, dcopy16(hx, n) + off, m);
        expect_bits32("uncast_fwd_bf16", hf, gf, n);
        k_uncast_bwd_bf16(h + off, x + off, m);
        g_uncast_bwd_bf16(dev, g + off, dcopy32(x, n) + off, m);
        expect_bits16("uncast_bwd_bf16", h, g, n);
        free(h), free(hf);
    }
    /* float(x) of an i32 x: f32 in both instances, exact (2^24 and its
     * negative too), at an odd length and one past a 16-byte boundary */
    int32_t xi[1003];
    for (int64_t i = 0; i < n; i++) xi[i] = (int32_t)(i * 2654435761u % 100003u) - 50000;
    xi[1] = 16777216, xi[2] = -16777216;
    for (int off = 0; off < 2; off++) {
        float *hf = hmalloc(n * sizeof *hf), *gf = dcopy32(f0, n);
        memcpy(hf, f0, n * sizeof *hf);
        const int32_t *gxi = (const int32_t *)dcopy32((const float *)xi, n);
        k_float_fwd_bf16(hf + off, xi + off, n - off);
        g_float_fwd_bf16(dev, gf + off, gxi + off, n - off);
        expect_bits32("float_fwd", hf, gf, n);
        g_float_fwd(dev, gf + off, gxi + off, n - off);
        expect_bits32("float_fwd (f32 instance)", hf, gf, n);
        /* the comparisons of i32 operands: ck_binary_fwd's int32 path (x
         * against itself reversed, broadcast [n] by [1]) and ck_unary_fwd's */
        const int64_t so[1] = {n - off}, s1[1] = {1};
        k_cmp_i32_fwd(ACC_OP_LT, hf + off, xi + off, xi + n - 1, 1, so, so, s1);
        g_cmp_i32_fwd(dev, ACC_OP_LT, gf + off, gxi + off, gxi + n - 1, 1, so, so, s1);
        expect_bits32("cmp_i32_fwd", hf, gf, n);
        k_cmp_scalar_i32_fwd(ACC_OP_NE_SCALAR, hf + off, xi + off, 16777216.0f, n - off);
        g_cmp_scalar_i32_fwd(dev, ACC_OP_NE_SCALAR, gf + off, gxi + off, 16777216.0f, n - off);
        expect_bits32("cmp_scalar_i32_fwd", hf, gf, n);
        acc_bf16 *hb = dup16(h0, n), *gb = dcopy16(h0, n);
        k_cmp_i32_fwd_bf16(ACC_OP_GE, hb + off, xi + off, xi + 3, 1, so, so, s1);
        g_cmp_i32_fwd_bf16(dev, ACC_OP_GE, gb + off, gxi + off, gxi + 3, 1, so, so, s1);
        expect_bits16("cmp_i32_fwd_bf16", hb, gb, n);
        k_cmp_scalar_i32_fwd_bf16(ACC_OP_LE_SCALAR, hb + off, xi + off, -7.5f, n - off);
        g_cmp_scalar_i32_fwd_bf16(dev, ACC_OP_LE_SCALAR, gb + off, gxi + off, -7.5f, n - off);
        expect_bits16("cmp_scalar_i32_fwd_bf16", hb, gb, n);
        free(hf), free(hb);
    }
    free(x), free(f0), free(hx), free(h0);
    dev_close();
}

typedef struct {
    const char *name;
    void (*kf)(acc_bf16 *, const acc_bf16 *, int64_t);
    void (*kb)(acc_bf16 *, const acc_bf16 *, const acc_bf16 *, int64_t);
    void (*gf)(acc_dev *, acc_bf16 *, const acc_bf16 *, int64_t);
    void (*gb)(acc_dev *, acc_bf16 *, const acc_bf16 *, const acc_bf16 *, int64_t);
} UnOp;
static const UnOp un_ops[] = {
#define UN_OP(code, name, saved) \
    {#name, k_##name##_fwd_bf16, k_##name##_bwd_bf16, g_##name##_fwd_bf16, g_##name##_bwd_bf16},
    ACC_EW_UNARY_OPS(UN_OP)
#undef UN_OP
};

static void test_unary(void) {
    dev_open(1 << 20);
    const int64_t n = 1003;
    acc_bf16 *x = rand16(n, 2u, 8.0f), *dout = rand16(n, 3u, 2.0f), *dx0 = rand16(n, 4u, 1.0f);
    x[5] = BF16_QNAN, x[6] = acc_f32_bf16(INFINITY), x[7] = acc_f32_bf16(-INFINITY), x[8] = 0;
    acc_bf16 *gx = dcopy16(x, n), *gdout = dcopy16(dout, n);
    acc_bf16 *hout = dup16(x, n), *gout = dcopy16(x, n);
    /* gelu's tanh is the CPU's own approximation (k_tanhf), the device's
     * tanhf: the floats differ in their last bits (in fp32 too) and a bf16
     * result may round to the neighbour; at infinities they differ (NaN or
     * not), so gelu takes finite inputs and the tolerance */
    acc_bf16 *xf = dup16(x, n);
    xf[6] = acc_f32_bf16(5.0f), xf[7] = acc_f32_bf16(-5.0f);
    acc_bf16 *gxf = dcopy16(xf, n);
    char what[64];
    for (size_t k = 0; k < sizeof un_ops / sizeof *un_ops; k++) {
        const UnOp *u = &un_ops[k];
        int exact = strcmp(u->name, "gelu") != 0;
        u->kf(hout, exact ? x : xf, n);
        u->gf(dev, gout, exact ? gx : gxf, n);
        snprintf(what, sizeof what, "%s_fwd_bf16", u->name);
        if (exact) expect_bits16(what, hout, gout, n);
        else expect_near16(what, hout, gout, n);
        /* the saved buffer: x, or out if the op's row says so (any bf16 tensor here) */
        acc_bf16 *hdx = dup16(dx0, n), *gdx = dcopy16(dx0, n);
        u->kb(hdx, dout, exact ? hout : xf, n);
        u->gb(dev, gdx, gdout, exact ? gout : gxf, n);
        snprintf(what, sizeof what, "%s_bwd_bf16", u->name);
        if (exact) expect_bits16(what, hdx, gdx, n);
        else expect_near16(what, hdx, gdx, n);
        free(hdx);
    }
    /* the comparisons with a number (NaN, infinities, a tie at x[9]) */
    acc_bf16 x9 = x[9];
    x[9] = gx[9] = acc_f32_bf16(0.5f);
#define CMP_SCALAR(code, name, binary)           \
    k_##name##_fwd_bf16(hout, x, 0.5f, n);       \
    g_##name##_fwd_bf16(dev, gout, gx, 0.5f, n); \
    expect_bits16(#name "_fwd_bf16", hout, gout, n);
    ACC_EW_CMP_SCALAR_OPS(CMP_SCALAR)
#undef CMP_SCALAR
    x[9] = gx[9] = x9;
    /* scale */
    k_scale_fwd_bf16(hout, x, 0.37f, n);
    g_scale_fwd_bf16(dev, gout, gx, 0.37f, n);
    expect_bits16("scale_fwd_bf16", hout, gout, n);
    acc_bf16 *hdx = dup16(dx0, n), *gdx = dcopy16(dx0, n);
    k_scale_bwd_bf16(hdx, dout, -1.7f, n);
    g_scale_bwd_bf16(dev, gdx, gdout, -1.7f, n);
    expect_bits16("scale_bwd_bf16", hdx, gdx, n);
    /* shift */
    k_shift_fwd_bf16(hout, x, -0.61f, n);
    g_shift_fwd_bf16(dev, gout, gx, -0.61f, n);
    expect_bits16("shift_fwd_bf16", hout, gout, n);
    free(hdx), hdx = dup16(dx0, n), gdx = dcopy16(dx0, n);
    k_shift_bwd_bf16(hdx, dout, n);
    g_shift_bwd_bf16(dev, gdx, gdout, n);
    expect_bits16("shift_bwd_bf16", hdx, gdx, n);
    /* one element past a 16-byte boundary (a slice's view): every thread's
     * eight elements take the element-by-element path of ld8/st8 */
    k_silu_fwd_bf16(hout + 1, x + 1, n - 1);
    g_silu_fwd_bf16(dev, gout + 1, gx + 1, n - 1);
    expect_bits16("silu_fwd_bf16 misaligned", hout + 1, gout + 1, n - 1);
    free(hdx), hdx = dup16(dx0, n), gdx = dcopy16(dx0, n);
    k_silu_bwd_bf16(hdx + 1, dout + 1, x + 1, n - 1);
    g_silu_bwd_bf16(dev, gdx + 1, gdout + 1, gx + 1, n - 1);
    expect_bits16("silu_bwd_bf16 misaligned", hdx, gdx, n);
    /* in place, as the schedule may run it */
    acc_bf16 *hx = dup16(x, n);
    k_silu_fwd_bf16(hx, hx, n);
    g_silu_fwd_bf16(dev, gx, gx, n);
    expect_bits16("silu_fwd_bf16 in place", hx, gx, n);
    free(xf), free(x), free(dout), free(dx0), free(hout), free(hdx), free(hx);
    dev_close();
}

/* ---- binary ops ------------------------------------------------------------------ */

#define BIN_OPERANDS_0(a, b)
#define BIN_OPERANDS_1(a, b) a, b,
#define BIN_FNS(code, name, reads)                                                                                     \
    static void bin_bwd_##name(acc_dev *d, acc_bf16 *hda, acc_bf16 *hdb, const acc_bf16 *dout, const acc_bf16 *a,      \
                               const acc_bf16 *b, acc_bf16 *gda, acc_bf16 *gdb, const acc_bf16 *gd,                    \
                               const acc_bf16 *ga, const acc_bf16 *gb, int ndim, const int64_t *so, const int64_t *sa, \
                               const int64_t *sb) {                                                                    \
        k_##name##_bwd_bf16(hda, hdb, dout, BIN_OPERANDS_##reads(a, b) ndim, so, sa, sb);                              \
        g_##name##_bwd_bf16(d, gda, gdb, gd, BIN_OPERANDS_##reads(ga, gb) ndim, so, sa, sb);                           \
    }
ACC_EW_BINARY_OPS(BIN_FNS)
#undef BIN_FNS
typedef struct {
    const char *name;
    void (*kf)(acc_bf16 *, const acc_bf16 *, const acc_bf16 *, int, const int64_t *, const int64_t *, const int64_t *);
    void (*gf)(acc_dev *, acc_bf16 *, const acc_bf16 *, const acc_bf16 *, int, const int64_t *, const int64_t *,
               const int64_t *);
    void (*bwd)(acc_dev *, acc_bf16 *, acc_bf16 *, const acc_bf16 *, const acc_bf16 *, const acc_bf16 *, acc_bf16 *,
                acc_bf16 *, const acc_bf16 *, const acc_bf16 *, const acc_bf16 *, int, const int64_t *, const int64_t *,
                const int64_t *);
} BinOp;
static const BinOp bin_ops[] = {
#define BIN_OP(code, name, reads) {#name, k_##name##_fwd_bf16, g_##name##_fwd_bf16, bin_bwd_##name},
    ACC_EW_BINARY_OPS(BIN_OP)
#undef BIN_OP
};

/* One shape: the forward bit for bit; the backward of an operand that is
 * not broadcast bit for bit, of a broadcast one (a sum over out elements, in
 * another order than the CPU's) within tolerance. */
static void check_binary(const BinOp *op, int ndim, const int64_t *so, const int64_t *sa, const int64_t *sb,
                         long long ws, int nan) {
    int64_t no = 1, na = 1, nb = 1;
    for (int k = 0; k < ndim; k++) no *= so[k], na *= sa[k], nb *= sb[k];
    arena_used = 0;
    acc_bf16 *a = rand16(na, 5u, 4.0f), *b = rand16(nb, 7u, 4.0f), *dout = rand16(no, 9u, 2.0f);
    acc_bf16 *da = rand16(na, 11u, 1.0f), *db = rand16(nb, 13u, 1.0f), *out = rand16(no, 15u, 1.0f);
    for (int64_t i = 0; i < nb; i++) /* a divisor away from 0 */
        b[i] = acc_f32_bf16(acc_bf16_f32(b[i]) > 0 ? acc_bf16_f32(b[i]) + 0.5f : acc_bf16_f32(b[i]) - 0.5f);
    if (nan) a[na / 2] = BF16_QNAN;
    acc_bf16 *ga = dcopy16(a, na), *gb = dcopy16(b, nb), *gd = dcopy16(dout, no), *gout = dcopy16(out, no);
    acc_bf16 *gda = dcopy16(da, na), *gdb = dcopy16(db, nb);
    char what[128], shape[64];
    snprintf(shape, sizeof shape, "a %lld, b %lld, out %lld elements%s, workspace %lld", (long long)na, (long long)nb,
             (long long)no, nan ? ", a NaN" : "", ws);
    op->kf(out, a, b, ndim, so, sa, sb);
    op->gf(dev, gout, ga, gb, ndim, so, sa, sb);
    snprintf(what, sizeof what, "%s_fwd_bf16 (%s)", op->name, shape);
    expect_bits16(what, out, gout, no);
    op->bwd(dev, da, db, dout, a, b, gda, gdb, gd, ga, gb, ndim, so, sa, sb);
    snprintf(what, sizeof what, "%s_bwd_bf16 da (%s)", op->name, shape);
    if (na == no) expect_bits16(what, da, gda, na);
    else expect_near16(what, da, gda, na);
    snprintf(what, sizeof what, "%s_bwd_bf16 db (%s)", op->name, shape);
    if (nb == no) expect_bits16(what, db, gdb, nb);
    else expect_near16(what, db, gdb, nb);
    free(a), free(b), free(dout), free(da), free(db), free(out);
}

static void test_binary(void) {
    /* a scratch of 256 bytes (one chunk of rows), and 32 MiB (several) */
    static const long long ws_sizes[] = {KA_SCALARS_BYTES + 256, 32 << 20};
    const int64_t o2[] = {301, 71}, b2[] = {1, 71}, o3[] = {3, 101, 71}, b3[] = {1, 1, 71}, m3[] = {3, 1, 71};
    const int64_t s2[] = {1, 1}, r2[] = {301, 1};
    for (int w = 0; w < 2; w++) {
        dev_open(ws_sizes[w]);
        for (size_t op = 0; op < sizeof bin_ops / sizeof *bin_ops; op++) {
            const BinOp *o = &bin_ops[op];
            check_binary(o, 2, o2, o2, o2, ws_sizes[w], 0); /* same shapes */
            check_binary(o, 2, o2, o2, o2, ws_sizes[w], 1);
            check_binary(o, 2, o2, o2, b2, ws_sizes[w], 0); /* a bias over rows: the column reduction */
            check_binary(o, 3, o3, o3, b3, ws_sizes[w], 1);
            check_binary(o, 3, o3, m3, o3, ws_sizes[w], 0); /* a broadcast over a middle axis */
            check_binary(o, 2, o2, o2, s2, ws_sizes[w], 0); /* a scalar */
            check_binary(o, 2, o2, r2, o2, ws_sizes[w], 0); /* a column, broadcast over the last axis */
        }
        dev_close();
    }
}

/* ---- where ------------------------------------------------------------------------ */

/* where(cond, a, b) on both targets, fp32 and bf16, cond int32 and float (a
 * third zeros, a NaN): the forward is a copy of the picked element and the
 * backward sums in the same order on both (where_grad, ck_where_bwd), so
 * both are bit for bit, broadcast or not. */
static void check_where(int ndim, const int64_t *so, const int64_t *sc, const int64_t *sa, const int64_t *sb) {
    int64_t no = 1, nc = 1, na = 1, nb = 1;
    for (int k = 0; k < ndim; k++) no *= so[k], nc *= sc[k], na *= sa[k], nb *= sb[k];
    for (int ci = 0; ci < 2; ci++)
        for (int h = 0; h < 2; h++) {
            arena_used = 0;
            int32_t *c32 = hmalloc((size_t)nc * sizeof *c32);
            acc_bf16 *c16 = rand16(nc, 3u, 4.0f), *a16 = rand16(na, 5u, 4.0f), *b16 = rand16(nb, 7u, 4.0f);
            acc_bf16 *d16 = rand16(no, 9u, 2.0f), *da16 = rand16(na, 11u, 1.0f), *db16 = rand16(nb, 13u, 1.0f);
            float *cf = rand32(nc, 3u, 4.0f), *af = rand32(na, 5u, 4.0f), *bf = rand32(nb, 7u, 4.0f);
            float *df = rand32(no, 9u, 2.0f), *daf = rand32(na, 11u, 1.0f), *dbf = rand32(nb, 13u, 1.0f);
            for (int64_t k = 0; k < nc; k++) {
                c32[k] = k % 3 == 0 ? 0 : (int32_t)k;
                if (k % 3 == 0) cf[k] = 0.0f, c16[k] = acc_f32_bf16(0.0f);
            }
            cf[nc / 2] = NAN, c16[nc / 2] = BF16_QNAN;
            const void *hc = ci ? (const void *)c32 : h ? (const void *)c16 : (const void *)cf;
            const void *gc = ci  ? (const void *)dcopy32((const float *)c32, nc)
                             : h ? (const void *)dcopy16(c16, nc)
                                 : (const void *)dcopy32(cf, nc);
            char what[128];
            snprintf(what, sizeof what, "where %s, %s cond, out %lld, cond %lld, a %lld, b %lld", h ? "bf16" : "fp32",
                     ci ? "i32" : "float", (long long)no, (long long)nc, (long long)na, (long long)nb);
            if (h) {
                acc_bf16 *out = rand16(no, 15u, 1.0f), *gout = dcopy16(out, no), *ga = dcopy16(a16, na),
                         *gb = dcopy16(b16, nb), *gd = dcopy16(d16, no), *gda = dcopy16(da16, na),
                         *gdb = dcopy16(db16, nb);
                k_where_fwd_bf16(out, hc, a16, b16, ci, ndim, so, sc, sa, sb);
                g_where_fwd_bf16(dev, gout, gc, ga, gb, ci, ndim, so, sc, sa, sb);
                expect_bits16(what, out, gout, no);
                k_where_bwd_bf16(da16, db16, d16, hc, ci, ndim, so, sc, sa, sb);
                g_where_bwd_bf16(dev, gda, gdb, gd, gc, ci, ndim, so, sc, sa, sb);
                expect_bits16(what, da16, gda, na);
                expect_bits16(what, db16, gdb, nb);
                free(out);
            } else {
                float *out = rand32(no, 15u, 1.0f), *gout = dcopy32(out, no), *ga = dcopy32(af, na),
                      *gb = dcopy32(bf, nb), *gd = dcopy32(df, no), *gda = dcopy32(daf, na), *gdb = dcopy32(dbf, nb);
                k_where_fwd(out, hc, af, bf, ci, ndim, so, sc, sa, sb);
                g_where_fwd(dev, gout, gc, ga, gb, ci, ndim, so, sc, sa, sb);
                expect_bits32(what, out, gout, no);
                k_where_bwd(daf, dbf, df, hc, ci, ndim, so, sc, sa, sb);
                g_where_bwd(dev, gda, gdb, gd, gc, ci, ndim, so, sc, sa, sb);
                expect_bits32(what, daf, gda, na);
                expect_bits32(what, dbf, gdb, nb);
                free(out);
            }
            free(c32), free(c16), free(a16), free(b16), free(d16), free(da16), free(db16);
            free(cf), free(af), free(bf), free(df), free(daf), free(dbf);
        }
}

static void test_where(void) {
    dev_open(KA_SCALARS_BYTES + 256);
    const int64_t o3[] = {3, 41, 17}, c3[] = {3, 1, 17}, a3[] = {1, 41, 17}, b3[] = {3, 41, 1}, s3[] = {1, 1, 1};
    check_where(3, o3, o3, o3, o3); /* same shapes */
    check_where(3, o3, c3, a3, b3); /* each broadcast along another axis */
    check_where(3, o3, a3, s3, o3); /* a scalar a, a key-mask-like cond */
    dev_close();
}

/* ---- dropout and the chains ----------------------------------------------------------- */

static void set_scalars(uint64_t seed, uint32_t step) {
    acc_kscalars *sc = (acc_kscalars *)(void *)dev->scalars;
    sc->seed = seed;
    sc->step = step;
}

static void test_dropout(void) {
    dev_open(1 << 20);
    const uint64_t seed = 0x1234abcdull;
    const uint32_t step = 7;
    set_scalars(seed, step);
    const int64_t n = 1003;
    acc_bf16 *x = rand16(n, 21u, 4.0f), *dx0 = rand16(n, 22u, 1.0f);
    x[3] = BF16_QNAN;
    acc_bf16 *gx = dcopy16(x, n);
    for (int pi = 0; pi < 2; pi++) {
        float p = pi ? 0.3f : 0.0f;
        acc_bf16 *out = dup16(dx0, n), *gout = dcopy16(dx0, n);
        k_dropout_fwd_bf16(out, x, n, p, seed, step, 5);
        g_dropout_fwd_bf16(dev, gout, gx, n, p, seed, step, 5);
        expect_bits16(pi ? "dropout_fwd_bf16 (p 0.3)" : "dropout_fwd_bf16 (p 0)", out, gout, n);
        acc_bf16 *dx = dup16(dx0, n), *gdx = dcopy16(dx0, n);
        k_dropout_bwd_bf16(dx, x, n, p, seed, step, 5);
        g_dropout_bwd_bf16(dev, gdx, gx, n, p, seed, step, 5);
        expect_bits16(pi ? "dropout_bwd_bf16 (p 0.3)" : "dropout_bwd_bf16 (p 0)", dx, gdx, n);
        free(out), free(dx);
    }
    free(x), free(dx0);
    dev_close();
}

/* Two chains of K_EW_MAX ops over n elements against k_ew_chain_bf16: a
 * full-size operand, silu, a broadcast operand on the left of sub, dropout;
 * and scale, tanh, a scalar operand, shift. Then the first in place. */
static void test_chain(void) {
    dev_open(1 << 20);
    const uint64_t seed = 99;
    const uint32_t step = 3;
    set_scalars(seed, step);
    const int64_t n = 71 * 29, m = 71;
    acc_bf16 *x = rand16(n, 31u, 4.0f), *full = rand16(n, 32u, 2.0f), *bias = rand16(m, 33u, 2.0f);
    acc_bf16 *one = rand16(1, 34u, 2.0f);
    x[10] = BF16_QNAN;
    acc_bf16 *gx = dcopy16(x, n), *gfull = dcopy16(full, n), *gbias = dcopy16(bias, m), *gone = dcopy16(one, 1);
    k_ew_op h1[K_EW_MAX] = {{ACC_OP_MUL, full, n, 0, 0.0f, 0},
                            {ACC_OP_SILU, NULL, 0, 0, 0.0f, 0},
                            {ACC_OP_SUB, bias, m, 1, 0.0f, 0},
                            {ACC_OP_DROPOUT, NULL, 0, 0, 0.25f, 9}};
    k_ew_op h2[K_EW_MAX] = {{ACC_OP_SCALE, NULL, 0, 0, 1.37f, 0},
                            {ACC_OP_TANH, NULL, 0, 0, 0.0f, 0},
                            {ACC_OP_DIV, one, 1, 0, 0.0f, 0},
                            {ACC_OP_SHIFT, NULL, 0, 0, -0.3f, 0}};
    k_ew_op g1[K_EW_MAX], g2[K_EW_MAX];
    memcpy(g1, h1, sizeof h1), memcpy(g2, h2, sizeof h2);
    g1[0].operand = gfull, g1[2].operand = gbias, g2[2].operand = gone;
    acc_bf16 *out = rand16(n, 35u, 1.0f), *gout = dcopy16(out, n);
    char what[64];
    for (int c = 0; c < 2; c++)
        for (int len = 1; len <= K_EW_MAX; len++) {
            k_ew_chain_bf16(out, x, c ? h2 : h1, len, n, seed, step);
            g_ew_chain_bf16(dev, gout, gx, c ? g2 : g1, len, n, seed, step);
            snprintf(what, sizeof what, "ew_chain_bf16 (chain %d, %d ops)", c + 1, len);
            expect_bits16(what, out, gout, n);
        }
    /* one op at a time through the unfused kernels: the same bits */
    acc_bf16 *step_out = dcopy16(x, n);
    g_mul_fwd_bf16(dev, step_out, step_out, gfull, 1, &n, &n, &n);
    g_silu_fwd_bf16(dev, step_out, step_out, n);
    const int64_t so[] = {29, 71}, sb[] = {1, 71};
    g_sub_fwd_bf16(dev, step_out, gbias, step_out, 2, so, sb, so);
    g_dropout_fwd_bf16(dev, step_out, step_out, n, 0.25f, seed, step, 9);
    k_ew_chain_bf16(out, x, h1, K_EW_MAX, n, seed, step);
    expect_bits16("ew_chain_bf16 against the unfused device kernels", out, step_out, n);
    /* in place */
    acc_bf16 *hx = dup16(x, n);
    k_ew_chain_bf16(hx, hx, h1, K_EW_MAX, n, seed, step);
    g_ew_chain_bf16(dev, gx, gx, g1, K_EW_MAX, n, seed, step);
    expect_bits16("ew_chain_bf16 in place", hx, gx, n);
    free(x), free(full), free(bias), free(one), free(out), free(hx);
    dev_close();
}

/* ---- copies --------------------------------------------------------------------------- */

static void test_copies(void) {
    dev_open(1 << 20);
    const int64_t shape[] = {3, 5, 7, 3}, n = 3 * 5 * 7 * 3;
    acc_bf16 *x = rand16(n, 41u, 4.0f), *dx0 = rand16(n, 42u, 1.0f);
    x[4] = BF16_SNAN, x[9] = BF16_QNAN;
    acc_bf16 *gx = dcopy16(x, n);
    /* reshape */
    acc_bf16 *out = rand16(n, 43u, 1.0f), *gout = dcopy16(out, n);
    k_reshape_fwd_bf16(out, x, n);
    g_reshape_fwd_bf16(dev, gout, gx, n);
    expect_bits16("reshape_fwd_bf16", out, gout, n);
    acc_bf16 *dx = dup16(dx0, n), *gdx = dcopy16(dx0, n);
    k_reshape_bwd_bf16(dx, x, n);
    g_reshape_bwd_bf16(dev, gdx, gx, n);
    expect_bits16("reshape_bwd_bf16", dx, gdx, n);
    /* transpose, every pair of dims */
    char what[96];
    for (int d0 = 0; d0 < 4; d0++)
        for (int d1 = d0 + 1; d1 < 4; d1++) {
            k_transpose_fwd_bf16(out, x, 4, shape, d0, d1);
            g_transpose_fwd_bf16(dev, gout, gx, 4, shape, d0, d1);
            snprintf(what, sizeof what, "transpose_fwd_bf16 (dims %d, %d)", d0, d1);
            expect_bits16(what, out, gout, n);
            memcpy(dx, dx0, (size_t)n * sizeof *dx), memcpy(gdx, dx0, (size_t)n * sizeof *dx);
            k_transpose_bwd_bf16(dx, x, 4, shape, d0, d1); /* x as dout: any n values */
            g_transpose_bwd_bf16(dev, gdx, gx, 4, shape, d0, d1);
            snprintf(what, sizeof what, "transpose_bwd_bf16 (dims %d, %d)", d0, d1);
            expect_bits16(what, dx, gdx, n);
        }
    /* slice along every axis */
    for (int axis = 0; axis < 4; axis++) {
        int64_t start = 1, len = shape[axis] - 2, ns = n / shape[axis] * len;
        k_slice_fwd_bf16(out, x, 4, shape, axis, start, len);
        g_slice_fwd_bf16(dev, gout, gx, 4, shape, axis, start, len);
        snprintf(what, sizeof what, "slice_fwd_bf16 (axis %d)", axis);
        expect_bits16(what, out, gout, ns);
        memcpy(dx, dx0, (size_t)n * sizeof *dx), memcpy(gdx, dx0, (size_t)n * sizeof *dx);
        k_slice_bwd_bf16(dx, x, 4, shape, axis, start, len);
        g_slice_bwd_bf16(dev, gdx, gx, 4, shape, axis, start, len);
        snprintf(what, sizeof what, "slice_bwd_bf16 (axis %d)", axis);
        expect_bits16(what, dx, gdx, n);
    }
    /* concat of three inputs along axis 2 (sizes 2, 4, 1 of 7), the middle gradient NULL */
    {
        const int64_t sizes[] = {2, 4, 1}, per = 3 * 5 * 3;
        const acc_bf16 *xs[3] = {x, x + 2 * per, x + 6 * per};
        const acc_bf16 *gxs[3] = {gx, gx + 2 * per, gx + 6 * per};
        k_concat_fwd_bf16(out, xs, 3, 4, shape, 2, sizes);
        g_concat_fwd_bf16(dev, gout, gxs, 3, 4, shape, 2, sizes);
        expect_bits16("concat_fwd_bf16", out, gout, n);
        memcpy(dx, dx0, (size_t)n * sizeof *dx), memcpy(gdx, dx0, (size_t)n * sizeof *dx);
        acc_bf16 *dxs[3] = {dx, NULL, dx + 2 * per}, *gdxs[3] = {gdx, NULL, gdx + 2 * per};
        k_concat_bwd_bf16(dxs, x, 3, 4, shape, 2, sizes);
        g_concat_bwd_bf16(dev, gdxs, gx, 3, 4, shape, 2, sizes);
        expect_bits16("concat_bwd_bf16", dx, gdx, n);
    }
    free(x), free(dx0), free(out), free(dx);
    dev_close();
}

/* ---- sum and mean ----------------------------------------------------------------------- */

static void test_reduce(void) {
    static const long long ws_sizes[] = {KA_SCALARS_BYTES + 256, 32 << 20};
    for (int w = 0; w < 2; w++) {
        dev_open(ws_sizes[w]);
        for (int mean = 0; mean < 2; mean++)
            for (int last = 0; last < 2; last++) {
                arena_used = 0;
                int64_t outer = last ? 121 : 3, rn = 201, inner = last ? 1 : 41, n = outer * rn * inner;
                acc_bf16 *x = rand16(n, 51u, 4.0f), *dx = rand16(n, 52u, 1.0f), *gx = dcopy16(x, n);
                acc_bf16 *gdx = dcopy16(dx, n);
                float *out = rand32(outer * inner, 53u, 1.0f), *gout = dcopy32(out, outer * inner);
                float *dout = rand32(outer * inner, 54u, 2.0f), *gdout = dcopy32(dout, outer * inner);
                char what[96];
                snprintf(what, sizeof what, "%s_fwd_bf16 over %s axis (workspace %lld)", mean ? "mean" : "sum",
                         last ? "the last" : "a middle", ws_sizes[w]);
                if (mean) {
                    k_mean_fwd_bf16(out, x, outer, rn, inner);
                    g_mean_fwd_bf16(dev, gout, gx, outer, rn, inner);
                    k_mean_bwd_bf16(dx, dout, outer, rn, inner);
                    g_mean_bwd_bf16(dev, gdx, gdout, outer, rn, inner);
                } else {
                    k_sum_fwd_bf16(out, x, outer, rn, inner);
                    g_sum_fwd_bf16(dev, gout, gx, outer, rn, inner);
                    k_sum_bwd_bf16(dx, dout, outer, rn, inner);
                    g_sum_bwd_bf16(dev, gdx, gdout, outer, rn, inner);
                }
                expect_near32(what, out, gout, outer * inner);
                snprintf(what, sizeof what, "%s_bwd_bf16 over %s axis", mean ? "mean" : "sum",
                         last ? "the last" : "a middle");
                expect_bits16(what, dx, gdx, n);
                free(x), free(dx), free(out), free(dout);
            }
        dev_close();
    }
}

/* max and min over a middle and the last axis, fp32 and bf16: the same walk
 * on both targets, so bit for bit; ties (bf16 values repeat) and a NaN. */
static void test_extremes(void) {
    dev_open(KA_SCALARS_BYTES + 256);
    for (int mn = 0; mn < 2; mn++)
        for (int last = 0; last < 2; last++) {
            arena_used = 0;
            int64_t outer = last ? 121 : 3, rn = 201, inner = last ? 1 : 41, n = outer * rn * inner, no = outer * inner;
            acc_bf16 *x = rand16(n, 51u, 4.0f), *dx = rand16(n, 52u, 1.0f), *out = rand16(no, 53u, 1.0f);
            acc_bf16 *dout = rand16(no, 54u, 2.0f);
            float *xf = rand32(n, 51u, 4.0f), *dxf = rand32(n, 52u, 1.0f), *outf = rand32(no, 53u, 1.0f);
            float *doutf = rand32(no, 54u, 2.0f);
            x[5 * inner] = BF16_QNAN, xf[5 * inner] = NAN;
            acc_bf16 *gx = dcopy16(x, n), *gdx = dcopy16(dx, n), *gout = dcopy16(out, no), *gdout = dcopy16(dout, no);
            float *gxf = dcopy32(xf, n), *gdxf = dcopy32(dxf, n), *goutf = dcopy32(outf, no);
            float *gdoutf = dcopy32(doutf, no);
            char what[96];
            snprintf(what, sizeof what, "%s over %s axis", mn ? "min" : "max", last ? "the last" : "a middle");
            if (mn) {
                k_min_fwd_bf16(out, x, outer, rn, inner), g_min_fwd_bf16(dev, gout, gx, outer, rn, inner);
                k_min_bwd_bf16(dx, dout, x, outer, rn, inner), g_min_bwd_bf16(dev, gdx, gdout, gx, outer, rn, inner);
                k_min_fwd(outf, xf, outer, rn, inner), g_min_fwd(dev, goutf, gxf, outer, rn, inner);
                k_min_bwd(dxf, doutf, xf, outer, rn, inner), g_min_bwd(dev, gdxf, gdoutf, gxf, outer, rn, inner);
            } else {
                k_max_fwd_bf16(out, x, outer, rn, inner), g_max_fwd_bf16(dev, gout, gx, outer, rn, inner);
                k_max_bwd_bf16(dx, dout, x, outer, rn, inner), g_max_bwd_bf16(dev, gdx, gdout, gx, outer, rn, inner);
                k_max_fwd(outf, xf, outer, rn, inner), g_max_fwd(dev, goutf, gxf, outer, rn, inner);
                k_max_bwd(dxf, doutf, xf, outer, rn, inner), g_max_bwd(dev, gdxf, gdoutf, gxf, outer, rn, inner);
            }
            expect_bits16(what, out, gout, no);
            expect_bits16(what, dx, gdx, n);
            expect_bits32(what, outf, goutf, no);
            expect_bits32(what, dxf, gdxf, n);
            free(x), free(dx), free(out), free(dout), free(xf), free(dxf), free(outf), free(doutf);
        }
    dev_close();
}

/* ---- norms, softmax ----------------------------------------------------------------------- */

/* layernorm and rmsnorm over rows narrower and wider than a block; the
 * backward from the CPU's statistics on both sides (so that it is checked
 * alone), dw and db through one and several chunks of the column reduction;
 * layernorm also without a bias (b and db NULL) */
static void test_norms(void) {
    static const long long ws_sizes[] = {KA_SCALARS_BYTES + 256, 32 << 20};
    static const int64_t widths[] = {33, 1001};
    for (int w = 0; w < 2; w++) {
        dev_open(ws_sizes[w]);
        for (int wi = 0; wi < 2; wi++)
            for (int mode = 0; mode < 3; mode++) {
                int rms = mode == 1, nob = mode == 2;
                arena_used = 0;
                const int64_t N = 301, C = widths[wi], n = N * C;
                acc_bf16 *x = rand16(n, 61u, 4.0f), *dy = rand16(n, 62u, 2.0f), *dx = rand16(n, 63u, 1.0f);
                acc_bf16 *y = rand16(n, 64u, 1.0f);
                float *wt = rand32(C, 65u, 2.0f), *bs = rand32(C, 66u, 1.0f), *dw = rand32(C, 67u, 1.0f);
                float *db = rand32(C, 68u, 1.0f), *st = rand32(2 * N, 69u, 1.0f);
                x[C + 3] = BF16_QNAN; /* row 1 all NaN */
                acc_bf16 *gx = dcopy16(x, n), *gdy = dcopy16(dy, n), *gdx = dcopy16(dx, n), *gy = dcopy16(y, n);
                float *gw = dcopy32(wt, C), *gb = dcopy32(bs, C), *gdw = dcopy32(dw, C), *gdb = dcopy32(db, C);
                float *gst = dcopy32(st, 2 * N);
                const char *nm = rms ? "rmsnorm" : nob ? "layernorm (no bias)" : "layernorm";
                int64_t nst = rms ? N : 2 * N;
                char what[96];
                if (rms) {
                    k_rmsnorm_fwd_bf16(y, st, x, wt, N, C, 1e-5f);
                    g_rmsnorm_fwd_bf16(dev, gy, gst, gx, gw, N, C, 1e-5f);
                } else {
                    k_layernorm_fwd_bf16(y, st, x, wt, nob ? NULL : bs, N, C, 1e-5f);
                    g_layernorm_fwd_bf16(dev, gy, gst, gx, gw, nob ? NULL : gb, N, C, 1e-5f);
                }
                snprintf(what, sizeof what, "%s_fwd_bf16 y (C %lld)", nm, (long long)C);
                expect_near16(what, y, gy, n);
                snprintf(what, sizeof what, "%s_fwd_bf16 stats (C %lld)", nm, (long long)C);
                expect_near32(what, st, gst, nst);
                memcpy(gst, st, (size_t)nst * sizeof *st);
                if (rms) {
                    k_rmsnorm_bwd_bf16(dx, dw, dy, x, wt, st, N, C);
                    g_rmsnorm_bwd_bf16(dev, gdx, gdw, gdy, gx, gw, gst, N, C);
                } else {
                    k_layernorm_bwd_bf16(dx, dw, nob ? NULL : db, dy, x, wt, st, N, C);
                    g_layernorm_bwd_bf16(dev, gdx, gdw, nob ? NULL : gdb, gdy, gx, gw, gst, N, C);
                }
                snprintf(what, sizeof what, "%s_bwd_bf16 dx (C %lld, workspace %lld)", nm, (long long)C, ws_sizes[w]);
                expect_near16(what, dx, gdx, n);
                snprintf(what, sizeof what, "%s_bwd_bf16 dw (C %lld, workspace %lld)", nm, (long long)C, ws_sizes[w]);
                expect_near32(what, dw, gdw, C);
                snprintf(what, sizeof what, "%s_bwd_bf16 db (C %lld, workspace %lld)", nm, (long long)C, ws_sizes[w]);
                expect_near32(what, db, gdb, C);
                free(x), free(dy), free(dx), free(y), free(wt), free(bs), free(dw), free(db), free(st);
            }
        dev_close();
    }
}

static void test_softmax(void) {
    dev_open(1 << 20);
    const int64_t N = 5;
    for (int64_t C = 3; C <= 1000; C += 997) {
        arena_used = 0;
        const int64_t n = N * C;
        acc_bf16 *x = rand16(n, 71u, 8.0f), *dy = rand16(n, 72u, 2.0f), *dx = rand16(n, 73u, 1.0f);
        acc_bf16 *y = rand16(n, 74u, 1.0f);
        x[1] = x[C + 2] = acc_f32_bf16(-INFINITY);
        /* row 3 all NaN (past the first element each thread reads: online_add,
         * shared with fp32, skips a NaN that comes while its max is -inf) */
        if (C > 300) x[3 * C + 300] = BF16_QNAN;
        acc_bf16 *gx = dcopy16(x, n), *gdy = dcopy16(dy, n), *gdx = dcopy16(dx, n), *gy = dcopy16(y, n);
        char what[64];
        k_softmax_fwd_bf16(y, x, N, C);
        g_softmax_fwd_bf16(dev, gy, gx, N, C);
        snprintf(what, sizeof what, "softmax_fwd_bf16 (C %lld)", (long long)C);
        expect_near16(what, y, gy, n);
        memcpy(gy, y, (size_t)n * sizeof *y);
        k_softmax_bwd_bf16(dx, dy, y, N, C);
        g_softmax_bwd_bf16(dev, gdx, gdy, gy, N, C);
        snprintf(what, sizeof what, "softmax_bwd_bf16 (C %lld)", (long long)C);
        expect_near16(what, dx, gdx, n);
        /* y aliasing x */
        k_softmax_fwd_bf16(x, x, N, C);
        g_softmax_fwd_bf16(dev, gx, gx, N, C);
        snprintf(what, sizeof what, "softmax_fwd_bf16 in place (C %lld)", (long long)C);
        expect_near16(what, x, gx, n);
        free(x), free(dy), free(dx), free(y);
    }
    dev_close();
}

/* ---- rope, embedding, cross-entropy ---------------------------------------------------------- */

static void test_rope(void) {
    dev_open(1 << 20);
    const int64_t B = 2, T = 5, H = 3, D = 10, n = B * T * H * D;
    acc_bf16 *x = rand16(n, 81u, 4.0f), *dx0 = rand16(n, 82u, 1.0f), *out = rand16(n, 83u, 1.0f);
    x[7] = BF16_QNAN;
    acc_bf16 *gx = dcopy16(x, n), *gout = dcopy16(out, n), *dx = dup16(dx0, n), *gdx = dcopy16(dx0, n);
    k_rope_fwd_bf16(out, x, B, T, H, D, 10000.0f);
    g_rope_fwd_bf16(dev, gout, gx, B, T, H, D, 10000.0f);
    expect_bits16("rope_fwd_bf16", out, gout, n);
    k_rope_bwd_bf16(dx, x, B, T, H, D, 10000.0f);
    g_rope_bwd_bf16(dev, gdx, gx, B, T, H, D, 10000.0f);
    expect_bits16("rope_bwd_bf16", dx, gdx, n);
    k_rope_fwd_bf16(x, x, B, T, H, D, 500.0f);
    g_rope_fwd_bf16(dev, gx, gx, B, T, H, D, 500.0f);
    expect_bits16("rope_fwd_bf16 in place", x, gx, n);
    free(x), free(dx0), free(out), free(dx);
    dev_close();
}

/* the embedding's gradient through several segments of tokens (a small
 * scratch) and one */
static void test_embedding(void) {
    static const long long ws_sizes[] = {KA_SCALARS_BYTES + 256, 32 << 20};
    for (int w = 0; w < 2; w++) {
        dev_open(ws_sizes[w]);
        const int64_t T = 501, V = 37, E = 51;
        int32_t *idx = hmalloc((size_t)T * sizeof *idx);
        for (int64_t i = 0; i < T; i++) idx[i] = (int32_t)((i * 7 + i / 13) % V);
        idx[3] = idx[4] = idx[5] = 0;
        int32_t *gidx = dalloc((size_t)T * sizeof *gidx);
        memcpy(gidx, idx, (size_t)T * sizeof *idx);
        float *table = rand32(V * E, 91u, 2.0f), *gtable = dcopy32(table, V * E);
        table[E + 1] = gtable[E + 1] = NAN;
        acc_bf16 *out = rand16(T * E, 92u, 1.0f), *gout = dcopy16(out, T * E);
        EXPECT(k_embedding_fwd_bf16(out, idx, table, T, V, E) == 0, "k_embedding_fwd_bf16 refused valid ids");
        g_embedding_fwd_bf16(dev, gout, gidx, gtable, T, V, E);
        expect_bits16("embedding_fwd_bf16", out, gout, T * E);
        acc_bf16 *dout = rand16(T * E, 93u, 2.0f), *gdout = dcopy16(dout, T * E);
        float *dt = rand32(V * E, 94u, 1.0f), *gdt = dcopy32(dt, V * E);
        EXPECT(k_embedding_bwd_bf16(dt, dout, idx, T, V, E) == 0, "k_embedding_bwd_bf16 refused valid ids");
        g_embedding_bwd_bf16(dev, gdt, gdout, gidx, T, V, E);
        char what[96];
        snprintf(what, sizeof what, "embedding_bwd_bf16 (workspace %lld)", ws_sizes[w]);
        expect_bits32(what, dt, gdt, V * E);
        free(idx), free(table), free(out), free(dout), free(dt);
        dev_close();
    }
}

static void test_cross_entropy(void) {
    dev_open(1 << 20);
    enum { N = 5 };
    const int64_t V = 3001;
    acc_bf16 *logits = rand16(N * V, 101u, 16.0f), *dl = rand16(N * V, 102u, 1.0f);
    int32_t tg[N] = {0, 7, 3000, 1500, 42};
    float lse[N], loss = 0.0f, dloss = 1.5f;
    acc_bf16 *glogits = dcopy16(logits, N * V), *gdl = dcopy16(dl, N * V);
    int32_t *gtg = dalloc(sizeof tg);
    memcpy(gtg, tg, sizeof tg);
    float *glse = dalloc(N * sizeof *glse), *gloss = dalloc(sizeof *gloss), *gdloss = dcopy32(&dloss, 1);
    EXPECT(k_cross_entropy_fwd_bf16(&loss, lse, logits, tg, N, V) == 0, "k_cross_entropy_fwd_bf16 refused its targets");
    g_cross_entropy_fwd_bf16(dev, gloss, glse, glogits, gtg, N, V);
    expect_near32("cross_entropy_fwd_bf16 lse", lse, glse, N);
    expect_near32("cross_entropy_fwd_bf16 loss", &loss, gloss, 1);
    memcpy(glse, lse, sizeof lse);
    EXPECT(k_cross_entropy_bwd_bf16(dl, &dloss, logits, lse, tg, N, V) == 0,
           "k_cross_entropy_bwd_bf16 refused its targets");
    g_cross_entropy_bwd_bf16(dev, gdl, gdloss, glogits, glse, gtg, N, V);
    expect_near16("cross_entropy_bwd_bf16 dlogits", dl, gdl, N * V);
    free(logits), free(dl);
    dev_close();
}

int main(void) {
    test_fill();
    test_casts();
    test_unary();
    test_binary();
    test_where();
    test_dropout();
    test_chain();
    test_copies();
    test_reduce();
    test_extremes();
    test_norms();
    test_softmax();
    test_rope();
    test_embedding();
    test_cross_entropy();
    printf("within tolerance: bf16 outputs at worst %.3g of theirs (%lld of %lld elements differ from the CPU's), "
           "float outputs at worst %.3g\n",
           worst16, (long long)near16_diff, (long long)near16_elems, worst32);
    TEST_DONE();
}
