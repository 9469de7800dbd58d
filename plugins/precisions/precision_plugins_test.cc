// Exercises the four precision plugins through their C function tables, as
// the trainer sees them.
#include "plugins/precisions/precision_plugins.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

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
          (const void*)a->LossScaler_Update}) {
      EXPECT_NE(fn, nullptr) << e.name;
    }
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
    const MNT_DType operand = e.matmul == MNT_COMPUTE_BF16   ? MNT_DTYPE_BF16
                              : e.matmul == MNT_COMPUTE_F16 ? MNT_DTYPE_F16
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
  CScaler(const MNT_Plugin_Api* plugin, const char* options) : p_(plugin) {
    MNT_LossScaler_Create_Args a{};
    a.struct_size = MNT_LossScaler_Create_Args_STRUCT_SIZE;
    a.options = options;
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
  for (auto getter : {Fp32PluginApi, Tf32PluginApi, Bf16PluginApi}) {
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

}  // namespace
}  // namespace mnt::precision
