// fp32 attention as cuBLASLt GEMMs (attention_gemm.h says why). Per chunk
// of one sequence's heads and per block of query rows
// (attention_gemm_plan.h), with S, P, dP, dS in fp32 scratch
// [heads, rows, keys]:
//   forward:  S = Q K^T; SoftmaxRowsKernel: P = softmax(scale S) over the
//             visible keys, lse saved; Y = P V.
//   backward (blocks last to first): S = Q K^T; dP = dY V^T;
//             ScoreGradRowsKernel: P = exp(scale S - lse), delta = dy . y,
//             dS = P (dP - delta); dV (+)= P^T dY; dQ = scale dS K;
//             dK (+)= scale dS^T Q.
// The GEMMs accumulate in fp32; their inputs are fp32 (attention_tf32=off,
// CUBLAS_COMPUTE_32F) or rounded to TF32 by the tensor cores (on). Every
// product reads and writes the packed qkv / y / dqkv in place (leading
// dimension 3C or C, heads D apart): no copies. Same results run to run
// (cuBLASLt's algorithm is cached per configuration; the row kernels reduce
// in a fixed order).
#include <cuda_runtime.h>
#include <math.h>

#include "plugins/backends/cuda/attention_gemm.h"
#include "plugins/backends/cuda/attention_gemm_plan.h"
#include "plugins/backends/cuda/attention_notice.h"
#include "plugins/backends/cuda/attention_rows.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/gemm.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

// Threads of a row kernel's block (one block per score row): rows are T
// keys long, so 256 threads take 4 keys each at T = 1024.
constexpr int kRowThreads = 256;

// Forward, one block per score row of the step: scores -> probabilities in
// place (masked keys 0), the row's logsumexp to lse.
__global__ void SoftmaxRowsKernel(AttentionGemmStep s, float scale, float* probs, float* lse) {
  for (int64_t g = blockIdx.x; g < s.rows(); g += gridDim.x) {
    const ScoreRow r = ScoreRowAt(s, g);
    float* row = probs + r.scores;
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < r.visible; j += blockDim.x) {
      top = fmaxf(top, AttentionScaled(row[j], scale));
    }
    top = BlockReduce(top, NanMaxOp(), -INFINITY);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < r.visible; j += blockDim.x) {
      const float e = AttentionExp(row[j], scale, top);
      row[j] = e;
      sum += e;
    }
    sum = BlockReduce(sum, SumOp(), 0.0f);
    const float inv = AttentionInverseSum(sum);
    // Each thread rescales the keys it wrote above (no barrier needed).
    for (int64_t j = threadIdx.x; j < s.block.keys; j += blockDim.x) {
      row[j] = j < r.visible ? row[j] * inv : 0.0f;
    }
    if (threadIdx.x == 0) lse[r.lse] = AttentionRowLse(top, sum);
  }
}

// Backward, one block per score row: probabilities recomputed from the
// saved lse into `probs` (over S), dS over dP in `grads`; masked keys 0.
__global__ void ScoreGradRowsKernel(AttentionGemmStep s, float scale, const float* y,
                                    const float* dy, const float* lse, float* probs,
                                    float* grads) {
  for (int64_t g = blockIdx.x; g < s.rows(); g += gridDim.x) {
    const ScoreRow r = ScoreRowAt(s, g);
    float part = 0.0f;
    for (int64_t e = threadIdx.x; e < s.dims.d; e += blockDim.x) {
      part += dy[r.out + e] * y[r.out + e];
    }
    const float delta = BlockReduce(part, SumOp(), 0.0f);
    const float row_lse = lse[r.lse];
    float* p = probs + r.scores;
    float* gr = grads + r.scores;
    for (int64_t j = threadIdx.x; j < s.block.keys; j += blockDim.x) {
      const float pj = AttentionRowProb(p[j], scale, row_lse, j, r.visible);
      p[j] = pj;
      gr[j] = AttentionRowScoreGrad(pj, gr[j], delta, j, r.visible);
    }
  }
}

