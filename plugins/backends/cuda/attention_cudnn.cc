#include "plugins/backends/cuda/attention_cudnn.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "plugins/backends/cuda/attention_notice.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/cudnn_graph.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

// Unique ids of the tensors the caller binds (virtual ones count up from
// kFirstVirtual).
enum Uid : int64_t {
  kQ = 1, kK = 2, kV = 3, kO = 4, kStats = 5, kScale = 6, kNegInf = 7,
  kdO = 8, kdQ = 9, kdK = 10, kdV = 11, kOne = 12, kSoftmaxSum = 13, kdQAccum = 14,
  kFirstVirtual = 100,
};

constexpr size_t kAlign = 256;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

using Dims = std::vector<int64_t>;

// Tensor shapes of one call; C = H*D, qkv rows are 3C wide.
struct Layout {
  int64_t b, h, t, d, c;
  cudnnDataType_t io;
  // Q, K, V (and dQ, dK, dV) inside the packed [B,T,3C] buffer.
  Dims bhtd() const { return {b, h, t, d}; }
  Dims qkv_strides() const { return {t * 3 * c, d, 3 * c, 1}; }
  Dims bhdt() const { return {b, h, d, t}; }  // K^T, V^T views
  Dims qkv_t_strides() const { return {t * 3 * c, d, 1, 3 * c}; }
  Dims o_strides() const { return {t * c, d, c, 1}; }  // O, dO: [B,T,H,D]
  Dims scores() const { return {b, h, t, t}; }
  Dims scores_strides() const { return {h * t * t, t * t, t, 1}; }
  Dims scores_t_strides() const { return {h * t * t, t * t, 1, t}; }
  Dims rows() const { return {b, h, t, 1}; }
  Dims rows_strides() const { return {h * t, t, 1, 1}; }
  Dims dense_bhtd_strides() const { return {h * t * d, t * d, d, 1}; }
};

// Builds tensors with fresh virtual uids.
class SdpaGraph {
 public:
  SdpaGraph(cudnnHandle_t handle, const Layout& l) : g_(handle), l_(l) {}
  GraphBuilder& g() { return g_; }

  Status Bound(int64_t uid, cudnnDataType_t type, Dims dims, Dims strides, CudnnTensor* out) {
    return g_.Tensor({uid, type, std::move(dims), std::move(strides), false, false}, out);
  }
  Status Scalar(int64_t uid, CudnnTensor* out) {
    return g_.Tensor({uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true}, out);
  }
  Status Virtual(cudnnDataType_t type, Dims dims, Dims strides, CudnnTensor* out) {
    return g_.Tensor({next_++, type, std::move(dims), std::move(strides), true, false}, out);
  }
  Status Scores(CudnnTensor* out, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    return Virtual(type, l_.scores(), l_.scores_strides(), out);
  }
  Status RowVector(CudnnTensor* out) {
    return Virtual(CUDNN_DATA_FLOAT, l_.rows(), l_.rows_strides(), out);
  }
  // y = x op b (fp32).
  Status Binary(cudnnPointwiseMode_t mode, CudnnTensor x, CudnnTensor b, CudnnTensor y) {
    return g_.Pointwise(mode, CUDNN_DATA_FLOAT, x, b, nullptr, y);
  }
  Status Unary(cudnnPointwiseMode_t mode, CudnnTensor x, CudnnTensor y) {
    return g_.Pointwise(mode, CUDNN_DATA_FLOAT, x, nullptr, nullptr, y);
  }

  // scores * scale, then (causal) -FLT_MAX where column > row.
  Status ScaleAndMask(CudnnTensor s, CudnnTensor scale, bool causal, CudnnTensor* out) {
    CudnnTensor scaled;
    MNT_RETURN_IF_ERROR(Scores(&scaled));
    MNT_RETURN_IF_ERROR(Binary(CUDNN_POINTWISE_MUL, s, scale, scaled));
    if (!causal) {
      *out = scaled;
      return Status::Ok();
    }
    CudnnTensor neg_inf, row, col, keep, masked;
    MNT_RETURN_IF_ERROR(Scalar(kNegInf, &neg_inf));
    MNT_RETURN_IF_ERROR(Scores(&row, CUDNN_DATA_INT32));
    MNT_RETURN_IF_ERROR(Scores(&col, CUDNN_DATA_INT32));
    MNT_RETURN_IF_ERROR(Scores(&keep, CUDNN_DATA_BOOLEAN));
    MNT_RETURN_IF_ERROR(Scores(&masked));
    MNT_RETURN_IF_ERROR(g_.Pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, scaled,
                                     nullptr, nullptr, row, 2));
    MNT_RETURN_IF_ERROR(g_.Pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, scaled,
                                     nullptr, nullptr, col, 3));
    MNT_RETURN_IF_ERROR(g_.Pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col,
                                     nullptr, keep));
    MNT_RETURN_IF_ERROR(g_.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, scaled,
                                     neg_inf, keep, masked));
    *out = masked;
    return Status::Ok();
  }

 private:
  GraphBuilder g_;
  Layout l_;
  int64_t next_ = kFirstVirtual;
};

