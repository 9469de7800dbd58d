#include "plugins/backends/cpu/onednn_gemm.h"

#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

Status Check(dnnl_status_t s, const char* what) {
  if (s == dnnl_success) return Status::Ok();
  return sdk::Internal(sdk::Format("GEMM: oneDNN %s failed (dnnl_status_t %d)", what,
                                   static_cast<int>(s)));
}

#define MNT_DNNL_(call, what) MNT_RETURN_IF_ERROR(Check(call, what))

dnnl_data_type_t DnnlType(int dtype) {
  return dtype == MNT_DTYPE_BF16 ? dnnl_bf16 : dnnl_f32;
}

}  // namespace

Status OneDnnGemm::Create(const onednn::Api* api, bool native_bf16,
                          std::unique_ptr<OneDnnGemm>* out) {
  std::unique_ptr<OneDnnGemm> g(new OneDnnGemm(api, native_bf16));
  g->isa_ = api->dnnl_get_effective_cpu_isa();
  MNT_DNNL_(api->dnnl_engine_create(&g->engine_, dnnl_cpu, 0), "engine creation");
  MNT_DNNL_(api->dnnl_stream_create(&g->stream_, g->engine_, dnnl_stream_default_flags),
            "stream creation");
  if (native_bf16) {
    // oneDNN 2.x implements bf16 matmul only from AVX512 on: ask it for one.
    const Key probe{16, 16, 16, false, false, MNT_DTYPE_BF16, MNT_DTYPE_BF16,
                    MNT_DTYPE_F32, false, 1.0f, 0.0f};
    Primitive* p = nullptr;
    if (!g->GetPrimitive(probe, &p).ok()) {
      return sdk::FailedPrecondition(sdk::Format(
          "cpu backend options: onednn_bf16=native: oneDNN %s has no bf16 matmul on "
          "this CPU (%s)",
          onednn::VersionString(*api).c_str(), onednn::IsaName(g->isa_)));
    }
  }
  *out = std::move(g);
  return Status::Ok();
}

OneDnnGemm::~OneDnnGemm() {
  for (auto& [key, p] : cache_) {
    for (dnnl_memory_t m : {p.a, p.b, p.bias, p.c}) {
      if (m != nullptr) api_->dnnl_memory_destroy(m);
    }
    if (p.primitive != nullptr) api_->dnnl_primitive_destroy(p.primitive);
  }
  if (stream_ != nullptr) api_->dnnl_stream_destroy(stream_);
  if (engine_ != nullptr) api_->dnnl_engine_destroy(engine_);
}

std::string OneDnnGemm::Kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string s;
  for (const std::string& k : kernels_) s += (s.empty() ? "" : ", ") + k;
  return s;
}

Status OneDnnGemm::GetPrimitive(const Key& key, Primitive** out) {
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    *out = &it->second;
    return Status::Ok();
  }
  const auto [m, n, k, trans_a, trans_b, a_dt, b_dt, c_dt, has_bias, alpha, beta] = key;
  // Logical A[M,K], B[K,N], C[M,N]; a transposed operand is its stored
  // row-major matrix read with swapped strides.
  const dnnl_dims_t a_dims = {m, k}, b_dims = {k, n}, c_dims = {m, n}, bias_dims = {1, n};
  const dnnl_dims_t a_strides = {trans_a ? 1 : k, trans_a ? m : 1};
  const dnnl_dims_t b_strides = {trans_b ? 1 : n, trans_b ? k : 1};
  const dnnl_dims_t c_strides = {n, 1}, bias_strides = {n, 1};
  dnnl_memory_desc_t a_md, b_md, c_md, bias_md;
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_strides(&a_md, 2, a_dims, DnnlType(a_dt), a_strides), "A descriptor");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_strides(&b_md, 2, b_dims, DnnlType(b_dt), b_strides), "B descriptor");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_strides(&c_md, 2, c_dims, DnnlType(c_dt), c_strides), "C descriptor");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_strides(&bias_md, 2, bias_dims, dnnl_f32, bias_strides), "bias descriptor");
  // oneDNN scales its fused bias by alpha (alpha * (A B + bias)); the ABI's
  // bias is unscaled, so with alpha != 1 it is added by a binary post-op
  // after the sum instead: alpha A B + beta C + bias.
  const bool bias_post_op = has_bias && alpha != 1.0f;
  dnnl_matmul_desc_t desc;
  MNT_DNNL_(api_->dnnl_matmul_desc_init(&desc, &a_md, &b_md,
                                        has_bias && !bias_post_op ? &bias_md : nullptr, &c_md),
            "matmul descriptor");

  dnnl_primitive_attr_t attr = nullptr;
  MNT_DNNL_(api_->dnnl_primitive_attr_create(&attr), "attribute creation");
  dnnl_post_ops_t post_ops = nullptr;
  Status s = Status::Ok();
  if (alpha != 1.0f) {
    s = Check(api_->dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha), "output scale");
  }
  if (s.ok() && (beta != 0.0f || bias_post_op)) {
    s = Check(api_->dnnl_post_ops_create(&post_ops), "post-ops creation");
    // beta == 0 never reads C (it may hold NaN).
    if (s.ok() && beta != 0.0f) {
      s = Check(api_->dnnl_post_ops_append_sum(post_ops, beta), "sum post-op");
    }
    if (s.ok() && bias_post_op) {
      s = Check(api_->dnnl_post_ops_append_binary(post_ops, dnnl_binary_add, &bias_md),
                "bias post-op");
    }
    if (s.ok()) s = Check(api_->dnnl_primitive_attr_set_post_ops(attr, post_ops), "post-ops");
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (s.ok()) {
    s = Check(api_->dnnl_primitive_desc_create(&pd, &desc, attr, engine_, nullptr),
              "matmul primitive descriptor");
  }
  if (post_ops != nullptr) api_->dnnl_post_ops_destroy(post_ops);
  api_->dnnl_primitive_attr_destroy(attr);
  MNT_RETURN_IF_ERROR(s);

  Primitive p;
  p.bias_arg = !has_bias ? 0
               : bias_post_op ? DNNL_ARG_ATTR_MULTIPLE_POST_OP(beta != 0.0f ? 1 : 0) | DNNL_ARG_SRC_1
                              : DNNL_ARG_BIAS;
  const char* impl = nullptr;
  if (api_->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
      impl != nullptr) {
    kernels_.insert(impl);
  }
  s = Check(api_->dnnl_primitive_create(&p.primitive, pd), "matmul primitive");
  api_->dnnl_primitive_desc_destroy(pd);
  MNT_RETURN_IF_ERROR(s);
  Primitive& stored = cache_[key] = p;
  MNT_DNNL_(api_->dnnl_memory_create(&stored.a, &a_md, engine_, DNNL_MEMORY_NONE), "A memory");
  MNT_DNNL_(api_->dnnl_memory_create(&stored.b, &b_md, engine_, DNNL_MEMORY_NONE), "B memory");
  MNT_DNNL_(api_->dnnl_memory_create(&stored.c, &c_md, engine_, DNNL_MEMORY_NONE), "C memory");
  if (has_bias) {
    MNT_DNNL_(api_->dnnl_memory_create(&stored.bias, &bias_md, engine_, DNNL_MEMORY_NONE),
              "bias memory");
  }
  *out = &stored;
  return Status::Ok();
}

