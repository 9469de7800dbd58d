#include "third_party/mpi/mpi_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace mnt::mpi {
namespace {

struct Loaded {
  Api api;
  bool ok = false;
  std::string why;
};

Loaded LoadOnce() {
  Loaded l;
  const char* env = std::getenv("MANTISSA_MPI_LIBRARY");
  const char* path = env != nullptr && *env != '\0' ? env : "libmpi.so.40";
  // RTLD_GLOBAL: Open MPI's own components, which it dlopen()s, resolve
  // symbols of libmpi against the global scope.
  void* handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    l.why = std::string("cannot load MPI (") + path + "): " + (err ? err : "unknown error") +
            " (Debian: apt-get install openmpi-bin libopenmpi-dev)";
    return l;
  }
#define MNT_MPI_RESOLVE_(f)                                                  \
  l.api.f = reinterpret_cast<decltype(&::f)>(dlsym(handle, #f));             \
  if (l.api.f == nullptr) {                                                  \
    l.why = std::string(path) + " lacks " #f " (Open MPI 4 expected)";       \
    return l;                                                                \
  }
  MNT_MPI_FUNCTIONS(MNT_MPI_RESOLVE_)
#undef MNT_MPI_RESOLVE_
  l.api.comm_world = static_cast<MPI_Comm>(dlsym(handle, "ompi_mpi_comm_world"));
  l.api.byte = static_cast<MPI_Datatype>(dlsym(handle, "ompi_mpi_byte"));
  if (l.api.comm_world == nullptr || l.api.byte == nullptr) {
    l.why = std::string(path) + " is not Open MPI (no ompi_mpi_comm_world / ompi_mpi_byte)";
    return l;
  }
  // Never closed: MPI lives as long as the process.
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

bool IsInitialized(const Api& api) {
  int initialized = 0, finalized = 0;
  api.MPI_Initialized(&initialized);
  api.MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

std::string EnsureInitialized(const Api& api) {
  int finalized = 0;
  api.MPI_Finalized(&finalized);
  if (finalized != 0) return "MPI was finalized already";
  int initialized = 0;
  api.MPI_Initialized(&initialized);
  if (initialized != 0) return "";
  int provided = 0;
  const int rc = api.MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  return ErrorText(api, "MPI_Init_thread", rc);
}

std::string ErrorText(const Api& api, const char* call, int code) {
  if (code == MPI_SUCCESS) return "";
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (api.MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return std::string(call) + ": MPI error " + std::to_string(code);
  }
  return std::string(call) + ": " + std::string(text, length);
}

}  // namespace mnt::mpi
