// What Backend_StepBegin/Backend_StepEnd (ABI 1.7) do, written once for
// every backend class B built on common/backend_plugin.h.
//
// A backend that can capture a step (CUDA graphs) supplies
//   bool StepGraphsEnabled() const;   // defer and record marked steps at all
//   // Issues the step through `issue` under capture, then launches what was
//   // captured. A capture that fails must leave no work issued and return
//   // OK with *why_not set (the step is then issued eagerly here).
//   sdk::Status CaptureStep(const std::function<sdk::Status()>& issue,
//                           std::string* why_not);
//   // Launches the captured step again; `issue` would issue the same ops.
//   sdk::Status ReplayStep(const std::function<sdk::Status()>& issue);
// A backend without them gets markers that do nothing (ops run as issued).
// It may also supply
//   void BeforeStepIssue();   // a deferred step is about to be issued
// (replayed, captured or run eagerly); the CUDA backend marks there where
// the scratch requests of one step begin, to reserve them before a capture.
// And, with or without graphs,
//   void OnStepBegin();       // at Backend_StepBegin
//   void OnStepEnd();         // at Backend_StepEnd, after the step's work ran
// (the CPU backend times its steps there to size its thread team).
//
// Deferred, not executed under capture. Inside a marked step each op is
// checked at its Backend_Run (bad calls fail at once) and recorded
// (common/step_recording.h), and nothing is issued until StepEnd. Only
// then, with the whole step in hand, is it decided how to issue it:
//   - as a replay, when the step equals the captured one op for op;
//   - captured (then launched), when it equals the step before it: the step
//     before ran eagerly, so every lazy initialisation (plans, handles,
//     workspaces) happened outside the capture, and a step seen twice is
//     likely to repeat;
//   - eagerly otherwise.
// Why not capture while the ops arrive: a step can turn out to be
// uncapturable halfway (a copy to the host, a synchronisation, an op the
// recorder cannot copy); under capture the ops before that point would
// only have been captured, not run, and the step would have to be replayed
// from somewhere anyway. Deferring keeps every such case a plain eager run:
// any call that observes results (Memory_Copy to or from the host, Memory_Free,
// Backend_Synchronize, Event_Record, Event_ElapsedTime) first issues the ops
// deferred so far, eagerly and in order, and the rest of that step runs as
// issued. So results never depend on the caller behaving; a caller that does
// (uploads before StepBegin, reads after StepEnd) gets replays.
//
// Each reason a step runs eagerly is said once per instance on stderr.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_SESSION_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_SESSION_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_dispatch.h"
#include "plugins/backends/common/step_recording.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

template <typename B, typename = void>
struct HasStepGraphs : std::false_type {};
template <typename B>
struct HasStepGraphs<B, std::void_t<decltype(&B::CaptureStep), decltype(&B::ReplayStep),
                                    decltype(&B::StepGraphsEnabled)>> : std::true_type {};

template <typename B, typename = void>
struct HasStepHooks : std::false_type {};
template <typename B>
struct HasStepHooks<B, std::void_t<decltype(&B::OnStepBegin), decltype(&B::OnStepEnd)>>
    : std::true_type {};

template <typename B, typename = void>
struct HasBeforeStepIssue : std::false_type {};
template <typename B>
struct HasBeforeStepIssue<B, std::void_t<decltype(&B::BeforeStepIssue)>> : std::true_type {};

// Counts since the instance was created (tests, reports).
struct StepCounts {
  int64_t steps = 0;     // StepEnd calls
  int64_t captured = 0;  // steps captured (and launched)
  int64_t replayed = 0;  // steps issued as a replay
};

template <typename B>
class StepSession {
 public:
  sdk::Status Begin(B& device) {
    if (open_) {
      return sdk::FailedPrecondition(
          "Backend_StepBegin: a step is already open (Backend_StepEnd was not called)");
    }
    open_ = true;
    deferring_ = false;
    if constexpr (HasStepGraphs<B>::value) deferring_ = device.StepGraphsEnabled();
    current_.Clear();
    if constexpr (HasStepHooks<B>::value) device.OnStepBegin();
    return sdk::Status::Ok();
  }

  // Backend_Run: deferred inside a recorded step, else run now.
  sdk::Status Run(B& device, const MNT_Backend_Run_Args& args) {
    if (!deferring_) return RunOp(device, args);
    MNT_RETURN_IF_ERROR(CheckOp(device, args));
    const sdk::Status recorded = current_.Add(args);
    if (recorded.ok()) return sdk::Status::Ok();
    MNT_RETURN_IF_ERROR(StopDeferring(device, recorded.message()));
    return RunOp(device, args);
  }

