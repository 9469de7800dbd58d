// Hostile input to the train binary, one case per way it used to crash, hang
// or succeed silently (issue 13). Every case must end with exactly one line
// "mantissa: error: ..." on stderr, a non-zero exit, and no file changed:
// the bytes and modification times of a real earlier run's checkpoints and
// metrics are compared before and after each case.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;
using testing::RunfilesRoot;
using testing::TempDir;

struct Result {
  int exit_code = -1;
  int signal = 0;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string Binary() { return RunfilesRoot() + "/mantissa/trainer/cli/train"; }

// Runs `train` on the MLP and digits unless `args` says otherwise; `prefix`
// is shell run first (limits). A hang fails the test through its timeout.
Result Train(const std::string& args, const std::string& prefix = "") {
  static int n = 0;
  const std::string out = TempDir() + "/bad_out_" + std::to_string(n) + ".txt";
  const std::string err = TempDir() + "/bad_err_" + std::to_string(n++) + ".txt";
  const std::string cmd = absl::StrCat(
      "sh -c '", prefix, "exec ", Binary(),
      " --progress=plain --device=cpu --model=mlp --dataset=digits --steps=3 --eval_every=0",
      " --cache_dir=", TempDir(), "/cache ", args, " >", out, " 2>", err, "'");
  const int status = std::system(cmd.c_str());
  Result r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  // sh execs the binary: a signal shows as sh's exit code 128 + N.
  if (r.exit_code > 128) r.signal = r.exit_code - 128;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

// Size, modification time and bytes of every file under `dir`.
struct FileState {
  int64_t size;
  int64_t mtime_ns;
  std::string bytes;
  bool operator==(const FileState& o) const {
    return size == o.size && mtime_ns == o.mtime_ns && bytes == o.bytes;
  }
};

std::map<std::string, FileState> Snapshot(const std::string& dir) {
  std::map<std::string, FileState> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    struct stat st;
    stat(e.path().c_str(), &st);
    files[e.path().string()] = {static_cast<int64_t>(st.st_size),
                                st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                                Slurp(e.path().string())};
  }
  return files;
}

class BadInputTest : public ::testing::Test {
 protected:
  // One good run leaves what a user would lose: checkpoints and metrics.
  static void SetUpTestSuite() {
    state_ = new std::string(TempDir() + "/state");
    fs::remove_all(*state_);
    fs::create_directories(*state_);
    Result r = Train(absl::StrCat("--checkpoint_dir=", *state_, "/ckpt --metrics_jsonl=",
                                  *state_, "/metrics.jsonl"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete state_; }

  void SetUp() override {
    scratch_ = TempDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(scratch_);
    fs::create_directories(scratch_);
  }

  // The case's flags also point at the earlier run's files, so a run that
  // got as far as opening them would show up as a change.
  void ExpectRefused(const std::string& args, const std::string& needle,
                     const std::string& prefix = "") {
    const auto before = Snapshot(*state_);
    const auto scratch_before = Snapshot(scratch_);
    Result r = Train(args, prefix);
    SCOPED_TRACE(args);
    EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal << "\n" << r.err;
    EXPECT_NE(r.exit_code, 0);
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    EXPECT_EQ(err.find('\n'), std::string::npos) << "stderr:\n" << r.err;
    EXPECT_EQ(err.rfind("mantissa: error: ", 0), 0u) << "stderr:\n" << r.err;
    EXPECT_TRUE(absl::StrContains(err, needle)) << "stderr:\n" << r.err;
    EXPECT_TRUE(Snapshot(*state_) == before) << "the earlier run's files changed";
    EXPECT_TRUE(Snapshot(scratch_) == scratch_before) << "the case's own inputs changed";
  }

  std::string Checkpoint() const { return *state_ + "/ckpt/latest"; }

  // A copy of the earlier run's checkpoint with `edit` applied, CRC-valid.
  template <typename Edit>
  std::string TamperedCheckpoint(const std::string& name, Edit edit) {
    auto data = ReadCheckpoint(Checkpoint());
    EXPECT_TRUE(data.ok()) << data.status();
    edit(&*data);
    const std::string path = scratch_ + "/" + name;
    EXPECT_TRUE(WriteCheckpointAtomic(path, *data).ok());
    return path;
  }

  static std::string* state_;
  std::string scratch_;
};

std::string* BadInputTest::state_ = nullptr;

TEST_F(BadInputTest, ADirectoryAsTokenShards) {
  ExpectRefused("--model=gpt2 --dataset=shards --train_shards=" + scratch_,
                "is a directory, expected a regular file");
}

TEST_F(BadInputTest, ATruncatedPluginIsRefusedBeforeDlopen) {
  // A real plugin cut to 20 KB: dlopen() used to map past its end (SIGBUS).
  const std::string whole = Slurp(RunfilesRoot() + "/mantissa/models/mlp/mnt_model_mlp.so");
  ASSERT_GT(whole.size(), 20000u);
  std::ofstream(scratch_ + "/mnt_model_x.so", std::ios::binary) << whole.substr(0, 20000);
  ExpectRefused("--model=x --plugin_path=" + scratch_, "truncated file");
}

TEST_F(BadInputTest, CheckpointAppliedStepsNotANumber) {
  const std::string path = TamperedCheckpoint("words", [](CheckpointData* d) {
    (*d->mutable_metadata())["applied_steps"] = "three";
  });
  ExpectRefused("--overwrite_output_dir --checkpoint_dir=" + *state_ + "/ckpt --resume_from=" + path,
                "applied_steps 'three' is not a whole number");
}

TEST_F(BadInputTest, CheckpointAppliedStepsOverflow) {
  const std::string path = TamperedCheckpoint("overflow", [](CheckpointData* d) {
    (*d->mutable_metadata())["applied_steps"] = "99999999999999999999999";
  });
  ExpectRefused("--resume_from=" + path, "applied_steps '99999999999999999999999'");
}

TEST_F(BadInputTest, CheckpointNegativeStep) {
  const std::string path =
      TamperedCheckpoint("negative", [](CheckpointData* d) { d->set_step(-5); });
  ExpectRefused("--overwrite_output_dir --checkpoint_dir=" + *state_ + "/ckpt --resume_from=" + path,
                "checkpoint step -5 is negative");
}

TEST_F(BadInputTest, CheckpointInvalidUtf8SaysOneLine) {
  // Protobuf refuses the string and logs it itself; only our line may show.
  const std::string path = TamperedCheckpoint(
      "utf8", [](CheckpointData* d) { d->set_model(std::string("ml\xff\xfe", 4)); });
  ExpectRefused("--resume_from=" + path, "does not parse as CheckpointData");
}

TEST_F(BadInputTest, ADirectoryAsConfig) {
  ExpectRefused("--config=" + scratch_, "is a directory, expected a regular file");
}

TEST_F(BadInputTest, DevZeroAsText) {
  ExpectRefused("--model=gpt2 --dataset=text --text_path=/dev/zero",
                "/dev/zero is a device, expected a regular file");
}

TEST_F(BadInputTest, AFifoAsTextDoesNotHang) {
  const std::string fifo = scratch_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused("--model=gpt2 --dataset=text --text_path=" + fifo, "is a FIFO");
}

TEST_F(BadInputTest, ADeviceAsMetricsFile) {
  // Used to be renamed away as "the earlier run's file".
  ExpectRefused("--metrics_jsonl=/dev/null", "/dev/null is not a regular file");
}

TEST_F(BadInputTest, MetricsOnAFullDiskStopTheRun) {
  // RLIMIT_FSIZE makes writes past 8 KB fail (EFBIG) as a full disk does
  // (ENOSPC); SIGXFSZ is ignored so the write returns the error.
  // Outside the compared folders: the file keeps the lines written before
  // the failure, and has no summary record.
  const std::string jsonl = TempDir() + "/full_disk_metrics.jsonl";
  fs::remove(jsonl);
  ExpectRefused("--steps=600 --metrics_jsonl=" + jsonl,
                "writing --metrics_jsonl=" + jsonl + " failed after",
                "trap \"\" XFSZ; ulimit -f 8; ");
}

TEST_F(BadInputTest, CheckpointOnAFullDiskLeavesNoTempFile) {
  // The earlier run, continued, is the target: `latest` must stay the old
  // file, and no latest.tmp.<pid> or half checkpoint may be left. (Its own
  // metrics file would grow: this command writes none.)
  const auto before = Snapshot(*state_);
  Result r = Train("--steps=4 --resume --metrics_jsonl= --checkpoint_dir=" + *state_ + "/ckpt",
                   "trap \"\" XFSZ; ulimit -f 8; ");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.err.rfind("mantissa: error: step 4: cannot write ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(Snapshot(*state_) == before) << "a checkpoint file changed or was added";
}

TEST_F(BadInputTest, UnknownFlagSuggestsTheNearestOne) {
  ExpectRefused("--precison=bf16", "unknown flag --precison (did you mean --precision?)");
  ExpectRefused("--no_such_flag_at_all=1", "unknown flag --no_such_flag_at_all;");
}

TEST_F(BadInputTest, IllegalFlagValue) {
  ExpectRefused("--steps=many", "--steps=many is invalid: expected an integer");
  ExpectRefused("--lr=fast", "--lr=fast is invalid: expected a number");
}

TEST_F(BadInputTest, IdxDimsWhoseProductOverflows) {
  // 3 examples of 4294967295 x 4294967295 x 4294967295 x 0 values: zero
  // bytes of data, but the product of the first dims overflows int64.
  std::string images = {0, 0, 0x08, 5};
  for (uint32_t d : {3u, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0u}) {
    for (int b = 3; b >= 0; --b) images.push_back(static_cast<char>((d >> (8 * b)) & 0xff));
  }
  std::string labels = {0, 0, 0x08, 1, 0, 0, 0, 3, 0, 1, 2};
  std::ofstream(scratch_ + "/images", std::ios::binary) << images;
  std::ofstream(scratch_ + "/labels", std::ios::binary) << labels;
  ExpectRefused("--dataset=idx --train_images=" + scratch_ + "/images --train_labels=" +
                    scratch_ + "/labels",
                "IDX image dim 4 is 0");
}

TEST_F(BadInputTest, StochasticRoundingWithoutBf16WorkingWeights) {
  ExpectRefused("--stochastic_rounding --precision=fp32",
                "--stochastic_rounding needs bf16 working weights written from fp32 masters "
                "(--precision=bf16); precision fp32 keeps f32 weights without a master copy");
  ExpectRefused("--stochastic_rounding --precision=fp16",
                "; precision fp16 keeps f16 weights");
}

TEST_F(BadInputTest, HugeBatchSize) {
  ExpectRefused("--batch_size=4611686018427387904", "--batch_size=4611686018427387904");
}

TEST_F(BadInputTest, TempCheckpointsOfADeadRunAreRemovedAtStart) {
  const std::string dir = scratch_ + "/ckpt";
  fs::create_directories(dir);
  // pid 999999999 cannot be running (Linux's pid_max is at most 2^22).
  std::ofstream(dir + "/latest.tmp.999999999") << "half a checkpoint";
  std::ofstream(dir + "/notes.tmp.txt") << "not ours";
  std::ofstream(dir + "/latest.tmp." + std::to_string(getpid())) << "a live writer's";
  Result r = Train("--steps=1 --checkpoint_dir=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "removed " + dir + "/latest.tmp.999999999")) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/latest.tmp.999999999"));
  EXPECT_TRUE(fs::exists(dir + "/notes.tmp.txt"));
  EXPECT_TRUE(fs::exists(dir + "/latest.tmp." + std::to_string(getpid())));
}

}  // namespace
}  // namespace mnt::trainer
