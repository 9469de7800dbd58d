// Mantissa plugin SDK: a backend's collectives extension (mnt_collectives.h)
// for hosts, tools and tests, as BackendClient and BackendInstance are for
// the backend API. The table is found and checked once (Find, the rule the
// loader applies: collectives_table.h), every Args struct is built here,
// every error becomes a Status freed with the backend plugin's own
// Error_Destroy, and what the extension hands out is owned:
//
//   sdk::CollectivesClient coll;
//   MNT_RETURN_IF_ERROR(sdk::CollectivesClient::Find(plugin, backend, &coll));
//   std::string id;
//   if (rank == 0) MNT_RETURN_IF_ERROR(coll.GetUniqueId(&id));
//   ...  // the host sends rank 0's id to every rank (the trainer: MPI)
//   std::unique_ptr<sdk::Communicator> comm;
//   MNT_RETURN_IF_ERROR(sdk::Communicator::Create(coll, rank, world, id, &comm));
//   MNT_RETURN_IF_ERROR(comm->Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_AVG, 0, &t, &t));
//   if (coll.starts()) {  // version 2
//     sdk::CollectiveWork work;
//     MNT_RETURN_IF_ERROR(
//         comm->Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &g, &g, &work));
//     ...  // ops that neither write g's input nor touch its output
//     MNT_RETURN_IF_ERROR(comm->Wait(&work));
//   }
//
// CollectivesClient is a view (plugin, table, backend instance) and also
// takes raw handles, for callers that test a backend's refusals; Communicator
// owns one communicator and destroys it; CollectiveWork is one started
// collective until it is waited for. Not thread-safe, like the backend's
// own calls: one thread drives a communicator at a time.
#ifndef MANTISSA_PLUGINS_SDK_COLLECTIVES_CLIENT_H_
#define MANTISSA_PLUGINS_SDK_COLLECTIVES_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/collectives_table.h"
#include "plugins/sdk/extension_chain.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

class CollectivesClient {
 public:
  CollectivesClient() = default;

  // The collectives extension of `plugin` (a backend plugin), for its
  // instance `backend`: NOT_FOUND when the plugin has none (it runs on one
  // device only), INVALID_ARGUMENT when its table breaks
  // CheckCollectivesTable (a loaded plugin's never does: the loader refuses
  // it). Whether it also starts collectives is decided here, once.
  static Status Find(const MNT_Plugin_Api* plugin, MNT_Backend* backend,
                     CollectivesClient* out) {
    *out = CollectivesClient();
    const MNT_Extension_Header* h = FindExtension(plugin, MNT_EXTENSION_TYPE_COLLECTIVES);
    if (h == nullptr) {
      return Status(MNT_ERROR_NOT_FOUND,
                    Format("the %s backend has no collectives extension (mnt_collectives.h)",
                           plugin != nullptr && plugin->name != nullptr ? plugin->name : "?"));
    }
    MNT_RETURN_IF_ERROR(CheckCollectivesTable(*h));
    out->plugin_ = plugin;
    out->ext_ = reinterpret_cast<const MNT_Collectives_Extension*>(h);
    out->backend_ = backend;
    out->starts_ = CheckCollectivesStarts(*out->ext_).ok();
    return Status::Ok();
  }

  // The same checked table for another backend instance of the plugin.
  CollectivesClient WithBackend(MNT_Backend* backend) const {
    CollectivesClient c = *this;
    c.backend_ = backend;
    return c;
  }

  const MNT_Plugin_Api* plugin() const { return plugin_; }
  const MNT_Collectives_Extension* extension() const { return ext_; }
  MNT_Backend* backend() const { return backend_; }
  int32_t version() const { return ext_->header.version; }
  // Version 2: Collectives_Start and Collectives_Wait may be called
  // (CheckCollectivesStarts says why not). Without it, Run is the way.
  bool starts() const { return starts_; }

  // An error the backend plugin returned (NULL: success), as a Status; the
  // error is freed with the plugin's Error_Destroy.
  Status StatusOf(MNT_Error* error) const { return StatusFromPluginError(plugin_, error); }

  // Collectives_GetUniqueId (rank 0 only): the id's bytes. An id of 0 or
  // more than MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES bytes is an error.
  Status GetUniqueId(std::string* id) const {
    MNT_Collectives_GetUniqueId_Args a{};
    a.struct_size = MNT_Collectives_GetUniqueId_Args_STRUCT_SIZE;
    a.backend = backend_;
    MNT_RETURN_IF_ERROR(StatusOf(ext_->Collectives_GetUniqueId(&a)));
    if (a.unique_id_size == 0 || a.unique_id_size > MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES) {
      return Internal(Format("Collectives_GetUniqueId succeeded with unique_id_size %zu (1 to "
                             "%d bytes)",
                             a.unique_id_size, MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES));
    }
    id->assign(a.unique_id, a.unique_id_size);
    return Status::Ok();
  }

