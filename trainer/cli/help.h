// `train --help`: the usage line and every trainer flag by topic, with its
// default. absl's own --help lists only flags defined in a file named after
// the program (ours live in trainer/config/flags.cc, so it printed "No flags
// matched") and exits 1; this one exits 0.
#ifndef MANTISSA_TRAINER_CLI_HELP_H_
#define MANTISSA_TRAINER_CLI_HELP_H_

#include <cstdio>
#include <optional>
#include <string>

namespace mnt::trainer {

// The one-paragraph usage message (also absl's program usage message).
std::string UsageText();

// The flags of the trainer by topic. `full` adds absl's own flags
// (--flagfile, ...); `match` keeps only flags whose name or help contains it.
std::string FlagsHelp(bool full, const std::string& match);

// When argv asks for help (-h, --help, --helpshort, --helpfull,
// --helpmatch=S, --helppackage, --version), prints it to `out` and returns
// the exit code (0); otherwise nullopt. Arguments after "--" are not flags.
std::optional<int> HandleHelpFlags(int argc, char* const argv[], FILE* out);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_HELP_H_
