#include "plugins/backends/cpu/collective_worker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::cpu {
namespace {

TEST(CollectiveWorkerTest, RunsJobsInSubmissionOrderAndWaitsInAnyOrder) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  CollectiveWorker worker;
  std::vector<int> order;  // written by the worker thread only
  std::vector<uint64_t> tickets;
  const int n = 20 + static_cast<int>(rng() % 20);
  for (int i = 0; i < n; ++i) {
    const int sleep_us = static_cast<int>(rng() % 300);
    tickets.push_back(worker.Submit([i, sleep_us, &order] {
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      order.push_back(i);
      return sdk::Status::Ok();
    }));
  }
  std::vector<size_t> waits(tickets.size());
  for (size_t i = 0; i < waits.size(); ++i) waits[i] = i;
  std::shuffle(waits.begin(), waits.end(), rng);
  for (size_t k : waits) EXPECT_TRUE(worker.Wait(tickets[k]).ok());
  ASSERT_EQ(order.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(order[i], i);
}

TEST(CollectiveWorkerTest, SubmitReturnsBeforeTheJobRuns) {
  // The host thread must not wait for the job: a job that waits for the
  // host to go on would deadlock a synchronous Submit.
  CollectiveWorker worker;
  std::atomic<bool> host_went_on{false};
  const uint64_t t = worker.Submit([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!host_went_on.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return host_went_on.load() ? sdk::Status::Ok() : sdk::Internal("the host never went on");
  });
  host_went_on.store(true);
  const sdk::Status s = worker.Wait(t);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(CollectiveWorkerTest, AFailureFailsEveryLaterJobWithoutRunningIt) {
  CollectiveWorker worker;
  std::atomic<int> ran{0};
  const uint64_t ok = worker.Submit([&] { ++ran; return sdk::Status::Ok(); });
  const uint64_t bad = worker.Submit([&] { ++ran; return sdk::Internal("rank 1 went away"); });
  const uint64_t later = worker.Submit([&] { ++ran; return sdk::Status::Ok(); });
  EXPECT_TRUE(worker.Wait(ok).ok());
  const sdk::Status b = worker.Wait(bad), l = worker.Wait(later);
  EXPECT_EQ(b.code(), MNT_ERROR_INTERNAL);
  EXPECT_EQ(l.code(), MNT_ERROR_INTERNAL);
  EXPECT_EQ(l.message(), "rank 1 went away");
  EXPECT_EQ(ran.load(), 2);
}

TEST(CollectiveWorkerTest, ATicketIsWaitedForOnce) {
  CollectiveWorker worker;
  const uint64_t t = worker.Submit([] { return sdk::Status::Ok(); });
  EXPECT_TRUE(worker.Wait(t).ok());
  EXPECT_EQ(worker.Wait(t).code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(worker.Wait(t + 100).code(), MNT_ERROR_INVALID_ARGUMENT);
}

TEST(CollectiveWorkerTest, DestructionRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    CollectiveWorker worker;
    for (int i = 0; i < 8; ++i) {
      worker.Submit([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ++ran;
        return sdk::Status::Ok();
      });
    }
  }
  EXPECT_EQ(ran.load(), 8);
}

}  // namespace
}  // namespace mnt::cpu
