// Conformance checks for precision plugins: policy sanity and the loss-scaler
// contract. A scaler that declares the dynamic recipe (LossScaler_GetRecipe,
// ABI 1.5) is replayed step by step against the declaration (the formula of
// plugins/sdk/loss_scale_math.h); one that declares nothing is held to what
// every policy must keep: an overflow step is skipped, the scale stays finite
// and > 0 and a dynamic one backs off under overflows, state (its own bytes
// too) survives save/restore mid-run, options reach the scaler, bad options
// are refused. A plugin with Precision_GetScalingRecipe (ABI 1.10) answers
// within the ABI's ranges and refuses unknown option keys; one whose MATMUL
// computes in FP8 must declare a recipe.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/loss_scale_math.h"
#include "plugins/sdk/loss_scaler_client.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/precision_client.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"
#include "plugins/conformance/conformance.h"

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
  Scaler(const MNT_Plugin_Api* p, std::string precision_options)
      : p_(p), precision_options_(std::move(precision_options)) {}
  Status Create(const char* options) {
    return sdk::LossScalerClient::Create(p_, options, precision_options_, &scaler_);
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
  Status GetFull(sdk::LossScalerFullState* st) { return scaler_.GetFullState(st); }
  Status SetFull(const sdk::LossScalerFullState& st) {
    return scaler_.SetFullState(st, /*with_plugin_state=*/true);
  }
  Status Recipe(sdk::LossScalerRecipe* r) { return scaler_.GetRecipe(r); }

 private:
  const MNT_Plugin_Api* p_;
  std::string precision_options_;
  sdk::LossScalerClient scaler_;
};

bool TakesPrecisionOptions(const MNT_Plugin_Api* p) {
  return sdk::HasCapability(p, MNT_CAPABILITY_PRECISION_OPTIONS);
}

// "" when `st` is a one-line INVALID_ARGUMENT refusal of `what`.
std::string RefusedInOneLine(const Status& st, const char* what) {
  return st.ok() ? Format("'%s' was accepted", what)
         : st.code() != MNT_ERROR_INVALID_ARGUMENT
             ? "refused, but not with INVALID_ARGUMENT: " + st.message()
         : st.message().find('\n') != std::string::npos ? "message is not one line"
                                                         : "";
}

const char* RecipeName(MNT_ScalingRecipe r) {
  switch (r) {
    case MNT_SCALING_RECIPE_NONE: return "NONE";
    case MNT_SCALING_RECIPE_DELAYED: return "DELAYED";
    case MNT_SCALING_RECIPE_CURRENT: return "CURRENT";
  }
  return "?";
}

const char* AmaxAlgoName(MNT_AmaxAlgo a) {
  switch (a) {
    case MNT_AMAX_ALGO_MAX: return "max";
    case MNT_AMAX_ALGO_MOST_RECENT: return "most_recent";
    default: return "invalid";
  }
}

// ABI 1.10. Precision_GetScalingRecipe, when the plugin has it: its answer
// for the run's options within the ABI's ranges (sdk::CheckScalingRecipe),
// the same answer twice, unknown keys and malformed strings refused. Any
// plugin whose MATMUL computes in FP8 must declare a recipe (NULL, absent
// and NONE all mean no scaled formats).
void CheckScalingRecipe(const sdk::PrecisionClient& precision, const std::string& options,
                        bool fp8_matmul, const std::string& n, Report* r) {
  MNT_Precision_GetScalingRecipe_Args recipe;
  const Status got = precision.GetScalingRecipe(options, &recipe);  // NONE without it
  if (!precision.HasScalingRecipe()) {
    r->Skip(n + "scaling_recipe",
            "the plugin has no Precision_GetScalingRecipe (ABI 1.10): no scaled formats");
  } else if (!got.ok()) {
    r->Fail(n + "scaling_recipe", "options '" + options + "': " + got.message());
  } else {
    std::string why = sdk::CheckScalingRecipe(recipe).message();
    MNT_Precision_GetScalingRecipe_Args again;
    if (why.empty()) {
      Status s = precision.GetScalingRecipe(options, &again);
      if (!s.ok()) {
        why = "the second call failed: " + s.message();
      } else if (again.recipe != recipe.recipe ||
                 again.forward_dtype != recipe.forward_dtype ||
                 again.backward_dtype != recipe.backward_dtype ||
                 again.history_length != recipe.history_length ||
                 again.amax_algo != recipe.amax_algo || again.margin != recipe.margin ||
                 again.fast_accumulation_forward != recipe.fast_accumulation_forward ||
                 again.calibrate != recipe.calibrate) {
        why = "a second call with the same options answered differently";
      }
    }
    const std::string what =
        recipe.recipe == MNT_SCALING_RECIPE_NONE
            ? "NONE"
            : Format("%s, forward %s, backward %s, history %d, algo %s, margin %d, "
                     "fast_accumulation_forward %d, calibrate %d",
                     RecipeName(recipe.recipe), sdk::DTypeName(recipe.forward_dtype),
                     sdk::DTypeName(recipe.backward_dtype), recipe.history_length,
                     AmaxAlgoName(recipe.amax_algo), recipe.margin,
                     recipe.fast_accumulation_forward, recipe.calibrate);
    r->Check(n + "scaling_recipe (" + what + ")", why);
    r->Check(n + "scaling_recipe_rejects_unknown_option",
             RefusedInOneLine(precision.GetScalingRecipe("no_such_precision_option=1", &again),
                              "no_such_precision_option=1"));
    r->Check(n + "scaling_recipe_rejects_malformed_options",
             RefusedInOneLine(precision.GetScalingRecipe("=,=", &again), "=,="));
  }
  if (fp8_matmul) {
    // A failed call was reported above; only a clean NONE is this failure.
    r->Check(n + "fp8_matmul_declares_a_scaling_recipe",
             !got.ok() || recipe.recipe != MNT_SCALING_RECIPE_NONE
                 ? ""
                 : "MATMUL computes in FP8 (Precision_GetOpClassPolicy) but the plugin "
                   "declares no scaling recipe (Precision_GetScalingRecipe is absent, "
                   "NULL or answers NONE)");
  }
}

