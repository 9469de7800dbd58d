/* Mantissa plugin ABI: precision plugins.
 *
 * A precision plugin is policy, not compute: it says which dtype every kind
 * of tensor is stored in, how each op class computes (autocast-style), what
 * it costs in bytes per parameter, and it owns the loss-scaling state
 * machine. The backend executes; the trainer glues the two. */
#ifndef MANTISSA_PLUGINS_ABI_MNT_PRECISION_H_
#define MANTISSA_PLUGINS_ABI_MNT_PRECISION_H_

#include "plugins/abi/mnt_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MNT_LossScaler MNT_LossScaler; /* opaque */

/* Op classes, after PyTorch autocast's lists: matmuls run in the 16-bit
 * format, numerically sensitive ops (softmax, norms, losses, reductions)
 * compute in fp32. Appended only. */
typedef enum MNT_OpClass {
  MNT_OP_CLASS_INVALID = 0,
  MNT_OP_CLASS_MATMUL = 1,        /* GEMM, later conv */
  MNT_OP_CLASS_ELEMENTWISE = 2,   /* activations, bias, residual adds */
  MNT_OP_CLASS_NORMALIZATION = 3, /* layernorm, batchnorm */
  MNT_OP_CLASS_SOFTMAX = 4,
  MNT_OP_CLASS_LOSS = 5,          /* cross-entropy */
  MNT_OP_CLASS_REDUCTION = 6,     /* sums, norms */
  MNT_OP_CLASS_OPTIMIZER = 7,     /* optimizer steps on master weights */
  MNT_OP_CLASS_EMBEDDING = 8,
} MNT_OpClass;

typedef enum MNT_LossScaling {
  MNT_LOSS_SCALING_NONE = 0,
  MNT_LOSS_SCALING_DYNAMIC = 1,
  MNT_LOSS_SCALING_STATIC = 2,
} MNT_LossScaling;

/* The tensor-level policy. master_weight_dtype INVALID means the working
 * weights are the master weights (no second copy). */
typedef struct MNT_Precision_GetPolicy_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_DType weight_dtype;          /* out: working weights the model reads */
  MNT_DType master_weight_dtype;   /* out: F32 or INVALID */
  MNT_DType gradient_dtype;        /* out: param grads written by backward */
  MNT_DType activation_dtype;      /* out: saved activations and their grads */
  MNT_DType optimizer_state_dtype; /* out */
  MNT_ComputeMode matmul_compute;  /* out: GEMM operand format */
  MNT_LossScaling loss_scaling;    /* out: what LossScaler_Create gives by default */
} MNT_Precision_GetPolicy_Args;
#define MNT_Precision_GetPolicy_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Precision_GetPolicy_Args, loss_scaling)
typedef MNT_Error* MNT_Precision_GetPolicy(MNT_Precision_GetPolicy_Args* args);

/* Per op class: storage dtype of its outputs, dtype it computes in, dtype it
 * accumulates in, and for MATMUL the operand rounding. */
typedef struct MNT_Precision_GetOpClassPolicy_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_OpClass op_class;
  MNT_DType storage_dtype;    /* out */
  MNT_DType compute_dtype;    /* out */
  MNT_DType accumulate_dtype; /* out */
  MNT_ComputeMode compute_mode; /* out: meaningful for MATMUL */
} MNT_Precision_GetOpClassPolicy_Args;
#define MNT_Precision_GetOpClassPolicy_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Precision_GetOpClassPolicy_Args, compute_mode)
typedef MNT_Error* MNT_Precision_GetOpClassPolicy(
    MNT_Precision_GetOpClassPolicy_Args* args);

/* Bytes kept per parameter, for the memory breakdown. optimizer_state_slots
 * is how many fp32-sized state tensors the optimizer keeps per parameter
 * (SGD without momentum 0, with momentum 1, AdamW 2). */
