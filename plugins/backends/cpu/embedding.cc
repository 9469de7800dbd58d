// Embedding lookup and its deterministic scatter-add backward: rows are
// accumulated in double in id order, so results never depend on threading.
#include <algorithm>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/parallel.h"
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
  // Row by row from the table's memory (no copy of the table).
  const int32_t* id = e.ids.i32();
  const MNT_Tensor& table = *e.table;
  const MNT_Tensor& out = *e.out;
  const int64_t c = e.c;
  const int threads = ThreadsFor(e.n * c);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> buf;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < e.n; ++i) {
      if (out.dtype == MNT_DTYPE_F32) {
        ReadF32Range(table, id[i] * c, c, static_cast<float*>(out.data) + i * c);
      } else {
        WriteF32Range(InRow(table, id[i], c, &buf), out, i * c, c);
      }
    }
  }
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
