#include "trainer/data/sentencepiece_text.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/io/atomic_file.h"
#include "trainer/data/text.h"
#include "trainer/data/token_shards.h"

namespace mnt::trainer {
namespace {

// A model that does not load: the one line names the file.
absl::Status ModelError(const std::string& model_path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--tokenizer_model=", model_path, ": not a SentencePiece model (", why, ")"));
}

// Where mnt_sentencepiece is: $MANTISSA_SENTENCEPIECE_TOOL, else the
// runfiles of this binary (or test), else beside the executable.
absl::StatusOr<std::string> ToolPath() {
  std::vector<std::string> tried;
  if (const char* e = std::getenv("MANTISSA_SENTENCEPIECE_TOOL"); e && *e) tried.push_back(e);
  constexpr char kInRunfiles[] = "/mantissa/trainer/data/mnt_sentencepiece";
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* e = std::getenv(var); e && *e) tried.push_back(std::string(e) + kInRunfiles);
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::string self(exe, static_cast<size_t>(n));
    tried.push_back(self + ".runfiles" + kInRunfiles);
    tried.push_back(self.substr(0, self.rfind('/') + 1) + "mnt_sentencepiece");
  }
  for (const std::string& p : tried) {
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  std::string list;
  for (const std::string& p : tried) list += (list.empty() ? "" : ", ") + p;
  return absl::FailedPreconditionError(absl::StrCat(
      "--tokenizer=sentencepiece: cannot find mnt_sentencepiece (tried: ", list,
      "; set $MANTISSA_SENTENCEPIECE_TOOL)"));
}

// A scratch file path under $TMPDIR (removed by the caller).
std::string ScratchPath(const char* what) {
  const char* t = std::getenv("TMPDIR");
  std::string path = absl::StrCat(t && *t ? t : "/tmp", "/mnt_sentencepiece_", what, "_XXXXXX");
  const int fd = mkstemp(path.data());
  if (fd >= 0) close(fd);
  return path;
}

struct ToolRun {
  int exit_code = -1;
  std::string out, err;  // stdout, and stderr's first line
};

// Runs mnt_sentencepiece with `args` (no shell), stdout and stderr captured.
absl::StatusOr<ToolRun> RunTool(const std::vector<std::string>& args) {
  auto tool = ToolPath();
  if (!tool.ok()) return tool.status();
  const std::string out_path = ScratchPath("out"), err_path = ScratchPath("err");
  std::vector<std::string> argv = {*tool};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("cannot start mnt_sentencepiece (fork failed)");
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_TRUNC);
    const int err = open(err_path.c_str(), O_WRONLY | O_TRUNC);
    if (out >= 0) dup2(out, 1);
    if (err >= 0) dup2(err, 2);
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ToolRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto read = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), {});
  };
  r.out = read(out_path);
  r.err = read(err_path);
  // SentencePiece logs as it trains; the message that matters is the last line.
  while (!r.err.empty() && r.err.back() == '\n') r.err.pop_back();
  r.err = r.err.substr(r.err.rfind('\n') == std::string::npos ? 0 : r.err.rfind('\n') + 1);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

// Encodes `text` with the model; *pieces 0 when the model did not load.
std::string Encode(const std::string& model, const std::string& text,
                   std::vector<int32_t>* ids, int* pieces) {
  const std::string in = ScratchPath("text"), out = ScratchPath("ids");
  {
    std::ofstream f(in, std::ios::binary);
    f << text;
  }
  auto r = RunTool({"encode", model, in, out});
  std::string error;
  if (!r.ok()) {
    error = std::string(r.status().message());
  } else if (r->exit_code != 0) {
    error = r->err.empty() ? "mnt_sentencepiece failed" : r->err;
  } else {
    *pieces = std::atoi(r->out.c_str());
    std::ifstream f(out, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), {});
    ids->resize(bytes.size() / 4);
    for (size_t i = 0; i < ids->size(); ++i) {
      uint32_t u = 0;
      for (int k = 3; k >= 0; --k) u = (u << 8) | static_cast<unsigned char>(bytes[4 * i + k]);
      (*ids)[i] = static_cast<int32_t>(u);
    }
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
  return error;
}

}  // namespace

