// Data-parallel training end to end: the train binary under Open MPI's
// `mpirun --oversubscribe -np N` on the CPU backend (its collectives over
// MPI). What one rank with the whole global batch would compute is the
// reference, and every N-rank run must land on it:
//   - N = 2, 3 ranks x batch b against 1 rank x batch N*b, 30 steps: every
//     step's loss and the final weights within 1e-6 relative in fp32, within
//     the precision's 1e-2 in bf16/fp16 (the 16-bit gradients of b examples
//     round differently from those of N*b);
//   - two identical N-rank runs give the same bits;
//   - an overflow injected into one rank's gradient skips the step on every
//     rank (rank 0 reports it; the ranks' states are compared at the end);
//   - kill -9 of one rank ends the job within 60 s naming it, and --resume
//     then continues bit for bit (same N) or within 1e-6 (1 rank, N*b);
//   - ranks that start with different settings are refused with one line.
// The MLP on digits keeps each run to a second or two.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/mpi_launch.h"
#include "tests/integration/test_env.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

using ::mnt::testing::Mpirun;
using testing::RunfilesRoot;
using testing::ReadWholeFile;
using testing::TempDir;

std::string TrainBinary() { return RunfilesRoot() + "/mantissa/trainer/cli/train"; }

struct JobResult {
  int exit_code = -1;
  std::string output;                // stdout and stderr of the whole job
  std::vector<std::string> losses;   // each step's loss as the JSONL writes it (17 digits)
  std::vector<bool> skipped;         // each step's "skipped"
  CheckpointData checkpoint;         // <dir>/latest, when there is one
  std::string jsonl;                 // the metrics log (rank 0's)
};

// Every "train" record's field `key`, as written.
std::vector<std::string> JsonlField(const std::string& jsonl, const std::string& key) {
  std::vector<std::string> out;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"train\"") == std::string::npos) continue;
    const size_t at = line.find("\"" + key + "\":");
    if (at == std::string::npos) continue;
    const size_t begin = at + key.size() + 3;
    out.push_back(line.substr(begin, line.find_first_of(",}", begin) - begin));
  }
  return out;
}

void CollectResults(const std::string& dir, JobResult* run) {
  const std::string jsonl = ReadWholeFile(dir + ".jsonl");
  run->jsonl = jsonl;
  run->losses = JsonlField(jsonl, "loss");
  for (const std::string& s : JsonlField(jsonl, "skipped")) run->skipped.push_back(s == "true");
  const std::string latest = LatestCheckpointPath(dir);
  if (std::filesystem::exists(latest)) {
    auto ckpt = ReadCheckpoint(latest);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status();
    if (ckpt.ok()) run->checkpoint = *ckpt;
  }
}

std::string CommonFlags(const std::string& precision, int batch, int steps) {
  return " --model=mlp --dataset=digits --cache_dir=" + TempDir() +
         "/cache --progress=none --log_every=1 --eval_every=0 --precision=" + precision +
         " --batch_size=" + std::to_string(batch) + " --steps=" + std::to_string(steps);
}

// Trains with `ranks` processes (1: the binary alone, no mpirun) into
// checkpoint dir `dir` (and `dir`.jsonl).
JobResult Train(int ranks, const std::string& dir, const std::string& flags,
          const std::string& env = "") {
  JobResult run;
  const std::string launcher = ranks == 1 ? "" : Mpirun(ranks) + " ";
  const std::string cmd = env + " " + launcher + TrainBinary() + flags + " --checkpoint_dir=" +
                          dir + " --metrics_jsonl=" + dir + ".jsonl > " + dir + ".log 2>&1";
  const int status = std::system(cmd.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.output = ReadWholeFile(dir + ".log");
  CollectResults(dir, &run);
  return run;
}

double RelativeDifference(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-30);
}

