#include "trainer/core/fp8_scaling.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/fp8_slots.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {
namespace {

float FormatMax(MNT_DType format) {
  return format == MNT_DTYPE_F8_E5M2 ? sdk::kE5M2Max : sdk::kE4M3Max;
}

MNT_Tensor Sub(const MNT_Tensor& flat, int64_t begin, const std::vector<int64_t>& dims) {
  char* data = static_cast<char*>(flat.data) + sizeof(float) * static_cast<size_t>(begin);
  return sdk::MakeTensor(data, MNT_DTYPE_F32, static_cast<int32_t>(dims.size()), dims.data());
}

constexpr const char* kRoleNames[sdk::kFp8Roles] = {"input", "weight", "grad_output"};

}  // namespace

absl::StatusOr<std::unique_ptr<Fp8Scaling>> Fp8Scaling::Create(
    const sdk::BackendClient& client, const MNT_Precision_GetScalingRecipe_Args& recipe,
    const std::vector<ParamShape>& params) {
  std::unique_ptr<Fp8Scaling> f(new Fp8Scaling(client, recipe));
  std::vector<std::string> matrices;
  for (const ParamShape& p : params) {
    const int64_t n = sdk::Fp8SlotsOfParam(p.dims);
    for (int64_t m = 0; m < n; ++m) {
      matrices.push_back(p.dims.size() == 3 ? absl::StrCat(p.name, ".", m) : p.name);
    }
  }
  const int64_t S = static_cast<int64_t>(matrices.size());
  if (S == 0) {
    return absl::FailedPreconditionError(
        "FP8 GEMMs: the model has no matrix parameters (rank 2, or rank 3 stacked by layer) "
        "for a GEMM to scale");
  }
  f->slots_ = S;
  for (int r = 0; r < sdk::kFp8Roles; ++r) {
    for (const std::string& m : matrices) f->slot_names_.push_back(absl::StrCat(m, "/", kRoleNames[r]));
  }
  const int64_t H = f->delayed() ? recipe.history_length : 0;
  const int64_t floats = 3 * 3 * S + H * 3 * S;
  if (auto s = sdk::ToAbsl(client.Allocate(sizeof(float) * static_cast<size_t>(floats),
                                           MNT_MEMORY_OPTIMIZER_STATE, &f->block_));
      !s.ok()) {
    return s;
  }
  const MNT_Tensor flat = sdk::MakeTensor(f->block_.data(), MNT_DTYPE_F32, 1, &floats);
  f->scales_ = Sub(flat, 0, {3, S});
  f->scale_invs_ = Sub(flat, 3 * S, {3, S});
  f->amax_ = Sub(flat, 6 * S, {3, S});
  if (H > 0) {
    f->history_forward_ = Sub(flat, 9 * S, {H, 2 * S});
    f->history_backward_ = Sub(flat, 9 * S + H * 2 * S, {H, S});
  }
  std::vector<float> init(static_cast<size_t>(floats), 0.0f);
  std::fill(init.begin(), init.begin() + 6 * S, 1.0f);  // scales and their inverses
  if (auto s = sdk::ToAbsl(client.ToDevice(f->block_.data(), init.data(),
                                           init.size() * sizeof(float)));
      !s.ok()) {
    return s;
  }
  return f;
}

MNT_Tensor Fp8Scaling::flat_amax() const { return Sub(amax_, 0, {3 * slots_}); }

int64_t Fp8Scaling::device_bytes() const { return static_cast<int64_t>(block_.size()); }

