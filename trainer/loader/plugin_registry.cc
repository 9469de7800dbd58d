#include "trainer/loader/plugin_registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

// Sizes a plugin built against ABI 1.0 stores in struct_size. Neither
// MNT_Plugin_Api, MNT_Precision_Api nor MNT_Model_Api has grown since 1.0;
// MNT_Backend_Api gained the Event_* calls in 1.1.
constexpr size_t kPluginApiSize10 = MNT_Plugin_Api_STRUCT_SIZE;
constexpr size_t kBackendApiSize10 = MNT_Backend_Api_STRUCT_SIZE_1_0;
constexpr size_t kPrecisionApiSize10 = MNT_Precision_Api_STRUCT_SIZE;
constexpr size_t kModelApiSize10 = MNT_Model_Api_STRUCT_SIZE;
// The part of MNT_Plugin_Api every major version keeps: enough to read the
// version and refuse a plugin we cannot understand.
constexpr size_t kPluginApiVersionEnd =
    MNT_STRUCT_SIZE(MNT_Plugin_Api, abi_version);

#define MNT_STRINGIFY_INNER(x) #x
#define MNT_STRINGIFY(x) MNT_STRINGIFY_INNER(x)
// "MAJOR.MINOR" of the headers this trainer was built with.
constexpr const char* kAbiVersion =
    MNT_STRINGIFY(MNT_ABI_MAJOR) "." MNT_STRINGIFY(MNT_ABI_MINOR);
// 1.2, 1.3 and 1.4 appended ops and params structs only (no struct of the
// API tables grew).
static_assert(MNT_ABI_MAJOR == 1 && MNT_ABI_MINOR == 4,
              "check the 1.0 sizes above when the ABI changes");

