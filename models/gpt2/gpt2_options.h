// Mantissa GPT-2 model: its option string ("key=value,...").
//   preset=gpt2-tiny|gpt2-124m   starting point (default gpt2-tiny)
//   n_layer, n_head, d_model     override the preset
//   seq_len                      maximum context (rows of wpe); the data's
//                                sequence length must not exceed it
//   vocab                        real vocabulary; default: the data's
//                                num_classes. Padded to a multiple of 128
//                                (padded_vocab) for the GEMMs; padding
//                                columns are masked out of the loss.
//   checkpointing=0|1            gradient checkpointing: keep only each
//                                block's input and recompute the block in
//                                Backward (trainer flag
//                                --gradient_checkpointing sets it)
//   fused=0|1                    1 (default): the backend's fused ops (ABI
//                                1.6: residual add + layer norm, GEMM with
//                                GELU / dGELU / bias-gradient epilogues, the
//                                in-place classifier) where it supports
//                                them; 0: the plain ops everywhere
#ifndef MANTISSA_MODELS_GPT2_GPT2_OPTIONS_H_
#define MANTISSA_MODELS_GPT2_GPT2_OPTIONS_H_

#include <cstdint>
#include <string>

#include "plugins/sdk/status.h"

namespace mnt::gpt2 {

struct Gpt2Config {
  std::string preset = "gpt2-tiny";
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t d_model = 64;
  int64_t seq_len = 64;
  int64_t vocab = 0;  // 0: take it from the data spec
  bool checkpointing = false;
  bool fused = true;

  int64_t head_dim() const { return d_model / n_head; }
};

constexpr int64_t kVocabMultiple = 128;
constexpr int64_t kMaxDim = int64_t{1} << 16;

inline int64_t PaddedVocab(int64_t vocab) {
  return (vocab + kVocabMultiple - 1) / kVocabMultiple * kVocabMultiple;
}

// Fills `out` from a preset and overrides. Every value is range-checked;
// d_model must divide by n_head.
sdk::Status ParseGpt2Options(const char* text, Gpt2Config* out);

}  // namespace mnt::gpt2

#endif  // MANTISSA_MODELS_GPT2_GPT2_OPTIONS_H_
