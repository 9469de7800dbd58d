// import_llmc + export_llmc round-trip a synthetic llm.c checkpoint (random
// parameters, tiny config, hand-written header) bit for bit, for version 3
// (fp32) and version 5 (bf16); malformed files are refused with one line
// and leave an existing output untouched.
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace {

std::string g_import, g_export;

constexpr int64_t kT = 16, kV = 100, kVp = 128, kL = 2, kH = 2, kC = 8;
constexpr const char* kOptions = "n_layer=2,n_head=2,d_model=8,seq_len=16";

int64_t NumParams() {
  const int64_t per_layer = 2 * kC + 3 * kC * kC + 3 * kC + kC * kC + kC +
                            2 * kC + 4 * kC * kC + 4 * kC + 4 * kC * kC + kC;
  return kVp * kC + kT * kC + kL * per_layer + 2 * kC;
}

std::string Dir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

struct Result {
  int code;
  std::string err;
};

Result RunTool(const std::string& command) {
  const std::string err_path = Dir() + "/stderr.txt";
  const int rc = std::system((command + " >/dev/null 2>" + err_path).c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ReadFile(err_path)};
}

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A header as llm.c writes it, then random finite parameters (no NaN/inf:
// llm.c never writes them, and export quiets NaN payloads).
std::string Synthetic(int32_t version, std::mt19937_64& rng) {
  std::vector<int32_t> header(256, 0);
  header[0] = 20240326;
  header[1] = version;
  header[2] = kT;
  header[3] = kV;
  header[4] = kL;
  header[5] = kH;
  header[6] = kC;
  header[7] = kVp;
  std::string bytes(reinterpret_cast<const char*>(header.data()), 1024);
  std::uniform_int_distribution<uint32_t> bits;
  for (int64_t i = 0; i < NumParams(); ++i) {
    uint32_t u;
    do {
      u = bits(rng);
    } while ((u & 0x7f800000u) == 0x7f800000u);  // inf/NaN exponent
    if (version == 3) {
      bytes.append(reinterpret_cast<const char*>(&u), 4);
    } else {
      const uint16_t b = static_cast<uint16_t>(u >> 16);
      bytes.append(reinterpret_cast<const char*>(&b), 2);
    }
  }
  return bytes;
}

class LlmcRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    const unsigned seed = std::random_device{}();
    std::printf("seed = %u\n", seed);
    rng_.seed(seed);
  }
  std::string Import(const std::string& in, const std::string& out,
                     const std::string& options = kOptions) {
    return g_import + " --input=" + in + " --output=" + out +
           " --model_options=" + options;
  }
  std::mt19937_64 rng_;
};

TEST_F(LlmcRoundTrip, Fp32AndBf16BitForBit) {
  for (int32_t version : {3, 5}) {
    SCOPED_TRACE(version);
    const std::string bin = Dir() + "/in.bin", ckpt = Dir() + "/run" + std::to_string(version),
                      back = Dir() + "/back.bin";
    const std::string original = Synthetic(version, rng_);
    WriteFile(bin, original);
    Result r = RunTool(Import(bin, ckpt));
    ASSERT_EQ(r.code, 0) << r.err;
    r = RunTool(g_export + " --input=" + ckpt + " --output=" + back +
            (version == 3 ? " --dtype=fp32" : " --dtype=bf16"));
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string exported = ReadFile(back);
    ASSERT_EQ(exported.size(), original.size());
    EXPECT_TRUE(exported == original) << "bytes differ";
  }
}

TEST_F(LlmcRoundTrip, Fp32ToBf16RoundsToNearestEven) {
  const std::string bin = Dir() + "/in3.bin", ckpt = Dir() + "/ckpt3",
                    back = Dir() + "/back5.bin";
  const std::string original = Synthetic(3, rng_);
  WriteFile(bin, original);
  ASSERT_EQ(RunTool(Import(bin, ckpt)).code, 0);
  ASSERT_EQ(RunTool(g_export + " --input=" + ckpt + " --output=" + back +
                " --dtype=bf16").code, 0);
  const std::string b = ReadFile(back);
  ASSERT_EQ(b.size(), 1024 + 2 * NumParams());
  int32_t version;
  std::memcpy(&version, b.data() + 4, 4);
  EXPECT_EQ(version, 5);
  for (int64_t i = 0; i < NumParams(); ++i) {
    uint32_t u;
    uint16_t h;
    std::memcpy(&u, original.data() + 1024 + 4 * i, 4);
    std::memcpy(&h, b.data() + 1024 + 2 * i, 2);
    const uint32_t lsb = (u >> 16) & 1;  // ties to even
    const uint16_t expect = static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
    ASSERT_EQ(h, expect) << "element " << i;
  }
}

TEST_F(LlmcRoundTrip, MalformedFilesAreRefusedAndNothingIsOverwritten) {
  const std::string good = Synthetic(3, rng_);
  const std::string out = Dir() + "/existing";
  const std::string sentinel = "previous contents";
  struct Case {
    const char* name;
    std::string bytes;
    std::string options;
    const char* expect;
  };
  std::string bad_magic = good;
  bad_magic[0] ^= 1;
  std::string bad_version = good;
  bad_version[4] = 4;
  std::string bad_padding = good;
  const int32_t vp = 256;
  std::memcpy(&bad_padding[28], &vp, 4);
  const std::vector<Case> cases = {
      {"bad magic", bad_magic, kOptions, "magic"},
      {"wrong version", bad_version, kOptions, "version 4"},
      {"truncated", good.substr(0, good.size() - 3), kOptions, "truncated"},
      {"short header", good.substr(0, 100), kOptions, "truncated"},
      {"over-long", good + "xx", kOptions, "over-long"},
      {"padded vocab", bad_padding, kOptions, "padded_vocab_size"},
      {"layers", good, "n_layer=3,n_head=2,d_model=8,seq_len=16", "n_layer"},
      {"context", good, "n_layer=2,n_head=2,d_model=8,seq_len=32", "seq_len"},
      {"vocab", good, std::string(kOptions) + ",vocab=99", "vocab"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string bin = Dir() + "/bad.bin";
    WriteFile(bin, c.bytes);
    WriteFile(out, sentinel);
    const Result r = RunTool(Import(bin, out, c.options));
    EXPECT_NE(r.code, 0);
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("import_llmc: error:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
    EXPECT_EQ(ReadFile(out), sentinel);
  }
  // Export refuses a file that is not a Mantissa checkpoint.
  const std::string bin = Dir() + "/good.bin";
  WriteFile(bin, good);
  WriteFile(out, sentinel);
  const Result r =
      RunTool(g_export + " --input=" + bin + " --output=" + out);
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(ReadFile(out), sentinel);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IMPORT_TOOL EXPORT_TOOL\n", argv[0]);
    return 2;
  }
  g_import = argv[1];
  g_export = argv[2];
  return RUN_ALL_TESTS();
}
