// SGD_STEP and ADAMW_STEP: fused updates of the fp32 master weights (and
// the rounded working copy) with torch.optim's per-element formulas
// (common/elementwise_math.h, step_math.h). found_inf, the gradient
// multiplier and AdamW's step counter are read on the device, so a step
// needs no host sync. Since ABI 1.6 MULTI_SGD_STEP / MULTI_ADAMW_STEP run
// the same per-group code over a table of tensors uploaded to the device,
// in one launch (plus one tiny launch that advances AdamW's step counters
// after every block has read them). Since 1.7 the learning rate may be a
// device scalar too (read by the kernels; AdamW's block leader derives the
// coefficients from it), so the launch parameters stay the same step after
// step. The kernels are compiled per pair of
// storage types (gradient, working copy), so an fp32 master gradient with a
// bf16 working copy runs without a per-element dtype switch; the pair is
// chosen once per launch, and a multi-tensor table is split into one launch
// per pair it holds. They read and write 4 elements at a time (16-byte loads
// when aligned).
// Since ABI 1.7 a bf16 working copy may be rounded stochastically, with the
// CPU backend's bits (common/stochastic_rounding.h); since 1.11 with a
// tensor index and a first element index of the caller's choosing (a piece
// of a parameter gets the bits the whole parameter would).
#include <cuda_runtime.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/step_table.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

// What both kernels read and write; device scalars are NULL when absent.
struct StepBuffers {
  DevTensor grad;
  const float* found_inf = nullptr;
  const float* multiplier = nullptr;
  float* master = nullptr;
  float* state1 = nullptr;  // momentum, or Adam m
  float* state2 = nullptr;  // Adam v
  DevTensor working;        // optional rounded copy
  int64_t n = 0;
  // AdamW only: applied-step counter on the device (NULL: the coefficients
  // passed in are used as they are).
  int32_t* step_counter = nullptr;
  // Since 1.7: the device learning rate (NULL: the coefficients' lr), times
  // lr_scale (a multi-tensor entry's) by TableLr; AdamW's host step, for
  // coefficients derived on the device without a counter.
  const float* lr = nullptr;
  float lr_scale = 1.0f;
  int64_t step = 1;
  // ABI 1.7: a stochastically rounded (bf16) working copy, its random bits
  // keyed by (seed, step, tensor); the step is counter + 1 with a step
  // counter, else rounding_step (AdamW's host step, SGD's rounding_step).
  // Element i draws the bits of element index rounding_element + i (1.11:
  // a piece's offset in its parameter; 0 otherwise).
  int32_t stochastic = 0;
  uint64_t rounding_seed = 0;
  int64_t rounding_tensor = 0;
  int64_t rounding_step = 0;
  int64_t rounding_element = 0;
};

// Sets b's stochastic rounding for tensor `index` of a call's table.
void SetRounding(const backend::WorkingRounding& r, size_t index, int64_t host_step,
                 StepBuffers* b) {
  b->stochastic = r.stochastic ? 1 : 0;
  b->rounding_seed = r.seed;
  b->rounding_tensor = r.TensorOf(index);
  b->rounding_step = host_step;
  b->rounding_element = r.ElementOf(index);
}

StepBuffers Buffers(const backend::StepInputs& in) {
  StepBuffers b;
  b.grad = Dev(in.grad);
  b.found_inf = in.found_inf.f32();
  b.multiplier = in.multiplier.f32();
  b.lr = in.lr.f32();
  b.n = in.n;
  return b;
}

__device__ inline bool SkipStep(const StepBuffers& b) {
  return b.found_inf != nullptr && *b.found_inf != 0.0f;
}
__device__ inline float Multiplier(const StepBuffers& b) {
  return b.multiplier != nullptr ? *b.multiplier : 1.0f;
}

// The key of b's random bits for this step (0 when rounding to nearest). A
// step counter is read before the kernel that advances it (stream order).
__device__ inline uint64_t RoundingKey(const StepBuffers& b) {
  if (b.stochastic == 0) return 0;
  const int64_t step =
      b.step_counter != nullptr ? int64_t{*b.step_counter} + 1 : b.rounding_step;
  return StochasticRoundingKey(b.rounding_seed, step, b.rounding_tensor);
}

