/* test_frontend_fuzz.c - a deterministic mini-fuzzer of the front end that
 * always runs (libFuzzer's tests/fuzz/fuzz_frontend.c needs clang): the shipped
 * models (the .acdsl files of models/, from the repository root) mutated by byte
 * flips, inserted tokens, deletions, duplications, truncations, random bytes
 * and extreme numbers, a fixed number of times from a fixed seed, each through
 * fe_load_source with its messages sent to /dev/null. It checks that every call
 * returns, that a file with errors leaves no loss and a clean one a verified
 * graph; under ACC_SANITIZE, ASan/UBSan/LeakSanitizer check the rest.
 *
 * ACC_FUZZ_ITERS=N overrides the iteration count, ACC_FUZZ_SEED=N the seed;
 * a failing iteration prints its number and writes its input to
 * frontend_fuzz_failure.acdsl (in the working directory).
 */
#include "frontend.h"
#include "test.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_ITERS = 5000, MAX_FILES = 32, MAX_LEN = 1 << 16 };

static uint64_t rng_state;

static uint64_t rng(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static size_t below(size_t n) { return n ? (size_t)(rng() % n) : 0; }

/* Tokens worth inserting: keywords, ops, punctuation, odd literals, comment
 * and string openers, names the models use. */
/* clang-format off */
static const char *const tokens[] = {
    "model", "hparam", "input", "param", "block", "repeat", "as", "return", "loss", "save", "recompute",
    "true", "false", "@save", "@recompute", "@nope", "matmul", "add", "gelu", "relu", "silu", "tanh", "exp",
    "sigmoid", "log", "gelu_erf", "shift", "where", "max", "min", "exact=", "beta=",
    "layernorm", "rmsnorm", "softmax", "attention", "rope", "embedding", "cross_entropy", "dropout", "reshape",
    "transpose", "slice", "concat", "sum", "mean", "split", "sqrt", "scale", "zeros", "ones", "normal", "uniform",
    "f32", "i32", "bf16", "f16", "heads=", "axis=", "shape=", "p=", "eps=", "causal=", "transpose_b=",
    "kv_heads=", "start=", "len=", "keepdim=", "x", "y", "C", "L", "H", "T", "B", "V", "layers", "mlp", "attn",
    "(", ")", "[", "]", "{", "}", ",", ";", ":", "=", "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "\"", "/*", "*/", "#", "//",
    "\n", " ", "0", "1", "-1", "3", "100000", "100001", "1099511627776", "4611686018427387904",
    "9223372036854775807", "99999999999999999999", "0.0", "1e999", "1e-400", ".5", "2.5", "\"*\"", "\"\"",
    "\"layers.*\"", "\xff", "\x80\x80", "\x00", "\t", "\r",
};
/* clang-format on */

typedef struct {
    char *data;
    size_t len;
} Buf;

static void insert(Buf *b, size_t at, const char *s, size_t n) {
    if (b->len + n > MAX_LEN) return;
    memmove(b->data + at + n, b->data + at, b->len - at);
    memcpy(b->data + at, s, n);
    b->len += n;
}

static void mutate(Buf *b, const Buf *files, int n_files) {
    size_t at = below(b->len + 1);
    switch (below(10)) {
    case 0: /* flip bits of one byte */
        if (b->len) b->data[below(b->len)] ^= (char)(1u << below(8));
        break;
    case 1: /* overwrite a byte with anything */
        if (b->len) b->data[below(b->len)] = (char)below(256);
        break;
    case 2:
    case 3: { /* insert a token */
        const char *t = tokens[below(sizeof tokens / sizeof *tokens)];
        insert(b, at, t, t[0] ? strlen(t) : 1);
        break;
    }
    case 4: { /* delete a range */
        size_t n = below(b->len - at < 64 ? b->len - at + 1 : 64);
        memmove(b->data + at, b->data + at + n, b->len - at - n);
        b->len -= n;
        break;
    }
    case 5: { /* duplicate a range */
        size_t n = below(b->len - at < 256 ? b->len - at + 1 : 256);
        char tmp[256];
        memcpy(tmp, b->data + at, n);
        insert(b, below(b->len + 1), tmp, n);
        break;
    }
    case 6: /* truncate */ b->len = at; break;
    case 7: { /* random bytes */
        char tmp[16];
        size_t n = 1 + below(sizeof tmp);
        for (size_t i = 0; i < n; i++) tmp[i] = (char)below(256);
        insert(b, at, tmp, n);
        break;
    }
    case 8: { /* splice in a line of another file */
        const Buf *o = &files[below((size_t)n_files)];
        size_t from = below(o->len + 1), n = 0;
        while (from + n < o->len && o->data[from + n] != '\n' && n < 200) n++;
        insert(b, at, o->data + from, n + (from + n < o->len));
        break;
    }
    case 9: /* turn a digit into a big number */
        for (size_t i = at; i < b->len; i++)
            if (b->data[i] >= '0' && b->data[i] <= '9') {
                static const char *const big[] = {"00000", "99999", "0", "1048576", "4294967296"};
                const char *s = big[below(5)];
                insert(b, i + 1, s, strlen(s));
                break;
            }
        break;
    }
}

static int load_models(Buf *files) {
    DIR *dir = opendir("models");
    if (!dir) return 0;
    char *names[MAX_FILES];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dir)) && n < MAX_FILES) {
        size_t k = strlen(de->d_name);
        if (k > 6 && !strcmp(de->d_name + k - 6, ".acdsl")) names[n++] = strdup(de->d_name);
    }
    closedir(dir);
    /* sorted, so that the run does not depend on the directory order */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    int loaded = 0;
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "models/%s", names[i]);
        free(names[i]);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        Buf *b = &files[loaded];
        b->data = malloc(MAX_LEN);
        b->len = fread(b->data, 1, MAX_LEN, f);
        fclose(f);
        loaded++;
    }
    return loaded;
}

