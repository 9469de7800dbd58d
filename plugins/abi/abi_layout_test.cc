// Freezes the Mantissa plugin ABI's memory layout for x86-64 Linux (LP64).
//
// Every struct's size, every field's offset and every enum value of the five
// ABI headers is pinned here. Within major version 1 these numbers never
// change: a new field is appended, which adds lines here and may grow the
// sizeof of an Args or Api struct, but never moves an existing offset. The
// structs passed in arrays or embedded in others (MNT_Tensor, MNT_Api_Version,
// MNT_LossScalerState, MNT_DataSpec, MNT_ModelPrecision) cannot grow at all. If one of these asserts fires,
// the edit broke every plugin built so far: bump MNT_ABI_MAJOR instead (see
// docs/abi.md). abi_layout_c_test.c checks the same numbers as a C compiler
// sees them.
#include <cstddef>
#include <cstdint>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"

static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8 && sizeof(int) == 4,
              "the frozen numbers below are for LP64 (x86-64 Linux)");
static_assert(sizeof(MNT_DType) == 4);

// ---- mnt_common.h ------------------------------------------------
static_assert(sizeof(MNT_Extension_Base) == 24);
static_assert(offsetof(MNT_Extension_Base, struct_size) == 0);
static_assert(offsetof(MNT_Extension_Base, type) == 8);
static_assert(offsetof(MNT_Extension_Base, next) == 16);
// 1.9
static_assert(sizeof(MNT_Extension_Header) == 40);
static_assert(offsetof(MNT_Extension_Header, base) == 0);
static_assert(offsetof(MNT_Extension_Header, name) == 24);
static_assert(offsetof(MNT_Extension_Header, version) == 32);
static_assert(sizeof(MNT_Capabilities_Extension) == 56);
static_assert(offsetof(MNT_Capabilities_Extension, header) == 0);
static_assert(offsetof(MNT_Capabilities_Extension, capabilities) == 40);
static_assert(offsetof(MNT_Capabilities_Extension, num_capabilities) == 48);
static_assert(sizeof(MNT_Tensor) == 72);
static_assert(offsetof(MNT_Tensor, struct_size) == 0);
static_assert(offsetof(MNT_Tensor, data) == 8);
static_assert(offsetof(MNT_Tensor, dtype) == 16);
static_assert(offsetof(MNT_Tensor, rank) == 20);
static_assert(offsetof(MNT_Tensor, dims) == 24);
static_assert(sizeof(MNT_Api_Version) == 24);
static_assert(offsetof(MNT_Api_Version, struct_size) == 0);
static_assert(offsetof(MNT_Api_Version, extension_start) == 8);
static_assert(offsetof(MNT_Api_Version, major_version) == 16);
static_assert(offsetof(MNT_Api_Version, minor_version) == 20);
static_assert(sizeof(MNT_Plugin_Api) == 120);
static_assert(offsetof(MNT_Plugin_Api, struct_size) == 0);
static_assert(offsetof(MNT_Plugin_Api, extension_start) == 8);
static_assert(offsetof(MNT_Plugin_Api, abi_version) == 16);
static_assert(offsetof(MNT_Plugin_Api, kind) == 40);
static_assert(offsetof(MNT_Plugin_Api, name) == 48);
static_assert(offsetof(MNT_Plugin_Api, description) == 56);
static_assert(offsetof(MNT_Plugin_Api, Error_Destroy) == 64);
static_assert(offsetof(MNT_Plugin_Api, Error_Message) == 72);
static_assert(offsetof(MNT_Plugin_Api, Error_GetCode) == 80);
static_assert(offsetof(MNT_Plugin_Api, Plugin_Initialize) == 88);
static_assert(offsetof(MNT_Plugin_Api, backend) == 96);
static_assert(offsetof(MNT_Plugin_Api, precision) == 104);
static_assert(offsetof(MNT_Plugin_Api, model) == 112);

