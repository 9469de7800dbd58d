// ADAMW8BIT_STEP (ABI 1.12): AdamW with 8-bit blockwise moments
// (common/adamw8bit_math.h), one CUDA block of 256 threads per quantization
// block of 256 elements (grid-stride over the blocks), one thread per
// element. Each block builds both dynamic maps in shared memory from their
// exact definition, dequantizes and steps its elements with the CPU
// backend's per-element code, reduces the new absmax (an exact max: the
// same bits in any order) and requantizes. found_inf, the multiplier, the
// step counter and the learning rate are read on the device, as ADAMW_STEP's
// (optimizers.cu), so the step needs no host read; the counter is advanced
// by a one-thread kernel after the update (stream order).
//
// Since ABI 1.14 MULTI_ADAMW8BIT_STEP runs the same per-block code over a
// table of tensors uploaded to the device once (step_table.cuh): one
// launch, its CUDA blocks striding over the quantization blocks of every
// tensor, each finding its tensor from the table's prefix of first blocks,
// the tensors' storage types read through AnyStorage (the same bits as the
// specialised loads and stores; one instantiation instead of one per
// pair); then one tiny launch advances every step counter after all blocks
// have read them. A recorded step (CUDA graph) replays the upload with the
// launches.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "plugins/backends/common/adamw8bit_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/step_table.cuh"