// || a - b || / || b || over the fp32 tensors of two checkpoints; NaN never
// passes. fp32 (`strict`): tensor by tensor, the optimizer's state
// included. 16-bit precisions: over the weights as one vector. Each rank's
// 16-bit gradient of b examples rounds differently from the one of N*b
// examples (2^-9 relative in bf16); after 30 Adam steps the small,
// zero-initialised bias vectors are about 1e-2 apart on their own, the
// weights as a whole 2e-3, and Adam's second moment, which squares the
// gradients, 2e-2.
void ExpectWeightsClose(const CheckpointData& a, const CheckpointData& b, double tolerance,
                        bool strict = true) {
  ASSERT_GT(b.tensors_size(), 0);
  ASSERT_EQ(a.tensors_size(), b.tensors_size());
  double all_diff = 0, all_norm = 0;
  for (int i = 0; i < b.tensors_size(); ++i) {
    const TensorData& ta = a.tensors(i);
    const TensorData& tb = b.tensors(i);
    ASSERT_EQ(ta.name(), tb.name());
    ASSERT_EQ(ta.dtype(), tb.dtype());
    if (tb.dtype() != MNT_DTYPE_F32) continue;
    if (!strict && tb.name().rfind("opt.", 0) == 0) continue;
    ASSERT_EQ(ta.data().size(), tb.data().size()) << tb.name();
    const size_t n = tb.data().size() / sizeof(float);
    const float* x = reinterpret_cast<const float*>(ta.data().data());
    const float* y = reinterpret_cast<const float*>(tb.data().data());
    double diff = 0, norm = 0;
    for (size_t j = 0; j < n; ++j) {
      diff += (static_cast<double>(x[j]) - y[j]) * (static_cast<double>(x[j]) - y[j]);
      norm += static_cast<double>(y[j]) * y[j];
    }
    all_diff += diff;
    all_norm += norm;
    const double rel = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
    if (strict) {
      EXPECT_TRUE(rel <= tolerance) << tb.name() << ": relative difference " << rel << " > "
                                    << tolerance;
    }
  }
  const double rel = std::sqrt(all_diff) / std::max(std::sqrt(all_norm), 1e-30);
  EXPECT_TRUE(rel <= tolerance) << "the weights: relative difference " << rel << " > "
                                << tolerance;
}

void ExpectSameBits(const CheckpointData& a, const CheckpointData& b) {
  ASSERT_GT(b.tensors_size(), 0);
  ASSERT_EQ(a.tensors_size(), b.tensors_size());
  for (int i = 0; i < b.tensors_size(); ++i) {
    EXPECT_TRUE(a.tensors(i).data() == b.tensors(i).data())
        << "tensor " << b.tensors(i).name() << " differs";
  }
  EXPECT_EQ(a.loss_scale(), b.loss_scale());
  EXPECT_EQ(a.loss_scale_skipped_steps(), b.loss_scale_skipped_steps());
  EXPECT_EQ(a.step(), b.step());
}

void ExpectFiniteLosses(const JobResult& run) {
  for (const std::string& l : run.losses) {
    EXPECT_TRUE(std::isfinite(std::strtod(l.c_str(), nullptr))) << l;
  }
}

struct Case {
  int ranks;
  std::string precision;
  double tolerance;
};

class DataParallelMatchesOneRank : public ::testing::TestWithParam<Case> {};

