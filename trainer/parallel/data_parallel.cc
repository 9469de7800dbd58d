#include "trainer/parallel/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {
namespace {

// The plugin's collectives extension, or nullptr.
const MNT_Collectives_Extension* FindCollectives(const MNT_Plugin_Api* plugin) {
  if (!MNT_HAS_FIELD(plugin, MNT_Plugin_Api, extension_start)) return nullptr;
  int hops = 0;
  for (const MNT_Extension_Base* e = plugin->extension_start; e != nullptr && hops < 64;
       e = e->next, ++hops) {
    if (e->type == MNT_EXTENSION_TYPE_COLLECTIVES &&
        e->struct_size >= MNT_Collectives_Extension_V1_STRUCT_SIZE) {
      return reinterpret_cast<const MNT_Collectives_Extension*>(e);
    }
  }
  return nullptr;
}

absl::Status FromPlugin(const sdk::BackendClient& client, MNT_Error* error,
                        const char* what) {
  absl::Status s = sdk::ToAbsl(sdk::StatusFromPluginError(client.plugin(), error));
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("data parallel: ", what, ": ", s.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Create(
    HostComm* host, const sdk::BackendClient& client) {
  const MNT_Collectives_Extension* ext = FindCollectives(client.plugin());
  if (ext == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data parallel: the ", client.plugin()->name,
        " backend offers no collectives extension (mnt_collectives.h); run one rank, or "
        "--data_parallel=off to train each rank alone"));
  }
  std::unique_ptr<DataParallel> dp(new DataParallel(host, client, ext));
  // Rank 0's backend makes the id; HostComm carries it to every rank.
  std::string id;
  if (host->rank() == 0) {
    MNT_Collectives_GetUniqueId_Args a{};
    a.struct_size = MNT_Collectives_GetUniqueId_Args_STRUCT_SIZE;
    a.backend = client.backend();
    if (auto s = FromPlugin(client, ext->Collectives_GetUniqueId(&a), "Collectives_GetUniqueId");
        !s.ok())
      return s;
    id.assign(a.unique_id, std::min<size_t>(a.unique_id_size, sizeof(a.unique_id)));
  }
  if (auto s = host->Broadcast(&id); !s.ok()) return s;
  MNT_Communicator_Create_Args c{};
  c.struct_size = MNT_Communicator_Create_Args_STRUCT_SIZE;
  c.backend = client.backend();
  c.rank = host->rank();
  c.world_size = host->world_size();
  c.unique_id = id.data();
  c.unique_id_size = id.size();
  if (auto s = FromPlugin(client, ext->Communicator_Create(&c), "Communicator_Create"); !s.ok())
    return s;
  dp->comm_ = c.communicator;
  return dp;
}

DataParallel::~DataParallel() {
  if (comm_ == nullptr) return;
  // Works not joined (a step that failed midway) go with the communicator.
  MNT_Communicator_Destroy_Args a{};
  a.struct_size = MNT_Communicator_Destroy_Args_STRUCT_SIZE;
  a.backend = client_.backend();
  a.communicator = comm_;
  (void)FromPlugin(client_, ext_->Communicator_Destroy(&a), "Communicator_Destroy");
}

absl::Status DataParallel::Run(MNT_CollectiveOp op, MNT_ReduceOp reduce, const MNT_Tensor& in,
                               const MNT_Tensor& out, int root) {
  const auto start = std::chrono::steady_clock::now();
  auto a = CollectiveArgs<MNT_Collectives_Run_Args>(MNT_Collectives_Run_Args_STRUCT_SIZE, op,
                                                    reduce, in, out, root);
  absl::Status s = FromPlugin(client_, ext_->Collectives_Run(&a), "Collectives_Run");
  collective_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++collective_calls_;
  return s;
}

bool DataParallel::starts_collectives() const {
  return ext_->header.version >= 2 &&
         ext_->header.base.struct_size >= MNT_Collectives_Extension_STRUCT_SIZE &&
         ext_->Collectives_Start != nullptr && ext_->Collectives_Wait != nullptr;
}

absl::Status DataParallel::Start(MNT_CollectiveOp op, MNT_ReduceOp reduce,
                                 const MNT_Tensor& in, const MNT_Tensor& out) {
  if (!starts_collectives()) return Run(op, reduce, in, out);
  const auto start = std::chrono::steady_clock::now();
  auto a = CollectiveArgs<MNT_Collectives_Start_Args>(MNT_Collectives_Start_Args_STRUCT_SIZE,
                                                      op, reduce, in, out, /*root=*/0);
  absl::Status s = FromPlugin(client_, ext_->Collectives_Start(&a), "Collectives_Start");
  if (s.ok()) started_.push_back(a.work);
  collective_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++collective_calls_;
  return s;
}

absl::Status DataParallel::Join() {
  const auto start = std::chrono::steady_clock::now();
  absl::Status first = absl::OkStatus();
  // Every work is consumed, even after an error.
  for (MNT_CollectiveWork* work : started_) {
    MNT_Collectives_Wait_Args a{};
    a.struct_size = MNT_Collectives_Wait_Args_STRUCT_SIZE;
    a.backend = client_.backend();
    a.communicator = comm_;
    a.work = work;
    absl::Status s = FromPlugin(client_, ext_->Collectives_Wait(&a), "Collectives_Wait");
    if (first.ok()) first = s;
  }
  started_.clear();
  collective_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return first;
}

absl::Status DataParallel::StartAverage(const MNT_Tensor& t) {
  return Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_AVG, t, t);
}

absl::Status DataParallel::StartAverageScattered(const MNT_Tensor& all,
                                                 const MNT_Tensor& mine) {
  return Start(MNT_COLLECTIVE_REDUCE_SCATTER, MNT_REDUCE_OP_AVG, all, mine);
}

absl::Status DataParallel::AverageInPlace(const MNT_Tensor& t) {
  return Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_AVG, t, t);
}

absl::Status DataParallel::MaxInPlace(const MNT_Tensor& t) {
  return Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_MAX, t, t);
}

absl::Status DataParallel::SumInPlace(const MNT_Tensor& t) {
  return Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, t, t);
}

absl::Status DataParallel::GatherInPlace(const MNT_Tensor& all) {
  const int64_t n = sdk::NumElements(all) / world_size();
  const MNT_Tensor mine = sdk::MakeTensor(
      static_cast<char*>(all.data) + rank() * n * static_cast<int64_t>(sdk::DTypeSize(all.dtype)),
      all.dtype, {n});
  return Run(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, mine, all);
}

}  // namespace mnt::trainer
