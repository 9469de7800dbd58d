// cuda backend benchmark (bazel run //plugins/backends/cuda:cuda_benchmark):
//  1. cuBLASLt GEMM TFLOP/s per precision at 4096^3 and 8192^3, against the
//     device's peak *as measured in this run* = the best rate of any GEMM
//     below (so "% of peak" is relative to the fastest precision/shape here,
//     not to a datasheet number).
//  2. Bandwidth of elementwise kernels (ADD, CAST, GELU) in GB/s against
//     cudaMemcpy device-to-device on the same buffers.
//  3. MLP training step time per precision, built from backend ops only
//     (1024 -> 4096 -> 4096 -> 1024, ReLU, batch 4096: forward with bias
//     epilogue, softmax cross-entropy, backward GEMMs and bias grads,
//     fp16 unscale, fused AdamW writing the working copy); no data upload.
//  4. Causal attention (ATTENTION_FORWARD / BACKWARD) at GPT-2 124M's shape
//     (B=8, T=1024, C=768, H=12) per storage dtype: forward and
//     forward+backward ms, for the fallback kernels (a backend created with
//     attention=fallback; fp32 math), the fp32 GEMM path (attention=gemm:
//     cuBLASLt products in fp32, and with attention_tf32=on on TF32 tensor
//     cores) and cuDNN SDPA (attention=cudnn; bf16 and fp16 only).
//     "unavailable: why" when a path refuses the call.
//     "TFLOP/s" counts the causal half of the 4*B*H*T^2*D matmul FLOPs
//     forward and 3.5x that for forward+backward.
//  5. EMBEDDING_BACKWARD at GPT-2 124M's shape (V=50304, C=768, N=8*1024
//     uniformly random ids) per storage dtype: ms per call (zeroing the
//     table, sorting the ids, summing each id's rows).
//  Convolution TFLOP/s (ResNet-50 shapes) per precision is
//  //tools/benchmarks:cnn_benchmark --bench_device=cuda.
// Times: wall clock between stream synchronizations around `reps` launches
// after one warm-up call (launch overhead included, as a training loop sees).
// Flags: --append=PATH appends the tables (with date and device) to PATH,
// e.g. docs/performance.md; --quick uses fewer repetitions.
// Without a device it prints "no CUDA device (...)" and exits 0.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "plugins/backends/cuda/cuda_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {
namespace {

using sdk::BackendClient;
using sdk::DeviceBuffer;
using sdk::MakeTensor;

[[noreturn]] void Die(const std::string& what, const sdk::Status& s) {
  std::fprintf(stderr, "cuda_benchmark: %s: %s\n", what.c_str(), s.message().c_str());
  std::exit(1);
}
void Check(const std::string& what, const sdk::Status& s) {
  if (!s.ok()) Die(what, s);
}

class Bench {
 public:
  explicit Bench(const BackendClient& c) : c_(c) {}
  DeviceBuffer Alloc(size_t bytes) {
    DeviceBuffer b;
    Check("allocate", c_.Allocate(bytes, MNT_MEMORY_WORKSPACE, &b));
    return b;
  }
  // Random values in [-1, 1) written in `dtype` (cast on the device).
  DeviceBuffer Random(int64_t n, MNT_DType dtype) {
    std::vector<float> host(n);
    uint32_t s = 12345u + static_cast<uint32_t>(n);
    for (float& e : host) {
      s = s * 1664525u + 1013904223u;
      e = static_cast<float>(s >> 8) / 8388608.0f - 1.0f;
    }
    DeviceBuffer f32 = Alloc(n * 4);
    Check("upload", c_.ToDevice(f32.data(), host.data(), n * 4));
    DeviceBuffer out = Alloc(n * sdk::DTypeSize(dtype));
    Check("cast", c_.Run(MNT_OP_CAST, {MakeTensor(f32.data(), MNT_DTYPE_F32, {n})},
                         {MakeTensor(out.data(), dtype, {n})}));
    return out;
  }
  // Milliseconds per call of `body`, averaged over `reps` after warm-up.
  double Time(int reps, const std::function<void()>& body) {
    body();  // warm-up (heuristics, allocator, clocks)
    Check("sync", c_.Synchronize());
    struct timespec s0, s1;
    clock_gettime(CLOCK_MONOTONIC, &s0);
    for (int i = 0; i < reps; ++i) body();
    Check("sync", c_.Synchronize());
    clock_gettime(CLOCK_MONOTONIC, &s1);
    return ((s1.tv_sec - s0.tv_sec) * 1e3 + (s1.tv_nsec - s0.tv_nsec) / 1e6) / reps;
  }
  const BackendClient& c() const { return c_; }