// ---- mnt_backend.h -----------------------------------------------
static_assert(sizeof(MNT_FillParams) == 16);
static_assert(offsetof(MNT_FillParams, struct_size) == 0);
static_assert(offsetof(MNT_FillParams, value) == 8);
static_assert(sizeof(MNT_GemmParams) == 32);
static_assert(offsetof(MNT_GemmParams, struct_size) == 0);
static_assert(offsetof(MNT_GemmParams, trans_a) == 8);
static_assert(offsetof(MNT_GemmParams, trans_b) == 12);
static_assert(offsetof(MNT_GemmParams, alpha) == 16);
static_assert(offsetof(MNT_GemmParams, beta) == 20);
static_assert(offsetof(MNT_GemmParams, compute) == 24);
static_assert(sizeof(MNT_AccumulateParams) == 16);
static_assert(offsetof(MNT_AccumulateParams, struct_size) == 0);
static_assert(offsetof(MNT_AccumulateParams, accumulate) == 8);
static_assert(sizeof(MNT_ActivationParams) == 16);
static_assert(offsetof(MNT_ActivationParams, struct_size) == 0);
static_assert(offsetof(MNT_ActivationParams, activation) == 8);
static_assert(sizeof(MNT_AddParams) == 16);
static_assert(offsetof(MNT_AddParams, struct_size) == 0);
static_assert(offsetof(MNT_AddParams, alpha) == 8);
static_assert(offsetof(MNT_AddParams, beta) == 12);
static_assert(sizeof(MNT_CrossEntropyParams) == 24);
static_assert(offsetof(MNT_CrossEntropyParams, struct_size) == 0);
static_assert(offsetof(MNT_CrossEntropyParams, grad_scale) == 8);
static_assert(offsetof(MNT_CrossEntropyParams, num_classes) == 16);
static_assert(sizeof(MNT_LayerNormParams) == 16);
static_assert(offsetof(MNT_LayerNormParams, struct_size) == 0);
static_assert(offsetof(MNT_LayerNormParams, epsilon) == 8);
static_assert(offsetof(MNT_LayerNormParams, accumulate) == 12);
static_assert(sizeof(MNT_ReduceParams) == 16);
static_assert(offsetof(MNT_ReduceParams, struct_size) == 0);
static_assert(offsetof(MNT_ReduceParams, kind) == 8);
static_assert(sizeof(MNT_SgdParams) == 64);
static_assert(offsetof(MNT_SgdParams, struct_size) == 0);
static_assert(offsetof(MNT_SgdParams, lr) == 8);
static_assert(offsetof(MNT_SgdParams, momentum) == 12);
static_assert(offsetof(MNT_SgdParams, weight_decay) == 16);
static_assert(offsetof(MNT_SgdParams, nesterov) == 20);
static_assert(offsetof(MNT_SgdParams, rounding) == 24);
static_assert(offsetof(MNT_SgdParams, rounding_seed) == 32);
static_assert(offsetof(MNT_SgdParams, rounding_tensor) == 40);
static_assert(offsetof(MNT_SgdParams, rounding_step) == 48);
static_assert(sizeof(MNT_AdamWParams) == 72);
static_assert(offsetof(MNT_AdamWParams, struct_size) == 0);
static_assert(offsetof(MNT_AdamWParams, lr) == 8);
static_assert(offsetof(MNT_AdamWParams, beta1) == 12);
static_assert(offsetof(MNT_AdamWParams, beta2) == 16);
static_assert(offsetof(MNT_AdamWParams, epsilon) == 20);
static_assert(offsetof(MNT_AdamWParams, weight_decay) == 24);
static_assert(offsetof(MNT_AdamWParams, step) == 32);
static_assert(offsetof(MNT_AdamWParams, rounding) == 40);
static_assert(offsetof(MNT_AdamWParams, rounding_seed) == 48);
static_assert(offsetof(MNT_AdamWParams, rounding_tensor) == 56);
static_assert(sizeof(MNT_AttentionParams) == 24);
static_assert(offsetof(MNT_AttentionParams, struct_size) == 0);
static_assert(offsetof(MNT_AttentionParams, num_heads) == 8);
static_assert(offsetof(MNT_AttentionParams, causal) == 12);
static_assert(offsetof(MNT_AttentionParams, scale) == 16);
static_assert(offsetof(MNT_AttentionParams, compute) == 20);
static_assert(sizeof(MNT_Conv2dParams) == 48);
static_assert(offsetof(MNT_Conv2dParams, struct_size) == 0);
static_assert(offsetof(MNT_Conv2dParams, pad_h) == 8);
static_assert(offsetof(MNT_Conv2dParams, pad_w) == 12);
static_assert(offsetof(MNT_Conv2dParams, stride_h) == 16);
static_assert(offsetof(MNT_Conv2dParams, stride_w) == 20);
static_assert(offsetof(MNT_Conv2dParams, dilation_h) == 24);
static_assert(offsetof(MNT_Conv2dParams, dilation_w) == 28);
static_assert(offsetof(MNT_Conv2dParams, groups) == 32);
static_assert(offsetof(MNT_Conv2dParams, compute) == 36);
static_assert(offsetof(MNT_Conv2dParams, accumulate) == 40);
static_assert(sizeof(MNT_Pool2dParams) == 40);
static_assert(offsetof(MNT_Pool2dParams, struct_size) == 0);
static_assert(offsetof(MNT_Pool2dParams, kind) == 8);
static_assert(offsetof(MNT_Pool2dParams, window_h) == 12);
static_assert(offsetof(MNT_Pool2dParams, window_w) == 16);
static_assert(offsetof(MNT_Pool2dParams, stride_h) == 20);
static_assert(offsetof(MNT_Pool2dParams, stride_w) == 24);
static_assert(offsetof(MNT_Pool2dParams, pad_h) == 28);
static_assert(offsetof(MNT_Pool2dParams, pad_w) == 32);
static_assert(offsetof(MNT_Pool2dParams, count_include_pad) == 36);
static_assert(sizeof(MNT_BatchNormParams) == 24);
static_assert(offsetof(MNT_BatchNormParams, struct_size) == 0);
static_assert(offsetof(MNT_BatchNormParams, training) == 8);
static_assert(offsetof(MNT_BatchNormParams, momentum) == 12);
static_assert(offsetof(MNT_BatchNormParams, epsilon) == 16);
static_assert(offsetof(MNT_BatchNormParams, accumulate) == 20);
static_assert(sizeof(MNT_AmpUpdateScaleParams) == 32);
static_assert(offsetof(MNT_AmpUpdateScaleParams, struct_size) == 0);
static_assert(offsetof(MNT_AmpUpdateScaleParams, growth_factor) == 8);
static_assert(offsetof(MNT_AmpUpdateScaleParams, backoff_factor) == 12);
static_assert(offsetof(MNT_AmpUpdateScaleParams, growth_interval) == 16);
static_assert(offsetof(MNT_AmpUpdateScaleParams, hysteresis) == 20);
static_assert(offsetof(MNT_AmpUpdateScaleParams, min_scale) == 24);
static_assert(offsetof(MNT_AmpUpdateScaleParams, max_scale) == 28);
static_assert(sizeof(MNT_ClipCoefficientParams) == 16);
static_assert(offsetof(MNT_ClipCoefficientParams, struct_size) == 0);
static_assert(offsetof(MNT_ClipCoefficientParams, max_norm) == 8);
static_assert(sizeof(MNT_GemmEpilogueParams) == 32);
static_assert(offsetof(MNT_GemmEpilogueParams, struct_size) == 0);
static_assert(offsetof(MNT_GemmEpilogueParams, trans_a) == 8);
static_assert(offsetof(MNT_GemmEpilogueParams, trans_b) == 12);
static_assert(offsetof(MNT_GemmEpilogueParams, alpha) == 16);
static_assert(offsetof(MNT_GemmEpilogueParams, beta) == 20);
static_assert(offsetof(MNT_GemmEpilogueParams, compute) == 24);
static_assert(offsetof(MNT_GemmEpilogueParams, accumulate_bias_grad) == 28);
// Since 1.6.
static_assert(sizeof(MNT_MultiAdamWParams) == 104);
static_assert(offsetof(MNT_MultiAdamWParams, struct_size) == 0);
static_assert(offsetof(MNT_MultiAdamWParams, lr) == 8);
static_assert(offsetof(MNT_MultiAdamWParams, beta1) == 12);
static_assert(offsetof(MNT_MultiAdamWParams, beta2) == 16);
static_assert(offsetof(MNT_MultiAdamWParams, epsilon) == 20);
static_assert(offsetof(MNT_MultiAdamWParams, weight_decay) == 24);
static_assert(offsetof(MNT_MultiAdamWParams, step) == 32);
static_assert(offsetof(MNT_MultiAdamWParams, num_tensors) == 40);
static_assert(offsetof(MNT_MultiAdamWParams, lr_scales) == 48);
static_assert(offsetof(MNT_MultiAdamWParams, weight_decays) == 56);
static_assert(offsetof(MNT_MultiAdamWParams, rounding) == 64);
static_assert(offsetof(MNT_MultiAdamWParams, rounding_seed) == 72);
static_assert(offsetof(MNT_MultiAdamWParams, rounding_tensor) == 80);
static_assert(sizeof(MNT_ScaledGemmParams) == 32);
static_assert(offsetof(MNT_ScaledGemmParams, struct_size) == 0);
static_assert(offsetof(MNT_ScaledGemmParams, trans_a) == 8);
static_assert(offsetof(MNT_ScaledGemmParams, trans_b) == 12);
static_assert(offsetof(MNT_ScaledGemmParams, alpha) == 16);
static_assert(offsetof(MNT_ScaledGemmParams, beta) == 20);
static_assert(offsetof(MNT_ScaledGemmParams, fast_accumulation) == 24);
static_assert(MNT_ScaledGemmParams_STRUCT_SIZE == 28);
static_assert(sizeof(MNT_MultiSgdParams) == 96);
static_assert(offsetof(MNT_MultiSgdParams, struct_size) == 0);
static_assert(offsetof(MNT_MultiSgdParams, lr) == 8);
static_assert(offsetof(MNT_MultiSgdParams, momentum) == 12);
static_assert(offsetof(MNT_MultiSgdParams, weight_decay) == 16);
static_assert(offsetof(MNT_MultiSgdParams, nesterov) == 20);
static_assert(offsetof(MNT_MultiSgdParams, num_tensors) == 24);
static_assert(offsetof(MNT_MultiSgdParams, lr_scales) == 32);
static_assert(offsetof(MNT_MultiSgdParams, weight_decays) == 40);
static_assert(offsetof(MNT_MultiSgdParams, rounding) == 48);
static_assert(offsetof(MNT_MultiSgdParams, rounding_seed) == 56);
static_assert(offsetof(MNT_MultiSgdParams, rounding_tensor) == 64);
static_assert(offsetof(MNT_MultiSgdParams, rounding_step) == 72);
static_assert(sizeof(MNT_Backend_Create_Args) == 40);
static_assert(offsetof(MNT_Backend_Create_Args, struct_size) == 0);
static_assert(offsetof(MNT_Backend_Create_Args, extension_start) == 8);
static_assert(offsetof(MNT_Backend_Create_Args, options) == 16);
static_assert(offsetof(MNT_Backend_Create_Args, device_ordinal) == 24);
static_assert(offsetof(MNT_Backend_Create_Args, backend) == 32);
static_assert(sizeof(MNT_Backend_Destroy_Args) == 24);
static_assert(offsetof(MNT_Backend_Destroy_Args, struct_size) == 0);
static_assert(offsetof(MNT_Backend_Destroy_Args, extension_start) == 8);
static_assert(offsetof(MNT_Backend_Destroy_Args, backend) == 16);
static_assert(sizeof(MNT_Backend_GetInfo_Args) == 56);
static_assert(offsetof(MNT_Backend_GetInfo_Args, struct_size) == 0);
static_assert(offsetof(MNT_Backend_GetInfo_Args, extension_start) == 8);
static_assert(offsetof(MNT_Backend_GetInfo_Args, backend) == 16);
static_assert(offsetof(MNT_Backend_GetInfo_Args, device_name) == 24);
static_assert(offsetof(MNT_Backend_GetInfo_Args, total_memory_bytes) == 32);
static_assert(offsetof(MNT_Backend_GetInfo_Args, host_addressable) == 40);
static_assert(offsetof(MNT_Backend_GetInfo_Args, slow_paths) == 48);
static_assert(sizeof(MNT_Memory_Allocate_Args) == 48);
static_assert(offsetof(MNT_Memory_Allocate_Args, struct_size) == 0);
static_assert(offsetof(MNT_Memory_Allocate_Args, extension_start) == 8);
static_assert(offsetof(MNT_Memory_Allocate_Args, backend) == 16);
static_assert(offsetof(MNT_Memory_Allocate_Args, size_bytes) == 24);
static_assert(offsetof(MNT_Memory_Allocate_Args, category) == 32);
static_assert(offsetof(MNT_Memory_Allocate_Args, data) == 40);
static_assert(sizeof(MNT_Memory_Free_Args) == 32);
static_assert(offsetof(MNT_Memory_Free_Args, struct_size) == 0);
static_assert(offsetof(MNT_Memory_Free_Args, extension_start) == 8);
static_assert(offsetof(MNT_Memory_Free_Args, backend) == 16);
static_assert(offsetof(MNT_Memory_Free_Args, data) == 24);
static_assert(sizeof(MNT_Memory_Copy_Args) == 56);
static_assert(offsetof(MNT_Memory_Copy_Args, struct_size) == 0);
static_assert(offsetof(MNT_Memory_Copy_Args, extension_start) == 8);
static_assert(offsetof(MNT_Memory_Copy_Args, backend) == 16);
static_assert(offsetof(MNT_Memory_Copy_Args, dst) == 24);
static_assert(offsetof(MNT_Memory_Copy_Args, src) == 32);
static_assert(offsetof(MNT_Memory_Copy_Args, size_bytes) == 40);
static_assert(offsetof(MNT_Memory_Copy_Args, kind) == 48);
static_assert(sizeof(MNT_Memory_GetStats_Args) == 48);
static_assert(offsetof(MNT_Memory_GetStats_Args, struct_size) == 0);
static_assert(offsetof(MNT_Memory_GetStats_Args, extension_start) == 8);
static_assert(offsetof(MNT_Memory_GetStats_Args, backend) == 16);
static_assert(offsetof(MNT_Memory_GetStats_Args, category) == 24);
static_assert(offsetof(MNT_Memory_GetStats_Args, current_bytes) == 32);
static_assert(offsetof(MNT_Memory_GetStats_Args, peak_bytes) == 40);
static_assert(sizeof(MNT_Memory_ResetPeak_Args) == 24);
static_assert(offsetof(MNT_Memory_ResetPeak_Args, struct_size) == 0);
static_assert(offsetof(MNT_Memory_ResetPeak_Args, extension_start) == 8);
static_assert(offsetof(MNT_Memory_ResetPeak_Args, backend) == 16);
static_assert(sizeof(MNT_Backend_Synchronize_Args) == 24);
static_assert(offsetof(MNT_Backend_Synchronize_Args, struct_size) == 0);
static_assert(offsetof(MNT_Backend_Synchronize_Args, extension_start) == 8);
static_assert(offsetof(MNT_Backend_Synchronize_Args, backend) == 16);
static_assert(sizeof(MNT_Backend_GetOpSupport_Args) == 32);
static_assert(offsetof(MNT_Backend_GetOpSupport_Args, struct_size) == 0);
static_assert(offsetof(MNT_Backend_GetOpSupport_Args, extension_start) == 8);
static_assert(offsetof(MNT_Backend_GetOpSupport_Args, backend) == 16);
static_assert(offsetof(MNT_Backend_GetOpSupport_Args, op) == 24);
static_assert(offsetof(MNT_Backend_GetOpSupport_Args, supported) == 28);
static_assert(sizeof(MNT_Backend_Run_Args) == 72);
static_assert(offsetof(MNT_Backend_Run_Args, struct_size) == 0);
static_assert(offsetof(MNT_Backend_Run_Args, extension_start) == 8);
static_assert(offsetof(MNT_Backend_Run_Args, backend) == 16);
static_assert(offsetof(MNT_Backend_Run_Args, op) == 24);
static_assert(offsetof(MNT_Backend_Run_Args, inputs) == 32);
static_assert(offsetof(MNT_Backend_Run_Args, num_inputs) == 40);
static_assert(offsetof(MNT_Backend_Run_Args, outputs) == 48);
static_assert(offsetof(MNT_Backend_Run_Args, num_outputs) == 56);
static_assert(offsetof(MNT_Backend_Run_Args, params) == 64);
static_assert(sizeof(MNT_Event_Create_Args) == 32);
static_assert(offsetof(MNT_Event_Create_Args, struct_size) == 0);
static_assert(offsetof(MNT_Event_Create_Args, extension_start) == 8);
static_assert(offsetof(MNT_Event_Create_Args, backend) == 16);
static_assert(offsetof(MNT_Event_Create_Args, event) == 24);
static_assert(sizeof(MNT_Event_Record_Args) == 32);
static_assert(offsetof(MNT_Event_Record_Args, struct_size) == 0);
static_assert(offsetof(MNT_Event_Record_Args, extension_start) == 8);
static_assert(offsetof(MNT_Event_Record_Args, backend) == 16);
static_assert(offsetof(MNT_Event_Record_Args, event) == 24);
static_assert(sizeof(MNT_Event_ElapsedTime_Args) == 48);
static_assert(offsetof(MNT_Event_ElapsedTime_Args, struct_size) == 0);
static_assert(offsetof(MNT_Event_ElapsedTime_Args, extension_start) == 8);
static_assert(offsetof(MNT_Event_ElapsedTime_Args, backend) == 16);
static_assert(offsetof(MNT_Event_ElapsedTime_Args, start) == 24);
static_assert(offsetof(MNT_Event_ElapsedTime_Args, end) == 32);
static_assert(offsetof(MNT_Event_ElapsedTime_Args, milliseconds) == 40);
static_assert(sizeof(MNT_Event_Destroy_Args) == 32);
static_assert(offsetof(MNT_Event_Destroy_Args, struct_size) == 0);
static_assert(offsetof(MNT_Event_Destroy_Args, extension_start) == 8);
static_assert(offsetof(MNT_Event_Destroy_Args, backend) == 16);
static_assert(offsetof(MNT_Event_Destroy_Args, event) == 24);
// Since 1.7.
static_assert(sizeof(MNT_Backend_StepBegin_Args) == 24);
static_assert(offsetof(MNT_Backend_StepBegin_Args, struct_size) == 0);
static_assert(offsetof(MNT_Backend_StepBegin_Args, extension_start) == 8);
static_assert(offsetof(MNT_Backend_StepBegin_Args, backend) == 16);
static_assert(sizeof(MNT_Backend_StepEnd_Args) == 32);
static_assert(offsetof(MNT_Backend_StepEnd_Args, struct_size) == 0);
static_assert(offsetof(MNT_Backend_StepEnd_Args, extension_start) == 8);
static_assert(offsetof(MNT_Backend_StepEnd_Args, backend) == 16);
static_assert(offsetof(MNT_Backend_StepEnd_Args, replayed) == 24);
static_assert(sizeof(MNT_Backend_Api) == 152);
static_assert(offsetof(MNT_Backend_Api, struct_size) == 0);
static_assert(offsetof(MNT_Backend_Api, extension_start) == 8);
static_assert(offsetof(MNT_Backend_Api, Backend_Create) == 16);
static_assert(offsetof(MNT_Backend_Api, Backend_Destroy) == 24);
static_assert(offsetof(MNT_Backend_Api, Backend_GetInfo) == 32);
static_assert(offsetof(MNT_Backend_Api, Memory_Allocate) == 40);
static_assert(offsetof(MNT_Backend_Api, Memory_Free) == 48);
static_assert(offsetof(MNT_Backend_Api, Memory_Copy) == 56);
static_assert(offsetof(MNT_Backend_Api, Memory_GetStats) == 64);
static_assert(offsetof(MNT_Backend_Api, Memory_ResetPeak) == 72);
static_assert(offsetof(MNT_Backend_Api, Backend_Synchronize) == 80);
static_assert(offsetof(MNT_Backend_Api, Backend_GetOpSupport) == 88);
static_assert(offsetof(MNT_Backend_Api, Backend_Run) == 96);
static_assert(offsetof(MNT_Backend_Api, Event_Create) == 104);
static_assert(offsetof(MNT_Backend_Api, Event_Record) == 112);
static_assert(offsetof(MNT_Backend_Api, Event_ElapsedTime) == 120);
static_assert(offsetof(MNT_Backend_Api, Event_Destroy) == 128);
static_assert(offsetof(MNT_Backend_Api, Backend_StepBegin) == 136);
static_assert(offsetof(MNT_Backend_Api, Backend_StepEnd) == 144);

