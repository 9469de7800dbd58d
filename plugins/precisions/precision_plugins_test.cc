// Exercises the five precision plugins through their C function tables, as
// the trainer sees them (and fp8's scaling recipe through the SDK's
// PrecisionClient too).
#include "plugins/precisions/precision_plugins.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "plugins/sdk/precision_client.h"

namespace mnt::precision {
namespace {

// Calls `fn(args)` and returns "" on success or the error message (freeing
// the error with the plugin's own Error_Destroy).
template <typename Fn, typename Args>
std::string Call(const MNT_Plugin_Api* plugin, Fn* fn, Args* args,
                 MNT_ErrorCode* code = nullptr) {
  MNT_Error* e = fn(args);
  if (e == nullptr) return "";
  std::string message = plugin->Error_Message(e);
  if (code) *code = plugin->Error_GetCode(e);
  plugin->Error_Destroy(e);
  return message.empty() ? "<empty error message>" : message;
}

struct ExpectedPolicy {
  const MNT_Plugin_Api* (*getter)();
  const char* name;
  MNT_DType weight, master, grad, act, opt;
  MNT_ComputeMode matmul;
  MNT_LossScaling scaling;
  // What MATMUL computes in where it can: a scaled format (fp8's E4M3), or
  // INVALID for the operand format of `matmul`.
  MNT_DType scaled_matmul = MNT_DTYPE_INVALID;
};

const ExpectedPolicy kExpected[] = {
    {Fp32PluginApi, "fp32", MNT_DTYPE_F32, MNT_DTYPE_INVALID, MNT_DTYPE_F32,
     MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_COMPUTE_F32, MNT_LOSS_SCALING_NONE},
    {Tf32PluginApi, "tf32", MNT_DTYPE_F32, MNT_DTYPE_INVALID, MNT_DTYPE_F32,
     MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_COMPUTE_TF32, MNT_LOSS_SCALING_NONE},
    {Bf16PluginApi, "bf16", MNT_DTYPE_BF16, MNT_DTYPE_F32, MNT_DTYPE_BF16,
     MNT_DTYPE_BF16, MNT_DTYPE_F32, MNT_COMPUTE_BF16, MNT_LOSS_SCALING_NONE},
    {Fp16PluginApi, "fp16", MNT_DTYPE_F16, MNT_DTYPE_F32, MNT_DTYPE_F16,
     MNT_DTYPE_F16, MNT_DTYPE_F32, MNT_COMPUTE_F16, MNT_LOSS_SCALING_DYNAMIC},
    // bf16's policy; only MATMUL computes in FP8 (with bf16 as compute_mode,
    // the fallback of GEMMs that cannot).
    {Fp8PluginApi, "fp8", MNT_DTYPE_BF16, MNT_DTYPE_F32, MNT_DTYPE_BF16,
     MNT_DTYPE_BF16, MNT_DTYPE_F32, MNT_COMPUTE_BF16, MNT_LOSS_SCALING_NONE,
     MNT_DTYPE_F8_E4M3},
};

TEST(PrecisionPluginsTest, PluginTablesAreWellFormed) {
  for (const ExpectedPolicy& e : kExpected) {
    const MNT_Plugin_Api* p = e.getter();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->struct_size, MNT_Plugin_Api_STRUCT_SIZE);
    EXPECT_EQ(p->kind, MNT_PLUGIN_KIND_PRECISION);
    EXPECT_STREQ(p->name, e.name);
    EXPECT_EQ(p->abi_version.major_version, MNT_ABI_MAJOR);
    EXPECT_EQ(p->abi_version.minor_version, MNT_ABI_MINOR);
    EXPECT_EQ(p->backend, nullptr);
    EXPECT_EQ(p->model, nullptr);
    ASSERT_NE(p->precision, nullptr);
    EXPECT_EQ(p->precision->struct_size, MNT_Precision_Api_STRUCT_SIZE);
    const MNT_Precision_Api* a = p->precision;
    for (const void* fn :
         {(const void*)a->Precision_GetPolicy,
          (const void*)a->Precision_GetOpClassPolicy,
          (const void*)a->Precision_GetMemoryPlan,
          (const void*)a->LossScaler_Create, (const void*)a->LossScaler_Destroy,
          (const void*)a->LossScaler_GetState,
          (const void*)a->LossScaler_SetState,
          (const void*)a->LossScaler_Update,
          (const void*)a->LossScaler_GetRecipe}) {
      EXPECT_NE(fn, nullptr) << e.name;
    }
    // Only a precision with scaled formats declares a scaling recipe; NULL
    // is MNT_SCALING_RECIPE_NONE.
    EXPECT_EQ(a->Precision_GetScalingRecipe != nullptr,
              e.scaled_matmul != MNT_DTYPE_INVALID)
        << e.name;
    EXPECT_EQ(sdk::PrecisionClient(p).HasScalingRecipe(),
              e.scaled_matmul != MNT_DTYPE_INVALID)
        << e.name;
  }
}

TEST(PrecisionPluginsTest, TensorPolicies) {
  for (const ExpectedPolicy& e : kExpected) {
    const MNT_Plugin_Api* p = e.getter();
    MNT_Precision_GetPolicy_Args a{};
    a.struct_size = MNT_Precision_GetPolicy_Args_STRUCT_SIZE;
    ASSERT_EQ(Call(p, p->precision->Precision_GetPolicy, &a), "");
    EXPECT_EQ(a.weight_dtype, e.weight) << e.name;
    EXPECT_EQ(a.master_weight_dtype, e.master) << e.name;
    EXPECT_EQ(a.gradient_dtype, e.grad) << e.name;
    EXPECT_EQ(a.activation_dtype, e.act) << e.name;
    EXPECT_EQ(a.optimizer_state_dtype, e.opt) << e.name;
    EXPECT_EQ(a.matmul_compute, e.matmul) << e.name;
    EXPECT_EQ(a.loss_scaling, e.scaling) << e.name;
  }
}

TEST(PrecisionPluginsTest, OpClassPolicies) {
  for (const ExpectedPolicy& e : kExpected) {
    const MNT_Plugin_Api* p = e.getter();
    auto get = [&](MNT_OpClass c) {
      MNT_Precision_GetOpClassPolicy_Args a{};
      a.struct_size = MNT_Precision_GetOpClassPolicy_Args_STRUCT_SIZE;
      a.op_class = c;
      EXPECT_EQ(Call(p, p->precision->Precision_GetOpClassPolicy, &a), "");
      return a;
    };
    const MNT_DType f32 = MNT_DTYPE_F32;
    // The dtype GEMM operands are rounded to (tf32 has none; it says F32).
    const MNT_DType operand = e.scaled_matmul != MNT_DTYPE_INVALID ? e.scaled_matmul
                              : e.matmul == MNT_COMPUTE_BF16    ? MNT_DTYPE_BF16
                              : e.matmul == MNT_COMPUTE_F16     ? MNT_DTYPE_F16
                                                                : f32;
    auto mm = get(MNT_OP_CLASS_MATMUL);
    EXPECT_EQ(mm.storage_dtype, e.act) << e.name;
    EXPECT_EQ(mm.compute_dtype, operand) << e.name;
    EXPECT_EQ(mm.accumulate_dtype, f32) << e.name;
    EXPECT_EQ(mm.compute_mode, e.matmul) << e.name;
    for (MNT_OpClass c : {MNT_OP_CLASS_ELEMENTWISE, MNT_OP_CLASS_NORMALIZATION,
                          MNT_OP_CLASS_SOFTMAX, MNT_OP_CLASS_EMBEDDING}) {
      auto a = get(c);
      EXPECT_EQ(a.storage_dtype, e.act) << e.name << " class " << c;
      EXPECT_EQ(a.compute_dtype, f32) << e.name << " class " << c;
      EXPECT_EQ(a.accumulate_dtype, f32) << e.name << " class " << c;
    }
    for (MNT_OpClass c : {MNT_OP_CLASS_LOSS, MNT_OP_CLASS_REDUCTION,
                          MNT_OP_CLASS_OPTIMIZER}) {
      auto a = get(c);
      EXPECT_EQ(a.storage_dtype, f32) << e.name << " class " << c;
      EXPECT_EQ(a.compute_dtype, f32) << e.name << " class " << c;
      EXPECT_EQ(a.accumulate_dtype, f32) << e.name << " class " << c;
    }
    MNT_Precision_GetOpClassPolicy_Args bad{};
    bad.struct_size = MNT_Precision_GetOpClassPolicy_Args_STRUCT_SIZE;
    bad.op_class = MNT_OP_CLASS_INVALID;
    MNT_ErrorCode code{};
    EXPECT_NE(Call(p, p->precision->Precision_GetOpClassPolicy, &bad, &code)
                  .find("unknown op class 0"),
              std::string::npos);
    EXPECT_EQ(code, MNT_ERROR_INVALID_ARGUMENT);
  }
}

TEST(PrecisionPluginsTest, MemoryPlans) {
  for (const ExpectedPolicy& e : kExpected) {
    const MNT_Plugin_Api* p = e.getter();
    MNT_Precision_GetMemoryPlan_Args a{};
    a.struct_size = MNT_Precision_GetMemoryPlan_Args_STRUCT_SIZE;
    a.optimizer_state_slots = 2;
    ASSERT_EQ(Call(p, p->precision->Precision_GetMemoryPlan, &a), "");
    const bool mixed = e.master != MNT_DTYPE_INVALID;
    EXPECT_EQ(a.bytes_weights, mixed ? 2 : 4) << e.name;
    EXPECT_EQ(a.bytes_master_weights, mixed ? 4 : 0) << e.name;
    EXPECT_EQ(a.bytes_gradients, mixed ? 2 : 4) << e.name;
    EXPECT_EQ(a.bytes_master_gradients, mixed ? 4 : 0) << e.name;
    EXPECT_EQ(a.bytes_optimizer_state, 8) << e.name;
  }
}

TEST(PrecisionPluginsTest, ShortStructsAndNullArgsAreErrors) {
  const MNT_Plugin_Api* p = Fp16PluginApi();
  MNT_Precision_GetPolicy_Args a{};
  a.struct_size = 8;
  EXPECT_NE(Call(p, p->precision->Precision_GetPolicy, &a)
                .find("MNT_Precision_GetPolicy_Args: struct_size 8 is smaller"),
            std::string::npos);
  EXPECT_NE(Call(p, p->precision->Precision_GetPolicy,
                 static_cast<MNT_Precision_GetPolicy_Args*>(nullptr))
                .find("args is NULL"),
            std::string::npos);
  MNT_LossScaler_Update_Args u{};
  u.struct_size = MNT_LossScaler_Update_Args_STRUCT_SIZE;
  EXPECT_NE(Call(p, p->precision->LossScaler_Update, &u).find("scaler is NULL"),
            std::string::npos);
  MNT_LossScaler_Destroy_Args d{};
  d.struct_size = MNT_LossScaler_Destroy_Args_STRUCT_SIZE;
  EXPECT_EQ(Call(p, p->precision->LossScaler_Destroy, &d), "");  // NULL ok
}

// A scaler owned by the test, driven through the C table.
class CScaler {
 public:
  CScaler(const MNT_Plugin_Api* plugin, const char* options,
          const char* precision_options = nullptr)
      : p_(plugin) {
    MNT_LossScaler_Create_Args a{};
    a.struct_size = MNT_LossScaler_Create_Args_STRUCT_SIZE;
    a.options = options;
    a.precision_options = precision_options;
    error_ = Call(p_, p_->precision->LossScaler_Create, &a);
    scaler_ = a.scaler;
  }
  ~CScaler() {
    MNT_LossScaler_Destroy_Args a{};
    a.struct_size = MNT_LossScaler_Destroy_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    EXPECT_EQ(Call(p_, p_->precision->LossScaler_Destroy, &a), "");
  }
  const std::string& error() const { return error_; }
  MNT_LossScaler_Update_Args Update(bool found_inf) {
    MNT_LossScaler_Update_Args a{};
    a.struct_size = MNT_LossScaler_Update_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    a.found_inf = found_inf;
    a.skip_step = -1;
    a.new_scale = NAN;
    EXPECT_EQ(Call(p_, p_->precision->LossScaler_Update, &a), "");
    return a;
  }
  MNT_LossScalerState Get() {
    MNT_LossScaler_GetState_Args a{};
    a.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    a.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
    EXPECT_EQ(Call(p_, p_->precision->LossScaler_GetState, &a), "");
    return a.state;
  }
  std::string Set(MNT_LossScalerState state) {
    MNT_LossScaler_SetState_Args a{};
    a.struct_size = MNT_LossScaler_SetState_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    a.state = state;
    return Call(p_, p_->precision->LossScaler_SetState, &a);
  }

