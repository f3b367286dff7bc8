/* fake_nccl.h - what the stand-in libnccl (fake_nccl.c) records, shared
 * with test_nccl_comm, which reads it through fake_nccl_log(). */
#ifndef ACC_FAKE_NCCL_H
#define ACC_FAKE_NCCL_H

#include <stddef.h>

typedef struct {
    const char *call; /* the last collective: "allreduce", "reducescatter", "allgather" */
    const void *send;
    void *recv;
    size_t count;
    int dtype, op;
    void *stream;
    int destroyed, inits;
    int async, async_polls; /* what ncclCommGetAsyncError reports; its calls */
} FakeNcclLog;

#endif
