#include "trainer/core/batch_source.h"

#include <cstring>
#include <utility>

namespace mnt::trainer {

size_t BatchSource::InputBytesPerExample() const {
  const MNT_DataSpec s = spec();
  size_t n = 1;
  for (int i = 0; i < s.input_rank; ++i) n *= static_cast<size_t>(s.input_dims[i]);
  return n * 4;  // F32 features and I32 tokens are both 4 bytes
}

namespace {

MNT_DataSpec EmptySpec() {
  MNT_DataSpec s{};
  s.struct_size = MNT_DataSpec_STRUCT_SIZE;
  return s;
}

class ClassificationSource : public BatchSource {
 public:
  explicit ClassificationSource(ClassificationData data) : data_(std::move(data)) {
    feature_size_ = 1;
    for (int64_t d : data_.example_dims) feature_size_ *= d;
  }
  MNT_DataSpec spec() const override {
    MNT_DataSpec s = EmptySpec();
    s.input_dtype = MNT_DTYPE_F32;
    s.input_rank = static_cast<int32_t>(data_.example_dims.size());
    for (int i = 0; i < s.input_rank && i < MNT_MAX_RANK; ++i)
      s.input_dims[i] = data_.example_dims[i];
    s.num_classes = data_.num_classes;
    s.targets_per_example = 1;
    return s;
  }
  int64_t size() const override { return data_.num_examples; }
  void Gather(const std::vector<int64_t>& indices, std::vector<uint8_t>* inputs,
              std::vector<int32_t>* targets) const override {
    const size_t row_bytes = static_cast<size_t>(feature_size_) * sizeof(float);
    inputs->resize(indices.size() * row_bytes);
    targets->resize(indices.size());
    for (size_t b = 0; b < indices.size(); ++b) {
      std::memcpy(inputs->data() + b * row_bytes,
                  data_.features.data() + indices[b] * feature_size_, row_bytes);
      (*targets)[b] = data_.labels[indices[b]];
    }
  }

 private:
  ClassificationData data_;
  int64_t feature_size_ = 1;
};

class TokenWindowSource : public BatchSource {
 public:
  TokenWindowSource(TokenData data, int64_t seq_len)
      : data_(std::move(data)), seq_len_(seq_len) {}
  MNT_DataSpec spec() const override {
    MNT_DataSpec s = EmptySpec();
    s.input_dtype = MNT_DTYPE_I32;
    s.input_rank = 1;
    s.input_dims[0] = seq_len_;
    s.num_classes = data_.vocab;
    s.targets_per_example = static_cast<int32_t>(seq_len_);
    return s;
  }
  int64_t size() const override {
    const int64_t n = static_cast<int64_t>(data_.tokens.size()) - 1;
    return n < seq_len_ ? 0 : n / seq_len_;
  }
  void Gather(const std::vector<int64_t>& indices, std::vector<uint8_t>* inputs,
              std::vector<int32_t>* targets) const override {
    inputs->resize(indices.size() * seq_len_ * sizeof(int32_t));
    targets->resize(indices.size() * seq_len_);
    auto* in = reinterpret_cast<int32_t*>(inputs->data());
    for (size_t b = 0; b < indices.size(); ++b) {
      const int32_t* window = data_.tokens.data() + indices[b] * seq_len_;
      std::memcpy(in + b * seq_len_, window, seq_len_ * sizeof(int32_t));
      std::memcpy(targets->data() + b * seq_len_, window + 1,
                  seq_len_ * sizeof(int32_t));
    }
  }

 private:
  TokenData data_;
  int64_t seq_len_;
};

}  // namespace

std::unique_ptr<BatchSource> MakeClassificationSource(ClassificationData data) {
  return std::make_unique<ClassificationSource>(std::move(data));
}

std::unique_ptr<BatchSource> MakeTokenWindowSource(TokenData data,
                                                   int64_t seq_len) {
  return std::make_unique<TokenWindowSource>(std::move(data), seq_len);
}

}  // namespace mnt::trainer
