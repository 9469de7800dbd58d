/* Mantissa plugin ABI: common definitions shared by every plugin kind.
 *
 * C only. Every struct that crosses the boundary starts with `struct_size`
 * (the size up to the last field the *producer* knows, see MNT_STRUCT_SIZE)
 * and, for argument and API structs, an extension chain. Fields are only ever
 * appended within a major version; see docs/abi.md for the full promise. */
#ifndef MANTISSA_PLUGINS_ABI_MNT_COMMON_H_
#define MANTISSA_PLUGINS_ABI_MNT_COMMON_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Major: bumped when anything is removed, reordered or retyped.
 * Minor: bumped when something is appended (a field, a function, an enum
 * value). A host loads a plugin with the same major and a minor <= its own.
 *
 * MNT_ABI_MINOR is the minor a plugin built with these headers claims in
 * MNT_Plugin_Api.abi_version: the headers' own (MNT_ABI_HEADER_MINOR), or,
 * for a source written against an older minor, that minor, given by the
 * build: -DMNT_ABI_SOURCE_MINOR=N. A source written for 1.N and rebuilt so
 * claims 1.N, its API tables end where 1.N's did (its positional
 * initializers stay complete), and every host answers it exactly as it
 * answered the 1.N binary: the same optional features, whatever these
 * headers add (docs/abi.md section 1, "Sources"). Hosts never define it. */
#define MNT_ABI_MAJOR 1
#define MNT_ABI_HEADER_MINOR 16
#if !defined(MNT_ABI_SOURCE_MINOR)
#define MNT_ABI_MINOR 16
#elif MNT_ABI_SOURCE_MINOR < 0 || MNT_ABI_SOURCE_MINOR > MNT_ABI_HEADER_MINOR
#  error "MNT_ABI_SOURCE_MINOR: the minor your source was written against, 0 to MNT_ABI_HEADER_MINOR"
#else
#  define MNT_ABI_MINOR MNT_ABI_SOURCE_MINOR
#endif

/* Size of a struct up to and including `last_field`: what a producer compiled
 * against this header stores in `struct_size`. Tail padding is not ABI. */
#define MNT_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* True when a struct produced by the other side is long enough to hold
 * `field`: read a field only when this holds. */
#define MNT_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= MNT_STRUCT_SIZE(type, field))

/* ------------------------------------------------------------------------ */
/* Extension chain: optional feature sets hang off `extension_start`.        */
/* ------------------------------------------------------------------------ */
/* Values are appended only; a reader skips a type it does not know. */
typedef enum MNT_ExtensionType {
  MNT_EXTENSION_TYPE_NONE = 0,
  /* --- Since 1.9. --- */
  /* MNT_Capabilities_Extension: which optional operands and behaviours a
   * plugin of any kind offers (instead of inferring them from its minor). */
  MNT_EXTENSION_TYPE_CAPABILITIES = 1,
  /* MNT_Collectives_Extension (mnt_collectives.h): communicators and
   * collective operations on a backend's stream. Backends only. */
  MNT_EXTENSION_TYPE_COLLECTIVES = 2,
  /* --- Since 1.12. --- */
  /* MNT_ModelData_Extension (mnt_model.h): the kinds of data a model
   * trains on, so a host refuses other data before Model_Create, naming
   * them. Models only. */
  MNT_EXTENSION_TYPE_MODEL_DATA = 3,
} MNT_ExtensionType;

typedef struct MNT_Extension_Base {
  size_t struct_size;
  MNT_ExtensionType type;
  struct MNT_Extension_Base* next;
} MNT_Extension_Base;

/* Since 1.9: every extension a plugin advertises on MNT_Plugin_Api's chain
 * starts with this header (PJRT's pattern: the chain is found at run time,
 * each extension is versioned on its own). `version` starts at 1 and grows
 * when the extension gains fields or calls (appended, as in the ABI itself);
 * `base.struct_size` is the size the plugin knows, so a reader checks it
 * before reading an appended field (MNT_HAS_FIELD). The struct, its name
 * and everything it points to are static storage of the plugin. */
typedef struct MNT_Extension_Header {
  MNT_Extension_Base base;
  const char* name; /* e.g. "collectives"; for messages and plugin_info */
  int32_t version;
} MNT_Extension_Header;
#define MNT_Extension_Header_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Extension_Header, version)

