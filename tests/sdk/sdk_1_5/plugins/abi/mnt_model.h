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
} MNT_Model_Create_Args;
#define MNT_Model_Create_Args_STRUCT_SIZE \
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
} MNT_Model_GetParamSpec_Args;
#define MNT_Model_GetParamSpec_Args_STRUCT_SIZE \
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
} MNT_Model_Forward_Args;
#define MNT_Model_Forward_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Model_Forward_Args, correct_out)
typedef MNT_Error* MNT_Model_Forward(MNT_Model_Forward_Args* args);

/* Back-propagates the last training Forward. The gradient of the mean loss
 * times `loss_multiplier` (loss scale / accumulation steps) is written to
 * `grads` (dtype gradient_dtype, spec order), or added to them when
 * accumulate=1. */
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
} MNT_Model_Backward_Args;
#define MNT_Model_Backward_Args_STRUCT_SIZE \
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
