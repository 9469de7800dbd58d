// An out-of-tree Mantissa model plugin: "linear", multinomial logistic
// (softmax) regression, logits = x W + b, trained with cross-entropy.
//
// Options: "init_scale=0.01" (std of W's normal init), "weight_decay=1"
// (0 exempts W from the optimizer's weight decay; b is never decayed).
//
// Like every model it never touches memory itself: it allocates its
// activations and launches kernels through the backend it is handed, in the
// dtypes the trainer's precision plugin chose, so it runs in fp32, tf32,
// bf16 and fp16 on any backend. Built against the SDK bundle only:
//   g++ -std=c++17 -O2 -shared -fPIC $(pkg-config --cflags mantissa)
//       linear_model.cc -o mnt_model_linear.so
//       $(pkg-config --variable=plugin_ldflags mantissa)
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/options.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace linear_model {

using mnt::sdk::Format;
using mnt::sdk::InvalidArgument;
using mnt::sdk::Status;

struct ParamSpec {
  std::string name;
  std::vector<int64_t> dims;
  MNT_ParamInit init;
  float init_scale;
  bool weight_decay;
};

class LinearModel {
 public:
  Status Init(const MNT_Model_Create_Args& args);
  Status Forward(const MNT_Model_Forward_Args& args);
  Status Backward(const MNT_Model_Backward_Args& args);
  const std::vector<ParamSpec>& specs() const { return specs_; }

 private:
  Status CheckTensors(const char* call, const char* what,
                      const MNT_Tensor* t, size_t n, MNT_DType dtype) const;
  MNT_Tensor View(const mnt::sdk::DeviceBuffer& b, MNT_DType dtype,
                  int64_t rows, int64_t cols) const {
    return mnt::sdk::MakeTensor(b.data(), dtype, {rows, cols});
  }

  mnt::sdk::BackendClient client_;
  MNT_ModelPrecision precision_{};
  int64_t features_ = 0, classes_ = 0, max_batch_ = 0, saved_batch_ = 0;
  std::vector<ParamSpec> specs_;
  // Activations: the input in the activation dtype, logits, dlogits.
  mnt::sdk::DeviceBuffer x_, logits_, dlogits_;
  // Workspace: per-example losses (f32) and the targets Backward needs.
  mnt::sdk::DeviceBuffer losses_, targets_;
};

Status LinearModel::Init(const MNT_Model_Create_Args& args) {
  mnt::sdk::Options o;
  MNT_RETURN_IF_ERROR(
      mnt::sdk::Options::Parse(args.options, "linear options", &o));
  MNT_RETURN_IF_ERROR(o.CheckKnown({"init_scale", "weight_decay"}));
  double init_scale = 0.01;
  long long weight_decay = 1;
  MNT_RETURN_IF_ERROR(o.GetDouble("init_scale", &init_scale));
  MNT_RETURN_IF_ERROR(o.GetInt("weight_decay", &weight_decay));
  if (!(init_scale >= 0 && init_scale <= 10)) {
    return InvalidArgument(
        Format("linear options: init_scale=%g is outside [0, 10]", init_scale));
  }
  if (weight_decay != 0 && weight_decay != 1) {
    return InvalidArgument(Format(
        "linear options: weight_decay=%lld is not 0 or 1", weight_decay));
  }

  if (args.backend_plugin == nullptr ||
      args.backend_plugin->backend == nullptr || args.backend == nullptr) {
    return InvalidArgument("linear: a backend plugin and instance are required");
  }
  client_ = mnt::sdk::BackendClient(args.backend_plugin, args.backend);

  const MNT_DataSpec& data = args.data_spec;
  if (data.struct_size < MNT_DataSpec_STRUCT_SIZE ||
      data.input_dtype != MNT_DTYPE_F32 || data.input_rank < 1 ||
      data.input_rank >= MNT_MAX_RANK || data.targets_per_example != 1 ||
      data.num_classes < 2) {
    return InvalidArgument(
        "linear: needs f32 features, one target per example and at least 2 "
        "classes");
  }
  features_ = 1;
  for (int i = 0; i < data.input_rank; ++i) {
    if (data.input_dims[i] < 1 || data.input_dims[i] > (1 << 20)) {
      return InvalidArgument(Format("linear: input_dims[%d]=%lld is invalid",
                                    i, (long long)data.input_dims[i]));
    }
    features_ *= data.input_dims[i];
  }
  classes_ = data.num_classes;
  precision_ = args.precision;
  if (precision_.struct_size < MNT_ModelPrecision_STRUCT_SIZE ||
      !mnt::sdk::IsFloatStorage(precision_.weight_dtype) ||
      !mnt::sdk::IsFloatStorage(precision_.gradient_dtype) ||
      !mnt::sdk::IsFloatStorage(precision_.activation_dtype)) {
    return InvalidArgument("linear: precision must use f32, f16 or bf16");
  }
  if (args.max_batch_size < 1 || args.max_batch_size > (1 << 24)) {
    return InvalidArgument(Format("linear: max_batch_size=%lld is invalid",
                                  (long long)args.max_batch_size));
  }
  max_batch_ = args.max_batch_size;

  specs_ = {{"weight", {features_, classes_}, MNT_PARAM_INIT_NORMAL,
             static_cast<float>(init_scale), weight_decay == 1},
            {"bias", {classes_}, MNT_PARAM_INIT_ZEROS, 0.0f, false}};

  const size_t act = mnt::sdk::DTypeSize(precision_.activation_dtype);
  const size_t rows = static_cast<size_t>(max_batch_);
  MNT_RETURN_IF_ERROR(client_.Allocate(rows * features_ * act,
                                       MNT_MEMORY_ACTIVATIONS, &x_));
  MNT_RETURN_IF_ERROR(client_.Allocate(rows * classes_ * act,
                                       MNT_MEMORY_ACTIVATIONS, &logits_));
  MNT_RETURN_IF_ERROR(client_.Allocate(rows * classes_ * act,
                                       MNT_MEMORY_ACTIVATIONS, &dlogits_));
  MNT_RETURN_IF_ERROR(
      client_.Allocate(rows * 4, MNT_MEMORY_WORKSPACE, &losses_));
  MNT_RETURN_IF_ERROR(
      client_.Allocate(rows * 4, MNT_MEMORY_WORKSPACE, &targets_));
  return Status::Ok();
}

Status LinearModel::CheckTensors(const char* call, const char* what,
                                 const MNT_Tensor* t, size_t n,
                                 MNT_DType dtype) const {
  if (t == nullptr || n != specs_.size()) {
    return InvalidArgument(Format("linear %s: expected %zu %s, got %zu", call,
                                  specs_.size(), what, t ? n : 0));
  }
  for (size_t i = 0; i < n; ++i) {
    bool same = t[i].data != nullptr && t[i].dtype == dtype &&
                t[i].rank == static_cast<int32_t>(specs_[i].dims.size());
    for (int d = 0; same && d < t[i].rank; ++d) {
      same = t[i].dims[d] == specs_[i].dims[d];
    }
    if (!same) {
      return InvalidArgument(Format("linear %s: %s[%zu] (%s) is %s, expected "
                                    "%s with the spec's shape",
                                    call, what, i, specs_[i].name.c_str(),
                                    mnt::sdk::Describe(t[i]).c_str(),
                                    mnt::sdk::DTypeName(dtype)));
    }
  }
  return Status::Ok();
}

Status LinearModel::Forward(const MNT_Model_Forward_Args& a) {
  saved_batch_ = 0;
  MNT_RETURN_IF_ERROR(CheckTensors("Forward", "params", a.params, a.num_params,
                                   precision_.weight_dtype));
  if (a.inputs == nullptr || a.targets == nullptr || a.loss_out == nullptr ||
      a.inputs->data == nullptr || a.targets->data == nullptr ||
      a.loss_out->data == nullptr) {
    return InvalidArgument("linear Forward: inputs, targets and loss_out are "
                           "required");
  }
  const int64_t batch = a.inputs->rank >= 1 ? a.inputs->dims[0] : 0;
  if (batch < 1 || batch > max_batch_ || a.inputs->dtype != MNT_DTYPE_F32 ||
      mnt::sdk::NumElements(*a.inputs) != batch * features_ ||
      a.targets->dtype != MNT_DTYPE_I32 ||
      mnt::sdk::NumElements(*a.targets) != batch) {
    return InvalidArgument(Format(
        "linear Forward: inputs %s / targets %s do not match a batch of 1..%lld "
        "rows of %lld f32 features and one i32 target each",
        mnt::sdk::Describe(*a.inputs).c_str(),
        mnt::sdk::Describe(*a.targets).c_str(), (long long)max_batch_,
        (long long)features_));
  }
  const MNT_DType act = precision_.activation_dtype;
  const MNT_Tensor in =
      mnt::sdk::MakeTensor(a.inputs->data, MNT_DTYPE_F32, {batch, features_});
  const MNT_Tensor targets =
      mnt::sdk::MakeTensor(a.targets->data, MNT_DTYPE_I32, {batch});
  const MNT_Tensor x = View(x_, act, batch, features_);
  const MNT_Tensor logits = View(logits_, act, batch, classes_);
  const MNT_Tensor losses =
      mnt::sdk::MakeTensor(losses_.data(), MNT_DTYPE_F32, {batch});

  // The GEMM reads x in the activation dtype (autocast's cast), kept for
  // Backward since `inputs` is only borrowed.
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_CAST, {in}, {x}));
  MNT_GemmParams gemm{};
  gemm.struct_size = MNT_GemmParams_STRUCT_SIZE;
  gemm.alpha = 1.0f;
  gemm.compute = precision_.matmul_compute;
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_GEMM, {x, a.params[0], a.params[1]}, {logits}, &gemm));

  MNT_CrossEntropyParams ce{};
  ce.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  ce.grad_scale = 1.0f;
  ce.num_classes = classes_;
  MNT_RETURN_IF_ERROR(
      client_.Run(MNT_OP_CROSS_ENTROPY, {logits, targets}, {losses}, &ce));
  MNT_ReduceParams mean{};
  mean.struct_size = MNT_ReduceParams_STRUCT_SIZE;
  mean.kind = MNT_REDUCE_MEAN;
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_REDUCE, {losses}, {*a.loss_out}, &mean));
  if (a.correct_out != nullptr && a.correct_out->data != nullptr) {
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_COUNT_CORRECT, {logits, targets},
                                    {*a.correct_out}, &ce));
  }
  if (a.training) {
    MNT_RETURN_IF_ERROR(client_.Copy(targets_.data(), a.targets->data,
                                     static_cast<size_t>(batch) * 4,
                                     MNT_COPY_DEVICE_TO_DEVICE));
    saved_batch_ = batch;
  }
  return Status::Ok();
}

