// One plugin shared object, opened: dlopen(RTLD_NOW | RTLD_LOCAL) and its
// MNT_GetPluginApi entry point resolved. Closes the file on destruction
// unless the handle was released to the registry.
#ifndef MANTISSA_TRAINER_LOADER_PLUGIN_FILE_H_
#define MANTISSA_TRAINER_LOADER_PLUGIN_FILE_H_

#include <dlfcn.h>

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "plugins/abi/mnt_common.h"

namespace mnt::trainer {

// dlopen() flags for a plugin. Under AddressSanitizer (--config=asan) a
// plugin also stays mapped after dlclose (RTLD_NODELETE): what the libraries
// it pulled in keep in their globals on purpose would otherwise be reported
// by LeakSanitizer as leaked from an unknown module (seen: two 72704-byte
// blocks, the size of libstdc++'s emergency exception pool, after the CUDA
// backend was probed and closed on a machine without a GPU).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr int kPluginDlopenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
#else
inline constexpr int kPluginDlopenFlags = RTLD_NOW | RTLD_LOCAL;
#endif

class PluginFile {
 public:
  // A missing file is NotFound; one dlopen refuses or that does not export
  // MNT_GetPluginApi is FailedPrecondition. One line naming `path`.
  static absl::StatusOr<PluginFile> Open(const std::string& path);

  PluginFile(PluginFile&& o) noexcept
      : handle_(std::exchange(o.handle_, nullptr)), entry_(o.entry_) {}
  PluginFile& operator=(PluginFile&&) = delete;
  PluginFile(const PluginFile&) = delete;
  PluginFile& operator=(const PluginFile&) = delete;
  ~PluginFile();

  // The plugin's table (static storage inside the file).
  const MNT_Plugin_Api* api() const { return entry_(); }
  // Hands the dlopen handle over: the caller dlclose()s it.
  void* Release() { return std::exchange(handle_, nullptr); }

 private:
  PluginFile(void* handle, MNT_GetPluginApi_Fn* entry)
      : handle_(handle), entry_(entry) {}

  void* handle_;
  MNT_GetPluginApi_Fn* entry_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_PLUGIN_FILE_H_
