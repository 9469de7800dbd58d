#include "trainer/debug/op_tracer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugins/sdk/op_list.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {
namespace {

// "layer1.weight" -> "layer1"; "grad of layer1.weight" -> "layer1".
std::string LayerOfParameter(const std::string& name) {
  std::string n = name;
  for (const char* prefix : {"grad of ", "master of "}) {
    if (n.rfind(prefix, 0) == 0) n = n.substr(std::strlen(prefix));
  }
  const size_t dot = n.rfind('.');
  return dot == std::string::npos ? n : n.substr(0, dot);
}

bool IsFloat(MNT_DType t) {
  return t == MNT_DTYPE_F32 || t == MNT_DTYPE_F16 || t == MNT_DTYPE_BF16;
}

// What --debug_overflow measures: a float tensor with elements.
bool Measurable(const MNT_Tensor& t) {
  return t.data != nullptr && sdk::NumElements(t) > 0 && IsFloat(t.dtype);
}

// TENSOR_STATS's outputs per operand: range F32 [2], then counts I32 [2].
constexpr size_t kSlotBytes = 16;
// Slots the buffer starts with (the model's ops have fewer operands).
constexpr size_t kInitialSlots = 16;

}  // namespace

OpTracer* OpTracer::active_ = nullptr;

OpTracer::OpTracer(const sdk::BackendClient& real, int history)
    : real_(real), history_(std::max(1, history)) {
  // The real table (as much of it as the plugin has), Backend_Run replaced.
  const MNT_Plugin_Api* plugin = real.plugin();
  std::memcpy(&api_, plugin->backend,
              std::min(plugin->backend->struct_size, sizeof(MNT_Backend_Api)));
  api_.Backend_Run = &Run;
  api_.Memory_Copy = &Copy;
  plugin_ = *plugin;
  plugin_.backend = &api_;
  client_ = sdk::BackendClient(&plugin_, real.backend());
  // ABI 1.10: asked once. A backend built before the op answers 0.
  MNT_Backend_GetOpSupport_Args q{};
  q.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  q.backend = real.backend();
  q.op = MNT_OP_TENSOR_STATS;
  device_stats_ =
      sdk::StatusFromPluginError(plugin, plugin->backend->Backend_GetOpSupport(&q)).ok() &&
      q.supported != 0;
}

absl::StatusOr<std::unique_ptr<OpTracer>> OpTracer::Create(const sdk::BackendClient& real,
                                                           int history) {
  if (active_ != nullptr) {
    return absl::FailedPreconditionError("--debug_overflow: a tracer is already in use");
  }
  std::unique_ptr<OpTracer> t(new OpTracer(real, history));
  if (t->device_stats_ && !t->EnsureSlots(kInitialSlots)) {
    return absl::ResourceExhaustedError(
        "--debug_overflow: cannot allocate the device buffer for TENSOR_STATS");
  }
  active_ = t.get();
  return t;
}

OpTracer::~OpTracer() { active_ = nullptr; }

void OpTracer::Name(const void* data, size_t bytes, const std::string& name) {
  if (data == nullptr || bytes == 0) return;
  names_[reinterpret_cast<uintptr_t>(data)] = {bytes, name};
}

void OpTracer::NameData(const void* data, size_t bytes, const std::string& name) {
  if (data == nullptr || bytes == 0) return;
  data_names_[reinterpret_cast<uintptr_t>(data)] = {bytes, name};
}

void OpTracer::BeginPhase(int64_t step, const std::string& phase) {
  step_ = step;
  phase_ = phase;
  last_layer_.clear();  // "after <layer>" only within one pass
}

const OpTracer::Range* OpTracer::Find(const std::map<uintptr_t, Range>& ranges,
                                      const void* data) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  auto it = ranges.upper_bound(p);
  if (it == ranges.begin()) return nullptr;
  --it;
  return p < it->first + it->second.bytes ? &it->second : nullptr;
}

OpTracer::Operand OpTracer::Describe(const MNT_Tensor& t) const {
  Operand o;
  o.dtype = t.dtype;
  if (t.data == nullptr) {
    o.name = "(absent)";
  } else if (const Range* r = Find(names_, t.data)) {
    o.name = r->name;
    o.parameter = true;
  } else if (const Range* d = Find(data_names_, t.data)) {
    o.name = d->name;
  } else {
    o.name = IsFloat(t.dtype) ? "activation" : "indices";
  }
  return o;
}

