// Embedding lookup and its deterministic scatter-add backward: rows are
// accumulated in double in id order, so results never depend on threading.
#include <algorithm>
#include <vector>

#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// ids I32 (any shape) must index rows of a [V, C] table.
Status CheckIds(const OpCall& call, const Operand& ids, int64_t vocab) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(ids, MNT_DTYPE_I32));
  const int32_t* id = I32Data(*ids);
  const int64_t n = sdk::NumElements(*ids);
  for (int64_t i = 0; i < n; ++i) {
    if (id[i] < 0 || id[i] >= vocab) {
      return call.Invalid(sdk::Format("%s[%lld] = %d is outside [0, V=%lld)",
                                      ids.label.c_str(), (long long)i, id[i],
                                      (long long)vocab));
    }
  }
  return Status::Ok();
}

// The [N, C] operand: N = number of ids, C = the table's width.
Status CheckRowsOperand(const OpCall& call, const Operand& t, int64_t n,
                        int64_t c) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  const int64_t dims[2] = {n, c};
  return call.ExpectDims(t, 2, dims, sdk::Format("[N=%lld, C=%lld]",
                                                 (long long)n, (long long)c));
}

}  // namespace

Status RunEmbeddingForward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  Operand table, ids, out;
  MNT_RETURN_IF_ERROR(call.Input(0, "table", &table));
  MNT_RETURN_IF_ERROR(call.Input(1, "ids", &ids));
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(table));
  MNT_RETURN_IF_ERROR(call.ExpectRank(table, 2));
  const int64_t vocab = table->dims[0], c = table->dims[1];
  const int64_t n = sdk::NumElements(*ids);
  MNT_RETURN_IF_ERROR(CheckRowsOperand(call, out, n, c));
  MNT_RETURN_IF_ERROR(CheckIds(call, ids, vocab));
  const std::vector<float> tv = ReadF32(*table);
  std::vector<float> ov(n * c);
  const int32_t* id = I32Data(*ids);
  for (int64_t i = 0; i < n; ++i) {
    std::copy(tv.begin() + id[i] * c, tv.begin() + (id[i] + 1) * c,
              ov.begin() + i * c);
  }
  WriteF32(ov.data(), *out);
  return Status::Ok();
}

Status RunEmbeddingBackward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_AccumulateParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_AccumulateParams",
                                  MNT_AccumulateParams_STRUCT_SIZE, true, &p));
  Operand dout, ids, dtable;
  MNT_RETURN_IF_ERROR(call.Input(0, "dout", &dout));
  MNT_RETURN_IF_ERROR(call.Input(1, "ids", &ids));
  MNT_RETURN_IF_ERROR(call.Output(0, "dtable", &dtable));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dtable));
  MNT_RETURN_IF_ERROR(call.ExpectRank(dtable, 2));
  const int64_t vocab = dtable->dims[0], c = dtable->dims[1];
  const int64_t n = sdk::NumElements(*ids);
  MNT_RETURN_IF_ERROR(CheckRowsOperand(call, dout, n, c));
  MNT_RETURN_IF_ERROR(CheckIds(call, ids, vocab));
  const bool accumulate = p != nullptr && p->accumulate;
  std::vector<double> acc(vocab * c, 0.0);
  if (accumulate) {
    const std::vector<float> old = ReadF32(*dtable);
    std::copy(old.begin(), old.end(), acc.begin());
  }
  const std::vector<float> g = ReadF32(*dout);
  const int32_t* id = I32Data(*ids);
  for (int64_t i = 0; i < n; ++i) {
    double* row = acc.data() + id[i] * c;
    for (int64_t j = 0; j < c; ++j) row[j] += g[i * c + j];
  }
  std::vector<float> result(acc.begin(), acc.end());
  WriteF32(result.data(), *dtable);
  return Status::Ok();
}

}  // namespace mnt::cpu
