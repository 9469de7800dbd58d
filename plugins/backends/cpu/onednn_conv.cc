#include "plugins/backends/cpu/onednn_conv.h"

#include <algorithm>

#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using backend::ConvShape;
using sdk::Status;

namespace {

Status Check(dnnl_status_t s, const char* what) {
  if (s == dnnl_success) return Status::Ok();
  return sdk::Internal(sdk::Format("conv2d: oneDNN %s failed (dnnl_status_t %d)", what,
                                   static_cast<int>(s)));
}

#define MNT_DNNL_(call, what) MNT_RETURN_IF_ERROR(Check(call, what))

// An operand as oneDNN reads it: the tensor's own memory when it already is
// fp32 in the compute format, else a rounded fp32 copy in *buf.
const float* Input(const MNT_Tensor& t, MNT_ComputeMode mode, std::vector<float>* buf) {
  if (t.dtype == MNT_DTYPE_F32 && mode == MNT_COMPUTE_F32) {
    return static_cast<const float*>(t.data);
  }
  buf->resize(static_cast<size_t>(sdk::NumElements(t)));
  ReadRounded(t, mode, buf->data());
  return buf->data();
}

}  // namespace

Status OneDnnConv::Create(const onednn::Api* api, int pool, bool native_bf16,
                          std::unique_ptr<OneDnnConv>* out) {
  std::unique_ptr<OneDnnConv> c(new OneDnnConv(api, std::max(pool, 1), native_bf16));
  MNT_DNNL_(api->dnnl_engine_create(&c->engine_, dnnl_cpu, 0), "engine creation");
  MNT_DNNL_(api->dnnl_stream_create(&c->stream_, c->engine_, dnnl_stream_default_flags),
            "stream creation");
  *out = std::move(c);
  return Status::Ok();
}

void OneDnnConv::Destroy(Primitive* p) {
  for (Arg& a : p->args) {
    if (a.reorder != nullptr) api_->dnnl_primitive_destroy(a.reorder);
    if (a.inner != nullptr) api_->dnnl_memory_destroy(a.inner);
    if (a.user != nullptr) api_->dnnl_memory_destroy(a.user);
  }
  p->args.clear();
  if (p->primitive != nullptr) api_->dnnl_primitive_destroy(p->primitive);
  p->primitive = nullptr;
}

OneDnnConv::~OneDnnConv() {
  for (auto& [key, p] : cache_) Destroy(&p);
  if (stream_ != nullptr) api_->dnnl_stream_destroy(stream_);
  if (engine_ != nullptr) api_->dnnl_engine_destroy(engine_);
}

std::string OneDnnConv::Kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string s;
  for (const std::string& k : kernels_) s += (s.empty() ? "" : ", ") + k;
  return s;
}

Status OneDnnConv::BindArg(dnnl_primitive_desc_t pd, dnnl_query_t query, int dnnl_arg,
                           bool output, const dnnl_memory_desc_t& user_md, Primitive* p) {
  // Bias and bias gradient are the second "weights" of the primitive.
  const int index = dnnl_arg == DNNL_ARG_BIAS || dnnl_arg == DNNL_ARG_DIFF_BIAS ? 1 : 0;
  const dnnl_memory_desc_t* md = api_->dnnl_primitive_desc_query_md(pd, query, index);
  if (md == nullptr) return sdk::Internal("conv2d: oneDNN primitive lacks an argument");
  p->args.push_back(Arg{});
  Arg& a = p->args.back();
  a.dnnl_arg = dnnl_arg;
  a.output = output;
  MNT_DNNL_(api_->dnnl_memory_create(&a.user, &user_md, engine_, DNNL_MEMORY_NONE),
            "user memory");
  if (api_->dnnl_memory_desc_equal(md, &user_md)) return Status::Ok();
  MNT_DNNL_(api_->dnnl_memory_create(&a.inner, md, engine_, DNNL_MEMORY_ALLOCATE),
            "layout memory");
  dnnl_primitive_desc_t rpd = nullptr;
  MNT_DNNL_(api_->dnnl_reorder_primitive_desc_create(&rpd, output ? md : &user_md, engine_,
                                                     output ? &user_md : md, engine_, nullptr),
            "reorder descriptor");
  const Status s = Check(api_->dnnl_primitive_create(&a.reorder, rpd), "reorder");
  api_->dnnl_primitive_desc_destroy(rpd);
  return s;
}

