// SOFTMAX, fused CROSS_ENTROPY (+ gradient) and COUNT_CORRECT. Softmax
// subtracts the row max before exp; row sums accumulate in double so results
// do not depend on the row length's rounding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Writes softmax of row[0, width) into probs[0, width); returns log(sum exp(x - max)).
float SoftmaxRow(const float* row, int64_t width, float* probs, float* max_out) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < width; ++j) max = std::max(max, row[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < width; ++j) {
    probs[j] = std::exp(row[j] - max);
    sum += probs[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < width; ++j) probs[j] *= inv;
  *max_out = max;
  return static_cast<float>(std::log(sum));
}

// Checks logits [B,V] and targets I32 [B]; resolves num_classes (0 = V).
Status CheckLogitsAndTargets(const OpCall& call, const Operand& logits,
                             const Operand& targets, int64_t requested_classes,
                             int64_t* num_classes) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(logits));
  MNT_RETURN_IF_ERROR(call.ExpectRank(logits, 2));
  MNT_RETURN_IF_ERROR(call.ExpectDType(targets, MNT_DTYPE_I32));
  const int64_t batch = logits->dims[0], width = logits->dims[1];
  MNT_RETURN_IF_ERROR(call.ExpectDims(
      targets, 1, &batch, sdk::Format("[B=%lld]", (long long)batch)));
  if (requested_classes < 0 || requested_classes > width) {
    return call.Invalid(sdk::Format(
        "num_classes %lld is outside [0, %lld] (%s's last dim)",
        (long long)requested_classes, (long long)width, logits.label.c_str()));
  }
  *num_classes = requested_classes == 0 ? width : requested_classes;
  if (*num_classes == 0 && batch > 0) {
    return call.Invalid(logits.label + " has no classes");
  }
  return Status::Ok();
}

}  // namespace

Status RunSoftmax(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  Operand x, y;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 1));
  MNT_RETURN_IF_ERROR(call.ExpectDims(y, x->rank, x->dims, sdk::Describe(*x)));
  const int64_t rows = Rows(*x), width = LastDim(*x);
  const std::vector<float> xv = ReadF32(*x);
  std::vector<float> yv(xv.size());
  float max;
  for (int64_t r = 0; r < rows && width > 0; ++r) {
    SoftmaxRow(xv.data() + r * width, width, yv.data() + r * width, &max);
  }
  WriteF32(yv.data(), *y);
  return Status::Ok();
}

Status RunCrossEntropy(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 2));
  const MNT_CrossEntropyParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_CrossEntropyParams",
                                  MNT_CrossEntropyParams_STRUCT_SIZE, false, &p));
  Operand logits, targets, losses;
  MNT_RETURN_IF_ERROR(call.Input(0, "logits", &logits));
  MNT_RETURN_IF_ERROR(call.Input(1, "targets", &targets));
  MNT_RETURN_IF_ERROR(call.Output(0, "losses", &losses));
  const Operand dlogits = call.OptionalOutput(1, "dlogits");
  int64_t classes;
  MNT_RETURN_IF_ERROR(
      CheckLogitsAndTargets(call, logits, targets, p->num_classes, &classes));
  const int64_t batch = logits->dims[0], width = logits->dims[1];
  MNT_RETURN_IF_ERROR(call.ExpectDType(losses, MNT_DTYPE_F32));
  MNT_RETURN_IF_ERROR(call.ExpectDims(losses, 1, &batch,
                                     sdk::Format("f32[B=%lld]", (long long)batch)));
  if (dlogits.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(dlogits));
    MNT_RETURN_IF_ERROR(
        call.ExpectDims(dlogits, 2, logits->dims, sdk::Describe(*logits)));
  }
  const int32_t* target = I32Data(*targets);
  for (int64_t r = 0; r < batch; ++r) {
    if (target[r] >= classes) {
      return call.Invalid(sdk::Format(
          "%s[%lld] = %d is not below num_classes %lld", targets.label.c_str(),
          (long long)r, target[r], (long long)classes));
    }
  }
  const std::vector<float> x = ReadF32(*logits);
  std::vector<float> loss(batch, 0.0f);
  std::vector<float> grad(dlogits.present() ? x.size() : 0, 0.0f);
  std::vector<float> probs(classes);
  for (int64_t r = 0; r < batch; ++r) {
    const int32_t t = target[r];
    if (t < 0) continue;  // ignored row: loss 0, gradient 0
    const float* row = x.data() + r * width;
    float max;
    const float log_sum = SoftmaxRow(row, classes, probs.data(), &max);
    loss[r] = log_sum - (row[t] - max);
    if (dlogits.present()) {
      float* g = grad.data() + r * width;  // padding columns stay 0
      for (int64_t j = 0; j < classes; ++j) {
        g[j] = (probs[j] - (j == t ? 1.0f : 0.0f)) * p->grad_scale;
      }
    }
  }
  WriteF32(loss.data(), *losses);
  if (dlogits.present()) WriteF32(grad.data(), *dlogits);
  return Status::Ok();
}

Status RunCountCorrect(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_CrossEntropyParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_CrossEntropyParams",
                                  MNT_CrossEntropyParams_STRUCT_SIZE, false, &p));
  Operand logits, targets, count;
  MNT_RETURN_IF_ERROR(call.Input(0, "logits", &logits));
  MNT_RETURN_IF_ERROR(call.Input(1, "targets", &targets));
  MNT_RETURN_IF_ERROR(call.Output(0, "count", &count));
  int64_t classes;
  MNT_RETURN_IF_ERROR(
      CheckLogitsAndTargets(call, logits, targets, p->num_classes, &classes));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(count));
  const int64_t batch = logits->dims[0], width = logits->dims[1];
  const std::vector<float> x = ReadF32(*logits);
  const int32_t* target = I32Data(*targets);
  int64_t correct = 0;
  for (int64_t r = 0; r < batch; ++r) {
    const float* row = x.data() + r * width;
    int64_t best = 0;  // first maximum wins ties
    for (int64_t j = 1; j < classes; ++j) {
      if (row[j] > row[best]) best = j;
    }
    if (target[r] == best) ++correct;
  }
  *F32Data(*count) = static_cast<float>(correct);
  return Status::Ok();
}

}  // namespace mnt::cpu
