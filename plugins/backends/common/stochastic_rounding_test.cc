#include "plugins/backends/common/stochastic_rounding.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace mnt {
namespace {

uint32_t Seed(const char* test) {
  const uint32_t seed = std::random_device{}();
  std::printf("%s seed %u\n", test, seed);
  return seed;
}

// A finite fp32 with |x| <= the largest finite bf16, drawn over every binade
// (denormals included), either sign.
uint32_t RandomFiniteBits(std::mt19937& rng) {
  for (;;) {
    const uint32_t x = static_cast<uint32_t>(rng());
    if ((x & 0x7fffffffu) <= kMaxFiniteBf16AsF32Bits) return x;
  }
}

float Bf16(uint16_t b) { return Bf16BitsToFloat(b); }

// The distance between the two bf16 neighbours of finite x (|x| <= the
// largest finite bf16): one ulp of its truncation.
double Bf16Ulp(uint32_t x) {
  const uint32_t down = x & 0x7fff0000u;
  return static_cast<double>(BitsToFloat(down + 0x10000u)) -
         static_cast<double>(BitsToFloat(down));
}

TEST(StochasticRoundingTest, CraftedInputsGiveTheseBits) {
  struct Case {
    uint32_t x, random16;
    uint16_t want;
  };
  const Case cases[] = {
      {0x3f800000u, 0xffffu, 0x3f80u},  // 1.0 is exact: never moves
      {0x3f80ffffu, 0x0000u, 0x3f80u},  // no carry: truncated
      {0x3f80ffffu, 0x0001u, 0x3f81u},  // the smallest carry rounds up
      {0x3f808000u, 0x7fffu, 0x3f80u},  // a tie rounds up for half the draws
      {0x3f808000u, 0x8000u, 0x3f81u},
      {0xbf808000u, 0x8000u, 0xbf81u},  // negative: the magnitude rounds up
      {0xbf808000u, 0x7fffu, 0xbf80u},
      {0x3f7fffffu, 0x0001u, 0x3f80u},  // carry into the exponent: 1.0
      {0x00000001u, 0xffffu, 0x0001u},  // fp32 denormal up to bf16's smallest
      {0x00000001u, 0xfffeu, 0x0000u},  // or down to +0
      {0x807fffffu, 0x0001u, 0x8080u},  // largest denormal up to -2^-126
      {0x00000000u, 0xffffu, 0x0000u},  // +0
      {0x80000000u, 0xffffu, 0x8000u},  // -0 keeps its sign
      {0x7f7f0000u, 0xffffu, 0x7f7fu},  // the largest finite bf16 stays
      {0x7f7f7fffu, 0xffffu, 0x7f7fu},  // above it: nearest, never inf
      {0x7f7f8000u, 0x0000u, 0x7f80u},  // ... inf where nearest gives it
      {0x7f7fffffu, 0x0000u, 0x7f80u},  // FLT_MAX: inf as round-to-nearest
      {0x7f800000u, 0xffffu, 0x7f80u},  // +inf
      {0xff800000u, 0xffffu, 0xff80u},  // -inf
      {0x7f800001u, 0xffffu, 0x7fc0u},  // signalling NaN comes out quiet
      {0xffc12345u, 0xffffu, 0xffc1u},  // NaN keeps sign and top payload
  };
  for (const Case& c : cases) {
    EXPECT_EQ(F32BitsToBf16BitsStochastic(c.x, c.random16), c.want)
        << std::hex << "x 0x" << c.x << " random 0x" << c.random16;
  }
}

// Over all 2^16 random values, x rounds up exactly (dropped bits) times:
// the rounding itself is unbiased, with no statistics involved.
TEST(StochasticRoundingTest, RoundsUpForExactlyTheDroppedFraction) {
  std::mt19937 rng(Seed("RoundsUpForExactlyTheDroppedFraction"));
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t x = RandomFiniteBits(rng);
    const uint16_t down = static_cast<uint16_t>(x >> 16);
    uint32_t ups = 0;
    for (uint32_t r = 0; r < 0x10000u; ++r) {
      const uint16_t got = F32BitsToBf16BitsStochastic(x, r);
      ASSERT_TRUE(got == down || got == down + 1) << std::hex << "x 0x" << x << " r 0x" << r;
      ups += got != down;
    }
    EXPECT_EQ(ups, x & 0xffffu) << std::hex << "x 0x" << x;
  }
}

// Sampled through the hash (fresh elements of one key, or one element over
// fresh steps), the mean of N roundings of x lies within 6 standard
// deviations of x: each rounding is x's lower or upper neighbour, so its
// standard deviation is at most ulp/2, the mean's ulp / (2 sqrt N).
TEST(StochasticRoundingTest, MeanOfManyRoundingsIsX) {
  std::mt19937_64 rng(Seed("MeanOfManyRoundingsIsX"));
  std::mt19937 xrng(static_cast<uint32_t>(rng()));
  constexpr int kSamples = 4096;
  const double bound = 6.0 * 0.5 / std::sqrt(static_cast<double>(kSamples));  // in ulps
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t bits = RandomFiniteBits(xrng);
    const float x = BitsToFloat(bits);
    const uint64_t seed = rng();
    const int64_t step = static_cast<int64_t>(rng() % 100000), tensor = trial;
    const uint64_t key = StochasticRoundingKey(seed, step, tensor);
    double over_elements = 0.0, over_steps = 0.0;
    for (int i = 0; i < kSamples; ++i) {
      over_elements += Bf16(FloatToBf16BitsStochastic(x, key, i));
      over_steps +=
          Bf16(FloatToBf16BitsStochastic(x, StochasticRoundingKey(seed, step + i, tensor), 7));
    }
    const double ulp = Bf16Ulp(bits);
    EXPECT_LE(std::fabs(over_elements / kSamples - x) / ulp, bound)
        << std::hex << "x 0x" << bits << " seed 0x" << seed;
    EXPECT_LE(std::fabs(over_steps / kSamples - x) / ulp, bound)
        << std::hex << "x 0x" << bits << " seed 0x" << seed;
  }
}

