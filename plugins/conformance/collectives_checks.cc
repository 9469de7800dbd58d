// Conformance checks for a backend's collectives extension
// (plugins/abi/mnt_collectives.h), run by every rank of the job: under
// `mpirun -np W` each rank is one process (HostExchange says which), and
// outside mpirun the world has one rank.
//
// What is checked, with check names "collectives[world=W]/...":
//  * the extension's table (version, every call present);
//  * Collectives_GetUniqueId on rank 0, its bytes broadcast to every rank
//    over MPI (the host's job, as the trainer does it), Communicator_Create
//    on every rank with (rank, W, id), Communicator_Destroy;
//  * every op x reduce x dtype: ALL_REDUCE and REDUCE_SCATTER with SUM, AVG
//    and MAX on F32, BF16 and F16; ALL_GATHER and BROADCAST (every root
//    form: rank 0, the last rank, a middle one) on F32, BF16, F16, I32, U8
//    and F64; the in-place forms the header allows (ALL_REDUCE output =
//    input, ALL_GATHER input = the rank's own chunk of the output,
//    BROADCAST output = input on the root and no input data elsewhere);
//    sizes from one element (fewer than the ranks) to a few thousand;
//  * each on fresh random inputs: rank k's input of a case comes from
//    (seed, case, k), so every rank computes every rank's input and so the
//    reference itself: reductions in float64 in rank order, within
//    (W + 2) eps(dtype) of the sum of magnitudes (AVG divided by W), which
//    admits any fixed order and 16-bit accumulation (the cuda backend's
//    NCCL); MAX, gathers and broadcasts exact;
//  * the same bits on a second call with the same inputs (output buffer
//    pre-filled with another pattern), and on every rank (a hash of the
//    replicated outputs compared over MPI);
//  * ordering on the stream: FILL (a kernel) writes the input, the
//    collective reads it and CAST reads the result with no synchronisation
//    in between;
//  * invalid arguments (NULL args, short struct_size, bad rank, world or id,
//    NULL communicator, unknown op or reduce, mismatched dtypes or counts, a
//    non-float reduction, a root outside the world, no output) refused with
//    an error, identically on every rank, and the communicator still works
//    afterwards.
// Version 2 of the extension (started collectives), when the table says so
// (a version-1 extension gets every check above and a SKIP for these):
//  * the table: struct_size covers version 2, Start and Wait non-NULL;
//  * every case above once more with Collectives_Start then
//    Collectives_Wait ("Start+Wait: <case>"): Run's bits exactly, and the
//    same bits on every rank (the MNT_Tensor structs Start was given are
//    cleared before Wait: they are borrowed for the call only);
//  * ordering: FILL, Start, a FILL of another tensor while it is in
//    flight, Wait, CAST, with no synchronisation;
//  * four collectives in flight at once, waited for in reverse order, each
//    with Run's bits;
//  * Start does not wait for the other ranks (2 or more ranks): rank 0
//    starts, then signals the others over MPI; they wait for the signal
//    (kStartWaitSeconds) before starting theirs, so a Start that waits for
//    them fails the check (after that wait) instead of hanging;
//  * Start refuses NULL args, a short struct_size, a NULL communicator and
//    the bad operands above, leaving work NULL; Wait refuses NULL args and
//    a NULL work;
//  * Communicator_Destroy with a started collective never waited for.
// How many reductions give exactly the bits of the header's default
// (rank-order fp32 sum, AVG divided once, 16-bit rounded once) is a NOTE:
// a backend may state another fixed order (cuda/NCCL does).
//
// Every check's verdict is agreed: each rank's is exchanged and every rank
// reports the check failed if any rank failed it, naming the rank, so all
// ranks take the same path (a collective needs every rank).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "plugins/abi/mnt_collectives.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/collectives_client.h"
#include "plugins/sdk/extension_chain.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"
#include "plugins/conformance/conformance.h"

