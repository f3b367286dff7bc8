#!/bin/sh
# published.sh [GRAPH_DIR] - acc's planner on the graphs the Checkmate (MLSys
# 2020) and MOCCASIN (ICML 2023) papers published, against Checkmate's MILP
# and its LP relaxation with rounding, all three solved by GLPK and scored by
# the same simulator (acc plan). For each graph in GRAPH_DIR (default
# ../shared/bench-data/checkmate-graphs) and budgets of 0.9 .. 0.5 of the
# baseline peak: overhead (total compute / baseline compute - 1) and solve
# time of each method, and a markdown table with the cost ratios; then the
# optimality table: where an exact method proved the optimum, acc's cost
# against it.
#
# Environment: ACC (the acc binary, default build/acc), ACC_TIME (acc's time
# limit, default 10 s), CM_TIME (each Checkmate method's, default 30 s),
# BUDGETS (default "0.9 0.8 0.7 0.6 0.5"), RAW (keep the JSON lines here),
# INTERVALS (default 1; 0 skips --method intervals, run with CM_TIME and
# shown in a table of its own: status, overhead, bound and its scope, model
# size beside Checkmate's MILP's), METHODS (the methods to run, default
# all), TABLES_FROM (print the tables from this file of JSON lines, e.g.
# the RAW files of several runs put together, and run nothing).
# The whole run takes at most about (ACC_TIME + 3 CM_TIME) x graphs x budgets.
set -eu
dir=${1:-../shared/bench-data/checkmate-graphs}
acc=${ACC:-build/acc}
acc_time=${ACC_TIME:-10}
cm_time=${CM_TIME:-30}
budgets=${BUDGETS:-"0.9 0.8 0.7 0.6 0.5"}
raw=${RAW:-$(mktemp)}
[ -x "$acc" ] || { echo "published.sh: no acc binary at '$acc' (set ACC)" >&2; exit 2; }
ls "$dir"/*.json >/dev/null 2>&1 || { echo "published.sh: no *.json in '$dir'" >&2; exit 2; }
[ -z "${TABLES_FROM:-}" ] || raw=$TABLES_FROM
[ -n "${TABLES_FROM:-}" ] || : >"$raw"
[ -n "${TABLES_FROM:-}" ] || for g in "$dir"/*.json; do
    for f in $budgets; do
        methods="acc checkmate-milp checkmate-lp"
        [ "${INTERVALS:-1}" = 0 ] || methods="$methods intervals"
        methods=${METHODS:-$methods}
        for m in $methods; do
            t=$cm_time
            [ "$m" = acc ] && t=$acc_time
            line=$("$acc" plan --graph "$g" --budget-frac "$f" --method "$m" --time-limit "$t" 2>/dev/null) || true
            [ -n "$line" ] || line="{\"file\": \"$g\", \"budget_frac\": $f, \"method\": \"$m\", \"status\": \"error\"}"
            echo "$line" >>"$raw"
            echo "$line" | awk -v g="${g##*/}" -v f="$f" -v m="$m" '{ s = $0; sub(/.*"status": "/, "", s); sub(/".*/, "", s); printf "%s %s %s: %s\n", g, f, m, s }' >&2
        done
    done
done

# ---- tables -------------------------------------------------------------------
awk -v acc_time="$acc_time" -v cm_time="$cm_time" '
function get(key,   r) {
    if (match($0, "\"" key "\": (\"[^\"]*\"|[^,}]*)")) {
        r = substr($0, RSTART + length(key) + 4, RLENGTH - length(key) - 4)
        gsub(/"/, "", r)
        return r
    }
    return ""
}
function pct(x) { return x == "" || x == "null" ? "-" : sprintf("%.2f%%", 100 * x) }
function sec(x) { return x == "" || x == "null" ? "-" : sprintf("%.1f", x) }
{
    f = get("file"); sub(/.*\//, "", f); sub(/\.json$/, "", f)
    k = f SUBSEP get("budget_frac") SUBSEP get("method")
    if (!(f in seen)) { seen[f] = 1; graphs[++ng] = f }
    b = get("budget_frac"); if (!((f, b) in bseen)) { bseen[f, b] = 1; nb[f]++; bud[f, nb[f]] = b }
    fits[k] = get("fits"); ov[k] = get("overhead"); tm[k] = get("time_s"); st[k] = get("status")
    cost[k] = get("compute"); bnd[k] = get("bound"); scope[k] = get("bound_scope"); base[f] = get("baseline_compute")
    nbin[k] = get("binaries"); nrow[k] = get("rows")
}
END {
    printf "Overhead = total compute / baseline compute - 1; time in seconds (limits: acc %s s, Checkmate %s s each).\n", acc_time, cm_time
    printf "cost ratio = acc total compute / the method'"'"'s (< 1: acc is cheaper); - where a method has no plan that fits.\n\n"
    printf "| graph | budget | acc overhead | acc time | acc status | MILP overhead | MILP time | MILP status | LP+rounding overhead | LP time | acc/MILP | acc/LP | lower bound | acc gap |\n"
    printf "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= ng; i++) {
        f = graphs[i]
        for (j = 1; j <= nb[f]; j++) {
            b = bud[f, j]
            a = f SUBSEP b SUBSEP "acc"; m = f SUBSEP b SUBSEP "checkmate-milp"; l = f SUBSEP b SUBSEP "checkmate-lp"
            ao = fits[a] == "true" ? pct(ov[a]) : "no plan"
            mo = fits[m] == "true" ? pct(ov[m]) : "no plan"
            lo = fits[l] == "true" ? pct(ov[l]) : "no plan"
            rm = fits[a] == "true" && fits[m] == "true" ? sprintf("%.4f", cost[a] / cost[m]) : "-"
            rl = fits[a] == "true" && fits[l] == "true" ? sprintf("%.4f", cost[a] / cost[l]) : "-"
            # the best proven lower bound on Checkmate'"'"'s optimum: any method'"'"'s, when it covers every staged plan
            lb = ""
            split("acc checkmate-milp checkmate-lp", ms, " ")
            for (q = 1; q <= 3; q++) {
                kk = f SUBSEP b SUBSEP ms[q]
                if (bnd[kk] != "" && bnd[kk] != "null" && (scope[kk] == "checkmate" || scope[kk] == "all schedules") && (lb == "" || bnd[kk] + 0 > lb + 0)) lb = bnd[kk]
            }
            gap = fits[a] == "true" && lb != "" ? sprintf("%.2f%%", 100 * (cost[a] - lb) / cost[a]) : "-"
            lbs = lb == "" ? "-" : sprintf("%.6g", lb)
            if (st[a] == "infeasible") { lbs = "infeasible" }
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f, b, ao, sec(tm[a]), st[a], mo, sec(tm[m]), st[m], lo, sec(tm[l]), rm, rl, lbs, gap
        }
    }
    printf "\nOptimality: where a method proved the optimum over every staged plan (checkmate-milp, or acc'"'"'s exact\n"
    printf "program over every earlier node, an exact reformulation of Checkmate'"'"'s), acc'"'"'s cost against it.\n\n"
    printf "| graph | budget | proven optimum (compute) | proved by | acc compute | acc / optimum |\n|---|---|---|---|---|---|\n"
    n_opt = 0
    for (i = 1; i <= ng; i++) {
        f = graphs[i]
        for (j = 1; j <= nb[f]; j++) {
            b = bud[f, j]
            a = f SUBSEP b SUBSEP "acc"; m = f SUBSEP b SUBSEP "checkmate-milp"
            opt = ""; by = ""
            if (st[m] == "optimal" && fits[m] == "true") { opt = cost[m]; by = "checkmate-milp" }
            if (st[a] == "optimal" && fits[a] == "true" && (scope[a] == "checkmate" || scope[a] == "all schedules")) {
                if (opt == "") { opt = cost[a]; by = "acc (exact program)" } else by = by ", acc"
            }
            if (opt == "") continue
            n_opt++
            printf "| %s | %s | %.6g | %s | %s | %.4f |\n", f, b, opt, by, fits[a] == "true" ? cost[a] : "no plan", fits[a] == "true" ? cost[a] / opt : 0
        }
    }
    if (!n_opt) printf "| (none) | | | | | |\n"
    n_ivl = 0
    for (i = 1; i <= ng; i++) for (j = 1; j <= nb[graphs[i]]; j++) if ((graphs[i] SUBSEP bud[graphs[i], j] SUBSEP "intervals") in st) n_ivl++
    if (!n_ivl) exit
    printf "\nThe interval program (--method intervals, %s s; its bound holds for its own plan space: scope\n", cm_time
    printf "intervals, or intervals (support) when the support was cut), beside Checkmate'"'"'s MILP.\n\n"
    printf "| graph | budget | intervals status | overhead | bound (scope) | time | binaries / rows | MILP status | MILP overhead | MILP binaries / rows | acc overhead |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= ng; i++) {
        f = graphs[i]
        for (j = 1; j <= nb[f]; j++) {
            b = bud[f, j]
            v = f SUBSEP b SUBSEP "intervals"; m = f SUBSEP b SUBSEP "checkmate-milp"; a = f SUBSEP b SUBSEP "acc"
            if (!(v in st)) continue
            bs = bnd[v] == "" || bnd[v] == "null" ? "-" : sprintf("%.6g (%s)", bnd[v], scope[v])
            printf "| %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s / %s | %s |\n", f, b, st[v], fits[v] == "true" ? pct(ov[v]) : "no plan", bs, sec(tm[v]), nbin[v], nrow[v], st[m], fits[m] == "true" ? pct(ov[m]) : "no plan", nbin[m], nrow[m], fits[a] == "true" ? pct(ov[a]) : "no plan"
        }
    }
}' "$raw"
[ -n "${RAW:-}" ] || [ -n "${TABLES_FROM:-}" ] || rm -f "$raw"
