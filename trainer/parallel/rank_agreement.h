// Before the first step every rank states what it is about to run (its
// config, plugin files, data, resumed checkpoint) and the ranks compare: a
// job whose ranks disagree would train garbage or hang in a collective, so
// it is refused with one line naming the rank and the difference.
#ifndef MANTISSA_TRAINER_PARALLEL_RANK_AGREEMENT_H_
#define MANTISSA_TRAINER_PARALLEL_RANK_AGREEMENT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "trainer/parallel/host_comm.h"

namespace mnt::trainer {

// (what, value) pairs, e.g. {"config", "lr: 0.01"}, {"model plugin mlp",
// "abi 1.9, 81234 bytes, fnv1a 0x..."}: compared in order.
using RankFacts = std::vector<std::pair<std::string, std::string>>;

// The first fact in which some rank differs from rank 0, or "" when all
// agree. Pure: the comparison HostComm's exchange feeds.
std::string FirstDisagreement(const std::vector<RankFacts>& ranks);

// Exchanges `mine` and returns FailedPrecondition with FirstDisagreement on
// every rank alike (so all stop together), or OK.
absl::Status CheckRanksAgree(HostComm& host, const RankFacts& mine);

// "<size> bytes, fnv1a <hash>" of a file's content ("missing" if unreadable).
std::string FileFingerprint(const std::string& path);

// The FNV-1a hash of `bytes` continued from `hash` (start from
// kFnv1aOffset): the same on every machine.
inline constexpr uint64_t kFnv1aOffset = 14695981039346656037ull;
uint64_t Fnv1a(std::string_view bytes, uint64_t hash = kFnv1aOffset);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_RANK_AGREEMENT_H_
