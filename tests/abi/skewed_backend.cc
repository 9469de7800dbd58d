#include "tests/abi/skewed_backend.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "plugins/backends/common/backend_capabilities.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::abi_test {
namespace {

const MNT_Plugin_Api* Inner() { return cpu::CpuBackendPluginApi(); }

// Takes an error of the CPU backend (freeing it there) as a Status.
sdk::Status FromInner(MNT_Error* e) {
  return sdk::StatusFromPluginError(Inner(), e);
}

// Re-issues an error of the CPU backend as one of ours, so the host frees
// every error it gets from this plugin with this plugin's Error_Destroy.
MNT_Error* Adopt(MNT_Error* inner_error) {
  return sdk::ToError(FromInner(inner_error));
}

struct SkewedBackend {
  MNT_Backend* inner = nullptr;
  MNT_Op skew_op = MNT_OP_INVALID;  // INVALID: faithful forwarder
  double skew = 0;
  bool ignore_pieces = false;  // the optimizer params cut to their 1.10 size
};

SkewedBackend* Unwrap(MNT_Backend* b) {
  return reinterpret_cast<SkewedBackend*>(b);
}

// "GEMM" -> MNT_OP_GEMM, by the SDK's own spelling of every op.
bool OpFromName(const std::string& name, MNT_Op* op) {
  for (int i = 1; i < 1000; ++i) {
    if (name == sdk::OpName(static_cast<MNT_Op>(i))) {
      *op = static_cast<MNT_Op>(i);
      return true;
    }
  }
  return false;
}

// Splits skew_op= and skew= off the options; the rest goes to the CPU
// backend.
sdk::Status ParseOptions(const char* text, SkewedBackend* b,
                         std::string* inner_options) {
  const std::string s = text != nullptr ? text : "";
  bool have_op = false, have_skew = false;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    if (item.rfind("skew_op=", 0) == 0) {
      const std::string name = item.substr(8);
      if (!OpFromName(name, &b->skew_op)) {
        return sdk::InvalidArgument(sdk::Format(
            "skewed backend options: skew_op='%s' is not an op name (e.g. GEMM)",
            name.c_str()));
      }
      have_op = true;
    } else if (item.rfind("skew=", 0) == 0) {
      const std::string value = item.substr(5);
      char* stop = nullptr;
      errno = 0;
      b->skew = std::strtod(value.c_str(), &stop);
      if (value.empty() || *stop != '\0' || errno != 0 || !std::isfinite(b->skew)) {
        return sdk::InvalidArgument(sdk::Format(
            "skewed backend options: skew='%s' is not a finite number",
            value.c_str()));
      }
      have_skew = true;
    } else if (item.rfind("ignore_pieces=", 0) == 0) {
      const std::string value = item.substr(14);
      if (value != "0" && value != "1") {
        return sdk::InvalidArgument(sdk::Format(
            "skewed backend options: ignore_pieces='%s' is not 0 or 1", value.c_str()));
      }
      b->ignore_pieces = value == "1";
    } else if (!item.empty()) {
      if (!inner_options->empty()) *inner_options += ",";
      *inner_options += item;
    }
  }
  if (have_op != have_skew) {
    return sdk::InvalidArgument(
        "skewed backend options: give both skew_op=<OP> and skew=<relative>, "
        "or neither");
  }
  return sdk::Status::Ok();
}

