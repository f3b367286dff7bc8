/* parser.y - the DSL grammar: a pure, location-tracking LALR(1) parser that
 * builds the AST and nothing else (no elaboration in actions). Syntax errors
 * are reported "expected X or Y, found Z"; recovery skips to the next ';' so
 * that every error of a file is reported. The grammar is documented in
 * docs/dsl.md.
 */
%require "3.6"
%define api.pure full
%define api.prefix {acc_yy}
%define parse.error custom
%locations
%expect 0
%param {void *scanner}
%parse-param {ParseState *ps}

%code requires {
#include "parse_state.h"
}

%code provides {
int acc_yylex(ACC_YYSTYPE *lval, ACC_YYLTYPE *lloc, void *scanner);
}

%code {
#include <string.h>

/* Nesting deeper than this is an error, so that no input can exhaust the
 * elaborator's stack. */
#define YYMAXDEPTH 600
#define YYINITDEPTH 200

#define LOC(l) loc_make(ps->d, (l).first_line, (l).first_column, (l).last_line, (l).last_column)

static void acc_yyerror(ACC_YYLTYPE *l, void *scanner, ParseState *ps, const char *msg);

static Expr *mk_expr(ParseState *ps, ExprKind k, Loc loc) {
    Expr *e = pool_alloc(ps->pool, sizeof *e);
    e->kind = k;
    e->loc = loc;
    return e;
}

static Expr *mk_binop(ParseState *ps, int op, Expr *a, Expr *b, Loc loc) {
    Expr *e = mk_expr(ps, E_BINOP, loc);
    e->op = op;
    e->lhs = a;
    e->rhs = b;
    return e;
}

static Stmt *mk_stmt(ParseState *ps, StmtKind k, Loc loc) {
    Stmt *s = pool_alloc(ps->pool, sizeof *s);
    s->kind = k;
    s->loc = loc;
    return s;
}

static Name *mk_name(ParseState *ps, const char *name, Loc loc, Expr *dflt) {
    Name *n = pool_alloc(ps->pool, sizeof *n);
    n->name = name;
    n->loc = loc;
    n->dflt = dflt;
    return n;
}

/* Append to a singly linked list kept as (head, tail) through the next fields. */
#define APPEND(head, x)                              \
    do {                                             \
        if (!(head)) { (head) = (x); break; }        \
        __typeof__(head) t_ = (head);                \
        while (t_->next) t_ = t_->next;              \
        t_->next = (x);                              \
    } while (0)
}

%union {
    int64_t i;
    double f;
    const char *s;
    Expr *e;
    Arg *a;
    Stmt *st;
    Name *n;
    TypeExpr t;
    int hint;
}

%token <s> IDENT "identifier"
%token <i> INT "integer"
%token <f> FLOAT "number"
%token <s> STRING "string"
%token KW_MODEL "model" KW_HPARAM "hparam" KW_INPUT "input" KW_PARAM "param"
%token KW_BLOCK "block" KW_REPEAT "repeat" KW_AS "as" KW_RETURN "return"
%token KW_LOSS "loss" KW_SAVE "save" KW_RECOMPUTE "recompute"
%token KW_TRUE "true" KW_FALSE "false" AT_SAVE "@save" AT_RECOMPUTE "@recompute"

%type <e> expr primary call exprs exprs_opt repeat_count
%type <a> args args_opt arg
%type <st> stmt stmts
%type <n> targets formals formals_opt formal globs
%type <t> type
%type <hint> hint

%left '+' '-'
%left '*' '/' '%'
%precedence NEG

%%

program
    : stmts                         { ps->prog->stmts = $1; }
    ;

stmts
    : %empty                        { $$ = NULL; }
    | stmts stmt                    { $$ = $1; if ($2) APPEND($$, $2); }
    ;

