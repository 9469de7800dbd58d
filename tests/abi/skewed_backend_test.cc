// The skewed test backend scales exactly the chosen op's float outputs by
// (1 + skew), leaves every other op bit-identical to the CPU backend, and
// refuses malformed options in one line.
#include "tests/abi/skewed_backend.h"

#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::abi_test {
namespace {

// A backend instance of `plugin` created with `options`, destroyed at scope end.
class Instance {
 public:
  Instance(const MNT_Plugin_Api* plugin, const char* options) : plugin_(plugin) {
    MNT_Backend_Create_Args a{};
    a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    a.options = options;
    status_ = sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Create(&a));
    backend_ = a.backend;
  }
  ~Instance() {
    if (backend_ == nullptr) return;
    MNT_Backend_Destroy_Args a{};
    a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    a.backend = backend_;
    EXPECT_TRUE(sdk::StatusFromPluginError(plugin_, plugin_->backend->Backend_Destroy(&a)).ok());
  }
  const sdk::Status& status() const { return status_; }
  sdk::BackendClient client() const { return sdk::BackendClient(plugin_, backend_); }

 private:
  const MNT_Plugin_Api* plugin_;
  MNT_Backend* backend_ = nullptr;
  sdk::Status status_;
};

// Runs out = 1.5 * x - 0.25 * y (ADD) or out = 0.3125 (FILL) into an `out_dtype`
// tensor and returns the raw output bytes.
std::vector<unsigned char> RunOp(const Instance& inst, MNT_Op op, MNT_DType out_dtype,
                                 const std::vector<float>& x, const std::vector<float>& y) {
  const sdk::BackendClient c = inst.client();
  const int64_t n = static_cast<int64_t>(x.size());
  const size_t out_bytes = x.size() * sdk::DTypeSize(out_dtype);
  sdk::DeviceBuffer bx, by, bo;
  EXPECT_TRUE(c.Allocate(n * 4, MNT_MEMORY_DATA, &bx).ok());
  EXPECT_TRUE(c.Allocate(n * 4, MNT_MEMORY_DATA, &by).ok());
  EXPECT_TRUE(c.Allocate(out_bytes, MNT_MEMORY_DATA, &bo).ok());
  EXPECT_TRUE(c.ToDevice(bx.data(), x.data(), n * 4).ok());
  EXPECT_TRUE(c.ToDevice(by.data(), y.data(), n * 4).ok());
  const MNT_Tensor tx = sdk::MakeTensor(bx.data(), MNT_DTYPE_F32, {n});
  const MNT_Tensor ty = sdk::MakeTensor(by.data(), MNT_DTYPE_F32, {n});
  const MNT_Tensor to = sdk::MakeTensor(bo.data(), out_dtype, {n});
  const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.5f, -0.25f};
  const MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 0.3125};
  const sdk::Status s = op == MNT_OP_ADD ? c.Run(op, {tx, ty}, {to}, &add)
                                         : c.Run(op, {}, {to}, &fill);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<unsigned char> out(out_bytes);
  EXPECT_TRUE(c.ToHost(out.data(), bo.data(), out_bytes).ok());
  return out;
}

class SkewedBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint32_t seed = std::random_device{}();
    std::cout << "seed " << seed << "\n";
    std::mt19937 rng(seed);
    const size_t n = 16 + rng() % 64;
    std::uniform_real_distribution<float> u(-4, 4);
    for (size_t i = 0; i < n; ++i) {
      x_.push_back(u(rng));
      y_.push_back(u(rng));
    }
  }
  std::vector<float> x_, y_;
  const Instance cpu_{cpu::CpuBackendPluginApi(), nullptr};
};

std::vector<float> AsF32(const std::vector<unsigned char>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST_F(SkewedBackendTest, WithoutOptionsEveryOpIsBitIdenticalToTheCpuBackend) {
  const Instance skewed(SkewedBackendPluginApi(), nullptr);
  ASSERT_TRUE(skewed.status().ok()) << skewed.status().message();
  for (MNT_Op op : {MNT_OP_ADD, MNT_OP_FILL}) {
    EXPECT_EQ(RunOp(skewed, op, MNT_DTYPE_F32, x_, y_), RunOp(cpu_, op, MNT_DTYPE_F32, x_, y_));
  }
}

TEST_F(SkewedBackendTest, ScalesOnlyTheChosenOpsF32Outputs) {
  const double skew = 1e-3;
  const Instance skewed(SkewedBackendPluginApi(), "skew_op=ADD,skew=1e-3,threads=1");
  ASSERT_TRUE(skewed.status().ok()) << skewed.status().message();
  const std::vector<float> got = AsF32(RunOp(skewed, MNT_OP_ADD, MNT_DTYPE_F32, x_, y_));
  const std::vector<float> cpu = AsF32(RunOp(cpu_, MNT_OP_ADD, MNT_DTYPE_F32, x_, y_));
  int changed = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(got[i], static_cast<float>(cpu[i] * (1.0 + skew))) << "element " << i;
    changed += got[i] != cpu[i];
  }
  EXPECT_GT(changed, 0);
  // FILL is not the chosen op: untouched.
  EXPECT_EQ(RunOp(skewed, MNT_OP_FILL, MNT_DTYPE_F32, x_, y_),
            RunOp(cpu_, MNT_OP_FILL, MNT_DTYPE_F32, x_, y_));
}

TEST_F(SkewedBackendTest, ScalesBf16OutputsInTheirOwnFormat) {
  const Instance skewed(SkewedBackendPluginApi(), "skew_op=ADD,skew=0.25");
  ASSERT_TRUE(skewed.status().ok()) << skewed.status().message();
  const std::vector<unsigned char> got = RunOp(skewed, MNT_OP_ADD, MNT_DTYPE_BF16, x_, y_);
  const std::vector<unsigned char> cpu = RunOp(cpu_, MNT_OP_ADD, MNT_DTYPE_BF16, x_, y_);
  for (size_t i = 0; i < x_.size(); ++i) {
    uint16_t g, c;
    std::memcpy(&g, got.data() + 2 * i, 2);
    std::memcpy(&c, cpu.data() + 2 * i, 2);
    EXPECT_EQ(g, FloatToBf16Bits(static_cast<float>(Bf16BitsToFloat(c) * 1.25)))
        << "element " << i;
  }
}

TEST(SkewedBackendOptionsTest, MalformedOptionsAreOneLineErrors) {
  for (const char* bad : {"skew_op=NOT_AN_OP,skew=1e-3", "skew_op=GEMM,skew=lots",
                          "skew_op=GEMM", "skew=1e-3", "ignore_pieces=yes"}) {
    const Instance skewed(SkewedBackendPluginApi(), bad);
    EXPECT_EQ(skewed.status().code(), MNT_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(skewed.status().message().find("skewed backend options"), std::string::npos)
        << skewed.status().message();
    EXPECT_EQ(skewed.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace mnt::abi_test
