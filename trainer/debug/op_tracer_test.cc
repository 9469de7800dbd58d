// The --debug_overflow tracer on the CPU backend: with TENSOR_STATS (ABI
// 1.10) it measures operands on the device, one device-to-host copy per
// traced op; on a backend that does not report the op (the same CPU
// backend behind a table that says so) it copies every operand to the
// host. Both give the same report, to the character, and the same numbers
// as measuring the tensors' bytes on the host; after the op that trips it,
// ops run untraced.
#include "trainer/debug/op_tracer.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {
namespace {

// The CPU backend's table, except that Backend_GetOpSupport says no to
// TENSOR_STATS (a backend built before ABI 1.10, as the tracer sees it),
// and Backend_Run counts the TENSOR_STATS calls it still gets.
const MNT_Plugin_Api* g_cpu = nullptr;
int g_stats_runs = 0;

MNT_Error* SupportWithoutStats(MNT_Backend_GetOpSupport_Args* a) {
  MNT_Error* e = g_cpu->backend->Backend_GetOpSupport(a);
  if (e == nullptr && a->op == MNT_OP_TENSOR_STATS) a->supported = 0;
  return e;
}

MNT_Error* CountingRun(MNT_Backend_Run_Args* a) {
  if (a->op == MNT_OP_TENSOR_STATS) ++g_stats_runs;
  return g_cpu->backend->Backend_Run(a);
}

const MNT_Plugin_Api* CpuWithoutTensorStats() {
  static MNT_Backend_Api api;
  static MNT_Plugin_Api plugin;
  g_cpu = cpu::CpuBackendPluginApi();
  api = *g_cpu->backend;
  api.Backend_GetOpSupport = &SupportWithoutStats;
  api.Backend_Run = &CountingRun;
  plugin = *g_cpu;
  plugin.backend = &api;
  return &plugin;
}

uint16_t Half(float f) { return FloatToHalfBits(f); }

// What one traced run saw.
struct Traced {
  bool on_device = false;
  bool tripped = false;
  std::string report, summary;
  int64_t copies = 0;      // device -> host copies the tracer made
  int stats_runs = 0;      // TENSOR_STATS calls that reached the backend
};

// Three ops through the tracer, fp16 like the integration test's overflow:
//   #1 CAST x (f32, finite, a value that is subnormal in fp16) -> h (f16),
//   #2 GEMM h [2,4] x layer1.weight [4,3] (30000 each) -> y: overflows fp16,
//   #3 ADD y + y after the trip: runs untraced.
Traced TraceThreeOps(const MNT_Plugin_Api* plugin) {
  Traced t;
  std::unique_ptr<sdk::BackendInstance> backend;
  sdk::Status s = sdk::BackendInstance::Create(plugin, "", &backend);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return t;
  const sdk::BackendClient& real = backend->client();
  sdk::DeviceBuffer xb, hb, wb, yb, zb;
  EXPECT_TRUE(real.Allocate(8 * 4, MNT_MEMORY_ACTIVATIONS, &xb).ok());
  EXPECT_TRUE(real.Allocate(8 * 2, MNT_MEMORY_ACTIVATIONS, &hb).ok());
  EXPECT_TRUE(real.Allocate(12 * 2, MNT_MEMORY_WEIGHTS, &wb).ok());
  EXPECT_TRUE(real.Allocate(6 * 2, MNT_MEMORY_ACTIVATIONS, &yb).ok());
  EXPECT_TRUE(real.Allocate(6 * 2, MNT_MEMORY_ACTIVATIONS, &zb).ok());
  const float x[8] = {1.5f, 0.5f, 2.0f, 3.0f, 1e-6f, 0.25f, -7.0f, 4.0f};
  std::vector<uint16_t> w(12, Half(30000.0f));
  EXPECT_TRUE(real.ToDevice(xb.data(), x, sizeof(x)).ok());
  EXPECT_TRUE(real.ToDevice(wb.data(), w.data(), w.size() * 2).ok());
  const int64_t before = real.device_to_host_copies();
  {
    auto tracer = OpTracer::Create(real);
    EXPECT_TRUE(tracer.ok()) << tracer.status();
    if (!tracer.ok()) return t;
    OpTracer& tr = **tracer;
    tr.Name(wb.data(), wb.size(), "layer1.weight");
    tr.BeginPhase(3, "forward");
    const sdk::BackendClient& c = tr.client();
    const MNT_Tensor tx = sdk::MakeTensor(xb.data(), MNT_DTYPE_F32, {2, 4});
    const MNT_Tensor th = sdk::MakeTensor(hb.data(), MNT_DTYPE_F16, {2, 4});
    const MNT_Tensor tw = sdk::MakeTensor(wb.data(), MNT_DTYPE_F16, {4, 3});
    const MNT_Tensor ty = sdk::MakeTensor(yb.data(), MNT_DTYPE_F16, {2, 3});
    const MNT_Tensor tz = sdk::MakeTensor(zb.data(), MNT_DTYPE_F16, {2, 3});
    EXPECT_TRUE(c.Run(MNT_OP_CAST, {tx}, {th}).ok());
    EXPECT_FALSE(tr.tripped());
    const MNT_GemmParams gemm{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, MNT_COMPUTE_F32};
    EXPECT_TRUE(c.Run(MNT_OP_GEMM, {th, tw}, {ty}, &gemm).ok());
    EXPECT_TRUE(tr.tripped());
    const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
    EXPECT_TRUE(c.Run(MNT_OP_ADD, {ty, ty}, {tz}, &add).ok());
    t.on_device = tr.measures_on_device();
    t.tripped = tr.tripped();
    t.report = tr.Report();
    t.summary = tr.Summary();
  }
  t.copies = real.device_to_host_copies() - before;
  return t;
}

TEST(OpTracerTest, MeasuresOnTheDeviceWhereTheBackendHasTensorStats) {
  g_stats_runs = 0;
  const Traced t = TraceThreeOps(cpu::CpuBackendPluginApi());
  EXPECT_TRUE(t.on_device);
  EXPECT_TRUE(t.tripped);
  // One 16-bytes-per-operand read per traced op (CAST, GEMM), not one copy
  // per operand (2 + 3 of them); the untraced ADD reads nothing.
  EXPECT_EQ(t.copies, 2);
  EXPECT_EQ(t.summary,
            "--debug_overflow: in forward, op #2 GEMM in layer 'layer1' (parameters "
            "layer1.weight) made inf/NaN: out[0] (activation: 6 inf/NaN of 6)");
  // The numbers: x's smallest |x| is 1e-6, h's that rounded to fp16 (a
  // subnormal there, measured as it is).
  const std::string x_line = absl::StrFormat("abs min %.3g max 7\n", 1e-6f);
  const std::string h_line =
      absl::StrFormat("abs min %.3g max 7\n", HalfBitsToFloat(Half(1e-6f)));
  EXPECT_NE(t.report.find("in[0] activation                   " + x_line), std::string::npos)
      << t.report;
  EXPECT_NE(t.report.find("out[0] activation                   " + h_line), std::string::npos)
      << t.report;
  EXPECT_NE(t.report.find("in[1] layer1.weight                abs min 3e+04 max 3e+04\n"),
            std::string::npos)
      << t.report;
  EXPECT_NE(t.report.find("out[0] activation                   abs min 0 max 0, 6 inf/NaN "
                          "(0 NaN) of 6\n"),
            std::string::npos)
      << t.report;
  EXPECT_EQ(t.report.find("ADD"), std::string::npos) << "ADD ran after the trip" << t.report;
}

TEST(OpTracerTest, ABackendWithoutTensorStatsGetsTheHostPathAndTheSameReport) {
  const Traced device = TraceThreeOps(cpu::CpuBackendPluginApi());
  g_stats_runs = 0;
  const Traced host = TraceThreeOps(CpuWithoutTensorStats());
  EXPECT_FALSE(host.on_device);
  EXPECT_EQ(g_stats_runs, 0) << "the tracer ran TENSOR_STATS on a backend that lacks it";
  // One copy per measured operand: CAST's 2, GEMM's 3.
  EXPECT_EQ(host.copies, 5);
  EXPECT_EQ(host.report, device.report);
  EXPECT_EQ(host.summary, device.summary);
}

TEST(OpTracerTest, DeviceStatsAreTheHostMeasurementsOfTheSameBytes) {
  // Values with specials through a traced CAST into fp16, bf16 and fp32:
  // the report's text of the output equals FormatStats(MeasureTensor(...))
  // of its bytes read back.
  std::unique_ptr<sdk::BackendInstance> backend;
  ASSERT_TRUE(sdk::BackendInstance::Create(cpu::CpuBackendPluginApi(), "", &backend).ok());
  const sdk::BackendClient& real = backend->client();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {3.0f,  -inf,     std::nanf(""), -0.0f, 1e-40f,
                                65519.0f, 70000.0f, -2.5e-8f,   1e30f, 0.1f};
  const int64_t n = static_cast<int64_t>(x.size());
  sdk::DeviceBuffer xb, yb;
  ASSERT_TRUE(real.Allocate(n * 4, MNT_MEMORY_ACTIVATIONS, &xb).ok());
  ASSERT_TRUE(real.Allocate(n * 4, MNT_MEMORY_ACTIVATIONS, &yb).ok());
  ASSERT_TRUE(real.ToDevice(xb.data(), x.data(), n * 4).ok());
  for (MNT_DType dtype : {MNT_DTYPE_F16, MNT_DTYPE_BF16, MNT_DTYPE_F32}) {
    auto tracer = OpTracer::Create(real);  // a fresh one: each CAST trips it
    ASSERT_TRUE(tracer.ok()) << tracer.status();
    ASSERT_TRUE((*tracer)->measures_on_device());
    const MNT_Tensor tx = sdk::MakeTensor(xb.data(), MNT_DTYPE_F32, {n});
    const MNT_Tensor ty = sdk::MakeTensor(yb.data(), dtype, {n});
    ASSERT_TRUE((*tracer)->client().Run(MNT_OP_CAST, {tx}, {ty}).ok());
    std::vector<unsigned char> bytes(sdk::SizeBytes(ty));
    ASSERT_TRUE(real.ToHost(bytes.data(), yb.data(), bytes.size()).ok());
    const std::string line = FormatStats(MeasureTensor(dtype, bytes.data(), n));
    EXPECT_NE((*tracer)->Report().find("out[0] activation                   " + line + "\n"),
              std::string::npos)
        << sdk::DTypeName(dtype) << ": " << line << "\n"
        << (*tracer)->Report();
  }
}

// Layer names where an op has no parameter (docs/plugins.md, "Layer
// names"): a forward GEMM of layer1, its ReLU, a copy of the targets the
// model keeps, then in backward a cross-entropy over layer1's output that
// overflows fp16. The ReLU and the backward op are layer1's (they read its
// output), the I32 targets and their device copy are "targets", an unnamed
// I32 tensor is "indices", never "activation".
TEST(OpTracerTest, OpsWithoutParametersTakeTheLayerOfWhatTheyRead) {
  std::unique_ptr<sdk::BackendInstance> backend;
  ASSERT_TRUE(sdk::BackendInstance::Create(cpu::CpuBackendPluginApi(), "", &backend).ok());
  const sdk::BackendClient& real = backend->client();
  sdk::DeviceBuffer xb, wb, yb, rb, tb, kept, ids, lb, db;
  ASSERT_TRUE(real.Allocate(8 * 2, MNT_MEMORY_ACTIVATIONS, &xb).ok());
  ASSERT_TRUE(real.Allocate(12 * 2, MNT_MEMORY_WEIGHTS, &wb).ok());
  ASSERT_TRUE(real.Allocate(6 * 2, MNT_MEMORY_ACTIVATIONS, &yb).ok());
  ASSERT_TRUE(real.Allocate(6 * 2, MNT_MEMORY_ACTIVATIONS, &rb).ok());
  ASSERT_TRUE(real.Allocate(2 * 4, MNT_MEMORY_DATA, &tb).ok());
  ASSERT_TRUE(real.Allocate(2 * 4, MNT_MEMORY_WORKSPACE, &kept).ok());
  ASSERT_TRUE(real.Allocate(2 * 4, MNT_MEMORY_WORKSPACE, &ids).ok());
  ASSERT_TRUE(real.Allocate(2 * 4, MNT_MEMORY_WORKSPACE, &lb).ok());
  ASSERT_TRUE(real.Allocate(6 * 2, MNT_MEMORY_ACTIVATIONS, &db).ok());
  const std::vector<uint16_t> x(8, Half(1.0f)), w(12, Half(0.5f));
  const int32_t targets[2] = {0, 2};
  ASSERT_TRUE(real.ToDevice(xb.data(), x.data(), x.size() * 2).ok());
  ASSERT_TRUE(real.ToDevice(wb.data(), w.data(), w.size() * 2).ok());
  ASSERT_TRUE(real.ToDevice(tb.data(), targets, sizeof(targets)).ok());
  ASSERT_TRUE(real.ToDevice(ids.data(), targets, sizeof(targets)).ok());
  auto tracer = OpTracer::Create(real);
  ASSERT_TRUE(tracer.ok()) << tracer.status();
  OpTracer& tr = **tracer;
  tr.Name(wb.data(), wb.size(), "layer1.weight");
  tr.NameData(tb.data(), tb.size(), "targets");
  const sdk::BackendClient& c = tr.client();
  const MNT_Tensor tx = sdk::MakeTensor(xb.data(), MNT_DTYPE_F16, {2, 4});
  const MNT_Tensor tw = sdk::MakeTensor(wb.data(), MNT_DTYPE_F16, {4, 3});
  const MNT_Tensor ty = sdk::MakeTensor(yb.data(), MNT_DTYPE_F16, {2, 3});
  const MNT_Tensor relu_out = sdk::MakeTensor(rb.data(), MNT_DTYPE_F16, {2, 3});
  const MNT_Tensor tkept = sdk::MakeTensor(kept.data(), MNT_DTYPE_I32, {2});
  const MNT_Tensor tids = sdk::MakeTensor(ids.data(), MNT_DTYPE_I32, {2});
  const MNT_Tensor losses = sdk::MakeTensor(lb.data(), MNT_DTYPE_F32, {2});
  const MNT_Tensor dlogits = sdk::MakeTensor(db.data(), MNT_DTYPE_F16, {2, 3});
  tr.BeginPhase(1, "forward");
  const MNT_GemmParams gemm{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, MNT_COMPUTE_F32};
  ASSERT_TRUE(c.Run(MNT_OP_GEMM, {tx, tw}, {ty}, &gemm).ok());
  const MNT_ActivationParams relu{MNT_ActivationParams_STRUCT_SIZE, MNT_ACTIVATION_RELU};
  ASSERT_TRUE(c.Run(MNT_OP_ACTIVATION_FORWARD, {ty}, {relu_out}, &relu).ok());
  ASSERT_TRUE(c.Copy(kept.data(), tb.data(), tb.size(), MNT_COPY_DEVICE_TO_DEVICE).ok());
  tr.BeginPhase(1, "backward");
  // dlogits = (softmax - onehot) * 1e9: beyond fp16.
  MNT_CrossEntropyParams ce{};
  ce.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  ce.grad_scale = 1e9f;
  ce.num_classes = 3;
  ASSERT_TRUE(c.Run(MNT_OP_CROSS_ENTROPY, {ty, tkept}, {losses, dlogits}, &ce).ok());
  ASSERT_TRUE(tr.tripped());
  const std::string report = tr.Report();
  EXPECT_NE(report.find("forward ACTIVATION_FORWARD  [layer1]\n"), std::string::npos) << report;
  EXPECT_NE(report.find("backward CROSS_ENTROPY  [layer1]\n"), std::string::npos) << report;
  EXPECT_NE(report.find("in[1] targets "), std::string::npos) << report;
  EXPECT_EQ(tr.Summary(),
            "--debug_overflow: in backward, op #3 CROSS_ENTROPY in layer 'layer1' made inf/NaN: "
            "out[1] (activation: 6 inf/NaN of 6)");
  // An I32 tensor nobody named is no activation.
  auto fresh = OpTracer::Create(real);
  ASSERT_FALSE(fresh.ok());  // one at a time
  tracer->reset();
  auto second = OpTracer::Create(real);
  ASSERT_TRUE(second.ok()) << second.status();
  (*second)->BeginPhase(1, "forward");
  const MNT_Tensor big = sdk::MakeTensor(yb.data(), MNT_DTYPE_F16, {2, 3});
  const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1e9f, 0.0f};
  ASSERT_TRUE((*second)->client().Run(MNT_OP_CROSS_ENTROPY, {ty, tids}, {losses}, &ce).ok());
  ASSERT_TRUE((*second)->client().Run(MNT_OP_ADD, {big}, {big}, &add).ok());
  EXPECT_NE((*second)->Report().find("in[1] indices "), std::string::npos) << (*second)->Report();
  EXPECT_EQ((*second)->Report().find("in[1] activation"), std::string::npos);
}

}  // namespace
}  // namespace mnt::trainer
