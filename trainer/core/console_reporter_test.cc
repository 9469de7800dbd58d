// The console as a user sees it: a bar that never reaches the terminal's
// last column at any width and drops fields in order, plain lines with
// percent/elapsed/ETA, and rates that never print as "0".
#include "trainer/core/console_reporter.h"

#include <cstdio>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

StepMetrics Step(int64_t step, int64_t total) {
  StepMetrics m;
  m.step = step;
  m.total_steps = total;
  m.loss = 2.45678;
  m.lr = 8.1e-4;
  m.loss_scale = 32768;
  m.skipped_steps = 3;
  m.samples_per_second = 312.5;
  m.tokens_per_second = 20000;
  m.elapsed_seconds = 65;
  return m;
}

TEST(ProgressLineTest, FitsEveryWidthAndNeverWraps) {
  for (int width = 1; width <= 240; ++width) {
    const std::string line = FormatProgressLine(Step(135, 300), 0, width);
    EXPECT_LT(static_cast<int>(line.size()), std::max(2, width)) << width << ": " << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.find('\r'), std::string::npos);
  }
}

TEST(ProgressLineTest, WideShowsEverything) {
  const std::string line = FormatProgressLine(Step(135, 300), 0, 200);
  for (const char* field : {"[", " 45%", "135/300", "loss 2.4568", "lr 8.10e-04",
                            "scale 32768 skipped 3", "20.0k tok/s", "1:05", "eta 1:19"}) {
    EXPECT_TRUE(absl::StrContains(line, field)) << field << " in " << line;
  }
}

TEST(ProgressLineTest, FieldsDropInOrderAsTheTerminalNarrows) {
  // At 80 columns (the issue: a 115-character line wrapped there) the
  // essentials stay.
  const std::string at80 = FormatProgressLine(Step(135, 300), 0, 80);
  EXPECT_LE(at80.size(), 79u);
  for (const char* field : {"45%", "135/300", "loss 2.4568", "eta 1:19"}) {
    EXPECT_TRUE(absl::StrContains(at80, field)) << field << " in " << at80;
  }
  // Least useful first: the scale goes before the lr, the lr before the
  // throughput, then the bar, the ETA, the loss.
  const std::vector<std::string> order = {"scale", "lr ", "tok/s", "]", "eta", "loss"};
  size_t last_dropped = 0;
  for (int width = 200; width >= 20; --width) {
    const std::string line = FormatProgressLine(Step(135, 300), 0, width);
    size_t dropped = 0;
    while (dropped < order.size() && !absl::StrContains(line, order[dropped])) ++dropped;
    for (size_t i = dropped; i < order.size(); ++i) {
      EXPECT_TRUE(absl::StrContains(line, order[i]))
          << "width " << width << ": " << order[i] << " dropped out of order: " << line;
    }
    EXPECT_GE(dropped, last_dropped);
    last_dropped = dropped;
    EXPECT_TRUE(absl::StrContains(line, "135/300")) << line;
  }
}

TEST(ProgressLineTest, NoScaleFieldWithoutLossScaling) {
  StepMetrics m = Step(10, 100);
  m.loss_scale = 1;
  m.skipped_steps = 0;
  EXPECT_FALSE(absl::StrContains(FormatProgressLine(m, 0, 200), "scale"));
  EXPECT_FALSE(absl::StrContains(FormatStepLine(m, 0), "scale"));
}

TEST(ProgressLineTest, EtaCountsFromTheResumedStep) {
  // Resumed at 100: 35 steps in 65 s, 165 to go.
  const std::string line = FormatStepLine(Step(135, 300), 100);
  EXPECT_TRUE(absl::StrContains(line, "eta 5:06")) << line;
  EXPECT_TRUE(absl::StrContains(line, "step 135/300 (45.0%)")) << line;
  EXPECT_TRUE(absl::StrContains(line, "elapsed 1:05")) << line;
}

TEST(FormatTest, RatesKeepThreeSignificantDigits) {
  EXPECT_EQ(FormatRate(20534.4), "20534");
  EXPECT_EQ(FormatRate(87.34), "87.3");
  EXPECT_EQ(FormatRate(3.14159), "3.14");
  EXPECT_EQ(FormatRate(0.41234), "0.412");
  EXPECT_EQ(FormatRate(0.0004123), "0.000412");
  EXPECT_EQ(FormatRateShort(20534.4), "20.5k");
  EXPECT_EQ(FormatRateShort(2.5e6), "2.50M");
  EXPECT_EQ(FormatRateShort(20000), "20.0k");
  EXPECT_EQ(FormatDuration(59.6), "1:00");
  EXPECT_EQ(FormatDuration(3600 * 12 + 7), "12:00:07");
}