// TF32 when the call asks for it (ABI 1.8: the tf32 precision's attention)
// or the backend option forces it for every call.
MNT_ComputeMode ProductMode(const CudaBackend& b, const backend::AttentionShape& s) {
  return s.compute == MNT_COMPUTE_TF32 || b.options.attention_tf32 ? MNT_COMPUTE_TF32
                                                                   : MNT_COMPUTE_F32;
}

// Device addresses of a call's buffers, by AttentionBuffer.
struct Buffers {
  float* at[6] = {};
  float* operator[](AttentionBuffer buf) const { return at[static_cast<int>(buf)]; }
};

Buffers CallBuffers(const AttentionGemmPlan& plan, float* qkv, float* y, float* dy,
                    float* dqkv, void* scratch) {
  float* scores = static_cast<float*>(scratch);
  Buffers b;
  b.at[static_cast<int>(AttentionBuffer::kQkv)] = qkv;
  b.at[static_cast<int>(AttentionBuffer::kOut)] = y;
  b.at[static_cast<int>(AttentionBuffer::kOutGrad)] = dy;
  b.at[static_cast<int>(AttentionBuffer::kQkvGrad)] = dqkv;
  b.at[static_cast<int>(AttentionBuffer::kProbs)] =
      scores + ScoreBufferOffset(plan, AttentionBuffer::kProbs);
  b.at[static_cast<int>(AttentionBuffer::kScoreGrads)] =
      plan.buffers > 1 ? scores + ScoreBufferOffset(plan, AttentionBuffer::kScoreGrads)
                       : nullptr;
  return b;
}

// The product `p` on the device; *done false when cuBLASLt has no algorithm.
Status RunProduct(CudaBackend& b, const OpCall& call, const backend::AttentionShape& s,
                  const StridedProductSpec& p, const Buffers& buf, bool* done) {
  StridedMatmulF32 g;
  g.m = p.m, g.n = p.n, g.k = p.k, g.batch = p.batch;
  g.trans_a = p.trans_a, g.trans_b = p.trans_b;
  g.a = buf[p.a.buffer] + p.a.offset, g.lda = p.a.ld, g.stride_a = p.a.stride;
  g.b = buf[p.b.buffer] + p.b.offset, g.ldb = p.b.ld, g.stride_b = p.b.stride;
  g.c = buf[p.c.buffer] + p.c.offset, g.ldc = p.c.ld, g.stride_c = p.c.stride;
  g.alpha = p.alpha, g.beta = p.beta;
  return StridedMatmul(b, call.op_name(), g, ProductMode(b, s), done);
}

// A product cuBLASLt has no algorithm for: an error with attention=gemm,
// otherwise the fallback kernels run (said once per shape).
Status Refused(CudaBackend& b, const OpCall& call, const backend::AttentionShape& s,
               FallbackReason reason, const StridedProductSpec& p) {
  const auto why = [&] {
    return sdk::Format("cuBLASLt has no %s algorithm for the strided product M=%lld N=%lld "
                       "K=%lld batch=%lld%s%s",
                       ProductMode(b, s) == MNT_COMPUTE_TF32 ? "TF32" : "fp32", (long long)p.m,
                       (long long)p.n, (long long)p.k, (long long)p.batch,
                       p.trans_a ? ", A transposed" : "", p.trans_b ? ", B transposed" : "");
  };
  if (b.options.attention == AttentionImpl::kGemm) {
    return sdk::Unimplemented(sdk::Format("%s: attention=gemm, but %s", call.op_name(),
                                          why().c_str()));
  }
  SayAttentionFallback(b, s, reason, MNT_DTYPE_F32, why);
  return Status::Ok();
}

AttentionGemmDims GemmDims(const backend::AttentionShape& s) {
  return AttentionGemmDims{s.b, s.t, s.h, s.d, s.causal};
}

}  // namespace

