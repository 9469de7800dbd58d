// Mantissa models: gradient checkpointing, written once. A network made of
// segments (GPT-2's blocks, a residual MLP's blocks) keeps each segment's
// activations for its backward; with checkpointing it keeps only each
// segment's input (its residual stream, say), the segments share one set of
// activations, and Backward runs a segment's forward again, into that set,
// just before the segment's backward (Chen et al. 2016, "Training Deep Nets
// with Sublinear Memory Cost"; torch.utils.checkpoint): activation memory
// of one segment instead of all, for one more forward per step.
//
// The trainer's --gradient_checkpointing reaches a model as its option
// checkpointing=1 (docs/plugins.md, "Gradient checkpointing"); a model whose
// options do not take the key refuses it like any unknown key, and the
// trainer turns that into one line saying the model does not recompute.
//
//   Recompute recompute;
//   MNT_RETURN_IF_ERROR(ReadCheckpointingOption(opts, "resmlp options", &on));
//   recompute = Recompute(on, num_blocks);
//   for (int s = 0; s < recompute.sets(); ++s) plan block activations s
//   Forward:  block k writes into set recompute.SetOf(k)
//   Backward: for k = last..0:
//               MNT_RETURN_IF_ERROR(recompute.Restore(k, [&] { return BlockForward(k); }));
//               block k's backward, reading set recompute.SetOf(k)
//
// A recomputed forward issues the same ops on the same inputs as the first,
// so the gradients are bit-identical to those without checkpointing, also
// with FP8 GEMMs: in a Backward the facade quantizes a Linear layer's input
// from the FP8 copy the training forward kept, and the weight with the
// forward's scale (fp8_gemms.h). plugin_conformance checks the equality for
// every model whose options take checkpointing.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_RECOMPUTE_H_
#define MANTISSA_PLUGINS_SDK_MODEL_RECOMPUTE_H_

#include <string>
#include <utility>

#include "plugins/sdk/options.h"
#include "plugins/sdk/status.h"

namespace mnt::models {

// The option key the trainer's --gradient_checkpointing sets (to 1).
inline constexpr const char kCheckpointingOption[] = "checkpointing";

// Reads checkpointing=0|1 (absent: 0) from parsed options; anything else is
// InvalidArgument "<context>: checkpointing=<v> is not 0 or 1". List
// kCheckpointingOption among the keys the model's CheckKnown accepts.
inline sdk::Status ReadCheckpointingOption(const sdk::Options& options, const char* context,
                                           bool* out) {
  long long v = 0;
  MNT_RETURN_IF_ERROR(options.GetInt(kCheckpointingOption, &v));
  if (v != 0 && v != 1) {
    return sdk::InvalidArgument(
        sdk::Format("%s: checkpointing=%lld is not 0 or 1", context, v));
  }
  *out = v == 1;
  return sdk::Status::Ok();
}

// Which activation set each of `segments` segments uses, and the recompute
// before its backward.
class Recompute {
 public:
  Recompute() = default;
  Recompute(bool enabled, int segments) : enabled_(enabled), segments_(segments) {}

  bool enabled() const { return enabled_; }
  int segments() const { return segments_; }
  // The activation sets to plan: one per segment, or one they share.
  int sets() const { return enabled_ ? (segments_ > 0 ? 1 : 0) : segments_; }
  // The set segment `segment` writes in its forward and reads in its
  // backward.
  int SetOf(int segment) const { return enabled_ ? 0 : segment; }

  // In Backward, right before segment `segment`'s backward: with
  // checkpointing, `forward()` (the segment's forward from its kept input
  // into SetOf(segment); later segments overwrote it), else nothing.
  template <typename Forward>
  sdk::Status Restore(int /*segment*/, Forward&& forward) const {
    if (!enabled_) return sdk::Status::Ok();
    return std::forward<Forward>(forward)();
  }

 private:
  bool enabled_ = false;
  int segments_ = 0;
};

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_RECOMPUTE_H_
