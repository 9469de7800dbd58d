// libFuzzer target: IDX file bytes -> ParseIdx, and an accepted array's
// example size (the product of its dims, which overflowed int64 once).
#include <cstddef>
#include <cstdint>
#include <string>

#include "trainer/data/dataset.h"
#include "trainer/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto array = mnt::trainer::ParseIdx(bytes, "fuzz");
  if (array.ok() && array->dims.size() >= 2) {
    mnt::trainer::ClassificationData c;
    c.example_dims.assign(array->dims.begin() + 1, array->dims.end());
    (void)c.example_size();
  }
  return 0;
}