  // The calls on raw handles. Communicator (below) is what a host holds;
  // these are for callers that pass a handle on purpose (NULL, another
  // backend's) to see the backend refuse it.

  // Communicator_Create. `*out` is the communicator on success, else NULL:
  // an error that still gives a communicator (destroyed here) and a
  // success that gives none are errors.
  Status CreateCommunicator(int32_t rank, int32_t world_size, const char* unique_id,
                            size_t unique_id_size, MNT_Communicator** out) const {
    *out = nullptr;
    MNT_Communicator_Create_Args a{};
    a.struct_size = MNT_Communicator_Create_Args_STRUCT_SIZE;
    a.backend = backend_;
    a.rank = rank;
    a.world_size = world_size;
    a.unique_id = unique_id;
    a.unique_id_size = unique_id_size;
    const Status s = StatusOf(ext_->Communicator_Create(&a));
    if (!s.ok() && a.communicator != nullptr) {
      (void)DestroyCommunicator(a.communicator);
      return Internal("Communicator_Create failed (" + s.message() +
                      ") but gave a communicator");
    }
    if (s.ok() && a.communicator == nullptr) {
      return Internal("Communicator_Create succeeded but gave no communicator");
    }
    *out = a.communicator;
    return s;
  }
  // Communicator_Destroy (NULL is accepted): the works of started
  // collectives not waited for are freed with it.
  Status DestroyCommunicator(MNT_Communicator* communicator) const {
    MNT_Communicator_Destroy_Args a{};
    a.struct_size = MNT_Communicator_Destroy_Args_STRUCT_SIZE;
    a.backend = backend_;
    a.communicator = communicator;
    return StatusOf(ext_->Communicator_Destroy(&a));
  }

  // The Args of Collectives_Run and Collectives_Start, in their fields'
  // order (struct_size set; Start's work NULL), for callers that alter them
  // on purpose (conformance's refusals).
  MNT_Collectives_Run_Args RunArgs(MNT_Communicator* communicator, MNT_CollectiveOp op,
                                   MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* input,
                                   const MNT_Tensor* output) const {
    return OperandArgs<MNT_Collectives_Run_Args>(MNT_Collectives_Run_Args_STRUCT_SIZE,
                                                 communicator, op, reduce, root, input, output);
  }
  MNT_Collectives_Start_Args StartArgs(MNT_Communicator* communicator, MNT_CollectiveOp op,
                                       MNT_ReduceOp reduce, int32_t root,
                                       const MNT_Tensor* input,
                                       const MNT_Tensor* output) const {
    return OperandArgs<MNT_Collectives_Start_Args>(MNT_Collectives_Start_Args_STRUCT_SIZE,
                                                   communicator, op, reduce, root, input,
                                                   output);
  }

  // Collectives_Run: `reduce` is read for the reductions, `root` for
  // BROADCAST; `input` may be NULL on BROADCAST's non-root ranks.
  Status Run(MNT_Communicator* communicator, MNT_CollectiveOp op, MNT_ReduceOp reduce,
             int32_t root, const MNT_Tensor* input, const MNT_Tensor* output) const {
    MNT_Collectives_Run_Args a = RunArgs(communicator, op, reduce, root, input, output);
    return StatusOf(ext_->Collectives_Run(&a));
  }
  // Collectives_Start (only when starts()): `*work` is the started
  // collective on success, else NULL; a success without a work is an error.
  Status Start(MNT_Communicator* communicator, MNT_CollectiveOp op, MNT_ReduceOp reduce,
               int32_t root, const MNT_Tensor* input, const MNT_Tensor* output,
               MNT_CollectiveWork** work) const {
    *work = nullptr;
    if (!starts_) return CheckCollectivesStarts(*ext_);
    MNT_Collectives_Start_Args a = StartArgs(communicator, op, reduce, root, input, output);
    MNT_RETURN_IF_ERROR(StatusOf(ext_->Collectives_Start(&a)));
    if (a.work == nullptr) return Internal("Collectives_Start succeeded but gave no work");
    *work = a.work;
    return Status::Ok();
  }
  // Collectives_Wait (only when starts()): the work is consumed, whatever
  // the result.
  Status Wait(MNT_Communicator* communicator, MNT_CollectiveWork* work) const {
    if (!starts_) return CheckCollectivesStarts(*ext_);
    MNT_Collectives_Wait_Args a{};
    a.struct_size = MNT_Collectives_Wait_Args_STRUCT_SIZE;
    a.backend = backend_;
    a.communicator = communicator;
    a.work = work;
    return StatusOf(ext_->Collectives_Wait(&a));
  }