// O = softmax(mask(scale * Q K^T)) V, Stats = rowwise logsumexp.
Status BuildForward(cudnnHandle_t handle, const Layout& l, bool causal, CudnnPlan* plan) {
  SdpaGraph sg(handle, l);
  CudnnTensor q, kt, v, o, stats, scale;
  MNT_RETURN_IF_ERROR(sg.Bound(kQ, l.io, l.bhtd(), l.qkv_strides(), &q));
  MNT_RETURN_IF_ERROR(sg.Bound(kK, l.io, l.bhdt(), l.qkv_t_strides(), &kt));
  MNT_RETURN_IF_ERROR(sg.Bound(kV, l.io, l.bhtd(), l.qkv_strides(), &v));
  MNT_RETURN_IF_ERROR(sg.Bound(kO, l.io, l.bhtd(), l.o_strides(), &o));
  MNT_RETURN_IF_ERROR(sg.Bound(kStats, CUDNN_DATA_FLOAT, l.rows(), l.rows_strides(), &stats));
  MNT_RETURN_IF_ERROR(sg.Scalar(kScale, &scale));
  CudnnTensor s, masked, max, shifted, e, sum, log_sum, p;
  MNT_RETURN_IF_ERROR(sg.Scores(&s));
  MNT_RETURN_IF_ERROR(sg.g().Matmul(q, kt, s));
  MNT_RETURN_IF_ERROR(sg.ScaleAndMask(s, scale, causal, &masked));
  MNT_RETURN_IF_ERROR(sg.RowVector(&max));
  MNT_RETURN_IF_ERROR(sg.g().Reduce(CUDNN_REDUCE_TENSOR_MAX, masked, max));
  MNT_RETURN_IF_ERROR(sg.Scores(&shifted));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_SUB, masked, max, shifted));
  MNT_RETURN_IF_ERROR(sg.Scores(&e));
  MNT_RETURN_IF_ERROR(sg.Unary(CUDNN_POINTWISE_EXP, shifted, e));
  MNT_RETURN_IF_ERROR(sg.RowVector(&sum));
  MNT_RETURN_IF_ERROR(sg.g().Reduce(CUDNN_REDUCE_TENSOR_ADD, e, sum));
  MNT_RETURN_IF_ERROR(sg.RowVector(&log_sum));
  MNT_RETURN_IF_ERROR(sg.Unary(CUDNN_POINTWISE_LOG, sum, log_sum));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_ADD, max, log_sum, stats));
  // The probabilities enter the second matmul in the I/O type (as cuDNN's
  // fused engines require).
  MNT_RETURN_IF_ERROR(sg.Scores(&p, l.io));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_DIV, e, sum, p));
  MNT_RETURN_IF_ERROR(sg.g().Matmul(p, v, o));
  return sg.g().Build("the SDPA forward graph", plan);
}

