// Writes one TensorBoard event file: scalars (the Scalars tab) and text (the
// Text tab), each an Event record in TFRecord framing, in the file
//   <dir>/events.out.tfevents.<unix seconds>.<hostname>.<pid>.<n>
// that `tensorboard --logdir=<dir>` picks up while it is being written.
#ifndef MANTISSA_TRAINER_TENSORBOARD_EVENT_WRITER_H_
#define MANTISSA_TRAINER_TENSORBOARD_EVENT_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/tensorboard/event.pb.h"

namespace mnt::tensorboard {

// Seconds since the Unix epoch, with sub-second resolution.
double WallTimeNow();

class EventFileWriter {
 public:
  // Creates `dir` (and its parents) if needed and a new event file in it,
  // starting with the file-version record. Never touches existing files.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Create(
      const std::string& dir);
  ~EventFileWriter();

  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Stored as float, as TensorBoard's simple_value is.
  absl::Status AddScalar(const std::string& tag, int64_t step, double value,
                         double wall_time);
  // Shown as Markdown in the Text tab.
  absl::Status AddText(const std::string& tag, int64_t step,
                       const std::string& text, double wall_time);
  absl::Status Write(const mantissa::tensorboard::Event& event);
  // Makes everything written so far visible to readers.
  absl::Status Flush();

  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::string path, FILE* file)
      : path_(std::move(path)), file_(file) {}

  std::string path_;
  FILE* file_;
  std::string buffer_;
};

}  // namespace mnt::tensorboard

#endif  // MANTISSA_TRAINER_TENSORBOARD_EVENT_WRITER_H_