// out = out * (1 + skew) for one float output, read and written back through
// the CPU backend's Memory_Copy (so nothing assumes host-addressable memory).
sdk::Status SkewOutput(const SkewedBackend& b, const MNT_Tensor& t) {
  if (t.data == nullptr || !sdk::IsFloatStorage(t.dtype)) return sdk::Status::Ok();
  int64_t n = 1;
  for (int32_t d = 0; d < t.rank; ++d) n *= t.dims[d];
  const size_t es = sdk::DTypeSize(t.dtype);
  std::vector<unsigned char> bytes(static_cast<size_t>(n) * es);
  if (bytes.empty()) return sdk::Status::Ok();
  sdk::BackendClient client(Inner(), b.inner);
  MNT_RETURN_IF_ERROR(client.ToHost(bytes.data(), t.data, bytes.size()));
  for (int64_t i = 0; i < n; ++i) {
    unsigned char* p = bytes.data() + i * es;
    if (t.dtype == MNT_DTYPE_F32) {
      float v;
      std::memcpy(&v, p, 4);
      v = static_cast<float>(v * (1.0 + b.skew));
      std::memcpy(p, &v, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      const bool half = t.dtype == MNT_DTYPE_F16;
      const double v = (half ? HalfBitsToFloat(h) : Bf16BitsToFloat(h)) * (1.0 + b.skew);
      h = half ? FloatToHalfBits(static_cast<float>(v))
               : FloatToBf16Bits(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    }
  }
  return client.ToDevice(t.data, bytes.data(), bytes.size());
}

MNT_Error* Create(MNT_Backend_Create_Args* args) {
  return sdk::Guard("Backend_Create", [&]() -> sdk::Status {
    MNT_CHECK_ARGS(MNT_Backend_Create_Args, args);
    SkewedBackend parsed;
    std::string inner_options;
    MNT_RETURN_IF_ERROR(ParseOptions(args->options, &parsed, &inner_options));
    MNT_Backend_Create_Args inner = *args;
    inner.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    inner.options = inner_options.c_str();
    inner.backend = nullptr;
    MNT_RETURN_IF_ERROR(FromInner(Inner()->backend->Backend_Create(&inner)));
    auto* skewed = new SkewedBackend(parsed);
    skewed->inner = inner.backend;
    args->backend = reinterpret_cast<MNT_Backend*>(skewed);
    return sdk::Status::Ok();
  });
}

MNT_Error* Destroy(MNT_Backend_Destroy_Args* args) {
  if (args == nullptr ||
      args->struct_size < MNT_Backend_Destroy_Args_STRUCT_SIZE) {
    return sdk::ToError(sdk::InvalidArgument("MNT_Backend_Destroy_Args: bad args"));
  }
  if (args->backend == nullptr) return nullptr;
  SkewedBackend* skewed = Unwrap(args->backend);
  MNT_Backend_Destroy_Args inner = *args;
  inner.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  inner.backend = skewed->inner;
  MNT_Error* e = Inner()->backend->Backend_Destroy(&inner);
  delete skewed;
  return Adopt(e);
}

// Calls the CPU backend's `fn` with a copy of `args` that names the inner
// instance, then copies the outputs back.
template <typename Args>
MNT_Error* Forward(const char* args_name, size_t args_size, Args* args,
                   MNT_Error* (*fn)(Args*)) {
  if (args == nullptr || args->struct_size < args_size ||
      args->backend == nullptr) {
    return sdk::ToError(sdk::InvalidArgument(sdk::Format(
        "%s: args NULL, struct_size too small or backend NULL", args_name)));
  }
  if (fn == nullptr) {
    return sdk::ToError(sdk::Unimplemented(
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

#define MNT_FORWARD(Name, ArgsType)                         \
  MNT_Error* Name(ArgsType* args) {                         \
    return Forward(#ArgsType, ArgsType##_STRUCT_SIZE, args, \
                   Inner()->backend->Name);                 \
  }

MNT_FORWARD(Backend_GetInfo, MNT_Backend_GetInfo_Args)
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

// Where an optimizer op's ABI 1.11 piece fields begin in its params (0 for
// any other op).
size_t PieceFieldsBegin(MNT_Op op) {
  switch (op) {
    case MNT_OP_SGD_STEP: return MNT_SgdParams_STRUCT_SIZE_1_10;
    case MNT_OP_ADAMW_STEP: return MNT_AdamWParams_STRUCT_SIZE_1_10;
    case MNT_OP_MULTI_ADAMW_STEP: return MNT_MultiAdamWParams_STRUCT_SIZE_1_10;
    case MNT_OP_MULTI_SGD_STEP: return MNT_MultiSgdParams_STRUCT_SIZE_1_10;
    default: return 0;
  }
}

// The CPU backend runs the op; the chosen op's float outputs are then skewed.
// With ignore_pieces an optimizer op runs on a copy of its params whose
// struct_size ends before the piece fields.
MNT_Error* Backend_Run(MNT_Backend_Run_Args* args) {
  MNT_Backend_Run_Args cut;
  std::vector<uint64_t> cut_params;  // 8-byte aligned, as the struct
  MNT_Backend_Run_Args* forwarded = args;
  if (args != nullptr && args->struct_size >= MNT_Backend_Run_Args_STRUCT_SIZE &&
      args->backend != nullptr && Unwrap(args->backend)->ignore_pieces &&
      args->params != nullptr) {
    const size_t begin = PieceFieldsBegin(args->op);
    size_t size;
    std::memcpy(&size, args->params, sizeof(size));
    if (begin > 0 && size > begin) {
      // The backend reads no further than the cut size.
      cut_params.resize((begin + 7) / 8);
      std::memcpy(cut_params.data(), args->params, begin);
      std::memcpy(cut_params.data(), &begin, sizeof(begin));
      cut = *args;
      cut.params = cut_params.data();
      forwarded = &cut;
    }
  }
  MNT_Error* e = Forward("MNT_Backend_Run_Args", MNT_Backend_Run_Args_STRUCT_SIZE,
                         forwarded, Inner()->backend->Backend_Run);
  if (e != nullptr) return e;
  const SkewedBackend& b = *Unwrap(args->backend);
  if (b.skew_op == MNT_OP_INVALID || args->op != b.skew_op) return nullptr;
  return sdk::Guard("Backend_Run (skew)", [&]() -> sdk::Status {
    for (size_t i = 0; i < args->num_outputs; ++i) {
      MNT_RETURN_IF_ERROR(SkewOutput(b, args->outputs[i]));
    }
    return sdk::Status::Ok();
  });
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

const MNT_Plugin_Api* SkewedBackendPluginApi() {
  static const MNT_Backend_Api backend = MakeBackendApi();
  // The CPU backend's capabilities: every op is the CPU backend's.
  static MNT_Capabilities_Extension capabilities =
      sdk::MakeCapabilitiesExtension(backend::kBackendCapabilities);
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_BACKEND, "skewed",
      "CPU backend with one op's outputs scaled by (1 + skew) (tests only)",
      &backend, nullptr, nullptr, &Initialize, &capabilities.header.base);
  return &api;
}

}  // namespace mnt::abi_test
