#include "plugins/backends/cuda/collectives_plan.h"

#include <cstdint>
#include <string>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Format;
using sdk::Status;

const char* CollectiveOpName(int32_t op) {
  switch (op) {
    case MNT_COLLECTIVE_ALL_REDUCE: return "ALL_REDUCE";
    case MNT_COLLECTIVE_REDUCE_SCATTER: return "REDUCE_SCATTER";
    case MNT_COLLECTIVE_ALL_GATHER: return "ALL_GATHER";
    case MNT_COLLECTIVE_BROADCAST: return "BROADCAST";
    default: return "unknown collective op";
  }
}

const char* ReduceOpName(int32_t reduce) {
  switch (reduce) {
    case MNT_REDUCE_OP_SUM: return "SUM";
    case MNT_REDUCE_OP_AVG: return "AVG";
    case MNT_REDUCE_OP_MAX: return "MAX";
    default: return "unknown reduce op";
  }
}

Status CheckCommunicatorArgs(int32_t rank, int32_t world_size, const char* unique_id,
                             size_t unique_id_size) {
  if (world_size < 1) {
    return sdk::InvalidArgument(
        Format("Communicator_Create: world_size is %d (at least 1)", world_size));
  }
  if (rank < 0 || rank >= world_size) {
    return sdk::InvalidArgument(Format(
        "Communicator_Create: rank %d is outside [0, %d) (the world size)", rank, world_size));
  }
  if (unique_id == nullptr) {
    return sdk::InvalidArgument("Communicator_Create: unique_id is NULL");
  }
  if (unique_id_size != kNcclUniqueIdBytes) {
    return sdk::InvalidArgument(Format(
        "Communicator_Create: unique_id_size is %zu, but the cuda backend's unique ids "
        "(Collectives_GetUniqueId: an NCCL id) have %zu bytes",
        unique_id_size, kNcclUniqueIdBytes));
  }
  return Status::Ok();
}

namespace {

// A checked tensor operand: its element and byte counts.
struct Extent {
  int64_t numel = 0;
  size_t bytes = 0;
};

Status CheckTensor(const char* op, const char* which, const MNT_Tensor& t, Extent* out) {
  if (t.struct_size < MNT_Tensor_STRUCT_SIZE) {
    return sdk::InvalidArgument(Format("%s: %s struct_size %zu is smaller than the %zu bytes "
                                       "of MNT_Tensor",
                                       op, which, t.struct_size,
                                       size_t{MNT_Tensor_STRUCT_SIZE}));
  }
  if (t.rank < 0 || t.rank > MNT_MAX_RANK) {
    return sdk::InvalidArgument(
        Format("%s: %s has rank %d (0 to %d)", op, which, t.rank, MNT_MAX_RANK));
  }
  const int32_t dtype = sdk::RawEnum(t.dtype);
  const size_t esize = sdk::DTypeSize(static_cast<MNT_DType>(dtype));  // 0: unknown
  if (esize == 0) {
    return sdk::InvalidArgument(Format("%s: %s has unknown dtype %d", op, which, dtype));
  }
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) {
    if (t.dims[i] < 0) {
      return sdk::InvalidArgument(Format("%s: %s dims[%d] is %lld", op, which, i,
                                         static_cast<long long>(t.dims[i])));
    }
    if (__builtin_mul_overflow(n, t.dims[i], &n)) {
      return sdk::InvalidArgument(
          Format("%s: %s %s has more elements than fit in 64 bits", op, which,
                 sdk::Describe(t).c_str()));
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(esize), &bytes)) {
    return sdk::InvalidArgument(Format("%s: %s %s has more bytes than fit in 64 bits", op,
                                       which, sdk::Describe(t).c_str()));
  }
  out->numel = n;
  out->bytes = static_cast<size_t>(bytes);
  return Status::Ok();
}

bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

