// mnt_backend_broken_collectives.so (tests only): the CPU backend, whose
// collectives are the CPU backend's except where the environment breaks
// them, so tests can show that conformance under mpirun catches each kind
// of broken collectives extension.
//
// $MNT_BREAK_COLLECTIVES_ON_RANK = R: on the process whose
// OMPI_COMM_WORLD_RANK is R (0 outside mpirun), every ALL_REDUCE with SUM
// (run, or started and waited for) flips the lowest bit of its first output
// element after the CPU backend computed it: within any tolerance for the
// sum, so only the bit-for-bit checks (every rank the same bits) can catch
// it (conformance_mpi_catches_broken_rank_test).
//
// $MNT_BREAK_STARTED_COLLECTIVES breaks version 2 of the extension (started
// collectives) on every rank, so that only the version-2 checks fail:
//   sync_start        Collectives_Start runs the collective to completion
//                     before it returns (which, over MPI, waits for the
//                     other ranks to start theirs); results are right.
//   wrong_bits        Collectives_Wait flips the lowest bit of the output's
//                     first element: within the sums' tolerance, only the
//                     comparison with Collectives_Run's bits catches it.
//   stale_after_wait  the collective's result never reaches the output
//                     (the CPU backend writes it to a buffer of this
//                     plugin's): what a host sees when Wait returns before
//                     the collective has written its output.
//   work_on_error     a Start refused for its arguments still sets `work`.
//   null_wait         the table says version 2 but Collectives_Wait is NULL.
//   v1                the table is version 1's (struct_size and version;
//                     Collectives_Run only): a faithful version-1 backend,
//                     which passes. Its Start and Wait slots, beyond the
//                     struct_size it states, abort the process if called,
//                     so a host that calls them on a version-1 table fails.
// Unset (and R unset): a faithful copy of the CPU backend.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "plugins/abi/mantissa.h"
#include "plugins/abi/mnt_collectives.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/extension_chain.h"
#include "plugins/sdk/tensor.h"

