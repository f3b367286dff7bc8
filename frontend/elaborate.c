/* elaborate.c - AST to IR: binds hyperparameters (with -D overrides),
 * instantiates blocks, unrolls repeats, evaluates integer shape arithmetic
 * with overflow checks, and creates one IR node per tensor, each checked by
 * its op's shape rule and reported at the DSL span that made it.
 *
 * Values are dynamically typed (int, float, bool, list of ints, tensor,
 * tuple of tensors). A failed sub-expression yields V_ERR, which every user
 * passes on silently, so one mistake gives one diagnostic. Names: a node made
 * by `x = ...` in scope S is "S.x"; an unnamed one "S.<op>"; clashes get "_1",
 * "_2"... A block call opens scope "S.<block or as-name>", an iteration of
 * `repeat N as layers` opens "S.layers.<i>".
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

#define MAX_BLOCK_DEPTH 64
#define MAX_REPEAT 100000
#define MAX_NODES 1000000
/* Limits that keep elaboration finite in time, memory and stack for any input. */
#define MAX_NESTING 1000      /* expressions, block calls and repeats nested */
#define MAX_INSTANCES 1000000 /* block instances and repeat iterations */
#define MAX_WORK 50000000     /* statements executed and expressions evaluated */
#define MAX_FORMALS 256       /* parameters of one block */
#define MAX_PATTERNS 256      /* save/recompute patterns with wildcards */

typedef enum { V_ERR, V_NONE, V_INT, V_FLOAT, V_BOOL, V_LIST, V_TENSOR, V_TUPLE } VKind;

typedef struct {
    VKind k;
    int64_t i;   /* V_INT, V_BOOL */
    double f;    /* V_FLOAT */
    int node;    /* V_TENSOR */
    Shape list;  /* V_LIST of ints */
    int n_tuple; /* V_TUPLE */
    int tuple[ACC_MAX_IN];
} Value;

typedef enum { B_HPARAM, B_INPUT, B_PARAM, B_VAR, B_FORMAL, B_INDEX } BindKind;

typedef struct Binding Binding;
typedef struct Frame Frame;
struct Binding {
    const char *name;
    BindKind kind;
    Value v;
    Loc loc;
    Binding *next;     /* the next older binding of its frame */
    Binding *shadowed; /* the next older live binding of the same name */
    Frame *frame;
};

struct Frame {
    Binding *binds;
    Frame *parent;     /* NULL above a block body or the top level */
    const char *scope; /* name prefix, "" at top level */
    const char *group;
    bool in_block, in_repeat;
    bool returned;
    Value ret;
};

/* An open-addressing map from strings to values: the names and scopes already
 * used (value: the next suffix unique() tries), the blocks by name, and the
 * newest live binding of each name. */
typedef struct {
    const char **key;
    void **val;
    size_t cap, n;
} StrMap;

typedef struct {
    Diag *d;
    Graph *g;
    Pool tmp;
    const Program *prog;
    const Define *defs;
    int n_defs;
    bool *def_used;
    Frame *top;
    const Stmt *stack[MAX_BLOCK_DEPTH];
    int depth;
    StrMap names, scopes, blocks, binds, leaves;
    const Stmt *model_stmt, *loss_stmt, *precision_stmt, *optstate_stmt;
    bool too_big;
    bool recursion_reported; /* check_recursion found a cycle */
    int64_t total_bytes;     /* node_bytes of every node so far, at most ACC_MAX_MODEL_BYTES */
    int nesting;
    int64_t instances, work;
} Elab;

static const char *const kind_name[] = {"an error",  "nothing", "an integer", "a number",
                                        "a boolean", "a list",  "a tensor",   "several tensors"};

/* ---- small helpers -------------------------------------------------------- */

static Value v_err(void) { return (Value){.k = V_ERR}; }
static Value v_int(int64_t i) { return (Value){.k = V_INT, .i = i}; }
static Value v_float(double f) { return (Value){.k = V_FLOAT, .f = f}; }
static Value v_tensor(int id) { return (Value){.k = V_TENSOR, .node = id}; }
static bool is_num(const Value *v) { return v->k == V_INT || v->k == V_FLOAT; }
static double num(const Value *v) { return v->k == V_INT ? (double)v->i : v->f; }

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot of key in m: where it is, or the empty slot where it would go. */
static size_t map_slot(const StrMap *m, const char *key) {
    size_t i = str_hash(key) & (m->cap - 1);
    while (m->key[i] && strcmp(m->key[i], key)) i = (i + 1) & (m->cap - 1);
    return i;
}

static bool map_has(const StrMap *m, const char *key) { return m->cap && m->key[map_slot(m, key)]; }

static void *map_get(const StrMap *m, const char *key) {
    if (!m->cap) return NULL;
    size_t i = map_slot(m, key);
    return m->key[i] ? m->val[i] : NULL;
}

static void map_free(StrMap *m) {
    free(m->key);
    free(m->val);
}

/* The value of key, added with value NULL if new; valid until the next map_at.
 * The key string must outlive the map. */
static void **map_at(StrMap *m, const char *key) {
    if (2 * (m->n + 1) > m->cap) {
        StrMap bigger = {.cap = m->cap ? 2 * m->cap : 256};
        bigger.key = acc_xrealloc(NULL, bigger.cap * sizeof *bigger.key);
        bigger.val = acc_xrealloc(NULL, bigger.cap * sizeof *bigger.val);
        memset(bigger.key, 0, bigger.cap * sizeof *bigger.key);
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) *map_at(&bigger, m->key[i]) = m->val[i];
        map_free(m);
        *m = bigger;
    }
    size_t i = map_slot(m, key);
    if (!m->key[i]) {
        m->key[i] = key;
        m->val[i] = NULL;
        m->n++;
    }
    return &m->val[i];
}

/* scope.name, or name at the top level. Its length counts as work: names nest
 * (layers.3.attn.q), and that bounds the memory they take. */
static const char *join(Elab *E, const char *scope, const char *name) {
    E->work += (int64_t)(strlen(scope) + strlen(name));
    return *scope ? pool_printf(&E->g->pool, "%s.%s", scope, name) : pool_strdup(&E->g->pool, name);
}

/* The first of base, base_1, base_2... not yet in set; added to it. base's
 * value in set is the suffix to try next (those below are taken), so a name
 * used n times costs O(n), not O(n^2). */
static const char *unique(Elab *E, StrMap *set, const char *base) {
    uintptr_t k = (uintptr_t)map_get(set, base);
    const char *s = k ? pool_printf(&E->g->pool, "%s_%d", base, (int)k) : base;
    while (map_has(set, s)) s = pool_printf(&E->g->pool, "%s_%d", base, (int)++k);
    map_at(set, s);
    *map_at(set, base) = (void *)(k + 1);
    return s;
}

/* Whether frame f is from or one of its parents. */
static bool visible(const Frame *from, const Frame *f) {
    for (; from; from = from->parent)
        if (from == f) return true;
    return false;
}

/* The binding of name in f or its parents (up to the block or top level). The
 * newest visible binding of a name is the innermost one, as frames nest. */
static Binding *find_local(Elab *E, Frame *f, const char *name, Frame **where) {
    for (Binding *b = map_get(&E->binds, name); b; b = b->shadowed)
        if (visible(f, b->frame)) {
            if (where) *where = b->frame;
            return b;
        }
    return NULL;
}

/* Names visible from f: its frames up to the block or top level, then the
 * hyperparameters (a block sees its arguments, its own names and the
 * hyperparameters; the top level sees everything it defined). */
static Binding *lookup(Elab *E, Frame *f, const char *name) {
    Binding *b = find_local(E, f, name, NULL);
    if (b) return b;
    for (b = map_get(&E->binds, name); b; b = b->shadowed)
        if (b->kind == B_HPARAM && b->frame == E->top) return b;
    return NULL;
}

static Binding *bind(Elab *E, Frame *f, const char *name, BindKind k, Value v, Loc loc) {
    Binding *b = pool_alloc(&E->tmp, sizeof *b);
    void **newest = map_at(&E->binds, name);
    *b = (Binding){name, k, v, loc, f->binds, *newest, f};
    *newest = b;
    f->binds = b;
    return b;
}

/* Forget the bindings of f when it ends (frames end innermost first, so each
 * is the newest of its name). */
static void unbind(Elab *E, Frame *f) {
    for (Binding *b = f->binds; b; b = b->next) *map_at(&E->binds, b->name) = b->shadowed;
    f->binds = NULL;
}

static void note_previous(Elab *E, const Binding *b) { diag_note(E->d, b->loc, "previous definition is here"); }

/* Count one block instance or repeat iteration; false (reported once) past the limit. */
static bool count_instance(Elab *E, Loc loc) {
    if (E->too_big) return false;
    if (++E->instances > MAX_INSTANCES) {
        diag_error(E->d, loc, "model too large: more than %d block instances and repeat iterations", MAX_INSTANCES);
        E->too_big = true;
        return false;
    }
    return true;
}

/* Enter one more level of nesting (the caller leaves it: E->nesting--); false
 * (reported once, and elaboration stops) past the limit. */
