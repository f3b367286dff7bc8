/* test_emu_coll.c - the emulated device's collectives (coll_issue,
 * coll_wait) without a model or MPI: a fake host-memory communicator of two
 * ranks whose other rank contributes known values.
 *
 * - a run of kernels, an all-reduce issued after them and waited for: the
 *   sum, in the run that calls its function, the one recorded and the
 *   replays (the communicator called once per run, with the run's id, kind,
 *   buffer, count and no stream);
 * - adversarial timing: a kernel that writes the bucket between issue and
 *   wait changes what is reduced (the collective reads at its wait);
 * - reduce-scatter and all-gather pass through with their kind and count,
 *   and one whose size * count floats leave the arena is refused;
 * - refusals with a message: a device-memory communicator (ACC_ERR_COMM),
 *   a collective never waited for (ACC_ERR_COMM at the end of the run), a
 *   wait without an issue, an id out of range, an issue twice (ACC_ERR_ARG),
 *   and the communicator's own failure passed on with its detail.
 */
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "test.h"

extern const acc_device acc_device_cuda_emu;

#define N 64        /* floats per bucket */
#define ARENA 16384 /* bytes before the workspace */

/* The fake communicator: rank 0 of 2; the other rank's values are peer(i). */
typedef struct {
    acc_comm head;
    int n_issued, n_waited, last_id, last_kind, fail;
    int64_t last_count;
    float *last_buf;
    void *last_stream;
    char err[64];
} Fake;

static float peer(int64_t i) { return 100.0f + (float)i; }

static int fake_issue(acc_comm *h, int id, int kind, float *buf, int64_t count, void *stream) {
    Fake *f = (Fake *)h;
    f->n_issued++, f->last_id = id, f->last_kind = kind, f->last_buf = buf, f->last_count = count;
    f->last_stream = stream;
    if (f->fail) {
        strcpy(f->err, "the fake network is down");
        return ACC_ERR_COMM;
    }
    if (kind == ACC_COLL_ALLREDUCE)
        for (int64_t i = 0; i < count; i++) buf[i] += peer(i);
    else if (kind == ACC_COLL_REDUCE_SCATTER)
        for (int64_t i = 0; i < count; i++) buf[i] += peer(i); /* rank 0's piece */
    else
        for (int64_t i = 0; i < count; i++) buf[count + i] = peer(count + i); /* rank 1's piece */
    return ACC_OK;
}

static int fake_wait(acc_comm *h, int id) {
    Fake *f = (Fake *)h;
    f->n_waited++;
    return id == f->last_id ? ACC_OK : ACC_ERR_COMM;
}

static const char *fake_error(const acc_comm *h) { return ((const Fake *)h)->err; }

static void fake_init(Fake *f, int device_memory) {
    memset(f, 0, sizeof *f);
    f->head.name = "fake";
    f->head.rank = 0, f->head.size = 2;
    f->head.device_memory = device_memory;
    f->head.issue = fake_issue;
    f->head.wait = fake_wait;
    f->head.error = fake_error;
    f->head.impl = f;
}

static acc_dev *open_dev(unsigned char **arena) {
    acc_model_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.workspace_offset = ARENA;
    desc.workspace_bytes = 1 << 16;
    desc.arena_bytes = desc.workspace_offset + desc.workspace_bytes;
    desc.n_buckets = 2; /* collective ids 0 to 3 */
    acc_dev *d = NULL;
    int64_t extra = 0;
    int rc = acc_device_cuda_emu.open(&desc, &d, arena, &extra);
    EXPECT(rc == ACC_OK, "emulated device did not open: %d", rc);
    return rc ? NULL : d;
}

/* What a run does: mode 0 scale, issue, wait; 1 scale, issue, scale again,
 * wait; 2 issue without a wait; 3 wait without an issue; 4 id 4 (out of
 * range); 5 issue id 0 twice; 6 reduce-scatter and all-gather. */
typedef struct {
    acc_dev *d;
    Fake *comm;
    float *g;
    int mode;
} Step;

static int step_fn(void *arg) {
    Step *s = arg;
    acc_dev *d = s->d;
    acc_comm *c = &s->comm->head;
    const acc_device *dv = &acc_device_cuda_emu;
    switch (s->mode) {
    case 0:
    case 1:
        dev_scale(d, s->g, N, 2.0f);
        dv->coll_issue(d, c, 0, ACC_COLL_ALLREDUCE, s->g, N);
        if (s->mode == 1) dev_scale(d, s->g, N, 3.0f);
        return dv->coll_wait(d, c, 0);
    case 2: return dv->coll_issue(d, c, 1, ACC_COLL_ALLREDUCE, s->g, N);
    case 3: return dv->coll_wait(d, c, 1);
    case 4: return dv->coll_issue(d, c, 4, ACC_COLL_ALLREDUCE, s->g, N);
    case 5:
        dv->coll_issue(d, c, 0, ACC_COLL_ALLREDUCE, s->g, N);
        return dv->coll_issue(d, c, 0, ACC_COLL_ALLREDUCE, s->g, N);
    default:
        dv->coll_issue(d, c, 0, ACC_COLL_REDUCE_SCATTER, s->g, N / 2);
        dv->coll_wait(d, c, 0);
        dv->coll_issue(d, c, 2, ACC_COLL_ALLGATHER, s->g, N / 2);
        return dv->coll_wait(d, c, 2);
    }
}

