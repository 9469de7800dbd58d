#include "plugins/backends/cpu/onednn_gemm.h"

#include <omp.h>

#include <algorithm>

#include "plugins/backends/cpu/gemm_tiles.h"
#include "plugins/backends/cpu/parallel.h"
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

Status OneDnnGemm::Create(const onednn::Api* api, bool native_bf16, int pool,
                          std::unique_ptr<OneDnnGemm>* out) {
  std::unique_ptr<OneDnnGemm> g(new OneDnnGemm(api, native_bf16, std::max(pool, 1)));
  g->isa_ = api->dnnl_get_effective_cpu_isa();
  MNT_DNNL_(api->dnnl_engine_create(&g->engine_, dnnl_cpu, 0), "engine creation");
  if (native_bf16) {
    // oneDNN 2.x implements bf16 matmul only from AVX512 on: ask it for one.
    const Key probe{16, 16, 16, 16, 16, 16, false, false, MNT_DTYPE_BF16, MNT_DTYPE_BF16,
                    MNT_DTYPE_F32, false, 1.0f, 0.0f};
    Primitive* p = nullptr;
    if (!g->GetPrimitive(probe, 1, &p).ok()) {
      return sdk::FailedPrecondition(sdk::Format(
          "cpu backend options: onednn_bf16=native: oneDNN %s has no bf16 matmul on "
          "this CPU (%s)",
          onednn::VersionString(*api).c_str(), onednn::IsaName(g->isa_)));
    }
  }
  *out = std::move(g);
  return Status::Ok();
}

void OneDnnGemm::Destroy(Slot& slot) {
  for (dnnl_memory_t m : {slot.a, slot.b, slot.bias, slot.c, slot.scratchpad}) {
    if (m != nullptr) api_->dnnl_memory_destroy(m);
  }
  if (slot.stream != nullptr) api_->dnnl_stream_destroy(slot.stream);
}

OneDnnGemm::~OneDnnGemm() {
  for (auto& [key, p] : cache_) {
    for (Slot& slot : p.slots) Destroy(slot);
    if (p.primitive != nullptr) api_->dnnl_primitive_destroy(p.primitive);
  }
  if (engine_ != nullptr) api_->dnnl_engine_destroy(engine_);
}

std::string OneDnnGemm::Kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string s;
  for (const std::string& k : kernels_) s += (s.empty() ? "" : ", ") + k;
  return s;
}

Status OneDnnGemm::GetPrimitive(const Key& key, int slots, Primitive** out) {
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    Primitive p;
    MNT_RETURN_IF_ERROR(CreatePrimitive(key, &p));
    it = cache_.emplace(key, std::move(p)).first;
  }
  MNT_RETURN_IF_ERROR(GrowSlots(slots, &it->second));
  *out = &it->second;
  return Status::Ok();
}

