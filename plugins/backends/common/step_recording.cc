#include "plugins/backends/common/step_recording.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/op_list.h"

namespace mnt::backend {

namespace {

// Bytes [begin, end) of a params struct that no field occupies.
struct Hole {
  size_t begin, end;
};
// A `const T*` field pointing to `count` elements of `element_bytes`, the
// count being the int64 field at `count_offset`.
struct PointerField {
  size_t offset, count_offset, element_bytes;
};

struct ParamsLayout {
  bool known = false;        // false: the recorder cannot copy this op
  bool reads_params = true;  // false: the op ignores `params` (never read)
  std::vector<Hole> holes;
  std::vector<PointerField> pointers;
};

#define MNT_HOLE_AFTER_(T, field, next) \
  Hole { offsetof(T, field) + sizeof(T::field), offsetof(T, next) }

// Per op, from its contract check (common/calls): which params struct it
// reads. Only structs with an interior hole or a pointer need an entry;
// plugins/abi/abi_layout_test.cc freezes the offsets used here. An op
// appended to the ABI later is unknown until it is listed (the step then
// runs as issued).
ParamsLayout LayoutOf(int32_t raw_op) {
  ParamsLayout l;
  if (!sdk::IsKnownEnum<MNT_Op>(raw_op) || raw_op == MNT_OP_INVALID ||
      (raw_op > MNT_OP_MULTI_SGD_STEP && raw_op != MNT_OP_ADAMW8BIT_STEP &&
       raw_op != MNT_OP_ADAFACTOR_STEP && raw_op != MNT_OP_MULTI_ADAMW8BIT_STEP &&
       raw_op != MNT_OP_MULTI_ADAFACTOR_STEP)) {
    return l;
  }
  l.known = true;
  switch (static_cast<MNT_Op>(raw_op)) {
    case MNT_OP_CAST:
    case MNT_OP_SOFTMAX:
    case MNT_OP_EMBEDDING_FORWARD:
    case MNT_OP_GLOBAL_NORM_SQUARED:
    case MNT_OP_NONFINITE_CHECK_UNSCALE:
      l.reads_params = false;
      break;
    case MNT_OP_CROSS_ENTROPY:
    case MNT_OP_COUNT_CORRECT:
    case MNT_OP_FUSED_CLASSIFIER:
      l.holes = {MNT_HOLE_AFTER_(MNT_CrossEntropyParams, grad_scale, num_classes)};
      break;
    // 1.7 appended the rounding fields: a hole after the 4-byte enum.
    case MNT_OP_SGD_STEP:
      l.holes = {MNT_HOLE_AFTER_(MNT_SgdParams, rounding, rounding_seed)};
      break;
    case MNT_OP_ADAMW_STEP:
      l.holes = {MNT_HOLE_AFTER_(MNT_AdamWParams, weight_decay, step),
                 MNT_HOLE_AFTER_(MNT_AdamWParams, rounding, rounding_seed)};
      break;
    // 1.12: ADAMW_STEP's params, and Adafactor's hole after its enum.
    case MNT_OP_ADAMW8BIT_STEP:
      l.holes = {MNT_HOLE_AFTER_(MNT_AdamWParams, weight_decay, step),
                 MNT_HOLE_AFTER_(MNT_AdamWParams, rounding, rounding_seed)};
      break;
    case MNT_OP_ADAFACTOR_STEP:
      l.holes = {MNT_HOLE_AFTER_(MNT_AdafactorParams, rounding, rounding_seed)};
      break;
    // 1.14: MULTI_ADAMW_STEP's params, arrays included.
    case MNT_OP_MULTI_ADAMW8BIT_STEP:
    case MNT_OP_MULTI_ADAMW_STEP:
      l.holes = {MNT_HOLE_AFTER_(MNT_MultiAdamWParams, weight_decay, step),
                 MNT_HOLE_AFTER_(MNT_MultiAdamWParams, rounding, rounding_seed)};
      l.pointers = {
          {offsetof(MNT_MultiAdamWParams, lr_scales),
           offsetof(MNT_MultiAdamWParams, num_tensors), sizeof(float)},
          {offsetof(MNT_MultiAdamWParams, weight_decays),
           offsetof(MNT_MultiAdamWParams, num_tensors), sizeof(float)},
          // 1.11: the pieces' tensor and element indices.
          {offsetof(MNT_MultiAdamWParams, rounding_tensors),
           offsetof(MNT_MultiAdamWParams, num_tensors), sizeof(int64_t)},
          {offsetof(MNT_MultiAdamWParams, rounding_elements),
           offsetof(MNT_MultiAdamWParams, num_tensors), sizeof(int64_t)}};
      break;
    // 1.14: Adafactor's hole, and the table's arrays.
    case MNT_OP_MULTI_ADAFACTOR_STEP:
      l.holes = {MNT_HOLE_AFTER_(MNT_MultiAdafactorParams, rounding, rounding_seed)};
      l.pointers = {
          {offsetof(MNT_MultiAdafactorParams, lr_scales),
           offsetof(MNT_MultiAdafactorParams, num_tensors), sizeof(float)},
          {offsetof(MNT_MultiAdafactorParams, weight_decays),
           offsetof(MNT_MultiAdafactorParams, num_tensors), sizeof(float)},
          {offsetof(MNT_MultiAdafactorParams, rounding_tensors),
           offsetof(MNT_MultiAdafactorParams, num_tensors), sizeof(int64_t)}};
      break;
    case MNT_OP_MULTI_SGD_STEP:
      l.holes = {MNT_HOLE_AFTER_(MNT_MultiSgdParams, rounding, rounding_seed)};
      l.pointers = {
          {offsetof(MNT_MultiSgdParams, lr_scales),
           offsetof(MNT_MultiSgdParams, num_tensors), sizeof(float)},
          {offsetof(MNT_MultiSgdParams, weight_decays),
           offsetof(MNT_MultiSgdParams, num_tensors), sizeof(float)},
          {offsetof(MNT_MultiSgdParams, rounding_tensors),
           offsetof(MNT_MultiSgdParams, num_tensors), sizeof(int64_t)},
          {offsetof(MNT_MultiSgdParams, rounding_elements),
           offsetof(MNT_MultiSgdParams, num_tensors), sizeof(int64_t)}};
      break;
    default:
      break;
  }
  return l;
}

#undef MNT_HOLE_AFTER_

bool Covers(size_t size, size_t offset, size_t bytes) { return offset + bytes <= size; }

std::string TensorDifference(const char* dir, size_t i, const MNT_Tensor& a,
                             const MNT_Tensor& b) {
  if (a.data != b.data) return sdk::Format("%s[%zu] pointer", dir, i);
  if (a.dtype != b.dtype) return sdk::Format("%s[%zu] dtype", dir, i);
  if (a.rank != b.rank) return sdk::Format("%s[%zu] rank", dir, i);
  for (int d = 0; d < a.rank && d < MNT_MAX_RANK; ++d) {
    if (a.dims[d] != b.dims[d]) return sdk::Format("%s[%zu] dims[%d]", dir, i, d);
  }
  return "";
}

// A view reduced to what an op reads of it (struct_size is the caller's
// and says nothing about the operand; dims beyond rank are never read).
MNT_Tensor Canonical(const MNT_Tensor& t) {
  MNT_Tensor c{};
  c.struct_size = MNT_Tensor_STRUCT_SIZE;
  c.data = t.data;
  c.dtype = t.dtype;
  c.rank = t.rank;
  for (int d = 0; d < t.rank && d < MNT_MAX_RANK; ++d) c.dims[d] = t.dims[d];
  return c;
}

}  // namespace

sdk::Status RecordedOp::Copy(const MNT_Backend_Run_Args& args, RecordedOp* out) {
  const int32_t raw_op = sdk::RawEnum(args.op);
  const ParamsLayout layout = LayoutOf(raw_op);
  if (!layout.known) {
    return sdk::Unimplemented(
        sdk::Format("op %d has params the step recorder does not know", raw_op));
  }
  RecordedOp r;
  r.op_ = static_cast<MNT_Op>(raw_op);
  for (size_t i = 0; i < args.num_inputs; ++i) r.inputs_.push_back(Canonical(args.inputs[i]));
  for (size_t i = 0; i < args.num_outputs; ++i) r.outputs_.push_back(Canonical(args.outputs[i]));
  if (layout.reads_params && args.params != nullptr) {
    size_t size;
    std::memcpy(&size, args.params, sizeof(size));  // the check read it too
    const auto* bytes = static_cast<const unsigned char*>(args.params);
    r.has_params_ = true;
    r.params_issued_.assign(bytes, bytes + size);
    r.params_compared_ = r.params_issued_;
    for (const Hole& h : layout.holes) {
      for (size_t b = h.begin; b < h.end && b < size; ++b) r.params_compared_[b] = 0;
    }
    for (const PointerField& f : layout.pointers) {
      Array a;
      const void* p = nullptr;
      if (Covers(size, f.offset, sizeof(p))) std::memcpy(&p, bytes + f.offset, sizeof(p));
      if (p != nullptr) {
        int64_t count = 0;
        if (Covers(size, f.count_offset, sizeof(count))) {
          std::memcpy(&count, bytes + f.count_offset, sizeof(count));
        }
        if (count < 0) return sdk::InvalidArgument("step recorder: negative array count");
        const auto* e = static_cast<const unsigned char*>(p);
        a.present = true;
        a.bytes.assign(e, e + static_cast<size_t>(count) * f.element_bytes);
        // Compared by contents (below), issued from the copy.
        std::memset(r.params_compared_.data() + f.offset, 0, sizeof(p));
        const void* copy = a.bytes.data();
        std::memcpy(r.params_issued_.data() + f.offset, &copy, sizeof(copy));
      }
      r.arrays_.push_back(std::move(a));
    }
  }
  *out = std::move(r);
  return sdk::Status::Ok();
}

RecordedOp RecordedOp::DeviceCopy(void* dst, const void* src, size_t bytes) {
  RecordedOp r;
  r.copy_dst_ = dst;
  r.copy_src_ = src;
  r.copy_bytes_ = bytes;
  return r;
}

MNT_Backend_Run_Args RecordedOp::Args(MNT_Backend* backend) const {
  MNT_Backend_Run_Args a{};
  a.struct_size = MNT_Backend_Run_Args_STRUCT_SIZE;
  a.backend = backend;
  a.op = op_;
  a.inputs = inputs_.data();
  a.num_inputs = inputs_.size();
  a.outputs = outputs_.data();
  a.num_outputs = outputs_.size();
  a.params = has_params_ ? params_issued_.data() : nullptr;
  return a;
}

std::string RecordedOp::Difference(const RecordedOp& o) const {
  if (op_ != o.op_ || is_device_copy() != o.is_device_copy()) return "op";
  if (is_device_copy()) {
    if (copy_dst_ != o.copy_dst_ || copy_src_ != o.copy_src_) return "copy pointer";
    if (copy_bytes_ != o.copy_bytes_) return "copy size";
    return "";
  }
  if (inputs_.size() != o.inputs_.size()) return "input count";
  if (outputs_.size() != o.outputs_.size()) return "output count";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    std::string d = TensorDifference("in", i, inputs_[i], o.inputs_[i]);
    if (!d.empty()) return d;
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    std::string d = TensorDifference("out", i, outputs_[i], o.outputs_[i]);
    if (!d.empty()) return d;
  }
  if (has_params_ != o.has_params_) return "params presence";
  if (params_compared_.size() != o.params_compared_.size()) return "params struct_size";
  for (size_t b = 0; b < params_compared_.size(); ++b) {
    if (params_compared_[b] != o.params_compared_[b]) {
      return sdk::Format("params byte %zu", b);
    }
  }
  if (arrays_.size() != o.arrays_.size()) return "params arrays";
  for (size_t i = 0; i < arrays_.size(); ++i) {
    if (arrays_[i].present != o.arrays_[i].present || arrays_[i].bytes != o.arrays_[i].bytes) {
      return sdk::Format("params array %zu", i);
    }
  }
  return "";
}

sdk::Status StepRecording::Add(const MNT_Backend_Run_Args& args) {
  RecordedOp r;
  MNT_RETURN_IF_ERROR(RecordedOp::Copy(args, &r));
  ops_.push_back(std::move(r));
  return sdk::Status::Ok();
}

std::string StepRecording::Difference(const StepRecording& other) const {
  const size_t n = ops_.size() < other.ops_.size() ? ops_.size() : other.ops_.size();
  for (size_t i = 0; i < n; ++i) {
    std::string d = ops_[i].Difference(other.ops_[i]);
    if (!d.empty()) {
      return sdk::Format("op %zu (%s): %s differs", i,
                         ops_[i].is_device_copy() ? "device copy" : sdk::OpName(ops_[i].op()),
                         d.c_str());
    }
  }
  if (ops_.size() != other.ops_.size()) {
    return sdk::Format("%zu ops instead of %zu", ops_.size(), other.ops_.size());
  }
  return "";
}

}  // namespace mnt::backend
