/* ir.h - acc's tensor-graph IR, the op table, and the compile-time memory arena.
 *
 * One Node per tensor: op, inputs (dense ids of earlier nodes), attributes,
 * dtype, static shape, hierarchical scope name and DSL source location.
 * Nodes are appended in a topological order (inputs before users); analyses
 * live in side arrays indexed by node id. All compile-time memory comes from
 * a Pool freed in one call. This header includes nothing of the front end:
 * the IR is built by the front end and consumed by passes/ and codegen/.
 */
#ifndef ACC_IR_H
#define ACC_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ACC_VERSION "0.1.0"

/* ---- compiler bugs ------------------------------------------------------ */

void acc_panic(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
#define ACC_ASSERT(c) ((c) ? (void)0 : acc_panic(__FILE__, __LINE__, "assertion failed: %s", #c))
#define ACC_UNREACHABLE() acc_panic(__FILE__, __LINE__, "unreachable")

/* ---- compile-time memory ------------------------------------------------ */

typedef struct PoolChunk PoolChunk;
typedef struct {
    PoolChunk *head;
    size_t used_bytes; /* total handed out, for statistics */
} Pool;

void *pool_alloc(Pool *p, size_t size_bytes); /* zeroed, 16-byte aligned */
char *pool_strdup(Pool *p, const char *s);
char *pool_printf(Pool *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pool_free(Pool *p);

/* Growable array of any element type, memory from the C heap. */
#define VEC(T)      \
    struct {        \
        T *v;       \
        int n, cap; \
    }
#define VEC_PUSH(vec, x)                                                          \
    do {                                                                          \
        if ((vec).n == (vec).cap) {                                               \
            (vec).cap = (vec).cap ? 2 * (vec).cap : 16;                           \
            (vec).v = acc_xrealloc((vec).v, (size_t)(vec).cap * sizeof *(vec).v); \
        }                                                                         \
        (vec).v[(vec).n++] = (x);                                                 \
    } while (0)
#define VEC_FREE(vec) (free((vec).v), (vec).v = NULL, (vec).n = (vec).cap = 0)
void *acc_xrealloc(void *p, size_t size_bytes);
/* n zeroed elements of size_bytes each (at least one); panics when out of memory. */
void *acc_xcalloc(size_t n, size_t size_bytes);

/* ---- utilities shared by the compiler's layers (util.c) ----------------- */

/* Seconds on the monotonic clock: deadlines and phase times. */
double acc_now_s(void);
/* The file at path, read whole, NUL-terminated, malloc'ed (caller frees);
 * *len_bytes: its size without the NUL. Reading stops after the 64 KiB chunk
 * that takes it past max_bytes: then, with over non-NULL, *over is set and
 * the part read is returned; with over NULL it is an error ("'path' is larger
 * than N bytes"). NULL with err ("cannot open 'path': reason", "cannot read
 * 'path'") on a failure. */
char *acc_read_file(const char *path, size_t max_bytes, size_t *len_bytes, bool *over, char *err, size_t err_len);

/* ---- source locations --------------------------------------------------- */

/* A span on one line of a source file; line and col are 1-based, len >= 1. */
typedef struct {
    const char *file; /* display name */
    int line, col, len;
} Loc;

/* ---- diagnostics (ir/diag.c) ----------------------------------------------
 * One path for every phase: the front end reports its errors through a Diag
 * over the source text, and a later pass (the planner's refusal, a must-save
 * conflict) through diag_for_graph, at the location its node carries. */

#define DIAG_MAX_ERRORS 50

typedef struct {
    const char *file; /* display name */
    const char *src;  /* whole source text (may contain NULs) */
    size_t src_len;
    FILE *out;
    int n_errors; /* found */
    int n_shown;  /* printed (at most DIAG_MAX_ERRORS): the count the summary line states */
    bool stopped; /* hit DIAG_MAX_ERRORS */
} Diag;

/* gcc-style "file:line:col: error: msg", then the source line and a caret. */
void diag_error(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error not tied to a source line: "file: error: msg". */
void diag_error_file(Diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- dtypes and shapes -------------------------------------------------- */

typedef enum { DT_F32, DT_I32, DT_BF16, DT_F16, DT_COUNT } DType;
const char *dtype_name(DType t);
/* The model precisions (--precision, `precision P;`): fp32, tf32 (f32
 * tensors, the cuda target's GEMMs on TF32 tensor cores) and bf16 (bf16
 * activations, passes/precision.c). */
#define ACC_PRECISIONS "fp32, tf32 or bf16"
bool precision_known(const char *s);

/* Whether kernels compute on t: f32 and bf16 (f16 is a storage type only). */
static inline bool dtype_is_float(DType t) { return t == DT_F32 || t == DT_BF16; }
size_t dtype_size(DType t);
bool dtype_parse(const char *s, DType *out);

#define ACC_MAX_DIMS 6
#define ACC_MAX_DIM ((int64_t)1 << 40)   /* absurd above this */
#define ACC_MAX_ELEMS ((int64_t)1 << 50) /* elements of one tensor */

typedef struct {
    int ndim;
    int64_t dim[ACC_MAX_DIMS];
} Shape;

int64_t shape_elems(const Shape *s);
bool shape_eq(const Shape *a, const Shape *b);
/* "[4,1024,768]"; buf of at least ACC_SHAPE_STR bytes */
#define ACC_SHAPE_STR 160
const char *shape_str(const Shape *s, char *buf);
/* attention's mask and bias over the scores [B, heads, Tq, Tk]: a shape of
 * rank 1, 3 or 4 aligns with them from the last dimension, a rank-2 mask
 * (key_padding) is [B, Tk]; each dimension equal to the full one or 1.
 * st: the element strides over [B, heads, Tq, Tk] of a row-major tensor of
 * shape s, 0 where it broadcasts. False when s does not broadcast so. */
bool attn_operand_strides(const Shape *s, const int64_t full[4], bool key_padding, int64_t st[4]);

/* ---- the op table ------------------------------------------------------- */

enum {
    OPF_LEAF = 1 << 0,      /* input or parameter, no computation */
    OPF_ELEM = 1 << 1,      /* fusion class: may join an elementwise chain (codegen/fuse.c) */
    OPF_RECOMPUTE = 1 << 2, /* recompute permission: recomputing gives the forward's bits */
    OPF_INTERNAL = 1 << 3,  /* inserted by a pass (cast), not callable from the DSL */
    OPF_NOGRAD = 1 << 4,    /* a constant to the backward: no gradient flows through it (comparisons) */
};

/* What an op's backward reads of the forward pass (the op table's grad column). */
enum {
    GR_IN0 = 1 << 0,
    GR_IN1 = 1 << 1,
    GR_IN2 = 1 << 2,
    GR_OUT = 1 << 3,   /* its own output */
    GR_AUX = 1 << 4,   /* its own statistics tail */
    GR_CROSS = 1 << 5, /* input j's gradient reads the other input */
    GR_IN3 = 1 << 6,   /* inputs 3 and 4: an op's keyword operands (attention's mask, bias) */
    GR_IN4 = 1 << 7
};

typedef enum {
#define X(e, name, mn, mx, attrs, shape, flags, grad, kernel, cost, emit, prec) OP_##e,
#include "ops.def"
#undef X
    OP_COUNT
} OpKind;

/* Attributes of every op, by name; which ones an op takes is its row's
 * attribute string. ATTR_NONE marks an int attribute that was not given.
 * A tensor attribute (type t: attention's mask and bias) is an optional
 * operand passed by keyword: the node's inputs hold it after the positional
 * ones, in the order of the attribute string, and the field holds its
 * input index (ATTR_NONE: not given). */
#define ATTR_NONE INT64_MIN
typedef struct {
    int64_t axis, start, len, dim0, dim1, heads, kv_heads;
    int64_t mask, bias; /* tensor attributes: input indices */
    bool transpose_a, transpose_b, causal, keepdim;
    double eps, p, alpha, beta, theta, value;
    Shape shape; /* reshape target; a -1 entry is inferred */
} Attrs;

typedef enum { ATTR_INT, ATTR_FLOAT, ATTR_BOOL, ATTR_SHAPE, ATTR_TENSOR } AttrType;
/* The named attribute fields of Attrs, for the front end and the IR printer. */
typedef struct {
    const char *name;
    AttrType type;
    size_t offset;
} AttrField;
const AttrField *attr_field(const char *name); /* NULL if no such attribute */

typedef struct Graph Graph;
typedef struct Node Node;

/* A shape rule: checks the inputs, sets n->shape, n->dtype and n->aux_elems.
 * On error writes a one-line message (naming the shapes) and returns false. */
typedef bool (*ShapeRule)(const Graph *g, Node *n, char *err, size_t err_len);

typedef struct {
    const char *name;
    int min_in, max_in;
    const char *attrs;
    ShapeRule shape;
    unsigned flags;
    unsigned grad_reads; /* GR_* */
    const char *cpu_kernel;
    double (*flops)(const Graph *g, const Node *n); /* forward FLOPs */
    const char *prec;                               /* precision rule: "aff:a" (ops.def) */
} OpInfo;

extern const OpInfo op_table[OP_COUNT];
static inline const OpInfo *op_info(OpKind k) { return &op_table[k]; }
OpKind op_lookup(const char *dsl_name); /* OP_COUNT if none (and for leaves and internal ops) */
/* Whether ops callable from the DSL include k (not a leaf, not internal). */
static inline bool op_callable(OpKind k) { return !(op_table[k].flags & (OPF_LEAF | OPF_INTERNAL)); }
/* The class of input i in op k's precision rule (ops.def): 'a', 'p', 'f' or
 * 'i' ('c' for cast, 0 past the op's inputs), and of the output (i = -1). */
char op_prec_class(OpKind k, int i);
/* Fill a with the defaults of op k's attribute string. */
void attrs_defaults(OpKind k, Attrs *a);
/* The number of op k's tensor attributes (keyword operands): its row's
 * max_in counts them, its positional inputs are at most max_in minus them. */
int op_keyword_operands(OpKind k);
/* The input of n that its tensor attribute at field (n->attr.mask, ...)
 * names: a node id, or -1 when it was not given. */
int node_operand(const Node *n, int64_t field);

/* ---- nodes and graphs --------------------------------------------------- */

#define ACC_MAX_IN 8

typedef enum { INIT_ZEROS, INIT_ONES, INIT_NORMAL, INIT_UNIFORM } InitKind;
typedef struct {
    InitKind kind;
    double scale; /* std for normal, bound for uniform */
} Init;

enum { HINT_NONE = 0, HINT_SAVE = 1, HINT_RECOMPUTE = 2 };

struct Node {
    int id;
    OpKind op;
    int n_in;
    int in[ACC_MAX_IN]; /* node ids, all < id */
    Attrs attr;
    DType dtype;
    Shape shape;
    int64_t aux_elems; /* f32 statistics stored after the tensor (0: none) */
    const char *name;  /* hierarchical: "layers.7.attn.qkv" */
    const char *group; /* block instance it belongs to: "layers.7", "" at top */
    Loc loc;
    Init init; /* parameters only */
    int hint;  /* HINT_*: must-save / must-recompute from the DSL */
};

struct Graph {
    Pool pool; /* names and strings */
    const char *model;
    VEC(Node) nodes;
    int loss; /* node id of the scalar loss, -1 if none */
    /* name globs from top-level save/recompute statements, applied by the planner */
    VEC(const char *) save_globs;
    VEC(const char *) recompute_globs;
    VEC(const char *) hparams;   /* "B=4" as bound, in file order */
    const char *precision;       /* the DSL's `precision P;` ("fp32", "tf32", "bf16"), NULL if none */
    const char *optimizer_state; /* the DSL's `optimizer_state S;` ("fp32", "bf16"), NULL if none */
    DType act_dtype;             /* the activations' dtype: DT_F32, or DT_BF16 (passes/precision.c) */
    const char *source;          /* the DSL file it came from */
    const char *source_text;     /* its text, for diagnostics after the front end (NULL: none) */
    size_t source_len;
};

void graph_init(Graph *g, const char *model);
void graph_free(Graph *g);
/* Append a node; inputs must already exist. Returns its id. The shape rule is
 * not run here (the front end runs it to report errors at the DSL location). */
int graph_add(Graph *g, const Node *proto);
static inline Node *graph_node(const Graph *g, int id) { return &g->nodes.v[id]; }
int graph_find(const Graph *g, const char *name); /* -1 if none */

/* A Diag over g's source text: errors of later passes at a node's loc. */
Diag diag_for_graph(const Graph *g, FILE *out);

int64_t node_bytes(const Node *n); /* tensor plus aux tail */
/* Bytes of the tensor alone: its gradient has its dtype (a bf16 activation's
 * gradient is bf16). */
int64_t node_tensor_bytes(const Node *n);
/* Whether b is a bias of width n for an output of rank r: [n], or [n] with
 * leading ones and rank at most r (the third input of linear). */
bool shape_is_bias(const Shape *b, int64_t n, int r);

/* ---- save/recompute name patterns ----------------------------------------- */

/* Why an fnmatch(3) pattern of a save/recompute constraint is malformed
 * ("empty pattern", a '[' without its ']', a trailing '\\'), NULL if it is
 * well formed. (fnmatch would take a lone '[' literally.) */
const char *name_pattern_problem(const char *pattern);
/* Whether the pattern has wildcards (else it names one tensor). */
bool name_pattern_is_glob(const char *pattern);

/* ---- byte totals ---------------------------------------------------------- */

/* Checked int64 arithmetic for byte counts: false when the exact result does
 * not fit (then *out is unspecified). */
static inline bool acc_add_i64(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }
static inline bool acc_mul_i64(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* The most bytes all of a model's tensors (node_bytes of every node) may
 * total; the front end rejects a larger model at the tensor that passes it,
 * and acc plan --graph a graph whose sizes total more. Every buffer of a
 * training step is one of a tensor's copies (forward, recomputed, gradient,
 * parameter gradient, optimizer state: fewer than 8), rounded up to the
 * alignment, so that every byte total the passes compute (live bytes, arena
 * offsets, peaks, summaries) stays far below INT64_MAX. 2^58 bytes = 256 PiB. */
#define ACC_MAX_MODEL_BYTES ((int64_t)1 << 58)
int64_t graph_param_count(const Graph *g);
int64_t graph_param_bytes(const Graph *g);

/* Print the graph as text, one node per line (the --emit=ir format). */
void ir_print(const Graph *g, FILE *out);

/* Check structural invariants; on the first violation prints it and returns
 * false. Run between passes in debug builds and tests. */
bool ir_verify(const Graph *g, FILE *err);

/* ---- sizes on the command line ------------------------------------------ */

/* "8G", "512M", "1.5GiB", "8000MB", "123": K/M/G/T and KiB..TiB are powers of
 * 1024, kB/MB/GB/TB powers of 1000, B or nothing is bytes. Returns false on
 * anything else (including overflow, negatives, fractional bytes). */
bool parse_size(const char *s, int64_t *bytes_out);
/* "8.00 GiB"-style rendering for humans */
const char *format_bytes(int64_t bytes, char *buf, size_t len);

#endif