// Each of the 16 bits is set for half of 2^16 consecutive elements, within
// 6 standard deviations (sqrt(1/4 / 2^16) each).
TEST(StochasticRoundingTest, BitsAreBalanced) {
  std::mt19937_64 rng(Seed("BitsAreBalanced"));
  const uint64_t key = StochasticRoundingKey(rng(), static_cast<int64_t>(rng() % 1000), 5);
  constexpr int kDraws = 1 << 16;
  int set[16] = {};
  for (int i = 0; i < kDraws; ++i) {
    const uint32_t b = StochasticRoundingBits(key, i);
    ASSERT_LT(b, 0x10000u);
    for (int k = 0; k < 16; ++k) set[k] += (b >> k) & 1u;
  }
  const double bound = 6.0 * std::sqrt(0.25 / kDraws);
  for (int k = 0; k < 16; ++k) {
    EXPECT_NEAR(static_cast<double>(set[k]) / kDraws, 0.5, bound) << "bit " << k;
  }
}

// The stream is pinned: checkpoints resume with the same bits across
// versions and backends. splitmix64 seeded 0 first gives 0xe220a8397b1dcdaf;
// the key and bits below were computed independently (Python integers).
TEST(StochasticRoundingTest, StreamIsPinned) {
  EXPECT_EQ(Mix64(kMix64Gamma), 0xe220a8397b1dcdafull);
  EXPECT_EQ(StochasticRoundingKey(0, 0, 0), 0x33fe8bd4f9c57863ull);
  const uint64_t key = StochasticRoundingKey(1234, 7, 3);
  EXPECT_EQ(key, 0x35a25395701778c2ull);
  const uint32_t want[4] = {0x40e3u, 0x1ff8u, 0xb126u, 0xbefbu};
  for (int e = 0; e < 4; ++e) EXPECT_EQ(StochasticRoundingBits(key, e), want[e]) << e;
}

TEST(StochasticRoundingTest, DeterministicPerSeedAndEachCoordinateMatters) {
  std::mt19937_64 rng(Seed("DeterministicPerSeedAndEachCoordinateMatters"));
  const uint64_t seed = rng();
  const int64_t step = static_cast<int64_t>(rng() % 1000000), tensor = 3;
  const uint64_t key = StochasticRoundingKey(seed, step, tensor);
  EXPECT_EQ(key, StochasticRoundingKey(seed, step, tensor));
  const uint64_t others[] = {StochasticRoundingKey(seed + 1, step, tensor),
                             StochasticRoundingKey(seed, step + 1, tensor),
                             StochasticRoundingKey(seed, step, tensor + 1)};
  constexpr int kElements = 1024;
  for (uint64_t other : others) {
    // Equal draws happen with probability 2^-16 each.
    int same = 0;
    for (int i = 0; i < kElements; ++i) {
      EXPECT_EQ(StochasticRoundingBits(key, i), StochasticRoundingBits(key, i));
      same += StochasticRoundingBits(key, i) == StochasticRoundingBits(other, i);
    }
    EXPECT_LE(same, 4) << "key 0x" << std::hex << other;
  }
  // Rounded values of one tensor under two seeds: different copies.
  std::mt19937 xrng(static_cast<uint32_t>(rng()));
  int differ = 0;
  for (int i = 0; i < kElements; ++i) {
    const float x = BitsToFloat((RandomFiniteBits(xrng) & 0x807fffffu) | 0x3f800000u);
    const uint16_t a = FloatToBf16BitsStochastic(x, key, i);
    EXPECT_EQ(a, FloatToBf16BitsStochastic(x, key, i));
    differ += a != FloatToBf16BitsStochastic(x, others[0], i);
  }
  // Each differs with probability 2 p (1 - p) for p uniform: 1/3 on average.
  EXPECT_GT(differ, kElements / 5);
}

// Random finite inputs never become inf or NaN and land on a neighbour.
TEST(StochasticRoundingTest, FiniteStaysFiniteOnANeighbour) {
  std::mt19937 rng(Seed("FiniteStaysFiniteOnANeighbour"));
  for (int i = 0; i < 100000; ++i) {
    const uint32_t x = RandomFiniteBits(rng);
    const float got = Bf16(F32BitsToBf16BitsStochastic(x, rng() & 0xffffu));
    const float f = BitsToFloat(x);
    ASSERT_TRUE(std::isfinite(got)) << std::hex << x;
    const float down = Bf16(static_cast<uint16_t>(x >> 16));
    const float up = Bf16(static_cast<uint16_t>((x >> 16) + 1));
    ASSERT_TRUE(got == down || got == up) << std::hex << x;
    ASSERT_LE(std::fabs(got - f), std::fabs(up - down)) << std::hex << x;
  }
}

}  // namespace
}  // namespace mnt
