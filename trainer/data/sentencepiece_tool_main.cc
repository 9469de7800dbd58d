// mnt_sentencepiece: SentencePiece in a process of its own, run by
// trainer/data/sentencepiece_text.cc.
//
// Why a process: Debian's libsentencepiece.so.0 carries its own copy of
// protobuf-lite (3.14). Linked into the trainer, which links libprotobuf
// 3.21, protobuf's static initialisers bound to SentencePiece's copy and
// crashed at start-up; opened with dlopen(RTLD_DEEPBIND), SentencePiece's
// logging reached an unconstructed std::cerr. Alone in a process it has
// nothing to clash with. (Its header's `namespace absl { using
// std::string_view; }` also clashes with Debian's Abseil: nothing of Abseil
// here.)
//
//   mnt_sentencepiece train ARGS            SentencePieceTrainer::Train(ARGS)
//   mnt_sentencepiece encode MODEL IN OUT   text file IN -> int32 LE ids OUT;
//                                           prints the model's piece count
//   mnt_sentencepiece decode MODEL IN OUT   int32 LE ids IN -> text file OUT
// Exit 0, or 1 with SentencePiece's message as the one line on stderr.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sentencepiece_processor.h"
#include "sentencepiece_trainer.h"

namespace {

int Fail(const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  return 1;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), {});
  return true;
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "train" && argc == 3) {
    const auto s = sentencepiece::SentencePieceTrainer::Train(argv[2]);
    return s.ok() ? 0 : Fail(s.ToString());
  }
  if ((mode == "encode" || mode == "decode") && argc == 5) {
    sentencepiece::SentencePieceProcessor p;
    if (const auto s = p.Load(argv[2]); !s.ok()) return Fail(s.ToString());
    std::string in;
    if (!ReadFile(argv[3], &in)) return Fail(std::string("cannot read ") + argv[3]);
    std::string out;
    if (mode == "encode") {
      std::vector<int> ids;
      if (const auto s = p.Encode(in, &ids); !s.ok()) return Fail(s.ToString());
      for (int id : ids) {
        const uint32_t u = static_cast<uint32_t>(id);
        for (int k = 0; k < 4; ++k) out += static_cast<char>((u >> (8 * k)) & 0xff);
      }
      std::printf("%d\n", p.GetPieceSize());
    } else {
      std::vector<int> ids(in.size() / 4);
      for (size_t i = 0; i < ids.size(); ++i) {
        uint32_t u = 0;
        for (int k = 3; k >= 0; --k) u = (u << 8) | static_cast<unsigned char>(in[4 * i + k]);
        ids[i] = static_cast<int>(u);
      }
      if (const auto s = p.Decode(ids, &out); !s.ok()) return Fail(s.ToString());
    }
    if (!WriteFile(argv[4], out)) return Fail(std::string("cannot write ") + argv[4]);
    return 0;
  }
  return Fail("usage: mnt_sentencepiece train ARGS | encode MODEL IN OUT | decode MODEL IN OUT");
}
