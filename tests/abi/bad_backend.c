/* One defect per build: the plugins the host must refuse, and the two halves
 * of a duplicate name. Built against the current headers with one of:
 *   BAD_MAJOR2       claims ABI 2.0
 *   BAD_MINOR_NEWER  claims ABI 1.(host minor + 4)
 *   BAD_TRUNCATED    MNT_Plugin_Api struct_size 16
 *   BAD_NULL_RUN     Backend_Run is NULL
 *   BAD_INIT_FAILS   Plugin_Initialize returns an error
 * and TEST_PLUGIN_NAME=<name> (no quotes). Otherwise a valid backend whose
 * calls all fail with UNIMPLEMENTED: these tests never get that far. */
#include <stdlib.h>
#include <string.h>

#include "plugins/abi/mantissa.h"

#ifndef TEST_PLUGIN_NAME
#error "define TEST_PLUGIN_NAME"
#endif
#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)

struct MNT_Error {
  MNT_ErrorCode code;
  const char* message; /* static storage */
};

static MNT_Error* MakeError(MNT_ErrorCode code, const char* message) {
  MNT_Error* e = (MNT_Error*)malloc(sizeof(MNT_Error));
  if (e != NULL) {
    e->code = code;
    e->message = message;
  }
  return e;
}
static void ErrorDestroy(MNT_Error* e) { free(e); }
static const char* ErrorMessage(const MNT_Error* e) { return e->message; }
static MNT_ErrorCode ErrorGetCode(const MNT_Error* e) { return e->code; }

#define UNIMPLEMENTED(Fn, Args)                                        \
  static MNT_Error* Fn(Args* args) {                                   \
    (void)args;                                                        \
    return MakeError(MNT_ERROR_UNIMPLEMENTED, "bad backend: " #Fn);    \
  }
UNIMPLEMENTED(BackendCreate, MNT_Backend_Create_Args)
UNIMPLEMENTED(BackendDestroy, MNT_Backend_Destroy_Args)
UNIMPLEMENTED(BackendGetInfo, MNT_Backend_GetInfo_Args)
UNIMPLEMENTED(MemoryAllocate, MNT_Memory_Allocate_Args)
UNIMPLEMENTED(MemoryFree, MNT_Memory_Free_Args)
UNIMPLEMENTED(MemoryCopy, MNT_Memory_Copy_Args)
UNIMPLEMENTED(MemoryGetStats, MNT_Memory_GetStats_Args)
UNIMPLEMENTED(MemoryResetPeak, MNT_Memory_ResetPeak_Args)
UNIMPLEMENTED(BackendSynchronize, MNT_Backend_Synchronize_Args)
UNIMPLEMENTED(BackendGetOpSupport, MNT_Backend_GetOpSupport_Args)
#ifndef BAD_NULL_RUN
UNIMPLEMENTED(BackendRun, MNT_Backend_Run_Args)
#endif

#ifdef BAD_INIT_FAILS
static MNT_Error* Initialize(void) {
  return MakeError(MNT_ERROR_UNAVAILABLE,
                   "bad backend: simulated initialization failure");
}
#define INITIALIZE Initialize
#else
#define INITIALIZE NULL
#endif

#ifdef BAD_NULL_RUN
#define RUN NULL
#else
#define RUN BackendRun
#endif

static const MNT_Backend_Api kBackend = {
    MNT_Backend_Api_STRUCT_SIZE_1_0, NULL, BackendCreate, BackendDestroy,
    BackendGetInfo, MemoryAllocate, MemoryFree, MemoryCopy, MemoryGetStats,
    MemoryResetPeak, BackendSynchronize, BackendGetOpSupport, RUN,
    NULL, NULL, NULL, NULL,
};

#if defined(BAD_MAJOR2)
#define MAJOR 2
#define MINOR 0
#elif defined(BAD_MINOR_NEWER)
#define MAJOR MNT_ABI_MAJOR
#define MINOR (MNT_ABI_MINOR + 4)
#else
#define MAJOR MNT_ABI_MAJOR
#define MINOR MNT_ABI_MINOR
#endif

#ifdef BAD_TRUNCATED
#define PLUGIN_API_SIZE 16
#else
#define PLUGIN_API_SIZE MNT_Plugin_Api_STRUCT_SIZE
#endif

static const MNT_Plugin_Api kPlugin = {
    PLUGIN_API_SIZE,
    NULL,
    {MNT_Api_Version_STRUCT_SIZE, NULL, MAJOR, MINOR},
    MNT_PLUGIN_KIND_BACKEND,
    STRINGIFY(TEST_PLUGIN_NAME),
    "test plugin for the loader's refusals",
    ErrorDestroy,
    ErrorMessage,
    ErrorGetCode,
    INITIALIZE,
    &kBackend,
    NULL,
    NULL,
};

__attribute__((visibility("default"))) const MNT_Plugin_Api* MNT_GetPluginApi(
    void) {
  return &kPlugin;
}
