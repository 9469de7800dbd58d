#include "plugins/backends/cuda/testing/gpu_test_support.h"

#include <cuda_runtime.h>

#include <glob.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "plugins/backends/common/tensor_access.h"
#include "plugins/backends/cuda/cuda_backend.h"
#include "plugins/backends/cuda/testing/backend_plugins.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda::testing {

std::string NoDeviceReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
  }
  return count == 0 ? "cudaGetDeviceCount: 0 devices" : "";
}

namespace {
// "13.0" from CUDA's integer version (13000), or "none (<error>)".
std::string VersionText(cudaError_t err, int version) {
  if (err != cudaSuccess) return std::string("none (") + cudaGetErrorString(err) + ")";
  if (version == 0) return "none (no driver)";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}
}  // namespace

std::string VisibleGpuReport() {
  std::string shown;
  glob_t g{};
  if (glob("/dev/nvidia[0-9]*", 0, nullptr, &g) == 0 && g.gl_pathc > 0) {
    shown = std::string(g.gl_pathv[0]) + " exists";
  }
  globfree(&g);
  const char* expect = std::getenv("MANTISSA_EXPECT_GPU");
  if (shown.empty() && expect != nullptr && std::strcmp(expect, "1") == 0) {
    shown = "MANTISSA_EXPECT_GPU=1";
  }
  if (shown.empty()) return "";
  int driver = 0, runtime = 0;
  const cudaError_t driver_err = cudaDriverGetVersion(&driver);
  const cudaError_t runtime_err = cudaRuntimeGetVersion(&runtime);
  (void)cudaGetLastError();
  return shown + "; CUDA driver " + VersionText(driver_err, driver) + ", runtime " +
         VersionText(runtime_err, runtime);
}

uint32_t FreshSeed() {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  return seed;
}

std::vector<float> RoundedTo(const std::vector<float>& v, MNT_DType dtype) {
  std::vector<float> r(v);
  for (float& e : r) {
    if (dtype == MNT_DTYPE_F16) e = RoundToHalf(e);
    if (dtype == MNT_DTYPE_BF16) e = RoundToBf16(e);
  }
  return r;
}

int64_t Pair::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}
MNT_Tensor Pair::cpu() const {
  return sdk::MakeTensor(on_cpu.data(), dtype, static_cast<int32_t>(dims.size()),
                         dims.data());
}
MNT_Tensor Pair::cuda() const {
  return sdk::MakeTensor(on_cuda.data(), dtype, static_cast<int32_t>(dims.size()),
                         dims.data());
}

namespace {
MNT_Backend* Create(const MNT_Plugin_Api* api, const char* options = nullptr) {
  MNT_Backend_Create_Args a{};
  a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  a.options = options;
  const sdk::Status s = sdk::StatusFromPluginError(api, api->backend->Backend_Create(&a));
  EXPECT_TRUE(s.ok()) << api->name << ": " << s.message();
  return s.ok() ? a.backend : nullptr;
}
void Destroy(const MNT_Plugin_Api* api, MNT_Backend* b) {
  MNT_Backend_Destroy_Args a{};
  a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  a.backend = b;
  EXPECT_TRUE(sdk::StatusFromPluginError(api, api->backend->Backend_Destroy(&a)).ok());
}
}  // namespace

DualBackend::~DualBackend() {
  // Buffers hold pointers to the clients; tests drop them before this.
  if (cuda_instance_) Destroy(CudaBackendPluginApi(), cuda_instance_);
  if (cpu_instance_) Destroy(BackendPlugin("cpu"), cpu_instance_);
}

void DualBackend::Init(const char* cuda_options) {
  cuda_instance_ = Create(CudaBackendPluginApi(), cuda_options);
  cpu_instance_ = Create(BackendPlugin("cpu"));
  ASSERT_NE(cuda_instance_, nullptr);
  ASSERT_NE(cpu_instance_, nullptr);
  cuda_ = sdk::BackendClient(CudaBackendPluginApi(), cuda_instance_);
  cpu_ = sdk::BackendClient(BackendPlugin("cpu"), cpu_instance_);
}

namespace {
std::vector<uint8_t> Encode(const std::vector<float>& values, MNT_DType dtype) {
  std::vector<uint8_t> bytes(values.size() * sdk::DTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) StoreFromFloat(bytes.data(), dtype, i, values[i]);
  return bytes;
}
}  // namespace

static std::unique_ptr<Pair> UploadBytes(const sdk::BackendClient& cuda,
                                         const sdk::BackendClient& cpu,
                                         const std::vector<uint8_t>& bytes,
                                         MNT_DType dtype, std::vector<int64_t> dims) {
  auto p = std::make_unique<Pair>();
  p->dtype = dtype;
  p->dims = std::move(dims);
  const size_t size = bytes.size();
  EXPECT_TRUE(cuda.Allocate(size, MNT_MEMORY_DATA, &p->on_cuda).ok());
  EXPECT_TRUE(cpu.Allocate(size, MNT_MEMORY_DATA, &p->on_cpu).ok());
  if (size > 0) {
    const sdk::Status s1 = cuda.ToDevice(p->on_cuda.data(), bytes.data(), size);
    const sdk::Status s2 = cpu.ToDevice(p->on_cpu.data(), bytes.data(), size);
    EXPECT_TRUE(s1.ok()) << s1.message();
    EXPECT_TRUE(s2.ok()) << s2.message();
  }
  return p;
}