// Replays `recipe` from `scaler`'s current state over `found_infs`: every
// step's skip, scale bits and trackers must be the declaration's.
std::string ReplayRecipe(Scaler* scaler, const LossScaleRecipeParams& recipe,
                         const std::vector<bool>& found_infs) {
  sdk::LossScalerFullState st;
  Status s = scaler->GetFull(&st);
  if (!s.ok()) return s.message();
  float scale = st.state.scale;
  int64_t growth = st.state.growth_tracker, hysteresis = st.hysteresis_tracker;
  for (size_t i = 0; i < found_infs.size(); ++i) {
    bool skip;
    float got;
    s = scaler->Update(found_infs[i], &skip, &got);
    if (!s.ok()) return s.message();
    UpdateLossScale(found_infs[i], recipe, &scale, &growth, &hysteresis);
    if (skip != found_infs[i] || got != scale) {
      return Format("step %zu (found_inf=%d): skip=%d scale=%.9g, the declared "
                    "recipe gives skip=%d scale=%.9g",
                    i + 1, static_cast<int>(found_infs[i]), skip, got,
                    static_cast<int>(found_infs[i]), scale);
    }
    s = scaler->GetFull(&st);
    if (!s.ok()) return s.message();
    if (st.state.growth_tracker != growth || st.hysteresis_tracker != hysteresis) {
      return Format("step %zu: growth_tracker %lld, hysteresis_tracker %lld; the "
                    "declared recipe gives %lld, %lld",
                    i + 1, static_cast<long long>(st.state.growth_tracker),
                    static_cast<long long>(st.hysteresis_tracker),
                    static_cast<long long>(growth), static_cast<long long>(hysteresis));
    }
  }
  return "";
}

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

