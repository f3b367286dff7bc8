/* frontend.h - the DSL front end: diagnostics, the AST, the parser and the
 * elaborator that turns a .acdsl file into an IR Graph.
 *
 * Pipeline: fe_parse (flex + bison, AST in a Pool) -> fe_elaborate (blocks
 * instantiated, repeats unrolled, hyperparameters bound, shapes inferred by the
 * op table's shape rules). Every user error is a Diag (ir.h) at a source span; the
 * front end counts them, keeps going, and never builds a graph from a file
 * with errors.
 */
#ifndef ACC_FRONTEND_H
#define ACC_FRONTEND_H

#include "ir.h"

/* ---- AST ---------------------------------------------------------------------- */

typedef enum { E_INT, E_FLOAT, E_BOOL, E_NAME, E_BINOP, E_NEG, E_CALL, E_LIST } ExprKind;

typedef struct Expr Expr;
typedef struct Arg Arg;

struct Arg {
    const char *kw; /* NULL for a positional argument */
    Loc kw_loc;
    Expr *value;
    Arg *next;
};

/* E_BINOP's comparisons, in the order of the op table's eq .. ge rows (the
 * arithmetic operators are their own character) */
typedef enum { BIN_EQ = 256, BIN_NE, BIN_LT, BIN_LE, BIN_GT, BIN_GE } BinCmp;

struct Expr {
    ExprKind kind;
    Loc loc;
    int64_t ival;
    double fval;
    const char *name;    /* E_NAME, E_CALL callee */
    int op;              /* E_BINOP: '+', '-', '*', '/', '%' or a BinCmp */
    Expr *lhs, *rhs;     /* E_BINOP; E_NEG uses lhs */
    bool paren;          /* written in parentheses */
    Arg *args;           /* E_CALL */
    Expr *items;         /* E_LIST, linked by next */
    const char *as_name; /* E_CALL: "f(x) as name" instance name */
    Loc as_loc;
    Expr *next;
};

typedef enum {
    S_MODEL,           /* model NAME; */
    S_HPARAM,          /* hparam NAME = expr; */
    S_INPUT,           /* input NAME: type; */
    S_PARAM,           /* param NAME: type (= init)?; */
    S_ASSIGN,          /* (@save|@recompute)? a, b = expr; */
    S_REPEAT,          /* repeat (i in)? count as NAME { ... } */
    S_RETURN,          /* return expr; */
    S_LOSS,            /* loss expr; */
    S_SAVE,            /* save "glob", ...; */
    S_RECOMPUTE,       /* recompute "glob", ...; */
    S_BLOCK,           /* block NAME(formals) { ... } */
    S_PRECISION,       /* precision fp32|tf32|bf16; */
    S_OPTIMIZER_STATE, /* optimizer_state fp32|bf16; */
} StmtKind;

typedef struct Name Name;
struct Name {
    const char *name;
    Loc loc;
    Expr *dflt; /* block formals: default value */
    Name *next;
};

typedef struct {
    const char *dtype;
    Loc dtype_loc;
    Expr *dims; /* linked by next */
    Loc loc;
} TypeExpr;

typedef struct Stmt Stmt;
struct Stmt {
    StmtKind kind;
    Loc loc;
    const char *name; /* model, hparam, input, param, repeat scope, block */
    Loc name_loc;
    Name *targets; /* S_ASSIGN; S_SAVE/S_RECOMPUTE: the globs; S_BLOCK: formals */
    int hint;      /* S_ASSIGN: HINT_* */
    Expr *value;   /* hparam default, assigned value, return, loss, repeat count, param init */
    TypeExpr type;
    const char *index; /* S_REPEAT index variable or NULL */
    Loc index_loc;
    Stmt *body;  /* S_REPEAT, S_BLOCK */
    Loc end_loc; /* closing brace of a body */
    Stmt *next;
};

typedef struct {
    Stmt *stmts;
} Program;

/* Parse src into *prog (AST memory from pool). Returns the number of errors. */
int fe_parse(Diag *d, Pool *pool, Program *prog);

/* ---- elaboration ------------------------------------------------------------ */

/* -D name=value from the command line */
typedef struct {
    const char *name, *value;
} Define;

/* Elaborate prog into g (graph_init'ed by the caller). Returns the number of
 * errors (all reported through d). */
int fe_elaborate(Diag *d, const Program *prog, const Define *defs, int n_defs, Graph *g);

/* Read, parse and elaborate one file: the whole front end. src_name is what
 * diagnostics print. Returns the number of errors; g holds a verified graph
 * only when it returns 0. */
int fe_load_file(const char *path, const Define *defs, int n_defs, Graph *g, FILE *err);
int fe_load_source(const char *display_name, const char *src, size_t len, const Define *defs, int n_defs, Graph *g,
                   FILE *err);

#endif
