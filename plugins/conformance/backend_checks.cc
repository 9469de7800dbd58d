// Conformance checks for backend plugins: the memory contract, then every
// kernel the plugin says it supports against the CPU reference backend on the
// same random inputs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "plugins/backends/common/adafactor_math.h"
#include "plugins/backends/common/blockwise_quantization.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/fp8_convert.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/op_list.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"
#include "plugins/conformance/conformance.h"
#include "plugins/conformance/optimizer_references.h"

namespace mnt::conformance {
namespace {

using sdk::Format;
using sdk::Status;

// A host tensor: values as float (I32 ids stored exactly), a dtype and dims.
struct HostTensor {
  MNT_DType dtype = MNT_DTYPE_F32;
  std::vector<int64_t> dims;
  std::vector<float> values;
  bool absent = false;  // an optional operand left out (data NULL)
};

HostTensor Random(std::mt19937_64* rng, MNT_DType dtype,
                  std::vector<int64_t> dims, double lo = -2, double hi = 2) {
  HostTensor t{dtype, dims, {}};
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < n; ++i) t.values.push_back(static_cast<float>(u(*rng)));
  return t;
}

HostTensor Zeros(MNT_DType dtype, std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return HostTensor{dtype, dims, std::vector<float>(n, 0.0f)};
}

// One tensor's AdamW state as the step's outputs: master weights, first
// moment, second moment (positive) and a zeroed bf16 working copy.
std::vector<HostTensor> AdamWState(std::mt19937_64* rng, const std::vector<int64_t>& dims) {
  return {Random(rng, MNT_DTYPE_F32, dims), Random(rng, MNT_DTYPE_F32, dims, -0.1, 0.1),
          Random(rng, MNT_DTYPE_F32, dims, 0.01, 0.1), Zeros(MNT_DTYPE_BF16, dims)};
}

std::vector<unsigned char> Encode(const HostTensor& t) {
  const size_t es = sdk::DTypeSize(t.dtype);
  std::vector<unsigned char> bytes(t.values.size() * es);
  for (size_t i = 0; i < t.values.size(); ++i) {
    const float v = t.values[i];
    unsigned char* p = bytes.data() + i * es;
    if (t.dtype == MNT_DTYPE_F32) {
      std::memcpy(p, &v, 4);
    } else if (t.dtype == MNT_DTYPE_I32) {
      const int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
    } else if (t.dtype == MNT_DTYPE_U8) {  // codes 0..255
      *p = static_cast<unsigned char>(v);
    } else if (t.dtype == MNT_DTYPE_F16) {
      const uint16_t h = FloatToHalfBits(v);
      std::memcpy(p, &h, 2);
    } else if (t.dtype == MNT_DTYPE_F8_E4M3) {  // saturating, nearest even
      *p = FloatToFp8E4M3Bits(v);
    } else if (t.dtype == MNT_DTYPE_F8_E5M2) {
      *p = FloatToFp8E5M2Bits(v);
    } else {
      const uint16_t b = FloatToBf16Bits(v);
      std::memcpy(p, &b, 2);
    }
  }
  return bytes;
}

void Decode(const std::vector<unsigned char>& bytes, HostTensor* t) {
  const size_t es = sdk::DTypeSize(t->dtype);
  for (size_t i = 0; i < t->values.size(); ++i) {
    const unsigned char* p = bytes.data() + i * es;
    if (t->dtype == MNT_DTYPE_F32) {
      std::memcpy(&t->values[i], p, 4);
    } else if (t->dtype == MNT_DTYPE_I32) {
      int32_t x;
      std::memcpy(&x, p, 4);
      t->values[i] = static_cast<float>(x);
    } else if (t->dtype == MNT_DTYPE_U8) {
      t->values[i] = static_cast<float>(*p);
    } else if (t->dtype == MNT_DTYPE_F8_E4M3) {
      t->values[i] = Fp8E4M3BitsToFloat(*p);
    } else if (t->dtype == MNT_DTYPE_F8_E5M2) {
      t->values[i] = Fp8E5M2BitsToFloat(*p);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      t->values[i] = t->dtype == MNT_DTYPE_F16 ? HalfBitsToFloat(h) : Bf16BitsToFloat(h);
    }
  }
}

class Device {
 public:
  explicit Device(const MNT_Plugin_Api* plugin) : plugin_(plugin) {}
  ~Device() {
    if (backend_ == nullptr) return;
    MNT_Backend_Destroy_Args d{};
    d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    d.backend = backend_;
    (void)sdk::StatusFromPluginError(plugin_, plugin_->backend->Backend_Destroy(&d));
  }
  Status Create(const std::string& options = "") {
    MNT_Backend_Create_Args c{};
    c.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    c.options = options.c_str();
    MNT_RETURN_IF_ERROR(
        sdk::StatusFromPluginError(plugin_, plugin_->backend->Backend_Create(&c)));
    if (c.backend == nullptr) return sdk::Internal("Backend_Create gave NULL");
    backend_ = c.backend;
    client_ = sdk::BackendClient(plugin_, backend_);
    return Status::Ok();
  }
  bool Supports(MNT_Op op) const {
    MNT_Backend_GetOpSupport_Args q{};
    q.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
    q.backend = backend_;
    q.op = op;
    return sdk::StatusFromPluginError(plugin_, plugin_->backend->Backend_GetOpSupport(&q))
               .ok() &&
           q.supported;
  }
  // Uploads inputs and the initial outputs, runs, downloads the outputs.
  Status Run(MNT_Op op, const std::vector<HostTensor>& in,
             std::vector<HostTensor>* out, const void* params) const {
    std::vector<sdk::DeviceBuffer> buffers;
    std::vector<MNT_Tensor> ins, outs;
    auto upload = [&](const HostTensor& t, std::vector<MNT_Tensor>* views) -> Status {
      if (t.absent) {
        views->push_back(sdk::MakeTensor(nullptr, t.dtype, {1}));
        return Status::Ok();
      }
      const std::vector<unsigned char> bytes = Encode(t);
      buffers.emplace_back();
      MNT_RETURN_IF_ERROR(client_.Allocate(std::max<size_t>(bytes.size(), 4),
                                           MNT_MEMORY_WORKSPACE, &buffers.back()));
      MNT_RETURN_IF_ERROR(client_.ToDevice(buffers.back().data(), bytes.data(), bytes.size()));
      views->push_back(sdk::MakeTensor(buffers.back().data(), t.dtype,
                                       static_cast<int32_t>(t.dims.size()), t.dims.data()));
      return Status::Ok();
    };
    buffers.reserve(in.size() + out->size());
    for (const HostTensor& t : in) MNT_RETURN_IF_ERROR(upload(t, &ins));
    for (const HostTensor& t : *out) MNT_RETURN_IF_ERROR(upload(t, &outs));
    MNT_RETURN_IF_ERROR(client_.Run(op, ins, outs, params));
    MNT_RETURN_IF_ERROR(client_.Synchronize());
    for (size_t i = 0; i < out->size(); ++i) {
      if ((*out)[i].absent) continue;
      std::vector<unsigned char> bytes(Encode((*out)[i]).size());
      MNT_RETURN_IF_ERROR(client_.ToHost(bytes.data(), outs[i].data, bytes.size()));
      Decode(bytes, &(*out)[i]);
    }
    return Status::Ok();
  }
  const sdk::BackendClient& client() const { return client_; }
  MNT_Backend* backend() const { return backend_; }

