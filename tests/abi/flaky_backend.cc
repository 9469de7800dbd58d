#include "tests/abi/flaky_backend.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "plugins/backends/common/backend_capabilities.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/status.h"

namespace mnt::abi_test {
namespace {

std::atomic<int64_t> g_live_errors{0};

// Every error this plugin returns is its own, counted until destroyed.
MNT_Error* NewError(const sdk::Status& s) {
  MNT_Error* e = sdk::ToError(s);
  if (e != nullptr) ++g_live_errors;
  return e;
}
void FlakyErrorDestroy(MNT_Error* e) {
  if (e != nullptr) --g_live_errors;
  sdk::ErrorDestroy(e);
}

const MNT_Plugin_Api* Inner() { return cpu::CpuBackendPluginApi(); }

// Re-issues an error of the CPU backend as one of ours (freeing the original
// with the CPU backend's Error_Destroy), so the host frees every error it
// gets from this plugin with this plugin's Error_Destroy.
MNT_Error* Adopt(MNT_Error* inner_error) {
  if (inner_error == nullptr) return nullptr;
  const MNT_Plugin_Api* inner = Inner();
  sdk::Status s(inner->Error_GetCode(inner_error),
                inner->Error_Message(inner_error));
  inner->Error_Destroy(inner_error);
  return NewError(s);
}

struct FlakyBackend {
  MNT_Backend* inner = nullptr;
  long long fail_after = 0;  // 0: never fail
  long long run_calls = 0;
  bool report_slow_paths = false;  // report_slow_paths=1
  std::string slow_paths;          // what Backend_GetInfo's slow_paths points at
};

FlakyBackend* Unwrap(MNT_Backend* b) {
  return reinterpret_cast<FlakyBackend*>(b);
}

// Splits "fail_after=N" off the options; the rest goes to the CPU backend.
sdk::Status ParseOptions(const char* text, long long* fail_after, bool* report_slow_paths,
                         std::string* inner_options) {
  std::string s = text != nullptr ? text : "";
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    const std::string key = "fail_after=";
    if (item.compare(0, key.size(), key) == 0) {
      const std::string value = item.substr(key.size());
      char* stop = nullptr;
      errno = 0;
      const long long n = std::strtoll(value.c_str(), &stop, 10);
      if (value.empty() || *stop != '\0' || errno != 0 || n < 0) {
        return sdk::InvalidArgument(sdk::Format(
            "flaky backend options: fail_after='%s' is not an integer >= 0",
            value.c_str()));
      }
      *fail_after = n;
    } else if (item == "report_slow_paths=1") {
      *report_slow_paths = true;
    } else if (!item.empty()) {
      if (!inner_options->empty()) *inner_options += ",";
      *inner_options += item;
    }
  }
  return sdk::Status::Ok();
}

MNT_Error* Create(MNT_Backend_Create_Args* args) {
  MNT_Error* error = sdk::Guard("Backend_Create", [&]() -> sdk::Status {
    MNT_CHECK_ARGS(MNT_Backend_Create_Args, args);
    long long fail_after = 0;
    bool report_slow_paths = false;
    std::string inner_options;
    MNT_RETURN_IF_ERROR(ParseOptions(args->options, &fail_after, &report_slow_paths,
                                     &inner_options));
    MNT_Backend_Create_Args inner = *args;
    inner.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    inner.options = inner_options.c_str();
    inner.backend = nullptr;
    MNT_Error* e = Inner()->backend->Backend_Create(&inner);
    if (e != nullptr) {
      sdk::Status s(Inner()->Error_GetCode(e), Inner()->Error_Message(e));
      Inner()->Error_Destroy(e);
      return s;
    }
    auto* flaky = new FlakyBackend;
    flaky->inner = inner.backend;
    flaky->fail_after = fail_after;
    flaky->report_slow_paths = report_slow_paths;
    args->backend = reinterpret_cast<MNT_Backend*>(flaky);
    return sdk::Status::Ok();
  });
  if (error != nullptr) ++g_live_errors;  // made by sdk::ToError: ours
  return error;
}

MNT_Error* Destroy(MNT_Backend_Destroy_Args* args) {
  if (args == nullptr ||
      args->struct_size < MNT_Backend_Destroy_Args_STRUCT_SIZE) {
    return NewError(sdk::InvalidArgument("MNT_Backend_Destroy_Args: bad args"));
  }
  if (args->backend == nullptr) return nullptr;
  FlakyBackend* flaky = Unwrap(args->backend);
  MNT_Backend_Destroy_Args inner = *args;
  inner.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  inner.backend = flaky->inner;
  MNT_Error* e = Inner()->backend->Backend_Destroy(&inner);
  delete flaky;
  return Adopt(e);
}

// Calls the CPU backend's `fn` with a copy of `args` that names the inner
// instance, then copies the outputs back.
template <typename Args>
MNT_Error* Forward(const char* args_name, size_t args_size, Args* args,
                   MNT_Error* (*fn)(Args*)) {
  if (args == nullptr || args->struct_size < args_size) {
    return NewError(sdk::InvalidArgument(
        sdk::Format("%s: args NULL or struct_size too small", args_name)));
  }
  if (fn == nullptr) {
    return NewError(sdk::Unimplemented(
        sdk::Format("%s: the CPU backend does not implement it", args_name)));
  }
  MNT_Backend* outer = args->backend;
  const size_t outer_size = args->struct_size;
  Args inner = *args;
  inner.struct_size = args_size;
  inner.backend = Unwrap(outer)->inner;
  MNT_Error* e = fn(&inner);
  *args = inner;
  args->struct_size = outer_size;
  args->backend = outer;
  return Adopt(e);
}

#define MNT_FORWARD(Name, ArgsType)                                         \
  MNT_Error* Name(ArgsType* args) {                                         \
    return Forward(#ArgsType, ArgsType##_STRUCT_SIZE, args,                 \
                   Inner()->backend->Name);                                 \
  }

// The CPU backend's answer; with report_slow_paths=1 also one slow path
// (ABI 1.8) per Backend_Run call so far, as a GPU backend reports its
// fallbacks, so the trainer's plumbing of them runs in CI.
MNT_Error* Backend_GetInfo(MNT_Backend_GetInfo_Args* args) {
  MNT_Error* e = Forward("MNT_Backend_GetInfo_Args", MNT_Backend_GetInfo_Args_STRUCT_SIZE_1_7,
                         args, Inner()->backend->Backend_GetInfo);
  if (e != nullptr || !MNT_HAS_FIELD(args, MNT_Backend_GetInfo_Args, slow_paths)) return e;
  FlakyBackend* flaky = Unwrap(args->backend);
  flaky->slow_paths =
      flaky->report_slow_paths
          ? sdk::Format("%lld x injected slow path: every Backend_Run\n", flaky->run_calls)
          : "";
  args->slow_paths = flaky->slow_paths.c_str();
  return nullptr;
}
MNT_FORWARD(Memory_Allocate, MNT_Memory_Allocate_Args)
MNT_FORWARD(Memory_Free, MNT_Memory_Free_Args)
MNT_FORWARD(Memory_Copy, MNT_Memory_Copy_Args)
MNT_FORWARD(Memory_GetStats, MNT_Memory_GetStats_Args)
MNT_FORWARD(Memory_ResetPeak, MNT_Memory_ResetPeak_Args)
MNT_FORWARD(Backend_Synchronize, MNT_Backend_Synchronize_Args)
MNT_FORWARD(Backend_GetOpSupport, MNT_Backend_GetOpSupport_Args)
MNT_FORWARD(Event_Create, MNT_Event_Create_Args)
MNT_FORWARD(Event_Record, MNT_Event_Record_Args)
MNT_FORWARD(Event_ElapsedTime, MNT_Event_ElapsedTime_Args)
MNT_FORWARD(Event_Destroy, MNT_Event_Destroy_Args)

MNT_Error* Backend_Run(MNT_Backend_Run_Args* args) {
  if (args != nullptr && args->struct_size >= MNT_Backend_Run_Args_STRUCT_SIZE &&
      args->backend != nullptr) {
    FlakyBackend* flaky = Unwrap(args->backend);
    const long long call = ++flaky->run_calls;
    if (flaky->fail_after > 0 && call >= flaky->fail_after) {
      return NewError(sdk::Internal(sdk::Format(
          "flaky backend: injected failure in Backend_Run call %lld", call)));
    }
  }
  return Forward("MNT_Backend_Run_Args", MNT_Backend_Run_Args_STRUCT_SIZE, args,
                 Inner()->backend->Backend_Run);
}

MNT_Error* Initialize() {
  MNT_Plugin_Initialize* inner = Inner()->Plugin_Initialize;
  return inner != nullptr ? Adopt(inner()) : nullptr;
}

MNT_Backend_Api MakeBackendApi() {
  MNT_Backend_Api api{};
  api.struct_size = MNT_Backend_Api_STRUCT_SIZE;
  api.Backend_Create = &Create;
  api.Backend_Destroy = &Destroy;
  api.Backend_GetInfo = &Backend_GetInfo;
  api.Memory_Allocate = &Memory_Allocate;
  api.Memory_Free = &Memory_Free;
  api.Memory_Copy = &Memory_Copy;
  api.Memory_GetStats = &Memory_GetStats;
  api.Memory_ResetPeak = &Memory_ResetPeak;
  api.Backend_Synchronize = &Backend_Synchronize;
  api.Backend_GetOpSupport = &Backend_GetOpSupport;
  api.Backend_Run = &Backend_Run;
  // Offer events exactly when the CPU backend does.
  const MNT_Backend_Api* inner = Inner()->backend;
  if (MNT_HAS_FIELD(inner, MNT_Backend_Api, Event_Destroy) &&
      inner->Event_Create != nullptr && inner->Event_Record != nullptr &&
      inner->Event_ElapsedTime != nullptr && inner->Event_Destroy != nullptr) {
    api.Event_Create = &Event_Create;
    api.Event_Record = &Event_Record;
    api.Event_ElapsedTime = &Event_ElapsedTime;
    api.Event_Destroy = &Event_Destroy;
  }
  return api;
}

}  // namespace

const MNT_Plugin_Api* FlakyBackendPluginApi() {
  static const MNT_Backend_Api backend = MakeBackendApi();
  // The CPU backend's capabilities: every op is the CPU backend's.
  static MNT_Capabilities_Extension capabilities =
      sdk::MakeCapabilitiesExtension(backend::kBackendCapabilities);
  static const MNT_Plugin_Api api = [] {
    MNT_Plugin_Api a = sdk::MakePluginApi(
        MNT_PLUGIN_KIND_BACKEND, "flaky",
        "CPU backend with an injected Backend_Run failure (tests only)",
        &backend, nullptr, nullptr, &Initialize, &capabilities.header.base);
    a.Error_Destroy = &FlakyErrorDestroy;
    return a;
  }();
  return &api;
}

int64_t FlakyLiveErrorCount() { return g_live_errors.load(); }

}  // namespace mnt::abi_test
