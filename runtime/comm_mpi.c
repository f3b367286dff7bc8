/* comm_mpi.c - acc_comm over MPI (accrt_mpi.h).
 *
 * Each collective id holds one request. Reductions sum floats in place:
 * an all-reduce is MPI_Iallreduce with MPI_IN_PLACE; a reduce-scatter is
 * MPI_Ireduce_scatter_block with MPI_IN_PLACE, which leaves this rank's
 * piece at the start of the buffer, so wait moves it to its own place
 * (acc_comm's contract: piece r at r * count); an all-gather is
 * MPI_Iallgather with MPI_IN_PLACE. Starting a collective also tests the
 * ones in flight, which lets MPI advance them between the backward's
 * buckets (Open MPI progresses nonblocking collectives only inside calls).
 *
 * Every wait, the host reductions' too, is bounded by the communicator's
 * timeout_s: it tests its request until it completes or the time is up.
 * Past it the communicator is given up (MPI cannot cancel a collective):
 * the call and every later one return ACC_ERR_COMM saying so, and destroy
 * leaves the requests in flight alone. A rank that died under mpirun ends
 * the job (MPI's own doing); one that hangs or runs another step no longer
 * hangs the others.
 */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accrt_mpi.h"

typedef struct {
    MPI_Request req;
    float *buf;    /* a reduce-scatter's buffer: its piece moves on wait */
    int64_t count; /* (0: nothing to move) */
} Pending;

typedef struct {
    acc_comm base;
    MPI_Comm comm;
    Pending *pend;
    int n_pend;
    int given_up; /* a wait timed out: nothing more goes through */
    char err[MPI_MAX_ERROR_STRING + 128];
} MpiComm;

static int status(MpiComm *x, int rc, const char *what) {
    if (rc == MPI_SUCCESS) return ACC_OK;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", rc);
    snprintf(x->err, sizeof x->err, "%s: %s", what, text);
    return ACC_ERR_COMM;
}