// A named function pointer inside an API struct, for the NULL checks.
struct RequiredFn {
  const char* name;
  const void* fn;
};
#define MNT_REQUIRED_FN(api, field) \
  RequiredFn { #field, reinterpret_cast<const void*>((api)->field) }

absl::Status Refuse(const std::string& origin, const std::string& reason) {
  return absl::FailedPreconditionError(absl::StrCat(origin, ": ", reason));
}

absl::Status CheckRequired(const std::string& origin, const char* api_name,
                           std::initializer_list<RequiredFn> fns) {
  for (const RequiredFn& f : fns) {
    if (f.fn == nullptr) {
      return Refuse(origin, absl::StrCat("required function ", api_name, ".",
                                         f.name, " is NULL"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckApiSize(const std::string& origin, const char* api_name,
                          size_t actual, size_t needed) {
  if (actual < needed) {
    return Refuse(origin, absl::StrCat(api_name, " struct_size ", actual,
                                       " is smaller than the ", needed,
                                       " bytes of ABI 1.0"));
  }
  return absl::OkStatus();
}

absl::Status ValidateBackendApi(const std::string& origin,
                                const MNT_Backend_Api* b) {
  absl::Status s =
      CheckApiSize(origin, "MNT_Backend_Api", b->struct_size, kBackendApiSize10);
  if (!s.ok()) return s;
  s = CheckRequired(origin, "MNT_Backend_Api",
                    {MNT_REQUIRED_FN(b, Backend_Create),
                     MNT_REQUIRED_FN(b, Backend_Destroy),
                     MNT_REQUIRED_FN(b, Backend_GetInfo),
                     MNT_REQUIRED_FN(b, Memory_Allocate),
                     MNT_REQUIRED_FN(b, Memory_Free),
                     MNT_REQUIRED_FN(b, Memory_Copy),
                     MNT_REQUIRED_FN(b, Memory_GetStats),
                     MNT_REQUIRED_FN(b, Memory_ResetPeak),
                     MNT_REQUIRED_FN(b, Backend_Synchronize),
                     MNT_REQUIRED_FN(b, Backend_GetOpSupport),
                     MNT_REQUIRED_FN(b, Backend_Run)});
  if (!s.ok()) return s;
  // Events (1.1) are optional, but all four or none: timing needs each one.
  if (MNT_HAS_FIELD(b, MNT_Backend_Api, Event_Destroy)) {
    const int set = (b->Event_Create != nullptr) +
                    (b->Event_Record != nullptr) +
                    (b->Event_ElapsedTime != nullptr) +
                    (b->Event_Destroy != nullptr);
    if (set != 0 && set != 4) {
      return Refuse(origin,
                    "MNT_Backend_Api sets some but not all of the Event_* "
                    "functions (all four or none)");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePrecisionApi(const std::string& origin,
                                  const MNT_Precision_Api* p) {
  absl::Status s = CheckApiSize(origin, "MNT_Precision_Api", p->struct_size,
                                kPrecisionApiSize10);
  if (!s.ok()) return s;
  return CheckRequired(origin, "MNT_Precision_Api",
                       {MNT_REQUIRED_FN(p, Precision_GetPolicy),
                        MNT_REQUIRED_FN(p, Precision_GetOpClassPolicy),
                        MNT_REQUIRED_FN(p, Precision_GetMemoryPlan),
                        MNT_REQUIRED_FN(p, LossScaler_Create),
                        MNT_REQUIRED_FN(p, LossScaler_Destroy),
                        MNT_REQUIRED_FN(p, LossScaler_GetState),
                        MNT_REQUIRED_FN(p, LossScaler_SetState),
                        MNT_REQUIRED_FN(p, LossScaler_Update)});
}

absl::Status ValidateModelApi(const std::string& origin,
                              const MNT_Model_Api* m) {
  absl::Status s =
      CheckApiSize(origin, "MNT_Model_Api", m->struct_size, kModelApiSize10);
  if (!s.ok()) return s;
  return CheckRequired(origin, "MNT_Model_Api",
                       {MNT_REQUIRED_FN(m, Model_Create),
                        MNT_REQUIRED_FN(m, Model_Destroy),
                        MNT_REQUIRED_FN(m, Model_GetParamCount),
                        MNT_REQUIRED_FN(m, Model_GetParamSpec),
                        MNT_REQUIRED_FN(m, Model_Forward),
                        MNT_REQUIRED_FN(m, Model_Backward)});
}

// Plugin names become part of file names: keep them to [A-Za-z0-9_-].
bool IsValidName(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool IsRegularFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);  // follows symlinks (runfiles)
}

// Splits a ':'-separated list, dropping empty entries.
std::vector<std::string> SplitPath(const std::string& list) {
  return absl::StrSplit(list, ':', absl::SkipEmpty());
}

bool IsPluginFileName(const std::string& file) {
  return absl::EndsWith(file, ".so") &&
         (absl::StartsWith(file, "mnt_backend_") ||
          absl::StartsWith(file, "mnt_precision_") ||
          absl::StartsWith(file, "mnt_model_"));
}

// The runfiles tree of this binary: RUNFILES_DIR, TEST_SRCDIR, then
// <argv0>.runfiles and <executable>.runfiles. Empty when there is none.
std::string FindRunfilesDir(const std::string& argv0,
                            const std::string& executable) {
  std::vector<std::string> candidates;
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    const char* value = std::getenv(var);
    if (value != nullptr && *value != '\0') candidates.push_back(value);
  }
  if (!argv0.empty()) candidates.push_back(argv0 + ".runfiles");
  if (!executable.empty()) candidates.push_back(executable + ".runfiles");
  for (const std::string& dir : candidates) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return dir;
  }
  return "";
}

// Directories under `root` holding mnt_*.so files, sorted. Runfiles are
// directories of symlinks; directory symlinks are not followed.
std::vector<std::string> PluginDirsUnder(const std::string& root) {
  std::set<std::string> dirs;
  std::error_code ec;
  fs::recursive_directory_iterator it(
      root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (IsPluginFileName(p.filename().string()) && IsRegularFile(p.string())) {
      dirs.insert(p.parent_path().string());
    }
  }
  return {dirs.begin(), dirs.end()};
}

std::string ExecutablePath() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.string();
}

}  // namespace

const char* PluginKindName(MNT_PluginKind kind) {
  switch (kind) {
    case MNT_PLUGIN_KIND_BACKEND: return "backend";
    case MNT_PLUGIN_KIND_PRECISION: return "precision";
    case MNT_PLUGIN_KIND_MODEL: return "model";
    default: return "invalid";
  }
}

std::string PluginFileName(MNT_PluginKind kind, const std::string& name) {
  return absl::StrCat("mnt_", PluginKindName(kind), "_", name, ".so");
}

absl::Status ValidatePluginApi(const MNT_Plugin_Api* api,
                               const std::string& origin) {
  if (api == nullptr) {
    return Refuse(origin, "MNT_GetPluginApi returned NULL");
  }
  // Read nothing beyond struct_size: first make sure the version is there.
  if (api->struct_size < kPluginApiVersionEnd) {
    return Refuse(origin, absl::StrCat("MNT_Plugin_Api struct_size ",
                                       api->struct_size, " is smaller than the ",
                                       kPluginApiSize10, " bytes of ABI 1.0"));
  }
  const MNT_Api_Version& v = api->abi_version;
  if (v.struct_size < MNT_Api_Version_STRUCT_SIZE) {
    return Refuse(origin, absl::StrCat("MNT_Api_Version struct_size ",
                                       v.struct_size, " is smaller than the ",
                                       MNT_Api_Version_STRUCT_SIZE,
                                       " bytes of ABI 1.0"));
  }
  const std::string plugin_version =
      absl::StrCat(v.major_version, ".", v.minor_version);
  if (v.major_version != MNT_ABI_MAJOR) {
    return Refuse(origin,
                  absl::StrCat("plugin built against ABI ", plugin_version,
                               ", incompatible with this trainer's ",
                               kAbiVersion, " (major versions differ); rebuild "
                               "the plugin against ABI ",
                               MNT_ABI_MAJOR, ".x"));
  }
  if (v.minor_version < 0) {
    return Refuse(origin, absl::StrCat("invalid ABI minor version ",
                                       v.minor_version));
  }
  if (v.minor_version > MNT_ABI_MINOR) {
    return Refuse(origin, absl::StrCat("plugin built against ABI ",
                                       plugin_version, ", newer than this "
                                       "trainer's ", kAbiVersion,
                                       "; upgrade the trainer"));
  }
  absl::Status s = CheckApiSize(origin, "MNT_Plugin_Api", api->struct_size,
                                kPluginApiSize10);
  if (!s.ok()) return s;

  const char* kind = PluginKindName(api->kind);
  if (api->kind != MNT_PLUGIN_KIND_BACKEND &&
      api->kind != MNT_PLUGIN_KIND_PRECISION &&
      api->kind != MNT_PLUGIN_KIND_MODEL) {
    return Refuse(origin, absl::StrCat("invalid plugin kind ",
                                       static_cast<int>(api->kind)));
  }
  if (api->name == nullptr || api->name[0] == '\0') {
    return Refuse(origin, absl::StrCat(kind, " plugin name is empty"));
  }
  if (!IsValidName(api->name)) {
    return Refuse(origin, absl::StrCat(kind, " plugin name '", api->name,
                                       "' has characters outside "
                                       "[A-Za-z0-9_-]"));
  }
  s = CheckRequired(origin, "MNT_Plugin_Api",
                    {MNT_REQUIRED_FN(api, Error_Destroy),
                     MNT_REQUIRED_FN(api, Error_Message),
                     MNT_REQUIRED_FN(api, Error_GetCode)});
  if (!s.ok()) return s;

  // Exactly the sub-API matching `kind` is set.
  const void* subs[] = {api->backend, api->precision, api->model};
  const MNT_PluginKind sub_kinds[] = {MNT_PLUGIN_KIND_BACKEND,
                                      MNT_PLUGIN_KIND_PRECISION,
                                      MNT_PLUGIN_KIND_MODEL};
  for (int i = 0; i < 3; ++i) {
    const bool own = sub_kinds[i] == api->kind;
    if (own && subs[i] == nullptr) {
      return Refuse(origin, absl::StrCat(kind, " plugin '", api->name,
                                         "' has a NULL ", kind, " API"));
    }
    if (!own && subs[i] != nullptr) {
      return Refuse(origin, absl::StrCat(kind, " plugin '", api->name,
                                         "' also sets the ",
                                         PluginKindName(sub_kinds[i]),
                                         " API"));
    }
  }
  switch (api->kind) {
    case MNT_PLUGIN_KIND_BACKEND:
      return ValidateBackendApi(origin, api->backend);
    case MNT_PLUGIN_KIND_PRECISION:
      return ValidatePrecisionApi(origin, api->precision);
    case MNT_PLUGIN_KIND_MODEL:
      return ValidateModelApi(origin, api->model);
    default:
      return absl::InternalError("unreachable");
  }
}

absl::Status StatusFromPluginError(const MNT_Plugin_Api* plugin,
                                   MNT_Error* error) {
  if (error == nullptr) return absl::OkStatus();
  const MNT_ErrorCode code = plugin->Error_GetCode(error);
  const char* message = plugin->Error_Message(error);
  std::string text = message != nullptr ? message : "(no message)";
  plugin->Error_Destroy(error);
  if (code <= MNT_ERROR_OK || code > MNT_ERROR_UNAUTHENTICATED) {
    // An error object is a failure whatever code it claims.
    return absl::UnknownError(text);
  }
  return absl::Status(static_cast<absl::StatusCode>(code), text);
}

bool HasEvents(const MNT_Plugin_Api* plugin) {
  if (plugin == nullptr || plugin->kind != MNT_PLUGIN_KIND_BACKEND ||
      plugin->backend == nullptr) {
    return false;
  }
  const MNT_Backend_Api* b = plugin->backend;
  return MNT_HAS_FIELD(b, MNT_Backend_Api, Event_Destroy) &&
         b->Event_Create != nullptr && b->Event_Record != nullptr &&
         b->Event_ElapsedTime != nullptr && b->Event_Destroy != nullptr;
}

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

std::vector<std::string> PluginRegistry::DefaultSearchPath(
    const std::string& plugin_path_flag, const std::string& argv0) {
  std::vector<std::string> dirs = SplitPath(plugin_path_flag);
  if (const char* env = std::getenv("MANTISSA_PLUGIN_PATH")) {
    for (std::string& d : SplitPath(env)) dirs.push_back(std::move(d));
  }
  const std::string executable = ExecutablePath();
  const std::string runfiles = FindRunfilesDir(argv0, executable);
  if (!runfiles.empty()) {
    const char* workspace = std::getenv("TEST_WORKSPACE");
    const std::string root = absl::StrCat(
        runfiles, "/",
        workspace != nullptr && *workspace != '\0' ? workspace : "mantissa");
    for (std::string& d : PluginDirsUnder(root)) dirs.push_back(std::move(d));
  }
  if (!executable.empty()) {
    dirs.push_back(fs::path(executable).parent_path().string());
  } else if (argv0.find('/') != std::string::npos) {
    dirs.push_back(fs::path(argv0).parent_path().string());
  }
  // Keep the first occurrence of each directory.
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (std::string& d : dirs) {
    if (seen.insert(d).second) unique.push_back(std::move(d));
  }
  return unique;
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
  if (!fs::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  // A bare name would make dlopen() search the library path instead.
  const std::string open_path =
      path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Refuse(path, absl::StrCat("dlopen failed: ",
                                     absl::StrReplaceAll(
                                         why != nullptr ? why : "unknown error",
                                         {{"\n", " "}})));
  }
  auto* entry = reinterpret_cast<MNT_GetPluginApi_Fn*>(
      dlsym(handle, MNT_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) {
    dlclose(handle);
    return Refuse(path, "not a Mantissa plugin: it does not export "
                        MNT_PLUGIN_ENTRY_SYMBOL);
  }
  absl::Status s = Register(entry(), path, handle);
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
  if (kind != MNT_PLUGIN_KIND_BACKEND && kind != MNT_PLUGIN_KIND_PRECISION &&
      kind != MNT_PLUGIN_KIND_MODEL) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid plugin kind ", static_cast<int>(kind)));
  }
  if (!IsValidName(name)) {
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
  return absl::NotFoundError(absl::StrCat(
      "unknown ", kind_name, " '", name, "' (available: ",
      available.empty() ? "none" : absl::StrJoin(available, ", "),
      "; searched for ", file, " in: ",
      search_dirs_.empty() ? "(empty plugin path)"
                           : absl::StrJoin(search_dirs_, ":"),
      ")"));
}

std::vector<std::string> PluginRegistry::Available(MNT_PluginKind kind) const {
  std::set<std::string> names;
  for (const auto& [key, plugin] : by_name_) {
    if (key.first == kind) names.insert(key.second);
  }
  const std::string prefix = absl::StrCat("mnt_", PluginKindName(kind), "_");
  for (const std::string& dir : search_dirs_) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string file = it->path().filename().string();
      if (!absl::StartsWith(file, prefix) || !absl::EndsWith(file, ".so")) {
        continue;
      }
      std::string name = file.substr(prefix.size(), file.size() -
                                                        prefix.size() - 3);
      if (IsValidName(name)) names.insert(std::move(name));
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
