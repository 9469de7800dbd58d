// GPT-2 training throughput per precision, batch size and gradient
// checkpointing, on any backend plugin:
//   tokens/s and ms/step over timed steps after warm-up steps (the clock is
//   read after a device sync at the last warm-up and the last timed step),
//   MFU and peak memory (total and activations, from the backend
//   allocator). MFU = tokens/s x (6N + 12·L·C·T) / peak, with N every
//   parameter (llm.c's and PaLM's estimate; the attention term counts the
//   full T×T score matrix), against two peaks: the backend's own GEMM
//   (M=N=K=--bench_gemm_size, random operands, in that precision's
//   storage/compute format, best of several timings) measured in the same
//   run, and the datasheet dense peak when --bench_datasheet_tflops gives
//   it. On the CPU backend the GEMM is the BLAS sgemm for every precision
//   (tf32/bf16/fp16 round operands, then sgemm), so MFU there says how much of
//   the machine's sgemm rate the whole training step reaches. fp8 (bf16
//   storage, FP8 GEMMs: --bench_precisions=fp8, not in the default list)
//   measures SCALED_GEMM on E4M3 operands into bf16 (A [M,K], B [N,K]: the
//   layout cuBLASLt's FP8 kernels take as it is); the CPU backend's FP8 GEMM
//   is an exact emulation, so there its rate and MFU say nothing about FP8
//   hardware.
// Data: --bench_train_shards (llm.c token shards, e.g. the device check's
// deterministic shard that the PyTorch side reads too), else synthetic
// byte-level text.
// --bench_csv appends one machine-readable row per measurement (the device
// check's table is made from these; tools/gpu/device_check.py).
// PyTorch side by side (tools/benchmarks/gpt2_torch_bench.py, run with
// --bench_python) when torch is importable: the same model eager on the CPU,
// torch.compile + SDPA + fused AdamW + autocast on a GPU; printed as
// Mantissa/PyTorch ratios. Otherwise: "skipped: torch not installed".
//
//   tools/bazel run //tools/benchmarks:gpt2_benchmark
//   tools/bazel run //tools/benchmarks:gpt2_benchmark -- --bench_device=cuda
//       --bench_model_options=preset=gpt2-124m --bench_seq_len=1024
//       --bench_batches=8,16 --bench_gemm_size=8192
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "models/gpt2/gpt2_options.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"
#include "trainer/io/atomic_file.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/config/config.h"
#include "trainer/core/metrics.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

ABSL_FLAG(std::string, bench_device, "cpu", "backend plugin to measure");
ABSL_FLAG(std::string, bench_precisions, "fp32,tf32,bf16,fp16",
          "comma-separated: fp32, tf32, bf16, fp16, fp8 (FP8 GEMMs: sm_89+ on CUDA, emulated "
          "on the CPU)");
ABSL_FLAG(std::string, bench_model_options, "preset=gpt2-tiny", "gpt2 options");
ABSL_FLAG(int64_t, bench_seq_len, 64, "tokens per sequence");
ABSL_FLAG(std::string, bench_batches, "16", "comma-separated sequences per step");
ABSL_FLAG(std::string, bench_checkpointing, "off,on",
          "gradient checkpointing settings to measure: off, on or both");
ABSL_FLAG(int64_t, bench_steps, 20, "timed training steps per row");
ABSL_FLAG(int64_t, bench_warmup_steps, 2, "untimed training steps before the timed ones");
ABSL_FLAG(int64_t, bench_gemm_size, 1024, "M=N=K of the peak GEMM");
ABSL_FLAG(std::string, bench_train_shards, "",
          "llm.c token shards (glob) to train on; '' = synthetic byte-level text");
ABSL_FLAG(std::string, bench_datasheet_tflops, "",
          "dense datasheet peaks for a second MFU column, e.g. "
          "fp32=67,tf32=494.7,bf16=989.4,fp16=989.4,fp8=1979 (H100/H200 SXM)");
ABSL_FLAG(std::string, bench_csv, "", "append one CSV row per measurement to this file");
ABSL_FLAG(std::string, bench_python, "python3",
          "interpreter for the PyTorch side; '' skips it");