// The new master values of elements [i, i + count) into the working copy:
// rounded to nearest even through storage type S, or stochastically as bf16
// bits (the contract check saw to a BF16 copy), one 8-byte store per full
// group when `vec`.
template <typename S>
__device__ inline void StoreWorking(const StepBuffers& b, uint64_t key, int64_t i, int count,
                                    bool vec, const float w[4]) {
  if (b.stochastic == 0) {
    Store4<S>(b.working, i, count, vec, w);
    return;
  }
  uint16_t* out = static_cast<uint16_t*>(b.working.data);
  uint16_t h[4] = {0, 0, 0, 0};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (k < count) h[k] = FloatToBf16BitsStochastic(w[k], key, b.rounding_element + i + k);
  }
  if (vec && count == 4) {
    uint2 q;
    q.x = static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
    q.y = static_cast<uint32_t>(h[2]) | (static_cast<uint32_t>(h[3]) << 16);
    *reinterpret_cast<uint2*>(out + i) = q;
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (k < count) out[i + k] = h[k];
  }
}

// The fp32 state arrays as DevTensors, for the 4-element loads/stores.
__device__ inline DevTensor F32(float* p) { return DevTensor{p, MNT_DTYPE_F32}; }

// One group of up to 4 consecutive elements from element i: one 16-byte
// load/store per fp32 array and one 8-byte (16-bit storage) per gradient /
// working copy group when `vec` (every pointer 16-byte aligned), element by
// element otherwise and for the tail. Same per-element formulas in the same
// order: the same bits either way, and in the single- and multi-tensor ops.
// G: the gradient's storage type, W: the working copy's.
template <typename G, typename W>
__device__ inline void SgdGroup(const StepBuffers& b, const SgdCoefficients& c, bool vec,
                                float mult, uint64_t key, int64_t i) {
  const int count = b.n - i < 4 ? static_cast<int>(b.n - i) : 4;
  float g[4], w[4], mom[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  Load4<G>(b.grad, i, count, vec, g);
  Load4<F32Storage>(F32(b.master), i, count, vec, w);
  if (b.state1 != nullptr) Load4<F32Storage>(F32(b.state1), i, count, vec, mom);
  // A fixed trip count (the arrays stay in registers, not on the stack).
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (k >= count) break;
    if (mult != 1.0f) g[k] = MulF32(g[k], mult);
    SgdUpdate(c, g[k], &w[k], &mom[k]);
  }
  Store4<F32Storage>(F32(b.master), i, count, vec, w);
  if (b.state1 != nullptr) Store4<F32Storage>(F32(b.state1), i, count, vec, mom);
  if (b.working.data != nullptr) StoreWorking<W>(b, key, i, count, vec, w);
}

template <typename G, typename W>
__device__ inline void AdamWGroup(const StepBuffers& b, const AdamWCoefficients& c, bool vec,
                                  float mult, uint64_t key, int64_t i) {
  const int count = b.n - i < 4 ? static_cast<int>(b.n - i) : 4;
  float g[4], w[4], m[4], v[4];
  Load4<G>(b.grad, i, count, vec, g);
  Load4<F32Storage>(F32(b.master), i, count, vec, w);
  Load4<F32Storage>(F32(b.state1), i, count, vec, m);
  Load4<F32Storage>(F32(b.state2), i, count, vec, v);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (k >= count) break;
    if (mult != 1.0f) g[k] = MulF32(g[k], mult);
    AdamWUpdate(c, g[k], &w[k], &m[k], &v[k]);
  }
  Store4<F32Storage>(F32(b.master), i, count, vec, w);
  Store4<F32Storage>(F32(b.state1), i, count, vec, m);
  Store4<F32Storage>(F32(b.state2), i, count, vec, v);
  if (b.working.data != nullptr) StoreWorking<W>(b, key, i, count, vec, w);
}

// The SGD coefficients with the device learning rate, when there is one.
__device__ inline SgdCoefficients WithDeviceLr(const StepBuffers& b, SgdCoefficients c) {
  if (b.lr != nullptr) c.lr = TableLr(*b.lr, b.lr_scale);
  return c;
}

