/* Mantissa plugin ABI: model plugins.
 *
 * A model describes its parameters and runs forward and backward by calling
 * the backend plugin it is handed; it never touches device memory directly,
 * so one model runs on every backend. The trainer owns parameter, gradient
 * and optimizer memory; the model owns its activations (allocated through
 * the backend with MNT_MEMORY_ACTIVATIONS). */
#ifndef MANTISSA_PLUGINS_ABI_MNT_MODEL_H_
#define MANTISSA_PLUGINS_ABI_MNT_MODEL_H_

#include "plugins/abi/mnt_backend.h"
#include "plugins/abi/mnt_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MNT_Model MNT_Model; /* opaque */

typedef enum MNT_ParamInit {
  MNT_PARAM_INIT_INVALID = 0,
  MNT_PARAM_INIT_ZEROS = 1,
  MNT_PARAM_INIT_ONES = 2,
  MNT_PARAM_INIT_NORMAL = 3,  /* N(0, init_scale^2) */
  MNT_PARAM_INIT_UNIFORM = 4, /* U(-init_scale, init_scale) */
} MNT_ParamInit;

/* Since 1.16: what a parameter is to the model, for the host's rules that
 * depend on it (MNT_Model_GetParamSpec_Args.role). Values are appended
 * within a major; a host refuses one outside its minor's list. */
typedef enum MNT_ParamRole {
  MNT_PARAM_ROLE_OTHER = 0,     /* none of the roles below, or not said (a 1.0-1.15 model) */
  MNT_PARAM_ROLE_EMBEDDING = 1, /* a table whose rows the model gathers by id
                                 * (token and position embeddings) */
} MNT_ParamRole;

/* What the data feeds the model, per example. */
typedef struct MNT_DataSpec {
  size_t struct_size;
  MNT_DType input_dtype; /* F32 features or I32 token ids */
  int32_t input_rank;    /* per example, without the batch dimension */
  int64_t input_dims[MNT_MAX_RANK];
  int64_t num_classes;   /* classes (or vocabulary) of the I32 targets */
  int32_t targets_per_example; /* 1 for classification, seq_len for LMs */
} MNT_DataSpec;
#define MNT_DataSpec_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_DataSpec, targets_per_example)

/* Since 1.12: the kinds of data a host's datasets give and a model takes,
 * each a family of MNT_DataSpecs. Values are appended only; 0 is invalid. */
typedef enum MNT_DataKind {
  MNT_DATA_KIND_INVALID = 0,
  /* F32 feature vectors [F] (input_rank 1), one class each
   * (targets_per_example 1, targets in [0, num_classes)). */
  MNT_DATA_KIND_FEATURES = 1,
  /* F32 images [H, W] or [C, H, W] (input_rank 2 or 3), one class each. */
  MNT_DATA_KIND_IMAGES = 2,
  /* I32 token ids [T] (input_rank 1, ids in [0, num_classes)) with one
   * target per token (targets_per_example T): the next token. */
  MNT_DATA_KIND_TOKENS = 3,
} MNT_DataKind;

/* Since 1.12: on a model plugin's MNT_Plugin_Api chain with
 * header.base.type MNT_EXTENSION_TYPE_MODEL_DATA and header.name
 * MNT_MODEL_DATA_EXTENSION_NAME: the kinds of data the model trains on,
 * `num_kinds` MNT_DataKind values (as int32_t, so a host skips one it does
 * not know) in `kinds`, static storage of the plugin, at least one. A host
 * refuses data of any other kind before Model_Create, naming these; a model
 * without the extension (or one built against ABI < 1.12) declares nothing
 * and is asked at Model_Create, which may refuse. Model_Create still checks
 * the data spec it is handed (dims, classes): a kind is a family, not a
 * promise to take every member. At most one per chain. */
#define MNT_MODEL_DATA_EXTENSION_NAME "model_data"
#define MNT_MODEL_DATA_EXTENSION_VERSION 1
typedef struct MNT_ModelData_Extension {
  MNT_Extension_Header header;
  const int32_t* kinds;
  size_t num_kinds;
} MNT_ModelData_Extension;
#define MNT_ModelData_Extension_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_ModelData_Extension, num_kinds)

/* Storage and compute formats the model must use, resolved by the trainer
 * from the precision plugin. */
typedef struct MNT_ModelPrecision {
  size_t struct_size;
  MNT_DType weight_dtype;
  MNT_DType gradient_dtype;
  MNT_DType activation_dtype;
  MNT_ComputeMode matmul_compute;
} MNT_ModelPrecision;
#define MNT_ModelPrecision_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_ModelPrecision, matmul_compute)

