/* Freezes the Mantissa plugin ABI's memory layout as a C compiler sees it
 * (x86-64 Linux, LP64): the same numbers as abi_layout_test.cc, checked with
 * _Static_assert so a C plugin and the C++ host agree byte for byte. Changing
 * any of them breaks every plugin built so far; append fields instead, or bump
 * MNT_ABI_MAJOR (see docs/abi.md). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plugins/abi/mantissa.h"

_Static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8 && sizeof(int) == 4,
               "the frozen numbers below are for LP64 (x86-64 Linux)");
_Static_assert(sizeof(MNT_DType) == 4, "enums are int-sized");

/* ---- mnt_common.h ------------------------------------------------ */
_Static_assert(sizeof(MNT_Extension_Base) == 24, "sizeof MNT_Extension_Base");
_Static_assert(offsetof(MNT_Extension_Base, struct_size) == 0, "MNT_Extension_Base.struct_size");
_Static_assert(offsetof(MNT_Extension_Base, type) == 8, "MNT_Extension_Base.type");
_Static_assert(offsetof(MNT_Extension_Base, next) == 16, "MNT_Extension_Base.next");
/* 1.9 */
_Static_assert(sizeof(MNT_Extension_Header) == 40, "sizeof MNT_Extension_Header");
_Static_assert(offsetof(MNT_Extension_Header, base) == 0, "MNT_Extension_Header.base");
_Static_assert(offsetof(MNT_Extension_Header, name) == 24, "MNT_Extension_Header.name");
_Static_assert(offsetof(MNT_Extension_Header, version) == 32, "MNT_Extension_Header.version");
_Static_assert(sizeof(MNT_Capabilities_Extension) == 56, "sizeof MNT_Capabilities_Extension");
_Static_assert(offsetof(MNT_Capabilities_Extension, header) == 0, "MNT_Capabilities_Extension.header");
_Static_assert(offsetof(MNT_Capabilities_Extension, capabilities) == 40, "MNT_Capabilities_Extension.capabilities");
_Static_assert(offsetof(MNT_Capabilities_Extension, num_capabilities) == 48, "MNT_Capabilities_Extension.num_capabilities");
_Static_assert(sizeof(MNT_Tensor) == 72, "sizeof MNT_Tensor");
_Static_assert(offsetof(MNT_Tensor, struct_size) == 0, "MNT_Tensor.struct_size");
_Static_assert(offsetof(MNT_Tensor, data) == 8, "MNT_Tensor.data");
_Static_assert(offsetof(MNT_Tensor, dtype) == 16, "MNT_Tensor.dtype");
_Static_assert(offsetof(MNT_Tensor, rank) == 20, "MNT_Tensor.rank");
_Static_assert(offsetof(MNT_Tensor, dims) == 24, "MNT_Tensor.dims");
_Static_assert(sizeof(MNT_Api_Version) == 24, "sizeof MNT_Api_Version");
_Static_assert(offsetof(MNT_Api_Version, struct_size) == 0, "MNT_Api_Version.struct_size");
_Static_assert(offsetof(MNT_Api_Version, extension_start) == 8, "MNT_Api_Version.extension_start");
_Static_assert(offsetof(MNT_Api_Version, major_version) == 16, "MNT_Api_Version.major_version");
_Static_assert(offsetof(MNT_Api_Version, minor_version) == 20, "MNT_Api_Version.minor_version");
_Static_assert(sizeof(MNT_Plugin_Api) == 120, "sizeof MNT_Plugin_Api");
_Static_assert(offsetof(MNT_Plugin_Api, struct_size) == 0, "MNT_Plugin_Api.struct_size");
_Static_assert(offsetof(MNT_Plugin_Api, extension_start) == 8, "MNT_Plugin_Api.extension_start");
_Static_assert(offsetof(MNT_Plugin_Api, abi_version) == 16, "MNT_Plugin_Api.abi_version");
_Static_assert(offsetof(MNT_Plugin_Api, kind) == 40, "MNT_Plugin_Api.kind");
_Static_assert(offsetof(MNT_Plugin_Api, name) == 48, "MNT_Plugin_Api.name");
_Static_assert(offsetof(MNT_Plugin_Api, description) == 56, "MNT_Plugin_Api.description");
_Static_assert(offsetof(MNT_Plugin_Api, Error_Destroy) == 64, "MNT_Plugin_Api.Error_Destroy");
_Static_assert(offsetof(MNT_Plugin_Api, Error_Message) == 72, "MNT_Plugin_Api.Error_Message");
_Static_assert(offsetof(MNT_Plugin_Api, Error_GetCode) == 80, "MNT_Plugin_Api.Error_GetCode");
_Static_assert(offsetof(MNT_Plugin_Api, Plugin_Initialize) == 88, "MNT_Plugin_Api.Plugin_Initialize");
_Static_assert(offsetof(MNT_Plugin_Api, backend) == 96, "MNT_Plugin_Api.backend");
_Static_assert(offsetof(MNT_Plugin_Api, precision) == 104, "MNT_Plugin_Api.precision");
_Static_assert(offsetof(MNT_Plugin_Api, model) == 112, "MNT_Plugin_Api.model");

