// libFuzzer target: --model_options strings -> each in-tree model's option
// parser (mlp, cnn, gpt2). The input is cut at its first NUL: the parsers
// take C strings, as the ABI hands them over.
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/cnn/cnn_options.h"
#include "models/gpt2/gpt2_options.h"
#include "models/mlp/mlp_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mnt::mlp::MlpOptions mlp;
  (void)mnt::mlp::ParseMlpOptions(text.c_str(), &mlp);
  mnt::cnn::CnnOptions cnn;
  (void)mnt::cnn::ParseCnnOptions(text.c_str(), &cnn);
  mnt::gpt2::Gpt2Config gpt2;
  (void)mnt::gpt2::ParseGpt2Options(text.c_str(), &gpt2);
  return 0;
}