 private:
  const BackendClient& c_;
};

struct Precision {
  const char* name;
  MNT_DType dtype;
  MNT_ComputeMode mode;
};
constexpr Precision kPrecisions[] = {{"fp32", MNT_DTYPE_F32, MNT_COMPUTE_F32},
                                     {"tf32", MNT_DTYPE_F32, MNT_COMPUTE_TF32},
                                     {"bf16", MNT_DTYPE_BF16, MNT_COMPUTE_BF16},
                                     {"fp16", MNT_DTYPE_F16, MNT_COMPUTE_F16}};

struct GemmResult {
  std::string precision;
  int64_t size;
  double ms, tflops;
};

std::vector<GemmResult> BenchGemm(Bench& b, bool quick) {
  std::vector<GemmResult> out;
  for (const Precision& p : kPrecisions) {
    for (int64_t s : {4096, 8192}) {
      DeviceBuffer a = b.Random(s * s, p.dtype), w = b.Random(s * s, p.dtype);
      DeviceBuffer c = b.Alloc(s * s * sdk::DTypeSize(p.dtype));
      const MNT_GemmParams gp{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, p.mode};
      const MNT_Tensor ta = MakeTensor(a.data(), p.dtype, {s, s});
      const MNT_Tensor tw = MakeTensor(w.data(), p.dtype, {s, s});
      const MNT_Tensor tc = MakeTensor(c.data(), p.dtype, {s, s});
      const double ms = b.Time(quick ? 3 : (s == 4096 ? 50 : 10), [&] {
        Check("GEMM", b.c().Run(MNT_OP_GEMM, {ta, tw}, {tc}, &gp));
      });
      out.push_back({p.name, s, ms, 2.0 * s * s * s / (ms * 1e-3) / 1e12});
      std::printf("  gemm %s %lld^3: %.3f ms\n", p.name, (long long)s, ms);
    }
  }
  return out;
}

struct BandwidthResult {
  std::string kernel;
  double gbps;
};

std::vector<BandwidthResult> BenchBandwidth(Bench& b, bool quick) {
  const int64_t n = int64_t{64} << 20;  // 64 Mi elements
  const int reps = quick ? 3 : 50;
  DeviceBuffer x = b.Random(n, MNT_DTYPE_F32), y = b.Random(n, MNT_DTYPE_F32);
  DeviceBuffer z = b.Alloc(n * 4), h = b.Alloc(n * 2);
  const MNT_Tensor tx = MakeTensor(x.data(), MNT_DTYPE_F32, {n});
  const MNT_Tensor ty = MakeTensor(y.data(), MNT_DTYPE_F32, {n});
  const MNT_Tensor tz = MakeTensor(z.data(), MNT_DTYPE_F32, {n});
  const MNT_Tensor th = MakeTensor(h.data(), MNT_DTYPE_BF16, {n});
  std::vector<BandwidthResult> out;
  auto gbps = [](double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; };
  const double copy_ms = b.Time(reps, [&] {
    Check("copy", b.c().Copy(z.data(), x.data(), n * 4, MNT_COPY_DEVICE_TO_DEVICE));
  });
  out.push_back({"cudaMemcpy D2D f32 (read+write)", gbps(2.0 * n * 4, copy_ms)});
  const MNT_AddParams ap{MNT_AddParams_STRUCT_SIZE, 1.0f, 2.0f};
  out.push_back({"ADD f32 (2 reads + 1 write)",
                 gbps(3.0 * n * 4, b.Time(reps, [&] {
                        Check("ADD", b.c().Run(MNT_OP_ADD, {tx, ty}, {tz}, &ap));
                      }))});
  out.push_back({"CAST f32->bf16", gbps(6.0 * n, b.Time(reps, [&] {
                                           Check("CAST", b.c().Run(MNT_OP_CAST, {tx}, {th}));
                                         }))});
  const MNT_ActivationParams gelu{MNT_ActivationParams_STRUCT_SIZE, MNT_ACTIVATION_GELU_TANH};
  out.push_back({"GELU bf16 in place", gbps(4.0 * n, b.Time(reps, [&] {
                                               Check("GELU", b.c().Run(MNT_OP_ACTIVATION_FORWARD,
                                                                       {th}, {th}, &gelu));
                                             }))});
  return out;
}

// One MLP training step from backend ops (see the file comment).
double BenchMlpStep(Bench& b, const Precision& p, bool quick) {
  const int64_t batch = 4096, dims[4] = {1024, 4096, 4096, 1024};
  const MNT_DType t = p.dtype;
  const bool mixed = t != MNT_DTYPE_F32;
  struct Layer {
    DeviceBuffer w, bias, master, m, v, dw, db, act, dact;
    int64_t in, out;
  };
  std::vector<Layer> layers(3);
  DeviceBuffer x = b.Random(batch * dims[0], t);
  std::vector<int32_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<int32_t>((i * 37) % dims[3]);
  DeviceBuffer targets = b.Alloc(batch * 4), losses = b.Alloc(batch * 4);
  Check("upload", b.c().ToDevice(targets.data(), labels.data(), batch * 4));
  DeviceBuffer found = b.Alloc(4), inv = b.Alloc(4);
  const float inv_scale = 1.0f / 1024;
  Check("upload", b.c().ToDevice(inv.data(), &inv_scale, 4));
  for (int l = 0; l < 3; ++l) {
    Layer& L = layers[l];
    L.in = dims[l];
    L.out = dims[l + 1];
    L.w = b.Random(L.in * L.out, t);
    L.bias = b.Random(L.out, t);
    L.master = b.Random(L.in * L.out, MNT_DTYPE_F32);
    L.m = b.Random(L.in * L.out, MNT_DTYPE_F32);
    L.v = b.Random(L.in * L.out, MNT_DTYPE_F32);
    L.dw = b.Alloc(L.in * L.out * sdk::DTypeSize(t));
    L.db = b.Alloc(L.out * sdk::DTypeSize(t));
    L.act = b.Alloc(batch * L.out * sdk::DTypeSize(t));
    L.dact = b.Alloc(batch * L.out * sdk::DTypeSize(t));
  }
  auto T = [&](const DeviceBuffer& buf, int64_t r, int64_t c) {
    return MakeTensor(buf.data(), t, {r, c});
  };
  auto V = [&](const DeviceBuffer& buf, int64_t n, MNT_DType dt) {
    return MakeTensor(buf.data(), dt, {n});
  };
  const MNT_ActivationParams relu{MNT_ActivationParams_STRUCT_SIZE, MNT_ACTIVATION_RELU};
  const MNT_CrossEntropyParams ce{MNT_CrossEntropyParams_STRUCT_SIZE, 1.0f / batch, 0};
  const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
  auto step = [&] {
    const BackendClient& c = b.c();
    for (int l = 0; l < 3; ++l) {
      Layer& L = layers[l];
      const MNT_Tensor in = l == 0 ? T(x, batch, L.in) : T(layers[l - 1].act, batch, L.in);
      const MNT_GemmParams gp{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, p.mode};
      Check("fwd GEMM", c.Run(MNT_OP_GEMM, {in, T(L.w, L.in, L.out), V(L.bias, L.out, t)},
                              {T(L.act, batch, L.out)}, &gp));
      if (l < 2) {
        Check("relu", c.Run(MNT_OP_ACTIVATION_FORWARD, {T(L.act, batch, L.out)},
                            {T(L.act, batch, L.out)}, &relu));
      }
    }
    Check("CE", c.Run(MNT_OP_CROSS_ENTROPY,
                      {T(layers[2].act, batch, dims[3]), V(targets, batch, MNT_DTYPE_I32)},
                      {V(losses, batch, MNT_DTYPE_F32), T(layers[2].dact, batch, dims[3])}, &ce));
    for (int l = 2; l >= 0; --l) {
      Layer& L = layers[l];
      const MNT_Tensor dy = T(L.dact, batch, L.out);
      if (l < 2) {
        Check("relu'", c.Run(MNT_OP_ACTIVATION_BACKWARD, {T(L.act, batch, L.out), dy}, {dy},
                             &relu));
      }
      const MNT_Tensor in = l == 0 ? T(x, batch, L.in) : T(layers[l - 1].act, batch, L.in);
      const MNT_GemmParams gw{MNT_GemmParams_STRUCT_SIZE, 1, 0, 1.0f, 0.0f, p.mode};
      Check("dW GEMM", c.Run(MNT_OP_GEMM, {in, dy}, {T(L.dw, L.in, L.out)}, &gw));
      Check("bias grad", c.Run(MNT_OP_BIAS_GRAD, {dy}, {V(L.db, L.out, t)}));
      if (l > 0) {
        const MNT_GemmParams gx{MNT_GemmParams_STRUCT_SIZE, 0, 1, 1.0f, 0.0f, p.mode};
        Check("dX GEMM", c.Run(MNT_OP_GEMM, {dy, T(L.w, L.in, L.out)},
                               {T(layers[l - 1].dact, batch, L.in)}, &gx));
      }
    }
    std::vector<MNT_Tensor> fin;
    if (t == MNT_DTYPE_F16) {
      Check("zero", c.Run(MNT_OP_FILL, {}, {V(found, 1, MNT_DTYPE_F32)}, &zero));
      std::vector<MNT_Tensor> ins = {V(inv, 1, MNT_DTYPE_F32)}, outs = {V(found, 1, MNT_DTYPE_F32)};
      for (Layer& L : layers) {
        ins.push_back(T(L.dw, L.in, L.out));
        outs.push_back(T(L.dw, L.in, L.out));
      }
      Check("unscale", c.Run(MNT_OP_NONFINITE_CHECK_UNSCALE, ins, outs));
      fin = {V(found, 1, MNT_DTYPE_F32)};
    }
    for (Layer& L : layers) {
      const MNT_AdamWParams ap{MNT_AdamWParams_STRUCT_SIZE, 1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f, 1};
      std::vector<MNT_Tensor> in = {T(L.dw, L.in, L.out)};
      if (!fin.empty()) in.push_back(fin[0]);
      std::vector<MNT_Tensor> out = {V(L.master, L.in * L.out, MNT_DTYPE_F32),
                                     V(L.m, L.in * L.out, MNT_DTYPE_F32),
                                     V(L.v, L.in * L.out, MNT_DTYPE_F32)};
      if (mixed) out.push_back(T(L.w, L.in, L.out));
      Check("AdamW", c.Run(MNT_OP_ADAMW_STEP, in, out, &ap));
    }
  };
  return b.Time(quick ? 2 : 20, step);
}

struct AttentionResult {
  const char* impl;
  const char* precision;
  double fwd_ms, fwd_bwd_ms, fwd_tflops, fwd_bwd_tflops;
  std::string unavailable;  // set when the implementation refused the call
};

// One attention implementation, as a backend created with `options` runs it,
// and the storage it takes.
struct AttentionImplRow {
  const char* name;
  const char* options;
  bool fp32, sixteen_bit;
};
constexpr AttentionImplRow kAttentionImpls[] = {
    {"fallback", "attention=fallback", true, true},
    {"gemm (fp32)", "attention=gemm", true, false},
    {"gemm (tf32)", "attention=gemm,attention_tf32=on", true, false},
    {"cudnn", "attention=cudnn", false, true},
};

// `b` runs on a backend created with `row.options`.
std::vector<AttentionResult> BenchAttention(Bench& b, const AttentionImplRow& row, bool quick) {
  const char* impl = row.name;
  const int64_t batch = 8, t = 1024, c = 768, h = 12, d = c / h;
  const MNT_AttentionParams ap{MNT_AttentionParams_STRUCT_SIZE, int32_t(h), 1, 0.0f};
  const double fwd_flops = 4.0 * batch * h * t * t * d / 2;  // causal half
  std::vector<AttentionResult> out;
  for (const Precision& p : kPrecisions) {
    if (p.mode == MNT_COMPUTE_TF32) continue;  // same storage as fp32 (the options pick)
    if (!(p.dtype == MNT_DTYPE_F32 ? row.fp32 : row.sixteen_bit)) continue;
    DeviceBuffer qkv = b.Random(batch * t * 3 * c, p.dtype);
    DeviceBuffer dy = b.Random(batch * t * c, p.dtype);
    DeviceBuffer y = b.Alloc(batch * t * c * sdk::DTypeSize(p.dtype));
    DeviceBuffer lse = b.Alloc(batch * h * t * 4);
    DeviceBuffer dqkv = b.Alloc(batch * t * 3 * c * sdk::DTypeSize(p.dtype));
    const MNT_Tensor tq = MakeTensor(qkv.data(), p.dtype, {batch, t, 3 * c});
    const MNT_Tensor ty = MakeTensor(y.data(), p.dtype, {batch, t, c});
    const MNT_Tensor tl = MakeTensor(lse.data(), MNT_DTYPE_F32, {batch, h, t});
    const MNT_Tensor tdy = MakeTensor(dy.data(), p.dtype, {batch, t, c});
    const MNT_Tensor tdq = MakeTensor(dqkv.data(), p.dtype, {batch, t, 3 * c});
    const sdk::Status first = b.c().Run(MNT_OP_ATTENTION_FORWARD, {tq}, {ty, tl}, &ap);
    if (!first.ok()) {
      if (std::strcmp(impl, "fallback") == 0) Die("ATTENTION_FORWARD", first);
      out.push_back({impl, p.name, 0, 0, 0, 0, first.message()});
      std::printf("  attention %s %s: unavailable: %s\n", impl, p.name,
                  first.message().c_str());
      continue;
    }
    const auto fwd = [&] {
      Check("ATTENTION_FORWARD", b.c().Run(MNT_OP_ATTENTION_FORWARD, {tq}, {ty, tl}, &ap));
    };
    const int reps = quick ? 2 : 10;
    const double fwd_ms = b.Time(reps, fwd);
    const double both_ms = b.Time(reps, [&] {
      fwd();
      Check("ATTENTION_BACKWARD",
            b.c().Run(MNT_OP_ATTENTION_BACKWARD, {tdy, tq, ty, tl}, {tdq}, &ap));
    });
    out.push_back({impl, p.name, fwd_ms, both_ms, fwd_flops / (fwd_ms * 1e-3) / 1e12,
                   3.5 * fwd_flops / (both_ms * 1e-3) / 1e12, ""});
    std::printf("  attention %s %s: fwd %.3f ms, fwd+bwd %.3f ms\n", impl, p.name, fwd_ms,
                both_ms);
  }
  return out;
}

struct EmbeddingResult {
  const char* precision;
  double ms;
};

std::vector<EmbeddingResult> BenchEmbeddingBackward(Bench& b, bool quick) {
  const int64_t vocab = 50304, c = 768, n = 8 * 1024;
  std::vector<int32_t> ids(n);
  uint32_t s = 777u;
  for (int32_t& id : ids) {
    s = s * 1664525u + 1013904223u;
    id = static_cast<int32_t>((s >> 8) % vocab);
  }
  DeviceBuffer dids = b.Alloc(n * 4);
  Check("upload", b.c().ToDevice(dids.data(), ids.data(), n * 4));
  const MNT_Tensor tids = MakeTensor(dids.data(), MNT_DTYPE_I32, {n});
  const MNT_AccumulateParams ap{MNT_AccumulateParams_STRUCT_SIZE, 0};
  std::vector<EmbeddingResult> out;
  for (const Precision& p : kPrecisions) {
    if (p.mode == MNT_COMPUTE_TF32) continue;  // same storage as fp32
    DeviceBuffer dout = b.Random(n * c, p.dtype);
    DeviceBuffer table = b.Alloc(vocab * c * sdk::DTypeSize(p.dtype));
    const MNT_Tensor tdout = MakeTensor(dout.data(), p.dtype, {n, c});
    const MNT_Tensor ttable = MakeTensor(table.data(), p.dtype, {vocab, c});
    const double ms = b.Time(quick ? 3 : 20, [&] {
      Check("EMBEDDING_BACKWARD",
            b.c().Run(MNT_OP_EMBEDDING_BACKWARD, {tdout, tids}, {ttable}, &ap));
    });
    out.push_back({p.name, ms});
    std::printf("  embedding backward %s: %.3f ms\n", p.name, ms);
  }
  return out;
}

MNT_Backend* CreateBackend(const MNT_Plugin_Api* api, const char* options) {
  MNT_Backend_Create_Args ca{};
  ca.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  ca.options = options;
  Check(std::string("Backend_Create(") + (options ? options : "") + ")",
        sdk::StatusFromPluginError(api, api->backend->Backend_Create(&ca)));
  return ca.backend;
}

void DestroyBackend(const MNT_Plugin_Api* api, MNT_Backend* backend) {
  MNT_Backend_Destroy_Args da{};
  da.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  da.backend = backend;
  Check("Backend_Destroy", sdk::StatusFromPluginError(api, api->backend->Backend_Destroy(&da)));
}

std::string Now() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

int Main(int argc, char** argv) {
  std::string append;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--append=", 9) == 0) {
      append = argv[i] + 9;
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "cuda_benchmark: unknown flag %s (known: --append=PATH, --quick)\n",
                   argv[i]);
      return 2;
    }
  }
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("cuda_benchmark: no CUDA device (cudaGetDeviceCount: %s); nothing measured\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 0;
  }
  const MNT_Plugin_Api* api = CudaBackendPluginApi();
  MNT_Backend_Create_Args ca{};
  ca.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  Check("Backend_Create", sdk::StatusFromPluginError(api, api->backend->Backend_Create(&ca)));
  int64_t device_memory = 0;
  std::string device;
  {
    MNT_Backend_GetInfo_Args gi{};
    gi.struct_size = MNT_Backend_GetInfo_Args_STRUCT_SIZE;
    gi.backend = ca.backend;
    Check("GetInfo", sdk::StatusFromPluginError(api, api->backend->Backend_GetInfo(&gi)));
    device = gi.device_name;
    device_memory = gi.total_memory_bytes;
  }
  (void)device_memory;
  std::string report;
  auto emit = [&](const std::string& line) {
    std::printf("%s\n", line.c_str());
    report += line + "\n";
  };
  {
    BackendClient client(api, ca.backend);
    Bench b(client);
    std::printf("cuda_benchmark on %s\n", device.c_str());
    const std::vector<GemmResult> gemm = BenchGemm(b, quick);
    double peak = 0;
    for (const GemmResult& g : gemm) peak = std::max(peak, g.tflops);
    emit("### " + Now() + " — " + device + "\n");
    emit("cuBLASLt GEMM (M=N=K, row-major, A·B, alpha 1, beta 0). \"% of peak\" is "
         "relative to the best rate measured in this run.\n");
    emit("| precision | size | ms | TFLOP/s | % of peak |");
    emit("|---|---|---|---|---|");
    char line[256];
    for (const GemmResult& g : gemm) {
      std::snprintf(line, sizeof(line), "| %s | %lld³ | %.3f | %.1f | %.0f%% |",
                    g.precision.c_str(), (long long)g.size, g.ms, g.tflops,
                    100.0 * g.tflops / peak);
      emit(line);
    }
    const std::vector<BandwidthResult> bw = BenchBandwidth(b, quick);
    emit("\nElementwise bandwidth (64 Mi elements):\n");
    emit("| kernel | GB/s | % of D2D copy |");
    emit("|---|---|---|");
    for (const BandwidthResult& r : bw) {
      std::snprintf(line, sizeof(line), "| %s | %.0f | %.0f%% |", r.kernel.c_str(), r.gbps,
                    100.0 * r.gbps / bw[0].gbps);
      emit(line);
    }
    emit("\nMLP training step from backend ops (1024→4096→4096→1024, batch 4096):\n");
    emit("| precision | ms / step |");
    emit("|---|---|");
    for (const Precision& p : kPrecisions) {
      std::snprintf(line, sizeof(line), "| %s | %.2f |", p.name, BenchMlpStep(b, p, quick));
      emit(line);
    }
    emit("\nCausal attention at GPT-2 124M's shape (B=8, T=1024, C=768, H=12): the "
         "fallback kernels (fp32 math) vs the fp32 GEMM path (cuBLASLt, fp32 or TF32 "
         "products) vs cuDNN SDPA (flash attention, 16-bit):\n");
    emit("| attention | storage | fwd ms | fwd TFLOP/s | fwd+bwd ms | fwd+bwd TFLOP/s |");
    emit("|---|---|---|---|---|---|");
    std::vector<AttentionResult> attention;
    for (const AttentionImplRow& impl : kAttentionImpls) {
      MNT_Backend* backend = CreateBackend(api, impl.options);
      {
        BackendClient ac(api, backend);
        Bench ab(ac);
        for (AttentionResult& r : BenchAttention(ab, impl, quick)) attention.push_back(r);
      }
      DestroyBackend(api, backend);
    }
    for (const AttentionResult& r : attention) {
      if (!r.unavailable.empty()) {
        emit(std::string("| ") + r.impl + " | " + r.precision + " | unavailable: " +
             r.unavailable + " | | | |");
        continue;
      }
      std::snprintf(line, sizeof(line), "| %s | %s | %.2f | %.2f | %.2f | %.2f |", r.impl,
                    r.precision, r.fwd_ms, r.fwd_tflops, r.fwd_bwd_ms, r.fwd_bwd_tflops);
      emit(line);
    }
    emit("\nEmbedding backward at GPT-2 124M's shape (V=50304, C=768, N=8192 random "
         "ids; sorted, deterministic):\n");
    emit("| storage | ms |");
    emit("|---|---|");
    for (const EmbeddingResult& r : BenchEmbeddingBackward(b, quick)) {
      std::snprintf(line, sizeof(line), "| %s | %.3f |", r.precision, r.ms);
      emit(line);
    }
  }
  MNT_Backend_Destroy_Args da{};
  da.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  da.backend = ca.backend;
  Check("Backend_Destroy", sdk::StatusFromPluginError(api, api->backend->Backend_Destroy(&da)));
  if (!append.empty()) {
    // bazel run executes in the runfiles tree; relative paths mean the workspace.
    const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    const std::string path = append[0] == '/' || ws == nullptr ? append : std::string(ws) + "/" + append;
    FILE* f = std::fopen(path.c_str(), "a");
    if (f == nullptr) {
      std::fprintf(stderr, "cuda_benchmark: cannot append to %s\n", path.c_str());
      return 1;
    }
    std::fprintf(f, "\n%s", report.c_str());
    std::fclose(f);
    std::printf("appended to %s\n", path.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace mnt::cuda

int main(int argc, char** argv) { return mnt::cuda::Main(argc, argv); }