/* ---- mnt_backend.h ----------------------------------------------- */
_Static_assert(sizeof(MNT_FillParams) == 16, "sizeof MNT_FillParams");
_Static_assert(offsetof(MNT_FillParams, struct_size) == 0, "MNT_FillParams.struct_size");
_Static_assert(offsetof(MNT_FillParams, value) == 8, "MNT_FillParams.value");
_Static_assert(sizeof(MNT_GemmParams) == 32, "sizeof MNT_GemmParams");
_Static_assert(offsetof(MNT_GemmParams, struct_size) == 0, "MNT_GemmParams.struct_size");
_Static_assert(offsetof(MNT_GemmParams, trans_a) == 8, "MNT_GemmParams.trans_a");
_Static_assert(offsetof(MNT_GemmParams, trans_b) == 12, "MNT_GemmParams.trans_b");
_Static_assert(offsetof(MNT_GemmParams, alpha) == 16, "MNT_GemmParams.alpha");
_Static_assert(offsetof(MNT_GemmParams, beta) == 20, "MNT_GemmParams.beta");
_Static_assert(offsetof(MNT_GemmParams, compute) == 24, "MNT_GemmParams.compute");
_Static_assert(sizeof(MNT_AccumulateParams) == 16, "sizeof MNT_AccumulateParams");
_Static_assert(offsetof(MNT_AccumulateParams, struct_size) == 0, "MNT_AccumulateParams.struct_size");
_Static_assert(offsetof(MNT_AccumulateParams, accumulate) == 8, "MNT_AccumulateParams.accumulate");
_Static_assert(sizeof(MNT_ActivationParams) == 16, "sizeof MNT_ActivationParams");
_Static_assert(offsetof(MNT_ActivationParams, struct_size) == 0, "MNT_ActivationParams.struct_size");
_Static_assert(offsetof(MNT_ActivationParams, activation) == 8, "MNT_ActivationParams.activation");
_Static_assert(sizeof(MNT_AddParams) == 16, "sizeof MNT_AddParams");
_Static_assert(offsetof(MNT_AddParams, struct_size) == 0, "MNT_AddParams.struct_size");
_Static_assert(offsetof(MNT_AddParams, alpha) == 8, "MNT_AddParams.alpha");
_Static_assert(offsetof(MNT_AddParams, beta) == 12, "MNT_AddParams.beta");
_Static_assert(sizeof(MNT_CrossEntropyParams) == 24, "sizeof MNT_CrossEntropyParams");
_Static_assert(offsetof(MNT_CrossEntropyParams, struct_size) == 0, "MNT_CrossEntropyParams.struct_size");
_Static_assert(offsetof(MNT_CrossEntropyParams, grad_scale) == 8, "MNT_CrossEntropyParams.grad_scale");
_Static_assert(offsetof(MNT_CrossEntropyParams, num_classes) == 16, "MNT_CrossEntropyParams.num_classes");
_Static_assert(sizeof(MNT_LayerNormParams) == 16, "sizeof MNT_LayerNormParams");
_Static_assert(offsetof(MNT_LayerNormParams, struct_size) == 0, "MNT_LayerNormParams.struct_size");
_Static_assert(offsetof(MNT_LayerNormParams, epsilon) == 8, "MNT_LayerNormParams.epsilon");
_Static_assert(offsetof(MNT_LayerNormParams, accumulate) == 12, "MNT_LayerNormParams.accumulate");
_Static_assert(sizeof(MNT_ReduceParams) == 16, "sizeof MNT_ReduceParams");
_Static_assert(offsetof(MNT_ReduceParams, struct_size) == 0, "MNT_ReduceParams.struct_size");
_Static_assert(offsetof(MNT_ReduceParams, kind) == 8, "MNT_ReduceParams.kind");
_Static_assert(sizeof(MNT_SgdParams) == 64, "sizeof MNT_SgdParams");
_Static_assert(offsetof(MNT_SgdParams, struct_size) == 0, "MNT_SgdParams.struct_size");
_Static_assert(offsetof(MNT_SgdParams, lr) == 8, "MNT_SgdParams.lr");
_Static_assert(offsetof(MNT_SgdParams, momentum) == 12, "MNT_SgdParams.momentum");
_Static_assert(offsetof(MNT_SgdParams, weight_decay) == 16, "MNT_SgdParams.weight_decay");
_Static_assert(offsetof(MNT_SgdParams, nesterov) == 20, "MNT_SgdParams.nesterov");
_Static_assert(offsetof(MNT_SgdParams, rounding) == 24, "MNT_SgdParams.rounding");
_Static_assert(offsetof(MNT_SgdParams, rounding_seed) == 32, "MNT_SgdParams.rounding_seed");
_Static_assert(offsetof(MNT_SgdParams, rounding_tensor) == 40, "MNT_SgdParams.rounding_tensor");
_Static_assert(offsetof(MNT_SgdParams, rounding_step) == 48, "MNT_SgdParams.rounding_step");
_Static_assert(sizeof(MNT_AdamWParams) == 72, "sizeof MNT_AdamWParams");
_Static_assert(offsetof(MNT_AdamWParams, struct_size) == 0, "MNT_AdamWParams.struct_size");
_Static_assert(offsetof(MNT_AdamWParams, lr) == 8, "MNT_AdamWParams.lr");
_Static_assert(offsetof(MNT_AdamWParams, beta1) == 12, "MNT_AdamWParams.beta1");
_Static_assert(offsetof(MNT_AdamWParams, beta2) == 16, "MNT_AdamWParams.beta2");
_Static_assert(offsetof(MNT_AdamWParams, epsilon) == 20, "MNT_AdamWParams.epsilon");
_Static_assert(offsetof(MNT_AdamWParams, weight_decay) == 24, "MNT_AdamWParams.weight_decay");
_Static_assert(offsetof(MNT_AdamWParams, step) == 32, "MNT_AdamWParams.step");
_Static_assert(offsetof(MNT_AdamWParams, rounding) == 40, "MNT_AdamWParams.rounding");
_Static_assert(offsetof(MNT_AdamWParams, rounding_seed) == 48, "MNT_AdamWParams.rounding_seed");
_Static_assert(offsetof(MNT_AdamWParams, rounding_tensor) == 56, "MNT_AdamWParams.rounding_tensor");
_Static_assert(sizeof(MNT_AttentionParams) == 24, "sizeof MNT_AttentionParams");
_Static_assert(offsetof(MNT_AttentionParams, struct_size) == 0, "MNT_AttentionParams.struct_size");
_Static_assert(offsetof(MNT_AttentionParams, num_heads) == 8, "MNT_AttentionParams.num_heads");
_Static_assert(offsetof(MNT_AttentionParams, causal) == 12, "MNT_AttentionParams.causal");
_Static_assert(offsetof(MNT_AttentionParams, scale) == 16, "MNT_AttentionParams.scale");
_Static_assert(offsetof(MNT_AttentionParams, compute) == 20, "MNT_AttentionParams.compute");
_Static_assert(sizeof(MNT_Conv2dParams) == 48, "sizeof MNT_Conv2dParams");
_Static_assert(offsetof(MNT_Conv2dParams, struct_size) == 0, "MNT_Conv2dParams.struct_size");
_Static_assert(offsetof(MNT_Conv2dParams, pad_h) == 8, "MNT_Conv2dParams.pad_h");
_Static_assert(offsetof(MNT_Conv2dParams, pad_w) == 12, "MNT_Conv2dParams.pad_w");
_Static_assert(offsetof(MNT_Conv2dParams, stride_h) == 16, "MNT_Conv2dParams.stride_h");
_Static_assert(offsetof(MNT_Conv2dParams, stride_w) == 20, "MNT_Conv2dParams.stride_w");
_Static_assert(offsetof(MNT_Conv2dParams, dilation_h) == 24, "MNT_Conv2dParams.dilation_h");
_Static_assert(offsetof(MNT_Conv2dParams, dilation_w) == 28, "MNT_Conv2dParams.dilation_w");
_Static_assert(offsetof(MNT_Conv2dParams, groups) == 32, "MNT_Conv2dParams.groups");
_Static_assert(offsetof(MNT_Conv2dParams, compute) == 36, "MNT_Conv2dParams.compute");
_Static_assert(offsetof(MNT_Conv2dParams, accumulate) == 40, "MNT_Conv2dParams.accumulate");
_Static_assert(sizeof(MNT_Pool2dParams) == 40, "sizeof MNT_Pool2dParams");
_Static_assert(offsetof(MNT_Pool2dParams, struct_size) == 0, "MNT_Pool2dParams.struct_size");
_Static_assert(offsetof(MNT_Pool2dParams, kind) == 8, "MNT_Pool2dParams.kind");
_Static_assert(offsetof(MNT_Pool2dParams, window_h) == 12, "MNT_Pool2dParams.window_h");
_Static_assert(offsetof(MNT_Pool2dParams, window_w) == 16, "MNT_Pool2dParams.window_w");
_Static_assert(offsetof(MNT_Pool2dParams, stride_h) == 20, "MNT_Pool2dParams.stride_h");
_Static_assert(offsetof(MNT_Pool2dParams, stride_w) == 24, "MNT_Pool2dParams.stride_w");
_Static_assert(offsetof(MNT_Pool2dParams, pad_h) == 28, "MNT_Pool2dParams.pad_h");
_Static_assert(offsetof(MNT_Pool2dParams, pad_w) == 32, "MNT_Pool2dParams.pad_w");
_Static_assert(offsetof(MNT_Pool2dParams, count_include_pad) == 36, "MNT_Pool2dParams.count_include_pad");
_Static_assert(sizeof(MNT_BatchNormParams) == 24, "sizeof MNT_BatchNormParams");
_Static_assert(offsetof(MNT_BatchNormParams, struct_size) == 0, "MNT_BatchNormParams.struct_size");
_Static_assert(offsetof(MNT_BatchNormParams, training) == 8, "MNT_BatchNormParams.training");
_Static_assert(offsetof(MNT_BatchNormParams, momentum) == 12, "MNT_BatchNormParams.momentum");
_Static_assert(offsetof(MNT_BatchNormParams, epsilon) == 16, "MNT_BatchNormParams.epsilon");
_Static_assert(offsetof(MNT_BatchNormParams, accumulate) == 20, "MNT_BatchNormParams.accumulate");
_Static_assert(sizeof(MNT_AmpUpdateScaleParams) == 32, "sizeof MNT_AmpUpdateScaleParams");
_Static_assert(offsetof(MNT_AmpUpdateScaleParams, struct_size) == 0, "MNT_AmpUpdateScaleParams.struct_size");
_Static_assert(offsetof(MNT_AmpUpdateScaleParams, growth_factor) == 8, "MNT_AmpUpdateScaleParams.growth_factor");
_Static_assert(offsetof(MNT_AmpUpdateScaleParams, backoff_factor) == 12, "MNT_AmpUpdateScaleParams.backoff_factor");
_Static_assert(offsetof(MNT_AmpUpdateScaleParams, growth_interval) == 16, "MNT_AmpUpdateScaleParams.growth_interval");
_Static_assert(offsetof(MNT_AmpUpdateScaleParams, hysteresis) == 20, "MNT_AmpUpdateScaleParams.hysteresis");
_Static_assert(offsetof(MNT_AmpUpdateScaleParams, min_scale) == 24, "MNT_AmpUpdateScaleParams.min_scale");
_Static_assert(offsetof(MNT_AmpUpdateScaleParams, max_scale) == 28, "MNT_AmpUpdateScaleParams.max_scale");
_Static_assert(sizeof(MNT_ClipCoefficientParams) == 16, "sizeof MNT_ClipCoefficientParams");
_Static_assert(offsetof(MNT_ClipCoefficientParams, struct_size) == 0, "MNT_ClipCoefficientParams.struct_size");
_Static_assert(offsetof(MNT_ClipCoefficientParams, max_norm) == 8, "MNT_ClipCoefficientParams.max_norm");
_Static_assert(sizeof(MNT_GemmEpilogueParams) == 32, "sizeof MNT_GemmEpilogueParams");
_Static_assert(offsetof(MNT_GemmEpilogueParams, struct_size) == 0, "MNT_GemmEpilogueParams.struct_size");
_Static_assert(offsetof(MNT_GemmEpilogueParams, trans_a) == 8, "MNT_GemmEpilogueParams.trans_a");
_Static_assert(offsetof(MNT_GemmEpilogueParams, trans_b) == 12, "MNT_GemmEpilogueParams.trans_b");
_Static_assert(offsetof(MNT_GemmEpilogueParams, alpha) == 16, "MNT_GemmEpilogueParams.alpha");
_Static_assert(offsetof(MNT_GemmEpilogueParams, beta) == 20, "MNT_GemmEpilogueParams.beta");
_Static_assert(offsetof(MNT_GemmEpilogueParams, compute) == 24, "MNT_GemmEpilogueParams.compute");
_Static_assert(offsetof(MNT_GemmEpilogueParams, accumulate_bias_grad) == 28, "MNT_GemmEpilogueParams.accumulate_bias_grad");
_Static_assert(sizeof(MNT_MultiAdamWParams) == 104, "sizeof MNT_MultiAdamWParams");
_Static_assert(offsetof(MNT_MultiAdamWParams, struct_size) == 0, "MNT_MultiAdamWParams.struct_size");
_Static_assert(offsetof(MNT_MultiAdamWParams, lr) == 8, "MNT_MultiAdamWParams.lr");
_Static_assert(offsetof(MNT_MultiAdamWParams, beta1) == 12, "MNT_MultiAdamWParams.beta1");
_Static_assert(offsetof(MNT_MultiAdamWParams, beta2) == 16, "MNT_MultiAdamWParams.beta2");
_Static_assert(offsetof(MNT_MultiAdamWParams, epsilon) == 20, "MNT_MultiAdamWParams.epsilon");
_Static_assert(offsetof(MNT_MultiAdamWParams, weight_decay) == 24, "MNT_MultiAdamWParams.weight_decay");
_Static_assert(offsetof(MNT_MultiAdamWParams, step) == 32, "MNT_MultiAdamWParams.step");
_Static_assert(offsetof(MNT_MultiAdamWParams, num_tensors) == 40, "MNT_MultiAdamWParams.num_tensors");
_Static_assert(offsetof(MNT_MultiAdamWParams, lr_scales) == 48, "MNT_MultiAdamWParams.lr_scales");
_Static_assert(offsetof(MNT_MultiAdamWParams, weight_decays) == 56, "MNT_MultiAdamWParams.weight_decays");
_Static_assert(offsetof(MNT_MultiAdamWParams, rounding) == 64, "MNT_MultiAdamWParams.rounding");
_Static_assert(offsetof(MNT_MultiAdamWParams, rounding_seed) == 72, "MNT_MultiAdamWParams.rounding_seed");
_Static_assert(offsetof(MNT_MultiAdamWParams, rounding_tensor) == 80, "MNT_MultiAdamWParams.rounding_tensor");
_Static_assert(sizeof(MNT_MultiSgdParams) == 96, "sizeof MNT_MultiSgdParams");
_Static_assert(offsetof(MNT_MultiSgdParams, struct_size) == 0, "MNT_MultiSgdParams.struct_size");
_Static_assert(offsetof(MNT_MultiSgdParams, lr) == 8, "MNT_MultiSgdParams.lr");
_Static_assert(offsetof(MNT_MultiSgdParams, momentum) == 12, "MNT_MultiSgdParams.momentum");
_Static_assert(offsetof(MNT_MultiSgdParams, weight_decay) == 16, "MNT_MultiSgdParams.weight_decay");
_Static_assert(offsetof(MNT_MultiSgdParams, nesterov) == 20, "MNT_MultiSgdParams.nesterov");
_Static_assert(offsetof(MNT_MultiSgdParams, num_tensors) == 24, "MNT_MultiSgdParams.num_tensors");
_Static_assert(offsetof(MNT_MultiSgdParams, lr_scales) == 32, "MNT_MultiSgdParams.lr_scales");
_Static_assert(offsetof(MNT_MultiSgdParams, weight_decays) == 40, "MNT_MultiSgdParams.weight_decays");
_Static_assert(offsetof(MNT_MultiSgdParams, rounding) == 48, "MNT_MultiSgdParams.rounding");
_Static_assert(offsetof(MNT_MultiSgdParams, rounding_seed) == 56, "MNT_MultiSgdParams.rounding_seed");
_Static_assert(offsetof(MNT_MultiSgdParams, rounding_tensor) == 64, "MNT_MultiSgdParams.rounding_tensor");
_Static_assert(offsetof(MNT_MultiSgdParams, rounding_step) == 72, "MNT_MultiSgdParams.rounding_step");
_Static_assert(sizeof(MNT_Backend_Create_Args) == 40, "sizeof MNT_Backend_Create_Args");
_Static_assert(offsetof(MNT_Backend_Create_Args, struct_size) == 0, "MNT_Backend_Create_Args.struct_size");
_Static_assert(offsetof(MNT_Backend_Create_Args, extension_start) == 8, "MNT_Backend_Create_Args.extension_start");
_Static_assert(offsetof(MNT_Backend_Create_Args, options) == 16, "MNT_Backend_Create_Args.options");
_Static_assert(offsetof(MNT_Backend_Create_Args, device_ordinal) == 24, "MNT_Backend_Create_Args.device_ordinal");
_Static_assert(offsetof(MNT_Backend_Create_Args, backend) == 32, "MNT_Backend_Create_Args.backend");
_Static_assert(sizeof(MNT_Backend_Destroy_Args) == 24, "sizeof MNT_Backend_Destroy_Args");
_Static_assert(offsetof(MNT_Backend_Destroy_Args, struct_size) == 0, "MNT_Backend_Destroy_Args.struct_size");
_Static_assert(offsetof(MNT_Backend_Destroy_Args, extension_start) == 8, "MNT_Backend_Destroy_Args.extension_start");
_Static_assert(offsetof(MNT_Backend_Destroy_Args, backend) == 16, "MNT_Backend_Destroy_Args.backend");
_Static_assert(sizeof(MNT_Backend_GetInfo_Args) == 56, "sizeof MNT_Backend_GetInfo_Args");
_Static_assert(offsetof(MNT_Backend_GetInfo_Args, struct_size) == 0, "MNT_Backend_GetInfo_Args.struct_size");
_Static_assert(offsetof(MNT_Backend_GetInfo_Args, extension_start) == 8, "MNT_Backend_GetInfo_Args.extension_start");
_Static_assert(offsetof(MNT_Backend_GetInfo_Args, backend) == 16, "MNT_Backend_GetInfo_Args.backend");
_Static_assert(offsetof(MNT_Backend_GetInfo_Args, device_name) == 24, "MNT_Backend_GetInfo_Args.device_name");
_Static_assert(offsetof(MNT_Backend_GetInfo_Args, total_memory_bytes) == 32, "MNT_Backend_GetInfo_Args.total_memory_bytes");
_Static_assert(offsetof(MNT_Backend_GetInfo_Args, host_addressable) == 40, "MNT_Backend_GetInfo_Args.host_addressable");
_Static_assert(offsetof(MNT_Backend_GetInfo_Args, slow_paths) == 48, "MNT_Backend_GetInfo_Args.slow_paths");
_Static_assert(sizeof(MNT_Memory_Allocate_Args) == 48, "sizeof MNT_Memory_Allocate_Args");
_Static_assert(offsetof(MNT_Memory_Allocate_Args, struct_size) == 0, "MNT_Memory_Allocate_Args.struct_size");
_Static_assert(offsetof(MNT_Memory_Allocate_Args, extension_start) == 8, "MNT_Memory_Allocate_Args.extension_start");
_Static_assert(offsetof(MNT_Memory_Allocate_Args, backend) == 16, "MNT_Memory_Allocate_Args.backend");
_Static_assert(offsetof(MNT_Memory_Allocate_Args, size_bytes) == 24, "MNT_Memory_Allocate_Args.size_bytes");
_Static_assert(offsetof(MNT_Memory_Allocate_Args, category) == 32, "MNT_Memory_Allocate_Args.category");
_Static_assert(offsetof(MNT_Memory_Allocate_Args, data) == 40, "MNT_Memory_Allocate_Args.data");
_Static_assert(sizeof(MNT_Memory_Free_Args) == 32, "sizeof MNT_Memory_Free_Args");
_Static_assert(offsetof(MNT_Memory_Free_Args, struct_size) == 0, "MNT_Memory_Free_Args.struct_size");
_Static_assert(offsetof(MNT_Memory_Free_Args, extension_start) == 8, "MNT_Memory_Free_Args.extension_start");
_Static_assert(offsetof(MNT_Memory_Free_Args, backend) == 16, "MNT_Memory_Free_Args.backend");
_Static_assert(offsetof(MNT_Memory_Free_Args, data) == 24, "MNT_Memory_Free_Args.data");
_Static_assert(sizeof(MNT_Memory_Copy_Args) == 56, "sizeof MNT_Memory_Copy_Args");
_Static_assert(offsetof(MNT_Memory_Copy_Args, struct_size) == 0, "MNT_Memory_Copy_Args.struct_size");
_Static_assert(offsetof(MNT_Memory_Copy_Args, extension_start) == 8, "MNT_Memory_Copy_Args.extension_start");
_Static_assert(offsetof(MNT_Memory_Copy_Args, backend) == 16, "MNT_Memory_Copy_Args.backend");
_Static_assert(offsetof(MNT_Memory_Copy_Args, dst) == 24, "MNT_Memory_Copy_Args.dst");
_Static_assert(offsetof(MNT_Memory_Copy_Args, src) == 32, "MNT_Memory_Copy_Args.src");
_Static_assert(offsetof(MNT_Memory_Copy_Args, size_bytes) == 40, "MNT_Memory_Copy_Args.size_bytes");
_Static_assert(offsetof(MNT_Memory_Copy_Args, kind) == 48, "MNT_Memory_Copy_Args.kind");
_Static_assert(sizeof(MNT_Memory_GetStats_Args) == 48, "sizeof MNT_Memory_GetStats_Args");
_Static_assert(offsetof(MNT_Memory_GetStats_Args, struct_size) == 0, "MNT_Memory_GetStats_Args.struct_size");
_Static_assert(offsetof(MNT_Memory_GetStats_Args, extension_start) == 8, "MNT_Memory_GetStats_Args.extension_start");
_Static_assert(offsetof(MNT_Memory_GetStats_Args, backend) == 16, "MNT_Memory_GetStats_Args.backend");
_Static_assert(offsetof(MNT_Memory_GetStats_Args, category) == 24, "MNT_Memory_GetStats_Args.category");
_Static_assert(offsetof(MNT_Memory_GetStats_Args, current_bytes) == 32, "MNT_Memory_GetStats_Args.current_bytes");
_Static_assert(offsetof(MNT_Memory_GetStats_Args, peak_bytes) == 40, "MNT_Memory_GetStats_Args.peak_bytes");
_Static_assert(sizeof(MNT_Memory_ResetPeak_Args) == 24, "sizeof MNT_Memory_ResetPeak_Args");
_Static_assert(offsetof(MNT_Memory_ResetPeak_Args, struct_size) == 0, "MNT_Memory_ResetPeak_Args.struct_size");
_Static_assert(offsetof(MNT_Memory_ResetPeak_Args, extension_start) == 8, "MNT_Memory_ResetPeak_Args.extension_start");
_Static_assert(offsetof(MNT_Memory_ResetPeak_Args, backend) == 16, "MNT_Memory_ResetPeak_Args.backend");
_Static_assert(sizeof(MNT_Backend_Synchronize_Args) == 24, "sizeof MNT_Backend_Synchronize_Args");
_Static_assert(offsetof(MNT_Backend_Synchronize_Args, struct_size) == 0, "MNT_Backend_Synchronize_Args.struct_size");
_Static_assert(offsetof(MNT_Backend_Synchronize_Args, extension_start) == 8, "MNT_Backend_Synchronize_Args.extension_start");
_Static_assert(offsetof(MNT_Backend_Synchronize_Args, backend) == 16, "MNT_Backend_Synchronize_Args.backend");
_Static_assert(sizeof(MNT_Backend_GetOpSupport_Args) == 32, "sizeof MNT_Backend_GetOpSupport_Args");
_Static_assert(offsetof(MNT_Backend_GetOpSupport_Args, struct_size) == 0, "MNT_Backend_GetOpSupport_Args.struct_size");
_Static_assert(offsetof(MNT_Backend_GetOpSupport_Args, extension_start) == 8, "MNT_Backend_GetOpSupport_Args.extension_start");
_Static_assert(offsetof(MNT_Backend_GetOpSupport_Args, backend) == 16, "MNT_Backend_GetOpSupport_Args.backend");
_Static_assert(offsetof(MNT_Backend_GetOpSupport_Args, op) == 24, "MNT_Backend_GetOpSupport_Args.op");
_Static_assert(offsetof(MNT_Backend_GetOpSupport_Args, supported) == 28, "MNT_Backend_GetOpSupport_Args.supported");
_Static_assert(sizeof(MNT_Backend_Run_Args) == 72, "sizeof MNT_Backend_Run_Args");
_Static_assert(offsetof(MNT_Backend_Run_Args, struct_size) == 0, "MNT_Backend_Run_Args.struct_size");
_Static_assert(offsetof(MNT_Backend_Run_Args, extension_start) == 8, "MNT_Backend_Run_Args.extension_start");
_Static_assert(offsetof(MNT_Backend_Run_Args, backend) == 16, "MNT_Backend_Run_Args.backend");
_Static_assert(offsetof(MNT_Backend_Run_Args, op) == 24, "MNT_Backend_Run_Args.op");
_Static_assert(offsetof(MNT_Backend_Run_Args, inputs) == 32, "MNT_Backend_Run_Args.inputs");
_Static_assert(offsetof(MNT_Backend_Run_Args, num_inputs) == 40, "MNT_Backend_Run_Args.num_inputs");
_Static_assert(offsetof(MNT_Backend_Run_Args, outputs) == 48, "MNT_Backend_Run_Args.outputs");
_Static_assert(offsetof(MNT_Backend_Run_Args, num_outputs) == 56, "MNT_Backend_Run_Args.num_outputs");
_Static_assert(offsetof(MNT_Backend_Run_Args, params) == 64, "MNT_Backend_Run_Args.params");
_Static_assert(sizeof(MNT_Event_Create_Args) == 32, "sizeof MNT_Event_Create_Args");
_Static_assert(offsetof(MNT_Event_Create_Args, struct_size) == 0, "MNT_Event_Create_Args.struct_size");
_Static_assert(offsetof(MNT_Event_Create_Args, extension_start) == 8, "MNT_Event_Create_Args.extension_start");
_Static_assert(offsetof(MNT_Event_Create_Args, backend) == 16, "MNT_Event_Create_Args.backend");
_Static_assert(offsetof(MNT_Event_Create_Args, event) == 24, "MNT_Event_Create_Args.event");
_Static_assert(sizeof(MNT_Event_Record_Args) == 32, "sizeof MNT_Event_Record_Args");
_Static_assert(offsetof(MNT_Event_Record_Args, struct_size) == 0, "MNT_Event_Record_Args.struct_size");
_Static_assert(offsetof(MNT_Event_Record_Args, extension_start) == 8, "MNT_Event_Record_Args.extension_start");
_Static_assert(offsetof(MNT_Event_Record_Args, backend) == 16, "MNT_Event_Record_Args.backend");
_Static_assert(offsetof(MNT_Event_Record_Args, event) == 24, "MNT_Event_Record_Args.event");
_Static_assert(sizeof(MNT_Event_ElapsedTime_Args) == 48, "sizeof MNT_Event_ElapsedTime_Args");
_Static_assert(offsetof(MNT_Event_ElapsedTime_Args, struct_size) == 0, "MNT_Event_ElapsedTime_Args.struct_size");
_Static_assert(offsetof(MNT_Event_ElapsedTime_Args, extension_start) == 8, "MNT_Event_ElapsedTime_Args.extension_start");
_Static_assert(offsetof(MNT_Event_ElapsedTime_Args, backend) == 16, "MNT_Event_ElapsedTime_Args.backend");
_Static_assert(offsetof(MNT_Event_ElapsedTime_Args, start) == 24, "MNT_Event_ElapsedTime_Args.start");
_Static_assert(offsetof(MNT_Event_ElapsedTime_Args, end) == 32, "MNT_Event_ElapsedTime_Args.end");
_Static_assert(offsetof(MNT_Event_ElapsedTime_Args, milliseconds) == 40, "MNT_Event_ElapsedTime_Args.milliseconds");
_Static_assert(sizeof(MNT_Event_Destroy_Args) == 32, "sizeof MNT_Event_Destroy_Args");
_Static_assert(offsetof(MNT_Event_Destroy_Args, struct_size) == 0, "MNT_Event_Destroy_Args.struct_size");
_Static_assert(offsetof(MNT_Event_Destroy_Args, extension_start) == 8, "MNT_Event_Destroy_Args.extension_start");
_Static_assert(offsetof(MNT_Event_Destroy_Args, backend) == 16, "MNT_Event_Destroy_Args.backend");
_Static_assert(offsetof(MNT_Event_Destroy_Args, event) == 24, "MNT_Event_Destroy_Args.event");
_Static_assert(sizeof(MNT_Backend_StepBegin_Args) == 24, "sizeof MNT_Backend_StepBegin_Args");
_Static_assert(offsetof(MNT_Backend_StepBegin_Args, struct_size) == 0, "MNT_Backend_StepBegin_Args.struct_size");
_Static_assert(offsetof(MNT_Backend_StepBegin_Args, extension_start) == 8, "MNT_Backend_StepBegin_Args.extension_start");
_Static_assert(offsetof(MNT_Backend_StepBegin_Args, backend) == 16, "MNT_Backend_StepBegin_Args.backend");
_Static_assert(sizeof(MNT_Backend_StepEnd_Args) == 32, "sizeof MNT_Backend_StepEnd_Args");
_Static_assert(offsetof(MNT_Backend_StepEnd_Args, struct_size) == 0, "MNT_Backend_StepEnd_Args.struct_size");
_Static_assert(offsetof(MNT_Backend_StepEnd_Args, extension_start) == 8, "MNT_Backend_StepEnd_Args.extension_start");
_Static_assert(offsetof(MNT_Backend_StepEnd_Args, backend) == 16, "MNT_Backend_StepEnd_Args.backend");
_Static_assert(offsetof(MNT_Backend_StepEnd_Args, replayed) == 24, "MNT_Backend_StepEnd_Args.replayed");
_Static_assert(sizeof(MNT_Backend_Api) == 152, "sizeof MNT_Backend_Api");
_Static_assert(offsetof(MNT_Backend_Api, struct_size) == 0, "MNT_Backend_Api.struct_size");
_Static_assert(offsetof(MNT_Backend_Api, extension_start) == 8, "MNT_Backend_Api.extension_start");
_Static_assert(offsetof(MNT_Backend_Api, Backend_Create) == 16, "MNT_Backend_Api.Backend_Create");
_Static_assert(offsetof(MNT_Backend_Api, Backend_Destroy) == 24, "MNT_Backend_Api.Backend_Destroy");
_Static_assert(offsetof(MNT_Backend_Api, Backend_GetInfo) == 32, "MNT_Backend_Api.Backend_GetInfo");
_Static_assert(offsetof(MNT_Backend_Api, Memory_Allocate) == 40, "MNT_Backend_Api.Memory_Allocate");
_Static_assert(offsetof(MNT_Backend_Api, Memory_Free) == 48, "MNT_Backend_Api.Memory_Free");
_Static_assert(offsetof(MNT_Backend_Api, Memory_Copy) == 56, "MNT_Backend_Api.Memory_Copy");
_Static_assert(offsetof(MNT_Backend_Api, Memory_GetStats) == 64, "MNT_Backend_Api.Memory_GetStats");
_Static_assert(offsetof(MNT_Backend_Api, Memory_ResetPeak) == 72, "MNT_Backend_Api.Memory_ResetPeak");
_Static_assert(offsetof(MNT_Backend_Api, Backend_Synchronize) == 80, "MNT_Backend_Api.Backend_Synchronize");
_Static_assert(offsetof(MNT_Backend_Api, Backend_GetOpSupport) == 88, "MNT_Backend_Api.Backend_GetOpSupport");
_Static_assert(offsetof(MNT_Backend_Api, Backend_Run) == 96, "MNT_Backend_Api.Backend_Run");
_Static_assert(offsetof(MNT_Backend_Api, Event_Create) == 104, "MNT_Backend_Api.Event_Create");
_Static_assert(offsetof(MNT_Backend_Api, Event_Record) == 112, "MNT_Backend_Api.Event_Record");
_Static_assert(offsetof(MNT_Backend_Api, Event_ElapsedTime) == 120, "MNT_Backend_Api.Event_ElapsedTime");
_Static_assert(offsetof(MNT_Backend_Api, Event_Destroy) == 128, "MNT_Backend_Api.Event_Destroy");
_Static_assert(offsetof(MNT_Backend_Api, Backend_StepBegin) == 136, "MNT_Backend_Api.Backend_StepBegin");
_Static_assert(offsetof(MNT_Backend_Api, Backend_StepEnd) == 144, "MNT_Backend_Api.Backend_StepEnd");

