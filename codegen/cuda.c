/* cuda.c - the cuda target's kernel images: NVRTC at compile time.
 *
 * requires: the runtime's CUDA sources (kernels.cu, abi.h, philox.h, ew_ops.h, acc_ops.h) under
 * cg_runtime_include(). provides: DIR/<model>_images.c with one CUBIN per
 * requested architecture and PTX for the newest (so a newer GPU can JIT it),
 * embedded in the model's library, so that no compiler is needed when the
 * trainer starts; DIR/kernels.txt with NVRTC's version and options and
 * ptxas's resource report per kernel; a JSON summary for plan.json.
 * Output is deterministic for a given NVRTC (its version is recorded).
 * Without NVRTC at build time (no CUDA Toolkit) every call fails with a
 * sentence saying so.
 *
 * The images do not depend on the model: NVRTC compiles the runtime's
 * kernels.cu, whatever the graph. So each image and its ptxas report are
 * kept in a cache directory under a 128-bit hash of everything NVRTC is
 * given (source, headers, options, architecture, NVRTC's version), and a
 * later compile with the same inputs reads them back instead of spending a
 * minute in NVRTC. An entry carries its key and a hash of its content and
 * is used only when both match; anything else is compiled again and the
 * entry rewritten (through a temporary file renamed into place, so
 * concurrent compiles never see half an entry). ACC_CACHE_DIR names the
 * directory (default $XDG_CACHE_HOME/acc, else $HOME/.cache/acc); "off"
 * turns the cache off. The cache never changes what is written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen.h"

#ifdef ACC_HAVE_NVRTC
#include <nvrtc.h>

static char *read_all(const char *path, FILE *err) {
    char msg[512];
    size_t len;
    char *s = acc_read_file(path, SIZE_MAX, &len, NULL, msg, sizeof msg);
    if (!s) fprintf(err, "acc: error: %s (set ACC_RUNTIME_DIR)\n", msg);
    return s;
}

typedef struct {
    char arch[16];
    int sm, ptx;
    char *data;
    size_t size;
} Image;

/* Print the numbered source, as NVRTC failures should be reported. */
static void print_numbered(const char *src, FILE *err) {
    int line = 1;
    fprintf(err, "%5d  ", line);
    for (const char *p = src; *p; p++) {
        fputc(*p, err);
        if (*p == '\n' && p[1]) fprintf(err, "%5d  ", ++line);
    }
}

/* One NVRTC compilation of kernels.cu for arch ("sm_90" -> CUBIN,
 * "compute_90" -> PTX); the ptxas report goes to report. */
static int compile_nvrtc(const char *src, const char *const *hdr_src, const char *const *hdr_name, Image *im,
                         FILE *report, int *spills, FILE *err) {
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src, "kernels.cu", 4, hdr_src, hdr_name) != NVRTC_SUCCESS) {
        fprintf(err, "acc: error: NVRTC cannot create a program\n");
        return -1;
    }
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%.15s", im->arch);
    const char *opts[] = {arch_opt, "--std=c++17", "-default-device", "--ptxas-options=-v"}; /* no ptxas for PTX */
    nvrtcResult r = nvrtcCompileProgram(prog, im->ptx ? 3 : 4, opts);
    size_t log_n = 0;
    nvrtcGetProgramLogSize(prog, &log_n);
    char *log = malloc(log_n + 1);
    if (log) {
        log[0] = 0;
        nvrtcGetProgramLog(prog, log);
    }
    if (r != NVRTC_SUCCESS) {
        fprintf(err, "acc: error: NVRTC failed for %s: %s\n%s\nthe source (kernels.cu):\n", im->arch,
                nvrtcGetErrorString(r), log ? log : "");
        print_numbered(src, err);
        free(log);
        nvrtcDestroyProgram(&prog);
        return -1;
    }
    /* ptxas -v: "Compiling entry function 'ck_x' for 'sm_90'", then its
     * stack/spill line and its "Used N registers" line */
    if (!im->ptx && log) {
        fprintf(report, "\n%s:\n", im->arch);
        char fn[128] = "?";
        for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
            char *q = strstr(line, "entry function '");
            long st = 0, ld = 0;
            if (q && sscanf(q, "entry function '%127[^']'", fn) == 1) continue;
            if ((q = strstr(line, "bytes spill stores"))) {
                char *p = strstr(line, "stack frame,");
                if (p && sscanf(p, "stack frame, %ld bytes spill stores, %ld bytes spill loads", &st, &ld) == 2 &&
                    (st || ld)) {
                    fprintf(err, "acc: error: kernel %s spills on %s (%ld bytes stored, %ld loaded)\n", fn, im->arch,
                            st, ld);
                    (*spills)++;
                }
                fprintf(report, "  %-24s spill stores %ld, spill loads %ld\n", fn, st, ld);
            } else if ((q = strstr(line, "Used "))) {
                fprintf(report, "  %-24s %s\n", fn, q);
            }
        }
    }
    free(log);
    size_t n = 0;
    r = im->ptx ? nvrtcGetPTXSize(prog, &n) : nvrtcGetCUBINSize(prog, &n);
    im->data = r == NVRTC_SUCCESS ? malloc(n + 1) : NULL;
    if (im->data) r = im->ptx ? nvrtcGetPTX(prog, im->data) : nvrtcGetCUBIN(prog, im->data);
    nvrtcDestroyProgram(&prog);
    if (!im->data || r != NVRTC_SUCCESS) {
        fprintf(err, "acc: error: NVRTC produced no image for %s\n", im->arch);
        return -1;
    }
    if (im->ptx) im->data[n++] = 0; /* PTX is loaded as a C string */
    im->size = n;
    return 0;
}