typedef struct MNT_Model_Create_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  /* "key=value,key=value", model specific; NULL or "" for defaults. Copied.
   * Unknown keys and invalid values are MNT_ERROR_INVALID_ARGUMENT. */
  const char* options;
  /* The backend plugin and instance the model runs on. Borrowed: both
   * outlive the model. The model frees backend errors with
   * backend_plugin->Error_Destroy. */
  const MNT_Plugin_Api* backend_plugin;
  MNT_Backend* backend;
  MNT_DataSpec data_spec;
  MNT_ModelPrecision precision;
  int64_t max_batch_size; /* Forward never sees a larger batch */
  MNT_Model* model; /* out; caller owns, frees with Model_Destroy */
  /* Since 1.10, given only to models offering
   * MNT_CAPABILITY_MODEL_FP8_GEMMS: the formats of FP8 GEMMs, or INVALID
   * (zero) for none. fp8_forward_dtype: inputs and weights of forward
   * GEMMs; fp8_backward_dtype: output gradients in the backward GEMMs
   * (dX = dY W, dW = dYᵀ X). Each GEMM's operands are quantized with the
   * scales of their slot; everything else keeps activation_dtype. */
  MNT_DType fp8_forward_dtype;
  MNT_DType fp8_backward_dtype;
  int32_t fp8_fast_accumulation_forward; /* MNT_ScaledGemmParams' flag */
  /* Non-zero: MNT_SCALING_RECIPE_CURRENT, the model derives each scale
   * from the tensor's own amax in the pass (fp8_max = the format's, margin
   * fp8_margin) and writes it into fp8_scales/fp8_scale_invs. */
  int32_t fp8_current_scaling;
  int32_t fp8_margin;
} MNT_Model_Create_Args;
#define MNT_Model_Create_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Model_Create_Args, fp8_margin)
#define MNT_Model_Create_Args_STRUCT_SIZE_1_9 \
  MNT_STRUCT_SIZE(MNT_Model_Create_Args, model)
typedef MNT_Error* MNT_Model_Create(MNT_Model_Create_Args* args);

/* Frees the model's activations. Accepts NULL model. */
typedef struct MNT_Model_Destroy_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Model* model;
} MNT_Model_Destroy_Args;
#define MNT_Model_Destroy_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Model_Destroy_Args, model)
typedef MNT_Error* MNT_Model_Destroy(MNT_Model_Destroy_Args* args);

typedef struct MNT_Model_GetParamCount_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Model* model;
  int64_t num_params; /* out: number of parameter tensors */
} MNT_Model_GetParamCount_Args;
#define MNT_Model_GetParamCount_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Model_GetParamCount_Args, num_params)
typedef MNT_Error* MNT_Model_GetParamCount(MNT_Model_GetParamCount_Args* args);

typedef struct MNT_Model_GetParamSpec_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Model* model;
  int64_t index;
  const char* name; /* out; owned by the model, lives as long */
  int32_t rank;     /* out */
  int64_t dims[MNT_MAX_RANK]; /* out */
  MNT_ParamInit init;         /* out */
  float init_scale;           /* out: std for NORMAL, bound for UNIFORM */
  int32_t weight_decay;       /* out: 1 if the optimizer decays it */
  /* Since 1.15, out (a host sets it to 0 first: a 1.0-1.14 model never
   * writes it): how many leading dims stack independent copies of one
   * parameter, as GPT-2 stacks its layers' weights [L, ...] (1). An
   * optimizer that treats a tensor by its size or shape (8-bit AdamW's
   * small-tensor rule, Adafactor's factoring and RMS) treats each copy as
   * the tensor it would be in a model with one tensor per layer. 0: one
   * tensor; at most rank - 1. */
  int32_t stacked_dims;
  /* Since 1.16, out (a host sets it to OTHER first: a 1.0-1.15 model never
   * writes it): the parameter's MNT_ParamRole. 8-bit AdamW keeps an
   * EMBEDDING's moments in 32 bits, as Hugging Face's Trainer does for
   * every nn.Embedding with bitsandbytes' optimizers. */
  MNT_ParamRole role;
} MNT_Model_GetParamSpec_Args;
#define MNT_Model_GetParamSpec_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Model_GetParamSpec_Args, role)
/* What a 1.15 model writes. */
#define MNT_Model_GetParamSpec_Args_STRUCT_SIZE_1_15 \
  MNT_STRUCT_SIZE(MNT_Model_GetParamSpec_Args, stacked_dims)
/* What a 1.0-1.14 model writes. */
#define MNT_Model_GetParamSpec_Args_STRUCT_SIZE_1_14 \
  MNT_STRUCT_SIZE(MNT_Model_GetParamSpec_Args, weight_decay)
typedef MNT_Error* MNT_Model_GetParamSpec(MNT_Model_GetParamSpec_Args* args);

/* Runs the model on a batch. `params` are the working weights in spec order
 * (dtype weight_dtype). inputs: [B, input_dims...]; targets: I32
 * [B, targets_per_example]. Writes the mean loss over valid targets into
 * loss_out (F32 [1], device) and, when correct_out is given, the number of
 * correctly predicted targets (F32 [1]). With training=1 it keeps what
 * Backward needs until the next Forward. All tensors are borrowed. */