namespace mnt::conformance {
namespace {

using sdk::Format;
using sdk::Status;

constexpr MNT_DType kReduceTypes[] = {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16};
constexpr MNT_DType kMoveTypes[] = {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16,
                                    MNT_DTYPE_I32, MNT_DTYPE_U8,   MNT_DTYPE_F64};
constexpr MNT_ReduceOp kReduceOps[] = {MNT_REDUCE_OP_SUM, MNT_REDUCE_OP_AVG,
                                       MNT_REDUCE_OP_MAX};

std::string Describe(const Status& s) {
  if (s.ok()) return "OK";
  const char* code = sdk::AbiEnum<MNT_ErrorCode>::Name(s.code());
  return Format("%s: %s", code != nullptr ? code : "unknown code", s.message().c_str());
}

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t Fnv(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Machine epsilon of a reduction dtype.
double Eps(MNT_DType t) {
  return t == MNT_DTYPE_F32 ? 0x1p-23 : t == MNT_DTYPE_F16 ? 0x1p-10 : 0x1p-7;
}

double Load(const std::string& bytes, MNT_DType t, int64_t i) {
  const char* p = bytes.data() + i * sdk::DTypeSize(t);
  if (t == MNT_DTYPE_F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == MNT_DTYPE_F16 ? HalfBitsToFloat(h) : Bf16BitsToFloat(h);
}

void StoreFromFloat(float v, MNT_DType t, char* p) {
  if (t == MNT_DTYPE_F32) {
    std::memcpy(p, &v, 4);
  } else {
    const uint16_t h = t == MNT_DTYPE_F16 ? FloatToHalfBits(v) : FloatToBf16Bits(v);
    std::memcpy(p, &h, 2);
  }
}

// Rank k's input of case `index`: `count` elements, floats uniform in
// [-2, 2] stored in the dtype (so exact there), other dtypes random bytes.
std::string MakeInput(uint64_t seed, int index, int k, MNT_DType t, int64_t count) {
  std::mt19937_64 rng(SplitMix(SplitMix(seed ^ 0xc011ec7ull) + index * 1000003ull + k));
  std::string bytes(count * sdk::DTypeSize(t), '\0');
  if (sdk::IsFloatStorage(t)) {
    std::uniform_real_distribution<double> u(-2, 2);
    for (int64_t i = 0; i < count; ++i) {
      StoreFromFloat(static_cast<float>(u(rng)), t, &bytes[i * sdk::DTypeSize(t)]);
    }
  } else {
    for (char& c : bytes) c = static_cast<char>(rng());
  }
  return bytes;
}

// One collective call of the op table.
struct Case {
  MNT_CollectiveOp op;
  MNT_ReduceOp reduce = MNT_REDUCE_OP_INVALID;  // reductions
  MNT_DType dtype;
  bool in_place = false;
  int32_t root = 0;  // BROADCAST
  int64_t n = 0;     // per-rank elements (see Counts)
};

bool IsReduction(MNT_CollectiveOp op) {
  return op == MNT_COLLECTIVE_ALL_REDUCE || op == MNT_COLLECTIVE_REDUCE_SCATTER;
}

// Input and output elements of a case on one rank of `world`.
void Counts(const Case& c, int world, int64_t* in, int64_t* out) {
  *in = c.op == MNT_COLLECTIVE_REDUCE_SCATTER ? c.n * world : c.n;
  *out = c.op == MNT_COLLECTIVE_ALL_GATHER ? c.n * world : c.n;
}

// "ALL_REDUCE sum f32 out-of-place n=3", the check names' case part.
std::string CaseName(const Case& c) {
  std::string s = sdk::CollectiveOpName(c.op);
  if (IsReduction(c.op)) {
    std::string reduce = sdk::CollectiveReduceOpName(c.reduce);
    for (char& ch : reduce) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    s += " " + reduce;
  }
  s += std::string(" ") + sdk::DTypeName(c.dtype);
  if (c.op == MNT_COLLECTIVE_BROADCAST) s += Format(" root=%d", c.root);
  s += c.in_place ? " in-place" : " out-of-place";
  return s + Format(" n=%lld", static_cast<long long>(c.n));
}

// The case's output on this rank from the header's default: the rank-order
// fp32 sum (AVG divided by the world once, MAX exact), rounded once to the
// dtype. Only for the NOTE on exact agreement.
std::string DefaultOrderBits(const Case& c, const std::vector<std::string>& inputs, int rank,
                             int world) {
  const size_t es = sdk::DTypeSize(c.dtype);
  const int64_t offset = c.op == MNT_COLLECTIVE_REDUCE_SCATTER ? rank * c.n : 0;
  std::string out(c.n * es, '\0');
  for (int64_t i = 0; i < c.n; ++i) {
    float acc = static_cast<float>(Load(inputs[0], c.dtype, offset + i));
    for (int k = 1; k < world; ++k) {
      const float x = static_cast<float>(Load(inputs[k], c.dtype, offset + i));
      acc = c.reduce == MNT_REDUCE_OP_MAX ? std::max(acc, x) : acc + x;
    }
    if (c.reduce == MNT_REDUCE_OP_AVG) acc = acc / static_cast<float>(world);
    StoreFromFloat(acc, c.dtype, &out[i * es]);
  }
  return out;
}

// Why this rank's output of a case is wrong against the float64 reference
// over every rank's input, or "".
std::string CheckAgainstReference(const Case& c, const std::vector<std::string>& inputs,
                                  const std::string& got, int rank, int world) {
  const size_t es = sdk::DTypeSize(c.dtype);
  if (c.op == MNT_COLLECTIVE_ALL_GATHER || c.op == MNT_COLLECTIVE_BROADCAST) {
    std::string want;
    if (c.op == MNT_COLLECTIVE_ALL_GATHER) {
      for (const std::string& in : inputs) want += in;
    } else {
      want = inputs[c.root];
    }
    for (size_t b = 0; b < want.size(); ++b) {
      if (got[b] != want[b]) {
        const int64_t e = static_cast<int64_t>(b / es);
        const int64_t chunk = c.op == MNT_COLLECTIVE_ALL_GATHER ? e / c.n : c.root;
        return Format("element %lld differs from rank %lld's input element %lld (bytes "
                      "must be moved exactly)",
                      static_cast<long long>(e), static_cast<long long>(chunk),
                      static_cast<long long>(e % c.n));
      }
    }
    return "";
  }
  const int64_t offset = c.op == MNT_COLLECTIVE_REDUCE_SCATTER ? rank * c.n : 0;
  const double eps = Eps(c.dtype);
  for (int64_t i = 0; i < c.n; ++i) {
    double want = 0, magnitude = 0;
    for (int k = 0; k < world; ++k) {
      const double x = Load(inputs[k], c.dtype, offset + i);
      want = k == 0 ? x : c.reduce == MNT_REDUCE_OP_MAX ? std::max(want, x) : want + x;
      magnitude += std::abs(x);
    }
    double tol = 0;
    if (c.reduce == MNT_REDUCE_OP_AVG) {
      want /= world;
      magnitude /= world;
    }
    if (c.reduce != MNT_REDUCE_OP_MAX) tol = (world + 2) * eps * magnitude + 1e-7 * eps;
    const double g = Load(got, c.dtype, i);
    if (!std::isfinite(g) || std::abs(g - want) > tol) {
      return Format("output[%lld] = %.9g, reference %.9g (input element %lld of %d ranks; "
                    "tolerance %.3g%s)",
                    static_cast<long long>(i), g, want, static_cast<long long>(offset + i),
                    world, tol, c.reduce == MNT_REDUCE_OP_MAX ? ", MAX is exact" : "");
    }
  }
  return "";
}

// The index of the first byte where `a` and `b` differ (they have one size).
size_t FirstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// How long the other ranks give rank 0's Collectives_Start to return before
// they start theirs anyway (the asynchrony check): far longer than a Start
// that returns at once needs on a loaded machine, and short enough that a
// Start which waits for them fails the check within the test's time.
constexpr double kStartWaitSeconds = 20;

// Every rank's verdict on one check combined: "" when every rank passed,
// else the failures naming their ranks (the same string on every rank).
std::string Agree(HostExchange* host, const std::string& why) {
  const std::vector<std::string> all = host->AllGather(why);
  if (host->world_size() == 1) return why;
  std::string out;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[r].empty()) continue;
    out += (out.empty() ? "" : "; ") + Format("rank %d: %s", r, all[r].c_str());
  }
  return out;
}

class Checker {
 public:
  Checker(const sdk::BackendInstance& backend, HostExchange* host, Report* r, std::string prefix)
      : backend_(backend), host_(host), r_(r), n_(std::move(prefix)) {}

  // Version 2's calls are checked too (set when the extension is version 2
  // with both calls present).
  void set_started(bool on) { started_ = on; }

