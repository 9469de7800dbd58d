// The team-size policy on made-up samples of other processes' runnable
// threads: a quiet machine, a busy one, a competitor that comes and goes,
// a blip, a large pool, the fixed and scripted modes.
#include "plugins/backends/cpu/thread_governor.h"

#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::cpu {
namespace {

// Runs one step per entry of `others` (a sample at each step end) and
// returns the team each step ran on.
std::vector<int> RunSteps(ThreadGovernor& g, const std::vector<double>& others) {
  std::vector<int> teams;
  static double now = 0;  // one clock for every governor of the test
  for (double o : others) {
    teams.push_back(g.BeginStep());
    now += 0.05;
    g.EndStep(now, o);
  }
  return teams;
}

std::vector<double> Repeat(double v, int n) { return std::vector<double>(n, v); }

TEST(ThreadGovernorTest, AQuietMachineKeepsThePool) {
  ThreadGovernor g(2, 2, true);
  const std::vector<int> teams = RunSteps(g, Repeat(0, 100));
  for (int t : teams) EXPECT_EQ(t, 2);
  EXPECT_EQ(g.StepsByTeam(), "2:100");
  EXPECT_EQ(g.StepsBelowPool(), 0);
  EXPECT_TRUE(g.change().empty());
}

TEST(ThreadGovernorTest, TwoCompetitorsOnTwoCoresLeaveOneThreadFromTheFirstStep) {
  ThreadGovernor g(2, 2, true);
  g.Sample(0, 2);  // what the backend samples when it is created
  EXPECT_EQ(g.team(), 1);
  EXPECT_FALSE(g.change().empty());
  const std::vector<int> teams = RunSteps(g, Repeat(2, 20));
  EXPECT_EQ(teams[0], 1);
  EXPECT_EQ(g.StepsByTeam(), "1:20");
  EXPECT_EQ(g.StepsBelowPool(), 20);
  EXPECT_EQ(g.BusiestCores(), 2.0);
}

TEST(ThreadGovernorTest, WithoutACreationSampleTheSecondStepMoves) {
  ThreadGovernor g(2, 2, true);
  const std::vector<int> teams = RunSteps(g, Repeat(2, 5));
  EXPECT_EQ(teams[0], 2);
  EXPECT_EQ(teams[1], 1);
}

TEST(ThreadGovernorTest, OneCompetitorOnTwoCoresLeavesOneThread) {
  ThreadGovernor g(2, 2, true);
  RunSteps(g, Repeat(1, 10));
  EXPECT_EQ(g.team(), 1);
}

TEST(ThreadGovernorTest, FollowsACompetitorThatComesAndGoes) {
  ThreadGovernor g(2, 2, true);
  std::vector<double> others = Repeat(0, 50);
  const std::vector<double> busy = Repeat(2, 50), quiet = Repeat(0, 50);
  others.insert(others.end(), busy.begin(), busy.end());
  others.insert(others.end(), quiet.begin(), quiet.end());
  const std::vector<int> teams = RunSteps(g, others);
  EXPECT_EQ(teams[49], 2);
  EXPECT_EQ(teams[60], 1);  // the median turned within kHistory/2 + 1 samples
  EXPECT_EQ(teams[99], 1);
  EXPECT_EQ(teams[110], 2);
  EXPECT_EQ(teams[149], 2);
}

TEST(ThreadGovernorTest, ABlipDoesNotMoveTheTeam) {
  ThreadGovernor g(2, 2, true);
  std::vector<double> others = Repeat(0, 30);
  others[15] = others[16] = 3;  // a short-lived process, two of 8 samples
  for (int t : RunSteps(g, others)) EXPECT_EQ(t, 2);
}

TEST(ThreadGovernorTest, ALargePoolTakesTheFreeCoresRoundedToAHalving) {
  ThreadGovernor g(16, 16, true);
  RunSteps(g, Repeat(11, 8));  // 5 free: 16 -> 8 -> 4
  EXPECT_EQ(g.team(), 4);
  RunSteps(g, Repeat(0, 8));
  EXPECT_EQ(g.team(), 16);
  RunSteps(g, Repeat(40, 8));  // oversubscribed: 1, never 0
  EXPECT_EQ(g.team(), 1);
}

TEST(ThreadGovernorTest, SamplesAreRateLimited) {
  ThreadGovernor g(2, 2, true);
  g.BeginStep();
  g.EndStep(10.0, 0);
  EXPECT_FALSE(g.WantsSample(10.0 + ThreadGovernor::kSampleSeconds / 2));
  EXPECT_TRUE(g.WantsSample(10.0 + 1.01 * ThreadGovernor::kSampleSeconds));
  g.BeginStep();
  g.EndStep(10.001, -1);  // not sampled: nothing recorded, team kept
  EXPECT_EQ(g.team(), 2);
}

TEST(ThreadGovernorTest, AFixedCountOrOneThreadNeverMoves) {
  ThreadGovernor fixed(2, 2, false), single(1, 2, true);
  for (int t : RunSteps(fixed, Repeat(5, 30))) EXPECT_EQ(t, 2);
  EXPECT_FALSE(fixed.WantsSample(1e9));
  for (int t : RunSteps(single, Repeat(0, 30))) EXPECT_EQ(t, 1);
}

TEST(ThreadGovernorTest, AScriptIsFollowedAndClampedToThePool) {
  ThreadGovernor g(4, 4, true, {1, 4, 2, 9});
  std::vector<int> teams;
  for (int s = 0; s < 8; ++s) {
    teams.push_back(g.BeginStep());
    g.EndStep(s, 3);
  }
  EXPECT_EQ(teams, (std::vector<int>{1, 4, 2, 4, 1, 4, 2, 4}));
}

}  // namespace
}  // namespace mnt::cpu