/* ---- mnt_precision.h --------------------------------------------- */
_Static_assert(sizeof(MNT_Precision_GetPolicy_Args) == 48, "sizeof MNT_Precision_GetPolicy_Args");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, struct_size) == 0, "MNT_Precision_GetPolicy_Args.struct_size");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, extension_start) == 8, "MNT_Precision_GetPolicy_Args.extension_start");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, weight_dtype) == 16, "MNT_Precision_GetPolicy_Args.weight_dtype");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, master_weight_dtype) == 20, "MNT_Precision_GetPolicy_Args.master_weight_dtype");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, gradient_dtype) == 24, "MNT_Precision_GetPolicy_Args.gradient_dtype");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, activation_dtype) == 28, "MNT_Precision_GetPolicy_Args.activation_dtype");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, optimizer_state_dtype) == 32, "MNT_Precision_GetPolicy_Args.optimizer_state_dtype");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, matmul_compute) == 36, "MNT_Precision_GetPolicy_Args.matmul_compute");
_Static_assert(offsetof(MNT_Precision_GetPolicy_Args, loss_scaling) == 40, "MNT_Precision_GetPolicy_Args.loss_scaling");
_Static_assert(sizeof(MNT_Precision_GetOpClassPolicy_Args) == 40, "sizeof MNT_Precision_GetOpClassPolicy_Args");
_Static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, struct_size) == 0, "MNT_Precision_GetOpClassPolicy_Args.struct_size");
_Static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, extension_start) == 8, "MNT_Precision_GetOpClassPolicy_Args.extension_start");
_Static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, op_class) == 16, "MNT_Precision_GetOpClassPolicy_Args.op_class");
_Static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, storage_dtype) == 20, "MNT_Precision_GetOpClassPolicy_Args.storage_dtype");
_Static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, compute_dtype) == 24, "MNT_Precision_GetOpClassPolicy_Args.compute_dtype");
_Static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, accumulate_dtype) == 28, "MNT_Precision_GetOpClassPolicy_Args.accumulate_dtype");
_Static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, compute_mode) == 32, "MNT_Precision_GetOpClassPolicy_Args.compute_mode");
_Static_assert(sizeof(MNT_Precision_GetMemoryPlan_Args) == 40, "sizeof MNT_Precision_GetMemoryPlan_Args");
_Static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, struct_size) == 0, "MNT_Precision_GetMemoryPlan_Args.struct_size");
_Static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, extension_start) == 8, "MNT_Precision_GetMemoryPlan_Args.extension_start");
_Static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, optimizer_state_slots) == 16, "MNT_Precision_GetMemoryPlan_Args.optimizer_state_slots");
_Static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_weights) == 20, "MNT_Precision_GetMemoryPlan_Args.bytes_weights");
_Static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_master_weights) == 24, "MNT_Precision_GetMemoryPlan_Args.bytes_master_weights");
_Static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_gradients) == 28, "MNT_Precision_GetMemoryPlan_Args.bytes_gradients");
_Static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_master_gradients) == 32, "MNT_Precision_GetMemoryPlan_Args.bytes_master_gradients");
_Static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_optimizer_state) == 36, "MNT_Precision_GetMemoryPlan_Args.bytes_optimizer_state");
_Static_assert(sizeof(MNT_LossScaler_Create_Args) == 40, "sizeof MNT_LossScaler_Create_Args");
_Static_assert(offsetof(MNT_LossScaler_Create_Args, struct_size) == 0, "MNT_LossScaler_Create_Args.struct_size");
_Static_assert(offsetof(MNT_LossScaler_Create_Args, extension_start) == 8, "MNT_LossScaler_Create_Args.extension_start");
_Static_assert(offsetof(MNT_LossScaler_Create_Args, options) == 16, "MNT_LossScaler_Create_Args.options");
_Static_assert(offsetof(MNT_LossScaler_Create_Args, scaler) == 24, "MNT_LossScaler_Create_Args.scaler");
_Static_assert(offsetof(MNT_LossScaler_Create_Args, precision_options) == 32, "MNT_LossScaler_Create_Args.precision_options");
_Static_assert(sizeof(MNT_LossScaler_Destroy_Args) == 24, "sizeof MNT_LossScaler_Destroy_Args");
_Static_assert(offsetof(MNT_LossScaler_Destroy_Args, struct_size) == 0, "MNT_LossScaler_Destroy_Args.struct_size");
_Static_assert(offsetof(MNT_LossScaler_Destroy_Args, extension_start) == 8, "MNT_LossScaler_Destroy_Args.extension_start");
_Static_assert(offsetof(MNT_LossScaler_Destroy_Args, scaler) == 16, "MNT_LossScaler_Destroy_Args.scaler");
_Static_assert(sizeof(MNT_LossScalerState) == 32, "sizeof MNT_LossScalerState");
_Static_assert(offsetof(MNT_LossScalerState, struct_size) == 0, "MNT_LossScalerState.struct_size");
_Static_assert(offsetof(MNT_LossScalerState, scale) == 8, "MNT_LossScalerState.scale");
_Static_assert(offsetof(MNT_LossScalerState, growth_tracker) == 16, "MNT_LossScalerState.growth_tracker");
_Static_assert(offsetof(MNT_LossScalerState, skipped_steps) == 24, "MNT_LossScalerState.skipped_steps");
_Static_assert(sizeof(MNT_LossScaler_GetState_Args) == 80, "sizeof MNT_LossScaler_GetState_Args");
_Static_assert(offsetof(MNT_LossScaler_GetState_Args, struct_size) == 0, "MNT_LossScaler_GetState_Args.struct_size");
_Static_assert(offsetof(MNT_LossScaler_GetState_Args, extension_start) == 8, "MNT_LossScaler_GetState_Args.extension_start");
_Static_assert(offsetof(MNT_LossScaler_GetState_Args, scaler) == 16, "MNT_LossScaler_GetState_Args.scaler");
_Static_assert(offsetof(MNT_LossScaler_GetState_Args, state) == 24, "MNT_LossScaler_GetState_Args.state");
_Static_assert(offsetof(MNT_LossScaler_GetState_Args, hysteresis_tracker) == 56, "MNT_LossScaler_GetState_Args.hysteresis_tracker");
_Static_assert(offsetof(MNT_LossScaler_GetState_Args, plugin_state) == 64, "MNT_LossScaler_GetState_Args.plugin_state");
_Static_assert(offsetof(MNT_LossScaler_GetState_Args, plugin_state_size) == 72, "MNT_LossScaler_GetState_Args.plugin_state_size");
_Static_assert(sizeof(MNT_LossScaler_SetState_Args) == 80, "sizeof MNT_LossScaler_SetState_Args");
_Static_assert(offsetof(MNT_LossScaler_SetState_Args, struct_size) == 0, "MNT_LossScaler_SetState_Args.struct_size");
_Static_assert(offsetof(MNT_LossScaler_SetState_Args, extension_start) == 8, "MNT_LossScaler_SetState_Args.extension_start");
_Static_assert(offsetof(MNT_LossScaler_SetState_Args, scaler) == 16, "MNT_LossScaler_SetState_Args.scaler");
_Static_assert(offsetof(MNT_LossScaler_SetState_Args, state) == 24, "MNT_LossScaler_SetState_Args.state");
_Static_assert(offsetof(MNT_LossScaler_SetState_Args, hysteresis_tracker) == 56, "MNT_LossScaler_SetState_Args.hysteresis_tracker");
_Static_assert(offsetof(MNT_LossScaler_SetState_Args, plugin_state) == 64, "MNT_LossScaler_SetState_Args.plugin_state");
_Static_assert(offsetof(MNT_LossScaler_SetState_Args, plugin_state_size) == 72, "MNT_LossScaler_SetState_Args.plugin_state_size");
_Static_assert(sizeof(MNT_LossScaler_Update_Args) == 40, "sizeof MNT_LossScaler_Update_Args");
_Static_assert(offsetof(MNT_LossScaler_Update_Args, struct_size) == 0, "MNT_LossScaler_Update_Args.struct_size");
_Static_assert(offsetof(MNT_LossScaler_Update_Args, extension_start) == 8, "MNT_LossScaler_Update_Args.extension_start");
_Static_assert(offsetof(MNT_LossScaler_Update_Args, scaler) == 16, "MNT_LossScaler_Update_Args.scaler");
_Static_assert(offsetof(MNT_LossScaler_Update_Args, found_inf) == 24, "MNT_LossScaler_Update_Args.found_inf");
_Static_assert(offsetof(MNT_LossScaler_Update_Args, skip_step) == 28, "MNT_LossScaler_Update_Args.skip_step");
_Static_assert(offsetof(MNT_LossScaler_Update_Args, new_scale) == 32, "MNT_LossScaler_Update_Args.new_scale");
_Static_assert(sizeof(MNT_Precision_Api) == 96, "sizeof MNT_Precision_Api");
_Static_assert(offsetof(MNT_Precision_Api, struct_size) == 0, "MNT_Precision_Api.struct_size");
_Static_assert(offsetof(MNT_Precision_Api, extension_start) == 8, "MNT_Precision_Api.extension_start");
_Static_assert(offsetof(MNT_Precision_Api, Precision_GetPolicy) == 16, "MNT_Precision_Api.Precision_GetPolicy");
_Static_assert(offsetof(MNT_Precision_Api, Precision_GetOpClassPolicy) == 24, "MNT_Precision_Api.Precision_GetOpClassPolicy");
_Static_assert(offsetof(MNT_Precision_Api, Precision_GetMemoryPlan) == 32, "MNT_Precision_Api.Precision_GetMemoryPlan");
_Static_assert(offsetof(MNT_Precision_Api, LossScaler_Create) == 40, "MNT_Precision_Api.LossScaler_Create");
_Static_assert(offsetof(MNT_Precision_Api, LossScaler_Destroy) == 48, "MNT_Precision_Api.LossScaler_Destroy");
_Static_assert(offsetof(MNT_Precision_Api, LossScaler_GetState) == 56, "MNT_Precision_Api.LossScaler_GetState");
_Static_assert(offsetof(MNT_Precision_Api, LossScaler_SetState) == 64, "MNT_Precision_Api.LossScaler_SetState");
_Static_assert(offsetof(MNT_Precision_Api, LossScaler_Update) == 72, "MNT_Precision_Api.LossScaler_Update");
_Static_assert(offsetof(MNT_Precision_Api, LossScaler_GetRecipe) == 80, "MNT_Precision_Api.LossScaler_GetRecipe");
_Static_assert(sizeof(MNT_LossScaler_GetRecipe_Args) == 72, "sizeof MNT_LossScaler_GetRecipe_Args");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, struct_size) == 0, "MNT_LossScaler_GetRecipe_Args.struct_size");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, extension_start) == 8, "MNT_LossScaler_GetRecipe_Args.extension_start");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, scaler) == 16, "MNT_LossScaler_GetRecipe_Args.scaler");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, recipe) == 24, "MNT_LossScaler_GetRecipe_Args.recipe");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, growth_factor) == 32, "MNT_LossScaler_GetRecipe_Args.growth_factor");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, backoff_factor) == 40, "MNT_LossScaler_GetRecipe_Args.backoff_factor");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, growth_interval) == 48, "MNT_LossScaler_GetRecipe_Args.growth_interval");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, hysteresis) == 56, "MNT_LossScaler_GetRecipe_Args.hysteresis");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, min_scale) == 60, "MNT_LossScaler_GetRecipe_Args.min_scale");
_Static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, max_scale) == 64, "MNT_LossScaler_GetRecipe_Args.max_scale");

