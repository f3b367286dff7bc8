/* dag_json.c - read a published computation graph (networkx node-link JSON).
 *
 * requires: the bytes of a file. provides: a Dag (passes.h) renumbered in a
 * topological order, or a message naming the byte offset (and line, column)
 * of the first problem. A small JSON reader of its own (RFC 8259: objects,
 * arrays, strings with every escape, numbers, literals; nesting depth
 * bounded, so no input can exhaust the stack), then the two node schemas of
 * the papers' data:
 *   Checkmate: {"id": 3, "name": "...", "cost_cpu": 120, "cost_ram": 822083584,
 *               "backward": false}, links {"source": 2, "target": 3}
 *   random layered graphs (MOCCASIN): {"name": 3, "duration": 45,
 *               "out_cost": 790}, links {"0": 2, "1": 3}
 * "edges" is accepted for "links" (newer networkx). The order: graph.order
 * when the file gives one (MOCCASIN's convention for its random graphs), else
 * the ids when they are a topological order (Checkmate's graphs), else a
 * topological sort that keeps ids ascending where it can.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define JSON_MAX_DEPTH 256
#define JSON_MAX_BYTES ((size_t)1 << 30)

typedef enum { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ } JKind;

typedef struct JVal JVal;
struct JVal {
    JKind kind;
    size_t off;      /* byte offset of its first character */
    double num;      /* J_NUM */
    bool integral;   /* J_NUM written without fraction or exponent */
    const char *str; /* J_STR: decoded, NUL-terminated (may contain NUL) */
    size_t len;
    int n;             /* J_ARR, J_OBJ: members */
    JVal *items;       /* [n] */
    const char **keys; /* J_OBJ: [n] */
};

typedef struct {
    const char *s;
    size_t len, pos;
    Pool *pool;
    char *err;
    size_t err_len;
    bool failed;
} JParser;

/* "byte 12 (line 1, column 13): msg" for offset off. */
static void vset_error(const char *text, size_t len, size_t off, char *err, size_t err_len, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));
static void vset_error(const char *text, size_t len, size_t off, char *err, size_t err_len, const char *fmt,
                       va_list ap) {
    int line = 1, col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') line++, col = 1;
        else col++;
    }
    char msg[400];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(err, err_len, "byte %zu (line %d, column %d): %s", off, line, col, msg);
}

