#include "plugins/backends/cuda/nccl_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>

#include "plugins/sdk/status.h"

namespace mnt::cuda::nccl {

namespace {

const char* ResultName(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "unknown ncclResult_t";
  }
}

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::unique_ptr<const Api> LoadFrom(const std::string& file, std::string* why) {
  dlerror();
  // RTLD_LOCAL: NCCL's symbols stay out of the process's global scope, so
  // they never interpose on a copy something else in the process loaded.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    if (why != nullptr) {
      *why = OneLine("NCCL is not available: " + std::string(err != nullptr ? err : file));
    }
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  std::string missing;
#define MNT_NCCL_RESOLVE_(f)                                               \
  api->f = reinterpret_cast<decltype(&::f)>(dlsym(handle, #f));            \
  if (api->f == nullptr && missing.empty()) missing = #f;
  MNT_NCCL_FUNCTIONS(MNT_NCCL_RESOLVE_)
#undef MNT_NCCL_RESOLVE_
  if (!missing.empty()) {
    if (why != nullptr) {
      *why = "NCCL is not available: " + file + " has no " + missing + " (NCCL 2.4 or later "
             "needed)";
    }
    dlclose(handle);
    return nullptr;
  }
  api->ncclGetLastError =
      reinterpret_cast<decltype(&::ncclGetLastError)>(dlsym(handle, "ncclGetLastError"));
  if (const ncclResult_t r = api->ncclGetVersion(&api->version); r != ncclSuccess) {
    if (why != nullptr) *why = "NCCL is not available: " + ErrorText(*api, "ncclGetVersion", r);
    dlclose(handle);
    return nullptr;
  }
  api->file = file;
  // The handle is never closed: communicators live as long as the process
  // may use them.
  return api;
}

const Api* Load(std::string* why) {
  struct Loaded {
    std::unique_ptr<const Api> api;
    std::string why;
  };
  static const Loaded* const loaded = [] {
    auto* l = new Loaded;  // never destroyed
    const char* env = std::getenv("MANTISSA_NCCL_LIBRARY");
    l->api = LoadFrom(env != nullptr && *env != '\0' ? env : "libnccl.so.2", &l->why);
    return l;
  }();
  if (loaded->api == nullptr && why != nullptr) *why = loaded->why;
  return loaded->api.get();
}

std::string VersionString(int code) {
  // NCCL_VERSION(X,Y,Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z
  // from 2.9 on.
  if (code < 10000) return sdk::Format("%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
  return sdk::Format("%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
}

std::string ErrorText(const Api& api, const char* call, ncclResult_t result, ncclComm_t comm) {
  if (result == ncclSuccess) return "";
  std::string s = std::string(call) + ": ";
  const char* text = api.ncclGetErrorString != nullptr ? api.ncclGetErrorString(result) : nullptr;
  s += text != nullptr ? text : "error";
  s += std::string(" (") + ResultName(result);
  const char* last = api.ncclGetLastError != nullptr ? api.ncclGetLastError(comm) : nullptr;
  if (last != nullptr && *last != '\0') s += std::string("; last NCCL error: ") + last;
  s += ")";
  return OneLine(std::move(s));
}

}  // namespace mnt::cuda::nccl
