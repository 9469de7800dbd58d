// Launching a test's training job under Open MPI's mpirun on this machine:
// the command prefix, with the environment that lets concurrent sandboxed
// tests run jobs side by side.
#ifndef MANTISSA_TESTS_INTEGRATION_MPI_LAUNCH_H_
#define MANTISSA_TESTS_INTEGRATION_MPI_LAUNCH_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace mnt::testing {

// Open MPI's files go to a directory of this test's own: Bazel's sandbox
// gives each test a PID namespace, so concurrent tests' mpirun get the same
// pid, hence the same job id, and their shared-memory segments in /dev/shm
// (and session directories) would collide (seen with the conformance tests
// under mpirun: tools/plugin_conformance/mpi_conformance_test.sh). Short,
// under /tmp, for PMIx's socket paths (108 bytes).
inline void UsePrivateMpiSessionDirectory() {
  static const bool done = [] {
    char dir[] = "/tmp/mnt-mpi.XXXXXX";
    const char* t = std::getenv("TEST_TMPDIR");
    std::string path = mkdtemp(dir) != nullptr ? dir : (t ? t : "/tmp");
    setenv("TMPDIR", path.c_str(), 1);
    setenv("OMPI_MCA_btl_vader_backing_directory", path.c_str(), 1);
    // All ranks are local: shared memory and self only, no TCP probing.
    setenv("OMPI_MCA_btl", "self,vader", 1);
    static std::string to_remove = path;
    std::atexit([] {
      std::error_code ec;
      if (to_remove.rfind("/tmp/mnt-mpi.", 0) == 0) std::filesystem::remove_all(to_remove, ec);
    });
    return true;
  }();
  (void)done;
}

// mpirun's own options: --oversubscribe (more ranks than this machine's 2
// cores) and root allowed where the tests run as root (containers).
inline std::string Mpirun(int ranks) {
  UsePrivateMpiSessionDirectory();
  std::string cmd = "mpirun --oversubscribe -np " + std::to_string(ranks);
  if (geteuid() == 0) cmd += " --allow-run-as-root";
  return cmd;
}

}  // namespace mnt::testing

#endif  // MANTISSA_TESTS_INTEGRATION_MPI_LAUNCH_H_
