#include "trainer/tensorboard/event_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "trainer/tensorboard/tfrecord.h"

namespace mnt::tensorboard {

namespace fs = std::filesystem;
using mantissa::tensorboard::Event;
using mantissa::tensorboard::Summary;

double WallTimeNow() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(
    const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create TensorBoard directory ", dir, ": ",
        ec ? ec.message() : "not a directory"));
  }
  // Unique per process and call: two writers (or two runs started in the
  // same second) never share a file. O_EXCL: an existing file is never
  // appended to or truncated.
  static std::atomic<int> counter{0};
  const int64_t seconds = static_cast<int64_t>(WallTimeNow());
  std::string path;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    path = absl::StrCat(dir, "/events.out.tfevents.", seconds, ".", HostName(),
                        ".", getpid(), ".", counter++);
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create TensorBoard event file ", path, ": ", std::strerror(errno)));
  }
  FILE* file = fdopen(fd, "wb");
  if (file == nullptr) {
    close(fd);
    return absl::InternalError(absl::StrCat("fdopen ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<EventFileWriter> w(new EventFileWriter(path, file));
  Event version;
  version.set_wall_time(WallTimeNow());
  version.set_file_version("brain.Event:2");
  if (absl::Status s = w->Write(version); !s.ok()) return s;
  if (absl::Status s = w->Flush(); !s.ok()) return s;
  return w;
}

EventFileWriter::~EventFileWriter() {
  (void)Flush();
  std::fclose(file_);
}

absl::Status EventFileWriter::Write(const Event& event) {
  std::string payload;
  if (!event.SerializeToString(&payload)) {
    return absl::InternalError("cannot serialize a TensorBoard event");
  }
  AppendRecord(payload, &buffer_);
  return absl::OkStatus();
}

absl::Status EventFileWriter::AddScalar(const std::string& tag, int64_t step,
                                        double value, double wall_time) {
  Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return Write(e);
}

absl::Status EventFileWriter::AddText(const std::string& tag, int64_t step,
                                      const std::string& text, double wall_time) {
  Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  // TensorBoard's text plugin: a scalar DT_STRING tensor tagged "text".
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  constexpr int kDtString = 7;
  v->mutable_tensor()->set_dtype(kDtString);
  v->mutable_tensor()->add_string_val(text);
  return Write(e);
}

absl::Status EventFileWriter::Flush() {
  if (!buffer_.empty()) {
    const size_t n = std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
    if (n != buffer_.size()) {
      return absl::DataLossError(
          absl::StrCat("cannot write ", path_, ": ", std::strerror(errno)));
    }
    buffer_.clear();
  }
  if (std::fflush(file_) != 0) {
    return absl::DataLossError(
        absl::StrCat("cannot write ", path_, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace mnt::tensorboard