Status MaybeGemmAttentionForward(CudaBackend& b, const backend::AttentionForwardCall& a,
                                 bool* ran) {
  *ran = false;
  const backend::AttentionShape& s = a.shape;
  if (s.b * s.h * s.t == 0) {
    *ran = true;  // nothing to compute
    return Status::Ok();
  }
  const AttentionGemmDims dims = GemmDims(s);
  const AttentionGemmPlan plan = PlanAttentionGemm(dims, kForwardScoreBuffers);
  Scratch scratch(b);
  MNT_RETURN_IF_ERROR(scratch.Allocate(plan.scratch_bytes));
  const Buffers buf = CallBuffers(plan, a.qkv.f32(), a.y.f32(), nullptr, nullptr,
                                  scratch.data());
  float* lse = a.lse.f32();
  for (int64_t ci = 0; ci < s.b * plan.chunks; ++ci) {
    for (int64_t bi = 0; bi < plan.blocks; ++bi) {
      const AttentionGemmStep step{dims, ChunkAt(dims, plan, ci), BlockAt(dims, plan, bi)};
      bool done;
      const StridedProductSpec scores = ScoresProduct(step, AttentionBuffer::kProbs);
      MNT_RETURN_IF_ERROR(RunProduct(b, *a.op, s, scores, buf, &done));
      if (!done) return Refused(b, *a.op, s, FallbackReason::kGemmForward, scores);
      MNT_RETURN_IF_ERROR(Launched(
          a,
          Launch(SoftmaxRowsKernel, RowGrid(step.rows()), kRowThreads, 0, b.stream, step,
                 s.scale, buf[AttentionBuffer::kProbs], lse),
          "attention_softmax_rows"));
      const StridedProductSpec out = OutputProduct(step);
      MNT_RETURN_IF_ERROR(RunProduct(b, *a.op, s, out, buf, &done));
      if (!done) return Refused(b, *a.op, s, FallbackReason::kGemmForward, out);
    }
  }
  *ran = true;
  return Status::Ok();
}

Status MaybeGemmAttentionBackward(CudaBackend& b, const backend::AttentionBackwardCall& a,
                                  bool* ran) {
  *ran = false;
  const backend::AttentionShape& s = a.shape;
  if (s.b * s.h * s.t == 0) {
    *ran = true;
    return Status::Ok();
  }
  const AttentionGemmDims dims = GemmDims(s);
  const AttentionGemmPlan plan = PlanAttentionGemm(dims, kBackwardScoreBuffers);
  Scratch scratch(b);
  MNT_RETURN_IF_ERROR(scratch.Allocate(plan.scratch_bytes));
  const Buffers buf =
      CallBuffers(plan, a.qkv.f32(), a.y.f32(), a.dy.f32(), a.dqkv.f32(), scratch.data());
  for (int64_t ci = 0; ci < s.b * plan.chunks; ++ci) {
    for (int64_t i = 0; i < plan.blocks; ++i) {
      const AttentionGemmStep step{dims, ChunkAt(dims, plan, ci),
                                   BlockAt(dims, plan, BackwardBlockIndex(plan, i))};
      const bool first = i == 0;  // sees every key: its dK, dV products overwrite
      const StridedProductSpec before_rows[] = {ScoresProduct(step, AttentionBuffer::kProbs),
                                                ProbGradProduct(step)};
      for (const StridedProductSpec& p : before_rows) {
        bool done;
        MNT_RETURN_IF_ERROR(RunProduct(b, *a.op, s, p, buf, &done));
        if (!done) return Refused(b, *a.op, s, FallbackReason::kGemmBackward, p);
      }
      MNT_RETURN_IF_ERROR(Launched(
          a,
          Launch(ScoreGradRowsKernel, RowGrid(step.rows()), kRowThreads, 0, b.stream, step,
                 s.scale, static_cast<const float*>(a.y.f32()),
                 static_cast<const float*>(a.dy.f32()), static_cast<const float*>(a.lse.f32()),
                 buf[AttentionBuffer::kProbs], buf[AttentionBuffer::kScoreGrads]),
          "attention_score_grad_rows"));
      const StridedProductSpec after_rows[] = {ValueGradProduct(step, first),
                                               QueryGradProduct(step, s.scale),
                                               KeyGradProduct(step, s.scale, first)};
      for (const StridedProductSpec& p : after_rows) {
        bool done;
        MNT_RETURN_IF_ERROR(RunProduct(b, *a.op, s, p, buf, &done));
        if (!done) return Refused(b, *a.op, s, FallbackReason::kGemmBackward, p);
      }
    }
  }
  *ran = true;
  return Status::Ok();
}

}  // namespace mnt::cuda
