#include "plugins/backends/cpu/onednn_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "plugins/sdk/status.h"

namespace mnt::cpu::onednn {

namespace {

struct Loaded {
  Api api;
  bool ok = false;
  std::string why;
};

Loaded LoadOnce() {
  Loaded l;
  const char* env = std::getenv("MANTISSA_ONEDNN_LIBRARY");
  const char* path = env != nullptr && *env != '\0' ? env : "libdnnl.so.2";
  // RTLD_LOCAL: oneDNN's symbols stay out of the process's global scope.
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    l.why = sdk::Format("cannot load oneDNN (%s): %s", path, err ? err : "unknown error");
    return l;
  }
#define MNT_ONEDNN_RESOLVE_(f)                                            \
  l.api.f = reinterpret_cast<decltype(&::f)>(dlsym(handle, #f));          \
  if (l.api.f == nullptr) {                                               \
    l.why = sdk::Format("%s lacks %s (oneDNN 2.x expected)", path, #f);   \
    return l;                                                             \
  }
  MNT_ONEDNN_FUNCTIONS(MNT_ONEDNN_RESOLVE_)
#undef MNT_ONEDNN_RESOLVE_
  // The handle is never closed: primitives live as long as the process.
  l.ok = true;
  return l;
}

}  // namespace

const Api* Load(std::string* why) {
  static const Loaded* loaded = new Loaded(LoadOnce());
  if (!loaded->ok) {
    if (why != nullptr) *why = loaded->why;
    return nullptr;
  }
  return &loaded->api;
}

std::string VersionString(const Api& api) {
  const dnnl_version_t* v = api.dnnl_version();
  return sdk::Format("%d.%d.%d", v->major, v->minor, v->patch);
}

const char* IsaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
  }
}

bool HasNativeBf16(dnnl_cpu_isa_t isa) {
  // The ISA values are nested bit sets: each includes the ones below it.
  const unsigned bf16 = dnnl_cpu_isa_avx512_core_bf16;
  return (static_cast<unsigned>(isa) & bf16) == bf16;
}

}  // namespace mnt::cpu::onednn
