// SOFTMAX, fused CROSS_ENTROPY (+ gradient), COUNT_CORRECT and
// FUSED_CLASSIFIER (in place over the logits). Softmax
// subtracts the row max before exp; row sums accumulate in double so results
// do not depend on the row length's rounding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "plugins/backends/common/classifier_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

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

// Every target below num_classes (negative ones are ignored rows); checked
// before anything is written.
Status CheckTargets(const backend::TypedCall& call,
                    const backend::LogitsAndTargets& c) {
  const int32_t* target = c.targets.i32();
  for (int64_t r = 0; r < c.batch; ++r) {
    if (target[r] >= c.classes) {
      return call.Invalid(sdk::Format("%s[%lld] = %d is not below num_classes %lld",
                                      c.targets.label.c_str(), (long long)r, target[r],
                                      (long long)c.classes));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CpuBackend::Softmax(const backend::SoftmaxCall& c) {
  const std::vector<float> x = ReadF32(*c.x);
  std::vector<float> y(x.size());
  const int64_t rows = c.width > 0 ? c.rows : 0;
  // Rows on all threads; each row is one thread's, in a fixed order.
#pragma omp parallel for schedule(static) if (rows * c.width > (int64_t{1} << 14))
  for (int64_t r = 0; r < rows; ++r) {
    float max;
    SoftmaxRow(x.data() + r * c.width, c.width, y.data() + r * c.width, &max);
  }
  WriteF32(y.data(), *c.y);
  return Status::Ok();
}


Status CpuBackend::CrossEntropy(const backend::CrossEntropyCall& c) {
  MNT_RETURN_IF_ERROR(CheckTargets(c, c));
  const int32_t* target = c.targets.i32();
  // One fp32 product, as the CUDA kernel forms it.
  const float grad_scale =
      c.grad_multiplier.present() ? *c.grad_multiplier.f32() * c.grad_scale : c.grad_scale;
  const std::vector<float> x = ReadF32(*c.logits);
  std::vector<float> loss(c.batch, 0.0f);
  std::vector<float> grad(c.dlogits.present() ? x.size() : 0, 0.0f);
  // Rows on all threads; each row is one thread's, in a fixed order.
#pragma omp parallel if (c.batch * c.classes > (int64_t{1} << 14))
  {
  std::vector<float> probs(c.classes);
#pragma omp for schedule(static)
  for (int64_t r = 0; r < c.batch; ++r) {
    const int32_t t = target[r];
    if (t < 0) continue;  // ignored row: loss 0, gradient 0
    const float* row = x.data() + r * c.width;
    float max;
    const float log_sum = SoftmaxRow(row, c.classes, probs.data(), &max);
    loss[r] = log_sum - (row[t] - max);
    if (c.dlogits.present()) {
      float* g = grad.data() + r * c.width;  // padding columns stay 0
      for (int64_t j = 0; j < c.classes; ++j) {
        g[j] = (probs[j] - (j == t ? 1.0f : 0.0f)) * grad_scale;
      }
    }
  }
  }
  WriteF32(loss.data(), *c.losses);
  if (c.dlogits.present()) WriteF32(grad.data(), *c.dlogits);
  return Status::Ok();
}

Status CpuBackend::CountCorrect(const backend::CountCorrectCall& c) {
  const std::vector<float> x = ReadF32(*c.logits);
  const int32_t* target = c.targets.i32();
  int64_t correct = 0;
  for (int64_t r = 0; r < c.batch; ++r) {
    const float* row = x.data() + r * c.width;
    int64_t best = 0;  // first maximum wins ties
    for (int64_t j = 1; j < c.classes; ++j) {
      if (row[j] > row[best]) best = j;
    }
    if (target[r] == best) ++correct;
  }
  *c.count.f32() = static_cast<float>(correct);
  return Status::Ok();
}

Status CpuBackend::FusedClassifier(const backend::FusedClassifierCall& c) {
  MNT_RETURN_IF_ERROR(CheckTargets(c, c));
  const int32_t* target = c.targets.i32();
  const float scale =
      c.multiplier.present() ? c.grad_scale * *c.multiplier.f32() : c.grad_scale;
  std::vector<float> loss(c.batch, 0.0f);
  // Rows on all threads; each row is read once into fp32, reduced (sum in
  // double, as CROSS_ENTROPY) and written back as its gradient.
#pragma omp parallel if (c.batch * c.width > (int64_t{1} << 14))
  {
  std::vector<float> row(c.width);
#pragma omp for schedule(static)
  for (int64_t r = 0; r < c.batch; ++r) {
    const int32_t t = target[r];
    float* x = row.data();
    ReadF32Range(*c.logits, r * c.width, c.width, x);
    if (t < 0) {  // ignored row: loss 0, gradient 0
      std::fill(row.begin(), row.end(), 0.0f);
    } else {
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < c.classes; ++j) max = std::max(max, x[j]);
      double sum = 0.0;
      for (int64_t j = 0; j < c.classes; ++j) sum += std::exp(x[j] - max);
      const float inv = static_cast<float>(1.0 / sum);
      loss[r] = ClassifierLoss(x[t], max, static_cast<float>(std::log(sum)));
      for (int64_t j = 0; j < c.classes; ++j) {
        x[j] = CrossEntropyGradient(x[j], max, inv, j == t, scale);
      }
      for (int64_t j = c.classes; j < c.width; ++j) x[j] = 0.0f;  // padding
    }
    WriteF32Range(x, *c.logits, r * c.width, c.width);
  }
  }
  WriteF32(loss.data(), *c.losses);
  if (c.mean.present()) {
    double total = 0.0;
    for (float l : loss) total += l;
    *c.mean.f32() = static_cast<float>(total / static_cast<double>(c.batch));
  }
  return Status::Ok();
}

}  // namespace mnt::cpu