 private:
  const MNT_Plugin_Api* plugin_;
  MNT_Backend* backend_ = nullptr;
  sdk::BackendClient client_;
};

// Candidate vs reference, |a - b| <= tol * max|reference| per output.
std::string Compare(const std::vector<HostTensor>& got,
                    const std::vector<HostTensor>& want, double tol) {
  for (size_t o = 0; o < want.size(); ++o) {
    double scale = 0;
    for (float v : want[o].values) scale = std::max(scale, double{std::abs(v)});
    for (size_t i = 0; i < want[o].values.size(); ++i) {
      const double a = got[o].values[i], b = want[o].values[i];
      if (!std::isfinite(a) || !std::isfinite(b) ||
          std::abs(a - b) > tol * scale + 1e-30) {
        return Format("out[%zu][%zu] = %.9g, reference %.9g (tolerance %.2g x %.3g)",
                      o, i, a, b, tol, scale);
      }
    }
  }
  return "";
}

// Candidate vs reference bit for bit (float outputs; any NaN fails): for
// ops whose every bit the ABI fixes.
std::string CompareBits(const std::vector<HostTensor>& got,
                        const std::vector<HostTensor>& want) {
  for (size_t o = 0; o < want.size(); ++o) {
    for (size_t i = 0; i < want[o].values.size(); ++i) {
      const float a = got[o].values[i], b = want[o].values[i];
      uint32_t ab, bb;
      std::memcpy(&ab, &a, 4);
      std::memcpy(&bb, &b, 4);
      if (std::isnan(a) || std::isnan(b) || ab != bb) {
        return Format("out[%zu][%zu] = %.9g (0x%08x), reference %.9g (0x%08x): not the same "
                      "bits",
                      o, i, a, ab, b, bb);
      }
    }
  }
  return "";
}

struct Case {
  std::string name;
  MNT_Op op;
  std::vector<HostTensor> in, out;
  const void* params;
  double tol;
  bool first_output_only = false;  // the rest are not finite by design
  // Skipped for a backend that does not offer it (INVALID: every backend).
  MNT_Capability needs = MNT_CAPABILITY_INVALID;
  bool exact_bits = false;  // CompareBits instead of Compare (tol unused)
};

std::string MemoryContract(const MNT_Plugin_Api* plugin, const Device& d,
                           std::mt19937_64* rng) {
  const sdk::BackendClient& c = d.client();
  int64_t before = 0, peak = 0, during = 0;
  if (!c.GetStats(MNT_MEMORY_OPTIMIZER_STATE, &before, &peak).ok())
    return "Memory_GetStats failed";
  const size_t bytes = 1000 + (*rng)() % 5000;
  sdk::DeviceBuffer b;
  Status s = c.Allocate(bytes, MNT_MEMORY_OPTIMIZER_STATE, &b);
  if (!s.ok()) return "Memory_Allocate: " + s.message();
  if (reinterpret_cast<uintptr_t>(b.data()) % 256 != 0) return "allocation not 256-byte aligned";
  if (!c.GetStats(MNT_MEMORY_OPTIMIZER_STATE, &during, &peak).ok() ||
      during != before + static_cast<int64_t>(bytes) || peak < during) {
    return Format("stats after allocating %zu bytes: current %lld (was %lld), peak %lld",
                  bytes, (long long)during, (long long)before, (long long)peak);
  }
  std::vector<unsigned char> src(bytes), back(bytes);
  for (auto& v : src) v = static_cast<unsigned char>((*rng)());
  sdk::DeviceBuffer b2;
  s = c.Allocate(bytes, MNT_MEMORY_WORKSPACE, &b2);
  if (s.ok()) s = c.ToDevice(b.data(), src.data(), bytes);
  if (s.ok()) s = c.Copy(b2.data(), b.data(), bytes, MNT_COPY_DEVICE_TO_DEVICE);
  if (s.ok()) s = c.ToHost(back.data(), b2.data(), bytes);
  if (!s.ok()) return "Memory_Copy: " + s.message();
  if (src != back) return "host -> device -> device -> host copy changed the bytes";
  b.Reset();
  if (!c.GetStats(MNT_MEMORY_OPTIMIZER_STATE, &during, &peak).ok() || during != before)
    return "Memory_Free did not return the bytes to the category";
  s = c.Free(nullptr);
  if (!s.ok()) return "Memory_Free(NULL): " + s.message();
  static int not_ours;
  if (c.Free(&not_ours).ok()) return "Memory_Free of a foreign pointer succeeded";
  MNT_Memory_Allocate_Args zero{};
  zero.struct_size = MNT_Memory_Allocate_Args_STRUCT_SIZE;
  zero.backend = d.backend();
  zero.category = MNT_MEMORY_DATA;
  zero.data = &not_ours;
  s = sdk::StatusFromPluginError(plugin, plugin->backend->Memory_Allocate(&zero));
  if (!s.ok() || zero.data != nullptr) return "Memory_Allocate(0) did not give NULL";
  return "";
}

// ABI 1.11 (MNT_CAPABILITY_OPTIMIZER_PIECES): a piece [begin, end) of
// parameter `param`'s flat buffer, one entry of an optimizer call.
struct PieceEntry {
  size_t param;
  int64_t begin, end;
};

int64_t NumElements(const HostTensor& t) { return static_cast<int64_t>(t.values.size()); }

// Elements [begin, end) of t as a 1-D tensor.
HostTensor Slice(const HostTensor& t, int64_t begin, int64_t end) {
  HostTensor s{t.dtype, {end - begin}, {}};
  s.values.assign(t.values.begin() + begin, t.values.begin() + end);
  return s;
}

// One optimizer op over some parameters, stepped whole by one call and in
// pieces by several. `scalars` lead a multi-tensor op's inputs (found_inf,
// the multiplier); `inputs[q]` are parameter q's per-tensor inputs (its
// gradient is sliced for a piece, a scalar such as a step counter is
// passed as it is), `outputs[q]` its outputs (master, state..., working
// copy), all sliced.
struct PieceOp {
  MNT_Op op;
  std::vector<HostTensor> scalars;
  std::vector<std::vector<HostTensor>> inputs, outputs;

  // Runs `entries` as one call with `params` on `d`, writing each entry's
  // outputs into `assembled` (per parameter, per output) at its range.
  Status RunPieces(const Device& d, const std::vector<PieceEntry>& entries,
                   const void* params, std::vector<std::vector<HostTensor>>* assembled) const {
    std::vector<HostTensor> in = scalars, out;
    for (const PieceEntry& e : entries) {
      const int64_t n = NumElements(outputs[e.param][0]);
      for (const HostTensor& t : inputs[e.param]) {
        in.push_back(NumElements(t) == n ? Slice(t, e.begin, e.end) : t);
      }
      for (const HostTensor& t : outputs[e.param]) out.push_back(Slice(t, e.begin, e.end));
    }
    MNT_RETURN_IF_ERROR(d.Run(op, in, &out, params));
    size_t o = 0;
    for (const PieceEntry& e : entries) {
      for (HostTensor& t : (*assembled)[e.param]) {
        std::copy(out[o].values.begin(), out[o].values.end(), t.values.begin() + e.begin);
        ++o;
      }
    }
    return Status::Ok();
  }