// ---- mnt_precision.h ---------------------------------------------
static_assert(sizeof(MNT_Precision_GetPolicy_Args) == 48);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, struct_size) == 0);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, extension_start) == 8);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, weight_dtype) == 16);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, master_weight_dtype) == 20);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, gradient_dtype) == 24);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, activation_dtype) == 28);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, optimizer_state_dtype) == 32);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, matmul_compute) == 36);
static_assert(offsetof(MNT_Precision_GetPolicy_Args, loss_scaling) == 40);
static_assert(sizeof(MNT_Precision_GetOpClassPolicy_Args) == 40);
static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, struct_size) == 0);
static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, extension_start) == 8);
static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, op_class) == 16);
static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, storage_dtype) == 20);
static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, compute_dtype) == 24);
static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, accumulate_dtype) == 28);
static_assert(offsetof(MNT_Precision_GetOpClassPolicy_Args, compute_mode) == 32);
static_assert(sizeof(MNT_Precision_GetMemoryPlan_Args) == 40);
static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, struct_size) == 0);
static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, extension_start) == 8);
static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, optimizer_state_slots) == 16);
static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_weights) == 20);
static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_master_weights) == 24);
static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_gradients) == 28);
static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_master_gradients) == 32);
static_assert(offsetof(MNT_Precision_GetMemoryPlan_Args, bytes_optimizer_state) == 36);
static_assert(sizeof(MNT_LossScaler_Create_Args) == 40);
static_assert(offsetof(MNT_LossScaler_Create_Args, struct_size) == 0);
static_assert(offsetof(MNT_LossScaler_Create_Args, extension_start) == 8);
static_assert(offsetof(MNT_LossScaler_Create_Args, options) == 16);
static_assert(offsetof(MNT_LossScaler_Create_Args, scaler) == 24);
static_assert(offsetof(MNT_LossScaler_Create_Args, precision_options) == 32);
static_assert(sizeof(MNT_LossScaler_Destroy_Args) == 24);
static_assert(offsetof(MNT_LossScaler_Destroy_Args, struct_size) == 0);
static_assert(offsetof(MNT_LossScaler_Destroy_Args, extension_start) == 8);
static_assert(offsetof(MNT_LossScaler_Destroy_Args, scaler) == 16);
static_assert(sizeof(MNT_LossScalerState) == 32);
static_assert(offsetof(MNT_LossScalerState, struct_size) == 0);
static_assert(offsetof(MNT_LossScalerState, scale) == 8);
static_assert(offsetof(MNT_LossScalerState, growth_tracker) == 16);
static_assert(offsetof(MNT_LossScalerState, skipped_steps) == 24);
static_assert(sizeof(MNT_LossScaler_GetState_Args) == 80);
static_assert(offsetof(MNT_LossScaler_GetState_Args, struct_size) == 0);
static_assert(offsetof(MNT_LossScaler_GetState_Args, extension_start) == 8);
static_assert(offsetof(MNT_LossScaler_GetState_Args, scaler) == 16);
static_assert(offsetof(MNT_LossScaler_GetState_Args, state) == 24);
static_assert(offsetof(MNT_LossScaler_GetState_Args, hysteresis_tracker) == 56);
static_assert(offsetof(MNT_LossScaler_GetState_Args, plugin_state) == 64);
static_assert(offsetof(MNT_LossScaler_GetState_Args, plugin_state_size) == 72);
static_assert(sizeof(MNT_LossScaler_SetState_Args) == 80);
static_assert(offsetof(MNT_LossScaler_SetState_Args, struct_size) == 0);
static_assert(offsetof(MNT_LossScaler_SetState_Args, extension_start) == 8);
static_assert(offsetof(MNT_LossScaler_SetState_Args, scaler) == 16);
static_assert(offsetof(MNT_LossScaler_SetState_Args, state) == 24);
static_assert(offsetof(MNT_LossScaler_SetState_Args, hysteresis_tracker) == 56);
static_assert(offsetof(MNT_LossScaler_SetState_Args, plugin_state) == 64);
static_assert(offsetof(MNT_LossScaler_SetState_Args, plugin_state_size) == 72);
static_assert(sizeof(MNT_LossScaler_Update_Args) == 40);
static_assert(offsetof(MNT_LossScaler_Update_Args, struct_size) == 0);
static_assert(offsetof(MNT_LossScaler_Update_Args, extension_start) == 8);
static_assert(offsetof(MNT_LossScaler_Update_Args, scaler) == 16);
static_assert(offsetof(MNT_LossScaler_Update_Args, found_inf) == 24);
static_assert(offsetof(MNT_LossScaler_Update_Args, skip_step) == 28);
static_assert(offsetof(MNT_LossScaler_Update_Args, new_scale) == 32);
static_assert(sizeof(MNT_Precision_Api) == 96);
static_assert(offsetof(MNT_Precision_Api, struct_size) == 0);
static_assert(offsetof(MNT_Precision_Api, extension_start) == 8);
static_assert(offsetof(MNT_Precision_Api, Precision_GetPolicy) == 16);
static_assert(offsetof(MNT_Precision_Api, Precision_GetOpClassPolicy) == 24);
static_assert(offsetof(MNT_Precision_Api, Precision_GetMemoryPlan) == 32);
static_assert(offsetof(MNT_Precision_Api, LossScaler_Create) == 40);
static_assert(offsetof(MNT_Precision_Api, LossScaler_Destroy) == 48);
static_assert(offsetof(MNT_Precision_Api, LossScaler_GetState) == 56);
static_assert(offsetof(MNT_Precision_Api, LossScaler_SetState) == 64);
static_assert(offsetof(MNT_Precision_Api, LossScaler_Update) == 72);
static_assert(offsetof(MNT_Precision_Api, LossScaler_GetRecipe) == 80);
static_assert(sizeof(MNT_LossScaler_GetRecipe_Args) == 72);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, struct_size) == 0);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, extension_start) == 8);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, scaler) == 16);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, recipe) == 24);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, growth_factor) == 32);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, backoff_factor) == 40);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, growth_interval) == 48);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, hysteresis) == 56);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, min_scale) == 60);
static_assert(offsetof(MNT_LossScaler_GetRecipe_Args, max_scale) == 64);