typedef struct MNT_Precision_GetMemoryPlan_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  int32_t optimizer_state_slots;
  int32_t bytes_weights;          /* out: working weights */
  int32_t bytes_master_weights;   /* out: 0 when the working weights are master */
  int32_t bytes_gradients;        /* out: grads as backward writes them */
  int32_t bytes_master_gradients; /* out: fp32 accumulation copy, 0 if none */
  int32_t bytes_optimizer_state;  /* out */
} MNT_Precision_GetMemoryPlan_Args;
#define MNT_Precision_GetMemoryPlan_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Precision_GetMemoryPlan_Args, bytes_optimizer_state)
typedef MNT_Error* MNT_Precision_GetMemoryPlan(
    MNT_Precision_GetMemoryPlan_Args* args);

/* Creates the loss-scaling state machine. Options: "mode=dynamic|static|none,
 * init_scale=65536,growth_factor=2,backoff_factor=0.5,growth_interval=2000"
 * (any subset; unknown keys and invalid values are errors). Plugins without
 * loss scaling accept mode=none only and give a scaler that always returns
 * scale 1 and never skips.
 * Since 1.5, `precision_options` carries the plugin's own options
 * (--precision_options): keys it defines (the built-in fp16 takes
 * hysteresis, min_scale, max_scale); a plugin refuses keys it does not know
 * and malformed values with an error naming them. The host calls
 * LossScaler_Create once per run. */
typedef struct MNT_LossScaler_Create_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  const char* options; /* copied; NULL or "" for the plugin's defaults */
  MNT_LossScaler* scaler; /* out; caller owns, frees with LossScaler_Destroy */
  /* Since 1.5: copied; NULL or "" for the plugin's defaults. A host gives a
   * non-empty string only to plugins of minor >= 5. */
  const char* precision_options;
} MNT_LossScaler_Create_Args;
#define MNT_LossScaler_Create_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_LossScaler_Create_Args, precision_options)
typedef MNT_Error* MNT_LossScaler_Create(MNT_LossScaler_Create_Args* args);

typedef struct MNT_LossScaler_Destroy_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_LossScaler* scaler; /* NULL accepted */
} MNT_LossScaler_Destroy_Args;
#define MNT_LossScaler_Destroy_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_LossScaler_Destroy_Args, scaler)
typedef MNT_Error* MNT_LossScaler_Destroy(MNT_LossScaler_Destroy_Args* args);

/* The full state, for reading and for checkpoint restore. */
typedef struct MNT_LossScalerState {
  size_t struct_size;
  float scale;            /* fp32, as GradScaler keeps it */
  int64_t growth_tracker; /* clean steps since the last change */
  int64_t skipped_steps;  /* total steps skipped so far */
} MNT_LossScalerState;
#define MNT_LossScalerState_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_LossScalerState, skipped_steps)

/* Since 1.5 a scaler may keep state of its own beside MNT_LossScalerState
 * (a counter, a history): an opaque byte string the plugin defines and
 * versions itself (e.g. a leading version byte). The host stores it in
 * checkpoints byte for byte and hands it back on restore. */
typedef struct MNT_LossScaler_GetState_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_LossScaler* scaler;
  MNT_LossScalerState state; /* out; caller sets state.struct_size */
  /* Since 1.5 (outs; a 1.4 plugin leaves them as the caller set them, zero).
   * hysteresis_tracker: overflows in a row that did not back off, for a
   * scaler whose recipe has hysteresis (MNT_LossScaler_GetRecipe); 0
   * otherwise. plugin_state/plugin_state_size: the plugin's own state,
   * owned by the scaler and valid until the next call on it; NULL/0 when it
   * keeps none. */
  int64_t hysteresis_tracker;
  const void* plugin_state;
  size_t plugin_state_size;
} MNT_LossScaler_GetState_Args;
#define MNT_LossScaler_GetState_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_LossScaler_GetState_Args, plugin_state_size)
typedef MNT_Error* MNT_LossScaler_GetState(MNT_LossScaler_GetState_Args* args);

/* Restores a state from GetState (a non-finite or non-positive scale is an
 * error). */