std::string Captured(ProgressStyle style, int64_t log_every) {
  FILE* f = std::tmpfile();
  {
    ConsoleReporter r(f, style, log_every, /*width=*/60);
    for (int step = 1; step <= 5; ++step) {
      StepMetrics m = Step(step, 5);
      m.skipped = step == 2;
      m.elapsed_seconds = step;  // each redraw is due
      if (r.NeedsStepMetrics(step, 5) || style == ProgressStyle::kPlain) r.OnStep(m);
    }
    r.OnMessage("done");
  }
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

TEST(ConsoleReporterTest, PlainLinesAtLogEveryPlusSkipsFirstAndLast) {
  const std::string out = Captured(ProgressStyle::kPlain, 4);
  EXPECT_TRUE(absl::StrContains(out, "step 1/5")) << out;
  EXPECT_TRUE(absl::StrContains(out, "step 2/5 (40.0%)")) << out;  // skipped
  EXPECT_TRUE(absl::StrContains(out, "(step skipped: non-finite gradients)")) << out;
  EXPECT_FALSE(absl::StrContains(out, "step 3/5")) << out;
  EXPECT_TRUE(absl::StrContains(out, "step 4/5")) << out;
  EXPECT_TRUE(absl::StrContains(out, "step 5/5")) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
}

TEST(ConsoleReporterTest, BarRedrawsInPlaceAndClearsItselfForMessages) {
  const std::string out = Captured(ProgressStyle::kBar, 4);
  EXPECT_TRUE(absl::StrContains(out, "\r\033[K[")) << out;
  EXPECT_TRUE(absl::StrContains(out, "5/5")) << out;
  // The message replaces the bar on its line (no stale bar above it); the
  // bar is drawn again below and stays when the run ends.
  const size_t done = out.find("\r\033[Kdone\n");
  ASSERT_NE(done, std::string::npos) << out;
  const std::string after = out.substr(done + std::string("\r\033[Kdone\n").size());
  EXPECT_TRUE(absl::StrContains(after, "5/5")) << after;
  EXPECT_TRUE(absl::EndsWith(after, "\n")) << after;
  EXPECT_EQ(out.substr(0, done).find('\n'), std::string::npos)
      << "a line was ended before the message: the bar was left above it\n" << out;
  // Every redraw fits the 60 columns it was given.
  for (const auto& piece : absl::StrSplit(out, '\r')) {
    std::string line(piece);
    if (absl::StartsWith(line, "\033[K")) line = line.substr(3);
    line = line.substr(0, line.find('\n'));
    EXPECT_LE(line.size(), 59u) << line;
  }
}

TEST(ConsoleReporterTest, NoneDropsStepsAndEvaluationsButNotMessages) {
  const std::string out = Captured(ProgressStyle::kNone, 1);
  EXPECT_FALSE(absl::StrContains(out, "step ")) << out;
  EXPECT_EQ(out, "done\n");
  FILE* f = std::tmpfile();
  {
    ConsoleReporter r(f, ProgressStyle::kNone, 1);
    EvalMetrics e;
    e.step = 5;
    r.OnEval(e);
  }
  EXPECT_EQ(std::ftell(f), 0);
  std::fclose(f);
}

TEST(ProgressStyleTest, AutoIsTheBarOnATerminalUnlessLaunched) {
  EXPECT_EQ(ResolveProgressStyle("auto", true, false), ProgressStyle::kBar);
  EXPECT_EQ(ResolveProgressStyle("auto", false, false), ProgressStyle::kPlain);
  // mpirun's or srun's pty is no terminal of the user's.
  EXPECT_EQ(ResolveProgressStyle("auto", true, true), ProgressStyle::kPlain);
  EXPECT_EQ(ResolveProgressStyle("bar", false, true), ProgressStyle::kBar);
  EXPECT_EQ(ResolveProgressStyle("none", true, false), ProgressStyle::kNone);
  EXPECT_EQ(ResolveProgressStyle("plain", true, false), ProgressStyle::kPlain);
}

}  // namespace
}  // namespace mnt::trainer