// Each thread updates groups of 4 consecutive elements (grid-stride).
template <typename G, typename W>
__global__ void SgdKernel(StepBuffers b, SgdCoefficients host_c, bool vec) {
  if (SkipStep(b)) return;  // overflow step: state stays bit-identical
  const SgdCoefficients c = WithDeviceLr(b, host_c);
  const float mult = Multiplier(b);
  const uint64_t key = RoundingKey(b);
  const int64_t stride = 4ll * gridDim.x * blockDim.x;
  for (int64_t i = 4ll * (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x);
       i < b.n; i += stride) {
    SgdGroup<G, W>(b, c, vec, mult, key, i);
  }
}

// AdamW's coefficients for this block: thread 0 derives them on the device
// when the tensor has a step counter (counter + 1) or a device learning rate
// (1.7), else the host's. Every thread of the block must call it (barrier).
__device__ inline AdamWCoefficients BlockAdamWCoefficients(const StepBuffers& b,
                                                           const AdamWCoefficients& host_c) {
  __shared__ AdamWCoefficients shared_c;
  if (b.step_counter == nullptr && b.lr == nullptr) return host_c;
  if (threadIdx.x == 0) {
    const float lr = b.lr != nullptr ? TableLr(*b.lr, b.lr_scale) : host_c.lr;
    const int64_t step = b.step_counter != nullptr ? int64_t{*b.step_counter} + 1 : b.step;
    shared_c = AdamWCoefficientsForStep(lr, host_c.beta1, host_c.beta2, host_c.epsilon,
                                        host_c.weight_decay, step);
  }
  __syncthreads();
  return shared_c;
}

// With b.step_counter, every block derives the bias corrections from
// counter + 1 on the device.
template <typename G, typename W>
__global__ void AdamWKernel(StepBuffers b, AdamWCoefficients host_c, bool vec) {
  if (SkipStep(b)) return;  // uniform across the grid: no thread reaches the barrier
  const AdamWCoefficients c = BlockAdamWCoefficients(b, host_c);
  const float mult = Multiplier(b);
  const uint64_t key = RoundingKey(b);
  const int64_t stride = 4ll * gridDim.x * blockDim.x;
  for (int64_t i = 4ll * (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x);
       i < b.n; i += stride) {
    AdamWGroup<G, W>(b, c, vec, mult, key, i);
  }
}

// One tensor of a multi-tensor step as the kernel reads it from the device
// table: its buffers, its coefficients (lr and weight decay resolved by the
// contract check; AdamW's bias corrections for the host step), whether its
// pointers allow vector loads, and the first block of the launch it owns.
struct TableEntry {
  StepBuffers b;
  SgdCoefficients sgd;
  AdamWCoefficients adamw;
  int32_t vec = 0;
  int64_t first_block = 0;
};

// Elements one block of the multi-tensor kernel updates.
constexpr int64_t kGroupsPerThread = 4;
constexpr int64_t kTableBlockElements = 4 * kThreads * kGroupsPerThread;

// Every block updates kTableBlockElements elements of one tensor; every
// tensor of `table` has gradient storage G and working storage W.
template <typename G, typename W, bool kAdamW>
__global__ void MultiStepKernel(const TableEntry* table, int64_t count, const float* found_inf,
                                const float* multiplier) {
  if (found_inf != nullptr && *found_inf != 0.0f) return;  // uniform: skip the step
  const TableEntry& e = EntryOfUnit(table, count, static_cast<int64_t>(blockIdx.x));
  StepBuffers b = e.b;
  const float mult = multiplier != nullptr ? *multiplier : 1.0f;
  const int64_t begin = (static_cast<int64_t>(blockIdx.x) - e.first_block) * kTableBlockElements;
  const int64_t end = begin + kTableBlockElements < b.n ? begin + kTableBlockElements : b.n;
  const uint64_t key = RoundingKey(b);
  if constexpr (kAdamW) {
    const AdamWCoefficients c = BlockAdamWCoefficients(b, e.adamw);
    for (int64_t i = begin + 4 * threadIdx.x; i < end; i += 4 * blockDim.x) {
      AdamWGroup<G, W>(b, c, e.vec != 0, mult, key, i);
    }
  } else {
    const SgdCoefficients c = WithDeviceLr(b, e.sgd);
    for (int64_t i = begin + 4 * threadIdx.x; i < end; i += 4 * blockDim.x) {
      SgdGroup<G, W>(b, c, e.vec != 0, mult, key, i);
    }
  }
}

