// Finds, loads, validates and keeps the plugins a trainer run uses.
//
// A plugin is a shared object exporting MNT_GetPluginApi (plugins/abi). The
// registry dlopen()s it with RTLD_NOW | RTLD_LOCAL, checks that it speaks this
// host's ABI (same major, minor not newer, every required entry point set),
// calls its Plugin_Initialize once and keeps the handle open until the
// registry is destroyed. Every refusal is one line naming the file and the
// reason. Tests can register plugins linked statically instead.
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

  // The directories searched, in order: `plugin_path_flag` (':'-separated),
  // then $MANTISSA_PLUGIN_PATH (':'-separated), then the directories holding
  // mnt_*.so files in the running binary's runfiles, then the directory of
  // the executable. Duplicates and empty entries are dropped.
  static std::vector<std::string> DefaultSearchPath(
      const std::string& plugin_path_flag, const std::string& argv0);

  const std::vector<std::string>& search_dirs() const { return search_dirs_; }

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
  std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
  std::map<std::pair<MNT_PluginKind, std::string>, const LoadedPlugin*>
      by_name_;
};

// "backend", "precision", "model" (the word used in file names), or
// "invalid".
const char* PluginKindName(MNT_PluginKind kind);

// The file a plugin of `kind` called `name` is looked up as:
// mnt_<kind>_<name>.so.
std::string PluginFileName(MNT_PluginKind kind, const std::string& name);

// Checks that `api` is a plugin this host can use: one-line reason on
// failure, prefixed with `origin`. Does not call into the plugin.
absl::Status ValidatePluginApi(const MNT_Plugin_Api* api,
                               const std::string& origin);

// Takes ownership of `error` (made by `plugin`; may be null) and turns it
// into an absl::Status with the same code and message.
absl::Status StatusFromPluginError(const MNT_Plugin_Api* plugin,
                                   MNT_Error* error);

// True when `plugin` is a backend whose API has the 1.1 Event_* calls, all
// set. A 1.0 backend never has them: the trainer then times with the host
// clock after Backend_Synchronize.
bool HasEvents(const MNT_Plugin_Api* plugin);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_PLUGIN_REGISTRY_H_
