// Turns plain text into llm.c token shards with the byte-level tokenizer:
//   tokenize --input=book.txt --output_prefix=/data/book [--val_fraction=0.1]
//            [--shard_tokens=100000000]
// writes <prefix>_val_000.bin (the last val_fraction of the text) and
// <prefix>_train_000.bin, _001.bin, ... of at most shard_tokens each.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "trainer/io/atomic_file.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/data/token_shards.h"

ABSL_FLAG(std::string, input, "", "Plain text file");
ABSL_FLAG(std::string, output_prefix, "", "Shard path prefix");
ABSL_FLAG(double, val_fraction, 0.1, "Fraction of the text (at the end) for validation");
ABSL_FLAG(int64_t, shard_tokens, 100000000, "Tokens per training shard");

namespace {

int Fail(const std::string& message) { return mnt::trainer::ToolError("tokenize", message); }

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "tokenize",
          "turns plain text into llm.c token shards (byte-level):\n"
          "  tokenize --input=book.txt --output_prefix=/data/book "
          "[--val_fraction=0.1] [--shard_tokens=100000000]",
          &argv0);
      code >= 0) {
    return code;
  }
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string prefix = absl::GetFlag(FLAGS_output_prefix);
  const double val = absl::GetFlag(FLAGS_val_fraction);
  const int64_t per_shard = absl::GetFlag(FLAGS_shard_tokens);
  if (input.empty() || prefix.empty()) return Fail("--input and --output_prefix are required");
  if (!(val >= 0 && val < 1)) return Fail("--val_fraction must be in [0, 1)");
  if (per_shard < 1 || per_shard > 2000000000) return Fail("--shard_tokens must be in [1, 2e9]");
  // Each byte becomes an int32 token before the shards are written: 1 GiB of
  // text is already 5 GiB in memory. Larger corpora: split the text first.
  constexpr int64_t kMaxInputBytes = int64_t{1} << 30;
  std::string text;
  const absl::Status read = mnt::trainer::ReadWholeFile(input, &text, kMaxInputBytes);
  if (!read.ok()) return Fail(std::string(read.message()));
  if (text.empty()) return Fail(input + ": empty");
  const std::vector<int32_t> tokens = mnt::trainer::ByteTokens(text);
  const size_t n_val = static_cast<size_t>(val * tokens.size());
  const size_t n_train = tokens.size() - n_val;
  if (n_val > 0) {
    const std::string path = prefix + "_val_000.bin";
    auto s = mnt::trainer::WriteTokenShard(
        path, std::vector<int32_t>(tokens.begin() + n_train, tokens.end()));
    if (!s.ok()) return Fail(std::string(s.message()));
    std::printf("%s: %zu tokens\n", path.c_str(), n_val);
  }
  for (size_t start = 0, i = 0; start < n_train; start += per_shard, ++i) {
    const size_t end = std::min(n_train, start + static_cast<size_t>(per_shard));
    const std::string path = absl::StrFormat("%s_train_%03d.bin", prefix, i);
    auto s = mnt::trainer::WriteTokenShard(
        path, std::vector<int32_t>(tokens.begin() + start, tokens.begin() + end));
    if (!s.ok()) return Fail(std::string(s.message()));
    std::printf("%s: %zu tokens\n", path.c_str(), end - start);
  }
  return 0;
}
