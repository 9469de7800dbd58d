// The collectives extension's contract (plugins/abi/mnt_collectives.h),
// checked once for every backend, as op_call.h does for Backend_Run: the
// arguments of Communicator_Create, and each Collectives_Run or
// Collectives_Start call turned into a checked CollectiveCall or one
// INVALID_ARGUMENT line naming the op and the operand, so that errors read
// alike whichever backend runs, e.g.
//   "REDUCE_SCATTER: input is bf16[23] with 23 elements, expected world
//    size 4 x output's 6".
// Left to each backend: its handles (a live communicator of its own, made
// with this backend instance; a work it started and has not freed), the
// unique id being one its own Collectives_GetUniqueId made, where the
// memory lies (the cuda backend's: allocated by that backend instance), and
// its transport's limits (the cpu backend's MPI int counts, NCCL's version
// for AVG).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_COLLECTIVE_CALL_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_COLLECTIVE_CALL_H_

#include <cstddef>
#include <cstdint>

#include "plugins/abi/mnt_collectives.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// "<call>: communicator is NULL" for Collectives_Run, Collectives_Start
// and Collectives_Wait (Communicator_Destroy accepts NULL).
sdk::Status CheckCommunicatorGiven(const char* call, const MNT_Communicator* communicator);
// "Collectives_Wait: work is NULL".
sdk::Status CheckWorkGiven(const MNT_CollectiveWork* work);

// Communicator_Create's rank, world size and unique id as the header has
// them: world_size at least 1, rank in [0, world_size), the id given, with
// 1 to MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES bytes.
sdk::Status CheckCommunicatorArgs(int32_t rank, int32_t world_size, const char* unique_id,
                                  size_t unique_id_size);

// A checked tensor operand of a collective.
struct CollectiveOperand {
  void* data = nullptr;  // NULL when the collective does not read it
  int64_t elements = 0;
  size_t bytes = 0;
};

// One Collectives_Run or Collectives_Start call that passed every check.
struct CollectiveCall {
  MNT_CollectiveOp op = MNT_COLLECTIVE_INVALID;
  const char* name = "";                        // "ALL_REDUCE", for messages
  MNT_ReduceOp reduce = MNT_REDUCE_OP_INVALID;  // reductions only
  int32_t root = 0;                             // BROADCAST only
  MNT_DType dtype = MNT_DTYPE_INVALID;          // of both tensors
  size_t element_bytes = 0;
  // What the collective reads: data NULL on BROADCAST's non-root ranks
  // (their input, given or not, is not read there).
  CollectiveOperand input;
  CollectiveOperand output;

  bool reduction() const {
    return op == MNT_COLLECTIVE_ALL_REDUCE || op == MNT_COLLECTIVE_REDUCE_SCATTER;
  }
};

// The call's op, reduce, root and tensors for rank `rank` of a communicator
// of `world_size` ranks (both already valid). `call` ("Collectives_Run",
// "Collectives_Start") names the entry point in the one message that has no
// op to name (an unknown op).
// Checks, in this order, each failing with one INVALID_ARGUMENT line that
// names the op: the op and (reductions) the reduce op are known; output is
// given, with its struct_size, rank (0 to MNT_MAX_RANK), a known dtype and
// dims (none negative, the element and byte counts fit in 64 bits), and
// data; BROADCAST's root in [0, world_size); input is given with data,
// except on BROADCAST's non-root ranks (there it may be NULL or have NULL
// data, and is not read); a given input's tensor as the output's; one dtype
// for both, F32/F16/BF16 for reductions; the element counts the op needs
// (n = output's for REDUCE_SCATTER and BROADCAST, input's otherwise; a
// BROADCAST input, read or not, matches the output); no overlap between
// input and output except the aliasing mnt_collectives.h allows
// (ALL_REDUCE in place, ALL_GATHER's input as this rank's own chunk of the
// output, BROADCAST in place on the root).
sdk::Status CheckCollectiveCall(const char* call, const MNT_Collectives_Run_Args& args,
                                int32_t rank, int32_t world_size, CollectiveCall* out);
// Collectives_Start's operands, checked as Run's (the same fields; `work`
// is not among them).
sdk::Status CheckCollectiveCall(const char* call, const MNT_Collectives_Start_Args& args,
                                int32_t rank, int32_t world_size, CollectiveCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_COLLECTIVE_CALL_H_
