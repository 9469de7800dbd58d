#include "trainer/loader/plugin_names.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace mnt::trainer {

const char* PluginKindName(int32_t kind) {
  switch (kind) {
    case MNT_PLUGIN_KIND_BACKEND: return "backend";
    case MNT_PLUGIN_KIND_PRECISION: return "precision";
    case MNT_PLUGIN_KIND_MODEL: return "model";
    default: return "invalid";
  }
}

bool IsPluginKind(int32_t kind) {
  return kind == MNT_PLUGIN_KIND_BACKEND || kind == MNT_PLUGIN_KIND_PRECISION ||
         kind == MNT_PLUGIN_KIND_MODEL;
}

bool IsValidPluginName(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

std::string PluginFileName(MNT_PluginKind kind, const std::string& name) {
  return absl::StrCat("mnt_", PluginKindName(kind), "_", name, ".so");
}

bool IsPluginFileName(const std::string& file) {
  return absl::EndsWith(file, ".so") &&
         (absl::StartsWith(file, "mnt_backend_") ||
          absl::StartsWith(file, "mnt_precision_") ||
          absl::StartsWith(file, "mnt_model_"));
}

std::vector<std::string> PluginNamesInDir(const std::string& dir,
                                          MNT_PluginKind kind) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  const std::string prefix = absl::StrCat("mnt_", PluginKindName(kind), "_");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!absl::StartsWith(file, prefix) || !absl::EndsWith(file, ".so")) {
      continue;
    }
    std::string name =
        file.substr(prefix.size(), file.size() - prefix.size() - 3);
    if (IsValidPluginName(name)) names.push_back(std::move(name));
  }
  return names;
}

}  // namespace mnt::trainer