std::string OpTracer::LayerOf(const OpRecord& r, const std::vector<const void*>& inputs) const {
  for (const auto* side : {&r.inputs, &r.outputs}) {
    for (const Operand& o : *side) {
      if (o.parameter) return LayerOfParameter(o.name);
    }
  }
  // No parameter: the layer whose output it works on, the newest one it
  // reads (a residual add belongs to the branch it adds, not to the stream).
  const Range* newest = nullptr;
  for (const void* in : inputs) {
    const Range* w = in != nullptr ? Find(writers_, in) : nullptr;
    if (w != nullptr && (newest == nullptr || w->writer > newest->writer)) newest = w;
  }
  if (newest != nullptr) return newest->name;
  return last_layer_.empty() ? "" : "after " + last_layer_;
}

MNT_Error* OpTracer::Copy(MNT_Memory_Copy_Args* args) {
  OpTracer* self = active_;
  // A device copy of named data (the model keeping the targets) or of a
  // layer's output is named as its source.
  if (!self->tripped_ && args != nullptr && args->kind == MNT_COPY_DEVICE_TO_DEVICE &&
      args->size_bytes > 0) {
    const uintptr_t dst = reinterpret_cast<uintptr_t>(args->dst);
    if (const Range* d = Find(self->data_names_, args->src)) {
      self->data_names_[dst] = {args->size_bytes, d->name};
    } else if (const Range* w = Find(self->writers_, args->src)) {
      self->writers_[dst] = {args->size_bytes, w->name, w->writer};
    }
  }
  return self->real_.api()->Memory_Copy(args);
}

bool OpTracer::EnsureSlots(size_t slots) {
  if (stats_.size() >= slots * kSlotBytes) return true;
  stats_.Reset();
  return real_.Allocate(std::max(slots, kInitialSlots) * kSlotBytes, MNT_MEMORY_WORKSPACE, &stats_)
      .ok();
}

void OpTracer::MeasureOnHost(const MNT_Tensor& t, Operand* o) const {
  const int64_t n = sdk::NumElements(t);
  std::string host(static_cast<size_t>(n) * sdk::DTypeSize(t.dtype), '\0');
  if (!real_.ToHost(host.data(), t.data, host.size()).ok()) return;
  o->stats = MeasureTensor(t.dtype, host.data(), n);
}

void OpTracer::Measure(const MNT_Tensor& t, Operand* o, std::vector<Pending>* pending) {
  if (!Measurable(t)) return;
  if (pending != nullptr) {
    // Through the real backend (never this tracer's Run), ordered on its
    // stream before whatever is issued next.
    const size_t slot = pending->size();
    auto* base = static_cast<unsigned char*>(stats_.data()) + slot * kSlotBytes;
    const int64_t two = 2;
    const MNT_Tensor range = sdk::MakeTensor(base, MNT_DTYPE_F32, 1, &two);
    const MNT_Tensor counts = sdk::MakeTensor(base + 8, MNT_DTYPE_I32, 1, &two);
    if (real_.Run(MNT_OP_TENSOR_STATS, {t}, {range, counts}).ok()) {
      pending->push_back({o, sdk::NumElements(t), slot});
      return;
    }
  }
  MeasureOnHost(t, o);
}

void OpTracer::ReadPending(const std::vector<Pending>& pending) {
  if (pending.empty()) return;
  std::vector<unsigned char> host(pending.size() * kSlotBytes);
  if (!real_.ToHost(host.data(), stats_.data(), host.size()).ok()) return;  // "not measured"
  for (const Pending& p : pending) {
    float range[2];
    int32_t counts[2];
    std::memcpy(range, host.data() + p.slot * kSlotBytes, sizeof(range));
    std::memcpy(counts, host.data() + p.slot * kSlotBytes + 8, sizeof(counts));
    p.operand->stats = StatsFromDevice(p.elements, range, counts);
  }
}

