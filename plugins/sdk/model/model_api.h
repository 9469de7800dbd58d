// The C entry points of MNT_Model_Api, written once for a model built on
// the SDK's model layer: argument checks, the FP8 pass around each call,
// then the model's Network class.
//
// A Network provides
//   static sdk::Status Create(const MNT_Model_Create_Args&, std::unique_ptr<Network>*);
//   const std::vector<ParamSpec>& param_specs() const;  // param_spec.h
//   sdk::Status Forward(const ForwardCall&);              // model_io.h
//   sdk::Status Backward(const BackwardCall&);
//   const ModelSetup& setup() const;                      // create_args.h
//   static constexpr int32_t kDataKinds[] = {MNT_DATA_KIND_..., ...};
// (kDataKinds: the kinds of data it trains on, ABI 1.12) and a plugin
// exposes ModelApi<Network, kName>::Get() and ::Extensions() in its
// MNT_Plugin_Api:
//
//   constexpr char kName[] = "resmlp";
//   using Api = mnt::models::ModelApi<ResMlp, kName>;
//   const MNT_Plugin_Api* ResMlpPluginApi() {
//     static const MNT_Plugin_Api api = mnt::sdk::MakePluginApi(
//         MNT_PLUGIN_KIND_MODEL, kName, "a residual MLP", nullptr, nullptr,
//         Api::Get(), nullptr, Api::Extensions());
//     return &api;
//   }
#ifndef MANTISSA_PLUGINS_SDK_MODEL_MODEL_API_H_
#define MANTISSA_PLUGINS_SDK_MODEL_MODEL_API_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/model/create_args.h"
#include "plugins/sdk/model/lora.h"
#include "plugins/sdk/model/model_io.h"
#include "plugins/sdk/status.h"

// The opaque model handle, defined once for every model built on this layer
// so that several models can be linked into one binary (tests, tools).
struct MNT_Model {
  virtual ~MNT_Model() = default;
};

namespace mnt::models {

template <typename Network>
struct NetworkModel : MNT_Model {
  std::unique_ptr<Network> net;
  // With LoRA adapters: the network's parameters, then the adapters'.
  std::vector<ParamSpec> specs_with_adapters;
};

template <typename Network, const char* kName>
class ModelApi {
 public:
  static const MNT_Model_Api* Get() {
    static const MNT_Model_Api api = sdk::MakeModelApi(&Create, &Destroy, &GetParamCount,
                                                       &GetParamSpec, &Forward, &Backward);
    return &api;
  }

  // The plugin's extension chain for MNT_Plugin_Api (sdk::MakePluginApi's
  // last argument): the capabilities every model on this layer offers,
  // here in Backward (ABI 1.6's loss_multiplier_device), FP8 GEMMs (1.10:
  // every Linear of the facade) and the gradient hand-over (1.11: the
  // Network's Backward calls BackwardCall::Ready for each gradient region
  // after its last write), frozen parameters (1.13: a gradient with NULL
  // data is skipped by every facade call that writes it), then the kinds of
  // data it takes (1.12, the Network's kDataKinds), and LoRA adapters on its
  // Linear layers (1.13, lora.h: the lora_* option keys).
  static MNT_Extension_Base* Extensions() {
    static MNT_ModelData_Extension data = sdk::MakeModelDataExtension(Network::kDataKinds);
    static constexpr int32_t kCapabilities[] = {MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER,
                                                MNT_CAPABILITY_MODEL_FP8_GEMMS,
                                                MNT_CAPABILITY_MODEL_GRADIENT_READY,
                                                MNT_CAPABILITY_MODEL_FROZEN_PARAMS,
                                                MNT_CAPABILITY_MODEL_LORA};
    static MNT_Capabilities_Extension capabilities =
        sdk::MakeCapabilitiesExtension(kCapabilities, &data.header.base);
    return &capabilities.header.base;
  }

  // The network behind a handle this plugin created (for tools that link the
  // plugin statically); NULL for NULL.
  static Network* NetworkOf(MNT_Model* model) {
    return model == nullptr ? nullptr : static_cast<NetworkModel<Network>*>(model)->net.get();
  }

 private:
  using Status = sdk::Status;

  // A Forward's or Backward's FP8 tensors handed to the op facade for the
  // call (models created with FP8 GEMMs only).
  class Fp8Pass {
   public:
    explicit Fp8Pass(Fp8Gemms* gemms) : gemms_(gemms) {}
    ~Fp8Pass() {
      if (gemms_ != nullptr) gemms_->EndPass();
    }
    bool active() const { return gemms_ != nullptr; }
    // args: the call's struct, NULL when it is too short to hold them.
    template <typename Args>
    Status Begin(const std::string& call, Fp8Gemms::Pass pass, const MNT_Tensor* params,
                 size_t num_params, const Args* args) {
      return gemms_->BeginPass(call, pass, params, num_params,
                               args ? args->fp8_scales : nullptr,
                               args ? args->fp8_scale_invs : nullptr,
                               args ? args->fp8_amax : nullptr);
    }

   private:
    Fp8Gemms* gemms_;
  };