std::unique_ptr<Pair> DualBackend::Upload(const std::vector<float>& values,
                                          MNT_DType dtype, std::vector<int64_t> dims) {
  return UploadBytes(cuda_, cpu_, Encode(values, dtype), dtype, std::move(dims));
}

std::unique_ptr<Pair> DualBackend::UploadI32(const std::vector<int32_t>& values,
                                             std::vector<int64_t> dims) {
  std::vector<uint8_t> bytes(values.size() * 4);
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return UploadBytes(cuda_, cpu_, bytes, MNT_DTYPE_I32, std::move(dims));
}

std::unique_ptr<Pair> DualBackend::UploadRaw(const std::vector<uint8_t>& bytes,
                                             MNT_DType dtype, std::vector<int64_t> dims) {
  return UploadBytes(cuda_, cpu_, bytes, dtype, std::move(dims));
}

std::unique_ptr<Pair> DualBackend::Poisoned(MNT_DType dtype, std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return Upload(std::vector<float>(n, NAN), dtype, std::move(dims));
}

std::vector<uint8_t> DualBackend::Bytes(const Pair& p, bool from_cuda) {
  const sdk::BackendClient& c = from_cuda ? cuda_ : cpu_;
  EXPECT_TRUE(c.Synchronize().ok());
  std::vector<uint8_t> bytes(p.numel() * sdk::DTypeSize(p.dtype));
  if (!bytes.empty()) {
    const sdk::Status s =
        c.ToHost(bytes.data(), from_cuda ? p.on_cuda.data() : p.on_cpu.data(), bytes.size());
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return bytes;
}

std::vector<float> DualBackend::Download(const Pair& p, bool from_cuda) {
  const std::vector<uint8_t> bytes = Bytes(p, from_cuda);
  std::vector<float> v(p.numel());
  for (int64_t i = 0; i < p.numel(); ++i) {
    if (p.dtype == MNT_DTYPE_I32) {
      int32_t x;
      std::memcpy(&x, bytes.data() + 4 * i, 4);
      v[i] = static_cast<float>(x);
    } else {
      v[i] = LoadAsFloat(bytes.data(), p.dtype, i);
    }
  }
  return v;
}

namespace {
std::vector<MNT_Tensor> Views(const std::vector<const Pair*>& ps, bool cuda) {
  std::vector<MNT_Tensor> v;
  for (const Pair* p : ps) {
    v.push_back(p == nullptr ? sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {})
                             : (cuda ? p->cuda() : p->cpu()));
  }
  return v;
}
}  // namespace

sdk::Status DualBackend::RunCuda(MNT_Op op, const std::vector<const Pair*>& in,
                                 const std::vector<const Pair*>& out,
                                 const void* params) {
  return cuda_.Run(op, Views(in, true), Views(out, true), params);
}

sdk::Status DualBackend::RunBoth(MNT_Op op, const std::vector<const Pair*>& in,
                                 const std::vector<const Pair*>& out,
                                 const void* params) {
  const sdk::Status cpu_status = cpu_.Run(op, Views(in, false), Views(out, false), params);
  sdk::Status cuda_status = RunCuda(op, in, out, params);
  if (cuda_status.ok()) cuda_status = cuda_.Synchronize();
  EXPECT_EQ(cpu_status.ok(), cuda_status.ok())
      << "cpu: " << cpu_status.message() << " | cuda: " << cuda_status.message();
  return cuda_status;
}

::testing::AssertionResult AllClose(const std::vector<float>& got,
                                    const std::vector<float>& want, double rtol,
                                    double atol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "size " << got.size() << " vs " << want.size();
  }
  double worst = -1;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) || std::isnan(want[i])) {  // NaN never passes
      return ::testing::AssertionFailure()
             << "NaN at " << i << ": got " << got[i] << ", want " << want[i];
    }
    if (std::isinf(got[i]) || std::isinf(want[i])) {
      if (got[i] == want[i]) continue;
      return ::testing::AssertionFailure()
             << "inf mismatch at " << i << ": got " << got[i] << ", want " << want[i];
    }
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double allowed = atol + rtol * std::fabs(want[i]);
    if (err > allowed && err - allowed > worst) {
      worst = err - allowed;
      worst_i = i;
    }
  }
  if (worst >= 0) {
    return ::testing::AssertionFailure()
           << "element " << worst_i << ": got " << got[worst_i] << ", want "
           << want[worst_i] << " (rtol " << rtol << ", atol " << atol << ")";
  }
  return ::testing::AssertionSuccess();
}

double StorageTolerance(MNT_DType dtype) {
  switch (dtype) {
    case MNT_DTYPE_BF16: return 1e-2;
    case MNT_DTYPE_F16: return 2e-3;
    default: return 1e-5;
  }
}

}  // namespace mnt::cuda::testing
