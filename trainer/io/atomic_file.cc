#include "trainer/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace mnt {
namespace trainer {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Writes all of `data`, retrying short writes and EINTR.
bool WriteAll(int fd, absl::string_view data, int* err) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

absl::Status FsyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open directory ", dir, " to fsync: ", ErrnoText(errno)));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("fsync of directory ", dir, " failed: ", ErrnoText(err)));
  }
  return absl::OkStatus();
}

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", path, ": creating ", tmp, " failed: ", ErrnoText(errno)));
  }
  int err = 0;
  std::string step;
  if (!WriteAll(fd, contents, &err)) {
    step = "writing";
  } else if (::fsync(fd) != 0) {
    err = errno;
    step = "fsync of";
  }
  // close() can report a deferred write error (e.g. NFS, quota).
  if (::close(fd) != 0 && step.empty()) {
    err = errno;
    step = "closing";
  }
  if (step.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    step = "renaming over the target";
  }
  if (!step.empty()) {
    ::unlink(tmp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": ", step, " ", tmp, " failed: ", ErrnoText(err)));
  }
  // The rename is only durable once the directory entry is on disk.
  return FsyncDirectory(DirectoryOf(path));
}

absl::Status MakeDirectories(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("cannot create a directory with an empty name");
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create directory ", prefix, ": ", ErrnoText(errno)));
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

absl::Status ReadWholeFile(const std::string& path, std::string* contents,
                           int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before we can
  // refuse it. Regular files ignore the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = absl::StrCat("cannot open ", path, ": ", ErrnoText(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  contents->clear();
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::DataLossError(absl::StrCat("cannot stat ", path, ": ", ErrnoText(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    // A directory reads as nothing, /dev/zero as everything: neither is data.
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", FileKind(st.st_mode), ", expected a regular file"));
  }
  if (st.st_size > max_bytes) {
    ::close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat(path, " has ", st.st_size, " bytes, more than the ", max_bytes,
                     " this reader loads"));
  }
  contents->reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return absl::DataLossError(absl::StrCat("cannot read ", path, ": ", ErrnoText(err)));
    }
    if (n == 0) break;
    if (static_cast<int64_t>(contents->size()) + n > max_bytes) {
      ::close(fd);  // grew while we read it
      return absl::ResourceExhaustedError(
          absl::StrCat(path, " grew past the ", max_bytes, " bytes this reader loads"));
    }
    contents->append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return absl::OkStatus();
}

absl::Status CheckRegularFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    const std::string msg = absl::StrCat("cannot open ", path, ": ", ErrnoText(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", FileKind(st.st_mode), ", expected a regular file"));
  }
  return absl::OkStatus();
}

std::vector<std::string> RemoveStaleTempFiles(const std::string& dir) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return removed;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const size_t mark = name.rfind(".tmp.");
    if (mark == std::string::npos || mark == 0) continue;
    const std::string digits = name.substr(mark + 5);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    // A live writer (another run on the same directory) keeps its file.
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::unlink(path.c_str()) == 0) removed.push_back(name);
  }
  ::closedir(d);
  return removed;
}

}  // namespace trainer
}  // namespace mnt