Status LinearModel::Backward(const MNT_Model_Backward_Args& a) {
  if (saved_batch_ == 0) {
    return mnt::sdk::FailedPrecondition(
        "linear Backward: call Forward with training=1 first");
  }
  MNT_RETURN_IF_ERROR(CheckTensors("Backward", "params", a.params,
                                   a.num_params, precision_.weight_dtype));
  MNT_RETURN_IF_ERROR(CheckTensors("Backward", "grads", a.grads, a.num_grads,
                                   precision_.gradient_dtype));
  if (!std::isfinite(a.loss_multiplier)) {
    return InvalidArgument("linear Backward: loss_multiplier is not finite");
  }
  const int64_t batch = saved_batch_;
  const MNT_DType act = precision_.activation_dtype;
  const MNT_Tensor dlogits = View(dlogits_, act, batch, classes_);

  // d(mean loss)/dlogits * multiplier = (softmax - onehot) * multiplier / B.
  MNT_CrossEntropyParams ce{};
  ce.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  ce.grad_scale = a.loss_multiplier / static_cast<float>(batch);
  ce.num_classes = classes_;
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_CROSS_ENTROPY,
      {View(logits_, act, batch, classes_),
       mnt::sdk::MakeTensor(targets_.data(), MNT_DTYPE_I32, {batch})},
      {mnt::sdk::MakeTensor(losses_.data(), MNT_DTYPE_F32, {batch}), dlogits},
      &ce));
  // dW = x^T dlogits, db = column sums of dlogits.
  MNT_GemmParams gemm{};
  gemm.struct_size = MNT_GemmParams_STRUCT_SIZE;
  gemm.trans_a = 1;
  gemm.alpha = 1.0f;
  gemm.beta = a.accumulate ? 1.0f : 0.0f;
  gemm.compute = precision_.matmul_compute;
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_GEMM,
                                  {View(x_, act, batch, features_), dlogits},
                                  {a.grads[0]}, &gemm));
  MNT_AccumulateParams acc{};
  acc.struct_size = MNT_AccumulateParams_STRUCT_SIZE;
  acc.accumulate = a.accumulate ? 1 : 0;
  return client_.Run(MNT_OP_BIAS_GRAD, {dlogits}, {a.grads[1]}, &acc);
}

}  // namespace linear_model

