/* accrt_mpi.h - libaccrt_mpi: an acc_comm over an MPI communicator, for
 * data-parallel training on the cpu target (and the emulator, whose arena
 * is host memory). Collectives are MPI's nonblocking ones (MPI_Iallreduce,
 * MPI_Ireduce_scatter_block, MPI_Iallgather) on a duplicate of the
 * communicator, with errors returned rather than fatal. Link with
 * -laccrt_mpi and the MPI library (mpicc). */
#ifndef ACC_ACCRT_MPI_H
#define ACC_ACCRT_MPI_H

#include <mpi.h>

#include "accrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *out: a communicator over comm's ranks (comm is duplicated: the trainer
 * keeps and frees its own). MPI must be initialized (ACC_ERR_STATE). Its
 * waits are bounded by timeout_s (acc_comm_timeout(): ACC_COMM_TIMEOUT, an
 * invalid value ACC_ERR_ARG): past it a call returns ACC_ERR_COMM and the
 * communicator is given up. Destroy with acc_comm_destroy before
 * MPI_Finalize. */
int acc_comm_mpi(MPI_Comm comm, acc_comm **out);

#ifdef __cplusplus
}
#endif
#endif
