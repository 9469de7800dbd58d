#include "trainer/parallel/bucketed_sync.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace mnt::trainer {

BucketedSync::BucketedSync(const Setup& setup, GradientBuffers* buffers,
                           std::unique_ptr<DataParallel> collectives, sdk::ModelClient* model,
                           bool hand_over)
    : setup_(setup), buffers_(buffers), collectives_(std::move(collectives)) {
  if (hand_over) {
    readiness_ = std::make_unique<BucketReadiness>(buffers_->layout());
    model->UseGradientReady(&BucketedSync::OnGradientReady, this);
  }
}

std::vector<int64_t> BucketedSync::LocalBatch(
    const std::function<std::vector<int64_t>(int64_t)>& draw, int64_t batch_size) {
  // The sampler only ever sees global batches, so N ranks train on exactly
  // the examples one rank with N times the batch would.
  const std::vector<int64_t> global = draw(batch_size * collectives_->world_size());
  const auto first = global.begin() + collectives_->rank() * batch_size;
  return std::vector<int64_t>(first, first + batch_size);
}

absl::Status BucketedSync::AverageLoss(const MNT_Tensor& loss) {
  // Every rank reads (when it reads) the global batch's mean loss.
  return collectives_->AverageInPlace(loss);
}

void BucketedSync::BeforeBackward(int64_t micro, int64_t micro_batches) {
  if (readiness_ == nullptr) return;
  readiness_->Reset();
  handover_ = {true, micro, micro + 1 == micro_batches, absl::OkStatus()};
}

absl::Status BucketedSync::AfterBackward(int64_t micro) {
  if (readiness_ == nullptr) return buffers_->AccumulateMasterGradients(micro);
  handover_.armed = false;
  if (!handover_.error.ok()) return handover_.error;
  if (readiness_->finished_elements() != readiness_->total_elements()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model plugin '", setup_.config->model(), "' handed over ",
        readiness_->finished_elements(), " of its ", readiness_->total_elements(),
        " gradient elements in a backward (capability MODEL_GRADIENT_READY); "
        "--exchange_in_backward=off works around it"));
  }
  return absl::OkStatus();
}

void BucketedSync::OnGradientReady(void* sync, int64_t param, int64_t first, int64_t count) {
  BucketedSync* s = static_cast<BucketedSync*>(sync);
  if (!s->handover_.armed || !s->handover_.error.ok()) return;
  s->handover_.error = s->HandleGradientReady(param, first, count);
}

absl::Status BucketedSync::HandleGradientReady(int64_t param, int64_t first, int64_t count) {
  std::vector<int64_t> completed;
  if (auto s = readiness_->Mark(param, first, count, &completed); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model plugin '", setup_.config->model(), "' broke the gradient hand-over (capability "
        "MODEL_GRADIENT_READY): ", s.message(), "; --exchange_in_backward=off works around it"));
  }
  if (auto s = buffers_->AccumulateMasterGradients(handover_.micro, param, first, count);
      !s.ok())
    return s;
  if (!handover_.last_micro) return absl::OkStatus();
  for (int64_t b : completed) {
    if (auto s = ExchangeBucket(b); !s.ok()) return s;
    ++buckets_in_backward_;
  }
  return absl::OkStatus();
}

absl::Status BucketedSync::ExchangeBucket(int64_t b) {
  if (b == 0) {  // the fault test's inf goes into flat element 0
    if (auto s = BeforeExchange(); !s.ok()) return s;
  }
  ++buckets_exchanged_;
  // Started: it runs while backward computes the buckets still to come (a
  // finished bucket's gradients are written no more), joined below.
  return StartBucket(b);
}

absl::Status BucketedSync::FinishExchange() {
  // The buckets backward did not complete (all of them without the
  // hand-over), in order.
  std::vector<int64_t> buckets;
  if (readiness_ != nullptr) {
    buckets = readiness_->Unfinished();
  } else {
    for (size_t b = 0; b < buffers_->layout().buckets().size(); ++b) {
      buckets.push_back(static_cast<int64_t>(b));
    }
  }
  for (int64_t b : buckets) {
    if (auto s = ExchangeBucket(b); !s.ok()) return s;
  }
  // What is left of the exchanges now is what backward could not hide.
  return collectives_->Join();
}

std::function<absl::Status(const MNT_Tensor&)> BucketedSync::norm_reduction() {
  // Each rank adds its share's part of the squared norm, ZeRO-0 too, so
  // both stages clip with the same bits.
  return [this](const MNT_Tensor& t) { return collectives_->SumInPlace(t); };
}

absl::Status BucketedSync::MaxOverRanks(const MNT_Tensor& t) {
  return collectives_->MaxInPlace(t);
}

absl::StatusOr<int> BucketedSync::AgreeStopSignal(int mine) {
  // mpirun hands a Ctrl-C to every rank, not at the same step: the ranks
  // agree at every step boundary, so all stop at the same one.
  auto any = ranks().SumInRankOrder({static_cast<double>(mine)});
  if (!any.ok()) return any.status();
  if ((*any)[0] == 0) return 0;
  return mine != 0 ? mine : 2;  // a rank not signalled stops as for SIGINT
}

std::string BucketedSync::Description() const {
  const int world = collectives_->world_size();
  const int64_t batch = setup_.config->batch_size();
  return absl::StrCat(
      "data parallel: rank ", collectives_->rank(), " of ", world, ", global batch ",
      world * batch, " (", batch, " per rank); gradients ", DescribeExchange(),
      " through the ", setup_.device_name, " backend's collectives extension",
      readiness_ != nullptr ? ", each issued as soon as backward has finished it" : "",
      collectives_->starts_collectives()
          ? (readiness_ != nullptr ? " and running while backward goes on"
                                   : ", started together after backward")
          : (readiness_ != nullptr ? " (run at once: the extension's version 1 starts none)"
                                   : ""),
      DescribeAfter());
}

SyncStats BucketedSync::Stats() const {
  SyncStats s;
  s.ranks = collectives_->world_size();
  s.collective_seconds = collectives_->collective_seconds();
  s.collective_calls = collectives_->collective_calls();
  s.buckets_exchanged = buckets_exchanged_;
  s.buckets_in_backward = buckets_in_backward_;
  s.buckets_started = collectives_->starts_collectives() ? buckets_exchanged_ : 0;
  return s;
}

}  // namespace mnt::trainer
