// Loads a plugin file in a forked child first, so that a plugin that crashes
// or hangs while loading (static initialisers, MNT_GetPluginApi,
// Plugin_Initialize) is reported in one line instead of taking the calling
// tool down: "<file>: plugin crashed in Plugin_Initialize (signal 11,
// Segmentation fault)". Used by plugin_info and plugin_conformance before they
// load a plugin into their own process.
#ifndef MANTISSA_TOOLS_PLUGIN_INFO_PLUGIN_PROBE_H_
#define MANTISSA_TOOLS_PLUGIN_INFO_PLUGIN_PROBE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace mnt::tools {

// OK when `path` loads, validates (PluginRegistry's rules) and initializes in
// a child process within `timeout_seconds`. Otherwise one line naming the
// file and what went wrong: the loader's refusal, or the stage the child
// crashed or hung in.
absl::Status ProbePluginInChild(const std::string& path,
                                int timeout_seconds = 60);

// Names of the global symbols `path` (an ELF shared object) defines in its
// dynamic symbol table, sorted. Error for a file that is not ELF64.
absl::Status ExportedSymbols(const std::string& path,
                             std::vector<std::string>* out);

}  // namespace mnt::tools

#endif  // MANTISSA_TOOLS_PLUGIN_INFO_PLUGIN_PROBE_H_
