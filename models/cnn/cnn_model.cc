// The C entry points of MNT_Model_Api for the CNN: argument checks, then
// CnnNetwork.
#include "models/cnn/cnn_model.h"

#include <memory>

#include "models/cnn/cnn_network.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"

struct MNT_Model {
  std::unique_ptr<mnt::cnn::CnnNetwork> net;
};

namespace mnt::cnn {
namespace {

using sdk::Status;

Status CheckModel(const char* call, const MNT_Model* model) {
  if (model == nullptr || model->net == nullptr) {
    return sdk::InvalidArgument(sdk::Format("%s: model is NULL", call));
  }
  return Status::Ok();
}

MNT_Error* Create(MNT_Model_Create_Args* args) {
  return sdk::Guard("cnn Model_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_Create_Args, args);
    auto model = std::make_unique<MNT_Model>();
    MNT_RETURN_IF_ERROR(CnnNetwork::Create(*args, &model->net));
    args->model = model.release();
    return Status::Ok();
  });
}

MNT_Error* Destroy(MNT_Model_Destroy_Args* args) {
  return sdk::Guard("cnn Model_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_Destroy_Args, args);
    delete args->model;
    return Status::Ok();
  });
}

MNT_Error* GetParamCount(MNT_Model_GetParamCount_Args* args) {
  return sdk::Guard("cnn Model_GetParamCount", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_GetParamCount_Args, args);
    MNT_RETURN_IF_ERROR(CheckModel("cnn Model_GetParamCount", args->model));
    args->num_params =
        static_cast<int64_t>(args->model->net->param_specs().size());
    return Status::Ok();
  });
}

MNT_Error* GetParamSpec(MNT_Model_GetParamSpec_Args* args) {
  return sdk::Guard("cnn Model_GetParamSpec", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_GetParamSpec_Args, args);
    MNT_RETURN_IF_ERROR(CheckModel("cnn Model_GetParamSpec", args->model));
    const auto& specs = args->model->net->param_specs();
    if (args->index < 0 || args->index >= static_cast<int64_t>(specs.size())) {
      return sdk::InvalidArgument(sdk::Format(
          "cnn Model_GetParamSpec: index %lld is outside [0, %zu)",
          static_cast<long long>(args->index), specs.size()));
    }
    const ParamSpec& spec = specs[static_cast<size_t>(args->index)];
    args->name = spec.name.c_str();
    args->rank = static_cast<int32_t>(spec.dims.size());
    for (int i = 0; i < MNT_MAX_RANK; ++i) {
      args->dims[i] = i < args->rank ? spec.dims[i] : 0;
    }
    args->init = spec.init;
    args->init_scale = spec.init_scale;
    args->weight_decay = spec.weight_decay ? 1 : 0;
    return Status::Ok();
  });
}

MNT_Error* Forward(MNT_Model_Forward_Args* args) {
  return sdk::Guard("cnn Model_Forward", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_Forward_Args, args);
    MNT_RETURN_IF_ERROR(CheckModel("cnn Model_Forward", args->model));
    return args->model->net->Forward(args->params, args->num_params,
                                     args->inputs, args->targets,
                                     args->training != 0, args->loss_out,
                                     args->correct_out);
  });
}

MNT_Error* Backward(MNT_Model_Backward_Args* args) {
  return sdk::Guard("cnn Model_Backward", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_Backward_Args, args);
    MNT_RETURN_IF_ERROR(CheckModel("cnn Model_Backward", args->model));
    return args->model->net->Backward(args->params, args->num_params,
                                      args->grads, args->num_grads,
                                      args->loss_multiplier,
                                      args->accumulate != 0);
  });
}

const MNT_Model_Api kModelApi = {
    MNT_Model_Api_STRUCT_SIZE, nullptr,       &Create,  &Destroy,
    &GetParamCount,            &GetParamSpec, &Forward, &Backward,
};

}  // namespace

const MNT_Plugin_Api* CnnPluginApi() {
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_MODEL, "cnn",
      "small ResNet image classifier (depth=2, width=16, bn_momentum=0.1)",
      nullptr, nullptr, &kModelApi, nullptr);
  return &api;
}

}  // namespace mnt::cnn