// ---- mnt_model.h -------------------------------------------------
static_assert(sizeof(MNT_DataSpec) == 80);
static_assert(offsetof(MNT_DataSpec, struct_size) == 0);
static_assert(offsetof(MNT_DataSpec, input_dtype) == 8);
static_assert(offsetof(MNT_DataSpec, input_rank) == 12);
static_assert(offsetof(MNT_DataSpec, input_dims) == 16);
static_assert(offsetof(MNT_DataSpec, num_classes) == 64);
static_assert(offsetof(MNT_DataSpec, targets_per_example) == 72);
static_assert(sizeof(MNT_ModelPrecision) == 24);
static_assert(offsetof(MNT_ModelPrecision, struct_size) == 0);
static_assert(offsetof(MNT_ModelPrecision, weight_dtype) == 8);
static_assert(offsetof(MNT_ModelPrecision, gradient_dtype) == 12);
static_assert(offsetof(MNT_ModelPrecision, activation_dtype) == 16);
static_assert(offsetof(MNT_ModelPrecision, matmul_compute) == 20);
static_assert(sizeof(MNT_Model_Create_Args) == 184);
static_assert(offsetof(MNT_Model_Create_Args, struct_size) == 0);
static_assert(offsetof(MNT_Model_Create_Args, extension_start) == 8);
static_assert(offsetof(MNT_Model_Create_Args, options) == 16);
static_assert(offsetof(MNT_Model_Create_Args, backend_plugin) == 24);
static_assert(offsetof(MNT_Model_Create_Args, backend) == 32);
static_assert(offsetof(MNT_Model_Create_Args, data_spec) == 40);
static_assert(offsetof(MNT_Model_Create_Args, precision) == 120);
static_assert(offsetof(MNT_Model_Create_Args, max_batch_size) == 144);
static_assert(offsetof(MNT_Model_Create_Args, model) == 152);
static_assert(sizeof(MNT_Model_Destroy_Args) == 24);
static_assert(offsetof(MNT_Model_Destroy_Args, struct_size) == 0);
static_assert(offsetof(MNT_Model_Destroy_Args, extension_start) == 8);
static_assert(offsetof(MNT_Model_Destroy_Args, model) == 16);
static_assert(sizeof(MNT_Model_GetParamCount_Args) == 32);
static_assert(offsetof(MNT_Model_GetParamCount_Args, struct_size) == 0);
static_assert(offsetof(MNT_Model_GetParamCount_Args, extension_start) == 8);
static_assert(offsetof(MNT_Model_GetParamCount_Args, model) == 16);
static_assert(offsetof(MNT_Model_GetParamCount_Args, num_params) == 24);
static_assert(sizeof(MNT_Model_GetParamSpec_Args) == 120);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, struct_size) == 0);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, extension_start) == 8);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, model) == 16);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, index) == 24);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, name) == 32);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, rank) == 40);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, dims) == 48);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, init) == 96);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, init_scale) == 100);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, weight_decay) == 104);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, stacked_dims) == 108);
static_assert(offsetof(MNT_Model_GetParamSpec_Args, role) == 112);
static_assert(sizeof(MNT_Model_Forward_Args) == 104);
static_assert(offsetof(MNT_Model_Forward_Args, struct_size) == 0);
static_assert(offsetof(MNT_Model_Forward_Args, extension_start) == 8);
static_assert(offsetof(MNT_Model_Forward_Args, model) == 16);
static_assert(offsetof(MNT_Model_Forward_Args, params) == 24);
static_assert(offsetof(MNT_Model_Forward_Args, num_params) == 32);
static_assert(offsetof(MNT_Model_Forward_Args, inputs) == 40);
static_assert(offsetof(MNT_Model_Forward_Args, targets) == 48);
static_assert(offsetof(MNT_Model_Forward_Args, training) == 56);
static_assert(offsetof(MNT_Model_Forward_Args, loss_out) == 64);
static_assert(offsetof(MNT_Model_Forward_Args, correct_out) == 72);
static_assert(sizeof(MNT_Model_Backward_Args) == 112);
static_assert(offsetof(MNT_Model_Backward_Args, struct_size) == 0);
static_assert(offsetof(MNT_Model_Backward_Args, extension_start) == 8);
static_assert(offsetof(MNT_Model_Backward_Args, model) == 16);
static_assert(offsetof(MNT_Model_Backward_Args, params) == 24);
static_assert(offsetof(MNT_Model_Backward_Args, num_params) == 32);
static_assert(offsetof(MNT_Model_Backward_Args, grads) == 40);
static_assert(offsetof(MNT_Model_Backward_Args, num_grads) == 48);
static_assert(offsetof(MNT_Model_Backward_Args, loss_multiplier) == 56);
static_assert(offsetof(MNT_Model_Backward_Args, accumulate) == 60);
static_assert(offsetof(MNT_Model_Backward_Args, loss_multiplier_device) == 64);  // 1.6
static_assert(sizeof(MNT_Model_Api) == 64);
static_assert(offsetof(MNT_Model_Api, struct_size) == 0);
static_assert(offsetof(MNT_Model_Api, extension_start) == 8);
static_assert(offsetof(MNT_Model_Api, Model_Create) == 16);
static_assert(offsetof(MNT_Model_Api, Model_Destroy) == 24);
static_assert(offsetof(MNT_Model_Api, Model_GetParamCount) == 32);
static_assert(offsetof(MNT_Model_Api, Model_GetParamSpec) == 40);
static_assert(offsetof(MNT_Model_Api, Model_Forward) == 48);
static_assert(offsetof(MNT_Model_Api, Model_Backward) == 56);