/* ---- mnt_model.h ------------------------------------------------- */
_Static_assert(sizeof(MNT_DataSpec) == 80, "sizeof MNT_DataSpec");
_Static_assert(offsetof(MNT_DataSpec, struct_size) == 0, "MNT_DataSpec.struct_size");
_Static_assert(offsetof(MNT_DataSpec, input_dtype) == 8, "MNT_DataSpec.input_dtype");
_Static_assert(offsetof(MNT_DataSpec, input_rank) == 12, "MNT_DataSpec.input_rank");
_Static_assert(offsetof(MNT_DataSpec, input_dims) == 16, "MNT_DataSpec.input_dims");
_Static_assert(offsetof(MNT_DataSpec, num_classes) == 64, "MNT_DataSpec.num_classes");
_Static_assert(offsetof(MNT_DataSpec, targets_per_example) == 72, "MNT_DataSpec.targets_per_example");
_Static_assert(sizeof(MNT_ModelPrecision) == 24, "sizeof MNT_ModelPrecision");
_Static_assert(offsetof(MNT_ModelPrecision, struct_size) == 0, "MNT_ModelPrecision.struct_size");
_Static_assert(offsetof(MNT_ModelPrecision, weight_dtype) == 8, "MNT_ModelPrecision.weight_dtype");
_Static_assert(offsetof(MNT_ModelPrecision, gradient_dtype) == 12, "MNT_ModelPrecision.gradient_dtype");
_Static_assert(offsetof(MNT_ModelPrecision, activation_dtype) == 16, "MNT_ModelPrecision.activation_dtype");
_Static_assert(offsetof(MNT_ModelPrecision, matmul_compute) == 20, "MNT_ModelPrecision.matmul_compute");
_Static_assert(sizeof(MNT_Model_Create_Args) == 184, "sizeof MNT_Model_Create_Args");
_Static_assert(offsetof(MNT_Model_Create_Args, struct_size) == 0, "MNT_Model_Create_Args.struct_size");
_Static_assert(offsetof(MNT_Model_Create_Args, extension_start) == 8, "MNT_Model_Create_Args.extension_start");
_Static_assert(offsetof(MNT_Model_Create_Args, options) == 16, "MNT_Model_Create_Args.options");
_Static_assert(offsetof(MNT_Model_Create_Args, backend_plugin) == 24, "MNT_Model_Create_Args.backend_plugin");
_Static_assert(offsetof(MNT_Model_Create_Args, backend) == 32, "MNT_Model_Create_Args.backend");
_Static_assert(offsetof(MNT_Model_Create_Args, data_spec) == 40, "MNT_Model_Create_Args.data_spec");
_Static_assert(offsetof(MNT_Model_Create_Args, precision) == 120, "MNT_Model_Create_Args.precision");
_Static_assert(offsetof(MNT_Model_Create_Args, max_batch_size) == 144, "MNT_Model_Create_Args.max_batch_size");
_Static_assert(offsetof(MNT_Model_Create_Args, model) == 152, "MNT_Model_Create_Args.model");
_Static_assert(sizeof(MNT_Model_Destroy_Args) == 24, "sizeof MNT_Model_Destroy_Args");
_Static_assert(offsetof(MNT_Model_Destroy_Args, struct_size) == 0, "MNT_Model_Destroy_Args.struct_size");
_Static_assert(offsetof(MNT_Model_Destroy_Args, extension_start) == 8, "MNT_Model_Destroy_Args.extension_start");
_Static_assert(offsetof(MNT_Model_Destroy_Args, model) == 16, "MNT_Model_Destroy_Args.model");
_Static_assert(sizeof(MNT_Model_GetParamCount_Args) == 32, "sizeof MNT_Model_GetParamCount_Args");
_Static_assert(offsetof(MNT_Model_GetParamCount_Args, struct_size) == 0, "MNT_Model_GetParamCount_Args.struct_size");
_Static_assert(offsetof(MNT_Model_GetParamCount_Args, extension_start) == 8, "MNT_Model_GetParamCount_Args.extension_start");
_Static_assert(offsetof(MNT_Model_GetParamCount_Args, model) == 16, "MNT_Model_GetParamCount_Args.model");
_Static_assert(offsetof(MNT_Model_GetParamCount_Args, num_params) == 24, "MNT_Model_GetParamCount_Args.num_params");
_Static_assert(sizeof(MNT_Model_GetParamSpec_Args) == 120, "sizeof MNT_Model_GetParamSpec_Args");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, struct_size) == 0, "MNT_Model_GetParamSpec_Args.struct_size");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, extension_start) == 8, "MNT_Model_GetParamSpec_Args.extension_start");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, model) == 16, "MNT_Model_GetParamSpec_Args.model");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, index) == 24, "MNT_Model_GetParamSpec_Args.index");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, name) == 32, "MNT_Model_GetParamSpec_Args.name");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, rank) == 40, "MNT_Model_GetParamSpec_Args.rank");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, dims) == 48, "MNT_Model_GetParamSpec_Args.dims");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, init) == 96, "MNT_Model_GetParamSpec_Args.init");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, init_scale) == 100, "MNT_Model_GetParamSpec_Args.init_scale");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, weight_decay) == 104, "MNT_Model_GetParamSpec_Args.weight_decay");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, stacked_dims) == 108, "MNT_Model_GetParamSpec_Args.stacked_dims");
_Static_assert(offsetof(MNT_Model_GetParamSpec_Args, role) == 112, "MNT_Model_GetParamSpec_Args.role");
_Static_assert(sizeof(MNT_Model_Forward_Args) == 104, "sizeof MNT_Model_Forward_Args");
_Static_assert(offsetof(MNT_Model_Forward_Args, struct_size) == 0, "MNT_Model_Forward_Args.struct_size");
_Static_assert(offsetof(MNT_Model_Forward_Args, extension_start) == 8, "MNT_Model_Forward_Args.extension_start");
_Static_assert(offsetof(MNT_Model_Forward_Args, model) == 16, "MNT_Model_Forward_Args.model");
_Static_assert(offsetof(MNT_Model_Forward_Args, params) == 24, "MNT_Model_Forward_Args.params");
_Static_assert(offsetof(MNT_Model_Forward_Args, num_params) == 32, "MNT_Model_Forward_Args.num_params");
_Static_assert(offsetof(MNT_Model_Forward_Args, inputs) == 40, "MNT_Model_Forward_Args.inputs");
_Static_assert(offsetof(MNT_Model_Forward_Args, targets) == 48, "MNT_Model_Forward_Args.targets");
_Static_assert(offsetof(MNT_Model_Forward_Args, training) == 56, "MNT_Model_Forward_Args.training");
_Static_assert(offsetof(MNT_Model_Forward_Args, loss_out) == 64, "MNT_Model_Forward_Args.loss_out");
_Static_assert(offsetof(MNT_Model_Forward_Args, correct_out) == 72, "MNT_Model_Forward_Args.correct_out");
_Static_assert(sizeof(MNT_Model_Backward_Args) == 112, "sizeof MNT_Model_Backward_Args");
_Static_assert(offsetof(MNT_Model_Backward_Args, struct_size) == 0, "MNT_Model_Backward_Args.struct_size");
_Static_assert(offsetof(MNT_Model_Backward_Args, extension_start) == 8, "MNT_Model_Backward_Args.extension_start");
_Static_assert(offsetof(MNT_Model_Backward_Args, model) == 16, "MNT_Model_Backward_Args.model");
_Static_assert(offsetof(MNT_Model_Backward_Args, params) == 24, "MNT_Model_Backward_Args.params");
_Static_assert(offsetof(MNT_Model_Backward_Args, num_params) == 32, "MNT_Model_Backward_Args.num_params");
_Static_assert(offsetof(MNT_Model_Backward_Args, grads) == 40, "MNT_Model_Backward_Args.grads");
_Static_assert(offsetof(MNT_Model_Backward_Args, num_grads) == 48, "MNT_Model_Backward_Args.num_grads");
_Static_assert(offsetof(MNT_Model_Backward_Args, loss_multiplier) == 56, "MNT_Model_Backward_Args.loss_multiplier");
_Static_assert(offsetof(MNT_Model_Backward_Args, accumulate) == 60, "MNT_Model_Backward_Args.accumulate");
_Static_assert(offsetof(MNT_Model_Backward_Args, loss_multiplier_device) == 64, "MNT_Model_Backward_Args.loss_multiplier_device");
_Static_assert(sizeof(MNT_Model_Api) == 64, "sizeof MNT_Model_Api");
_Static_assert(offsetof(MNT_Model_Api, struct_size) == 0, "MNT_Model_Api.struct_size");
_Static_assert(offsetof(MNT_Model_Api, extension_start) == 8, "MNT_Model_Api.extension_start");
_Static_assert(offsetof(MNT_Model_Api, Model_Create) == 16, "MNT_Model_Api.Model_Create");
_Static_assert(offsetof(MNT_Model_Api, Model_Destroy) == 24, "MNT_Model_Api.Model_Destroy");
_Static_assert(offsetof(MNT_Model_Api, Model_GetParamCount) == 32, "MNT_Model_Api.Model_GetParamCount");
_Static_assert(offsetof(MNT_Model_Api, Model_GetParamSpec) == 40, "MNT_Model_Api.Model_GetParamSpec");
_Static_assert(offsetof(MNT_Model_Api, Model_Forward) == 48, "MNT_Model_Api.Model_Forward");
_Static_assert(offsetof(MNT_Model_Api, Model_Backward) == 56, "MNT_Model_Api.Model_Backward");

