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

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mnt::cuda {

// A shape's key for SlowPaths::Note from the numbers that tell it apart.
inline uint64_t ShapeKey(std::initializer_list<int64_t> fields) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t f : fields) h = (h ^ static_cast<uint64_t>(f)) * 0x100000001b3ull;
  return h;
}

class SlowPaths {
 public:
  // Counts one call of `kind` at the shape `key` identifies; the first one
  // is said on `out` with shape() and why(), which are called only then:
  // a slow path taken at every step costs a hash and a lookup, no
  // formatting.
  template <typename Shape, typename Why>
  void Note(std::string_view kind, uint64_t key, Shape&& shape, Why&& why) {
    Entry& e = entries_[Key(kind, key)];
    if (e.calls++ == 0) {
      e.kind = kind;
      e.shape = shape();
      std::fprintf(out_, "mantissa: cuda backend: slow path: %s: %s: %s\n", e.kind.c_str(),
                   e.shape.c_str(), why().c_str());
    }
  }
  // The same with the shape's text as its key.
  template <typename Why>
  void Note(std::string_view kind, const std::string& shape, Why&& why) {
    Note(kind, std::hash<std::string>()(shape), [&] { return shape; }, std::forward<Why>(why));
  }

  // Counts one call of a slow path that is said elsewhere (once).
  void Count(std::string_view kind, const std::string& shape) {
    Entry& e = entries_[Key(kind, std::hash<std::string>()(shape))];
    if (e.calls++ == 0) {
      e.kind = kind;
      e.shape = shape;
    }
  }

  // "<calls> x <kind>: <shape>" per kind and shape, sorted; "" if none.
  std::string Report() const {
    std::vector<const Entry*> sorted;
    for (const auto& [key, e] : entries_) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
      return std::tie(a->kind, a->shape) < std::tie(b->kind, b->shape);
    });
    std::string out;
    for (const Entry* e : sorted) {
      out += std::to_string(e->calls) + " x " + e->kind + ": " + e->shape + "\n";
    }
    return out;
  }
  int64_t Calls(std::string_view kind) const {
    int64_t n = 0;
    for (const auto& [key, e] : entries_) {
      if (e.kind == kind) n += e.calls;
    }
    return n;
  }
  void set_output(FILE* out) { out_ = out; }

 private:
  struct Entry {
    int64_t calls = 0;
    std::string kind, shape;  // as first noted
  };
  static uint64_t Key(std::string_view kind, uint64_t key) {
    return std::hash<std::string_view>()(kind) * 0x9e3779b97f4a7c15ull ^ key;
  }
  std::unordered_map<uint64_t, Entry> entries_;
  FILE* out_ = stderr;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_SLOW_PATHS_H_
