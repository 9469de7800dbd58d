// How many threads of other processes want a CPU right now: the input of
// the thread governor (thread_governor.h), read from Linux's /proc.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_RUNNABLE_THREADS_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_RUNNABLE_THREADS_H_

namespace mnt::cpu {

// The scheduler's runnable count (/proc/loadavg's "running/total" field)
// minus this process's runnable threads (state R in /proc/self/task), at
// least 0; -1 when /proc cannot be read (the governor then keeps its team).
double OtherRunnableThreads();

// The runnable count's parts, for tests: the first number of `loadavg`'s
// fourth field (-1 if malformed), and whether `stat` (a /proc/.../stat
// line) says its thread is runnable.
int ParseRunningField(const char* loadavg);
bool StatSaysRunnable(const char* stat);

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_RUNNABLE_THREADS_H_