Status OneDnnGemm::CreatePrimitive(const Key& key, Primitive* out) {
  Primitive& p = *out;
  // Created for one thread: oneDNN sizes a primitive's threading when it
  // is created, and every tile runs on one.
  const ScopedTeam one_thread(1);
  const auto [m, n, k, lda, ldb, ldc, trans_a, trans_b, a_dt, b_dt, c_dt, has_bias, alpha,
              beta] = key;
  // Logical A[M,K], B[K,N], C[M,N]; a transposed operand is its stored
  // row-major matrix read with swapped strides.
  const dnnl_dims_t a_dims = {m, k}, b_dims = {k, n}, c_dims = {m, n}, bias_dims = {1, n};
  const dnnl_dims_t a_strides = {trans_a ? 1 : lda, trans_a ? lda : 1};
  const dnnl_dims_t b_strides = {trans_b ? 1 : ldb, trans_b ? ldb : 1};
  const dnnl_dims_t c_strides = {ldc, 1}, bias_strides = {n, 1};
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_strides(&p.a_md, 2, a_dims, DnnlType(a_dt), a_strides), "A descriptor");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_strides(&p.b_md, 2, b_dims, DnnlType(b_dt), b_strides), "B descriptor");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_strides(&p.c_md, 2, c_dims, DnnlType(c_dt), c_strides), "C descriptor");
  MNT_DNNL_(api_->dnnl_memory_desc_init_by_strides(&p.bias_md, 2, bias_dims, dnnl_f32, bias_strides), "bias descriptor");
  // oneDNN scales its fused bias by alpha (alpha * (A B + bias)); the ABI's
  // bias is unscaled, so with alpha != 1 it is added by a binary post-op
  // after the sum instead: alpha A B + beta C + bias.
  const bool bias_post_op = has_bias && alpha != 1.0f;
  dnnl_matmul_desc_t desc;
  MNT_DNNL_(api_->dnnl_matmul_desc_init(&desc, &p.a_md, &p.b_md,
                                        has_bias && !bias_post_op ? &p.bias_md : nullptr,
                                        &p.c_md),
            "matmul descriptor");

  dnnl_primitive_attr_t attr = nullptr;
  MNT_DNNL_(api_->dnnl_primitive_attr_create(&attr), "attribute creation");
  dnnl_post_ops_t post_ops = nullptr;
  Status s = Check(api_->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
                   "user scratchpad mode");
  if (s.ok() && alpha != 1.0f) {
    s = Check(api_->dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha), "output scale");
  }
  if (s.ok() && (beta != 0.0f || bias_post_op)) {
    s = Check(api_->dnnl_post_ops_create(&post_ops), "post-ops creation");
    // beta == 0 never reads C (it may hold NaN).
    if (s.ok() && beta != 0.0f) {
      s = Check(api_->dnnl_post_ops_append_sum(post_ops, beta), "sum post-op");
    }
    if (s.ok() && bias_post_op) {
      s = Check(api_->dnnl_post_ops_append_binary(post_ops, dnnl_binary_add, &p.bias_md),
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

  p.bias_arg = !has_bias ? 0
               : bias_post_op ? DNNL_ARG_ATTR_MULTIPLE_POST_OP(beta != 0.0f ? 1 : 0) | DNNL_ARG_SRC_1
                              : DNNL_ARG_BIAS;
  const char* impl = nullptr;
  if (api_->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
      impl != nullptr) {
    kernels_.insert(impl);
  }
  const dnnl_memory_desc_t* scratch = api_->dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (scratch != nullptr) {
    p.scratchpad_md = *scratch;
    p.scratchpad_size = api_->dnnl_memory_desc_get_size(scratch);
  }
  s = Check(api_->dnnl_primitive_create(&p.primitive, pd), "matmul primitive");
  api_->dnnl_primitive_desc_destroy(pd);
  return s;
}

Status OneDnnGemm::GrowSlots(int slots, Primitive* out) {
  Primitive& p = *out;
  while (static_cast<int>(p.slots.size()) < slots) {
    Slot& slot = p.slots.emplace_back();
    MNT_DNNL_(api_->dnnl_stream_create(&slot.stream, engine_, dnnl_stream_default_flags), "stream creation");
    MNT_DNNL_(api_->dnnl_memory_create(&slot.a, &p.a_md, engine_, DNNL_MEMORY_NONE), "A memory");
    MNT_DNNL_(api_->dnnl_memory_create(&slot.b, &p.b_md, engine_, DNNL_MEMORY_NONE), "B memory");
    MNT_DNNL_(api_->dnnl_memory_create(&slot.c, &p.c_md, engine_, DNNL_MEMORY_NONE), "C memory");
    if (p.bias_arg != 0) {
      MNT_DNNL_(api_->dnnl_memory_create(&slot.bias, &p.bias_md, engine_, DNNL_MEMORY_NONE),
                "bias memory");
    }
    if (p.scratchpad_size > 0) {
      slot.scratchpad_bytes.resize(p.scratchpad_size);
      MNT_DNNL_(api_->dnnl_memory_create(&slot.scratchpad, &p.scratchpad_md, engine_,
                                         slot.scratchpad_bytes.data()),
                "scratchpad memory");
    }
  }
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

  // The tiles, and a primitive for each tile length (the last may be short).
  const GemmTiles tiles = TileGemm(g.m, g.n, g.k, pool_);
  const int64_t extent = tiles.by_rows ? g.m : g.n;
  const int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n, ldc = g.n;
  const int c_key_dt = c_direct ? static_cast<int>(c_type) : static_cast<int>(MNT_DTYPE_F32);
  const int team = omp_in_parallel()
                       ? 1
                       : static_cast<int>(std::min<int64_t>(omp_get_max_threads(), tiles.count));
  auto tile_key = [&](int64_t length) {
    return Key{tiles.by_rows ? length : g.m, tiles.by_rows ? g.n : length, g.k, lda, ldb, ldc,
               g.trans_a, g.trans_b, a_dt, b_dt, c_key_dt, bias != nullptr, p->alpha, p->beta};
  };
  Primitive* full = nullptr;
  Primitive* last = nullptr;
  MNT_RETURN_IF_ERROR(GetPrimitive(tile_key(tiles.size), team, &full));
  MNT_RETURN_IF_ERROR(GetPrimitive(tile_key(tiles.Length(tiles.count - 1, extent)), team, &last));

  // Byte offsets of tile i's first element in each operand.
  const size_t a_size = a_dt == MNT_DTYPE_BF16 ? 2 : 4, b_size = b_dt == MNT_DTYPE_BF16 ? 2 : 4;
  const size_t c_size = c_key_dt == MNT_DTYPE_BF16 ? 2 : 4;
  std::vector<Status> failed(static_cast<size_t>(tiles.count), Status::Ok());
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1)
  for (int64_t i = 0; i < tiles.count; ++i) {
    // oneDNN 2.6 would open a nested team of omp_get_max_threads() inside
    // this region (new threads at every call, and K split by their count):
    // each tile is one thread's.
    const ScopedTeam one_thread(1);
    Primitive* prim = i + 1 < tiles.count ? full : last;
    Slot& slot = prim->slots[static_cast<size_t>(omp_get_thread_num())];
    const int64_t at = tiles.Begin(i);
    // Row band: rows of op(A) and C. Column band: columns of op(B), C, bias.
    const int64_t a_off = tiles.by_rows ? at * (g.trans_a ? 1 : lda) : 0;
    const int64_t b_off = tiles.by_rows ? 0 : at * (g.trans_b ? ldb : 1);
    const int64_t c_off = tiles.by_rows ? at * ldc : at;
    auto at_bytes = [](void* base, int64_t elements, size_t size) {
      return static_cast<void*>(static_cast<uint8_t*>(base) + elements * static_cast<int64_t>(size));
    };
    Status s = Check(api_->dnnl_memory_set_data_handle(slot.a, at_bytes(a, a_off, a_size)), "A handle");
    if (s.ok()) s = Check(api_->dnnl_memory_set_data_handle(slot.b, at_bytes(b, b_off, b_size)), "B handle");
    if (s.ok()) s = Check(api_->dnnl_memory_set_data_handle(slot.c, at_bytes(c, c_off, c_size)), "C handle");
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, slot.a}, {DNNL_ARG_WEIGHTS, slot.b},
                               {DNNL_ARG_DST, slot.c}};
    int nargs = 3;
    if (s.ok() && slot.scratchpad != nullptr) args[nargs++] = {DNNL_ARG_SCRATCHPAD, slot.scratchpad};
    if (s.ok() && bias != nullptr) {
      s = Check(api_->dnnl_memory_set_data_handle(
                    slot.bias, at_bytes(bias, tiles.by_rows ? 0 : at, sizeof(float))),
                "bias handle");
      args[nargs++] = {prim->bias_arg, slot.bias};
    }
    if (s.ok()) s = Check(api_->dnnl_primitive_execute(prim->primitive, slot.stream, nargs, args), "matmul");
    if (s.ok()) s = Check(api_->dnnl_stream_wait(slot.stream), "stream wait");
    failed[static_cast<size_t>(i)] = s;
  }
  for (const Status& s : failed) MNT_RETURN_IF_ERROR(s);
  if (!c_direct) WriteF32(c_f32_.data(), *g.c);
  return Status::Ok();
}

}  // namespace mnt::cpu
