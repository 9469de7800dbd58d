#include "trainer/loader/plugin_file.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "trainer/loader/elf_check.h"
#include "trainer/loader/plugin_validation.h"

namespace mnt::trainer {

absl::StatusOr<PluginFile> PluginFile::Open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  // dlopen() maps what the headers say; a truncated file would fault (SIGBUS)
  // inside it rather than fail.
  if (absl::Status s = CheckElfSharedObject(path); !s.ok()) {
    return RefusePlugin(path, std::string(s.message()));
  }
  // A bare name would make dlopen() search the library path instead.
  const std::string open_path =
      path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void* handle = dlopen(open_path.c_str(), kPluginDlopenFlags);
  if (handle == nullptr) {
    const char* why = dlerror();
    return RefusePlugin(
        path, absl::StrCat("dlopen failed: ",
                           absl::StrReplaceAll(
                               why != nullptr ? why : "unknown error",
                               {{"\n", " "}})));
  }
  auto* entry = reinterpret_cast<MNT_GetPluginApi_Fn*>(
      dlsym(handle, MNT_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) {
    dlclose(handle);
    return RefusePlugin(path, "not a Mantissa plugin: it does not export "
                              MNT_PLUGIN_ENTRY_SYMBOL);
  }
  return PluginFile(handle, entry);
}

PluginFile::~PluginFile() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace mnt::trainer
