// What an MNT_Backend / MNT_Event handle points to in this plugin. The ABI
// types stay opaque (no definition here) so that several backends can be
// linked into one binary without clashing definitions.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_BACKEND_STATE_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_BACKEND_STATE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/cpu/allocator.h"

namespace mnt::cpu {

struct CpuEvent {
  bool recorded = false;
  std::chrono::steady_clock::time_point time;
};

struct CpuBackend {
  // Catches handles from another plugin or already destroyed ones.
  static constexpr uint64_t kMagic = 0x6d6e745f63707531ull;  // "mnt_cpu1"
  uint64_t magic = kMagic;
  Allocator allocator;
  std::string device_name;
  std::set<CpuEvent*> events;

  ~CpuBackend() {
    for (CpuEvent* e : events) delete e;
    magic = 0;
  }
};

inline CpuBackend* FromHandle(MNT_Backend* b) {
  return reinterpret_cast<CpuBackend*>(b);
}
inline MNT_Backend* ToHandle(CpuBackend* b) {
  return reinterpret_cast<MNT_Backend*>(b);
}
inline CpuEvent* FromHandle(MNT_Event* e) {
  return reinterpret_cast<CpuEvent*>(e);
}
inline MNT_Event* ToHandle(CpuEvent* e) {
  return reinterpret_cast<MNT_Event*>(e);
}

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_BACKEND_STATE_H_