/* Since 1.9: optional operands and behaviours a plugin offers, advertised in
 * its MNT_Capabilities_Extension. A host asks for a capability before it
 * relies on one, never compares minors (docs/abi.md, "Capabilities, not
 * minors"). Optional *ops* are not capabilities: Backend_GetOpSupport
 * reports them. A plugin built against ABI < 1.9 has no extension; a host
 * answers for it from the minor that introduced each capability (given
 * below; plugins/sdk/capabilities.h holds that one table). Values are
 * appended only, never renumbered; 0 is invalid. */
typedef enum MNT_Capability {
  MNT_CAPABILITY_INVALID = 0,
  /* --- Backends. --- */
  /* MNT_OP_ADAMW_STEP's optional in[3] device step counter I32 [1] (and
   * MULTI_ADAMW_STEP's per-tensor counters). Before 1.9: minor >= 4. */
  MNT_CAPABILITY_ADAMW_STEP_COUNTER = 1,
  /* MNT_OP_AMP_UPDATE_SCALE's whole dynamic recipe: the params'
   * hysteresis, min_scale and max_scale and the optional out[3]
   * hysteresis tracker. Before 1.9: minor >= 5. */
  MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE = 2,
  /* MNT_OP_CROSS_ENTROPY's optional in[2] grad multiplier F32 [1] on the
   * device. Before 1.9: minor >= 6. */
  MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER = 3,
  /* The optimizer ops' optional learning rate F32 [1] on the device
   * (SGD_STEP in[3], ADAMW_STEP in[4], MULTI_ADAMW_STEP in[2+2n],
   * MULTI_SGD_STEP in[2+n]). Before 1.9: minor >= 7. */
  MNT_CAPABILITY_OPTIMIZER_DEVICE_LR = 4,
  /* MNT_ROUNDING_STOCHASTIC in the optimizer ops' params (the 1.7 fields
   * of MNT_SgdParams, MNT_AdamWParams and their multi-tensor forms).
   * Before 1.9: minor >= 7. */
  MNT_CAPABILITY_STOCHASTIC_ROUNDING = 5,
  /* --- Precision plugins. --- */
  /* MNT_LossScaler_Create_Args.precision_options, the plugin's own
   * options. Before 1.9: minor >= 5. */
  MNT_CAPABILITY_PRECISION_OPTIONS = 6,
  /* --- Models. --- */
  /* MNT_Model_Backward_Args.loss_multiplier_device, the loss multiplier as
   * a device tensor. Before 1.9: minor >= 6. */
  MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER = 7,
  /* --- Since 1.10. --- */
  /* The model runs its GEMMs in FP8 when the host asks (the fp8_* fields
   * of MNT_Model_Create_Args, the fp8_scales/fp8_scale_invs/fp8_amax
   * tensors of MNT_Model_Forward_Args and MNT_Model_Backward_Args), with
   * the scaling slots laid out as docs/abi.md "FP8 scaling slots" says. */
  MNT_CAPABILITY_MODEL_FP8_GEMMS = 8,
  /* --- Since 1.11. --- */
  /* Backends: the optimizer ops (SGD_STEP, ADAMW_STEP, MULTI_ADAMW_STEP,
   * MULTI_SGD_STEP) step a *piece* of a parameter with the parameter's own
   * stochastic-rounding bits: MNT_SgdParams/MNT_AdamWParams.rounding_element
   * and the rounding_tensors/rounding_elements arrays of their multi-tensor
   * forms. A backend without it ignores those trailing fields (element
   * index 0, tensor index rounding_tensor + i), so a caller stepping pieces
   * (e.g. ZeRO-1 element-range shards) asks for it first. */
  MNT_CAPABILITY_OPTIMIZER_PIECES = 9,
  /* Models: Model_Backward calls MNT_Model_Backward_Args.gradient_ready
   * (when not NULL) as each gradient region's last write is issued, every
   * element of every gradient exactly once per call (MNT_GradientReadyFn),
   * so a host can start exchanging finished gradients during Backward. */
  MNT_CAPABILITY_MODEL_GRADIENT_READY = 10,
  /* --- Since 1.13. --- */
  /* Models: Model_Backward takes a gradient tensor whose `data` is NULL
   * for a parameter that wants no gradient (a frozen one): the model
   * writes nothing for it, skips the ops that only compute it (the weight
   * gradient GEMMs), still computes the input gradients that flow through
   * it, and reports no slice of it to gradient_ready. A host gives such
   * tensors only to a model offering this. */
  MNT_CAPABILITY_MODEL_FROZEN_PARAMS = 11,
  /* Models: Model_Create_Args.options takes the keys lora_r (rank),
   * lora_alpha, lora_dropout (0 only) and lora_targets ('|'-separated
   * globs over parameter names); with them the model adds LoRA adapters
   * y += (alpha / r)·(x·Aᵀ)·Bᵀ to the Linear layers whose weight matrices
   * the globs match, as parameters after its own (`<layer>.lora_A` [r, in]
   * and `<layer>.lora_B` [out, r], a leading [L] for a stacked weight;
   * A uniform in ±1/sqrt(in), B zeros). A host passes the keys only to a
   * model offering this; the host freezes what it wants frozen. */
  MNT_CAPABILITY_MODEL_LORA = 12,
} MNT_Capability;