Status OneDnnConv::Build(Pass pass, const ConvShape& sh, bool bias, const Types& t,
                         Primitive* p) {
  const bool grouped = sh.groups > 1;
  const dnnl_dims_t src_dims = {sh.n, sh.c, sh.h, sh.w};
  const dnnl_dims_t dst_dims = {sh.n, sh.k, sh.p, sh.q};
  // KCRS memory is [groups][kg][cg][r][s] (goihw) when grouped.
  const dnnl_dims_t w_dims = {sh.k, sh.cg, sh.r, sh.s};
  const dnnl_dims_t gw_dims = {sh.groups, sh.kg, sh.cg, sh.r, sh.s};
  const dnnl_dims_t bias_dims = {sh.k};
  // The caller's plain tensors, and the "any" layouts oneDNN chooses from,
  // in the primitive's types; the forward hint multiplies t.compute.
  dnnl_memory_desc_t src, dst, w, b, src_any, dst_any, w_any, hint_src, hint_dst, hint_w;
  const int w_ndims = grouped ? 5 : 4;
  const int64_t* w_shape = grouped ? gw_dims : w_dims;
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&src, 4, src_dims, t.src, dnnl_nchw), "x");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&dst, 4, dst_dims, t.dst, dnnl_nchw), "y");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&w, w_ndims, w_shape, t.weights,
                                               grouped ? dnnl_goihw : dnnl_oihw),
            "w");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&b, 1, bias_dims, t.bias, dnnl_x), "bias");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&src_any, 4, src_dims, t.src,
                                               dnnl_format_tag_any), "x");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_dims, t.dst,
                                               dnnl_format_tag_any), "y");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&w_any, w_ndims, w_shape, t.weights,
                                               dnnl_format_tag_any), "w");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&hint_src, 4, src_dims, t.compute,
                                               dnnl_format_tag_any), "x");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&hint_dst, 4, dst_dims, t.compute,
                                               dnnl_format_tag_any), "y");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_tag(&hint_w, w_ndims, w_shape, t.compute,
                                               dnnl_format_tag_any), "w");
  // oneDNN counts dilation from 0 and wants the right/bottom padding that
  // makes its output size formula give p and q exactly.
  const dnnl_dims_t strides = {sh.stride_h, sh.stride_w};
  const dnnl_dims_t dilates = {sh.dil_h - 1, sh.dil_w - 1};
  const dnnl_dims_t pad_l = {sh.pad_h, sh.pad_w};
  const dnnl_dims_t pad_r = {(sh.p - 1) * sh.stride_h + (sh.r - 1) * sh.dil_h + 1 - sh.h - sh.pad_h,
                             (sh.q - 1) * sh.stride_w + (sh.s - 1) * sh.dil_w + 1 - sh.w - sh.pad_w};

  // The forward descriptor is also the backward passes' hint.
  dnnl_convolution_desc_t fwd;
  const bool forward = pass == kForward;
  if (api_->dnnl_dilated_convolution_forward_desc_init(
          &fwd, dnnl_forward_training, dnnl_convolution_direct, forward ? &src_any : &hint_src,
          forward ? &w_any : &hint_w, forward && bias ? &b : nullptr,
          forward ? &dst_any : &hint_dst, strides, dilates, pad_l, pad_r) != dnnl_success) {
    return Status::Ok();  // unsupported geometry: p->supported stays false
  }
  dnnl_primitive_desc_t fwd_pd = nullptr;
  if (api_->dnnl_primitive_desc_create(&fwd_pd, &fwd, nullptr, engine_, nullptr) !=
      dnnl_success) {
    return Status::Ok();
  }
  dnnl_primitive_desc_t pd = fwd_pd;
  dnnl_convolution_desc_t bwd;
  if (pass != kForward) {
    dnnl_status_t st =
        pass == kBackwardData
            ? api_->dnnl_dilated_convolution_backward_data_desc_init(
                  &bwd, dnnl_convolution_direct, &src_any, &w_any, &dst_any, strides, dilates,
                  pad_l, pad_r)
            : api_->dnnl_dilated_convolution_backward_weights_desc_init(
                  &bwd, dnnl_convolution_direct, &src_any, &w_any, bias ? &b : nullptr,
                  &dst_any, strides, dilates, pad_l, pad_r);
    pd = nullptr;
    if (st == dnnl_success) {
      st = api_->dnnl_primitive_desc_create(&pd, &bwd, nullptr, engine_, fwd_pd);
    }
    api_->dnnl_primitive_desc_destroy(fwd_pd);
    if (st != dnnl_success) return Status::Ok();
  }

  Status s = Status::Ok();
  switch (pass) {
    case kForward:
      s = BindArg(pd, dnnl_query_src_md, DNNL_ARG_SRC, false, src, p);
      if (s.ok()) s = BindArg(pd, dnnl_query_weights_md, DNNL_ARG_WEIGHTS, false, w, p);
      if (s.ok() && bias) s = BindArg(pd, dnnl_query_weights_md, DNNL_ARG_BIAS, false, b, p);
      if (s.ok()) s = BindArg(pd, dnnl_query_dst_md, DNNL_ARG_DST, true, dst, p);
      break;
    case kBackwardData:
      s = BindArg(pd, dnnl_query_diff_dst_md, DNNL_ARG_DIFF_DST, false, dst, p);
      if (s.ok()) s = BindArg(pd, dnnl_query_weights_md, DNNL_ARG_WEIGHTS, false, w, p);
      if (s.ok()) s = BindArg(pd, dnnl_query_diff_src_md, DNNL_ARG_DIFF_SRC, true, src, p);
      break;
    case kBackwardFilter:
      s = BindArg(pd, dnnl_query_src_md, DNNL_ARG_SRC, false, src, p);
      if (s.ok()) s = BindArg(pd, dnnl_query_diff_dst_md, DNNL_ARG_DIFF_DST, false, dst, p);
      if (s.ok()) {
        s = BindArg(pd, dnnl_query_diff_weights_md, DNNL_ARG_DIFF_WEIGHTS, true, w, p);
      }
      if (s.ok() && bias) {
        s = BindArg(pd, dnnl_query_diff_weights_md, DNNL_ARG_DIFF_BIAS, true, b, p);
      }
      break;
  }
  const char* impl = nullptr;
  if (s.ok() && api_->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) ==
                    dnnl_success &&
      impl != nullptr) {
    kernels_.insert(impl);
  }
  if (s.ok()) s = Check(api_->dnnl_primitive_create(&p->primitive, pd), "convolution primitive");
  api_->dnnl_primitive_desc_destroy(pd);
  p->supported = s.ok();
  return s;
}

