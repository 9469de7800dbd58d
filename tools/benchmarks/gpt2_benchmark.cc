// GPT-2 training throughput per precision, with and without gradient
// checkpointing, on any backend plugin:
//   tokens/s, MFU and peak memory (total and activations, from the backend
//   allocator). MFU = tokens/s x (6N + 12·L·C·T) / peak, with N every
//   parameter (llm.c's and PaLM's estimate; the attention term counts the
//   full T×T score matrix). The peak is measured in the same run: the
//   backend's own GEMM (M=N=K=--bench_gemm_size) in that precision's
//   storage/compute format, best of several calls. On the CPU backend that
//   is OpenBLAS sgemm for every precision (tf32/bf16/fp16 round operands,
//   then sgemm), so MFU there says how much of the machine's sgemm rate the
//   whole training step reaches.
// PyTorch side by side (tools/benchmarks/gpt2_torch_bench.py, run with
// --bench_python) when torch is importable: the same model eager on the CPU,
// torch.compile + SDPA + fused AdamW + autocast on a GPU; printed as
// Mantissa/PyTorch ratios. Otherwise: "skipped: torch not installed".
//
//   tools/bazel run //tools/benchmarks:gpt2_benchmark
//   tools/bazel run //tools/benchmarks:gpt2_benchmark -- --bench_device=cuda
//       --bench_model_options=preset=gpt2-124m --bench_seq_len=1024
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "models/gpt2/gpt2_options.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"
#include "trainer/checkpoint/atomic_file.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/config/config.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

ABSL_FLAG(std::string, bench_device, "cpu", "backend plugin to measure");
ABSL_FLAG(std::string, bench_precisions, "fp32,tf32,bf16,fp16", "comma-separated");
ABSL_FLAG(std::string, bench_model_options, "preset=gpt2-tiny", "gpt2 options");
ABSL_FLAG(int64_t, bench_seq_len, 64, "tokens per sequence");
ABSL_FLAG(int64_t, bench_batch, 16, "sequences per step");
ABSL_FLAG(int64_t, bench_steps, 20, "timed training steps per row");
ABSL_FLAG(int64_t, bench_gemm_size, 1024, "M=N=K of the peak GEMM");
ABSL_FLAG(std::string, bench_python, "python3",
          "interpreter for the PyTorch side; '' skips it");

namespace mnt::trainer {
namespace {

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

// Best GEMM FLOP/s of the backend for `p` at n×n×n; 0 on error.
double GemmPeak(const sdk::BackendClient& client, const Precision& p, int64_t n) {
  std::vector<sdk::DeviceBuffer> bufs(3);
  const std::vector<int64_t> dims{n, n};
  std::vector<MNT_Tensor> t;
  for (int i = 0; i < 3; ++i) {
    const MNT_DType dt = i == 2 ? MNT_DTYPE_F32 : p.dtype;
    if (!client.Allocate(n * n * sdk::DTypeSize(dt), MNT_MEMORY_WORKSPACE, &bufs[i]).ok())
      return 0;
    t.push_back(sdk::MakeTensor(bufs[i].data(), dt, 2, dims.data()));
    MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 0.5f};
    if (!client.Run(MNT_OP_FILL, {}, {t.back()}, &fill).ok()) return 0;
  }
  MNT_GemmParams g{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, p.compute};
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    if (!client.Synchronize().ok()) return 0;
    const auto start = std::chrono::steady_clock::now();
    if (!client.Run(MNT_OP_GEMM, {t[0], t[1]}, {t[2]}, &g).ok()) return 0;
    if (!client.Synchronize().ok()) return 0;
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * n * n * n / sec);
  }
  return best;
}

// Where `bazel run` put a data file among the runfiles.
std::string Runfile(const char* argv0, const std::string& rel) {
  std::vector<std::string> roots;
  if (const char* r = std::getenv("RUNFILES_DIR")) roots.push_back(r);
  roots.push_back(std::string(argv0) + ".runfiles");
  for (const std::string& root : roots) {
    const std::string p = root + "/mantissa/" + rel;
    if (FILE* f = std::fopen(p.c_str(), "r")) {
      std::fclose(f);
      return p;
    }
  }
  return "";
}

