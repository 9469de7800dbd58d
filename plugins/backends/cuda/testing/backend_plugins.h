// The backends a GPU test compares, loaded from their plugin files
// (mnt_backend_cuda.so and the CPU reference mnt_backend_cpu.so), the
// artifacts that ship, instead of linking a copy of each backend into every
// test binary: the tests stay small enough for the device bundle, and they
// need no BLAS or cuBLAS themselves.
//
// Where: each directory of $MANTISSA_PLUGIN_PATH (':'-separated), then
// <runfiles>/mantissa/plugins/backends/<name>/ with <runfiles> = $TEST_SRCDIR,
// else $RUNFILES_DIR, else the working directory (the device bundle sets
// both variables to its one shared runfiles tree). A plugin that cannot be
// found or loaded ends the test binary with one line naming the paths tried
// or the dlopen error.
//
// This library also defines mnt::cuda::CudaBackendPluginApi() (declared in
// cuda_backend.h) as the loaded plugin's table, so tests written against the
// linked backend run against the plugin file unchanged. A target must not
// link both this and //plugins/backends/cuda:cuda_backend_lib.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_BACKEND_PLUGINS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_BACKEND_PLUGINS_H_

#include <string>

#include "plugins/abi/mantissa.h"

namespace mnt::cuda::testing {

// The table of mnt_backend_<name>.so ("cuda", "cpu"), loaded once (never
// unloaded); exits the process with a message when it cannot be loaded.
const MNT_Plugin_Api* BackendPlugin(const std::string& name);

}  // namespace mnt::cuda::testing

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_BACKEND_PLUGINS_H_
