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
// No multi-tensor form: a launch per parameter tensor (16 for Mantissa's
// GPT-2, whose layers are stacked into one tensor per kind, plus a few
// small ones), which a recorded step (CUDA graph) replays without host
// launch cost; a table form would save only those launches.
#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/backends/common/adamw8bit_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

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

// G: the gradient's storage type, W: the working copy's.
template <typename G, typename W>
__global__ void __launch_bounds__(kThreads)
    AdamW8bitKernel(Step8bit b, AdamWCoefficients host_c) {
  if (b.found_inf != nullptr && *b.found_inf != 0.0f) return;  // uniform: no barrier reached
  __shared__ AdamW8bitMaps maps;
  __shared__ AdamWCoefficients shared_c;
  const int t = threadIdx.x;
  maps.m[t] = DynamicMapValue(t, true);
  maps.v[t] = DynamicMapValue(t, false);
  const int64_t step = b.step_counter != nullptr ? int64_t{*b.step_counter} + 1 : b.step;
  const bool derive = b.step_counter != nullptr || b.lr != nullptr;
  if (t == 0 && derive) {
    shared_c = AdamWCoefficientsForStep(b.lr != nullptr ? *b.lr : host_c.lr, host_c.beta1,
                                        host_c.beta2, host_c.epsilon, host_c.weight_decay, step);
  }
  __syncthreads();
  const AdamWCoefficients c = derive ? shared_c : host_c;
  const float mult = b.multiplier != nullptr ? *b.multiplier : 1.0f;
  const uint64_t key =
      b.stochastic != 0 ? StochasticRoundingKey(b.rounding_seed, step, b.rounding_tensor) : 0;
  const int64_t blocks = QuantizationBlocks(b.n);
  for (int64_t block = blockIdx.x; block < blocks; block += gridDim.x) {
    const int64_t i = block * kQuantizationBlock + t;
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
    if (t == 0) {
      b.m_absmax[block] = new_m;
      b.v_absmax[block] = new_v;
    }
  }
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

}  // namespace mnt::cuda