void CheckPrecisionPlugin(const MNT_Plugin_Api* plugin, const std::string& options,
                          uint64_t seed, Report* r) {
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

  bool fp8_matmul = false;
  {  // Every op class answers with valid formats; losses etc. compute in f32;
     // MATMUL may compute in a scaled FP8 format (ABI 1.10).
    std::string why;
    for (int c = MNT_OP_CLASS_MATMUL; c <= MNT_OP_CLASS_EMBEDDING && why.empty();
         ++c) {
      MNT_Precision_GetOpClassPolicy_Args a;
      s = precision.GetOpClassPolicy(static_cast<MNT_OpClass>(c), &a);
      if (!s.ok()) {
        why = Format("op class %d: %s", c, s.message().c_str());
      } else if (!IsFloat(a.storage_dtype) ||
                 !(IsFloat(a.compute_dtype) ||
                   (c == MNT_OP_CLASS_MATMUL && sdk::IsFp8(a.compute_dtype))) ||
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
      if (why.empty() && c == MNT_OP_CLASS_MATMUL) fp8_matmul = sdk::IsFp8(a.compute_dtype);
    }
    MNT_Precision_GetOpClassPolicy_Args bad;
    if (why.empty() &&
        precision.GetOpClassPolicy(static_cast<MNT_OpClass>(999), &bad).ok()) {
      why = "an unknown op class (999) was accepted";
    }
    r->Check(n + "op_class_policy", why);
  }

  CheckScalingRecipe(precision, options, fp8_matmul, n, r);

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
    Scaler none(plugin, options);
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
  const auto refused_in_one_line = RefusedInOneLine;
  {
    Scaler bad(plugin, options);
    s = bad.Create("no_such_option=1");
    r->Check(n + "scaler_rejects_unknown_option",
             refused_in_one_line(s, "no_such_option=1"));
  }
  if (TakesPrecisionOptions(plugin)) {  // 1.5: the plugin's own options reach it
    Scaler bad(plugin, "no_such_precision_option=1");
    s = bad.Create("");
    r->Check(n + "rejects_unknown_precision_option",
             refused_in_one_line(s, "no_such_precision_option=1"));
    Scaler malformed(plugin, "=,=");
    s = malformed.Create("");
    r->Check(n + "rejects_malformed_precision_options", refused_in_one_line(s, "=,="));
  } else {
    r->Skip(n + "rejects_unknown_precision_option",
            "the plugin does not offer capability PRECISION_OPTIONS (ABI 1.5)");
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
  Scaler a(plugin, options);
  s = a.Create(kDyn);
  if (!s.ok()) {
    r->Fail(n + "scaler_create_dynamic", s.message());
    return;
  }
  sdk::LossScalerRecipe recipe;
  s = a.Recipe(&recipe);
  if (!s.ok()) {
    r->Fail(n + "scaler_recipe", s.message());
    return;
  }
  {  // Options reach the scaler: it starts at init_scale=1024 with clean trackers.
    std::string why;
    sdk::LossScalerFullState st;
    s = a.GetFull(&st);
    if (!s.ok()) why = s.message();
    else if (st.state.scale != 1024.0f || st.state.growth_tracker != 0 ||
             st.state.skipped_steps != 0 || st.hysteresis_tracker != 0)
      why = Format("initial state scale=%g tracker=%lld skipped=%lld hysteresis=%lld, "
                   "expected 1024/0/0/0 from '%s'",
                   st.state.scale, (long long)st.state.growth_tracker,
                   (long long)st.state.skipped_steps, (long long)st.hysteresis_tracker,
                   kDyn);
    else if (recipe.declared &&
             (recipe.params.growth_factor != 2.0 || recipe.params.backoff_factor != 0.5 ||
              recipe.params.growth_interval != 3))
      why = Format("declared growth_factor=%g backoff_factor=%g growth_interval=%lld, "
                   "but the options asked for 2, 0.5, 3",
                   recipe.params.growth_factor, recipe.params.backoff_factor,
                   (long long)recipe.params.growth_interval);
    r->Check(n + "scaler_options_reach_it", why);
  }
  if (recipe.declared) {
    // Overflow runs of every length up to 5, clean runs around the interval,
    // then a random stretch: each step must be the declaration's.
    std::vector<bool> seq;
    for (int run = 1; run <= 5; ++run) {
      seq.insert(seq.end(), run, true);
      seq.insert(seq.end(), run + 1, false);
    }
    std::mt19937_64 rng(seed ^ 0x5eedULL);
    for (int i = 0; i < 200; ++i) seq.push_back(rng() % 3 == 0);
    r->Check(n + Format("scaler_recipe_replay (hysteresis %d, min_scale %g, max_scale %g)",
                        recipe.params.hysteresis,
                        static_cast<double>(recipe.params.min_scale),
                        static_cast<double>(recipe.params.max_scale)),
             ReplayRecipe(&a, recipe.params, seq));
  } else {
    // No declaration: the contract of any dynamic policy. 64 overflows in a
    // row must lower the scale (else it is static), every one skipped.
    std::string why;
    sdk::LossScalerFullState st;
    s = a.GetFull(&st);
    if (!s.ok()) why = s.message();
    float scale = st.state.scale;
    for (int i = 0; i < 64 && why.empty(); ++i) {
      bool skip;
      s = a.Update(true, &skip, &scale);
      if (!s.ok()) why = s.message();
      else if (!skip) why = Format("overflow %d was not skipped", i + 1);
      else if (!std::isfinite(scale) || !(scale > 0))
        why = Format("overflow %d: scale %g", i + 1, scale);
    }
    if (why.empty() && !(scale < st.state.scale))
      why = Format("64 overflows in a row left the scale at %g (from %g): a dynamic "
                   "scaler must back off", scale, st.state.scale);
    r->Check(n + "scaler_backs_off_under_overflow", why);
    // Back to the start state for the checks below.
    if (Status back = a.SetFull(st); !back.ok()) {
      r->Fail(n + "scaler_state_restore", back.message());
      return;
    }
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
    sdk::LossScalerFullState st;
    Scaler b(plugin, options);
    s = a.GetFull(&st);
    if (s.ok()) s = b.Create(kDyn);
    if (s.ok()) s = b.SetFull(st);
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
    sdk::LossScalerFullState sa, sb;
    if (why.empty() && a.GetFull(&sa).ok() && b.GetFull(&sb).ok() &&
        (sa.state.scale != sb.state.scale ||
         sa.state.growth_tracker != sb.state.growth_tracker ||
         sa.state.skipped_steps != sb.state.skipped_steps ||
         sa.hysteresis_tracker != sb.hysteresis_tracker ||
         sa.plugin_state != sb.plugin_state)) {
      why = Format("final states differ (plugin_state %zu vs %zu bytes%s)",
                   sa.plugin_state.size(), sb.plugin_state.size(),
                   sa.plugin_state == sb.plugin_state ? "" : ", different");
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