Status OneDnnConv::GetPrimitive(Pass pass, const ConvShape& sh, bool bias, const Types& t,
                                Primitive** out) {
  const Key key{pass,     bias,      sh.n,        sh.c,        sh.h,      sh.w,
                sh.k,     sh.r,      sh.s,        sh.p,        sh.q,      sh.groups,
                sh.pad_h, sh.pad_w,  sh.stride_h, sh.stride_w, sh.dil_h,  sh.dil_w,
                t.src,    t.weights, t.bias,      t.dst,       t.compute};
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    it = cache_.emplace(key, Primitive{}).first;
    const Status s = Build(pass, sh, bias, t, &it->second);
    if (!s.ok()) {
      Destroy(&it->second);
      cache_.erase(it);
      return s;
    }
  }
  *out = &it->second;
  return Status::Ok();
}

Status OneDnnConv::Execute(Primitive* p, const std::vector<void*>& data) {
  std::vector<dnnl_exec_arg_t> args;
  for (size_t i = 0; i < p->args.size(); ++i) {
    Arg& a = p->args[i];
    MNT_DNNL_(api_->dnnl_memory_set_data_handle(a.user, data[i]), "memory handle");
    args.push_back({a.dnnl_arg, a.inner != nullptr ? a.inner : a.user});
    if (!a.output && a.reorder != nullptr) {
      dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a.user}, {DNNL_ARG_TO, a.inner}};
      MNT_DNNL_(api_->dnnl_primitive_execute(a.reorder, stream_, 2, r), "input reorder");
    }
  }
  MNT_DNNL_(api_->dnnl_primitive_execute(p->primitive, stream_, static_cast<int>(args.size()),
                                         args.data()),
            "convolution");
  for (Arg& a : p->args) {
    if (a.output && a.reorder != nullptr) {
      dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a.inner}, {DNNL_ARG_TO, a.user}};
      MNT_DNNL_(api_->dnnl_primitive_execute(a.reorder, stream_, 2, r), "output reorder");
    }
  }
  return Status::Ok();
}

