// SOFTMAX, CROSS_ENTROPY, COUNT_CORRECT, LAYERNORM_*, EMBEDDING_*, BIAS_GRAD:
// the CPU backend's operand checks, then row kernels. Checks that need
// device data (target / id ranges) run on the device and are reported at the
// next sync point (Backend_Synchronize or a device-to-host copy).
#include "plugins/backends/cuda/ops.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

float* F32(const Operand& o) { return static_cast<float*>(o->data); }
const int32_t* I32(const Operand& o) { return static_cast<const int32_t*>(o->data); }

Status CheckLogitsAndTargets(const OpCall& call, const Operand& logits,
                             const Operand& targets, int64_t requested_classes,
                             int64_t* num_classes) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(logits));
  MNT_RETURN_IF_ERROR(call.ExpectRank(logits, 2));
  MNT_RETURN_IF_ERROR(call.ExpectDType(targets, MNT_DTYPE_I32));
  const int64_t batch = logits->dims[0], width = logits->dims[1];
  MNT_RETURN_IF_ERROR(call.ExpectDims(
      targets, 1, &batch, sdk::Format("[B=%lld]", (long long)batch)));
  if (requested_classes < 0 || requested_classes > width) {
    return call.Invalid(sdk::Format(
        "num_classes %lld is outside [0, %lld] (%s's last dim)",
        (long long)requested_classes, (long long)width, logits.label.c_str()));
  }
  *num_classes = requested_classes == 0 ? width : requested_classes;
  if (*num_classes == 0 && batch > 0) {
    return call.Invalid(logits.label + " has no classes");
  }
  return Status::Ok();
}

Status CheckRowVector(const OpCall& call, const Operand& t, int64_t length,
                      const char* what) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  return call.ExpectDims(t, 1, &length,
                         sdk::Format("[%s=%lld]", what, (long long)length));
}

Status CheckStats(const OpCall& call, const Operand& t, int64_t rows) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  return call.ExpectDims(t, 1, &rows, sdk::Format("f32[N=%lld]", (long long)rows));
}

Status CheckRowsOperand(const OpCall& call, const Operand& t, int64_t n,
                        int64_t c) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  const int64_t dims[2] = {n, c};
  return call.ExpectDims(t, 2, dims, sdk::Format("[N=%lld, C=%lld]",
                                                 (long long)n, (long long)c));
}

bool Accumulate(const OpCall& call, Status* status) {
  const MNT_AccumulateParams* p;
  *status = call.Params("MNT_AccumulateParams",
                        MNT_AccumulateParams_STRUCT_SIZE, true, &p);
  return status->ok() && p != nullptr && p->accumulate;
}

}  // namespace

Status RunSoftmax(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  Operand x, y;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 1));
  MNT_RETURN_IF_ERROR(call.ExpectDims(y, x->rank, x->dims, sdk::Describe(*x)));
  return Launched(call, LaunchSoftmax(b.stream, Dev(x), Dev(y), Rows(*x), LastDim(*x)),
                  "softmax");
}

Status RunCrossEntropy(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 2));
  const MNT_CrossEntropyParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_CrossEntropyParams",
                                  MNT_CrossEntropyParams_STRUCT_SIZE, false, &p));
  Operand logits, targets, losses;
  MNT_RETURN_IF_ERROR(call.Input(0, "logits", &logits));
  MNT_RETURN_IF_ERROR(call.Input(1, "targets", &targets));
  MNT_RETURN_IF_ERROR(call.Output(0, "losses", &losses));
  const Operand dlogits = call.OptionalOutput(1, "dlogits");
  int64_t classes;
  MNT_RETURN_IF_ERROR(
      CheckLogitsAndTargets(call, logits, targets, p->num_classes, &classes));
  const int64_t batch = logits->dims[0], width = logits->dims[1];
  MNT_RETURN_IF_ERROR(call.ExpectDType(losses, MNT_DTYPE_F32));
  MNT_RETURN_IF_ERROR(call.ExpectDims(losses, 1, &batch,
                                     sdk::Format("f32[B=%lld]", (long long)batch)));
  if (dlogits.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(dlogits));
    MNT_RETURN_IF_ERROR(
        call.ExpectDims(dlogits, 2, logits->dims, sdk::Describe(*logits)));
  }
  return Launched(call,
                  LaunchCrossEntropy(b.stream, Dev(logits), I32(targets), F32(losses),
                                     Dev(dlogits), batch, width, classes,
                                     p->grad_scale, b.error_word),
                  "cross_entropy");
}

Status RunCountCorrect(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_CrossEntropyParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_CrossEntropyParams",
                                  MNT_CrossEntropyParams_STRUCT_SIZE, false, &p));
  Operand logits, targets, count;
  MNT_RETURN_IF_ERROR(call.Input(0, "logits", &logits));
  MNT_RETURN_IF_ERROR(call.Input(1, "targets", &targets));
  MNT_RETURN_IF_ERROR(call.Output(0, "count", &count));
  int64_t classes;
  MNT_RETURN_IF_ERROR(
      CheckLogitsAndTargets(call, logits, targets, p->num_classes, &classes));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(count));
  return Launched(call,
                  LaunchCountCorrect(b.stream, Dev(logits), I32(targets), F32(count),
                                     logits->dims[0], logits->dims[1], classes),
                  "count_correct");
}

