#include "plugins/backends/cpu/collective_worker.h"

#include <utility>

namespace mnt::cpu {

CollectiveWorker::CollectiveWorker() : thread_([this] { Loop(); }) {}

CollectiveWorker::~CollectiveWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  queued_.notify_all();
  thread_.join();
}

uint64_t CollectiveWorker::Submit(Job job) {
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ticket = next_ticket_++;
    pending_.insert(ticket);
    queue_.emplace_back(ticket, std::move(job));
  }
  queued_.notify_one();
  return ticket;
}

sdk::Status CollectiveWorker::Wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  if (pending_.count(ticket) == 0 && results_.count(ticket) == 0) {
    return sdk::InvalidArgument("collective work is not outstanding (waited for twice?)");
  }
  finished_.wait(lock, [&] { return results_.count(ticket) != 0; });
  sdk::Status s = std::move(results_[ticket]);
  results_.erase(ticket);
  return s;
}

void CollectiveWorker::Loop() {
  for (;;) {
    std::pair<uint64_t, Job> next;
    sdk::Status failed = sdk::Status::Ok();
    {
      std::unique_lock<std::mutex> lock(mu_);
      queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every job has run
      next = std::move(queue_.front());
      queue_.pop_front();
      failed = first_failure_;
    }
    // The job runs unlocked: Submit and Wait stay responsive meanwhile.
    sdk::Status s = failed.ok() ? next.second() : failed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok() && first_failure_.ok()) first_failure_ = s;
      pending_.erase(next.first);
      results_[next.first] = std::move(s);
    }
    finished_.notify_all();
  }
}

}  // namespace mnt::cpu