/* ---- mnt_collectives.h (1.9) -------------------------------------- */
_Static_assert(sizeof(MNT_Collectives_GetUniqueId_Args) == 288, "sizeof MNT_Collectives_GetUniqueId_Args");
_Static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, struct_size) == 0, "MNT_Collectives_GetUniqueId_Args.struct_size");
_Static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, extension_start) == 8, "MNT_Collectives_GetUniqueId_Args.extension_start");
_Static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, backend) == 16, "MNT_Collectives_GetUniqueId_Args.backend");
_Static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, unique_id) == 24, "MNT_Collectives_GetUniqueId_Args.unique_id");
_Static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, unique_id_size) == 280, "MNT_Collectives_GetUniqueId_Args.unique_id_size");
_Static_assert(sizeof(MNT_Communicator_Create_Args) == 56, "sizeof MNT_Communicator_Create_Args");
_Static_assert(offsetof(MNT_Communicator_Create_Args, struct_size) == 0, "MNT_Communicator_Create_Args.struct_size");
_Static_assert(offsetof(MNT_Communicator_Create_Args, extension_start) == 8, "MNT_Communicator_Create_Args.extension_start");
_Static_assert(offsetof(MNT_Communicator_Create_Args, backend) == 16, "MNT_Communicator_Create_Args.backend");
_Static_assert(offsetof(MNT_Communicator_Create_Args, rank) == 24, "MNT_Communicator_Create_Args.rank");
_Static_assert(offsetof(MNT_Communicator_Create_Args, world_size) == 28, "MNT_Communicator_Create_Args.world_size");
_Static_assert(offsetof(MNT_Communicator_Create_Args, unique_id) == 32, "MNT_Communicator_Create_Args.unique_id");
_Static_assert(offsetof(MNT_Communicator_Create_Args, unique_id_size) == 40, "MNT_Communicator_Create_Args.unique_id_size");
_Static_assert(offsetof(MNT_Communicator_Create_Args, communicator) == 48, "MNT_Communicator_Create_Args.communicator");
_Static_assert(sizeof(MNT_Communicator_Destroy_Args) == 32, "sizeof MNT_Communicator_Destroy_Args");
_Static_assert(offsetof(MNT_Communicator_Destroy_Args, struct_size) == 0, "MNT_Communicator_Destroy_Args.struct_size");
_Static_assert(offsetof(MNT_Communicator_Destroy_Args, extension_start) == 8, "MNT_Communicator_Destroy_Args.extension_start");
_Static_assert(offsetof(MNT_Communicator_Destroy_Args, backend) == 16, "MNT_Communicator_Destroy_Args.backend");
_Static_assert(offsetof(MNT_Communicator_Destroy_Args, communicator) == 24, "MNT_Communicator_Destroy_Args.communicator");
_Static_assert(sizeof(MNT_Collectives_Run_Args) == 64, "sizeof MNT_Collectives_Run_Args");
_Static_assert(offsetof(MNT_Collectives_Run_Args, struct_size) == 0, "MNT_Collectives_Run_Args.struct_size");
_Static_assert(offsetof(MNT_Collectives_Run_Args, extension_start) == 8, "MNT_Collectives_Run_Args.extension_start");
_Static_assert(offsetof(MNT_Collectives_Run_Args, backend) == 16, "MNT_Collectives_Run_Args.backend");
_Static_assert(offsetof(MNT_Collectives_Run_Args, communicator) == 24, "MNT_Collectives_Run_Args.communicator");
_Static_assert(offsetof(MNT_Collectives_Run_Args, op) == 32, "MNT_Collectives_Run_Args.op");
_Static_assert(offsetof(MNT_Collectives_Run_Args, reduce) == 36, "MNT_Collectives_Run_Args.reduce");
_Static_assert(offsetof(MNT_Collectives_Run_Args, root) == 40, "MNT_Collectives_Run_Args.root");
_Static_assert(offsetof(MNT_Collectives_Run_Args, input) == 48, "MNT_Collectives_Run_Args.input");
_Static_assert(offsetof(MNT_Collectives_Run_Args, output) == 56, "MNT_Collectives_Run_Args.output");
/* 72 bytes in version 1 (MNT_Collectives_Extension_V1_STRUCT_SIZE, below);
 * version 2 appended Collectives_Start and Collectives_Wait. */
_Static_assert(sizeof(MNT_Collectives_Extension) == 88, "sizeof MNT_Collectives_Extension");
_Static_assert(offsetof(MNT_Collectives_Extension, header) == 0, "MNT_Collectives_Extension.header");
_Static_assert(offsetof(MNT_Collectives_Extension, Collectives_GetUniqueId) == 40, "MNT_Collectives_Extension.Collectives_GetUniqueId");
_Static_assert(offsetof(MNT_Collectives_Extension, Communicator_Create) == 48, "MNT_Collectives_Extension.Communicator_Create");
_Static_assert(offsetof(MNT_Collectives_Extension, Communicator_Destroy) == 56, "MNT_Collectives_Extension.Communicator_Destroy");
_Static_assert(offsetof(MNT_Collectives_Extension, Collectives_Run) == 64, "MNT_Collectives_Extension.Collectives_Run");
_Static_assert(offsetof(MNT_Collectives_Extension, Collectives_Start) == 72, "MNT_Collectives_Extension.Collectives_Start");
_Static_assert(offsetof(MNT_Collectives_Extension, Collectives_Wait) == 80, "MNT_Collectives_Extension.Collectives_Wait");
/* Collectives extension version 2 (in ABI 1.11; the extension has its own
 * version, docs/abi.md "Collectives extension"): started collectives. */
_Static_assert(sizeof(MNT_Collectives_Start_Args) == 72, "sizeof MNT_Collectives_Start_Args");
_Static_assert(offsetof(MNT_Collectives_Start_Args, struct_size) == 0, "MNT_Collectives_Start_Args.struct_size");
_Static_assert(offsetof(MNT_Collectives_Start_Args, extension_start) == 8, "MNT_Collectives_Start_Args.extension_start");
_Static_assert(offsetof(MNT_Collectives_Start_Args, backend) == 16, "MNT_Collectives_Start_Args.backend");
_Static_assert(offsetof(MNT_Collectives_Start_Args, communicator) == 24, "MNT_Collectives_Start_Args.communicator");
_Static_assert(offsetof(MNT_Collectives_Start_Args, op) == 32, "MNT_Collectives_Start_Args.op");
_Static_assert(offsetof(MNT_Collectives_Start_Args, reduce) == 36, "MNT_Collectives_Start_Args.reduce");
_Static_assert(offsetof(MNT_Collectives_Start_Args, root) == 40, "MNT_Collectives_Start_Args.root");
_Static_assert(offsetof(MNT_Collectives_Start_Args, input) == 48, "MNT_Collectives_Start_Args.input");
_Static_assert(offsetof(MNT_Collectives_Start_Args, output) == 56, "MNT_Collectives_Start_Args.output");
_Static_assert(offsetof(MNT_Collectives_Start_Args, work) == 64, "MNT_Collectives_Start_Args.work");
_Static_assert(sizeof(MNT_Collectives_Wait_Args) == 40, "sizeof MNT_Collectives_Wait_Args");
_Static_assert(offsetof(MNT_Collectives_Wait_Args, struct_size) == 0, "MNT_Collectives_Wait_Args.struct_size");
_Static_assert(offsetof(MNT_Collectives_Wait_Args, extension_start) == 8, "MNT_Collectives_Wait_Args.extension_start");
_Static_assert(offsetof(MNT_Collectives_Wait_Args, backend) == 16, "MNT_Collectives_Wait_Args.backend");
_Static_assert(offsetof(MNT_Collectives_Wait_Args, communicator) == 24, "MNT_Collectives_Wait_Args.communicator");
_Static_assert(offsetof(MNT_Collectives_Wait_Args, work) == 32, "MNT_Collectives_Wait_Args.work");
_Static_assert(MNT_Collectives_Extension_V1_STRUCT_SIZE == offsetof(MNT_Collectives_Extension, Collectives_Start), "version 1 ends where version 2 begins");

