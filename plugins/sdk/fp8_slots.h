// Where a model's FP8 GEMMs keep their scales (ABI 1.10, docs/abi.md "FP8
// scaling slots"), computed the same way by the host that allocates the
// scale tensors and by the model that reads them.
//
// One slot per GEMM weight matrix, found from the parameter shapes alone so
// that no model has to declare its GEMMs: a rank-2 parameter is one matrix,
// a rank-3 one is dims[0] matrices stacked by layer (GPT-2's [L, out, in]),
// other ranks (biases, convolution filters) hold none. Slots are numbered
// in parameter order, then by layer. A slot whose parameter never feeds a
// GEMM (a layer norm's [L, C] weights, GPT-2's position table) stays
// unused: its amax is never written and its scale stays 1.
//
// The scale tensors are F32 [3, S]: row kFp8Input holds the GEMM inputs
// (activations), kFp8Weight the weights, kFp8GradOutput the output
// gradients of the backward GEMMs.
#ifndef MANTISSA_PLUGINS_SDK_FP8_SLOTS_H_
#define MANTISSA_PLUGINS_SDK_FP8_SLOTS_H_

#include <cstdint>
#include <vector>

namespace mnt::sdk {

enum Fp8Role : int { kFp8Input = 0, kFp8Weight = 1, kFp8GradOutput = 2 };
inline constexpr int kFp8Roles = 3;

// Largest finite value of an FP8 format (OCP): E4M3 448, E5M2 57344.
inline constexpr float kE4M3Max = 448.0f;
inline constexpr float kE5M2Max = 57344.0f;

// The GEMM weight matrices a parameter of these dims holds.
inline int64_t Fp8SlotsOfParam(const std::vector<int64_t>& dims) {
  if (dims.size() == 2) return 1;
  if (dims.size() == 3) return dims[0];
  return 0;
}

// first[i]: the slot of parameter i's first matrix; total: S.
struct Fp8SlotLayout {
  std::vector<int64_t> first;
  int64_t total = 0;
};

inline Fp8SlotLayout MakeFp8SlotLayout(const std::vector<std::vector<int64_t>>& param_dims) {
  Fp8SlotLayout layout;
  for (const auto& dims : param_dims) {
    layout.first.push_back(layout.total);
    layout.total += Fp8SlotsOfParam(dims);
  }
  return layout;
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_FP8_SLOTS_H_