stmt
    : "model" IDENT ';'             { $$ = mk_stmt(ps, S_MODEL, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); }
    | "hparam" IDENT '=' expr ';'   { $$ = mk_stmt(ps, S_HPARAM, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); $$->value = $4; }
    | "input" IDENT ':' type ';'    { $$ = mk_stmt(ps, S_INPUT, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); $$->type = $4; }
    | "param" IDENT ':' type ';'    { $$ = mk_stmt(ps, S_PARAM, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); $$->type = $4; }
    | "param" IDENT ':' type '=' expr ';'
                                    { $$ = mk_stmt(ps, S_PARAM, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); $$->type = $4; $$->value = $6; }
    | hint targets '=' expr ';'     { $$ = mk_stmt(ps, S_ASSIGN, LOC(@2)); $$->hint = $1; $$->targets = $2; $$->value = $4; }
    | "repeat" repeat_count "as" IDENT '{' stmts '}'
                                    { $$ = mk_stmt(ps, S_REPEAT, LOC(@1)); $$->value = $2; $$->name = $4; $$->name_loc = LOC(@4); $$->body = $6; $$->end_loc = LOC(@7); }
    | "repeat" repeat_count "as" IDENT '[' IDENT ']' '{' stmts '}'
                                    { $$ = mk_stmt(ps, S_REPEAT, LOC(@1)); $$->value = $2; $$->name = $4; $$->name_loc = LOC(@4);
                                      $$->index = $6; $$->index_loc = LOC(@6); $$->body = $9; $$->end_loc = LOC(@10); }
    | "return" expr ';'             { $$ = mk_stmt(ps, S_RETURN, LOC(@1)); $$->value = $2; }
    | "loss" expr ';'               { $$ = mk_stmt(ps, S_LOSS, LOC(@1)); $$->value = $2; }
    | "save" globs ';'              { $$ = mk_stmt(ps, S_SAVE, LOC(@1)); $$->targets = $2; }
    | "recompute" globs ';'         { $$ = mk_stmt(ps, S_RECOMPUTE, LOC(@1)); $$->targets = $2; }
    | "block" IDENT '(' formals_opt ')' '{' stmts '}'
                                    { $$ = mk_stmt(ps, S_BLOCK, LOC(@1)); $$->name = $2; $$->name_loc = LOC(@2);
                                      $$->targets = $4; $$->body = $7; $$->end_loc = LOC(@8); }
    | error ';'                     { $$ = NULL; yyerrok; }
    ;

hint
    : %empty                        { $$ = HINT_NONE; }
    | "@save"                       { $$ = HINT_SAVE; }
    | "@recompute"                  { $$ = HINT_RECOMPUTE; }
    ;

targets
    : IDENT                         { $$ = mk_name(ps, $1, LOC(@1), NULL); }
    | targets ',' IDENT             { $$ = $1; APPEND($$, mk_name(ps, $3, LOC(@3), NULL)); }
    ;

globs
    : STRING                        { $$ = mk_name(ps, $1, LOC(@1), NULL); }
    | globs ',' STRING              { $$ = $1; APPEND($$, mk_name(ps, $3, LOC(@3), NULL)); }
    ;

formals_opt
    : %empty                        { $$ = NULL; }
    | formals
    ;

formals
    : formal
    | formals ',' formal            { $$ = $1; APPEND($$, $3); }
    ;

formal
    : IDENT                         { $$ = mk_name(ps, $1, LOC(@1), NULL); }
    | IDENT '=' expr                { $$ = mk_name(ps, $1, LOC(@1), $3); }
    ;

repeat_count
    : INT                           { $$ = mk_expr(ps, E_INT, LOC(@1)); $$->ival = $1; }
    | IDENT                         { $$ = mk_expr(ps, E_NAME, LOC(@1)); $$->name = $1; }
    | '(' expr ')'                  { $$ = $2; }
    ;

type
    : IDENT '[' exprs_opt ']'       { memset(&$$, 0, sizeof $$); $$.dtype = $1; $$.dtype_loc = LOC(@1); $$.dims = $3; $$.loc = LOC(@$); }
    ;

expr
    : expr '+' expr                 { $$ = mk_binop(ps, '+', $1, $3, LOC(@2)); }
    | expr '-' expr                 { $$ = mk_binop(ps, '-', $1, $3, LOC(@2)); }
    | expr '*' expr                 { $$ = mk_binop(ps, '*', $1, $3, LOC(@2)); }
    | expr '/' expr                 { $$ = mk_binop(ps, '/', $1, $3, LOC(@2)); }
    | expr '%' expr                 { $$ = mk_binop(ps, '%', $1, $3, LOC(@2)); }
    | '-' expr %prec NEG            { $$ = mk_expr(ps, E_NEG, LOC(@1)); $$->lhs = $2; }
    | primary
    ;

