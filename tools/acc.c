/* acc.c - the command-line driver: a flat list of pipeline calls per command.
 *
 *   acc check FILE [-D k=v]...          parse, elaborate, summarise
 *   acc compile FILE --budget SIZE -o DIR [--emit=ir] [-D k=v]...
 *
 * Exit status: 0 success, 1 error in the input, 2 usage error.
 */
#include <errno.h>
#include <glpk.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend.h"
#include "ir.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

static const char usage[] =
    "usage: acc <command> [options]\n"
    "\n"
    "commands:\n"
    "  check FILE [-D NAME=VALUE]...      parse and elaborate a model, print a summary\n"
    "  compile FILE --budget SIZE -o DIR  compile a model for a memory budget\n"
    "        [--emit=ir] [-D NAME=VALUE]...\n"
    "\n"
    "options:\n"
    "  -D NAME=VALUE   override a hyperparameter (also -DNAME=VALUE)\n"
    "  --budget SIZE   memory budget of the whole training step: 8G, 512M, 1.5GiB,\n"
    "                  8000MB or a number of bytes; K/M/G/T and KiB/MiB/GiB/TiB are\n"
    "                  powers of 1024, kB/MB/GB/TB powers of 1000\n"
    "  -o DIR          output directory (created if missing)\n"
    "  --emit=ir       write the elaborated IR (DIR/<model>.ir)\n"
    "  -h, --help      this text\n"
    "  --version       acc's version and GLPK's\n"
    "\n"
    "exit status: 0 success, 1 error in the input, 2 usage error\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "acc: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(run 'acc --help' for usage)\n");
    va_end(ap);
    return EXIT_USAGE;
}

typedef struct {
    const char *file, *out_dir, *emit;
    int64_t budget_bytes;
    bool has_budget;
    VEC(Define) defs;
} Options;

/* Parse the options after the command word; returns 0 or EXIT_USAGE. */
static int parse_options(int argc, char **argv, Options *o) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "-D", 2)) {
            const char *kv = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            const char *eq = kv ? strchr(kv, '=') : NULL;
            if (!kv || !eq || eq == kv || !eq[1]) return usage_error("-D needs NAME=VALUE, got '%s'", kv ? kv : "");
            Define d = {strndup(kv, (size_t)(eq - kv)), eq + 1};
            VEC_PUSH(o->defs, d);
        } else if (!strcmp(a, "--budget") || !strncmp(a, "--budget=", 9)) {
            const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) return usage_error("%s needs a size", a);
            if (!parse_size(v, &o->budget_bytes))
                return usage_error("invalid size '%s' (examples: 8G, 512M, 1.5GiB, 8000MB, 1073741824)", v);
            o->has_budget = true;
        } else if (!strcmp(a, "-o")) {
            if (i + 1 >= argc) return usage_error("%s needs a directory", a);
            o->out_dir = argv[++i];
        } else if (!strncmp(a, "--emit=", 7)) {
            o->emit = a + 7;
            if (strcmp(o->emit, "ir")) return usage_error("unknown --emit kind '%s' (known: ir)", o->emit);
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else if (!o->file) {
            o->file = a;
        } else {
            return usage_error("more than one input file ('%s')", a);
        }
    }
    if (!o->file) return usage_error("no input file");
    return 0;
}

static void free_options(Options *o) {
    for (int i = 0; i < o->defs.n; i++) free((char *)(uintptr_t)o->defs.v[i].name);
    VEC_FREE(o->defs);
}

