#include "trainer/checkpoint/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/stubs/logging.h"
#include "plugins/abi/mnt_common.h"
#include "trainer/io/atomic_file.h"

namespace mnt {
namespace trainer {
namespace {

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t GetLittleEndian(const std::string& in, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[offset + i])) << (8 * i);
  }
  return value;
}

uint32_t Crc32(const char* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large payloads in pieces.
  constexpr size_t kChunk = size_t{1} << 30;
  while (size > 0) {
    const size_t n = size < kChunk ? size : kChunk;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(n));
    data += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

// Byte size of every tensor must match its dims, so a reader can trust them.
absl::Status CheckTensors(const CheckpointData& data, const std::string& source) {
  for (const TensorData& t : data.tensors()) {
    const int64_t element_size = DTypeSize(t.dtype());
    if (element_size == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": tensor '", t.name(), "' has unknown dtype ", t.dtype()));
    }
    int64_t elements = 1;
    for (int64_t d : t.dims()) {
      if (d < 0 || (d > 0 && elements > INT64_MAX / element_size / d)) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ": tensor '", t.name(), "' has invalid dims [", absl::StrJoin(t.dims(), ","), "]"));
      }
      elements *= d;
    }
    if (static_cast<int64_t>(t.data().size()) != elements * element_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": tensor '", t.name(), "' has ", t.data().size(), " bytes, expected ",
          elements * element_size, " for dims [", absl::StrJoin(t.dims(), ","), "] dtype ",
          t.dtype()));
    }
  }
  return absl::OkStatus();
}

// Protobuf logs what it refuses (invalid UTF-8 in a string field) on stderr
// itself; while a checkpoint parses, the text is kept for our one error line
// instead. Not thread-safe, as protobuf's handler is not.
std::string* captured_protobuf_log = nullptr;

void CaptureProtobufLog(google::protobuf::LogLevel, const char*, int,
                        const std::string& message) {
  if (captured_protobuf_log != nullptr && captured_protobuf_log->empty()) {
    *captured_protobuf_log = message;
  }
}

class ProtobufLogCapture {
 public:
  explicit ProtobufLogCapture(std::string* into) {
    captured_protobuf_log = into;
    previous_ = google::protobuf::SetLogHandler(&CaptureProtobufLog);
  }
  ~ProtobufLogCapture() {
    google::protobuf::SetLogHandler(previous_);
    captured_protobuf_log = nullptr;
  }

 private:
  google::protobuf::LogHandler* previous_;
};

}  // namespace

int64_t DTypeSize(int32_t dtype) {
  switch (dtype) {
    case MNT_DTYPE_F32: return 4;
    case MNT_DTYPE_F16: return 2;
    case MNT_DTYPE_BF16: return 2;
    case MNT_DTYPE_I32: return 4;
    case MNT_DTYPE_U8: return 1;
    case MNT_DTYPE_F64: return 8;
    default: return 0;
  }
}

std::string LatestCheckpointPath(const std::string& checkpoint_dir) {
  return checkpoint_dir + "/latest";
}

absl::StatusOr<std::string> EncodeCheckpoint(const CheckpointData& data) {
  absl::Status s = CheckTensors(data, "checkpoint to write");
  if (!s.ok()) return s;
  const size_t message_size = data.ByteSizeLong();
  if (message_size > static_cast<size_t>(INT_MAX) - 16) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "checkpoint payload of ", message_size, " bytes exceeds protobuf's 2 GiB limit"));
  }
  if (data.format_version() != 0 &&
      data.format_version() != static_cast<int32_t>(kCheckpointFormatVersion)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint to write has format_version ", data.format_version(), "; this build writes ",
        kCheckpointFormatVersion, " (leave it 0 to have it stamped)"));
  }
  std::string payload;
  {
    google::protobuf::io::StringOutputStream stream(&payload);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);  // map order fixed: same data, same bytes
    if (data.format_version() == 0) {
      // Stamp the version without copying the tensors: field 1 is the first
      // field a deterministic serialization writes, so these bytes equal the
      // serialization of the same message with format_version already set.
      constexpr uint32_t kVarintWireType = 0;
      coded.WriteTag((CheckpointData::kFormatVersionFieldNumber << 3) | kVarintWireType);
      coded.WriteVarint32(kCheckpointFormatVersion);
    }
    data.SerializeWithCachedSizes(&coded);
    if (coded.HadError()) return absl::InternalError("serializing the checkpoint failed");
  }
  std::string out;
  out.reserve(kCheckpointHeaderBytes + payload.size() + 4);
  out.append(kCheckpointMagic, sizeof(kCheckpointMagic));
  PutLittleEndian(kCheckpointFormatVersion, 4, &out);
  PutLittleEndian(payload.size(), 8, &out);
  out.append(payload);
  PutLittleEndian(Crc32(payload.data(), payload.size()), 4, &out);
  return out;
}

