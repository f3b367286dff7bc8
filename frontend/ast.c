/* ast.c - runs the scanner and parser over one source text (fe_parse) and
 * drives the whole front end for a file (fe_load_file / fe_load_source):
 * read -> parse -> elaborate -> verify. The AST lives in a Pool that is freed
 * before returning; the graph owns copies of every string it keeps.
 */
#include <errno.h>
#include <string.h>

#include "frontend.h"
#include "parse_state.h"
#include "parser.h"
#define YYSTYPE ACC_YYSTYPE
#define YYLTYPE ACC_YYLTYPE
#include "lexer.h"

int fe_parse(Diag *d, Pool *pool, Program *prog) {
    ParseState ps = {.d = d, .pool = pool, .prog = prog, .line = 1, .col = 1};
    yyscan_t scanner;
    if (acc_yylex_init_extra(&ps, &scanner)) {
        diag_error_file(d, "cannot initialise the scanner");
        return d->n_errors;
    }
    YY_BUFFER_STATE buf = acc_yy_scan_bytes(d->src, (int)d->src_len, scanner);
    int before = d->n_errors;
    int rc = acc_yyparse(scanner, &ps);
    acc_yy_delete_buffer(buf, scanner);
    acc_yylex_destroy(scanner);
    if (rc != 0 && d->n_errors == before) diag_error_file(d, "cannot parse the file");
    return d->n_errors;
}

/* Files larger than this are refused before parsing. */
#define FE_MAX_SOURCE_BYTES (1u << 20) /* 1 MiB: models are kilobytes; bounds the AST */

int fe_load_source(const char *display_name, const char *src, size_t len, const Define *defs, int n_defs, Graph *g,
                   FILE *err) {
    Diag d = {.file = display_name, .src = src, .src_len = len, .out = err};
    if (len > FE_MAX_SOURCE_BYTES || len > (size_t)INT32_MAX) {
        diag_error_file(&d, "file is too large (%zu bytes; the limit is %u)", len, FE_MAX_SOURCE_BYTES);
        return d.n_errors;
    }
    Pool ast = {0};
    Program prog = {0};
    fe_parse(&d, &ast, &prog);
    if (d.n_errors == 0) {
        fe_elaborate(&d, &prog, defs, n_defs, g);
        /* the text, for the diagnostics of later passes (diag_for_graph) */
        char *text = pool_alloc(&g->pool, len + 1);
        memcpy(text, src, len);
        g->source_text = text, g->source_len = len;
        if (d.n_errors == 0 && !ir_verify(g, err)) acc_panic(__FILE__, __LINE__, "front end built an invalid graph");
    }
    pool_free(&ast);
    if (d.n_errors > 0) {
        fprintf(err, "%d error%s generated.\n", d.n_shown, d.n_shown == 1 ? "" : "s"); /* those printed */
    }
    return d.n_errors;
}

int fe_load_file(const char *path, const Define *defs, int n_defs, Graph *g, FILE *err) {
    char msg[512];
    size_t len;
    bool over; /* read on past the limit: fe_load_source reports the size */
    char *text = acc_read_file(path, FE_MAX_SOURCE_BYTES, &len, &over, msg, sizeof msg);
    if (!text) {
        fprintf(err, "acc: error: %s\n", msg);
        return 1;
    }
    int errs = fe_load_source(path, text, len, defs, n_defs, g, err);
    free(text);
    return errs;
}
