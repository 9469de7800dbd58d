// Mantissa plugin SDK: one model instance owned by the host (the trainer,
// conformance tools). Model_Create on the way in, Model_Destroy on the way
// out, and typed calls for the parameter specs, forward and backward.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_CLIENT_H_
#define MANTISSA_PLUGINS_SDK_MODEL_CLIENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plugins/abi/mnt_common.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// What Model_Create needs besides the plugin. struct_size of data_spec and
// precision is set by ModelClient::Create.
struct ModelSetup {
  std::string options;                // --model_options; "" for defaults
  const BackendClient* backend = nullptr;  // must outlive the model
  MNT_DataSpec data_spec{};
  MNT_ModelPrecision precision{};
  int64_t max_batch_size = 0;
  // ABI 1.10: FP8 GEMMs (MNT_Model_Create_Args' fp8_* fields); forward
  // INVALID for none. Given only to a model offering
  // MNT_CAPABILITY_MODEL_FP8_GEMMS (Create refuses otherwise).
  struct Fp8 {
    MNT_DType forward = MNT_DTYPE_INVALID;
    MNT_DType backward = MNT_DTYPE_INVALID;
    bool fast_accumulation_forward = false;
    bool current_scaling = false;
    int32_t margin = 0;
  } fp8;
};

// A model's FP8 scale tensors for Forward and Backward (F32 [3, S] each,
// docs/abi.md "FP8 scaling slots"); borrowed.
struct Fp8Tensors {
  const MNT_Tensor* scales = nullptr;
  const MNT_Tensor* scale_invs = nullptr;
  const MNT_Tensor* amax = nullptr;
};

// One parameter as Model_GetParamSpec describes it. `rank` is as the plugin
// wrote it; `dims` holds the first min(rank, MNT_MAX_RANK) dims.
struct ParamSpec {
  const char* name = nullptr;  // owned by the model; NULL if it gave none
  int32_t rank = 0;
  std::vector<int64_t> dims;
  MNT_ParamInit init = MNT_PARAM_INIT_INVALID;
  float init_scale = 0;
  bool weight_decay = false;
  // ABI 1.15: leading dims that stack copies of one parameter; 0 from an
  // older model (it never wrote the field).
  int32_t stacked_dims = 0;
  // ABI 1.16: what the parameter is to the model; OTHER from an older
  // model (it never wrote the field).
  MNT_ParamRole role = MNT_PARAM_ROLE_OTHER;
};

// Owns one MNT_Model. Movable, not copyable; empty after a move. Destroy it
// before the backend instance it runs on.
class ModelClient {
 public:
  ModelClient() = default;
  ModelClient(ModelClient&& o) noexcept { *this = std::move(o); }
  ModelClient& operator=(ModelClient&& o) noexcept {
    if (this != &o) {
      Reset();
      plugin_ = std::exchange(o.plugin_, nullptr);
      model_ = std::exchange(o.model_, nullptr);
      fp8_ = std::exchange(o.fp8_, Fp8Tensors{});
      gradient_ready_ = std::exchange(o.gradient_ready_, nullptr);
      gradient_ready_user_data_ = std::exchange(o.gradient_ready_user_data_, nullptr);
    }
    return *this;
  }
  ModelClient(const ModelClient&) = delete;
  ModelClient& operator=(const ModelClient&) = delete;
  ~ModelClient() { Reset(); }

