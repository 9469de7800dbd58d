#include "plugins/backends/cpu/testing/backend_fixture.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/fp8_convert.h"
#include "plugins/backends/cpu/cpu_backend.h"

namespace mnt::cpu::testing {

void BackendFixture::SetUp() {
  plugin_ = CpuBackendPluginApi();
  ASSERT_NE(plugin_, nullptr);
  ASSERT_NE(plugin_->backend, nullptr);
  const uint32_t seed = std::random_device{}();
  std::printf("[ seed     ] %u\n", seed);
  RecordProperty("seed", std::to_string(seed));
  rng_.seed(seed);
  // The BUILD runs each test once per GEMM engine through this variable.
  const char* options = std::getenv("MANTISSA_TEST_BACKEND_OPTIONS");
  if (options != nullptr) std::printf("[ options  ] %s\n", options);
  const std::string error = TryCreate(options);
  if (error.find("has no bf16 matmul on this CPU") != std::string::npos) {
    GTEST_SKIP() << error;  // the native bf16 variant, on a CPU without it
  }
  ASSERT_EQ(error, "");
}

void BackendFixture::TearDown() {
  buffers_.clear();  // frees through the backend before it is destroyed
  if (client_.backend() != nullptr) {
    MNT_Backend_Destroy_Args a{};
    a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    a.backend = client_.backend();
    EXPECT_TRUE(sdk::StatusFromPluginError(plugin_, api()->Backend_Destroy(&a)).ok());
  }
}

std::string BackendFixture::TryCreate(const char* options, int ordinal) {
  MNT_Backend_Create_Args a{};
  a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  a.options = options;
  a.device_ordinal = ordinal;
  const sdk::Status s =
      sdk::StatusFromPluginError(plugin_, api()->Backend_Create(&a));
  if (!s.ok()) return s.message();
  if (client_.backend() == nullptr) {
    client_ = sdk::BackendClient(plugin_, a.backend);
  } else {  // a second instance is only probed
    MNT_Backend_Destroy_Args d{};
    d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    d.backend = a.backend;
    sdk::StatusFromPluginError(plugin_, api()->Backend_Destroy(&d));
  }
  return "";
}

std::vector<double> BackendFixture::Random(size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& e : v) e = dist(rng_);
  return v;
}

std::vector<double> BackendFixture::Stored(const std::vector<double>& values,
                                           MNT_DType dtype) {
  std::vector<double> v(values.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float f = static_cast<float>(values[i]);
    switch (dtype) {
      case MNT_DTYPE_F16: v[i] = RoundToHalf(f); break;
      case MNT_DTYPE_BF16: v[i] = RoundToBf16(f); break;
      case MNT_DTYPE_F32: v[i] = f; break;
      case MNT_DTYPE_F8_E4M3: v[i] = RoundToFp8E4M3(f); break;
      case MNT_DTYPE_F8_E5M2: v[i] = RoundToFp8E5M2(f); break;
      default: v[i] = values[i]; break;
    }
  }
  return v;
}

MNT_Tensor BackendFixture::Allocate(MNT_DType dtype,
                                    std::initializer_list<int64_t> dims,
                                    MNT_MemoryCategory category) {
  MNT_Tensor t = sdk::MakeTensor(nullptr, dtype, dims);
  sdk::DeviceBuffer buffer;
  const sdk::Status s = client_.Allocate(sdk::SizeBytes(t), category, &buffer);
  EXPECT_TRUE(s.ok()) << s.message();
  t.data = buffer.data();
  buffers_.push_back(std::move(buffer));
  return t;
}