static bool jfail(JParser *p, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool jfail(JParser *p, size_t off, const char *fmt, ...) {
    if (p->failed) return false;
    va_list ap;
    va_start(ap, fmt);
    vset_error(p->s, p->len, off, p->err, p->err_len, fmt, ap);
    va_end(ap);
    p->failed = true;
    return false;
}

static void skip_ws(JParser *p) {
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* What the byte at pos is, for messages. */
static const char *describe(JParser *p, char *buf, size_t n) {
    if (p->pos >= p->len) return "the end of the input";
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c >= 0x21 && c < 0x7f) snprintf(buf, n, "'%c'", c);
    else snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

static int hex4(const char *s) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    return v;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xc0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3f)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xe0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
               o[2] = (char)(0x80 | (cp & 0x3f)), 3;
    o[0] = (char)(0xf0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* string = '"' chars '"'; pos at the opening quote. */
static bool parse_string(JParser *p, const char **out, size_t *out_len) {
    size_t start = p->pos++;
    size_t end = p->pos; /* find the closing quote to size the buffer */
    while (end < p->len && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->len) return jfail(p, start, "unterminated string");
    char *o = pool_alloc(p->pool, end - p->pos + 1);
    size_t k = 0;
    while (p->s[p->pos] != '"') {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c < 0x20) return jfail(p, p->pos, "control character 0x%02x in a string (escape it)", c);
        if (c != '\\') {
            o[k++] = (char)c, p->pos++;
            continue;
        }
        size_t esc = p->pos;
        char e = p->s[p->pos + 1];
        p->pos += 2;
        switch (e) {
        case '"': o[k++] = '"'; break;
        case '\\': o[k++] = '\\'; break;
        case '/': o[k++] = '/'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'u': {
            int cp = p->pos + 4 <= end ? hex4(p->s + p->pos) : -1;
            if (cp < 0) return jfail(p, esc, "\\u needs four hex digits");
            p->pos += 4;
            if (cp >= 0xd800 && cp < 0xdc00) { /* a high surrogate: its low half must follow */
                int lo =
                    p->pos + 6 <= end && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u' ? hex4(p->s + p->pos + 2) : -1;
                if (lo < 0xdc00 || lo > 0xdfff) return jfail(p, esc, "unpaired UTF-16 surrogate in \\u escape");
                p->pos += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                return jfail(p, esc, "unpaired UTF-16 surrogate in \\u escape");
            }
            k += put_utf8(o + k, (unsigned)cp); /* never longer than the escape it replaces */
            break;
        }
        default: return jfail(p, esc, "invalid escape '\\%c'", e >= 0x21 && e < 0x7f ? e : '?');
        }
    }
    p->pos++;
    o[k] = 0;
    *out = o;
    *out_len = k;
    return true;
}

/* number = '-'? int frac? exp? (RFC 8259 section 6) */
static bool parse_number(JParser *p, JVal *v) {
    size_t start = p->pos, i = p->pos;
    const char *s = p->s;
    bool integral = true;
    if (i < p->len && s[i] == '-') i++;
    if (i < p->len && s[i] == '0') i++;
    else if (i < p->len && s[i] >= '1' && s[i] <= '9')
        while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    else return jfail(p, start, "invalid number");
    if (i < p->len && s[i] == '.') {
        integral = false, i++;
        if (!(i < p->len && s[i] >= '0' && s[i] <= '9')) return jfail(p, start, "invalid number (digits after '.')");
        while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        integral = false, i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-')) i++;
        if (!(i < p->len && s[i] >= '0' && s[i] <= '9')) return jfail(p, start, "invalid number (exponent)");
        while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    }
    char buf[512];
    if (i - start >= sizeof buf) return jfail(p, start, "number too long");
    memcpy(buf, s + start, i - start);
    buf[i - start] = 0;
    errno = 0;
    v->num = strtod(buf, NULL);
    if (!isfinite(v->num)) return jfail(p, start, "number out of range");
    v->kind = J_NUM;
    v->integral = integral;
    p->pos = i;
    return true;
}

static bool parse_value(JParser *p, JVal *v, int depth);

/* array = '[' (value (',' value)*)? ']'; object likewise with "key": value */
static bool parse_container(JParser *p, JVal *v, int depth) {
    bool obj = p->s[p->pos] == '{';
    char close = obj ? '}' : ']';
    size_t open = p->pos++;
    if (depth >= JSON_MAX_DEPTH) return jfail(p, open, "nesting deeper than %d levels", JSON_MAX_DEPTH);
    VEC(JVal) items = {0};
    VEC(const char *) keys = {0};
    char what[32];
    skip_ws(p);
    bool ok = true;
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            skip_ws(p);
            if (obj) {
                if (p->pos >= p->len || p->s[p->pos] != '"') {
                    ok = jfail(p, p->pos, "expected a string key in object, found %s", describe(p, what, sizeof what));
                    break;
                }
                const char *key;
                size_t key_len;
                if (!(ok = parse_string(p, &key, &key_len))) break;
                VEC_PUSH(keys, key);
                skip_ws(p);
                if (p->pos >= p->len || p->s[p->pos] != ':') {
                    ok = jfail(p, p->pos, "expected ':' after object key, found %s", describe(p, what, sizeof what));
                    break;
                }
                p->pos++;
            }
            JVal item = {0};
            if (!(ok = parse_value(p, &item, depth + 1))) break;
            VEC_PUSH(items, item);
            skip_ws(p);
            if (p->pos < p->len && p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < p->len && p->s[p->pos] == close) {
                p->pos++;
                break;
            }
            ok = p->pos >= p->len ? jfail(p, open, "unterminated %s", obj ? "object" : "array")
                                  : jfail(p, p->pos, "expected ',' or '%c' in %s, found %s", close,
                                          obj ? "object" : "array", describe(p, what, sizeof what));
            break;
        }
    }
    if (ok) {
        v->kind = obj ? J_OBJ : J_ARR;
        v->n = items.n;
        v->items = pool_alloc(p->pool, (size_t)items.n * sizeof(JVal) + 1);
        if (items.n) memcpy(v->items, items.v, (size_t)items.n * sizeof(JVal));
        if (obj) {
            v->keys = pool_alloc(p->pool, (size_t)keys.n * sizeof(char *) + 1);
            if (keys.n) memcpy(v->keys, keys.v, (size_t)keys.n * sizeof(char *));
        }
    }
    VEC_FREE(items);
    VEC_FREE(keys);
    return ok;
}

