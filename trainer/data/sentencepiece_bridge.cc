#include "trainer/data/sentencepiece_bridge.h"

#include "sentencepiece_processor.h"
#include "sentencepiece_trainer.h"

namespace mnt::trainer::sp {
namespace {

std::string Load(const std::string& model_path, sentencepiece::SentencePieceProcessor* p) {
  const auto s = p->Load(model_path);
  return s.ok() ? "" : s.ToString();
}

}  // namespace

std::string Train(const std::string& args) {
  const auto s = sentencepiece::SentencePieceTrainer::Train(args);
  return s.ok() ? "" : s.ToString();
}

std::string Encode(const std::string& model_path, const std::string& text,
                   std::vector<int>* ids, int* pieces) {
  sentencepiece::SentencePieceProcessor p;
  if (std::string e = Load(model_path, &p); !e.empty()) return e;
  *pieces = p.GetPieceSize();
  const auto s = p.Encode(text, ids);
  return s.ok() ? "" : s.ToString();
}

std::string Decode(const std::string& model_path, const std::vector<int>& ids,
                   std::string* text) {
  sentencepiece::SentencePieceProcessor p;
  if (std::string e = Load(model_path, &p); !e.empty()) return e;
  const auto s = p.Decode(ids, text);
  return s.ok() ? "" : s.ToString();
}

}  // namespace mnt::trainer::sp
