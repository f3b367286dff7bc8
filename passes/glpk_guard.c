/* glpk_guard.c - GLPK without abort().
 *
 * GLPK reports an internal error (a failed assertion, no memory) or a misuse
 * of its API (zero columns, an index out of range) through glp_error_hook:
 * its message goes to the terminal hook, then the hook runs, then abort().
 * glpk_guarded's hook longjmps back to it and frees GLPK's environment, as
 * GLPK's manual prescribes for a hook that does not return. GLPK keeps one
 * environment per thread, so the run in progress is per thread too.
 */
#include "glpk_guard.h"

#include <glpk.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    jmp_buf back;
    char line[2][200]; /* the last two complete lines GLPK printed, and the one in progress */
    char cur[200];
} Guard;

static _Thread_local Guard *active; /* the outermost run of this thread, NULL if none */

/* GLPK's terminal output: kept (the last lines), never printed. */
static int capture(void *info, const char *s) {
    Guard *g = info;
    for (; *s; s++) {
        size_t n = strlen(g->cur);
        if (*s == '\n') {
            memcpy(g->line[0], g->line[1], sizeof g->line[0]);
            memcpy(g->line[1], g->cur, sizeof g->line[1]);
            g->cur[0] = 0;
        } else if (n + 1 < sizeof g->cur) {
            g->cur[n] = *s, g->cur[n + 1] = 0;
        }
    }
    return 1;
}

static void on_error(void *info) {
    Guard *g = info;
    longjmp(g->back, 1);
}

bool glpk_guarded(void (*body)(void *arg), void *arg, char *err, size_t err_len) {
    if (active) {
        body(arg);
        return true;
    }
    Guard g;
    memset(&g, 0, sizeof g);
    active = &g;
    glp_term_hook(capture, &g);
    glp_error_hook(on_error, &g);
    if (setjmp(g.back)) {
        active = NULL;
        glp_free_env(); /* hooks included: the next call of GLPK starts afresh */
        /* line[0]: GLPK's message; line[1]: "Error detected in file ... at line ..." */
        snprintf(err, err_len, "GLPK failed: %s (%s)", g.line[0][0] ? g.line[0] : "no message", g.line[1]);
        return false;
    }
    body(arg);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    active = NULL;
    return true;
}
