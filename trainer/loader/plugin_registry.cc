#include "trainer/loader/plugin_registry.h"

#include <dlfcn.h>

#include <filesystem>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/text/nearest_name.h"
#include "trainer/loader/plugin_file.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

bool IsRegularFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);  // follows symlinks (runfiles)
}

}  // namespace

PluginRegistry::PluginRegistry(std::vector<std::string> search_dirs)
    : search_dirs_(std::move(search_dirs)) {}

PluginRegistry::~PluginRegistry() {
  by_name_.clear();
  // Unload in reverse: a later plugin may have been handed an earlier one.
  while (!plugins_.empty()) {
    if (plugins_.back()->handle != nullptr) dlclose(plugins_.back()->handle);
    plugins_.pop_back();
  }
}

absl::Status PluginRegistry::LoadFile(const std::string& path) {
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(path, ec).string();
  for (const auto& p : plugins_) {
    if (p->handle == nullptr) continue;
    if (p->origin == path ||
        (!canonical.empty() &&
         fs::weakly_canonical(p->origin, ec).string() == canonical)) {
      return absl::OkStatus();  // already loaded from this file
    }
  }
  absl::StatusOr<PluginFile> file = PluginFile::Open(path);
  if (!file.ok()) return file.status();
  const MNT_Plugin_Api* api = file->api();
  void* handle = file->Release();
  absl::Status s = Register(api, path, handle);
  if (!s.ok()) dlclose(handle);
  return s;
}

absl::Status PluginRegistry::RegisterStatic(const MNT_Plugin_Api* api,
                                            const std::string& origin) {
  return Register(api, origin, nullptr);
}

absl::Status PluginRegistry::Register(const MNT_Plugin_Api* api,
                                      const std::string& origin,
                                      void* handle) {
  absl::Status s = ValidatePluginApi(api, origin);
  if (!s.ok()) return s;
  const auto key = std::make_pair(api->kind, std::string(api->name));
  auto found = by_name_.find(key);
  if (found != by_name_.end()) {
    if (found->second->api == api && found->second->origin == origin) {
      return absl::OkStatus();  // the same static plugin registered again
    }
    return absl::AlreadyExistsError(absl::StrCat(
        "duplicate ", PluginKindName(api->kind), " plugin '", api->name,
        "': ", found->second->origin, " and ", origin));
  }
  if (api->Plugin_Initialize != nullptr) {
    absl::Status init = StatusFromPluginError(api, api->Plugin_Initialize());
    if (!init.ok()) {
      return absl::Status(init.code(),
                          absl::StrCat(origin, ": Plugin_Initialize failed: ",
                                       init.message()));
    }
  }
  plugins_.push_back(
      std::make_unique<LoadedPlugin>(LoadedPlugin{origin, handle, api}));
  by_name_[key] = plugins_.back().get();
  return absl::OkStatus();
}

absl::StatusOr<const LoadedPlugin*> PluginRegistry::Get(
    MNT_PluginKind kind, const std::string& name) {
  const char* kind_name = PluginKindName(kind);
  if (!IsPluginKind(kind)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid plugin kind ", static_cast<int>(kind)));
  }
  if (!IsValidPluginName(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid ", kind_name, " name '", name, "' (use [A-Za-z0-9_-])"));
  }
  auto found = by_name_.find({kind, name});
  if (found != by_name_.end()) return found->second;

  const std::string file = PluginFileName(kind, name);
  for (const std::string& dir : search_dirs_) {
    const std::string path = absl::StrCat(dir, "/", file);
    if (!IsRegularFile(path)) continue;
    absl::Status s = LoadFile(path);
    if (!s.ok()) return s;
    found = by_name_.find({kind, name});
    if (found != by_name_.end()) return found->second;
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": file is named for ", kind_name, " '", name,
        "' but the plugin in it is called something else"));
  }
  std::vector<std::string> available = Available(kind);
  const std::string nearest = NearestName(name, available);
  // The search path is long and rarely the point: only when asked for.
  const std::string where =
      verbose_errors_
          ? absl::StrCat("; searched for ", file, " in: ",
                         search_dirs_.empty() ? "(empty plugin path)"
                                              : absl::StrJoin(search_dirs_, ":"))
          : absl::StrCat("; --plugin_path adds directories, --verbose shows where ", file,
                         " was looked for");
  return absl::NotFoundError(absl::StrCat(
      "unknown ", kind_name, " '", name, "'",
      nearest.empty() ? "" : absl::StrCat("; did you mean '", nearest, "'?"),
      " (available: ", available.empty() ? "none" : absl::StrJoin(available, ", "), where,
      ")"));
}

std::vector<std::string> PluginRegistry::Available(MNT_PluginKind kind) const {
  std::set<std::string> names;
  for (const auto& [key, plugin] : by_name_) {
    if (key.first == kind) names.insert(key.second);
  }
  for (const std::string& dir : search_dirs_) {
    for (std::string& name : PluginNamesInDir(dir, kind)) {
      names.insert(std::move(name));
    }
  }
  return {names.begin(), names.end()};
}

std::vector<const LoadedPlugin*> PluginRegistry::Loaded() const {
  std::vector<const LoadedPlugin*> out;
  for (const auto& p : plugins_) out.push_back(p.get());
  return out;
}

}  // namespace mnt::trainer