dnnl_data_type_t OneDnnConv::ComputeType(MNT_ComputeMode mode) const {
  if (mode == MNT_COMPUTE_BF16 && native_bf16_) return dnnl_bf16;
  if (mode == MNT_COMPUTE_F16 && cpu_has_fp16_) return dnnl_f16;
  return dnnl_f32;
}

void* OneDnnConv::Input16(const MNT_Tensor& t, dnnl_data_type_t dt, std::vector<uint16_t>* buf) {
  if ((dt == dnnl_bf16 && t.dtype == MNT_DTYPE_BF16) ||
      (dt == dnnl_f16 && t.dtype == MNT_DTYPE_F16)) {
    return t.data;
  }
  if (dt != dnnl_bf16) return nullptr;  // no conversion into f16 here: fp32 path
  buf->resize(static_cast<size_t>(sdk::NumElements(t)));
  ReadBf16(t, buf->data());
  return buf->data();
}

namespace {

// The type a 16-bit primitive writes `t` in: its own when oneDNN stores it
// (the compute type or fp32) and the result is not added to it, else fp32
// into a buffer (then Store).
dnnl_data_type_t OutputType(const MNT_Tensor& t, dnnl_data_type_t compute, bool accumulate) {
  if (accumulate) return dnnl_f32;
  if ((compute == dnnl_bf16 && t.dtype == MNT_DTYPE_BF16) ||
      (compute == dnnl_f16 && t.dtype == MNT_DTYPE_F16)) {
    return compute;
  }
  return dnnl_f32;
}

// Where a primitive writes t in type dt: t itself when dt is its dtype and
// it is overwritten, else *buf (fp32; then Store).
void* Output16(const MNT_Tensor& t, dnnl_data_type_t dt, bool accumulate,
               std::vector<float>* buf) {
  if (dt != dnnl_f32) return t.data;
  return ResultTarget(t, accumulate, buf);
}

const char* PassName(int pass) {
  return pass == 0 ? "forward" : pass == 1 ? "backward data" : "backward filter";
}

}  // namespace

void OneDnnConv::CountFp32Fallback(Pass pass, MNT_ComputeMode mode, const ConvShape& sh) {
  Fallbacks& f = fallbacks_[{static_cast<int>(pass), static_cast<int>(mode)}];
  if (f.calls++ == 0) {
    f.shape = sdk::Format("x %lldx%lldx%lldx%lld, w %lldx%lldx%lldx%lld",
                          static_cast<long long>(sh.n), static_cast<long long>(sh.c),
                          static_cast<long long>(sh.h), static_cast<long long>(sh.w),
                          static_cast<long long>(sh.k), static_cast<long long>(sh.cg),
                          static_cast<long long>(sh.r), static_cast<long long>(sh.s));
  }
}

std::string OneDnnConv::SlowPathReport() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string s;
  for (const auto& [key, f] : fallbacks_) {
    const bool bf16 = key.second == MNT_COMPUTE_BF16;
    s += sdk::Format(
        "%lld x %s convolution %s in fp32: oneDNN %s has no %s primitive for it on this CPU "
        "(%s%s): %s\n",
        static_cast<long long>(f.calls), bf16 ? "bf16" : "fp16", PassName(key.first),
        onednn::VersionString(*api_).c_str(), bf16 ? "bf16" : "f16",
        onednn::IsaName(api_->dnnl_get_effective_cpu_isa()),
        bf16 ? "" : ", the CPU has AVX512-FP16", f.shape.c_str());
  }
  return s;
}