namespace mnt::trainer {
namespace {

struct Precision {
  std::string name;
  MNT_DType dtype;  // the GEMM operands' (fp8: E4M3)
  MNT_ComputeMode compute;
};

bool PrecisionFor(const std::string& p, Precision* out) {
  if (p == "fp32") *out = {p, MNT_DTYPE_F32, MNT_COMPUTE_F32};
  else if (p == "tf32") *out = {p, MNT_DTYPE_F32, MNT_COMPUTE_TF32};
  else if (p == "bf16") *out = {p, MNT_DTYPE_BF16, MNT_COMPUTE_BF16};
  else if (p == "fp16") *out = {p, MNT_DTYPE_F16, MNT_COMPUTE_F16};
  else if (p == "fp8") *out = {p, MNT_DTYPE_F8_E4M3, MNT_COMPUTE_BF16};
  else return false;
  return true;
}

// Best GEMM FLOP/s of the backend for `p` at n×n×n on random operands
// (uploaded as fp32, cast to the storage type; fp8: quantized with scale 1,
// SCALED_GEMM with inverse scales 1 into bf16); 0 on error.
double GemmPeak(const sdk::BackendClient& client, const Precision& p, int64_t n) {
  const bool fp8 = sdk::IsFp8(p.dtype);
  std::vector<sdk::DeviceBuffer> bufs(5);
  const std::vector<int64_t> dims{n, n};
  std::vector<MNT_Tensor> t;
  for (int i = 0; i < 4; ++i) {  // A, B (storage type), C (fp32; fp8: bf16), fp32 staging
    const MNT_DType dt = i < 2 ? p.dtype : i == 2 && fp8 ? MNT_DTYPE_BF16 : MNT_DTYPE_F32;
    if (!client.Allocate(n * n * sdk::DTypeSize(dt), MNT_MEMORY_WORKSPACE, &bufs[i]).ok())
      return 0;
    t.push_back(sdk::MakeTensor(bufs[i].data(), dt, 2, dims.data()));
  }
  // fp8: the scale (and inverse scale) 1, F32 [1] on the device.
  const int64_t one_dims[1] = {1};
  MNT_Tensor one{};
  if (fp8) {
    const float v = 1.0f;
    if (!client.Allocate(sizeof(float), MNT_MEMORY_WORKSPACE, &bufs[4]).ok() ||
        !client.ToDevice(bufs[4].data(), &v, sizeof v).ok())
      return 0;
    one = sdk::MakeTensor(bufs[4].data(), MNT_DTYPE_F32, 1, one_dims);
  }
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> host(n * n);
  for (int i = 0; i < 2; ++i) {
    for (float& v : host) v = dist(rng);
    if (!client.ToDevice(t[3].data, host.data(), host.size() * sizeof(float)).ok()) return 0;
    const sdk::Status cast = fp8 ? client.Run(MNT_OP_SCALED_CAST, {t[3], one}, {t[i]}, nullptr)
                                 : client.Run(MNT_OP_CAST, {t[3]}, {t[i]}, nullptr);
    if (!cast.ok()) return 0;
  }
  MNT_GemmParams g{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, p.compute};
  // B [N, K] (trans_b): the FP8 layout cuBLASLt multiplies without a copy.
  MNT_ScaledGemmParams sg{MNT_ScaledGemmParams_STRUCT_SIZE, 0, 1, 1.0f, 0.0f, 0};
  auto gemm = [&]() {
    return fp8 ? client.Run(MNT_OP_SCALED_GEMM, {t[0], t[1], one, one}, {t[2]}, &sg)
               : client.Run(MNT_OP_GEMM, {t[0], t[1]}, {t[2]}, &g);
  };
  if (!gemm().ok()) return 0;  // warm-up
  // At least 10 timings and one second in all (at most 50): on a shared
  // 2-core machine five quick timings often missed the peak, and a model
  // then ran above its "peak".
  constexpr int kPerTiming = 3;
  double best = 0, total = 0;
  for (int rep = 0; rep < 50 && (rep < 10 || total < 1.0); ++rep) {
    if (!client.Synchronize().ok()) return 0;
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < kPerTiming; ++k) {
      if (!gemm().ok()) return 0;
    }
    if (!client.Synchronize().ok()) return 0;
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, kPerTiming * 2.0 * n * n * n / sec);
    total += sec;
  }
  return best;
}

