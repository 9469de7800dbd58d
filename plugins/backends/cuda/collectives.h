// The cuda backend's collectives extension (mnt_collectives.h), over NCCL,
// which is dlopen()ed at the first call (nccl_api.h): without libnccl.so.2
// the plugin loads and runs every op, and each collectives call fails with
// FAILED_PRECONDITION "cuda collectives: NCCL is not available: ...".
//
//   Collectives_GetUniqueId  ncclGetUniqueId (128 bytes)
//   Communicator_Create      ncclCommInitRank on the backend's device, and
//                            the communicator's own NCCL stream
//                            (non-blocking) on that device
//   Communicator_Destroy     the NCCL stream and the backend's stream
//                            synchronised, then ncclCommDestroy;
//                            ncclCommAbort instead when anything before it
//                            failed (the backend's pending step ops, a
//                            stream, an asynchronous NCCL error), and the
//                            error returned. Then the NCCL stream is
//                            destroyed, and the works of started
//                            collectives never waited for are freed. Once
//                            the communicator passed the handle checks it
//                            is gone after the call, error or not.
//   Collectives_Run          ncclAllReduce (ncclSum / ncclAvg / ncclMax),
//                            ncclReduceScatter, ncclAllGather, ncclBroadcast
//                            on the NCCL stream, which waits for the
//                            backend's stream first; the backend's stream
//                            then waits for the collective (events), so
//                            for the backend's ops Run is as if issued on
//                            their stream. The gathers and broadcasts move
//                            bytes (ncclInt8)
//   Collectives_Start        the same checks and NCCL call as Run, on the
//   (version 2)              NCCL stream after the backend's, with an event
//                            recorded after it (the work); the backend's
//                            stream does not wait, and the host is not
//                            blocked (NCCL enqueues). A count of 0 issues
//                            nothing and still gives a work.
//   Collectives_Wait         the backend's stream waits for the work's
//   (version 2)              event (the host does not block); then
//                            ncclCommGetAsyncError. The work is freed (its
//                            event kept for a later Start), whatever the
//                            result, when it is a live work of this
//                            communicator; a NULL work, one already waited
//                            for, or another communicator's is an
//                            INVALID_ARGUMENT line and left alone.
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
// Ordering: every collective of a communicator, run or started, is issued
// on the communicator's NCCL stream, so they execute in the order they were
// issued, as NCCL requires (one order per communicator, the same on every
// rank). Before each, the NCCL stream waits for an event recorded on the
// backend's stream, so the collective reads what every op issued before it
// wrote (an open step's deferred ops are issued first, so a step holding a
// collective, or a Wait, runs eagerly from there on, never as a CUDA
// graph). A Run's collective is then waited for by the backend's stream at
// once. A started collective is not: it runs on the NCCL stream
// concurrently with the compute kernels issued after it on the backend's
// stream, until Collectives_Wait makes the backend's stream wait for it;
// the ops after the Wait see its result. What the caller promises
// (mnt_collectives.h) makes that overlap safe: until the Wait no op writes
// the input or touches the output. Works may be waited for in any order;
// each Wait only orders the backend's stream after its own collective (and,
// through the NCCL stream's order, after the collectives issued before it).
// Backend_Synchronize waits for the backend's stream only: a started
// collective not yet waited for may still run after it.
//
// Two communicators of one backend have two NCCL streams, so their started
// collectives may run at the same time. NCCL warns that concurrent
// collectives of different communicators can deadlock when their kernels
// do not all fit on the device at once; a caller that needs several
// communicators should join one's work before starting another's. (Runs
// never overlap: each makes the backend's stream wait before the next
// collective's event is recorded.)
//
// Every call is one NCCL collective of one communicator whose rank drives
// one device, so no ncclGroupStart/ncclGroupEnd is needed. Every CUDA and
// NCCL status is checked; a failure is one line naming the call, the NCCL
// status and NCCL's last error (nccl_api.h).
//
// NCCL's rules apply: every rank makes the same calls in the same order;
// ranks in one process call from different threads (NCCL blocks in
// ncclCommInitRank until every rank has joined, and a collective of one
// rank waits on the stream for the others; the first collective of a kind
// may also connect to its peers from the host, NCCL's lazy connection
// setup, and block there until they call too); a communicator is driven by
// one thread at a time (its spare events have no lock); Communicator_Destroy
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
