/* parse_state.h - state shared by the scanner and the parser of one file
 * (flex's yyextra, bison's parse-param). Private to the front end. */
#ifndef ACC_PARSE_STATE_H
#define ACC_PARSE_STATE_H

#include "frontend.h"

typedef struct {
    Diag *d;
    Pool *pool;
    Program *prog;
    int line, col;      /* position of the next byte */
    Loc comment_start;  /* start of an open block comment */
    char last_text[64]; /* text of the last token, for syntax errors */
    int last_token;
    int end_line, end_col;           /* where the last token ends (one past it) */
    int prev_end_line, prev_end_col; /* ... and the token before it */
#define MAX_OPEN 64
    Loc open[MAX_OPEN]; /* the innermost unclosed '{'s */
    int n_open;         /* unclosed '{'s (may exceed MAX_OPEN) */
} ParseState;

static inline Loc loc_make(const Diag *d, int line, int col, int end_line, int end_col) {
    Loc l = {d->file, line, col, end_line == line && end_col > col ? end_col - col : 1};
    return l;
}

#endif
