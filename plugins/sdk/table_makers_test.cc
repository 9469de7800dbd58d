// The SDK's table makers (export.h): every call a plugin of the kind must
// have is the one given, every optional member is NULL ("not offered"), and
// struct_size is where the table ends for the minor the source is built
// for. BUILD compiles this file again as a 1.0 and a 1.5 source
// (-DMNT_ABI_SOURCE_MINOR), so the makers are checked against the shorter
// tables such a rebuilt source sees.
#include <cstddef>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/export.h"

namespace mnt::sdk {
namespace {

// One distinct call per Args type; never called.
template <typename Args>
MNT_Error* Call(Args*) {
  return nullptr;
}

// Bytes each table ends at for the minor this file is built for (8-byte
// pointers): 1.0 tables, then what 1.1 (events), 1.5 (recipe), 1.7 (step
// markers) and 1.10 (scaling recipe) appended.
constexpr size_t kPointer = sizeof(void*);
constexpr size_t kPrecisionEnd = kPointer * (10 + (MNT_ABI_MINOR >= 5) + (MNT_ABI_MINOR >= 10));
constexpr size_t kBackendEnd = kPointer * (13 + 4 * (MNT_ABI_MINOR >= 1) + 2 * (MNT_ABI_MINOR >= 7));
constexpr size_t kModelEnd = kPointer * 8;

TEST(TableMakersTest, PrecisionHasItsCallsAndNothingElse) {
  const MNT_Precision_Api api = MakePrecisionApi(
      &Call<MNT_Precision_GetPolicy_Args>, &Call<MNT_Precision_GetOpClassPolicy_Args>,
      &Call<MNT_Precision_GetMemoryPlan_Args>, &Call<MNT_LossScaler_Create_Args>,
      &Call<MNT_LossScaler_Destroy_Args>, &Call<MNT_LossScaler_GetState_Args>,
      &Call<MNT_LossScaler_SetState_Args>, &Call<MNT_LossScaler_Update_Args>);
  EXPECT_EQ(api.struct_size, kPrecisionEnd);
  EXPECT_EQ(sizeof(api), kPrecisionEnd) << "the table ends where its minor's ended";
  EXPECT_EQ(api.extension_start, nullptr);
  EXPECT_EQ(api.Precision_GetPolicy, &Call<MNT_Precision_GetPolicy_Args>);
  EXPECT_EQ(api.Precision_GetOpClassPolicy, &Call<MNT_Precision_GetOpClassPolicy_Args>);
  EXPECT_EQ(api.Precision_GetMemoryPlan, &Call<MNT_Precision_GetMemoryPlan_Args>);
  EXPECT_EQ(api.LossScaler_Create, &Call<MNT_LossScaler_Create_Args>);
  EXPECT_EQ(api.LossScaler_Destroy, &Call<MNT_LossScaler_Destroy_Args>);
  EXPECT_EQ(api.LossScaler_GetState, &Call<MNT_LossScaler_GetState_Args>);
  EXPECT_EQ(api.LossScaler_SetState, &Call<MNT_LossScaler_SetState_Args>);
  EXPECT_EQ(api.LossScaler_Update, &Call<MNT_LossScaler_Update_Args>);
#if MNT_ABI_MINOR >= 5
  EXPECT_EQ(api.LossScaler_GetRecipe, nullptr);
#endif
#if MNT_ABI_MINOR >= 10
  EXPECT_EQ(api.Precision_GetScalingRecipe, nullptr);
#endif
}

TEST(TableMakersTest, ModelHasItsCalls) {
  const MNT_Model_Api api = MakeModelApi(
      &Call<MNT_Model_Create_Args>, &Call<MNT_Model_Destroy_Args>,
      &Call<MNT_Model_GetParamCount_Args>, &Call<MNT_Model_GetParamSpec_Args>,
      &Call<MNT_Model_Forward_Args>, &Call<MNT_Model_Backward_Args>);
  EXPECT_EQ(api.struct_size, kModelEnd);
  EXPECT_EQ(sizeof(api), kModelEnd);
  EXPECT_EQ(api.extension_start, nullptr);
  EXPECT_EQ(api.Model_Create, &Call<MNT_Model_Create_Args>);
  EXPECT_EQ(api.Model_Destroy, &Call<MNT_Model_Destroy_Args>);
  EXPECT_EQ(api.Model_GetParamCount, &Call<MNT_Model_GetParamCount_Args>);
  EXPECT_EQ(api.Model_GetParamSpec, &Call<MNT_Model_GetParamSpec_Args>);
  EXPECT_EQ(api.Model_Forward, &Call<MNT_Model_Forward_Args>);
  EXPECT_EQ(api.Model_Backward, &Call<MNT_Model_Backward_Args>);
}

TEST(TableMakersTest, BackendHasItsCallsAndNothingElse) {
  const MNT_Backend_Api api = MakeBackendApi(
      &Call<MNT_Backend_Create_Args>, &Call<MNT_Backend_Destroy_Args>,
      &Call<MNT_Backend_GetInfo_Args>, &Call<MNT_Memory_Allocate_Args>,
      &Call<MNT_Memory_Free_Args>, &Call<MNT_Memory_Copy_Args>,
      &Call<MNT_Memory_GetStats_Args>, &Call<MNT_Memory_ResetPeak_Args>,
      &Call<MNT_Backend_Synchronize_Args>, &Call<MNT_Backend_GetOpSupport_Args>,
      &Call<MNT_Backend_Run_Args>);
  EXPECT_EQ(api.struct_size, kBackendEnd);
  EXPECT_EQ(sizeof(api), kBackendEnd);
  EXPECT_EQ(api.extension_start, nullptr);
  EXPECT_EQ(api.Backend_Create, &Call<MNT_Backend_Create_Args>);
  EXPECT_EQ(api.Backend_Destroy, &Call<MNT_Backend_Destroy_Args>);
  EXPECT_EQ(api.Backend_GetInfo, &Call<MNT_Backend_GetInfo_Args>);
  EXPECT_EQ(api.Memory_Allocate, &Call<MNT_Memory_Allocate_Args>);
  EXPECT_EQ(api.Memory_Free, &Call<MNT_Memory_Free_Args>);
  EXPECT_EQ(api.Memory_Copy, &Call<MNT_Memory_Copy_Args>);
  EXPECT_EQ(api.Memory_GetStats, &Call<MNT_Memory_GetStats_Args>);
  EXPECT_EQ(api.Memory_ResetPeak, &Call<MNT_Memory_ResetPeak_Args>);
  EXPECT_EQ(api.Backend_Synchronize, &Call<MNT_Backend_Synchronize_Args>);
  EXPECT_EQ(api.Backend_GetOpSupport, &Call<MNT_Backend_GetOpSupport_Args>);
  EXPECT_EQ(api.Backend_Run, &Call<MNT_Backend_Run_Args>);
#if MNT_ABI_MINOR >= 1
  EXPECT_EQ(api.Event_Create, nullptr);
  EXPECT_EQ(api.Event_Record, nullptr);
  EXPECT_EQ(api.Event_ElapsedTime, nullptr);
  EXPECT_EQ(api.Event_Destroy, nullptr);
#endif
#if MNT_ABI_MINOR >= 7
  EXPECT_EQ(api.Backend_StepBegin, nullptr);
  EXPECT_EQ(api.Backend_StepEnd, nullptr);
#endif
}

// The optional calls are set by name on the result, which is what keeps a
// source complete when a later minor appends a member.
TEST(TableMakersTest, OptionalCallsAreSetByName) {
  MNT_Precision_Api api = MakePrecisionApi(nullptr, nullptr, nullptr, nullptr, nullptr,
                                           nullptr, nullptr, nullptr);
#if MNT_ABI_MINOR >= 5
  api.LossScaler_GetRecipe = &Call<MNT_LossScaler_GetRecipe_Args>;
  EXPECT_EQ(api.LossScaler_GetRecipe, &Call<MNT_LossScaler_GetRecipe_Args>);
#endif
  EXPECT_EQ(api.struct_size, kPrecisionEnd);
}

}  // namespace
}  // namespace mnt::sdk