// dV = P^T dO, dS = P * (dO V^T - rowsum(dO * O)) * scale, dK = dS^T Q,
// dQ = dS K (accumulated in fp32 workspace, then stored).
Status BuildBackward(cudnnHandle_t handle, const Layout& l, bool causal, CudnnPlan* plan) {
  SdpaGraph sg(handle, l);
  CudnnTensor q, kt, vt, o, stats, scale, one, d_o, dq, dk, dv, softmax_sum, dq_accum;
  MNT_RETURN_IF_ERROR(sg.Bound(kQ, l.io, l.bhtd(), l.qkv_strides(), &q));
  MNT_RETURN_IF_ERROR(sg.Bound(kK, l.io, l.bhdt(), l.qkv_t_strides(), &kt));
  MNT_RETURN_IF_ERROR(sg.Bound(kV, l.io, l.bhdt(), l.qkv_t_strides(), &vt));
  MNT_RETURN_IF_ERROR(sg.Bound(kO, l.io, l.bhtd(), l.o_strides(), &o));
  MNT_RETURN_IF_ERROR(sg.Bound(kdO, l.io, l.bhtd(), l.o_strides(), &d_o));
  MNT_RETURN_IF_ERROR(sg.Bound(kStats, CUDNN_DATA_FLOAT, l.rows(), l.rows_strides(), &stats));
  MNT_RETURN_IF_ERROR(sg.Bound(kdQ, l.io, l.bhtd(), l.qkv_strides(), &dq));
  MNT_RETURN_IF_ERROR(sg.Bound(kdK, l.io, l.bhtd(), l.qkv_strides(), &dk));
  MNT_RETURN_IF_ERROR(sg.Bound(kdV, l.io, l.bhtd(), l.qkv_strides(), &dv));
  MNT_RETURN_IF_ERROR(sg.Bound(kSoftmaxSum, CUDNN_DATA_FLOAT, l.rows(), l.rows_strides(),
                               &softmax_sum));
  MNT_RETURN_IF_ERROR(sg.Bound(kdQAccum, CUDNN_DATA_FLOAT, l.bhtd(), l.dense_bhtd_strides(),
                               &dq_accum));
  MNT_RETURN_IF_ERROR(sg.Scalar(kScale, &scale));
  MNT_RETURN_IF_ERROR(sg.Scalar(kOne, &one));

  // softmax_sum = rowsum(dO * O) (the "delta" of the flash backward).
  CudnnTensor do_o, row_sum;
  MNT_RETURN_IF_ERROR(sg.Virtual(CUDNN_DATA_FLOAT, l.bhtd(), l.dense_bhtd_strides(), &do_o));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_MUL, d_o, o, do_o));
  MNT_RETURN_IF_ERROR(sg.RowVector(&row_sum));
  MNT_RETURN_IF_ERROR(sg.g().Reduce(CUDNN_REDUCE_TENSOR_ADD, do_o, row_sum));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_MUL, row_sum, one, softmax_sum));

  // P = exp(mask(scale * Q K^T) - stats); dV = P^T dO.
  CudnnTensor s, masked, shifted, p, p_t;
  MNT_RETURN_IF_ERROR(sg.Scores(&s));
  MNT_RETURN_IF_ERROR(sg.g().Matmul(q, kt, s));
  MNT_RETURN_IF_ERROR(sg.ScaleAndMask(s, scale, causal, &masked));
  MNT_RETURN_IF_ERROR(sg.Scores(&shifted));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_SUB, masked, stats, shifted));
  MNT_RETURN_IF_ERROR(sg.Scores(&p));
  MNT_RETURN_IF_ERROR(sg.Unary(CUDNN_POINTWISE_EXP, shifted, p));
  MNT_RETURN_IF_ERROR(sg.Virtual(l.io, l.scores(), l.scores_t_strides(), &p_t));
  MNT_RETURN_IF_ERROR(sg.g().Reshape(p, p_t));
  MNT_RETURN_IF_ERROR(sg.g().Matmul(p_t, d_o, dv));

  // dS = (dO V^T - softmax_sum) * P * scale; dK = dS^T Q.
  CudnnTensor dp, dp1, dp2, ds_unscaled, ds, ds_t;
  MNT_RETURN_IF_ERROR(sg.Scores(&dp));
  MNT_RETURN_IF_ERROR(sg.g().Matmul(d_o, vt, dp));
  MNT_RETURN_IF_ERROR(sg.Scores(&dp1));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_MUL, dp, one, dp1));
  MNT_RETURN_IF_ERROR(sg.Scores(&dp2));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_SUB, dp1, softmax_sum, dp2));
  MNT_RETURN_IF_ERROR(sg.Scores(&ds_unscaled));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_MUL, dp2, p, ds_unscaled));
  MNT_RETURN_IF_ERROR(sg.Scores(&ds));
  MNT_RETURN_IF_ERROR(sg.Binary(CUDNN_POINTWISE_MUL, ds_unscaled, scale, ds));
  MNT_RETURN_IF_ERROR(sg.Virtual(l.io, l.scores(), l.scores_t_strides(), &ds_t));
  MNT_RETURN_IF_ERROR(sg.g().Reshape(ds, ds_t));
  MNT_RETURN_IF_ERROR(sg.g().Matmul(ds_t, q, dk));

  // dQ = dS K, through the fp32 accumulator.
  CudnnTensor k;
  MNT_RETURN_IF_ERROR(sg.Virtual(l.io, l.bhtd(), l.qkv_strides(), &k));
  MNT_RETURN_IF_ERROR(sg.g().Reshape(kt, k));
  MNT_RETURN_IF_ERROR(sg.g().Matmul(ds, k, dq_accum));
  MNT_RETURN_IF_ERROR(sg.Unary(CUDNN_POINTWISE_IDENTITY, dq_accum, dq));
  return sg.g().Build("the SDPA backward graph", plan);
}