/* ---- enum values (appended only, never renumbered) ---------------- */
_Static_assert(MNT_EXTENSION_TYPE_NONE == 0, "MNT_EXTENSION_TYPE_NONE");
_Static_assert(MNT_EXTENSION_TYPE_CAPABILITIES == 1, "MNT_EXTENSION_TYPE_CAPABILITIES");
_Static_assert(MNT_EXTENSION_TYPE_COLLECTIVES == 2, "MNT_EXTENSION_TYPE_COLLECTIVES");
_Static_assert(MNT_CAPABILITY_INVALID == 0, "MNT_CAPABILITY_INVALID");
_Static_assert(MNT_CAPABILITY_ADAMW_STEP_COUNTER == 1, "MNT_CAPABILITY_ADAMW_STEP_COUNTER");
_Static_assert(MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE == 2, "MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE");
_Static_assert(MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER == 3, "MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER");
_Static_assert(MNT_CAPABILITY_OPTIMIZER_DEVICE_LR == 4, "MNT_CAPABILITY_OPTIMIZER_DEVICE_LR");
_Static_assert(MNT_CAPABILITY_STOCHASTIC_ROUNDING == 5, "MNT_CAPABILITY_STOCHASTIC_ROUNDING");
_Static_assert(MNT_CAPABILITY_PRECISION_OPTIONS == 6, "MNT_CAPABILITY_PRECISION_OPTIONS");
_Static_assert(MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER == 7, "MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER");
_Static_assert(MNT_COLLECTIVE_INVALID == 0, "MNT_COLLECTIVE_INVALID");
_Static_assert(MNT_COLLECTIVE_ALL_REDUCE == 1, "MNT_COLLECTIVE_ALL_REDUCE");
_Static_assert(MNT_COLLECTIVE_REDUCE_SCATTER == 2, "MNT_COLLECTIVE_REDUCE_SCATTER");
_Static_assert(MNT_COLLECTIVE_ALL_GATHER == 3, "MNT_COLLECTIVE_ALL_GATHER");
_Static_assert(MNT_COLLECTIVE_BROADCAST == 4, "MNT_COLLECTIVE_BROADCAST");
_Static_assert(MNT_REDUCE_OP_INVALID == 0, "MNT_REDUCE_OP_INVALID");
_Static_assert(MNT_REDUCE_OP_SUM == 1, "MNT_REDUCE_OP_SUM");
_Static_assert(MNT_REDUCE_OP_AVG == 2, "MNT_REDUCE_OP_AVG");
_Static_assert(MNT_REDUCE_OP_MAX == 3, "MNT_REDUCE_OP_MAX");
_Static_assert(MNT_CAPABILITIES_EXTENSION_VERSION == 1, "MNT_CAPABILITIES_EXTENSION_VERSION");
_Static_assert(MNT_COLLECTIVES_EXTENSION_VERSION == 2, "MNT_COLLECTIVES_EXTENSION_VERSION");
_Static_assert(MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES == 256, "MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES");
_Static_assert(MNT_ERROR_OK == 0, "MNT_ERROR_OK");
_Static_assert(MNT_ERROR_CANCELLED == 1, "MNT_ERROR_CANCELLED");
_Static_assert(MNT_ERROR_UNKNOWN == 2, "MNT_ERROR_UNKNOWN");
_Static_assert(MNT_ERROR_INVALID_ARGUMENT == 3, "MNT_ERROR_INVALID_ARGUMENT");
_Static_assert(MNT_ERROR_DEADLINE_EXCEEDED == 4, "MNT_ERROR_DEADLINE_EXCEEDED");
_Static_assert(MNT_ERROR_NOT_FOUND == 5, "MNT_ERROR_NOT_FOUND");
_Static_assert(MNT_ERROR_ALREADY_EXISTS == 6, "MNT_ERROR_ALREADY_EXISTS");
_Static_assert(MNT_ERROR_PERMISSION_DENIED == 7, "MNT_ERROR_PERMISSION_DENIED");
_Static_assert(MNT_ERROR_RESOURCE_EXHAUSTED == 8, "MNT_ERROR_RESOURCE_EXHAUSTED");
_Static_assert(MNT_ERROR_FAILED_PRECONDITION == 9, "MNT_ERROR_FAILED_PRECONDITION");
_Static_assert(MNT_ERROR_ABORTED == 10, "MNT_ERROR_ABORTED");
_Static_assert(MNT_ERROR_OUT_OF_RANGE == 11, "MNT_ERROR_OUT_OF_RANGE");
_Static_assert(MNT_ERROR_UNIMPLEMENTED == 12, "MNT_ERROR_UNIMPLEMENTED");
_Static_assert(MNT_ERROR_INTERNAL == 13, "MNT_ERROR_INTERNAL");
_Static_assert(MNT_ERROR_UNAVAILABLE == 14, "MNT_ERROR_UNAVAILABLE");
_Static_assert(MNT_ERROR_DATA_LOSS == 15, "MNT_ERROR_DATA_LOSS");
_Static_assert(MNT_ERROR_UNAUTHENTICATED == 16, "MNT_ERROR_UNAUTHENTICATED");
_Static_assert(MNT_DTYPE_INVALID == 0, "MNT_DTYPE_INVALID");
_Static_assert(MNT_DTYPE_F32 == 1, "MNT_DTYPE_F32");
_Static_assert(MNT_DTYPE_F16 == 2, "MNT_DTYPE_F16");
_Static_assert(MNT_DTYPE_BF16 == 3, "MNT_DTYPE_BF16");
_Static_assert(MNT_DTYPE_I32 == 4, "MNT_DTYPE_I32");
_Static_assert(MNT_DTYPE_U8 == 5, "MNT_DTYPE_U8");
_Static_assert(MNT_DTYPE_F64 == 6, "MNT_DTYPE_F64");
_Static_assert(MNT_COMPUTE_INVALID == 0, "MNT_COMPUTE_INVALID");
_Static_assert(MNT_COMPUTE_F32 == 1, "MNT_COMPUTE_F32");
_Static_assert(MNT_COMPUTE_TF32 == 2, "MNT_COMPUTE_TF32");
_Static_assert(MNT_COMPUTE_BF16 == 3, "MNT_COMPUTE_BF16");
_Static_assert(MNT_COMPUTE_F16 == 4, "MNT_COMPUTE_F16");
_Static_assert(MNT_PLUGIN_KIND_INVALID == 0, "MNT_PLUGIN_KIND_INVALID");
_Static_assert(MNT_PLUGIN_KIND_BACKEND == 1, "MNT_PLUGIN_KIND_BACKEND");
_Static_assert(MNT_PLUGIN_KIND_PRECISION == 2, "MNT_PLUGIN_KIND_PRECISION");
_Static_assert(MNT_PLUGIN_KIND_MODEL == 3, "MNT_PLUGIN_KIND_MODEL");
_Static_assert(MNT_MEMORY_WEIGHTS == 0, "MNT_MEMORY_WEIGHTS");
_Static_assert(MNT_MEMORY_MASTER_WEIGHTS == 1, "MNT_MEMORY_MASTER_WEIGHTS");
_Static_assert(MNT_MEMORY_GRADIENTS == 2, "MNT_MEMORY_GRADIENTS");
_Static_assert(MNT_MEMORY_OPTIMIZER_STATE == 3, "MNT_MEMORY_OPTIMIZER_STATE");
_Static_assert(MNT_MEMORY_ACTIVATIONS == 4, "MNT_MEMORY_ACTIVATIONS");
_Static_assert(MNT_MEMORY_WORKSPACE == 5, "MNT_MEMORY_WORKSPACE");
_Static_assert(MNT_MEMORY_DATA == 6, "MNT_MEMORY_DATA");
_Static_assert(MNT_MEMORY_CATEGORY_COUNT == 7, "MNT_MEMORY_CATEGORY_COUNT");
_Static_assert(MNT_MEMORY_ALL == 100, "MNT_MEMORY_ALL");
_Static_assert(MNT_COPY_HOST_TO_DEVICE == 1, "MNT_COPY_HOST_TO_DEVICE");
_Static_assert(MNT_COPY_DEVICE_TO_HOST == 2, "MNT_COPY_DEVICE_TO_HOST");
_Static_assert(MNT_COPY_DEVICE_TO_DEVICE == 3, "MNT_COPY_DEVICE_TO_DEVICE");
_Static_assert(MNT_OP_INVALID == 0, "MNT_OP_INVALID");
_Static_assert(MNT_OP_FILL == 1, "MNT_OP_FILL");
_Static_assert(MNT_OP_CAST == 2, "MNT_OP_CAST");
_Static_assert(MNT_OP_GEMM == 3, "MNT_OP_GEMM");
_Static_assert(MNT_OP_BIAS_GRAD == 4, "MNT_OP_BIAS_GRAD");
_Static_assert(MNT_OP_ACTIVATION_FORWARD == 5, "MNT_OP_ACTIVATION_FORWARD");
_Static_assert(MNT_OP_ACTIVATION_BACKWARD == 6, "MNT_OP_ACTIVATION_BACKWARD");
_Static_assert(MNT_OP_ADD == 7, "MNT_OP_ADD");
_Static_assert(MNT_OP_SOFTMAX == 8, "MNT_OP_SOFTMAX");
_Static_assert(MNT_OP_CROSS_ENTROPY == 9, "MNT_OP_CROSS_ENTROPY");
_Static_assert(MNT_OP_LAYERNORM_FORWARD == 10, "MNT_OP_LAYERNORM_FORWARD");
_Static_assert(MNT_OP_LAYERNORM_BACKWARD == 11, "MNT_OP_LAYERNORM_BACKWARD");
_Static_assert(MNT_OP_EMBEDDING_FORWARD == 12, "MNT_OP_EMBEDDING_FORWARD");
_Static_assert(MNT_OP_EMBEDDING_BACKWARD == 13, "MNT_OP_EMBEDDING_BACKWARD");
_Static_assert(MNT_OP_REDUCE == 14, "MNT_OP_REDUCE");
_Static_assert(MNT_OP_COUNT_CORRECT == 15, "MNT_OP_COUNT_CORRECT");
_Static_assert(MNT_OP_GLOBAL_NORM_SQUARED == 16, "MNT_OP_GLOBAL_NORM_SQUARED");
_Static_assert(MNT_OP_NONFINITE_CHECK_UNSCALE == 17, "MNT_OP_NONFINITE_CHECK_UNSCALE");
_Static_assert(MNT_OP_SGD_STEP == 18, "MNT_OP_SGD_STEP");
_Static_assert(MNT_OP_ADAMW_STEP == 19, "MNT_OP_ADAMW_STEP");
_Static_assert(MNT_OP_ATTENTION_FORWARD == 20, "MNT_OP_ATTENTION_FORWARD");
_Static_assert(MNT_OP_ATTENTION_BACKWARD == 21, "MNT_OP_ATTENTION_BACKWARD");
_Static_assert(MNT_OP_CONV2D_FORWARD == 22, "MNT_OP_CONV2D_FORWARD");
_Static_assert(MNT_OP_CONV2D_BACKWARD_DATA == 23, "MNT_OP_CONV2D_BACKWARD_DATA");
_Static_assert(MNT_OP_CONV2D_BACKWARD_FILTER == 24, "MNT_OP_CONV2D_BACKWARD_FILTER");
_Static_assert(MNT_OP_POOL2D_FORWARD == 25, "MNT_OP_POOL2D_FORWARD");
_Static_assert(MNT_OP_POOL2D_BACKWARD == 26, "MNT_OP_POOL2D_BACKWARD");
_Static_assert(MNT_OP_BATCHNORM_FORWARD == 27, "MNT_OP_BATCHNORM_FORWARD");
_Static_assert(MNT_OP_BATCHNORM_BACKWARD == 28, "MNT_OP_BATCHNORM_BACKWARD");
_Static_assert(MNT_OP_AMP_UPDATE_SCALE == 29, "MNT_OP_AMP_UPDATE_SCALE");
_Static_assert(MNT_OP_CLIP_COEFFICIENT == 30, "MNT_OP_CLIP_COEFFICIENT");
_Static_assert(MNT_OP_GEMM_BIAS_GELU == 31, "MNT_OP_GEMM_BIAS_GELU");
_Static_assert(MNT_OP_GEMM_DGELU == 32, "MNT_OP_GEMM_DGELU");
_Static_assert(MNT_OP_GEMM_BIAS_GRAD == 33, "MNT_OP_GEMM_BIAS_GRAD");
_Static_assert(MNT_OP_FUSED_CLASSIFIER == 34, "MNT_OP_FUSED_CLASSIFIER");
_Static_assert(MNT_OP_RESIDUAL_LAYERNORM_FORWARD == 35, "MNT_OP_RESIDUAL_LAYERNORM_FORWARD");
_Static_assert(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD == 36, "MNT_OP_RESIDUAL_LAYERNORM_BACKWARD");
_Static_assert(MNT_OP_MULTI_ADAMW_STEP == 37, "MNT_OP_MULTI_ADAMW_STEP");
_Static_assert(MNT_OP_MULTI_SGD_STEP == 38, "MNT_OP_MULTI_SGD_STEP");
_Static_assert(MNT_ACTIVATION_INVALID == 0, "MNT_ACTIVATION_INVALID");
_Static_assert(MNT_ACTIVATION_IDENTITY == 1, "MNT_ACTIVATION_IDENTITY");
_Static_assert(MNT_ACTIVATION_RELU == 2, "MNT_ACTIVATION_RELU");
_Static_assert(MNT_ACTIVATION_GELU_TANH == 3, "MNT_ACTIVATION_GELU_TANH");
_Static_assert(MNT_REDUCE_INVALID == 0, "MNT_REDUCE_INVALID");
_Static_assert(MNT_REDUCE_SUM == 1, "MNT_REDUCE_SUM");
_Static_assert(MNT_REDUCE_MEAN == 2, "MNT_REDUCE_MEAN");
_Static_assert(MNT_REDUCE_MAX == 3, "MNT_REDUCE_MAX");
_Static_assert(MNT_POOL_INVALID == 0, "MNT_POOL_INVALID");
_Static_assert(MNT_POOL_MAX == 1, "MNT_POOL_MAX");
_Static_assert(MNT_POOL_AVG == 2, "MNT_POOL_AVG");
_Static_assert(MNT_OP_CLASS_INVALID == 0, "MNT_OP_CLASS_INVALID");
_Static_assert(MNT_OP_CLASS_MATMUL == 1, "MNT_OP_CLASS_MATMUL");
_Static_assert(MNT_OP_CLASS_ELEMENTWISE == 2, "MNT_OP_CLASS_ELEMENTWISE");
_Static_assert(MNT_OP_CLASS_NORMALIZATION == 3, "MNT_OP_CLASS_NORMALIZATION");
_Static_assert(MNT_OP_CLASS_SOFTMAX == 4, "MNT_OP_CLASS_SOFTMAX");
_Static_assert(MNT_OP_CLASS_LOSS == 5, "MNT_OP_CLASS_LOSS");
_Static_assert(MNT_OP_CLASS_REDUCTION == 6, "MNT_OP_CLASS_REDUCTION");
_Static_assert(MNT_OP_CLASS_OPTIMIZER == 7, "MNT_OP_CLASS_OPTIMIZER");
_Static_assert(MNT_OP_CLASS_EMBEDDING == 8, "MNT_OP_CLASS_EMBEDDING");
_Static_assert(MNT_LOSS_SCALING_NONE == 0, "MNT_LOSS_SCALING_NONE");
_Static_assert(MNT_LOSS_SCALING_DYNAMIC == 1, "MNT_LOSS_SCALING_DYNAMIC");
_Static_assert(MNT_LOSS_SCALING_STATIC == 2, "MNT_LOSS_SCALING_STATIC");
_Static_assert(MNT_LOSS_SCALE_RECIPE_NONE == 0, "MNT_LOSS_SCALE_RECIPE_NONE");
_Static_assert(MNT_LOSS_SCALE_RECIPE_DYNAMIC == 1, "MNT_LOSS_SCALE_RECIPE_DYNAMIC");
_Static_assert(MNT_ROUNDING_NEAREST_EVEN == 0, "MNT_ROUNDING_NEAREST_EVEN");
_Static_assert(MNT_ROUNDING_STOCHASTIC == 1, "MNT_ROUNDING_STOCHASTIC");
_Static_assert(MNT_PARAM_INIT_INVALID == 0, "MNT_PARAM_INIT_INVALID");
_Static_assert(MNT_PARAM_INIT_ZEROS == 1, "MNT_PARAM_INIT_ZEROS");
_Static_assert(MNT_PARAM_INIT_ONES == 2, "MNT_PARAM_INIT_ONES");
_Static_assert(MNT_PARAM_INIT_NORMAL == 3, "MNT_PARAM_INIT_NORMAL");
_Static_assert(MNT_PARAM_INIT_UNIFORM == 4, "MNT_PARAM_INIT_UNIFORM");
_Static_assert(MNT_PARAM_ROLE_OTHER == 0, "MNT_PARAM_ROLE_OTHER");
_Static_assert(MNT_PARAM_ROLE_EMBEDDING == 1, "MNT_PARAM_ROLE_EMBEDDING");

