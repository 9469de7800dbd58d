// libFuzzer target: llm.c token shard bytes -> ParseTokenShard, with the
// byte vocabulary and GPT-2's.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trainer/data/token_shards.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)mnt::trainer::ParseTokenShard(bytes, "fuzz", 256);
  (void)mnt::trainer::ParseTokenShard(bytes, "fuzz", 50257);
  return 0;
}