  // The whole parameters' outputs after one call with `params`.
  Status RunWhole(const Device& d, const void* params,
                  std::vector<std::vector<HostTensor>>* whole) const {
    std::vector<HostTensor> in = scalars, out;
    for (size_t q = 0; q < outputs.size(); ++q) {
      for (const HostTensor& t : inputs[q]) in.push_back(t);
      for (const HostTensor& t : outputs[q]) out.push_back(t);
    }
    MNT_RETURN_IF_ERROR(d.Run(op, in, &out, params));
    *whole = outputs;
    size_t o = 0;
    for (std::vector<HostTensor>& param : *whole) {
      for (HostTensor& t : param) t = out[o++];
    }
    return Status::Ok();
  }
};

// The assembled pieces against the whole step, bit for bit, parameter by
// parameter ("" when equal).
std::string ComparePieces(const std::vector<std::vector<HostTensor>>& pieces,
                          const std::vector<std::vector<HostTensor>>& whole) {
  for (size_t q = 0; q < whole.size(); ++q) {
    const std::string d = CompareBits(pieces[q], whole[q]);
    if (!d.empty()) return Format("parameter %zu stepped in pieces: %s", q, d.c_str());
  }
  return "";
}

// ABI 1.11: for a backend offering MNT_CAPABILITY_OPTIMIZER_PIECES, each
// optimizer op stepping pieces of parameters -- contiguous element ranges
// of their flat buffers, as ZeRO-1's element-range shards -- with each
// piece's tensor index and first element index (rounding_element;
// rounding_tensors/rounding_elements) writes bit for bit what stepping the
// whole parameters writes: master, state and the stochastically rounded
// bf16 working copy. SGD_STEP and ADAMW_STEP step one 2-D parameter as
// three 1-D pieces cut at random points; MULTI_ADAMW_STEP and
// MULTI_SGD_STEP step two parameters (tensor indices 3 and 7) as the
// tables of three "ranks": {P0[0, a)}, {P0[a, n0), P1[0, b)}, {P1[b, n1)}.
// A backend that ignored the fields would draw element 0's (and tensor
// index rounding_tensor + i's) bits for every piece.
void CheckOptimizerPieces(const MNT_Plugin_Api* plugin, const Device& cand,
                          std::mt19937_64* rng, Report* r) {
  const std::string n = "backend/optimizer_pieces ";
  const MNT_Op ops[] = {MNT_OP_SGD_STEP, MNT_OP_ADAMW_STEP, MNT_OP_MULTI_ADAMW_STEP,
                        MNT_OP_MULTI_SGD_STEP};
  if (!sdk::HasCapability(plugin, MNT_CAPABILITY_OPTIMIZER_PIECES)) {
    for (MNT_Op op : ops) {
      r->Skip(n + sdk::OpName(op),
              "needs capability OPTIMIZER_PIECES, which the backend does not offer");
    }
    return;
  }
  const uint64_t seed = (*rng)();
  // Sizes past a few thousand elements (several CUDA blocks, the CPU's
  // vector loops and tails); cuts anywhere, so rarely 4-aligned.
  const int64_t rows = 20 + static_cast<int64_t>((*rng)() % 40);
  const int64_t cols = 97 + static_cast<int64_t>((*rng)() % 64);
  const int64_t n0 = rows * cols, n1 = 1000 + static_cast<int64_t>((*rng)() % 5000);
  const auto cut = [&](int64_t size) { return 1 + static_cast<int64_t>((*rng)() % (size - 1)); };
  int64_t c1 = cut(n0), c2 = cut(n0);
  while (c2 == c1) c2 = cut(n0);
  if (c2 < c1) std::swap(c1, c2);
  const std::vector<PieceEntry> thirds[3] = {{{0, 0, c1}}, {{0, c1, c2}}, {{0, c2, n0}}};
  const int64_t a = cut(n0), b = cut(n1);
  const std::vector<std::vector<PieceEntry>> ranks = {
      {{0, 0, a}}, {{0, a, n0}, {1, 0, b}}, {{1, b, n1}}};
  const int64_t tensor_of[2] = {3, 7};  // not consecutive: rounding_tensors matter

  for (MNT_Op op : ops) {
    const std::string name = n + sdk::OpName(op);
    if (!cand.Supports(op)) {
      r->Skip(name, "not supported by this backend");
      continue;
    }
    const bool multi = op == MNT_OP_MULTI_ADAMW_STEP || op == MNT_OP_MULTI_SGD_STEP;
    const bool adamw = op == MNT_OP_ADAMW_STEP || op == MNT_OP_MULTI_ADAMW_STEP;
    PieceOp p{op, {}, {}, {}};
    const std::vector<int64_t> dims[2] = {{rows, cols}, {n1}};
    for (size_t q = 0; q < (multi ? 2u : 1u); ++q) {
      std::vector<HostTensor> in{Random(rng, q == 0 ? MNT_DTYPE_BF16 : MNT_DTYPE_F32, dims[q])};
      if (op == MNT_OP_MULTI_ADAMW_STEP) in.push_back(HostTensor{MNT_DTYPE_I32, {1}, {4.0f}});
      p.inputs.push_back(std::move(in));
      p.outputs.push_back(adamw ? AdamWState(rng, dims[q])
                                : std::vector<HostTensor>{Random(rng, MNT_DTYPE_F32, dims[q]),
                                                          Random(rng, MNT_DTYPE_F32, dims[q]),
                                                          Zeros(MNT_DTYPE_BF16, dims[q])});
    }
    if (multi) {
      p.scalars = {HostTensor{MNT_DTYPE_F32, {1}, {0.0f}}, HostTensor{MNT_DTYPE_F32, {1}, {0.5f}}};
    }
    std::vector<std::vector<HostTensor>> whole, pieces = p.outputs;
    Status s;
    if (!multi) {
      MNT_SgdParams sgd{MNT_SgdParams_STRUCT_SIZE, 0.05f, 0.9f, 1e-3f, 1,
                        MNT_ROUNDING_STOCHASTIC, seed, 5, 13, 0};
      MNT_AdamWParams adam{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f,
                           3, MNT_ROUNDING_STOCHASTIC, seed, 6, 0};
      const void* params = adamw ? static_cast<const void*>(&adam) : &sgd;
      s = p.RunWhole(cand, params, &whole);
      for (const std::vector<PieceEntry>& piece : thirds) {
        if (!s.ok()) break;
        sgd.rounding_element = adam.rounding_element = piece[0].begin;
        s = p.RunPieces(cand, piece, params, &pieces);
      }
    } else {
      // Per table entry: its parameter's lr scale, weight decay, tensor
      // index and (pieces) first element index.
      const float scale_of[2] = {1.0f, 0.5f}, decay_of[2] = {0.01f, 0.0f};
      const auto run = [&](const std::vector<PieceEntry>& entries, bool whole_call) {
        std::vector<float> lr_scales, weight_decays;
        std::vector<int64_t> tensors, elements;
        for (const PieceEntry& e : entries) {
          lr_scales.push_back(scale_of[e.param]);
          weight_decays.push_back(decay_of[e.param]);
          tensors.push_back(tensor_of[e.param]);
          elements.push_back(e.begin);
        }
        const int64_t count = static_cast<int64_t>(entries.size());
        // The whole call gives no rounding_elements (NULL: from 0).
        const int64_t* el = whole_call ? nullptr : elements.data();
        const MNT_MultiAdamWParams ma{MNT_MultiAdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f,
                                      1e-8f, 0.0f, 1, count, lr_scales.data(),
                                      weight_decays.data(), MNT_ROUNDING_STOCHASTIC, seed,
                                      0, tensors.data(), el};
        const MNT_MultiSgdParams ms{MNT_MultiSgdParams_STRUCT_SIZE, 0.05f, 0.9f, 1e-3f, 1,
                                    count, lr_scales.data(), weight_decays.data(),
                                    MNT_ROUNDING_STOCHASTIC, seed, 0, 21, tensors.data(),
                                    el};
        const void* params = adamw ? static_cast<const void*>(&ma) : &ms;
        return whole_call ? p.RunWhole(cand, params, &whole)
                          : p.RunPieces(cand, entries, params, &pieces);
      };
      s = run({{0, 0, n0}, {1, 0, n1}}, true);
      for (const std::vector<PieceEntry>& rank : ranks) {
        if (s.ok()) s = run(rank, false);
      }
    }
    r->Check(name, s.ok() ? ComparePieces(pieces, whole) : s.message());
  }
}


// ---- ABI 1.12: ADAMW8BIT_STEP and ADAFACTOR_STEP --------------------------

// The values a tensor holds once stored in its dtype.
HostTensor Stored(HostTensor t) {
  Decode(Encode(t), &t);
  return t;
}

HostTensor Codes(std::mt19937_64* rng, int64_t n) {
  HostTensor t{MNT_DTYPE_U8, {n}, {}};
  for (int64_t i = 0; i < n; ++i) t.values.push_back(static_cast<float>((*rng)() & 0xff));
  return t;
}

std::vector<uint8_t> CodeBytes(const HostTensor& t) {
  return std::vector<uint8_t>(t.values.begin(), t.values.end());
}

conformance::AdamW8bitState State8bit(const std::vector<HostTensor>& out) {
  return {out[0].values, CodeBytes(out[1]), CodeBytes(out[3]), out[2].values, out[4].values};
}

// Elements [begin, end) of an ADAMW8BIT_STEP state and its blocks.
std::vector<HostTensor> Slice8bit(const std::vector<HostTensor>& out, int64_t begin,
                                  int64_t end) {
  const int64_t b0 = begin / kQuantizationBlock, b1 = QuantizationBlocks(end);
  return {Slice(out[0], begin, end), Slice(out[1], begin, end), Slice(out[2], b0, b1),
          Slice(out[3], begin, end), Slice(out[4], b0, b1), Slice(out[5], begin, end)};
}

// ADAMW8BIT_STEP (optional): one step of a tensor of several blocks (the
// last partial) from random codes and absmax, against the float64
// reference: an f32 gradient; a bf16 one with the step counter and the
// device learning rate; found_inf (every output unchanged); and the
// tensor stepped as two pieces cut at a block boundary (rounding_element,
// stochastic rounding) gives the whole step's bits.
void CheckAdamW8bit(const Device& cand, std::mt19937_64* rng, Report* r) {
  const std::string n = "backend/op ADAMW8BIT_STEP ";
  const char* names[] = {"f32 grad", "bf16 grad, step counter, device lr (1.12)",
                         "found_inf skips", "pieces on block boundaries, stochastic rounding"};
  if (!cand.Supports(MNT_OP_ADAMW8BIT_STEP)) {
    for (const char* c : names) r->Skip(n + c, "not supported by this backend");
    return;
  }
  const int64_t size = 3 * kQuantizationBlock + 1 + static_cast<int64_t>((*rng)() % 300);
  const int64_t blocks = QuantizationBlocks(size);
  auto state = [&] {
    return std::vector<HostTensor>{Random(rng, MNT_DTYPE_F32, {size}), Codes(rng, size),
                                   Random(rng, MNT_DTYPE_F32, {blocks}, 0.01, 0.1),
                                   Codes(rng, size),
                                   Random(rng, MNT_DTYPE_F32, {blocks}, 1e-4, 1e-2),
                                   Zeros(MNT_DTYPE_BF16, {size})};
  };
  MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 2e-3f, 0.9f, 0.999f, 1e-8f, 0.05f, 6};
  for (int c = 0; c < 3; ++c) {
    const MNT_DType dtype = c == 0 ? MNT_DTYPE_F32 : c == 1 ? MNT_DTYPE_BF16 : MNT_DTYPE_F16;
    const HostTensor grad = Stored(Random(rng, dtype, {size}));
    std::vector<HostTensor> in = {grad, HostTensor{MNT_DTYPE_F32, {1}, {c == 2 ? 1.0f : 0.0f}},
                                  HostTensor{MNT_DTYPE_F32, {1}, {0.5f}}};
    float lr = p.lr;
    int64_t step = p.step;
    if (c >= 1) {
      in.push_back(HostTensor{MNT_DTYPE_I32, {1}, {10.0f}});  // step 11
      in.push_back(HostTensor{MNT_DTYPE_F32, {1}, {1e-3f}});
      lr = 1e-3f;
      step = 11;
    }
    const std::vector<HostTensor> before = state();
    std::vector<HostTensor> got = before;
    Status s = cand.Run(MNT_OP_ADAMW8BIT_STEP, in, &got, &p);
    std::string why = s.ok() ? "" : s.message();
    if (why.empty() && c == 2) {
      why = CompareBits(got, before);
    } else if (why.empty()) {
      const conformance::AdamW8bitState in_state = State8bit(before);
      why = conformance::CompareAdamW8bit(
          in_state, State8bit(got),
          conformance::AdamW8bitReference(grad.values, 0.5f, in_state, p, lr, step));
      for (size_t i = 0; why.empty() && i < got[5].values.size(); ++i) {
        if (got[5].values[i] != Bf16BitsToFloat(FloatToBf16Bits(got[0].values[i]))) {
          why = Format("out[5][%zu] = %.9g is not the master %.9g rounded to bf16", i,
                       got[5].values[i], got[0].values[i]);
        }
      }
    }
    r->Check(n + names[c], why);
  }
  // Pieces [0, cut) and [cut, size), cut on a block boundary.
  const int64_t cut = 2 * kQuantizationBlock;
  const HostTensor grad = Random(rng, MNT_DTYPE_F32, {size});
  MNT_AdamWParams sr = p;
  sr.rounding = MNT_ROUNDING_STOCHASTIC;
  sr.rounding_seed = (*rng)();
  sr.rounding_tensor = 4;
  std::vector<HostTensor> whole = state(), pieces = whole;
  Status s = cand.Run(MNT_OP_ADAMW8BIT_STEP, {grad}, &whole, &sr);
  for (const auto& [begin, end] : {std::pair<int64_t, int64_t>{0, cut}, {cut, size}}) {
    if (!s.ok()) break;
    std::vector<HostTensor> part = Slice8bit(pieces, begin, end);
    sr.rounding_element = begin;
    s = cand.Run(MNT_OP_ADAMW8BIT_STEP, {Slice(grad, begin, end)}, &part, &sr);
    const int64_t b0 = begin / kQuantizationBlock;
    for (size_t o = 0; s.ok() && o < part.size(); ++o) {
      const int64_t at = (o == 2 || o == 4) ? b0 : begin;
      std::copy(part[o].values.begin(), part[o].values.end(), pieces[o].values.begin() + at);
    }
  }
  r->Check(n + names[3], s.ok() ? CompareBits(pieces, whole) : s.message());
}

