// CONV2D_FORWARD / BACKWARD_DATA / BACKWARD_FILTER through cuDNN 9's legacy
// convolution API (cudnnConvolutionForward / BackwardData / BackwardFilter),
// NCHW, one path per compute mode:
//   F32  -> fp32 tensors, CUDNN_FMA_MATH (no TF32 tensor cores),
//   TF32 -> fp32 tensors, CUDNN_TENSOR_OP_MATH (TF32 allowed),
//   BF16 / F16 -> 16-bit tensors when the output is stored in that format,
//     else fp32 tensors holding the rounded operands (conv_io.h: an fp32
//     output is never rounded through 16 bits), CUDNN_TENSOR_OP_MATH,
// always with an fp32 compute type (accumulation) in the convolution
// descriptor. cuDNN wants every tensor in one dtype, so operands stored
// otherwise are staged (rounded to the compute format, as the CPU reference
// does) and outputs stored otherwise are produced in fp32 scratch, then
// converted (or added, with accumulate): one rounding, from fp32. Algorithms come from the cudnnGet*_v7
// heuristics (cheap and repeatable), deterministic ones preferred; their
// workspace comes from the backend's allocator. Descriptors and algorithm
// are made once per configuration (ConvPlanKey: direction, shape, geometry,
// io dtype, mode) and reused, so a call that hits the cache creates no
// descriptor and formats no string. The bias add and dbias are our own
// deterministic channel kernels (conv.cu); a forward with a bias runs on fp32
// io (conv_io.h), so a 16-bit output is rounded once, after the bias.
// Operands and shapes arrive checked (plugins/backends/common/calls/conv.h).
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/conv.h"
#include "plugins/backends/cuda/conv_io.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/elementwise.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using backend::ConvShape;
using sdk::Status;

namespace {

// Largest workspace an algorithm may ask for; bigger ones are skipped.
constexpr size_t kMaxWorkspaceBytes = size_t{512} << 20;

cudnnDataType_t CudnnType(MNT_DType t) {
  switch (t) {
    case MNT_DTYPE_BF16: return CUDNN_DATA_BFLOAT16;
    case MNT_DTYPE_F16: return CUDNN_DATA_HALF;
    default: return CUDNN_DATA_FLOAT;
  }
}

enum class ConvKind { kForward, kBackwardData, kBackwardFilter };

const char* KindName(ConvKind kind) {
  switch (kind) {
    case ConvKind::kForward: return "fwd";
    case ConvKind::kBackwardData: return "bwd_data";
    default: return "bwd_filter";
  }
}

Status EnsureHandle(CudaBackend& b) {
  if (b.cudnn == nullptr) {
    MNT_CUDNN_RETURN_IF_ERROR(cudnnCreate(&b.cudnn), "cudnnCreate");
  }
  MNT_CUDNN_RETURN_IF_ERROR(cudnnSetStream(b.cudnn, b.stream), "cudnnSetStream");
  return Status::Ok();
}

Status MakeDescriptors(const ConvShape& sh, const MNT_Conv2dParams& p, MNT_DType io,
                       ConvPlan* d) {
  const cudnnDataType_t t = CudnnType(io);
  MNT_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&d->x), "cudnnCreateTensorDescriptor");
  MNT_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&d->y), "cudnnCreateTensorDescriptor");
  MNT_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&d->w), "cudnnCreateFilterDescriptor");
  MNT_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&d->conv),
                            "cudnnCreateConvolutionDescriptor");
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, t, (int)sh.n, (int)sh.c,
                                 (int)sh.h, (int)sh.w),
      sdk::Format("cudnnSetTensor4dDescriptor(x [%lld, %lld, %lld, %lld])",
                  (long long)sh.n, (long long)sh.c, (long long)sh.h, (long long)sh.w));
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, t, (int)sh.n, (int)sh.k,
                                 (int)sh.p, (int)sh.q),
      sdk::Format("cudnnSetTensor4dDescriptor(y [%lld, %lld, %lld, %lld])",
                  (long long)sh.n, (long long)sh.k, (long long)sh.p, (long long)sh.q));
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnSetFilter4dDescriptor(d->w, t, CUDNN_TENSOR_NCHW, (int)sh.k, (int)sh.cg,
                                 (int)sh.r, (int)sh.s),
      "cudnnSetFilter4dDescriptor");
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolution2dDescriptor(d->conv, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
                                      p.dilation_h, p.dilation_w,
                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor");
  MNT_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(d->conv, (int)sh.groups),
                            "cudnnSetConvolutionGroupCount");
  const cudnnMathType_t math =
      p.compute == MNT_COMPUTE_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  MNT_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d->conv, math),
                            "cudnnSetConvolutionMathType");
  return Status::Ok();
}