static bool parse_literal(JParser *p, const char *word, JKind kind, JVal *v) {
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n)) return jfail(p, p->pos, "invalid literal");
    v->kind = kind;
    p->pos += n;
    return true;
}

static bool parse_value(JParser *p, JVal *v, int depth) {
    skip_ws(p);
    char what[32];
    v->off = p->pos;
    if (p->pos >= p->len) return jfail(p, p->pos, "expected a value, found the end of the input");
    switch (p->s[p->pos]) {
    case '{':
    case '[': return parse_container(p, v, depth);
    case '"': v->kind = J_STR; return parse_string(p, &v->str, &v->len);
    case 't': return parse_literal(p, "true", J_TRUE, v);
    case 'f': return parse_literal(p, "false", J_FALSE, v);
    case 'n': return parse_literal(p, "null", J_NULL, v);
    default:
        if (p->s[p->pos] == '-' || (p->s[p->pos] >= '0' && p->s[p->pos] <= '9')) return parse_number(p, v);
        return jfail(p, p->pos, "expected a value, found %s", describe(p, what, sizeof what));
    }
}

static const JVal *jget(const JVal *o, const char *key) {
    if (!o || o->kind != J_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->keys[i], key)) return &o->items[i];
    return NULL;
}

/* ---- the graph --------------------------------------------------------------- */

typedef struct {
    bool is_str;
    int64_t num;
    const char *str;
    int node; /* index in file order */
} Id;

static int id_cmp(const void *a, const void *b) {
    const Id *x = a, *y = b;
    if (x->is_str != y->is_str) return x->is_str ? 1 : -1;
    if (x->is_str) return strcmp(x->str, y->str);
    return x->num < y->num ? -1 : x->num > y->num;
}

/* by id, then file position (duplicates reported deterministically) */
static int id_node_cmp(const void *a, const void *b) {
    int c = id_cmp(a, b);
    return c ? c : ((const Id *)a)->node - ((const Id *)b)->node;
}

typedef struct {
    const char *text;
    size_t len;
    char *err;
    size_t err_len;
} GCtx;

