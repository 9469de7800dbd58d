#!/usr/bin/env bash
# The SDK bundle consumed from a separate Bazel workspace (docs/plugins.md,
# "Building with Bazel"): unpack the bundle, copy its examples/bazel_workspace,
# run the real Bazel there (its own output root, batch mode, offline), and
# check that the plugin it builds exports only MNT_GetPluginApi, passes the
# bundle's plugin_conformance, and trains 50 steps through the bundle's
# bin/train. The workspace's own conformance test must pass, and must fail on
# a copy of the plugin with a policy bug injected. The model layer is in the
# consumer's @mantissa_sdk too: the bundle's resmlp example builds there with
# -Werror and passes its conformance test.
set -euo pipefail
bundle="$1"

fail() { echo "FAIL: $*" >&2; exit 1; }
work="${TEST_TMPDIR:-$(mktemp -d)}/bazel_consumer"
rm -rf "$work" && mkdir -p "$work"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
start=$SECONDS

# The real Bazel binary, as tools/bazel finds it: /usr/bin/bazel is Debian's
# launcher, which would exec a tools/bazel wrapper if the workspace had one.
real="${BAZEL_REAL:-}"
if [[ -z "$real" || ! -x "$real" || "$real" == /usr/bin/bazel ]]; then
  real=""
  for cand in /usr/bin/bazel-real $(ls -1 /usr/bin/bazel-[0-9]* 2>/dev/null | sort -V -r); do
    if [[ -x "$cand" && -f "$cand" ]]; then real="$cand"; break; fi
  done
fi
[[ -n "$real" ]] || fail "no real Bazel binary (/usr/bin/bazel-real or /usr/bin/bazel-N); install bazel-bootstrap"
echo "bazel: $real"

tar -xzf "$bundle" -C "$work"
sdk="$work/mantissa_sdk"
ws="$work/workspace"
cp -r "$sdk/share/mantissa/examples/bazel_workspace" "$ws"
# The example builds with the documented flags, so a warning fails it.
grep -q '"-Werror"' "$ws/BUILD" || fail "the example's BUILD does not build with -Werror"

# A second plugin from the same source with a bug the suite must name:
# f16 gradients in a policy without loss scaling (they underflow).
sed 's/args->gradient_dtype = MNT_DTYPE_F32;/args->gradient_dtype = MNT_DTYPE_F16;/' \
  "$ws/bf16_fp32grad.cc" > "$ws/broken.cc"
! cmp -s "$ws/broken.cc" "$ws/bf16_fp32grad.cc" || fail "sed did not inject the policy bug"
cat >> "$ws/BUILD" <<'BUILD'

mantissa_plugin(name = "mnt_precision_broken", srcs = ["broken.cc"])

mantissa_plugin_conformance_test(
    name = "broken_conformance_test",
    plugin = ":mnt_precision_broken.so",
)

mantissa_plugin(
    name = "mnt_model_resmlp",
    srcs = ["resmlp.cc"],
    copts = ["-Wall", "-Wextra", "-Werror"],
)

mantissa_plugin_conformance_test(
    name = "resmlp_conformance_test",
    plugin = ":mnt_model_resmlp.so",
)
BUILD
cp "$sdk/share/mantissa/examples/resmlp_model/resmlp.cc" "$ws/"

# A clean environment: the nested Bazel must not see this test's TEST_*
# variables, nor a wrapper's BAZEL_REAL; its output root lives in TEST_TMPDIR.
mkdir -p "$work/home" "$work/tmp"
log="$work/bazel.log"
rc=0
(cd "$ws" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work/home" \
  TMPDIR="$work/tmp" LANG=C.UTF-8 \
  "$real" --batch --output_user_root="$work/bazel_root" --nohome_rc \
  test --jobs=2 --override_repository=mantissa_sdk="$sdk" \
  --test_output=all //...) >"$log" 2>&1 || rc=$?
cat "$log"
# Exit code 3: the build succeeded and some test failed (the broken one).
[[ $rc == 3 ]] || fail "nested bazel test exited $rc (want 3: build ok, broken plugin's test failed)"
grep -Eq '^//:conformance_test +PASSED' "$log" || fail "the workspace's conformance_test did not pass"
grep -Eq '^//:broken_conformance_test +FAILED' "$log" || fail "the broken plugin's conformance_test did not fail"
grep -Eq '^//:resmlp_conformance_test +PASSED' "$log" \
  || fail "resmlp, on the model layer from @mantissa_sdk, did not build or pass conformance"
grep -q '^\[FAIL\] precision/policy: .*f16 gradients without loss scaling' "$log" \
  || fail "the broken plugin's failure does not name the policy bug"
echo "ok: nested bazel built the three plugins; conformance_test and resmlp_conformance_test passed, broken_conformance_test failed"

plugins="$work/plugins"
mkdir -p "$plugins"
cp "$ws/bazel-bin/mnt_precision_bf16_fp32grad.so" "$plugins/"
so="$plugins/mnt_precision_bf16_fp32grad.so"

exports="$(nm -D --defined-only "$so" | awk '{print $3}')"
[[ "$exports" == MNT_GetPluginApi ]] || fail "$so exports: $(echo $exports) (want only MNT_GetPluginApi)"
"$sdk/bin/plugin_info" "$so" | tee "$work/info.txt"
grep -q '^exports: *MNT_GetPluginApi$' "$work/info.txt" || fail "plugin_info lists other exports"
grep -q '^name: *bf16_fp32grad$' "$work/info.txt" || fail "plugin_info does not name bf16_fp32grad"
"$sdk/bin/plugin_conformance" "$so" | tee "$work/conformance.txt" || fail "plugin_conformance rejects $so"
grep -q '^conformance: [1-9][0-9]* passed, 0 failed' "$work/conformance.txt" || fail "no checks ran"

# 50 steps of the MLP on digits through the released trainer.
train_log="$work/train.log"
"$sdk/bin/train" --plugin_path="$sdk/lib/mantissa/plugins:$plugins" \
  --dataset=digits --model=mlp --precision=bf16_fp32grad --steps=50 \
  --progress=none --cache_dir="$work/cache" >"$train_log" 2>&1 \
  || { cat "$train_log"; fail "bin/train with bf16_fp32grad exited non-zero"; }
cat "$train_log"
grep -q '^precision  bf16_fp32grad$' "$train_log" || fail "the report does not name precision bf16_fp32grad"
grep -Eq '^steps +50 \(0 skipped\)' "$train_log" || fail "not 50 unskipped steps"
line="$(grep -E '^eval +loss ' "$train_log" | tail -1)"
loss="$(sed -E 's/^eval +loss ([^,]*),.*/\1/' <<<"$line")"
acc="$(sed -E 's/.*accuracy ([0-9.]+)%.*/\1/' <<<"$line")"
# Chance is loss ln(10) = 2.303 and 10% accuracy; 50 steps reach ~86% here.
awk -v l="$loss" -v a="$acc" 'BEGIN {
  if (!(l + 0 == l && l > 0 && l < 2.0 && a + 0 >= 60)) exit 1 }' \
  || fail "eval loss '$loss', accuracy '$acc'% after 50 steps (want loss < 2.0, accuracy >= 60%)"
echo "ok: trained 50 steps with bf16_fp32grad: eval loss $loss, accuracy $acc%"
echo "PASS in $((SECONDS - start)) s"
