// Where plugin files are looked for.
#ifndef MANTISSA_TRAINER_LOADER_SEARCH_PATH_H_
#define MANTISSA_TRAINER_LOADER_SEARCH_PATH_H_

#include <string>
#include <vector>

namespace mnt::trainer {

// The directories searched, in order: `plugin_path_flag` (':'-separated),
// then $MANTISSA_PLUGIN_PATH (':'-separated), then the directories holding
// mnt_*.so files in the running binary's runfiles, then the directory of
// the executable, then <that directory>/../lib/mantissa/plugins when it
// exists (an installed layout such as the SDK bundle's bin/ and lib/).
// Duplicates and empty entries are dropped.
std::vector<std::string> PluginSearchPath(const std::string& plugin_path_flag,
                                          const std::string& argv0);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_SEARCH_PATH_H_
