// Mantissa models: the checks every model makes on MNT_Model_Create_Args,
// written once. A model parses its options, then calls CheckCreateArgs with
// its own data-spec check; what comes back is the backend, the precision,
// the batch limit and the op facade (ops.h) its network runs on.
#ifndef MANTISSA_MODELS_COMMON_CREATE_ARGS_H_
#define MANTISSA_MODELS_COMMON_CREATE_ARGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/common/device_arena.h"
#include "models/common/ops.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"

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

}  // namespace mnt::models

#endif  // MANTISSA_MODELS_COMMON_CREATE_ARGS_H_
