/* plandiff.c - `acc diff A.json B.json`: what changed between two plans.
 *
 * Reads the plan.json that report.c writes (one top-level field per line,
 * one tensor per line) and prints every field that differs, the memory
 * categories that differ, and every tensor whose decision, size or cost
 * changed or that exists in only one plan. Exit status: 0 equal, 1 different,
 * 2 unreadable input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "plandiff.h"

typedef struct {
    char *key, *value; /* top-level "key": value (value without the trailing comma) */
} Field;

typedef struct {
    char *name, *decision, *bytes, *time, *line;
} Tensor;

typedef struct {
    VEC(Field) fields;
    VEC(Tensor) tensors;
    char *text;
} PlanFile;

/* Copy of the JSON string value that follows "key": on line, or NULL. */
static char *str_field(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    if (!p) return NULL;
    p += strlen(pat);
    const char *end;
    if (*p == '"') {
        end = ++p;
        while (*end && !(*end == '"' && end[-1] != '\\')) end++;
    } else {
        end = p + strcspn(p, ",}");
    }
    return strndup(p, (size_t)(end - p));
}

static bool load(const char *path, PlanFile *pf) {
    memset(pf, 0, sizeof *pf);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "acc: error: cannot open '%s'\n", path);
        return false;
    }
    VEC(char) buf = {0};
    int c;
    while ((c = fgetc(f)) != EOF) VEC_PUSH(buf, (char)c);
    VEC_PUSH(buf, '\0');
    fclose(f);
    pf->text = buf.v;
    if (strncmp(pf->text, "{\n  \"acc_version\"", 17)) {
        fprintf(stderr, "acc: error: '%s' is not a plan written by acc compile\n", path);
        return false;
    }
    size_t len = strlen(pf->text);
    if (pf->text[len - 1] != '\n') { /* cut short: every line report.c writes ends */
        fprintf(stderr, "acc: error: '%s' is not a complete plan written by acc compile (it ends mid-line)\n", path);
        return false;
    }
    /* the whole layout report.c writes: top-level fields one per line, the
     * tensor list closed, the object closed, nothing after it */
    bool in_tensors = false, tensors_done = false, closed = false;
    for (char *line = strtok(pf->text, "\n"); line; line = strtok(NULL, "\n")) {
        if (closed) {
            fprintf(stderr, "acc: error: '%s' is not a plan written by acc compile: text after its end\n", path);
            return false;
        }
        if (in_tensors) {
            if (!strcmp(line, "  ]")) {
                in_tensors = false;
                tensors_done = true;
                continue;
            }
            Tensor t = {str_field(line, "name"), str_field(line, "decision"), str_field(line, "bytes"),
                        str_field(line, "recompute_time"), line};
            if (!t.name || !t.decision) {
                fprintf(stderr, "acc: error: '%s': malformed tensor line: %.80s\n", path, line);
                return false;
            }
            VEC_PUSH(pf->tensors, t);
        } else if (!strcmp(line, "  \"tensors\": [") && !tensors_done) {
            in_tensors = true;
        } else if (!strcmp(line, "}") && tensors_done) {
            closed = true;
        } else if (!strncmp(line, "  \"", 3) && strstr(line, "\": ")) {
            char *colon = strstr(line, "\": ");
            size_t vlen = strlen(colon + 3);
            if (vlen && colon[3 + vlen - 1] == ',') vlen--;
            Field fl = {strndup(line + 3, (size_t)(colon - line - 3)), strndup(colon + 3, vlen)};
            VEC_PUSH(pf->fields, fl);
        } else if (strcmp(line, "{")) {
            fprintf(stderr, "acc: error: '%s' is not a plan written by acc compile: unexpected line: %.80s\n", path,
                    line);
            return false;
        }
    }
    if (!closed) {
        fprintf(stderr, "acc: error: '%s' is not a complete plan written by acc compile (%s)\n", path,
                in_tensors     ? "its tensor list is not closed"
                : tensors_done ? "its object is not closed"
                               : "no tensor list");
        return false;
    }
    return true;
}

static void unload(PlanFile *pf) {
    for (int i = 0; i < pf->fields.n; i++) free(pf->fields.v[i].key), free(pf->fields.v[i].value);
    for (int i = 0; i < pf->tensors.n; i++) {
        Tensor *t = &pf->tensors.v[i];
        free(t->name), free(t->decision), free(t->bytes), free(t->time);
    }
    VEC_FREE(pf->fields);
    VEC_FREE(pf->tensors);
    free(pf->text);
}

