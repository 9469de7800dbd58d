// sample: generates text from a Mantissa gpt2 checkpoint (byte-level
// vocabulary: bytes in, bytes out; a larger vocabulary prints token ids).
//
//   tools/bazel run //tools/gpt2:sample -- --prompt='The ' --tokens=300
//       [--checkpoint=~/.cache/mantissa/runs/gpt2-fortunes/latest]
//       [--temperature=0.8 --top_k=40 --seed=1234]   (--temperature=0: greedy)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "tools/gpt2/sampler.h"
#include "trainer/checkpoint/checkpoint.h"

ABSL_FLAG(std::string, checkpoint, "",
          "Mantissa gpt2 checkpoint; default: the main job's, "
          "$XDG_CACHE_HOME or ~/.cache + /mantissa/runs/gpt2-fortunes/latest");
ABSL_FLAG(std::string, prompt, "\n", "text to continue (byte-level)");
ABSL_FLAG(int64_t, tokens, 200, "tokens to generate");
ABSL_FLAG(double, temperature, 0.8, "softmax temperature; 0 = greedy");
ABSL_FLAG(int64_t, top_k, 40, "sample among the k most likely; 0 = all");
ABSL_FLAG(uint64_t, seed, 1234, "sampling seed");
ABSL_FLAG(int64_t, vocab_size, 0, "real vocabulary; 0: from the checkpoint");

namespace {

int Fail(const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "sample: error: %s\n", line.c_str());
  return 1;
}

std::string DefaultCheckpoint() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string cache = xdg && *xdg ? std::string(xdg)
                                        : std::string(home ? home : ".") + "/.cache";
  return cache + "/mantissa/runs/gpt2-fortunes/latest";
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string path = absl::GetFlag(FLAGS_checkpoint);
  if (path.empty()) path = DefaultCheckpoint();
  const double temperature = absl::GetFlag(FLAGS_temperature);
  if (!(temperature >= 0) || absl::GetFlag(FLAGS_top_k) < 0 ||
      absl::GetFlag(FLAGS_tokens) < 0) {
    return Fail("--temperature, --top_k and --tokens must be >= 0");
  }
  auto ckpt = mnt::trainer::ReadCheckpoint(path);
  if (!ckpt.ok()) return Fail(std::string(ckpt.status().message()));
  auto sampler = mnt::gpt2::Gpt2Sampler::Create(
      *ckpt, absl::GetFlag(FLAGS_vocab_size), path);
  if (!sampler.ok()) return Fail(std::string(sampler.status().message()));
  const std::string prompt = absl::GetFlag(FLAGS_prompt);
  const bool bytes = (*sampler)->vocab() <= 256;
  if (!bytes) return Fail("only byte-level (vocab 256) checkpoints have a "
                          "tokenizer here; this one has vocab " +
                          std::to_string((*sampler)->vocab()));
  std::vector<int32_t> ids;
  for (unsigned char c : prompt) ids.push_back(c);
  mnt::gpt2::SampleOptions o;
  o.max_new_tokens = absl::GetFlag(FLAGS_tokens);
  o.temperature = static_cast<float>(temperature);
  o.top_k = absl::GetFlag(FLAGS_top_k);
  o.seed = absl::GetFlag(FLAGS_seed);
  auto out = (*sampler)->Generate(ids, o);
  if (!out.ok()) return Fail(std::string(out.status().message()));
  std::string text = prompt;
  for (int32_t t : *out) text.push_back(static_cast<char>(t));
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}