bool Is16Bit(MNT_DType t) { return t == MNT_DTYPE_BF16 || t == MNT_DTYPE_F16; }

// "" when this device, cuDNN and shape can run fused SDPA, else why not.
std::string Unsupported(const CudaBackend& b, const AttentionDims& s) {
  const size_t version = cudnnGetVersion();
  if (version < 90000) {
    return sdk::Format("the loaded cuDNN is %zu; SDPA with any T needs 9.0 or newer", version);
  }
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, b.device) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, b.device) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    return "the device's compute capability could not be read";
  }
  if (major < 8) {
    return sdk::Format("the device is sm_%d%d; cuDNN SDPA needs sm_80 or newer", major, minor);
  }
  if (s.d % 8 != 0 || s.d > 128) {
    return sdk::Format("head dim D=%lld; cuDNN SDPA needs a multiple of 8, at most 128",
                       (long long)s.d);
  }
  return "";
}

Status EnsureCudnnHandle(CudaBackend& b) {
  if (b.cudnn == nullptr) {
    MNT_CUDNN_RETURN_IF_ERROR(cudnnCreate(&b.cudnn), "cudnnCreate");
  }
  MNT_CUDNN_RETURN_IF_ERROR(cudnnSetStream(b.cudnn, b.stream), "cudnnSetStream");
  return Status::Ok();
}

enum class Direction { kForward, kBackward };

// The cached plan for this call (checking support and building it on first
// use), or nullptr with *why set when cuDNN cannot run it. The lookup is by
// value (AttentionPlanKey): nothing is formatted on a hit.
Status GetPlan(CudaBackend& b, Direction dir, const AttentionDims& s, MNT_DType dtype,
               const CudnnPlan** out, const std::string** why) {
  *out = nullptr;
  AttentionPlanKey key;
  key.what = dir == Direction::kForward ? 0 : 1;
  key.dtype = static_cast<int32_t>(dtype);
  key.causal = s.causal ? 1 : 0;
  key.b = s.b, key.h = s.h, key.t = s.t, key.d = s.d;
  auto it = b.sdpa_plans.find(key);
  if (it == b.sdpa_plans.end()) {
    auto plan = std::make_unique<CudnnPlan>();
    plan->failure = Unsupported(b, s);
    if (plan->failure.empty()) {
      MNT_RETURN_IF_ERROR(EnsureCudnnHandle(b));
      const Layout l{s.b, s.h, s.t, s.d, s.c,
                     dtype == MNT_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF};
      const Status built = dir == Direction::kForward
                               ? BuildForward(b.cudnn, l, s.causal, plan.get())
                               : BuildBackward(b.cudnn, l, s.causal, plan.get());
      if (!built.ok()) {
        plan = std::make_unique<CudnnPlan>();
        plan->failure = built.message();
      }
    }
    it = b.sdpa_plans.emplace(key, std::move(plan)).first;
  }
  if (!it->second->failure.empty()) {
    *why = &it->second->failure;
    return Status::Ok();
  }
  *out = it->second.get();
  return Status::Ok();
}

// Whether to go on with cuDNN: false (run the fallback) for
// attention=fallback and (with auto or gemm) what cuDNN cannot run. The
// caller (attention.cu, attention_route.h) only comes here for operands of
// one 16-bit dtype.
Status Choose(CudaBackend& b, const OpCall& call, Direction dir, const AttentionDims& s,
              std::initializer_list<const Operand*> io, const CudnnPlan** plan) {
  *plan = nullptr;
  const AttentionImpl impl = b.options.attention;
  if (impl == AttentionImpl::kFallback || s.b * s.h * s.t == 0) return Status::Ok();
  const MNT_DType dtype = (**io.begin())->dtype;
  for (const Operand* o : io) {
    if ((*o)->dtype != dtype || !Is16Bit((*o)->dtype)) {
      return sdk::Internal(sdk::Format("%s: cuDNN SDPA was asked to run %s storage",
                                       call.op_name(), sdk::DTypeName((*o)->dtype)));
    }
  }
  const std::string* why = nullptr;
  MNT_RETURN_IF_ERROR(GetPlan(b, dir, s, dtype, plan, &why));
  if (*plan != nullptr) return Status::Ok();
  if (impl == AttentionImpl::kCudnn) {
    return sdk::Unimplemented(sdk::Format("%s: attention=cudnn, but cuDNN SDPA cannot run "
                                          "B=%lld H=%lld T=%lld D=%lld: %s",
                                          call.op_name(), (long long)s.b, (long long)s.h,
                                          (long long)s.t, (long long)s.d, why->c_str()));
  }
  SayAttentionFallback(b, s,
                       dir == Direction::kForward ? FallbackReason::kCudnnForwardPlan
                                                  : FallbackReason::kCudnnBackwardPlan,
                       dtype, [&] { return *why; });
  return Status::Ok();
}

