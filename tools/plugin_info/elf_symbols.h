// The global symbols an ELF64 shared object defines, read from its bytes
// (plugin_info's exported-symbol list). Every offset the file claims is
// bounds-checked: the bytes may be anything (tools/fuzz/plugin_elf_fuzz).
#ifndef MANTISSA_TOOLS_PLUGIN_INFO_ELF_SYMBOLS_H_
#define MANTISSA_TOOLS_PLUGIN_INFO_ELF_SYMBOLS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace mnt::tools {

// Names of the global symbols defined in the dynamic symbol table, sorted;
// `path` names the file in errors. Error for bytes that are not ELF64.
absl::Status ExportedSymbolsFromBytes(const std::string& bytes, const std::string& path,
                                      std::vector<std::string>* out);

}  // namespace mnt::tools

#endif  // MANTISSA_TOOLS_PLUGIN_INFO_ELF_SYMBOLS_H_