struct expected_size {
  const char* macro;
  size_t actual;
  size_t expected;
};

#define MNT_EXPECT_SIZE(macro, bytes) {#macro, macro, bytes}

// 1.10: FP8 training (issue 25)
_Static_assert(sizeof(MNT_Fp8ScaleUpdateParams) == 24, "sizeof(MNT_Fp8ScaleUpdateParams)");
_Static_assert(offsetof(MNT_Fp8ScaleUpdateParams, struct_size) == 0, "offsetof(MNT_Fp8ScaleUpdateParams, struct_size)");
_Static_assert(offsetof(MNT_Fp8ScaleUpdateParams, fp8_max) == 8, "offsetof(MNT_Fp8ScaleUpdateParams, fp8_max)");
_Static_assert(offsetof(MNT_Fp8ScaleUpdateParams, margin) == 12, "offsetof(MNT_Fp8ScaleUpdateParams, margin)");
_Static_assert(offsetof(MNT_Fp8ScaleUpdateParams, amax_algo) == 16, "offsetof(MNT_Fp8ScaleUpdateParams, amax_algo)");
_Static_assert(offsetof(MNT_Fp8ScaleUpdateParams, history_length) == 20, "offsetof(MNT_Fp8ScaleUpdateParams, history_length)");
_Static_assert(sizeof(MNT_Precision_GetScalingRecipe_Args) == 56, "sizeof(MNT_Precision_GetScalingRecipe_Args)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, struct_size) == 0, "offsetof(MNT_Precision_GetScalingRecipe_Args, struct_size)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, extension_start) == 8, "offsetof(MNT_Precision_GetScalingRecipe_Args, extension_start)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, precision_options) == 16, "offsetof(MNT_Precision_GetScalingRecipe_Args, precision_options)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, recipe) == 24, "offsetof(MNT_Precision_GetScalingRecipe_Args, recipe)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, forward_dtype) == 28, "offsetof(MNT_Precision_GetScalingRecipe_Args, forward_dtype)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, backward_dtype) == 32, "offsetof(MNT_Precision_GetScalingRecipe_Args, backward_dtype)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, history_length) == 36, "offsetof(MNT_Precision_GetScalingRecipe_Args, history_length)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, amax_algo) == 40, "offsetof(MNT_Precision_GetScalingRecipe_Args, amax_algo)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, margin) == 44, "offsetof(MNT_Precision_GetScalingRecipe_Args, margin)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, fast_accumulation_forward) == 48, "offsetof(MNT_Precision_GetScalingRecipe_Args, fast_accumulation_forward)");
_Static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, calibrate) == 52, "offsetof(MNT_Precision_GetScalingRecipe_Args, calibrate)");
_Static_assert(sizeof(MNT_Precision_Api) == 96, "sizeof(MNT_Precision_Api)");
_Static_assert(offsetof(MNT_Precision_Api, Precision_GetScalingRecipe) == 88, "offsetof(MNT_Precision_Api, Precision_GetScalingRecipe)");
_Static_assert(sizeof(MNT_Model_Create_Args) == 184, "sizeof(MNT_Model_Create_Args)");
_Static_assert(offsetof(MNT_Model_Create_Args, fp8_forward_dtype) == 160, "offsetof(MNT_Model_Create_Args, fp8_forward_dtype)");
_Static_assert(offsetof(MNT_Model_Create_Args, fp8_backward_dtype) == 164, "offsetof(MNT_Model_Create_Args, fp8_backward_dtype)");
_Static_assert(offsetof(MNT_Model_Create_Args, fp8_fast_accumulation_forward) == 168, "offsetof(MNT_Model_Create_Args, fp8_fast_accumulation_forward)");
_Static_assert(offsetof(MNT_Model_Create_Args, fp8_current_scaling) == 172, "offsetof(MNT_Model_Create_Args, fp8_current_scaling)");
_Static_assert(offsetof(MNT_Model_Create_Args, fp8_margin) == 176, "offsetof(MNT_Model_Create_Args, fp8_margin)");
_Static_assert(sizeof(MNT_Model_Forward_Args) == 104, "sizeof(MNT_Model_Forward_Args)");
_Static_assert(offsetof(MNT_Model_Forward_Args, fp8_scales) == 80, "offsetof(MNT_Model_Forward_Args, fp8_scales)");
_Static_assert(offsetof(MNT_Model_Forward_Args, fp8_scale_invs) == 88, "offsetof(MNT_Model_Forward_Args, fp8_scale_invs)");
_Static_assert(offsetof(MNT_Model_Forward_Args, fp8_amax) == 96, "offsetof(MNT_Model_Forward_Args, fp8_amax)");
_Static_assert(sizeof(MNT_Model_Backward_Args) == 112, "sizeof(MNT_Model_Backward_Args)");
_Static_assert(offsetof(MNT_Model_Backward_Args, fp8_scales) == 72, "offsetof(MNT_Model_Backward_Args, fp8_scales)");
_Static_assert(offsetof(MNT_Model_Backward_Args, fp8_scale_invs) == 80, "offsetof(MNT_Model_Backward_Args, fp8_scale_invs)");
_Static_assert(offsetof(MNT_Model_Backward_Args, fp8_amax) == 88, "offsetof(MNT_Model_Backward_Args, fp8_amax)");
_Static_assert(MNT_AMAX_ALGO_INVALID == 0, "MNT_AMAX_ALGO_INVALID");
_Static_assert(MNT_AMAX_ALGO_MAX == 1, "MNT_AMAX_ALGO_MAX");
_Static_assert(MNT_AMAX_ALGO_MOST_RECENT == 2, "MNT_AMAX_ALGO_MOST_RECENT");
_Static_assert(MNT_SCALING_RECIPE_NONE == 0, "MNT_SCALING_RECIPE_NONE");
_Static_assert(MNT_SCALING_RECIPE_DELAYED == 1, "MNT_SCALING_RECIPE_DELAYED");
_Static_assert(MNT_SCALING_RECIPE_CURRENT == 2, "MNT_SCALING_RECIPE_CURRENT");
_Static_assert(MNT_OP_FP8_SCALE_UPDATE == 41, "MNT_OP_FP8_SCALE_UPDATE");
_Static_assert(MNT_OP_TENSOR_STATS == 42, "MNT_OP_TENSOR_STATS");
_Static_assert(MNT_CAPABILITY_MODEL_FP8_GEMMS == 8, "MNT_CAPABILITY_MODEL_FP8_GEMMS");

// 1.11: optimizer steps on pieces of a parameter (ZeRO-1 element ranges)
_Static_assert(sizeof(MNT_SgdParams) == 64, "sizeof(MNT_SgdParams)");
_Static_assert(offsetof(MNT_SgdParams, rounding_element) == 56, "offsetof(MNT_SgdParams, rounding_element)");
_Static_assert(sizeof(MNT_AdamWParams) == 72, "sizeof(MNT_AdamWParams)");
_Static_assert(offsetof(MNT_AdamWParams, rounding_element) == 64, "offsetof(MNT_AdamWParams, rounding_element)");
_Static_assert(sizeof(MNT_MultiAdamWParams) == 104, "sizeof(MNT_MultiAdamWParams)");
_Static_assert(offsetof(MNT_MultiAdamWParams, rounding_tensors) == 88, "offsetof(MNT_MultiAdamWParams, rounding_tensors)");
_Static_assert(offsetof(MNT_MultiAdamWParams, rounding_elements) == 96, "offsetof(MNT_MultiAdamWParams, rounding_elements)");
_Static_assert(sizeof(MNT_MultiSgdParams) == 96, "sizeof(MNT_MultiSgdParams)");
_Static_assert(offsetof(MNT_MultiSgdParams, rounding_tensors) == 80, "offsetof(MNT_MultiSgdParams, rounding_tensors)");
_Static_assert(offsetof(MNT_MultiSgdParams, rounding_elements) == 88, "offsetof(MNT_MultiSgdParams, rounding_elements)");
_Static_assert(MNT_CAPABILITY_OPTIMIZER_PIECES == 9, "MNT_CAPABILITY_OPTIMIZER_PIECES");

/* 1.11: a model's Backward hands over finished gradients */
_Static_assert(sizeof(MNT_Model_Backward_Args) == 112, "sizeof(MNT_Model_Backward_Args)");
_Static_assert(offsetof(MNT_Model_Backward_Args, gradient_ready) == 96, "offsetof(MNT_Model_Backward_Args, gradient_ready)");
_Static_assert(offsetof(MNT_Model_Backward_Args, gradient_ready_user_data) == 104, "offsetof(MNT_Model_Backward_Args, gradient_ready_user_data)");
_Static_assert(MNT_CAPABILITY_MODEL_GRADIENT_READY == 10, "MNT_CAPABILITY_MODEL_GRADIENT_READY");
_Static_assert(MNT_CAPABILITY_MODEL_FROZEN_PARAMS == 11, "MNT_CAPABILITY_MODEL_FROZEN_PARAMS");
_Static_assert(MNT_CAPABILITY_MODEL_LORA == 12, "MNT_CAPABILITY_MODEL_LORA");

/* 1.12: memory-light optimizer ops */
_Static_assert(MNT_OP_ADAMW8BIT_STEP == 43, "MNT_OP_ADAMW8BIT_STEP");
_Static_assert(MNT_OP_ADAFACTOR_STEP == 44, "MNT_OP_ADAFACTOR_STEP");
_Static_assert(MNT_QUANTIZATION_BLOCK_SIZE == 256, "MNT_QUANTIZATION_BLOCK_SIZE");
_Static_assert(sizeof(MNT_AdafactorParams) == 80, "sizeof(MNT_AdafactorParams)");
_Static_assert(offsetof(MNT_AdafactorParams, struct_size) == 0, "offsetof(MNT_AdafactorParams, struct_size)");
_Static_assert(offsetof(MNT_AdafactorParams, lr) == 8, "offsetof(MNT_AdafactorParams, lr)");
_Static_assert(offsetof(MNT_AdafactorParams, beta1) == 12, "offsetof(MNT_AdafactorParams, beta1)");
_Static_assert(offsetof(MNT_AdafactorParams, decay_rate) == 16, "offsetof(MNT_AdafactorParams, decay_rate)");
_Static_assert(offsetof(MNT_AdafactorParams, epsilon1) == 20, "offsetof(MNT_AdafactorParams, epsilon1)");
_Static_assert(offsetof(MNT_AdafactorParams, epsilon2) == 24, "offsetof(MNT_AdafactorParams, epsilon2)");
_Static_assert(offsetof(MNT_AdafactorParams, clip_threshold) == 28, "offsetof(MNT_AdafactorParams, clip_threshold)");
_Static_assert(offsetof(MNT_AdafactorParams, weight_decay) == 32, "offsetof(MNT_AdafactorParams, weight_decay)");
_Static_assert(offsetof(MNT_AdafactorParams, relative_step) == 36, "offsetof(MNT_AdafactorParams, relative_step)");
_Static_assert(offsetof(MNT_AdafactorParams, scale_parameter) == 40, "offsetof(MNT_AdafactorParams, scale_parameter)");
_Static_assert(offsetof(MNT_AdafactorParams, warmup_init) == 44, "offsetof(MNT_AdafactorParams, warmup_init)");
_Static_assert(offsetof(MNT_AdafactorParams, step) == 48, "offsetof(MNT_AdafactorParams, step)");
_Static_assert(offsetof(MNT_AdafactorParams, rounding) == 56, "offsetof(MNT_AdafactorParams, rounding)");
_Static_assert(offsetof(MNT_AdafactorParams, rounding_seed) == 64, "offsetof(MNT_AdafactorParams, rounding_seed)");
_Static_assert(offsetof(MNT_AdafactorParams, rounding_tensor) == 72, "offsetof(MNT_AdafactorParams, rounding_tensor)");

