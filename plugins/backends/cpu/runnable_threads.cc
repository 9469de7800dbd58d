#include "plugins/backends/cpu/runnable_threads.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mnt::cpu {

int ParseRunningField(const char* loadavg) {
  // "0.52 0.58 0.59 3/467 12345": the fourth field is running/total.
  const char* p = loadavg;
  for (int field = 0; field < 3; ++field) {
    while (*p == ' ') ++p;
    while (*p != '\0' && *p != ' ') ++p;
  }
  while (*p == ' ') ++p;
  char* end = nullptr;
  const long running = std::strtol(p, &end, 10);
  if (end == p || *end != '/' || running < 0) return -1;
  return static_cast<int>(running);
}

bool StatSaysRunnable(const char* stat) {
  // "<tid> (<comm>) <state> ...": comm may hold spaces and ')', so the
  // state follows the last ')'.
  const char* close = std::strrchr(stat, ')');
  return close != nullptr && close[1] == ' ' && close[2] == 'R';
}

namespace {

bool ReadSmallFile(const char* path, char* buf, size_t size) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  const size_t n = std::fread(buf, 1, size - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  return n > 0;
}

}  // namespace

double OtherRunnableThreads() {
  char buf[512];
  if (!ReadSmallFile("/proc/loadavg", buf, sizeof buf)) return -1;
  const int running = ParseRunningField(buf);
  if (running < 0) return -1;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  int own = 0;
  while (const dirent* e = readdir(tasks)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/stat";
    if (ReadSmallFile(path.c_str(), buf, sizeof buf) && StatSaysRunnable(buf)) ++own;
  }
  closedir(tasks);
  return running > own ? running - own : 0;
}

}  // namespace mnt::cpu
