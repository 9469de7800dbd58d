// libFuzzer target: plugin file bytes -> the checks made before dlopen
// (trainer/loader/elf_check) and plugin_info's exported-symbol reader.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/plugin_info/elf_symbols.h"
#include "trainer/loader/elf_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)mnt::trainer::CheckElfBytes(bytes);
  std::vector<std::string> symbols;
  (void)mnt::tools::ExportedSymbolsFromBytes(bytes, "fuzz", &symbols);
  return 0;
}
