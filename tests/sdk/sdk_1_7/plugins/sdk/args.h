// Mantissa plugin SDK: checks every ABI entry point makes on its Args struct.
#ifndef MANTISSA_PLUGINS_SDK_ARGS_H_
#define MANTISSA_PLUGINS_SDK_ARGS_H_

#include <cstddef>
#include <exception>

#include "plugins/sdk/status.h"

namespace mnt::sdk {

// A caller built against an older minor passes a shorter struct; one built
// against a newer minor may pass a longer one. Shorter than what this side
// needs is an error (PJRT's ActualStructSizeIsGreaterOrEqual).
inline Status CheckStructSize(const char* struct_name, size_t expected,
                              size_t actual) {
  if (actual < expected) {
    return InvalidArgument(Format(
        "%s: struct_size %zu is smaller than the %zu bytes this plugin needs",
        struct_name, actual, expected));
  }
  return Status::Ok();
}

// Runs `body` (returning Status) so that no C++ exception crosses the ABI.
template <typename Body>
MNT_Error* Guard(const char* call_name, Body&& body) noexcept {
  try {
    return ToError(body());
  } catch (const std::bad_alloc&) {
    return ToError(ResourceExhausted(Format("%s: out of host memory", call_name)));
  } catch (const std::exception& e) {
    return ToError(Internal(Format("%s: %s", call_name, e.what())));
  } catch (...) {
    return ToError(Internal(Format("%s: unknown exception", call_name)));
  }
}

}  // namespace mnt::sdk

// Every entry point begins with this: null args and short structs are errors.
#define MNT_CHECK_ARGS(ArgsType, args)                                       \
  do {                                                                       \
    if ((args) == nullptr)                                                   \
      return ::mnt::sdk::InvalidArgument(#ArgsType ": args is NULL");        \
    MNT_RETURN_IF_ERROR(::mnt::sdk::CheckStructSize(                         \
        #ArgsType, ArgsType##_STRUCT_SIZE, (args)->struct_size));            \
  } while (0)

#endif  // MANTISSA_PLUGINS_SDK_ARGS_H_
