#include "plugins/backends/cuda/cudnn_graph.h"

#include <utility>

#include "plugins/backends/cuda/cuda_status.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

// The operation graph and the execution plan take the handle through
// attributes that cuDNN 9.x headers mark deprecated (in favour of device
// properties) but every 9.x release still accepts; older 9.x need them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

Status Set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const void* value,
           const char* what) {
  return CudnnStatus(cudnnBackendSetAttribute(d, name, type, count, value),
                     sdk::Format("cudnnBackendSetAttribute(%s)", what));
}

Status Finalize(cudnnBackendDescriptor_t d, const char* what) {
  return CudnnStatus(cudnnBackendFinalize(d),
                     sdk::Format("cudnnBackendFinalize(%s)", what));
}

}  // namespace

CudnnDescriptor& CudnnDescriptor::operator=(CudnnDescriptor&& o) noexcept {
  if (this != &o) {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
    d_ = o.d_;
    o.d_ = nullptr;
  }
  return *this;
}

CudnnDescriptor::~CudnnDescriptor() {
  if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
}

Status CudnnDescriptor::Create(cudnnBackendDescriptorType_t type, const char* what) {
  return CudnnStatus(cudnnBackendCreateDescriptor(type, &d_),
                     sdk::Format("cudnnBackendCreateDescriptor(%s)", what));
}

Status GraphBuilder::NewDescriptor(cudnnBackendDescriptorType_t type, const char* what,
                                   cudnnBackendDescriptor_t* out) {
  CudnnDescriptor d;
  MNT_RETURN_IF_ERROR(d.Create(type, what));
  *out = d.get();
  owned_.push_back(std::move(d));
  return Status::Ok();
}

Status GraphBuilder::Tensor(const CudnnTensorSpec& spec, CudnnTensor* out) {
  cudnnBackendDescriptor_t t;
  MNT_RETURN_IF_ERROR(NewDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor", &t));
  const int64_t rank = static_cast<int64_t>(spec.dims.size());
  const int64_t alignment = 16;
  MNT_RETURN_IF_ERROR(
      Set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &spec.type, "tensor type"));
  MNT_RETURN_IF_ERROR(Set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank,
                          spec.dims.data(), "tensor dims"));
  MNT_RETURN_IF_ERROR(Set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank,
                          spec.strides.data(), "tensor strides"));
  MNT_RETURN_IF_ERROR(
      Set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &spec.uid, "tensor uid"));
  MNT_RETURN_IF_ERROR(Set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                          &alignment, "tensor alignment"));
  if (spec.is_virtual) {
    const bool v = true;
    MNT_RETURN_IF_ERROR(
        Set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v, "tensor virtual"));
  }
  if (spec.by_value) {
    const bool v = true;
    MNT_RETURN_IF_ERROR(
        Set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &v, "tensor by value"));
  }
  MNT_RETURN_IF_ERROR(Finalize(t, sdk::Format("tensor uid %lld", (long long)spec.uid).c_str()));
  *out = t;
  return Status::Ok();
}

Status GraphBuilder::Pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math,
                               CudnnTensor x, CudnnTensor b, CudnnTensor t, CudnnTensor y,
                               int64_t axis) {
  cudnnBackendDescriptor_t pw, op;
  MNT_RETURN_IF_ERROR(NewDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise", &pw));
  MNT_RETURN_IF_ERROR(
      Set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode"));
  MNT_RETURN_IF_ERROR(Set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math,
                          "pointwise math precision"));
  if (axis >= 0) {
    MNT_RETURN_IF_ERROR(
        Set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise axis"));
  }
  MNT_RETURN_IF_ERROR(Finalize(pw, "pointwise"));
  MNT_RETURN_IF_ERROR(
      NewDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op", &op));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "pointwise op descriptor"));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pointwise op x"));
  if (b != nullptr) {
    MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "pointwise op b"));
  }
  if (t != nullptr) {
    MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "pointwise op t"));
  }
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pointwise op y"));
  MNT_RETURN_IF_ERROR(
      Finalize(op, sdk::Format("pointwise op mode %d", static_cast<int>(mode)).c_str()));
  ops_.push_back(op);
  return Status::Ok();
}

