// The shared operand checks (plugins/backends/common/op_call.h), named in
// this backend's namespace.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_OP_CALL_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_OP_CALL_H_

#include "plugins/backends/common/op_call.h"

namespace mnt::cpu {

using ::mnt::backend::LastDim;
using ::mnt::backend::OpCall;
using ::mnt::backend::Operand;
using ::mnt::backend::Rows;

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_OP_CALL_H_
