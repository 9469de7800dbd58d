// The cuDNN plan caches' keys on the CPU (convolution: conv_plan_key.h;
// attention: attention_plan_key.h): every field takes part in equality and
// in the hash (a plan reused for a configuration it was not made for would
// run cuDNN with the wrong descriptors or algorithm), and keys that differ
// only in padding bytes are equal with equal hashes.
#include "plugins/backends/cuda/conv_plan_key.h"

#include "plugins/backends/cuda/attention_plan_key.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <random>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::cuda {
namespace {

ConvPlanKey RandomKey(std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> dim(1, 4096);
  std::uniform_int_distribution<int32_t> small(0, 7);
  ConvPlanKey k;
  k.kind = small(rng) % 3;
  k.n = dim(rng), k.c = dim(rng), k.h = dim(rng), k.w = dim(rng);
  k.k = dim(rng), k.r = small(rng) + 1, k.s = small(rng) + 1;
  k.groups = small(rng) + 1;
  k.pad_h = small(rng), k.pad_w = small(rng);
  k.stride_h = small(rng) + 1, k.stride_w = small(rng) + 1;
  k.dil_h = small(rng) + 1, k.dil_w = small(rng) + 1;
  k.io_dtype = small(rng), k.compute = small(rng);
  return k;
}

std::vector<std::function<void(ConvPlanKey&)>> FieldChanges() {
  return {
      [](ConvPlanKey& k) { k.kind += 1; },     [](ConvPlanKey& k) { k.n += 1; },
      [](ConvPlanKey& k) { k.c += 1; },        [](ConvPlanKey& k) { k.h += 1; },
      [](ConvPlanKey& k) { k.w += 1; },        [](ConvPlanKey& k) { k.k += 1; },
      [](ConvPlanKey& k) { k.r += 1; },        [](ConvPlanKey& k) { k.s += 1; },
      [](ConvPlanKey& k) { k.groups += 1; },   [](ConvPlanKey& k) { k.pad_h += 1; },
      [](ConvPlanKey& k) { k.pad_w += 1; },    [](ConvPlanKey& k) { k.stride_h += 1; },
      [](ConvPlanKey& k) { k.stride_w += 1; }, [](ConvPlanKey& k) { k.dil_h += 1; },
      [](ConvPlanKey& k) { k.dil_w += 1; },    [](ConvPlanKey& k) { k.io_dtype += 1; },
      [](ConvPlanKey& k) { k.compute += 1; },
  };
}

uint64_t Seed() {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

TEST(ConvPlanKeyTest, EveryFieldTakesPartInEqualityAndHash) {
  std::mt19937_64 rng(Seed());
  const ConvPlanKeyHash hash;
  const auto changes = FieldChanges();
  ASSERT_EQ(changes.size(), 17u);  // one per field: a new field needs a line here
  for (int trial = 0; trial < 200; ++trial) {
    const ConvPlanKey base = RandomKey(rng);
    ConvPlanKey same = base;
    EXPECT_TRUE(base == same);
    EXPECT_EQ(hash(base), hash(same));
    for (size_t f = 0; f < changes.size(); ++f) {
      ConvPlanKey changed = base;
      changes[f](changed);
      EXPECT_TRUE(base != changed) << "field " << f;
      EXPECT_NE(hash(base), hash(changed)) << "field " << f;
    }
  }
}

TEST(ConvPlanKeyTest, PaddingBytesDoNotMatter) {
  std::mt19937_64 rng(Seed());
  const ConvPlanKey values = RandomKey(rng);
  alignas(ConvPlanKey) unsigned char a_bytes[sizeof(ConvPlanKey)];
  alignas(ConvPlanKey) unsigned char b_bytes[sizeof(ConvPlanKey)];
  std::memset(a_bytes, 0x00, sizeof a_bytes);
  std::memset(b_bytes, 0xa5, sizeof b_bytes);
  ConvPlanKey* a = new (a_bytes) ConvPlanKey(values);
  ConvPlanKey* b = new (b_bytes) ConvPlanKey(values);
  EXPECT_TRUE(*a == *b);
  EXPECT_EQ(ConvPlanKeyHash()(*a), ConvPlanKeyHash()(*b));
}

TEST(ConvPlanKeyTest, MapFindsEachKeyItStored) {
  std::mt19937_64 rng(Seed());
  std::unordered_map<ConvPlanKey, int, ConvPlanKeyHash> plans;
  std::vector<ConvPlanKey> keys;
  for (int i = 0; i < 500; ++i) {
    keys.push_back(RandomKey(rng));
    plans[keys.back()] = i;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = plans.find(keys[i]);
    ASSERT_NE(it, plans.end());
    EXPECT_TRUE(it->first == keys[i]);
  }
}

TEST(AttentionPlanKeyTest, EveryFieldTakesPartInEqualityAndHash) {
  std::mt19937_64 rng(Seed());
  std::uniform_int_distribution<int64_t> dim(1, 4096);
  const std::vector<std::function<void(AttentionPlanKey&)>> changes = {
      [](AttentionPlanKey& k) { k.what += 1; },  [](AttentionPlanKey& k) { k.dtype += 1; },
      [](AttentionPlanKey& k) { k.causal ^= 1; }, [](AttentionPlanKey& k) { k.b += 1; },
      [](AttentionPlanKey& k) { k.h += 1; },     [](AttentionPlanKey& k) { k.t += 1; },
      [](AttentionPlanKey& k) { k.d += 1; },
  };
  const AttentionPlanKeyHash hash;
  for (int trial = 0; trial < 200; ++trial) {
    AttentionPlanKey base;
    base.what = static_cast<int32_t>(dim(rng) % 4);
    base.dtype = static_cast<int32_t>(dim(rng) % 4);
    base.causal = static_cast<int32_t>(dim(rng) % 2);
    base.b = dim(rng), base.h = dim(rng), base.t = dim(rng), base.d = dim(rng);
    const AttentionPlanKey same = base;
    EXPECT_TRUE(base == same);
    EXPECT_EQ(hash(base), hash(same));
    for (size_t f = 0; f < changes.size(); ++f) {
      AttentionPlanKey changed = base;
      changes[f](changed);
      EXPECT_TRUE(base != changed) << "field " << f;
      EXPECT_NE(hash(base), hash(changed)) << "field " << f;
    }
  }
}

}  // namespace
}  // namespace mnt::cuda