Status RunLayerNormForward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(3, 3, 3, 3));
  const MNT_LayerNormParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_LayerNormParams",
                                  MNT_LayerNormParams_STRUCT_SIZE, false, &p));
  Operand x, w, bias, y, mean, rstd;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(1, "weight", &w));
  MNT_RETURN_IF_ERROR(call.Input(2, "bias", &bias));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.Output(1, "mean", &mean));
  MNT_RETURN_IF_ERROR(call.Output(2, "rstd", &rstd));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 2));
  const int64_t rows = Rows(*x), c = LastDim(*x);
  MNT_RETURN_IF_ERROR(CheckRowVector(call, w, c, "C"));
  MNT_RETURN_IF_ERROR(CheckRowVector(call, bias, c, "C"));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  MNT_RETURN_IF_ERROR(call.ExpectDims(y, x->rank, x->dims, sdk::Describe(*x)));
  MNT_RETURN_IF_ERROR(CheckStats(call, mean, rows));
  MNT_RETURN_IF_ERROR(CheckStats(call, rstd, rows));
  if (c == 0) return call.Invalid(x.label + " has an empty last dimension");
  return Launched(call,
                  LaunchLayerNormForward(b.stream, Dev(x), Dev(w), Dev(bias), Dev(y),
                                         F32(mean), F32(rstd), rows, c, p->epsilon),
                  "layernorm_forward");
}

Status RunLayerNormBackward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(5, 5, 3, 3));
  const MNT_LayerNormParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_LayerNormParams",
                                  MNT_LayerNormParams_STRUCT_SIZE, false, &p));
  Operand dy, x, w, mean, rstd, dx, dw, db;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(2, "weight", &w));
  MNT_RETURN_IF_ERROR(call.Input(3, "mean", &mean));
  MNT_RETURN_IF_ERROR(call.Input(4, "rstd", &rstd));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &dx));
  MNT_RETURN_IF_ERROR(call.Output(1, "dweight", &dw));
  MNT_RETURN_IF_ERROR(call.Output(2, "dbias", &db));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 2));
  const int64_t rows = Rows(*x), c = LastDim(*x);
  for (const Operand* t : {&dy, &dx}) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(*t));
    MNT_RETURN_IF_ERROR(call.ExpectDims(*t, x->rank, x->dims, sdk::Describe(*x)));
  }
  for (const Operand* t : {&w, &dw, &db}) {
    MNT_RETURN_IF_ERROR(CheckRowVector(call, *t, c, "C"));
  }
  MNT_RETURN_IF_ERROR(CheckStats(call, mean, rows));
  MNT_RETURN_IF_ERROR(CheckStats(call, rstd, rows));
  if (c == 0) return call.Invalid(x.label + " has an empty last dimension");
  // Parameter gradients first: dx may alias dy (not promised by the ABI, but
  // cheap to keep safe).
  Scratch partials(b);
  MNT_RETURN_IF_ERROR(
      partials.Allocate(sizeof(double) * 2 * ColumnSumChunks(rows) * c));
  MNT_RETURN_IF_ERROR(Launched(
      call,
      LaunchLayerNormParamGrads(b.stream, Dev(dy), Dev(x), F32(mean), F32(rstd),
                                Dev(dw), Dev(db), rows, c, p->accumulate != 0,
                                static_cast<double*>(partials.data())),
      "layernorm_param_grads"));
  return Launched(call,
                  LaunchLayerNormBackwardInput(b.stream, Dev(dy), Dev(x), Dev(w),
                                               F32(mean), F32(rstd), Dev(dx), rows, c),
                  "layernorm_backward_input");
}

Status RunEmbeddingForward(CudaBackend& b, const OpCall& call) {
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
  MNT_RETURN_IF_ERROR(call.ExpectDType(ids, MNT_DTYPE_I32));
  return Launched(call,
                  LaunchEmbeddingForward(b.stream, Dev(table), I32(ids), Dev(out), n,
                                         vocab, c, b.error_word),
                  "embedding_forward");
}

Status RunEmbeddingBackward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  Status params_status;
  const bool accumulate = Accumulate(call, &params_status);
  MNT_RETURN_IF_ERROR(params_status);
  Operand dout, ids, dtable;
  MNT_RETURN_IF_ERROR(call.Input(0, "dout", &dout));
  MNT_RETURN_IF_ERROR(call.Input(1, "ids", &ids));
  MNT_RETURN_IF_ERROR(call.Output(0, "dtable", &dtable));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dtable));
  MNT_RETURN_IF_ERROR(call.ExpectRank(dtable, 2));
  const int64_t vocab = dtable->dims[0], c = dtable->dims[1];
  const int64_t n = sdk::NumElements(*ids);
  MNT_RETURN_IF_ERROR(CheckRowsOperand(call, dout, n, c));
  MNT_RETURN_IF_ERROR(call.ExpectDType(ids, MNT_DTYPE_I32));
  return Launched(call,
                  LaunchEmbeddingBackward(b.stream, Dev(dout), I32(ids), Dev(dtable),
                                          n, vocab, c, accumulate, b.error_word),
                  "embedding_backward");
}

Status RunBiasGrad(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  Status params_status;
  const bool accumulate = Accumulate(call, &params_status);
  MNT_RETURN_IF_ERROR(params_status);
  Operand dy, db;
  MNT_RETURN_IF_ERROR(call.Input(0, "dY", &dy));
  MNT_RETURN_IF_ERROR(call.Output(0, "db", &db));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dy));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(dy, 1));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(db));
  const int64_t rows = Rows(*dy), n = LastDim(*dy);
  MNT_RETURN_IF_ERROR(
      call.ExpectDims(db, 1, &n, sdk::Format("[N=%lld]", (long long)n)));
  if (n == 0) return Status::Ok();
  Scratch partials(b);
  MNT_RETURN_IF_ERROR(
      partials.Allocate(sizeof(double) * 2 * ColumnSumChunks(rows) * n));
  return Launched(call,
                  LaunchBiasGrad(b.stream, Dev(dy), Dev(db), rows, n, accumulate,
                                 static_cast<double*>(partials.data())),
                  "bias_grad");
}

}  // namespace mnt::cuda
