// One Backend_Run call as the contract checks see it (plugins/backends/
// common/calls/), plus the operand checks that produce the one-line
// INVALID_ARGUMENT messages, so errors read alike whichever backend runs, e.g.
//   "GEMM: in[1] B is f32[5,3], expected [K=4, N]".
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_OP_CALL_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_OP_CALL_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// An operand's name in messages, "in[1] B": its parts are kept and the text
// is only built when a message asks for it, so that checking an op's
// operands formats nothing unless a check fails. `dir` and `name` must
// outlive the label (the checks pass string literals).
class OperandLabel {
 public:
  OperandLabel() = default;
  OperandLabel(const char* dir, size_t index, const char* name)
      : dir_(dir), index_(index), name_(name) {}

  std::string str() const;
  operator std::string() const { return str(); }  // NOLINT: reads as a string
  // Valid until this label is next asked for its text or destroyed.
  const char* c_str() const {
    text_ = str();
    return text_.c_str();
  }

 private:
  const char* dir_ = "";
  size_t index_ = 0;
  const char* name_ = "";
  mutable std::string text_;  // c_str()'s storage; empty until asked
};

inline std::string operator+(const OperandLabel& l, const char* s) { return l.str() + s; }
inline std::string operator+(const OperandLabel& l, const std::string& s) {
  return l.str() + s;
}
inline std::string operator+(const char* s, const OperandLabel& l) { return s + l.str(); }
inline std::string operator+(const std::string& s, const OperandLabel& l) {
  return s + l.str();
}

// A named tensor operand.
struct Operand {
  const MNT_Tensor* tensor = nullptr;  // nullptr: optional and absent
  OperandLabel label;

  bool present() const { return tensor != nullptr; }
  const MNT_Tensor& operator*() const { return *tensor; }
  const MNT_Tensor* operator->() const { return tensor; }
  // The data as F32 / I32 elements (nullptr when absent); the contract check
  // has fixed the dtype.
  float* f32() const {
    return present() ? static_cast<float*>(tensor->data) : nullptr;
  }
  int32_t* i32() const {
    return present() ? static_cast<int32_t*>(tensor->data) : nullptr;
  }
};

class OpCall {
 public:
  OpCall(const char* op_name, const MNT_Tensor* inputs, size_t num_inputs,
         const MNT_Tensor* outputs, size_t num_outputs, const void* params)
      : op_name_(op_name),
        inputs_(inputs),
        num_inputs_(num_inputs),
        outputs_(outputs),
        num_outputs_(num_outputs),
        params_(params) {}

