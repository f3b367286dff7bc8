/* diag.c - gcc/clang-style diagnostics: "file:line:col: error: msg", the
 * source line, and a caret with tildes under the span. Counts errors and stops
 * printing after DIAG_MAX_ERRORS. Bytes that are not printable ASCII, in the
 * source line or in a message quoting the source, are shown as '?' so binary
 * input cannot garble the terminal or the caret column. In the IR layer so
 * that every phase reports through it: the front end over the text it
 * parses, later passes over the text the graph keeps (diag_for_graph).
 */
#include "ir.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Find line `line` (1-based) of the source; returns its start and length. */
static const char *source_line(const Diag *d, int line, size_t *len) {
    const char *p = d->src, *end = d->src + d->src_len;
    for (int l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return NULL;
        p = nl + 1;
    }
    if (p > end || (p == end && line > 1 && p[-1] == '\n')) return NULL;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    *len = (size_t)((nl ? nl : end) - p);
    if (*len && p[*len - 1] == '\r') (*len)--;
    return p;
}

static void show_line(Diag *d, Loc loc) {
    size_t len;
    const char *line = d->src ? source_line(d, loc.line, &len) : NULL;
    if (!line) return;
    /* At most MAX_SHOWN bytes of a long line: from its start, or a window
     * around the column when that lies further right ("... " marks the cut). */
    enum { MAX_SHOWN = 240 };
    size_t col = loc.col > 0 ? (size_t)loc.col - 1 : 0;
    if (col > len) col = len;
    size_t start = col + 1 > MAX_SHOWN ? col - MAX_SHOWN / 2 : 0;
    size_t shown = len - start > MAX_SHOWN ? MAX_SHOWN : len - start;
    fprintf(d->out, "%5d | %s", loc.line, start ? "... " : "");
    for (size_t i = start; i < start + shown; i++) {
        unsigned char c = (unsigned char)line[i];
        fputc(c == '\t' ? ' ' : (c >= 32 && c < 127) ? c : '?', d->out);
    }
    fputs(start + shown < len ? " ...\n" : "\n", d->out);
    size_t at = col - start; /* caret column in what was shown */
    size_t span = loc.len > 0 ? (size_t)loc.len : 1;
    if (at + span > shown) span = at < shown ? shown - at : 1;
    fprintf(d->out, "      | %*s^", (int)(at + (start ? 4 : 0)), "");
    for (size_t i = 1; i < span; i++) fputc('~', d->out);
    fputc('\n', d->out);
}

static void vreport(Diag *d, Loc loc, const char *kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void vreport(Diag *d, Loc loc, const char *kind, const char *fmt, va_list ap) {
    if (loc.line > 0) fprintf(d->out, "%s:%d:%d: %s: ", loc.file ? loc.file : d->file, loc.line, loc.col, kind);
    else fprintf(d->out, "%s: %s: ", loc.file ? loc.file : d->file, kind);
    /* the message can quote the source (a save pattern): '?' for unprintable bytes */
    char buf[512], *msg = buf;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n >= (int)sizeof buf) {
        msg = acc_xrealloc(NULL, (size_t)n + 1);
        vsnprintf(msg, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char)msg[i];
        fputc(c >= 32 && c < 127 ? c : '?', d->out);
    }
    if (msg != buf) free(msg);
    fputc('\n', d->out);
    if (loc.line > 0) show_line(d, loc);
}

/* Count an error and show it, unless too many were shown already. */
static void verror(Diag *d, Loc loc, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static void verror(Diag *d, Loc loc, const char *fmt, va_list ap) {
    d->n_errors++;
    if (d->stopped) return;
    if (d->n_errors > DIAG_MAX_ERRORS) {
        fprintf(d->out, "%s: fatal error: too many errors emitted, stopping now\n", d->file);
        d->stopped = true;
        return;
    }
    d->n_shown++;
    vreport(d, loc, "error", fmt, ap);
}

void diag_error(Diag *d, Loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror(d, loc, fmt, ap);
    va_end(ap);
}

void diag_note(Diag *d, Loc loc, const char *fmt, ...) {
    if (d->stopped) return;
    va_list ap;
    va_start(ap, fmt);
    vreport(d, loc, "note", fmt, ap);
    va_end(ap);
}

void diag_error_file(Diag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror(d, (Loc){d->file, 0, 0, 0}, fmt, ap);
    va_end(ap);
}

Diag diag_for_graph(const Graph *g, FILE *out) {
    return (Diag){.file = g->source ? g->source : "", .src = g->source_text, .src_len = g->source_len, .out = out};
}