typedef struct MNT_Model_Forward_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Model* model;
  const MNT_Tensor* params;
  size_t num_params;
  const MNT_Tensor* inputs;
  const MNT_Tensor* targets;
  int32_t training;
  const MNT_Tensor* loss_out;
  const MNT_Tensor* correct_out; /* NULL allowed */
  /* Since 1.10, for a model created with FP8 GEMMs (NULL otherwise): F32
   * [3, S] device tensors, S scaling slots laid out from the parameter
   * specs (docs/abi.md "FP8 scaling slots"), row 0 GEMM inputs, row 1
   * weights, row 2 output gradients. The model quantizes with fp8_scales,
   * hands fp8_scale_invs to the GEMMs and overwrites fp8_amax's entry of
   * every tensor it quantizes (Forward rows 0 and 1, Backward row 2) with
   * that tensor's max |x| before scaling; entries it does not use are
   * left alone. With fp8_current_scaling the model also writes the
   * scales it derived. Borrowed for the call. */
  const MNT_Tensor* fp8_scales;
  const MNT_Tensor* fp8_scale_invs;
  const MNT_Tensor* fp8_amax;
} MNT_Model_Forward_Args;
#define MNT_Model_Forward_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Model_Forward_Args, fp8_amax)
#define MNT_Model_Forward_Args_STRUCT_SIZE_1_9 \
  MNT_STRUCT_SIZE(MNT_Model_Forward_Args, correct_out)
typedef MNT_Error* MNT_Model_Forward(MNT_Model_Forward_Args* args);

/* Back-propagates the last training Forward. The gradient of the mean loss
 * times `loss_multiplier` (loss scale / accumulation steps) is written to
 * `grads` (dtype gradient_dtype, spec order), or added to them when
 * accumulate=1.
 *
 * Since 1.6: `loss_multiplier_device`, when not NULL, is an F32 [1] tensor
 * in the backend's memory holding the multiplier; it replaces
 * `loss_multiplier` (then ignored), so a host with the loss scale on the
 * device never reads it back. The model must not read it on the host
 * either, except to serve a backend older than 1.6 (whose CROSS_ENTROPY
 * takes no device multiplier). The gradients are the same bits as with
 * `loss_multiplier` set to that value. A host passes it only to models
 * offering MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER (before 1.9: whose
 * MNT_Plugin_Api minor is >= 6; an older model would not see the field and
 * use `loss_multiplier`). Borrowed for the call. */
/* Since 1.11 (capability MNT_CAPABILITY_MODEL_GRADIENT_READY): called by the
 * model on the host during Model_Backward as soon as it has issued, on the
 * backend stream, the last op that writes elements [first, first + count)
 * of parameter `param`'s gradient (flat element index within that
 * parameter; a rank-3 parameter that stacks layers is typically reported a
 * layer slice at a time). Within one Model_Backward call every element of
 * every gradient is reported exactly once, slices in any order. The callee
 * may issue backend work on the same stream that reads those elements;
 * it must not write any gradient. */
typedef void MNT_GradientReadyFn(void* user_data, int64_t param, int64_t first, int64_t count);

typedef struct MNT_Model_Backward_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Model* model;
  const MNT_Tensor* params;
  size_t num_params;
  const MNT_Tensor* grads;
  size_t num_grads;
  float loss_multiplier;
  int32_t accumulate;
  const MNT_Tensor* loss_multiplier_device; /* since 1.6; NULL allowed */
  /* Since 1.10: as in MNT_Model_Forward_Args (the same tensors). */
  const MNT_Tensor* fp8_scales;
  const MNT_Tensor* fp8_scale_invs;
  const MNT_Tensor* fp8_amax;
  /* Since 1.11, to a model offering MNT_CAPABILITY_MODEL_GRADIENT_READY
   * (a host does not send these fields to other models): see
   * MNT_GradientReadyFn. */
  MNT_GradientReadyFn* gradient_ready; /* since 1.11; NULL: not called */
  void* gradient_ready_user_data;
} MNT_Model_Backward_Args;
#define MNT_Model_Backward_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Model_Backward_Args, gradient_ready_user_data)
#define MNT_Model_Backward_Args_STRUCT_SIZE_1_10 \
  MNT_STRUCT_SIZE(MNT_Model_Backward_Args, fp8_amax)
#define MNT_Model_Backward_Args_STRUCT_SIZE_1_9 \
  MNT_STRUCT_SIZE(MNT_Model_Backward_Args, loss_multiplier_device)
/* What a 1.0-1.5 host sends and a 1.0-1.5 model reads. */
#define MNT_Model_Backward_Args_STRUCT_SIZE_1_5 \
  MNT_STRUCT_SIZE(MNT_Model_Backward_Args, accumulate)
typedef MNT_Error* MNT_Model_Backward(MNT_Model_Backward_Args* args);

typedef struct MNT_Model_Api {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Model_Create* Model_Create;
  MNT_Model_Destroy* Model_Destroy;
  MNT_Model_GetParamCount* Model_GetParamCount;
  MNT_Model_GetParamSpec* Model_GetParamSpec;
  MNT_Model_Forward* Model_Forward;
  MNT_Model_Backward* Model_Backward;
} MNT_Model_Api;
#define MNT_Model_Api_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Model_Api, Model_Backward)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MANTISSA_PLUGINS_ABI_MNT_MODEL_H_ */
