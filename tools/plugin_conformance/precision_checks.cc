// Conformance checks for precision plugins: policy sanity and the loss-scaler
// contract (GradScaler semantics).
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "plugins/sdk/loss_scaler_client.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/precision_client.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"
#include "tools/plugin_conformance/conformance.h"

namespace mnt::conformance {
namespace {

using sdk::Format;
using sdk::Status;

bool IsFloat(MNT_DType t) { return sdk::IsFloatStorage(t); }
bool IsCompute(MNT_ComputeMode m) {
  return m >= MNT_COMPUTE_F32 && m <= MNT_COMPUTE_F16;
}

// The conformance view of a loss scaler: the SDK client plus the checks
// every Update answer must pass (skip_step written, and 0 or 1).
class Scaler {
 public:
  explicit Scaler(const MNT_Plugin_Api* p) : p_(p) {}
  Status Create(const char* options) {
    return sdk::LossScalerClient::Create(p_, options, &scaler_);
  }
  Status Update(bool found_inf, bool* skip, float* scale) {
    sdk::LossScalerUpdate u;
    u.skip_step = -1;  // the plugin must write it
    MNT_RETURN_IF_ERROR(scaler_.Update(found_inf, &u));
    *skip = u.skip();
    *scale = u.new_scale;
    if (u.skip_step != 0 && u.skip_step != 1) {
      return sdk::Internal(Format("skip_step=%d is not 0 or 1", u.skip_step));
    }
    return Status::Ok();
  }
  Status Get(MNT_LossScalerState* st) { return scaler_.GetState(st); }
  Status Set(const MNT_LossScalerState& st) { return scaler_.SetState(st); }

