// A leading ~ in a path flag means the home directory, as in the shell.
// Shells expand `~` only at the start of a word, so `--resume_from=~/runs/x`
// reaches the program with the `~` still in it; like many command-line
// tools, Mantissa's expand it themselves so the README's commands work as
// typed.
#ifndef MANTISSA_TRAINER_CONFIG_USER_PATH_H_
#define MANTISSA_TRAINER_CONFIG_USER_PATH_H_

#include <string>

namespace mnt::trainer {

// "~" and "~/rest" -> $HOME and $HOME/rest (the passwd entry's home when
// HOME is unset); "~user/rest" -> that user's home. Anything else, and a
// ~user that does not exist, is returned unchanged.
std::string ExpandUserPath(const std::string& path);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CONFIG_USER_PATH_H_