// ---- mnt_collectives.h (1.9) --------------------------------------
static_assert(sizeof(MNT_Collectives_GetUniqueId_Args) == 288);
static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, struct_size) == 0);
static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, extension_start) == 8);
static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, backend) == 16);
static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, unique_id) == 24);
static_assert(offsetof(MNT_Collectives_GetUniqueId_Args, unique_id_size) == 280);
static_assert(sizeof(MNT_Communicator_Create_Args) == 56);
static_assert(offsetof(MNT_Communicator_Create_Args, struct_size) == 0);
static_assert(offsetof(MNT_Communicator_Create_Args, extension_start) == 8);
static_assert(offsetof(MNT_Communicator_Create_Args, backend) == 16);
static_assert(offsetof(MNT_Communicator_Create_Args, rank) == 24);
static_assert(offsetof(MNT_Communicator_Create_Args, world_size) == 28);
static_assert(offsetof(MNT_Communicator_Create_Args, unique_id) == 32);
static_assert(offsetof(MNT_Communicator_Create_Args, unique_id_size) == 40);
static_assert(offsetof(MNT_Communicator_Create_Args, communicator) == 48);
static_assert(sizeof(MNT_Communicator_Destroy_Args) == 32);
static_assert(offsetof(MNT_Communicator_Destroy_Args, struct_size) == 0);
static_assert(offsetof(MNT_Communicator_Destroy_Args, extension_start) == 8);
static_assert(offsetof(MNT_Communicator_Destroy_Args, backend) == 16);
static_assert(offsetof(MNT_Communicator_Destroy_Args, communicator) == 24);
static_assert(sizeof(MNT_Collectives_Run_Args) == 64);
static_assert(offsetof(MNT_Collectives_Run_Args, struct_size) == 0);
static_assert(offsetof(MNT_Collectives_Run_Args, extension_start) == 8);
static_assert(offsetof(MNT_Collectives_Run_Args, backend) == 16);
static_assert(offsetof(MNT_Collectives_Run_Args, communicator) == 24);
static_assert(offsetof(MNT_Collectives_Run_Args, op) == 32);
static_assert(offsetof(MNT_Collectives_Run_Args, reduce) == 36);
static_assert(offsetof(MNT_Collectives_Run_Args, root) == 40);
static_assert(offsetof(MNT_Collectives_Run_Args, input) == 48);
static_assert(offsetof(MNT_Collectives_Run_Args, output) == 56);
// 72 bytes in version 1 (MNT_Collectives_Extension_V1_STRUCT_SIZE, below);
// version 2 appended Collectives_Start and Collectives_Wait.
static_assert(sizeof(MNT_Collectives_Extension) == 88);
static_assert(offsetof(MNT_Collectives_Extension, header) == 0);
static_assert(offsetof(MNT_Collectives_Extension, Collectives_GetUniqueId) == 40);
static_assert(offsetof(MNT_Collectives_Extension, Communicator_Create) == 48);
static_assert(offsetof(MNT_Collectives_Extension, Communicator_Destroy) == 56);
static_assert(offsetof(MNT_Collectives_Extension, Collectives_Run) == 64);
static_assert(offsetof(MNT_Collectives_Extension, Collectives_Start) == 72);
static_assert(offsetof(MNT_Collectives_Extension, Collectives_Wait) == 80);
// Collectives extension version 2 (in ABI 1.11; the extension has its own
// version, docs/abi.md "Collectives extension"): started collectives.
static_assert(sizeof(MNT_Collectives_Start_Args) == 72);
static_assert(offsetof(MNT_Collectives_Start_Args, struct_size) == 0);
static_assert(offsetof(MNT_Collectives_Start_Args, extension_start) == 8);
static_assert(offsetof(MNT_Collectives_Start_Args, backend) == 16);
static_assert(offsetof(MNT_Collectives_Start_Args, communicator) == 24);
static_assert(offsetof(MNT_Collectives_Start_Args, op) == 32);
static_assert(offsetof(MNT_Collectives_Start_Args, reduce) == 36);
static_assert(offsetof(MNT_Collectives_Start_Args, root) == 40);
static_assert(offsetof(MNT_Collectives_Start_Args, input) == 48);
static_assert(offsetof(MNT_Collectives_Start_Args, output) == 56);
static_assert(offsetof(MNT_Collectives_Start_Args, work) == 64);
static_assert(sizeof(MNT_Collectives_Wait_Args) == 40);
static_assert(offsetof(MNT_Collectives_Wait_Args, struct_size) == 0);
static_assert(offsetof(MNT_Collectives_Wait_Args, extension_start) == 8);
static_assert(offsetof(MNT_Collectives_Wait_Args, backend) == 16);
static_assert(offsetof(MNT_Collectives_Wait_Args, communicator) == 24);
static_assert(offsetof(MNT_Collectives_Wait_Args, work) == 32);