// Advances every table entry's step counter on an applied step (after every
// block of the update has read them: stream order).
__global__ void CountAppliedStepsKernel(const TableEntry* table, int64_t count,
                                        const float* found_inf) {
  if (found_inf != nullptr && *found_inf != 0.0f) return;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count && table[i].b.step_counter != nullptr) *table[i].b.step_counter += 1;
}

// Every buffer a step kernel touches is 16-byte aligned (absent ones are).
bool StepVectorizable(const StepBuffers& b) {
  return Aligned16(b.grad.data) && Aligned16(b.master) && Aligned16(b.state1) &&
         Aligned16(b.state2) && Aligned16(b.working.data);
}

// The working copy's dtype, or the gradient's when there is none (the
// kernel never touches an absent copy, so any type serves; this one adds no
// instantiation).
MNT_DType WorkingOrGrad(const StepBuffers& b) {
  return b.working.data != nullptr ? b.working.dtype : b.grad.dtype;
}

// f(G{}, W{}) for the step's gradient and working-copy storage types.
template <typename F>
cudaError_t WithStepStorages(const StepBuffers& b, F&& f) {
  return WithStoragePair(b.grad.dtype, WorkingOrGrad(b), std::forward<F>(f));
}

// After every block of the AdamW update has read the counter (stream order).
__global__ void CountAppliedStepKernel(int32_t* counter, const float* found_inf) {
  if (found_inf == nullptr || *found_inf == 0.0f) *counter += 1;
}

}  // namespace

Status CudaBackend::SgdStep(const backend::SgdStepCall& s) {
  StepBuffers b = Buffers(s);
  b.master = s.master.f32();
  b.state1 = s.momentum.f32();
  b.working = Dev(s.working);
  SetRounding(s.rounding, 0, s.rounding.step, &b);
  if (b.n == 0) return Status::Ok();
  const cudaError_t err = WithStepStorages(b, [&](auto g, auto w) {
    return Launch(SgdKernel<decltype(g), decltype(w)>, GridFor((b.n + 3) / 4, kThreads),
                  kThreads, 0, stream, b, s.coefficients, StepVectorizable(b));
  });
  return Launched(s, err, "sgd_step");
}

Status CudaBackend::AdamWStep(const backend::AdamWStepCall& a) {
  const MNT_AdamWParams* p = a.params;
  StepBuffers b = Buffers(a);
  b.master = a.master.f32();
  b.state1 = a.m.f32();
  b.state2 = a.v.f32();
  b.working = Dev(a.working);
  // ABI 1.4: with the device counter the kernel derives the bias corrections
  // itself (its range is not checked here: that would need a host read).
  b.step_counter = a.step_counter.i32();
  b.step = p->step;
  SetRounding(a.rounding, 0, p->step, &b);
  // Bias corrections in double with the shared formula, the same bits as
  // the CPU backend and as the device-counter path.
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      p->lr, p->beta1, p->beta2, p->epsilon, p->weight_decay,
      b.step_counter != nullptr ? 1 : p->step);
  if (b.n > 0) {
    const cudaError_t err = WithStepStorages(b, [&](auto g, auto w) {
      return Launch(AdamWKernel<decltype(g), decltype(w)>, GridFor((b.n + 3) / 4, kThreads),
                    kThreads, 0, stream, b, c, StepVectorizable(b));
    });
    MNT_RETURN_IF_ERROR(Launched(a, err, "adamw_step"));
  }
  if (b.step_counter == nullptr) return Status::Ok();
  return Launched(a, Launch(CountAppliedStepKernel, 1, 1, 0, stream, b.step_counter,
                            b.found_inf),
                  "adamw_count_applied_step");
}

