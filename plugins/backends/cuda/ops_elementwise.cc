// FILL, CAST, ADD and the activations: CPU-backend checks, CUDA kernels.
#include <cmath>
#include <string>

#include "plugins/backends/cuda/ops.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

Status RunFill(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(0, 0, 1, 1));
  const MNT_FillParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_FillParams", MNT_FillParams_STRUCT_SIZE, false, &p));
  Operand out;
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  if (out->dtype == MNT_DTYPE_I32) {
    const double v = p->value;
    if (!(v == std::floor(v) && v >= -2147483648.0 && v <= 2147483647.0)) {
      return call.Invalid(sdk::Format(
          "value %g does not fit %s exactly", v, out.label.c_str()));
    }
  } else {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(out));
  }
  return Launched(call,
                  LaunchFill(b.stream, Dev(out), sdk::NumElements(*out), p->value),
                  "fill");
}

Status RunCast(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  Operand x, y;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  const int64_t n = sdk::NumElements(*x);
  MNT_RETURN_IF_ERROR(call.ExpectElements(
      y, n, sdk::Format("%lld elements like in[0]", (long long)n)));
  return Launched(call, LaunchConvert(b.stream, Dev(x), Dev(y), n, MNT_COMPUTE_F32),
                  "convert");
}

Status RunAdd(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 2, 1, 1));
  const MNT_AddParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_AddParams", MNT_AddParams_STRUCT_SIZE, false, &p));
  Operand a, out;
  MNT_RETURN_IF_ERROR(call.Input(0, "a", &a));
  const Operand bo = call.OptionalInput(1, "b");
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(a));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(out));
  const int64_t n = sdk::NumElements(*a);
  const std::string same = sdk::Format("%lld elements like in[0]", (long long)n);
  MNT_RETURN_IF_ERROR(call.ExpectElements(out, n, same));
  if (bo.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(bo));
    MNT_RETURN_IF_ERROR(call.ExpectElements(bo, n, same));
  }
  return Launched(call,
                  LaunchAdd(b.stream, Dev(a), Dev(bo), Dev(out), n, p->alpha, p->beta),
                  "add");
}

namespace {

Status GetActivation(const OpCall& call, MNT_Activation* activation) {
  const MNT_ActivationParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_ActivationParams",
                                  MNT_ActivationParams_STRUCT_SIZE, false, &p));
  switch (p->activation) {
    case MNT_ACTIVATION_IDENTITY:
    case MNT_ACTIVATION_RELU:
    case MNT_ACTIVATION_GELU_TANH:
      *activation = p->activation;
      return Status::Ok();
    default:
      return call.Invalid(sdk::Format("unknown activation %d",
                                      static_cast<int>(p->activation)));
  }
}

}  // namespace

Status RunActivationForward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  MNT_Activation act;
  MNT_RETURN_IF_ERROR(GetActivation(call, &act));
  Operand x, y;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  const int64_t n = sdk::NumElements(*x);
  MNT_RETURN_IF_ERROR(call.ExpectElements(
      y, n, sdk::Format("%lld elements like in[0]", (long long)n)));
  return Launched(call, LaunchActivationForward(b.stream, act, Dev(x), Dev(y), n),
                  "activation_forward");
}

Status RunActivationBackward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  MNT_Activation act;
  MNT_RETURN_IF_ERROR(GetActivation(call, &act));
  Operand x, dy, dx;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(1, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &dx));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dy));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dx));
  const int64_t n = sdk::NumElements(*x);
  const std::string same = sdk::Format("%lld elements like in[0]", (long long)n);
  MNT_RETURN_IF_ERROR(call.ExpectElements(dy, n, same));
  MNT_RETURN_IF_ERROR(call.ExpectElements(dx, n, same));
  return Launched(call,
                  LaunchActivationBackward(b.stream, act, Dev(x), Dev(dy), Dev(dx), n),
                  "activation_backward");
}

}  // namespace mnt::cuda