typedef struct MNT_LossScaler_SetState_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_LossScaler* scaler;
  MNT_LossScalerState state;
  /* Since 1.5: as in GetState. plugin_state is borrowed (copied by the
   * plugin); NULL leaves the plugin's own state as it is (the host syncing
   * the recipe's state from the device), otherwise a plugin refuses bytes
   * it cannot read. */
  int64_t hysteresis_tracker;
  const void* plugin_state;
  size_t plugin_state_size;
} MNT_LossScaler_SetState_Args;
#define MNT_LossScaler_SetState_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_LossScaler_SetState_Args, plugin_state_size)
typedef MNT_Error* MNT_LossScaler_SetState(MNT_LossScaler_SetState_Args* args);

/* Called once per optimizer step after the non-finite check, GradScaler's
 * update(): found_inf -> skip the step and back off; otherwise count a clean
 * step and grow after growth_interval of them (never to inf). */
typedef struct MNT_LossScaler_Update_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_LossScaler* scaler;
  int32_t found_inf;
  int32_t skip_step; /* out: 1 when the optimizer step must not be applied */
  float new_scale;   /* out: the scale for the next step */
} MNT_LossScaler_Update_Args;
#define MNT_LossScaler_Update_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_LossScaler_Update_Args, new_scale)
typedef MNT_Error* MNT_LossScaler_Update(MNT_LossScaler_Update_Args* args);

/* Since 1.5: the scaler's update as a declaration. A scaler whose
 * LossScaler_Update follows the standard dynamic recipe bit for bit (the
 * formula in plugins/sdk/loss_scale_math.h and MNT_OP_AMP_UPDATE_SCALE:
 * GradScaler's update plus DeepSpeed's hysteresis and min_loss_scale and
 * Apex's max_loss_scale; every overflow step skipped) says so with its
 * parameters; the host may then run that recipe on the device instead of
 * calling LossScaler_Update, and hands the result back with
 * LossScaler_SetState before checkpoints and at the end of training. A
 * scaler that answers NONE (or a plugin without this function) is always
 * driven through LossScaler_Update. The answer must not change over the
 * scaler's life. */
typedef enum MNT_LossScaleRecipe {
  MNT_LOSS_SCALE_RECIPE_NONE = 0,    /* only LossScaler_Update knows */
  MNT_LOSS_SCALE_RECIPE_DYNAMIC = 1, /* the parameters below */
} MNT_LossScaleRecipe;

typedef struct MNT_LossScaler_GetRecipe_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_LossScaler* scaler;
  MNT_LossScaleRecipe recipe; /* out */
  /* outs, for DYNAMIC: */
  double growth_factor;    /* > 1 */
  double backoff_factor;   /* in (0, 1) */
  int64_t growth_interval; /* >= 1 */
  int32_t hysteresis;      /* >= 1; 1 backs off on every overflow */
  float min_scale;         /* >= 0 (0: no floor) */
  float max_scale;         /* 0: no ceiling, else >= min_scale */
} MNT_LossScaler_GetRecipe_Args;
#define MNT_LossScaler_GetRecipe_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_LossScaler_GetRecipe_Args, max_scale)
typedef MNT_Error* MNT_LossScaler_GetRecipe(MNT_LossScaler_GetRecipe_Args* args);

typedef struct MNT_Precision_Api {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Precision_GetPolicy* Precision_GetPolicy;
  MNT_Precision_GetOpClassPolicy* Precision_GetOpClassPolicy;
  MNT_Precision_GetMemoryPlan* Precision_GetMemoryPlan;
  MNT_LossScaler_Create* LossScaler_Create;
  MNT_LossScaler_Destroy* LossScaler_Destroy;
  MNT_LossScaler_GetState* LossScaler_GetState;
  MNT_LossScaler_SetState* LossScaler_SetState;
  MNT_LossScaler_Update* LossScaler_Update;
  /* Since 1.5; NULL (or absent in a 1.4 plugin) is "no recipe": the host
   * drives the scaler through LossScaler_Update. */
  MNT_LossScaler_GetRecipe* LossScaler_GetRecipe;
} MNT_Precision_Api;
#define MNT_Precision_Api_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Precision_Api, LossScaler_GetRecipe)
#define MNT_Precision_Api_STRUCT_SIZE_1_0 \
  MNT_STRUCT_SIZE(MNT_Precision_Api, LossScaler_Update)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MANTISSA_PLUGINS_ABI_MNT_PRECISION_H_ */
