/* ir.c - pool, dtypes, shapes, the op table instance, graphs, the IR printer
 * and the verifier. Shape rules live in shape.c; command-line sizes in size.c.
 */
#include "ir.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void acc_panic(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "acc: internal error at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void *acc_xrealloc(void *p, size_t size_bytes) {
    void *q = realloc(p, size_bytes ? size_bytes : 1);
    if (!q) acc_panic(__FILE__, __LINE__, "out of memory (%zu bytes)", size_bytes);
    return q;
}

void *acc_xcalloc(size_t n, size_t size_bytes) {
    void *p = calloc(n ? n : 1, size_bytes);
    if (!p) acc_panic(__FILE__, __LINE__, "out of memory");
    return p;
}

/* ---- pool ---------------------------------------------------------------- */

struct PoolChunk {
    PoolChunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *pool_alloc(Pool *p, size_t size_bytes) {
    size_bytes = (size_bytes + 15) & ~(size_t)15;
    PoolChunk *c = p->head;
    if (!c || c->cap - c->used < size_bytes) {
        size_t cap = size_bytes > 65536 ? size_bytes : 65536;
        c = acc_xrealloc(NULL, sizeof *c + cap);
        c->next = p->head;
        c->used = 0;
        c->cap = cap;
        p->head = c;
    }
    void *r = c->data + c->used;
    c->used += size_bytes;
    p->used_bytes += size_bytes;
    memset(r, 0, size_bytes);
    return r;
}

char *pool_strdup(Pool *p, const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(pool_alloc(p, n), s, n);
}

char *pool_printf(Pool *p, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = pool_alloc(p, (size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

void pool_free(Pool *p) {
    for (PoolChunk *c = p->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    p->head = NULL;
    p->used_bytes = 0;
}

/* ---- dtypes and shapes --------------------------------------------------- */

static const struct {
    const char *name;
    size_t size;
} dtypes[DT_COUNT] = {[DT_F32] = {"f32", 4}, [DT_I32] = {"i32", 4}, [DT_BF16] = {"bf16", 2}, [DT_F16] = {"f16", 2}};

const char *dtype_name(DType t) { return dtypes[t].name; }
size_t dtype_size(DType t) { return dtypes[t].size; }

bool precision_known(const char *s) { return !strcmp(s, "fp32") || !strcmp(s, "tf32") || !strcmp(s, "bf16"); }

bool dtype_parse(const char *s, DType *out) {
    for (int t = 0; t < DT_COUNT; t++)
        if (!strcmp(s, dtypes[t].name)) {
            *out = (DType)t;
            return true;
        }
    return false;
}

int64_t shape_elems(const Shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->dim[i];
    return n;
}

bool shape_eq(const Shape *a, const Shape *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dim[i] != b->dim[i]) return false;
    return true;
}

bool attn_operand_strides(const Shape *s, const int64_t full[4], bool key_padding, int64_t st[4]) {
    /* the axis of [B, heads, Tq, Tk] each dimension of s stands for */
    static const int pad_axes[2] = {0, 3};
    int axes[4];
    if (s->ndim < 1 || s->ndim > 4) return false;
    for (int i = 0; i < s->ndim; i++) axes[i] = key_padding && s->ndim == 2 ? pad_axes[i] : 4 - s->ndim + i;
    for (int a = 0; a < 4; a++) st[a] = 0;
    int64_t stride = 1;
    for (int i = s->ndim - 1; i >= 0; i--) {
        int64_t d = s->dim[i];
        if (d != 1 && d != full[axes[i]]) return false;
        st[axes[i]] = d == 1 ? 0 : stride;
        stride *= d;
    }
    return true;
}

const char *shape_str(const Shape *s, char *buf) {
    char *p = buf;
    *p++ = '[';
    for (int i = 0; i < s->ndim; i++) p += sprintf(p, "%s%" PRId64, i ? "," : "", s->dim[i]);
    strcpy(p, "]");
    return buf;
}

/* ---- the op table -------------------------------------------------------- */

#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) \
    bool shape(const Graph *, Node *, char *, size_t);
#include "ops.def"
#undef X
#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) \
    double cost(const Graph *, const Node *);
#include "ops.def"
#undef X

const OpInfo op_table[OP_COUNT] = {
#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) \
    [OP_##e] = {name, mn, mx, attrs, shape, flags, grad, kernel, cost, prec},
#include "ops.def"
#undef X
};

OpKind op_lookup(const char *dsl_name) {
    for (int k = 0; k < OP_COUNT; k++)
        if (op_callable((OpKind)k) && !strcmp(op_table[k].name, dsl_name)) return (OpKind)k;
    return OP_COUNT;
}

char op_prec_class(OpKind k, int i) {
    const char *r = op_table[k].prec, *colon = strchr(r, ':');
    if (!colon || colon == r) return 0;
    if (i < 0) return colon[1];
    if (i >= op_table[k].max_in) return 0;
    return i < colon - r ? r[i] : colon[-1]; /* a variadic op's last letter covers the rest */
}

#define F(name, type) \
    { #name, type, offsetof(Attrs, name) }
static const AttrField attr_fields[] = {
    F(axis, ATTR_INT),         F(start, ATTR_INT),   F(len, ATTR_INT),      F(dim0, ATTR_INT),
    F(dim1, ATTR_INT),         F(heads, ATTR_INT),   F(kv_heads, ATTR_INT), F(transpose_a, ATTR_BOOL),
    F(transpose_b, ATTR_BOOL), F(causal, ATTR_BOOL), F(keepdim, ATTR_BOOL), F(eps, ATTR_FLOAT),
    F(p, ATTR_FLOAT),          F(alpha, ATTR_FLOAT), F(beta, ATTR_FLOAT),   F(theta, ATTR_FLOAT),
    F(value, ATTR_FLOAT),      F(shape, ATTR_SHAPE), F(mask, ATTR_TENSOR),  F(bias, ATTR_TENSOR),
};
#undef F

const AttrField *attr_field(const char *name) {
    for (size_t i = 0; i < sizeof attr_fields / sizeof *attr_fields; i++)
        if (!strcmp(attr_fields[i].name, name)) return &attr_fields[i];
    return NULL;
}

/* Walk op k's attribute string "name:t=default,name:t!" and store each default. */
void attrs_defaults(OpKind k, Attrs *a) {
    memset(a, 0, sizeof *a);
    const char *s = op_table[k].attrs;
    while (*s) {
        char name[32], def[32] = "";
        size_t n = strcspn(s, ":");
        ACC_ASSERT(n < sizeof name);
        memcpy(name, s, n);
        name[n] = 0;
        s += n + 2; /* skip ":t" */
        if (*s == '=') {
            size_t m = strcspn(++s, ",");
            ACC_ASSERT(m < sizeof def);
            memcpy(def, s, m);
            def[m] = 0;
            s += m;
        } else if (*s == '!') {
            s++;
        }
        if (*s == ',') s++;
        const AttrField *f = attr_field(name);
        ACC_ASSERT(f);
        void *field = (char *)a + f->offset;
        switch (f->type) {
        case ATTR_INT: *(int64_t *)field = !*def || !strcmp(def, "none") ? ATTR_NONE : strtoll(def, NULL, 10); break;
        case ATTR_FLOAT: *(double *)field = strtod(def, NULL); break;
        case ATTR_BOOL: *(bool *)field = *def == '1'; break;
        case ATTR_SHAPE: break;
        case ATTR_TENSOR: *(int64_t *)field = ATTR_NONE; break;
        }
    }
}

int op_keyword_operands(OpKind k) {
    int count = 0;
    for (const char *s = op_table[k].attrs; *s;) {
        size_t n = strcspn(s, ":");
        char name[32];
        ACC_ASSERT(n < sizeof name);
        memcpy(name, s, n);
        name[n] = 0;
        count += attr_field(name)->type == ATTR_TENSOR;
        s += strcspn(s, ",");
        if (*s == ',') s++;
    }
    return count;
}

int node_operand(const Node *n, int64_t field) { return field >= 0 && field < n->n_in ? n->in[field] : -1; }

/* ---- graphs -------------------------------------------------------------- */

void graph_init(Graph *g, const char *model) {
    memset(g, 0, sizeof *g);
    g->model = pool_strdup(&g->pool, model);
    g->loss = -1;
}

void graph_free(Graph *g) {
    VEC_FREE(g->nodes);
    VEC_FREE(g->save_globs);
    VEC_FREE(g->recompute_globs);
    VEC_FREE(g->hparams);
    pool_free(&g->pool);
}

int graph_add(Graph *g, const Node *proto) {
    Node n = *proto;
    n.id = g->nodes.n;
    for (int i = 0; i < n.n_in; i++) ACC_ASSERT(n.in[i] >= 0 && n.in[i] < n.id);
    VEC_PUSH(g->nodes, n);
    return n.id;
}

int graph_find(const Graph *g, const char *name) {
    for (int i = 0; i < g->nodes.n; i++)
        if (!strcmp(g->nodes.v[i].name, name)) return i;
    return -1;
}

const char *name_pattern_problem(const char *p) {
    if (!*p) return "empty pattern";
    for (; *p; p++) {
        if (*p == '\\') {
            if (!p[1]) return "a '\\' at the end escapes nothing";
            p++;
        } else if (*p == '[') { /* a set: [abc], [!abc], []abc], [a-z] */
            const char *q = p + 1;
            if (*q == '!' || *q == '^') q++;
            if (*q == ']') q++;
            while (*q && *q != ']') q++;
            if (!*q) return "'[' without a closing ']'";
            p = q;
        }
    }
    return NULL;
}

bool name_pattern_is_glob(const char *p) { return strpbrk(p, "*?[\\") != NULL; }

int64_t node_tensor_bytes(const Node *n) { return shape_elems(&n->shape) * (int64_t)dtype_size(n->dtype); }
int64_t node_bytes(const Node *n) { return node_tensor_bytes(n) + n->aux_elems * 4; }

int64_t graph_param_count(const Graph *g) {
    int64_t c = 0;
    for (int i = 0; i < g->nodes.n; i++)
        if (g->nodes.v[i].op == OP_PARAM) c += shape_elems(&g->nodes.v[i].shape);
    return c;
}

int64_t graph_param_bytes(const Graph *g) {
    int64_t c = 0;
    for (int i = 0; i < g->nodes.n; i++)
        if (g->nodes.v[i].op == OP_PARAM) c += node_bytes(&g->nodes.v[i]);
    return c;
}

/* ---- printer ------------------------------------------------------------- */

static void print_attrs(const Node *n, FILE *out) {
    const char *s = op_table[n->op].attrs;
    while (*s) {
        char name[32];
        size_t k = strcspn(s, ":");
        memcpy(name, s, k);
        name[k] = 0;
        s += k;
        s += strcspn(s, ",");
        if (*s == ',') s++;
        const AttrField *f = attr_field(name);
        const void *field = (const char *)&n->attr + f->offset;
        char buf[ACC_SHAPE_STR];
        switch (f->type) {
        case ATTR_INT:
            if (*(const int64_t *)field == ATTR_NONE) fprintf(out, ", %s=none", name);
            else fprintf(out, ", %s=%" PRId64, name, *(const int64_t *)field);
            break;
        case ATTR_FLOAT: fprintf(out, ", %s=%.9g", name, *(const double *)field); break;
        case ATTR_BOOL: fprintf(out, ", %s=%s", name, *(const bool *)field ? "true" : "false"); break;
        case ATTR_SHAPE: fprintf(out, ", %s=%s", name, shape_str((const Shape *)field, buf)); break;
        case ATTR_TENSOR: /* only when given: the node id it names */
            if (node_operand(n, *(const int64_t *)field) >= 0)
                fprintf(out, ", %s=%%%d", name, node_operand(n, *(const int64_t *)field));
            break;
        }
    }
}

static const char *init_name[] = {"zeros", "ones", "normal", "uniform"};

void ir_print(const Graph *g, FILE *out) {
    fprintf(out, "model %s\n", g->model);
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = &g->nodes.v[i];
        char buf[ACC_SHAPE_STR];
        fprintf(out, "%%%d %s : %s%s", n->id, n->name, dtype_name(n->dtype), shape_str(&n->shape, buf));
        if (n->aux_elems) fprintf(out, " +aux %" PRId64, n->aux_elems);
        fprintf(out, " = %s(", op_table[n->op].name);
        for (int j = 0; j < n->n_in; j++) fprintf(out, "%s%%%d", j ? ", " : "", n->in[j]);
        if (n->op == OP_PARAM && n->init.kind >= INIT_NORMAL)
            fprintf(out, "%s(%.9g)", init_name[n->init.kind], n->init.scale);
        else if (n->op == OP_PARAM) fprintf(out, "%s", init_name[n->init.kind]);
        else print_attrs(n, out);
        fprintf(out, ")");
        if (n->hint == HINT_SAVE) fprintf(out, " @save");
        if (n->hint == HINT_RECOMPUTE) fprintf(out, " @recompute");
        if (n->id == g->loss) fprintf(out, " loss");
        fprintf(out, "  ; %s:%d:%d\n", n->loc.file ? n->loc.file : "?", n->loc.line, n->loc.col);
    }
    for (int i = 0; i < g->save_globs.n; i++) fprintf(out, "save \"%s\"\n", g->save_globs.v[i]);
    for (int i = 0; i < g->recompute_globs.n; i++) fprintf(out, "recompute \"%s\"\n", g->recompute_globs.v[i]);
}

/* ---- verifier ------------------------------------------------------------ */

#define VFAIL(...) (fprintf(err, "ir verify: " __VA_ARGS__), fputc('\n', err), false)

typedef struct {
    const char *name;
    int id;
} NameId;

static int cmp_name_id(const void *a, const void *b) {
    const NameId *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

bool ir_verify(const Graph *g, FILE *err) {
    int n_loss = 0;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = &g->nodes.v[i];
        if (n->id != i) return VFAIL("node %d has id %d", i, n->id);
        if ((unsigned)n->op >= OP_COUNT) return VFAIL("node %d: bad op %d", i, (int)n->op);
        if ((unsigned)n->dtype >= DT_COUNT) return VFAIL("node %d: bad dtype %d", i, (int)n->dtype);
        const OpInfo *oi = &op_table[n->op];
        if (!n->name || !*n->name) return VFAIL("node %d has no name", i);
        if (n->n_in < oi->min_in || n->n_in > oi->max_in)
            return VFAIL("%s: %s takes %d..%d inputs, has %d", n->name, oi->name, oi->min_in, oi->max_in, n->n_in);
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] < 0 || n->in[j] >= i)
                return VFAIL("%s: input %d is %%%d, not an earlier node", n->name, j, n->in[j]);
        if (n->shape.ndim < 0 || n->shape.ndim > ACC_MAX_DIMS) return VFAIL("%s: bad rank", n->name);
        for (int d = 0; d < n->shape.ndim; d++)
            if (n->shape.dim[d] < 1 || n->shape.dim[d] > ACC_MAX_DIM) return VFAIL("%s: bad dimension %d", n->name, d);
        if (!(oi->flags & OPF_LEAF)) {
            Node copy = *n;
            char msg[256];
            if (!oi->shape(g, &copy, msg, sizeof msg)) return VFAIL("%s: shape rule fails: %s", n->name, msg);
            if (!shape_eq(&copy.shape, &n->shape) || copy.dtype != n->dtype || copy.aux_elems != n->aux_elems)
                return VFAIL("%s: stored shape/dtype differs from the shape rule's", n->name);
        }
        if (n->id == g->loss) n_loss++;
    }
    /* unique names: sorted, not compared pairwise (graphs have up to 10^6 nodes) */
    NameId *by_name = acc_xrealloc(NULL, ((size_t)g->nodes.n + 1) * sizeof *by_name);
    for (int i = 0; i < g->nodes.n; i++) by_name[i] = (NameId){g->nodes.v[i].name, i};
    qsort(by_name, (size_t)g->nodes.n, sizeof *by_name, cmp_name_id);
    for (int i = 1; i < g->nodes.n; i++)
        if (!strcmp(by_name[i - 1].name, by_name[i].name)) {
            NameId a = by_name[i - 1], b = by_name[i];
            free(by_name);
            return VFAIL("%s: name used by nodes %d and %d", a.name, a.id, b.id);
        }
    free(by_name);
    if (g->loss >= 0) {
        const Node *l = &g->nodes.v[g->loss];
        if (n_loss != 1 || l->shape.ndim != 0 || l->dtype != DT_F32)
            return VFAIL("loss %%%d is not a f32 scalar", g->loss);
    }
    return true;
}