  // Runs one case on this rank with Collectives_Run (twice) and reports its
  // agreed verdict; with version 2 also with Collectives_Start and
  // Collectives_Wait, reported as its own check ("Start+Wait: ..."), which
  // must give Run's bits.
  void RunCase(const sdk::Communicator& comm, const Case& c, int index, uint64_t seed,
               const std::string& label = "") {
    const int rank = host_->rank(), world = host_->world_size();
    const size_t es = sdk::DTypeSize(c.dtype);
    int64_t in_n = 0, out_n = 0;
    Counts(c, world, &in_n, &out_n);
    std::vector<std::string> inputs(world);
    for (int k = 0; k < world; ++k) inputs[k] = MakeInput(seed, index, k, c.dtype, in_n);
    const sdk::BackendClient& client = backend_.client();
    sdk::DeviceBuffer in_buf, out_buf;
    Status s = client.Allocate(out_n * es, MNT_MEMORY_WORKSPACE, &out_buf);
    if (s.ok() && !c.in_place) s = client.Allocate(in_n * es, MNT_MEMORY_WORKSPACE, &in_buf);
    // Every rank must reach the collective, or none.
    if (const std::string setup = Agree(host_, s.ok() ? "" : "allocating: " + Describe(s));
        !setup.empty()) {
      r_->Fail(n_ + label + CaseName(c), setup);
      if (started_) r_->Fail(n_ + "Start+Wait: " + label + CaseName(c), setup);
      return;
    }
    const int64_t dims_in[1] = {in_n}, dims_out[1] = {out_n};
    const MNT_Tensor out = sdk::MakeTensor(out_buf.data(), c.dtype, 1, dims_out);
    MNT_Tensor in = sdk::MakeTensor(in_buf.data(), c.dtype, 1, dims_in);
    char* out_bytes = static_cast<char*>(out_buf.data());
    // Calls 0 and 1: Collectives_Run; call 2 (version 2): Start, then Wait.
    const int calls = started_ ? 3 : 2;
    std::string got[3], why[3];
    for (int call = 0; call < calls; ++call) {
      // Another pattern before each call: each must write the same bits.
      const char pattern = static_cast<char>(call == 0 ? 0xcd : call == 1 ? 0x3a : 0x5e);
      const std::string fill(out_n * es, pattern);
      s = client.ToDevice(out_bytes, fill.data(), fill.size());
      if (!c.in_place) {
        if (s.ok()) s = client.ToDevice(in_buf.data(), inputs[rank].data(), in_n * es);
      } else if (c.op == MNT_COLLECTIVE_ALL_REDUCE) {
        in.data = out_bytes;
        if (s.ok()) s = client.ToDevice(out_bytes, inputs[rank].data(), in_n * es);
      } else if (c.op == MNT_COLLECTIVE_ALL_GATHER) {
        in.data = out_bytes + rank * in_n * es;
        if (s.ok()) s = client.ToDevice(in.data, inputs[rank].data(), in_n * es);
      } else {  // BROADCAST: output = input on the root, no input data elsewhere
        in.data = rank == c.root ? out_bytes : nullptr;
        if (s.ok() && rank == c.root) {
          s = client.ToDevice(out_bytes, inputs[rank].data(), in_n * es);
        }
      }
      if (!s.ok()) {
        // Cannot happen after a good allocation; the other ranks may hang
        // in the collective, which the test's timeout reports.
        why[call] = "uploading: " + Describe(s);
        break;
      }
      if (call < 2) {
        s = comm.Run(c.op, c.reduce, c.root, &in, &out);
      } else {
        sdk::CollectiveWork work;
        // Copies: Start borrows the MNT_Tensor structs for the call only
        // (the memory they describe until Wait), so they are cleared
        // before Wait; a backend that reads them later finds no tensor.
        MNT_Tensor in_struct = in, out_struct = out;
        s = comm.Start(c.op, c.reduce, c.root, &in_struct, &out_struct, &work);
        in_struct = MNT_Tensor{};
        out_struct = MNT_Tensor{};
        if (s.ok()) {
          s = comm.Wait(&work);
          if (!s.ok()) s = sdk::Internal("Collectives_Wait: " + Describe(s));
        } else {
          s = sdk::Internal("Collectives_Start: " + Describe(s));
        }
      }
      if (s.ok()) s = client.Synchronize();
      got[call].assign(out_n * es, '\0');
      if (s.ok()) s = client.ToHost(got[call].data(), out_bytes, got[call].size());
      if (!s.ok()) {
        why[call] = call < 2 ? Format("call %d: %s", call + 1, Describe(s).c_str()) : Describe(s);
        // Run's calls failed: no Start either (as before version 2).
        if (call < 2) break;
      }
    }
    std::string run_why = why[0].empty() ? why[1] : why[0];
    if (run_why.empty()) run_why = CheckAgainstReference(c, inputs, got[0], rank, world);
    if (run_why.empty() && got[1] != got[0]) {
      run_why = Format("not deterministic: a second call with the same inputs differs at "
                       "element %zu",
                       FirstDifference(got[0], got[1]) / es);
    }
    if (run_why.empty() && IsReduction(c.op)) {
      ++reductions_;
      if (got[0] == DefaultOrderBits(c, inputs, rank, world)) ++default_order_bits_;
    }
    r_->Check(n_ + label + CaseName(c), AgreeOnOutput(c, got[0], run_why));
    if (!started_) return;
    // Start+Wait: Run's bits when Run gave good ones, else the reference.
    std::string start_why = why[2];
    if (start_why.empty() && got[2].empty()) start_why = "not run: Collectives_Run failed";
    if (start_why.empty()) start_why = CheckAgainstReference(c, inputs, got[2], rank, world);
    if (start_why.empty() && run_why.empty() && got[2] != got[0]) {
      start_why = Format("element %zu differs from Collectives_Run's bits (Start and Wait must "
                         "give Run's results)",
                         FirstDifference(got[0], got[2]) / es);
    }
    r_->Check(n_ + "Start+Wait: " + label + CaseName(c),
              AgreeOnOutput(c, got[2], start_why));
  }