absl::StatusOr<CheckpointData> DecodeCheckpoint(const std::string& bytes,
                                                const std::string& source) {
  const size_t magic_bytes = std::min(bytes.size(), sizeof(kCheckpointMagic));
  if (std::memcmp(bytes.data(), kCheckpointMagic, magic_bytes) != 0) {
    return absl::DataLossError(
        absl::StrCat(source, " is not a Mantissa checkpoint (bad magic)"));
  }
  if (bytes.size() < kCheckpointHeaderBytes) {
    return absl::DataLossError(absl::StrCat(source, ": truncated checkpoint: ", bytes.size(),
                                            " bytes, shorter than the ",
                                            kCheckpointHeaderBytes, "-byte header"));
  }
  const uint32_t version = static_cast<uint32_t>(GetLittleEndian(bytes, 8, 4));
  if (version != kCheckpointFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(source, ": unsupported checkpoint format version ", version,
                     " (this build reads version ", kCheckpointFormatVersion, ")"));
  }
  const uint64_t payload_size = GetLittleEndian(bytes, 12, 8);
  const uint64_t available = bytes.size() - kCheckpointHeaderBytes;
  if (payload_size > available || available - payload_size < 4) {
    return absl::DataLossError(absl::StrCat(
        source, ": truncated checkpoint: header promises ", payload_size,
        " payload bytes + 4 CRC bytes, file has ", available, " after the header"));
  }
  if (available - payload_size > 4) {
    return absl::DataLossError(absl::StrCat(source, ": ", available - payload_size - 4,
                                            " unexpected bytes after the checkpoint's CRC"));
  }
  const char* payload = bytes.data() + kCheckpointHeaderBytes;
  const uint32_t stored_crc =
      static_cast<uint32_t>(GetLittleEndian(bytes, kCheckpointHeaderBytes + payload_size, 4));
  const uint32_t computed_crc = Crc32(payload, payload_size);
  if (stored_crc != computed_crc) {
    return absl::DataLossError(absl::StrCat(
        source, ": checkpoint CRC mismatch (stored 0x", absl::Hex(stored_crc, absl::kZeroPad8),
        ", computed 0x", absl::Hex(computed_crc, absl::kZeroPad8), "): the file is corrupt"));
  }
  CheckpointData data;
  std::string protobuf_said;
  bool parsed = false;
  if (payload_size <= static_cast<uint64_t>(INT_MAX)) {
    ProtobufLogCapture capture(&protobuf_said);
    parsed = data.ParseFromArray(payload, static_cast<int>(payload_size));
  }
  if (!parsed) {
    for (char& c : protobuf_said) {
      if (c == '\n') c = ' ';
    }
    return absl::DataLossError(
        absl::StrCat(source, ": checkpoint payload does not parse as CheckpointData",
                     protobuf_said.empty() ? "" : " (", protobuf_said,
                     protobuf_said.empty() ? "" : ")"));
  }
  if (data.format_version() != static_cast<int32_t>(kCheckpointFormatVersion)) {
    return absl::FailedPreconditionError(
        absl::StrCat(source, ": payload format_version ", data.format_version(),
                     " disagrees with header version ", version));
  }
  absl::Status s = CheckTensors(data, source);
  if (!s.ok()) return absl::DataLossError(s.message());
  return data;
}

absl::Status WriteCheckpointAtomic(const std::string& path, const CheckpointData& data) {
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(data);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        absl::StrCat("cannot write checkpoint ", path, ": ", bytes.status().message()));
  }
  return WriteFileAtomic(path, *bytes);
}

absl::StatusOr<CheckpointData> ReadCheckpoint(const std::string& path) {
  std::string bytes;
  absl::Status s = ReadWholeFile(path, &bytes);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("checkpoint: ", s.message()));
  }
  return DecodeCheckpoint(bytes, path);
}

absl::Status CheckCompatible(const CheckpointData& data, const std::string& model,
                             const std::string& model_options, const std::string& precision) {
  struct Field {
    const char* flag;
    const std::string& saved;
    const std::string& wanted;
  };
  for (const Field& f : {Field{"model", data.model(), model},
                         Field{"model_options", data.model_options(), model_options},
                         Field{"precision", data.precision(), precision}}) {
    if (f.saved != f.wanted) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint is incompatible: it was written with --", f.flag, "=\"", f.saved,
          "\" but this run uses --", f.flag, "=\"", f.wanted, "\""));
    }
  }
  return absl::OkStatus();
}

}  // namespace trainer
}  // namespace mnt