// First acceptable heuristic answer: succeeded, within the workspace limit,
// no tensor-op math in the fp32 mode, never a down-conversion of fp32
// tensors to fp16 (it would round bf16/tf32 operands to another format),
// deterministic if any is.
template <typename Perf>
bool PickFrom(const Perf* perf, int count, MNT_ComputeMode mode, MNT_DType io,
              ConvAlgoChoice* out) {
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < count; ++i) {
      const Perf& r = perf[i];
      if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxWorkspaceBytes) continue;
      if (mode == MNT_COMPUTE_F32 && (r.mathType == CUDNN_TENSOR_OP_MATH ||
                                      r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) {
        continue;
      }
      if (io == MNT_DTYPE_F32 && r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
      if (pass == 0 && r.determinism != CUDNN_DETERMINISTIC) continue;
      out->algo = static_cast<int>(r.algo);
      out->math = mode == MNT_COMPUTE_F32 ? CUDNN_FMA_MATH : r.mathType;
      return true;
    }
  }
  return false;
}

ConvPlanKey PlanKey(ConvKind kind, const ConvShape& sh, const MNT_Conv2dParams& p,
                    MNT_DType io) {
  ConvPlanKey key;
  key.kind = static_cast<int32_t>(kind);
  key.n = sh.n, key.c = sh.c, key.h = sh.h, key.w = sh.w;
  key.k = sh.k, key.r = sh.r, key.s = sh.s, key.groups = sh.groups;
  key.pad_h = p.pad_h, key.pad_w = p.pad_w;
  key.stride_h = p.stride_h, key.stride_w = p.stride_w;
  key.dil_h = p.dilation_h, key.dil_w = p.dilation_w;
  key.io_dtype = static_cast<int32_t>(io);
  key.compute = static_cast<int32_t>(p.compute);
  return key;
}

// The configuration in words, for the one message that names it.
std::string DescribeConfig(const ConvShape& sh, const MNT_Conv2dParams& p, MNT_DType io) {
  return sdk::Format("n%lld c%lld h%lld w%lld k%lld r%lld s%lld g%lld pad%dx%d st%dx%d "
                     "dil%dx%d io %s mode %d",
                     (long long)sh.n, (long long)sh.c, (long long)sh.h, (long long)sh.w,
                     (long long)sh.k, (long long)sh.r, (long long)sh.s, (long long)sh.groups,
                     p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
                     sdk::DTypeName(io), static_cast<int>(p.compute));
}

