#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

static void BM_Sum(benchmark::State& state) {
  std::vector<float> v(256, 1.0f);
  for (auto _ : state) benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0.0f));
}
BENCHMARK(BM_Sum);
