/* dag_minpeak.c - the least peak of any schedule, from above: the recursive
 * schedule, which computes a node by computing its inputs one at a time,
 * each from nothing, holding those already computed, and then the node.
 * Not a planner of cheap schedules: it recomputes a node once per path that
 * reaches it, so on deep graphs it cannot be written out; its peak, a
 * number computed in O(n + the sum of the in-degrees squared), still
 * shows that a schedule within it exists (the least peak over every
 * schedule is at most that).
 *
 * requires: a Dag. provides: per node, the peak of computing it this way
 * (or by a sweep, below) from nothing (R[x]); the largest R over the nodes is a peak some schedule
 * reaches (computing each node in turn from nothing, everything freed in
 * between); and, where it is short enough, that schedule's events.
 *
 * R[x], by induction: with the inputs u_1..u_k of x computed in this order,
 * while u_i is computed u_1..u_{i-1} are held (their memory) and u_i's own
 * computation needs R[u_i]; at x's event x and every input are held. So
 *     R[x] = max(mem(x) + sum mem(u), max_i (sum_{j<i} mem(u_j) + R[u_i])),
 * and the order that minimises it takes the inputs by R[u] - mem(u),
 * largest first (an exchange argument: swapping two neighbours out of that
 * order never lowers the larger of their two terms). The simulator frees a
 * copy after its last read and a read takes the latest copy, so a node
 * recomputed inside a later input's subtree frees the copy held before:
 * the replayed peak is at most R (test_dag_minpeak replays it).
 *
 * A second way per node (issue 18): x's sweep, its ancestors and x from
 * nothing in the topological order, each freed after its last read among
 * them. Where it peaks lower, R[x] is its peak (the recursion above then
 * uses that R[x] for x's readers). It helps where x's inputs share a large
 * cone, which the recursion recomputes once per input while holding the
 * inputs done: MOCCASIN's random_layered_n1000 drops from 0.589 to 0.536
 * of its save-all peak, n500 from 0.714 to 0.702. Inside a frame, a sweep
 * may compute again a copy a frame below holds; that copy was last read
 * before, so it is freed and the new one takes its place: the replayed peak
 * stays at most R. The sweeps cost n (n + edges) in all, so graphs above
 * SWEEP_WORK get the recursion alone.
 */
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

/* The sweeps cost n (n + edges) in all: up to this, a graph gets them. */
#define SWEEP_WORK 5e7

/* The inputs of x in the recursive order (R[u] - mem(u) descending, ties by index). */
static void recursive_order(const Dag *d, const int64_t *r, int x, int *ord) {
    int k = 0;
    for (int q = d->in_off[x]; q < d->in_off[x + 1]; q++) {
        int u = d->in[q], b = k++;
        for (; b > 0; b--) {
            int w = ord[b - 1];
            if (r[w] - d->mem[w] > r[u] - d->mem[u] || (r[w] - d->mem[w] == r[u] - d->mem[u] && w < u)) break;
            ord[b] = w;
        }
        ord[b] = u;
    }
}

/* x's cone, its ancestors and x: marked x + 1 in mark ([n], none equal to
 * x + 1 on entry); returns its lowest node. stack: [n] scratch. */
static int mark_cone(const Dag *d, int x, int *mark, int *stack) {
    int ns = 0, lo = x;
    mark[x] = x + 1, stack[ns++] = x;
    while (ns) {
        int v = stack[--ns];
        if (v < lo) lo = v;
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++)
            if (mark[d->in[q]] != x + 1) mark[d->in[q]] = x + 1, stack[ns++] = d->in[q];
    }
    return lo;
}

/* The peak of x's sweep: x's cone computed from nothing in the
 * topological order, each freed after its last read among them; their
 * number in *count. mark: as mark_cone's. */
static int64_t sweep_peak(const Dag *d, int x, int *mark, int *stack, int *last, double *count) {
    int lo = mark_cone(d, x, mark, stack);
    for (int v = lo; v <= x; v++)
        if (mark[v] == x + 1)
            for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++) last[d->in[q]] = v;
    int64_t live = 0, peak = 0;
    int m = 0;
    for (int v = lo; v <= x; v++) {
        if (mark[v] != x + 1) continue;
        m++;
        live += d->mem[v];
        if (live > peak) peak = live;
        for (int q = d->in_off[v]; q < d->in_off[v + 1]; q++)
            if (last[d->in[q]] == v) live -= d->mem[d->in[q]];
    }
    *count = m;
    return peak;
}

