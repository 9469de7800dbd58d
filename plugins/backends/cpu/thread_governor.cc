#include "plugins/backends/cpu/thread_governor.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "plugins/sdk/status.h"

namespace mnt::cpu {

ThreadGovernor::ThreadGovernor(int pool, int cpus, bool adaptive, std::vector<int> script)
    : pool_(std::max(pool, 1)),
      cpus_(std::max(cpus, 1)),
      adaptive_(adaptive && pool > 1 && script.empty()),
      script_(std::move(script)),
      team_(std::max(pool, 1)),
      steps_by_team_(static_cast<size_t>(std::max(pool, 1)) + 1, 0) {}

double ThreadGovernor::Median(const std::deque<double>& v) {
  std::vector<double> sorted(v.begin(), v.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

int ThreadGovernor::Level(double threads) const {
  int level = pool_;
  while (level > 1 && level > threads) level /= 2;
  return level;
}

bool ThreadGovernor::WantsSample(double now_seconds) const {
  return adaptive_ && now_seconds - last_sample_ >= kSampleSeconds;
}

int ThreadGovernor::BeginStep() {
  if (!script_.empty()) {
    team_ = std::clamp(script_[static_cast<size_t>(step_) % script_.size()], 1, pool_);
  }
  return team_;
}

void ThreadGovernor::EndStep(double now_seconds, double others_runnable) {
  change_.clear();
  ++step_;
  ++steps_by_team_[static_cast<size_t>(team_)];
  Sample(now_seconds, others_runnable);
}

void ThreadGovernor::Sample(double now_seconds, double others_runnable) {
  change_.clear();
  if (!adaptive_ || others_runnable < 0) return;
  last_sample_ = now_seconds;
  others_.push_back(others_runnable);
  if (static_cast<int>(others_.size()) > kHistory) others_.pop_front();
  const double busy = Median(others_);
  const int team = Level(std::floor(static_cast<double>(cpus_) - busy));
  if (team < pool_) busiest_ = std::max(busiest_, busy);
  if (team == team_) return;
  change_ = sdk::Format("%d thread%s (other processes keep %.1f of the %d cores busy)", team,
                        team == 1 ? "" : "s", busy, cpus_);
  team_ = team;
}

int64_t ThreadGovernor::StepsBelowPool() const {
  int64_t n = 0;
  for (size_t t = 1; t < static_cast<size_t>(pool_); ++t) n += steps_by_team_[t];
  return n;
}

std::string ThreadGovernor::StepsByTeam() const {
  std::string s;
  for (size_t t = 1; t < steps_by_team_.size(); ++t) {
    if (steps_by_team_[t] == 0) continue;
    s += sdk::Format("%s%zu:%lld", s.empty() ? "" : " ", t,
                     static_cast<long long>(steps_by_team_[t]));
  }
  return s;
}

}  // namespace mnt::cpu
