// mnt_precision_broken_fp8.so (tests only): the in-tree fp8 precision with
// its scaling recipe broken as $MNT_BREAK_FP8 says, so a test can show that
// the conformance suite's ABI 1.10 checks catch each way a plugin with FP8
// GEMMs can get its recipe wrong (conformance_catches_broken_fp8_test):
//   no_recipe        Precision_GetScalingRecipe NULL (MATMUL still FP8)
//   short_table      a 1.9-sized MNT_Precision_Api (the slot not there)
//   none             answers MNT_SCALING_RECIPE_NONE
//   history0         DELAYED with history_length 0
//   bf16_backward    backward_dtype BF16 (not an FP8 format)
//   accepts_unknown  ignores its options, so unknown keys pass
// Unset or empty: a faithful copy of fp8.
#include <cstdlib>
#include <cstring>
#include <string>

#include "plugins/abi/mantissa.h"
#include "plugins/precisions/precision_plugins.h"
#include "plugins/sdk/export.h"

namespace {

std::string Break() {
  const char* how = std::getenv("MNT_BREAK_FP8");
  return how != nullptr ? how : "";
}

const MNT_Precision_Api* Fp8() { return mnt::precision::Fp8PluginApi()->precision; }

MNT_Error* BrokenRecipe(MNT_Precision_GetScalingRecipe_Args* args) {
  static const std::string how = Break();
  if (how == "accepts_unknown") args->precision_options = nullptr;
  MNT_Error* e = Fp8()->Precision_GetScalingRecipe(args);
  if (e != nullptr) return e;
  if (how == "none") args->recipe = MNT_SCALING_RECIPE_NONE;
  if (how == "history0") args->history_length = 0;
  if (how == "bf16_backward") args->backward_dtype = MNT_DTYPE_BF16;
  return nullptr;
}

const MNT_Plugin_Api* BrokenFp8PluginApi() {
  static const MNT_Precision_Api precision = [] {
    MNT_Precision_Api p = *Fp8();
    const std::string how = Break();
    p.Precision_GetScalingRecipe = how == "no_recipe" ? nullptr : &BrokenRecipe;
    if (how == "short_table") p.struct_size = MNT_Precision_Api_STRUCT_SIZE_1_9;
    return p;
  }();
  static const MNT_Plugin_Api api = [] {
    MNT_Plugin_Api a = *mnt::precision::Fp8PluginApi();
    a.name = "broken_fp8";
    a.description = "fp8 with its scaling recipe broken as $MNT_BREAK_FP8 says (tests only)";
    a.precision = &precision;
    return a;
  }();
  return &api;
}

}  // namespace

MNT_EXPORT_PLUGIN(BrokenFp8PluginApi)
