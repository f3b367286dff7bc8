/* dag_cmd.c - `acc plan --graph FILE.json`: plan a published computation
 * graph (Checkmate's and MOCCASIN's node-link JSON) under a memory budget
 * and print one JSON object. The logic is in passes/dag/.
 *
 *   acc plan --graph FILE.json (--budget SIZE | --budget-frac F)
 *            [--method acc|checkmate-milp|checkmate-lp|intervals] [--copies C]
 *            [--time-limit S]
 *            [--emit=lp PATH] [--schedule] [-v]
 *
 * Exit status: 0 the plan fits, 1 bad input or no plan within the budget
 * (the JSON is printed all the same), 2 usage error.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag_cmd.h"
#include "options.h"
#include "passes.h"

static const char plan_usage[] = "usage: acc plan --graph FILE.json (--budget SIZE | --budget-frac F) [options]\n"
                                 "  --graph FILE.json   networkx node-link JSON (Checkmate's cost_cpu/cost_ram or\n"
                                 "                      the random graphs' duration/out_cost)\n"
                                 "  --budget SIZE       memory budget in the file's unit (bytes: 8G, 512M, ...)\n"
                                 "  --budget-frac F     F x the peak of running the graph once in topological\n"
                                 "                      order (rounded up to a whole unit)\n"
                                 "  --method M          acc (default), checkmate-milp (Checkmate's MILP),\n"
                                 "                      checkmate-lp (its LP relaxation, rounded),\n"
                                 "                      intervals (retention intervals, up to C computations\n"
                                 "                      a node; docs/plan-graphs.md)\n"
                                 "  --copies C          intervals: computations per node at most (1..64, default 2)\n"
                                 "  --time-limit S      seconds (default: acc 20, checkmate and intervals 60)\n"
                                 "  --emit=lp PATH      write the integer program (CPLEX LP format)\n"
                                 "  --schedule          include the schedule (node ids in execution order)\n"
                                 "  -v                  progress on stderr\n";

static int plan_usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "acc: error: %s%s%s%s\n%s", msg, arg ? " '" : "", arg ? arg : "", arg ? "'" : "", plan_usage);
    return 2;
}

static void json_num(FILE *f, const char *key, double v, bool comma) {
    if (isfinite(v)) fprintf(f, "\"%s\": %.10g%s", key, v, comma ? ", " : "");
    else fprintf(f, "\"%s\": null%s", key, comma ? ", " : "");
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}


int acc_plan_main(int argc, char **argv) {
    const char *graph = NULL, *emit_lp = NULL, *method = "acc";
    double frac = NAN, limit = 0;
    int64_t budget = -1;
    bool schedule = false, verbose = false;
    int copies = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(plan_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--graph")) {
            if (!v) return plan_usage_error("--graph needs a file", NULL);
            graph = v, i++;
        } else if (!strcmp(a, "--budget")) {
            if (!v || !parse_size(v, &budget)) return plan_usage_error("--budget needs a size, got", v ? v : "nothing");
            i++;
        } else if (!strcmp(a, "--budget-frac")) {
            if (!v || !opt_decimal(v, false, &frac) || !(frac > 0) || frac > 1e6)
                return plan_usage_error("--budget-frac needs a number F, 0 < F <= 1e6, got", v ? v : "nothing");
            i++;
        } else if (!strcmp(a, "--method")) {
            /* exhaustive, exhaustive-staged: the tests' reference, for benchmarks (not in the usage) */
            if (!v || (strcmp(v, "acc") && strcmp(v, "checkmate-milp") && strcmp(v, "checkmate-lp") &&
                       strcmp(v, "intervals") && strcmp(v, "exhaustive") && strcmp(v, "exhaustive-staged")))
                return plan_usage_error("--method is acc, checkmate-milp, checkmate-lp or intervals, got",
                                        v ? v : "nothing");
            method = v, i++;
        } else if (!strcmp(a, "--copies")) {
            char *end = NULL;
            long c = v ? strtol(v, &end, 10) : 0;
            if (!v || !*v || *end || c < 1 || c > 64)
                return plan_usage_error("--copies needs a whole number 1..64, got", v ? v : "nothing");
            copies = (int)c, i++;
        } else if (!strcmp(a, "--time-limit")) {
            if (!v || !opt_seconds(v, false, &limit))
                return plan_usage_error("--time-limit needs seconds, a number greater than 0 and at most 1e6, got",
                                        v ? v : "nothing");
            i++;
        } else if (!strcmp(a, "--emit=lp") || !strncmp(a, "--emit=lp=", 10)) {
            emit_lp = a[9] == '=' ? a + 10 : v;
            if (!emit_lp || !*emit_lp) return plan_usage_error("--emit=lp needs a path", NULL);
            if (a[9] != '=') i++;
        } else if (!strcmp(a, "--schedule")) {
            schedule = true;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            verbose = true;
        } else {
            return plan_usage_error("unknown option for plan:", a);
        }
    }
    if (!graph) return plan_usage_error("plan needs --graph FILE.json", NULL);
    if (emit_lp && !strcmp(method, "intervals"))
        return plan_usage_error("--emit=lp writes acc's or Checkmate's program, not the interval program", NULL);
    if ((budget >= 0) == isfinite(frac)) return plan_usage_error("plan needs one of --budget and --budget-frac", NULL);
    double t0 = acc_now_s();
    Dag d;
    char err[1024];
    if (!dag_load(graph, &d, err, sizeof err)) {
        fprintf(stderr, "acc: error: %s\n", err);
        return 1;
    }
    int64_t base_peak = dag_baseline_peak(&d);
    double base_compute = dag_baseline_compute(&d);
    if (isfinite(frac)) budget = (int64_t)ceil(frac * (double)base_peak - 1e-9);
    /* --time-limit bounds the whole command: what reading the graph took
     * comes out of the planner's share */
    if (limit > 0) limit = fmax(limit - (acc_now_s() - t0), 0.05 * limit);
    DagPlanOptions o = {!strcmp(method, "acc")                 ? DAG_ACC
                        : !strcmp(method, "checkmate-milp")    ? DAG_CHECKMATE_MILP
                        : !strcmp(method, "checkmate-lp")      ? DAG_CHECKMATE_LP
                        : !strcmp(method, "intervals")         ? DAG_INTERVALS
                        : !strcmp(method, "exhaustive-staged") ? DAG_EXHAUSTIVE_STAGED
                                                               : DAG_EXHAUSTIVE,
                        budget,
                        limit,
                        emit_lp,
                        verbose,
                        copies,
                        0};
    DagPlan p;
    if (!dag_plan(&d, &o, &p, err, sizeof err)) {
        fprintf(stderr, "acc: error: %s\n", err);
        dag_free(&d);
        return 1;
    }
    if (!strcmp(p.status, "too_large") && p.note[0]) fprintf(stderr, "acc: error: %d nodes: %s\n", d.n, p.note);
    else if (!strcmp(p.status, "too_large"))
        fprintf(stderr,
                "acc: error: %d nodes over the budget: the planner searches graphs of up to %d nodes (its "
                "tables grow with the square of the size); the JSON reports the topological order\n",
                d.n, DAG_DENSE_MAX_NODES);
    FILE *f = stdout;
    fprintf(f, "{\"graph\": ");
    json_str(f, d.title);
    fprintf(f, ", \"file\": ");
    json_str(f, graph);
    fprintf(f, ", \"nodes\": %d, \"edges\": %d, \"order\": \"%s\", \"method\": \"%s\", \"budget\": %" PRId64 ", ", d.n,
            d.n_edges, d.order, method, budget);
    json_num(f, "budget_frac", frac, true);
    fprintf(f, "\"baseline_peak\": %" PRId64 ", ", base_peak);
    json_num(f, "baseline_compute", base_compute, true);
    fprintf(f, "\"min_peak\": %" PRId64 ", \"peak\": %" PRId64 ", \"fits\": %s, ", dag_min_peak(&d), p.sim.peak,
            p.fits ? "true" : "false");
    json_num(f, "compute", p.sim.compute, true);
    json_num(f, "overhead", base_compute > 0 ? p.sim.compute / base_compute - 1 : 0, true);
    fprintf(f, "\"recomputations\": %d, \"status\": \"%s\", ", p.sim.n_recompute, p.status);
    json_num(f, "objective", p.objective, true);
    json_num(f, "bound", p.bound, true);
    fprintf(f, "\"bound_scope\": \"%s\", ", p.bound_scope);
    json_num(f, "gap", p.gap, true);
    if (p.least_peak >= 0) fprintf(f, "\"least_peak_found\": %" PRId64 ", ", p.least_peak);
    if (p.recursive_peak >= 0) fprintf(f, "\"recursive_peak\": %" PRId64 ", ", p.recursive_peak);
    if (p.note[0]) {
        fprintf(f, "\"note\": ");
        json_str(f, p.note);
        fprintf(f, ", ");
    }
    fprintf(f, "\"binaries\": %d, \"rows\": %d, ", p.n_binaries, p.n_rows);
    json_num(f, "time_s", p.solve_s, schedule);
    if (schedule) {
        fprintf(f, "\"schedule\": [");
        for (int e = 0; e < p.n_ev; e++) {
            if (e) fprintf(f, ", ");
            json_str(f, d.label[p.ev[e]]);
        }
        fprintf(f, "]");
    }
    fprintf(f, "}\n");
    int rc = p.fits ? 0 : 1;
    dag_plan_free(&p);
    dag_free(&d);
    return rc;
}