// The heuristic's algorithm for the plan's descriptors, its math type set on
// the convolution descriptor and its workspace size.
Status ChooseAlgo(CudaBackend& b, const OpCall& call, ConvKind kind,
                  const ConvShape& sh, const MNT_Conv2dParams& p, MNT_DType io,
                  const ConvPlan& d, ConvAlgoChoice* out) {
  ConvAlgoChoice choice;
  int returned = 0;
  bool found = false;
  switch (kind) {
    case ConvKind::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      MNT_CUDNN_RETURN_IF_ERROR(
          cudnnGetConvolutionForwardAlgorithm_v7(b.cudnn, d.x, d.w, d.conv, d.y,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                 &returned, perf),
          "cudnnGetConvolutionForwardAlgorithm_v7");
      found = PickFrom(perf, returned, p.compute, io, &choice);
      break;
    }
    case ConvKind::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      MNT_CUDNN_RETURN_IF_ERROR(
          cudnnGetConvolutionBackwardDataAlgorithm_v7(
              b.cudnn, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
              &returned, perf),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      found = PickFrom(perf, returned, p.compute, io, &choice);
      break;
    }
    case ConvKind::kBackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      MNT_CUDNN_RETURN_IF_ERROR(
          cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              b.cudnn, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
              &returned, perf),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      found = PickFrom(perf, returned, p.compute, io, &choice);
      break;
    }
  }
  if (!found) {
    return sdk::Unimplemented(sdk::Format(
        "%s: cuDNN offers no usable %s algorithm for %s (%d candidates)",
        call.op_name(), KindName(kind), DescribeConfig(sh, p, io).c_str(), returned));
  }
  MNT_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv, choice.math),
                            "cudnnSetConvolutionMathType");
  size_t bytes = 0;
  switch (kind) {
    case ConvKind::kForward:
      MNT_CUDNN_RETURN_IF_ERROR(
          cudnnGetConvolutionForwardWorkspaceSize(
              b.cudnn, d.x, d.w, d.conv, d.y,
              static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), &bytes),
          "cudnnGetConvolutionForwardWorkspaceSize");
      break;
    case ConvKind::kBackwardData:
      MNT_CUDNN_RETURN_IF_ERROR(
          cudnnGetConvolutionBackwardDataWorkspaceSize(
              b.cudnn, d.w, d.y, d.conv, d.x,
              static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), &bytes),
          "cudnnGetConvolutionBackwardDataWorkspaceSize");
      break;
    case ConvKind::kBackwardFilter:
      MNT_CUDNN_RETURN_IF_ERROR(
          cudnnGetConvolutionBackwardFilterWorkspaceSize(
              b.cudnn, d.x, d.y, d.conv, d.w,
              static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo), &bytes),
          "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      break;
  }
  choice.workspace_bytes = bytes;
  *out = choice;
  return Status::Ok();
}

// The cached plan for this configuration, made (descriptors and algorithm)
// on first use; a configuration that fails is not cached.
Status GetPlan(CudaBackend& b, const OpCall& call, ConvKind kind, const ConvShape& sh,
               const MNT_Conv2dParams& p, MNT_DType io, const ConvPlan** out) {
  const ConvPlanKey key = PlanKey(kind, sh, p, io);
  auto it = b.conv_plans.find(key);
  if (it != b.conv_plans.end()) {
    *out = it->second.get();
    return Status::Ok();
  }
  auto plan = std::make_unique<ConvPlan>();
  MNT_RETURN_IF_ERROR(MakeDescriptors(sh, p, io, plan.get()));
  MNT_RETURN_IF_ERROR(ChooseAlgo(b, call, kind, sh, p, io, *plan, &plan->algo));
  *out = b.conv_plans.emplace(key, std::move(plan)).first->second.get();
  return Status::Ok();
}

// An input as cuDNN reads it: in place, or a copy in scratch stored as `io`
// holding the values rounded to the compute format.
Status InputAsIo(CudaBackend& b, const OpCall& call, const Operand& src,
                 MNT_ComputeMode mode, MNT_DType io, Scratch* scratch, DevTensor* out) {
  if (ConvOperandInPlace(src->dtype, mode, io)) {
    *out = Dev(src);
    return Status::Ok();
  }
  const int64_t n = sdk::NumElements(*src);
  MNT_RETURN_IF_ERROR(scratch->Allocate(static_cast<size_t>(n) * sdk::DTypeSize(io)));
  *out = DevTensor{scratch->data(), io};
  return Launched(call, LaunchConvert(b.stream, Dev(src), *out, n, mode), "stage_operand");
}

// Where cuDNN writes an output: the output itself (with beta = accumulate)
// or fp32 scratch (beta = 0) that FinishOutput moves into it.
struct OutputTarget {
  DevTensor io;
  bool staged = false;
  float beta = 0.0f;
};

Status OutputAsIo(const Operand& dst, MNT_DType io, bool accumulate, Scratch* scratch,
                  OutputTarget* out) {
  if (dst->dtype == io) {
    out->io = Dev(dst);
    out->beta = accumulate ? 1.0f : 0.0f;
    return Status::Ok();
  }
  MNT_RETURN_IF_ERROR(scratch->Allocate(static_cast<size_t>(sdk::NumElements(*dst)) *
                                        sdk::DTypeSize(io)));
  out->io = DevTensor{scratch->data(), io};
  out->staged = true;
  return Status::Ok();
}