 private:
  const MNT_Plugin_Api* p_;
  MNT_LossScaler* scaler_ = nullptr;
  std::string error_;
};

TEST(PrecisionPluginsTest, Fp16DefaultScalerIsDynamic) {
  CScaler s(Fp16PluginApi(), nullptr);
  ASSERT_EQ(s.error(), "");
  EXPECT_EQ(s.Get().scale, 65536.0f);
  auto u = s.Update(true);
  EXPECT_EQ(u.skip_step, 1);
  EXPECT_EQ(u.new_scale, 32768.0f);
  u = s.Update(false);
  EXPECT_EQ(u.skip_step, 0);
  EXPECT_EQ(u.new_scale, 32768.0f);
  MNT_LossScalerState st = s.Get();
  EXPECT_EQ(st.scale, 32768.0f);
  EXPECT_EQ(st.growth_tracker, 1);
  EXPECT_EQ(st.skipped_steps, 1);
}

TEST(PrecisionPluginsTest, OtherPrecisionsGiveScaleOneAndRefuseScaling) {
  for (auto getter : {Fp32PluginApi, Tf32PluginApi, Bf16PluginApi, Fp8PluginApi}) {
    const MNT_Plugin_Api* p = getter();
    CScaler s(p, "");
    ASSERT_EQ(s.error(), "") << p->name;
    for (bool inf : {true, false}) {
      auto u = s.Update(inf);
      EXPECT_EQ(u.skip_step, 0) << p->name;
      EXPECT_EQ(u.new_scale, 1.0f) << p->name;
    }
    CScaler dyn(p, "mode=dynamic");
    EXPECT_NE(dyn.error().find("loss scaling is only for fp16; " +
                               std::string(p->name) + " has fp32's range"),
              std::string::npos)
        << dyn.error();
    CScaler stat(p, "mode=static,init_scale=8");
    EXPECT_NE(stat.error().find("loss scaling is only for fp16"),
              std::string::npos);
    CScaler none(p, "mode=none");
    EXPECT_EQ(none.error(), "");
  }
}

TEST(PrecisionPluginsTest, CreateRejectsBadOptions) {
  CScaler unknown(Fp16PluginApi(), "mode=dynamic,groth_factor=2");
  EXPECT_NE(unknown.error().find("unknown key 'groth_factor'"),
            std::string::npos);
  CScaler bad(Fp16PluginApi(), "backoff_factor=1.5");
  EXPECT_NE(bad.error().find("backoff_factor=1.5 must be in (0, 1)"),
            std::string::npos);
}

TEST(PrecisionPluginsTest, StateRoundTripThroughC) {
  CScaler a(Fp16PluginApi(), "growth_interval=3");
  for (bool inf : {true, false, false}) a.Update(inf);
  MNT_LossScalerState saved = a.Get();
  CScaler b(Fp16PluginApi(), "growth_interval=3");
  ASSERT_EQ(b.Set(saved), "");
  MNT_LossScalerState restored = b.Get();
  EXPECT_EQ(restored.scale, saved.scale);
  EXPECT_EQ(restored.growth_tracker, saved.growth_tracker);
  EXPECT_EQ(restored.skipped_steps, saved.skipped_steps);
  // The next clean step grows both identically (tracker was 2 of 3).
  EXPECT_EQ(a.Update(false).new_scale, 65536.0f);
  EXPECT_EQ(b.Update(false).new_scale, 65536.0f);

  MNT_LossScalerState nan_state = saved;
  nan_state.scale = NAN;
  EXPECT_NE(b.Set(nan_state).find("must be positive and finite"),
            std::string::npos);
  MNT_LossScalerState short_state = saved;
  short_state.struct_size = 4;
  EXPECT_NE(b.Set(short_state).find("MNT_LossScalerState: struct_size 4"),
            std::string::npos);
}

// --- fp8: the scaling recipe (ABI 1.10) ------------------------------------

// Precision_GetScalingRecipe through fp8's C table; "" or the error.
std::string GetRecipe(const char* options, MNT_Precision_GetScalingRecipe_Args* a,
                      MNT_ErrorCode* code = nullptr) {
  const MNT_Plugin_Api* p = Fp8PluginApi();
  *a = {};
  a->struct_size = MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE;
  a->precision_options = options;
  return Call(p, p->precision->Precision_GetScalingRecipe, a, code);
}

TEST(Fp8PluginTest, DefaultRecipeIsDelayedScalingHybrid) {
  for (const char* options : {static_cast<const char*>(nullptr), "", " "}) {
    MNT_Precision_GetScalingRecipe_Args a;
    ASSERT_EQ(GetRecipe(options, &a), "");
    EXPECT_EQ(a.recipe, MNT_SCALING_RECIPE_DELAYED);
    EXPECT_EQ(a.forward_dtype, MNT_DTYPE_F8_E4M3);
    EXPECT_EQ(a.backward_dtype, MNT_DTYPE_F8_E5M2);
    EXPECT_EQ(a.history_length, 1024);
    EXPECT_EQ(a.amax_algo, MNT_AMAX_ALGO_MAX);
    EXPECT_EQ(a.margin, 0);
    EXPECT_EQ(a.fast_accumulation_forward, 1);
    EXPECT_EQ(a.calibrate, 1);
  }
}

TEST(Fp8PluginTest, EveryOptionReachesTheRecipe) {
  MNT_Precision_GetScalingRecipe_Args a;
  ASSERT_EQ(GetRecipe("format=e4m3,history=16,algo=most_recent,margin=2,recipe=delayed,"
                      "fast_accumulation=0,calibrate=0",
                      &a),
            "");
  EXPECT_EQ(a.recipe, MNT_SCALING_RECIPE_DELAYED);
  EXPECT_EQ(a.forward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(a.backward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(a.history_length, 16);
  EXPECT_EQ(a.amax_algo, MNT_AMAX_ALGO_MOST_RECENT);
  EXPECT_EQ(a.margin, 2);
  EXPECT_EQ(a.fast_accumulation_forward, 0);
  EXPECT_EQ(a.calibrate, 0);

  ASSERT_EQ(GetRecipe("format=hybrid", &a), "");
  EXPECT_EQ(a.backward_dtype, MNT_DTYPE_F8_E5M2);
  ASSERT_EQ(GetRecipe("history=1", &a), "");
  EXPECT_EQ(a.history_length, 1);
  ASSERT_EQ(GetRecipe("history=65536", &a), "");
  EXPECT_EQ(a.history_length, 65536);
  ASSERT_EQ(GetRecipe("algo=max", &a), "");
  EXPECT_EQ(a.amax_algo, MNT_AMAX_ALGO_MAX);
  ASSERT_EQ(GetRecipe("margin=64", &a), "");
  EXPECT_EQ(a.margin, 64);
  ASSERT_EQ(GetRecipe("fast_accumulation=1,calibrate=1", &a), "");
  EXPECT_EQ(a.fast_accumulation_forward, 1);
  EXPECT_EQ(a.calibrate, 1);

  ASSERT_EQ(GetRecipe("recipe=current,format=e4m3,margin=1", &a), "");
  EXPECT_EQ(a.recipe, MNT_SCALING_RECIPE_CURRENT);
  EXPECT_EQ(a.forward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(a.backward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(a.history_length, 1);  // no history: the pass's own amax
  EXPECT_EQ(a.amax_algo, MNT_AMAX_ALGO_MOST_RECENT);
  EXPECT_EQ(a.margin, 1);
  EXPECT_EQ(a.fast_accumulation_forward, 1);
  EXPECT_EQ(a.calibrate, 0);
}

// Every refusal, from both calls that take the options: the same parser, so
// the same one-line INVALID_ARGUMENT naming the key and value.
TEST(Fp8PluginTest, RefusalsNameKeyAndValueInBothCalls) {
  const struct {
    const char* options;
    const char* says;
  } cases[] = {
      {"hysteresis=2", "fp8 precision options: unknown key 'hysteresis' (known: algo, "
                       "calibrate, fast_accumulation, format, history, margin, recipe)"},
      {"no_such_option=1", "unknown key 'no_such_option'"},
      {"=,=", "fp8 precision options: expected key=value, got '='"},
      {"history", "expected key=value, got 'history'"},
      {"margin=1,margin=2", "key 'margin' given twice"},
      {"format=e5m2", "format='e5m2' is not one of hybrid (E4M3 forward, E5M2 gradients), e4m3"},
      {"history=0", "history=0 must be in [1, 65536] (amax history length)"},
      {"history=65537", "history=65537 must be in [1, 65536]"},
      {"history=ten", "history='ten' is not an integer"},
      {"algo=avg", "algo='avg' is not one of max, most_recent"},
      {"margin=-1", "margin=-1 must be in [0, 64]"},
      {"margin=65", "margin=65 must be in [0, 64]"},
      {"margin=x", "margin='x' is not an integer"},
      {"recipe=dynamic", "recipe='dynamic' is not one of delayed, current"},
      {"fast_accumulation=2", "fast_accumulation='2' must be 0 or 1"},
      {"calibrate=on", "calibrate='on' must be 0 or 1"},
      {"recipe=current,history=8", "history=8 does not apply to recipe=current"},
      {"recipe=current,algo=max", "algo=max does not apply to recipe=current"},
      {"recipe=current,calibrate=1", "calibrate=1 does not apply to recipe=current"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.options);
    MNT_Precision_GetScalingRecipe_Args a;
    MNT_ErrorCode code{};
    const std::string from_recipe = GetRecipe(c.options, &a, &code);
    EXPECT_NE(from_recipe.find(c.says), std::string::npos) << from_recipe;
    EXPECT_EQ(code, MNT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(from_recipe.find('\n'), std::string::npos);
    CScaler scaler(Fp8PluginApi(), "", c.options);
    EXPECT_EQ(scaler.error(), from_recipe);
  }
}

TEST(Fp8PluginTest, LossScalerAcceptsTheRecipesOptionsAndModeNoneOnly) {
  const char* every =
      "format=e4m3,history=16,algo=most_recent,margin=2,recipe=delayed,"
      "fast_accumulation=0,calibrate=0";
  for (const char* options : {"", "mode=none"}) {
    CScaler s(Fp8PluginApi(), options, every);
    ASSERT_EQ(s.error(), "") << options;
    auto u = s.Update(true);
    EXPECT_EQ(u.skip_step, 0);
    EXPECT_EQ(u.new_scale, 1.0f);
    EXPECT_EQ(s.Get().scale, 1.0f);
  }
  CScaler current(Fp8PluginApi(), "", "recipe=current");
  EXPECT_EQ(current.error(), "");
  // The loss scaler's own refusals come first, as for bf16.
  CScaler dyn(Fp8PluginApi(), "mode=dynamic", every);
  EXPECT_NE(dyn.error().find("fp8 loss scaler options: mode=dynamic refused: loss "
                             "scaling is only for fp16"),
            std::string::npos)
      << dyn.error();
  CScaler growth(Fp8PluginApi(), "growth_interval=10");
  EXPECT_NE(growth.error().find("fp8 has no loss scaling, so init_scale"),
            std::string::npos)
      << growth.error();
}

TEST(Fp8PluginTest, OtherPrecisionsRefuseFp8sOptions) {
  CScaler bf16(Bf16PluginApi(), "", "format=hybrid");
  EXPECT_NE(bf16.error().find("bf16 precision options: bf16 takes no precision options "
                              "(got 'format=hybrid')"),
            std::string::npos)
      << bf16.error();
  CScaler fp16(Fp16PluginApi(), "", "history=16");
  EXPECT_NE(fp16.error().find("fp16 precision options: unknown key 'history'"),
            std::string::npos)
      << fp16.error();
  // And fp8 refuses fp16's.
  CScaler fp8(Fp8PluginApi(), "", "min_scale=1");
  EXPECT_NE(fp8.error().find("fp8 precision options: unknown key 'min_scale'"),
            std::string::npos)
      << fp8.error();
}

TEST(Fp8PluginTest, ShortOrNullArgsAreErrors) {
  const MNT_Plugin_Api* p = Fp8PluginApi();
  MNT_Precision_GetScalingRecipe_Args a{};
  a.struct_size = MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE - 4;
  MNT_ErrorCode code{};
  EXPECT_NE(Call(p, p->precision->Precision_GetScalingRecipe, &a, &code)
                .find("MNT_Precision_GetScalingRecipe_Args: struct_size"),
            std::string::npos);
  EXPECT_EQ(code, MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(Call(p, p->precision->Precision_GetScalingRecipe,
                 static_cast<MNT_Precision_GetScalingRecipe_Args*>(nullptr))
                .find("args is NULL"),
            std::string::npos);
}

// The host's view (plugins/sdk/precision_client.h): fp8's answer as the
// plugin gives it, within the ABI's ranges; a plugin without the function
// answers NONE with zeros, whatever the options.
TEST(Fp8PluginTest, PrecisionClientReadsTheRecipe) {
  const sdk::PrecisionClient fp8(Fp8PluginApi());
  MNT_Precision_GetScalingRecipe_Args r;
  ASSERT_TRUE(fp8.GetScalingRecipe("history=16,margin=1", &r).ok());
  EXPECT_EQ(r.struct_size, MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE);
  EXPECT_EQ(r.precision_options, nullptr);
  EXPECT_EQ(r.recipe, MNT_SCALING_RECIPE_DELAYED);
  EXPECT_EQ(r.history_length, 16);
  EXPECT_EQ(r.margin, 1);
  EXPECT_TRUE(sdk::CheckScalingRecipe(r).ok());
  ASSERT_TRUE(fp8.GetScalingRecipe("", &r).ok());
  EXPECT_EQ(r.history_length, 1024);
  ASSERT_TRUE(fp8.GetScalingRecipe("recipe=current", &r).ok());
  EXPECT_TRUE(sdk::CheckScalingRecipe(r).ok());

  sdk::Status s = fp8.GetScalingRecipe("history=0", &r);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("history=0 must be in [1, 65536]"), std::string::npos)
      << s.message();

  for (auto getter : {Fp32PluginApi, Tf32PluginApi, Bf16PluginApi, Fp16PluginApi}) {
    const sdk::PrecisionClient other(getter());
    r.history_length = 5;
    ASSERT_TRUE(other.GetScalingRecipe("anything=at_all", &r).ok());
    EXPECT_EQ(r.struct_size, MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE);
    EXPECT_EQ(r.recipe, MNT_SCALING_RECIPE_NONE);
    EXPECT_EQ(r.forward_dtype, MNT_DTYPE_INVALID);
    EXPECT_EQ(r.history_length, 0);
    EXPECT_EQ(r.precision_options, nullptr);
    EXPECT_TRUE(sdk::CheckScalingRecipe(r).ok());
  }
}

}  // namespace
}  // namespace mnt::precision