  // A plugin that answers OK without a model is an error.
  static Status Create(const MNT_Plugin_Api* plugin, const ModelSetup& setup,
                       ModelClient* out) {
    MNT_Model_Create_Args a{};
    a.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
    a.options = setup.options.c_str();
    a.backend_plugin = setup.backend->plugin();
    a.backend = setup.backend->backend();
    a.data_spec = setup.data_spec;
    a.data_spec.struct_size = MNT_DataSpec_STRUCT_SIZE;
    a.precision = setup.precision;
    a.precision.struct_size = MNT_ModelPrecision_STRUCT_SIZE;
    a.max_batch_size = setup.max_batch_size;
    if (setup.fp8.forward != MNT_DTYPE_INVALID) {
      if (!HasCapability(plugin, MNT_CAPABILITY_MODEL_FP8_GEMMS)) {
        return FailedPrecondition(Format(
            "model plugin '%s' (ABI %d.%d) cannot run its GEMMs in FP8 (that needs "
            "capability MODEL_FP8_GEMMS, ABI 1.10)",
            plugin->name, plugin->abi_version.major_version,
            plugin->abi_version.minor_version));
      }
      a.fp8_forward_dtype = setup.fp8.forward;
      a.fp8_backward_dtype = setup.fp8.backward;
      a.fp8_fast_accumulation_forward = setup.fp8.fast_accumulation_forward ? 1 : 0;
      a.fp8_current_scaling = setup.fp8.current_scaling ? 1 : 0;
      a.fp8_margin = setup.fp8.margin;
    }
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin, plugin->model->Model_Create(&a)));
    if (a.model == nullptr) return Internal("Model_Create gave no model");
    ModelClient c;
    c.plugin_ = plugin;
    c.model_ = a.model;
    *out = std::move(c);
    return Status::Ok();
  }

  bool empty() const { return model_ == nullptr; }

  // The FP8 tensors every later Forward and Backward hands the model (a
  // model created with FP8 GEMMs needs them); borrowed, they must outlive
  // those calls. Default: none.
  void UseFp8Tensors(const Fp8Tensors& tensors) { fp8_ = tensors; }

  // ABI 1.11: the callback every later Backward hands a model that
  // HandsOverGradients() (MNT_Model_Backward_Args.gradient_ready, see
  // MNT_GradientReadyFn): called on the host during Backward as each
  // gradient region's last write has been issued on the backend stream.
  // `user_data` is passed through; both must stay valid for those calls.
  // Default: none (NULL). A model without the capability never calls it.
  void UseGradientReady(MNT_GradientReadyFn* fn, void* user_data) {
    gradient_ready_ = fn;
    gradient_ready_user_data_ = user_data;
  }

  // Whether Backward hands over finished gradients through the callback
  // of UseGradientReady (the model offers
  // MNT_CAPABILITY_MODEL_GRADIENT_READY, ABI 1.11).
  bool HandsOverGradients() const {
    return HasCapability(plugin_, MNT_CAPABILITY_MODEL_GRADIENT_READY);
  }
  // Whether Backward takes a NULL-data gradient for a frozen parameter
  // (MNT_CAPABILITY_MODEL_FROZEN_PARAMS, ABI 1.13).
  bool TakesFrozenParams() const {
    return HasCapability(plugin_, MNT_CAPABILITY_MODEL_FROZEN_PARAMS);
  }
  const MNT_Plugin_Api* plugin() const { return plugin_; }
  MNT_Model* get() const { return model_; }  // borrowed, for raw ABI calls

  Status ParamCount(int64_t* count) const {
    MNT_Model_GetParamCount_Args a{};
    a.struct_size = MNT_Model_GetParamCount_Args_STRUCT_SIZE;
    a.model = model_;
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin_, plugin_->model->Model_GetParamCount(&a)));
    *count = a.num_params;
    return Status::Ok();
  }

  Status GetParamSpec(int64_t index, ParamSpec* spec) const {
    MNT_Model_GetParamSpec_Args a{};
    a.struct_size = MNT_Model_GetParamSpec_Args_STRUCT_SIZE;
    a.model = model_;
    a.index = index;
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin_, plugin_->model->Model_GetParamSpec(&a)));
    spec->name = a.name;
    spec->rank = a.rank;
    spec->dims.clear();
    for (int32_t d = 0; d < a.rank && d < MNT_MAX_RANK; ++d) {
      spec->dims.push_back(a.dims[d]);
    }
    // Read as int32: a value this SDK does not know is refused, never loaded
    // as MNT_ParamInit (abi_enum.h).
    const std::optional<MNT_ParamInit> init = ReadEnum(a.init);
    if (!init) {
      return InvalidArgument(Format("Model_GetParamSpec(%lld): init %d is not an "
                                    "MNT_ParamInit value",
                                    static_cast<long long>(index), RawEnum(a.init)));
    }
    spec->init = *init;
    spec->init_scale = a.init_scale;
    spec->weight_decay = a.weight_decay != 0;
    spec->stacked_dims = a.stacked_dims;
    if (a.stacked_dims < 0 || (a.stacked_dims > 0 && a.stacked_dims >= a.rank)) {
      return InvalidArgument(Format("Model_GetParamSpec(%lld): stacked_dims %d is outside "
                                    "[0, rank %d): each stacked copy keeps at least one dim",
                                    static_cast<long long>(index), a.stacked_dims, a.rank));
    }
    const std::optional<MNT_ParamRole> role = ReadEnum(a.role);
    if (!role) {
      return InvalidArgument(Format("Model_GetParamSpec(%lld): role %d is not an "
                                    "MNT_ParamRole value",
                                    static_cast<long long>(index), RawEnum(a.role)));
    }
    spec->role = *role;
    return Status::Ok();
  }

  // The mean loss over the batch into `loss_out` (F32 [1]) and, when
  // `correct_out` is given, the count of correct predictions. `training`
  // keeps what Backward needs.
  Status Forward(const std::vector<MNT_Tensor>& params, const MNT_Tensor& inputs,
                 const MNT_Tensor& targets, bool training,
                 const MNT_Tensor& loss_out,
                 const MNT_Tensor* correct_out = nullptr) const {
    MNT_Model_Forward_Args a{};
    a.struct_size = MNT_Model_Forward_Args_STRUCT_SIZE;
    a.model = model_;
    a.params = params.data();
    a.num_params = params.size();
    a.inputs = &inputs;
    a.targets = &targets;
    a.training = training ? 1 : 0;
    a.loss_out = &loss_out;
    a.correct_out = correct_out;
    a.fp8_scales = fp8_.scales;
    a.fp8_scale_invs = fp8_.scale_invs;
    a.fp8_amax = fp8_.amax;
    return StatusFromPluginError(plugin_, plugin_->model->Model_Forward(&a));
  }

  // Whether Backward can take the loss multiplier as a device tensor (the
  // model offers MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER, ABI 1.6; one
  // that does not would not see it).
  bool TakesDeviceLossMultiplier() const {
    return HasCapability(plugin_, MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER);
  }

  // Gradients of the last training Forward's loss times `loss_multiplier`,
  // written to `grads` or, with `accumulate`, added to them.
  Status Backward(const std::vector<MNT_Tensor>& params,
                  const std::vector<MNT_Tensor>& grads, float loss_multiplier,
                  bool accumulate) const {
    return Backward(params, grads, loss_multiplier, nullptr, accumulate);
  }

  // The same with the multiplier as an F32 [1] device tensor (ABI 1.6);
  // NULL: `loss_multiplier`. A model without the capability (one older than
  // 1.6) is refused a device multiplier (FailedPrecondition): ask
  // TakesDeviceLossMultiplier() first. The struct is always the one this
  // host knows, as docs/abi.md section 1 says (a model built for an older
  // minor reads the fields it knows, and its MNT_CHECK_ARGS, compiled with
  // today's headers, finds them all); what the model did not ask for is
  // absent: loss_multiplier_device NULL, the FP8 tensors NULL unless it runs
  // FP8 GEMMs, gradient_ready NULL unless it HandsOverGradients().
  Status Backward(const std::vector<MNT_Tensor>& params,
                  const std::vector<MNT_Tensor>& grads, float loss_multiplier,
                  const MNT_Tensor* loss_multiplier_device, bool accumulate) const {
    MNT_Model_Backward_Args a{};
    a.struct_size = MNT_Model_Backward_Args_STRUCT_SIZE;
    if (loss_multiplier_device != nullptr && !TakesDeviceLossMultiplier()) {
      return FailedPrecondition(Format(
          "model plugin '%s' (ABI %d.%d) takes the loss multiplier as a host float "
          "only (a device multiplier needs capability MODEL_DEVICE_LOSS_MULTIPLIER, "
          "ABI 1.6)",
          plugin_->name, plugin_->abi_version.major_version,
          plugin_->abi_version.minor_version));
    }
    a.loss_multiplier_device = loss_multiplier_device;
    a.model = model_;
    a.params = params.data();
    a.num_params = params.size();
    a.grads = grads.data();
    a.num_grads = grads.size();
    a.loss_multiplier = loss_multiplier;
    a.accumulate = accumulate ? 1 : 0;
    a.fp8_scales = fp8_.scales;
    a.fp8_scale_invs = fp8_.scale_invs;
    a.fp8_amax = fp8_.amax;
    if (HandsOverGradients()) {
      a.gradient_ready = gradient_ready_;
      a.gradient_ready_user_data = gradient_ready_user_data_;
    }
    return StatusFromPluginError(plugin_, plugin_->model->Model_Backward(&a));
  }

  // Destroys the model now (also done by the destructor).
  void Reset() {
    if (model_ == nullptr) return;
    MNT_Model_Destroy_Args a{};
    a.struct_size = MNT_Model_Destroy_Args_STRUCT_SIZE;
    a.model = model_;
    // Destructors cannot report; a failing destroy has nothing left to save.
    (void)StatusFromPluginError(plugin_, plugin_->model->Model_Destroy(&a));
    model_ = nullptr;
  }

 private:
  const MNT_Plugin_Api* plugin_ = nullptr;
  MNT_Model* model_ = nullptr;
  Fp8Tensors fp8_;
  MNT_GradientReadyFn* gradient_ready_ = nullptr;
  void* gradient_ready_user_data_ = nullptr;
};

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_MODEL_CLIENT_H_
