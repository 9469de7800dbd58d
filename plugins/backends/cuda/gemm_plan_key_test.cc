// The GEMM plan cache's key on the CPU: every field takes part in equality
// and in the hash (a plan reused for a configuration it was not made for
// would run the wrong algorithm or layouts), the hash ignores padding bytes,
// pointer alignments are the largest power of two up to 256, and the cache
// finds what it stored, replaces, and stays within its capacity while
// releasing every plan it drops exactly once.
#include "plugins/backends/cuda/gemm_plan_key.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::cuda {
namespace {

GemmPlanKey RandomKey(std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> dim(1, 1 << 20);
  std::uniform_int_distribution<int32_t> small(0, 40);
  GemmPlanKey k;
  k.m = dim(rng);
  k.n = dim(rng);
  k.k = dim(rng);
  k.trans_a = small(rng) & 1;
  k.trans_b = small(rng) & 1;
  k.operand_dtype = small(rng);
  k.output_dtype = small(rng);
  k.bias_dtype = small(rng);
  k.compute = small(rng);
  k.epilogue = small(rng);
  k.align_a = 1u << (small(rng) % 9);
  k.align_b = 1u << (small(rng) % 9);
  k.align_c = 1u << (small(rng) % 9);
  k.align_bias = 1u << (small(rng) % 9);
  k.lda = dim(rng);
  k.ldb = dim(rng);
  k.ldc = dim(rng);
  k.batch = small(rng);
  k.stride_a = dim(rng);
  k.stride_b = dim(rng);
  k.stride_c = dim(rng);
  return k;
}

// One mutation per field: each must make the key unequal and (for these
// values) change the hash.
std::vector<std::function<void(GemmPlanKey&)>> FieldChanges() {
  return {
      [](GemmPlanKey& k) { k.m += 1; },
      [](GemmPlanKey& k) { k.n += 1; },
      [](GemmPlanKey& k) { k.k += 1; },
      [](GemmPlanKey& k) { k.trans_a ^= 1; },
      [](GemmPlanKey& k) { k.trans_b ^= 1; },
      [](GemmPlanKey& k) { k.operand_dtype += 1; },
      [](GemmPlanKey& k) { k.output_dtype += 1; },
      [](GemmPlanKey& k) { k.bias_dtype += 1; },
      [](GemmPlanKey& k) { k.compute += 1; },
      [](GemmPlanKey& k) { k.epilogue += 1; },
      [](GemmPlanKey& k) { k.align_a ^= 512; },
      [](GemmPlanKey& k) { k.align_b ^= 512; },
      [](GemmPlanKey& k) { k.align_c ^= 512; },
      [](GemmPlanKey& k) { k.align_bias ^= 512; },
      [](GemmPlanKey& k) { k.aux_dtype += 1; },
      [](GemmPlanKey& k) { k.align_aux ^= 512; },
      [](GemmPlanKey& k) { k.lda += 1; },
      [](GemmPlanKey& k) { k.ldb += 1; },
      [](GemmPlanKey& k) { k.ldc += 1; },
      [](GemmPlanKey& k) { k.batch += 1; },
      [](GemmPlanKey& k) { k.stride_a += 1; },
      [](GemmPlanKey& k) { k.stride_b += 1; },
      [](GemmPlanKey& k) { k.stride_c += 1; },
      [](GemmPlanKey& k) { k.operand_b_dtype += 1; },
      [](GemmPlanKey& k) { k.fast_accum ^= 1; },
  };
}

TEST(GemmPlanKeyTest, EveryFieldTakesPartInEqualityAndHash) {
  std::mt19937_64 rng(std::random_device{}());
  const GemmPlanKeyHash hash;
  const auto changes = FieldChanges();
  for (int trial = 0; trial < 200; ++trial) {
    const GemmPlanKey base = RandomKey(rng);
    GemmPlanKey same = base;
    EXPECT_TRUE(base == same);
    EXPECT_EQ(hash(base), hash(same));
    for (size_t f = 0; f < changes.size(); ++f) {
      GemmPlanKey other = base;
      changes[f](other);
      EXPECT_FALSE(base == other) << "field " << f;
      EXPECT_TRUE(base != other) << "field " << f;
      EXPECT_NE(hash(base), hash(other)) << "field " << f;
    }
  }
}

TEST(GemmPlanKeyTest, HashIgnoresPaddingBytes) {
  std::mt19937_64 rng(std::random_device{}());
  const GemmPlanKey base = RandomKey(rng);
  alignas(GemmPlanKey) unsigned char raw_a[sizeof(GemmPlanKey)];
  alignas(GemmPlanKey) unsigned char raw_b[sizeof(GemmPlanKey)];
  std::memset(raw_a, 0x00, sizeof(raw_a));
  std::memset(raw_b, 0xA5, sizeof(raw_b));
  auto* a = new (raw_a) GemmPlanKey(base);
  auto* b = new (raw_b) GemmPlanKey(base);
  EXPECT_TRUE(*a == *b);
  EXPECT_EQ(GemmPlanKeyHash()(*a), GemmPlanKeyHash()(*b));
}

TEST(GemmPlanKeyTest, DistinctTrainingShapesGetDistinctHashes) {
  // GPT-2-like shapes: every (m, n, k, transposes, dtype) combination gets
  // its own hash value (a weak hash such as m ^ n ^ k would collide here).
  std::set<size_t> hashes;
  size_t keys = 0;
  const int64_t dims[] = {64, 128, 256, 768, 1024, 2304, 3072, 8192, 50304};
  for (int64_t m : dims) {
    for (int64_t n : dims) {
      for (int64_t k : dims) {
        for (int t = 0; t < 4; ++t) {
          for (int32_t dtype = 1; dtype <= 3; ++dtype) {
            GemmPlanKey key;
            key.m = m;
            key.n = n;
            key.k = k;
            key.trans_a = t & 1;
            key.trans_b = t >> 1;
            key.operand_dtype = dtype;
            key.output_dtype = dtype;
            key.align_a = key.align_b = key.align_c = 256;
            hashes.insert(GemmPlanKeyHash()(key));
            ++keys;
          }
        }
      }
    }
  }
  EXPECT_EQ(hashes.size(), keys);
}

TEST(PointerAlignmentTest, LargestPowerOfTwoUpTo256) {
  EXPECT_EQ(PointerAlignment(nullptr), 256u);
  for (uintptr_t base : {uintptr_t{0x10000}, uintptr_t{0x7f0000000000}}) {
    for (uint32_t shift = 0; shift <= 12; ++shift) {
      const uintptr_t addr = base + (uintptr_t{1} << shift);
      const uint32_t expected = shift >= 8 ? 256u : (1u << shift);
      EXPECT_EQ(PointerAlignment(reinterpret_cast<const void*>(addr)), expected)
          << std::hex << addr;
    }
  }
  EXPECT_EQ(PointerAlignment(reinterpret_cast<const void*>(uintptr_t{0x1006})), 2u);
  EXPECT_EQ(PointerAlignment(reinterpret_cast<const void*>(uintptr_t{0x1030})), 16u);
}

// Every matrix of a strided batch is as aligned as the least of its start,
// its row pitch and its batch stride; 0 (packed, or one matrix) takes
// nothing away.
TEST(StridedAlignmentTest, LeastOfPointerPitchAndStride) {
  const void* p = reinterpret_cast<const void*>(uintptr_t{0x10000});
  EXPECT_EQ(StridedAlignment(p, 0, 0), 256u);
  EXPECT_EQ(StridedAlignment(p, 2304 * 4, 64 * 4), 256u);  // GPT-2's qkv heads
  EXPECT_EQ(StridedAlignment(p, 2304 * 4, 12 * 4), 16u);   // D = 12: 48-byte stride
  EXPECT_EQ(StridedAlignment(p, 37 * 4, 0), 4u);           // odd row pitch
  EXPECT_EQ(StridedAlignment(p, 0, 5 * 4), 4u);
  const void* q = reinterpret_cast<const void*>(uintptr_t{0x10008});
  EXPECT_EQ(StridedAlignment(q, 2304 * 4, 64 * 4), 8u);    // start only 8-byte aligned
}

// A move-only plan that counts how often an owned resource is released.
struct CountingPlan {
  int* released = nullptr;
  int id = -1;
  CountingPlan() = default;
  CountingPlan(int* r, int i) : released(r), id(i) {}
  CountingPlan(CountingPlan&& o) noexcept : released(o.released), id(o.id) {
    o.released = nullptr;
  }
  CountingPlan& operator=(CountingPlan&& o) noexcept {
    if (this != &o) {
      if (released) ++*released;
      released = o.released;
      id = o.id;
      o.released = nullptr;
    }
    return *this;
  }
  CountingPlan(const CountingPlan&) = delete;
  CountingPlan& operator=(const CountingPlan&) = delete;
  ~CountingPlan() {
    if (released) ++*released;
  }
};

GemmPlanKey KeyForM(int64_t m) {
  GemmPlanKey k;
  k.m = m;
  k.n = 8;
  k.k = 8;
  return k;
}

TEST(GemmPlanCacheTest, FindsInsertsReplacesAndStaysBounded) {
  int released = 0;
  {
    GemmPlanCache<CountingPlan> cache(3);
    EXPECT_EQ(cache.Find(KeyForM(1)), nullptr);
    CountingPlan* p1 = cache.Insert(KeyForM(1), CountingPlan(&released, 1));
    ASSERT_NE(p1, nullptr);
    EXPECT_EQ(cache.Find(KeyForM(1)), p1);
    EXPECT_EQ(cache.Find(KeyForM(1))->id, 1);
    EXPECT_EQ(released, 0);

    // Replacing releases the old plan once.
    cache.Insert(KeyForM(1), CountingPlan(&released, 11));
    EXPECT_EQ(released, 1);
    EXPECT_EQ(cache.Find(KeyForM(1))->id, 11);
    EXPECT_EQ(cache.size(), 1u);

    cache.Insert(KeyForM(2), CountingPlan(&released, 2));
    cache.Insert(KeyForM(3), CountingPlan(&released, 3));
    EXPECT_EQ(cache.size(), 3u);
    EXPECT_EQ(released, 1);
    // Full: the fourth plan starts the cache over, releasing the three.
    cache.Insert(KeyForM(4), CountingPlan(&released, 4));
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(released, 4);
    EXPECT_EQ(cache.Find(KeyForM(1)), nullptr);
    EXPECT_EQ(cache.Find(KeyForM(4))->id, 4);
    // Plans stay where they are while others are inserted (until a reset).
    CountingPlan* p4 = cache.Find(KeyForM(4));
    cache.Insert(KeyForM(5), CountingPlan(&released, 5));
    EXPECT_EQ(cache.Find(KeyForM(4)), p4);
  }
  EXPECT_EQ(released, 6);  // the last two released by the destructor
}

TEST(GemmPlanCacheTest, ZeroCapacityStillHoldsOnePlan) {
  int released = 0;
  GemmPlanCache<CountingPlan> cache(0);
  EXPECT_EQ(cache.capacity(), 1u);
  cache.Insert(KeyForM(1), CountingPlan(&released, 1));
  EXPECT_NE(cache.Find(KeyForM(1)), nullptr);
  cache.Insert(KeyForM(2), CountingPlan(&released, 2));
  EXPECT_EQ(released, 1);
  EXPECT_EQ(cache.Find(KeyForM(1)), nullptr);
  EXPECT_EQ(cache.Find(KeyForM(2))->id, 2);
}

}  // namespace
}  // namespace mnt::cuda
