// The "flaky" test backend: the CPU backend with an injected Backend_Run
// failure, for testing how errors surface mid-step (tests/abi) and how the
// trainer ends a run cleanly when a step fails.
//
// Backend_Create options: "fail_after=N" (N >= 1): Backend_Run calls
// 1..N-1 are forwarded to the CPU backend, call N and every later one fail
// with MNT_ERROR_INTERNAL and the message
//   "flaky backend: injected failure in Backend_Run call <call number>".
// Without fail_after (or fail_after=0) nothing fails. "report_slow_paths=1":
// Backend_GetInfo's slow_paths (ABI 1.8) reports "<N> x injected slow path:
// every Backend_Run" with N the Backend_Run calls so far. Every other key is
// passed on to the CPU backend (e.g. "threads=1"). Counts are per instance.
//
// Built as //tests/abi:mnt_backend_flaky.so; tests may link
// //tests/abi:flaky_backend_lib and call FlakyBackendPluginApi() instead.
#ifndef MANTISSA_TESTS_ABI_FLAKY_BACKEND_H_
#define MANTISSA_TESTS_ABI_FLAKY_BACKEND_H_

#include <cstdint>

#include "plugins/abi/mantissa.h"

namespace mnt::abi_test {

const MNT_Plugin_Api* FlakyBackendPluginApi();

// Errors made by the flaky plugin and not yet freed with its Error_Destroy,
// in this copy of the plugin (a statically linked one; a dlopen()ed .so has
// its own counter). Zero after every error was handed back: no leak.
int64_t FlakyLiveErrorCount();

}  // namespace mnt::abi_test

#endif  // MANTISSA_TESTS_ABI_FLAKY_BACKEND_H_
