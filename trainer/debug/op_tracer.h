// --debug_overflow: which op first made an inf or NaN, and what the ops
// before it saw. The model is handed a copy of the backend plugin's table
// whose Backend_Run measures every float operand (inputs before the real op,
// which may write in place, outputs after it) and runs the real op. Where
// the backend has MNT_OP_TENSOR_STATS (ABI 1.10; asked once), each operand
// is measured on the device by that op, run through the real backend's
// Backend_Run into a small device buffer the tracer owns, and one
// device-to-host copy per traced op reads 16 bytes per operand back; a
// backend without it gets the host path: every operand copied to the host
// and measured there (tensor_stats.h; the same numbers). A debugging mode,
// slow by design (a sync per op), and nothing of it exists without the
// flag. The last `history` ops are kept
// with each operand's abs-min/abs-max; the first op with an inf/NaN output
// trips the tracer, after which ops run untraced. Operands are named by the
// parameter buffers they lie in ("layer1.weight", "grad of layer1.weight"),
// by the data buffers named to it ("inputs", "targets", and the model's
// device copies of them), else "activation" (a float tensor) or "indices"
// (an integer one). An op's layer is a parameter's name without its last
// part ("layer1.weight" -> "layer1"), of the first parameter among its
// operands; an op without parameters (an activation, a residual add, a
// loss, a backward through an activation) belongs to the layer of the op
// that wrote the most recently written of its inputs (in this pass or the
// forward before; a device copy keeps its source's); else it is "after"
// the last layer of the pass.
//
// One OpTracer at a time per process (the table's entry points carry no
// state); not thread-safe, as a backend instance.
#ifndef MANTISSA_TRAINER_DEBUG_OP_TRACER_H_
#define MANTISSA_TRAINER_DEBUG_OP_TRACER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "trainer/debug/tensor_stats.h"

namespace mnt::trainer {

class OpTracer {
 public:
  // `real`: the backend the run uses (outlives this object). Fails when
  // another OpTracer is alive.
  static absl::StatusOr<std::unique_ptr<OpTracer>> Create(const sdk::BackendClient& real,
                                                          int history = 20);
  ~OpTracer();
  OpTracer(const OpTracer&) = delete;
  OpTracer& operator=(const OpTracer&) = delete;

  // What the model is created with instead of the real backend.
  const sdk::BackendClient& client() const { return client_; }

  // Names a parameter's device range [data, data + bytes) for the report
  // ("layer1.weight", "grad of layer1.weight").
  void Name(const void* data, size_t bytes, const std::string& name);
  // Names a data range that is no parameter ("inputs", "targets"); a device
  // copy of it takes the name too.
  void NameData(const void* data, size_t bytes, const std::string& name);
  // Ops from now on belong to `phase` ("forward", "backward") of `step`.
  void BeginPhase(int64_t step, const std::string& phase);

  // Whether operands are measured on the device (TENSOR_STATS), not copied
  // to the host.
  bool measures_on_device() const { return device_stats_; }

  bool tripped() const { return tripped_; }
  // One line: phase, op, layer and parameters, what went non-finite (the
  // caller says the step).
  std::string Summary() const;
  // The last ops up to and including the tripping one, a few lines each.
  std::string Report() const;

 private:
  struct Operand {
    std::string name;
    bool parameter = false;  // in a range named with Name()
    MNT_DType dtype = MNT_DTYPE_INVALID;
    TensorStats stats;
  };
  // A named device range.
  struct Range {
    size_t bytes;
    std::string name;
    int64_t writer = 0;  // writers_: the op that wrote it (traced_ then)
  };
  struct OpRecord {
    int64_t index = 0;  // ops traced so far, from 1
    int64_t step = 0;
    std::string phase;
    MNT_Op op = MNT_OP_INVALID;
    std::vector<Operand> inputs, outputs;
    std::string layer;  // of the first parameter among the operands, or ""
  };

  // An operand measured on the device, read back after the op.
  struct Pending {
    Operand* operand;
    int64_t elements;
    size_t slot;  // its 16 bytes in stats_
  };

  OpTracer(const sdk::BackendClient& real, int history);
  static MNT_Error* Run(MNT_Backend_Run_Args* args);
  static MNT_Error* Copy(MNT_Memory_Copy_Args* args);
  // The range of `ranges` that holds `data`, or NULL.
  static const Range* Find(const std::map<uintptr_t, Range>& ranges, const void* data);
  // Name and dtype; stats still unmeasured.
  Operand Describe(const MNT_Tensor& t) const;
  // The layer of `r` (see the file comment); "" when it has none.
  std::string LayerOf(const OpRecord& r, const std::vector<const void*>& inputs) const;
  // Measures `t` into `o`: with `pending` (the device path) TENSOR_STATS
  // into the next slot of stats_, read by ReadPending; without it, or when
  // the op fails, from a host copy.
  void Measure(const MNT_Tensor& t, Operand* o, std::vector<Pending>* pending);
  void MeasureOnHost(const MNT_Tensor& t, Operand* o) const;
  // The pending operands' 16 bytes each, in one device-to-host copy.
  void ReadPending(const std::vector<Pending>& pending);
  // stats_ holds at least `slots` slots of 16 bytes.
  bool EnsureSlots(size_t slots);
  void Record(OpRecord record, const std::vector<const void*>& inputs,
              const std::vector<std::pair<const void*, size_t>>& outputs);

  static OpTracer* active_;

  const sdk::BackendClient& real_;
  MNT_Backend_Api api_{};
  MNT_Plugin_Api plugin_{};
  sdk::BackendClient client_;
  const int history_;
  // By start address: parameters, data, and the layer that last wrote
  // each activation range.
  std::map<uintptr_t, Range> names_, data_names_, writers_;
  std::deque<OpRecord> last_;
  int64_t step_ = 0;
  std::string phase_;
  int64_t traced_ = 0;
  bool tripped_ = false;
  std::string last_layer_;
  bool device_stats_ = false;  // the backend reports TENSOR_STATS
  sdk::DeviceBuffer stats_;    // range F32 [2] + counts I32 [2] per slot
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_DEBUG_OP_TRACER_H_
