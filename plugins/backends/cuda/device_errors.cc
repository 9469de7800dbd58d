#include "plugins/backends/cuda/device_errors.h"

#include "plugins/backends/cuda/cuda_status.h"

namespace mnt::cuda {

using sdk::Status;

DeviceErrors::~DeviceErrors() {
  if (word_ != nullptr) cudaFree(word_);
}

Status DeviceErrors::Init(cudaStream_t stream) {
  void* word = nullptr;
  MNT_CUDA_RETURN_IF_ERROR(cudaMalloc(&word, sizeof(unsigned)),
                           "Backend_Create: cudaMalloc(error word)");
  word_ = static_cast<unsigned*>(word);
  MNT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(word_, 0, sizeof(unsigned), stream),
                           "Backend_Create: cudaMemsetAsync");
  return CudaStatus(cudaStreamSynchronize(stream), "Backend_Create: cudaStreamSynchronize");
}

Status DeviceErrors::Check(cudaStream_t stream) {
  unsigned bits = 0;
  MNT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&bits, word_, sizeof(bits), cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync(error word)");
  MNT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (bits == 0) return Status::Ok();
  MNT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(word_, 0, sizeof(unsigned), stream),
                           "cudaMemsetAsync(error word)");
  if (bits & kErrorEmbeddingId) {
    return sdk::InvalidArgument(
        "EMBEDDING_FORWARD/BACKWARD: an id was outside [0, V) (detected on the "
        "device; the output rows of bad ids were written as 0 / not accumulated)");
  }
  return sdk::InvalidArgument(
      "CROSS_ENTROPY: a target was >= num_classes (detected on the device; its "
      "loss was written as NaN)");
}

}  // namespace mnt::cuda
