// Mantissa models: the checks every model makes on MNT_Model_Create_Args,
// written once. A model parses its options, then calls CheckCreateArgs with
// its own data-spec check; what comes back is the backend, the precision,
// the batch limit and the op facade (ops.h) its network runs on.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_CREATE_ARGS_H_
#define MANTISSA_PLUGINS_SDK_MODEL_CREATE_ARGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model/device_arena.h"
#include "plugins/sdk/model/ops.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {

// What a model asks of the create args, beyond its data.
struct ModelRequirements {
  std::string name;         // "gpt2": starts every message ("gpt2: ...")
  std::vector<MNT_Op> ops;  // every op its Forward and Backward launch
  std::string ops_note;     // after "does not support X", e.g. " (ABI 1.2)"
  // Fused ops the facade uses where the backend supports them (ABI 1.6+).
  std::vector<MNT_Op> optional_ops = {};
};

// A model being created: checked create args and the facade over them.
struct ModelSetup {
  std::string name;
  sdk::BackendClient client;
  MNT_ModelPrecision precision{};
  int64_t max_batch = 0;
  Ops ops;
};

// In this order: a backend (plugin with a backend API, and an instance),
// data_spec's struct_size, `check_data` (the model's own data checks),
// precision (struct_size, float storage dtypes, a known compute mode),
// max_batch_size >= 1, and the backend's support of every required op.
sdk::Status CheckCreateArgs(
    const ModelRequirements& requirements, const MNT_Model_Create_Args& args,
    const std::function<sdk::Status(const MNT_DataSpec&)>& check_data,
    ModelSetup* out);

// Allocates a model's activation plan, refusing one of more than 1e15
// bytes with "<model>: activations for max_batch_size N would take X
// bytes" before asking the backend.
sdk::Status AllocateActivations(const ModelSetup& setup, DeviceArena* arena);

// Implementation (header-only: the SDK ships no library).

namespace detail {


// Plans beyond this are refused before the backend is asked.
constexpr double kMaxActivationBytes = 1e15;

// Enum fields from the host are read as int32 first (plugins/sdk/abi_enum.h).
inline bool IsComputeMode(int32_t m) {
  return m == MNT_COMPUTE_F32 || m == MNT_COMPUTE_TF32 ||
         m == MNT_COMPUTE_BF16 || m == MNT_COMPUTE_F16;
}

inline sdk::Status CheckFloatDType(const std::string& model, const char* what, const MNT_DType& field) {
  const std::optional<MNT_DType> t = sdk::ReadEnum(field);
  if (!t) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: precision.%s is %d, expected f32, f16 or bf16", model.c_str(), what,
        sdk::RawEnum(field)));
  }
  if (!sdk::IsFloatStorage(*t)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: precision.%s is %s, expected f32, f16 or bf16", model.c_str(),
        what, sdk::DTypeName(*t)));
  }
  return sdk::Status::Ok();
}

inline sdk::Status CheckPrecision(const std::string& model, const MNT_ModelPrecision& p) {
  if (p.struct_size < MNT_ModelPrecision_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: precision.struct_size %zu is smaller than %zu", model.c_str(),
        p.struct_size, static_cast<size_t>(MNT_ModelPrecision_STRUCT_SIZE)));
  }
  MNT_RETURN_IF_ERROR(CheckFloatDType(model, "weight_dtype", p.weight_dtype));
  MNT_RETURN_IF_ERROR(
      CheckFloatDType(model, "gradient_dtype", p.gradient_dtype));
  MNT_RETURN_IF_ERROR(
      CheckFloatDType(model, "activation_dtype", p.activation_dtype));
  if (!IsComputeMode(sdk::RawEnum(p.matmul_compute))) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: precision.matmul_compute is %d, not a valid compute mode",
        model.c_str(), sdk::RawEnum(p.matmul_compute)));
  }
  return sdk::Status::Ok();
}

}  // namespace detail

inline sdk::Status CheckCreateArgs(
    const ModelRequirements& req, const MNT_Model_Create_Args& args,
    const std::function<sdk::Status(const MNT_DataSpec&)>& check_data, ModelSetup* out) {
  const std::string& model = req.name;
  if (args.backend_plugin == nullptr ||
      args.backend_plugin->backend == nullptr || args.backend == nullptr) {
    return sdk::InvalidArgument(
        model + ": backend_plugin (with a backend API) and backend are required");
  }
  const MNT_DataSpec& data = args.data_spec;
  if (data.struct_size < MNT_DataSpec_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: data_spec.struct_size %zu is smaller than %zu", model.c_str(),
        data.struct_size, static_cast<size_t>(MNT_DataSpec_STRUCT_SIZE)));
  }
  // The models compare input_dtype as the enum: known values only.
  if (!sdk::IsKnownEnum<MNT_DType>(sdk::RawEnum(data.input_dtype))) {
    return sdk::InvalidArgument(sdk::Format("%s: data_spec.input_dtype is %d, not a dtype",
                                            model.c_str(), sdk::RawEnum(data.input_dtype)));
  }
  MNT_RETURN_IF_ERROR(check_data(data));
  MNT_RETURN_IF_ERROR(detail::CheckPrecision(model, args.precision));
  // The upper bound keeps batch x width x sequence products inside int64.
  constexpr int64_t kMaxBatch = int64_t{1} << 31;
  if (args.max_batch_size < 1 || args.max_batch_size > kMaxBatch) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: max_batch_size is %lld, expected 1 to %lld", model.c_str(),
        static_cast<long long>(args.max_batch_size), static_cast<long long>(kMaxBatch)));
  }
  ModelSetup setup;
  setup.name = model;
  setup.client = sdk::BackendClient(args.backend_plugin, args.backend);
  setup.precision = args.precision;
  setup.max_batch = args.max_batch_size;
  MNT_RETURN_IF_ERROR(Ops::Create(setup.client, setup.precision.matmul_compute,
                                  req.ops, model, req.ops_note, &setup.ops));
  MNT_RETURN_IF_ERROR(setup.ops.AskOptional(req.optional_ops));
  Fp8GemmConfig fp8;
  MNT_RETURN_IF_ERROR(ReadFp8GemmConfig(model, args, &fp8));
  if (fp8.enabled()) MNT_RETURN_IF_ERROR(setup.ops.EnableFp8(fp8, model));
  *out = std::move(setup);
  return sdk::Status::Ok();
}

inline sdk::Status AllocateActivations(const ModelSetup& setup, DeviceArena* arena) {
  if (arena->requested_bytes() > detail::kMaxActivationBytes) {
    return sdk::ResourceExhausted(sdk::Format(
        "%s: activations for max_batch_size %lld would take %.3g bytes",
        setup.name.c_str(), static_cast<long long>(setup.max_batch),
        arena->requested_bytes()));
  }
  return arena->Allocate(setup.client, MNT_MEMORY_ACTIVATIONS);
}

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_CREATE_ARGS_H_
