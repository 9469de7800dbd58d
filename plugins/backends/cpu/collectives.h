// The CPU backend's collectives extension (mnt_collectives.h), over MPI:
// every rank of the job is one process of one MPI world (mpirun, srun), and
// a communicator is a duplicate of MPI_COMM_WORLD.
//
// Started collectives (version 2): each communicator has a thread
// (collective_worker.h) that runs its collectives, started or run, one
// after another in issue order. Collectives_Start queues one and returns at
// once, so the host thread goes on computing (backward) while the worker
// exchanges and waits for slower ranks; Collectives_Wait blocks until it has
// finished. Collectives_Run queues behind the started ones and waits, so it
// stays synchronous, as every CPU op. The worker polls MPI's non-blocking
// calls with short sleeps instead of spinning in them. This needs MPI to
// allow calls from two threads at once (MPI_THREAD_MULTIPLE, which
// Mantissa's hosts ask for: the host thread's own MPI exchanges may overlap
// a started collective); with a lower level the host thread runs every
// collective itself and Start returns a finished work.
//
// Every call's arguments are checked by the contract all backends share
// (backends/common/collective_call.h: the same refusals, in the same
// words, as the cuda backend's); the cpu backend adds MPI's limit (a rank's
// counts and displacements are ints, so at most 2 GiB) and its own unique
// ids (ones its Collectives_GetUniqueId made).
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