/* ---- the image cache ---------------------------------------------------------- */

__extension__ typedef unsigned __int128 u128;

/* FNV-1a over 128 bits: h mixed with n bytes of p, then with n itself (so
 * the parts of a key cannot slide into each other). */
static u128 fnv128(u128 h, const void *p, size_t n) {
    const u128 prime = ((u128)1 << 88) | 0x13b;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * prime;
    for (int i = 0; i < 8; i++) h = (h ^ (unsigned char)(n >> 8 * i)) * prime;
    return h;
}
#define FNV128_BASIS (((u128)0x6c62272e07bb0142ULL << 64) | 0x62b821756295c58dULL)

static void hex128(u128 h, char out[33]) {
    snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, (uint64_t)(h >> 64), (uint64_t)h);
}

/* The cache directory (created), or NULL: off, no home, or not creatable. */
static const char *cache_dir(char *buf, size_t n) {
    const char *env = getenv("ACC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && !strcmp(env, "off")) return NULL;
    int k = env && *env     ? snprintf(buf, n, "%s", env)
            : xdg && *xdg   ? snprintf(buf, n, "%s/acc", xdg)
            : home && *home ? snprintf(buf, n, "%s/.cache/acc", home)
                            : -1;
    if (k <= 0 || (size_t)k >= n) return NULL;
    for (char *q = buf + 1; *q; q++) /* mkdir -p */
        if (*q == '/') {
            *q = 0;
            int bad = mkdir(buf, 0777) && errno != EEXIST;
            *q = '/';
            if (bad) return NULL;
        }
    return mkdir(buf, 0777) && errno != EEXIST ? NULL : buf;
}

/* An entry: "acc-kernel-cache 1 KEY ARCH REPORT_BYTES IMAGE_BYTES SUM\n",
 * then the report, then the image; SUM hashes the two. */
static int cache_read(const char *path, const char *key, Image *im, FILE *report) {
    char msg[256];
    size_t len;
    char *f = acc_read_file(path, (size_t)1 << 30, &len, NULL, msg, sizeof msg);
    if (!f) return -1;
    char k[40], arch[20], sum[40];
    size_t nr = 0, ni = 0;
    const char *eol = memchr(f, '\n', len < 200 ? len : 200);
    size_t hl = eol ? (size_t)(eol - f) + 1 : 0; /* the header line; the report may start with white space */
    int ok = 0;
    if (hl && sscanf(f, "acc-kernel-cache 1 %39s %19s %zu %zu %39s", k, arch, &nr, &ni, sum) == 5 && !strcmp(k, key) &&
        !strcmp(arch, im->arch) && nr <= len && ni <= len && hl + nr + ni == len && ni > 0) {
        char want[33];
        hex128(fnv128(fnv128(FNV128_BASIS, f + hl, nr), f + hl + nr, ni), want);
        ok = !strcmp(sum, want) && (im->data = malloc(ni + 1)) != NULL;
    }
    if (ok) {
        memcpy(im->data, f + hl + nr, ni);
        im->size = ni;
        fwrite(f + hl, 1, nr, report);
    }
    free(f);
    return ok ? 0 : -1;
}

static void cache_write(const char *path, const char *key, const Image *im, const char *rep, size_t nr) {
    char tmp[2300], sum[33];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    hex128(fnv128(fnv128(FNV128_BASIS, rep, nr), im->data, im->size), sum);
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    int bad = fprintf(f, "acc-kernel-cache 1 %s %s %zu %zu %s\n", key, im->arch, nr, im->size, sum) < 0 ||
              fwrite(rep, 1, nr, f) != nr || fwrite(im->data, 1, im->size, f) != im->size;
    if (fclose(f) || bad || rename(tmp, path)) remove(tmp);
}

/* The image for im->arch: from the cache when it holds one for exactly
 * these inputs, else from NVRTC (and then kept). */
static int compile_one(const char *src, const char *const *hdr_src, const char *const *hdr_name, Image *im,
                       FILE *report, int *spills, FILE *err) {
    char dirbuf[2048], path[2200], key[33];
    const char *dir = cache_dir(dirbuf, sizeof dirbuf);
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    char head[128];
    int hn = snprintf(head, sizeof head, "NVRTC %d.%d --std=c++17 -default-device --ptxas-options=-v %s", major, minor,
                      im->arch);
    u128 h = fnv128(fnv128(FNV128_BASIS, head, (size_t)hn), src, strlen(src));
    for (int i = 0; i < 4; i++) h = fnv128(fnv128(h, hdr_name[i], strlen(hdr_name[i])), hdr_src[i], strlen(hdr_src[i]));
    hex128(h, key);
    int pn = dir ? snprintf(path, sizeof path, "%s/%s-%.15s.img", dir, key, im->arch) : -1;
    if (pn <= 0 || (size_t)pn >= sizeof path) dir = NULL;
    if (dir && !cache_read(path, key, im, report)) return 0;
    char *rep = NULL;
    size_t nr = 0;
    FILE *mem = open_memstream(&rep, &nr);
    if (!mem) return compile_nvrtc(src, hdr_src, hdr_name, im, report, spills, err);
    int before = *spills, rc = compile_nvrtc(src, hdr_src, hdr_name, im, mem, spills, err);
    if (fclose(mem)) rc = -1;
    if (rep) fwrite(rep, 1, nr, report);
    if (!rc && dir && *spills == before) cache_write(path, key, im, rep ? rep : "", rep ? nr : 0);
    free(rep);
    return rc;
}

/* n bytes as C string literals, 64 bytes a line: printable characters as
 * themselves, the rest as three-digit octal escapes (so no digit after one
 * can extend it; '?' too, against trigraphs). A compiler reads a string
 * literal many times faster than a list of numbers: the 19.6 MB of GPT-2's
 * three images took cc about 40 s as numbers. The array is declared with
 * the exact size, so the literal's closing NUL is not stored. */
static void write_bytes(FILE *c, const unsigned char *p, size_t n) {
    for (size_t k = 0; k < n; k++) {
        if (k % 64 == 0) fputs(k ? "\"\n    \"" : "\n    \"", c);
        unsigned char b = p[k];
        if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\' && b != '?') fputc(b, c);
        else fprintf(c, "\\%03o", b);
    }
    fputs(n ? "\"" : "\n    \"\"", c);
}

/* "sm_80,sm_90" -> images; the last architecture also as PTX. */
static int parse_archs(const char *archs, Image *im, int max, FILE *err) {
    int n = 0;
    for (const char *p = archs; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int sm = 0;
        char tail = 0;
        if (n >= max - 1 || len >= 16 || sscanf(p, "sm_%d%c", &sm, &tail) < 1 || (tail && tail != ',') || sm < 50 ||
            sm > 200) {
            fprintf(err, "acc: error: invalid --arch '%s' (a list like sm_80,sm_90)\n", archs);
            return -1;
        }
        snprintf(im[n].arch, sizeof im[n].arch, "sm_%d", sm);
        im[n].sm = sm, im[n].ptx = 0;
        n++;
        p += len + (e != NULL);
    }
    if (!n) {
        fprintf(err, "acc: error: --arch names no architecture\n");
        return -1;
    }
    int newest = 0;
    for (int i = 1; i < n; i++)
        if (im[i].sm > im[newest].sm) newest = i;
    snprintf(im[n].arch, sizeof im[n].arch, "compute_%d", im[newest].sm);
    im[n].sm = im[newest].sm, im[n].ptx = 1;
    return n + 1;
}

int cg_cuda_images(Graph *g, const char *dir, const char *archs, const char **json, FILE *err) {
    char path[4200];
    const char *rt = cg_runtime_include();
    snprintf(path, sizeof path, "%s/cuda/kernels.cu", rt);
    char *src = read_all(path, err);
    snprintf(path, sizeof path, "%s/cuda/abi.h", rt);
    char *abi = src ? read_all(path, err) : NULL;
    snprintf(path, sizeof path, "%s/philox.h", rt);
    char *philox = abi ? read_all(path, err) : NULL;
    snprintf(path, sizeof path, "%s/ew_ops.h", rt);
    char *ew = philox ? read_all(path, err) : NULL;
    snprintf(path, sizeof path, "%s/acc_ops.h", rt);
    char *ops = ew ? read_all(path, err) : NULL;
    Image im[17];
    memset(im, 0, sizeof im);
    int n = ops ? parse_archs(archs, im, 17, err) : -1, rc = n < 0 ? -1 : 0, spills = 0, major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    snprintf(path, sizeof path, "%s/kernels.txt", dir);
    FILE *report = rc ? NULL : fopen(path, "w");
    if (!rc && !report) {
        fprintf(err, "acc: error: cannot write %s: %s\n", path, strerror(errno));
        rc = -1;
    }
    if (report)
        fprintf(report, "NVRTC %d.%d, options --ptxas-options=-v --std=c++17 -default-device; images:", major, minor);
    for (int i = 0; report && i < n; i++) fprintf(report, " %s", im[i].arch);
    if (report) fprintf(report, "\n");
    const char *hdr_src[] = {abi, philox, ew, ops}, *hdr_name[] = {"abi.h", "philox.h", "ew_ops.h", "acc_ops.h"};
    for (int i = 0; !rc && i < n; i++) rc = compile_one(src, hdr_src, hdr_name, &im[i], report, &spills, err);
    if (report && fclose(report)) rc = -1;
    if (!rc && spills) rc = -1;
    snprintf(path, sizeof path, "%s/%s_images.c", dir, g->model);
    FILE *c = rc ? NULL : fopen(path, "w");
    if (!rc && !c) {
        fprintf(err, "acc: error: cannot write %s: %s\n", path, strerror(errno));
        rc = -1;
    }
    if (c) {
        fprintf(c,
                "/* %s_images.c - generated by acc %s: the CUDA kernels compiled by NVRTC %d.%d; do not edit. */\n"
                "#include \"accrt.h\"\n\n",
                g->model, ACC_VERSION, major, minor);
        for (int i = 0; i < n; i++) {
            fprintf(c, "static const unsigned char img_%s[%zu] =", im[i].arch, im[i].size);
            write_bytes(c, (const unsigned char *)im[i].data, im[i].size);
            fprintf(c, ";\n");
        }
        fprintf(c, "\nconst acc_image %s_images[%d] = {\n", g->model, n);
        for (int i = 0; i < n; i++)
            fprintf(c, "    {%d, %d, img_%s, sizeof img_%s},\n", im[i].sm, im[i].ptx, im[i].arch, im[i].arch);
        fprintf(c, "};\n");
        if (fclose(c)) rc = -1;
    }
    if (!rc) {
        char buf[512];
        int k = snprintf(buf, sizeof buf,
                         "{\"nvrtc\": \"%d.%d\", \"options\": \"--ptxas-options=-v --std=c++17 "
                         "-default-device\", \"images\": [",
                         major, minor);
        for (int i = 0; i < n && k > 0 && (size_t)k < sizeof buf; i++)
            k += snprintf(buf + k, sizeof buf - (size_t)k, "%s\"%s\"", i ? ", " : "", im[i].arch);
        if (k > 0 && (size_t)k < sizeof buf) snprintf(buf + k, sizeof buf - (size_t)k, "], \"spills\": 0}");
        *json = pool_strdup(&g->pool, buf);
    }
    for (int i = 0; i < n; i++) free(im[i].data);
    free(src);
    free(abi);
    free(philox);
    free(ew);
    free(ops);
    return rc ? -1 : n;
}

#else

int cg_cuda_images(Graph *g, const char *dir, const char *archs, const char **json, FILE *err) {
    (void)g, (void)dir, (void)archs, (void)json;
    fprintf(err, "acc: error: this acc was built without the CUDA Toolkit, so it has no NVRTC to compile the cuda "
                 "target's kernels: install the Toolkit and rebuild acc (or use --target cuda-emu or cpu)\n");
    return -1;
}

#endif