absl::Status Fp8Scaling::Update() {
  if (!delayed()) return absl::OkStatus();
  const int64_t S = slots_;
  // Forward roles (rows 0 and 1, contiguous) in the forward format, the
  // output gradients (row 2) in the backward one.
  struct Part {
    int64_t begin, count;
    const MNT_Tensor* history;
    MNT_DType format;
  };
  for (const Part& part : {Part{0, 2 * S, &history_forward_, recipe_.forward_dtype},
                           Part{2 * S, S, &history_backward_, recipe_.backward_dtype}}) {
    MNT_Fp8ScaleUpdateParams p{};
    p.struct_size = MNT_Fp8ScaleUpdateParams_STRUCT_SIZE;
    p.fp8_max = FormatMax(part.format);
    p.margin = recipe_.margin;
    p.amax_algo = recipe_.amax_algo;
    p.history_length = recipe_.history_length;
    const MNT_Tensor amax = Sub(amax_, part.begin, {part.count});
    const MNT_Tensor scale = Sub(scales_, part.begin, {part.count});
    const MNT_Tensor scale_inv = Sub(scale_invs_, part.begin, {part.count});
    if (auto s = sdk::ToAbsl(client_.Run(MNT_OP_FP8_SCALE_UPDATE, {amax},
                                         {*part.history, scale, scale_inv}, &p));
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("FP8 scale update: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Fp8Scaling::Entry>> Fp8Scaling::Read() const {
  const size_t n = static_cast<size_t>(3 * slots_);
  std::vector<float> scales(n), amax(n);
  if (auto s = sdk::ToAbsl(client_.ToHost(scales.data(), scales_.data, n * sizeof(float)));
      !s.ok()) {
    return s;
  }
  if (auto s = sdk::ToAbsl(client_.ToHost(amax.data(), amax_.data, n * sizeof(float))); !s.ok()) {
    return s;
  }
  std::vector<Entry> entries;
  for (size_t i = 0; i < n; ++i) {
    // A slot no GEMM uses keeps amax 0 and scale 1.
    if (amax[i] == 0 && scales[i] == 1.0f) continue;
    entries.push_back({slot_names_[i], scales[i], amax[i]});
  }
  return entries;
}

std::vector<Fp8Scaling::Stored> Fp8Scaling::StoredTensors() const {
  std::vector<Stored> t = {
      {"fp8.scales", &scales_}, {"fp8.scale_invs", &scale_invs_}, {"fp8.amax", &amax_}};
  if (delayed()) {
    t.push_back({"fp8.history_forward", &history_forward_});
    t.push_back({"fp8.history_backward", &history_backward_});
  }
  return t;
}

absl::Status Fp8Scaling::Save(mantissa::CheckpointData* ckpt) const {
  for (const Stored& s : StoredTensors()) {
    mantissa::TensorData* t = ckpt->add_fp8_scaling();
    t->set_name(s.name);
    t->set_dtype(MNT_DTYPE_F32);
    for (int d = 0; d < s.tensor->rank; ++d) t->add_dims(s.tensor->dims[d]);
    std::string bytes(sdk::SizeBytes(*s.tensor), '\0');
    if (auto st = sdk::ToAbsl(client_.ToHost(bytes.data(), s.tensor->data, bytes.size()));
        !st.ok()) {
      return st;
    }
    t->set_data(std::move(bytes));
  }
  return absl::OkStatus();
}

absl::Status Fp8Scaling::CheckCheckpoint(const mantissa::CheckpointData& ckpt,
                                         const std::string& path) const {
  const std::vector<Stored> stored = StoredTensors();
  auto describe = [](const google::protobuf::RepeatedField<int64_t>& dims) {
    std::string s = "[";
    for (int i = 0; i < dims.size(); ++i) absl::StrAppend(&s, i ? ", " : "", dims[i]);
    return s + "]";
  };
  if (ckpt.fp8_scaling_size() != static_cast<int>(stored.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the checkpoint holds ", ckpt.fp8_scaling_size(),
        " FP8 scaling tensors, this run's recipe (",
        delayed() ? "delayed" : "current", " scaling) keeps ", stored.size()));
  }
  for (size_t i = 0; i < stored.size(); ++i) {
    const mantissa::TensorData& t = ckpt.fp8_scaling(static_cast<int>(i));
    const MNT_Tensor& want = *stored[i].tensor;
    bool same = t.name() == stored[i].name && t.dtype() == MNT_DTYPE_F32 &&
                t.dims_size() == want.rank && t.data().size() == sdk::SizeBytes(want);
    for (int d = 0; same && d < want.rank; ++d) same = t.dims(d) == want.dims[d];
    if (!same) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": checkpoint FP8 state '", t.name(), "' is ", describe(t.dims()),
          ", this run needs '", stored[i].name, "' ", sdk::Describe(want),
          " (another model, or another --precision_options history=)"));
    }
  }
  return absl::OkStatus();
}

absl::Status Fp8Scaling::Restore(const mantissa::CheckpointData& ckpt) {
  const std::vector<Stored> stored = StoredTensors();
  for (size_t i = 0; i < stored.size(); ++i) {
    const std::string& bytes = ckpt.fp8_scaling(static_cast<int>(i)).data();
    if (auto s = sdk::ToAbsl(client_.ToDevice(stored[i].tensor->data, bytes.data(), bytes.size()));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace mnt::trainer
