// GEMM GFLOP/s per compute mode and elementwise (ADD) bandwidth of the CPU
// backend, called through the plugin's C table like the trainer does.
//   tools/bazel run //plugins/backends/cpu:cpu_backend_benchmark -- --benchmark_min_time=0.1
#include <vector>

#include "benchmark/benchmark.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {
namespace {

// One backend for the whole run.
const sdk::BackendClient& Client() {
  static const sdk::BackendClient* client = [] {
    const MNT_Plugin_Api* plugin = CpuBackendPluginApi();
    MNT_Backend_Create_Args a{};
    a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    plugin->backend->Backend_Create(&a);
    return new sdk::BackendClient(plugin, a.backend);
  }();
  return *client;
}

MNT_Tensor Filled(std::vector<sdk::DeviceBuffer>& keep, MNT_DType dtype,
                  std::initializer_list<int64_t> dims, double value) {
  MNT_Tensor t = sdk::MakeTensor(nullptr, dtype, dims);
  sdk::DeviceBuffer b;
  Client().Allocate(sdk::SizeBytes(t), MNT_MEMORY_WORKSPACE, &b);
  t.data = b.data();
  keep.push_back(std::move(b));
  MNT_FillParams p{MNT_FillParams_STRUCT_SIZE, value};
  Client().Run(MNT_OP_FILL, {}, {t}, &p);
  return t;
}

void BM_Gemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto compute = static_cast<MNT_ComputeMode>(state.range(1));
  const auto dtype = compute == MNT_COMPUTE_BF16 ? MNT_DTYPE_BF16
                     : compute == MNT_COMPUTE_F16 ? MNT_DTYPE_F16
                                                  : MNT_DTYPE_F32;
  std::vector<sdk::DeviceBuffer> keep;
  MNT_Tensor a = Filled(keep, dtype, {n, n}, 0.5);
  MNT_Tensor b = Filled(keep, dtype, {n, n}, 0.25);
  MNT_Tensor c = Filled(keep, dtype, {n, n}, 0.0);
  MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, compute};
  for (auto _ : state) {
    sdk::Status s = Client().Run(MNT_OP_GEMM, {a, b}, {c}, &p);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * n * n * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(sdk::DTypeName(dtype));
}
BENCHMARK(BM_Gemm)
    ->ArgsProduct({{128, 512}, {MNT_COMPUTE_F32, MNT_COMPUTE_TF32,
                                MNT_COMPUTE_BF16, MNT_COMPUTE_F16}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();  // OpenBLAS threads: CPU time of this thread undercounts

void BM_Add(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto dtype = static_cast<MNT_DType>(state.range(1));
  std::vector<sdk::DeviceBuffer> keep;
  MNT_Tensor x = Filled(keep, dtype, {n}, 1.0);
  MNT_Tensor y = Filled(keep, dtype, {n}, 2.0);
  MNT_AddParams p{MNT_AddParams_STRUCT_SIZE, 1.0f, 0.5f};
  for (auto _ : state) Client().Run(MNT_OP_ADD, {x, y}, {y}, &p);
  // Two reads and one write per element.
  state.SetBytesProcessed(state.iterations() * 3 * n * sdk::DTypeSize(dtype));
  state.SetLabel(sdk::DTypeName(dtype));
}
BENCHMARK(BM_Add)->ArgsProduct({{1 << 20}, {MNT_DTYPE_F32, MNT_DTYPE_BF16}});

}  // namespace
}  // namespace mnt::cpu