static bool enter(Elab *E, Loc loc) {
    if (E->too_big) return false;
    if (E->nesting >= MAX_NESTING) {
        diag_error(E->d, loc, "expressions, block calls and repeats nested more than %d deep", MAX_NESTING);
        E->too_big = true;
        return false;
    }
    E->nesting++;
    return true;
}

/* Count one statement or expression; false (reported once) past the limit. */
static bool count_work(Elab *E, Loc loc) {
    if (E->too_big) return false;
    if (++E->work > MAX_WORK) {
        diag_error(E->d, loc, "model too large: elaboration takes more than %d steps", MAX_WORK);
        E->too_big = true;
        return false;
    }
    return true;
}

/* The (first) block named name, or NULL. */
static const Stmt *find_block(const Elab *E, const char *name) { return map_get(&E->blocks, name); }

static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40) return 99;
    int row[41];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The op or block name closest to a misspelled callee, or NULL. */
static const char *suggest_callee(const Elab *E, const char *name) {
    const char *best = NULL;
    int best_d = 3;
    for (int k = 0; k < OP_COUNT; k++) {
        if (!op_callable((OpKind)k)) continue;
        int dd = edit_distance(name, op_table[k].name);
        if (dd < best_d) best_d = dd, best = op_table[k].name;
    }
    for (const Stmt *s = E->prog->stmts; s; s = s->next)
        if (s->kind == S_BLOCK) {
            int dd = edit_distance(name, s->name);
            if (dd < best_d) best_d = dd, best = s->name;
        }
    return best;
}

/* ---- nodes ---------------------------------------------------------------- */

/* Append n to the graph, counting its bytes: the tensor that takes the
 * model's total past ACC_MAX_MODEL_BYTES is an error (too_big: no more nodes). */
static Value add_node(Elab *E, Node *n) {
    int64_t total;
    if (!acc_add_i64(E->total_bytes, node_bytes(n), &total) || total > ACC_MAX_MODEL_BYTES) {
        diag_error(E->d, n->loc,
                   "model too large: with this tensor ('%s', %" PRId64 " bytes) its tensors total more than 2^58 "
                   "bytes (256 PiB)",
                   n->name, node_bytes(n));
        E->too_big = true;
        return v_err();
    }
    E->total_bytes = total;
    return v_tensor(graph_add(E->g, n));
}

/* Create a node for op with the given inputs after its shape rule accepts it. */
static Value make_node(Elab *E, Frame *f, OpKind op, int n_in, const int *in, const Attrs *a, Loc loc,
                       const char *hint) {
    if (E->too_big) return v_err();
    if (E->g->nodes.n >= MAX_NODES) {
        diag_error(E->d, loc, "model too large: more than %d tensors", MAX_NODES);
        E->too_big = true;
        return v_err();
    }
    Node n = {0};
    n.op = op;
    n.n_in = n_in;
    for (int i = 0; i < n_in; i++) n.in[i] = in[i];
    n.attr = *a;
    n.loc = loc;
    n.group = f->group;
    char err[256];
    if (!op_table[op].shape(E->g, &n, err, sizeof err)) {
        diag_error(E->d, loc, "%s", err);
        return v_err();
    }
    n.name = unique(E, &E->names, join(E, f->scope, hint ? hint : op_table[op].name));
    return add_node(E, &n);
}

static Value make_leaf(Elab *E, Frame *f, OpKind op, const char *name, DType dt, const Shape *s, Loc loc) {
    if (E->g->nodes.n >= MAX_NODES) {
        if (!E->too_big) diag_error(E->d, loc, "model too large: more than %d tensors", MAX_NODES);
        E->too_big = true;
        return v_err();
    }
    Node n = {0};
    n.op = op;
    n.dtype = dt;
    n.shape = *s;
    n.loc = loc;
    n.group = f->group;
    n.name = name;
    map_at(&E->names, name);
    map_at(&E->leaves, name);
    return E->too_big ? v_err() : add_node(E, &n);
}

/* ---- expressions ---------------------------------------------------------- */

static Value eval(Elab *E, Frame *f, const Expr *e, const Name *targets);
static Value compare(Elab *E, Frame *f, OpKind op, const char *what, Value v[2], Loc loc, const char *hint);

static Value int_arith(Elab *E, int op, int64_t a, int64_t b, Loc loc) {
    int64_t r = 0;
    bool ovf = false;
    switch (op) {
    case '+': ovf = __builtin_add_overflow(a, b, &r); break;
    case '-': ovf = __builtin_sub_overflow(a, b, &r); break;
    case '*': ovf = __builtin_mul_overflow(a, b, &r); break;
    case '/':
    case '%':
        if (b == 0) {
            diag_error(E->d, loc, "division by zero");
            return v_err();
        }
        if (a == INT64_MIN && b == -1) ovf = true;
        else r = op == '/' ? a / b : a % b;
        break;
    }
    if (ovf) {
        diag_error(E->d, loc, "integer overflow in shape arithmetic (%" PRId64 " %c %" PRId64 ")", a, op, b);
        return v_err();
    }
    return v_int(r);
}

/* v, or float(v) when v is an i32 tensor: arithmetic on token ids or an
 * integer mask (1 - mask, x * mask) computes in floats, as PyTorch promotes
 * an int tensor meeting a float one (exact up to 2^24 in magnitude). */
static Value promote_i32(Elab *E, Frame *f, Value v, Loc loc) {
    if (v.k != V_TENSOR || graph_node(E->g, v.node)->dtype != DT_I32) return v;
    Attrs at;
    attrs_defaults(OP_FLOAT, &at);
    return make_node(E, f, OP_FLOAT, 1, &v.node, &at, loc, NULL);
}

static Value eval_binop(Elab *E, Frame *f, const Expr *e, const char *hint) {
    Value a = eval(E, f, e->lhs, NULL), b = eval(E, f, e->rhs, NULL);
    if (a.k == V_ERR || b.k == V_ERR) return v_err();
    if (e->op >= BIN_EQ) {
        static const char *const sym[] = {"'=='", "'!='", "'<'", "'<='", "'>'", "'>='"};
        const char *what = sym[e->op - BIN_EQ];
        if ((a.k != V_TENSOR && !is_num(&a)) || (b.k != V_TENSOR && !is_num(&b))) {
            diag_error(E->d, e->loc, "%s compares tensors and numbers, not %s and %s", what, kind_name[a.k],
                       kind_name[b.k]);
            return v_err();
        }
        Value v[2] = {a, b};
        return compare(E, f, (OpKind)(OP_EQ + (e->op - BIN_EQ)), what, v, e->loc, hint);
    }
    if (a.k == V_INT && b.k == V_INT) return int_arith(E, e->op, a.i, b.i, e->loc);
    if (is_num(&a) && is_num(&b)) {
        double x = num(&a), y = num(&b), r = 0;
        switch (e->op) {
        case '+': r = x + y; break;
        case '-': r = x - y; break;
        case '*': r = x * y; break;
        case '/':
            if (y == 0) {
                diag_error(E->d, e->loc, "division by zero");
                return v_err();
            }
            r = x / y;
            break;
        case '%': diag_error(E->d, e->loc, "'%%' needs integers"); return v_err();
        }
        if (!isfinite(r)) {
            diag_error(E->d, e->loc, "arithmetic result is not finite");
            return v_err();
        }
        return v_float(r);
    }
    if (e->op != '%') {
        a = promote_i32(E, f, a, e->loc);
        b = promote_i32(E, f, b, e->loc);
        if (a.k == V_ERR || b.k == V_ERR) return v_err();
    }
    Attrs at;
    if (a.k == V_TENSOR && b.k == V_TENSOR && e->op != '%') {
        OpKind op = e->op == '+' ? OP_ADD : e->op == '-' ? OP_SUB : e->op == '*' ? OP_MUL : OP_DIV;
        attrs_defaults(op, &at);
        int in[2] = {a.node, b.node};
        return make_node(E, f, op, 2, in, &at, e->loc, hint);
    }
    /* tensor + number, number + tensor, tensor - number: a shift; number -
     * tensor: a scale by -1, then a shift */
    if ((e->op == '+' || e->op == '-') && ((a.k == V_TENSOR && is_num(&b)) || (is_num(&a) && b.k == V_TENSOR))) {
        const Value *t = a.k == V_TENSOR ? &a : &b, *s = a.k == V_TENSOR ? &b : &a;
        Value x = *t;
        if (e->op == '-' && a.k != V_TENSOR) {
            attrs_defaults(OP_SCALE, &at);
            at.alpha = -1;
            x = make_node(E, f, OP_SCALE, 1, &t->node, &at, e->loc, NULL);
            if (x.k == V_ERR) return x;
        }
        attrs_defaults(OP_SHIFT, &at);
        at.beta = e->op == '-' && a.k == V_TENSOR ? -num(s) : num(s);
        return make_node(E, f, OP_SHIFT, 1, &x.node, &at, e->loc, hint);
    }
    /* tensor * number, number * tensor, tensor / number: a scale */
    if ((e->op == '*' && ((a.k == V_TENSOR && is_num(&b)) || (is_num(&a) && b.k == V_TENSOR))) ||
        (e->op == '/' && a.k == V_TENSOR && is_num(&b))) {
        const Value *t = a.k == V_TENSOR ? &a : &b, *s = a.k == V_TENSOR ? &b : &a;
        attrs_defaults(OP_SCALE, &at);
        at.alpha = num(s);
        if (e->op == '/') {
            if (at.alpha == 0) {
                diag_error(E->d, e->loc, "division by zero");
                return v_err();
            }
            at.alpha = 1.0 / at.alpha;
        }
        return make_node(E, f, OP_SCALE, 1, &t->node, &at, e->loc, hint);
    }
    if (e->op == '/' && is_num(&a) && b.k == V_TENSOR) {
        diag_error(E->d, e->loc, "a number divided by a tensor has no op (acc has no reciprocal)");
        return v_err();
    }
    diag_error(E->d, e->loc, "invalid operands to '%c': %s and %s", e->op, kind_name[a.k], kind_name[b.k]);
    return v_err();
}

