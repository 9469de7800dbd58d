#include "trainer/parallel/rank_agreement.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mnt::trainer {
namespace {

// Length-prefixed, so values may hold any bytes.
std::string Encode(const RankFacts& facts) {
  std::string out;
  auto put = [&](const std::string& s) {
    const uint64_t n = s.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
    out.append(s);
  };
  for (const auto& [what, value] : facts) {
    put(what);
    put(value);
  }
  return out;
}

RankFacts Decode(const std::string& bytes) {
  RankFacts facts;
  size_t p = 0;
  auto get = [&](std::string* s) {
    uint64_t n = 0;
    if (p + sizeof(n) > bytes.size()) return false;
    std::memcpy(&n, bytes.data() + p, sizeof(n));
    p += sizeof(n);
    if (p + n > bytes.size()) return false;
    s->assign(bytes, p, n);
    p += n;
    return true;
  };
  std::string what, value;
  while (get(&what) && get(&value)) facts.emplace_back(what, value);
  return facts;
}

std::string Shown(const std::string& v) { return v.empty() ? "(nothing)" : "'" + v + "'"; }

}  // namespace

std::string FirstDisagreement(const std::vector<RankFacts>& ranks) {
  if (ranks.empty()) return "";
  const RankFacts& first = ranks[0];
  for (size_t r = 1; r < ranks.size(); ++r) {
    const RankFacts& other = ranks[r];
    const size_t n = std::max(first.size(), other.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string what = i < first.size() ? first[i].first : other[i].first;
      const std::string a = i < first.size() ? first[i].second : "";
      const std::string b = i < other.size() ? other[i].second : "";
      const bool same_what = i < first.size() && i < other.size() && first[i].first == other[i].first;
      if (same_what && a == b) continue;
      return absl::StrCat("rank ", r, " disagrees with rank 0 on the ", what, ": ", Shown(b),
                          " vs rank 0's ", Shown(a),
                          " (every rank must run the same command, plugin files and data)");
    }
  }
  return "";
}

absl::Status CheckRanksAgree(HostComm& host, const RankFacts& mine) {
  auto all = host.AllGather(Encode(mine));
  if (!all.ok()) return all.status();
  std::vector<RankFacts> ranks;
  for (const std::string& bytes : *all) ranks.push_back(Decode(bytes));
  const std::string d = FirstDisagreement(ranks);
  if (d.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(d);
}

std::string FileFingerprint(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "missing";
  uint64_t hash = kFnv1aOffset;
  uint64_t size = 0;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    hash = Fnv1a(std::string_view(buf, n), hash);
    size += n;
  }
  std::fclose(f);
  return absl::StrFormat("%d bytes, fnv1a %016x", size, hash);
}

uint64_t Fnv1a(std::string_view bytes, uint64_t hash) {
  for (const char c : bytes) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

}  // namespace mnt::trainer
