#include "tools/plugin_info/elf_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace mnt::tools {

namespace {

// [offset, offset + size) inside `total` bytes, without overflowing.
bool Inside(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

}  // namespace

absl::Status ExportedSymbolsFromBytes(const std::string& bytes, const std::string& path,
                                      std::vector<std::string>* out) {
  auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an ELF64 shared object (", why, ")"));
  };
  if (bytes.size() < sizeof(Elf64_Ehdr) ||
      std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0 ||
      bytes[EI_CLASS] != ELFCLASS64) {
    return bad("bad header");
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  // Every offset and size is the file's claim: checked without overflow.
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !Inside(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), bytes.size())) {
    return bad("bad section table");
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!sections.empty()) {
    std::memcpy(sections.data(), bytes.data() + eh.e_shoff,
                sections.size() * sizeof(Elf64_Shdr));
  }
  out->clear();
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_link >= sections.size() || !Inside(sh.sh_offset, sh.sh_size, bytes.size())) {
      return bad("bad .dynsym");
    }
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (!Inside(strtab.sh_offset, strtab.sh_size, bytes.size())) {
      return bad("bad .dynstr");
    }
    const size_t count = sh.sh_size / sizeof(Elf64_Sym);
    for (size_t i = 1; i < count; ++i) {
      Elf64_Sym sym;
      std::memcpy(&sym, bytes.data() + sh.sh_offset + i * sizeof(Elf64_Sym),
                  sizeof(sym));
      const int bind = ELF64_ST_BIND(sym.st_info);
      if (sym.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
          sym.st_name >= strtab.sh_size) {
        continue;
      }
      const char* name = bytes.data() + strtab.sh_offset + sym.st_name;
      out->push_back(std::string(
          name, strnlen(name, strtab.sh_size - sym.st_name)));
    }
  }
  std::sort(out->begin(), out->end());
  return absl::OkStatus();
}

}  // namespace mnt::tools
