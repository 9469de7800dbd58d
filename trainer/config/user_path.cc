#include "trainer/config/user_path.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace mnt::trainer {

std::string ExpandUserPath(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  const size_t slash = path.find('/');
  const std::string user = path.substr(1, slash == std::string::npos ? std::string::npos
                                                                      : slash - 1);
  const std::string rest = slash == std::string::npos ? "" : path.substr(slash);
  std::string home;
  if (user.empty()) {
    if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
      home = h;
    } else if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_dir != nullptr) {
      home = pw->pw_dir;
    }
  } else if (const passwd* pw = getpwnam(user.c_str()); pw != nullptr && pw->pw_dir != nullptr) {
    home = pw->pw_dir;
  }
  if (home.empty()) return path;
  return home + rest;
}

}  // namespace mnt::trainer
