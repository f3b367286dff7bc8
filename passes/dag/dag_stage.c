/* dag_stage.c - staged checkpoints: a plan for tight budgets on large graphs
 * (issue 18, MOCCASIN's random layered n500 and n1000 at 0.6 of their peak).
 *
 * requires: a Dag, a budget, a deadline. provides: a staged schedule within
 * the budget (replayed by dag_simulate before it is returned), or nothing.
 *
 * The nodes run in the topological order, stage t ending with t's first
 * execution. Between stages a set H of outputs is held (the checkpoints),
 * its bytes at most a cap, a fraction of the budget. Stage t rebuilds the
 * inputs of t that H lacks by the pebbling search (dag_resolve_stage, the
 * local improvement's: t at once or its missing inputs one at a time) with
 * H pinned, its bytes off the budget: the search has the rest. After t runs,
 * the candidates for the next H are H, the inputs of t and t, all held at
 * t's event (so keeping them adds no memory the replay would not count), less
 * those no longer needed: needed is read by a first execution to come, or an
 * input of a needed node that is not held (a rebuild of it goes through
 * this one). Over the cap, the lowest scores go first. The score of u is
 * what losing it costs per byte held: the compute of u and of all its
 * ancestors the candidates lack (a rebuild goes through them; cut short,
 * the walk saturates on these graphs and the scores stop telling the nodes
 * apart), divided by u's bytes and by the stages until u's next need, or
 * their square root, or 1 (the three scores). A stage that finds no
 * rebuild evicts a tenth of the budget from H at a time, first what lies
 * out of t's cone (it only takes room), and tries again, down to nothing.
 *
 * Why it is needed: the evictions (dag.c) rebuild on demand with the inputs
 * at hand locked and fail on these graphs (a dropped output's cone reaches
 * back to the source); the plan that computes each node from nothing in
 * turn fits but costs ~360 times the baseline on n1000. Here the rebuilds
 * start from checkpoints. Twelve caps and scores are tried in a fixed
 * order, the cheapest plan kept; a kind is given up once it costs more than
 * the plan in hand (a cut that does not depend on the load); the driver
 * then improves the plan locally.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

#define STAGE_MAX_OVER_BASELINE 40 /* a plan dearer than 40 times the baseline is given up */
#define STAGE_HARD_STATES 200000   /* a stage the local improvement's 20,000 states do not build */

typedef struct {
    const Dag *d;
    int64_t budget;
    int *held;        /* [n] 2: in H (pinned during a stage), else 0 */
    int *next;        /* [n] the first stage after t that needs the node (INT_MAX: none) */
    int *mark, stamp; /* [n] the ancestors' walk */
    int *stack;       /* [n] */
    double *score;    /* [n] */
    int *cand;        /* [n] the candidates, then H */
    int n_cand;
} Stage;

/* The first reader of u after t (a first execution to come), or -1. */
static int next_reader(const Dag *d, int u, int t) {
    for (int q = d->out_off[u]; q < d->out_off[u + 1]; q++)
        if (d->out[q] > t) return d->out[q];
    return -1;
}

/* The compute of u and of all its ancestors outside the candidates (held
 * 2, the only nonzero value here): what rebuilding u would run, at most. */
static double rebuild_cost(Stage *s, int u) {
    const Dag *d = s->d;
    int deg = d->in_off[u + 1] - d->in_off[u];
    return d->cost[u] + dag_cone_cost(d, s->held, d->in + d->in_off[u], deg, s->mark, s->stack, ++s->stamp);
}

/* H after stage t: the candidates still needed, the lowest scores out
 * until their bytes are at most cap. Returns the bytes of H. A node is
 * needed when a first execution to come reads it, or when it is an input of
 * a needed node outside the candidates (that one is rebuilt through it):
 * next[u] is the first stage that needs u so, INT_MAX when none. */