  // Several started collectives in flight at once (different ops, dtypes
  // and buffers), waited for in reverse order: each gives the bits
  // Collectives_Run gives it. A backend that joins works in issue order
  // only, or whose Wait joins another work than the one it is given, fails.
  void ReverseOrderWaits(const sdk::Communicator& comm, int first_index, uint64_t seed) {
    const int rank = host_->rank(), world = host_->world_size();
    const std::string name =
        n_ + "4 started collectives in flight, waited for in reverse order";
    const std::vector<Case> cases = {
        {MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, MNT_DTYPE_F32, false, 0, 3001},
        {MNT_COLLECTIVE_REDUCE_SCATTER, MNT_REDUCE_OP_AVG, MNT_DTYPE_BF16, false, 0, 500},
        {MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, MNT_DTYPE_F16, false, 0, 777},
        {MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, MNT_DTYPE_I32, false, world - 1, 1000},
    };
    const size_t k = cases.size();
    const sdk::BackendClient& client = backend_.client();
    std::vector<std::vector<std::string>> inputs(k);
    std::vector<sdk::DeviceBuffer> in_buf(k), run_buf(k), start_buf(k);
    std::vector<MNT_Tensor> in(k), run_out(k), start_out(k);
    Status s;
    for (size_t i = 0; i < k && s.ok(); ++i) {
      const Case& c = cases[i];
      const size_t es = sdk::DTypeSize(c.dtype);
      int64_t in_n = 0, out_n = 0;
      Counts(c, world, &in_n, &out_n);
      for (int r = 0; r < world; ++r) {
        inputs[i].push_back(MakeInput(seed, first_index + static_cast<int>(i), r, c.dtype, in_n));
      }
      s = client.Allocate(in_n * es, MNT_MEMORY_WORKSPACE, &in_buf[i]);
      if (s.ok()) s = client.Allocate(out_n * es, MNT_MEMORY_WORKSPACE, &run_buf[i]);
      if (s.ok()) s = client.Allocate(out_n * es, MNT_MEMORY_WORKSPACE, &start_buf[i]);
      if (s.ok()) s = client.ToDevice(in_buf[i].data(), inputs[i][rank].data(), in_n * es);
      if (s.ok()) {
        const std::string fill(out_n * es, static_cast<char>(0xa5));
        s = client.ToDevice(start_buf[i].data(), fill.data(), fill.size());
      }
      const int64_t dims_in[1] = {in_n}, dims_out[1] = {out_n};
      in[i] = sdk::MakeTensor(in_buf[i].data(), c.dtype, 1, dims_in);
      run_out[i] = sdk::MakeTensor(run_buf[i].data(), c.dtype, 1, dims_out);
      start_out[i] = sdk::MakeTensor(start_buf[i].data(), c.dtype, 1, dims_out);
    }
    if (const std::string setup = Agree(host_, s.ok() ? "" : Describe(s)); !setup.empty()) {
      r_->Fail(name, setup);
      return;
    }
    std::string why;
    // Run's bits first, one collective after another.
    for (size_t i = 0; i < k; ++i) {
      const Case& c = cases[i];
      s = comm.Run(c.op, c.reduce, c.root, &in[i], &run_out[i]);
      if (!s.ok() && why.empty()) why = Format("Collectives_Run of %s: %s", CaseName(c).c_str(),
                                               Describe(s).c_str());
    }
    // Then all four started before any is waited for. Every rank starts
    // all of them, whatever failed, so no rank is left waiting in one.
    std::vector<sdk::CollectiveWork> works(k);
    for (size_t i = 0; i < k; ++i) {
      const Case& c = cases[i];
      s = comm.Start(c.op, c.reduce, c.root, &in[i], &start_out[i], &works[i]);
      if (!s.ok() && why.empty()) why = Format("Collectives_Start of %s: %s",
                                               CaseName(c).c_str(), Describe(s).c_str());
    }
    for (size_t j = k; j-- > 0;) {
      if (!works[j].pending()) continue;
      s = comm.Wait(&works[j]);
      if (!s.ok() && why.empty()) why = Format("Collectives_Wait of %s (waited for as number "
                                               "%zu of %zu): %s",
                                               CaseName(cases[j]).c_str(), k - j, k,
                                               Describe(s).c_str());
    }
    s = client.Synchronize();
    if (!s.ok() && why.empty()) why = "Backend_Synchronize: " + Describe(s);
    for (size_t i = 0; i < k && why.empty(); ++i) {
      const Case& c = cases[i];
      std::string want(run_buf[i].size(), '\0'), got(start_buf[i].size(), '\0');
      s = client.ToHost(want.data(), run_buf[i].data(), want.size());
      if (s.ok()) s = client.ToHost(got.data(), start_buf[i].data(), got.size());
      if (!s.ok()) {
        why = Describe(s);
      } else if (std::string ref = CheckAgainstReference(c, inputs[i], got, rank, world);
                 !ref.empty()) {
        why = Format("%s (started as number %zu, waited for as number %zu): %s",
                     CaseName(c).c_str(), i + 1, k - i, ref.c_str());
      } else if (got != want) {
        why = Format("%s (started as number %zu, waited for as number %zu): element %zu "
                     "differs from Collectives_Run's bits",
                     CaseName(c).c_str(), i + 1, k - i,
                     FirstDifference(want, got) / sdk::DTypeSize(c.dtype));
      }
    }
    r_->Check(name, Agree(host_, why));
  }

  // Start does not wait for the other ranks: rank 0 starts an ALL_REDUCE
  // and, once Start has returned, signals the other ranks, which wait for
  // that signal (for at most kStartWaitSeconds) before they start theirs.
  // A Start that waits for the other ranks to join never returns on rank 0
  // before they give up waiting: they then start anyway (so the job goes
  // on and the check fails instead of hanging).
  void StartDoesNotWait(const sdk::Communicator& comm, int index, uint64_t seed) {
    const int rank = host_->rank(), world = host_->world_size();
    const std::string name =
        n_ + "Collectives_Start returns before the other ranks have started theirs";
    if (world == 1) {
      r_->Skip(name, "needs 2 or more ranks (run under mpirun -np 2)");
      return;
    }
    const Case c{MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, MNT_DTYPE_F32, false, 0, 4096};
    std::vector<std::string> inputs(world);
    for (int k = 0; k < world; ++k) inputs[k] = MakeInput(seed, index, k, c.dtype, c.n);
    const sdk::BackendClient& client = backend_.client();
    sdk::DeviceBuffer in_buf, out_buf;
    Status s = client.Allocate(c.n * 4, MNT_MEMORY_WORKSPACE, &in_buf);
    if (s.ok()) s = client.Allocate(c.n * 4, MNT_MEMORY_WORKSPACE, &out_buf);
    if (s.ok()) s = client.ToDevice(in_buf.data(), inputs[rank].data(), c.n * 4);
    if (s.ok()) {
      // Not an earlier check's result, which fresh memory may still hold.
      const std::string stale(c.n * 4, static_cast<char>(0xa5));
      s = client.ToDevice(out_buf.data(), stale.data(), stale.size());
    }
    if (s.ok()) s = client.Synchronize();  // so only Start is timed below
    if (const std::string setup = Agree(host_, s.ok() ? "" : Describe(s)); !setup.empty()) {
      r_->Fail(name, setup);
      return;
    }
    const int64_t dims[1] = {c.n};
    const MNT_Tensor in = sdk::MakeTensor(in_buf.data(), c.dtype, 1, dims);
    const MNT_Tensor out = sdk::MakeTensor(out_buf.data(), c.dtype, 1, dims);
    sdk::CollectiveWork work;
    std::string why;
    bool in_time = true;
    if (rank == 0) {
      s = comm.Start(c.op, c.reduce, c.root, &in, &out, &work);
      host_->SendSignal();
    } else {
      in_time = host_->AwaitSignal(kStartWaitSeconds);
      s = comm.Start(c.op, c.reduce, c.root, &in, &out, &work);
      host_->EndSignal();
    }
    if (!s.ok()) why = "Collectives_Start: " + Describe(s);
    if (!in_time) {
      const std::string level = host_->MpiThreadLevel();
      why = Format("rank 0's Collectives_Start had not returned after %.0f s, with this rank "
                   "not started yet: Start waited for the other ranks (it must return "
                   "without them)%s",
                   kStartWaitSeconds,
                   level == "MPI_THREAD_MULTIPLE"
                       ? ""
                       : Format(" (this MPI gives %s, not MPI_THREAD_MULTIPLE: a backend "
                                "whose collectives call MPI from a thread of their own "
                                "cannot start them without it)",
                                level.c_str())
                             .c_str());
    }
    if (work.pending()) {
      s = comm.Wait(&work);
      if (!s.ok() && why.empty()) why = "Collectives_Wait: " + Describe(s);
    }
    std::string got(c.n * 4, '\0');
    if (why.empty()) s = client.Synchronize();
    if (why.empty() && s.ok()) s = client.ToHost(got.data(), out_buf.data(), got.size());
    if (why.empty() && !s.ok()) why = Describe(s);
    if (why.empty()) why = CheckAgainstReference(c, inputs, got, rank, world);
    r_->Check(name, Agree(host_, why));
  }