 private:
  const MNT_Plugin_Api* p_;
  sdk::LossScalerClient scaler_;
};

std::string CheckPolicy(const MNT_Precision_GetPolicy_Args& p) {
  if (!IsFloat(p.weight_dtype) || !IsFloat(p.gradient_dtype) ||
      !IsFloat(p.activation_dtype) || p.optimizer_state_dtype != MNT_DTYPE_F32) {
    return Format("weights %s, gradients %s, activations %s must be f32/f16/"
                  "bf16 and optimizer state f32 (got %s)",
                  sdk::DTypeName(p.weight_dtype),
                  sdk::DTypeName(p.gradient_dtype),
                  sdk::DTypeName(p.activation_dtype),
                  sdk::DTypeName(p.optimizer_state_dtype));
  }
  if (p.master_weight_dtype != MNT_DTYPE_INVALID &&
      p.master_weight_dtype != MNT_DTYPE_F32) {
    return "master_weight_dtype must be f32 or INVALID (none)";
  }
  if (p.weight_dtype != MNT_DTYPE_F32 &&
      p.master_weight_dtype != MNT_DTYPE_F32) {
    return Format("%s working weights need f32 master weights",
                  sdk::DTypeName(p.weight_dtype));
  }
  if (!IsCompute(p.matmul_compute)) return "matmul_compute is not a valid mode";
  if (p.loss_scaling < MNT_LOSS_SCALING_NONE ||
      p.loss_scaling > MNT_LOSS_SCALING_STATIC) {
    return "loss_scaling is not NONE, DYNAMIC or STATIC";
  }
  if (p.gradient_dtype == MNT_DTYPE_F16 &&
      p.loss_scaling == MNT_LOSS_SCALING_NONE) {
    return "f16 gradients without loss scaling underflow (set DYNAMIC)";
  }
  return "";
}

}  // namespace

void CheckPrecisionPlugin(const MNT_Plugin_Api* plugin, uint64_t seed,
                          Report* r) {
  const MNT_Precision_Api* api = plugin->precision;
  const sdk::PrecisionClient precision(plugin);
  const std::string n = "precision/";

  MNT_Precision_GetPolicy_Args policy;
  Status s = precision.GetPolicy(&policy);
  if (!s.ok()) {
    r->Fail(n + "policy", s.message());
    return;
  }
  r->Check(n + "policy", CheckPolicy(policy));

  {  // Every op class answers with valid formats; losses etc. compute in f32.
    std::string why;
    for (int c = MNT_OP_CLASS_MATMUL; c <= MNT_OP_CLASS_EMBEDDING && why.empty();
         ++c) {
      MNT_Precision_GetOpClassPolicy_Args a;
      s = precision.GetOpClassPolicy(static_cast<MNT_OpClass>(c), &a);
      if (!s.ok()) {
        why = Format("op class %d: %s", c, s.message().c_str());
      } else if (!IsFloat(a.storage_dtype) || !IsFloat(a.compute_dtype) ||
                 a.accumulate_dtype != MNT_DTYPE_F32) {
        why = Format("op class %d: storage %s, compute %s, accumulate %s", c,
                     sdk::DTypeName(a.storage_dtype),
                     sdk::DTypeName(a.compute_dtype),
                     sdk::DTypeName(a.accumulate_dtype));
      } else if ((c == MNT_OP_CLASS_LOSS || c == MNT_OP_CLASS_REDUCTION ||
                  c == MNT_OP_CLASS_OPTIMIZER || c == MNT_OP_CLASS_SOFTMAX ||
                  c == MNT_OP_CLASS_NORMALIZATION) &&
                 a.compute_dtype != MNT_DTYPE_F32) {
        why = Format("op class %d must compute in f32", c);
      } else if (c == MNT_OP_CLASS_MATMUL &&
                 a.compute_mode != policy.matmul_compute) {
        why = "MATMUL compute_mode differs from the policy's matmul_compute";
      }
    }
    MNT_Precision_GetOpClassPolicy_Args bad;
    if (why.empty() &&
        precision.GetOpClassPolicy(static_cast<MNT_OpClass>(999), &bad).ok()) {
      why = "an unknown op class (999) was accepted";
    }
    r->Check(n + "op_class_policy", why);
  }

  {  // The memory plan matches the policy's dtypes.
    MNT_Precision_GetMemoryPlan_Args a;
    s = precision.GetMemoryPlan(2, &a);
    std::string why = s.ok() ? "" : s.message();
    const bool master = policy.master_weight_dtype != MNT_DTYPE_INVALID;
    if (why.empty() &&
        (a.bytes_weights != static_cast<int>(sdk::DTypeSize(policy.weight_dtype)) ||
         a.bytes_master_weights != (master ? 4 : 0) ||
         a.bytes_gradients !=
             static_cast<int>(sdk::DTypeSize(policy.gradient_dtype)) ||
         a.bytes_optimizer_state != 8)) {
      why = Format("plan weights %d master %d gradients %d optimizer %d does "
                   "not match the policy (2 AdamW slots)",
                   a.bytes_weights, a.bytes_master_weights, a.bytes_gradients,
                   a.bytes_optimizer_state);
    }
    r->Check(n + "memory_plan", why);
  }

  // --- Loss scaler ---------------------------------------------------------
  {
    Scaler none(plugin);
    std::string why;
    s = none.Create("mode=none");
    if (!s.ok()) why = "mode=none refused: " + s.message();
    for (int i = 0; i < 4 && why.empty(); ++i) {
      bool skip;
      float scale;
      s = none.Update(i % 2 == 1, &skip, &scale);
      if (!s.ok()) why = s.message();
      else if (scale != 1.0f || skip) why = Format("mode=none gave scale %g skip %d", scale, skip);
    }
    r->Check(n + "scaler_mode_none_is_identity", why);
  }
  {
    Scaler bad(plugin);
    s = bad.Create("no_such_option=1");
    r->Check(n + "scaler_rejects_unknown_option",
             s.ok() ? "'no_such_option=1' was accepted"
             : s.code() != MNT_ERROR_INVALID_ARGUMENT
                 ? "refused, but not with INVALID_ARGUMENT: " + s.message()
             : s.message().find('\n') != std::string::npos ? "message is not one line"
                                                           : "");
  }
  {
    MNT_LossScaler_Destroy_Args a{};
    a.struct_size = MNT_LossScaler_Destroy_Args_STRUCT_SIZE;
    s = sdk::StatusFromPluginError(plugin, api->LossScaler_Destroy(&a));
    r->Check(n + "scaler_destroy_null_is_noop", s.message());
  }

  const char* kDyn =
      "mode=dynamic,init_scale=1024,growth_factor=2,backoff_factor=0.5,"
      "growth_interval=3";
  if (policy.loss_scaling != MNT_LOSS_SCALING_DYNAMIC) {
    r->Skip(n + "dynamic_loss_scaling",
            "the policy's default loss scaling is not DYNAMIC");
    return;
  }
  Scaler a(plugin);
  s = a.Create(kDyn);
  if (!s.ok()) {
    r->Fail(n + "scaler_create_dynamic", s.message());
    return;
  }
  {  // Initial state, backoff on overflow, growth after the interval.
    std::string why;
    MNT_LossScalerState st{};
    bool skip;
    float scale;
    auto step = [&](bool inf, bool want_skip, float want_scale) {
      if (!why.empty()) return;
      s = a.Update(inf, &skip, &scale);
      if (!s.ok()) why = s.message();
      else if (skip != want_skip || scale != want_scale)
        why = Format("update(found_inf=%d) gave skip=%d scale=%g, expected "
                     "skip=%d scale=%g",
                     inf, skip, scale, want_skip, want_scale);
    };
    s = a.Get(&st);
    if (!s.ok()) why = s.message();
    else if (st.scale != 1024.0f || st.growth_tracker != 0 || st.skipped_steps != 0)
      why = Format("initial state scale=%g tracker=%lld skipped=%lld, expected "
                   "1024/0/0", st.scale, (long long)st.growth_tracker,
                   (long long)st.skipped_steps);
    step(true, true, 512.0f);    // skip + backoff
    step(false, false, 512.0f);
    step(false, false, 512.0f);
    step(false, false, 1024.0f);  // third clean step grows
    step(false, false, 1024.0f);
    step(true, true, 512.0f);     // overflow resets the tracker
    step(false, false, 512.0f);
    step(false, false, 512.0f);
    step(false, false, 1024.0f);
    if (why.empty()) {
      s = a.Get(&st);
      if (!s.ok()) why = s.message();
      else if (st.skipped_steps != 2 || st.growth_tracker != 0)
        why = Format("after 2 overflows: skipped=%lld tracker=%lld",
                     (long long)st.skipped_steps, (long long)st.growth_tracker);
    }
    r->Check(n + "scaler_skip_backoff_growth", why);
  }
  {  // Random sequence: skip exactly on overflow, scale stays finite > 0,
     // and a second scaler restored from the state replays it identically.
    std::mt19937_64 rng(seed);
    std::string why;
    for (int i = 0; i < 100 && why.empty(); ++i) {
      bool skip;
      float scale;
      const bool inf = rng() % 4 == 0;
      s = a.Update(inf, &skip, &scale);
      if (!s.ok()) why = s.message();
      else if (skip != inf) why = Format("step %d: skip=%d but found_inf=%d", i, skip, inf);
      else if (!std::isfinite(scale) || !(scale > 0))
        why = Format("step %d: scale %g", i, scale);
    }
    r->Check(n + "scaler_random_sequence", why);

    why.clear();
    MNT_LossScalerState st{};
    Scaler b(plugin);
    s = a.Get(&st);
    if (s.ok()) s = b.Create(kDyn);
    if (s.ok()) s = b.Set(st);
    if (!s.ok()) why = s.message();
    for (int i = 0; i < 100 && why.empty(); ++i) {
      const bool inf = rng() % 3 == 0;
      bool skip_a, skip_b;
      float scale_a, scale_b;
      s = a.Update(inf, &skip_a, &scale_a);
      if (s.ok()) s = b.Update(inf, &skip_b, &scale_b);
      if (!s.ok()) why = s.message();
      else if (skip_a != skip_b || scale_a != scale_b)
        why = Format("step %d after restore: original skip=%d scale=%g, "
                     "restored skip=%d scale=%g", i, skip_a, scale_a, skip_b, scale_b);
    }
    MNT_LossScalerState sa{}, sb{};
    if (why.empty() && a.Get(&sa).ok() && b.Get(&sb).ok() &&
        (sa.scale != sb.scale || sa.growth_tracker != sb.growth_tracker ||
         sa.skipped_steps - st.skipped_steps != sb.skipped_steps - st.skipped_steps)) {
      why = "final states differ";
    }
    r->Check(n + "scaler_state_save_restore", why);
  }
  {  // Never grows to inf; invalid states are refused.
    std::string why;
    MNT_LossScalerState st{};
    st.scale = 3.0e38f;
    st.growth_tracker = 2;
    s = a.Set(st);
    bool skip;
    float scale;
    if (s.ok()) s = a.Update(false, &skip, &scale);
    if (!s.ok()) why = s.message();
    else if (!std::isfinite(scale)) why = "the scale grew to inf";
    r->Check(n + "scaler_never_grows_to_inf", why);

    why.clear();
    for (float bad : {std::nanf(""), -1.0f, 0.0f, INFINITY}) {
      st.scale = bad;
      st.growth_tracker = 0;
      if (a.Set(st).ok()) why = Format("SetState accepted scale=%g", bad);
    }
    r->Check(n + "scaler_refuses_invalid_state", why);
  }
}

}  // namespace mnt::conformance
