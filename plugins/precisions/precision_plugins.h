// Mantissa precision plugins: the five plugin tables. Each .so exports one
// of them (export_<name>.cc); tests link :precisions_lib and call through the
// C tables directly.
#ifndef MANTISSA_PLUGINS_PRECISIONS_PRECISION_PLUGINS_H_
#define MANTISSA_PLUGINS_PRECISIONS_PRECISION_PLUGINS_H_

#include "plugins/abi/mantissa.h"

namespace mnt::precision {

const MNT_Plugin_Api* Fp32PluginApi();  // "fp32"
const MNT_Plugin_Api* Tf32PluginApi();  // "tf32"
const MNT_Plugin_Api* Bf16PluginApi();  // "bf16"
const MNT_Plugin_Api* Fp16PluginApi();  // "fp16"
// bf16 with FP8 GEMMs and Transformer Engine's delayed scaling (ABI 1.10's
// Precision_GetScalingRecipe).
const MNT_Plugin_Api* Fp8PluginApi();   // "fp8"

}  // namespace mnt::precision

#endif  // MANTISSA_PLUGINS_PRECISIONS_PRECISION_PLUGINS_H_