MNT_Tensor BackendFixture::Upload(const std::vector<double>& values,
                                  MNT_DType dtype,
                                  std::initializer_list<int64_t> dims,
                                  MNT_MemoryCategory category) {
  MNT_Tensor t = Allocate(dtype, dims, category);
  EXPECT_EQ(static_cast<int64_t>(values.size()), sdk::NumElements(t));
  std::vector<uint8_t> host(sdk::SizeBytes(t));
  for (size_t i = 0; i < values.size(); ++i) {
    const float f = static_cast<float>(values[i]);
    switch (dtype) {
      case MNT_DTYPE_F32: std::memcpy(&host[4 * i], &f, 4); break;
      case MNT_DTYPE_F16: {
        const uint16_t h = FloatToHalfBits(f);
        std::memcpy(&host[2 * i], &h, 2);
        break;
      }
      case MNT_DTYPE_BF16: {
        const uint16_t b = FloatToBf16Bits(f);
        std::memcpy(&host[2 * i], &b, 2);
        break;
      }
      case MNT_DTYPE_I32: {
        const int32_t x = static_cast<int32_t>(values[i]);
        std::memcpy(&host[4 * i], &x, 4);
        break;
      }
      case MNT_DTYPE_F8_E4M3: host[i] = FloatToFp8E4M3Bits(f); break;
      case MNT_DTYPE_F8_E5M2: host[i] = FloatToFp8E5M2Bits(f); break;
      default: ADD_FAILURE() << "Upload: unsupported dtype"; break;
    }
  }
  const sdk::Status s = client_.ToDevice(t.data, host.data(), host.size());
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

MNT_Tensor BackendFixture::UploadBytes(const std::vector<uint8_t>& bytes, MNT_DType dtype,
                                       std::initializer_list<int64_t> dims) {
  MNT_Tensor t = Allocate(dtype, dims, MNT_MEMORY_ACTIVATIONS);
  EXPECT_EQ(bytes.size(), sdk::SizeBytes(t));
  const sdk::Status s = client_.ToDevice(t.data, bytes.data(), bytes.size());
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

MNT_Tensor BackendFixture::UploadI32(const std::vector<int32_t>& values,
                                     std::initializer_list<int64_t> dims) {
  std::vector<double> v(values.begin(), values.end());
  return Upload(v, MNT_DTYPE_I32, dims, MNT_MEMORY_DATA);
}

MNT_Tensor BackendFixture::Empty(MNT_DType dtype,
                                 std::initializer_list<int64_t> dims) {
  MNT_Tensor t = sdk::MakeTensor(nullptr, dtype, dims);
  std::vector<double> nan(sdk::NumElements(t),
                          dtype == MNT_DTYPE_I32
                              ? -7.0
                              : std::numeric_limits<double>::quiet_NaN());
  return Upload(nan, dtype, dims, MNT_MEMORY_ACTIVATIONS);
}

std::vector<uint8_t> BackendFixture::Bytes(const MNT_Tensor& t) {
  std::vector<uint8_t> host(sdk::SizeBytes(t));
  const sdk::Status s = client_.ToHost(host.data(), t.data, host.size());
  EXPECT_TRUE(s.ok()) << s.message();
  return host;
}

std::vector<double> BackendFixture::Download(const MNT_Tensor& t) {
  const std::vector<uint8_t> host = Bytes(t);
  std::vector<double> v(sdk::NumElements(t));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype) {
      case MNT_DTYPE_F32: {
        float f;
        std::memcpy(&f, &host[4 * i], 4);
        v[i] = f;
        break;
      }
      case MNT_DTYPE_F16: {
        uint16_t h;
        std::memcpy(&h, &host[2 * i], 2);
        v[i] = HalfBitsToFloat(h);
        break;
      }
      case MNT_DTYPE_BF16: {
        uint16_t b;
        std::memcpy(&b, &host[2 * i], 2);
        v[i] = Bf16BitsToFloat(b);
        break;
      }
      case MNT_DTYPE_I32: {
        int32_t x;
        std::memcpy(&x, &host[4 * i], 4);
        v[i] = x;
        break;
      }
      case MNT_DTYPE_F8_E4M3: v[i] = Fp8E4M3BitsToFloat(host[i]); break;
      case MNT_DTYPE_F8_E5M2: v[i] = Fp8E5M2BitsToFloat(host[i]); break;
      default: ADD_FAILURE() << "Download: unsupported dtype"; break;
    }
  }
  return v;
}

::testing::AssertionResult AllClose(const std::vector<double>& got,
                                    const std::vector<double>& want,
                                    const std::vector<double>& scale,
                                    double tol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "size " << got.size() << " vs " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      return ::testing::AssertionFailure() << "element " << i << " is " << got[i];
    }
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= tol * scale[i])) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << " want " << want[i]
             << " |err| " << err << " > tol " << tol << " * scale " << scale[i];
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult AllCloseRelative(const std::vector<double>& got,
                                            const std::vector<double>& want,
                                            double tol, double floor) {
  std::vector<double> scale(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    scale[i] = std::max(std::fabs(want[i]), floor);
  }
  return AllClose(got, want, scale, tol);
}

std::vector<std::vector<uint8_t>> RunOnFreshBackend(const char* options, MNT_Op op,
                                                    const std::vector<HostOperand>& in,
                                                    const std::vector<HostOperand>& out,
                                                    const void* params) {
  const MNT_Plugin_Api* plugin = CpuBackendPluginApi();
  MNT_Backend_Create_Args ca{};
  ca.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  ca.options = options;
  sdk::Status s = sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Create(&ca));
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  std::vector<std::vector<uint8_t>> result;
  {
    const sdk::BackendClient client(plugin, ca.backend);
    std::vector<sdk::DeviceBuffer> buffers;
    buffers.reserve(in.size() + out.size());
    auto upload = [&](const HostOperand& h) {
      buffers.emplace_back();
      EXPECT_TRUE(client.Allocate(std::max<size_t>(h.bytes.size(), 1), MNT_MEMORY_WORKSPACE,
                                  &buffers.back())
                      .ok());
      EXPECT_TRUE(client.ToDevice(buffers.back().data(), h.bytes.data(), h.bytes.size()).ok());
      return sdk::MakeTensor(buffers.back().data(), h.dtype, static_cast<int32_t>(h.dims.size()),
                             h.dims.data());
    };
    std::vector<MNT_Tensor> ins, outs;
    for (const HostOperand& h : in) ins.push_back(upload(h));
    for (const HostOperand& h : out) outs.push_back(upload(h));
    s = client.Run(op, ins, outs, params);
    EXPECT_TRUE(s.ok()) << s.message();
    for (size_t i = 0; i < out.size(); ++i) {
      result.emplace_back(out[i].bytes.size());
      EXPECT_TRUE(client.ToHost(result.back().data(), outs[i].data, result.back().size()).ok());
    }
  }  // buffers freed before the backend goes
  MNT_Backend_Destroy_Args da{};
  da.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  da.backend = ca.backend;
  EXPECT_TRUE(sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Destroy(&da)).ok());
  return result;
}

}  // namespace mnt::cpu::testing
