/* fake_nccl.c - a stand-in libnccl for test_nccl_comm (loaded through
 * ACC_NCCL_LIB): no GPU and no network, it records the arguments of each
 * call, so that libaccrt_nccl's mapping of acc_comm onto NCCL (the in-place
 * pieces, types, operation, stream) is checked where no GPU exists. Its
 * communicator is rank 1 of 4 on device 0; a collective of 13 elements
 * fails with ncclInvalidArgument and a last-error message.
 */
#include <string.h>

#include <nccl.h>

#include "fake_nccl.h"

FakeNcclLog *fake_nccl_log(void);
static FakeNcclLog log_;
FakeNcclLog *fake_nccl_log(void) { return &log_; }
static const char *last_ = "";

static ncclResult_t record(const char *call, const void *send, void *recv, size_t count, int dtype, int op,
                           void *stream) {
    log_.call = call, log_.send = send, log_.recv = recv, log_.count = count;
    log_.dtype = dtype, log_.op = op, log_.stream = stream;
    if (count != 13) return ncclSuccess;
    last_ = "fake: a count of 13 refused";
    return ncclInvalidArgument;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0x5a, sizeof *id);
    return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    (void)nranks, (void)id, (void)rank;
    log_.inits++;
    *comm = (ncclComm_t)&log_;
    return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    (void)comm;
    log_.destroyed++;
    return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async) {
    (void)comm;
    log_.async_polls++;
    *async = (ncclResult_t)log_.async;
    return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    (void)comm;
    *count = 4;
    return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    (void)comm;
    *rank = 1;
    return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
    (void)comm;
    *device = 0;
    return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t r) {
    return r == ncclInvalidArgument ? "fake invalid argument" : r == ncclRemoteError ? "fake remote error" : "?";
}
const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return last_;
}
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    (void)comm;
    return record("allreduce", send, recv, count, (int)dtype, (int)op, stream);
}
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
    (void)comm;
    return record("reducescatter", send, recv, count, (int)dtype, (int)op, stream);
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t dtype, ncclComm_t comm,
                           cudaStream_t stream) {
    (void)comm;
    return record("allgather", send, recv, count, (int)dtype, -1, stream);
}
