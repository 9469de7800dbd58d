// Mantissa plugin SDK: a small status type and the plugin-side MNT_Error.
//
// Header-only and free of absl so that plugins stay self-contained .so files.
// Each plugin gets its own definition of struct MNT_Error: the type is opaque
// across the ABI, and the host always frees an error with the Error_Destroy of
// the plugin that made it.
#ifndef MANTISSA_PLUGINS_SDK_STATUS_H_
#define MANTISSA_PLUGINS_SDK_STATUS_H_

#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>

#include "plugins/abi/mnt_common.h"

struct MNT_Error {
  MNT_ErrorCode code;
  std::string message;
};

namespace mnt::sdk {

class Status {
 public:
  Status() = default;
  Status(MNT_ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == MNT_ERROR_OK; }
  MNT_ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  MNT_ErrorCode code_ = MNT_ERROR_OK;
  std::string message_;
};

// printf-style message builder; messages stay one line.
inline std::string Format(const char* fmt, ...)
    __attribute__((format(printf, 1, 2)));
inline std::string Format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

inline Status InvalidArgument(std::string m) {
  return Status(MNT_ERROR_INVALID_ARGUMENT, std::move(m));
}
inline Status Internal(std::string m) {
  return Status(MNT_ERROR_INTERNAL, std::move(m));
}
inline Status Unimplemented(std::string m) {
  return Status(MNT_ERROR_UNIMPLEMENTED, std::move(m));
}
inline Status FailedPrecondition(std::string m) {
  return Status(MNT_ERROR_FAILED_PRECONDITION, std::move(m));
}
inline Status ResourceExhausted(std::string m) {
  return Status(MNT_ERROR_RESOURCE_EXHAUSTED, std::move(m));
}

// Converts to the ABI form: NULL on success, else a new error the caller owns.
inline MNT_Error* ToError(const Status& s) {
  if (s.ok()) return nullptr;
  return new MNT_Error{s.code(), s.message()};
}

// The three error entry points every plugin exposes in its MNT_Plugin_Api.
inline void ErrorDestroy(MNT_Error* error) { delete error; }
inline const char* ErrorMessage(const MNT_Error* error) {
  return error->message.c_str();
}
inline MNT_ErrorCode ErrorGetCode(const MNT_Error* error) { return error->code; }

}  // namespace mnt::sdk

#define MNT_RETURN_IF_ERROR(expr)                 \
  do {                                            \
    ::mnt::sdk::Status mnt_status_ = (expr);      \
    if (!mnt_status_.ok()) return mnt_status_;    \
  } while (0)

#endif  // MANTISSA_PLUGINS_SDK_STATUS_H_
