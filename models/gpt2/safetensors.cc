#include "models/gpt2/safetensors.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "plugins/backends/common/float_convert.h"

namespace mnt::gpt2 {
namespace {

// Header bigger than this is refused (the reference reader's limit).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

// A JSON string literal; names and dtypes here are plain ASCII, but quote
// and backslash are escaped and control characters written as \u00XX.
std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": not a safetensors file: ", what));
}

// A JSON number that is a non-negative integer below 2^53.
bool AsCount(const google::protobuf::Value& v, int64_t* out) {
  if (v.kind_case() != google::protobuf::Value::kNumberValue) return false;
  const double d = v.number_value();
  if (!(d >= 0) || d > 9007199254740992.0 || std::floor(d) != d) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

}  // namespace

int64_t SafeTensorDtypeSize(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "BF16" || dtype == "F16") return 2;
  return 0;
}

std::string EncodeSafetensors(const std::vector<SafeTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      json += (first ? "" : ",") + JsonQuote(k) + ":" + JsonQuote(v);
      first = false;
    }
    json += "}";
  }
  uint64_t offset = 0;
  for (const SafeTensor& t : tensors) {
    std::string shape;
    for (int64_t d : t.shape) absl::StrAppend(&shape, shape.empty() ? "" : ",", d);
    const uint64_t end = offset + t.bytes.size();
    absl::StrAppend(&json, json.size() > 1 ? "," : "", JsonQuote(t.name), ":{\"dtype\":",
                    JsonQuote(t.dtype), ",\"shape\":[", shape, "],\"data_offsets\":[", offset,
                    ",", end, "]}");
    offset = end;
  }
  json += "}";
  while (json.size() % 8 != 0) json += ' ';
  std::string file;
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) file += static_cast<char>((n >> (8 * i)) & 0xff);
  file += json;
  for (const SafeTensor& t : tensors) file += t.bytes;
  return file;
}

absl::StatusOr<std::vector<SafeTensor>> ParseSafetensors(const std::string& file,
                                                         const std::string& source) {
  if (file.size() < 8) return Bad(source, "shorter than its 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(file[i]);
  if (n < 2 || n > kMaxHeaderBytes || n > file.size() - 8) {
    return Bad(source, absl::StrFormat("header length %u does not fit the %u-byte file", n,
                                       file.size()));
  }
  google::protobuf::Struct header;
  google::protobuf::util::JsonParseOptions options;
  const std::string json = file.substr(8, n);
  if (!google::protobuf::util::JsonStringToMessage(json, &header, options).ok()) {
    return Bad(source, "its header is not a JSON object");
  }
  const uint64_t data_size = file.size() - 8 - n;
  const char* data = file.data() + 8 + n;
  std::vector<std::pair<uint64_t, SafeTensor>> by_offset;
  for (const auto& [name, entry] : header.fields()) {
    if (name == "__metadata__") continue;
    const std::string where = "tensor '" + name + "'";
    if (entry.kind_case() != google::protobuf::Value::kStructValue) {
      return Bad(source, where + " is not an object");
    }
    const auto& f = entry.struct_value().fields();
    SafeTensor t;
    t.name = name;
    auto dtype = f.find("dtype");
    auto shape = f.find("shape");
    auto offsets = f.find("data_offsets");
    if (dtype == f.end() || shape == f.end() || offsets == f.end()) {
      return Bad(source, where + " lacks dtype, shape or data_offsets");
    }
    t.dtype = dtype->second.string_value();
    const int64_t size = SafeTensorDtypeSize(t.dtype);
    if (size == 0) {
      return Bad(source, where + " has dtype '" + t.dtype + "' (this reader takes F32, BF16, F16)");
    }
    int64_t elements = 1;
    if (shape->second.kind_case() != google::protobuf::Value::kListValue) {
      return Bad(source, where + ": shape is not a list");
    }
    for (const auto& d : shape->second.list_value().values()) {
      int64_t dim = 0;
      if (!AsCount(d, &dim) || dim > (int64_t{1} << 40) ||
          (dim > 0 && elements > (int64_t{1} << 40) / dim)) {
        return Bad(source, where + ": a shape entry is not a reasonable size");
      }
      t.shape.push_back(dim);
      elements *= dim;
    }
    int64_t begin = 0, end = 0;
    if (offsets->second.kind_case() != google::protobuf::Value::kListValue ||
        offsets->second.list_value().values_size() != 2 ||
        !AsCount(offsets->second.list_value().values(0), &begin) ||
        !AsCount(offsets->second.list_value().values(1), &end) || end < begin ||
        static_cast<uint64_t>(end) > data_size) {
      return Bad(source, where + ": data_offsets are not [begin, end] within the data");
    }
    if (end - begin != elements * size) {
      return Bad(source, absl::StrFormat("%s: %d bytes for %d elements of %s", where,
                                         end - begin, elements, t.dtype));
    }
    t.bytes.assign(data + begin, static_cast<size_t>(end - begin));
    by_offset.emplace_back(static_cast<uint64_t>(begin), std::move(t));
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  uint64_t covered = 0;
  std::vector<SafeTensor> tensors;
  for (auto& [begin, t] : by_offset) {
    if (begin != covered) {
      return Bad(source, absl::StrFormat("tensor '%s' starts at byte %u of the data, not %u "
                                         "(a gap or an overlap)", t.name, begin, covered));
    }
    covered += t.bytes.size();
    tensors.push_back(std::move(t));
  }
  if (covered != data_size) {
    return Bad(source, absl::StrFormat("%u bytes after the last tensor", data_size - covered));
  }
  return tensors;
}

std::string EncodeSafeTensorFloats(const float* v, size_t n, bool bf16) {
  std::string out(n * (bf16 ? 2 : 4), '\0');
  for (size_t i = 0; i < n; ++i) {
    if (bf16) {
      const uint16_t b = FloatToBf16Bits(v[i]);
      out[2 * i] = static_cast<char>(b & 0xff);
      out[2 * i + 1] = static_cast<char>(b >> 8);
    } else {
      const uint32_t u = FloatToBits(v[i]);
      for (int k = 0; k < 4; ++k) out[4 * i + k] = static_cast<char>((u >> (8 * k)) & 0xff);
    }
  }
  return out;
}

std::vector<float> DecodeSafeTensorFloats(const SafeTensor& t) {
  const int64_t size = SafeTensorDtypeSize(t.dtype);
  std::vector<float> v(t.bytes.size() / static_cast<size_t>(size));
  const auto* b = reinterpret_cast<const unsigned char*>(t.bytes.data());
  for (size_t i = 0; i < v.size(); ++i) {
    if (size == 4) {
      uint32_t u = 0;
      for (int k = 3; k >= 0; --k) u = (u << 8) | b[4 * i + k];
      v[i] = BitsToFloat(u);
    } else {
      const uint16_t h = static_cast<uint16_t>(b[2 * i] | (b[2 * i + 1] << 8));
      v[i] = t.dtype == "BF16" ? BitsToFloat(Bf16BitsToF32Bits(h)) : HalfBitsToFloat(h);
    }
  }
  return v;
}

}  // namespace mnt::gpt2
