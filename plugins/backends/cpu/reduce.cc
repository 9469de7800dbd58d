// Reductions: BIAS_GRAD, REDUCE, GLOBAL_NORM_SQUARED and the fused non-finite
// check + unscale. Sums accumulate in double in a fixed order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

Status RunBiasGrad(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  const MNT_AccumulateParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_AccumulateParams",
                                  MNT_AccumulateParams_STRUCT_SIZE, true, &p));
  Operand dy, db;
  MNT_RETURN_IF_ERROR(call.Input(0, "dY", &dy));
  MNT_RETURN_IF_ERROR(call.Output(0, "db", &db));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dy));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(dy, 1));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(db));
  const int64_t rows = Rows(*dy), n = LastDim(*dy);
  MNT_RETURN_IF_ERROR(
      call.ExpectDims(db, 1, &n, sdk::Format("[N=%lld]", (long long)n)));
  const std::vector<float> g = ReadF32(*dy);
  std::vector<double> acc(n, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) acc[j] += g[r * n + j];
  }
  std::vector<float> result(n, 0.0f);
  if (p != nullptr && p->accumulate) result = ReadF32(*db);
  for (int64_t j = 0; j < n; ++j) result[j] += static_cast<float>(acc[j]);
  WriteF32(result.data(), *db);
  return Status::Ok();
}

Status RunReduce(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  const MNT_ReduceParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_ReduceParams", MNT_ReduceParams_STRUCT_SIZE, false, &p));
  Operand x, out;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(out));
  const std::vector<float> v = ReadF32(*x);
  if (v.empty() && p->kind != MNT_REDUCE_SUM) {
    return call.Invalid(x.label + " is empty; only SUM reduces nothing");
  }
  double result = 0.0;
  switch (p->kind) {
    case MNT_REDUCE_SUM:
    case MNT_REDUCE_MEAN:
      for (float e : v) result += e;
      if (p->kind == MNT_REDUCE_MEAN) result /= static_cast<double>(v.size());
      break;
    case MNT_REDUCE_MAX: {
      float m = v[0];
      for (float e : v) {
        if (std::isnan(e)) { m = e; break; }  // NaN propagates, as torch.max
        m = std::max(m, e);
      }
      result = m;
      break;
    }
    default:
      return call.Invalid(
          sdk::Format("unknown reduce kind %d", static_cast<int>(p->kind)));
  }
  *F32Data(*out) = static_cast<float>(result);
  return Status::Ok();
}

Status RunGlobalNormSquared(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, SIZE_MAX, 1, 1));
  Operand out;
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(out));
  double sum = 0.0;
  for (size_t i = 0; i < call.num_inputs(); ++i) {
    Operand x;
    MNT_RETURN_IF_ERROR(call.Input(i, "x", &x));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
    for (float e : ReadF32(*x)) sum += static_cast<double>(e) * e;
  }
  *F32Data(*out) = static_cast<float>(sum);
  return Status::Ok();
}

Status RunNonfiniteCheckUnscale(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, SIZE_MAX, 1, SIZE_MAX));
  if (call.num_outputs() != call.num_inputs()) {
    return call.Invalid(sdk::Format(
        "got %zu inputs and %zu outputs, expected as many outputs as inputs "
        "(found_inf + one per gradient)",
        call.num_inputs(), call.num_outputs()));
  }
  Operand inv_scale, found_inf;
  MNT_RETURN_IF_ERROR(call.Input(0, "inv_scale", &inv_scale));
  MNT_RETURN_IF_ERROR(call.Output(0, "found_inf", &found_inf));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(inv_scale));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(found_inf));
  // Check everything before writing anything.
  std::vector<Operand> grads(call.num_inputs()), outs(call.num_inputs());
  for (size_t i = 1; i < call.num_inputs(); ++i) {
    MNT_RETURN_IF_ERROR(call.Input(i, "grad", &grads[i]));
    MNT_RETURN_IF_ERROR(call.Output(i, "unscaled", &outs[i]));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(grads[i]));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(outs[i]));
    const int64_t n = sdk::NumElements(*grads[i]);
    MNT_RETURN_IF_ERROR(call.ExpectElements(
        outs[i], n, sdk::Format("%lld elements like in[%zu]", (long long)n, i)));
  }
  const float inv = *F32Data(*inv_scale);
  bool found = false;
  for (size_t i = 1; i < call.num_inputs(); ++i) {
    std::vector<float> v = ReadF32(*grads[i]);
    for (float& e : v) e = UnscaleAndCheck(e, inv, &found);
    WriteF32(v.data(), *outs[i]);
  }
  if (found) *F32Data(*found_inf) = 1.0f;
  return Status::Ok();
}

}  // namespace mnt::cpu