static int64_t choose_held(Stage *s, int t, int64_t cap, int kind) {
    const Dag *d = s->d;
    s->n_cand = 0;
    for (int q = d->in_off[t]; q < d->in_off[t + 1]; q++) s->held[d->in[q]] = 2;
    s->held[t] = 2;
    for (int u = t; u >= 0; u--) { /* the users of u come later: their needs are known */
        int r = next_reader(d, u, t), nn = r < 0 ? INT_MAX : r;
        for (int q = d->out_off[u]; q < d->out_off[u + 1] && d->out[q] <= t; q++) {
            int w = d->out[q];
            if (s->held[w] != 2 && s->next[w] < nn) nn = s->next[w];
        }
        s->next[u] = nn;
    }
    for (int u = 0; u <= t; u++) {
        if (s->held[u] != 2) continue;
        if (s->next[u] == INT_MAX) s->held[u] = 0;
        else s->cand[s->n_cand++] = u;
    }
    int64_t bytes = 0;
    for (int a = 0; a < s->n_cand; a++) {
        int u = s->cand[a];
        double dist = s->next[u] - t, m = (double)(d->mem[u] > 0 ? d->mem[u] : 1);
        double per = kind == 0 ? m * dist : kind == 1 ? m * sqrt(dist) : m;
        s->score[u] = rebuild_cost(s, u) / per;
        bytes += d->mem[u];
    }
    /* lowest score last, so that they leave from the end */
    for (int a = 1; a < s->n_cand; a++)
        for (int b = a; b > 0 && s->score[s->cand[b - 1]] < s->score[s->cand[b]]; b--) {
            int x = s->cand[b];
            s->cand[b] = s->cand[b - 1], s->cand[b - 1] = x;
        }
    while (bytes > cap && s->n_cand) {
        int u = s->cand[--s->n_cand];
        s->held[u] = 0, bytes -= d->mem[u];
    }
    return bytes;
}

/* Out of H until its bytes are at most less, the lowest scores first (H is
 * sorted so), first those no rebuild for t can use: the held nodes a walk
 * from t through outputs not held does not reach (out of a stage's cone,
 * they only take its room; in it, they are what keeps the rebuild short). */
static int64_t evict_some(Stage *s, int t, int64_t bytes, int64_t less) {
    const Dag *d = s->d;
    int top = 0;
    s->stamp++;
    s->mark[t] = s->stamp, s->stack[top++] = t;
    while (top) {
        int v = s->stack[--top];
        if (s->held[v] == 2) continue; /* reached: the frontier of the rebuild */
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++)
            if (s->mark[d->in[q]] != s->stamp) s->mark[d->in[q]] = s->stamp, s->stack[top++] = d->in[q];
    }
    for (int pass = 0; pass < 2; pass++)
        for (int a = s->n_cand - 1; a >= 0 && bytes > less; a--) {
            int u = s->cand[a];
            if (pass == 0 && s->mark[u] == s->stamp) continue;
            s->held[u] = 0, bytes -= d->mem[u];
            memmove(s->cand + a, s->cand + a + 1, (size_t)(s->n_cand - a - 1) * sizeof(int));
            s->n_cand--;
        }
    return bytes;
}

/* Stage t from H (bytes): dag_resolve_stage, then, where it finds nothing
 * in its states, the search for t at once with more. Its compute, -1: none. */
static double build_stage(Stage *s, int t, int64_t bytes, double deadline, Staged *st) {
    double c = dag_resolve_stage(s->d, s->budget, t, s->held, bytes, NULL, 0, deadline, st);
    if (c >= 0 || bytes >= s->budget) return c;
    int *seq = NULL, n_seq = 0;
    double cs = 0;
    if (dag_pebble(s->d, s->budget - bytes, t, s->held, STAGE_HARD_STATES, deadline, 0, &seq, &n_seq, &cs) ==
        DAG_PEBBLE_FOUND) {
        staged_clear(st);
        for (int e = 0; e < n_seq; e++) staged_push(st, t, seq[e]);
        staged_push(st, t, t);
        c = cs + s->d->cost[t];
    }
    free(seq);
    return c;
}

/* One plan at one cap and score; false when a stage finds no rebuild even
 * from nothing, or at the deadline. */
