/* test_plancheck.c - plan_check's overlap test (a sweep over a sorted live
 * set) against a brute force over every pair of buffers.
 *
 * For a small GPT-2 and random plans, the allocated schedule passes; then
 * one dynamic buffer at a time is moved onto another buffer's offset, and
 * plan_check must fail exactly when some pair of buffers live at a common
 * step intersects in the arena (the brute force's verdict).
 */
#include "frontend.h"
#include "passes.h"
#include "test.h"

static uint64_t rng_state = 0x2545f4914f6cdd1du;

static uint64_t rng(void) {
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717u;
}

/* Some pair of buffers with a common live step overlaps in the arena. */
static bool brute_overlap(const Schedule *s) {
    int nb = s->bufs.n;
    for (int i = 0; i < nb; i++)
        for (int j = i + 1; j < nb; j++) {
            const Buffer *a = &s->bufs.v[i], *b = &s->bufs.v[j];
            if (a->first < 0 || b->first < 0 || a->size_bytes <= 0 || b->size_bytes <= 0) continue;
            bool time = a->first <= b->last && b->first <= a->last;
            bool space = a->offset < b->offset + b->size_bytes && b->offset < a->offset + a->size_bytes;
            if (time && space && a->host == b->host) return true; /* the same arena */
        }
    return false;
}

int main(void) {
    Graph g;
    graph_init(&g, "test");
    Define defs[] = {{"L", "2"}, {"C", "32"}, {"H", "4"}, {"T", "16"}, {"B", "2"}, {"V", "64"}};
    if (!ASSERT(0, fe_load_file("models/gpt2.acdsl", defs, 6, &g, stdout))) return test_done();
    Autodiff ad;
    ad_build(&g, &ad);
    Decision *dec = acc_xrealloc(NULL, (size_t)g.nodes.n * sizeof(Decision));
    FILE *devnull = fopen("/dev/null", "w");
    int n_fail = 0, n_pass = 0;
    for (int plan = 0; plan < 6; plan++) {
        /* half the plans offload some of what they drop */
        for (int i = 0; i < g.nodes.n; i++) {
            int r = (int)(rng() % 8);
            dec[i] = r < 2 ? DEC_RECOMPUTE : r == 2 && plan % 2 ? DEC_OFFLOAD : DEC_SAVE;
        }
        Schedule s;
        SchedOptions so = {OPT_STATE_F32, NULL, NULL, NULL};
        sched_build(&g, &ad, dec, &so, &s);
        if (plan % 2) ASSERT_TRUE(s.n_offload > 0 && s.host_bytes == 0); /* not allocated yet */
        alloc_assign(&s);
        ASSERT_TRUE(plan_check(&s, devnull));
        ASSERT_TRUE(!brute_overlap(&s));
        for (int k = 0; k < 200; k++) {
            int i = (int)(rng() % (uint64_t)s.bufs.n), j = (int)(rng() % (uint64_t)s.bufs.n);
            Buffer *a = &s.bufs.v[i];
            const Buffer *b = &s.bufs.v[j];
            if (a->persistent || a->first < 0 || b->first < 0 || i == j) continue;
            int64_t saved = a->offset;
            a->offset = b->offset;
            if (a->host == b->host && a->offset + a->size_bytes <= (a->host ? s.host_bytes : s.arena_bytes)) {
                bool bad = brute_overlap(&s);
                ASSERT(!bad, plan_check(&s, devnull));
                bad ? n_fail++ : n_pass++;
            }
            a->offset = saved;
        }
        sched_free(&s);
    }
    printf("moved buffers: %d overlaps caught, %d harmless moves passed\n", n_fail, n_pass);
    ASSERT_TRUE(n_fail > 100);
    fclose(devnull);
    free(dec);
    ad_free(&ad);
    graph_free(&g);
    return test_done();
}