/* The summary of `acc check`: counts, bytes and activation bytes per block. */
static void print_summary(const Graph *g, FILE *out) {
    char b1[32];
    fprintf(out, "model: %s (%s)\n", g->model, g->source);
    fprintf(out, "hyperparameters:");
    for (int i = 0; i < g->hparams.n; i++) fprintf(out, " %s", g->hparams.v[i]);
    fprintf(out, "\ninputs:");
    int n_param = 0, n_input = 0, n_op = 0;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        char buf[ACC_SHAPE_STR];
        if (n->op == OP_INPUT) fprintf(out, "%s %s %s%s", n_input++ ? "," : "", n->name, dtype_name(n->dtype),
                                       shape_str(&n->shape, buf));
        else if (n->op == OP_PARAM) n_param++;
        else n_op++;
    }
    fprintf(out, "\nparameters: %" PRId64 " (%" PRId64 " bytes, %s)\n", graph_param_count(g), graph_param_bytes(g),
            format_bytes(graph_param_bytes(g), b1, sizeof b1));
    fprintf(out, "nodes: %d (%d parameter tensors, %d inputs, %d ops)\n", g->nodes.n, n_param, n_input, n_op);
    const Node *loss = graph_node(g, g->loss);
    fprintf(out, "loss: %s\n", loss->name);
    /* activation bytes: every computed tensor, grouped by block instance in order */
    VEC(const char *) groups = {0};
    VEC(int64_t) bytes = {0};
    int64_t total = 0;
    for (int i = 0; i < g->nodes.n; i++) {
        const Node *n = graph_node(g, i);
        if (op_table[n->op].flags & OPF_LEAF) continue;
        const char *grp = *n->group ? n->group : "(top level)";
        int k = groups.n - 1;
        while (k >= 0 && strcmp(groups.v[k], grp)) k--;
        if (k < 0) {
            VEC_PUSH(groups, grp);
            VEC_PUSH(bytes, 0);
            k = groups.n - 1;
        }
        bytes.v[k] += node_bytes(n);
        total += node_bytes(n);
    }
    fprintf(out, "activations: %" PRId64 " bytes (%s) if every tensor were kept\n", total,
            format_bytes(total, b1, sizeof b1));
    for (int k = 0; k < groups.n; k++)
        fprintf(out, "  %-24s %14" PRId64 "  %s\n", groups.v[k], bytes.v[k], format_bytes(bytes.v[k], b1, sizeof b1));
    VEC_FREE(groups);
    VEC_FREE(bytes);
}

static int make_dir(const char *dir) {
    if (mkdir(dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "acc: error: cannot create directory '%s': %s\n", dir, strerror(errno));
        return EXIT_INPUT;
    }
    return 0;
}

static int cmd_check(Options *o) {
    Graph g;
    graph_init(&g, "model");
    int rc = fe_load_file(o->file, o->defs.v, o->defs.n, &g, stderr) ? EXIT_INPUT : 0;
    if (!rc) print_summary(&g, stdout);
    graph_free(&g);
    return rc;
}

static int cmd_compile(Options *o) {
    if (!o->has_budget) return usage_error("compile needs --budget SIZE");
    if (!o->out_dir) return usage_error("compile needs -o DIR");
    char b1[32];
    fprintf(stderr, "acc: budget %" PRId64 " bytes (%s)\n", o->budget_bytes,
            format_bytes(o->budget_bytes, b1, sizeof b1));
    Graph g;
    graph_init(&g, "model");
    int rc = fe_load_file(o->file, o->defs.v, o->defs.n, &g, stderr) ? EXIT_INPUT : 0;
    if (!rc) rc = make_dir(o->out_dir);
    if (!rc) {
        char *path = pool_printf(&g.pool, "%s/%s.ir", o->out_dir, g.model);
        FILE *f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "acc: error: cannot write '%s': %s\n", path, strerror(errno));
            rc = EXIT_INPUT;
        } else {
            ir_print(&g, f);
            if (fclose(f)) rc = EXIT_INPUT;
            fprintf(stderr, "acc: wrote %s\n", path);
        }
    }
    graph_free(&g);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("acc %s (GLPK %s)\n", ACC_VERSION, glp_version());
        return 0;
    }
    Options o = {0};
    int rc = parse_options(argc - 2, argv + 2, &o);
    if (!rc) {
        if (!strcmp(cmd, "check")) rc = cmd_check(&o);
        else if (!strcmp(cmd, "compile")) rc = cmd_compile(&o);
        else rc = usage_error("unknown command '%s'", cmd);
    }
    free_options(&o);
    return rc;
}
