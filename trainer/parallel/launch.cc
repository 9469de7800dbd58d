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
    const char* local_rank;
    const char* launcher;
  } kLaunchers[] = {
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "mpirun"},
      {"SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "srun"},
      {"PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "pmi"},
  };
  for (const auto& l : kLaunchers) {
    Launch out;
    if (ReadInt(getenv, l.size, &out.world_size) && ReadInt(getenv, l.rank, &out.rank) &&
        out.world_size >= 1 && out.rank >= 0 && out.rank < out.world_size) {
      // sbatch alone sets SLURM_NTASKS for the batch script, which is not a
      // task of a step: only srun's SLURM_STEP_ID makes it one.
      if (std::string(l.launcher) == "srun" && getenv("SLURM_STEP_ID") == nullptr) continue;
      out.launcher = l.launcher;
      if (!ReadInt(getenv, l.local_rank, &out.local_rank) || out.local_rank < 0) {
        out.local_rank = 0;
      }
      return out;
    }
  }
  return Launch{};
}

int DeviceOrdinalForRank(const std::string& device, int local_rank,
                         const std::function<const char*(const char*)>& getenv) {
  if (device == "cpu") return 0;
  const char* visible = getenv("CUDA_VISIBLE_DEVICES");
  if (visible != nullptr && *visible != '\0' && std::string(visible).find(',') == std::string::npos) {
    return 0;
  }
  return local_rank;
}

Launch DetectLaunch() {
  return DetectLaunch([](const char* name) { return std::getenv(name); });
}

}  // namespace mnt::trainer
