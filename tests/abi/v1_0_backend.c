/* A backend plugin as a third party would have written it against ABI 1.0:
 * plain C, compiled only against the frozen 1.0 headers in tests/abi/v1_0
 * (no SDK, no Event_* calls). Host memory; F32 FILL, ADD and REDUCE.
 *
 * compat_test loads it into the current (1.1) host to prove that older
 * minors keep working. The API struct is followed by non-NULL poison where a
 * 1.1 backend keeps its Event_* pointers: a host that reads beyond
 * struct_size would see "events" and the test would catch it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/abi/v1_0/mantissa.h"

struct MNT_Error {
  MNT_ErrorCode code;
  char message[256];
};

static MNT_Error* MakeError(MNT_ErrorCode code, const char* fmt, ...) {
  MNT_Error* e = (MNT_Error*)malloc(sizeof(MNT_Error));
  va_list ap;
  if (e == NULL) return NULL; /* cannot report; the caller sees success */
  e->code = code;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof(e->message), fmt, ap);
  va_end(ap);
  return e;
}

static void ErrorDestroy(MNT_Error* e) { free(e); }
static const char* ErrorMessage(const MNT_Error* e) { return e->message; }
static MNT_ErrorCode ErrorGetCode(const MNT_Error* e) { return e->code; }

#define CHECK_ARGS(Type, args)                                             \
  do {                                                                     \
    if ((args) == NULL)                                                    \
      return MakeError(MNT_ERROR_INVALID_ARGUMENT, #Type ": args is NULL"); \
    if ((args)->struct_size < Type##_STRUCT_SIZE)                          \
      return MakeError(MNT_ERROR_INVALID_ARGUMENT,                         \
                       #Type ": struct_size %zu < %zu", (args)->struct_size, \
                       (size_t)Type##_STRUCT_SIZE);                        \
  } while (0)

/* ------------------------------------------------------------------ */
/* Instances and memory                                                */
/* ------------------------------------------------------------------ */
typedef struct Allocation {
  void* data;
  size_t size;
  MNT_MemoryCategory category;
  struct Allocation* next;
} Allocation;

struct MNT_Backend {
  Allocation* allocations;
  int64_t current[MNT_MEMORY_CATEGORY_COUNT];
  int64_t peak[MNT_MEMORY_CATEGORY_COUNT];
};

static MNT_Error* BackendCreate(MNT_Backend_Create_Args* args) {
  CHECK_ARGS(MNT_Backend_Create_Args, args);
  if (args->options != NULL && args->options[0] != '\0') {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "v1_0 backend: takes no options, got '%s'", args->options);
  }
  if (args->device_ordinal != 0) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "v1_0 backend: device_ordinal must be 0, got %d",
                     (int)args->device_ordinal);
  }
  args->backend = (MNT_Backend*)calloc(1, sizeof(MNT_Backend));
  if (args->backend == NULL) {
    return MakeError(MNT_ERROR_RESOURCE_EXHAUSTED, "v1_0 backend: no memory");
  }
  return NULL;
}

static MNT_Error* BackendDestroy(MNT_Backend_Destroy_Args* args) {
  Allocation* a;
  CHECK_ARGS(MNT_Backend_Destroy_Args, args);
  if (args->backend == NULL) return NULL;
  a = args->backend->allocations;
  while (a != NULL) {
    Allocation* next = a->next;
    free(a->data);
    free(a);
    a = next;
  }
  free(args->backend);
  return NULL;
}

static MNT_Error* BackendGetInfo(MNT_Backend_GetInfo_Args* args) {
  CHECK_ARGS(MNT_Backend_GetInfo_Args, args);
  args->device_name = "host memory (ABI 1.0 test backend)";
  args->total_memory_bytes = 0;
  args->host_addressable = 1;
  return NULL;
}

static MNT_Error* MemoryAllocate(MNT_Memory_Allocate_Args* args) {
  MNT_Backend* b;
  Allocation* a;
  size_t rounded;
  CHECK_ARGS(MNT_Memory_Allocate_Args, args);
  b = args->backend;
  if ((unsigned)args->category >= MNT_MEMORY_CATEGORY_COUNT) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "Memory_Allocate: invalid category %d",
                     (int)args->category);
  }
  args->data = NULL;
  if (args->size_bytes == 0) return NULL;
  rounded = (args->size_bytes + 255) / 256 * 256;
  a = (Allocation*)malloc(sizeof(Allocation));
  if (a == NULL || (a->data = aligned_alloc(256, rounded)) == NULL) {
    free(a);
    return MakeError(MNT_ERROR_RESOURCE_EXHAUSTED,
                     "Memory_Allocate: out of memory for %zu bytes",
                     args->size_bytes);
  }
  a->size = args->size_bytes;
  a->category = args->category;
  a->next = b->allocations;
  b->allocations = a;
  b->current[a->category] += (int64_t)a->size;
  if (b->current[a->category] > b->peak[a->category]) {
    b->peak[a->category] = b->current[a->category];
  }
  args->data = a->data;
  return NULL;
}

