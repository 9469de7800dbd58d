// oneDNN on its own, no Mantissa in between: the bf16, f16 and fp32 matmul
// peak of this CPU (the rate Mantissa's GEMM-bound training is measured
// against) and ResNet-50's convolution layers, each pass as one primitive in the
// layouts oneDNN prefers (activations, weights and results reordered once,
// outside the timing). Written against both C++ API generations (oneDNN 2.x:
// operation descriptors; 3.x: primitive descriptors built directly), so one
// source measures Debian's 2.6 and PyPI's 3.2 on the same work:
//
//   tools/bazel run //tools/benchmarks:onednn_bench    # Debian 2.6
//   g++ -O2 -std=c++17 -I$ONEDNN3/include tools/benchmarks/onednn_bench.cc
//       -L$ONEDNN3/lib -ldnnl -Wl,-rpath,$ONEDNN3/lib -o /tmp/onednn3_bench    # 3.x
//
// (docs/performance.md, "oneDNN 2.6 or 3.2", has the wheels and the run.)
//
// Threads: oneDNN's own OpenMP team (OMP_NUM_THREADS). Each number is the
// best of at least 5 timed calls and --min_time seconds (0.5) after one
// untimed call.
// Output: one line per measurement, "<what> <TFLOP/s>", and the version; a
// primitive this oneDNN lacks on this CPU (2.6 has no f16 matmul) prints
// "<what> unimplemented (...)" instead of ending the run.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Clock = std::chrono::steady_clock;

constexpr int kMajor = DNNL_VERSION_MAJOR;

// Timed calls last at least this long in all (--min_time): on a shared
// machine a longer window gives the best call more chances to run alone.
double min_time_s = 0.5;

// Best seconds of one call of f.
template <typename F>
double BestSeconds(F f) {
  f();
  double best = 1e30, total = 0;
  for (int i = 0; i < 5 || total < min_time_s; ++i) {
    const auto t0 = Clock::now();
    f();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
  }
  return best;
}

// A memory object of `md`, filled with small values of the right type.
memory Filled(const memory::desc& md, const dnnl::engine& eng, memory::data_type dt) {
  memory m(md, eng);
  const bool f32 = dt == memory::data_type::f32;
  const size_t bytes = md.get_size();
  auto* p = static_cast<uint8_t*>(m.get_data_handle());
  for (size_t i = 0; i + (f32 ? 4 : 2) <= bytes; i += f32 ? 4 : 2) {
    const float v = 0.01f * static_cast<float>((i / (f32 ? 4 : 2)) % 17) - 0.08f;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (f32) {
      std::memcpy(p + i, &bits, 4);
    } else if (dt == memory::data_type::f16) {
      const _Float16 h = static_cast<_Float16>(v);
      std::memcpy(p + i, &h, 2);
    } else {
      const uint16_t h = static_cast<uint16_t>(bits >> 16);  // bf16
      std::memcpy(p + i, &h, 2);
    }
  }
  return m;
}

const char* Name(memory::data_type dt) {
  return dt == memory::data_type::bf16 ? "bf16" : dt == memory::data_type::f16 ? "f16" : "f32";
}

// C[m,n] = A[m,k] B[k,n]: A and C row-major; B row-major ("plain") or in
// the layout the primitive prefers ("packed", reordered once).
void Matmul(const dnnl::engine& eng, dnnl::stream& s, memory::data_type dt, int64_t m,
            int64_t n, int64_t k, bool packed_b, const char* label) {
  const memory::desc a({m, k}, dt, memory::format_tag::ab);
  const memory::desc b({k, n}, dt, packed_b ? memory::format_tag::any : memory::format_tag::ab);
  const memory::desc c({m, n}, memory::data_type::f32, memory::format_tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  const dnnl::matmul::primitive_desc pd(eng, a, b, c);
#else
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng);
#endif
  memory am = Filled(a, eng, dt), bm = Filled(pd.weights_desc(), eng, dt), cm(c, eng);
  dnnl::matmul mm(pd);
  const double sec = BestSeconds([&] {
    mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    s.wait();
  });
  std::printf("matmul %s %s %lldx%lldx%lld%s %.3f\n", Name(dt), label,
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
              packed_b ? " B-packed" : "", 2.0 * m * n * k / sec / 1e12);
  std::fflush(stdout);
}