// MULTI_ADAMW8BIT_STEP (optional, 1.14): a table of three tensors (one
// partial block, several blocks, a few thousand elements; f32, bf16 and f16
// gradients) from random 8-bit states writes bit for bit what the
// reference backend's ADAMW8BIT_STEP writes per tensor (the op fixes every
// bit): with host lr scales, weight decays and working copies in bf16, f16
// and none; with step counters, the device lr and stochastically rounded
// pieces (rounding_tensors, rounding_elements on block boundaries); and
// found_inf leaves every output as it was.
void CheckMultiAdamW8bit(const Device& cand, const Device& ref, std::mt19937_64* rng,
                         Report* r) {
  const std::string n = "backend/op MULTI_ADAMW8BIT_STEP ";
  const char* names[] = {"3 tensors, host lr scales and weight decays: ADAMW8BIT_STEP's bits",
                         "3 tensors, step counters, device lr, stochastic pieces: "
                         "ADAMW8BIT_STEP's bits",
                         "found_inf skips"};
  if (!cand.Supports(MNT_OP_MULTI_ADAMW8BIT_STEP)) {
    for (const char* c : names) r->Skip(n + c, "not supported by this backend");
    return;
  }
  const int64_t sizes[] = {1 + static_cast<int64_t>((*rng)() % 255),
                           3 * kQuantizationBlock + 1 + static_cast<int64_t>((*rng)() % 255),
                           3000 + static_cast<int64_t>((*rng)() % 2000)};
  const MNT_DType grads[] = {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16};
  const float lr_scales[] = {1.0f, 0.5f, 3.0f}, weight_decays[] = {0.1f, 0.0f, 0.01f};
  const int64_t rounding_tensors[] = {3, 7, 1}, rounding_elements[] = {0, 512, 256};
  const float lr = 2e-3f;
  for (int c = 0; c < 3; ++c) {
    const bool extras = c >= 1;  // counters, device lr, stochastic rounding
    std::vector<HostTensor> in = {HostTensor{MNT_DTYPE_F32, {1}, {c == 2 ? 1.0f : 0.0f}},
                                  HostTensor{MNT_DTYPE_F32, {1}, {0.625f}}};
    std::vector<HostTensor> before;
    for (int i = 0; i < 3; ++i) {
      const int64_t size = sizes[i], blocks = QuantizationBlocks(size);
      in.push_back(Stored(Random(rng, grads[i], {size})));
      in.push_back(extras ? HostTensor{MNT_DTYPE_I32, {1}, {static_cast<float>(4 + i)}}
                          : HostTensor{MNT_DTYPE_I32, {1}, {}, true});
      const MNT_DType working = extras || i == 0 ? MNT_DTYPE_BF16 : MNT_DTYPE_F16;
      for (HostTensor t : {Random(rng, MNT_DTYPE_F32, {size}), Codes(rng, size),
                           Random(rng, MNT_DTYPE_F32, {blocks}, 0.01, 0.1), Codes(rng, size),
                           Random(rng, MNT_DTYPE_F32, {blocks}, 1e-4, 1e-2),
                           Zeros(working, {size})}) {
        before.push_back(std::move(t));
      }
      if (!extras && i == 1) before.back().absent = true;  // no working copy
    }
    if (extras) in.push_back(HostTensor{MNT_DTYPE_F32, {1}, {lr}});
    const uint64_t seed = (*rng)();
    const MNT_MultiAdamWParams mp{MNT_MultiAdamWParams_STRUCT_SIZE, extras ? 99.0f : lr, 0.9f,
                                  0.95f, 1e-8f, 0.5f, 6, 3, lr_scales, weight_decays,
                                  extras ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN,
                                  seed, 0, extras ? rounding_tensors : nullptr,
                                  extras ? rounding_elements : nullptr};
    std::vector<HostTensor> got = before;
    Status s = cand.Run(MNT_OP_MULTI_ADAMW8BIT_STEP, in, &got, &mp);
    std::vector<HostTensor> want = before;
    for (int i = 0; s.ok() && c != 2 && i < 3; ++i) {
      const float lr_i = lr * lr_scales[i];  // the op's fp32 product
      const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, extras ? 99.0f : lr_i, 0.9f, 0.95f,
                              1e-8f, weight_decays[i], 6, mp.rounding, seed,
                              extras ? rounding_tensors[i] : i,
                              extras ? rounding_elements[i] : 0};
      std::vector<HostTensor> one_in = {in[2 + 2 * i], in[0], in[1]};
      if (extras) {
        one_in.push_back(in[3 + 2 * i]);
        one_in.push_back(HostTensor{MNT_DTYPE_F32, {1}, {lr_i}});
      }
      std::vector<HostTensor> one(want.begin() + 6 * i, want.begin() + 6 * i + 6);
      s = ref.Run(MNT_OP_ADAMW8BIT_STEP, one_in, &one, &p);
      if (!s.ok()) s = Status(s.code(), "reference backend: " + s.message());
      std::copy(one.begin(), one.end(), want.begin() + 6 * i);
    }
    r->Check(n + names[c], s.ok() ? CompareBits(got, want) : s.message());
  }
}

conformance::AdafactorState StateAdafactor(const std::vector<HostTensor>& out, bool factored,
                                           bool first_moment) {
  conformance::AdafactorState st;
  st.master = out[0].values;
  st.second = out[1].values;
  if (factored) st.col = out[2].values;
  if (first_moment) st.m = out[3].values;
  return st;
}

// ADAFACTOR_STEP (optional): one step against the float64 reference for a
// factored matrix, an unfactored vector and a rank-3 tensor (batches of
// matrices), with and without the first moment, relative steps and
// parameter scaling, weight decay, the step counter and device lr; and
// found_inf (nothing changes).
void CheckAdafactor(const Device& cand, std::mt19937_64* rng, Report* r) {
  const std::string n = "backend/op ADAFACTOR_STEP ";
  struct Variant {
    const char* name;
    std::vector<int64_t> dims;
    MNT_DType grad;
    float beta1;
    bool relative, scale, counter, found;
    float weight_decay;
  };
  const int64_t rows = 5 + static_cast<int64_t>((*rng)() % 40);
  const int64_t cols = 3 + static_cast<int64_t>((*rng)() % 90);
  const Variant variants[] = {
      {"factored f32 grad (HF Trainer's defaults)", {rows, cols}, MNT_DTYPE_F32, 0, false, false,
       false, false, 0},
      {"unfactored bf16 grad, beta1, relative step, parameter scaling", {rows * cols},
       MNT_DTYPE_BF16, 0.9f, true, true, false, false, 0},
      {"rank 3 f16 grad, weight decay, step counter, device lr", {3, rows, cols}, MNT_DTYPE_F16,
       0.9f, false, true, true, false, 0.01f},
      {"found_inf skips", {rows, cols}, MNT_DTYPE_F32, 0.9f, false, false, true, true, 0}};
  for (const Variant& v : variants) {
    if (!cand.Supports(MNT_OP_ADAFACTOR_STEP)) {
      r->Skip(n + v.name, "not supported by this backend");
      continue;
    }
    const FactoredShape shape = FactoredShapeOf(v.dims.data(), static_cast<int>(v.dims.size()));
    MNT_AdafactorParams p{};
    p.struct_size = MNT_AdafactorParams_STRUCT_SIZE;
    p.lr = 1e-2f;
    p.beta1 = v.beta1;
    p.decay_rate = -0.8f;
    p.epsilon1 = 1e-30f;
    p.epsilon2 = 1e-3f;
    p.clip_threshold = 1.0f;
    p.weight_decay = v.weight_decay;
    p.relative_step = v.relative;
    p.scale_parameter = v.scale;
    p.step = 7;
    const HostTensor grad = Stored(Random(rng, v.grad, v.dims, -0.1, 0.1));
    std::vector<HostTensor> in = {grad, HostTensor{MNT_DTYPE_F32, {1}, {v.found ? 1.0f : 0.0f}},
                                  HostTensor{MNT_DTYPE_F32, {1}, {0.5f}}};
    float lr = p.lr;
    int64_t step = p.step;
    if (v.counter) {
      in.push_back(HostTensor{MNT_DTYPE_I32, {1}, {20.0f}});
      in.push_back(HostTensor{MNT_DTYPE_F32, {1}, {3e-3f}});
      lr = 3e-3f;
      step = 21;
    }
    const int64_t second = shape.factored ? shape.row_count() : shape.numel();
    std::vector<HostTensor> before = {Random(rng, MNT_DTYPE_F32, v.dims),
                                      Random(rng, MNT_DTYPE_F32, {second}, 1e-3, 2e-3)};
    HostTensor col = Random(rng, MNT_DTYPE_F32, {shape.col_states()}, 1e-3, 2e-3);
    col.absent = !shape.factored;
    before.push_back(col);
    const bool first_moment = v.beta1 != 0.0f;
    if (first_moment) before.push_back(Random(rng, MNT_DTYPE_F32, v.dims, -1e-3, 1e-3));
    std::vector<HostTensor> got = before;
    const Status s = cand.Run(MNT_OP_ADAFACTOR_STEP, in, &got, &p);
    std::string why = s.ok() ? "" : s.message();
    if (why.empty() && v.found) {
      why = CompareBits(got, before);
    } else if (why.empty()) {
      const conformance::AdafactorState in_state =
          StateAdafactor(before, shape.factored, first_moment);
      why = conformance::CompareAdafactor(
          in_state, StateAdafactor(got, shape.factored, first_moment),
          conformance::AdafactorReference(grad.values, 0.5f, shape, in_state, p, lr, step));
    }
    r->Check(n + v.name, why);
  }
}

}  // namespace

