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
 * value). A host loads a plugin with the same major and a minor <= its own. */
#define MNT_ABI_MAJOR 1
#define MNT_ABI_MINOR 5

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
typedef enum MNT_ExtensionType {
  MNT_EXTENSION_TYPE_NONE = 0,
} MNT_ExtensionType;

typedef struct MNT_Extension_Base {
  size_t struct_size;
  MNT_ExtensionType type;
  struct MNT_Extension_Base* next;
} MNT_Extension_Base;

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