struct Layer {
  const char* name;
  int64_t c, h, k, r, stride, pad;
};

// The distinct shapes of ResNet-50 (as //tools/benchmarks:cnn_benchmark).
const Layer kLayers[] = {
    {"conv1_7x7/2", 3, 224, 64, 7, 2, 3},      {"res2_1x1", 64, 56, 64, 1, 1, 0},
    {"res2_3x3", 64, 56, 64, 3, 1, 1},         {"res3_3x3", 128, 28, 128, 3, 1, 1},
    {"res4_3x3", 256, 14, 256, 3, 1, 1},       {"res4_1x1_up", 256, 14, 1024, 1, 1, 0},
    {"res5_3x3", 512, 7, 512, 3, 1, 1},
};

void Conv(const dnnl::engine& eng, dnnl::stream& s, memory::data_type dt, int64_t n,
          const Layer& l) {
  using dnnl::algorithm;
  using dnnl::prop_kind;
  const int64_t p = (l.h + 2 * l.pad - l.r) / l.stride + 1;
  const memory::dims src{n, l.c, l.h, l.h}, wei{l.k, l.c, l.r, l.r}, dst{n, l.k, p, p};
  const memory::dims strides{l.stride, l.stride}, pad{l.pad, l.pad};
  const memory::dims pad_r{(p - 1) * l.stride + l.r - l.h - l.pad,
                           (p - 1) * l.stride + l.r - l.h - l.pad};
  const auto any = memory::format_tag::any;
  const memory::desc src_md(src, dt, any), wei_md(wei, dt, any), dst_md(dst, dt, any);
  // fp32 weight gradient for bf16 (the precision's fp32 accumulation).
  const memory::desc dwei_md(wei, memory::data_type::f32, any);
  const double flops = 2.0 * n * l.k * p * p * l.c * l.r * l.r;
#if DNNL_VERSION_MAJOR >= 3
  const dnnl::convolution_forward::primitive_desc fwd(
      eng, prop_kind::forward_training, algorithm::convolution_direct, src_md, wei_md, dst_md,
      strides, pad, pad_r);
  const dnnl::convolution_backward_data::primitive_desc bwd_d(
      eng, algorithm::convolution_direct, src_md, wei_md, dst_md, strides, pad, pad_r, fwd);
  const dnnl::convolution_backward_weights::primitive_desc bwd_w(
      eng, algorithm::convolution_direct, src_md, dwei_md, dst_md, strides, pad, pad_r, fwd);
#else
  const dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(prop_kind::forward_training,
                                      algorithm::convolution_direct, src_md, wei_md, dst_md,
                                      strides, pad, pad_r),
      eng);
  const dnnl::convolution_backward_data::primitive_desc bwd_d(
      dnnl::convolution_backward_data::desc(algorithm::convolution_direct, src_md, wei_md,
                                            dst_md, strides, pad, pad_r),
      eng, fwd);
  const dnnl::convolution_backward_weights::primitive_desc bwd_w(
      dnnl::convolution_backward_weights::desc(algorithm::convolution_direct, src_md, dwei_md,
                                               dst_md, strides, pad, pad_r),
      eng, fwd);