namespace mnt::cuda {

using sdk::Status;

static_assert(kThreads == kQuantizationBlock, "one CUDA block per quantization block");
static_assert(MNT_QUANTIZATION_BLOCK_SIZE == kQuantizationBlock,
              "the ABI's block size is the math's");

namespace {

// What the kernel reads and writes; device scalars are NULL when absent.
struct Step8bit {
  DevTensor grad;
  const float* found_inf = nullptr;
  const float* multiplier = nullptr;
  const float* lr = nullptr;       // 1.7-style device lr (replaces params->lr)
  int32_t* step_counter = nullptr;  // applied steps (replaces params->step)
  float* master = nullptr;
  uint8_t* m_codes = nullptr;
  float* m_absmax = nullptr;
  uint8_t* v_codes = nullptr;
  float* v_absmax = nullptr;
  DevTensor working;  // optional
  int64_t n = 0;
  int64_t step = 1;  // params->step
  // The working copy's stochastic rounding (element i: rounding_element + i).
  int32_t stochastic = 0;
  uint64_t rounding_seed = 0;
  int64_t rounding_tensor = 0;
  int64_t rounding_element = 0;
};

struct AbsMaxOp {
  __device__ float operator()(float a, float b) const { return AbsMaxCombine(a, b); }
};

// The maps of a kernel's shared memory, built by its 256 threads from
// their exact definition (one entry each); read after the next barrier.
__device__ inline void BuildMaps(AdamW8bitMaps* maps) {
  maps->m[threadIdx.x] = DynamicMapValue(threadIdx.x, true);
  maps->v[threadIdx.x] = DynamicMapValue(threadIdx.x, false);
}

// The coefficients of b's step: with a step counter or a device lr (times
// lr_scale, a table entry's) thread 0 derives them on the device into
// `shared`, else the host's. Every thread calls it (barrier), which also
// publishes what the block wrote to shared memory before.
__device__ inline AdamWCoefficients StepCoefficients(const Step8bit& b,
                                                     const AdamWCoefficients& host_c,
                                                     float lr_scale, int64_t step,
                                                     AdamWCoefficients* shared) {
  const bool derive = b.step_counter != nullptr || b.lr != nullptr;
  if (threadIdx.x == 0 && derive) {
    *shared = AdamWCoefficientsForStep(b.lr != nullptr ? TableLr(*b.lr, lr_scale) : host_c.lr,
                                       host_c.beta1, host_c.beta2, host_c.epsilon,
                                       host_c.weight_decay, step);
  }
  __syncthreads();
  return derive ? *shared : host_c;
}

// Quantization block `block` of b, one element per thread: the per-element
// update, the block's new absmax (BlockReduce's barriers) and the
// requantized codes.
template <typename G, typename W>
__device__ inline void StepBlock(const Step8bit& b, const AdamWCoefficients& c,
                                 const AdamW8bitMaps& maps, float mult, uint64_t key,
                                 int64_t block) {
  const int64_t i = block * kQuantizationBlock + threadIdx.x;
  const bool live = i < b.n;
  // Every thread reads the block's old absmax before BlockReduce's first
  // barrier; thread 0 writes the new one after its last.
  const float m_absmax = b.m_absmax[block], v_absmax = b.v_absmax[block];
  float m = 0.0f, v = 0.0f;  // the max's identity past the end
  if (live) {
    float g = Load<G>(b.grad, i);
    if (mult != 1.0f) g = MulF32(g, mult);
    float w = b.master[i];
    AdamW8bitElement(c, maps, g, b.m_codes[i], m_absmax, b.v_codes[i], v_absmax, &w, &m, &v);
    b.master[i] = w;
    if (b.working.data != nullptr) {
      if (b.stochastic != 0) {
        static_cast<uint16_t*>(b.working.data)[i] =
            FloatToBf16BitsStochastic(w, key, b.rounding_element + i);
      } else {
        Store<W>(b.working, i, w);
      }
    }
  }
  const float new_m = BlockReduce(m, AbsMaxOp{}, 0.0f);
  const float new_v = BlockReduce(v, AbsMaxOp{}, 0.0f);
  if (live) {
    b.m_codes[i] = Requantize(maps.m, m, new_m, true);
    b.v_codes[i] = Requantize(maps.v, v, new_v, false);
  }
  if (threadIdx.x == 0) {
    b.m_absmax[block] = new_m;
    b.v_absmax[block] = new_v;
  }
}

// The 1-based step of b and the key of its working copy's random bits (0
// when rounding to nearest). A counter is read before the kernel that
// advances it (stream order).
__device__ inline int64_t StepOf(const Step8bit& b) {
  return b.step_counter != nullptr ? int64_t{*b.step_counter} + 1 : b.step;
}
__device__ inline uint64_t KeyOf(const Step8bit& b, int64_t step) {
  return b.stochastic != 0 ? StochasticRoundingKey(b.rounding_seed, step, b.rounding_tensor)
                           : 0;
}

// G: the gradient's storage type, W: the working copy's.
template <typename G, typename W>
__global__ void __launch_bounds__(kThreads)
    AdamW8bitKernel(Step8bit b, AdamWCoefficients host_c) {
  if (b.found_inf != nullptr && *b.found_inf != 0.0f) return;  // uniform: no barrier reached
  __shared__ AdamW8bitMaps maps;
  __shared__ AdamWCoefficients shared_c;
  BuildMaps(&maps);
  const int64_t step = StepOf(b);
  const AdamWCoefficients c = StepCoefficients(b, host_c, 1.0f, step, &shared_c);
  const float mult = b.multiplier != nullptr ? *b.multiplier : 1.0f;
  const uint64_t key = KeyOf(b, step);
  const int64_t blocks = QuantizationBlocks(b.n);
  for (int64_t block = blockIdx.x; block < blocks; block += gridDim.x) {
    StepBlock<G, W>(b, c, maps, mult, key, block);
  }
}

// One tensor of a MULTI_ADAMW8BIT_STEP table as the kernel reads it: its
// buffers (found_inf and the multiplier are the call's, passed apart), its
// host coefficients (lr and weight decay resolved), its lr scale, and the
// first quantization block of its group's launch it owns.
struct Table8bitEntry {
  Step8bit b;
  AdamWCoefficients c;
  float lr_scale = 1.0f;
  int64_t first_block = 0;
};

// Every CUDA block strides over the `blocks` quantization blocks of the
// table's `count` entries, of any storage types. Consecutive blocks of one
// entry share its coefficients; each is derived again (a few flops) rather
// than cached across the stride.
__global__ void __launch_bounds__(kThreads)
    MultiAdamW8bitKernel(const Table8bitEntry* table, int64_t count, int64_t blocks,
                         const float* found_inf, const float* multiplier) {
  if (found_inf != nullptr && *found_inf != 0.0f) return;  // uniform: no barrier reached
  __shared__ AdamW8bitMaps maps;
  __shared__ AdamWCoefficients shared_c;
  BuildMaps(&maps);
  const float mult = multiplier != nullptr ? *multiplier : 1.0f;
  for (int64_t unit = blockIdx.x; unit < blocks; unit += gridDim.x) {
    const Table8bitEntry& e = EntryOfUnit(table, count, unit);
    const int64_t step = StepOf(e.b);
    // Its barrier also keeps thread 0 from overwriting shared_c before
    // every thread has read the previous unit's (they did before that
    // unit's BlockReduce).
    const AdamWCoefficients c = StepCoefficients(e.b, e.c, e.lr_scale, step, &shared_c);
    StepBlock<AnyStorage, AnyStorage>(e.b, c, maps, mult, KeyOf(e.b, step),
                                      unit - e.first_block);
  }
}

// Advances every table entry's step counter on an applied step (after every
// block of the update has read them: stream order).
__global__ void CountApplied8bitStepsKernel(const Table8bitEntry* table, int64_t count,
                                            const float* found_inf) {
  if (found_inf != nullptr && *found_inf != 0.0f) return;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count && table[i].b.step_counter != nullptr) *table[i].b.step_counter += 1;
}

// After every block has read the counter (stream order).
__global__ void CountApplied8bitStepKernel(int32_t* counter, const float* found_inf) {
  if (found_inf == nullptr || *found_inf == 0.0f) *counter += 1;
}

}  // namespace