// ---- enum values (appended only, never renumbered) ----------------
static_assert(MNT_EXTENSION_TYPE_NONE == 0, "MNT_EXTENSION_TYPE_NONE");
static_assert(MNT_EXTENSION_TYPE_CAPABILITIES == 1, "MNT_EXTENSION_TYPE_CAPABILITIES");
static_assert(MNT_EXTENSION_TYPE_COLLECTIVES == 2, "MNT_EXTENSION_TYPE_COLLECTIVES");
static_assert(MNT_CAPABILITY_INVALID == 0, "MNT_CAPABILITY_INVALID");
static_assert(MNT_CAPABILITY_ADAMW_STEP_COUNTER == 1, "MNT_CAPABILITY_ADAMW_STEP_COUNTER");
static_assert(MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE == 2, "MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE");
static_assert(MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER == 3, "MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER");
static_assert(MNT_CAPABILITY_OPTIMIZER_DEVICE_LR == 4, "MNT_CAPABILITY_OPTIMIZER_DEVICE_LR");
static_assert(MNT_CAPABILITY_STOCHASTIC_ROUNDING == 5, "MNT_CAPABILITY_STOCHASTIC_ROUNDING");
static_assert(MNT_CAPABILITY_PRECISION_OPTIONS == 6, "MNT_CAPABILITY_PRECISION_OPTIONS");
static_assert(MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER == 7, "MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER");
static_assert(MNT_COLLECTIVE_INVALID == 0, "MNT_COLLECTIVE_INVALID");
static_assert(MNT_COLLECTIVE_ALL_REDUCE == 1, "MNT_COLLECTIVE_ALL_REDUCE");
static_assert(MNT_COLLECTIVE_REDUCE_SCATTER == 2, "MNT_COLLECTIVE_REDUCE_SCATTER");
static_assert(MNT_COLLECTIVE_ALL_GATHER == 3, "MNT_COLLECTIVE_ALL_GATHER");
static_assert(MNT_COLLECTIVE_BROADCAST == 4, "MNT_COLLECTIVE_BROADCAST");
static_assert(MNT_REDUCE_OP_INVALID == 0, "MNT_REDUCE_OP_INVALID");
static_assert(MNT_REDUCE_OP_SUM == 1, "MNT_REDUCE_OP_SUM");
static_assert(MNT_REDUCE_OP_AVG == 2, "MNT_REDUCE_OP_AVG");
static_assert(MNT_REDUCE_OP_MAX == 3, "MNT_REDUCE_OP_MAX");
static_assert(MNT_CAPABILITIES_EXTENSION_VERSION == 1, "MNT_CAPABILITIES_EXTENSION_VERSION");
static_assert(MNT_COLLECTIVES_EXTENSION_VERSION == 2, "MNT_COLLECTIVES_EXTENSION_VERSION");
static_assert(MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES == 256, "MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES");
static_assert(MNT_ERROR_OK == 0, "MNT_ERROR_OK");
static_assert(MNT_ERROR_CANCELLED == 1, "MNT_ERROR_CANCELLED");
static_assert(MNT_ERROR_UNKNOWN == 2, "MNT_ERROR_UNKNOWN");
static_assert(MNT_ERROR_INVALID_ARGUMENT == 3, "MNT_ERROR_INVALID_ARGUMENT");
static_assert(MNT_ERROR_DEADLINE_EXCEEDED == 4, "MNT_ERROR_DEADLINE_EXCEEDED");
static_assert(MNT_ERROR_NOT_FOUND == 5, "MNT_ERROR_NOT_FOUND");
static_assert(MNT_ERROR_ALREADY_EXISTS == 6, "MNT_ERROR_ALREADY_EXISTS");
static_assert(MNT_ERROR_PERMISSION_DENIED == 7, "MNT_ERROR_PERMISSION_DENIED");
static_assert(MNT_ERROR_RESOURCE_EXHAUSTED == 8, "MNT_ERROR_RESOURCE_EXHAUSTED");
static_assert(MNT_ERROR_FAILED_PRECONDITION == 9, "MNT_ERROR_FAILED_PRECONDITION");
static_assert(MNT_ERROR_ABORTED == 10, "MNT_ERROR_ABORTED");
static_assert(MNT_ERROR_OUT_OF_RANGE == 11, "MNT_ERROR_OUT_OF_RANGE");
static_assert(MNT_ERROR_UNIMPLEMENTED == 12, "MNT_ERROR_UNIMPLEMENTED");
static_assert(MNT_ERROR_INTERNAL == 13, "MNT_ERROR_INTERNAL");
static_assert(MNT_ERROR_UNAVAILABLE == 14, "MNT_ERROR_UNAVAILABLE");
static_assert(MNT_ERROR_DATA_LOSS == 15, "MNT_ERROR_DATA_LOSS");
static_assert(MNT_ERROR_UNAUTHENTICATED == 16, "MNT_ERROR_UNAUTHENTICATED");
static_assert(MNT_DTYPE_INVALID == 0, "MNT_DTYPE_INVALID");
static_assert(MNT_DTYPE_F32 == 1, "MNT_DTYPE_F32");
static_assert(MNT_DTYPE_F16 == 2, "MNT_DTYPE_F16");
static_assert(MNT_DTYPE_BF16 == 3, "MNT_DTYPE_BF16");
static_assert(MNT_DTYPE_I32 == 4, "MNT_DTYPE_I32");
static_assert(MNT_DTYPE_U8 == 5, "MNT_DTYPE_U8");
static_assert(MNT_DTYPE_F64 == 6, "MNT_DTYPE_F64");
static_assert(MNT_DTYPE_F8_E4M3 == 7, "MNT_DTYPE_F8_E4M3");
static_assert(MNT_DTYPE_F8_E5M2 == 8, "MNT_DTYPE_F8_E5M2");
static_assert(MNT_COMPUTE_INVALID == 0, "MNT_COMPUTE_INVALID");
static_assert(MNT_COMPUTE_F32 == 1, "MNT_COMPUTE_F32");
static_assert(MNT_COMPUTE_TF32 == 2, "MNT_COMPUTE_TF32");
static_assert(MNT_COMPUTE_BF16 == 3, "MNT_COMPUTE_BF16");
static_assert(MNT_COMPUTE_F16 == 4, "MNT_COMPUTE_F16");
static_assert(MNT_PLUGIN_KIND_INVALID == 0, "MNT_PLUGIN_KIND_INVALID");
static_assert(MNT_PLUGIN_KIND_BACKEND == 1, "MNT_PLUGIN_KIND_BACKEND");
static_assert(MNT_PLUGIN_KIND_PRECISION == 2, "MNT_PLUGIN_KIND_PRECISION");
static_assert(MNT_PLUGIN_KIND_MODEL == 3, "MNT_PLUGIN_KIND_MODEL");
static_assert(MNT_MEMORY_WEIGHTS == 0, "MNT_MEMORY_WEIGHTS");
static_assert(MNT_MEMORY_MASTER_WEIGHTS == 1, "MNT_MEMORY_MASTER_WEIGHTS");
static_assert(MNT_MEMORY_GRADIENTS == 2, "MNT_MEMORY_GRADIENTS");
static_assert(MNT_MEMORY_OPTIMIZER_STATE == 3, "MNT_MEMORY_OPTIMIZER_STATE");
static_assert(MNT_MEMORY_ACTIVATIONS == 4, "MNT_MEMORY_ACTIVATIONS");
static_assert(MNT_MEMORY_WORKSPACE == 5, "MNT_MEMORY_WORKSPACE");
static_assert(MNT_MEMORY_DATA == 6, "MNT_MEMORY_DATA");
static_assert(MNT_MEMORY_CATEGORY_COUNT == 7, "MNT_MEMORY_CATEGORY_COUNT");
static_assert(MNT_MEMORY_ALL == 100, "MNT_MEMORY_ALL");
static_assert(MNT_COPY_HOST_TO_DEVICE == 1, "MNT_COPY_HOST_TO_DEVICE");
static_assert(MNT_COPY_DEVICE_TO_HOST == 2, "MNT_COPY_DEVICE_TO_HOST");
static_assert(MNT_COPY_DEVICE_TO_DEVICE == 3, "MNT_COPY_DEVICE_TO_DEVICE");
static_assert(MNT_OP_INVALID == 0, "MNT_OP_INVALID");
static_assert(MNT_OP_FILL == 1, "MNT_OP_FILL");
static_assert(MNT_OP_CAST == 2, "MNT_OP_CAST");
static_assert(MNT_OP_GEMM == 3, "MNT_OP_GEMM");
static_assert(MNT_OP_BIAS_GRAD == 4, "MNT_OP_BIAS_GRAD");
static_assert(MNT_OP_ACTIVATION_FORWARD == 5, "MNT_OP_ACTIVATION_FORWARD");
static_assert(MNT_OP_ACTIVATION_BACKWARD == 6, "MNT_OP_ACTIVATION_BACKWARD");
static_assert(MNT_OP_ADD == 7, "MNT_OP_ADD");
static_assert(MNT_OP_SOFTMAX == 8, "MNT_OP_SOFTMAX");
static_assert(MNT_OP_CROSS_ENTROPY == 9, "MNT_OP_CROSS_ENTROPY");
static_assert(MNT_OP_LAYERNORM_FORWARD == 10, "MNT_OP_LAYERNORM_FORWARD");
static_assert(MNT_OP_LAYERNORM_BACKWARD == 11, "MNT_OP_LAYERNORM_BACKWARD");
static_assert(MNT_OP_EMBEDDING_FORWARD == 12, "MNT_OP_EMBEDDING_FORWARD");
static_assert(MNT_OP_EMBEDDING_BACKWARD == 13, "MNT_OP_EMBEDDING_BACKWARD");
static_assert(MNT_OP_REDUCE == 14, "MNT_OP_REDUCE");
static_assert(MNT_OP_COUNT_CORRECT == 15, "MNT_OP_COUNT_CORRECT");
static_assert(MNT_OP_GLOBAL_NORM_SQUARED == 16, "MNT_OP_GLOBAL_NORM_SQUARED");
static_assert(MNT_OP_NONFINITE_CHECK_UNSCALE == 17, "MNT_OP_NONFINITE_CHECK_UNSCALE");
static_assert(MNT_OP_SGD_STEP == 18, "MNT_OP_SGD_STEP");
static_assert(MNT_OP_ADAMW_STEP == 19, "MNT_OP_ADAMW_STEP");
static_assert(MNT_OP_ATTENTION_FORWARD == 20, "MNT_OP_ATTENTION_FORWARD");
static_assert(MNT_OP_ATTENTION_BACKWARD == 21, "MNT_OP_ATTENTION_BACKWARD");
static_assert(MNT_OP_CONV2D_FORWARD == 22, "MNT_OP_CONV2D_FORWARD");
static_assert(MNT_OP_CONV2D_BACKWARD_DATA == 23, "MNT_OP_CONV2D_BACKWARD_DATA");
static_assert(MNT_OP_CONV2D_BACKWARD_FILTER == 24, "MNT_OP_CONV2D_BACKWARD_FILTER");
static_assert(MNT_OP_POOL2D_FORWARD == 25, "MNT_OP_POOL2D_FORWARD");
static_assert(MNT_OP_POOL2D_BACKWARD == 26, "MNT_OP_POOL2D_BACKWARD");
static_assert(MNT_OP_BATCHNORM_FORWARD == 27, "MNT_OP_BATCHNORM_FORWARD");
static_assert(MNT_OP_BATCHNORM_BACKWARD == 28, "MNT_OP_BATCHNORM_BACKWARD");
static_assert(MNT_OP_AMP_UPDATE_SCALE == 29, "MNT_OP_AMP_UPDATE_SCALE");
static_assert(MNT_OP_CLIP_COEFFICIENT == 30, "MNT_OP_CLIP_COEFFICIENT");
static_assert(MNT_OP_GEMM_BIAS_GELU == 31, "MNT_OP_GEMM_BIAS_GELU");
static_assert(MNT_OP_GEMM_DGELU == 32, "MNT_OP_GEMM_DGELU");
static_assert(MNT_OP_GEMM_BIAS_GRAD == 33, "MNT_OP_GEMM_BIAS_GRAD");
static_assert(MNT_OP_FUSED_CLASSIFIER == 34, "MNT_OP_FUSED_CLASSIFIER");
static_assert(MNT_OP_RESIDUAL_LAYERNORM_FORWARD == 35, "MNT_OP_RESIDUAL_LAYERNORM_FORWARD");
static_assert(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD == 36, "MNT_OP_RESIDUAL_LAYERNORM_BACKWARD");
static_assert(MNT_OP_MULTI_ADAMW_STEP == 37, "MNT_OP_MULTI_ADAMW_STEP");
static_assert(MNT_OP_MULTI_SGD_STEP == 38, "MNT_OP_MULTI_SGD_STEP");
static_assert(MNT_OP_SCALED_CAST == 39, "MNT_OP_SCALED_CAST");
static_assert(MNT_OP_SCALED_GEMM == 40, "MNT_OP_SCALED_GEMM");
static_assert(MNT_ACTIVATION_INVALID == 0, "MNT_ACTIVATION_INVALID");
static_assert(MNT_ACTIVATION_IDENTITY == 1, "MNT_ACTIVATION_IDENTITY");
static_assert(MNT_ACTIVATION_RELU == 2, "MNT_ACTIVATION_RELU");
static_assert(MNT_ACTIVATION_GELU_TANH == 3, "MNT_ACTIVATION_GELU_TANH");
static_assert(MNT_REDUCE_INVALID == 0, "MNT_REDUCE_INVALID");
static_assert(MNT_REDUCE_SUM == 1, "MNT_REDUCE_SUM");
static_assert(MNT_REDUCE_MEAN == 2, "MNT_REDUCE_MEAN");
static_assert(MNT_REDUCE_MAX == 3, "MNT_REDUCE_MAX");
static_assert(MNT_POOL_INVALID == 0, "MNT_POOL_INVALID");
static_assert(MNT_POOL_MAX == 1, "MNT_POOL_MAX");
static_assert(MNT_POOL_AVG == 2, "MNT_POOL_AVG");
static_assert(MNT_OP_CLASS_INVALID == 0, "MNT_OP_CLASS_INVALID");
static_assert(MNT_OP_CLASS_MATMUL == 1, "MNT_OP_CLASS_MATMUL");
static_assert(MNT_OP_CLASS_ELEMENTWISE == 2, "MNT_OP_CLASS_ELEMENTWISE");
static_assert(MNT_OP_CLASS_NORMALIZATION == 3, "MNT_OP_CLASS_NORMALIZATION");
static_assert(MNT_OP_CLASS_SOFTMAX == 4, "MNT_OP_CLASS_SOFTMAX");
static_assert(MNT_OP_CLASS_LOSS == 5, "MNT_OP_CLASS_LOSS");
static_assert(MNT_OP_CLASS_REDUCTION == 6, "MNT_OP_CLASS_REDUCTION");
static_assert(MNT_OP_CLASS_OPTIMIZER == 7, "MNT_OP_CLASS_OPTIMIZER");
static_assert(MNT_OP_CLASS_EMBEDDING == 8, "MNT_OP_CLASS_EMBEDDING");
static_assert(MNT_LOSS_SCALING_NONE == 0, "MNT_LOSS_SCALING_NONE");
static_assert(MNT_LOSS_SCALING_DYNAMIC == 1, "MNT_LOSS_SCALING_DYNAMIC");
static_assert(MNT_LOSS_SCALING_STATIC == 2, "MNT_LOSS_SCALING_STATIC");
static_assert(MNT_LOSS_SCALE_RECIPE_NONE == 0, "MNT_LOSS_SCALE_RECIPE_NONE");
static_assert(MNT_LOSS_SCALE_RECIPE_DYNAMIC == 1, "MNT_LOSS_SCALE_RECIPE_DYNAMIC");
static_assert(MNT_ROUNDING_NEAREST_EVEN == 0, "MNT_ROUNDING_NEAREST_EVEN");
static_assert(MNT_ROUNDING_STOCHASTIC == 1, "MNT_ROUNDING_STOCHASTIC");
static_assert(MNT_PARAM_INIT_INVALID == 0, "MNT_PARAM_INIT_INVALID");
static_assert(MNT_PARAM_INIT_ZEROS == 1, "MNT_PARAM_INIT_ZEROS");
static_assert(MNT_PARAM_INIT_ONES == 2, "MNT_PARAM_INIT_ONES");
static_assert(MNT_PARAM_INIT_NORMAL == 3, "MNT_PARAM_INIT_NORMAL");
static_assert(MNT_PARAM_INIT_UNIFORM == 4, "MNT_PARAM_INIT_UNIFORM");
static_assert(MNT_PARAM_ROLE_OTHER == 0, "MNT_PARAM_ROLE_OTHER");
static_assert(MNT_PARAM_ROLE_EMBEDDING == 1, "MNT_PARAM_ROLE_EMBEDDING");

