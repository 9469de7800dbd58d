#include "trainer/core/stop_signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace mnt::trainer {
namespace {

std::atomic<int> g_pending{0};
static_assert(std::atomic<int>::is_always_lock_free, "read and written in a signal handler");

void Say(const char* text) {
  // write(2) is async-signal-safe; stdio is not.
  ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void OnStopSignal(int sig) {
  int expected = 0;
  if (g_pending.compare_exchange_strong(expected, sig)) {
    Say(sig == SIGINT ? "\nmantissa: Ctrl-C: stopping after this step and saving a checkpoint "
                        "(Ctrl-C again stops at once)\n"
                      : "\nmantissa: SIGTERM: stopping after this step and saving a "
                        "checkpoint\n");
    return;
  }
  // Asked twice: the default action, now (the step in flight is lost).
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in flight carry on
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int PendingStopSignal() { return g_pending.load(std::memory_order_relaxed); }

const char* StopSignalName(int signal_number) {
  switch (signal_number) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: {
      static thread_local char buf[32];
      std::snprintf(buf, sizeof buf, "signal %d", signal_number);
      return buf;
    }
  }
}

}  // namespace mnt::trainer