// "fp32=67,bf16=989.4" -> {fp32: 67e12, bf16: 989.4e12}; false on a bad entry.
bool ParsePeaks(const std::string& spec, std::map<std::string, double>* out) {
  for (absl::string_view item : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    const std::vector<std::string> kv = absl::StrSplit(item, '=');
    double tflops = 0;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &tflops) || tflops <= 0) return false;
    (*out)[kv[0]] = tflops * 1e12;
  }
  return true;
}

// Wall-clock times of the last warm-up step and the last step, each read
// after the trainer's sync for that step's metrics.
class StepClock : public MetricsSink {
 public:
  StepClock(int64_t warmup, int64_t total) : warmup_(warmup), total_(total) {}
  bool NeedsStepMetrics(int64_t step, int64_t) const override {
    return step == warmup_ || step == total_;
  }
  void OnStep(const StepMetrics& m) override {
    const auto now = std::chrono::steady_clock::now();
    if (m.step == warmup_) warm_end_ = now;
    if (m.step == total_) end_ = now;
    last_loss_ = m.loss;
  }
  void OnEval(const EvalMetrics&) override {}
  void OnMessage(const std::string&) override {}
  double TimedSeconds() const {
    return std::chrono::duration<double>(end_ - warm_end_).count();
  }
  double last_loss() const { return last_loss_; }

 private:
  int64_t warmup_, total_;
  std::chrono::steady_clock::time_point warm_end_, end_;
  double last_loss_ = 0;
};

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

// CSV columns shared with tools/benchmarks/gpt2_torch_bench.py.
constexpr char kCsvHeader[] =
    "framework,precision,batch,seq,ckpt,status,tokens_per_s,ms_per_step,"
    "mfu_measured,mfu_datasheet,gemm_tflops,datasheet_tflops,peak_mib,note";

void AppendCsv(const std::string& path, const std::string& row) {
  if (path.empty()) return;
  FILE* probe = std::fopen(path.c_str(), "r");
  const bool fresh = probe == nullptr;
  if (probe != nullptr) std::fclose(probe);
  FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    std::fprintf(stderr, "gpt2_benchmark: cannot append to %s\n", path.c_str());
    return;
  }
  if (fresh) std::fprintf(f, "%s\n", kCsvHeader);
  std::fprintf(f, "%s\n", row.c_str());
  std::fclose(f);
}

