// Convolution throughput and CNN training per precision, on any backend
// plugin with the ABI 1.3 conv ops:
//   1. ResNet-50 conv layer shapes: forward, backward-data and
//      backward-filter TFLOP/s (2*N*K*P*Q*C*R*S flops each) for
//      fp32 / tf32 / bf16 / fp16 (storage dtype + compute mode), timed on the
//      wall clock after Backend_Synchronize.
//   2. The CNN model plugin trained on digits: images/s, accuracy and peak
//      memory per category per precision.
// `tools/bazel run //tools/benchmarks:cnn_benchmark -- --bench_device=cuda`
// A backend that cannot be created (e.g. cuda without a GPU) is reported in
// one line and the benchmark exits 0.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/config/config.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

ABSL_FLAG(std::string, bench_device, "cpu", "backend plugin to measure");
ABSL_FLAG(int64_t, bench_conv_batch, 0,
          "images per conv call; 0 = 2 on cpu, 32 otherwise");
ABSL_FLAG(int, bench_conv_iters, 0, "timed calls per layer; 0 = 2 on cpu, 20 otherwise");
ABSL_FLAG(std::string, bench_precisions, "fp32,tf32,bf16,fp16", "comma-separated");
ABSL_FLAG(int64_t, bench_steps, 100, "CNN training steps per precision");
ABSL_FLAG(std::string, bench_model_options, "depth=2,width=32", "CNN options");
ABSL_FLAG(std::string, bench_tables, "conv,training",
          "which tables: conv (the layer passes), training (the CNN), or both");

namespace mnt::trainer {
namespace {

struct Layer {
  const char* name;
  int64_t c, h, k, r, stride, pad;  // square images and filters
};

// The distinct 3x3/1x1/7x7 shapes of ResNet-50's stages.
const Layer kLayers[] = {
    {"conv1 7x7/2", 3, 224, 64, 7, 2, 3},
    {"res2 1x1", 64, 56, 64, 1, 1, 0},
    {"res2 3x3", 64, 56, 64, 3, 1, 1},
    {"res3 3x3", 128, 28, 128, 3, 1, 1},
    {"res4 3x3", 256, 14, 256, 3, 1, 1},
    {"res4 1x1 up", 256, 14, 1024, 1, 1, 0},
    {"res5 3x3", 512, 7, 512, 3, 1, 1},
};

struct Precision {
  std::string name;
  MNT_DType dtype;
  MNT_ComputeMode compute;
};

bool PrecisionFor(const std::string& p, Precision* out) {
  if (p == "fp32") *out = {p, MNT_DTYPE_F32, MNT_COMPUTE_F32};
  else if (p == "tf32") *out = {p, MNT_DTYPE_F32, MNT_COMPUTE_TF32};
  else if (p == "bf16") *out = {p, MNT_DTYPE_BF16, MNT_COMPUTE_BF16};
  else if (p == "fp16") *out = {p, MNT_DTYPE_F16, MNT_COMPUTE_F16};
  else return false;
  return true;
}

int ConvTable(const sdk::BackendClient& client, const std::vector<Precision>& precs,
              int64_t n, int iters) {
  std::printf("conv layers, batch %lld, TFLOP/s (fwd / bwd-data / bwd-filter)\n",
              static_cast<long long>(n));
  std::printf("%-13s", "layer");
  for (const Precision& p : precs) std::printf(" %22s", p.name.c_str());
  std::printf("\n");
  for (const Layer& l : kLayers) {
    const int64_t pq = (l.h + 2 * l.pad - l.r) / l.stride + 1;
    const double flops = 2.0 * n * l.k * pq * pq * l.c * l.r * l.r;
    std::printf("%-13s", l.name);
    for (const Precision& p : precs) {
      const size_t es = sdk::DTypeSize(p.dtype);
      sdk::DeviceBuffer x, w, y;
      const int64_t xs = n * l.c * l.h * l.h, ws = l.k * l.c * l.r * l.r,
                    ys = n * l.k * pq * pq;
      if (!client.Allocate(xs * es, MNT_MEMORY_ACTIVATIONS, &x).ok() ||
          !client.Allocate(ws * es, MNT_MEMORY_WEIGHTS, &w).ok() ||
          !client.Allocate(ys * es, MNT_MEMORY_ACTIVATIONS, &y).ok()) {
        std::fprintf(stderr, "cnn_benchmark: out of memory at %s\n", l.name);
        return 1;
      }
      const MNT_Tensor tx = sdk::MakeTensor(x.data(), p.dtype, {n, l.c, l.h, l.h});
      const MNT_Tensor tw = sdk::MakeTensor(w.data(), p.dtype, {l.k, l.c, l.r, l.r});
      const MNT_Tensor ty = sdk::MakeTensor(y.data(), p.dtype, {n, l.k, pq, pq});
      MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 0.01};
      for (const MNT_Tensor* t : {&tx, &tw, &ty}) {
        if (!client.Run(MNT_OP_FILL, {}, {*t}, &fill).ok()) return 1;
      }
      const MNT_Conv2dParams cp{MNT_Conv2dParams_STRUCT_SIZE,
                                static_cast<int32_t>(l.pad), static_cast<int32_t>(l.pad),
                                static_cast<int32_t>(l.stride), static_cast<int32_t>(l.stride),
                                1, 1, 1, p.compute, 0};
      const struct {
        MNT_Op op;
        std::vector<MNT_Tensor> in, out;
      } passes[] = {{MNT_OP_CONV2D_FORWARD, {tx, tw}, {ty}},
                    {MNT_OP_CONV2D_BACKWARD_DATA, {ty, tw}, {tx}},
                    {MNT_OP_CONV2D_BACKWARD_FILTER, {ty, tx}, {tw}}};
      std::string cell;
      for (const auto& pass : passes) {
        sdk::Status s = client.Run(pass.op, pass.in, pass.out, &cp);  // warm-up
        if (s.ok()) s = client.Synchronize();
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; s.ok() && i < iters; ++i) {
          s = client.Run(pass.op, pass.in, pass.out, &cp);
        }
        if (s.ok()) s = client.Synchronize();
        if (!s.ok()) {
          std::fprintf(stderr, "\ncnn_benchmark: %s\n", s.message().c_str());
          return 1;
        }
        const double sec = std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start).count();
        cell += absl::StrFormat("%s%.3f", cell.empty() ? "" : "/",
                                flops * iters / sec / 1e12);
      }
      std::printf(" %22s", cell.c_str());
    }
    std::printf("\n");
  }
  return 0;
}

