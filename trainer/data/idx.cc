#include "trainer/data/idx.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/io/atomic_file.h"

namespace mnt {
namespace trainer {
namespace {

uint32_t ReadBigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void AppendBigEndian32(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

int ElementSize(uint8_t type) { return type == kIdxF32 ? 4 : 1; }

std::string MagicHex(const unsigned char* p) {
  return absl::StrCat("0x", absl::Hex(ReadBigEndian32(p), absl::kZeroPad8));
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdx(const std::string& path) {
  std::string bytes;
  constexpr int64_t kMaxIdxBytes = int64_t{4} << 30;  // well above any image set we train on
  absl::Status s = ReadWholeFile(path, &bytes, kMaxIdxBytes);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("IDX file: ", s.message()));
  return ParseIdx(bytes, path);
}

absl::StatusOr<IdxArray> ParseIdx(const std::string& bytes, const std::string& path) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4) {
    return absl::DataLossError(
        absl::StrCat(path, ": truncated IDX file: ", bytes.size(), " bytes, no 4-byte magic"));
  }
  const uint8_t type = p[2];
  const int ndims = p[3];
  if (p[0] != 0 || p[1] != 0 || (type != kIdxU8 && type != kIdxF32) || ndims == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": bad IDX magic ", MagicHex(p),
        ": expected 0x000008NN (u8) or 0x00000DNN (f32) with NN >= 1 dims, e.g. 0x00000801 "
        "labels, 0x00000803 images"));
  }
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (bytes.size() < header) {
    return absl::DataLossError(absl::StrCat(path, ": truncated IDX header: ", ndims,
                                            " dims need ", header, " bytes, file has ",
                                            bytes.size()));
  }
  IdxArray array;
  array.type = type;
  // Count in unsigned 128 bits: 255 dims of up to 2^32 cannot overflow silently.
  unsigned __int128 elements = 1;
  const unsigned __int128 limit = bytes.size();
  for (int d = 0; d < ndims; ++d) {
    const uint32_t dim = ReadBigEndian32(p + 4 + 4 * d);
    array.dims.push_back(dim);
    elements *= dim;
    if (elements > limit) elements = limit + 1;  // clamp; it is too big either way
  }
  const unsigned __int128 data_bytes = elements * ElementSize(type);
  const size_t available = bytes.size() - header;
  if (data_bytes != available) {
    const std::string dims = absl::StrJoin(array.dims, "x");
    if (data_bytes > available) {
      return absl::DataLossError(absl::StrCat(path, ": truncated IDX data: dims ", dims,
                                              " need more than the ", available,
                                              " bytes after the header"));
    }
    return absl::DataLossError(absl::StrCat(path, ": IDX file has ",
                                            available - static_cast<size_t>(data_bytes),
                                            " bytes beyond the data for dims ", dims));
  }
  const size_t n = static_cast<size_t>(elements);
  const unsigned char* data = p + header;
  if (type == kIdxU8) {
    array.u8.assign(data, data + n);
  } else {
    array.f32.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t bits = ReadBigEndian32(data + 4 * i);
      std::memcpy(&array.f32[i], &bits, 4);
    }
  }
  return array;
}

absl::StatusOr<std::string> EncodeIdx(const IdxArray& array) {
  if (array.dims.empty() || array.dims.size() > 255 ||
      (array.type != kIdxU8 && array.type != kIdxF32)) {
    return absl::InvalidArgumentError("IDX array needs type u8 or f32 and 1..255 dims");
  }
  uint64_t elements = 1;
  for (int64_t d : array.dims) {
    if (d < 0 || d > 0xffffffffll) {
      return absl::InvalidArgumentError(absl::StrCat("IDX dim ", d, " does not fit in u32"));
    }
    elements *= static_cast<uint64_t>(d);
  }
  const uint64_t have = array.type == kIdxU8 ? array.u8.size() : array.f32.size();
  if (have != elements) {
    return absl::InvalidArgumentError(absl::StrCat("IDX array has ", have, " elements, dims ",
                                                   absl::StrJoin(array.dims, "x"), " need ",
                                                   elements));
  }
  std::string out;
  out.reserve(4 + 4 * array.dims.size() + elements * ElementSize(array.type));
  out.push_back(0);
  out.push_back(0);
  out.push_back(static_cast<char>(array.type));
  out.push_back(static_cast<char>(array.dims.size()));
  for (int64_t d : array.dims) AppendBigEndian32(static_cast<uint32_t>(d), &out);
  if (array.type == kIdxU8) {
    out.append(reinterpret_cast<const char*>(array.u8.data()), array.u8.size());
  } else {
    for (float f : array.f32) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      AppendBigEndian32(bits, &out);
    }
  }
  return out;
}

absl::Status WriteIdx(const std::string& path, const IdxArray& array) {
  absl::StatusOr<std::string> bytes = EncodeIdx(array);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        absl::StrCat("cannot write ", path, ": ", bytes.status().message()));
  }
  return WriteFileAtomic(path, *bytes);
}

absl::StatusOr<ClassificationData> ReadIdxClassification(const std::string& images_path,
                                                         const std::string& labels_path,
                                                         int64_t num_classes) {
  absl::StatusOr<IdxArray> images = ReadIdx(images_path);
  if (!images.ok()) return images.status();
  absl::StatusOr<IdxArray> labels = ReadIdx(labels_path);
  if (!labels.ok()) return labels.status();
  if (images->dims.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        images_path, ": IDX images need >= 2 dims (examples x ...), got ", images->dims.size()));
  }
  if (labels->type != kIdxU8 || labels->dims.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        labels_path, ": IDX labels must be u8 with 1 dim (magic 0x00000801)"));
  }
  const int64_t n = images->dims[0];
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(images_path, ": no examples"));
  if (labels->dims[0] != n) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, " has ", n, " examples but ",
                                                   labels_path, " has ", labels->dims[0],
                                                   " labels"));
  }
  for (size_t d = 1; d < images->dims.size(); ++d) {
    if (images->dims[d] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          images_path, ": IDX image dim ", d, " is 0: an example needs at least one value"));
    }
  }
  ClassificationData data;
  data.num_examples = n;
  data.example_dims.assign(images->dims.begin() + 1, images->dims.end());
  if (images->type == kIdxU8) {
    data.features.resize(images->u8.size());
    for (size_t i = 0; i < images->u8.size(); ++i) data.features[i] = images->u8[i] / 255.0f;
  } else {
    for (size_t i = 0; i < images->f32.size(); ++i) {
      if (!std::isfinite(images->f32[i])) {
        return absl::InvalidArgumentError(absl::StrCat(
            images_path, ": non-finite value in example ", i / data.example_size()));
      }
    }
    data.features = std::move(images->f32);
  }
  int64_t max_label = 0;
  for (uint8_t l : labels->u8) max_label = std::max<int64_t>(max_label, l);
  data.num_classes = num_classes > 0 ? num_classes : max_label + 1;
  data.labels.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    if (labels->u8[i] >= data.num_classes) {
      return absl::InvalidArgumentError(absl::StrCat(labels_path, ": example ", i, " has label ",
                                                     static_cast<int>(labels->u8[i]), ", expected < ",
                                                     data.num_classes, " classes"));
    }
    data.labels[i] = labels->u8[i];
  }
  return data;
}

}  // namespace trainer
}  // namespace mnt