static bool gfail(GCtx *c, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool gfail(GCtx *c, size_t off, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vset_error(c->text, c->len, off, c->err, c->err_len, fmt, ap);
    va_end(ap);
    return false;
}

/* An id: an integer or a string. */
static bool read_id(GCtx *c, const JVal *v, const char *what, Id *id) {
    *id = (Id){0};
    if (v && v->kind == J_NUM && v->integral && fabs(v->num) <= 9007199254740992.0) {
        id->is_str = false, id->num = (int64_t)v->num;
        return true;
    }
    if (v && v->kind == J_STR) {
        id->is_str = true, id->str = v->str;
        return true;
    }
    return gfail(c, v ? v->off : 0, "%s must be an integer or a string", what);
}

static bool read_number(GCtx *c, const JVal *node, int k, const char *const keys[2], bool integer, double *out) {
    const JVal *v = jget(node, keys[0]);
    const char *key = keys[0];
    if (!v) v = jget(node, keys[1]), key = keys[1];
    if (!v) return gfail(c, node->off, "node %d: missing '%s' (or '%s')", k, keys[0], keys[1]);
    if (v->kind != J_NUM || v->num < 0 || (integer && (!v->integral && v->num != floor(v->num))) ||
        (integer && v->num > 9007199254740992.0))
        return gfail(c, v->off, "node %d: '%s' must be a non-negative %s", k, key, integer ? "integer" : "number");
    *out = v->num;
    return true;
}

static const Id *find_id(const Id *sorted, int n, const Id *key) {
    const Id *r = bsearch(key, sorted, (size_t)n, sizeof *sorted, id_cmp);
    return r;
}

typedef struct {
    int src, dst;
} Edge;

static int edge_cmp(const void *a, const void *b) {
    const Edge *x = a, *y = b;
    return x->src != y->src ? (x->src > y->src) - (x->src < y->src) : (x->dst > y->dst) - (x->dst < y->dst);
}

/* Fill the CSR adjacency of d from edges already renumbered (src < dst). */
static void build_adjacency(Dag *d, Edge *e, int m) {
    int n = d->n;
    qsort(e, (size_t)m, sizeof *e, edge_cmp);
    int k = 0;
    for (int i = 0; i < m; i++)
        if (i == 0 || edge_cmp(&e[i], &e[i - 1])) e[k++] = e[i];
    m = k;
    d->n_edges = m;
    d->in_off = calloc((size_t)n + 1, sizeof(int));
    d->out_off = calloc((size_t)n + 1, sizeof(int));
    d->in = malloc((size_t)m * sizeof(int) + 1);
    d->out = malloc((size_t)m * sizeof(int) + 1);
    if (!d->in_off || !d->out_off || !d->in || !d->out) acc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < m; i++) d->in_off[e[i].dst + 1]++, d->out_off[e[i].src + 1]++;
    for (int i = 0; i < n; i++) d->in_off[i + 1] += d->in_off[i], d->out_off[i + 1] += d->out_off[i];
    int *fi = malloc(((size_t)n + 1) * sizeof(int)), *fo = malloc(((size_t)n + 1) * sizeof(int));
    if (!fi || !fo) acc_panic(__FILE__, __LINE__, "out of memory");
    memcpy(fi, d->in_off, (size_t)n * sizeof(int));
    memcpy(fo, d->out_off, (size_t)n * sizeof(int));
    /* edges sorted by (src, dst): users come out ascending; inputs too, since
     * for a fixed dst the srcs are visited in ascending order */
    for (int i = 0; i < m; i++) d->out[fo[e[i].src]++] = e[i].dst, d->in[fi[e[i].dst]++] = e[i].src;
    free(fi), free(fo);
}

static void dag_alloc(Dag *d, int n) {
    memset(d, 0, sizeof *d);
    d->n = n;
    d->cost = calloc((size_t)n + 1, sizeof(double));
    d->mem = calloc((size_t)n + 1, sizeof(int64_t));
    d->backward = calloc((size_t)n + 1, sizeof(bool));
    d->label = calloc((size_t)n + 1, sizeof(char *));
    if (!d->cost || !d->mem || !d->backward || !d->label) acc_panic(__FILE__, __LINE__, "out of memory");
}

static char *xstrdup(const char *s) {
    char *r = strdup(s);
    if (!r) acc_panic(__FILE__, __LINE__, "out of memory");
    return r;
}

/* Kahn's algorithm taking the smallest rank first (rank[i]: a preferred
 * position); fills pos[i] (new index of file node i). False on a cycle. */
static bool topo_sort(int n, const Edge *e, int m, const int *rank, int *pos) {
    int *indeg = calloc((size_t)n + 1, sizeof(int)), *off = calloc((size_t)n + 2, sizeof(int));
    int *adj = malloc((size_t)m * sizeof(int) + 1), *heap = malloc((size_t)n * sizeof(int) + 1);
    if (!indeg || !off || !adj || !heap) acc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < m; i++) indeg[e[i].dst]++, off[e[i].src + 1]++;
    for (int i = 0; i < n; i++) off[i + 1] += off[i];
    int *fill = malloc(((size_t)n + 1) * sizeof(int));
    if (!fill) acc_panic(__FILE__, __LINE__, "out of memory");
    memcpy(fill, off, (size_t)n * sizeof(int));
    for (int i = 0; i < m; i++) adj[fill[e[i].src]++] = e[i].dst;
    free(fill);
    int hn = 0, done = 0;
