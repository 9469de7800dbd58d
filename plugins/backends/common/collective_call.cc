#include "plugins/backends/common/collective_call.h"

#include <cstdint>
#include <string>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {
namespace {

using sdk::Format;
using sdk::Status;

// The tensor of a given operand: its element and byte counts.
Status CheckTensor(const char* op, const char* which, const MNT_Tensor& t,
                   CollectiveOperand* out) {
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
  const size_t esize =
      sdk::IsKnownEnum<MNT_DType>(dtype) ? sdk::DTypeSize(static_cast<MNT_DType>(dtype)) : 0;
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
      return sdk::InvalidArgument(Format("%s: %s %s has more elements than fit in 64 bits", op,
                                         which, sdk::Describe(t).c_str()));
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(esize), &bytes)) {
    return sdk::InvalidArgument(Format("%s: %s %s has more bytes than fit in 64 bits", op,
                                       which, sdk::Describe(t).c_str()));
  }
  out->data = t.data;
  out->elements = n;
  out->bytes = static_cast<size_t>(bytes);
  return Status::Ok();
}

bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// The checks of both overloads; `op` and `reduce` are the fields' raw
// int32s (a caller may write any value there).
Status Check(const char* call, int32_t op, int32_t reduce, int32_t root,
             const MNT_Tensor* input, const MNT_Tensor* output, int32_t rank,
             int32_t world_size, CollectiveCall* out) {
  *out = CollectiveCall();
  const char* name = sdk::CollectiveOpName(op);
  if (name == nullptr || op == MNT_COLLECTIVE_INVALID) {
    return sdk::InvalidArgument(Format(
        "%s: unknown collective op %d (ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER or BROADCAST)",
        call, op));
  }
  const bool reduction = op == MNT_COLLECTIVE_ALL_REDUCE || op == MNT_COLLECTIVE_REDUCE_SCATTER;
  if (reduction &&
      (sdk::CollectiveReduceOpName(reduce) == nullptr || reduce == MNT_REDUCE_OP_INVALID)) {
    return sdk::InvalidArgument(
        Format("%s: unknown reduce op %d (SUM, AVG or MAX)", name, reduce));
  }

  // The output.
  if (output == nullptr) return sdk::InvalidArgument(Format("%s: output is NULL", name));
  const MNT_Tensor& out_t = *output;
  CollectiveOperand out_e;
  MNT_RETURN_IF_ERROR(CheckTensor(name, "output", out_t, &out_e));
  if (out_t.data == nullptr) {
    return sdk::InvalidArgument(Format("%s: output has NULL data", name));
  }

  // BROADCAST's root; the input, which only BROADCAST's non-root ranks may
  // leave out (it is not read there).
  const bool broadcast = op == MNT_COLLECTIVE_BROADCAST;
  if (broadcast && (root < 0 || root >= world_size)) {
    return sdk::InvalidArgument(Format("%s: root %d is outside [0, %d) (the world size)", name,
                                       root, world_size));
  }
  const bool reads_input = !broadcast || root == rank;
  const bool has_input = input != nullptr && input->data != nullptr;
  if (reads_input && !has_input) {
    return sdk::InvalidArgument(
        Format("%s: input %s", name, input == nullptr ? "is NULL" : "has NULL data"));
  }
  CollectiveOperand in_e;
  if (has_input) {
    MNT_RETURN_IF_ERROR(CheckTensor(name, "input", *input, &in_e));
    if (sdk::RawEnum(input->dtype) != sdk::RawEnum(out_t.dtype)) {
      return sdk::InvalidArgument(Format("%s: input is %s but output is %s (one dtype for both)",
                                         name, sdk::Describe(*input).c_str(),
                                         sdk::Describe(out_t).c_str()));
    }
  }
  const int32_t dtype = sdk::RawEnum(out_t.dtype);
  if (reduction && dtype != MNT_DTYPE_F32 && dtype != MNT_DTYPE_F16 && dtype != MNT_DTYPE_BF16) {
    return sdk::InvalidArgument(Format("%s: output is %s; reductions take F32, F16 or BF16",
                                       name, sdk::Describe(out_t).c_str()));
  }

  // Element counts.
  const auto counts_differ = [&](const char* what) {
    return sdk::InvalidArgument(Format("%s: input is %s and output %s (%s)", name,
                                       sdk::Describe(*input).c_str(),
                                       sdk::Describe(out_t).c_str(), what));
  };
  int64_t expected = 0;
  switch (op) {
    case MNT_COLLECTIVE_ALL_REDUCE:
      if (in_e.elements != out_e.elements) return counts_differ("one element count for both");
      break;
    case MNT_COLLECTIVE_REDUCE_SCATTER:
      if (__builtin_mul_overflow(out_e.elements, static_cast<int64_t>(world_size), &expected) ||
          in_e.elements != expected) {
        return sdk::InvalidArgument(Format(
            "%s: input is %s with %lld elements, expected world size %d x output's %lld", name,
            sdk::Describe(*input).c_str(), static_cast<long long>(in_e.elements), world_size,
            static_cast<long long>(out_e.elements)));
      }
      break;
    case MNT_COLLECTIVE_ALL_GATHER:
      if (__builtin_mul_overflow(in_e.elements, static_cast<int64_t>(world_size), &expected) ||
          out_e.elements != expected) {
        return sdk::InvalidArgument(Format(
            "%s: output is %s with %lld elements, expected world size %d x input's %lld", name,
            sdk::Describe(out_t).c_str(), static_cast<long long>(out_e.elements), world_size,
            static_cast<long long>(in_e.elements)));
      }
      break;
    default:  // BROADCAST: a given input, read or not, matches the output
      if (has_input && in_e.elements != out_e.elements) {
        return counts_differ("one element count for both");
      }
      break;
  }

  // Aliasing: only what mnt_collectives.h allows.
  if (reads_input) {
    const void* ip = in_e.data;
    const void* op_data = out_e.data;
    switch (op) {
      case MNT_COLLECTIVE_ALL_REDUCE:
      case MNT_COLLECTIVE_BROADCAST:
        if (ip != op_data && Overlap(ip, in_e.bytes, op_data, out_e.bytes)) {
          return sdk::InvalidArgument(Format(
              "%s: input and output overlap without being the same memory (in place is input "
              "data == output data)",
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
        const char* own =
            static_cast<const char*>(op_data) + static_cast<size_t>(rank) * in_e.bytes;
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

  out->op = static_cast<MNT_CollectiveOp>(op);
  out->name = name;
  out->reduce = reduction ? static_cast<MNT_ReduceOp>(reduce) : MNT_REDUCE_OP_INVALID;
  out->root = broadcast ? root : 0;
  out->dtype = static_cast<MNT_DType>(dtype);
  out->element_bytes = sdk::DTypeSize(out->dtype);
  if (reads_input) out->input = in_e;
  out->output = out_e;
  return Status::Ok();
}

}  // namespace

Status CheckCommunicatorGiven(const char* call, const MNT_Communicator* communicator) {
  if (communicator == nullptr) {
    return sdk::InvalidArgument(Format("%s: communicator is NULL", call));
  }
  return Status::Ok();
}

Status CheckWorkGiven(const MNT_CollectiveWork* work) {
  if (work == nullptr) return sdk::InvalidArgument("Collectives_Wait: work is NULL");
  return Status::Ok();
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
  if (unique_id_size == 0 || unique_id_size > MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES) {
    return sdk::InvalidArgument(
        Format("Communicator_Create: unique_id_size is %zu (1 to %d bytes)", unique_id_size,
               MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES));
  }
  return Status::Ok();
}

Status CheckCollectiveCall(const char* call, const MNT_Collectives_Run_Args& args, int32_t rank,
                           int32_t world_size, CollectiveCall* out) {
  return Check(call, sdk::RawEnum(args.op), sdk::RawEnum(args.reduce), args.root, args.input,
               args.output, rank, world_size, out);
}

Status CheckCollectiveCall(const char* call, const MNT_Collectives_Start_Args& args,
                           int32_t rank, int32_t world_size, CollectiveCall* out) {
  return Check(call, sdk::RawEnum(args.op), sdk::RawEnum(args.reduce), args.root, args.input,
               args.output, rank, world_size, out);
}

}  // namespace mnt::backend
