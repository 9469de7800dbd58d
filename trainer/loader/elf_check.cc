#include "trainer/loader/elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace mnt::trainer {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
constexpr char kHostMachineName[] = "x86-64";
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
constexpr char kHostMachineName[] = "AArch64";
#else
#error "add this machine's ELF e_machine"
#endif

// [offset, offset + size) lies inside a file of `file_size` bytes, without
// the sum overflowing.
bool Inside(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

// Reads `size` bytes at `offset`; false when the source has fewer.
using ReadAt = bool (*)(const void* source, uint64_t offset, void* out, size_t size);

absl::Status Check(const void* source, ReadAt read, uint64_t file_size) {
  auto bad = [](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("not a loadable plugin file: ", why));
  };
  Elf64_Ehdr eh;
  if (file_size < sizeof(eh) || !read(source, 0, &eh, sizeof(eh))) {
    return bad(absl::StrCat("only ", file_size, " bytes, shorter than an ELF header"));
  }
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return bad("no ELF magic");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return bad("not a 64-bit ELF file");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return bad("not little-endian");
  if (eh.e_type != ET_DYN) return bad(absl::StrCat("ELF type ", eh.e_type, ", not a shared object"));
  if (eh.e_machine != kHostMachine) {
    return bad(absl::StrCat("built for ELF machine ", eh.e_machine, ", this one is ",
                            kHostMachineName, " (", kHostMachine, ")"));
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      !Inside(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr), file_size)) {
    return bad("bad program header table (truncated file?)");
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read(source, eh.e_phoff + uint64_t{i} * sizeof(ph), &ph, sizeof(ph))) {
      return bad("bad program header table (truncated file?)");
    }
    if (ph.p_type != PT_NULL && !Inside(ph.p_offset, ph.p_filesz, file_size)) {
      return bad(absl::StrCat("segment ", i, " ends at byte ", ph.p_offset + ph.p_filesz,
                              " of a ", file_size, "-byte file (truncated file?)"));
    }
  }
  if (eh.e_shoff != 0 || eh.e_shnum != 0) {
    if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !Inside(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), file_size)) {
      return bad("bad section table (truncated file?)");
    }
    for (uint16_t i = 0; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh;
      if (!read(source, eh.e_shoff + uint64_t{i} * sizeof(sh), &sh, sizeof(sh))) {
        return bad("bad section table (truncated file?)");
      }
      if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
          !Inside(sh.sh_offset, sh.sh_size, file_size)) {
        return bad(absl::StrCat("section ", i, " lies past the end of the file (truncated file?)"));
      }
    }
  }
  return absl::OkStatus();
}

bool ReadFromMemory(const void* source, uint64_t offset, void* out, size_t size) {
  const auto* bytes = static_cast<const absl::string_view*>(source);
  if (!Inside(offset, size, bytes->size())) return false;
  std::memcpy(out, bytes->data() + offset, size);
  return true;
}

bool ReadFromFile(const void* source, uint64_t offset, void* out, size_t size) {
  const int fd = *static_cast<const int*>(source);
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

absl::Status CheckElfBytes(absl::string_view bytes) {
  return Check(&bytes, &ReadFromMemory, bytes.size());
}

absl::Status CheckElfSharedObject(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  absl::Status s;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    s = absl::InvalidArgumentError("not a regular file");
  } else {
    s = Check(&fd, &ReadFromFile, static_cast<uint64_t>(st.st_size));
  }
  ::close(fd);
  return s;
}

}  // namespace mnt::trainer
