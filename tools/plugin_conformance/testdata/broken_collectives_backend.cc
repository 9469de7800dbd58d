// mnt_backend_broken_collectives.so (tests only): the CPU backend, whose
// collectives are the CPU backend's except that on one rank a result is
// off by one bit, so a test can show that conformance under mpirun fails
// when one rank's check fails (mpi_conformance_catches_broken_rank_test).
//
// $MNT_BREAK_COLLECTIVES_ON_RANK = R: on the process whose
// OMPI_COMM_WORLD_RANK is R (0 outside mpirun), every ALL_REDUCE with SUM
// flips the lowest bit of its first output element after the CPU backend
// computed it: within any tolerance for the sum, so only the bit-for-bit
// checks (every rank the same bits) can catch it. Unset: a faithful copy.
#include <cstdlib>
#include <cstring>

#include "plugins/abi/mantissa.h"
#include "plugins/abi/mnt_collectives.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/extension_chain.h"

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

MNT_Error* BrokenRun(MNT_Collectives_Run_Args* args) {
  MNT_Error* e = CpuCollectives()->Collectives_Run(args);
  if (e == nullptr && BreakThisRank() && args->op == MNT_COLLECTIVE_ALL_REDUCE &&
      args->reduce == MNT_REDUCE_OP_SUM) {
    // CPU memory is host memory: the first byte holds the lowest bits.
    static_cast<unsigned char*>(args->output->data)[0] ^= 1;
  }
  return e;
}

const MNT_Plugin_Api* BrokenCollectivesPluginApi() {
  static MNT_Plugin_Api api = [] {
    const MNT_Plugin_Api* cpu = mnt::cpu::CpuBackendPluginApi();
    static MNT_Collectives_Extension collectives = *CpuCollectives();
    collectives.header.base.next = nullptr;
    collectives.Collectives_Run = &BrokenRun;
    static MNT_Capabilities_Extension capabilities =
        *reinterpret_cast<const MNT_Capabilities_Extension*>(
            mnt::sdk::FindExtension(cpu, MNT_EXTENSION_TYPE_CAPABILITIES));
    capabilities.header.base.next = &collectives.header.base;
    MNT_Plugin_Api a = *cpu;
    a.name = "broken_collectives";
    a.description = "CPU backend whose ALL_REDUCE sum is one bit off on one rank (tests only)";
    a.extension_start = &capabilities.header.base;
    return a;
  }();
  return &api;
}

}  // namespace

MNT_EXPORT_PLUGIN(BrokenCollectivesPluginApi)
