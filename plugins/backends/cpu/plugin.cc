// The CPU backend's device side (creation, info, copies, events) and its
// registration as the "cpu" plugin; the C entry points are the common
// plugin's (plugins/backends/common/backend_plugin.h).
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>
#include <unistd.h>

#include <cstdlib>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/collectives.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/backends/cpu/onednn_api.h"
#include "plugins/backends/cpu/runnable_threads.h"
#include "plugins/sdk/options.h"

// The backend links the generic libblas.so.3: OpenBLAS through Debian's
// alternatives, Debian's reference BLAS in the GPU device bundle. OpenBLAS's
// own calls are weak so the plugin also loads against a BLAS without them.
extern "C" {
void openblas_set_num_threads(int) __attribute__((weak));
int openblas_get_num_threads(void) __attribute__((weak));
}

namespace mnt::cpu {

using sdk::Status;

namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IsOpenBlas() { return openblas_get_num_threads != nullptr; }

std::string TrimmedOpenBlasVersion() {
  if (!IsOpenBlas()) return "reference BLAS";
  std::string v = OPENBLAS_VERSION;  // " OpenBLAS 0.3.21 "
  const size_t b = v.find_first_not_of(' ');
  const size_t e = v.find_last_not_of(' ');
  return b == std::string::npos ? "OpenBLAS" : v.substr(b, e - b + 1);
}

// libgomp's worker threads outlive every parallel region; if the plugin were
// its only user, unloading the plugin would unmap libgomp under them (a
// crash in a process that loads and unloads backends). Pinned once.
void PinOpenMpRuntime() {
  static void* const pinned = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  (void)pinned;
}

// The GEMM engine the options ask for: "auto" takes oneDNN when it loads.
Status ChooseGemm(const sdk::Options& options, int pool, std::unique_ptr<OneDnnGemm>* gemm,
                  std::string* gemm_name) {
  std::string mode = "auto", bf16 = "auto";
  const char* env = std::getenv("MANTISSA_CPU_GEMM");
  if (env != nullptr && *env != '\0') mode = env;
  MNT_RETURN_IF_ERROR(options.GetString("gemm", &mode));
  MNT_RETURN_IF_ERROR(options.GetString("onednn_bf16", &bf16));
  if (mode != "auto" && mode != "onednn" && mode != "reference") {
    return sdk::InvalidArgument(sdk::Format(
        "cpu backend options: gemm=%s is not one of auto, onednn, reference%s", mode.c_str(),
        options.Has("gemm") ? "" : " (from $MANTISSA_CPU_GEMM)"));
  }
  if (bf16 != "auto" && bf16 != "native" && bf16 != "fp32") {
    return sdk::InvalidArgument(sdk::Format(
        "cpu backend options: onednn_bf16=%s is not one of auto, native, fp32", bf16.c_str()));
  }
  *gemm_name = sdk::Format("reference GEMM on %s", TrimmedOpenBlasVersion().c_str());
  if (mode == "reference") return Status::Ok();
  std::string why;
  const onednn::Api* api = onednn::Load(&why);
  if (api == nullptr) {
    if (mode == "onednn") {
      return sdk::FailedPrecondition("cpu backend options: gemm=onednn: " + why);
    }
    *gemm_name += " (" + why + ")";
    return Status::Ok();
  }
  const dnnl_cpu_isa_t isa = api->dnnl_get_effective_cpu_isa();
  const bool native = bf16 == "native" || (bf16 == "auto" && onednn::HasNativeBf16(isa));
  MNT_RETURN_IF_ERROR(OneDnnGemm::Create(api, native, pool, gemm));
  *gemm_name = sdk::Format("oneDNN %s %s, bf16 %s", onednn::VersionString(*api).c_str(),
                           onednn::IsaName(isa), native ? "native" : "as fp32");
  return Status::Ok();
}

}  // namespace