  static std::string Call(const char* entry) { return std::string(kName) + " " + entry; }

  // Ends a pass of the adapters (if any) when a call returns.
  class LoraPass {
   public:
    explicit LoraPass(LoraAdapters* lora) : lora_(lora) {}
    ~LoraPass() {
      if (lora_ != nullptr) lora_->EndPass();
    }
    LoraPass(const LoraPass&) = delete;
    LoraPass& operator=(const LoraPass&) = delete;

   private:
    LoraAdapters* lora_;
  };

  static const std::vector<ParamSpec>& SpecsOf(MNT_Model* model) {
    const auto* m = static_cast<NetworkModel<Network>*>(model);
    return m->specs_with_adapters.empty() ? m->net->param_specs() : m->specs_with_adapters;
  }

  // The network's parameters among a call's (the adapters follow them).
  static size_t NetworkCount(const Network& net, size_t count) {
    const LoraAdapters* lora = net.setup().ops.lora();
    return lora == nullptr ? count : std::min(count, lora->num_base());
  }

  // LoRA (lora.h): adapters on the network's matrices that lora_targets
  // names, after its own parameters; the Linear calls of the facade add them.
  static Status AddLora(const LoraConfig& config, NetworkModel<Network>* model) {
    const Network& net = *model->net;
    if (net.setup().ops.fp8() != nullptr) {
      return sdk::Unimplemented(sdk::Format(
          "%s: LoRA adapters with FP8 GEMMs are not implemented; train the adapters in bf16",
          kName));
    }
    std::unique_ptr<LoraAdapters> lora;
    MNT_RETURN_IF_ERROR(
        LoraAdapters::Create(kName, config, net.param_specs(), net.setup().client, &lora));
    model->specs_with_adapters = net.param_specs();
    for (const ParamSpec& spec : lora->specs()) model->specs_with_adapters.push_back(spec);
    net.setup().ops.UseLora(std::move(lora));
    return Status::Ok();
  }

  static Status CheckModel(const std::string& call, MNT_Model* model) {
    if (NetworkOf(model) == nullptr) {
      return sdk::InvalidArgument(sdk::Format("%s: model is NULL", call.c_str()));
    }
    return Status::Ok();
  }

  static MNT_Error* Create(MNT_Model_Create_Args* args) {
    const std::string call = Call("Model_Create");
    return sdk::Guard(call.c_str(), [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Model_Create_Args, args);
      // The network parses its own options; the lora_* keys are this layer's.
      LoraConfig lora;
      std::string network_options;
      MNT_RETURN_IF_ERROR(TakeLoraOptions(kName, args->options, &lora, &network_options));
      MNT_Model_Create_Args network_args{};
      std::memcpy(&network_args, args, std::min(args->struct_size, sizeof(network_args)));
      network_args.options = network_options.c_str();
      auto model = std::make_unique<NetworkModel<Network>>();
      MNT_RETURN_IF_ERROR(Network::Create(network_args, &model->net));
      if (lora.enabled()) MNT_RETURN_IF_ERROR(AddLora(lora, model.get()));
      args->model = model.release();
      return Status::Ok();
    });
  }

