#include "trainer/parallel/launch.h"

#include <cstdlib>

#include "absl/strings/numbers.h"

namespace mnt::trainer {
namespace {

bool ReadInt(const std::function<const char*(const char*)>& getenv, const char* name,
             int* out) {
  const char* v = getenv(name);
  return v != nullptr && absl::SimpleAtoi(v, out);
}

}  // namespace

Launch DetectLaunch(const std::function<const char*(const char*)>& getenv) {
  // Open MPI's mpirun first: under srun with Open MPI both are set and
  // agree; MPI itself decides in the end (HostComm checks).
  const struct {
    const char* size;
    const char* rank;
    const char* launcher;
  } kLaunchers[] = {
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "mpirun"},
      {"SLURM_NTASKS", "SLURM_PROCID", "srun"},
      {"PMI_SIZE", "PMI_RANK", "pmi"},
  };
  for (const auto& l : kLaunchers) {
    Launch out;
    if (ReadInt(getenv, l.size, &out.world_size) && ReadInt(getenv, l.rank, &out.rank) &&
        out.world_size >= 1 && out.rank >= 0 && out.rank < out.world_size) {
      // sbatch alone sets SLURM_NTASKS for the batch script, which is not a
      // task of a step: only srun's SLURM_STEP_ID makes it one.
      if (std::string(l.launcher) == "srun" && getenv("SLURM_STEP_ID") == nullptr) continue;
      out.launcher = l.launcher;
      return out;
    }
  }
  return Launch{};
}

Launch DetectLaunch() {
  return DetectLaunch([](const char* name) { return std::getenv(name); });
}

}  // namespace mnt::trainer
