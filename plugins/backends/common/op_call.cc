#include "plugins/backends/common/op_call.h"

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

std::string OperandLabel::str() const {
  return sdk::Format("%s[%zu] %s", dir_, index_, name_);
}

sdk::Status OpCall::Invalid(const std::string& message) const {
  return sdk::InvalidArgument(std::string(op_name_) + ": " + message);
}

sdk::Status OpCall::CheckCounts(size_t min_inputs, size_t max_inputs,
                                size_t min_outputs, size_t max_outputs) const {
  auto range = [](size_t lo, size_t hi) {
    return lo == hi ? std::to_string(lo)
                    : std::to_string(lo) + " to " + std::to_string(hi);
  };
  if (num_inputs_ < min_inputs || num_inputs_ > max_inputs) {
    return Invalid(sdk::Format("got %zu inputs, expected %s", num_inputs_,
                               range(min_inputs, max_inputs).c_str()));
  }
  if (num_outputs_ < min_outputs || num_outputs_ > max_outputs) {
    return Invalid(sdk::Format("got %zu outputs, expected %s", num_outputs_,
                               range(min_outputs, max_outputs).c_str()));
  }
  return sdk::Status::Ok();
}

Operand OpCall::Make(const MNT_Tensor* array, size_t count, size_t i,
                     const char* dir, const char* name) const {
  Operand o;
  o.label = OperandLabel(dir, i, name);
  if (i < count && array[i].data != nullptr) o.tensor = &array[i];
  return o;
}

sdk::Status OpCall::Input(size_t i, const char* name, Operand* out) const {
  *out = Make(inputs_, num_inputs_, i, "in", name);
  if (!out->present()) return Invalid(out->label + " is missing (data is NULL)");
  return sdk::Status::Ok();
}

sdk::Status OpCall::Output(size_t i, const char* name, Operand* out) const {
  *out = Make(outputs_, num_outputs_, i, "out", name);
  if (!out->present()) return Invalid(out->label + " is missing (data is NULL)");
  return sdk::Status::Ok();
}

Operand OpCall::OptionalInput(size_t i, const char* name) const {
  return Make(inputs_, num_inputs_, i, "in", name);
}

Operand OpCall::OptionalOutput(size_t i, const char* name) const {
  return Make(outputs_, num_outputs_, i, "out", name);
}

sdk::Status OpCall::Mismatch(const Operand& t,
                             const std::string& expected) const {
  return Invalid(t.label + " is " + sdk::Describe(*t) + ", expected " +
                 expected);
}

sdk::Status OpCall::ExpectFloat(const Operand& t) const {
  if (sdk::IsFloatStorage(t->dtype)) return sdk::Status::Ok();
  return Mismatch(t, "a float dtype (f32, f16 or bf16)");
}

sdk::Status OpCall::ExpectDType(const Operand& t, MNT_DType dtype) const {
  if (t->dtype == dtype) return sdk::Status::Ok();
  return Mismatch(t, std::string("dtype ") + sdk::DTypeName(dtype));
}

sdk::Status OpCall::ExpectRank(const Operand& t, int rank) const {
  if (t->rank == rank) return sdk::Status::Ok();
  return Mismatch(t, sdk::Format("rank %d", rank));
}

sdk::Status OpCall::ExpectRankAtLeast(const Operand& t, int rank) const {
  if (t->rank >= rank) return sdk::Status::Ok();
  return Mismatch(t, sdk::Format("rank >= %d", rank));
}

bool OpCall::HasDims(const Operand& t, int rank, const int64_t* dims) {
  bool ok = t->rank == rank;
  for (int i = 0; ok && i < rank; ++i) ok = t->dims[i] == dims[i];
  return ok;
}

bool OpCall::HasElements(const Operand& t, int64_t count) {
  return sdk::NumElements(*t) == count;
}

sdk::Status OpCall::ExpectDims(const Operand& t, int rank, const int64_t* dims,
                               const std::string& expected_text) const {
  return HasDims(t, rank, dims) ? sdk::Status::Ok() : Mismatch(t, expected_text);
}

sdk::Status OpCall::ExpectElements(const Operand& t, int64_t count,
                                   const std::string& expected_text) const {
  return HasElements(t, count) ? sdk::Status::Ok() : Mismatch(t, expected_text);
}

sdk::Status OpCall::ExpectF32Scalar(const Operand& t) const {
  if (t->dtype == MNT_DTYPE_F32 && sdk::NumElements(*t) == 1) {
    return sdk::Status::Ok();
  }
  return Mismatch(t, "f32[1]");
}

sdk::Status OpCall::ExpectI32Scalar(const Operand& t) const {
  MNT_RETURN_IF_ERROR(ExpectDType(t, MNT_DTYPE_I32));
  return ExpectElements(t, 1, "i32 with 1 element");
}

sdk::Status OpCall::ExpectFloatLike(const Operand& t, const Operand& like) const {
  MNT_RETURN_IF_ERROR(ExpectFloat(t));
  return ExpectDims(t, like->rank, like->dims, [&] { return sdk::Describe(*like); });
}

sdk::Status CheckNoOverlap(const TypedCall& call,
                           std::initializer_list<const Operand*> operands) {
  for (auto i = operands.begin(); i != operands.end(); ++i) {
    for (auto j = i + 1; j != operands.end(); ++j) {
      if (!(*i)->present() || !(*j)->present()) continue;
      const uintptr_t a = reinterpret_cast<uintptr_t>((**i)->data);
      const uintptr_t b = reinterpret_cast<uintptr_t>((**j)->data);
      const size_t a_bytes = sdk::SizeBytes(***i), b_bytes = sdk::SizeBytes(***j);
      if (a_bytes > 0 && b_bytes > 0 && a < b + b_bytes && b < a + a_bytes) {
        return call.Invalid((*j)->label + " overlaps " + (*i)->label);
      }
    }
  }
  return sdk::Status::Ok();
}

int64_t Rows(const MNT_Tensor& t) {
  int64_t n = 1;
  for (int i = 0; i + 1 < t.rank; ++i) n *= t.dims[i];
  return n;
}

int64_t LastDim(const MNT_Tensor& t) {
  return t.rank == 0 ? 1 : t.dims[t.rank - 1];
}

}  // namespace mnt::backend
