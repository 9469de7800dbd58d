// FILL, CAST, ADD and the activations.
#include <cmath>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

Status RunFill(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(0, 0, 1, 1));
  const MNT_FillParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_FillParams", MNT_FillParams_STRUCT_SIZE, false, &p));
  Operand out;
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  const int64_t n = sdk::NumElements(*out);
  if (out->dtype == MNT_DTYPE_I32) {
    const double v = p->value;
    if (!(v == std::floor(v) && v >= -2147483648.0 && v <= 2147483647.0)) {
      return call.Invalid(sdk::Format(
          "value %g does not fit %s exactly", v, out.label.c_str()));
    }
    int32_t* dst = static_cast<int32_t*>(out->data);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int32_t>(v);
    return Status::Ok();
  }
  MNT_RETURN_IF_ERROR(call.ExpectFloat(out));
  std::vector<float> values(n, static_cast<float>(p->value));
  WriteF32(values.data(), *out);
  return Status::Ok();
}

Status RunCast(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  Operand x, y;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  MNT_RETURN_IF_ERROR(call.ExpectElements(
      y, sdk::NumElements(*x), sdk::Format("%lld elements like in[0]",
                                           (long long)sdk::NumElements(*x))));
  std::vector<float> v = ReadF32(*x);
  WriteF32(v.data(), *y);
  return Status::Ok();
}

Status RunAdd(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 2, 1, 1));
  const MNT_AddParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_AddParams", MNT_AddParams_STRUCT_SIZE, false, &p));
  Operand a, out;
  MNT_RETURN_IF_ERROR(call.Input(0, "a", &a));
  const Operand b = call.OptionalInput(1, "b");
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(a));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(out));
  const int64_t n = sdk::NumElements(*a);
  const std::string same = sdk::Format("%lld elements like in[0]", (long long)n);
  MNT_RETURN_IF_ERROR(call.ExpectElements(out, n, same));
  std::vector<float> result = ReadF32(*a);
  const float alpha = p->alpha;
  if (b.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(b));
    MNT_RETURN_IF_ERROR(call.ExpectElements(b, n, same));
    const std::vector<float> bv = ReadF32(*b);
    const float beta = p->beta;
    for (int64_t i = 0; i < n; ++i) result[i] = alpha * result[i] + beta * bv[i];
  } else {
    for (int64_t i = 0; i < n; ++i) result[i] = alpha * result[i];
  }
  WriteF32(result.data(), *out);
  return Status::Ok();
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

Status RunActivationForward(const OpCall& call) {
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
  std::vector<float> v = ReadF32(*x);
  if (act == MNT_ACTIVATION_RELU) {
    for (float& e : v) e = Relu(e);
  } else if (act == MNT_ACTIVATION_GELU_TANH) {
    for (float& e : v) e = GeluTanh(e);
  }
  WriteF32(v.data(), *y);
  return Status::Ok();
}

Status RunActivationBackward(const OpCall& call) {
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
  const std::vector<float> xv = ReadF32(*x);
  std::vector<float> g = ReadF32(*dy);
  if (act == MNT_ACTIVATION_RELU) {
    for (int64_t i = 0; i < n; ++i) g[i] = ReluBackward(xv[i], g[i]);
  } else if (act == MNT_ACTIVATION_GELU_TANH) {
    for (int64_t i = 0; i < n; ++i) g[i] = GeluTanhBackward(xv[i], g[i]);
  }
  WriteF32(g.data(), *dx);
  return Status::Ok();
}

}  // namespace mnt::cpu