primary
    : INT                           { $$ = mk_expr(ps, E_INT, LOC(@1)); $$->ival = $1; }
    | FLOAT                         { $$ = mk_expr(ps, E_FLOAT, LOC(@1)); $$->fval = $1; }
    | "true"                        { $$ = mk_expr(ps, E_BOOL, LOC(@1)); $$->ival = 1; }
    | "false"                       { $$ = mk_expr(ps, E_BOOL, LOC(@1)); $$->ival = 0; }
    | IDENT                         { $$ = mk_expr(ps, E_NAME, LOC(@1)); $$->name = $1; }
    | '(' expr ')'                  { $$ = $2; }
    | '[' exprs_opt ']'             { $$ = mk_expr(ps, E_LIST, LOC(@$)); $$->items = $2; }
    | call
    ;

call
    : IDENT '(' args_opt ')'        { $$ = mk_expr(ps, E_CALL, LOC(@1)); $$->name = $1; $$->args = $3; }
    | IDENT '(' args_opt ')' "as" IDENT
                                    { $$ = mk_expr(ps, E_CALL, LOC(@1)); $$->name = $1; $$->args = $3;
                                      $$->as_name = $6; $$->as_loc = LOC(@6); }
    ;

exprs_opt
    : %empty                        { $$ = NULL; }
    | exprs
    ;

exprs
    : expr
    | exprs ',' expr                { $$ = $1; APPEND($$, $3); }
    ;

args_opt
    : %empty                        { $$ = NULL; }
    | args
    ;

args
    : arg
    | args ',' arg                  { $$ = $1; APPEND($$, $3); }
    ;

arg
    : expr                          { $$ = pool_alloc(ps->pool, sizeof *$$); $$->value = $1; }
    | IDENT '=' expr                { $$ = pool_alloc(ps->pool, sizeof *$$); $$->kw = $1; $$->kw_loc = LOC(@1); $$->value = $3; }
    ;

%%

/* "';'" or "\"model\"" (bison's symbol names) -> "';'" / "'model'" */
static void sym_text(yysymbol_kind_t s, char *buf, size_t len) {
    const char *n = yysymbol_name(s);
    size_t k = strlen(n);
    if (k >= 2 && n[0] == '"' && n[k - 1] == '"') {
        if (!strcmp(n, "\"identifier\"") || !strcmp(n, "\"integer\"") || !strcmp(n, "\"number\"") ||
            !strcmp(n, "\"string\""))
            snprintf(buf, len, "%.*s", (int)(k - 2), n + 1);
        else
            snprintf(buf, len, "'%.*s'", (int)(k - 2), n + 1);
    } else if (!strcmp(n, "end of file")) {
        snprintf(buf, len, "end of file");
    } else {
        snprintf(buf, len, "%s", n);
    }
}

/* Syntax errors as "expected X, Y or Z, found W". */
static int yyreport_syntax_error(const yypcontext_t *ctx, void *scanner, ParseState *ps) {
    enum { N = 6 };
    yysymbol_kind_t expected[N];
    int n = yypcontext_expected_tokens(ctx, expected, N);
    yysymbol_kind_t got = yypcontext_token(ctx);
    char msg[512], word[64];
    size_t at = 0;
    if (n > 0 && n < N) {
        at += (size_t)snprintf(msg, sizeof msg, "expected ");
        for (int i = 0; i < n; i++) {
            sym_text(expected[i], word, sizeof word);
            at += (size_t)snprintf(msg + at, sizeof msg - at, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", word);
        }
        at += (size_t)snprintf(msg + at, sizeof msg - at, ", found ");
    } else {
        at += (size_t)snprintf(msg, sizeof msg, "unexpected ");
    }
    sym_text(got, word, sizeof word);
    if (got == YYSYMBOL_IDENT || got == YYSYMBOL_INT || got == YYSYMBOL_FLOAT)
        snprintf(msg + at, sizeof msg - at, "%s '%s'", word, ps->last_text);
    else if (got == YYSYMBOL_STRING)
        snprintf(msg + at, sizeof msg - at, "string");
    else
        snprintf(msg + at, sizeof msg - at, "%s", word);
    diag_error(ps->d, LOC(*yypcontext_location(ctx)), "%s", msg);
    return 0;
}

static void acc_yyerror(ACC_YYLTYPE *l, void *scanner, ParseState *ps, const char *msg) {
    if (!strcmp(msg, "memory exhausted"))
        diag_error(ps->d, LOC(*l), "nesting too deep (more than %d levels)", YYMAXDEPTH);
    else
        diag_error(ps->d, LOC(*l), "%s", msg);
}
