// How plugins are named: the kind words and the file a plugin of a kind and
// name is looked up as (mnt_<kind>_<name>.so).
#ifndef MANTISSA_TRAINER_LOADER_PLUGIN_NAMES_H_
#define MANTISSA_TRAINER_LOADER_PLUGIN_NAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/abi/mnt_common.h"

namespace mnt::trainer {

// "backend", "precision", "model" (the word used in file names), or
// "invalid". Both take the raw int32 a plugin reported (sdk::RawEnum): an
// unknown value is never loaded as MNT_PluginKind.
const char* PluginKindName(int32_t kind);

// True for the three kinds a plugin can be.
bool IsPluginKind(int32_t kind);

// Plugin names become part of file names: [A-Za-z0-9_-], not empty.
bool IsValidPluginName(const std::string& name);

// The file a plugin of `kind` called `name` is looked up as:
// mnt_<kind>_<name>.so.
std::string PluginFileName(MNT_PluginKind kind, const std::string& name);

// Whether `file` (a bare file name) is named like a plugin of any kind.
bool IsPluginFileName(const std::string& file);

// Names of the `kind` plugin files in `dir` (unsorted; none if unreadable).
std::vector<std::string> PluginNamesInDir(const std::string& dir,
                                          MNT_PluginKind kind);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_PLUGIN_NAMES_H_