struct MNT_Model {
  linear_model::LinearModel impl;
};

namespace linear_model {
namespace {

Status CheckModel(const char* call, const MNT_Model* m) {
  if (m == nullptr) return InvalidArgument(Format("linear %s: model is NULL", call));
  return Status::Ok();
}

MNT_Error* Create(MNT_Model_Create_Args* args) {
  return mnt::sdk::Guard("linear Model_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_Create_Args, args);
    auto model = std::make_unique<MNT_Model>();
    MNT_RETURN_IF_ERROR(model->impl.Init(*args));
    args->model = model.release();
    return Status::Ok();
  });
}

MNT_Error* Destroy(MNT_Model_Destroy_Args* args) {
  return mnt::sdk::Guard("linear Model_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_Destroy_Args, args);
    delete args->model;  // frees the activations through the backend
    return Status::Ok();
  });
}

MNT_Error* GetParamCount(MNT_Model_GetParamCount_Args* args) {
  return mnt::sdk::Guard("linear Model_GetParamCount", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_GetParamCount_Args, args);
    MNT_RETURN_IF_ERROR(CheckModel("Model_GetParamCount", args->model));
    args->num_params = static_cast<int64_t>(args->model->impl.specs().size());
    return Status::Ok();
  });
}

MNT_Error* GetParamSpec(MNT_Model_GetParamSpec_Args* args) {
  return mnt::sdk::Guard("linear Model_GetParamSpec", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_GetParamSpec_Args, args);
    MNT_RETURN_IF_ERROR(CheckModel("Model_GetParamSpec", args->model));
    const auto& specs = args->model->impl.specs();
    if (args->index < 0 || args->index >= static_cast<int64_t>(specs.size())) {
      return InvalidArgument(Format("linear Model_GetParamSpec: index %lld is "
                                    "outside [0, %zu)",
                                    (long long)args->index, specs.size()));
    }
    const ParamSpec& s = specs[static_cast<size_t>(args->index)];
    args->name = s.name.c_str();
    args->rank = static_cast<int32_t>(s.dims.size());
    for (int i = 0; i < MNT_MAX_RANK; ++i) {
      args->dims[i] = i < args->rank ? s.dims[i] : 0;
    }
    args->init = s.init;
    args->init_scale = s.init_scale;
    args->weight_decay = s.weight_decay ? 1 : 0;
    return Status::Ok();
  });
}

