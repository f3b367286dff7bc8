/* tensor_compare.c - compare two libaccrt tensor files element by element.
 *
 *   tensor_compare REF.bin GOT.bin [--rtol R] [--atol A] [--norm N] [--quiet]
 *   tensor_compare --loss REF.loss RUN_OUTPUT [--rtol R] [--atol A]
 *
 * The first form reads two tensor files ("ACCPARAM", u32 version 1, u32
 * count, then per tensor: u32 name length, name, u32 ndim, i64 dims[ndim],
 * 4-byte float32 elements; little-endian), checks that they hold the same
 * tensors (count, names, shapes, in order) and that every element satisfies
 *
 *     |got - ref| <= atol + rtol * |ref|      (NaN or Inf in got fails)
 *
 * With --norm N the element rule is replaced by one per tensor, the one that
 * suits a lower precision (bf16 against fp32, whose single elements can be
 * far off where terms cancel): ||got - ref||_2 <= N ||ref||_2 (+ atol * the
 * square root of the element count, for tensors that are nearly zero).
 *
 * It prints one line per tensor: the max absolute error, the max relative
 * error (|got - ref| / |ref| over the elements with |ref| > atol: below that
 * the relative error means nothing, an exact zero of the reference, such as
 * the gradient of a key bias under softmax, comes out as ~1e-9), and the worst
 * element (the one with the largest |got - ref| / (atol + rtol |ref|)), then a
 * summary line. The second form compares the loss of the first JSON line
 * `{"step": 0, "loss": X}` in RUN_OUTPUT (the stdout of `acc run`) with the
 * number in REF.loss under the same rule.
 *
 * Exit status: 0 all within tolerance, 1 a mismatch (values, names, shapes or
 * count), 2 a usage error or an unreadable/malformed file.
 *
 * Default tolerances, rtol 1e-4 and atol 2e-6 (those of the whole-model
 * tests, tests/ref/README.md). Why: acc's CPU target computes in float32 (BLAS
 * sgemm, float accumulations), the references in float64 from the same
 * float32 inputs, so what differs is acc's float32 rounding, ~1e-6 to 1e-5
 * relative on well-conditioned gradient elements and more, relative to the
 * element, where an element is a sum of terms that cancel; atol covers those
 * (the gradients of the references are O(1e-3 .. 1e-1), their largest errors
 * ~3e-7 absolute). On the shipped references the worst element uses 7% of
 * this tolerance (>= 14x headroom, for another BLAS, ISA or thread count),
 * while a real semantic slip (llama's RMSNorm eps 1e-6 instead of 1e-5) fails
 * by 30x.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 6

typedef struct {
    char *name;
    uint32_t ndim;
    int64_t dim[MAX_DIMS];
    int64_t elems;
    float *data;
} Tensor;

typedef struct {
    uint32_t count;
    Tensor *t;
} TensorFile;

static int usage(void) {
    fputs("usage: tensor_compare REF.bin GOT.bin [--rtol R] [--atol A] [--norm N] [--quiet]\n"
          "       tensor_compare --loss REF.loss RUN_OUTPUT [--rtol R] [--atol A]\n",
          stderr);
    return 2;
}

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

/* Reads the whole file; returns NULL (after a message) on failure. */
static unsigned char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tensor_compare: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        fprintf(stderr, "tensor_compare: cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

static void free_file(TensorFile *tf) {
    for (uint32_t i = 0; tf->t && i < tf->count; i++) {
        free(tf->t[i].name);
        free(tf->t[i].data);
    }
    free(tf->t);
    tf->t = NULL;
    tf->count = 0;
}

/* Parses a tensor file; returns 0, or 2 after a message. */
static int load(const char *path, TensorFile *tf) {
    size_t size, pos = 16;
    unsigned char *b = slurp(path, &size);
    tf->count = 0;
    tf->t = NULL;
    if (!b) return 2;
    int rc = 0;
    if (size < 16 || memcmp(b, "ACCPARAM", 8) || get_u32(b + 8) != 1) {
        fprintf(stderr, "tensor_compare: %s is not an acc tensor file (version 1)\n", path);
        rc = 2;
    } else {
        uint32_t count = get_u32(b + 12);
        if (count > (size - 16) / 8) {
            fprintf(stderr, "tensor_compare: %s: implausible tensor count %u\n", path, count);
            rc = 2;
        } else {
            tf->t = calloc(count ? count : 1, sizeof(Tensor));
            if (!tf->t) rc = 2;
        }
        for (uint32_t i = 0; !rc && i < count; i++) {
            Tensor *t = &tf->t[i];
            tf->count = i + 1;
            uint32_t len;
            if (size - pos < 4 || (len = get_u32(b + pos), size - pos - 4 < (size_t)len + 4)) goto truncated;
            t->name = malloc((size_t)len + 1);
            if (!t->name) goto nomem;
            memcpy(t->name, b + pos + 4, len);
            t->name[len] = 0;
            pos += 4 + (size_t)len;
            t->ndim = get_u32(b + pos);
            pos += 4;
            if (t->ndim > MAX_DIMS) {
                fprintf(stderr, "tensor_compare: %s: tensor '%s' has %u dimensions\n", path, t->name, t->ndim);
                rc = 2;
                break;
            }
            if (size - pos < 8 * (size_t)t->ndim) goto truncated;
            t->elems = 1;
            for (uint32_t k = 0; k < t->ndim; k++) {
                t->dim[k] = (int64_t)get_u64(b + pos + 8 * k);
                if (t->dim[k] < 1 || t->dim[k] > ((int64_t)1 << 40) || t->elems > ((int64_t)1 << 40) / t->dim[k]) {
                    fprintf(stderr, "tensor_compare: %s: tensor '%s' has an absurd shape\n", path, t->name);
                    rc = 2;
                    break;
                }
                t->elems *= t->dim[k];
            }
            if (rc) break;
            pos += 8 * (size_t)t->ndim;
            if ((uint64_t)(size - pos) / 4 < (uint64_t)t->elems) goto truncated;
            t->data = malloc((size_t)t->elems * 4 + 1);
            if (!t->data) goto nomem;
            for (int64_t k = 0; k < t->elems; k++) {
                uint32_t u = get_u32(b + pos + 4 * (size_t)k);
                memcpy(&t->data[k], &u, 4);
            }
            pos += 4 * (size_t)t->elems;
            continue;
        truncated:
            fprintf(stderr, "tensor_compare: %s: truncated at tensor %u\n", path, i);
            rc = 2;
            break;
        nomem:
            fprintf(stderr, "tensor_compare: out of memory reading %s\n", path);
            rc = 2;
            break;
        }
        if (!rc && pos != size) {
            fprintf(stderr, "tensor_compare: %s: %zu trailing bytes\n", path, size - pos);
            rc = 2;
        }
    }
    free(b);
    if (rc) free_file(tf);
    return rc;
}

static void shape_str(const Tensor *t, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (uint32_t d = 0; d < t->ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)t->dim[d]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

/* The multi-index of flat element i, as "[i0,i1,...]". */
static void index_str(const Tensor *t, int64_t i, char *buf, size_t n) {
    int64_t idx[MAX_DIMS];
    for (int d = (int)t->ndim - 1; d >= 0; d--) {
        idx[d] = i % t->dim[d];
        i /= t->dim[d];
    }
    size_t k = (size_t)snprintf(buf, n, "[");
    for (uint32_t d = 0; d < t->ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)idx[d]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

/* The violation ratio |got - ref| / (atol + rtol |ref|): <= 1 passes. */
static double ratio(double ref, double got, double rtol, double atol) {
    if (!isfinite(got) || !isfinite(ref)) return (got == ref) ? 0.0 : INFINITY;
    double tol = atol + rtol * fabs(ref);
    double d = fabs(got - ref);
    if (tol > 0) return d / tol;
    return d > 0 ? INFINITY : 0.0;
}

static int compare_files(const char *ref_path, const char *got_path, double rtol, double atol, double norm, int quiet) {
    TensorFile ref, got;
    if (load(ref_path, &ref)) return 2;
    if (load(got_path, &got)) {
        free_file(&ref);
        return 2;
    }
    int bad = 0;
    if (ref.count != got.count) {
        printf("MISMATCH: %s holds %u tensors, %s holds %u\n", ref_path, ref.count, got_path, got.count);
        bad = 1;
    }
    uint32_t n = ref.count < got.count ? ref.count : got.count;
    double all_abs = 0, all_rel = 0, all_ratio = 0;
    const char *all_worst = "-";
    int64_t elems = 0, failing = 0;
    for (uint32_t i = 0; i < n; i++) {
        const Tensor *r = &ref.t[i], *g = &got.t[i];
        char rs[128], gs[128], is[128];
        shape_str(r, rs, sizeof rs);
        shape_str(g, gs, sizeof gs);
        if (strcmp(r->name, g->name)) {
            printf("MISMATCH: tensor %u is '%s' in the reference, '%s' in %s\n", i, r->name, g->name, got_path);
            bad = 1;
            continue;
        }
        if (strcmp(rs, gs)) {
            printf("MISMATCH: %s has shape %s in the reference, %s in %s\n", r->name, rs, gs, got_path);
            bad = 1;
            continue;
        }
        double max_abs = 0, max_rel = 0, worst = -1, ss_d = 0, ss_r = 0;
        int64_t worst_i = 0, fails = 0;
        for (int64_t k = 0; k < r->elems; k++) {
            double a = r->data[k], b = g->data[k];
            double d = fabs(b - a);
            ss_d += (b - a) * (b - a), ss_r += a * a;
            if (!isfinite(b) || !isfinite(a)) d = (a == b) ? 0.0 : INFINITY;
            if (d > max_abs) max_abs = d;
            if (fabs(a) > atol && a != 0 && d / fabs(a) > max_rel) max_rel = d / fabs(a);
            double q = ratio(a, b, rtol, atol);
            if (q > 1) fails++;
            if (q > worst) {
                worst = q;
                worst_i = k;
            }
        }
        double nrel = 0;
        if (norm > 0) { /* one rule per tensor: the relative 2-norm of the difference */
            double lim = norm * sqrt(ss_r) + atol * sqrt((double)r->elems);
            nrel = ss_r > 0 ? sqrt(ss_d / ss_r) : sqrt(ss_d);
            fails = !(sqrt(ss_d) <= lim) ? r->elems : 0;
            worst = lim > 0 ? sqrt(ss_d) / lim : INFINITY;
        }
        elems += r->elems;
        failing += fails;
        if (fails) bad = 1;
        if (max_abs > all_abs) all_abs = max_abs;
        if (max_rel > all_rel) all_rel = max_rel;
        if (worst > all_ratio) {
            all_ratio = worst;
            all_worst = r->name;
        }
        if (norm > 0 && (!quiet || fails)) {
            printf("%-4s %-32s %-12s |got - ref| / |ref| = %.3e (%.3g of tol; norm %g)\n", fails ? "FAIL" : "ok",
                   r->name, rs, nrel, worst, norm);
        } else if (!quiet || fails) {
            index_str(r, worst_i, is, sizeof is);
            printf("%-4s %-32s %-12s max_abs %.3e max_rel %.3e worst %s ref %.9g got %.9g (%.3g of tol)\n",
                   fails ? "FAIL" : "ok", r->name, rs, max_abs, max_rel, is, (double)r->data[worst_i],
                   (double)g->data[worst_i], worst);
            if (fails)
                printf("     %lld of %lld elements outside |got - ref| <= %g + %g |ref|\n", (long long)fails,
                       (long long)r->elems, atol, rtol);
        }
    }
    printf("%s: %u tensors, %lld elements, max_abs %.3e, max_rel %.3e, worst %.3g of tol (%s); rtol %g atol %g\n",
           bad ? "FAIL" : "PASS", n, (long long)elems, all_abs, all_rel, all_ratio, all_worst, rtol, atol);
    if (failing) printf("%lld elements out of tolerance\n", (long long)failing);
    free_file(&ref);
    free_file(&got);
    return bad;
}

/* The loss of the first line holding `"loss":` in the text file; returns 0 or 2. */
static int read_json_loss(const char *path, double *loss) {
    size_t size;
    unsigned char *b = slurp(path, &size);
    if (!b) return 2;
    char *s = malloc(size + 1);
    if (!s) {
        free(b);
        return 2;
    }
    memcpy(s, b, size);
    s[size] = 0;
    free(b);
    char *p = strstr(s, "\"loss\":");
    int rc = 2;
    if (p) {
        char *end;
        *loss = strtod(p + 7, &end);
        if (end != p + 7) rc = 0;
    }
    if (rc) fprintf(stderr, "tensor_compare: no \"loss\": value in %s\n", path);
    free(s);
    return rc;
}

static int compare_loss(const char *ref_path, const char *out_path, double rtol, double atol) {
    double ref, got;
    size_t size;
    unsigned char *b = slurp(ref_path, &size);
    if (!b) return 2;
    char txt[64];
    size_t n = size < sizeof txt - 1 ? size : sizeof txt - 1;
    memcpy(txt, b, n);
    txt[n] = 0;
    free(b);
    char *end;
    ref = strtod(txt, &end);
    if (end == txt) {
        fprintf(stderr, "tensor_compare: %s holds no number\n", ref_path);
        return 2;
    }
    if (read_json_loss(out_path, &got)) return 2;
    double q = ratio(ref, got, rtol, atol);
    int bad = !(q <= 1);
    printf("%s loss: ref %.9g got %.9g abs %.3e rel %.3e (%.3g of tol; rtol %g atol %g)\n", bad ? "FAIL" : "PASS", ref,
           got, fabs(got - ref), ref != 0 ? fabs(got - ref) / fabs(ref) : 0.0, q, rtol, atol);
    return bad;
}

static int parse_tol(const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return !*s || *end || errno || !(*v >= 0) || !isfinite(*v);
}

int main(int argc, char **argv) {
    double rtol = 1e-4, atol = 2e-6, norm = 0;
    int loss_mode = 0, quiet = 0;
    const char *pos[2];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--rtol") || !strcmp(a, "--atol")) {
            if (i + 1 >= argc || parse_tol(argv[i + 1], a[2] == 'r' ? &rtol : &atol)) {
                fprintf(stderr, "tensor_compare: %s needs a non-negative number\n", a);
                return usage();
            }
            i++;
        } else if (!strcmp(a, "--norm")) {
            if (i + 1 >= argc || parse_tol(argv[i + 1], &norm) || norm <= 0) {
                fprintf(stderr, "tensor_compare: --norm needs a positive number\n");
                return usage();
            }
            i++;
        } else if (!strcmp(a, "--loss")) {
            loss_mode = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tensor_compare: unknown option '%s'\n", a);
            return usage();
        } else if (npos < 2) {
            pos[npos++] = a;
        } else {
            return usage();
        }
    }
    if (npos != 2) return usage();
    return loss_mode ? compare_loss(pos[0], pos[1], rtol, atol)
                     : compare_files(pos[0], pos[1], rtol, atol, norm, quiet);
}