/* Since 1.9: on MNT_Plugin_Api's chain with header.base.type
 * MNT_EXTENSION_TYPE_CAPABILITIES and header.name
 * MNT_CAPABILITIES_EXTENSION_NAME; any plugin kind. `capabilities` holds
 * `num_capabilities` MNT_Capability values (as int32_t, so a value a host
 * does not know is read safely and skipped), static storage of the plugin;
 * a capability not listed is not offered. At most one per chain. */
#define MNT_CAPABILITIES_EXTENSION_NAME "capabilities"
#define MNT_CAPABILITIES_EXTENSION_VERSION 1
typedef struct MNT_Capabilities_Extension {
  MNT_Extension_Header header;
  const int32_t* capabilities;
  size_t num_capabilities;
} MNT_Capabilities_Extension;
#define MNT_Capabilities_Extension_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Capabilities_Extension, num_capabilities)

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */
/* Error codes mirror absl::StatusCode numbering. */
typedef enum MNT_ErrorCode {
  MNT_ERROR_OK = 0,
  MNT_ERROR_CANCELLED = 1,
  MNT_ERROR_UNKNOWN = 2,
  MNT_ERROR_INVALID_ARGUMENT = 3,
  MNT_ERROR_DEADLINE_EXCEEDED = 4,
  MNT_ERROR_NOT_FOUND = 5,
  MNT_ERROR_ALREADY_EXISTS = 6,
  MNT_ERROR_PERMISSION_DENIED = 7,
  MNT_ERROR_RESOURCE_EXHAUSTED = 8,
  MNT_ERROR_FAILED_PRECONDITION = 9,
  MNT_ERROR_ABORTED = 10,
  MNT_ERROR_OUT_OF_RANGE = 11,
  MNT_ERROR_UNIMPLEMENTED = 12,
  MNT_ERROR_INTERNAL = 13,
  MNT_ERROR_UNAVAILABLE = 14,
  MNT_ERROR_DATA_LOSS = 15,
  MNT_ERROR_UNAUTHENTICATED = 16,
} MNT_ErrorCode;

/* Opaque. Allocated by the plugin that returns it; the caller owns it and
 * must free it with that same plugin's Error_Destroy. NULL means success. */
typedef struct MNT_Error MNT_Error;

/* Accepts NULL. */
typedef void MNT_Error_Destroy(MNT_Error* error);
/* The returned string is NUL-terminated and lives as long as `error`. */
typedef const char* MNT_Error_Message(const MNT_Error* error);
typedef MNT_ErrorCode MNT_Error_GetCode(const MNT_Error* error);

/* ------------------------------------------------------------------------ */
/* Element types and tensors                                                 */
/* ------------------------------------------------------------------------ */
typedef enum MNT_DType {
  MNT_DTYPE_INVALID = 0,
  MNT_DTYPE_F32 = 1,
  MNT_DTYPE_F16 = 2,  /* IEEE binary16, 2 bytes of storage */
  MNT_DTYPE_BF16 = 3, /* bfloat16, 2 bytes of storage */
  MNT_DTYPE_I32 = 4,
  MNT_DTYPE_U8 = 5,
  MNT_DTYPE_F64 = 6,
  /* Since 1.9: the OCP 8-bit floats, 1 byte of storage, for FP8 training
   * (MNT_OP_SCALED_CAST, MNT_OP_SCALED_GEMM; no other op takes them).
   * E4M3: bias 7, max finite 448, no infinity, NaN S.1111.111.
   * E5M2: bias 15, max finite 57344, IEEE infinities and NaNs. */
  MNT_DTYPE_F8_E4M3 = 7,
  MNT_DTYPE_F8_E5M2 = 8,
} MNT_DType;