// (precision, batch) -> tokens/s of the PyTorch script's rows without
// checkpointing; prints its other lines.
std::map<std::pair<std::string, int64_t>, double> TorchTokensPerSecond(
    const char* argv0, const std::string& args) {
  std::map<std::pair<std::string, int64_t>, double> out;
  const std::string python = absl::GetFlag(FLAGS_bench_python);
  const std::string script = Runfile(argv0, "tools/benchmarks/gpt2_torch_bench.py");
  if (python.empty() || script.empty()) {
    std::printf("PyTorch: skipped: %s\n", python.empty() ? "--bench_python=''"
                                                         : "script not in runfiles");
    return out;
  }
  FILE* pipe = popen((python + " " + script + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char line[1024];
  while (std::fgets(line, sizeof line, pipe)) {
    const std::vector<std::string> f = absl::StrSplit(absl::StripTrailingAsciiWhitespace(line), ',');
    int64_t batch = 0;
    double tps = 0;
    if (f.size() >= 7 && f[0] == "pytorch" && f[5] == "ok" && f[4] == "off" &&
        absl::SimpleAtoi(f[2], &batch) && absl::SimpleAtod(f[6], &tps)) {
      out[{f[1], batch}] = tps;
    } else if (f.empty() || f[0] != "framework") {
      std::printf("PyTorch: %s", line);
    }
  }
  pclose(pipe);
  return out;
}

std::vector<int64_t> ParseBatches(const std::string& spec) {
  std::vector<int64_t> out;
  for (absl::string_view b : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(b, &v) || v <= 0) return {};
    out.push_back(v);
  }
  return out;
}

int Run(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string device = absl::GetFlag(FLAGS_bench_device);
  const std::string csv = absl::GetFlag(FLAGS_bench_csv);
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
  const std::vector<int64_t> batches = ParseBatches(absl::GetFlag(FLAGS_bench_batches));
  std::vector<bool> ckpts;
  bool bad_ckpt = false;
  for (absl::string_view c : absl::StrSplit(absl::GetFlag(FLAGS_bench_checkpointing), ',')) {
    bad_ckpt |= c != "off" && c != "on";
    ckpts.push_back(c == "on");
  }
  std::map<std::string, double> datasheet;
  if (batches.empty() || bad_ckpt ||
      !ParsePeaks(absl::GetFlag(FLAGS_bench_datasheet_tflops), &datasheet)) {
    std::fprintf(stderr, "gpt2_benchmark: bad --bench_batches, --bench_checkpointing "
                         "(off,on) or --bench_datasheet_tflops (prec=TFLOPS,...)\n");
    return 1;
  }
  const int64_t warmup = std::max<int64_t>(1, absl::GetFlag(FLAGS_bench_warmup_steps));
  const int64_t timed = std::max<int64_t>(1, absl::GetFlag(FLAGS_bench_steps));
  const int64_t seq = absl::GetFlag(FLAGS_bench_seq_len);
  const std::string options = absl::GetFlag(FLAGS_bench_model_options);

  // One CSV row per requested measurement, also when nothing can run, so the
  // device check's table says why a row is empty.
  auto skip_all = [&](const std::string& why) {
    for (const Precision& p : precs)
      for (int64_t b : batches)
        for (bool ckpt : ckpts)
          AppendCsv(csv, absl::StrFormat("mantissa,%s,%d,%d,%s,skipped,,,,,,,,%s", p.name, b,
                                         seq, ckpt ? "on" : "off", why));
  };
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", argv[0]));
  auto plugin = registry.Get(MNT_PLUGIN_KIND_BACKEND, device);
  if (!plugin.ok()) {
    std::printf("gpt2_benchmark: backend '%s' unavailable (%s); nothing measured\n",
                device.c_str(), std::string(plugin.status().message()).c_str());
    skip_all("backend unavailable");
    return 0;
  }
  const MNT_Plugin_Api* api = (*plugin)->api;
  MNT_Backend_Create_Args ca{};
  ca.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  if (MNT_Error* e = api->backend->Backend_Create(&ca)) {
    std::string why = api->Error_Message(e);
    std::printf("gpt2_benchmark: backend '%s' cannot start (%s); nothing measured\n",
                device.c_str(), why.c_str());
    api->Error_Destroy(e);
    skip_all(why.find("no CUDA device") != std::string::npos ? "no CUDA device"
                                                             : "backend cannot start");
    return 0;
  }
  std::map<std::string, double> peak;
  const int64_t gemm = absl::GetFlag(FLAGS_bench_gemm_size);
  std::printf("peak: backend '%s' GEMM %lldx%lldx%lld, random operands, best of >= 10 "
              "timings (>= 1 s), TFLOP/s:",
              device.c_str(), (long long)gemm, (long long)gemm, (long long)gemm);
  {
    const sdk::BackendClient client(api, ca.backend);
    for (const Precision& p : precs) {
      peak[p.name] = GemmPeak(client, p, gemm);
      std::printf(" %s %.3f", p.name.c_str(), peak[p.name] / 1e12);
    }
  }
  std::printf("\n");
  if (!datasheet.empty()) {
    std::printf("datasheet dense peak, TFLOP/s:");
    for (const Precision& p : precs) {
      const auto it = datasheet.find(p.name);
      std::printf(" %s %s", p.name.c_str(),
                  it == datasheet.end() ? "-" : absl::StrFormat("%.1f", it->second / 1e12).c_str());
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  MNT_Backend_Destroy_Args da{};
  da.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  da.backend = ca.backend;
  if (MNT_Error* e = api->backend->Backend_Destroy(&da)) api->Error_Destroy(e);

  char tmpl[] = "/tmp/mantissa_gpt2_bench_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::fprintf(stderr, "gpt2_benchmark: cannot create a temp directory\n");
    return 1;
  }
  const std::string dir = tmpl;
  const std::string shards = absl::GetFlag(FLAGS_bench_train_shards);
  if (shards.empty()) {
    // Synthetic byte-level text: throughput does not depend on what it says.
    std::string text;
    uint64_t x = 88172645463325252ull;
    while (text.size() < 400000) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      text.push_back(static_cast<char>('a' + x % 26));
      if (x % 7 == 0) text.push_back(' ');
    }
    if (!WriteFileAtomic(dir + "/text.txt", text).ok()) return 1;
  }

  std::printf("\nGPT-2 (%s), %lld tokens per sequence, %lld warm-up + %lld timed steps, AdamW, "
              "data: %s\n",
              options.c_str(), (long long)seq, (long long)warmup, (long long)timed,
              shards.empty() ? "synthetic text" : shards.c_str());
  std::printf("%-5s %5s %-5s %11s %9s %9s %11s %12s %10s\n", "prec", "batch", "ckpt", "tokens/s",
              "MFU meas", "MFU data", "step ms", "activ. MiB", "peak MiB");
  std::fflush(stdout);
  std::map<std::pair<std::string, int64_t>, double> ours;  // without checkpointing
  gpt2::Gpt2Config config;
  if (sdk::Status st = gpt2::ParseGpt2Options(options.c_str(), &config); !st.ok()) {
    std::fprintf(stderr, "gpt2_benchmark: %s\n", st.message().c_str());
    return 1;
  }
  int64_t num_parameters = 0;
  int status = 0;
  for (const Precision& p : precs) {
    for (int64_t batch : batches) {
      for (bool ckpt : ckpts) {
        const std::string row_key = absl::StrFormat("mantissa,%s,%d,%d,%s", p.name, batch, seq,
                                                    ckpt ? "on" : "off");
        TrainConfig c = DefaultTrainConfig();
        c.set_model("gpt2");
        c.set_model_options(ckpt ? (options.empty() ? "checkpointing=1"
                                                    : options + ",checkpointing=1")
                                 : options);
        if (shards.empty()) {
          c.mutable_data()->set_dataset("text");
          c.mutable_data()->set_text_path(dir + "/text.txt");
        } else {
          c.mutable_data()->set_dataset("shards");
          c.mutable_data()->set_train_shards(shards);
        }
        c.mutable_data()->set_seq_len(seq);
        c.mutable_data()->set_cache_dir(dir + "/cache");
        c.set_precision(p.name);
        c.set_device(device);
        c.set_batch_size(batch);
        c.set_steps(warmup + timed);
        c.set_eval_every(0);
        c.set_eval_batches(1);
        c.set_log_every(1000000);
        c.set_progress("none");
        auto data = LoadDatasets(c, "");
        absl::Status s = data.status();
        std::unique_ptr<Trainer> trainer;
        StepClock clock(warmup, warmup + timed);
        if (s.ok()) {
          auto t = Trainer::Create(c, &registry, std::move(data->train), std::move(data->eval));
          s = t.status();
          if (t.ok()) {
            trainer = std::move(*t);
            s = trainer->Train(&clock);
          }
        }
        if (!s.ok()) {
          std::string msg(s.message());
          std::replace(msg.begin(), msg.end(), ',', ';');
          std::replace(msg.begin(), msg.end(), '\n', ' ');
          std::printf("%-5s %5lld %-5s error: %s\n", p.name.c_str(), (long long)batch,
                      ckpt ? "on" : "off", msg.c_str());
          AppendCsv(csv, row_key + ",error,,,,,,,," + msg);
          status = 1;
          continue;
        }
        const FinalReport r = trainer->Report();
        auto peak_of = [&](const std::string& cat) {
          for (const MemoryLine& m : r.memory) if (m.category == cat) return m.peak_bytes;
          return int64_t{0};
        };
        const double secs = clock.TimedSeconds();
        const double tokens_per_second = secs > 0 ? timed * batch * seq / secs : 0;
        const double flops_per_token =
            6.0 * r.num_parameters + 12.0 * config.n_layer * config.d_model * seq;
        num_parameters = r.num_parameters;
        const double mfu = peak[p.name] > 0 ? tokens_per_second * flops_per_token / peak[p.name]
                                            : 0;
        const auto ds = datasheet.find(p.name);
        const double mfu_ds =
            ds != datasheet.end() ? tokens_per_second * flops_per_token / ds->second : 0;
        if (!ckpt) ours[{p.name, batch}] = tokens_per_second;
        const double ms = secs > 0 ? 1e3 * secs / timed : 0;
        std::printf("%-5s %5lld %-5s %11.0f %8.1f%% %9s %11.1f %12.2f %10.2f\n", p.name.c_str(),
                    (long long)batch, ckpt ? "on" : "off", tokens_per_second, 100 * mfu,
                    ds != datasheet.end() ? absl::StrFormat("%.1f%%", 100 * mfu_ds).c_str()
                                          : "-",
                    ms, peak_of("activations") / 1048576.0, peak_of("total") / 1048576.0);
        std::fflush(stdout);
        AppendCsv(csv, absl::StrFormat(
                           "%s,ok,%.1f,%.2f,%.4f,%s,%.2f,%s,%.1f,loss %.4f", row_key,
                           tokens_per_second, ms, mfu,
                           ds != datasheet.end() ? absl::StrFormat("%.4f", mfu_ds) : "",
                           peak[p.name] / 1e12,
                           ds != datasheet.end() ? absl::StrFormat("%.1f", ds->second / 1e12)
                                                 : "",
                           peak_of("total") / 1048576.0, clock.last_loss()));
      }
    }
  }
  std::printf("(N = %lld, every parameter incl. the padded embedding; FLOPs/token = "
              "6N + 12*L*C*T = %.4g)\n",
              (long long)num_parameters, 6.0 * num_parameters + 12.0 * config.n_layer *
              config.d_model * seq);

  const std::string python = absl::GetFlag(FLAGS_bench_python);
  if (python.empty()) return status;
  // PyTorch has no built-in FP8 training (that needs Transformer Engine):
  // fp8 has no PyTorch row.
  std::vector<std::string> names;
  for (const Precision& p : precs) {
    if (!sdk::IsFp8(p.dtype)) names.push_back(p.name);
  }
  if (names.empty()) return status;
  const std::string torch_args = absl::StrFormat(
      "--layers=%d --heads=%d --dim=%d --seq=%d --vocab=%d --batches=%s --steps=%d "
      "--warmup=%d --device=%s --precisions=%s --checkpointing=off --gemm_size=0%s",
      config.n_layer, config.n_head, config.d_model, seq, shards.empty() ? 256 : 50257,
      absl::GetFlag(FLAGS_bench_batches), timed, warmup, device, absl::StrJoin(names, ","),
      shards.empty() ? "" : " --data=" + shards);
  std::printf("\nPyTorch side by side (%s):\n", device == "cuda"
      ? "torch.compile + SDPA + fused AdamW + autocast"
      : "eager, SDPA, autocast for bf16/fp16");
  std::fflush(stdout);
  const auto torch = TorchTokensPerSecond(argv[0], torch_args);
  for (const auto& [key, tps] : torch) {
    const auto it = ours.find(key);
    if (it == ours.end()) continue;
    std::printf("%-5s batch %3lld PyTorch %11.0f tokens/s   Mantissa/PyTorch %.2fx\n",
                key.first.c_str(), (long long)key.second, tps, it->second / tps);
  }
  return status;
}

}  // namespace
}  // namespace mnt::trainer

int main(int argc, char** argv) { return mnt::trainer::Run(argc, argv); }
