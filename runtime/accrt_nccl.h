/* accrt_nccl.h - the NCCL communicator for the cuda target's data-parallel
 * step (libaccrt_nccl): one process per GPU, the gradients' collectives on a
 * stream of their own beside the step.
 *
 * libaccrt_nccl loads libnccl.so.2 and the driver with dlopen when a
 * communicator is made (ACC_NCCL_LIB names another libnccl), so a trainer
 * linked with it starts anywhere and a machine without NCCL, driver or GPU
 * gets a status code and a sentence, not a loader failure. It needs
 * neither nccl.h nor cuda.h.
 *
 * Launching (docs/data-parallel-gpus.md): rank 0 calls
 * acc_comm_nccl_unique_id, the trainer sends the ACC_NCCL_ID_BYTES bytes to
 * every rank with its launcher (MPI_Bcast, a file, a TCP store), every rank
 * calls acc_comm_nccl_create with the same id, then acc_set_comm. A trainer
 * that already has an NCCL communicator wraps it instead.
 */
#ifndef ACC_ACCRT_NCCL_H
#define ACC_ACCRT_NCCL_H

#include <stddef.h>

#include "accrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The size of NCCL's unique id (ncclUniqueId, NCCL_UNIQUE_ID_BYTES). */
#define ACC_NCCL_ID_BYTES 128

/* Make the group's unique id (on one rank, usually 0) into id[0..size).
 * ACC_ERR_NULL, ACC_ERR_SIZE (size < ACC_NCCL_ID_BYTES), ACC_ERR_NO_DEVICE
 * (libnccl cannot be loaded) or ACC_ERR_COMM (NCCL failed). */
int acc_comm_nccl_unique_id(void *id, size_t size);

/* This process's rank (0 <= rank < size) of a group of size ranks made from
 * the id of rank 0, on GPU cuda_device (the driver's ordinal: LOCAL_RANK
 * when every process sees every GPU of its machine, 0 when
 * CUDA_VISIBLE_DEVICES gives each one its own). Every rank must call it:
 * it returns when all have (ncclCommInitRank). It makes the device's
 * primary context current on the calling thread, so the model created after
 * it on this thread runs on the same GPU. On failure *out is still set when
 * the communicator could be allocated, so that (*out)->error says why;
 * destroy it. Destroy the communicator after the model. */
int acc_comm_nccl_create(int rank, int size, const void *id, int cuda_device, acc_comm **out);

/* A communicator over the trainer's ncclComm_t (its rank, size and device
 * are NCCL's); acc_comm_destroy frees the wrapper, never the NCCL
 * communicator. The same ownership of *out on failure. */
struct ncclComm;
int acc_comm_nccl_wrap(struct ncclComm *nccl, acc_comm **out);

#ifdef __cplusplus
}
#endif
#endif
