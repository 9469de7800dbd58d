// Where training batches come from: a dataset in host memory seen as
// examples that can be gathered into a batch for the model's DataSpec.
#ifndef MANTISSA_TRAINER_CORE_BATCH_SOURCE_H_
#define MANTISSA_TRAINER_CORE_BATCH_SOURCE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "plugins/abi/mnt_model.h"
#include "trainer/data/dataset.h"

namespace mnt::trainer {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual MNT_DataSpec spec() const = 0;
  virtual int64_t size() const = 0;  // number of examples
  // Gathers the examples into host buffers laid out as the model expects:
  // inputs [B, input_dims...] of spec().input_dtype, targets I32
  // [B, targets_per_example].
  virtual void Gather(const std::vector<int64_t>& indices,
                      std::vector<uint8_t>* inputs,
                      std::vector<int32_t>* targets) const = 0;
  size_t InputBytesPerExample() const;
};

// Feature vectors with one class label each (digits, IDX images).
std::unique_ptr<BatchSource> MakeClassificationSource(ClassificationData data);

// Byte-level language modelling: example i is the window of seq_len tokens
// starting at i*seq_len, its targets the same window shifted by one.
std::unique_ptr<BatchSource> MakeTokenWindowSource(TokenData data,
                                                   int64_t seq_len);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_BATCH_SOURCE_H_
