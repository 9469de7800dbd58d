// Keeps the plugins a trainer run uses, by kind and name.
//
// A plugin is a shared object exporting MNT_GetPluginApi (plugins/abi). The
// registry finds mnt_<kind>_<name>.so on the search path (search_path.h),
// opens it (plugin_file.h), checks that it speaks this host's ABI
// (plugin_validation.h), calls its Plugin_Initialize once and keeps the file
// open until the registry is destroyed. Every refusal is one line naming the
// file and the reason. Tests can register plugins linked statically instead.
//
// Lifetime: everything obtained from a plugin (backend instances, models,
// loss scalers, errors) must be destroyed before the registry, which
// dlclose()s the files. A registry is not thread-safe: load everything from
// one thread before the run starts.
#ifndef MANTISSA_TRAINER_LOADER_PLUGIN_REGISTRY_H_
#define MANTISSA_TRAINER_LOADER_PLUGIN_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
// What callers of the registry use beside it: names, validation, errors.
#include "trainer/loader/plugin_names.h"
#include "trainer/loader/plugin_status.h"
#include "trainer/loader/plugin_validation.h"
#include "trainer/loader/search_path.h"

namespace mnt::trainer {

struct LoadedPlugin {
  std::string origin;  // file path, or "static:<name>"
  void* handle;        // dlopen handle, or nullptr for static plugins
  const MNT_Plugin_Api* api;
};

class PluginRegistry {
 public:
  explicit PluginRegistry(std::vector<std::string> search_dirs);
  ~PluginRegistry();

  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // PluginSearchPath (search_path.h): --plugin_path, $MANTISSA_PLUGIN_PATH,
  // the runfiles, the executable's directory, ../lib/mantissa/plugins.
  static std::vector<std::string> DefaultSearchPath(
      const std::string& plugin_path_flag, const std::string& argv0) {
    return PluginSearchPath(plugin_path_flag, argv0);
  }

  const std::vector<std::string>& search_dirs() const { return search_dirs_; }

  // An unknown plugin name's error lists the directories searched (long);
  // by default it says only how to see them (train --verbose).
  void set_verbose_errors(bool verbose) { verbose_errors_ = verbose; }

  // dlopen()s `path`, validates its MNT_Plugin_Api, initializes and registers
  // it. Loading the same file twice is a no-op.
  absl::Status LoadFile(const std::string& path);

  // Validates, initializes and registers a plugin linked into this binary.
  absl::Status RegisterStatic(const MNT_Plugin_Api* api,
                              const std::string& origin);

  // The plugin of `kind` called `name`: an already registered one, else the
  // first mnt_<kind>_<name>.so on the search path, loaded now.
  absl::StatusOr<const LoadedPlugin*> Get(MNT_PluginKind kind,
                                          const std::string& name);

  // Sorted names of `kind` that are registered or present on the search
  // path, for error messages and --help.
  std::vector<std::string> Available(MNT_PluginKind kind) const;

  // Every registered plugin, in registration order.
  std::vector<const LoadedPlugin*> Loaded() const;

 private:
  // Validates `api`, checks for duplicates, runs Plugin_Initialize and stores
  // it. `handle` (may be null) is dlclose()d by the caller on failure.
  absl::Status Register(const MNT_Plugin_Api* api, const std::string& origin,
                        void* handle);

  std::vector<std::string> search_dirs_;
  bool verbose_errors_ = false;
  std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
  std::map<std::pair<MNT_PluginKind, std::string>, const LoadedPlugin*>
      by_name_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_PLUGIN_REGISTRY_H_
