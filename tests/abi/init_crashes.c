/* A backend plugin whose Plugin_Initialize dies with SIGSEGV: the tools'
 * forked probe must contain it and name the stage ("plugin crashed in
 * Plugin_Initialize (signal 11, ...)"). Otherwise valid, so it gets past
 * validation; every other call fails with UNIMPLEMENTED. */
#include <signal.h>
#include <stdlib.h>

#include "plugins/abi/mantissa.h"

struct MNT_Error {
  int unused;
};

static void ErrorDestroy(MNT_Error* e) { free(e); }
static const char* ErrorMessage(const MNT_Error* e) {
  (void)e;
  return "init_crashes backend: not implemented";
}
static MNT_ErrorCode ErrorGetCode(const MNT_Error* e) {
  (void)e;
  return MNT_ERROR_UNIMPLEMENTED;
}

#define UNIMPLEMENTED(Fn, Args)                          \
  static MNT_Error* Fn(Args* args) {                     \
    (void)args;                                          \
    return (MNT_Error*)calloc(1, sizeof(MNT_Error));     \
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
UNIMPLEMENTED(BackendRun, MNT_Backend_Run_Args)

static MNT_Error* Initialize(void) {
  raise(SIGSEGV);
  return NULL;
}

static const MNT_Backend_Api kBackend = {
    MNT_Backend_Api_STRUCT_SIZE_1_0, NULL, BackendCreate, BackendDestroy,
    BackendGetInfo, MemoryAllocate, MemoryFree, MemoryCopy, MemoryGetStats,
    MemoryResetPeak, BackendSynchronize, BackendGetOpSupport, BackendRun,
};

static const MNT_Plugin_Api kPlugin = {
    MNT_Plugin_Api_STRUCT_SIZE,
    NULL,
    {MNT_Api_Version_STRUCT_SIZE, NULL, MNT_ABI_MAJOR, MNT_ABI_MINOR},
    MNT_PLUGIN_KIND_BACKEND,
    "init_crashes",
    "test plugin: Plugin_Initialize raises SIGSEGV",
    ErrorDestroy,
    ErrorMessage,
    ErrorGetCode,
    Initialize,
    &kBackend,
    NULL,
    NULL,
};

__attribute__((visibility("default"))) const MNT_Plugin_Api* MNT_GetPluginApi(
    void) {
  return &kPlugin;
}