  // FILL (a kernel) writes the input, the collective reads it, CAST reads
  // its output, with no synchronisation in between. `started` (version 2):
  // the collective is started, another FILL (of a tensor it does not touch)
  // is issued while it is in flight, and CAST comes after Collectives_Wait:
  // Start reads what the stream wrote before it, Wait's result is what the
  // stream reads after it.
  void StreamOrder(const sdk::Communicator& comm, bool started) {
    const std::string name =
        n_ + (started ? "ordered on the stream (FILL -> Collectives_Start ALL_REDUCE sum, "
                        "FILL of another tensor -> Collectives_Wait -> CAST)"
                      : "ordered on the stream (FILL -> ALL_REDUCE sum -> CAST)");
    if (!backend_.Supports(MNT_OP_FILL) || !backend_.Supports(MNT_OP_CAST)) {
      r_->Skip(name, "needs the backend's FILL and CAST");  // same plugin on every rank
      return;
    }
    const int rank = host_->rank(), world = host_->world_size();
    const sdk::BackendClient& client = backend_.client();
    const int64_t n = 1000 + 37 * world;
    const int64_t dims[1] = {n};
    sdk::DeviceBuffer a, b, c, d;
    Status s = client.Allocate(n * 4, MNT_MEMORY_WORKSPACE, &a);
    if (s.ok()) s = client.Allocate(n * 4, MNT_MEMORY_WORKSPACE, &b);
    if (s.ok()) s = client.Allocate(n * 2, MNT_MEMORY_WORKSPACE, &c);
    if (s.ok()) s = client.Allocate(n * 4, MNT_MEMORY_WORKSPACE, &d);
    if (const std::string setup = Agree(host_, s.ok() ? "" : Describe(s)); !setup.empty()) {
      r_->Fail(name, setup);
      return;
    }
    const MNT_Tensor ta = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, dims);
    const MNT_Tensor tb = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, dims);
    const MNT_Tensor tc = sdk::MakeTensor(c.data(), MNT_DTYPE_BF16, 1, dims);
    const MNT_Tensor td = sdk::MakeTensor(d.data(), MNT_DTYPE_F32, 1, dims);
    MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 0.25 * (rank + 1)};
    MNT_FillParams fill_other{MNT_FillParams_STRUCT_SIZE, 3.0};
    // The output starts as something else: fresh memory may still hold an
    // earlier check's result, which is this one's.
    MNT_FillParams fill_stale{MNT_FillParams_STRUCT_SIZE, -7.0};
    std::string why;
    s = client.Run(MNT_OP_FILL, {}, {tb}, &fill_stale);
    if (s.ok()) s = client.Run(MNT_OP_FILL, {}, {ta}, &fill);
    if (!s.ok()) why = "FILL: " + Describe(s);
    // The collective runs even after a failed FILL: every rank must call it.
    if (!started) {
      Status run = comm.Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &ta, &tb);
      if (why.empty() && !run.ok()) why = "ALL_REDUCE: " + Describe(run);
    } else {
      sdk::CollectiveWork work;
      Status st = comm.Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &ta, &tb, &work);
      if (why.empty() && !st.ok()) why = "Collectives_Start: " + Describe(st);
      s = client.Run(MNT_OP_FILL, {}, {td}, &fill_other);
      if (why.empty() && !s.ok()) why = "FILL while the collective is in flight: " + Describe(s);
      if (work.pending()) {
        st = comm.Wait(&work);
        if (why.empty() && !st.ok()) why = "Collectives_Wait: " + Describe(st);
      }
    }
    if (why.empty()) {
      s = client.Run(MNT_OP_CAST, {tb}, {tc});
      if (!s.ok()) why = "CAST: " + Describe(s);
    }
    if (why.empty()) {
      s = client.Synchronize();
      std::vector<uint16_t> host(n);
      std::vector<float> other(n);
      if (s.ok()) s = client.ToHost(host.data(), c.data(), n * 2);
      if (s.ok() && started) s = client.ToHost(other.data(), d.data(), n * 4);
      const double want = 0.125 * world * (world + 1);  // exact in bf16 for small worlds
      if (!s.ok()) {
        why = Describe(s);
      } else {
        for (int64_t i = 0; i < n && why.empty(); ++i) {
          if (Bf16BitsToFloat(host[i]) != want) {
            why = Format("element %lld is %g, expected %g: the collective did not see the "
                         "FILL before it, or CAST did not see its result%s",
                         static_cast<long long>(i), Bf16BitsToFloat(host[i]), want,
                         started ? " (after Collectives_Wait)" : "");
          } else if (started && other[i] != 3.0f) {
            why = Format("element %lld of the tensor filled while the collective was in "
                         "flight is %g, expected 3",
                         static_cast<long long>(i), other[i]);
          }
        }
      }
    }
    r_->Check(name, Agree(host_, why));
  }

  // The agreed verdict on one case's output on this rank: every rank's
  // `why`, and for a replicated output (all but REDUCE_SCATTER) the same
  // bits on every rank (a hash compared over MPI).
  std::string AgreeOnOutput(const Case& c, const std::string& got, const std::string& why) {
    const int world = host_->world_size();
    const bool replicated = c.op != MNT_COLLECTIVE_REDUCE_SCATTER;
    const std::string hash = Format("%016llx", static_cast<unsigned long long>(Fnv(got)));
    const std::vector<std::string> all = host_->AllGather(hash + "|" + why);
    std::string verdict;
    for (int k = 0; k < world; ++k) {
      const std::string other = all[k].substr(17);
      if (!other.empty()) {
        verdict += (verdict.empty() ? "" : "; ") +
                   (world == 1 ? other : Format("rank %d: %s", k, other.c_str()));
      }
    }
    if (verdict.empty() && replicated) {
      for (int k = 1; k < world; ++k) {
        if (all[k].compare(0, 16, all[0], 0, 16) != 0) {
          verdict = Format("rank %d's output differs from rank 0's (every rank must get the "
                           "same bits)",
                           k);
          break;
        }
      }
    }
    return verdict;
  }

  int reductions() const { return reductions_; }
  int default_order_bits() const { return default_order_bits_; }

 private:
  const sdk::BackendInstance& backend_;
  HostExchange* host_;
  Report* r_;
  std::string n_;
  int reductions_ = 0, default_order_bits_ = 0;
  bool started_ = false;
};