Status FinishOutput(CudaBackend& b, const OpCall& call, const Operand& dst,
                    const OutputTarget& t, bool accumulate) {
  if (!t.staged) return Status::Ok();
  const int64_t n = sdk::NumElements(*dst);
  if (accumulate) {
    return Launched(call, LaunchAdd(b.stream, t.io, Dev(dst), Dev(dst), n, 1.0f, 1.0f),
                    "accumulate_output");
  }
  return Launched(call, LaunchConvert(b.stream, t.io, Dev(dst), n, MNT_COMPUTE_F32),
                  "store_output");
}

Status Workspace(CudaBackend& b, const ConvAlgoChoice& algo, Scratch* ws) {
  if (algo.workspace_bytes == 0) return Status::Ok();
  return ws->Allocate(algo.workspace_bytes);
}

}  // namespace

ConvPlan::~ConvPlan() {
  // Safe while a convolution that used them is still queued: cuDNN reads
  // descriptors when the call is made, not when its kernels run.
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (x) cudnnDestroyTensorDescriptor(x);
}

// The three entry points start from the checked call (common/calls/conv.h).
Status CudaBackend::Conv2dForward(const backend::Conv2dForwardCall& c) {
  CudaBackend& b = *this;
  const OpCall& call = *c.op;
  const MNT_Conv2dParams* p = c.params;
  const Operand &x = c.x, &w = c.w, &bias = c.bias, &y = c.y;
  const ConvShape& sh = c.shape;
  if (sh.n == 0 || sh.k == 0) return Status::Ok();
  const MNT_DType io = ConvIoType(p->compute, y->dtype, bias.present());
  if (sh.c == 0) {  // empty sum: y = bias (or 0)
    MNT_RETURN_IF_ERROR(Launched(
        call, LaunchFill(b.stream, Dev(y), sdk::NumElements(*y), 0.0), "fill"));
    if (!bias.present()) return Status::Ok();
    return Launched(call,
                    LaunchChannelBiasAdd(b.stream, Dev(y), Dev(bias), sh.n, sh.k,
                                         sh.p * sh.q),
                    "bias_add");
  }
  MNT_RETURN_IF_ERROR(EnsureHandle(b));
  const ConvPlan* plan = nullptr;
  MNT_RETURN_IF_ERROR(GetPlan(b, call, ConvKind::kForward, sh, *p, io, &plan));
  const ConvPlan& d = *plan;
  const ConvAlgoChoice& algo = plan->algo;
  Scratch xs(b), ws_(b), ys(b), wsp(b);
  DevTensor xi, wi;
  MNT_RETURN_IF_ERROR(InputAsIo(b, call, x, p->compute, io, &xs, &xi));
  MNT_RETURN_IF_ERROR(InputAsIo(b, call, w, p->compute, io, &ws_, &wi));
  OutputTarget out;
  MNT_RETURN_IF_ERROR(OutputAsIo(y, io, false, &ys, &out));
  MNT_RETURN_IF_ERROR(Workspace(b, algo, &wsp));
  const float alpha = 1.0f, beta = 0.0f;
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnConvolutionForward(b.cudnn, &alpha, d.x, xi.data, d.w, wi.data, d.conv,
                              static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo),
                              wsp.data(), algo.workspace_bytes, &beta, d.y,
                              out.io.data),
      sdk::Format("%s: cudnnConvolutionForward(algo %d)", call.op_name(), algo.algo));
  if (bias.present()) {
    MNT_RETURN_IF_ERROR(Launched(
        call, LaunchChannelBiasAdd(b.stream, out.io, Dev(bias), sh.n, sh.k, sh.p * sh.q),
        "bias_add"));
  }
  return FinishOutput(b, call, y, out, false);
}

