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
  std::string launcher;  // "mpirun", "srun", "pmi"; "" = none
};

// `getenv` is injectable for tests. Malformed values are treated as absent.
Launch DetectLaunch(const std::function<const char*(const char*)>& getenv);
Launch DetectLaunch();

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_LAUNCH_H_
