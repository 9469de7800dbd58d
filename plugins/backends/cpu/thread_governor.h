// How many of its pool's threads the CPU backend runs each training step
// on: the cores that other processes leave free.
//
// Why: a parallel region waits for its slowest thread, and a thread the OS
// has descheduled holds every region of the step (gpt2-tiny opens ~200 a
// step). Measured on 2 cores beside two CPU-bound processes: steps on 2
// threads mostly as fast as on 1 but every ~20th one 10-20x slower (a
// worker descheduled), 1.7x slower on average; on a quiet machine 2 threads
// ran 1.5x faster than 1.
//
// Why not step times: those tails make one step's time (a probe) say
// little about a team size's average, and waiting for enough steps at the
// wrong size costs what the choice should save. The load average lags by
// minutes and counts this process's own threads. What is read instead is
// the scheduler's count of runnable threads right now (/proc/loadavg's
// fourth field) minus this process's own runnable ones (/proc/self/task),
// when the backend is created and after each step, at most every
// kSampleSeconds; the team is the cores left free by the median of the last
// kHistory samples, at least 1, rounded down to pool, pool/2, ..., 1. A
// process that takes a core for a moment does not move the median (once a
// few samples exist); one that keeps it does within kHistory/2 samples.
//
// The team size never changes results: every kernel splits its work so each
// output element is computed by one thread in a fixed order, and GEMMs are
// cut into tiles by the pool size, not the team (gemm_tiles.h).
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_THREAD_GOVERNOR_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_THREAD_GOVERNOR_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace mnt::cpu {

class ThreadGovernor {
 public:
  static constexpr int kHistory = 8;              // samples the median is over
  static constexpr double kSampleSeconds = 0.02;  // at most one sample this often

  // pool: the most threads a step may use (>= 1); cpus: the cores online.
  // adaptive = false keeps the pool (threads=N given). script: team sizes
  // steps cycle through instead (the backend's step_teams option, for
  // tests that the team never changes bits), clamped to [1, pool].
  ThreadGovernor(int pool, int cpus, bool adaptive, std::vector<int> script = {});

  // Whether EndStep wants a sample of other processes' runnable threads
  // (they cost a few file reads) at `now_seconds` (any steady clock).
  bool WantsSample(double now_seconds) const;
  // A sample taken outside a step (the backend takes one when created, so
  // a machine busy from the start runs its first step on the right team).
  void Sample(double now_seconds, double others_runnable);
  // The team size for the step about to run.
  int BeginStep();
  // The step ended; others_runnable: other processes' runnable threads,
  // sampled now, or < 0 when not sampled.
  void EndStep(double now_seconds, double others_runnable);

  int pool() const { return pool_; }
  int team() const { return team_; }
  // Steps run so far at each team size, ascending ("1:40 2:260").
  std::string StepsByTeam() const;
  // Steps run on fewer threads than the pool, and the most cores other
  // processes kept busy (the median that decided) while they ran.
  int64_t StepsBelowPool() const;
  double BusiestCores() const { return busiest_; }
  // Set when the last EndStep or Sample changed the team size: why, in a
  // few words; empty otherwise.
  const std::string& change() const { return change_; }

 private:
  static double Median(const std::deque<double>& v);
  // The largest of pool, pool/2, ..., 1 that is <= threads.
  int Level(double threads) const;

  const int pool_;
  const int cpus_;
  const bool adaptive_;
  const std::vector<int> script_;
  int team_;
  int64_t step_ = 0;
  double last_sample_ = -1e300;
  std::deque<double> others_;  // latest last
  std::vector<int64_t> steps_by_team_;  // index: team size
  double busiest_ = 0;
  std::string change_;
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_THREAD_GOVERNOR_H_