Status PlanCollective(const MNT_Collectives_Run_Args& args, int32_t rank, int32_t world_size,
                      CollectivePlan* plan, const char* call) {
  *plan = CollectivePlan();
  const int32_t op = sdk::RawEnum(args.op);
  const char* name = CollectiveOpName(op);
  if (op != MNT_COLLECTIVE_ALL_REDUCE && op != MNT_COLLECTIVE_REDUCE_SCATTER &&
      op != MNT_COLLECTIVE_ALL_GATHER && op != MNT_COLLECTIVE_BROADCAST) {
    return sdk::InvalidArgument(Format(
        "%s: unknown collective op %d (ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER "
        "or BROADCAST)",
        call, op));
  }
  const bool reduction = op == MNT_COLLECTIVE_ALL_REDUCE || op == MNT_COLLECTIVE_REDUCE_SCATTER;
  const int32_t reduce = sdk::RawEnum(args.reduce);
  if (reduction && reduce != MNT_REDUCE_OP_SUM && reduce != MNT_REDUCE_OP_AVG &&
      reduce != MNT_REDUCE_OP_MAX) {
    return sdk::InvalidArgument(
        Format("%s: unknown reduce op %d (SUM, AVG or MAX)", name, reduce));
  }

  // The output.
  if (args.output == nullptr) return sdk::InvalidArgument(Format("%s: output is NULL", name));
  const MNT_Tensor& out = *args.output;
  Extent out_e;
  MNT_RETURN_IF_ERROR(CheckTensor(name, "output", out, &out_e));
  if (out.data == nullptr) return sdk::InvalidArgument(Format("%s: output has NULL data", name));

  // BROADCAST's root; the input, which only BROADCAST's non-root ranks may
  // leave out (it is not read there).
  const bool broadcast = op == MNT_COLLECTIVE_BROADCAST;
  if (broadcast && (args.root < 0 || args.root >= world_size)) {
    return sdk::InvalidArgument(Format("%s: root %d is outside [0, %d) (the world size)", name,
                                       args.root, world_size));
  }
  const bool reads_input = !broadcast || args.root == rank;
  const bool has_input = args.input != nullptr && args.input->data != nullptr;
  if (reads_input && !has_input) {
    return sdk::InvalidArgument(
        Format("%s: input %s", name, args.input == nullptr ? "is NULL" : "has NULL data"));
  }
  Extent in_e;
  if (has_input) {
    MNT_RETURN_IF_ERROR(CheckTensor(name, "input", *args.input, &in_e));
    if (sdk::RawEnum(args.input->dtype) != sdk::RawEnum(out.dtype)) {
      return sdk::InvalidArgument(Format("%s: input is %s but output is %s (one dtype for both)",
                                         name, sdk::Describe(*args.input).c_str(),
                                         sdk::Describe(out).c_str()));
    }
  }
  const int32_t dtype = sdk::RawEnum(out.dtype);
  if (reduction && dtype != MNT_DTYPE_F32 && dtype != MNT_DTYPE_F16 && dtype != MNT_DTYPE_BF16) {
    return sdk::InvalidArgument(Format("%s: output is %s; reductions take F32, F16 or BF16",
                                       name, sdk::Describe(out).c_str()));
  }

  // Element counts.
  const MNT_Tensor* in = has_input ? args.input : nullptr;
  const auto counts_differ = [&](const char* what) {
    return sdk::InvalidArgument(Format("%s: input is %s and output %s (%s)", name,
                                       sdk::Describe(*in).c_str(), sdk::Describe(out).c_str(),
                                       what));
  };
  int64_t expected = 0;
  switch (op) {
    case MNT_COLLECTIVE_ALL_REDUCE:
      if (in_e.numel != out_e.numel) return counts_differ("one element count for both");
      break;
    case MNT_COLLECTIVE_REDUCE_SCATTER:
      if (__builtin_mul_overflow(out_e.numel, static_cast<int64_t>(world_size), &expected) ||
          in_e.numel != expected) {
        return sdk::InvalidArgument(Format(
            "%s: input is %s with %lld elements, expected world size %d x output's %lld",
            name, sdk::Describe(*in).c_str(), static_cast<long long>(in_e.numel), world_size,
            static_cast<long long>(out_e.numel)));
      }
      break;
    case MNT_COLLECTIVE_ALL_GATHER:
      if (__builtin_mul_overflow(in_e.numel, static_cast<int64_t>(world_size), &expected) ||
          out_e.numel != expected) {
        return sdk::InvalidArgument(Format(
            "%s: output is %s with %lld elements, expected world size %d x input's %lld",
            name, sdk::Describe(out).c_str(), static_cast<long long>(out_e.numel), world_size,
            static_cast<long long>(in_e.numel)));
      }
      break;
    default:  // BROADCAST: a given input, read or not, matches the output
      if (in != nullptr && in_e.numel != out_e.numel) {
        return counts_differ("one element count for both");
      }
      break;
  }

  // Aliasing: only what mnt_collectives.h allows.
  if (reads_input) {
    const void* ip = in->data;
    const void* op_data = out.data;
    switch (op) {
      case MNT_COLLECTIVE_ALL_REDUCE:
      case MNT_COLLECTIVE_BROADCAST:
        if (ip != op_data && Overlap(ip, in_e.bytes, op_data, out_e.bytes)) {
          return sdk::InvalidArgument(Format(
              "%s: input and output overlap without being the same memory (in place is "
              "input data == output data)",
              name));
        }
        break;
      case MNT_COLLECTIVE_REDUCE_SCATTER:
        if (Overlap(ip, in_e.bytes, op_data, out_e.bytes)) {
          return sdk::InvalidArgument(
              Format("%s: output overlaps input (REDUCE_SCATTER does not run in place)", name));
        }
        break;
      default: {  // ALL_GATHER: the input may be this rank's own chunk of the output
        const char* own = static_cast<const char*>(op_data) + static_cast<size_t>(rank) * in_e.bytes;
        if (ip != own && Overlap(ip, in_e.bytes, op_data, out_e.bytes)) {
          return sdk::InvalidArgument(Format(
              "%s: input overlaps output other than as this rank's own chunk (in place is "
              "input data == output data + rank %d x %zu bytes)",
              name, rank, in_e.bytes));
        }
        break;
      }
    }
  }

  plan->op = static_cast<MNT_CollectiveOp>(op);
  plan->reduce = reduction ? static_cast<MNT_ReduceOp>(reduce) : MNT_REDUCE_OP_INVALID;
  plan->type = !reduction                ? WireType::kBytes
               : dtype == MNT_DTYPE_F32  ? WireType::kF32
               : dtype == MNT_DTYPE_F16  ? WireType::kF16
                                         : WireType::kBF16;
  plan->root = broadcast ? args.root : 0;
  plan->recv = out.data;
  plan->output = out.data;
  plan->output_bytes = out_e.bytes;
  if (reads_input) {
    plan->send = in->data;
    plan->input = in->data;
    plan->input_bytes = in_e.bytes;
  } else {
    plan->send = out.data;  // NCCL reads sendbuff on the root only
  }
  switch (op) {
    case MNT_COLLECTIVE_ALL_REDUCE:
    case MNT_COLLECTIVE_REDUCE_SCATTER:
      plan->count = static_cast<size_t>(out_e.numel);
      break;
    case MNT_COLLECTIVE_ALL_GATHER:
      plan->count = in_e.bytes;
      break;
    default:
      plan->count = out_e.bytes;
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