static bool stage_plan(Stage *s, int64_t cap, int kind, double upper, double deadline, Staged *out) {
    const Dag *d = s->d;
    int n = d->n;
    Staged st = {0};
    memset(s->held, 0, (size_t)n * sizeof(int));
    s->n_cand = 0;
    int64_t bytes = 0;
    double total = 0;
    bool ok = true;
    staged_clear(out);
    for (int t = 0; t < n && ok; t++) {
        if (acc_now_s() >= deadline) {
            ok = false;
            break;
        }
        double c = build_stage(s, t, bytes, deadline, &st);
        /* none: a tenth of the budget out of H at a time */
        while (c < 0 && s->n_cand && acc_now_s() < deadline) {
            bytes = evict_some(s, t, bytes, bytes - s->budget / 10);
            c = build_stage(s, t, bytes, deadline, &st);
        }
        if (c < 0) {
            ok = false;
            break;
        }
        total += c;
        if (total >= upper) { /* dearer than a plan in hand: given up, whatever the load */
            ok = false;
            break;
        }
        for (int e = 0; e < st.ev.n; e++) staged_push(out, t, st.ev.v[e]);
        bytes = choose_held(s, t, cap, kind);
    }
    staged_free(&st);
    return ok;
}

/* The kinds tried, in order: the cap on H's bytes (a fraction of the
 * budget) and the score. The plans hang on both in no simple way (on
 * MOCCASIN's n1000 at 0.6 the plans of 24 kinds cost 2.9 to 12 million,
 * some none; n500's best kinds are others), so the first are the best
 * there and on n500, the rest spread. */
static const struct {
    double cap;
    int score;
} stage_kinds[] = {{0.75, 1}, {0.85, 1}, {0.85, 0}, {0.65, 0}, {0.8, 0},  {0.9, 0},
                   {0.95, 2}, {0.75, 0}, {0.85, 2}, {0.7, 2},  {0.95, 0}, {0.8, 1}};
#define STAGE_KINDS ((int)(sizeof stage_kinds / sizeof stage_kinds[0]))

bool dag_stage_checkpoints(const Dag *d, int64_t budget, double deadline, Staged *out, bool verbose) {
    int n = d->n;
    Stage s = {.d = d, .budget = budget};
    s.held = acc_xcalloc((size_t)n, sizeof(int));
    s.next = acc_xcalloc((size_t)n, sizeof(int));
    s.mark = acc_xcalloc((size_t)n, sizeof(int));
    s.stack = acc_xcalloc((size_t)n, sizeof(int));
    s.score = acc_xcalloc((size_t)n, sizeof(double));
    s.cand = acc_xcalloc((size_t)n, sizeof(int));
    double best = INFINITY, upper = STAGE_MAX_OVER_BASELINE * dag_baseline_compute(d);
    Staged trial = {0};
    staged_clear(out);
    for (int k = 0; k < STAGE_KINDS && acc_now_s() < deadline; k++) {
        double t0 = acc_now_s(), cf = stage_kinds[k].cap;
        /* before any plan, a kind may take 0.7 of the time left (one that fails late must not take it all);
         * after, the cost of the plan in hand cuts the dearer ones short */
        double end = isfinite(best) || k == STAGE_KINDS - 1 ? deadline : t0 + 0.7 * (deadline - t0);
        bool ok = stage_plan(&s, (int64_t)(cf * (double)budget), stage_kinds[k].score, fmin(best, upper), end, &trial);
        DagSim sim = {0};
        if (ok) dag_simulate(d, trial.ev.v, trial.ev.n, &sim, NULL);
        ok = ok && sim.valid && sim.peak <= budget;
        if (verbose)
            fprintf(stderr, "acc plan: staged checkpoints (cap %.2f, score %d): %s, compute %.8g, %.2f s\n", cf,
                    stage_kinds[k].score, ok ? "fits" : "none", ok ? sim.compute : NAN, acc_now_s() - t0);
        if (ok && sim.compute < best) {
            best = sim.compute;
            staged_copy(out, &trial);
        }
    }
    staged_free(&trial);
    free(s.held), free(s.next), free(s.mark), free(s.stack), free(s.score), free(s.cand);
    return isfinite(best);
}
