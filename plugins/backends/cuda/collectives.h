// The cuda backend's collectives extension (mnt_collectives.h), over NCCL,
// which is dlopen()ed at the first call (nccl_api.h): without libnccl.so.2
// the plugin loads and runs every op, and each collectives call fails with
// FAILED_PRECONDITION "cuda collectives: NCCL is not available: ...".
//
//   Collectives_GetUniqueId  ncclGetUniqueId (128 bytes)
//   Communicator_Create      ncclCommInitRank on the backend's device
//   Communicator_Destroy     the backend's stream synchronised, then
//                            ncclCommDestroy; ncclCommAbort instead when
//                            anything before it failed (the backend's
//                            pending step ops, the stream, an asynchronous
//                            NCCL error), and the error returned. Once the
//                            communicator passed the handle checks it is
//                            gone after the call, error or not.
//   Collectives_Run          ncclAllReduce (ncclSum / ncclAvg / ncclMax),
//                            ncclReduceScatter, ncclAllGather, ncclBroadcast,
//                            issued on the backend instance's stream; the
//                            gathers and broadcasts move bytes (ncclInt8)
//
// Numerics: NCCL's own, which differ from the rank-order fp32 sum that
// mnt_collectives.h describes as the default:
//   - Order. NCCL documents no reduction order. Its algorithm (ring, tree,
//     NVLS, CollNet), protocol and channel split are chosen from the world
//     size, the topology, the message size, the NCCL version and NCCL_*
//     environment variables; with all of those fixed, the same inputs give
//     the same bits on every call, and an all-reduce gives every rank the
//     same bits (each element is reduced once and the result sent to every
//     rank). Change any of them (another node layout, another NCCL) and the
//     bits of a sum may change; they are not those of ((x0 + x1) + x2)...
//   - Accumulation. NCCL adds in the storage type: F16 and BF16 partial
//     sums are rounded to 16 bits at every step (__hadd in its ring and
//     tree kernels), not accumulated in fp32 and rounded once.
//   - AVG is ncclAvg (NCCL >= 2.10), which for floating types multiplies
//     each rank's input by 1/world_size rounded to the storage type and
//     then sums (NCCL's PreMulSum), instead of dividing the sum once; for a
//     power-of-two world size the two agree bit for bit.
//   - MAX is exact.
//   - World size 1: every op is a copy (bit exact).
//
// Ordering: a collective is issued on the backend's stream after every op
// issued before it (an open step's deferred ops are issued first, so a step
// holding a collective runs eagerly from there on, never as a CUDA graph).
//
// Every call is one NCCL collective of one communicator whose rank drives
// one device, so no ncclGroupStart/ncclGroupEnd is needed. Every CUDA and
// NCCL status is checked; a failure is one line naming the call, the NCCL
// status and NCCL's last error (nccl_api.h).
//
// NCCL's rules apply: every rank makes the same calls in the same order;
// ranks in one process call from different threads (NCCL blocks in
// ncclCommInitRank until every rank has joined, and a collective of one
// rank waits on the stream for the others); Communicator_Destroy
// finalises the communicator, which NCCL completes with the other ranks,
// so every rank destroys its communicator, each from its own thread.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_COLLECTIVES_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_COLLECTIVES_H_

#include "plugins/abi/mnt_collectives.h"

namespace mnt::cuda {

// Static storage; its `next` is NULL (the plugin links it into its chain
// after the capabilities extension).
MNT_Collectives_Extension* CudaCollectivesExtension();

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_COLLECTIVES_H_
