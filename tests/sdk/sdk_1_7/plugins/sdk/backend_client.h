// Mantissa plugin SDK: a C++ view of a loaded backend plugin, for model
// plugins and the trainer. Turns backend errors into sdk::Status (copying the
// message and freeing the error with the backend's own Error_Destroy) and
// wraps device allocations in an owning handle.
#ifndef MANTISSA_PLUGINS_SDK_BACKEND_CLIENT_H_
#define MANTISSA_PLUGINS_SDK_BACKEND_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/op_list.h"  // OpName
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::sdk {

class BackendClient;

// Owns one device allocation; frees it on destruction. Movable only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const BackendClient* client, void* data, size_t size)
      : client_(client), data_(data), size_(size) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      client_ = std::exchange(o.client_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  void* data() const { return data_; }
  size_t size() const { return size_; }
  inline void Reset();

 private:
  const BackendClient* client_ = nullptr;
  void* data_ = nullptr;
  size_t size_ = 0;
};

class BackendClient {
 public:
  BackendClient() = default;
  BackendClient(const MNT_Plugin_Api* plugin, MNT_Backend* backend)
      : plugin_(plugin), api_(plugin->backend), backend_(backend) {}

  const MNT_Plugin_Api* plugin() const { return plugin_; }
  const MNT_Backend_Api* api() const { return api_; }
  MNT_Backend* backend() const { return backend_; }

  Status Run(MNT_Op op, const std::vector<MNT_Tensor>& inputs,
             const std::vector<MNT_Tensor>& outputs,
             const void* params = nullptr) const {
    MNT_Backend_Run_Args a{};
    a.struct_size = MNT_Backend_Run_Args_STRUCT_SIZE;
    a.backend = backend_;
    a.op = op;
    a.inputs = inputs.data();
    a.num_inputs = inputs.size();
    a.outputs = outputs.data();
    a.num_outputs = outputs.size();
    a.params = params;
    return StatusFromPluginError(plugin_, api_->Backend_Run(&a));
  }

  Status Allocate(size_t bytes, MNT_MemoryCategory category,
                  DeviceBuffer* out) const {
    MNT_Memory_Allocate_Args a{};
    a.struct_size = MNT_Memory_Allocate_Args_STRUCT_SIZE;
    a.backend = backend_;
    a.size_bytes = bytes;
    a.category = category;
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin_, api_->Memory_Allocate(&a)));
    *out = DeviceBuffer(this, a.data, bytes);
    return Status::Ok();
  }

  Status Free(void* data) const {
    MNT_Memory_Free_Args a{};
    a.struct_size = MNT_Memory_Free_Args_STRUCT_SIZE;
    a.backend = backend_;
    a.data = data;
    return StatusFromPluginError(plugin_, api_->Memory_Free(&a));
  }

  Status Copy(void* dst, const void* src, size_t bytes,
              MNT_CopyKind kind) const {
    if (kind == MNT_COPY_DEVICE_TO_HOST) ++device_to_host_copies_;
    MNT_Memory_Copy_Args a{};
    a.struct_size = MNT_Memory_Copy_Args_STRUCT_SIZE;
    a.backend = backend_;
    a.dst = dst;
    a.src = src;
    a.size_bytes = bytes;
    a.kind = kind;
    return StatusFromPluginError(plugin_, api_->Memory_Copy(&a));
  }
  Status ToDevice(void* dst, const void* src, size_t bytes) const {
    return Copy(dst, src, bytes, MNT_COPY_HOST_TO_DEVICE);
  }
  Status ToHost(void* dst, const void* src, size_t bytes) const {
    return Copy(dst, src, bytes, MNT_COPY_DEVICE_TO_HOST);
  }

  // Device -> host copies made through this client (each one a sync on an
  // asynchronous backend): what a test counts to show a step reads nothing
  // back. Not thread-safe, like the client.
  int64_t device_to_host_copies() const { return device_to_host_copies_; }

  Status Synchronize() const {
    MNT_Backend_Synchronize_Args a{};
    a.struct_size = MNT_Backend_Synchronize_Args_STRUCT_SIZE;
    a.backend = backend_;
    return StatusFromPluginError(plugin_, api_->Backend_Synchronize(&a));
  }

  // True when the backend has the 1.7 step markers (both set; an older
  // backend's table ends before them and is never read there).
  bool HasStepMarkers() const {
    return api_ != nullptr && MNT_HAS_FIELD(api_, MNT_Backend_Api, Backend_StepEnd) &&
           api_->Backend_StepBegin != nullptr && api_->Backend_StepEnd != nullptr;
  }
  // Backend_StepBegin / Backend_StepEnd (ABI 1.7); only when HasStepMarkers().
  Status StepBegin() const {
    MNT_Backend_StepBegin_Args a{};
    a.struct_size = MNT_Backend_StepBegin_Args_STRUCT_SIZE;
    a.backend = backend_;
    return StatusFromPluginError(plugin_, api_->Backend_StepBegin(&a));
  }
  // `replayed` (may be NULL): whether the step ran as a replay.
  Status StepEnd(bool* replayed = nullptr) const {
    MNT_Backend_StepEnd_Args a{};
    a.struct_size = MNT_Backend_StepEnd_Args_STRUCT_SIZE;
    a.backend = backend_;
    MNT_RETURN_IF_ERROR(StatusFromPluginError(plugin_, api_->Backend_StepEnd(&a)));
    if (replayed != nullptr) *replayed = a.replayed != 0;
    return Status::Ok();
  }

  Status GetStats(MNT_MemoryCategory category, int64_t* current,
                  int64_t* peak) const {
    MNT_Memory_GetStats_Args a{};
    a.struct_size = MNT_Memory_GetStats_Args_STRUCT_SIZE;
    a.backend = backend_;
    a.category = category;
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin_, api_->Memory_GetStats(&a)));
    if (current) *current = a.current_bytes;
    if (peak) *peak = a.peak_bytes;
    return Status::Ok();
  }

 private:
  const MNT_Plugin_Api* plugin_ = nullptr;
  const MNT_Backend_Api* api_ = nullptr;
  MNT_Backend* backend_ = nullptr;
  mutable int64_t device_to_host_copies_ = 0;
};

inline void DeviceBuffer::Reset() {
  if (client_ != nullptr && data_ != nullptr) {
    (void)client_->Free(data_);  // Destructors cannot report; Free only fails
                                 // on foreign pointers, which we never hold.
  }
  client_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_BACKEND_CLIENT_H_