#define HLESS(a, b) (rank[heap[a]] < rank[heap[b]])
#define HSWAP(a, b)        \
    do {                   \
        int t_ = heap[a];  \
        heap[a] = heap[b]; \
        heap[b] = t_;      \
    } while (0)
    for (int i = 0; i < n; i++)
        if (!indeg[i]) {
            heap[hn] = i;
            for (int k = hn++; k > 0 && HLESS(k, (k - 1) / 2); k = (k - 1) / 2) HSWAP(k, (k - 1) / 2);
        }
    while (hn) {
        int v = heap[0];
        heap[0] = heap[--hn];
        for (int k = 0;;) {
            int l = 2 * k + 1, r = l + 1, s = k;
            if (l < hn && HLESS(l, s)) s = l;
            if (r < hn && HLESS(r, s)) s = r;
            if (s == k) break;
            HSWAP(k, s);
            k = s;
        }
        pos[v] = done++;
        for (int j = off[v]; j < off[v + 1]; j++)
            if (!--indeg[adj[j]]) {
                heap[hn] = adj[j];
                for (int k = hn++; k > 0 && HLESS(k, (k - 1) / 2); k = (k - 1) / 2) HSWAP(k, (k - 1) / 2);
            }
    }
#undef HLESS
#undef HSWAP
    free(indeg), free(off), free(adj), free(heap);
    return done == n;
}

