// The index and blocking plan of fp32 attention as cuBLASLt GEMMs
// (attention_gemm.cu): which query rows a block holds, which keys it sees,
// how many heads one strided-batched GEMM takes, how much score scratch
// that needs, and where every operand of every product lies in the ABI's
// packed layout (qkv [B,T,3C], y/dy [B,T,C], lse [B,H,T]). Host-only and
// free of CUDA, so the CPU checks the plan and replays it with a naive GEMM
// against float64 (attention_gemm_plan_test.cc); the kernels read the same
// row bookkeeping (MNT_HOST_DEVICE).
//
// Why this shape of plan:
//   - Heads of one sequence are a strided batch: head h of row t starts D
//     elements after head h-1, so one stride (D) walks them with the packed
//     row length (3C, or C) as leading dimension; no copy of Q, K, V. Heads
//     of different sequences are T*3C apart, which no single stride
//     matches, so sequences are separate GEMMs.
//   - Query rows go in blocks, as in the CPU backend (cpu/attention.cc): a
//     causal block multiplies only the keys up to its last row, so the
//     masked upper triangle is mostly skipped. GPU blocks are larger (256
//     rows causal, the whole sequence otherwise): bigger GEMMs, fewer
//     launches.
//   - Scores live in fp32 scratch [heads, rows, keys] with rows padded to a
//     multiple of 4 floats (16 bytes, so every score row is as aligned as
//     tensor-core kernels want whatever T), bounded by a byte budget: the
//     budget sets the heads per GEMM (then, for very long sequences, fewer
//     rows per block).
//   - The backward runs its blocks last to first: the last block sees every
//     key (causal or not), so its dK and dV products overwrite (beta 0) and
//     the earlier blocks add to them (beta 1); nothing is zeroed first.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_GEMM_PLAN_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_GEMM_PLAN_H_

#include <cstddef>
#include <cstdint>

#include "plugins/backends/common/host_device.h"

