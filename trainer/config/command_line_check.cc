#include "trainer/config/command_line_check.h"

#include <algorithm>
#include <cstdint>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "trainer/text/nearest_name.h"

namespace mnt {
namespace trainer {
namespace {

// absl's own flags that act on the command line itself: their values are
// files and names, handled by absl's parser.
bool IsAbslCommandFlag(absl::string_view name) {
  return name == "flagfile" || name == "fromenv" || name == "tryfromenv" ||
         name == "undefok";
}

std::string Expected(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "true or false";
  if (flag.IsOfType<int32_t>() || flag.IsOfType<int64_t>() || flag.IsOfType<uint64_t>() ||
      flag.IsOfType<uint32_t>()) {
    return "an integer";
  }
  if (flag.IsOfType<double>() || flag.IsOfType<float>()) return "a number";
  return "a valid value";
}

// The value parses as the flag's type; the flag keeps its current value.
absl::Status CheckValue(absl::CommandLineFlag& flag, absl::string_view value) {
  const std::string before = flag.CurrentValue();
  std::string error;
  if (!flag.ParseFrom(value, &error)) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag.Name(), "=", value,
                                                   " is invalid: expected ", Expected(flag)));
  }
  std::string ignored;
  flag.ParseFrom(before, &ignored);
  return absl::OkStatus();
}

std::vector<std::string> DefinedFlagNames() {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!flag->IsRetired()) names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());  // ties go to the same name every run
  return names;
}

}  // namespace

std::string NearestFlagName(absl::string_view name, const std::vector<std::string>& names) {
  return NearestName(name, names);
}

absl::Status CheckCommandLine(int argc, char* const argv[]) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;  // positional: the caller's
    absl::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    const absl::string_view name = body.substr(0, eq);
    const bool has_value = eq != absl::string_view::npos;
    const absl::string_view value = has_value ? body.substr(eq + 1) : absl::string_view();

    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      // --nofoo turns a bool flag off and takes no value.
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>() && !has_value) continue;
    }
    if (flag == nullptr || flag->IsRetired()) {
      const std::string near = NearestFlagName(name, DefinedFlagNames());
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag --", name,
          near.empty() ? "" : absl::StrCat(" (did you mean --", near, "?)"),
          "; --help lists every flag"));
    }
    if (IsAbslCommandFlag(name)) {
      if (!has_value) ++i;
      continue;
    }
    if (has_value) {
      if (absl::Status s = CheckValue(*flag, value); !s.ok()) return s;
    } else if (!flag->IsOfType<bool>()) {
      // absl takes the next argument as the value: --steps 10.
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value (--", name, "=...)"));
      }
      if (absl::Status s = CheckValue(*flag, argv[++i]); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace trainer
}  // namespace mnt