static int fail(MpiComm *x, const char *msg) {
    snprintf(x->err, sizeof x->err, "%s", msg);
    return ACC_ERR_COMM;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Test *req until it completes, or until timeout_s has passed: then the
 * communicator is given up. After the first millisecond each test yields
 * the core (ranks may share cores). */
static int wait_bounded(MpiComm *x, MPI_Request *req, const char *what) {
    double start = now(), limit = x->base.timeout_s, waited = 0;
    for (long tests = 0;; tests++) {
        int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return status(x, rc, what);
        if (done) return ACC_OK;
        if (tests % 64 == 63) {
            waited = now() - start;
            if (limit > 0 && waited > limit) {
                x->given_up = 1;
                snprintf(x->err, sizeof x->err,
                         "%s did not complete within %g s (the communicator's timeout_s, ACC_COMM_TIMEOUT): a rank "
                         "stopped, hangs or runs another step; this communicator is given up",
                         what, limit);
                return ACC_ERR_COMM;
            }
        }
        if (waited > 1e-3) sched_yield();
    }
}

static int given_up(MpiComm *x) {
    if (!x->given_up) return ACC_OK;
    if (!strstr(x->err, "given up")) snprintf(x->err, sizeof x->err, "this communicator was given up after a timeout");
    return ACC_ERR_COMM;
}

static int mpi_issue(acc_comm *c, int id, int kind, float *buf, int64_t count, void *stream) {
    MpiComm *x = (MpiComm *)c;
    (void)stream;
    if (given_up(x)) return ACC_ERR_COMM;
    if (id < 0) return fail(x, "a negative collective id");
    if (count < 0 || count > INT_MAX) return fail(x, "a collective of more than INT_MAX floats");
    if (id >= x->n_pend) {
        int n = id + 1 > 2 * x->n_pend ? id + 1 : 2 * x->n_pend;
        Pending *p = realloc(x->pend, (size_t)n * sizeof *p);
        if (!p) return fail(x, "out of memory for the requests");
        for (int i = x->n_pend; i < n; i++) p[i] = (Pending){MPI_REQUEST_NULL, NULL, 0};
        x->pend = p;
        x->n_pend = n;
    }
    Pending *p = &x->pend[id];
    if (p->req != MPI_REQUEST_NULL) return fail(x, "a collective id issued twice before its wait");
    int n = (int)count, rc;
    p->buf = NULL, p->count = 0;
    switch (kind) {
    case ACC_COLL_ALLREDUCE: rc = MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, x->comm, &p->req); break;
    case ACC_COLL_REDUCE_SCATTER:
        rc = MPI_Ireduce_scatter_block(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, x->comm, &p->req);
        p->buf = buf, p->count = count;
        break;
    case ACC_COLL_ALLGATHER:
        rc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, n, MPI_FLOAT, x->comm, &p->req);
        break;
    default: return fail(x, "an unknown collective");
    }
    if (rc != MPI_SUCCESS) return status(x, rc, "starting a collective");
    /* progress for the ones in flight (a completed request becomes
     * MPI_REQUEST_NULL; a reduce-scatter's piece still moves on its wait) */
    for (int i = 0; i < x->n_pend; i++) {
        int done = 0;
        if (i != id && x->pend[i].req != MPI_REQUEST_NULL &&
            (rc = MPI_Test(&x->pend[i].req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            return status(x, rc, "testing a collective");
    }
    return ACC_OK;
}

static int mpi_wait(acc_comm *c, int id) {
    MpiComm *x = (MpiComm *)c;
    if (id < 0 || id >= x->n_pend) return ACC_OK; /* never issued */
    Pending *p = &x->pend[id];
    if (given_up(x)) return ACC_ERR_COMM;
    char what[64];
    snprintf(what, sizeof what, "collective %d", id);
    int rc = p->req != MPI_REQUEST_NULL ? wait_bounded(x, &p->req, what) : ACC_OK;
    if (rc != ACC_OK) return rc;
    if (p->count && x->base.rank) /* this rank's piece from the start to its place */
        memmove(p->buf + (int64_t)x->base.rank * p->count, p->buf, (size_t)p->count * sizeof(float));
    p->buf = NULL, p->count = 0;
    return ACC_OK;
}

static int mpi_allreduce_host(acc_comm *c, double *v, int n, int op) {
    MpiComm *x = (MpiComm *)c;
    MPI_Op o = op == ACC_RED_MAX ? MPI_MAX : op == ACC_RED_MIN ? MPI_MIN : MPI_SUM;
    if (op < ACC_RED_SUM || op > ACC_RED_MIN) return fail(x, "an unknown reduction");
    if (given_up(x)) return ACC_ERR_COMM;
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, o, x->comm, &req);
    return rc != MPI_SUCCESS ? status(x, rc, "a host reduction") : wait_bounded(x, &req, "a host reduction");
}

static const char *mpi_error(const acc_comm *c) { return ((const MpiComm *)c)->err; }

static void mpi_destroy(acc_comm *c) {
    MpiComm *x = (MpiComm *)c;
    int finalized = 0;
    MPI_Finalized(&finalized);
    for (int i = 0; !finalized && !x->given_up && i < x->n_pend; i++)
        if (x->pend[i].req != MPI_REQUEST_NULL && wait_bounded(x, &x->pend[i].req, "a collective in flight")) break;
    if (!finalized && !x->given_up) MPI_Comm_free(&x->comm);
    free(x->pend);
    free(x);
}

int acc_comm_mpi(MPI_Comm comm, acc_comm **out) {
    if (!out) return ACC_ERR_NULL;
    *out = NULL;
    int init = 0, finalized = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&finalized);
    if (!init || finalized) return ACC_ERR_STATE;
    double timeout = acc_comm_timeout();
    if (timeout < 0) return ACC_ERR_ARG; /* ACC_COMM_TIMEOUT is not a number of seconds */
    MpiComm *x = calloc(1, sizeof *x);
    if (!x) return ACC_ERR_NOMEM;
    x->base.timeout_s = timeout;
    if (MPI_Comm_dup(comm, &x->comm) != MPI_SUCCESS) {
        free(x);
        return ACC_ERR_COMM;
    }
    MPI_Comm_set_errhandler(x->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(x->comm, &x->base.rank);
    MPI_Comm_size(x->comm, &x->base.size);
    x->base.name = "mpi";
    x->base.device_memory = 0;
    x->base.issue = mpi_issue;
    x->base.wait = mpi_wait;
    x->base.allreduce_host = mpi_allreduce_host;
    x->base.error = mpi_error;
    x->base.destroy = mpi_destroy;
    *out = &x->base;
    return ACC_OK;
}
