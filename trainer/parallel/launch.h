// Which rank of how many this process is, as its launcher says: mpirun
// (Open MPI's OMPI_COMM_WORLD_*), Slurm's srun (SLURM_NTASKS/SLURM_PROCID)
// or a PMI launcher (PMI_SIZE/PMI_RANK). Read from the environment before
// MPI is loaded, so a one-process run never touches MPI.
#ifndef MANTISSA_TRAINER_PARALLEL_LAUNCH_H_
#define MANTISSA_TRAINER_PARALLEL_LAUNCH_H_

#include <functional>
#include <string>

namespace mnt::trainer {

struct Launch {
  int world_size = 1;
  int rank = 0;
  // This rank's index among the ranks on its machine (Open MPI's
  // OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID, MPICH's
  // MPI_LOCALRANKID); 0 when the launcher does not say. A rank on a machine
  // with several GPUs takes GPU number local_rank (DeviceOrdinalForRank).
  int local_rank = 0;
  std::string launcher;  // "mpirun", "srun", "pmi"; "" = none
};

// The device ordinal a rank asks its backend for: 0 on the CPU; on a GPU
// backend its local rank, unless CUDA_VISIBLE_DEVICES (from `getenv`)
// already narrows the process to one GPU, which is then ordinal 0.
int DeviceOrdinalForRank(const std::string& device, int local_rank,
                         const std::function<const char*(const char*)>& getenv);

// `getenv` is injectable for tests. Malformed values are treated as absent.
Launch DetectLaunch(const std::function<const char*(const char*)>& getenv);
Launch DetectLaunch();

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_LAUNCH_H_
