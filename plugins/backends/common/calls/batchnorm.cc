#include "plugins/backends/common/calls/batchnorm.h"

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

Status ReadParams(const OpCall& call, const MNT_BatchNormParams** p) {
  MNT_RETURN_IF_ERROR(call.Params("MNT_BatchNormParams",
                                  MNT_BatchNormParams_STRUCT_SIZE, false, p));
  if (!((*p)->epsilon >= 0.0f) || !((*p)->momentum >= 0.0f) ||
      !((*p)->momentum <= 1.0f)) {
    return call.Invalid(sdk::Format(
        "epsilon %g, momentum %g: expected epsilon >= 0, momentum in [0, 1]",
        (*p)->epsilon, (*p)->momentum));
  }
  return Status::Ok();
}

Status ResolveShape(const OpCall& call, const Operand& x, const MNT_BatchNormParams& p,
                    BatchNormShape* s) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 2));
  s->n = x->dims[0];
  s->c = x->dims[1];
  s->inner = 1;
  for (int i = 2; i < x->rank; ++i) s->inner *= x->dims[i];
  s->training = p.training != 0;
  s->momentum = p.momentum;
  s->epsilon = p.epsilon;
  return Status::Ok();
}

// [C]: a float dtype (parameters and their gradients) or F32 (statistics).
Status ExpectChannelVector(const OpCall& call, const Operand& t, int64_t c, bool f32) {
  if (f32) {
    MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  } else {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  }
  return call.ExpectDims(t, 1, &c, [&] { return sdk::Format("[C=%lld]", (long long)c); });
}

}  // namespace

Status CheckBatchNormForward(const OpCall& call, BatchNormForwardCall* b) {
  b->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(3, 3, 3, 5));
  const MNT_BatchNormParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  const bool training = p->training != 0;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &b->x));
  MNT_RETURN_IF_ERROR(call.Input(1, "gamma", &b->gamma));
  MNT_RETURN_IF_ERROR(call.Input(2, "beta", &b->beta));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &b->y));
  MNT_RETURN_IF_ERROR(call.Output(1, "running_mean", &b->running_mean));
  MNT_RETURN_IF_ERROR(call.Output(2, "running_var", &b->running_var));
  if (training) {
    MNT_RETURN_IF_ERROR(call.Output(3, "saved_mean", &b->saved_mean));
    MNT_RETURN_IF_ERROR(call.Output(4, "saved_invstd", &b->saved_invstd));
  }
  MNT_RETURN_IF_ERROR(ResolveShape(call, b->x, *p, &b->shape));
  const int64_t c = b->shape.c;
  MNT_RETURN_IF_ERROR(call.ExpectFloatLike(b->y, b->x));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->gamma, c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->beta, c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->running_mean, c, true));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->running_var, c, true));
  if (!training) return Status::Ok();
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->saved_mean, c, true));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->saved_invstd, c, true));
  if (b->shape.count() < 2) {
    return call.Invalid(b->x.label + " is " + sdk::Describe(*b->x) +
                        ": training needs more than one value per channel");
  }
  return Status::Ok();
}

Status CheckBatchNormBackward(const OpCall& call, BatchNormBackwardCall* b) {
  b->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(5, 5, 3, 3));
  const MNT_BatchNormParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  b->accumulate = p->accumulate != 0;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &b->dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &b->x));
  MNT_RETURN_IF_ERROR(call.Input(2, "gamma", &b->gamma));
  MNT_RETURN_IF_ERROR(call.Input(3, "saved_mean", &b->saved_mean));
  MNT_RETURN_IF_ERROR(call.Input(4, "saved_invstd", &b->saved_invstd));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &b->dx));
  MNT_RETURN_IF_ERROR(call.Output(1, "dgamma", &b->dgamma));
  MNT_RETURN_IF_ERROR(call.Output(2, "dbeta", &b->dbeta));
  MNT_RETURN_IF_ERROR(ResolveShape(call, b->x, *p, &b->shape));
  const int64_t c = b->shape.c;
  MNT_RETURN_IF_ERROR(call.ExpectFloatLike(b->dy, b->x));
  MNT_RETURN_IF_ERROR(call.ExpectFloatLike(b->dx, b->x));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->gamma, c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->dgamma, c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->dbeta, c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->saved_mean, c, true));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, b->saved_invstd, c, true));
  if (b->shape.count() < 1) return call.Invalid(b->x.label + " is empty");
  return Status::Ok();
}

}  // namespace mnt::backend
