// The CPU backend's collectives extension (mnt_collectives.h), over MPI:
// every rank of the job is one process of one MPI world (mpirun, srun), and
// a communicator is a duplicate of MPI_COMM_WORLD. Work is synchronous, as
// every CPU op: a collective has finished when its call returns.
//
// Reductions do not use MPI's own (whose order the MPI standard leaves to
// the implementation): each rank receives every rank's copy of the chunk
// it owns (MPI_Alltoallv), sums them in rank order (collective_math.h) and
// the reduced chunks are gathered to every rank (MPI_Allgatherv), so the
// bits depend on the inputs and the world size only.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVES_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVES_H_

#include "plugins/abi/mnt_collectives.h"

namespace mnt::cpu {

// Static storage; its `next` is NULL (the plugin links it into its chain).
MNT_Collectives_Extension* CpuCollectivesExtension();

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVES_H_