Status CpuBackend::Create(const char* options_text, int32_t device_ordinal,
                          std::unique_ptr<CpuBackend>* out) {
  sdk::Options options;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(options_text, "cpu backend options", &options));
  MNT_RETURN_IF_ERROR(
      options.CheckKnown({"threads", "gemm", "onednn_bf16", "record_steps", "step_teams",
                          "denormals"}));
  std::string denormals = "flush";
  MNT_RETURN_IF_ERROR(options.GetString("denormals", &denormals));
  if (denormals != "flush" && denormals != "keep") {
    return sdk::InvalidArgument(sdk::Format(
        "cpu backend options: denormals=%s is not one of flush, keep", denormals.c_str()));
  }
  std::string record_steps = "off";
  MNT_RETURN_IF_ERROR(options.GetString("record_steps", &record_steps));
  if (record_steps != "on" && record_steps != "off") {
    return sdk::InvalidArgument(sdk::Format(
        "cpu backend options: record_steps=%s is not one of on, off", record_steps.c_str()));
  }
  long long threads = 0;
  MNT_RETURN_IF_ERROR(options.GetInt("threads", &threads));
  if (options.Has("threads") && (threads < 1 || threads > 1024)) {
    return sdk::InvalidArgument(sdk::Format(
        "cpu backend options: threads=%lld is outside [1, 1024]", threads));
  }
  // step_teams=A:B:...: marked steps cycle through these team sizes (tests).
  std::string step_teams_text;
  MNT_RETURN_IF_ERROR(options.GetString("step_teams", &step_teams_text));
  std::vector<int> step_teams;
  for (size_t at = 0; options.Has("step_teams") && at <= step_teams_text.size();) {
    const size_t end = std::min(step_teams_text.find(':', at), step_teams_text.size());
    const std::string item = step_teams_text.substr(at, end - at);
    char* parsed_end = nullptr;
    const long team = std::strtol(item.c_str(), &parsed_end, 10);
    if (item.empty() || *parsed_end != '\0' || team < 1 || team > 1024) {
      return sdk::InvalidArgument(sdk::Format(
          "cpu backend options: step_teams=%s: each of its ':'-separated entries must be a "
          "thread count in [1, 1024]", step_teams_text.c_str()));
    }
    step_teams.push_back(static_cast<int>(team));
    at = end + 1;
  }
  if (device_ordinal != 0) {
    return sdk::InvalidArgument(sdk::Format(
        "Backend_Create: the cpu backend has one device (ordinal 0), got %d",
        device_ordinal));
  }
  PinOpenMpRuntime();
  auto backend = std::make_unique<CpuBackend>();
  backend->record_steps_ = record_steps == "on";
  backend->flush_denormals_ = denormals == "flush";
  // oneDNN and the kernels share libgomp's pool, sized by the calling
  // thread's setting. The reference GEMM's OpenBLAS has a pool of its own,
  // and libgomp's idle workers spin while OpenBLAS's work (a CNN ran 5x
  // slower), so gemm=reference runs the other kernels on one thread.
  static const int default_threads = omp_get_max_threads();
  const int pool = threads > 0 ? static_cast<int>(threads) : default_threads;
  std::string gemm_name;
  MNT_RETURN_IF_ERROR(ChooseGemm(options, pool, &backend->onednn_gemm_, &gemm_name));
  if (backend->onednn_gemm_ != nullptr) {
    MNT_RETURN_IF_ERROR(
        OneDnnConv::Create(backend->onednn_gemm_->api(), pool,
                           backend->onednn_gemm_->native_bf16(), &backend->onednn_conv_));
  }
  backend->pool_ = backend->onednn_gemm_ != nullptr ? pool : 1;
  omp_set_num_threads(backend->pool_);
  if (threads > 0 && IsOpenBlas()) openblas_set_num_threads(static_cast<int>(threads));
  // threads=N is a fixed count; by default marked steps use what pays.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  backend->governor_ = std::make_unique<ThreadGovernor>(
      backend->pool_, cpus > 0 ? static_cast<int>(cpus) : backend->pool_, threads == 0,
      std::move(step_teams));
  if (backend->governor_->WantsSample(0)) {
    backend->governor_->Sample(SteadySeconds(), OtherRunnableThreads());
    omp_set_num_threads(backend->governor_->team());
  }
  const int shown = backend->onednn_gemm_ != nullptr || !IsOpenBlas()
                        ? backend->pool_ : openblas_get_num_threads();
  backend->device_name_ =
      sdk::Format("cpu (%s, %s%d thread%s)", gemm_name.c_str(),
                  threads == 0 && backend->pool_ > 1 ? "up to " : "", shown,
                  shown == 1 ? "" : "s");
  *out = std::move(backend);
  return Status::Ok();
}

void CpuBackend::OnStepBegin() { omp_set_num_threads(governor_->BeginStep()); }

void CpuBackend::OnStepEnd() {
  const double now = SteadySeconds();
  governor_->EndStep(now, governor_->WantsSample(now) ? OtherRunnableThreads() : -1.0);
  omp_set_num_threads(governor_->team());
}

// Plugins do not print (docs/plugins.md): steps the governor ran below the
// pool are reported as a slow path, in the run's final report and JSONL.
std::string CpuBackend::SlowPathReport() const {
  const std::string conv = onednn_conv_ != nullptr ? onednn_conv_->SlowPathReport() : "";
  const int64_t fewer = governor_->StepsBelowPool();
  if (fewer == 0) return conv;
  return conv + sdk::Format(
      "%lld x steps on fewer threads than the pool of %d: other processes kept up to %.1f "
      "cores busy (steps per team size %s; --backend_options=threads=N fixes the count)\n",
      static_cast<long long>(fewer), pool_, governor_->BusiestCores(),
      governor_->StepsByTeam().c_str());
}

backend::DeviceInfo CpuBackend::Info() const {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  backend::DeviceInfo info;
  info.name = device_name_.c_str();
  info.total_memory_bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
  info.host_addressable = true;
  return info;
}

Status CpuBackend::Copy(void* dst, const void* src, size_t bytes, MNT_CopyKind) {
  std::memmove(dst, src, bytes);  // every kind: "device" memory is host memory
  return Status::Ok();
}

// Work is synchronous, so an event is the steady-clock time it was recorded.
Status CpuBackend::RecordEvent(Event* event) {
  *event = std::chrono::steady_clock::now();
  return Status::Ok();
}

Status CpuBackend::ElapsedMilliseconds(const Event& start, const Event& end, double* ms) {
  *ms = std::chrono::duration<double, std::milli>(end - start).count();
  return Status::Ok();
}

const MNT_Plugin_Api* CpuBackendPluginApi() {
  // The common plugin's descriptor; its chain is the capabilities extension
  // followed by the collectives extension (MPI, collectives.h).
  return backend::BackendPlugin<CpuBackend>::Api(
      "CPU backend (oneDNN or reference OpenBLAS GEMM, fp32 accumulation, f16/bf16 "
      "storage; collectives over MPI)",
      &CpuCollectivesExtension()->header.base);
}

}  // namespace mnt::cpu