// MULTI_ADAFACTOR_STEP (optional, 1.14): a table of a matrix (f32
// gradient), a vector (bf16) and a rank-3 tensor (f16) from random states
// writes bit for bit what the reference backend's ADAFACTOR_STEP writes per
// tensor (every sum's order is fixed): with host lr scales, weight decays,
// parameter scaling and working copies in bf16, none and f16; with the
// first moment, step counters, the device lr and stochastic rounding
// (rounding_tensors); and found_inf leaves every output as it was.
void CheckMultiAdafactor(const Device& cand, const Device& ref, std::mt19937_64* rng,
                         Report* r) {
  const std::string n = "backend/op MULTI_ADAFACTOR_STEP ";
  const char* names[] = {"3 tensors, host lr scales, weight decays, parameter scaling: "
                         "ADAFACTOR_STEP's bits",
                         "3 tensors, first moment, step counters, device lr, stochastic "
                         "rounding: ADAFACTOR_STEP's bits",
                         "found_inf skips"};
  if (!cand.Supports(MNT_OP_MULTI_ADAFACTOR_STEP)) {
    for (const char* c : names) r->Skip(n + c, "not supported by this backend");
    return;
  }
  const auto draw = [&](int64_t lo, int64_t span) {
    return lo + static_cast<int64_t>((*rng)() % static_cast<uint64_t>(span));
  };
  const std::vector<int64_t> dims[] = {
      {draw(2, 40), draw(2, 200)}, {draw(1, 2000)}, {draw(2, 3), draw(2, 30), draw(2, 30)}};
  const MNT_DType grads[] = {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16};
  const float lr_scales[] = {1.0f, 0.5f, 3.0f}, weight_decays[] = {0.1f, 0.0f, 0.01f};
  const int64_t rounding_tensors[] = {4, 0, 9};
  const float lr = 1e-2f;
  for (int c = 0; c < 3; ++c) {
    const bool extras = c >= 1;  // first moment, counters, device lr, stochastic
    MNT_MultiAdafactorParams mp{};
    mp.struct_size = MNT_MultiAdafactorParams_STRUCT_SIZE;
    mp.lr = extras ? 99.0f : lr;
    mp.beta1 = extras ? 0.9f : 0.0f;
    mp.decay_rate = -0.8f;
    mp.epsilon1 = 1e-30f;
    mp.epsilon2 = 1e-3f;
    mp.clip_threshold = 1.0f;
    mp.weight_decay = 0.5f;
    mp.scale_parameter = extras ? 0 : 1;
    mp.step = 5;
    mp.rounding = extras ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN;
    mp.rounding_seed = (*rng)();
    mp.num_tensors = 3;
    mp.lr_scales = lr_scales;
    mp.weight_decays = weight_decays;
    mp.rounding_tensors = extras ? rounding_tensors : nullptr;
    std::vector<HostTensor> in = {HostTensor{MNT_DTYPE_F32, {1}, {c == 2 ? 1.0f : 0.0f}},
                                  HostTensor{MNT_DTYPE_F32, {1}, {0.75f}}};
    std::vector<HostTensor> before;
    for (int i = 0; i < 3; ++i) {
      const FactoredShape s = FactoredShapeOf(dims[i].data(), static_cast<int>(dims[i].size()));
      const int64_t size = s.numel();
      in.push_back(Stored(Random(rng, grads[i], dims[i])));
      in.push_back(extras ? HostTensor{MNT_DTYPE_I32, {1}, {static_cast<float>(4 + i)}}
                          : HostTensor{MNT_DTYPE_I32, {1}, {}, true});
      const HostTensor absent{MNT_DTYPE_F32, {1}, {}, true};
      before.push_back(Random(rng, MNT_DTYPE_F32, {size}));
      before.push_back(Random(rng, MNT_DTYPE_F32, {s.factored ? s.row_count() : size}, 1e-4, 1e-2));
      before.push_back(s.factored ? Random(rng, MNT_DTYPE_F32, {s.col_states()}, 1e-4, 1e-2)
                                  : absent);
      before.push_back(extras ? Random(rng, MNT_DTYPE_F32, {size}, -0.1, 0.1) : absent);
      before.push_back(!extras && i == 1 ? HostTensor{MNT_DTYPE_BF16, {1}, {}, true}
                                         : Zeros(extras || i == 0 ? MNT_DTYPE_BF16
                                                                  : MNT_DTYPE_F16,
                                                 {size}));
    }
    if (extras) in.push_back(HostTensor{MNT_DTYPE_F32, {1}, {lr}});
    std::vector<HostTensor> got = before;
    Status s = cand.Run(MNT_OP_MULTI_ADAFACTOR_STEP, in, &got, &mp);
    std::vector<HostTensor> want = before;
    for (int i = 0; s.ok() && c != 2 && i < 3; ++i) {
      const float lr_i = lr * lr_scales[i];  // the op's fp32 product
      const MNT_AdafactorParams p{MNT_AdafactorParams_STRUCT_SIZE, extras ? 99.0f : lr_i,
                                  mp.beta1, mp.decay_rate, mp.epsilon1, mp.epsilon2,
                                  mp.clip_threshold, weight_decays[i], mp.relative_step,
                                  mp.scale_parameter, mp.warmup_init, mp.step, mp.rounding,
                                  mp.rounding_seed, extras ? rounding_tensors[i] : i};
      std::vector<HostTensor> one_in = {in[2 + 2 * i], in[0], in[1]};
      if (extras) {
        one_in.push_back(in[3 + 2 * i]);
        one_in.push_back(HostTensor{MNT_DTYPE_F32, {1}, {lr_i}});
      }
      std::vector<HostTensor> one(want.begin() + 5 * i, want.begin() + 5 * i + 5);
      while (one.back().absent) one.pop_back();
      s = ref.Run(MNT_OP_ADAFACTOR_STEP, one_in, &one, &p);
      if (!s.ok()) s = Status(s.code(), "reference backend: " + s.message());
      std::copy(one.begin(), one.end(), want.begin() + 5 * i);
    }
    r->Check(n + names[c], s.ok() ? CompareBits(got, want) : s.message());
  }
}