Status OneDnnConv::Forward(const backend::Conv2dForwardCall& c, bool* done) {
  std::lock_guard<std::mutex> lock(mu_);
  const ScopedTeam whole_pool(pool_);
  const MNT_ComputeMode mode = c.params->compute;
  const dnnl_data_type_t compute = ComputeType(mode);
  if (compute == dnnl_f32) return ForwardF32(c, done);
  void* x = Input16(*c.x, compute, &in0_16_);
  void* w = x != nullptr ? Input16(*c.w, compute, &in1_16_) : nullptr;
  Primitive* p = nullptr;
  Types t;
  if (x != nullptr && w != nullptr) {
    t.src = t.weights = t.compute = compute;
    t.dst = OutputType(*c.y, compute, false);
    // The bias is added in fp32 (a 16-bit bias is exact in it).
    t.bias = c.bias.present() && c.bias->dtype == MNT_DTYPE_BF16 && compute == dnnl_bf16
                 ? dnnl_bf16 : dnnl_f32;
    MNT_RETURN_IF_ERROR(GetPrimitive(kForward, c.shape, c.bias.present(), t, &p));
  }
  if (p == nullptr || !p->supported) {
    CountFp32Fallback(kForward, mode, c.shape);
    return ForwardF32(c, done);
  }
  *done = true;
  std::vector<void*> data = {x, w};
  if (c.bias.present()) {
    data.push_back(t.bias == dnnl_bf16
                       ? c.bias->data
                       : const_cast<float*>(Input(*c.bias, MNT_COMPUTE_F32, &out1_)));
  }
  void* y = Output16(*c.y, t.dst, false, &out0_);
  data.push_back(y);
  MNT_RETURN_IF_ERROR(Execute(p, data));
  if (t.dst == dnnl_f32) StoreResult(static_cast<float*>(y), *c.y, false, nullptr);
  return Status::Ok();
}

Status OneDnnConv::ForwardF32(const backend::Conv2dForwardCall& c, bool* done) {
  Primitive* p = nullptr;
  MNT_RETURN_IF_ERROR(GetPrimitive(kForward, c.shape, c.bias.present(), Types{}, &p));
  *done = p->supported;
  if (!p->supported) return Status::Ok();
  const MNT_ComputeMode mode = c.params->compute;
  std::vector<void*> data = {const_cast<float*>(Input(*c.x, mode, &in0_)),
                             const_cast<float*>(Input(*c.w, mode, &in1_))};
  if (c.bias.present()) {
    // The bias is added in fp32, not rounded (as in the reference).
    data.push_back(const_cast<float*>(Input(*c.bias, MNT_COMPUTE_F32, &out1_)));
  }
  float* y = ResultTarget(*c.y, false, &out0_);
  data.push_back(y);
  MNT_RETURN_IF_ERROR(Execute(p, data));
  StoreResult(y, *c.y, false, nullptr);
  return Status::Ok();
}

Status OneDnnConv::BackwardData(const backend::Conv2dBackwardDataCall& c, bool* done) {
  std::lock_guard<std::mutex> lock(mu_);
  const ScopedTeam whole_pool(pool_);
  const MNT_ComputeMode mode = c.params->compute;
  const dnnl_data_type_t compute = ComputeType(mode);
  if (compute == dnnl_f32) return BackwardDataF32(c, done);
  void* dy = Input16(*c.dy, compute, &in0_16_);
  void* w = dy != nullptr ? Input16(*c.w, compute, &in1_16_) : nullptr;
  Primitive* p = nullptr;
  Types t;
  if (dy != nullptr && w != nullptr) {
    t.dst = t.weights = t.compute = compute;
    t.src = OutputType(*c.dx, compute, c.accumulate);
    MNT_RETURN_IF_ERROR(GetPrimitive(kBackwardData, c.shape, false, t, &p));
  }
  if (p == nullptr || !p->supported) {
    CountFp32Fallback(kBackwardData, mode, c.shape);
    return BackwardDataF32(c, done);
  }
  *done = true;
  void* dx = Output16(*c.dx, t.src, c.accumulate, &out0_);
  MNT_RETURN_IF_ERROR(Execute(p, {dy, w, dx}));
  if (t.src == dnnl_f32) StoreResult(static_cast<float*>(dx), *c.dx, c.accumulate, &in0_);
  return Status::Ok();
}

Status OneDnnConv::BackwardDataF32(const backend::Conv2dBackwardDataCall& c, bool* done) {
  Primitive* p = nullptr;
  MNT_RETURN_IF_ERROR(GetPrimitive(kBackwardData, c.shape, false, Types{}, &p));
  *done = p->supported;
  if (!p->supported) return Status::Ok();
  const MNT_ComputeMode mode = c.params->compute;
  float* dx = ResultTarget(*c.dx, c.accumulate, &out0_);
  MNT_RETURN_IF_ERROR(Execute(p, {const_cast<float*>(Input(*c.dy, mode, &in0_)),
                                  const_cast<float*>(Input(*c.w, mode, &in1_)), dx}));
  StoreResult(dx, *c.dx, c.accumulate, &in0_);
  return Status::Ok();
}

