// Event files read back record by record: the version record first, then
// scalars and text with their tags, steps and values; the sink writes the
// tags documented in tensorboard_sink.h.
#include "trainer/tensorboard/event_writer.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "trainer/tensorboard/tensorboard_sink.h"
#include "trainer/tensorboard/tfrecord.h"

namespace mnt::tensorboard {
namespace {

namespace fs = std::filesystem;
using mantissa::tensorboard::Event;

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  static int n = 0;
  const std::string dir =
      std::string(tmp ? tmp : "/tmp") + "/" + name + std::to_string(n++);
  fs::remove_all(dir);
  return dir;
}

std::vector<Event> ReadEvents(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(f), {});
  auto records = ReadRecords(bytes);
  EXPECT_TRUE(records.ok()) << records.status();
  std::vector<Event> events;
  if (!records.ok()) return events;
  for (const std::string& r : *records) {
    Event e;
    EXPECT_TRUE(e.ParseFromString(r));
    events.push_back(e);
  }
  return events;
}

TEST(EventWriterTest, VersionRecordThenScalarsAndText) {
  const std::string dir = FreshDir("events") + "/nested/run";
  auto w = EventFileWriter::Create(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(absl::StrContains(fs::path((*w)->path()).filename().string(),
                                "events.out.tfevents."));
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> value(-1e3f, 1e3f);
  std::vector<float> written;
  for (int step = 1; step <= 5; ++step) {
    written.push_back(value(rng));
    ASSERT_TRUE((*w)->AddScalar("train/loss", step, written.back(), 1.5e9 + step).ok());
  }
  ASSERT_TRUE((*w)->AddText("run/config", 0, "steps: 5", 1.5e9).ok());
  ASSERT_TRUE((*w)->Flush().ok());

  // Readable while the writer is still open: TensorBoard tails live files.
  const std::vector<Event> events = ReadEvents((*w)->path());
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.6e9);  // now, in seconds since 1970
  for (int i = 0; i < 5; ++i) {
    const Event& e = events[1 + i];
    EXPECT_EQ(e.step(), i + 1);
    EXPECT_EQ(e.wall_time(), 1.5e9 + i + 1);
    ASSERT_EQ(e.summary().value_size(), 1);
    EXPECT_EQ(e.summary().value(0).tag(), "train/loss");
    EXPECT_EQ(e.summary().value(0).simple_value(), written[i]);  // exact: fp32 both ways
  }
  const auto& text = events[6].summary().value(0);
  EXPECT_EQ(text.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(text.tensor().dtype(), 7);  // DT_STRING
  ASSERT_EQ(text.tensor().string_val_size(), 1);
  EXPECT_EQ(text.tensor().string_val(0), "steps: 5");
}

TEST(EventWriterTest, EveryWriterGetsItsOwnFile) {
  const std::string dir = FreshDir("two");
  auto a = EventFileWriter::Create(dir);
  auto b = EventFileWriter::Create(dir);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->path(), (*b)->path());
  ASSERT_TRUE((*a)->AddScalar("x", 1, 1.0, 0).ok());
  ASSERT_TRUE((*a)->Flush().ok());
  EXPECT_EQ(ReadEvents((*a)->path()).size(), 2u);
  EXPECT_EQ(ReadEvents((*b)->path()).size(), 1u);
}

TEST(EventWriterTest, UnusableDirectoryIsOneClearError) {
  const std::string dir = FreshDir("file");
  fs::create_directories(dir);
  std::ofstream(dir + "/plain") << "x";
  auto w = EventFileWriter::Create(dir + "/plain/run");
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(absl::StrContains(w.status().message(), dir + "/plain/run"))
      << w.status();
}

TEST(TensorBoardSinkTest, WritesTheDocumentedTags) {
  const std::string dir = FreshDir("sink");
  auto sink = TensorBoardSink::Create(dir, /*log_every=*/3);
  ASSERT_TRUE(sink.ok()) << sink.status();
  trainer::RunHeader header;
  header.model = "mlp";
  header.precision = "fp16";
  header.config_text = "steps: 4\n";
  header.plugins.push_back({"model", "mlp", "1.4", "/x/mnt_model_mlp.so", ""});
  (*sink)->OnStart(header);
  // First, last and every third step.
  EXPECT_TRUE((*sink)->NeedsStepMetrics(1, 5));
  EXPECT_FALSE((*sink)->NeedsStepMetrics(2, 5));
  EXPECT_TRUE((*sink)->NeedsStepMetrics(3, 5));
  EXPECT_FALSE((*sink)->NeedsStepMetrics(4, 5));
  EXPECT_TRUE((*sink)->NeedsStepMetrics(5, 5));
  for (int step = 1; step <= 5; ++step) {
    trainer::StepMetrics m;
    m.step = step;
    m.total_steps = 5;
    m.loss = 3.0 - step * 0.25;
    m.lr = 1e-3;
    m.loss_scale = 65536;
    m.skipped = step == 2;  // not asked for, but a skip is always written
    m.skipped_steps = step >= 2 ? 1 : 0;
    m.grad_norm = 0.5;
    m.samples_per_second = 1000;
    m.tokens_per_second = 64000;
    (*sink)->OnStep(m);
  }
  (*sink)->OnEval({4, 2.25, 0.5, 100});
  trainer::FinalReport r;
  r.steps = 4;
  r.memory = {{"activations", 0, 3 << 20}, {"total", 0, 5 << 20}};
  r.samples_per_second = 900;
  (*sink)->OnFinish(r);
  ASSERT_TRUE((*sink)->status().ok()) << (*sink)->status();

  std::map<std::string, std::map<int64_t, float>> scalars;
  std::string text;
  for (const Event& e : ReadEvents((*sink)->path())) {
    for (const auto& v : e.summary().value()) {
      if (v.has_tensor()) {
        text = v.tensor().string_val(0);
      } else {
        scalars[v.tag()][e.step()] = v.simple_value();
      }
    }
  }
  EXPECT_EQ(scalars["train/loss"],
            (std::map<int64_t, float>{{1, 2.75f}, {2, 2.5f}, {3, 2.25f}, {5, 1.75f}}));
  EXPECT_EQ(scalars["train/loss_scale"][5], 65536.0f);
  EXPECT_EQ(scalars["train/skipped_steps"][5], 1.0f);
  // No norm for the skipped step.
  EXPECT_EQ(scalars["train/grad_norm"],
            (std::map<int64_t, float>{{1, 0.5f}, {3, 0.5f}, {5, 0.5f}}));
  EXPECT_EQ(scalars["train/tokens_per_second"][2], 64000.0f);
  EXPECT_EQ(scalars["eval/loss"][4], 2.25f);
  EXPECT_EQ(scalars["eval/accuracy"][4], 0.5f);
  EXPECT_EQ(scalars["memory/activations_peak_mib"][4], 3.0f);
  EXPECT_EQ(scalars["memory/total_peak_mib"][4], 5.0f);
  EXPECT_EQ(scalars["summary/samples_per_second"][4], 900.0f);
  EXPECT_TRUE(absl::StrContains(text, "fp16")) << text;
  EXPECT_TRUE(absl::StrContains(text, "mnt_model_mlp.so")) << text;
  EXPECT_TRUE(absl::StrContains(text, "    steps: 4")) << text;
}

}  // namespace
}  // namespace mnt::tensorboard
