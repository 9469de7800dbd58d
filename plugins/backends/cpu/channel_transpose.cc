#include "plugins/backends/cpu/channel_transpose.h"

#include <algorithm>

#include "plugins/backends/cpu/parallel.h"

namespace mnt::cpu {

namespace {

constexpr int64_t kTile = 32;

// Per image: out[col][row] = in[row][col] of an in[rows][cols] matrix, tile
// by tile; tiles of all images split over the team.
template <typename T>
void Transpose(const T* in, T* out, int64_t images, int64_t rows, int64_t cols) {
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  const int64_t tiles = images * row_tiles * col_tiles;
  const int threads = static_cast<int>(
      std::min<int64_t>(tiles, ThreadsFor(images * rows * cols)));
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t image = t / (row_tiles * col_tiles);
    const int64_t r0 = (t / col_tiles) % row_tiles * kTile, c0 = t % col_tiles * kTile;
    const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
    const T* src = in + image * rows * cols;
    T* dst = out + image * rows * cols;
    if (r1 - r0 == kTile && c1 - c0 == kTile) {
      // A full tile: fixed trip counts the compiler unrolls and vectorises.
      T tile[kTile][kTile];
      for (int64_t r = 0; r < kTile; ++r) {
        for (int64_t c = 0; c < kTile; ++c) tile[c][r] = src[(r0 + r) * cols + c0 + c];
      }
      for (int64_t c = 0; c < kTile; ++c) {
        for (int64_t r = 0; r < kTile; ++r) dst[(c0 + c) * rows + r0 + r] = tile[c][r];
      }
      continue;
    }
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c = c0; c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
    }
  }
}

void Dispatch(const void* src, void* dst, int64_t n, int64_t rows, int64_t cols,
              size_t element_size) {
  if (element_size == 2) {
    Transpose(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), n, rows, cols);
  } else {
    Transpose(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), n, rows, cols);
  }
}

}  // namespace

void NchwToNhwc(const void* src, void* dst, int64_t n, int64_t c, int64_t pixels,
                size_t element_size) {
  Dispatch(src, dst, n, c, pixels, element_size);
}

void NhwcToNchw(const void* src, void* dst, int64_t n, int64_t c, int64_t pixels,
                size_t element_size) {
  Dispatch(src, dst, n, pixels, c, element_size);
}

}  // namespace mnt::cpu