// precision -> tokens/s from the PyTorch script; prints why when empty.
std::map<std::string, double> TorchTokensPerSecond(const char* argv0,
                                                   const std::string& args) {
  std::map<std::string, double> out;
  const std::string python = absl::GetFlag(FLAGS_bench_python);
  const std::string script = Runfile(argv0, "tools/benchmarks/gpt2_torch_bench.py");
  if (python.empty() || script.empty()) {
    std::printf("PyTorch: skipped: %s\n", python.empty() ? "--bench_python=''"
                                                         : "script not in runfiles");
    return out;
  }
  FILE* pipe = popen((python + " " + script + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char line[512];
  while (std::fgets(line, sizeof line, pipe)) {
    char name[64];
    double v;
    Precision unused;
    if (std::sscanf(line, "%63s %lf", name, &v) == 2 && PrecisionFor(name, &unused)) {
      out[name] = v;
    } else {
      std::printf("PyTorch: %s", line);
    }
  }
  pclose(pipe);
  return out;
}

int Run(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string device = absl::GetFlag(FLAGS_bench_device);
  std::vector<Precision> precs;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_bench_precisions), ',')) {
    Precision p;
    if (!PrecisionFor(std::string(name), &p)) {
      std::fprintf(stderr, "gpt2_benchmark: unknown precision '%s'\n",
                   std::string(name).c_str());
      return 1;
    }
    precs.push_back(p);
  }
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", argv[0]));
  auto plugin = registry.Get(MNT_PLUGIN_KIND_BACKEND, device);
  if (!plugin.ok()) {
    std::printf("gpt2_benchmark: backend '%s' unavailable (%s); nothing measured\n",
                device.c_str(), std::string(plugin.status().message()).c_str());
    return 0;
  }
  const MNT_Plugin_Api* api = (*plugin)->api;
  MNT_Backend_Create_Args ca{};
  ca.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  if (MNT_Error* e = api->backend->Backend_Create(&ca)) {
    std::printf("gpt2_benchmark: backend '%s' cannot start (%s); nothing measured\n",
                device.c_str(), api->Error_Message(e));
    api->Error_Destroy(e);
    return 0;
  }
  std::map<std::string, double> peak;
  const int64_t gemm = absl::GetFlag(FLAGS_bench_gemm_size);
  std::printf("peak: backend '%s' GEMM %lldx%lldx%lld, best of 5, TFLOP/s:", device.c_str(),
              (long long)gemm, (long long)gemm, (long long)gemm);
  {
    const sdk::BackendClient client(api, ca.backend);
    for (const Precision& p : precs) {
      peak[p.name] = GemmPeak(client, p, gemm);
      std::printf(" %s %.3f", p.name.c_str(), peak[p.name] / 1e12);
    }
  }
  std::printf("\n");
  MNT_Backend_Destroy_Args da{};
  da.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  da.backend = ca.backend;
  if (MNT_Error* e = api->backend->Backend_Destroy(&da)) api->Error_Destroy(e);

  // Synthetic byte-level text: throughput does not depend on what it says.
  char tmpl[] = "/tmp/mantissa_gpt2_bench_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::fprintf(stderr, "gpt2_benchmark: cannot create a temp directory\n");
    return 1;
  }
  const std::string dir = tmpl;
  std::string text;
  uint64_t x = 88172645463325252ull;
  while (text.size() < 400000) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    text.push_back(static_cast<char>('a' + x % 26));
    if (x % 7 == 0) text.push_back(' ');
  }
  if (!WriteFileAtomic(dir + "/text.txt", text).ok()) return 1;

  const int64_t seq = absl::GetFlag(FLAGS_bench_seq_len), batch = absl::GetFlag(FLAGS_bench_batch);
  const std::string options = absl::GetFlag(FLAGS_bench_model_options);
  std::printf("\nGPT-2 (%s), batch %lld x %lld tokens, %lld steps, AdamW\n", options.c_str(),
              (long long)batch, (long long)seq, (long long)absl::GetFlag(FLAGS_bench_steps));
  std::printf("%-5s %-5s %11s %7s %11s %12s %10s\n", "prec", "ckpt", "tokens/s", "MFU",
              "step ms", "activ. MiB", "peak MiB");
  std::map<std::string, double> ours;  // without checkpointing
  gpt2::Gpt2Config config;
  if (sdk::Status st = gpt2::ParseGpt2Options(options.c_str(), &config); !st.ok()) {
    std::fprintf(stderr, "gpt2_benchmark: %s\n", st.message().c_str());
    return 1;
  }
  int64_t num_parameters = 0;
  for (const Precision& p : precs) {
    for (bool ckpt : {false, true}) {
      TrainConfig c = DefaultTrainConfig();
      c.set_model("gpt2");
      c.set_model_options(ckpt ? (options.empty() ? "checkpointing=1"
                                                  : options + ",checkpointing=1")
                               : options);
      c.mutable_data()->set_dataset("text");
      c.mutable_data()->set_text_path(dir + "/text.txt");
      c.mutable_data()->set_seq_len(seq);
      c.mutable_data()->set_cache_dir(dir + "/cache");
      c.set_precision(p.name);
      c.set_device(device);
      c.set_batch_size(batch);
      c.set_steps(absl::GetFlag(FLAGS_bench_steps));
      c.set_eval_every(0);
      c.set_eval_batches(1);
      c.set_log_every(1000000);
      c.set_progress("none");
      auto data = LoadDatasets(c, "");
      if (!data.ok()) {
        std::fprintf(stderr, "gpt2_benchmark: %s\n", std::string(data.status().message()).c_str());
        return 1;
      }
      auto t = Trainer::Create(c, &registry, std::move(data->train), std::move(data->eval));
      absl::Status s = t.ok() ? (*t)->Train(nullptr) : t.status();
      if (!s.ok()) {
        std::fprintf(stderr, "gpt2_benchmark: %s\n", std::string(s.message()).c_str());
        return 1;
      }
      const FinalReport r = (*t)->Report();
      auto peak_of = [&](const std::string& cat) {
        for (const MemoryLine& m : r.memory) if (m.category == cat) return m.peak_bytes;
        return int64_t{0};
      };
      const double flops_per_token =
          6.0 * r.num_parameters + 12.0 * config.n_layer * config.d_model * seq;
      num_parameters = r.num_parameters;
      const double mfu = peak[p.name] > 0 ? r.tokens_per_second * flops_per_token / peak[p.name] : 0;
      if (!ckpt) ours[p.name] = r.tokens_per_second;
      std::printf("%-5s %-5s %11.0f %6.1f%% %11.1f %12.2f %10.2f\n", p.name.c_str(),
                  ckpt ? "on" : "off", r.tokens_per_second, 100 * mfu,
                  1e3 * batch * seq / r.tokens_per_second,
                  peak_of("activations") / 1048576.0, peak_of("total") / 1048576.0);
    }
  }
  std::printf("(N = %lld, every parameter incl. the padded embedding; FLOPs/token = "
              "6N + 12*L*C*T = %.4g)\n",
              (long long)num_parameters, 6.0 * num_parameters + 12.0 * config.n_layer *
              config.d_model * seq);

  std::string names;
  for (const Precision& p : precs) names += (names.empty() ? "" : ",") + p.name;
  const std::string torch_args = absl::StrFormat(
      "%lld %lld %lld %lld %lld %lld %lld %s %s", (long long)config.n_layer,
      (long long)config.n_head, (long long)config.d_model, (long long)seq, 256LL,
      (long long)batch, (long long)absl::GetFlag(FLAGS_bench_steps), device, names);
  std::printf("\nPyTorch side by side (%s):\n", device == "cuda"
      ? "torch.compile + SDPA + fused AdamW + autocast"
      : "eager, SDPA, autocast for bf16/fp16");
  const std::map<std::string, double> torch = TorchTokensPerSecond(argv[0], torch_args);
  for (const auto& [name, tps] : torch) {
    const auto it = ours.find(name);
    if (it == ours.end()) continue;
    std::printf("%-5s PyTorch %11.0f tokens/s   Mantissa/PyTorch %.2fx\n", name.c_str(), tps,
                it->second / tps);
  }
  return 0;
}

}  // namespace
}  // namespace mnt::trainer

int main(int argc, char** argv) { return mnt::trainer::Run(argc, argv); }