void CheckBackendPlugin(const MNT_Plugin_Api* plugin, const std::string& options,
                        uint64_t seed, Report* r) {
  const std::string n = "backend/";
  Device cand(plugin), ref(cpu::CpuBackendPluginApi());
  Status s = cand.Create(options);
  if (!s.ok()) {
    r->Fail(n + "create", s.message());
    return;
  }
  s = ref.Create();
  if (!s.ok()) {
    r->Fail(n + "create_reference", s.message());
    return;
  }
  r->Pass(n + "create");
  std::mt19937_64 rng(seed);
  r->Check(n + "memory_contract", MemoryContract(plugin, cand, &rng));
  {
    MNT_Backend_Run_Args bad{};
    bad.struct_size = MNT_Backend_Run_Args_STRUCT_SIZE;
    bad.backend = cand.backend();
    bad.op = static_cast<MNT_Op>(100000);
    s = sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Run(&bad));
    r->Check(n + "unknown_op_is_unimplemented",
             s.code() == MNT_ERROR_UNIMPLEMENTED ? ""
                                                 : "op 100000 gave: " + (s.ok() ? std::string("OK") : s.message()));
  }

  // Params outlive the cases that point at them.
  const int64_t M = 3 + rng() % 9, K = 3 + rng() % 40, N = 2 + rng() % 11;
  std::vector<Case> cases;
  MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 0.3125};
  cases.push_back({"FILL", MNT_OP_FILL, {}, {Zeros(MNT_DTYPE_F32, {M, N})}, &fill, 0});
  for (MNT_DType t : {MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
    cases.push_back({std::string("CAST f32->") + sdk::DTypeName(t), MNT_OP_CAST,
                     {Random(&rng, MNT_DTYPE_F32, {M, N})}, {Zeros(t, {M, N})},
                     nullptr, 0});
  }
  static MNT_GemmParams gemm[4][2];
  const MNT_ComputeMode modes[4] = {MNT_COMPUTE_F32, MNT_COMPUTE_TF32,
                                    MNT_COMPUTE_BF16, MNT_COMPUTE_F16};
  const double gemm_tol[4] = {1e-5, 1e-3, 1e-2, 1e-2};
  for (int m = 0; m < 4; ++m) {
    for (int tr = 0; tr < 2; ++tr) {
      gemm[m][tr] = {MNT_GemmParams_STRUCT_SIZE, tr, 1 - tr, 0.75f, 0.5f, modes[m]};
      std::vector<int64_t> a = tr ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
      std::vector<int64_t> b = tr ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K};
      cases.push_back({Format("GEMM compute=%d trans_a=%d trans_b=%d +bias", modes[m], tr, 1 - tr),
                       MNT_OP_GEMM,
                       {Random(&rng, MNT_DTYPE_F32, a), Random(&rng, MNT_DTYPE_F32, b),
                        Random(&rng, MNT_DTYPE_F32, {N})},
                       {Random(&rng, MNT_DTYPE_F32, {M, N})}, &gemm[m][tr], gemm_tol[m]});
    }
  }
  // ABI 1.6 fused epilogues, each mode with both transposes.
  static MNT_GemmParams gelu_fwd[4][2];
  static MNT_GemmEpilogueParams epilogue[4][2];
  for (int m = 0; m < 4; ++m) {
    for (int tr = 0; tr < 2; ++tr) {
      gelu_fwd[m][tr] = {MNT_GemmParams_STRUCT_SIZE, tr, 1 - tr, 0.75f, 0.0f, modes[m]};
      epilogue[m][tr] = {MNT_GemmEpilogueParams_STRUCT_SIZE, tr, 1 - tr, 0.75f, 0.0f,
                         modes[m], 1};
      std::vector<int64_t> a = tr ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
      std::vector<int64_t> b = tr ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K};
      cases.push_back({Format("GEMM_BIAS_GELU compute=%d trans_a=%d", modes[m], tr),
                       MNT_OP_GEMM_BIAS_GELU,
                       {Random(&rng, MNT_DTYPE_F32, a), Random(&rng, MNT_DTYPE_F32, b),
                        Random(&rng, MNT_DTYPE_F32, {N})},
                       {Zeros(MNT_DTYPE_F32, {M, N}), Zeros(MNT_DTYPE_F32, {M, N})},
                       &gelu_fwd[m][tr], gemm_tol[m]});
      cases.push_back({Format("GEMM_DGELU +dbias accumulate compute=%d trans_a=%d", modes[m], tr),
                       MNT_OP_GEMM_DGELU,
                       {Random(&rng, MNT_DTYPE_F32, a), Random(&rng, MNT_DTYPE_F32, b),
                        Random(&rng, MNT_DTYPE_F32, {M, N}, -3, 3)},
                       {Zeros(MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {N})},
                       &epilogue[m][tr], gemm_tol[m]});
    }
  }
  static MNT_GemmEpilogueParams wgrad[2];
  for (int acc_bias = 0; acc_bias < 2; ++acc_bias) {
    // dW [N, K] = dYᵀ [N, M] · X [M, K], db [N] = rows of dY summed.
    wgrad[acc_bias] = {MNT_GemmEpilogueParams_STRUCT_SIZE, 1, 0, 1.0f,
                       acc_bias ? 1.0f : 0.0f, MNT_COMPUTE_F32, acc_bias};
    cases.push_back({Format("GEMM_BIAS_GRAD accumulate=%d", acc_bias), MNT_OP_GEMM_BIAS_GRAD,
                     {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, K})},
                     {Random(&rng, MNT_DTYPE_F32, {N, K}), Random(&rng, MNT_DTYPE_F32, {N})},
                     &wgrad[acc_bias], 1e-5});
  }
  static MNT_AccumulateParams acc{MNT_AccumulateParams_STRUCT_SIZE, 1};
  cases.push_back({"BIAS_GRAD accumulate", MNT_OP_BIAS_GRAD, {Random(&rng, MNT_DTYPE_F32, {M, N})},
                   {Random(&rng, MNT_DTYPE_F32, {N})}, &acc, 1e-5});
  // ABI 1.9 FP8 (optional ops). The casts are specified to the bit (the
  // fp32 product, one saturating round to nearest even; the exact decode
  // times the inverse scale, rounded to y's dtype): tolerance 0, amax
  // included. Inputs reach past E4M3's 448 so some elements saturate.
  {
    const HostTensor scale{MNT_DTYPE_F32, {1}, {0.75f}};
    const HostTensor scale_inv{MNT_DTYPE_F32, {1}, {0.125f}};
    const struct {
      MNT_DType x, y;
      double lo, hi;
    } casts[] = {{MNT_DTYPE_F32, MNT_DTYPE_F8_E4M3, -700, 700},
                 {MNT_DTYPE_BF16, MNT_DTYPE_F8_E5M2, -3000, 3000},
                 {MNT_DTYPE_F8_E4M3, MNT_DTYPE_BF16, -448, 448},
                 {MNT_DTYPE_F8_E5M2, MNT_DTYPE_F32, -3000, 3000},
                 {MNT_DTYPE_F8_E4M3, MNT_DTYPE_F16, -448, 448}};
    for (const auto& c : casts) {
      const bool quantize = sdk::IsFp8(c.y);
      cases.push_back({Format("SCALED_CAST %s->%s +amax", sdk::DTypeName(c.x),
                              sdk::DTypeName(c.y)),
                       MNT_OP_SCALED_CAST,
                       {Random(&rng, c.x, {M, N}, c.lo, c.hi), quantize ? scale : scale_inv},
                       {Zeros(c.y, {M, N}), Zeros(MNT_DTYPE_F32, {1})}, nullptr, 0});
    }
  }
  // SCALED_GEMM: exact FP8 products, fp32 sums in the backend's order
  // (fast_accumulation off): 1e-4 of the largest |D| for an F32 D (the
  // fp32 GEMM's 1e-5 leaves no room for a K-split or tensor-core order at
  // K ~ 40), 1e-2 for BF16/F16; amax compared the same way.
  static MNT_ScaledGemmParams scaled_gemm[3];
  {
    const struct {
      MNT_DType a, b, d;
      int trans_a, trans_b;
      bool bias;
      double tol;
    } gemms[] = {{MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E4M3, MNT_DTYPE_F32, 0, 1, true, 1e-4},
                 {MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E5M2, MNT_DTYPE_BF16, 1, 0, false, 1e-2},
                 {MNT_DTYPE_F8_E5M2, MNT_DTYPE_F8_E4M3, MNT_DTYPE_F16, 0, 0, true, 1e-2}};
    for (int i = 0; i < 3; ++i) {
      const auto& g = gemms[i];
      scaled_gemm[i] = {MNT_ScaledGemmParams_STRUCT_SIZE, g.trans_a, g.trans_b, 0.75f,
                        i == 1 ? 0.0f : 0.5f, 0};
      const double a_hi = g.a == MNT_DTYPE_F8_E4M3 ? 400 : 20000;
      const double b_hi = g.b == MNT_DTYPE_F8_E4M3 ? 400 : 20000;
      std::vector<int64_t> a = g.trans_a ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
      std::vector<int64_t> b = g.trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
      std::vector<HostTensor> in = {Random(&rng, g.a, a, -a_hi, a_hi),
                                    Random(&rng, g.b, b, -b_hi, b_hi),
                                    HostTensor{MNT_DTYPE_F32, {1}, {static_cast<float>(1 / a_hi)}},
                                    HostTensor{MNT_DTYPE_F32, {1}, {static_cast<float>(1 / b_hi)}}};
      if (g.bias) in.push_back(Random(&rng, MNT_DTYPE_BF16, {N}));
      cases.push_back({Format("SCALED_GEMM %s x %s -> %s trans_a=%d trans_b=%d%s +amax",
                              sdk::DTypeName(g.a), sdk::DTypeName(g.b), sdk::DTypeName(g.d),
                              g.trans_a, g.trans_b, g.bias ? " +bias" : ""),
                       MNT_OP_SCALED_GEMM, in,
                       {Random(&rng, g.d, {M, N}), Zeros(MNT_DTYPE_F32, {1})},
                       &scaled_gemm[i], g.tol});
    }
  }
  // ABI 1.10 FP8_SCALE_UPDATE (optional): delayed scaling's amax history
  // and scales, elementwise fp32 with every bit fixed by the ABI: bit-exact.
  // The amax holds a zero, an infinity and a NaN (they must not enter the
  // history), one history column is all zero (its scale is kept); MAX over
  // part of the history with a margin, and MOST_RECENT.
  static MNT_Fp8ScaleUpdateParams scale_update[2];
  {
    const int64_t rows = 2 + rng() % 7, tensors = 4 + N;
    scale_update[0] = {MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, 448.0f, 1, MNT_AMAX_ALGO_MAX,
                       static_cast<int32_t>(rows - 1)};
    scale_update[1] = {MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, 57344.0f, 0,
                       MNT_AMAX_ALGO_MOST_RECENT, 1};
    for (int i = 0; i < 2; ++i) {
      HostTensor amax = Random(&rng, MNT_DTYPE_F32, {tensors}, 1e-3, 600);
      amax.values[0] = 0.0f;
      amax.values[1] = INFINITY;
      amax.values[2] = NAN;
      HostTensor history = Random(&rng, MNT_DTYPE_F32, {rows, tensors}, 0, 600);
      for (int64_t h = 0; h < rows; ++h) history.values[h * tensors + 3] = 0.0f;
      cases.push_back({Format("FP8_SCALE_UPDATE %s H=%lld history_length=%d margin=%d",
                              i == 0 ? "MAX" : "MOST_RECENT", (long long)rows,
                              scale_update[i].history_length, scale_update[i].margin),
                       MNT_OP_FP8_SCALE_UPDATE, {amax},
                       {history, Random(&rng, MNT_DTYPE_F32, {tensors}, 0.5, 2),
                        Zeros(MNT_DTYPE_F32, {tensors})},
                       &scale_update[i], 0});
      cases.back().exact_bits = true;
    }
  }
  // ABI 1.10 TENSOR_STATS (optional): an operand's smallest and largest
  // finite |x| and its inf/NaN counts, exact (a min, a max, counts):
  // bit-exact in every float dtype, with infinities, NaNs, a subnormal of
  // the dtype and -0 among the elements; and a tensor with nothing finite
  // ({0, 0}).
  {
    const struct {
      MNT_DType dtype;
      float subnormal;
    } stats[] = {{MNT_DTYPE_F32, 3e-42f}, {MNT_DTYPE_F16, 3e-7f}, {MNT_DTYPE_BF16, 5e-40f}};
    for (const auto& t : stats) {
      HostTensor x = Random(&rng, t.dtype, {M, K}, -300, 300);
      x.values[rng() % x.values.size()] = INFINITY;
      x.values[rng() % x.values.size()] = -INFINITY;
      x.values[rng() % x.values.size()] = NAN;
      x.values[rng() % x.values.size()] = t.subnormal;
      x.values[rng() % x.values.size()] = -0.0f;
      cases.push_back({Format("TENSOR_STATS %s with inf, NaN, a subnormal and -0",
                              sdk::DTypeName(t.dtype)),
                       MNT_OP_TENSOR_STATS, {x},
                       {Zeros(MNT_DTYPE_F32, {2}), Zeros(MNT_DTYPE_I32, {2})}, nullptr, 0});
      cases.back().exact_bits = true;
    }
    HostTensor none{MNT_DTYPE_BF16, {N}, std::vector<float>(N, NAN)};
    none.values[0] = -INFINITY;
    cases.push_back({"TENSOR_STATS bf16 with nothing finite", MNT_OP_TENSOR_STATS, {none},
                     {Zeros(MNT_DTYPE_F32, {2}), Zeros(MNT_DTYPE_I32, {2})}, nullptr, 0});
    cases.back().exact_bits = true;
  }
  static MNT_ActivationParams act[2] = {{MNT_ActivationParams_STRUCT_SIZE, MNT_ACTIVATION_RELU},
                                        {MNT_ActivationParams_STRUCT_SIZE, MNT_ACTIVATION_GELU_TANH}};
  for (const auto& a : act) {
    cases.push_back({Format("ACTIVATION_FORWARD %d", a.activation), MNT_OP_ACTIVATION_FORWARD,
                     {Random(&rng, MNT_DTYPE_F32, {M, N})}, {Zeros(MNT_DTYPE_F32, {M, N})}, &a, 1e-5});
    cases.push_back({Format("ACTIVATION_BACKWARD %d", a.activation), MNT_OP_ACTIVATION_BACKWARD,
                     {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, N})},
                     {Zeros(MNT_DTYPE_F32, {M, N})}, &a, 1e-5});
  }
  static MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.5f, -0.25f};
  cases.push_back({"ADD f32+f32->bf16", MNT_OP_ADD,
                   {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, N})},
                   {Zeros(MNT_DTYPE_BF16, {M, N})}, &add, 1e-2});
  cases.push_back({"SOFTMAX", MNT_OP_SOFTMAX, {Random(&rng, MNT_DTYPE_F32, {M, N}, -5, 5)},
                   {Zeros(MNT_DTYPE_F32, {M, N})}, nullptr, 1e-5});
  HostTensor targets{MNT_DTYPE_I32, {M}, {}};
  for (int64_t i = 0; i < M; ++i) targets.values.push_back(static_cast<float>(rng() % N));
  targets.values[0] = -1;  // ignored target
  static MNT_CrossEntropyParams ce;
  ce = {MNT_CrossEntropyParams_STRUCT_SIZE, 0.5f, N};
  cases.push_back({"CROSS_ENTROPY with dlogits", MNT_OP_CROSS_ENTROPY,
                   {Random(&rng, MNT_DTYPE_F32, {M, N}, -4, 4), targets},
                   {Zeros(MNT_DTYPE_F32, {M}), Zeros(MNT_DTYPE_F32, {M, N})}, &ce, 1e-5});
  static MNT_CrossEntropyParams classifier;
  classifier = {MNT_CrossEntropyParams_STRUCT_SIZE, 0.5f, N};
  for (MNT_DType t : {MNT_DTYPE_F32, MNT_DTYPE_BF16}) {
    cases.push_back({Format("FUSED_CLASSIFIER %s, multiplier, mean", sdk::DTypeName(t)),
                     MNT_OP_FUSED_CLASSIFIER,
                     {targets, HostTensor{MNT_DTYPE_F32, {1}, {3.0f}}},
                     {Random(&rng, t, {M, N}, -4, 4), Zeros(MNT_DTYPE_F32, {M}),
                      Zeros(MNT_DTYPE_F32, {1})},
                     &classifier, t == MNT_DTYPE_F32 ? 1e-5 : 1e-2});
  }
  cases.push_back({"COUNT_CORRECT", MNT_OP_COUNT_CORRECT,
                   {Random(&rng, MNT_DTYPE_F32, {M, N}, -4, 4), targets},
                   {Zeros(MNT_DTYPE_F32, {1})}, &ce, 0});
  static MNT_ReduceParams reduce[3] = {{MNT_ReduceParams_STRUCT_SIZE, MNT_REDUCE_SUM},
                                       {MNT_ReduceParams_STRUCT_SIZE, MNT_REDUCE_MEAN},
                                       {MNT_ReduceParams_STRUCT_SIZE, MNT_REDUCE_MAX}};
  for (const auto& p : reduce) {
    cases.push_back({Format("REDUCE %d", p.kind), MNT_OP_REDUCE,
                     {Random(&rng, MNT_DTYPE_F32, {M, K}, 0.5, 2)},
                     {Zeros(MNT_DTYPE_F32, {1})}, &p, 1e-5});
  }
  cases.push_back({"GLOBAL_NORM_SQUARED", MNT_OP_GLOBAL_NORM_SQUARED,
                   {Random(&rng, MNT_DTYPE_F32, {M, K}), Random(&rng, MNT_DTYPE_F32, {N})},
                   {Zeros(MNT_DTYPE_F32, {1})}, nullptr, 1e-5});
  {
    HostTensor inv{MNT_DTYPE_F32, {1}, {0.125f}};
    HostTensor g1 = Random(&rng, MNT_DTYPE_F32, {M, N}), g2 = Random(&rng, MNT_DTYPE_F32, {K});
    cases.push_back({"NONFINITE_CHECK_UNSCALE finite", MNT_OP_NONFINITE_CHECK_UNSCALE,
                     {inv, g1, g2},
                     {Zeros(MNT_DTYPE_F32, {1}), Zeros(MNT_DTYPE_F32, {M, N}), Zeros(MNT_DTYPE_F32, {K})},
                     nullptr, 1e-5});
    g2.values[rng() % K] = INFINITY;
    cases.push_back({"NONFINITE_CHECK_UNSCALE with inf (found_inf)", MNT_OP_NONFINITE_CHECK_UNSCALE,
                     {inv, g1, g2},
                     {Zeros(MNT_DTYPE_F32, {1}), Zeros(MNT_DTYPE_F32, {M, N}), Zeros(MNT_DTYPE_F32, {K})},
                     nullptr, 0, true});
  }
  static MNT_AdamWParams adamw{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, 3};
  cases.push_back({"ADAMW_STEP", MNT_OP_ADAMW_STEP, {Random(&rng, MNT_DTYPE_F32, {M, N})},
                   AdamWState(&rng, {M, N}),
                   &adamw, 1e-5});
  static MNT_SgdParams sgd{MNT_SgdParams_STRUCT_SIZE, 0.05f, 0.9f, 1e-3f, 1};
  cases.push_back({"SGD_STEP nesterov", MNT_OP_SGD_STEP, {Random(&rng, MNT_DTYPE_F32, {M, N})},
                   {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, N})},
                   &sgd, 1e-5});
  // ABI 1.7: the bf16 working copies rounded stochastically; the random
  // bits are specified (common/stochastic_rounding.h), so a backend matches
  // the reference's copy (round-to-nearest misses it by up to a bf16 ulp).
  static MNT_AdamWParams adamw_sr{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f,
                                  3, MNT_ROUNDING_STOCHASTIC, 0x5eedull, 4};
  cases.push_back({"ADAMW_STEP stochastic rounding", MNT_OP_ADAMW_STEP,
                   {Random(&rng, MNT_DTYPE_F32, {M, N})},
                   AdamWState(&rng, {M, N}),
                   &adamw_sr, 1e-5});
  cases.back().needs = MNT_CAPABILITY_STOCHASTIC_ROUNDING;
  static MNT_SgdParams sgd_sr{MNT_SgdParams_STRUCT_SIZE, 0.05f, 0.9f, 1e-3f, 0,
                              MNT_ROUNDING_STOCHASTIC, 0x5eedull, 2, 11};
  cases.push_back({"SGD_STEP stochastic rounding", MNT_OP_SGD_STEP,
                   {Random(&rng, MNT_DTYPE_BF16, {M, N})},
                   {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, N}),
                    Zeros(MNT_DTYPE_BF16, {M, N})},
                   &sgd_sr, 1e-5});
  cases.back().needs = MNT_CAPABILITY_STOCHASTIC_ROUNDING;
  static MNT_LayerNormParams ln{MNT_LayerNormParams_STRUCT_SIZE, 1e-5f, 0};
  cases.push_back({"LAYERNORM_FORWARD", MNT_OP_LAYERNORM_FORWARD,
                   {Random(&rng, MNT_DTYPE_F32, {M, K}), Random(&rng, MNT_DTYPE_F32, {K}),
                    Random(&rng, MNT_DTYPE_F32, {K})},
                   {Zeros(MNT_DTYPE_F32, {M, K}), Zeros(MNT_DTYPE_F32, {M}), Zeros(MNT_DTYPE_F32, {M})},
                   &ln, 1e-5});
  // ABI 1.6: the fused residual layer norm and the multi-tensor steps.
  static MNT_LayerNormParams ln_acc{MNT_LayerNormParams_STRUCT_SIZE, 1e-5f, 1};
  cases.push_back({"RESIDUAL_LAYERNORM_FORWARD bf16", MNT_OP_RESIDUAL_LAYERNORM_FORWARD,
                   {Random(&rng, MNT_DTYPE_BF16, {M, K}), Random(&rng, MNT_DTYPE_BF16, {M, K}),
                    Random(&rng, MNT_DTYPE_BF16, {K}), Random(&rng, MNT_DTYPE_BF16, {K})},
                   {Zeros(MNT_DTYPE_BF16, {M, K}), Zeros(MNT_DTYPE_BF16, {M, K}),
                    Zeros(MNT_DTYPE_F32, {M}), Zeros(MNT_DTYPE_F32, {M})},
                   &ln, 1e-2});
  {
    // mean/rstd of a real forward, so the backward sees consistent statistics.
    HostTensor x = Random(&rng, MNT_DTYPE_F32, {M, K}), w = Random(&rng, MNT_DTYPE_F32, {K});
    std::vector<HostTensor> stats = {Zeros(MNT_DTYPE_F32, {M, K}), Zeros(MNT_DTYPE_F32, {M}),
                                     Zeros(MNT_DTYPE_F32, {M})};
    s = ref.Run(MNT_OP_LAYERNORM_FORWARD, {x, w, Random(&rng, MNT_DTYPE_F32, {K})}, &stats, &ln);
    if (s.ok()) {
      cases.push_back({"RESIDUAL_LAYERNORM_BACKWARD +dsum accumulate",
                       MNT_OP_RESIDUAL_LAYERNORM_BACKWARD,
                       {Random(&rng, MNT_DTYPE_F32, {M, K}), x, w, stats[1], stats[2],
                        Random(&rng, MNT_DTYPE_F32, {M, K})},
                       {Zeros(MNT_DTYPE_F32, {M, K}), Random(&rng, MNT_DTYPE_F32, {K}),
                        Random(&rng, MNT_DTYPE_F32, {K})},
                       &ln_acc, 1e-5});
    }
  }
  static const float lr_scales[2] = {1.0f, 0.5f}, weight_decays[2] = {0.01f, 0.0f};
  static MNT_MultiAdamWParams multi_adamw{MNT_MultiAdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f,
                                          1e-8f, 0.0f, 1, 2, lr_scales, weight_decays};
  {
    HostTensor found{MNT_DTYPE_F32, {1}, {0.0f}}, mult{MNT_DTYPE_F32, {1}, {0.5f}};
    HostTensor counter{MNT_DTYPE_I32, {1}, {2.0f}};
    std::vector<HostTensor> out = AdamWState(&rng, {M, N});
    for (HostTensor& t : AdamWState(&rng, {K})) out.push_back(std::move(t));
    cases.push_back({"MULTI_ADAMW_STEP 2 tensors, step counters", MNT_OP_MULTI_ADAMW_STEP,
                     {found, mult, Random(&rng, MNT_DTYPE_F32, {M, N}), counter,
                      Random(&rng, MNT_DTYPE_BF16, {K}), counter},
                     out, &multi_adamw, 1e-5});
    // ABI 1.7: the same with stochastically rounded working copies (the
    // step counters give the step of the random bits).
    static MNT_MultiAdamWParams multi_adamw_sr = multi_adamw;
    multi_adamw_sr.rounding = MNT_ROUNDING_STOCHASTIC;
    multi_adamw_sr.rounding_seed = 0x5eedull;
    multi_adamw_sr.rounding_tensor = 1;
    cases.push_back({"MULTI_ADAMW_STEP stochastic rounding, step counters",
                     MNT_OP_MULTI_ADAMW_STEP,
                     {found, mult, Random(&rng, MNT_DTYPE_F32, {M, N}), counter,
                      Random(&rng, MNT_DTYPE_BF16, {K}), counter},
                     out, &multi_adamw_sr, 1e-5});
    cases.back().needs = MNT_CAPABILITY_STOCHASTIC_ROUNDING;
  }
  static MNT_MultiSgdParams multi_sgd{MNT_MultiSgdParams_STRUCT_SIZE, 0.05f, 0.9f, 1e-3f, 1,
                                      2, lr_scales, weight_decays};
  {
    HostTensor found{MNT_DTYPE_F32, {1}, {0.0f}}, mult{MNT_DTYPE_F32, {1}, {0.5f}};
    cases.push_back({"MULTI_SGD_STEP 2 tensors nesterov", MNT_OP_MULTI_SGD_STEP,
                     {found, mult, Random(&rng, MNT_DTYPE_F32, {M, N}),
                      Random(&rng, MNT_DTYPE_F16, {K})},
                     {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, N}),
                      Zeros(MNT_DTYPE_BF16, {M, N}), Random(&rng, MNT_DTYPE_F32, {K}),
                      Random(&rng, MNT_DTYPE_F32, {K}), Zeros(MNT_DTYPE_BF16, {K})},
                     &multi_sgd, 1e-5});
    static MNT_MultiSgdParams multi_sgd_sr = multi_sgd;
    multi_sgd_sr.rounding = MNT_ROUNDING_STOCHASTIC;
    multi_sgd_sr.rounding_seed = 0x5eedull;
    multi_sgd_sr.rounding_step = 9;
    cases.push_back({"MULTI_SGD_STEP stochastic rounding", MNT_OP_MULTI_SGD_STEP,
                     {found, mult, Random(&rng, MNT_DTYPE_F32, {M, N}),
                      Random(&rng, MNT_DTYPE_F16, {K})},
                     {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, N}),
                      Zeros(MNT_DTYPE_BF16, {M, N}), Random(&rng, MNT_DTYPE_F32, {K}),
                      Random(&rng, MNT_DTYPE_F32, {K}), Zeros(MNT_DTYPE_BF16, {K})},
                     &multi_sgd_sr, 1e-5});
    cases.back().needs = MNT_CAPABILITY_STOCHASTIC_ROUNDING;
  }
  // ABI 1.7: the learning rate as a device scalar (the params' lr, 7, must
  // be ignored), against the reference with the same device rate.
  const bool device_lr = sdk::HasCapability(plugin, MNT_CAPABILITY_OPTIMIZER_DEVICE_LR);
  static MNT_AdamWParams adamw_dev{MNT_AdamWParams_STRUCT_SIZE, 7.0f, 0.9f, 0.999f, 1e-8f,
                                   0.01f, 1};
  static MNT_SgdParams sgd_dev{MNT_SgdParams_STRUCT_SIZE, 7.0f, 0.9f, 1e-3f, 1};
  static MNT_MultiAdamWParams multi_adamw_dev;
  static MNT_MultiSgdParams multi_sgd_dev;
  multi_adamw_dev = multi_adamw;
  multi_adamw_dev.lr = 7.0f;
  multi_sgd_dev = multi_sgd;
  multi_sgd_dev.lr = 7.0f;
  // Input sets of the host-lr and device-lr forms, for the same-bits check.
  std::vector<std::pair<size_t, size_t>> same_bits;  // (host case, device case)
  if (device_lr) {
    HostTensor found{MNT_DTYPE_F32, {1}, {0.0f}}, mult{MNT_DTYPE_F32, {1}, {0.5f}};
    HostTensor counter{MNT_DTYPE_I32, {1}, {2.0f}}, lr{MNT_DTYPE_F32, {1}, {3e-3f}};
    static MNT_AdamWParams adamw_host;
    adamw_host = adamw_dev;
    adamw_host.lr = 3e-3f;
    const HostTensor g = Random(&rng, MNT_DTYPE_BF16, {M, N});
    const std::vector<HostTensor> state = AdamWState(&rng, {M, N});
    same_bits.push_back({cases.size(), cases.size() + 1});
    cases.push_back({"ADAMW_STEP step counter, host lr", MNT_OP_ADAMW_STEP,
                     {g, found, mult, counter}, state, &adamw_host, 1e-5});
    cases.push_back({"ADAMW_STEP step counter, device lr (1.7)", MNT_OP_ADAMW_STEP,
                     {g, found, mult, counter, lr}, state, &adamw_dev, 1e-5});
    cases.push_back({"SGD_STEP nesterov, device lr (1.7)", MNT_OP_SGD_STEP,
                     {Random(&rng, MNT_DTYPE_F32, {M, N}), found, mult, lr},
                     {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, N})},
                     &sgd_dev, 1e-5});
    std::vector<HostTensor> out = AdamWState(&rng, {M, N});
    for (HostTensor& t : AdamWState(&rng, {K})) out.push_back(std::move(t));
    cases.push_back({"MULTI_ADAMW_STEP 2 tensors, device lr (1.7)", MNT_OP_MULTI_ADAMW_STEP,
                     {found, mult, Random(&rng, MNT_DTYPE_F32, {M, N}), counter,
                      Random(&rng, MNT_DTYPE_BF16, {K}), counter, lr},
                     out, &multi_adamw_dev, 1e-5});
    cases.push_back({"MULTI_SGD_STEP 2 tensors, device lr (1.7)", MNT_OP_MULTI_SGD_STEP,
                     {found, mult, Random(&rng, MNT_DTYPE_F32, {M, N}),
                      Random(&rng, MNT_DTYPE_F16, {K}), lr},
                     {Random(&rng, MNT_DTYPE_F32, {M, N}), Random(&rng, MNT_DTYPE_F32, {M, N}),
                      Zeros(MNT_DTYPE_BF16, {M, N}), Random(&rng, MNT_DTYPE_F32, {K}),
                      Random(&rng, MNT_DTYPE_F32, {K}), Zeros(MNT_DTYPE_BF16, {K})},
                     &multi_sgd_dev, 1e-5});
  }

  for (const auto& [host_case, device_case] : same_bits) {
    const Case& h = cases[host_case];
    const Case& d = cases[device_case];
    const std::string name = n + "device_lr_same_bits " + h.name;
    if (!cand.Supports(h.op)) {
      r->Skip(name, "not supported by this backend");
      continue;
    }
    std::vector<HostTensor> host_out = h.out, device_out = d.out;
    s = cand.Run(h.op, h.in, &host_out, h.params);
    if (s.ok()) s = cand.Run(d.op, d.in, &device_out, d.params);
    r->Check(name, s.ok() ? Compare(device_out, host_out, 0) : s.message());
  }

  for (Case& c : cases) {
    const std::string name = n + "op " + c.name;
    if (!cand.Supports(c.op)) {
      r->Skip(name, "not supported by this backend");
      continue;
    }
    if (c.needs != MNT_CAPABILITY_INVALID && !sdk::HasCapability(plugin, c.needs)) {
      r->Skip(name, Format("needs capability %s, which the backend does not offer",
                           sdk::CapabilityName(c.needs)));
      continue;
    }
    std::vector<HostTensor> got = c.out, want = c.out;
    s = ref.Run(c.op, c.in, &want, c.params);
    if (!s.ok()) {
      r->Fail(name, "reference backend: " + s.message());
      continue;
    }
    s = cand.Run(c.op, c.in, &got, c.params);
    if (c.first_output_only) {
      got.resize(1);
      want.resize(1);
      if (want[0].values[0] != 1.0f) {
        r->Fail(name, "reference did not raise found_inf");
        continue;
      }
    }
    r->Check(name, !s.ok()        ? s.message()
                   : c.exact_bits ? CompareBits(got, want)
                                  : Compare(got, want, c.tol));
  }

  CheckOptimizerPieces(plugin, cand, &rng, r);
  CheckAdamW8bit(cand, &rng, r);
  CheckAdafactor(cand, &rng, r);
  CheckMultiAdamW8bit(cand, ref, &rng, r);
  CheckMultiAdafactor(cand, ref, &rng, r);
}

}  // namespace mnt::conformance
