// Ctrl-C and SIGTERM keep the work: the train binary, signalled mid-run,
// finishes the step in flight, saves a checkpoint, says where, writes the
// JSONL summary with the signal that stopped it and exits 130 (SIGINT) or
// 143 (SIGTERM); `--resume` then continues from that checkpoint to the end.
// A second Ctrl-C ends the process at once.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace mnt::trainer {
namespace {

using testing::RunfilesRoot;
using testing::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

struct Child {
  pid_t pid = -1;
  std::string out;  // stdout and stderr, one file
};

// Starts train with the MLP on digits and `args`, output to a file.
Child Start(const std::string& name, const std::vector<std::string>& args) {
  Child c;
  c.out = TempDir() + "/" + name + ".out";
  std::vector<std::string> argv = {RunfilesRoot() + "/mantissa/trainer/cli/train",
                                   "--progress=plain", "--model=mlp", "--dataset=digits",
                                   "--cache_dir=" + TempDir() + "/cache", "--log_every=1000"};
  argv.insert(argv.end(), args.begin(), args.end());
  c.pid = fork();
  if (c.pid == 0) {
    const int fd = open(c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  return c;
}

// Waits until the child's output shows training under way (a step line).
bool WaitForSteps(const Child& c) {
  for (int i = 0; i < 600; ++i) {
    if (Slurp(c.out).find("\nstep ") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int Wait(const Child& c, bool* signalled = nullptr, int* signal_number = nullptr) {
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (signalled != nullptr) *signalled = WIFSIGNALED(status);
  if (signal_number != nullptr) *signal_number = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ExpectStopsAndResumes(int sig, int exit_code, const char* name) {
  const std::string dir = TempDir() + "/ckpt_" + name;
  const std::string jsonl = TempDir() + "/" + std::string(name) + ".jsonl";
  const std::vector<std::string> args = {"--steps=20000", "--eval_every=0",
                                         "--checkpoint_dir=" + dir, "--metrics_jsonl=" + jsonl};
  const Child c = Start(name, args);
  ASSERT_TRUE(WaitForSteps(c)) << Slurp(c.out);
  ASSERT_EQ(kill(c.pid, sig), 0);
  EXPECT_EQ(Wait(c), exit_code) << Slurp(c.out);
  const std::string out = Slurp(c.out);
  EXPECT_NE(out.find(std::string("interrupted by ") + name), std::string::npos) << out;
  EXPECT_NE(out.find("checkpoint: " + dir + "/checkpoint-"), std::string::npos) << out;
  EXPECT_NE(out.find("--resume"), std::string::npos) << out;
  std::ifstream latest(dir + "/latest");
  EXPECT_TRUE(latest.good()) << "no " << dir << "/latest";
  const std::string log = Slurp(jsonl);
  EXPECT_NE(log.find(std::string("\"stopped_by\":\"") + name + "\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"type\":\"summary\""), std::string::npos) << log;

  // --resume continues from the saved step to the end.
  const Child r = Start(std::string(name) + "_resume", {"--steps=20000", "--eval_every=0",
                                                        "--checkpoint_dir=" + dir, "--resume"});
  EXPECT_EQ(Wait(r), 0) << Slurp(r.out);
  const std::string resumed = Slurp(r.out);
  EXPECT_NE(resumed.find("resumed from " + dir + "/latest at step "), std::string::npos)
      << resumed;
  EXPECT_NE(resumed.find("step 20000/20000"), std::string::npos) << resumed.substr(0, 2000);
}

TEST(InterruptTest, CtrlCSavesACheckpointAndExits130) {
  ExpectStopsAndResumes(SIGINT, 130, "SIGINT");
}

TEST(InterruptTest, SigtermSavesACheckpointAndExits143) {
  ExpectStopsAndResumes(SIGTERM, 143, "SIGTERM");
}

TEST(InterruptTest, SecondCtrlCStopsAtOnce) {
  const Child c = Start("twice", {"--steps=20000", "--eval_every=0",
                                  "--checkpoint_dir=" + TempDir() + "/ckpt_twice"});
  ASSERT_TRUE(WaitForSteps(c)) << Slurp(c.out);
  ASSERT_EQ(kill(c.pid, SIGINT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(kill(c.pid, SIGINT), 0);
  bool signalled = false;
  int sig = 0;
  const int code = Wait(c, &signalled, &sig);
  // Killed by the second SIGINT, or (if the step ended between the two) the
  // orderly stop of the first; never a run that carries on.
  if (signalled) {
    EXPECT_EQ(sig, SIGINT);
  } else {
    EXPECT_EQ(code, 130) << Slurp(c.out);
  }
}

}  // namespace
}  // namespace mnt::trainer
