// One thread that runs a communicator's started collectives (mnt_collectives.h,
// version 2) one after another in the order they were submitted, so the host
// thread computes while a collective exchanges and waits for slower ranks.
// Knows nothing of MPI: a job is any function returning a Status.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVE_WORKER_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVE_WORKER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include "plugins/sdk/status.h"

namespace mnt::cpu {

class CollectiveWorker {
 public:
  using Job = std::function<sdk::Status()>;

  CollectiveWorker();
  // Runs the jobs still queued, then joins the thread; results nobody
  // collected are dropped.
  ~CollectiveWorker();
  CollectiveWorker(const CollectiveWorker&) = delete;
  CollectiveWorker& operator=(const CollectiveWorker&) = delete;

  // Queues `job` after every job submitted before it; returns its ticket.
  // Once a job failed, later jobs are not run: each reports that failure
  // (a communicator that lost a collective midway is unusable).
  uint64_t Submit(Job job);

  // Blocks until the job of `ticket` has run and returns its status; each
  // ticket is waited for at most once, in any order. An unknown or already
  // collected ticket is InvalidArgument.
  sdk::Status Wait(uint64_t ticket);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable queued_;    // the worker waits for jobs
  std::condition_variable finished_;  // Wait waits for results
  std::deque<std::pair<uint64_t, Job>> queue_;
  std::map<uint64_t, sdk::Status> results_;  // finished, not yet collected
  std::set<uint64_t> pending_;               // submitted, not finished
  uint64_t next_ticket_ = 1;
  sdk::Status first_failure_ = sdk::Status::Ok();
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVE_WORKER_H_
