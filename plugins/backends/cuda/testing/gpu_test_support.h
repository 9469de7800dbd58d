// GPU test support: skip without a device, and run one op on the cuda and
// the cpu backend (both loaded from their plugin files, see
// backend_plugins.h, and called through their C tables) on the same inputs
// so kernels are checked against the reference.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_GPU_TEST_SUPPORT_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_GPU_TEST_SUPPORT_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"

namespace mnt::cuda::testing {

// "" when a CUDA device is usable, else why not (e.g. the
// cudaGetDeviceCount error).
std::string NoDeviceReason();

// "" when this machine shows no GPU; else what shows one (NVIDIA device
// nodes such as /dev/nvidia0, or MANTISSA_EXPECT_GPU=1, which the device
// check sets), with the driver and runtime versions. A test that cannot
// use the GPU on such a machine fails instead of skipping: a broken CUDA
// setup (a driver older than the runtime, a missing library) must not
// read as "no device".
std::string VisibleGpuReport();

#define MNT_SKIP_WITHOUT_GPU()                                                     \
  do {                                                                             \
    const std::string mnt_reason_ = ::mnt::cuda::testing::NoDeviceReason();        \
    if (!mnt_reason_.empty()) {                                                    \
      const std::string mnt_visible_ = ::mnt::cuda::testing::VisibleGpuReport();   \
      if (!mnt_visible_.empty()) {                                                 \
        GTEST_FAIL() << "a GPU is present but unusable: " << mnt_reason_ << " ("    \
                     << mnt_visible_ << ")";                                       \
      }                                                                            \
      std::printf("SKIPPED: no CUDA device (%s)\n", mnt_reason_.c_str());          \
      GTEST_SKIP() << "no CUDA device (" << mnt_reason_ << ")";                    \
    }                                                                              \
  } while (0)

// A fresh seed, printed so a failure can be replayed.
uint32_t FreshSeed();

// Values rounded to what `dtype` stores (what both backends will read).
std::vector<float> RoundedTo(const std::vector<float>& v, MNT_DType dtype);

// One logical tensor with a copy on each backend.
struct Pair {
  sdk::DeviceBuffer on_cpu, on_cuda;
  MNT_DType dtype = MNT_DTYPE_F32;
  std::vector<int64_t> dims;
  int64_t numel() const;
  MNT_Tensor cpu() const;
  MNT_Tensor cuda() const;
};

class DualBackend {
 public:
  DualBackend() = default;
  DualBackend(const DualBackend&) = delete;
  DualBackend& operator=(const DualBackend&) = delete;
  ~DualBackend();

  // Creates both instances (the cuda one with `cuda_options`, e.g.
  // "attention=fallback"); fails the calling test on error.
  void Init(const char* cuda_options = nullptr);

  const sdk::BackendClient& cuda() const { return cuda_; }
  const sdk::BackendClient& cpu() const { return cpu_; }

  // `values` stored as `dtype` on both backends.
  std::unique_ptr<Pair> Upload(const std::vector<float>& values, MNT_DType dtype,
                               std::vector<int64_t> dims);
  std::unique_ptr<Pair> UploadI32(const std::vector<int32_t>& values,
                                  std::vector<int64_t> dims);
  // `bytes` as they are (e.g. FP8 codes), numel(dims) * DTypeSize(dtype).
  std::unique_ptr<Pair> UploadRaw(const std::vector<uint8_t>& bytes, MNT_DType dtype,
                                  std::vector<int64_t> dims);
  // An output filled with NaN on both sides (catches unwritten elements).
  std::unique_ptr<Pair> Poisoned(MNT_DType dtype, std::vector<int64_t> dims);
  // Contents as fp32 (after Synchronize); from_cuda picks the side.
  std::vector<float> Download(const Pair& p, bool from_cuda);
  // Raw bytes, for bit-identity checks.
  std::vector<uint8_t> Bytes(const Pair& p, bool from_cuda);

  // Runs `op` on both backends; returns the cuda status and expects the cpu
  // one to match in ok-ness.
  sdk::Status RunBoth(MNT_Op op, const std::vector<const Pair*>& in,
                      const std::vector<const Pair*>& out,
                      const void* params = nullptr);
  sdk::Status RunCuda(MNT_Op op, const std::vector<const Pair*>& in,
                      const std::vector<const Pair*>& out,
                      const void* params = nullptr);

 private:
  MNT_Backend* cuda_instance_ = nullptr;
  MNT_Backend* cpu_instance_ = nullptr;
  sdk::BackendClient cuda_, cpu_;
};

// got vs want element-wise: |got - want| <= atol + rtol * |want|; any NaN
// (on either side) or a size mismatch fails. Reports the worst element.
::testing::AssertionResult AllClose(const std::vector<float>& got,
                                    const std::vector<float>& want, double rtol,
                                    double atol);

// Tolerance for a value stored in `dtype` (its rounding dominates).
double StorageTolerance(MNT_DType dtype);

// The fixture the kernel tests share: skips without a device, seeds a fresh
// generator, creates both backends (the cuda one with options()).
class DualBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MNT_SKIP_WITHOUT_GPU();
    rng_.seed(FreshSeed());
    d_.Init(options());
  }
  // Backend options for the cuda instance; nullptr = its defaults.
  virtual const char* options() const { return nullptr; }
  // n values from N(0, scale^2).
  std::vector<float> Random(int64_t n, float scale = 1.0f) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& e : v) e = dist(rng_);
    return v;
  }
  std::mt19937 rng_;
  DualBackend d_;
};

}  // namespace mnt::cuda::testing

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_GPU_TEST_SUPPORT_H_
