#include "trainer/cli/tool_command_line.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/status/status.h"
#include "trainer/cli/user_directory.h"
#include "trainer/config/command_line_check.h"

namespace mnt::trainer {

int ToolError(const char* tool, absl::string_view message) {
  std::string line(message);
  for (char& c : line) {
    if (c == '\n') c = ' ';  // one line, always
  }
  std::fprintf(stderr, "%s: error: %s\n", tool, line.c_str());
  return 1;
}

int ParseToolCommandLine(int argc, char** argv, const char* tool, const char* usage,
                         std::string* argv0) {
  const auto fail = [&](const absl::Status& s) { return ToolError(tool, s.message()); };
  if (absl::Status s = EnterUserDirectory(argv[0], argv0); !s.ok()) return fail(s);
  argv[0] = argv0->data();
  absl::SetProgramUsageMessage(usage);
  // --help lists every flag the tool defines, also those of a library its
  // main file shares with another tool (tools/gpt2/import_tool.cc); absl's
  // default lists only the main file's.
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view file) {
    return !absl::StrContains(file, "absl/");
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  absl::SetFlagsUsageConfig(config);
  // --help and --version are absl's own (it prints the usage above and this
  // tool's flags); anything else is checked first, since absl would print
  // its own "ERROR: ..." lines and exit.
  bool asks_for_help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    const std::string name = arg.substr(0, arg.find('='));
    for (const char* h : {"--help", "-help", "--helpfull", "--helpshort", "--helppackage",
                          "--helpmatch", "--version"}) {
      asks_for_help |= name == h;
    }
  }
  if (!asks_for_help) {
    if (absl::Status s = CheckCommandLine(argc, argv); !s.ok()) return fail(s);
  }
  const std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    return fail(absl::InvalidArgumentError(std::string("unexpected argument '") + rest[1] +
                                           "' (flags are written --name=value)"));
  }
  return -1;
}

}  // namespace mnt::trainer
