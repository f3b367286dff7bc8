/* test_copies.c - the exposed-time model of the copies of offloaded tensors
 * (passes/copies.c), on schedules built by hand whose answers are worked out
 * below: a copy hidden behind compute, one partly exposed, two queued on the
 * one copy stream, one issued at the start and waited for at the end; and
 * sched_copies' positions on a hand-allocated schedule (a copy out waited for
 * before the step that writes over its bytes, a copy back issued after the
 * last step using the bytes it lands in) with the model over them.
 */
#include "passes.h"
#include "test.h"

#define EXPECT_TIME(expected, actual) \
    EXPECT((actual) == (expected), "%s: expected %g, got %g", #actual, (double)(expected), (double)(actual))

/* Four steps of one second each: 0..1, 1..2, 2..3, 3..4 without stalls. */
static const double steps4[4] = {1, 1, 1, 1};

static void test_model(void) {
    CopyTime ct;
    /* issued after step 0 (at 1), 1.5 s: done at 2.5, waited for before step 3 (at 3): hidden */
    SchedCopy hidden = {.issue_after = 0, .wait_before = 3, .time = 1.5};
    copy_exposed(steps4, 4, &hidden, 1, &ct);
    EXPECT_TIME(1.5, ct.copy_time);
    EXPECT_TIME(0, ct.exposed_time);
    /* the same copy taking 2.5 s: done at 3.5, step 3 waits 0.5 s */
    SchedCopy partly = {.issue_after = 0, .wait_before = 3, .time = 2.5};
    copy_exposed(steps4, 4, &partly, 1, &ct);
    EXPECT_TIME(2.5, ct.copy_time);
    EXPECT_TIME(0.5, ct.exposed_time);
    /* queued: the first (after step 0, 2 s) runs 1..3; the second, issued
     * after step 1 (at 2), 1 s, starts when the first ends: 3..4; step 3
     * (at 3) waits for it 1 s (alone on the stream it would end at 3, hidden);
     * the first is waited for at the end (at 5): done */
    SchedCopy queued[2] = {{.step = 1, .issue_after = 0, .wait_before = 4, .time = 2},
                           {.step = 2, .issue_after = 1, .wait_before = 3, .time = 1}};
    copy_exposed(steps4, 4, queued, 2, &ct);
    EXPECT_TIME(3, ct.copy_time);
    EXPECT_TIME(1, ct.exposed_time);
    /* listed out of issue order: the same answer */
    SchedCopy swapped[2] = {queued[1], queued[0]};
    copy_exposed(steps4, 4, swapped, 2, &ct);
    EXPECT_TIME(1, ct.exposed_time);
    /* a stall delays the steps after it: the first copy (0..1 from the
     * start, waited for before step 0) exposes 1 s, so steps 0..2 run 1..4;
     * the second, issued after step 1 (at 3), 1.5 s, ends at 4.5, and step 3
     * (at 4) waits 0.5 s more: 1.5 s */
    SchedCopy delayed[2] = {{.step = 0, .issue_after = -1, .wait_before = 0, .time = 1},
                            {.step = 1, .issue_after = 1, .wait_before = 3, .time = 1.5}};
    copy_exposed(steps4, 4, delayed, 2, &ct);
    EXPECT_TIME(1.5, ct.exposed_time);
    /* issued at the start, 10 s, waited for at the end of the 4 s run: 6 s */
    SchedCopy end = {.issue_after = -1, .wait_before = 4, .time = 10};
    copy_exposed(steps4, 4, &end, 1, &ct);
    EXPECT_TIME(6, ct.exposed_time);
    copy_exposed(steps4, 4, NULL, 0, &ct); /* no copies */
    EXPECT_TIME(0, ct.copy_time);
    EXPECT_TIME(0, ct.exposed_time);
}

static Step step(StepKind kind, int node, int out, int in0) {
    Step s;
    memset(&s, 0, sizeof s);
    s.kind = kind, s.node = node, s.out = out, s.aux = -1, s.grad_out = -1;
    for (int j = 0; j < ACC_MAX_IN; j++) s.in[j] = s.grad_in[j] = -1;
    s.in[0] = in0;
    return s;
}

static void buffer(Schedule *s, int node, int64_t offset, int first, int last, bool host) {
    Buffer b = {BUF_ACT, node, 64, offset, first, last, false, host};
    VEC_PUSH(s->bufs, b);
}

/*   t0 FWD a        -> b0 [0, 64)       a: node 0, 1 s
 *   t1 OFFLOAD a    b0 -> b1 (host)
 *   t2 FWD x        -> b2 [0, 64)       over a's bytes: the copy out is waited for before t2
 *   t3 FWD y  (b2)  -> b3 [64, 128)     2 s
 *   t4 FETCH a      b1 -> b4 [0, 64)    b2's bytes, last used at t3: issued after t3
 *   t5 BWD a  (b4)                      2 x 1 s
 * Node 0's transfer 2 s: 1 s each way. Timeline: t0 0..1; the copy out
 * 1..2, t2 waits for it 1 s; t2 2..3, t3 3..5; the copy back 5..6, t4 waits
 * 1 s; t5 6..8. Copies 2 s, exposed 2 s. */
static void test_schedule(void) {
    Schedule s;
    memset(&s, 0, sizeof s);
    buffer(&s, 0, 0, 0, 1, false);
    buffer(&s, 0, 0, 1, 4, true);
    buffer(&s, 1, 0, 2, 3, false);
    buffer(&s, 2, 64, 3, 3, false);
    buffer(&s, 0, 0, 4, 5, false);
    Step st[6] = {step(ST_FWD, 0, 0, -1), step(ST_OFFLOAD, 0, 1, 0), step(ST_FWD, 1, 2, -1),
                  step(ST_FWD, 2, 3, 2),  step(ST_FETCH, 0, 4, 1),   step(ST_BWD, 0, -1, 4)};
    for (int t = 0; t < 6; t++) VEC_PUSH(s.steps, st[t]);
    const double node_time[3] = {1, 1, 2}, transfer[3] = {2, 0, 0};
    SchedCopies cp;
    sched_copies(&s, transfer, &cp);
    ASSERT(2, cp.v.n);
    ASSERT(2, cp.n_ids);
    ASSERT(1, cp.v.v[0].step);
    ASSERT(1, cp.v.v[0].issue_after);
    ASSERT(2, cp.v.v[0].wait_before);
    ASSERT(4, cp.v.v[1].step);
    ASSERT(3, cp.v.v[1].issue_after);
    ASSERT(4, cp.v.v[1].wait_before);
    EXPECT_TIME(1, cp.v.v[0].time);
    sched_copies_free(&cp);
    double times[6];
    sched_step_times(&s, node_time, times);
    EXPECT_TIME(2, times[5]);
    EXPECT_TIME(0, times[1]);
    CopyTime ct;
    sched_copy_time(&s, node_time, transfer, &ct);
    EXPECT_TIME(2, ct.copy_time);
    EXPECT_TIME(2, ct.exposed_time);
    VEC_FREE(s.steps), VEC_FREE(s.bufs);
}

int main(void) {
    test_model();
    test_schedule();
    TEST_DONE();
}
