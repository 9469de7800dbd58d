#include "plugins/backends/common/calls/softmax_cross_entropy.h"

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

Status GetLogitsAndTargets(const OpCall& call, LogitsAndTargets* c) {
  MNT_RETURN_IF_ERROR(call.Input(0, "logits", &c->logits));
  MNT_RETURN_IF_ERROR(call.Input(1, "targets", &c->targets));
  return Status::Ok();
}

// Logits [B, V] and targets I32 [B]; resolves num_classes (0 = every column).
Status CheckShapes(const OpCall& call, int64_t requested_classes,
                   LogitsAndTargets* c) {
  const Operand& logits = c->logits;
  MNT_RETURN_IF_ERROR(call.ExpectFloat(logits));
  MNT_RETURN_IF_ERROR(call.ExpectRank(logits, 2));
  MNT_RETURN_IF_ERROR(call.ExpectDType(c->targets, MNT_DTYPE_I32));
  c->batch = logits->dims[0];
  c->width = logits->dims[1];
  MNT_RETURN_IF_ERROR(call.ExpectDims(
      c->targets, 1, &c->batch, [&] { return sdk::Format("[B=%lld]", (long long)c->batch); }));
  if (requested_classes < 0 || requested_classes > c->width) {
    return call.Invalid(sdk::Format(
        "num_classes %lld is outside [0, %lld] (%s's last dim)",
        (long long)requested_classes, (long long)c->width, logits.label.c_str()));
  }
  c->classes = requested_classes == 0 ? c->width : requested_classes;
  if (c->classes == 0 && c->batch > 0) {
    return call.Invalid(logits.label + " has no classes");
  }
  return Status::Ok();
}

Status ReadParams(const OpCall& call, const MNT_CrossEntropyParams** p) {
  return call.Params("MNT_CrossEntropyParams", MNT_CrossEntropyParams_STRUCT_SIZE,
                     false, p);
}

}  // namespace

Status CheckSoftmax(const OpCall& call, SoftmaxCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &c->y));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->y));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(c->x, 1));
  MNT_RETURN_IF_ERROR(
      call.ExpectDims(c->y, c->x->rank, c->x->dims, [&] { return sdk::Describe(*c->x); }));
  c->rows = Rows(*c->x);
  c->width = LastDim(*c->x);
  return Status::Ok();
}

Status CheckCrossEntropy(const OpCall& call, CrossEntropyCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 3, 1, 2));
  const MNT_CrossEntropyParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  MNT_RETURN_IF_ERROR(GetLogitsAndTargets(call, c));
  MNT_RETURN_IF_ERROR(call.Output(0, "losses", &c->losses));
  c->dlogits = call.OptionalOutput(1, "dlogits");
  c->grad_multiplier = call.OptionalInput(2, "grad_multiplier");
  if (c->grad_multiplier.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->grad_multiplier));
  }
  MNT_RETURN_IF_ERROR(CheckShapes(call, p->num_classes, c));
  MNT_RETURN_IF_ERROR(call.ExpectDType(c->losses, MNT_DTYPE_F32));
  MNT_RETURN_IF_ERROR(call.ExpectDims(
      c->losses, 1, &c->batch, [&] { return sdk::Format("f32[B=%lld]", (long long)c->batch); }));
  if (c->dlogits.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloatLike(c->dlogits, c->logits));
  }
  c->grad_scale = p->grad_scale;
  return Status::Ok();
}

Status CheckCountCorrect(const OpCall& call, CountCorrectCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_CrossEntropyParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  MNT_RETURN_IF_ERROR(GetLogitsAndTargets(call, c));
  MNT_RETURN_IF_ERROR(call.Output(0, "count", &c->count));
  MNT_RETURN_IF_ERROR(CheckShapes(call, p->num_classes, c));
  return call.ExpectF32Scalar(c->count);
}

Status CheckFusedClassifier(const OpCall& call, FusedClassifierCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 2, 2, 3));
  const MNT_CrossEntropyParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  MNT_RETURN_IF_ERROR(call.Input(0, "targets", &c->targets));
  c->multiplier = call.OptionalInput(1, "loss_multiplier");
  MNT_RETURN_IF_ERROR(call.Output(0, "logits", &c->logits));
  MNT_RETURN_IF_ERROR(call.Output(1, "losses", &c->losses));
  c->mean = call.OptionalOutput(2, "mean_loss");
  MNT_RETURN_IF_ERROR(CheckShapes(call, p->num_classes, c));
  MNT_RETURN_IF_ERROR(call.ExpectDType(c->losses, MNT_DTYPE_F32));
  MNT_RETURN_IF_ERROR(call.ExpectDims(
      c->losses, 1, &c->batch, [&] { return sdk::Format("f32[B=%lld]", (long long)c->batch); }));
  if (c->multiplier.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->multiplier));
  }
  if (c->mean.present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->mean));
  c->grad_scale = p->grad_scale;
  return Status::Ok();
}

}  // namespace mnt::backend