MNT_Error* Forward(MNT_Model_Forward_Args* args) {
  return mnt::sdk::Guard("linear Model_Forward", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_Forward_Args, args);
    MNT_RETURN_IF_ERROR(CheckModel("Model_Forward", args->model));
    return args->model->impl.Forward(*args);
  });
}

MNT_Error* Backward(MNT_Model_Backward_Args* args) {
  return mnt::sdk::Guard("linear Model_Backward", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Model_Backward_Args, args);
    MNT_RETURN_IF_ERROR(CheckModel("Model_Backward", args->model));
    return args->model->impl.Backward(*args);
  });
}

const MNT_Model_Api kModelApi = {
    MNT_Model_Api_STRUCT_SIZE, nullptr,       &Create,  &Destroy,
    &GetParamCount,            &GetParamSpec, &Forward, &Backward,
};

}  // namespace

const MNT_Plugin_Api* PluginApi() {
  static const MNT_Plugin_Api api = mnt::sdk::MakePluginApi(
      MNT_PLUGIN_KIND_MODEL, "linear",
      "softmax regression: logits = x W + b (init_scale=0.01, weight_decay=1)",
      nullptr, nullptr, &kModelApi, nullptr);
  return &api;
}

}  // namespace linear_model

MNT_EXPORT_PLUGIN(linear_model::PluginApi)