static MNT_Error* MemoryFree(MNT_Memory_Free_Args* args) {
  Allocation** link;
  CHECK_ARGS(MNT_Memory_Free_Args, args);
  if (args->data == NULL) return NULL;
  for (link = &args->backend->allocations; *link != NULL;
       link = &(*link)->next) {
    Allocation* a = *link;
    if (a->data == args->data) {
      args->backend->current[a->category] -= (int64_t)a->size;
      *link = a->next;
      free(a->data);
      free(a);
      return NULL;
    }
  }
  return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                   "Memory_Free: %p was not allocated by this instance",
                   args->data);
}

static MNT_Error* MemoryCopy(MNT_Memory_Copy_Args* args) {
  CHECK_ARGS(MNT_Memory_Copy_Args, args);
  if (args->size_bytes == 0) return NULL;
  if (args->dst == NULL || args->src == NULL) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT, "Memory_Copy: NULL pointer");
  }
  memmove(args->dst, args->src, args->size_bytes); /* all memory is host */
  return NULL;
}

static MNT_Error* MemoryGetStats(MNT_Memory_GetStats_Args* args) {
  MNT_Backend* b;
  int c;
  CHECK_ARGS(MNT_Memory_GetStats_Args, args);
  b = args->backend;
  if (args->category == MNT_MEMORY_ALL) {
    args->current_bytes = 0;
    args->peak_bytes = 0;
    for (c = 0; c < MNT_MEMORY_CATEGORY_COUNT; ++c) {
      args->current_bytes += b->current[c];
      args->peak_bytes += b->peak[c]; /* upper bound of the joint peak */
    }
    return NULL;
  }
  if ((unsigned)args->category >= MNT_MEMORY_CATEGORY_COUNT) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "Memory_GetStats: invalid category %d",
                     (int)args->category);
  }
  args->current_bytes = b->current[args->category];
  args->peak_bytes = b->peak[args->category];
  return NULL;
}

static MNT_Error* MemoryResetPeak(MNT_Memory_ResetPeak_Args* args) {
  int c;
  CHECK_ARGS(MNT_Memory_ResetPeak_Args, args);
  for (c = 0; c < MNT_MEMORY_CATEGORY_COUNT; ++c) {
    args->backend->peak[c] = args->backend->current[c];
  }
  return NULL;
}

static MNT_Error* BackendSynchronize(MNT_Backend_Synchronize_Args* args) {
  CHECK_ARGS(MNT_Backend_Synchronize_Args, args);
  return NULL; /* every call is synchronous */
}

static int Supported(MNT_Op op) {
  return op == MNT_OP_FILL || op == MNT_OP_ADD || op == MNT_OP_REDUCE;
}

static MNT_Error* BackendGetOpSupport(MNT_Backend_GetOpSupport_Args* args) {
  CHECK_ARGS(MNT_Backend_GetOpSupport_Args, args);
  args->supported = Supported(args->op);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Kernels (F32 only)                                                   */
/* ------------------------------------------------------------------ */
static int64_t Count(const MNT_Tensor* t) {
  int64_t n = 1;
  int i;
  for (i = 0; i < t->rank; ++i) n *= t->dims[i];
  return n;
}

static MNT_Error* CheckF32(const char* op, const char* role,
                           const MNT_Tensor* t) {
  if (t->struct_size < MNT_Tensor_STRUCT_SIZE || t->dtype != MNT_DTYPE_F32 ||
      t->rank < 0 || t->rank > MNT_MAX_RANK ||
      (t->data == NULL && Count(t) != 0)) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "%s: %s must be a non-NULL F32 tensor", op, role);
  }
  return NULL;
}

static MNT_Error* RunFill(const MNT_Backend_Run_Args* a) {
  const MNT_FillParams* p = (const MNT_FillParams*)a->params;
  MNT_Error* e;
  float* out;
  int64_t i, n;
  if (a->num_outputs != 1 || p == NULL ||
      p->struct_size < MNT_FillParams_STRUCT_SIZE) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "FILL: needs 1 output and MNT_FillParams");
  }
  if ((e = CheckF32("FILL", "out[0]", &a->outputs[0])) != NULL) return e;
  out = (float*)a->outputs[0].data;
  n = Count(&a->outputs[0]);
  for (i = 0; i < n; ++i) out[i] = (float)p->value;
  return NULL;
}