Status GraphBuilder::Matmul(CudnnTensor a, CudnnTensor b, CudnnTensor c) {
  cudnnBackendDescriptor_t mm, op;
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  MNT_RETURN_IF_ERROR(NewDescriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul", &mm));
  MNT_RETURN_IF_ERROR(
      Set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "matmul comp type"));
  MNT_RETURN_IF_ERROR(Finalize(mm, "matmul"));
  MNT_RETURN_IF_ERROR(
      NewDescriptor(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op", &op));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                          1, &a, "matmul op a"));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                          1, &b, "matmul op b"));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                          1, &c, "matmul op c"));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                          1, &mm, "matmul op descriptor"));
  MNT_RETURN_IF_ERROR(Finalize(op, "matmul op"));
  ops_.push_back(op);
  return Status::Ok();
}

Status GraphBuilder::Reduce(cudnnReduceTensorOp_t reduce, CudnnTensor x, CudnnTensor y) {
  cudnnBackendDescriptor_t red, op;
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  MNT_RETURN_IF_ERROR(NewDescriptor(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction", &red));
  MNT_RETURN_IF_ERROR(Set(red, CUDNN_ATTR_REDUCTION_OPERATOR,
                          CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce,
                          "reduction operator"));
  MNT_RETURN_IF_ERROR(Set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp,
                          "reduction comp type"));
  MNT_RETURN_IF_ERROR(Finalize(red, "reduction"));
  MNT_RETURN_IF_ERROR(
      NewDescriptor(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction op", &op));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reduction op x"));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reduction op y"));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &red, "reduction op descriptor"));
  MNT_RETURN_IF_ERROR(Finalize(op, "reduction op"));
  ops_.push_back(op);
  return Status::Ok();
}

Status GraphBuilder::Reshape(CudnnTensor x, CudnnTensor y) {
  cudnnBackendDescriptor_t op;
  MNT_RETURN_IF_ERROR(
      NewDescriptor(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape op", &op));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reshape op x"));
  MNT_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reshape op y"));
  MNT_RETURN_IF_ERROR(Finalize(op, "reshape op"));
  ops_.push_back(op);
  return Status::Ok();
}

Status GraphBuilder::Build(const char* what, CudnnPlan* plan) {
  cudnnBackendDescriptor_t graph, heur;
  MNT_RETURN_IF_ERROR(
      NewDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph", &graph));
  MNT_RETURN_IF_ERROR(Set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                          static_cast<int64_t>(ops_.size()), ops_.data(),
                          "operation graph ops"));
  MNT_RETURN_IF_ERROR(
      Set(graph, kGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle_, "operation graph handle"));
  MNT_RETURN_IF_ERROR(
      Finalize(graph, sdk::Format("operation graph of %s", what).c_str()));
  MNT_RETURN_IF_ERROR(
      NewDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics", &heur));
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  MNT_RETURN_IF_ERROR(Set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics graph"));
  MNT_RETURN_IF_ERROR(
      Set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode"));
  MNT_RETURN_IF_ERROR(Finalize(heur, sdk::Format("engine heuristics of %s", what).c_str()));
  int64_t count = 0;
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
      "cudnnBackendGetAttribute(heuristics result count)");
  if (count <= 0) {
    return sdk::Unimplemented(
        sdk::Format("cuDNN heuristics offer no engine for %s", what));
  }
  std::vector<cudnnBackendDescriptor_t> configs(static_cast<size_t>(count));
  for (auto& c : configs) {
    MNT_RETURN_IF_ERROR(
        NewDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config", &c));
  }
  int64_t returned = 0;
  MNT_CUDNN_RETURN_IF_ERROR(
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                               configs.data()),
      "cudnnBackendGetAttribute(heuristics results)");
  Status last = sdk::Unimplemented("no candidate tried");
  for (int64_t i = 0; i < returned; ++i) {
    CudnnDescriptor candidate;
    MNT_RETURN_IF_ERROR(
        candidate.Create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan"));
    MNT_RETURN_IF_ERROR(Set(candidate.get(), kPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle_,
                            "execution plan handle"));
    MNT_RETURN_IF_ERROR(Set(candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[i],
                            "execution plan engine config"));
    last = Finalize(candidate.get(), "execution plan");
    if (!last.ok()) continue;
    int64_t workspace = 0, got = 0;
    MNT_CUDNN_RETURN_IF_ERROR(
        cudnnBackendGetAttribute(candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                 CUDNN_TYPE_INT64, 1, &got, &workspace),
        "cudnnBackendGetAttribute(execution plan workspace size)");
    plan->plan = std::move(candidate);
    plan->workspace_bytes = workspace;
    plan->parts = std::move(owned_);
    owned_.clear();
    ops_.clear();
    return Status::Ok();
  }
  return sdk::Unimplemented(sdk::Format("no cuDNN engine builds a plan for %s (%lld "
                                        "candidates; last: %s)",
                                        what, (long long)returned,
                                        last.message().c_str()));
}

Status ExecuteCudnnPlan(cudnnHandle_t handle, const CudnnPlan& plan,
                        const std::vector<int64_t>& uids, const std::vector<void*>& pointers,
                        void* workspace, const char* what) {
  CudnnDescriptor pack;
  MNT_RETURN_IF_ERROR(pack.Create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack"));
  MNT_RETURN_IF_ERROR(Set(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                          static_cast<int64_t>(uids.size()), uids.data(),
                          "variant pack uids"));
  MNT_RETURN_IF_ERROR(Set(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                          CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
                          pointers.data(), "variant pack pointers"));
  MNT_RETURN_IF_ERROR(Set(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                          1, &workspace, "variant pack workspace"));
  MNT_RETURN_IF_ERROR(Finalize(pack.get(), "variant pack"));
  // The message is only formatted on failure (this runs on every call).
  MNT_CUDNN_RETURN_IF_ERROR(cudnnBackendExecute(handle, plan.plan.get(), pack.get()),
                            sdk::Format("cudnnBackendExecute(%s SDPA)", what));
  return Status::Ok();
}

}  // namespace mnt::cuda