// The op table: every op x reduce x dtype, in-place forms, sizes from one
// element to a few thousand. The same list on every rank.
std::vector<Case> MakeCases(uint64_t seed, int world) {
  std::mt19937_64 rng(SplitMix(seed ^ 0x5153ull));
  int size_index = 0;
  auto next_n = [&]() -> int64_t {
    switch (size_index++ % 4) {
      case 0: return 1;  // fewer elements than ranks: empty chunks
      case 1: return 2 + rng() % 14;
      case 2: return 100 + rng() % 900;
      default: return 3000 + rng() % 3000;
    }
  };
  std::vector<Case> cases;
  for (MNT_ReduceOp reduce : kReduceOps) {
    for (MNT_DType t : kReduceTypes) {
      for (bool in_place : {false, true}) {
        cases.push_back({MNT_COLLECTIVE_ALL_REDUCE, reduce, t, in_place, 0, next_n()});
      }
      cases.push_back({MNT_COLLECTIVE_REDUCE_SCATTER, reduce, t, false, 0, next_n()});
    }
  }
  std::vector<int32_t> roots = {0};
  if (world > 1) roots.push_back(world - 1);
  if (world > 2) roots.push_back(world / 2);
  for (MNT_DType t : kMoveTypes) {
    for (bool in_place : {false, true}) {
      cases.push_back(
          {MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, t, in_place, 0, next_n()});
      for (int32_t root : roots) {
        cases.push_back(
            {MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, t, in_place, root, next_n()});
      }
    }
  }
  return cases;
}

}  // namespace

