#include "plugins/backends/common/calls/embedding.h"

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

// The [vocab, c] table (or its gradient): float, rank 2.
Status CheckTable(const OpCall& call, const Operand& table, int64_t* vocab,
                  int64_t* c) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(table));
  MNT_RETURN_IF_ERROR(call.ExpectRank(table, 2));
  *vocab = table->dims[0];
  *c = table->dims[1];
  return Status::Ok();
}

// The [n, c] operand (n = number of ids), then the ids' dtype.
Status CheckRowsAndIds(const OpCall& call, const Operand& rows, const Operand& ids,
                       int64_t n, int64_t c) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(rows));
  const int64_t dims[2] = {n, c};
  MNT_RETURN_IF_ERROR(call.ExpectDims(
      rows, 2, dims, [&] { return sdk::Format("[N=%lld, C=%lld]", (long long)n, (long long)c); }));
  return call.ExpectDType(ids, MNT_DTYPE_I32);
}

}  // namespace

Status CheckEmbeddingForward(const OpCall& call, EmbeddingForwardCall* e) {
  e->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  MNT_RETURN_IF_ERROR(call.Input(0, "table", &e->table));
  MNT_RETURN_IF_ERROR(call.Input(1, "ids", &e->ids));
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &e->out));
  MNT_RETURN_IF_ERROR(CheckTable(call, e->table, &e->vocab, &e->c));
  e->n = sdk::NumElements(*e->ids);
  return CheckRowsAndIds(call, e->out, e->ids, e->n, e->c);
}

Status CheckEmbeddingBackward(const OpCall& call, EmbeddingBackwardCall* e) {
  e->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_AccumulateParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_AccumulateParams",
                                  MNT_AccumulateParams_STRUCT_SIZE, true, &p));
  e->accumulate = p != nullptr && p->accumulate;
  MNT_RETURN_IF_ERROR(call.Input(0, "dout", &e->dout));
  MNT_RETURN_IF_ERROR(call.Input(1, "ids", &e->ids));
  MNT_RETURN_IF_ERROR(call.Output(0, "dtable", &e->dtable));
  MNT_RETURN_IF_ERROR(CheckTable(call, e->dtable, &e->vocab, &e->c));
  e->n = sdk::NumElements(*e->ids);
  return CheckRowsAndIds(call, e->dout, e->ids, e->n, e->c);
}

}  // namespace mnt::backend
