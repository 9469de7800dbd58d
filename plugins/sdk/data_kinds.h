// Mantissa plugin SDK: the kinds of data a model trains on (ABI 1.12,
// MNT_DataKind): which kind a data spec is, and what a model declares in its
// MNT_ModelData_Extension, as a host or a tool reads it.
//
//   const std::vector<MNT_DataKind> kinds = sdk::DeclaredDataKinds(model_plugin);
//   if (!kinds.empty() && !sdk::Takes(kinds, sdk::DataKindOf(spec))) ...refuse, naming them
//
// A model declares its kinds with sdk::MakeModelDataExtension (export.h); the
// SDK's model layer does it from its Network's kDataKinds (model/model_api.h).
#ifndef MANTISSA_PLUGINS_SDK_DATA_KINDS_H_
#define MANTISSA_PLUGINS_SDK_DATA_KINDS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/extension_chain.h"

namespace mnt::sdk {

// "features", "images", "tokens"; "unknown" for a value this SDK does not
// know.
inline const char* DataKindName(int32_t kind) {
  switch (kind) {
    case MNT_DATA_KIND_FEATURES: return "features";
    case MNT_DATA_KIND_IMAGES: return "images";
    case MNT_DATA_KIND_TOKENS: return "tokens";
    default: return "unknown";
  }
}

// What a kind is, for messages: "feature vectors (f32 [F], one class each)".
inline const char* DataKindDescription(int32_t kind) {
  switch (kind) {
    case MNT_DATA_KIND_FEATURES: return "feature vectors (f32 [F], one class each)";
    case MNT_DATA_KIND_IMAGES: return "images (f32 [H, W] or [C, H, W], one class each)";
    case MNT_DATA_KIND_TOKENS:
      return "token sequences (i32 ids [T], the next token as each target)";
    default: return "an unknown kind of data";
  }
}

// The kind `spec` belongs to, or INVALID when it is none (the host's
// datasets each give one of them).
inline MNT_DataKind DataKindOf(const MNT_DataSpec& spec) {
  const int32_t dtype = RawEnum(spec.input_dtype);
  if (dtype == MNT_DTYPE_F32 && spec.targets_per_example == 1) {
    if (spec.input_rank == 1) return MNT_DATA_KIND_FEATURES;
    if (spec.input_rank == 2 || spec.input_rank == 3) return MNT_DATA_KIND_IMAGES;
  }
  if (dtype == MNT_DTYPE_I32 && spec.input_rank == 1 &&
      spec.targets_per_example == spec.input_dims[0]) {
    return MNT_DATA_KIND_TOKENS;
  }
  return MNT_DATA_KIND_INVALID;
}

// The plugin's data extension, or NULL (it declares none, or was built
// against ABI < 1.12). Its array is the plugin's static storage.
inline const MNT_ModelData_Extension* FindModelDataExtension(const MNT_Plugin_Api* plugin) {
  const MNT_Extension_Header* h = FindExtension(plugin, MNT_EXTENSION_TYPE_MODEL_DATA);
  if (h == nullptr || h->base.struct_size < MNT_ModelData_Extension_STRUCT_SIZE) return nullptr;
  const auto* d = reinterpret_cast<const MNT_ModelData_Extension*>(h);
  if (d->kinds == nullptr && d->num_kinds > 0) return nullptr;
  return d;
}

// The kinds of data the model declares it takes, those this SDK knows, in
// MNT_DataKind order and once each; empty when it declares nothing (then
// only its Model_Create can say).
inline std::vector<MNT_DataKind> DeclaredDataKinds(const MNT_Plugin_Api* plugin) {
  std::vector<MNT_DataKind> kinds;
  const MNT_ModelData_Extension* d = FindModelDataExtension(plugin);
  if (d == nullptr) return kinds;
  for (MNT_DataKind k : AbiEnum<MNT_DataKind>::kValues) {
    if (k == MNT_DATA_KIND_INVALID) continue;
    if (std::find(d->kinds, d->kinds + d->num_kinds, static_cast<int32_t>(k)) !=
        d->kinds + d->num_kinds) {
      kinds.push_back(k);
    }
  }
  return kinds;
}

inline bool Takes(const std::vector<MNT_DataKind>& kinds, MNT_DataKind kind) {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

// "feature vectors (...) or images (...)": what `kinds` describe.
inline std::string DescribeDataKinds(const std::vector<MNT_DataKind>& kinds) {
  std::string out;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) out += i + 1 == kinds.size() ? " or " : ", ";
    out += DataKindDescription(kinds[i]);
  }
  return out;
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_DATA_KINDS_H_
