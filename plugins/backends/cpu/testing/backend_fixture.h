// Test helper: a CPU backend created through the C function table, plus
// upload/download of tensors as double values in any storage dtype.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_TESTING_BACKEND_FIXTURE_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_TESTING_BACKEND_FIXTURE_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu::testing {

// Relative tolerances the project states per precision.
inline double DTypeTolerance(MNT_DType t) {
  return t == MNT_DTYPE_F32 ? 1e-5 : 1e-2;  // f16/bf16 storage
}
inline double ComputeTolerance(MNT_ComputeMode m) {
  switch (m) {
    case MNT_COMPUTE_F32: return 1e-5;
    case MNT_COMPUTE_TF32: return 1e-3;
    default: return 1e-2;
  }
}

inline const std::vector<MNT_DType>& FloatDTypes() {
  static const std::vector<MNT_DType> v = {MNT_DTYPE_F32, MNT_DTYPE_F16,
                                           MNT_DTYPE_BF16};
  return v;
}

class BackendFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Creates a backend with `options`; returns the error message ("" on OK).
  std::string TryCreate(const char* options, int ordinal = 0);

  const MNT_Backend_Api* api() const { return plugin_->backend; }
  const sdk::BackendClient& client() const { return client_; }
  MNT_Backend* backend() const { return client_.backend(); }

  // A fresh seed per test, printed so a failure can be replayed.
  std::mt19937& rng() { return rng_; }
  std::vector<double> Random(size_t n, double lo = -1.0, double hi = 1.0);

  // Device tensor holding `values` rounded into `dtype` (I32 for ids; the
  // FP8 dtypes with the saturating casts of common/fp8_convert.h).
  MNT_Tensor Upload(const std::vector<double>& values, MNT_DType dtype,
                    std::initializer_list<int64_t> dims,
                    MNT_MemoryCategory category = MNT_MEMORY_ACTIVATIONS);
  MNT_Tensor UploadI32(const std::vector<int32_t>& values,
                       std::initializer_list<int64_t> dims);
  // Device tensor holding exactly `bytes` (e.g. chosen FP8 codes).
  MNT_Tensor UploadBytes(const std::vector<uint8_t>& bytes, MNT_DType dtype,
                         std::initializer_list<int64_t> dims);
  // Uninitialised device tensor, filled with NaN (float dtypes) so that a
  // kernel that forgets to write shows up.
  MNT_Tensor Empty(MNT_DType dtype, std::initializer_list<int64_t> dims);
  std::vector<double> Download(const MNT_Tensor& t);
  // Raw bytes (for bit-identity checks).
  std::vector<uint8_t> Bytes(const MNT_Tensor& t);

  // The values `dtype` storage actually holds for `values`.
  static std::vector<double> Stored(const std::vector<double>& values,
                                    MNT_DType dtype);

  // Runs an op; returns the status (message + code).
  sdk::Status Run(MNT_Op op, const std::vector<MNT_Tensor>& in,
                  const std::vector<MNT_Tensor>& out,
                  const void* params = nullptr) {
    return client_.Run(op, in, out, params);
  }

 private:
  MNT_Tensor Allocate(MNT_DType dtype, std::initializer_list<int64_t> dims,
                      MNT_MemoryCategory category);

  const MNT_Plugin_Api* plugin_ = nullptr;
  sdk::BackendClient client_;
  std::vector<sdk::DeviceBuffer> buffers_;
  std::mt19937 rng_;
};

// Every element finite and within tol * scale[i] of want[i].
::testing::AssertionResult AllClose(const std::vector<double>& got,
                                    const std::vector<double>& want,
                                    const std::vector<double>& scale,
                                    double tol);
// Scale = max(|want|, floor): a relative check that tolerates values near 0.
::testing::AssertionResult AllCloseRelative(const std::vector<double>& got,
                                            const std::vector<double>& want,
                                            double tol, double floor = 1.0);

// One operand of RunOnFreshBackend: its dtype, dims and bytes (for an
// output, what it holds before the op runs).
struct HostOperand {
  MNT_DType dtype;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

// Runs `op` once on a fresh CPU backend created with `options` (e.g.
// "threads=4"; for checks that a kernel's bits do not depend on the team)
// and returns every output's bytes after it; failures are test failures.
std::vector<std::vector<uint8_t>> RunOnFreshBackend(const char* options, MNT_Op op,
                                                    const std::vector<HostOperand>& in,
                                                    const std::vector<HostOperand>& out,
                                                    const void* params);

}  // namespace mnt::cpu::testing

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_TESTING_BACKEND_FIXTURE_H_