namespace {

const MNT_Collectives_Extension* CpuCollectives() {
  return reinterpret_cast<const MNT_Collectives_Extension*>(mnt::sdk::FindExtension(
      mnt::cpu::CpuBackendPluginApi(), MNT_EXTENSION_TYPE_COLLECTIVES));
}

bool BreakThisRank() {
  const char* want = std::getenv("MNT_BREAK_COLLECTIVES_ON_RANK");
  if (want == nullptr || *want == '\0') return false;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return std::atoi(want) == (rank != nullptr ? std::atoi(rank) : 0);
}

// $MNT_BREAK_STARTED_COLLECTIVES, "" when unset.
std::string StartedMode() {
  const char* mode = std::getenv("MNT_BREAK_STARTED_COLLECTIVES");
  return mode != nullptr ? mode : "";
}

bool FlipsOnThisRank(MNT_CollectiveOp op, MNT_ReduceOp reduce) {
  return BreakThisRank() && op == MNT_COLLECTIVE_ALL_REDUCE && reduce == MNT_REDUCE_OP_SUM;
}

// CPU memory is host memory: the first byte holds the lowest bits.
void FlipLowestBit(void* data) { static_cast<unsigned char*>(data)[0] ^= 1; }

MNT_Error* BrokenRun(MNT_Collectives_Run_Args* args) {
  MNT_Error* e = CpuCollectives()->Collectives_Run(args);
  if (e == nullptr && FlipsOnThisRank(args->op, args->reduce)) FlipLowestBit(args->output->data);
  return e;
}

// What this plugin hands out as a work: the CPU backend's work and what
// Wait needs to break its result. A communicator destroyed with works not
// waited for frees the CPU backend's, not these (a test plugin's leak).
struct BrokenWork {
  MNT_CollectiveWork* inner = nullptr;  // NULL when Start already finished it
  MNT_Error* finished = nullptr;        // sync_start: the finished collective's result
  void* output = nullptr;               // the caller's output
  bool flip_first = false;              // lowest bit of output[0] after the wait
  std::vector<char> scratch;            // stale_after_wait: where the result went
};

MNT_CollectiveWork* AsWork(BrokenWork* w) { return reinterpret_cast<MNT_CollectiveWork*>(w); }
BrokenWork* FromWork(MNT_CollectiveWork* w) { return reinterpret_cast<BrokenWork*>(w); }

MNT_Error* BrokenStart(MNT_Collectives_Start_Args* args) {
  static const std::string mode = StartedMode();
  // Args too short to copy: the CPU backend refuses them as they are.
  if (args == nullptr || args->struct_size < MNT_Collectives_Start_Args_STRUCT_SIZE) {
    return CpuCollectives()->Collectives_Start(args);
  }
  MNT_Collectives_Start_Args inner = *args;
  auto* w = new BrokenWork;
  MNT_Tensor redirected{};
  if (mode == "stale_after_wait" && args->output != nullptr) {
    // The collective writes a buffer of its own size that the caller never
    // sees. In-place forms stay valid: their input is the caller's buffer,
    // so they become out-of-place ones.
    redirected = *args->output;
    w->scratch.resize(mnt::sdk::SizeBytes(redirected) + 1);
    redirected.data = w->scratch.data();
    inner.output = &redirected;
  }
  MNT_Error* e = CpuCollectives()->Collectives_Start(&inner);
  if (e != nullptr) {
    delete w;
    static char dangling;
    args->work = mode == "work_on_error" ? reinterpret_cast<MNT_CollectiveWork*>(&dangling)
                                         : nullptr;
    return e;
  }
  w->inner = inner.work;
  w->output = args->output->data;
  w->flip_first = mode == "wrong_bits" || FlipsOnThisRank(args->op, args->reduce);
  if (mode == "sync_start") {
    // Finish it here: the CPU backend's Wait returns when the collective
    // has finished, which needs every rank to have started it.
    MNT_Collectives_Wait_Args wait{};
    wait.struct_size = MNT_Collectives_Wait_Args_STRUCT_SIZE;
    wait.backend = args->backend;
    wait.communicator = args->communicator;
    wait.work = w->inner;
    w->finished = CpuCollectives()->Collectives_Wait(&wait);
    w->inner = nullptr;
  }
  args->work = AsWork(w);
  return nullptr;
}

MNT_Error* BrokenWait(MNT_Collectives_Wait_Args* args) {
  if (args == nullptr || args->work == nullptr) return CpuCollectives()->Collectives_Wait(args);
  BrokenWork* w = FromWork(args->work);
  MNT_Error* e = w->finished;
  if (w->inner != nullptr) {
    MNT_Collectives_Wait_Args inner = *args;
    inner.work = w->inner;
    e = CpuCollectives()->Collectives_Wait(&inner);
  }
  if (e == nullptr && w->flip_first) FlipLowestBit(w->output);
  delete w;
  return e;
}

[[noreturn]] void CalledBeyondVersion1(const char* call) {
  std::fprintf(stderr,
               "broken_collectives: %s called on a version-1 collectives extension (its "
               "struct_size does not cover it)\n",
               call);
  std::fflush(stderr);
  std::abort();
}

MNT_Error* TrapStart(MNT_Collectives_Start_Args*) { CalledBeyondVersion1("Collectives_Start"); }
MNT_Error* TrapWait(MNT_Collectives_Wait_Args*) { CalledBeyondVersion1("Collectives_Wait"); }

const MNT_Plugin_Api* BrokenCollectivesPluginApi() {
  static MNT_Plugin_Api api = [] {
    const MNT_Plugin_Api* cpu = mnt::cpu::CpuBackendPluginApi();
    const std::string mode = StartedMode();
    static MNT_Collectives_Extension collectives = *CpuCollectives();
    collectives.header.base.next = nullptr;
    collectives.Collectives_Run = &BrokenRun;
    if (mode == "v1") {
      collectives.header.base.struct_size = MNT_Collectives_Extension_V1_STRUCT_SIZE;
      collectives.header.version = 1;
      collectives.Collectives_Start = &TrapStart;
      collectives.Collectives_Wait = &TrapWait;
    } else {
      collectives.Collectives_Start = &BrokenStart;
      collectives.Collectives_Wait = mode == "null_wait" ? nullptr : &BrokenWait;
    }
    static MNT_Capabilities_Extension capabilities =
        *reinterpret_cast<const MNT_Capabilities_Extension*>(
            mnt::sdk::FindExtension(cpu, MNT_EXTENSION_TYPE_CAPABILITIES));
    capabilities.header.base.next = &collectives.header.base;
    MNT_Plugin_Api a = *cpu;
    a.name = "broken_collectives";
    a.description =
        "CPU backend whose collectives are broken as $MNT_BREAK_COLLECTIVES_ON_RANK and "
        "$MNT_BREAK_STARTED_COLLECTIVES say (tests only)";
    a.extension_start = &capabilities.header.base;
    return a;
  }();
  return &api;
}

}  // namespace

MNT_EXPORT_PLUGIN(BrokenCollectivesPluginApi)
