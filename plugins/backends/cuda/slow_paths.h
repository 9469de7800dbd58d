// The cuda backend's slow paths, never silent: a fused GEMM epilogue cuBLASLt
// refused (the unfused sequence runs), attention on the fallback kernels, a
// step that cannot be captured into a CUDA graph. Each is said once per
// kind and shape on stderr, "mantissa: cuda backend: slow path: <kind>:
// <shape>: <why>" (the device check lists these lines), and every call that
// took it is counted; Report() gives the counts, one line per kind and
// shape, which the backend prints when it is destroyed (the end of a run).
// Host-only, no CUDA: tested on the CPU (slow_paths_test.cc).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_SLOW_PATHS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_SLOW_PATHS_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace mnt::cuda {

class SlowPaths {
 public:
  // Counts one call of `kind` at `shape`; the first one is said on `out`
  // with why() (called only then, so formatting costs nothing later).
  template <typename Why>
  void Note(const std::string& kind, const std::string& shape, Why&& why) {
    Entry& e = entries_[{kind, shape}];
    if (e.calls++ == 0) {
      std::fprintf(out_, "mantissa: cuda backend: slow path: %s: %s: %s\n", kind.c_str(),
                   shape.c_str(), why().c_str());
    }
  }

  // Counts one call of a slow path that is said elsewhere (once).
  void Count(const std::string& kind, const std::string& shape) {
    ++entries_[{kind, shape}].calls;
  }

  // "<calls> x <kind>: <shape>" per kind and shape, in order; "" if none.
  std::string Report() const {
    std::string out;
    for (const auto& [key, e] : entries_) {
      out += std::to_string(e.calls) + " x " + key.first + ": " + key.second + "\n";
    }
    return out;
  }
  int64_t Calls(const std::string& kind) const {
    int64_t n = 0;
    for (const auto& [key, e] : entries_) {
      if (key.first == kind) n += e.calls;
    }
    return n;
  }
  void set_output(FILE* out) { out_ = out; }

 private:
  struct Entry {
    int64_t calls = 0;
  };
  std::map<std::pair<std::string, std::string>, Entry> entries_;
  FILE* out_ = stderr;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_SLOW_PATHS_H_
