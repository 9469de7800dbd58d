// oneDNN's C API, resolved from libdnnl.so.2 at run time. The plugin does not
// link oneDNN: the library is 40 MB and optional (the GPU device bundle and a
// machine without it run the reference GEMM), so the functions the backend
// calls are looked up once with dlsym and reached through this table.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_API_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_API_H_

#include <string>

#include "oneapi/dnnl/dnnl.h"

namespace mnt::cpu::onednn {

// Every oneDNN function the backend uses; add one here before calling it.
#define MNT_ONEDNN_FUNCTIONS(X)             \
  X(dnnl_version)                           \
  X(dnnl_get_effective_cpu_isa)             \
  X(dnnl_engine_create)                     \
  X(dnnl_engine_destroy)                    \
  X(dnnl_stream_create)                     \
  X(dnnl_stream_destroy)                    \
  X(dnnl_stream_wait)                       \
  X(dnnl_memory_desc_init_by_strides)       \
  X(dnnl_memory_desc_init_by_tag)           \
  X(dnnl_memory_create)                     \
  X(dnnl_memory_set_data_handle)            \
  X(dnnl_memory_destroy)                    \
  X(dnnl_matmul_desc_init)                  \
  X(dnnl_dilated_convolution_forward_desc_init) \
  X(dnnl_dilated_convolution_backward_data_desc_init) \
  X(dnnl_dilated_convolution_backward_weights_desc_init) \
  X(dnnl_memory_desc_equal)                 \
  X(dnnl_memory_desc_get_size)              \
  X(dnnl_reorder_primitive_desc_create)     \
  X(dnnl_primitive_attr_create)             \
  X(dnnl_primitive_attr_destroy)            \
  X(dnnl_primitive_attr_set_output_scales)  \
  X(dnnl_primitive_attr_set_post_ops)       \
  X(dnnl_primitive_attr_set_scratchpad_mode) \
  X(dnnl_post_ops_create)                   \
  X(dnnl_post_ops_destroy)                  \
  X(dnnl_post_ops_append_sum)               \
  X(dnnl_post_ops_append_binary)            \
  X(dnnl_primitive_desc_create)             \
  X(dnnl_primitive_desc_destroy)            \
  X(dnnl_primitive_desc_query)              \
  X(dnnl_primitive_desc_query_md)           \
  X(dnnl_primitive_create)                  \
  X(dnnl_primitive_destroy)                 \
  X(dnnl_primitive_execute)                 \
  X(dnnl_sgemm)

struct Api {
#define MNT_ONEDNN_POINTER_(f) decltype(&::f) f = nullptr;
  MNT_ONEDNN_FUNCTIONS(MNT_ONEDNN_POINTER_)
#undef MNT_ONEDNN_POINTER_
};

// The table, loaded on first use (thread safe); nullptr when libdnnl.so.2
// (or $MANTISSA_ONEDNN_LIBRARY) cannot be loaded or lacks a function, with
// the reason in *why.
const Api* Load(std::string* why);

// "2.6.3" and the instruction set oneDNN dispatches to on this CPU
// ("avx2", "avx512_core_amx", ...).
std::string VersionString(const Api& api);
const char* IsaName(dnnl_cpu_isa_t isa);
// Whether oneDNN has native bf16 matmul kernels on this CPU (AVX512_BF16 or
// AMX); otherwise bf16 operands are widened to fp32 first.
bool HasNativeBf16(dnnl_cpu_isa_t isa);

}  // namespace mnt::cpu::onednn

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_API_H_