absl::StatusOr<SentencePieceText> TokenizeWithSentencePiece(const std::string& text_path,
                                                            const SentencePieceOptions& o) {
  if (o.type != "bpe" && o.type != "unigram") {
    return absl::InvalidArgumentError(
        absl::StrCat("--tokenizer_type=", o.type, " is not bpe or unigram"));
  }
  auto joined = ReadTextFiles(text_path);
  if (!joined.ok()) return joined.status();
  const std::string* text = &joined->bytes;
  SentencePieceText out;
  out.model_path = o.model;
  if (out.model_path.empty()) {
    // Same text, type and size: the same file, trained once (FNV-1a: the
    // same key in every process, unlike absl::Hash's per-process seed).
    const uint64_t key = StableHash(absl::StrCat(o.type, "/", o.vocab, "/", *text));
    const std::string dir = absl::StrCat(o.cache_dir, "/tokenizers");
    const std::string prefix = absl::StrFormat("%s/%s-%d-%016x", dir, o.type, o.vocab, key);
    out.model_path = prefix + ".model";
    out.cache_key = std::filesystem::path(prefix).filename().string();
    if (!std::filesystem::exists(out.model_path)) {
      if (auto s = MakeDirectories(dir); !s.ok()) return s;
      // Trained into a temp prefix, then renamed: a killed run leaves no
      // half model under the name later runs reuse.
      const std::string tmp = absl::StrCat(prefix, ".tmp");
      // SentencePiece reads a file: several are trained on as joined.
      std::string input = joined->files[0];
      if (joined->files.size() > 1) {
        input = ScratchPath("joined");
        std::ofstream f(input, std::ios::binary);
        f << *text;
        f.close();
        if (!f) {
          std::remove(input.c_str());
          return absl::InternalError(absl::StrCat("cannot write the joined text to ", input));
        }
      }
      const std::string args = absl::StrCat(
          "--input=", input, " --model_prefix=", tmp, " --model_type=", o.type,
          " --vocab_size=", o.vocab,
          " --character_coverage=1.0 --byte_fallback=true --split_digits=true"
          " --max_sentence_length=1000000 --num_threads=2 --minloglevel=2"
          " --normalization_rule_name=identity --remove_extra_whitespaces=false");
      auto run = RunTool({"train", args});
      if (input != joined->files[0]) std::remove(input.c_str());
      if (!run.ok()) return run.status();
      if (run->exit_code != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            text_path, ": SentencePiece cannot train a ", o.type, " model of ", o.vocab,
            " pieces on it (", run->err, "); try a smaller --vocab_size"));
      }
      std::error_code ec;
      std::filesystem::rename(tmp + ".model", out.model_path, ec);
      std::filesystem::remove(tmp + ".vocab", ec);
      if (ec) return absl::InternalError(absl::StrCat("cannot keep ", out.model_path));
      out.trained = true;
    }
  }
  int pieces = 0;
  if (const std::string e = Encode(out.model_path, *text, &out.tokens.tokens, &pieces);
      !e.empty()) {
    return pieces == 0 ? ModelError(out.model_path, e)
                       : absl::InternalError(absl::StrCat(
                             text_path, ": SentencePiece encoding failed (", e, ")"));
  }
  out.tokens.vocab = pieces;
  if (out.cache_key.empty()) {
    std::string model;
    if (auto s = ReadWholeFile(out.model_path, &model); !s.ok()) return s;
    out.cache_key = absl::StrFormat("model-%d-%016x",
                                    pieces, StableHash(absl::StrCat(model, "/", *text)));
  }
  return out;
}

absl::StatusOr<std::string> DecodeWithSentencePiece(const std::string& model_path,
                                                    const std::vector<int32_t>& ids) {
  const std::string in = ScratchPath("ids"), out = ScratchPath("text");
  {
    std::ofstream f(in, std::ios::binary);
    for (int32_t id : ids) {
      const uint32_t u = static_cast<uint32_t>(id);
      for (int k = 0; k < 4; ++k) f.put(static_cast<char>((u >> (8 * k)) & 0xff));
    }
  }
  auto r = RunTool({"decode", model_path, in, out});
  std::string text;
  if (r.ok() && r->exit_code == 0) {
    std::ifstream f(out, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return ModelError(model_path, r->err);
  return text;
}

absl::StatusOr<std::vector<int32_t>> EncodeWithSentencePiece(const std::string& model_path,
                                                             const std::string& text) {
  std::vector<int32_t> ids;
  int pieces = 0;
  if (const std::string e = Encode(model_path, text, &ids, &pieces); !e.empty()) {
    return ModelError(model_path, e);
  }
  return ids;
}

absl::StatusOr<int64_t> SentencePieceVocab(const std::string& model_path) {
  std::vector<int32_t> ids;
  int pieces = 0;
  if (const std::string e = Encode(model_path, "", &ids, &pieces); !e.empty()) {
    return ModelError(model_path, e);
  }
  return pieces;
}

}  // namespace mnt::trainer