/* r[x] for every node, and sweep[x] (or NULL): x is computed by its sweep. */
static int64_t peaks(const Dag *d, int64_t *r, bool *sweep, double *events) {
    int n = d->n;
    int *ord = acc_xcalloc((size_t)n + 1, sizeof(int));
    int *mark = acc_xcalloc((size_t)n, sizeof(int)), *stack = acc_xcalloc((size_t)n, sizeof(int));
    int *last = acc_xcalloc((size_t)n, sizeof(int));
    bool sweeps = (double)n * ((double)n + d->n_edges) <= SWEEP_WORK;
    int64_t most = 0;
    double total = 0;
    double *cnt = acc_xcalloc((size_t)n, sizeof(double)); /* events of x's schedule */
    for (int x = 0; x < n; x++) {
        int k = d->in_off[x + 1] - d->in_off[x];
        recursive_order(d, r, x, ord);
        int64_t held = 0, peak = 0;
        cnt[x] = 1;
        for (int i = 0; i < k; i++) {
            if (held + r[ord[i]] > peak) peak = held + r[ord[i]];
            held += d->mem[ord[i]];
            cnt[x] += cnt[ord[i]];
        }
        if (held + d->mem[x] > peak) peak = held + d->mem[x];
        double swept = 0;
        int64_t sw = sweeps && k ? sweep_peak(d, x, mark, stack, last, &swept) : peak;
        if (sweep) sweep[x] = sw < peak;
        if (sw < peak) peak = sw, cnt[x] = swept;
        r[x] = peak;
        total += cnt[x];
        if (peak > most) most = peak;
    }
    if (events) *events = total;
    free(cnt), free(ord), free(mark), free(stack), free(last);
    return most;
}

int64_t dag_recursive_peak(const Dag *d, int64_t *r_out, double *events) {
    int64_t *r = r_out ? r_out : acc_xcalloc((size_t)d->n, sizeof(int64_t));
    int64_t most = peaks(d, r, NULL, events);
    if (!r_out) free(r);
    return most;
}

/* Append x's schedule to s (stage t); a node held by a frame below (on) is
 * read, not recomputed: that only lowers the memory. A sweep recomputes
 * its whole cone: a copy held by a frame below that it computes again is
 * freed at its last read before (reads take the latest copy), so the new
 * copy takes its place. */
static void emit(const Dag *d, const int64_t *r, const bool *sweep, int x, int t, int *on, Staged *s) {
    if (sweep[x]) {
        int *stack = acc_xcalloc((size_t)d->n, sizeof(int)), *mark = acc_xcalloc((size_t)d->n, sizeof(int));
        for (int v = mark_cone(d, x, mark, stack); v <= x; v++)
            if (mark[v] == x + 1) staged_push(s, t, v);
        free(stack), free(mark);
        return;
    }
    int k = d->in_off[x + 1] - d->in_off[x];
    int *ord = acc_xcalloc((size_t)k + 1, sizeof(int)), n_mine = 0;
    recursive_order(d, r, x, ord);
    for (int i = 0; i < k; i++) {
        if (on[ord[i]]) continue;
        emit(d, r, sweep, ord[i], t, on, s);
        on[ord[i]] = 1, ord[n_mine++] = ord[i]; /* held by this frame until x runs */
    }
    staged_push(s, t, x);
    for (int i = 0; i < n_mine; i++) on[ord[i]] = 0;
    free(ord);
}

bool dag_recursive_schedule(const Dag *d, int max_events, Staged *out) {
    int n = d->n;
    double events = 0;
    int64_t *r = acc_xcalloc((size_t)n, sizeof(int64_t));
    bool *sweep = acc_xcalloc((size_t)n, sizeof(bool));
    peaks(d, r, sweep, &events);
    bool ok = events <= (double)max_events;
    staged_clear(out);
    int *on = acc_xcalloc((size_t)n, sizeof(int));
    for (int t = 0; t < n && ok; t++) emit(d, r, sweep, t, t, on, out);
    free(on), free(r), free(sweep);
    return ok;
}