static bool build_graph(GCtx *c, const JVal *root, Dag *d) {
    if (root->kind != J_OBJ) return gfail(c, root->off, "expected a JSON object (networkx node-link data)");
    const JVal *directed = jget(root, "directed");
    if (directed && directed->kind == J_FALSE) return gfail(c, directed->off, "the graph is undirected");
    const JVal *nodes = jget(root, "nodes");
    if (!nodes) return gfail(c, root->off, "no \"nodes\" array");
    if (nodes->kind != J_ARR) return gfail(c, nodes->off, "\"nodes\" must be an array");
    const JVal *links = jget(root, "links");
    if (!links) links = jget(root, "edges");
    if (!links) return gfail(c, root->off, "no \"links\" (or \"edges\") array");
    if (links->kind != J_ARR) return gfail(c, links->off, "\"links\" must be an array");
    int n = nodes->n;
    if (n <= 0) return gfail(c, nodes->off, "the graph has no nodes");
    Id *ids = calloc((size_t)n, sizeof(Id)), *sorted = calloc((size_t)n, sizeof(Id));
    double *cost = calloc((size_t)n, sizeof(double)), *mem = calloc((size_t)n, sizeof(double));
    bool *bwd = calloc((size_t)n, sizeof(bool));
    Edge *e = malloc((size_t)links->n * sizeof(Edge) + 1);
    int *rank = malloc((size_t)n * sizeof(int)), *pos = malloc((size_t)n * sizeof(int));
    if (!ids || !sorted || !cost || !mem || !bwd || !e || !rank || !pos) acc_panic(__FILE__, __LINE__, "out of memory");
    bool ok = true;
    double mem_total = 0; /* exact: each size is an integer below 2^53 and the total at most 2^58 */
    static const char *const cost_keys[2] = {"cost_cpu", "duration"}, *const mem_keys[2] = {"cost_ram", "out_cost"};
    for (int k = 0; ok && k < n; k++) {
        const JVal *x = &nodes->items[k];
        if (x->kind != J_OBJ) {
            ok = gfail(c, x->off, "node %d: expected an object", k);
            break;
        }
        const JVal *id = jget(x, "id");
        if (!id) id = jget(x, "name");
        if (!id) {
            ok = gfail(c, x->off, "node %d: no \"id\" (or \"name\")", k);
            break;
        }
        char what[48];
        snprintf(what, sizeof what, "node %d: its id", k);
        ok = read_id(c, id, what, &ids[k]) && read_number(c, x, k, cost_keys, false, &cost[k]) &&
             read_number(c, x, k, mem_keys, true, &mem[k]);
        ids[k].node = k;
        const JVal *b = jget(x, "backward");
        if (ok && b && b->kind != J_TRUE && b->kind != J_FALSE && b->kind != J_NULL)
            ok = gfail(c, b->off, "node %d: \"backward\" must be true, false or null", k);
        bwd[k] = b && b->kind == J_TRUE;
        if (ok && (mem_total += mem[k]) > (double)ACC_MAX_MODEL_BYTES)
            ok = gfail(c, x->off, "node %d: the nodes' sizes total more than 2^58 bytes (256 PiB)", k);
    }
    if (ok) {
        memcpy(sorted, ids, (size_t)n * sizeof(Id));
        qsort(sorted, (size_t)n, sizeof(Id), id_node_cmp);
        for (int k = 1; ok && k < n; k++)
            if (!id_cmp(&sorted[k - 1], &sorted[k]))
                ok = gfail(c, nodes->items[sorted[k].node].off, "node %d: duplicate id (also node %d)", sorted[k].node,
                           sorted[k - 1].node);
    }
    int m = 0;
    for (int k = 0; ok && k < links->n; k++) {
        const JVal *l = &links->items[k];
        if (l->kind != J_OBJ) {
            ok = gfail(c, l->off, "link %d: expected an object", k);
            break;
        }
        const JVal *s = jget(l, "source"), *t = jget(l, "target");
        if (!s) s = jget(l, "0");
        if (!t) t = jget(l, "1");
        if (!s || !t) {
            ok = gfail(c, l->off, "link %d: needs \"source\" and \"target\" (or \"0\" and \"1\")", k);
            break;
        }
        Id si, ti;
        char what[48];
        snprintf(what, sizeof what, "link %d: its source", k);
        if (!(ok = read_id(c, s, what, &si))) break;
        snprintf(what, sizeof what, "link %d: its target", k);
        if (!(ok = read_id(c, t, what, &ti))) break;
        const Id *a = find_id(sorted, n, &si), *b = find_id(sorted, n, &ti);
        if (!a || !b) {
            ok = gfail(c, (!a ? s : t)->off, "link %d: no node has this id", k);
            break;
        }
        if (a->node == b->node) {
            ok = gfail(c, l->off, "link %d: a node cannot read its own output", k);
            break;
        }
        e[m].src = a->node, e[m].dst = b->node, m++;
    }
    /* the order: graph.order, else the ids, else a topological sort */
    const char *order = NULL;
    const JVal *gr = jget(root, "graph");
    const JVal *go = ok ? jget(gr, "order") : NULL;
    if (ok && go) {
        if (go->kind != J_ARR || go->n != n) {
            ok = gfail(c, go->off, "graph.order must list each of the %d nodes once", n);
        } else {
            for (int k = 0; k < n; k++) pos[k] = -1;
            for (int k = 0; ok && k < n; k++) {
                Id x;
                const Id *f;
                if (!(ok = read_id(c, &go->items[k], "an entry of graph.order", &x))) break;
                if (!(f = find_id(sorted, n, &x))) ok = gfail(c, go->items[k].off, "graph.order: no node has this id");
                else if (pos[f->node] >= 0) ok = gfail(c, go->items[k].off, "graph.order: this node is listed twice");
                else pos[f->node] = k;
            }
            for (int k = 0; ok && k < m; k++)
                if (pos[e[k].src] > pos[e[k].dst])
                    ok = gfail(c, go->off, "graph.order is not a topological order (node %d comes after its user %d)",
                               e[k].src, e[k].dst);
            order = "graph.order";
        }
    } else if (ok) {
        bool all_num = true;
        for (int k = 0; k < n; k++) all_num = all_num && !ids[k].is_str;
        for (int k = 0; k < n; k++) rank[sorted[k].node] = all_num ? k : sorted[k].node; /* id order, or file order */
        bool topo = true;
        for (int k = 0; k < m; k++) topo = topo && rank[e[k].src] < rank[e[k].dst];
        if (topo) {
            for (int k = 0; k < n; k++) pos[k] = rank[k];
            order = all_num ? "ids" : "file";
        } else if (topo_sort(n, e, m, rank, pos)) {
            order = "topological sort";
        } else {
            ok = gfail(c, links->off, "the graph has a cycle");
        }
    }
    if (ok) {
        dag_alloc(d, n);
        d->order = order;
        const JVal *name = jget(gr, "name");
        d->title = xstrdup(name && name->kind == J_STR ? name->str : "");
        for (int k = 0; k < n; k++) {
            int i = pos[k];
            d->cost[i] = cost[k];
            d->mem[i] = (int64_t)mem[k];
            d->backward[i] = bwd[k];
            char buf[32];
            if (ids[k].is_str) d->label[i] = xstrdup(ids[k].str);
            else snprintf(buf, sizeof buf, "%" PRId64, ids[k].num), d->label[i] = xstrdup(buf);
        }
        for (int k = 0; k < m; k++) e[k].src = pos[e[k].src], e[k].dst = pos[e[k].dst];
        build_adjacency(d, e, m);
    }
    free(ids), free(sorted), free(cost), free(mem), free(bwd), free(e), free(rank), free(pos);
    return ok;
}

