// What the cuda backend's collectives (collectives.cc, over NCCL) check and
// compute on the host before they call NCCL, kept free of CUDA and NCCL so
// the CPU tests it (collectives_plan_test): the unique id NCCL takes, each
// Collectives_Run or Collectives_Start call, once the contract every
// backend shares has checked it (backends/common/collective_call.h), turned
// into one NCCL call's arguments (element type, count, buffers), and the
// bookkeeping of the started collectives (WorkRegistry).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_COLLECTIVES_PLAN_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_COLLECTIVES_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "plugins/abi/mnt_collectives.h"
#include "plugins/backends/common/collective_call.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

// The element type NCCL moves: the reductions' own types, or raw bytes
// (ncclInt8) for ALL_GATHER and BROADCAST of any dtype.
enum class WireType { kF32, kF16, kBF16, kBytes };

// One NCCL call. `count` is NCCL's: for ALL_REDUCE the elements of each
// buffer, for REDUCE_SCATTER the elements of the output (recvcount), for
// ALL_GATHER the bytes of the input (sendcount), for BROADCAST the bytes of
// the output; 0 means there is nothing to move (every rank has the same
// count, so every rank skips the call alike).
struct CollectivePlan {
  MNT_CollectiveOp op = MNT_COLLECTIVE_INVALID;
  MNT_ReduceOp reduce = MNT_REDUCE_OP_INVALID;  // reductions only
  WireType type = WireType::kBytes;
  size_t count = 0;
  const void* send = nullptr;  // BROADCAST on a non-root rank: == recv
  void* recv = nullptr;
  int32_t root = 0;  // BROADCAST only
  // The device ranges the call reads and writes (the caller checks that
  // they lie in memory of its backend); input_bytes is 0 when the input is
  // not read (BROADCAST on a non-root rank).
  const void* input = nullptr;
  size_t input_bytes = 0;
  void* output = nullptr;
  size_t output_bytes = 0;
};

// The bytes of an NCCL unique id (sizeof(ncclUniqueId)); collectives.cc
// checks nccl.h agrees.
inline constexpr size_t kNcclUniqueIdBytes = 128;
static_assert(kNcclUniqueIdBytes <= MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES,
              "an NCCL unique id must fit MNT_Collectives_GetUniqueId_Args.unique_id");

// Communicator_Create's rank, world size and unique id: the contract's
// (backend::CheckCommunicatorArgs), then the id's size, which must be an
// NCCL id's.
sdk::Status CheckCommunicatorArgs(int32_t rank, int32_t world_size, const char* unique_id,
                                  size_t unique_id_size);

// Collectives_Run's (or, through RunArgsOf, Collectives_Start's) op,
// reduce, root and tensors for rank `rank` of a communicator of
// `world_size` ranks (both already valid): checked by
// backend::CheckCollectiveCall (each failure one INVALID_ARGUMENT line
// naming the op; `call` names the entry point where there is no op to
// name), then planned as one NCCL call.
sdk::Status PlanCollective(const MNT_Collectives_Run_Args& args, int32_t rank,
                           int32_t world_size, CollectivePlan* plan,
                           const char* call = "Collectives_Run");

// Collectives_Start's operands as Collectives_Run's (the same fields, so
// one PlanCollective checks both); `work` is not among them.
MNT_Collectives_Run_Args RunArgsOf(const MNT_Collectives_Start_Args& start);

// The started collectives of the process that are not yet waited for, each
// with the communicator it was started on: Collectives_Start adds its work,
// Collectives_Wait takes it out (once: a second Wait of the same work finds
// nothing), Communicator_Destroy takes the communicator's works that are
// left and frees them. A handle is looked up by address and never
// dereferenced, so a work already waited for (freed), another
// communicator's, or a pointer that was never a work are each told apart
// safely. Process-wide rather than per communicator for that reason, with
// a lock because ranks drive their communicators from their own threads.
// A template so that the CPU tests it without the CUDA types of
// collectives.cc's MNT_CollectiveWork.
template <typename Work, typename Owner>
class WorkRegistry {
 public:
  enum class Taken {
    kYes,         // it was `owner`'s, and is taken out
    kNotLive,     // NULL, already taken, or never added
    kOtherOwner,  // a live work of another owner, left where it is
  };

  void Add(Work* work, const Owner* owner) {
    std::lock_guard<std::mutex> lock(mu_);
    live_[work] = owner;
  }

  Taken Take(const Work* work, const Owner* owner) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = live_.find(work);
    if (it == live_.end()) return Taken::kNotLive;
    if (it->second != owner) return Taken::kOtherOwner;
    live_.erase(it);
    return Taken::kYes;
  }

  // Every live work of `owner` (in no particular order), taken out.
  std::vector<Work*> TakeAll(const Owner* owner) {
    std::vector<Work*> taken;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second == owner) {
        taken.push_back(const_cast<Work*>(it->first));
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
    return taken;
  }

  size_t Count(const Owner* owner) const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [work, o] : live_) n += o == owner ? 1 : 0;
    return n;
  }

 private:
  mutable std::mutex mu_;
  // A handful per communicator (the buckets in flight).
  std::unordered_map<const Work*, const Owner*> live_;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_COLLECTIVES_PLAN_H_