int main(void) {
    const char *env = getenv("ACC_FUZZ_ITERS");
    long iters = env ? strtol(env, NULL, 10) : DEFAULT_ITERS;
    env = getenv("ACC_FUZZ_SEED");
    rng_state = env ? (strtoull(env, NULL, 10) + 1) * 0x9e3779b97f4a7c15ull : 0x9e3779b97f4a7c15ull;
    Buf files[MAX_FILES];
    int n_files = load_models(files);
    if (!ASSERT_TRUE(n_files > 0)) {
        printf("no models to mutate: run from the repository root\n");
        TEST_DONE();
    }
    FILE *null = fopen("/dev/null", "w");
    if (!ASSERT_TRUE(null != NULL)) TEST_DONE();

    /* each unmutated model loads cleanly */
    for (int i = 0; i < n_files; i++) {
        Graph g;
        graph_init(&g, "model");
        ASSERT(0, fe_load_source("model.acdsl", files[i].data, files[i].len, NULL, 0, &g, null));
        ASSERT_TRUE(g.loss >= 0);
        graph_free(&g);
    }

    Buf b = {malloc(MAX_LEN), 0};
    long clean = 0;
    for (long it = 0; it < iters; it++) {
        const Buf *src = &files[below((size_t)n_files)];
        memcpy(b.data, src->data, src->len);
        b.len = src->len;
        int n_mut = 1 + (int)below(4);
        for (int m = 0; m < n_mut; m++) mutate(&b, files, n_files);
        /* now and then a -D: a good one, an unknown name, a mistyped value */
        static const Define defs[] = {{"L", "1"}, {"C", "abc"}, {"NOPE", "1"}, {"P", "true"}, {"H", "0"}};
        int n_defs = below(4) == 0 ? 1 + (int)below(2) : 0;
        size_t d0 = below(4);
        Graph g;
        graph_init(&g, "model");
        int errs = fe_load_source("fuzz.acdsl", b.data, b.len, defs + d0, n_defs, &g, null);
        bool ok = errs >= 0 && (errs > 0 || (g.loss >= 0 && ir_verify(&g, null)));
        if (!ASSERT_TRUE(ok)) {
            printf("iteration %ld failed (errors %d); its input is in frontend_fuzz_failure.acdsl\n", it, errs);
            FILE *f = fopen("frontend_fuzz_failure.acdsl", "wb");
            if (f) {
                fwrite(b.data, 1, b.len, f);
                fclose(f);
            }
            graph_free(&g);
            break;
        }
        clean += errs == 0;
        graph_free(&g);
    }
    printf("%ld mutated inputs, %ld of them valid models\n", iters, clean);
    free(b.data);
    for (int i = 0; i < n_files; i++) free(files[i].data);
    fclose(null);
    TEST_DONE();
}
