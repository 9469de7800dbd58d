// Every op's typed call and contract check (calls/<family>.h, stems as the
// backends' kernel files): for each op X(NAME, Name) of MNT_FOR_EACH_OP
// (plugins/sdk/op_list.h) a `struct Name##Call` and
//   sdk::Status Check##Name(const OpCall& call, Name##Call* out);
// which checks counts, params, dtypes and shapes once for every backend, so
// a kernel starts from operands it can trust.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_H_

#include "plugins/backends/common/calls/attention.h"
#include "plugins/backends/common/calls/batchnorm.h"
#include "plugins/backends/common/calls/conv.h"
#include "plugins/backends/common/calls/elementwise.h"
#include "plugins/backends/common/calls/embedding.h"
#include "plugins/backends/common/calls/fp8.h"
#include "plugins/backends/common/calls/gemm.h"
#include "plugins/backends/common/calls/layernorm.h"
#include "plugins/backends/common/calls/loss_scaling.h"
#include "plugins/backends/common/calls/optimizers.h"
#include "plugins/backends/common/calls/pool.h"
#include "plugins/backends/common/calls/reduce.h"
#include "plugins/backends/common/calls/softmax_cross_entropy.h"
#include "plugins/backends/common/calls/tensor_stats.h"
#include "plugins/sdk/op_list.h"

// Inside a backend class: one kernel method per op,
//   sdk::Status Name(const backend::Name##Call& call);
// defined in the backend's file for the op's family. An op the class marks
// unsupported (Supports() false) needs no definition.
#define MNT_BACKEND_KERNEL_DECLARATION_(NAME, Name) \
  ::mnt::sdk::Status Name(const ::mnt::backend::Name##Call& call);
#define MNT_DECLARE_BACKEND_KERNELS() \
  MNT_FOR_EACH_OP(MNT_BACKEND_KERNEL_DECLARATION_)

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_H_
