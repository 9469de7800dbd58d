#include "trainer/core/overflow_names.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {

absl::StatusOr<std::vector<std::string>> NonFiniteGradientParams(
    const sdk::BackendClient& client, const ParameterStore& params, const StepScalars& scalars,
    GradientSync& sync) {
  // Per piece, NONFINITE_CHECK_UNSCALE into the zeroed `correct` scalar,
  // read back.
  const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
  std::set<int64_t> flagged;  // parameter indices
  for (const ParamPiece& piece : params.steps()) {
    if (flagged.count(piece.param) != 0) continue;
    const MNT_Tensor flag = F32Scalar(scalars.correct);
    const MNT_Tensor grad = params.PieceGrad(piece);
    if (auto s = sdk::ToAbsl(client.Run(MNT_OP_FILL, {}, {flag}, &zero)); !s.ok()) return s;
    if (auto s = sdk::ToAbsl(client.Run(MNT_OP_NONFINITE_CHECK_UNSCALE,
                                        {F32Scalar(scalars.inv_scale), grad}, {flag, grad}));
        !s.ok())
      return s;
    auto found = ReadScalar<float>(client, scalars.correct.data());
    if (!found.ok()) return found.status();
    if (*found != 0) flagged.insert(piece.param);
  }
  auto all = sync.JoinFlagged(std::move(flagged));
  if (!all.ok()) return all.status();
  std::vector<std::string> names;
  for (auto i = all->rbegin(); i != all->rend(); ++i) names.push_back(params.params()[*i].name);
  return names;
}

std::string SkippedStepLine(int64_t step, const std::vector<std::string>& names) {
  const size_t more = names.size() - 1;
  return absl::StrCat(
      "step ", step, " skipped: inf/NaN in the gradient of ", names[0],
      more > 0 ? absl::StrCat(" (first reached by backward) and ", more, " more (",
                              absl::StrJoin(names.begin() + 1,
                                            names.begin() + std::min<size_t>(4, names.size()),
                                            ", "),
                              names.size() > 4 ? ", ..." : "", ")")
               : std::string(),
      "; --debug_overflow traces the op that made it");
}

}  // namespace mnt::trainer