namespace mnt::cuda {

// Query rows per causal block: at T=1024, 4 blocks compute 62.5% of the full
// score matrix (the triangle is 50%), each GEMM still 256 rows tall.
constexpr int64_t kAttentionGemmCausalRows = 256;
// Score scratch of one call (both buffers of the backward together).
constexpr size_t kAttentionGemmScratchBudget = size_t{256} << 20;

// What the plan needs of a call (attention's AttentionShape, without the
// scale; plain data so kernels take it by value).
struct AttentionGemmDims {
  int64_t b, t, h, d;
  bool causal;
  MNT_HOST_DEVICE int64_t c() const { return h * d; }
};

// Floats between score rows of `keys` keys: padded to 16 bytes.
MNT_HOST_DEVICE inline int64_t ScoreRowPitch(int64_t keys) { return (keys + 3) / 4 * 4; }

// Score buffers a direction keeps: the forward's probabilities; the
// backward's probabilities and score gradients.
constexpr int kForwardScoreBuffers = 1;
constexpr int kBackwardScoreBuffers = 2;

struct AttentionGemmPlan {
  int64_t block_rows = 0;       // query rows per block (the last may be fewer)
  int64_t blocks = 0;           // ceil(T / block_rows)
  int64_t heads_per_chunk = 0;  // heads of one sequence per GEMM batch
  int64_t chunks = 0;           // per sequence: ceil(H / heads_per_chunk)
  int64_t buffer_floats = 0;    // one buffer: heads_per_chunk * block_rows * pitch(T)
  int buffers = 0;
  size_t scratch_bytes = 0;     // buffers * buffer_floats * 4
};

// The plan for `dims` with `buffers` score buffers (rows of
// ScoreRowPitch(T) floats) in at most `budget` bytes: blocks of `causal_rows` query rows when causal, of the whole
// sequence otherwise, and as many heads per chunk as the budget then
// allows; for a budget too small for one head, fewer rows per block. Never
// fewer than one row and one head (a budget below one score row per
// buffer is exceeded by that one row). T, H > 0. (The tests pass small
// budgets and blocks to get many blocks and chunks out of small shapes.)
inline AttentionGemmPlan PlanAttentionGemm(const AttentionGemmDims& dims, int buffers,
                                           size_t budget = kAttentionGemmScratchBudget,
                                           int64_t causal_rows = kAttentionGemmCausalRows) {
  AttentionGemmPlan p;
  p.buffers = buffers;
  const int64_t row_bytes =
      static_cast<int64_t>(sizeof(float)) * buffers * ScoreRowPitch(dims.t);
  const int64_t budget_rows = static_cast<int64_t>(budget) / row_bytes;
  int64_t rows = dims.causal && dims.t > causal_rows ? causal_rows : dims.t;
  if (rows > budget_rows) rows = budget_rows > 0 ? budget_rows : 1;
  p.block_rows = rows;
  p.blocks = (dims.t + rows - 1) / rows;
  int64_t heads = budget_rows / rows;
  if (heads > dims.h) heads = dims.h;
  if (heads < 1) heads = 1;
  p.heads_per_chunk = heads;
  p.chunks = (dims.h + heads - 1) / heads;
  p.buffer_floats = heads * rows * ScoreRowPitch(dims.t);
  p.scratch_bytes = sizeof(float) * static_cast<size_t>(buffers * p.buffer_floats);
  return p;
}

// One GEMM batch's heads: heads [h0, h0 + heads) of sequence b.
struct HeadChunk {
  int64_t b, h0, heads;
};
// Chunk `index` in [0, B * plan.chunks), sequence by sequence.
inline HeadChunk ChunkAt(const AttentionGemmDims& dims, const AttentionGemmPlan& plan,
                         int64_t index) {
  const int64_t b = index / plan.chunks, h0 = (index % plan.chunks) * plan.heads_per_chunk;
  const int64_t left = dims.h - h0;
  return HeadChunk{b, h0, left < plan.heads_per_chunk ? left : plan.heads_per_chunk};
}

// Query rows [r0, r0 + rows) and the keys [0, keys) that any of them sees.
struct QueryBlock {
  int64_t r0, rows, keys;
};
inline QueryBlock BlockAt(const AttentionGemmDims& dims, const AttentionGemmPlan& plan,
                          int64_t index) {
  const int64_t r0 = index * plan.block_rows;
  const int64_t left = dims.t - r0;
  const int64_t rows = left < plan.block_rows ? left : plan.block_rows;
  return QueryBlock{r0, rows, dims.causal ? r0 + rows : dims.t};
}

// The backward's i-th block: last to first (see the top of the file).
inline int64_t BackwardBlockIndex(const AttentionGemmPlan& plan, int64_t i) {
  return plan.blocks - 1 - i;
}

// One (chunk, block) step: what the row kernels need, by value.
struct AttentionGemmStep {
  AttentionGemmDims dims;
  HeadChunk chunk;
  QueryBlock block;
  // Row g in [0, rows()) is query block.r0 + g % block.rows of head
  // chunk.h0 + g / block.rows.
  MNT_HOST_DEVICE int64_t rows() const { return chunk.heads * block.rows; }
};

// Where score row g of a step lies, and what it belongs to.
struct ScoreRow {
  int64_t scores;   // first element in a score buffer (ld = ScoreRowPitch(keys))
  int64_t query;    // position in the sequence
  int64_t visible;  // keys [0, visible) are visible, the rest of the row masked
  int64_t lse;      // element of lse [B,H,T]
  int64_t out;      // first element of the head's row in y / dy [B,T,C]
};
MNT_HOST_DEVICE inline ScoreRow ScoreRowAt(const AttentionGemmStep& s, int64_t g) {
  const int64_t j = g / s.block.rows, i = g % s.block.rows;
  const int64_t head = s.chunk.h0 + j, query = s.block.r0 + i;
  ScoreRow r;
  r.scores = (j * s.block.rows + i) * ScoreRowPitch(s.block.keys);
  r.query = query;
  r.visible = s.dims.causal ? query + 1 : s.dims.t;
  r.lse = (s.chunk.b * s.dims.h + head) * s.dims.t + query;
  r.out = (s.chunk.b * s.dims.t + query) * s.dims.c() + head * s.dims.d;
  return r;
}

// ---- The products, row-major -------------------------------------------------

// The buffers a product reads or writes; offsets are in elements from the
// buffer's start.
enum class AttentionBuffer : int32_t {
  kQkv,         // qkv [B,T,3C]
  kOut,         // y [B,T,C]
  kOutGrad,     // dy [B,T,C]
  kQkvGrad,     // dqkv [B,T,3C]
  kProbs,       // score buffer 0: probabilities (scratch)
  kScoreGrads,  // score buffer 1: dP, then dS in place (scratch)
};

// Batch entry j's matrix: element (r, col) at offset + j * stride + r * ld + col.
struct MatrixRef {
  AttentionBuffer buffer;
  int64_t offset, ld, stride;
};

// C[j] = alpha * op(A[j]) op(B[j]) + beta * C[j] for j < batch, row-major,
// C[j] m x n, op(A[j]) m x k, op(B[j]) k x n; A stored k x m when trans_a,
// B stored n x k when trans_b.
struct StridedProductSpec {
  int64_t m, n, k, batch;
  bool trans_a, trans_b;
  MatrixRef a, b, c;
  float alpha, beta;
};

// Offsets of a step's operands in the packed layout.
struct StepOperands {
  const AttentionGemmStep& s;
  int64_t qkv_ld() const { return 3 * s.dims.c(); }
  // Head chunk.h0's q (which 0), k (1) or v (2) at sequence row `row`.
  int64_t Qkv(int which, int64_t row) const {
    return (s.chunk.b * s.dims.t + row) * qkv_ld() + which * s.dims.c() +
           s.chunk.h0 * s.dims.d;
  }
  // Head chunk.h0's part of a [B,T,C] row.
  int64_t Out(int64_t row) const {
    return (s.chunk.b * s.dims.t + row) * s.dims.c() + s.chunk.h0 * s.dims.d;
  }
  MatrixRef QkvRef(AttentionBuffer buf, int which, int64_t row) const {
    return MatrixRef{buf, Qkv(which, row), qkv_ld(), s.dims.d};
  }
  MatrixRef OutRef(AttentionBuffer buf, int64_t row) const {
    return MatrixRef{buf, Out(row), s.dims.c(), s.dims.d};
  }
  MatrixRef ScoresRef(AttentionBuffer buf) const {
    const int64_t pitch = ScoreRowPitch(s.block.keys);
    return MatrixRef{buf, 0, pitch, s.block.rows * pitch};
  }
};

// S = Q_blk K^T into `scores` (unscaled; the row kernels scale).
inline StridedProductSpec ScoresProduct(const AttentionGemmStep& s, AttentionBuffer scores) {
  const StepOperands o{s};
  return {s.block.rows, s.block.keys, s.dims.d, s.chunk.heads, false, true,
          o.QkvRef(AttentionBuffer::kQkv, 0, s.block.r0), o.QkvRef(AttentionBuffer::kQkv, 1, 0),
          o.ScoresRef(scores), 1.0f, 0.0f};
}

// Forward: Y_blk = P V.
inline StridedProductSpec OutputProduct(const AttentionGemmStep& s) {
  const StepOperands o{s};
  return {s.block.rows, s.dims.d, s.block.keys, s.chunk.heads, false, false,
          o.ScoresRef(AttentionBuffer::kProbs), o.QkvRef(AttentionBuffer::kQkv, 2, 0),
          o.OutRef(AttentionBuffer::kOut, s.block.r0), 1.0f, 0.0f};
}

// Backward: dP = dY_blk V^T.
inline StridedProductSpec ProbGradProduct(const AttentionGemmStep& s) {
  const StepOperands o{s};
  return {s.block.rows, s.block.keys, s.dims.d, s.chunk.heads, false, true,
          o.OutRef(AttentionBuffer::kOutGrad, s.block.r0), o.QkvRef(AttentionBuffer::kQkv, 2, 0),
          o.ScoresRef(AttentionBuffer::kScoreGrads), 1.0f, 0.0f};
}

// Backward: dV[0, keys) (+)= P^T dY_blk; `first` (the first block the
// backward runs, which sees every key) overwrites.
inline StridedProductSpec ValueGradProduct(const AttentionGemmStep& s, bool first) {
  const StepOperands o{s};
  return {s.block.keys, s.dims.d, s.block.rows, s.chunk.heads, true, false,
          o.ScoresRef(AttentionBuffer::kProbs), o.OutRef(AttentionBuffer::kOutGrad, s.block.r0),
          o.QkvRef(AttentionBuffer::kQkvGrad, 2, 0), 1.0f, first ? 0.0f : 1.0f};
}

// Backward: dQ_blk = scale dS K (dS unscaled in the score-gradient buffer).
inline StridedProductSpec QueryGradProduct(const AttentionGemmStep& s, float scale) {
  const StepOperands o{s};
  return {s.block.rows, s.dims.d, s.block.keys, s.chunk.heads, false, false,
          o.ScoresRef(AttentionBuffer::kScoreGrads), o.QkvRef(AttentionBuffer::kQkv, 1, 0),
          o.QkvRef(AttentionBuffer::kQkvGrad, 0, s.block.r0), scale, 0.0f};
}

// Backward: dK[0, keys) (+)= scale dS^T Q_blk.
inline StridedProductSpec KeyGradProduct(const AttentionGemmStep& s, float scale, bool first) {
  const StepOperands o{s};
  return {s.block.keys, s.dims.d, s.block.rows, s.chunk.heads, true, false,
          o.ScoresRef(AttentionBuffer::kScoreGrads), o.QkvRef(AttentionBuffer::kQkv, 0, s.block.r0),
          o.QkvRef(AttentionBuffer::kQkvGrad, 1, 0), scale, first ? 0.0f : 1.0f};
}

// Where a score buffer starts in the call's scratch (in floats).
inline int64_t ScoreBufferOffset(const AttentionGemmPlan& plan, AttentionBuffer buffer) {
  return buffer == AttentionBuffer::kScoreGrads ? plan.buffer_floats : 0;
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_GEMM_PLAN_H_
