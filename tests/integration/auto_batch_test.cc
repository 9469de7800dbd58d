// --batch_size=auto through the real binaries: the batch train chooses is
// the largest one //tools/memory:estimate (the same dry run, another binary)
// puts at or under --memory_limit_gb, and one example more is over it; with
// --global_batch_size the rest is gradient accumulation, and the run saves
// the resolved plan; bad combinations are one line.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace mnt::trainer {
namespace {

using testing::RunfilesRoot;
using testing::TempDir;
using testing::ReadWholeFile;
using Result = testing::SplitRun;

Result Train(const std::string& args) {
  return testing::RunFromRunfiles("trainer/cli/train",
             absl::StrCat("--device=cpu --cache_dir=", TempDir(), "/cache --model=mlp "
                          "--dataset=digits --progress=plain --eval_every=0 ",
                          args));
}

// The estimate tool's total for the MLP on digits examples (8x8 images,
// 10 classes: what --dataset=digits gives) at each batch size.
std::map<int64_t, int64_t> EstimatedTotals(const std::string& precision,
                                           const std::vector<int64_t>& batches) {
  std::string list;
  for (int64_t b : batches) absl::StrAppend(&list, list.empty() ? "" : ",", b);
  const Result r = testing::RunFromRunfiles("tools/memory/estimate",
                       absl::StrCat("--model=mlp --format=csv --precisions=", precision,
                                    " --batch_sizes=", list));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<int64_t, int64_t> totals;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (f.size() == 5 && f[1] == precision && f[3] == "total" && !f[2].empty()) {
      totals[std::stoll(f[2])] = std::stoll(f[4]);
    }
  }
  return totals;
}

// --memory_limit_gb for exactly `bytes` (the trainer rounds GB x 1e9).
std::string LimitFlag(int64_t bytes) {
  return absl::StrFormat("--memory_limit_gb=%.9f", static_cast<double>(bytes) / 1e9);
}

int64_t ChosenBatch(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("batch size: auto chose (\\d+) per micro-batch"))) {
    return -1;
  }
  return std::stoll(m[1]);
}

void ExpectOneLineError(const Result& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0);
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << r.err;
  EXPECT_TRUE(absl::StartsWith(err, "mantissa: error: ")) << r.err;
  EXPECT_TRUE(absl::StrContains(err, needle)) << "wanted '" << needle << "' in " << r.err;
}

TEST(AutoBatchTest, ChoosesTheLargestBatchTheEstimatorFits) {
  // Limits between the estimate at b and at b + 1, for a few b.
  for (const std::string precision : {"fp32", "bf16"}) {
    const auto totals = EstimatedTotals(precision, {1, 37, 38, 150, 151});
    ASSERT_EQ(totals.size(), 5u);
    for (int64_t b : {37, 150}) {
      ASSERT_LT(totals.at(b), totals.at(b + 1)) << "the estimate grows with the batch";
      const int64_t limit = totals.at(b) + (totals.at(b + 1) - totals.at(b)) / 2;
      const Result r =
          Train(absl::StrCat("--precision=", precision, " --batch_size=auto ", LimitFlag(limit),
                             " --dry_run"));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(ChosenBatch(r.out), b) << r.out;
      // The dry run that follows is of that batch, and says the same peak.
      EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("batch size ", b, ",")) ||
                  absl::StrContains(r.out, absl::StrCat("batch size ", b, " ")))
          << r.out;
      EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("(", totals.at(b), " bytes)"))) << r.out;
      EXPECT_TRUE(absl::StrContains(
          r.out, absl::StrCat(b + 1, " would take ")))
          << r.out;
      EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("(", totals.at(b + 1), " bytes)")))
          << r.out;
      // Exactly at the estimate still fits; one byte under does not.
      const Result at = Train(absl::StrCat("--precision=", precision, " --batch_size=auto ",
                                           LimitFlag(totals.at(b)), " --dry_run"));
      EXPECT_EQ(ChosenBatch(at.out), b) << at.out << at.err;
      const Result under = Train(absl::StrCat("--precision=", precision, " --batch_size=auto ",
                                              LimitFlag(totals.at(b) - 1), " --dry_run"));
      EXPECT_EQ(ChosenBatch(under.out), b - 1) << under.out << under.err;
    }
  }
}

TEST(AutoBatchTest, GlobalBatchIsFilledWithAccumulationAndTheRunSavesThePlan) {
  const auto totals = EstimatedTotals("fp32", {100, 101});
  const int64_t limit = totals.at(100) + (totals.at(101) - totals.at(100)) / 2;
  // 100 fits; 300 = 3 x 100, 210 = 3 x 70 (the largest divisor within 100).
  for (const auto& [global, batch] : std::vector<std::pair<int64_t, int64_t>>{{300, 100},
                                                                               {210, 70}}) {
    const std::string dir = absl::StrCat(TempDir(), "/auto_", global);
    const Result r = Train(absl::StrCat("--precision=fp32 --batch_size=auto ", LimitFlag(limit),
                                        " --global_batch_size=", global,
                                        " --steps=2 --checkpoint_dir=", dir));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ChosenBatch(r.out), batch) << r.out;
    EXPECT_TRUE(absl::StrContains(
        r.out, absl::StrCat("auto chose ", batch, " per micro-batch x ", global / batch,
                            " micro-batches (global batch ", global, ")")))
        << r.out;
    const std::string saved = ReadWholeFile(dir + "/train_config.txtpb");
    EXPECT_TRUE(absl::StrContains(saved, absl::StrCat("batch_size: ", batch))) << saved;
    EXPECT_TRUE(absl::StrContains(saved, absl::StrCat("grad_accum_steps: ", global / batch)))
        << saved;
    EXPECT_TRUE(absl::StrContains(saved, "auto_batch_size: false")) << saved;
  }
}

TEST(AutoBatchTest, DefaultLimitIsAvailableRamLessTheMargin) {
  const Result r = Train("--precision=fp32 --batch_size=auto --dry_run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "available RAM (MemAvailable)")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "less a margin of")) << r.out;
  // Digits' training examples all fit in a few GiB.
  EXPECT_TRUE(absl::StrContains(r.out, "capped at the ")) << r.out;
}

TEST(AutoBatchTest, BadCombinationsAreOneLine) {
  ExpectOneLineError(Train("--precision=fp32 --batch_size=auto --memory_limit_gb=0.000001 "
                           "--dry_run"),
                     "not even batch size 1 fits");
  ExpectOneLineError(Train("--precision=fp32 --batch_size=auto --batch_size=8 --dry_run"),
                     "disagree");
  ExpectOneLineError(Train("--precision=fp32 --batch_size=auto --memory_limit_gb=-1 --dry_run"),
                     "memory_limit_gb");
  const auto totals = EstimatedTotals("fp32", {100});
  ExpectOneLineError(Train(absl::StrCat("--precision=fp32 --batch_size=auto --global_batch_size=300 "
                                        "--grad_accum_steps=2 --dry_run ",
                                        LimitFlag(totals.at(100)))),
                     "leave it out");
}

}  // namespace
}  // namespace mnt::trainer