/* the bucket's values before a run */
static void reset(acc_dev *d, float *g) {
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 7) - 3.0f;
    acc_device_cuda_emu.upload(d, (unsigned char *)g, x, sizeof x);
}

/* The all-reduce, in each of a graph's three kinds of run (direct, recorded,
 * replayed), with and without a write between issue and wait. */
static void test_allreduce(int late_write) {
    unsigned char *arena = NULL;
    acc_dev *d = open_dev(&arena);
    if (!d) return;
    Fake f;
    fake_init(&f, 0);
    Step s = {d, &f, (float *)(void *)(arena + 1024), late_write};
    acc_scalars sc;
    memset(&sc, 0, sizeof sc);
    for (int run = 0; run < 4; run++) {
        reset(d, s.g);
        int rc = acc_device_cuda_emu.run(d, ACC_GRAPH_STEP_REDUCE, step_fn, &s, &sc);
        EXPECT(rc == ACC_OK, "run %d: %d %s", run, rc, dev_error(d));
        float got[N];
        acc_device_cuda_emu.download(d, got, (unsigned char *)s.g, sizeof got);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            float x = (float)(i % 7) - 3.0f;
            float want = late_write ? x * 2.0f * 3.0f + peer(i) : x * 2.0f + peer(i);
            bad += got[i] != want;
        }
        EXPECT(!bad, "late write %d, run %d: %d of %d elements not the sum over the ranks read at the wait", late_write,
               run, bad, N);
        ASSERT(run + 1, f.n_issued);
        ASSERT(run + 1, f.n_waited);
        ASSERT(0, f.last_id);
        ASSERT(ACC_COLL_ALLREDUCE, f.last_kind);
        ASSERT(N, f.last_count);
        ASSERT_TRUE(f.last_buf == s.g);
        ASSERT_TRUE(f.last_stream == NULL);
    }
    acc_device_cuda_emu.close(d);
}

static void test_scatter_gather(void) {
    unsigned char *arena = NULL;
    acc_dev *d = open_dev(&arena);
    if (!d) return;
    Fake f;
    fake_init(&f, 0);
    Step s = {d, &f, (float *)(void *)(arena + 1024), 6};
    acc_scalars sc;
    memset(&sc, 0, sizeof sc);
    for (int run = 0; run < 3; run++) {
        reset(d, s.g);
        ASSERT(ACC_OK, acc_device_cuda_emu.run(d, ACC_GRAPH_OPT, step_fn, &s, &sc));
        ASSERT(2 * (run + 1), f.n_issued);
        ASSERT(2, f.last_id);
        ASSERT(ACC_COLL_ALLGATHER, f.last_kind);
        ASSERT(N / 2, f.last_count);
        float got[N];
        acc_device_cuda_emu.download(d, got, (unsigned char *)s.g, sizeof got);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += got[i] != (i < N / 2 ? (float)(i % 7) - 3.0f + peer(i) : peer(i));
        EXPECT(!bad, "run %d: %d elements wrong after the reduce-scatter and all-gather", run, bad);
    }
    acc_device_cuda_emu.close(d);
    /* size * count floats past the arena's end */
    d = open_dev(&arena);
    if (!d) return;
    s.d = d;
    s.g = (float *)(void *)(arena + ARENA + (1 << 16) - N / 2 * sizeof(float));
    ASSERT(ACC_ERR_DEVICE, acc_device_cuda_emu.run(d, ACC_GRAPH_OPT, step_fn, &s, &sc));
    ASSERT_TRUE(strstr(dev_error(d), "outside the arena") != NULL);
    acc_device_cuda_emu.close(d);
}

/* One run of mode on a fresh device: its status and message. */
static void expect_refusal(int mode, int device_memory, int comm_fails, int status, const char *says) {
    unsigned char *arena = NULL;
    acc_dev *d = open_dev(&arena);
    if (!d) return;
    Fake f;
    fake_init(&f, device_memory);
    f.fail = comm_fails;
    Step s = {d, &f, (float *)(void *)(arena + 1024), mode};
    acc_scalars sc;
    memset(&sc, 0, sizeof sc);
    int rc = acc_device_cuda_emu.run(d, ACC_GRAPH_STEP_REDUCE, step_fn, &s, &sc);
    EXPECT(rc == status, "mode %d: status %d, expected %d (%s)", mode, rc, status, dev_error(d));
    EXPECT(strstr(dev_error(d), says) != NULL, "mode %d: message \"%s\" does not say \"%s\"", mode, dev_error(d), says);
    acc_device_cuda_emu.close(d);
}

int main(void) {
    test_allreduce(0);
    test_allreduce(1);
    test_scatter_gather();
    expect_refusal(0, 1, 0, ACC_ERR_COMM, "host memory");
    expect_refusal(2, 0, 0, ACC_ERR_COMM, "never waited for");
    expect_refusal(3, 0, 0, ACC_ERR_ARG, "not issued");
    expect_refusal(4, 0, 0, ACC_ERR_ARG, "out of range");
    expect_refusal(5, 0, 0, ACC_ERR_ARG, "issued again");
    expect_refusal(0, 0, 1, ACC_ERR_COMM, "the fake network is down");
    TEST_DONE();
}