 private:
  // Run's and Start's Args share their operands' fields.
  template <typename Args>
  Args OperandArgs(size_t struct_size, MNT_Communicator* communicator, MNT_CollectiveOp op,
                   MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* input,
                   const MNT_Tensor* output) const {
    Args a{};
    a.struct_size = struct_size;
    a.backend = backend_;
    a.communicator = communicator;
    a.op = op;
    a.reduce = reduce;
    a.root = root;
    a.input = input;
    a.output = output;
    return a;
  }

  const MNT_Plugin_Api* plugin_ = nullptr;
  const MNT_Collectives_Extension* ext_ = nullptr;
  MNT_Backend* backend_ = nullptr;
  bool starts_ = false;
};

// One started collective (Communicator::Start) until Communicator::Wait
// consumes it. Move-only. One never waited for is freed by its
// communicator's destruction (mnt_collectives.h), so a host that gives up
// midway destroys the communicator and drops its works.
class CollectiveWork {
 public:
  CollectiveWork() = default;
  CollectiveWork(CollectiveWork&& o) noexcept : work_(std::exchange(o.work_, nullptr)) {}
  CollectiveWork& operator=(CollectiveWork&& o) noexcept {
    if (this != &o) work_ = std::exchange(o.work_, nullptr);
    return *this;
  }
  CollectiveWork(const CollectiveWork&) = delete;
  CollectiveWork& operator=(const CollectiveWork&) = delete;

  // Started and not yet waited for.
  bool pending() const { return work_ != nullptr; }
  MNT_CollectiveWork* get() const { return work_; }

 private:
  friend class Communicator;
  MNT_CollectiveWork* work_ = nullptr;
};

// Owns one communicator of a backend instance: Communicator_Create on the
// way in, Communicator_Destroy on the way out (which waits for its
// outstanding work and frees the works never waited for). Destroy it before
// the backend instance. Not movable: hold it in a unique_ptr.
class Communicator {
 public:
  // Communicator_Create for rank `rank` of `world_size` with rank 0's id;
  // collective: every rank calls it before any returns.
  static Status Create(const CollectivesClient& client, int32_t rank, int32_t world_size,
                       const std::string& unique_id, std::unique_ptr<Communicator>* out) {
    MNT_Communicator* c = nullptr;
    MNT_RETURN_IF_ERROR(
        client.CreateCommunicator(rank, world_size, unique_id.data(), unique_id.size(), &c));
    out->reset(new Communicator(client, c, rank, world_size));
    return Status::Ok();
  }
  ~Communicator() {
    // Destructors cannot report; Destroy() first to see its error.
    (void)Destroy();
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Communicator_Destroy now, with its error; later calls (and the
  // destructor) do nothing. Every rank destroys its communicator.
  Status Destroy() {
    MNT_Communicator* c = std::exchange(comm_, nullptr);
    return c == nullptr ? Status::Ok() : client_.DestroyCommunicator(c);
  }

  const CollectivesClient& client() const { return client_; }
  MNT_Communicator* get() const { return comm_; }
  int32_t rank() const { return rank_; }
  int32_t world_size() const { return world_size_; }

  // Collectives_Run; see CollectivesClient::Run.
  Status Run(MNT_CollectiveOp op, MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* input,
             const MNT_Tensor* output) const {
    return client_.Run(comm_, op, reduce, root, input, output);
  }
  // Collectives_Start (only when client().starts()): `*work`, which must
  // not be pending, is the started collective on success. Until Wait, no
  // op may write `input`'s memory or touch `output`'s.
  Status Start(MNT_CollectiveOp op, MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* input,
               const MNT_Tensor* output, CollectiveWork* work) const {
    if (work->pending()) {
      return InvalidArgument(
          "Collectives_Start: the work given for the result is still pending (wait for it "
          "first)");
    }
    return client_.Start(comm_, op, reduce, root, input, output, &work->work_);
  }
  // Collectives_Wait: consumes `*work` (no longer pending afterwards),
  // whatever the result; an error of the collective itself leaves the
  // communicator good for Destroy only.
  Status Wait(CollectiveWork* work) const {
    if (!work->pending()) {
      return InvalidArgument(
          "Collectives_Wait: the work is not pending (waited for already, or never started)");
    }
    return client_.Wait(comm_, std::exchange(work->work_, nullptr));
  }

 private:
  Communicator(const CollectivesClient& client, MNT_Communicator* comm, int32_t rank,
               int32_t world_size)
      : client_(client), comm_(comm), rank_(rank), world_size_(world_size) {}

  CollectivesClient client_;
  MNT_Communicator* comm_ = nullptr;
  int32_t rank_ = 0;
  int32_t world_size_ = 1;
};

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_COLLECTIVES_CLIENT_H_