std::string MiB(int64_t b) { return absl::StrFormat("%.2f", b / 1048576.0); }

int TrainingTable(PluginRegistry* registry, const std::vector<Precision>& precs) {
  std::printf("\nCNN (%s) on digits, batch 64, %lld steps\n%-6s %10s %9s %9s %9s %11s %9s\n",
              absl::GetFlag(FLAGS_bench_model_options).c_str(),
              static_cast<long long>(absl::GetFlag(FLAGS_bench_steps)), "prec",
              "images/s", "eval acc", "weights", "master", "activations", "peak MiB");
  for (const Precision& p : precs) {
    TrainConfig c = DefaultTrainConfig();
    c.set_model("cnn");
    c.mutable_data()->set_dataset("digits");
    c.set_precision(p.name);
    c.set_device(absl::GetFlag(FLAGS_bench_device));
    c.set_model_options(absl::GetFlag(FLAGS_bench_model_options));
    c.set_batch_size(64);
    c.set_steps(absl::GetFlag(FLAGS_bench_steps));
    c.mutable_optimizer()->set_lr(3e-3);
    c.set_eval_every(0);
    c.set_progress("none");
    auto data = LoadDatasets(c, "");
    if (!data.ok()) {
      std::fprintf(stderr, "cnn_benchmark: %s\n", std::string(data.status().message()).c_str());
      return 1;
    }
    auto t = Trainer::Create(c, registry, std::move(data->train), std::move(data->eval));
    absl::Status s = t.ok() ? (*t)->Train(nullptr) : t.status();
    if (!s.ok()) {
      std::fprintf(stderr, "cnn_benchmark: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    const FinalReport r = (*t)->Report();
    auto peak = [&](const std::string& cat) {
      for (const MemoryLine& m : r.memory) if (m.category == cat) return m.peak_bytes;
      return int64_t{0};
    };
    std::printf("%-6s %10.0f %8.2f%% %9s %9s %11s %9s\n", p.name.c_str(),
                r.samples_per_second, 100 * r.last_eval.accuracy,
                MiB(peak("weights")).c_str(), MiB(peak("master_weights")).c_str(),
                MiB(peak("activations")).c_str(), MiB(peak("total")).c_str());
  }
  return 0;
}

int Run(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string device = absl::GetFlag(FLAGS_bench_device);
  std::vector<Precision> precs;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_bench_precisions), ',')) {
    Precision p;
    if (!PrecisionFor(std::string(name), &p)) {
      std::fprintf(stderr, "cnn_benchmark: unknown precision '%s'\n",
                   std::string(name).c_str());
      return 1;
    }
    precs.push_back(p);
  }
  const std::string tables = absl::GetFlag(FLAGS_bench_tables);
  const bool conv_table = absl::StrContains(tables, "conv");
  const bool training_table = absl::StrContains(tables, "training");
  if (!conv_table && !training_table) {
    std::fprintf(stderr, "cnn_benchmark: error: --bench_tables=%s names neither conv nor "
                 "training\n", tables.c_str());
    return 1;
  }
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", argv[0]));
  auto plugin = registry.Get(MNT_PLUGIN_KIND_BACKEND, device);
  if (!plugin.ok()) {
    std::printf("cnn_benchmark: backend '%s' unavailable (%s); nothing measured\n",
                device.c_str(), std::string(plugin.status().message()).c_str());
    return 0;
  }
  const MNT_Plugin_Api* api = (*plugin)->api;
  MNT_Backend_Create_Args ca{};
  ca.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  if (MNT_Error* e = api->backend->Backend_Create(&ca)) {
    std::printf("cnn_benchmark: backend '%s' cannot start (%s); nothing measured\n",
                device.c_str(), api->Error_Message(e));
    api->Error_Destroy(e);
    return 0;
  }
  int rc = 0;
  if (conv_table) {
    const sdk::BackendClient client(api, ca.backend);
    const bool cpu = device == "cpu";
    int64_t n = absl::GetFlag(FLAGS_bench_conv_batch);
    int iters = absl::GetFlag(FLAGS_bench_conv_iters);
    if (n <= 0) n = cpu ? 2 : 32;
    if (iters <= 0) iters = cpu ? 2 : 20;
    rc = ConvTable(client, precs, n, iters);
  }
  MNT_Backend_Destroy_Args da{};
  da.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  da.backend = ca.backend;
  if (MNT_Error* e = api->backend->Backend_Destroy(&da)) api->Error_Destroy(e);
  if (rc != 0 || !training_table) return rc;
  return TrainingTable(&registry, precs);
}

}  // namespace
}  // namespace mnt::trainer

int main(int argc, char** argv) { return mnt::trainer::Run(argc, argv); }
