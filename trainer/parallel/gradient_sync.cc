#include "trainer/parallel/gradient_sync.h"

#include <utility>

#include "trainer/parallel/data_parallel.h"
#include "trainer/parallel/local_sync.h"
#include "trainer/parallel/replicated_sync.h"
#include "trainer/parallel/sharded_sync.h"

namespace mnt::trainer {
namespace {

bool IsDataParallel(const GradientSync::Setup& setup) {
  return setup.ranks != nullptr && setup.ranks->world_size() > 1;
}

}  // namespace

ParamShard GradientSync::ShardOf(const Setup& setup) {
  if (!IsDataParallel(setup)) return {};
  return {setup.ranks->rank(), setup.ranks->world_size(), setup.config->zero_stage() == 1,
          static_cast<int64_t>(setup.config->bucket_mb() * (1 << 20)),
          ShardAlignmentFor(setup.config->optimizer().name())};
}

absl::StatusOr<std::unique_ptr<GradientSync>> GradientSync::Create(const Setup& setup,
                                                                   GradientBuffers* buffers,
                                                                   sdk::ModelClient* model) {
  if (!IsDataParallel(setup)) return std::make_unique<LocalSync>(buffers);
  auto collectives = DataParallel::Create(setup.ranks, *setup.client);
  if (!collectives.ok()) return collectives.status();
  // Exchange in backward (ABI 1.11): with a model that hands over finished
  // gradients, each bucket goes as soon as backward has finished it.
  const bool hand_over =
      setup.config->exchange_in_backward() != "off" && model->HandsOverGradients();
  if (ShardOf(setup).zero1) {
    return std::make_unique<ShardedSync>(setup, buffers, std::move(*collectives), model,
                                         hand_over);
  }
  return std::make_unique<ReplicatedSync>(setup, buffers, std::move(*collectives), model,
                                          hand_over);
}

}  // namespace mnt::trainer