/* 1.14: the memory-light optimizers over a table of tensors */
_Static_assert(MNT_OP_MULTI_ADAMW8BIT_STEP == 45, "MNT_OP_MULTI_ADAMW8BIT_STEP");
_Static_assert(MNT_OP_MULTI_ADAFACTOR_STEP == 46, "MNT_OP_MULTI_ADAFACTOR_STEP");
_Static_assert(sizeof(MNT_MultiAdafactorParams) == 112, "sizeof(MNT_MultiAdafactorParams)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, struct_size) == 0, "offsetof(MNT_MultiAdafactorParams, struct_size)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, lr) == 8, "offsetof(MNT_MultiAdafactorParams, lr)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, beta1) == 12, "offsetof(MNT_MultiAdafactorParams, beta1)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, decay_rate) == 16, "offsetof(MNT_MultiAdafactorParams, decay_rate)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, epsilon1) == 20, "offsetof(MNT_MultiAdafactorParams, epsilon1)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, epsilon2) == 24, "offsetof(MNT_MultiAdafactorParams, epsilon2)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, clip_threshold) == 28, "offsetof(MNT_MultiAdafactorParams, clip_threshold)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, weight_decay) == 32, "offsetof(MNT_MultiAdafactorParams, weight_decay)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, relative_step) == 36, "offsetof(MNT_MultiAdafactorParams, relative_step)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, scale_parameter) == 40, "offsetof(MNT_MultiAdafactorParams, scale_parameter)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, warmup_init) == 44, "offsetof(MNT_MultiAdafactorParams, warmup_init)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, step) == 48, "offsetof(MNT_MultiAdafactorParams, step)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, rounding) == 56, "offsetof(MNT_MultiAdafactorParams, rounding)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, rounding_seed) == 64, "offsetof(MNT_MultiAdafactorParams, rounding_seed)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, rounding_tensor) == 72, "offsetof(MNT_MultiAdafactorParams, rounding_tensor)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, num_tensors) == 80, "offsetof(MNT_MultiAdafactorParams, num_tensors)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, lr_scales) == 88, "offsetof(MNT_MultiAdafactorParams, lr_scales)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, weight_decays) == 96, "offsetof(MNT_MultiAdafactorParams, weight_decays)");
_Static_assert(offsetof(MNT_MultiAdafactorParams, rounding_tensors) == 104, "offsetof(MNT_MultiAdafactorParams, rounding_tensors)");

/* 1.12: a model declares the data it takes */
_Static_assert(sizeof(MNT_ModelData_Extension) == 56, "sizeof(MNT_ModelData_Extension)");
_Static_assert(offsetof(MNT_ModelData_Extension, header) == 0, "offsetof(MNT_ModelData_Extension, header)");
_Static_assert(offsetof(MNT_ModelData_Extension, kinds) == 40, "offsetof(MNT_ModelData_Extension, kinds)");
_Static_assert(offsetof(MNT_ModelData_Extension, num_kinds) == 48, "offsetof(MNT_ModelData_Extension, num_kinds)");
_Static_assert(MNT_EXTENSION_TYPE_MODEL_DATA == 3, "MNT_EXTENSION_TYPE_MODEL_DATA");
_Static_assert(MNT_DATA_KIND_INVALID == 0, "MNT_DATA_KIND_INVALID");
_Static_assert(MNT_DATA_KIND_FEATURES == 1, "MNT_DATA_KIND_FEATURES");
_Static_assert(MNT_DATA_KIND_IMAGES == 2, "MNT_DATA_KIND_IMAGES");
_Static_assert(MNT_DATA_KIND_TOKENS == 3, "MNT_DATA_KIND_TOKENS");

int main(void) {
  static const struct expected_size kSizes[] = {
      MNT_EXPECT_SIZE(MNT_Tensor_STRUCT_SIZE, 72),
      MNT_EXPECT_SIZE(MNT_Api_Version_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_Plugin_Api_STRUCT_SIZE, 120),
      MNT_EXPECT_SIZE(MNT_Extension_Header_STRUCT_SIZE, 36),
      MNT_EXPECT_SIZE(MNT_Capabilities_Extension_STRUCT_SIZE, 56),
      MNT_EXPECT_SIZE(MNT_ModelData_Extension_STRUCT_SIZE, 56),
      MNT_EXPECT_SIZE(MNT_Collectives_GetUniqueId_Args_STRUCT_SIZE, 288),
      MNT_EXPECT_SIZE(MNT_Communicator_Create_Args_STRUCT_SIZE, 56),
      MNT_EXPECT_SIZE(MNT_Communicator_Destroy_Args_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_Collectives_Run_Args_STRUCT_SIZE, 64),
      MNT_EXPECT_SIZE(MNT_Collectives_Start_Args_STRUCT_SIZE, 72),
      MNT_EXPECT_SIZE(MNT_Collectives_Wait_Args_STRUCT_SIZE, 40),
      MNT_EXPECT_SIZE(MNT_Collectives_Extension_STRUCT_SIZE, 88),
      MNT_EXPECT_SIZE(MNT_Collectives_Extension_V1_STRUCT_SIZE, 72),
      MNT_EXPECT_SIZE(MNT_FillParams_STRUCT_SIZE, 16),
      MNT_EXPECT_SIZE(MNT_GemmParams_STRUCT_SIZE, 28),
      MNT_EXPECT_SIZE(MNT_AccumulateParams_STRUCT_SIZE, 12),
      MNT_EXPECT_SIZE(MNT_ActivationParams_STRUCT_SIZE, 12),
      MNT_EXPECT_SIZE(MNT_AddParams_STRUCT_SIZE, 16),
      MNT_EXPECT_SIZE(MNT_CrossEntropyParams_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_LayerNormParams_STRUCT_SIZE, 16),
      MNT_EXPECT_SIZE(MNT_ReduceParams_STRUCT_SIZE, 12),
      MNT_EXPECT_SIZE(MNT_SgdParams_STRUCT_SIZE, 64),
      MNT_EXPECT_SIZE(MNT_SgdParams_STRUCT_SIZE_1_6, 24),
      MNT_EXPECT_SIZE(MNT_SgdParams_STRUCT_SIZE_1_10, 56),
      MNT_EXPECT_SIZE(MNT_AdamWParams_STRUCT_SIZE, 72),
      MNT_EXPECT_SIZE(MNT_AdamWParams_STRUCT_SIZE_1_6, 40),
      MNT_EXPECT_SIZE(MNT_AdamWParams_STRUCT_SIZE_1_10, 64),
      MNT_EXPECT_SIZE(MNT_AttentionParams_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_AttentionParams_STRUCT_SIZE_1_7, 20),
      MNT_EXPECT_SIZE(MNT_Conv2dParams_STRUCT_SIZE, 44),
      MNT_EXPECT_SIZE(MNT_Pool2dParams_STRUCT_SIZE, 40),
      MNT_EXPECT_SIZE(MNT_BatchNormParams_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_AmpUpdateScaleParams_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_AmpUpdateScaleParams_STRUCT_SIZE_1_4, 20),
      MNT_EXPECT_SIZE(MNT_ClipCoefficientParams_STRUCT_SIZE, 12),
      MNT_EXPECT_SIZE(MNT_GemmEpilogueParams_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_MultiAdamWParams_STRUCT_SIZE, 104),
      MNT_EXPECT_SIZE(MNT_MultiAdamWParams_STRUCT_SIZE_1_6, 64),
      MNT_EXPECT_SIZE(MNT_MultiAdamWParams_STRUCT_SIZE_1_10, 88),
      MNT_EXPECT_SIZE(MNT_MultiSgdParams_STRUCT_SIZE, 96),
      MNT_EXPECT_SIZE(MNT_MultiSgdParams_STRUCT_SIZE_1_6, 48),
      MNT_EXPECT_SIZE(MNT_MultiSgdParams_STRUCT_SIZE_1_10, 80),
      MNT_EXPECT_SIZE(MNT_AdafactorParams_STRUCT_SIZE, 80),
      MNT_EXPECT_SIZE(MNT_MultiAdafactorParams_STRUCT_SIZE, 112),
      MNT_EXPECT_SIZE(MNT_Backend_Create_Args_STRUCT_SIZE, 40),
      MNT_EXPECT_SIZE(MNT_Backend_Destroy_Args_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_Backend_GetInfo_Args_STRUCT_SIZE, 56),
      MNT_EXPECT_SIZE(MNT_Backend_GetInfo_Args_STRUCT_SIZE_1_7, 44),
      MNT_EXPECT_SIZE(MNT_Memory_Allocate_Args_STRUCT_SIZE, 48),
      MNT_EXPECT_SIZE(MNT_Memory_Free_Args_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_Memory_Copy_Args_STRUCT_SIZE, 52),
      MNT_EXPECT_SIZE(MNT_Memory_GetStats_Args_STRUCT_SIZE, 48),
      MNT_EXPECT_SIZE(MNT_Memory_ResetPeak_Args_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_Backend_Synchronize_Args_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_Backend_GetOpSupport_Args_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_Backend_Run_Args_STRUCT_SIZE, 72),
      MNT_EXPECT_SIZE(MNT_Event_Create_Args_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_Event_Record_Args_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_Event_ElapsedTime_Args_STRUCT_SIZE, 48),
      MNT_EXPECT_SIZE(MNT_Event_Destroy_Args_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_Backend_Api_STRUCT_SIZE, 152),
      MNT_EXPECT_SIZE(MNT_Backend_Api_STRUCT_SIZE_1_6, 136),
      MNT_EXPECT_SIZE(MNT_Backend_StepBegin_Args_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_Backend_StepEnd_Args_STRUCT_SIZE, 28),
      MNT_EXPECT_SIZE(MNT_Backend_Api_STRUCT_SIZE_1_0, 104),
      MNT_EXPECT_SIZE(MNT_Precision_GetPolicy_Args_STRUCT_SIZE, 44),
      MNT_EXPECT_SIZE(MNT_Precision_GetOpClassPolicy_Args_STRUCT_SIZE, 36),
      MNT_EXPECT_SIZE(MNT_Precision_GetMemoryPlan_Args_STRUCT_SIZE, 40),
      MNT_EXPECT_SIZE(MNT_LossScaler_Create_Args_STRUCT_SIZE, 40),
      MNT_EXPECT_SIZE(MNT_LossScaler_Destroy_Args_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_LossScalerState_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_LossScaler_GetState_Args_STRUCT_SIZE, 80),
      MNT_EXPECT_SIZE(MNT_LossScaler_SetState_Args_STRUCT_SIZE, 80),
      MNT_EXPECT_SIZE(MNT_LossScaler_Update_Args_STRUCT_SIZE, 36),
      MNT_EXPECT_SIZE(MNT_Precision_Api_STRUCT_SIZE, 96),
      MNT_EXPECT_SIZE(MNT_Precision_Api_STRUCT_SIZE_1_0, 80),
      MNT_EXPECT_SIZE(MNT_LossScaler_GetRecipe_Args_STRUCT_SIZE, 68),
      MNT_EXPECT_SIZE(MNT_DataSpec_STRUCT_SIZE, 76),
      MNT_EXPECT_SIZE(MNT_ModelPrecision_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_Model_Create_Args_STRUCT_SIZE, 180),
      MNT_EXPECT_SIZE(MNT_Model_Destroy_Args_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_Model_GetParamCount_Args_STRUCT_SIZE, 32),
      MNT_EXPECT_SIZE(MNT_Model_GetParamSpec_Args_STRUCT_SIZE, 116),
      MNT_EXPECT_SIZE(MNT_Model_GetParamSpec_Args_STRUCT_SIZE_1_15, 112),
      MNT_EXPECT_SIZE(MNT_Model_GetParamSpec_Args_STRUCT_SIZE_1_14, 108),
      MNT_EXPECT_SIZE(MNT_Model_Forward_Args_STRUCT_SIZE, 104),
      MNT_EXPECT_SIZE(MNT_Model_Backward_Args_STRUCT_SIZE, 112),
      MNT_EXPECT_SIZE(MNT_Model_Backward_Args_STRUCT_SIZE_1_10, 96),
      MNT_EXPECT_SIZE(MNT_Model_Backward_Args_STRUCT_SIZE_1_5, 64),
      MNT_EXPECT_SIZE(MNT_Model_Api_STRUCT_SIZE, 64),
      MNT_EXPECT_SIZE(MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, 24),
      MNT_EXPECT_SIZE(MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE, 56),
      MNT_EXPECT_SIZE(MNT_Precision_Api_STRUCT_SIZE_1_9, 88),
      MNT_EXPECT_SIZE(MNT_Model_Create_Args_STRUCT_SIZE_1_9, 160),
      MNT_EXPECT_SIZE(MNT_Model_Forward_Args_STRUCT_SIZE_1_9, 80),
      MNT_EXPECT_SIZE(MNT_Model_Backward_Args_STRUCT_SIZE_1_9, 72),
  };
  int failures = 0;
  size_t i;
  for (i = 0; i < sizeof(kSizes) / sizeof(kSizes[0]); ++i) {
    if (kSizes[i].actual != kSizes[i].expected) {
      fprintf(stderr, "FAIL: %s is %zu, frozen at %zu\n", kSizes[i].macro,
              kSizes[i].actual, kSizes[i].expected);
      ++failures;
    }
  }
  if (MNT_Backend_Api_STRUCT_SIZE_1_0 !=
      offsetof(MNT_Backend_Api, Backend_Run) + sizeof(void*)) {
    fprintf(stderr, "FAIL: MNT_Backend_Api_STRUCT_SIZE_1_0 does not end at "
                    "Backend_Run\n");
    ++failures;
  }
  printf("%zu struct sizes checked, %d failures\n",
         sizeof(kSizes) / sizeof(kSizes[0]), failures);
  return failures == 0 ? 0 : 1;
}