TEST_P(DataParallelMatchesOneRank, LossesAndWeightsAfter30Steps) {
  const Case& c = GetParam();
  constexpr int kBatch = 16, kSteps = 30;
  const std::string tag = c.precision + "_" + std::to_string(c.ranks);
  const JobResult parallel = Train(c.ranks, TempDir() + "/dp_" + tag,
                             CommonFlags(c.precision, kBatch, kSteps));
  const JobResult single = Train(1, TempDir() + "/one_" + tag,
                           CommonFlags(c.precision, c.ranks * kBatch, kSteps));
  ASSERT_EQ(parallel.exit_code, 0) << parallel.output;
  ASSERT_EQ(single.exit_code, 0) << single.output;
  EXPECT_NE(parallel.output.find("data parallel: " + std::to_string(c.ranks) + " ranks"),
            std::string::npos)
      << parallel.output;
  // The log says so, and counts the global batch.
  const std::string n = std::to_string(c.ranks);
  EXPECT_NE(parallel.jsonl.find("\"samples_per_step\":" + std::to_string(c.ranks * kBatch) +
                                ",\"ranks\":" + n),
            std::string::npos);
  EXPECT_NE(parallel.jsonl.find("\"data_parallel\":{\"ranks\":" + n), std::string::npos);
  EXPECT_NE(single.jsonl.find("\"data_parallel\":null"), std::string::npos);
  ASSERT_EQ(parallel.losses.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(single.losses.size(), parallel.losses.size());
  ExpectFiniteLosses(parallel);
  for (int i = 0; i < kSteps; ++i) {
    const double a = std::strtod(parallel.losses[i].c_str(), nullptr);
    const double b = std::strtod(single.losses[i].c_str(), nullptr);
    EXPECT_LE(RelativeDifference(a, b), c.tolerance) << "step " << i + 1 << ": " << a << " vs " << b;
  }
  ExpectWeightsClose(parallel.checkpoint, single.checkpoint, c.tolerance,
                     /*strict=*/c.precision == "fp32");
  // The final evaluation, split across the ranks and reduced, sees every
  // validation example once, as the single run's does.
  auto eval_field = [](const std::string& jsonl, const std::string& key) {
    const size_t at = jsonl.rfind("\"type\":\"eval\"");
    if (at == std::string::npos) return std::string();
    const size_t k = jsonl.find("\"" + key + "\":", at);
    const size_t begin = k + key.size() + 3;
    return jsonl.substr(begin, jsonl.find_first_of(",}", begin) - begin);
  };
  EXPECT_EQ(eval_field(parallel.jsonl, "examples"), eval_field(single.jsonl, "examples"));
  const double eval_parallel = std::strtod(eval_field(parallel.jsonl, "eval_loss").c_str(), nullptr);
  const double eval_single = std::strtod(eval_field(single.jsonl, "eval_loss").c_str(), nullptr);
  EXPECT_TRUE(std::isfinite(eval_parallel));
  EXPECT_LE(RelativeDifference(eval_parallel, eval_single), c.tolerance)
      << eval_parallel << " vs " << eval_single;
}

INSTANTIATE_TEST_SUITE_P(
    RanksAndPrecisions, DataParallelMatchesOneRank,
    ::testing::Values(Case{2, "fp32", 1e-6}, Case{3, "fp32", 1e-6}, Case{2, "bf16", 1e-2},
                      Case{3, "bf16", 1e-2}, Case{2, "fp16", 1e-2}, Case{3, "fp16", 1e-2},
                      // FP8 GEMMs: the ranks' amax are maxed, so every rank
                      // quantizes with the one batch's scales.
                      Case{2, "fp8", 1e-2}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return info.param.precision + "_" + std::to_string(info.param.ranks) + "_ranks";
    });

// ZeRO-1 reduce-scatters the gradients, steps each rank's share of the
// elements (parameters cut where shares end, stochastic rounding keyed by
// the element's place in its parameter) and all-gathers the working
// weights; ZeRO-0 and ZeRO-1 add the global norm from the same shares. Every
// loss and every checkpointed byte must be equal, and each rank keeps about
// 1/ranks of the optimizer state.
struct ZeroCase {
  int ranks;
  std::string precision;
  std::string flags;
  std::string name;
};

class ZeroOne : public ::testing::TestWithParam<ZeroCase> {};

TEST_P(ZeroOne, EqualsZeroZeroBitForBit) {
  const ZeroCase& c = GetParam();
  const std::string flags = CommonFlags(c.precision, 16, 20) + " --eval_every=10 " + c.flags;
  const JobResult zero0 = Train(c.ranks, TempDir() + "/zero0_" + c.name, flags);
  const JobResult zero1 = Train(c.ranks, TempDir() + "/zero1_" + c.name, flags + " --zero_stage=1");
  ASSERT_EQ(zero0.exit_code, 0) << zero0.output;
  ASSERT_EQ(zero1.exit_code, 0) << zero1.output;
  ASSERT_EQ(zero0.losses.size(), 20u);
  ExpectFiniteLosses(zero0);
  EXPECT_EQ(zero1.losses, zero0.losses);
  ExpectSameBits(zero1.checkpoint, zero0.checkpoint);
  // Rank 0's optimizer state (and fp32 masters) are a part of the whole.
  auto peak = [](const std::string& jsonl, const std::string& category) -> double {
    const size_t at = jsonl.find("\"" + category + "\":{\"current\":");
    if (at == std::string::npos) return -1;
    const size_t p = jsonl.find("\"peak\":", at);
    return std::strtod(jsonl.c_str() + p + 7, nullptr);
  };
  const double state0 = peak(zero0.jsonl, "optimizer_state");
  const double state1 = peak(zero1.jsonl, "optimizer_state");
  EXPECT_GT(state0, 0);
  EXPECT_GT(state1, 0);
  EXPECT_LT(state1, state0) << "rank 0 kept the whole optimizer state under ZeRO-1";
  // A share is 1/ranks of the flat layout, padded to whole 128-element
  // chunks; the step counters add 4 bytes per piece.
  EXPECT_LE(state1, state0 / c.ranks + 2 * 128 * 4 * c.ranks + 4 * 64)
      << "rank 0 keeps more than its 1/" << c.ranks << " share of the optimizer state";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ZeroOne,
    ::testing::Values(ZeroCase{2, "fp32", "", "fp32_2"}, ZeroCase{3, "bf16", "", "bf16_3"},
                      ZeroCase{2, "fp16", "", "fp16_2"},
                      ZeroCase{2, "bf16", "--stochastic_rounding", "bf16_sr_2"},
                      ZeroCase{3, "fp32", "--optimizer=sgd", "sgd_3"},
                      ZeroCase{2, "fp16", "--multi_tensor_optimizer=off", "fp16_single_2"},
                      // Many small buckets (each cut into ranks' chunks) and
                      // a clip that acts every step.
                      ZeroCase{2, "bf16", "--bucket_mb=0.004 --clip_grad_norm=0.05 "
                                          "--stochastic_rounding", "bf16_sr_buckets_2"},
                      ZeroCase{3, "fp16", "--bucket_mb=0.004 --clip_grad_norm=0.05 "
                                          "--multi_tensor_optimizer=off", "fp16_buckets_3"},
                      // adamw8bit (issue #39): shares cut on quantization
                      // blocks, the 8-bit codes and block absmax sharded;
                      // small tensors' fp32 moments too.
                      ZeroCase{2, "bf16", "--optimizer=adamw8bit", "adamw8bit_2"},
                      ZeroCase{3, "fp16", "--optimizer=adamw8bit --bucket_mb=0.004 "
                                          "--clip_grad_norm=0.05", "adamw8bit_buckets_3"},
                      ZeroCase{2, "bf16", "--optimizer=adamw8bit --stochastic_rounding "
                                          "--optimizer_options=min_8bit_size=0", "adamw8bit_sr_2"}),
    [](const ::testing::TestParamInfo<ZeroCase>& info) { return info.param.name; });

TEST(DataParallel, ZeroOneCheckpointsResumeUnderEitherStage) {
  // A run under one stage, resumed from its step-10 checkpoint under the
  // other, against the run straight through: the checkpoint is whole.
  const std::string flags = CommonFlags("bf16", 16, 20) + " --checkpoint_every=10";
  const JobResult straight = Train(2, TempDir() + "/zr_straight", flags);
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  for (const std::string first : {"1", "0"}) {
    const std::string second = first == "1" ? "0" : "1";
    const std::string dir = TempDir() + "/zr_first_" + first;
    const JobResult a = Train(2, dir, flags + " --zero_stage=" + first);
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ExpectSameBits(a.checkpoint, straight.checkpoint);
    const JobResult b = Train(2, TempDir() + "/zr_then_" + second,
                              flags + " --resume_from=" + dir + "/checkpoint-10 --zero_stage=" +
                                  second);
    ASSERT_EQ(b.exit_code, 0) << b.output;
    ExpectSameBits(b.checkpoint, straight.checkpoint);
  }
}

TEST(DataParallel, TwoIdenticalRunsGiveTheSameBits) {
  const std::string flags = CommonFlags("fp16", 8, 20);
  const JobResult a = Train(3, TempDir() + "/same_a", flags);
  const JobResult b = Train(3, TempDir() + "/same_b", flags);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ASSERT_EQ(a.losses.size(), 20u);
  EXPECT_EQ(a.losses, b.losses);
  ExpectSameBits(a.checkpoint, b.checkpoint);
}

TEST(DataParallel, RecordedStepsGiveTheBitsOfStepsRunAsIssued) {
  // Step markers compose with data parallelism: with record_steps=on the
  // CPU backend defers a marked step's ops (as the CUDA backend does for
  // CUDA graphs) and must issue them before each collective reads what they
  // wrote; the rest of the step runs as issued, and the backend says why
  // once. A backend that let a collective pass its deferred ops would
  // average stale gradients: other bits, or a diverging run.
  for (const char* precision : {"fp32", "fp16"}) {
    SCOPED_TRACE(precision);
    const std::string flags = CommonFlags(precision, 8, 12) + " --grad_accum_steps=2";
    const JobResult off = Train(2, TempDir() + "/record_off_" + precision,
                                flags + " --backend_options=record_steps=off");
    const JobResult on = Train(2, TempDir() + "/record_on_" + precision,
                               flags + " --backend_options=record_steps=on");
    ASSERT_EQ(off.exit_code, 0) << off.output;
    ASSERT_EQ(on.exit_code, 0) << on.output;
    ASSERT_EQ(on.losses.size(), 12u);
    EXPECT_EQ(on.losses, off.losses);
    ExpectSameBits(on.checkpoint, off.checkpoint);
    // The markers were open and the collective issued the deferred ops.
    EXPECT_NE(on.output.find("a step runs eagerly: Collectives_"), std::string::npos)
        << on.output;
  }
}

TEST(DataParallel, AnOverflowOnOneRankSkipsTheStepOnAll) {
  constexpr int kSteps = 12, kFaultStep = 5;
  const std::string flags = CommonFlags("fp16", 16, kSteps);
  const std::string fault = "MANTISSA_FAULT_INF_GRADIENT=";
  // mpirun passes the variable on to every rank (each reads its own rank).
  const JobResult on_rank1 = Train(2, TempDir() + "/inf_rank1", flags + "",
                             fault + "1:" + std::to_string(kFaultStep));
  const JobResult on_rank0 = Train(2, TempDir() + "/inf_rank0", flags,
                             fault + "0:" + std::to_string(kFaultStep));
  const JobResult clean = Train(2, TempDir() + "/inf_none", flags);
  for (const JobResult* r : {&on_rank1, &on_rank0, &clean}) {
    // Exit 0 includes the end-of-run check that both ranks hold one state:
    // a rank that stepped where the other skipped fails it.
    ASSERT_EQ(r->exit_code, 0) << r->output;
    ASSERT_EQ(r->skipped.size(), static_cast<size_t>(kSteps));
    ExpectFiniteLosses(*r);
  }
  for (int i = 0; i < kSteps; ++i) {
    // Rank 0 reports; the inf was rank 1's alone in the first run.
    EXPECT_EQ(on_rank1.skipped[i], i + 1 == kFaultStep) << "step " << i + 1;
    EXPECT_FALSE(clean.skipped[i]) << "step " << i + 1;
  }
  EXPECT_EQ(on_rank1.checkpoint.loss_scale(), clean.checkpoint.loss_scale() / 2);
  EXPECT_EQ(on_rank1.checkpoint.loss_scale_skipped_steps(), 1);
  // Which rank saw the overflow does not matter.
  EXPECT_EQ(on_rank1.losses, on_rank0.losses);
  ExpectSameBits(on_rank1.checkpoint, on_rank0.checkpoint);

  // ZeRO-1: rank 1's inf (its gradient's first element) is averaged into
  // rank 0's share only; found_inf is maxed over ranks, so rank 1 skips too
  // and the run is ZeRO-0's bit for bit.
  const JobResult zero1 = Train(2, TempDir() + "/inf_rank1_zero1", flags + " --zero_stage=1",
                                fault + "1:" + std::to_string(kFaultStep));
  ASSERT_EQ(zero1.exit_code, 0) << zero1.output;
  ASSERT_EQ(zero1.skipped.size(), static_cast<size_t>(kSteps));
  for (int i = 0; i < kSteps; ++i) {
    EXPECT_EQ(zero1.skipped[i], i + 1 == kFaultStep) << "step " << i + 1;
  }
  EXPECT_EQ(zero1.losses, on_rank1.losses);
  ExpectSameBits(zero1.checkpoint, on_rank1.checkpoint);
}

// --exchange_in_backward=auto (the default; the in-tree models hand over
// finished gradients, ABI 1.11): each bucket is exchanged as soon as
// backward has finished it, while backward goes on; the bits are those of
// exchanging after the whole backward, under either stage, with gradient
// accumulation (the hand-over also drives the fp32 master-gradient sums).
TEST(DataParallel, ExchangeInBackwardChangesNoBit) {
  auto summary_count = [](const std::string& jsonl, const std::string& key) -> int64_t {
    const size_t at = jsonl.find("\"" + key + "\":", jsonl.find("\"type\":\"summary\""));
    return at == std::string::npos ? -1 : std::stoll(jsonl.substr(at + key.size() + 3));
  };
  for (const std::string precision : {"fp32", "bf16"}) {
    for (const std::string zero : {"0", "1"}) {
      const std::string name = precision + "_zero" + zero;
      const std::string flags = CommonFlags(precision, 8, 6) +
                                " --grad_accum_steps=2 --bucket_mb=0.004 --zero_stage=" + zero;
      const JobResult in_backward = Train(2, TempDir() + "/inbw_" + name, flags);
      const JobResult after = Train(2, TempDir() + "/after_" + name,
                                    flags + " --exchange_in_backward=off");
      ASSERT_EQ(in_backward.exit_code, 0) << in_backward.output;
      ASSERT_EQ(after.exit_code, 0) << after.output;
      ASSERT_EQ(in_backward.losses.size(), 6u);
      EXPECT_EQ(in_backward.losses, after.losses) << name;
      ExpectSameBits(in_backward.checkpoint, after.checkpoint);
      // Most buckets went during backward (the first layer's, finished
      // last, after it); none with the flag off.
      const int64_t buckets = summary_count(in_backward.jsonl, "buckets_exchanged");
      EXPECT_GT(buckets, 6) << name;
      EXPECT_EQ(summary_count(after.jsonl, "buckets_exchanged"), buckets) << name;
      EXPECT_GT(summary_count(in_backward.jsonl, "buckets_in_backward"), 0) << name;
      EXPECT_EQ(summary_count(after.jsonl, "buckets_in_backward"), 0) << name;
    }
  }
}

// A backend whose collectives extension is version 1 (Collectives_Run
// only; the test backend aborts if Start or Wait is called): the trainer
// runs each exchange when it issues it, with the bits of the started ones.
TEST(DataParallel, AVersionOneCollectivesExtensionRunsEachExchangeAtOnce) {
  const std::string plugins = RunfilesRoot() + "/mantissa/tools/plugin_conformance";
  // One device per rank: the test backend is the CPU backend, not "cpu".
  const std::string flags = CommonFlags("fp32", 8, 6) +
                            " --bucket_mb=0.004 --device=broken_collectives --plugin_path=" +
                            plugins;
  const JobResult v1 = Train(2, TempDir() + "/v1_ext", flags,
                             "CUDA_VISIBLE_DEVICES=0 MNT_BREAK_STARTED_COLLECTIVES=v1");
  const JobResult v2 = Train(2, TempDir() + "/v2_ext", flags, "CUDA_VISIBLE_DEVICES=0");
  ASSERT_EQ(v1.exit_code, 0) << v1.output;
  ASSERT_EQ(v2.exit_code, 0) << v2.output;
  EXPECT_NE(v1.jsonl.find("\"buckets_started\":0}"), std::string::npos) << v1.jsonl;
  EXPECT_EQ(v2.jsonl.find("\"buckets_started\":0}"), std::string::npos) << v2.jsonl;
  EXPECT_NE(v2.jsonl.find("\"buckets_started\":"), std::string::npos) << v2.jsonl;
  ASSERT_EQ(v1.losses.size(), 6u);
  EXPECT_EQ(v1.losses, v2.losses);
  ExpectSameBits(v1.checkpoint, v2.checkpoint);
}

// A model so small that rank 2's share is only padding (an MLP of 160
// parameters over 3 x 128-element chunks): ZeRO-0 adds 0 for that rank's
// part of the norm and trains as one rank with the whole batch would;
// ZeRO-1, which would leave the rank nothing to step, is refused in one line.
TEST(DataParallel, ARankWhoseShareIsPaddingOnly) {
  const std::string flags = CommonFlags("fp32", 8, 5) + " --model_options=hidden=2";
  const JobResult three = Train(3, TempDir() + "/tiny_3", flags);
  const JobResult one = Train(1, TempDir() + "/tiny_1", CommonFlags("fp32", 24, 5) +
                                                            " --model_options=hidden=2");
  ASSERT_EQ(three.exit_code, 0) << three.output;
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(three.losses.size(), 5u);
  for (size_t i = 0; i < three.losses.size(); ++i) {
    EXPECT_NEAR(std::stod(three.losses[i]), std::stod(one.losses[i]),
                1e-6 * std::fabs(std::stod(one.losses[i])))
        << "step " << i + 1;
  }
  const JobResult zero1 = Train(3, TempDir() + "/tiny_zero1", flags + " --zero_stage=1");
  EXPECT_NE(zero1.exit_code, 0);
  EXPECT_NE(zero1.output.find("mantissa: error: rank 2: --zero_stage=1: the model's 160 "
                              "parameters leave rank 2 of 3 none to own"),
            std::string::npos)
      << zero1.output;
}

// A skipped step names the parameters whose gradients hold inf/NaN; under
// ZeRO-1 each rank checks its share and rank 0 reports them all: a loss
// scale of 2^40 overflows every layer's gradient, on both ranks' shares.
TEST(DataParallel, ZeroOneNamesOverflowsInEveryRanksShare) {
  const std::string flags = CommonFlags("fp16", 16, 3) + " --init_scale=1099511627776";
  const JobResult zero0 = Train(2, TempDir() + "/names_zero0", flags);
  const JobResult zero1 = Train(2, TempDir() + "/names_zero1", flags + " --zero_stage=1");
  ASSERT_EQ(zero0.exit_code, 0) << zero0.output;
  ASSERT_EQ(zero1.exit_code, 0) << zero1.output;
  // Every record's "nonfinite_params" array, as written.
  auto arrays = [](const std::string& jsonl) {
    std::vector<std::string> out;
    const std::string key = "\"nonfinite_params\":[";
    for (size_t at = jsonl.find(key); at != std::string::npos; at = jsonl.find(key, at + 1)) {
      const size_t begin = at + key.size();
      out.push_back(jsonl.substr(begin, jsonl.find(']', begin) - begin));
    }
    return out;
  };
  const std::vector<std::string> names0 = arrays(zero0.jsonl);
  const std::vector<std::string> names1 = arrays(zero1.jsonl);
  ASSERT_FALSE(names0.empty()) << zero0.jsonl;
  EXPECT_NE(names0[0].find("layer0.weight"), std::string::npos) << names0[0];
  EXPECT_NE(names0[0].find("layer2.weight"), std::string::npos) << names0[0];
  EXPECT_EQ(names1, names0);
}

// Starts the job in the background; each rank writes its pid to
// <dir>.rank<k>.pid (the wrapper shell execs the trainer, keeping its pid).
pid_t StartJob(int ranks, const std::string& dir, const std::string& flags) {
  const std::string cmd = Mpirun(ranks) + " sh -c 'echo $$ > " + dir +
                          ".rank$OMPI_COMM_WORLD_RANK.pid; exec " + TrainBinary() + flags +
                          " --checkpoint_dir=" + dir + " --metrics_jsonl=" + dir +
                          ".jsonl' > " + dir + ".log 2>&1";
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

TEST(DataParallel, KillingOneRankEndsTheJobAndResumeContinuesBitForBit) {
  constexpr int kSteps = 300;
  const std::string flags =
      CommonFlags("fp32", 16, kSteps) + " --checkpoint_every=20 --save_total_limit=2";
  const JobResult unbroken = Train(2, TempDir() + "/unbroken", flags);
  ASSERT_EQ(unbroken.exit_code, 0) << unbroken.output;

  const std::string dir = TempDir() + "/killed";
  const pid_t job = StartJob(2, dir, flags);
  ASSERT_GT(job, 0);
  // Kill rank 1 once the first checkpoint is safe and before the end.
  const auto start = std::chrono::steady_clock::now();
  bool killed = false;
  std::chrono::steady_clock::time_point killed_at;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
    if (std::filesystem::exists(LatestCheckpointPath(dir))) {
      const std::string pid = ReadWholeFile(dir + ".rank1.pid");
      if (!pid.empty() && kill(std::atoi(pid.c_str()), SIGKILL) == 0) {
        killed = true;
        killed_at = std::chrono::steady_clock::now();
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int status = 0;
  ASSERT_EQ(waitpid(job, &status, 0), job);
  ASSERT_TRUE(killed) << "the run ended before rank 1 could be killed:\n" << ReadWholeFile(dir + ".log");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(seconds, 60) << "the job outlived its dead rank";
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string log = ReadWholeFile(dir + ".log");
  // Open MPI names the rank that died: "... process rank 1 ... signal 9".
  EXPECT_NE(log.find("rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find("signal 9"), std::string::npos) << log;

  // What survived is a whole checkpoint; the same N resumes bit for bit.
  const auto partial = ReadCheckpoint(LatestCheckpointPath(dir));
  ASSERT_TRUE(partial.ok()) << partial.status();
  ASSERT_LT(partial->step(), kSteps);
  const std::string copy = TempDir() + "/killed_for_one_rank";
  std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
  // --resume appends to the JSONL: keep the killed run's records apart.
  std::filesystem::rename(dir + ".jsonl", dir + ".killed.jsonl");
  const JobResult resumed = Train(2, dir, flags + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  ExpectSameBits(resumed.checkpoint, unbroken.checkpoint);
  const std::vector<std::string> tail(unbroken.losses.end() - resumed.losses.size(),
                                      unbroken.losses.end());
  EXPECT_EQ(resumed.losses, tail);

  // One rank with the global batch continues the same run correctly.
  const JobResult one = Train(1, copy, CommonFlags("fp32", 32, kSteps) + " --checkpoint_every=20 --resume");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ExpectWeightsClose(one.checkpoint, unbroken.checkpoint, 1e-6);
}

TEST(DataParallel, RanksThatDisagreeAreRefusedWithOneLine) {
  const std::string dir = TempDir() + "/disagree";
  const std::string flags = CommonFlags("fp32", 16, 10) + " --checkpoint_dir=" + dir;
  std::string cmd = Mpirun(1) + " " + TrainBinary() + flags + " --lr=0.01 : -np 1 " +
                    TrainBinary() + flags + " --lr=0.02 > " + dir + ".log 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string log = ReadWholeFile(dir + ".log");
  size_t lines = 0;
  for (size_t at = log.find("mantissa: error:"); at != std::string::npos;
       at = log.find("mantissa: error:", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_NE(log.find("rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find("0.02"), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(LatestCheckpointPath(dir))) << "a refused job trained";
}

}  // namespace
}  // namespace mnt::trainer