char* At(const Operand& t, int64_t elements) {
  return static_cast<char*>(t->data) + elements * sdk::DTypeSize(t->dtype);
}

}  // namespace

Status MaybeCudnnAttentionForward(CudaBackend& b, const OpCall& call, const AttentionDims& s,
                                  const Operand& qkv, const Operand& y, const Operand& lse,
                                  bool* ran) {
  *ran = false;
  const CudnnPlan* plan;
  MNT_RETURN_IF_ERROR(Choose(b, call, Direction::kForward, s, {&qkv, &y}, &plan));
  if (plan == nullptr) return Status::Ok();
  MNT_RETURN_IF_ERROR(EnsureCudnnHandle(b));
  Scratch workspace(b);
  if (plan->workspace_bytes > 0) {
    MNT_RETURN_IF_ERROR(workspace.Allocate(static_cast<size_t>(plan->workspace_bytes)));
  }
  float scale = s.scale;
  float neg_inf = std::numeric_limits<float>::lowest();
  std::vector<int64_t> uids = {kQ, kK, kV, kO, kStats, kScale};
  std::vector<void*> ptrs = {At(qkv, 0), At(qkv, s.c), At(qkv, 2 * s.c), y->data, lse->data,
                             &scale};
  if (s.causal) {
    uids.push_back(kNegInf);
    ptrs.push_back(&neg_inf);
  }
  MNT_RETURN_IF_ERROR(
      ExecuteCudnnPlan(b.cudnn, *plan, uids, ptrs, workspace.data(), call.op_name()));
  *ran = true;
  return Status::Ok();
}

Status MaybeCudnnAttentionBackward(CudaBackend& b, const OpCall& call, const AttentionDims& s,
                                   const Operand& dy, const Operand& qkv, const Operand& y,
                                   const Operand& lse, const Operand& dqkv, bool* ran) {
  *ran = false;
  const CudnnPlan* plan;
  MNT_RETURN_IF_ERROR(
      Choose(b, call, Direction::kBackward, s, {&dy, &qkv, &y, &dqkv}, &plan));
  if (plan == nullptr) return Status::Ok();
  MNT_RETURN_IF_ERROR(EnsureCudnnHandle(b));
  // [plan workspace | softmax_sum f32 [B,H,T] | dQ accumulator f32 [B,H,T,D]]
  const size_t plan_bytes = AlignUp(static_cast<size_t>(plan->workspace_bytes));
  const size_t sum_bytes = AlignUp(sizeof(float) * s.b * s.h * s.t);
  const size_t accum_bytes = sizeof(float) * s.b * s.h * s.t * s.d;
  Scratch workspace(b);
  MNT_RETURN_IF_ERROR(workspace.Allocate(plan_bytes + sum_bytes + accum_bytes));
  char* base = static_cast<char*>(workspace.data());
  void* softmax_sum = base + plan_bytes;
  void* dq_accum = base + plan_bytes + sum_bytes;
  MNT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dq_accum, 0, accum_bytes, b.stream),
                           sdk::Format("%s: cudaMemsetAsync(dQ accumulator)", call.op_name()));
  float scale = s.scale, one = 1.0f;
  float neg_inf = std::numeric_limits<float>::lowest();
  std::vector<int64_t> uids = {kQ,  kK,  kV,  kO,    kdO,         kStats,  kdQ,
                               kdK, kdV, kScale, kOne, kSoftmaxSum, kdQAccum};
  std::vector<void*> ptrs = {At(qkv, 0),  At(qkv, s.c),  At(qkv, 2 * s.c), y->data,
                             dy->data,    lse->data,     At(dqkv, 0),      At(dqkv, s.c),
                             At(dqkv, 2 * s.c), &scale,  &one,             softmax_sum,
                             dq_accum};
  if (s.causal) {
    uids.push_back(kNegInf);
    ptrs.push_back(&neg_inf);
  }
  MNT_RETURN_IF_ERROR(ExecuteCudnnPlan(b.cudnn, *plan, uids, ptrs, base, call.op_name()));
  *ran = true;
  return Status::Ok();
}

}  // namespace mnt::cuda