#endif
  memory x = Filled(fwd.src_desc(), eng, dt), w = Filled(fwd.weights_desc(), eng, dt);
  memory y(fwd.dst_desc(), eng);
  memory dy = Filled(bwd_d.diff_dst_desc(), eng, dt), wd = Filled(bwd_d.weights_desc(), eng, dt);
  memory dx(bwd_d.diff_src_desc(), eng);
  memory xw = Filled(bwd_w.src_desc(), eng, dt), dyw = Filled(bwd_w.diff_dst_desc(), eng, dt);
  memory dw(bwd_w.diff_weights_desc(), eng);
  dnnl::convolution_forward f(fwd);
  dnnl::convolution_backward_data bd(bwd_d);
  dnnl::convolution_backward_weights bw(bwd_w);
  const double tf = BestSeconds([&] {
    f.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
    s.wait();
  });
  const double td = BestSeconds([&] {
    bd.execute(s, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, wd}, {DNNL_ARG_DIFF_SRC, dx}});
    s.wait();
  });
  const double tw = BestSeconds([&] {
    bw.execute(s, {{DNNL_ARG_SRC, xw}, {DNNL_ARG_DIFF_DST, dyw}, {DNNL_ARG_DIFF_WEIGHTS, dw}});
    s.wait();
  });
  std::printf("conv %s %s n%lld fwd/bwd-data/bwd-filter %.3f %.3f %.3f (%s, %s, %s)\n",
              Name(dt), l.name, static_cast<long long>(n), flops / tf / 1e12,
              flops / td / 1e12, flops / tw / 1e12, fwd.impl_info_str(),
              bwd_d.impl_info_str(), bwd_w.impl_info_str());
  std::fflush(stdout);
}

// Runs f, or says which primitive this oneDNN lacks on this CPU.
template <typename F>
void OrUnimplemented(const std::string& what, F f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    std::printf("%s unimplemented (%s)\n", what.c_str(), e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --what=matmul,conv (default both); --size=N for the square matmul.
  std::string what = "matmul,conv", types = "bf16,f16,f32";
  int64_t size = 2048, batch = 8;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--what=", 7) == 0) what = argv[i] + 7;
    else if (std::strncmp(argv[i], "--size=", 7) == 0) size = std::atoll(argv[i] + 7);
    else if (std::strncmp(argv[i], "--batch=", 8) == 0) batch = std::atoll(argv[i] + 8);
    else if (std::strncmp(argv[i], "--min_time=", 11) == 0) min_time_s = std::atof(argv[i] + 11);
    else if (std::strncmp(argv[i], "--types=", 8) == 0) types = argv[i] + 8;
    else {
      std::fprintf(stderr, "onednn_bench: error: unknown argument '%s' (--what=matmul,conv "
                   "--size=N --batch=N --min_time=S --types=bf16,f16,f32)\n", argv[i]);
      return 1;
    }
  }
  const dnnl_version_t* v = dnnl_version();
  std::printf("oneDNN %d.%d.%d (API %d)\n", v->major, v->minor, v->patch, kMajor);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  // The data types asked for (--types), in that order.
  std::vector<memory::data_type> dts;
  for (auto dt : {memory::data_type::bf16, memory::data_type::f16, memory::data_type::f32}) {
    if (("," + types + ",").find(std::string(",") + Name(dt) + ",") != std::string::npos) {
      dts.push_back(dt);
    }
  }
  if (what.find("matmul") != std::string::npos) {
    for (auto dt : dts) {
      for (bool packed : {false, true}) {
        OrUnimplemented(std::string("matmul ") + Name(dt) + " square", [&] {
          Matmul(eng, s, dt, size, size, size, packed, "square");
        });
      }
    }
    // The 8-layer GPT's products (B*T = 2048 rows, d 512): QKV, MLP up and
    // down, and the weight gradient of MLP up (K = 2048).
    for (auto dt : dts) {
      OrUnimplemented(std::string("matmul ") + Name(dt) + " gpt8", [&] {
        Matmul(eng, s, dt, 2048, 1536, 512, false, "gpt8-qkv");
        Matmul(eng, s, dt, 2048, 2048, 512, false, "gpt8-mlp-up");
        Matmul(eng, s, dt, 2048, 512, 2048, false, "gpt8-mlp-down");
        Matmul(eng, s, dt, 512, 2048, 2048, false, "gpt8-dw-up");
      });
    }
  }
  if (what.find("conv") != std::string::npos) {
    for (auto dt : dts) {
      for (const Layer& l : kLayers) {
        OrUnimplemented(std::string("conv ") + Name(dt) + " " + l.name,
                        [&] { Conv(eng, s, dt, batch, l); });
      }
    }
  }
  return 0;
}