MNT_Error* OpTracer::Run(MNT_Backend_Run_Args* args) {
  OpTracer* self = active_;
  const MNT_Backend_Api* real = self->real_.api();
  if (self->tripped_) return real->Backend_Run(args);
  // Inputs before the op (an op may write in place), outputs after it.
  OpRecord r;
  r.index = ++self->traced_;
  r.step = self->step_;
  r.phase = self->phase_;
  r.op = args->op;
  // Sized first: `pending` points into them.
  r.inputs.resize(args->num_inputs);
  r.outputs.resize(args->num_outputs);
  std::vector<Pending> pending;
  // A slot per operand (a failed allocation leaves the host path for this op).
  const bool on_device =
      self->device_stats_ && self->EnsureSlots(args->num_inputs + args->num_outputs);
  std::vector<Pending>* device_pending = on_device ? &pending : nullptr;
  std::vector<const void*> inputs;
  for (size_t i = 0; i < args->num_inputs; ++i) {
    r.inputs[i] = self->Describe(args->inputs[i]);
    inputs.push_back(args->inputs[i].data);
    self->Measure(args->inputs[i], &r.inputs[i], device_pending);
  }
  MNT_Error* error = real->Backend_Run(args);
  if (error != nullptr) return error;
  std::vector<std::pair<const void*, size_t>> outputs;
  for (size_t i = 0; i < args->num_outputs; ++i) {
    r.outputs[i] = self->Describe(args->outputs[i]);
    if (!r.outputs[i].parameter && args->outputs[i].data != nullptr) {
      outputs.emplace_back(args->outputs[i].data, sdk::SizeBytes(args->outputs[i]));
    }
    self->Measure(args->outputs[i], &r.outputs[i], device_pending);
  }
  self->ReadPending(pending);
  self->Record(std::move(r), inputs, outputs);
  return nullptr;
}

void OpTracer::Record(OpRecord r, const std::vector<const void*>& inputs,
                      const std::vector<std::pair<const void*, size_t>>& outputs) {
  r.layer = LayerOf(r, inputs);
  const bool parameters =
      std::any_of(r.inputs.begin(), r.inputs.end(), [](const Operand& o) { return o.parameter; }) ||
      std::any_of(r.outputs.begin(), r.outputs.end(), [](const Operand& o) { return o.parameter; });
  if (parameters) last_layer_ = r.layer;
  // What this op wrote is its layer's, for the ops that read it later.
  if (!r.layer.empty() && r.layer.rfind("after ", 0) != 0) {
    for (const auto& [data, bytes] : outputs) {
      writers_[reinterpret_cast<uintptr_t>(data)] = {bytes, r.layer, r.index};
    }
  }
  for (const Operand& o : r.outputs) tripped_ = tripped_ || o.stats.nonfinite > 0;
  last_.push_back(std::move(r));
  while (static_cast<int>(last_.size()) > history_) last_.pop_front();
}

std::string OpTracer::Summary() const {
  if (!tripped_ || last_.empty()) return "";
  const OpRecord& r = last_.back();
  std::string bad, params, already;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    if (r.outputs[i].stats.nonfinite == 0) continue;
    absl::StrAppend(&bad, bad.empty() ? "" : ", ", "out[", i, "] (", r.outputs[i].name, ": ",
                    r.outputs[i].stats.nonfinite, " inf/NaN of ", r.outputs[i].stats.elements,
                    ")");
  }
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const Operand& o = r.inputs[i];
    if (o.parameter) absl::StrAppend(&params, params.empty() ? "" : ", ", o.name);
    if (o.stats.nonfinite > 0) {
      absl::StrAppend(&already, already.empty() ? "" : ", ", "in[", i, "] (", o.name, ")");
    }
  }
  std::string line = absl::StrCat(
      "--debug_overflow: in ", r.phase, ", op #", r.index, " ",
      sdk::OpName(r.op), r.layer.empty() ? "" : absl::StrCat(" in layer '", r.layer, "'"),
      params.empty() ? "" : absl::StrCat(" (parameters ", params, ")"), " made inf/NaN: ", bad);
  if (!already.empty()) {
    absl::StrAppend(&line, "; its inputs ", already,
                    " already held inf/NaN (from the data or an earlier update)");
  }
  return line;
}

std::string OpTracer::Report() const {
  std::string out = absl::StrFormat(
      "--debug_overflow: the last %d ops up to the first inf/NaN (abs min/max over finite "
      "elements)\n",
      static_cast<int>(last_.size()));
  for (const OpRecord& r : last_) {
    absl::StrAppendFormat(&out, "  #%d step %d %s %s%s\n", r.index, r.step, r.phase,
                          sdk::OpName(r.op),
                          r.layer.empty() ? "" : absl::StrCat("  [", r.layer, "]"));
    for (const auto& [label, side] : {std::pair{"in", &r.inputs}, std::pair{"out", &r.outputs}}) {
      for (size_t i = 0; i < side->size(); ++i) {
        const Operand& o = (*side)[i];
        if (o.name == "(absent)") continue;
        absl::StrAppendFormat(&out, "      %s[%d] %-28s %s\n", label, static_cast<int>(i),
                              o.name, FormatStats(o.stats));
      }
    }
  }
  return out;
}

}  // namespace mnt::trainer