/* Store the value of keyword argument kw into the Attrs field it names,
 * checking it against op's attribute string. */
static bool set_attr(Elab *E, OpKind op, Attrs *at, const Arg *kw, const Value *v, unsigned *seen) {
    const char *spec = op_table[op].attrs;
    size_t klen = strlen(kw->kw);
    int index = 0;
    bool found = false;
    char names[256] = "";
    size_t len = 0;
    for (const char *s = spec; *s; index++) {
        size_t n = strcspn(s, ":");
        if (n == klen && !strncmp(s, kw->kw, n)) {
            found = true;
            break;
        }
        if (len < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%.*s", len ? ", " : "", (int)n, s);
        s += strcspn(s, ",");
        if (*s == ',') s++;
    }
    if (!found) {
        diag_error(E->d, kw->kw_loc, "%s has no attribute '%s'%s%s", op_table[op].name, kw->kw,
                   *spec ? "; its attributes are: " : "", names);
        return false;
    }
    if (*seen & (1u << index)) {
        diag_error(E->d, kw->kw_loc, "attribute '%s' given twice", kw->kw);
        return false;
    }
    *seen |= 1u << index;
    if (v->k == V_ERR) return false;
    const AttrField *fld = attr_field(kw->kw);
    void *p = (char *)at + fld->offset;
    switch (fld->type) {
    case ATTR_INT: /* no index, count or size is beyond a dimension (and INT64_MIN means "not given") */
        if (v->k != V_INT) break;
        if (v->i < -ACC_MAX_DIM || v->i > ACC_MAX_DIM) {
            diag_error(E->d, kw->value->loc, "attribute '%s' of %s: %" PRId64 " is out of range (-2^40 to 2^40)",
                       kw->kw, op_table[op].name, v->i);
            return false;
        }
        *(int64_t *)p = v->i;
        return true;
    case ATTR_FLOAT:
        if (!is_num(v)) break;
        *(double *)p = num(v);
        return true;
    case ATTR_BOOL:
        if (v->k != V_BOOL) break;
        *(bool *)p = v->i != 0;
        return true;
    case ATTR_SHAPE:
        if (v->k != V_LIST) break;
        *(Shape *)p = v->list;
        return true;
    case ATTR_TENSOR: /* the node id, until eval_op_call appends the operand */
        if (v->k != V_TENSOR) break;
        *(int64_t *)p = v->node;
        return true;
    }
    static const char *const want[] = {"an integer", "a number", "true or false", "a list of integers", "a tensor"};
    diag_error(E->d, kw->value->loc, "attribute '%s' of %s must be %s, not %s", kw->kw, op_table[op].name,
               want[fld->type], kind_name[v->k]);
    return false;
}

static Value eval_op_call(Elab *E, Frame *f, const Expr *e, OpKind op, const Arg *skip, const char *hint) {
    const OpInfo *oi = &op_table[op];
    int in[ACC_MAX_IN], n_in = 0, n_pos = 0;
    bool bad = false;
    unsigned seen = 0;
    Attrs at;
    attrs_defaults(op, &at);
    for (const Arg *a = e->args; a; a = a->next) {
        if (a == skip) continue;
        Value v = eval(E, f, a->value, NULL);
        if (a->kw) {
            bad |= !set_attr(E, op, &at, a, &v, &seen);
            continue;
        }
        n_pos++;
        if (v.k == V_ERR) {
            bad = true;
        } else if (v.k != V_TENSOR) {
            diag_error(E->d, a->value->loc, "argument %d of %s must be a tensor, not %s%s", n_pos, oi->name,
                       kind_name[v.k], *oi->attrs ? " (attributes are passed by keyword)" : "");
            bad = true;
        } else if (n_in < ACC_MAX_IN) {
            in[n_in++] = v.node;
        }
    }
    int max_pos = oi->max_in - op_keyword_operands(op);
    if (n_pos < oi->min_in || n_pos > max_pos) {
        if (oi->min_in == max_pos)
            diag_error(E->d, e->loc, "%s takes %d tensor argument%s, %d given", oi->name, oi->min_in,
                       oi->min_in == 1 ? "" : "s", n_pos);
        else
            diag_error(E->d, e->loc, "%s takes %d to %d tensor arguments, %d given", oi->name, oi->min_in, max_pos,
                       n_pos);
        return v_err();
    }
    /* required attributes ("name:t!") */
    int index = 0;
    for (const char *s = oi->attrs; *s; index++) {
        size_t n = strcspn(s, ",");
        if (s[n - 1] == '!' && !(seen & (1u << index)))
            diag_error(E->d, e->loc, "%s needs the attribute '%.*s'", oi->name, (int)strcspn(s, ":"), s), bad = true;
        s += n;
        if (*s == ',') s++;
    }
    if (bad) return v_err();
    if (e->as_name) {
        diag_error(E->d, e->as_loc, "'as' names block instances; name a tensor by assigning it");
        return v_err();
    }
    /* keyword operands (mask=, bias=) after the positional inputs, in the
     * order of the attribute string; each field becomes its input index */
    for (const char *s = oi->attrs; *s;) {
        char name[32];
        size_t k = strcspn(s, ":");
        memcpy(name, s, k);
        name[k] = 0;
        s += strcspn(s, ",");
        if (*s == ',') s++;
        const AttrField *fld = attr_field(name);
        int64_t *p = (int64_t *)((char *)&at + fld->offset);
        if (fld->type != ATTR_TENSOR || *p == ATTR_NONE) continue;
        ACC_ASSERT(n_in < ACC_MAX_IN);
        in[n_in] = (int)*p;
        *p = n_in++;
    }
    return make_node(E, f, op, n_in, in, &at, e->loc, hint);
}

/* gelu(x) is GPT-2's tanh form; gelu(x, exact=true) the erf form (op
 * gelu_erf, PyTorch's gelu(approximate='none')). exact is not an attribute
 * of either row: it picks the row, so both stay plain unary ops. */
static Value eval_gelu(Elab *E, Frame *f, const Expr *e, const char *hint) {
    const Arg *exact = NULL;
    for (const Arg *a = e->args; a; a = a->next)
        if (a->kw && !strcmp(a->kw, "exact")) {
            if (exact) {
                diag_error(E->d, a->kw_loc, "attribute 'exact' given twice");
                return v_err();
            }
            exact = a;
        }
    if (!exact) return eval_op_call(E, f, e, OP_GELU, NULL, hint);
    Value v = eval(E, f, exact->value, NULL);
    if (v.k == V_ERR) return v;
    if (v.k != V_BOOL) {
        diag_error(E->d, exact->value->loc, "attribute 'exact' of gelu must be true or false, not %s", kind_name[v.k]);
        return v_err();
    }
    return eval_op_call(E, f, e, v.i ? OP_GELU_ERF : OP_GELU, exact, hint);
}

/* eq, ne, lt, le, gt, ge of two tensors (broadcasting, the binary rows) or
 * of a tensor and a number (the internal rows eq_scalar ... ge_scalar, the
 * number their attribute value; a number first mirrors the relation:
 * lt(0.5, x) is gt(x, 0.5)). i32 tensors compare exactly, with each other
 * or with a number; an i32 tensor against a float one is float(x), as
 * PyTorch promotes it. The node is named after the DSL op. */
static Value eval_compare(Elab *E, Frame *f, const Expr *e, OpKind op, const char *hint) {
    const char *name = op_table[op].name;
    Value v[2];
    int n = 0;
    bool bad = false;
    for (const Arg *a = e->args; a; a = a->next) {
        if (a->kw) {
            diag_error(E->d, a->kw_loc, "%s takes no attributes ('%s')", name, a->kw);
            bad = true;
            continue;
        }
        Value x = eval(E, f, a->value, NULL);
        if (x.k == V_ERR) {
            bad = true;
        } else if (x.k != V_TENSOR && !is_num(&x)) {
            diag_error(E->d, a->value->loc, "argument %d of %s must be a tensor or a number, not %s", n + 1, name,
                       kind_name[x.k]);
            bad = true;
        }
        if (n < 2) v[n] = x;
        n++;
    }
    if (n != 2) {
        diag_error(E->d, e->loc, "%s takes 2 arguments (two tensors, or a tensor and a number), %d given", name, n);
        return v_err();
    }
    if (bad) return v_err();
    if (e->as_name) {
        diag_error(E->d, e->as_loc, "'as' names block instances; name a tensor by assigning it");
        return v_err();
    }
    return compare(E, f, op, name, v, e->loc, hint);
}

/* The relation op of v[0] and v[1], each a tensor or a number: the call
 * eq(a, b) .. ge(a, b) and the operators a == b .. a >= b (what: the call's
 * name or the operator, for the message). */
static Value compare(Elab *E, Frame *f, OpKind op, const char *what, Value v[2], Loc loc, const char *hint) {
    const char *name = op_table[op].name;
    if (v[0].k != V_TENSOR && v[1].k != V_TENSOR) {
        diag_error(E->d, loc, "%s compares tensors: give at least one tensor, not two numbers", what);
        return v_err();
    }
    Attrs at;
    int in[2];
    for (int j = 0; j < 2; j++) {
        if (v[1 - j].k != V_TENSOR || graph_node(E->g, v[1 - j].node)->dtype == DT_I32) continue;
        v[j] = promote_i32(E, f, v[j], loc);
        if (v[j].k == V_ERR) return v[j];
    }
    if (v[0].k == V_TENSOR && v[1].k == V_TENSOR) {
        attrs_defaults(op, &at);
        in[0] = v[0].node, in[1] = v[1].node;
        return make_node(E, f, op, 2, in, &at, loc, hint);
    }
    int t = v[0].k == V_TENSOR ? 0 : 1;
    if (t == 1) /* number OP x is x OP' number */
        op = op == OP_LT ? OP_GT : op == OP_GT ? OP_LT : op == OP_LE ? OP_GE : op == OP_GE ? OP_LE : op;
    /* the scalar rows follow the binary ones in the same order (ops.def) */
    OpKind sop = (OpKind)(OP_EQ_SCALAR + (op - OP_EQ));
    attrs_defaults(sop, &at);
    at.value = num(&v[1 - t]);
    return make_node(E, f, sop, 1, &v[t].node, &at, loc, hint ? hint : name);
}

/* split(x, n, axis=-1): n equal slices, bound to the assignment's targets. */
static Value eval_split(Elab *E, Frame *f, const Expr *e, const Name *targets) {
    Value x = v_err(), parts = v_err();
    int64_t axis = -1;
    int n_pos = 0;
    bool bad = false;
    for (const Arg *a = e->args; a; a = a->next) {
        Value v = eval(E, f, a->value, NULL);
        if (v.k == V_ERR) bad = true;
        if (a->kw && !strcmp(a->kw, "axis")) {
            if (v.k == V_INT) axis = v.i;
            else if (v.k != V_ERR) diag_error(E->d, a->value->loc, "axis must be an integer"), bad = true;
        } else if (a->kw) {
            diag_error(E->d, a->kw_loc, "split has no attribute '%s'; its attributes are: axis", a->kw);
            bad = true;
        } else if (n_pos++ == 0) {
            x = v;
        } else {
            parts = v;
        }
    }
    if (n_pos != 2) {
        diag_error(E->d, e->loc, "split takes a tensor and a number of parts, %d arguments given", n_pos);
        return v_err();
    }
    if (bad) return v_err();
    if (x.k != V_TENSOR || parts.k != V_INT) {
        diag_error(E->d, e->loc, "split takes a tensor and an integer, not %s and %s", kind_name[x.k],
                   kind_name[parts.k]);
        return v_err();
    }
    const Node *xn = graph_node(E->g, x.node);
    int rank = xn->shape.ndim;
    if (parts.i < 1 || parts.i > ACC_MAX_IN) {
        diag_error(E->d, e->loc, "split into %" PRId64 " parts: the number of parts must be 1 to %d", parts.i,
                   ACC_MAX_IN);
        return v_err();
    }
    if (axis < -rank || axis >= rank) {
        diag_error(E->d, e->loc, "split: axis %" PRId64 " is out of range for rank %d", axis, rank);
        return v_err();
    }
    int ax = (int)(axis < 0 ? axis + rank : axis);
    char buf[ACC_SHAPE_STR];
    if (xn->shape.dim[ax] % parts.i) {
        diag_error(E->d, e->loc, "split: dimension %d of %s is not divisible by %" PRId64, ax,
                   shape_str(&xn->shape, buf), parts.i);
        return v_err();
    }
    int n_t = 0;
    for (const Name *t = targets; t; t = t->next) n_t++;
    if (n_t != parts.i) {
        diag_error(E->d, e->loc, "split into %" PRId64 " parts assigned to %d name%s", parts.i, n_t,
                   n_t == 1 ? "" : "s");
        return v_err();
    }
    Value r = {.k = V_TUPLE, .n_tuple = (int)parts.i};
    int64_t len = xn->shape.dim[ax] / parts.i;
    const Name *t = targets;
    for (int i = 0; i < parts.i; i++, t = t->next) {
        Attrs at;
        attrs_defaults(OP_SLICE, &at);
        at.axis = ax;
        at.start = i * len;
        at.len = len;
        Value s = make_node(E, f, OP_SLICE, 1, &x.node, &at, e->loc, t->name);
        if (s.k == V_ERR) return s;
        r.tuple[i] = s.node;
    }
    return r;
}

static void exec_stmts(Elab *E, Frame *f, const Stmt *s);

/* Instantiate block b at call e: bind its formals, run its body in a fresh
 * scope, return what its `return` gave. */
static Value eval_block_call(Elab *E, Frame *f, const Expr *e, const Stmt *b) {
    for (int i = 0; i < E->depth; i++)
        if (E->stack[i] == b) {
            if (!E->recursion_reported) /* check_recursion names every cycle: not reached */
                diag_error(E->d, e->loc, "block '%s' is recursive (recursion is not allowed)", b->name);
            return v_err();
        }
    if (E->depth == MAX_BLOCK_DEPTH) {
        diag_error(E->d, e->loc, "blocks nested more than %d deep", MAX_BLOCK_DEPTH);
        return v_err();
    }
    if (!count_instance(E, e->loc)) return v_err();
    Frame frame = {.in_block = true}, *nf = &frame;
    /* arguments, evaluated in the caller's frame */
    int n_formals = 0, n_pos = 0;
    for (const Name *p = b->targets; p; p = p->next) n_formals++;
    if (n_formals > MAX_FORMALS) return v_err(); /* reported at the definition */
    bool bad = false;
    for (const Arg *a = e->args; a; a = a->next) {
        Value v = eval(E, f, a->value, NULL);
        if (v.k == V_ERR) bad = true;
        const Name *p = b->targets;
        if (a->kw) {
            while (p && strcmp(p->name, a->kw)) p = p->next;
            if (!p) {
                diag_error(E->d, a->kw_loc, "block '%s' has no parameter '%s'", b->name, a->kw);
                bad = true;
                continue;
            }
        } else {
            for (int i = 0; p && i < n_pos; i++) p = p->next;
            n_pos++;
            if (!p) {
                diag_error(E->d, a->value->loc, "block '%s' takes %d argument%s, more given", b->name, n_formals,
                           n_formals == 1 ? "" : "s");
                bad = true;
                continue;
            }
        }
        bool twice = false;
        for (Binding *x = nf->binds; x && !twice; x = x->next) twice = !strcmp(x->name, p->name);
        if (twice) {
            diag_error(E->d, a->kw ? a->kw_loc : a->value->loc, "parameter '%s' of block '%s' given twice", p->name,
                       b->name);
            bad = true;
            continue;
        }
        bind(E, nf, p->name, B_FORMAL, v, p->loc);
    }
    for (const Name *p = b->targets; p; p = p->next) {
        bool given = false;
        for (Binding *x = nf->binds; x; x = x->next) given |= !strcmp(x->name, p->name);
        if (given) continue;
        if (!p->dflt) {
            diag_error(E->d, e->loc, "missing argument '%s' of block '%s'", p->name, b->name);
            bad = true;
            continue;
        }
        Frame hparams_only = {.scope = "", .group = "", .in_block = true};
        Value v = eval(E, &hparams_only, p->dflt, NULL); /* a default sees the hyperparameters only */
        if (v.k == V_ERR) bad = true;
        bind(E, nf, p->name, B_FORMAL, v, p->loc);
    }
    const char *base = join(E, f->scope, e->as_name ? e->as_name : b->name);
    if (!bad && e->as_name && map_has(&E->scopes, base)) {
        diag_error(E->d, e->as_loc, "instance name '%s' is already used in this scope", e->as_name);
        bad = true;
    }
    if (bad) {
        unbind(E, nf);
        return v_err();
    }
    nf->scope = unique(E, &E->scopes, base);
    nf->group = *f->group ? f->group : nf->scope;
    E->stack[E->depth++] = b;
    int before = E->d->n_errors;
    exec_stmts(E, nf, b->body);
    E->depth--;
    unbind(E, nf);
    if (E->too_big) return v_err();
    if (E->d->n_errors > before && strcmp(nf->scope, b->name))
        diag_note(E->d, e->loc, "in block '%s' called here (instance '%s')", b->name, nf->scope);
    else if (E->d->n_errors > before) diag_note(E->d, e->loc, "in block '%s' called here", b->name);
    if (!nf->returned) return (Value){.k = V_NONE};
    return nf->ret;
}

static Value eval_call(Elab *E, Frame *f, const Expr *e, const Name *targets) {
    const char *hint = targets && !targets->next ? targets->name : NULL;
    const Stmt *b = find_block(E, e->name);
    if (b) return eval_block_call(E, f, e, b);
    if (!strcmp(e->name, "split")) {
        if (!targets) {
            diag_error(E->d, e->loc, "split must be assigned to names: a, b = split(x, 2)");
            return v_err();
        }
        return eval_split(E, f, e, targets);
    }
    if (!strcmp(e->name, "sqrt")) { /* of a number: a number; of a tensor: the op */
        if (!e->args || e->args->next || e->args->kw) {
            diag_error(E->d, e->loc, "sqrt takes one tensor or number (no keyword)");
            return v_err();
        }
        Value v = eval(E, f, e->args->value, NULL);
        if (v.k == V_ERR) return v;
        if (v.k == V_TENSOR) {
            if (e->as_name) {
                diag_error(E->d, e->as_loc, "'as' names block instances; name a tensor by assigning it");
                return v_err();
            }
            Attrs at;
            attrs_defaults(OP_SQRT, &at);
            return make_node(E, f, OP_SQRT, 1, &v.node, &at, e->loc, hint);
        }
        if (!is_num(&v)) {
            diag_error(E->d, e->loc, "sqrt takes a tensor or a non-negative number, not %s", kind_name[v.k]);
            return v_err();
        }
        if (num(&v) < 0) {
            diag_error(E->d, e->loc, "sqrt of a negative number (%g)", num(&v));
            return v_err();
        }
        return v_float(sqrt(num(&v)));
    }
    OpKind op = op_lookup(e->name);
    if (op == OP_GELU) return eval_gelu(E, f, e, hint);
    if (op >= OP_EQ && op <= OP_GE) return eval_compare(E, f, e, op, hint);
    if (op != OP_COUNT) return eval_op_call(E, f, e, op, NULL, hint);
    if (E->d->stopped) return v_err();
    const char *sugg = suggest_callee(E, e->name);
    if (sugg) diag_error(E->d, e->loc, "unknown op or block '%s'; did you mean '%s'?", e->name, sugg);
    else diag_error(E->d, e->loc, "unknown op or block '%s'", e->name);
    return v_err();
}

/* Evaluate e in frame f. targets: the names an assignment binds the result to
 * (names the node it creates), or NULL. */
static Value eval_expr(Elab *E, Frame *f, const Expr *e, const Name *targets) {
    const char *hint = targets && !targets->next ? targets->name : NULL;
    switch (e->kind) {
    case E_INT: return v_int(e->ival);
    case E_FLOAT: return v_float(e->fval);
    case E_BOOL: return (Value){.k = V_BOOL, .i = e->ival};
    case E_NAME: {
        Binding *b = lookup(E, f, e->name);
        if (!b) {
            const Stmt *blk = find_block(E, e->name);
            if (blk || op_lookup(e->name) != OP_COUNT)
                diag_error(E->d, e->loc, "'%s' is %s; call it with arguments", e->name, blk ? "a block" : "an op");
            else diag_error(E->d, e->loc, "use of undeclared name '%s'", e->name);
            return v_err();
        }
        return b->v;
    }
    case E_NEG: {
        Value v = eval(E, f, e->lhs, NULL);
        if (v.k == V_INT) {
            if (v.i == INT64_MIN) {
                diag_error(E->d, e->loc, "integer overflow in shape arithmetic");
                return v_err();
            }
            return v_int(-v.i);
        }
        if (v.k == V_FLOAT) return v_float(-v.f);
        if (v.k == V_TENSOR) {
            v = promote_i32(E, f, v, e->loc);
            if (v.k == V_ERR) return v;
            Attrs at;
            attrs_defaults(OP_SCALE, &at);
            at.alpha = -1;
            return make_node(E, f, OP_SCALE, 1, &v.node, &at, e->loc, hint);
        }
        if (v.k != V_ERR) diag_error(E->d, e->loc, "invalid operand to unary '-': %s", kind_name[v.k]);
        return v_err();
    }
    case E_BINOP: return eval_binop(E, f, e, hint);
    case E_CALL: return eval_call(E, f, e, targets);
    case E_LIST: {
        Value r = {.k = V_LIST};
        for (const Expr *it = e->items; it; it = it->next) {
            Value v = eval(E, f, it, NULL);
            if (v.k == V_ERR) return v;
            if (v.k != V_INT) {
                diag_error(E->d, it->loc, "list elements must be integers, not %s", kind_name[v.k]);
                return v_err();
            }
            if (r.list.ndim == ACC_MAX_DIMS) {
                diag_error(E->d, e->loc, "list has more than %d elements", ACC_MAX_DIMS);
                return v_err();
            }
            r.list.dim[r.list.ndim++] = v.i;
        }
        return r;
    }
    }
    ACC_UNREACHABLE();
}

/* eval_expr with the nesting and the work counted: no input can exhaust the
 * stack (a long chain like 1+1+...+1 nests to the left without limit in the
 * grammar) or run for ever. */
static Value eval(Elab *E, Frame *f, const Expr *e, const Name *targets) {
    if (!count_work(E, e->loc) || !enter(E, e->loc)) return v_err();
    Value v = eval_expr(E, f, e, targets);
    E->nesting--;
    return v;
}

/* ---- statements ----------------------------------------------------------- */

/* dtype[dims]: every dimension an integer in [1, ACC_MAX_DIM], the product bounded. */
static bool eval_type(Elab *E, Frame *f, const TypeExpr *t, DType *dt, Shape *s) {
    bool ok = true;
    if (!dtype_parse(t->dtype, dt)) {
        diag_error(E->d, t->dtype_loc, "unknown dtype '%s' (expected f32, i32, bf16 or f16)", t->dtype);
        ok = false;
    }
    s->ndim = 0;
    int64_t elems = 1;
    for (const Expr *d = t->dims; d; d = d->next) {
        Value v = eval(E, f, d, NULL);
        if (v.k == V_ERR) {
            ok = false;
            continue;
        }
        if (v.k != V_INT) {
            diag_error(E->d, d->loc, "dimension must be an integer, not %s", kind_name[v.k]);
            ok = false;
            continue;
        }
        if (v.i < 1 || v.i > ACC_MAX_DIM) {
            diag_error(E->d, d->loc, "dimension %" PRId64 " is out of range (1 to 2^40)", v.i);
            ok = false;
            continue;
        }
        if (s->ndim == ACC_MAX_DIMS) {
            diag_error(E->d, t->loc, "more than %d dimensions", ACC_MAX_DIMS);
            return false;
        }
        s->dim[s->ndim++] = v.i;
        if (__builtin_mul_overflow(elems, v.i, &elems) || elems > ACC_MAX_ELEMS) {
            diag_error(E->d, t->loc, "tensor has more than 2^50 elements");
            return false;
        }
    }
    return ok;
}

static bool eval_init(Elab *E, Frame *f, const Expr *e, Init *init) {
    static const char *const names[] = {"zeros", "ones", "normal", "uniform"};
    const char *callee = e->kind == E_CALL || e->kind == E_NAME ? e->name : "";
    int k = 0;
    while (k < 4 && strcmp(callee, names[k])) k++;
    if (k == 4) {
        diag_error(E->d, e->loc, "initializer must be zeros, ones, normal(std) or uniform(bound)");
        return false;
    }
    init->kind = (InitKind)k;
    int n_args = 0;
    const Arg *arg = e->kind == E_CALL ? e->args : NULL;
    for (const Arg *a = arg; a; a = a->next) n_args++;
    int want = k >= 2;
    if (n_args != want) {
        diag_error(E->d, e->loc, "%s takes %d argument%s", names[k], want, want == 1 ? "" : "s");
        return false;
    }
    if (!want) return true;
    if (arg->kw && strcmp(arg->kw, k == 2 ? "std" : "bound")) {
        diag_error(E->d, arg->kw_loc, "%s has no argument '%s'", names[k], arg->kw);
        return false;
    }
    Value v = eval(E, f, arg->value, NULL);
    if (v.k == V_ERR) return false;
    if (!is_num(&v) || num(&v) < 0) {
        diag_error(E->d, arg->value->loc, "%s needs a non-negative number", names[k]);
        return false;
    }
    init->scale = num(&v);
    return true;
}

/* The value of -D name=value, typed like the hyperparameter's default. */
static Value define_value(Elab *E, const Stmt *s, const Define *def, const Value *dflt) {
    char *end;
    const char *str = def->value;
    if (!strcmp(str, "true") || !strcmp(str, "false")) {
        if (dflt->k == V_BOOL || dflt->k == V_ERR) return (Value){.k = V_BOOL, .i = str[0] == 't'};
    } else {
        errno = 0;
        long long i = strtoll(str, &end, 10);
        if (*str && !*end && !errno) {
            if (dflt->k == V_FLOAT) return v_float((double)i);
            if (dflt->k == V_INT || dflt->k == V_ERR) return v_int(i);
        } else {
            double d = strtod(str, &end);
            if (*str && !*end && isfinite(d) && (dflt->k == V_FLOAT || dflt->k == V_ERR)) return v_float(d);
        }
    }
    diag_error(E->d, s->name_loc, "-D %s=%s: hyperparameter '%s' is %s", def->name, def->value, s->name,
               kind_name[dflt->k]);
    return v_err();
}

static void exec_hparam(Elab *E, Frame *f, const Stmt *s) {
    Binding *prev = lookup(E, f, s->name);
    if (prev) {
        diag_error(E->d, s->name_loc, "redefinition of '%s'", s->name);
        note_previous(E, prev);
        return;
    }
    Value v = eval(E, f, s->value, NULL);
    if (v.k != V_ERR && v.k != V_INT && v.k != V_FLOAT && v.k != V_BOOL) {
        diag_error(E->d, s->value->loc, "hyperparameter must be a number or a boolean, not %s", kind_name[v.k]);
        v = v_err();
    }
    for (int i = 0; i < E->n_defs; i++)
        if (!strcmp(E->defs[i].name, s->name)) {
            E->def_used[i] = true;
            v = define_value(E, s, &E->defs[i], &v);
        }
    bind(E, f, s->name, B_HPARAM, v, s->name_loc);
    if (v.k == V_INT) VEC_PUSH(E->g->hparams, pool_printf(&E->g->pool, "%s=%" PRId64, s->name, v.i));
    if (v.k == V_FLOAT) VEC_PUSH(E->g->hparams, pool_printf(&E->g->pool, "%s=%.9g", s->name, v.f));
    if (v.k == V_BOOL) VEC_PUSH(E->g->hparams, pool_printf(&E->g->pool, "%s=%s", s->name, v.i ? "true" : "false"));
}

static void exec_param(Elab *E, Frame *f, const Stmt *s) {
    Frame *where = NULL;
    Binding *prev = find_local(E, f, s->name, &where);
    if (prev && where == f) {
        diag_error(E->d, s->name_loc, "redefinition of '%s'", s->name);
        note_previous(E, prev);
        return;
    }
    DType dt;
    Shape sh;
    Init init = {0};
    bool ok = eval_type(E, f, &s->type, &dt, &sh);
    if (ok && dt != DT_F32) {
        diag_error(E->d, s->type.dtype_loc,
                   "parameters are f32 (the master weights the optimizer updates), got %s; --precision bf16 "
                   "computes in bf16",
                   dtype_name(dt));
        ok = false;
    }
    if (!s->value) {
        diag_error(E->d, s->name_loc,
                   "parameter '%s' needs an initializer: = zeros, ones, normal(std) or uniform(bound)", s->name);
        ok = false;
    } else {
        ok &= eval_init(E, f, s->value, &init);
    }
    const char *name = join(E, f->scope, s->name);
    if (ok && map_has(&E->names, name)) {
        diag_error(E->d, s->name_loc, "parameter name '%s' is already used by a tensor", name);
        ok = false;
    }
    Value v = ok ? make_leaf(E, f, OP_PARAM, name, dt, &sh, s->name_loc) : v_err();
    if (v.k == V_TENSOR) graph_node(E->g, v.node)->init = init;
    bind(E, f, s->name, B_PARAM, v, s->name_loc);
}

static void exec_assign(Elab *E, Frame *f, const Stmt *s) {
    /* refuse to rebind what is not a variable */
    for (const Name *t = s->targets; t; t = t->next) {
        Frame *where = NULL;
        Binding *b = find_local(E, f, t->name, &where);
        if (!b) b = lookup(E, f, t->name);
        if (b && (b->kind == B_HPARAM || b->kind == B_INPUT || b->kind == B_PARAM || b->kind == B_INDEX)) {
            static const char *const what[] = {"hyperparameter", "input", "parameter", "", "", "repeat index"};
            diag_error(E->d, t->loc, "cannot assign to %s '%s'", what[b->kind], t->name);
            note_previous(E, b);
            return;
        }
        for (const Name *u = s->targets; u != t; u = u->next)
            if (!strcmp(u->name, t->name)) {
                diag_error(E->d, t->loc, "'%s' assigned twice in one statement", t->name);
                return;
            }
    }
    Value v = eval(E, f, s->value, s->targets);
    int n_t = 0;
    for (const Name *t = s->targets; t; t = t->next) n_t++;
    if (v.k == V_NONE) {
        diag_error(E->d, s->value->loc, "this block returns no value");
        v = v_err();
    }
    if (n_t > 1 && v.k != V_TUPLE && v.k != V_ERR) {
        diag_error(E->d, s->targets->loc, "%d names assigned from %s", n_t, kind_name[v.k]);
        v = v_err();
    }
    if (n_t == 1 && v.k == V_TUPLE) {
        diag_error(E->d, s->targets->loc, "one name assigned from several tensors");
        v = v_err();
    }
    if (s->hint && v.k != V_ERR) {
        for (int i = 0; i < (v.k == V_TUPLE ? v.n_tuple : 1); i++) {
            int id = v.k == V_TUPLE ? v.tuple[i] : v.node;
            Node *n = v.k == V_TENSOR || v.k == V_TUPLE ? graph_node(E->g, id) : NULL;
            if (!n) {
                diag_error(E->d, s->loc, "annotation on %s: only tensors can be saved or recomputed", kind_name[v.k]);
                break;
            }
            if (op_table[n->op].flags & OPF_LEAF) {
                diag_error(E->d, s->loc, "annotation on '%s': inputs and parameters are always kept", n->name);
                break;
            }
            if (n->hint && n->hint != s->hint) {
                diag_error(E->d, s->loc,
                           "annotation @%s on '%s', which an earlier annotation @%s names: a tensor is "
                           "either saved or recomputed",
                           s->hint == HINT_SAVE ? "save" : "recompute", n->name,
                           n->hint == HINT_SAVE ? "save" : "recompute");
                break;
            }
            n->hint = s->hint;
        }
    }
    int i = 0;
    for (const Name *t = s->targets; t; t = t->next, i++) {
        Value ti = v.k == V_TUPLE ? v_tensor(v.tuple[i]) : v;
        Frame *where = NULL;
        Binding *b = find_local(E, f, t->name, &where);
        if (b) {
            b->v = ti;
        } else {
            bind(E, f, t->name, B_VAR, ti, t->loc);
        }
    }
}

static void exec_repeat(Elab *E, Frame *f, const Stmt *s) {
    Value n = eval(E, f, s->value, NULL);
    if (n.k == V_ERR) return;
    if (n.k != V_INT || n.i < 0 || n.i > MAX_REPEAT) {
        diag_error(E->d, s->value->loc, "repeat count must be an integer from 0 to %d", MAX_REPEAT);
        return;
    }
    const char *base = join(E, f->scope, s->name);
    if (map_has(&E->scopes, base)) {
        diag_error(E->d, s->name_loc, "name '%s' is already used for a block instance or repeat in this scope",
                   s->name);
        return;
    }
    if (s->index) { /* the index names a fresh integer: it hides nothing the body could mean instead */
        Binding *b = lookup(E, f, s->index);
        if (b) {
            static const char *const what[] = {"hyperparameter", "input",          "parameter",
                                               "variable",       "block argument", "repeat index"};
            diag_error(E->d, s->index_loc, "repeat index '%s' would shadow the %s '%s'", s->index, what[b->kind],
                       s->index);
            note_previous(E, b);
            return;
        }
    }
    map_at(&E->scopes, base);
    if (!enter(E, s->loc)) return;
    for (int64_t i = 0; i < n.i && !E->d->stopped && count_instance(E, s->loc); i++) {
        Frame it = {.parent = f, .in_block = f->in_block, .in_repeat = true};
        it.scope = pool_printf(&E->g->pool, "%s.%" PRId64, base, i);
        E->work += (int64_t)strlen(it.scope);
        it.group = *f->group ? f->group : it.scope;
        if (s->index) bind(E, &it, s->index, B_INDEX, v_int(i), s->index_loc);
        int before = E->d->n_errors;
        exec_stmts(E, &it, s->body);
        unbind(E, &it);
        if (E->d->n_errors > before) break; /* the same errors would repeat */
    }
    E->nesting--;
}

/* ---- the model's name ------------------------------------------------------ */

/* Why a model name cannot name the generated library, NULL if it can. The
 * name becomes C identifiers (NAME_desc, NAME_create, NAME_model, NAME_ARENA_BYTES)
 * and files beside the runtime's (NAME.h, NAME.c, libNAME.a, next to accrt.h,
 * libaccrt.a and libaccrt_cuda.a, with -I of that directory in a trainer's
 * build): so not a C keyword, main, a reserved identifier, the runtime's
 * prefixes (acc_, accrt), a standard header a trainer includes, or a
 * runtime header the generated C includes (cpu_kernels.h, cuda_schedule.h). */
static const char *model_name_problem(const char *name) {
    static const char *const keywords[] = {
        "auto",       "break",     "case",           "char",          "const",    "continue", "default",  "do",
        "double",     "else",      "enum",           "extern",        "float",    "for",      "goto",     "if",
        "inline",     "int",       "long",           "register",      "restrict", "return",   "short",    "signed",
        "sizeof",     "static",    "struct",         "switch",        "typedef",  "union",    "unsigned", "void",
        "volatile",   "while",     "_Alignas",       "_Alignof",      "_Atomic",  "_Bool",    "_Complex", "_Generic",
        "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local", "bool",     "true",     "false",    "main",
        NULL};
    static const char *const headers[] = {
        "assert",  "complex",   "ctype",       "errno",         "fenv",   "float",       "inttypes", "iso646",
        "limits",  "locale",    "math",        "setjmp",        "signal", "stdalign",    "stdarg",   "stdatomic",
        "stdbool", "stddef",    "stdint",      "stdio",         "stdlib", "stdnoreturn", "string",   "tgmath",
        "threads", "time",      "uchar",       "wchar",         "wctype", "omp",         "cblas",    "dlfcn",
        "cuda",    "cublas_v2", "cpu_kernels", "cuda_schedule", NULL};
    for (int i = 0; keywords[i]; i++)
        if (!strcmp(name, keywords[i])) return "a C keyword or main";
    for (int i = 0; headers[i]; i++)
        if (!strcmp(name, headers[i])) return "the name of a header the library, its runtime or a trainer includes";
    if (!strcmp(name, "acc") || !strncmp(name, "acc_", 4) || !strncmp(name, "accrt", 5))
        return "taken by the runtime (acc_*, accrt*)";
    if (name[0] == '_') return "a reserved C identifier (a leading '_')";
    return NULL;
}

static void exec_stmt(Elab *E, Frame *f, const Stmt *s) {
    bool top = f == E->top;
    static const char *const top_only[] = {
        [S_MODEL] = "model", [S_HPARAM] = "hparam",       [S_INPUT] = "input",
        [S_LOSS] = "loss",   [S_SAVE] = "save",           [S_RECOMPUTE] = "recompute",
        [S_BLOCK] = "block", [S_PRECISION] = "precision", [S_OPTIMIZER_STATE] = "optimizer_state"};
    if (!top && s->kind < (int)(sizeof top_only / sizeof *top_only) && top_only[s->kind]) {
        diag_error(E->d, s->loc, "'%s' is only allowed at the top level", top_only[s->kind]);
        return;
    }
    switch (s->kind) {
    case S_MODEL:
        if (E->model_stmt) {
            diag_error(E->d, s->loc, "the model is named twice");
            diag_note(E->d, E->model_stmt->loc, "previous definition is here");
            return;
        }
        E->model_stmt = s;
        E->g->model = pool_strdup(&E->g->pool, s->name);
        const char *why = model_name_problem(s->name);
        if (why)
            diag_error(E->d, s->name_loc, "model name '%s' cannot name the generated library: it is %s", s->name, why);
        return;
    case S_HPARAM: exec_hparam(E, f, s); return;
    case S_PRECISION:
        if (E->precision_stmt) {
            diag_error(E->d, s->loc, "the precision is set twice");
            diag_note(E->d, E->precision_stmt->loc, "previous setting is here");
            return;
        }
        E->precision_stmt = s;
        if (!precision_known(s->name)) {
            diag_error(E->d, s->name_loc, "unknown precision '%s' (expected " ACC_PRECISIONS ")", s->name);
            return;
        }
        E->g->precision = pool_strdup(&E->g->pool, s->name);
        return;
    case S_OPTIMIZER_STATE:
        if (E->optstate_stmt) {
            diag_error(E->d, s->loc, "the optimizer state is set twice");
            diag_note(E->d, E->optstate_stmt->loc, "previous setting is here");
            return;
        }
        E->optstate_stmt = s;
        if (strcmp(s->name, "fp32") && strcmp(s->name, "bf16") && strcmp(s->name, "host")) {
            diag_error(E->d, s->name_loc, "unknown optimizer state '%s' (expected fp32, bf16 or host)", s->name);
            return;
        }
        E->g->optimizer_state = pool_strdup(&E->g->pool, s->name);
        return;
    case S_INPUT: {
        Binding *prev = lookup(E, f, s->name);
        if (prev) {
            diag_error(E->d, s->name_loc, "redefinition of '%s'", s->name);
            note_previous(E, prev);
            return;
        }
        if (map_has(&E->names, s->name)) {
            diag_error(E->d, s->name_loc, "input name '%s' is already used by a tensor", s->name);
            return;
        }
        DType dt;
        Shape sh;
        bool ok = eval_type(E, f, &s->type, &dt, &sh);
        if (ok && dt != DT_F32 && dt != DT_I32) {
            /* the runtime feeds f32 and i32; the precision pass casts to bf16 */
            diag_error(E->d, s->type.dtype_loc, "inputs are f32 or i32, got %s; --precision bf16 casts them",
                       dtype_name(dt));
            ok = false;
        }
        Value v = ok ? make_leaf(E, f, OP_INPUT, pool_strdup(&E->g->pool, s->name), dt, &sh, s->name_loc) : v_err();
        bind(E, f, s->name, B_INPUT, v, s->name_loc);
        return;
    }
    case S_PARAM: exec_param(E, f, s); return;
    case S_ASSIGN: exec_assign(E, f, s); return;
    case S_REPEAT: exec_repeat(E, f, s); return;
    case S_RETURN: {
        if (!f->in_block || f->in_repeat) {
            diag_error(E->d, s->loc, "'return' is only allowed in a block body, outside repeat");
            return;
        }
        f->ret = eval(E, f, s->value, NULL);
        f->returned = true;
        if (f->ret.k == V_TUPLE) {
            diag_error(E->d, s->value->loc, "a block returns one value");
            f->ret = v_err();
        }
        return;
    }
    case S_LOSS: {
        if (E->loss_stmt) {
            diag_error(E->d, s->loc, "the loss is designated twice");
            diag_note(E->d, E->loss_stmt->loc, "previous designation is here");
            return;
        }
        E->loss_stmt = s;
        static const Name loss_name = {"loss", {0}, NULL, NULL};
        Value v = eval(E, f, s->value, &loss_name);
        if (v.k == V_ERR) return;
        const Node *n = v.k == V_TENSOR ? graph_node(E->g, v.node) : NULL;
        if (!n || n->shape.ndim != 0 || n->dtype != DT_F32 || (op_table[n->op].flags & OPF_LEAF)) {
            char buf[ACC_SHAPE_STR];
            diag_error(E->d, s->value->loc, "the loss must be a computed f32 scalar, not %s%s%s",
                       n ? dtype_name(n->dtype) : kind_name[v.k], n ? shape_str(&n->shape, buf) : "",
                       n && (op_table[n->op].flags & OPF_LEAF) ? " input or parameter" : "");
            return;
        }
        E->g->loss = v.node;
        return;
    }
    case S_SAVE:
    case S_RECOMPUTE:
        for (const Name *gl = s->targets; gl; gl = gl->next) {
            if (!*gl->name) {
                diag_error(E->d, gl->loc, "empty name pattern");
                continue;
            }
            if (s->kind == S_SAVE) VEC_PUSH(E->g->save_globs, pool_strdup(&E->g->pool, gl->name));
            else VEC_PUSH(E->g->recompute_globs, pool_strdup(&E->g->pool, gl->name));
        }
        return;
    case S_BLOCK: return; /* collected before execution */
    }
}

static void exec_stmts(Elab *E, Frame *f, const Stmt *s) {
    for (; s && !E->d->stopped && count_work(E, s->loc); s = s->next) {
        if (f->returned) {
            diag_error(E->d, s->loc, "statement after 'return'");
            return;
        }
        exec_stmt(E, f, s);
    }
}

/* Blocks are visible before their definition; check them once up front. */
static void collect_blocks(Elab *E) {
    for (const Stmt *s = E->prog->stmts; s; s = s->next) {
        if (s->kind != S_BLOCK) continue;
        void **first = map_at(&E->blocks, s->name);
        if (*first) {
            diag_error(E->d, s->name_loc, "redefinition of block '%s'", s->name);
            diag_note(E->d, ((const Stmt *)*first)->name_loc, "previous definition is here");
        } else {
            *first = (void *)(uintptr_t)s; /* the map holds const Stmt pointers */
        }
        if (op_lookup(s->name) != OP_COUNT || !strcmp(s->name, "split") || !strcmp(s->name, "sqrt"))
            diag_error(E->d, s->name_loc, "block '%s' has the name of a built-in op", s->name);
        int n_formals = 0;
        for (const Name *p = s->targets; p; p = p->next) n_formals++;
        if (n_formals > MAX_FORMALS) {
            diag_error(E->d, s->name_loc, "block '%s' has more than %d parameters", s->name, MAX_FORMALS);
            continue;
        }
        for (const Name *p = s->targets; p; p = p->next)
            for (const Name *q = s->targets; q != p; q = q->next)
                if (!strcmp(p->name, q->name)) {
                    diag_error(E->d, p->loc, "duplicate parameter '%s' in block '%s'", p->name, s->name);
                    diag_note(E->d, q->loc, "previous definition is here");
                }
    }
}

/* ---- recursion: the blocks' call graph, checked before elaboration -------- */

typedef struct {
    Elab *E;
    StrMap state; /* block name -> 1 on the path, 2 done */
    const Stmt *path[MAX_BLOCK_DEPTH + 1];
    int depth;
} CallWalk;

static void walk_block(CallWalk *w, const Stmt *b);

static void walk_expr(CallWalk *w, const Expr *e) {
    for (; e; e = e->next) {
        if (e->kind == E_CALL) {
            const Stmt *b = find_block(w->E, e->name);
            void **st = b ? map_at(&w->state, b->name) : NULL;
            if (st && *st == (void *)1) { /* a cycle: from b on the path back to b */
                int k = w->depth - 1;
                while (k > 0 && w->path[k] != b) k--;
                char chain[512];
                size_t len = 0;
                for (int i = k; i < w->depth && len < sizeof chain; i++)
                    len += (size_t)snprintf(chain + len, sizeof chain - len, "%s -> ", w->path[i]->name);
                if (len < sizeof chain) snprintf(chain + len, sizeof chain - len, "%s", b->name);
                diag_error(w->E->d, e->loc, "block '%s' is recursive: %s (recursion is not allowed)", b->name, chain);
                w->E->recursion_reported = true;
                diag_note(w->E->d, b->name_loc, "'%s' is defined here", b->name);
            } else if (st && !*st && w->depth < MAX_BLOCK_DEPTH) {
                walk_block(w, b);
            }
            for (const Arg *a = e->args; a; a = a->next) walk_expr(w, a->value);
        }
        if (e->kind == E_BINOP || e->kind == E_NEG) walk_expr(w, e->lhs);
        if (e->kind == E_BINOP) walk_expr(w, e->rhs);
        if (e->kind == E_LIST) walk_expr(w, e->items);
    }
}

static void walk_stmts(CallWalk *w, const Stmt *s) {
    for (; s; s = s->next) {
        if (s->kind == S_BLOCK) continue;
        walk_expr(w, s->value);
        walk_expr(w, s->type.dims);
        walk_stmts(w, s->body);
    }
}

static void walk_block(CallWalk *w, const Stmt *b) {
    *map_at(&w->state, b->name) = (void *)1;
    w->path[w->depth++] = b;
    for (const Name *p = b->targets; p; p = p->next) walk_expr(w, p->dflt);
    walk_stmts(w, b->body);
    w->depth--;
    *map_at(&w->state, b->name) = (void *)2;
}

/* Every cycle of block calls, named with its path at the call that closes
 * it, whether or not the model calls the blocks. (eval_block_call does not
 * report a recursion again.) */
static void check_recursion(Elab *E) {
    CallWalk w = {.E = E};
    for (const Stmt *s = E->prog->stmts; s; s = s->next)
        if (s->kind == S_BLOCK && find_block(E, s->name) == s && !map_get(&w.state, s->name)) walk_block(&w, s);
    map_free(&w.state);
}

/* A save/recompute statement's pattern, in statement order. */
typedef struct {
    const Name *name;
    bool save;
} Pattern;

/* Where a tensor's must-save or must-recompute comes from: SRC_NONE, its own
 * annotation (SRC_HINT), or the index of the first pattern that matches it. */
enum { SRC_NONE = -1, SRC_HINT = -2 };

static Loc source_loc(const Elab *E, const Pattern *pats, int src, int node) {
    return src == SRC_HINT ? graph_node(E->g, node)->loc : pats[src].name->loc;
}

static const char *source_str(Elab *E, const Pattern *pats, int src, bool save) {
    if (src == SRC_HINT) return save ? "annotation @save" : "annotation @recompute";
    return pool_printf(&E->tmp, "%s \"%s\"", save ? "save" : "recompute", pats[src].name->name);
}

/* Patterns of save/recompute statements (top level only) must be well formed
 * and name a computed tensor (inputs and parameters are always kept). A
 * pattern without wildcards is looked up; each other one scans the tensors,
 * so there may be at most MAX_PATTERNS of those. A tensor that both a save
 * and a recompute (statement or annotation) name is an error at the
 * recompute, once per recompute pattern. */
static void check_globs(Elab *E) {
    int n = E->g->nodes.n, n_scans = 0;
    VEC(Pattern) pats = {0};
    for (const Stmt *s = E->prog->stmts; s; s = s->next)
        if (s->kind == S_SAVE || s->kind == S_RECOMPUTE)
            for (const Name *gl = s->targets; gl; gl = gl->next)
                if (*gl->name) VEC_PUSH(pats, ((Pattern){gl, s->kind == S_SAVE}));
    if (!pats.n) return;
    int *src[2]; /* [0]: save, [1]: recompute; per node */
    for (int k = 0; k < 2; k++) src[k] = acc_xrealloc(NULL, (size_t)(n + 1) * sizeof(int));
    StrMap by_name = {0}; /* node name -> id + 1 */
    for (int i = 0; i < n; i++) {
        const Node *x = graph_node(E->g, i);
        src[0][i] = x->hint == HINT_SAVE ? SRC_HINT : SRC_NONE;
        src[1][i] = x->hint == HINT_RECOMPUTE ? SRC_HINT : SRC_NONE;
        *map_at(&by_name, x->name) = (void *)(intptr_t)(i + 1);
    }
    for (int k = 0; k < pats.n; k++) {
        const Name *gl = pats.v[k].name;
        const char *what = pats.v[k].save ? "save" : "recompute";
        int *mine = src[pats.v[k].save ? 0 : 1];
        const char *bad = name_pattern_problem(gl->name);
        if (bad) {
            diag_error(E->d, gl->loc, "%s \"%s\": malformed pattern: %s", what, gl->name, bad);
            continue;
        }
        bool hit = false, leaf = false;
        if (!name_pattern_is_glob(gl->name)) {
            int id = (int)(intptr_t)map_get(&by_name, gl->name) - 1;
            if (id >= 0 && (op_table[graph_node(E->g, id)->op].flags & OPF_LEAF)) {
                diag_error(E->d, gl->loc, "%s \"%s\": '%s' is %s; only computed tensors can be saved or recomputed",
                           what, gl->name, gl->name, graph_node(E->g, id)->op == OP_INPUT ? "an input" : "a parameter");
                continue;
            }
            if (id >= 0) {
                hit = true;
                if (mine[id] == SRC_NONE) mine[id] = k;
            }
        } else if (++n_scans > MAX_PATTERNS) {
            diag_error(E->d, gl->loc, "more than %d save/recompute patterns with wildcards", MAX_PATTERNS);
            break;
        } else {
            for (int j = 0; j < n; j++) {
                if (fnmatch(gl->name, E->g->nodes.v[j].name, 0)) continue;
                if (op_table[E->g->nodes.v[j].op].flags & OPF_LEAF) {
                    leaf = true;
                    continue;
                }
                hit = true;
                if (mine[j] == SRC_NONE) mine[j] = k;
            }
        }
        if (!hit)
            diag_error(E->d, gl->loc, "%s \"%s\": the pattern matches %s", what, gl->name,
                       leaf ? "only inputs and parameters (they are always kept)" : "no computed tensor");
    }
    bool *told = acc_xrealloc(NULL, (size_t)pats.n * sizeof(bool)); /* recompute pattern already reported */
    memset(told, 0, (size_t)pats.n * sizeof(bool));
    for (int i = 0; i < n && !E->d->stopped; i++) {
        int sv = src[0][i], rc = src[1][i];
        if (sv == SRC_NONE || rc == SRC_NONE || (rc >= 0 && told[rc])) continue;
        if (rc >= 0) told[rc] = true;
        const char *name = graph_node(E->g, i)->name;
        diag_error(E->d, source_loc(E, pats.v, rc, i), "'%s' is both saved (%s) and recomputed (%s)", name,
                   source_str(E, pats.v, sv, true), source_str(E, pats.v, rc, false));
        diag_note(E->d, source_loc(E, pats.v, sv, i), "%s is here", source_str(E, pats.v, sv, true));
    }
    free(told), free(src[0]), free(src[1]);
    map_free(&by_name);
    VEC_FREE(pats);
}

int fe_elaborate(Diag *d, const Program *prog, const Define *defs, int n_defs, Graph *g) {
    Elab E = {.d = d, .g = g, .prog = prog, .defs = defs, .n_defs = n_defs};
    E.def_used = acc_xrealloc(NULL, (size_t)(n_defs + 1) * sizeof(bool));
    memset(E.def_used, 0, (size_t)(n_defs + 1) * sizeof(bool));
    Frame top = {.scope = "", .group = ""};
    E.top = &top;
    g->source = pool_strdup(&g->pool, d->file);
    collect_blocks(&E);
    check_recursion(&E);
    exec_stmts(&E, &top, prog->stmts);
    if (d->n_errors == 0) {
        for (int i = 0; i < n_defs; i++)
            if (!E.def_used[i])
                diag_error_file(d, "-D %s=%s: the model has no hyperparameter '%s'", defs[i].name, defs[i].value,
                                defs[i].name);
        if (!E.loss_stmt) diag_error_file(d, "the model designates no loss (add 'loss EXPR;')");
        else if (g->loss < 0) diag_error(d, E.loss_stmt->loc, "the loss could not be computed");
        check_globs(&E);
    }
    free(E.def_used);
    map_free(&E.names);
    map_free(&E.scopes);
    map_free(&E.blocks);
    map_free(&E.binds);
    map_free(&E.leaves);
    pool_free(&E.tmp);
    return d->n_errors;
}
