#include "plugins/backends/cuda/collectives_plan.h"

#include <cstdint>

namespace mnt::cuda {

using sdk::Format;
using sdk::Status;

Status CheckCommunicatorArgs(int32_t rank, int32_t world_size, const char* unique_id,
                             size_t unique_id_size) {
  MNT_RETURN_IF_ERROR(
      backend::CheckCommunicatorArgs(rank, world_size, unique_id, unique_id_size));
  if (unique_id_size != kNcclUniqueIdBytes) {
    return sdk::InvalidArgument(Format(
        "Communicator_Create: unique_id_size is %zu, but the cuda backend's unique ids "
        "(Collectives_GetUniqueId: an NCCL id) have %zu bytes",
        unique_id_size, kNcclUniqueIdBytes));
  }
  return Status::Ok();
}

Status PlanCollective(const MNT_Collectives_Run_Args& args, int32_t rank, int32_t world_size,
                      CollectivePlan* plan, const char* call) {
  *plan = CollectivePlan();
  backend::CollectiveCall c;
  MNT_RETURN_IF_ERROR(backend::CheckCollectiveCall(call, args, rank, world_size, &c));
  plan->op = c.op;
  plan->reduce = c.reduce;
  plan->type = !c.reduction()                ? WireType::kBytes
               : c.dtype == MNT_DTYPE_F32    ? WireType::kF32
               : c.dtype == MNT_DTYPE_F16    ? WireType::kF16
                                             : WireType::kBF16;
  plan->root = c.root;
  plan->recv = c.output.data;
  plan->output = c.output.data;
  plan->output_bytes = c.output.bytes;
  if (c.input.data != nullptr) {
    plan->send = c.input.data;
    plan->input = c.input.data;
    plan->input_bytes = c.input.bytes;
  } else {
    plan->send = c.output.data;  // BROADCAST off the root: NCCL reads sendbuff on the root only
  }
  switch (c.op) {
    case MNT_COLLECTIVE_ALL_REDUCE:
    case MNT_COLLECTIVE_REDUCE_SCATTER:
      plan->count = static_cast<size_t>(c.output.elements);
      break;
    case MNT_COLLECTIVE_ALL_GATHER:
      plan->count = c.input.bytes;
      break;
    default:
      plan->count = c.output.bytes;
      break;
  }
  return Status::Ok();
}

MNT_Collectives_Run_Args RunArgsOf(const MNT_Collectives_Start_Args& start) {
  MNT_Collectives_Run_Args run{};
  run.struct_size = MNT_Collectives_Run_Args_STRUCT_SIZE;
  run.extension_start = start.extension_start;
  run.backend = start.backend;
  run.communicator = start.communicator;
  run.op = start.op;
  run.reduce = start.reduce;
  run.root = start.root;
  run.input = start.input;
  run.output = start.output;
  return run;
}

}  // namespace mnt::cuda
