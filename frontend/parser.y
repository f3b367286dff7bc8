/* parser.y - the DSL grammar: a pure, location-tracking LALR(1) parser that
 * builds the AST and nothing else (no elaboration in actions). Syntax errors
 * are reported "expected X or Y, found Z"; recovery skips to the next ';', over
 * the body of a malformed repeat or block header, or to the '}' that closes
 * the body the error is in, so that every error of a file is reported once.
 * The grammar is documented in docs/dsl.md.
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
/* The last character of a span (a body's closing brace). */
#define END_LOC(l) loc_make(ps->d, (l).last_line, (l).last_column - 1, (l).last_line, (l).last_column)

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

/* a < b < c parses, so that it gets its own message: it would compare a's
 * 0/1 with c, not test both relations as in Python */
static Expr *mk_compare(ParseState *ps, int op, Expr *a, Expr *b, Loc loc) {
    if (a->kind == E_BINOP && a->op >= BIN_EQ && !a->paren)
        diag_error(ps->d, loc, "comparisons do not chain: write (a < b) * (b < c) for both, or (a < b) < c");
    return mk_binop(ps, op, a, b, loc);
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

/* Lists (linked through next) are built in reverse, each item pushed in O(1),
 * and put in order by REVERSE where a rule takes the finished list: appending
 * at the tail would make long lists quadratic. */
#define PUSH(head, x)                                \
    do {                                             \
        (x)->next = (head);                          \
        (head) = (x);                                \
    } while (0)
#define REVERSE(head)                                \
    do {                                             \
        __typeof__(head) r_ = NULL, n_;              \
        while (head) {                               \
            n_ = (head)->next;                       \
            (head)->next = r_;                       \
            r_ = (head);                             \
            (head) = n_;                             \
        }                                            \
        (head) = r_;                                 \
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
%token KW_LOSS "loss" KW_SAVE "save" KW_RECOMPUTE "recompute" KW_PRECISION "precision" KW_OPTIMIZER_STATE "optimizer_state"
%token KW_TRUE "true" KW_FALSE "false" AT_SAVE "@save" AT_RECOMPUTE "@recompute"
%token CMP_EQ "==" CMP_NE "!=" CMP_LE "<=" CMP_GE ">="

%type <e> expr primary call exprs exprs_opt repeat_count
%type <a> args args_opt arg
%type <st> stmt stmts top_stmt top_stmts body
%type <n> targets formals formals_opt formal globs
%type <t> type
%type <hint> hint

%left "==" "!=" '<' "<=" '>' ">="
%left '+' '-'
%left '*' '/' '%'
%precedence NEG

%%

program
    : top_stmts                     { REVERSE($1); ps->prog->stmts = $1; }
    ;

top_stmts
    : %empty                        { $$ = NULL; }
    | top_stmts top_stmt            { $$ = $1; if ($2) PUSH($$, $2); }
    ;

/* A stray '}' at the top level is skipped on its own (in a body it closes the body). */
top_stmt
    : stmt
    | error '}'                     { $$ = NULL; yyerrok; }
    ;

stmts
    : %empty                        { $$ = NULL; }
    | stmts stmt                    { $$ = $1; if ($2) PUSH($$, $2); }
    ;

/* A body; after an error inside it, recovery resumes at its closing brace. */
body
    : '{' stmts '}'                 { $$ = $2; REVERSE($$); }
    | '{' stmts error '}'           { $$ = $2; REVERSE($$); yyerrok; }
    ;

stmt
    : "model" IDENT ';'             { $$ = mk_stmt(ps, S_MODEL, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); }
    | "hparam" IDENT '=' expr ';'   { $$ = mk_stmt(ps, S_HPARAM, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); $$->value = $4; }
    | "input" IDENT ':' type ';'    { $$ = mk_stmt(ps, S_INPUT, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); $$->type = $4; }
    | "param" IDENT ':' type ';'    { $$ = mk_stmt(ps, S_PARAM, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); $$->type = $4; }
    | "param" IDENT ':' type '=' expr ';'
                                    { $$ = mk_stmt(ps, S_PARAM, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); $$->type = $4; $$->value = $6; }
    | hint targets '=' expr ';'     { $$ = mk_stmt(ps, S_ASSIGN, LOC(@2)); $$->hint = $1; REVERSE($2); $$->targets = $2; $$->value = $4; }
    | "repeat" repeat_count "as" IDENT body
                                    { $$ = mk_stmt(ps, S_REPEAT, LOC(@1)); $$->value = $2; $$->name = $4; $$->name_loc = LOC(@4); $$->body = $5; $$->end_loc = END_LOC(@5); }
    | "repeat" repeat_count "as" IDENT '[' IDENT ']' body
                                    { $$ = mk_stmt(ps, S_REPEAT, LOC(@1)); $$->value = $2; $$->name = $4; $$->name_loc = LOC(@4);
                                      $$->index = $6; $$->index_loc = LOC(@6); $$->body = $8; $$->end_loc = END_LOC(@8); }
    | "return" expr ';'             { $$ = mk_stmt(ps, S_RETURN, LOC(@1)); $$->value = $2; }
    | "loss" expr ';'               { $$ = mk_stmt(ps, S_LOSS, LOC(@1)); $$->value = $2; }
    | "precision" IDENT ';'         { $$ = mk_stmt(ps, S_PRECISION, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); }
    | "optimizer_state" IDENT ';'   { $$ = mk_stmt(ps, S_OPTIMIZER_STATE, LOC(@$)); $$->name = $2; $$->name_loc = LOC(@2); }
    | "save" globs ';'              { $$ = mk_stmt(ps, S_SAVE, LOC(@1)); REVERSE($2); $$->targets = $2; }
    | "recompute" globs ';'         { $$ = mk_stmt(ps, S_RECOMPUTE, LOC(@1)); REVERSE($2); $$->targets = $2; }
    | "block" IDENT '(' formals_opt ')' body
                                    { $$ = mk_stmt(ps, S_BLOCK, LOC(@1)); $$->name = $2; $$->name_loc = LOC(@2);
                                      $$->targets = $4; $$->body = $6; $$->end_loc = END_LOC(@6); }
    | error ';'                     { $$ = NULL; yyerrok; }
    | error body                    { $$ = NULL; yyerrok; } /* a malformed header: skip its body */
    ;

hint
    : %empty                        { $$ = HINT_NONE; }
    | "@save"                       { $$ = HINT_SAVE; }
    | "@recompute"                  { $$ = HINT_RECOMPUTE; }
    ;

targets
    : IDENT                         { $$ = mk_name(ps, $1, LOC(@1), NULL); }
    | targets ',' IDENT             { $$ = mk_name(ps, $3, LOC(@3), NULL); $$->next = $1; }
    ;

globs
    : STRING                        { $$ = mk_name(ps, $1, LOC(@1), NULL); }
    | globs ',' STRING              { $$ = mk_name(ps, $3, LOC(@3), NULL); $$->next = $1; }
    ;

formals_opt
    : %empty                        { $$ = NULL; }
    | formals                       { $$ = $1; REVERSE($$); }
    ;

formals
    : formal
    | formals ',' formal            { $$ = $1; PUSH($$, $3); }
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
    | expr "==" expr                { $$ = mk_compare(ps, BIN_EQ, $1, $3, LOC(@2)); }
    | expr "!=" expr                { $$ = mk_compare(ps, BIN_NE, $1, $3, LOC(@2)); }
    | expr '<' expr                 { $$ = mk_compare(ps, BIN_LT, $1, $3, LOC(@2)); }
    | expr "<=" expr                { $$ = mk_compare(ps, BIN_LE, $1, $3, LOC(@2)); }
    | expr '>' expr                 { $$ = mk_compare(ps, BIN_GT, $1, $3, LOC(@2)); }
    | expr ">=" expr                { $$ = mk_compare(ps, BIN_GE, $1, $3, LOC(@2)); }
    | '-' expr %prec NEG            { $$ = mk_expr(ps, E_NEG, LOC(@1)); $$->lhs = $2; }
    | primary
    ;

primary
    : INT                           { $$ = mk_expr(ps, E_INT, LOC(@1)); $$->ival = $1; }
    | FLOAT                         { $$ = mk_expr(ps, E_FLOAT, LOC(@1)); $$->fval = $1; }
    | "true"                        { $$ = mk_expr(ps, E_BOOL, LOC(@1)); $$->ival = 1; }
    | "false"                       { $$ = mk_expr(ps, E_BOOL, LOC(@1)); $$->ival = 0; }
    | IDENT                         { $$ = mk_expr(ps, E_NAME, LOC(@1)); $$->name = $1; }
    | '(' expr ')'                  { $$ = $2; $$->paren = true; }
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
    | exprs                         { $$ = $1; REVERSE($$); }
    ;

exprs
    : expr
    | exprs ',' expr                { $$ = $1; PUSH($$, $3); }
    ;

args_opt
    : %empty                        { $$ = NULL; }
    | args                          { $$ = $1; REVERSE($$); }
    ;

args
    : arg
    | args ',' arg                  { $$ = $1; PUSH($$, $3); }
    ;

arg
    : expr                          { $$ = pool_alloc(ps->pool, sizeof *$$); $$->value = $1; }
    | IDENT '=' expr                { $$ = pool_alloc(ps->pool, sizeof *$$); $$->kw = $1; $$->kw_loc = LOC(@1); $$->value = $3; }
    ;

%%

static bool is_keyword(yysymbol_kind_t s) { return s >= YYSYMBOL_KW_MODEL && s <= YYSYMBOL_AT_RECOMPUTE; }

/* A token as messages name it: identifier, ';', 'model', end of file. Bison
 * strips the quotes of string aliases; keywords get them back. */
static void sym_text(yysymbol_kind_t s, char *buf, size_t len) {
    snprintf(buf, len, is_keyword(s) ? "'%s'" : "%s", yysymbol_name(s));
}

static bool sym_is(yysymbol_kind_t s, const char *name) { return !strcmp(yysymbol_name(s), name); }

/* Syntax errors as "expected X, Y or Z, found W". The tokens that can start an
 * expression are named "expression"; after an expression the operators (and
 * 'as' after a call), which could always continue it, are left out. When W
 * begins a later line than the previous token ends, the error is placed just
 * after that token, gcc-style: "expected ';' before 'input'". */
static int yyreport_syntax_error(const yypcontext_t *ctx, void *scanner, ParseState *ps) {
    yysymbol_kind_t expected[YYNTOKENS];
    int n = yypcontext_expected_tokens(ctx, expected, YYNTOKENS);
    if (n < 0) n = 0;
    bool has[YYNTOKENS] = {false};
    for (int i = 0; i < n; i++) has[expected[i]] = true;
    bool expr_start = has[YYSYMBOL_INT] && has[YYSYMBOL_FLOAT] && has[YYSYMBOL_IDENT] && has[YYSYMBOL_KW_TRUE];
    bool after_expr = false;
    for (int i = 0; i < n; i++) after_expr |= sym_is(expected[i], "'*'");
    const char *words[YYNTOKENS];
    char bufs[YYNTOKENS][32];
    int n_words = 0;
    if (expr_start) words[n_words++] = "expression";
    for (int i = 0; i < n; i++) {
        yysymbol_kind_t s = expected[i];
        if (expr_start && (s == YYSYMBOL_INT || s == YYSYMBOL_FLOAT || s == YYSYMBOL_IDENT || s == YYSYMBOL_KW_TRUE ||
                           s == YYSYMBOL_KW_FALSE || sym_is(s, "'('") || sym_is(s, "'['") || sym_is(s, "'-'")))
            continue;
        if (after_expr && (sym_is(s, "'+'") || sym_is(s, "'-'") || sym_is(s, "'*'") || sym_is(s, "'/'") ||
                           sym_is(s, "'%'") || sym_is(s, "'<'") || sym_is(s, "'>'") || s == YYSYMBOL_CMP_EQ ||
                           s == YYSYMBOL_CMP_NE || s == YYSYMBOL_CMP_LE || s == YYSYMBOL_CMP_GE || s == YYSYMBOL_KW_AS))
            continue;
        sym_text(s, bufs[n_words], sizeof bufs[n_words]);
        words[n_words] = bufs[n_words];
        n_words++;
    }
    yysymbol_kind_t got = yypcontext_token(ctx);
    Loc loc = LOC(*yypcontext_location(ctx));
    bool at_eof = got == YYSYMBOL_YYEOF;
    for (int i = 0; at_eof && i < n; i++) /* in an unclosed body, the '}' is what is missing */
        if (sym_is(expected[i], "'}'")) words[0] = "'}'", n_words = 1;
    bool listed = n_words > 0 && n_words <= 5;
    /* the end of the token before the one found (at end of file: the last token) */
    int pl = at_eof ? ps->end_line : ps->prev_end_line, pc = at_eof ? ps->end_col : ps->prev_end_col;
    bool after_prev = listed && pl > 0 && (at_eof || yypcontext_location(ctx)->first_line > pl);
    if (after_prev) loc = loc_make(ps->d, pl, pc, pl, pc + 1);
    char msg[512], word[64];
    size_t at = 0;
    if (listed) {
        at += (size_t)snprintf(msg, sizeof msg, "expected ");
        for (int i = 0; i < n_words; i++)
            at += (size_t)snprintf(msg + at, sizeof msg - at, "%s%s", i == 0 ? "" : i == n_words - 1 ? " or " : ", ",
                                   words[i]);
        at += (size_t)snprintf(msg + at, sizeof msg - at, at_eof ? " at " : after_prev ? " before " : ", found ");
    } else {
        at += (size_t)snprintf(msg, sizeof msg, "unexpected ");
    }
    sym_text(got, word, sizeof word);
    if (got == YYSYMBOL_IDENT || got == YYSYMBOL_INT || got == YYSYMBOL_FLOAT)
        snprintf(msg + at, sizeof msg - at, "%s '%s'", word, ps->last_text);
    else
        snprintf(msg + at, sizeof msg - at, "%s", word);
    diag_error(ps->d, loc, "%s", msg);
    if (at_eof && ps->n_open > 0 && ps->n_open <= MAX_OPEN) diag_note(ps->d, ps->open[ps->n_open - 1], "to match this '{'");
    return 0;
}

static void acc_yyerror(ACC_YYLTYPE *l, void *scanner, ParseState *ps, const char *msg) {
    if (!strcmp(msg, "memory exhausted"))
        diag_error(ps->d, LOC(*l), "nesting too deep (more than %d levels)", YYMAXDEPTH);
    else
        diag_error(ps->d, LOC(*l), "%s", msg);
}
