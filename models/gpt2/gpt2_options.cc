#include "models/gpt2/gpt2_options.h"

#include "plugins/sdk/options.h"

namespace mnt::gpt2 {

namespace {

sdk::Status GetBounded(const sdk::Options& opts, const char* key, int64_t lo,
                       int64_t hi, int64_t* value) {
  if (!opts.Has(key)) return sdk::Status::Ok();
  long long v = 0;
  MNT_RETURN_IF_ERROR(opts.GetInt(key, &v));
  if (v < lo || v > hi) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2 options: %s=%lld, expected %lld..%lld", key, v, (long long)lo,
        (long long)hi));
  }
  *value = v;
  return sdk::Status::Ok();
}

}  // namespace

sdk::Status ParseGpt2Options(const char* text, Gpt2Config* out) {
  sdk::Options opts;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(text, "gpt2 options", &opts));
  MNT_RETURN_IF_ERROR(opts.CheckKnown({"preset", "n_layer", "n_head", "d_model",
                                       "seq_len", "vocab", "checkpointing", "fused"}));
  Gpt2Config c;
  MNT_RETURN_IF_ERROR(opts.GetString("preset", &c.preset));
  if (c.preset == "gpt2-tiny") {
    c.n_layer = 2; c.n_head = 4; c.d_model = 64; c.seq_len = 64;
  } else if (c.preset == "gpt2-124m") {
    c.n_layer = 12; c.n_head = 12; c.d_model = 768; c.seq_len = 1024;
  } else {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2 options: unknown preset '%s' (known: gpt2-124m, gpt2-tiny)",
        c.preset.c_str()));
  }
  MNT_RETURN_IF_ERROR(GetBounded(opts, "n_layer", 1, 256, &c.n_layer));
  MNT_RETURN_IF_ERROR(GetBounded(opts, "n_head", 1, 1024, &c.n_head));
  MNT_RETURN_IF_ERROR(GetBounded(opts, "d_model", 1, kMaxDim, &c.d_model));
  MNT_RETURN_IF_ERROR(GetBounded(opts, "seq_len", 1, kMaxDim, &c.seq_len));
  MNT_RETURN_IF_ERROR(GetBounded(opts, "vocab", 2, int64_t{1} << 24, &c.vocab));
  int64_t ckpt = 0;
  MNT_RETURN_IF_ERROR(GetBounded(opts, "checkpointing", 0, 1, &ckpt));
  c.checkpointing = ckpt != 0;
  int64_t fused = 1;
  MNT_RETURN_IF_ERROR(GetBounded(opts, "fused", 0, 1, &fused));
  c.fused = fused != 0;
  if (c.d_model % c.n_head != 0) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2 options: d_model=%lld does not divide by n_head=%lld",
        (long long)c.d_model, (long long)c.n_head));
  }
  *out = c;
  return sdk::Status::Ok();
}

}  // namespace mnt::gpt2
