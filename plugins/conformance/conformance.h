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
//            scaler, bad options and states refused; the FP8 scaling
//            recipe (ABI 1.10) within the ABI's ranges, declared by any
//            plugin whose MATMUL computes in FP8.
//  any kind  the extension chain (ABI 1.9) and the capabilities it lists;
//            what a plugin advertises decides which optional checks below
//            run (never its minor).
//  collectives  a backend's collectives extension (mnt_collectives.h), when
//            it has one, with every rank of the run (mpirun -np W: the
//            world from OMPI_COMM_WORLD_*, the unique id exchanged over
//            MPI; world size 1 outside mpirun): every op x reduce x dtype,
//            in-place forms, against a float64 rank-order reference each
//            rank computes from every rank's seeded inputs, bit-identical
//            on a repeat, the same bits on every rank, ordered on the
//            stream, invalid arguments refused with an error; for version
//            2 of the extension, started collectives (Start then Wait) with
//            Run's bits, several in flight waited for in any order, and a
//            Start that returns without waiting for the other ranks; every
//            check's verdict is agreed by all ranks (collectives_checks.cc).
//  model     param-spec sanity, forward/backward against central finite
//            differences (CPU reference backend, fp32), loss_multiplier and
//            accumulate semantics, and a save/load round trip (params read
//            back through the backend into a fresh model give the identical
//            loss); then the model in every storage dtype a precision gives
//            it (bf16, fp16; FP8 GEMMs where it offers them) against its own
//            fp32 run, with its activations in that dtype, and with
//            checkpointing=1 where its options take it, which must give the
//            gradients of the run without.
#ifndef MANTISSA_PLUGINS_CONFORMANCE_CONFORMANCE_H_
#define MANTISSA_PLUGINS_CONFORMANCE_CONFORMANCE_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "plugins/abi/mantissa.h"
#include "plugins/conformance/host_exchange.h"

namespace mnt::conformance {

// Collects PASS / FAIL / SKIP lines, printed as they happen (NOTE lines
// are information, not counted). With failures_only (ranks other than 0 of
// a multi-rank run) only FAIL lines are printed, each after `prefix`.
class Report {
 public:
  explicit Report(std::FILE* out = stdout, std::string prefix = "",
                  bool failures_only = false)
      : out_(out), prefix_(std::move(prefix)), failures_only_(failures_only) {}
  void Note(const std::string& text) {
    if (failures_only_) return;
    std::fprintf(out_, "%s[NOTE] %s\n", prefix_.c_str(), text.c_str());
    std::fflush(out_);
  }
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
    if (failures_only_ && std::string(tag) != "FAIL") return;
    std::fprintf(out_, "%s[%s] %s%s%s\n", prefix_.c_str(), tag, check.c_str(),
                 why.empty() ? "" : ": ", why.c_str());
    std::fflush(out_);
  }
  std::FILE* out_;
  std::string prefix_;
  bool failures_only_;
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

// A backend's collectives extension with every rank of `host` (each rank
// calls it, with the same seed); SKIP when the backend has none. `options`
// go to Backend_Create.
void CheckCollectives(const MNT_Plugin_Api* plugin, const std::string& options,
                      uint64_t seed, HostExchange* host, Report* report);

// CheckExtensions, then dispatches on plugin->kind (a backend: then its
// collectives with the ranks of `host`); `options` go to Backend_Create,
// Model_Create or a precision plugin's LossScaler_Create (precision_options).
// Every rank of `host` calls it with the same seed.
void RunConformance(const MNT_Plugin_Api* plugin, const std::string& options,
                    uint64_t seed, HostExchange* host, Report* report);

}  // namespace mnt::conformance

#endif  // MANTISSA_PLUGINS_CONFORMANCE_CONFORMANCE_H_
