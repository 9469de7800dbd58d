// The safetensors file format (Hugging Face's): an 8-byte little-endian
// header length N, N bytes of JSON mapping each tensor name to its dtype,
// shape and [begin, end) byte offsets in the data that follows (plus an
// optional "__metadata__" object of strings), then the tensors' bytes,
// little-endian, row-major, back to back. Writing pads the JSON with spaces
// to a multiple of 8 bytes, as the reference implementation does; reading
// checks every offset, size and the coverage of the data (no gaps, no
// overlap, nothing after the last tensor).
#ifndef MANTISSA_MODELS_GPT2_SAFETENSORS_H_
#define MANTISSA_MODELS_GPT2_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mnt::gpt2 {

struct SafeTensor {
  std::string name;
  std::string dtype;            // "F32", "BF16" or "F16"
  std::vector<int64_t> shape;
  std::string bytes;            // little-endian, row-major
};

// Bytes per element of a dtype this code reads and writes; 0 otherwise.
int64_t SafeTensorDtypeSize(const std::string& dtype);

// n floats as a tensor's little-endian bytes, in BF16 (rounded to nearest
// even) or F32.
std::string EncodeSafeTensorFloats(const float* v, size_t n, bool bf16);

// A tensor's elements (F32, BF16 or F16) as floats.
std::vector<float> DecodeSafeTensorFloats(const SafeTensor& t);

// The file: tensors in the given order.
std::string EncodeSafetensors(const std::vector<SafeTensor>& tensors,
                              const std::map<std::string, std::string>& metadata);

// Parses a whole file; refuses, in one line starting with `source`, a short
// file, a header that is not a JSON object of tensor entries, an unknown
// dtype, a size that does not match the shape, offsets outside the data,
// gaps or overlaps. Tensors come back in file order.
absl::StatusOr<std::vector<SafeTensor>> ParseSafetensors(const std::string& file,
                                                         const std::string& source);

}  // namespace mnt::gpt2

#endif  // MANTISSA_MODELS_GPT2_SAFETENSORS_H_
