// The Mantissa plugin conformance suite: contract checks per plugin kind that
// run against any loaded plugin, in-tree or third-party (PJRT's test-factory
// idea). plugin_conformance <file.so> runs it; CI runs it on every in-tree
// plugin.
//
//  backend   memory contract (allocate/free/stats/copies) and every kernel the
//            plugin supports against the CPU reference backend on random
//            inputs (fp32 1e-5, tf32 1e-3, bf16/fp16 1e-2 relative to the
//            output's magnitude).
//  precision policy sanity (dtypes, op classes, memory plan consistent) and
//            the loss-scaler contract: a declared recipe (ABI 1.5) replayed
//            step by step; without one, skip on non-finite and back off
//            under overflows; never inf, state (with the plugin's own
//            bytes) save/restore reproduces the sequence, options reach the
//            scaler, bad options and states refused.
//  any kind  the extension chain (ABI 1.9) and the capabilities it lists;
//            what a plugin advertises decides which optional checks below
//            run (never its minor).
//  model     param-spec sanity, forward/backward against central finite
//            differences (CPU reference backend, fp32), loss_multiplier and
//            accumulate semantics, and a save/load round trip (params read
//            back through the backend into a fresh model give the identical
//            loss).
#ifndef MANTISSA_TOOLS_PLUGIN_CONFORMANCE_CONFORMANCE_H_
#define MANTISSA_TOOLS_PLUGIN_CONFORMANCE_CONFORMANCE_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "plugins/abi/mantissa.h"

namespace mnt::conformance {

// Collects PASS / FAIL / SKIP lines, printed as they happen.
class Report {
 public:
  explicit Report(std::FILE* out = stdout) : out_(out) {}
  void Pass(const std::string& check) { Line("PASS", check, ""); ++passed_; }
  void Fail(const std::string& check, const std::string& why) {
    Line("FAIL", check, why);
    ++failed_;
  }
  void Skip(const std::string& check, const std::string& why) {
    Line("SKIP", check, why);
    ++skipped_;
  }
  // Pass when `why` is empty, else Fail.
  void Check(const std::string& check, const std::string& why) {
    if (why.empty()) Pass(check); else Fail(check, why);
  }
  int passed() const { return passed_; }
  int failed() const { return failed_; }
  int skipped() const { return skipped_; }

 private:
  void Line(const char* tag, const std::string& check, const std::string& why) {
    std::fprintf(out_, "[%s] %s%s%s\n", tag, check.c_str(),
                 why.empty() ? "" : ": ", why.c_str());
    std::fflush(out_);
  }
  std::FILE* out_;
  int passed_ = 0, failed_ = 0, skipped_ = 0;
};

// `options` are passed to the candidate's Backend_Create ("" = its
// defaults); the CPU reference always runs with its defaults.
void CheckBackendPlugin(const MNT_Plugin_Api* plugin, const std::string& options,
                        uint64_t seed, Report* report);
// `options` are the plugin's own options (LossScaler_Create's
// precision_options, --precision_options in the trainer).
void CheckPrecisionPlugin(const MNT_Plugin_Api* plugin, const std::string& options,
                          uint64_t seed, Report* report);
// `options` are passed to Model_Create ("" = the plugin's defaults).
void CheckModelPlugin(const MNT_Plugin_Api* plugin, const std::string& options,
                      uint64_t seed, Report* report);

// The extension chain (ABI 1.9), any kind: well-formed, and a capabilities
// extension listing only known capabilities of the plugin's kind, once each.
void CheckExtensions(const MNT_Plugin_Api* plugin, Report* report);

// CheckExtensions, then dispatches on plugin->kind; `options` go to Backend_Create, Model_Create
// or a precision plugin's LossScaler_Create (precision_options).
void RunConformance(const MNT_Plugin_Api* plugin, const std::string& options,
                    uint64_t seed, Report* report);

}  // namespace mnt::conformance

#endif  // MANTISSA_TOOLS_PLUGIN_CONFORMANCE_CONFORMANCE_H_