namespace {

// What a producer stores in struct_size: the end of the last field it knows.
struct ExpectedSize {
  const char* macro;
  size_t actual;
  size_t expected;
};

#define MNT_EXPECT_SIZE(macro, bytes) ExpectedSize{#macro, macro, bytes}

// 1.10: FP8 training (issue 25)
static_assert(sizeof(MNT_Fp8ScaleUpdateParams) == 24);
static_assert(offsetof(MNT_Fp8ScaleUpdateParams, struct_size) == 0);
static_assert(offsetof(MNT_Fp8ScaleUpdateParams, fp8_max) == 8);
static_assert(offsetof(MNT_Fp8ScaleUpdateParams, margin) == 12);
static_assert(offsetof(MNT_Fp8ScaleUpdateParams, amax_algo) == 16);
static_assert(offsetof(MNT_Fp8ScaleUpdateParams, history_length) == 20);
static_assert(sizeof(MNT_Precision_GetScalingRecipe_Args) == 56);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, struct_size) == 0);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, extension_start) == 8);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, precision_options) == 16);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, recipe) == 24);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, forward_dtype) == 28);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, backward_dtype) == 32);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, history_length) == 36);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, amax_algo) == 40);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, margin) == 44);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, fast_accumulation_forward) == 48);
static_assert(offsetof(MNT_Precision_GetScalingRecipe_Args, calibrate) == 52);
static_assert(sizeof(MNT_Precision_Api) == 96);
static_assert(offsetof(MNT_Precision_Api, Precision_GetScalingRecipe) == 88);
static_assert(sizeof(MNT_Model_Create_Args) == 184);
static_assert(offsetof(MNT_Model_Create_Args, fp8_forward_dtype) == 160);
static_assert(offsetof(MNT_Model_Create_Args, fp8_backward_dtype) == 164);
static_assert(offsetof(MNT_Model_Create_Args, fp8_fast_accumulation_forward) == 168);
static_assert(offsetof(MNT_Model_Create_Args, fp8_current_scaling) == 172);
static_assert(offsetof(MNT_Model_Create_Args, fp8_margin) == 176);
static_assert(sizeof(MNT_Model_Forward_Args) == 104);
static_assert(offsetof(MNT_Model_Forward_Args, fp8_scales) == 80);
static_assert(offsetof(MNT_Model_Forward_Args, fp8_scale_invs) == 88);
static_assert(offsetof(MNT_Model_Forward_Args, fp8_amax) == 96);
static_assert(sizeof(MNT_Model_Backward_Args) == 112);
static_assert(offsetof(MNT_Model_Backward_Args, fp8_scales) == 72);
static_assert(offsetof(MNT_Model_Backward_Args, fp8_scale_invs) == 80);
static_assert(offsetof(MNT_Model_Backward_Args, fp8_amax) == 88);
static_assert(MNT_AMAX_ALGO_INVALID == 0, "MNT_AMAX_ALGO_INVALID");
static_assert(MNT_AMAX_ALGO_MAX == 1, "MNT_AMAX_ALGO_MAX");
static_assert(MNT_AMAX_ALGO_MOST_RECENT == 2, "MNT_AMAX_ALGO_MOST_RECENT");
static_assert(MNT_SCALING_RECIPE_NONE == 0, "MNT_SCALING_RECIPE_NONE");
static_assert(MNT_SCALING_RECIPE_DELAYED == 1, "MNT_SCALING_RECIPE_DELAYED");
static_assert(MNT_SCALING_RECIPE_CURRENT == 2, "MNT_SCALING_RECIPE_CURRENT");
static_assert(MNT_OP_FP8_SCALE_UPDATE == 41, "MNT_OP_FP8_SCALE_UPDATE");
static_assert(MNT_OP_TENSOR_STATS == 42, "MNT_OP_TENSOR_STATS");
static_assert(MNT_CAPABILITY_MODEL_FP8_GEMMS == 8, "MNT_CAPABILITY_MODEL_FP8_GEMMS");

// 1.11: optimizer steps on pieces of a parameter (ZeRO-1 element ranges)
static_assert(sizeof(MNT_SgdParams) == 64);
static_assert(offsetof(MNT_SgdParams, rounding_element) == 56);
static_assert(sizeof(MNT_AdamWParams) == 72);
static_assert(offsetof(MNT_AdamWParams, rounding_element) == 64);
static_assert(sizeof(MNT_MultiAdamWParams) == 104);
static_assert(offsetof(MNT_MultiAdamWParams, rounding_tensors) == 88);
static_assert(offsetof(MNT_MultiAdamWParams, rounding_elements) == 96);
static_assert(sizeof(MNT_MultiSgdParams) == 96);
static_assert(offsetof(MNT_MultiSgdParams, rounding_tensors) == 80);
static_assert(offsetof(MNT_MultiSgdParams, rounding_elements) == 88);
static_assert(MNT_CAPABILITY_OPTIMIZER_PIECES == 9, "MNT_CAPABILITY_OPTIMIZER_PIECES");

// 1.11: a model's Backward hands over finished gradients
static_assert(sizeof(MNT_Model_Backward_Args) == 112);
static_assert(offsetof(MNT_Model_Backward_Args, gradient_ready) == 96);
static_assert(offsetof(MNT_Model_Backward_Args, gradient_ready_user_data) == 104);
static_assert(MNT_CAPABILITY_MODEL_GRADIENT_READY == 10, "MNT_CAPABILITY_MODEL_GRADIENT_READY");
static_assert(MNT_CAPABILITY_MODEL_FROZEN_PARAMS == 11, "MNT_CAPABILITY_MODEL_FROZEN_PARAMS");
static_assert(MNT_CAPABILITY_MODEL_LORA == 12, "MNT_CAPABILITY_MODEL_LORA");

// 1.12: memory-light optimizer ops
static_assert(MNT_OP_ADAMW8BIT_STEP == 43, "MNT_OP_ADAMW8BIT_STEP");
static_assert(MNT_OP_ADAFACTOR_STEP == 44, "MNT_OP_ADAFACTOR_STEP");
static_assert(MNT_QUANTIZATION_BLOCK_SIZE == 256, "MNT_QUANTIZATION_BLOCK_SIZE");
static_assert(sizeof(MNT_AdafactorParams) == 80);
static_assert(offsetof(MNT_AdafactorParams, struct_size) == 0);
static_assert(offsetof(MNT_AdafactorParams, lr) == 8);
static_assert(offsetof(MNT_AdafactorParams, beta1) == 12);
static_assert(offsetof(MNT_AdafactorParams, decay_rate) == 16);
static_assert(offsetof(MNT_AdafactorParams, epsilon1) == 20);
static_assert(offsetof(MNT_AdafactorParams, epsilon2) == 24);
static_assert(offsetof(MNT_AdafactorParams, clip_threshold) == 28);
static_assert(offsetof(MNT_AdafactorParams, weight_decay) == 32);
static_assert(offsetof(MNT_AdafactorParams, relative_step) == 36);
static_assert(offsetof(MNT_AdafactorParams, scale_parameter) == 40);
static_assert(offsetof(MNT_AdafactorParams, warmup_init) == 44);
static_assert(offsetof(MNT_AdafactorParams, step) == 48);
static_assert(offsetof(MNT_AdafactorParams, rounding) == 56);
static_assert(offsetof(MNT_AdafactorParams, rounding_seed) == 64);
static_assert(offsetof(MNT_AdafactorParams, rounding_tensor) == 72);