  static MNT_Error* Destroy(MNT_Model_Destroy_Args* args) {
    const std::string call = Call("Model_Destroy");
    return sdk::Guard(call.c_str(), [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Model_Destroy_Args, args);
      delete args->model;
      return Status::Ok();
    });
  }

  static MNT_Error* GetParamCount(MNT_Model_GetParamCount_Args* args) {
    const std::string call = Call("Model_GetParamCount");
    return sdk::Guard(call.c_str(), [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Model_GetParamCount_Args, args);
      MNT_RETURN_IF_ERROR(CheckModel(call, args->model));
      args->num_params = static_cast<int64_t>(SpecsOf(args->model).size());
      return Status::Ok();
    });
  }

  static MNT_Error* GetParamSpec(MNT_Model_GetParamSpec_Args* args) {
    const std::string call = Call("Model_GetParamSpec");
    return sdk::Guard(call.c_str(), [&]() -> Status {
      // A 1.0-1.14 host's struct ends at weight_decay (a source built with
      // -DMNT_ABI_SOURCE_MINOR below 1.15 is loaded by such hosts).
      if (args == nullptr) {
        return sdk::InvalidArgument("MNT_Model_GetParamSpec_Args: args is NULL");
      }
      MNT_RETURN_IF_ERROR(sdk::CheckStructSize("MNT_Model_GetParamSpec_Args",
                                               MNT_Model_GetParamSpec_Args_STRUCT_SIZE_1_14,
                                               args->struct_size));
      MNT_RETURN_IF_ERROR(CheckModel(call, args->model));
      const auto& specs = SpecsOf(args->model);
      if (args->index < 0 || args->index >= static_cast<int64_t>(specs.size())) {
        return sdk::InvalidArgument(sdk::Format(
            "%s: index %lld is outside [0, %zu)", call.c_str(),
            static_cast<long long>(args->index), specs.size()));
      }
      const auto& spec = specs[static_cast<size_t>(args->index)];
      args->name = spec.name.c_str();
      args->rank = static_cast<int32_t>(spec.dims.size());
      for (int i = 0; i < MNT_MAX_RANK; ++i) {
        args->dims[i] = i < args->rank ? spec.dims[i] : 0;
      }
      args->init = spec.init;
      args->init_scale = spec.init_scale;
      args->weight_decay = spec.weight_decay ? 1 : 0;
      // Where the host's struct has them: 1.15's stacked_dims, 1.16's role.
      if (MNT_HAS_FIELD(args, MNT_Model_GetParamSpec_Args, stacked_dims)) {
        args->stacked_dims = spec.stacked_dims;
      }
      if (MNT_HAS_FIELD(args, MNT_Model_GetParamSpec_Args, role)) args->role = spec.role;
      return Status::Ok();
    });
  }

  static MNT_Error* Forward(MNT_Model_Forward_Args* args) {
    const std::string name = Call("Model_Forward");
    return sdk::Guard(name.c_str(), [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Model_Forward_Args, args);
      MNT_RETURN_IF_ERROR(CheckModel(name, args->model));
      Network* net = NetworkOf(args->model);
      LoraAdapters* lora = net->setup().ops.lora();
      LoraPass lora_pass(lora);
      if (lora != nullptr) {
        MNT_RETURN_IF_ERROR(lora->BeginPass(std::string(kName) + " Forward", args->params,
                                            args->num_params, nullptr, 0));
      }
      ForwardCall call;
      call.params = args->params;
      call.num_params = NetworkCount(*net, args->num_params);
      call.inputs = args->inputs;
      call.targets = args->targets;
      call.training = args->training != 0;
      call.loss_out = args->loss_out;
      call.correct_out = args->correct_out;
      Fp8Pass fp8(net->setup().ops.fp8());
      if (fp8.active()) {
        MNT_RETURN_IF_ERROR(fp8.Begin(
            std::string(kName) + " Forward",
            args->training != 0 ? Fp8Gemms::Pass::kTrainingForward : Fp8Gemms::Pass::kEvalForward,
            args->params, call.num_params,
            MNT_HAS_FIELD(args, MNT_Model_Forward_Args, fp8_amax) ? args : nullptr));
      }
      MNT_RETURN_IF_ERROR(net->Forward(call));
      if (lora != nullptr && call.training) return lora->CheckEveryTargetUsed(kName);
      return Status::Ok();
    });
  }

  static MNT_Error* Backward(MNT_Model_Backward_Args* args) {
    const std::string name = Call("Model_Backward");
    return sdk::Guard(name.c_str(), [&]() -> Status {
      // A 1.0-1.5 host passes no device loss multiplier (the shorter struct).
      if (args == nullptr) return sdk::InvalidArgument("MNT_Model_Backward_Args: args is NULL");
      MNT_RETURN_IF_ERROR(sdk::CheckStructSize("MNT_Model_Backward_Args",
                                               MNT_Model_Backward_Args_STRUCT_SIZE_1_5,
                                               args->struct_size));
      MNT_RETURN_IF_ERROR(CheckModel(name, args->model));
      Network* net = NetworkOf(args->model);
      LoraAdapters* lora = net->setup().ops.lora();
      LoraPass lora_pass(lora);
      if (lora != nullptr) {
        MNT_RETURN_IF_ERROR(lora->BeginPass(std::string(kName) + " Backward", args->params,
                                            args->num_params, args->grads, args->num_grads));
      }
      BackwardCall call;
      call.params = args->params;
      call.num_params = NetworkCount(*net, args->num_params);
      call.grads = args->grads;
      call.num_grads = NetworkCount(*net, args->num_grads);
      call.loss_multiplier = args->loss_multiplier;
      call.accumulate = args->accumulate != 0;
      if (MNT_HAS_FIELD(args, MNT_Model_Backward_Args, loss_multiplier_device)) {
        call.loss_multiplier_device = args->loss_multiplier_device;
      }
      // A 1.10 or older host's struct ends before the callback.
      if (MNT_HAS_FIELD(args, MNT_Model_Backward_Args, gradient_ready_user_data)) {
        call.gradient_ready = args->gradient_ready;
        call.gradient_ready_user_data = args->gradient_ready_user_data;
      }
      Fp8Pass fp8(net->setup().ops.fp8());
      if (fp8.active()) {
        MNT_RETURN_IF_ERROR(fp8.Begin(
            std::string(kName) + " Backward", Fp8Gemms::Pass::kBackward, args->params,
            call.num_params,
            MNT_HAS_FIELD(args, MNT_Model_Backward_Args, fp8_amax) ? args : nullptr));
      }
      MNT_RETURN_IF_ERROR(net->Backward(call));
      // The adapters' gradients were last written by the network's last
      // Linear backward through them: all are final now.
      if (lora != nullptr) {
        for (size_t i = lora->num_base(); i < static_cast<size_t>(args->num_grads); ++i) {
          call.ReadyWhole(static_cast<int64_t>(i));
        }
      }
      return Status::Ok();
    });
  }
};

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_MODEL_API_H_
