// Mantissa CNN model: its option string.
//   depth=2          residual blocks after the stem (0..16, default 2)
//   width=16         channels of every conv (1..1024, default 16)
//   bn_momentum=0.1  running-statistics update weight (0..1, torch's 0.1)
#ifndef MANTISSA_MODELS_CNN_CNN_OPTIONS_H_
#define MANTISSA_MODELS_CNN_CNN_OPTIONS_H_

#include <cstdint>

#include "plugins/sdk/status.h"

namespace mnt::cnn {

struct CnnOptions {
  int64_t depth = 2;
  int64_t width = 16;
  float bn_momentum = 0.1f;
};

constexpr int64_t kMaxDepth = 16;
constexpr int64_t kMaxWidth = 1024;

sdk::Status ParseCnnOptions(const char* text, CnnOptions* out);

}  // namespace mnt::cnn

#endif  // MANTISSA_MODELS_CNN_CNN_OPTIONS_H_
