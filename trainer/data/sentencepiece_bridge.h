// SentencePiece's calls behind plain std types. Its header declares
// `namespace absl { using std::string_view; }`, which clashes with Debian's
// Abseil (its own absl::string_view class) in any file that includes both:
// only sentencepiece_bridge.cc includes SentencePiece, and nothing of absl.
#ifndef MANTISSA_TRAINER_DATA_SENTENCEPIECE_BRIDGE_H_
#define MANTISSA_TRAINER_DATA_SENTENCEPIECE_BRIDGE_H_

#include <string>
#include <vector>

namespace mnt::trainer::sp {

// Each returns "" on success, else SentencePiece's message.
std::string Train(const std::string& args);
// *pieces: the model's vocabulary size.
std::string Encode(const std::string& model_path, const std::string& text,
                   std::vector<int>* ids, int* pieces);
std::string Decode(const std::string& model_path, const std::vector<int>& ids,
                   std::string* text);

}  // namespace mnt::trainer::sp

#endif  // MANTISSA_TRAINER_DATA_SENTENCEPIECE_BRIDGE_H_
