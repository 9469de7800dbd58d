// NCHW <-> NHWC copies of 2- and 4-byte elements: the activation reorders
// around oneDNN's convolutions, whose AMX / AVX512 kernels want channels
// innermost while the ABI's tensors are NCHW. oneDNN 2.6's own reorder for
// this runs its generic kernel ("jit:uni") at ~2 GB/s; these walk 32 x 32
// tiles (a tile's rows and columns both stay in L1) over the whole team.
// Pure copies: no value changes, so the team size changes no bits.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_CHANNEL_TRANSPOSE_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_CHANNEL_TRANSPOSE_H_

#include <cstddef>
#include <cstdint>

namespace mnt::cpu {

// dst[n][p][c] = src[n][c][p] for p < pixels (H * W); element_size 2 or 4.
void NchwToNhwc(const void* src, void* dst, int64_t n, int64_t c, int64_t pixels,
                size_t element_size);
// dst[n][c][p] = src[n][p][c].
void NhwcToNchw(const void* src, void* dst, int64_t n, int64_t c, int64_t pixels,
                size_t element_size);

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_CHANNEL_TRANSPOSE_H_