static const Field *field(const PlanFile *pf, const char *key) {
    for (int i = 0; i < pf->fields.n; i++)
        if (!strcmp(pf->fields.v[i].key, key)) return &pf->fields.v[i];
    return NULL;
}

static const Tensor *tensor(const PlanFile *pf, const char *name) {
    for (int i = 0; i < pf->tensors.n; i++)
        if (!strcmp(pf->tensors.v[i].name, name)) return &pf->tensors.v[i];
    return NULL;
}

/* "a -> b", with the difference when both are numbers */
static void print_change(FILE *out, const char *what, const char *a, const char *b) {
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    fprintf(out, "  %s: %s -> %s", what, a, b);
    if (ea != a && !*ea && eb != b && !*eb) {
        fprintf(out, " (%+.9g", y - x);
        if (x != 0) fprintf(out, ", %+.2f%%", 100 * (y - x) / x);
        fputc(')', out);
    }
    fputc('\n', out);
}

/* memory: {"parameters": 1, ...} compared key by key */
static int diff_memory(const char *a, const char *b, FILE *out) {
    int n = 0;
    for (const char *p = strchr(a, '"'); p; p = strchr(p + 1, '"')) {
        const char *q = strchr(p + 1, '"');
        if (!q) break;
        char *key = strndup(p + 1, (size_t)(q - p - 1));
        char *va = str_field(a, key), *vb = str_field(b, key);
        if (va && (!vb || strcmp(va, vb))) {
            char what[96];
            snprintf(what, sizeof what, "memory.%s", key);
            print_change(out, what, va, vb ? vb : "(absent)");
            n++;
        }
        free(key), free(va), free(vb);
        p = strchr(q + 1, ',');
        if (!p) break;
    }
    return n;
}

int plan_diff(const char *path_a, const char *path_b, FILE *out) {
    PlanFile a, b;
    bool ok_a = load(path_a, &a), ok_b = load(path_b, &b); /* both, so that both can be unloaded */
    if (!ok_a || !ok_b) {
        unload(&a), unload(&b);
        return 2;
    }
    int changes = 0;
    fprintf(out, "--- %s\n+++ %s\n", path_a, path_b);
    for (int i = 0; i < a.fields.n; i++) {
        const Field *fa = &a.fields.v[i], *fb = field(&b, fa->key);
        if (fb && !strcmp(fa->value, fb->value)) continue;
        if (!strcmp(fa->key, "memory") && fb) changes += diff_memory(fa->value, fb->value, out);
        else print_change(out, fa->key, fa->value, fb ? fb->value : "(absent)"), changes++;
    }
    for (int i = 0; i < b.fields.n; i++)
        if (!field(&a, b.fields.v[i].key))
            print_change(out, b.fields.v[i].key, "(absent)", b.fields.v[i].value), changes++;
    int n_dec = 0;
    for (int i = 0; i < a.tensors.n; i++) {
        const Tensor *ta = &a.tensors.v[i], *tb = tensor(&b, ta->name);
        if (!tb) {
            fprintf(out, "  tensor %s: only in %s\n", ta->name, path_a);
            changes++;
        } else if (strcmp(ta->line, tb->line)) {
            if (strcmp(ta->decision, tb->decision)) {
                fprintf(out, "  tensor %s: %s -> %s\n", ta->name, ta->decision, tb->decision);
                n_dec++;
            } else {
                fprintf(out, "  tensor %s: bytes %s -> %s, recompute time %s -> %s\n", ta->name, ta->bytes, tb->bytes,
                        ta->time, tb->time);
            }
            changes++;
        }
    }
    for (int i = 0; i < b.tensors.n; i++)
        if (!tensor(&a, b.tensors.v[i].name))
            fprintf(out, "  tensor %s: only in %s\n", b.tensors.v[i].name, path_b), changes++;
    if (changes)
        fprintf(out, "%d difference%s (%d decision%s changed)\n", changes, changes == 1 ? "" : "s", n_dec,
                n_dec == 1 ? "" : "s");
    else fprintf(out, "plans are identical\n");
    unload(&a), unload(&b);
    return changes ? 1 : 0;
}
