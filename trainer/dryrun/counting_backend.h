// A backend plugin's table with its memory taken over: allocations are
// counted by category and backed by address space only (PROT_NONE, no
// reserve), copies and ops do nothing (an op allocates nothing a backend's
// Memory_GetStats counts: only Memory_Allocate does; the CNN fills its
// batch-norm statistics in Model_Create), and everything else (op support,
// device info, ...) goes to the real backend. A model created on it
// declares what it would allocate on that backend at a given batch size
// while no byte of it is committed: what //tools/memory:estimate reads
// the activations and workspace from.
//
// One CountingBackend at a time per process (the plugin table's functions
// carry no state of their own); not thread-safe, as a backend instance.
#ifndef MANTISSA_TRAINER_DRYRUN_COUNTING_BACKEND_H_
#define MANTISSA_TRAINER_DRYRUN_COUNTING_BACKEND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"

namespace mnt::memory {

class CountingBackend {
 public:
  // `real` is a loaded backend plugin and `instance` one of its instances;
  // both outlive this object. Fails when another CountingBackend is alive.
  static sdk::Status Create(const MNT_Plugin_Api* real, MNT_Backend* instance,
                            std::unique_ptr<CountingBackend>* out);
  ~CountingBackend();
  CountingBackend(const CountingBackend&) = delete;
  CountingBackend& operator=(const CountingBackend&) = delete;

  // What a model is handed instead of the real backend.
  const sdk::BackendClient& client() const { return client_; }

  // Bytes now allocated and the peak, per MNT_MemoryCategory (as the
  // backends' own Memory_GetStats count them: the requested bytes).
  int64_t current(MNT_MemoryCategory c) const { return current_[Index(c)]; }
  int64_t peak(MNT_MemoryCategory c) const { return peak_[Index(c)]; }
  // Ops the model asked to run (skipped).
  int64_t ops_run() const { return ops_run_; }

 private:
  CountingBackend(const MNT_Plugin_Api* real, MNT_Backend* instance);
  static int Index(MNT_MemoryCategory c) {
    return c == MNT_MEMORY_ALL ? MNT_MEMORY_CATEGORY_COUNT : static_cast<int>(c);
  }
  void Count(int index, int64_t delta);

  // The table's entry points (the one live object is `active_`).
  static MNT_Error* Allocate(MNT_Memory_Allocate_Args* args);
  static MNT_Error* Free(MNT_Memory_Free_Args* args);
  static MNT_Error* Copy(MNT_Memory_Copy_Args* args);
  static MNT_Error* GetStats(MNT_Memory_GetStats_Args* args);
  static MNT_Error* ResetPeak(MNT_Memory_ResetPeak_Args* args);
  static MNT_Error* Run(MNT_Backend_Run_Args* args);
  // Errors: this object's own, or the real backend's (forwarded).
  static void ErrorDestroy(MNT_Error* error);
  static const char* ErrorMessage(const MNT_Error* error);
  static MNT_ErrorCode ErrorGetCode(const MNT_Error* error);
  static MNT_Error* Fail(const sdk::Status& s);

  static CountingBackend* active_;

  const MNT_Plugin_Api* real_;
  MNT_Backend_Api api_{};
  MNT_Plugin_Api plugin_{};
  sdk::BackendClient client_;
  struct Block {
    size_t requested, mapped;
    int category;
  };
  std::map<uintptr_t, Block> live_;  // by start address
  std::set<const MNT_Error*> own_errors_;
  int64_t current_[MNT_MEMORY_CATEGORY_COUNT + 1] = {};
  int64_t peak_[MNT_MEMORY_CATEGORY_COUNT + 1] = {};
  int64_t ops_run_ = 0;
};

}  // namespace mnt::memory

#endif  // MANTISSA_TRAINER_DRYRUN_COUNTING_BACKEND_H_