Status OneDnnConv::BackwardFilter(const backend::Conv2dBackwardFilterCall& c, bool* done,
                                  bool* bias_done) {
  std::lock_guard<std::mutex> lock(mu_);
  const ScopedTeam whole_pool(pool_);
  const MNT_ComputeMode mode = c.params->compute;
  const dnnl_data_type_t compute = ComputeType(mode);
  if (compute == dnnl_f32) return BackwardFilterF32(c, done, bias_done);
  void* x = Input16(*c.x, compute, &in0_16_);
  void* dy = x != nullptr ? Input16(*c.dy, compute, &in1_16_) : nullptr;
  // The bias gradient sums dy unrounded: fused when dy is stored in the
  // compute format (read as it is), else summed by the caller.
  const bool fuse_bias = c.dbias.present() && dy == c.dy->data;
  Primitive* p = nullptr;
  Types t;
  if (x != nullptr && dy != nullptr) {
    t.src = t.dst = t.compute = compute;
    // The weight gradient accumulates in fp32 inside the primitive; it is
    // stored 16-bit only when the gradient is 16-bit and overwritten, else
    // written as fp32, added to the old gradient in fp32 and rounded once.
    t.weights = OutputType(*c.dw, compute, c.accumulate);
    t.bias = fuse_bias ? OutputType(*c.dbias, compute, c.accumulate) : dnnl_f32;
    MNT_RETURN_IF_ERROR(GetPrimitive(kBackwardFilter, c.shape, fuse_bias, t, &p));
  }
  if (p == nullptr || !p->supported) {
    CountFp32Fallback(kBackwardFilter, mode, c.shape);
    return BackwardFilterF32(c, done, bias_done);
  }
  *done = true;
  *bias_done = fuse_bias;
  void* dw = Output16(*c.dw, t.weights, c.accumulate, &out0_);
  std::vector<void*> data = {x, dy, dw};
  void* dbias = fuse_bias ? Output16(*c.dbias, t.bias, c.accumulate, &out1_) : nullptr;
  if (fuse_bias) data.push_back(dbias);
  MNT_RETURN_IF_ERROR(Execute(p, data));
  // Store's scratch must not be an input still to be read: in0_ and in1_
  // (fp32) are unused on this path.
  if (t.weights == dnnl_f32) StoreResult(static_cast<float*>(dw), *c.dw, c.accumulate, &in0_);
  if (fuse_bias && t.bias == dnnl_f32) {
    StoreResult(static_cast<float*>(dbias), *c.dbias, c.accumulate, &in1_);
  }
  return Status::Ok();
}

Status OneDnnConv::BackwardFilterF32(const backend::Conv2dBackwardFilterCall& c, bool* done,
                                     bool* bias_done) {
  const MNT_ComputeMode mode = c.params->compute;
  // The bias gradient sums dy unrounded: fused only when rounding is a no-op.
  const bool fuse_bias =
      c.dbias.present() && c.dy->dtype == MNT_DTYPE_F32 && mode == MNT_COMPUTE_F32;
  Primitive* p = nullptr;
  MNT_RETURN_IF_ERROR(GetPrimitive(kBackwardFilter, c.shape, fuse_bias, Types{}, &p));
  *done = p->supported;
  *bias_done = p->supported && fuse_bias;
  if (!p->supported) return Status::Ok();
  float* dw = ResultTarget(*c.dw, c.accumulate, &out0_);
  std::vector<void*> data = {const_cast<float*>(Input(*c.x, mode, &in0_)),
                             const_cast<float*>(Input(*c.dy, mode, &in1_)), dw};
  float* dbias = fuse_bias ? ResultTarget(*c.dbias, c.accumulate, &out1_) : nullptr;
  if (fuse_bias) data.push_back(dbias);
  MNT_RETURN_IF_ERROR(Execute(p, data));
  StoreResult(dw, *c.dw, c.accumulate, &in0_);
  if (fuse_bias) StoreResult(dbias, *c.dbias, c.accumulate, &in1_);
  return Status::Ok();
}

}  // namespace mnt::cpu