void CheckCollectives(const MNT_Plugin_Api* plugin, const std::string& options,
                      uint64_t seed, HostExchange* host, Report* r) {
  const int rank = host->rank(), world = host->world_size();
  const std::string n = Format("collectives[world=%d]/", world);
  const MNT_Extension_Header* h =
      sdk::FindExtension(plugin, MNT_EXTENSION_TYPE_COLLECTIVES);
  if (h == nullptr) {
    r->Skip(n + "extension",
            "the backend has no collectives extension (it runs on one device only)");
    return;
  }
  r->Note(Format("collectives: checking the '%s' extension (version %d) with world size %d%s",
                 sdk::ExtensionName(*h), h->version, world,
                 host->launcher().empty()
                     ? " (not under mpirun; run it under mpirun -np W for W ranks)"
                     : Format(" (%s, every rank checks and agrees)",
                              host->launcher().c_str())
                           .c_str()));
  // The table, by the rule the loader applies (sdk::CheckCollectivesTable;
  // a loaded plugin passes it) and version 2's (sdk::CheckCollectivesStarts).
  sdk::CollectivesClient table;
  {
    const Status found = sdk::CollectivesClient::Find(plugin, nullptr, &table);
    r->Check(n + "extension table (version 1: every call present)",
             found.ok() ? "" : found.message());
    if (!found.ok()) return;
  }
  // Version 2's calls are read only from a table that says it has them.
  const bool started = table.starts();
  const MNT_Collectives_Extension* ext = table.extension();
  if (table.version() >= 2) {
    const Status starts = sdk::CheckCollectivesStarts(*ext);
    r->Check(n + "extension table (version 2: Collectives_Start and Collectives_Wait present)",
             starts.ok() ? "" : starts.message());
  } else {
    r->Skip(n + "Collectives_Start/Collectives_Wait (version 2)",
            "the extension is version 1 (Collectives_Run only): the version-2 checks were "
            "skipped");
  }
  std::unique_ptr<sdk::BackendInstance> backend;
  {
    Status s = sdk::BackendInstance::Create(plugin, options, &backend);
    if (s.ok() && backend->backend() == nullptr) s = sdk::Internal("Backend_Create gave NULL");
    const std::string why = Agree(host, s.ok() ? "" : Describe(s));
    r->Check(n + "create backend", why);
    if (!why.empty()) return;
  }
  const sdk::CollectivesClient coll = table.WithBackend(backend->backend());

  // Refusals that need no communicator (local on every rank).
  auto refused = [&](const std::string& what, const Status& s) {
    r->Check(n + "refuses " + what,
             Agree(host, s.ok() ? "accepted it (expected an error)" : ""));
  };
  refused("Collectives_GetUniqueId(NULL)", coll.StatusOf(ext->Collectives_GetUniqueId(nullptr)));
  {
    MNT_Collectives_GetUniqueId_Args a{};
    a.backend = backend->backend();
    refused("Collectives_GetUniqueId with struct_size 0",
            coll.StatusOf(ext->Collectives_GetUniqueId(&a)));
  }

  // Rank 0's id, to every rank over MPI.
  std::string id;
  {
    Status s;
    if (rank == 0) s = coll.GetUniqueId(&id);
    const std::string why = Agree(host, s.ok() ? "" : Describe(s));
    const std::string name = n + "Collectives_GetUniqueId on rank 0";
    if (world == 1 && s.code() == MNT_ERROR_FAILED_PRECONDITION) {
      // One process, and the backend says this machine cannot run its
      // collectives (the cuda backend without libnccl.so.2): nothing to
      // check. Under mpirun the same is a failure.
      r->Skip(name, "the backend cannot run collectives here: " + why);
      return;
    }
    r->Check(name, why);
    if (!why.empty()) return;
    host->Broadcast(&id);
  }
  {
    MNT_Communicator* bad = nullptr;
    std::string big(MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES + 1, '\0');
    std::memcpy(big.data(), id.data(), id.size());
    refused("Communicator_Create(NULL)", coll.StatusOf(ext->Communicator_Create(nullptr)));
    refused("Communicator_Create with rank -1",
            coll.CreateCommunicator(-1, world, id.data(), id.size(), &bad));
    refused(Format("Communicator_Create with rank %d = the world size", world),
            coll.CreateCommunicator(world, world, id.data(), id.size(), &bad));
    refused("Communicator_Create with world size 0",
            coll.CreateCommunicator(0, 0, id.data(), id.size(), &bad));
    refused("Communicator_Create with a NULL unique id",
            coll.CreateCommunicator(rank, world, nullptr, id.size(), &bad));
    refused("Communicator_Create with a unique id of 0 bytes",
            coll.CreateCommunicator(rank, world, id.data(), 0, &bad));
    refused(Format("Communicator_Create with a unique id of %zu bytes (> %d)", big.size(),
                   MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES),
            coll.CreateCommunicator(rank, world, big.data(), big.size(), &bad));
  }
  std::unique_ptr<sdk::Communicator> comm;
  {
    const Status s = sdk::Communicator::Create(coll, rank, world, id, &comm);
    const std::vector<std::string> all = host->AllGather(
        s.ok() ? "" : std::to_string(static_cast<int>(s.code())) + "|" + Describe(s));
    std::string why;
    bool environment_only = world == 1;
    for (int k = 0; k < world; ++k) {
      if (all[k].empty()) continue;
      const size_t bar = all[k].find('|');
      const int code = std::stoi(all[k].substr(0, bar));
      environment_only = environment_only && code == MNT_ERROR_FAILED_PRECONDITION;
      why += (why.empty() ? "" : "; ") +
             (world == 1 ? all[k].substr(bar + 1)
                         : Format("rank %d: %s", k, all[k].substr(bar + 1).c_str()));
    }
    const std::string name =
        Format("%sCommunicator_Create(rank, world size %d, rank 0's id)", n.c_str(), world);
    if (!why.empty() && environment_only) {
      // One process, and the backend says this machine cannot give it a
      // communicator (the cpu backend without libmpi): nothing to check.
      r->Skip(name, "the backend cannot create a communicator here: " + why);
      return;
    }
    r->Check(name, why);
    if (!why.empty()) return;  // this rank's communicator, if any, goes with `comm`
  }

  Checker checker(*backend, host, r, n);
  checker.set_started(started);
  const std::vector<Case> cases = MakeCases(seed, world);
  for (size_t i = 0; i < cases.size(); ++i) {
    checker.RunCase(*comm, cases[i], static_cast<int>(i), seed);
  }
  checker.StreamOrder(*comm, /*started=*/false);
  // Case indices after the table's, for the inputs of the checks below.
  int next_index = static_cast<int>(cases.size()) + 1;
  if (started) {
    checker.StreamOrder(*comm, /*started=*/true);
    checker.ReverseOrderWaits(*comm, next_index, seed);
    next_index += 4;
    checker.StartDoesNotWait(*comm, next_index++, seed);
  }

  // Invalid Collectives_Run calls, the same on every rank: refused with an
  // error before any rank waits for another.
  {
    const int64_t k = 8;
    const int64_t big = k * world + 1;  // every tensor below fits in it
    sdk::DeviceBuffer a, b;
    Status s = backend->client().Allocate(big * 4, MNT_MEMORY_WORKSPACE, &a);
    if (s.ok()) s = backend->client().Allocate(big * 4, MNT_MEMORY_WORKSPACE, &b);
    const std::string setup = Agree(host, s.ok() ? "" : Describe(s));
    if (!setup.empty()) {
      r->Fail(n + "refusals of Collectives_Run", setup);
    } else {
      const int64_t d_k[1] = {k}, d_k1[1] = {k + 1}, d_wk1[1] = {k * world + 1};
      const MNT_Tensor in = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, d_k);
      const MNT_Tensor out = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, d_k);
      const MNT_Tensor out_k1 = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, d_k1);
      const MNT_Tensor out_f16 = sdk::MakeTensor(b.data(), MNT_DTYPE_F16, 1, d_k);
      const MNT_Tensor in_i32 = sdk::MakeTensor(a.data(), MNT_DTYPE_I32, 1, d_k);
      const MNT_Tensor out_i32 = sdk::MakeTensor(b.data(), MNT_DTYPE_I32, 1, d_k);
      const MNT_Tensor in_wk1 = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, d_wk1);
      const MNT_Tensor out_wk1 = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, d_wk1);
      const auto AR = MNT_COLLECTIVE_ALL_REDUCE;
      const auto SUM = MNT_REDUCE_OP_SUM;
      refused("Collectives_Run(NULL)", coll.StatusOf(ext->Collectives_Run(nullptr)));
      {
        MNT_Collectives_Run_Args short_args = coll.RunArgs(comm->get(), AR, SUM, 0, &in, &out);
        short_args.struct_size = 0;
        refused("Collectives_Run with struct_size 0",
                coll.StatusOf(ext->Collectives_Run(&short_args)));
      }
      refused("Collectives_Run with a NULL communicator",
              coll.Run(nullptr, AR, SUM, 0, &in, &out));
      refused("Collectives_Run with op MNT_COLLECTIVE_INVALID",
              comm->Run(MNT_COLLECTIVE_INVALID, SUM, 0, &in, &out));
      refused("Collectives_Run with unknown op 99",
              comm->Run(static_cast<MNT_CollectiveOp>(99), SUM, 0, &in, &out));
      refused("ALL_REDUCE with reduce MNT_REDUCE_OP_INVALID",
              comm->Run(AR, MNT_REDUCE_OP_INVALID, 0, &in, &out));
      refused("ALL_REDUCE with unknown reduce 99",
              comm->Run(AR, static_cast<MNT_ReduceOp>(99), 0, &in, &out));
      refused("ALL_REDUCE f32 input into an f16 output", comm->Run(AR, SUM, 0, &in, &out_f16));
      refused("ALL_REDUCE with 8 input and 9 output elements",
              comm->Run(AR, SUM, 0, &in, &out_k1));
      refused("ALL_REDUCE of i32 (reductions take F32, F16, BF16)",
              comm->Run(AR, SUM, 0, &in_i32, &out_i32));
      refused("ALL_REDUCE with a NULL output", comm->Run(AR, SUM, 0, &in, nullptr));
      refused(Format("REDUCE_SCATTER with %lld input elements for 8 outputs (world size %d)",
                     static_cast<long long>(big), world),
              comm->Run(MNT_COLLECTIVE_REDUCE_SCATTER, SUM, 0, &in_wk1, &out));
      refused(Format("ALL_GATHER of 8 elements into %lld (world size %d)",
                     static_cast<long long>(big), world),
              comm->Run(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, 0, &in, &out_wk1));
      refused("BROADCAST with root -1",
              comm->Run(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, -1, &in, &out));
      refused(Format("BROADCAST with root %d = the world size", world),
              comm->Run(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, world, &in, &out));
    }
  }
  // Invalid Collectives_Start / Collectives_Wait calls (version 2), the
  // same on every rank: refused before any rank waits for another, and a
  // refused Start leaves `work` NULL (nothing for the caller to wait for).
  if (started) {
    const int64_t k = 8;
    sdk::DeviceBuffer a, b;
    Status s = backend->client().Allocate(k * 4, MNT_MEMORY_WORKSPACE, &a);
    if (s.ok()) s = backend->client().Allocate(k * 4, MNT_MEMORY_WORKSPACE, &b);
    const std::string setup = Agree(host, s.ok() ? "" : Describe(s));
    if (!setup.empty()) {
      r->Fail(n + "refusals of Collectives_Start", setup);
    } else {
      const int64_t d_k[1] = {k}, d_k1[1] = {k + 1};
      const MNT_Tensor in = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, d_k);
      const MNT_Tensor out = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, d_k);
      const MNT_Tensor out_k1 = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, d_k1);
      const MNT_Tensor out_f16 = sdk::MakeTensor(b.data(), MNT_DTYPE_F16, 1, d_k);
      const auto AR = MNT_COLLECTIVE_ALL_REDUCE;
      const auto SUM = MNT_REDUCE_OP_SUM;
      // `args` NULL passes no Args at all.
      auto start_refused = [&](const std::string& what, MNT_Collectives_Start_Args* args) {
        const Status st = coll.StatusOf(ext->Collectives_Start(args));
        std::string why;
        if (st.ok()) {
          why = "accepted it (expected an error)";
          // Best effort, so an accepted collective does not outlive its
          // buffers: every rank got the same answer from the same plugin.
          if (args != nullptr && args->work != nullptr && args->communicator != nullptr) {
            (void)coll.Wait(args->communicator, args->work);
          }
        } else if (args != nullptr && args->work != nullptr) {
          why = Format("refused it (%s) but set work: it must stay NULL on an error",
                       Describe(st).c_str());
        }
        r->Check(n + "refuses " + what, Agree(host, why));
      };
      auto args = [&](MNT_Communicator* c, MNT_CollectiveOp op, MNT_ReduceOp reduce,
                      const MNT_Tensor* o) { return coll.StartArgs(c, op, reduce, 0, &in, o); };
      MNT_Communicator* const live = comm->get();
      start_refused("Collectives_Start(NULL)", nullptr);
      {
        MNT_Collectives_Start_Args a = args(live, AR, SUM, &out);
        a.struct_size = 0;
        start_refused("Collectives_Start with struct_size 0", &a);
      }
      {
        MNT_Collectives_Start_Args a = args(live, AR, SUM, &out);
        a.struct_size = MNT_Collectives_Run_Args_STRUCT_SIZE;
        start_refused("Collectives_Start with Run's struct_size (no room for work)", &a);
      }
      {
        MNT_Collectives_Start_Args a = args(nullptr, AR, SUM, &out);
        start_refused("Collectives_Start with a NULL communicator", &a);
      }
      {
        MNT_Collectives_Start_Args a = args(live, MNT_COLLECTIVE_INVALID, SUM, &out);
        start_refused("Collectives_Start with op MNT_COLLECTIVE_INVALID", &a);
      }
      {
        MNT_Collectives_Start_Args a = args(live, static_cast<MNT_CollectiveOp>(99), SUM, &out);
        start_refused("Collectives_Start with unknown op 99", &a);
      }
      {
        MNT_Collectives_Start_Args a = args(live, AR, MNT_REDUCE_OP_INVALID, &out);
        start_refused("Collectives_Start ALL_REDUCE with reduce MNT_REDUCE_OP_INVALID", &a);
      }
      {
        MNT_Collectives_Start_Args a = args(live, AR, SUM, &out_f16);
        start_refused("Collectives_Start ALL_REDUCE f32 input into an f16 output", &a);
      }
      {
        MNT_Collectives_Start_Args a = args(live, AR, SUM, &out_k1);
        start_refused("Collectives_Start ALL_REDUCE with 8 input and 9 output elements", &a);
      }
      {
        MNT_Collectives_Start_Args a = args(live, AR, SUM, nullptr);
        start_refused("Collectives_Start ALL_REDUCE with a NULL output", &a);
      }
      refused("Collectives_Wait(NULL)", coll.StatusOf(ext->Collectives_Wait(nullptr)));
      refused("Collectives_Wait with a NULL work", coll.Wait(live, nullptr));
    }
  }

  // The communicator still works after the refusals.
  checker.RunCase(*comm, {MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, MNT_DTYPE_F32, false, 0,
                         257},
                  static_cast<int>(cases.size()), seed, "after the refusals, still works: ");

  refused("Communicator_Destroy(NULL)", coll.StatusOf(ext->Communicator_Destroy(nullptr)));
  r->Check(n + "Communicator_Destroy(NULL communicator) is accepted",
           Agree(host, [&] {
             const Status s = coll.DestroyCommunicator(nullptr);
             return s.ok() ? std::string() : Describe(s);
           }()));
  {
    const Status s = comm->Destroy();
    r->Check(n + "Communicator_Destroy", Agree(host, s.ok() ? "" : Describe(s)));
  }
  if (started) {
    // Version 2: destroying a communicator frees the works of started
    // collectives never waited for (after finishing them with the other
    // ranks). A communicator of its own, so the one above was destroyed
    // with nothing outstanding.
    const std::string name = n + "Communicator_Destroy with a started collective not waited for";
    std::string id2;
    Status s;
    if (rank == 0) s = coll.GetUniqueId(&id2);
    std::string why = Agree(host, s.ok() ? "" : "Collectives_GetUniqueId: " + Describe(s));
    std::unique_ptr<sdk::Communicator> comm2;
    if (why.empty()) {
      host->Broadcast(&id2);
      s = sdk::Communicator::Create(coll, rank, world, id2, &comm2);
      why = Agree(host, s.ok() ? "" : "Communicator_Create: " + Describe(s));
    }
    // The buffers outlive Destroy, which finishes the collective.
    sdk::DeviceBuffer a, b;
    const int64_t k = 64;
    if (why.empty()) {
      s = backend->client().Allocate(k * 4, MNT_MEMORY_WORKSPACE, &a);
      if (s.ok()) s = backend->client().Allocate(k * 4, MNT_MEMORY_WORKSPACE, &b);
      if (s.ok()) {
        const std::vector<float> ones(k, 1.0f);
        s = backend->client().ToDevice(a.data(), ones.data(), k * 4);
      }
      why = Agree(host, s.ok() ? "" : Describe(s));
    }
    if (why.empty()) {
      const int64_t d_k[1] = {k};
      const MNT_Tensor in = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, d_k);
      const MNT_Tensor out = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, d_k);
      sdk::CollectiveWork work;  // never waited for: Destroy frees it
      s = comm2->Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &in, &out, &work);
      std::string mine = s.ok() ? "" : "Collectives_Start: " + Describe(s);
      s = comm2->Destroy();
      if (mine.empty() && !s.ok()) mine = "Communicator_Destroy: " + Describe(s);
      why = Agree(host, mine);
    }
    if (comm2 != nullptr) (void)comm2->Destroy();  // before the buffers go
    r->Check(name, why);
  }

  // What the header calls the default order, reported, not required.
  const std::vector<std::string> counts = host->AllGather(
      Format("%d %d", checker.default_order_bits(), checker.reductions()));
  int exact = 0, total = 0;
  for (const std::string& c : counts) {
    int e = 0, t = 0;
    if (std::sscanf(c.c_str(), "%d %d", &e, &t) == 2) {
      exact += e;
      total += t;
    }
  }
  r->Note(Format("collectives: %d of %d passing reductions (all ranks) have exactly the bits of "
                 "the rank-order fp32 sum (mnt_collectives.h's default; a backend that states "
                 "another fixed order may differ within the tolerance)",
                 exact, total));
}

}  // namespace mnt::conformance