bool dag_parse_json(const char *text, size_t len, Dag *d, char *err, size_t err_len) {
    memset(d, 0, sizeof *d);
    Pool pool = {0};
    JParser p = {text, len, 0, &pool, err, err_len, false};
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) p.pos = 3; /* a UTF-8 byte order mark */
    JVal root = {0};
    bool ok = parse_value(&p, &root, 0);
    if (ok) {
        skip_ws(&p);
        char what[32];
        if (p.pos < len) ok = jfail(&p, p.pos, "unexpected %s after the JSON value", describe(&p, what, sizeof what));
    }
    if (ok) {
        GCtx c = {text, len, err, err_len};
        ok = build_graph(&c, &root, d);
    }
    pool_free(&pool);
    return ok;
}

bool dag_load(const char *path, Dag *d, char *err, size_t err_len) {
    memset(d, 0, sizeof *d);
    size_t len;
    char *text = acc_read_file(path, JSON_MAX_BYTES, &len, NULL, err, err_len);
    if (!text) return false;
    char msg[512];
    bool ok = dag_parse_json(text, len, d, msg, sizeof msg);
    if (!ok) snprintf(err, err_len, "%s: %s", path, msg);
    free(text);
    return ok;
}

void dag_from_arrays(Dag *d, int n, const double *cost, const int64_t *mem, int n_edges, const int *src,
                     const int *dst) {
    dag_alloc(d, n);
    d->order = "ids";
    d->title = xstrdup("");
    for (int i = 0; i < n; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", i);
        d->cost[i] = cost[i], d->mem[i] = mem[i], d->label[i] = xstrdup(buf);
    }
    Edge *e = malloc((size_t)n_edges * sizeof(Edge) + 1);
    if (!e) acc_panic(__FILE__, __LINE__, "out of memory");
    for (int k = 0; k < n_edges; k++) {
        ACC_ASSERT(src[k] >= 0 && src[k] < dst[k] && dst[k] < n);
        e[k].src = src[k], e[k].dst = dst[k];
    }
    build_adjacency(d, e, n_edges);
    free(e);
}

void dag_free(Dag *d) {
    if (d->label)
        for (int i = 0; i < d->n; i++) free(d->label[i]);
    free(d->cost), free(d->mem), free(d->backward), free(d->label);
    free(d->in_off), free(d->in), free(d->out_off), free(d->out), free(d->title);
    memset(d, 0, sizeof *d);
}

void dag_write_json(const Dag *d, const char *name, FILE *f) {
    fprintf(f, "{\"directed\": true, \"graph\": {\"name\": \"%s\"}, \"nodes\": [", name);
    for (int i = 0; i < d->n; i++)
        fprintf(f, "%s{\"id\": %d, \"cost_cpu\": %.17g, \"cost_ram\": %lld}", i ? ", " : "", i, d->cost[i],
                (long long)d->mem[i]);
    fprintf(f, "], \"links\": [");
    int k = 0;
    for (int v = 0; v < d->n; v++)
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++)
            fprintf(f, "%s{\"source\": %d, \"target\": %d}", k++ ? ", " : "", d->in[q], v);
    fprintf(f, "]}\n");
}
