#include "trainer/core/evaluator.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {

absl::StatusOr<EvalMetrics> Evaluator::Run(const BatchSource& source,
                                           int64_t step) {
  int64_t n = source.size();
  if (eval_batches_ > 0) n = std::min(n, eval_batches_ * batch_size_);
  const std::vector<MNT_Tensor> weights = params_->WeightTensors();
  const MNT_DataSpec spec = source.spec();
  const int64_t tpe = std::max<int64_t>(1, spec.targets_per_example);
  const MNT_Tensor loss = F32Scalar(scalars_->loss);
  const MNT_Tensor correct = F32Scalar(scalars_->correct);
  double loss_sum = 0, correct_sum = 0;
  std::vector<int64_t> indices;
  const int world = host_ != nullptr ? host_->world_size() : 1;
  const int rank = host_ != nullptr ? host_->rank() : 0;
  int64_t batch_index = 0;
  for (int64_t begin = 0; begin < n; begin += batch_size_, ++batch_index) {
    if (batch_index % world != rank) continue;
    const int64_t b = std::min(batch_size_, n - begin);
    indices.resize(b);
    for (int64_t i = 0; i < b; ++i) indices[i] = begin + i;
    if (auto s = batch_->Upload(source, indices); !s.ok()) return s;
    if (auto s = sdk::ToAbsl(model_->Forward(weights, batch_->Inputs(spec, b),
                                              batch_->Targets(spec, b),
                                              /*training=*/false, loss, &correct));
        !s.ok())
      return absl::Status(s.code(), absl::StrCat("evaluation: ", s.message()));
    auto l = ReadScalar<float>(*client_, scalars_->loss.data());
    if (!l.ok()) return l.status();
    auto c = ReadScalar<float>(*client_, scalars_->correct.data());
    if (!c.ok()) return c.status();
    loss_sum += static_cast<double>(*l) * b;
    correct_sum += *c;
  }
  if (host_ != nullptr) {
    auto sums = host_->SumInRankOrder({loss_sum, correct_sum});
    if (!sums.ok()) return sums.status();
    loss_sum = (*sums)[0];
    correct_sum = (*sums)[1];
  }
  EvalMetrics m;
  m.step = step;
  m.examples = n;
  m.loss = n > 0 ? loss_sum / n : 0;
  m.accuracy = n > 0 ? correct_sum / static_cast<double>(n * tpe) : 0;
  return m;
}

}  // namespace mnt::trainer