namespace {

// Groups `table` by its (gradient, working copy) storage pairs
// (step_table.cuh), one unit per kTableBlockElements of an entry, and marks
// the entries whose pointers allow vector loads.
std::vector<TableGroup> GroupEntries(std::vector<TableEntry>* table) {
  std::vector<TableGroup> groups = GroupByStorage(
      table,
      [](const TableEntry& e) { return std::make_pair(e.b.grad.dtype, WorkingOrGrad(e.b)); },
      [](const TableEntry& e) {
        return (e.b.n + kTableBlockElements - 1) / kTableBlockElements;
      });
  for (TableEntry& e : *table) e.vec = StepVectorizable(e.b) ? 1 : 0;
  return groups;
}

// The device table of a multi-tensor step, uploaded on the stream once, and
// one launch per storage pair over its part of the table: one block per
// kTableBlockElements of each tensor.
template <bool kAdamW, typename Call>
Status RunTable(CudaBackend& be, const Call& call, std::vector<TableEntry>& table,
                const char* kernel) {
  const std::vector<TableGroup> groups = GroupEntries(&table);
  int64_t blocks = 0;
  for (const TableGroup& g : groups) {
    if (g.units > int64_t{0x7fffffff}) return call.Invalid("the table has too many elements");
    blocks += g.units;
  }
  if (blocks == 0) return Status::Ok();
  Scratch device_table(be);
  const size_t bytes = sizeof(TableEntry) * table.size();
  MNT_RETURN_IF_ERROR(device_table.Allocate(bytes));
  MNT_RETURN_IF_ERROR(be.UploadForKernel(device_table.data(), table.data(), bytes));
  const TableEntry* dev = static_cast<const TableEntry*>(device_table.data());
  const int64_t count = static_cast<int64_t>(table.size());
  const float* found_inf = call.found_inf.f32();
  const float* multiplier = call.multiplier.f32();
  for (const TableGroup& g : groups) {
    if (g.units == 0) continue;
    const cudaError_t err = WithStoragePair(g.grad, g.working, [&](auto gs, auto ws) {
      return Launch(MultiStepKernel<decltype(gs), decltype(ws), kAdamW>,
                    static_cast<unsigned>(g.units), kThreads, 0, be.stream, dev + g.begin,
                    static_cast<int64_t>(g.count), found_inf, multiplier);
    });
    MNT_RETURN_IF_ERROR(Launched(call, err, kernel));
  }
  if constexpr (kAdamW) {
    if (!call.step_counters) return Status::Ok();
    return Launched(call,
                    Launch(CountAppliedStepsKernel, GridFor(count, kThreads), kThreads, 0,
                           be.stream, dev, count, found_inf),
                    "multi_adamw_count_applied_steps");
  }
  return Status::Ok();
}

StepBuffers TableBuffers(const backend::MultiStepTensor& t, const Operand& device_lr) {
  StepBuffers b;
  b.lr = device_lr.f32();
  b.lr_scale = t.lr_scale;
  b.grad = Dev(t.grad);
  b.master = t.master.f32();
  b.state1 = t.state1.f32();
  b.state2 = t.state2.f32();
  b.working = Dev(t.working);
  b.n = t.n;
  b.step_counter = t.step_counter.i32();
  return b;
}

}  // namespace

Status CudaBackend::MultiSgdStep(const backend::MultiSgdStepCall& s) {
  std::vector<TableEntry> table(s.tensors.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const backend::MultiStepTensor& t = s.tensors[i];
    table[i].b = TableBuffers(t, s.lr);
    SetRounding(s.rounding, i, s.rounding.step, &table[i].b);
    table[i].sgd = SgdCoefficients{t.lr, s.momentum, t.weight_decay, s.nesterov};
  }
  return RunTable<false>(*this, s, table, "multi_sgd_step");
}

Status CudaBackend::MultiAdamWStep(const backend::MultiAdamWStepCall& a) {
  const MNT_MultiAdamWParams* p = a.params;
  std::vector<TableEntry> table(a.tensors.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const backend::MultiStepTensor& t = a.tensors[i];
    table[i].b = TableBuffers(t, a.lr);
    table[i].b.step = p->step;
    SetRounding(a.rounding, i, p->step, &table[i].b);
    // With device counters the kernel derives the bias corrections itself.
    table[i].adamw = AdamWCoefficientsForStep(t.lr, p->beta1, p->beta2, p->epsilon,
                                              t.weight_decay, a.step_counters ? 1 : p->step);
  }
  return RunTable<true>(*this, a, table, "multi_adamw_step");
}

}  // namespace mnt::cuda