Status OneDnnGemm::Run(const backend::GemmCall& g) {
  const MNT_GemmParams* p = g.params;
  const MNT_ComputeMode mode = p->compute;
  std::lock_guard<std::mutex> lock(mu_);

  // Each operand as oneDNN will read it: the tensor itself when its storage
  // already is the compute format, else a converted copy.
  const bool bf16_native = native_bf16_ && mode == MNT_COMPUTE_BF16;
  auto input = [&](const MNT_Tensor& t, std::vector<float>* f32,
                   std::vector<uint16_t>* bf16, int* dtype) -> void* {
    const size_t n = static_cast<size_t>(sdk::NumElements(t));
    if (bf16_native) {
      *dtype = MNT_DTYPE_BF16;
      if (t.dtype == MNT_DTYPE_BF16) return t.data;
      if (bf16->size() < n) bf16->resize(n);
      ReadBf16(t, bf16->data());
      return bf16->data();
    }
    *dtype = MNT_DTYPE_F32;
    if (t.dtype == MNT_DTYPE_F32 && mode == MNT_COMPUTE_F32) return t.data;
    if (f32->size() < n) f32->resize(n);
    ReadRounded(t, mode, f32->data());
    return f32->data();
  };
  int a_dt = 0, b_dt = 0;
  void* a = input(*g.a, &a_f32_, &a_bf16_, &a_dt);
  void* b = input(*g.b, &b_f32_, &b_bf16_, &b_dt);

  void* bias = nullptr;
  if (g.bias.present()) {
    if (g.bias->dtype == MNT_DTYPE_F32 && mode == MNT_COMPUTE_F32) {
      bias = g.bias->data;
    } else {
      bias_f32_.resize(static_cast<size_t>(g.n));
      ReadRounded(*g.bias, mode, bias_f32_.data());
      bias = bias_f32_.data();
    }
  }

  // C: written in place when oneDNN can store its dtype, else through fp32.
  const MNT_DType c_type = g.c->dtype;
  const bool c_direct = c_type == MNT_DTYPE_F32 || (bf16_native && c_type == MNT_DTYPE_BF16);
  void* c = g.c->data;
  if (!c_direct) {
    c_f32_.resize(static_cast<size_t>(g.m * g.n));
    if (p->beta != 0.0f) ReadF32(*g.c, c_f32_.data());
    c = c_f32_.data();
  }

  const Key key{g.m, g.n, g.k, g.trans_a, g.trans_b, a_dt, b_dt,
                c_direct ? static_cast<int>(c_type) : static_cast<int>(MNT_DTYPE_F32),
                bias != nullptr, p->alpha, p->beta};
  Primitive* prim = nullptr;
  MNT_RETURN_IF_ERROR(GetPrimitive(key, &prim));
  MNT_DNNL_(api_->dnnl_memory_set_data_handle(prim->a, a), "A handle");
  MNT_DNNL_(api_->dnnl_memory_set_data_handle(prim->b, b), "B handle");
  MNT_DNNL_(api_->dnnl_memory_set_data_handle(prim->c, c), "C handle");
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, prim->a},
                             {DNNL_ARG_WEIGHTS, prim->b},
                             {DNNL_ARG_DST, prim->c},
                             {prim->bias_arg, prim->bias}};
  int nargs = 3;
  if (bias != nullptr) {
    MNT_DNNL_(api_->dnnl_memory_set_data_handle(prim->bias, bias), "bias handle");
    nargs = 4;
  }
  MNT_DNNL_(api_->dnnl_primitive_execute(prim->primitive, stream_, nargs, args), "matmul");
  if (!c_direct) WriteF32(c_f32_.data(), *g.c);
  return Status::Ok();
}

}  // namespace mnt::cpu
