#include "trainer/core/optimizer_state.h"

#include "absl/strings/str_cat.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {
namespace {

constexpr int64_t kBlock = MNT_QUANTIZATION_BLOCK_SIZE;
static_assert(kQuantizationBlockElements == kBlock, "ZeRO-1's pieces start on a block");

int64_t Numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t Blocks(int64_t n) { return (n + kBlock - 1) / kBlock; }

}  // namespace

int64_t ParamShape::numel() const { return Numel(dims); }

int64_t ParamShape::copies() const {
  return Numel(std::vector<int64_t>(dims.begin(), dims.begin() + stacked_dims));
}

std::vector<int64_t> ParamShape::copy_dims() const {
  return std::vector<int64_t>(dims.begin() + stacked_dims, dims.end());
}

size_t StateTensorSpec::bytes() const {
  return static_cast<size_t>(count) * sdk::DTypeSize(dtype);
}

bool KeepsOwnState(const mantissa::OptimizerConfig& config) {
  return config.name() == "adamw8bit" || config.name() == "adafactor";
}

bool Quantized(const OptimizerOptions& options, const ParamShape& shape) {
  // Hugging Face's Trainer registers every nn.Embedding's weight for 32-bit
  // state with bitsandbytes' optimizers (optim="adamw_bnb_8bit"), as
  // bitsandbytes' own StableEmbedding does. Measured here too: the 8-layer
  // GPT's eval loss at step 2000 was +1.01% from AdamW's with 8-bit tables,
  // -0.21% with fp32 ones (docs/performance.md, "Optimizers").
  if (shape.role == MNT_PARAM_ROLE_EMBEDDING && !options.embedding_8bit) return false;
  return shape.copy_numel() >= options.min_8bit_size;
}

bool Factored(const ParamShape& shape) { return shape.copy_dims().size() >= 2; }

std::vector<StateTensorSpec> StateTensorsOf(const mantissa::OptimizerConfig& config,
                                            const OptimizerOptions& options,
                                            const ParamShape& shape) {
  const std::vector<int64_t>& dims = shape.dims;
  const int64_t n = shape.numel();
  if (config.name() == "adamw8bit") {
    // bitsandbytes keeps small tensors (biases, norms) in 32 bits: their
    // state is little, and 8 bits would cost them accuracy for nothing. A
    // stacked parameter's blocks run on across its copies: the same blocks
    // as per copy when a copy's size is a multiple of the block (every
    // GPT-2 matrix).
    if (!Quantized(options, shape)) {
      return {{"opt.state1/", MNT_DTYPE_F32, n, 1}, {"opt.state2/", MNT_DTYPE_F32, n, 1}};
    }
    return {{"opt.m8/", MNT_DTYPE_U8, n, 1},
            {"opt.m8_absmax/", MNT_DTYPE_F32, Blocks(n), kBlock},
            {"opt.v8/", MNT_DTYPE_U8, n, 1},
            {"opt.v8_absmax/", MNT_DTYPE_F32, Blocks(n), kBlock}};
  }
  if (config.name() != "adafactor") return {};
  std::vector<StateTensorSpec> specs;
  const int rank = static_cast<int>(dims.size());
  if (Factored(shape)) {
    // Factored over the last two dims, batched over the leading ones (as
    // ADAFACTOR_STEP reads in[0]'s dims; the copies of a stacked parameter
    // are leading dims, so each copy's rows and columns lie together).
    const int64_t batches = Numel(std::vector<int64_t>(dims.begin(), dims.end() - 2));
    specs.push_back({"opt.row/", MNT_DTYPE_F32, batches * dims[rank - 2], 0});
    specs.push_back({"opt.col/", MNT_DTYPE_F32, batches * dims[rank - 1], 0});
  } else {
    specs.push_back({"opt.v/", MNT_DTYPE_F32, n, 1});
  }
  if (options.adafactor.beta1 != 0.0f) specs.push_back({"opt.m/", MNT_DTYPE_F32, n, 1});
  return specs;
}

int64_t OptimizerStateBytes(const mantissa::OptimizerConfig& config,
                            const std::vector<ParamShape>& shapes) {
  auto options = ParseOptimizerOptions(config);
  const OptimizerOptions o = options.ok() ? *options : OptimizerOptions{};
  const int64_t slots = config.name() == "sgd" ? 1 : 2;
  int64_t bytes = 0;
  for (const ParamShape& shape : shapes) {
    if (!KeepsOwnState(config)) {
      bytes += slots * shape.numel() * static_cast<int64_t>(sizeof(float));
      continue;
    }
    for (const StateTensorSpec& spec : StateTensorsOf(config, o, shape)) {
      bytes += static_cast<int64_t>(spec.bytes());
    }
  }
  return bytes;
}

std::pair<size_t, size_t> OptimizerState::ByteRange(const ParamPiece& piece,
                                                    int64_t param_numel,
                                                    const StateTensorSpec& spec) {
  const size_t element = sdk::DTypeSize(spec.dtype);
  if (spec.granularity == 0 || piece.numel == param_numel) return {0, spec.bytes()};
  const int64_t first = piece.first / spec.granularity;
  const int64_t count =
      (piece.numel + spec.granularity - 1) / spec.granularity;  // the last block may be partial
  return {static_cast<size_t>(first) * element, static_cast<size_t>(count) * element};
}

absl::StatusOr<std::unique_ptr<OptimizerState>> OptimizerState::Create(
    const mantissa::OptimizerConfig& config, const std::vector<ParamShape>& shapes,
    const std::vector<ParamPiece>& pieces, const sdk::BackendClient& client) {
  auto options = ParseOptimizerOptions(config);
  if (!options.ok()) return options.status();
  std::unique_ptr<OptimizerState> state(new OptimizerState(*options));
  for (const ParamShape& shape : shapes) {
    state->specs_.push_back(StateTensorsOf(config, *options, shape));
  }
  for (const ParamPiece& piece : pieces) {
    const int64_t numel = shapes[piece.param].numel();
    std::vector<sdk::DeviceBuffer> buffers;
    std::vector<MNT_Tensor> tensors;
    for (const StateTensorSpec& spec : state->specs_[piece.param]) {
      if (piece.numel != numel &&
          (spec.granularity == 0 || piece.first % spec.granularity != 0)) {
        return absl::InternalError(absl::StrCat(
            "--optimizer=", config.name(), ": state '", spec.prefix, "' of parameter ",
            piece.param, " cannot be split at element ", piece.first));
      }
      const auto [offset, bytes] = ByteRange(piece, numel, spec);
      sdk::DeviceBuffer buffer;
      if (auto s = sdk::ToAbsl(client.Allocate(bytes, MNT_MEMORY_OPTIMIZER_STATE, &buffer));
          !s.ok())
        return s;
      const int64_t count = static_cast<int64_t>(bytes / sdk::DTypeSize(spec.dtype));
      const MNT_Tensor t = sdk::MakeTensor(buffer.data(), spec.dtype, {count});
      // Zero bytes from the host: FILL takes no U8, and this runs once.
      const std::string zeros(bytes, '\0');
      if (auto s = sdk::ToAbsl(client.ToDevice(buffer.data(), zeros.data(), bytes)); !s.ok()) {
        return s;
      }
      buffers.push_back(std::move(buffer));
      tensors.push_back(t);
    }
    state->buffers_.push_back(std::move(buffers));
    state->tensors_.push_back(std::move(tensors));
  }
  return state;
}

MNT_Tensor OptimizerState::Tensor(size_t i, size_t k) const { return tensors_[i][k]; }

}  // namespace mnt::trainer