/* How GEMM (and, since 1.3, convolution) operands are rounded before the products; the
 * products are exact in fp32 for these formats and accumulate in fp32, as
 * tensor cores do. */
typedef enum MNT_ComputeMode {
  MNT_COMPUTE_INVALID = 0,
  MNT_COMPUTE_F32 = 1,  /* full fp32 operands */
  MNT_COMPUTE_TF32 = 2, /* operands rounded to 10-bit mantissa */
  MNT_COMPUTE_BF16 = 3, /* operands rounded to bf16 */
  MNT_COMPUTE_F16 = 4,  /* operands rounded to fp16 */
} MNT_ComputeMode;

#define MNT_MAX_RANK 6

/* Since 1.10: how a delayed-scaling recipe reduces a tensor's amax history
 * to the amax its next scale is computed from (Transformer Engine's
 * amax_compute_algo). */
typedef enum MNT_AmaxAlgo {
  MNT_AMAX_ALGO_INVALID = 0,
  MNT_AMAX_ALGO_MAX = 1,         /* the largest amax in the history */
  MNT_AMAX_ALGO_MOST_RECENT = 2, /* the last pass's amax */
} MNT_AmaxAlgo;

/* A view of device memory. Never owns `data`. Dense, row-major. */
typedef struct MNT_Tensor {
  size_t struct_size;
  void* data; /* device pointer from Backend Memory_Allocate (or offset in one) */
  MNT_DType dtype;
  int32_t rank;
  int64_t dims[MNT_MAX_RANK];
} MNT_Tensor;
#define MNT_Tensor_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Tensor, dims)

/* ------------------------------------------------------------------------ */
/* The plugin entry point                                                    */
/* ------------------------------------------------------------------------ */
typedef enum MNT_PluginKind {
  MNT_PLUGIN_KIND_INVALID = 0,
  MNT_PLUGIN_KIND_BACKEND = 1,
  MNT_PLUGIN_KIND_PRECISION = 2,
  MNT_PLUGIN_KIND_MODEL = 3,
} MNT_PluginKind;

typedef struct MNT_Api_Version {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  int32_t major_version; /* MNT_ABI_MAJOR the plugin was compiled with */
  int32_t minor_version; /* MNT_ABI_MINOR the plugin was compiled with */
} MNT_Api_Version;
#define MNT_Api_Version_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Api_Version, minor_version)

struct MNT_Backend_Api;
struct MNT_Precision_Api;
struct MNT_Model_Api;

/* Optional one-time set-up, called by the host once right after loading and
 * before any other call. NULL is no-op. */
typedef MNT_Error* MNT_Plugin_Initialize(void);

typedef struct MNT_Plugin_Api {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Api_Version abi_version;
  MNT_PluginKind kind;
  /* Unique among loaded plugins of one kind, e.g. "cpu", "fp16", "mlp".
   * Static storage: lives as long as the plugin is loaded. */
  const char* name;
  const char* description; /* static storage, one line */
  MNT_Error_Destroy* Error_Destroy;
  MNT_Error_Message* Error_Message;
  MNT_Error_GetCode* Error_GetCode;
  MNT_Plugin_Initialize* Plugin_Initialize; /* NULL is no-op */
  /* Exactly the one matching `kind` is non-NULL. Static storage. */
  const struct MNT_Backend_Api* backend;
  const struct MNT_Precision_Api* precision;
  const struct MNT_Model_Api* model;
} MNT_Plugin_Api;
#define MNT_Plugin_Api_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Plugin_Api, model)

/* The one symbol every plugin exports. Returns a pointer to static storage;
 * ownership is not passed. Must be cheap and have no side effects. */
#define MNT_PLUGIN_ENTRY_SYMBOL "MNT_GetPluginApi"
typedef const MNT_Plugin_Api* MNT_GetPluginApi_Fn(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MANTISSA_PLUGINS_ABI_MNT_COMMON_H_ */
