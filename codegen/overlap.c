/* overlap.c - when the copies of offloaded tensors run (and, through
 * cg_first_overwrite, until when ZeRO-2's collectives may hold a gradient's
 * buffer). They run on a stream of their own, in the order they are issued,
 * and the static allocation says how far each may move from its step
 * without a data race:
 *
 *   - a copy out (OFFLOAD at step t) is issued at t, after the steps before
 *     it; the steps must wait for it only before the first later step that
 *     writes over the bytes it reads (the first step of a buffer placed over
 *     them), or, if none does, at the end of the run;
 *   - a copy back (FETCH at step f) is waited for at f, and may be issued
 *     right after the last earlier step that uses the bytes it lands in (the
 *     last step of a buffer placed over them), but not before its tensor's
 *     copy out was issued.
 *
 * Positions are those of the emitted code: a step fused into an elementwise
 * chain is emitted with the chain's last step, so an issue after it comes
 * after the chain (a wait before it comes before the chain in any case).
 */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

static bool overlap(const Buffer *a, const Buffer *b) {
    return a->offset < b->offset + b->size_bytes && b->offset < a->offset + a->size_bytes;
}

int cg_first_overwrite(const Schedule *s, int b, int t) {
    const Buffer *d = &s->bufs.v[b];
    int first = -1;
    for (int i = 0; i < s->bufs.n; i++) {
        const Buffer *o = &s->bufs.v[i];
        if (i != b && !o->host && !o->persistent && o->first > t && overlap(o, d) && (first < 0 || o->first < first))
            first = o->first;
    }
    return first;
}

/* The position step t is emitted at. */
static int position(const CgFusion *fu, int t) {
    int c = t >= 0 ? fu->chain_of[t] : -1;
    return c >= 0 ? fu->chains.v[c].ops[fu->chains.v[c].n_ops - 1].step : t;
}

void cg_copies(const Schedule *s, const CgFusion *fu, CgCopies *out) {
    memset(out, 0, sizeof *out);
    int n = s->steps.n, id = 0;
    for (int t = 0; t < n; t++) {
        const Step *st = &s->steps.v[t];
        if (st->kind != ST_OFFLOAD && st->kind != ST_FETCH) continue;
        bool to_host = st->kind == ST_OFFLOAD;
        CgCopy c = {t, t, to_host ? n : t, id, st->in[1] >= 0 ? 2 : 1};
        id += c.n_ids;
        const int dev[2] = {to_host ? st->in[0] : st->out, to_host ? st->in[1] : st->aux};
        if (!to_host) c.issue_after = s->bufs.v[st->in[0]].first; /* the copy out into its host buffer */
        for (int k = 0; k < 2; k++) {
            if (dev[k] < 0) continue;
            if (to_host) {
                int w = cg_first_overwrite(s, dev[k], t);
                if (w >= 0 && w < c.wait_before) c.wait_before = w;
                continue;
            }
            const Buffer *d = &s->bufs.v[dev[k]];
            for (int i = 0; i < s->bufs.n; i++) {
                const Buffer *b = &s->bufs.v[i];
                if (b->host || b->persistent || b->first < 0 || i == dev[k] || !overlap(b, d)) continue;
                if (b->last < t && b->last > c.issue_after) c.issue_after = b->last;
            }
        }
        c.issue_after = position(fu, c.issue_after); /* after the chain the step is fused into */
        VEC_PUSH(out->v, c);
    }
    out->n_ids = id;
}

void cg_copies_free(CgCopies *c) { VEC_FREE(c->v); }
