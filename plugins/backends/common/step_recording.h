// The ops of one marked training step (ABI 1.7 Backend_StepBegin/StepEnd),
// copied so they outlive the Backend_Run calls that issued them, and the
// comparison that decides whether a captured step may be replayed.
//
// A recorded op owns copies of everything its call borrowed: the operand
// views (pointer, dtype, rank, dims), the params struct (the caller's
// struct_size bytes) and the arrays a params struct points to (the
// multi-tensor optimizers' lr_scales/weight_decays and, since 1.11,
// rounding_tensors/rounding_elements). Args() rebuilds a
// Backend_Run call from those copies, so issuing a recorded op runs exactly
// what the caller asked for even after its buffers are gone.
//
// Two ops match when op, operand views and params bytes are equal, with the
// params' pointers compared by the contents of what they point to and the
// padding holes inside a params struct ignored (a caller's aggregate
// initialisation leaves them unspecified). A params struct this file does not
// know (an op appended after MULTI_SGD_STEP) is refused by Add(): the step
// then runs as issued, never replayed with a field nobody compared.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_RECORDING_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_RECORDING_H_

#include <cstddef>
#include <string>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

class RecordedOp {
 public:
  // Copies `args` (already checked by the op's contract check). Fails for
  // an op whose params layout the recorder does not know.
  static sdk::Status Copy(const MNT_Backend_Run_Args& args, RecordedOp* out);

  RecordedOp() = default;
  RecordedOp(RecordedOp&&) = default;             // the arrays' storage moves
  RecordedOp& operator=(RecordedOp&&) = default;  // with it: pointers stay valid
  RecordedOp(const RecordedOp&) = delete;
  RecordedOp& operator=(const RecordedOp&) = delete;

  // A Memory_Copy DEVICE_TO_DEVICE inside the step (checked by the caller):
  // stream work like an op, recorded in its place.
  static RecordedOp DeviceCopy(void* dst, const void* src, size_t bytes);

  // MNT_OP_INVALID for a device copy.
  MNT_Op op() const { return op_; }
  bool is_device_copy() const { return copy_bytes_ > 0; }
  void* copy_dst() const { return copy_dst_; }
  const void* copy_src() const { return copy_src_; }
  size_t copy_bytes() const { return copy_bytes_; }
  // A Backend_Run call on `backend` pointing into this record.
  MNT_Backend_Run_Args Args(MNT_Backend* backend) const;
  // "" when equal, else what differs first ("in[2] pointer", "params byte 8").
  std::string Difference(const RecordedOp& other) const;

 private:
  MNT_Op op_ = MNT_OP_INVALID;
  std::vector<MNT_Tensor> inputs_, outputs_;
  // The caller's params bytes with holes zeroed and pointer fields NULL
  // (what is compared), and the same bytes with the pointers into arrays_
  // (what is issued).
  std::vector<unsigned char> params_compared_, params_issued_;
  bool has_params_ = false;
  // Contents of each pointer field, in field order; `present` tells a NULL
  // pointer from an empty array.
  struct Array {
    bool present = false;
    std::vector<unsigned char> bytes;
  };
  std::vector<Array> arrays_;
  void* copy_dst_ = nullptr;
  const void* copy_src_ = nullptr;
  size_t copy_bytes_ = 0;  // > 0: a device copy, not an op
};

class StepRecording {
 public:
  sdk::Status Add(const MNT_Backend_Run_Args& args);
  void AddDeviceCopy(void* dst, const void* src, size_t bytes) {
    ops_.push_back(RecordedOp::DeviceCopy(dst, src, bytes));
  }
  void Clear() { ops_.clear(); }
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }
  const RecordedOp& op(size_t i) const { return ops_[i]; }
  // "" when both hold the same ops, else the first difference, e.g.
  // "op 12 (ADAMW_STEP): params byte 8 differs" or "3 ops instead of 4".
  std::string Difference(const StepRecording& other) const;

 private:
  std::vector<RecordedOp> ops_;
};

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_RECORDING_H_
