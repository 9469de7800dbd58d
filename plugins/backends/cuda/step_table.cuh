// The device tables of the multi-tensor optimizer steps (optimizers.cu's
// MULTI_SGD_STEP and MULTI_ADAMW_STEP; ABI 1.14's MULTI_ADAMW8BIT_STEP in
// adamw8bit.cu and MULTI_ADAFACTOR_STEP in adafactor.cu). The host numbers
// the units of work (CUDA blocks, quantization blocks, rows, elements) of
// the entries from 0; a kernel finds the entry that owns a unit from the
// entries' first units (a prefix table; an entry may keep several, one per
// kind of unit). MULTI_SGD_STEP and MULTI_ADAMW_STEP first order the table
// by the entries' pair of storage types (gradient, working copy), numbering
// each group from 0, so each pair is one launch of a kernel compiled for
// it; the 1.14 ops read every type through AnyStorage in one launch
// (their per-element work dwarfs the dtype switch, and one instantiation
// keeps the plugin small). Entries are independent, so neither the order
// nor the grouping changes a result.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_STEP_TABLE_CUH_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_STEP_TABLE_CUH_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "plugins/abi/mnt_backend.h"

namespace mnt::cuda {

// The entries table[begin, begin + count) of one storage pair: one launch
// over `units` units.
struct TableGroup {
  MNT_DType grad = MNT_DTYPE_INVALID, working = MNT_DTYPE_INVALID;
  size_t begin = 0, count = 0;
  int64_t units = 0;
};

// Orders `table` stably by storage_of(entry) (a std::pair of dtypes: a
// table of one pair keeps its order) and returns its runs; sets each
// entry's first_block to its first unit counted from its group's start,
// the entry taking units_of(entry) units.
template <typename Entry, typename StorageOf, typename UnitsOf>
std::vector<TableGroup> GroupByStorage(std::vector<Entry>* table, StorageOf storage_of,
                                       UnitsOf units_of) {
  std::stable_sort(table->begin(), table->end(), [&](const Entry& x, const Entry& y) {
    return storage_of(x) < storage_of(y);
  });
  std::vector<TableGroup> groups;
  for (size_t i = 0; i < table->size(); ++i) {
    Entry& e = (*table)[i];
    const std::pair<MNT_DType, MNT_DType> storage = storage_of(e);
    if (groups.empty() || storage != storage_of((*table)[groups.back().begin])) {
      TableGroup g;
      g.grad = storage.first;
      g.working = storage.second;
      g.begin = i;
      groups.push_back(g);
    }
    TableGroup& g = groups.back();
    e.first_block = g.units;
    g.units += units_of(e);
    ++g.count;
  }
  return groups;
}

// Numbers the units of `table`'s entries in order, without grouping (a
// kernel that reads every storage type through AnyStorage): sets each
// entry's first_block, the entry taking units_of(entry) units; returns the
// total.
template <typename Entry, typename UnitsOf>
int64_t NumberUnits(std::vector<Entry>* table, UnitsOf units_of) {
  int64_t units = 0;
  for (Entry& e : *table) {
    e.first_block = units;
    units += units_of(e);
  }
  return units;
}

// The index of the entry owning unit `unit` of a group's launch: the last
// of the `count` (>= 1) entries whose first(entry) <= unit. An entry of no
// units is never the owner: the next entry has the same first unit.
template <typename Entry, typename First>
__device__ inline int64_t EntryIndexOfUnit(const Entry* table, int64_t count, int64_t unit,
                                           First first) {
  int64_t lo = 0, hi = count - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (first(table[mid]) <= unit) lo = mid; else hi = mid - 1;
  }
  return lo;
}

template <typename Entry, typename First>
__device__ inline const Entry& EntryOfUnit(const Entry* table, int64_t count, int64_t unit,
                                           First first) {
  return table[EntryIndexOfUnit(table, count, unit, first)];
}

// By the units GroupByStorage numbered (first_block).
template <typename Entry>
struct FirstBlock {
  __device__ int64_t operator()(const Entry& e) const { return e.first_block; }
};
template <typename Entry>
__device__ inline const Entry& EntryOfUnit(const Entry* table, int64_t count, int64_t unit) {
  return EntryOfUnit(table, count, unit, FirstBlock<Entry>{});
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_STEP_TABLE_CUH_