// 1.14: the memory-light optimizers over a table of tensors
static_assert(MNT_OP_MULTI_ADAMW8BIT_STEP == 45, "MNT_OP_MULTI_ADAMW8BIT_STEP");
static_assert(MNT_OP_MULTI_ADAFACTOR_STEP == 46, "MNT_OP_MULTI_ADAFACTOR_STEP");
static_assert(sizeof(MNT_MultiAdafactorParams) == 112);
static_assert(offsetof(MNT_MultiAdafactorParams, struct_size) == 0);
static_assert(offsetof(MNT_MultiAdafactorParams, lr) == 8);
static_assert(offsetof(MNT_MultiAdafactorParams, beta1) == 12);
static_assert(offsetof(MNT_MultiAdafactorParams, decay_rate) == 16);
static_assert(offsetof(MNT_MultiAdafactorParams, epsilon1) == 20);
static_assert(offsetof(MNT_MultiAdafactorParams, epsilon2) == 24);
static_assert(offsetof(MNT_MultiAdafactorParams, clip_threshold) == 28);
static_assert(offsetof(MNT_MultiAdafactorParams, weight_decay) == 32);
static_assert(offsetof(MNT_MultiAdafactorParams, relative_step) == 36);
static_assert(offsetof(MNT_MultiAdafactorParams, scale_parameter) == 40);
static_assert(offsetof(MNT_MultiAdafactorParams, warmup_init) == 44);
static_assert(offsetof(MNT_MultiAdafactorParams, step) == 48);
static_assert(offsetof(MNT_MultiAdafactorParams, rounding) == 56);
static_assert(offsetof(MNT_MultiAdafactorParams, rounding_seed) == 64);
static_assert(offsetof(MNT_MultiAdafactorParams, rounding_tensor) == 72);
static_assert(offsetof(MNT_MultiAdafactorParams, num_tensors) == 80);
static_assert(offsetof(MNT_MultiAdafactorParams, lr_scales) == 88);
static_assert(offsetof(MNT_MultiAdafactorParams, weight_decays) == 96);
static_assert(offsetof(MNT_MultiAdafactorParams, rounding_tensors) == 104);

// 1.12: a model declares the data it takes
static_assert(sizeof(MNT_ModelData_Extension) == 56);
static_assert(offsetof(MNT_ModelData_Extension, header) == 0);
static_assert(offsetof(MNT_ModelData_Extension, kinds) == 40);
static_assert(offsetof(MNT_ModelData_Extension, num_kinds) == 48);
static_assert(MNT_EXTENSION_TYPE_MODEL_DATA == 3, "MNT_EXTENSION_TYPE_MODEL_DATA");
static_assert(MNT_DATA_KIND_INVALID == 0, "MNT_DATA_KIND_INVALID");
static_assert(MNT_DATA_KIND_FEATURES == 1, "MNT_DATA_KIND_FEATURES");
static_assert(MNT_DATA_KIND_IMAGES == 2, "MNT_DATA_KIND_IMAGES");
static_assert(MNT_DATA_KIND_TOKENS == 3, "MNT_DATA_KIND_TOKENS");

TEST(AbiLayoutTest, StructSizeMacrosAreFrozen) {
  const ExpectedSize kSizes[] = {
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
  for (const ExpectedSize& s : kSizes) {
    EXPECT_EQ(s.actual, s.expected) << s.macro;
  }
}

TEST(AbiLayoutTest, BackendApi10EndsAtBackendRun) {
  // A 1.0 backend's API struct ends right after Backend_Run; the four 1.1
  // Event_* pointers come after it.
  EXPECT_EQ(MNT_Backend_Api_STRUCT_SIZE_1_0,
            offsetof(MNT_Backend_Api, Backend_Run) + sizeof(void*));
  EXPECT_EQ(MNT_Backend_Api_STRUCT_SIZE_1_0,
            offsetof(MNT_Backend_Api, Event_Create));
  EXPECT_EQ(MNT_Backend_Api_STRUCT_SIZE_1_6,
            MNT_Backend_Api_STRUCT_SIZE_1_0 + 4 * sizeof(void*));
  // 1.7 appended the two step markers.
  EXPECT_EQ(MNT_Backend_Api_STRUCT_SIZE,
            MNT_Backend_Api_STRUCT_SIZE_1_6 + 2 * sizeof(void*));
}

TEST(AbiLayoutTest, HasFieldHonoursStructSize) {
  MNT_Backend_Api api{};
  api.struct_size = MNT_Backend_Api_STRUCT_SIZE_1_0;
  EXPECT_TRUE(MNT_HAS_FIELD(&api, MNT_Backend_Api, Backend_Run));
  EXPECT_FALSE(MNT_HAS_FIELD(&api, MNT_Backend_Api, Event_Create));
  api.struct_size = MNT_Backend_Api_STRUCT_SIZE;
  EXPECT_TRUE(MNT_HAS_FIELD(&api, MNT_Backend_Api, Event_Destroy));
  api.struct_size = MNT_Backend_Api_STRUCT_SIZE_1_6;
  EXPECT_TRUE(MNT_HAS_FIELD(&api, MNT_Backend_Api, Event_Destroy));
  EXPECT_FALSE(MNT_HAS_FIELD(&api, MNT_Backend_Api, Backend_StepBegin));
}

TEST(AbiLayoutTest, VersionIs116) {
  EXPECT_EQ(MNT_ABI_MAJOR, 1);
  EXPECT_EQ(MNT_ABI_MINOR, 16);
}

TEST(AbiLayoutTest, PieceFieldsFollowTheir110Sizes) {
  // A 1.10 caller's optimizer params end where the 1.11 piece fields begin.
  EXPECT_EQ(MNT_SgdParams_STRUCT_SIZE_1_10, offsetof(MNT_SgdParams, rounding_element));
  EXPECT_EQ(MNT_AdamWParams_STRUCT_SIZE_1_10, offsetof(MNT_AdamWParams, rounding_element));
  EXPECT_EQ(MNT_MultiAdamWParams_STRUCT_SIZE_1_10,
            offsetof(MNT_MultiAdamWParams, rounding_tensors));
  EXPECT_EQ(MNT_MultiSgdParams_STRUCT_SIZE_1_10, offsetof(MNT_MultiSgdParams, rounding_tensors));
}

TEST(AbiLayoutTest, GradientReadyFieldsFollowTheir110Size) {
  // A 1.10 host's Backward args end where the 1.11 callback begins.
  EXPECT_EQ(MNT_Model_Backward_Args_STRUCT_SIZE_1_10,
            offsetof(MNT_Model_Backward_Args, gradient_ready));
}

TEST(AbiLayoutTest, Fp8FieldsFollowTheir19Sizes) {
  // A 1.9 host's structs end where the 1.10 FP8 fields begin.
  EXPECT_EQ(MNT_Model_Create_Args_STRUCT_SIZE_1_9, offsetof(MNT_Model_Create_Args, fp8_forward_dtype));
  EXPECT_EQ(MNT_Model_Forward_Args_STRUCT_SIZE_1_9, offsetof(MNT_Model_Forward_Args, fp8_scales));
  EXPECT_EQ(MNT_Model_Backward_Args_STRUCT_SIZE_1_9, offsetof(MNT_Model_Backward_Args, fp8_scales));
  EXPECT_EQ(MNT_Precision_Api_STRUCT_SIZE_1_9,
            offsetof(MNT_Precision_Api, Precision_GetScalingRecipe));
}

TEST(AbiLayoutTest, CollectivesVersion1EndsWhereVersion2Begins) {
  // A version-1 backend's table is exactly the part before the calls
  // version 2 appended, so a reader that checks struct_size against
  // V1_STRUCT_SIZE never reads Collectives_Start from it.
  EXPECT_EQ(MNT_Collectives_Extension_V1_STRUCT_SIZE,
            offsetof(MNT_Collectives_Extension, Collectives_Start));
  EXPECT_EQ(MNT_Collectives_Extension_STRUCT_SIZE, sizeof(MNT_Collectives_Extension));
  // Start takes Run's operands at Run's offsets, then its out-parameter.
  EXPECT_EQ(offsetof(MNT_Collectives_Start_Args, output),
            offsetof(MNT_Collectives_Run_Args, output));
  EXPECT_EQ(MNT_Collectives_Start_Args_STRUCT_SIZE,
            MNT_Collectives_Run_Args_STRUCT_SIZE + sizeof(void*));
}

TEST(AbiLayoutTest, ExtensionsStartWithTheHeader) {
  // Every 1.9 extension is read through MNT_Extension_Header first.
  EXPECT_EQ(offsetof(MNT_Capabilities_Extension, header), 0u);
  EXPECT_EQ(offsetof(MNT_Collectives_Extension, header), 0u);
  EXPECT_EQ(offsetof(MNT_ModelData_Extension, header), 0u);
  EXPECT_EQ(offsetof(MNT_Extension_Header, base), 0u);
  EXPECT_EQ(MNT_Extension_Header_STRUCT_SIZE,
            offsetof(MNT_Extension_Header, version) + sizeof(int32_t));
}

}  // namespace
