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
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/backends/cpu/vector_loops.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Writes softmax of row[0, width) into probs[0, width); returns log(sum exp(x - max)).
float SoftmaxRow(const float* row, int64_t width, float* probs, float* max_out) {
  const float max = MaxLoop(row, width);
  const double sum = ExpShiftedLoop(row, probs, width, 1.0f, max);
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
  const int64_t rows = c.width > 0 ? c.rows : 0, width = c.width;
  const MNT_Tensor& x = *c.x;
  const MNT_Tensor& y = *c.y;
  // Rows on the threads the size is worth; each row is one thread's.
  const int threads = ThreadsFor(rows * width);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> xbuf, ybuf;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      float max;
      float* yr = OutRow(y, r, width, &ybuf);
      SoftmaxRow(InRow(x, r, width, &xbuf), width, yr, &max);
      if (y.dtype != MNT_DTYPE_F32) WriteF32Range(yr, y, r * width, width);
    }
  }
  return Status::Ok();
}

Status CpuBackend::CrossEntropy(const backend::CrossEntropyCall& c) {
  MNT_RETURN_IF_ERROR(CheckTargets(c, c));
  const int32_t* target = c.targets.i32();
  // One fp32 product, as the CUDA kernel forms it.
  const float grad_scale =
      c.grad_multiplier.present() ? *c.grad_multiplier.f32() * c.grad_scale : c.grad_scale;
  const MNT_Tensor& logits = *c.logits;
  const MNT_Tensor* dlogits = c.dlogits.present() ? &*c.dlogits : nullptr;
  float* loss = c.losses.f32();
  const int64_t width = c.width, classes = c.classes;
  // Rows on the threads the size is worth; each row is one thread's.
  const int threads = ThreadsFor(c.batch * classes);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> probs(classes), xbuf, gbuf;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < c.batch; ++r) {
      const int32_t t = target[r];
      float* g = dlogits != nullptr ? OutRow(*dlogits, r, width, &gbuf) : nullptr;
      if (t < 0) {  // ignored row: loss 0, gradient 0
        loss[r] = 0.0f;
      } else {
        const float* row = InRow(logits, r, width, &xbuf);
        float max;
        const float log_sum = SoftmaxRow(row, classes, probs.data(), &max);
        loss[r] = log_sum - (row[t] - max);
        for (int64_t j = 0; g != nullptr && j < classes; ++j) {
          g[j] = (probs[j] - (j == t ? 1.0f : 0.0f)) * grad_scale;
        }
      }
      if (g == nullptr) continue;
      std::fill(g + (t < 0 ? 0 : classes), g + width, 0.0f);  // padding columns: 0
      if (dlogits->dtype != MNT_DTYPE_F32) WriteF32Range(g, *dlogits, r * width, width);
    }
  }
  return Status::Ok();
}

Status CpuBackend::CountCorrect(const backend::CountCorrectCall& c) {
  const int32_t* target = c.targets.i32();
  int64_t correct = 0;
  std::vector<float> buf;
  for (int64_t r = 0; r < c.batch; ++r) {
    const float* row = InRow(*c.logits, r, c.width, &buf);
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
  const MNT_Tensor& logits = *c.logits;
  float* loss = c.losses.f32();
  // Rows on the threads the size is worth; each row is reduced (sum in
  // double, as CROSS_ENTROPY) and overwritten with its gradient in place
  // (through an fp32 row buffer for 16-bit logits).
  const int threads = ThreadsFor(c.batch * c.width);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> buf;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < c.batch; ++r) {
      const int32_t t = target[r];
      float* x = OutRow(logits, r, c.width, &buf);
      if (logits.dtype != MNT_DTYPE_F32) ReadF32Range(logits, r * c.width, c.width, x);
      if (t < 0) {  // ignored row: loss 0, gradient 0
        loss[r] = 0.0f;
        std::fill(x, x + c.width, 0.0f);
      } else {
        // Each exponential once, in place: x becomes exp(x - max), then
        // CrossEntropyGradient's (p - [j == t]) * scale with p = e / sum.
        const float max = MaxLoop(x, c.classes);
        const float target_logit = x[t];
        const double sum = ExpShiftedLoop(x, x, c.classes, 1.0f, max);
        const float inv = static_cast<float>(1.0 / sum);
        loss[r] = ClassifierLoss(target_logit, max, static_cast<float>(std::log(sum)));
#pragma omp simd
        for (int64_t j = 0; j < c.classes; ++j) {
          x[j] = (x[j] * inv - (j == t ? 1.0f : 0.0f)) * scale;
        }
        for (int64_t j = c.classes; j < c.width; ++j) x[j] = 0.0f;  // padding
      }
      if (logits.dtype != MNT_DTYPE_F32) WriteF32Range(x, logits, r * c.width, c.width);
    }
  }
  if (c.mean.present()) {
    double total = 0.0;
    for (int64_t r = 0; r < c.batch; ++r) total += loss[r];
    *c.mean.f32() = static_cast<float>(total / static_cast<double>(c.batch));
  }
  return Status::Ok();
}

}  // namespace mnt::cpu
