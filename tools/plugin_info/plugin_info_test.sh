#!/usr/bin/env bash
# plugin_info on real plugins (a backend, a precision, a model), on a file without the entry symbol, on a plugin
# whose initialiser crashes, and on one of another ABI major.
set -euo pipefail
info="$1" cpu="$2" fp16="$3" nosymbol="$4" crashes="$5" major2="$6" cnn="$7"

fail() { echo "FAIL: $*" >&2; exit 1; }

# One plugin here crashes on purpose in the probe's child. Under
# --config=asan the child must die of the signal as in the normal build, not
# print AddressSanitizer's report of it (later options win).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"

out="$("$info" "$cpu")" || fail "plugin_info on the cpu backend exited $?"
echo "$out"
grep -q '^name: *cpu$' <<<"$out" || fail "no name line"
grep -q '^kind: *backend$' <<<"$out" || fail "no kind line"
grep -Eq '^abi: *[0-9]+\.[0-9]+ \(this host: [0-9]+\.[0-9]+\)$' <<<"$out" || fail "no abi line"
grep -q '^ops: .*GEMM.*ADAMW_STEP' <<<"$out" || fail "no ops"
# ABI 1.9: the chain's extensions by name and version, and the capabilities
# the backend advertises.
grep -Eq '^extensions: .*capabilities v1' <<<"$out" || fail "no capabilities extension listed"
grep -Eq '^capabilities: .*OPTIMIZER_DEVICE_LR' <<<"$out" || fail "no capabilities line"
grep -q '^exports: *MNT_GetPluginApi$' <<<"$out" || fail "exports not just the entry symbol"

out="$("$info" "$fp16")" || fail "plugin_info on fp16 exited $?"
grep -q '^policy: .*weights f16, master weights f32.*loss scaling dynamic$' <<<"$out" \
  || fail "fp16 policy line: $out"
grep -q '^capabilities: *PRECISION_OPTIONS$' <<<"$out" || fail "fp16 capabilities line: $out"

# ABI 1.12: the kinds of data a model declares, its extension on the chain.
out="$("$info" "$cnn")" || fail "plugin_info on the cnn exited $?"
grep -q '^data: *images$' <<<"$out" || fail "cnn data line: $out"
grep -Eq '^extensions: .*model_data v1' <<<"$out" || fail "no model_data extension listed: $out"

# Refusals: exit 1, exactly one line on stderr, naming the reason.
expect_refusal() {
  local file="$1" pattern="$2" err rc=0
  err="$("$info" "$file" 2>&1 >/dev/null)" || rc=$?
  [[ $rc == 1 ]] || fail "$file: exit status $rc, expected 1"
  [[ "$(wc -l <<<"$err")" == 1 ]] || fail "$file: not one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "$file: '$err' lacks '$pattern'"
  echo "refused as expected: $err"
}
expect_refusal "$nosymbol" "not a Mantissa plugin: it does not export MNT_GetPluginApi"
expect_refusal "$crashes" "plugin crashed in Plugin_Initialize (signal 11"
expect_refusal "$major2" "plugin built against ABI 2.0"
expect_refusal "$0" "not an ELF64 shared object"
echo PASS