static MNT_Error* RunAdd(const MNT_Backend_Run_Args* a) {
  const MNT_AddParams* p = (const MNT_AddParams*)a->params;
  const float* x;
  const float* y = NULL;
  float* out;
  int64_t i, n;
  MNT_Error* e;
  if (a->num_outputs != 1 || a->num_inputs < 1 || a->num_inputs > 2 ||
      p == NULL || p->struct_size < MNT_AddParams_STRUCT_SIZE) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "ADD: needs 1-2 inputs, 1 output and MNT_AddParams");
  }
  if ((e = CheckF32("ADD", "in[0]", &a->inputs[0])) != NULL) return e;
  if ((e = CheckF32("ADD", "out[0]", &a->outputs[0])) != NULL) return e;
  n = Count(&a->outputs[0]);
  if (Count(&a->inputs[0]) != n) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "ADD: in[0] has %lld elements, out[0] %lld",
                     (long long)Count(&a->inputs[0]), (long long)n);
  }
  if (a->num_inputs == 2 && a->inputs[1].data != NULL) {
    if ((e = CheckF32("ADD", "in[1]", &a->inputs[1])) != NULL) return e;
    if (Count(&a->inputs[1]) != n) {
      return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                       "ADD: in[1] has %lld elements, out[0] %lld",
                       (long long)Count(&a->inputs[1]), (long long)n);
    }
    y = (const float*)a->inputs[1].data;
  }
  x = (const float*)a->inputs[0].data;
  out = (float*)a->outputs[0].data;
  for (i = 0; i < n; ++i) {
    out[i] = p->alpha * x[i] + (y != NULL ? p->beta * y[i] : 0.0f);
  }
  return NULL;
}

static MNT_Error* RunReduce(const MNT_Backend_Run_Args* a) {
  const MNT_ReduceParams* p = (const MNT_ReduceParams*)a->params;
  const float* x;
  double acc;
  int64_t i, n;
  MNT_Error* e;
  if (a->num_outputs != 1 || a->num_inputs != 1 || p == NULL ||
      p->struct_size < MNT_ReduceParams_STRUCT_SIZE) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "REDUCE: needs 1 input, 1 output and MNT_ReduceParams");
  }
  if ((e = CheckF32("REDUCE", "in[0]", &a->inputs[0])) != NULL) return e;
  if ((e = CheckF32("REDUCE", "out[0]", &a->outputs[0])) != NULL) return e;
  if (Count(&a->outputs[0]) != 1) {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT,
                     "REDUCE: out[0] must have 1 element");
  }
  x = (const float*)a->inputs[0].data;
  n = Count(&a->inputs[0]);
  if (p->kind == MNT_REDUCE_MAX) {
    if (n == 0) {
      return MakeError(MNT_ERROR_INVALID_ARGUMENT, "REDUCE: MAX of nothing");
    }
    acc = x[0];
    for (i = 1; i < n; ++i) acc = (x[i] > acc || isnan(x[i])) ? x[i] : acc;
  } else if (p->kind == MNT_REDUCE_SUM || p->kind == MNT_REDUCE_MEAN) {
    acc = 0.0;
    for (i = 0; i < n; ++i) acc += x[i];
    if (p->kind == MNT_REDUCE_MEAN) acc = n > 0 ? acc / (double)n : NAN;
  } else {
    return MakeError(MNT_ERROR_INVALID_ARGUMENT, "REDUCE: invalid kind %d",
                     (int)p->kind);
  }
  *(float*)a->outputs[0].data = (float)acc;
  return NULL;
}

static MNT_Error* BackendRun(MNT_Backend_Run_Args* args) {
  CHECK_ARGS(MNT_Backend_Run_Args, args);
  switch (args->op) {
    case MNT_OP_FILL: return RunFill(args);
    case MNT_OP_ADD: return RunAdd(args);
    case MNT_OP_REDUCE: return RunReduce(args);
    default:
      return MakeError(MNT_ERROR_UNIMPLEMENTED,
                       "v1_0 backend: op %d is not implemented",
                       (int)args->op);
  }
}

/* ------------------------------------------------------------------ */
/* Export                                                               */
/* ------------------------------------------------------------------ */
static const struct {
  MNT_Backend_Api api;
  /* Where a 1.1 backend keeps Event_Create..Event_Destroy: not ours. */
  const void* poison[4];
} kBackend = {
    {
        MNT_Backend_Api_STRUCT_SIZE, NULL, BackendCreate, BackendDestroy,
        BackendGetInfo, MemoryAllocate, MemoryFree, MemoryCopy,
        MemoryGetStats, MemoryResetPeak, BackendSynchronize,
        BackendGetOpSupport, BackendRun,
    },
    {&kBackend, &kBackend, &kBackend, &kBackend},
};

static const MNT_Plugin_Api kPlugin = {
    MNT_Plugin_Api_STRUCT_SIZE,
    NULL,
    {MNT_Api_Version_STRUCT_SIZE, NULL, MNT_ABI_MAJOR, MNT_ABI_MINOR},
    MNT_PLUGIN_KIND_BACKEND,
    "v1_0",
    "ABI 1.0 host-memory test backend (FILL, ADD, REDUCE)",
    ErrorDestroy,
    ErrorMessage,
    ErrorGetCode,
    NULL, /* Plugin_Initialize */
    &kBackend.api,
    NULL,
    NULL,
};

__attribute__((visibility("default"))) const MNT_Plugin_Api* MNT_GetPluginApi(
    void) {
  return &kPlugin;
}