Status CudaBackend::AdamW8bitStep(const backend::AdamW8bitStepCall& a) {
  const MNT_AdamWParams* p = a.params;
  Step8bit b;
  b.grad = Dev(a.grad);
  b.found_inf = a.found_inf.f32();
  b.multiplier = a.multiplier.f32();
  b.lr = a.lr.f32();
  b.step_counter = a.step_counter.i32();
  b.master = a.master.f32();
  b.m_codes = static_cast<uint8_t*>(a.m_codes->data);
  b.m_absmax = a.m_absmax.f32();
  b.v_codes = static_cast<uint8_t*>(a.v_codes->data);
  b.v_absmax = a.v_absmax.f32();
  b.working = Dev(a.working);
  b.n = a.n;
  b.step = p->step;
  b.stochastic = a.rounding.stochastic ? 1 : 0;
  b.rounding_seed = a.rounding.seed;
  b.rounding_tensor = a.rounding.TensorOf(0);
  b.rounding_element = a.rounding.ElementOf(0);
  // Host coefficients for a host step and lr; with a counter or a device lr
  // each block derives them on the device with the same formula.
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      p->lr, p->beta1, p->beta2, p->epsilon, p->weight_decay,
      b.step_counter != nullptr ? 1 : p->step);
  if (b.n > 0) {
    const MNT_DType working = b.working.data != nullptr ? b.working.dtype : b.grad.dtype;
    const cudaError_t err = WithStoragePair(b.grad.dtype, working, [&](auto g, auto w) {
      return Launch(AdamW8bitKernel<decltype(g), decltype(w)>,
                    GridFor(QuantizationBlocks(b.n), 1), kThreads, 0, stream, b, c);
    });
    MNT_RETURN_IF_ERROR(Launched(a, err, "adamw8bit_step"));
  }
  if (b.step_counter == nullptr) return Status::Ok();
  return Launched(a, Launch(CountApplied8bitStepKernel, 1, 1, 0, stream, b.step_counter,
                            b.found_inf),
                  "adamw8bit_count_applied_step");
}

// ABI 1.14: the table uploaded once (UploadForKernel: a recorded step's
// graph owns a pinned copy), one launch over every quantization block, then
// the counters.
Status CudaBackend::MultiAdamW8bitStep(const backend::MultiAdamW8bitStepCall& a) {
  const MNT_MultiAdamWParams* p = a.params;
  std::vector<Table8bitEntry> table(a.tensors.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const backend::MultiAdamW8bitTensor& t = a.tensors[i];
    Step8bit& b = table[i].b;
    b.grad = Dev(t.grad);
    b.lr = a.lr.f32();
    b.step_counter = t.step_counter.i32();
    b.master = t.master.f32();
    b.m_codes = static_cast<uint8_t*>(t.state1->data);
    b.m_absmax = t.m_absmax.f32();
    b.v_codes = static_cast<uint8_t*>(t.state2->data);
    b.v_absmax = t.v_absmax.f32();
    b.working = Dev(t.working);
    b.n = t.n;
    b.step = p->step;
    b.stochastic = a.rounding.stochastic ? 1 : 0;
    b.rounding_seed = a.rounding.seed;
    b.rounding_tensor = a.rounding.TensorOf(i);
    b.rounding_element = a.rounding.ElementOf(i);
    table[i].lr_scale = t.lr_scale;
    // With a counter or a device lr each block derives them on the device.
    table[i].c = AdamWCoefficientsForStep(t.lr, p->beta1, p->beta2, p->epsilon,
                                          t.weight_decay, a.step_counters ? 1 : p->step);
  }
  const int64_t blocks =
      NumberUnits(&table, [](const Table8bitEntry& e) { return QuantizationBlocks(e.b.n); });
  if (blocks == 0 && !a.step_counters) return Status::Ok();
  Scratch device_table(*this);
  const size_t bytes = sizeof(Table8bitEntry) * table.size();
  MNT_RETURN_IF_ERROR(device_table.Allocate(bytes));
  MNT_RETURN_IF_ERROR(UploadForKernel(device_table.data(), table.data(), bytes));
  const Table8bitEntry* dev = static_cast<const Table8bitEntry*>(device_table.data());
  const float* found_inf = a.found_inf.f32();
  const int64_t count = static_cast<int64_t>(table.size());
  if (blocks > 0) {
    MNT_RETURN_IF_ERROR(Launched(a,
                                 Launch(MultiAdamW8bitKernel, GridFor(blocks, 1), kThreads, 0,
                                        stream, dev, count, blocks, found_inf,
                                        a.multiplier.f32()),
                                 "multi_adamw8bit_step"));
  }
  if (!a.step_counters) return Status::Ok();
  return Launched(a,
                  Launch(CountApplied8bitStepsKernel, GridFor(count, kThreads), kThreads, 0,
                         stream, dev, count, found_inf),
                  "multi_adamw8bit_count_applied_steps");
}

}  // namespace mnt::cuda
