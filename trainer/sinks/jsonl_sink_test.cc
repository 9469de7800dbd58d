// JSON lines as documented (docs/metrics.md): one object per line, numbers
// that read back exactly, a new file per run with the old one kept, and
// appending when resumed.
#include "trainer/sinks/jsonl_sink.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "trainer/sinks/fanout_sink.h"
#include "trainer/sinks/json.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<std::string> Lines(const std::string& path) {
  return absl::StrSplit(Slurp(path), '\n', absl::SkipEmpty());
}

std::string FreshPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir + "/metrics.jsonl";
}

TEST(JsonTest, StringsAreEscaped) {
  EXPECT_EQ(JsonString("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
}

TEST(JsonTest, NumbersReadBackExactly) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> d(-10, 10);
  for (int i = 0; i < 1000; ++i) {
    const double v = std::ldexp(d(rng), static_cast<int>(rng() % 200) - 100);
    EXPECT_EQ(std::strtod(JsonNumber(v).c_str(), nullptr), v) << JsonNumber(v);
  }
  EXPECT_EQ(JsonNumber(NAN), "\"nan\"");
  EXPECT_EQ(JsonNumber(-INFINITY), "\"-inf\"");
}

RunHeader Header() {
  RunHeader h;
  h.wall_time = 1.7e9;
  h.model = "gpt2";
  h.precision = "bf16";
  h.device = "cpu";
  h.backend = "cpu: test \"cpu\"";
  h.total_steps = 3;
  h.config_json = "{\"steps\":\"3\"}";
  h.plugins.push_back({"backend", "cpu", "1.4", "/p/mnt_backend_cpu.so", "CPU"});
  h.versions.push_back({"mantissa_abi", "1.4"});
  return h;
}

TEST(JsonlSinkTest, RecordsCarryTheDocumentedFields) {
  const std::string path = FreshPath("fields");
  auto sink = JsonlSink::Create(path, /*append=*/false);
  ASSERT_TRUE(sink.ok()) << sink.status();
  EXPECT_EQ((*sink)->kept_previous(), "");
  FanoutSink fanout;
  fanout.Add(sink->get());
  fanout.OnStart(Header());
  StepMetrics m;
  m.step = 1;
  m.loss = 2.5;
  m.lr = 1e-3;
  m.tokens_per_second = 12345.5;
  fanout.OnStep(m);
  m.step = 2;
  m.skipped = true;
  fanout.OnStep(m);
  fanout.OnEval({2, 2.25, 0.5, 100});
  fanout.OnMessage("checkpoint: x");
  FinalReport r;
  r.steps = 2;
  r.memory = {{"activations", 10, 20}};
  r.phases = {{"forward", 0.5}};
  fanout.OnFinish(r);
  ASSERT_TRUE((*sink)->ok());
  sink->reset();

  const std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 6u);
  for (const std::string& l : lines) {
    EXPECT_TRUE(l.front() == '{' && l.back() == '}') << l;
    EXPECT_TRUE(absl::StrContains(l, "\"time\":")) << l;
  }
  EXPECT_TRUE(absl::StartsWith(lines[0], "{\"type\":\"run\""));
  for (const char* field :
       {"\"precision\":\"bf16\"", "\"device\":\"cpu\"", "\"backend\":\"cpu: test \\\"cpu\\\"\"",
        "\"abi_version\":\"1.4\"", "\"file\":\"/p/mnt_backend_cpu.so\"",
        "\"config\":{\"steps\":\"3\"}", "\"versions\":{\"mantissa_abi\":\"1.4\"}",
        "\"resumed_from\":null"}) {
    EXPECT_TRUE(absl::StrContains(lines[0], field)) << field << " in " << lines[0];
  }
  EXPECT_TRUE(absl::StrContains(lines[1], "\"type\":\"train\""));
  EXPECT_TRUE(absl::StrContains(lines[1], "\"loss\":2.5,"));
  EXPECT_TRUE(absl::StrContains(lines[1], "\"tokens_per_second\":12345.5"));
  EXPECT_TRUE(absl::StrContains(lines[2], "\"grad_norm\":null")) << lines[2];
  EXPECT_TRUE(absl::StrContains(lines[3], "\"eval_loss\":2.25"));
  EXPECT_TRUE(absl::StrContains(lines[4], "\"text\":\"checkpoint: x\""));
  EXPECT_TRUE(absl::StrContains(lines[5], "\"activations\":{\"current\":10,\"peak\":20}"));
  EXPECT_TRUE(absl::StrContains(lines[5], "\"phase_seconds\":{\"forward\":0.5}"));
}

TEST(JsonlSinkTest, NewRunKeepsTheOldFileAndResumeAppends) {
  const std::string path = FreshPath("runs");
  for (int run = 0; run < 3; ++run) {
    auto sink = JsonlSink::Create(path, /*append=*/false);
    ASSERT_TRUE(sink.ok()) << sink.status();
    EXPECT_EQ((*sink)->kept_previous(), run == 0 ? "" : path + "." + std::to_string(run));
    (*sink)->OnMessage("run " + std::to_string(run));
  }
  EXPECT_TRUE(absl::StrContains(Slurp(path + ".1"), "run 0"));
  EXPECT_TRUE(absl::StrContains(Slurp(path + ".2"), "run 1"));
  {
    auto sink = JsonlSink::Create(path, /*append=*/true);
    ASSERT_TRUE(sink.ok());
    EXPECT_EQ((*sink)->kept_previous(), "");
    (*sink)->OnMessage("resumed");
  }
  const std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(absl::StrContains(lines[0], "run 2"));
  EXPECT_TRUE(absl::StrContains(lines[1], "resumed"));
}

TEST(JsonlSinkTest, UnwritablePathIsOneError) {
  auto sink = JsonlSink::Create("/nonexistent/dir/m.jsonl", false);
  ASSERT_FALSE(sink.ok());
  EXPECT_TRUE(absl::StrContains(sink.status().message(), "/nonexistent/dir/m.jsonl"));
}

}  // namespace
}  // namespace mnt::trainer
