// Embedding lookup and its deterministic scatter-add backward: rows are
// accumulated in double in id order, so results never depend on threading.
#include <algorithm>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Every id indexes a row of the [vocab, C] table; checked before anything
// is written.
Status CheckIdRange(const backend::TypedCall& c, const Operand& ids, int64_t n,
                    int64_t vocab) {
  const int32_t* id = ids.i32();
  for (int64_t i = 0; i < n; ++i) {
    if (id[i] < 0 || id[i] >= vocab) {
      return c.Invalid(sdk::Format("%s[%lld] = %d is outside [0, V=%lld)",
                                   ids.label.c_str(), (long long)i, id[i],
                                   (long long)vocab));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CpuBackend::EmbeddingForward(const backend::EmbeddingForwardCall& e) {
  MNT_RETURN_IF_ERROR(CheckIdRange(e, e.ids, e.n, e.vocab));
  const std::vector<float> table = ReadF32(*e.table);
  std::vector<float> out(e.n * e.c);
  const int32_t* id = e.ids.i32();
  for (int64_t i = 0; i < e.n; ++i) {
    std::copy(table.begin() + id[i] * e.c, table.begin() + (id[i] + 1) * e.c,
              out.begin() + i * e.c);
  }
  WriteF32(out.data(), *e.out);
  return Status::Ok();
}

Status CpuBackend::EmbeddingBackward(const backend::EmbeddingBackwardCall& e) {
  MNT_RETURN_IF_ERROR(CheckIdRange(e, e.ids, e.n, e.vocab));
  std::vector<double> acc(e.vocab * e.c, 0.0);
  if (e.accumulate) {
    const std::vector<float> old = ReadF32(*e.dtable);
    std::copy(old.begin(), old.end(), acc.begin());
  }
  const std::vector<float> g = ReadF32(*e.dout);
  const int32_t* id = e.ids.i32();
  for (int64_t i = 0; i < e.n; ++i) {
    double* row = acc.data() + id[i] * e.c;
    for (int64_t j = 0; j < e.c; ++j) row[j] += g[i * e.c + j];
  }
  std::vector<float> result(acc.begin(), acc.end());
  WriteF32(result.data(), *e.dtable);
  return Status::Ok();
}

}  // namespace mnt::cpu
