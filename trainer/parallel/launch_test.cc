#include "trainer/parallel/launch.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

Launch From(const std::map<std::string, std::string>& env) {
  return DetectLaunch([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(DetectLaunchTest, OneProcessWithoutALauncher) {
  const Launch l = From({});
  EXPECT_EQ(l.world_size, 1);
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.launcher, "");
}

TEST(DetectLaunchTest, Mpirun) {
  const Launch l = From({{"OMPI_COMM_WORLD_SIZE", "3"}, {"OMPI_COMM_WORLD_RANK", "2"}});
  EXPECT_EQ(l.world_size, 3);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.launcher, "mpirun");
}

TEST(DetectLaunchTest, SrunButNotAnSbatchScript) {
  const Launch step =
      From({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "1"}, {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(step.world_size, 4);
  EXPECT_EQ(step.rank, 1);
  EXPECT_EQ(step.launcher, "srun");
  // The batch script itself is no task of a step.
  EXPECT_EQ(From({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}}).world_size, 1);
}

TEST(DetectLaunchTest, MalformedValuesAreIgnored) {
  EXPECT_EQ(From({{"OMPI_COMM_WORLD_SIZE", "two"}, {"OMPI_COMM_WORLD_RANK", "0"}}).world_size, 1);
  EXPECT_EQ(From({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "2"}}).world_size, 1);
  EXPECT_EQ(From({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}}).launcher, "pmi");
}

TEST(DetectLaunchTest, LocalRankFromEachLauncher) {
  EXPECT_EQ(From({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}})
                .local_rank,
            1);
  EXPECT_EQ(From({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "2"}, {"SLURM_STEP_ID", "0"},
                  {"SLURM_LOCALID", "0"}})
                .local_rank,
            0);
  EXPECT_EQ(From({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}, {"MPI_LOCALRANKID", "1"}}).local_rank, 1);
  // Not said, or malformed: 0.
  EXPECT_EQ(From({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}}).local_rank, 0);
  EXPECT_EQ(From({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "-1"}})
                .local_rank,
            0);
}

TEST(DeviceOrdinalForRankTest, GpuOfTheLocalRankUnlessNarrowedToOne) {
  auto env = [](const char* visible) {
    return [visible](const char* name) -> const char* {
      return std::string(name) == "CUDA_VISIBLE_DEVICES" ? visible : nullptr;
    };
  };
  EXPECT_EQ(DeviceOrdinalForRank("cpu", 3, env(nullptr)), 0);
  EXPECT_EQ(DeviceOrdinalForRank("cuda", 3, env(nullptr)), 3);
  EXPECT_EQ(DeviceOrdinalForRank("cuda", 1, env("0,1,2,3")), 1);
  EXPECT_EQ(DeviceOrdinalForRank("cuda", 1, env("2")), 0);
  EXPECT_EQ(DeviceOrdinalForRank("cuda", 1, env("")), 1);
}

}  // namespace
}  // namespace mnt::trainer
