#include "trainer/checkpoint/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

absl::Status ReadWholeFile(const std::string& path, std::string* contents) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = absl::StrCat("cannot open ", path, ": ", ErrnoText(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  contents->clear();
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) contents->reserve(st.st_size);
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
    contents->append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return absl::OkStatus();
}

}  // namespace trainer
}  // namespace mnt
