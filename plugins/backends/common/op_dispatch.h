// Backend_Run and Backend_GetOpSupport for a backend class B, generated
// from the op list (plugins/sdk/op_list.h): every tensor view is checked
// (well formed, inside B's memory), then the op's contract check turns the
// raw call into its typed call, and B's kernel method for the op runs it.
//
// B declares which ops it supports with
//   static constexpr bool Supports(MNT_Op op);
// An op it does not support reports 0 from GetOpSupport, UNIMPLEMENTED from
// Run, and needs no kernel method.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_OP_DISPATCH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_OP_DISPATCH_H_

#include <type_traits>
#include <utility>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/allocator.h"
#include "plugins/backends/common/calls.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/op_list.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// Both arrays match their counts and every view is well formed and, when
// present, lies inside memory `memory` handed out (catches host pointers
// and use-after-free before a kernel reads them).
sdk::Status CheckTensorViews(const Allocator& memory, const char* op_name,
                             const MNT_Backend_Run_Args& args);

// `op` is the caller's raw int32: any value, known op or not (abi_enum.h).
template <typename B>
bool SupportsOp(int32_t op) {
  switch (op) {
#define MNT_SUPPORTS_CASE_(NAME, Name) \
  case MNT_OP_##NAME:                  \
    return B::Supports(MNT_OP_##NAME);
    MNT_FOR_EACH_OP(MNT_SUPPORTS_CASE_)
#undef MNT_SUPPORTS_CASE_
    default:
      return false;
  }
}

// The op's checks (views, then its contract) and, when `run`, B's kernel.
template <typename B>
sdk::Status DispatchOp(B& backend, const MNT_Backend_Run_Args& args, bool run) {
  // Read as int32 and checked before it is ever an MNT_Op (abi_enum.h).
  const int32_t raw_op = sdk::RawEnum(args.op);
  if (!sdk::IsKnownEnum<MNT_Op>(raw_op) || raw_op == MNT_OP_INVALID) {
    return sdk::Unimplemented(sdk::Format("Backend_Run: unknown op %d", raw_op));
  }
  const MNT_Op op = static_cast<MNT_Op>(raw_op);
  const char* name = sdk::OpName(op);
  if (!SupportsOp<B>(raw_op)) {
    return sdk::Unimplemented(
        sdk::Format("Backend_Run: op %d (%s) is not implemented by the %s backend",
                    raw_op, name, B::kName));
  }
  MNT_RETURN_IF_ERROR(CheckTensorViews(backend.allocator(), name, args));
  const OpCall call(name, args.inputs, args.num_inputs, args.outputs,
                    args.num_outputs, args.params);
  switch (op) {
#define MNT_RUN_CASE_(NAME, Name)                              \
  case MNT_OP_##NAME:                                          \
    if constexpr (B::Supports(MNT_OP_##NAME)) {                \
      Name##Call typed;                                        \
      MNT_RETURN_IF_ERROR(Check##Name(call, &typed));          \
      if (!run) return sdk::Status::Ok();                      \
      return backend.Name(typed);                              \
    }                                                          \
    break;
    MNT_FOR_EACH_OP(MNT_RUN_CASE_)
#undef MNT_RUN_CASE_
    default:
      break;
  }
  return sdk::Internal(sdk::Format("Backend_Run: op %s was not dispatched", name));
}

// A backend may set up and restore something around every op it runs (the
// CPU backend's floating-point mode): `B::OpScope(raw_op)` returns an object
// that lives while the op's checks and kernel run.
template <typename B, typename = void>
struct HasOpScope : std::false_type {};
template <typename B>
struct HasOpScope<B, std::void_t<decltype(std::declval<B&>().OpScope(int32_t{0}))>>
    : std::true_type {};

// Checks and runs one op.
template <typename B>
sdk::Status RunOp(B& backend, const MNT_Backend_Run_Args& args) {
  if constexpr (HasOpScope<B>::value) {
    const auto scope = backend.OpScope(sdk::RawEnum(args.op));
    return DispatchOp(backend, args, /*run=*/true);
  } else {
    return DispatchOp(backend, args, /*run=*/true);
  }
}

// Only the checks RunOp would make: a deferred op fails at its Backend_Run.
template <typename B>
sdk::Status CheckOp(B& backend, const MNT_Backend_Run_Args& args) {
  return DispatchOp(backend, args, /*run=*/false);
}

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_OP_DISPATCH_H_
