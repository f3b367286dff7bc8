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
 * from nothing (R[x]); the largest R over the nodes is a peak some schedule
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
 */
#include <stdlib.h>
#include <string.h>

#include "dag_impl.h"

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

int64_t dag_recursive_peak(const Dag *d, int64_t *r_out, double *events) {
    int n = d->n;
    int64_t *r = r_out ? r_out : acc_xcalloc((size_t)n, sizeof(int64_t));
    int *ord = acc_xcalloc((size_t)n + 1, sizeof(int));
    int64_t most = 0;
    double total = 0;
    double *cnt = acc_xcalloc((size_t)n, sizeof(double)); /* events of x's recursive schedule */
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
        r[x] = peak;
        total += cnt[x];
        if (peak > most) most = peak;
    }
    if (events) *events = total;
    free(cnt), free(ord);
    if (!r_out) free(r);
    return most;
}

/* Append x's recursive schedule to s (stage t); a node held by a frame
 * below (on) is read, not recomputed: that only lowers the memory. */
static void emit(const Dag *d, const int64_t *r, int x, int t, int *on, Staged *s) {
    int k = d->in_off[x + 1] - d->in_off[x];
    int *ord = acc_xcalloc((size_t)k + 1, sizeof(int)), n_mine = 0;
    recursive_order(d, r, x, ord);
    for (int i = 0; i < k; i++) {
        if (on[ord[i]]) continue;
        emit(d, r, ord[i], t, on, s);
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
    dag_recursive_peak(d, r, &events);
    bool ok = events <= (double)max_events;
    staged_clear(out);
    int *on = acc_xcalloc((size_t)n, sizeof(int));
    for (int t = 0; t < n && ok; t++) emit(d, r, t, t, on, out);
    free(on), free(r);
    return ok;
}