Status CudaBackend::Conv2dBackwardData(const backend::Conv2dBackwardDataCall& c) {
  CudaBackend& b = *this;
  const OpCall& call = *c.op;
  const MNT_Conv2dParams* p = c.params;
  const Operand &dy = c.dy, &w = c.w, &dx = c.dx;
  const ConvShape& sh = c.shape;
  const bool accumulate = c.accumulate;
  if (sdk::NumElements(*dx) == 0) return Status::Ok();
  if (sh.k == 0) {  // no filters: dx = 0 (+ dx)
    if (accumulate) return Status::Ok();
    return Launched(call, LaunchFill(b.stream, Dev(dx), sdk::NumElements(*dx), 0.0),
                    "fill");
  }
  const MNT_DType io = ConvIoType(p->compute, dx->dtype);
  MNT_RETURN_IF_ERROR(EnsureHandle(b));
  const ConvPlan* plan = nullptr;
  MNT_RETURN_IF_ERROR(GetPlan(b, call, ConvKind::kBackwardData, sh, *p, io, &plan));
  const ConvPlan& d = *plan;
  const ConvAlgoChoice& algo = plan->algo;
  Scratch dys(b), ws_(b), dxs(b), wsp(b);
  DevTensor dyi, wi;
  MNT_RETURN_IF_ERROR(InputAsIo(b, call, dy, p->compute, io, &dys, &dyi));
  MNT_RETURN_IF_ERROR(InputAsIo(b, call, w, p->compute, io, &ws_, &wi));
  OutputTarget out;
  MNT_RETURN_IF_ERROR(OutputAsIo(dx, io, accumulate, &dxs, &out));
  MNT_RETURN_IF_ERROR(Workspace(b, algo, &wsp));
  const float alpha = 1.0f;
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnConvolutionBackwardData(b.cudnn, &alpha, d.w, wi.data, d.y, dyi.data, d.conv,
                                   static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo),
                                   wsp.data(), algo.workspace_bytes, &out.beta, d.x,
                                   out.io.data),
      sdk::Format("%s: cudnnConvolutionBackwardData(algo %d)", call.op_name(), algo.algo));
  return FinishOutput(b, call, dx, out, accumulate);
}

Status CudaBackend::Conv2dBackwardFilter(const backend::Conv2dBackwardFilterCall& c) {
  CudaBackend& b = *this;
  const OpCall& call = *c.op;
  const MNT_Conv2dParams* p = c.params;
  const Operand &dy = c.dy, &x = c.x, &dw = c.dw, &dbias = c.dbias;
  const ConvShape& sh = c.shape;
  const bool accumulate = c.accumulate;
  if (sh.k == 0) return Status::Ok();
  if (dbias.present()) {  // unrounded dy, summed in double (as the CPU reference)
    MNT_RETURN_IF_ERROR(Launched(call,
                                 LaunchChannelSum(b.stream, Dev(dy), sh.n, sh.k,
                                                  sh.p * sh.q, accumulate, Dev(dbias)),
                                 "dbias"));
  }
  if (sdk::NumElements(*dw) == 0) return Status::Ok();
  if (sh.n == 0) {  // empty batch: dw = 0 (+ dw)
    if (accumulate) return Status::Ok();
    return Launched(call, LaunchFill(b.stream, Dev(dw), sdk::NumElements(*dw), 0.0),
                    "fill");
  }
  const MNT_DType io = ConvIoType(p->compute, dw->dtype);
  MNT_RETURN_IF_ERROR(EnsureHandle(b));
  const ConvPlan* plan = nullptr;
  MNT_RETURN_IF_ERROR(GetPlan(b, call, ConvKind::kBackwardFilter, sh, *p, io, &plan));
  const ConvPlan& d = *plan;
  const ConvAlgoChoice& algo = plan->algo;
  Scratch dys(b), xs(b), dws(b), wsp(b);
  DevTensor dyi, xi;
  MNT_RETURN_IF_ERROR(InputAsIo(b, call, dy, p->compute, io, &dys, &dyi));
  MNT_RETURN_IF_ERROR(InputAsIo(b, call, x, p->compute, io, &xs, &xi));
  OutputTarget out;
  MNT_RETURN_IF_ERROR(OutputAsIo(dw, io, accumulate, &dws, &out));
  MNT_RETURN_IF_ERROR(Workspace(b, algo, &wsp));
  const float alpha = 1.0f;
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnConvolutionBackwardFilter(
          b.cudnn, &alpha, d.x, xi.data, d.y, dyi.data, d.conv,
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), wsp.data(),
          algo.workspace_bytes, &out.beta, d.w, out.io.data),
      sdk::Format("%s: cudnnConvolutionBackwardFilter(algo %d)", call.op_name(),
                  algo.algo));
  return FinishOutput(b, call, dw, out, accumulate);
}

}  // namespace mnt::cuda
