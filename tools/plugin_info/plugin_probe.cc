#include "tools/plugin_info/plugin_probe.h"

#include <dlfcn.h>
#include <elf.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "plugins/abi/mantissa.h"
#include "tools/plugin_info/elf_symbols.h"
#include "trainer/loader/plugin_registry.h"


// As trainer/loader/plugin_file.h: under ASan a plugin stays mapped after
// dlclose, so LeakSanitizer can still see its libraries' globals.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
#else
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL;
#endif
namespace mnt::tools {
namespace {

// The child reports each stage before entering it ("S<stage>\n"), then either
// "E<one-line error>\n" or "OK\n". A crash leaves the last stage as the
// culprit.
void WriteLine(int fd, const std::string& line) {
  std::string s = line + "\n";
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

[[noreturn]] void ChildProbe(const std::string& path, int fd) {
  // The parent names the signal that ended this child, so a crash must end it
  // by that signal: a handler inherited from the host process (a sanitizer's
  // or a crash reporter's) would turn a segfault into its own abort or exit.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
  WriteLine(fd, "Sdlopen (static initialisers)");
  // A bare file name would make dlopen() search the library path (and miss
  // the file in the current directory); the loader does the same.
  const std::string open_path =
      path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(open_path.c_str(), kDlopenFlags);
  if (handle == nullptr) {
    const char* err = dlerror();
    WriteLine(fd, absl::StrCat("E", path, ": dlopen failed: ",
                               err ? err : "unknown error"));
    _exit(1);
  }
  auto* get = reinterpret_cast<MNT_GetPluginApi_Fn*>(
      dlsym(handle, MNT_PLUGIN_ENTRY_SYMBOL));
  if (get == nullptr) {
    WriteLine(fd, absl::StrCat("E", path,
                               ": not a Mantissa plugin: it does not export ",
                               MNT_PLUGIN_ENTRY_SYMBOL));
    _exit(1);
  }
  WriteLine(fd, "SMNT_GetPluginApi");
  const MNT_Plugin_Api* api = get();
  WriteLine(fd, "Svalidation");
  if (absl::Status s = trainer::ValidatePluginApi(api, path); !s.ok()) {
    WriteLine(fd, absl::StrCat("E", s.message()));
    _exit(1);
  }
  if (api->Plugin_Initialize != nullptr) {
    WriteLine(fd, "SPlugin_Initialize");
    if (MNT_Error* e = api->Plugin_Initialize()) {
      absl::Status s = trainer::StatusFromPluginError(api, e);
      WriteLine(fd, absl::StrCat("E", path, ": Plugin_Initialize failed: ",
                                 s.message()));
      _exit(1);
    }
  }
  WriteLine(fd, "OK");
  _exit(0);  // no destructors, no dlclose: the parent loads it for real
}

double Now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

}  // namespace

absl::Status ProbePluginInChild(const std::string& path, int timeout_seconds) {
  int fds[2];
  if (pipe(fds) != 0) {
    return absl::InternalError(
        absl::StrCat(path, ": probe: pipe failed: ", strerror(errno)));
  }
  fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(
        absl::StrCat(path, ": probe: fork failed: ", strerror(errno)));
  }
  if (pid == 0) {
    close(fds[0]);
    ChildProbe(path, fds[1]);
  }
  close(fds[1]);

  std::string output;
  const double deadline = Now() + timeout_seconds;
  bool timed_out = false;
  for (;;) {
    const double left = deadline - Now();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed the pipe: it exited
    output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  std::string stage = "loading", error;
  bool ok = false;
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    if (line[0] == 'S') stage = line.substr(1);
    if (line[0] == 'E') error = line.substr(1);
    if (line == "OK") ok = true;
  }
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(path, ": plugin hung in ", stage, " (killed after ",
                     timeout_seconds, " s)"));
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return absl::AbortedError(absl::StrCat(path, ": plugin crashed in ", stage,
                                           " (signal ", sig, ", ",
                                           strsignal(sig), ")"));
  }
  if (!error.empty()) return absl::FailedPreconditionError(error);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::AbortedError(absl::StrCat(
        path, ": plugin exited the process in ", stage, " (exit status ",
        WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")"));
  }
  return absl::OkStatus();
}

absl::Status ExportedSymbols(const std::string& path,
                             std::vector<std::string>* out) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  if (!f.eof() && bytes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an ELF64 shared object (unreadable)"));
  }
  return ExportedSymbolsFromBytes(bytes, path, out);
}

}  // namespace mnt::tools