  // Memory_Copy DEVICE_TO_DEVICE (checked): stream work, recorded in its
  // place inside a deferred step (no flush), else copied now.
  sdk::Status DeviceCopy(B& device, void* dst, const void* src, size_t bytes) {
    if (!deferring_) return device.Copy(dst, src, bytes, MNT_COPY_DEVICE_TO_DEVICE);
    current_.AddDeviceCopy(dst, src, bytes);
    return sdk::Status::Ok();
  }

  // Called by every entry point that observes results (`call` names it):
  // issues what was deferred, and the rest of the step runs as issued.
  sdk::Status Flush(B& device, const char* call) {
    if (!deferring_) return sdk::Status::Ok();
    return StopDeferring(
        device, sdk::Format("%s inside the step (a step that reads nothing back "
                            "before Backend_StepEnd can be replayed)", call));
  }

  sdk::Status End(B& device, int32_t* replayed) {
    *replayed = 0;
    if (!open_) {
      return sdk::FailedPrecondition("Backend_StepEnd: no step is open (Backend_StepBegin)");
    }
    open_ = false;
    ++counts_.steps;
    const sdk::Status ended = IssueStep(device, replayed);
    if constexpr (HasStepHooks<B>::value) device.OnStepEnd();
    return ended;
  }

  const StepCounts& counts() const { return counts_; }

 private:
  // What End does with a deferred step.
  sdk::Status IssueStep(B& device, int32_t* replayed) {
    if (!deferring_) return sdk::Status::Ok();
    deferring_ = false;
    if constexpr (HasBeforeStepIssue<B>::value) device.BeforeStepIssue();
    if constexpr (HasStepGraphs<B>::value) {
      const std::function<sdk::Status()> issue = [&] { return IssueEagerly(device); };
      if (have_captured_) {
        std::string differs = current_.Difference(captured_);
        if (differs.empty()) {
          MNT_RETURN_IF_ERROR(device.ReplayStep(issue));
          *replayed = 1;
          ++counts_.replayed;
          return sdk::Status::Ok();
        }
        Say("the step differs from the captured one: " + differs);
      }
      const std::string changed = have_previous_ ? current_.Difference(previous_) : "?";
      if (have_previous_ && !changed.empty()) {
        Say("the step differs from the one before it (a step is captured once it "
            "repeats): " + changed);
      }
      if (!capture_failed_ && changed.empty()) {
        std::string why_not;
        MNT_RETURN_IF_ERROR(device.CaptureStep(issue, &why_not));
        if (why_not.empty()) {
          ++counts_.captured;
          have_captured_ = true;
          std::swap(captured_, current_);  // previous_ holds the same ops
          return sdk::Status::Ok();
        }
        capture_failed_ = true;
        have_captured_ = false;
        Say("capture failed, steps run eagerly from now on: " + why_not);
      }
    }
    MNT_RETURN_IF_ERROR(IssueEagerly(device));
    std::swap(previous_, current_);
    have_previous_ = true;
    return sdk::Status::Ok();
  }

  sdk::Status StopDeferring(B& device, const std::string& why) {
    deferring_ = false;
    have_previous_ = false;  // this step is no complete recording
    Say(why);
    const sdk::Status issued = IssueEagerly(device);
    current_.Clear();
    return issued;
  }

  sdk::Status IssueEagerly(B& device) {
    for (size_t i = 0; i < current_.size(); ++i) {
      const RecordedOp& op = current_.op(i);
      const sdk::Status s =
          op.is_device_copy()
              ? device.Copy(op.copy_dst(), op.copy_src(), op.copy_bytes(),
                            MNT_COPY_DEVICE_TO_DEVICE)
              : RunOp(device, op.Args(nullptr));
      if (!s.ok()) {
        return sdk::Status(s.code(), sdk::Format("deferred op %zu of the step: %s", i,
                                                 s.message().c_str()));
      }
    }
    return sdk::Status::Ok();
  }

  // One stderr line per distinct reason (its text up to the first ':').
  void Say(const std::string& why) {
    const std::string key = why.substr(0, why.find(':'));
    if (!said_.insert(key).second) return;
    std::fprintf(stderr, "mantissa: %s backend: a step runs eagerly: %s\n", B::kName,
                 why.c_str());
  }

  bool open_ = false;
  bool deferring_ = false;
  StepRecording current_, previous_, captured_;
  bool have_previous_ = false, have_captured_ = false, capture_failed_ = false;
  std::set<std::string> said_;
  StepCounts counts_;
};

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_SESSION_H_