  const char* op_name() const { return op_name_; }
  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }

  // "GEMM: <message>" as INVALID_ARGUMENT.
  sdk::Status Invalid(const std::string& message) const;

  sdk::Status CheckCounts(size_t min_inputs, size_t max_inputs,
                          size_t min_outputs, size_t max_outputs) const;

  // Required operands: absent (index past the end or data NULL) is an error.
  sdk::Status Input(size_t i, const char* name, Operand* out) const;
  sdk::Status Output(size_t i, const char* name, Operand* out) const;
  // Optional operands: `out->present()` tells whether it was given.
  Operand OptionalInput(size_t i, const char* name) const;
  Operand OptionalOutput(size_t i, const char* name) const;

  // The op's params struct; NULL is an error unless `optional`.
  template <typename P>
  sdk::Status Params(const char* struct_name, size_t needed_size,
                     bool optional, const P** out) const {
    *out = static_cast<const P*>(params_);
    if (params_ == nullptr) {
      return optional ? sdk::Status::Ok()
                      : Invalid(std::string("params (") + struct_name +
                                ") is NULL");
    }
    if ((*out)->struct_size < needed_size) {
      return Invalid(sdk::Format("%s.struct_size %zu is smaller than %zu",
                                 struct_name, (*out)->struct_size, needed_size));
    }
    return sdk::Status::Ok();
  }

  // Operand checks.
  sdk::Status ExpectFloat(const Operand& t) const;
  sdk::Status ExpectDType(const Operand& t, MNT_DType dtype) const;
  sdk::Status ExpectRank(const Operand& t, int rank) const;
  sdk::Status ExpectRankAtLeast(const Operand& t, int rank) const;
  // Exact dims; `expected_text` is what the message shows, e.g. "[K=4, N]".
  sdk::Status ExpectDims(const Operand& t, int rank, const int64_t* dims,
                         const std::string& expected_text) const;
  sdk::Status ExpectElements(const Operand& t, int64_t count,
                             const std::string& expected_text) const;
  // The same with the expected text built by `describe()` only on a
  // mismatch, e.g. [&] { return sdk::Format("[K=%lld]", k); }: the checks
  // run on every call, so their messages must cost nothing when they pass.
  template <typename Describe,
            typename = std::enable_if_t<std::is_invocable_r_v<std::string, Describe>>>
  sdk::Status ExpectDims(const Operand& t, int rank, const int64_t* dims,
                         Describe&& describe) const {
    return HasDims(t, rank, dims) ? sdk::Status::Ok() : Mismatch(t, describe());
  }
  template <typename Describe,
            typename = std::enable_if_t<std::is_invocable_r_v<std::string, Describe>>>
  sdk::Status ExpectElements(const Operand& t, int64_t count, Describe&& describe) const {
    return HasElements(t, count) ? sdk::Status::Ok() : Mismatch(t, describe());
  }
  // A float vector of `length` elements (a bias): "[<name>=<length>]".
  sdk::Status ExpectFloatVector(const Operand& v, int64_t length, const char* name) const {
    MNT_RETURN_IF_ERROR(ExpectFloat(v));
    return ExpectDims(v, 1, &length,
                      [&] { return sdk::Format("[%s=%lld]", name, (long long)length); });
  }
  // F32 with exactly one element (found_inf, scalars, reductions).
  sdk::Status ExpectF32Scalar(const Operand& t) const;
  // I32 with exactly one element (growth tracker, step counter).
  sdk::Status ExpectI32Scalar(const Operand& t) const;
  // A float dtype and exactly `like`'s dims ("expected f32[2,5,24]").
  sdk::Status ExpectFloatLike(const Operand& t, const Operand& like) const;

 private:
  static bool HasDims(const Operand& t, int rank, const int64_t* dims);
  static bool HasElements(const Operand& t, int64_t count);
  Operand Make(const MNT_Tensor* array, size_t count, size_t i, const char* dir,
               const char* name) const;
  sdk::Status Mismatch(const Operand& t, const std::string& expected) const;

  const char* op_name_;
  const MNT_Tensor* inputs_;
  size_t num_inputs_;
  const MNT_Tensor* outputs_;
  size_t num_outputs_;
  const void* params_;
};

// What every typed call (GemmCall, LayerNormForwardCall, ...) carries besides
// its checked operands: the raw call, for the op's name in kernel errors and
// for the checks only a kernel can make because they read device data
// ("CROSS_ENTROPY: in[1] targets[4] = 11 is not below num_classes 11").
struct TypedCall {
  const OpCall* op = nullptr;
  const char* op_name() const { return op->op_name(); }
  sdk::Status Invalid(const std::string& message) const {
    return op->Invalid(message);
  }
};

// "<later> overlaps <earlier>" for the first two present `operands` whose
// bytes overlap, else OK: for kernels whose threads read and write their
// operands in any order.
sdk::Status CheckNoOverlap(const TypedCall& call, std::initializer_list<const Operand*> operands);

// Element count of dims [0, rank - 1) ("rows" of a last-dim op).
int64_t Rows(const MNT_Tensor& t);
// Last dimension, 1 for a rank-0 tensor.
int64_t LastDim(const MNT_Tensor& t);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_OP_CALL_H_
